/*
 * test_proto.c -- control-message encoding: every type round-trips, and malformed input
 * (bad magic, version, type, truncation, padding, out-of-range fields) is refused; random
 * well-formed messages and damaged copies of them round-trip (whatever decodes re-encodes
 * to the same bytes: tests/fuzz/proto_roundtrip.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/proto.h"
#include "../../include/dred_status.h"
#include "../fuzz/proto_roundtrip.h"

static size_t enc(const proto_msg_t *m, const uint32_t *w, uint8_t *buf) {
  return proto_encode(m, w, buf, PROTO_MAX_SIZE);
}

static void test_ready_roundtrip(void **state) {
  uint8_t buf[256];
  proto_msg_t m, d;
  size_t n;
  (void)state;
  memset(&m, 0, sizeof m);
  m.type = PROTO_READY;
  m.u.ready.group = 0x0123456789abcdefull;
  m.u.ready.tag = -42;
  m.u.ready.member = 7;
  m.u.ready.root = 3;
  m.u.ready.count = 1ull << 33;
  m.u.ready.type_size = 12;
  m.u.ready.extent = 16;
  m.u.ready.type_sig = 0x89abcdefu;
  m.u.ready.op = -5;
  m.u.ready.op_is_user = 1;
  m.u.ready.commutative = 0;
  m.u.ready.recovered = 1;
  m.u.ready.nreplicas = 2;
  m.u.ready.replicas[0] = 9;
  m.u.ready.replicas[1] = 10;
  m.u.ready.buf.addr = 0xdeadbeefcafeull;
  m.u.ready.buf.pool_off = -1;
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.type, PROTO_READY);
  assert_true(d.u.ready.group == m.u.ready.group);
  assert_true(d.u.ready.tag == -42);
  assert_int_equal(d.u.ready.member, 7);
  assert_int_equal(d.u.ready.root, 3);
  assert_true(d.u.ready.count == (1ull << 33));
  assert_int_equal(d.u.ready.extent, 16);
  assert_int_equal(d.u.ready.type_sig, 0x89abcdefu);
  assert_int_equal(d.u.ready.op, -5);
  assert_int_equal(d.u.ready.recovered, 1);
  assert_int_equal(d.u.ready.nreplicas, 2);
  assert_int_equal(d.u.ready.replicas[1], 10);
  assert_true(d.u.ready.buf.addr == 0xdeadbeefcafeull);
  assert_true(d.u.ready.buf.pool_off == -1);
  assert_int_equal(d.u.ready.error, 0);
  assert_int_equal(d.u.ready.type_size, 12);
}

/* A READY of `member` for a collective of `kind`, its buffer at pool_off, saying `have`. */
static proto_msg_t ready_have(uint32_t member, uint8_t kind, int64_t pool_off, uint8_t have) {
  proto_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = PROTO_READY;
  m.u.ready.member = member;
  m.u.ready.kind = kind;
  m.u.ready.buf.pool_off = pool_off;
  m.u.ready.have = have;
  return m;
}

/* Protocol 10: a relayed bcast member's READY says it holds the data (have); only a bcast's
 * READY may, and only 0 or 1. */
static void test_ready_have(void **state) {
  uint8_t buf[256], bad[256];
  proto_msg_t m, d;
  size_t n;
  (void)state;
  m = ready_have(2, PROTO_KIND_BCAST, -1, 1);
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.have, 1);
  assert_int_equal(d.u.ready.kind, PROTO_KIND_BCAST);
  m.u.ready.have = 0;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.have, 0);
  m.u.ready.have = 1; /* not a bcast: refused both ways */
  m.u.ready.kind = PROTO_KIND_ALLREDUCE;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.kind = PROTO_KIND_BCAST;
  n = enc(&m, NULL, buf);
  memcpy(bad, buf, n);
  bad[n - 5] = 2; /* have: before cover_len, the last 4 bytes */
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);
  m.u.ready.kind = PROTO_KIND_REDUCE;
  m.u.ready.have = 0;
  n = enc(&m, NULL, buf);
  memcpy(bad, buf, n);
  bad[n - 5] = 1;
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);
}

/* Protocol 11: a large allreduce's relay follower says so in its READY (have
 * PROTO_HAVE_FOLLOW: only an allreduce's, not inline, not recovered), and later sends HAVE
 * (RECOVER's layout: group, tag, member, error). */
static void test_ready_follow_and_have(void **state) {
  uint8_t buf[256], bad[256];
  proto_msg_t m, d;
  size_t n;
  (void)state;
  m = ready_have(4, PROTO_KIND_ALLREDUCE, 128, PROTO_HAVE_FOLLOW);
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.have, PROTO_HAVE_FOLLOW);
  memcpy(bad, buf, n);
  bad[n - 5] = 3; /* no such have */
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);
  m.u.ready.kind = PROTO_KIND_BCAST; /* a bcast member follows by HAVE_DATA, not this */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.kind = PROTO_KIND_REDUCE;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.kind = PROTO_KIND_ALLREDUCE;
  m.u.ready.recovered = 1; /* a recovered copy is not the member's own arrival */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.recovered = 0;
  m.u.ready.have = PROTO_HAVE_DATA; /* an allreduce member never says it has the data */
  assert_int_equal(enc(&m, NULL, buf), 0);

  memset(&m, 0, sizeof m);
  m.type = PROTO_HAVE;
  m.u.recover.group = 0x1234;
  m.u.recover.tag = proto_key_kind(9, 3, PROTO_KIND_ALLREDUCE);
  m.u.recover.member = 5;
  m.u.recover.error = DRED_ERR_ROOT_FAILED;
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.type, PROTO_HAVE);
  assert_int_equal(d.u.recover.group, 0x1234);
  assert_int_equal(d.u.recover.tag, m.u.recover.tag);
  assert_int_equal(d.u.recover.member, 5);
  assert_int_equal(d.u.recover.error, DRED_ERR_ROOT_FAILED);
  assert_string_equal(proto_type_name(PROTO_HAVE), "HAVE");
}

