/*
 * sched_recover.c -- the scheduler's recovery rules (seed 002, section 3): what happens
 * to a reduction when a worker dies, and how a lost operand is brought back.
 *
 * What it is for.  sched.c pairs ready buffers into tasks as if nobody died; this file is
 * the other half of the same state machine (shared state: sched_internal.h).  Like the
 * rest it reads no clock, does no I/O and never logs: it changes instances and pushes
 * actions (RECOVER messages above all), and sched.c's inst_settle() brings each instance
 * to rest afterwards.
 *
 * How it works.
 *   - A worker fails (on_worker_failed): it is marked dead and every instance in flight
 *     is visited (inst_worker_failed).  The root's worker dying fails the instance with
 *     DRED_ERR_ROOT_FAILED: the result has nowhere to go.  Tasks the dead worker was
 *     executing will never report: the provider's message goes back to the head of the
 *     queue (it was ready earliest), the executor's set is lost (task_drop).  The dead
 *     worker's queued messages are lost too.
 *   - A lost set is split into units (lose_set): a combined buffer is gone, but what it
 *     was made of may still exist somewhere, so each part is recovered on its own and the
 *     partial sums are simply computed again.  A unit is a member's operand plus every
 *     unit its snapshot absorbed in place (lib/robust/absorb.c): a task whose two buffers are
 *     snapshots on one node may combine into the executor's snapshot instead of a fresh
 *     block (TASK's absorb; DONE's absorbed records it as member.absorber / .last), and
 *     that snapshot then stands for the whole unit.  Units form a forest (only unit roots
 *     hold live messages, so only roots absorb or are absorbed); a member that absorbed
 *     nothing is a unit of one, so without absorption every member is recovered alone.
 *     Each root gets a RECOVER; the rest of its unit waits for that answer (`via`).
 *   - An executor dying inside an absorbing task may have absorbed part of the
 *     provider's unit.  The provider's message is held, not re-queued, and the RECOVER
 *     for the executor's unit names it as `tentative`: the node peer that rebuilds the
 *     unit from the dead executor's snapshot finishes the absorption from the provider's
 *     snapshot and says so (absorbed: the held message is freed, its unit is inside), or
 *     found it not begun (the held message goes back to the head of the queue).
 *   - An answer may hold the member's operand alone (unit 0: a stored copy, a reload from
 *     sendbuf).  Then the units its snapshot absorbed are detached and recovered on their
 *     own (unit_split), and since that snapshot no longer stands for the member, later
 *     RECOVERs for it ask for the operand alone (single).
 *   - Recovering member k (member_recover) sends a RECOVER to the first live worker in
 *     k's holder list (holder_at): k's own worker, then the replica holders its READY
 *     announced, then the other members in common/placement.c's order (other nodes
 *     first, cyclic group order) -- which is also where k put its copies when its READY
 *     never arrived.  No live holder left fails the instance (DRED_ERR_PROC_FAILED).
 *   - A member whose worker died before its READY came is recovered from position 1 (its
 *     copies; a node peer may still read its snapshot in shared memory) -- unless the
 *     instance is inline: inline operands have no replicas, so the instance fails.  That
 *     includes a worker already dead when the instance is created (inst_started_after_deaths,
 *     from sched.c's on_ready; a dead root fails it with DRED_ERR_ROOT_FAILED): a member killed right after its call may be declared dead
 *     before any READY of that reduction reaches the master, yet its operand is safe.  If
 *     it never made the call, every holder answers RECOVER_FAILED once its own application
 *     has made it, and the instance fails.  A stale copy of an earlier reduction can never
 *     answer for it: keys carry each explicit tag's use count (common/proto.h).
 *   - A RECOVER_FAILED (the asked worker has no usable copy) or the death of the asked
 *     worker moves on to the next holder in the list (on_recover_failed).
 *   - The answer is an ordinary READY flagged recovered (on_recovered_ready): it becomes
 *     a message covering the unit (or the member) at the tail of the queue and pairing
 *     goes on.  An answer for a member already covered, or for an instance that failed
 *     meanwhile, is ignored.
 */
#include <stdlib.h>

#include "../../common/placement.h"
#include "sched_internal.h"

/* ---- loss and recovery ------------------------------------------------------------------ */

#define NONE PROTO_NO_MEMBER

static int set_has(const uint64_t *set, uint32_t k) { return (set[k / 64] >> (k % 64)) & 1; }

static void msg_add(const inst_t *in, msg_t *m, uint32_t k) {
  (void)in;
  m->set[k / 64] |= 1ULL << (k % 64);
  m->nset++;
  if (k < m->lo) m->lo = k;
  if (k > m->hi) m->hi = k;
}

/* The member whose snapshot holds member k's unit: follow the absorber links (a forest:
 * only the holders of live messages, which are unit roots, absorb or are absorbed). */
