/*
 * lanepath.c -- the meeting place's fast lane as libdred uses it (over lib/shm/fast.c): a
 * small collective of a one-node group decided on the calling thread from its members'
 * posts, with no slot, no instance table and no future handed out.
 *
 * A blocking call (dred_lanepath_call).  A reduce's or allreduce's member posts its
 * operand, a bcast's root its data, in the ring's post of its collective; a bcast's
 * non-roots only watch for their root's post.  Once every post it reads is there, the
 * member takes what it reads (dred_meetpath__taken) and ends the call itself
 * (dred_lanepath_finish): an allreduce's member and a reduce's root fold, a bcast's
 * non-root copies.  The call gives its ack as it returns (dred_lanepath_done), so the
 * post's owner may use it again DRED_MEET_DEPTH collectives later.
 *
 * By reference.  An operand over a post's room goes into a block of its member's pool
 * kept per slot of the ring (lane_post_ref), which the post names: a bcast's data up to
 * DRED_MEET_FAST_REF_MAX (copied in pieces as the members copy out, where every process
 * has a core), an allreduce as far as every member folds all the operands (LANE_FOLD_MAX)
 * or folds its part (lane_fold_split).  Readers check after reading that the posts are
 * still that collective's -- else they were given up for dead and the block may hold a
 * later one's operand -- then ack.
 *
 * Nonblocking calls (dred_lanepath_post).  A small nonblocking reduce or allreduce posts
 * there too and returns its future; its waits, its future's release and the runtime
 * thread's turns settle it from the posts (dred_lanepath__settle), or send it the slot's
 * way (lane_to_slot) when a peer went there.
 *
 * Whatever the lane cannot decide -- a member that went the slot's way, a root that never
 * posts, no pool room, the service dead -- goes the slot's way (meetpath.c), which hears
 * every member and decides for all of them alike.
 */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/log.h"
#include "../shm/copy.h"
#include "../shm/meet.h"
#include "../engine/group.h"
#include "../engine/inst.h"
#include "../engine/runtime.h"
#include "../mpi/dataplane.h"
#include "fold.h"
#include "lanepath.h"
#include "meetpath.h"
#include "meetpath_int.h"

/* A bcast's non-root watches for its root's post this long at most, then goes the slot's
 * way.  Where members disagree on who the root is so that none of them posts as one (each
 * names another), no post ever comes and only the slot, which hears every member, can
 * decide (MISMATCH); a root merely later than this finds the slot taken and meets its
 * members there, where early arrivals are served as well. */
#define WATCH_MAX_NS 20000000ull
/* An allreduce whose operands together are at most this is folded whole by every member
 * in the lane (lane_fold), where nobody touches the slot: the slot's chunks cost every
 * member a wait for its peers' folds and their looks, which grow with p (16 cores, p = 16,
 * 8 KiB: 30-36 us whole in the lane against 140 shared in the slot; p = 8, 32 KiB: 50-56
 * against 33-41 -- docs/performance.md, session 47).  Where the lane folds in parts
 * (lane_splits) it does so from LANE_SPLIT_FROM on instead.  -D it to compare builds. */
#ifndef LANE_FOLD_MAX
#define LANE_FOLD_MAX (128u * 1024u)
#endif

/* The fast lane's ack of this thread's last collective decided there, given by its
 * public call as it returns (dred_lanepath_done): the store waits for the post's
 * line, which the peers just read, and nothing in the call should wait behind it. */
static _Thread_local struct {
  dred_meet_ring_t *r;
  uint64_t seq;
  uint32_t member;
  int due;
} fast_due;

void dred_lanepath_done(void) {
  if (!fast_due.due) return;
  fast_due.due = 0;
  dred_meet_fast_done(fast_due.r, fast_due.seq, fast_due.member);
}

_Static_assert(sizeof(((dred_group_t *)0)->lane_blk) / sizeof(((dred_group_t *)0)->lane_blk[0]) ==
                   DRED_MEET_DEPTH,
               "a lane block per slot of the ring");

