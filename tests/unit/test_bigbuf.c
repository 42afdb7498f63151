/*
 * test_bigbuf.c -- large private buffers (common/bigbuf.c): below the threshold they are
 * malloc's, from it on 2 MiB-aligned mappings; every byte is usable and keeps its value,
 * a size that cannot be mapped is NULL, not a crash, and free takes what alloc gave.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/bigbuf.h"

static void fill_and_check(uint8_t *p, size_t len) {
  size_t i;
  for (i = 0; i < len; i++) p[i] = (uint8_t)(i * 31u + 7u);
  for (i = 0; i < len; i++)
    if (p[i] != (uint8_t)(i * 31u + 7u)) fail_msg("byte %zu of %zu changed", i, len);
}

static void sizes_round_trip(void **state) {
  const size_t sizes[] = {1, 4096, DRED_BIGBUF_MIN - 1, DRED_BIGBUF_MIN, DRED_BIGBUF_MIN + 1,
                          (size_t)3 << 20, (size_t)32 << 20};
  size_t k;
  (void)state;
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    uint8_t *p = dred_bigbuf_alloc(sizes[k]);
    assert_non_null(p);
    if (sizes[k] >= DRED_BIGBUF_MIN) /* its own mapping, on a huge page boundary */
      assert_int_equal((uintptr_t)p % DRED_BIGBUF_ALIGN, 0);
    fill_and_check(p, sizes[k]);
    dred_bigbuf_free(p, sizes[k]);
  }
}

static void many_at_once(void **state) {
  uint8_t *p[8];
  size_t k, len = (size_t)5 << 20;
  (void)state;
  for (k = 0; k < 8; k++) {
    assert_non_null(p[k] = dred_bigbuf_alloc(len));
    memset(p[k], (int)k, len);
  }
  for (k = 0; k < 8; k++) { /* no two overlap */
    assert_int_equal(p[k][0], (uint8_t)k);
    assert_int_equal(p[k][len - 1], (uint8_t)k);
    dred_bigbuf_free(p[k], len);
  }
}

static void impossible_and_null(void **state) {
  (void)state;
  assert_null(dred_bigbuf_alloc(SIZE_MAX));
  assert_null(dred_bigbuf_alloc(SIZE_MAX - ((size_t)1 << 20)));
  dred_bigbuf_free(NULL, 0);
  dred_bigbuf_free(NULL, (size_t)64 << 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sizes_round_trip),
      cmocka_unit_test(many_at_once),
      cmocka_unit_test(impossible_and_null),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
