/*
 * meetwork.c -- the work members do on a collective met in a slot of the node's meeting
 * place (meetpath.c) once its slot decided: where each operand is, and the folds and
 * copies that make each member's result, in bounded steps on whichever thread looks.
 *
 *   - a reduce's root folds every operand in rank order from the slot or the peers' pool
 *     blocks (fold_by_ref); while it waits for the last members of a commutative reduce
 *     it may fold the early arrivals' already (dred_meetpath_prefold);
 *   - a large reduce among members that each have a core shares its fold in chunks
 *     (reduce_help: a waiting non-root folds a chunk's non-root operands into a block of
 *     its pool; reduce_root_shared: the root combines each partial with its own operand);
 *   - a large allreduce's members claim chunks, fold each into a block of their pool and
 *     copy every chunk from its holder (allreduce_by_ref): no fixed root, the work split
 *     among whoever waits, a late member's share done for it; a member in a blocking call
 *     folds its own operand from sendbuf and copies in only the chunks its peers fold
 *     (home_give);
 *   - a bcast's member copies the root's data from the slot or its block as it comes in
 *     (bcast_copy).
 * Nobody's operand is ever written, so a chunk is the same bits whoever folds it; a claim
 * whose claimer is slow, stalled or dead holds nobody up for long (late_after).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../shm/copy.h"
#include "../shm/meet.h"
#include "../engine/group.h"
#include "../engine/inst.h"
#include "../engine/runtime.h"
#include "../mpi/dataplane.h"
#include "fold.h"
#include "meetpath.h"
#include "meetpath_int.h"

/* An allreduce whose operands together are at most this is folded whole by every member
 * in the slot (allreduce_by_ref) rather than in chunks shared out among them; the fast
 * lane's bound is larger (lanepath.c, LANE_FOLD_MAX), since there nobody waits for a
 * peer's fold.  -D it to compare builds. */
#ifndef WHOLE_FOLD_MAX
#define WHOLE_FOLD_MAX (32u * 1024u)
#endif
#define PIECE_WAIT_NS 1000000ull /* a fold waiting for a piece looks back this often */

/* Member k's block at offset `off` of its pool segment, `len` bytes: its address here, or
 * NULL (logged) when the reference is not inside that segment. */
const char *dred_meetpath_peer_block(dred_rt_t *rt, const dred_inst_t *in, uint32_t k,
                                     uint32_t worker, int64_t off, uint64_t len) {
  char why[160] = "it is not the member's process, or that process has no pool here";
  if (worker != in->group->workers[k] || worker >= (uint32_t)rt->world_size ||
      rt->peer_base[worker] == NULL ||
      dred_seg_check_range(&rt->segs[worker], off, len, why, sizeof why) != 0) {
    DRED_ERROR("collective (tag " PROTO_KEY_FMT "): member %u's block reference (worker %u, "
               "offset %lld, %llu bytes) refused: %s",
               PROTO_KEY_ARG(in->tag), k, worker, (long long)off, (unsigned long long)len, why);
    return NULL;
  }
  return rt->peer_base[worker] + off;
}

/* Where chunk c's result is: in its holder's block (dred_meet_chunks_folded's holders and
 * parts), checked as peer_block checks; NULL (logged) when it is not there. */
static const char *chunk_block(dred_rt_t *rt, const dred_inst_t *in, const uint8_t *holder,
                               const int64_t *part, uint32_t c, uint64_t len) {
  if (holder[c] >= in->group->n) return NULL;
  return dred_meetpath_peer_block(rt, in, holder[c], in->group->workers[holder[c]], part[c], len);
}

/* Where member k's operand is, if the collective reads it (NULL for one it does not read
 * or -- `self` -- this member's own): in the slot, or in a node peer's pool block, checked
 * against that peer's segment (*rc DRED_ERR_INTERNAL, logged, when it is not there);
 * operands_of, every member's. */
