/*
 * watchdog.c -- see watchdog.h.  The thread loops on uv_cond_timedwait against an absolute
 * deadline, so a spurious wake-up neither fires early nor restarts the wait.
 */
#include "watchdog.h"

#include <string.h>

static void run(void *p) {
  dred_watchdog_t *w = p;
  uint64_t deadline = uv_hrtime() + w->timeout_ns, now;
  uv_mutex_lock(&w->mu);
  while (!w->done && (now = uv_hrtime()) < deadline)
    (void)uv_cond_timedwait(&w->cv, &w->mu, deadline - now);
  if (!w->done) w->fire(w->arg);
  uv_mutex_unlock(&w->mu);
}

int dred_watchdog_start(dred_watchdog_t *w, uint64_t timeout_ns, dred_watchdog_fire_fn fire,
                        void *arg) {
  int rc;
  memset(w, 0, sizeof *w);
  if (fire == NULL) return UV_EINVAL;
  if ((rc = uv_mutex_init(&w->mu)) != 0) return rc;
  if ((rc = uv_cond_init(&w->cv)) != 0) {
    uv_mutex_destroy(&w->mu);
    return rc;
  }
  w->timeout_ns = timeout_ns;
  w->fire = fire;
  w->arg = arg;
  if ((rc = uv_thread_create(&w->th, run, w)) != 0) {
    uv_cond_destroy(&w->cv);
    uv_mutex_destroy(&w->mu);
    return rc;
  }
  w->running = 1;
  return 0;
}

void dred_watchdog_stop(dred_watchdog_t *w) {
  if (!w->running) return;
  uv_mutex_lock(&w->mu);
  w->done = 1;
  uv_cond_signal(&w->cv);
  uv_mutex_unlock(&w->mu);
  uv_thread_join(&w->th);
  uv_cond_destroy(&w->cv);
  uv_mutex_destroy(&w->mu);
  w->running = 0;
}

void dred_watchdog_lock(dred_watchdog_t *w) {
  if (w->running) uv_mutex_lock(&w->mu);
}

void dred_watchdog_unlock(dred_watchdog_t *w) {
  if (w->running) uv_mutex_unlock(&w->mu);
}
