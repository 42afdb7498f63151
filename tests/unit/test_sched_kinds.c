/*
 * test_sched_kinds.c -- unit tests of the scheduler's allreduce and bcast rules
 * (master/sched/sched_distribute.c, and where they meet sched.c and sched_recover.c).
 *
 * Each test drives the state machine with the wire's own messages (common/proto.h), as the
 * master's adapter does, drains the actions and checks them: which worker gets INLINE,
 * DATA (offsets, lengths, the bytes) or END with which status, when PUSH goes out, and that
 * a kind disagreement is MISMATCH.  Worker w runs member w-1.  Freeing follows the
 * adapter's rule: an action's `owned` is freed once it is taken (a distributed result
 * rides on the instance's journal record, after every DATA that points into it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../master/sched/sched.h"

#define MAXACT 4096
static sched_action_t A[MAXACT];
static size_t NA;

/* Take every pending action; the bytes INLINE and DATA carry are checked before the
 * next drain frees what they point into, so callers check right after draining. */
static void *held[MAXACT];
static size_t nheld;
static size_t drain(sched_t *s) {
  size_t i;
  for (i = 0; i < nheld; i++) free(held[i]);
  nheld = 0;
  NA = 0;
  while (NA < MAXACT && sched_next_action(s, &A[NA])) {
    if (A[NA].owned != NULL) held[nheld++] = A[NA].owned;
    NA++;
  }
  return NA;
}

static sched_t *mk(uint32_t n) {
  uint32_t w[16], k;
  sched_t *s = sched_new(n, SCHED_POLICY_FIRST);
  assert_non_null(s);
  for (k = 0; k < n; k++) w[k] = k + 1;
  assert_int_equal(sched_group_define(s, 7, n, w), 0);
  return s;
}

static int feed(sched_t *s, uint32_t worker, const proto_msg_t *m) {
  sched_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SCHED_EV_MESSAGE;
  ev.worker = worker;
  ev.msg = *m;
  return sched_feed(s, &ev);
}

static int wfail(sched_t *s, uint32_t w) {
  sched_event_t ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SCHED_EV_WORKER_FAILED;
  ev.worker = w;
  return sched_feed(s, &ev);
}

/* Member m's READY: kind, count ints, root, inline or not, `data` (data_len bytes). */
static proto_msg_t rdy(int64_t tag, uint32_t m, uint8_t kind, uint64_t count, uint32_t root,
                       int inl, const uint8_t *data, uint32_t len) {
  proto_msg_t p;
  memset(&p, 0, sizeof p);
  p.type = PROTO_READY;
  p.u.ready.group = 7;
  p.u.ready.tag = tag;
  p.u.ready.member = m;
  p.u.ready.root = root;
  p.u.ready.count = count;
  p.u.ready.type_size = 4;
  p.u.ready.extent = 4;
  p.u.ready.op = 3;
  p.u.ready.commutative = 1;
  p.u.ready.kind = kind;
  p.u.ready.inl = (uint8_t)inl;
  p.u.ready.data = data;
  p.u.ready.data_len = len;
  p.u.ready.buf.addr = 1000u + m;
  p.u.ready.buf.pool_off = -1;
  p.u.ready.buf.len = count * 4;
  return p;
}

static proto_msg_t dat(int64_t tag, uint64_t off, uint64_t total, const uint8_t *d, uint32_t len) {
  proto_msg_t p;
  memset(&p, 0, sizeof p);
  p.type = PROTO_DATA;
  p.u.data.group = 7;
  p.u.data.tag = tag;
  p.u.data.offset = off;
  p.u.data.total = total;
  p.u.data.data = d;
  p.u.data.len = len;
  return p;
}

/* The executor w reports task `id` done. */
static int task_ok(sched_t *s, uint32_t w, uint64_t id) {
  proto_msg_t dn;
  memset(&dn, 0, sizeof dn);
  dn.type = PROTO_DONE;
  dn.u.done.task_id = id;
  dn.u.done.status = PROTO_TASK_OK;
  dn.u.done.exec_ns = 10;
  dn.u.done.buf.pool_off = -1;
  return feed(s, w, &dn);
}

static int count_sends(proto_type_t t, uint32_t w) {
  int c = 0;
  for (size_t i = 0; i < NA; i++)
    if (A[i].type == SCHED_ACT_SEND && A[i].msg.type == t && (w == 0 || A[i].worker == w)) c++;
  return c;
}

