/*
 * test_fast.c -- lib/shm/fast.c, the meeting place's fast lane (meet.h, "The fast lane"),
 * rule by rule on an ordinary shared mapping (no MPI).
 *
 * Everyone posted: every member's look says the same (DRED_OK with every operand the
 * collective reads at member x bytes, or MISMATCH), in any posting order, seq after seq
 * through the ring and round it; nobody is done before the last member posted.  A member that goes the slot's way (an arrival in the
 * slot) or is declared failed before posting turns every posted member's look to "the
 * slot" -- and one declared failed cannot post after that; the slot then decides as for
 * anyone.  A member may not post while a living peer has not finished with the posts of
 * seq - DEPTH, and is not held back by a dead one.  What may not post (a group or operand
 * too large, a relay ring, a member declared failed) says so.  A bcast is served from
 * its root's post (inline or by reference to the root's block), early arrivals first and
 * nobody waiting for the last: a member that disagrees gets MISMATCH; one that goes the
 * slot's way after the root posted is served from the post as it arrives (the slot stays
 * free), one that went before keeps the root out and everyone meets in the slot; a
 * non-root declared failed costs nothing, the root does only if it had not posted.  A
 * bcast's non-roots post nothing: they watch for the root's post.  An allreduce whose
 * operands exceed a post is looked at by reference: every member's reference back, or
 * INTERNAL for one that does not name the agreed size.  A nonblocking call's post is
 * recorded in the slot by whoever opens it (its member's own arrival then only joins), even
 * when its member was declared failed after posting; only posts whose members had no other
 * nonblocking post unresolved count as clean; and a member gives no ack over its own
 * unresolved nonblocking post.
 * Waiting works across processes, polling and asleep, and is bounded by its timeout.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../include/dred_status.h"
#include "../../lib/shm/meet.h"

#define N 4
static const uint32_t WORKERS[N] = {20, 21, 22, 23};

static dred_meet_table_t *table_new(void) {
  void *mem = mmap(NULL, dred_meet_table_bytes(), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(mem != MAP_FAILED);
  assert_int_equal(dred_meet_table_init(mem), 0);
  return mem;
}

static void table_free(dred_meet_table_t *t) { munmap(t, dred_meet_table_bytes()); }

/* `count` 4-byte ints of `kind` rooted at `root`: what members agree on unless changed */
static proto_params_t params(uint32_t kind, uint64_t count, uint32_t root) {
  proto_params_t p;
  memset(&p, 0, sizeof p);
  p.count = count;
  p.type_size = 4;
  p.extent = 4;
  p.type_sig = 0x51u;
  p.root = root;
  p.op = 3;
  p.commutative = 1;
  p.inl = 1;
  p.kind = (uint8_t)kind;
  return p;
}

static unsigned char pattern(uint64_t seq, uint32_t k, size_t i) {
  return (unsigned char)(seq * 11 + k * 31 + i * 5 + 3);
}

/* Member k posts seq as `how` says (DRED_MEET_POST_*): its operand (none at a reduce's
 * root). */
static int post_how(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p, int how) {
  unsigned char op[DRED_MEET_FAST_DATA];
  size_t bytes = (size_t)(p->count * p->extent), i;
  /* a reduce's root gives nothing, nor does a bcast's non-root */
  if ((p->kind == PROTO_KIND_REDUCE && k == p->root) || (p->kind == PROTO_KIND_BCAST && k != p->root))
    bytes = 0;
  if (bytes > sizeof op) return dred_meet_fast_post_as(r, seq, k, p, NULL, bytes, 0, how);
  for (i = 0; i < bytes; i++) op[i] = pattern(seq, k, i);
  return dred_meet_fast_post_as(r, seq, k, p, op, bytes, 0, how);
}

static int post(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p) {
  return post_how(r, seq, k, p, DRED_MEET_POST_CLEAN);
}

static unsigned char take[DRED_MEET_FAST_MEMBERS * DRED_MEET_FAST_DATA];

/* Member k's look: its return (1 all posted, 2 served from a bcast root's post); *st the
 * status when decided. */
static int look(dred_meet_ring_t *r, uint64_t seq, uint32_t k, int *st) {
  int rc;
  *st = -12345;
  memset(take, 0, sizeof take);
  rc = dred_meet_fast_look(r, seq, k, take, sizeof take, st);
  if (rc > 0) dred_meet_fast_done(r, seq, k); /* as a member does, once done */
  return rc;
}

/* A bcast's non-root k watches for its root's post: its return; *st the status when
 * decided. */
static int watch(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p, int *st) {
  int rc;
  *st = -12345;
  memset(take, 0, sizeof take);
  rc = dred_meet_fast_watch(r, seq, k, p, take, sizeof take, st);
  if (rc > 0) dred_meet_fast_done(r, seq, k);
  return rc;
}

/* `buf` holds every operand a collective of `p` reads (`every`: every member's), member
 * k's at k x bytes (a bcast: its root's). */
static void assert_operands(const unsigned char *buf, uint64_t seq, uint32_t n,
                            const proto_params_t *p, int every) {
  size_t bytes = (size_t)(p->count * p->extent), i;
  uint32_t k;
  for (k = 0; k < n; k++) {
    if (!every && ((p->kind == PROTO_KIND_REDUCE && k == p->root) ||
                   (p->kind == PROTO_KIND_BCAST && k != p->root)))
      continue;
    for (i = 0; i < bytes; i++)
      if (buf[k * bytes + i] != pattern(seq, k, i))
        fail_msg("seq %llu member %u byte %zu", (unsigned long long)seq, k, i);
  }
}

static void assert_taken(uint64_t seq, uint32_t n, const proto_params_t *p) {
  assert_operands(take, seq, n, p, 0);
}

/* ---- everyone posted ----------------------------------------------------------------- */

static void test_all_posted(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 1, N, WORKERS);
  uint64_t seq;
  uint32_t k;
  int st;
  (void)state;
  assert_non_null(r);
  /* three times round the ring; allreduce and reduce in turn; rotating posting order; the
   * first members look before the last one posts (not yet), the rest after */
  for (seq = 0; seq < 3 * DRED_MEET_DEPTH; seq++) {
    uint32_t kind = seq % 2 ? PROTO_KIND_REDUCE : PROTO_KIND_ALLREDUCE;
    proto_params_t p = params(kind, 1 + seq % 20, (uint32_t)(seq % N));
    for (k = 0; k < N; k++) {
      uint32_t m = (uint32_t)((k + seq) % N);
      assert_int_equal(post(r, seq, m, &p), 1);
      if (k < N - 1) assert_int_equal(look(r, seq, m, &st), 0);
    }
    for (k = 0; k < N; k++) {
      assert_int_equal(look(r, seq, k, &st), 1);
      assert_int_equal(st, DRED_OK);
      assert_taken(seq, N, &p);
    }
  }
  /* the slots were never used */
  {
    dred_meet_ring_stats_t s;
    dred_meet_ring_stats(r, &s);
    assert_int_equal(s.busy, 0);
  }
  table_free(t);
}

