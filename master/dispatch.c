/*
 * dispatch.c -- the master's adapter between the wire and the scheduler.
 *
 * Inbound: each control message becomes one scheduler event stamped with uv_hrtime().
 * Outbound: every action the scheduler emits becomes a message to a worker or a journal
 * record.  All policy lives in sched.c; this file only translates.
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
  int rc;

  if (src < 1 || src > m->nworkers) return;
  m->last_heard[src] = uv_hrtime();
  memset(&ev, 0, sizeof ev);
  ev.now_ns = m->last_heard[src];
  switch (msg->type) {
    case PROTO_GROUP:
      on_group(m, src, msg);
      return;
    case PROTO_READY:
      ev.type = SCHED_EV_READY;
      ev.u.ready.key.group = msg->u.ready.group;
      ev.u.ready.key.tag = msg->u.ready.tag;
      ev.u.ready.member = msg->u.ready.member;
      ev.u.ready.worker = (uint32_t)src;
      ev.u.ready.params.count = msg->u.ready.count;
      ev.u.ready.params.type_size = msg->u.ready.type_size;
      ev.u.ready.params.extent = msg->u.ready.extent;
      ev.u.ready.params.type_sig = msg->u.ready.type_sig;
      ev.u.ready.params.op = msg->u.ready.op;
      ev.u.ready.params.op_is_user = msg->u.ready.op_is_user;
      ev.u.ready.params.commutative = msg->u.ready.commutative;
      ev.u.ready.params.root = msg->u.ready.root;
      ev.u.ready.buf = msg->u.ready.buf;
      ev.u.ready.recovered = msg->u.ready.recovered;
      ev.u.ready.nreplicas = msg->u.ready.nreplicas;
      memcpy(ev.u.ready.replicas, msg->u.ready.replicas, sizeof ev.u.ready.replicas);
      ev.u.ready.error = msg->u.ready.error;
      ev.u.ready.params.inl = msg->u.ready.inl;
      ev.u.ready.data = msg->u.ready.data;
      ev.u.ready.data_len = msg->u.ready.data_len;
      break;
    case PROTO_DONE:
      ev.type = SCHED_EV_TASK_DONE;
      ev.u.done.task_id = msg->u.done.task_id;
      ev.u.done.worker = (uint32_t)src;
      ev.u.done.status = (sched_task_status_t)msg->u.done.status;
      ev.u.done.error = msg->u.done.error;
      ev.u.done.exec_ns = msg->u.done.exec_ns;
      ev.u.done.buf = msg->u.done.buf;
      break;
    case PROTO_RECOVER_FAILED:
      ev.type = SCHED_EV_RECOVER_FAILED;
      ev.u.recover_failed.key.group = msg->u.recover.group;
      ev.u.recover_failed.key.tag = msg->u.recover.tag;
      ev.u.recover_failed.member = msg->u.recover.member;
      ev.u.recover_failed.worker = (uint32_t)src;
      ev.u.recover_failed.error = msg->u.recover.error;
      break;
    case PROTO_ABANDON:
      ev.type = SCHED_EV_ABANDON;
      ev.u.abandon.key.group = msg->u.recover.group;
      ev.u.abandon.key.tag = msg->u.recover.tag;
      ev.u.abandon.member = msg->u.recover.member;
      ev.u.abandon.worker = (uint32_t)src;
      ev.u.abandon.error = msg->u.recover.error;
      DRED_WARN("worker %d abandons reduction group %016llx tag %lld (%s)", src,
                (unsigned long long)msg->u.recover.group, (long long)msg->u.recover.tag,
                dred_status_str(msg->u.recover.error));
      break;
    case PROTO_PONG:
      return;
    case PROTO_BYE:
      /* A worker declared failed is already counted in nfailed: counting its BYE too
       * would end the job while live workers still have reductions in flight. */
      if (!m->bye[src] && !m->failed[src]) {
        m->bye[src] = 1;
        m->nbye++;
      }
      return;
    default:
      DRED_WARN("unexpected %s from worker %d ignored", proto_type_name(msg->type), src);
      return;
  }
  m->events++;
  if ((rc = sched_feed(m->sched, &ev)) != 0)
    DRED_ERROR("%s from worker %d refused by the scheduler: %s", proto_type_name(msg->type), src,
               dred_status_str(rc));
}

