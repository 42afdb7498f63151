/*
 * keymap.c -- the (group id, tag) hash map of keymap.h.
 *
 * Singly linked chains, new nodes at a chain's head.  Each node keeps its full hash, so a
 * doubling moves nodes without hashing again and a lookup compares keys only where the
 * hashes agree.  The slot array never shrinks: removal touches one chain and nothing else,
 * which is what lets an iteration remove the node it stands on.
 */
#include "keymap.h"

#include <stdlib.h>

#include "../include/dred_status.h"

#define MIN_SLOTS 16u

int dred_keymap_init(dred_keymap_t *m) {
  m->count = 0;
  m->slot = calloc(MIN_SLOTS, sizeof *m->slot);
  m->mask = m->slot != NULL ? MIN_SLOTS - 1 : 0;
  return m->slot != NULL ? DRED_OK : DRED_ERR_NOMEM;
}

void dred_keymap_free(dred_keymap_t *m) {
  free(m->slot);
  m->slot = NULL;
  m->mask = 0;
  m->count = 0;
}

/* Twice the slots.  Only an optimisation: without the memory the chains grow instead. */
static void grow(dred_keymap_t *m) {
  size_t nslots = (m->mask + 1) * 2, i;
  dred_keymap_node_t **ns = calloc(nslots, sizeof *ns);
  if (ns == NULL) return;
  for (i = 0; i <= m->mask; i++) {
    dred_keymap_node_t *e = m->slot[i], *next;
    for (; e != NULL; e = next) {
      next = e->next;
      e->next = ns[e->hash & (nslots - 1)];
      ns[e->hash & (nslots - 1)] = e;
    }
  }
  free(m->slot);
  m->slot = ns;
  m->mask = nslots - 1;
}

int dred_keymap_insert(dred_keymap_t *m, dred_keymap_node_t *n, uint64_t group, int64_t tag) {
  dred_keymap_node_t **head;
  if (m->slot == NULL && dred_keymap_init(m) != DRED_OK) return DRED_ERR_NOMEM;
  if (m->count > m->mask) grow(m);
  n->hash = dred_keymap_hash(group, tag);
  n->group = group;
  n->tag = tag;
  head = &m->slot[n->hash & m->mask];
  n->next = *head;
  *head = n;
  m->count++;
  return DRED_OK;
}

void dred_keymap_remove(dred_keymap_t *m, dred_keymap_node_t *n) {
  dred_keymap_node_t **p;
  if (m->slot == NULL) return;
  for (p = &m->slot[n->hash & m->mask]; *p != NULL; p = &(*p)->next) {
    if (*p == n) {
      *p = n->next;
      n->next = NULL;
      m->count--;
      return;
    }
  }
}

dred_keymap_node_t *dred_keymap_next_equal(const dred_keymap_node_t *n) {
  dred_keymap_node_t *e;
  for (e = n->next; e != NULL; e = e->next)
    if (e->hash == n->hash && e->group == n->group && e->tag == n->tag) return e;
  return NULL;
}

/* The first node in slots i and after, or NULL. */
static dred_keymap_node_t *first_from(const dred_keymap_t *m, size_t i) {
  if (m->slot == NULL) return NULL;
  for (; i <= m->mask; i++)
    if (m->slot[i] != NULL) return m->slot[i];
  return NULL;
}

dred_keymap_node_t *dred_keymap_first(const dred_keymap_t *m) { return first_from(m, 0); }

dred_keymap_node_t *dred_keymap_next(const dred_keymap_t *m, const dred_keymap_node_t *n) {
  return n->next != NULL ? n->next : first_from(m, (size_t)(n->hash & m->mask) + 1);
}
