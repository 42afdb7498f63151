/*
 * offnode.c -- the off-node hand-over: in a group spanning nodes, a member's dred_ireduce
 * returns once a copy of its operand is held on another node.
 *
 * When dred_ireduce returns, the operand is what dred promises to recover if a process
 * dies; until then a death may lose it (seed 002, eq. 5).  A copy in this node's shared
 * memory survives the death of our process, not the loss of our node.  So with
 * DRED_HANDOVER_NODE=1 (the default), in a group spanning nodes a replicating non-root
 * member's call also waits until the copy placed on another node (common/placement.h puts
 * the first there) is whole in its holder's memory: the holder answers REPLICA_ACK on
 * receipt (replica_recv.c), before its store write, which a RECOVER waits for anyway.
 *
 * How.  The caller registers a ticket (on its stack, in rt->handover_tickets) under
 * rt->lock before the runtime can see the reduction, so no answer is missed; the runtime
 * thread completes it when the holder has the copy, when there is no off-node copy to
 * wait for, when the holder fails or the link breaks, when the reduction ends (nothing is
 * left to lose), or when the runtime dies.  The wait is bounded by DRED_FAIL_TIMEOUT_MS:
 * past it the call returns anyway and says so (a holder that slow is about to be declared
 * failed).  Its cost: docs/faults.md, "Reading the results" (In the call), and
 * docs/performance.md, Log (Replication across nodes).
 */
#include "../../common/log.h"
#include "../../common/queue.h"

#include "../engine/runtime.h"
#include "offnode.h"

void dred_handover_ticket_add(dred_rt_t *rt, dred_handover_ticket_t *t, uint64_t group,
                              int64_t tag) {
  t->group = group;
  t->tag = tag;
  t->holder = -1;
  t->done = 0;
  dred_queue_insert_tail(&rt->handover_tickets, &t->link);
}

void dred_handover_wait(dred_rt_t *rt, dred_handover_ticket_t *t) {
  uint64_t start = uv_hrtime(), limit = rt->cfg.fail_timeout_ms * 1000000ull, now = start;
  int dead;
  uv_mutex_lock(&rt->lock);
  while (!t->done && !rt->dead && now - start < limit) {
    (void)uv_cond_timedwait(&rt->handover_cv, &rt->lock, limit - (now - start));
    now = uv_hrtime();
  }
  dred_queue_remove(&t->link);
  rt->offnode_calls++;
  rt->offnode_ns += now - start;
  if (now - start > rt->offnode_max_ns) rt->offnode_max_ns = now - start;
  dead = rt->dead;
  uv_mutex_unlock(&rt->lock);
  if (!t->done && !dead)
    DRED_WARN("dred_ireduce (tag " PROTO_KEY_FMT "): no off-node copy after %llu ms (worker %d "
              "holds it): returning anyway; losing this node now may lose the operand",
              PROTO_KEY_ARG(t->tag), (unsigned long long)rt->cfg.fail_timeout_ms, t->holder);
}

typedef enum { BY_KEY, BY_KEY_AND_HOLDER, BY_HOLDER } match_t;

/* Runtime thread: complete the matching tickets. */
static void complete(dred_rt_t *rt, match_t how, uint64_t group, int64_t tag, int holder) {
  dred_queue_t *q;
  int woke = 0;
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH(q, &rt->handover_tickets) {
    dred_handover_ticket_t *t = DRED_QUEUE_DATA(q, dred_handover_ticket_t, link);
    int key = t->group == group && t->tag == tag;
    if (t->done) continue;
    if ((how != BY_HOLDER && !key) || (how != BY_KEY && t->holder != holder)) continue;
    t->done = 1;
    woke = 1;
  }
  if (woke) uv_cond_broadcast(&rt->handover_cv);
  uv_mutex_unlock(&rt->lock);
}

void dred_handover_expect(dred_rt_t *rt, uint64_t group, int64_t tag, int holder) {
  dred_queue_t *q;
  if (holder < 0) { /* no off-node copy to wait for */
    complete(rt, BY_KEY, group, tag, -1);
    return;
  }
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH(q, &rt->handover_tickets) {
    dred_handover_ticket_t *t = DRED_QUEUE_DATA(q, dred_handover_ticket_t, link);
    if (t->group == group && t->tag == tag) t->holder = holder;
  }
  uv_mutex_unlock(&rt->lock);
}

void dred_handover_held(dred_rt_t *rt, uint64_t group, int64_t tag, int holder) {
  complete(rt, holder >= 0 ? BY_KEY_AND_HOLDER : BY_KEY, group, tag, holder);
}

void dred_handover_holder_failed(dred_rt_t *rt, int w) { complete(rt, BY_HOLDER, 0, 0, w); }

void dred_handover_release_all(dred_rt_t *rt) {
  uv_mutex_lock(&rt->lock);
  uv_cond_broadcast(&rt->handover_cv); /* the waiters look at rt->dead */
  uv_mutex_unlock(&rt->lock);
}
