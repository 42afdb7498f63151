/*
 * bigbuf.h -- large private buffers that are cheap to fill the first time.
 *
 * A fresh malloc of many MiB is a new mapping: every 4 KiB page faults on first write.
 * Where a fault is expensive (some VMs), filling a fresh 32 MiB buffer costs many times
 * what filling one backed by transparent huge pages does (2 MiB pages: 16 faults instead
 * of 8192; docs/performance.md, figures behind defaults).  A copy of an operand received
 * over a link (common/net.c) is written exactly once into such a buffer, and that fault
 * storm is most of what an off-node replica costs there.
 *
 * dred_bigbuf_alloc gives buffers of DRED_BIGBUF_MIN bytes or more their own 2 MiB-aligned
 * anonymous mapping, advised MADV_HUGEPAGE (the kernel's "madvise" THP mode, a common
 * default, honours it; with THP off they are ordinary pages: only slower); smaller ones
 * come from malloc.  Why not below 32 MiB: glibc raises its mmap threshold to the size of
 * a freed mapped chunk (up to 32 MiB), so smaller buffers soon come from memory it already
 * holds, with no fault at all -- a fresh huge-page mapping every time (zeroed, and compacted
 * for) made concurrent 28 x 8 MiB 1.6-2.2x slower than that (632-882 vs 352-400 ms).  Free
 * with dred_bigbuf_free and the same length.
 */
#ifndef DRED_BIGBUF_H
#define DRED_BIGBUF_H

#include <stddef.h>

#define DRED_BIGBUF_MIN ((size_t)32 << 20) /* glibc malloc maps anything this large afresh */
#define DRED_BIGBUF_ALIGN ((size_t)2 << 20) /* a huge page: where mapped buffers start */

/* `len` bytes (uninitialised), or NULL when out of memory. */
void *dred_bigbuf_alloc(size_t len);
/* Release a buffer from dred_bigbuf_alloc(len); NULL is ignored. */
void dred_bigbuf_free(void *p, size_t len);

#endif /* DRED_BIGBUF_H */
