/*
 * test_sched_absorb.c -- in-place absorption in the scheduler (master/sched/sched_recover.c):
 * TASK.absorb, units of members whose snapshots absorbed others, RECOVER's last, tentative
 * and single, and how each dead executor or provider is recovered without counting an
 * operand twice.  A buffer's address here counts the operands in it, so the final buffer
 * shows whether each operand went in exactly once.
 *
 * Events and expected actions are built by tests/unit/sched_harness.h.
 */
#include "sched_harness.h"

/* ---- in-place absorption (sched_recover.c: units, last, tentative, single) ------------ */

/* In these tests a buffer's address names its contents: 4 bits per member count how many
 * times that member's operand is in it.  A DONE's buffer is then the sum of both sides'
 * addresses, an absorbing DONE's the same sum, and a result that misses an operand or
 * counts one twice shows in the root's final address (all_ops). */
#define NOM PROTO_NO_MEMBER
#define OP(k) (1ull << (4 * (k)))

static uint64_t all_ops(uint32_t n) {
  uint64_t a = 0;
  uint32_t k;
  for (k = 0; k < n; k++) a += OP(k);
  return a;
}

/* Member m's READY from its own worker w: buffer OP(m), `snap` its snapshot flag, and the
 * replica holders it announces. */
static int ready_ab(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p, int snap,
                    uint8_t nrep, const uint32_t *rep) {
  proto_msg_t r = ready_msg(k, m, p);
  r.u.ready.buf.addr = OP(m);
  r.u.ready.snap = (uint8_t)snap;
  r.u.ready.nreplicas = nrep;
  if (nrep > 0) memcpy(r.u.ready.replicas, rep, nrep * sizeof *rep);
  return feed(s, w, &r);
}

static int ready_snap(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p) {
  return ready_ab(s, k, m, w, p, 1, 0, NULL);
}

/* A recovered READY for member m from worker w holding `addr`, with its absorption flags. */
static int rec_ab(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p, uint64_t addr,
                  int snap, int unit, int absorbed) {
  proto_msg_t r = ready_msg(k, m, p);
  r.u.ready.buf.addr = addr;
  r.u.ready.recovered = 1;
  r.u.ready.snap = (uint8_t)snap;
  r.u.ready.unit = (uint8_t)unit;
  r.u.ready.absorbed = (uint8_t)absorbed;
  return feed(s, w, &r);
}

static int done_ab(sched_t *s, uint64_t id, uint32_t w, uint32_t st, uint64_t addr, int absorbed) {
  return done_full(s, id, w, st, 10, addr, absorbed);
}

static void is_task_ab(const sched_action_t *a, uint64_t id, uint32_t exec, uint32_t prov,
                       uint32_t em, uint32_t pm, int absorb) {
  is_task(a, id, exec, prov, em, pm);
  assert_int_equal(a->msg.u.task.absorb, absorb);
}

static void is_recover_ab(const sched_action_t *a, uint32_t w, uint32_t m, uint32_t last,
                          uint32_t tentative, int single) {
  is_recover(a, w, m);
  assert_int_equal(a->msg.u.recover.last, last);
  assert_int_equal(a->msg.u.recover.tentative, tentative);
  assert_int_equal(a->msg.u.recover.single, single);
}

/* Drive an instance of group_seq members (member k on worker k+1) to its end: every TASK
 * is answered with an out-of-place DONE OK whose buffer is the sum of both sides (cur[]:
 * each holder member's buffer, kept up to date), and nothing else may be asked (no
 * RECOVER).  Then every live member got END OK once, the dead none, and the root's
 * buffer counts every operand once.  Returns the journal's recovered count.  With use_a
 * the actions of the last drain (A[]) are taken first: the caller looked at them but
 * answered none. */
