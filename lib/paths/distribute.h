/*
 * distribute.h -- allreduce and bcast through dred-master (distribute.c): what the reduce
 * path does not do.
 */
#ifndef DRED_DISTRIBUTE_H
#define DRED_DISTRIBUTE_H

#include "../../common/proto.h"
#include "../engine/inst.h"

struct dred_rt;
typedef struct dred_rt dred_rt_t;

/* A bcast's announcement: READY (the root's carries the data if inline), then at a large
 * bcast's root the data as DATA. */
void dred_dist_announce_bcast(dred_rt_t *rt, dred_inst_t *in);
void dred_dist_on_push(dred_rt_t *rt, const proto_msg_t *m);
/* At every turn of the loop while rt->pushq holds instances: send the next pieces of their
 * results to dred-master, as the link drains.  Returns 1 if it sent any. */
int dred_dist_turn(dred_rt_t *rt);
void dred_dist_on_data(dred_rt_t *rt, const proto_msg_t *m);
/* A receiver's result buffer (`res`): recvbuf for a DIRECT layout, else a buffer of its
 * own unpacked into recvbuf at the end (dred_dist_finish).  NULL without memory (logged). */
char *dred_dist_result_buf(dred_inst_t *in);
/* END(OK) came: a receiver without its whole result cannot report success. */
int dred_dist_end_status(dred_inst_t *in, int status);
/* At the end: a receiver's result into recvbuf (PACKED, IMAGE), its buffer freed. */
int dred_dist_finish(dred_rt_t *rt, dred_inst_t *in, int status);
/* On the runtime thread, before an instance that ended OK is finished: 1 if its result
 * goes into recvbuf a part per turn first (a large PACKED or IMAGE one; queued, and
 * dred_dist_unpack_turn finishes it), 0 to finish it now. */
int dred_dist_unpack_defer(dred_rt_t *rt, dred_inst_t *in);
/* One part of the first queued unpack; finishes its instance after the last.  1 if it
 * did something. */
int dred_dist_unpack_turn(dred_rt_t *rt);

#endif /* DRED_DISTRIBUTE_H */
