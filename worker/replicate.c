/*
 * replicate.c -- libdred's robust layer: operand replicas, recovery, reactions to failures.
 *
 * Kept apart from the failure-free engine (runtime.c, dataplane.c), rabit-style: the
 * engine calls in here at four points -- a reduction is announced, it ends, the master
 * asks for a RECOVER, the master reports a FAILED worker -- and this file does the rest.
 *
 * Replicas (seed 002, section 3).  A non-root member's operand is snapshotted in its
 * shared-memory pool by dred_ireduce itself (dataplane.c: the accumulator, filled on the
 * caller's thread, and listed in the pool's snapshot directory, snapdir.c); when the pool
 * is full, announce takes a separate snapshot.  From that snapshot a copy is written to
 * the member's own node-local store (storage/replica.c, SQLite, on the libuv thread
 * pool) and to the stores of DRED_REPLICAS-1 other live members of the group, placed by
 * common/placement.h: the first on another node when the group spans nodes.  While
 * copies are being taken the accumulator stays read-only: the member's first combine as
 * executor writes its result elsewhere and then drops its hold on the snapshot.
 * A neighbour on the same node reads the snapshot straight from the member's segment
 * (a REPLICA header on the control channel says where) and answers REPLICA_ACK when its
 * copy is written; a neighbour elsewhere gets the bytes behind the header on the link
 * between the two (common/net.c, "Bulk": libuv's event loop, no MPI call).  No copy goes
 * through MPI: UCX's CMA transport aborts a process whose peer dies in the middle of a
 * transfer, its TCP transport was seen to abort a survivor the same way after a node
 * loss, and a long MPI call holds MPICH's lock while PINGs wait.  The snapshot is freed once every
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
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/placement.h"
#include "../common/status.h"
#include "../storage/replica.h"
#include "../storage/replica_async.h"
#include "../storage/storedir.h"
#include "runtime.h"

#define PLACE_SPARE 2 /* candidates beyond DRED_REPLICAS-1, for copies that cannot be sent */

/* A member's own copy of its operand, the source of every replica of it. */
typedef struct {
  dred_rt_t *rt;
  char *p;
  int64_t pool_off; /* >= 0: in our pool, readable by node peers */
  int malloced;
  dred_memblk_t *borrowed; /* p is the application's dred_alloc_mem block: never freed here */
  size_t len;
  int refs;         /* copies still being taken */
  dred_queue_t link; /* rt-wide list of snapshots (so FAILED can release them) */
  uint64_t group;
  int64_t tag;
  uint32_t waiting[PROTO_MAX_REPLICAS]; /* shared-memory neighbours yet to ACK */
  int nwaiting;
  int dir_slot;      /* snapshot directory slot (snapdir.c), or -1 */
  uint32_t member;
  dred_queue_t hlink; /* snap_index bucket of (group, tag) */
  dred_queue_t dlink; /* deferred_q while deferred */
  /* Deferred copies (DRED_REPLICA_DELAY_MS): the local copy and the shared-memory
   * neighbours, started at due_ns by dred_repl_progress unless the reduction ended first. */
  int deferred;
  uint64_t due_ns;
  uint32_t later[PROTO_MAX_REPLICAS];
  int nlater;
} snapshot_t;

static dred_queue_t snapshots = {&snapshots, &snapshots};

/* Snapshots by (group, tag): a fixed table (chains stay short for tens of thousands). */
#define SNAP_BUCKETS 4096u
static dred_queue_t snap_index[SNAP_BUCKETS];
static dred_queue_t deferred_q = {&deferred_q, &deferred_q}; /* deferred, in due order */