/* A member that could not allocate joins with an explicit error, its real element size
 * intact: a size of 0 standing for the error would make everyone see MISMATCH. */
static void test_ready_error_field(void **state) {
  uint8_t buf[256];
  proto_msg_t m, d;
  size_t n;
  (void)state;
  memset(&m, 0, sizeof m);
  m.type = PROTO_READY;
  m.u.ready.group = 5;
  m.u.ready.count = 1000;
  m.u.ready.type_size = 8;
  m.u.ready.extent = 8;
  m.u.ready.buf.pool_off = -1;
  m.u.ready.error = DRED_ERR_NOMEM;
  m.u.ready.meet_mask = 0x8000000000000005ull;
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.error, DRED_ERR_NOMEM);
  assert_true(d.u.ready.meet_mask == 0x8000000000000005ull);
  assert_int_equal(d.u.ready.type_size, 8);
  assert_true(d.u.ready.count == 1000);
  /* only "could not allocate" (or attach) may travel in a READY */
  m.u.ready.error = DRED_ERR_MISMATCH;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.error = DRED_ERR_NOMEM;
  n = enc(&m, NULL, buf);
  /* the error is the last field before the absorption flags (snap, unit, absorbed: 1 byte
   * each), the inline flag (1 byte), length (4 bytes), have (1 byte) and cover_len (4) */
  buf[n - 17] = DRED_ERR_ROOT_FAILED;
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[n - 17] = DRED_ERR_NOMEM;
  assert_int_equal(proto_decode(buf, n, &d), 0);
}

/* ABANDON: a member gives up on a reduction; group, tag, member and status survive. */
static void test_abandon_roundtrip(void **state) {
  uint8_t buf[256];
  proto_msg_t m, d;
  size_t n;
  (void)state;
  memset(&m, 0, sizeof m);
  m.type = PROTO_ABANDON;
  m.u.recover.group = 0xfeedull;
  m.u.recover.tag = -3;
  m.u.recover.member = 2;
  m.u.recover.error = DRED_ERR_SHUTDOWN;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.type, PROTO_ABANDON);
  assert_true(d.u.recover.group == 0xfeedull);
  assert_true(d.u.recover.tag == -3);
  assert_int_equal(d.u.recover.member, 2);
  assert_int_equal(d.u.recover.error, DRED_ERR_SHUTDOWN);
  assert_string_equal(proto_type_name(PROTO_ABANDON), "ABANDON");
}

/* A REPLICA states its member's parameters; a recovered READY takes them over
 * (proto_params_set, proto_params_of's inverse); a kind no READY carries is refused. */
static void test_replica_params(void **state) {
  uint8_t buf[256];
  proto_msg_t m, d, r;
  proto_params_t p, q;
  size_t n;
  (void)state;
  memset(&m, 0, sizeof m);
  m.type = PROTO_REPLICA;
  m.u.replica.group = 9;
  m.u.replica.tag = -4;
  m.u.replica.member = 3;
  m.u.replica.len = 4096;
  m.u.replica.pool_off = -1;
  p = (proto_params_t){.count = 512, .type_size = 8, .extent = 8, .type_sig = 0xabcd, .root = 2,
                       .op = 0x58000003, .op_is_user = 0, .commutative = 1, .inl = 0,
                       .kind = PROTO_KIND_ALLREDUCE};
  m.u.replica.params = p;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_memory_equal(&d.u.replica.params, &p, sizeof p);
  memset(&r, 0, sizeof r);
  r.type = PROTO_READY;
  proto_params_set(&r, &d.u.replica.params);
  q = proto_params_of(&r);
  assert_memory_equal(&q, &p, sizeof p);
  assert_int_equal(proto_params_agree(&q, &p), 1);
  q.op = 0x58000001; /* another predefined op: what a dead member's copy must show */
  assert_int_equal(proto_params_agree(&q, &p), 0);
  /* REPLICA_ACK carries none: 32 bytes fewer */
  m.type = PROTO_REPLICA_ACK;
  assert_int_equal(enc(&m, NULL, buf) + 32, n);
  m.type = PROTO_REPLICA;
  m.u.replica.params.kind = PROTO_KINDS;
  assert_int_equal(proto_encode(&m, NULL, buf, sizeof buf), 0);
}

