/*
 * sched_harness.h -- what the scheduler's unit tests (tests/unit/test_sched_*.c) share.
 *
 * The scheduler (master/sched/sched*.c) is a pure state machine, so every rule is driven
 * directly: feed an event, drain the actions, and compare them one by one (type, executor,
 * provider, holder members, exec_is_left, END status per worker, journal fields).  Events
 * are the wire's own messages (common/proto.h) with their sender, built by the helpers
 * below as a worker would send them, and messages come out the same way.
 *
 * A header, not a .c: the Makefile builds each tests/unit/test_*.c into its own binary
 * with the CORE objects and nothing else.  Its functions are static inline so a test file
 * that does not use one of them still compiles under -Wall -Werror; each binary has its
 * own copy of A[], NA and g_now.
 */
#ifndef DRED_TESTS_SCHED_HARNESS_H
#define DRED_TESTS_SCHED_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/placement.h"
#include "../../master/sched/sched.h"

/* ---- helpers ----------------------------------------------------------------------- */

#define MAXACT 4096
static sched_action_t A[MAXACT]; /* the actions of the last drain, FAILED set aside */
static size_t NA;
/* The FAILED sends of the last drain (every live worker is told of each death), and
 * where each stood among all the actions drained (raw_pos). */
static sched_action_t F[MAXACT];
static size_t NF, raw_pos[MAXACT];
static uint64_t g_now; /* time stamped on the next event */

static inline int is_failed_send(const sched_action_t *a) {
  return a->type == SCHED_ACT_SEND && a->msg.type == PROTO_FAILED;
}

/* Take every pending action: A[0..NA) the instances' own, F[0..NF) the FAILED sends.
 * Returns NA. */
static inline size_t drain(sched_t *s) {
  sched_action_t a;
  size_t raw = 0;
  NA = NF = 0;
  while (NA < MAXACT && NF < MAXACT && sched_next_action(s, &a)) {
    if (is_failed_send(&a)) {
      raw_pos[NF] = raw;
      F[NF++] = a;
    } else {
      A[NA++] = a;
    }
    raw++;
  }
  return NA;
}

static inline sched_key_t K(uint64_t group, int64_t tag) {
  sched_key_t k = {group, tag};
  return k;
}

/* The READY every member of an instance sends, as far as they must agree on it (the wire's
 * own message, common/proto.h); ready_full() adds who sends it and where its buffer is. */
static inline proto_msg_t prm(uint32_t root, int commutative) {
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
static inline int feed(sched_t *s, uint32_t worker, const proto_msg_t *msg) {
  sched_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SCHED_EV_MESSAGE;
  ev.now_ns = g_now;
  ev.worker = worker;
  ev.msg = *msg;
  return sched_feed(s, &ev);
}

static inline uint64_t bufaddr(uint32_t worker, uint32_t member) { return 1000u * worker + member; }

/* Member m's READY for instance k from worker w, built on the template p. */
static inline proto_msg_t ready_msg(sched_key_t k, uint32_t m, proto_msg_t p) {
  p.type = PROTO_READY;
  p.u.ready.group = k.group;
  p.u.ready.tag = k.tag;
  p.u.ready.member = m;
  p.u.ready.buf.pool_off = -1;
  return p;
}

static inline int ready_full(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p,
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

static inline int ready(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p) {
  return ready_full(s, k, m, w, p, 0, 0, NULL);
}

static inline int ready_rep(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p,
                            uint32_t replica) {
  return ready_full(s, k, m, w, p, 0, 1, &replica);
}

static inline int rec_ready(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, proto_msg_t p) {
  return ready_full(s, k, m, w, p, 1, 0, NULL);
}

/* A DONE from worker w; `error` goes with PROTO_TASK_ERROR. */
static inline int done_err(sched_t *s, uint64_t id, uint32_t w, uint32_t st, int32_t error,
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

static inline int done(sched_t *s, uint64_t id, uint32_t w, uint32_t st, uint64_t exec_ns,
                       uint64_t addr) {
  return done_err(s, id, w, st, 0, exec_ns, addr);
}

static inline int ok(sched_t *s, uint64_t id, uint32_t w) {
  return done(s, id, w, PROTO_TASK_OK, 10, 90000 + id);
}

/* A DONE with its `absorbed` flag: the absorption tests and the simulator's workers. */
static inline int done_full(sched_t *s, uint64_t id, uint32_t w, uint32_t st, uint64_t exec_ns,
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

static inline int wfail(sched_t *s, uint32_t w) {
  sched_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SCHED_EV_WORKER_FAILED;
  ev.now_ns = g_now;
  ev.worker = w;
  return sched_feed(s, &ev);
}

/* RECOVER_FAILED and ABANDON: RECOVER's layout, from worker w. */
static inline int recover_like(sched_t *s, proto_type_t type, sched_key_t k, uint32_t m, uint32_t w,
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

static inline int recfail(sched_t *s, sched_key_t k, uint32_t m, uint32_t w, int32_t err) {
  return recover_like(s, PROTO_RECOVER_FAILED, k, m, w, err);
}

/* Whether action a sends a message of `type`. */
static inline int is_send(const sched_action_t *a, proto_type_t type) {
  return a->type == SCHED_ACT_SEND && a->msg.type == type;
}

/* Group `id` of n members; member k runs on workers[k]. */
static inline void group(sched_t *s, uint64_t id, uint32_t n, const uint32_t *workers) {
  assert_int_equal(sched_group_define(s, id, n, workers), 0);
}

/* Group `id` of n members, member k on worker k+1. */
static inline void group_seq(sched_t *s, uint64_t id, uint32_t n) {
  uint32_t w[256], k;
  for (k = 0; k < n; k++) w[k] = k + 1;
  group(s, id, n, w);
}

/* Every message action names its instance in the message itself, as the key says. */
static inline void same_key(const sched_action_t *a, uint64_t group, int64_t tag) {
  assert_int_equal(group, a->key.group);
  assert_int_equal(tag, a->key.tag);
}

static inline void is_task(const sched_action_t *a, uint64_t id, uint32_t exec, uint32_t prov,
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

static inline void is_end(const sched_action_t *a, uint32_t w, int32_t status) {
  assert_true(is_send(a, PROTO_END));
  assert_int_equal(a->worker, w);
  assert_int_equal(a->msg.u.end.status, status);
  same_key(a, a->msg.u.end.group, a->msg.u.end.tag);
}

static inline void is_recover(const sched_action_t *a, uint32_t w, uint32_t m) {
  assert_true(is_send(a, PROTO_RECOVER));
  assert_int_equal(a->worker, w);
  assert_int_equal(a->msg.u.recover.member, m);
  same_key(a, a->msg.u.recover.group, a->msg.u.recover.tag);
}

static inline void is_jtask(const sched_action_t *a, uint64_t id, int32_t status) {
  assert_int_equal(a->type, SCHED_ACT_JOURNAL_TASK);
  assert_int_equal(a->u.jtask.task_id, id);
  assert_int_equal(a->u.jtask.status, status);
}

static inline void is_jred(const sched_action_t *a, uint32_t members, uint32_t tasks,
                           uint32_t recovered, int32_t status) {
  assert_int_equal(a->type, SCHED_ACT_JOURNAL_REDUCTION);
  assert_int_equal(a->u.jred.members, members);
  assert_int_equal(a->u.jred.bytes, 400);
  assert_int_equal(a->u.jred.tasks, tasks);
  assert_int_equal(a->u.jred.recovered, recovered);
  assert_int_equal(a->u.jred.status, status);
}

#endif /* DRED_TESTS_SCHED_HARNESS_H */
