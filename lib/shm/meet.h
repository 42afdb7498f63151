/*
 * meet.h -- where the members of a one-node group meet for a reduction, in shared memory,
 * without dred-master.
 *
 * Why.  Through dred-master a reduction costs one READY per member, a TASK or an INLINE
 * and an END to every member: on a node that runs one process per core each of those
 * wakes a thread that has no core of its own.  When every member of a group lives on one
 * node, the members can meet in memory they all map: each arrives in the reduction's slot
 * with its parameters and its operand, the last to arrive compares everyone's parameters
 * and records the outcome, and the root folds the operands in rank order when it asks for
 * its result.  No message, no other process woken.
 *
 * Operands.  A small one (the group's operands within DRED_MEET_DATA) is copied into the
 * slot.  A larger one stays where it already is, in its member's block of the node's
 * shared pool (lib/mpi/buffer.c): the member records a reference (its job rank, the
 * block's offset in its pool segment, the length) and the root reads the block in place.
 * The pool outlives a process that dies (the node's other processes map it), so a member
 * killed after it arrived takes nothing with it.  The block stays its owner's: the owner
 * frees it once dred_meet_needs() says the root no longer reads it (it folded, died, or
 * the slot ended) -- a dead owner's pool is never used again, so nothing leaks that
 * matters.  A member whose operand found no room in the pool arrives with NOPLACE: the
 * slot SPILLs, and the whole reduction goes to dred-master (the members that arrived
 * before it are re-routed by whichever of their threads looks next).
 *
 * The table.  One region per node (an MPI shared-memory window, lib/paths/meetpath.c),
 * DRED_MEET_GROUPS rings.  A ring belongs to one stream for the whole job: a group's
 * DRED_TAG_AUTO reductions form one stream, each explicit tag of a group another.  The
 * first member to look for its stream claims a free ring; a full table stays full, so
 * every member of a stream that found no ring finds none (and all use dred-master).  A
 * ring has DRED_MEET_DEPTH slots; the stream's k-th reduction (the k-th auto call, or the
 * k-th use of the tag) uses slot k mod depth.
 *
 * Who goes where.  A member's own parameters decide whether it may meet here (`wants`).
 * Members whose parameters agree decide alike; members that disagree (a mismatch) may
 * not, so every reduction of a stream with a ring arrives here, including the ones that
 * go to dred-master (via_master): a slot that holds both kinds is MIXED, and the one
 * arrival that made it so names the members that met here (`mask`) in its READY, so
 * dred-master ends the reduction with DRED_ERR_MISMATCH for everyone and nobody waits for
 * a READY that never comes.
 *
 * Ring wrap.  Slot k mod depth may still be held by reduction k - depth (a member has not
 * taken its outcome yet).  The first arrival of k that finds it so marks k spilled in the
 * slot; every later arrival of k sees the mark: all members of k use dred-master.  The
 * outcome is the same for everyone whatever the timing.  A caller that finds its slot
 * held (an arrival with held_returns, which then records nothing; dred_meet_slot_held, a
 * hint, while it waits) may wait a moment for the holder's members to take their outcomes
 * -- lib/paths/meetpath.c waits up to a millisecond -- so that a member racing ahead (a
 * bcast root, a reduce's non-root) does not spill.
 *
 * Failures.  A member that dies before it arrived leaves the others waiting: the
 * runtime that learns of the death (FAILED) calls dred_meet_member_failed, which ends
 * every open slot that still misses it with DRED_ERR_PROC_FAILED (a bcast's only if it
 * is the root -- DRED_ERR_ROOT_FAILED -- or if nobody can be served early any more).  A member that dies
 * after it arrived took nothing with it (its operand is in the slot or in the node's
 * pool).  Each slot's lock is a robust mutex: one whose holder died ends the slot with
 * DRED_ERR_PROC_FAILED.  A member releases the slot without the lock (a compare-and-swap
 * on the released mask; the addition that completes it frees the slot).  Waiting polls (up
 * to DRED_MEET_SPIN_US, 10 ms, where every member has a core), then waits on a futex on a
 * word of the slot (woken at every outcome, on a cache line of its own), always bounded by
 * the caller's timeout.  A waiter's looks at an open slot with nothing for it yet take no
 * lock, so such a holder's death is found by the next member to take the lock or by the
 * runtime's dred_meet_member_failed.
 *
 * Allreduce and bcast.  The slot is the same; what differs is whose operand is read
 * (reduce: all but the root's; allreduce: all; bcast: the root's alone) and who needs a
 * block until when (a reduce's blocks until its root releases; an allreduce's and a
 * bcast's until every member has).  A bcast's members copy the root's data from the slot
 * or its block as soon as the root arrived, whoever else has (seed 000: early arrivals
 * are served first), and a bcast's non-root lost before it arrived costs the others
 * nothing; a member that disagrees with the root gets MISMATCH alone, the slot's
 * decision (everyone in) matters to a bcast only when the root's data is not readable.
 * A small allreduce's members each fold every operand of the slot (the
 * same fold in the same order: bit-equal results).  A larger one is split into chunks of
 * elements (dred_meet_nchunks: at least one per member, at most DRED_MEET_MAX_CHUNKS):
 * a member that waits claims a chunk no one has (dred_meet_claim), folds it in rank order
 * into a fresh block of its own pool and says where (dred_meet_chunk_done); members copy
 * each folded chunk from its holder's block.  Members that wait share the work; one that
 * is late or computing has its share done for it (seed 003's waiting ranks doing pending
 * work).  A member may arrive before its operand is in its block (DRED_MEET_OP_PIECES)
 * and copy it in afterwards, saying which chunks are in (dred_meet_piece_in): a chunk is
 * handed out only once every operand its claimer reads from a block holds it, so the
 * members that waited fold behind a late member's copy instead of after it.  Such a
 * member folds its own operand from its own memory, so it copies in only the chunks its
 * peers read: the others' home chunks first, its own home (which it folds itself, from
 * the bottom) last, from the top, once its peers run out of work (dred_meet_home).  A
 * large reduce shares its fold the
 * same way among the members that still wait (the root, and non-roots in a blocking
 * call or a wait): a non-root folds the non-root
 * operands of its chunk, the root folds its own chunks straight into its result and
 * combines each helper's partial with its own operand.  Nobody's operand is ever
 * written, so a chunk is the same bits whoever folds it: a member declared failed with a
 * claim gives it back for anyone to claim, and (lib/paths/meetpath.c) a waiter with
 * nothing left to claim folds a peer's late claim itself after a bounded wait.  A root
 * that waits before the last member came may fold the early arrivals' operands of a
 * commutative reduce (dred_meet_solo); the slot then hands out no chunk of it.
 *
 * No MPI here: tests/unit/test_meet.c drives every rule on an ordinary buffer.
 */
