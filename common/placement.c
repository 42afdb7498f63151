/*
 * placement.c -- the replica placement rule shared by libdred and dred-master (see
 * placement.h for the rule and why it lives in one place).
 */
#include "placement.h"

#include <stddef.h>

static uint32_t node(const uint32_t *node_of, const uint32_t *workers, uint32_t k) {
  return node_of != NULL ? node_of[workers[k]] : 0;
}

/* Where pass 0 (the other nodes' members) starts for member k: the r-th of them in
 * cyclic order from k+1, r being k's position among its own node's members, so that the
 * members of one node send their first copies to different holders.  *m: how many members
 * are on other nodes (0: pass 0 is empty). */
static uint32_t pass0_start(uint32_t n, const uint32_t *workers, const uint32_t *node_of,
                            uint32_t k, uint32_t home, uint32_t *m) {
  uint32_t r = 0, j, c, t;
  *m = 0;
  for (c = 0; c < n; c++) {
    if (node(node_of, workers, c) != home)
      (*m)++;
    else if (c < k)
      r++;
  }
  if (*m == 0) return k;
  t = r % *m;
  for (j = 1; j < n; j++) {
    c = (k + j) % n;
    if (node(node_of, workers, c) != home && t-- == 0) return c;
  }
  return k; /* not reached */
}

/* The j-th member of pass `pass`'s walk: pass 0 from s over every member, pass 1 from
 * k+1 over the others. */
static uint32_t walk(uint32_t n, uint32_t k, uint32_t s, uint32_t pass, uint32_t j) {
  return pass == 0 ? (s + j) % n : (k + 1 + j) % n;
}

uint32_t dred_place_nth(uint32_t n, const uint32_t *workers, const uint32_t *node_of,
                        uint32_t k, uint32_t i) {
  uint32_t home, pass, j, s, m;
  if (k >= n || workers == NULL) return n;
  home = node(node_of, workers, k);
  s = pass0_start(n, workers, node_of, k, home, &m);
  /* Pass 0 walks the other nodes' members, pass 1 the home node's: O(n) per call. */
  for (pass = 0; pass < 2; pass++) {
    for (j = 0; j + pass < n; j++) {
      uint32_t c = walk(n, k, s, pass, j);
      int same = node(node_of, workers, c) == home;
      if (same != (int)pass || c == k) continue;
      if (i-- == 0) return c;
    }
  }
  return n;
}

uint32_t dred_place_replicas(uint32_t n, const uint32_t *workers, const uint32_t *node_of,
                             const uint8_t *dead, uint32_t k, uint32_t want, uint32_t *out) {
  uint32_t got = 0, home, pass, j, s, m;
  if (k >= n || workers == NULL) return 0;
  home = node(node_of, workers, k);
  s = pass0_start(n, workers, node_of, k, home, &m);
  /* The same two passes as dred_place_nth, in one walk. */
  for (pass = 0; pass < 2 && got < want; pass++) {
    for (j = 0; j + pass < n && got < want; j++) {
      uint32_t c = walk(n, k, s, pass, j);
      int same = node(node_of, workers, c) == home;
      if (same != (int)pass || c == k || (dead != NULL && dead[workers[c]])) continue;
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
