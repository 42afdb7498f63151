/*
 * test_sched_recover.c -- fault tolerance in the scheduler (master/sched/sched.c and
 * master/sched/sched_recover.c, seed 002 section 3): executors, providers and members dying
 * before, during and after their tasks; RECOVER asked of replica holders in turn and
 * RECOVER_FAILED falling through; the root's death; several instances at once; task errors;
 * a member that cannot allocate (READY error NOMEM) and one that gives up (ABANDON).
 *
 * Node placement's part of recovery is in test_sched_nodes.c, in-place absorption's in
 * test_sched_absorb.c.  Events and expected actions are built by
 * tests/unit/sched_harness.h; worker w runs member w-1 in most groups below.
 */
#include "sched_harness.h"

/* ---- fault tolerance (seed 002, section 3) -------------------------------------------- */

/* Fault position 1: the worker a task would go to is dead before dispatch.  Its queued
 * message leaves the queue, so it is never chosen; its operand comes from the replica. */
static void test_fault_executor_dead_before_dispatch(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(60, 0);
  proto_msg_t p = prm(0, 1);
  group_seq(s, 60, 4);
  assert_int_equal(ready_rep(s, k, 1, 2, p, 3), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 1);
  assert_int_equal(sched_queue_len(s, k), 0);
  assert_int_equal(sched_worker_alive(s, 2), 0);

  assert_int_equal(ready(s, k, 0, 1, p), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(rec_ready(s, k, 1, 3, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 3, 0, 1);
  assert_int_equal(A[0].msg.u.task.buf.addr, bufaddr(3, 1) + 500);

  assert_int_equal(ready(s, k, 2, 3, p), 0);
  assert_int_equal(ready(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 3, 4, 2, 3);
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 1);
  assert_int_equal(ok(s, 2, 3), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 3, 1, 3, 0, 2);
  assert_int_equal(ok(s, 3, 1), 0);
  assert_int_equal(drain(s), 5);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 3, DRED_OK); /* no END to the dead worker 2 */
  is_end(&A[3], 4, DRED_OK);
  is_jred(&A[4], 4, 3, 1, DRED_OK);
  sched_free(s);
}

/* Fault position 2: the executor dies during the task.  The provider's message goes back
 * to the head of the queue (so FIRST then picks it as the earlier one), the executor's
 * set {0,1} is split: member 1 is reloaded by its own worker, member 0 from its replica. */
static void test_fault_executor_dies_during_task(void **state) {
  sched_t *s = sched_new(6, SCHED_POLICY_FIRST);
  sched_key_t k = K(61, 0);
  proto_msg_t p = prm(5, 1);
  group_seq(s, 61, 6);
  assert_int_equal(ready_rep(s, k, 0, 1, p, 3), 0);
  assert_int_equal(ready_rep(s, k, 1, 2, p, 3), 0);
  assert_int_equal(ready_rep(s, k, 2, 3, p, 4), 0);
  assert_int_equal(ready_rep(s, k, 3, 4, p, 5), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[0], 1, 1, 2, 0, 1);
  is_task(&A[1], 2, 3, 4, 2, 3);
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(ok(s, 2, 3), 0);
  assert_int_equal(drain(s), 3);
  is_task(&A[2], 3, 1, 3, 0, 2); /* {0,1}@1 executes, {2,3}@3 provides */
  assert_int_equal(ready_rep(s, k, 4, 5, p, 6), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_queue_len(s, k), 1);

  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 3);
  is_recover(&A[0], 3, 0);  /* worker 1 is dead: its replica holder */
  is_recover(&A[1], 2, 1);  /* worker 2 is alive: it reloads its own operand */
  is_task(&A[2], 4, 3, 5, 2, 4); /* {2,3} was put back at the head, ahead of {4} */
  assert_int_equal(sched_tasks_in_flight(s), 1);
  assert_int_equal(ok(s, 3, 1), DRED_ERR_ARG); /* the dropped task */

  assert_int_equal(rec_ready(s, k, 0, 3, p), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(rec_ready(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 5, 3, 2, 0, 1);
  assert_int_equal(ready(s, k, 5, 6, p), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ok(s, 4, 3), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 6, 6, 3, 5, 2);
  assert_int_equal(ok(s, 5, 3), 0);
  assert_int_equal(drain(s), 1);
  assert_int_equal(ok(s, 6, 6), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 7, 6, 3, 5, 0);
  assert_int_equal(ok(s, 7, 6), 0);
  assert_int_equal(drain(s), 7);
  is_end(&A[1], 2, DRED_OK);
  is_end(&A[2], 3, DRED_OK);
  is_end(&A[3], 4, DRED_OK);
  is_end(&A[4], 5, DRED_OK);
  is_end(&A[5], 6, DRED_OK);
  is_jred(&A[6], 6, 7, 2, DRED_OK);
  sched_free(s);
}

/* Fault position 3, PROVIDER_LOST: the executor's message returns with its old set and
 * the buffer it reports; the provider's set is recovered. */
static void test_fault_provider_lost(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(62, 0);
  proto_msg_t p = prm(2, 1);
  group_seq(s, 62, 3);
  assert_int_equal(ready_rep(s, k, 0, 1, p, 2), 0);
  assert_int_equal(ready_rep(s, k, 1, 2, p, 4), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 0); /* nothing yet: the executor will report */
  assert_int_equal(sched_tasks_in_flight(s), 1);

  assert_int_equal(done(s, 1, 1, PROTO_TASK_PROVIDER_LOST, 5, 111), 0);
  assert_int_equal(drain(s), 2);
  is_jtask(&A[0], 1, PROTO_TASK_PROVIDER_LOST);
  is_recover(&A[1], 4, 1);
  assert_int_equal(sched_queue_len(s, k), 1);

  assert_int_equal(ready(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 3, 1, 2, 0);
  assert_int_equal(A[0].msg.u.task.buf.addr, 111);
  assert_int_equal(rec_ready(s, k, 1, 4, p), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ok(s, 2, 3), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 3, 3, 4, 2, 1);
  assert_int_equal(ok(s, 3, 3), 0);
  assert_int_equal(drain(s), 4);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 3, DRED_OK);
  is_jred(&A[3], 3, 3, 1, DRED_OK);
  sched_free(s);
}

/* FAILED of a worker goes to every live worker behind every action decided while it still
 * counted as alive, and ahead of what its death decides.  A worker stops its reads of a
 * dead one when FAILED comes: a TASK naming the dead provider that reached its executor
 * after FAILED would read a dead process for ever (a node's links closing in one turn of
 * the master's loop once made that order: one node-loss trial in 15 hung on 16 cores). */
static void test_failed_behind_earlier_tasks(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(63, 0);
  proto_msg_t p = prm(2, 1);
  size_t i;
  unsigned members = 0;
  group_seq(s, 63, 3);
  assert_int_equal(ready_rep(s, k, 0, 1, p, 2), 0);
  assert_int_equal(ready_rep(s, k, 1, 2, p, 4), 0); /* TASK(1 <- 2) decided, not yet sent */
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(NF, 3); /* workers 1, 3 and 4, not the dead one */
  for (i = 0; i < NF; i++) {
    assert_int_equal(F[i].msg.u.failed.worker, 2);
    assert_int_not_equal(F[i].worker, 2);
    assert_true(raw_pos[i] > 0); /* behind the TASK */
  }
  /* The executor dies too: FAILED first, then the RECOVERs of both sets. */
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 2); /* members 0 and 1, each from a live holder */
  for (i = 0; i < NA; i++) {
    assert_true(is_send(&A[i], PROTO_RECOVER));
    assert_true(A[i].worker == 3 || A[i].worker == 4);
    members |= 1u << A[i].msg.u.recover.member;
  }
  assert_int_equal(members, 3u);
  assert_int_equal(NF, 2); /* workers 3 and 4 */
  for (i = 0; i < NF; i++) {
    assert_int_equal(F[i].msg.u.failed.worker, 1);
    assert_int_equal(raw_pos[i], i); /* ahead of the RECOVERs */
  }
  sched_free(s);
}

/* The provider dies but the executor had finished reading: OK, nothing to recover. */
static void test_fault_provider_dies_after_read(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(64, 0);
  group_seq(s, 64, 3);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 3);
  is_task(&A[2], 2, 1, 3, 0, 2);
  assert_int_equal(ok(s, 2, 1), 0);
  assert_int_equal(drain(s), 4);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 3, DRED_OK);
  is_jred(&A[3], 3, 2, 0, DRED_OK);
  sched_free(s);
}

