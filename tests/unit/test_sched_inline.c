/*
 * test_sched_inline.c -- inline reductions in the scheduler (master/sched/sched.c): small
 * operands travel inside READY and the master hands them to the root in one INLINE
 * message, with no TASK; members dying before or after their READY, disagreement and
 * malformed sizes.
 *
 * Events and expected actions are built by tests/unit/sched_harness.h.
 */
#include "sched_harness.h"

/* ---- inline reductions (small operands inside READY) -------------------------------- */

static uint8_t g_op[8][400]; /* member k's operand: bytes k + 1 */

static proto_msg_t prm_inl(uint32_t root) {
  proto_msg_t p = prm(root, 0); /* non-commutative: the root folds in rank order anyway */
  p.u.ready.inl = 1;
  return p;
}

/* An inline READY: a non-root member sends its 400-byte operand, the root none; `len`
 * overrides the length (a hostile or broken peer), -1 keeps it right. */
static int ready_inl(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p,
                     long len) {
  proto_msg_t r = ready_msg(k, m, p);
  uint32_t i;
  for (i = 0; i < 8; i++) memset(g_op[i], (int)(i + 1), sizeof g_op[i]);
  r.u.ready.data_len = len >= 0 ? (uint32_t)len : m == p.u.ready.root ? 0 : 400;
  r.u.ready.data = r.u.ready.data_len > 0 ? g_op[m % 8] : NULL;
  return feed(s, w, &r);
}

/* The INLINE action of an n-member instance rooted at `root` (worker w): member k's slot
 * holds its own operand, the root's slot is zeros; member `missing` (or n) sent nothing. */
static void is_inline(sched_action_t *a, uint32_t w, uint32_t root, uint32_t n) {
  uint32_t k, i;
  assert_true(is_send(a, PROTO_INLINE));
  assert_int_equal(a->worker, w);
  assert_int_equal(a->msg.u.inl.root, root);
  assert_int_equal(a->msg.u.inl.n, n);
  assert_int_equal(a->msg.u.inl.bytes, 400);
  assert_non_null(a->msg.u.inl.data);
  assert_ptr_equal(a->msg.u.inl.data, a->owned); /* the taker frees what it sends */
  same_key(a, a->msg.u.inl.group, a->msg.u.inl.tag);
  for (k = 0; k < n; k++)
    for (i = 0; i < 400; i++)
      assert_int_equal(a->msg.u.inl.data[k * 400 + i], k == root ? 0 : k + 1);
  free(a->owned);
  a->owned = NULL;
  a->msg.u.inl.data = NULL;
}

/* Every member arrives (root in the middle, any order): nothing happens before the last;
 * then one INLINE to the root with every operand in member order, END OK to all, the
 * journal record with no task.  No TASK at any point. */
static void test_inline_completes(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_PREDICT);
  sched_key_t k = K(1, 5);
  proto_msg_t p = prm_inl(2);
  (void)state;
  group_seq(s, 1, 4);
  assert_int_equal(ready_inl(s, k, 3, 4, p, -1), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready_inl(s, k, 2, 3, p, -1), 0); /* the root: no data */
  assert_int_equal(ready_inl(s, k, 0, 1, p, -1), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_queue_len(s, k), 0); /* no messages to pair */
  assert_int_equal(ready_inl(s, k, 1, 2, p, -1), 0);
  assert_int_equal(drain(s), 6);
  is_inline(&A[0], 3, 2, 4);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 2, DRED_OK);
  is_end(&A[3], 3, DRED_OK);
  is_end(&A[4], 4, DRED_OK);
  is_jred(&A[5], 4, 0, 0, DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  /* the tag is free again, and a group of one completes at once */
  group_seq(s, 2, 1);
  assert_int_equal(ready_inl(s, K(2, 0), 0, 1, prm_inl(0), -1), 0);
  assert_int_equal(drain(s), 3);
  assert_true(is_send(&A[0], PROTO_INLINE));
  assert_int_equal(A[0].msg.u.inl.n, 1);
  free(A[0].owned);
  is_end(&A[1], 1, DRED_OK);
  sched_free(s);
}

/* A mixed meeting slot (lib/paths/meetpath.c): members 0 and 1 met in shared memory, member
 * 2 (a larger count, so not inline) came to the master naming them in its READY.  The
 * instance fails with MISMATCH; the named members are counted as told (they learned it in
 * their slot, no END for them); member 3, arriving later through the master as the slot
 * tells it to, is told at once, and then the instance is journaled and gone. */
