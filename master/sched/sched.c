/*
 * sched.c -- the reduction scheduler of seed 002 (sections 2 and 3) as a pure state machine.
 *
 * What it is for.  dred-master turns every reduction into pairwise tasks.  This file (with
 * sched_recover.c) decides which two ready buffers are combined next, on which worker,
 * what happens when a worker dies, and when every member may be told the reduction
 * ended.  It never talks
 * to MPI, never reads a clock and never logs: events come in through sched_feed() (each
 * stamped with the adapter's time), actions go out through sched_next_action(), and the
 * return code says whether an event made sense.  That keeps every rule unit-testable.
 *
 * How it works.
 *   - An instance (key = group + tag) owns a queue of messages in arrival order.  A
 *     message is (holder worker, holder member, path set P as a bitset over the n members,
 *     bufref).  Path sets of live messages are disjoint, so "P covers all n members" is
 *     just a popcount, kept in msg->nset.
 *   - Pairing: a commutative instance pairs the first two queued messages (when its
 *     members span nodes: within each node first, then the nodes' results, in
 *     sched_nodes.c, until a failure touches it); a
 *     non-commutative one pairs the earliest message that has a rank-adjacent partner
 *     (sets are then intervals [lo,hi]; by_lo/by_hi index queued messages by their ends so
 *     the neighbour lookup is O(1) and one pass over the queue finds every pair).
 *   - The executor is the root's side if either side is the root, else the policy's pick.
 *     A task owns both messages until its executor reports; the executor's message then
 *     comes back with the union and the provider's message is freed.
 *   - An instance that fails (mismatch, root died, an operand lost for good, a task
 *     error) dispatches nothing more; once its in-flight tasks drain, every member that
 *     arrived is told the status, later arrivals are told at once, and when nobody alive
 *     is owed an END it is journaled and removed.  `nowed` counts members that are alive
 *     and not told, so that test is O(1).
 *   - Fault tolerance (sched_recover.c): a set whose buffer died with a worker is
 *     "lost".  It is split into units (a member's operand and what its snapshot absorbed
 *     in place, when TASK's absorb allowed it), and each is reloaded by a RECOVER sent to
 *     the first live worker that may hold its operand: its own worker, then the replica
 *     holders its READY announced (or, when its READY never came, the next members in
 *     cyclic group order: seed 002 eq. 4 puts the copy on the next live member).  The
 *     answer is an ordinary READY flagged recovered.
 *   - Lookups: instances by (group, tag), tasks by id and groups by id go through
 *     common/keymap.h's intrusive hash map, so thousands of instances stay O(1).
 *   - An instance that ended is gone, but its key is remembered a while (the last
 *     SCHED_ENDED_KEEP of them): a READY that comes for it afterwards is stale -- a
 *     member its node's partial covered gives up and sends its own when it hears its
 *     folder died, and may do so after the instance ended (lib/paths/partial.c) -- and
 *     is dropped rather than starting an instance nobody else will ever join; so is the
 *     answer to a RECOVER that an instance failing for everyone left outstanding.  Keys
 *     are never reused (common/proto.h), so such a READY can belong to nothing else.
 *
 * Files.  The machine is split by concern: this file keeps the failure-free rules above
 * (instances, pairing, executor choice, tasks, ends), the event dispatch and the public
 * API; sched_recover.c keeps the recovery rules (a worker failed, RECOVER and
 * RECOVER_FAILED, a recovered READY); sched_nodes.c the node-by-node pairing;
 * sched_internal.h holds the state they share.
 *
 * Invariants worth knowing while reading:
 *   - in a running instance every queued message's holder is alive (a dying worker's
 *     messages leave the queue), so a dead worker is never paired or chosen;
 *   - every task in an instance's task list has a live executor (a dying executor's tasks
 *     are dropped at once), so "no tasks in flight" is just an empty list;
 *   - member state M_LIVE means the member's operand is inside exactly one live message.
 *
 * Memory: allocations that happen before an event changes anything fail cleanly with
 * DRED_ERR_NOMEM; the few that happen in the middle of applying an event (a task, the
 * action list) abort, as Redis's zmalloc does: a half-applied event would leave members
 * waiting forever, which is worse than a crash the launcher reports.
 */
#include "sched_internal.h"

#include <stdlib.h>
#include "../../common/placement.h"
#include <string.h>

/* ---- allocation ------------------------------------------------------------------- */

static void oom(void) { abort(); } /* no I/O in here: the adapter's core dump says where */

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (p == NULL) oom();
  return p;
}

/* The instance an inbound message is about.  READY names it in its own fields;
 * RECOVER_FAILED and ABANDON share RECOVER's layout (common/proto.h). */
sched_key_t key_of(const proto_msg_t *m) {
  sched_key_t k;
  if (m->type == PROTO_READY) {
    k.group = m->u.ready.group;
    k.tag = m->u.ready.tag;
  } else {
    k.group = m->u.recover.group;
    k.tag = m->u.recover.tag;
  }
  return k;
}

/* ---- state (the types are in sched_internal.h) ------------------------------------- */

int worker_alive(const sched_t *s, uint32_t w) {
  return w >= 1 && w <= s->nworkers && s->w[w].alive;
}

/* ---- actions ------------------------------------------------------------------------ */

