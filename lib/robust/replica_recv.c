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
 *     (lib/shm/segment.h: never a read past it, whatever the header says), then written
 *     straight from there -- the segment stays mapped even if the sender dies meanwhile
 *     -- and the sender gets REPLICA_ACK when it is written, or at once when it cannot be
 *     taken, so it can free its snapshot either way.
 *   - A header without one came with the bytes behind it on the link (common/net.c
 *     queues the header only once the last byte is in, so a copy cut short by its
 *     sender's death never gets here); it is refused unless it comes from a live worker
 *     with exactly the announced length, and answered with REPLICA_ACK (pool offset -1)
 *     as soon as it is taken: the sender's dred_ireduce may be waiting until a copy is
 *     held off its node (offnode.c), and a copy in our memory, its write listed below,
 *     is one.
 *   - Such a copy is held in our memory and written to the store only if the reduction
 *     still runs DRED_REPLICA_DELAY_MS after it arrived (or once held copies pass the
 *     pool's size): in memory it already guards against the sender's loss, which is all a
 *     store can do here (only its owner ever reads a store), and a reduction that ends
 *     first -- most do -- writes nothing.  Writing each on arrival cost the failure-free
 *     path its SQLite work: docs/performance.md.  A RECOVER reads a held copy from
 *     memory (recover.c).
 *   - Writes in flight are listed (the state's writes) so that a RECOVER for a copy still
 *     being written waits for it (recover.c); each finished write wakes the parked
 *     RECOVERs.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/bigbuf.h"
#include "../../common/log.h"
#include "../../common/status.h"
#include "../../storage/replica.h"
#include "../../storage/replica_async.h"
#include "replicate_internal.h"

static void store_shared(dred_rt_t *rt, int src, const proto_msg_t *m);
static int hold_received(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                          char *buf, size_t len);

/* Tell the sender of a copy that came on the link that we hold it whole (len: its size),
 * or that we could not keep it (len 0): its dred_ireduce may be waiting (offnode.c). */
static void ack_received(dred_rt_t *rt, int src, const proto_msg_t *m, uint64_t len) {
  proto_msg_t a = *m;
  a.type = PROTO_REPLICA_ACK;
  a.u.replica.pool_off = -1;
  a.u.replica.len = len;
  dred_net_send(&rt->net, src, &a, NULL);
}

/* ---- the parameters each copy came with ------------------------------------------------ */

typedef struct {
  dred_keymap_node_t knode; /* the state's params_index, by (group, tag) */
  uint32_t member;
  proto_params_t params;
} params_rec_t;

static void params_keep(dred_rt_t *rt, const proto_msg_t *m) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_keymap_node_t *k, *kn;
  params_rec_t *pr;
  DRED_KEYMAP_FOREACH_KEY(k, kn, &st->params_index, m->u.replica.group, m->u.replica.tag) {
    pr = DRED_KEYMAP_DATA(k, params_rec_t, knode);
    if (pr->member == m->u.replica.member) { /* a copy sent again: the same call's */
      pr->params = m->u.replica.params;
      return;
    }
  }
  if ((pr = calloc(1, sizeof *pr)) == NULL) return; /* a recovery states the holder's */
  pr->member = m->u.replica.member;
  pr->params = m->u.replica.params;
  if (dred_keymap_insert(&st->params_index, &pr->knode, m->u.replica.group, m->u.replica.tag) !=
      DRED_OK)
    free(pr);
}

int dred_repl_params_find(const dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                          proto_params_t *p) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_keymap_node_t *k, *kn;
  DRED_KEYMAP_FOREACH_KEY(k, kn, &st->params_index, group, tag) {
    const params_rec_t *pr = DRED_KEYMAP_DATA(k, params_rec_t, knode);
    if (pr->member == member) {
      *p = pr->params;
      return 1;
    }
  }
  return 0;
}

void dred_repl_params_drop(dred_rt_t *rt, uint64_t group, int64_t tag) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_keymap_node_t *k, *kn;
  DRED_KEYMAP_FOREACH_KEY(k, kn, &st->params_index, group, tag) {
    dred_keymap_remove(&st->params_index, k);
    free(DRED_KEYMAP_DATA(k, params_rec_t, knode));
  }
}

void dred_repl_params_clear(dred_rt_t *rt) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_keymap_node_t *k;
  while ((k = dred_keymap_first(&st->params_index)) != NULL) {
    dred_keymap_remove(&st->params_index, k);
    free(DRED_KEYMAP_DATA(k, params_rec_t, knode));
  }
}

/* ---- copies arriving ------------------------------------------------------------------- */

void dred_repl_on_header(dred_rt_t *rt, int src, const proto_msg_t *m) {
  size_t len = (size_t)m->u.replica.len, got = 0;
  char *bytes;

  params_keep(rt, m);
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
    dred_bigbuf_free(bytes, got);
    return;
  }
  ack_received(rt, src, m,
               hold_received(rt, m->u.replica.group, m->u.replica.tag, m->u.replica.member,
                             bytes, len) == 0 ? len : 0);
}

static void neighbour_put_done(void *arg, int status) {
  repl_io_t *io = arg;
  dred_repl_state(io->rt)->parked_retry = 1; /* a RECOVER may be waiting for this copy */
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
    dred_bigbuf_free(io->buf, io->len); /* a copy received over a link */
  }
  free(io);
}

/* The copy sits in the member's shared-memory segment: write it from there.  The segment
 * stays mapped even if the member dies meanwhile, so the read is always safe. */
