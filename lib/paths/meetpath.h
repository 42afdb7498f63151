/*
 * meetpath.h -- the node's meeting place as libdred uses it (meetpath.c, and meetwork.c
 * for the folds and copies of a decided slot, over lib/shm/meet.h): reductions of one
 * node's members meet in shared memory, with no message to dred-master.
 */
#ifndef DRED_MEETPATH_H
#define DRED_MEETPATH_H

#include <stdint.h>

#include "../engine/future.h"
#include "../engine/inst.h"

struct dred_rt;
typedef struct dred_rt dred_rt_t;

/* Runtime thread, once per loop turn: lent blocks the root is done with go back to the
 * pool, and met reductions whose slot spilled go to dred-master (for members whose
 * application thread does not look).  Returns 1 if it did anything. */
int dred_meetpath_turn(dred_rt_t *rt);
/* dred_init, collective over dred_comm(): map the node's table, agree job-wide whether it
 * is used.  Never fails the job: without it every reduction goes to the master. */
void dred_meetpath_init(dred_rt_t *rt);
void dred_meetpath_finalize(dred_rt_t *rt, int collective);
/* dred_ireduce, once it has its turn and before it copies a large operand: wake the peers
 * asleep in the collective's slot, so that a wake-up (100-200 us on a virtual machine)
 * overlaps the copy instead of following the arrival. */
void dred_meetpath_prewake(dred_rt_t *rt, dred_inst_t *in);
/* dred_ireduce, before taking rt->lock, once the operand is loaded: give a non-root
 * operand that will meet by reference a pool block, if it is not in one of ours already
 * (the copy is made here, outside the lock). */
void dred_meetpath_prepare(dred_rt_t *rt, dred_inst_t *in);
/* dred_ireduce, as it loads a DIRECT root's operand: 1 when `in` is a large allreduce
 * bound for the meeting place, whose member 0 folds from the copy its peers read (made by
 * dred_meetpath_prepare) and needs no copy of its operand in recvbuf (inst.h's
 * acc_deferred; put there after all should the collective leave the meeting place). */
int dred_meetpath_defers_acc(const dred_rt_t *rt, const dred_inst_t *in);
/* 1 when `in` is a large allreduce bound for the meeting place whose operand is copied
 * into its block after it arrived, piece by piece (dred_meetpath_publish), so that its
 * peers fold behind the copy: a non-root's acc is then left unfilled until that copy
 * (acc_deferred), and filled at once should the collective leave the meeting place. */
int dred_meetpath_pieces(const dred_rt_t *rt, const dred_inst_t *in);
/* dred_ireduce, under rt->lock before arriving: whether `in`'s slot is still held by the
 * collective DRED_MEET_DEPTH before it in its stream (a hint: arriving decides). */
int dred_meetpath_slot_held(dred_rt_t *rt, dred_inst_t *in);
/* ... and if so, without rt->lock: wait (at most about a millisecond, settling this
 * process's own decided collectives meanwhile) instead of spilling it to dred-master at
 * once. */
void dred_meetpath_wait_slot(dred_rt_t *rt, dred_inst_t *in);
/* The block prepare gave `in`, freed (a call that ends before it arrives anywhere). */
void dred_meetpath_unprepare(dred_rt_t *rt, dred_inst_t *in);
/* Under rt->lock: `in` waits in `slot` (seq `seq` of ring `r`) from now on -- state
 * INST_MEET in rt->meetq, its future's waits settling it (dred_meetpath_arrive, and a
 * relay's follower, relay.c). */
void dred_meetpath_join(dred_rt_t *rt, dred_inst_t *in, struct dred_meet_ring *r,
                        struct dred_meet_slot *slot, uint64_t seq);
/* A block of ours (`p`, at `off` of our pool, `bytes`) that peers read for `seq` of
 * `slot` until it says nobody does any more (dred_meet_needs): freed then, not now. */