static sched_action_t *act_push(sched_t *s, sched_act_type_t type, sched_key_t key) {
  sched_action_t *a;
  if (s->act_len == s->act_cap) {
    if (s->act_head > 0) { /* slide the undrained tail down before growing */
      memmove(s->act, s->act + s->act_head, (s->act_len - s->act_head) * sizeof *s->act);
      s->act_len -= s->act_head;
      s->act_head = 0;
    }
    if (s->act_len == s->act_cap) {
      size_t cap = s->act_cap ? s->act_cap * 2 : 64;
      sched_action_t *na = realloc(s->act, cap * sizeof *na);
      if (na == NULL) oom();
      s->act = na;
      s->act_cap = cap;
    }
  }
  a = &s->act[s->act_len++];
  memset(a, 0, sizeof *a);
  a->type = type;
  a->key = key;
  return a;
}

/* A message to `worker` about instance `key`: the one place the instance's group and tag
 * go into an outbound message (each type keeps them in its own fields). */
sched_action_t *act_send(sched_t *s, sched_key_t key, proto_type_t type, uint32_t worker) {
  sched_action_t *a = act_push(s, SCHED_ACT_SEND, key);
  a->worker = worker;
  a->msg.type = type;
  switch (type) {
    case PROTO_TASK:
      a->msg.u.task.group = key.group;
      a->msg.u.task.tag = key.tag;
      break;
    case PROTO_END:
    case PROTO_PUSH:
      a->msg.u.end.group = key.group;
      a->msg.u.end.tag = key.tag;
      break;
    case PROTO_INLINE:
      a->msg.u.inl.group = key.group;
      a->msg.u.inl.tag = key.tag;
      break;
    case PROTO_DATA:
      a->msg.u.data.group = key.group;
      a->msg.u.data.tag = key.tag;
      break;
    case PROTO_FAILED: /* about a worker, not an instance: the caller fills it in */
      break;
    default: /* PROTO_RECOVER */
      a->msg.u.recover.group = key.group;
      a->msg.u.recover.tag = key.tag;
      break;
  }
  return a;
}

/* ---- lookups (common/keymap.h; a group or a task is keyed by (id, 0)) --------------- */

static group_t *group_find(const sched_t *s, uint64_t id) {
  dred_keymap_node_t *n = dred_keymap_find(&s->groups, id, 0);
  return n != NULL ? DRED_KEYMAP_DATA(n, group_t, node) : NULL;
}

inst_t *inst_find(const sched_t *s, sched_key_t key) {
  dred_keymap_node_t *n = dred_keymap_find(&s->insts, key.group, key.tag);
  return n != NULL ? DRED_KEYMAP_DATA(n, inst_t, node) : NULL;
}

static task_t *task_find(const sched_t *s, uint64_t id) {
  dred_keymap_node_t *n = dred_keymap_find(&s->tasks, id, 0);
  return n != NULL ? DRED_KEYMAP_DATA(n, task_t, node) : NULL;
}

/* ---- messages ----------------------------------------------------------------------- */

static size_t set_words(uint32_t n) { return ((size_t)n + 63) / 64; }
static int set_has(const uint64_t *set, uint32_t k) { return (set[k / 64] >> (k % 64)) & 1; }

/* A message holding member `member`'s operand alone.  NULL when out of memory. */
msg_t *msg_new(uint32_t n, uint32_t worker, uint32_t member, proto_buf_t buf) {
  msg_t *m = calloc(1, sizeof *m + set_words(n) * sizeof(uint64_t));
  if (m == NULL) return NULL;
  dred_queue_init(&m->q);
  m->worker = worker;
  m->member = member;
  m->buf = buf;
  m->lo = m->hi = member;
  m->nset = 1;
  m->set[member / 64] |= 1ULL << (member % 64);
  return m;
}

static void msg_union(const inst_t *in, msg_t *into, const msg_t *from) {
  size_t i, nw = set_words(in->g->n);
  for (i = 0; i < nw; i++) into->set[i] |= from->set[i];
  into->nset += from->nset;
  if (from->lo < into->lo) into->lo = from->lo;
  if (from->hi > into->hi) into->hi = from->hi;
}

void msg_enqueue(inst_t *in, msg_t *m, int at_head) {
  if (at_head) {
    m->seq = --in->seq_head;
    dred_queue_insert_head(&in->queue, &m->q);
  } else {
    m->seq = ++in->seq_tail;
    dred_queue_insert_tail(&in->queue, &m->q);
  }
  if (in->by_lo != NULL) {
    in->by_lo[m->lo] = m;
    in->by_hi[m->hi] = m;
  }
  in->fresh = m;
  in->nfresh++;
}

void msg_dequeue(inst_t *in, msg_t *m) {
  dred_queue_remove(&m->q);
  if (in->by_lo != NULL) {
    in->by_lo[m->lo] = NULL;
    in->by_hi[m->hi] = NULL;
  }
  if (in->fresh == m) in->fresh = NULL;
}

/* ---- instances: creation, ending ---------------------------------------------------- */

static inst_t *inst_new(sched_t *s, group_t *g, sched_key_t key, const proto_params_t *p) {
  inst_t *in = calloc(1, sizeof *in + (size_t)g->n * sizeof(member_t));
  uint32_t k;
  if (in == NULL) return NULL;
  if (!p->commutative) {
    in->by_lo = calloc(g->n, sizeof *in->by_lo);
    in->by_hi = calloc(g->n, sizeof *in->by_hi);
    if (in->by_lo == NULL || in->by_hi == NULL) {
      free(in->by_lo);
      free(in->by_hi);
      free(in);
      return NULL;
    }
  }
  in->key = key;
  in->g = g;
  in->params = *p;
  if (nodes_inst_init(s, g, in) != 0) {
    free(in->by_lo);
    free(in->by_hi);
    free(in);
    return NULL;
  }
  in->bytes = p->count * (uint64_t)p->extent;
  in->start_ns = s->now;
  dred_queue_init(&in->queue);
  dred_queue_init(&in->tasks);
  for (k = 0; k < g->n; k++) {
    member_t *mb = &in->m[k];
    mb->absorber = mb->last = mb->tentative = mb->via = PROTO_NO_MEMBER;
    if (worker_alive(s, g->workers[k])) in->nowed++;
  }
  /* never fails: sched_new gave the map its slots */
  (void)dred_keymap_insert(&s->insts, &in->node, key.group, key.tag);
  dred_queue_insert_tail(&s->inst_list, &in->link);
  return in;
}