static void test_every_type_roundtrips(void **state) {
  static const proto_type_t types[] = {PROTO_DONE, PROTO_PONG, PROTO_BYE, PROTO_RECOVER_FAILED,
                                       PROTO_REPLICA, PROTO_TASK, PROTO_END, PROTO_PING,
                                       PROTO_FAILED, PROTO_RECOVER, PROTO_SHUTDOWN};
  uint8_t buf[256];
  proto_msg_t m, d;
  size_t i, n;
  (void)state;
  for (i = 0; i < sizeof types / sizeof types[0]; i++) {
    memset(&m, 0, sizeof m);
    m.type = types[i];
    m.u.task.task_id = 77; /* first field of several layouts; harmless for the others */
    if (m.type == PROTO_TASK) {
      m.u.task.exec_is_left = 1;
      m.u.task.buf.pool_off = 4096;
    }
    if (m.type == PROTO_PONG) {
      m.u.ping.pool_used = 3u << 20;
      m.u.ping.pool_size = 256u << 20;
      m.u.ping.pool_peak = 200u << 20;
      m.u.ping.pool_fallbacks = 5;
      m.u.ping.meet_done = 77;
    }
    n = enc(&m, NULL, buf);
    assert_true(n >= PROTO_HEADER);
    assert_int_equal(proto_decode(buf, n, &d), 0);
    assert_int_equal(d.type, m.type);
    if (m.type == PROTO_TASK) {
      assert_int_equal(d.u.task.exec_is_left, 1);
      assert_true(d.u.task.buf.pool_off == 4096);
    }
    if (m.type == PROTO_PONG) {
      assert_true(d.u.ping.pool_used == 3u << 20 && d.u.ping.pool_size == 256u << 20);
      assert_true(d.u.ping.pool_peak == 200u << 20 && d.u.ping.pool_fallbacks == 5);
      assert_true(d.u.ping.meet_done == 77);
    }
    assert_string_not_equal(proto_type_name(m.type), "UNKNOWN");
  }
}

static void test_group_roundtrip_and_id(void **state) {
  uint32_t w[5] = {1, 4, 2, 8, 3}, w2[5] = {1, 2, 4, 8, 3};
  uint8_t buf[256];
  proto_msg_t m, d;
  size_t n;
  uint32_t k;
  (void)state;
  memset(&m, 0, sizeof m);
  m.type = PROTO_GROUP;
  m.u.group.id = proto_group_id(5, w);
  m.u.group.n = 5;
  n = enc(&m, w, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.group.n, 5);
  for (k = 0; k < 5; k++) assert_int_equal(proto_group_worker(&d, k), w[k]);
  /* order matters: a permutation is another group */
  assert_true(proto_group_id(5, w) != proto_group_id(5, w2));
  assert_true(proto_group_id(4, w) != proto_group_id(5, w));
  /* n == 0 and too many members cannot be encoded */
  m.u.group.n = 0;
  assert_int_equal(enc(&m, w, buf), 0);
}

static void test_malformed(void **state) {
  uint8_t buf[256], bad[300];
  proto_msg_t m, d;
  size_t n;
  (void)state;
  memset(&m, 0, sizeof m);
  m.type = PROTO_END;
  m.u.end.status = DRED_ERR_MISMATCH;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.end.status, DRED_ERR_MISMATCH);

  assert_int_equal(proto_decode(NULL, n, &d), DRED_ERR_ARG);
  assert_int_equal(proto_decode(buf, 3, &d), DRED_ERR_ARG);       /* shorter than a header */
  assert_int_equal(proto_decode(buf, n - 1, &d), DRED_ERR_ARG);   /* truncated payload */
  memcpy(bad, buf, n);
  bad[n] = 0;
  assert_int_equal(proto_decode(bad, n + 1, &d), DRED_ERR_ARG);   /* trailing byte */
  memcpy(bad, buf, n);
  bad[0] ^= 0xff;
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);       /* magic */
  memcpy(bad, buf, n);
  bad[2] = 99;
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);       /* version */
  memcpy(bad, buf, n);
  bad[3] = 200;
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);       /* unknown type */
  memcpy(bad, buf, n);
  bad[4] = (uint8_t)(bad[4] + 1);
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);       /* length field lies */

  /* a READY claiming more replicas than allowed, and flags outside {0,1} */
  memset(&m, 0, sizeof m);
  m.type = PROTO_READY;
  m.u.ready.nreplicas = PROTO_MAX_REPLICAS + 1;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.nreplicas = 0;
  n = enc(&m, NULL, buf);
  memcpy(bad, buf, n);
  bad[PROTO_HEADER + 8 + 8 + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 1] = 7; /* commutative = 7 */
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);
}

/* Protocol 12: a node partial's READY names the members its buffer holds (cover, a bitmap
 * of (n + 7) / 8 bytes); only a reduce's own READY, with the holder's bit set, may. */