static void test_mismatch(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 2, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 3, 0), q;
  uint32_t k, odd;
  int st;
  (void)state;
  /* each field a member may disagree on, by each member in turn */
  for (odd = 0; odd < 5; odd++) {
    uint64_t seq = odd;
    q = p;
    switch (odd) {
      case 0: q.count = 4; break;
      case 1: q.op = 4; break;
      case 2: q.kind = PROTO_KIND_REDUCE; break;
      case 3: q.type_sig = 0x52u; break;
      default: q.root = 1; break;
    }
    for (k = 0; k < N; k++) assert_int_equal(post(r, seq, k, k == odd % N ? &q : &p), 1);
    for (k = 0; k < N; k++) {
      assert_int_equal(look(r, seq, k, &st), 1);
      assert_int_equal(st, DRED_ERR_MISMATCH);
    }
  }
  /* a root out of range, named alike by everyone */
  p.root = N;
  for (k = 0; k < N; k++) assert_int_equal(post(r, 5, k, &p), 1);
  for (k = 0; k < N; k++) {
    assert_int_equal(look(r, 5, k, &st), 1);
    assert_int_equal(st, DRED_ERR_MISMATCH);
  }
  table_free(t);
}

/* ---- the slot's way -------------------------------------------------------------------- */

/* Member k arrives in the slot with its operand copied there (an allreduce's member). */
static int slot_arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p,
                       dred_meet_arrival_t *a) {
  unsigned char op[DRED_MEET_FAST_DATA];
  dred_meet_ref_t ref;
  size_t i, bytes = (size_t)(p->count * p->extent);
  for (i = 0; i < bytes; i++) op[i] = pattern(seq, k, i);
  memset(&ref, 0, sizeof ref);
  ref.kind = DRED_MEET_OP_SLOT;
  ref.len = bytes;
  return dred_meet_arrive_op(r, seq, k, p, 1, &ref, op, DRED_OK, a);
}

static void test_slot_way(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 3, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 2, 0);
  dred_meet_arrival_t a;
  uint32_t k;
  int st;
  (void)state;
  /* members 0..2 post; member 3 arrives in the slot (a nonblocking call, say) */
  for (k = 0; k < N - 1; k++) assert_int_equal(post(r, 0, k, &p), 1);
  assert_int_equal(look(r, 0, 0, &st), 0);
  assert_int_equal(slot_arrive(r, 0, N - 1, &p, &a), 0);
  assert_int_equal(a.meet, 1);
  /* everyone who posted now goes there too (and the one that went may not post) */
  for (k = 0; k < N - 1; k++) assert_int_equal(look(r, 0, k, &st), -1);
  assert_int_equal(post(r, 0, N - 1, &p), 0);
  for (k = 0; k < N - 1; k++) {
    assert_int_equal(slot_arrive(r, 0, k, &p, &a), 0);
    assert_int_equal(a.meet, 1);
  }
  {
    int s = -1;
    assert_int_equal(dred_meet_poll(a.slot, 0, &s), 1);
    assert_int_equal(s, DRED_OK);
    for (k = 0; k < N; k++) dred_meet_release(a.slot, 0, k);
  }
  /* the slot's way first, before anyone posted: nobody posts any more */
  assert_int_equal(slot_arrive(r, 1, 2, &p, &a), 0);
  assert_int_equal(post(r, 1, 0, &p), 0);
  /* a slot found held spills seq: the lane's members of seq see that too (seq D + 3 finds
   * the slot of seq 3 held) */
  assert_int_equal(slot_arrive(r, 3, 1, &p, &a), 0); /* seq 3 holds the slot */
  assert_int_equal(post(r, DRED_MEET_DEPTH + 3, 0, &p), 0); /* 0, 2, 3 may read posts of 3 */
  for (k = 0; k < N; k++) dred_meet_fast_done(r, 3, k);   /* ... and now do not */
  assert_int_equal(post(r, DRED_MEET_DEPTH + 3, 0, &p), 1);
  assert_int_equal(look(r, DRED_MEET_DEPTH + 3, 0, &st), 0);
  assert_int_equal(slot_arrive(r, DRED_MEET_DEPTH + 3, 2, &p, &a), 0);
  assert_int_equal(a.meet, 0); /* spilled: the slot is still seq 3's */
  assert_int_equal(look(r, DRED_MEET_DEPTH + 3, 0, &st), -1);
  assert_int_equal(post(r, DRED_MEET_DEPTH + 3, 3, &p), 0);
  /* the next seq is untouched by that: everyone posts and decides */
  for (k = 0; k < N; k++) assert_int_equal(post(r, 2, k, &p), 1);
  for (k = 0; k < N; k++) {
    assert_int_equal(look(r, 2, k, &st), 1);
    assert_int_equal(st, DRED_OK);
  }
  table_free(t);
}

/* ---- nonblocking calls ------------------------------------------------------------ */

/* The slot's data holds member k's operand of seq at k x bytes. */
static void assert_slot_data(dred_meet_slot_t *sl, uint64_t seq, uint32_t n, const proto_params_t *p) {
  assert_operands(dred_meet_data(sl), seq, n, p, 1);
}

/* A nonblocking call's post is recorded in the slot by whoever opens it for seq: its
 * member's own arrival later only joins; a blocking call's is not (its member arrives
 * itself).  One declared failed after posting is recorded too: its operand was handed
 * over. */
static void test_nb_imported(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 12, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 3, 0);
  dred_meet_arrival_t a;
  uint32_t k;
  int st, s;
  (void)state;
  assert_int_equal(post_how(r, 0, 0, &p, DRED_MEET_POST_NB), 1);
  assert_int_equal(post_how(r, 0, 1, &p, DRED_MEET_POST_NB_DIRTY), 1);
  assert_int_equal(post_how(r, 0, 2, &p, DRED_MEET_POST_CLEAN), 1);
  /* member 3 goes the slot's way: it opens the slot and records members 0 and 1 */
  assert_int_equal(slot_arrive(r, 0, 3, &p, &a), 0);
  assert_int_equal(a.meet, 1);
  assert_int_equal(dred_meet_poll(a.slot, 0, &s), 0); /* member 2 has not come */
  for (k = 0; k < 3; k++) assert_int_equal(look(r, 0, k, &st), -1);
  assert_int_equal(slot_arrive(r, 0, 2, &p, &a), 0); /* the last one: decided */
  assert_int_equal(a.meet, 1);
  assert_int_equal(dred_meet_poll(a.slot, 0, &s), 1);
  assert_int_equal(s, DRED_OK);
  assert_slot_data(a.slot, 0, N, &p);
  /* the recorded members' own arrivals join, once each */
  for (k = 0; k < 2; k++) {
    assert_int_equal(slot_arrive(r, 0, k, &p, &a), 0);
    assert_int_equal(a.meet, 1);
  }
  assert_int_equal(slot_arrive(r, 0, 0, &p, &a), -1);
  for (k = 0; k < N; k++) dred_meet_release(a.slot, 0, k);
  assert_int_equal(dred_meet_state(a.slot, 0), -1); /* released by all: free */

  /* posted, then declared failed: recorded all the same, and the allreduce is whole */
  assert_int_equal(post_how(r, 1, 1, &p, DRED_MEET_POST_NB), 1);
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  assert_int_equal(slot_arrive(r, 1, 0, &p, &a), 0);
  assert_int_equal(slot_arrive(r, 1, 2, &p, &a), 0);
  assert_int_equal(dred_meet_poll(a.slot, 1, &s), 0);
  assert_int_equal(slot_arrive(r, 1, 3, &p, &a), 0);
  assert_int_equal(dred_meet_poll(a.slot, 1, &s), 1);
  assert_int_equal(s, DRED_OK);
  assert_slot_data(a.slot, 1, N, &p);
  for (k = 0; k < N; k++)
    if (k != 1) dred_meet_release(a.slot, 1, k);
  assert_int_equal(dred_meet_state(a.slot, 1), -1);
  table_free(t);
}

