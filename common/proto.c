/*
 * proto.c -- encoding and decoding of control messages (see proto.h).
 *
 * A tiny cursor writes/reads little-endian integers and refuses to run past the end, so a
 * truncated or padded message fails decoding as a whole; a message is accepted only when
 * the cursor ends exactly at the declared payload length.
 */
#include "proto.h"

#include <string.h>

#include "../include/dred_status.h"

typedef struct {
  uint8_t *p;
  const uint8_t *rp;
  size_t len, pos;
  int bad;
} cursor_t;

static void put(cursor_t *c, uint64_t v, unsigned bytes) {
  unsigned i;
  if (c->bad || c->pos + bytes > c->len) {
    c->bad = 1;
    return;
  }
  for (i = 0; i < bytes; i++) c->p[c->pos++] = (uint8_t)(v >> (8 * i));
}

static uint64_t get(cursor_t *c, unsigned bytes) {
  uint64_t v = 0;
  unsigned i;
  if (c->bad || c->pos + bytes > c->len) {
    c->bad = 1;
    return 0;
  }
  for (i = 0; i < bytes; i++) v |= (uint64_t)c->rp[c->pos++] << (8 * i);
  return v;
}

/* A member's parameters (REPLICA), field by field as READY carries them; a kind READY
 * could not carry marks the cursor bad, as READY's own check does. */
static void put_params(cursor_t *c, const proto_params_t *p) {
  if (p->kind >= PROTO_KINDS) c->bad = 1;
  put(c, p->count, 8);
  put(c, p->type_size, 4);
  put(c, p->extent, 4);
  put(c, p->type_sig, 4);
  put(c, p->root, 4);
  put(c, (uint32_t)p->op, 4);
  put(c, p->op_is_user, 1);
  put(c, p->commutative, 1);
  put(c, p->inl, 1);
  put(c, p->kind, 1);
}

static void get_params(cursor_t *c, proto_params_t *p) {
  memset(p, 0, sizeof *p);
  p->count = get(c, 8);
  p->type_size = (uint32_t)get(c, 4);
  p->extent = (uint32_t)get(c, 4);
  p->type_sig = (uint32_t)get(c, 4);
  p->root = (uint32_t)get(c, 4);
  p->op = (int32_t)get(c, 4);
  p->op_is_user = (uint8_t)get(c, 1);
  p->commutative = (uint8_t)get(c, 1);
  p->inl = (uint8_t)get(c, 1);
  p->kind = (uint8_t)get(c, 1);
  if (p->kind >= PROTO_KINDS) c->bad = 1;
}

/* What a READY's error may say: a member joins without a buffer because it could not
 * allocate one (or attach it to the RMA window), or because its call was refused for a
 * reason of its own process (the in-flight cap, a tag still in flight there: api.c);
 * anything else is not a READY we sent. */
static int proto_ready_error_ok(int32_t e) {
  return e == 0 || e == DRED_ERR_NOMEM || e == DRED_ERR_INTERNAL || e == DRED_ERR_ARG;
}

/* READY's have: PROTO_HAVE_DATA only in a bcast, PROTO_HAVE_FOLLOW only in an allreduce
 * that is not inline nor a recovered copy. */
static int proto_have_valid(const proto_msg_t *m) {
  switch (m->u.ready.have) {
    case 0: return 1;
    case PROTO_HAVE_DATA: return m->u.ready.kind == PROTO_KIND_BCAST;
    case PROTO_HAVE_FOLLOW:
      return m->u.ready.kind == PROTO_KIND_ALLREDUCE && !m->u.ready.inl && !m->u.ready.recovered;
    default: return 0;
  }
}

/* READY's cover: only a reduce's own (not recovered, not inline) buffer, holding nothing
 * else of note (no have, mixed slot or snapshot), and naming its holder.  An error says
 * the fold failed: every covered member is told it. */
static int proto_cover_valid(const proto_msg_t *r) {
  if (r->u.ready.cover_len == 0) return 1;
  return r->u.ready.cover_len <= PROTO_COVER_MAX && r->u.ready.cover != NULL &&
         r->u.ready.kind == PROTO_KIND_REDUCE && !r->u.ready.inl && !r->u.ready.recovered &&
         r->u.ready.have == 0 && r->u.ready.meet_mask == 0 &&
         !r->u.ready.snap && r->u.ready.member / 8u < r->u.ready.cover_len &&
         proto_cover_has(r, r->u.ready.member);
}