#ifndef DRED_MEET_H
#define DRED_MEET_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/proto.h" /* proto_params_t: what members must agree on */

#define DRED_MEET_GROUPS 256      /* rings (streams) per node                         */
#define DRED_MEET_DEPTH 16        /* slots per ring: reductions of a group in flight  */
#define DRED_MEET_MAX_MEMBERS 64  /* larger groups never meet here                    */
#define DRED_MEET_DATA 2048       /* n x bytes of operands copied into a slot         */
#define DRED_MEET_AUTO (-1)       /* the stream of a group's DRED_TAG_AUTO reductions  */
#define DRED_MEET_MAX_CHUNKS 64   /* chunks of an allreduce's fold                     */
#define DRED_MEET_CHUNK_BYTES (128u * 1024u) /* an allreduce chunk's size, about: in cache */
#define DRED_MEET_FAST_MEMBERS 16 /* larger groups never take the fast lane              */
#define DRED_MEET_FAST_DATA 88    /* bytes of one member's operand in its post           */
#define DRED_MEET_FAST_REF_MAX (256u * 1024u) /* a bcast's data in the root's pool block,
                                               * its post naming it, up to this: below,
                                               * the slot costs more than its pieces
                                               * save (the slot's block, reused, is in
                                               * the reader's cache: every line written
                                               * is taken back first); above, a late
                                               * root's copy in the lane's pieces loses
                                               * to the slot's (docs/performance.md,
                                               * sessions 44-46 and 55) */
#define DRED_MEET_FAST_PROGRESS_OFF (DRED_MEET_FAST_DATA - 8) /* in a post by reference:
                                               * how much of the block is in (a word)   */

typedef enum {
  DRED_MEET_OPEN = 0, /* waiting for members                               */
  DRED_MEET_OK,       /* all arrived and agree: the root may fold          */
  DRED_MEET_FAILED,   /* ended with `status` (MISMATCH, PROC_FAILED, ...)  */
  DRED_MEET_MIXED,    /* some members went to dred-master: MISMATCH        */
  DRED_MEET_SPILL     /* a member found no place for its operand: every member
                       * goes to dred-master, which computes it as usual  */
} dred_meet_state_t;

/* Where a member's operand is, as it arrives. */
typedef enum {
  DRED_MEET_OP_NONE = 0, /* nothing to read: the root (its operand is its own)        */
  DRED_MEET_OP_SLOT,     /* copied into the slot (data, bytes)                         */
  DRED_MEET_OP_POOL,     /* in the member's pool block: worker, off, len               */
  DRED_MEET_OP_NOPLACE,  /* its parameters let it meet, but its operand has no place
                          * a peer could read: the slot spills to dred-master          */
  DRED_MEET_OP_PIECES    /* an allreduce member's operand, in its pool block as POOL
                          * names it, but written there after it arrived, chunk by
                          * chunk, and only as far as peers read it: the slot hands a
                          * peer a chunk only once dred_meet_piece_in says it is in
                          * (recorded as POOL)                                         */
} dred_meet_op_kind_t;

typedef struct {
  uint32_t kind;   /* dred_meet_op_kind_t                                            */
  uint32_t worker; /* POOL: the owner's job rank                                     */
  int64_t off;     /* POOL: the block's offset in the owner's pool segment            */
  uint64_t len;    /* POOL: its length (the operand's bytes)                          */
} dred_meet_ref_t;

typedef struct dred_meet_table dred_meet_table_t;
typedef struct dred_meet_ring dred_meet_ring_t;
typedef struct dred_meet_slot dred_meet_slot_t;

