/*
 * meetpath.c -- collectives of one-node groups (reduce, allreduce, bcast), met in shared
 * memory (lib/shm/meet.h) instead of through dred-master.
 *
 * Which collectives.  Every one of a group whose members all live on this node, when the
 * job agreed to use the meeting place (DRED_MEET=1 in every process, shared memory on):
 * auto-tagged ones in the group's auto stream, slot = auto sequence number, and explicit
 * tags each in a stream of their own, slot = the tag's use count and kind -- both the same
 * in every member without a message.  A member publishes an operand when the collective
 * reads it (a reduce's non-roots, an allreduce's every member, a bcast's root).  A small
 * one (n x bytes <= DRED_MEET_DATA) is copied into the slot; any other is named by
 * reference to a block of this process's shared pool (acc itself, or a copy made by
 * dred_meetpath_prepare outside the locks).  With no pool room for that block the slot
 * spills and everyone goes to dred-master (the earlier arrivals are re-routed here, by
 * whichever thread looks next).
 *
 * Who finishes it.  Nothing is sent, so no END comes: the thread that looks at the
 * collective once its slot decided finishes it -- the application thread in
 * dred_future_get / _wait / _is_done / _free, or the runtime thread when this process
 * finalizes, loses dred-master, or learns a member failed.  meet_claimed (under rt->lock)
 * makes that exactly one of them at a time.  A small collective whose outcome was already
 * OK at its arrival (the slot's dred_meet_arrive_take) is finished by its own call right
 * after it arrived, from the operands it took: it never looks at the slot again.
 * Finishing is (the folds and copies are meetwork.c's, dred_meetpath__work):
 *   - a reduce's root: the fold of every operand in rank order -- small ones with
 *     dred_dp_inline_fold (the master's INLINE code, bit for bit), referenced ones read in
 *     place from the peers' pool blocks (fold_by_ref), in bounded steps when the look is
 *     a test; a non-root finishes as soon as the slot decided;
 *   - an allreduce: small, every member folds the slot's operands as a reduce root does
 *     (the same fold everywhere: bit-identical results); by reference, the members that
 *     wait claim chunks of elements, fold each into their own block, and copy every
 *     folded chunk from its holder (allreduce_by_ref): no fixed root, the work split among
 *     whoever waits, a late member's share done for it; a large operand is copied into
 *     its block after its member arrived, a chunk at a time (dred_meetpath_pieces,
 *     dred_meetpath_publish), so that the others fold behind a late member's copy --
 *     in a blocking call only the chunks the others fold (the member folds its own
 *     share from sendbuf);
 *   - a bcast: the root finishes as soon as its data is in; the others copy it from the
 *     slot or its block (bcast_copy) as soon as the root arrived, without waiting for
 *     the members still to come (dred_meet_bcast_early).
 * A block read by peers is lent (lent_t) until the slot says nobody reads it any more.
 *
 * The fast lane.  A small collective tries lanepath.c first: decided there from its
 * members' posts, it never touches a slot.  What the lane cannot decide comes here, and a
 * slot's arrival may itself be served from a bcast root's post (dred_meet_arrive_take).
 *
 * What the master sees.  Nothing per collective.  Each worker counts what met here
 * (meet_done, in its PONGs: the status socket and dredstat show it per worker).
 */
#include <sched.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/log.h"
#include "../shm/copy.h"
#include "../shm/meet.h"
#include "../engine/future.h"
#include "../engine/group.h"
#include "../engine/inst.h"
#include "../engine/robust.h"
#include "../engine/runtime.h"
#include "../engine/typecheck.h"
#include "../mpi/dataplane.h"
#include "distribute.h"
#include "lanepath.h"
#include "meetpath.h"
#include "meetpath_int.h"
#include "relay.h"

/* How long a call waits for its slot while the collective DRED_MEET_DEPTH before it still
 * holds it (a member still copying out, typically microseconds), before going through
 * dred-master instead: a caller that races ahead, as a bcast root or a reduce's non-root
 * may, no longer falls onto the slow path for it. */
#define SLOT_WAIT_NS 1000000ull
/* A bcast root's data from this size on is copied into its block after it arrived, so
 * that the members' copies overlap its own, PUBLISH_PIECE at a time; smaller data is
 * copied before (one piece would only add a wait for the count).  Where every process of
 * the node has a core (DRED_MEET_PIECES) the members wait awake for each piece, and the
 * overlap pays from PUBLISH_PERCORE_MIN in pieces of an eighth of the data, at least a
 * quarter of PUBLISH_PIECE (p = 2 on the development machine: 64 KiB 16-18 us copied
 * before arriving, 11-12 us in 16 KiB pieces; 128 KiB 20-21 us in 64 KiB pieces, 18-19 in
 * 16 KiB ones; docs/performance.md, session 43); where processes outnumber cores a piece
 * would only wake a member to find the next one missing. */
#define PUBLISH_MIN (128u * 1024u)
#define PUBLISH_PERCORE_MIN (16u * 1024u)
#define PUBLISH_PIECE (64u * 1024u)

static int lent_reclaim(dred_rt_t *rt, int all);

static void lend_locked(dred_rt_t *rt, dred_meet_slot_t *slot, uint64_t seq, uint32_t member,
                        char *p, int64_t off, size_t bytes);

_Thread_local _Alignas(64) unsigned char dred_meetpath__taken[DRED_MEET_DATA];

