/*
 * admit.h -- pool admission (admit.c): reductions wait for room in the pool, not on the
 * slow path.
 */
#ifndef DRED_ADMIT_H
#define DRED_ADMIT_H

#include <stdint.h>

#include "inst.h"

struct dred_rt;
typedef struct dred_rt dred_rt_t;

#define DRED_ADMIT_STALL_MS 500 /* nothing freed this long: the oldest waiting goes ahead */
/* Application thread, dred_dp_acc_early, before a non-root operand is copied in: reserve
 * what the reduction will hold in our pool.  1: go ahead (copy into the pool); 0: room
 * is short, or others wait already -- copy into private memory and wait (the caller sets
 * pool_wait).  `wait_ok` 0 reserves whatever the outcome (an operand already in place). */
int dred_admit_call(dred_rt_t *rt, dred_inst_t *in, int wait_ok);
/* Once the pool is set up (dred_dp_init). */
void dred_admit_init(dred_rt_t *rt);
/* Runtime thread: `in` allocated its first partial result (task_begin). */
void dred_admit_spent(dred_rt_t *rt, dred_inst_t *in);
/* Its reservation, or its place in the queue and its private copy, go (any thread, once
 * nobody else can see `in`, or the runtime thread). */
void dred_admit_release(dred_rt_t *rt, dred_inst_t *in);
/* Runtime thread, at announce: a waiting reduction joins the queue (1) instead. */
int dred_admit_defer(dred_rt_t *rt, dred_inst_t *in);
/* Runtime thread, once per turn: admit waiting reductions in order while room allows (or
 * the oldest after POOL_STALL_MS without a release, or all when `force`), each moved into
 * the pool and handed to `announce`.  Returns how many; *next_due_ns: when the oldest
 * would stall (uv_hrtime), or 0. */
int dred_admit_progress(dred_rt_t *rt, void (*announce)(dred_rt_t *, dred_inst_t *), int force,
                        uint64_t *next_due_ns);

#endif /* DRED_ADMIT_H */