/* Whether an allreduce in the lane is folded in parts, one per member (lane_fold_split),
 * rather than whole by every member: where every process of the node has a core
 * (rt->meet_pieces: a peer's part comes within microseconds), the group has at least
 * LANE_SPLIT_MIN members, and their operands total over LANE_SPLIT_FROM, each at most
 * LANE_SPLIT_MAX.  Its member's lane block then holds its operand and, after it, room for
 * its parts of the result.  Measured in turn on 16 cores (docs/performance.md, sessions
 * 48 and 65): in parts, 16-32 KiB at p = 15-16 took 0.4-0.7 of MPI's time against 1.7-4.2
 * in the slot, and 4-16 KiB at p = 8-16 0.24-0.7 against 0.4-0.9 whole; 64-128 KiB at
 * p = 15-16 0.40-0.65 against 0.89-2.71 in the slot, at p = 8 0.47-0.54 against
 * 0.67-0.72 (at p = 16 the slot took 137-196 us at 64 KiB, 208 at 256 KiB).
 * Past 128 KiB the block (twice the operand, one per slot of the ring) would outgrow a
 * bcast's (DRED_MEET_FAST_REF_MAX), and the slot's chunks were not measured to lose
 * there (256 KiB at p = 16: 1.04).  Two members gain nothing: each
 * folds half either way, and the slot's chunks overlap the copy of an operand into the
 * pool with the peer's fold (p = 2 on the development machine, 128 KiB: 33-50 us in parts
 * against 23-26 in the slot).  -D any of them to compare builds. */
#ifndef LANE_SPLIT_MIN
#define LANE_SPLIT_MIN 3u
#endif
#ifndef LANE_SPLIT_FROM
#define LANE_SPLIT_FROM (32u * 1024u)
#endif
#ifndef LANE_SPLIT_MAX
#define LANE_SPLIT_MAX (128u * 1024u)
#endif
static int lane_splits(const dred_rt_t *rt, const dred_inst_t *in) {
  return in->kind == PROTO_KIND_ALLREDUCE && rt->meet_pieces && in->group->n >= LANE_SPLIT_MIN &&
         in->bytes <= LANE_SPLIT_MAX && (uint64_t)in->group->n * in->bytes > LANE_SPLIT_FROM &&
         in->count >= in->group->n;
}

/* A collective whose operand exceeds a post still takes the lane, its post naming a
 * block of its pool that holds the operand (meet.h), up to DRED_MEET_FAST_REF_MAX: a
 * bcast (its root's data); an allreduce folded in parts (lane_splits); an allreduce or a
 * reduce as far as one member folds all the operands (LANE_FOLD_MAX: an allreduce's
 * every member; a reduce's root).  Past those the slot shares the
 * fold out in chunks claimed by whoever waits, which a late or descheduled member does
 * not hold up. */
static int lane_by_ref(const dred_rt_t *rt, const dred_inst_t *in) {
  if (in->bytes > DRED_MEET_FAST_REF_MAX) return 0;
  return in->kind == PROTO_KIND_BCAST || (uint64_t)in->group->n * in->bytes <= LANE_FOLD_MAX ||
         lane_splits(rt, in);
}

/* An allreduce folded in parts in the lane (lane_splits): the group's operands are cut
 * into n parts (dred_meet_chunk_range(count, n, j)), each folded once, in rank order from
 * every operand, by whichever member claims it, into its result and into the room after
 * the operand in its lane block; the others copy it from there.  Part j's claim is member
 * j's progress word (dred_meet_fast_progress_cas), naming seq, a state and who holds it:
 * OPEN as posted, CLAIMED by a folder, FOLDED, or NONE (its folder could not fold it).
 * Every member claims its own part first, then any part still open from the next member
 * on, so that a member still on its way to its call (woken late from its wait for the
 * last post) finds its part done for it; parts claimed by others it copies once folded.
 * A part claimed but not folded within LANE_PART_WAIT_NS, or four times the longest part
 * this member folded (its folder descheduled or dead), or NONE, it folds itself from the
 * operands, which stay until every member acked: the same fold, the same bits.  Nothing
 * here waits on what may never come.  Where processes outnumber cores the slot's chunks
 * serve instead (lane_splits): there a claimer descheduled mid-fold costs a tick. */
enum { PART_OPEN = 1, PART_CLAIMED = 2, PART_FOLDED = 3, PART_NONE = 4 };
#define LANE_PART_WAIT_NS 20000ull

static uint64_t part_word(uint64_t seq, unsigned state, uint32_t holder) {
  return ((seq & 0xffffffffffffull) << 16) | ((uint64_t)state << 8) | (holder & 0xff);
}

/* Part word w's state for seq (PART_NONE when it is another seq's: that post moved on),
 * *holder its claimer or folder. */
static int part_state(uint64_t w, uint64_t seq, uint32_t n, uint32_t *holder) {
  unsigned state = (unsigned)(w >> 8) & 0xff;
  *holder = (uint32_t)(w & 0xff);
  if (w == UINT64_MAX || (w >> 16) != (seq & 0xffffffffffffull) || state < PART_OPEN ||
      state > PART_NONE || *holder >= n)
    return PART_NONE;
  return (int)state;
}

