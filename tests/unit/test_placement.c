/*
 * test_placement.c -- the replica placement rule of common/placement.c (CMocka).
 *
 * Why: libdred places copies with it and dred-master walks it to find them; a copy on the
 * member's own node dies with the node, so the rule must put the first copy on another
 * node whenever the group spans nodes, skip dead workers, and fall back to plain cyclic
 * order on one node.  Each case states the layout and the expected holders.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/placement.h"

/* Workers 1..9; node_of by worker rank (index 0: the master). */
static const uint32_t W9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

/* One node: the next members in cyclic order, as before node awareness. */
static void test_one_node_is_cyclic(void **state) {
  uint32_t out[4], nodes[10] = {0};
  (void)state;
  assert_int_equal(dred_place_replicas(4, W9, nodes, NULL, 2, 2, out), 2);
  assert_int_equal(out[0], 4); /* member 3 */
  assert_int_equal(out[1], 1); /* member 0, wrapping */
  assert_int_equal(dred_place_replicas(4, W9, NULL, NULL, 3, 3, out), 3); /* NULL: one node */
  assert_int_equal(out[0], 1);
  assert_int_equal(out[1], 2);
  assert_int_equal(out[2], 3);
  assert_int_equal(dred_place_one_node(4, W9, nodes), 1);
  assert_int_equal(dred_place_one_node(4, W9, NULL), 1);
}

/* a:3,b:3,c:3 with the master first on a: workers 1-2 on a, 3-5 on b, 6-8 on c.  The first
 * copy goes to the next member on another node, even when node peers come first. */
static void test_first_copy_crosses_nodes(void **state) {
  uint32_t out[4], nodes[10] = {0, 0, 0, 3, 3, 3, 6, 6, 6, 0};
  (void)state;
  assert_int_equal(dred_place_one_node(8, W9, nodes), 0);
  assert_int_equal(dred_place_replicas(8, W9, nodes, NULL, 2, 1, out), 1); /* worker 3, b */
  assert_int_equal(out[0], 6); /* members 3, 4 share b: member 5 (worker 6, c) */
  assert_int_equal(dred_place_replicas(8, W9, nodes, NULL, 5, 1, out), 1); /* worker 6, c */
  assert_int_equal(out[0], 1); /* first on c: wraps to member 0 on a */
  assert_int_equal(dred_place_replicas(8, W9, nodes, NULL, 7, 1, out), 1); /* worker 8, c */
  assert_int_equal(out[0], 3); /* third on c: the third member on another node, member 2 */
  assert_int_equal(dred_place_replicas(8, W9, nodes, NULL, 0, 1, out), 1); /* worker 1, a */
  assert_int_equal(out[0], 3); /* member 1 is on a too: member 2 on b */
  /* more copies: the other nodes' members first, then the home node's */
  assert_int_equal(dred_place_replicas(8, W9, nodes, NULL, 2, 4, out), 4);
  assert_int_equal(out[0], 6);
  assert_int_equal(out[1], 7);
  assert_int_equal(out[2], 8);
  assert_int_equal(out[3], 1);
}

/* One node's first copies go to different holders: in a:3,b:3,c:3 (8 members) and in
 * a:2,b:2,c:2,d:3 (9 members, workers 1..9) no worker holds more than two first copies, and
 * every first copy is on another node. */
static void test_first_copies_spread(void **state) {
  uint32_t abc[10] = {0, 0, 0, 3, 3, 3, 6, 6, 6, 0}, abcd[10] = {0, 0, 2, 2, 4, 4, 6, 6, 6, 6};
  uint32_t *layouts[2] = {abc, abcd}, sizes[2] = {8, 9}, l, k, out[1];
  (void)state;
  for (l = 0; l < 2; l++) {
    unsigned held[10] = {0};
    for (k = 0; k < sizes[l]; k++) {
      assert_int_equal(dred_place_replicas(sizes[l], W9, layouts[l], NULL, k, 1, out), 1);
      assert_int_not_equal(layouts[l][out[0]], layouts[l][W9[k]]);
      held[out[0]]++;
    }
    for (k = 0; k < 10; k++) assert_true(held[k] <= 2);
  }
}

/* Dead workers are skipped; when every other node is dead the copy stays on the node. */
static void test_dead_are_skipped(void **state) {
  uint32_t out[4], nodes[10] = {0, 0, 0, 3, 3, 3, 6, 6, 6, 0};
  uint8_t dead[10] = {0};
  (void)state;
  dead[6] = 1; /* member 5 */
  assert_int_equal(dred_place_replicas(8, W9, nodes, dead, 2, 1, out), 1);
  assert_int_equal(out[0], 7); /* the next live member on another node */
  dead[7] = dead[8] = dead[1] = dead[2] = 1; /* nodes a and c gone */
  assert_int_equal(dred_place_replicas(8, W9, nodes, dead, 2, 1, out), 1);
  assert_int_equal(out[0], 4); /* only b is left: its next member */
  dead[4] = dead[5] = 1;
  assert_int_equal(dred_place_replicas(8, W9, nodes, dead, 2, 1, out), 0); /* nobody */
}

/* dred_place_nth walks the same order as dred_place_replicas with nobody dead, and ends
 * with n past the last candidate or for a bad member. */
static void test_nth_matches_replicas(void **state) {
  uint32_t nodes[10] = {0, 0, 5, 0, 5, 5, 0, 9, 9, 0}; /* uneven and interleaved */
  uint32_t out[8], k, i, n = 9;
  (void)state;
  for (k = 0; k < n; k++) {
    assert_int_equal(dred_place_replicas(n, W9, nodes, NULL, k, n - 1, out), n - 1);
    for (i = 0; i < n - 1; i++) {
      uint32_t c = dred_place_nth(n, W9, nodes, k, i);
      assert_true(c < n);
      assert_int_not_equal(c, k);
      assert_int_equal(W9[c], out[i]);
    }
    assert_int_equal(dred_place_nth(n, W9, nodes, k, n - 1), n);
  }
  assert_int_equal(dred_place_nth(n, W9, nodes, n, 0), n);
  assert_int_equal(dred_place_nth(1, W9, nodes, 0, 0), 1); /* a single member has no peer */
  assert_int_equal(dred_place_replicas(1, W9, nodes, NULL, 0, 2, out), 0);
}

/* A group given in another order than worker ranks: the rule follows group order. */
static void test_group_order(void **state) {
  const uint32_t w[4] = {7, 2, 5, 3};
  uint32_t out[2], nodes[10] = {0, 0, 1, 2, 0, 1, 0, 2, 0, 0};
  (void)state;
  /* member 0 = worker 7 (node 2); next members: 2 (node 1) -> other node */
  assert_int_equal(dred_place_replicas(4, w, nodes, NULL, 0, 1, out), 1);
  assert_int_equal(out[0], 2);
  /* member 3 = worker 3 (node 2), second on its node (member 0 is there too): the second
   * member elsewhere after it, member 2 */
  assert_int_equal(dred_place_replicas(4, w, nodes, NULL, 3, 1, out), 1);
  assert_int_equal(out[0], 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_node_is_cyclic),
      cmocka_unit_test(test_first_copy_crosses_nodes),
      cmocka_unit_test(test_first_copies_spread),
      cmocka_unit_test(test_dead_are_skipped),
      cmocka_unit_test(test_nth_matches_replicas),
      cmocka_unit_test(test_group_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
