/*
 * lanepath.h -- the meeting place's fast lane as libdred uses it (lanepath.c, over
 * lib/shm/fast.c): small collectives of a one-node group decided on the calling thread.
 */
#ifndef DRED_LANEPATH_H
#define DRED_LANEPATH_H

#include "../engine/inst.h"

struct dred_rt;
typedef struct dred_rt dred_rt_t;

/* A blocking small reduce, allreduce or bcast of a one-node group, on the calling thread,
 * `in` complete but not inserted, rt->lock not held.  Posts and waits until it can
 * decide: 1 if decided there (in->meet_status: DRED_OK with the operands it reads taken,
 * or MISMATCH; end it with dred_lanepath_finish); 0 if the call goes on the usual way
 * (not eligible, a member went the slot's way, or the service died). */
int dred_lanepath_call(dred_rt_t *rt, dred_inst_t *in);
/* The ack of the calling thread's last collective decided in the fast lane, if not given
 * yet: the blocking call gives it as it returns. */
void dred_lanepath_done(void);
/* `in`, decided by dred_lanepath_call and seen by nobody else: its fold or copy from the
 * operands taken, then its end (dred_rt_inst_end_unseen).  Returns the call's status;
 * `in` and its future are freed. */
int dred_lanepath_finish(dred_rt_t *rt, dred_inst_t *in);
/* A nonblocking small reduce or allreduce of a one-node group posts in the fast lane (its
 * future's waits, and the runtime thread's turns, settle it there), on the calling
 * thread, `in` complete but not inserted, rt->lock not held: 1 if posted (then, under
 * rt->lock, dred_lanepath_join before it is inserted -- or, should the service have died
 * meanwhile, dred_lanepath_cancel before it is discarded); 0 if the call goes on the usual
 * way (not eligible, or the lane said no). */
int dred_lanepath_post(dred_rt_t *rt, dred_inst_t *in);
void dred_lanepath_join(dred_rt_t *rt, dred_inst_t *in);
void dred_lanepath_cancel(dred_inst_t *in);

#endif