static const char *operand_at(dred_rt_t *rt, dred_inst_t *in, uint32_t k, int *rc) {
  dred_meet_ref_t ref = dred_meet_operand(in->meet_slot, k);
  *rc = DRED_OK;
  if (k == in->member || ref.kind == DRED_MEET_OP_NONE) return NULL;
  if (ref.kind == DRED_MEET_OP_SLOT)
    return (const char *)dred_meet_data(in->meet_slot) + (size_t)k * in->bytes;
  if (ref.kind != DRED_MEET_OP_POOL || ref.len != in->bytes) {
    DRED_ERROR("collective (tag " PROTO_KEY_FMT "): member %u's operand reference (kind %u, "
               "%llu bytes) is not a pool block of %zu bytes: refused",
               PROTO_KEY_ARG(in->tag), k, ref.kind, (unsigned long long)ref.len, in->bytes);
    *rc = DRED_ERR_INTERNAL;
    return NULL;
  }
  {
    const char *p = dred_meetpath_peer_block(rt, in, k, ref.worker, ref.off, ref.len);
    if (p == NULL) *rc = DRED_ERR_INTERNAL;
    return p;
  }
}

static int operands_of(dred_rt_t *rt, dred_inst_t *in, const char **src) {
  uint32_t k;
  int rc = DRED_OK;
  for (k = 0; k < in->group->n && rc == DRED_OK; k++) src[k] = operand_at(rt, in, k, &rc);
  return rc;
}

/* acc = acc op x over ne elements, or x op acc when x_first (a non-commutative op whose
 * other operand comes first in rank order). */
static int combine_into(dred_inst_t *in, char *acc, const char *x, int x_first, uint64_t ne,
                        char *tmp) {
  const char *two[2];
  two[x_first] = NULL; /* acc's place */
  two[!x_first] = x;
  return dred_fold(in, two, 2, (uint32_t)x_first, acc, 0, ne, tmp);
}

/* A reduce's root, met by reference: fold every operand into acc, in steps of about
 * `budget` bytes combined; *done says whether it finished.  Operands folded already while
 * the root waited (meet_prefolded: a commutative op, any order) are left out. */
static int fold_by_ref(dred_rt_t *rt, dred_inst_t *in, uint64_t budget, int *done) {
  const char *src[DRED_MEET_MAX_MEMBERS];
  uint64_t ce = DRED_FOLD_CHUNK / in->ti.extent, spent = 0;
  uint32_t n = in->group->n, r = in->member, k, m;
  char *tmp;
  int rc;

  *done = 0;
  if (ce == 0) ce = 1;
  if (in->acc == NULL) return DRED_ERR_INTERNAL;
  if ((rc = operands_of(rt, in, src)) != DRED_OK) return rc;
  if (in->meet_prefolded != 0) { /* acc first, then the operands still to fold */
    const char *left[DRED_MEET_MAX_MEMBERS];
    left[0] = NULL;
    for (m = 1, k = 0; k < n; k++)
      if (k != in->member && !(in->meet_prefolded >> k & 1)) left[m++] = src[k];
    memcpy(src, left, m * sizeof *src);
    n = m;
    r = 0;
  }
  tmp = dred_fold_tmp(in, &rc);
  while (rc == DRED_OK && in->meet_fold_next < in->count && !(spent > 0 && spent >= budget)) {
    uint64_t e0 = in->meet_fold_next, ne = in->count - e0 < ce ? in->count - e0 : ce;
    rc = dred_fold(in, src, n, r, in->acc, e0, ne, tmp);
    in->meet_fold_next = e0 + ne;
    spent += (uint64_t)ne * in->ti.extent * (n - 1);
  }
  free(tmp);
  *done = rc == DRED_OK && in->meet_fold_next >= in->count;
  return dred_fold_failed(in, rc);
}