void task_free(sched_t *s, task_t *t) {
  dred_keymap_remove(&s->tasks, &t->node);
  dred_queue_remove(&t->q);
  free(t->exec);
  free(t->prov);
  free(t);
}

static void inst_free(sched_t *s, inst_t *in) {
  dred_queue_t *q, *n;
  uint32_t k;
  for (k = 0; k < in->g->n; k++) free(in->m[k].held);
  DRED_QUEUE_FOREACH_SAFE(q, n, &in->queue) {
    dred_queue_remove(q);
    free(DRED_QUEUE_DATA(q, msg_t, q));
  }
  DRED_QUEUE_FOREACH_SAFE(q, n, &in->tasks) task_free(s, DRED_QUEUE_DATA(q, task_t, q));
  dred_keymap_remove(&s->insts, &in->node);
  dred_queue_remove(&in->link);
  free(in->by_lo);
  free(in->by_hi);
  free(in->inl_data);
  free(in->res);
  if (in->dist_waiting) dred_queue_remove(&in->dist_link);
  nodes_inst_free(in);
  free(in);
}

void inst_tell(sched_t *s, inst_t *in, uint32_t k, int32_t status) {
  act_send(s, in->key, PROTO_END, in->g->workers[k])->msg.u.end.status = status;
  in->m[k].told = 1;
  in->nowed--;
}

/* Remember that the instance of `key` ended (the ring's oldest key is forgotten). */
static void ended_note(sched_t *s, sched_key_t key) {
  dred_keymap_node_t *n = &s->ended_ring[s->ended_next];
  if (s->ended_count == SCHED_ENDED_KEEP)
    dred_keymap_remove(&s->ended, n); /* the oldest */
  else
    s->ended_count++;
  (void)dred_keymap_insert(&s->ended, n, key.group, key.tag); /* has slots: never fails */
  s->ended_next = (s->ended_next + 1) % SCHED_ENDED_KEEP;
}

static int ended_recently(const sched_t *s, sched_key_t key) {
  return dred_keymap_find(&s->ended, key.group, key.tag) != NULL;
}

void inst_journal_and_free(sched_t *s, inst_t *in) {
  sched_action_t *a = act_push(s, SCHED_ACT_JOURNAL_REDUCTION, in->key);
  /* The DATA actions sent before point into the distributed result: the record, the
   * instance's last action, takes it, and the taker frees it after those went out. */
  a->owned = in->res;
  in->res = NULL;
  a->u.jred.members = in->g->n;
  a->u.jred.bytes = in->bytes;
  a->u.jred.start_ns = in->start_ns;
  a->u.jred.end_ns = s->now;
  a->u.jred.tasks = in->ntasks;
  a->u.jred.recovered = in->nrecovered;
  a->u.jred.status = in->status;
  ended_note(s, in->key);
  inst_free(s, in);
}

/* A message covers every member: the result is at the root.  Tell everyone alive. */
void inst_complete(sched_t *s, inst_t *in) {
  uint32_t k;
  for (k = 0; k < in->g->n; k++)
    if (!in->m[k].told && worker_alive(s, in->g->workers[k])) inst_tell(s, in, k, DRED_OK);
  inst_journal_and_free(s, in);
}

/* Mark the instance failed; the first reason wins.  Never frees: inst_settle does. */
void inst_fail(inst_t *in, int32_t status) {
  if (in->status == DRED_OK) in->status = status ? status : DRED_ERR_INTERNAL;
}

/* A failed instance: once no task is in flight, tell every arrived member -- but a relay
 * follower only once its HAVE came (it may be copying from its leader's block until
 * then: sched_distribute.c) -- and when nobody alive is owed an END any more, journal it
 * and let the key be used again. */
static void inst_try_finish(sched_t *s, inst_t *in) {
  uint32_t k;
  if (!dred_queue_empty(&in->tasks)) return;
  in->drained = 1;
  for (k = 0; k < in->g->n && in->nowed > 0; k++)
    if (in->m[k].arrived && !in->m[k].told && !in->m[k].follow &&
        worker_alive(s, in->g->workers[k]))
      inst_tell(s, in, k, in->status);
  if (in->nowed == 0) inst_journal_and_free(s, in);
}

static void inst_pair(sched_t *s, inst_t *in);

/* Bring an instance to rest after an event.  A running one ends if a message covers all
 * members (it is then the only message), else pairs what it can; a failed one goes on
 * toward its ENDs.  May free `in`: callers must not touch it afterwards. */
