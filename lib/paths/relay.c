/*
 * relay.c -- the node relay of a cross-node bcast or large allreduce: dred-master sends
 * each node the data (the result) once, to the first of the node's members to arrive, and
 * the others copy it from that member's shared memory (seed 000: the first process of a
 * node to arrive leads the node's inter-node transfer; seed 001: the node's members copy
 * from the shared-memory block, overlapping the transfer piece by piece).
 *
 * Which collectives.  A bcast or an allreduce (not inline) of a group spanning nodes, of
 * DRED_RELAY_MIN_BYTES (an allreduce: DRED_RELAY_ALLREDUCE_MIN_BYTES) or more, on a node
 * holding at least two of its members other than the root (an allreduce's member 0, whose
 * result dred-master distributes), each group of at most DRED_MEET_MAX_MEMBERS.  Every
 * bcast and allreduce of a group with two or more members on the node passes through the
 * node's relay slots -- one that is not relayed only on its way to dred-master -- so that
 * members that disagree on the size, the root or the kind still all arrive.  The members
 * of the node meet in a relay ring of the node's meeting place (lib/shm/meet.h,
 * dred_meet_relay_of): the ring of the group's stream, with the members of other nodes
 * counted as absent.  The root arrives there too, only to go to dred-master (a bcast's
 * root sends its data there as before): the slot frees once every member of the node has
 * been through it.  A group that meets on one node is never relayed.
 *
 * How it works.
 *   - Leader: the first member to arrive with a pool block for the data.  It goes to
 *     dred-master as any member does; every DATA piece it receives is copied into its
 *     result and into its block, and the slot's progress moves (dred_relay_on_data).  When
 *     its collective ends it leaves the slot, failing it first unless its data is whole
 *     (dred_relay_done); its block is lent until every follower released the slot.
 *   - A bcast's follower: every later member that agrees with the leader.  It sends
 *     nothing yet: it waits in the slot as a met bcast's member does (meetpath.c settles
 *     it: the waiting thread copies the leader's block as far as the progress says), then
 *     goes to dred-master saying it has the data (READY's have PROTO_HAVE_DATA):
 *     dred-master checks its parameters as anyone's and sends it END alone.
 *   - An allreduce's follower cannot wait: its operand is part of the reduction, so it
 *     goes to dred-master at once, its READY saying it follows (PROTO_HAVE_FOLLOW), and
 *     dred-master sends it nothing until it hears from it again.  Its waits
 *     (dred_future_get, _wait, _is_done: dred_relay_wait) copy the leader's block as far
 *     as the progress says, sleeping on the slot meanwhile; for one nobody waits on, the
 *     runtime thread copies it once the block is whole, DRED_TURN_BYTES per turn
 *     (dred_relay_turn).
 *     Then the runtime thread sends HAVE (error 0: it holds the result) and dred-master
 *     sends it END alone.  A thread copying claims the follower (relay_claimed): an END
 *     that comes meanwhile (an abandon, a lost master) leaves the finishing to it.
 *   - Anyone else (no block, disagreeing with the leader, a failed slot, a slot still held
 *     by an older collective) goes to dred-master as before.
 *
 * Faults.  dred-master keeps the data until every member was told, and a follower only
 * tells it once it holds the data.  A leader that dies, or whose collective ends in an
 * error, before its data was whole fails the slot (dred_meet_member_failed, or
 * dred_relay_done): its followers drop what they copied and go to dred-master for all of
 * it (a bcast's with a READY without have, an allreduce's with a HAVE saying why), so the
 * leader's death costs them nothing (and any error is dred-master's to decide, the same
 * for everyone: it tells an allreduce's follower only after its HAVE).  A leader that
 * dies after its data was whole leaves it readable in the node's pool.  A follower that
 * dies only stops being owed.
 */
#include <string.h>

#include "../../common/log.h"
#include "../shm/copy.h"
#include "../shm/meet.h"
#include "../engine/group.h"
#include "../engine/future.h"
#include "../mpi/dataplane.h"
#include "distribute.h"
#include "meetpath.h"
#include "relay.h"

