/*
 * bcast.c -- MPI_Bcast and MPI_Ibcast through dred.
 *
 * As reduce.c: route.c decides for every member alike (a datatype dred broadcasts, a size
 * at or above DRED_MPI_COLL_MIN_BYTES, an intracommunicator other than MPI_COMM_SELF),
 * dred_ibcast runs it with the communicator's next tag (commtag.c; MPI_Bcast given
 * DRED_TAG_AUTO: dred_bcast, for the fast lane), the nonblocking form
 * wraps the future in a real MPI_Request (request.c), and a status other than DRED_OK is
 * raised on the communicator as an MPI error class (errors.c).
 */
#include "interpose.h"

DRED_EXTERN int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
                          MPI_Comm comm) {
  dred_future *f = NULL;
  dmpi_why_t why;
  int tag, code;
  if (!dmpi_route(DMPI_KIND_BCAST, count, datatype, MPI_OP_NULL, root, comm, &tag, &why)) {
    dmpi_count_mpi(DMPI_BCAST, why);
    return PMPI_Bcast(buffer, count, datatype, root, comm);
  }
  dmpi_count_dred(DMPI_BCAST);
  if (tag == DRED_TAG_AUTO) /* dred's blocking call: on one node, its fast lane */
    return dmpi_raise(comm, dmpi_error_class(dred_bcast(buffer, count, datatype, root, comm)));
  code = dmpi_error_class(dred_ibcast(buffer, count, datatype, root, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  code = dmpi_error_class(dred_future_get(f));
  dred_future_free(f);
  return dmpi_raise(comm, code);
}

DRED_EXTERN int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
                           MPI_Comm comm, MPI_Request *request) {
  dred_future *f = NULL;
  dmpi_why_t why;
  int tag, code;
  if (!dmpi_route(DMPI_KIND_BCAST, count, datatype, MPI_OP_NULL, root, comm, &tag, &why)) {
    dmpi_count_mpi(DMPI_IBCAST, why);
    return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
  }
  dmpi_count_dred(DMPI_IBCAST);
  *request = MPI_REQUEST_NULL;
  code = dmpi_error_class(dred_ibcast(buffer, count, datatype, root, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  if ((code = dmpi_request_start(f, comm, request)) != MPI_SUCCESS) return dmpi_raise(comm, code);
  return MPI_SUCCESS;
}
