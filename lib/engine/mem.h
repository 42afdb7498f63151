/*
 * mem.h -- application blocks in the shared pool (dred_alloc_mem, mem.c): operands read
 * in place (zero copy).
 */
#ifndef DRED_MEM_H
#define DRED_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "inst.h"

struct dred_rt;
typedef struct dred_rt dred_rt_t;

void dred_mem_init(dred_rt_t *rt);     /* dred_dp_init, once the pool exists */
void dred_mem_finalize(dred_rt_t *rt); /* forget every block (the pool goes) */
/* If [p, p+len) lies wholly inside a live block: count a user on it, set *blk and
 * *pool_off (our segment's offset of p) and return 0; else -1. */
int dred_mem_borrow(dred_rt_t *rt, const void *p, size_t len, dred_memblk_t **blk,
                    int64_t *pool_off);
void dred_mem_ref(dred_rt_t *rt, dred_memblk_t *b);   /* one more user; NULL: nothing */
void dred_mem_unref(dred_rt_t *rt, dred_memblk_t *b); /* last user of a freed block: freed */

#endif /* DRED_MEM_H */
