/*
 * request.c -- an MPI_Request for a dred reduction, so MPI_Wait, MPI_Test, MPI_Waitall,
 * MPI_Waitany, MPI_Waitsome, MPI_Testall, MPI_Testany, MPI_Testsome and MPI_Request_free
 * handle it, mixed with MPI's own requests, without being intercepted.
 *
 * How: MPICH's extended generalized requests (MPIX_Grequest_start, mpi_proto.h).  A plain
 * generalized request completes only when someone calls MPI_Grequest_complete; the
 * extended one also gives MPICH two functions it calls while the application waits or
 * tests, so the request completes without a thread of ours:
 *   poll_fn  (every test, and each turn of MPICH's wait loops): if the dred future is
 *            done, complete the request;
 *   wait_fn  (MPI_Wait/MPI_Waitall on such requests): block in dred_future_wait for a
 *            while, completing what finished, then return -- MPICH then goes on polling
 *            (poll_fn) and driving its own progress, so the point-to-point requests of
 *            the same MPI_Waitall, or the one MPI_Waitany returns, are not held up
 *            behind a reduction.  Bounded for that reason, not for dred's sake.
 *   query_fn fills the status as MPI does for a collective: MPI_SOURCE MPI_ANY_SOURCE,
 *            MPI_TAG MPI_ANY_TAG, count 0, not cancelled, MPI_ERROR the request's code
 *            (errors.c), which is also what it returns, so MPI_Wait returns it;
 *   free_fn  releases the future once MPI is done with the request;
 *   cancel_fn does nothing: MPI forbids cancelling a nonblocking collective.
 * MPI_Request_get_status (defined here) is the one completion call that reaches neither
 * function: MPICH's asks only whether the request is complete, so a program polling it
 * would wait forever.  So every live request is also in a list, and the wrapper looks
 * the asked one up and tries to complete it before asking MPI.
 * Completion happens once (a flag under the request's mutex: poll_fn and wait_fn may race
 * from two threads); at that moment an error is also raised on the communicator
 * (errors.c: MPI_ERRORS_ARE_FATAL aborts, as MPI would).
 */
#include <pthread.h>
#include <stdlib.h>

#include "../common/queue.h"
#include "interpose.h"

/* How long one wait_fn call blocks before handing back to MPICH's loop. */
#define WAIT_SLICE_MS 20

typedef struct {
  dred_queue_t live; /* in `lives` from MPI_Grequest_start to free_fn */
  pthread_mutex_t mu;
  dred_future *f;
  MPI_Comm comm;
  MPI_Request req; /* set before the application can see the request */
  int ready;       /* req is set */
  int done;        /* MPI_Grequest_complete called */
  int code;        /* the MPI error code, once done */
} dmpi_req_t;

/* Every request MPI has not freed yet; under lives_mu, which is taken before a request's
 * own mutex, never after it. */
static pthread_mutex_t lives_mu = PTHREAD_MUTEX_INITIALIZER;
static dred_queue_t lives = {&lives, &lives};

/* If `r`'s future is done and nobody has said so yet, take that on: 1, and the caller
 * must call req_finish (until then MPI does not see `r` complete, so cannot free it);
 * else 0, with *done whether `r` is complete (before, or by another caller). */
static int req_claim(dmpi_req_t *r, int *done) {
  pthread_mutex_lock(&r->mu);
  *done = r->done;
  if (r->done || !r->ready || dred_future_is_done(r->f) != 1) {
    pthread_mutex_unlock(&r->mu);
    return 0;
  }
  r->code = dmpi_error_class(dred_future_get(r->f)); /* done: returns at once */
  r->done = *done = 1;
  pthread_mutex_unlock(&r->mu);
  return 1;
}

/* Tell MPI a claimed request is complete.  Outside every mutex of ours: a user error
 * handler may call MPI, or test this very request. */
static void req_finish(dmpi_req_t *r) {
  if (r->code != MPI_SUCCESS) dmpi_raise(r->comm, r->code);
  PMPI_Grequest_complete(r->req);
}

/* Complete `r` if its future is done; returns 1 if it is complete (now or before). */
static int req_try_complete(dmpi_req_t *r) {
  int done;
  if (req_claim(r, &done)) req_finish(r);
  return done;
}

static int query_fn(void *extra, MPI_Status *status) {
  dmpi_req_t *r = extra;
  int code;
  pthread_mutex_lock(&r->mu);
  code = r->code;
  pthread_mutex_unlock(&r->mu);
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = code;
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  return code;
}

static int free_fn(void *extra) {
  dmpi_req_t *r = extra;
  pthread_mutex_lock(&lives_mu);
  if (r->live.next != NULL) dred_queue_remove(&r->live);
  pthread_mutex_unlock(&lives_mu);
  dred_future_free(r->f);
  pthread_mutex_destroy(&r->mu);
  free(r);
  return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete) { return MPI_SUCCESS; }

static int poll_fn(void *extra, MPI_Status *status) {
  req_try_complete(extra);
  return MPI_SUCCESS;
}

static int wait_fn(int count, void **states, double timeout, MPI_Status *status) {
  uint64_t slice = WAIT_SLICE_MS;
  int i;
  for (i = 0; i < count; i++) {
    dmpi_req_t *r = states[i];
    if (!req_try_complete(r) && slice > 0) {
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      (void)dred_future_wait(r->f, (int)slice);
      clock_gettime(CLOCK_MONOTONIC, &t1);
      {
        int64_t ms = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        slice = ms >= (int64_t)slice ? 0 : slice - (uint64_t)ms;
      }
      req_try_complete(r);
    }
  }
  return MPI_SUCCESS;
}

int dmpi_request_start(dred_future *f, MPI_Comm comm, MPI_Request *request) {
  dmpi_req_t *r = calloc(1, sizeof *r);
  int rc;
  if (r == NULL) {
    dred_future_free(f); /* abandons the reduction locally; the others still finish it */
    return MPI_ERR_NO_MEM;
  }
  pthread_mutex_init(&r->mu, NULL);
  r->f = f;
  r->comm = comm;
  r->code = MPI_SUCCESS;
  rc = PMPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, r, request);
  if (rc != MPI_SUCCESS) {
    free_fn(r);
    return rc;
  }
  pthread_mutex_lock(&lives_mu);
  pthread_mutex_lock(&r->mu);
  r->req = *request;
  r->ready = 1;
  pthread_mutex_unlock(&r->mu);
  dred_queue_insert_tail(&lives, &r->live);
  pthread_mutex_unlock(&lives_mu);
  return MPI_SUCCESS;
}

DRED_EXTERN int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
  dmpi_req_t *mine = NULL;
  dred_queue_t *q;
  int done;
  if (request != MPI_REQUEST_NULL) {
    pthread_mutex_lock(&lives_mu);
    DRED_QUEUE_FOREACH(q, &lives) {
      dmpi_req_t *r = DRED_QUEUE_DATA(q, dmpi_req_t, live);
      if (r->req == request) {
        if (req_claim(r, &done)) mine = r; /* stays alive: MPI cannot free it yet */
        break;
      }
    }
    pthread_mutex_unlock(&lives_mu);
    if (mine != NULL) req_finish(mine);
  }
  return PMPI_Request_get_status(request, flag, status);
}
