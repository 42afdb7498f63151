/*
 * future.h -- a reduction's future (future.c): what the application waits on.
 *
 * A mutex and a condition variable, two references (the application's and the runtime's);
 * a reduction met in the node's shared memory also names its slot, so the waiting thread
 * can settle it (lib/paths/meetpath.c).
 */
#ifndef DRED_FUTURE_H
#define DRED_FUTURE_H

#include <stdint.h>
#include <uv.h>

#include "../../include/dred.h"

struct dred_rt;
struct dred_meet_slot;
struct dred_meet_ring;

struct dred_future {
  uv_mutex_t mu;
  uv_cond_t cv;
  int done;   /* written under mu, after status (release); a look may read it without mu */
  int status;
  int refs; /* the application's and the runtime's */
  int abandoned; /* the application freed it while pending: it wants nothing more */
  /* A reduction that met in shared memory (meetpath.c): nothing will complete it unless
   * the waiting thread looks at its slot.  Set before the future is handed out, then
   * read-only; meet_slot NULL otherwise. */
  struct dred_rt *meet_rt;
  struct dred_meet_slot *meet_slot;
  uint64_t meet_seq, meet_gid;
  int64_t meet_tag;
  uint32_t meet_member; /* this member's index in the slot */
  int meet_bcast;       /* a bcast: served as soon as the root's data is there */
  int meet_prefold;     /* a reduce's root that folds early arrivals while it waits */
  int meet_lane;        /* posted in the fast lane, not resolved yet: its looks are the
                         * lane's, in meet_ring (atomic: cleared once it goes the slot's way) */
  struct dred_meet_ring *meet_ring;
  /* A large allreduce's relay follower (lib/paths/relay.c): its waits copy the result
   * from its node's relay leader (slot, with meet_rt, meet_gid and meet_tag); NULL
   * otherwise.  Set before the future is handed out. */
  struct dred_meet_slot *relay_slot;
};
/* Whether the last freed future and instance are kept for the next call (future.c,
 * runtime.c).  Not under AddressSanitizer: a use of one after its free must reach the
 * sanitizer's quarantine, not a kept object that looks alive. */
#if defined(__SANITIZE_ADDRESS__)
#define DRED_KEEP_SPARE 0
#else
#define DRED_KEEP_SPARE 1
#endif
dred_future *dred_future_new(void);
/* Free a future nobody else ever saw (both references ours, nothing waits on it): no
 * lock taken. */
void dred_future_discard(dred_future *f);
/* Free the future kept for reuse (dred_finalize). */
void dred_future_drop_spare(void);
void dred_future_complete(dred_future *f, int status); /* drops the runtime's reference */
/* Whether f completed, without its mutex (then f->status is readable): future.c */
int dred_future_done(dred_future *f);
/* Runtime thread, before reading the caller's sendbuf: returns 0 with the future locked
 * (read it, then dred_future_unlock), or 1 if the application abandoned the reduction
 * (then sendbuf may already be gone: do not touch it; nothing is locked). */
int dred_future_abandoned_lock(dred_future *f);
void dred_future_unlock(dred_future *f);

#endif /* DRED_FUTURE_H */
