/*
 * test_admission.c -- the pool admission rules (common/admission.h): room counted with
 * the first results still to come, one reduction alone whatever its size, first come
 * first served while any waits, the stall that lets every reduction waiting then go, forcing, release.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../common/admission.h"

#define MS 1000000ull

static void test_room_counts_future(void **state) {
  dred_admission_t a;
  (void)state;
  dred_admission_init(&a, 100, 500 * MS);
  /* 30 now + 30 later: fits an empty pool */
  assert_int_equal(dred_admission_call(&a, 0, 30, 30), DRED_ADMIT_ROOM);
  /* the pool holds its 30; its 30 still to come count too: 30 + 30 + 30 + 30 > 100 */
  assert_int_equal(dred_admission_call(&a, 30, 30, 30), DRED_ADMIT_WAIT);
  assert_int_equal(a.nwaiting, 1u);
  assert_int_equal(a.nadmitted, 1u);
  /* once the first spent its result (now in `used`), the same sum still does not fit */
  dred_admission_spent(&a, 30);
  assert_int_equal(a.future, 0u);
  uint64_t due = 0;
  assert_int_equal(dred_admission_next(&a, 60, 30, 30, 0, 1 * MS, 0, &due), DRED_ADMIT_WAIT);
  assert_true(due == 500 * MS);
  /* the first ends: its 60 go back to the pool */
  dred_admission_release(&a, 0, 2 * MS);
  assert_int_equal(dred_admission_next(&a, 0, 30, 30, 0, 3 * MS, 0, &due), DRED_ADMIT_ROOM);
  assert_int_equal(a.nwaiting, 0u);
  assert_int_equal(a.nadmitted, 1u);
  assert_int_equal(a.future, 30u);
}

static void test_alone_whatever_size(void **state) {
  dred_admission_t a;
  (void)state;
  dred_admission_init(&a, 100, 500 * MS);
  /* larger than the pool: admitted, since nothing else is */
  assert_int_equal(dred_admission_call(&a, 0, 80, 80), DRED_ADMIT_ROOM);
  /* the next small one waits behind it */
  assert_int_equal(dred_admission_call(&a, 80, 1, 0), DRED_ADMIT_WAIT);
  /* an operand already in place is counted whatever the room */
  dred_admission_take(&a, 10);
  assert_int_equal(a.nadmitted, 2u);
  assert_int_equal(a.future, 90u);
}

static void test_first_come_first_served(void **state) {
  dred_admission_t a;
  (void)state;
  dred_admission_init(&a, 100, 500 * MS);
  assert_int_equal(dred_admission_call(&a, 0, 60, 0), DRED_ADMIT_ROOM);
  assert_int_equal(dred_admission_call(&a, 60, 60, 0), DRED_ADMIT_WAIT);
  /* a small one would fit, but one waits already: it may not overtake */
  assert_int_equal(dred_admission_call(&a, 60, 10, 0), DRED_ADMIT_WAIT);
  assert_int_equal(a.nwaiting, 2u);
  /* the one that ended leaves the waiting ones not counted as admitted */
  dred_admission_unwait(&a);
  assert_int_equal(a.nwaiting, 1u);
}

/* A pool of 100 with 90 admitted and `n` reductions of 50 waiting behind it. */
static void full_with_waiters(dred_admission_t *a, int n) {
  dred_admission_init(a, 100, 500 * MS);
  assert_int_equal(dred_admission_call(a, 0, 90, 0), DRED_ADMIT_ROOM);
  for (int i = 0; i < n; i++) assert_int_equal(dred_admission_call(a, 90, 50, 0), DRED_ADMIT_WAIT);
}