/* A member whose nonblocking post of seq is unresolved gives no ack for a later seq of
 * the same slot (its arrival there included): its peers may not rewrite their posts of seq
 * until its look read them. */
static void test_nb_ack(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 14, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 2, 0);
  dred_meet_arrival_t a;
  uint32_t k;
  int st, s;
  (void)state;
  assert_int_equal(post_how(r, 0, 0, &p, DRED_MEET_POST_NB), 1);
  for (k = 1; k < N; k++) assert_int_equal(post(r, 0, k, &p), 1);
  for (k = 1; k < N; k++) assert_int_equal(look(r, 0, k, &st), 1); /* member 0 does not look */
  /* seq DEPTH, the same slot: everyone the slot's way (member 0 may not post over its own) */
  for (k = 0; k < N; k++) assert_int_equal(slot_arrive(r, DRED_MEET_DEPTH, k, &p, &a), 0);
  assert_int_equal(dred_meet_poll(a.slot, DRED_MEET_DEPTH, &s), 1);
  assert_int_equal(s, DRED_OK);
  for (k = 0; k < N; k++) dred_meet_release(a.slot, DRED_MEET_DEPTH, k);
  /* member 0's arrival left its ack behind: nobody posts 2 x DEPTH over what it reads */
  assert_int_equal(post(r, 2 * DRED_MEET_DEPTH, 1, &p), 0);
  memset(take, 0, sizeof take);
  assert_int_equal(dred_meet_fast_look(r, 0, 0, take, sizeof take, &st), 1);
  assert_int_equal(st, DRED_OK);
  assert_taken(0, N, &p);
  dred_meet_fast_done(r, 0, 0);
  table_free(t);
}

/* Only posts whose members had no other nonblocking post unresolved are clean -- a
 * nonblocking call's own included -- and only then may the next poster skip the acks. */
static void test_nb_clean(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 13, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_REDUCE, 2, 1);
  static const int hows[4][N] = {
      {DRED_MEET_POST_CLEAN, DRED_MEET_POST_CLEAN, DRED_MEET_POST_CLEAN, DRED_MEET_POST_CLEAN},
      {DRED_MEET_POST_NB, DRED_MEET_POST_CLEAN, DRED_MEET_POST_NB, DRED_MEET_POST_CLEAN},
      {DRED_MEET_POST_CLEAN, DRED_MEET_POST_DIRTY, DRED_MEET_POST_CLEAN, DRED_MEET_POST_CLEAN},
      {DRED_MEET_POST_NB, DRED_MEET_POST_CLEAN, DRED_MEET_POST_NB_DIRTY, DRED_MEET_POST_CLEAN},
  };
  static const int clean[4] = {1, 1, 0, 0};
  uint64_t seq;
  uint32_t k;
  int st;
  (void)state;
  for (seq = 0; seq < 4; seq++) {
    for (k = 0; k < N; k++) assert_int_equal(post_how(r, seq, k, &p, hows[seq][k]), 1);
    /* every kind is a post: the look resolves alike, with the same operands */
    for (k = 0; k < N; k++) {
      memset(take, 0, sizeof take);
      assert_int_equal(dred_meet_fast_look(r, seq, k, take, sizeof take, &st), 1);
      assert_int_equal(st, DRED_OK);
      assert_taken(seq, N, &p);
      assert_int_equal(dred_meet_fast_clean(r, seq), clean[seq]);
      assert_int_equal(dred_meet_fast_pending(r, seq, k), 0);
    }
    for (k = 0; k < N; k++) dred_meet_fast_done(r, seq, k);
  }
  /* not everyone in yet: pending, for a poster */
  assert_int_equal(post_how(r, 4, 0, &p, DRED_MEET_POST_NB), 1);
  assert_int_equal(dred_meet_fast_pending(r, 4, 0), 1);
  assert_int_equal(dred_meet_fast_clean(r, 4), 0);
  /* a bad kind of post is refused, and leaves the slot's way open */
  assert_int_equal(post_how(r, 4, 1, &p, 7), 0);
  table_free(t);
}

static void test_failed(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 4, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 1, 0);
  uint32_t k;
  int st;
  (void)state;
  /* member 2 is declared failed before it posted: the looks go to the slot (where its
   * absence is PROC_FAILED), and it cannot post after that */
  for (k = 0; k < N; k++)
    if (k != 2) assert_int_equal(post(r, 0, k, &p), 1);
  assert_int_equal(look(r, 0, 0, &st), 0);
  dred_meet_member_failed(r, 2, DRED_ERR_PROC_FAILED);
  assert_int_equal(look(r, 0, 1, &st), -1);
  assert_int_equal(look(r, 0, 0, &st), -1);
  assert_int_equal(post(r, 0, 2, &p), 0);
  assert_int_equal(look(r, 0, 3, &st), -1);
  /* a member declared failed after it posted took nothing with it: everyone else decides
   * with its operand (seq 1, member 1) */
  table_free(t);
  t = table_new();
  r = dred_meet_ring_of(t, 4, N, WORKERS);
  for (k = 0; k < N; k++) assert_int_equal(post(r, 1, k, &p), 1);
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  for (k = 0; k < N; k++) {
    if (k == 1) continue;
    assert_int_equal(look(r, 1, k, &st), 1);
    assert_int_equal(st, DRED_OK);
    assert_taken(1, N, &p);
  }
  /* one declared failed while it waits (it was only stalled) leaves the lane: its peers
   * may have ended the collective without it, dred-master answers it */
  assert_int_equal(post(r, 2, 0, &p), 1);
  dred_meet_member_failed(r, 0, DRED_ERR_PROC_FAILED);
  assert_int_equal(look(r, 2, 0, &st), -1);
  table_free(t);
}

/* ---- reuse ------------------------------------------------------------------------------ */