/* Bytes of a table. */
size_t dred_meet_table_bytes(void);

/* Initialise a zeroed region of dred_meet_table_bytes() (one process per node, before
 * anyone else uses it).  0, or -1 if the robust process-shared locks are unavailable. */
int dred_meet_table_init(void *mem);

/* The ring of stream `stream` (DRED_MEET_AUTO, or an explicit tag) of group `gid`
 * (members `workers[0..n-1]`, job ranks), claimed if the stream has none yet.  NULL: n is
 * 0 or above DRED_MEET_MAX_MEMBERS, or the table is full. */
dred_meet_ring_t *dred_meet_stream_of(dred_meet_table_t *t, uint64_t gid, int64_t stream,
                                      uint32_t n, const uint32_t *workers);
/* The group's auto-tagged stream: dred_meet_stream_of(t, gid, DRED_MEET_AUTO, ...). */
dred_meet_ring_t *dred_meet_ring_of(dred_meet_table_t *t, uint64_t gid, uint32_t n,
                                    const uint32_t *workers);

/* A cross-node bcast's or allreduce's node relay (lib/paths/relay.c): the ring of (gid, stream) for the
 * group's members on this node, apart from the group's other rings.  `absent` (bit k:
 * member k) are the members that never arrive here -- those on other nodes -- counted as
 * released in every slot.
 * In a relay slot the first member to arrive with a pool block (DRED_MEET_OP_POOL) leads
 * (`lead` in its arrival): dred-master sends it the data, which it puts in that block,
 * advancing the slot's progress (dred_meet_progress_set); every later member whose
 * parameters agree with the leader's follows (meet == 1), served early as a bcast's
 * member is, with the leader as root.  Anyone else goes to dred-master (meet == 0).  A
 * relay slot decides nothing: it ends only through dred_meet_relay_fail or the leader's
 * death before its data was whole (the progress then reports DRED_ERR_ROOT_FAILED), and a
 * follower that sees either goes to dred-master for the data. */
dred_meet_ring_t *dred_meet_relay_of(dred_meet_table_t *t, uint64_t gid, int64_t stream,
                                     uint32_t n, const uint32_t *workers, uint64_t absent);
/* A reduce's node partial (lib/paths/partial.c): the ring of (gid, stream) for the group's
 * members on this node, apart from its other rings (`absent`: the members on other
 * nodes).  Every member of the node arrives in each reduce's slot.  One that `wants`
 * (DRED_MEET_OP_POOL, no error) stays; any other goes to dred-master at once (meet == 0)
 * without disturbing the rest.  Once every member of the node arrived, the last one
 * decides: if it stayed, and two or more stayed and all agree, the slot is OK and that
 * member folds their operands and sends one READY covering them all (`lead` in its
 * arrival); else the slot SPILLs, and each that stayed goes to dred-master on its own.  A
 * member of the node that died before it arrived FAILs the slot (the same for them); a
 * death on another node does not touch it. */
dred_meet_ring_t *dred_meet_partial_of(dred_meet_table_t *t, uint64_t gid, int64_t stream,
                                       uint32_t n, const uint32_t *workers, uint64_t absent);
/* An OK partial slot's folder (member index) and, in *members, the members its partial
 * covers; DRED_MEET_MAX_MEMBERS (and 0) while it is not one. */
uint32_t dred_meet_folder(dred_meet_slot_t *s, uint64_t seq, uint64_t *members);
/* A member that stayed in partial slot `seq` gives up waiting: 1 if it left (the slot was
 * open -- a folder deciding later leaves it out -- or ended without a partial), 0 if the
 * slot decided a partial covering it, which stands. */
int dred_meet_partial_leave(dred_meet_slot_t *s, uint64_t seq, uint32_t member);

/* The leader of relay slot `s` can give no more (dred-master's END for it was an error,
 * or it leaves before its data is whole): the progress reports `status` from now on, and
 * waiters are woken. */
void dred_meet_relay_fail(dred_meet_slot_t *s, uint64_t seq, int status);
/* The leader's member index in relay slot `s` (for a follower of it), or
 * DRED_MEET_MAX_MEMBERS when it is not a relay slot with a leader. */
uint32_t dred_meet_leader(const dred_meet_slot_t *s);
/* Member index of job rank `worker` in the ring's group, or -1. */
int dred_meet_ring_member(const dred_meet_ring_t *r, uint32_t worker);

typedef struct {
  int meet;             /* 1: wait in `slot`; 0: use dred-master                     */
  dred_meet_slot_t *slot;
  uint64_t mask;        /* meet == 0: members that met here, to name in the READY    */
  int lead;             /* a relay slot (meet == 1): this member leads, the others follow */
  int taken;            /* meet == 1, dred_meet_arrive_take: this member's outcome was
                         * DRED_OK at its arrival, the operands it reads are copied out,
                         * and it has released the slot (it must not touch it again)   */
  int held;             /* dred_meet_arrive_take with `held_returns`: the slot is still
                         * held by the collective DRED_MEET_DEPTH before; nothing was
                         * recorded (meet == 0): wait a moment, then arrive again       */
  int lane;             /* taken == 1: served from the fast lane instead -- a bcast whose
                         * root posted there (see "The fast lane"); nothing was recorded
                         * in the slot.  Its outcome is `status`, and a non-root's data
                         * (the root's, count x extent bytes) is in lane_data ...      */
  int lane_ref;         /* ... or, when this is 1, where the root's data is: lane_data
                         * holds a dred_meet_ref_t (DRED_MEET_OP_POOL) to copy from; then
                         * dred_meet_fast_still, and the member's ack is its own to give
                         * (dred_meet_fast_done) once it copied                         */
  int status;
  unsigned char lane_data[DRED_MEET_FAST_DATA];
} dred_meet_arrival_t;