void dred_meetpath_init(dred_rt_t *rt) {
  int mine, all = 0, ok = 0, allok = 0, nrank = 0, du = 0;
  MPI_Aint sz = 0;
  void *base = NULL;
  size_t bytes = dred_meet_table_bytes();

  dred_queue_init(&rt->meetq);
  dred_queue_init(&rt->meet_lent);
  dred_queue_init(&rt->relayq);
  dred_queue_init(&rt->partialq);
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
  {
    int nnode = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    MPI_Comm_size(rt->node, &nnode);
    int percore = ncpu > 0 && nnode <= ncpu;
    dred_meet_set_spin(percore ? rt->cfg.meet_spin_us * 1000u : 0u); /* see dred_meet_set_spin */
    /* A shared fold runs in parallel only where the helpers have cores of their own: with
     * more processes than cores it only adds a combine pass at the root (reduce_shares). */
    rt->meet_share = rt->cfg.meet_share == 1 || (rt->cfg.meet_share == 2 && percore);
    /* folds overlap a member's copy only on cores of their own; oversubscribed, every
     * piece would only wake a waiter to find the next one missing */
    rt->meet_pieces = rt->cfg.meet_pieces == 1 || (rt->cfg.meet_pieces == 2 && percore);
  }
}

void dred_meetpath_finalize(dred_rt_t *rt, int collective) {
  (void)lent_reclaim(rt, 1); /* the pool goes with the data plane */
  if (collective && rt->meet_win != MPI_WIN_NULL) MPI_Win_free(&rt->meet_win);
  rt->meet = NULL;
}

/* A member of `g` that the master declared failed before we arrived: its slot would wait
 * for it for ever, and the runtime's sweep (dred_meetpath_on_failed) ran already. */
static void arrive_after_deaths(dred_rt_t *rt, dred_group_t *g, dred_meet_ring_t *r) {
  uint32_t k;
  if (rt->nfailed == 0) return;
  for (k = 0; k < g->n; k++)
    if (g->workers[k] < (uint32_t)rt->world_size && rt->failed[g->workers[k]])
      dred_meet_member_failed(r, k, DRED_ERR_PROC_FAILED);
}



/* acc is a block of our own pool that nothing else owns: peers may read it in place. */
static int acc_is_plain_pool(const dred_inst_t *in) {
  return !in->inl && in->acc != NULL && in->pool_off >= 0 && !in->acc_is_app &&
         in->app_blk == NULL && in->repl == NULL;
}


/* acc itself may be the block peers read: a plain pool block, and not where this member's
 * result goes (an allreduce member that combines into acc publishes a copy, since peers
 * read its operand while chunks of the result arrive). */
static int acc_published(const dred_inst_t *in) {
  return acc_is_plain_pool(in) && !(in->kind == PROTO_KIND_ALLREDUCE && in->is_root);
}


/* An allreduce by reference bound for this node's meeting place, whose operand is in
 * sendbuf apart from recvbuf: its copy into shared memory may be put off. */
static int allreduce_from_sendbuf(const dred_rt_t *rt, const dred_inst_t *in) {
  return in->kind == PROTO_KIND_ALLREDUCE && !in->inl && rt->meet != NULL &&
         !in->group->spans_nodes && in->sendbuf != MPI_IN_PLACE && in->sendbuf != in->recvbuf;
}

int dred_meetpath_defers_acc(const dred_rt_t *rt, const dred_inst_t *in) {
  return in->is_root && in->bytes > 0 && allreduce_from_sendbuf(rt, in);
}

/* An allreduce operand from this size is written into its block after its member arrived,
 * piece by piece (DRED_MEET_OP_PIECES), so that the members already waiting fold each
 * chunk as soon as its bytes are in, instead of after the whole copy: a late member's copy
 * and the folds overlap (seed 000's pipelining, here for the operand).  A blocking call's
 * from PIECES_MIN_BLOCKING: it then copies in only the chunks its peers fold, and folds
 * its own share from sendbuf (p = 2 on the development guest, 128-384 KiB: 8-15 % less
 * time than copied whole before arriving; docs/performance.md, session 57).  -D them to
 * compare builds. */
#ifndef PIECES_MIN
#define PIECES_MIN (512u * 1024u)
#endif
#ifndef PIECES_MIN_BLOCKING
#define PIECES_MIN_BLOCKING (128u * 1024u)
#endif

int dred_meetpath_pieces(const dred_rt_t *rt, const dred_inst_t *in) {
  /* (with two members or more: a blocking call's operand then never takes the fast
   * lane, lanepath.c's LANE_FOLD_MAX) */
  uint64_t min = in->blocking && in->group->n >= 2 ? PIECES_MIN_BLOCKING : PIECES_MIN;
  return rt->meet_pieces && in->bytes >= min && in->ti.layout == DRED_LAYOUT_DIRECT &&
         !in->refused && in->join_error == DRED_OK && allreduce_from_sendbuf(rt, in);
}

/* The collective leaves the meeting place (dred-master takes it): acc must hold the
 * operand a deferred member 0 kept out of it -- from the copy made for its peers when it
 * is in (sendbuf may be gone once the future was freed), else from sendbuf, which is
 * still the caller's: no copy yet, or one still to be made after the arrival
 * (meet_pipelined), which only a spill at the arrival itself can end first, in the call. */
static void undefer(dred_inst_t *in) {
  if (!in->acc_deferred) return;
  memcpy(in->acc, in->meet_blk != NULL && !in->meet_pipelined ? (const void *)in->meet_blk : in->sendbuf,
         in->bytes);
  in->acc_deferred = 0;
}


/* A block lent to a met reduction: ours, read by its root until the slot says otherwise. */
typedef struct {
  dred_queue_t link; /* rt->meet_lent */
  dred_meet_slot_t *slot;
  uint64_t seq;
  uint32_t member;
  char *p;
  int64_t off;
  size_t bytes;
} lent_t;