static void test_ready_cover(void **state) {
  static uint8_t buf[PROTO_MAX_SIZE], bad[PROTO_MAX_SIZE];
  static uint8_t big[PROTO_COVER_MAX];
  uint8_t cover[2] = {0x0c, 0x01}; /* members 2, 3 and 8 */
  proto_msg_t m, d;
  size_t n;
  (void)state;
  m = ready_have(3, PROTO_KIND_REDUCE, 128, 0);
  m.u.ready.cover_len = 2;
  m.u.ready.cover = cover;
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.cover_len, 2);
  assert_true(proto_cover_has(&d, 2) && proto_cover_has(&d, 3) && proto_cover_has(&d, 8));
  assert_false(proto_cover_has(&d, 0) || proto_cover_has(&d, 4) || proto_cover_has(&d, 16));
  memcpy(bad, buf, n);
  bad[n - 2] = 0x04; /* the holder (member 3) no longer named */
  assert_int_equal(proto_decode(bad, n, &d), DRED_ERR_ARG);
  assert_int_equal(proto_decode(buf, n - 1, &d), DRED_ERR_ARG); /* short */
  /* refused where a partial makes no sense */
  m.u.ready.member = 4; /* not in its own cover */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.member = 3;
  m.u.ready.kind = PROTO_KIND_BCAST;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.kind = PROTO_KIND_REDUCE;
  m.u.ready.recovered = 1;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.recovered = 0;
  m.u.ready.snap = 1;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.snap = 0;
  m.u.ready.error = DRED_ERR_NOMEM; /* a fold that failed: told to all it covers */
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.error, DRED_ERR_NOMEM);
  m.u.ready.error = 0;
  m.u.ready.cover = NULL;
  assert_int_equal(enc(&m, NULL, buf), 0);
  /* the largest group the wire takes */
  memset(big, 0xff, sizeof big);
  m.u.ready.member = PROTO_MAX_GROUP - 1;
  m.u.ready.cover_len = PROTO_COVER_MAX;
  m.u.ready.cover = big;
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_COVER_MAX);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_true(proto_cover_has(&d, PROTO_MAX_GROUP - 1));
  m.u.ready.cover_len = PROTO_COVER_MAX + 1;
  assert_int_equal(enc(&m, NULL, buf), 0);
}

/* Protocol 8, in-place absorption: READY's snap, unit and absorbed, TASK's absorb, DONE's
 * absorbed and RECOVER's last, tentative (PROTO_NO_MEMBER: none) and single round-trip;
 * RECOVER_FAILED and ABANDON keep RECOVER's old layout (the new fields are RECOVER's). */
static void test_absorb_fields_roundtrip(void **state) {
  uint8_t buf[256], again[256];
  proto_msg_t m, d;
  size_t n, n2;
  (void)state;
  assert_int_equal(PROTO_VERSION, 13); /* 13 added REPLICA's parameters, last */

  memset(&m, 0, sizeof m); /* a member's own READY: its snapshot */
  m.type = PROTO_READY;
  m.u.ready.member = 3;
  m.u.ready.buf.pool_off = 64;
  m.u.ready.snap = 1;
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.snap, 1);
  assert_int_equal(d.u.ready.unit, 0);
  assert_int_equal(d.u.ready.absorbed, 0);
  assert_int_equal(d.u.ready.recovered, 0);
  m.u.ready.recovered = 1; /* an answer: its unit, with the tentative absorption */
  m.u.ready.unit = 1;
  m.u.ready.absorbed = 1;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.recovered, 1);
  assert_int_equal(d.u.ready.snap, 1);
  assert_int_equal(d.u.ready.unit, 1);
  assert_int_equal(d.u.ready.absorbed, 1);
  assert_true(d.u.ready.buf.pool_off == 64);
  m.u.ready.snap = 0; /* a unit, not absorbed, read by a node peer */
  m.u.ready.absorbed = 0;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.snap, 0);
  assert_int_equal(d.u.ready.unit, 1);
  assert_int_equal(d.u.ready.absorbed, 0);

  memset(&m, 0, sizeof m);
  m.type = PROTO_TASK;
  m.u.task.task_id = 9;
  m.u.task.absorb = 1;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.task.absorb, 1);
  assert_true(d.u.task.task_id == 9);
  m.u.task.absorb = 0;
  n2 = enc(&m, NULL, again);
  assert_int_equal(n2, n);
  assert_int_equal(proto_decode(again, n2, &d), 0);
  assert_int_equal(d.u.task.absorb, 0);

  memset(&m, 0, sizeof m);
  m.type = PROTO_DONE;
  m.u.done.task_id = 9;
  m.u.done.absorbed = 1;
  n = enc(&m, NULL, buf);
  assert_int_equal(n, PROTO_HEADER + 53);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.done.absorbed, 1);
  assert_int_equal(d.u.done.status, PROTO_TASK_OK);

  memset(&m, 0, sizeof m);
  m.type = PROTO_RECOVER;
  m.u.recover.group = 77;
  m.u.recover.tag = -2;
  m.u.recover.member = 5;
  m.u.recover.last = 3;
  m.u.recover.tentative = PROTO_NO_MEMBER;
  m.u.recover.single = 1;
  n = enc(&m, NULL, buf);
  assert_int_equal(n, PROTO_HEADER + 33);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.recover.member, 5);
  assert_int_equal(d.u.recover.last, 3);
  assert_int_equal(d.u.recover.tentative, PROTO_NO_MEMBER);
  assert_int_equal(d.u.recover.single, 1);
  m.u.recover.last = PROTO_NO_MEMBER;
  m.u.recover.tentative = 0; /* member 0 is a member, not "none" */
  m.u.recover.single = 0;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.recover.last, PROTO_NO_MEMBER);
  assert_int_equal(d.u.recover.tentative, 0);
  assert_int_equal(d.u.recover.single, 0);

  /* RECOVER_FAILED and ABANDON: 24 bytes, RECOVER's new fields neither sent nor read */
  m.u.recover.last = 3;
  m.u.recover.tentative = 4;
  m.u.recover.single = 1;
  m.type = PROTO_RECOVER_FAILED;
  n = enc(&m, NULL, buf);
  assert_int_equal(n, PROTO_HEADER + 24);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.recover.member, 5);
  assert_int_equal(d.u.recover.last, 0);
  assert_int_equal(d.u.recover.tentative, 0);
  assert_int_equal(d.u.recover.single, 0);
  assert_int_equal(proto_rt_check(buf, n, again), 1);
  m.type = PROTO_ABANDON;
  assert_int_equal(enc(&m, NULL, buf), PROTO_HEADER + 24);
}

