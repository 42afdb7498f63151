/*
 * reduce.c -- MPI_Reduce and MPI_Ireduce (and their large-count forms) through dred.
 *
 * route.c decides, for every member alike, whether dred or MPI serves the call.  Through
 * dred: dred_ireduce with the tag commtag.c gives the communicator's next reduction;
 * MPI_Ireduce wraps the future in an MPI_Request (request.c), MPI_Reduce waits on it here
 * -- or, given DRED_TAG_AUTO, calls dred_reduce, whose small calls on one node take the
 * meeting place's fast lane (a blocking call's alone).
 * A status other than DRED_OK becomes an MPI error class raised on the communicator
 * (errors.c).  A call dred_ireduce refuses returns that error from MPI_Ireduce itself with
 * MPI_REQUEST_NULL, as an erroneous MPI call would: an argument error route.c cannot see
 * (a NULL buffer) took no turn; a refusal from this process's state (the in-flight cap,
 * the node's memory budget) took its turn, and every other member's request for the call
 * completes with the same class (dred(3), Refused calls).  A large-count call of more
 * than INT_MAX elements goes to MPI (route.c: every member passes the same count).
 */
#include "interpose.h"

/* The blocking call, once route.c chose dred. */
static int reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, int tag) {
  dred_future *f = NULL;
  int code;
  if (tag == DRED_TAG_AUTO) /* dred's blocking call: on one node, its fast lane */
    return dmpi_raise(comm, dmpi_error_class(dred_reduce(sendbuf, recvbuf, count, datatype, op, root, comm)));
  code = dmpi_error_class(dred_ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  code = dmpi_error_class(dred_future_get(f));
  dred_future_free(f);
  return dmpi_raise(comm, code);
}

/* The nonblocking call, once route.c chose dred. */
static int ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, int root, MPI_Comm comm, int tag, MPI_Request *request) {
  dred_future *f = NULL;
  int code;
  *request = MPI_REQUEST_NULL;
  code = dmpi_error_class(dred_ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  if ((code = dmpi_request_start(f, comm, request)) != MPI_SUCCESS) return dmpi_raise(comm, code);
  return MPI_SUCCESS;
}

DRED_EXTERN int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
                           MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  int tag;
  if (!dmpi_take(DMPI_REDUCE, DMPI_KIND_REDUCE, count, datatype, op, root, comm, &tag))
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  return reduce(sendbuf, recvbuf, count, datatype, op, root, comm, tag);
}

DRED_EXTERN int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                            MPI_Request *request) {
  int tag;
  if (!dmpi_take(DMPI_IREDUCE, DMPI_KIND_REDUCE, count, datatype, op, root, comm, &tag))
    return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
  return ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, tag, request);
}

DRED_EXTERN int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                             MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  int tag;
  if (!dmpi_take(DMPI_REDUCE_C, DMPI_KIND_REDUCE, count, datatype, op, root, comm, &tag))
    return PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm);
  return reduce(sendbuf, recvbuf, (int)count, datatype, op, root, comm, tag);
}

DRED_EXTERN int MPI_Ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                              MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                              MPI_Request *request) {
  int tag;
  if (!dmpi_take(DMPI_IREDUCE_C, DMPI_KIND_REDUCE, count, datatype, op, root, comm, &tag))
    return PMPI_Ireduce_c(sendbuf, recvbuf, count, datatype, op, root, comm, request);
  return ireduce(sendbuf, recvbuf, (int)count, datatype, op, root, comm, tag, request);
}
