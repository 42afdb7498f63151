/*
 * partial.c -- a node's partial of a reduce spanning nodes: the members of a node combine
 * their operands in the node's shared memory, and dred-master hears one READY for them all
 * (its `cover` names them) instead of one per member, then pairs node partials as it pairs
 * members.  Its work per reduction then grows with the nodes, not the ranks (dred-master's
 * side: master/sched/sched.c, on_partial).
 *
 * Which reduces.  Every reduce of a group spanning nodes, with two or more members on this
 * node and at most DRED_MEET_MAX_MEMBERS in all, passes through the node's partial slot
 * for it (a ring of the node's meeting place, lib/shm/meet.h dred_meet_partial_of; the
 * members on other nodes are absent from it): the choice depends on the group alone, so
 * every member of the node arrives whatever it disagrees on.  A member stays in the slot
 * when its operand is a plain pool block of its own, the reduce not inline, and the root
 * on another node (the root's node sends its members one by one: the result must end at
 * the root, which folds into its own buffer); any other member goes to dred-master at
 * once, as before.  Under a non-commutative op the members that stay must be a run of
 * consecutive ranks (a node of a block placement), or the slot spills.
 *
 * How it works.  A member arrives when its runtime thread announces it, after its copies
 * to other nodes began (replicas, as for any member): instead of sending its READY it
 * arrives with its operand's block.  The last of the node's members to arrive decides
 * (meet.c): if it stayed, and two or more stayed and all agree, it folds every operand
 * that stayed, in rank order, into a fresh block of its own pool (private memory when the
 * pool is full, read by RMA like a task's result) and sends one READY
 * covering them -- its own member field, the others in the cover; the others send nothing
 * and wait for their END as any member does.  No operand is written: each stays its
 * member's snapshot, so recovery reads it as before.  Otherwise each that stayed sends its
 * own READY.
 *
 * Faults.  dred-master never counts a member twice (on_partial): a member already arrived
 * or being recovered makes it refuse a partial (and recover the rest one by one), and a
 * member's own READY after a partial covered it is ignored.  So a member that waits for
 * its node's partial may always give up and send its own READY, and does when
 *   - the slot spilled (its peers disagree, one had no block, a member that went to
 *     dred-master came last) or failed (a node peer died before it arrived);
 *   - the folder died: its READY either reached dred-master before the death (then the
 *     covered members are recovered from their snapshots and copies, and this READY is
 *     ignored) or never will (dred-master refuses a dead worker's messages);
 *   - it waited DRED_PARTIAL_WAIT_NS (a late peer, or one that called another kind of
 *     collective with this tag: a mismatch dred-master will report): it leaves the slot
 *     first, under its lock, so a folder deciding later leaves it out -- or finds it
 *     decided already, and stays covered.
 * The runtime thread watches the waiting members at its turns (dred_partial_turn): at
 * every message, and at least at every heartbeat.  A fold that fails (a block reference
 * refused, MPI_Reduce_local failing) still sends the covering READY, with the error, so
 * that every covered member is told it.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/status.h"
#include "../engine/group.h"
#include "../mpi/dataplane.h"
#include "../shm/meet.h"
#include "fold.h"
#include "meetpath.h"
#include "partial.h"

#define PARTIAL_FOLD_CHUNK (64u * 1024u) /* bytes of the partial folded at a time (in cache) */

/* Whether the reduces of `in`'s group pass through this node's partial slots: decided from
 * the group alone (see the opening comment). */
static int partial_shaped(const dred_rt_t *rt, const dred_inst_t *in) {
  return rt->meet != NULL && !rt->dead && in->kind == PROTO_KIND_REDUCE &&
         in->group->spans_nodes && in->group->n <= DRED_MEET_MAX_MEMBERS &&
         in->group->nlocal >= 2;
}

/* Whether this member stays in the slot: see the opening comment. */
static int partial_wants(const dred_inst_t *in, const proto_msg_t *m) {
  const dred_group_t *g = in->group;
  return !in->inl && !in->is_root && in->root < g->n &&
         (g->off_node >> in->root & 1u) && !in->refused && in->join_error == DRED_OK &&
         m->u.ready.error == 0 && m->u.ready.meet_mask == 0 && m->u.ready.have == 0 &&
         in->acc != NULL && in->pool_off >= 0 && !in->acc_malloced &&
         in->bytes == in->count * (uint64_t)in->ti.extent; /* a layout partial_fold reads */
}

