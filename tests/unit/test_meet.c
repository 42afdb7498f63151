/*
 * test_meet.c -- lib/shm/meet.c and meet_chunks.c, the shared-memory meeting place, driven
 * rule by rule on an ordinary mapping (no MPI): a group finds the same ring every time and
 * never another group's, and a full table stays full; members that agree meet in any
 * arrival order and the root finds every operand at member x bytes; disagreeing
 * parameters, a member's own error, members that go to dred-master (MIXED), a slot still
 * held by the reduction DRED_MEET_DEPTH before (spill), a member's death, dred_meet_end
 * and a lock holder's death all decide the same outcome for everyone, whatever the arrival
 * order; waiting works across processes and is bounded by its timeout; out-of-range
 * arrivals are refused. Operands met by reference (a member's pool block, any size): every
 * arrival order and root decides alike and names each block; a block is needed until the
 * root releases (or dies, or the slot ends); a member without a place for its operand
 * spills the slot to dred-master for everyone, before or after the others arrived;
 * failures and a lock holder's death end such slots as they end small ones; explicit tags
 * get rings of their own, and a death reaches every stream of its group.  Allreduce and
 * bcast: who must publish an operand (all members; the root alone), blocks needed until
 * every member is done, chunks that cover every element once, claims that hand each chunk
 * out once, and a death while folding that fails the phase for everyone (one at any other
 * time costs nothing).
 *
 * Tables live in MAP_SHARED anonymous mappings: page-aligned (the table asks for 64-byte
 * alignment, more than malloc promises) and shared with forked children, as the node's
 * MPI window is between the members' processes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../include/dred_status.h"
#include "../../lib/shm/meet.h"

/* ---- fixtures ---------------------------------------------------------------------- */

#define N 4 /* the usual group: four members, job ranks 10..13 */
static const uint32_t WORKERS[N] = {10, 11, 12, 13};

static dred_meet_table_t *table_new(void) {
  void *mem = mmap(NULL, dred_meet_table_bytes(), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(mem != MAP_FAILED);
  assert_int_equal(dred_meet_table_init(mem), 0);
  return mem;
}

static void table_free(dred_meet_table_t *t) { munmap(t, dred_meet_table_bytes()); }

/* Parameters everyone agrees on unless a test changes them: `count` 4-byte ints, a
 * built-in commutative op, inline. */
static proto_params_t params(uint64_t count, uint32_t root) {
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
  return p;
}

/* Member k's operand for reduction `seq`: a pattern that differs by member and by seq, so
 * a misplaced or stale operand shows. */
static unsigned char pattern(uint64_t seq, uint32_t k, size_t i) {
  return (unsigned char)(seq * 13 + k * 29 + i * 7 + 1);
}

static unsigned char operand[DRED_MEET_MAX_MEMBERS][DRED_MEET_DATA];

/* Arrive as a real member does: with its operand when it wants to meet and is not the
 * root, NULL / 0 otherwise. */
static int arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p,
                  int wants, int error, dred_meet_arrival_t *a) {
  size_t bytes = (size_t)(p->count * p->extent), i;
  if (!wants || k == p->root)
    return dred_meet_arrive(r, seq, k, p, wants, NULL, 0, error, a);
  for (i = 0; i < bytes; i++) operand[k][i] = pattern(seq, k, i);
  return dred_meet_arrive(r, seq, k, p, wants, operand[k], bytes, error, a);
}

/* The usual arrival: wants, no error; asserts it meets and returns its slot. */
#define MEET(r, seq, k, p)                                                 \
  ({                                                                       \
    dred_meet_arrival_t a_;                                                \
    assert_int_equal(arrive((r), (seq), (k), (p), 1, DRED_OK, &a_), 0);    \
    assert_int_equal(a_.meet, 1);                                          \
    assert_non_null(a_.slot);                                              \
    assert_true(a_.mask == 0);                                             \
    a_.slot;                                                               \
  })

/* An arrival that must go to dred-master, naming `mask`. */
#define TO_MASTER(r, seq, k, p, wants, names)                                   \
  do {                                                                         \
    dred_meet_arrival_t a_;                                                    \
    assert_int_equal(arrive((r), (seq), (k), (p), (wants), DRED_OK, &a_), 0);  \
    assert_int_equal(a_.meet, 0);                                              \
    assert_true(a_.mask == (uint64_t)(names));                                 \
  } while (0)

#define ASSERT_OPEN(s, seq)                          \
  do {                                               \
    int st_ = -1;                                    \
    assert_int_equal(dred_meet_poll((s), (seq), &st_), 0); \
  } while (0)

#define ASSERT_DECIDED(s, seq, want)                        \
  do {                                                      \
    int st_ = -1;                                           \
    assert_int_equal(dred_meet_poll((s), (seq), &st_), 1);  \
    assert_int_equal(st_, (want));                          \
  } while (0)

static dred_meet_ring_stats_t stats(const dred_meet_ring_t *r) {
  dred_meet_ring_stats_t st;
  dred_meet_ring_stats(r, &st);
  return st;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t bit(uint32_t k) { return (uint64_t)1 << k; }

/* Members 0..n-1 all release `seq` in `s`. */
static void release_all(dred_meet_slot_t *s, uint64_t seq, uint32_t n) {
  uint32_t k;
  for (k = 0; k < n; k++) dred_meet_release(s, seq, k);
}

/* The operands in `s` are those of `seq`'s non-root members. */
static void assert_operands(const dred_meet_slot_t *s, uint64_t seq, uint32_t n,
                            const proto_params_t *p) {
  const unsigned char *d = dred_meet_data(s);
  size_t bytes = (size_t)(p->count * p->extent), i;
  uint32_t k;
  for (k = 0; k < n; k++) {
    if (k == p->root) continue; /* the root's place holds nothing */
    for (i = 0; i < bytes; i++)
      if (d[k * bytes + i] != pattern(seq, k, i)) fail_msg("seq %llu member %u byte %zu",
                                                           (unsigned long long)seq, k, i);
  }
}

/* ---- 1. rings ---------------------------------------------------------------------- */

static void test_rings(void **state) {
  dred_meet_table_t *t = table_new();
  uint32_t other[N] = {10, 11, 12, 14}, big[DRED_MEET_MAX_MEMBERS + 1], w[N];
  dred_meet_ring_t *r1, *r2, *rc, *rp, *rh, *all[DRED_MEET_GROUPS];
  uint32_t used, g, i, j;
  (void)state;

  r1 = dred_meet_ring_of(t, 7, N, WORKERS);
  assert_non_null(r1);
  assert_ptr_equal(dred_meet_ring_of(t, 7, N, WORKERS), r1); /* every member finds it */
  assert_int_equal(dred_meet_ring_member(r1, 10), 0);
  assert_int_equal(dred_meet_ring_member(r1, 12), 2);
  assert_int_equal(dred_meet_ring_member(r1, 13), 3);
  assert_int_equal(dred_meet_ring_member(r1, 14), -1);
  assert_int_equal(dred_meet_ring_member(NULL, 10), -1);

  /* another group, same workers */
  r2 = dred_meet_ring_of(t, 8, N, WORKERS);
  assert_non_null(r2);
  assert_true(r2 != r1);
  /* a gid collision: same id, other members (or fewer of them) is another group */
  rc = dred_meet_ring_of(t, 7, N, other);
  assert_non_null(rc);
  assert_true(rc != r1 && rc != r2);
  assert_int_equal(dred_meet_ring_member(rc, 14), 3);
  assert_int_equal(dred_meet_ring_member(rc, 13), -1);
  rp = dred_meet_ring_of(t, 7, N - 1, WORKERS);
  assert_non_null(rp);
  assert_true(rp != r1 && rp != r2 && rp != rc);
  /* ids whose hash starts at r1's place: probing past it */
  rh = dred_meet_ring_of(t, 7 + DRED_MEET_GROUPS, N, WORKERS);
  assert_non_null(rh);
  assert_true(rh != r1 && rh != r2 && rh != rc && rh != rp);
  assert_ptr_equal(dred_meet_ring_of(t, 7, N, WORKERS), r1);
  assert_ptr_equal(dred_meet_ring_of(t, 7, N, other), rc);

  /* rings of different groups do not share slots */
  {
    proto_params_t p = params(4, 0);
    dred_meet_slot_t *s1 = MEET(r1, 0, 0, &p), *s2 = NULL;
    for (i = 0; i < N; i++) s2 = MEET(r2, 0, i, &p);
    assert_true(s1 != s2);
    ASSERT_DECIDED(s2, 0, DRED_OK);
    ASSERT_OPEN(s1, 0);
  }

  /* n out of range */
  for (i = 0; i <= DRED_MEET_MAX_MEMBERS; i++) big[i] = 1000 + i;
  assert_null(dred_meet_ring_of(t, 99, 0, big));
  assert_null(dred_meet_ring_of(t, 99, DRED_MEET_MAX_MEMBERS + 1, big));

  /* fill the table */
  all[0] = r1, all[1] = r2, all[2] = rc, all[3] = rp, all[4] = rh;
  used = 5;
  for (g = 0; used < DRED_MEET_GROUPS; g++) {
    for (i = 0; i < N; i++) w[i] = 500 + g * N + i;
    all[used] = dred_meet_ring_of(t, 1000 + g * 3, N, w);
    assert_non_null(all[used]);
    used++;
  }
  for (i = 0; i < DRED_MEET_GROUPS; i++)
    for (j = i + 1; j < DRED_MEET_GROUPS; j++) assert_true(all[i] != all[j]);
  /* full: a new group finds none, every time (all its members use dred-master) */
  assert_null(dred_meet_ring_of(t, 5000, N, WORKERS));
  assert_null(dred_meet_ring_of(t, 5000, N, WORKERS));
  assert_null(dred_meet_ring_of(t, 7, N, big)); /* a gid collision is a new group too */
  /* the groups that have one still find it */
  assert_ptr_equal(dred_meet_ring_of(t, 7, N, WORKERS), r1);
  assert_ptr_equal(dred_meet_ring_of(t, 8, N, WORKERS), r2);
  assert_ptr_equal(dred_meet_ring_of(t, 7, N, other), rc);
  assert_ptr_equal(dred_meet_ring_of(t, 7, N - 1, WORKERS), rp);
  assert_ptr_equal(dred_meet_ring_of(t, 7 + DRED_MEET_GROUPS, N, WORKERS), rh);
  for (g = 0; g < DRED_MEET_GROUPS - 5; g++) {
    for (i = 0; i < N; i++) w[i] = 500 + g * N + i;
    assert_ptr_equal(dred_meet_ring_of(t, 1000 + g * 3, N, w), all[5 + g]);
  }
  table_free(t);
}

/* ---- 2. the happy path ------------------------------------------------------------- */

/* One reduction of `r` (n members) arriving in `order`, releasing in `rel`: undecided until
 * the last arrival, then OK for everyone, the operands in place, the slot freed by the
 * last release only. */
static void meet_in_order(dred_meet_ring_t *r, uint64_t seq, uint32_t n, const uint32_t *order,
                          const uint32_t *rel, const proto_params_t *p) {
  dred_meet_slot_t *s = NULL, *sk;
  uint32_t busy0 = stats(r).busy, i;
  for (i = 0; i < n; i++) {
    sk = MEET(r, seq, order[i], p);
    if (s == NULL) s = sk;
    assert_ptr_equal(sk, s); /* everyone waits in the same slot */
    if (i + 1 < n)
      ASSERT_OPEN(s, seq);
    else
      ASSERT_DECIDED(s, seq, DRED_OK);
  }
  assert_int_equal(stats(r).busy, busy0 + 1);
  assert_operands(s, seq, n, p);
  for (i = 0; i < n; i++) {
    /* a member that has not released yet still finds the outcome and the operands */
    ASSERT_DECIDED(s, seq, DRED_OK);
    assert_operands(s, seq, n, p);
    assert_int_equal(stats(r).busy, busy0 + 1);
    dred_meet_release(s, seq, rel[i]);
  }
  assert_int_equal(stats(r).busy, busy0);
}

static void test_happy_path(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 1, N, WORKERS);
  uint32_t order[N], rel[N], code, i, j, perms = 0;
  uint64_t seq = 0;
  (void)state;
  assert_non_null(r);

  /* every arrival order of four members (and a release order each), the root moving
   * round; 24 reductions wrap the 16 slots, so freed slots are reused too */
  for (code = 0; code < N * N * N * N; code++) {
    int distinct = 1;
    proto_params_t p;
    for (i = 0, j = code; i < N; i++, j /= N) order[i] = j % N;
    for (i = 0; i < N; i++)
      for (j = i + 1; j < N; j++) distinct &= order[i] != order[j];
    if (!distinct) continue;
    for (i = 0; i < N; i++) rel[i] = order[(i + perms) % N];
    p = params(1 + perms % 8, perms % N);
    meet_in_order(r, seq++, N, order, rel, &p);
    perms++;
  }
  assert_int_equal(perms, 24);
  assert_int_equal(stats(r).busy, 0);
  assert_true(stats(r).spills == 0 && stats(r).mixed == 0);

  /* a slot freed by its last release opens for seq + depth */
  {
    proto_params_t p = params(4, 1);
    uint32_t in[N] = {0, 1, 2, 3};
    meet_in_order(r, 100, N, in, in, &p);
    meet_in_order(r, 100 + DRED_MEET_DEPTH, N, in, in, &p);
    meet_in_order(r, 100 + 2 * DRED_MEET_DEPTH, N, in, in, &p);
  }

  /* reductions in flight side by side: all DRED_MEET_DEPTH slots held at once */
  {
    proto_params_t p = params(2, 3);
    dred_meet_slot_t *s[DRED_MEET_DEPTH];
    for (j = 0; j < DRED_MEET_DEPTH; j++) s[j] = MEET(r, 200 + j, 0, &p);
    for (i = 1; i < N; i++)
      for (j = 0; j < DRED_MEET_DEPTH; j++) assert_ptr_equal(MEET(r, 200 + j, i, &p), s[j]);
    assert_int_equal(stats(r).busy, DRED_MEET_DEPTH);
    for (j = 0; j < DRED_MEET_DEPTH; j++) {
      ASSERT_DECIDED(s[j], 200 + j, DRED_OK);
      assert_operands(s[j], 200 + j, N, &p);
      release_all(s[j], 200 + j, N);
    }
    assert_int_equal(stats(r).busy, 0);
  }
  table_free(t);
}

/* The extremes: a group of one decides at its only arrival; a group of
 * DRED_MEET_MAX_MEMBERS fills DRED_MEET_DATA exactly. */
static void test_group_sizes(void **state) {
  dred_meet_table_t *t = table_new();
  uint32_t w[DRED_MEET_MAX_MEMBERS], order[DRED_MEET_MAX_MEMBERS], i;
  dred_meet_ring_t *r1, *rmax;
  proto_params_t p;
  (void)state;
  for (i = 0; i < DRED_MEET_MAX_MEMBERS; i++) w[i] = 100 + i, order[i] = (i * 37) % DRED_MEET_MAX_MEMBERS;

  r1 = dred_meet_ring_of(t, 11, 1, w);
  assert_non_null(r1);
  p = params(4, 0);
  order[0] = 0;
  meet_in_order(r1, 0, 1, order, order, &p);

  rmax = dred_meet_ring_of(t, 12, DRED_MEET_MAX_MEMBERS, w);
  assert_non_null(rmax);
  /* 64 x 8 x 4 bytes = DRED_MEET_DATA; order is a permutation (37 is odd) */
  for (i = 0; i < DRED_MEET_MAX_MEMBERS; i++) order[i] = (i * 37 + 5) % DRED_MEET_MAX_MEMBERS;
  p = params(DRED_MEET_DATA / DRED_MEET_MAX_MEMBERS / 4, DRED_MEET_MAX_MEMBERS - 1);
  meet_in_order(rmax, 0, DRED_MEET_MAX_MEMBERS, order, order, &p);
  p.root = 0;
  meet_in_order(rmax, 1, DRED_MEET_MAX_MEMBERS, order, order, &p);
  table_free(t);
}

