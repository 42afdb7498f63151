/*
 * meetpath.c -- small reductions of one-node groups, met in shared memory (common/meet.h)
 * instead of through dred-master.
 *
 * Which reductions.  An auto-tagged (DRED_TAG_AUTO) reduction of a group whose members
 * all live on this node, when the job agreed to use the meeting place (DRED_MEET=1 in
 * every process, shared memory on).  Its members arrive in the slot of the group's ring
 * that its auto-tag sequence number names; one whose own parameters make it inline and
 * small enough (n x bytes <= DRED_MEET_DATA) waits there, any other goes to dred-master
 * as before (meet.h says how a mismatch between the two, and a full ring, stay safe).
 * Explicit tags always go to dred-master: only the auto-tag sequence numbers a
 * reduction the same way in every member without a message.
 *
 * Who finishes it.  Nothing is sent, so no END comes: the thread that looks at the
 * reduction once its slot decided finishes it -- the application thread in
 * dred_future_get / _wait / _is_done / _free, or the runtime thread when this process
 * finalizes, loses dred-master, or learns a member failed.  meet_claimed (under rt->lock)
 * makes that exactly one of them.  At the root, finishing is the fold of every operand
 * in rank order (dred_dp_inline_fold, as for the master's INLINE), so the result is the
 * one the master path gives, bit for bit.
 *
 * What the master sees.  Nothing per reduction.  Each worker counts what met here
 * (meet_done, in its PONGs: the status socket and dredstat show it per worker).
 */
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/meet.h"
#include "runtime.h"

#define WAIT_SLICE_NS 100000000ull /* a waiter rechecks its future at least this often */

void dred_meetpath_init(dred_rt_t *rt) {
  int mine, all = 0, ok = 0, allok = 0, nrank = 0, du = 0;
  MPI_Aint sz = 0;
  void *base = NULL;
  size_t bytes = dred_meet_table_bytes();

  dred_queue_init(&rt->meetq);
  rt->meet = NULL;
  rt->meet_win = MPI_WIN_NULL;
  /* Every process must take the same path for the same reduction, so the choice is the
   * job's, not each process's: one that says no (DRED_MEET=0, DRED_SHM=0) turns it off. */
  mine = rt->cfg.meet && rt->cfg.shm;
  /* PMPI: never through a profiling layer's MPI_Allreduce (interpose/) */
  PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, rt->comm);
  if (!all) {
    if (mine) DRED_INFO("meeting place off: another process has DRED_MEET=0 or DRED_SHM=0");
    return;
  }
  MPI_Comm_rank(rt->node, &nrank);
  if (MPI_Win_allocate_shared(nrank == 0 ? (MPI_Aint)bytes : 0, 1, MPI_INFO_NULL, rt->node, &base,
                              &rt->meet_win) == MPI_SUCCESS) {
    ok = MPI_Win_shared_query(rt->meet_win, 0, &sz, &du, &base) == MPI_SUCCESS &&
         (size_t)sz >= bytes && base != NULL;
    if (ok && nrank == 0) {
      memset(base, 0, bytes);
      ok = dred_meet_table_init(base) == 0;
    }
  } else {
    rt->meet_win = MPI_WIN_NULL;
  }
  /* also orders the node leader's initialisation before anyone's first use */
  PMPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, rt->comm);
  if (!allok) {
    DRED_WARN("meeting place unavailable (%s): small one-node reductions go through dred-master",
              ok ? "another node could not set it up" : "no shared window of its size here");
    if (rt->meet_win != MPI_WIN_NULL) MPI_Win_free(&rt->meet_win); /* collective over the node */
    rt->meet_win = MPI_WIN_NULL;
    return;
  }
  rt->meet = base;
}

void dred_meetpath_finalize(dred_rt_t *rt, int collective) {
  if (collective && rt->meet_win != MPI_WIN_NULL) MPI_Win_free(&rt->meet_win);
  rt->meet = NULL;
}

/* A member of `g` that the master declared failed before we arrived: its slot would wait
 * for it for ever, and the runtime's sweep (dred_meetpath_on_failed) ran already. */
static void arrive_after_deaths(dred_rt_t *rt, dred_group_t *g) {
  uint32_t k;
  if (rt->nfailed == 0) return;
  for (k = 0; k < g->n; k++)
    if (g->workers[k] < (uint32_t)rt->world_size && rt->failed[g->workers[k]])
      dred_meet_member_failed(g->meet_ring, k, DRED_ERR_PROC_FAILED);
}