/* The new flags are 0 or 1, unit only in a recovered READY and absorbed only with unit:
 * the encoder refuses anything else and so does the decoder, byte by byte.  A RECOVER in
 * version 7's layout (without last, tentative and single) is refused. */
static void test_absorb_fields_rejected(void **state) {
  uint8_t buf[256];
  proto_msg_t m, d;
  size_t n, recovered_at = PROTO_HEADER + 8 + 8 + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 1 + 1;
  (void)state;
  memset(&m, 0, sizeof m);
  m.type = PROTO_READY;
  m.u.ready.snap = 2;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.snap = 1;
  m.u.ready.unit = 1; /* a unit in a member's own READY */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.recovered = 1;
  m.u.ready.unit = 2;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.unit = 0;
  m.u.ready.absorbed = 1; /* absorbed without unit */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.unit = 1;
  m.u.ready.absorbed = 2;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.absorbed = 1;
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(buf[recovered_at], 1);
  /* the flags are the three bytes after the error, before inl, data_len and have */
  assert_int_equal(buf[n - 13], 1);
  assert_int_equal(buf[n - 12], 1);
  assert_int_equal(buf[n - 11], 1);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  buf[n - 13] = 2; /* snap */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[n - 13] = 1;
  buf[n - 12] = 2; /* unit */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[n - 12] = 1;
  buf[n - 11] = 2; /* absorbed */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[n - 11] = 1;
  buf[recovered_at] = 0; /* unit in a READY that is not recovered */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[recovered_at] = 1;
  buf[n - 12] = 0; /* absorbed without unit */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[n - 11] = 0; /* neither: a recovered READY of the operand alone */
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.unit, 0);
  assert_int_equal(d.u.ready.snap, 1);

  memset(&m, 0, sizeof m);
  m.type = PROTO_TASK;
  m.u.task.absorb = 2;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.task.absorb = 1;
  n = enc(&m, NULL, buf);
  buf[n - 1] = 2;
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);

  memset(&m, 0, sizeof m);
  m.type = PROTO_DONE;
  m.u.done.absorbed = 2;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.done.absorbed = 1;
  n = enc(&m, NULL, buf);
  buf[n - 1] = 2;
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);

  memset(&m, 0, sizeof m);
  m.type = PROTO_RECOVER;
  m.u.recover.single = 2;
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.recover.single = 1;
  n = enc(&m, NULL, buf);
  buf[n - 1] = 2;
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[n - 1] = 1;
  assert_int_equal(proto_decode(buf, n, &d), 0);
  n -= 9; /* version 7's RECOVER: no last, tentative, single */
  buf[4] = (uint8_t)(n - PROTO_HEADER), buf[5] = buf[6] = buf[7] = 0;
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[2] = 7; /* and its version */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
}

/* A small deterministic generator (xorshift64*): reproducible failures, no libc state. */
static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* A random but well-formed message of type `t` (fields in the ranges encode accepts). */
static uint8_t g_data[PROTO_INLINE_TOTAL]; /* inline operands of random messages */

