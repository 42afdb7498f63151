/*
 * test_sched_checks.c -- what the scheduler refuses: members of one instance that disagree
 * on the call (count, type size, extent, type signature, op, root, commutativity, user op)
 * end it with DRED_ERR_MISMATCH, and malformed or out-of-place events are rejected without
 * changing any state (master/sched/sched.c).
 *
 * Events and expected actions are built by tests/unit/sched_harness.h.
 */
#include "sched_harness.h"

/* ---- disagreement ------------------------------------------------------------------- */

static void mut_count(proto_msg_t *p) { p->u.ready.count++; }
static void mut_type_size(proto_msg_t *p) { p->u.ready.type_size = 8; }
static void mut_extent(proto_msg_t *p) { p->u.ready.extent = 8; }
/* same sizes, another type signature (MPI_INT against MPI_FLOAT; lib/engine/typecheck.c) */
static void mut_type_sig(proto_msg_t *p) { p->u.ready.type_sig ^= 0x5a5a5a5au; }
static void mut_op(proto_msg_t *p) { p->u.ready.op = 4; }
static void mut_root(proto_msg_t *p) { p->u.ready.root = 1; }
static void mut_commutative(proto_msg_t *p) { p->u.ready.commutative = 0; }
static void mut_op_is_user(proto_msg_t *p) { p->u.ready.op_is_user = 1; }

/* Member 2 disagrees while task 1 is in flight: nothing more is dispatched, the ENDs wait
 * for task 1, member 3 arriving afterwards is told at once, then the instance goes. */
static void mismatch_case(void (*mutate)(proto_msg_t *)) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(1, 0);
  proto_msg_t good = prm(0, 1), bad = prm(0, 1);
  mutate(&bad);
  group_seq(s, 1, 4);
  assert_int_equal(ready(s, k, 0, 1, good), 0);
  assert_int_equal(ready(s, k, 1, 2, good), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(ready(s, k, 2, 3, bad), 0);
  assert_int_equal(drain(s), 0); /* task 1 still in flight */
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 4);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  is_end(&A[1], 1, DRED_ERR_MISMATCH);
  is_end(&A[2], 2, DRED_ERR_MISMATCH);
  is_end(&A[3], 3, DRED_ERR_MISMATCH);
  assert_int_equal(sched_instances(s), 1);
  assert_int_equal(ready(s, k, 3, 4, good), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 4, DRED_ERR_MISMATCH);
  is_jred(&A[1], 4, 1, 0, DRED_ERR_MISMATCH);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

static void test_mismatch_count(void **state) { mismatch_case(mut_count); }
static void test_mismatch_type_size(void **state) { mismatch_case(mut_type_size); }
static void test_mismatch_extent(void **state) { mismatch_case(mut_extent); }
static void test_mismatch_type_sig(void **state) { mismatch_case(mut_type_sig); }
static void test_mismatch_predefined_op(void **state) { mismatch_case(mut_op); }
static void test_mismatch_root(void **state) { mismatch_case(mut_root); }
static void test_mismatch_commutative(void **state) { mismatch_case(mut_commutative); }
static void test_mismatch_op_is_user(void **state) { mismatch_case(mut_op_is_user); }