static void test_held(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 5, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 1, 0);
  const uint64_t D = DRED_MEET_DEPTH;
  uint32_t k;
  int st;
  (void)state;
  for (k = 0; k < N; k++) assert_int_equal(post(r, 0, k, &p), 1);
  for (k = 0; k < N - 1; k++) assert_int_equal(look(r, 0, k, &st), 1);
  /* member 3 has not read seq 0's posts: nobody may post seq D there yet */
  for (k = 0; k < N - 1; k++) assert_int_equal(post(r, D, k, &p), 0);
  /* ... and those members went the slot's way for D (their arrival would tell it): a
   * look of member 3 at seq 0 is unaffected */
  assert_int_equal(look(r, 0, 3, &st), 1);
  assert_int_equal(st, DRED_OK);
  assert_taken(0, N, &p);
  /* everyone went the slot's way for D, whose arrival gives the ack (modelled here);
   * seq 2D's posts are free */
  for (k = 0; k < N; k++) dred_meet_fast_done(r, D, k);
  for (k = 0; k < N; k++) assert_int_equal(post(r, 2 * D, k, &p), 1);
  for (k = 0; k < N; k++) {
    assert_int_equal(look(r, 2 * D, k, &st), 1);
    assert_int_equal(st, DRED_OK);
    assert_taken(2 * D, N, &p);
  }
  /* a reader declared failed does not hold the others back */
  for (k = 0; k < N; k++) assert_int_equal(post(r, 3 * D, k, &p), 1);
  for (k = 1; k < N; k++) assert_int_equal(look(r, 3 * D, k, &st), 1);
  dred_meet_member_failed(r, 0, DRED_ERR_PROC_FAILED);
  for (k = 1; k < N; k++) assert_int_equal(post(r, 4 * D, k, &p), 1);
  table_free(t);
  /* a caller that saw every peer post the stream's previous seq (peers_past) is not held
   * back: member 1 has not given its ack for 0, and 2 posts D all the same */
  t = table_new();
  r = dred_meet_ring_of(t, 5, N, WORKERS);
  for (k = 0; k < N; k++) assert_int_equal(post(r, 0, k, &p), 1);
  for (k = 0; k < N; k++)
    if (k != 1) assert_int_equal(look(r, 0, k, &st), 1);
  {
    unsigned char op[4] = {1, 2, 3, 4};
    assert_int_equal(dred_meet_fast_post(r, D, 2, &p, op, 4, 0), 0);
    assert_int_equal(dred_meet_fast_post(r, D, 2, &p, op, 4, 1), 1);
  }
  table_free(t);
}

static void test_not_eligible(void **state) {
  dred_meet_table_t *t = table_new();
  uint32_t w[DRED_MEET_FAST_MEMBERS + 1], k;
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, DRED_MEET_FAST_DATA / 4 + 1, 0);
  unsigned char big[DRED_MEET_FAST_DATA + 4];
  dred_meet_ring_t *r = dred_meet_ring_of(t, 6, N, WORKERS), *wide, *relay;
  int st;
  (void)state;
  memset(big, 1, sizeof big);
  for (k = 0; k <= DRED_MEET_FAST_MEMBERS; k++) w[k] = 100 + k;
  /* an operand too large */
  assert_int_equal(dred_meet_fast_post(r, 0, 0, &p, big, sizeof big, 0), 0);
  /* a group too large */
  wide = dred_meet_ring_of(t, 7, DRED_MEET_FAST_MEMBERS + 1, w);
  assert_non_null(wide);
  p.count = 1;
  assert_int_equal(dred_meet_fast_post(wide, 0, 0, &p, big, 4, 0), 0);
  assert_int_equal(dred_meet_fast_look(wide, 0, 0, take, sizeof take, &st), -1);
  /* a node relay's ring */
  relay = dred_meet_relay_of(t, 8, 0, N, WORKERS, 0x1);
  assert_non_null(relay);
  assert_int_equal(dred_meet_fast_post(relay, 0, 1, &p, big, 4, 0), 0);
  /* bad arguments */
  assert_int_equal(dred_meet_fast_post(NULL, 0, 0, &p, big, 4, 0), 0);
  assert_int_equal(dred_meet_fast_post(r, 0, N, &p, big, 4, 0), 0);
  assert_int_equal(dred_meet_fast_post(r, 0, 0, NULL, big, 4, 0), 0);
  assert_int_equal(dred_meet_fast_post(r, 0, 0, &p, NULL, 4, 0), 0);
  assert_int_equal(dred_meet_fast_look(r, 0, N, take, sizeof take, &st), -1);
  /* a second post of one member for one seq */
  assert_int_equal(dred_meet_fast_post(r, 1, 0, &p, big, 4, 0), 1);
  assert_int_equal(dred_meet_fast_post(r, 1, 0, &p, big, 4, 0), 0);
  table_free(t);
}

/* ---- a bcast: served from its root's post ---------------------------------------------- */

static int busy_slots(const dred_meet_ring_t *r) {
  dred_meet_ring_stats_t s;
  dred_meet_ring_stats(r, &s);
  return (int)s.busy;
}

static void test_bcast_served(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 10, N, WORKERS);
  uint64_t seq;
  uint32_t k;
  int st;
  (void)state;
  /* three times round the ring, the root in turn: the members before the root wait; the
   * root is done as it posts; everyone is served from its post, the last member included
   * after everyone else is done (nobody waits for it); nobody but the root posts */
  for (seq = 0; seq < 3 * DRED_MEET_DEPTH; seq++) {
    uint32_t root = (uint32_t)(seq % N), last = (root + N - 1) % N;
    proto_params_t p = params(PROTO_KIND_BCAST, 1 + seq % 22, root);
    for (k = 0; k < N; k++)
      if (k != root && k != last) assert_int_equal(watch(r, seq, k, &p, &st), 0);
    assert_int_equal(post(r, seq, root, &p), 1);
    assert_int_equal(look(r, seq, root, &st), 2);
    assert_int_equal(st, DRED_OK);
    for (k = 0; k < N; k++) {
      if (k == root) continue;
      assert_int_equal(watch(r, seq, k, &p, &st), 2);
      assert_int_equal(st, DRED_OK);
      assert_taken(seq, N, &p);
    }
  }
  assert_int_equal(busy_slots(r), 0); /* the slots were never used */
  /* a root ahead by DEPTH waits for the last reader of its post of seq - DEPTH: member 3
   * has not come to seq 3D yet, so the root goes the slot's way for 4D */
  {
    const uint64_t D = DRED_MEET_DEPTH;
    proto_params_t p = params(PROTO_KIND_BCAST, 2, 0);
    assert_int_equal(post(r, 3 * D, 0, &p), 1);
    assert_int_equal(look(r, 3 * D, 0, &st), 2);
    for (k = 1; k < N - 1; k++) assert_int_equal(watch(r, 3 * D, k, &p, &st), 2);
    assert_int_equal(post(r, 4 * D, 0, &p), 0);
  }
  table_free(t);
}

static int bcast_arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p,
                        dred_meet_arrival_t *a);