int proto_cover_has(const proto_msg_t *m, uint32_t k) {
  return k / 8u < m->u.ready.cover_len && (m->u.ready.cover[k / 8u] >> (k % 8u) & 1u);
}

static void put_bytes(cursor_t *c, const uint8_t *p, size_t n) {
  if (c->bad || c->pos + n > c->len) {
    c->bad = 1;
    return;
  }
  if (n > 0) memcpy(c->p + c->pos, p, n);
  c->pos += n;
}

/* The next n bytes, in place (NULL when n is 0 or past the end: then bad is set). */
static const uint8_t *get_bytes(cursor_t *c, size_t n) {
  const uint8_t *p;
  if (c->bad || c->pos + n > c->len) {
    c->bad = 1;
    return NULL;
  }
  p = n > 0 ? c->rp + c->pos : NULL;
  c->pos += n;
  return p;
}

/* A string in a field of `n` bytes, NUL-padded (the caller checked it fits). */
static void put_str(cursor_t *c, const char *s, size_t n) {
  size_t k = strnlen(s, n);
  put_bytes(c, (const uint8_t *)s, k);
  while (k++ < n) put(c, 0, 1);
}

static void put_buf(cursor_t *c, const proto_buf_t *b) {
  put(c, b->addr, 8);
  put(c, (uint64_t)b->pool_off, 8);
  put(c, b->len, 8);
  put(c, b->owner, 4);
}

static void get_buf(cursor_t *c, proto_buf_t *b) {
  b->addr = get(c, 8);
  b->pool_off = (int64_t)get(c, 8);
  b->len = get(c, 8);
  b->owner = (uint32_t)get(c, 4);
}