void dred_meetpath_lend(dred_rt_t *rt, struct dred_meet_slot *slot, uint64_t seq,
                        uint32_t member, char *p, int64_t off, size_t bytes);
/* Free the lent blocks nobody reads any more. */
void dred_meetpath_reclaim_lent(dred_rt_t *rt);
/* Member k's block at offset `off` of job rank `worker`'s pool segment, `len` bytes: its
 * address here, or NULL (logged) when the reference is not inside that segment or
 * `worker` is not member k's process. */
const char *dred_meetpath_peer_block(dred_rt_t *rt, const dred_inst_t *in, uint32_t k,
                                     uint32_t worker, int64_t off, uint64_t len);
/* dred_ireduce, under rt->lock, `in` complete (its key in->tag) but not inserted: 1 if it
 * met in shared memory (insert it, hand out the future, nothing for the runtime thread to
 * do); 0 to go to the master (in->meet_mask set).  `held_returns`: 2 when its slot is
 * still held by the collective DRED_MEET_DEPTH before, with nothing done (wait a moment
 * with dred_meetpath_wait_slot, then arrive again with 0, which spills it if still held). */
int dred_meetpath_arrive(dred_rt_t *rt, dred_inst_t *in, int held_returns);
/* A bcast root that met by reference: copy its data into the block it named, piece by
 * piece, telling the slot as it goes (the members copy out meanwhile); an allreduce
 * member (DRED_MEET_OP_PIECES): its operand, chunk by chunk -- in a blocking call only
 * the chunks its peers read first (meetwork.c copies the rest as they need it).  On the
 * calling thread, after arriving, without rt->lock; nothing if there is nothing to
 * publish. */
void dred_meetpath_publish(dred_rt_t *rt, dred_inst_t *in);
/* A small collective that took its outcome at its arrival (in->meet_taken, claimed): its
 * fold or copy from the operands it took, then its end, on the thread that arrived, after
 * inserting it and letting rt->lock go.  `in` is freed. */
void dred_meetpath_finish_taken(dred_rt_t *rt, dred_inst_t *in);
/* Any thread: finish a met collective whose slot decided, or with `status` if it has not
 * (0: only if decided).  `budget`: bytes of combining or copying this call may do
 * (UINT64_MAX: all).  Returns 0 while pending (or its work is only part done), 1 if it is
 * finished or another thread is finishing it, 2 if it went to dred-master instead, 3 if
 * its part is done and it waits for peers to fold the rest (an allreduce's chunks: wait
 * for the slot's epoch to move). */
int dred_meetpath_settle(dred_rt_t *rt, uint64_t gid, int64_t tag, int status, uint64_t budget);
/* A reduce root's blocking wait, before the last member came: fold the operands of the
 * members already there into acc (a commutative op, operands of 64 KiB or more, 3 members
 * or more).  1 if it folded any. */
int dred_meetpath_prefold(dred_rt_t *rt, uint64_t gid, int64_t tag);
/* The future's side: wait at most timeout_ns (UINT64_MAX: for ever) for a met reduction,
 * settling it when its slot decides.  Returns when the future is done or time ran out. */
void dred_meetpath_wait(dred_future *f, uint64_t timeout_ns);
/* Runtime thread: worker `w` was declared failed; the master is lost (status); at
 * dred_finalize, settle what decided and end the rest past the deadline.  Returns the
 * number still pending: nothing wakes the thread when a slot decides, so the caller
 * looks again shortly. */
void dred_meetpath_on_failed(dred_rt_t *rt, uint32_t w);
void dred_meetpath_fail_all(dred_rt_t *rt, int status);
int dred_meetpath_sweep(dred_rt_t *rt, int deadline_passed);

/* Finish every met reduction whose slot decided and that nobody finished yet -- those
 * whose futures were freed or never waited on -- so they stop counting against
 * DRED_MAX_INFLIGHT.  Application thread, without rt->lock.  Returns how many. */
int dred_meetpath_reclaim(dred_rt_t *rt);

#endif /* DRED_MEETPATH_H */
