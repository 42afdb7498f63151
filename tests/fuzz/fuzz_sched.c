/*
 * fuzz_sched.c -- libFuzzer target for the reduction scheduler (master/sched/sched.c).
 *
 * The scheduler is a pure state machine fed by messages from workers, any of which may be
 * hostile or simply late (a DONE for a task already dropped, a READY for an unknown
 * group, a RECOVER_FAILED nobody asked for).  The input bytes are read as a small
 * program: a header picks the worker count, policy and nodes and defines up to four groups; then
 * each step picks an event -- a READY message (random member, tag, parameters, buffer,
 * replica list, recovered flag), a DONE (for a task the scheduler really sent, with a
 * random outcome, or for a made-up id), a RECOVER_FAILED, or WORKER_FAILED -- feeds it
 * (messages in the wire's own shape, common/proto.h, as the master passes them), and drains
 * the actions.  Checked after every event (abort() on a violation, so libFuzzer keeps the
 * input): a TASK names two live workers in range and two distinct members; an END, a RECOVER or a journal
 * record names a worker in range (RECOVER: a live one) and an END a status dred defines;
 * an INLINE (inline READYs: the operand is bytes member + 1, sometimes of a wrong length)
 * goes to a live worker in range, within PROTO_INLINE_TOTAL, with every non-root slot
 * holding exactly its member's operand and the root's slot zeros; the target frees it.
 * ASan/UBSan catch memory errors and leaks (sched_free at the end must release all).
 * Build and run: `make fuzz`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../master/sched/sched.h"

typedef struct {
  const uint8_t *p;
  size_t n, pos;
} input_t;

static uint64_t take(input_t *in, unsigned bytes) {
  uint64_t v = 0;
  unsigned i;
  for (i = 0; i < bytes; i++) v |= (uint64_t)(in->pos < in->n ? in->p[in->pos++] : 0) << (8 * i);
  return v;
}

#define MAX_TASKS 256

typedef struct {
  uint64_t id;
  uint32_t executor;
} pending_t;

static void fail(const char *what, uint64_t a, uint64_t b) {
  fprintf(stderr, "fuzz_sched: %s (%llu, %llu)\n", what, (unsigned long long)a,
          (unsigned long long)b);
  abort();
}

/* Drain the actions, checking each; remember dispatched tasks so DONE can answer them. */
static void drain(sched_t *s, uint32_t nw, pending_t *tasks, size_t *ntasks) {
  sched_action_t a;
  while (sched_next_action(s, &a)) {
    /* a SEND by its message type (positive), a journal record by its own (negative) */
    switch (a.type == SCHED_ACT_SEND ? (int)a.msg.type : -(int)a.type) {
      case PROTO_TASK:
        if (a.worker < 1 || a.worker > nw || a.msg.u.task.provider < 1 ||
            a.msg.u.task.provider > nw)
          fail("task names a worker out of range", a.worker, a.msg.u.task.provider);
        /* One worker may hold both operands (a recovered copy next to its own): it
         * combines them locally.  The two must still be different members' data. */
        if (a.msg.u.task.exec_member == a.msg.u.task.prov_member)
          fail("task pairs a member's data with itself", a.msg.u.task.exec_member,
               a.msg.u.task.prov_member);
        if (!sched_worker_alive(s, a.worker) || !sched_worker_alive(s, a.msg.u.task.provider))
          fail("task names a dead worker", a.worker, a.msg.u.task.provider);
        if (*ntasks < MAX_TASKS) {
          tasks[*ntasks].id = a.msg.u.task.task_id;
          tasks[*ntasks].executor = a.worker;
          (*ntasks)++;
        }
        break;
      case PROTO_END:
        if (a.worker < 1 || a.worker > nw) fail("END to a worker out of range", a.worker, 0);
        if (a.msg.u.end.status < DRED_OK || a.msg.u.end.status > DRED_ERR_INTERNAL + 1)
          fail("END with an unknown status", (uint64_t)(int64_t)a.msg.u.end.status, 0);
        break;
      case PROTO_RECOVER:
        if (a.worker < 1 || a.worker > nw || !sched_worker_alive(s, a.worker))
          fail("RECOVER sent to a dead or unknown worker", a.worker, 0);
        break;
      case -SCHED_ACT_JOURNAL_TASK:
        if (a.u.jtask.executor < 1 || a.u.jtask.executor > nw)
          fail("journaled task with an executor out of range", a.u.jtask.executor, 0);
        break;
      case -SCHED_ACT_JOURNAL_REDUCTION:
        break;
      case PROTO_INLINE: {
        uint64_t k2, i;
        const uint8_t *d = a.msg.u.inl.data;
        if (a.worker < 1 || a.worker > nw || !sched_worker_alive(s, a.worker))
          fail("INLINE to a dead or unknown worker", a.worker, 0);
        if (a.msg.u.inl.n == 0 || a.msg.u.inl.root >= a.msg.u.inl.n ||
            (uint64_t)a.msg.u.inl.n * a.msg.u.inl.bytes > PROTO_INLINE_TOTAL ||
            (a.msg.u.inl.bytes > 0 && d == NULL) || (d != NULL && d != a.owned))
          fail("INLINE with a bad shape", a.msg.u.inl.n, a.msg.u.inl.bytes);
        for (k2 = 0; k2 < a.msg.u.inl.n; k2++)
          for (i = 0; i < a.msg.u.inl.bytes; i++)
            if (d[k2 * a.msg.u.inl.bytes + i] != (k2 == a.msg.u.inl.root ? 0 : (uint8_t)(k2 + 1)))
              fail("INLINE slot holds another member's bytes", k2, i);
        free(a.owned);
        break;
      }
      case PROTO_FAILED: /* at WORKER_FAILED, to the live workers about a dead one */
        if (a.worker < 1 || a.worker > nw || !sched_worker_alive(s, a.worker) ||
            a.msg.u.failed.worker < 1 || a.msg.u.failed.worker > nw ||
            sched_worker_alive(s, a.msg.u.failed.worker))
          fail("FAILED to a dead worker, or about a live one", a.worker, a.msg.u.failed.worker);
        break;
      default:
        fail("unknown action type", (uint64_t)a.type, (uint64_t)a.msg.type);
    }
  }
}

