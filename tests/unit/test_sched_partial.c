/*
 * test_sched_partial.c -- node partials (READY's cover, master/sched/sched.c on_partial):
 * one READY stands for the members of a node whose operands its buffer already holds
 * combined.  The covered members send nothing and are owed an END; the buffer pairs like
 * any other; its holder's death recovers each covered member on its own; and a partial
 * that meets a member already covered or being recovered is refused -- never counted
 * twice -- with its other members recovered one by one.  The unit tests of the rule the
 * fault trials cannot aim at: every order of a partial against a death.
 *
 * Events and expected actions are built by tests/unit/sched_harness.h.
 */
#include "sched_harness.h"

/* Workers 1-2 on node 0, 3-4 on node 1, 5-6 on node 2; members 0..5 on workers 1..6,
 * root member 0 (as test_sched_nodes.c). */
static sched_t *three_nodes(uint64_t gid) {
  sched_t *s = sched_new(6, SCHED_POLICY_FIRST);
  uint32_t w;
  for (w = 1; w <= 6; w++) assert_int_equal(sched_set_node(s, w, (w - 1) / 2), 0);
  group_seq(s, gid, 6);
  return s;
}

/* Member m (on worker w) sends the node partial of `members` (nm of them, m included). */
static int partial_p(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p,
                     const uint32_t *members, uint32_t nm, uint32_t n) {
  uint8_t cover[64] = {0};
  proto_msg_t r = ready_msg(k, m, p);
  uint32_t i;
  for (i = 0; i < nm; i++) cover[members[i] / 8] |= (uint8_t)(1u << (members[i] % 8));
  r.u.ready.buf.addr = bufaddr(w, m) + 700;
  r.u.ready.cover_len = (n + 7) / 8;
  r.u.ready.cover = cover;
  return feed(s, w, &r);
}

static int partial(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, uint32_t a, uint32_t b) {
  uint32_t members[2] = {a, b};
  return partial_p(s, k, m, w, prm(0, 1), members, 2, 6);
}

/* The action in A[0..NA) sending `type` to worker w, or NULL. */
static const sched_action_t *sent_to(proto_type_t type, uint32_t w) {
  size_t i;
  for (i = 0; i < NA; i++)
    if (is_send(&A[i], type) && A[i].worker == w) return &A[i];
  return NULL;
}

/* Every worker in `live` (nl of them) got END `status` in the last drain, and the
 * reduction was journaled with `tasks` tasks and `recovered` recovered READYs. */
static void ended(const uint32_t *live, uint32_t nl, int32_t status, uint32_t tasks,
                  uint32_t recovered) {
  uint32_t i;
  for (i = 0; i < nl; i++) {
    const sched_action_t *e = sent_to(PROTO_END, live[i]);
    assert_non_null(e);
    assert_int_equal(e->msg.u.end.status, status);
  }
  assert_int_equal(A[NA - 1].type, SCHED_ACT_JOURNAL_REDUCTION);
  assert_int_equal(A[NA - 1].u.jred.tasks, tasks);
  assert_int_equal(A[NA - 1].u.jred.recovered, recovered);
  assert_int_equal(A[NA - 1].u.jred.status, status);
}

/* Run the reduction to its end: every TASK of each drain reported OK, until the reduction
 * is journaled (its ENDs and record are then in A[]). */
static void finish_ok(sched_t *s) {
  for (;;) {
    size_t i;
    drain(s);
    if (NA > 0 && A[NA - 1].type == SCHED_ACT_JOURNAL_REDUCTION) return;
    assert_true(NA > 0);
    for (i = 0; i < NA; i++)
      if (is_send(&A[i], PROTO_TASK)) assert_int_equal(ok(s, A[i].msg.u.task.task_id, A[i].worker), 0);
  }
}

/* Two node partials and the root's node, member by member: (nodes - 1) cross-node tasks,
 * one within the root's node, and an END to every member, the four that sent nothing
 * included. */
static void test_partial_pairs_as_one(void **state) {
  sched_t *s = three_nodes(90);
  sched_key_t k = K(90, 0);
  uint32_t all[6] = {1, 2, 3, 4, 5, 6};
  (void)state;
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(partial(s, k, 3, 4, 2, 3), 0); /* node 1: member 3 holds {2, 3} */
  assert_int_equal(drain(s), 0); /* node 0 still has member 1 to come */
  assert_int_equal(partial(s, k, 4, 5, 4, 5), 0); /* node 2 */
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 4, 5, 3, 4); /* the two whole nodes meet */
  assert_int_equal(A[0].msg.u.task.buf.addr, bufaddr(5, 4) + 700);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 1, 2, 0, 1);
  assert_int_equal(ok(s, 1, 4), 0);
  assert_int_equal(ok(s, 2, 1), 0);
  assert_int_equal(drain(s), 3);
  is_task(&A[2], 3, 1, 4, 0, 3);
  assert_int_equal(ok(s, 3, 1), 0);
  drain(s);
  assert_int_equal(NA, 8); /* the journal of task 3, six ENDs, the reduction's record */
  ended(all, 6, DRED_OK, 3, 0);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* A covered member hears that its folder died and sends its own READY (lib/paths/
 * partial.c) -- after the reduction ended, the folder's partial having been combined
 * before it died.  That READY is stale: dropped, never an instance nobody else will join
 * (which would hold its key, and RECOVERs for its dead members, for good). */