/* Member `member` arrives for the group's `seq`-th auto-tagged reduction.  wants: its own
 * parameters allow meeting here (then `data`, `bytes` long, is its operand: NULL / 0 at
 * the root).  error: DRED_OK, or why this member cannot take part (every member's outcome
 * is then that error).  0, or -1 with `*out` telling dred-master as for a spill when the
 * arguments are out of range. */
int dred_meet_arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                     const proto_params_t *p, int wants, const void *data, size_t bytes,
                     int error, dred_meet_arrival_t *out);
/* The same with the operand's place said explicitly: `op` NULL or DRED_MEET_OP_NONE at the
 * root; DRED_MEET_OP_SLOT with `data` (n x bytes within DRED_MEET_DATA); DRED_MEET_OP_POOL
 * with a reference (any size); DRED_MEET_OP_NOPLACE spills the reduction (`*out` then says
 * dred-master, mask 0).  Ignored unless `wants`. */
int dred_meet_arrive_op(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                        const proto_params_t *p, int wants, const dred_meet_ref_t *op,
                        const void *data, int error, dred_meet_arrival_t *out);

/* dred_meet_arrive_op for a member of the small path (its operand, if the collective
 * reads it, copied into the slot: DRED_MEET_OP_SLOT or NONE) that takes its outcome at its
 * arrival when it is already DRED_OK there, under the same lock: a bcast member once the
 * root's data is in the slot and every member there agrees with it (the root itself
 * included), any member when its arrival decided the slot OK (the last one).  It then
 * copies what it reads (member k's operand at k x bytes, as dred_meet_data has it: the
 * root's for a bcast's non-root, all of them for an allreduce and a reduce's root, nothing
 * otherwise) into `take` (`cap` bytes; too small: not taken) and releases the slot, and
 * `out->taken` says so.  Otherwise it is dred_meet_arrive_op exactly.  Saves the member
 * its look at the slot, its release (a second locked update of the slot's shared line)
 * and its wait.  `held_returns`: a slot still held by the collective DRED_MEET_DEPTH
 * before is left as it is (not spilled) and `out->held` says so, in the same look that
 * would arrive -- instead of a dred_meet_slot_held before it, which reads the slot's lines
 * once more, from the member that wrote them last. */
int dred_meet_arrive_take(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                          const proto_params_t *p, int wants, const dred_meet_ref_t *op,
                          const void *data, int error, void *take, size_t cap,
                          int held_returns, dred_meet_arrival_t *out);