void inst_settle(sched_t *s, inst_t *in) {
  if (in->status != DRED_OK) {
    inst_try_finish(s, in);
    return;
  }
  if (in->dist) { /* bcast, or an allreduce whose result is whole: no tasks */
    dist_settle(s, in);
    return;
  }
  if (in->params.inl) { /* no tasks: complete once every member's operand is here */
    if (in->ninl == in->g->n) dist_inline_complete(s, in);
    return;
  }
  if (!dred_queue_empty(&in->queue)) {
    msg_t *head = DRED_QUEUE_DATA(dred_queue_head(&in->queue), msg_t, q);
    if (head->nset == in->g->n) {
      if (in->params.kind == PROTO_KIND_ALLREDUCE) {
        dist_begin(s, in, head);
        dist_settle(s, in); /* an empty result is whole already */
      } else
        inst_complete(s, in);
      return;
    }
  }
  inst_pair(s, in);
}

/* ---- executor choice ------------------------------------------------------------------ */

static double speed_or_mean(const sched_t *s, uint32_t w) {
  if (s->w[w].measured) return s->w[w].speed;
  if (s->nmeasured > 0) return s->speed_sum / s->nmeasured;
  return 1.0; /* nobody measured: compare the byte counts themselves */
}

/* Whether `a` (the earlier message) executes rather than `b`.  Both holders are alive. */
static int exec_is_a(const sched_t *s, const inst_t *in, const msg_t *a, const msg_t *b) {
  const worker_t *wa = &s->w[a->worker], *wb = &s->w[b->worker];
  double ea, eb;
  /* The result must end at the root, so the root's side always executes. */
  if (a->member == in->params.root) return 1;
  if (b->member == in->params.root) return 0;
  switch (s->policy) {
    case SCHED_POLICY_LAST_TIME:
      return !(wb->last_exec_ns < wa->last_exec_ns);
    case SCHED_POLICY_PREDICT:
      ea = (double)(wa->queued_bytes + in->bytes) / speed_or_mean(s, a->worker);
      eb = (double)(wb->queued_bytes + in->bytes) / speed_or_mean(s, b->worker);
      return !(eb < ea);
    case SCHED_POLICY_FIRST:
    default:
      return 1;
  }
}

void task_dispatch(sched_t *s, inst_t *in, msg_t *a, msg_t *b) {
  task_t *t = xcalloc(1, sizeof *t);
  proto_msg_t *msg;
  int a_exec = exec_is_a(s, in, a, b);
  msg_dequeue(in, a);
  msg_dequeue(in, b);
  t->id = ++s->next_task_id;
  t->inst = in;
  t->exec = a_exec ? a : b;
  t->prov = a_exec ? b : a;
  t->bytes = in->bytes;
  t->start_ns = s->now;
  (void)dred_keymap_insert(&s->tasks, &t->node, t->id, 0); /* has slots: never fails */
  dred_queue_insert_tail(&in->tasks, &t->q);
  in->ntasks++;
  s->w[t->exec->worker].queued_bytes += t->bytes;
  nodes_count(in, t->exec->member, +1);

  msg = &act_send(s, in->key, PROTO_TASK, t->exec->worker)->msg;
  msg->u.task.task_id = t->id;
  msg->u.task.provider = t->prov->worker;
  msg->u.task.exec_member = t->exec->member;
  msg->u.task.prov_member = t->prov->member;
  msg->u.task.buf = t->prov->buf;
  msg->u.task.count = in->params.count;
  msg->u.task.exec_is_left = !in->params.commutative && t->exec->hi < t->prov->lo;
  /* In place only between two snapshots on one node: what a node peer needs to finish
   * the absorption if the executor dies (sched_recover.c) lies in shared memory there. */
  t->absorb = t->exec->snap && t->prov->snap && t->exec->member != in->params.root &&
              s->node_of[t->exec->worker] == s->node_of[t->prov->worker];
  msg->u.task.absorb = t->absorb;
}

/* ---- pairing ---------------------------------------------------------------------------- */

/* The earliest queued message whose interval touches `a`'s, or NULL. */
static msg_t *adjacent_partner(const inst_t *in, const msg_t *a) {
  msg_t *l = a->lo > 0 ? in->by_hi[a->lo - 1] : NULL;
  msg_t *r = a->hi + 1 < in->g->n ? in->by_lo[a->hi + 1] : NULL;
  if (l != NULL && r != NULL) return l->seq < r->seq ? l : r;
  return l != NULL ? l : r;
}

static void inst_pair(sched_t *s, inst_t *in) {
  dred_queue_t *q, *next;
  msg_t *x = in->fresh;
  uint32_t nfresh = in->nfresh;
  in->fresh = NULL;
  in->nfresh = 0;
  if (in->by_node) {
    nodes_pair(s, in);
    return;
  }
  if (in->params.commutative) {
    while (!dred_queue_empty(&in->queue) && in->queue.next->next != &in->queue)
      task_dispatch(s, in, DRED_QUEUE_DATA(in->queue.next, msg_t, q),
                    DRED_QUEUE_DATA(in->queue.next->next, msg_t, q));
    return;
  }
  /* After every pass no two queued messages are adjacent, and taking messages out never
   * makes two others adjacent.  So with nothing enqueued since, there is nothing to do;
   * with one message x enqueued, any pair involves x.  The full scan below would then
   * stop first at the earliest of x and its neighbours (a neighbour's only partner is
   * x), which gives this O(1) shortcut for the common case. */
  if (nfresh == 0) return;
  if (nfresh == 1 && x != NULL) {
    msg_t *nb = adjacent_partner(in, x); /* x's earliest neighbour */
    if (nb != NULL) {
      if (nb->seq < x->seq)
        task_dispatch(s, in, nb, x);
      else
        task_dispatch(s, in, x, nb);
    }
    return;
  }
  /* Scan candidates in arrival order.  Taking a pair out never makes two other messages
   * adjacent, so the messages before `a` still have no partner afterwards and the scan
   * can go on from a's successor instead of restarting: one pass finds every pair.  A
   * partner is never earlier than `a`: that earlier message would have paired with `a`. */
  for (q = in->queue.next; q != &in->queue; q = next) {
    msg_t *a = DRED_QUEUE_DATA(q, msg_t, q), *b = adjacent_partner(in, a);
    next = q->next;
    if (b == NULL) continue;
    if (next == &b->q) next = next->next;
    task_dispatch(s, in, a, b);
  }
}

