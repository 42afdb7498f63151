/*
 * test_sched_nodes.c -- the scheduler on several nodes (common/placement.h,
 * master/sched/sched_nodes.c): recovery walks the same cross-node placement order the members
 * used for their copies, and commutative reductions pair within each node first, then the
 * nodes' results, falling back to arrival order after a failure.
 *
 * Events and expected actions are built by tests/unit/sched_harness.h.
 */
#include "sched_harness.h"

/* Nodes (common/placement.h): workers 1-2 on node 0, 3-4 on node 1, 5-6 on node 2; the
 * group is members 0..5 on workers 1..6, root member 0. */
static sched_t *three_nodes(uint64_t gid) {
  sched_t *s = sched_new(6, SCHED_POLICY_FIRST);
  uint32_t w;
  for (w = 1; w <= 6; w++) assert_int_equal(sched_set_node(s, w, (w - 1) / 2), 0);
  assert_int_equal(sched_set_node(s, 7, 0), DRED_ERR_ARG);
  assert_int_equal(sched_set_node(s, 0, 0), DRED_ERR_ARG);
  group_seq(s, gid, 6);
  return s;
}

/* A whole node dies after its members handed their operands over: each was placed (by the
 * shared rule) on the next member of another node, and the master recovers both from
 * there -- the instance goes on instead of failing. */
