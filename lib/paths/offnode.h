/*
 * offnode.h -- the off-node hand-over (offnode.c): in a group spanning nodes, dred_ireduce
 * returns once a copy of the operand is held on another node.  Its functions are named
 * dred_handover_* like the beacon's (handover.h): both are the operand's hand-over.
 */
#ifndef DRED_OFFNODE_H
#define DRED_OFFNODE_H

#include <stdint.h>

#include "../../common/queue.h"
#include "../engine/runtime.h"

/* A dred_ireduce call waiting until its operand is held on another node (on its stack). */
typedef struct {
  dred_queue_t link; /* rt->handover_tickets */
  uint64_t group;
  int64_t tag;
  int holder;        /* the off-node worker whose receipt it waits for; -1: not known yet */
  int done;
} dred_handover_ticket_t;
/* Does `in`'s call wait for an off-node copy?  The one rule dred_ireduce and the runtime's
 * hooks both ask (a non-root, replicated, non-inline operand in a group spanning nodes). */
static inline int dred_handover_offnode(const dred_rt_t *rt, const dred_inst_t *in) {
  return rt->cfg.handover_node && rt->cfg.replicas > 1 && in->group->spans_nodes &&
         !in->is_root && !in->inl && in->bytes > 0 && in->join_error == DRED_OK &&
         in->kind != PROTO_KIND_BCAST && /* a bcast member has no operand to hand over */
         !in->pool_queued; /* one that waited for pool room does not wait in its call too */
}
/* Application thread, under rt->lock, before the reduction is submitted. */
void dred_handover_ticket_add(dred_rt_t *rt, dred_handover_ticket_t *t, uint64_t group,
                              int64_t tag);
/* Application thread, after submitting: wait (bounded) until the ticket is done. */
void dred_handover_wait(dred_rt_t *rt, dred_handover_ticket_t *t);
/* Runtime thread.  The reduction's off-node copy is on its way to `holder`, or there is
 * none (holder -1: the call may return at once). */
void dred_handover_expect(dred_rt_t *rt, uint64_t group, int64_t tag, int holder);
/* `holder` has the whole copy of (group, tag) in its memory; holder -1: the reduction
 * ended, or its off-node copy cannot be taken: either way the call may return. */
void dred_handover_held(dred_rt_t *rt, uint64_t group, int64_t tag, int holder);
/* Worker w failed: calls waiting for its receipt return. */
void dred_handover_holder_failed(dred_rt_t *rt, int w);
/* The runtime is dead or stopping: every waiting call returns. */
void dred_handover_release_all(dred_rt_t *rt);

#endif /* DRED_OFFNODE_H */
