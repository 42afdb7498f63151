/*
 * admit.c -- pool admission: a reduction waits for room in this worker's shared-memory
 * pool instead of falling onto the slow path.
 *
 * Why: a non-root member's operand and its partial results live in its pool, where node
 * peers combine straight from them.  A buffer that does not fit goes to private memory,
 * which peers can only read with MPI_Rget through the dynamic window: several times
 * slower, and slower still while the application waits inside MPI (MPICH 4.0.2 runs every
 * MPI call of a process behind one lock).  With many large reductions in flight (28 x 8
 * MiB on the default 256 MiB pool) most buffers would go that way, and the batch take
 * several times as long as with a pool large enough (docs/performance.md, figures behind defaults).
 *
 * How: at its call a reduction is admitted if the pool can still hold its operand and
 * what its combines will allocate there (future_of: a first partial result when the
 * operand must stay untouched -- a dred_alloc_mem block, a replica snapshot a cross-node
 * task reads; a scratch piece where snapshots absorb in place) -- counting what the pool holds now
 * (pool.used: operands, partial results, snapshots whose copies outlive their reduction,
 * the application's blocks) and the first results admitted reductions have yet to
 * allocate.  A reduction that does not fit, or that would overtake one
 * already waiting, is copied into private memory (the call still returns at once, and
 * sendbuf is the application's again) and waits, unannounced, in a FIFO (rt->poolq); the
 * runtime thread moves it into the pool and announces it once room is back.
 *   Members that issue their reductions in the same order cannot deadlock this way: the
 * oldest unfinished reduction is admitted everywhere (whatever a worker admitted before it
 * has finished, so its room is free).  Members with different orders can (A's pool held
 * by reductions waiting for B's operands, B's by reductions waiting for A's), so when the
 * queue has not moved and nothing was freed for DRED_ADMIT_STALL_MS (the rules are
 * common/admission.c's), every reduction waiting then goes ahead on whatever memory there
 * is -- private memory and the RMA path, as without admission.  A
 * reduction that would not fit an empty pool is admitted when no other is.
 *
 * The price: while it waits, the operand exists only in this process's private memory,
 * so its process's death ends the reduction DRED_ERR_PROC_FAILED (as a death during the
 * copy inside dred_ireduce does), and such a call does not wait for an off-node copy
 * (dred_handover_offnode).
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/bigbuf.h"
#include "../mpi/dataplane.h"
#include "admit.h"
#include "inst.h"
#include "robust.h"
#include "runtime.h"
#include "snapdir.h"

/* Each admission copies an operand; a loop turn stops admitting after this long, so PINGs
 * and the rest of the turn's work are not held up behind a backlog of copies. */
#define ADMIT_TURN_NS (1000000ull)

static size_t rounded(size_t n) {
  return (n + DRED_POOL_ALIGN - 1) & ~(size_t)(DRED_POOL_ALIGN - 1);
}

/* What `in`'s combines will allocate in our pool beyond its operand: a first partial
 * result as large as the operand when its acc is the application's block (read-only);
 * none when acc is a private-to-dred operand combined in place; when acc is the replica
 * snapshot, what the robust layer says (scratch pieces where it absorbs in place). */
static size_t future_of(const dred_rt_t *rt, const dred_inst_t *in) {
  if (in->acc_is_app) return rounded(in->bytes);
  if (rt->cfg.replicas == 0) return 0;
  return rounded(rt->robust->pool_extra(rt, in));
}

void dred_admit_init(dred_rt_t *rt) {
  dred_admission_init(&rt->admission, rt->pool.size, (uint64_t)DRED_ADMIT_STALL_MS * 1000000ull);
}

static void mark_admitted(dred_inst_t *in, size_t later) {
  in->pool_future = later;
  in->pool_admitted = 1;
}