/* The fast lane: a small blocking reduce or allreduce without the slot's lock.
 *
 * Why.  An arrival in the slot moves the lock's line, the lines of the fields it resets,
 * its parameters, reference and data, the wake word and the released mask between cores;
 * where every member has a core, each such move is on the critical path (one line, one
 * way: 75-300 ns on the 2-core development guest, as its vCPUs are placed), and a small
 * collective is a handful of them.  Here each member writes one post of its own (its
 * parameters and operand, DRED_MEET_FAST_DATA bytes at most) and reads its peers'.
 *
 * How (fast.c).  A member whose own call is fast-eligible -- a blocking reduce, allreduce
 * or bcast whose operand fits (or by reference: the post names a block of the member's
 * pool that holds it, up to DRED_MEET_FAST_REF_MAX), on a plain ring of at most
 * DRED_MEET_FAST_MEMBERS -- posts
 * (dred_meet_fast_post) and then looks (dred_meet_fast_look) until it can decide:
 *   - a bcast's root POSTED for seq (its parameters and data -- or, for data over
 *     DRED_MEET_FAST_DATA bytes up to DRED_MEET_FAST_REF_MAX, a reference to the block of
 *     its pool that holds it, which the members copy from before their ack; the root
 *     reuses the block only once every ack is in): the bcast is served from that post,
 *     early arrivals first (seed 000) -- the root is done as it posts (DRED_OK,
 *     or MISMATCH if a member that posted disagrees with it: another root), and each
 *     other member, whenever it comes, compares its parameters with the root's and
 *     copies the data, or gets DRED_ERR_MISMATCH (so does a member that names another
 *     root, or is no bcast).  The non-roots post nothing: nobody would read it, so they
 *     only watch for the root's post (dred_meet_fast_watch).
 *     Nobody waits for the last member, and nothing is kept for it but the root's post.
 *   - every member POSTED for seq: each member compares all parameters itself (the same
 *     posts, the same comparison: the same outcome everywhere), copies the operands it
 *     reads (or, posted by reference, the references: it reads the blocks, checks the
 *     posts are still seq's with dred_meet_fast_still, then acks) and is done -- DRED_OK
 *     or DRED_ERR_MISMATCH.  The slot is never touched.
 *   - some member went the slot's way for seq instead (a nonblocking call, a larger
 *     operand, a refusal...): its arrival opened the slot for seq or spilled seq, which
 *     the lane's members watch; or a member was declared failed before it posted (a looker
 *     marks its post SLOW, a compare-and-swap against its own post): nobody can see
 *     everyone POSTED, so every member that posted arrives in the slot too, and the slot
 *     decides as it does for anyone (MISMATCH, PROC_FAILED, ...).
 * The first rule wins over the third, whatever the order: an arrival that opens the slot
 * for seq or spills seq first closes the posts still being written (CLOSED: they never
 * come), then looks for a bcast root's post -- found, it takes its outcome from that post
 * as a posted member would and leaves the slot as it was (nobody meets there for seq);
 * not found, no root posts seq any more (a writer looks at the slot again once WRITING,
 * and both sides are sequentially consistent), so everyone goes to the slot.  A post is
 * never taken back, so two outcomes cannot happen for one member, and a member served
 * from a post and gone is never waited for in the slot.
 *
 * Reuse.  A member posts for seq only once every living peer is done with the posts of
 * seq - DEPTH there: known when they all posted the stream's previous collective (blocking
 * calls, one after the other), else read from their acks (a line each, written at the end
 * of each call and at each arrival in the slot, and read by nobody else in the common
 * case, so that writing it costs nothing); otherwise it goes the slot's way.  A peer
 * declared failed is not waited for: should it still run, its look re-reads the tags after
 * copying (a writer marks its tag WRITING first) and takes DRED_ERR_PROC_FAILED if one
 * moved.
 *
 * Nonblocking calls.  A small nonblocking reduce or allreduce posts too (DRED_MEET_POST_NB)
 * and returns; its member looks whenever it waits on its future, or its runtime thread
 * does (lanepath.c).  Its thread is then not there to go the slot's way when the third
 * rule applies, so whoever opens the slot for seq records every such post there as its
 * member's arrival (dred_meet__fast_import: parameters and operand, copied from the post),
 * and that member's own arrival, when it comes, only joins.  (A spilled seq -- the slot
 * still held by an older collective -- goes to dred-master, whose READY only the member
 * can send: it looks when it waits, and its runtime thread at each turn.)  A member with a
 * nonblocking post unresolved has not given its ack for it, so its later posts say so
 * (DIRTY): "every peer posted the previous collective" then tells nothing about their
 * acks, and only clean posts let the next poster skip reading them
 * (dred_meet_fast_clean).  Nor does a member post over its own unresolved post of
 * seq - DEPTH: it goes the slot's way instead (the caller keeps that count).
 *
 * Waiting: polls while the caller's core is its own (dred_meet_set_spin), then sleeps on
 * the slot's wake word; whoever sees every post in wakes the sleepers, as do a slot opened
 * or spilled for seq and a death (dred_meet_member_failed). */

/* How a post is made (dred_meet_fast_post_as, _publish_as): by a blocking call (CLEAN,
 * DIRTY) or a nonblocking one (NB, NB_DIRTY: recorded in the slot by whoever opens it for
 * seq); DIRTY when the member has another nonblocking post unresolved. */
enum {
  DRED_MEET_POST_CLEAN = 0, DRED_MEET_POST_DIRTY = 1, DRED_MEET_POST_NB = 2,
  DRED_MEET_POST_NB_DIRTY = 3
};

/* A post in two steps, for a member whose operand goes into a block of its pool first
 * (too large for a post: up to DRED_MEET_FAST_REF_MAX): begin -- 1 when the member may post
 * seq and its post is now WRITING (the same conditions as dred_meet_fast_post's; the
 * peers' acks say nobody reads its post, or the block it named, of seq - DEPTH any more),
 * 0 if not; then publish its parameters and `bytes` of post (a dred_meet_ref_t naming the
 * block) -- 1 once POSTED, 0 when closed meanwhile (the slot's way) -- or abandon (CLOSED,
 * the slot's way). */
int dred_meet_fast_begin(dred_meet_ring_t *r, uint64_t seq, uint32_t member, int peers_past);
int dred_meet_fast_publish(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                           const proto_params_t *p, const void *data, size_t bytes);
int dred_meet_fast_publish_as(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                              const proto_params_t *p, const void *data, size_t bytes, int how);
void dred_meet_fast_abandon(dred_meet_ring_t *r, uint64_t seq, uint32_t member);
/* After reading the block member k's post names (a bcast root's data, an allreduce
 * member's operand): 1 if that post is still seq's (else what was read may be a later
 * collective's: this member was given up for dead). */
int dred_meet_fast_still(dred_meet_ring_t *r, uint64_t seq, uint32_t k);

/* Member `member` posts its parameters and operand (`bytes`, 0 at a reduce's root) for
 * `seq`.  `peers_past`: the caller knows every peer posted this stream's seq - 1 (it saw
 * them all in the lane then).  1 if posted (then look until resolved); 0 if not -- the
 * ring or group does not allow it, the operand is too large, a peer may still read this
 * slot's posts of seq - DEPTH, a member went the slot's way for seq already, or this one
 * was declared failed -- and the member arrives in the slot as usual.  A peer's missing
 * ack of seq - DEPTH is waited for, polling, up to dred_meet_set_ack_wait's bound where
 * waiters poll (dred_meet_set_spin > 0). */
