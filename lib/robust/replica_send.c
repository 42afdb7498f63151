/*
 * replica_send.c -- sending copies of this member's operand to its neighbours (seed 002,
 * section 3): the snapshot, where its copies go, how they travel, and their acks.
 *
 * What it is for.  A non-root member's operand must exist outside its process before the
 * process may die without losing it.  At announce (dred_repl_on_announce) this file takes
 * the operand's snapshot and starts every copy of it; the receiving side is
 * replica_recv.c, the reading back at recovery recover.c.
 *
 * How it works.
 *   - The snapshot is the accumulator dred_ireduce already filled in our pool (listed in
 *     the pool's snapshot directory, snapdir.c), or the application's dred_alloc_mem block
 *     itself (zero copy); only when neither exists is a separate copy taken.  While copies
 *     are being taken the snapshot stays read-only: the member's first combine writes its
 *     result elsewhere and drops the engine's hold (dred_repl_snapshot_drop).
 *   - Where: common/placement.h, the rule dred-master also walks when it recovers: the
 *     next live member on another node first, DRED_REPLICAS-1 copies, a few spare
 *     candidates standing in for a copy that cannot be sent.  The holders go into the
 *     member's READY.
 *   - How: a neighbour that can map our pool gets a REPLICA header naming the snapshot's
 *     place in shared memory, reads it from there and answers REPLICA_ACK once written;
 *     any other gets the bytes behind the header on our link to it (common/net.c,
 *     "Bulk").  No copy goes through MPI.  Our own copy goes to the node-local store on
 *     the libuv thread pool.
 *   - DRED_REPLICA_DELAY_MS defers the local copy and the shared-memory neighbours' copies
 *     (the snapshot covers the gap on the node); a reduction that ends first cancels them.
 *   - The snapshot is reference counted: each copy in flight, each ACK awaited, the
 *     deferred copies and the engine hold it; the last release frees it and retires its
 *     directory slot, so the member's future never waits for replica I/O.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/placement.h"
#include "../../common/status.h"
#include "../../storage/replica.h"
#include "../../storage/replica_async.h"
#include "../mpi/dataplane.h"
#include "../paths/offnode.h"
#include "replicate_internal.h"

#define PLACE_SPARE 2 /* candidates beyond DRED_REPLICAS-1, for copies that cannot be sent */

/* ---- taking copies ------------------------------------------------------------------- */

void dred_repl_snapshot_unref(snapshot_t *sn) {
  if (--sn->refs > 0) return;
  dred_queue_remove(&sn->link);
  dred_keymap_remove(&dred_repl_state(sn->rt)->snap_index, &sn->knode);
  dred_queue_remove(&sn->dlink); /* no-op unless still deferred */
  dred_snapdir_retire(sn->rt, sn->dir_slot); /* before the block can be reused */
  if (sn->borrowed != NULL)
    dred_mem_unref(sn->rt, sn->borrowed); /* the application's block: ours no longer */
  else
    dred_dp_buf_free(sn->rt, sn->len, sn->p, sn->pool_off, sn->malloced);
  free(sn);
}

static void local_put_done(void *arg, int status) {
  repl_io_t *io = arg;
  if (status != DRED_OK && status != DRED_ERR_SHUTDOWN) /* SHUTDOWN: skipped, moot */
    DRED_WARN("local replica of tag " PROTO_KEY_FMT " not stored: %s", PROTO_KEY_ARG(io->tag),
              dred_status_str(status));
  dred_repl_snapshot_unref(io->snap);
  free(io);
}

/* A copy's bytes are written (or the link broke): the snapshot may go. */
static void copy_sent(void *arg, int status) {
  snapshot_t *sn = arg;
  /* a copy that did not arrive is the receiver's loss, seen at recovery; a call waiting
   * for it (offnode.c) goes on without it */
  if (status != DRED_OK) dred_handover_held(sn->rt, sn->group, sn->tag, -1);
  dred_repl_snapshot_unref(sn);
}

/* Send the snapshot to worker w: through shared memory when w can map our pool, else its
 * bytes behind the header on our link to w (common/net.c, "Bulk"). */
