/*
 * detector.c -- the master's failure detector (seed 002, section 3).
 *
 * A worker that dies closes its control link: main.c declares it failed as soon as the
 * link's closing comes out of the inbox.  Heartbeats catch the rest (a stopped process, a
 * lost node whose sockets never said goodbye): a libuv timer pings every live worker each
 * heartbeat interval; any message from a worker counts as a sign of life (dispatch.c
 * stamps last_heard).  Workers that said BYE are still pinged and judged until SHUTDOWN:
 * such a process waits in dred_finalize for the others, maybe for a long time, and its
 * runtime thread watches the master the same way (without pings it would declare the
 * master lost, and a dead one would go unnoticed).  A worker silent for longer than the
 * failure timeout is declared failed: the scheduler gets WORKER_FAILED (it decides what
 * to recover), every live worker gets FAILED, and the dead worker's link is dropped so
 * nothing waits on it.
 */
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "master.h"

void master_declare_failed(master_t *m, int worker, const char *why) {
  sched_event_t ev;

  if (worker < 1 || worker > m->nworkers || master_worker_failed(m, worker)) return;
  /* First, because it is the record (master.h): from here on the worker counts as dead. */
  memset(&ev, 0, sizeof ev);
  ev.type = SCHED_EV_WORKER_FAILED;
  ev.now_ns = uv_hrtime();
  ev.worker = (uint32_t)worker;
  sched_feed(m->sched, &ev);
  DRED_ERROR("worker %d declared failed: %s", worker, why);
  dred_net_drop(&m->net, worker);
  dred_boot_forget(&m->boot, worker); /* its socket, if on our node: it cannot */
  if (m->journal) dred_journal_worker_failed(m->journal, (uint32_t)worker, uv_hrtime() - m->t_start);
  /* FAILED to every live worker is the scheduler's action (sched_recover.c), queued
   * behind what it decided while the worker counted as alive -- a TASK naming it as
   * provider must reach its executor first -- and ahead of the recovery it starts. */
  master_drain_actions(m);
}

/* Fewer free descriptors than this when a worker is about to be blamed: this master is out
 * of them (libuv holds one spare for its accept trick), and its own shortage may be why. */
#define FD_SHORT 4

void master_suspect_failed(master_t *m, int worker, const char *why) {
  int nfree;
  if (m->net.nofd == 0 && ((nfree = dred_net_fd_free(&m->net)) < 0 || nfree >= FD_SHORT)) {
    master_declare_failed(m, worker, why);
    return;
  }
  if (worker < 1 || worker > m->nworkers || master_worker_failed(m, worker) || m->nofd_stop)
    return;
  m->nofd_stop = 1;
  DRED_ERROR("dred-master is out of file descriptors (limit %d): worker "
             "%d (%s) is not declared failed, since a link this process could not accept "
             "looks the same; stopping the job -- raise `ulimit -n` for dred-master",
             m->net.fd_limit, worker, why);
  uv_stop(&m->loop);
}

static void on_heartbeat(uv_timer_t *t) {
  master_t *m = t->data;
  uint64_t now = uv_hrtime(), limit = m->cfg.fail_timeout_ms * 1000000ull;
  proto_msg_t msg;
  int w;

  if (m->shutdown_sent || m->nofd_stop) return; /* nothing more to judge or ping */
  /* If this timer fired late, the master itself was stalled (descheduled, blocked on I/O):
   * the workers' silence is ours.  Give everyone a fresh start instead of declaring them
   * all failed. */
  if (m->last_tick != 0 && now - m->last_tick > limit / 2) {
    DRED_WARN("failure detector ran %llu ms late: the master was stalled; not judging workers",
              (unsigned long long)((now - m->last_tick) / 1000000ull));
    for (w = 1; w <= m->nworkers; w++) m->last_heard[w] = now;
  }
  m->last_tick = now;
  memset(&msg, 0, sizeof msg);
  msg.type = PROTO_PING;
  msg.u.ping.seq = ++m->ping_seq;
  for (w = 1; w <= m->nworkers; w++) {
    if (master_worker_failed(m, w)) continue;
    if (!m->up[w]) { /* still in dred_init (beside.c): not pinged, bounded apart */
      if (now - m->t_welcome > m->start_timeout_ms * 1000000ull) {
        char why[96];
        snprintf(why, sizeof why, "not set up %llu ms after the start (--start-timeout-s)",
                 (unsigned long long)((now - m->t_welcome) / 1000000ull));
        master_suspect_failed(m, w, why);
      }
      continue;
    }
    if (now - m->last_heard[w] > limit) {
      char why[96];
      snprintf(why, sizeof why, "silent for %llu ms", (unsigned long long)((now - m->last_heard[w]) / 1000000ull));
      master_suspect_failed(m, w, why);
      continue;
    }
    dred_net_send(&m->net, w, &msg, NULL);
  }
}

void master_detector_start(master_t *m) {
  uv_timer_init(&m->loop, &m->heartbeat_timer);
  m->heartbeat_timer.data = m;
  uv_timer_start(&m->heartbeat_timer, on_heartbeat, m->cfg.heartbeat_ms, m->cfg.heartbeat_ms);
}
