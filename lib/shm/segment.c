/*
 * segment.c -- the checks of segment.h: a buffer reference is read only if it lies in
 * its owner's memory, inside the owner's pool segment when it says it does, and is exactly
 * as long as the reduction.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "segment.h"

static int refuse(char *why, size_t whylen, const char *fmt, ...) {
  va_list ap;
  if (why != NULL && whylen > 0) {
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int dred_seg_check_range(const dred_seg_t *seg, int64_t off, uint64_t len, char *why,
                         size_t whylen) {
  if (seg == NULL || seg->size == 0)
    return refuse(why, whylen, "the owner has no shared-memory pool");
  if (off < 0 || (uint64_t)off < seg->head)
    return refuse(why, whylen, "offset %" PRId64 " is not in the buffer area (it starts at %" PRIu64 ")",
                  off, seg->head);
  if ((uint64_t)off > seg->size || len > seg->size - (uint64_t)off)
    return refuse(why, whylen,
                  "[%" PRId64 ", +%" PRIu64 ") runs past the end of the %" PRIu64 "-byte segment",
                  off, len, seg->size);
  return 0;
}

int dred_seg_check_buf(const dred_seg_t *segs, uint32_t nseg, uint32_t provider,
                       const proto_buf_t *b, uint64_t bytes, char *why, size_t whylen) {
  const dred_seg_t *s;
  if (segs == NULL || b == NULL) return refuse(why, whylen, "no segment table");
  if (provider >= nseg || segs[provider].node < 0)
    return refuse(why, whylen, "rank %" PRIu32 " is not a worker of this job", provider);
  s = &segs[provider];
  if (b->owner != provider)
    return refuse(why, whylen, "the buffer belongs to rank %" PRIu32 ", not to the provider %" PRIu32,
                  b->owner, provider);
  if (b->len != bytes)
    return refuse(why, whylen, "the buffer holds %" PRIu64 " bytes, the reduction %" PRIu64, b->len,
                  bytes);
  if (bytes == 0) return 0; /* nothing will be read */
  if (b->pool_off >= 0) {
    if (dred_seg_check_range(s, b->pool_off, bytes, why, whylen) != 0) return -1;
    if (b->addr != s->base + (uint64_t)b->pool_off)
      return refuse(why, whylen,
                    "address 0x%" PRIx64 " is not offset %" PRId64 " of the segment at 0x%" PRIx64,
                    b->addr, b->pool_off, s->base);
    return 0;
  }
  if (b->pool_off != -1)
    return refuse(why, whylen, "pool offset %" PRId64 " is neither a block nor -1", b->pool_off);
  /* A private buffer: read by RMA from the owner's own address space. */
  if (b->addr == 0) return refuse(why, whylen, "a private buffer at address 0");
  if (bytes > UINT64_MAX - b->addr)
    return refuse(why, whylen, "[0x%" PRIx64 ", +%" PRIu64 ") wraps the address space", b->addr,
                  bytes);
  if (s->size > 0 && b->addr < s->base + s->size && b->addr + bytes > s->base)
    return refuse(why, whylen,
                  "a private buffer [0x%" PRIx64 ", +%" PRIu64 ") overlaps the pool segment", b->addr,
                  bytes);
  return 0;
}
