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
 * The last two tests use a small simulator that plays every worker: it answers each TASK
 * with a TASK_DONE and each RECOVER with a recovered READY (or RECOVER_FAILED) in random
 * order, kills workers at random, and tracks per buffer how many times each operand went
 * into it, so a result that counts an operand twice or misses one is caught.
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

/* ---- the simulator ------------------------------------------------------------------- */

#define SIM_MAXN 128
#define SIM_MAXW 128

enum { P_READY, P_REC_READY, P_DONE, P_RECFAIL };

typedef struct {
  int kind, inst;
  uint32_t worker; /* who sends it; dropped if dead by then */
  uint32_t member;
  uint64_t task_id;
  uint32_t prov, em, pm;
  uint64_t pbuf;
} pend_t;

typedef struct {
  sched_key_t key;
  uint32_t n, workers[SIM_MAXN];
  uint32_t bogus[SIM_MAXN]; /* a replica holder that answers RECOVER_FAILED, or 0 */
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
  uint32_t kills, max_kills;
  uint32_t tasks_seen;
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

/* Only these two hold member k's operand: its own worker and the next member's (eq. 4). */
static int sim_has_copy(const sim_inst_t *in, uint32_t k, uint32_t w) {
  return w == in->workers[k] || (in->n > 1 && w == in->workers[(k + 1) % in->n]);
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
        uint64_t eb = in->cur_buf[a.msg.u.task.exec_member], pb = a.msg.u.task.buf.addr;
        assert_false(m->dead[a.worker]);
        assert_false(m->dead[a.msg.u.task.provider]);
        assert_int_not_equal(eb, 0);
        assert_int_equal(in->cur_buf[a.msg.u.task.prov_member], pb);
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
        pe.kind = P_DONE;
        pe.worker = a.worker;
        pe.task_id = a.msg.u.task.task_id;
        pe.prov = a.msg.u.task.provider;
        pe.em = a.msg.u.task.exec_member;
        pe.pm = a.msg.u.task.prov_member;
        pe.pbuf = pb;
        sim_push(m, pe);
        m->tasks_seen++;
        break;
      }
      case PROTO_RECOVER:
        assert_false(m->dead[a.worker]);
        pe.kind = sim_has_copy(in, a.msg.u.recover.member, a.worker) ? P_REC_READY : P_RECFAIL;
        pe.worker = a.worker;
        pe.member = a.msg.u.recover.member;
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

static void sim_feed_ready(sim_t *m, const pend_t *pe, int recovered) {
  sim_inst_t *in = &m->in[pe->inst];
  uint32_t k = pe->member, reps[2];
  uint8_t nrep = 0;
  proto_msg_t r = ready_msg(in->key, k, in->p);
  if (!recovered && in->n > 1) {
    if (in->bogus[k]) reps[nrep++] = in->bogus[k];
    reps[nrep++] = in->workers[(k + 1) % in->n];
  }
  r.u.ready.buf.addr = sim_buf(m, pe->inst, (int)k);
  r.u.ready.recovered = (uint8_t)recovered;
  r.u.ready.nreplicas = nrep;
  memcpy(r.u.ready.replicas, reps, nrep * sizeof *reps);
  in->cur_buf[k] = r.u.ready.buf.addr;
  m->last_inst = pe->inst;
  m->last_buf = r.u.ready.buf.addr;
  m->last_worker = pe->worker;
  if (recovered) in->recovered_fed++;
  assert_int_equal(feed(m->s, pe->worker, &r), 0);
  in->created = 1;
}

static void sim_deliver(sim_t *m, pend_t pe) {
  sim_inst_t *in = &m->in[pe.inst];
  uint32_t k;
  if (m->dead[pe.worker]) return; /* a dead worker's message never arrives */
  switch (pe.kind) {
    case P_READY:
      sim_feed_ready(m, &pe, 0);
      break;
    case P_REC_READY:
      sim_feed_ready(m, &pe, 1);
      break;
    case P_RECFAIL:
      assert_int_equal(recfail(m->s, in->key, pe.member, pe.worker, DRED_ERR_STORAGE), 0);
      break;
    case P_DONE: {
      uint64_t eb = in->cur_buf[pe.em];
      uint32_t r = rndn(m, 100);
      uint64_t addr;
      uint32_t st = PROTO_TASK_OK;
      if (m->dead[pe.prov]) st = rndn(m, 3); /* read before it died, or not */
      else if (m->flaky && r < 5) st = PROTO_TASK_PROVIDER_LOST;
      else if (m->flaky && r < 8) st = PROTO_TASK_EXEC_CORRUPT;
      uint64_t exec_ns = 1 + rndn(m, 1000);
      if (st == PROTO_TASK_OK) {
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
      assert_int_equal(done(m->s, pe.task_id, pe.worker, st, exec_ns, addr), 0);
      break;
    }
  }
}

/* May w die without making the run unrecoverable?  Never a root, never both copies of an
 * operand (seed 002: a failure before the remote copy is stored cannot be recovered). */
static int sim_can_kill(const sim_t *m, uint32_t w) {
  int i;
  uint32_t k;
  if (m->dead[w]) return 0;
  for (i = 0; i < m->ninst; i++) {
    const sim_inst_t *in = &m->in[i];
    if (in->journaled) continue;
    if (!in->created || in->workers[in->p.u.ready.root] == w) return 0;
    for (k = 0; k < in->n; k++) {
      uint32_t own = in->workers[k], rep = in->workers[(k + 1) % in->n];
      if (own == w && (m->dead[rep] || rep == w)) return 0;
      if (rep == w && m->dead[own]) return 0;
    }
  }
  return 1;
}

static void sim_kill(sim_t *m) {
  uint32_t tries, w;
  sched_event_t ev;
  for (tries = 0; tries < 8; tries++) {
    w = 1 + rndn(m, m->nw);
    if (!sim_can_kill(m, w)) continue;
    m->dead[w] = 1;
    m->kills++;
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
    in->bogus[k] = sim_has_copy(in, k, b) ? 0 : b;
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
 * on its own with n-1 tasks and its ENDs in member order. */
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
  sim_free(&m);
}

/* Random rounds of 1..4 concurrent instances (some of more than 64 members), random
 * arrival and completion order, random worker deaths and flaky reads: every instance
 * must end OK with every operand counted exactly once. */
static void test_random_with_failures(void **state) {
  const char *env = getenv("SCHED_TEST_SEED");
  uint64_t seed = env ? strtoull(env, NULL, 0) : 20240601ULL;
  uint32_t round, total = 0, kills = 0, recovered = 0;
  for (round = 0; total < 200 || round < 150; round++) {
    sim_t m;
    uint32_t ninst, i, k, perm[SIM_MAXW];
    memset(&m, 0, sizeof m);
    m.rng = seed * 0x9e3779b97f4a7c15ULL + round + 1;
    m.nw = round % 10 == 9 ? 65 + rndn(&m, 60) : 2 + rndn(&m, 11);
    m.s = sched_new(m.nw, (sched_policy_t)rndn(&m, 3));
    m.flaky = (int)rndn(&m, 2);
    m.max_kills = rndn(&m, 4);
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
    sim_run(&m, 30);
    total += ninst;
    kills += m.kills;
    for (i = 0; i < ninst; i++) recovered += m.in[i].jrec;
    sim_free(&m);
  }
  print_message("random: seed %llu, %u instances, %u worker deaths, %u operands recovered\n",
                (unsigned long long)seed, total, kills, recovered);
  assert_true(total >= 200);
  assert_true(kills > 0);
  assert_true(recovered > 0);
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
      cmocka_unit_test(test_fault_recover_failed_falls_through),
      cmocka_unit_test(test_fault_adjacent_recovered_by_other_member),
      cmocka_unit_test(test_fault_several_instances),
      cmocka_unit_test(test_fault_new_reduction_on_dead_group),
      cmocka_unit_test(test_task_error_fails_instance),
      cmocka_unit_test(test_task_error_unknown_code),
      cmocka_unit_test(test_task_error_fails_instance), cmocka_unit_test(test_nomem_is_explicit),
      cmocka_unit_test(test_nomem_first_arrival), cmocka_unit_test(test_abandon_ends_for_everyone),
      cmocka_unit_test(test_random_with_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
