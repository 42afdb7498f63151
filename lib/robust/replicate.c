/*
 * replicate.c -- libdred's robust layer: operand replicas, recovery, reactions to failures.
 *
 * Kept apart from the failure-free engine (api.c, runtime.c, lib/mpi/), rabit-style.
 * The engine's reductions carry no robust state of their own: one opaque pointer
 * (dred_inst_t.repl, replicate_internal.h) that this layer fills when it first needs to.
 * The engine calls in at its events -- a reduction's operand is in the pool (publish), it
 * is announced, it ends, a message for this layer arrives (REPLICA, REPLICA_ACK, RECOVER,
 * FAILED, SHUTDOWN), a loop turn -- and asks it four questions about a reduction's
 * buffers (is acc the snapshot, is a store read in flight, which recovered copy is a
 * task's destination, release them): the table dred_robust_t of runtime.h, filled at the
 * end of this file and called through rt->robust, so no engine object links against this
 * layer (tests/check-layers.sh checks it).  This layer in turn uses the engine's services
 * (buffers, messages to the master, ending a reduction), never its internals.  With DRED_REPLICAS=0 and no failure the per-reduction
 * hooks are not called and no robust state is allocated.
 *
 * Files, one concern each (shared internals: replicate_internal.h):
 *   absorb.c         combining into the snapshot in place, and a node peer finishing it
 *   replicate.c      this overview; the replica store's life (open at dred_init, deleted
 *                    at dred_finalize) and the engine's hooks that touch every part:
 *                    FAILED, END, SHUTDOWN and the per-turn progress (deferred copies
 *                    due, parked RECOVERs retried)
 *   replica_send.c   the member's snapshot and the copies sent from it: placement,
 *                    shared-memory and bulk-link copies, the local copy, REPLICA_ACK
 *   replica_recv.c   copies other members send us: headers checked against their
 *                    segments, the writes into our store
 *   recover.c        answering RECOVER: our operand reloaded, another member's read from
 *                    its copy here or from a dead node peer's snapshot directory
 *
 * Replicas (seed 002, section 3).  A non-root member's operand is snapshotted in its
 * shared-memory pool by dred_ireduce itself (buffer.c: the accumulator, filled on the
 * caller's thread, and listed in the pool's snapshot directory, snapdir.c); when the pool
 * is full, the private copy dred_ireduce made is the snapshot (no directory slot: node
 * peers cannot read it).  From that snapshot a copy is written to
 * the member's own node-local store (storage/replica.c, SQLite, on the libuv thread
 * pool) and to the stores of DRED_REPLICAS-1 other live members of the group, placed by
 * common/placement.h: the first on another node when the group spans nodes.  While
 * copies are being taken the accumulator stays read-only: the member's first combine as
 * executor writes its result elsewhere and then drops its hold on the snapshot -- unless
 * no copy is being read and dred-master allows an absorption (absorb.c): then the
 * snapshot absorbs the provider's snapshot in place and, standing for both, stays until
 * the reduction ends (deferred copies of it are cancelled).
 * A neighbour on the same node reads the snapshot straight from the member's segment
 * (a REPLICA header on the control channel says where) and answers REPLICA_ACK when its
 * copy is written; a neighbour elsewhere gets the bytes behind the header on the link
 * between the two (common/net.c, "Bulk": libuv's event loop, no MPI call).  No copy goes
 * through MPI: UCX's CMA transport aborts a process whose peer dies in the middle of a
 * transfer, its TCP transport can abort a survivor the same way after a node loss, and a
 * long MPI call holds MPICH's lock while PINGs wait.  The snapshot is freed once every
 * copy is taken, so the member's future never waits for replica I/O.  A member that dies
 * before its neighbour heard of the snapshot is still recoverable: a node peer asked for
 * its operand reads it from the dead member's snapshot directory.  The root does not
 * replicate: if it dies the reduction fails with DRED_ERR_ROOT_FAILED whatever its
 * operand's fate.  Copies are dropped when their reduction ends; the store file is deleted
 * at dred_finalize (unless DRED_KEEP_STORAGE=1), with the job's directory once empty.  The
 * store lives in <DRED_STORAGE_DIR>/job-<id> (storage/storedir.h), opened at dred_init
 * (dred_repl_open): a job that asked for replicas and cannot keep them fails there.
 *
 * Recovery.  The scheduler asks a worker to RECOVER member m's operand.  For its own
 * operand the worker reloads its primary buffer from its local copy (falling back to
 * sendbuf, which the API keeps valid and unchanged, if that copy is missing or corrupt);
 * for another member's it reads the neighbour copy it stores into a new buffer.  Either
 * way it answers with a READY flagged recovered.  A RECOVER for a reduction this process
 * has not called yet, or whose copy is still being written, is parked and retried.
 *
 * Failures.  FAILED(w) abandons replica traffic with w and stops tasks reading w over RMA
 * (a read from a dead process never completes); tasks reading w's shared-memory segment
 * go on, since the segment outlives the process.
 *
 * Scale.  Thousands of reductions may be in flight, each with a snapshot, so nothing a
 * single message triggers walks them all: snapshots are indexed by (group, tag) for END
 * and REPLICA_ACK, deferred ones wait in due order (one delay for all, so arrival order
 * is due order), and each turn tests a bounded number of replica transfers, round robin.
 * Only a FAILED report, rare by nature, walks every snapshot and transfer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/leave.h"
#include "../../common/log.h"
#include "../../common/status.h"
#include "../../storage/replica.h"
#include "../../storage/replica_async.h"
#include "../../storage/storedir.h"
#include "../engine/robust.h"
#include "../mpi/dataplane.h"
#include "../paths/handover.h"
#include "../paths/offnode.h"
#include "replicate_internal.h"

static void state_free(dred_repl_state_t *st) {
  dred_keymap_free(&st->snap_index);
  dred_keymap_free(&st->held_index);
  dred_keymap_free(&st->stored);
  dred_keymap_free(&st->params_index);
  free(st);
}

int dred_repl_open(dred_rt_t *rt) {
  dred_repl_state_t *st;
  int rc;
  if ((st = calloc(1, sizeof *st)) == NULL) return DRED_ERR_NOMEM;
  dred_queue_init(&st->snapshots);
  dred_queue_init(&st->deferred);
  dred_queue_init(&st->held);
  dred_queue_init(&st->writes);
  dred_queue_init(&st->parked);
  /* the maps get their slots now and lose them at close, so an insert between never fails */
  if (dred_keymap_init(&st->snap_index) != DRED_OK ||
      dred_keymap_init(&st->held_index) != DRED_OK || dred_keymap_init(&st->stored) != DRED_OK ||
      dred_keymap_init(&st->params_index) != DRED_OK) {
    state_free(st);
    return DRED_ERR_NOMEM;
  }
  rt->robust_state = st;
  if (rt->cfg.replicas == 0) return DRED_OK;
  /* The job's own directory: another job of this user on this node has another one, so
   * stores are never shared (a store the other job holds open would be refused). */
  if ((rc = dred_storedir_job(rt->cfg.storage_dir, rt->job_id, st->jobdir,
                              sizeof st->jobdir)) == DRED_OK)
    rc = dred_replica_open(st->jobdir, (uint32_t)rt->world_rank, rt->job_id, &st->store);
  if (rc != DRED_OK) {
    DRED_ERROR("dred_init: no replica store in %s (%s, see above): failing with "
               "DRED_ERR_STORAGE (DRED_REPLICAS=0 runs without replicas)",
               st->jobdir[0] ? st->jobdir : rt->cfg.storage_dir, dred_status_str(rc));
    st->store = NULL;
    if (st->jobdir[0] && !rt->cfg.keep_storage) dred_storedir_release(st->jobdir);
    st->jobdir[0] = '\0';
    return DRED_ERR_STORAGE;
  }
  if (!rt->cfg.keep_storage) { /* a signal that ends us removes the store too (leave.h) */
    char path[DRED_LEAVE_PATH_MAX];
    unsigned i;
    for (i = 0; i < DRED_REPLICA_FILES; i++)
      if (dred_replica_file(st->jobdir, (uint32_t)rt->world_rank, i, path, sizeof path) == DRED_OK)
        dred_leave_add(path, 0);
    dred_leave_add(st->jobdir, 1); /* if empty: the master's node keeps its journal there */
  }
  return DRED_OK;
}