static unsigned snap_bucket(uint64_t group, int64_t tag) {
  uint64_t h = (group ^ ((uint64_t)tag * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
  return (unsigned)((h ^ (h >> 31)) % SNAP_BUCKETS);
}

/* An async store operation in flight (put or get). */
typedef struct {
  dred_rt_t *rt;
  dred_inst_t *inst; /* NULL for a neighbour's copy being written */
  uint64_t group;
  int64_t tag;
  uint32_t member;
  char *buf;         /* put: a received copy to free after; get: target */
  int64_t pool_off;
  int malloced;
  int is_self;       /* get: reloading our own operand into the primary buffer */
  dred_queue_t link; /* writes: rt-wide list, so RECOVER can wait for them */
  snapshot_t *snap;  /* local put: the snapshot it reads */
  int ack_to;        /* neighbour put from shared memory: who gets REPLICA_ACK (-1 none) */
  int64_t ack_off;
} repl_io_t;

/* Neighbour copies being written (one runtime thread per process, so one list). */
static dred_queue_t writes_in_flight = {&writes_in_flight, &writes_in_flight};

typedef struct {
  dred_queue_t link; /* rt->parked */
  proto_msg_t msg;
} parked_t;

int dred_repl_open(dred_rt_t *rt) {
  int rc;
  unsigned b;
  for (b = 0; b < SNAP_BUCKETS; b++) dred_queue_init(&snap_index[b]);
  if (rt->cfg.replicas == 0) return DRED_OK;
  /* The job's own directory: another job of this user on this node has another one, so
   * stores are never shared (before, the second job ran without replicas, silently). */
  if ((rc = dred_storedir_job(rt->cfg.storage_dir, rt->job_id, rt->jobdir,
                              sizeof rt->jobdir)) == DRED_OK)
    rc = dred_replica_open(rt->jobdir, (uint32_t)rt->world_rank, rt->job_id, &rt->store);
  if (rc != DRED_OK) {
    DRED_ERROR("dred_init: no replica store in %s (%s, see above): failing with "
               "DRED_ERR_STORAGE (DRED_REPLICAS=0 runs without replicas)",
               rt->jobdir[0] ? rt->jobdir : rt->cfg.storage_dir, dred_status_str(rc));
    rt->store = NULL;
    if (rt->jobdir[0] && !rt->cfg.keep_storage) dred_storedir_release(rt->jobdir);
    return DRED_ERR_STORAGE;
  }
  return DRED_OK;
}

int dred_repl_init(dred_rt_t *rt) {
  if (rt->store != NULL) dred_replica_set_pause(rt->store, dred_handover_yield, rt);
  return DRED_OK;
}

void dred_repl_close(dred_rt_t *rt) {
  char path[600];
  if (rt->handover_waits > 0)
    DRED_INFO("replica writes stepped aside %llu time(s), %.1f ms in all, for operand copies",
              (unsigned long long)rt->handover_waits, (double)rt->handover_wait_ns / 1e6);
  if (rt->store == NULL) return;
  snprintf(path, sizeof path, "%s", dred_replica_path(rt->store));
  dred_replica_close(rt->store);
  rt->store = NULL;
  if (rt->cfg.keep_storage) {
    DRED_INFO("replica store %s kept (DRED_KEEP_STORAGE=1)", path);
    return;
  }
  /* Copies only matter while the job runs; leave no file behind. */
  unlink(path);
  {
    char side[620];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-journal", path);
    unlink(side);
  }
  dred_storedir_release(rt->jobdir); /* the last process of the job on this node */
}

/* ---- taking copies ------------------------------------------------------------------- */

static void snapshot_unref(snapshot_t *sn) {
  if (--sn->refs > 0) return;
  dred_queue_remove(&sn->link);
  dred_queue_remove(&sn->hlink);
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
    DRED_WARN("local replica of tag %lld not stored: %s", (long long)io->tag,
              dred_status_str(status));
  snapshot_unref(io->snap);
  free(io);
}

/* A copy's bytes are written (or the link broke): the snapshot may go. */
static void copy_sent(void *arg, int status) {
  (void)status; /* a copy that did not arrive is the receiver's loss, seen at recovery */
  snapshot_unref(arg);
}

/* Send the snapshot to worker w: through shared memory when w can map our pool, else its
 * bytes behind the header on our link to w (common/net.c, "Bulk"). */
static int send_copy(dred_rt_t *rt, snapshot_t *sn, uint32_t w) {
  proto_msg_t h;
  int shm = sn->pool_off >= 0 && rt->peer_base[w] != NULL;

  if (!shm && sn->len > (size_t)INT32_MAX) {
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
  if (dred_replica_put_async(&rt->loop, rt->store, sn->group, sn->tag, sn->member, sn->p,
                             sn->len, local_put_done, io) != DRED_OK) {
    sn->refs--;
    free(io);
  }
}

void dred_repl_on_announce(dred_rt_t *rt, dred_inst_t *in, proto_msg_t *ready) {
  uint32_t k, n = in->group->n, want, ncand, cand[PROTO_MAX_REPLICAS + PLACE_SPARE];
  snapshot_t *sn;
  int defer, replicate;

  /* No accumulator: dred_ireduce could not allocate one, and the reduction ends NOMEM. */
  replicate = rt->cfg.replicas > 0 && rt->store != NULL && !in->is_root && in->bytes > 0 &&
              in->acc != NULL;
  if (!replicate || (sn = calloc(1, sizeof *sn)) == NULL) {
    if (replicate) DRED_WARN("no memory for a replica snapshot: operand not replicated");
    /* No copies will be taken, so acc is an ordinary accumulator that combines in place:
     * it must not stay listed as a snapshot. */
    dred_snapdir_retire(rt, in->dir_slot);
    in->dir_slot = -1;
    return;
  }
  if (in->acc_early && in->pool_off >= 0) {
    /* dred_ireduce already put the operand in our pool: that block is the snapshot, and
     * the engine holds it (read-only) until its first combine moves on. */
    sn->p = in->acc;
    sn->pool_off = in->pool_off;
    if (in->acc_is_app) { /* zero copy: the snapshot is the application's block itself */
      sn->borrowed = in->app_blk;
      dred_mem_ref(rt, sn->borrowed);
    }
    sn->dir_slot = in->dir_slot;
    in->dir_slot = -1;
    in->snap = sn;
    sn->refs = 1;
  } else {
    if (dred_dp_buf_alloc(rt, in->bytes, &sn->p, &sn->pool_off, &sn->malloced) != DRED_OK) {
      DRED_WARN("no memory for a replica snapshot of %zu bytes: operand not replicated",
                in->bytes);
      free(sn);
      return;
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
  sn->refs++; /* held while copies are being started */
  dred_queue_insert_tail(&snapshots, &sn->link);
  dred_queue_insert_tail(&snap_index[snap_bucket(sn->group, sn->tag)], &sn->hlink);
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
    }
  }
  if (defer) {
    sn->deferred = 1;
    sn->due_ns = uv_hrtime() + rt->cfg.replica_delay_ms * 1000000ull;
    dred_queue_insert_tail(&deferred_q, &sn->dlink);
    sn->refs++; /* the deferred copies' hold */
  } else {
    start_local_copy(rt, sn);
  }
  snapshot_unref(sn);
}

/* The deferred copies of `sn` are due (or its reduction ended: cancel them). */
static void deferred_run(dred_rt_t *rt, snapshot_t *sn, int cancel) {
  int i;
  sn->deferred = 0;
  dred_queue_remove(&sn->dlink);
  if (!cancel) {
    start_local_copy(rt, sn);
    for (i = 0; i < sn->nlater; i++)
      if (!rt->failed[sn->later[i]]) (void)send_copy(rt, sn, sn->later[i]);
  }
  sn->nlater = 0;
  snapshot_unref(sn); /* the deferred copies' hold */
}

void dred_repl_snapshot_drop(dred_rt_t *rt, dred_inst_t *in) {
  snapshot_t *sn = in->snap;
  (void)rt;
  if (sn == NULL) return;
  in->snap = NULL;
  snapshot_unref(sn);
}

/* A neighbour wrote the copy it read from our shared memory. */
void dred_repl_on_ack(dred_rt_t *rt, int src, const proto_msg_t *m) {
  dred_queue_t *q;
  (void)rt;
  DRED_QUEUE_FOREACH(q, &snap_index[snap_bucket(m->u.replica.group, m->u.replica.tag)]) {
    snapshot_t *sn = DRED_QUEUE_DATA(q, snapshot_t, hlink);
    int i;
    if (sn->pool_off != m->u.replica.pool_off || sn->group != m->u.replica.group ||
        sn->tag != m->u.replica.tag)
      continue;
    for (i = 0; i < sn->nwaiting; i++) {
      if (sn->waiting[i] != (uint32_t)src) continue;
      sn->waiting[i] = sn->waiting[--sn->nwaiting];
      snapshot_unref(sn);
      return;
    }
  }
  DRED_WARN("REPLICA_ACK from worker %d matches no snapshot", src);
}

static void store_shared(dred_rt_t *rt, int src, const proto_msg_t *m);
static void store_received(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                           char *buf, size_t len);

void dred_repl_on_header(dred_rt_t *rt, int src, const proto_msg_t *m) {
  size_t len = (size_t)m->u.replica.len, got = 0;
  char *bytes;

  if (m->u.replica.pool_off >= 0) {
    store_shared(rt, src, m);
    return;
  }
  /* The bytes came behind the header and net.c queued the header only once the last of
   * them was in: a copy cut short by its sender's death never gets here. */
  bytes = dred_net_take_payload(&rt->net, &got);
  if (src <= 0 || src >= rt->world_size || rt->failed[src] || len == 0 || got != len) {
    DRED_ERROR("replica from rank %d (member %u, tag %lld, %zu bytes) refused: %s", src,
               m->u.replica.member, (long long)m->u.replica.tag, len,
               bytes == NULL ? "no memory to hold it" : "not from a live worker");
    free(bytes);
    return;
  }
  store_received(rt, m->u.replica.group, m->u.replica.tag, m->u.replica.member, bytes, len);
}

static void neighbour_put_done(void *arg, int status) {
  repl_io_t *io = arg;
  io->rt->parked_retry = 1; /* a RECOVER may be waiting for this copy */
  if (status != DRED_OK && status != DRED_ERR_SHUTDOWN) /* SHUTDOWN: skipped, moot */
    DRED_WARN("replica of member %u (tag %lld) not stored: %s", io->member, (long long)io->tag,
              dred_status_str(status));
  dred_queue_remove(&io->link);
  if (io->ack_to >= 0) {
    proto_msg_t a;
    memset(&a, 0, sizeof a);
    a.type = PROTO_REPLICA_ACK;
    a.u.replica.group = io->group;
    a.u.replica.tag = io->tag;
    a.u.replica.member = io->member;
    a.u.replica.pool_off = io->ack_off;
    /* After SHUTDOWN the member may have left its loop, and its snapshots are released
     * at close anyway. */
    if (!io->rt->failed[io->ack_to] && !io->rt->shutdown)
      dred_net_send(&io->rt->net, io->ack_to, &a, NULL);
  } else {
    free(io->buf);
  }
  free(io);
}

/* The copy sits in the member's shared-memory segment: write it from there.  The segment
 * stays mapped even if the member dies meanwhile, so the read is always safe. */
static void store_shared(dred_rt_t *rt, int src, const proto_msg_t *m) {
  repl_io_t *io;
  int rc;
  char *base = src < rt->world_size ? rt->peer_base[src] : NULL;
  char why[200] = "";
  if (base != NULL && dred_seg_check_range(&rt->segs[src], m->u.replica.pool_off,
                                           m->u.replica.len, why, sizeof why) != 0) {
    /* never read past the member's own segment, whatever its header says */
    DRED_ERROR("replica header from worker %d (member %u, tag %lld) refused: %s", src,
               m->u.replica.member, (long long)m->u.replica.tag, why);
    base = NULL;
  }
  if (base == NULL || rt->store == NULL || (io = calloc(1, sizeof *io)) == NULL) {
    proto_msg_t a = *m; /* let the member free its snapshot anyway */
    DRED_ERROR("cannot take a shared-memory replica from worker %d", src);
    a.type = PROTO_REPLICA_ACK;
    dred_net_send(&rt->net, src, &a, NULL);
    return;
  }
  MPI_Win_sync(rt->swin);
  io->rt = rt;
  io->group = m->u.replica.group;
  io->tag = m->u.replica.tag;
  io->member = m->u.replica.member;
  io->ack_to = src;
  io->ack_off = m->u.replica.pool_off;
  dred_queue_insert_tail(&writes_in_flight, &io->link);
  rc = dred_replica_put_async(&rt->loop, rt->store, io->group, io->tag, io->member,
                              base + m->u.replica.pool_off, (size_t)m->u.replica.len,
                              neighbour_put_done, io);
  if (rc != DRED_OK) neighbour_put_done(io, rc); /* still ACK: the member frees its snapshot */
}

/* A neighbour's copy that came over the network: into our store (takes `buf`). */
static void store_received(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                           char *buf, size_t len) {
  repl_io_t *io = calloc(1, sizeof *io);
  if (io == NULL || rt->store == NULL) {
    free(io);
    free(buf);
    return;
  }
  io->rt = rt;
  io->group = group;
  io->tag = tag;
  io->member = member;
  io->buf = buf;
  io->ack_to = -1;
  dred_queue_insert_tail(&writes_in_flight, &io->link);
  if (dred_replica_put_async(&rt->loop, rt->store, group, tag, member, buf, len,
                             neighbour_put_done, io) != DRED_OK) {
    dred_queue_remove(&io->link);
    free(io->buf);
    free(io);
  }
}

/* ---- recovery ------------------------------------------------------------------------ */

static void send_recovered(dred_rt_t *rt, dred_inst_t *in, uint32_t member, const char *p,
                           int64_t pool_off) {
  proto_msg_t m;
  dred_rt_ready(in, member, &m);
  m.u.ready.recovered = 1;
  m.u.ready.buf = dred_rt_bufref(rt, p, pool_off, in->bytes);
  if (pool_off >= 0) MPI_Win_sync(rt->swin);
  dred_rt_send_master(rt, &m);
}

static void send_recover_failed(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                                int error) {
  proto_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = PROTO_RECOVER_FAILED;
  m.u.recover.group = group;
  m.u.recover.tag = tag;
  m.u.recover.member = member;
  m.u.recover.error = error;
  dred_rt_send_master(rt, &m);
}

/* No stored copy of a dead member's operand here.  If the member shared our node, its
 * snapshot may still be listed in its pool's directory (it died before its neighbour
 * heard of it): copy it from there into io->buf.  Returns 1 when found. */
static int snapdir_found(dred_rt_t *rt, dred_inst_t *in, repl_io_t *io) {
  uint32_t w = in->group->workers[io->member];
  return rt->failed[w] && rt->peer_base[w] != NULL &&
         dred_snapdir_read(rt, w, in->group_id, in->tag, io->member, io->buf, in->bytes) ==
             DRED_OK;
}

/* io->buf holds another member's operand: keep it with the instance and announce it. */
static int keep_recovered(dred_rt_t *rt, dred_inst_t *in, repl_io_t *io, const char *from) {
  dred_rbuf_t *b = calloc(1, sizeof *b);
  if (b == NULL) return DRED_ERR_NOMEM;
  b->member = io->member;
  b->p = io->buf;
  b->pool_off = io->pool_off;
  b->malloced = io->malloced;
  dred_queue_insert_tail(&in->rbufs, &b->link);
  DRED_INFO("recovered member %u's operand from %s (tag %lld)", io->member, from,
            (long long)in->tag);
  send_recovered(rt, in, io->member, b->p, b->pool_off);
  return DRED_OK;
}

/* Copy the caller's operand back into acc from sendbuf, which the API keeps valid and
 * unchanged -- unless the application abandoned the reduction (freed its pending
 * future): then sendbuf may be gone, and DRED_ERR_PROC_FAILED says so.  The future's lock
 * is held across the copy, so a dred_future_free that returned never races with it. */
static int reload_from_sendbuf(dred_rt_t *rt, dred_inst_t *in) {
  int rc;
  if (dred_future_abandoned_lock(in->fut)) return DRED_ERR_PROC_FAILED;
  rc = dred_dp_load(rt, in, in->acc); /* packed or image layouts as at the call */
  dred_future_unlock(in->fut);
  return rc;
}

static void recover_get_done(void *arg, int status) {
  repl_io_t *io = arg;
  dred_rt_t *rt = io->rt;
  dred_inst_t *in = io->inst;

  in->io_pending--;
  if (in->state != INST_ANNOUNCED) { /* ended meanwhile */
    if (!io->is_self) dred_dp_buf_free(rt, in->bytes, io->buf, io->pool_off, io->malloced);
  } else if (io->is_self) {
    if (status != DRED_OK && reload_from_sendbuf(rt, in) != DRED_OK) {
      DRED_ERROR("local replica of my operand (tag %lld) unusable (%s) and the reduction was "
                 "abandoned (its sendbuf is no longer ours): cannot recover it",
                 (long long)in->tag, dred_status_str(status));
      send_recover_failed(rt, in->group_id, in->tag, in->member, DRED_ERR_PROC_FAILED);
    } else {
      if (status != DRED_OK)
        DRED_WARN("local replica of my operand (tag %lld) unusable (%s): reloaded from sendbuf",
                  (long long)in->tag, dred_status_str(status));
      DRED_INFO("recovered my operand (tag %lld)", (long long)in->tag);
      send_recovered(rt, in, in->member, in->acc, in->pool_off);
    }
  } else {
    const char *from = "my replica store";
    if (status != DRED_OK && snapdir_found(rt, in, io)) {
      status = DRED_OK;
      from = "its snapshot in shared memory";
    }
    if (status == DRED_OK) status = keep_recovered(rt, in, io, from);
    if (status != DRED_OK) {
      dred_dp_buf_free(rt, in->bytes, io->buf, io->pool_off, io->malloced);
      send_recover_failed(rt, in->group_id, in->tag, io->member, status);
    }
  }
  dred_rt_inst_maybe_finish(rt, in);
  free(io);
}

static int write_pending(uint64_t group, int64_t tag, uint32_t member) {
  dred_queue_t *q;
  DRED_QUEUE_FOREACH(q, &writes_in_flight) {
    repl_io_t *io = DRED_QUEUE_DATA(q, repl_io_t, link);
    if (io->group == group && io->tag == tag && io->member == member) return 1;
  }
  return 0;
}

/* Returns 1 when handled (or dropped), 0 when it must wait (park it). */
static int try_recover(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in;
  repl_io_t *io;
  uint32_t member = m->u.recover.member;
  int rc;

  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, m->u.recover.group, m->u.recover.tag);
  uv_mutex_unlock(&rt->lock);
  if (in == NULL || in->state == INST_SUBMITTED) return 0; /* we have not called it yet */
  if (in->state == INST_ENDED) return 1;
  if (member >= in->group->n) {
    send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_INTERNAL);
    return 1;
  }
  if (in->inl) { /* an inline reduction keeps no copies (the master holds its operands) */
    send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_PROC_FAILED);
    return 1;
  }
  if (write_pending(in->group_id, in->tag, member)) return 0;
  if ((io = calloc(1, sizeof *io)) == NULL) {
    send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_NOMEM);
    return 1;
  }
  io->rt = rt;
  io->inst = in;
  io->member = member;
  io->is_self = member == in->member;
  if (io->is_self) {
    if (in->is_root) {
      /* A partly combined accumulator cannot be trusted.  The root's operand is still in
       * sendbuf -- or, in place, in recvbuf when the root combines in a buffer of its own
       * (a packed or image layout leaves recvbuf alone until the end); a direct root
       * reducing in place combined into its only copy. */
      free(io);
      if ((in->sendbuf == MPI_IN_PLACE && in->ti.layout == DRED_LAYOUT_DIRECT) ||
          reload_from_sendbuf(rt, in) != DRED_OK) {
        send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_PROC_FAILED);
      } else {
        send_recovered(rt, in, member, in->acc, in->pool_off);
      }
      return 1;
    }
    if (in->snap != NULL || in->acc_is_app) {
      /* acc is still the untouched snapshot of our operand (or the application's block it
       * is read from in place): nothing to reload. */
      free(io);
      send_recovered(rt, in, member, in->acc, in->pool_off);
      return 1;
    }
    io->buf = in->acc;
    io->pool_off = in->pool_off;
  } else if (dred_dp_buf_alloc(rt, in->bytes, &io->buf, &io->pool_off, &io->malloced) != DRED_OK) {
    free(io);
    send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_NOMEM);
    return 1;
  }
  if (rt->store == NULL) {
    in->io_pending++;
    recover_get_done(io, DRED_ERR_PROC_FAILED);
    return 1;
  }
  rc = dred_replica_get_async(&rt->loop, rt->store, in->group_id, in->tag, member, io->buf,
                              in->bytes, recover_get_done, io);
  in->io_pending++;
  if (rc != DRED_OK) recover_get_done(io, rc);
  return 1;
}