static int send_copy(dred_rt_t *rt, snapshot_t *sn, uint32_t w) {
  proto_msg_t h;
  int shm = sn->pool_off >= 0 && rt->peer_base[w] != NULL;

  if (!shm && sn->len > DRED_NET_BULK_MAX) {
    DRED_WARN("operand of %zu bytes is too large to replicate to worker %u", sn->len, w);
    return -1;
  }
  memset(&h, 0, sizeof h);
  h.type = PROTO_REPLICA;
  h.u.replica.group = sn->group;
  h.u.replica.tag = sn->tag;
  h.u.replica.member = sn->member;
  h.u.replica.len = sn->len;
  h.u.replica.pool_off = shm ? sn->pool_off : -1;
  h.u.replica.params = sn->params;
  if (shm) {
    if (dred_net_send(&rt->net, (int)w, &h, NULL) != 0) return -1;
    sn->waiting[sn->nwaiting++] = w;
    sn->refs++;
    return 0;
  }
  if (dred_net_send_bulk(&rt->net, (int)w, &h, sn->p, sn->len, copy_sent, sn) != DRED_OK) {
    DRED_WARN("cannot send a replica to worker %u", w);
    return -1;
  }
  sn->refs++;
  return 0;
}

/* The member's own copy, in its node-local store. */
static void start_local_copy(dred_rt_t *rt, snapshot_t *sn) {
  repl_io_t *io = calloc(1, sizeof *io);
  if (io == NULL) return;
  io->rt = rt;
  io->snap = sn;
  io->tag = sn->tag;
  sn->refs++;
  dred_repl_stored_add(rt, sn->group, sn->tag);
  if (dred_replica_put_async(&rt->loop, dred_repl_state(rt)->store, sn->group, sn->tag, sn->member, sn->p,
                             sn->len, local_put_done, io) != DRED_OK) {
    sn->refs--;
    free(io);
  }
}

/* Take the snapshot and start its copies; returns the worker on another node the first
 * off-node copy went to, or -1. */
static int start_copies(dred_rt_t *rt, dred_inst_t *in, proto_msg_t *ready) {
  int offnode = -1;
  uint32_t k, n = in->group->n, want, ncand, cand[PROTO_MAX_REPLICAS + PLACE_SPARE];
  snapshot_t *sn = NULL;
  dred_repl_inst_t *r;
  int defer, replicate;

  /* No accumulator: dred_ireduce could not allocate one, and the reduction ends NOMEM. */
  replicate = rt->cfg.replicas > 0 && dred_repl_state(rt)->store != NULL && !in->is_root && in->bytes > 0 &&
              in->acc != NULL;
  if (!replicate || (sn = calloc(1, sizeof *sn)) == NULL || (r = dred_repl_inst_of(in)) == NULL) {
    if (replicate) DRED_WARN("no memory for a replica snapshot: operand not replicated");
    free(sn);
    /* No copies will be taken, so acc is an ordinary accumulator that combines in place:
     * it must not stay listed as a snapshot. */
    if (in->repl != NULL) {
      dred_snapdir_retire(rt, in->repl->dir_slot);
      in->repl->dir_slot = -1;
    }
    return -1;
  }
  if (in->acc_early) {
    /* dred_ireduce already copied the operand -- into our pool, or into private memory
     * when the pool had no room: that buffer is the snapshot, and the engine holds it
     * (read-only) until its first combine moves on.  A private one is no less a snapshot
     * for the copies sent from it; only node peers cannot read it (no directory slot).
     * Copying it again here, on the loop's thread, would stall the loop for seconds with
     * operands of gigabytes (docs/design.md, Limits). */
    sn->p = in->acc;
    sn->pool_off = in->pool_off;
    sn->malloced = in->acc_malloced;
    if (in->acc_is_app) { /* zero copy: the snapshot is the application's block itself */
      sn->borrowed = in->app_blk;
      dred_mem_ref(rt, sn->borrowed);
    }
    sn->dir_slot = r->dir_slot;
    r->dir_slot = -1;
    r->snap = sn;
    sn->refs = 1;
  } else {
    if (dred_dp_buf_alloc(rt, in->bytes, &sn->p, &sn->pool_off, &sn->malloced) != DRED_OK) {
      DRED_WARN("no memory for a replica snapshot of %zu bytes: operand not replicated",
                in->bytes);
      free(sn);
      return -1;
    }
    memcpy(sn->p, in->acc, in->bytes); /* the operand, copied from sendbuf at the call */
    if (sn->pool_off >= 0) MPI_Win_sync(rt->swin); /* node peers read it after our header */
    sn->dir_slot = -1;
  }
  sn->rt = rt;
  sn->len = in->bytes;
  sn->group = in->group_id;
  sn->tag = in->tag;
  sn->member = in->member;
  sn->params = proto_params_of(ready);
  sn->refs++; /* held while copies are being started */
  dred_queue_insert_tail(&dred_repl_state(rt)->snapshots, &sn->link);
  (void)dred_keymap_insert(&dred_repl_state(rt)->snap_index, &sn->knode, sn->group, sn->tag);
  dred_queue_init(&sn->dlink);

  /* Copies at other members.  Those reading our shared memory may wait: until
   * they start, the snapshot itself -- in the pool, listed in the directory -- is what a
   * node peer recovers the operand from, and a reduction that ends first needs no copy. */
  defer = rt->cfg.replica_delay_ms > 0 && sn->pool_off >= 0;
  want = (uint32_t)rt->cfg.replicas - 1;
  if (want > PROTO_MAX_REPLICAS) want = PROTO_MAX_REPLICAS;
  /* Where: common/placement.h, the rule dred-master also walks when it recovers (the next
   * live member on another node first).  A few spare candidates stand in for a copy that
   * cannot be sent. */
  ncand = dred_place_replicas(n, in->group->workers, rt->boot.node_of, rt->failed, in->member,
                              want + PLACE_SPARE, cand);
  for (k = 0; k < ncand && ready->u.ready.nreplicas < want; k++) {
    uint32_t w = cand[k];
    if (defer && rt->peer_base[w] != NULL) {
      sn->later[sn->nlater++] = w;
      ready->u.ready.replicas[ready->u.ready.nreplicas++] = w;
    } else if (send_copy(rt, sn, w) == 0) {
      ready->u.ready.replicas[ready->u.ready.nreplicas++] = w;
      if (offnode < 0 && rt->boot.node_of[w] != rt->boot.node_of[rt->world_rank]) offnode = (int)w;
    }
  }
  if (defer) {
    sn->deferred = 1;
    sn->due_ns = uv_hrtime() + rt->cfg.replica_delay_ms * 1000000ull;
    dred_queue_insert_tail(&dred_repl_state(rt)->deferred, &sn->dlink);
    sn->refs++; /* the deferred copies' hold */
  } else {
    start_local_copy(rt, sn);
  }
  dred_repl_snapshot_unref(sn);
  return offnode;
}