int dred_repl_init(dred_rt_t *rt) {
  dred_repl_state_t *st = dred_repl_state(rt);
  if (st->store != NULL) dred_replica_set_pause(st->store, dred_handover_yield, rt);
  return DRED_OK;
}

static void stored_clear(dred_repl_state_t *st);

void dred_repl_close(dred_rt_t *rt) {
  dred_repl_state_t *st = dred_repl_state(rt);
  char path[600];
  if (st == NULL) return; /* open failed for want of memory */
  if (rt->handover_waits > 0)
    DRED_INFO("replica writes stepped aside %llu time(s), %.1f ms in all, for operand copies",
              (unsigned long long)rt->handover_waits, (double)rt->handover_wait_ns / 1e6);
  if (rt->offnode_calls > 0)
    DRED_INFO("%llu dred_ireduce call(s) waited for an off-node copy: %.1f ms on average, "
              "%.1f ms at most (DRED_HANDOVER_NODE)", (unsigned long long)rt->offnode_calls,
              (double)rt->offnode_ns / 1e6 / (double)rt->offnode_calls,
              (double)rt->offnode_max_ns / 1e6);
  stored_clear(st);
  dred_repl_held_clear(rt);
  dred_repl_params_clear(rt);
  if (st->store == NULL) return;
  snprintf(path, sizeof path, "%s", dred_replica_path(st->store));
  dred_replica_close(st->store);
  st->store = NULL;
  if (rt->cfg.keep_storage) {
    DRED_INFO("replica store %s kept (DRED_KEEP_STORAGE=1)", path);
    return;
  }
  /* Copies only matter while the job runs; leave no file behind. */
  (void)dred_replica_remove(st->jobdir, (uint32_t)rt->world_rank);
  dred_storedir_release(st->jobdir); /* the last process of the job on this node */
}