static void store_shared(dred_rt_t *rt, int src, const proto_msg_t *m) {
  dred_repl_state_t *st = dred_repl_state(rt);
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
  if (base == NULL || st->store == NULL || (io = calloc(1, sizeof *io)) == NULL) {
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
  dred_queue_insert_tail(&st->writes, &io->link);
  dred_repl_stored_add(rt, io->group, io->tag);
  rc = dred_replica_put_async(&rt->loop, st->store, io->group, io->tag, io->member,
                              base + m->u.replica.pool_off, (size_t)m->u.replica.len,
                              neighbour_put_done, io);
  if (rc != DRED_OK) neighbour_put_done(io, rc); /* still ACK: the member frees its snapshot */
}

/* ---- copies that came over the network: held in memory, written late ---------------- */

/* Held copies are listed in arrival order, which is due order (one delay for all), and
 * indexed by (group, tag) so that every END finds its own at once (dred_repl_state_t). */

/* Start the store write of held copy `io` (takes it off the held list).  0 when under way
 * (a RECOVER for it then waits for the write), -1 when dropped. */
static int write_held(dred_rt_t *rt, repl_io_t *io) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_queue_remove(&io->link);
  dred_keymap_remove(&st->held_index, &io->knode);
  st->held_bytes -= io->len;
  dred_queue_insert_tail(&st->writes, &io->link);
  dred_repl_stored_add(rt, io->group, io->tag);
  if (dred_replica_put_async(&rt->loop, st->store, io->group, io->tag, io->member, io->buf,
                             io->len, neighbour_put_done, io) != DRED_OK) {
    DRED_WARN("replica of member %u (tag " PROTO_KEY_FMT ") not stored: the store refused it",
              io->member, PROTO_KEY_ARG(io->tag));
    dred_queue_remove(&io->link);
    dred_bigbuf_free(io->buf, io->len);
    free(io);
    return -1;
  }
  return 0;
}

/* A neighbour's copy that came over the network (takes `buf`).  Held in our memory it
 * already guards against losing the sender's node; the store write is for persistence
 * and waits DRED_REPLICA_DELAY_MS (dred_repl_held_progress), so a reduction that ends
 * first costs no write.  Held bytes are bounded by the pool's size: past it the oldest
 * are written at once.  0 when held or written, -1 when dropped. */
static int hold_received(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                         char *buf, size_t len) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_queue_t *q;
  repl_io_t *io = calloc(1, sizeof *io);
  if (io == NULL || st->store == NULL) {
    free(io);
    dred_bigbuf_free(buf, len);
    return -1;
  }
  io->rt = rt;
  io->group = group;
  io->tag = tag;
  io->member = member;
  io->buf = buf;
  io->len = len;
  io->ack_to = -1;
  dred_queue_insert_tail(&st->held, &io->link);
  (void)dred_keymap_insert(&st->held_index, &io->knode, group, tag);
  st->held_bytes += len;
  if (rt->cfg.replica_delay_ms == 0) return write_held(rt, io);
  io->due_ns = uv_hrtime() + rt->cfg.replica_delay_ms * 1000000ull;
  while (st->held_bytes > rt->cfg.pool_mb << 20 && (q = dred_queue_head(&st->held)) != NULL) {
    repl_io_t *old = DRED_QUEUE_DATA(q, repl_io_t, link);
    if (write_held(rt, old) != 0 && old == io) return -1;
  }
  return 0;
}

int dred_repl_held_progress(dred_rt_t *rt, uint64_t *next_due_ns) {
  dred_queue_t *q;
  uint64_t now = 0;
  int work = 0;
  while ((q = dred_queue_head(&dred_repl_state(rt)->held)) != NULL) {
    repl_io_t *io = DRED_QUEUE_DATA(q, repl_io_t, link);
    if (now == 0) now = uv_hrtime();
    if (now < io->due_ns) {
      if (*next_due_ns == 0 || io->due_ns < *next_due_ns) *next_due_ns = io->due_ns;
      break;
    }
    (void)write_held(rt, io);
    work++;
  }
  return work;
}

const repl_io_t *dred_repl_held_find(const dred_rt_t *rt, uint64_t group, int64_t tag,
                                     uint32_t member) {
  dred_keymap_node_t *k, *kn;
  DRED_KEYMAP_FOREACH_KEY(k, kn, &dred_repl_state(rt)->held_index, group, tag) {
    repl_io_t *io = DRED_KEYMAP_DATA(k, repl_io_t, knode);
    if (io->member == member) return io;
  }
  return NULL;
}

static void held_free(dred_repl_state_t *st, repl_io_t *io) {
  dred_queue_remove(&io->link);
  dred_keymap_remove(&st->held_index, &io->knode);
  st->held_bytes -= io->len;
  dred_bigbuf_free(io->buf, io->len);
  free(io);
}

void dred_repl_held_drop(dred_rt_t *rt, uint64_t group, int64_t tag) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_keymap_node_t *k, *kn;
  DRED_KEYMAP_FOREACH_KEY(k, kn, &st->held_index, group, tag)
    held_free(st, DRED_KEYMAP_DATA(k, repl_io_t, knode));
}

void dred_repl_held_clear(dred_rt_t *rt) {
  dred_repl_state_t *st = dred_repl_state(rt);
  dred_queue_t *q;
  while ((q = dred_queue_head(&st->held)) != NULL)
    held_free(st, DRED_QUEUE_DATA(q, repl_io_t, link));
}
