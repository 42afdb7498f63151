/*
 * test_proto.c -- control-message encoding: every type round-trips, and malformed input
 * (bad magic, version, type, truncation, padding, out-of-range fields) is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/proto.h"
#include "../../worker/dred_status.h"

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
    n = enc(&m, NULL, buf);
    assert_true(n >= PROTO_HEADER);
    assert_int_equal(proto_decode(buf, n, &d), 0);
    assert_int_equal(d.type, m.type);
    if (m.type == PROTO_TASK) {
      assert_int_equal(d.u.task.exec_is_left, 1);
      assert_true(d.u.task.buf.pool_off == 4096);
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

static void test_fuzz_never_crashes(void **state) {
  uint8_t buf[64];
  proto_msg_t d;
  unsigned i, j, seed = 12345;
  (void)state;
  for (i = 0; i < 100000; i++) {
    size_t len = 8 + (seed % 56);
    for (j = 0; j < len; j++) {
      seed = seed * 1103515245u + 12345u;
      buf[j] = (uint8_t)(seed >> 16);
    }
    buf[0] = 0x44, buf[1] = 0x52, buf[2] = 1; /* valid magic and version, random rest */
    (void)proto_decode(buf, len, &d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ready_roundtrip), cmocka_unit_test(test_every_type_roundtrips),
      cmocka_unit_test(test_group_roundtrip_and_id), cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_fuzz_never_crashes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