void dred_repl_destroy(dred_rt_t *rt) {
  if (rt->robust_state != NULL) state_free(rt->robust_state);
  rt->robust_state = NULL;
}

/* ---- failures and ends ----------------------------------------------------------------- */

void dred_repl_on_failed(dred_rt_t *rt, uint32_t w) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_queue_t *q, *n;
  /* A dead process cannot remove its replica store, and only its owner ever reads one
   * (where our storage directory is not its node's, there is nothing to remove). */
  if (st->store != NULL && !rt->cfg.keep_storage) (void)dred_replica_remove(st->jobdir, w);
  /* Snapshots waiting for w's REPLICA_ACK will not get it. */
  DRED_QUEUE_FOREACH_SAFE(q, n, &st->snapshots) {
    snapshot_t *sn = DRED_QUEUE_DATA(q, snapshot_t, link);
    int i;
    for (i = 0; i < sn->nwaiting; i++) {
      if (sn->waiting[i] != w) continue;
      sn->waiting[i] = sn->waiting[--sn->nwaiting];
      dred_repl_snapshot_unref(sn);
      break;
    }
  }
}

/* ---- keys with copies in our store: a set of (group, tag), one node each ---- */

void dred_repl_stored_add(dred_rt_t *rt, uint64_t group, int64_t tag) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_keymap_node_t *k;
  if (dred_keymap_find(&st->stored, group, tag) != NULL) return;
  if ((k = malloc(sizeof *k)) == NULL) return; /* then END will not drop it: a row left
                                                  until the store file goes at finalize */
  (void)dred_keymap_insert(&st->stored, k, group, tag);
}

int dred_repl_stored_take(dred_rt_t *rt, uint64_t group, int64_t tag) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_keymap_node_t *k = dred_keymap_find(&st->stored, group, tag);
  if (k == NULL) return 0;
  dred_keymap_remove(&st->stored, k);
  free(k);
  return 1;
}

static void stored_clear(dred_repl_state_t *st) {
  dred_keymap_node_t *k, *kn;
  DRED_KEYMAP_FOREACH_SAFE(k, kn, &st->stored) {
    dred_keymap_remove(&st->stored, k);
    free(k);
  }
}

static void drop_done(void *arg, int status) {
  (void)arg;
  (void)status;
}

/* ---- the engine's questions about one reduction ---- */

dred_repl_inst_t *dred_repl_inst_of(dred_inst_t *in) {
  dred_repl_inst_t *r = in->repl;
  if (r != NULL) return r;
  if ((r = calloc(1, sizeof *r)) == NULL) return NULL;
  r->dir_slot = -1;
  dred_queue_init(&r->rbufs);
  in->repl = r;
  return r;
}