size_t proto_encode(const proto_msg_t *m, const uint32_t *group_workers, uint8_t *buf,
                    size_t cap) {
  cursor_t c = {buf, NULL, cap, PROTO_HEADER, 0};
  uint32_t i;

  if (m == NULL || buf == NULL || cap < PROTO_HEADER) return 0;
  switch (m->type) {
    case PROTO_GROUP:
      if (m->u.group.n == 0 || m->u.group.n > PROTO_MAX_GROUP || group_workers == NULL) return 0;
      put(&c, m->u.group.id, 8);
      put(&c, m->u.group.n, 4);
      for (i = 0; i < m->u.group.n; i++) put(&c, group_workers[i], 4);
      break;
    case PROTO_READY:
      if (m->u.ready.nreplicas > PROTO_MAX_REPLICAS) return 0;
      if (!proto_ready_error_ok(m->u.ready.error)) return 0;
      put(&c, m->u.ready.group, 8);
      put(&c, (uint64_t)m->u.ready.tag, 8);
      put(&c, m->u.ready.member, 4);
      put(&c, m->u.ready.root, 4);
      put(&c, m->u.ready.count, 8);
      put(&c, m->u.ready.type_size, 4);
      put(&c, m->u.ready.extent, 4);
      put(&c, m->u.ready.type_sig, 4);
      put(&c, (uint32_t)m->u.ready.op, 4);
      put(&c, m->u.ready.op_is_user, 1);
      put(&c, m->u.ready.commutative, 1);
      put(&c, m->u.ready.recovered, 1);
      put(&c, m->u.ready.nreplicas, 1);
      for (i = 0; i < m->u.ready.nreplicas; i++) put(&c, m->u.ready.replicas[i], 4);
      put_buf(&c, &m->u.ready.buf);
      if (m->u.ready.kind >= PROTO_KINDS) return 0;
      put(&c, m->u.ready.kind, 1);
      put(&c, m->u.ready.meet_mask, 8);
      put(&c, (uint32_t)m->u.ready.error, 4);
      if (m->u.ready.snap > 1 || m->u.ready.unit > 1 || m->u.ready.absorbed > 1 ||
          (m->u.ready.unit && !m->u.ready.recovered) ||
          (m->u.ready.absorbed && !m->u.ready.unit))
        return 0;
      put(&c, m->u.ready.snap, 1);
      put(&c, m->u.ready.unit, 1);
      put(&c, m->u.ready.absorbed, 1);
      if (m->u.ready.inl > 1 || m->u.ready.data_len > PROTO_INLINE_TOTAL ||
          (m->u.ready.data_len > 0 && (!m->u.ready.inl || m->u.ready.data == NULL)))
        return 0;
      put(&c, m->u.ready.inl, 1);
      put(&c, m->u.ready.data_len, 4);
      put_bytes(&c, m->u.ready.data, m->u.ready.data_len);
      if (!proto_have_valid(m)) return 0;
      put(&c, m->u.ready.have, 1);
      if (!proto_cover_valid(m)) return 0;
      put(&c, m->u.ready.cover_len, 4);
      put_bytes(&c, m->u.ready.cover, m->u.ready.cover_len);
      break;
    case PROTO_DATA:
      if (m->u.data.len > PROTO_DATA_MAX || m->u.data.offset > m->u.data.total ||
          m->u.data.len > m->u.data.total - m->u.data.offset ||
          (m->u.data.len > 0 && m->u.data.data == NULL))
        return 0;
      put(&c, m->u.data.group, 8);
      put(&c, (uint64_t)m->u.data.tag, 8);
      put(&c, m->u.data.offset, 8);
      put(&c, m->u.data.total, 8);
      put(&c, m->u.data.len, 4);
      put_bytes(&c, m->u.data.data, m->u.data.len);
      break;
    case PROTO_INLINE:
      if (m->u.inl.n == 0 || m->u.inl.n > PROTO_MAX_GROUP || m->u.inl.root >= m->u.inl.n ||
          m->u.inl.bytes > PROTO_INLINE_TOTAL ||
          (uint64_t)m->u.inl.n * m->u.inl.bytes > PROTO_INLINE_TOTAL ||
          (m->u.inl.bytes > 0 && m->u.inl.data == NULL))
        return 0;
      put(&c, m->u.inl.group, 8);
      put(&c, (uint64_t)m->u.inl.tag, 8);
      put(&c, m->u.inl.n, 4);
      put(&c, m->u.inl.root, 4);
      put(&c, m->u.inl.bytes, 8);
      put(&c, 0, 4); /* reserved (PROTO_INLINE_FIXED counts it) */
      put_bytes(&c, m->u.inl.data, (size_t)m->u.inl.n * (size_t)m->u.inl.bytes);
      break;
    case PROTO_DONE:
      put(&c, m->u.done.task_id, 8);
      put(&c, m->u.done.status, 4);
      put(&c, (uint32_t)m->u.done.error, 4);
      put(&c, m->u.done.exec_ns, 8);
      put_buf(&c, &m->u.done.buf);
      if (m->u.done.absorbed > 1) return 0;
      put(&c, m->u.done.absorbed, 1);
      break;
    case PROTO_PONG:
      put(&c, m->u.ping.seq, 8);
      put(&c, m->u.ping.pool_used, 8);
      put(&c, m->u.ping.pool_size, 8);
      put(&c, m->u.ping.pool_peak, 8);
      put(&c, m->u.ping.pool_fallbacks, 8);
      put(&c, m->u.ping.meet_done, 8);
      break;
    case PROTO_PING:
      put(&c, m->u.ping.seq, 8);
      break;
    case PROTO_BYE: /* with the worker's count of reductions met in shared memory */
      put(&c, m->u.ping.meet_done, 8);
      break;
    case PROTO_SHUTDOWN:
      break;
    case PROTO_RECOVER:
    case PROTO_RECOVER_FAILED:
    case PROTO_ABANDON:
    case PROTO_HAVE:
      put(&c, m->u.recover.group, 8);
      put(&c, (uint64_t)m->u.recover.tag, 8);
      put(&c, m->u.recover.member, 4);
      put(&c, (uint32_t)m->u.recover.error, 4);
      if (m->type == PROTO_RECOVER) {
        if (m->u.recover.single > 1) return 0;
        put(&c, m->u.recover.last, 4);
        put(&c, m->u.recover.tentative, 4);
        put(&c, m->u.recover.single, 1);
      }
      break;
    case PROTO_SERVE:
      if (m->u.serve.on > 1) return 0;
      put(&c, m->u.serve.task_id, 8);
      put(&c, m->u.serve.on, 1);
      break;
    case PROTO_TASK:
      put(&c, m->u.task.task_id, 8);
      put(&c, m->u.task.group, 8);
      put(&c, (uint64_t)m->u.task.tag, 8);
      put(&c, m->u.task.provider, 4);
      put(&c, m->u.task.prov_member, 4);
      put(&c, m->u.task.exec_member, 4);
      put(&c, m->u.task.count, 8);
      put(&c, m->u.task.exec_is_left, 1);
      put_buf(&c, &m->u.task.buf);
      if (m->u.task.absorb > 1) return 0;
      put(&c, m->u.task.absorb, 1);
      break;
    case PROTO_END:
    case PROTO_PUSH:
      put(&c, m->u.end.group, 8);
      put(&c, (uint64_t)m->u.end.tag, 8);
      put(&c, (uint32_t)m->u.end.status, 4);
      break;
    case PROTO_FAILED:
      put(&c, m->u.failed.worker, 4);
      break;
    case PROTO_JOIN:
      if (m->u.join.stage > 1) return 0;
      put(&c, m->u.join.stage, 4);
      put(&c, m->u.join.node, 4);
      put(&c, m->u.join.master_node, 4);
      break;
    case PROTO_WELCOME:
      if (m->u.welcome.job_id == NULL || m->u.welcome.reason == NULL ||
          strnlen(m->u.welcome.job_id, PROTO_JOB_ID_MAX) == PROTO_JOB_ID_MAX ||
          strnlen(m->u.welcome.reason, PROTO_REASON_MAX) == PROTO_REASON_MAX)
        return 0;
      put(&c, (uint32_t)m->u.welcome.status, 4);
      put(&c, m->u.welcome.heartbeat_ms, 4);
      put_str(&c, m->u.welcome.job_id, PROTO_JOB_ID_MAX);
      put_str(&c, m->u.welcome.reason, PROTO_REASON_MAX);
      break;
    case PROTO_REPLICA:
    case PROTO_REPLICA_ACK:
      put(&c, m->u.replica.group, 8);
      put(&c, (uint64_t)m->u.replica.tag, 8);
      put(&c, m->u.replica.member, 4);
      put(&c, m->u.replica.len, 8);
      put(&c, (uint64_t)m->u.replica.pool_off, 8);
      if (m->type == PROTO_REPLICA) put_params(&c, &m->u.replica.params);
      break;
    default:
      return 0;
  }
  if (c.bad) return 0;
  {
    size_t payload = c.pos - PROTO_HEADER;
    cursor_t h = {buf, NULL, PROTO_HEADER, 0, 0};
    put(&h, PROTO_MAGIC, 2);
    put(&h, PROTO_VERSION, 1);
    put(&h, (uint64_t)m->type, 1);
    put(&h, payload, 4);
  }
  return c.pos;
}

