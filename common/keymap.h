/*
 * keymap.h -- an intrusive hash map keyed by (group id, tag), the key of a reduction
 * (common/proto.h).
 *
 * The entry embeds a dred_keymap_node_t and the map stores pointers to nodes: it never
 * allocates or frees an entry, and a node carries its key and its hash.  Chaining, over a
 * slot array that doubles whenever the entries outnumber the slots, so insert, find and
 * remove take O(1) on average.  Several entries may share a key (the replica layer keeps
 * one held copy per member under a reduction's key): dred_keymap_find gives the first,
 * dred_keymap_next_equal the next.  A key of one number (a group id, a task id) is
 * (number, 0).
 *
 * A zeroed map (DRED_KEYMAP_INIT) is a valid empty one that allocates its slots at the
 * first insert; dred_keymap_init allocates them up front, after which insert never fails
 * (a doubling that finds no memory leaves the chains longer, nothing else).
 *
 * The iterations below survive the removal of the node they stand on, not of others, and
 * nothing may be inserted while one runs (a doubling moves every node).  Not thread-safe:
 * the caller holds its own lock.
 */
#ifndef DRED_KEYMAP_H
#define DRED_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct dred_keymap_node {
  struct dred_keymap_node *next; /* the slot's chain */
  uint64_t hash;                 /* dred_keymap_hash(group, tag) */
  uint64_t group;
  int64_t tag;
} dred_keymap_node_t;

typedef struct {
  dred_keymap_node_t **slot; /* NULL while the map has no slots */
  size_t mask;               /* slots - 1 (a power of two minus one) */
  size_t count;              /* entries */
} dred_keymap_t;

#define DRED_KEYMAP_INIT {NULL, 0, 0}

/* The entry of type `type` whose field `field` is the node `ptr`. */
#define DRED_KEYMAP_DATA(ptr, type, field) ((type *)((char *)(ptr) - offsetof(type, field)))

/* Every node of `m`, in no particular order; `nx` holds the next one, so the body may
 * remove `n`. */
#define DRED_KEYMAP_FOREACH_SAFE(n, nx, m)                                                \
  for ((n) = dred_keymap_first(m); (n) != NULL && ((nx) = dred_keymap_next((m), (n)), 1); \
       (n) = (nx))

/* Every node of `m` under key (group, tag); the body may remove `n`. */
#define DRED_KEYMAP_FOREACH_KEY(n, nx, m, group, tag) \
  for ((n) = dred_keymap_find((m), (group), (tag));   \
       (n) != NULL && ((nx) = dred_keymap_next_equal(n), 1); (n) = (nx))

/* splitmix64's finaliser over both halves of the key: consecutive tags and group ids
 * that differ in a few bits spread over every slot.  Inline, with dred_keymap_find: the
 * master looks up an instance, a group or a task for every message it takes. */
static inline uint64_t dred_keymap_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline uint64_t dred_keymap_hash(uint64_t group, int64_t tag) {
  return dred_keymap_mix64(group ^ dred_keymap_mix64((uint64_t)tag));
}

/* Allocate the slots now: DRED_OK or DRED_ERR_NOMEM (then `m` is a valid empty map). */
int dred_keymap_init(dred_keymap_t *m);
/* Free the slots (not the entries, which are the caller's): `m` is empty again. */
void dred_keymap_free(dred_keymap_t *m);

/* Link node `n` under (group, tag), beside any entries already there.  DRED_OK, or
 * DRED_ERR_NOMEM when the map has no slots and cannot get them (nothing changed). */
int dred_keymap_insert(dred_keymap_t *m, dred_keymap_node_t *n, uint64_t group, int64_t tag);
/* Unlink node `n`; a node that is not in `m` is left alone. */
void dred_keymap_remove(dred_keymap_t *m, dred_keymap_node_t *n);

/* The first node under (group, tag), or NULL. */
static inline dred_keymap_node_t *dred_keymap_find(const dred_keymap_t *m, uint64_t group,
                                                   int64_t tag) {
  uint64_t h;
  dred_keymap_node_t *e;
  if (m->slot == NULL) return NULL;
  h = dred_keymap_hash(group, tag);
  for (e = m->slot[h & m->mask]; e != NULL; e = e->next)
    if (e->hash == h && e->group == group && e->tag == tag) return e;
  return NULL;
}
/* The next node with the same key as `n`, or NULL. */
dred_keymap_node_t *dred_keymap_next_equal(const dred_keymap_node_t *n);

/* Iteration over every node: the first, then the one after `n` (NULL at the end). */
dred_keymap_node_t *dred_keymap_first(const dred_keymap_t *m);
dred_keymap_node_t *dred_keymap_next(const dred_keymap_t *m, const dred_keymap_node_t *n);

static inline size_t dred_keymap_count(const dred_keymap_t *m) { return m->count; }

#endif /* DRED_KEYMAP_H */