static void test_meet_mask_mixed(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_PREDICT);
  sched_key_t k = K(1, 9);
  proto_msg_t big = prm(0, 1), p = prm_inl(0);
  (void)state;
  group_seq(s, 1, 4);
  big.u.ready.count = 100000;
  big.u.ready.meet_mask = 3; /* members 0 and 1 */
  assert_int_equal(ready(s, k, 2, 3, big), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 3, DRED_ERR_MISMATCH);
  assert_int_equal(sched_instances(s), 1); /* member 3 is still owed an END */
  assert_int_equal(ready_inl(s, k, 3, 4, p, -1), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 4, DRED_ERR_MISMATCH);
  assert_int_equal(A[1].type, SCHED_ACT_JOURNAL_REDUCTION); /* bytes: the first READY's */
  assert_int_equal(A[1].u.jred.status, DRED_ERR_MISMATCH);
  assert_int_equal(sched_instances(s), 0);
  /* a mask naming the sender itself or members beyond the group changes nothing more */
  big.u.ready.meet_mask = (1ull << 2) | (1ull << 40);
  assert_int_equal(ready(s, K(1, 10), 2, 3, big), 0);
  assert_int_equal(drain(s), 1); /* told MISMATCH at once; the others when they come */
  is_end(&A[0], 3, DRED_ERR_MISMATCH);
  assert_int_equal(sched_instances(s), 1);
  sched_free(s);
}

/* A member dies before its READY: there is no replica of an inline operand, so the
 * instance fails at once with PROC_FAILED (no RECOVER is sent); arrived members are told,
 * a later arrival is told at once. */
static void test_inline_member_dies_before_ready(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_PREDICT);
  sched_key_t k = K(1, 1);
  proto_msg_t p = prm_inl(0);
  (void)state;
  group_seq(s, 1, 4);
  assert_int_equal(ready_inl(s, k, 0, 1, p, -1), 0);
  assert_int_equal(ready_inl(s, k, 2, 3, p, -1), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 1, DRED_ERR_PROC_FAILED);
  is_end(&A[1], 3, DRED_ERR_PROC_FAILED);
  assert_int_equal(ready_inl(s, k, 3, 4, p, -1), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 4, DRED_ERR_PROC_FAILED);
  assert_int_equal(A[1].type, SCHED_ACT_JOURNAL_REDUCTION);
  assert_int_equal(A[1].u.jred.status, DRED_ERR_PROC_FAILED);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* A member dies after its READY: the master holds its operand, so nothing is lost: the
 * root still gets it, the survivors get OK, the dead member no END.  The root dying fails
 * the instance with ROOT_FAILED. */
static void test_inline_member_dies_after_ready(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_PREDICT);
  sched_key_t k = K(1, 2);
  proto_msg_t p = prm_inl(0);
  (void)state;
  group_seq(s, 1, 4);
  assert_int_equal(ready_inl(s, k, 1, 2, p, -1), 0);
  assert_int_equal(ready_inl(s, k, 0, 1, p, -1), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready_inl(s, k, 3, 4, p, -1), 0);
  assert_int_equal(ready_inl(s, k, 2, 3, p, -1), 0);
  assert_int_equal(drain(s), 5);
  is_inline(&A[0], 1, 0, 4); /* member 1's operand is there */
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 3, DRED_OK);
  is_end(&A[3], 4, DRED_OK);
  is_jred(&A[4], 4, 0, 0, DRED_OK);

  sched_free(s);

  /* the root dies: ROOT_FAILED to the members that arrived (a new job: one started after
   * a death fails at once) */
  s = sched_new(4, SCHED_POLICY_PREDICT);
  group_seq(s, 1, 4);
  assert_int_equal(ready_inl(s, K(1, 3), 0, 1, p, -1), 0);
  assert_int_equal(ready_inl(s, K(1, 3), 3, 4, p, -1), 0);
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 4, DRED_ERR_ROOT_FAILED);
  assert_int_equal(ready_inl(s, K(1, 3), 2, 3, p, -1), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 3, DRED_ERR_ROOT_FAILED);
  assert_int_equal(ready_inl(s, K(1, 3), 1, 2, p, -1), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 2, DRED_ERR_ROOT_FAILED);
  assert_int_equal(A[1].type, SCHED_ACT_JOURNAL_REDUCTION);
  sched_free(s);
}