int proto_decode(const uint8_t *buf, size_t len, proto_msg_t *m) {
  cursor_t c = {NULL, buf, len, 0, 0};
  uint32_t i, payload;

  if (buf == NULL || m == NULL || len < PROTO_HEADER) return DRED_ERR_ARG;
  memset(m, 0, sizeof *m);
  if (get(&c, 2) != PROTO_MAGIC || get(&c, 1) != PROTO_VERSION) return DRED_ERR_ARG;
  m->type = (proto_type_t)get(&c, 1);
  payload = (uint32_t)get(&c, 4);
  if ((size_t)payload != len - PROTO_HEADER) return DRED_ERR_ARG;

  switch (m->type) {
    case PROTO_GROUP:
      m->u.group.id = get(&c, 8);
      m->u.group.n = (uint32_t)get(&c, 4);
      if (m->u.group.n == 0 || m->u.group.n > PROTO_MAX_GROUP) return DRED_ERR_ARG;
      if (c.pos + 4u * (size_t)m->u.group.n != len) return DRED_ERR_ARG;
      m->u.group.workers_le = buf + c.pos;
      c.pos += 4u * (size_t)m->u.group.n;
      break;
    case PROTO_READY:
      m->u.ready.group = get(&c, 8);
      m->u.ready.tag = (int64_t)get(&c, 8);
      m->u.ready.member = (uint32_t)get(&c, 4);
      m->u.ready.root = (uint32_t)get(&c, 4);
      m->u.ready.count = get(&c, 8);
      m->u.ready.type_size = (uint32_t)get(&c, 4);
      m->u.ready.extent = (uint32_t)get(&c, 4);
      m->u.ready.type_sig = (uint32_t)get(&c, 4);
      m->u.ready.op = (int32_t)(uint32_t)get(&c, 4);
      m->u.ready.op_is_user = (uint8_t)get(&c, 1);
      m->u.ready.commutative = (uint8_t)get(&c, 1);
      m->u.ready.recovered = (uint8_t)get(&c, 1);
      m->u.ready.nreplicas = (uint8_t)get(&c, 1);
      if (m->u.ready.nreplicas > PROTO_MAX_REPLICAS) return DRED_ERR_ARG;
      for (i = 0; i < m->u.ready.nreplicas; i++) m->u.ready.replicas[i] = (uint32_t)get(&c, 4);
      get_buf(&c, &m->u.ready.buf);
      m->u.ready.kind = (uint8_t)get(&c, 1);
      if (m->u.ready.kind >= PROTO_KINDS) return DRED_ERR_ARG;
      m->u.ready.meet_mask = get(&c, 8);
      m->u.ready.error = (int32_t)(uint32_t)get(&c, 4);
      if (m->u.ready.op_is_user > 1 || m->u.ready.commutative > 1 || m->u.ready.recovered > 1)
        return DRED_ERR_ARG;
      if (!proto_ready_error_ok(m->u.ready.error)) return DRED_ERR_ARG;
      m->u.ready.snap = (uint8_t)get(&c, 1);
      m->u.ready.unit = (uint8_t)get(&c, 1);
      m->u.ready.absorbed = (uint8_t)get(&c, 1);
      if (m->u.ready.snap > 1 || m->u.ready.unit > 1 || m->u.ready.absorbed > 1 ||
          (m->u.ready.unit && !m->u.ready.recovered) ||
          (m->u.ready.absorbed && !m->u.ready.unit))
        return DRED_ERR_ARG;
      m->u.ready.inl = (uint8_t)get(&c, 1);
      m->u.ready.data_len = (uint32_t)get(&c, 4);
      if (m->u.ready.inl > 1 || m->u.ready.data_len > PROTO_INLINE_TOTAL ||
          (m->u.ready.data_len > 0 && !m->u.ready.inl))
        return DRED_ERR_ARG;
      m->u.ready.data = get_bytes(&c, m->u.ready.data_len);
      m->u.ready.have = (uint8_t)get(&c, 1);
      if (!proto_have_valid(m)) return DRED_ERR_ARG;
      m->u.ready.cover_len = (uint32_t)get(&c, 4);
      if (m->u.ready.cover_len > PROTO_COVER_MAX) return DRED_ERR_ARG;
      m->u.ready.cover = get_bytes(&c, m->u.ready.cover_len);
      if (!proto_cover_valid(m)) return DRED_ERR_ARG;
      break;
    case PROTO_DATA:
      m->u.data.group = get(&c, 8);
      m->u.data.tag = (int64_t)get(&c, 8);
      m->u.data.offset = get(&c, 8);
      m->u.data.total = get(&c, 8);
      m->u.data.len = (uint32_t)get(&c, 4);
      if (m->u.data.len > PROTO_DATA_MAX || m->u.data.offset > m->u.data.total ||
          m->u.data.len > m->u.data.total - m->u.data.offset)
        return DRED_ERR_ARG;
      m->u.data.data = get_bytes(&c, m->u.data.len);
      break;
    case PROTO_INLINE:
      m->u.inl.group = get(&c, 8);
      m->u.inl.tag = (int64_t)get(&c, 8);
      m->u.inl.n = (uint32_t)get(&c, 4);
      m->u.inl.root = (uint32_t)get(&c, 4);
      m->u.inl.bytes = get(&c, 8);
      if (get(&c, 4) != 0) return DRED_ERR_ARG;
      if (m->u.inl.n == 0 || m->u.inl.n > PROTO_MAX_GROUP || m->u.inl.root >= m->u.inl.n ||
          m->u.inl.bytes > PROTO_INLINE_TOTAL ||
          (uint64_t)m->u.inl.n * m->u.inl.bytes > PROTO_INLINE_TOTAL)
        return DRED_ERR_ARG;
      m->u.inl.data = get_bytes(&c, (size_t)m->u.inl.n * (size_t)m->u.inl.bytes);
      break;
    case PROTO_DONE:
      m->u.done.task_id = get(&c, 8);
      m->u.done.status = (uint32_t)get(&c, 4);
      m->u.done.error = (int32_t)(uint32_t)get(&c, 4);
      m->u.done.exec_ns = get(&c, 8);
      get_buf(&c, &m->u.done.buf);
      m->u.done.absorbed = (uint8_t)get(&c, 1);
      if (m->u.done.absorbed > 1) return DRED_ERR_ARG;
      break;
    case PROTO_PONG:
      m->u.ping.seq = get(&c, 8);
      m->u.ping.pool_used = get(&c, 8);
      m->u.ping.pool_size = get(&c, 8);
      m->u.ping.pool_peak = get(&c, 8);
      m->u.ping.pool_fallbacks = get(&c, 8);
      m->u.ping.meet_done = get(&c, 8);
      break;
    case PROTO_PING:
      m->u.ping.seq = get(&c, 8);
      break;
    case PROTO_BYE:
      m->u.ping.meet_done = get(&c, 8);
      break;
    case PROTO_SHUTDOWN:
      break;
    case PROTO_RECOVER:
    case PROTO_RECOVER_FAILED:
    case PROTO_ABANDON:
    case PROTO_HAVE:
      m->u.recover.group = get(&c, 8);
      m->u.recover.tag = (int64_t)get(&c, 8);
      m->u.recover.member = (uint32_t)get(&c, 4);
      m->u.recover.error = (int32_t)(uint32_t)get(&c, 4);
      if (m->type == PROTO_RECOVER) {
        m->u.recover.last = (uint32_t)get(&c, 4);
        m->u.recover.tentative = (uint32_t)get(&c, 4);
        m->u.recover.single = (uint8_t)get(&c, 1);
        if (m->u.recover.single > 1) return DRED_ERR_ARG;
      }
      break;
    case PROTO_SERVE:
      m->u.serve.task_id = get(&c, 8);
      m->u.serve.on = (uint8_t)get(&c, 1);
      if (m->u.serve.on > 1) return DRED_ERR_ARG;
      break;
    case PROTO_TASK:
      m->u.task.task_id = get(&c, 8);
      m->u.task.group = get(&c, 8);
      m->u.task.tag = (int64_t)get(&c, 8);
      m->u.task.provider = (uint32_t)get(&c, 4);
      m->u.task.prov_member = (uint32_t)get(&c, 4);
      m->u.task.exec_member = (uint32_t)get(&c, 4);
      m->u.task.count = get(&c, 8);
      m->u.task.exec_is_left = (uint8_t)get(&c, 1);
      get_buf(&c, &m->u.task.buf);
      m->u.task.absorb = (uint8_t)get(&c, 1);
      if (m->u.task.exec_is_left > 1 || m->u.task.absorb > 1) return DRED_ERR_ARG;
      break;
    case PROTO_END:
    case PROTO_PUSH:
      m->u.end.group = get(&c, 8);
      m->u.end.tag = (int64_t)get(&c, 8);
      m->u.end.status = (int32_t)(uint32_t)get(&c, 4);
      break;
    case PROTO_FAILED:
      m->u.failed.worker = (uint32_t)get(&c, 4);
      break;
    case PROTO_JOIN:
      m->u.join.stage = (uint32_t)get(&c, 4);
      m->u.join.node = (uint32_t)get(&c, 4);
      m->u.join.master_node = (uint32_t)get(&c, 4);
      if (m->u.join.stage > 1) return DRED_ERR_ARG;
      break;
    case PROTO_WELCOME: {
      const uint8_t *id, *why;
      m->u.welcome.status = (int32_t)(uint32_t)get(&c, 4);
      m->u.welcome.heartbeat_ms = (uint32_t)get(&c, 4);
      id = get_bytes(&c, PROTO_JOB_ID_MAX);
      why = get_bytes(&c, PROTO_REASON_MAX);
      if (c.bad || memchr(id, 0, PROTO_JOB_ID_MAX) == NULL ||
          memchr(why, 0, PROTO_REASON_MAX) == NULL)
        return DRED_ERR_ARG;
      m->u.welcome.job_id = (const char *)id;
      m->u.welcome.reason = (const char *)why;
      break;
    }
    case PROTO_REPLICA:
    case PROTO_REPLICA_ACK:
      m->u.replica.group = get(&c, 8);
      m->u.replica.tag = (int64_t)get(&c, 8);
      m->u.replica.member = (uint32_t)get(&c, 4);
      m->u.replica.len = get(&c, 8);
      m->u.replica.pool_off = (int64_t)get(&c, 8);
      if (m->type == PROTO_REPLICA) get_params(&c, &m->u.replica.params);
      break;
    default:
      return DRED_ERR_ARG;
  }
  if (c.bad || c.pos != len) return DRED_ERR_ARG;
  return 0;
}

