/*
 * tagseq.c -- per-group use counts of explicit tags (see tagseq.h for why they exist).
 *
 * Linear probing over a power-of-two table kept at most half full, keyed by tag + 1 so
 * that 0 marks an empty slot; entries are never removed, so no tombstones are needed.
 */
#include "tagseq.h"

#include <stdlib.h>

#include "../include/dred_status.h"

static size_t slot_of(uint32_t key, size_t cap) {
  uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 32) & (cap - 1);
}

/* The slot holding `key`, or the empty slot where it would go. */
static size_t probe(const uint32_t *keys, size_t cap, uint32_t key) {
  size_t i = slot_of(key, cap);
  while (keys[i] != 0 && keys[i] != key) i = (i + 1) & (cap - 1);
  return i;
}

uint32_t dred_tagseq_uses(const dred_tagseq_t *t, int32_t tag) {
  size_t i;
  if (t == NULL || tag < 0 || t->cap == 0) return 0;
  i = probe(t->keys, t->cap, (uint32_t)tag + 1u);
  return t->keys[i] != 0 ? t->uses[i] : 0;
}

static int grow(dred_tagseq_t *t) {
  size_t cap = t->cap ? t->cap * 2 : 16, i;
  uint32_t *keys = calloc(cap, sizeof *keys), *uses = calloc(cap, sizeof *uses);
  if (keys == NULL || uses == NULL) {
    free(keys);
    free(uses);
    return DRED_ERR_NOMEM;
  }
  for (i = 0; i < t->cap; i++) {
    size_t j;
    if (t->keys[i] == 0) continue;
    j = probe(keys, cap, t->keys[i]);
    keys[j] = t->keys[i];
    uses[j] = t->uses[i];
  }
  free(t->keys);
  free(t->uses);
  t->keys = keys;
  t->uses = uses;
  t->cap = cap;
  return DRED_OK;
}

int dred_tagseq_bump(dred_tagseq_t *t, int32_t tag) {
  uint32_t key;
  size_t i;
  if (t == NULL || tag < 0) return DRED_ERR_ARG;
  key = (uint32_t)tag + 1u;
  if (t->cap != 0) {
    i = probe(t->keys, t->cap, key);
    if (t->keys[i] == key) {
      t->uses[i]++;
      return DRED_OK;
    }
  }
  if ((t->n + 1) * 2 > t->cap && grow(t) != DRED_OK) return DRED_ERR_NOMEM;
  i = probe(t->keys, t->cap, key);
  t->keys[i] = key;
  t->uses[i] = 1;
  t->n++;
  return DRED_OK;
}

void dred_tagseq_free(dred_tagseq_t *t) {
  if (t == NULL) return;
  free(t->keys);
  free(t->uses);
  t->keys = t->uses = NULL;
  t->cap = t->n = 0;
}
