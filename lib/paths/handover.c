/*
 * handover.c -- the hand-over: how long dred_ireduce keeps the caller, and the node's
 * beacon that lets a member's copy into the pool go first.
 *
 * When dred_ireduce returns, the operand is what dred promises to recover if a process
 * dies; until then a death may lose it (seed 002, eq. 5).  Two parts here:
 *
 * 1. Off-node hand-over (DRED_HANDOVER_NODE=1, the default).  A copy in this node's shared
 *    memory survives the death of our process, not the loss of our node.  So in a group
 *    spanning nodes a replicating non-root member's call also waits until the copy placed
 *    on another node (common/placement.h puts the first there) is whole in its holder's
 *    memory: the holder answers REPLICA_ACK on receipt (replica_recv.c), before its store
 *    write, which a RECOVER waits for anyway.  The caller registers a ticket under
 *    rt->lock before the runtime can see the reduction, so no answer is missed; the
 *    runtime thread completes it when the holder has the copy, when there is no off-node
 *    copy to wait for, when the holder fails or the link breaks, when the reduction ends
 *    (nothing is left to lose), or when the runtime dies.  The wait is bounded by
 *    DRED_FAIL_TIMEOUT_MS: past it the call returns anyway and says so (a holder that slow
 *    is about to be declared failed).  Its cost: docs/faults.md, "Reading the results" (In
 *    the call), and docs/performance.md, Log (Replication across nodes).
 *
 * 2. The beacon: replica writers step aside while a member is still copying its operand
 *    out of the application's buffer.
 *
 * Why.  Until dred_ireduce has copied a member's operand into its shared-memory pool, the
 * bytes exist only in that process: a kill then loses them for good, and no replica can
 * help (seed 002, eq. 5: reliability = 1 - that window / reduction time).  The copy is a
 * plain memcpy, but on a loaded node it shares cores and memory bandwidth with the SQLite
 * copies of operands handed over a moment earlier -- insurance that can wait a few ms.
 * Without the beacon those writers take most of the CPUs while calls copy, and the calls
 * take several times as long (docs/performance.md, figures behind defaults).
 *
 * How.  The last 8 bytes of the directory region at the head of each pool segment (after
 * the snapdir slots) hold the uv_hrtime() (CLOCK_MONOTONIC, ns) at which the segment's
 * owner began its current hand-over copies, or 0 when none is under way; the clock is the
 * node's, so peers can compare it with their own.  A replica put asks (storage/replica.c
 * pause hook, before it reads the operand and between its 1 MiB pieces) whether any node
 * peer's word is set; while one is, it sleeps in short steps, for at most
 * HANDOVER_MAX_WAIT_NS per ask.  A word older than HANDOVER_STALE_NS no longer counts:
 * its owner was killed in mid-copy, or is stopped, and must not hold everyone's copies.
 * The word is a hint: a stale or missed value costs only speed, never correctness.
 */
#include <time.h>

#include "../../common/log.h"

#include "../engine/runtime.h"
#include "../engine/snapdir.h"
#include "handover.h"

#define HANDOVER_WORD_OFF (DRED_SNAPDIR_BYTES - sizeof(uint64_t))
#define HANDOVER_STEP_NS 250000ull       /* sleep between looks: 0.25 ms */
#define HANDOVER_MAX_WAIT_NS 20000000ull /* per ask: 20 ms */
#define HANDOVER_STALE_NS 500000000ull   /* a hand-over copy older than 0.5 s is ignored */

_Static_assert(DRED_SNAPDIR_SLOTS * DRED_SNAPDIR_SLOT_BYTES <= HANDOVER_WORD_OFF,
               "beacon overlaps the snapdir");

static uint64_t *beacon(char *segment) { return (uint64_t *)(void *)(segment + HANDOVER_WORD_OFF); }

void dred_handover_begin(dred_rt_t *rt) {
  if (!dred_snapdir_usable(rt)) return;
  uv_mutex_lock(&rt->pool_mu);
  if (rt->handover_active++ == 0) __atomic_store_n(beacon(rt->pool_base), uv_hrtime(), __ATOMIC_RELEASE);
  uv_mutex_unlock(&rt->pool_mu);
}

void dred_handover_end(dred_rt_t *rt) {
  if (!dred_snapdir_usable(rt)) return;
  uv_mutex_lock(&rt->pool_mu);
  if (--rt->handover_active == 0) __atomic_store_n(beacon(rt->pool_base), 0, __ATOMIC_RELEASE);
  uv_mutex_unlock(&rt->pool_mu);
}

/* 1 if some node peer (this process included) is in a fresh hand-over copy. */
static int node_busy(dred_rt_t *rt, uint64_t now) {
  int w;
  for (w = 0; w < rt->world_size; w++) {
    uint64_t since;
    if (rt->peer_base[w] == NULL) continue;
    since = __atomic_load_n(beacon(rt->peer_base[w]), __ATOMIC_ACQUIRE);
    if (since != 0 && now >= since && now - since < HANDOVER_STALE_NS) return 1;
  }
  return 0;
}

void dred_handover_yield(void *arg) {
  dred_rt_t *rt = arg;
  uint64_t start = uv_hrtime(), now = start;
  struct timespec step = {0, (long)HANDOVER_STEP_NS};
#ifdef DRED_HANDOVER_OFF /* A/B measurement builds: `make BUILD=build-ab OPT="-O2 -g -DDRED_HANDOVER_OFF"` */
  return;
#endif
  if (!dred_snapdir_usable(rt)) return;
  while (node_busy(rt, now) && now - start < HANDOVER_MAX_WAIT_NS) {
    nanosleep(&step, NULL);
    now = uv_hrtime();
  }
  if (now != start) {
    __atomic_add_fetch(&rt->handover_waits, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&rt->handover_wait_ns, now - start, __ATOMIC_RELAXED);
  }
}

/* ---- 1. off-node hand-over: tickets ------------------------------------------------- */

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
