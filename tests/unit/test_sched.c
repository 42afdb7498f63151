/*
 * test_sched.c -- unit tests of the reduction scheduler (master/sched.c).
 *
 * The scheduler is a pure state machine, so every rule is driven here directly: feed an
 * event, drain the actions, and compare them one by one (type, executor, provider, holder
 * members, exec_is_left, END status per worker, journal fields).  Events are the wire's
 * own messages (common/proto.h) with their sender, built by the helpers below as a worker
 * would send them, and messages come out the same way.  Worker w runs member
 * w-1 in most groups below, so "member k" and "worker k+1" are the same process.
 *
 * In-place absorption (units of members whose snapshots absorbed others, RECOVER's last,
 * tentative and single) has its own section; its buffers' addresses count the operands in
 * them, so the final buffer shows whether each operand went in exactly once.
 *
 * Three tests use a small simulator that plays every worker: it answers each TASK with a
 * TASK_DONE (absorbing in place or not) and each RECOVER with a recovered READY (or
 * RECOVER_FAILED) as dred's worker would, in random order, kills workers at random, and
 * tracks per buffer how many times each operand went into it, so a result that counts an
 * operand twice or misses one is caught.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/placement.h"
#include "../../master/sched.h"

/* ---- helpers ----------------------------------------------------------------------- */

#define MAXACT 4096
static sched_action_t A[MAXACT]; /* the actions of the last drain */
static size_t NA;
static uint64_t g_now; /* time stamped on the next event */

static size_t drain(sched_t *s) {
  NA = 0;
  while (NA < MAXACT && sched_next_action(s, &A[NA])) NA++;
  return NA;
}

static sched_key_t K(uint64_t group, int64_t tag) {
  sched_key_t k = {group, tag};
  return k;
}

/* The READY every member of an instance sends, as far as they must agree on it (the wire's
 * own message, common/proto.h); ready_full() adds who sends it and where its buffer is. */
static proto_msg_t prm(uint32_t root, int commutative) {
  proto_msg_t p;
  memset(&p, 0, sizeof p);
  p.type = PROTO_READY;
  p.u.ready.count = 100;
  p.u.ready.type_size = 4;
  p.u.ready.extent = 4;
  p.u.ready.op = 3; /* a predefined op handle */
  p.u.ready.op_is_user = 0;
  p.u.ready.commutative = (uint8_t)commutative;
  p.u.ready.root = root;
  return p;
}

/* Feed `msg` as the master's adapter does: the decoded message and its sender. */
static int feed(sched_t *s, uint32_t worker, const proto_msg_t *msg) {
  sched_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SCHED_EV_MESSAGE;
  ev.now_ns = g_now;
  ev.worker = worker;
  ev.msg = *msg;
  return sched_feed(s, &ev);
}

static uint64_t bufaddr(uint32_t worker, uint32_t member) { return 1000u * worker + member; }

/* Member m's READY for instance k from worker w, built on the template p. */
static proto_msg_t ready_msg(sched_key_t k, uint32_t m, proto_msg_t p) {
  p.type = PROTO_READY;
  p.u.ready.group = k.group;
  p.u.ready.tag = k.tag;
  p.u.ready.member = m;
  p.u.ready.buf.pool_off = -1;
  return p;
}

static int ready_full(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p,
                      int recovered, uint8_t nrep, const uint32_t *rep) {
  proto_msg_t r = ready_msg(k, m, p);
  r.u.ready.buf.addr = bufaddr(w, m) + (recovered ? 500 : 0);
  r.u.ready.recovered = (uint8_t)recovered;
  r.u.ready.nreplicas = nrep;
  if (nrep > 0) /* more than fit is a bad event, but only the ones that fit are copied */
    memcpy(r.u.ready.replicas, rep,
           (nrep < PROTO_MAX_REPLICAS ? nrep : PROTO_MAX_REPLICAS) * sizeof *rep);
  return feed(s, w, &r);
}

static int ready(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p) {
  return ready_full(s, k, m, w, p, 0, 0, NULL);
}

static int ready_rep(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p,
                     uint32_t replica) {
  return ready_full(s, k, m, w, p, 0, 1, &replica);
}

static int rec_ready(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p) {
  return ready_full(s, k, m, w, p, 1, 0, NULL);
}

/* A DONE from worker w; `error` goes with PROTO_TASK_ERROR. */
static int done_err(sched_t *s, uint64_t id, uint32_t w, uint32_t st, int32_t error,
                    uint64_t exec_ns, uint64_t addr) {
  proto_msg_t d;
  memset(&d, 0, sizeof d);
  d.type = PROTO_DONE;
  d.u.done.task_id = id;
  d.u.done.status = st;
  d.u.done.error = error;
  d.u.done.exec_ns = exec_ns;
  d.u.done.buf.addr = addr;
  d.u.done.buf.pool_off = -1;
  return feed(s, w, &d);
}

static int done(sched_t *s, uint64_t id, uint32_t w, uint32_t st, uint64_t exec_ns,
                uint64_t addr) {
  return done_err(s, id, w, st, 0, exec_ns, addr);
}

static int ok(sched_t *s, uint64_t id, uint32_t w) {
  return done(s, id, w, PROTO_TASK_OK, 10, 90000 + id);
}

static int wfail(sched_t *s, uint32_t w) {
  sched_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SCHED_EV_WORKER_FAILED;
  ev.now_ns = g_now;
  ev.worker = w;
  return sched_feed(s, &ev);
}

/* RECOVER_FAILED and ABANDON: RECOVER's layout, from worker w. */
static int recover_like(sched_t *s, proto_type_t type, sched_key_t k, uint32_t m, uint32_t w,
                        int32_t err) {
  proto_msg_t r;
  memset(&r, 0, sizeof r);
  r.type = type;
  r.u.recover.group = k.group;
  r.u.recover.tag = k.tag;
  r.u.recover.member = m;
  r.u.recover.error = err;
  return feed(s, w, &r);
}

static int recfail(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, int32_t err) {
  return recover_like(s, PROTO_RECOVER_FAILED, k, m, w, err);
}

/* Whether action a sends a message of `type`. */
static int is_send(const sched_action_t *a, proto_type_t type) {
  return a->type == SCHED_ACT_SEND && a->msg.type == type;
}

/* Group `id` of n members; member k runs on workers[k]. */
static void group(sched_t *s, uint64_t id, uint32_t n, const uint32_t *workers) {
  assert_int_equal(sched_group_define(s, id, n, workers), 0);
}

/* Group `id` of n members, member k on worker k+1. */
static void group_seq(sched_t *s, uint64_t id, uint32_t n) {
  uint32_t w[256], k;
  for (k = 0; k < n; k++) w[k] = k + 1;
  group(s, id, n, w);
}

/* Every message action names its instance in the message itself, as the key says. */
static void same_key(const sched_action_t *a, uint64_t group, int64_t tag) {
  assert_int_equal(group, a->key.group);
  assert_int_equal(tag, a->key.tag);
}