static void test_bcast_disagree(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 11, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_BCAST, 3, 0), q;
  uint32_t odd;
  int st;
  (void)state;
  /* a member that disagrees with the root's post gets MISMATCH; the others are served */
  for (odd = 0; odd < 4; odd++) {
    uint64_t seq = odd;
    q = p;
    switch (odd) {
      case 0: q.count = 4; break;
      case 1: q.root = 2; break; /* names another root, one that is no root */
      case 2: q.kind = PROTO_KIND_ALLREDUCE; break;
      default: q.type_sig = 0x52u; break;
    }
    assert_int_equal(post(r, seq, 0, &p), 1);
    assert_int_equal(look(r, seq, 0, &st), 2);
    assert_int_equal(st, DRED_OK); /* nobody there disagreed */
    if (q.kind == PROTO_KIND_BCAST) {
      assert_int_equal(watch(r, seq, 1, &q, &st), 2);
    } else { /* an allreduce's member posts, and finds a bcast's root there */
      assert_int_equal(post(r, seq, 1, &q), 1);
      assert_int_equal(look(r, seq, 1, &st), 2);
    }
    assert_int_equal(st, DRED_ERR_MISMATCH);
    assert_int_equal(watch(r, seq, 2, &p, &st), 2);
    assert_int_equal(st, DRED_OK);
    assert_int_equal(watch(r, seq, 3, &p, &st), 2);
    assert_int_equal(st, DRED_OK);
  }
  /* a non-root that disagrees is sure to get MISMATCH, whenever it came (it waits for the
   * root's post); the root, which reads no non-root's parameters, is served */
  q = p;
  q.count = 5;
  assert_int_equal(watch(r, 4, 1, &q, &st), 0);
  assert_int_equal(post(r, 4, 0, &p), 1);
  assert_int_equal(look(r, 4, 0, &st), 2);
  assert_int_equal(st, DRED_OK);
  assert_int_equal(watch(r, 4, 1, &q, &st), 2);
  assert_int_equal(st, DRED_ERR_MISMATCH);
  /* two members that both call themselves the root: the later one sees the other */
  q = p;
  q.root = 3;
  assert_int_equal(post(r, 5, 0, &p), 1);
  assert_int_equal(look(r, 5, 0, &st), 2);
  assert_int_equal(st, DRED_OK);
  assert_int_equal(post(r, 5, 3, &q), 1);
  assert_int_equal(look(r, 5, 3, &st), 2);
  assert_int_equal(st, DRED_ERR_MISMATCH);
  assert_int_equal(watch(r, 5, 1, &q, &st), 2); /* names 3, which posted as a root */
  assert_int_equal(st, DRED_OK);
  assert_taken(5, N, &q);
  /* a root out of range, or a watcher that is the root: not the lane's (the slot answers) */
  q = p;
  q.root = N;
  assert_int_equal(watch(r, 6, 1, &q, &st), -1);
  assert_int_equal(watch(r, 6, 0, &p, &st), -1);
  /* the member it names as the root posted something else (an allreduce, or a bcast
   * naming another root): its peers wait for every post, and the watcher's never comes --
   * the watcher goes the slot's way, whose arrival sends the posted members there too */
  for (odd = 0; odd < 2; odd++) {
    uint64_t seq = 7 + odd;
    dred_meet_arrival_t a;
    q = p;
    if (odd == 0)
      q.kind = PROTO_KIND_ALLREDUCE;
    else
      q.root = 2;
    assert_int_equal(watch(r, seq, 1, &p, &st), 0);
    assert_int_equal(post(r, seq, 0, &q), 1);
    assert_int_equal(look(r, seq, 0, &st), 0);
    assert_int_equal(watch(r, seq, 1, &p, &st), -1);
    assert_int_equal(bcast_arrive(r, seq, 1, &p, &a), 0);
    assert_int_equal(a.lane, 0);
    assert_int_equal(look(r, seq, 0, &st), -1);
  }
  table_free(t);
}

/* Member k of a bcast arrives in the slot (a nonblocking call, say): the root with its
 * data copied there, anyone else with nothing. */
static int bcast_arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p,
                        dred_meet_arrival_t *a) {
  if (k == p->root) return slot_arrive(r, seq, k, p, a);
  return dred_meet_arrive_op(r, seq, k, p, 1, NULL, NULL, DRED_OK, a);
}

static void assert_lane_data(const dred_meet_arrival_t *a, uint64_t seq, const proto_params_t *p) {
  size_t i;
  for (i = 0; i < (size_t)(p->count * p->extent); i++)
    if (a->lane_data[i] != pattern(seq, p->root, i)) fail_msg("seq %llu byte %zu", (unsigned long long)seq, i);
}

static void test_bcast_slot_way(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 12, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_BCAST, 5, 1), q;
  const uint64_t D = DRED_MEET_DEPTH;
  dred_meet_arrival_t a;
  uint32_t k;
  int st;
  (void)state;
  /* the root posted: a member that goes the slot's way is served from its post as it
   * arrives (nothing recorded in the slot, which stays free), and so is one that
   * disagrees (MISMATCH) */
  assert_int_equal(post(r, 0, 1, &p), 1);
  assert_int_equal(look(r, 0, 1, &st), 2);
  assert_int_equal(bcast_arrive(r, 0, 2, &p, &a), 0);
  assert_int_equal(a.meet, 1);
  assert_int_equal(a.taken, 1);
  assert_int_equal(a.lane, 1);
  assert_int_equal(a.lane_ref, 0);
  assert_int_equal(a.status, DRED_OK);
  assert_lane_data(&a, 0, &p);
  assert_int_equal(busy_slots(r), 0);
  q = p;
  q.count = 30; /* not the root's count */
  assert_int_equal(bcast_arrive(r, 0, 3, &q, &a), 0);
  assert_int_equal(a.lane, 1);
  assert_int_equal(a.status, DRED_ERR_MISMATCH);
  assert_int_equal(watch(r, 0, 0, &p, &st), 2);
  assert_int_equal(st, DRED_OK);
  assert_int_equal(busy_slots(r), 0);
  /* a member went the slot's way before the root posted: the root may not post any more,
   * the watching members go there too, and the slot serves them as usual */
  assert_int_equal(watch(r, 1, 0, &p, &st), 0);
  assert_int_equal(bcast_arrive(r, 1, 2, &p, &a), 0);
  assert_int_equal(a.meet, 1);
  assert_int_equal(a.lane, 0);
  assert_int_equal(post(r, 1, 1, &p), 0);
  assert_int_equal(watch(r, 1, 0, &p, &st), -1);
  assert_int_equal(bcast_arrive(r, 1, 1, &p, &a), 0); /* the root: its data in the slot */
  assert_int_equal(a.lane, 0);
  assert_int_equal(bcast_arrive(r, 1, 0, &p, &a), 0);
  assert_int_equal(bcast_arrive(r, 1, 3, &p, &a), 0);
  assert_int_equal(dred_meet_poll(a.slot, 1, &st), 1); /* everyone in: decided */
  assert_int_equal(st, DRED_OK);
  for (k = 0; k < N; k++) dred_meet_release(a.slot, 1, k);
  assert_int_equal(busy_slots(r), 0);
  /* a slot held by seq 2 (member 0 never takes its outcome) spills seq D + 2 -- unless
   * the root posted D + 2: then whoever finds it held is served from the post too */
  q = params(PROTO_KIND_ALLREDUCE, 1, 0);
  assert_int_equal(slot_arrive(r, 2, 0, &q, &a), 0);
  for (k = 1; k < N; k++) dred_meet_fast_done(r, 2, k); /* (went elsewhere for seq 2) */
  assert_int_equal(post(r, D + 2, 1, &p), 1);
  assert_int_equal(bcast_arrive(r, D + 2, 3, &p, &a), 0);
  assert_int_equal(a.lane, 1);
  assert_int_equal(a.status, DRED_OK);
  assert_lane_data(&a, D + 2, &p);
  assert_int_equal(bcast_arrive(r, D + 2, 0, &p, &a), 0); /* spilled already: served alike */
  assert_int_equal(a.lane, 1);
  assert_int_equal(a.status, DRED_OK);
  assert_int_equal(watch(r, D + 2, 2, &p, &st), 2);
  assert_int_equal(st, DRED_OK);
  /* ... and spilled before the root posted: dred-master for everyone of seq D + 3 */
  assert_int_equal(slot_arrive(r, 3, 0, &q, &a), 0);
  for (k = 1; k < N; k++) dred_meet_fast_done(r, 3, k);
  assert_int_equal(watch(r, D + 3, 2, &p, &st), 0);
  assert_int_equal(bcast_arrive(r, D + 3, 3, &p, &a), 0);
  assert_int_equal(a.meet, 0);
  assert_int_equal(a.lane, 0);
  assert_int_equal(post(r, D + 3, 1, &p), 0);
  assert_int_equal(watch(r, D + 3, 2, &p, &st), -1);
  table_free(t);
}

