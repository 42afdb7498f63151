/*
 * allreduce.c -- MPI_Allreduce and MPI_Iallreduce (and their large-count forms) through
 * dred.
 *
 * As reduce.c: route.c decides for every member alike, dred_iallreduce runs it with the
 * tag commtag.c gives the communicator's next collective (MPI_Allreduce given
 * DRED_TAG_AUTO: dred_allreduce, for the fast lane), the nonblocking form wraps the
 * future in a real MPI_Request (request.c), and a status other than DRED_OK is raised on
 * the communicator as an MPI error class (errors.c).  MPI_IN_PLACE passes through: dred
 * takes it on every member, as MPI does.  A large-count call of more than INT_MAX
 * elements goes to MPI (route.c: every member passes the same count, so every member
 * does).
 */
#include "interpose.h"

/* The blocking call, once route.c chose dred. */
static int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, int tag) {
  dred_future *f = NULL;
  int code;
  if (tag == DRED_TAG_AUTO) /* dred's blocking call: on one node, its fast lane */
    return dmpi_raise(comm, dmpi_error_class(dred_allreduce(sendbuf, recvbuf, count, datatype, op, comm)));
  code = dmpi_error_class(dred_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  code = dmpi_error_class(dred_future_get(f));
  dred_future_free(f);
  return dmpi_raise(comm, code);
}

/* The nonblocking call, once route.c chose dred. */
static int iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, int tag, MPI_Request *request) {
  dred_future *f = NULL;
  int code;
  *request = MPI_REQUEST_NULL;
  code = dmpi_error_class(dred_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  if ((code = dmpi_request_start(f, comm, request)) != MPI_SUCCESS) return dmpi_raise(comm, code);
  return MPI_SUCCESS;
}

DRED_EXTERN int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  int tag;
  if (!dmpi_take(DMPI_ALLREDUCE, DMPI_KIND_ALLREDUCE, count, datatype, op, 0, comm, &tag))
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  return allreduce(sendbuf, recvbuf, count, datatype, op, comm, tag);
}

DRED_EXTERN int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               MPI_Request *request) {
  int tag;
  if (!dmpi_take(DMPI_IALLREDUCE, DMPI_KIND_ALLREDUCE, count, datatype, op, 0, comm, &tag))
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  return iallreduce(sendbuf, recvbuf, count, datatype, op, comm, tag, request);
}

DRED_EXTERN int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  int tag;
  if (!dmpi_take(DMPI_ALLREDUCE_C, DMPI_KIND_ALLREDUCE, count, datatype, op, 0, comm, &tag))
    return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
  return allreduce(sendbuf, recvbuf, (int)count, datatype, op, comm, tag);
}

DRED_EXTERN int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                 MPI_Request *request) {
  int tag;
  if (!dmpi_take(DMPI_IALLREDUCE_C, DMPI_KIND_ALLREDUCE, count, datatype, op, 0, comm, &tag))
    return PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request);
  return iallreduce(sendbuf, recvbuf, (int)count, datatype, op, comm, tag, request);
}
