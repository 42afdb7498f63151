/*
 * admission.h -- the rules of pool admission, as pure bookkeeping: which reduction may
 * take room in a worker's shared-memory pool now, which must wait, and when a wait has
 * gone on long enough that the oldest goes ahead anyway.
 *
 * No memory, no threads, no clock of its own: the caller passes the pool's use and the
 * time, and keeps the queue (lib/engine/admit.c does, under the pool's lock).  So CMocka
 * drives every rule directly (tests/unit/test_admission.c).
 *
 * The rules:
 *   - A reduction needs `now` bytes at once (its operand) and `later` bytes at its first
 *     combine (a partial result that cannot be combined in place), and is admitted if
 *     what the pool holds, plus the first results admitted reductions have yet to
 *     allocate, plus both, fits the pool -- or if no other reduction is admitted (one
 *     larger than the pool still runs, alone).
 *   - While any reduction waits, a new one waits too: admission is first come, first
 *     served, which is what keeps members that call in the same order deadlock-free.
 *   - The oldest waiting one goes once it fits, or when nothing was freed and the queue
 *     did not move for `stall_ns` (members calling in different orders can hold each
 *     other's room), or when the caller forces it (dred_finalize stopped waiting).
 *   - A stall lets go every reduction waiting at that moment, not only the oldest: they
 *     all sat through the same stall, and letting one go per stall_ns serialised the
 *     way out of such a deadlock (64 reductions in per-member shuffled orders on a 1 MiB
 *     pool over three simulated nodes: ~45 stalls in a row per worker, 21 s).  Those
 *     that arrive after the stall wait for room, or for a stall of their own.
 */
#ifndef DRED_ADMISSION_H
#define DRED_ADMISSION_H

#include <stddef.h>
#include <stdint.h>

typedef struct dred_admission {
  size_t cap;         /* the pool's size in bytes */
  size_t future;      /* first results admitted reductions have yet to allocate */
  uint32_t nadmitted; /* admitted and not yet released */
  uint32_t nwaiting;  /* waiting for room */
  uint64_t moved_ns;  /* when room was last freed or the queue last moved */
  uint64_t stall_ns;  /* no movement this long: the oldest goes anyway */
  uint32_t flush;     /* waiting at the last stall, not gone yet: they go without waiting */
} dred_admission_t;

typedef enum {
  DRED_ADMIT_WAIT = 0,  /* not now */
  DRED_ADMIT_ROOM = 1,  /* admitted: it fits */
  DRED_ADMIT_STALL = 2, /* admitted without room: nothing moved for stall_ns */
  DRED_ADMIT_FORCED = 3 /* admitted because the caller said so */
} dred_admit_verdict_t;

void dred_admission_init(dred_admission_t *a, size_t cap, uint64_t stall_ns);
/* A reduction at its call, the pool holding `used` bytes: DRED_ADMIT_ROOM (admitted,
 * `later` counted) or DRED_ADMIT_WAIT (counted as waiting; the caller queues it). */
dred_admit_verdict_t dred_admission_call(dred_admission_t *a, size_t used, size_t now,
                                         size_t later);
/* A reduction whose operand is in the pool already (the application's block): counted as
 * admitted whatever the room -- waiting would not free anything. */
void dred_admission_take(dred_admission_t *a, size_t later);
/* The oldest waiting reduction, queued at queued_ns: a verdict; on DRED_ADMIT_WAIT,
 * *due_ns is when it would stall.  An admitted one stops waiting. */
dred_admit_verdict_t dred_admission_next(dred_admission_t *a, size_t used, size_t now,
                                         size_t later, uint64_t queued_ns, uint64_t now_ns,
                                         int force, uint64_t *due_ns);
/* An admitted reduction allocated its first result (`later` bytes it was admitted with). */
void dred_admission_spent(dred_admission_t *a, size_t later);
/* An admitted reduction ended; `later` is what it has not spent (0 if it did). */
void dred_admission_release(dred_admission_t *a, size_t later, uint64_t now_ns);
/* A waiting reduction ended before it was admitted. */
void dred_admission_unwait(dred_admission_t *a);
/* Pool memory was freed (room may be back). */
void dred_admission_freed(dred_admission_t *a, uint64_t now_ns);

#endif /* DRED_ADMISSION_H */