int dred_meet_fast_post(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                        const proto_params_t *p, const void *data, size_t bytes, int peers_past);
/* The same, made as `how` says (DRED_MEET_POST_*; dred_meet_fast_post: CLEAN).  An NB post
 * holds its operand itself (not by reference), and wakes the members asleep on seq. */
int dred_meet_fast_post_as(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                           const proto_params_t *p, const void *data, size_t bytes, int peers_past,
                           int how);
/* A posted member's look.  0: not everyone is accounted for yet.  1: everyone posted;
 * *status is DRED_OK (then `take`, `cap` bytes, holds member k's operand at k x bytes for
 * each operand the collective reads: all of an allreduce, a reduce's non-roots) or
 * DRED_ERR_MISMATCH (or DRED_ERR_PROC_FAILED: this member was given up for dead and a
 * post moved while it read); operands over DRED_MEET_FAST_DATA bytes are posted by
 * reference, and `take` then holds member k's dred_meet_ref_t at k x its size (INTERNAL
 * if one does not name a block of the agreed size).  2: a bcast's root posted, and *status is this member's
 * outcome from that post (DRED_OK with the root's data at root x bytes of `take`, unless
 * it is the root; or MISMATCH; or PROC_FAILED as above) -- not every member may have
 * posted; a root's data over DRED_MEET_FAST_DATA bytes is in its pool block, and `take`
 * then holds the dred_meet_ref_t naming it, at 0, to copy from and check with
 * dred_meet_fast_still.  Either way the member reads no post of seq any more (nor the
 * block it names) and gives its ack with dred_meet_fast_done.  -1: someone went the slot's way, or this member was declared
 * failed: arrive in the slot (the ack is given). */
int dred_meet_fast_look(dred_meet_ring_t *r, uint64_t seq, uint32_t member, void *take,
                        size_t cap, int *status);
/* A bcast's non-root does not post (nobody reads a post of its: the root's serves it): it
 * watches for its root's post instead, with its own parameters `me`.  2: a root posted,
 * *status as dred_meet_fast_look's 2 says (the data, or the reference to it, in `take`);
 * then its ack with dred_meet_fast_done.  0: not yet (wait with dred_meet_fast_watch_wait).
 * -1: the root will not post seq (it went the slot's way, or was declared failed), or this
 * member cannot watch: arrive in the slot, whose arrival decides as for anyone. */
int dred_meet_fast_watch(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                         const proto_params_t *me, void *take, size_t cap, int *status);
void dred_meet_fast_watch_wait(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint32_t root,
                               uint64_t timeout_ns);
/* After a look that returned 1, before the ack: 1 if every member's post of seq was
 * CLEAN -- then none of them still reads posts of an earlier collective of the stream, and
 * the next post may skip asking their acks (dred_meet_fast_post's peers_past). */
int dred_meet_fast_clean(dred_meet_ring_t *r, uint64_t seq);
/* 1 while member's look at `seq` would still say "not yet" (reads only). */
int dred_meet_fast_pending(dred_meet_ring_t *r, uint64_t seq, uint32_t member);
/* Wait at most timeout_ns until member's look at `seq` may resolve (polls first). */
void dred_meet_fast_wait(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint64_t timeout_ns);
/* A bcast root's post by reference says how much of the data its block holds (a word at
 * DRED_MEET_FAST_PROGRESS_OFF of the post's data, written with the post): all of it when
 * the root copied before posting, or 0, then each piece as the root copies it in after
 * posting (dred_meet_fast_progress_set: a core per process, so that its members' copies
 * overlap its own).  dred_meet_fast_progress: how much there is (acquire: the bytes up to
 * it are in), or UINT64_MAX once k's post is no longer seq's. */
void dred_meet_fast_progress_set(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint64_t bytes);
uint64_t dred_meet_fast_progress(dred_meet_ring_t *r, uint64_t seq, uint32_t k);
/* An allreduce folded in parts in the lane uses the same word as each part's claim
 * (lanepath.c, lane_fold_split): any member may move member k's word from `expect` to
 * `want`, atomically, while k's post is seq's; 1 if it did.  The word names seq itself,
 * so a move meant for seq never lands on a later post of k's. */
int dred_meet_fast_progress_cas(dred_meet_ring_t *r, uint64_t seq, uint32_t k, uint64_t expect,
                                uint64_t want);
/* Wake the members asleep on seq's posts (a root that posted before its data is in). */
void dred_meet_fast_wake(dred_meet_ring_t *r, uint64_t seq);
/* 1 once member k was declared failed (it never posts again, nor moves its progress). */
int dred_meet_fast_gone(dred_meet_ring_t *r, uint32_t k);
/* The ack of a posted member that reads none of seq's posts any more: its look returned 1
 * (given once its call's other work is done -- the ack is not urgent, and the call's locks
 * would wait for the store to leave the core first), or it stops looking before its look
 * resolved (the service died; its post stays for the peers that read it).  Its peers may
 * post in this slot again. */
