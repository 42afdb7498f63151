/*
 * relay.h -- a cross-node bcast's node relay (relay.c): the first member of a node to
 * arrive receives the data from dred-master and puts it in its pool block; the node's
 * other members copy it from there, and dred-master sends that node the data once.
 */
#ifndef DRED_RELAY_H
#define DRED_RELAY_H

#include "../engine/inst.h"
#include "../engine/runtime.h"

/* Bcasts from this size on are relayed: below it dred-master's cost is per message, not
 * per byte, and a follower's extra hop would only add latency. */
#define DRED_RELAY_MIN_BYTES (64u * 1024u)

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

#endif /* DRED_RELAY_H */
