/*
 * test_sched_pairing.c -- the scheduler's pairing algorithm (master/sched/sched.c, seed 002
 * section 2): who executes which task in arrival order, the root always executing, the
 * PREDICT / LAST_TIME / FIRST policies, queue statistics, adjacency for non-commutative
 * ops, and how an instance completes (END to every member, the journal's records).
 *
 * Events and expected actions are built by tests/unit/sched_harness.h; worker w runs
 * member w-1 in most groups below, so "member k" and "worker k+1" are the same process.
 */
#include "sched_harness.h"

/* ---- the algorithm (seed 002, section 2) ------------------------------------------ */

/* Seed 002 figure 4: members 0..3, root 1, arrivals 0,3,1,2.  Worker 1 (member 0) is made
 * slow beforehand, so by the paper's "last task time" rule task 1 goes to member 3. */
static void test_fig4_arrival_order_pairing(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_LAST_TIME);
  uint32_t warm[2] = {1, 4};
  sched_key_t k = K(1, 7);
  proto_msg_t p = prm(1, 1);
  group(s, 100, 2, warm);
  group_seq(s, 1, 4);

  /* warm-up: worker 1 executes a task that takes 1000 ns */
  assert_int_equal(ready(s, K(100, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(100, 0), 1, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 4, 0, 1);
  assert_int_equal(done(s, 1, 1, PROTO_TASK_OK, 1000, 1), 0);
  assert_int_equal(drain(s), 4);

  assert_int_equal(ready(s, k, 0, 1, p), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 1); /* task 1: (0,3), to 3 by performance */
  is_task(&A[0], 2, 4, 1, 3, 0);
  assert_int_equal(A[0].msg.u.task.buf.addr, bufaddr(1, 0));
  assert_int_equal(A[0].msg.u.task.exec_is_left, 0);
  assert_int_equal(ready(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_queue_len(s, k), 1);
  assert_int_equal(ready(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 1); /* task 2: (1,2), to the root 1 */
  is_task(&A[0], 3, 2, 3, 1, 2);
  assert_int_equal(sched_tasks_in_flight(s), 2);

  assert_int_equal(done(s, 2, 4, PROTO_TASK_OK, 10, 4444), 0);
  assert_int_equal(drain(s), 1);
  is_jtask(&A[0], 2, PROTO_TASK_OK);
  assert_int_equal(done(s, 3, 2, PROTO_TASK_OK, 10, 2222), 0);
  assert_int_equal(drain(s), 2); /* task 3: (3's result, 1's result), to the root 1 */
  is_jtask(&A[0], 3, PROTO_TASK_OK);
  is_task(&A[1], 4, 2, 4, 1, 3);
  assert_int_equal(A[1].msg.u.task.buf.addr, 4444);

  assert_int_equal(ok(s, 4, 2), 0);
  assert_int_equal(drain(s), 6);
  is_jtask(&A[0], 4, PROTO_TASK_OK);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 2, DRED_OK);
  is_end(&A[3], 3, DRED_OK);
  is_end(&A[4], 4, DRED_OK);
  is_jred(&A[5], 4, 3, 0, DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  assert_int_equal(sched_tasks_in_flight(s), 0);
  sched_free(s);
}

/* The root's side executes whichever message came first and whatever the policy says. */
static void test_root_always_executes(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  group_seq(s, 1, 3);
  /* root arrives second: FIRST would pick member 0, the root rule overrides */
  assert_int_equal(ready(s, K(1, 0), 0, 1, prm(2, 1)), 0);
  assert_int_equal(ready(s, K(1, 0), 2, 3, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 3, 1, 2, 0);
  sched_free(s);

  /* PREDICT: the root is loaded with a task and arrives last, and still executes */
  s = sched_new(3, SCHED_POLICY_PREDICT);
  uint32_t x[2] = {1, 2}, y[2] = {1, 3};
  group(s, 10, 2, x);
  group(s, 11, 2, y);
  assert_int_equal(ready(s, K(10, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(10, 0), 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(ready(s, K(11, 0), 1, 3, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(11, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 1, 3, 0, 1);
  /* and the loaded root arriving first still executes, though PREDICT prefers idle 3 */
  assert_int_equal(ready(s, K(11, 1), 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(11, 1), 1, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 3, 1, 3, 0, 1);
  sched_free(s);
}

/* PREDICT: (queued bytes + bytes) / speed; less loaded wins with no measurement, faster
 * wins once measured, an unmeasured worker is assumed average, speed is an EWMA. */
static void test_predict_policy(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_PREDICT);
  uint32_t r[2] = {1, 4}, x[3] = {1, 2, 3}, y[3] = {1, 2, 4}, z[3] = {3, 1, 4};
  group(s, 10, 2, r);
  group(s, 11, 3, x);
  group(s, 12, 3, y);
  group(s, 13, 3, z);

  /* worker 1 gets a 400-byte task (it is the root of R) */
  assert_int_equal(ready(s, K(10, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(10, 0), 1, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 4, 0, 1);
  /* nobody measured: worker 1 has 400 queued bytes, worker 2 none -> worker 2, though later */
  assert_int_equal(ready(s, K(11, 0), 0, 1, prm(2, 1)), 0);
  assert_int_equal(ready(s, K(11, 0), 1, 2, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 2, 1, 1, 0);

  assert_true(sched_worker_speed(s, 1) == 0.0);
  assert_int_equal(done(s, 1, 1, PROTO_TASK_OK, 400, 1), 0); /* 1 byte/ns */
  assert_int_equal(done(s, 2, 2, PROTO_TASK_OK, 100, 2), 0); /* 4 bytes/ns */
  drain(s);
  assert_true(sched_worker_speed(s, 1) == 1.0);
  assert_true(sched_worker_speed(s, 2) == 4.0);

  /* both idle and measured: the faster worker 2 executes although it arrived second */
  assert_int_equal(ready(s, K(12, 0), 0, 1, prm(2, 1)), 0);
  assert_int_equal(ready(s, K(12, 0), 1, 2, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 3, 2, 1, 1, 0);

  /* worker 3 is unmeasured: assumed the mean speed 2.5 > worker 1's 1.0, so it executes */
  assert_int_equal(ready(s, K(13, 0), 1, 1, prm(2, 1)), 0);
  assert_int_equal(ready(s, K(13, 0), 0, 3, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 4, 3, 1, 0, 1);

  /* EWMA, alpha 0.5: 4.0 then a 1.0 sample -> 2.5 */
  assert_int_equal(done(s, 3, 2, PROTO_TASK_OK, 400, 3), 0);
  assert_true(sched_worker_speed(s, 2) == 2.5);
  assert_true(sched_worker_speed(s, 4) == 0.0);
  sched_free(s);

  /* a tie (both idle, neither measured) goes to the earlier message */
  s = sched_new(3, SCHED_POLICY_PREDICT);
  group_seq(s, 1, 3);
  assert_int_equal(ready(s, K(1, 0), 1, 2, prm(2, 1)), 0);
  assert_int_equal(ready(s, K(1, 0), 0, 1, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 2, 1, 1, 0);
  sched_free(s);
}

/* LAST_TIME: the worker whose last task was shorter; never ran = 0; tie -> earlier. */
static void test_last_time_policy(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_LAST_TIME);
  uint32_t w1[2] = {1, 3}, w2[2] = {2, 3}, g[3] = {1, 2, 4}, t[3] = {3, 4, 1};
  group(s, 20, 2, w1);
  group(s, 21, 2, w2);
  group(s, 22, 3, g);
  group(s, 23, 3, t);
  assert_int_equal(ready(s, K(20, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(20, 0), 1, 3, prm(0, 1)), 0);
  assert_int_equal(done(s, 1, 1, PROTO_TASK_OK, 500, 1), 0);
  assert_int_equal(ready(s, K(21, 0), 0, 2, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(21, 0), 1, 3, prm(0, 1)), 0);
  assert_int_equal(done(s, 2, 2, PROTO_TASK_OK, 100, 2), 0);
  drain(s);

  assert_int_equal(ready(s, K(22, 0), 0, 1, prm(2, 1)), 0); /* last 500 */
  assert_int_equal(ready(s, K(22, 0), 1, 2, prm(2, 1)), 0); /* last 100 */
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 3, 2, 1, 1, 0);

  /* workers 3 and 4 never executed: tie, the earlier message (worker 4) executes */
  assert_int_equal(ready(s, K(23, 0), 1, 4, prm(2, 1)), 0);
  assert_int_equal(ready(s, K(23, 0), 0, 3, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 4, 4, 3, 1, 0);
  sched_free(s);
}

/* FIRST: always the earlier message's holder, even a loaded one. */
static void test_first_policy(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  uint32_t l[2] = {1, 3};
  group(s, 1, 2, l);
  group_seq(s, 2, 3);
  assert_int_equal(ready(s, K(1, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(1, 0), 1, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1); /* worker 1 now has a task queued */
  assert_int_equal(ready(s, K(2, 0), 0, 1, prm(2, 1)), 0);
  assert_int_equal(ready(s, K(2, 0), 1, 2, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 1, 2, 0, 1);
  assert_int_equal(ready(s, K(2, 1), 1, 2, prm(2, 1)), 0);
  assert_int_equal(ready(s, K(2, 1), 0, 1, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 3, 2, 1, 1, 0);
  sched_free(s);
}

/* Non-commutative: only rank-adjacent intervals pair; exec_is_left tells the order. */
/* sched_queue_stats sums the queues of every instance (dredstat status shows it). */
static void test_queue_stats(void **state) {
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  proto_msg_t p = prm(2, 0);
  size_t longest = 99;
  (void)state;
  group_seq(s, 1, 5);
  assert_int_equal(sched_queue_stats(s, &longest), 0);
  assert_int_equal(longest, 0);
  /* non-commutative: non-adjacent members stay queued */
  assert_int_equal(ready(s, K(1, 0), 4, 5, p), 0);
  assert_int_equal(ready(s, K(1, 0), 0, 1, p), 0);
  assert_int_equal(ready(s, K(1, 0), 2, 3, p), 0);
  assert_int_equal(ready(s, K(1, 1), 0, 1, p), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_queue_stats(s, &longest), 4);
  assert_int_equal(longest, 3);
  assert_int_equal(sched_queue_stats(s, NULL), 4);
  sched_free(s);
}

static void test_noncommutative_adjacency(void **state) {
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  sched_key_t k = K(1, 0);
  proto_msg_t p = prm(2, 0);
  group_seq(s, 1, 5);

  assert_int_equal(ready(s, k, 4, 5, p), 0);
  assert_int_equal(ready(s, k, 0, 1, p), 0);
  assert_int_equal(ready(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 0); /* {4} {0} {2}: nothing adjacent */
  assert_int_equal(sched_queue_len(s, k), 3);

  assert_int_equal(ready(s, k, 1, 2, p), 0); /* {0}+{1} */
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(A[0].msg.u.task.exec_is_left, 1);

  assert_int_equal(ready(s, k, 3, 4, p), 0); /* {4} is earliest with a neighbour: {4}+{3} */
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 5, 4, 4, 3);
  assert_int_equal(A[0].msg.u.task.exec_is_left, 0);
  assert_int_equal(sched_queue_len(s, k), 1);

  assert_int_equal(ok(s, 1, 1), 0); /* [0,1] meets {2}: the root executes, on the right */
  assert_int_equal(drain(s), 2);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  is_task(&A[1], 3, 3, 1, 2, 0);
  assert_int_equal(A[1].msg.u.task.exec_is_left, 0);

  assert_int_equal(ok(s, 2, 5), 0); /* [3,4] alone in the queue */
  assert_int_equal(drain(s), 1);
  assert_int_equal(ok(s, 3, 3), 0); /* [3,4] + [0,2]: the root's side is on the left */
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 4, 3, 5, 2, 4);
  assert_int_equal(A[1].msg.u.task.exec_is_left, 1);

  assert_int_equal(ok(s, 4, 3), 0);
  assert_int_equal(drain(s), 7);
  is_jred(&A[6], 5, 4, 0, DRED_OK);
  sched_free(s);
}

/* Completion: END(OK) to every member in member order, then the reduction journal, with
 * the task journal carrying dispatch and done times. */
static void test_completion_end_and_journal(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(30, 5);
  group_seq(s, 30, 3);
  g_now = 10;
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  g_now = 20;
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 3, 2, 2, 1);
  assert_int_equal(A[0].key.group, 30);
  assert_int_equal(A[0].key.tag, 5);
  g_now = 30;
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(drain(s), 0);
  g_now = 45;
  assert_int_equal(done(s, 1, 3, PROTO_TASK_OK, 7, 333), 0);
  assert_int_equal(drain(s), 2);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  assert_int_equal(A[0].u.jtask.executor, 3);
  assert_int_equal(A[0].u.jtask.provider, 2);
  assert_int_equal(A[0].u.jtask.bytes, 400);
  assert_int_equal(A[0].u.jtask.start_ns, 20);
  assert_int_equal(A[0].u.jtask.end_ns, 45);
  assert_int_equal(A[0].u.jtask.exec_ns, 7);
  is_task(&A[1], 2, 1, 3, 0, 2);
  assert_int_equal(A[1].msg.u.task.buf.addr, 333);
  g_now = 60;
  assert_int_equal(done(s, 2, 1, PROTO_TASK_OK, 9, 111), 0);
  assert_int_equal(drain(s), 5);
  is_jtask(&A[0], 2, PROTO_TASK_OK);
  assert_int_equal(A[0].u.jtask.start_ns, 45);
  assert_int_equal(A[0].u.jtask.end_ns, 60);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 2, DRED_OK);
  is_end(&A[3], 3, DRED_OK);
  is_jred(&A[4], 3, 2, 0, DRED_OK);
  assert_int_equal(A[4].u.jred.start_ns, 10);
  assert_int_equal(A[4].u.jred.end_ns, 60);
  assert_int_equal(sched_instances(s), 0);

  /* keys are never reused (common/proto.h): a READY for the one that ended is stale and
   * starts nothing, while the group's next key starts an instance */
  g_now = 70;
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(sched_instances(s), 0);
  assert_int_equal(sched_stale_readys(s), 1);
  assert_int_equal(ready(s, K(k.group, k.tag - 1), 0, 1, prm(0, 1)), 0);
  assert_int_equal(sched_instances(s), 1);
  assert_int_equal(sched_queue_len(s, K(k.group, k.tag - 1)), 1);
  g_now = 0;
  sched_free(s);
}

static void test_single_member(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_PREDICT);
  uint32_t w[1] = {3};
  group(s, 40, 1, w);
  g_now = 5;
  assert_int_equal(ready(s, K(40, 0), 0, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 3, DRED_OK);
  is_jred(&A[1], 1, 0, 0, DRED_OK);
  assert_int_equal(A[1].u.jred.start_ns, 5);
  assert_int_equal(A[1].u.jred.end_ns, 5);
  assert_int_equal(sched_instances(s), 0);
  g_now = 0;
  sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fig4_arrival_order_pairing),
      cmocka_unit_test(test_root_always_executes),
      cmocka_unit_test(test_predict_policy),
      cmocka_unit_test(test_last_time_policy),
      cmocka_unit_test(test_first_policy),
      cmocka_unit_test(test_queue_stats),
      cmocka_unit_test(test_noncommutative_adjacency),
      cmocka_unit_test(test_completion_end_and_journal),
      cmocka_unit_test(test_single_member),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
