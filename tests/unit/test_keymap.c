/*
 * test_keymap.c -- the (group id, tag) hash map of common/keymap.c: an empty map, insert,
 * find and remove, several entries under one key, growth through many doublings checked
 * against a plain array, keys that share a chain, and iterations that remove the node
 * they stand on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../include/dred_status.h"
#include "../../common/keymap.h"

typedef struct {
  int id;
  int seen; /* times an iteration visited it */
  dred_keymap_node_t node;
} entry_t;

static entry_t *of(dred_keymap_node_t *n) { return n ? DRED_KEYMAP_DATA(n, entry_t, node) : NULL; }

static void test_empty(void **state) {
  dred_keymap_t m = DRED_KEYMAP_INIT;
  entry_t e = {0};
  (void)state;
  assert_null(dred_keymap_find(&m, 1, 2));
  assert_null(dred_keymap_first(&m));
  assert_int_equal(dred_keymap_count(&m), 0);
  dred_keymap_remove(&m, &e.node); /* not in it: left alone */
  dred_keymap_free(&m);
  assert_int_equal(dred_keymap_init(&m), DRED_OK);
  assert_null(dred_keymap_find(&m, 1, 2));
  assert_null(dred_keymap_first(&m));
  dred_keymap_remove(&m, &e.node);
  assert_int_equal(dred_keymap_count(&m), 0);
  dred_keymap_free(&m);
  dred_keymap_free(&m); /* twice is harmless */
}

static void test_insert_find_remove(void **state) {
  dred_keymap_t m = DRED_KEYMAP_INIT; /* slots come with the first insert */
  entry_t e[4] = {{.id = 0}, {.id = 1}, {.id = 2}, {.id = 3}};
  entry_t stranger = {.id = 9};
  (void)state;
  assert_int_equal(dred_keymap_insert(&m, &e[0].node, 7, 5), DRED_OK);
  assert_int_equal(dred_keymap_insert(&m, &e[1].node, 7, -1), DRED_OK); /* an auto key */
  assert_int_equal(dred_keymap_insert(&m, &e[2].node, 8, 5), DRED_OK);
  assert_int_equal(dred_keymap_insert(&m, &e[3].node, UINT64_MAX, INT64_MIN), DRED_OK);
  assert_int_equal(dred_keymap_count(&m), 4);
  assert_ptr_equal(of(dred_keymap_find(&m, 7, 5)), &e[0]);
  assert_ptr_equal(of(dred_keymap_find(&m, 7, -1)), &e[1]);
  assert_ptr_equal(of(dred_keymap_find(&m, 8, 5)), &e[2]);
  assert_ptr_equal(of(dred_keymap_find(&m, UINT64_MAX, INT64_MIN)), &e[3]);
  assert_int_equal(e[0].node.group, 7);
  assert_int_equal(e[0].node.tag, 5);
  /* half a key is no key */
  assert_null(dred_keymap_find(&m, 7, 6));
  assert_null(dred_keymap_find(&m, 9, 5));
  assert_null(dred_keymap_find(&m, 5, 7));
  assert_null(dred_keymap_next_equal(&e[0].node));

  dred_keymap_remove(&m, &e[0].node);
  assert_int_equal(dred_keymap_count(&m), 3);
  assert_null(dred_keymap_find(&m, 7, 5));
  assert_ptr_equal(of(dred_keymap_find(&m, 7, -1)), &e[1]);
  dred_keymap_remove(&m, &e[0].node); /* twice: left alone */
  stranger.node.hash = e[1].node.hash; /* in no map, though its hash names e[1]'s chain */
  dred_keymap_remove(&m, &stranger.node);
  assert_int_equal(dred_keymap_count(&m), 3);
  assert_ptr_equal(of(dred_keymap_find(&m, 7, -1)), &e[1]);
  /* and back in */
  assert_int_equal(dred_keymap_insert(&m, &e[0].node, 7, 5), DRED_OK);
  assert_ptr_equal(of(dred_keymap_find(&m, 7, 5)), &e[0]);
  dred_keymap_free(&m);
}