int dred_meetpath_arrive(dred_rt_t *rt, dred_inst_t *in, uint64_t seq) {
  dred_group_t *g = in->group;
  proto_msg_t ready;
  proto_params_t p;
  dred_meet_arrival_t a;
  dred_future *f = in->fut;
  int wants;

  in->meet_mask = 0;
  if (rt->meet == NULL || g->spans_nodes) return 0;
  if (!g->meet_looked) {
    g->meet_looked = 1;
    g->meet_ring = dred_meet_ring_of(rt->meet, g->id, g->n, g->workers);
    if (g->meet_ring == NULL && g->n <= DRED_MEET_MAX_MEMBERS)
      DRED_INFO("group %016llx (%u members): the node's meeting place is full (%d groups); its "
                "small reductions go through dred-master", (unsigned long long)g->id, g->n,
                DRED_MEET_GROUPS);
  }
  if (g->meet_ring == NULL) return 0;
  /* The parameters this member's READY would carry, from the one READY builder: the slot
   * compares exactly what dred-master would. */
  dred_rt_ready(in, in->member, &ready);
  p = proto_params_of(&ready);
  /* A function of what members must agree on (and of n), so members that agree choose
   * alike; the root's operand stays in its acc. */
  wants = in->inl && (uint64_t)g->n * in->bytes <= DRED_MEET_DATA;
  if (dred_meet_arrive(g->meet_ring, seq, in->member, &p, wants,
                       wants && !in->is_root ? in->inl_data : NULL,
                       wants && !in->is_root ? in->bytes : 0, in->join_error, &a) != 0) {
    DRED_ERROR("reduction (tag " PROTO_KEY_FMT ") could not arrive in its meeting slot: "
               "going through dred-master", PROTO_KEY_ARG(in->tag));
    return 0;
  }
  if (!a.meet) {
    in->meet_mask = a.mask;
    rt->meet_spilled += wants;
    return 0;
  }
  in->meet_slot = a.slot;
  in->meet_seq = seq;
  in->state = INST_MEET;
  dred_queue_insert_tail(&rt->meetq, &in->qlink);
  f->meet_rt = rt;
  f->meet_slot = a.slot;
  f->meet_seq = seq;
  f->meet_gid = in->group_id;
  f->meet_tag = in->tag;
  arrive_after_deaths(rt, g);
  return 1;
}

int dred_meetpath_settle(dred_rt_t *rt, uint64_t gid, int64_t tag, int status) {
  dred_inst_t *in;
  int st = DRED_OK, decided, wake;

  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, gid, tag);
  if (in == NULL || in->state != INST_MEET || in->meet_claimed) {
    uv_mutex_unlock(&rt->lock); /* finished, or being finished by another thread */
    return 1;
  }
  decided = dred_meet_poll(in->meet_slot, in->meet_seq, &st);
  if (!decided && status == DRED_OK) {
    uv_mutex_unlock(&rt->lock);
    return 0;
  }
  in->meet_claimed = 1;
  dred_queue_remove(&in->qlink);
  rt->meet_done++;
  uv_mutex_unlock(&rt->lock);

  if (!decided) {
    /* ends it for every member, unless it decided meanwhile: then that outcome stands */
    dred_meet_end(in->meet_slot, in->meet_seq, status);
    (void)dred_meet_poll(in->meet_slot, in->meet_seq, &st);
  }
  if (st == DRED_OK && in->is_root)
    st = dred_dp_inline_fold(rt, in, dred_meet_data(in->meet_slot), in->group->n);
  dred_meet_release(in->meet_slot, in->meet_seq, in->member);
  dred_rt_inst_finish(rt, in, st);
  /* Read after the reduction left the table: a dred_finalize that began earlier waits for
   * it (wake its thread to say BYE), one that begins later finds it gone. */
  uv_mutex_lock(&rt->lock);
  wake = rt->bye_requested;
  uv_mutex_unlock(&rt->lock);
  if (wake) uv_async_send(&rt->wake);
  return 1;
}

