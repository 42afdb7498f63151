/*
 * dispatch.c -- the master's adapter between the wire and the scheduler.
 *
 * Inbound: each control message the scheduler takes is handed to it as decoded, with the
 * sender and a uv_hrtime() stamp; GROUP, PONG and BYE are the adapter's own business.
 * Outbound: a SEND action is already a proto_msg_t and only goes on the wire; journal
 * records go to the journal.  All policy lives in sched.c; nothing here copies a message
 * from one shape into another.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/status.h"
#include "master.h"

static void on_group(master_t *m, int src, const proto_msg_t *msg) {
  uint32_t n = msg->u.group.n, k;
  uint32_t *workers = malloc(sizeof(uint32_t) * n);
  int rc, known, one_node = 0;
  if (workers == NULL) {
    DRED_ERROR("no memory for a group of %u from worker %d", n, src);
    return;
  }
  for (k = 0; k < n; k++) workers[k] = proto_group_worker(msg, k);
  known = sched_group_one_node(m->sched, msg->u.group.id, &one_node) == 0;
  if (proto_group_id(n, workers) != msg->u.group.id) {
    DRED_ERROR("group definition from worker %d has a wrong id: ignored", src);
  } else if ((rc = sched_group_define(m->sched, msg->u.group.id, n, workers)) != 0) {
    DRED_ERROR("group %016llx from worker %d refused: %s",
               (unsigned long long)msg->u.group.id, src, dred_status_str(rc));
  } else if (!known && n > 1 && sched_group_one_node(m->sched, msg->u.group.id, &one_node) == 0 &&
             one_node) {
    /* Said once per group: its replicas cannot survive the loss of that node. */
    DRED_INFO("group %016llx: all %u members on one node (node %u): replicas survive a "
              "process loss, not the loss of that node",
              (unsigned long long)msg->u.group.id, n, m->boot.node_of[workers[0]]);
  }
  free(workers);
}

void master_on_message(master_t *m, int src, const proto_msg_t *msg) {
  sched_event_t ev;
  uint64_t stale;
  int rc;

  if (src < 1 || src > m->nworkers) return;
  m->last_heard[src] = uv_hrtime();
  switch (msg->type) {
    case PROTO_GROUP:
      on_group(m, src, msg);
      return;
    case PROTO_READY:
    case PROTO_DONE:
    case PROTO_RECOVER_FAILED:
    case PROTO_DATA:
    case PROTO_HAVE:
      break;
    case PROTO_ABANDON:
      DRED_WARN("worker %d abandons reduction group %016llx tag " PROTO_KEY_FMT " (%s)", src,
                (unsigned long long)msg->u.recover.group, PROTO_KEY_ARG(msg->u.recover.tag),
                dred_status_str(msg->u.recover.error));
      break;
    case PROTO_PONG:
      m->pong[src] = *msg; /* the pool's use, for the status socket */
      return;
    case PROTO_JOIN: /* a master outside the job: the worker is set up (beside.c) */
      if (m->external) master_beside_up(m, src, msg);
      return;
    case PROTO_BYE:
      /* A worker declared failed is already counted in nfailed: counting its BYE too
       * would end the job while live workers still have reductions in flight. */
      if (!m->bye[src] && !master_worker_failed(m, src)) {
        m->bye[src] = 1;
        m->nbye++;
      }
      /* Reductions that met in the node's shared memory never reached the scheduler: the
       * journal records how many (meta met_in_shared_memory), summed over BYEs so far. */
      m->pong[src].u.ping.meet_done = msg->u.ping.meet_done;
      if (m->journal != NULL && msg->u.ping.meet_done > 0) {
        uint64_t total = 0;
        char buf[32];
        int w;
        for (w = 1; w <= m->nworkers; w++) total += m->pong[w].u.ping.meet_done;
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)total);
        dred_journal_meta(m->journal, "met_in_shared_memory", buf);
      }
      return;
    default:
      DRED_WARN("unexpected %s from worker %d ignored", proto_type_name(msg->type), src);
      return;
  }
  /* The scheduler takes the decoded message as it is (master/sched/sched.h).  READY's inline
   * operand points into the received frame, valid until the next dred_net_recv(): longer
   * than sched_feed(), which copies it. */
  memset(&ev, 0, sizeof ev);
  ev.type = SCHED_EV_MESSAGE;
  ev.now_ns = m->last_heard[src];
  ev.worker = (uint32_t)src;
  ev.msg = *msg;
  m->events++;
  stale = sched_stale_readys(m->sched);
  if ((rc = sched_feed(m->sched, &ev)) != 0)
    DRED_ERROR("%s from worker %d refused by the scheduler: %s", proto_type_name(msg->type), src,
               dred_status_str(rc));
  else if (sched_stale_readys(m->sched) != stale) /* a partial's member, or a late answer */
    DRED_DEBUG("READY from worker %d for reduction group %016llx tag " PROTO_KEY_FMT
               ", which already ended: dropped", src, (unsigned long long)msg->u.ready.group,
               PROTO_KEY_ARG(msg->u.ready.tag));
}

static void send_or_log(master_t *m, int dest, const proto_msg_t *msg) {
  if (master_worker_failed(m, dest)) return;
  if (dred_net_send(&m->net, dest, msg, NULL) != 0)
    DRED_ERROR("cannot send %s to worker %d", proto_type_name(msg->type), dest);
}

int master_drain_actions(master_t *m) {
  sched_action_t a;
  int n = 0;

  while (sched_next_action(m->sched, &a)) {
    n++;
    m->actions++;
    switch (a.type) {
      case SCHED_ACT_SEND: /* a message already in the wire's shape */
        send_or_log(m, (int)a.worker, &a.msg);
        if (a.msg.type == PROTO_TASK) m->tasks_sent++;
        free(a.owned); /* INLINE's operands: encoded (or dropped) by now */
        break;
      case SCHED_ACT_JOURNAL_TASK:
        if (m->journal)
          dred_journal_task(m->journal, a.u.jtask.task_id, a.key.group, proto_key_tag(a.key.tag),
                            a.u.jtask.executor, a.u.jtask.provider, a.u.jtask.bytes,
                            a.u.jtask.start_ns - m->t_start, a.u.jtask.end_ns - m->t_start,
                            a.u.jtask.exec_ns, a.u.jtask.status);
        break;
      case SCHED_ACT_JOURNAL_REDUCTION:
        free(a.owned); /* a distributed result: every DATA pointing into it went out */
        if (a.u.jred.status != DRED_OK)
          DRED_INFO("reduction group %016llx tag " PROTO_KEY_FMT " ended: %s",
                    (unsigned long long)a.key.group, PROTO_KEY_ARG(a.key.tag),
                    dred_status_str(a.u.jred.status));
        if (m->journal)
          dred_journal_reduction(m->journal, a.key.group, proto_key_tag(a.key.tag),
                                 a.u.jred.members, a.u.jred.bytes, a.u.jred.start_ns - m->t_start,
                                 a.u.jred.end_ns - m->t_start, a.u.jred.tasks, a.u.jred.recovered,
                                 a.u.jred.status);
        break;
    }
  }
  return n;
}
