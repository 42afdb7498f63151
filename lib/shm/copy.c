/*
 * copy.c -- copying an operand into a block of the node's shared memory that node peers
 * will read.
 *
 * Why not memcpy.  A pool block is reused collective after collective, and between two
 * uses a node peer read it: its lines sit in that peer's cache.  memcpy writes through the
 * cache, so every line is first taken back from the peer (a read for ownership, a
 * cross-core transfer each), and those transfers are slow and erratic: on the development
 * machine, rewriting 1 MiB a peer has just read takes 140-170 us where a fresh 1 MiB
 * takes 23.  Non-temporal stores write whole lines to memory without reading them first
 * (50 us there); the peer then reads them from memory instead of from our cache, which
 * measured no slower from 1 MiB up.  Below that it depends on who reads: a block read
 * once, whole, by one peer streams from DRED_SHM_STREAM_MIN; an allreduce member's
 * operand, folded in parts by every peer right after, only from DRED_SHM_STREAM_FOLD_MIN
 * (figures, p = 2 on the development machine: docs/performance.md, sessions 33 and 40).
 *
 * Used where one process writes a block every call and peers read it next: a bcast
 * root's copy of its data below the pipelined publish where processes outnumber cores
 * (lib/paths/meetpath.c), a reduce non-root's operand and an allreduce member's
 * (lib/mpi/buffer.c, meetpath.c), and a large allreduce's folded chunks (meetpath.c).
 * Not the pipelined publish of a bcast (its reader follows the writer piece by piece, in
 * cache), nor anything in the fast lane (16 KiB at most: streaming it measured slower).
 */
#include "copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>

void dred_shm_copy_in(void *dst, const void *src, size_t n, size_t stream_min) {
  char *d = dst;
  const char *s = src;
  size_t head;
  if (n < stream_min || n < 64) {
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

void dred_shm_copy_in(void *dst, const void *src, size_t n, size_t stream_min) {
  (void)stream_min;
  memcpy(dst, src, n);
}

#endif
