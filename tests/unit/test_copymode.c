/*
 * test_copymode.c -- lib/shm/copymode.c: the way a copy into a shared block goes, learnt
 * from the copies' times.  A simulated machine gives each copy its ticks per KiB by way
 * (cached, streamed); the tests check what a process would do there: stay cached where
 * that is cheap or within three times a streamed copy's cost, stream where cached copies
 * cost four to ten times more, follow a change of state either way within a few dozen
 * copies though only every fourth copy is timed, keep to its choice through a copy the
 * scheduler interrupted, keep the sizes apart, and spend little on tries of the way not
 * chosen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/shm/copymode.h"

/* One simulated copy of n bytes with cached / streamed costs in ticks per KiB, its time
 * given only where pick asked for it, as copy.c does; returns the way it went (flags
 * dropped). */
static int copy_once(dred_copymode_t *m, size_t n, uint64_t cached, uint64_t streamed) {
  int pick = dred_copymode_pick(m, n), way = pick & 1;
  uint64_t ticks = (way == DRED_COPY_STREAMED ? streamed : cached) * (n / 1024);
  dred_copymode_note(m, n, pick, pick & DRED_COPY_TIMED ? ticks : 0);
  return way;
}

/* `copies` copies; returns how many went streamed */
static unsigned run(dred_copymode_t *m, size_t n, unsigned copies, uint64_t cached,
                    uint64_t streamed) {
  unsigned s = 0;
  for (unsigned i = 0; i < copies; i++) s += (unsigned)copy_once(m, n, cached, streamed);
  return s;
}

static void test_cached_cheap_stays_cached(void **state) {
  dred_copymode_t m;
  (void)state;
  memset(&m, 0, sizeof m);
  /* the good state: cached 48, streamed 80 per KiB-ish */
  unsigned s = run(&m, 2u << 20, 10000, 48, 80);
  assert_int_equal(dred_copymode_choice(&m, 2u << 20), DRED_COPY_CACHED);
  assert_true(s < 100); /* only the tries: under 1 % */
  memset(&m, 0, sizeof m);
  /* cached dearer, up to three times: still cached (a streamed block costs its reader) */
  run(&m, 64u << 10, 10000, 220, 80);
  assert_int_equal(dred_copymode_choice(&m, 64u << 10), DRED_COPY_CACHED);
  /* over three times: streamed */
  run(&m, 64u << 10, 2000, 320, 80);
  assert_int_equal(dred_copymode_choice(&m, 64u << 10), DRED_COPY_STREAMED);
}

static void test_cached_dear_streams(void **state) {
  dred_copymode_t m;
  unsigned s;
  (void)state;
  memset(&m, 0, sizeof m);
  /* the bad state: a cached rewrite of lines a peer read costs ten times a streamed one */
  s = run(&m, 256u << 10, 40, 800, 80);
  assert_int_equal(dred_copymode_choice(&m, 256u << 10), DRED_COPY_STREAMED);
  assert_true(s >= 25); /* decided within the first tries */
  s = run(&m, 256u << 10, 10000, 800, 80);
  assert_true(s > 9900); /* later only the tries go cached: under 1 % */
  assert_true(m.done[DRED_COPY_STREAMED] > m.done[DRED_COPY_CACHED]);
}

static void test_follows_changes(void **state) {
  dred_copymode_t m;
  unsigned i, at = 0;
  (void)state;
  memset(&m, 0, sizeof m);
  run(&m, 1u << 20, 5000, 48, 80); /* good, long enough for the tries to be rare */
  for (i = 0; i < 1000 && !at; i++)
    if (copy_once(&m, 1u << 20, 800, 80) == DRED_COPY_STREAMED &&
        dred_copymode_choice(&m, 1u << 20) == DRED_COPY_STREAMED)
      at = i + 1;
  /* its own cached copies show it: a few timed ones, every fourth copy */
  assert_true(at > 0 && at <= 4 * DRED_COPYMODE_TIME_EVERY);
  run(&m, 1u << 20, 5000, 800, 80); /* bad, long enough for the tries to be rare */
  for (i = 0, at = 0; i < 10000 && !at; i++) {
    copy_once(&m, 1u << 20, 48, 80);
    if (dred_copymode_choice(&m, 1u << 20) == DRED_COPY_CACHED) at = i + 1;
  }
  /* only the tries see it: one at up to 256 copies, then every 8 while they improve */
  assert_true(at > 0 && at <= 256 + 16 * 8);
}