static uint32_t finish_from(sched_t *s, uint32_t n, uint32_t root, uint64_t *cur, int use_a) {
  struct { uint64_t id; uint32_t w, em; uint64_t pbuf; } pt[64];
  size_t np = 0, i;
  int ends[64] = {0};
  uint32_t k, recovered = 0;
  int journaled = 0;
  for (;;) {
    if (!use_a) drain(s);
    use_a = 0;
    for (i = 0; i < NA; i++) {
      const sched_action_t *a = &A[i];
      if (is_send(a, PROTO_TASK)) {
        assert_true(np < 64);
        assert_int_equal(a->msg.u.task.buf.addr, cur[a->msg.u.task.prov_member]);
        pt[np].id = a->msg.u.task.task_id;
        pt[np].w = a->worker;
        pt[np].em = a->msg.u.task.exec_member;
        pt[np].pbuf = a->msg.u.task.buf.addr;
        np++;
      } else if (is_send(a, PROTO_END)) {
        assert_int_equal(a->msg.u.end.status, DRED_OK);
        assert_true(a->worker >= 1 && a->worker <= n);
        ends[a->worker - 1]++;
      } else if (a->type == SCHED_ACT_JOURNAL_REDUCTION) {
        assert_int_equal(a->u.jred.status, DRED_OK);
        recovered = a->u.jred.recovered;
        journaled = 1;
      } else if (a->type != SCHED_ACT_JOURNAL_TASK) {
        fail_msg("finish: unexpected action (a RECOVER?)");
      }
    }
    if (journaled) break;
    assert_true(np > 0); /* nothing in flight and not ended: it would hang */
    cur[pt[0].em] += pt[0].pbuf;
    assert_int_equal(done_ab(s, pt[0].id, pt[0].w, PROTO_TASK_OK, cur[pt[0].em], 0), 0);
    memmove(&pt[0], &pt[1], (np - 1) * sizeof pt[0]);
    np--;
  }
  assert_int_equal(np, 0);
  assert_true(cur[root] == all_ops(n)); /* every operand exactly once */
  for (k = 0; k < n; k++) assert_int_equal(ends[k], sched_worker_alive(s, k + 1) ? 1 : 0);
  return recovered;
}

/* finish() after draining what is pending; finish_from(..., 1) takes A[] as drained last. */
static uint32_t finish(sched_t *s, uint32_t n, uint32_t root, uint64_t *cur) {
  return finish_from(s, n, root, cur, 0);
}

/* TASK.absorb is 1 only when both messages are their members' snapshots (READY snap), the
 * executor is not the root and both holders are on one node. */
