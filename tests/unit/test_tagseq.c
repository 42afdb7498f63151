/*
 * test_tagseq.c -- reduction keys (common/proto.h) and the per-group tag use counts
 * behind them (common/tagseq.c): distinct uses of a tag never share a key, the tag and
 * use come back out of a key, auto keys stay apart from explicit ones, and the table
 * counts right through growth (checked against a plain array).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../include/dred_status.h"
#include "../../common/proto.h"
#include "../../common/tagseq.h"

static void test_keys(void **state) {
  (void)state;
  /* the first use of a tag is the bare tag: the wire looks as before for tags never reused */
  assert_true(proto_key_explicit(5, 0) == 5);
  assert_true(proto_key_explicit(5, 1) != proto_key_explicit(5, 0));
  assert_true(proto_key_explicit(5, 1) != proto_key_explicit(6, 0));
  assert_true(proto_key_explicit(INT32_MAX, UINT32_MAX) > 0); /* never an auto key */
  assert_true(proto_key_tag(proto_key_explicit(INT32_MAX, UINT32_MAX)) == INT32_MAX);
  assert_true(proto_key_use(proto_key_explicit(INT32_MAX, UINT32_MAX)) == UINT32_MAX);
  assert_true(proto_key_tag(proto_key_explicit(0, 7)) == 0);
  assert_true(proto_key_use(proto_key_explicit(0, 7)) == 7);
  assert_true(proto_key_auto(0) == -1);
  assert_true(proto_key_auto(41) == -42);
  assert_true(proto_key_tag(proto_key_auto(41)) == -42); /* as dredstat shows auto tags */
  assert_true(proto_key_use(proto_key_auto(41)) == 0);
}

static void test_counts(void **state) {
  dred_tagseq_t t = {0};
  (void)state;
  assert_int_equal(dred_tagseq_uses(&t, 3), 0);
  assert_int_equal(dred_tagseq_bump(&t, 3), DRED_OK);
  assert_int_equal(dred_tagseq_bump(&t, 3), DRED_OK);
  assert_int_equal(dred_tagseq_bump(&t, 0), DRED_OK);
  assert_int_equal(dred_tagseq_bump(&t, INT32_MAX), DRED_OK);
  assert_int_equal(dred_tagseq_uses(&t, 3), 2);
  assert_int_equal(dred_tagseq_uses(&t, 0), 1);
  assert_int_equal(dred_tagseq_uses(&t, INT32_MAX), 1);
  assert_int_equal(dred_tagseq_uses(&t, 4), 0);
  assert_int_equal(dred_tagseq_bump(&t, -1), DRED_ERR_ARG);
  assert_int_equal(dred_tagseq_uses(&t, -1), 0);
  assert_int_equal(dred_tagseq_bump(NULL, 1), DRED_ERR_ARG);
  dred_tagseq_free(&t);
  assert_int_equal(dred_tagseq_uses(&t, 3), 0);
  dred_tagseq_free(&t); /* twice is harmless */
}

/* Thousands of tags bumped at random, through many doublings: every count as a plain
 * array says. */
static void test_random_against_array(void **state) {
  enum { NTAGS = 20000, NOPS = 200000 };
  uint32_t *want = calloc(NTAGS, sizeof *want);
  dred_tagseq_t t = {0};
  unsigned seed = 12345;
  int i;
  (void)state;
  assert_non_null(want);
  for (i = 0; i < NOPS; i++) {
    int32_t tag;
    seed = seed * 1103515245u + 12345u;
    tag = (int32_t)((seed >> 8) % NTAGS) * 97; /* spread out, some collide in the hash */
    assert_int_equal(dred_tagseq_bump(&t, tag), DRED_OK);
    want[tag / 97]++;
  }
  for (i = 0; i < NTAGS; i++) assert_int_equal(dred_tagseq_uses(&t, i * 97), want[i]);
  assert_true(t.n <= NTAGS && t.n * 2 <= t.cap);
  dred_tagseq_free(&t);
  free(want);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_keys), cmocka_unit_test(test_counts),
                                     cmocka_unit_test(test_random_against_array)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
