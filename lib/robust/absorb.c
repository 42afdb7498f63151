/*
 * absorb.c -- combining into a snapshot in place, and finishing that when its owner dies.
 *
 * What it is for.  A member's operand snapshot in its shared-memory pool is what survives
 * the member's death while its node lives (replicate.c); a first combine that wrote its
 * result to a fresh block would leave the snapshot intact, but writing a third buffer
 * costs about half again what updating one in place does (docs/performance.md,
 * replication's price).  Absorption combines in place instead, yet keeps everything
 * recoverable: when both buffers of a task are snapshots on one node (dred-master says so
 * in TASK's absorb), the executor's snapshot absorbs the provider's, and from then on it
 * stands for the executor's *unit* -- its own operand and every unit it absorbed -- which
 * is what dred-master recovers when it is lost (master/sched/sched_recover.c).
 *
 * How it works.
 *   - The executor (dred_absorb_begin/step/end, through rt->robust) first makes sure no
 *     copy is being read from its snapshot (copies still deferred are cancelled: the
 *     snapshot covers the node, and they would now copy a partial result), records in
 *     its directory slot (snapdir.c) whose unit it absorbs, where the provider's snapshot
 *     and a scratch piece of its own pool lie, then goes piece by piece (ABSORB_PIECE
 *     bytes): combine the two pieces into scratch, say "piece i is in scratch", copy it
 *     over the snapshot's piece, say "piece i is done".  Pieces are small enough to stay
 *     in L1, so the memory traffic and the time are an in-place combine's.
 *   - A node peer asked to RECOVER the dead executor's unit (dred_absorb_recover) reads
 *     the slot and rebuilds the unit in a buffer of its own: pieces done are copied from
 *     the snapshot, a piece whose result is in scratch from scratch, the rest combined
 *     again from the two snapshots, which nobody writes any more.  Each piece is checked
 *     against the counters after it is read, so even an owner still running (a false
 *     detection) cannot hand it a torn piece.  It answers whether the unit includes the
 *     absorption dred-master asked about (RECOVER's tentative), and refuses when the slot
 *     says something else than dred-master expects: a snapshot is never guessed at.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../engine/kernel.h"
#include "../mpi/dataplane.h"
#include "replicate_internal.h"

/* Bytes per piece.  Small enough that the piece's two operands and scratch stay in L1:
 * then the copy back costs next to nothing, and an 8 or 32 MiB absorption runs as fast as
 * a plain in-place combine (0.31 / 1.67 ms against 0.29 / 1.79 in place and 0.42 / 2.41
 * out of place here, median of 15); 64 KiB pieces (L2) were as slow as out of place. */
#define ABSORB_PIECE 4096u
#define ABSORB_CLOCK 16u /* pieces between looks at the clock */
#define ABSORB_TRIES 100000u       /* re-reads of one piece an owner still running may cause */

static uint64_t piece_elems(const dred_inst_t *in) {
  uint64_t e = ABSORB_PIECE / in->ti.extent;
  return e == 0 ? 1 : e;
}

/* Scratch for one piece: ABSORB_PIECE bytes, or one element when an element is larger. */
static size_t scratch_bytes(const dred_inst_t *in) {
  return (size_t)piece_elems(in) * in->ti.extent;
}

int dred_absorb_acc_ok(const dred_inst_t *in) {
  const snapshot_t *sn = in->repl != NULL ? in->repl->snap : NULL;
  return sn != NULL && sn->p == in->acc && sn->pool_off >= 0 && sn->dir_slot >= 0 &&
         sn->borrowed == NULL && !in->acc_is_app && !in->is_root;
}

/* Every task between two snapshots on one node absorbs (master/sched/sched.c's rule), so a
 * group on one node needs only scratch pieces, one per task running at a time; a group
 * spanning nodes has cross-node tasks, combined out of place into a result as large as
 * the operand.  Reserving that full result for every reduction on one node made a 256 MiB
 * pool admit about 16 of 28 x 8 MiB reductions at once, with the room never used. */
size_t dred_absorb_room(const dred_rt_t *rt, const dred_inst_t *in) {
  (void)rt;
  if (in->group != NULL && !in->group->spans_nodes) return scratch_bytes(in);
  return (size_t)in->bytes;
}