static int end_of(uint32_t w) { /* END's status to w, or -1 */
  for (size_t i = 0; i < NA; i++)
    if (A[i].type == SCHED_ACT_SEND && A[i].msg.type == PROTO_END && A[i].worker == w)
      return A[i].msg.u.end.status;
  return -1;
}

/* Finish every task the first policy dispatches, round after round, until PUSH. */
static void tasks_to_push(sched_t *s) {
  for (int round = 0; round < 4; round++) {
    drain(s);
    for (size_t i = 0; i < NA; i++)
      if (A[i].type == SCHED_ACT_SEND && A[i].msg.type == PROTO_TASK)
        assert_int_equal(task_ok(s, A[i].worker, A[i].msg.u.task.task_id), 0);
    if (count_sends(PROTO_PUSH, 0) > 0) break;
  }
}

/* The DATA just drained: all to worker w, in order from offset `got`, the bytes of `res`
 * there.  Returns the offset after them. */
static uint64_t data_to(uint32_t w, const uint8_t *res, uint64_t got) {
  for (size_t i = 0; i < NA; i++)
    if (A[i].type == SCHED_ACT_SEND && A[i].msg.type == PROTO_DATA) {
      assert_int_equal(A[i].worker, w);
      assert_int_equal(A[i].msg.u.data.offset, got);
      assert_memory_equal(A[i].msg.u.data.data, res + got, A[i].msg.u.data.len);
      got += A[i].msg.u.data.len;
    }
  return got;
}

/* Inline allreduce: every member gets the same INLINE (every slot filled) and OK. */
static void test_allreduce_inline_to_everyone(void **st) {
  sched_t *s = mk(3);
  uint8_t op[3][8];
  uint32_t k;
  (void)st;
  for (k = 0; k < 3; k++) {
    proto_msg_t r;
    memset(op[k], (int)(k + 1), sizeof op[k]);
    r = rdy(-1, k, PROTO_KIND_ALLREDUCE, 2, 0, 1, op[k], 8);
    assert_int_equal(feed(s, k + 1, &r), 0);
    drain(s);
    if (k < 2) assert_int_equal(count_sends(PROTO_INLINE, 0), 0);
  }
  assert_int_equal(count_sends(PROTO_INLINE, 0), 3);
  for (size_t i = 0; i < NA; i++)
    if (A[i].type == SCHED_ACT_SEND && A[i].msg.type == PROTO_INLINE) {
      assert_int_equal(A[i].msg.u.inl.n, 3);
      for (k = 0; k < 3; k++) assert_memory_equal(A[i].msg.u.inl.data + 8 * k, op[k], 8);
    }
  for (k = 1; k <= 3; k++) assert_int_equal(end_of(k), DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  drain(s);
  sched_free(s);
}

/* Inline allreduce: member 0 dying after its READY costs nothing (not ROOT_FAILED). */
static void test_allreduce_inline_root_death_after_ready(void **st) {
  sched_t *s = mk(3);
  uint8_t op[8] = {1};
  proto_msg_t r = rdy(-1, 0, PROTO_KIND_ALLREDUCE, 2, 0, 1, op, 8);
  (void)st;
  assert_int_equal(feed(s, 1, &r), 0);
  assert_int_equal(wfail(s, 1), 0);
  r = rdy(-1, 1, PROTO_KIND_ALLREDUCE, 2, 0, 1, op, 8);
  assert_int_equal(feed(s, 2, &r), 0);
  r = rdy(-1, 2, PROTO_KIND_ALLREDUCE, 2, 0, 1, op, 8);
  assert_int_equal(feed(s, 3, &r), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_INLINE, 0), 2);
  assert_int_equal(end_of(2), DRED_OK);
  assert_int_equal(end_of(3), DRED_OK);
  assert_int_equal(end_of(1), -1);
  drain(s);
  sched_free(s);
}

