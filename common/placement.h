/*
 * placement.h -- where the copies of an operand go: one rule, used by libdred (which
 * writes the copies, lib/robust/replica_send.c) and by dred-master (which must know where to
 * look for them when the member's READY never arrived, master/sched/sched_recover.c).
 *
 * Why one function: if the two sides each wrote the rule ("the next live member in cyclic
 * order"), a change to one would send the master asking the wrong holders.  And why
 * node-aware: a copy on the member's own node dies with the node, so the first copy must
 * go to another node when the group spans several (docs/design.md, fault tolerance).
 *
 * The rule.  Candidates for member k's copies are the other members of the group in this
 * order: first every member on another node than k's, in cyclic group order, starting
 * from the r-th of them after k, where r is k's position among the members of its own
 * node; then the members on k's node, in cyclic order from k+1.  A member's copies go to
 * the first `want` candidates that are not known dead.  So the first copy goes to a live
 * member on a different node whenever the group spans nodes, and to plain "the next live
 * member" on one node.  The offset r spreads one node's first copies over the next
 * node's members instead of sending them all to its first one: in a group spanning
 * nodes dred_ireduce waits until that copy is held (lib/paths/offnode.c), and three 8 MiB
 * copies queued at one holder made the last of them wait ~3x as long.  The order does not
 * depend on who is alive, so the master can walk it later without knowing who the member
 * thought was alive when it placed its copies.
 *
 * Nodes are small integers, one per worker (private-communicator rank); `node_of` NULL
 * means every worker is on one node.  No MPI and no allocation in here.
 */
#ifndef DRED_PLACEMENT_H
#define DRED_PLACEMENT_H

#include <stdint.h>

/* The i-th candidate (i = 0 .. n-2) to hold member k's copies, as a member index; n when
 * i is past the end or k is out of range. */
uint32_t dred_place_nth(uint32_t n, const uint32_t *workers, const uint32_t *node_of,
                        uint32_t k, uint32_t i);

/* Up to `want` holders for member k's copies: the first candidates whose worker is not
 * dead (`dead` by worker rank, NULL: nobody is).  Writes their worker ranks to out[] and
 * returns how many. */
uint32_t dred_place_replicas(uint32_t n, const uint32_t *workers, const uint32_t *node_of,
                             const uint8_t *dead, uint32_t k, uint32_t want, uint32_t *out);

/* 1 when every member of the group is on one node (a node loss then loses every copy). */
int dred_place_one_node(uint32_t n, const uint32_t *workers, const uint32_t *node_of);

#endif /* DRED_PLACEMENT_H */
