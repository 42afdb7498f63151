/*
 * test_segment.c -- lib/shm/segment.c: the check every read of another process's memory
 * passes first.  Each case is a reference a stale, corrupt or hostile message could carry
 * (the review's was an offset into the next process's segment); each must be refused,
 * and the references dred itself makes must pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/shm/segment.h"

#define HEAD 8192u
#define SEG (1u << 20)

/* three workers (ranks 1..3; rank 0 is the master) with 1 MiB segments laid out back to
 * back, as MPI_Win_allocate_shared places them on a node */
static dred_seg_t segs[4] = {
    {0, 0, 0, -1},
    {0x100000000ull, SEG, HEAD, 1},
    {0x100000000ull + SEG, SEG, HEAD, 1},
    {0x700000000ull, SEG, HEAD, 3},
};

static proto_buf_t pool_ref(uint32_t owner, int64_t off, uint64_t len) {
  proto_buf_t b;
  b.owner = owner;
  b.pool_off = off;
  b.len = len;
  b.addr = segs[owner].base + (uint64_t)off;
  return b;
}

static int check(uint32_t provider, proto_buf_t b, uint64_t bytes) {
  char why[200];
  return dred_seg_check_buf(segs, 4, provider, &b, bytes, why, sizeof why);
}

static void accepts_what_dred_sends(void **st) {
  proto_buf_t priv = {0x5000000ull, -1, 4096, 2};
  (void)st;
  assert_int_equal(check(2, pool_ref(2, HEAD, 4096), 4096), 0);
  assert_int_equal(check(2, pool_ref(2, SEG - 4096, 4096), 4096), 0); /* the last bytes */
  assert_int_equal(check(3, pool_ref(3, HEAD, SEG - HEAD), SEG - HEAD), 0); /* all of it */
  assert_int_equal(check(2, priv, 4096), 0);
  priv.len = 0;
  assert_int_equal(check(2, priv, 0), 0); /* count 0: nothing is read */
}

static void refuses_offsets_outside_the_segment(void **st) {
  (void)st;
  /* the review's case: an offset that runs into the next worker's segment */
  assert_int_equal(check(1, pool_ref(1, SEG - 8, 64), 64), -1);
  assert_int_equal(check(1, pool_ref(1, SEG, 8), 8), -1);
  assert_int_equal(check(1, pool_ref(1, INT64_MAX, 8), 8), -1); /* overflow */
  assert_int_equal(check(1, pool_ref(1, 16, 8), 8), -1);        /* the snapshot directory */
  assert_int_equal(check(1, pool_ref(1, -2, 8), 8), -1);
}

static void refuses_a_reference_that_is_not_the_providers(void **st) {
  proto_buf_t b = pool_ref(2, HEAD, 64);
  (void)st;
  assert_int_equal(check(1, b, 64), -1); /* owner 2, provider 1 */
  assert_int_equal(check(0, b, 64), -1); /* the master holds no operand */
  assert_int_equal(check(9, b, 64), -1); /* not in the job */
  b.addr += 64;                          /* address and offset disagree */
  assert_int_equal(check(2, b, 64), -1);
}

static void refuses_the_wrong_length(void **st) {
  (void)st;
  assert_int_equal(check(2, pool_ref(2, HEAD, 64), 128), -1);
  assert_int_equal(check(2, pool_ref(2, HEAD, 128), 64), -1);
}

static void refuses_private_buffers_in_the_pool_or_wrapping(void **st) {
  proto_buf_t b = {0, -1, 64, 2};
  (void)st;
  assert_int_equal(check(2, b, 64), -1); /* address 0 */
  b.addr = segs[2].base + 100;           /* "private", but inside the segment */
  assert_int_equal(check(2, b, 64), -1);
  b.addr = UINT64_MAX - 10;
  assert_int_equal(check(2, b, 64), -1);
}

static void range_check(void **st) {
  char why[200] = "";
  (void)st;
  assert_int_equal(dred_seg_check_range(&segs[1], HEAD, 100, why, sizeof why), 0);
  assert_int_equal(dred_seg_check_range(&segs[1], HEAD, SEG, why, sizeof why), -1);
  assert_non_null(strstr(why, "past the end"));
  assert_int_equal(dred_seg_check_range(&segs[0], HEAD, 1, why, sizeof why), -1);
  assert_int_equal(dred_seg_check_range(&segs[1], -1, 1, NULL, 0), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(accepts_what_dred_sends),
      cmocka_unit_test(refuses_offsets_outside_the_segment),
      cmocka_unit_test(refuses_a_reference_that_is_not_the_providers),
      cmocka_unit_test(refuses_the_wrong_length),
      cmocka_unit_test(refuses_private_buffers_in_the_pool_or_wrapping),
      cmocka_unit_test(range_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