static void is_task(const sched_action_t *a, uint64_t id, uint32_t exec, uint32_t prov,
                    uint32_t em, uint32_t pm) {
  assert_true(is_send(a, PROTO_TASK));
  assert_int_equal(a->msg.u.task.task_id, id);
  assert_int_equal(a->worker, exec);
  assert_int_equal(a->msg.u.task.provider, prov);
  assert_int_equal(a->msg.u.task.exec_member, em);
  assert_int_equal(a->msg.u.task.prov_member, pm);
  assert_int_equal(a->msg.u.task.count, 100);
  same_key(a, a->msg.u.task.group, a->msg.u.task.tag);
}

static void is_end(const sched_action_t *a, uint32_t w, int32_t status) {
  assert_true(is_send(a, PROTO_END));
  assert_int_equal(a->worker, w);
  assert_int_equal(a->msg.u.end.status, status);
  same_key(a, a->msg.u.end.group, a->msg.u.end.tag);
}

static void is_recover(const sched_action_t *a, uint32_t w, uint32_t m) {
  assert_true(is_send(a, PROTO_RECOVER));
  assert_int_equal(a->worker, w);
  assert_int_equal(a->msg.u.recover.member, m);
  same_key(a, a->msg.u.recover.group, a->msg.u.recover.tag);
}

static void is_jtask(const sched_action_t *a, uint64_t id, int32_t status) {
  assert_int_equal(a->type, SCHED_ACT_JOURNAL_TASK);
  assert_int_equal(a->u.jtask.task_id, id);
  assert_int_equal(a->u.jtask.status, status);
}

static void is_jred(const sched_action_t *a, uint32_t members, uint32_t tasks, uint32_t recovered,
                    int32_t status) {
  assert_int_equal(a->type, SCHED_ACT_JOURNAL_REDUCTION);
  assert_int_equal(a->u.jred.members, members);
  assert_int_equal(a->u.jred.bytes, 400);
  assert_int_equal(a->u.jred.tasks, tasks);
  assert_int_equal(a->u.jred.recovered, recovered);
  assert_int_equal(a->u.jred.status, status);
}

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

  /* the key is free again: a new instance starts */
  g_now = 70;
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(sched_instances(s), 1);
  assert_int_equal(sched_queue_len(s, k), 1);
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

/* ---- disagreement ------------------------------------------------------------------- */

static void mut_count(proto_msg_t *p) { p->u.ready.count++; }
static void mut_type_size(proto_msg_t *p) { p->u.ready.type_size = 8; }
static void mut_extent(proto_msg_t *p) { p->u.ready.extent = 8; }
/* same sizes, another type signature (MPI_INT against MPI_FLOAT; worker/typecheck.c) */
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