/* Free the lent blocks their roots are done with.  `all`: every one (the pool goes). */
static int lent_reclaim(dred_rt_t *rt, int all) {
  dred_queue_t done, *q, *nx;
  int n = 0;
  dred_queue_init(&done);
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH_SAFE(q, nx, &rt->meet_lent) {
    lent_t *l = DRED_QUEUE_DATA(q, lent_t, link);
    if (all || !dred_meet_needs(l->slot, l->seq, l->member)) {
      dred_queue_remove(q);
      dred_queue_insert_tail(&done, q);
      __atomic_store_n(&rt->meet_nlent, rt->meet_nlent - 1, __ATOMIC_RELAXED);
    }
  }
  uv_mutex_unlock(&rt->lock);
  DRED_QUEUE_FOREACH_SAFE(q, nx, &done) {
    lent_t *l = DRED_QUEUE_DATA(q, lent_t, link);
    dred_queue_remove(q);
    if (!all) dred_dp_buf_free(rt, l->bytes, l->p, l->off, 0);
    free(l);
    n++;
  }
  return n;
}

/* Whether any block is lent: a peek without rt->lock, so that the common case (none)
 * takes no lock; a block lent meanwhile is reclaimed by a later look. */
static int lent_any(dred_rt_t *rt) {
  return __atomic_load_n(&rt->meet_nlent, __ATOMIC_RELAXED) != 0;
}

void dred_meetpath_reclaim_lent(dred_rt_t *rt) {
  if (lent_any(rt)) (void)lent_reclaim(rt, 0);
}

/* Only operands whose copy takes longer than the look: below, the arrival comes as soon. */
#define PREWAKE_MIN_BYTES (64u * 1024u)

void dred_meetpath_prewake(dred_rt_t *rt, dred_inst_t *in) {
  dred_group_t *g = in->group;
  /* auto-tagged ones whose group has looked its ring up (read without rt->lock, as the
   * fast lane does); an explicit tag's stream is looked up at its arrival */
  if (rt->meet == NULL || g->spans_nodes || in->tag >= 0 || in->bytes < PREWAKE_MIN_BYTES ||
      !publishes(in) || !__atomic_load_n(&g->meet_looked, __ATOMIC_ACQUIRE))
    return;
  dred_meet_prewake(g->meet_ring, (uint64_t)(-1 - in->tag));
}

void dred_meetpath_prepare(dred_rt_t *rt, dred_inst_t *in) {
  const void *src;
  if (rt->meet == NULL || in->group->spans_nodes || !publishes(in) || in->refused ||
      in->join_error != DRED_OK || in->bytes == 0 || meet_small(in) || acc_published(in))
    return;
  if (lent_any(rt)) (void)lent_reclaim(rt, 0);
  src = operand_of(in);
  if (src == NULL) return;
  if (dred_dp_pool_block(rt, in->bytes, &in->meet_blk, &in->meet_blk_off) != DRED_OK) {
    in->meet_blk = NULL; /* no room: this reduction will spill to dred-master */
    return;
  }
  if ((in->kind == PROTO_KIND_BCAST &&
       (in->bytes >= PUBLISH_MIN || (rt->meet_pieces && in->bytes >= PUBLISH_PERCORE_MIN))) ||
      (in->kind == PROTO_KIND_ALLREDUCE && dred_meetpath_pieces(rt, in))) {
    in->meet_pipelined = 1; /* copied after arriving, piece by piece: dred_meetpath_publish */
    return;
  }
  /* written every call and read by peers after it: past our cache (copy.c) */
  dred_shm_copy_in(in->meet_blk, src, in->bytes, dred_dp_stream_min(in));
}

static void meet_blk_free(dred_rt_t *rt, dred_inst_t *in) {
  /* Set only until the root's data is in, and settle never claims before that: so it is
   * clear here unless the call is being taken back before its arrival.  Not written when
   * clear, since threads waiting on the same future read it under rt->lock meanwhile. */
  if (in->meet_publish) in->meet_publish = 0;
  in->meet_pipelined = 0;
  if (in->meet_blk == NULL) return;
  dred_dp_buf_free(rt, in->bytes, in->meet_blk, in->meet_blk_off, 0);
  in->meet_blk = NULL;
  in->meet_blk_off = -1;
}

void dred_meetpath_unprepare(dred_rt_t *rt, dred_inst_t *in) { meet_blk_free(rt, in); }

/* The ring of the stream `in` belongs to (its group's auto-tagged reductions, or its
 * explicit tag), or NULL.  Under rt->lock. */
static dred_meet_ring_t *ring_for(dred_rt_t *rt, dred_inst_t *in, uint64_t *seq) {
  dred_group_t *g = in->group;
  int64_t stream = proto_key_tag(in->tag);
  if (in->tag < 0) {
    *seq = (uint64_t)(-1 - in->tag);
    if (!g->meet_looked) {
      g->meet_ring = dred_meet_ring_of(rt->meet, g->id, g->n, g->workers);
      __atomic_store_n(&g->meet_looked, 1, __ATOMIC_RELEASE); /* read without the lock: fast */
      if (g->meet_ring == NULL && g->n <= DRED_MEET_MAX_MEMBERS)
        DRED_INFO("group %016llx (%u members): the node's meeting place is full (%d streams); "
                  "its auto-tagged reductions go through dred-master",
                  (unsigned long long)g->id, g->n, DRED_MEET_GROUPS);
    }
    return g->meet_ring;
  }
  *seq = proto_key_use(in->tag);
  if (!in->meet_ring_looked) {
    in->meet_ring = dred_meet_stream_of(rt->meet, g->id, stream, g->n, g->workers);
    in->meet_ring_looked = 1;
  }
  return in->meet_ring;
}

int dred_meetpath_slot_held(dred_rt_t *rt, dred_inst_t *in) {
  dred_meet_ring_t *r;
  uint64_t seq = 0;
  return rt->meet != NULL && !in->group->spans_nodes && !rt->dead &&
         (r = ring_for(rt, in, &seq)) != NULL && dred_meet_slot_held(r, seq);
}