/* An operand too large for a post (a bcast root's data, an allreduce member's) goes into
 * a block of its pool kept for the ring's slot, and its post names it: the block is
 * reused while large enough, once dred_meet_fast_begin found that nobody reads the slot's
 * last post (or its block) any more.  The post says how much of the block is in
 * (dred_meet_fast_progress): all of it, copied before posting; or, a bcast's data over
 * LANE_PIECES_MIN where every process has a core, none yet -- the root posts first, then
 * copies it in pieces its members copy out as they come (lane_copy), so that a late
 * root's copy and theirs overlap, as the slot's pieces do (dred_meetpath_publish).  1 if
 * posted; 0: the slot's way (nothing posted). */
#define LANE_PIECES_MIN (32u * 1024u)
#define LANE_PIECE (16u * 1024u)

static int lane_post_ref(dred_rt_t *rt, dred_inst_t *in, dred_meet_ring_t *r, uint64_t seq,
                         const proto_params_t *p, int peers_past, int how) {
  dred_group_t *g = in->group;
  const void *src = operand_of(in);
  char *np = NULL;
  int64_t noff = -1;
  dred_meet_ref_t ref;
  unsigned char post[DRED_MEET_FAST_DATA];
  uint64_t have;
  int pieces;
  unsigned i = (unsigned)(seq % DRED_MEET_DEPTH);
  int split = lane_splits(rt, in);
  size_t need = split ? 2 * in->bytes : in->bytes; /* and room for its parts of the result */
  if (src == NULL) return 0;
  if (g->lane_blk[i].cap < need && dred_dp_pool_block(rt, need, &np, &noff) != DRED_OK)
    return 0; /* no room: the slot's way, which may find some */
  if (!dred_meet_fast_begin(r, seq, in->member, peers_past)) {
    if (np != NULL) dred_dp_buf_free(rt, need, np, noff, 0);
    return 0;
  }
  if (np != NULL) {
    if (g->lane_blk[i].p != NULL)
      dred_dp_buf_free(rt, g->lane_blk[i].cap, g->lane_blk[i].p, g->lane_blk[i].off, 0);
    g->lane_blk[i].p = np;
    g->lane_blk[i].off = noff;
    g->lane_blk[i].cap = need;
  }
  /* through the cache, even a bcast's 16 KiB (streamed, its peer's read of it measured
   * slower) -- unless this process's copies measure otherwise (lib/shm/copymode.c) */
  pieces = rt->meet_pieces && in->kind == PROTO_KIND_BCAST && in->bytes > LANE_PIECES_MIN;
  if (!pieces) dred_shm_copy_in(g->lane_blk[i].p, src, in->bytes, SIZE_MAX);
  memset(&ref, 0, sizeof ref);
  ref.kind = DRED_MEET_OP_POOL;
  ref.worker = (uint32_t)rt->world_rank;
  ref.off = g->lane_blk[i].off;
  ref.len = in->bytes;
  have = split ? part_word(seq, PART_OPEN, 0) : pieces ? 0 : in->bytes;
  memset(post, 0, sizeof post);
  memcpy(post, &ref, sizeof ref);
  memcpy(post + DRED_MEET_FAST_PROGRESS_OFF, &have, sizeof have);
  if (!dred_meet_fast_publish_as(r, seq, in->member, p, post, sizeof post, how)) return 0;
  if (pieces) {
    dred_meet_fast_wake(r, seq); /* its members asleep: the post is what they wait for */
    for (have = 0; have < in->bytes;) {
      uint64_t len = in->bytes - have < LANE_PIECE ? in->bytes - have : LANE_PIECE;
      dred_shm_copy_in(g->lane_blk[i].p + have, (const char *)src + have, len, SIZE_MAX);
      have += len;
      dred_meet_fast_progress_set(r, seq, in->member, have);
    }
  }
  return 1;
}

/* seq's bit in a group's lane_nb_open */
static uint32_t lane_bit(uint64_t seq) { return 1u << (seq % DRED_MEET_DEPTH); }

/* What a post of `in` says, and how it is made. */
typedef struct {
  dred_meet_ring_t *r;
  uint64_t seq;
  proto_params_t p; /* what the slot would compare, as an arrival does */
  int peers_past;   /* every peer's post of seq - 1 clean: their acks need not be read */
  int how;          /* DRED_MEET_POST_* */
} lane_post_t;

