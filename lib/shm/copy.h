/*
 * copy.h -- copying an operand into a block of the node's shared memory that node peers
 * will read (copy.c).
 */
#ifndef DRED_SHM_COPY_H
#define DRED_SHM_COPY_H

#include <stddef.h>
#include <stdint.h>

/* From how many bytes a copy bypasses the cache (copy.c says why):
 *   DRED_SHM_STREAM_MIN: a block one peer reads once, whole, next -- a reduce non-root's
 *     operand, a bcast root's data; below it the line transfers are few;
 *   DRED_SHM_STREAM_FOLD_MIN: an allreduce member's operand, of which every peer folds a
 *     part with its own at once; below it the peers read it from our cache as fast. */
#define DRED_SHM_STREAM_MIN (16u * 1024u)
#define DRED_SHM_STREAM_FOLD_MIN (1024u * 1024u)

/* memcpy(dst, src, n) into a shared block node peers read next, with non-temporal stores
 * when n >= stream_min (x86-64; elsewhere a plain memcpy) or the measurement says so
 * (dred_shm_copy_adapt_set); stream_min SIZE_MAX: through the cache unless measured.
 * Complete (fenced) when it returns, so a flag published after it is seen after the
 * bytes. */
void dred_shm_copy_in(void *dst, const void *src, size_t n, size_t stream_min);

/* Copies of fewer than n bytes go through the cache whatever their stream_min (copy.c
 * says where that pays).  Called once, at dred_init, before any copy. */
void dred_shm_copy_cached_set(size_t n);

/* Whether a collective's result of `bytes` is written into the caller's buffer past the
 * cache (copy.c, "A large result"): when what each member's call moves through the cache
 * -- `weight` times the result's size -- would fill its share of the last-level cache
 * (four times the bound above), and never for weight x bytes under four times
 * DRED_SHM_RESULT_STREAM_MIN.  The weights: an allreduce member touches its operand, its
 * copy in the pool, the folded chunks and its result; a bcast member only the root's block
 * and its result.  Never under DRED_SHM_STREAM=0.  dred_shm_copy_result: memcpy(dst,
 * src, n), a piece of such a result, that way when it streams.  -D the bound to compare
 * builds. */
#ifndef DRED_SHM_RESULT_STREAM_MIN
#define DRED_SHM_RESULT_STREAM_MIN (4u * 1024u * 1024u)
#endif
#define DRED_SHM_WEIGHT_ALLREDUCE 4u
#define DRED_SHM_WEIGHT_BCAST 2u
int dred_shm_result_streams(uint64_t bytes, unsigned weight);
void dred_shm_copy_result(void *dst, const void *src, size_t n, uint64_t bytes, unsigned weight);
uint64_t dred_shm_result_streamed(void); /* bytes written that way so far (for the log) */

/* on: a copy from DRED_COPYMODE_MIN bytes (copymode.h) that would go through the cache is
 * timed, and streamed instead while such copies measure over three times as slow per byte
 * (copymode.c; DRED_SHM_STREAM=2).  Called once, at dred_init, before any copy. */
void dred_shm_copy_adapt_set(int on);

/* Copies so far whose way the measurement chose (each fourth one timed), by the way they
 * went, and what was measured per size class (for the log at dred_finalize:
 * dred_copymode_describe). */
void dred_shm_copy_counts(uint64_t *cached, uint64_t *streamed);
void dred_shm_copy_describe(char *buf, size_t cap);

/* The last-level cache this process runs under, from sysfs: if every CPU it may run on
 * (its affinity mask) is under one, that cache's size in bytes, and *key a hash of its
 * CPU list (equal keys, the same cache); else 0 (several caches, or sysfs silent). */
size_t dred_shm_llc_mine(uint64_t *key);

#endif /* DRED_SHM_COPY_H */