void dred_meetpath_wait_slot(dred_rt_t *rt, dred_inst_t *in) {
  uint64_t t0 = uv_hrtime();
  for (;;) {
    int held;
    (void)dred_meetpath_reclaim(rt); /* our own decided ones release their slots */
    sched_yield();
    uv_mutex_lock(&rt->lock);
    held = dred_meetpath_slot_held(rt, in);
    uv_mutex_unlock(&rt->lock);
    if (!held || uv_hrtime() - t0 > SLOT_WAIT_NS)
      return; /* free; or the holder is slow: this one goes through dred-master (arrive decides) */
  }
}

int dred_meetpath_arrive(dred_rt_t *rt, dred_inst_t *in, int held_returns) {
  dred_group_t *g = in->group;
  proto_params_t p;
  dred_meet_arrival_t a;
  dred_meet_ref_t op;
  dred_meet_ring_t *r;
  uint64_t seq = 0;
  const void *data = NULL;
  int wants;

  in->meet_mask = 0;
  if (rt->meet == NULL || g->spans_nodes) {
    undefer(in);
    return 0;
  }
  if ((r = ring_for(rt, in, &seq)) == NULL) {
    undefer(in);
    meet_blk_free(rt, in);
    return 0;
  }
  /* The parameters this member's READY would carry, from the one READY builder: the slot
   * compares exactly what dred-master would. */
  p = dred_rt_params(in);
  /* Where our operand is, if the collective reads ours (publishes).  Every member of a
   * one-node group meets.  A small group's operands are copied into the slot (members
   * decide that alike, from n and the operand's size); any other operand is read in place
   * from a block of our pool, or -- when the pool had no room for one -- the collective
   * spills. */
  memset(&op, 0, sizeof op);
  wants = 1;
  if (!publishes(in) || in->join_error != DRED_OK) {
    op.kind = DRED_MEET_OP_NONE;
  } else if (meet_small(in)) {
    op.kind = DRED_MEET_OP_SLOT;
    op.len = in->bytes;
    data = operand_of(in);
  } else if (acc_published(in) || in->meet_blk != NULL) {
    /* an allreduce's operand still to be copied in: its peers fold behind the copy */
    op.kind = in->kind == PROTO_KIND_ALLREDUCE && in->meet_pipelined ? DRED_MEET_OP_PIECES
                                                                     : DRED_MEET_OP_POOL;
    op.worker = (uint32_t)rt->world_rank;
    op.off = in->meet_blk != NULL ? in->meet_blk_off : in->pool_off;
    op.len = in->bytes;
  } else {
    op.kind = DRED_MEET_OP_NOPLACE;
  }
  /* A small collective's member takes its outcome at its arrival when it is already OK
   * there (dred_meet_arrive_take): the operands it reads are copied to dred_meetpath__taken. */
  if (dred_meet_arrive_take(r, seq, in->member, &p, wants, &op, data, in->join_error,
                            meet_small(in) && in->join_error == DRED_OK ? dred_meetpath__taken
                                                                        : NULL,
                            sizeof dred_meetpath__taken, held_returns, &a) != 0) {
    DRED_ERROR("reduction (tag " PROTO_KEY_FMT ") could not arrive in its meeting slot: "
               "going through dred-master", PROTO_KEY_ARG(in->tag));
    undefer(in);
    meet_blk_free(rt, in);
    return 0;
  }
  if (a.held) return 2; /* nothing recorded: the caller waits a moment, then arrives */
  if (a.lane) {
    /* served from a bcast root's post in the fast lane (meet.h): taken, with its outcome;
     * nothing of it is in the slot */
    in->meet_status = a.status;
    if (a.lane_ref) {
      memcpy(dred_meetpath__taken, a.lane_data, sizeof(dred_meet_ref_t)); /* lane_copy's */
      in->meet_lane_ref = 1;
    } else if (a.status == DRED_OK && in->kind == PROTO_KIND_BCAST && !in->is_root) {
      if ((size_t)(in->root + 1) * in->bytes > sizeof dred_meetpath__taken ||
          in->bytes > sizeof a.lane_data)
        in->meet_status = DRED_ERR_INTERNAL; /* it agreed with the root's: cannot happen */
      else if (in->bytes > 0)
        memcpy(dred_meetpath__taken + (size_t)in->root * in->bytes, a.lane_data, in->bytes);
    }
    undefer(in);
  }
  if (!a.meet) {
    in->meet_mask = a.mask;
    rt->meet_spilled++;
    undefer(in);
    meet_blk_free(rt, in); /* dred-master reads acc / the inline data, as for any reduction */
    return 0;
  }
  in->meet_by_ref = op.kind == DRED_MEET_OP_POOL || op.kind == DRED_MEET_OP_PIECES;
  /* a bcast root by reference tells the slot when its data is in, and an allreduce member
   * how far its operand is (dred_meetpath_publish) */
  in->meet_publish = (in->kind == PROTO_KIND_BCAST && in->meet_by_ref) ||
                     op.kind == DRED_MEET_OP_PIECES;
  dred_meetpath_join(rt, in, r, a.slot, seq);
  if (a.taken) {
    /* released already: nobody else acts on it (settle leaves a claimed one alone), and
     * its own call finishes it as soon as rt->lock is let go */
    in->meet_taken = 1;
    in->meet_claimed = 1;
  }
  return 1;
}

/* The ring of a one-node group's auto-tagged stream, looked up once under rt->lock and
 * never changed after (read without it once looked); NULL when it has none. */