static void random_msg(uint64_t *s, proto_type_t t, proto_msg_t *m, uint32_t *workers) {
  uint32_t k;
  memset(m, 0, sizeof *m);
  m->type = t;
  switch (t) {
    case PROTO_GROUP:
      m->u.group.id = rnd(s);
      m->u.group.n = 1 + (uint32_t)(rnd(s) % 64);
      for (k = 0; k < m->u.group.n; k++) workers[k] = (uint32_t)rnd(s);
      break;
    case PROTO_READY:
      m->u.ready.group = rnd(s);
      m->u.ready.tag = (int64_t)rnd(s);
      m->u.ready.member = (uint32_t)rnd(s);
      m->u.ready.root = (uint32_t)rnd(s);
      m->u.ready.count = rnd(s);
      m->u.ready.type_size = (uint32_t)rnd(s);
      m->u.ready.extent = (uint32_t)rnd(s);
      m->u.ready.op = (int32_t)rnd(s);
      m->u.ready.op_is_user = rnd(s) & 1;
      m->u.ready.commutative = rnd(s) & 1;
      m->u.ready.recovered = rnd(s) & 1;
      m->u.ready.nreplicas = (uint8_t)(rnd(s) % (PROTO_MAX_REPLICAS + 1));
      for (k = 0; k < m->u.ready.nreplicas; k++) m->u.ready.replicas[k] = (uint32_t)rnd(s);
      m->u.ready.buf.addr = rnd(s);
      m->u.ready.buf.pool_off = (int64_t)rnd(s);
      m->u.ready.snap = rnd(s) & 1; /* absorption (proto 8): unit only when recovered, */
      if (m->u.ready.recovered) m->u.ready.unit = rnd(s) & 1; /* absorbed only with unit */
      if (m->u.ready.unit) m->u.ready.absorbed = rnd(s) & 1;
      m->u.ready.meet_mask = rnd(s) & 1 ? rnd(s) : 0; /* members met in shared memory */
      m->u.ready.kind = (uint8_t)(rnd(s) % PROTO_KINDS);
      if (m->u.ready.kind == PROTO_KIND_BCAST) m->u.ready.have = rnd(s) & 1; /* proto 10 */
      if (rnd(s) & 1) { /* an inline operand (or the root's inline READY: none) */
        m->u.ready.inl = 1;
        m->u.ready.data_len = (uint32_t)(rnd(s) % 3 == 0 ? 0 : rnd(s) % 1025);
        for (k = 0; k < m->u.ready.data_len; k++) g_data[k] = (uint8_t)rnd(s);
        m->u.ready.data = m->u.ready.data_len > 0 ? g_data : NULL;
      }
      break;
    case PROTO_INLINE: /* totals below 64 KiB: the damage below rewrites 2 length bytes */
      m->u.inl.group = rnd(s);
      m->u.inl.tag = (int64_t)rnd(s);
      m->u.inl.n = 1 + (uint32_t)(rnd(s) % 64);
      m->u.inl.root = (uint32_t)(rnd(s) % m->u.inl.n);
      m->u.inl.bytes = rnd(s) % 5 == 0 ? 0 : rnd(s) % (60000 / m->u.inl.n + 1);
      for (k = 0; k < m->u.inl.n * m->u.inl.bytes; k++) g_data[k] = (uint8_t)rnd(s);
      m->u.inl.data = m->u.inl.bytes > 0 ? g_data : NULL;
      break;
    case PROTO_DONE:
      m->u.done.task_id = rnd(s);
      m->u.done.status = (uint32_t)rnd(s);
      m->u.done.error = (int32_t)rnd(s);
      m->u.done.exec_ns = rnd(s);
      m->u.done.buf.addr = rnd(s);
      m->u.done.buf.pool_off = (int64_t)rnd(s);
      m->u.done.absorbed = rnd(s) & 1;
      break;
    case PROTO_PING:
      m->u.ping.seq = rnd(s);
      break;
    case PROTO_PONG: /* with the pool's use (proto 6) */
      m->u.ping.seq = rnd(s);
      m->u.ping.pool_used = rnd(s);
      m->u.ping.pool_size = rnd(s);
      m->u.ping.pool_peak = rnd(s);
      m->u.ping.pool_fallbacks = rnd(s);
      m->u.ping.meet_done = rnd(s);
      break;
    case PROTO_BYE: /* with the count of reductions met in shared memory */
      m->u.ping.meet_done = rnd(s);
      break;
    case PROTO_RECOVER:
    case PROTO_RECOVER_FAILED:
      m->u.recover.group = rnd(s);
      m->u.recover.tag = (int64_t)rnd(s);
      m->u.recover.member = (uint32_t)rnd(s);
      m->u.recover.error = (int32_t)rnd(s);
      if (t == PROTO_RECOVER) { /* RECOVER only (proto 8); none is PROTO_NO_MEMBER */
        m->u.recover.last = rnd(s) % 3 == 0 ? PROTO_NO_MEMBER : (uint32_t)rnd(s);
        m->u.recover.tentative = rnd(s) % 3 == 0 ? PROTO_NO_MEMBER : (uint32_t)rnd(s);
        m->u.recover.single = rnd(s) & 1;
      }
      break;
    case PROTO_TASK:
      m->u.task.task_id = rnd(s);
      m->u.task.group = rnd(s);
      m->u.task.tag = (int64_t)rnd(s);
      m->u.task.provider = (uint32_t)rnd(s);
      m->u.task.prov_member = (uint32_t)rnd(s);
      m->u.task.exec_member = (uint32_t)rnd(s);
      m->u.task.count = rnd(s);
      m->u.task.exec_is_left = rnd(s) & 1;
      m->u.task.buf.addr = rnd(s);
      m->u.task.buf.pool_off = (int64_t)rnd(s);
      m->u.task.absorb = rnd(s) & 1;
      break;
    case PROTO_END:
      m->u.end.group = rnd(s);
      m->u.end.tag = (int64_t)rnd(s);
      m->u.end.status = (int32_t)rnd(s);
      break;
    case PROTO_FAILED:
      m->u.failed.worker = (uint32_t)rnd(s);
      break;
    case PROTO_SERVE:
      m->u.serve.task_id = rnd(s);
      m->u.serve.on = rnd(s) & 1;
      break;
    case PROTO_REPLICA:
    case PROTO_REPLICA_ACK:
      m->u.replica.group = rnd(s);
      m->u.replica.tag = (int64_t)rnd(s);
      m->u.replica.member = (uint32_t)rnd(s);
      m->u.replica.len = rnd(s);
      m->u.replica.pool_off = (int64_t)rnd(s);
      if (t == PROTO_REPLICA) {
        proto_params_t *q = &m->u.replica.params;
        q->count = rnd(s);
        q->type_size = (uint32_t)rnd(s);
        q->extent = (uint32_t)rnd(s);
        q->type_sig = (uint32_t)rnd(s);
        q->root = (uint32_t)rnd(s);
        q->op = (int32_t)rnd(s);
        q->op_is_user = (uint8_t)rnd(s);
        q->commutative = (uint8_t)rnd(s);
        q->inl = (uint8_t)rnd(s);
        q->kind = (uint8_t)(rnd(s) % PROTO_KINDS);
      }
      break;
    default:
      break;
  }
}

