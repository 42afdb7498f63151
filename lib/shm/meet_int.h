/*
 * meet_int.h -- the meeting place's shared-memory layout, for its three files: meet.c (the
 * slots, under a robust lock per slot), meet_chunks.c (a decided slot's chunks) and fast.c
 * (the fast lane's posts, without a lock).
 * Nothing outside lib/shm/ includes it: everyone else goes through meet.h.
 */
#ifndef DRED_MEET_INT_H
#define DRED_MEET_INT_H

#include <pthread.h>
#include <stdint.h>

#include "meet.h"

struct dred_meet_slot {
  /* Waiters poll `wake`: a line of its own, so that the polls do not pull the lock's
   * line away from the member updating the slot under it. */
  _Alignas(64) uint32_t wake; /* futex word: bumped at every outcome                    */
  uint32_t nwait;         /* waiters on `wake` (no syscall to wake nobody)              */
  /* A reduce's root folding early arrivals (dred_meet_solo) waits on `arr` instead: it
   * moves at every arrival and every outcome.  A line of its own, so that arrivals do not
   * disturb the members polling `wake`. */
  _Alignas(64) uint32_t arr;
  uint32_t nwait_arr;
  _Alignas(64) pthread_mutex_t mu; /* robust, process-shared                            */
  uint32_t busy;          /* held by reduction `seq`                                    */
  uint32_t state;         /* dred_meet_state_t                                          */
  int32_t status;         /* FAILED: what everyone gets                                 */
  uint32_t n;             /* the ring's group size, copied here for release             */
  uint64_t seq;
  uint64_t spilled;       /* reductions below this seq that found the slot held: spilled */
  uint64_t arrived;       /* members that arrived                                       */
  uint64_t shown;         /* of those, the ones that met here and whose arrival is whole:
                           * parameters, reference and data written (lock-free looks)   */
  uint64_t master;        /* of those, the ones that went to dred-master                */
  uint64_t served;        /* of those, bcast members served: the root's data readable and
                           * nobody there disagreeing when they could first take it; fixed
                           * by arrival order, never taken back (bcast_serve)            */
  uint64_t imported;      /* of those, the ones recorded from their nonblocking post in the
                           * fast lane (dred_meet__fast_import) whose own arrival, which
                           * only joins, is still to come                               */
  uint64_t released;      /* members done with it (or dead); atomic: release takes no lock */
  int32_t error;          /* the first member error                                     */
  uint32_t root;          /* OK: the root's member index (whose release ends all reads)  */
  uint32_t kind;          /* OK: the collective (PROTO_KIND_*), from the parameters      */
  uint32_t solo;          /* a reduce whose root folds early arrivals alone: no claims    */
  uint32_t arr_watch;     /* a reduce member arrived: its root may wait on `arr`         */
  uint32_t relay;         /* the ring's kind (RING_PLAIN, _RELAY, _PARTIAL): a relay
                           * slot's `root` is its leader once one arrived; an OK partial
                           * slot's, the member that folds                              */
  uint32_t led;           /* relay: a leader arrived (it is `root`)                     */
  int32_t fold_status;    /* the chunk phase: DRED_OK, or why it cannot end              */
  uint64_t claimed;       /* chunks someone folds (or folded)                           */
  uint64_t folded;        /* ... and those whose result is whole where `part` says       */
  uint8_t claimer[DRED_MEET_MAX_CHUNKS]; /* who claimed each chunk                      */
  int64_t part[DRED_MEET_MAX_CHUNKS];    /* the block of the claimer's pool segment that
                                          * holds the chunk's result (-1: a reduce root's
                                          * own, in its result)                         */
  uint64_t progress;      /* a bcast: bytes of the root's data in its block so far       */
  uint64_t pieces;        /* an allreduce: members whose operand is written after their
                           * arrival (DRED_MEET_OP_PIECES) ...                           */
  uint64_t pin[DRED_MEET_MAX_MEMBERS]; /* ... and the chunks of it in their block so far
                                        * (bit c: chunk c)                              */
  proto_params_t p[DRED_MEET_MAX_MEMBERS];
  dred_meet_ref_t ref[DRED_MEET_MAX_MEMBERS]; /* where each member's operand is         */
  _Alignas(64) unsigned char data[DRED_MEET_DATA];
};

/* A member's post in one slot for the fast lane (meet.h, fast.c): written by the member
 * alone, except that a looker marks a member declared failed SLOW (a compare-and-swap on
 * `tag`).  Read by every peer at every collective of the lane. */
struct dred_meet_post {
  _Alignas(64) uint64_t tag; /* fast_tag(seq, FAST_POSTED / _WRITING / _SLOW); 0: never    */
  proto_params_t p;
  unsigned char data[DRED_MEET_FAST_DATA];
};
_Static_assert(sizeof(struct dred_meet_post) == 128, "a post is two cache lines");

/* A member's ack in one slot: seq + 1 of the last seq there whose posts it no longer
 * reads.  A line of its own, read only by a writer that cannot tell otherwise whether
 * its peers are done (fast.c), so that giving it costs its member no transfer. */