static void test_absorb_flag_rules(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  proto_msg_t p = prm(2, 1);
  group_seq(s, 90, 3);
  /* both snapshots, one node (the default) */
  assert_int_equal(ready_snap(s, K(90, 0), 0, 1, p), 0);
  assert_int_equal(ready_snap(s, K(90, 0), 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 1);
  /* a snapshot and a plain buffer, either way round */
  assert_int_equal(ready_snap(s, K(90, 1), 0, 1, p), 0);
  assert_int_equal(ready_ab(s, K(90, 1), 1, 2, p, 0, 0, NULL), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 1, 2, 0, 1, 0);
  assert_int_equal(ready_ab(s, K(90, 2), 0, 1, p, 0, 0, NULL), 0);
  assert_int_equal(ready_snap(s, K(90, 2), 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 3, 1, 2, 0, 1, 0);
  /* the root's READY never makes a snapshot message, snap or not: the root executes */
  assert_int_equal(ready_snap(s, K(90, 3), 2, 3, p), 0);
  assert_int_equal(ready_snap(s, K(90, 3), 0, 1, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 4, 3, 1, 2, 0, 0);
  sched_free(s);

  /* nodes: workers 1 and 3 on node 0, worker 2 on node 1, worker 4 (the roots) on node 2 */
  s = sched_new(4, SCHED_POLICY_FIRST);
  assert_int_equal(sched_set_node(s, 2, 1), 0);
  assert_int_equal(sched_set_node(s, 4, 2), 0);
  group(s, 92, 3, (const uint32_t[]){1, 2, 4});
  p = prm(2, 1);
  assert_int_equal(ready_snap(s, K(92, 0), 0, 1, p), 0);
  assert_int_equal(ready_snap(s, K(92, 0), 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 0); /* across nodes: never */
  group_seq(s, 94, 4);
  p = prm(3, 1);
  assert_int_equal(ready_snap(s, K(94, 0), 0, 1, p), 0);
  assert_int_equal(ready_snap(s, K(94, 0), 2, 3, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 1, 3, 0, 2, 1); /* one node */
  sched_free(s);
}

/* An absorbing DONE keeps the merged message a snapshot message (the next task may absorb
 * again); an out-of-place DONE of the same kind of task does not. */
static void test_absorb_done_keeps_or_ends_snapshot(void **state) {
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  sched_key_t k = K(93, 0);
  proto_msg_t p = prm(4, 1);
  uint64_t cur[5] = {OP(0), OP(1), OP(2), OP(3), OP(4)};
  group_seq(s, 93, 5);
  assert_int_equal(ready_snap(s, k, 0, 1, p), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 1);
  cur[0] = OP(0) + OP(1);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_OK, cur[0], 1), 0);
  assert_int_equal(drain(s), 1);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 1, 3, 0, 2, 1); /* still member 0's snapshot */
  cur[0] += OP(2);
  assert_int_equal(done_ab(s, 2, 1, PROTO_TASK_OK, cur[0], 0), 0); /* out of place */
  drain(s);
  assert_int_equal(ready_snap(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 3, 1, 4, 0, 3, 0); /* a buffer of its own now */
  cur[0] += OP(3);
  assert_int_equal(done_ab(s, 3, 1, PROTO_TASK_OK, cur[0], 0), 0);
  assert_int_equal(ready_snap(s, k, 4, 5, p), 0);
  assert_int_equal(finish(s, 5, 4, cur), 0);
  sched_free(s);
}

/* DONE absorbed = 1 is refused (DRED_ERR_ARG, nothing changes) for a task that was not
 * dispatched to absorb, and with any status but OK. */
static void test_absorb_done_validity(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  proto_msg_t p = prm(2, 1);
  uint64_t cur0[3] = {OP(0), OP(1), OP(2)}, cur1[3] = {OP(0), OP(1), OP(2)};
  group_seq(s, 94, 3);
  assert_int_equal(ready_snap(s, K(94, 0), 0, 1, p), 0);
  assert_int_equal(ready_ab(s, K(94, 0), 1, 2, p, 0, 0, NULL), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 0);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_OK, OP(0) + OP(1), 1), DRED_ERR_ARG);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_tasks_in_flight(s), 1);

  assert_int_equal(ready_snap(s, K(94, 1), 0, 1, p), 0);
  assert_int_equal(ready_snap(s, K(94, 1), 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 1, 2, 0, 1, 1);
  assert_int_equal(done_ab(s, 2, 1, PROTO_TASK_PROVIDER_LOST, OP(0), 1), DRED_ERR_ARG);
  assert_int_equal(done_ab(s, 2, 1, PROTO_TASK_ERROR, OP(0), 1), DRED_ERR_ARG);
  assert_int_equal(done_ab(s, 2, 2, PROTO_TASK_OK, OP(0) + OP(1), 1), DRED_ERR_ARG); /* provider */
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_tasks_in_flight(s), 2);
  assert_int_equal(sched_queue_len(s, K(94, 1)), 0);

  /* and both tasks still finish normally */
  cur0[0] = OP(0) + OP(1);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_OK, cur0[0], 0), 0);
  cur1[0] = OP(0) + OP(1);
  assert_int_equal(done_ab(s, 2, 1, PROTO_TASK_OK, cur1[0], 1), 0);
  assert_int_equal(drain(s), 2);
  is_jtask(&A[0], 1, PROTO_TASK_OK);
  is_jtask(&A[1], 2, PROTO_TASK_OK);
  assert_int_equal(ready_snap(s, K(94, 0), 2, 3, p), 0);
  assert_int_equal(finish(s, 3, 2, cur0), 0);
  assert_int_equal(ready_snap(s, K(94, 1), 2, 3, p), 0);
  assert_int_equal(finish(s, 3, 2, cur1), 0);
  sched_free(s);
}

/* Member 0 absorbed member 1 in place; then its worker dies with the merged message.  One
 * RECOVER goes out, for the unit's root (member 0, last = 1), and none for member 1, whose
 * operand is in member 0's snapshot -- not even when member 1's own worker dies too.  The
 * answer (unit = 1, from a holder that is not member 0's worker) covers both and is no
 * snapshot message; the reduction completes with every operand counted once. */