int dred_absorb_begin(dred_rt_t *rt, dred_task_t *t) {
  dred_inst_t *in = t->inst;
  snapshot_t *sn;
  uint64_t pe = piece_elems(in);
  size_t sb = scratch_bytes(in);
  int64_t prov_off = t->buf.pool_off;

  if (!t->absorb || t->src == NULL || t->own_p != &in->acc || !dred_absorb_acc_ok(in) ||
      prov_off < 0 || t->provider == (uint32_t)rt->world_rank)
    return 0;
  sn = in->repl->snap;
  /* a copy being read from the snapshot (a neighbour's, ours to the store, one on a link)
   * must see the operand: combine elsewhere, as without absorption */
  if (sn->nwaiting > 0 || sn->refs != 1 + (sn->deferred ? 1 : 0)) {
    DRED_DEBUG("task %llu: a copy is being read from our snapshot: combining out of place",
               (unsigned long long)t->task_id);
    return 0;
  }
  if (dred_dp_buf_alloc(rt, sb, &t->scr, &t->scr_off, &t->scr_malloced) != DRED_OK) return 0;
  if (t->scr_off < 0 || /* scratch outside the pool: a node peer could not read it */
      dred_snapdir_absorb_begin(rt, sn->dir_slot, t->prov_member, t->provider, prov_off,
                                t->scr_off, (uint64_t)sb,
                                !in->ti.commutative && t->exec_is_left) != 0) {
    dred_dp_buf_free(rt, sb, t->scr, t->scr_off, t->scr_malloced);
    t->scr = NULL;
    return 0;
  }
  if (sn->deferred) dred_repl_deferred_run(rt, sn, 1); /* they would copy a partial result */
  sn->absorbed = 1;
  t->abs_slot = sn->dir_slot;
  t->piece_elems = pe;
  t->absorbing = 1;
  DRED_DEBUG("task %llu absorbs member %u's snapshot into ours in place (tag " PROTO_KEY_FMT ")",
             (unsigned long long)t->task_id, t->prov_member, PROTO_KEY_ARG(t->tag));
  return 1;
}

/* DRED_TEST_ABSORB_KILL (common/config.h): die at piece i of this absorption?  With `dst`,
 * piece i's result is in scratch and half of it is copied over the snapshot's piece (dst),
 * the rest still the old operand: a node peer must take that piece from scratch.  Without,
 * i is the number of pieces and every one is done. */
static void test_kill(dred_rt_t *rt, dred_task_t *t, uint64_t i, char *dst, size_t nb) {
  const dred_config_t *c = &rt->cfg;
  if (!c->test_absorb_kill || proto_key_tag(t->inst->tag) != c->test_absorb_kill_tag) return;
  if (dst != NULL) {
    if (i != c->test_absorb_kill_piece) return;
    memcpy(dst, t->scr, nb / 2);
  } else if (c->test_absorb_kill_piece < i) {
    return;
  }
  DRED_WARN("DRED_TEST_ABSORB_KILL: SIGKILLing this process %s piece %llu of task %llu's "
            "absorption (tag " PROTO_KEY_FMT ")", dst != NULL ? "halfway through" : "after",
            (unsigned long long)(dst != NULL ? i : i - 1), (unsigned long long)t->task_id,
            PROTO_KEY_ARG(t->inst->tag));
  raise(SIGKILL);
}

int dred_absorb_step(dred_rt_t *rt, dred_task_t *t, uint64_t deadline) {
  dred_inst_t *in = t->inst;
  size_t ext = in->ti.extent;
  int left = !in->ti.commutative && t->exec_is_left, rc;
  unsigned k = 0;
  do {
    uint64_t e0 = t->next_elem, n = t->count - e0 < t->piece_elems ? t->count - e0 : t->piece_elems;
    uint64_t i = e0 / t->piece_elems;
    if (n == 0) break;
    rc = dred_dp_piece(in, t->kern, left, t->dst + e0 * ext, t->src + e0 * ext, t->scr, n);
    if (rc != 0) return rc;
    dred_snapdir_piece_ready(rt, t->abs_slot, i);
    test_kill(rt, t, i, t->dst + e0 * ext, (size_t)n * ext);
    memcpy(t->dst + e0 * ext, t->scr, (size_t)n * ext);
    dred_snapdir_piece_done(rt, t->abs_slot, i);
    t->next_elem += n;
    t->done_elems += n;
  } while (++k % ABSORB_CLOCK != 0 || uv_hrtime() < deadline);
  if (t->next_elem >= t->count) /* every piece done; DONE not sent yet */
    test_kill(rt, t, (t->count + t->piece_elems - 1) / t->piece_elems, NULL, 0);
  return 0;
}