int dred_meetpath_prefold(dred_rt_t *rt, uint64_t gid, int64_t tag) {
  const char *x;
  dred_inst_t *in;
  uint64_t fresh;
  uint32_t k;
  char *tmp;
  int rc = DRED_OK, did = 0;

  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, gid, tag);
  if (in == NULL || dred_inst_state(in) != INST_MEET || in->meet_claimed || !prefolds(in)) {
    uv_mutex_unlock(&rt->lock);
    return 0;
  }
  in->meet_claimed = 1; /* settle leaves it alone meanwhile */
  uv_mutex_unlock(&rt->lock);
  fresh = dred_meet_solo(in->meet_slot, in->meet_seq, in->member) & ~in->meet_prefolded;
  if (fresh != 0) { /* members that agree with us: their operands are as large as ours */
    tmp = dred_fold_tmp(in, &rc);
    for (k = 0; rc == DRED_OK && k < in->group->n; k++) {
      if (!(fresh >> k & 1) || (x = operand_at(rt, in, k, &rc)) == NULL) continue;
      rc = dred_fold_failed(in, combine_into(in, in->acc, x, 0, in->count, tmp));
      in->meet_prefolded |= (uint64_t)1 << k;
      did = 1;
    }
    free(tmp);
  }
  if (rc != DRED_OK) /* the slot ends for everyone; our settle reports it */
    dred_meet_end(in->meet_slot, in->meet_seq, rc);
  uv_mutex_lock(&rt->lock);
  in->meet_claimed = 0;
  uv_mutex_unlock(&rt->lock);
  return did;
}

/* Chunks.  A large allreduce, and a large reduce among members that each have a core,
 * is folded in chunks (dred_meet_nchunks) by the members that wait.  A claimer folds its
 * chunk into a fresh block of its own pool and says where (dred_meet_chunk_done); no
 * operand is ever written, so a chunk is the same bits whoever folds it, and a claim
 * whose claimer is slow, stalled or dead never holds anyone up for long: a waiter with
 * nothing left to claim waits at most late_after() for it, then folds that chunk itself
 * into its own result (never published).  A claimer killed with a claim gives it back
 * (dred_meet_member_failed) for anyone to claim again. */

/* A large reduce among enough members shares its fold (reduce_help, reduce_root_shared)
 * instead of leaving it all to the root, which alone would read (n - 1) x bytes: below
 * these sizes the claims and blocks cost more than the parallel fold saves. */
#define SHARE_MIN_BYTES (256u * 1024u)
#define SHARE_MIN_MEMBERS 3
/* How long a waiter with nothing to claim waits for a peer's claim before folding that
 * chunk itself: twice what its own last chunk took, within these bounds (the upper one
 * also when it folded none yet).  Without a core (the scheduler's tick, 4 ms) or dead, a
 * claimer costs the others no more than that. */
#define LATE_MIN_NS 50000ull
#define LATE_MAX_NS 2000000ull

/* Whether a reduce met by reference shares its fold: every member computes the same from
 * the parameters they agreed on and the node's DRED_MEET_SHARE decision.  A helper folds
 * a chunk's non-root operands in rank order and the root combines that partial with its
 * own operand, which keeps MPI's rank order when the root is the first or the last
 * member; any order is right for a commutative op. */
static int reduce_shares(const dred_rt_t *rt, const dred_inst_t *in) {
  uint32_t n = in->group->n;
  return rt->meet_share && in->kind == PROTO_KIND_REDUCE && !meet_small(in) &&
         n >= SHARE_MIN_MEMBERS && in->bytes >= SHARE_MIN_BYTES &&
         (in->ti.commutative || in->root == 0 || in->root == n - 1);
}

static uint64_t late_after(const dred_inst_t *in) {
  uint64_t t = 2 * in->meet_chunk_ns;
  if (in->meet_chunk_ns == 0 || t > LATE_MAX_NS) return LATE_MAX_NS;
  return t < LATE_MIN_NS ? LATE_MIN_NS : t;
}

/* A waiter found nothing to claim, only peers' claims not folded yet.  1: it has waited
 * late_after() since it first found so -- fold one of them yourself; 0: it waited on the
 * slot meanwhile (look again); 3: a bounded look, which never waits (look later). */
static int wait_for_peers(dred_inst_t *in, uint64_t budget, uint32_t epoch) {
  uint64_t now = uv_hrtime(), limit = late_after(in);
  if (in->meet_wait_ns == 0) in->meet_wait_ns = now;
  if (now - in->meet_wait_ns >= limit) return 1;
  if (budget != UINT64_MAX) return 3;
  dred_meet_wait_epoch(in->meet_slot, epoch, limit - (now - in->meet_wait_ns));
  return 0;
}

