/*
 * meet.h -- where the members of a one-node group meet for a small reduction, in shared
 * memory, without dred-master.
 *
 * Why.  An inline reduction (an operand of at most DRED_INLINE_MAX bytes) otherwise costs
 * one READY per member to dred-master, an INLINE to the root and an END to every member:
 * on a busy node each of those wakes a process that takes a core from the application.
 * When every member of a group lives on one node, the members can meet in memory they
 * all map: each writes its parameters and operand into the reduction's slot, the last
 * to arrive compares everyone's parameters and records the outcome, and the root folds
 * the operands in rank order when it asks for its result.  No message, no other process
 * woken.
 *
 * The table.  One region per node (an MPI shared-memory window, worker/meetpath.c),
 * DRED_MEET_GROUPS rings.  A ring belongs to one group for the whole job: the first
 * member to look for its group claims a free ring; a full table stays full, so every
 * member of a group that found no ring finds none (and all use dred-master).  A ring has
 * DRED_MEET_DEPTH slots; the group's k-th DRED_TAG_AUTO reduction uses slot k mod depth.
 *
 * Who goes where.  A member's own parameters decide whether it may meet here (`wants`:
 * inline, n x bytes within DRED_MEET_DATA).  Members whose parameters agree decide alike;
 * members that disagree (a mismatch) may not, so every auto-tagged reduction of a group
 * with a ring arrives here, including the ones that go to dred-master (via_master): a
 * slot that holds both kinds is MIXED, and the one arrival that made it so names the
 * members that met here (`mask`) in its READY, so dred-master ends the reduction with
 * DRED_ERR_MISMATCH for everyone and nobody waits for a READY that never comes.
 *
 * Ring wrap.  Slot k mod depth may still be held by reduction k - depth (a member has not
 * taken its outcome yet).  The first arrival of k that finds it so marks k spilled in the
 * slot; every later arrival of k sees the mark: all members of k use dred-master.  The
 * outcome is the same for everyone whatever the timing.
 *
 * Failures.  A member that dies before it arrived leaves the others waiting: the
 * runtime that learns of the death (FAILED) calls dred_meet_member_failed, which ends
 * every open slot that still misses it with DRED_ERR_PROC_FAILED.  A member that dies
 * after it arrived took nothing with it (its operand is in the slot).  Each slot's lock
 * is a robust mutex: one whose holder died ends the slot with DRED_ERR_PROC_FAILED.
 * Waiting is a futex on a word of the slot (woken at every outcome), always bounded by
 * the caller's timeout.
 *
 * No MPI here: tests/unit/test_meet.c drives every rule on an ordinary buffer.
 */
#ifndef DRED_MEET_H
#define DRED_MEET_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h" /* proto_params_t: what members must agree on */

#define DRED_MEET_GROUPS 64       /* rings per node                                   */
#define DRED_MEET_DEPTH 16        /* slots per ring: reductions of a group in flight  */
#define DRED_MEET_MAX_MEMBERS 64  /* larger groups never meet here                    */
#define DRED_MEET_DATA 2048       /* n x bytes of a slot's operands                   */

typedef enum {
  DRED_MEET_OPEN = 0, /* waiting for members                               */
  DRED_MEET_OK,       /* all arrived and agree: the root may fold          */
  DRED_MEET_FAILED,   /* ended with `status` (MISMATCH, PROC_FAILED, ...)  */
  DRED_MEET_MIXED     /* some members went to dred-master: MISMATCH        */
} dred_meet_state_t;

typedef struct dred_meet_table dred_meet_table_t;
typedef struct dred_meet_ring dred_meet_ring_t;
typedef struct dred_meet_slot dred_meet_slot_t;

/* Bytes of a table. */
size_t dred_meet_table_bytes(void);

/* Initialise a zeroed region of dred_meet_table_bytes() (one process per node, before
 * anyone else uses it).  0, or -1 if the robust process-shared locks are unavailable. */
int dred_meet_table_init(void *mem);

/* The ring of group `gid` (members `workers[0..n-1]`, job ranks), claimed if the group
 * has none yet.  NULL: n is 0 or above DRED_MEET_MAX_MEMBERS, or the table is full. */
dred_meet_ring_t *dred_meet_ring_of(dred_meet_table_t *t, uint64_t gid, uint32_t n,
                                    const uint32_t *workers);

/* Member index of job rank `worker` in the ring's group, or -1. */
int dred_meet_ring_member(const dred_meet_ring_t *r, uint32_t worker);

typedef struct {
  int meet;             /* 1: wait in `slot`; 0: use dred-master                     */
  dred_meet_slot_t *slot;
  uint64_t mask;        /* meet == 0: members that met here, to name in the READY    */
} dred_meet_arrival_t;

/* Member `member` arrives for the group's `seq`-th auto-tagged reduction.  wants: its own
 * parameters allow meeting here (then `data`, `bytes` long, is its operand: NULL / 0 at
 * the root).  error: DRED_OK, or why this member cannot take part (every member's outcome
 * is then that error).  0, or -1 with `*out` telling dred-master as for a spill when the
 * arguments are out of range. */
int dred_meet_arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                     const proto_params_t *p, int wants, const void *data, size_t bytes,
                     int error, dred_meet_arrival_t *out);

/* The outcome of `seq` in `slot`: 0 while open; 1 when decided, with `*status` DRED_OK or
 * the error every member gets. */
int dred_meet_poll(dred_meet_slot_t *s, uint64_t seq, int *status);

/* The operands, member k's at k x bytes (the root's place holds nothing). */
const void *dred_meet_data(const dred_meet_slot_t *s);

/* Wait at most timeout_ns for `seq` to be decided (returns at once if it is). */
void dred_meet_wait(dred_meet_slot_t *s, uint64_t seq, uint64_t timeout_ns);

/* This member is done with `seq` (outcome taken, the root's fold done): the last member
 * to release frees the slot for seq + depth. */
void dred_meet_release(dred_meet_slot_t *s, uint64_t seq, uint32_t member);

/* End `seq` with `status` if it is still open (dred_finalize's deadline, a lost master):
 * every member then gets `status`.  Wakes waiters. */
void dred_meet_end(dred_meet_slot_t *s, uint64_t seq, int status);

/* Member `member` of the ring's group died: every open slot it has not arrived in ends
 * with `status`, and it no longer holds any slot.  From then on it is gone for the ring:
 * a slot opened later ends with DRED_ERR_PROC_FAILED at once, and should the member still
 * run (declared failed while only stalled) its arrivals go to dred-master.  Idempotent
 * (each survivor calls it). */
void dred_meet_member_failed(dred_meet_ring_t *r, uint32_t member, int status);

/* Counters for tests: slots of a ring that are in use, spills and mixed slots so far. */
typedef struct {
  uint32_t busy;
  uint64_t spills, mixed;
} dred_meet_ring_stats_t;
void dred_meet_ring_stats(const dred_meet_ring_t *r, dred_meet_ring_stats_t *st);

#endif