static void test_fault_node_loss_cross_node_replica(void **state) {
  sched_t *s = three_nodes(80);
  sched_key_t k = K(80, 0);
  uint32_t rep2, rep3, nodes[7] = {0, 0, 0, 1, 1, 2, 2}, workers[6] = {1, 2, 3, 4, 5, 6};
  int one = -1;
  /* what a worker computes: member 2 (worker 3, node 1) skips member 3 (same node);
   * member 3, second on node 1, takes the second member elsewhere after it */
  assert_int_equal(dred_place_replicas(6, workers, nodes, NULL, 2, 1, &rep2), 1);
  assert_int_equal(dred_place_replicas(6, workers, nodes, NULL, 3, 1, &rep3), 1);
  assert_int_equal(rep2, 5);
  assert_int_equal(rep3, 6);
  assert_int_equal(sched_group_one_node(s, 80, &one), 0);
  assert_int_equal(one, 0); /* spans three nodes */
  assert_int_equal(ready_rep(s, k, 2, 3, prm(0, 1), rep2), 0);
  assert_int_equal(ready_rep(s, k, 3, 4, prm(0, 1), rep3), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 3, 4, 2, 3);
  assert_int_equal(wfail(s, 3), 0); /* node 1 is lost: the executor ... */
  assert_int_equal(wfail(s, 4), 0); /* ... and the provider */
  assert_int_equal(drain(s), 2);
  is_recover(&A[0], 5, 2); /* the executor's set, from its cross-node copy */
  is_recover(&A[1], 6, 3); /* the provider's message went back to the queue, then died */
  assert_int_equal(rec_ready(s, k, 2, 5, prm(0, 1)), 0);
  assert_int_equal(rec_ready(s, k, 3, 6, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 5, 6, 2, 3); /* the copies at workers 5 and 6 pair */
  assert_int_equal(sched_instances(s), 1);
  sched_free(s);
}

/* A member whose READY never came: the master walks the same placement order the member
 * used -- other nodes first -- not plain cyclic order (which would ask its node peer). */
static void test_fault_unarrived_member_placement_order(void **state) {
  sched_t *s = three_nodes(81);
  int one = -1;
  sched_key_t k = K(81, 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(wfail(s, 3), 0); /* member 2 dies before its READY */
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 5, 2); /* member 4 on node 2, not member 3 on node 1 */
  assert_int_equal(recfail(s, k, 2, 5, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 6, 2); /* then member 5, node 2 */
  assert_int_equal(recfail(s, k, 2, 6, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 1, 2); /* then member 0, node 0 (wrapping around) */
  assert_int_equal(recfail(s, k, 2, 1, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 2, 2);
  assert_int_equal(recfail(s, k, 2, 2, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 4, 2); /* its own node last: a snapshot in its pool */
  sched_free(s);

  /* every worker on one node (the default): plain cyclic order, as before */
  s = sched_new(4, SCHED_POLICY_FIRST);
  group_seq(s, 82, 4);
  assert_int_equal(sched_group_one_node(s, 82, &one), 0);
  assert_int_equal(one, 1);
  assert_int_equal(sched_group_one_node(s, 83, &one), DRED_ERR_ARG); /* unknown group */
  assert_int_equal(ready(s, K(82, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 1);
  sched_free(s);
}

/* ---- node by node (master/sched/sched_nodes.c) ------------------------------------------- */

/* The end both node tests share: node 1's last task (id t1, at worker w1) ends while the
 * root's cross-node task (id t0) runs, so node 1's result waits; then it crosses to the
 * root (task 5) and the reduction ends: an END to every worker, 5 tasks in all. */
static void node1_last(sched_t *s, uint64_t t1, uint32_t w1, uint64_t t0) {
  uint32_t w;
  assert_int_equal(ok(s, t1, w1), 0);
  assert_int_equal(drain(s), 1); /* node 1 is done, node 0 busy: its result is to come */
  assert_int_equal(ok(s, t0, 1), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 5, 1, 3, 0, 2);
  assert_int_equal(ok(s, 5, 1), 0);
  assert_int_equal(drain(s), 8);
  for (w = 1; w <= 6; w++) is_end(&A[w], w, DRED_OK);
  is_jred(&A[7], 6, 5, 0, DRED_OK);
  sched_free(s);
}

/* Members arriving node after node in turn: arrival order would pair every first two
 * across nodes; node by node pairs within each node, then the nodes' results, only
 * (nodes - 1) = 2 tasks across, and a node's result waits while a task runs there. */
static void test_nodes_within_node_first(void **state) {
  sched_t *s = three_nodes(84);
  sched_key_t k = K(84, 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 4, 5, prm(0, 1)), 0);
  assert_int_equal(drain(s), 0); /* three nodes, each with a member still to come */
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 2, 0, 1);
  assert_int_equal(ready(s, k, 3, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 3, 4, 2, 3);
  assert_int_equal(ready(s, k, 5, 6, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 3, 5, 6, 4, 5);
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 1); /* node 0 is done; nodes 1 and 2 still combine */
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  assert_int_equal(ok(s, 3, 5), 0);
  assert_int_equal(drain(s), 2); /* nodes 0 and 2 are done: their results meet */
  is_task(&A[1], 4, 1, 5, 0, 4);
  node1_last(s, 2, 3, 4);
}

/* A late member holds back only its own node: the other two nodes combine meanwhile, and
 * once it comes it meets its node peer's buffer before anything crosses. */
static void test_nodes_late_member_holds_its_node_only(void **state) {
  sched_t *s = three_nodes(85);
  sched_key_t k = K(85, 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 4, 5, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 5, 6, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[0], 1, 1, 2, 0, 1);
  is_task(&A[1], 2, 5, 6, 4, 5);
  assert_int_equal(ok(s, 1, 1), 0);
  assert_int_equal(drain(s), 1);
  assert_int_equal(ok(s, 2, 5), 0);
  assert_int_equal(drain(s), 2); /* member 3 is late: member 2 waits, nodes 0 and 2 meet */
  is_task(&A[1], 3, 1, 5, 0, 4);
  assert_int_equal(ready(s, k, 3, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 4, 3, 4, 2, 3); /* within node 1 first */
  node1_last(s, 4, 3, 3);
}

/* A failure switches an instance back to arrival order: a recovered operand may come back
 * on any node.  Here the two queued buffers on nodes 0 and 1 pair at once when member 4
 * dies before its READY, though node 0's member 1 has not arrived. */
static void test_nodes_failure_back_to_arrival_order(void **state) {
  sched_t *s = three_nodes(86);
  sched_key_t k = K(86, 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(wfail(s, 5), 0);
  assert_int_equal(drain(s), 2);
  assert_true(is_send(&A[0], PROTO_RECOVER));
  is_task(&A[1], 1, 1, 3, 0, 2);
  sched_free(s);
}

/* A worker moving to another node: instances running then go on in arrival order, the
 * next ones pair by the new nodes. */
static void test_nodes_renumbered(void **state) {
  sched_t *s = three_nodes(88);
  assert_int_equal(ready(s, K(88, 0), 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(88, 0), 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_set_node(s, 3, 0), 0); /* worker 3 joins workers 1 and 2 */
  assert_int_equal(ready(s, K(88, 0), 4, 5, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 3, 0, 2); /* the first two, as they came */
  assert_int_equal(ready(s, K(88, 1), 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(88, 1), 4, 5, prm(0, 1)), 0);
  assert_int_equal(ready(s, K(88, 1), 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 1, 3, 0, 2); /* one node now: they meet before member 4 */
  sched_free(s);
}

/* Non-commutative reductions keep combining rank-adjacent buffers, wherever they are:
 * their order is fixed by rank, not by node. */
static void test_nodes_noncommutative_unchanged(void **state) {
  sched_t *s = three_nodes(87);
  sched_key_t k = K(87, 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 0)), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 0)), 0);
  assert_int_equal(drain(s), 1); /* nodes 0 and 1, adjacent ranks */
  is_task(&A[0], 1, 2, 3, 1, 2);
  sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fault_node_loss_cross_node_replica),
      cmocka_unit_test(test_fault_unarrived_member_placement_order),
      cmocka_unit_test(test_nodes_within_node_first),
      cmocka_unit_test(test_nodes_late_member_holds_its_node_only),
      cmocka_unit_test(test_nodes_failure_back_to_arrival_order),
      cmocka_unit_test(test_nodes_renumbered),
      cmocka_unit_test(test_nodes_noncommutative_unchanged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
