/*
 * meet_chunks.c -- a slot's chunk phase (meet.h, "Allreduce and bcast"): once the slot
 * decided, the fold of a large allreduce or reduce is split into chunks that the members
 * who wait claim, fold and publish, and a bcast root's data or a late member's operand is
 * followed as it is written in pieces.
 *
 * How it works.  Every member computes the same chunks (dred_meet_nchunks,
 * dred_meet_chunk_range).  A claim is taken under the slot's lock (claim_pick: the lowest
 * unclaimed chunk, or, where some operand is written after its member arrived, each
 * member's home chunks first), a fold's result is published by its claimer
 * (dred_meet_chunk_done: the block first, then the chunk's bit, release), and everything a
 * member polls while it waits -- what is claimed, folded, written so far -- is read
 * without the lock: each bit is set by the one member it concerns (a claim goes back only
 * when its claimer is declared failed), and the caller holds the slot's seq, so the slot
 * cannot move on under it.  What the members do with the chunks is lib/paths/meetwork.c's;
 * what a member's death does to them (its claims given back, or the fold ended where a
 * chunk never left its process) is dred_meet_member_failed's, in meet.c.
 */
#include <string.h>

#include "../../include/dred_status.h"
#include "meet_int.h"

uint32_t dred_meet_nchunks(uint64_t count, uint64_t bytes, uint32_t n) {
  uint64_t c;
  if (count == 0 || n == 0) return 0;
  c = (bytes + DRED_MEET_CHUNK_BYTES - 1) / DRED_MEET_CHUNK_BYTES;
  if (c < n) c = n; /* every member has one to fold */
  if (c > DRED_MEET_MAX_CHUNKS) c = DRED_MEET_MAX_CHUNKS;
  return (uint32_t)(c < count ? c : count); /* none empty */
}

void dred_meet_chunk_range(uint64_t count, uint32_t nchunks, uint32_t c, uint64_t *e0,
                           uint64_t *ne) {
  /* sizes differ by one element at most (count < 2^63 / DRED_MEET_MAX_CHUNKS) */
  if (nchunks == 0 || c >= nchunks) {
    *e0 = count;
    *ne = 0;
    return;
  }
  *e0 = count * c / nchunks;
  *ne = count * (c + 1) / nchunks - *e0;
}

/* Whether `seq`'s chunk phase is on: decided OK, an allreduce or a reduce, not ended. */
static int chunks_open(const dred_meet_slot_t *s, uint64_t seq) {
  return slot_busy(s) && s->seq == seq && s->state == DRED_MEET_OK &&
         (s->kind == PROTO_KIND_ALLREDUCE || s->kind == PROTO_KIND_REDUCE) &&
         s->fold_status == DRED_OK;
}

/* Chunk c's operands are all in for `reader` to fold it: those written after their
 * member's arrival (s->pieces) hold it, except the reader's own, which it reads where it
 * is in its process (DRED_MEET_OP_PIECES). */
static int chunk_in(dred_meet_slot_t *s, uint32_t c, uint32_t reader) {
  uint64_t pend = __atomic_load_n(&s->pieces, __ATOMIC_ACQUIRE) & ~bit(reader);
  for (; pend != 0; pend &= pend - 1)
    if (!(__atomic_load_n(&s->pin[__builtin_ctzll(pend)], __ATOMIC_ACQUIRE) & bit(c))) return 0;
  return 1;
}

int dred_meet_chunk_readable(dred_meet_slot_t *s, uint64_t seq, uint32_t nchunks, uint32_t c,
                             uint32_t reader) {
  /* no lock: the caller holds `seq` (it has not released it); each writer only adds
   * chunks of its own */
  if (s == NULL || c >= nchunks || reader >= DRED_MEET_MAX_MEMBERS ||
      __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq)
    return 0;
  return chunk_in(s, c, reader);
}

void dred_meet_home(uint32_t nchunks, uint32_t n, uint32_t member, uint32_t *lo, uint32_t *hi) {
  if (n == 0 || member >= n) {
    *lo = *hi = 0;
    return;
  }
  *lo = (uint32_t)((uint64_t)nchunks * member / n);
  *hi = (uint32_t)((uint64_t)nchunks * (member + 1) / n);
}

