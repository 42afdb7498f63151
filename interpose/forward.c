/*
 * forward.c -- the collectives dred does not serve yet, intercepted and handed to MPI.
 *
 * They are intercepted now so that DRED_MPI_REPORT shows what a program would gain once
 * dred serves them, and so that serving one is a change of its wrapper only: its entry in
 * DMPI_CALLS (interpose.h) and its counters already exist.
 */
#include "interpose.h"

DRED_EXTERN int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  dmpi_count_mpi(DMPI_ALLREDUCE, DMPI_WHY_NOT_SERVED);
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

DRED_EXTERN int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               MPI_Request *request) {
  dmpi_count_mpi(DMPI_IALLREDUCE, DMPI_WHY_NOT_SERVED);
  return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

DRED_EXTERN int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
                          MPI_Comm comm) {
  dmpi_count_mpi(DMPI_BCAST, DMPI_WHY_NOT_SERVED);
  return PMPI_Bcast(buffer, count, datatype, root, comm);
}

DRED_EXTERN int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
                           MPI_Comm comm, MPI_Request *request) {
  dmpi_count_mpi(DMPI_IBCAST, DMPI_WHY_NOT_SERVED);
  return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
}