/* Members that disagree on the kind of the k-th auto call: MISMATCH for all. */
static void test_kind_mismatch(void **st) {
  sched_t *s = mk(2);
  uint8_t op[8] = {0};
  proto_msg_t r = rdy(-1, 0, PROTO_KIND_ALLREDUCE, 2, 0, 1, op, 8);
  (void)st;
  assert_int_equal(feed(s, 1, &r), 0);
  r = rdy(-1, 1, PROTO_KIND_REDUCE, 2, 0, 1, op, 8);
  assert_int_equal(feed(s, 2, &r), 0);
  drain(s);
  assert_int_equal(end_of(1), DRED_ERR_MISMATCH);
  assert_int_equal(end_of(2), DRED_ERR_MISMATCH);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* A large allreduce: tasks as a reduce to member 0, then PUSH; member 0's DATA reaches the
 * others piece by piece; END once each has everything. */
static void test_allreduce_large_push_and_data(void **st) {
  sched_t *s = mk(2);
  const uint64_t count = 100000, bytes = count * 4;
  uint8_t *res = malloc(bytes);
  uint64_t off = 0, got = 0;
  proto_msg_t r, d;
  (void)st;
  for (uint64_t i = 0; i < bytes; i++) res[i] = (uint8_t)(i * 7);
  r = rdy(3, 1, PROTO_KIND_ALLREDUCE, count, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 2, &r), 0);
  r = rdy(3, 0, PROTO_KIND_ALLREDUCE, count, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 1, &r), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_TASK, 1), 1); /* executor: member 0, the root */
  assert_int_equal(task_ok(s, 1, A[0].msg.u.task.task_id), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_PUSH, 1), 1);
  assert_int_equal(count_sends(PROTO_END, 0), 0);
  /* DATA from anyone but the holder is refused */
  d = dat(3, 0, bytes, res, 100);
  assert_int_equal(feed(s, 2, &d), DRED_ERR_ARG);
  while (off < bytes) {
    uint32_t len = (uint32_t)(bytes - off < PROTO_DATA_MAX ? bytes - off : PROTO_DATA_MAX);
    d = dat(3, off, bytes, res + off, len);
    assert_int_equal(feed(s, 1, &d), 0);
    drain(s);
    got = data_to(2, res, got);
    off += len;
  }
  assert_int_equal(got, bytes);
  assert_int_equal(end_of(1), DRED_OK);
  assert_int_equal(end_of(2), DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  drain(s);
  free(res);
  sched_free(s);
}

/* A large allreduce whose member 0 dies after PUSH, before its DATA is whole: every
 * survivor gets ROOT_FAILED, never a partial result. */
static void test_allreduce_holder_lost(void **st) {
  sched_t *s = mk(3);
  uint8_t piece[64] = {0};
  proto_msg_t r, d;
  uint32_t k;
  (void)st;
  for (k = 0; k < 3; k++) {
    r = rdy(4, k, PROTO_KIND_ALLREDUCE, 1000, 0, 0, NULL, 0);
    assert_int_equal(feed(s, k + 1, &r), 0);
  }
  tasks_to_push(s);
  assert_int_equal(count_sends(PROTO_PUSH, 1), 1);
  d = dat(4, 0, 4000, piece, 64);
  assert_int_equal(feed(s, 1, &d), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_DATA, 0), 2); /* the piece, to members 1 and 2 */
  assert_int_equal(wfail(s, 1), 0);
  drain(s);
  assert_int_equal(end_of(2), DRED_ERR_ROOT_FAILED);
  assert_int_equal(end_of(3), DRED_ERR_ROOT_FAILED);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* The adapter's room for DATA per worker (sched_set_room), as this test sets it. */
static int room_left[8];
static int test_room(void *arg, uint32_t w) {
  (void)arg;
  return room_left[w];
}

/* A member arriving after the master holds a large bcast's data is sent it a few pieces
 * per sched_dist_pump, as room() allows, in order, its END after the last; a member that
 * dies while held back frees the instance. */