/* Every chunk of `nchunks` is claimed, read without the lock (the caller holds `seq`):
 * a member woken by each chunk's fold asks this, not the lock its peers need.  A claim
 * given back (its claimer declared failed) wakes the slot, and the next look sees it. */
static int all_claimed(const dred_meet_slot_t *s, uint32_t nchunks) {
  uint64_t all = all_of(nchunks);
  return (__atomic_load_n(&s->claimed, __ATOMIC_ACQUIRE) & all) == all;
}

int dred_meet_claimable(dred_meet_slot_t *s, uint64_t seq, uint32_t nchunks) {
  if (s == NULL || nchunks == 0 || nchunks > DRED_MEET_MAX_CHUNKS ||
      __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq)
    return 0;
  return !all_claimed(s, nchunks);
}

/* The chunk `member` takes next, under the slot's lock: -1 none left, -2 none it can
 * read yet.  With no member writing its operand after arrival (every reduce, and an
 * allreduce copied in before), the lowest unclaimed one.  Otherwise each member takes its
 * home chunks first, from the bottom -- a member writing its operand afterwards copies in
 * only the chunks others read, its home last (dred_meet_home) -- then any other it can
 * read, from the top: the ones a member busy with its home copies in last, when the
 * others have nothing left (lib/paths/meetwork.c). */
static int claim_pick(dred_meet_slot_t *s, uint32_t member, uint32_t nchunks) {
  uint32_t c, lo, hi;
  int waits = 0;
  if (__atomic_load_n(&s->pieces, __ATOMIC_ACQUIRE) == 0) {
    for (c = 0; c < nchunks; c++)
      if (!(s->claimed & bit(c))) return (int)c;
    return -1;
  }
  dred_meet_home(nchunks, s->n, member, &lo, &hi);
  for (c = lo; c < hi; c++)
    if (!(s->claimed & bit(c))) {
      if (chunk_in(s, c, member)) return (int)c;
      waits = 1; /* our home's lowest waits for a peer's copy: take another meanwhile */
      break;
    }
  for (c = nchunks; c-- > 0;)
    if (!(c >= lo && c < hi) && !(s->claimed & bit(c))) {
      if (chunk_in(s, c, member)) return (int)c;
      waits = 1;
    }
  return waits ? -2 : -1;
}

int dred_meet_claim(dred_meet_slot_t *s, uint64_t seq, uint32_t member, uint32_t nchunks) {
  int got = -1;
  if (s == NULL || nchunks == 0 || nchunks > DRED_MEET_MAX_CHUNKS || member >= DRED_MEET_MAX_MEMBERS)
    return -1;
  if (all_claimed(s, nchunks)) return -1;
  dred_meet__lock(s);
  if (chunks_open(s, seq) && !(s->kind == PROTO_KIND_REDUCE && s->solo) && member < s->n &&
      !(released_of(s) & bit(member))) {
    got = claim_pick(s, member, nchunks);
    if (got >= 0) {
      __atomic_store_n(&s->claimer[got], (uint8_t)member, __ATOMIC_RELAXED);
      __atomic_store_n(&s->part[got], -1, __ATOMIC_RELAXED);
      __atomic_or_fetch(&s->claimed, bit((uint32_t)got), __ATOMIC_RELEASE);
    }
  }
  dred_meet__unlock(s);
  return got;
}

uint64_t dred_meet_chunks_claimed(dred_meet_slot_t *s, uint64_t seq) {
  if (s == NULL || __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq) return 0;
  return __atomic_load_n(&s->claimed, __ATOMIC_ACQUIRE);
}