/* Whether the bcasts and allreduces of `in`'s group pass through this node's relay
 * slots: decided from the group alone (two or more members here), so that every member
 * of the node arrives, whatever it disagrees on -- a slot waits for every member of the
 * node, and one that never came would hold it (and its leader's block) for good.  The
 * members on other nodes (group.c's off_node) never arrive here: the same for every
 * collective of the group, whatever its root, so one ring per stream. */
static int relay_shaped(const dred_rt_t *rt, const dred_inst_t *in) {
  return rt->meet != NULL && !rt->dead && in->group->spans_nodes &&
         (in->kind == PROTO_KIND_BCAST || in->kind == PROTO_KIND_ALLREDUCE) &&
         in->group->n <= DRED_MEET_MAX_MEMBERS && in->group->nlocal >= 2;
}

/* Whether `in` is relayed: a bcast (an allreduce) with two or more members here besides
 * its root (member 0, whose result dred-master distributes), large enough that one
 * transfer per node pays for a follower's extra hop.  The others (the root, a small or
 * refused call, a node with one member besides the root) pass through the slot to
 * dred-master. */
static int relayed(const dred_rt_t *rt, const dred_inst_t *in) {
  const dred_group_t *g = in->group;
  if (!relay_shaped(rt, in) || in->inl || in->root >= g->n ||
      in->bytes < (in->kind == PROTO_KIND_ALLREDUCE ? DRED_RELAY_ALLREDUCE_MIN_BYTES
                                                    : DRED_RELAY_MIN_BYTES))
    return 0;
  return g->nlocal - !(g->off_node & ((uint64_t)1 << in->root)) >= 2; /* the root not counted */
}

/* The relay ring of `in`'s stream and its sequence number there (as meetpath.c's
 * ring_for: the auto sequence, or the explicit tag's use count), or NULL.  Under
 * rt->lock. */
static dred_meet_ring_t *relay_ring(dred_rt_t *rt, dred_inst_t *in, uint64_t *seq) {
  dred_group_t *g = in->group;
  if (in->tag < 0) {
    *seq = (uint64_t)(-1 - in->tag);
    if (!g->relay_looked) {
      g->relay_looked = 1;
      g->relay_ring =
          dred_meet_relay_of(rt->meet, g->id, DRED_MEET_AUTO, g->n, g->workers, g->off_node);
    }
    return g->relay_ring;
  }
  *seq = proto_key_use(in->tag);
  if (!in->relay_ring_looked) {
    in->relay_ring_looked = 1;
    in->relay_ring =
        dred_meet_relay_of(rt->meet, g->id, proto_key_tag(in->tag), g->n, g->workers, g->off_node);
  }
  return in->relay_ring;
}

void dred_relay_prepare(dred_rt_t *rt, dred_inst_t *in) {
  if (!relayed(rt, in) || in->is_root || in->refused || in->join_error != DRED_OK) return;
  dred_meetpath_reclaim_lent(rt);
  if (dred_dp_pool_block(rt, in->bytes, &in->relay_blk, &in->relay_blk_off) != DRED_OK) {
    in->relay_blk = NULL; /* no room: this member cannot lead (it may still follow) */
    in->relay_blk_off = -1;
  }
}

static void blk_free(dred_rt_t *rt, dred_inst_t *in) {
  if (in->relay_blk == NULL) return;
  dred_dp_buf_free(rt, in->bytes, in->relay_blk, in->relay_blk_off, 0);
  in->relay_blk = NULL;
  in->relay_blk_off = -1;
}

void dred_relay_unprepare(dred_rt_t *rt, dred_inst_t *in) { blk_free(rt, in); }

