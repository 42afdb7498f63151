/*
 * copymode.c -- which way a copy into a shared block goes, learnt from the copies' own
 * times: through the cache, or past it with non-temporal stores (copy.c).
 *
 * Why measure.  A block of the node's shared memory is rewritten collective after
 * collective, and between two uses a peer read it, so its lines sit in that peer's cache.
 * A cached write first takes each line back (a read for ownership).  Where the peer's
 * core shares our last-level cache that costs little and the peer then reads the block
 * from that cache, so copy.c goes through the cache there.  But what sysfs says need not
 * hold: in a virtual machine the host may run two virtual CPUs that sysfs puts under one
 * cache on dies with caches of their own, and move them between the two while the job
 * runs.  On the development guest (AMD EPYC, sysfs: one 32 MiB L3) a 2 MiB bcast took
 * 68 us in one state and 850-880 us in another that lasted minutes, where MPI took 210 us
 * in both; with its copies streamed, 210 us (docs/performance.md, session 67).  So each
 * process times its copies and streams while cached ones cost more than three times as
 * much per byte as streamed ones.  A copy is timed until its stores are visible (copy.c
 * fences before reading the clock): a cached rewrite's reads for ownership go on after
 * its last store instruction, and timed without the fence a 4-32 KiB copy hid much of
 * them (3 x where they cost 6-18 x).  Three, because a streamed block costs its reader
 * too, which the writer's clock does not see: where the peer shares our cache a cached
 * rewrite of its lines measured 0.4-2.6 x a streamed one (fenced), and the reader of a
 * streamed block, reading memory instead of that cache, took up to 3.5 x as long, so
 * streaming there loses; where the peer's core is on another die the fenced cached
 * rewrite measured 2-4 x at 4 KiB and 3.4-12 x from 16 KiB, and the reader takes as long
 * either way (docs/performance.md, session 68).  Only every DRED_COPYMODE_TIME_EVERY-th
 * copy and every try is timed: the fence costs a copy that would otherwise drain its
 * stores behind the next work (a 4 KiB bcast 5 % of its time when every copy was).
 *
 * How.  Per size class (powers of two from DRED_COPYMODE_MIN) and way, an average of
 * ticks per KiB, weight 1/4, a sample counted at most 4 x the average (a copy the
 * scheduler interrupted does not swing it; a lasting change moves it in a few copies).
 * Every gap-th copy of a class tries the way not chosen, so its average stays current:
 * the gap doubles from GAP_MIN to GAP_MAX while the tries confirm the choice, and falls
 * back to GAP_MIN when one changes it or would have won alone against the chosen way's
 * average (the state may be changing: look again soon).  At GAP_MAX a try the wrong way
 * adds 4 % to the copies' time where it is ten times slower.  Racy by design: threads
 * read and write the fields with relaxed atomics, and a lost update only delays a
 * decision by a copy.
 */
#include "copymode.h"

#include <stdio.h>

#define GAP_MIN 8u
#define GAP_MAX 256u
#ifndef STREAM_FACTOR
#define STREAM_FACTOR 3u /* stream while cached copies cost more than this x per byte */
#endif

#define LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* n's size class: floor(log2(n / DRED_COPYMODE_MIN)), the last class open-ended */
static unsigned class_index(size_t n) {
  unsigned long long q = n / DRED_COPYMODE_MIN;
  unsigned k = q > 1 ? 63u - (unsigned)__builtin_clzll(q) : 0u;
  return k < DRED_COPYMODE_CLASSES ? k : DRED_COPYMODE_CLASSES - 1;
}

static int choice_of(const dred_copymode_class_t *c) {
  uint64_t cached = LD(&c->avg[DRED_COPY_CACHED]), streamed = LD(&c->avg[DRED_COPY_STREAMED]);
  return streamed > 0 && cached > STREAM_FACTOR * streamed ? DRED_COPY_STREAMED
                                                           : DRED_COPY_CACHED;
}