static void test_bcast_failed(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 13, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_BCAST, 4, 2);
  uint32_t k;
  int st;
  (void)state;
  /* a non-root declared failed before it came costs nothing: the others wait for the
   * root, and it serves them */
  dred_meet_member_failed(r, 0, DRED_ERR_PROC_FAILED);
  assert_int_equal(watch(r, 0, 1, &p, &st), 0);
  assert_int_equal(post(r, 0, 2, &p), 1);
  assert_int_equal(look(r, 0, 2, &st), 2);
  assert_int_equal(st, DRED_OK);
  for (k = 1; k < N; k++) {
    if (k == 2) continue;
    assert_int_equal(watch(r, 0, k, &p, &st), 2);
    assert_int_equal(st, DRED_OK);
    assert_taken(0, N, &p);
  }
  table_free(t);
  /* the root declared failed after it posted took nothing with it */
  t = table_new();
  r = dred_meet_ring_of(t, 13, N, WORKERS);
  assert_int_equal(post(r, 0, 2, &p), 1);
  dred_meet_member_failed(r, 2, DRED_ERR_PROC_FAILED);
  for (k = 0; k < N; k++) {
    if (k == 2) continue;
    assert_int_equal(watch(r, 0, k, &p, &st), 2);
    assert_int_equal(st, DRED_OK);
    assert_taken(0, N, &p);
  }
  /* ... and before it posted: everyone goes to the slot (its death ends it there) */
  assert_int_equal(watch(r, 1, 0, &p, &st), -1);
  assert_int_equal(post(r, 1, 2, &p), 0);
  table_free(t);
}

/* A bcast root's data by reference: begin, publish a dred_meet_ref_t, and every member --
 * whichever way it comes -- gets that reference back to copy from, then checks the post
 * is still seq's. */
static void test_bcast_by_ref(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 14, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_BCAST, 1000, 0); /* 4000 bytes: not in a post */
  const uint64_t D = DRED_MEET_DEPTH;
  dred_meet_ref_t ref, got;
  dred_meet_arrival_t a;
  int st;
  (void)state;
  memset(&ref, 0, sizeof ref);
  ref.kind = DRED_MEET_OP_POOL;
  ref.worker = WORKERS[0];
  ref.off = 4096;
  ref.len = 4000;
  assert_int_equal(watch(r, 0, 1, &p, &st), 0);
  assert_int_equal(dred_meet_fast_begin(r, 0, 0, 0), 1);
  assert_int_equal(watch(r, 0, 1, &p, &st), 0); /* WRITING: not in yet */
  assert_int_equal(dred_meet_fast_publish(r, 0, 0, &p, &ref, sizeof ref), 1);
  assert_int_equal(look(r, 0, 0, &st), 2);
  assert_int_equal(st, DRED_OK);
  assert_int_equal(watch(r, 0, 1, &p, &st), 2);
  assert_int_equal(st, DRED_OK);
  memcpy(&got, take, sizeof got);
  assert_memory_equal(&got, &ref, sizeof ref);
  assert_int_equal(dred_meet_fast_still(r, 0, 0), 1);
  /* a member that goes the slot's way gets the reference too, and its ack is its own to
   * give once it copied (the root may not reuse the block before) */
  assert_int_equal(bcast_arrive(r, 0, 2, &p, &a), 0);
  assert_int_equal(a.lane, 1);
  assert_int_equal(a.lane_ref, 1);
  assert_int_equal(a.status, DRED_OK);
  assert_memory_equal(a.lane_data, &ref, sizeof ref);
  assert_int_equal(watch(r, 0, 3, &p, &st), 2);
  assert_int_equal(dred_meet_fast_begin(r, D, 0, 0), 0); /* member 2 has not given its ack */
  dred_meet_fast_done(r, 0, 2);
  assert_int_equal(dred_meet_fast_begin(r, D, 0, 0), 1);
  /* abandoned (its block had no room, say): CLOSED, the slot's way for everyone */
  dred_meet_fast_abandon(r, D, 0);
  assert_int_equal(dred_meet_fast_publish(r, D, 0, &p, &ref, sizeof ref), 0);
  assert_int_equal(watch(r, D, 1, &p, &st), -1);
  /* a post over its room is refused, and so is one whose reference is not the root's
   * data (a member reading it gets INTERNAL, never someone else's bytes) */
  assert_int_equal(dred_meet_fast_begin(r, 1, 0, 0), 1);
  assert_int_equal(dred_meet_fast_publish(r, 1, 0, &p, take, DRED_MEET_FAST_DATA + 1), 0);
  ref.len = 8;
  assert_int_equal(dred_meet_fast_begin(r, 2, 0, 0), 1);
  assert_int_equal(dred_meet_fast_publish(r, 2, 0, &p, &ref, sizeof ref), 1);
  assert_int_equal(watch(r, 2, 3, &p, &st), 2);
  assert_int_equal(st, DRED_ERR_INTERNAL);
  table_free(t);
}

/* An allreduce whose operands exceed a post: every member posts a reference to its own
 * block (a reduce: every non-root), and once all are in each look hands back every
 * member's reference, member k's at k x its size, to fold from and check (still seq's) after; nobody's block is reused
 * before every peer's ack.  A reference that does not name the agreed size is INTERNAL
 * for everyone, never bytes of the wrong length. */