/* ---- 3. mismatches ----------------------------------------------------------------- */

/* All members arrive (member `odd` with `po`, the others with `p`): the outcome for
 * everyone is `want`, and the slot frees when they release. */
static void run_odd_one(dred_meet_ring_t *r, uint64_t seq, uint32_t odd,
                        const proto_params_t *p, const proto_params_t *po, int want) {
  dred_meet_slot_t *s = NULL;
  uint32_t k;
  for (k = 0; k < N; k++) {
    /* arrivals start at the odd one's successor, so it is first, last or in between */
    uint32_t m = (odd + 1 + k) % N;
    s = MEET(r, seq, m, m == odd ? po : p);
    if (k + 1 < N) ASSERT_OPEN(s, seq);
  }
  ASSERT_DECIDED(s, seq, want);
  for (k = 0; k < N; k++) {
    ASSERT_DECIDED(s, seq, want);
    dred_meet_release(s, seq, k);
  }
  assert_int_equal(stats(r).busy, 0);
}

static void test_mismatch(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 2, N, WORKERS);
  proto_params_t p = params(4, 0), po;
  uint64_t seq = 0;
  uint32_t odd, field;
  (void)state;
  assert_non_null(r);

  for (field = 0; field < 8; field++)
    for (odd = 0; odd < N; odd++) {
      po = p;
      switch (field) {
      case 0: po.count = 5; break;
      case 1: po.op = 4; break;
      case 2: po.root = 1; break;
      case 3: po.type_sig = 0x52u; break;
      case 4: po.type_size = 8; po.extent = 8; break;
      case 5: po.extent = 8; break;
      case 6: po.commutative = 0; break;
      case 7: po.op_is_user = 1; break; /* a user op is never a built-in one */
      }
      run_odd_one(r, seq++, odd, &p, &po, DRED_ERR_MISMATCH);
    }

  /* user ops: only commutativity can be compared (their handles differ by process) */
  {
    proto_params_t u = params(4, 2), uo;
    u.op_is_user = 1;
    for (odd = 0; odd < N; odd++) {
      uo = u;
      uo.op = 77;
      run_odd_one(r, seq++, odd, &u, &uo, DRED_OK);
      uo.commutative = 0;
      run_odd_one(r, seq++, odd, &u, &uo, DRED_ERR_MISMATCH);
    }
  }

  /* everyone agrees on a root that is not a member */
  {
    proto_params_t pr = params(4, N);
    run_odd_one(r, seq++, 0, &pr, &pr, DRED_ERR_MISMATCH);
    pr.root = 1000;
    run_odd_one(r, seq++, 2, &pr, &pr, DRED_ERR_MISMATCH);
  }
  assert_true(stats(r).spills == 0 && stats(r).mixed == 0);
  table_free(t);
}

/* ---- 4. a member's own error ------------------------------------------------------- */

static void test_member_error(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 3, N, WORKERS);
  proto_params_t p = params(4, 1);
  dred_meet_arrival_t a;
  dred_meet_slot_t *s = NULL;
  uint32_t bad, k;
  uint64_t seq = 0;
  (void)state;
  assert_non_null(r);
  /* the member that failed (at the root or not) arrives first, between or last */
  for (bad = 0; bad < N; bad++, seq++) {
    for (k = 0; k < N; k++) {
      uint32_t m = (bad + 1 + k) % N;
      assert_int_equal(arrive(r, seq, m, &p, 1, m == bad ? DRED_ERR_NOMEM : DRED_OK, &a), 0);
      assert_int_equal(a.meet, 1);
      s = a.slot;
    }
    for (k = 0; k < N; k++) {
      ASSERT_DECIDED(s, seq, DRED_ERR_NOMEM);
      dred_meet_release(s, seq, k);
    }
    assert_int_equal(stats(r).busy, 0);
  }
  table_free(t);
}

/* ---- 5. MIXED: some members go to dred-master -------------------------------------- */

static void test_mixed(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 4, N, WORKERS);
  proto_params_t p = params(4, 3);
  dred_meet_slot_t *s0, *s2, *s;
  uint32_t k;
  (void)state;
  assert_non_null(r);

  /* (a) members 0 and 2 meet; member 1 goes to dred-master and names them */
  s0 = MEET(r, 0, 0, &p);
  s2 = MEET(r, 0, 2, &p);
  assert_ptr_equal(s0, s2);
  ASSERT_OPEN(s0, 0);
  TO_MASTER(r, 0, 1, &p, 0, bit(0) | bit(2));
  ASSERT_DECIDED(s0, 0, DRED_ERR_MISMATCH); /* what 0 and 2 learn here */
  assert_int_equal(stats(r).mixed, 1);
  TO_MASTER(r, 0, 3, &p, 1, 0); /* later: nobody to name, whatever it wanted */
  assert_int_equal(stats(r).busy, 1); /* 0 and 2 still take their outcome */
  ASSERT_DECIDED(s2, 0, DRED_ERR_MISMATCH);
  dred_meet_release(s0, 0, 0);
  assert_int_equal(stats(r).busy, 1);
  dred_meet_release(s2, 0, 2);
  assert_int_equal(stats(r).busy, 0);

  /* (a) again: three meet, the last goes to dred-master; then the later-kind arrival is
   * a wants=0 one (seq 1: the other slot) */
  s = MEET(r, 1, 3, &p);
  MEET(r, 1, 1, &p);
  TO_MASTER(r, 1, 2, &p, 0, bit(3) | bit(1));
  TO_MASTER(r, 1, 0, &p, 0, 0);
  ASSERT_DECIDED(s, 1, DRED_ERR_MISMATCH);
  dred_meet_release(s, 1, 3);
  dred_meet_release(s, 1, 1);
  assert_int_equal(stats(r).busy, 0);

  /* and with everyone but one met already */
  s = MEET(r, 2, 0, &p);
  MEET(r, 2, 1, &p);
  MEET(r, 2, 3, &p);
  ASSERT_OPEN(s, 2);
  TO_MASTER(r, 2, 2, &p, 0, bit(0) | bit(1) | bit(3));
  ASSERT_DECIDED(s, 2, DRED_ERR_MISMATCH);
  for (k = 0; k < N; k++) dred_meet_release(s, 2, k); /* 2's release is harmless */
  assert_int_equal(stats(r).busy, 0);
  assert_int_equal(stats(r).mixed, 3);

  /* (b) member 2 goes to dred-master first: the wants=1 arrivals after it follow it, with
   * nobody to name; the slot is nobody's once all have arrived */
  TO_MASTER(r, 3, 2, &p, 0, 0);
  TO_MASTER(r, 3, 0, &p, 1, 0);
  TO_MASTER(r, 3, 3, &p, 1, 0);
  TO_MASTER(r, 3, 1, &p, 0, 0);
  assert_int_equal(stats(r).busy, 0);
  assert_int_equal(stats(r).mixed, 4);

  /* (c) everyone goes to dred-master: nobody meets, no mismatch, the slot is freed by the
   * last arrival */
  for (k = 0; k < N; k++) TO_MASTER(r, 4, k, &p, 0, 0);
  assert_int_equal(stats(r).busy, 0);
  assert_int_equal(stats(r).mixed, 4);

  /* every one of those slots can be met in at seq + depth */
  for (k = 0; k < 5; k++) {
    uint32_t in[N] = {3, 2, 1, 0};
    meet_in_order(r, k + DRED_MEET_DEPTH, N, in, in, &p);
  }
  assert_int_equal(stats(r).spills, 0);
  table_free(t);
}

/* ---- 6. ring wrap: spills ---------------------------------------------------------- */

static void test_spill(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 5, 3, WORKERS);
  proto_params_t p = params(4, 0);
  const uint64_t D = DRED_MEET_DEPTH;
  dred_meet_slot_t *s;
  uint32_t in[3] = {0, 1, 2};
  (void)state;
  assert_non_null(r);

  /* seq 0 decided; members 0 and 1 done, member 2 not yet */
  s = MEET(r, 0, 0, &p);
  MEET(r, 0, 1, &p);
  MEET(r, 0, 2, &p);
  ASSERT_DECIDED(s, 0, DRED_OK);
  dred_meet_release(s, 0, 0);
  dred_meet_release(s, 0, 1);

  /* seq D finds the slot held: member 1 spills */
  TO_MASTER(r, D, 1, &p, 1, 0);
  assert_int_equal(stats(r).spills, 1);
  /* other slots are not affected */
  meet_in_order(r, 1, 3, in, in, &p);
  /* member 2 is done with seq 0: the slot is free, but seq D spilled already, so its other
   * members go to dred-master as well */
  dred_meet_release(s, 0, 2);
  assert_int_equal(stats(r).busy, 0);
  TO_MASTER(r, D, 0, &p, 1, 0);
  TO_MASTER(r, D, 2, &p, 1, 0);
  assert_int_equal(stats(r).busy, 0);
  assert_int_equal(stats(r).spills, 1); /* one reduction spilled */

  /* seq 2D meets there again */
  meet_in_order(r, 2 * D, 3, in, in, &p);

  /* in flight: seq 3D open (member 2 missing), member 0 already arrives for 4D: spilled.
   * 3D completes and is released; member 0 goes on to 5D, which opens the free slot;
   * only then members 1 and 2 arrive for 4D: spilled still, though the slot is held by a
   * newer reduction now */
  s = MEET(r, 3 * D, 0, &p);
  MEET(r, 3 * D, 1, &p);
  TO_MASTER(r, 4 * D, 0, &p, 1, 0);
  assert_int_equal(stats(r).spills, 2);
  MEET(r, 3 * D, 2, &p);
  ASSERT_DECIDED(s, 3 * D, DRED_OK);
  release_all(s, 3 * D, 3);
  s = MEET(r, 5 * D, 0, &p);
  TO_MASTER(r, 4 * D, 2, &p, 1, 0);
  TO_MASTER(r, 4 * D, 1, &p, 1, 0);
  MEET(r, 5 * D, 2, &p);
  MEET(r, 5 * D, 1, &p);
  ASSERT_DECIDED(s, 5 * D, DRED_OK);
  assert_operands(s, 5 * D, 3, &p);
  release_all(s, 5 * D, 3);
  assert_int_equal(stats(r).busy, 0);

  /* a spill is a spill whatever the members wanted: one that would not meet anyway also
   * marks it, and the wanting ones after it follow */
  s = MEET(r, 6 * D, 0, &p);
  TO_MASTER(r, 7 * D, 1, &p, 0, 0);
  MEET(r, 6 * D, 1, &p);
  MEET(r, 6 * D, 2, &p);
  release_all(s, 6 * D, 3);
  TO_MASTER(r, 7 * D, 0, &p, 1, 0);
  TO_MASTER(r, 7 * D, 2, &p, 1, 0);
  assert_int_equal(stats(r).busy, 0);
  meet_in_order(r, 8 * D, 3, in, in, &p);
  table_free(t);
}

/* ---- 7. failures ------------------------------------------------------------------- */