/* The lowest chunk of `nch` not in `have` that `in`'s member can fold (-1: none). */
static int lowest_missing(const dred_inst_t *in, uint64_t have, uint32_t nch) {
  uint32_t c;
  for (c = 0; c < nch; c++)
    if (!(have & ((uint64_t)1 << c)) &&
        dred_meet_chunk_readable(in->meet_slot, in->meet_seq, nch, c, in->member))
      return (int)c;
  return -1;
}

/* A member that folds its own operand from sendbuf (a blocking call's, meet_pipelined)
 * keeps its home chunks out of its block: nobody else can fold them.  Once its peers
 * have claimed everything else, it copies in the top one of those still unclaimed (it
 * folds the bottom ones itself), so that a peer that is done takes it over. */
static void home_give(dred_inst_t *in, uint32_t nch, uint64_t all) {
  uint32_t lo, hi;
  uint64_t home, claimed, left;
  dred_meet_home(nch, in->group->n, in->member, &lo, &hi);
  home = (hi >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << hi) - 1) & ~(((uint64_t)1 << lo) - 1);
  claimed = dred_meet_chunks_claimed(in->meet_slot, in->meet_seq);
  if (((claimed | home) & all) != all) return; /* peers have chunks of their own left */
  left = home & ~claimed & ~in->meet_pin;
  if (__builtin_popcountll(left) >= 2)
    dred_meetpath__piece_in(in, (uint32_t)(63 - __builtin_clzll(left)));
}

/* An allreduce met by reference: claim chunks nobody has, fold each into a fresh block
 * of our pool (every operand only read), and copy every folded chunk from its holder's
 * block to our result; a peer's claim late past late_after() we fold ourselves.  Returns
 * the status when *done; else *done is 0 and the return is 3 when a bounded look finds
 * only peers' claims left (wait on the slot), 0 after `budget` bytes of work. */
