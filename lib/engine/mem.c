/*
 * mem.c -- dred_alloc_mem / dred_free_mem: application memory in the node's shared pool.
 *
 * What for.  A member killed while dred_ireduce copies its operand out of the
 * application's private buffer loses it: until the copy is in shared memory the bytes
 * exist only in the dying process, and no replica can save them (seed 002, eq. 5).  Data
 * that lives in shared memory from the start can be saved.  dred_alloc_mem hands the
 * application a block of this process's pool -- the MPI shared-memory window segment
 * every node peer maps (window.c) -- and a dred_ireduce whose sendbuf lies in such a
 * block makes no copy: the block itself is the operand node peers combine from, the
 * replica snapshot copies are taken from, and what the snapshot directory (snapdir.c)
 * lists before the call returns.  A kill inside or right after the call loses nothing
 * while the node lives.
 *
 * How.  A block is an ordinary lib/shm/pool.c allocation, taken and returned under
 * rt->pool_mu like the runtime's own buffers (application threads and the runtime thread
 * both allocate).  Each block has a record on rt->memblks (also under pool_mu): its
 * offset, its length, how many users it has and whether the application freed it.  A
 * reduction that reads a block in place (dred_mem_borrow) counts as a user until its
 * instance is released, and so does the replica snapshot taken from it until its copies
 * are done (dred_mem_ref / dred_mem_unref).  dred_free_mem of a block still in use is
 * deferred, as MPI_Op_free is for a pending reduction (lifetime.c): the call returns
 * DRED_OK, the pointer is dead for the application at once, and the pool block goes back
 * when its last user lets go -- never reused under a reader's feet.  Lookups walk the
 * record list: a handful of blocks per process is the expected use; a pointer outside the
 * pool segment is rejected without a walk.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../common/log.h"
#include "api.h"
#include "mem.h"
#include "runtime.h"
#include "snapdir.h"

struct dred_memblk {
  dred_queue_t link; /* rt->memblks (pool_mu) */
  int64_t off;       /* the pool block: offset in our segment (past the directory head) */
  size_t alen;       /* its length, as dred_pool_alloc got it and gets it back */
  int64_t uoff;      /* the application's bytes: offset of *ptr (64-byte aligned address) */
  size_t len;        /* as asked */
  unsigned users;    /* reductions and snapshots reading it in place */
  int freed;         /* dred_free_mem was called; returned to the pool at users == 0 */
};

void dred_mem_init(dred_rt_t *rt) { dred_queue_init(&rt->memblks); }

/* Under pool_mu: give the block back to the pool and forget it. */
static void blk_release_locked(dred_rt_t *rt, dred_memblk_t *b) {
  dred_queue_remove(&b->link);
  dred_pool_free(&rt->pool, b->off - (int64_t)DRED_SNAPDIR_BYTES, b->alen);
  dred_admission_freed(&rt->admission, uv_hrtime()); /* room for those waiting (admit.c) */
  rt->nmemblks--;
  free(b);
}

void dred_mem_finalize(dred_rt_t *rt) {
  dred_queue_t *q;
  if (rt->memblks.next == NULL) return; /* never initialised */
  if (rt->mem_borrows > 0)
    DRED_INFO("%llu operand(s) read in place from dred_alloc_mem blocks (no copy)",
              (unsigned long long)rt->mem_borrows);
  while ((q = dred_queue_head(&rt->memblks)) != NULL) {
    dred_queue_remove(q);
    free(DRED_QUEUE_DATA(q, dred_memblk_t, link));
  }
  rt->nmemblks = 0;
}

int dred_alloc_mem(size_t size, void **ptr) {
  dred_rt_t *rt;
  dred_memblk_t *b;
  int64_t off;
  size_t skew;
  int rc;

  if (ptr == NULL) {
    DRED_ERROR("dred_alloc_mem: ptr is NULL");
    return DRED_ERR_ARG;
  }
  *ptr = NULL;
  if ((rt = dred_api_rt("dred_alloc_mem", &rc)) == NULL) return rc;
  if (size == 0) {
    DRED_ERROR("dred_alloc_mem: size 0");
    return DRED_ERR_ARG;
  }
  if (!dred_snapdir_usable(rt)) {
    DRED_ERROR("dred_alloc_mem: this process has no shared-memory pool (DRED_POOL_MB=0)");
    return DRED_ERR_NOMEM;
  }
  /* Pool offsets are multiples of DRED_POOL_ALIGN, but the segment itself need not be (a
   * one-process node gets heap memory from MPICH): the block starts `skew` bytes in, so
   * the address the application gets is aligned. */
  skew = (DRED_POOL_ALIGN - (uintptr_t)(rt->pool_base + DRED_SNAPDIR_BYTES) % DRED_POOL_ALIGN) %
         DRED_POOL_ALIGN;
  /* Bounded before the allocator rounds it (a size near SIZE_MAX would wrap). */
  if (size > rt->pool.size || size + skew > rt->pool.size) {
    DRED_ERROR("dred_alloc_mem: %zu bytes exceed the whole shared pool (%zu MiB, DRED_POOL_MB)",
               size, rt->pool.size >> 20);
    return DRED_ERR_NOMEM;
  }
  if ((b = calloc(1, sizeof *b)) == NULL) {
    DRED_ERROR("dred_alloc_mem: out of memory for the block's record");
    return DRED_ERR_NOMEM;
  }
  uv_mutex_lock(&rt->pool_mu);
  off = dred_pool_alloc(&rt->pool, size + skew);
  if (off >= 0) {
    b->off = off + (int64_t)DRED_SNAPDIR_BYTES;
    b->alen = size + skew;
    b->uoff = b->off + (int64_t)skew;
    b->len = size;
    dred_queue_insert_tail(&rt->memblks, &b->link);
    rt->nmemblks++;
  }
  {
    size_t used = rt->pool.used, total = rt->pool.size;
    uv_mutex_unlock(&rt->pool_mu);
    if (off < 0) {
      free(b);
      DRED_ERROR("dred_alloc_mem: %zu bytes do not fit in the shared pool (%zu of %zu KiB in "
                 "use by reductions and blocks; raise DRED_POOL_MB)", size, used >> 10,
                 total >> 10);
      return DRED_ERR_NOMEM;
    }
  }
  *ptr = rt->pool_base + b->uoff;
  DRED_DEBUG("dred_alloc_mem: %zu bytes at pool offset %lld", size, (long long)b->uoff);
  return DRED_OK;
}