static uint32_t unit_root(const inst_t *in, uint32_t k) {
  uint32_t steps = 0;
  while (in->m[k].absorber != NONE && steps++ < in->g->n) k = in->m[k].absorber;
  return k;
}

/* The i-th worker that may hold member k's operand: its own worker, then the replica
 * holders its READY announced, then every other member in the placement order of
 * common/placement.c (other nodes first, each in cyclic group order).  If its READY never
 * came the list is unknown; the member placed its copies on the first live candidates of
 * that same order (the next live member on another node first), so the walk is that
 * order.  The members past the listed holders matter when those died too: a node peer of
 * the dead member may still find its operand's snapshot in the member's shared memory
 * (lib/engine/snapdir.c), and a worker that has nothing answers RECOVER_FAILED at once.
 * 0 past the end. */
static int listed_holder(const member_t *mb, uint32_t w) {
  uint32_t j;
  for (j = 0; j < mb->nreplicas; j++)
    if (mb->replicas[j] == w) return 1;
  return 0;
}

static uint32_t holder_at(const sched_t *s, const inst_t *in, uint32_t k, uint32_t i) {
  const member_t *mb = &in->m[k];
  uint32_t n = in->g->n, j, r, c;
  if (i == 0) return in->g->workers[k];
  if (!mb->arrived) {
    c = dred_place_nth(n, in->g->workers, s->node_of, k, i - 1);
    return c < n ? in->g->workers[c] : 0;
  }
  if (i <= mb->nreplicas) return mb->replicas[i - 1];
  r = i - mb->nreplicas;
  for (j = 0; (c = dred_place_nth(n, in->g->workers, s->node_of, k, j)) < n; j++) {
    uint32_t w = in->g->workers[c];
    if (!listed_holder(mb, w) && --r == 0) return w;
  }
  return 0;
}

/* Ask the first live holder at position >= from to reload member k -- its unit, unless
 * its snapshot no longer stands for it (no_unit); none left fails the instance with
 * `err`. */
static void member_recover(sched_t *s, inst_t *in, uint32_t k, uint32_t from, int32_t err) {
  member_t *mb = &in->m[k];
  uint32_t i, w;
  if (in->status != DRED_OK) return; /* a failed instance recovers nothing */
  for (i = from; (w = holder_at(s, in, k, i)) != 0; i++) {
    if (worker_alive(s, w)) {
      proto_msg_t *msg = &act_send(s, in->key, PROTO_RECOVER, w)->msg;
      msg->u.recover.member = k;
      msg->u.recover.last = mb->last;
      msg->u.recover.tentative = mb->tentative;
      msg->u.recover.single = mb->no_unit;
      mb->state = M_RECOVERING;
      mb->asked = w;
      mb->try_idx = i;
      return;
    }
  }
  mb->state = M_WAITING;
  inst_fail(in, err);
}

/* A buffer is gone.  Its set is a union of units (a unit: a member and every unit its
 * snapshot absorbed in place); each unit is recovered as one, from its root member's
 * holders, and its other members wait for that answer (via). */
void lose_set(sched_t *s, inst_t *in, const msg_t *m) {
  uint32_t k;
  nodes_off(in); /* a recovered operand may come back on any node */
  /* Absorbers always lie inside the same set (a set only grows); a link leaving it would
   * be a bookkeeping error, and cutting it keeps every member recovered exactly once. */
  for (k = m->lo; k <= m->hi; k++)
    if (set_has(m->set, k) && in->m[k].absorber != NONE && !set_has(m->set, in->m[k].absorber))
      in->m[k].absorber = NONE;
  for (k = m->lo; k <= m->hi; k++) {
    member_t *mb = &in->m[k];
    if (!set_has(m->set, k) || mb->absorber == NONE) continue;
    mb->state = M_RECOVERING;
    mb->asked = 0;
    mb->via = unit_root(in, k);
  }
  for (k = m->lo; k <= m->hi && in->status == DRED_OK; k++)
    if (set_has(m->set, k) && in->m[k].absorber == NONE) member_recover(s, in, k, 0, DRED_ERR_PROC_FAILED);
}

/* Member k's unit came back as k's operand alone: the units its snapshot absorbed are
 * recovered on their own now, and its snapshot never stands for k again. */
static void unit_split(sched_t *s, inst_t *in, uint32_t k) {
  uint32_t j, n = in->g->n;
  in->m[k].last = NONE;
  for (j = 0; j < n; j++)
    if (in->m[j].absorber == k) in->m[j].absorber = NONE;
  for (j = 0; j < n; j++)
    if (in->m[j].via == k) in->m[j].via = unit_root(in, j) == j ? NONE : unit_root(in, j);
  for (j = 0; j < n && in->status == DRED_OK; j++)
    if (j != k && in->m[j].state == M_RECOVERING && in->m[j].via == NONE && in->m[j].asked == 0)
      member_recover(s, in, j, 0, DRED_ERR_PROC_FAILED);
}

