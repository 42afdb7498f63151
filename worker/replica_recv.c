/*
 * replica_recv.c -- receiving and storing the copies neighbours send of their operands.
 *
 * What it is for.  Every copy of another member's operand this process keeps arrives
 * here (dred_repl_on_header) and is written to our node-local store (storage/replica.c,
 * SQLite, on the libuv thread pool), from where recover.c reads it back if that member
 * dies.  The sending side is replica_send.c.
 *
 * How it works.
 *   - A header with a pool offset names a copy in the sender's shared-memory segment on
 *     our node: the range is first checked against the sender's own segment
 *     (common/segment.h: never a read past it, whatever the header says), then written
 *     straight from there -- the segment stays mapped even if the sender dies meanwhile
 *     -- and the sender gets REPLICA_ACK when it is written, or at once when it cannot be
 *     taken, so it can free its snapshot either way.
 *   - A header without one came with the bytes behind it on the link (common/net.c
 *     queues the header only once the last byte is in, so a copy cut short by its
 *     sender's death never gets here); it is refused unless it comes from a live worker
 *     with exactly the announced length, and answered with REPLICA_ACK (pool offset -1)
 *     as soon as it is taken: the sender's dred_ireduce may be waiting until a copy is
 *     held off its node (handover.c), and a copy in our memory, its write listed below,
 *     is one.
 *   - Writes in flight are listed (dred_repl_writes_in_flight) so that a RECOVER for a copy still
 *     being written waits for it (recover.c); each finished write wakes the parked
 *     RECOVERs.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/status.h"
#include "../storage/replica.h"
#include "../storage/replica_async.h"
#include "replicate_internal.h"

/* Neighbour copies being written (one runtime thread per process, so one list). */
dred_queue_t dred_repl_writes_in_flight = {&dred_repl_writes_in_flight, &dred_repl_writes_in_flight};

static void store_shared(dred_rt_t *rt, int src, const proto_msg_t *m);
static int store_received(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                          char *buf, size_t len);

/* Tell the sender of a copy that came on the link that we hold it whole (len: its size),
 * or that we could not keep it (len 0): its dred_ireduce may be waiting (handover.c). */
static void ack_received(dred_rt_t *rt, int src, const proto_msg_t *m, uint64_t len) {
  proto_msg_t a = *m;
  a.type = PROTO_REPLICA_ACK;
  a.u.replica.pool_off = -1;
  a.u.replica.len = len;
  dred_net_send(&rt->net, src, &a, NULL);
}

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
    DRED_ERROR("replica from rank %d (member %u, tag " PROTO_KEY_FMT ", %zu bytes) refused: %s",
               src, m->u.replica.member, PROTO_KEY_ARG(m->u.replica.tag), len,
               bytes == NULL ? "no memory to hold it" : "not from a live worker");
    if (bytes == NULL && src > 0 && src < rt->world_size && !rt->failed[src])
      ack_received(rt, src, m, 0);
    free(bytes);
    return;
  }
  ack_received(rt, src, m,
               store_received(rt, m->u.replica.group, m->u.replica.tag, m->u.replica.member,
                              bytes, len) == 0 ? len : 0);
}

static void neighbour_put_done(void *arg, int status) {
  repl_io_t *io = arg;
  io->rt->parked_retry = 1; /* a RECOVER may be waiting for this copy */
  if (status != DRED_OK && status != DRED_ERR_SHUTDOWN) /* SHUTDOWN: skipped, moot */
    DRED_WARN("replica of member %u (tag " PROTO_KEY_FMT ") not stored: %s", io->member,
              PROTO_KEY_ARG(io->tag), dred_status_str(status));
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
    DRED_ERROR("replica header from worker %d (member %u, tag " PROTO_KEY_FMT ") refused: %s", src,
               m->u.replica.member, PROTO_KEY_ARG(m->u.replica.tag), why);
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
  dred_queue_insert_tail(&dred_repl_writes_in_flight, &io->link);
  dred_repl_stored_add(io->group, io->tag);
  rc = dred_replica_put_async(&rt->loop, rt->store, io->group, io->tag, io->member,
                              base + m->u.replica.pool_off, (size_t)m->u.replica.len,
                              neighbour_put_done, io);
  if (rc != DRED_OK) neighbour_put_done(io, rc); /* still ACK: the member frees its snapshot */
}

/* A neighbour's copy that came over the network: into our store (takes `buf`).  0 when
 * the write is under way (a RECOVER for it waits for the write), -1 when dropped. */
static int store_received(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                          char *buf, size_t len) {
  repl_io_t *io = calloc(1, sizeof *io);
  if (io == NULL || rt->store == NULL) {
    free(io);
    free(buf);
    return -1;
  }
  io->rt = rt;
  io->group = group;
  io->tag = tag;
  io->member = member;
  io->buf = buf;
  io->ack_to = -1;
  dred_queue_insert_tail(&dred_repl_writes_in_flight, &io->link);
  dred_repl_stored_add(group, tag);
  if (dred_replica_put_async(&rt->loop, rt->store, group, tag, member, buf, len,
                             neighbour_put_done, io) != DRED_OK) {
    dred_queue_remove(&io->link);
    free(io->buf);
    free(io);
    return -1;
  }
  return 0;
}