int dred_meet_chunk_done(dred_meet_slot_t *s, uint64_t seq, uint32_t c, uint32_t member,
                         int64_t part) {
  int took = 0;
  if (s == NULL || c >= DRED_MEET_MAX_CHUNKS || member >= DRED_MEET_MAX_MEMBERS) return 0;
  dred_meet__lock(s);
  /* Taken only from the member that holds the claim and still counts: one declared failed
   * folds for nobody (its claim went back when it was declared). */
  if (slot_busy(s) && s->seq == seq && (s->claimed & bit(c)) && !(s->folded & bit(c)) &&
      s->claimer[c] == member && !(released_of(s) & bit(member))) {
    /* the part before the bit: dred_meet_chunks_folded reads them without the lock */
    __atomic_store_n(&s->part[c], part, __ATOMIC_RELAXED);
    __atomic_or_fetch(&s->folded, bit(c), __ATOMIC_RELEASE);
    took = 1;
    dred_meet__wake(s);
  }
  dred_meet__unlock(s);
  return took;
}

void dred_meet_chunk_failed(dred_meet_slot_t *s, uint64_t seq, int status) {
  if (s == NULL) return;
  dred_meet__lock(s);
  if (slot_busy(s) && s->seq == seq && s->fold_status == DRED_OK) {
    __atomic_store_n(&s->fold_status, status != DRED_OK ? status : DRED_ERR_INTERNAL, __ATOMIC_RELEASE);
    dred_meet__wake(s);
  }
  dred_meet__unlock(s);
}

void dred_meet_progress_set(dred_meet_slot_t *s, uint64_t seq, uint64_t bytes) {
  if (s == NULL || __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq) return;
  __atomic_store_n(&s->progress, bytes, __ATOMIC_RELEASE); /* after the bytes themselves */
  dred_meet__wake(s);
}

uint64_t dred_meet_progress(dred_meet_slot_t *s, uint64_t seq, int *status) {
  uint64_t got = 0;
  int st = DRED_ERR_INTERNAL;
  /* no lock: the caller holds `seq` (it has not released it), and the root bumps the
   * count once per piece while the members poll it */
  if (s != NULL && __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq) {
    got = __atomic_load_n(&s->progress, __ATOMIC_ACQUIRE);
    st = __atomic_load_n(&s->fold_status, __ATOMIC_ACQUIRE);
  }
  if (status != NULL) *status = st;
  return got;
}

void dred_meet_piece_in(dred_meet_slot_t *s, uint64_t seq, uint32_t member, uint64_t chunks) {
  if (s == NULL || member >= DRED_MEET_MAX_MEMBERS || __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq)
    return;
  __atomic_or_fetch(&s->pin[member], chunks, __ATOMIC_RELEASE); /* after the bytes themselves */
  dred_meet__wake(s);
}

/* No lock: every member looks after each chunk's fold, and p members taking the lock p
 * times each cost more than the folds at p = 16 (docs/performance.md).  The caller holds
 * `seq` (as in decided()); a folded chunk's claimer and part never change while it does,
 * and chunk_done writes them before the chunk's bit (release).  seq is read again last, in
 * case this member was given up for dead and the slot moved on: then nothing is folded. */
uint64_t dred_meet_chunks_folded(dred_meet_slot_t *s, uint64_t seq, int *status,
                                 uint8_t *holders, int64_t *parts) {
  uint64_t f = 0, left;
  int st = DRED_ERR_INTERNAL;
  uint32_t c;
  if (holders != NULL) memset(holders, 0xff, DRED_MEET_MAX_CHUNKS); /* no holder */
  if (parts != NULL)
    for (c = 0; c < DRED_MEET_MAX_CHUNKS; c++) parts[c] = -1;
  if (s != NULL && __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq &&
      __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE)) {
    f = __atomic_load_n(&s->folded, __ATOMIC_ACQUIRE);
    st = __atomic_load_n(&s->fold_status, __ATOMIC_ACQUIRE);
    for (left = f; left != 0; left &= left - 1) {
      c = (uint32_t)__builtin_ctzll(left);
      if (holders != NULL) holders[c] = __atomic_load_n(&s->claimer[c], __ATOMIC_RELAXED);
      if (parts != NULL) parts[c] = __atomic_load_n(&s->part[c], __ATOMIC_RELAXED);
    }
    if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq || !__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE)) {
      f = 0;
      st = DRED_ERR_INTERNAL;
    }
  }
  if (status != NULL) *status = st;
  return f;
}