/* Inline and ordinary READYs for one instance, in either order, and inline READYs that
 * disagree on a parameter, all end it with MISMATCH for every member: never an INLINE,
 * never a TASK. */
static void test_inline_mismatch(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_PREDICT);
  proto_msg_t p = prm_inl(0), q = prm(0, 0), r = prm_inl(0);
  size_t i;
  (void)state;
  group_seq(s, 1, 3);
  r.u.ready.count = 50;
  /* inline first, then ordinary */
  assert_int_equal(ready_inl(s, K(1, 0), 0, 1, p, -1), 0);
  assert_int_equal(ready(s, K(1, 0), 1, 2, q), 0);
  assert_int_equal(ready_inl(s, K(1, 0), 2, 3, p, -1), 0);
  /* ordinary first, then inline */
  assert_int_equal(ready(s, K(1, 1), 1, 2, q), 0);
  assert_int_equal(ready_inl(s, K(1, 1), 0, 1, p, -1), 0);
  assert_int_equal(ready(s, K(1, 1), 2, 3, q), 0);
  /* inline both, another count */
  assert_int_equal(ready_inl(s, K(1, 2), 0, 1, p, -1), 0);
  assert_int_equal(ready_inl(s, K(1, 2), 1, 2, r, 200), 0);
  assert_int_equal(ready_inl(s, K(1, 2), 2, 3, p, -1), 0);
  drain(s);
  for (i = 0; i < NA; i++) {
    assert_false(is_send(&A[i], PROTO_TASK));
    assert_false(is_send(&A[i], PROTO_INLINE));
    if (is_send(&A[i], PROTO_END)) assert_int_equal(A[i].msg.u.end.status, DRED_ERR_MISMATCH);
  }
  assert_int_equal(NA, 3 * 3 + 3); /* 3 ENDs and a journal record each */
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* Sizes a hostile or broken peer may send: an operand shorter or longer than count x
 * extent, data from the root, a length with no data, an instance too large to be inline
 * (n x bytes beyond PROTO_INLINE_TOTAL: refused before anything is allocated for it).
 * Each ends the instance with MISMATCH for everyone instead of leaving it waiting. */
static void test_inline_bad_sizes(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_PREDICT);
  proto_msg_t p = prm_inl(0), big = prm_inl(0), ev;
  int64_t t;
  (void)state;
  group_seq(s, 1, 3);
  big.u.ready.count = PROTO_INLINE_TOTAL; /* x 4 bytes x 3 members */
  for (t = 0; t < 5; t++) {
    sched_key_t k = K(1, t);
    size_t i, ends = 0;
    switch (t) {
      case 0: assert_int_equal(ready_inl(s, k, 1, 2, p, 399), 0); break; /* short */
      case 1: assert_int_equal(ready_inl(s, k, 1, 2, p, 401), 0); break; /* long  */
      case 2: assert_int_equal(ready_inl(s, k, 0, 1, p, 400), 0); break; /* from the root */
      case 3: /* a length but no bytes */
        ev = ready_msg(k, 1, p);
        ev.u.ready.buf.pool_off = 0; /* as before: all zeros but the length */
        ev.u.ready.data_len = 400;
        assert_int_equal(feed(s, 2, &ev), 0);
        break;
      default: assert_int_equal(ready_inl(s, k, 1, 2, big, 0), 0); break; /* too large */
    }
    /* the others arrive as they should */
    if (t != 2) assert_int_equal(ready_inl(s, k, 0, 1, t == 4 ? big : p, -1), 0);
    if (t == 2) assert_int_equal(ready_inl(s, k, 1, 2, p, -1), 0);
    assert_int_equal(ready_inl(s, k, 2, 3, t == 4 ? big : p, t == 4 ? 0 : -1), 0);
    drain(s);
    for (i = 0; i < NA; i++) {
      assert_false(is_send(&A[i], PROTO_INLINE));
      if (is_send(&A[i], PROTO_END)) {
        assert_int_equal(A[i].msg.u.end.status, DRED_ERR_MISMATCH);
        ends++;
      }
    }
    assert_int_equal(ends, 3);
  }
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inline_completes),
      cmocka_unit_test(test_meet_mask_mixed),
      cmocka_unit_test(test_inline_member_dies_before_ready),
      cmocka_unit_test(test_inline_member_dies_after_ready),
      cmocka_unit_test(test_inline_mismatch),
      cmocka_unit_test(test_inline_bad_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
