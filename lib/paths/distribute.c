/*
 * distribute.c -- what a worker does for allreduce and bcast beyond the reduce path: send
 * a result to dred-master, receive it from there, put it into recvbuf.
 *
 * What it is for.  A group whose members all live on one node meets in shared memory
 * instead (meetpath.c); this is the path of groups that span nodes, and of collectives
 * whose slot spilled.  There an allreduce is a reduce to member 0 followed by a distribution of the
 * result; a bcast is that distribution alone, from its root.  dred-master carries the
 * result (master/sched/sched_distribute.c): it outlives any member, so once it holds the result
 * no member's death loses it, and every member that called gets it, early callers first.
 *
 * How it works.
 *   - Small collectives ride the inline path (runtime.c): an allreduce's every member
 *     sends its operand in READY and folds the master's INLINE in rank order, a bcast's
 *     root sends its data in READY.  Nothing here.
 *   - A large bcast's root sends READY, then its data in DATA messages of at most
 *     PROTO_DATA_MAX bytes, from its accumulator (recvbuf, or the packed copy made on the
 *     calling thread), a few at a time (dred_dist_turn); the other members send a READY
 *     without a buffer.
 *   - A large allreduce runs the reduce path to member 0; when the result is whole there
 *     the master sends PUSH, and member 0 answers with the result as DATA.
 *   - A bcast's non-roots may share one transfer per node (relay.c): the node's first to
 *     arrive receives the DATA (copying it for the others too), the others copy it from
 *     there and send a READY saying they have it.
 *   - A receiver (a bcast's non-root, a large allreduce's other members) takes DATA in
 *     order into `res`: recvbuf itself for a DIRECT layout, else a buffer of its own that
 *     is unpacked into recvbuf at the end (only the type's bytes are written, as in MPI).
 *     END(OK) follows the last piece on the same link; a receiver without its whole
 *     result turns it into DRED_ERR_INTERNAL rather than report a result it lacks.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/status.h"
#include "../engine/inst.h"
#include "../engine/runtime.h"
#include "../engine/typecheck.h"
#include "../mpi/dataplane.h"
#include "distribute.h"
#include "relay.h"

static dred_inst_t *find(dred_rt_t *rt, uint64_t group, int64_t tag) {
  dred_inst_t *in;
  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, group, tag);
  uv_mutex_unlock(&rt->lock);
  return in;
}

/* The result (or a bcast root's data) goes to the master piece by piece, paced: a turn of
 * the loop sends pieces only while fewer than PROTO_DATA_AHEAD of ours wait on the link,
 * and the next turn (a write finishing wakes the loop) sends more.  All at once, a 2 GiB
 * result was 8,192 frames copied in one turn: seconds without a heartbeat (dred-master
 * declared the process failed) and the whole result again in queued frames.  net.c copies
 * each frame, so acc may change once a piece is sent; it stays until the instance ends,
 * which takes it off the queue (dred_dist_finish). */
static void push_start(dred_rt_t *rt, dred_inst_t *in) {
  if (in->pushing) return; /* (dred-master asks once) */
  in->pushing = 1;
  in->push_off = 0;
  dred_queue_insert_tail(&rt->pushq, &in->push_link);
  (void)dred_dist_turn(rt);
}

static void push_stop(dred_inst_t *in) {
  if (!in->pushing) return;
  dred_queue_remove(&in->push_link);
  in->pushing = 0;
}

int dred_dist_turn(dred_rt_t *rt) {
  dred_queue_t *q, *next;
  proto_msg_t m;
  int sent = 0;
  memset(&m, 0, sizeof m);
  m.type = PROTO_DATA;
  DRED_QUEUE_FOREACH_SAFE(q, next, &rt->pushq) {
    dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, push_link);
    m.u.data.group = in->group_id;
    m.u.data.tag = in->tag;
    m.u.data.total = in->bytes;
    while (in->push_off < in->bytes) {
      uint64_t len = in->bytes - in->push_off;
      if (dred_net_backlog(&rt->net, 0) >= PROTO_DATA_AHEAD) return sent;
      if (len > PROTO_DATA_MAX) len = PROTO_DATA_MAX;
      m.u.data.offset = in->push_off;
      m.u.data.len = (uint32_t)len;
      m.u.data.data = (const uint8_t *)in->acc + in->push_off;
      dred_rt_send_master(rt, &m);
      in->push_off += len;
      sent = 1;
    }
    push_stop(in);
  }
  return sent;
}