int dred_relay_arrive(dred_rt_t *rt, dred_inst_t *in) {
  dred_meet_ring_t *r;
  dred_meet_arrival_t a;
  dred_meet_ref_t op;
  proto_params_t p;
  uint64_t seq = 0;
  int wants;
  if (!relay_shaped(rt, in) || (r = relay_ring(rt, in, &seq)) == NULL) {
    blk_free(rt, in);
    return 0;
  }
  /* the parameters this member's READY carries: a follower must agree with its leader */
  p = dred_rt_params(in);
  memset(&op, 0, sizeof op);
  /* a member that does not take part (the root, a small or refused call) still arrives,
   * as one that goes to dred-master: the slot waits for every member of the node */
  wants = relayed(rt, in) && !in->is_root && !in->refused && in->join_error == DRED_OK;
  if (in->relay_blk != NULL) {
    op.kind = DRED_MEET_OP_POOL;
    op.worker = (uint32_t)rt->world_rank;
    op.off = in->relay_blk_off;
    op.len = in->bytes;
  }
  if (dred_meet_arrive_op(r, seq, in->member, &p, wants, &op, NULL, DRED_OK, &a) != 0 || !a.meet) {
    blk_free(rt, in);
    return 0;
  }
  if (a.lead) {
    in->relay_lead = 1;
    in->relay_slot = a.slot;
    in->relay_seq = seq;
    rt->relay_led++;
    return 0; /* to dred-master, as any member; its DATA fills the block too */
  }
  blk_free(rt, in);
  if (in->kind == PROTO_KIND_ALLREDUCE) {
    /* to dred-master now with its operand, saying it follows; copies meanwhile */
    in->relay_copy = 1;
    in->relay_slot = a.slot;
    in->relay_seq = seq;
    in->relay_queued = 1;
    dred_queue_insert_tail(&rt->relayq, &in->relay_link);
    in->fut->meet_rt = rt; /* its waits copy (dred_relay_wait); the future is not out yet */
    in->fut->meet_gid = in->group_id;
    in->fut->meet_tag = in->tag;
    in->fut->relay_slot = a.slot;
    return 0;
  }
  in->relay_follow = 1;
  dred_meetpath_join(rt, in, r, a.slot, seq);
  dred_rt_insert(rt, in);
  return 1;
}

void dred_relay_on_data(dred_rt_t *rt, dred_inst_t *in, uint64_t off, const void *data,
                        uint64_t len) {
  (void)rt;
  if (!in->relay_lead || in->relay_blk == NULL || off + len > in->bytes) return;
  memcpy(in->relay_blk + off, data, len);
  dred_meet_progress_set(in->relay_slot, in->relay_seq, off + len); /* after the bytes */
}

void dred_relay_done(dred_rt_t *rt, dred_inst_t *in, int status) {
  if (in->relay_copy || in->relay_queued) { /* an allreduce's follower ended first */
    uv_mutex_lock(&rt->lock);
    if (in->relay_queued) dred_queue_remove(&in->relay_link);
    in->relay_queued = 0;
    uv_mutex_unlock(&rt->lock);
    if (in->relay_copy) dred_meet_release(in->relay_slot, in->relay_seq, in->member);
    in->relay_copy = 0;
  }
  if (!in->relay_lead) return;
  in->relay_lead = 0;
  if (status != DRED_OK || in->res_have < in->bytes)
    dred_meet_relay_fail(in->relay_slot, in->relay_seq,
                         status != DRED_OK ? status : DRED_ERR_INTERNAL);
  dred_meet_release(in->relay_slot, in->relay_seq, in->member);
  if (in->relay_blk != NULL) /* read by followers until they all released the slot */
    dred_meetpath_lend(rt, in->relay_slot, in->relay_seq, in->member, in->relay_blk,
                       in->relay_blk_off, in->bytes);
  in->relay_blk = NULL;
  in->relay_blk_off = -1;
}

void dred_relay_handoff(dred_rt_t *rt, dred_inst_t *in, int have) {
  dred_meet_release(in->meet_slot, in->meet_seq, in->member);
  uv_mutex_lock(&rt->lock);
  dred_queue_remove(&in->qlink); /* from rt->meetq */
  dred_inst_set_state(in, INST_SUBMITTED);
  in->relay_follow = 0;
  in->relay_have = have;
  if (have) {
    rt->relay_followed++;
  } else {
    in->res_have = 0; /* dred-master sends it all; what was copied is overwritten */
  }
  in->meet_fold_next = 0;
  in->meet_claimed = 0;
  dred_queue_insert_tail(&rt->submitq, &in->qlink);
  uv_mutex_unlock(&rt->lock);
  uv_async_send(&rt->wake);
}

