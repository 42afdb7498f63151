/*
 * copy.c -- copying an operand into a block of the node's shared memory that node peers
 * will read.
 *
 * Why not memcpy.  A pool block is reused collective after collective, and between two
 * uses a node peer read it: its lines sit in that peer's cache.  memcpy writes through the
 * cache, so every line is first taken back from the peer (a read for ownership, a
 * cross-core transfer each), and those transfers are slow and erratic.  Non-temporal
 * stores write whole lines to memory without reading them first; the peer then reads them
 * from memory instead of from our cache.  That costs more once the block outgrows what the
 * transfers cost, hence the window DRED_SHM_STREAM_MIN..MAX (figures, p = 2 on the
 * development machine: docs/performance.md, 2026-11-28, session 33).
 *
 * Used where one process writes a block every call and a peer reads it once: a bcast
 * root's copy of its data below the pipelined publish (lib/paths/meetpath.c), a reduce
 * non-root's operand (lib/mpi/buffer.c).  Not the pipelined publish of a large bcast (its
 * reader follows the writer piece by piece, in cache), nor an allreduce member's copy,
 * which measured no faster.
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
  if (n < DRED_SHM_STREAM_MIN || n > DRED_SHM_STREAM_MAX) {
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