void dred_dist_announce_bcast(dred_rt_t *rt, dred_inst_t *in) {
  proto_msg_t m;
  int rc = in->join_error;
  dred_rt_ready(in, in->member, &m);
  m.u.ready.buf.pool_off = -1;
  m.u.ready.buf.len = in->bytes;
  m.u.ready.buf.owner = (uint32_t)rt->world_rank;
  m.u.ready.have = (uint8_t)(in->relay_have && !in->is_root); /* copied from its node's leader */
  if (rc == DRED_OK && in->is_root) rc = dred_dp_acc_prepare(rt, in);
  if (rc != DRED_OK) {
    if (in->join_error == DRED_OK) /* a refused call was logged by dred_ibcast */
      DRED_ERROR("bcast (tag " PROTO_KEY_FMT ") cannot start here: %s", PROTO_KEY_ARG(in->tag),
                 dred_status_str(rc));
    m.u.ready.error = rc == DRED_ERR_INTERNAL || rc == DRED_ERR_ARG ? rc : DRED_ERR_NOMEM;
  }
  dred_rt_send_master(rt, &m);
  dred_inst_set_state(in, INST_ANNOUNCED);
  if (rc == DRED_OK && in->is_root) push_start(rt, in);
}

void dred_dist_on_push(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in = find(rt, m->u.end.group, m->u.end.tag);
  if (in == NULL || dred_inst_state(in) != INST_ANNOUNCED) {
    DRED_WARN("PUSH for an unknown or finished collective (tag " PROTO_KEY_FMT ") ignored",
              PROTO_KEY_ARG(m->u.end.tag));
    return;
  }
  if (in->kind != PROTO_KIND_ALLREDUCE || !in->is_root || in->acc == NULL) {
    DRED_ERROR("PUSH for a collective (tag " PROTO_KEY_FMT ") whose result is not here",
               PROTO_KEY_ARG(in->tag));
    dred_rt_abandon(rt, in, DRED_ERR_INTERNAL); /* everyone ends with it */
    return;
  }
  push_start(rt, in);
}

char *dred_dist_result_buf(dred_inst_t *in) {
  if (in->res != NULL) return in->res;
  if (in->ti.layout == DRED_LAYOUT_DIRECT) {
    in->res = in->recvbuf;
  } else if ((in->res = malloc(in->bytes > 0 ? in->bytes : 1)) == NULL) {
    DRED_ERROR("no memory for a %zu-byte result", in->bytes);
  } else {
    in->res_own = 1;
  }
  return in->res;
}

void dred_dist_on_data(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in = find(rt, m->u.data.group, m->u.data.tag);
  if (in == NULL || dred_inst_state(in) != INST_ANNOUNCED || !in->receives) {
    DRED_WARN("DATA for an unknown or finished collective (tag " PROTO_KEY_FMT ") ignored",
              PROTO_KEY_ARG(m->u.data.tag));
    return;
  }
  if (in->inl_status != DRED_OK) return; /* already wrong: END reports it */
  if (m->u.data.total != in->bytes || m->u.data.offset != in->res_have ||
      m->u.data.len > in->bytes - in->res_have) {
    DRED_ERROR("DATA for collective (tag " PROTO_KEY_FMT ") does not fit it (%llu bytes at "
               "%llu of %llu; %llu expected)", PROTO_KEY_ARG(in->tag),
               (unsigned long long)m->u.data.len, (unsigned long long)m->u.data.offset,
               (unsigned long long)m->u.data.total, (unsigned long long)in->bytes);
    in->inl_status = DRED_ERR_INTERNAL;
    return;
  }
  if (dred_dist_result_buf(in) == NULL) {
    in->inl_status = DRED_ERR_NOMEM;
    return;
  }
  memcpy(in->res + in->res_have, m->u.data.data, m->u.data.len);
  dred_relay_on_data(rt, in, in->res_have, m->u.data.data, m->u.data.len); /* a node's leader */
  in->res_have += m->u.data.len;
}

