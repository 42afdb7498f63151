/*
 * tagseq.h -- how many times each explicit tag has been used on one group.
 *
 * A small open-addressing hash table from a tag (>= 0) to its use count, one per group
 * (lib/engine/group.c), read when dred_ireduce builds a reduction's key (common/proto.h,
 * proto_key_explicit).  Counts are never forgotten: every member must number a tag's uses
 * alike, and forgetting at different moments would break that.  8 bytes per distinct tag
 * a group ever used.  Not thread-safe: the caller holds its own lock.
 */
#ifndef DRED_TAGSEQ_H
#define DRED_TAGSEQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t *keys;  /* tag + 1, or 0 for an empty slot */
  uint32_t *uses;
  size_t cap;      /* a power of two, or 0 */
  size_t n;
} dred_tagseq_t;

/* How many times `tag` was bumped (0 for a tag never seen).  tag must be >= 0. */
uint32_t dred_tagseq_uses(const dred_tagseq_t *t, int32_t tag);
/* Count one more use of `tag`.  0, or DRED_ERR_NOMEM (nothing changed) / DRED_ERR_ARG. */
int dred_tagseq_bump(dred_tagseq_t *t, int32_t tag);
void dred_tagseq_free(dred_tagseq_t *t);

#endif