struct dred_meet_ack {
  _Alignas(64) uint64_t ack;
};

enum { RING_FREE = 0, RING_CLAIMING, RING_READY };
enum { RING_PLAIN = 0, RING_RELAY, RING_PARTIAL }; /* a ring's kind (its `relay`) */

struct dred_meet_ring {
  uint32_t state;         /* RING_*: claimed once, never given back                    */
  uint32_t n;
  uint64_t gid;
  int64_t stream;         /* DRED_MEET_AUTO, or the explicit tag                        */
  uint32_t workers[DRED_MEET_MAX_MEMBERS];
  uint64_t spills, mixed, noplace; /* under any slot's lock: approximate (tests, stats) */
  uint64_t gone;          /* members declared failed: never meet again (atomic)         */
  uint32_t relay;         /* RING_PLAIN, or a node's ring of a group spanning nodes:
                           * RING_RELAY (dred_meet_relay_of), RING_PARTIAL (_partial_of) */
  uint64_t absent;        /* those two: members that never arrive here (other nodes)     */
  _Alignas(64) struct dred_meet_slot slots[DRED_MEET_DEPTH];
  /* the fast lane (fast.c): each member's post in each slot, a line pair of its own */
  struct dred_meet_post posts[DRED_MEET_DEPTH][DRED_MEET_FAST_MEMBERS];
  struct dred_meet_ack acks[DRED_MEET_DEPTH][DRED_MEET_FAST_MEMBERS];
};

struct dred_meet_table {
  uint32_t magic;
  uint32_t ngroups;
  _Alignas(64) struct dred_meet_ring rings[DRED_MEET_GROUPS];
};

#define MEET_MAGIC 0x6d656574u /* "meet" */

static inline uint64_t bit(uint32_t k) { return (uint64_t)1 << k; }
static inline uint64_t all_of(uint32_t n) { return n >= 64 ? ~(uint64_t)0 : bit(n) - 1; }

/* One turn of a polling loop: lets the sibling hyperthread run, where the CPU has one. */
static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Whether the slot is held: cleared outside the slot's lock by the release that
 * completes it (meet.c, slot_free_if_completed), so read atomically even under the lock. */
static inline uint32_t slot_busy(const dred_meet_slot_t *s) {
  return __atomic_load_n(&s->busy, __ATOMIC_RELAXED);
}

/* The members done with the slot's collective (or dead): atomic, release takes no lock. */
static inline uint64_t released_of(const dred_meet_slot_t *s) {
  return __atomic_load_n(&s->released, __ATOMIC_ACQUIRE);
}

/* meet.c's, for meet_chunks.c: take and give back the slot's robust lock (a holder that
 * died mid-update ends the slot's open collective with DRED_ERR_PROC_FAILED). */
void dred_meet__lock(dred_meet_slot_t *s);
void dred_meet__unlock(dred_meet_slot_t *s);
/* meet.c's, for fast.c and meet_chunks.c: wake the slot's sleepers (no system call when
 * none sleeps); the polling budget of dred_meet_set_spin; a monotonic clock; sleep on a
 * futex word. */
void dred_meet__wake(dred_meet_slot_t *s);
uint64_t dred_meet__spin_ns(void);
uint64_t dred_meet__now_ns(void);
void dred_meet__sleep(uint32_t *word, uint32_t w, uint64_t timeout_ns);
/* fast.c's, for meet.c: an arrival in the slot gives the member's ack for seq (it reads
 * no post of seq any more) as it leaves; and, once the arrival opened the slot for seq or
 * spilled seq (which the lane's members watch: meet.h), wakes those asleep -- after it. */
void dred_meet__fast_ack(dred_meet_ring_t *r, uint64_t seq, uint32_t member);
void dred_meet__fast_wake(dred_meet_ring_t *r, uint64_t seq);
/* fast.c's, for meet.c: a member whose arrival opened the slot for seq or spilled seq
 * (said so, still under the slot's lock) first asks whether a bcast root posted seq in the
 * lane: then the bcast is served from that post alone, and nobody meets in the slot for it.
 * 1 with *status (the root's data, when it reads it, at `take`); 2 the same, but `take`
 * holds a reference to the root's data (dred_meet_ref_t), which the member copies before
 * its ack; else 0: the slot's way goes on, and no root will post seq any more. */
int dred_meet__fast_settle(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                           const proto_params_t *p, int error, void *take, size_t cap,
                           int *status);
/* fast.c's, for meet.c: the member whose arrival opened the slot for seq (under its lock,
 * after dred_meet__fast_settle closed the posts still WRITING, so that what is POSTED now is
 * all there will be) records there, as their arrivals, the members whose post of seq is a
 * nonblocking call's (DRED_MEET_POST_NB): their parameters, and their operand in the slot's
 * data.  Those calls returned, and their threads may not look again for a long time; this
 * way nobody waits for them.  Returns the members recorded (bit k: member k), the opener
 * never among them. */
uint64_t dred_meet__fast_import(dred_meet_ring_t *r, uint64_t seq, uint32_t opener,
                                dred_meet_slot_t *s);

#endif