dred_meet_ring_t *dred_meetpath__auto_ring(dred_rt_t *rt, dred_inst_t *in) {
  dred_group_t *g = in->group;
  dred_meet_ring_t *r;
  uint64_t seq;
  if (__atomic_load_n(&g->meet_looked, __ATOMIC_ACQUIRE)) return g->meet_ring;
  uv_mutex_lock(&rt->lock);
  r = ring_for(rt, in, &seq);
  /* members declared failed before the ring existed: the runtime's sweep could not mark
   * them in it (later deaths it marks itself) */
  if (r != NULL) arrive_after_deaths(rt, g, r);
  uv_mutex_unlock(&rt->lock);
  return r;
}

void dred_meetpath_finish_taken(dred_rt_t *rt, dred_inst_t *in) {
  int st = in->meet_status, wake; /* DRED_OK, unless served from the fast lane otherwise */
  if (st == DRED_OK) st = dred_lanepath__taken_result(rt, in);
  meet_blk_free(rt, in);
  wake = dred_rt_inst_finish(rt, in, st);
  if (lent_any(rt)) (void)lent_reclaim(rt, 0);
  if (wake) uv_async_send(&rt->wake);
}

/* `in`, out of the meeting place with nothing of it there, goes to dred-master as any
 * collective does: the runtime thread announces it (its submit queue).  Under rt->lock,
 * `in` on no queue. */
void dred_meetpath__to_master(dred_rt_t *rt, dred_inst_t *in) {
  dred_inst_set_state(in, INST_SUBMITTED);
  if (rt->cfg.replicas > 0) rt->robust->on_operand_pooled(rt, in);
  dred_queue_insert_tail(&rt->submitq, &in->qlink);
}

/* Whether a look at `in` has something to do: its slot decided, or it is posted in the
 * lane and the lane's look would resolve. */
static int meet_lookable(dred_inst_t *in) {
  if (in->meet_lane_nb)
    return !dred_meet_fast_pending(in->group->meet_ring, in->meet_seq, in->member);
  return dred_meet_ready(in->meet_slot, in->meet_seq, in->member, in->kind == PROTO_KIND_BCAST);
}

void dred_meetpath_join(dred_rt_t *rt, dred_inst_t *in, dred_meet_ring_t *r,
                        dred_meet_slot_t *slot, uint64_t seq) {
  dred_future *f = in->fut;
  in->meet_slot = slot;
  in->meet_seq = seq;
  in->meet_fold_next = 0;
  dred_inst_set_state(in, INST_MEET);
  dred_queue_insert_tail(&rt->meetq, &in->qlink);
  /* A nonblocking call posted in the lane joined this same slot when it was posted
   * (dred_lanepath_join): its future says so already, and its application thread
   * may be reading it right now, so it is not written again (future.h: read-only once
   * handed out). */
  if (f->meet_slot != slot || f->meet_seq != seq) {
    f->meet_rt = rt;
    f->meet_slot = slot;
    f->meet_seq = seq;
    f->meet_gid = in->group_id;
    f->meet_tag = in->tag;
    f->meet_member = in->member;
    f->meet_bcast = in->kind == PROTO_KIND_BCAST;
    f->meet_prefold = prefolds(in);
  }
  arrive_after_deaths(rt, in->group, r);
}

/* The slot spilled (a member had no place for its operand): `in` goes to dred-master like
 * any reduction, with its own operand alone in acc (a root that folded early arrivals'
 * into it loads it again: its caller still waits, so sendbuf is still the reduction's).
 * Under rt->lock, `in` unclaimed in rt->meetq. */
static void reroute(dred_rt_t *rt, dred_inst_t *in) {
  dred_queue_remove(&in->qlink);
  dred_meet_release(in->meet_slot, in->meet_seq, in->member);
  undefer(in);
  if (in->meet_prefolded != 0) {
    int rc = dred_dp_load(rt, in, in->acc);
    if (rc != DRED_OK && in->join_error == DRED_OK) in->join_error = rc; /* everyone ends so */
    in->meet_prefolded = 0;
  }
  /* A bcast root's block: members served before the spill may be copying from it still
   * (dred_meet_needs), so it is lent until they are done, not freed for our next
   * collective to overwrite under them.  (dred-master gets the data from acc.) */
  if (in->kind == PROTO_KIND_BCAST && in->is_root && in->meet_by_ref && in->meet_blk != NULL) {
    lend_locked(rt, in->meet_slot, in->meet_seq, in->member, in->meet_blk, in->meet_blk_off,
                in->bytes);
    in->meet_blk = NULL;
    in->meet_blk_off = -1;
  }
  meet_blk_free(rt, in);
  in->meet_by_ref = 0;
  rt->meet_spilled++;
  dred_meetpath__to_master(rt, in);
}


/* dred_meetpath_lend's work, under rt->lock. */
static void lend_locked(dred_rt_t *rt, dred_meet_slot_t *slot, uint64_t seq, uint32_t member,
                        char *p, int64_t off, size_t bytes) {
  lent_t *l = malloc(sizeof *l);
  if (l == NULL) {
    /* Cannot remember it: never free it (a leak of one block, never a block reused while
     * a peer reads it). */
    DRED_ERROR("no memory to track a %zu-byte pool block lent to a met reduction: the block "
               "is not reused", bytes);
    return;
  }
  l->slot = slot;
  l->seq = seq;
  l->member = member;
  l->p = p;
  l->off = off;
  l->bytes = bytes;
  dred_queue_insert_tail(&rt->meet_lent, &l->link);
  __atomic_store_n(&rt->meet_nlent, rt->meet_nlent + 1, __ATOMIC_RELAXED);
}

/* A block of ours that peers read for `seq` until the slot says nobody does any more. */
void dred_meetpath_lend(dred_rt_t *rt, dred_meet_slot_t *slot, uint64_t seq, uint32_t member,
                        char *p, int64_t off, size_t bytes) {
  uv_mutex_lock(&rt->lock);
  lend_locked(rt, slot, seq, member, p, off, bytes);
  uv_mutex_unlock(&rt->lock);
}

