/*
 * queue.h -- intrusive circular doubly-linked queue.
 *
 * Embed a `dred_queue_t` in a struct, link it into a head, recover the struct with
 * DRED_QUEUE_DATA.  No allocation, O(1) insert/remove, an element can unlink itself
 * without knowing which queue holds it.  Used for message queues, task queues, send lists.
 */
#ifndef DRED_QUEUE_H
#define DRED_QUEUE_H

#include <stddef.h>

typedef struct dred_queue {
  struct dred_queue *next;
  struct dred_queue *prev;
} dred_queue_t;

#define DRED_QUEUE_DATA(ptr, type, field) ((type *)((char *)(ptr) - offsetof(type, field)))

#define DRED_QUEUE_FOREACH(q, h) for ((q) = (h)->next; (q) != (h); (q) = (q)->next)

/* Safe against removal of `q` inside the loop body. */
#define DRED_QUEUE_FOREACH_SAFE(q, n, h) \
  for ((q) = (h)->next, (n) = (q)->next; (q) != (h); (q) = (n), (n) = (q)->next)

static inline void dred_queue_init(dred_queue_t *h) { h->next = h->prev = h; }

static inline int dred_queue_empty(const dred_queue_t *h) { return h->next == h; }

static inline dred_queue_t *dred_queue_head(const dred_queue_t *h) {
  return h->next == h ? NULL : h->next;
}

static inline void dred_queue_insert_tail(dred_queue_t *h, dred_queue_t *q) {
  q->next = h;
  q->prev = h->prev;
  q->prev->next = q;
  h->prev = q;
}

static inline void dred_queue_insert_head(dred_queue_t *h, dred_queue_t *q) {
  q->next = h->next;
  q->prev = h;
  q->next->prev = q;
  h->next = q;
}

static inline void dred_queue_remove(dred_queue_t *q) {
  q->prev->next = q->next;
  q->next->prev = q->prev;
  q->next = q->prev = q;
}

static inline size_t dred_queue_len(const dred_queue_t *h) {
  size_t n = 0;
  const dred_queue_t *q;
  for (q = h->next; q != h; q = q->next) n++;
  return n;
}

#endif /* DRED_QUEUE_H */
