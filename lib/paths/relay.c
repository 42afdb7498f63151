/*
 * relay.c -- a cross-node bcast's node relay: dred-master sends each node the data once,
 * to the first of the node's members to arrive, and the others copy it from that member's
 * shared memory (seed 000: the first process of a node to arrive leads the node's
 * inter-node transfer; seed 001: the node's members copy from the shared-memory block,
 * overlapping the transfer piece by piece).
 *
 * Which collectives.  A bcast of a group spanning nodes, of DRED_RELAY_MIN_BYTES or more,
 * on a node holding at least two of its members other than the root, each group of at
 * most DRED_MEET_MAX_MEMBERS.  Every bcast of a group with two or more members on the
 * node passes through the node's relay slots -- one that is not relayed only on its way
 * to dred-master -- so that members that disagree on the size or the root still all
 * arrive.  The members of the node meet in a relay ring of the node's meeting place
 * (lib/shm/meet.h, dred_meet_relay_of): the ring of the group's stream, with the members
 * of other nodes counted as absent.  The root arrives there too, only to go to
 * dred-master (it sends its data there as before): the slot frees once every member of
 * the node has been through it.  A group that meets on one node is never relayed.
 *
 * How it works.
 *   - Leader: the first member to arrive with a pool block for the data.  It goes to
 *     dred-master as any member does; every DATA piece it receives is copied into its
 *     result and into its block, and the slot's progress moves (dred_relay_on_data).  When
 *     its collective ends it leaves the slot, failing it first unless its data is whole
 *     (dred_relay_done); its block is lent until every follower released the slot.
 *   - Follower: every later member that agrees with the leader.  It sends nothing yet: it
 *     waits in the slot as a met bcast's member does (meetpath.c settles it: the waiting
 *     thread copies the leader's block as far as the progress says, the runtime thread
 *     when nobody waits), then goes to dred-master saying it has the data (READY's have):
 *     dred-master checks its parameters as anyone's and sends it END alone.
 *   - Anyone else (no block, disagreeing with the leader, a failed slot, a slot still held
 *     by an older bcast) goes to dred-master as before.
 *
 * Faults.  dred-master keeps the data until every member was told, and a follower only
 * tells it once it holds the data.  A leader that dies, or whose collective ends in an
 * error, before its data was whole fails the slot (dred_meet_member_failed, or
 * dred_relay_done): its followers drop what they copied and go to dred-master for all of
 * it, so the leader's death costs them nothing (and any error is dred-master's to
 * decide, the same for everyone).  A leader that dies after its data was whole leaves it
 * readable in the node's pool.  A follower that dies only stops being owed.
 */
#include <string.h>

#include "../../common/log.h"
#include "../shm/meet.h"
#include "../engine/group.h"
#include "../engine/future.h"
#include "../mpi/dataplane.h"
#include "meetpath.h"
#include "relay.h"

/* Whether the bcasts of `in`'s group pass through this node's relay slots: decided from
 * the group alone (two or more members here), so that every member of the node arrives,
 * whatever it disagrees on -- a slot waits for every member of the node, and one that
 * never came would hold it (and its leader's block) for good.  The members on other
 * nodes (group.c's off_node) never arrive here: the same for every bcast of the group,
 * whatever its root, so one ring per stream. */
static int relay_shaped(const dred_rt_t *rt, const dred_inst_t *in) {
  return rt->meet != NULL && !rt->dead && in->group->spans_nodes &&
         in->kind == PROTO_KIND_BCAST && in->group->n <= DRED_MEET_MAX_MEMBERS &&
         in->group->nlocal >= 2;
}

/* Whether `in` is relayed: a bcast with two or more members here besides its root, large
 * enough that one transfer per node pays for a follower's extra hop.  The others (the
 * root, a small or refused call, a node with one member besides the root) pass through
 * the slot to dred-master. */
static int relayed(const dred_rt_t *rt, const dred_inst_t *in) {
  const dred_group_t *g = in->group;
  if (!relay_shaped(rt, in) || in->inl || in->bytes < DRED_RELAY_MIN_BYTES || in->root >= g->n)
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
  proto_msg_t ready;
  proto_params_t p;
  uint64_t seq = 0;
  int wants;
  if (!relay_shaped(rt, in) || (r = relay_ring(rt, in, &seq)) == NULL) {
    blk_free(rt, in);
    return 0;
  }
  /* the parameters this member's READY carries: a follower must agree with its leader */
  dred_rt_ready(in, in->member, &ready);
  p = proto_params_of(&ready);
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
  in->state = INST_SUBMITTED;
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