/* Fault position 3, EXEC_CORRUPT: both sets are lost and recovered. */
static void test_fault_exec_corrupt(void **state) {
  sched_t *s = sched_new(4, SCHED_POLICY_FIRST);
  sched_key_t k = K(63, 0);
  proto_msg_t p = prm(2, 1);
  group_seq(s, 63, 3);
  assert_int_equal(ready_rep(s, k, 0, 1, p, 2), 0);
  assert_int_equal(ready_rep(s, k, 1, 2, p, 4), 0);
  assert_int_equal(drain(s), 1);
  assert_int_equal(wfail(s, 2), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(done(s, 1, 1, PROTO_TASK_EXEC_CORRUPT, 5, 111), 0);
  assert_int_equal(drain(s), 3);
  is_jtask(&A[0], 1, PROTO_TASK_EXEC_CORRUPT);
  is_recover(&A[1], 1, 0);
  is_recover(&A[2], 4, 1);
  assert_int_equal(sched_queue_len(s, k), 0);

  assert_int_equal(rec_ready(s, k, 0, 1, p), 0);
  assert_int_equal(rec_ready(s, k, 1, 4, p), 0);
  assert_int_equal(drain(s), 1);
  is_task(&A[0], 2, 1, 4, 0, 1);
  assert_int_equal(ready(s, k, 2, 3, p), 0);
  assert_int_equal(ok(s, 2, 1), 0);
  assert_int_equal(drain(s), 2);
  is_task(&A[1], 3, 3, 1, 2, 0);
  assert_int_equal(ok(s, 3, 3), 0);
  assert_int_equal(drain(s), 4);
  is_end(&A[1], 1, DRED_OK);
  is_end(&A[2], 3, DRED_OK);
  is_jred(&A[3], 3, 3, 2, DRED_OK);
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

/* ---- node by node (master/sched_nodes.c) ------------------------------------------- */

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
 * known one (NOMEM) is passed on as it is.  Found by tests/fuzz/fuzz_sched.c. */
static void task_error_case(int32_t error, int32_t want) {
  sched_t *s = sched_new(2, SCHED_POLICY_FIRST);
  sched_key_t k = K(72, 0);
  group_seq(s, 72, 2);
  assert_int_equal(ready(s, k, 0, 1, prm(0, 1)), 0);
  assert_int_equal(ready(s, k, 1, 2, prm(0, 1)), 0);
  assert_int_equal(drain(s), 1);
  assert_true(is_send(&A[0], PROTO_TASK));
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
 * MISMATCH, which the old in-band signal (type_size 0) produced -- and a late arrival too. */
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

static int done_full(sched_t *s, uint64_t id, uint32_t w, uint32_t st, uint64_t exec_ns,
                     uint64_t addr, int absorbed) {
  proto_msg_t d;
  memset(&d, 0, sizeof d);
  d.type = PROTO_DONE;
  d.u.done.task_id = id;
  d.u.done.status = st;
  d.u.done.exec_ns = exec_ns;
  d.u.done.buf.addr = addr;
  d.u.done.buf.pool_off = -1;
  d.u.done.absorbed = (uint8_t)absorbed;
  return feed(s, w, &d);
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
  uint64_t cur[3];
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

  /* the root's own worker answering a RECOVER with its snapshot does make a snapshot
   * message (snap, unit, its own worker); the root still never absorbs */
  s = sched_new(3, SCHED_POLICY_FIRST);
  group_seq(s, 91, 3);
  assert_int_equal(ready_snap(s, K(91, 0), 2, 3, p), 0);
  assert_int_equal(ready_snap(s, K(91, 0), 0, 1, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 3, 1, 2, 0, 0);
  assert_int_equal(done_ab(s, 1, 3, PROTO_TASK_EXEC_CORRUPT, 0, 0), 0);
  assert_int_equal(drain(s), 3);
  is_recover_ab(&A[1], 3, 2, NOM, NOM, 0);
  is_recover_ab(&A[2], 1, 0, NOM, NOM, 0);
  assert_int_equal(rec_ab(s, K(91, 0), 2, 3, p, OP(2), 1, 1, 0), 0);
  assert_int_equal(rec_ab(s, K(91, 0), 0, 1, p, OP(0), 1, 1, 0), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 3, 1, 2, 0, 0); /* two snapshot messages, but the executor is the root */
  cur[0] = OP(0), cur[1] = OP(1), cur[2] = OP(2);
  assert_int_equal(done_ab(s, 2, 3, PROTO_TASK_OK, OP(0) + OP(2), 0), 0);
  cur[2] = OP(0) + OP(2);
  drain(s);
  assert_int_equal(ready_snap(s, K(91, 0), 1, 2, p), 0);
  assert_int_equal(finish(s, 3, 2, cur), 2);
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
  assert_int_equal(done_ab(s, 2, 1, PROTO_TASK_EXEC_CORRUPT, OP(0), 1), DRED_ERR_ARG);
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
 * when the member's own worker answers with its snapshot: snap = 1 and unit = 1.  Members
 * 0 and 1 are lost to an EXEC_CORRUPT and both answered by their own workers; member 1's
 * answer carries (snap, unit); the task pairing them absorbs iff it makes a snapshot
 * message.  (A node peer's snap = 1: test_absorb_lost_unit_one_recover.) */
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
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_EXEC_CORRUPT, 0, 0), 0);
  assert_int_equal(drain(s), 3);
  is_recover_ab(&A[1], 1, 0, NOM, NOM, 0);
  is_recover_ab(&A[2], 2, 1, NOM, NOM, 0);
  assert_int_equal(rec_ab(s, k, 0, 1, p, OP(0), 1, 1, 0), 0);
  assert_int_equal(drain(s), 0);
  assert_int_equal(rec_ab(s, k, 1, 2, p, OP(1), snap, unit, 0), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 2, 1, 2, 0, 1, want);
  cur[0] += OP(1);
  assert_int_equal(done_ab(s, 2, 1, PROTO_TASK_OK, cur[0], want), 0);
  assert_int_equal(ready_snap(s, k, 2, 3, p), 0);
  assert_int_equal(ready_ab(s, k, 3, 4, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 4, 3, cur), 2);
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
  assert_int_equal(rec_ab(s, k, 0, 2, prm(3, 1), OP(0) + OP(1), 0, 1, 1), DRED_ERR_ARG);
  sched_free(s);
}

/* EXEC_CORRUPT from the executor of an absorbing task says its buffer was partly
 * combined -- and with absorb = 1 that buffer may be its snapshot, absorbing the
 * provider in place.  Its own live worker would answer a unit RECOVER with that snapshot
 * as it stands, counting the provider partly twice, so the scheduler asks for the
 * operand alone (single = 1). */
static void test_absorb_exec_corrupt_recovers_operand_alone(void **state) {
  sched_t *s = sched_new(3, SCHED_POLICY_FIRST);
  sched_key_t k = K(107, 0);
  proto_msg_t p = prm(2, 1);
  uint64_t cur[3] = {OP(0), OP(1), OP(2)};
  *state = s; /* freed by free_state, even when an assertion fails */
  group_seq(s, 107, 3);
  assert_int_equal(ready_snap(s, k, 0, 1, p), 0);
  assert_int_equal(ready_snap(s, k, 1, 2, p), 0);
  assert_int_equal(drain(s), 1);
  is_task_ab(&A[0], 1, 1, 2, 0, 1, 1);
  assert_int_equal(done_ab(s, 1, 1, PROTO_TASK_EXEC_CORRUPT, 0, 0), 0);
  assert_int_equal(drain(s), 3);
  is_jtask(&A[0], 1, PROTO_TASK_EXEC_CORRUPT);
  is_recover_ab(&A[2], 2, 1, NOM, NOM, 0); /* the provider's snapshot is intact */
  is_recover_ab(&A[1], 1, 0, NOM, NOM, 1); /* the operand alone: single = 1 */
  assert_int_equal(rec_ab(s, k, 0, 1, p, OP(0), 0, 0, 0), 0);
  assert_int_equal(rec_ab(s, k, 1, 2, p, OP(1), 1, 1, 0), 0);
  assert_int_equal(ready_ab(s, k, 2, 3, p, 0, 0, NULL), 0);
  assert_int_equal(finish(s, 3, 2, cur), 2);
}

static int free_state(void **state) {
  sched_free(*state);
  return 0;
}

/* ---- the simulator ------------------------------------------------------------------- */

/* The simulator plays every worker as dred's would, absorption included:
 *   - every non-root member's READY is its snapshot (snap = 1; snap_buf, a buffer that
 *     exists from the member's call on); it copies its operand to the next member's
 *     worker, unless the round makes it one of the members without a copy (norep), whose
 *     operand then survives its worker only in its snapshot, readable by node peers;
 *   - a TASK with absorb = 1 is done in place or not, at random: in place, the executor's
 *     snapshot takes the provider's buffer (DONE absorbed = 1, the same buffer id, its
 *     contents grown, snap_last = the provider); not in place, the sum goes to a fresh
 *     buffer and the snapshot stays as it was.  An executor killed with an in-place task
 *     has finished the absorption or not begun it, at random (a node peer finishes one
 *     under way, so those two are all a peer can find);
 *   - a RECOVER is answered by the member's own live worker from its snapshot as it stands
 *     (unit = 1; its operand alone when single is asked, unit = 0), by a holder of the
 *     copy with the operand alone (unit = 0), or by a node peer of a dead member from its
 *     snapshot: unit = 1, absorbed = 1 iff the snapshot's last absorption is the RECOVER's
 *     tentative member; refused (RECOVER_FAILED) when single is asked and the snapshot
 *     absorbed something, or when its last absorption is neither `last` nor `tentative`
 *     (counted as a mismatch: the scheduler's bookkeeping disagrees with the snapshot).
 * What the scheduler dispatches is checked against that model (TASK.absorb is 1 exactly
 * when both buffers are their members' snapshots, on one node, the executor not the root),
 * and every completed instance must count each operand exactly once. */

#define SIM_MAXN 128
#define SIM_MAXW 128
#define SIM_NONE PROTO_NO_MEMBER
/* EXEC_CORRUPT from an executor absorbing in place leaves its snapshot partly combined:
 * the simulator makes such DONEs up too (the scheduler then asks for the operand alone,
 * test_absorb_exec_corrupt_recovers_operand_alone). */
#define SIM_CORRUPT_IN_PLACE 1

enum { P_READY, P_RECOVER, P_DONE };

typedef struct {
  int kind, inst;
  uint32_t worker; /* who sends it; dropped if dead by then */
  uint32_t member;
  uint64_t task_id;
  uint32_t prov, em, pm;
  uint64_t pbuf;
  uint8_t absorb, inplace;      /* TASK: may absorb; this worker does it in place */
  uint32_t last, tentative;     /* RECOVER's fields */
  uint8_t single;
} pend_t;

typedef struct {
  sched_key_t key;
  uint32_t n, workers[SIM_MAXN];
  uint32_t bogus[SIM_MAXN]; /* a replica holder that answers RECOVER_FAILED, or 0 */
  uint8_t norep[SIM_MAXN];  /* announces no copy: only its snapshot survives its worker */
  uint64_t snap_buf[SIM_MAXN]; /* non-root members: the snapshot's buffer id */
  uint32_t snap_last[SIM_MAXN]; /* the member whose unit the snapshot absorbed last */
  proto_msg_t p;
  int created;
  int ends[SIM_MAXN];
  uint32_t end_order[SIM_MAXN];
  uint32_t nend;
  int journaled;
  int32_t status;
  uint32_t jtasks, jrec, recovered_fed;
  uint64_t cur_buf[SIM_MAXN]; /* by holder member */
} sim_inst_t;

typedef struct {
  sched_t *s;
  uint32_t nw;
  uint8_t dead[SIM_MAXW + 1];
  uint32_t node[SIM_MAXW + 1];
  sim_inst_t *in;
  int ninst;
  pend_t *pend;
  size_t npend, cappend;
  int16_t **vec; /* per buffer id: how often each member's operand is in it */
  size_t nbuf, capbuf;
  int last_inst;
  uint64_t last_buf;
  uint32_t last_worker; /* who sent the event fed last */
  uint64_t rng;
  int flaky; /* inject PROVIDER_LOST / EXEC_CORRUPT with live providers */
  uint32_t norep_pct; /* percent of non-root members without a copy */
  uint32_t target_pct; /* percent of deaths aimed at a worker with something in flight */
  uint32_t kills, max_kills;
  uint32_t tasks_seen;
  /* absorption counters: what the run exercised */
  uint32_t absorb_tasks, inplace, killed_inplace, unit_answers, absorbed_answers,
      split_answers, single_asks, peer_answers, refusals, mismatches;
} sim_t;

static uint64_t rnd(sim_t *m) { /* xorshift64* */
  m->rng ^= m->rng >> 12;
  m->rng ^= m->rng << 25;
  m->rng ^= m->rng >> 27;
  return m->rng * 2685821657736338717ULL;
}
static uint32_t rndn(sim_t *m, uint32_t n) { return (uint32_t)(rnd(m) % n); }

static uint64_t sim_buf(sim_t *m, int inst, int member) {
  if (m->nbuf == m->capbuf) {
    m->capbuf = m->capbuf ? m->capbuf * 2 : 256;
    m->vec = realloc(m->vec, m->capbuf * sizeof *m->vec);
    assert_non_null(m->vec);
  }
  m->vec[m->nbuf] = calloc(m->in[inst].n, sizeof(int16_t));
  assert_non_null(m->vec[m->nbuf]);
  if (member >= 0) m->vec[m->nbuf][member] = 1;
  return ++m->nbuf; /* ids start at 1 */
}

/* A fresh buffer holding what buffer `from` holds (a copy read from it). */
static uint64_t sim_buf_copy(sim_t *m, int inst, uint64_t from) {
  uint64_t b = sim_buf(m, inst, -1);
  memcpy(m->vec[b - 1], m->vec[from - 1], m->in[inst].n * sizeof(int16_t));
  return b;
}

static void sim_push(sim_t *m, pend_t pe) {
  if (m->npend == m->cappend) {
    m->cappend = m->cappend ? m->cappend * 2 : 256;
    m->pend = realloc(m->pend, m->cappend * sizeof *m->pend);
    assert_non_null(m->pend);
  }
  m->pend[m->npend++] = pe;
}

static int sim_find(const sim_t *m, sched_key_t k) {
  int i;
  for (i = 0; i < m->ninst; i++)
    if (m->in[i].key.group == k.group && m->in[i].key.tag == k.tag) return i;
  fail_msg("action for an unknown key");
  return -1;
}

static uint32_t sim_member_of(const sim_inst_t *in, uint32_t w) {
  uint32_t k;
  for (k = 0; k < in->n; k++)
    if (in->workers[k] == w) return k;
  fail_msg("END to a worker outside the group");
  return 0;
}

/* Only these hold a copy of member k's operand: its own worker and, unless it makes none,
 * the next member's (eq. 4). */
static int sim_has_copy(const sim_inst_t *in, uint32_t k, uint32_t w) {
  return w == in->workers[k] || (!in->norep[k] && in->n > 1 && w == in->workers[(k + 1) % in->n]);
}

/* Worker w, not member k's own, on the node of member k's worker: it can read k's
 * snapshot once k's worker is dead. */
static int sim_node_peer(const sim_t *m, const sim_inst_t *in, uint32_t k, uint32_t w) {
  return w != in->workers[k] && m->node[w] == m->node[in->workers[k]];
}

/* Absorb buffer `from` into member em's snapshot in place. */
static void sim_absorb(sim_t *m, sim_inst_t *in, uint32_t em, uint32_t pm, uint64_t from) {
  uint64_t sb = in->snap_buf[em];
  uint32_t k;
  for (k = 0; k < in->n; k++)
    m->vec[sb - 1][k] = (int16_t)(m->vec[sb - 1][k] + m->vec[from - 1][k]);
  in->snap_last[em] = pm;
}

static void sim_drain(sim_t *m) {
  sched_action_t a;
  while (sched_next_action(m->s, &a)) {
    int i = sim_find(m, a.key);
    sim_inst_t *in = &m->in[i];
    uint32_t k;
    pend_t pe;
    memset(&pe, 0, sizeof pe);
    pe.inst = i;
    switch (a.type == SCHED_ACT_SEND ? (int)a.msg.type : -(int)a.type) {
      case PROTO_TASK: {
        uint32_t em = a.msg.u.task.exec_member, pm = a.msg.u.task.prov_member;
        uint64_t eb = in->cur_buf[em], pb = a.msg.u.task.buf.addr;
        int want;
        assert_false(m->dead[a.worker]);
        assert_false(m->dead[a.msg.u.task.provider]);
        assert_int_not_equal(eb, 0);
        assert_int_equal(in->cur_buf[pm], pb);
        for (k = 0; k < in->n; k++) /* the two sides never share an operand */
          assert_true(m->vec[eb - 1][k] + m->vec[pb - 1][k] <= 1);
        if (!in->p.u.ready.commutative) { /* adjacent intervals, exec_is_left as they lie */
          uint32_t elo = in->n, ehi = 0, plo = in->n, phi = 0;
          for (k = 0; k < in->n; k++) {
            if (m->vec[eb - 1][k]) { if (k < elo) elo = k; ehi = k; }
            if (m->vec[pb - 1][k]) { if (k < plo) plo = k; phi = k; }
          }
          assert_true(ehi + 1 == plo || phi + 1 == elo);
          assert_int_equal(a.msg.u.task.exec_is_left, ehi < plo);
        }
        /* in place exactly between two snapshots (held by their own workers, so the
         * buffers are the snapshots themselves) on one node, never at the root */
        want = em != in->p.u.ready.root && in->snap_buf[em] != 0 && eb == in->snap_buf[em] &&
               in->snap_buf[pm] != 0 && pb == in->snap_buf[pm] &&
               m->node[a.worker] == m->node[a.msg.u.task.provider];
        assert_int_equal(a.msg.u.task.absorb, want);
        if (want) {
          assert_int_equal(a.worker, in->workers[em]);
          assert_int_equal(a.msg.u.task.provider, in->workers[pm]);
          m->absorb_tasks++;
        }
        pe.kind = P_DONE;
        pe.worker = a.worker;
        pe.task_id = a.msg.u.task.task_id;
        pe.prov = a.msg.u.task.provider;
        pe.em = em;
        pe.pm = pm;
        pe.pbuf = pb;
        pe.absorb = a.msg.u.task.absorb;
        pe.inplace = pe.absorb && rndn(m, 3) != 0;
        sim_push(m, pe);
        m->tasks_seen++;
        break;
      }
      case PROTO_RECOVER:
        assert_false(m->dead[a.worker]);
        pe.kind = P_RECOVER;
        pe.worker = a.worker;
        pe.member = a.msg.u.recover.member;
        pe.last = a.msg.u.recover.last;
        pe.tentative = a.msg.u.recover.tentative;
        pe.single = a.msg.u.recover.single;
        assert_true(pe.last == SIM_NONE || pe.last < in->n);
        assert_true(pe.tentative == SIM_NONE || pe.tentative < in->n);
        if (pe.single) m->single_asks++;
        sim_push(m, pe);
        break;
      case PROTO_END:
        k = sim_member_of(in, a.worker);
        assert_int_equal(a.msg.u.end.status, DRED_OK);
        assert_false(m->dead[a.worker]);
        in->ends[k]++;
        in->end_order[in->nend++] = a.worker;
        break;
      case -SCHED_ACT_JOURNAL_TASK:
        break;
      case PROTO_INLINE: /* the simulator never starts an inline instance */
        free(a.owned);
        fail_msg("INLINE for an instance that is not inline");
        break;
      case -SCHED_ACT_JOURNAL_REDUCTION:
        in->journaled++;
        in->status = a.u.jred.status;
        in->jtasks = a.u.jred.tasks;
        in->jrec = a.u.jred.recovered;
        assert_int_equal(a.u.jred.members, in->n);
        /* the buffer fed last is the result: every operand exactly once */
        assert_int_equal(m->last_inst, i);
        assert_int_equal(m->last_worker, in->workers[in->p.u.ready.root]); /* the result is at the root */
        for (k = 0; k < in->n; k++) assert_int_equal(m->vec[m->last_buf - 1][k], 1);
        /* every member alive at the end told exactly once, the dead never */
        for (k = 0; k < in->n; k++) assert_int_equal(in->ends[k], m->dead[in->workers[k]] ? 0 : 1);
        break;
      default:
        fail_msg("unknown action");
    }
  }
}

/* Feed member k's READY from worker w with buffer `buf`: its own (recovered = 0: the
 * snapshot, replicas announced), or an answer to a RECOVER with its flags. */
static void sim_feed_ready(sim_t *m, int inst, uint32_t k, uint32_t w, uint64_t buf, int recovered,
                           int snap, int unit, int absorbed) {
  sim_inst_t *in = &m->in[inst];
  uint32_t reps[2];
  uint8_t nrep = 0;
  proto_msg_t r = ready_msg(in->key, k, in->p);
  if (!recovered && in->n > 1) {
    if (in->bogus[k]) reps[nrep++] = in->bogus[k];
    if (!in->norep[k]) reps[nrep++] = in->workers[(k + 1) % in->n];
  }
  r.u.ready.buf.addr = buf;
  r.u.ready.recovered = (uint8_t)recovered;
  r.u.ready.snap = (uint8_t)snap;
  r.u.ready.unit = (uint8_t)unit;
  r.u.ready.absorbed = (uint8_t)absorbed;
  r.u.ready.nreplicas = nrep;
  memcpy(r.u.ready.replicas, reps, nrep * sizeof *reps);
  in->cur_buf[k] = buf;
  m->last_inst = inst;
  m->last_buf = buf;
  m->last_worker = w;
  if (recovered) in->recovered_fed++;
  assert_int_equal(feed(m->s, w, &r), 0);
  in->created = 1;
}

/* Worker pe->worker answers a RECOVER of member pe->member, as dred's worker would. */
static void sim_answer(sim_t *m, const pend_t *pe) {
  sim_inst_t *in = &m->in[pe->inst];
  uint32_t k = pe->member, w = pe->worker, own = in->workers[k], root = in->p.u.ready.root;
  int copy, peer = 0, peer_absorbed = 0;
  uint64_t b;
  if (w == own) {
    if (k == root || pe->single) { /* its operand, reloaded (a snap flag means nothing here) */
      int unit = k == root && !pe->single && (int)rndn(m, 2);
      sim_feed_ready(m, pe->inst, k, w, sim_buf(m, pe->inst, (int)k), 1, (int)rndn(m, 2), unit, 0);
      if (!unit) m->split_answers++;
      return;
    }
    /* its snapshot as it stands: its unit; the scheduler must know what it absorbed */
    if (in->snap_last[k] != pe->last || pe->tentative != SIM_NONE) m->mismatches++;
    m->unit_answers++;
    sim_feed_ready(m, pe->inst, k, w, in->snap_buf[k], 1, 1, 1, 0);
    return;
  }
  copy = sim_has_copy(in, k, w);
  if (k != root && m->dead[own] && sim_node_peer(m, in, k, w)) { /* it may read the snapshot */
    uint32_t sl = in->snap_last[k];
    if (pe->single) {
      peer = sl == SIM_NONE; /* only a snapshot that never absorbed is the operand alone */
    } else if (pe->tentative != SIM_NONE && sl == pe->tentative) {
      peer = 1;
      peer_absorbed = 1;
    } else if (sl == pe->last) {
      peer = 1;
    } else {
      m->mismatches++;
    }
  }
  if (peer && (!copy || rndn(m, 2))) {
    b = sim_buf_copy(m, pe->inst, in->snap_buf[k]);
    m->peer_answers++;
    /* whatever snap says (it read a snapshot), only the member's own worker holds one */
    if (pe->single) {
      m->split_answers++;
      sim_feed_ready(m, pe->inst, k, w, b, 1, (int)rndn(m, 2), 0, 0);
    } else {
      m->unit_answers++;
      m->absorbed_answers += (uint32_t)peer_absorbed;
      sim_feed_ready(m, pe->inst, k, w, b, 1, (int)rndn(m, 2), 1, peer_absorbed);
    }
  } else if (copy) {
    m->split_answers++;
    sim_feed_ready(m, pe->inst, k, w, sim_buf(m, pe->inst, (int)k), 1, (int)rndn(m, 2), 0, 0);
  } else {
    m->refusals++;
    assert_int_equal(recfail(m->s, in->key, k, w, DRED_ERR_STORAGE), 0);
  }
}

static void sim_deliver(sim_t *m, pend_t pe) {
  sim_inst_t *in = &m->in[pe.inst];
  uint32_t k;
  if (m->dead[pe.worker]) return; /* a dead worker's message never arrives */
  switch (pe.kind) {
    case P_READY: {
      uint32_t root = in->p.u.ready.root;
      if (pe.member == root) /* the root has no snapshot; a snap flag from it means nothing */
        sim_feed_ready(m, pe.inst, pe.member, pe.worker, sim_buf(m, pe.inst, (int)pe.member), 0,
                       (int)rndn(m, 2), 0, 0);
      else
        sim_feed_ready(m, pe.inst, pe.member, pe.worker, in->snap_buf[pe.member], 0, 1, 0, 0);
      break;
    }
    case P_RECOVER:
      sim_answer(m, &pe);
      break;
    case P_DONE: {
      uint64_t eb = in->cur_buf[pe.em];
      uint32_t r = rndn(m, 100);
      uint64_t addr;
      uint32_t st = PROTO_TASK_OK;
      int absorbed = 0;
      /* Read before it died, or not: the provider of an absorbing task lies on this node
       * and its snapshot stays readable, so no EXEC_CORRUPT is made up for one -- unless
       * SIM_CORRUPT_IN_PLACE, and then only for an executor with a copy (its snapshot is
       * not all that is left of its operand). */
      if (m->dead[pe.prov]) st = pe.absorb ? rndn(m, 2) : rndn(m, 3);
      else if (m->flaky && r < 5) st = PROTO_TASK_PROVIDER_LOST;
      else if (m->flaky && r < 8 && (!pe.absorb || (SIM_CORRUPT_IN_PLACE && !in->norep[pe.em])))
        st = PROTO_TASK_EXEC_CORRUPT;
      uint64_t exec_ns = 1 + rndn(m, 1000);
      if (st == PROTO_TASK_EXEC_CORRUPT && pe.inplace) { /* the snapshot partly combined */
        uint64_t sb = in->snap_buf[pe.em];
        for (k = 0; k < in->n; k++)
          m->vec[sb - 1][k] = (int16_t)(m->vec[sb - 1][k] + 100 * m->vec[pe.pbuf - 1][k]);
        in->snap_last[pe.em] = pe.pm; /* an absorption under way */
      }
      if (st == PROTO_TASK_OK && pe.inplace) { /* into its snapshot, which stays its buffer */
        assert_int_equal(eb, in->snap_buf[pe.em]);
        sim_absorb(m, in, pe.em, pe.pm, pe.pbuf);
        addr = eb;
        absorbed = 1;
        m->inplace++;
      } else if (st == PROTO_TASK_OK) {
        addr = sim_buf(m, pe.inst, -1);
        for (k = 0; k < in->n; k++)
          m->vec[addr - 1][k] = (int16_t)(m->vec[eb - 1][k] + m->vec[pe.pbuf - 1][k]);
      } else if (st == PROTO_TASK_PROVIDER_LOST) {
        addr = eb; /* untouched */
      } else { /* half-combined garbage: must never be used again */
        addr = sim_buf(m, pe.inst, -1);
        for (k = 0; k < in->n; k++) m->vec[addr - 1][k] = 100;
      }
      in->cur_buf[pe.em] = addr;
      m->last_inst = pe.inst;
      m->last_buf = addr;
      m->last_worker = pe.worker;
      assert_int_equal(done_full(m->s, pe.task_id, pe.worker, st, exec_ns, addr, absorbed), 0);
      break;
    }
  }
}

/* Is member k of `in` still recoverable when worker w is dead too?  Its own worker, or the
 * holder of its copy, or a node peer that can read its snapshot whatever it is asked: a
 * member without a copy is never asked for its operand alone (single = 1 follows only an
 * answer of the operand alone, which only a copy or a single answer gives), and a
 * snapshot that never absorbed anything (and never will: its worker is dead, or it is
 * still there to answer) is the operand alone anyway. */
static int sim_recoverable_without(const sim_t *m, const sim_inst_t *in, uint32_t k, uint32_t w) {
  uint32_t own = in->workers[k], j;
  if (own != w && !m->dead[own]) return 1;
  if (!in->norep[k]) {
    uint32_t rep = in->workers[(k + 1) % in->n];
    if (in->n > 1 && rep != w && !m->dead[rep]) return 1;
    if (in->snap_last[k] != SIM_NONE) return 0;
  }
  if (k == in->p.u.ready.root) return 0;
  for (j = 0; j < in->n; j++) {
    uint32_t pw = in->workers[j];
    if (j != k && pw != w && !m->dead[pw] && sim_node_peer(m, in, k, pw)) return 1;
  }
  return 0;
}

/* May w die without making the run unrecoverable?  Never a root, never every holder of
 * an operand (seed 002: a failure before the remote copy is stored cannot be recovered). */
static int sim_can_kill(const sim_t *m, uint32_t w) {
  int i;
  uint32_t k;
  if (m->dead[w]) return 0;
  for (i = 0; i < m->ninst; i++) {
    const sim_inst_t *in = &m->in[i];
    if (in->journaled) continue;
    if (!in->created || in->workers[in->p.u.ready.root] == w) return 0;
    for (k = 0; k < in->n; k++)
      if (!sim_recoverable_without(m, in, k, w)) return 0;
  }
  return 1;
}

static void sim_kill(sim_t *m) {
  uint32_t tries, w;
  size_t j;
  sched_event_t ev;
  for (tries = 0; tries < 8; tries++) {
    /* now and then a worker with something in flight (a task it executes, a RECOVER it
     * was asked): the deaths that exercise the recovery rules */
    w = m->npend > 0 && rndn(m, 100) < m->target_pct ? m->pend[rndn(m, (uint32_t)m->npend)].worker
                                                     : 1 + rndn(m, m->nw);
    if (!sim_can_kill(m, w)) continue;
    m->dead[w] = 1;
    m->kills++;
    /* its in-place absorptions: finished (a node peer completes one under way) or not
     * begun, at random; their DONEs never arrive */
    for (j = 0; j < m->npend; j++) {
      pend_t *pe = &m->pend[j];
      if (pe->kind != P_DONE || pe->worker != w || !pe->inplace || rndn(m, 2) == 0) continue;
      sim_absorb(m, &m->in[pe->inst], pe->em, pe->pm, pe->pbuf);
      m->killed_inplace++;
    }
    memset(&ev, 0, sizeof ev);
    ev.type = SCHED_EV_WORKER_FAILED;
    ev.worker = w;
    assert_int_equal(sched_feed(m->s, &ev), 0);
    assert_int_equal(sched_worker_alive(m->s, w), 0);
    return;
  }
}

static void sim_add_inst(sim_t *m, uint64_t gid, int64_t tag, uint32_t n, const uint32_t *workers) {
  sim_inst_t *in;
  uint32_t k;
  m->in = realloc(m->in, (size_t)(m->ninst + 1) * sizeof *m->in);
  assert_non_null(m->in);
  in = &m->in[m->ninst];
  memset(in, 0, sizeof *in);
  in->key = K(gid, tag);
  in->n = n;
  memcpy(in->workers, workers, n * sizeof *workers);
  in->p = prm(rndn(m, n), (int)rndn(m, 2));
  in->p.u.ready.count = 1 + rndn(m, 1000);
  in->p.u.ready.extent = in->p.u.ready.type_size = rndn(m, 2) ? 4 : 8;
  in->p.u.ready.op = 1 + (int32_t)rndn(m, 5);
  for (k = 0; k < n; k++) {
    uint32_t b = 1 + rndn(m, m->nw);
    in->norep[k] = k != in->p.u.ready.root && rndn(m, 100) < m->norep_pct;
    in->bogus[k] = sim_has_copy(in, k, b) ? 0 : b;
    in->snap_last[k] = SIM_NONE;
  }
  assert_int_equal(sched_group_define(m->s, gid, n, workers), 0);
  m->ninst++;
}

/* Deliver pending messages in random order until none is left, killing workers at random
 * once every instance exists.  Then every instance must have ended OK with each operand
 * counted once and each live member told exactly once. */
static void sim_run(sim_t *m, int kill_permille) {
  int i;
  uint32_t k;
  pend_t pe;
  for (i = 0; i < m->ninst; i++) /* every member calls; READYs travel in any order */
    for (k = 0; k < m->in[i].n; k++) {
      if (k != m->in[i].p.u.ready.root) m->in[i].snap_buf[k] = sim_buf(m, i, (int)k);
      memset(&pe, 0, sizeof pe);
      pe.kind = P_READY;
      pe.inst = i;
      pe.member = k;
      pe.worker = m->in[i].workers[k];
      sim_push(m, pe);
    }
  while (m->npend > 0) {
    size_t j = rndn(m, (uint32_t)m->npend);
    int all_created = 1;
    for (i = 0; i < m->ninst; i++) all_created &= m->in[i].created;
    if (all_created && m->kills < m->max_kills && (int)rndn(m, 1000) < kill_permille) {
      sim_kill(m);
      sim_drain(m);
    }
    pe = m->pend[j];
    m->pend[j] = m->pend[--m->npend];
    sim_deliver(m, pe);
    sim_drain(m);
  }
  assert_int_equal(sched_instances(m->s), 0);
  assert_int_equal(sched_tasks_in_flight(m->s), 0);
  assert_int_equal(m->mismatches, 0); /* no answer found a snapshot the scheduler did not expect */
  for (i = 0; i < m->ninst; i++) {
    sim_inst_t *in = &m->in[i];
    assert_int_equal(in->journaled, 1);
    assert_int_equal(in->status, DRED_OK);
    assert_int_equal(in->jrec, in->recovered_fed);
    assert_true(in->jtasks >= in->n - 1);
  }
}

static void sim_free(sim_t *m) {
  size_t b;
  for (b = 0; b < m->nbuf; b++) free(m->vec[b]);
  free(m->vec);
  free(m->pend);
  free(m->in);
  sched_free(m->s);
}

/* 64 instances on 16 groups x 4 tags, their events interleaved at random: each completes
 * on its own with n-1 tasks and its ENDs in member order (every worker on one node, so
 * many tasks absorb in place). */
static void test_isolation_64_instances(void **state) {
  sim_t m;
  uint32_t gi, t, k;
  int i;
  memset(&m, 0, sizeof m);
  m.rng = 0x9e3779b97f4a7c15ULL;
  m.nw = 16;
  m.s = sched_new(m.nw, SCHED_POLICY_PREDICT);
  for (gi = 0; gi < 16; gi++) {
    uint32_t n = 2 + gi % 9, w[16];
    for (k = 0; k < n; k++) w[k] = 1 + (gi + 3 * k) % 16; /* distinct: 3 is prime to 16 */
    for (t = 0; t < 4; t++) sim_add_inst(&m, 500 + gi, (int64_t)t - 2, n, w);
  }
  sim_run(&m, 0);
  for (i = 0; i < m.ninst; i++) {
    sim_inst_t *in = &m.in[i];
    assert_int_equal(in->jtasks, in->n - 1);
    assert_int_equal(in->jrec, 0);
    assert_int_equal(in->nend, in->n);
    for (k = 0; k < in->n; k++) assert_int_equal(in->end_order[k], in->workers[k]);
  }
  for (i = 0, t = 0; i < m.ninst; i++) t += m.in[i].n - 1;
  assert_int_equal(m.tasks_seen, t); /* no task beyond the n-1 each instance needs */
  assert_true(m.inplace > 0);
  sim_free(&m);
}

/* How a batch of random rounds is drawn. */
typedef struct {
  uint32_t rounds, min_instances; /* at least this many rounds and instances */
  int kill_permille;              /* chance of a death before each delivery */
  uint32_t max_kills;             /* deaths per round: 0 .. max_kills - 1 */
  uint32_t max_nodes;             /* workers on 1 .. max_nodes nodes */
  uint32_t norep_rounds;          /* one round in norep_rounds has members without a copy */
  uint32_t target_pct;
  uint32_t big_every;             /* every big_every-th round has 65..124 workers */
} sim_cfg_t;

/* Run the rounds of `cfg` from `seed`; *sum adds up their counters (kills in sum->kills,
 * operands recovered in sum->tasks_seen).  Returns the number of instances. */
static uint32_t sim_rounds(const sim_cfg_t *cfg, uint64_t seed, sim_t *sum) {
  uint32_t round, total = 0;
  for (round = 0; total < cfg->min_instances || round < cfg->rounds; round++) {
    sim_t m;
    uint32_t ninst, i, k, perm[SIM_MAXW], nnodes, w;
    memset(&m, 0, sizeof m);
    m.rng = seed * 0x9e3779b97f4a7c15ULL + round + 1;
    m.nw = round % cfg->big_every == cfg->big_every - 1 ? 65 + rndn(&m, 60) : 2 + rndn(&m, 11);
    m.s = sched_new(m.nw, (sched_policy_t)rndn(&m, 3));
    m.flaky = (int)rndn(&m, 2);
    m.max_kills = rndn(&m, cfg->max_kills);
    m.norep_pct = rndn(&m, cfg->norep_rounds) == 0 ? 50 : 0;
    m.target_pct = cfg->target_pct;
    nnodes = 1 + rndn(&m, cfg->max_nodes);
    for (w = 1; w <= m.nw; w++) {
      m.node[w] = rndn(&m, nnodes);
      assert_int_equal(sched_set_node(m.s, w, m.node[w]), 0);
    }
    ninst = 1 + rndn(&m, 4);
    for (i = 0; i < ninst; i++) {
      uint32_t n = 1 + rndn(&m, m.nw);
      for (k = 0; k < m.nw; k++) perm[k] = k + 1;
      for (k = m.nw - 1; k > 0; k--) { /* Fisher-Yates */
        uint32_t j = rndn(&m, k + 1), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
      }
      sim_add_inst(&m, 1000 + i, (int64_t)rndn(&m, 3), n, perm);
    }
    sim_run(&m, cfg->kill_permille);
    total += ninst;
    sum->kills += m.kills;
    for (i = 0; i < ninst; i++) sum->tasks_seen += m.in[i].jrec;
    sum->absorb_tasks += m.absorb_tasks;
    sum->inplace += m.inplace;
    sum->killed_inplace += m.killed_inplace;
    sum->unit_answers += m.unit_answers;
    sum->absorbed_answers += m.absorbed_answers;
    sum->split_answers += m.split_answers;
    sum->single_asks += m.single_asks;
    sum->peer_answers += m.peer_answers;
    sum->refusals += m.refusals;
    sim_free(&m);
  }
  return total;
}

static uint64_t sim_seed(void) {
  const char *env = getenv("SCHED_TEST_SEED");
  return env ? strtoull(env, NULL, 0) : 20240601ULL;
}

static void sim_report(const char *name, uint64_t seed, uint32_t total, const sim_t *sum) {
  print_message("%s: seed %llu, %u instances, %u worker deaths, %u operands recovered\n", name,
                (unsigned long long)seed, total, sum->kills, sum->tasks_seen);
  print_message("%s: %u absorbing tasks, %u in place, %u killed in place; answers: %u unit, "
                "%u absorbed, %u operand alone, %u from node peers; %u single asked, %u refused\n",
                name, sum->absorb_tasks, sum->inplace, sum->killed_inplace, sum->unit_answers,
                sum->absorbed_answers, sum->split_answers, sum->peer_answers, sum->single_asks,
                sum->refusals);
}

/* Random rounds of 1..4 concurrent instances (some of more than 64 members), workers on
 * 1..3 nodes, random arrival and completion order, random in-place absorption, random
 * worker deaths and flaky reads, some members without a copy (their snapshot is all
 * that is left when their worker dies): every instance must end OK with every operand
 * counted exactly once.  SCHED_TEST_SEED=n picks another seed. */
static void test_random_with_failures(void **state) {
  const sim_cfg_t cfg = {150, 200, 30, 4, 3, 3, 50, 10};
  uint64_t seed = sim_seed();
  sim_t sum;
  uint32_t total;
  memset(&sum, 0, sizeof sum);
  total = sim_rounds(&cfg, seed, &sum);
  sim_report("random", seed, total, &sum);
  assert_true(total >= 200);
  assert_true(sum.kills > 0);
  assert_true(sum.tasks_seen > 0);
  assert_true(sum.inplace > 0 && sum.unit_answers > 0 && sum.peer_answers > 0);
}

/* The same simulator aimed at absorption: small groups on one or two nodes (so most tasks
 * may absorb), many deaths, most of them of a worker with a task or a RECOVER in flight,
 * and members without a copy in half the rounds.  Every rule must have been exercised:
 * executors killed in the middle of an in-place absorption, node peers finishing one
 * (absorbed = 1), units split by an answer of the operand alone and, after that, RECOVERs
 * asking for the operand alone (single = 1). */
static void test_random_absorption(void **state) {
  const sim_cfg_t cfg = {1500, 1500, 200, 12, 2, 2, 80, 1000000};
  uint64_t seed = sim_seed();
  sim_t sum;
  uint32_t total;
  memset(&sum, 0, sizeof sum);
  total = sim_rounds(&cfg, seed, &sum);
  sim_report("absorption", seed, total, &sum);
  assert_true(sum.inplace > 0 && sum.killed_inplace > 0 && sum.absorbed_answers > 0);
  assert_true(sum.unit_answers > 0 && sum.split_answers > 0 && sum.peer_answers > 0);
  assert_true(sum.single_asks > 0);
}

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

/* A mixed meeting slot (worker/meetpath.c): members 0 and 1 met in shared memory, member
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
      cmocka_unit_test(test_inline_completes), cmocka_unit_test(test_meet_mask_mixed),
      cmocka_unit_test(test_inline_member_dies_before_ready),
      cmocka_unit_test(test_inline_member_dies_after_ready),
      cmocka_unit_test(test_inline_mismatch),
      cmocka_unit_test(test_inline_bad_sizes),
      cmocka_unit_test(test_fig4_arrival_order_pairing),
      cmocka_unit_test(test_root_always_executes),
      cmocka_unit_test(test_predict_policy),
      cmocka_unit_test(test_last_time_policy),
      cmocka_unit_test(test_first_policy),
      cmocka_unit_test(test_queue_stats), cmocka_unit_test(test_noncommutative_adjacency),
      cmocka_unit_test(test_completion_end_and_journal),
      cmocka_unit_test(test_single_member),
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
      cmocka_unit_test(test_isolation_64_instances),
      cmocka_unit_test(test_fault_executor_dead_before_dispatch),
      cmocka_unit_test(test_fault_executor_dies_during_task),
      cmocka_unit_test(test_fault_provider_lost),
      cmocka_unit_test(test_fault_exec_corrupt),
      cmocka_unit_test(test_fault_provider_dies_after_read),
      cmocka_unit_test(test_fault_provider_then_executor_die),
      cmocka_unit_test(test_fault_executor_with_two_tasks),
      cmocka_unit_test(test_fault_member_dies_before_arriving),
      cmocka_unit_test(test_fault_root_dies),
      cmocka_unit_test(test_fault_all_copies_lost),
      cmocka_unit_test(test_fault_node_loss_cross_node_replica),
      cmocka_unit_test(test_fault_unarrived_member_placement_order),
      cmocka_unit_test(test_nodes_within_node_first),
      cmocka_unit_test(test_nodes_late_member_holds_its_node_only),
      cmocka_unit_test(test_nodes_failure_back_to_arrival_order),
      cmocka_unit_test(test_nodes_renumbered),
      cmocka_unit_test(test_nodes_noncommutative_unchanged),
      cmocka_unit_test(test_fault_recover_failed_falls_through),
      cmocka_unit_test(test_fault_adjacent_recovered_by_other_member),
      cmocka_unit_test(test_fault_several_instances),
      cmocka_unit_test(test_fault_new_reduction_on_dead_group),
      cmocka_unit_test(test_task_error_fails_instance),
      cmocka_unit_test(test_task_error_unknown_code),
      cmocka_unit_test(test_task_error_fails_instance), cmocka_unit_test(test_nomem_is_explicit),
      cmocka_unit_test(test_nomem_first_arrival), cmocka_unit_test(test_abandon_ends_for_everyone),
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
      cmocka_unit_test_teardown(test_absorb_exec_corrupt_recovers_operand_alone, free_state),
      cmocka_unit_test(test_random_with_failures),
      cmocka_unit_test(test_random_absorption),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
