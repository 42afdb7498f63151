/*
 * partial.h -- a node's partial of a reduce spanning nodes (partial.c): the members of a
 * node that does not hold the root combine their operands in shared memory, and one READY
 * covering them all goes to dred-master instead of one per member.
 */
#ifndef DRED_PARTIAL_H
#define DRED_PARTIAL_H

#include "../engine/inst.h"
#include "../engine/runtime.h"

/* A member that waits this long in an open partial slot (a node peer late, or one that
 * called another collective with this tag: a mismatch) leaves it and goes to dred-master
 * on its own: a partial never holds a reduction up for long. */
#define DRED_PARTIAL_WAIT_NS 2000000000ull

/* Runtime thread, announcing `in` (its READY `m` built, replicas under way): arrive in
 * the node's partial slot.  0: send `m` as usual (the slot does not apply, this member
 * goes to dred-master on its own, or no slot).  1: nothing to send now -- this member
 * folded its node's members and sent their partial, or waits for another to (the
 * runtime's turns watch it: dred_partial_turn). */
int dred_partial_announce(dred_rt_t *rt, dred_inst_t *in, const proto_msg_t *m);
/* Runtime thread: members waiting for their node's partial whose slot spilled or failed,
 * whose folder died, or that waited DRED_PARTIAL_WAIT_NS, send their own READY.  1 if it
 * sent anything. */
int dred_partial_turn(dred_rt_t *rt);
/* Runtime thread, before the robust layer answers RECOVER `m`: dred-master asks for a
 * folder's own operand, so the partial it sent is gone for it (refused, or lost) and the
 * member is recovered alone.  From then on a TASK for that member combines into its
 * recovered operand, never into the partial's block, which holds its node peers too. */
void dred_partial_on_recover(dred_rt_t *rt, const proto_msg_t *m);
/* `in` ends: it leaves its partial slot, a folder frees its partial's block. */
void dred_partial_done(dred_rt_t *rt, dred_inst_t *in);

#endif