static void test_member_failed(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 6, 3, WORKERS);
  proto_params_t p = params(4, 0);
  const uint64_t D = DRED_MEET_DEPTH;
  dred_meet_slot_t *s0, *s1, *s2, *s3;
  dred_meet_arrival_t a;
  int pass;
  (void)state;
  assert_non_null(r);

  /* seq 0: members 0, 1 in (2 missing); seq 1: 0, 2 in; seq 2: only 2 in; seq 3 decided,
   * 2 released, 0 and 1 not yet */
  s0 = MEET(r, 0, 0, &p);
  MEET(r, 0, 1, &p);
  s1 = MEET(r, 1, 0, &p);
  MEET(r, 1, 2, &p);
  s2 = MEET(r, 2, 2, &p);
  s3 = MEET(r, 3, 0, &p);
  MEET(r, 3, 1, &p);
  MEET(r, 3, 2, &p);
  dred_meet_release(s3, 3, 2);
  assert_int_equal(stats(r).busy, 4);

  /* member 2 dies; every survivor says so (idempotent) */
  for (pass = 0; pass < 2; pass++) {
    dred_meet_member_failed(r, 2, DRED_ERR_PROC_FAILED);
    ASSERT_DECIDED(s0, 0, DRED_ERR_PROC_FAILED); /* it never arrived there */
    ASSERT_OPEN(s1, 1);                          /* its operand is in: not its business */
    ASSERT_OPEN(s2, 2);
    ASSERT_DECIDED(s3, 3, DRED_OK);
    assert_int_equal(stats(r).busy, 4);
  }
  /* the survivors finish: every slot freed once they have released */
  dred_meet_release(s0, 0, 0);
  dred_meet_release(s0, 0, 1);
  MEET(r, 1, 1, &p);
  ASSERT_DECIDED(s1, 1, DRED_OK);
  assert_operands(s1, 1, 3, &p); /* the dead member's operand among them */
  dred_meet_release(s1, 1, 0);
  dred_meet_release(s1, 1, 1);
  MEET(r, 2, 0, &p);
  MEET(r, 2, 1, &p);
  ASSERT_DECIDED(s2, 2, DRED_OK);
  dred_meet_release(s2, 2, 1);
  dred_meet_release(s2, 2, 0);
  dred_meet_release(s3, 3, 0);
  dred_meet_release(s3, 3, 1);
  assert_int_equal(stats(r).busy, 0);
  dred_meet_member_failed(r, 2, DRED_ERR_PROC_FAILED); /* late: nothing left to end */
  assert_int_equal(stats(r).busy, 0);

  /* member 2 is gone for this ring: declared failed while only stalled, it still runs, and
   * its late arrival must not reopen a slot the others left (it would wait for ever and
   * hold the slot): it goes to the master.  A slot opened after the death ends at once. */
  assert_int_equal(arrive(r, 0, 2, &p, 1, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 0);
  assert_int_equal(stats(r).busy, 0);
  s0 = MEET(r, 4, 0, &p);
  ASSERT_DECIDED(s0, 4, DRED_ERR_PROC_FAILED);
  MEET(r, 4, 1, &p);
  release_all(s0, 4, 2);
  assert_int_equal(stats(r).busy, 0);

  /* (each block from here on stages a new death on the same ring, in a fresh slot)
   * a member that arrives after the slot failed takes the failure here, whatever it
   * wanted; the slot frees once the survivors are done */
  r = dred_meet_ring_of(t, 60, 3, WORKERS); /* a death is for good: a fresh group */
  s0 = MEET(r, D, 0, &p);
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(s0, D, DRED_ERR_PROC_FAILED);
  assert_int_equal(arrive(r, D, 2, &p, 1, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 1);
  assert_ptr_equal(a.slot, s0);
  ASSERT_DECIDED(a.slot, D, DRED_ERR_PROC_FAILED);
  dred_meet_release(s0, D, 0);
  assert_int_equal(stats(r).busy, 1);
  dred_meet_release(s0, D, 2);
  assert_int_equal(stats(r).busy, 0);

  r = dred_meet_ring_of(t, 61, 3, WORKERS);
  s0 = MEET(r, 2 * D, 2, &p);
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(s0, 2 * D, DRED_ERR_PROC_FAILED);
  assert_int_equal(arrive(r, 2 * D, 0, &p, 0, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 1);
  ASSERT_DECIDED(a.slot, 2 * D, DRED_ERR_PROC_FAILED);
  dred_meet_release(a.slot, 2 * D, 0);
  dred_meet_release(s0, 2 * D, 2);
  assert_int_equal(stats(r).busy, 0);

  /* the only member missing dies: nobody waits for it; the others release */
  r = dred_meet_ring_of(t, 62, 3, WORKERS);
  s0 = MEET(r, 3 * D, 0, &p);
  MEET(r, 3 * D, 2, &p);
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(s0, 3 * D, DRED_ERR_PROC_FAILED);
  release_all(s0, 3 * D, 3);
  assert_int_equal(stats(r).busy, 0);
  r = dred_meet_ring_of(t, 63, 3, WORKERS); /* and a group with no death meets as ever */
  meet_in_order(r, 4 * D, 3, (uint32_t[]){2, 0, 1}, (uint32_t[]){0, 1, 2}, &p);
  table_free(t);
}

static void test_end(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 7, N, WORKERS);
  proto_params_t p = params(4, 0);
  dred_meet_slot_t *s;
  dred_meet_arrival_t a;
  uint32_t k;
  (void)state;
  assert_non_null(r);

  /* open: ended for everyone, those still to arrive included */
  s = MEET(r, 0, 0, &p);
  MEET(r, 0, 3, &p);
  dred_meet_end(s, 0, DRED_ERR_SHUTDOWN);
  ASSERT_DECIDED(s, 0, DRED_ERR_SHUTDOWN);
  dred_meet_end(s, 0, DRED_ERR_MASTER_LOST); /* decided: stays as it was */
  ASSERT_DECIDED(s, 0, DRED_ERR_SHUTDOWN);
  for (k = 1; k <= 2; k++) {
    assert_int_equal(arrive(r, 0, k, &p, 1, DRED_OK, &a), 0);
    assert_int_equal(a.meet, 1);
    ASSERT_DECIDED(a.slot, 0, DRED_ERR_SHUTDOWN);
  }
  release_all(s, 0, N);
  assert_int_equal(stats(r).busy, 0);

  /* decided OK: no effect */
  for (k = 0; k < N; k++) s = MEET(r, 1, k, &p);
  dred_meet_end(s, 1, DRED_ERR_SHUTDOWN);
  ASSERT_DECIDED(s, 1, DRED_OK);
  /* another seq's end does not touch this one */
  dred_meet_end(s, 1 + DRED_MEET_DEPTH, DRED_ERR_SHUTDOWN);
  ASSERT_DECIDED(s, 1, DRED_OK);
  release_all(s, 1, N);

  /* decided MISMATCH: no effect either */
  s = MEET(r, 2, 0, &p);
  TO_MASTER(r, 2, 1, &p, 0, bit(0));
  dred_meet_end(s, 2, DRED_ERR_SHUTDOWN);
  ASSERT_DECIDED(s, 2, DRED_ERR_MISMATCH);
  dred_meet_release(s, 2, 0);
  TO_MASTER(r, 2, 2, &p, 1, 0);
  TO_MASTER(r, 2, 3, &p, 1, 0);
  assert_int_equal(stats(r).busy, 0);
  table_free(t);
}

/* ---- 8. across processes ----------------------------------------------------------- */

/* Reap `pid` within `ms`, killing it if it overruns; its wait status. */
static int reap(pid_t pid, unsigned ms) {
  uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
  int st = 0;
  for (;;) {
    pid_t got = waitpid(pid, &st, WNOHANG);
    if (got == pid) return st;
    assert_int_equal(got, 0);
    if (now_ns() > end) {
      kill(pid, SIGKILL);
      assert_int_equal(waitpid(pid, &st, 0), pid);
      fail_msg("child %d overran %u ms", (int)pid, ms);
    }
    usleep(1000);
  }
}

/* A child process arrives as `member` of `seq` (with the ring's table shared) and waits
 * for the outcome; it exits 0 only if it saw `expect` soon: each wait may take 2 s, so a
 * lost wake-up shows as a late decision (exit 5).  With DRED_OK it also checks member 0's
 * operand, which the parent brings.  Returns once the child has arrived. */
static pid_t start_waiter(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                          const proto_params_t *p, int expect) {
  int fd[2];
  char c;
  pid_t pid;
  assert_int_equal(pipe(fd), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dred_meet_arrival_t a;
    uint64_t start, end;
    int status = -1;
    size_t i;
    close(fd[0]);
    if (arrive(r, seq, member, p, 1, DRED_OK, &a) != 0 || !a.meet) _exit(2);
    if (write(fd[1], "a", 1) != 1) _exit(3);
    start = now_ns();
    end = start + 3000000000ull;
    while (!dred_meet_poll(a.slot, seq, &status) && now_ns() < end)
      dred_meet_wait(a.slot, seq, member, 0, 2000000000ull);
    if (status != expect) _exit(4);
    if (now_ns() - start > 1500000000ull) _exit(5);
    if (expect == DRED_OK && p->root != 0)
      for (i = 0; i < p->count * p->extent; i++)
        if (((const unsigned char *)dred_meet_data(a.slot))[i] != pattern(seq, 0, i)) _exit(6);
    dred_meet_release(a.slot, seq, member);
    _exit(0);
  }
  close(fd[1]);
  assert_int_equal(read(fd[0], &c, 1), 1); /* the child arrived */
  close(fd[0]);
  usleep(50000); /* most likely asleep on the futex by now */
  return pid;
}

static void assert_exit0(pid_t pid) {
  int st = reap(pid, 4000);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* Another process's outcome wakes a waiter: the last arrival (with the operand the
 * waiting root folds), dred_meet_end, a member's death. */
static void test_cross_process(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 8, 3, WORKERS);
  proto_params_t p = params(4, 1);
  dred_meet_slot_t *s;
  pid_t pid;
  (void)state;
  assert_non_null(r);

  /* the child (member 1, the root) waits; the parent brings members 2 and 0 */
  s = MEET(r, 0, 2, &p);
  pid = start_waiter(r, 0, 1, &p, DRED_OK);
  MEET(r, 0, 0, &p);
  ASSERT_DECIDED(s, 0, DRED_OK);
  assert_exit0(pid);
  dred_meet_release(s, 0, 0);
  dred_meet_release(s, 0, 2);
  assert_int_equal(stats(r).busy, 0);

  /* the parent ends it (a deadline, a lost master) */
  s = MEET(r, 1, 0, &p);
  pid = start_waiter(r, 1, 2, &p, DRED_ERR_SHUTDOWN);
  dred_meet_end(s, 1, DRED_ERR_SHUTDOWN);
  assert_exit0(pid);
  MEET(r, 1, 1, &p); /* takes the outcome here too */
  ASSERT_DECIDED(s, 1, DRED_ERR_SHUTDOWN);
  release_all(s, 1, 3);
  assert_int_equal(stats(r).busy, 0);

  /* member 0 dies before it arrived */
  pid = start_waiter(r, 2, 1, &p, DRED_ERR_PROC_FAILED);
  s = MEET(r, 2, 2, &p);
  dred_meet_member_failed(r, 0, DRED_ERR_PROC_FAILED);
  assert_exit0(pid);
  dred_meet_release(s, 2, 2);
  assert_int_equal(stats(r).busy, 0);
  table_free(t);
}

/* dred_meet_wait(s, seq, timeout_ns) in a child (the table is shared), which exits 0 iff
 * it returned within `limit_ns`: a wait that never returns fails the test in 2 s instead
 * of hanging it. */
static void assert_wait_returns(dred_meet_slot_t *s, uint64_t seq, uint64_t timeout_ns,
                                uint64_t limit_ns) {
  pid_t pid = fork();
  int st;
  assert_true(pid >= 0);
  if (pid == 0) {
    uint64_t t0 = now_ns();
    dred_meet_wait(s, seq, 0, 0, timeout_ns);
    _exit(now_ns() - t0 < limit_ns ? 0 : 1);
  }
  st = reap(pid, 2000);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* Waiting on an open slot returns after its timeout; on a decided one, at once. */
static void test_wait_bounded(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 9, 2, WORKERS);
  proto_params_t p = params(4, 0);
  dred_meet_slot_t *s;
  (void)state;
  assert_non_null(r);
  s = MEET(r, 0, 0, &p);
  assert_wait_returns(s, 0, 50000000ull, 1000000000ull); /* 50 ms: back within 1 s */
  ASSERT_OPEN(s, 0);
  MEET(r, 0, 1, &p);
  assert_wait_returns(s, 0, 5000000000ull, 1000000000ull); /* decided: at once */
  release_all(s, 0, 2);
  table_free(t);
}

/* A member about to copy a large operand wakes the peers asleep in its collective's slot
 * (dred_meet_prewake) -- before its arrival, which alone would otherwise wake them -- and
 * nobody else: a prewake for another collective of the same slot leaves them asleep. */
static void test_prewake(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 12, 2, WORKERS);
  proto_params_t p = params(4, 0);
  dred_meet_slot_t *s;
  pid_t pid;
  int st;
  (void)state;
  assert_non_null(r);
  dred_meet_prewake(r, 0); /* nobody there: nothing to wake, nothing breaks */
  s = MEET(r, 0, 0, &p);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* member 0 waits for member 1: up to 5 s, woken well before */
    uint64_t t0 = now_ns();
    dred_meet_wait(s, 0, 0, 0, 5000000000ull);
    _exit(now_ns() - t0 < 2000000000ull ? 0 : 1);
  }
  usleep(50000); /* past its polling: asleep */
  dred_meet_prewake(r, DRED_MEET_DEPTH); /* the same slot's next collective: not ours */
  usleep(100000);
  assert_int_equal(waitpid(pid, &st, WNOHANG), 0); /* still asleep */
  dred_meet_prewake(r, 0);
  st = reap(pid, 2000);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  ASSERT_OPEN(s, 0); /* woken, not decided: member 1 has not come */
  MEET(r, 0, 1, &p);
  ASSERT_DECIDED(s, 0, DRED_OK);
  release_all(s, 0, 2);
  table_free(t);
}

/* A member that dies holding a slot's lock: its operand is on a page it cannot read, so it
 * faults inside dred_meet_arrive's copy, under the lock.  The next to lock the slot ends
 * the open reduction with DRED_ERR_PROC_FAILED, and the lock works on. */