/* The part of a post that a blocking and a nonblocking (`nb`) call share: 1 with *lp
 * filled, or 0 when the lane cannot take `in` -- not an auto-tagged collective of a
 * one-node group of at most DRED_MEET_FAST_MEMBERS that joins without an error, no ring,
 * the service died, or our own nonblocking post of seq - DEPTH there is still unresolved
 * (not over it). */
static int lane_prepare(dred_rt_t *rt, dred_inst_t *in, int nb, lane_post_t *lp) {
  dred_group_t *g = in->group;
  uint32_t open;
  if (rt->meet == NULL || g->spans_nodes || in->tag >= 0 || in->join_error != DRED_OK ||
      in->refused || g->n > DRED_MEET_FAST_MEMBERS)
    return 0;
  lp->seq = (uint64_t)(-1 - in->tag);
  if ((lp->r = dred_meetpath__auto_ring(rt, in)) == NULL ||
      __atomic_load_n(&rt->dead, __ATOMIC_ACQUIRE))
    return 0;
  open = __atomic_load_n(&g->lane_nb_open, __ATOMIC_ACQUIRE);
  if (open & lane_bit(lp->seq)) return 0;
  lp->p = dred_rt_params(in);
  /* the stream's previous collective decided in the lane, every peer's post clean: none
   * still reads this slot's posts of DEPTH ago */
  lp->peers_past = lp->seq > 0 && __atomic_load_n(&g->meet_fast_next, __ATOMIC_RELAXED) == lp->seq;
  /* with a nonblocking post of ours unresolved, ours says so (meet.h) */
  if (nb)
    lp->how = open ? DRED_MEET_POST_NB_DIRTY : DRED_MEET_POST_NB;
  else
    lp->how = open ? DRED_MEET_POST_DIRTY : DRED_MEET_POST_CLEAN;
  return 1;
}

int dred_lanepath_call(dred_rt_t *rt, dred_inst_t *in) {
  dred_meet_ring_t *r = NULL;
  lane_post_t lp;
  proto_params_t p;
  uint64_t seq = 0;
  size_t bytes;
  int rc, st = DRED_OK, waited = 0, by_ref, posted, watch;
  uint64_t watched = 0, slice;

  /* of the small path whose operand fits a post, or a bcast whose root's data the post
   * names (and what lane_prepare asks of any post) */
  by_ref = in->bytes > DRED_MEET_FAST_DATA;
  if (by_ref ? !lane_by_ref(rt, in) : !meet_small(in)) return 0;
  if (!lane_prepare(rt, in, 0, &lp)) return 0;
  r = lp.r;
  seq = lp.seq;
  p = lp.p;
  bytes = publishes(in) ? in->bytes : 0;
  /* a bcast's non-root posts nothing: it watches for its root's post (meet.h) */
  watch = in->kind == PROTO_KIND_BCAST && !in->is_root;
  if (watch)
    posted = 1;
  else if (by_ref && bytes > 0)
    posted = lane_post_ref(rt, in, r, seq, &p, lp.peers_past, lp.how);
  else /* (a reduce's root by reference posts its parameters alone, as any reduce root) */
    posted = dred_meet_fast_post_as(r, seq, in->member, &p, bytes > 0 ? operand_of(in) : NULL,
                                    bytes, lp.peers_past, lp.how);
  if (!posted) return 0; /* the slot's way: its arrival tells the peers */
  for (;;) {
    rc = watch ? dred_meet_fast_watch(r, seq, in->member, &p, dred_meetpath__taken,
                                      sizeof dred_meetpath__taken, &st)
               : dred_meet_fast_look(r, seq, in->member, dred_meetpath__taken,
                                     sizeof dred_meetpath__taken, &st);
    if (rc != 0) break;
    /* The service died (master lost): nothing will end a wait for a member that never
     * comes; the call ends the way call_submit ends any call then.  Looked at after a
     * wait that came back unresolved, off the path of a collective resolved at once. */
    if (waited && service_dead(rt) != 0) {
      dred_meet_fast_done(r, seq, in->member);
      return 0;
    }
    if (watch) {
      uint64_t now = uv_hrtime();
      if (watched == 0) watched = now;
      if (now - watched >= WATCH_MAX_NS) return 0; /* the slot's way: it decides */
      slice = WATCH_MAX_NS - (now - watched);
      dred_meet_fast_watch_wait(r, seq, in->member, in->root, slice < WAIT_SLICE_NS ? slice : WAIT_SLICE_NS);
    } else {
      dred_meet_fast_wait(r, seq, in->member, WAIT_SLICE_NS);
    }
    waited = 1;
  }
  if (rc < 0) return 0; /* a member went the slot's way: so do we */
  /* every peer posted seq (not so when served from a bcast root's post): the stream's
   * next post need not ask their acks */
  in->meet_fast_all = rc == 1 && dred_meet_fast_clean(r, seq);
  /* dred_meetpath__taken: where what it reads is -- a bcast root's data, every allreduce member's
   * operand, a reduce's non-roots' (the root reads them) */
  in->meet_lane_ref = by_ref && st == DRED_OK &&
                      (in->kind == PROTO_KIND_BCAST ? !in->is_root
                                                    : in->kind == PROTO_KIND_ALLREDUCE || in->is_root);
  dred_lanepath_done();
  fast_due.r = r;
  fast_due.seq = seq;
  fast_due.member = in->member;
  fast_due.due = 1;
  in->meet_seq = seq;
  in->meet_status = st;
  return 1;
}