proto_params_t proto_params_of(const proto_msg_t *ready) {
  proto_params_t p;
  memset(&p, 0, sizeof p);
  p.count = ready->u.ready.count;
  p.type_size = ready->u.ready.type_size;
  p.extent = ready->u.ready.extent;
  p.type_sig = ready->u.ready.type_sig;
  p.root = ready->u.ready.root;
  p.op = ready->u.ready.op;
  p.op_is_user = ready->u.ready.op_is_user;
  p.commutative = ready->u.ready.commutative;
  p.inl = ready->u.ready.inl;
  p.kind = ready->u.ready.kind;
  return p;
}

void proto_params_set(proto_msg_t *ready, const proto_params_t *p) {
  ready->u.ready.count = p->count;
  ready->u.ready.type_size = p->type_size;
  ready->u.ready.extent = p->extent;
  ready->u.ready.type_sig = p->type_sig;
  ready->u.ready.root = p->root;
  ready->u.ready.op = p->op;
  ready->u.ready.op_is_user = p->op_is_user;
  ready->u.ready.commutative = p->commutative;
  ready->u.ready.inl = p->inl;
  ready->u.ready.kind = p->kind;
}

int proto_params_agree(const proto_params_t *a, const proto_params_t *b) {
  if (a->count != b->count || a->type_size != b->type_size || a->extent != b->extent ||
      a->type_sig != b->type_sig || a->root != b->root || a->commutative != b->commutative ||
      a->op_is_user != b->op_is_user || a->inl != b->inl || a->kind != b->kind)
    return 0;
  return a->op_is_user || a->op == b->op; /* user ops: commutativity is all we can compare */
}

