/*
 * test_pool.c -- the shared-memory pool's offset allocator: alignment, first fit,
 * exhaustion, coalescing, and a randomized alloc/free run checked against a shadow map.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/shm/pool.h"

static void test_basic(void **state) {
  dred_pool_t p;
  int64_t a, b, c;
  (void)state;
  assert_int_equal(dred_pool_init(&p, 1024), 0);
  assert_true(dred_pool_alloc(&p, 0) == -1);
  a = dred_pool_alloc(&p, 1);
  b = dred_pool_alloc(&p, 100);
  assert_true(a == 0);
  assert_true(b == 64); /* aligned to DRED_POOL_ALIGN */
  c = dred_pool_alloc(&p, 2000);
  assert_true(c == -1); /* too large */
  dred_pool_free(&p, a, 1);
  dred_pool_free(&p, b, 100);
  /* everything coalesced back: the whole pool is one block again */
  assert_true(dred_pool_alloc(&p, 1024) == 0);
  dred_pool_destroy(&p);
}

static void test_random_against_shadow(void **state) {
  enum { SIZE = 1 << 20, N = 64 };
  dred_pool_t p;
  static uint8_t owner[SIZE / DRED_POOL_ALIGN];
  int64_t off[N];
  size_t len[N];
  unsigned i, k, seed = 7;
  (void)state;
  memset(owner, 0, sizeof owner);
  assert_int_equal(dred_pool_init(&p, SIZE), 0);
  for (k = 0; k < N; k++) off[k] = -1;
  for (i = 0; i < 20000; i++) {
    seed = seed * 1103515245u + 12345u;
    k = (seed >> 8) % N;
    if (off[k] < 0) {
      len[k] = 1 + (seed >> 4) % 40000;
      off[k] = dred_pool_alloc(&p, len[k]);
      if (off[k] >= 0) {
        size_t s, e = ((size_t)off[k] + len[k] + DRED_POOL_ALIGN - 1) / DRED_POOL_ALIGN;
        assert_true(off[k] % DRED_POOL_ALIGN == 0);
        assert_true((size_t)off[k] + len[k] <= SIZE);
        for (s = (size_t)off[k] / DRED_POOL_ALIGN; s < e; s++) {
          assert_int_equal(owner[s], 0); /* never handed out twice */
          owner[s] = (uint8_t)(k + 1);
        }
      }
    } else {
      size_t s, e = ((size_t)off[k] + len[k] + DRED_POOL_ALIGN - 1) / DRED_POOL_ALIGN;
      for (s = (size_t)off[k] / DRED_POOL_ALIGN; s < e; s++) owner[s] = 0;
      dred_pool_free(&p, off[k], len[k]);
      off[k] = -1;
    }
  }
  for (k = 0; k < N; k++)
    if (off[k] >= 0) dred_pool_free(&p, off[k], len[k]);
  assert_true(p.used == 0);
  assert_true(dred_pool_alloc(&p, SIZE) == 0); /* fully coalesced */
  dred_pool_destroy(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_basic),
                                     cmocka_unit_test(test_random_against_shadow)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