/* The provider dies first (nothing happens yet), then the executor: the provider's
 * message cannot go back to the queue, its holder is dead; both sets are recovered. */
static void test_fault_provider_then_executor_die(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(72, 0);
  proto_msg_t p = prm(3, 1);
  group_seq(s, 72, 4);
  assert_int_equal(ready_rep(s, k, 0, 1, p, 3), 0);
  assert_int_equal(ready_rep(s, k, 1, 2, p, 3), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 2);
  is_recover(&A[0], 3, 1);
  is_recover(&A[1], 3, 0);
  assert_int_equal(sched_queue_len(s, k), 0);
  assert_int_equal(sched_tasks_in_flight(s), 0);
  assert_int_equal(rec_ready(s, k, 1, 3, p), 0);
  assert_int_equal(ready(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 4, 3, 3, 1);
  sched_free(s);
}

/* Worker 3 executes two tasks of one instance (its own member's and a recovered one's)
 * and dies: both providers go back to the head, the earlier-dispatched one first. */
static void test_fault_executor_with_two_tasks(void **state) {
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  sched_key_t k = K(73, 0);
  proto_msg_t p = prm(4, 1);
  uint32_t reps0[2] = {3, 5};
  group_seq(s, 73, 5);
  assert_int_equal(ready_full(s, k, 0, 1, p, 0, 2, reps0), 0);
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 0);
  assert_int_equal(rec_ready(s, k, 0, 3, p), 0);
  assert_int_equal(ready(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 3, 2, 0, 1);
  assert_int_equal(ready_rep(s, k, 2, 3, p, 5), 0);
  assert_int_equal(ready(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 3, 4, 2, 3);

  assert_int_equal(wfail(s, 3), 0);
  assert_int_equal(drain(s), 3);
  is_recover(&A[0], 5, 2);
  is_recover(&A[1], 5, 0);       /* workers 1 and 3 are dead: the last holder */
  is_task(&A[2], 3, 2, 4, 1, 3); /* {1} (task 1's provider) ahead of {3} (task 2's) */
  sched_free(s);
}

/* A member's worker dies before its READY came: the operand is asked of the next live
 * member in cyclic order; when that one dies too the next one is asked. */
static void test_fault_member_dies_before_arriving(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(65, 0);
  group_seq(s, 65, 3);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 1);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), DRED_ERR_ARG); /* too late, it is dead */
  assert_int_equal(rec_ready(s, k, 1, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 3, 0, 1);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 2, 1, 3, 0, 2);
  assert_int_equal(ok(s, 2, 1), 0);
  assert_int_equal(drain(s), 4);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 3, DRED_OK);
  is_jred(&A[3], 3, 2, 1, DRED_OK);
  sched_free(s);

  s = sched_new(4, SCHED_POLICY_FIRST);
  group_seq(s, 66, 4);
  assert_int_equal(ready(s, K(66, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(wfail(s, 3), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 4, 2);
  assert_int_equal(wfail(s, 4), 0); /* the asked worker dies, and member 3 is lost too */
  assert_int_equal(drain(s), 2);
  is_recover(&A[0], 1, 2);
  is_recover(&A[1], 1, 3);
  sched_free(s);
}

/* A RECOVER is outstanding when the instance fails for everyone (a member disagrees) and
 * ends: the holder's answer comes after the end.  Stale, and dropped -- no error, no new
 * instance -- as is its RECOVER_FAILED. */
static void test_fault_recovered_ready_after_end(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(68, 0);
  proto_msg_t bad = prm(0, 1);
  (void)state;
  group_seq(s, 68, 3);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 1); /* member 1 died before its READY: its copy, from worker 3 */
  bad.u.ready.count = 99;
  assert_int_equal(ready(s, k, 2, 3, bad), 0); /* member 2 disagrees: MISMATCH */
  assert_int_equal(drain(s), 3);
  is_end(&A[0], 1, DRED_ERR_MISMATCH);
  is_end(&A[1], 3, DRED_ERR_MISMATCH);
  assert_int_equal(sched_instances(s), 0);
  assert_int_equal(rec_ready(s, k, 1, 3, prm(0, 1)), 0); /* the answer, too late */
  assert_int_equal(recfail(s, k, 1, 3, DRED_ERR_STORAGE), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_instances(s), 0);
  assert_int_equal(sched_stale_readys(s), 1);
  sched_free(s);
}

/* The root dies: ROOT_FAILED to every survivor, but only after tasks between live
 * workers drained; a task the root itself was executing is dropped at once. */
static void test_fault_root_dies(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(67, 0);
  proto_msg_t p = prm(3, 1);
  group_seq(s, 67, 4);
  assert_int_equal(ready(s, k, 0, 1, p), 0);
  assert_int_equal(ready(s, k, 1, 2, p), 0);
  assert_int_equal(ready(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(wfail(s, 4), 0);
  assert_int_equal(drain(s), 0); /* task 1 still in flight */
  assert_int_equal(ready(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 0); /* nothing dispatched, nobody told yet */
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 5);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  is_end(&A[1], 1, DRED_ERR_ROOT_FAILED);
  is_end(&A[2], 2, DRED_ERR_ROOT_FAILED);
  is_end(&A[3], 3, DRED_ERR_ROOT_FAILED);
  is_jred(&A[4], 4, 1, 0, DRED_ERR_ROOT_FAILED);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);

  s = sched_new(4, SCHED_POLICY_FIRST);
  group_seq(s, 67, 4);
  assert_int_equal(ready(s, k, 2, 3, p), 0);
  assert_int_equal(ready(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 4, 3, 3, 2);
  assert_int_equal(ready(s, k, 0, 1, p), 0);
  assert_int_equal(wfail(s, 4), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 1, DRED_ERR_ROOT_FAILED);
  is_end(&A[1], 3, DRED_ERR_ROOT_FAILED);
  assert_int_equal(sched_tasks_in_flight(s), 0);
  assert_int_equal(ready(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 2, DRED_ERR_ROOT_FAILED);
  is_jred(&A[1], 4, 1, 0, DRED_ERR_ROOT_FAILED);
  sched_free(s);
}

/* A member and every holder of its replica dead: PROC_FAILED to the survivors. */
static void test_fault_all_copies_lost(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(68, 0);
  group_seq(s, 68, 4);
  assert_int_equal(ready_rep(s, k, 1, 2, prm(0, 1), 3), 0);
  assert_int_equal(wfail(s, 3), 0); /* member 2 never arrived: ask member 3 */
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 4, 2);
  assert_int_equal(wfail(s, 2), 0); /* member 1: own worker and its replica both dead */
  /* the other live members may still find its snapshot in shared memory: ask them in
   * cyclic order (member 3 = worker 4, then member 0 = worker 1), each says no */
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 4, 1);
  assert_int_equal(recfail(s, k, 1, 4, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 1, 1);
  assert_int_equal(recfail(s, k, 1, 1, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 0);    /* nobody alive arrived: nobody to tell yet */
  assert_int_equal(rec_ready(s, k, 2, 4, prm(0, 1)), 0); /* late answer: ignored */
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 1, DRED_ERR_PROC_FAILED);
  assert_int_equal(ready(s, k, 3, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 4, DRED_ERR_PROC_FAILED);
  is_jred(&A[1], 4, 0, 0, DRED_ERR_PROC_FAILED);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* A member and its listed replica holder both dead: a third member is asked, and when it
 * answers with a recovered copy (from the dead member's snapshot directory) the reduction
 * goes on. */
static void test_fault_adjacent_recovered_by_other_member(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(70, 0);
  group_seq(s, 70, 4);
  assert_int_equal(ready_rep(s, k, 1, 2, prm(0, 1), 3), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 1); /* its listed replica holder */
  assert_int_equal(wfail(s, 3), 0);
  /* the holder asked died too: past the list, the next other member (worker 3 = member 2
   * is listed, so member 3 = worker 4); member 2 never arrived: its next member, worker 4 */
  assert_int_equal(drain(s), 2);
  is_recover(&A[0], 4, 1);
  is_recover(&A[1], 4, 2);
  assert_int_equal(rec_ready(s, k, 1, 4, prm(0, 1)), 0); /* found in the dead one's pool */
  assert_int_equal(rec_ready(s, k, 2, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);                          /* the two recovered copies pair */
  is_task(&A[0], 1, 4, 4, 1, 2);                          /* both copies sit at worker 4 */
  assert_int_equal(sched_instances(s), 1);                /* still running, not failed */
  sched_free(s);
}

/* RECOVER_FAILED moves on to the next holder; the asked worker dying does too; when the
 * list is exhausted the reported error ends the instance. */
static void test_fault_recover_failed_falls_through(void **state) {
  uint32_t reps[3] = {3, 4, 5};
  sched_key_t k = K(69, 0);
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  group_seq(s, 69, 3);
  assert_int_equal(ready_full(s, k, 1, 2, prm(0, 1), 0, 3, reps), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 1);
  assert_int_equal(recfail(s, k, 1, 4, DRED_ERR_STORAGE), DRED_ERR_ARG); /* not asked */
  assert_int_equal(drain(s), 0);
  assert_int_equal(recfail(s, k, 1, 3, DRED_ERR_STORAGE), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 4, 1);
  assert_int_equal(wfail(s, 4), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 5, 1);
  assert_int_equal(recfail(s, k, 1, 5, DRED_ERR_STORAGE), 0);
  assert_int_equal(drain(s), 1); /* past the list: the other members (worker 3 was listed) */
  is_recover(&A[0], 1, 1);
  assert_int_equal(recfail(s, k, 1, 1, DRED_ERR_STORAGE), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 3);
  is_end(&A[0], 1, DRED_ERR_STORAGE);
  is_end(&A[1], 3, DRED_ERR_STORAGE);
  is_jred(&A[2], 3, 0, 0, DRED_ERR_STORAGE);
  sched_free(s);

  /* the same, but the second holder has the copy */
  s = sched_new(5, SCHED_POLICY_FIRST);
  group_seq(s, 69, 3);
  assert_int_equal(ready_full(s, k, 1, 2, prm(0, 1), 0, 3, reps), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(recfail(s, k, 1, 3, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 2);
  is_recover(&A[1], 4, 1);
  assert_int_equal(rec_ready(s, k, 1, 4, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 4, 0, 1);
  sched_free(s);
}

/* One worker failure touches four instances in four different ways. */
static void test_fault_several_instances(void **state) {
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  uint32_t a[3] = {1, 2, 3}, b[3] = {2, 3, 4}, c[2] = {5, 2}, d[2] = {2, 5};
  sched_action_t act;
  int ends = 0, jreds = 0;
  group(s, 81, 3, a);
  group(s, 82, 3, b);
  group(s, 83, 2, c);
  group(s, 84, 2, d);
  assert_int_equal(ready_rep(s, K(81, 0), 1, 2, prm(0, 1), 3), 0); /* A: queued at 2 */
  assert_int_equal(ready_rep(s, K(82, 0), 0, 2, prm(2, 1), 4), 0); /* B: 2 executes  */
  assert_int_equal(ready_rep(s, K(82, 0), 1, 3, prm(2, 1), 4), 0);
  assert_int_equal(ready(s, K(83, 0), 0, 5, prm(0, 1)), 0);        /* C: 2 not arrived */
  assert_int_equal(ready(s, K(84, 0), 1, 5, prm(0, 1)), 0);        /* D: 2 is the root */
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 2, 3, 0, 1);

  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 5);
  is_recover(&A[0], 3, 1);
  assert_int_equal(A[0].key.group, 81);
  is_recover(&A[1], 4, 0);
  assert_int_equal(A[1].key.group, 82);
  is_recover(&A[2], 5, 1);
  assert_int_equal(A[2].key.group, 83);
  is_end(&A[3], 5, DRED_ERR_ROOT_FAILED);
  assert_int_equal(A[3].key.group, 84);
  is_jred(&A[4], 2, 0, 0, DRED_ERR_ROOT_FAILED);
  assert_int_equal(sched_instances(s), 3);
  assert_int_equal(sched_tasks_in_flight(s), 0);
  assert_int_equal(sched_queue_len(s, K(82, 0)), 1); /* B's provider is back */

  assert_int_equal(rec_ready(s, K(81, 0), 1, 3, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(81, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 1, 3, 0, 1);
  assert_int_equal(rec_ready(s, K(82, 0), 0, 4, prm(2, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 3, 3, 4, 1, 0);
  assert_int_equal(rec_ready(s, K(83, 0), 1, 5, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 4, 5, 5, 0, 1); /* the replica sits on the root's own worker */
  assert_int_equal(ready(s, K(81, 0), 2, 3, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(82, 0), 2, 4, prm(2, 1)), 0);
  assert_int_equal(ok(s, 2, 1), 0);
  assert_int_equal(ok(s, 3, 3), 0);
  assert_int_equal(ok(s, 4, 5), 0);
  assert_int_equal(drain(s), 7);
  is_task(&A[1], 5, 1, 3, 0, 2);   /* A: {0,1}@1 + {2}@3 */
  is_task(&A[3], 6, 4, 3, 2, 1);   /* B: root {2}@4 + {0,1}@3 */
  is_end(&A[5], 5, DRED_OK);       /* C done: member 0 told, member 1 is dead */
  is_jred(&A[6], 2, 1, 1, DRED_OK);
  assert_int_equal(ok(s, 5, 1), 0); /* A's last task */
  assert_int_equal(ok(s, 6, 4), 0); /* B's last task */
  while (sched_next_action(s, &act)) {
    if (is_send(&act, PROTO_END)) {
      assert_int_equal(act.msg.u.end.status, DRED_OK);
      assert_int_not_equal(act.worker, 2);
      ends++;
    }
    if (act.type == SCHED_ACT_JOURNAL_REDUCTION) {
      assert_int_equal(act.u.jred.status, DRED_OK);
      assert_int_equal(act.u.jred.recovered, 1);
      jreds++;
    }
  }
  assert_int_equal(ends, 4);
  assert_int_equal(jreds, 2);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* A reduction started after one of its members is known dead: the member may have made
 * the call before it died (killed right after it, its READY never sent), so its operand
 * is asked of its holders like that of one dying now.  When none has it (it never made
 * the call), the instance fails with PROC_FAILED once the last holder said so. */
static void test_fault_new_reduction_on_dead_group(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(70, 0);
  group_seq(s, 70, 3);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 1); /* member 1's next live member in cyclic order */
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), DRED_ERR_ARG); /* from the dead */
  assert_int_equal(recfail(s, k, 1, 3, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 1, 1); /* then the one after it */
  assert_int_equal(recfail(s, k, 1, 1, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 1, DRED_ERR_PROC_FAILED); /* nobody left to ask */
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 3, DRED_ERR_PROC_FAILED);
  is_jred(&A[1], 3, 0, 0, DRED_ERR_PROC_FAILED);
  assert_int_equal(sched_instances(s), 0);

  /* The next reduction: this time the dead member's copy is found, and the result is
   * whole. */
  k = K(70, 1);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 1);
  assert_int_equal(rec_ready(s, k, 1, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  assert_int_equal(A[0].msg.type, PROTO_TASK); /* members 2 and 1 (recovered) combine */
  assert_int_equal(ok(s, 1, 3), 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  is_task(&A[1], 2, 1, 3, 0, 2); /* into the root */
  assert_int_equal(ok(s, 2, 1), 0);
  assert_int_equal(drain(s), 4);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 3, DRED_OK);
  is_jred(&A[3], 3, 2, 1, DRED_OK);
  sched_free(s);

  /* The root's worker dead at creation: nowhere for the result to go. */
  s = sched_new(3, SCHED_POLICY_FIRST);
  group_seq(s, 70, 3);
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(ready(s, K(70, 2), 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 2, DRED_ERR_ROOT_FAILED);
  sched_free(s);
}

/* A task reporting ERROR ends the instance with its error once the others drain. */
static void test_task_error_fails_instance(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(71, 0);
  group_seq(s, 71, 4);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 3, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  assert_int_equal(done(s, 2, 3, PROTO_TASK_ERROR, 1, 0), 0);
  assert_int_equal(drain(s), 1);
  is_jtask(&A[0], 2, PROTO_TASK_ERROR);
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 6);
  is_end(&A[1], 1, DRED_ERR_INTERNAL);
  is_end(&A[4], 4, DRED_ERR_INTERNAL);
  is_jred(&A[5], 4, 2, 0, DRED_ERR_INTERNAL);
  sched_free(s);
}

/* A task error the status table does not define (a hostile or broken worker's DONE) ends
 * the instance with DRED_ERR_INTERNAL, never with a code dred_strerror cannot name; a
 * known one (NOMEM) is passed on as it is.  tests/fuzz/fuzz_sched.c sends such DONEs.
 * Before it, DONEs whose status names no outcome (2 and 4: proto_task_status_t leaves 2
 * unused) are refused and change nothing. */
static void task_error_case(int32_t error, int32_t want) {
  sched_t *s = sched_new(2, SCHED_POLICY_FIRST);
  sched_key_t k = K(72, 0);
  group_seq(s, 72, 2);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  assert_true(is_send(&A[0], PROTO_TASK));
  assert_int_equal(done(s, A[0].msg.u.task.task_id, A[0].worker, 2, 5, 111), DRED_ERR_ARG);
  assert_int_equal(done(s, A[0].msg.u.task.task_id, A[0].worker, 4, 5, 111), DRED_ERR_ARG);
  assert_int_equal(sched_tasks_in_flight(s), 1);
  assert_int_equal(done_err(s, A[0].msg.u.task.task_id, A[0].worker, PROTO_TASK_ERROR, error, 0, 0),
                   0);
  assert_int_equal(drain(s), 4);
  is_end(&A[1], 1, want);
  is_end(&A[2], 2, want);
  is_jred(&A[3], 2, 1, 0, want);
  sched_free(s);
}

static void test_task_error_unknown_code(void **state) {
  (void)state;
  task_error_case(4242, DRED_ERR_INTERNAL);
  task_error_case(-3, DRED_ERR_INTERNAL);
  task_error_case(DRED_ERR_NOMEM, DRED_ERR_NOMEM);
}

/* ---- a member that cannot allocate; a member that gives up -------------------------- */

static int ready_err(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p,
                     int32_t error) {
  proto_msg_t r = ready_msg(k, m, p);
  r.u.ready.error = error;
  return feed(s, w, &r);
}

static int abandon(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, int32_t error) {
  return recover_like(s, PROTO_ABANDON, k, m, w, error);
}

/* Member 2 joins without a buffer (READY error = NOMEM) while task 1 runs: nothing more is
 * dispatched, and once task 1 drained every arrived member is told DRED_ERR_NOMEM -- not
 * MISMATCH, which would blame a disagreement nobody had -- and a late arrival too. */
static void test_nomem_is_explicit(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(1, 0);
  group_seq(s, 1, 4);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(ready_err(s, k, 2, 3, prm(0, 1), DRED_ERR_NOMEM), 0);
  assert_int_equal(drain(s), 0); /* task 1 still in flight */
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 4);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  is_end(&A[1], 1, DRED_ERR_NOMEM);
  is_end(&A[2], 2, DRED_ERR_NOMEM);
  is_end(&A[3], 3, DRED_ERR_NOMEM);
  assert_int_equal(ready(s, k, 3, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 4, DRED_ERR_NOMEM);
  is_jred(&A[1], 4, 1, 0, DRED_ERR_NOMEM);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* The first arrival cannot allocate: it is told at once (no task in flight), nothing is
 * ever paired, and the others are told NOMEM as they come.  Its element size is its real
 * one: the other members agree, so no MISMATCH hides the cause. */
static void test_nomem_first_arrival(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(2, 5);
  group_seq(s, 2, 3);
  assert_int_equal(ready_err(s, k, 1, 2, prm(0, 1), DRED_ERR_NOMEM), 0);
  assert_int_equal(drain(s), 1);
  is_end(&A[0], 2, DRED_ERR_NOMEM);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 3);
  is_end(&A[0], 1, DRED_ERR_NOMEM);
  is_end(&A[1], 3, DRED_ERR_NOMEM);
  assert_int_equal(A[2].type, SCHED_ACT_JOURNAL_REDUCTION);
  assert_int_equal(A[2].u.jred.status, DRED_ERR_NOMEM);
  assert_int_equal(sched_instances(s), 0);
  /* an instance that already failed keeps its first reason */
  k = K(2, 6);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(1, 1)), 0); /* root differs: MISMATCH */
  assert_int_equal(ready_err(s, k, 2, 3, prm(0, 1), DRED_ERR_NOMEM), 0);
  assert_int_equal(drain(s), 4);
  is_end(&A[0], 1, DRED_ERR_MISMATCH);
  is_end(&A[1], 2, DRED_ERR_MISMATCH);
  is_end(&A[2], 3, DRED_ERR_MISMATCH);
  sched_free(s);
}

/* A member's dred_finalize stopped waiting: ABANDON ends the instance with its status for
 * every member, after the task in flight drained; a member arriving later is told at
 * once.  Only an arrived member may abandon, and only from its own worker; an instance
 * that already ended is no error (its END crossed the ABANDON). */
static void test_abandon_ends_for_everyone(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(3, 9);
  group_seq(s, 3, 3);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(abandon(s, k, 2, 3, DRED_ERR_SHUTDOWN), DRED_ERR_ARG); /* not arrived */
  assert_int_equal(abandon(s, k, 1, 1, DRED_ERR_SHUTDOWN), DRED_ERR_ARG); /* not its worker */
  assert_int_equal(abandon(s, K(3, 10), 0, 1, DRED_ERR_SHUTDOWN), 0);     /* already gone */
  assert_int_equal(drain(s), 0);
  assert_int_equal(abandon(s, k, 1, 2, 0), 0); /* 0: DRED_ERR_SHUTDOWN */
  assert_int_equal(drain(s), 0);               /* task 1 reads member 1's buffer: wait */
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 3);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  is_end(&A[1], 1, DRED_ERR_SHUTDOWN);
  is_end(&A[2], 2, DRED_ERR_SHUTDOWN);
  assert_int_equal(sched_instances(s), 1); /* member 2 is still owed its END */
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_end(&A[0], 3, DRED_ERR_SHUTDOWN);
  assert_int_equal(A[1].type, SCHED_ACT_JOURNAL_REDUCTION);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fault_executor_dead_before_dispatch),
      cmocka_unit_test(test_fault_executor_dies_during_task),
      cmocka_unit_test(test_fault_provider_lost),
    cmocka_unit_test(test_failed_behind_earlier_tasks),
      cmocka_unit_test(test_fault_provider_dies_after_read),
      cmocka_unit_test(test_fault_provider_then_executor_die),
      cmocka_unit_test(test_fault_executor_with_two_tasks),
      cmocka_unit_test(test_fault_member_dies_before_arriving),
      cmocka_unit_test(test_fault_recovered_ready_after_end),
      cmocka_unit_test(test_fault_root_dies),
      cmocka_unit_test(test_fault_all_copies_lost),
      cmocka_unit_test(test_fault_recover_failed_falls_through),
      cmocka_unit_test(test_fault_adjacent_recovered_by_other_member),
      cmocka_unit_test(test_fault_several_instances),
      cmocka_unit_test(test_fault_new_reduction_on_dead_group),
      cmocka_unit_test(test_task_error_fails_instance),
      cmocka_unit_test(test_task_error_unknown_code),
      cmocka_unit_test(test_nomem_is_explicit),
      cmocka_unit_test(test_nomem_first_arrival),
      cmocka_unit_test(test_abandon_ends_for_everyone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