static void test_stall_and_force(void **state) {
  dred_admission_t a;
  uint64_t due = 0;
  (void)state;
  full_with_waiters(&a, 2);
  /* queued at 10 ms; memory freed at 300 ms: the stall counts from there */
  dred_admission_freed(&a, 300 * MS);
  assert_int_equal(dred_admission_next(&a, 90, 50, 0, 10 * MS, 600 * MS, 0, &due),
                   DRED_ADMIT_WAIT);
  assert_true(due == 800 * MS);
  assert_int_equal(dred_admission_next(&a, 90, 50, 0, 10 * MS, 800 * MS, 0, &due),
                   DRED_ADMIT_STALL);
  /* one that arrives after the stall is not part of it */
  assert_int_equal(dred_admission_call(&a, 140, 50, 0), DRED_ADMIT_WAIT);
  /* the second one waited through the same stall: it goes at once, without room */
  assert_int_equal(dred_admission_next(&a, 140, 50, 0, 10 * MS, 801 * MS, 0, &due),
                   DRED_ADMIT_STALL);
  assert_int_equal(a.flush, 0u);
  /* the late arrival (queued at 800 ms) waits its own stall, counted from 801 ms */
  assert_int_equal(dred_admission_next(&a, 190, 50, 0, 800 * MS, 900 * MS, 0, &due),
                   DRED_ADMIT_WAIT);
  assert_true(due == 1301 * MS);
  /* forced (finalize): goes at once */
  assert_int_equal(dred_admission_next(&a, 190, 50, 0, 800 * MS, 901 * MS, 1, &due),
                   DRED_ADMIT_FORCED);
  assert_int_equal(a.nwaiting, 0u);
  assert_int_equal(a.nadmitted, 4u);
  /* nothing waits: next says so and admits nothing */
  assert_int_equal(dred_admission_next(&a, 0, 1, 0, 0, 2000 * MS, 1, &due), DRED_ADMIT_WAIT);
  assert_int_equal(a.nadmitted, 4u);
}

/* A stall's flush shrinks with the queue: one that ended while it waited is not let go
 * twice, and room still comes first. */
static void test_stall_flush_bounds(void **state) {
  dred_admission_t a;
  uint64_t due = 0;
  (void)state;
  full_with_waiters(&a, 3);
  assert_int_equal(dred_admission_next(&a, 90, 50, 0, 0, 600 * MS, 0, &due), DRED_ADMIT_STALL);
  assert_int_equal(a.flush, 2u);
  dred_admission_unwait(&a); /* one of the two left ended (abandoned) */
  dred_admission_unwait(&a);
  assert_int_equal(a.nwaiting, 0u);
  assert_int_equal(a.flush, 0u);
  /* a new one after that waits for room or its own stall */
  assert_int_equal(dred_admission_call(&a, 140, 50, 0), DRED_ADMIT_WAIT);
  assert_int_equal(dred_admission_next(&a, 140, 50, 0, 650 * MS, 700 * MS, 0, &due),
                   DRED_ADMIT_WAIT);
  assert_true(due == 1150 * MS);
  /* with room it goes as ROOM, flush or not */
  assert_int_equal(dred_admission_next(&a, 0, 50, 0, 650 * MS, 701 * MS, 0, &due),
                   DRED_ADMIT_ROOM);
}

static void test_no_overflow(void **state) {
  dred_admission_t a;
  (void)state;
  dred_admission_init(&a, 100, 500 * MS);
  assert_int_equal(dred_admission_call(&a, 0, 10, 0), DRED_ADMIT_ROOM);
  /* sizes near SIZE_MAX must not wrap into "fits" */
  assert_int_equal(dred_admission_call(&a, 10, SIZE_MAX - 5, 10), DRED_ADMIT_WAIT);
  dred_admission_unwait(&a);
  assert_int_equal(dred_admission_call(&a, 10, 10, SIZE_MAX - 5), DRED_ADMIT_WAIT);
  dred_admission_unwait(&a);
  /* a pool holding more than its size (blocks outside the count) fits nothing more */
  assert_int_equal(dred_admission_call(&a, 150, 1, 0), DRED_ADMIT_WAIT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_room_counts_future),
      cmocka_unit_test(test_alone_whatever_size),
      cmocka_unit_test(test_first_come_first_served),
      cmocka_unit_test(test_stall_and_force),
      cmocka_unit_test(test_stall_flush_bounds),
      cmocka_unit_test(test_no_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
