/*
 * allreduce.c -- MPI_Allreduce and MPI_Iallreduce through dred.
 *
 * As reduce.c: route.c decides for every member alike, dred_iallreduce runs it with the
 * tag commtag.c gives the communicator's next collective (MPI_Allreduce given
 * DRED_TAG_AUTO: dred_allreduce, for the fast lane), the nonblocking form wraps the
 * future in a real MPI_Request (request.c), and a status other than DRED_OK is raised on
 * the communicator as an MPI error class (errors.c).  MPI_IN_PLACE passes through: dred
 * takes it on every member, as MPI does.
 */
#include "interpose.h"

DRED_EXTERN int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  dred_future *f = NULL;
  dmpi_why_t why;
  int tag, code;
  if (!dmpi_route(DMPI_KIND_ALLREDUCE, count, datatype, op, 0, comm, &tag, &why)) {
    dmpi_count_mpi(DMPI_ALLREDUCE, why);
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  }
  dmpi_count_dred(DMPI_ALLREDUCE);
  if (tag == DRED_TAG_AUTO) /* dred's blocking call: on one node, its fast lane */
    return dmpi_raise(comm, dmpi_error_class(dred_allreduce(sendbuf, recvbuf, count, datatype, op, comm)));
  code = dmpi_error_class(dred_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  code = dmpi_error_class(dred_future_get(f));
  dred_future_free(f);
  return dmpi_raise(comm, code);
}

DRED_EXTERN int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               MPI_Request *request) {
  dred_future *f = NULL;
  dmpi_why_t why;
  int tag, code;
  if (!dmpi_route(DMPI_KIND_ALLREDUCE, count, datatype, op, 0, comm, &tag, &why)) {
    dmpi_count_mpi(DMPI_IALLREDUCE, why);
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  }
  dmpi_count_dred(DMPI_IALLREDUCE);
  *request = MPI_REQUEST_NULL;
  code = dmpi_error_class(dred_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  if ((code = dmpi_request_start(f, comm, request)) != MPI_SUCCESS) return dmpi_raise(comm, code);
  return MPI_SUCCESS;
}