static int allreduce_by_ref(dred_rt_t *rt, dred_inst_t *in, uint64_t budget, int *done) {
  const char *src[DRED_MEET_MAX_MEMBERS];
  uint8_t holder[DRED_MEET_MAX_CHUNKS];
  int64_t part[DRED_MEET_MAX_CHUNKS];
  uint32_t n = in->group->n, nch = dred_meet_nchunks(in->count, in->bytes, n);
  uint64_t all = nch >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << nch) - 1, spent = 0, e0, ne;
  size_t ext = in->ti.extent, most = nch > 0 ? (size_t)((in->count + nch - 1) / nch) * ext : 0;
  /* our own operand: in our block, or still in sendbuf (meet_pipelined: a blocking call,
   * which copies in only the chunks its peers fold) */
  const char *own = in->meet_pipelined ? (const char *)in->sendbuf
                    : in->meet_blk != NULL ? in->meet_blk : in->acc;
  char *dst = result_dst(in), *tmp;
  int rc;

  *done = 0;
  if (dst == NULL) return *done = 1, DRED_ERR_NOMEM;
  if (own == NULL || nch == 0) return *done = 1, DRED_ERR_INTERNAL;
  if ((rc = operands_of(rt, in, src)) != DRED_OK) return *done = 1, rc;
  src[in->member] = own;
  tmp = dred_fold_tmp(in, &rc);
  if (rc == DRED_OK && (uint64_t)n * in->bytes <= WHOLE_FOLD_MAX) {
    /* Small: every member folds it all, in the same order (from member 0 up, whoever
     * folds: bit-equal results), straight from the operands -- cheaper than sharing
     * chunks, which costs every member a wait for its peers' folds. */
    memcpy(dst, src[0], in->bytes);
    rc = dred_fold_failed(in, dred_fold(in, src, n, 0, dst, 0, in->count, tmp));
    free(tmp);
    if (rc == DRED_OK) in->res_have = in->bytes;
    *done = 1;
    return rc;
  }
  while (rc == DRED_OK) {
    uint32_t epoch = dred_meet_epoch(in->meet_slot); /* before the look: no lost wake-up */
    int st, c, w, room;
    uint64_t folded = dred_meet_chunks_folded(in->meet_slot, in->meet_seq, &st, holder, part);
    uint64_t fresh = folded & ~in->meet_copied;
    char *blk = NULL;
    int64_t off = -1;
    if (st != DRED_OK) {
      rc = st;
      break;
    }
    for (c = 0; fresh != 0 && rc == DRED_OK; c++, fresh >>= 1) { /* folded chunks we lack */
      const char *from;
      if (!(fresh & 1)) continue;
      dred_meet_chunk_range(in->count, nch, (uint32_t)c, &e0, &ne);
      if ((from = chunk_block(rt, in, holder, part, (uint32_t)c, ne * ext)) == NULL) {
        rc = DRED_ERR_INTERNAL;
        break;
      }
      dred_shm_copy_result(dst + e0 * ext, from, ne * ext, in->bytes, DRED_SHM_WEIGHT_ALLREDUCE);
      in->meet_copied |= (uint64_t)1 << c;
      spent += ne * ext;
    }
    if (rc != DRED_OK || (in->meet_copied & all) == all) break;
    if (spent > 0 && spent >= budget) {
      free(tmp);
      return 0;
    }
    if (in->meet_pipelined && in->meet_pin != all) home_give(in, nch, all);
    /* No pool room for a chunk block: fold what we lack ourselves, unpublished.  Nothing
     * left to claim (the common look, woken by a peer's fold): no block, no lock. */
    room = 1;
    c = -1;
    if (dred_meet_claimable(in->meet_slot, in->meet_seq, nch)) {
      if (dred_dp_pool_block(rt, most, &blk, &off) != DRED_OK) blk = NULL, room = 0;
      c = blk != NULL ? dred_meet_claim(in->meet_slot, in->meet_seq, in->member, nch) : -1;
    }
    if (c >= 0) {
      uint64_t t0 = uv_hrtime();
      in->meet_wait_ns = 0;
      dred_meet_chunk_range(in->count, nch, (uint32_t)c, &e0, &ne);
      rc = dred_fold_chunk_out(in, src, n, e0, ne, blk, dst, tmp);
      in->meet_chunk_ns = uv_hrtime() - t0;
      if (rc != DRED_OK) { /* the others would fail the same way: everyone ends */
        dred_dp_buf_free(rt, most, blk, off, 0);
        dred_meet_chunk_failed(in->meet_slot, in->meet_seq, rc);
        break;
      }
      in->meet_copied |= (uint64_t)1 << c;
      if (dred_meet_chunk_done(in->meet_slot, in->meet_seq, (uint32_t)c, in->member, off))
        dred_meetpath_lend(rt, in->meet_slot, in->meet_seq, in->member, blk, off, most);
      else /* we were declared failed: nobody reads ours */
        dred_dp_buf_free(rt, most, blk, off, 0);
      spent += ne * ext * n;
      continue;
    }
    if (blk != NULL) dred_dp_buf_free(rt, most, blk, off, 0);
    if (c == -2) {
      /* The next chunk waits for a member still copying its operand in, in its call right
       * now: each piece moves the epoch.  A piece that does not come within PIECE_WAIT_NS
       * (its member stalled or died) sends us back to the caller's wait, which bounds it. */
      if (budget == UINT64_MAX) {
        dred_meet_wait_epoch(in->meet_slot, epoch, PIECE_WAIT_NS);
        if (dred_meet_epoch(in->meet_slot) != epoch) continue;
      }
      free(tmp);
      return 3;
    }
    w = room ? wait_for_peers(in, budget, epoch) : 1;
    if (w == 3) {
      free(tmp);
      return 3; /* every chunk left is a peer's to fold */
    }
    if (w == 0) continue;
    if ((c = lowest_missing(in, folded | in->meet_copied, nch)) < 0) {
      /* what is left is still being copied in, or is folded by a member from its own
       * memory: wait for it again */
      in->meet_wait_ns = 0;
      continue;
    }
    DRED_DEBUG("allreduce (tag " PROTO_KEY_FMT "): chunk %d of %u folded here, its claimer late",
               PROTO_KEY_ARG(in->tag), c, nch);
    rc = dred_fold_chunk(in, src, n, nch, (uint32_t)c, dst, 1, tmp);
    in->meet_copied |= (uint64_t)1 << c;
    spent += (uint64_t)in->bytes / nch * n;
  }
  free(tmp);
  if (rc == DRED_OK) in->res_have = in->bytes;
  *done = 1;
  return rc;
}

