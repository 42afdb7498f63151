/*
 * pool.h -- first-fit offset allocator for a worker's shared-memory segment.
 *
 * Each worker exposes one MPI shared-memory window (its "pool"); partial results live in
 * it so same-node executors combine straight from the provider's memory.  The allocator
 * hands out offsets, not pointers (peers map the segment at other addresses).  Free
 * blocks are kept sorted by offset in an intrusive list and coalesced on free; the number
 * of live blocks is small (one per reduction in flight), so first fit is plenty.
 */
#ifndef DRED_POOL_H
#define DRED_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/queue.h"

#define DRED_POOL_ALIGN 64u

typedef struct {
  size_t size;
  size_t used;
  size_t peak;              /* the most `used` has been */
  dred_queue_t free_blocks; /* sorted by offset */
} dred_pool_t;

int dred_pool_init(dred_pool_t *p, size_t size);
void dred_pool_destroy(dred_pool_t *p);
/* Offset of a block of at least `len` bytes, or -1 if none is free (or len == 0). */
int64_t dred_pool_alloc(dred_pool_t *p, size_t len);
/* Return a block; `len` must be the length it was allocated with. */
void dred_pool_free(dred_pool_t *p, int64_t off, size_t len);

#endif /* DRED_POOL_H */