static void send_or_log(master_t *m, int dest, const proto_msg_t *msg) {
  if (m->failed[dest]) return;
  if (dred_net_send(&m->net, dest, msg, NULL) != 0)
    DRED_ERROR("cannot send %s to worker %d", proto_type_name(msg->type), dest);
}

int master_drain_actions(master_t *m) {
  sched_action_t a;
  proto_msg_t msg;
  int n = 0;

  while (sched_next_action(m->sched, &a)) {
    n++;
    m->actions++;
    memset(&msg, 0, sizeof msg);
    switch (a.type) {
      case SCHED_ACT_TASK:
        msg.type = PROTO_TASK;
        msg.u.task.task_id = a.u.task.task_id;
        msg.u.task.group = a.key.group;
        msg.u.task.tag = a.key.tag;
        msg.u.task.provider = a.u.task.provider;
        msg.u.task.prov_member = a.u.task.prov_member;
        msg.u.task.exec_member = a.u.task.exec_member;
        msg.u.task.count = a.u.task.count;
        msg.u.task.exec_is_left = a.u.task.exec_is_left;
        msg.u.task.buf = a.u.task.prov_buf;
        send_or_log(m, (int)a.u.task.executor, &msg);
        m->tasks_sent++;
        break;
      case SCHED_ACT_END:
        msg.type = PROTO_END;
        msg.u.end.group = a.key.group;
        msg.u.end.tag = a.key.tag;
        msg.u.end.status = a.u.end.status;
        send_or_log(m, (int)a.u.end.worker, &msg);
        break;
      case SCHED_ACT_INLINE: /* the operands are ours to free once encoded */
        msg.type = PROTO_INLINE;
        msg.u.inl.group = a.key.group;
        msg.u.inl.tag = a.key.tag;
        msg.u.inl.n = a.u.inl.n;
        msg.u.inl.root = a.u.inl.root;
        msg.u.inl.bytes = a.u.inl.bytes;
        msg.u.inl.data = a.u.inl.data;
        send_or_log(m, (int)a.u.inl.worker, &msg);
        free(a.u.inl.data);
        break;
      case SCHED_ACT_RECOVER:
        msg.type = PROTO_RECOVER;
        msg.u.recover.group = a.key.group;
        msg.u.recover.tag = a.key.tag;
        msg.u.recover.member = a.u.recover.member;
        send_or_log(m, (int)a.u.recover.worker, &msg);
        break;
      case SCHED_ACT_JOURNAL_TASK:
        if (m->journal)
          dred_journal_task(m->journal, a.u.jtask.task_id, a.key.group, a.key.tag,
                            a.u.jtask.executor, a.u.jtask.provider, a.u.jtask.bytes,
                            a.u.jtask.start_ns - m->t_start, a.u.jtask.end_ns - m->t_start,
                            a.u.jtask.exec_ns, a.u.jtask.status);
        break;
      case SCHED_ACT_JOURNAL_REDUCTION:
        if (a.u.jred.status != DRED_OK)
          DRED_INFO("reduction group %016llx tag %lld ended: %s",
                    (unsigned long long)a.key.group, (long long)a.key.tag,
                    dred_status_str(a.u.jred.status));
        if (m->journal)
          dred_journal_reduction(m->journal, a.key.group, a.key.tag, a.u.jred.members,
                                 a.u.jred.bytes, a.u.jred.start_ns - m->t_start,
                                 a.u.jred.end_ns - m->t_start, a.u.jred.tasks,
                                 a.u.jred.recovered, a.u.jred.status);
        break;
    }
  }
  return n;
}