/* ---- events ------------------------------------------------------------------------------ */

/* A worker's error code becomes every member's status: one dred does not define (0, a
 * negative number, garbage from a hostile peer, as tests/fuzz/fuzz_sched.c sends) must not
 * reach a future, where dred_strerror could not name it.  It becomes `otherwise`. */
int32_t known_error(int32_t error, int32_t otherwise) {
  return error > DRED_OK && error <= DRED_ERR_INTERNAL ? error : otherwise;
}


/* An inline READY whose parameters agree: keep member k's operand, or fail the instance
 * when the operand has the wrong length or the instance could not be inline at all (n x
 * bytes beyond PROTO_INLINE_TOTAL): members computed the same count and extent, so this
 * is a peer that does not follow the protocol, and everyone is told MISMATCH rather than
 * left waiting. */
static void inline_take(inst_t *in, uint32_t k, const proto_msg_t *ready) {
  uint64_t want = dist_inline_want(in, k);
  if (in->bytes > PROTO_INLINE_TOTAL || (uint64_t)in->g->n * in->bytes > PROTO_INLINE_TOTAL ||
      ready->u.ready.data_len != want || (want > 0 && ready->u.ready.data == NULL)) {
    inst_fail(in, DRED_ERR_MISMATCH);
    return;
  }
  if (in->inl_data == NULL) {
    /* zeros, so the root's slot (and any slot of a zero-byte operand) is defined */
    in->inl_data = calloc(in->g->n, in->bytes > 0 ? (size_t)in->bytes : 1);
    if (in->inl_data == NULL) {
      inst_fail(in, DRED_ERR_NOMEM);
      return;
    }
  }
  if (want > 0) memcpy(in->inl_data + (size_t)k * (size_t)in->bytes, ready->u.ready.data, (size_t)want);
}

/* A READY naming members that met in the node's shared-memory slot while this one went
 * to the master (lib/paths/meetpath.c: the slot was mixed): they send no READY, they learned
 * DRED_ERR_MISMATCH there.  They count as arrived and told, so the instance can end. */
static void meet_take(sched_t *s, inst_t *in, uint32_t k, uint64_t mask) {
  uint32_t j;
  for (j = 0; j < in->g->n && j < 64; j++) {
    if (j == k || !(mask >> j & 1) || in->m[j].arrived) continue;
    in->m[j].arrived = 1;
    if (!in->m[j].told && worker_alive(s, in->g->workers[j])) {
      in->m[j].told = 1;
      in->nowed--;
    }
  }
  inst_fail(in, DRED_ERR_MISMATCH);
}

/* A node partial (READY's cover, proto.h): member k's worker holds the combined operands
 * of the covered members of its node, who send no READY of their own.  The members must
 * all still be waiting (none arrived, none live, none being recovered); they then arrive
 * together and the buffer is one message over all of them, paired like any other.  A
 * partial that meets a member already covered some other way -- the node's first partial
 * reached the master before its holder died and a survivor sent it again, or the master
 * began recovering a dead member the partial includes -- is not taken, since taking it
 * would count that member twice: its waiting members are recovered one by one instead
 * (partial_refuse, sched_recover.c), each from its own worker first, which still holds its
 * operand.  Either way every covered member is owed an END. */
static int on_partial(sched_t *s, const sched_event_t *ev, group_t *g, inst_t *in) {
  const proto_msg_t *r = &ev->msg;
  const proto_params_t p = proto_params_of(r);
  uint32_t k = r->u.ready.member, j, b;
  size_t i, nw = set_words(g->n);
  int created = 0, overlap = 0;
  msg_t *m;
  if (r->u.ready.cover_len != (g->n + 7) / 8) return DRED_ERR_ARG;
  m = msg_new(g->n, ev->worker, k, r->u.ready.buf);
  if (m == NULL) return DRED_ERR_NOMEM;
  /* the set, a byte of the bitmap at a time: a node's members are few among many */
  m->set[k / 64] = 0;
  m->lo = g->n;
  m->hi = 0;
  m->nset = 0;
  for (b = 0; b < r->u.ready.cover_len; b++)
    if (r->u.ready.cover[b] != 0) m->set[b / 8] |= (uint64_t)r->u.ready.cover[b] << (b % 8 * 8);
  for (i = 0; i < nw; i++) {
    uint64_t x = m->set[i];
    if (x == 0) continue;
    j = (uint32_t)(i * 64) + (uint32_t)__builtin_ctzll(x);
    if (j < m->lo) m->lo = j;
    m->hi = (uint32_t)(i * 64) + 63u - (uint32_t)__builtin_clzll(x);
    m->nset += (uint32_t)__builtin_popcountll(x);
  }
  /* inside the group; the root only in its own partial (the root's side executes); in
   * rank order, a run of ranks */
  if (m->hi >= g->n || (p.root < g->n && p.root != k && set_has(m->set, p.root)) ||
      (!p.commutative && m->hi - m->lo + 1 != m->nset)) {
    free(m);
    return DRED_ERR_ARG;
  }
  if (in == NULL) {
    in = inst_new(s, g, key_of(r), &p);
    if (in == NULL) {
      free(m);
      return DRED_ERR_NOMEM;
    }
    created = 1;
  }
  /* a fold that failed: every covered member is told why */
  if (r->u.ready.error != 0) inst_fail(in, r->u.ready.error);
  if (created && p.root >= g->n) inst_fail(in, DRED_ERR_MISMATCH);
  if (in->status == DRED_OK && !proto_params_agree(&in->params, &p)) inst_fail(in, DRED_ERR_MISMATCH);
  if (created && in->status == DRED_OK && in->nowed < g->n) inst_started_after_deaths(s, in);
  for (i = m->lo / 64; i <= m->hi / 64; i++)
    for (uint64_t x = m->set[i]; x != 0; x &= x - 1) {
      member_t *mb = &in->m[i * 64 + (size_t)__builtin_ctzll(x)];
      if (mb->arrived || mb->state != M_WAITING) overlap = 1;
    }
  for (i = m->lo / 64; i <= m->hi / 64; i++)
    for (uint64_t x = m->set[i]; x != 0; x &= x - 1) {
      j = (uint32_t)(i * 64) + (uint32_t)__builtin_ctzll(x);
      if (in->m[j].arrived) continue;
      in->m[j].arrived = 1; /* owed an END; its copies lie where common/placement.c put them */
      in->m[j].covered = 1;
      if (in->status == DRED_OK && !overlap) {
        in->m[j].state = M_LIVE;
        nodes_count(in, j, -1);
      }
    }
  if (in->status == DRED_OK && overlap) partial_refuse(s, in, m);
  if (in->status == DRED_OK && !overlap)
    msg_enqueue(in, m, 0);
  else
    free(m);
  inst_settle(s, in);
  return 0;
}