/* A sharing reduce's non-root that waits: claim chunks nobody has, fold each one's
 * non-root operands in rank order into a fresh block of our pool, say where it is, and
 * lend the block until the root is done.  Our own operand is only read.  Returns the
 * status when *done -- DRED_OK unless a fold failed: with no pool room or nothing left to
 * claim we just stop, the others fold the rest -- else *done is 0 after `budget` bytes. */
static int reduce_help(dred_rt_t *rt, dred_inst_t *in, uint64_t budget, int *done) {
  const char *src[DRED_MEET_MAX_MEMBERS], *others[DRED_MEET_MAX_MEMBERS];
  uint32_t n = in->group->n, nch = dred_meet_nchunks(in->count, in->bytes, n), k, m;
  size_t ext = in->ti.extent, most;
  uint64_t spent = 0, e0, ne;
  char *own = in->meet_blk != NULL ? in->meet_blk : in->acc, *blk, *tmp;
  int64_t off;
  int rc, c;

  *done = 1;
  if (own == NULL || nch == 0 || operands_of(rt, in, src) != DRED_OK) return DRED_OK;
  src[in->member] = own;
  for (m = 0, k = 0; k < n; k++) /* the non-root operands, in rank order */
    if (k != in->root) others[m++] = src[k];
  if ((tmp = dred_fold_tmp(in, &rc)) == NULL && rc != DRED_OK) return DRED_OK;
  most = (size_t)((in->count + nch - 1) / nch) * ext; /* the largest chunk */
  for (;;) {
    if (spent > 0 && spent >= budget) {
      *done = 0;
      break;
    }
    if (dred_dp_pool_block(rt, most, &blk, &off) != DRED_OK) break;
    if ((c = dred_meet_claim(in->meet_slot, in->meet_seq, in->member, nch)) < 0) {
      dred_dp_buf_free(rt, most, blk, off, 0);
      break;
    }
    if ((rc = dred_fold_chunk(in, others, m, nch, (uint32_t)c, blk, 0, tmp)) != DRED_OK) {
      dred_dp_buf_free(rt, most, blk, off, 0);
      dred_meet_chunk_failed(in->meet_slot, in->meet_seq, rc);
      free(tmp);
      return rc;
    }
    if (dred_meet_chunk_done(in->meet_slot, in->meet_seq, (uint32_t)c, in->member, off))
      dred_meetpath_lend(rt, in->meet_slot, in->meet_seq, in->member, blk, off, most);
    else /* we were declared failed: nobody reads ours */
      dred_dp_buf_free(rt, most, blk, off, 0);
    dred_meet_chunk_range(in->count, nch, (uint32_t)c, &e0, &ne);
    spent += ne * ext * (n - 1);
  }
  free(tmp);
  return DRED_OK;
}

/* A sharing reduce's root: combine each helper's folded chunk with our operand in acc
 * (x[root] op partial, or partial op x[root] when the root is the last member), fold the
 * chunks nobody claimed straight into acc, and fold a helper's claim late past
 * late_after() ourselves (its partial, should it come, is then not read).  Returns the
 * status when *done; else *done is 0 and the return is 0 after `budget` bytes, or 3 when
 * a bounded look finds only helpers' claims left (wait on the slot).  An unbounded one
 * waits for them itself. */