static void test_absorb_lost_unit_one_recover(void **state) {
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  sched_key_t k = K(95, 0);
  proto_msg_t p = prm(3, 1);
  uint32_t rep0 = 5;
  uint64_t cur[4] = {OP(0), OP(1), OP(2), OP(3)};
  group_seq(s, 95, 4);
  assert_int_equal(ready_ab(s, k, 0, 1, p, 1, 1, &rep0), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 1);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_OK, OP(0) + OP(1), 1), 0);
  assert_int_equal(drain(s), 1);
  assert_int_equal(wfail(s, 2), 0); /* the absorbed provider: nothing is lost */
  assert_int_equal(drain(s), 0);
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 1); /* exactly one */
  is_recover_ab(&A[0], 5, 0, 1, NOM, 0);
  assert_int_equal(sched_queue_len(s, k), 0);
  assert_int_equal(rec_ab(s, k, 1, 5, p, OP(1), 0, 0, 0), DRED_ERR_ARG); /* never asked */
  assert_int_equal(rec_ab(s, k, 0, 5, p, OP(0) + OP(1), 1, 1, 0), 0);
  cur[0] = OP(0) + OP(1);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 5, 3, 0, 2, 0); /* a copy at worker 5: not a snapshot message */
  cur[0] += OP(2);
  assert_int_equal(done_ab(s, 2, 5, PROTO_TASK_OK, cur[0], 0), 0);
  assert_int_equal(ready_ab(s, k, 3, 4, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 4, 3, cur), 1);
  sched_free(s);
}

/* Units nest: 0 absorbs 1, 2 absorbs 3, then 0 absorbs 2 (unit(0) = {0,1,2,3}).  The root's
 * task reports PROVIDER_LOST: one RECOVER, for member 0 with last = 2, to its own live
 * worker; its answer (its snapshot: unit = 1) covers all four, and the instance completes
 * with every operand once. */
static void test_absorb_unit_answer_completes(void **state) {
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  sched_key_t k = K(96, 0);
  proto_msg_t p = prm(4, 1);
  uint64_t cur[5] = {OP(0), OP(1), OP(2), OP(3), OP(4)};
  group_seq(s, 96, 5);
  assert_int_equal(ready_snap(s, k, 0, 1, p), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(ready_snap(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 2);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 1);
  is_task_ab(&A[1], 2, 3, 4, 2, 3, 1);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_OK, OP(0) + OP(1), 1), 0);
  assert_int_equal(done_ab(s, 2, 3, PROTO_TASK_OK, OP(2) + OP(3), 1), 0);
  assert_int_equal(drain(s), 3);
  is_task_ab(&A[2], 3, 1, 3, 0, 2, 1);
  assert_int_equal(done_ab(s, 3, 1, PROTO_TASK_OK, all_ops(4), 1), 0);
  assert_int_equal(ready_ab(s, k, 4, 5, p, 0, 0, NULL), 0);
  assert_int_equal(drain(s), 2);
  is_task_ab(&A[1], 4, 5, 1, 4, 0, 0);
  assert_int_equal(done_ab(s, 4, 5, PROTO_TASK_PROVIDER_LOST, OP(4), 0), 0);
  assert_int_equal(drain(s), 2);
  is_jtask(&A[0], 4, PROTO_TASK_PROVIDER_LOST);
  is_recover_ab(&A[1], 1, 0, 2, NOM, 0); /* one RECOVER for the whole unit */
  assert_int_equal(rec_ab(s, k, 0, 1, p, all_ops(4), 1, 1, 0), 0);
  cur[0] = all_ops(4);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 5, 5, 1, 4, 0, 0);
  assert_int_equal(finish_from(s, 5, 4, cur, 1), 1);
  sched_free(s);
}

/* The same nested units, but member 0's worker dies and its replica holder answers with
 * member 0's operand alone (unit = 0): its direct children 1 and 2 become unit roots and
 * are recovered on their own (2 with last = 3), grandchild 3 waits inside 2's unit.  Member
 * 0's snapshot no longer stands for it: its next RECOVER carries single = 1, and a unit
 * answer to it is refused. */