static int on_ready(sched_t *s, const sched_event_t *ev) {
  const proto_msg_t *r = &ev->msg;
  const proto_params_t params = proto_params_of(r), *p = &params;
  const sched_key_t key = key_of(r);
  uint32_t k = r->u.ready.member, w = ev->worker;
  group_t *g = group_find(s, key.group);
  inst_t *in;
  msg_t *m;
  int created = 0;

  if (g == NULL || k >= g->n || !worker_alive(s, w) || r->u.ready.nreplicas > PROTO_MAX_REPLICAS)
    return DRED_ERR_ARG;
  in = inst_find(s, key);
  if (in == NULL && ended_recently(s, key)) { /* stale: see the opening comment */
    s->stale_readys++;
    return 0;
  }
  if (r->u.ready.recovered) return on_recovered_ready(s, in, ev);
  if (g->workers[k] != w) return DRED_ERR_ARG;
  if (r->u.ready.cover_len != 0) return on_partial(s, ev, g, in);
  /* a member whose node's partial covered it sends its own READY only when it could not
   * tell whether the partial reached us (partial.c): it did */
  if (in != NULL && in->m[k].covered) return 0;
  if (in != NULL && (in->m[k].arrived || in->m[k].state != M_WAITING)) return DRED_ERR_ARG;

  /* Allocate before changing anything, so running out of memory leaves no trace. */
  m = msg_new(g->n, w, k, r->u.ready.buf);
  if (m == NULL) return DRED_ERR_NOMEM;
  if (in == NULL) {
    in = inst_new(s, g, key, p);
    if (in == NULL) {
      free(m);
      return DRED_ERR_NOMEM;
    }
    created = 1;
  }

  in->m[k].arrived = 1;
  in->m[k].follow = r->u.ready.have == PROTO_HAVE_FOLLOW; /* proto.c: a large allreduce's */
  in->m[k].nreplicas = r->u.ready.nreplicas;
  memcpy(in->m[k].replicas, r->u.ready.replicas, r->u.ready.nreplicas * sizeof(uint32_t));

  /* A member that could not allocate says so explicitly; its buffer is not usable, and
   * what it reports is what every member is told (if nothing failed the instance first). */
  if (r->u.ready.error != 0) inst_fail(in, r->u.ready.error);
  if (r->u.ready.meet_mask != 0) meet_take(s, in, k, r->u.ready.meet_mask);
  if (created && p->root >= g->n) inst_fail(in, DRED_ERR_MISMATCH);
  if (in->status == DRED_OK && !proto_params_agree(&in->params, p)) inst_fail(in, DRED_ERR_MISMATCH);
  /* nowed counts the members alive at creation: O(1) on the common path */
  if (created && in->status == DRED_OK && in->nowed < g->n) inst_started_after_deaths(s, in);

  if (in->status == DRED_OK && p->inl && p->kind != PROTO_KIND_BCAST) inline_take(in, k, r);

  if (in->status != DRED_OK) {
    free(m);
    /* late arrival: told at once (a relay follower once its HAVE came) */
    if (in->drained && !in->m[k].follow) inst_tell(s, in, k, in->status);
  } else if (p->kind == PROTO_KIND_BCAST) {
    free(m); /* no buffer to pair: the root's data comes in its READY or as DATA */
    in->m[k].state = M_LIVE;
    dist_bcast_ready(s, in, k, r);
  } else if (p->inl) {
    free(m); /* the operand is in inl_data: no message, no task */
    in->m[k].state = M_LIVE;
    in->ninl++;
  } else {
    in->m[k].state = M_LIVE;
    m->snap = r->u.ready.snap && k != p->root;
    msg_enqueue(in, m, 0);
    nodes_count(in, k, -1);
  }
  inst_settle(s, in);
  return 0;
}