static uint8_t opbuf[64]; /* an inline operand: bytes member + 1 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input_t in = {data, size, 0};
  uint32_t nw = 2 + (uint32_t)(take(&in, 1) % 15); /* 2..16 workers */
  sched_policy_t policy = (sched_policy_t)(take(&in, 1) % 3);
  uint64_t gid[4];
  uint32_t gn[4], gw[4][16];
  unsigned ngroups = 1 + (unsigned)(take(&in, 1) % 4), g, k;
  pending_t tasks[MAX_TASKS];
  size_t ntasks = 0, steps = 0;
  uint64_t now = 1;
  sched_t *s = sched_new(nw, policy);
  uint8_t layout = (uint8_t)take(&in, 1);
  uint32_t nnodes = 1 + layout % 4, w;
  if (s == NULL) return 0;
  /* Nodes (sched_nodes.c pairs within each first): 1..4, in blocks or round robin. */
  for (w = 1; w <= nw; w++)
    (void)sched_set_node(s, w, (layout & 0x10) ? (w - 1) % nnodes : (w - 1) * nnodes / nw);

  for (g = 0; g < ngroups; g++) {
    /* Members: a rotation of the workers, some groups smaller than the job. */
    gn[g] = 1 + (uint32_t)(take(&in, 1) % nw);
    for (k = 0; k < gn[g]; k++) gw[g][k] = 1 + (k + g) % nw;
    gid[g] = 0x1000 + g;
    (void)sched_group_define(s, gid[g], gn[g], gw[g]);
  }

  while (in.pos < in.n && steps++ < 4096) {
    sched_event_t ev;
    proto_msg_t *msg = &ev.msg;
    unsigned op = (unsigned)take(&in, 1);
    memset(&ev, 0, sizeof ev);
    now += take(&in, 1) * 1000;
    ev.now_ns = now;
    ev.type = SCHED_EV_MESSAGE;
    g = (unsigned)(take(&in, 1) % ngroups);
    switch (op % 8) {
      case 0: case 1: case 2: case 3: { /* READY, mostly sensible */
        uint8_t flags = (uint8_t)take(&in, 1);
        msg->type = PROTO_READY;
        msg->u.ready.group = (flags & 0x80) ? take(&in, 8) : gid[g];
        msg->u.ready.tag = (int64_t)(take(&in, 1) % 4) - ((flags & 0x40) ? 2 : 0);
        msg->u.ready.member = (uint32_t)(take(&in, 1) % (gn[g] + 1));
        ev.worker = msg->u.ready.member < gn[g] && !(flags & 0x20)
                        ? gw[g][msg->u.ready.member]
                        : (uint32_t)(take(&in, 1) % (nw + 2));
        msg->u.ready.count = 1 + (flags & 1);
        msg->u.ready.type_size = 8;
        msg->u.ready.extent = 8;
        msg->u.ready.op = (flags & 2) ? 7 : 3;
        msg->u.ready.op_is_user = (flags >> 2) & 1;
        msg->u.ready.commutative = !((flags >> 3) & 1);
        msg->u.ready.root = (uint32_t)(take(&in, 1) % (gn[g] + 1));
        msg->u.ready.buf.addr = take(&in, 2);
        msg->u.ready.buf.pool_off = (int64_t)take(&in, 1) - 1;
        msg->u.ready.recovered = (flags >> 4) & 1;
        /* one more than the wire allows now and then: the scheduler must refuse it */
        msg->u.ready.nreplicas = (uint8_t)(take(&in, 1) % (PROTO_MAX_REPLICAS + 2));
        for (k = 0; k < PROTO_MAX_REPLICAS; k++)
          msg->u.ready.replicas[k] = (uint32_t)(take(&in, 1) % (nw + 2));
        { /* inline: the right length mostly, sometimes another; now and then a huge count */
          uint8_t f2 = (uint8_t)take(&in, 1);
          /* absorption's flags (a snapshot; a recovered unit, absorbed or not), any mix */
          msg->u.ready.snap = (f2 >> 4) & 1;
          msg->u.ready.unit = (f2 >> 5) & 1;
          msg->u.ready.absorbed = (f2 >> 7) & 1;
          msg->u.ready.inl = f2 & 1;
          if (f2 & 0x40) msg->u.ready.count = PROTO_INLINE_TOTAL / 4;
          if (msg->u.ready.inl) {
            uint64_t want = msg->u.ready.member == msg->u.ready.root
                                ? 0 : msg->u.ready.count * msg->u.ready.extent;
            msg->u.ready.data_len = (f2 & 6) == 6 ? (uint32_t)(take(&in, 1) % 40) : (uint32_t)want;
            if (msg->u.ready.data_len > sizeof opbuf) msg->u.ready.data_len = sizeof opbuf;
            memset(opbuf, (int)(uint8_t)(msg->u.ready.member + 1), sizeof opbuf);
            msg->u.ready.data = (f2 & 8) && msg->u.ready.data_len > 0 ? NULL : opbuf;
            if (msg->u.ready.data_len == 0) msg->u.ready.data = NULL;
          }
        }
        break;
      }
      case 4: case 5: { /* DONE for a dispatched task, or a made-up one */
        uint8_t pick = (uint8_t)take(&in, 1);
        msg->type = PROTO_DONE;
        if (ntasks > 0 && pick < 224) {
          size_t i = pick % ntasks;
          msg->u.done.task_id = tasks[i].id;
          ev.worker = (pick & 1) && pick > 200 ? 1 + pick % nw : tasks[i].executor;
          tasks[i] = tasks[--ntasks];
        } else {
          msg->u.done.task_id = take(&in, 2);
          ev.worker = (uint32_t)(take(&in, 1) % (nw + 2));
        }
        msg->u.done.status = (uint32_t)(take(&in, 1) % 5);
        msg->u.done.error = (int32_t)(take(&in, 1) % 12);
        msg->u.done.exec_ns = take(&in, 3);
        msg->u.done.absorbed = (msg->u.done.exec_ns & 1) != 0;
        msg->u.done.buf.addr = take(&in, 2);
        msg->u.done.buf.pool_off = (int64_t)take(&in, 1) - 1;
        break;
      }
      case 6:
        ev.type = SCHED_EV_WORKER_FAILED;
        ev.worker = (uint32_t)(take(&in, 1) % (nw + 2));
        break;
      default:
        msg->type = PROTO_RECOVER_FAILED;
        msg->u.recover.group = gid[g];
        msg->u.recover.tag = (int64_t)(take(&in, 1) % 4);
        msg->u.recover.member = (uint32_t)(take(&in, 1) % (gn[g] + 1));
        ev.worker = (uint32_t)(take(&in, 1) % (nw + 2));
        msg->u.recover.error = (take(&in, 1) & 1) ? DRED_ERR_STORAGE : DRED_ERR_PROC_FAILED;
        break;
    }
    (void)sched_feed(s, &ev); /* a refused event is fine; what follows must stay sound */
    drain(s, nw, tasks, &ntasks);
  }
  sched_free(s);
  return 0;
}