/* The partial ring of `in`'s stream and its sequence number there (as relay.c's). */
static dred_meet_ring_t *partial_ring(dred_rt_t *rt, dred_inst_t *in, uint64_t *seq) {
  dred_group_t *g = in->group;
  if (in->tag < 0) {
    *seq = (uint64_t)(-1 - in->tag);
    if (!g->partial_looked) {
      g->partial_looked = 1;
      g->partial_ring = dred_meet_partial_of(rt->meet, g->id, DRED_MEET_AUTO, g->n, g->workers,
                                             g->off_node);
    }
    return g->partial_ring;
  }
  *seq = proto_key_use(in->tag);
  if (!in->partial_ring_looked) {
    in->partial_ring_looked = 1;
    in->partial_ring = dred_meet_partial_of(rt->meet, g->id, proto_key_tag(in->tag), g->n,
                                            g->workers, g->off_node);
  }
  return in->partial_ring;
}

/* Fold the operands of `members` (this member's own in acc, the others' in their pool
 * blocks as the slot names them) into `out`, in rank order. */
static int partial_fold(dred_rt_t *rt, dred_inst_t *in, uint64_t members, char *out) {
  const char *src[DRED_MEET_MAX_MEMBERS];
  size_t extent = (size_t)in->ti.extent;
  uint64_t ce = PARTIAL_FOLD_CHUNK / extent, e0, count = in->count;
  uint32_t k, nsrc = 0;
  char *tmp;
  int rc;
  if (ce == 0) ce = 1;
  for (k = 0; k < in->group->n; k++) {
    dred_meet_ref_t ref;
    if (!(members >> k & 1u)) continue;
    if (k == in->member) {
      src[nsrc++] = in->acc;
      continue;
    }
    ref = dred_meet_operand(in->partial_slot, k);
    if (ref.kind != DRED_MEET_OP_POOL || ref.len != in->bytes ||
        (src[nsrc] = dred_meetpath_peer_block(rt, in, k, ref.worker, ref.off, ref.len)) == NULL)
      return DRED_ERR_INTERNAL; /* logged by peer_block, or a slot that is not ours */
    nsrc++;
  }
  /* a piece at a time: copied from the first operand, the others folded in while in cache */
  tmp = dred_fold_tmp(in, &rc);
  for (e0 = 0; rc == DRED_OK && e0 < count; e0 += ce) {
    uint64_t m = count - e0 < ce ? count - e0 : ce;
    memcpy(out + e0 * extent, src[0] + e0 * extent, (size_t)m * extent);
    rc = dred_fold(in, src, nsrc, 0, out, e0, m, tmp);
  }
  free(tmp);
  return rc;
}

/* The last member of the node: fold and send the covering READY (with an error if the
 * fold failed, so that every covered member is told). */
static void partial_lead(dred_rt_t *rt, dred_inst_t *in, const proto_msg_t *own) {
  uint8_t cover[DRED_MEET_MAX_MEMBERS / 8];
  uint64_t members = 0;
  proto_msg_t m = *own;
  uint32_t k, nk = 0;
  int rc = DRED_OK;
  if (dred_meet_folder(in->partial_slot, in->partial_seq, &members) != in->member)
    members = (uint64_t)1 << in->member; /* cannot happen: we decided it */
  memset(cover, 0, sizeof cover);
  for (k = 0; k < in->group->n; k++)
    if (members >> k & 1u) {
      cover[k / 8] |= (uint8_t)(1u << (k % 8));
      nk++;
    }
  /* the pool, or (full) private memory that other nodes read by RMA, as a task's result */
  if ((rc = dred_dp_buf_alloc(rt, in->bytes, &in->partial_blk, &in->partial_blk_off,
                              &in->partial_blk_malloced)) != DRED_OK) {
    in->partial_blk = NULL;
    in->partial_blk_off = -1;
    in->partial_blk_malloced = 0;
  } else {
    rc = partial_fold(rt, in, members, in->partial_blk);
  }
  m.u.ready.snap = 0;
  m.u.ready.cover_len = (in->group->n + 7) / 8;
  m.u.ready.cover = cover;
  if (rc == DRED_OK) {
    m.u.ready.buf = dred_rt_bufref(rt, in->partial_blk, in->partial_blk_off, in->bytes);
  } else {
    DRED_ERROR("reduce (tag " PROTO_KEY_FMT "): this node's partial of %u members could not "
               "be folded: %s", PROTO_KEY_ARG(in->tag), nk, dred_status_str(rc));
    m.u.ready.error = rc == DRED_ERR_NOMEM ? DRED_ERR_NOMEM : DRED_ERR_INTERNAL;
    m.u.ready.buf.pool_off = -1;
  }
  dred_rt_send_master(rt, &m);
  in->partial = 2;
  rt->partial_folded++;
  rt->partial_covered += nk;
}