int dred_dist_end_status(dred_inst_t *in, int status) {
  if (status != DRED_OK || !in->receives || in->res_have == in->bytes) return status;
  if (in->inl_status != DRED_OK) return in->inl_status;
  DRED_ERROR("collective (tag " PROTO_KEY_FMT ") ended OK with %llu of its %zu bytes here",
             PROTO_KEY_ARG(in->tag), (unsigned long long)in->res_have, in->bytes);
  return DRED_ERR_INTERNAL;
}

/* Where in's result lies in dred's layout if it is to be unpacked into recvbuf at the
 * end -- a reduce or allreduce root's accumulator, a receiver's own buffer -- else NULL. */
static const char *unpack_src(const dred_inst_t *in) {
  if (in->ti.layout == DRED_LAYOUT_DIRECT || in->bytes == 0 || in->count == 0) return NULL;
  if (in->is_root && in->kind != PROTO_KIND_BCAST) return in->acc;
  if (in->receives && in->res_own) return in->res;
  return NULL;
}

static void unpack_stop(dred_inst_t *in) {
  if (!in->unpacking) return;
  dred_queue_remove(&in->unpack_link);
  in->unpacking = 0;
}

/* A large result is unpacked DRED_TURN_BYTES (of dred's layout) per turn of the loop: a
 * strided 1 GiB result in one MPI_Unpack held the runtime thread 0.5-0.8 s on the AMD
 * guest (docs/performance.md), and with DRED_FAIL_TIMEOUT_MS=300 dred-master declared
 * the process failed and the job ended.  The turns between parts answer PINGs. */
int dred_dist_unpack_defer(dred_rt_t *rt, dred_inst_t *in) {
  if (in->unpacking) return 1;
  if (in->unpacked || unpack_src(in) == NULL || in->bytes <= DRED_TURN_BYTES) return 0;
  in->unpacking = 1;
  in->unpack_next = 0;
  dred_queue_insert_tail(&rt->unpackq, &in->unpack_link);
  return 1;
}

int dred_dist_unpack_turn(dred_rt_t *rt) {
  dred_queue_t *q = dred_queue_head(&rt->unpackq);
  dred_inst_t *in;
  uint64_t n;
  int rc;
  if (q == NULL) return 0;
  in = DRED_QUEUE_DATA(q, dred_inst_t, unpack_link);
  n = DRED_TURN_BYTES / in->ti.extent; /* whole elements: one, when an element is larger */
  if (n == 0) n = 1;
  if (n > in->count - in->unpack_next) n = in->count - in->unpack_next;
  rc = dred_dp_unpack_part(rt, in, unpack_src(in), in->unpack_next, n);
  in->unpack_next += n;
  if (rc != DRED_OK || in->unpack_next >= in->count) {
    unpack_stop(in);
    in->unpacked = 1;
    if (rc != DRED_OK) in->end_status = rc;
    DRED_DEBUG("result (tag " PROTO_KEY_FMT ", %llu bytes) unpacked into recvbuf in parts",
               PROTO_KEY_ARG(in->tag), (unsigned long long)in->bytes);
    (void)dred_rt_inst_finish(rt, in, in->end_status);
  }
  return 1;
}

int dred_dist_finish(dred_rt_t *rt, dred_inst_t *in, int status) {
  const char *src;
  push_stop(in);
  unpack_stop(in); /* ended another way while unpacking: the status says how */
  dred_relay_done(rt, in, status); /* a node relay's leader leaves it (relay.c) */
  if (status == DRED_OK && !in->unpacked && (src = unpack_src(in)) != NULL)
    status = dred_dp_unpack_part(rt, in, src, 0, in->count);
  if (in->res_own) free(in->res);
  in->res = NULL;
  in->res_own = 0;
  return status;
}
