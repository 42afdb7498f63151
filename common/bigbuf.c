/*
 * bigbuf.c -- large private buffers on transparent huge pages (see bigbuf.h for why).
 *
 * A mapping of len + 2 MiB is trimmed to a 2 MiB-aligned run of round_up(len, 2 MiB)
 * bytes, so every part of the buffer can be a huge page; the length alone tells the free
 * function which allocator a buffer came from.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "bigbuf.h"

#define HUGE DRED_BIGBUF_ALIGN

static size_t span(size_t len) { return (len + HUGE - 1) & ~(HUGE - 1); }

void *dred_bigbuf_alloc(size_t len) {
  size_t want, whole;
  uintptr_t base, start;
  void *p;
  if (len < DRED_BIGBUF_MIN) return malloc(len > 0 ? len : 1);
  want = span(len);
  if (want < len || want + HUGE < want) return NULL; /* overflow */
  whole = want + HUGE;
  p = mmap(NULL, whole, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  base = (uintptr_t)p;
  start = (base + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
  if (start > base) (void)munmap(p, start - base);
  if (base + whole > start + want) (void)munmap((void *)(start + want), base + whole - (start + want));
  (void)madvise((void *)start, want, MADV_HUGEPAGE); /* a hint: without THP, plain pages */
  return (void *)start;
}

void dred_bigbuf_free(void *p, size_t len) {
  if (p == NULL) return;
  if (len < DRED_BIGBUF_MIN) {
    free(p);
    return;
  }
  (void)munmap(p, span(len));
}