/* Member k's worker is dead and its READY never came: RECOVER its operand from its
 * copies (an inline instance, which keeps none, fails). */
static void member_lost_before_ready(sched_t *s, inst_t *in, uint32_t k) {
  if (in->params.kind == PROTO_KIND_BCAST)
    return; /* a bcast member brings nothing: it only stops being owed the data */
  if (in->params.inl)
    inst_fail(in, DRED_ERR_PROC_FAILED); /* inline: no replica to recover its operand from */
  else
    member_recover(s, in, k, 1, DRED_ERR_PROC_FAILED);
}

void inst_started_after_deaths(sched_t *s, inst_t *in) {
  const group_t *g = in->g;
  uint32_t k;
  nodes_off(in);
  if (!worker_alive(s, g->workers[in->params.root]) && dist_root_matters(in)) {
    inst_fail(in, DRED_ERR_ROOT_FAILED); /* the result would have nowhere to go */
    return;
  }
  for (k = 0; k < g->n && in->status == DRED_OK; k++)
    if (!worker_alive(s, g->workers[k])) member_lost_before_ready(s, in, k);
}

void partial_refuse(sched_t *s, inst_t *in, const msg_t *m) {
  uint32_t k;
  nodes_off(in);
  for (k = m->lo; k <= m->hi && in->status == DRED_OK; k++)
    if (set_has(m->set, k) && in->m[k].state == M_WAITING)
      member_recover(s, in, k, 0, DRED_ERR_PROC_FAILED);
}

/* ---- events ------------------------------------------------------------------------------ */

/* A READY answering a RECOVER: `worker` now holds a copy of `member`'s unit (or of its
 * operand alone, if the answer says so). */
int on_recovered_ready(sched_t *s, inst_t *in, const sched_event_t *ev) {
  const proto_params_t p = proto_params_of(&ev->msg);
  uint32_t k = ev->msg.u.ready.member, j, t;
  int unit = ev->msg.u.ready.unit, absorbed = ev->msg.u.ready.absorbed;
  member_t *mb;
  msg_t *m, *held;
  if (in == NULL) return DRED_ERR_ARG; /* never creates an instance */
  mb = &in->m[k];
  if (in->status != DRED_OK) return 0; /* too late to matter, and harmless */
  if (mb->state == M_LIVE) return 0;   /* already covered: taking it would count it twice */
  if (mb->state != M_RECOVERING || mb->asked != ev->worker) return DRED_ERR_ARG;
  /* a unit was not asked for, or an absorption nobody could have been doing */
  if ((unit && mb->no_unit) || (absorbed && (mb->tentative == NONE || !unit)))
    return DRED_ERR_ARG;
  m = msg_new(in->g->n, ev->worker, k, ev->msg.u.ready.buf);
  if (m == NULL) return DRED_ERR_NOMEM;
  if (!proto_params_agree(&in->params, &p)) {
    free(m);
    inst_fail(in, DRED_ERR_MISMATCH);
    inst_settle(s, in);
    return 0;
  }
  /* An answer of k's operand alone: if its snapshot absorbed anything (or may have), it
   * no longer stands for k, here or in any later recovery. */
  if (!unit && (mb->last != NONE || mb->tentative != NONE)) mb->no_unit = 1;
  held = mb->held;
  t = mb->tentative;
  mb->held = NULL;
  mb->tentative = NONE;
  mb->state = M_LIVE;
  in->nrecovered++;
  if (unit) {
    for (j = 0; j < in->g->n; j++) {
      if (in->m[j].via != k) continue;
      in->m[j].via = NONE;
      in->m[j].state = M_LIVE;
      msg_add(in, m, j);
    }
  }
  if (absorbed) { /* the node peer finished the absorption: the provider's unit is in it */
    in->m[t].absorber = k;
    mb->last = t;
    for (j = held->lo; j <= held->hi; j++)
      if (set_has(held->set, j)) msg_add(in, m, j);
    free(held);
    held = NULL;
  }
  /* Only k's own worker answering with its snapshot keeps a buffer that may absorb. */
  m->snap = ev->msg.u.ready.snap && unit && !absorbed && ev->worker == in->g->workers[k];
  msg_enqueue(in, m, 0);
  if (!unit) unit_split(s, in, k);
  if (held != NULL) { /* not absorbed: the provider's message is as it was */
    if (worker_alive(s, held->worker)) {
      msg_enqueue(in, held, 1);
    } else {
      lose_set(s, in, held);
      free(held);
    }
  }
  inst_settle(s, in);
  return 0;
}