/* ---- an allreduce's follower --------------------------------------------------------- */

/* Whether the follower `in` can be copied for now: claims it (under rt->lock).  Not once
 * it ended (it is being finished) or another thread holds it. */
static int follow_claim(dred_rt_t *rt, dred_inst_t *in) {
  if (!in->relay_copy || in->relay_claimed || dred_inst_state(in) == INST_ENDED) return 0;
  in->relay_claimed = 1;
  return 1;
}

/* The claim is given back; with `have` the follower is done copying (HAVE to send with
 * `status`: DRED_OK, it holds the whole result; else the relay failed).  Finishes `in`
 * if it ended while claimed.  Not under rt->lock. */
static void follow_unclaim(dred_rt_t *rt, dred_inst_t *in, int have, int status) {
  int finish;
  if (have) {
    dred_meet_release(in->relay_slot, in->relay_seq, in->member);
    if (status != DRED_OK) in->res_have = 0; /* dred-master sends it all */
  }
  uv_mutex_lock(&rt->lock);
  if (have) {
    in->relay_copy = 0;
    in->relay_have_due = 1;
    in->relay_have_status = status;
    if (status == DRED_OK) rt->relay_followed++;
  }
  in->relay_claimed = 0;
  finish = in->relay_finish_due;
  uv_mutex_unlock(&rt->lock);
  if (finish)
    (void)dred_rt_inst_finish(rt, in, in->end_status);
  else if (have)
    uv_async_send(&rt->wake); /* the runtime thread sends HAVE */
}

/* Copy what the leader has put in its block since the last step, at most about `budget`
 * bytes.  Claimed.  Returns 1 when done (*status: DRED_OK with the whole result, or why
 * the relay failed), 0 after `budget` bytes, 3 when the leader has nothing more yet. */
static int follow_copy(dred_rt_t *rt, dred_inst_t *in, uint64_t budget, int *status) {
  dred_meet_ref_t ref;
  const char *src;
  char *dst;
  uint64_t avail, end;
  uint32_t leader;
  int st = DRED_OK;
  avail = dred_meet_progress(in->relay_slot, in->relay_seq, &st);
  if (st != DRED_OK) {
    *status = st;
    return 1;
  }
  if (avail > in->bytes) avail = in->bytes;
  if (avail <= in->res_have) return 3;
  leader = dred_meet_leader(in->relay_slot);
  ref = dred_meet_operand(in->relay_slot, leader);
  if (leader >= in->group->n || ref.kind != DRED_MEET_OP_POOL || ref.len != in->bytes ||
      (src = dred_meetpath_peer_block(rt, in, leader, ref.worker, ref.off, ref.len)) == NULL ||
      (dst = dred_dist_result_buf(in)) == NULL) {
    *status = DRED_ERR_INTERNAL; /* logged; dred-master sends the result instead */
    return 1;
  }
  end = budget < avail - in->res_have ? in->res_have + budget : avail;
  dred_shm_copy_result(dst + in->res_have, src + in->res_have, end - in->res_have, in->bytes,
                       in->kind == PROTO_KIND_BCAST ? DRED_SHM_WEIGHT_BCAST
                                                    : DRED_SHM_WEIGHT_ALLREDUCE);
  in->res_have = end;
  if (in->res_have == in->bytes) {
    *status = DRED_OK;
    return 1;
  }
  return end < avail ? 0 : 3;
}

int dred_relay_step(dred_rt_t *rt, uint64_t gid, int64_t tag, uint64_t budget) {
  dred_inst_t *in;
  int r, st = DRED_OK, claimed;
  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, gid, tag);
  claimed = in != NULL && follow_claim(rt, in);
  r = in == NULL || !in->relay_copy ? 1 : 2;
  uv_mutex_unlock(&rt->lock);
  if (!claimed) return r;
  r = follow_copy(rt, in, budget, &st);
  follow_unclaim(rt, in, r == 1, st);
  return r;
}

