/*
 * watchdog.h -- a thread that calls `fire` unless it is stopped before a deadline.
 *
 * For waits no event loop can bound: a process blocked inside an MPI collective (the
 * master's start-up, master/startwatch.c; the collective part of dred_finalize,
 * lib/engine/api.c) cannot time itself out, so a second thread sleeps on a condition variable
 * until either the waiter stops it or the deadline passes.  `fire` runs on the watchdog's
 * thread with `mu` held (so state the caller guards with `mu` is stable); it normally
 * ends the process.  Use dred_watchdog_lock/unlock to change such state meanwhile.
 */
#ifndef DRED_WATCHDOG_H
#define DRED_WATCHDOG_H

#include <stdint.h>
#include <uv.h>

typedef void (*dred_watchdog_fire_fn)(void *arg);

typedef struct {
  uv_mutex_t mu;
  uv_cond_t cv;
  uv_thread_t th;
  int done, running;
  uint64_t timeout_ns;
  dred_watchdog_fire_fn fire;
  void *arg;
} dred_watchdog_t;

/* Start watching: `fire(arg)` is called after timeout_ns unless dred_watchdog_stop comes
 * first.  Returns 0, or a libuv error (nothing started, nothing to stop). */
int dred_watchdog_start(dred_watchdog_t *w, uint64_t timeout_ns, dred_watchdog_fire_fn fire,
                        void *arg);
/* Stop and join; a no-op on a watchdog that did not start. */
void dred_watchdog_stop(dred_watchdog_t *w);
void dred_watchdog_lock(dred_watchdog_t *w);
void dred_watchdog_unlock(dred_watchdog_t *w);

#endif /* DRED_WATCHDOG_H */
