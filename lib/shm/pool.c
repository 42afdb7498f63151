/*
 * pool.c -- see pool.h.
 */
#include "pool.h"

#include <stdlib.h>

typedef struct {
  dred_queue_t link;
  size_t off, len;
} pool_block_t;

static size_t pool_round(size_t len) { return (len + DRED_POOL_ALIGN - 1) & ~(size_t)(DRED_POOL_ALIGN - 1); }

int dred_pool_init(dred_pool_t *p, size_t size) {
  pool_block_t *b;
  if (p == NULL) return -1;
  dred_queue_init(&p->free_blocks);
  p->size = size & ~(size_t)(DRED_POOL_ALIGN - 1);
  p->used = 0;
  p->peak = 0;
  if (p->size == 0) return 0;
  if ((b = malloc(sizeof *b)) == NULL) return -1;
  b->off = 0;
  b->len = p->size;
  dred_queue_insert_tail(&p->free_blocks, &b->link);
  return 0;
}

void dred_pool_destroy(dred_pool_t *p) {
  dred_queue_t *q, *n;
  DRED_QUEUE_FOREACH_SAFE(q, n, &p->free_blocks) {
    dred_queue_remove(q);
    free(DRED_QUEUE_DATA(q, pool_block_t, link));
  }
}

int64_t dred_pool_alloc(dred_pool_t *p, size_t len) {
  dred_queue_t *q;
  if (p == NULL || len == 0) return -1;
  len = pool_round(len);
  DRED_QUEUE_FOREACH(q, &p->free_blocks) {
    pool_block_t *b = DRED_QUEUE_DATA(q, pool_block_t, link);
    if (b->len >= len) {
      size_t off = b->off;
      b->off += len;
      b->len -= len;
      if (b->len == 0) {
        dred_queue_remove(&b->link);
        free(b);
      }
      p->used += len;
      if (p->used > p->peak) p->peak = p->used;
      return (int64_t)off;
    }
  }
  return -1;
}

void dred_pool_free(dred_pool_t *p, int64_t off64, size_t len) {
  dred_queue_t *q;
  pool_block_t *prev = NULL, *next = NULL, *b;
  size_t off = (size_t)off64;

  if (p == NULL || off64 < 0 || len == 0) return;
  len = pool_round(len);
  p->used -= len;
  DRED_QUEUE_FOREACH(q, &p->free_blocks) {
    b = DRED_QUEUE_DATA(q, pool_block_t, link);
    if (b->off > off) {
      next = b;
      break;
    }
    prev = b;
  }
  if (prev != NULL && prev->off + prev->len == off) { /* grow the block before */
    prev->len += len;
    if (next != NULL && prev->off + prev->len == next->off) {
      prev->len += next->len;
      dred_queue_remove(&next->link);
      free(next);
    }
    return;
  }
  if (next != NULL && off + len == next->off) { /* grow the block after */
    next->off = off;
    next->len += len;
    return;
  }
  if ((b = malloc(sizeof *b)) == NULL) return; /* leaks the range; never crashes */
  b->off = off;
  b->len = len;
  if (next != NULL)
    dred_queue_insert_tail(&next->link, &b->link); /* insert before next */
  else
    dred_queue_insert_tail(&p->free_blocks, &b->link);
}