void dred_repl_on_announce(dred_rt_t *rt, dred_inst_t *in, proto_msg_t *ready) {
  int offnode = start_copies(rt, in, ready);
  /* dred_ireduce may be waiting for the off-node copy (offnode.c): name its holder, or
   * let the call go on when there is none */
  if (dred_handover_offnode(rt, in)) dred_handover_expect(rt, in->group_id, in->tag, offnode);
}

/* The deferred copies of `sn` are due (or its reduction ended: cancel them). */
void dred_repl_deferred_run(dred_rt_t *rt, snapshot_t *sn, int cancel) {
  int i;
  sn->deferred = 0;
  dred_queue_remove(&sn->dlink);
  if (!cancel) {
    start_local_copy(rt, sn);
    for (i = 0; i < sn->nlater; i++)
      if (!rt->failed[sn->later[i]]) (void)send_copy(rt, sn, sn->later[i]);
  }
  sn->nlater = 0;
  dred_repl_snapshot_unref(sn); /* the deferred copies' hold */
}

void dred_repl_snapshot_drop(dred_rt_t *rt, dred_inst_t *in) {
  snapshot_t *sn = in->repl != NULL ? in->repl->snap : NULL;
  (void)rt;
  if (sn == NULL || sn->absorbed) return; /* an absorbed one stays until the end (absorb.c) */
  in->repl->snap = NULL;
  dred_repl_snapshot_unref(sn);
}

/* A neighbour wrote the copy it read from our shared memory, or (pool_off -1) has the
 * whole copy we sent it on its link. */
void dred_repl_on_ack(dred_rt_t *rt, int src, const proto_msg_t *m) {
  dred_keymap_node_t *k, *kn;
  if (m->u.replica.pool_off < 0) {
    if (m->u.replica.len == 0)
      DRED_WARN("worker %d did not keep our copy of tag " PROTO_KEY_FMT, src,
                PROTO_KEY_ARG(m->u.replica.tag));
    dred_handover_held(rt, m->u.replica.group, m->u.replica.tag, m->u.replica.len ? src : -1);
    return;
  }
  DRED_KEYMAP_FOREACH_KEY(k, kn, &dred_repl_state(rt)->snap_index, m->u.replica.group,
                          m->u.replica.tag) {
    snapshot_t *sn = DRED_KEYMAP_DATA(k, snapshot_t, knode);
    int i;
    if (sn->pool_off != m->u.replica.pool_off) continue;
    for (i = 0; i < sn->nwaiting; i++) {
      if (sn->waiting[i] != (uint32_t)src) continue;
      sn->waiting[i] = sn->waiting[--sn->nwaiting];
      dred_repl_snapshot_unref(sn);
      return;
    }
  }
  DRED_WARN("REPLICA_ACK from worker %d matches no snapshot", src);
}