static void worker_measure(sched_t *s, uint32_t w, uint64_t bytes, uint64_t exec_ns) {
  worker_t *ws = &s->w[w];
  double sample = (double)bytes / (double)(exec_ns ? exec_ns : 1);
  double old = ws->measured ? ws->speed : 0.0;
  ws->speed = ws->measured ? 0.5 * ws->speed + 0.5 * sample : sample;
  s->speed_sum += ws->speed - old;
  if (!ws->measured) s->nmeasured++;
  ws->measured = 1;
  ws->last_exec_ns = exec_ns;
}

static int on_task_done(sched_t *s, const sched_event_t *ev) {
  const proto_msg_t *d = &ev->msg;
  task_t *t = task_find(s, d->u.done.task_id);
  inst_t *in;
  msg_t *exec, *prov;
  sched_action_t *a;
  uint32_t st = d->u.done.status; /* proto_task_status_t, unchecked off the wire */

  if (t == NULL || t->exec->worker != ev->worker) return DRED_ERR_ARG;
  if (d->u.done.absorbed && (!t->absorb || st != PROTO_TASK_OK)) return DRED_ERR_ARG;
  if (st != PROTO_TASK_OK && st != PROTO_TASK_PROVIDER_LOST && st != PROTO_TASK_ERROR)
    return DRED_ERR_ARG;

  in = t->inst;
  exec = t->exec;
  prov = t->prov;
  t->exec = t->prov = NULL; /* the messages now belong to this function */
  s->w[exec->worker].queued_bytes -=
      t->bytes < s->w[exec->worker].queued_bytes ? t->bytes : s->w[exec->worker].queued_bytes;
  if (st == PROTO_TASK_OK) worker_measure(s, exec->worker, t->bytes, d->u.done.exec_ns);
  nodes_count(in, exec->member, -1);

  a = act_push(s, SCHED_ACT_JOURNAL_TASK, in->key);
  a->u.jtask.task_id = t->id;
  a->u.jtask.executor = exec->worker;
  a->u.jtask.provider = prov->worker;
  a->u.jtask.bytes = t->bytes;
  a->u.jtask.start_ns = t->start_ns;
  a->u.jtask.end_ns = s->now;
  a->u.jtask.exec_ns = d->u.done.exec_ns;
  a->u.jtask.status = (int32_t)st;
  task_free(s, t);

  if (in->status != DRED_OK) { /* a failed instance only waits for its tasks to drain */
    free(exec);
    free(prov);
    inst_settle(s, in);
    return 0;
  }
  switch (st) {
    case PROTO_TASK_OK: /* exec's buffer now covers both sets: a fresh arrival */
      msg_union(in, exec, prov);
      exec->buf = d->u.done.buf;
      if (d->u.done.absorbed) { /* still its snapshot, which now holds the provider's unit */
        in->m[prov->member].absorber = exec->member;
        in->m[exec->member].last = prov->member;
      } else {
        exec->snap = 0; /* a buffer of its own: the snapshot, if any, stays as it was */
      }
      msg_enqueue(in, exec, 0);
      exec = NULL;
      break;
    case PROTO_TASK_PROVIDER_LOST: /* exec kept its data: it was ready earliest */
      exec->buf = d->u.done.buf;
      msg_enqueue(in, exec, 1);
      lose_set(s, in, prov);
      exec = NULL;
      break;
    case PROTO_TASK_ERROR:
      inst_fail(in, known_error(d->u.done.error, DRED_ERR_INTERNAL));
      break;
  }
  free(exec);
  free(prov);
  inst_settle(s, in);
  return 0;
}

/* A member gives up on an instance it announced.  Nothing of it can complete without that
 * member, so the instance fails for everyone; its tasks in flight drain first (they read
 * buffers the abandoning member keeps until its END), as for any failure.  An instance
 * that is already gone ended meanwhile: its END is on the way, nothing to do. */
static int on_abandon(sched_t *s, const sched_event_t *ev) {
  inst_t *in = inst_find(s, key_of(&ev->msg));
  uint32_t k = ev->msg.u.recover.member;
  int32_t error = ev->msg.u.recover.error;
  if (in == NULL) return 0;
  if (k >= in->g->n || in->g->workers[k] != ev->worker || !in->m[k].arrived)
    return DRED_ERR_ARG;
  in->m[k].follow = 0; /* it copies nothing more: told with everyone */
  inst_fail(in, error ? error : DRED_ERR_SHUTDOWN);
  inst_settle(s, in);
  return 0;
}

/* ---- public API -------------------------------------------------------------------------- */

sched_t *sched_new(uint32_t nworkers, sched_policy_t policy) {
  sched_t *s = calloc(1, sizeof *s);
  uint32_t w;
  if (s == NULL) return NULL;
  s->node_gen = 1; /* a group's 0 means "never numbered" */
  s->nworkers = nworkers;
  s->policy = policy;
  dred_queue_init(&s->inst_list);
  dred_queue_init(&s->dist_wait);
  s->w = calloc((size_t)nworkers + 1, sizeof *s->w);
  s->node_of = calloc((size_t)nworkers + 1, sizeof *s->node_of);
  if (s->w == NULL || s->node_of == NULL || dred_keymap_init(&s->groups) != DRED_OK ||
      dred_keymap_init(&s->insts) != DRED_OK || dred_keymap_init(&s->tasks) != DRED_OK ||
      dred_keymap_init(&s->ended) != DRED_OK ||
      (s->ended_ring = calloc(SCHED_ENDED_KEEP, sizeof *s->ended_ring)) == NULL) {
    sched_free(s);
    return NULL;
  }
  for (w = 1; w <= nworkers; w++) s->w[w].alive = 1;
  return s;
}

