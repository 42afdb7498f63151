/*
 * poller.c -- see poller.h.
 */
#include "poller.h"

int dred_poller_init(dred_poller_t *p, uint64_t min_ns, uint64_t max_ns, uint64_t idle_max_ns,
                     uint64_t idle_after_ns) {
  int rc;
  if (p == NULL || min_ns == 0 || max_ns < min_ns || idle_max_ns < max_ns) return -1;
  if ((rc = uv_mutex_init(&p->mu)) != 0) return rc;
  if ((rc = uv_cond_init(&p->cv)) != 0) {
    uv_mutex_destroy(&p->mu);
    return rc;
  }
  p->kicked = 0;
  p->min_ns = min_ns;
  p->max_ns = max_ns;
  p->idle_max_ns = idle_max_ns;
  p->idle_after_ns = idle_after_ns;
  p->cur_ns = min_ns;
  p->idle_since = uv_hrtime();
  p->sleeps = 0;
  return 0;
}

void dred_poller_close(dred_poller_t *p) {
  uv_cond_destroy(&p->cv);
  uv_mutex_destroy(&p->mu);
}

void dred_poller_wait(dred_poller_t *p, int did_work, int in_flight) {
  uint64_t now = uv_hrtime(), cap;

  if (in_flight || did_work) p->idle_since = now;
  if (did_work) {
    p->cur_ns = p->min_ns;
    return;
  }
  cap = (now - p->idle_since >= p->idle_after_ns) ? p->idle_max_ns : p->max_ns;
  uv_mutex_lock(&p->mu);
  if (!p->kicked) {
    p->sleeps++;
    (void)uv_cond_timedwait(&p->cv, &p->mu, p->cur_ns);
  }
  if (p->kicked) {
    p->kicked = 0;
    p->cur_ns = p->min_ns;
  } else {
    p->cur_ns *= 2;
    if (p->cur_ns > cap) p->cur_ns = cap;
  }
  uv_mutex_unlock(&p->mu);
}

void dred_poller_kick(dred_poller_t *p) {
  uv_mutex_lock(&p->mu);
  p->kicked = 1;
  uv_cond_signal(&p->cv);
  uv_mutex_unlock(&p->mu);
}