/* Chunk c of an allreduce member's operand (DRED_MEET_OP_PIECES) from sendbuf into its
 * block, said to the slot as soon as it is in: every chunk frees one fold for the members
 * that wait.  Past our cache from DRED_SHM_STREAM_FOLD_MIN, as dred_dp_load would have
 * written it (copy.c).  On the thread that holds `in` (its call, or its claim). */
void dred_meetpath__piece_in(dred_inst_t *in, uint32_t c) {
  uint32_t nch = dred_meet_nchunks(in->count, in->bytes, in->group->n);
  size_t ext = in->ti.extent, stream_min = in->bytes >= dred_dp_stream_min(in) ? 0 : SIZE_MAX;
  char *dst = in->meet_blk != NULL ? in->meet_blk : in->acc;
  uint64_t e0, ne;
  if ((in->meet_pin >> c & 1) || c >= nch) return;
  dred_meet_chunk_range(in->count, nch, c, &e0, &ne);
  dred_shm_copy_in(dst + e0 * ext, (const char *)in->sendbuf + e0 * ext, ne * ext, stream_min);
  in->meet_pin |= (uint64_t)1 << c;
  dred_meet_piece_in(in->meet_slot, in->meet_seq, in->member, (uint64_t)1 << c);
}

/* The chunks of an allreduce member's operand that its peers read first: all of them, or
 * -- `home`: its caller waits right away, and folds its home chunks itself from sendbuf
 * (dred_meet_home) -- every other member's home, each from the bottom, in turn, as the
 * peers claim them.  1 when every chunk is in. */
static int publish_chunks(dred_inst_t *in, int home) {
  uint32_t n = in->group->n, nch = dred_meet_nchunks(in->count, in->bytes, n), c, h, i;
  uint32_t lo[DRED_MEET_MAX_MEMBERS], hi[DRED_MEET_MAX_MEMBERS], most = 0;
  if (!home) {
    for (c = 0; c < nch; c++) dred_meetpath__piece_in(in, c);
    return 1;
  }
  for (h = 0; h < n; h++) {
    dred_meet_home(nch, n, h, &lo[h], &hi[h]);
    if (hi[h] - lo[h] > most) most = hi[h] - lo[h];
  }
  for (i = 0; i < most; i++)
    for (h = 1; h < n; h++) {
      uint32_t k = (in->member + h) % n;
      if (lo[k] + i < hi[k]) dred_meetpath__piece_in(in, lo[k] + i);
    }
  return lo[in->member] == hi[in->member]; /* an empty home: everything is in */
}

void dred_meetpath_publish(dred_rt_t *rt, dred_inst_t *in) {
  dred_meet_slot_t *slot;
  const char *src;
  char *dst;
  uint64_t seq, bytes, off = 0, piece = PUBLISH_PIECE;
  int pieces, all = 1;
  uv_mutex_lock(&rt->lock);
  if (!in->meet_publish || dred_inst_state(in) != INST_MEET) {
    uv_mutex_unlock(&rt->lock);
    return;
  }
  /* `in` stays ours while meet_publish is set (settle leaves it alone) */
  slot = in->meet_slot;
  seq = in->meet_seq;
  bytes = in->bytes;
  src = operand_of(in);
  dst = in->meet_blk != NULL ? in->meet_blk : in->acc;
  /* an allreduce member's operand (DRED_MEET_OP_PIECES: never in before its arrival) */
  pieces = in->kind == PROTO_KIND_ALLREDUCE;
  uv_mutex_unlock(&rt->lock);
  if (pieces) {
    /* A blocking call keeps its home chunks out: it folds them from sendbuf, which is
     * the reduction's until the call returns.  A nonblocking one copies all of it, so
     * that nothing reads sendbuf once it returned and its peers can fold its share. */
    all = publish_chunks(in, in->blocking);
  } else { /* a bcast root's data */
    if (dst == src || !in->meet_pipelined) /* in already: acc itself, or copied before arriving */
      off = bytes;
    if (off == bytes) dred_meet_progress_set(slot, seq, bytes);
    if (rt->meet_pieces) /* an eighth, from a quarter of PUBLISH_PIECE up to all of it */
      piece = bytes / 8 < PUBLISH_PIECE / 4 ? PUBLISH_PIECE / 4
              : bytes / 8 > PUBLISH_PIECE   ? PUBLISH_PIECE
                                            : bytes / 8;
    while (off < bytes) {
      uint64_t len = bytes - off < piece ? bytes - off : piece;
      dred_shm_copy_in(dst + off, src + off, len, SIZE_MAX); /* streamed only if measured */
      off += len;
      dred_meet_progress_set(slot, seq, off);
    }
  }
  uv_mutex_lock(&rt->lock);
  in->meet_publish = 0;
  if (all) {
    in->meet_pipelined = 0; /* the block holds it all (undefer reads it from there) */
    /* a non-root's acc holds its operand from now on (member 0 folds into its acc) */
    if (pieces && !in->is_root) in->acc_deferred = 0;
  }
  uv_mutex_unlock(&rt->lock);
}

/* A non-root member met by reference finished OK: its block may still be read by the
 * root, so it is lent (freed once the slot no longer needs it) instead of freed now. */
static void lend_block(dred_rt_t *rt, dred_inst_t *in) {
  dred_meetpath_lend(rt, in->meet_slot, in->meet_seq, in->member,
                     in->meet_blk != NULL ? in->meet_blk : in->acc,
                     in->meet_blk != NULL ? in->meet_blk_off : in->pool_off, in->bytes);
  if (in->meet_blk != NULL) {
    in->meet_blk = NULL;
    in->meet_blk_off = -1;
  } else { /* acc is no longer this reduction's to free (dred_dp_acc_release) */
    in->acc = NULL;
    in->pool_off = -1;
  }
}