/* A root out of range in the first READY is a disagreement too, told at once. */
static void test_mismatch_root_out_of_range(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(1, 0);
  group_seq(s, 1, 3);
  assert_int_equal(ready(s, k, 1, 2, prm(3, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 2, DRED_ERR_MISMATCH);
  assert_int_equal(ready(s, k, 0, 1, prm(3, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 1, DRED_ERR_MISMATCH);
  assert_int_equal(ready(s, k, 1, 2, prm(3, 1)), DRED_ERR_ARG); /* still a duplicate */
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 3, DRED_ERR_MISMATCH);
  is_jred(&A[1], 3, 0, 0, DRED_ERR_MISMATCH);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* User ops: the handles differ from process to process, only commutativity compares. */
static void test_user_ops_compare_commutativity_only(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  proto_msg_t p = prm(0, 1);
  uint32_t k;
  group_seq(s, 1, 3);
  p.u.ready.op_is_user = 1;
  for (k = 0; k < 3; k++) {
    p.u.ready.op = 100 + (int32_t)k;
    assert_int_equal(ready(s, K(1, 0), k, k + 1, p), 0);
  }
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 2, 1, 3, 0, 2);
  assert_int_equal(ok(s, 2, 1), 0);
  assert_int_equal(drain(s), 5);
  is_jred(&A[4], 3, 2, 0, DRED_OK);

  /* a user op that is commutative on one member and not on another: mismatch */
  p.u.ready.op = 7;
  assert_int_equal(ready(s, K(1, 1), 0, 1, p), 0);
  p.u.ready.commutative = 0;
  assert_int_equal(ready(s, K(1, 1), 1, 2, p), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 1, DRED_ERR_MISMATCH);
  is_end(&A[1], 2, DRED_ERR_MISMATCH);
  sched_free(s);
}

/* ---- bad events ---------------------------------------------------------------------- */

static void assert_unchanged(sched_t *s, size_t insts, size_t qlen, size_t tasks) {
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_instances(s), insts);
  assert_int_equal(sched_queue_len(s, K(50, 0)), qlen);
  assert_int_equal(sched_tasks_in_flight(s), tasks);
}

static void test_bad_events_rejected(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(50, 0);
  uint32_t g[3] = {1, 2, 3}, other[3] = {1, 3, 2}, out[2] = {1, 5}, zero[2] = {0, 1},
           twice[2] = {2, 2}, g51[2] = {4, 1}, many[PROTO_MAX_REPLICAS + 1] = {2, 3, 4, 2, 3};
  sched_event_t ev;

  group(s, 50, 3, g);
  assert_int_equal(sched_group_define(s, 50, 3, g), 0);
  assert_int_equal(sched_group_define(s, 50, 3, other), DRED_ERR_ARG);
  assert_int_equal(sched_group_define(s, 50, 2, g), DRED_ERR_ARG);
  assert_int_equal(sched_group_define(s, 60, 2, out), DRED_ERR_ARG);
  assert_int_equal(sched_group_define(s, 61, 2, zero), DRED_ERR_ARG);
  assert_int_equal(sched_group_define(s, 62, 2, twice), DRED_ERR_ARG);
  assert_int_equal(sched_group_define(s, 63, 0, g), DRED_ERR_ARG);
  group(s, 51, 2, g51);

  assert_int_equal(ready(s, K(99, 0), 0, 1, prm(0, 1)), DRED_ERR_ARG); /* unknown group */
  assert_int_equal(ready(s, K(60, 0), 0, 1, prm(0, 1)), DRED_ERR_ARG); /* refused group */
  assert_int_equal(ready(s, k, 3, 1, prm(0, 1)), DRED_ERR_ARG);        /* member >= n   */
  assert_int_equal(ready(s, k, 0, 2, prm(0, 1)), DRED_ERR_ARG);        /* wrong worker  */
  assert_int_equal(ready(s, k, 0, 9, prm(0, 1)), DRED_ERR_ARG);        /* no such worker */
  assert_int_equal(ready_full(s, k, 0, 1, prm(0, 1), 0, PROTO_MAX_REPLICAS + 1, many),
                   DRED_ERR_ARG);
  assert_unchanged(s, 0, 0, 0);

  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_unchanged(s, 1, 1, 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), DRED_ERR_ARG); /* duplicate member */
  assert_int_equal(ready(s, k, 0, 1, prm(1, 1)), DRED_ERR_ARG); /* not even a mismatch */
  assert_unchanged(s, 1, 1, 0);

  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(ok(s, 99, 1), DRED_ERR_ARG);                        /* unknown task  */
  assert_int_equal(ok(s, 1, 2), DRED_ERR_ARG);                         /* the provider  */
  assert_int_equal(done(s, 1, 1, 42, 1, 1), DRED_ERR_ARG);
  assert_unchanged(s, 1, 0, 1);

  assert_int_equal(rec_ready(s, k, 2, 3, prm(0, 1)), DRED_ERR_ARG);   /* never asked   */
  assert_int_equal(rec_ready(s, K(51, 0), 0, 4, prm(0, 1)), DRED_ERR_ARG); /* no instance */
  assert_int_equal(rec_ready(s, k, 1, 3, prm(0, 1)), 0);              /* covered: ignored */
  /* no such instance: it ended meanwhile; a late answer, ignored (nothing changes) */
  assert_int_equal(recfail(s, K(77, 0), 0, 1, DRED_ERR_STORAGE), 0);
  assert_int_equal(recfail(s, k, 2, 3, DRED_ERR_STORAGE), DRED_ERR_ARG);
  assert_int_equal(recfail(s, k, 7, 3, DRED_ERR_STORAGE), DRED_ERR_ARG);
  assert_unchanged(s, 1, 0, 1);

  /* failures of unknown or dead workers are no-ops; a dead worker's READY is refused */
  assert_int_equal(wfail(s, 4), 0);
  assert_unchanged(s, 1, 0, 1);
  assert_int_equal(sched_worker_alive(s, 4), 0);
  assert_int_equal(wfail(s, 4), 0);
  assert_int_equal(wfail(s, 0), 0);
  assert_int_equal(wfail(s, 99), 0);
  assert_int_equal(sched_workers_failed(s), 1); /* the master's count of the dead */
  assert_int_equal(ready(s, K(51, 0), 0, 4, prm(0, 1)), DRED_ERR_ARG);
  assert_unchanged(s, 1, 0, 1);

  memset(&ev, 0, sizeof ev);
  ev.type = (sched_ev_type_t)77;
  assert_int_equal(sched_feed(s, &ev), DRED_ERR_ARG);
  ev.type = SCHED_EV_MESSAGE; /* a message the scheduler does not take */
  ev.msg.type = PROTO_PING;
  assert_int_equal(sched_feed(s, &ev), DRED_ERR_ARG);
  assert_int_equal(sched_feed(s, NULL), DRED_ERR_ARG);
  assert_unchanged(s, 1, 0, 1);

  /* and the instance still works */
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 2, 1, 3, 0, 2);
  sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mismatch_count),
      cmocka_unit_test(test_mismatch_type_size),
      cmocka_unit_test(test_mismatch_extent),
      cmocka_unit_test(test_mismatch_type_sig),
      cmocka_unit_test(test_mismatch_predefined_op),
      cmocka_unit_test(test_mismatch_root),
      cmocka_unit_test(test_mismatch_commutative),
      cmocka_unit_test(test_mismatch_op_is_user),
      cmocka_unit_test(test_mismatch_root_out_of_range),
      cmocka_unit_test(test_user_ops_compare_commutativity_only),
      cmocka_unit_test(test_bad_events_rejected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
