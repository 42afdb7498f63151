/*
 * copy.c -- copying an operand into a block of the node's shared memory that node peers
 * will read.
 *
 * Why not memcpy.  A pool block is reused collective after collective, and between two
 * uses a node peer read it: its lines sit in that peer's cache.  memcpy writes through the
 * cache, so every line is first taken from the peer (a read for ownership, a cross-core
 * transfer each).  For a block of tens of kilobytes that is most of the copy's time: at
 * p = 2 on the development machine a 32 KiB bcast root spent 4.4 us in its call, most of
 * it copying its data into its block, and 1.6 us with the stores below
 * (docs/performance.md).  Non-temporal stores write
 * whole lines to memory without reading them first; the peer then reads them from memory
 * instead of from our cache, which costs more per line once the block outgrows what a
 * cache line transfer hides -- so only blocks from DRED_SHM_STREAM_MIN up, and only a
 * bcast root's copy of its data (lib/paths/meetpath.c): not the pipelined publish of a
 * large bcast, whose reader follows the writer piece by piece in cache, nor an allreduce
 * member's copy, which measured no faster (its peers fold it with their own operands).
 */
#include "copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>

void dred_shm_copy_in(void *dst, const void *src, size_t n) {
  char *d = dst;
  const char *s = src;
  size_t head;
  if (n < DRED_SHM_STREAM_MIN) {
    memcpy(dst, src, n);
    return;
  }
  head = (16u - ((uintptr_t)d & 15u)) & 15u; /* SSE2 streaming stores need 16-byte alignment */
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s);
    __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, a);
    _mm_stream_si128((__m128i *)(d + 16), b);
    _mm_stream_si128((__m128i *)(d + 32), c);
    _mm_stream_si128((__m128i *)(d + 48), e);
  }
  memcpy(d, s, n);
  _mm_sfence(); /* the streamed lines are visible before anything published after this */
}

#else

void dred_shm_copy_in(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

#endif