/* How long a member copying a root's pieces spins before it sleeps between looks, and how
 * often it then asks whether the service died. */
#define PIECE_SPIN_NS 50000ull
#define PIECE_NAP_NS 20000ull
#define PIECE_DEAD_NS 1000000ull

/* The bytes of `in`'s bcast data its root's block holds from `have` on, copied to dst as
 * they come in (the root posted first and copies in pieces, lane_post_ref): DRED_OK once
 * all are; DRED_ERR_PROC_FAILED when the post is no longer seq's (we were given up for
 * dead); DRED_ERR_ROOT_FAILED when the root was declared failed before its data was all
 * in (it never will be); the service's status when it died meanwhile. */
static int lane_copy_pieces(dred_rt_t *rt, dred_inst_t *in, dred_meet_ring_t *r, const char *src,
                            char *dst) {
  uint64_t have = 0, t0 = 0, asked = 0, now;
  for (;;) {
    uint64_t avail = dred_meet_fast_progress(r, in->meet_seq, in->root);
    if (avail == UINT64_MAX) return DRED_ERR_PROC_FAILED;
    if (avail > in->bytes) avail = in->bytes;
    if (avail > have) { /* (all at once when the root copied before posting) */
      memcpy(dst + have, src + have, avail - have);
      if ((have = avail) == in->bytes) return DRED_OK; /* lane_copy checks the post after */
      t0 = 0;
      continue;
    }
    /* the root is in its call, copying: its next piece comes, unless it died */
    if (dred_meet_fast_gone(r, in->root)) return DRED_ERR_ROOT_FAILED;
    now = uv_hrtime();
    if (t0 == 0) t0 = asked = now;
    if (now - asked >= PIECE_DEAD_NS) {
      int dead = service_dead(rt);
      asked = now;
      if (dead != 0) return dead;
    }
    if (now - t0 >= PIECE_SPIN_NS) {
      struct timespec ts = {0, (long)PIECE_NAP_NS};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
}

/* A bcast member served from its root's post, which names the block holding the data
 * (dred_meetpath__taken holds that reference): the data copied from there -- as the root's pieces
 * come, when it posted before its data was in -- the post found still seq's after the
 * copy (else it may be a later collective's: we were given up for dead), then the ack --
 * whatever happened, nothing of seq is read any more. */
static int lane_copy(dred_rt_t *rt, dred_inst_t *in) {
  dred_meet_ring_t *r = in->tag < 0 ? in->group->meet_ring : in->meet_ring;
  dred_meet_ref_t ref;
  const char *src;
  char *dst = result_dst(in);
  int st = DRED_OK;
  memcpy(&ref, dred_meetpath__taken, sizeof ref);
  src = ref.len == in->bytes ? dred_meetpath_peer_block(rt, in, in->root, ref.worker, ref.off, ref.len)
                             : NULL;
  if (dst == NULL) {
    st = DRED_ERR_NOMEM;
  } else if (src == NULL) {
    st = DRED_ERR_INTERNAL; /* logged by dred_meetpath_peer_block, or a size we agreed on */
  } else if ((st = lane_copy_pieces(rt, in, r, src, dst)) == DRED_OK) {
    in->res_have = in->bytes;
    if (!dred_meet_fast_still(r, in->meet_seq, in->root)) st = DRED_ERR_PROC_FAILED;
  }
  dred_meet_fast_done(r, in->meet_seq, in->member);
  return st;
}

/* An allreduce member, or a reduce's root, served in the lane by reference (dred_meetpath__taken
 * holds the reference of every member whose operand it reads, at k x its size): those
 * operands folded from their blocks in rank order into our result -- an allreduce
 * member's own from the copy it posted, since its result may be where its operand is (in
 * place); a reduce root's is in acc already, where it folds -- the posts found still
 * seq's after the fold (else a block may hold a later collective's operand: we were
 * given up for dead), then the ack. */
static int lane_fold_split(dred_rt_t *rt, dred_inst_t *in, dred_meet_ring_t *r,
                           const char *const *src, char *dst);

static int lane_fold(dred_rt_t *rt, dred_inst_t *in) {
  const char *src[DRED_MEET_FAST_MEMBERS] = {NULL};
  dred_meet_ring_t *r = in->tag < 0 ? in->group->meet_ring : in->meet_ring;
  uint32_t n = in->group->n, k;
  char *dst = result_dst(in), *tmp = NULL;
  int st = DRED_OK;
  int reduce = in->kind == PROTO_KIND_REDUCE;
  for (k = 0; k < n && st == DRED_OK; k++) {
    dred_meet_ref_t ref;
    memcpy(&ref, dred_meetpath__taken + k * sizeof ref, sizeof ref);
    if (k == in->member)
      src[k] = reduce ? NULL : in->group->lane_blk[in->meet_seq % DRED_MEET_DEPTH].p;
    else if (ref.len != in->bytes ||
             (src[k] = dred_meetpath_peer_block(rt, in, k, ref.worker, ref.off, ref.len)) == NULL)
      st = DRED_ERR_INTERNAL; /* logged by dred_meetpath_peer_block, or a size we agreed on */
  }
  if (st == DRED_OK && dst == NULL) st = DRED_ERR_NOMEM;
  if (!reduce && lane_splits(rt, in)) {
    if (st == DRED_OK) st = lane_fold_split(rt, in, r, src, dst);
    else /* we fold no part: the peers fold ours */
      (void)dred_meet_fast_progress_cas(r, in->meet_seq, in->member,
                                        part_word(in->meet_seq, PART_OPEN, 0),
                                        part_word(in->meet_seq, PART_NONE, 0));
  } else {
    if (st == DRED_OK) tmp = dred_fold_tmp(in, &st);
    if (st == DRED_OK)
      st = reduce ? dred_fold_failed(in, dred_fold(in, src, n, in->member, dst, 0, in->count, tmp))
                  : dred_fold_chunk(in, src, n, 1, 0, dst, 1, tmp);
    free(tmp);
  }
  for (k = 0; k < n && st == DRED_OK; k++)
    if (k != in->member && !dred_meet_fast_still(r, in->meet_seq, k)) st = DRED_ERR_PROC_FAILED;
  if (st == DRED_OK) in->res_have = in->bytes;
  dred_meet_fast_done(r, in->meet_seq, in->member);
  return st;
}


static int lane_fold_split(dred_rt_t *rt, dred_inst_t *in, dred_meet_ring_t *r,
                           const char *const *src, char *dst) {
  uint32_t n = in->group->n, me = in->member, i, j;
  uint64_t seq = in->meet_seq, pending = 0, e0, ne, limit = LANE_PART_WAIT_NS, idle = 0;
  size_t ext = in->ti.extent;
  char *own = in->group->lane_blk[seq % DRED_MEET_DEPTH].p, *tmp;
  int st = DRED_OK, late = 0;

  tmp = dred_fold_tmp(in, &st);
  if (st != DRED_OK) {
    (void)dred_meet_fast_progress_cas(r, seq, me, part_word(seq, PART_OPEN, 0),
                                      part_word(seq, PART_NONE, 0));
    return st;
  }
  for (j = 0; j < n; j++) pending |= (uint64_t)1 << j;
  while (pending != 0 && st == DRED_OK) {
    int moved = 0;
    for (i = 0; i < n && st == DRED_OK; i++) { /* ours first, then from the next member on */
      uint64_t w, t0;
      uint32_t h;
      int state;
      j = (me + i) % n;
      if (!(pending & ((uint64_t)1 << j))) continue;
      w = dred_meet_fast_progress(r, seq, j);
      state = part_state(w, seq, n, &h);
      dred_meet_chunk_range(in->count, n, j, &e0, &ne);
      if (state == PART_OPEN) { /* claim it, fold it where the others copy it from */
        if (!dred_meet_fast_progress_cas(r, seq, j, w, part_word(seq, PART_CLAIMED, me)))
          continue; /* a peer claimed it first: look again */
        t0 = uv_hrtime();
        st = dred_fold_chunk_out(in, src, n, e0, ne, own + in->bytes + e0 * ext, dst, tmp);
        if (4 * (uv_hrtime() - t0) > limit) limit = 4 * (uv_hrtime() - t0);
        (void)dred_meet_fast_progress_cas(r, seq, j, part_word(seq, PART_CLAIMED, me),
                                          part_word(seq, st == DRED_OK ? PART_FOLDED : PART_NONE, me));
      } else if (state == PART_FOLDED) { /* copy it from its folder's block */
        dred_meet_ref_t ref;
        const char *blk = own;
        memcpy(&ref, dred_meetpath__taken + h * sizeof ref, sizeof ref);
        if (h != me &&
            (blk = dred_meetpath_peer_block(rt, in, h, ref.worker, ref.off, 2 * in->bytes)) == NULL)
          st = DRED_ERR_INTERNAL; /* logged there */
        else
          memcpy(dst + e0 * ext, blk + in->bytes + e0 * ext, ne * ext);
      } else if (state == PART_CLAIMED && !late) {
        continue; /* its folder is at it */
      } else { /* not coming (PART_NONE, a post not seq's), or its folder stalled */
        st = dred_fold_chunk(in, src, n, n, j, dst, 1, tmp);
      }
      pending &= ~((uint64_t)1 << j);
      moved = 1;
    }
    if (moved || pending == 0) {
      idle = 0;
    } else {
      uint64_t now = uv_hrtime();
      if (idle == 0) idle = now;
      late = now - idle >= limit;
      sched_yield();
    }
  }
  free(tmp);
  return st;
}

/* A small collective's result from the operands taken (the same bytes the slot or the
 * posts held: the same fold, the same result as settle's): a bcast's non-root copies the
 * root's data, an allreduce's member and a reduce's root fold.  Returns the status. */
int dred_lanepath__taken_result(dred_rt_t *rt, dred_inst_t *in) {
  char *dst;
  if (in->meet_lane_ref) return in->kind == PROTO_KIND_BCAST ? lane_copy(rt, in) : lane_fold(rt, in);
  if (in->kind == PROTO_KIND_BCAST && !in->is_root) {
    if ((dst = result_dst(in)) == NULL) return DRED_ERR_NOMEM;
    if (in->bytes > 0) memcpy(dst, dred_meetpath__taken + (size_t)in->root * in->bytes, in->bytes);
    in->res_have = in->bytes;
    return DRED_OK;
  }
  if (in->kind == PROTO_KIND_ALLREDUCE || (in->kind == PROTO_KIND_REDUCE && in->is_root))
    return dred_dp_inline_fold(rt, in, dred_meetpath__taken, in->group->n);
  return DRED_OK;
}

int dred_lanepath_finish(dred_rt_t *rt, dred_inst_t *in) {
  int st = in->meet_status;
  if (st == DRED_OK) st = dred_lanepath__taken_result(rt, in);
  if (in->meet_fast_all)
    __atomic_store_n(&in->group->meet_fast_next, in->meet_seq + 1, __ATOMIC_RELAXED);
  return dred_rt_inst_end_unseen(rt, in, st);
}

/* ---- Nonblocking calls in the fast lane (meet.h, "Nonblocking calls") ----
 *
 * A small nonblocking reduce or allreduce of an auto-tagged stream posts there as a
 * blocking call does, and returns a future; the instance waits in rt->meetq (INST_MEET,
 * meet_lane_nb) like a collective met in the slot, and is settled the same way -- by its
 * waits, its future's release, and the runtime thread's turns -- with the lane's look
 * instead of the slot's: resolved there (every member posted), it takes its outcome from
 * the posts and gives its ack; told to go the slot's way, it joins the slot, where whoever
 * opened it recorded its post already (its arrival only joins), or arrives now, or goes to
 * dred-master when its seq spilled. */

int dred_lanepath_post(dred_rt_t *rt, dred_inst_t *in) {
  dred_group_t *g = in->group;
  lane_post_t lp;
  size_t bytes;
  /* an operand that fits its post (the slot's small path, within a post), and no bcast: a
   * bcast's non-roots watch for their root's post, which needs their thread */
  if (!rt->cfg.meet_fast_nb || in->kind == PROTO_KIND_BCAST || in->bytes > DRED_MEET_FAST_DATA ||
      !meet_small(in) || !lane_prepare(rt, in, 1, &lp))
    return 0;
  bytes = publishes(in) ? in->bytes : 0;
  if (!dred_meet_fast_post_as(lp.r, lp.seq, in->member, &lp.p, bytes > 0 ? operand_of(in) : NULL,
                              bytes, lp.peers_past, lp.how))
    return 0; /* the slot's way, as the call goes on */
  __atomic_or_fetch(&g->lane_nb_open, lane_bit(lp.seq), __ATOMIC_ACQ_REL);
  in->meet_seq = lp.seq;
  return 1;
}

/* Nothing of ours reads seq's posts any more (its ack is given): we may post there again. */
static void lane_close(dred_inst_t *in) {
  __atomic_and_fetch(&in->group->lane_nb_open, ~lane_bit(in->meet_seq), __ATOMIC_ACQ_REL);
}

void dred_lanepath_join(dred_rt_t *rt, dred_inst_t *in) {
  dred_meet_ring_t *r = in->group->meet_ring;
  dred_meetpath_join(rt, in, r, dred_meet_slot_at(r, in->meet_seq), in->meet_seq);
  in->meet_lane_nb = 1;
  in->fut->meet_ring = r;
  __atomic_store_n(&in->fut->meet_lane, 1, __ATOMIC_RELEASE);
}

void dred_lanepath_cancel(dred_inst_t *in) {
  dred_meet_fast_done(in->group->meet_ring, in->meet_seq, in->member);
  lane_close(in);
}

/* The slot's way for a posted nonblocking call (its look said so and gave its ack): it
 * arrives -- only joining, when whoever opened the slot recorded its post -- or goes to
 * dred-master (its seq spilled), as a spilled slot's members do (reroute).  Claimed;
 * returns as dred_meetpath_settle. */
static int lane_to_slot(dred_rt_t *rt, dred_inst_t *in) {
  int met = 0, taken = 0, dead, dead_status, wake;
  lane_close(in);
  uv_mutex_lock(&rt->lock);
  in->meet_lane_nb = 0;
  __atomic_store_n(&in->fut->meet_lane, 0, __ATOMIC_RELEASE);
  dead = rt->dead;
  dead_status = rt->dead_status;
  if (!dead) {
    dred_queue_remove(&in->qlink); /* from rt->meetq: arriving joins it again */
    met = dred_meetpath_arrive(rt, in, 0) == 1;
    if (met) {
      taken = in->meet_taken;
      if (!taken) in->meet_claimed = 0; /* a slot member now: whoever looks next settles it */
    } else {
      in->meet_claimed = 0;
      dred_meetpath__to_master(rt, in); /* its seq spilled (arriving said so, and counted it) */
    }
  }
  uv_mutex_unlock(&rt->lock);
  if (dead) { /* the service died: what it knew of is ended already */
    wake = dred_rt_inst_finish(rt, in, dead_status != DRED_OK ? dead_status : DRED_ERR_MASTER_LOST);
    if (wake) uv_async_send(&rt->wake);
    return 1;
  }
  if (taken) {
    dred_meetpath_finish_taken(rt, in);
    return 1;
  }
  if (met) return 0;
  uv_async_send(&rt->wake);
  return 2;
}

/* A posted nonblocking call, claimed: its look, then its outcome from the posts, the
 * slot's way, or -- when `status` ends it here (the service died, finalize's deadline) and
 * the lane has not resolved -- that status (its post stays for the peers).  Returns as
 * dred_meetpath_settle. */
int dred_lanepath__settle(dred_rt_t *rt, dred_inst_t *in, int status) {
  dred_meet_ring_t *r = in->group->meet_ring;
  uint64_t seq = in->meet_seq;
  int st = DRED_OK, rc, clean = 0, wake;
  rc = dred_meet_fast_look(r, seq, in->member, dred_meetpath__taken, sizeof dred_meetpath__taken,
                           &st);
  if (rc < 0) return lane_to_slot(rt, in);
  if (rc == 0 && status == DRED_OK) {
    uv_mutex_lock(&rt->lock);
    in->meet_claimed = 0;
    uv_mutex_unlock(&rt->lock);
    return 0;
  }
  if (rc == 0) {
    st = status;
  } else {
    clean = rc == 1 && dred_meet_fast_clean(r, seq);
    /* (the operands are copied out already) */
    if (st == DRED_OK) st = dred_lanepath__taken_result(rt, in);
  }
  dred_meet_fast_done(r, seq, in->member);
  lane_close(in);
  if (clean) __atomic_store_n(&in->group->meet_fast_next, seq + 1, __ATOMIC_RELAXED);
  wake = dred_rt_inst_finish(rt, in, st);
  if (wake) uv_async_send(&rt->wake);
  return 1;
}