/* Several entries under one key, among others: find and next_equal give each exactly once,
 * and FOREACH_KEY may remove the one it stands on. */
static void test_duplicates(void **state) {
  enum { N = 40 };
  dred_keymap_t m = DRED_KEYMAP_INIT;
  entry_t e[N];
  dred_keymap_node_t *n, *nx;
  int i, count = 0;
  (void)state;
  for (i = 0; i < N; i++) {
    e[i].id = i;
    e[i].seen = 0;
    /* every third under (3, 3), the rest each under a key of its own */
    assert_int_equal(dred_keymap_insert(&m, &e[i].node, i % 3 ? (uint64_t)i : 3, i % 3 ? i : 3),
                     DRED_OK);
  }
  for (n = dred_keymap_find(&m, 3, 3); n != NULL; n = dred_keymap_next_equal(n)) of(n)->seen++;
  for (i = 0; i < N; i++) assert_int_equal(e[i].seen, i % 3 == 0 ? 1 : 0);
  /* remove every other one of them while walking the key */
  DRED_KEYMAP_FOREACH_KEY(n, nx, &m, 3, 3) {
    if (of(n)->id % 2 == 0) dred_keymap_remove(&m, n);
  }
  DRED_KEYMAP_FOREACH_KEY(n, nx, &m, 3, 3) {
    assert_true(of(n)->id % 3 == 0 && of(n)->id % 2 == 1);
    count++;
  }
  assert_int_equal(count, 7); /* 3, 9, ..., 39 */
  assert_int_equal(dred_keymap_count(&m), N - 7);
  /* then all of them */
  DRED_KEYMAP_FOREACH_KEY(n, nx, &m, 3, 3) dred_keymap_remove(&m, n);
  assert_null(dred_keymap_find(&m, 3, 3));
  assert_int_equal(dred_keymap_count(&m), N - 14);
  assert_ptr_equal(of(dred_keymap_find(&m, 4, 4)), &e[4]);
  dred_keymap_free(&m);
}

/* Keys whose hashes share their low bits share a chain while the map is small: each is
 * still found, removing one from the middle of the chain keeps the others, and they part
 * once the map grows. */
static void test_collisions(void **state) {
  enum { N = 12 };
  dred_keymap_t m;
  entry_t e[N];
  uint64_t group[N];
  int64_t tag = 0;
  int i, j = 0;
  (void)state;
  for (tag = 0; j < N; tag++) /* keys in slot 5 of 16 */
    if ((dred_keymap_hash(42, tag) & 15) == 5) group[j] = 42, e[j].id = (int)tag, j++;
  assert_int_equal(dred_keymap_init(&m), DRED_OK);
  for (i = 0; i < N; i++)
    assert_int_equal(dred_keymap_insert(&m, &e[i].node, group[i], e[i].id), DRED_OK);
  assert_int_equal(m.mask, 15); /* 12 entries fit 16 slots: no doubling yet */
  for (i = 0; i < N; i++) assert_ptr_equal(of(dred_keymap_find(&m, 42, e[i].id)), &e[i]);
  for (i = 0; i < N; i++) assert_null(dred_keymap_next_equal(&e[i].node));
  dred_keymap_remove(&m, &e[N / 2].node);
  assert_null(dred_keymap_find(&m, 42, e[N / 2].id));
  for (i = 0; i < N; i++)
    if (i != N / 2) assert_ptr_equal(of(dred_keymap_find(&m, 42, e[i].id)), &e[i]);
  /* enough others to double: the colliding keys are all still found */
  {
    entry_t more[64];
    for (i = 0; i < 64; i++)
      assert_int_equal(dred_keymap_insert(&m, &more[i].node, 43, i), DRED_OK);
    assert_true(m.mask + 1 >= dred_keymap_count(&m));
    for (i = 0; i < N; i++)
      if (i != N / 2) assert_ptr_equal(of(dred_keymap_find(&m, 42, e[i].id)), &e[i]);
    for (i = 0; i < 64; i++) assert_ptr_equal(of(dred_keymap_find(&m, 43, i)), &more[i]);
  }
  dred_keymap_free(&m);
}