static void test_bcast_paced_by_room(void **st) {
  sched_t *s = mk(3);
  uint64_t bytes = 10 * (uint64_t)PROTO_DATA_MAX + 8, off = 0, got = 0;
  uint8_t *res = malloc(bytes);
  proto_msg_t r, d;
  int pumps = 0;
  (void)st;
  assert_non_null(res);
  for (uint64_t i = 0; i < bytes; i++) res[i] = (uint8_t)(i * 13 + i / 4099);
  sched_set_room(s, test_room, NULL);
  room_left[1] = room_left[2] = room_left[3] = 3;
  r = rdy(5, 0, PROTO_KIND_BCAST, bytes / 4, 0, 0, NULL, 0); /* the root: worker 1 */
  assert_int_equal(feed(s, 1, &r), 0);
  while (off < bytes) {
    uint32_t len = (uint32_t)(bytes - off < PROTO_DATA_MAX ? bytes - off : PROTO_DATA_MAX);
    d = dat(5, off, bytes, res + off, len);
    assert_int_equal(feed(s, 1, &d), 0);
    off += len;
  }
  drain(s);
  r = rdy(5, 1, PROTO_KIND_BCAST, bytes / 4, 0, 0, NULL, 0); /* late: all is here */
  assert_int_equal(feed(s, 2, &r), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_DATA, 2), 3); /* room for 3 */
  got = data_to(2, res, got);
  assert_int_equal(end_of(2), -1);
  while (end_of(2) == -1 && pumps < 20) {
    pumps++;
    assert_int_equal(sched_dist_pump(s), 1);
    drain(s);
    assert_true(count_sends(PROTO_DATA, 2) <= 3);
    got = data_to(2, res, got);
  }
  assert_int_equal(pumps, 3); /* 11 pieces: 3 + 3 + 3 + 2 */
  assert_true(got == bytes);
  assert_int_equal(end_of(2), DRED_OK);
  /* no room at all: held back, and the member's death ends what it was owed */
  room_left[3] = 0;
  r = rdy(5, 2, PROTO_KIND_BCAST, bytes / 4, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 3, &r), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_DATA, 3), 0);
  assert_int_equal(sched_dist_pump(s), 0);
  assert_int_equal(sched_instances(s), 1);
  assert_int_equal(wfail(s, 3), 0);
  drain(s);
  assert_int_equal(sched_instances(s), 0);
  assert_int_equal(sched_dist_pump(s), 0);
  free(res);
  sched_free(s);
}

/* Bcast: early arrivers are served as soon as the root's data is in; a later arrival is
 * served at once; nobody waits for the others. */
static void test_bcast_early_arrivers(void **st) {
  sched_t *s = mk(4);
  uint8_t data[40];
  proto_msg_t r;
  (void)st;
  memset(data, 9, sizeof data);
  r = rdy(-1, 1, PROTO_KIND_BCAST, 10, 2, 1, NULL, 0);
  assert_int_equal(feed(s, 2, &r), 0);
  drain(s);
  assert_int_equal(NA, 0); /* the root's data is not in yet */
  r = rdy(-1, 2, PROTO_KIND_BCAST, 10, 2, 1, data, 40);
  assert_int_equal(feed(s, 3, &r), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_DATA, 2), 1);
  assert_int_equal(end_of(2), DRED_OK);
  assert_int_equal(end_of(3), DRED_OK); /* the root */
  assert_int_equal(end_of(1), -1);      /* not arrived: nothing yet */
  for (size_t i = 0; i < NA; i++)
    if (A[i].type == SCHED_ACT_SEND && A[i].msg.type == PROTO_DATA)
      assert_memory_equal(A[i].msg.u.data.data, data, 40);
  r = rdy(-1, 0, PROTO_KIND_BCAST, 10, 2, 1, NULL, 0);
  assert_int_equal(feed(s, 1, &r), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_DATA, 1), 1);
  assert_int_equal(end_of(1), DRED_OK);
  assert_int_equal(sched_instances(s), 1); /* member 3 still owed */
  r = rdy(-1, 3, PROTO_KIND_BCAST, 10, 2, 1, NULL, 0);
  assert_int_equal(feed(s, 4, &r), 0);
  drain(s);
  assert_int_equal(end_of(4), DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  drain(s);
  sched_free(s);
}

/* Bcast: a non-root member that dies before arriving costs the others nothing; the root
 * dying before its data is in is ROOT_FAILED; after, survivors still get the data. */
static void test_bcast_faults(void **st) {
  sched_t *s = mk(3);
  uint8_t big[PROTO_DATA_MAX + 100];
  proto_msg_t r, d;
  (void)st;
  memset(big, 5, sizeof big);
  /* tag 1: member 2 dies before arriving */
  r = rdy(1, 1, PROTO_KIND_BCAST, sizeof big / 4, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 2, &r), 0);
  assert_int_equal(wfail(s, 3), 0);
  r = rdy(1, 0, PROTO_KIND_BCAST, sizeof big / 4, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 1, &r), 0);
  d = dat(1, 0, sizeof big, big, PROTO_DATA_MAX);
  assert_int_equal(feed(s, 1, &d), 0);
  /* the root dies now: member 1 has a piece, the rest never comes */
  assert_int_equal(wfail(s, 1), 0);
  drain(s);
  assert_int_equal(end_of(2), DRED_ERR_ROOT_FAILED);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);

  /* tag 2: the root's data is whole at the master before it dies: the late member gets it */
  s = mk(3);
  r = rdy(2, 0, PROTO_KIND_BCAST, sizeof big / 4, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 1, &r), 0);
  d = dat(2, 0, sizeof big, big, PROTO_DATA_MAX);
  assert_int_equal(feed(s, 1, &d), 0);
  d = dat(2, PROTO_DATA_MAX, sizeof big, big + PROTO_DATA_MAX, 100);
  assert_int_equal(feed(s, 1, &d), 0);
  drain(s);
  assert_int_equal(end_of(1), DRED_OK);
  assert_int_equal(wfail(s, 1), 0);
  r = rdy(2, 2, PROTO_KIND_BCAST, sizeof big / 4, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 3, &r), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_DATA, 3), 2);
  assert_int_equal(end_of(3), DRED_OK);
  r = rdy(2, 1, PROTO_KIND_BCAST, sizeof big / 4, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 2, &r), 0);
  drain(s);
  assert_int_equal(end_of(2), DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  drain(s);
  sched_free(s);
}