void sched_free(sched_t *s) {
  dred_keymap_node_t *n, *nx;
  size_t i;
  if (s == NULL) return;
  for (i = s->act_head; i < s->act_len; i++) /* untaken actions own their operands */
    free(s->act[i].owned);
  while (!dred_queue_empty(&s->inst_list))
    inst_free(s, DRED_QUEUE_DATA(dred_queue_head(&s->inst_list), inst_t, link));
  DRED_KEYMAP_FOREACH_SAFE(n, nx, &s->groups) {
    group_t *g = DRED_KEYMAP_DATA(n, group_t, node);
    free(g->node_ix);
    free(g);
  }
  dred_keymap_free(&s->groups);
  dred_keymap_free(&s->insts);
  dred_keymap_free(&s->tasks);
  dred_keymap_free(&s->ended);
  free(s->ended_ring);
  free(s->w);
  free(s->node_of);
  free(s->act);
  free(s);
}

int sched_group_define(sched_t *s, uint64_t id, uint32_t n, const uint32_t *workers) {
  group_t *g;
  uint8_t *seen;
  uint32_t k;
  if (s == NULL || workers == NULL || n == 0) return DRED_ERR_ARG;
  g = group_find(s, id);
  if (g != NULL)
    return g->n == n && memcmp(g->workers, workers, n * sizeof *workers) == 0 ? 0 : DRED_ERR_ARG;
  /* A process is one rank of a communicator: a worker listed twice is a malformed group. */
  seen = calloc((size_t)s->nworkers + 1, 1);
  if (seen == NULL) return DRED_ERR_NOMEM;
  for (k = 0; k < n; k++) {
    if (workers[k] < 1 || workers[k] > s->nworkers || seen[workers[k]]) {
      free(seen);
      return DRED_ERR_ARG;
    }
    seen[workers[k]] = 1;
  }
  free(seen);
  g = malloc(sizeof *g + (size_t)n * sizeof *workers);
  if (g == NULL) return DRED_ERR_NOMEM;
  g->id = id;
  g->n = n;
  g->nnodes = 1;
  g->node_ix = NULL;
  g->node_gen = 0;
  memcpy(g->workers, workers, n * sizeof *workers);
  (void)dred_keymap_insert(&s->groups, &g->node, id, 0); /* has slots: never fails */
  return 0;
}

int sched_set_node(sched_t *s, uint32_t worker, uint32_t node) {
  if (s == NULL || worker < 1 || worker > s->nworkers) return DRED_ERR_ARG;
  if (s->node_of[worker] != node) nodes_changed(s);
  s->node_of[worker] = node;
  return 0;
}

int sched_group_one_node(const sched_t *s, uint64_t id, int *one_node) {
  const group_t *g = s != NULL ? group_find(s, id) : NULL;
  if (g == NULL || one_node == NULL) return DRED_ERR_ARG;
  *one_node = dred_place_one_node(g->n, g->workers, s->node_of);
  return 0;
}

int sched_feed(sched_t *s, const sched_event_t *ev) {
  if (s == NULL || ev == NULL) return DRED_ERR_ARG;
  s->now = ev->now_ns;
  if (ev->type == SCHED_EV_WORKER_FAILED) return on_worker_failed(s, ev->worker);
  if (ev->type != SCHED_EV_MESSAGE) return DRED_ERR_ARG;
  switch (ev->msg.type) {
    case PROTO_READY:
      return on_ready(s, ev);
    case PROTO_DONE:
      return on_task_done(s, ev);
    case PROTO_RECOVER_FAILED:
      return on_recover_failed(s, ev);
    case PROTO_ABANDON:
      return on_abandon(s, ev);
    case PROTO_DATA:
      return on_data(s, ev);
    case PROTO_HAVE:
      return on_have(s, ev);
    default: /* not a message the scheduler takes: the adapter should not have passed it */
      return DRED_ERR_ARG;
  }
}

int sched_next_action(sched_t *s, sched_action_t *out) {
  if (s == NULL || s->act_head == s->act_len) return 0;
  *out = s->act[s->act_head++];
  if (s->act_head == s->act_len) s->act_head = s->act_len = 0;
  return 1;
}

size_t sched_instances(const sched_t *s) { return dred_keymap_count(&s->insts); }
uint64_t sched_stale_readys(const sched_t *s) { return s->stale_readys; }

size_t sched_queue_len(const sched_t *s, sched_key_t key) {
  const inst_t *in = inst_find(s, key);
  return in != NULL ? dred_queue_len(&in->queue) : 0;
}

size_t sched_tasks_in_flight(const sched_t *s) { return dred_keymap_count(&s->tasks); }

size_t sched_queue_stats(const sched_t *s, size_t *longest) {
  const dred_queue_t *q;
  size_t total = 0, max = 0;
  DRED_QUEUE_FOREACH(q, &s->inst_list) {
    size_t n = dred_queue_len(&DRED_QUEUE_DATA(q, inst_t, link)->queue);
    total += n;
    if (n > max) max = n;
  }
  if (longest != NULL) *longest = max;
  return total;
}

int sched_worker_alive(const sched_t *s, uint32_t worker) { return worker_alive(s, worker); }

uint32_t sched_workers_failed(const sched_t *s) { return s->nfailed; }

double sched_worker_speed(const sched_t *s, uint32_t worker) {
  if (worker < 1 || worker > s->nworkers || !s->w[worker].measured) return 0.0;
  return s->w[worker].speed;
}