void dred_meet_fast_done(dred_meet_ring_t *r, uint64_t seq, uint32_t member);

/* The slot `seq` uses in ring r (NULL when r is). */
dred_meet_slot_t *dred_meet_slot_at(dred_meet_ring_t *r, uint64_t seq);

/* 1 while the slot `seq` would use is still held by the reduction DRED_MEET_DEPTH before
 * it and `seq` was not sent to dred-master yet: arriving now would spill it, waiting a
 * moment for the holder's members to take their outcomes may not.  A hint (no lock). */
int dred_meet_slot_held(dred_meet_ring_t *r, uint64_t seq);

/* A member about to copy a large operand before it arrives in `seq`'s slot: wakes the
 * members of seq asleep there now, so that they poll again (for up to the spin budget)
 * when it comes, instead of being woken only by its arrival.  No lock; nothing when nobody
 * sleeps on seq. */
void dred_meet_prewake(dred_meet_ring_t *r, uint64_t seq);

/* The outcome of `seq` in `slot`: 0 while open; 1 when decided, with `*status` DRED_OK or
 * the error every member gets. */
int dred_meet_poll(dred_meet_slot_t *s, uint64_t seq, int *status);

/* The state of `seq` in `slot` (dred_meet_state_t), or -1 when the slot holds another
 * reduction (this one is over there). */
int dred_meet_state(dred_meet_slot_t *s, uint64_t seq);

/* The operands copied into the slot, member k's at k x bytes (the root's place holds
 * nothing). */
const void *dred_meet_data(const dred_meet_slot_t *s);
/* Where member k's operand is (meaningful once the slot decided OK). */
dred_meet_ref_t dred_meet_operand(const dred_meet_slot_t *s, uint32_t k);

/* 1 if `member` counts as released from `seq` without having released it itself: it was
 * declared failed (dred_meet_member_failed), and the blocks it was reading may be gone. */
int dred_meet_given_up(dred_meet_slot_t *s, uint64_t seq, uint32_t member);

/* 1 while member `member`'s pool block may still be read for `seq`: the slot decided OK
 * and its reader has not released it yet (a reduce's root; any member of an allreduce or
 * a bcast).  0: the owner may free the block. */
int dred_meet_needs(dred_meet_slot_t *s, uint64_t seq, uint32_t member);

/* How long a waiter polls before sleeping on the futex (this process; DRED_MEET_SPIN_US).
 * Polling pays only where every member has a core: with more processes than cores it
 * takes the core from the member it waits for, so the caller sets 0 there. */
void dred_meet_set_spin(uint64_t ns);

/* How long a writer DEPTH collectives ahead of a peer polls for that peer's ack before
 * going the slot's way (this process; default 2 us, fast.c says why); after a poll that
 * ran out, the calling thread does not poll again for 500 times as long.  0: never. */
void dred_meet_set_ack_wait(uint64_t ns);

/* A bcast member's outcome before the slot decided: once the root arrived, DRED_OK if
 * its data is readable and `member`'s parameters agree with the root's, MISMATCH if they
 * disagree.  1 with *status when known; 0: the slot's outcome decides (dred_meet_poll). */
int dred_meet_bcast_early(dred_meet_slot_t *s, uint64_t seq, uint32_t member, int *status);
/* dred_meet_state and (is_bcast) dred_meet_bcast_early in one look: returns the state, or
 * -1; *early (with *early_status) says whether the member is served early. */
int dred_meet_look(dred_meet_slot_t *s, uint64_t seq, uint32_t member, int is_bcast,
                   int *early, int *early_status);
/* 1 when `member` can take its outcome of `seq` now: the slot decided, or (is_bcast) the
 * member is served early. */
int dred_meet_ready(dred_meet_slot_t *s, uint64_t seq, uint32_t member, int is_bcast);

/* Wait at most timeout_ns until `member` can take its outcome of `seq` (returns at once
 * if it can). */
void dred_meet_wait(dred_meet_slot_t *s, uint64_t seq, uint32_t member, int is_bcast,
                    uint64_t timeout_ns);

/* The slot's wake-up counter (moves at every outcome and every folded chunk), and a wait
 * for it to move from `epoch`, bounded by timeout_ns (returns at once if it moved). */
uint32_t dred_meet_epoch(const dred_meet_slot_t *s);
void dred_meet_wait_epoch(dred_meet_slot_t *s, uint32_t epoch, uint64_t timeout_ns);

/* An allreduce's chunks: how many for `count` elements of `bytes` in all among n members
 * (every member computes the same), and chunk c's first element and element count. */
uint32_t dred_meet_nchunks(uint64_t count, uint64_t bytes, uint32_t n);
void dred_meet_chunk_range(uint64_t count, uint32_t nchunks, uint32_t c, uint64_t *e0,
                           uint64_t *ne);