static void test_outlier_does_not_swing(void **state) {
  dred_copymode_t m;
  (void)state;
  memset(&m, 0, sizeof m);
  run(&m, 32u << 10, 2000, 48, 80);
  /* one copy the scheduler stopped for a millisecond, then the good state again */
  copy_once(&m, 32u << 10, 1000000, 1000000);
  assert_int_equal(dred_copymode_choice(&m, 32u << 10), DRED_COPY_CACHED);
  assert_true(run(&m, 32u << 10, 1000, 48, 80) < 20);
}

static void test_sizes_apart(void **state) {
  dred_copymode_t m;
  (void)state;
  memset(&m, 0, sizeof m);
  run(&m, 8u << 10, 2000, 48, 80);  /* small copies: cached is cheap */
  run(&m, 4u << 20, 2000, 800, 80); /* large ones: cached is dear */
  assert_int_equal(dred_copymode_choice(&m, 8u << 10), DRED_COPY_CACHED);
  assert_int_equal(dred_copymode_choice(&m, (8u << 10) + 100), DRED_COPY_CACHED);
  assert_int_equal(dred_copymode_choice(&m, 4u << 20), DRED_COPY_STREAMED);
  assert_int_equal(dred_copymode_choice(&m, (4u << 20) + 4096), DRED_COPY_STREAMED);
  /* untimed classes start cached; sizes past the last class share it */
  assert_int_equal(dred_copymode_choice(&m, 64u << 10), DRED_COPY_CACHED);
  run(&m, (size_t)1 << 30, 200, 800, 80);
  assert_int_equal(dred_copymode_choice(&m, (size_t)64 << 20), DRED_COPY_STREAMED);
}

/* The cost of the tries in the bad state: streaming from the start but for them. */
static void test_tries_cost_little(void **state) {
  dred_copymode_t m;
  uint64_t spent = 0, best;
  const unsigned copies = 20000;
  (void)state;
  memset(&m, 0, sizeof m);
  for (unsigned i = 0; i < copies; i++)
    spent += copy_once(&m, 128u << 10, 800, 80) == DRED_COPY_STREAMED ? 80 : 800;
  best = (uint64_t)copies * 80;
  assert_true(spent < best + best / 20); /* within 5 % of always streaming */
}

/* Only every fourth copy (and every try) is timed -- its fence costs the copy time where
 * stores would otherwise drain behind the next work -- yet every copy is counted. */
static void test_times_one_in_four(void **state) {
  dred_copymode_t m;
  unsigned timed = 0;
  const unsigned copies = 4000;
  (void)state;
  memset(&m, 0, sizeof m);
  run(&m, 16u << 10, 1000, 48, 80); /* settled: the tries are rare */
  for (unsigned i = 0; i < copies; i++) {
    int pick = dred_copymode_pick(&m, 16u << 10);
    timed += (pick & DRED_COPY_TIMED) != 0;
    dred_copymode_note(&m, 16u << 10, pick, pick & DRED_COPY_TIMED ? 48u * 16u : 0);
  }
  assert_true(timed >= copies / DRED_COPYMODE_TIME_EVERY);
  assert_true(timed <= copies / DRED_COPYMODE_TIME_EVERY + copies / 200); /* + the tries */
  assert_int_equal(m.done[DRED_COPY_CACHED] + m.done[DRED_COPY_STREAMED], 1000 + copies);
  assert_int_equal(dred_copymode_choice(&m, 16u << 10), DRED_COPY_CACHED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cached_cheap_stays_cached),
      cmocka_unit_test(test_cached_dear_streams),
      cmocka_unit_test(test_follows_changes),
      cmocka_unit_test(test_outlier_does_not_swing),
      cmocka_unit_test(test_sizes_apart),
      cmocka_unit_test(test_tries_cost_little),
      cmocka_unit_test(test_times_one_in_four),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