int dred_meetpath_settle(dred_rt_t *rt, uint64_t gid, int64_t tag, int status, uint64_t budget) {
  dred_inst_t *in;
  int st = DRED_OK, state, decided, wake, done = 1, early, early_st = DRED_OK, given_up = 0;
  int met;

  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, gid, tag);
  met = in != NULL && dred_inst_state(in) == INST_MEET;
  if (met && in->meet_publish) {
    uv_mutex_unlock(&rt->lock); /* the root's call is still putting its data in */
    return 0;
  }
  if (!met || in->meet_claimed) {
    int r = in != NULL && !met ? 2 : 1; /* re-routed to dred-master */
    uv_mutex_unlock(&rt->lock); /* finished, or being finished by another thread */
    return r;
  }
  if (in->meet_lane_nb) { /* posted in the fast lane: its look is the lane's */
    in->meet_claimed = 1;
    uv_mutex_unlock(&rt->lock);
    return dred_lanepath__settle(rt, in, status);
  }
  /* a bcast member is served once the root's data is there, whoever else came */
  state = dred_meet_look(in->meet_slot, in->meet_seq, in->member, in->kind == PROTO_KIND_BCAST,
                         &early, &early_st);
  if (state == DRED_MEET_SPILL && status == DRED_OK) {
    reroute(rt, in);
    uv_mutex_unlock(&rt->lock);
    uv_async_send(&rt->wake);
    return 2;
  }
  decided = early || state != DRED_MEET_OPEN;
  if (!decided && status == DRED_OK) {
    uv_mutex_unlock(&rt->lock);
    return 0;
  }
  in->meet_claimed = 1;
  uv_mutex_unlock(&rt->lock);

  if (!decided) {
    /* ends it for every member, unless it decided meanwhile: then that outcome stands */
    dred_meet_end(in->meet_slot, in->meet_seq, status);
  }
  if (early) {
    st = early_st;
  } else {
    (void)dred_meet_poll(in->meet_slot, in->meet_seq, &st);
    if (dred_meet_state(in->meet_slot, in->meet_seq) == DRED_MEET_SPILL)
      st = status != DRED_OK ? status : DRED_ERR_INTERNAL; /* ending it: nobody goes on */
  }
  if (st == DRED_OK) {
    int reads, r; /* this member reads peers' blocks; r: what the step said */
    st = dred_meetpath__work(rt, in, status, budget, &done, &reads, &r);
    /* Declared failed while reading (stalled past the failure timeout): the peers were
     * told nobody reads their blocks any more, so what we read may not be theirs. */
    if (st == DRED_OK && reads && dred_meet_given_up(in->meet_slot, in->meet_seq, in->member))
      st = DRED_ERR_PROC_FAILED, given_up = 1;
    if (st == DRED_OK && !done) {
      /* a bounded step (dred_future_is_done, a zero wait), or peers still folding: the
       * rest at the next look */
      uv_mutex_lock(&rt->lock);
      in->meet_claimed = 0;
      uv_mutex_unlock(&rt->lock);
      return r == 3 ? 3 : 0;
    }
  }
  /* A relay's follower (relay.c) goes to dred-master with the data, or without it when the
   * relay failed: the master decides its outcome, as anyone's.  Not when ending it here
   * (dred-master lost, finalize's deadline) or once it was given up for dead. */
  if (in->relay_follow && status == DRED_OK && !given_up) {
    dred_relay_handoff(rt, in, st == DRED_OK);
    return 2;
  }
  /* Our block may still be read by peers (the slot says until when): lent, not freed. */
  if (in->meet_by_ref)
    lend_block(rt, in);
  else
    meet_blk_free(rt, in);
  dred_meet_release(in->meet_slot, in->meet_seq, in->member);
  /* claimed, so nobody else acts on it: it leaves rt->meetq with the table, under the
   * finish's lock (dred_rt_inst_finish) */
  /* Whether dred_finalize began is read as the reduction leaves the table: one that began
   * earlier waits for it (wake its thread to say BYE), one that begins later finds it
   * gone. */
  wake = dred_rt_inst_finish(rt, in, st);
  if (lent_any(rt)) (void)lent_reclaim(rt, 0);
  if (wake) uv_async_send(&rt->wake);
  return 1;
}

/* Combining a bounded look does (dred_future_is_done, dred_future_wait(f, 0)) */
#define LOOK_BUDGET (1u << 20)
#define CLAIMED_SLICE_NS 200000ull /* another thread holds the fold: look again this soon */