int dred_copymode_choice(const dred_copymode_t *m, size_t n) {
  return choice_of(&m->cls[class_index(n)]);
}

int dred_copymode_pick(dred_copymode_t *m, size_t n) {
  dred_copymode_class_t *c = &m->cls[class_index(n)];
  int way = choice_of(c);
  uint32_t count = __atomic_add_fetch(&c->count, 1, __ATOMIC_RELAXED), gap = LD(&c->gap);
  if ((int32_t)(count - LD(&c->next)) < 0)
    return way | (count % DRED_COPYMODE_TIME_EVERY == 0 || LD(&c->avg[way]) == 0 ? DRED_COPY_TIMED
                                                                                : 0);
  ST(&c->next, count + (gap > 0 ? gap : GAP_MIN)); /* note() sets it again from the try */
  return (way ^ 1) | DRED_COPY_PROBE | DRED_COPY_TIMED;
}

void dred_copymode_note(dred_copymode_t *m, size_t n, int pick, uint64_t ticks) {
  dred_copymode_class_t *c;
  int way = pick & 1, before;
  uint64_t kib, sample, avg, next_avg;
  __atomic_add_fetch(&m->done[way], 1, __ATOMIC_RELAXED);
  if (!(pick & DRED_COPY_TIMED)) return; /* three copies in four: counted only */
  c = &m->cls[class_index(n)];
  before = pick & DRED_COPY_PROBE ? choice_of(c) : 0; /* tries only */
  kib = n / 1024u > 0 ? n / 1024u : 1;
  sample = ticks / kib;
  avg = LD(&c->avg[way]);
  if (sample == 0) sample = 1;
  if (sample > UINT32_MAX / 8) sample = UINT32_MAX / 8;
  if (avg == 0) {
    next_avg = sample;
  } else {
    uint64_t s = sample < 4 * avg ? sample : 4 * avg;
    next_avg = s >= avg ? avg + (s - avg) / 4 : avg - (avg - s) / 4;
    if (next_avg == 0) next_avg = 1;
  }
  ST(&c->avg[way], (uint32_t)next_avg);
  if (pick & DRED_COPY_PROBE) {
    uint32_t gap = LD(&c->gap);
    uint64_t other = LD(&c->avg[way ^ 1]); /* the chosen way's average */
    /* would this try alone have won?  (cached wins unless over STREAM_FACTOR x streamed) */
    int would = way == DRED_COPY_STREAMED ? other > STREAM_FACTOR * sample
                                          : sample <= STREAM_FACTOR * other;
    if (gap == 0) gap = GAP_MIN;
    if (choice_of(c) != before || would)
      gap = GAP_MIN;
    else if (gap < GAP_MAX)
      gap *= 2;
    ST(&c->gap, gap);
    ST(&c->next, LD(&c->count) + gap);
  }
}

void dred_copymode_describe(const dred_copymode_t *m, char *buf, size_t cap) {
  size_t used = 0;
  if (cap == 0) return;
  buf[0] = 0;
  for (unsigned k = 0; k < DRED_COPYMODE_CLASSES && used < cap; k++) {
    const dred_copymode_class_t *c = &m->cls[k];
    size_t kib = (DRED_COPYMODE_MIN >> 10) << k;
    int w;
    if (LD(&c->count) == 0) continue;
    w = snprintf(buf + used, cap - used, "%s%zu%s %u/%u %c", used > 0 ? ", " : "",
                 kib >= 1024 ? kib >> 10 : kib, kib >= 1024 ? "M" : "K",
                 (unsigned)LD(&c->avg[DRED_COPY_CACHED]), (unsigned)LD(&c->avg[DRED_COPY_STREAMED]),
                 choice_of(c) == DRED_COPY_STREAMED ? 'S' : 'C');
    if (w < 0) break;
    used += (size_t)w;
  }
}