void dred_absorb_end(dred_rt_t *rt, dred_task_t *t) {
  if (t->scr == NULL) return;
  /* every piece is done (or the task failed, and the reduction with it): nobody reads
   * scratch any more, since a reader takes only pieces at or past `done` from it */
  dred_dp_buf_free(rt, scratch_bytes(t->inst), t->scr, t->scr_off, t->scr_malloced);
  t->scr = NULL;
}

/* ---- the node peer's side ---------------------------------------------------------------- */

/* Rebuild the snapshot seen through `v`, its absorption finished, into dst.  1: a piece
 * kept changing under us (an owner still running), try the whole again. */
static int roll_forward(dred_rt_t *rt, dred_inst_t *in, const dred_snapview_t *v, char *dst) {
  size_t ext = in->ti.extent, len = in->bytes;
  const dred_kernel_t *kern = dred_dp_kernel(in);
  const char *prov, *scr;
  uint64_t pe, i, np;

  if (v->piece == 0 || v->piece % ext != 0 || v->prov_worker >= (uint32_t)rt->world_size ||
      rt->peer_base[v->prov_worker] == NULL ||
      dred_seg_check_range(&rt->segs[v->prov_worker], v->prov_off, len, NULL, 0) != 0 ||
      dred_seg_check_range(&rt->segs[v->worker], v->scr_off, v->piece, NULL, 0) != 0)
    return -1;
  prov = rt->peer_base[v->prov_worker] + v->prov_off;
  scr = rt->peer_base[v->worker] + v->scr_off;
  pe = v->piece / ext;
  np = (in->count + pe - 1) / pe;
  for (i = 0; i < np; i++) {
    uint64_t e0 = i * pe, n = in->count - e0 < pe ? in->count - e0 : pe, done, sc, d2, s2;
    size_t o = (size_t)e0 * ext, nb = (size_t)n * ext;
    unsigned tries;
    for (tries = 0;; tries++) {
      if (tries == ABSORB_TRIES) return 1;
      dred_snapdir_view_progress(v, &done, &sc);
      if (i < done) { /* final: the owner never writes it again in this absorption */
        memcpy(dst + o, v->base + o, nb);
        break;
      }
      if (sc == i + 1) { /* its result is in scratch, maybe half copied over the snapshot */
        memcpy(dst + o, scr, nb);
        dred_snapdir_view_progress(v, &d2, &s2);
        if (s2 == i + 1) break; /* scratch was not reused while we read it */
        continue;
      }
      /* not begun: the snapshot's piece is still the owner's own */
      if (dred_dp_piece(in, kern, v->exec_left, v->base + o, prov + o, dst + o, n) != 0) return -1;
      dred_snapdir_view_progress(v, &d2, &s2);
      if (s2 != i + 1 && d2 <= i) break;
    }
  }
  return 0;
}

int dred_absorb_recover(dred_rt_t *rt, dred_inst_t *in, uint32_t member, uint32_t last,
                        uint32_t tentative, int single, char *dst, int *absorbed,
                        proto_params_t *params) {
  uint32_t w = in->group->workers[member];
  dred_snapview_t v;
  int attempt, rc;
  *absorbed = 0;
  if (!rt->failed[w] || rt->peer_base[w] == NULL) return DRED_ERR_PROC_FAILED;
  for (attempt = 0; attempt < 3; attempt++) {
    if (dred_snapdir_view(rt, w, in->group_id, in->tag, member, in->bytes, &v) != DRED_OK)
      return DRED_ERR_PROC_FAILED;
    if (v.absorbing == PROTO_NO_MEMBER) {
      /* the operand alone; dred-master expecting an absorbed unit means another snapshot */
      if (last != PROTO_NO_MEMBER) return DRED_ERR_PROC_FAILED;
      memcpy(dst, v.base, in->bytes);
      if (dred_snapdir_view_same(&v)) {
        *params = v.params;
        return DRED_OK;
      }
      continue;
    }
    if (single || (v.absorbing != last && v.absorbing != tentative)) {
      DRED_WARN("member %u's snapshot (tag " PROTO_KEY_FMT ") absorbed member %d's unit, "
                "not what the master expects (last %d, tentative %d%s): not used",
                member, PROTO_KEY_ARG(in->tag), (int)v.absorbing, (int)last, (int)tentative,
                single ? ", its operand alone" : "");
      return DRED_ERR_PROC_FAILED;
    }
    rc = roll_forward(rt, in, &v, dst);
    if (rc < 0) return DRED_ERR_PROC_FAILED;
    if (rc == 0 && dred_snapdir_view_same(&v)) {
      *absorbed = v.absorbing == tentative;
      *params = v.params;
      return DRED_OK;
    }
  }
  return DRED_ERR_PROC_FAILED;
}