static int reduce_root_shared(dred_rt_t *rt, dred_inst_t *in, uint64_t budget, int *done) {
  const char *src[DRED_MEET_MAX_MEMBERS], *partial;
  uint8_t holder[DRED_MEET_MAX_CHUNKS];
  int64_t part[DRED_MEET_MAX_CHUNKS];
  uint32_t n = in->group->n, nch = dred_meet_nchunks(in->count, in->bytes, n);
  uint32_t last = !in->ti.commutative && in->member == n - 1; /* partial op x[root] */
  uint64_t all = nch >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << nch) - 1, spent = 0, e0, ne;
  size_t ext = in->ti.extent;
  char *tmp;
  int rc;

  *done = 1;
  if (in->acc == NULL || nch == 0) return DRED_ERR_INTERNAL;
  if ((rc = operands_of(rt, in, src)) != DRED_OK) return rc;
  tmp = dred_fold_tmp(in, &rc);
  while (rc == DRED_OK) {
    uint32_t epoch = dred_meet_epoch(in->meet_slot); /* before the look: no lost wake-up */
    int st, c, w, mine;
    uint64_t folded = dred_meet_chunks_folded(in->meet_slot, in->meet_seq, &st, holder, part);
    uint64_t fresh = folded & ~in->meet_copied;
    if (st != DRED_OK) {
      rc = st;
      break;
    }
    for (c = 0; fresh != 0 && rc == DRED_OK; c++, fresh >>= 1) { /* helpers' partials */
      if (!(fresh & 1)) continue;
      dred_meet_chunk_range(in->count, nch, (uint32_t)c, &e0, &ne);
      partial = chunk_block(rt, in, holder, part, (uint32_t)c, ne * ext);
      rc = partial == NULL ? DRED_ERR_INTERNAL
                           : dred_fold_failed(in, combine_into(in, in->acc + e0 * ext, partial, last,
                                                          ne, tmp));
      in->meet_copied |= (uint64_t)1 << c;
      spent += ne * ext;
    }
    if (rc != DRED_OK || (in->meet_copied & all) == all) break;
    if (spent > 0 && spent >= budget) {
      *done = 0;
      break;
    }
    mine = (c = dred_meet_claim(in->meet_slot, in->meet_seq, in->member, nch)) >= 0;
    if (mine) {
      in->meet_wait_ns = 0;
    } else {
      if ((w = wait_for_peers(in, budget, epoch)) == 3) {
        *done = 0;
        rc = 3;
        break;
      }
      if (w == 0 || (c = lowest_missing(in, folded | in->meet_copied, nch)) < 0) continue;
      DRED_DEBUG("reduce (tag " PROTO_KEY_FMT "): chunk %d of %u folded at the root, its helper "
                 "late", PROTO_KEY_ARG(in->tag), c, nch);
    }
    {
      uint64_t t0 = uv_hrtime();
      dred_meet_chunk_range(in->count, nch, (uint32_t)c, &e0, &ne);
      rc = dred_fold_failed(in, dred_fold(in, src, n, in->member, in->acc, e0, ne, tmp));
      if (mine) in->meet_chunk_ns = uv_hrtime() - t0;
    }
    in->meet_copied |= (uint64_t)1 << c;
    if (rc == DRED_OK && mine)
      (void)dred_meet_chunk_done(in->meet_slot, in->meet_seq, (uint32_t)c, in->member, -1);
    spent += ne * ext * (n - 1);
  }
  free(tmp);
  return rc;
}

/* A bcast's non-root: copy the root's data (in the slot, or in its block as far as the
 * root has put it there) to our result, in steps of about `budget` bytes.  Returns the
 * status when *done; else 0 after `budget` bytes, or 3 when the root has not put more in
 * yet (wait on the slot). */
