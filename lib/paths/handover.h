/*
 * handover.h -- the node's hand-over beacon (handover.c): operand copies into the pool go
 * first on the node, replica writes step aside meanwhile.  The call's wait for a copy on
 * another node is offnode.h.
 */
#ifndef DRED_HANDOVER_H
#define DRED_HANDOVER_H

#include "../engine/runtime.h"

void dred_handover_begin(dred_rt_t *rt); /* around dred_ireduce's copy into the pool */
void dred_handover_end(dred_rt_t *rt);
/* A replica put's pause hook (arg: the runtime): waits, briefly, while a node peer is
 * copying an operand in. */
void dred_handover_yield(void *arg);

#endif /* DRED_HANDOVER_H */