static void test_allreduce_by_ref(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 15, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 1000, 0); /* 4000 bytes: not in a post */
  const uint64_t D = DRED_MEET_DEPTH;
  dred_meet_ref_t ref[N], got;
  uint32_t k;
  int st;
  (void)state;
  for (k = 0; k < N; k++) {
    memset(&ref[k], 0, sizeof ref[k]);
    ref[k].kind = DRED_MEET_OP_POOL;
    ref[k].worker = WORKERS[k];
    ref[k].off = 4096 * (int64_t)(k + 1);
    ref[k].len = 4000;
  }
  for (k = 0; k < N; k++) {
    assert_int_equal(dred_meet_fast_begin(r, 0, k, 0), 1);
    assert_int_equal(dred_meet_fast_publish(r, 0, k, &p, &ref[k], sizeof ref[k]), 1);
    if (k + 1 < N) assert_int_equal(dred_meet_fast_look(r, 0, k, take, sizeof take, &st), 0);
  }
  for (k = 0; k < N; k++) {
    uint32_t j;
    memset(take, 0, sizeof take);
    assert_int_equal(dred_meet_fast_look(r, 0, k, take, sizeof take, &st), 1);
    assert_int_equal(st, DRED_OK);
    for (j = 0; j < N; j++) {
      memcpy(&got, take + j * sizeof got, sizeof got);
      assert_memory_equal(&got, &ref[j], sizeof got);
      assert_int_equal(dred_meet_fast_still(r, 0, j), 1);
    }
  }
  /* the blocks of seq 0 are read until every member's ack: member 3 has not given it */
  for (k = 0; k < N - 1; k++) dred_meet_fast_done(r, 0, k);
  assert_int_equal(dred_meet_fast_begin(r, D, 0, 0), 0);
  dred_meet_fast_done(r, 0, N - 1);
  assert_int_equal(dred_meet_fast_begin(r, D, 0, 0), 1);
  dred_meet_fast_abandon(r, D, 0);
  /* one reference of the wrong length: everyone's look says INTERNAL */
  ref[2].len = 8;
  for (k = 0; k < N; k++) {
    assert_int_equal(dred_meet_fast_begin(r, 1, k, 0), 1);
    assert_int_equal(dred_meet_fast_publish(r, 1, k, &p, &ref[k], sizeof ref[k]), 1);
  }
  for (k = 0; k < N; k++) {
    assert_int_equal(dred_meet_fast_look(r, 1, k, take, sizeof take, &st), 1);
    assert_int_equal(st, DRED_ERR_INTERNAL);
  }
  /* ... and a look with too little room for N references likewise */
  for (k = 0; k < N; k++) {
    assert_int_equal(dred_meet_fast_begin(r, 2, k, 0), 1);
    assert_int_equal(dred_meet_fast_publish(r, 2, k, &p, &ref[0], sizeof ref[0]), 1);
  }
  assert_int_equal(dred_meet_fast_look(r, 2, 1, take, N * sizeof(dred_meet_ref_t) - 1, &st), 1);
  assert_int_equal(st, DRED_ERR_INTERNAL);
  /* a reduce: its root posts its parameters alone, and its look hands back the others'
   * references (nothing at its own place) */
  p = params(PROTO_KIND_REDUCE, 1000, 1);
  ref[2].len = 4000;
  for (k = 0; k < N; k++) {
    if (k == 1) {
      assert_int_equal(dred_meet_fast_post(r, 3, k, &p, NULL, 0, 0), 1);
      continue;
    }
    assert_int_equal(dred_meet_fast_begin(r, 3, k, 0), 1);
    assert_int_equal(dred_meet_fast_publish(r, 3, k, &p, &ref[k], sizeof ref[k]), 1);
  }
  memset(take, 0xee, sizeof take);
  assert_int_equal(dred_meet_fast_look(r, 3, 1, take, sizeof take, &st), 1);
  assert_int_equal(st, DRED_OK);
  for (k = 0; k < N; k++) {
    memcpy(&got, take + k * sizeof got, sizeof got);
    if (k == 1)
      assert_int_equal(got.kind, 0xeeeeeeeeu); /* untouched */
    else
      assert_memory_equal(&got, &ref[k], sizeof got);
  }
  table_free(t);
}

/* ---- waiting across processes -------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A bcast root DEPTH collectives ahead of its peer polls for the peer's ack of seq - DEPTH
 * (dred_meet_set_ack_wait): it posts once the ack comes within the bound; with none it goes
 * the slot's way after the bound, and then, for a while, without polling; where waiters
 * do not poll (spin 0) it never waits. */
struct late_ack { dred_meet_ring_t *r; uint64_t seq; uint32_t member; };

static void *ack_late(void *arg) {
  struct late_ack *a = arg;
  struct timespec ts = {0, 20000000L};
  nanosleep(&ts, NULL);
  dred_meet_fast_done(a->r, a->seq, a->member);
  return NULL;
}

static void test_ack_wait(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 15, 2, WORKERS);
  proto_params_t p = params(PROTO_KIND_BCAST, 2, 0);
  const uint64_t D = DRED_MEET_DEPTH;
  struct late_ack a = {r, 0, 1};
  pthread_t th;
  uint64_t t0, dt;
  (void)state;
  dred_meet_set_spin(1000000);
  assert_int_equal(post(r, 0, 0, &p), 1);
  assert_int_equal(post(r, 1, 0, &p), 1);
  /* the ack comes 20 ms later, within a 10 s bound: posted */
  dred_meet_set_ack_wait(10000000000ull);
  assert_int_equal(pthread_create(&th, NULL, ack_late, &a), 0);
  t0 = now_ns();
  assert_int_equal(post(r, D, 0, &p), 1);
  dt = now_ns() - t0;
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_true(dt >= 15000000ull);
  assert_true(dt < 10000000000ull);
  /* no ack of seq 1: the slot's way after the bound (100 ms), then at once */
  dred_meet_set_ack_wait(100000000ull);
  t0 = now_ns();
  assert_int_equal(post(r, D + 1, 0, &p), 0);
  assert_true(now_ns() - t0 >= 100000000ull);
  t0 = now_ns();
  assert_int_equal(post(r, D + 1, 0, &p), 0);
  assert_true(now_ns() - t0 < 100000000ull);
  /* waiters that do not poll: no wait either */
  dred_meet_set_ack_wait(100000000ull);
  dred_meet_set_spin(0);
  t0 = now_ns();
  assert_int_equal(post(r, D + 1, 0, &p), 0);
  assert_true(now_ns() - t0 < 100000000ull);
  /* the ack given: posted at once */
  dred_meet_fast_done(r, 1, 1);
  assert_int_equal(post(r, D + 1, 0, &p), 1);
  dred_meet_set_spin(1000000);
  dred_meet_set_ack_wait(2000);
  table_free(t);
}

