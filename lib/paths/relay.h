/*
 * relay.h -- the node relay of a cross-node bcast or large allreduce (relay.c): the first
 * member of a node to arrive receives the data (the result) from dred-master and puts it
 * in its pool block; the node's other members copy it from there, and dred-master sends
 * that node the data once.
 */
#ifndef DRED_RELAY_H
#define DRED_RELAY_H

#include "../engine/inst.h"
#include "../engine/runtime.h"

/* Bcasts from this size on are relayed: below it dred-master's cost is per message, not
 * per byte, and a follower's extra hop would only add latency. */
#define DRED_RELAY_MIN_BYTES (64u * 1024u)
/* An allreduce's follower pays a second message to dred-master (HAVE) and its END waits
 * for it: measured on simulated nodes (docs/performance.md), that costs more than the
 * transfer it saves below about 1 MiB. */
#define DRED_RELAY_ALLREDUCE_MIN_BYTES (1024u * 1024u)

/* Application thread, before rt->lock: a block of our pool for the data, in case this
 * member is the first of its node to arrive (freed again if it is not). */
void dred_relay_prepare(dred_rt_t *rt, dred_inst_t *in);
/* Frees that block of an instance nobody else has seen. */
void dred_relay_unprepare(dred_rt_t *rt, dred_inst_t *in);
/* Application thread, under rt->lock, for a collective that did not meet in the node's
 * meeting place: arrive in the node's relay slot.  1: this member follows (`in` is
 * INST_MEET in rt->meetq, settled by meetpath.c like a met bcast's member, and inserted
 * in the table); 0: it goes to dred-master as before -- leading (relay_lead) or not
 * relayed. */
int dred_relay_arrive(dred_rt_t *rt, dred_inst_t *in);
/* Runtime thread: `len` bytes of the data at `off` reached the leader's result; they go
 * into its block too, and the followers may copy them. */
void dred_relay_on_data(dred_rt_t *rt, dred_inst_t *in, uint64_t off, const void *data,
                        uint64_t len);
/* `in` ends with `status`: a leader leaves its slot (failing it for its followers unless
 * its data is whole) and lends its block until no follower reads it. */
void dred_relay_done(dred_rt_t *rt, dred_inst_t *in, int status);
/* A follower (claimed, not under rt->lock) is done with the relay: it copied the whole
 * data (have) or the relay failed (its copy is dropped).  It leaves the slot and goes to
 * dred-master, which sends it only END (have) or the data and END. */
void dred_relay_handoff(dred_rt_t *rt, dred_inst_t *in, int have);

/* A large allreduce's follower.  It arrived in the relay slot after its leader, went to
 * dred-master with its operand (READY's have PROTO_HAVE_FOLLOW) and copies the result
 * from the leader's block as the leader receives it; then the runtime thread sends HAVE
 * (error 0: it holds the result; else the relay failed and dred-master sends it), and
 * dred-master's END completes it.  The copy is done by whichever thread looks: */

/* One step of the follower (gid, tag): copy what the leader has put in its block since
 * the last step, at most about `budget` bytes.  Returns 1 when it is done copying (or is
 * not a follower that copies: nothing to do), 0 after `budget` bytes, 2 when another
 * thread is copying it, 3 when the leader has nothing more yet. */
int dred_relay_step(dred_rt_t *rt, uint64_t gid, int64_t tag, uint64_t budget);
/* The application thread waiting on the follower's future f (dred_future_get, _wait,
 * _is_done) copies for at most timeout_ns (UINT64_MAX: until it is done copying; 0: one
 * bounded step), woken by the leader's progress. */
void dred_relay_wait(dred_future *f, uint64_t timeout_ns);
/* Runtime thread, each turn: send the HAVEs that are due (after the READY), and copy for
 * the followers nobody waits on once their leader's block is whole or failed,
 * DRED_TURN_BYTES each per turn.  0: nothing done; 1: something; 2: something, and a
 * copy stopped short (turn again at once). */
int dred_relay_turn(dred_rt_t *rt);

#endif /* DRED_RELAY_H */