/* Structured random messages of every type: each encodes, decodes to the same fields
 * (checked through a byte-exact re-encode) and the decoded message re-encodes to the same
 * bytes.  Then each encoding is damaged (a byte changed, the tail cut or extended): the
 * decoder may refuse it, but whatever it accepts must again re-encode byte for byte.  The
 * counts at the end make sure the damaged inputs really reached the payload checks
 * (random bytes alone almost never pass the header's length field). */
static void test_fuzz_roundtrip(void **state) {
  static const proto_type_t types[] = {
      PROTO_GROUP, PROTO_READY, PROTO_DONE, PROTO_PONG, PROTO_BYE, PROTO_RECOVER_FAILED,
      PROTO_REPLICA, PROTO_REPLICA_ACK, PROTO_TASK, PROTO_END, PROTO_PING, PROTO_FAILED,
      PROTO_RECOVER, PROTO_SHUTDOWN, PROTO_ABANDON, PROTO_SERVE, PROTO_INLINE};
  static uint8_t buf[PROTO_MAX_SIZE + 8], again[PROTO_MAX_SIZE], bad[PROTO_MAX_SIZE + 8];
  static uint32_t workers[64];
  uint64_t s = 0x9e3779b97f4a7c15ull;
  unsigned i, accepted_damaged = 0, refused_damaged = 0;
  proto_msg_t m, d;
  size_t n, pos;
  int r;
  (void)state;
  for (i = 0; i < 200000; i++) {
    random_msg(&s, types[i % (sizeof types / sizeof types[0])], &m, workers);
    n = proto_encode(&m, workers, buf, sizeof buf);
    assert_true(n >= PROTO_HEADER);
    assert_int_equal(proto_decode(buf, n, &d), 0);
    assert_int_equal(d.type, m.type);
    assert_int_equal(proto_rt_check(buf, n, again), 1);
    if (m.type == PROTO_GROUP) {
      uint32_t k;
      assert_int_equal(d.u.group.n, m.u.group.n);
      for (k = 0; k < m.u.group.n; k++) assert_int_equal(proto_group_worker(&d, k), workers[k]);
    }

    memcpy(bad, buf, n);
    switch (rnd(&s) % 3) {
      case 0: /* one byte changed, anywhere (header included) */
        pos = (size_t)(rnd(&s) % n);
        bad[pos] = (uint8_t)(bad[pos] ^ (1u + rnd(&s) % 255u));
        break;
      case 1: /* cut short, with a length field that agrees */
        if (n > PROTO_HEADER) n -= 1 + (size_t)(rnd(&s) % (n - PROTO_HEADER));
        bad[4] = (uint8_t)(n - PROTO_HEADER), bad[5] = (uint8_t)((n - PROTO_HEADER) >> 8);
        bad[6] = bad[7] = 0;
        break;
      default: /* extra bytes, with a length field that agrees */
        pos = 1 + (size_t)(rnd(&s) % 8);
        for (; pos > 0; pos--) bad[n++] = (uint8_t)rnd(&s);
        bad[4] = (uint8_t)(n - PROTO_HEADER), bad[5] = (uint8_t)((n - PROTO_HEADER) >> 8);
        bad[6] = bad[7] = 0;
        break;
    }
    r = proto_rt_check(bad, n, again);
    assert_int_not_equal(r, 0); /* accepted but not canonical */
    if (r == 1) accepted_damaged++;
    else refused_damaged++;
  }
  /* Changed field bytes are mostly accepted (any u64 is valid), wrong lengths refused. */
  assert_true(accepted_damaged > 10000);
  assert_true(refused_damaged > 10000);
}


/* Inline operands: a READY carries its operand, INLINE every member's; both round-trip
 * byte for byte, and the decoder refuses what no dred process sends: data without the
 * inline flag, an operand or a total beyond PROTO_INLINE_TOTAL, a root out of range, a
 * payload whose length disagrees with n x bytes. */