#define RELAY_SLICE_NS 100000000ull /* a waiter rechecks its future at least this often */
#define RELAY_STEP (4u << 20)       /* bytes copied between looks at the clock */

void dred_relay_wait(dred_future *f, uint64_t timeout_ns) {
  uint64_t start = uv_hrtime(), now, left;
  for (;;) {
    uint32_t epoch;
    int r;
    if (dred_future_done(f)) return;
    now = uv_hrtime();
    left = timeout_ns == UINT64_MAX ? UINT64_MAX
                                    : (now - start >= timeout_ns ? 0 : timeout_ns - (now - start));
    /* the slot's wake count before the look: progress made after it moves the count */
    epoch = dred_meet_epoch(f->relay_slot);
    r = dred_relay_step(f->meet_rt, f->meet_gid, f->meet_tag, left == 0 ? (1u << 20) : RELAY_STEP);
    if (r == 1) return; /* copied (or the relay failed): dred-master's END completes it */
    if (left == 0) return;
    if (r == 0) continue;
    if (r == 2) { /* another thread copies: its HAVE follows */
      uv_mutex_lock(&f->mu);
      if (!f->done) (void)uv_cond_timedwait(&f->cv, &f->mu, left < 200000ull ? left : 200000ull);
      uv_mutex_unlock(&f->mu);
      continue;
    }
    /* nothing from the leader yet (the reduction is still running): woken by its progress
     * or by the relay's failure; the slice bounds how late we notice our own END */
    dred_meet_wait_epoch(f->relay_slot, epoch, left < RELAY_SLICE_NS ? left : RELAY_SLICE_NS);
  }
}

int dred_relay_turn(dred_rt_t *rt) {
  enum { BATCH = 64 };
  dred_inst_t *send[BATCH], *copy[BATCH];
  int ns = 0, nc = 0, i, did = 0;
  dred_queue_t *q, *next;
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH_SAFE(q, next, &rt->relayq) {
    dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, relay_link);
    int st = DRED_OK;
    if (in->relay_have_due && dred_inst_state(in) == INST_ANNOUNCED && ns < BATCH) {
      /* its READY went out before: HAVE follows it on the same link */
      dred_queue_remove(q);
      in->relay_queued = 0;
      in->relay_have_due = 0;
      send[ns++] = in;
    } else if (in->relay_copy && !in->relay_claimed && dred_inst_state(in) != INST_ENDED &&
               nc < BATCH &&
               (dred_meet_progress(in->relay_slot, in->relay_seq, &st) >= in->bytes ||
                st != DRED_OK) &&
               follow_claim(rt, in)) {
      copy[nc++] = in; /* nobody waits on it: this thread copies, a step per turn */
    }
  }
  uv_mutex_unlock(&rt->lock);
  /* A step each per turn, not all at once: a follower's result is as large as the pool
   * allows (DRED_POOL_MB), and a turn is how long PINGs wait.  Between turns a thread that
   * starts waiting on it claims it and copies the rest itself. */
  for (i = 0; i < nc; i++) {
    int st = DRED_OK, r = follow_copy(rt, copy[i], DRED_TURN_BYTES, &st);
    if (r != 1 && !copy[i]->relay_split) {
      copy[i]->relay_split = 1;
      uv_mutex_lock(&rt->lock);
      rt->relay_split++;
      uv_mutex_unlock(&rt->lock);
    }
    follow_unclaim(rt, copy[i], r == 1, st);
    did = did == 2 || r != 1 ? 2 : 1;
  }
  for (i = 0; i < ns; i++) {
    proto_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = PROTO_HAVE;
    m.u.recover.group = send[i]->group_id;
    m.u.recover.tag = send[i]->tag;
    m.u.recover.member = send[i]->member;
    m.u.recover.error = send[i]->relay_have_status;
    dred_rt_send_master(rt, &m);
    if (did == 0) did = 1;
  }
  return did;
}