void dred_repl_on_recover(dred_rt_t *rt, const proto_msg_t *m) {
  parked_t *p;
  if (try_recover(rt, m)) return;
  if ((p = malloc(sizeof *p)) == NULL) {
    send_recover_failed(rt, m->u.recover.group, m->u.recover.tag, m->u.recover.member,
                        DRED_ERR_NOMEM);
    return;
  }
  p->msg = *m;
  dred_queue_insert_tail(&rt->parked, &p->link);
}

/* ---- failures and ends ----------------------------------------------------------------- */

void dred_repl_on_failed(dred_rt_t *rt, uint32_t w) {
  dred_queue_t *q, *n;
  if (w >= (uint32_t)rt->world_size || rt->failed[w]) return;
  if (w == (uint32_t)rt->world_rank) {
    /* A false detection (this process was too slow to answer): the master no longer
     * counts on us, so nothing we hold will complete.  End everything explicitly. */
    DRED_ERROR("dred-master declared this process failed (it was silent too long; raise "
               "DRED_FAIL_TIMEOUT_MS?): ending every reduction");
    rt->failed[w] = 1; /* recorded like any other death: nfailed counts failed[] */
    rt->nfailed++;
    dred_rt_fail_everything(rt, DRED_ERR_PROC_FAILED);
    return;
  }
  rt->failed[w] = 1;
  rt->nfailed++;
  DRED_WARN("dred-master reports worker %u failed", w);
  dred_net_drop(&rt->net, (int)w);
  /* Copies on their way to or from w need nothing here: net.c never delivers a copy cut
   * short, and our sends to w end with its link (copy_sent). */
  /* Snapshots waiting for w's REPLICA_ACK will not get it. */
  DRED_QUEUE_FOREACH_SAFE(q, n, &snapshots) {
    snapshot_t *sn = DRED_QUEUE_DATA(q, snapshot_t, link);
    int i;
    for (i = 0; i < sn->nwaiting; i++) {
      if (sn->waiting[i] != w) continue;
      sn->waiting[i] = sn->waiting[--sn->nwaiting];
      snapshot_unref(sn);
      break;
    }
  }
  /* Tasks reading w over RMA would wait forever: stop them and tell the master. */
  DRED_QUEUE_FOREACH_SAFE(q, n, &rt->tasks) {
    dred_task_t *t = DRED_QUEUE_DATA(q, dred_task_t, link);
    proto_msg_t d;
    int st;
    if (t->provider != w || (t->started && t->src != NULL)) continue;
    if (!t->started && t->buf.pool_off >= 0 && rt->peer_base[w] != NULL) continue; /* shm */
    st = t->started ? dred_dp_task_abort(rt, t) : PROTO_TASK_PROVIDER_LOST;
    memset(&d, 0, sizeof d);
    d.type = PROTO_DONE;
    d.u.done.task_id = t->task_id;
    d.u.done.status = (uint32_t)st;
    d.u.done.buf = dred_rt_bufref(rt, t->dst, t->dst_pool_off, t->inst->bytes);
    dred_rt_send_master(rt, &d);
    DRED_WARN("task %llu stopped: provider %u failed (%s)", (unsigned long long)t->task_id, w,
              st == PROTO_TASK_EXEC_CORRUPT ? "partly combined" : "nothing combined yet");
    dred_queue_remove(q);
    t->inst->tasks_pending--;
    dred_rt_inst_maybe_finish(rt, t->inst);
    free(t);
  }
}