void dred_repl_publish(dred_rt_t *rt, dred_inst_t *in) {
  dred_repl_inst_t *r;
  proto_params_t params;
  /* only an operand already in our pool, which node peers can read, and never the root's
   * (it does not replicate: its death fails the reduction whatever its operand's fate) */
  if (!in->acc_early || in->is_root || in->pool_off < 0 || !dred_snapdir_usable(rt)) return;
  if ((r = dred_repl_inst_of(in)) == NULL) {
    DRED_WARN("no memory to list a snapshot: a node peer cannot recover this operand until "
              "its copies are taken");
    return;
  }
  params = dred_rt_params(in);
  r->dir_slot = dred_snapdir_publish(rt, in->group_id, in->tag, in->member, in->pool_off,
                                     in->bytes, &params);
}

int dred_repl_acc_is_snapshot(const dred_inst_t *in) {
  return in->repl != NULL && in->repl->snap != NULL && in->repl->snap->p == in->acc;
}

int dred_repl_busy(const dred_inst_t *in) { return in->repl != NULL && in->repl->io_pending > 0; }

/* The newest copy recovered here for `member`: the one dred-master was last told of, which
 * its next TASK for that member means.  An older one is what we held before the master
 * lost the message that covered it (a provider read that failed, a later death) and asked
 * for the member again: it may hold other operands combined into it since, so a task
 * combining into it would count them twice.  (Kept until the instance is released: a
 * stopped read of it may still be landing.) */
dred_rbuf_t *dred_repl_rbuf(dred_inst_t *in, uint32_t member) {
  dred_queue_t *q;
  dred_rbuf_t *last = NULL;
  if (in->repl == NULL) return NULL;
  DRED_QUEUE_FOREACH(q, &in->repl->rbufs) {
    dred_rbuf_t *b = DRED_QUEUE_DATA(q, dred_rbuf_t, link);
    if (b->member == member) last = b;
  }
  return last;
}

int dred_repl_inst_release(dred_rt_t *rt, dred_inst_t *in) {
  dred_repl_inst_t *r = in->repl;
  dred_queue_t *q;
  int was_snapshot;
  if (r == NULL) return 0;
  while ((q = dred_queue_head(&r->rbufs)) != NULL) {
    dred_rbuf_t *b = DRED_QUEUE_DATA(q, dred_rbuf_t, link);
    dred_queue_remove(q);
    dred_dp_buf_free(rt, in->bytes, b->p, b->pool_off, b->malloced);
    free(b);
  }
  dred_snapdir_retire(rt, r->dir_slot); /* published but never handed to a snapshot */
  was_snapshot = dred_repl_acc_is_snapshot(in);
  if (r->snap != NULL) { /* it frees acc, if acc is the snapshot, once its copies are taken */
    r->snap->absorbed = 0;
    dred_repl_snapshot_drop(rt, in);
  }
  in->repl = NULL;
  free(r);
  return was_snapshot;
}

void dred_repl_on_end(dred_rt_t *rt, dred_inst_t *in) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_keymap_node_t *k, *kn;
  dred_queue_t *q, *n;
  /* Copies not started yet are not needed any more.  Nor is the snapshot's directory
   * entry: copies still being taken may outlive the reduction, and a later reduction
   * with the same tag must not find this operand listed under its key -- least of all
   * when it is the application's block, which it may rewrite as soon as its future is
   * done. */
  if (dred_handover_offnode(rt, in)) dred_handover_held(rt, in->group_id, in->tag, -1); /* nothing left to lose */
  DRED_KEYMAP_FOREACH_KEY(k, kn, &st->snap_index, in->group_id, in->tag) {
    snapshot_t *sn = DRED_KEYMAP_DATA(k, snapshot_t, knode);
    dred_snapdir_retire(rt, sn->dir_slot);
    sn->dir_slot = -1;
    if (sn->deferred) dred_repl_deferred_run(rt, sn, 1);
  }
  dred_repl_held_drop(rt, in->group_id, in->tag); /* copies held for it, never written */
  dred_repl_params_drop(rt, in->group_id, in->tag);
  if (st->store != NULL && dred_repl_stored_take(rt, in->group_id, in->tag))
    dred_replica_drop_async(&rt->loop, st->store, in->group_id, in->tag, drop_done, NULL);
  /* parked RECOVERs for it are moot now */
  DRED_QUEUE_FOREACH_SAFE(q, n, &st->parked) {
    parked_t *p = DRED_QUEUE_DATA(q, parked_t, link);
    if (p->msg.u.recover.group == in->group_id && p->msg.u.recover.tag == in->tag) {
      dred_queue_remove(q);
      free(p);
    }
  }
}

