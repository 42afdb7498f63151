/*
 * future.c -- the future a dred_ireduce() call returns.
 *
 * Two references: the application's (dropped by dred_future_free) and the runtime's
 * (dropped when the reduction ends).  Whoever drops the last one frees it, so an
 * application may free a future that is still pending without the runtime touching freed
 * memory later.  Freeing a pending future abandons the reduction locally: `abandoned` is
 * set under the future's mutex, and the runtime, which reads the caller's sendbuf only in
 * the rare recovery fallback, does so holding that mutex and only when the flag is clear
 * (dred_future_abandoned_lock), so once dred_future_free returned sendbuf is never read.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../paths/meetpath.h"
#include "../paths/relay.h"
#include "future.h"

/* The last future freed, kept for the next call: a small collective costs less than a
 * calloc, a free and a mutex's and a condition variable's set-up and tear-down.  One
 * process-wide place, swapped atomically: a future is either there or in use, never both.
 * A future lands there only once its last reference is gone, so nobody waits on its
 * condition variable or holds its mutex: both are reused as they are. */
static dred_future *spare;

dred_future *dred_future_new(void) {
  dred_future *f = __atomic_exchange_n(&spare, NULL, __ATOMIC_ACQUIRE);
  if (f != NULL) {
    memset((char *)f + offsetof(dred_future, done), 0,
           sizeof *f - offsetof(dred_future, done));
    f->refs = 2;
    return f;
  }
  f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  if (uv_mutex_init(&f->mu) != 0) {
    free(f);
    return NULL;
  }
  if (uv_cond_init(&f->cv) != 0) {
    uv_mutex_destroy(&f->mu);
    free(f);
    return NULL;
  }
  f->refs = 2;
  return f;
}

static void future_destroy(dred_future *f) {
  uv_cond_destroy(&f->cv);
  uv_mutex_destroy(&f->mu);
  free(f);
}

static void future_unref_locked_and_unlock(dred_future *f) {
  int last = --f->refs == 0;
  uv_mutex_unlock(&f->mu);
  if (last && DRED_KEEP_SPARE) f = __atomic_exchange_n(&spare, f, __ATOMIC_ACQ_REL);
  if (last && f != NULL) future_destroy(f); /* the one kept before, or this one */
}

void dred_future_drop_spare(void) {
  dred_future *f = __atomic_exchange_n(&spare, NULL, __ATOMIC_ACQUIRE);
  if (f != NULL) future_destroy(f);
}

/* Whether f completed, read without its mutex: `done` is stored after `status` with
 * release order, so a caller that sees it may read status.  The waits of a met
 * collective's own thread look this way (a mutex taken and dropped per look costs more
 * than a small collective's step). */
int dred_future_done(dred_future *f) { return __atomic_load_n(&f->done, __ATOMIC_ACQUIRE); }

void dred_future_complete(dred_future *f, int status) {
  uv_mutex_lock(&f->mu);
  if (!f->done) {
    f->status = status;
    __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
    uv_cond_broadcast(&f->cv);
  }
  future_unref_locked_and_unlock(f);
}

int dred_future_get(dred_future *f) {
  int st;
  if (f == NULL) {
    DRED_ERROR("dred_future_get: future is NULL");
    return DRED_ERR_ARG;
  }
  if (f->meet_slot != NULL) {
    dred_meetpath_wait(f, UINT64_MAX); /* met in shared memory */
    if (dred_future_done(f)) return f->status;
  }
  if (f->relay_slot != NULL) dred_relay_wait(f, UINT64_MAX); /* copies its node's result */
  uv_mutex_lock(&f->mu);
  while (!f->done) uv_cond_wait(&f->cv, &f->mu);
  st = f->status;
  uv_mutex_unlock(&f->mu);
  return st;
}

int dred_future_is_done(dred_future *f) {
  int d;
  if (f == NULL) return -1;
  if (f->meet_slot != NULL) dred_meetpath_wait(f, 0); /* settles it if its slot decided */
  if (f->relay_slot != NULL) dred_relay_wait(f, 0);
  uv_mutex_lock(&f->mu);
  d = f->done;
  uv_mutex_unlock(&f->mu);
  return d;
}

int dred_future_wait(dred_future *f, int timeout_ms) {
  uint64_t deadline, now;
  int st;
  if (f == NULL) {
    DRED_ERROR("dred_future_wait: future is NULL");
    return DRED_ERR_ARG;
  }
  if (timeout_ms < 0) return dred_future_get(f);
  /* One deadline for the whole call, whichever way the reduction goes: the time spent
   * waiting in the meeting place is not granted again on the condition variable. */
  deadline = uv_hrtime() + (uint64_t)timeout_ms * 1000000ull;
  if (f->meet_slot != NULL) dred_meetpath_wait(f, (uint64_t)timeout_ms * 1000000ull);
  if (f->relay_slot != NULL) {
    now = uv_hrtime();
    dred_relay_wait(f, now < deadline ? deadline - now : 0);
  }
  uv_mutex_lock(&f->mu);
  /* uv_cond_timedwait may wake early (spuriously, or on a broadcast for another waiter):
   * wait again for what is left of the deadline. */
  while (!f->done && (now = uv_hrtime()) < deadline)
    (void)uv_cond_timedwait(&f->cv, &f->mu, deadline - now);
  st = f->done ? f->status : DRED_ERR_TIMEOUT;
  uv_mutex_unlock(&f->mu);
  return st;
}

void dred_future_free(dred_future *f) {
  if (f == NULL) return;
  /* a met reduction that decided is finished now rather than at dred_finalize */
  if (f->meet_slot != NULL && !dred_future_done(f)) dred_meetpath_wait(f, 0);
  uv_mutex_lock(&f->mu);
  if (!f->done) f->abandoned = 1;
  future_unref_locked_and_unlock(f);
}

void dred_future_discard(dred_future *f) {
  if (f == NULL) return;
  if (DRED_KEEP_SPARE) f = __atomic_exchange_n(&spare, f, __ATOMIC_ACQ_REL);
  if (f != NULL) future_destroy(f); /* the one kept before, or this one */
}

int dred_future_abandoned_lock(dred_future *f) {
  uv_mutex_lock(&f->mu);
  if (!f->abandoned) return 0;
  uv_mutex_unlock(&f->mu);
  return 1;
}

void dred_future_unlock(dred_future *f) { uv_mutex_unlock(&f->mu); }
