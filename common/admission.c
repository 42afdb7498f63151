/*
 * admission.c -- see admission.h.
 */
#include "admission.h"

void dred_admission_init(dred_admission_t *a, size_t cap, uint64_t stall_ns) {
  a->cap = cap;
  a->future = 0;
  a->nadmitted = 0;
  a->nwaiting = 0;
  a->moved_ns = 0;
  a->stall_ns = stall_ns;
  a->flush = 0;
}

static int fits(const dred_admission_t *a, size_t used, size_t now, size_t later) {
  /* compare without overflowing: each term is at most a pool's or an operand's size */
  return a->nadmitted == 0 || (used <= a->cap && a->future <= a->cap - used &&
                               now <= a->cap - used - a->future &&
                               later <= a->cap - used - a->future - now);
}

static void admit(dred_admission_t *a, size_t later) {
  a->nadmitted++;
  a->future += later;
}

dred_admit_verdict_t dred_admission_call(dred_admission_t *a, size_t used, size_t now,
                                         size_t later) {
  if (a->nwaiting == 0 && fits(a, used, now, later)) {
    admit(a, later);
    return DRED_ADMIT_ROOM;
  }
  a->nwaiting++;
  return DRED_ADMIT_WAIT;
}

void dred_admission_take(dred_admission_t *a, size_t later) { admit(a, later); }

dred_admit_verdict_t dred_admission_next(dred_admission_t *a, size_t used, size_t now,
                                         size_t later, uint64_t queued_ns, uint64_t now_ns,
                                         int force, uint64_t *due_ns) {
  uint64_t moved = a->moved_ns > queued_ns ? a->moved_ns : queued_ns;
  dred_admit_verdict_t v;
  *due_ns = 0;
  if (a->nwaiting == 0) return DRED_ADMIT_WAIT; /* nothing waits: a caller's mistake */
  if (fits(a, used, now, later))
    v = DRED_ADMIT_ROOM;
  else if (force)
    v = DRED_ADMIT_FORCED;
  else if (a->flush > 0)
    v = DRED_ADMIT_STALL; /* it waited through the last stall too */
  else if (now_ns >= moved && now_ns - moved >= a->stall_ns) {
    v = DRED_ADMIT_STALL;
    a->flush = a->nwaiting; /* this one and every one queued behind it now */
  } else {
    *due_ns = moved + a->stall_ns;
    return DRED_ADMIT_WAIT;
  }
  admit(a, later);
  a->nwaiting--;
  if (a->flush > 0) a->flush--;
  a->moved_ns = now_ns; /* a later arrival's stall counts from here */
  return v;
}

void dred_admission_spent(dred_admission_t *a, size_t later) {
  a->future -= later <= a->future ? later : a->future;
}

void dred_admission_release(dred_admission_t *a, size_t later, uint64_t now_ns) {
  if (a->nadmitted > 0) a->nadmitted--;
  dred_admission_spent(a, later);
  a->moved_ns = now_ns;
}

void dred_admission_unwait(dred_admission_t *a) {
  if (a->nwaiting > 0) a->nwaiting--;
  if (a->flush > a->nwaiting) a->flush = a->nwaiting;
}

void dred_admission_freed(dred_admission_t *a, uint64_t now_ns) { a->moved_ns = now_ns; }
