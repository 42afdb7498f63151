/*
 * bcast.c -- MPI_Bcast and MPI_Ibcast (and their large-count forms) through dred.
 *
 * As reduce.c: route.c decides for every member alike (a datatype dred broadcasts, a size
 * at or above DRED_MPI_COLL_MIN_BYTES, an intracommunicator other than MPI_COMM_SELF),
 * dred_ibcast runs it with the communicator's next tag (commtag.c; MPI_Bcast given
 * DRED_TAG_AUTO: dred_bcast, for the fast lane), the nonblocking form
 * wraps the future in a real MPI_Request (request.c), and a status other than DRED_OK is
 * raised on the communicator as an MPI error class (errors.c).
 *
 * A bcast of more than INT_MAX bytes goes to MPI, whichever form: MPI matches a bcast's
 * type signature, not its count, so members may describe the data differently, and its
 * bytes are what they share (route.c).
 */
#include "interpose.h"

/* The blocking call, once route.c chose dred. */
static int bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                 int tag) {
  dred_future *f = NULL;
  int code;
  if (tag == DRED_TAG_AUTO) /* dred's blocking call: on one node, its fast lane */
    return dmpi_raise(comm, dmpi_error_class(dred_bcast(buffer, count, datatype, root, comm)));
  code = dmpi_error_class(dred_ibcast(buffer, count, datatype, root, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  code = dmpi_error_class(dred_future_get(f));
  dred_future_free(f);
  return dmpi_raise(comm, code);
}

/* The nonblocking call, once route.c chose dred. */
static int ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                  int tag, MPI_Request *request) {
  dred_future *f = NULL;
  int code;
  *request = MPI_REQUEST_NULL;
  code = dmpi_error_class(dred_ibcast(buffer, count, datatype, root, comm, tag, &f));
  if (code != MPI_SUCCESS) return dmpi_raise(comm, code);
  if ((code = dmpi_request_start(f, comm, request)) != MPI_SUCCESS) return dmpi_raise(comm, code);
  return MPI_SUCCESS;
}

DRED_EXTERN int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
                          MPI_Comm comm) {
  int tag;
  if (!dmpi_take(DMPI_BCAST, DMPI_KIND_BCAST, count, datatype, MPI_OP_NULL, root, comm, &tag))
    return PMPI_Bcast(buffer, count, datatype, root, comm);
  return bcast(buffer, count, datatype, root, comm, tag);
}

DRED_EXTERN int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
                           MPI_Comm comm, MPI_Request *request) {
  int tag;
  if (!dmpi_take(DMPI_IBCAST, DMPI_KIND_BCAST, count, datatype, MPI_OP_NULL, root, comm, &tag))
    return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
  return ibcast(buffer, count, datatype, root, comm, tag, request);
}

DRED_EXTERN int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                            MPI_Comm comm) {
  int tag;
  if (!dmpi_take(DMPI_BCAST_C, DMPI_KIND_BCAST, count, datatype, MPI_OP_NULL, root, comm, &tag))
    return PMPI_Bcast_c(buffer, count, datatype, root, comm);
  return bcast(buffer, (int)count, datatype, root, comm, tag);
}

DRED_EXTERN int MPI_Ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                             MPI_Comm comm, MPI_Request *request) {
  int tag;
  if (!dmpi_take(DMPI_IBCAST_C, DMPI_KIND_BCAST, count, datatype, MPI_OP_NULL, root, comm, &tag))
    return PMPI_Ibcast_c(buffer, count, datatype, root, comm, request);
  return ibcast(buffer, (int)count, datatype, root, comm, tag, request);
}
