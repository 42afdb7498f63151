/*
 * placement.c -- the replica placement rule shared by libdred and dred-master (see
 * placement.h for the rule and why it lives in one place).
 */
#include "placement.h"

#include <stddef.h>

static uint32_t node(const uint32_t *node_of, const uint32_t *workers, uint32_t k) {
  return node_of != NULL ? node_of[workers[k]] : 0;
}

uint32_t dred_place_nth(uint32_t n, const uint32_t *workers, const uint32_t *node_of,
                        uint32_t k, uint32_t i) {
  uint32_t home, pass, j;
  if (k >= n || workers == NULL) return n;
  home = node(node_of, workers, k);
  /* Pass 0 walks the other nodes' members, pass 1 the home node's: O(n) per call. */
  for (pass = 0; pass < 2; pass++) {
    for (j = 1; j < n; j++) {
      uint32_t c = (k + j) % n;
      int same = node(node_of, workers, c) == home;
      if (same != (int)pass) continue;
      if (i-- == 0) return c;
    }
  }
  return n;
}

uint32_t dred_place_replicas(uint32_t n, const uint32_t *workers, const uint32_t *node_of,
                             const uint8_t *dead, uint32_t k, uint32_t want, uint32_t *out) {
  uint32_t got = 0, home, pass, j;
  if (k >= n || workers == NULL) return 0;
  home = node(node_of, workers, k);
  /* The same two passes as dred_place_nth, in one walk. */
  for (pass = 0; pass < 2 && got < want; pass++) {
    for (j = 1; j < n && got < want; j++) {
      uint32_t c = (k + j) % n;
      int same = node(node_of, workers, c) == home;
      if (same != (int)pass || (dead != NULL && dead[workers[c]])) continue;
      out[got++] = workers[c];
    }
  }
  return got;
}

int dred_place_one_node(uint32_t n, const uint32_t *workers, const uint32_t *node_of) {
  uint32_t k;
  if (n == 0 || workers == NULL || node_of == NULL) return 1;
  for (k = 1; k < n; k++)
    if (node_of[workers[k]] != node_of[workers[0]]) return 0;
  return 1;
}