static void drop_done(void *arg, int status) {
  (void)arg;
  (void)status;
}

void dred_repl_on_end(dred_rt_t *rt, dred_inst_t *in) {
  dred_queue_t *q, *n;
  /* Copies not started yet are not needed any more.  Nor is the snapshot's directory
   * entry: copies still being taken may outlive the reduction, and a later reduction
   * with the same tag must not find this operand listed under its key -- least of all
   * when it is the application's block, which it may rewrite as soon as its future is
   * done. */
  DRED_QUEUE_FOREACH_SAFE(q, n, &snap_index[snap_bucket(in->group_id, in->tag)]) {
    snapshot_t *sn = DRED_QUEUE_DATA(q, snapshot_t, hlink);
    if (sn->group != in->group_id || sn->tag != in->tag) continue;
    dred_snapdir_retire(rt, sn->dir_slot);
    sn->dir_slot = -1;
    if (sn->deferred) deferred_run(rt, sn, 1);
  }
  if (rt->store != NULL)
    dred_replica_drop_async(&rt->loop, rt->store, in->group_id, in->tag, drop_done, NULL);
  /* parked RECOVERs for it are moot now */
  DRED_QUEUE_FOREACH_SAFE(q, n, &rt->parked) {
    parked_t *p = DRED_QUEUE_DATA(q, parked_t, link);
    if (p->msg.u.recover.group == in->group_id && p->msg.u.recover.tag == in->tag) {
      dred_queue_remove(q);
      free(p);
    }
  }
}

void dred_repl_on_shutdown(dred_rt_t *rt) {
  /* Every member said BYE, so every reduction ended: copies still queued are moot. */
  if (rt->store != NULL) dred_replica_set_moot(rt->store);
}

int dred_repl_progress(dred_rt_t *rt) {
  dred_queue_t *q, *n;
  int work = 0;
  uint64_t now = 0;

  /* Due order is arrival order: look at the head only. */
  while ((q = dred_queue_head(&deferred_q)) != NULL) {
    snapshot_t *sn = DRED_QUEUE_DATA(q, snapshot_t, dlink);
    if (now == 0) now = uv_hrtime();
    if (now < sn->due_ns) break;
    deferred_run(rt, sn, 0);
    work++;
  }

  if (rt->parked_retry && !dred_queue_empty(&rt->parked)) {
    rt->parked_retry = 0;
    DRED_QUEUE_FOREACH_SAFE(q, n, &rt->parked) {
      parked_t *p = DRED_QUEUE_DATA(q, parked_t, link);
      if (try_recover(rt, &p->msg)) {
        dred_queue_remove(q);
        free(p);
        work++;
      }
    }
  }
  return work;
}