int dred_free_mem(void *ptr) {
  dred_rt_t *rt;
  dred_queue_t *q;
  dred_memblk_t *b = NULL;
  int rc, was_freed = 0, waiting;
  unsigned users = 0;

  if (ptr == NULL) {
    DRED_ERROR("dred_free_mem: ptr is NULL");
    return DRED_ERR_ARG;
  }
  if ((rt = dred_api_rt("dred_free_mem", &rc)) == NULL) return rc;
  if (!dred_snapdir_usable(rt) || (char *)ptr < rt->pool_base ||
      (char *)ptr >= rt->pool_base + rt->pool_size) {
    DRED_ERROR("dred_free_mem: %p was not allocated by dred_alloc_mem (outside this process's "
               "shared pool)", ptr);
    return DRED_ERR_ARG;
  }
  uv_mutex_lock(&rt->pool_mu);
  DRED_QUEUE_FOREACH(q, &rt->memblks) {
    dred_memblk_t *c = DRED_QUEUE_DATA(q, dred_memblk_t, link);
    if (rt->pool_base + c->uoff == (char *)ptr) {
      b = c;
      break;
    }
  }
  if (b != NULL && !(was_freed = b->freed)) {
    b->freed = 1;
    users = b->users;
    if (users == 0) blk_release_locked(rt, b);
  }
  waiting = b != NULL && !was_freed && users == 0 && rt->admission.nwaiting > 0;
  uv_mutex_unlock(&rt->pool_mu);
  if (waiting) uv_async_send(&rt->wake); /* reductions wait for that room (admit.c) */
  if (b == NULL) {
    DRED_ERROR("dred_free_mem: %p is not the start of a block from dred_alloc_mem (already "
               "freed, or a pointer inside a block)", ptr);
    return DRED_ERR_ARG;
  }
  if (was_freed) {
    DRED_ERROR("dred_free_mem: %p freed twice", ptr);
    return DRED_ERR_ARG;
  }
  if (users > 0)
    DRED_DEBUG("dred_free_mem: %p still read by %u reduction(s)/snapshot(s): returned to the "
               "pool when they are done", ptr, users);
  return DRED_OK;
}

int dred_mem_borrow(dred_rt_t *rt, const void *p, size_t len, dred_memblk_t **blk,
                    int64_t *pool_off) {
  const char *c = p;
  dred_queue_t *q;
  int found = -1;
  *blk = NULL;
  if (len == 0 || !dred_snapdir_usable(rt) || c < rt->pool_base ||
      c >= rt->pool_base + rt->pool_size)
    return -1; /* the common case, decided without the lock */
  uv_mutex_lock(&rt->pool_mu);
  DRED_QUEUE_FOREACH(q, &rt->memblks) {
    dred_memblk_t *b = DRED_QUEUE_DATA(q, dred_memblk_t, link);
    const char *s = rt->pool_base + b->uoff;
    if (c < s || c >= s + b->len) continue;
    /* wholly inside a live block: read it in place */
    if (!b->freed && len <= (size_t)(s + b->len - c)) {
      b->users++;
      rt->mem_borrows++;
      *blk = b;
      *pool_off = (int64_t)(c - rt->pool_base);
      found = 0;
    }
    break;
  }
  uv_mutex_unlock(&rt->pool_mu);
  return found;
}

void dred_mem_ref(dred_rt_t *rt, dred_memblk_t *b) {
  if (b == NULL) return;
  uv_mutex_lock(&rt->pool_mu);
  b->users++;
  uv_mutex_unlock(&rt->pool_mu);
}

void dred_mem_unref(dred_rt_t *rt, dred_memblk_t *b) {
  if (b == NULL) return;
  uv_mutex_lock(&rt->pool_mu);
  if (--b->users == 0 && b->freed) blk_release_locked(rt, b);
  uv_mutex_unlock(&rt->pool_mu);
}