static void test_absorb_unit0_answer_splits(void **state) {
  sched_t *s = sched_new(7, SCHED_POLICY_FIRST);
  sched_key_t k = K(97, 0);
  proto_msg_t p = prm(4, 1);
  uint32_t rep0 = 6;
  uint64_t cur[5] = {OP(0), OP(1), OP(2), OP(3), OP(4)};
  group_seq(s, 97, 5);
  assert_int_equal(ready_ab(s, k, 0, 1, p, 1, 1, &rep0), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(ready_snap(s, k, 3, 4, p), 0);
  assert_int_equal(drain(s), 2);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_OK, OP(0) + OP(1), 1), 0);
  assert_int_equal(done_ab(s, 2, 3, PROTO_TASK_OK, OP(2) + OP(3), 1), 0);
  assert_int_equal(drain(s), 3);
  is_task_ab(&A[2], 3, 1, 3, 0, 2, 1);
  assert_int_equal(done_ab(s, 3, 1, PROTO_TASK_OK, all_ops(4), 1), 0);
  assert_int_equal(drain(s), 1);

  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 6, 0, 2, NOM, 0);
  assert_int_equal(rec_ab(s, k, 0, 6, p, OP(0), 1, 0, 0), 0); /* its operand alone */
  cur[0] = OP(0);
  assert_int_equal(drain(s), 2); /* the detached children, nothing for the grandchild */
  is_recover_ab(&A[0], 2, 1, NOM, NOM, 0);
  is_recover_ab(&A[1], 3, 2, 3, NOM, 0);
  assert_int_equal(sched_queue_len(s, k), 1);
  assert_int_equal(rec_ab(s, k, 3, 4, p, OP(3), 1, 1, 0), DRED_ERR_ARG); /* waits via 2 */

  /* member 0's copy is lost again: alone from now on */
  assert_int_equal(wfail(s, 6), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 2, 0, NOM, NOM, 1);
  assert_int_equal(rec_ab(s, k, 0, 2, p, OP(0) + OP(1), 0, 1, 0), DRED_ERR_ARG);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_queue_len(s, k), 0);
  assert_int_equal(rec_ab(s, k, 0, 2, p, OP(0), 0, 0, 0), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_queue_len(s, k), 1);

  assert_int_equal(rec_ab(s, k, 2, 3, p, OP(2) + OP(3), 1, 1, 0), 0);
  cur[2] = OP(2) + OP(3);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 4, 2, 3, 0, 2, 0); /* {0} at worker 2 is no snapshot message */
  cur[0] += cur[2];
  assert_int_equal(done_ab(s, 4, 2, PROTO_TASK_OK, cur[0], 0), 0);
  assert_int_equal(rec_ab(s, k, 1, 2, p, OP(1), 1, 1, 0), 0);
  assert_int_equal(ready_ab(s, k, 4, 5, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 5, 4, cur), 4);
  sched_free(s);
}

/* A unit = 0 answer for a member whose snapshot never absorbed anything changes nothing
 * about it: its next RECOVER may still be answered with its snapshot (single = 0). */
static void test_absorb_unit0_without_absorption(void **state) {
  sched_t *s = sched_new(5, SCHED_POLICY_FIRST);
  sched_key_t k = K(98, 0);
  proto_msg_t p = prm(2, 1);
  uint32_t rep0 = 4;
  uint64_t cur[3] = {OP(0), OP(1), OP(2)};
  group_seq(s, 98, 3);
  assert_int_equal(ready_ab(s, k, 0, 1, p, 1, 1, &rep0), 0);
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 4, 0, NOM, NOM, 0);
  assert_int_equal(rec_ab(s, k, 0, 4, p, OP(0), 0, 0, 0), 0);
  assert_int_equal(wfail(s, 4), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 2, 0, NOM, NOM, 0);
  assert_int_equal(rec_ab(s, k, 0, 2, p, OP(0), 0, 1, 0), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(finish(s, 3, 2, cur), 2);
  sched_free(s);
}

/* A recovered READY makes a snapshot message (one a later task may absorb into) only
 * when the member's own worker answers with its snapshot: snap = 1 and unit = 1.  Member
 * 1's buffer is lost to a PROVIDER_LOST while its worker is alive (the executor's read
 * failed before any death was declared), so its own worker answers, with (snap, unit);
 * member 0's snapshot message, kept by the executor, takes the answer in the next task,
 * which absorbs iff the answer makes a snapshot message.  (A node peer's snap = 1:
 * test_absorb_lost_unit_one_recover.) */