void dred_repl_on_shutdown(dred_rt_t *rt) {
  /* Every member said BYE, so every reduction ended: copies still queued are moot. */
  dred_repl_held_clear(rt);
  dred_repl_params_clear(rt);
  if (dred_repl_state(rt)->store != NULL) dred_replica_set_moot(dred_repl_state(rt)->store);
}

/* A parked RECOVER may go on now: retried at the next progress. */
void dred_repl_on_peer_drained(dred_rt_t *rt) {
  dred_repl_state_t *st = dred_repl_state(rt);
  if (!dred_queue_empty(&st->parked)) st->parked_retry = 1;
}

void dred_repl_on_ready_sent(dred_rt_t *rt, dred_inst_t *in) {
  (void)in;
  dred_repl_on_peer_drained(rt); /* one may wait for this call */
}

unsigned dred_repl_waiting(const dred_rt_t *rt) {
  const dred_repl_state_t *st = dred_repl_state(rt);
  return (dred_queue_empty(&st->parked) ? 0u : DRED_ROBUST_PARKED) |
         (st->parked_retry ? DRED_ROBUST_RETRY : 0u);
}

int dred_repl_progress(dred_rt_t *rt, uint64_t *next_due_ns) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_queue_t *q, *n;
  int work = 0;
  uint64_t now = 0;

  /* Due order is arrival order: look at the head only. */
  *next_due_ns = 0;
  while ((q = dred_queue_head(&st->deferred)) != NULL) {
    snapshot_t *sn = DRED_QUEUE_DATA(q, snapshot_t, dlink);
    if (now == 0) now = uv_hrtime();
    if (now < sn->due_ns) {
      *next_due_ns = sn->due_ns; /* an idle loop must still wake for it */
      break;
    }
    dred_repl_deferred_run(rt, sn, 0);
    work++;
  }
  work += dred_repl_held_progress(rt, next_due_ns);

  /* Consumed whether or not anything is parked: the flag keeps the loop turning
   * (runtime.c), so one left set would make every runtime thread spin for the rest of
   * the job after its first announcement. */
  if (st->parked_retry) {
    st->parked_retry = 0;
    DRED_QUEUE_FOREACH_SAFE(q, n, &st->parked) {
      parked_t *p = DRED_QUEUE_DATA(q, parked_t, link);
      if (dred_repl_try_recover(rt, &p->msg)) {
        dred_queue_remove(q);
        free(p);
        work++;
      }
    }
  }
  return work;
}

/* ---- the table the engine calls through (runtime.h, dred_robust_t) ---- */

static const dred_robust_t robust_layer = {
    .open = dred_repl_open,
    .init = dred_repl_init,
    .close = dred_repl_close,
    .destroy = dred_repl_destroy,
    .on_operand_pooled = dred_repl_publish,
    .on_ready = dred_repl_on_announce,
    .on_ready_sent = dred_repl_on_ready_sent,
    .on_peer_drained = dred_repl_on_peer_drained,
    .on_task_start = dred_absorb_begin,
    .task_step = dred_absorb_step,
    .on_task_finished = dred_absorb_end,
    .on_acc_replaced = dred_repl_snapshot_drop,
    .on_reduction_end = dred_repl_on_end,
    .on_buffers_release = dred_repl_inst_release,
    .on_replica = dred_repl_on_header,
    .on_replica_ack = dred_repl_on_ack,
    .on_recover = dred_repl_on_recover,
    .on_member_failed = dred_repl_on_failed,
    .on_shutdown = dred_repl_on_shutdown,
    .on_turn = dred_repl_progress,
    .waiting = dred_repl_waiting,
    .acc_read_only = dred_repl_acc_is_snapshot,
    .acc_listed = dred_absorb_acc_ok,
    .pool_extra = dred_absorb_room,
    .reading = dred_repl_busy,
    .recovered = dred_repl_rbuf,
};

const dred_robust_t *dred_robust_layer(void) { return &robust_layer; }