int dred_partial_announce(dred_rt_t *rt, dred_inst_t *in, const proto_msg_t *m) {
  dred_meet_ring_t *r;
  dred_meet_arrival_t a;
  dred_meet_ref_t op;
  proto_params_t p;
  uint64_t seq = 0;
  int wants;
  if (!partial_shaped(rt, in) || m->u.ready.recovered || (r = partial_ring(rt, in, &seq)) == NULL)
    return 0;
  p = proto_params_of(m);
  wants = partial_wants(in, m);
  memset(&op, 0, sizeof op);
  if (wants) {
    op.kind = DRED_MEET_OP_POOL;
    op.worker = (uint32_t)rt->world_rank;
    op.off = in->pool_off;
    op.len = in->bytes;
  }
  if (dred_meet_arrive_op(r, seq, in->member, &p, wants, &op, NULL, DRED_OK, &a) != 0) {
    /* refused as it stood: it still arrives, going on alone, or the slot waits for it */
    if (!wants || dred_meet_arrive_op(r, seq, in->member, &p, 0, NULL, NULL, DRED_OK, &a) != 0)
      DRED_WARN("reduce (tag " PROTO_KEY_FMT "): refused by its node's partial slot",
                PROTO_KEY_ARG(in->tag));
    return 0;
  }
  if (!a.meet) return 0; /* to dred-master on its own (the slot counted it released) */
  in->partial_slot = a.slot;
  in->partial_seq = seq;
  if (a.lead) {
    partial_lead(rt, in, m);
    return 1;
  }
  /* wait for the node's last member to fold us in (or to say it will not) */
  in->partial = 1;
  in->partial_ready = *m;
  in->partial_since = uv_hrtime();
  dred_queue_insert_tail(&rt->partialq, &in->partial_link);
  (void)dred_partial_turn(rt); /* a slot that spilled or failed at once: our READY now */
  return 1;
}

/* The waiting member `in` leaves its partial: its own READY goes out, unless the slot says
 * the partial covering it is decided (then it stays covered). */
static int partial_alone(dred_rt_t *rt, dred_inst_t *in, int leave_first) {
  if (leave_first && !dred_meet_partial_leave(in->partial_slot, in->partial_seq, in->member))
    return 0; /* decided meanwhile: the folder's READY covers us */
  dred_queue_remove(&in->partial_link);
  in->partial = 3;
  rt->partial_alone++;
  dred_rt_send_master(rt, &in->partial_ready);
  return 1;
}

int dred_partial_turn(dred_rt_t *rt) {
  dred_queue_t *q, *next;
  uint64_t now = 0;
  int did = 0;
  DRED_QUEUE_FOREACH_SAFE(q, next, &rt->partialq) {
    dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, partial_link);
    int st = dred_meet_state(in->partial_slot, in->partial_seq);
    if (st == DRED_MEET_OK) {
      /* a decided slot's folder is final: looked up under the slot's lock once */
      if (in->partial_folder == 0)
        in->partial_folder = 1 + dred_meet_folder(in->partial_slot, in->partial_seq, NULL);
      if (in->partial_folder - 1 < in->group->n &&
          rt->failed[in->group->workers[in->partial_folder - 1]])
        did |= partial_alone(rt, in, 0);
    } else if (st != DRED_MEET_OPEN) { /* spilled or failed: nobody folds us */
      did |= partial_alone(rt, in, 0);
    } else {
      if (now == 0) now = uv_hrtime();
      if (now - in->partial_since >= DRED_PARTIAL_WAIT_NS) did |= partial_alone(rt, in, 1);
    }
  }
  return did;
}

void dred_partial_on_recover(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in;
  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, m->u.recover.group, m->u.recover.tag);
  uv_mutex_unlock(&rt->lock);
  /* dred-master sends a RECOVER only once it no longer counts a message holding the
   * member (sched_recover.c), and before any TASK on what answers it, on this same link:
   * every TASK on the partial came before this */
  if (in != NULL && in->partial == 2 && m->u.recover.member == in->member) in->partial = 4;
}

void dred_partial_done(dred_rt_t *rt, dred_inst_t *in) {
  if (in->partial == 0) return;
  if (in->partial == 1) dred_queue_remove(&in->partial_link);
  /* (2 or 4: a folder; 3: left alone) */
  dred_meet_release(in->partial_slot, in->partial_seq, in->member);
  if (in->partial_blk != NULL)
    dred_dp_buf_free(rt, in->bytes, in->partial_blk, in->partial_blk_off, in->partial_blk_malloced);
  in->partial_blk = NULL;
  in->partial = 0;
}