static void test_lock_holder_dies(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 10, 3, WORKERS);
  proto_params_t p = params(4, 0);
  dred_meet_slot_t *s;
  dred_meet_arrival_t a;
  long page = sysconf(_SC_PAGESIZE);
  void *bad;
  pid_t pid;
  int st;
  (void)state;
  assert_non_null(r);
  bad = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(bad != MAP_FAILED);
  s = MEET(r, 0, 0, &p); /* the root is in */
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct sigaction sa;
    struct rlimit no_core = {0, 0};
    int devnull = open("/dev/null", O_WRONLY);
    /* die of the fault quietly: CMocka's handlers (inherited) would carry on testing */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    setrlimit(RLIMIT_CORE, &no_core);
    if (devnull >= 0) dup2(devnull, 2);
    dred_meet_arrive(r, 0, 1, &p, 1, bad, 16, DRED_OK, &a);
    _exit(0); /* the copy did not fault: the test proves nothing */
  }
  st = reap(pid, 4000);
  assert_false(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ASSERT_DECIDED(s, 0, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(s, 0, DRED_ERR_PROC_FAILED); /* the lock is usable again */
  assert_int_equal(arrive(r, 0, 2, &p, 1, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 1);
  ASSERT_DECIDED(a.slot, 0, DRED_ERR_PROC_FAILED);
  /* the runtime learns of the death; the survivors release */
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  dred_meet_release(s, 0, 0);
  dred_meet_release(s, 0, 2);
  assert_int_equal(stats(r).busy, 0);
  /* member 1 is gone from that group; a group without it meets as ever */
  r = dred_meet_ring_of(t, 110, 3, WORKERS);
  meet_in_order(r, DRED_MEET_DEPTH, 3, (uint32_t[]){1, 2, 0}, (uint32_t[]){0, 1, 2}, &p);
  munmap(bad, (size_t)page);
  table_free(t);
}

/* ---- 10. operands met by reference --------------------------------------------------- */

#define BIG 100000 /* ints: far more than a slot holds */

static dred_meet_ref_t ref_of(uint32_t k, const proto_params_t *p) {
  dred_meet_ref_t op;
  memset(&op, 0, sizeof op);
  if (k == p->root) return op; /* the root reads, it publishes nothing */
  op.kind = DRED_MEET_OP_POOL;
  op.worker = WORKERS[k];
  op.off = 4096 + 65536 * (int64_t)k;
  op.len = p->count * p->extent;
  return op;
}

static int arrive_ref(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p,
                      uint32_t kind, int error, dred_meet_arrival_t *a) {
  dred_meet_ref_t op = ref_of(k, p);
  if (kind != DRED_MEET_OP_POOL) op.kind = kind;
  return dred_meet_arrive_op(r, seq, k, p, 1, &op, NULL, error, a);
}

static dred_meet_slot_t *meet_ref(dred_meet_ring_t *r, uint64_t seq, uint32_t k,
                                  const proto_params_t *p) {
  dred_meet_arrival_t a;
  assert_int_equal(arrive_ref(r, seq, k, p, DRED_MEET_OP_POOL, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 1);
  assert_non_null(a.slot);
  assert_true(a.mask == 0);
  return a.slot;
}

static void assert_needs(dred_meet_slot_t *s, uint64_t seq, const proto_params_t *p, int want) {
  uint32_t k;
  for (k = 0; k < N; k++)
    assert_int_equal(dred_meet_needs(s, seq, k), k == p->root ? 0 : want);
}

static void test_by_ref_orders(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 21, N, WORKERS);
  uint32_t perm[N], i, j, k, c = 0;
  uint64_t seq = 0;
  (void)state;
  assert_non_null(r);
  /* every arrival order of four members, each with every root */
  for (perm[0] = 0; perm[0] < N; perm[0]++)
    for (perm[1] = 0; perm[1] < N; perm[1]++)
      for (perm[2] = 0; perm[2] < N; perm[2]++)
        for (perm[3] = 0; perm[3] < N; perm[3]++) {
          int distinct = 1;
          for (i = 0; i < N; i++)
            for (j = i + 1; j < N; j++) distinct &= perm[i] != perm[j];
          if (!distinct) continue;
          for (uint32_t root = 0; root < N; root++, seq++) {
            proto_params_t p = params(BIG, root);
            dred_meet_slot_t *s = NULL;
            p.inl = 0;
            for (i = 0; i < N; i++) {
              if (s != NULL) ASSERT_OPEN(s, seq);
              s = meet_ref(r, seq, perm[i], &p);
            }
            ASSERT_DECIDED(s, seq, DRED_OK);
            assert_int_equal(dred_meet_state(s, seq), DRED_MEET_OK);
            for (k = 0; k < N; k++) {
              dred_meet_ref_t got = dred_meet_operand(s, k), want = ref_of(k, &p);
              assert_int_equal(got.kind, want.kind);
              if (k == root) continue;
              assert_int_equal(got.worker, want.worker);
              assert_int_equal(got.off, want.off);
              assert_int_equal(got.len, want.len);
            }
            /* the blocks are read until the root is done, whoever else released */
            assert_needs(s, seq, &p, 1);
            for (k = 0; k < N; k++)
              if (k != root) dred_meet_release(s, seq, k);
            assert_needs(s, seq, &p, 1);
            dred_meet_release(s, seq, root);
            assert_needs(s, seq, &p, 0);
            assert_int_equal(stats(r).busy, 0);
            assert_int_equal(dred_meet_state(s, seq), -1); /* over */
            c++;
          }
        }
  assert_int_equal(c, 24 * N);
  table_free(t);
}

static void test_by_ref_mismatch(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 22, N, WORKERS);
  proto_params_t p = params(BIG, 1), q = params(BIG + 1, 1);
  dred_meet_slot_t *s = NULL;
  dred_meet_arrival_t a;
  uint32_t k;
  (void)state;
  p.inl = q.inl = 0;
  /* one member's count differs: MISMATCH for all, and no block is needed */
  for (k = 0; k < N; k++) s = meet_ref(r, 0, k, k == 2 ? &q : &p);
  ASSERT_DECIDED(s, 0, DRED_ERR_MISMATCH);
  assert_needs(s, 0, &p, 0);
  release_all(s, 0, N);
  /* a non-root that says it has nothing to read (it thinks it is the root): MISMATCH */
  for (k = 0; k < N; k++)
    if (k == 3)
      assert_int_equal(arrive_ref(r, 1, k, &p, DRED_MEET_OP_NONE, DRED_OK, &a), 0);
    else
      s = meet_ref(r, 1, k, &p);
  ASSERT_DECIDED(s, 1, DRED_ERR_MISMATCH);
  release_all(s, 1, N);
  /* a reference whose length is not the operand's: refused, holds nothing */
  {
    dred_meet_ref_t op = ref_of(2, &p);
    op.len--;
    assert_int_equal(dred_meet_arrive_op(r, 2, 2, &p, 1, &op, NULL, DRED_OK, &a), -1);
    assert_int_equal(a.meet, 0);
    op = ref_of(2, &p);
    op.kind = 77;
    assert_int_equal(dred_meet_arrive_op(r, 2, 2, &p, 1, &op, NULL, DRED_OK, &a), -1);
  }
  assert_int_equal(stats(r).busy, 0);
  /* a member's own error wins over everything: everyone gets it */
  for (k = 0; k < N; k++)
    assert_int_equal(arrive_ref(r, 3, k, &p, DRED_MEET_OP_POOL, k == 0 ? DRED_ERR_NOMEM : DRED_OK, &a), 0);
  ASSERT_DECIDED(a.slot, 3, DRED_ERR_NOMEM);
  release_all(a.slot, 3, N);
  table_free(t);
}

static void test_noplace_spills(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 23, N, WORKERS);
  proto_params_t p = params(BIG, 0);
  dred_meet_slot_t *s = NULL;
  dred_meet_arrival_t a;
  uint32_t k, first;
  (void)state;
  p.inl = 0;
  /* the first arrival has no place: everyone goes to dred-master, naming nobody */
  for (first = 0; first < N; first++) {
    uint64_t seq = first;
    assert_int_equal(arrive_ref(r, seq, first, &p, DRED_MEET_OP_NOPLACE, DRED_OK, &a), 0);
    assert_int_equal(a.meet, 0);
    assert_true(a.mask == 0);
    for (k = 0; k < N; k++) {
      if (k == first) continue;
      assert_int_equal(arrive_ref(r, seq, k, &p, DRED_MEET_OP_POOL, DRED_OK, &a), 0);
      assert_int_equal(a.meet, 0);
      assert_true(a.mask == 0);
    }
    assert_int_equal(stats(r).busy, 0);
  }
  assert_int_equal(stats(r).noplace, N);
  /* members 0 and 1 met before member 2 found no place: they learn SPILL from the slot
   * (and go to dred-master themselves), member 3 goes there at once */
  s = meet_ref(r, 10, 0, &p);
  s = meet_ref(r, 10, 1, &p);
  assert_int_equal(arrive_ref(r, 10, 2, &p, DRED_MEET_OP_NOPLACE, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 0);
  assert_int_equal(dred_meet_state(s, 10), DRED_MEET_SPILL);
  ASSERT_DECIDED(s, 10, DRED_OK);
  assert_needs(s, 10, &p, 0);
  assert_int_equal(arrive_ref(r, 10, 3, &p, DRED_MEET_OP_POOL, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 0);
  dred_meet_release(s, 10, 0);
  assert_int_equal(stats(r).busy, 1);
  dred_meet_release(s, 10, 1);
  assert_int_equal(stats(r).busy, 0);
  /* after all others met, the last one without a place still spills it */
  for (k = 0; k < N - 1; k++) s = meet_ref(r, 11, k, &p);
  assert_int_equal(arrive_ref(r, 11, N - 1, &p, DRED_MEET_OP_NOPLACE, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 0);
  assert_int_equal(dred_meet_state(s, 11), DRED_MEET_SPILL);
  for (k = 0; k < N - 1; k++) dred_meet_release(s, 11, k);
  assert_int_equal(stats(r).busy, 0);
  /* a member that has no place because its call failed joins with its error instead */
  for (k = 0; k < N; k++)
    assert_int_equal(arrive_ref(r, 12, k, &p, k == 1 ? DRED_MEET_OP_NOPLACE : DRED_MEET_OP_POOL,
                                k == 1 ? DRED_ERR_NOMEM : DRED_OK, &a), 0);
  assert_int_equal(a.meet, 1);
  ASSERT_DECIDED(a.slot, 12, DRED_ERR_NOMEM);
  release_all(a.slot, 12, N);
  /* a slot already MIXED stays MIXED: a member without a place follows to dred-master */
  TO_MASTER(r, 13, 0, &p, 0, 0);
  assert_int_equal(arrive_ref(r, 13, 1, &p, DRED_MEET_OP_NOPLACE, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 0);
  assert_int_equal(stats(r).mixed, 1);
  table_free(t);
}

static void test_by_ref_failures(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 24, N, WORKERS), *r2;
  proto_params_t p = params(BIG, 0);
  dred_meet_slot_t *s = NULL;
  dred_meet_arrival_t a;
  long page = sysconf(_SC_PAGESIZE);
  void *bad;
  pid_t pid;
  int st;
  uint32_t k;
  (void)state;
  p.inl = 0;
  /* a member dies before it arrived: PROC_FAILED, no block needed */
  for (k = 0; k < N - 1; k++) s = meet_ref(r, 0, k, &p);
  ASSERT_OPEN(s, 0);
  dred_meet_member_failed(r, N - 1, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(s, 0, DRED_ERR_PROC_FAILED);
  assert_needs(s, 0, &p, 0);
  for (k = 0; k < N - 1; k++) dred_meet_release(s, 0, k);
  assert_int_equal(stats(r).busy, 0);

  /* a non-root dies after it arrived: nothing lost, its block is still read by the root */
  r = dred_meet_ring_of(t, 25, N, WORKERS);
  for (k = 0; k < N; k++) s = meet_ref(r, 0, k, &p);
  ASSERT_DECIDED(s, 0, DRED_OK);
  dred_meet_member_failed(r, 2, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(s, 0, DRED_OK);
  assert_int_equal(dred_meet_needs(s, 0, 2), 1);
  assert_int_equal(dred_meet_operand(s, 2).worker, WORKERS[2]);
  /* ... until the root dies too: then nobody reads, and the slot empties */
  dred_meet_member_failed(r, 0, DRED_ERR_PROC_FAILED);
  assert_needs(s, 0, &p, 0);
  dred_meet_release(s, 0, 1);
  dred_meet_release(s, 0, 3);
  assert_int_equal(stats(r).busy, 0);

  /* dred_meet_end (finalize deadline) on an open by-reference slot */
  r = dred_meet_ring_of(t, 26, N, WORKERS);
  s = meet_ref(r, 0, 1, &p);
  dred_meet_end(s, 0, DRED_ERR_SHUTDOWN);
  ASSERT_DECIDED(s, 0, DRED_ERR_SHUTDOWN);
  assert_needs(s, 0, &p, 0);
  for (k = 0; k < N; k++)
    if (k != 1) assert_int_equal(arrive_ref(r, 0, k, &p, DRED_MEET_OP_POOL, DRED_OK, &a), 0);
  ASSERT_DECIDED(s, 0, DRED_ERR_SHUTDOWN);
  release_all(s, 0, N);

  /* a process killed while it holds the lock of a slot where others met by reference:
   * PROC_FAILED for everyone, no block needed, the lock usable again */
  r = dred_meet_ring_of(t, 27, N, WORKERS);
  bad = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(bad != MAP_FAILED);
  s = meet_ref(r, 0, 0, &p);
  s = meet_ref(r, 0, 2, &p);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct sigaction sa;
    struct rlimit no_core = {0, 0};
    int devnull = open("/dev/null", O_WRONLY);
    proto_params_t small = params(4, 0);
    dred_meet_ref_t op;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    setrlimit(RLIMIT_CORE, &no_core);
    if (devnull >= 0) dup2(devnull, 2);
    /* a copy into the slot that faults under the lock (its parameters would mismatch, but
     * it dies first) */
    memset(&op, 0, sizeof op);
    op.kind = DRED_MEET_OP_SLOT;
    op.len = 16;
    small.count = 4;
    dred_meet_arrive_op(r, 0, 1, &small, 1, &op, bad, DRED_OK, &a);
    _exit(0);
  }
  st = reap(pid, 4000);
  assert_false(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ASSERT_DECIDED(s, 0, DRED_ERR_PROC_FAILED);
  assert_needs(s, 0, &p, 0);
  assert_int_equal(arrive_ref(r, 0, 3, &p, DRED_MEET_OP_POOL, DRED_OK, &a), 0);
  ASSERT_DECIDED(a.slot, 0, DRED_ERR_PROC_FAILED);
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  dred_meet_release(s, 0, 0);
  dred_meet_release(s, 0, 2);
  dred_meet_release(s, 0, 3);
  assert_int_equal(stats(r).busy, 0);
  munmap(bad, (size_t)page);

  /* a killed member that had arrived by reference (SIGKILL at any moment after): the
   * others meet as if it lived */
  r2 = dred_meet_ring_of(t, 28, N, WORKERS);
  {
    int fd[2];
    char c = 0;
    struct pollfd pf;
    assert_int_equal(pipe(fd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      (void)meet_ref(r2, 0, 3, &p);
      (void)!write(fd[1], "a", 1); /* arrived and out of the slot's lock */
      for (;;) pause();
    }
    close(fd[1]);
    /* killed once its arrival returned: a kill inside the lock is the lock-holder case */
    pf.fd = fd[0];
    pf.events = POLLIN;
    assert_int_equal(poll(&pf, 1, 4000), 1);
    assert_int_equal(read(fd[0], &c, 1), 1);
    close(fd[0]);
    assert_int_equal(stats(r2).busy, 1);
  }
  kill(pid, SIGKILL);
  (void)reap(pid, 4000);
  for (k = 0; k < N - 1; k++) s = meet_ref(r2, 0, k, &p);
  ASSERT_DECIDED(s, 0, DRED_OK);
  assert_int_equal(dred_meet_operand(s, 3).off, ref_of(3, &p).off);
  dred_meet_member_failed(r2, 3, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(s, 0, DRED_OK);
  release_all(s, 0, N - 1);
  assert_int_equal(stats(r2).busy, 0);
  table_free(t);
}

static void test_streams(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *ra = dred_meet_ring_of(t, 31, N, WORKERS);
  dred_meet_ring_t *r5 = dred_meet_stream_of(t, 31, 5, N, WORKERS);
  dred_meet_ring_t *r6 = dred_meet_stream_of(t, 31, 6, N, WORKERS);
  dred_meet_ring_t *o5 = dred_meet_stream_of(t, 32, 5, N, WORKERS);
  proto_params_t p = params(4, 0);
  dred_meet_slot_t *sa, *s5, *so;
  (void)state;
  assert_non_null(ra);
  assert_non_null(r5);
  assert_non_null(r6);
  assert_non_null(o5);
  assert_ptr_equal(dred_meet_stream_of(t, 31, DRED_MEET_AUTO, N, WORKERS), ra);
  assert_ptr_equal(dred_meet_stream_of(t, 31, 5, N, WORKERS), r5);
  assert_true(ra != r5 && r5 != r6 && r5 != o5 && ra != r6);
  /* the k-th use of a tag meets in its own ring, whatever the auto stream does */
  sa = MEET(ra, 0, 1, &p);
  s5 = MEET(r5, 0, 1, &p);
  so = MEET(o5, 0, 1, &p);
  assert_true(sa != s5);
  /* a death reaches every stream of its group, and only those */
  dred_meet_group_member_failed(t, 31, 2, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(sa, 0, DRED_ERR_PROC_FAILED);
  ASSERT_DECIDED(s5, 0, DRED_ERR_PROC_FAILED);
  ASSERT_OPEN(so, 0);
  /* a full table: a stream that finds no ring finds none for everyone */
  {
    uint32_t i, found = 0;
    for (i = 0; i < 2 * DRED_MEET_GROUPS; i++)
      found += dred_meet_stream_of(t, 33, (int64_t)i, N, WORKERS) != NULL;
    assert_int_equal(found, DRED_MEET_GROUPS - 4);
    assert_null(dred_meet_stream_of(t, 33, 2 * DRED_MEET_GROUPS, N, WORKERS));
    assert_non_null(dred_meet_stream_of(t, 33, 0, N, WORKERS)); /* claimed ones stay */
  }
  table_free(t);
}

/* ---- 9. bad arguments -------------------------------------------------------------- */

#define REFUSED(r, seq, k, p, wants, data, bytes)                                         \
  do {                                                                                    \
    dred_meet_arrival_t a_;                                                               \
    memset(&a_, 0xff, sizeof a_);                                                         \
    assert_int_equal(dred_meet_arrive((r), (seq), (k), (p), (wants), (data), (bytes),     \
                                      DRED_OK, &a_), -1);                                 \
    assert_int_equal(a_.meet, 0);                                                         \
  } while (0)

static void test_bad_args(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 11, N, WORKERS);
  proto_params_t p = params(4, 0), big = params(DRED_MEET_DATA / N / 4 + 1, 0),
                     edge = params(DRED_MEET_DATA / N / 4, 0);
  static unsigned char buf[DRED_MEET_DATA];
  dred_meet_slot_t *s = NULL;
  dred_meet_arrival_t a;
  uint32_t k;
  (void)state;
  assert_non_null(r);

  REFUSED(NULL, 0, 0, &p, 1, buf, 16);
  REFUSED(r, 0, N, &p, 1, buf, 16);
  REFUSED(r, 0, 1000, &p, 0, NULL, 0);
  REFUSED(r, 0, 1, &big, 1, buf, (size_t)(big.count * big.extent)); /* n x bytes > DATA */
  REFUSED(r, 0, 0, &big, 1, NULL, 0);                               /* at the root too */
  assert_int_equal(stats(r).busy, 0); /* a refused arrival holds nothing */

  /* n x bytes == DATA is fine */
  for (k = 0; k < N; k++) s = MEET(r, 0, k, &edge);
  ASSERT_DECIDED(s, 0, DRED_OK);
  assert_operands(s, 0, N, &edge);
  release_all(s, 0, N);

  /* too big for the slot, but not wanting to meet: to dred-master, not an error */
  for (k = 0; k < N; k++) TO_MASTER(r, 1, k, &big, 0, 0);
  assert_int_equal(stats(r).busy, 0);

  /* a member arriving twice: refused, and the reduction goes on as if it had not */
  s = MEET(r, 2, 0, &p);
  MEET(r, 2, 1, &p);
  REFUSED(r, 2, 1, &p, 1, operand[1], 16);
  REFUSED(r, 2, 0, &p, 1, NULL, 0);
  ASSERT_OPEN(s, 2);
  MEET(r, 2, 2, &p);
  MEET(r, 2, 3, &p);
  ASSERT_DECIDED(s, 2, DRED_OK);
  assert_operands(s, 2, N, &p);
  REFUSED(r, 2, 3, &p, 1, operand[3], 16); /* decided: still a second arrival */
  ASSERT_DECIDED(s, 2, DRED_OK);
  release_all(s, 2, N);
  assert_int_equal(stats(r).busy, 0);

  /* a second arrival in a MIXED slot */
  s = MEET(r, 3, 0, &p);
  TO_MASTER(r, 3, 1, &p, 0, bit(0));
  REFUSED(r, 3, 1, &p, 0, NULL, 0);
  REFUSED(r, 3, 0, &p, 1, NULL, 0);
  assert_int_equal(arrive(r, 3, 2, &p, 0, DRED_OK, &a), 0);
  assert_int_equal(arrive(r, 3, 3, &p, 0, DRED_OK, &a), 0);
  dred_meet_release(s, 3, 0);
  assert_int_equal(stats(r).busy, 0);
  table_free(t);
}

/* ---- allreduce and bcast ----------------------------------------------------------- */

/* Arrive by reference as a member of `kind` does: a publisher names its block, anyone else
 * arrives with nothing. */
static dred_meet_slot_t *meet_kind(dred_meet_ring_t *r, uint64_t seq, uint32_t k,
                                   const proto_params_t *p, int publishes) {
  dred_meet_arrival_t a;
  dred_meet_ref_t op;
  memset(&op, 0, sizeof op);
  if (publishes) {
    op.kind = DRED_MEET_OP_POOL;
    op.worker = WORKERS[k];
    op.off = 4096 + 65536 * (int64_t)k;
    op.len = p->count * p->extent;
  }
  assert_int_equal(dred_meet_arrive_op(r, seq, k, p, 1, &op, NULL, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 1);
  assert_non_null(a.slot);
  return a.slot;
}

/* Every member arrives in `seq`, member `pk` with `op` (its operand to come in pieces),
 * the others with their operands in blocks. */
static dred_meet_slot_t *meet_pieces(dred_meet_ring_t *r, uint64_t seq, uint32_t pk,
                                     proto_params_t *p, const dred_meet_ref_t *op) {
  dred_meet_slot_t *s = NULL;
  dred_meet_arrival_t a;
  uint32_t k;
  for (k = 0; k < N; k++) {
    if (k == pk) {
      assert_int_equal(dred_meet_arrive_op(r, seq, k, p, 1, op, NULL, DRED_OK, &a), 0);
      assert_int_equal(a.meet, 1);
      s = a.slot;
    } else {
      s = meet_kind(r, seq, k, p, 1);
    }
  }
  return s;
}

/* An allreduce member arrives before its operand is in its block (DRED_MEET_OP_PIECES):
 * no peer is handed a chunk before that operand holds it, while the member itself folds
 * its own chunks from its memory; each member takes its home chunks first, from the
 * bottom, then others from the top; a piece moves the epoch; a reduce cannot arrive so;
 * and its member's death while a chunk nobody folded is not in ends the phase for
 * everyone -- once all is in, or what is missing is folded, it costs nothing. */
static void test_pieces(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 37, N, WORKERS);
  dred_meet_slot_t *s = NULL;
  dred_meet_arrival_t a;
  dred_meet_ref_t op;
  proto_params_t p = params(BIG, 0);
  uint64_t seq = 0, all;
  uint32_t k, nch = 10, w, lo, hi;
  int st = -1;
  (void)state;
  p.inl = 0;
  p.kind = PROTO_KIND_ALLREDUCE;
  p.count = 10 * DRED_MEET_CHUNK_BYTES / 4; /* ten chunks, as every member computes */
  memset(&op, 0, sizeof op);
  op.kind = DRED_MEET_OP_PIECES;
  op.worker = WORKERS[2];
  op.off = 4096;
  op.len = p.count * 4;
  assert_int_equal(dred_meet_nchunks(p.count, op.len, N), nch);
  all = ((uint64_t)1 << nch) - 1;
  /* homes of 10 chunks among 4: [0,2) [2,5) [5,7) [7,10) */
  dred_meet_home(nch, N, 0, &lo, &hi);
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 2);
  dred_meet_home(nch, N, 3, &lo, &hi);
  assert_int_equal(lo, 7);
  assert_int_equal(hi, 10);
  s = meet_pieces(r, seq, 2, &p, &op);
  ASSERT_DECIDED(s, seq, DRED_OK);
  assert_int_equal(dred_meet_operand(s, 2).kind, DRED_MEET_OP_POOL); /* read as any block */
  assert_int_equal(dred_meet_claim(s, seq, 0, nch), -2); /* nothing of member 2's yet */
  assert_int_equal(dred_meet_chunk_readable(s, seq, nch, 0, 0), 0);
  assert_int_equal(dred_meet_chunk_readable(s, seq, nch, 0, 2), 1); /* its own: in its memory */
  w = dred_meet_epoch(s);
  dred_meet_piece_in(s, seq, 2, 1u << 0);
  assert_true(dred_meet_epoch(s) != w); /* a waiter looks again */
  assert_int_equal(dred_meet_chunk_readable(s, seq, nch, 0, 0), 1);
  assert_int_equal(dred_meet_chunk_readable(s, seq, nch, 1, 0), 0);
  assert_int_equal(dred_meet_claim(s, seq, 0, nch), 0);
  /* member 1's home waits for member 2's chunk 2: it takes another it can read, from the
   * top -- none yet */
  assert_int_equal(dred_meet_claim(s, seq, 1, nch), -2);
  dred_meet_piece_in(s, seq, 2, 1u << 1 | 1u << 8);
  assert_int_equal(dred_meet_claim(s, seq, 1, nch), 8);
  assert_int_equal(dred_meet_claim(s, seq, 1, nch), 1);
  /* member 2 folds its home first, from the bottom, none of it in its block */
  assert_int_equal(dred_meet_claim(s, seq, 2, nch), 5);
  assert_int_equal(dred_meet_claim(s, seq, 2, nch), 6);
  dred_meet_piece_in(s, seq, 2, all);
  assert_int_equal(dred_meet_claim(s, seq, 3, nch), 7);
  assert_int_equal(dred_meet_claim(s, seq, 1, nch), 2); /* its home, now readable */
  assert_int_equal(dred_meet_chunks_claimed(s, seq), 0x1e7u);
  /* all in: its member's death costs nothing, its claims go back */
  dred_meet_member_failed(r, 2, DRED_ERR_PROC_FAILED);
  (void)dred_meet_chunks_folded(s, seq, &st, NULL, NULL);
  assert_int_equal(st, DRED_OK);
  assert_int_equal(dred_meet_chunks_claimed(s, seq), 0x187u);
  release_all(s, seq, N);
  table_free(t);

  /* its member dies before its operand is all in: the phase ends, everyone is told */
  t = table_new();
  r = dred_meet_ring_of(t, 38, N, WORKERS);
  op.worker = WORKERS[1];
  s = meet_pieces(r, seq, 1, &p, &op);
  dred_meet_piece_in(s, seq, 1, 0x1fu);
  assert_true(dred_meet_claim(s, seq, 0, nch) == 0);
  w = dred_meet_epoch(s);
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  assert_true(dred_meet_epoch(s) != w);
  (void)dred_meet_chunks_folded(s, seq, &st, NULL, NULL);
  assert_int_equal(st, DRED_ERR_PROC_FAILED);
  assert_int_equal(dred_meet_claim(s, seq, 0, nch), -1);
  release_all(s, seq, N);
  table_free(t);

  /* ... but once what it kept out is folded (its home, by itself), it costs nothing */
  t = table_new();
  r = dred_meet_ring_of(t, 40, N, WORKERS);
  s = meet_pieces(r, seq, 1, &p, &op);
  dred_meet_piece_in(s, seq, 1, all & ~(uint64_t)0x1cu); /* its home [2,5) kept out */
  for (k = 2; k < 5; k++) {
    assert_int_equal(dred_meet_claim(s, seq, 0, nch) >= 0, 1); /* member 0's, not those */
    assert_int_equal(dred_meet_claim(s, seq, 1, nch), (int)k);
    assert_int_equal(dred_meet_chunk_done(s, seq, k, 1, 4096 * k), 1);
  }
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  (void)dred_meet_chunks_folded(s, seq, &st, NULL, NULL);
  assert_int_equal(st, DRED_OK);
  release_all(s, seq, N);
  table_free(t);

  /* only an allreduce's operand may come in pieces */
  t = table_new();
  r = dred_meet_ring_of(t, 39, N, WORKERS);
  p.kind = PROTO_KIND_REDUCE;
  p.root = 0;
  assert_int_equal(dred_meet_arrive_op(r, seq, 1, &p, 1, &op, NULL, DRED_OK, &a), -1);
  table_free(t);
}

/* Who reads what: an allreduce reads every operand and a bcast its root's alone, so a
 * missing one is a disagreement; every block is needed until every member released. */
static void test_kinds(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 31, N, WORKERS);
  dred_meet_slot_t *s = NULL;
  uint64_t seq = 0;
  uint32_t k, root;
  (void)state;
  for (root = 0; root < N; root++, seq++) { /* bcast: the root's data alone */
    proto_params_t p = params(BIG, root);
    p.inl = 0;
    p.kind = PROTO_KIND_BCAST;
    for (k = 0; k < N; k++) s = meet_kind(r, seq, k, &p, k == root);
    ASSERT_DECIDED(s, seq, DRED_OK);
    for (k = 0; k < N; k++) assert_int_equal(dred_meet_needs(s, seq, k), k == root);
    for (k = 0; k < N; k++) {
      if (k == root) continue;
      dred_meet_release(s, seq, k == 0 ? N - 1 - (root == N - 1) : k); /* any order */
    }
    assert_int_equal(dred_meet_needs(s, seq, root), 1); /* a member still copies */
    release_all(s, seq, N);
    assert_int_equal(dred_meet_needs(s, seq, root), 0);
    assert_int_equal(stats(r).busy, 0);
  }
  { /* allreduce: every operand, needed until the last member released */
    proto_params_t p = params(BIG, 0);
    p.inl = 0;
    p.kind = PROTO_KIND_ALLREDUCE;
    for (k = 0; k < N; k++) s = meet_kind(r, seq, k, &p, 1);
    ASSERT_DECIDED(s, seq, DRED_OK);
    for (k = 0; k + 1 < N; k++) dred_meet_release(s, seq, k);
    for (k = 0; k < N; k++) assert_int_equal(dred_meet_needs(s, seq, k), 1);
    dred_meet_release(s, seq, N - 1);
    for (k = 0; k < N; k++) assert_int_equal(dred_meet_needs(s, seq, k), 0);
    seq++;
  }
  { /* an allreduce member without its operand, a bcast root without data: MISMATCH */
    proto_params_t p = params(BIG, 2);
    p.inl = 0;
    p.kind = PROTO_KIND_ALLREDUCE;
    for (k = 0; k < N; k++) s = meet_kind(r, seq, k, &p, k != 1);
    ASSERT_DECIDED(s, seq, DRED_ERR_MISMATCH);
    release_all(s, seq, N);
    seq++;
    p.kind = PROTO_KIND_BCAST;
    for (k = 0; k < N; k++) s = meet_kind(r, seq, k, &p, k != 2);
    ASSERT_DECIDED(s, seq, DRED_ERR_MISMATCH);
    release_all(s, seq, N);
    seq++;
  }
  { /* a bcast's root lost before it arrived: ROOT_FAILED; another member: PROC_FAILED */
    proto_params_t p = params(BIG, 1);
    dred_meet_table_t *t2 = table_new();
    dred_meet_ring_t *r2 = dred_meet_ring_of(t2, 34, N, WORKERS);
    p.inl = 0;
    p.kind = PROTO_KIND_BCAST;
    s = meet_kind(r2, 0, 0, &p, 0);
    (void)meet_kind(r2, 0, 3, &p, 0);
    dred_meet_member_failed(r2, 1, DRED_ERR_PROC_FAILED);
    ASSERT_DECIDED(s, 0, DRED_ERR_ROOT_FAILED);
    s = meet_kind(r2, 1, 0, &p, 0); /* opened after: the root is gone for good */
    ASSERT_DECIDED(s, 1, DRED_ERR_ROOT_FAILED);
    table_free(t2);
    t2 = table_new();
    r2 = dred_meet_ring_of(t2, 35, N, WORKERS);
    s = meet_kind(r2, 0, 1, &p, 1);
    dred_meet_member_failed(r2, 2, DRED_ERR_PROC_FAILED);
    /* a non-root lost costs the others nothing: the slot stays open, each is served */
    assert_int_equal(dred_meet_state(s, 0), DRED_MEET_OPEN);
    for (k = 0; k < N; k++) {
      int st = -1;
      if (k == 2) continue;
      if (k != 1) (void)meet_kind(r2, 0, k, &p, 0);
      assert_int_equal(dred_meet_bcast_early(s, 0, k, &st), 1);
      assert_int_equal(st, DRED_OK);
      assert_int_equal(dred_meet_ready(s, 0, k, 1), 1);
    }
    assert_int_equal(dred_meet_needs(s, 0, 1), 1);
    release_all(s, 0, N);
    assert_int_equal(dred_meet_needs(s, 0, 1), 0);
    assert_int_equal(stats(r2).busy, 0);
    /* ... but once nobody can be served early (a member arrives with an error after the
     * death was seen), the death ends the slot: nobody waits for a member that is gone */
    s = meet_kind(r2, 1, 1, &p, 1);
    {
      dred_meet_arrival_t a;
      dred_meet_ref_t none;
      memset(&none, 0, sizeof none);
      assert_int_equal(dred_meet_arrive_op(r2, 1, 0, &p, 1, &none, NULL, DRED_ERR_NOMEM, &a), 0);
    }
    ASSERT_DECIDED(s, 1, DRED_ERR_PROC_FAILED);
    release_all(s, 1, N);
    table_free(t2);
  }
  { /* early arrivals served first: a member waiting for the root is served the moment it
     * arrives (woken), without the members still to come; a member that disagrees with one
     * already there gets MISMATCH, those served before it came keep OK; the root's block is
     * needed until everyone is done */
    proto_params_t p = params(BIG, 3);
    dred_meet_table_t *t2 = table_new();
    dred_meet_ring_t *r2 = dred_meet_ring_of(t2, 36, N, WORKERS);
    int st = -1;
    uint32_t w;
    p.inl = 0;
    p.kind = PROTO_KIND_BCAST;
    s = meet_kind(r2, 0, 0, &p, 0);
    assert_int_equal(dred_meet_bcast_early(s, 0, 0, &st), 0); /* the root is not there */
    assert_int_equal(dred_meet_ready(s, 0, 0, 1), 0);
    w = dred_meet_epoch(s);
    (void)meet_kind(r2, 0, 3, &p, 1);
    assert_true(dred_meet_epoch(s) != w); /* the waiting member is woken */
    assert_int_equal(dred_meet_state(s, 0), DRED_MEET_OPEN);
    assert_int_equal(dred_meet_bcast_early(s, 0, 0, &st), 1);
    assert_int_equal(st, DRED_OK);
    assert_int_equal(dred_meet_bcast_early(s, 0, 3, &st), 1); /* the root itself */
    assert_int_equal(st, DRED_OK);
    dred_meet_release(s, 0, 0);
    dred_meet_release(s, 0, 3);
    assert_int_equal(dred_meet_needs(s, 0, 3), 1); /* members 1 and 2 are still to copy */
    {
      proto_params_t q = p;
      q.count = p.count / 2; /* member 1 disagrees */
      (void)meet_kind(r2, 0, 1, &q, 0);
      assert_int_equal(dred_meet_bcast_early(s, 0, 1, &st), 1);
      assert_int_equal(st, DRED_ERR_MISMATCH);
    }
    (void)meet_kind(r2, 0, 2, &p, 0); /* after 1 came: disagrees with a member already there */
    assert_int_equal(dred_meet_bcast_early(s, 0, 2, &st), 1);
    assert_int_equal(st, DRED_ERR_MISMATCH);
    release_all(s, 0, N);
    assert_int_equal(dred_meet_needs(s, 0, 3), 0);
    assert_int_equal(stats(r2).busy, 0);
    { /* two members that both call themselves the root: the later one gets MISMATCH */
      proto_params_t q = p;
      q.root = 1;
      s = meet_kind(r2, 1, 3, &p, 1);
      assert_int_equal(dred_meet_bcast_early(s, 1, 3, &st), 1);
      assert_int_equal(st, DRED_OK); /* alone so far: served */
      (void)meet_kind(r2, 1, 1, &q, 1);
      assert_int_equal(dred_meet_bcast_early(s, 1, 1, &st), 1);
      assert_int_equal(st, DRED_ERR_MISMATCH);
      release_all(s, 1, N);
    }
    { /* a member waiting alone for its root (its looks take no lock) still learns of a
       * member that came meanwhile calling itself the root: it is woken, and its next
       * look says it can go (MISMATCH), before its own root is there */
      proto_params_t q = p;
      q.root = 1;
      s = meet_kind(r2, 2, 0, &p, 0);
      assert_int_equal(dred_meet_ready(s, 2, 0, 1), 0);
      w = dred_meet_epoch(s);
      (void)meet_kind(r2, 2, 1, &q, 1);
      assert_true(dred_meet_epoch(s) != w);
      assert_int_equal(dred_meet_ready(s, 2, 0, 1), 1);
      assert_int_equal(dred_meet_bcast_early(s, 2, 0, &st), 1);
      assert_int_equal(st, DRED_ERR_MISMATCH);
      release_all(s, 2, N);
    }
    table_free(t2);
  }
  { /* a bcast root publishes its data after arriving: members read the progress; a root
     * that dies before its data is all in ends the phase with ROOT_FAILED */
    proto_params_t p = params(BIG, 1);
    dred_meet_table_t *t2 = table_new();
    dred_meet_ring_t *r2 = dred_meet_ring_of(t2, 37, N, WORKERS);
    int st = -1;
    uint64_t total = BIG * 4;
    p.inl = 0;
    p.kind = PROTO_KIND_BCAST;
    for (k = 0; k < N; k++) s = meet_kind(r2, 0, k, &p, k == 1);
    ASSERT_DECIDED(s, 0, DRED_OK);
    assert_true(dred_meet_progress(s, 0, &st) == 0);
    assert_int_equal(st, DRED_OK);
    {
      uint32_t w = dred_meet_epoch(s);
      dred_meet_progress_set(s, 0, total / 2);
      assert_true(dred_meet_epoch(s) != w); /* members waiting for more are woken */
    }
    assert_true(dred_meet_progress(s, 0, &st) == total / 2);
    dred_meet_member_failed(r2, 1, DRED_ERR_PROC_FAILED); /* the root, half way */
    (void)dred_meet_progress(s, 0, &st);
    assert_int_equal(st, DRED_ERR_ROOT_FAILED);
    release_all(s, 0, N);
    /* all in before the root died: nothing lost */
    for (k = 0; k < N; k++)
      if (k != 1) s = meet_kind(r2, 1, k, &p, 0);
    ASSERT_DECIDED(s, 1, DRED_ERR_ROOT_FAILED); /* opened after: the root is gone */
    release_all(s, 1, N);
    table_free(t2);
    t2 = table_new();
    r2 = dred_meet_ring_of(t2, 38, N, WORKERS);
    for (k = 0; k < N; k++) s = meet_kind(r2, 0, k, &p, k == 1);
    dred_meet_progress_set(s, 0, total);
    dred_meet_member_failed(r2, 1, DRED_ERR_PROC_FAILED);
    assert_true(dred_meet_progress(s, 0, &st) == total);
    assert_int_equal(st, DRED_OK);
    assert_int_equal(dred_meet_needs(s, 0, 1), 1); /* the members still copy from it */
    release_all(s, 0, N);
    assert_int_equal(dred_meet_needs(s, 0, 1), 0);
    table_free(t2);
  }
  { /* kinds that disagree: MISMATCH */
    proto_params_t p = params(BIG, 0), q;
    p.inl = 0;
    p.kind = PROTO_KIND_ALLREDUCE;
    q = p;
    q.kind = PROTO_KIND_REDUCE;
    for (k = 0; k < N; k++) s = meet_kind(r, seq, k, k == 3 ? &q : &p, 1);
    ASSERT_DECIDED(s, seq, DRED_ERR_MISMATCH);
    release_all(s, seq, N);
  }
  assert_int_equal(stats(r).busy, 0);
  table_free(t);
}

/* The chunks cover every element once, whatever the count, size and group. */
static void test_chunk_ranges(void **state) {
  static const uint64_t counts[] = {1, 2, 3, 7, 63, 64, 65, 1000, 123457, 1u << 24};
  static const uint32_t extents[] = {1, 4, 8, 12, 24};
  uint32_t n, i, j, c;
  (void)state;
  assert_int_equal(dred_meet_nchunks(0, 0, 4), 0);
  for (n = 1; n <= DRED_MEET_MAX_MEMBERS; n = n * 2 + 1)
    for (i = 0; i < sizeof counts / sizeof counts[0]; i++)
      for (j = 0; j < sizeof extents / sizeof extents[0]; j++) {
        uint64_t count = counts[i], next = 0, e0, ne;
        uint32_t nch = dred_meet_nchunks(count, count * extents[j], n);
        assert_true(nch >= 1 && nch <= DRED_MEET_MAX_CHUNKS);
        assert_true(nch >= (count < n ? count : n)); /* one per member where elements allow */
        for (c = 0; c < nch; c++) {
          dred_meet_chunk_range(count, nch, c, &e0, &ne);
          assert_true(e0 == next);
          assert_true(ne > 0);
          next = e0 + ne;
        }
        assert_true(next == count);
      }
}

/* Claims hand each chunk out once, to any member that asks, until none is left; folded
 * chunks wake waiters and say where the result is.  A member that dies holding an
 * unfolded claim gives it back (the operands are intact) and its late result is refused;
 * one that dies otherwise costs nothing; a fold that fails ends the phase. */
static void test_chunks(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 32, N, WORKERS);
  dred_meet_slot_t *s = NULL;
  proto_params_t p = params(BIG, 0);
  uint8_t holder[DRED_MEET_MAX_CHUNKS], holder_of[DRED_MEET_MAX_CHUNKS];
  uint64_t seq = 0, claimed = 0;
  uint32_t k, nch = 10, e;
  int c, st = -1;
  (void)state;
  p.inl = 0;
  p.kind = PROTO_KIND_REDUCE;
  for (k = 0; k < N; k++) s = meet_kind(r, seq, k, &p, k != 0);
  ASSERT_DECIDED(s, seq, DRED_OK);
  /* a reduce's chunk phase: a helper's partial is in a block of its own (`part`) */
  c = dred_meet_claim(s, seq, 1, nch);
  assert_true(c >= 0);
  assert_int_equal(dred_meet_chunk_done(s, seq, (uint32_t)c, 1, 4096), 1);
  {
    int64_t part[DRED_MEET_MAX_CHUNKS];
    assert_true(dred_meet_chunks_folded(s, seq, &st, holder, part) == bit((uint32_t)c));
    assert_int_equal(holder[c], 1);
    assert_true(part[c] == 4096);
  }
  /* a helper that dies with a claim costs nothing: the chunk is anybody's again */
  c = dred_meet_claim(s, seq, 3, nch);
  assert_true(c >= 0);
  dred_meet_member_failed(r, 3, DRED_ERR_PROC_FAILED);
  (void)dred_meet_chunks_folded(s, seq, &st, NULL, NULL);
  assert_int_equal(st, DRED_OK);
  assert_int_equal(dred_meet_chunk_done(s, seq, (uint32_t)c, 3, 4096), 0); /* declared failed */
  for (e = 0; (c = dred_meet_claim(s, seq, 0, nch)) >= 0; e++)
    assert_int_equal(dred_meet_chunk_done(s, seq, (uint32_t)c, 0, -1), 1);
  assert_int_equal(e, nch - 1); /* every chunk but the one folded above, the lost one again */
  assert_true(dred_meet_chunks_folded(s, seq, &st, NULL, NULL) == bit(nch) - 1);
  release_all(s, seq, N);
  table_free(t);
  t = table_new();
  r = dred_meet_ring_of(t, 32, N, WORKERS);
  seq = 0;

  p.kind = PROTO_KIND_ALLREDUCE;
  for (k = 0; k < N; k++) {
    assert_true(k == 0 || dred_meet_claim(s, seq, 0, nch) == -1); /* not decided yet */
    s = meet_kind(r, seq, k, &p, 1);
  }
  ASSERT_DECIDED(s, seq, DRED_OK);
  for (e = 0; e < nch; e++) {
    c = dred_meet_claim(s, seq, e % 3, nch); /* members 0..2 take turns, 3 never asks */
    assert_true(c >= 0 && (uint32_t)c < nch);
    holder_of[c] = e % 3;
    assert_false(claimed & bit((uint32_t)c));
    claimed |= bit((uint32_t)c);
  }
  assert_int_equal(dred_meet_claim(s, seq, 3, nch), -1);
  assert_true(dred_meet_chunks_folded(s, seq, &st, holder, NULL) == 0);
  assert_int_equal(st, DRED_OK);
  for (e = 0; e < nch; e++) {
    uint32_t w = dred_meet_epoch(s);
    assert_int_equal(dred_meet_chunk_done(s, seq, e, holder_of[e], -1), 1);
    assert_true(dred_meet_epoch(s) != w); /* waiters see it */
    dred_meet_wait_epoch(s, w, 1000000000ull); /* moved already: returns at once */
  }
  assert_true(dred_meet_chunks_folded(s, seq, &st, holder, NULL) == (bit(nch) - 1));
  for (e = 0; e < nch; e++) assert_int_equal(holder[e], holder_of[e]);
  /* member 3 dies now: nothing was its to fold */
  dred_meet_member_failed(r, 3, DRED_ERR_PROC_FAILED);
  (void)dred_meet_chunks_folded(s, seq, &st, NULL, NULL);
  assert_int_equal(st, DRED_OK);
  release_all(s, seq, N - 1);
  assert_int_equal(stats(r).busy, 0);
  table_free(t);

  /* a member that dies with a claim it did not fold */
  t = table_new();
  r = dred_meet_ring_of(t, 33, N, WORKERS);
  seq = 0;
  for (k = 0; k < N; k++) s = meet_kind(r, seq, k, &p, 1);
  c = dred_meet_claim(s, seq, 2, nch);
  assert_true(c >= 0);
  assert_int_equal(dred_meet_chunk_done(s, seq, (uint32_t)c, 2, -1), 1);
  assert_true(dred_meet_claim(s, seq, 2, nch) >= 0); /* claimed, never folded */
  assert_true(dred_meet_claim(s, seq, 1, nch) >= 0);
  {
    uint32_t w = dred_meet_epoch(s);
    dred_meet_member_failed(r, 2, DRED_ERR_PROC_FAILED);
    assert_true(dred_meet_epoch(s) != w); /* waiters see the claim come back */
  }
  (void)dred_meet_chunks_folded(s, seq, &st, NULL, NULL);
  assert_int_equal(st, DRED_OK); /* the operands are intact: nothing is lost */
  c = dred_meet_claim(s, seq, 1, nch); /* the lost claim is anybody's again */
  assert_true(c >= 0);
  assert_int_equal(dred_meet_chunk_done(s, seq, (uint32_t)c, 2, 4096), 0); /* not the dead one's */
  assert_int_equal(dred_meet_chunk_done(s, seq, (uint32_t)c, 1, 4096), 1);
  {
    uint64_t t0 = now_ns();
    dred_meet_wait_epoch(s, dred_meet_epoch(s), 20000000ull); /* bounded: 20 ms */
    assert_true(now_ns() - t0 < 2000000000ull);
  }
  release_all(s, seq, N);
  assert_int_equal(stats(r).busy, 0);

  /* a fold that fails ends the phase with its status */
  table_free(t);
  t = table_new();
  r = dred_meet_ring_of(t, 36, N, WORKERS);
  seq = 0;
  for (k = 0; k < N; k++) s = meet_kind(r, seq, k, &p, 1);
  c = dred_meet_claim(s, seq, 0, nch);
  assert_true(c >= 0);
  dred_meet_chunk_failed(s, seq, DRED_ERR_INTERNAL);
  (void)dred_meet_chunks_folded(s, seq, &st, NULL, NULL);
  assert_int_equal(st, DRED_ERR_INTERNAL);
  assert_int_equal(dred_meet_claim(s, seq, 1, nch), -1);
  release_all(s, seq, N);
  table_free(t);
}

/* A reduce's root waiting before the last member came sees who is there to fold early
 * (members agreeing with it, operands in pool blocks): from then on nobody claims a
 * chunk of that reduce; the arrivals word moves at every arrival and at the outcome. */
/* ---- relays (lib/paths/relay.c) ----------------------------------------------------- */

/* A relay arrival: member k of the 6-member relay group, with a pool block (`block`) or
 * without; returns the arrival. */
#define RN 6
static const uint32_t RWORKERS[RN] = {20, 21, 22, 23, 24, 25};
static dred_meet_arrival_t relay_arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t k,
                                        const proto_params_t *p, int block) {
  dred_meet_arrival_t a;
  dred_meet_ref_t op;
  memset(&op, 0, sizeof op);
  if (block) {
    op.kind = DRED_MEET_OP_POOL;
    op.worker = RWORKERS[k];
    op.off = 4096;
    op.len = p->count * p->extent;
  }
  assert_int_equal(dred_meet_arrive_op(r, seq, k, p, 1, &op, NULL, DRED_OK, &a), 0);
  return a;
}

/* ---- node partials (lib/paths/partial.c) ------------------------------------------- */

/* A reduce's node partial: members 0 and 1 live on another node (absent), 2..5 here.  Each
 * of those that stays arrives with its pool block; the last of the node decides.  When
 * all stayed and agree, the last folds (lead) and the slot names it and who it covers;
 * when the last went to dred-master (here the root's call, or one with no block), or the
 * ones that stayed disagree, the slot spills and each goes alone; a member that leaves
 * while the slot is open is left out, and one that tries after the decision stays
 * covered; a death here fails an open slot, a death on the other node does not. */
static void test_partial(void **state) {
  dred_meet_table_t *t = table_new();
  uint64_t absent = bit(0) | bit(1), members = 0;
  dred_meet_ring_t *r = dred_meet_partial_of(t, 81, DRED_MEET_AUTO, RN, RWORKERS, absent);
  dred_meet_arrival_t a;
  dred_meet_slot_t *s;
  proto_params_t p = params(BIG, 0), q;
  uint64_t seq = 0;
  uint32_t k;
  (void)state;
  p.inl = 0;
  assert_non_null(r);
  /* its own ring, apart from the stream's and the relay's */
  assert_true(dred_meet_relay_of(t, 81, DRED_MEET_AUTO, RN, RWORKERS, absent) != r);
  assert_true(dred_meet_stream_of(t, 81, DRED_MEET_AUTO, RN, RWORKERS) != r);
  assert_true(dred_meet_partial_of(t, 81, DRED_MEET_AUTO, RN, RWORKERS, absent) == r);

  /* all four stay: the last folds, covering them all */
  for (k = 2; k < 5; k++) {
    a = relay_arrive(r, seq, k, &p, 1);
    assert_int_equal(a.meet, 1);
    assert_int_equal(a.lead, 0);
    assert_int_equal(dred_meet_state(a.slot, seq), DRED_MEET_OPEN);
    assert_int_equal(dred_meet_folder(a.slot, seq, &members), DRED_MEET_MAX_MEMBERS);
  }
  a = relay_arrive(r, seq, 5, &p, 1);
  s = a.slot;
  assert_int_equal(a.lead, 1);
  assert_int_equal(dred_meet_state(s, seq), DRED_MEET_OK);
  assert_int_equal(dred_meet_folder(s, seq, &members), 5);
  assert_true(members == (bit(2) | bit(3) | bit(4) | bit(5)));
  assert_int_equal(dred_meet_operand(s, 3).kind, DRED_MEET_OP_POOL);
  assert_int_equal(dred_meet_partial_leave(s, seq, 3), 0); /* decided: covered */
  for (k = 2; k < 6; k++) dred_meet_release(s, seq, k);
  assert_int_equal(stats(r).busy, 0);

  /* one goes to dred-master early (no block): the other three still fold */
  seq = 1;
  a = relay_arrive(r, seq, 2, &p, 0);
  assert_int_equal(a.meet, 0);
  for (k = 3; k < 6; k++) a = relay_arrive(r, seq, k, &p, 1);
  assert_int_equal(a.lead, 1);
  assert_int_equal(dred_meet_folder(a.slot, seq, &members), 5);
  assert_true(members == (bit(3) | bit(4) | bit(5)));
  for (k = 3; k < 6; k++) dred_meet_release(a.slot, seq, k);

  /* ... but if it comes last, nobody is there to fold: the slot spills */
  seq = 2;
  for (k = 3; k < 6; k++) a = relay_arrive(r, seq, k, &p, 1);
  s = a.slot;
  a = relay_arrive(r, seq, 2, &p, 0);
  assert_int_equal(a.meet, 0);
  assert_int_equal(dred_meet_state(s, seq), DRED_MEET_SPILL);
  assert_int_equal(dred_meet_partial_leave(s, seq, 3), 1);
  for (k = 3; k < 6; k++) dred_meet_release(s, seq, k);

  /* those that stayed disagree: spill, dred-master decides */
  seq = 3;
  q = p;
  q.count = p.count - 1;
  a = relay_arrive(r, seq, 2, &q, 1);
  for (k = 3; k < 6; k++) a = relay_arrive(r, seq, k, &p, 1);
  assert_int_equal(a.lead, 0);
  assert_int_equal(dred_meet_state(a.slot, seq), DRED_MEET_SPILL);
  for (k = 2; k < 6; k++) dred_meet_release(a.slot, seq, k);

  /* one that gave up waiting is left out of the fold */
  seq = 4;
  a = relay_arrive(r, seq, 2, &p, 1);
  s = a.slot;
  assert_int_equal(dred_meet_partial_leave(s, seq, 2), 1);
  for (k = 3; k < 6; k++) a = relay_arrive(r, seq, k, &p, 1);
  assert_int_equal(a.lead, 1);
  assert_int_equal(dred_meet_folder(s, seq, &members), 5);
  assert_true(members == (bit(3) | bit(4) | bit(5)));
  for (k = 2; k < 6; k++) dred_meet_release(s, seq, k);

  /* a death on the other node leaves an open slot alone; one here fails it */
  seq = 5;
  a = relay_arrive(r, seq, 2, &p, 1);
  s = a.slot;
  a = relay_arrive(r, seq, 3, &p, 1);
  dred_meet_member_failed(r, 1, DRED_ERR_PROC_FAILED);
  assert_int_equal(dred_meet_state(s, seq), DRED_MEET_OPEN);
  dred_meet_member_failed(r, 4, DRED_ERR_PROC_FAILED);
  assert_int_equal(dred_meet_state(s, seq), DRED_MEET_FAILED);
  a = relay_arrive(r, seq, 5, &p, 1); /* after the end: straight to dred-master */
  assert_int_equal(a.meet, 0);
  dred_meet_release(s, seq, 2);
  dred_meet_release(s, seq, 3);
  assert_int_equal(stats(r).busy, 0);
  /* ... and a slot opened after that death fails at once: member 4 will not come */
  seq = 6;
  a = relay_arrive(r, seq, 2, &p, 1);
  assert_int_equal(dred_meet_state(a.slot, seq), DRED_MEET_FAILED);
  dred_meet_release(a.slot, seq, 2);
  table_free(t);
}

/* A non-commutative op: the members that stay must be a run of consecutive group ranks,
 * since dred-master combines a run only with the runs beside it.  A node whose members
 * interleave with another node's, or whose run has a hole (a member that went to
 * dred-master), spills; a run folds. */
static void test_partial_noncomm(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *mixed = dred_meet_partial_of(t, 82, DRED_MEET_AUTO, RN, RWORKERS,
                                                 bit(0) | bit(3)); /* here: 1, 2, 4, 5 */
  dred_meet_ring_t *block = dred_meet_partial_of(t, 83, DRED_MEET_AUTO, RN, RWORKERS,
                                                 bit(0) | bit(1)); /* here: 2, 3, 4, 5 */
  static const uint32_t here_mixed[] = {1, 2, 4, 5};
  dred_meet_arrival_t a;
  uint64_t members = 0;
  proto_params_t p = params(BIG, 0);
  uint32_t k;
  (void)state;
  p.inl = 0;
  p.commutative = 0;
  assert_non_null(mixed);
  assert_non_null(block);

  /* all of the node stay, but 3 (another node's) lies between them: spill */
  for (k = 0; k < 4; k++) a = relay_arrive(mixed, 0, here_mixed[k], &p, 1);
  assert_int_equal(a.lead, 0);
  assert_int_equal(dred_meet_state(a.slot, 0), DRED_MEET_SPILL);
  for (k = 0; k < 4; k++) dred_meet_release(a.slot, 0, here_mixed[k]);

  /* a block of ranks: the run folds, in rank order */
  for (k = 2; k < 6; k++) a = relay_arrive(block, 0, k, &p, 1);
  assert_int_equal(a.lead, 1);
  assert_int_equal(dred_meet_folder(a.slot, 0, &members), 5);
  assert_true(members == (bit(2) | bit(3) | bit(4) | bit(5)));
  for (k = 2; k < 6; k++) dred_meet_release(a.slot, 0, k);

  /* 3 went to dred-master: 2, 4, 5 is no run -- spill */
  a = relay_arrive(block, 1, 3, &p, 0);
  assert_int_equal(a.meet, 0);
  a = relay_arrive(block, 1, 2, &p, 1);
  a = relay_arrive(block, 1, 4, &p, 1);
  a = relay_arrive(block, 1, 5, &p, 1);
  assert_int_equal(a.lead, 0);
  assert_int_equal(dred_meet_state(a.slot, 1), DRED_MEET_SPILL);
  for (k = 2; k < 6; k++)
    if (k != 3) dred_meet_release(a.slot, 1, k);

  /* 2 went: 3, 4, 5 is a run -- it folds */
  a = relay_arrive(block, 2, 2, &p, 0);
  for (k = 3; k < 6; k++) a = relay_arrive(block, 2, k, &p, 1);
  assert_int_equal(a.lead, 1);
  assert_int_equal(dred_meet_folder(a.slot, 2, &members), 5);
  assert_true(members == (bit(3) | bit(4) | bit(5)));
  for (k = 3; k < 6; k++) dred_meet_release(a.slot, 2, k);
  assert_int_equal(stats(block).busy, 0);
  assert_int_equal(stats(mixed).busy, 0);
  table_free(t);
}


/* An allreduce's result relay: the same slot rules with an allreduce's parameters (the
 * result comes from the leader whatever the kind).  Members 0 (the holder, whose result
 * dred-master distributes) and 1 live on another node; member 2 passes through (a call
 * that is not relayed); a follower that disagrees with the leader (another size, or a
 * bcast on the same turn) goes to dred-master; the leader's death before its block was
 * whole fails the relay for its followers. */
static void test_relay_allreduce(void **state) {
  dred_meet_table_t *t = table_new();
  uint64_t absent = bit(0) | bit(1);
  dred_meet_ring_t *r = dred_meet_relay_of(t, 79, DRED_MEET_AUTO, RN, RWORKERS, absent);
  dred_meet_arrival_t a;
  dred_meet_slot_t *s;
  proto_params_t p = params(BIG, 0), q;
  uint64_t seq = 3;
  int st = -1;
  (void)state;
  p.inl = 0;
  p.kind = PROTO_KIND_ALLREDUCE;
  assert_int_equal(dred_meet_arrive_op(r, seq, 2, &p, 0, NULL, NULL, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 0);
  a = relay_arrive(r, seq, 3, &p, 1);
  assert_int_equal(a.meet, 1);
  assert_int_equal(a.lead, 1);
  s = a.slot;
  a = relay_arrive(r, seq, 4, &p, 1);
  assert_int_equal(a.meet, 1);
  assert_int_equal(a.lead, 0);
  assert_int_equal(dred_meet_leader(s), 3);
  q = p;
  q.count = p.count + 1; /* disagrees: dred-master decides for it */
  a = relay_arrive(r, seq, 5, &q, 1);
  assert_int_equal(a.meet, 0);
  dred_meet_progress_set(s, seq, 4096);
  assert_true(dred_meet_progress(s, seq, &st) == 4096 && st == DRED_OK);
  dred_meet_member_failed(r, 3, DRED_ERR_PROC_FAILED); /* the leader, block not whole */
  (void)dred_meet_progress(s, seq, &st);
  assert_int_equal(st, DRED_ERR_ROOT_FAILED);
  dred_meet_release(s, seq, 4);
  dred_meet_release(s, seq, 5);
  assert_int_equal(stats(r).busy, 0);

  seq = 4; /* a bcast on an allreduce's turn does not follow an allreduce leader */
  a = relay_arrive(r, seq, 4, &p, 1);
  assert_int_equal(a.lead, 1);
  q = p;
  q.kind = PROTO_KIND_BCAST;
  a = relay_arrive(r, seq, 5, &q, 1);
  assert_int_equal(a.meet, 0);
  table_free(t);
}

/* A cross-node bcast's node relay: members 0 and 1 live on another node and member 2, the
 * root, goes to dred-master, so 3, 4 and 5 meet here.  The first with a block leads; later
 * ones that agree follow it and are served at once; one without a block and no leader, or
 * one that disagrees, goes to dred-master; the slot frees once the local members released
 * (the absent count as released); the leader's failure, or its death before its data was
 * whole, ends the relay for its followers (and not after); nothing else does. */
static void test_relay(void **state) {
  dred_meet_table_t *t = table_new();
  uint64_t absent = bit(0) | bit(1);
  dred_meet_ring_t *r = dred_meet_relay_of(t, 77, DRED_MEET_AUTO, RN, RWORKERS, absent);
  dred_meet_arrival_t a;
  dred_meet_slot_t *s;
  proto_params_t p = params(BIG, 2);
  uint64_t seq = 0;
  int st = -1;
  (void)state;
  p.inl = 0;
  p.kind = PROTO_KIND_BCAST;
  assert_non_null(r);
  /* its own ring: not the group's stream, found again by everyone */
  assert_true(dred_meet_stream_of(t, 77, DRED_MEET_AUTO, RN, RWORKERS) != r);
  assert_true(dred_meet_relay_of(t, 77, DRED_MEET_AUTO, RN, RWORKERS, absent) == r);
  assert_true(dred_meet_relay_of(t, 77, 5, RN, RWORKERS, absent) != r);

  /* the root comes first: it only passes through (dred-master has its data) */
  assert_int_equal(dred_meet_arrive_op(r, seq, 2, &p, 0, NULL, NULL, DRED_OK, &a), 0);
  assert_int_equal(a.meet, 0);
  /* the first with a block leads; later ones follow, block or not */
  a = relay_arrive(r, seq, 4, &p, 1);
  assert_int_equal(a.meet, 1);
  assert_int_equal(a.lead, 1);
  s = a.slot;
  a = relay_arrive(r, seq, 3, &p, 0);
  assert_int_equal(a.meet, 1);
  assert_int_equal(a.lead, 0);
  assert_true(a.slot == s);
  assert_int_equal(dred_meet_leader(s), 4);
  assert_int_equal(dred_meet_bcast_early(s, seq, 3, &st), 1);
  assert_int_equal(st, DRED_OK);
  assert_int_equal(dred_meet_ready(s, seq, 3, 1), 1);
  a = relay_arrive(r, seq, 5, &p, 1);
  assert_int_equal(a.meet, 1);
  assert_int_equal(a.lead, 0);
  /* the data comes in pieces; followers see how far */
  assert_true(dred_meet_progress(s, seq, &st) == 0 && st == DRED_OK);
  dred_meet_progress_set(s, seq, 65536);
  assert_true(dred_meet_progress(s, seq, &st) == 65536 && st == DRED_OK);
  assert_int_equal(dred_meet_state(s, seq), DRED_MEET_OPEN); /* nothing is decided */
  /* a local member's death after it came, or the absent members': nothing ends */
  dred_meet_member_failed(r, 5, DRED_ERR_PROC_FAILED);
  assert_true(dred_meet_progress(s, seq, &st) == 65536 && st == DRED_OK);
  dred_meet_progress_set(s, seq, p.count * p.extent);
  /* the leader's block is needed until every local member released */
  dred_meet_release(s, seq, 3);
  assert_int_equal(dred_meet_needs(s, seq, 4), 1);
  dred_meet_release(s, seq, 4);
  assert_int_equal(dred_meet_needs(s, seq, 4), 0);
  assert_int_equal(stats(r).busy, 0);
  table_free(t);

  t = table_new();
  r = dred_meet_relay_of(t, 78, DRED_MEET_AUTO, RN, RWORKERS, absent);
  /* no block and no leader yet: dred-master; the next with a block leads */
  a = relay_arrive(r, seq, 5, &p, 0);
  assert_int_equal(a.meet, 0);
  a = relay_arrive(r, seq, 3, &p, 1);
  assert_int_equal(a.lead, 1);
  s = a.slot;
  { /* one that disagrees with the leader: dred-master, which decides for it */
    proto_params_t q = p;
    q.count = BIG + 1;
    a = relay_arrive(r, seq, 4, &q, 1);
    assert_int_equal(a.meet, 0);
  }
  dred_meet_release(s, seq, 3);
  dred_meet_release(s, seq, 2); /* the root */
  assert_int_equal(stats(r).busy, 0);

  /* the leader's collective fails: its followers learn it from the progress, and a member
   * that comes later goes to dred-master */
  seq++;
  s = relay_arrive(r, seq, 3, &p, 1).slot;
  assert_int_equal(relay_arrive(r, seq, 4, &p, 0).meet, 1);
  dred_meet_relay_fail(s, seq, DRED_ERR_MISMATCH);
  (void)dred_meet_progress(s, seq, &st);
  assert_int_equal(st, DRED_ERR_MISMATCH);
  assert_int_equal(relay_arrive(r, seq, 5, &p, 1).meet, 0);
  release_all(s, seq, RN);

  /* the leader dies before its data is whole: ROOT_FAILED for the followers (who go to
   * dred-master for it); after it was whole: nothing is lost */
  seq++;
  s = relay_arrive(r, seq, 4, &p, 1).slot;
  assert_int_equal(relay_arrive(r, seq, 5, &p, 1).meet, 1);
  dred_meet_progress_set(s, seq, 1000);
  dred_meet_member_failed(r, 4, DRED_ERR_PROC_FAILED);
  (void)dred_meet_progress(s, seq, &st);
  assert_int_equal(st, DRED_ERR_ROOT_FAILED);
  release_all(s, seq, RN);
  table_free(t);

  t = table_new();
  r = dred_meet_relay_of(t, 79, DRED_MEET_AUTO, RN, RWORKERS, absent);
  s = relay_arrive(r, 0, 3, &p, 1).slot;
  assert_int_equal(relay_arrive(r, 0, 4, &p, 0).meet, 1);
  dred_meet_progress_set(s, 0, p.count * p.extent);
  dred_meet_member_failed(r, 3, DRED_ERR_PROC_FAILED);
  assert_true(dred_meet_progress(s, 0, &st) == p.count * p.extent && st == DRED_OK);
  assert_int_equal(dred_meet_bcast_early(s, 0, 4, &st), 1);
  assert_int_equal(st, DRED_OK);
  dred_meet_release(s, 0, 4);
  dred_meet_release(s, 0, 2); /* the root passed through (dred_meet_arrive_op, wants 0) */
  dred_meet_release(s, 0, 5); /* 5 never came: its release frees the slot */
  assert_int_equal(stats(r).busy, 0);
  table_free(t);
}

static void test_solo(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 37, N, WORKERS);
  dred_meet_slot_t *s;
  proto_params_t p = params(BIG, 0), odd;
  uint64_t seq = 0;
  uint32_t w;
  int st;
  (void)state;
  p.inl = 0;
  p.kind = PROTO_KIND_REDUCE;
  s = meet_kind(r, seq, 0, &p, 0); /* the root: its operand is its own */
  assert_true(dred_meet_solo(s, seq, 0) == 0); /* nobody else yet: no mark */
  w = dred_meet_arrivals(s);
  (void)meet_kind(r, seq, 2, &p, 1);
  assert_true(dred_meet_arrivals(s) != w);
  dred_meet_wait_arrivals(s, w, 1000000000ull); /* moved already: returns at once */
  assert_true(dred_meet_solo(s, seq, 1) == 0);    /* member 1 has not arrived */
  assert_true(dred_meet_solo(s, seq, 2) == 0);    /* not the root */
  odd = p;
  odd.count = BIG - 1; /* disagrees: never folded early */
  (void)meet_kind(r, seq, 1, &odd, 1);
  assert_true(dred_meet_solo(s, seq, 0) == bit(2));
  assert_true(dred_meet_poll(s, seq, &st) == 0);
  (void)meet_kind(r, seq, 3, &p, 1); /* the last: MISMATCH (member 1) */
  ASSERT_DECIDED(s, seq, DRED_ERR_MISMATCH);
  assert_true(dred_meet_solo(s, seq, 0) == 0); /* decided: nothing early any more */
  release_all(s, seq, N);

  /* marked solo: the chunk phase hands out nothing */
  seq++;
  s = meet_kind(r, seq, 0, &p, 0);
  (void)meet_kind(r, seq, 1, &p, 1);
  assert_true(dred_meet_solo(s, seq, 0) == bit(1));
  w = dred_meet_arrivals(s);
  (void)meet_kind(r, seq, 2, &p, 1);
  (void)meet_kind(r, seq, 3, &p, 1);
  assert_true(dred_meet_arrivals(s) != w);
  ASSERT_DECIDED(s, seq, DRED_OK);
  assert_int_equal(dred_meet_claim(s, seq, 2, 8), -1);
  assert_int_equal(dred_meet_claim(s, seq, 0, 8), -1);
  release_all(s, seq, N);

  /* not marked: the chunks are claimed as usual */
  seq++;
  s = meet_kind(r, seq, 0, &p, 0);
  for (w = 1; w < N; w++) (void)meet_kind(r, seq, w, &p, 1);
  ASSERT_DECIDED(s, seq, DRED_OK);
  assert_true(dred_meet_claim(s, seq, 2, 8) >= 0);
  release_all(s, seq, N);
  table_free(t);
}

/* A small-path arrival that may take its outcome there (dred_meet_arrive_take): member k
 * publishes its operand into the slot when the collective reads it; returns whether it
 * was taken, and asserts it met. */
static int take_arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t k, const proto_params_t *p,
                       int error, unsigned char *take, dred_meet_slot_t **slot) {
  dred_meet_arrival_t a;
  dred_meet_ref_t op;
  size_t bytes = (size_t)(p->count * p->extent), i;
  int reads = p->kind == PROTO_KIND_ALLREDUCE ||
              (p->kind == PROTO_KIND_BCAST ? k == p->root : k != p->root);
  memset(&op, 0, sizeof op);
  if (reads) {
    op.kind = DRED_MEET_OP_SLOT;
    op.len = bytes;
    for (i = 0; i < bytes; i++) operand[k][i] = pattern(seq, k, i);
  }
  assert_int_equal(dred_meet_arrive_take(r, seq, k, p, 1, &op, reads ? operand[k] : NULL, error,
                                         take, DRED_MEET_DATA, 0, &a),
                   0);
  assert_int_equal(a.meet, 1);
  *slot = a.slot;
  return a.taken;
}

/* Taken at the arrival: a bcast member once the root's data is in and everyone there
 * agrees, anyone whose arrival decided OK; each with the operands it reads copied out and
 * its release done (the slot frees with the last release); anything else (a mismatch, a
 * member's error, a by-reference operand) waits and looks as before. */
static void test_take(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 0x7a6e, N, WORKERS);
  dred_meet_slot_t *s;
  static unsigned char take[DRED_MEET_DATA];
  proto_params_t p = params(8, 2), odd;
  uint64_t seq = 0;
  uint32_t k;
  size_t i, bytes = 8 * 4;
  int st;
  (void)state;

  /* bcast, root first: it takes at once (it reads nothing), then every member does, with
   * the root's data; the last one's release frees the slot */
  p.kind = PROTO_KIND_BCAST;
  assert_true(take_arrive(r, seq, 2, &p, DRED_OK, take, &s));
  for (k = 0; k < N; k++) {
    if (k == 2) continue;
    memset(take, 0, sizeof take);
    assert_true(take_arrive(r, seq, k, &p, DRED_OK, take, &s));
    for (i = 0; i < bytes; i++) assert_int_equal(take[2 * bytes + i], pattern(seq, 2, i));
  }
  assert_int_equal(stats(r).busy, 0);

  /* bcast, root last: the early ones wait (nothing to take yet) and are served by the
   * root's arrival as before; the root takes */
  seq++;
  for (k = 0; k < N; k++) {
    if (k == 2) continue;
    assert_false(take_arrive(r, seq, k, &p, DRED_OK, take, &s));
  }
  assert_true(take_arrive(r, seq, 2, &p, DRED_OK, take, &s));
  ASSERT_DECIDED(s, seq, DRED_OK);
  for (k = 0; k < N; k++) {
    if (k == 2) continue;
    assert_int_equal(dred_meet_bcast_early(s, seq, k, &st), 1);
    assert_int_equal(st, DRED_OK);
    assert_int_equal(stats(r).busy, 1);
    dred_meet_release(s, seq, k);
  }
  assert_int_equal(stats(r).busy, 0);

  /* bcast, a member that disagrees with the root already there: not taken, MISMATCH */
  seq++;
  odd = p;
  odd.count = 7;
  assert_true(take_arrive(r, seq, 2, &p, DRED_OK, take, &s));
  assert_false(take_arrive(r, seq, 0, &odd, DRED_OK, take, &s));
  assert_int_equal(dred_meet_bcast_early(s, seq, 0, &st), 1);
  assert_int_equal(st, DRED_ERR_MISMATCH);
  /* a later one agrees with the root but not with member 0, there before it: MISMATCH */
  assert_false(take_arrive(r, seq, 1, &p, DRED_OK, take, &s));
  assert_false(take_arrive(r, seq, 3, &p, DRED_OK, take, &s));
  ASSERT_DECIDED(s, seq, DRED_ERR_MISMATCH); /* everyone in: the slot says MISMATCH */
  dred_meet_release(s, seq, 0);
  dred_meet_release(s, seq, 1);
  assert_int_equal(stats(r).busy, 1);
  dred_meet_release(s, seq, 3);
  assert_int_equal(stats(r).busy, 0);

  /* bcast, a member's error before the root came: nobody takes, the slot fails */
  seq++;
  assert_false(take_arrive(r, seq, 0, &p, DRED_ERR_NOMEM, take, &s));
  assert_false(take_arrive(r, seq, 2, &p, DRED_OK, take, &s));
  assert_false(take_arrive(r, seq, 1, &p, DRED_OK, take, &s));
  assert_false(take_arrive(r, seq, 3, &p, DRED_OK, take, &s));
  ASSERT_DECIDED(s, seq, DRED_ERR_NOMEM);
  release_all(s, seq, N);

  /* allreduce: only the last arrival (which decides OK) takes, with every operand */
  seq++;
  p.kind = PROTO_KIND_ALLREDUCE;
  p.root = 0;
  for (k = 0; k < N - 1; k++) assert_false(take_arrive(r, seq, k, &p, DRED_OK, take, &s));
  memset(take, 0, sizeof take);
  assert_true(take_arrive(r, seq, N - 1, &p, DRED_OK, take, &s));
  for (k = 0; k < N; k++)
    for (i = 0; i < bytes; i++) assert_int_equal(take[k * bytes + i], pattern(seq, k, i));
  ASSERT_DECIDED(s, seq, DRED_OK);
  for (k = 0; k < N - 1; k++) dred_meet_release(s, seq, k);
  assert_int_equal(stats(r).busy, 0);

  /* allreduce, the last one disagrees: MISMATCH, nobody takes */
  seq++;
  odd = p;
  odd.op = 4;
  for (k = 0; k < N - 1; k++) assert_false(take_arrive(r, seq, k, &p, DRED_OK, take, &s));
  assert_false(take_arrive(r, seq, N - 1, &odd, DRED_OK, take, &s));
  ASSERT_DECIDED(s, seq, DRED_ERR_MISMATCH);
  release_all(s, seq, N);

  /* reduce: the last arrival takes (the root: every operand; a non-root: nothing) */
  seq++;
  p.kind = PROTO_KIND_REDUCE;
  p.root = 1;
  for (k = 1; k < N; k++) assert_false(take_arrive(r, seq, k, &p, DRED_OK, take, &s));
  assert_true(take_arrive(r, seq, 0, &p, DRED_OK, take, &s));
  for (k = 1; k < N; k++) dred_meet_release(s, seq, k);
  assert_int_equal(stats(r).busy, 0);

  /* by reference: never taken (blocks are lent and published), even with a buffer */
  seq++;
  p = params(8, 0);
  p.inl = 0;
  p.kind = PROTO_KIND_BCAST;
  {
    dred_meet_arrival_t a;
    dred_meet_ref_t op;
    memset(&op, 0, sizeof op);
    op.kind = DRED_MEET_OP_POOL;
    op.worker = WORKERS[0];
    op.off = 4096;
    op.len = bytes;
    assert_int_equal(dred_meet_arrive_take(r, seq, 0, &p, 1, &op, NULL, DRED_OK, take,
                                           DRED_MEET_DATA, 0, &a), 0);
    assert_int_equal(a.meet, 1);
    assert_int_equal(a.taken, 0);
    memset(&op, 0, sizeof op);
    assert_int_equal(dred_meet_arrive_take(r, seq, 1, &p, 1, &op, NULL, DRED_OK, take,
                                           DRED_MEET_DATA, 0, &a), 0);
    assert_int_equal(a.taken, 0); /* the root's data is in a block, not the slot */
    s = a.slot;
  }
  release_all(s, seq, 2);
  table_free(t);
}

/* An arrival that asks to be told its slot is held (held_returns) records nothing there:
 * the reduction DRED_MEET_DEPTH before keeps it, nothing spills, and the member arrives
 * again later -- with held_returns 0 it spills as any arrival does; once the slot is free,
 * it meets. */
static void test_held_returns(void **state) {
  dred_meet_table_t *t = table_new();
  dred_meet_ring_t *r = dred_meet_ring_of(t, 0x4e1d, N, WORKERS);
  dred_meet_slot_t *s, *s2;
  dred_meet_arrival_t a;
  dred_meet_ref_t op;
  static unsigned char take[DRED_MEET_DATA];
  proto_params_t p = params(2, 0);
  uint32_t k;
  (void)state;
  p.kind = PROTO_KIND_BCAST;
  memset(&op, 0, sizeof op);
  s = MEET(r, 0, 1, &p); /* seq 0 holds the slot: member 1 waits for the root */
  assert_int_equal(dred_meet_arrive_take(r, DRED_MEET_DEPTH, 2, &p, 1, &op, NULL, DRED_OK, take,
                                         DRED_MEET_DATA, 1, &a), 0);
  assert_int_equal(a.held, 1);
  assert_int_equal(a.meet, 0);
  assert_true(stats(r).spills == 0);
  ASSERT_OPEN(s, 0); /* seq 0 untouched */
  assert_int_equal(dred_meet_slot_held(r, DRED_MEET_DEPTH), 1);
  /* a member of seq 16 that arrives without held_returns spills it, as before; then a
   * held_returns arrival of seq 16 is not held any more: it follows to dred-master */
  assert_int_equal(dred_meet_arrive_take(r, DRED_MEET_DEPTH, 3, &p, 1, &op, NULL, DRED_OK, take,
                                         DRED_MEET_DATA, 0, &a), 0);
  assert_int_equal(a.held, 0);
  assert_int_equal(a.meet, 0);
  assert_true(stats(r).spills == 1);
  assert_int_equal(dred_meet_arrive_take(r, DRED_MEET_DEPTH, 2, &p, 1, &op, NULL, DRED_OK, take,
                                         DRED_MEET_DATA, 1, &a), 0);
  assert_int_equal(a.held, 0);
  assert_int_equal(a.meet, 0);
  /* seq 0 ends; seq 32 then finds the slot free and meets at once */
  for (k = 0; k < N; k++)
    if (k != 1) (void)MEET(r, 0, k, &p);
  release_all(s, 0, N);
  assert_int_equal(dred_meet_arrive_take(r, 2 * DRED_MEET_DEPTH, 0, &p, 1, &op, NULL, DRED_OK,
                                         take, DRED_MEET_DATA, 1, &a), 0);
  assert_int_equal(a.held, 0);
  assert_int_equal(a.meet, 1);
  s2 = a.slot;
  assert_true(s2 == s);
  table_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rings),         cmocka_unit_test(test_solo),
      cmocka_unit_test(test_relay),         cmocka_unit_test(test_partial),
      cmocka_unit_test(test_partial_noncomm),
      cmocka_unit_test(test_relay_allreduce), cmocka_unit_test(test_happy_path),
      cmocka_unit_test(test_group_sizes),   cmocka_unit_test(test_mismatch),
      cmocka_unit_test(test_member_error),  cmocka_unit_test(test_mixed),
      cmocka_unit_test(test_spill),         cmocka_unit_test(test_member_failed),
      cmocka_unit_test(test_end),           cmocka_unit_test(test_cross_process),
      cmocka_unit_test(test_wait_bounded),  cmocka_unit_test(test_prewake),
      cmocka_unit_test(test_lock_holder_dies),
      cmocka_unit_test(test_bad_args),      cmocka_unit_test(test_by_ref_orders),
      cmocka_unit_test(test_by_ref_mismatch), cmocka_unit_test(test_noplace_spills),
      cmocka_unit_test(test_by_ref_failures), cmocka_unit_test(test_streams),
      cmocka_unit_test(test_kinds),         cmocka_unit_test(test_chunk_ranges),
      cmocka_unit_test(test_chunks),        cmocka_unit_test(test_pieces),
      cmocka_unit_test(test_take),
      cmocka_unit_test(test_held_returns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