/* Claim a chunk of `seq` nobody claimed yet, for `member` to fold: its index, or -1 (all
 * claimed, the phase failed, or not an allreduce or a reduce decided OK), or -2 when every
 * unclaimed chunk waits for an operand still to be written (DRED_MEET_OP_PIECES: wait on
 * the slot's epoch, which every piece and every fold moves).  Which one: the lowest
 * unclaimed; where some member writes its operand after arrival, the claimer's home
 * chunks first (dred_meet_home), from the bottom, then others it can read, from the top.
 * The claimer folds it into a block of its own pool holding that chunk alone (a reduce's
 * root: into its result); lib/paths/meetpath.c decides which reduces share their fold. */
int dred_meet_claim(dred_meet_slot_t *s, uint64_t seq, uint32_t member, uint32_t nchunks);
/* 1 while some chunk of `seq` (of nchunks) is unclaimed, read without the lock (a hint:
 * claiming decides); the chunks claimed so far (bit c). */
int dred_meet_claimable(dred_meet_slot_t *s, uint64_t seq, uint32_t nchunks);
uint64_t dred_meet_chunks_claimed(dred_meet_slot_t *s, uint64_t seq);
/* Whether `reader` can fold chunk c (of nchunks) of `seq`: every operand written after its
 * member arrived (DRED_MEET_OP_PIECES) holds the chunk, except the reader's own, which it
 * reads from its own memory.  No lock. */
int dred_meet_chunk_readable(dred_meet_slot_t *s, uint64_t seq, uint32_t nchunks, uint32_t c,
                             uint32_t reader);
/* Member `member`'s home chunks of nchunks among n members: [*lo, *hi), every member's
 * the same size give or take one, in member order.  A member that writes its operand
 * after arrival copies in its home last: it folds those chunks itself, from its own
 * memory, unless its peers run out of others first. */
void dred_meet_home(uint32_t nchunks, uint32_t n, uint32_t member, uint32_t *lo, uint32_t *hi);
/* Chunk c's result is whole, in the block at offset `part` of `member`'s pool segment
 * (-1: a reduce's root, in its own result).  Wakes waiters.  1 if taken; 0 if `member`
 * does not hold the claim (it was declared failed, and the claim went back): nobody
 * reads its result, its block is the member's to free. */
int dred_meet_chunk_done(dred_meet_slot_t *s, uint64_t seq, uint32_t c, uint32_t member,
                         int64_t part);
/* A chunk could not be folded (its claimer says why): the phase ends with `status` for
 * everyone.  Wakes waiters. */
void dred_meet_chunk_failed(dred_meet_slot_t *s, uint64_t seq, int status);
/* The chunks folded so far (bit c), with the phase's status (DRED_OK, or why it cannot
 * end) and, if given (DRED_MEET_MAX_CHUNKS entries each), each chunk's claimer and where
 * its result is (dred_meet_chunk_done's `part`). */
uint64_t dred_meet_chunks_folded(dred_meet_slot_t *s, uint64_t seq, int *status,
                                 uint8_t *holders, int64_t *parts);

/* A reduce's root that waits before everyone arrived may fold the operands already there
 * (a commutative op: any order), so that little is left once the last one comes (seed
 * 002's first-ready pairing, inside the node).  The members other than `member` (the
 * root) that arrived in `seq`, agree with it and left their operand in a pool block; when
 * there is any, the slot is marked so that nobody claims a chunk of this reduce (the root
 * folds it alone: a helper's partial would hold what the root folded already).  0 once
 * the slot decided.  The root then waits on the arrivals word: it moves at every arrival
 * and every outcome. */
uint64_t dred_meet_solo(dred_meet_slot_t *s, uint64_t seq, uint32_t member);
uint32_t dred_meet_arrivals(const dred_meet_slot_t *s);
void dred_meet_wait_arrivals(dred_meet_slot_t *s, uint32_t w, uint64_t timeout_ns);

/* A bcast's root publishes its data into its block after it arrived, piece by piece, so
 * that the members' copies overlap its own: the bytes in place so far (set by the root,
 * after writing them; wakes waiters), and what a member reads of it, with the status of
 * the phase (DRED_ERR_ROOT_FAILED if the root died before its data was all in). */
void dred_meet_progress_set(dred_meet_slot_t *s, uint64_t seq, uint64_t bytes);
uint64_t dred_meet_progress(dred_meet_slot_t *s, uint64_t seq, int *status);

/* An allreduce member that arrived with DRED_MEET_OP_PIECES: chunks of its operand now
 * in its block (bit c: chunk c of dred_meet_nchunks; set after writing them; wakes
 * waiters).  Should it die while a chunk nobody folded is not in, the chunk phase ends
 * with DRED_ERR_PROC_FAILED for everyone (dred_meet_member_failed): that part never left
 * its process. */
void dred_meet_piece_in(dred_meet_slot_t *s, uint64_t seq, uint32_t member, uint64_t chunks);

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
/* The same for every stream of group `gid` that has a ring. */
void dred_meet_group_member_failed(dred_meet_table_t *t, uint64_t gid, uint32_t member,
                                   int status);

/* Counters for tests: slots of a ring that are in use, spills (ring wrap), mixed slots and
 * slots spilled for want of a place for an operand so far. */
typedef struct {
  uint32_t busy;
  uint64_t spills, mixed, noplace;
} dred_meet_ring_stats_t;
void dred_meet_ring_stats(const dred_meet_ring_t *r, dred_meet_ring_stats_t *st);

#endif