static void test_inline_roundtrip_and_limits(void **state) {
  static uint8_t buf[PROTO_MAX_SIZE + 64], ops[PROTO_INLINE_TOTAL];
  proto_msg_t m, d;
  size_t n, i;
  (void)state;
  for (i = 0; i < sizeof ops; i++) ops[i] = (uint8_t)(i * 7 + 1);
  memset(&m, 0, sizeof m);
  m.type = PROTO_READY;
  m.u.ready.count = 3;
  m.u.ready.extent = 8;
  m.u.ready.inl = 1;
  m.u.ready.data_len = 24;
  m.u.ready.data = ops;
  n = enc(&m, NULL, buf);
  assert_true(n > PROTO_HEADER);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.ready.inl, 1);
  assert_int_equal(d.u.ready.data_len, 24);
  assert_memory_equal(d.u.ready.data, ops, 24);
  m.u.ready.inl = 0; /* data without the flag */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.ready.inl = 1;
  m.u.ready.data_len = PROTO_INLINE_TOTAL + 1;
  assert_int_equal(enc(&m, NULL, buf), 0);

  memset(&m, 0, sizeof m);
  m.type = PROTO_INLINE;
  m.u.inl.group = 9;
  m.u.inl.tag = -3;
  m.u.inl.n = 4;
  m.u.inl.root = 2;
  m.u.inl.bytes = PROTO_INLINE_TOTAL / 4; /* the largest total */
  m.u.inl.data = ops;
  n = enc(&m, NULL, buf);
  assert_int_equal(n, PROTO_MAX_INLINE_SIZE);
  assert_true(n <= PROTO_MAX_SIZE);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.inl.n, 4);
  assert_int_equal(d.u.inl.root, 2);
  assert_true(d.u.inl.tag == -3);
  assert_int_equal(d.u.inl.bytes, PROTO_INLINE_TOTAL / 4);
  assert_memory_equal(d.u.inl.data, ops, PROTO_INLINE_TOTAL);
  assert_int_equal(proto_decode(buf, n - 1, &d), DRED_ERR_ARG); /* short */
  m.u.inl.bytes++; /* total beyond the limit */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.inl.bytes = 8;
  m.u.inl.root = 4; /* root out of range */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.inl.root = 0;
  n = enc(&m, NULL, buf);
  assert_int_equal(n, PROTO_HEADER + PROTO_INLINE_FIXED + 32);
  buf[PROTO_HEADER + 20] = 5; /* the header says root 5 of 4 */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[PROTO_HEADER + 20] = 0;
  buf[PROTO_HEADER + 24] = 9; /* 4 x 9 bytes announced, 4 x 8 present */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[PROTO_HEADER + 24] = 8;
  buf[PROTO_HEADER + 32] = 1; /* the reserved word */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  buf[PROTO_HEADER + 32] = 0;
  assert_int_equal(proto_decode(buf, n, &d), 0);
}

/* JOIN and WELCOME: the start-up with a master outside the MPI job (common/mpi/boot.h).
 * A stage beyond 1, a string without its NUL or longer than its field, a frame cut short
 * are refused. */
static void test_join_welcome(void **state) {
  static uint8_t buf[1024];
  char longid[PROTO_JOB_ID_MAX + 1];
  proto_msg_t m, d;
  size_t n;
  (void)state;
  memset(&m, 0, sizeof m);
  m.type = PROTO_JOIN;
  m.u.join.stage = 1;
  m.u.join.node = 4;
  m.u.join.master_node = 1;
  n = enc(&m, NULL, buf);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.join.stage, 1);
  assert_int_equal(d.u.join.node, 4);
  assert_int_equal(d.u.join.master_node, 1);
  buf[PROTO_HEADER] = 2; /* stage 2 */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  m.u.join.stage = 2;
  assert_int_equal(enc(&m, NULL, buf), 0);

  memset(&m, 0, sizeof m);
  m.type = PROTO_WELCOME;
  m.u.welcome.status = DRED_ERR_ARG;
  m.u.welcome.heartbeat_ms = 250;
  m.u.welcome.job_id = "1795-42-cafe";
  m.u.welcome.reason = "DRED_POLICY: unknown policy 'fast'";
  n = enc(&m, NULL, buf);
  assert_int_equal(n, PROTO_HEADER + 8 + PROTO_JOB_ID_MAX + PROTO_REASON_MAX);
  assert_int_equal(proto_decode(buf, n, &d), 0);
  assert_int_equal(d.u.welcome.status, DRED_ERR_ARG);
  assert_int_equal(d.u.welcome.heartbeat_ms, 250);
  assert_string_equal(d.u.welcome.job_id, "1795-42-cafe");
  assert_string_equal(d.u.welcome.reason, "DRED_POLICY: unknown policy 'fast'");
  assert_string_equal(proto_type_name(PROTO_WELCOME), "WELCOME");
  assert_int_equal(proto_decode(buf, n - 1, &d), DRED_ERR_ARG); /* short */
  memset(buf + PROTO_HEADER + 8, 'x', PROTO_JOB_ID_MAX);         /* job id without its NUL */
  assert_int_equal(proto_decode(buf, n, &d), DRED_ERR_ARG);
  memset(longid, 'y', PROTO_JOB_ID_MAX);
  longid[PROTO_JOB_ID_MAX] = '\0';
  m.u.welcome.job_id = longid; /* does not fit its field */
  assert_int_equal(enc(&m, NULL, buf), 0);
  m.u.welcome.job_id = NULL;
  assert_int_equal(enc(&m, NULL, buf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ready_roundtrip), cmocka_unit_test(test_ready_error_field),
      cmocka_unit_test(test_abandon_roundtrip), cmocka_unit_test(test_replica_params), cmocka_unit_test(test_every_type_roundtrips),
      cmocka_unit_test(test_group_roundtrip_and_id), cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_fuzz_roundtrip), cmocka_unit_test(test_inline_roundtrip_and_limits),
      cmocka_unit_test(test_join_welcome), cmocka_unit_test(test_absorb_fields_roundtrip),
      cmocka_unit_test(test_absorb_fields_rejected), cmocka_unit_test(test_ready_have),
      cmocka_unit_test(test_ready_follow_and_have),
      cmocka_unit_test(test_ready_cover),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