static void recovered_snap_case(int snap, int unit, int want) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(108, 0);
  proto_msg_t p = prm(3, 1);
  uint64_t cur[4] = {OP(0), OP(1), OP(2), OP(3)};
  group_seq(s, 108, 4);
  assert_int_equal(ready_snap(s, k, 0, 1, p), 0);
  assert_int_equal(ready_ab(s, k, 1, 2, p, 0, 0, NULL), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 0);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_PROVIDER_LOST, OP(0), 0), 0);
  assert_int_equal(drain(s), 2);
  is_jtask(&A[0], 1, PROTO_TASK_PROVIDER_LOST);
  is_recover_ab(&A[1], 2, 1, NOM, NOM, 0);
  assert_int_equal(rec_ab(s, k, 1, 2, p, OP(1), snap, unit, 0), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 1, 2, 0, 1, want);
  cur[0] += OP(1);
  assert_int_equal(done_ab(s, 2, 1, PROTO_TASK_OK, cur[0], want), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(ready_ab(s, k, 3, 4, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 4, 3, cur), 1);
  sched_free(s);
}

static void test_absorb_recovered_snapshot_message(void **state) {
  recovered_snap_case(1, 1, 1);
  recovered_snap_case(0, 1, 0);
  recovered_snap_case(1, 0, 0);
}

/* The executor of an absorbing task dies.  Group of 4 (root 3, worker 4), member k on
 * worker k+1; member 0's READY announces `nrep` replica holders.  Afterwards the RECOVER
 * for member 0 (tentative = 1) is the only action and the provider's message is held:
 * not queued, and member 2's message arriving meanwhile is not paired with it. */
static sched_t *held_setup(sched_key_t k, uint8_t nrep, const uint32_t *rep) {
  sched_t *s = sched_new(7, SCHED_POLICY_FIRST);
  proto_msg_t p = prm(3, 1);
  group_seq(s, k.group, 4);
  assert_int_equal(ready_ab(s, k, 0, 1, p, 1, nrep, rep), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 1);
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], nrep > 0 ? rep[0] : 2, 0, NOM, 1, 0);
  assert_int_equal(sched_queue_len(s, k), 0);
  assert_int_equal(sched_tasks_in_flight(s), 0);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_OK, OP(0) + OP(1), 1), DRED_ERR_ARG);
  return s;
}

/* The node peer finished the absorption (absorbed = 1): the held provider is in the
 * answer, no RECOVER for member 1, every operand once. */
static void test_absorb_exec_dies_absorbed(void **state) {
  sched_key_t k = K(99, 0);
  proto_msg_t p = prm(3, 1);
  uint64_t cur[4] = {OP(0), OP(1), OP(2), OP(3)};
  sched_t *s = held_setup(k, 0, NULL); /* no replicas: member 1's worker is asked */
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 0); /* the held provider is not paired meanwhile */
  assert_int_equal(sched_queue_len(s, k), 1);
  assert_int_equal(rec_ab(s, k, 0, 2, p, OP(0) + OP(1), 0, 1, 1), 0);
  cur[0] = OP(0) + OP(1);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 3, 2, 2, 0, 0);
  cur[2] += cur[0];
  assert_int_equal(done_ab(s, 2, 3, PROTO_TASK_OK, cur[2], 0), 0);
  assert_int_equal(ready_ab(s, k, 3, 4, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 4, 3, cur), 1);
  sched_free(s);
}

/* Not absorbed (unit = 1, absorbed = 0): the provider's message goes back to the head of
 * the queue and is dispatched next, ahead of member 2's earlier one and of the answer;
 * it is still a snapshot message. */
static void test_absorb_exec_dies_not_absorbed(void **state) {
  sched_key_t k = K(100, 0);
  proto_msg_t p = prm(3, 1);
  uint64_t cur[4] = {OP(0), OP(1), OP(2), OP(3)};
  sched_t *s = held_setup(k, 0, NULL);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(rec_ab(s, k, 0, 2, p, OP(0), 0, 1, 0), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 2, 3, 1, 2, 1);
  assert_int_equal(sched_queue_len(s, k), 1); /* the answer */
  cur[1] += OP(2);
  assert_int_equal(done_ab(s, 2, 2, PROTO_TASK_OK, cur[1], 1), 0);
  assert_int_equal(ready_ab(s, k, 3, 4, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 4, 3, cur), 1);
  sched_free(s);
}

/* Answered by a replica holder with member 0's operand alone: the provider goes back to
 * the head as above, and since member 0's snapshot may hold part of the provider, a later
 * RECOVER of member 0 asks for it alone (single = 1). */