int dred_admit_call(dred_rt_t *rt, dred_inst_t *in, int wait_ok) {
  size_t now, later;
  int ok;
  if (rt == NULL || in == NULL) return 1;
  if (in->is_root || in->inl || in->bytes == 0 || !dred_snapdir_usable(rt)) return 1;
  now = in->acc_is_app ? 0 : rounded(in->bytes); /* the block is the operand already */
  later = future_of(rt, in);
  uv_mutex_lock(&rt->pool_mu);
  if (!wait_ok) { /* in place already: counted, whatever the room */
    dred_admission_take(&rt->admission, later);
    ok = 1;
  } else {
    ok = dred_admission_call(&rt->admission, rt->pool.used, now, later) == DRED_ADMIT_ROOM;
  }
  if (ok) {
    mark_admitted(in, later);
  } else {
    rt->pool_waited++;
    in->pool_queued = 1;
    in->pool_wait = 1;
    in->pool_queued_ns = uv_hrtime();
  }
  uv_mutex_unlock(&rt->pool_mu);
  return ok;
}

void dred_admit_spent(dred_rt_t *rt, dred_inst_t *in) {
  if (in->pool_future == 0) return;
  uv_mutex_lock(&rt->pool_mu);
  dred_admission_spent(&rt->admission, in->pool_future);
  uv_mutex_unlock(&rt->pool_mu);
  in->pool_future = 0;
}

void dred_admit_release(dred_rt_t *rt, dred_inst_t *in) {
  if (in->pool_wait) { /* never admitted: its private copy goes, and its place in line */
    uv_mutex_lock(&rt->pool_mu);
    dred_admission_unwait(&rt->admission);
    uv_mutex_unlock(&rt->pool_mu);
    in->pool_wait = 0;
    dred_bigbuf_free(in->acc, in->bytes);
    in->acc = NULL;
    in->acc_early = 0;
    return;
  }
  if (!in->pool_admitted) return;
  uv_mutex_lock(&rt->pool_mu);
  dred_admission_release(&rt->admission, in->pool_future, uv_hrtime());
  uv_mutex_unlock(&rt->pool_mu);
  in->pool_future = 0;
  in->pool_admitted = 0;
}

int dred_admit_defer(dred_rt_t *rt, dred_inst_t *in) {
  if (!in->pool_wait) return 0;
  dred_queue_insert_tail(&rt->poolq, &in->qlink);
  return 1;
}

/* Admitted: the private copy moves into the pool (or, the pool being full after a stall,
 * stays where it is, reachable by RMA), node peers may list it, and it can be announced. */
static void move_in(dred_rt_t *rt, dred_inst_t *in) {
  char *p = in->acc;
  int64_t off = -1;
  int mal = 0;
  in->pool_wait = 0;
  if (dred_dp_buf_adopt(rt, in->bytes, &p, &off, &mal) != DRED_OK) {
    dred_bigbuf_free(in->acc, in->bytes); /* announce reports the failure to every member (acc_prepare) */
    in->acc = NULL;
    in->acc_early = 0;
    in->join_error = DRED_ERR_INTERNAL;
    return;
  }
  in->acc = p;
  in->pool_off = off;
  in->acc_malloced = mal;
  if (rt->cfg.replicas > 0) { /* listed like an operand copied in at the call */
    uv_mutex_lock(&rt->lock);
    rt->robust->on_operand_pooled(rt, in);
    uv_mutex_unlock(&rt->lock);
  }
}

int dred_admit_progress(dred_rt_t *rt, void (*announce)(dred_rt_t *, dred_inst_t *), int force,
                        uint64_t *next_due_ns) {
  dred_queue_t *q;
  int n = 0;
  uint64_t now = 0;
  *next_due_ns = 0;
  while ((q = dred_queue_head(&rt->poolq)) != NULL) {
    dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, qlink);
    size_t later = future_of(rt, in);
    uint64_t due = 0;
    dred_admit_verdict_t v;
    if (now == 0) now = uv_hrtime();
    uv_mutex_lock(&rt->pool_mu);
    v = dred_admission_next(&rt->admission, rt->pool.used, rounded(in->bytes), later,
                            in->pool_queued_ns, now, force, &due);
    if (v == DRED_ADMIT_STALL) rt->pool_stalls++;
    uv_mutex_unlock(&rt->pool_mu);
    if (v == DRED_ADMIT_WAIT) {
      *next_due_ns = due;
      break;
    }
    mark_admitted(in, later);
    dred_queue_remove(q);
    move_in(rt, in);
    announce(rt, in);
    n++;
    if (uv_hrtime() - now > ADMIT_TURN_NS) break; /* the loop turns again at once (n > 0) */
  }
  return n;
}