static void wait_case(uint64_t spin_ns) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 9, 2, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 2, 0);
  uint64_t t0;
  pid_t pid;
  int st, status;
  dred_meet_set_spin(spin_ns);
  /* bounded: nobody comes */
  assert_int_equal(post(r, 0, 0, &p), 1);
  t0 = now_ns();
  dred_meet_fast_wait(r, 0, 0, 30000000ull);
  assert_true(now_ns() - t0 >= 25000000ull);
  assert_true(now_ns() - t0 < 2000000000ull);
  assert_int_equal(look(r, 0, 0, &st), 0);
  /* the peer posts 50 ms later, from another process: woken, decided */
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    usleep(50000);
    if (post(r, 0, 1, &p) != 1) _exit(1);
    _exit(look(r, 0, 1, &st) == 1 && st == DRED_OK ? 0 : 2); /* as a member does */
  }
  t0 = now_ns();
  while (look(r, 0, 0, &st) == 0 && now_ns() - t0 < 5000000000ull) dred_meet_fast_wait(r, 0, 0, 1000000000ull);
  assert_int_equal(look(r, 0, 0, &st), 1);
  assert_int_equal(st, DRED_OK);
  assert_taken(0, 2, &p);
  assert_true(now_ns() - t0 < 900000000ull); /* woken, not the slice's end */
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* the peer goes the slot's way: woken too */
  assert_int_equal(post(r, 1, 0, &p), 1);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dred_meet_arrival_t a;
    usleep(50000);
    _exit(slot_arrive(r, 1, 1, &p, &a) == 0 ? 0 : 1);
  }
  t0 = now_ns();
  while (look(r, 1, 0, &st) == 0 && now_ns() - t0 < 5000000000ull) dred_meet_fast_wait(r, 1, 0, 1000000000ull);
  assert_int_equal(look(r, 1, 0, &st), -1);
  assert_true(now_ns() - t0 < 900000000ull);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* a bcast's non-root watching for its root's post, posted 50 ms later elsewhere */
  {
    proto_params_t b = params(PROTO_KIND_BCAST, 3, 1);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      usleep(50000);
      if (post(r, 2, 1, &b) != 1) _exit(1);
      _exit(look(r, 2, 1, &st) == 2 && st == DRED_OK ? 0 : 2); /* as the root does: wakes */
    }
    t0 = now_ns();
    while (watch(r, 2, 0, &b, &st) == 0 && now_ns() - t0 < 5000000000ull)
      dred_meet_fast_watch_wait(r, 2, 0, 1, 1000000000ull);
    assert_int_equal(watch(r, 2, 0, &b, &st), 2);
    assert_int_equal(st, DRED_OK);
    assert_taken(2, 2, &b);
    assert_true(now_ns() - t0 < 900000000ull);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  dred_meet_set_spin(1000000);
  table_free(t);
}

/* The progress word as an allreduce's part claims use it (lanepath.c, lane_fold_split):
 * any member moves another's word by compare-and-swap while that post is seq's, and
 * never once the post moved on to a later collective. */
static void test_progress_claims(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 16, N, WORKERS);
  proto_params_t p = params(PROTO_KIND_ALLREDUCE, 1000, 0);
  const uint64_t D = DRED_MEET_DEPTH, open = 0x1234, mine = 0x5678;
  unsigned char post[DRED_MEET_FAST_DATA];
  dred_meet_ref_t ref;
  uint32_t k;
  int st;
  (void)state;
  for (k = 0; k < N; k++) {
    memset(&ref, 0, sizeof ref);
    ref.kind = DRED_MEET_OP_POOL;
    ref.worker = WORKERS[k];
    ref.off = 4096 * (int64_t)(k + 1);
    ref.len = 4000;
    memset(post, 0, sizeof post);
    memcpy(post, &ref, sizeof ref);
    memcpy(post + DRED_MEET_FAST_PROGRESS_OFF, &open, sizeof open);
    assert_int_equal(dred_meet_fast_begin(r, 0, k, 0), 1);
    assert_int_equal(dred_meet_fast_publish(r, 0, k, &p, post, sizeof post), 1);
  }
  for (k = 0; k < N; k++) assert_int_equal(dred_meet_fast_look(r, 0, k, take, sizeof take, &st), 1);
  assert_int_equal(dred_meet_fast_progress(r, 0, 2), open);
  /* a claim that expects what is there moves it; a second, expecting the same, does not */
  assert_int_equal(dred_meet_fast_progress_cas(r, 0, 2, open, mine), 1);
  assert_int_equal(dred_meet_fast_progress(r, 0, 2), mine);
  assert_int_equal(dred_meet_fast_progress_cas(r, 0, 2, open, mine + 1), 0);
  assert_int_equal(dred_meet_fast_progress(r, 0, 2), mine);
  /* no such member, or a seq whose posts these are not */
  assert_int_equal(dred_meet_fast_progress_cas(r, 0, N, open, mine), 0);
  assert_int_equal(dred_meet_fast_progress_cas(r, 1, 1, open, mine), 0);
  /* every ack given, member 1 posts seq D in the same place: a claim meant for seq 0
   * never lands on it, and its progress reads as gone for seq 0 */
  for (k = 0; k < N; k++) dred_meet_fast_done(r, 0, k);
  memcpy(post + DRED_MEET_FAST_PROGRESS_OFF, &open, sizeof open);
  assert_int_equal(dred_meet_fast_begin(r, D, 1, 0), 1);
  assert_int_equal(dred_meet_fast_publish(r, D, 1, &p, post, sizeof post), 1);
  assert_int_equal(dred_meet_fast_progress_cas(r, 0, 1, open, mine), 0);
  assert_int_equal(dred_meet_fast_progress(r, 0, 1), UINT64_MAX);
  assert_int_equal(dred_meet_fast_progress(r, D, 1), open);
  assert_int_equal(dred_meet_fast_progress_cas(r, D, 1, open, mine), 1);
  table_free(t);
}

static void test_wait_polling(void **state) {
  (void)state;
  wait_case(1000000);
}

static void test_wait_asleep(void **state) {
  (void)state;
  wait_case(0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_posted),   cmocka_unit_test(test_mismatch),
      cmocka_unit_test(test_slot_way),     cmocka_unit_test(test_failed),
      cmocka_unit_test(test_held),         cmocka_unit_test(test_not_eligible),
      cmocka_unit_test(test_bcast_served), cmocka_unit_test(test_bcast_disagree),
      cmocka_unit_test(test_bcast_slot_way), cmocka_unit_test(test_bcast_failed),
      cmocka_unit_test(test_bcast_by_ref),
      cmocka_unit_test(test_allreduce_by_ref), cmocka_unit_test(test_progress_claims),
      cmocka_unit_test(test_nb_imported),  cmocka_unit_test(test_nb_clean),
      cmocka_unit_test(test_nb_ack),       cmocka_unit_test(test_ack_wait),
      cmocka_unit_test(test_wait_polling), cmocka_unit_test(test_wait_asleep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