void dred_meetpath_wait(dred_future *f, uint64_t timeout_ns) {
  uint64_t start = 0, now, left;
  uint32_t epoch;
  int waited = 0; /* a wait on the slot came back and it was still not ready */
  for (;;) {
    int done, r, lane;
    if (dred_future_done(f)) return;
    if (timeout_ns == UINT64_MAX) {
      left = UINT64_MAX; /* no clock to read: a blocking wait's every look counts */
    } else {
      now = uv_hrtime();
      if (start == 0) start = now;
      left = now - start >= timeout_ns ? 0 : timeout_ns - (now - start);
    }
    /* The slot's wake count before we look: an outcome that comes after the look moves
     * it, so the wait below cannot miss it (read after the look, a wake-up in between
     * would be lost, and the wait would last its whole spin). */
    lane = __atomic_load_n(&f->meet_lane, __ATOMIC_ACQUIRE);
    epoch = lane ? 0 : dred_meet_epoch(f->meet_slot); /* (the lane's waits watch its posts) */
    if (lane ? !dred_meet_fast_pending(f->meet_ring, f->meet_seq, f->meet_member)
             : dred_meet_ready(f->meet_slot, f->meet_seq, f->meet_member, f->meet_bcast)) {
      r = dred_meetpath_settle(f->meet_rt, f->meet_gid, f->meet_tag, DRED_OK,
                               timeout_ns == UINT64_MAX ? UINT64_MAX : LOOK_BUDGET);
      if (r == 0) { /* a step of the work done: more if time allows */
        if (left == 0) return;
        continue;
      }
      if (r == 3) { /* our part done; peers fold the chunks left: woken as each is */
        if (left == 0) return;
        dred_meet_wait_epoch(f->meet_slot, epoch, left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS);
        continue;
      }
      /* Finished by us; or claimed by another thread (its completion is due in moments,
       * or it did a bounded step and let go); or gone to dred-master (its END completes
       * it). */
      if (dred_future_done(f)) return;
      uv_mutex_lock(&f->mu);
      if (!f->done && left > 0) {
        uint64_t cap = r == 2 ? WAIT_SLICE_NS : CLAIMED_SLICE_NS;
        (void)uv_cond_timedwait(&f->cv, &f->mu, left < cap ? left : cap);
      }
      done = f->done;
      uv_mutex_unlock(&f->mu);
      if (done || left == 0) return;
      continue;
    }
    if (left == 0) return;
    if (waited) {
      /* The service died (master lost): dred_meetpath_fail_all ended what it found, but a
       * collective this thread was folding early then was skipped: end it here.  Looked at
       * only after a wait came back with nothing, off the path of a collective that is
       * ready at once. */
      int dead = service_dead(f->meet_rt);
      if (dead != 0) {
        (void)dred_meetpath_settle(f->meet_rt, f->meet_gid, f->meet_tag, dead, UINT64_MAX);
        uv_mutex_lock(&f->mu); /* finished by us, or in moments by the thread that holds it */
        if (!f->done) (void)uv_cond_timedwait(&f->cv, &f->mu, CLAIMED_SLICE_NS);
        uv_mutex_unlock(&f->mu);
        continue;
      }
    }
    if (lane) { /* woken by the last post (or anything that resolves the look) */
      dred_meet_fast_wait(f->meet_ring, f->meet_seq, f->meet_member,
                          left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS);
      waited = 1;
      continue;
    }
    if (f->meet_prefold && timeout_ns == UINT64_MAX) {
      /* A root in a blocking wait folds the early arrivals' operands meanwhile, woken at
       * each arrival (the count read before it looks: none is missed). */
      uint32_t arr = dred_meet_arrivals(f->meet_slot);
      if (dred_meetpath_prefold(f->meet_rt, f->meet_gid, f->meet_tag)) continue;
      if (!dred_meet_ready(f->meet_slot, f->meet_seq, f->meet_member, 0)) {
        dred_meet_wait_arrivals(f->meet_slot, arr, WAIT_SLICE_NS);
        waited = 1;
      }
      continue;
    }
    /* Woken by the slot's outcome; the slice bounds how late we notice anything else (the
     * runtime thread finishing it after a failure, a lost master). */
    dred_meet_wait_epoch(f->meet_slot, epoch, left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS);
    waited = 1;
  }
}

int dred_meetpath_turn(dred_rt_t *rt) {
  enum { BATCH = 64 };
  uint64_t gid[BATCH], now;
  int64_t tag[BATCH];
  int n = 0, i, did = 0;
  dred_queue_t *q;
  if (rt->meet == NULL) return 0;
  if (lent_any(rt)) did |= lent_reclaim(rt, 0) > 0;
  /* A spilled slot re-routes a member whose application thread never looks (it waits in
   * MPI, or will only wait at dred_finalize): looked at every few milliseconds at most. */
  now = uv_hrtime();
  if (now - rt->meet_turn_ns < 2000000ull) return did;
  rt->meet_turn_ns = now;
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH(q, &rt->meetq) {
    dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, qlink);
    if (n == BATCH) break;
    /* ... and settles the nonblocking calls posted in the fast lane that nobody waits on,
     * once resolved: their acks let the stream's later posts in */
    if (!in->meet_claimed && (in->meet_lane_nb ? meet_lookable(in)
                                               : dred_meet_state(in->meet_slot, in->meet_seq) ==
                                                     DRED_MEET_SPILL)) {
      gid[n] = in->group_id;
      tag[n++] = in->tag;
    }
  }
  uv_mutex_unlock(&rt->lock);
  for (i = 0; i < n; i++) did |= dred_meetpath_settle(rt, gid[i], tag[i], DRED_OK, UINT64_MAX) == 2;
  return did;
}

void dred_meetpath_on_failed(dred_rt_t *rt, uint32_t w) {
  dred_queue_t *q;
  uint32_t k;
  if (rt->meet == NULL) return;
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH(q, &rt->groups) {
    dred_group_t *g = DRED_QUEUE_DATA(q, dred_group_t, link);
    /* every stream of the group: its auto tags, each tag, and (a group spanning nodes)
     * their relay rings */
    for (k = 0; k < g->n; k++)
      if (g->workers[k] == w) dred_meet_group_member_failed(rt->meet, g->id, k, DRED_ERR_PROC_FAILED);
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
  for (i = 0; i < n; i++) (void)dred_meetpath_settle(rt, gid[i], tag[i], status, UINT64_MAX);
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
      if (!in->meet_claimed && meet_lookable(in)) {
        gid[n] = in->group_id;
        tag[n++] = in->tag;
      }
    }
    uv_mutex_unlock(&rt->lock);
    for (i = 0; i < n; i++) total += dred_meetpath_settle(rt, gid[i], tag[i], DRED_OK, UINT64_MAX) == 1;
  } while (n == BATCH);
  return total;
}