static void test_partial_stale_ready_after_end(void **state) {
  sched_t *s = three_nodes(95);
  sched_key_t k = K(95, 0);
  uint32_t live[5] = {1, 2, 3, 5, 6};
  (void)state;
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(partial(s, k, 3, 4, 2, 3), 0); /* node 1: member 3 (worker 4) holds {2, 3} */
  assert_int_equal(partial(s, k, 4, 5, 4, 5), 0);
  finish_ok(s);
  ended(live, 5, DRED_OK, 3, 0);
  assert_int_equal(sched_instances(s), 0);
  assert_int_equal(wfail(s, 4), 0); /* the folder dies after the end */
  drain(s);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0); /* member 2 gives up: too late */
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_instances(s), 0);
  assert_int_equal(sched_stale_readys(s), 1);
  /* the next reduction of the group starts as ever */
  assert_int_equal(ready(s, K(95, 1), 2, 3, prm(0, 1)), 0);
  assert_int_equal(sched_instances(s), 1);
  sched_free(s);
}

/* The partial's holder dies while its buffer waits: each covered member is recovered on
 * its own -- member 2 from its own worker, member 3 from where common/placement.c put
 * its copy -- and the reduction ends exact, each counted once. */
static void test_partial_holder_dies(void **state) {
  sched_t *s = three_nodes(91);
  sched_key_t k = K(91, 0);
  uint32_t live[5] = {1, 2, 3, 5, 6}, rep3, nodes[7] = {0, 0, 0, 1, 1, 2, 2},
           workers[6] = {1, 2, 3, 4, 5, 6};
  (void)state;
  assert_int_equal(dred_place_replicas(6, workers, nodes, NULL, 3, 1, &rep3), 1);
  assert_int_equal(partial(s, k, 3, 4, 2, 3), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(wfail(s, 4), 0);
  assert_int_equal(drain(s), 2);
  is_recover(&A[0], 3, 2);
  is_recover(&A[1], rep3, 3);
  assert_int_equal(rec_ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(rec_ready(s, k, 3, rep3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 3, rep3, 2, 3);
  /* a survivor's second partial of the same node meets members already covered: refused,
   * nothing recovered twice */
  assert_int_equal(partial(s, k, 2, 3, 2, 3), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(partial(s, k, 4, 5, 4, 5), 0);
  assert_int_equal(drain(s), 1); /* arrival order after a failure: 0 with 1 */
  is_task(&A[0], 2, 1, 2, 0, 1);
  assert_int_equal(ok(s, 1, 3), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 3, 5, 3, 4, 2); /* node 2's partial (queued first) with {2, 3} */
  assert_int_equal(ok(s, 2, 1), 0);
  assert_int_equal(ok(s, 3, 5), 0);
  assert_int_equal(drain(s), 3);
  is_task(&A[2], 4, 1, 5, 0, 4);
  assert_int_equal(ok(s, 4, 1), 0);
  drain(s);
  ended(live, 5, DRED_OK, 4, 2);
  assert_null(sent_to(PROTO_END, 4));
  sched_free(s);
}

/* A member the master is already recovering (it died before anything of it came) is in a
 * survivor's partial: refused, and the partial's other member is asked for its own
 * operand.  The reduction ends with each counted once.  A partial that leaves the dead
 * member out is taken as it is. */
static void test_partial_meets_member_in_recovery(void **state) {
  sched_t *s = three_nodes(92);
  sched_key_t k = K(92, 0);
  uint32_t live[5] = {1, 2, 3, 5, 6}, only2[1] = {2};
  (void)state;
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(wfail(s, 4), 0); /* member 3 dies before its node's partial came */
  assert_int_equal(drain(s), 1);
  assert_true(is_send(&A[0], PROTO_RECOVER));
  assert_int_equal(A[0].msg.u.recover.member, 3);
  uint32_t asked = A[0].worker;
  assert_int_equal(partial(s, k, 2, 3, 2, 3), 0); /* it had arrived in the slot */
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 3, 2); /* member 2 alone, from its own worker */
  assert_int_equal(rec_ready(s, k, 3, asked, prm(0, 1)), 0);
  assert_int_equal(rec_ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(partial(s, k, 4, 5, 4, 5), 0);
  finish_ok(s);
  ended(live, 5, DRED_OK, 4, 2);
  sched_free(s);

  s = three_nodes(93);
  k = K(93, 0);
  assert_int_equal(wfail(s, 4), 0);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  drain(s); /* the dead member's RECOVER */
  assert_int_equal(partial_p(s, k, 2, 3, prm(0, 1), only2, 1, 6), 0);
  assert_int_equal(drain(s), 1); /* taken, nothing recovered: arrival order pairs it */
  is_task(&A[0], 1, 1, 3, 0, 2);
  sched_free(s);
}

/* A member that sent its own READY is then named in a partial: refused, the other member
 * recovered from its own worker; and the READY of a member already covered by a partial
 * (sent when its partial's folder died, partial.c) is ignored. */
static void test_partial_meets_arrived_member(void **state) {
  sched_t *s = three_nodes(94);
  sched_key_t k = K(94, 0);
  (void)state;
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(partial(s, k, 3, 4, 2, 3), 0);
  assert_int_equal(drain(s), 1);
  is_recover(&A[0], 4, 3);
  assert_int_equal(rec_ready(s, k, 3, 4, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1); /* each once: member 2's own READY with 3's operand */
  is_task(&A[0], 1, 3, 4, 2, 3);
  sched_free(s);

  s = three_nodes(95);
  k = K(95, 0);
  assert_int_equal(partial(s, k, 3, 4, 2, 3), 0);
  assert_int_equal(ready(s, k, 2, 3, prm(0, 1)), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_queue_len(s, k), 1);
  sched_free(s);
}

/* A partial that disagrees fails the reduction for everyone, its covered members
 * included; covered members of a failed reduction are told at once. */
static void test_partial_mismatch(void **state) {
  sched_t *s = three_nodes(96);
  sched_key_t k = K(96, 0);
  proto_msg_t other = prm(0, 1);
  uint32_t both[2] = {2, 3}, node2[2] = {4, 5}, all[6] = {1, 2, 3, 4, 5, 6};
  (void)state;
  other.u.ready.count = 99;
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(partial_p(s, k, 3, 4, other, both, 2, 6), 0);
  drain(s);
  assert_int_equal(NA, 3); /* the root and the two covered members */
  is_end(sent_to(PROTO_END, 1), 1, DRED_ERR_MISMATCH);
  is_end(sent_to(PROTO_END, 3), 3, DRED_ERR_MISMATCH);
  is_end(sent_to(PROTO_END, 4), 4, DRED_ERR_MISMATCH);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(partial_p(s, k, 4, 5, prm(0, 1), node2, 2, 6), 0);
  drain(s);
  ended(all + 4, 2, DRED_ERR_MISMATCH, 0, 0);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* A covered member that dies costs nothing: its operand is inside its node's partial. */
static void test_partial_covered_member_dies(void **state) {
  sched_t *s = three_nodes(99);
  sched_key_t k = K(99, 0);
  uint32_t live[5] = {1, 2, 4, 5, 6};
  (void)state;
  assert_int_equal(partial(s, k, 3, 4, 2, 3), 0);
  assert_int_equal(wfail(s, 3), 0);
  assert_int_equal(drain(s), 0); /* no RECOVER */
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(partial(s, k, 4, 5, 4, 5), 0);
  finish_ok(s);
  ended(live, 5, DRED_OK, 3, 0);
  assert_null(sent_to(PROTO_END, 3));
  sched_free(s);
}

/* What no worker sends is refused and changes nothing: a cover of the wrong length, a
 * member outside the group, the root in another member's partial, a non-commutative
 * partial that is not a run of ranks. */
static void test_partial_bad(void **state) {
  sched_t *s = three_nodes(97);
  sched_key_t k = K(97, 0);
  uint32_t with_root[2] = {0, 1}, gap[2] = {1, 3}, run[2] = {2, 3}, far[2] = {2, 7};
  (void)state;
  assert_int_equal(partial_p(s, k, 1, 2, prm(0, 1), with_root, 2, 6), DRED_ERR_ARG);
  assert_int_equal(partial_p(s, k, 2, 3, prm(0, 1), run, 2, 17), DRED_ERR_ARG);
  assert_int_equal(partial_p(s, k, 2, 3, prm(0, 1), far, 2, 16), DRED_ERR_ARG);
  assert_int_equal(partial_p(s, k, 2, 3, prm(0, 1), far, 2, 6), DRED_ERR_ARG);
  assert_int_equal(partial_p(s, k, 3, 4, prm(0, 0), gap, 2, 6), DRED_ERR_ARG);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_instances(s), 0);
  /* the root may hold its own node's partial; a run of ranks is a non-commutative one */
  assert_int_equal(partial_p(s, K(98, 0), 0, 1, prm(0, 0), with_root, 2, 6), DRED_ERR_ARG);
  group_seq(s, 98, 6);
  assert_int_equal(partial_p(s, K(98, 0), 0, 1, prm(0, 0), with_root, 2, 6), 0);
  assert_int_equal(partial_p(s, K(98, 0), 2, 3, prm(0, 0), run, 2, 6), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 1, 1, 3, 0, 2);
  sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_partial_pairs_as_one),
      cmocka_unit_test(test_partial_stale_ready_after_end),
      cmocka_unit_test(test_partial_holder_dies),
      cmocka_unit_test(test_partial_meets_member_in_recovery),
      cmocka_unit_test(test_partial_meets_arrived_member),
      cmocka_unit_test(test_partial_covered_member_dies),
      cmocka_unit_test(test_partial_mismatch),
      cmocka_unit_test(test_partial_bad),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