static int bcast_copy(dred_rt_t *rt, dred_inst_t *in, uint64_t budget, int *done) {
  const char *src;
  char *dst = result_dst(in);
  uint64_t avail = in->bytes, len;
  uint32_t from;
  int rc, st = DRED_OK;
  *done = 1;
  if (dst == NULL) return DRED_ERR_NOMEM;
  /* a relay's follower copies from its node's leader (relay.c), a met member from the root;
   * only that operand: served early, we may copy while others still arrive, and one that
   * disagrees (no block, another root) may leave any reference in its place */
  from = in->relay_follow ? dred_meet_leader(in->meet_slot) : in->root;
  if (from >= in->group->n) return DRED_ERR_INTERNAL;
  src = operand_at(rt, in, from, &rc);
  if (rc != DRED_OK) return rc;
  if (src == NULL && in->bytes > 0) return DRED_ERR_INTERNAL;
  if (!meet_small(in)) {
    avail = dred_meet_progress(in->meet_slot, in->meet_seq, &st);
    if (st != DRED_OK) return st;
    if (avail > in->bytes) avail = in->bytes;
  }
  while (in->meet_fold_next < avail) {
    len = avail - in->meet_fold_next;
    if (len > DRED_FOLD_CHUNK * 4) len = DRED_FOLD_CHUNK * 4;
    dred_shm_copy_result(dst + in->meet_fold_next, src + in->meet_fold_next, len, in->bytes,
                         DRED_SHM_WEIGHT_BCAST);
    in->meet_fold_next += len;
    if (in->meet_fold_next < in->bytes && in->meet_fold_next >= budget) break;
  }
  if (in->meet_fold_next >= in->bytes) {
    in->res_have = in->bytes;
    return DRED_OK;
  }
  *done = 0;
  return in->meet_fold_next < avail ? 0 : 3;
}

/* The work of member `in` on its claimed, decided collective whose outcome is DRED_OK:
 * a reduce root's fold (alone, or combining its helpers' chunks), a helper's chunks, an
 * allreduce's fold or chunks, a bcast member's copy -- about `budget` bytes of it
 * (UINT64_MAX: all).  `status` other than DRED_OK: the collective is being ended here (a
 * deadline, a death), so a member left waiting for its peers' chunks ends with it.
 * Returns the status; *done whether the work is over, *reads whether it read peers'
 * blocks, *step what a chunked step said (3: its part is done, the rest is its peers'). */
int dred_meetpath__work(dred_rt_t *rt, dred_inst_t *in, int status, uint64_t budget, int *done,
                        int *reads, int *step) {
  int st = DRED_OK, r = 0;
  *done = 1;
  *reads = 0;
  if (in->kind == PROTO_KIND_REDUCE && in->is_root && reduce_shares(rt, in) &&
      in->meet_prefolded == 0) { /* a root that folded early arrivals folds alone */
    *reads = 1;
    r = reduce_root_shared(rt, in, budget, done);
    if (*done)
      st = r;
    else if (r == 3 && status != DRED_OK)
      st = status, *done = 1; /* ending it here: nothing more can come */
  } else if (in->kind == PROTO_KIND_REDUCE && in->is_root) {
    *reads = !meet_small(in);
    st = *reads ? fold_by_ref(rt, in, budget, done)
                : dred_dp_inline_fold(rt, in, dred_meet_data(in->meet_slot), in->group->n);
  } else if (in->kind == PROTO_KIND_REDUCE && reduce_shares(rt, in)) {
    *reads = 1; /* a helper: what it folded counts only if it still counts itself */
    st = reduce_help(rt, in, budget, done);
  } else if (in->kind == PROTO_KIND_ALLREDUCE) {
    *reads = !meet_small(in);
    if (*reads) {
      r = allreduce_by_ref(rt, in, budget, done);
      if (*done)
        st = r;
      else if (r == 3 && status != DRED_OK)
        st = status, *done = 1; /* ending it here: nothing more can come (a deadline, a death) */
    } else {
      st = dred_dp_inline_fold(rt, in, dred_meet_data(in->meet_slot), in->group->n);
    }
  } else if (in->kind == PROTO_KIND_BCAST && !in->is_root) {
    *reads = !meet_small(in);
    r = bcast_copy(rt, in, budget, done);
    if (*done)
      st = r;
    else if (r == 3 && status != DRED_OK)
      st = status, *done = 1; /* ending it here: nothing more can come */
  }
  *step = r;
  return st;
}