uint32_t proto_group_worker(const proto_msg_t *m, uint32_t k) {
  const uint8_t *p = m->u.group.workers_le + 4u * (size_t)k;
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t proto_group_id(uint32_t n, const uint32_t *workers) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a 64 offset basis */
  uint32_t i, v;
  int b;
  for (b = 0; b < 4; b++) h = (h ^ ((n >> (8 * b)) & 0xff)) * 1099511628211ull;
  for (i = 0; i < n; i++) {
    v = workers[i];
    for (b = 0; b < 4; b++) h = (h ^ ((v >> (8 * b)) & 0xff)) * 1099511628211ull;
  }
  return h;
}

const char *proto_type_name(int type) {
  switch (type) {
    case PROTO_GROUP: return "GROUP";
    case PROTO_READY: return "READY";
    case PROTO_DONE: return "DONE";
    case PROTO_PONG: return "PONG";
    case PROTO_BYE: return "BYE";
    case PROTO_RECOVER_FAILED: return "RECOVER_FAILED";
    case PROTO_ABANDON: return "ABANDON";
    case PROTO_HAVE: return "HAVE";
    case PROTO_SERVE: return "SERVE";
    case PROTO_REPLICA: return "REPLICA";
    case PROTO_REPLICA_ACK: return "REPLICA_ACK";
    case PROTO_TASK: return "TASK";
    case PROTO_END: return "END";
    case PROTO_PING: return "PING";
    case PROTO_FAILED: return "FAILED";
    case PROTO_RECOVER: return "RECOVER";
    case PROTO_SHUTDOWN: return "SHUTDOWN";
    case PROTO_INLINE: return "INLINE";
    case PROTO_JOIN: return "JOIN";
    case PROTO_WELCOME: return "WELCOME";
    case PROTO_DATA: return "DATA";
    case PROTO_PUSH: return "PUSH";
    default: return "UNKNOWN";
  }
}

const char *proto_task_status_name(int status) {
  switch (status) {
    case PROTO_TASK_OK: return "ok";
    case PROTO_TASK_PROVIDER_LOST: return "provider lost";
    case PROTO_TASK_ERROR: return "error";
    default: return "unknown";
  }
}