/* The executor died with the task: the provider's message was ready earliest and goes
 * back to the head (unless its holder is dead too); the executor's set is lost.  If the
 * task could absorb in place, the executor's snapshot may hold part of the provider's
 * unit: the provider's message is held until the node peer recovering the executor's
 * unit says whether it finished that absorption (absorbed) or found it not begun. */
static void task_drop(sched_t *s, inst_t *in, task_t *t) {
  msg_t *exec = t->exec, *prov = t->prov;
  int absorb = t->absorb;
  t->exec = t->prov = NULL;
  task_free(s, t);
  if (in->status == DRED_OK && absorb) {
    in->m[exec->member].tentative = prov->member;
    in->m[exec->member].held = prov;
    prov = NULL;
    lose_set(s, in, exec);
  } else if (in->status == DRED_OK) {
    if (worker_alive(s, prov->worker)) {
      msg_enqueue(in, prov, 1);
      prov = NULL;
    } else {
      lose_set(s, in, prov);
    }
    lose_set(s, in, exec);
  }
  free(exec);
  free(prov);
}

static void inst_worker_failed(sched_t *s, inst_t *in, uint32_t w) {
  const group_t *g = in->g;
  dred_queue_t *q, *prev, *next;
  uint32_t k;

  nodes_off(in); /* recovery, or a worker that will never report: arrival order from now */
  /* the result has nowhere to go, or is lost with its only holder (dist_root_matters) */
  if (in->status == DRED_OK && g->workers[in->params.root] == w && dist_root_matters(in))
    inst_fail(in, DRED_ERR_ROOT_FAILED);

  /* Tasks it was executing will never report.  Walk backwards so that, of several
   * providers put back at the head, the earliest-dispatched ends up first. */
  for (q = in->tasks.prev; q != &in->tasks; q = prev) {
    task_t *t = DRED_QUEUE_DATA(q, task_t, q);
    prev = q->prev;
    if (t->exec->worker == w) task_drop(s, in, t);
  }

  /* Its queued messages are gone with it. */
  DRED_QUEUE_FOREACH_SAFE(q, next, &in->queue) {
    msg_t *m = DRED_QUEUE_DATA(q, msg_t, q);
    if (m->worker != w) continue;
    msg_dequeue(in, m);
    lose_set(s, in, m);
    free(m);
  }

  for (k = 0; k < g->n; k++) {
    member_t *mb = &in->m[k];
    if (g->workers[k] == w && !mb->told) in->nowed--; /* nobody to tell any more */
    if (in->status != DRED_OK) continue;
    if (mb->state == M_RECOVERING && mb->asked == w) /* asked of the dead: next holder */
      member_recover(s, in, k, mb->try_idx + 1, DRED_ERR_PROC_FAILED);
    else if (g->workers[k] == w && !mb->arrived && mb->state == M_WAITING)
      member_lost_before_ready(s, in, k); /* its READY may never come */
  }
  inst_settle(s, in);
}

int on_worker_failed(sched_t *s, uint32_t w) {
  dred_queue_t *q, *next;
  sched_key_t none = {0, 0};
  uint32_t v;
  if (!worker_alive(s, w)) return 0;
  s->w[w].alive = 0;
  s->nfailed++;
  /* Every live worker hears of it, behind every action decided while w still counted as
   * alive and ahead of what its death decides (the RECOVERs below).  A worker stops its
   * reads of w when FAILED comes: a TASK naming w as provider that reached it after
   * FAILED would read a dead process for ever. */
  for (v = 1; v <= s->nworkers; v++)
    if (v != w && s->w[v].alive) act_send(s, none, PROTO_FAILED, v)->msg.u.failed.worker = w;
  if (s->w[w].measured) { /* the "unknown speed" mean is over live workers */
    s->speed_sum -= s->w[w].speed;
    if (--s->nmeasured == 0) s->speed_sum = 0.0;
  }
  DRED_QUEUE_FOREACH_SAFE(q, next, &s->inst_list) /* settle frees only the current one */
    inst_worker_failed(s, DRED_QUEUE_DATA(q, inst_t, link), w);
  return 0;
}

int on_recover_failed(sched_t *s, const sched_event_t *ev) {
  inst_t *in = inst_find(s, key_of(&ev->msg));
  uint32_t k = ev->msg.u.recover.member;
  member_t *mb;
  if (in == NULL) return 0; /* it ended meanwhile (failed for everyone): a late answer */
  if (k >= in->g->n) return DRED_ERR_ARG;
  if (in->status != DRED_OK) return 0;
  mb = &in->m[k];
  if (mb->state != M_RECOVERING || mb->asked != ev->worker) return DRED_ERR_ARG;
  member_recover(s, in, k, mb->try_idx + 1,
                 known_error(ev->msg.u.recover.error, DRED_ERR_PROC_FAILED));
  inst_settle(s, in);
  return 0;
}
