/*
 * nodemem.h -- the node's memory budget for reductions in flight (nodemem.c).
 */
#ifndef DRED_NODEMEM_H
#define DRED_NODEMEM_H

#include <stdint.h>

struct dred_rt;
typedef struct dred_rt dred_rt_t;

/* nodemem.c: the node's memory budget.  init/finalize are collective over the node (after
 * the pool); take returns 0, or -1 when the node's reductions in flight would exceed
 * DRED_NODE_MEM_MB (then *total says how much they hold); give returns what take took;
 * on_failed takes a dead node peer's share off the total. */
void dred_nodemem_init(dred_rt_t *rt);
void dred_nodemem_finalize(dred_rt_t *rt, int collective);
int dred_nodemem_take(dred_rt_t *rt, uint64_t bytes, uint64_t *total);
void dred_nodemem_give(dred_rt_t *rt, uint64_t bytes);
void dred_nodemem_on_failed(dred_rt_t *rt, uint32_t w);

#endif /* DRED_NODEMEM_H */