static void test_absorb_exec_dies_unit0_then_single(void **state) {
  sched_key_t k = K(101, 0);
  proto_msg_t p = prm(3, 1);
  uint32_t rep0 = 5;
  uint64_t cur[4] = {OP(0), OP(1), OP(2), OP(3)};
  sched_t *s = held_setup(k, 1, &rep0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(rec_ab(s, k, 0, 5, p, OP(0), 0, 0, 0), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 2, 3, 1, 2, 1);
  assert_int_equal(wfail(s, 5), 0); /* the holder of member 0's copy */
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 2, 0, NOM, NOM, 1);
  assert_int_equal(rec_ab(s, k, 0, 2, p, OP(0), 0, 1, 0), DRED_ERR_ARG);
  assert_int_equal(rec_ab(s, k, 0, 2, p, OP(0), 0, 0, 0), 0);
  cur[1] += OP(2);
  assert_int_equal(done_ab(s, 2, 2, PROTO_TASK_OK, cur[1], 0), 0);
  assert_int_equal(ready_ab(s, k, 3, 4, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 4, 3, cur), 2);
  sched_free(s);
}

/* The provider's worker died too.  Not absorbed: the held message is lost, and member 1
 * is recovered on its own.  Absorbed: nothing more to recover.  The asked worker dying
 * moves the RECOVER on with the same fields. */
static void test_absorb_exec_and_provider_die(void **state) {
  sched_key_t k = K(102, 0);
  proto_msg_t p = prm(3, 1);
  uint32_t rep0 = 5;
  uint64_t cur[4] = {OP(0), OP(1), OP(2), OP(3)};
  sched_t *s = held_setup(k, 1, &rep0);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 0); /* member 1 is in the held message */
  assert_int_equal(rec_ab(s, k, 0, 5, p, OP(0), 0, 0, 0), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 3, 1, NOM, NOM, 0); /* member 1: its next member's worker */
  assert_int_equal(rec_ab(s, k, 1, 3, p, OP(1), 0, 0, 0), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 5, 3, 0, 1, 0);
  cur[0] += OP(1);
  assert_int_equal(done_ab(s, 2, 5, PROTO_TASK_OK, cur[0], 0), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(ready_ab(s, k, 3, 4, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 4, 3, cur), 2);
  sched_free(s);

  k = K(103, 0);
  cur[0] = OP(0), cur[1] = OP(1), cur[2] = OP(2), cur[3] = OP(3);
  s = held_setup(k, 0, NULL); /* asks worker 2, the provider's */
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 3, 0, NOM, 1, 0); /* the next holder, the same fields */
  assert_int_equal(rec_ab(s, k, 0, 3, p, OP(0) + OP(1), 0, 1, 1), 0);
  cur[0] = OP(0) + OP(1);
  assert_int_equal(drain(s), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(ready_ab(s, k, 3, 4, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 4, 3, cur), 1);
  sched_free(s);
}

/* RECOVER_FAILED walks member 0's holders with the same last, tentative and single; no
 * holder left fails the instance (PROC_FAILED), the held message with it. */
static void test_absorb_recover_failed_keeps_fields(void **state) {
  sched_t *s = sched_new(7, SCHED_POLICY_FIRST);
  sched_key_t k = K(104, 0);
  proto_msg_t p = prm(4, 1);
  uint32_t reps[2] = {6, 7}, w;
  group_seq(s, 104, 5);
  assert_int_equal(ready_ab(s, k, 0, 1, p, 1, 2, reps), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 3, 0, 2, 1);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_OK, OP(0) + OP(2), 1), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 2);
  is_task_ab(&A[1], 2, 1, 2, 0, 1, 1);
  assert_int_equal(wfail(s, 1), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 6, 0, 2, 1, 0);
  assert_int_equal(recfail(s, k, 0, 6, DRED_ERR_PROC_FAILED), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 7, 0, 2, 1, 0);
  assert_int_equal(wfail(s, 7), 0);
  assert_int_equal(drain(s), 1);
  is_recover_ab(&A[0], 2, 0, 2, 1, 0);
  for (w = 2; w <= 5; w++) { /* then the other members in order: none has it */
    if (w > 2) {
      assert_int_equal(drain(s), 1);
      is_recover_ab(&A[0], w, 0, 2, 1, 0);
    }
    assert_int_equal(recfail(s, k, 0, w, DRED_ERR_PROC_FAILED), 0);
  }
  assert_int_equal(drain(s), 2); /* members 1 and 2 arrived, alive: told */
  is_end(&A[0], 2, DRED_ERR_PROC_FAILED);
  is_end(&A[1], 3, DRED_ERR_PROC_FAILED);
  assert_int_equal(ready_snap(s, k, 3, 4, p), 0);
  assert_int_equal(ready_ab(s, k, 4, 5, p, 0, 0, NULL), 0);
  assert_int_equal(drain(s), 3);
  is_end(&A[0], 4, DRED_ERR_PROC_FAILED);
  is_end(&A[1], 5, DRED_ERR_PROC_FAILED);
  assert_int_equal(A[2].type, SCHED_ACT_JOURNAL_REDUCTION);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* Bad answers are refused with DRED_ERR_ARG and change nothing: absorbed = 1 for a member
 * with no tentative absorption (here its own worker answering after a PROVIDER_LOST), a
 * unit when single was asked (test_absorb_unit0_answer_splits). */
