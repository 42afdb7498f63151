/*
 * errors.c -- a dred status as an MPI error class, raised on the caller's communicator.
 *
 *   DRED_OK                                     MPI_SUCCESS
 *   DRED_ERR_ARG, DRED_ERR_MISMATCH             MPI_ERR_ARG
 *   DRED_ERR_NOMEM                              MPI_ERR_NO_MEM
 *   DRED_ERR_PROC_FAILED, _ROOT_FAILED,
 *   DRED_ERR_MASTER_LOST                        MPIX_ERR_PROC_FAILED (MPICH's mpi.h defines
 *                                               it; MPI_ERR_OTHER with an mpi.h that does not)
 *   anything else                               MPI_ERR_OTHER
 *
 * dmpi_raise calls the communicator's error handler the way MPI does for its own errors:
 * MPI_ERRORS_ARE_FATAL (the default) aborts the job, MPI_ERRORS_RETURN and user handlers
 * return, and the caller then returns the code.
 */
#include "interpose.h"

int dmpi_error_class(int dred_status) {
  switch (dred_status) {
    case DRED_OK:
      return MPI_SUCCESS;
    case DRED_ERR_ARG:
    case DRED_ERR_MISMATCH:
      return MPI_ERR_ARG;
    case DRED_ERR_NOMEM:
      return MPI_ERR_NO_MEM;
    case DRED_ERR_PROC_FAILED:
    case DRED_ERR_ROOT_FAILED:
    case DRED_ERR_MASTER_LOST:
#ifdef MPIX_ERR_PROC_FAILED
      return MPIX_ERR_PROC_FAILED;
#else
      return MPI_ERR_OTHER;
#endif
    default:
      return MPI_ERR_OTHER;
  }
}

int dmpi_raise(MPI_Comm comm, int code) {
  if (code != MPI_SUCCESS && comm != MPI_COMM_NULL) PMPI_Comm_call_errhandler(comm, code);
  return code;
}