void dred_meetpath_wait(dred_future *f, uint64_t timeout_ns) {
  uint64_t start = uv_hrtime(), now, left;
  for (;;) {
    int done;
    uv_mutex_lock(&f->mu);
    done = f->done;
    uv_mutex_unlock(&f->mu);
    if (done) return;
    now = uv_hrtime();
    left = timeout_ns == UINT64_MAX ? UINT64_MAX : now - start >= timeout_ns ? 0 : timeout_ns - (now - start);
    if (dred_meet_poll(f->meet_slot, f->meet_seq, NULL) &&
        dred_meetpath_settle(f->meet_rt, f->meet_gid, f->meet_tag, DRED_OK)) {
      /* Finished -- by us, or by a thread that claimed it first: its completion is due
       * in moments (a fold of at most DRED_MEET_DATA bytes). */
      uv_mutex_lock(&f->mu);
      while (!f->done && left > 0) {
        uint64_t slice = left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS;
        (void)uv_cond_timedwait(&f->cv, &f->mu, slice);
        if (left != UINT64_MAX) left -= slice;
      }
      uv_mutex_unlock(&f->mu);
      return;
    }
    if (left == 0) return;
    /* Woken by the slot's outcome; the slice bounds how late we notice anything else (the
     * runtime thread finishing it after a failure, a lost master). */
    dred_meet_wait(f->meet_slot, f->meet_seq, left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS);
  }
}

void dred_meetpath_on_failed(dred_rt_t *rt, uint32_t w) {
  dred_queue_t *q;
  uint32_t k;
  if (rt->meet == NULL) return;
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH(q, &rt->groups) {
    dred_group_t *g = DRED_QUEUE_DATA(q, dred_group_t, link);
    if (g->meet_ring == NULL) continue;
    for (k = 0; k < g->n; k++)
      if (g->workers[k] == w) dred_meet_member_failed(g->meet_ring, k, DRED_ERR_PROC_FAILED);
  }
  uv_mutex_unlock(&rt->lock);
}

/* Settle up to a batch of pending met reductions (with `status` for undecided ones, or
 * only decided ones when it is DRED_OK); returns how many are still pending. */
static int settle_batch(dred_rt_t *rt, int status) {
  enum { BATCH = 64 };
  uint64_t gid[BATCH];
  int64_t tag[BATCH];
  int n = 0, i, left = 0;
  dred_queue_t *q;
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH(q, &rt->meetq) {
    dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, qlink);
    if (n == BATCH) break;
    gid[n] = in->group_id;
    tag[n++] = in->tag;
  }
  uv_mutex_unlock(&rt->lock);
  for (i = 0; i < n; i++) (void)dred_meetpath_settle(rt, gid[i], tag[i], status);
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH(q, &rt->meetq) left++;
  uv_mutex_unlock(&rt->lock);
  return left;
}

void dred_meetpath_fail_all(dred_rt_t *rt, int status) {
  int before = -1, left;
  /* every pass settles (claims) what it saw, so the queue shrinks until empty */
  while ((left = settle_batch(rt, status)) > 0 && left != before) before = left;
}

int dred_meetpath_sweep(dred_rt_t *rt, int deadline_passed) {
  int left, total = 0;
  if (deadline_passed) {
    uv_mutex_lock(&rt->lock);
    {
      dred_queue_t *q;
      DRED_QUEUE_FOREACH(q, &rt->meetq) total++;
    }
    uv_mutex_unlock(&rt->lock);
    if (total > 0)
      DRED_ERROR("dred_finalize: %d reduction(s) met in shared memory still wait for members "
                 "after DRED_FINALIZE_WAIT_S=%llu s: ending them with DRED_ERR_SHUTDOWN", total,
                 (unsigned long long)rt->cfg.finalize_wait_s);
    dred_meetpath_fail_all(rt, DRED_ERR_SHUTDOWN);
  }
  left = settle_batch(rt, DRED_OK);
  return left;
}

int dred_meetpath_reclaim(dred_rt_t *rt) {
  enum { BATCH = 64 };
  uint64_t gid[BATCH];
  int64_t tag[BATCH];
  int n, i, total = 0;
  do {
    dred_queue_t *q;
    n = 0;
    uv_mutex_lock(&rt->lock);
    DRED_QUEUE_FOREACH(q, &rt->meetq) {
      dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, qlink);
      if (n == BATCH) break;
      if (!in->meet_claimed && dred_meet_poll(in->meet_slot, in->meet_seq, NULL)) {
        gid[n] = in->group_id;
        tag[n++] = in->tag;
      }
    }
    uv_mutex_unlock(&rt->lock);
    for (i = 0; i < n; i++) total += dred_meetpath_settle(rt, gid[i], tag[i], DRED_OK);
  } while (n == BATCH);
  return total;
}