static void test_absorb_bad_answers(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(105, 0);
  proto_msg_t p = prm(2, 1);
  uint64_t cur[3] = {OP(0), OP(1), OP(2)};
  group_seq(s, 105, 3);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(ready_snap(s, k, 0, 1, p), 0);
  assert_int_equal(drain(s), 1);
  assert_int_equal(done_ab(s, 1, 3, PROTO_TASK_PROVIDER_LOST, OP(2), 0), 0);
  assert_int_equal(drain(s), 2);
  is_recover_ab(&A[1], 1, 0, NOM, NOM, 0);
  assert_int_equal(rec_ab(s, k, 0, 1, p, OP(0) + OP(1), 1, 1, 1), DRED_ERR_ARG);
  assert_int_equal(drain(s), 0);
  assert_int_equal(sched_queue_len(s, k), 1);
  assert_int_equal(rec_ab(s, k, 0, 1, p, OP(0), 1, 1, 0), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 3, 1, 2, 0, 0);
  cur[2] += OP(0);
  assert_int_equal(done_ab(s, 2, 3, PROTO_TASK_OK, cur[2], 0), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(finish(s, 3, 2, cur), 1);
  sched_free(s);
}

/* An instance that fails while a provider's message is held frees it (the leak check of
 * `make asan` sees it) and tells everyone. */
static void test_absorb_failed_instance_frees_held(void **state) {
  sched_key_t k = K(106, 0);
  sched_t *s = held_setup(k, 0, NULL);
  assert_int_equal(ready_snap(s, k, 2, 3, prm(3, 1)), 0);
  assert_int_equal(wfail(s, 4), 0); /* the root */
  assert_int_equal(drain(s), 3);
  is_end(&A[0], 2, DRED_ERR_ROOT_FAILED);
  is_end(&A[1], 3, DRED_ERR_ROOT_FAILED);
  assert_int_equal(A[2].type, SCHED_ACT_JOURNAL_REDUCTION);
  assert_int_equal(sched_instances(s), 0);
  /* the outstanding RECOVER's answer comes after the end: stale, dropped, nothing started */
  assert_int_equal(rec_ab(s, k, 0, 2, prm(3, 1), OP(0) + OP(1), 0, 1, 1), 0);
  assert_int_equal(sched_instances(s), 0);
  assert_int_equal(sched_stale_readys(s), 1);
  sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_absorb_flag_rules),
      cmocka_unit_test(test_absorb_done_keeps_or_ends_snapshot),
      cmocka_unit_test(test_absorb_done_validity),
      cmocka_unit_test(test_absorb_lost_unit_one_recover),
      cmocka_unit_test(test_absorb_unit_answer_completes),
      cmocka_unit_test(test_absorb_unit0_answer_splits),
      cmocka_unit_test(test_absorb_unit0_without_absorption),
      cmocka_unit_test(test_absorb_recovered_snapshot_message),
      cmocka_unit_test(test_absorb_exec_dies_absorbed),
      cmocka_unit_test(test_absorb_exec_dies_not_absorbed),
      cmocka_unit_test(test_absorb_exec_dies_unit0_then_single),
      cmocka_unit_test(test_absorb_exec_and_provider_die),
      cmocka_unit_test(test_absorb_recover_failed_keeps_fields),
      cmocka_unit_test(test_absorb_bad_answers),
      cmocka_unit_test(test_absorb_failed_instance_frees_held),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
