/*
 * copymode.h -- which way a copy into a shared block goes, learnt from the copies' own
 * times: through the cache or past it (copymode.c says why; copy.c does the copying).
 */
#ifndef DRED_SHM_COPYMODE_H
#define DRED_SHM_COPYMODE_H

#include <stddef.h>
#include <stdint.h>

/* Copies from this many bytes are timed and may be streamed; smaller ones stay cached. */
#define DRED_COPYMODE_MIN (4u * 1024u)
/* Size classes: powers of two from DRED_COPYMODE_MIN, the last one open-ended (8 MiB up). */
#define DRED_COPYMODE_CLASSES 12

/* The ways, and the flags dred_copymode_pick adds: to a copy that tries the other one
 * (PROBE), to a copy to be timed and noted (TIMED: every try, the first copy each way,
 * and every DRED_COPYMODE_TIME_EVERY-th copy; the others go untimed, so that the fence
 * a timing needs is not paid on every copy). */
#define DRED_COPY_CACHED 0
#define DRED_COPY_STREAMED 1
#define DRED_COPY_PROBE 2
#define DRED_COPY_TIMED 4
#define DRED_COPYMODE_TIME_EVERY 4u

typedef struct {
  uint32_t avg[2]; /* ticks per KiB by way (an average, weight 1/4); 0: not timed yet */
  uint32_t count;  /* copies of this class so far */
  uint32_t next;   /* the copy that tries the other way */
  uint32_t gap;    /* copies between two tries */
} dred_copymode_class_t;

/* Zeroed is the starting state (every copy cached until the first try). */
typedef struct {
  dred_copymode_class_t cls[DRED_COPYMODE_CLASSES];
  uint64_t done[2]; /* copies by way, for the log */
} dred_copymode_t;

/* The way for a copy of n >= DRED_COPYMODE_MIN bytes: DRED_COPY_CACHED or _STREAMED, with
 * DRED_COPY_PROBE when it is this class's try of the way not chosen, and DRED_COPY_TIMED
 * when its time is to be noted.  Thread-safe. */
int dred_copymode_pick(dred_copymode_t *m, size_t n);

/* What the copy of n bytes that `pick` (pick's answer, flags included) sent took, in any
 * clock's ticks (the same clock for every call); ticks are ignored, the copy only counted,
 * without DRED_COPY_TIMED.  Thread-safe. */
void dred_copymode_note(dred_copymode_t *m, size_t n, int pick, uint64_t ticks);

/* The way chosen now for n bytes, without counting a copy (tests, the log). */
int dred_copymode_choice(const dred_copymode_t *m, size_t n);

/* The timed classes as text for the log, "64K 310/120 S" (size, cached/streamed ticks per
 * KiB, the way chosen) separated by commas, into buf (always terminated). */
void dred_copymode_describe(const dred_copymode_t *m, char *buf, size_t cap);

#endif /* DRED_SHM_COPYMODE_H */