/* A large-path allreduce of zero bytes (inline off): nothing to PUSH, everyone told OK
 * when the reduction is whole. */
static void test_allreduce_empty(void **st) {
  sched_t *s = mk(2);
  proto_msg_t r;
  (void)st;
  r = rdy(6, 0, PROTO_KIND_ALLREDUCE, 0, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 1, &r), 0);
  r = rdy(6, 1, PROTO_KIND_ALLREDUCE, 0, 0, 0, NULL, 0);
  assert_int_equal(feed(s, 2, &r), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_TASK, 1), 1);
  assert_int_equal(task_ok(s, 1, A[0].msg.u.task.task_id), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_PUSH, 0), 0);
  assert_int_equal(end_of(1), DRED_OK);
  assert_int_equal(end_of(2), DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

static proto_msg_t have_msg(int64_t tag, uint32_t m, int32_t error) {
  proto_msg_t p;
  memset(&p, 0, sizeof p);
  p.type = PROTO_HAVE;
  p.u.recover.group = 7;
  p.u.recover.tag = tag;
  p.u.recover.member = m;
  p.u.recover.error = error;
  return p;
}

/* The holder (worker 1) sends `res` (bytes long) from `off` as DATA of 4 KiB, at most
 * `pieces` of them, draining the actions between pieces but not after the last. */
static void holder_data(sched_t *s, int64_t tag, const uint8_t *res, uint64_t bytes,
                        uint64_t off, int pieces) {
  for (int p = 0; off < bytes && p < pieces; p++) {
    uint32_t len = (uint32_t)(bytes - off < 4096 ? bytes - off : 4096);
    proto_msg_t d = dat(tag, off, bytes, res + off, len);
    assert_int_equal(feed(s, 1, &d), 0);
    off += len;
    if (off < bytes) drain(s);
  }
}

/* A large allreduce of 3 whose member 2 (worker 3) follows its node's relay leader:
 * every member READY (member 2's saying it follows), every task done, PUSH answered
 * with `pieces` of the holder's DATA (all of it unless fewer). */
static void relay_run(sched_t *s, int64_t tag, uint64_t count, const uint8_t *res, int pieces) {
  proto_msg_t r;
  for (uint32_t k = 0; k < 3; k++) {
    r = rdy(tag, k, PROTO_KIND_ALLREDUCE, count, 0, 0, NULL, 0);
    if (k == 2) r.u.ready.have = PROTO_HAVE_FOLLOW;
    assert_int_equal(feed(s, k + 1, &r), 0);
  }
  tasks_to_push(s);
  assert_int_equal(count_sends(PROTO_PUSH, 1), 1);
  holder_data(s, tag, res, count * 4, 0, pieces);
}

/* A relay follower is sent no DATA and no END until its HAVE; HAVE with error 0 is
 * answered with END alone. */
static void test_allreduce_follower_have(void **st) {
  sched_t *s = mk(3);
  uint8_t res[8000] = {1, 2, 3};
  proto_msg_t h;
  (void)st;
  h = have_msg(5, 1, 0); /* no instance yet */
  assert_int_equal(feed(s, 2, &h), DRED_ERR_ARG);
  relay_run(s, 5, 2000, res, 100);
  drain(s);
  assert_int_equal(end_of(2), DRED_OK); /* the leader got its DATA and END */
  assert_int_equal(end_of(3), -1);      /* the follower nothing */
  assert_int_equal(count_sends(PROTO_DATA, 3), 0);
  assert_int_equal(sched_instances(s), 1);
  h = have_msg(5, 1, 0); /* member 1 does not follow */
  assert_int_equal(feed(s, 2, &h), DRED_ERR_ARG);
  h = have_msg(5, 2, 0);
  assert_int_equal(feed(s, 2, &h), DRED_ERR_ARG); /* not member 2's worker */
  assert_int_equal(feed(s, 3, &h), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_DATA, 3), 0);
  assert_int_equal(end_of(3), DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* The relay failed (its leader died, say): the follower's HAVE carries an error and it is
 * sent the whole result, then END. */
static void test_allreduce_follower_relay_failed(void **st) {
  sched_t *s = mk(3);
  uint8_t res[8000];
  proto_msg_t h;
  uint64_t got = 0;
  (void)st;
  for (int i = 0; i < 8000; i++) res[i] = (uint8_t)(i * 13);
  relay_run(s, 6, 2000, res, 100);
  drain(s);
  h = have_msg(6, 2, DRED_ERR_ROOT_FAILED);
  assert_int_equal(feed(s, 3, &h), 0);
  drain(s);
  got = data_to(3, res, got);
  assert_int_equal(got, 8000);
  assert_int_equal(end_of(3), DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* The holder dies before the result is whole: the others are told ROOT_FAILED at once,
 * the follower only after its HAVE (it may be reading its leader's block until then);
 * a follower whose worker dies is owed nothing. */
static void test_allreduce_follower_told_after_have(void **st) {
  sched_t *s = mk(3);
  uint8_t res[8000] = {0};
  proto_msg_t h;
  (void)st;
  relay_run(s, 7, 2000, res, 1);
  drain(s);
  assert_int_equal(wfail(s, 1), 0);
  drain(s);
  assert_int_equal(end_of(2), DRED_ERR_ROOT_FAILED);
  assert_int_equal(end_of(3), -1);
  assert_int_equal(sched_instances(s), 1);
  h = have_msg(7, 2, DRED_ERR_ROOT_FAILED);
  assert_int_equal(feed(s, 3, &h), 0);
  drain(s);
  assert_int_equal(count_sends(PROTO_DATA, 3), 0);
  assert_int_equal(end_of(3), DRED_ERR_ROOT_FAILED);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);

  s = mk(3);
  relay_run(s, 8, 2000, res, 1);
  drain(s);
  assert_int_equal(wfail(s, 3), 0); /* the follower's worker */
  drain(s);
  assert_int_equal(sched_instances(s), 1); /* the result still goes to member 1 */
  holder_data(s, 8, res, 8000, 4096, 100);
  drain(s);
  assert_int_equal(end_of(2), DRED_OK);
  assert_int_equal(sched_instances(s), 0);
  sched_free(s);
}

/* Explicit tags are per kind: the same tag of two kinds is two instances (keys differ). */
static void test_explicit_keys_per_kind(void **st) {
  (void)st;
  assert_true(proto_key_kind(5, 0, PROTO_KIND_REDUCE) != proto_key_kind(5, 0, PROTO_KIND_ALLREDUCE));
  assert_true(proto_key_kind(5, 1, PROTO_KIND_REDUCE) != proto_key_kind(5, 0, PROTO_KIND_BCAST));
  assert_true(proto_key_kind(5, 0, PROTO_KIND_REDUCE) == proto_key_explicit(5, 0));
  assert_true(proto_key_tag(proto_key_kind(5, 9, PROTO_KIND_BCAST)) == 5);
  assert_true(proto_key_kind(INT32_MAX, (1u << 30) - 1, PROTO_KIND_BCAST) >= 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_allreduce_inline_to_everyone),
      cmocka_unit_test(test_allreduce_inline_root_death_after_ready),
      cmocka_unit_test(test_kind_mismatch),
      cmocka_unit_test(test_allreduce_large_push_and_data),
      cmocka_unit_test(test_allreduce_holder_lost),
      cmocka_unit_test(test_allreduce_follower_have),
      cmocka_unit_test(test_allreduce_follower_relay_failed),
      cmocka_unit_test(test_allreduce_follower_told_after_have),
      cmocka_unit_test(test_bcast_early_arrivers),
      cmocka_unit_test(test_bcast_faults),
      cmocka_unit_test(test_bcast_paced_by_room),
      cmocka_unit_test(test_allreduce_empty),
      cmocka_unit_test(test_explicit_keys_per_kind),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