/* 100000 keys (groups x tags, auto and explicit, with duplicates) through many doublings,
 * removals at random, checked against the array that holds the entries; then every node
 * visited exactly once by an iteration, and an iteration that empties the map. */
static void test_many_against_array(void **state) {
  enum { N = 100000 };
  dred_keymap_t m = DRED_KEYMAP_INIT;
  entry_t *e = calloc(N, sizeof *e);
  uint8_t *in = calloc(N, 1);
  dred_keymap_node_t *n, *nx;
  unsigned seed = 2024;
  size_t live = 0, visited = 0;
  int i;
  (void)state;
  assert_non_null(e);
  assert_non_null(in);
  /* entries 2q and 2q + 1 share key q */
#define GROUP(i) ((uint64_t)((i) / 2 % 997) * 0x100000001ull)
#define TAG(i) ((i) / 2 % 2 ? -1 - (int64_t)((i) / 2 / 997) : (int64_t)((i) / 2 / 997) << 31 | 5)
  for (i = 0; i < N; i++) {
    e[i].id = i;
    assert_int_equal(dred_keymap_insert(&m, &e[i].node, GROUP(i), TAG(i)), DRED_OK);
    in[i] = 1;
    live++;
    assert_true(m.mask + 1 >= dred_keymap_count(&m)); /* doubled in time */
  }
  assert_int_equal(dred_keymap_count(&m), N);
  for (i = 0; i < N; i++) { /* each key holds exactly its own entries */
    int hits = 0, all = 0;
    for (n = dred_keymap_find(&m, GROUP(i), TAG(i)); n != NULL; n = dred_keymap_next_equal(n)) {
      assert_int_equal(of(n)->id / 2, i / 2);
      hits += of(n)->id == i;
      all++;
    }
    assert_int_equal(hits, 1);
    assert_int_equal(all, 2);
  }
  for (i = 0; i < N / 2; i++) { /* remove at random */
    int k;
    seed = seed * 1103515245u + 12345u;
    k = (int)((seed >> 8) % N);
    if (!in[k]) continue;
    dred_keymap_remove(&m, &e[k].node);
    in[k] = 0;
    live--;
  }
  assert_int_equal(dred_keymap_count(&m), live);
  for (i = 0; i < N; i++) {
    int found = 0;
    for (n = dred_keymap_find(&m, GROUP(i), TAG(i)); n != NULL; n = dred_keymap_next_equal(n))
      found += of(n)->id == i;
    assert_int_equal(found, in[i]);
  }
  DRED_KEYMAP_FOREACH_SAFE(n, nx, &m) {
    of(n)->seen++;
    visited++;
  }
  assert_int_equal(visited, live);
  for (i = 0; i < N; i++) assert_int_equal(e[i].seen, in[i]);
  /* remove as we go: every node still visited once, and the map ends empty */
  visited = 0;
  DRED_KEYMAP_FOREACH_SAFE(n, nx, &m) {
    of(n)->seen++;
    visited++;
    dred_keymap_remove(&m, n);
  }
  assert_int_equal(visited, live);
  for (i = 0; i < N; i++) assert_int_equal(e[i].seen, 2 * in[i]);
  assert_int_equal(dred_keymap_count(&m), 0);
  assert_null(dred_keymap_first(&m));
#undef GROUP
#undef TAG
  dred_keymap_free(&m);
  free(in);
  free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_insert_find_remove),
      cmocka_unit_test(test_duplicates),
      cmocka_unit_test(test_collisions),
      cmocka_unit_test(test_many_against_array),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
