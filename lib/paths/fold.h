/*
 * fold.h -- the rank-order fold of a one-node collective's operands (fold.c), shared by
 * the meeting place's slot (meetpath.c), its fast lane (lanepath.c) and a node's partial
 * (partial.c).
 */
#ifndef DRED_FOLD_H
#define DRED_FOLD_H

#include <stdint.h>

#include "../engine/inst.h"

#define DRED_FOLD_CHUNK (64u * 1024u) /* bytes of the result folded at a time (in cache) */

/* Fold elements [e0, e0 + ne) of the n operands src[0..n-1] into `acc`, which holds
 * src[r]'s elements there, in rank order (the order MPI defines for any op); `tmp` is
 * dred_fold_tmp's scratch.  DRED_OK or DRED_ERR_INTERNAL (MPI_Reduce_local failed). */
int dred_fold(dred_inst_t *in, const char *const *src, uint32_t n, uint32_t r, char *acc,
              uint64_t e0, uint64_t ne, char *tmp);
/* Scratch for the folds with a non-commutative op: NULL otherwise, or with no memory
 * (*rc DRED_ERR_NOMEM); free() it. */
char *dred_fold_tmp(const dred_inst_t *in, int *rc);
/* rc, logged when it says MPI_Reduce_local failed. */
int dred_fold_failed(const dred_inst_t *in, int rc);
/* Chunk c of `nch` (dred_meet_chunk_range) of every operand into `dst`: the chunk alone
 * (a fresh block), or the caller's whole result (dst_is_whole). */
int dred_fold_chunk(dred_inst_t *in, const char *const *src, uint32_t n, uint32_t nch,
                    uint32_t c, char *dst, int dst_is_whole, char *tmp);
/* Elements [e0, e0 + ne) into both the block `blk` peers copy them from (written past the
 * cache when large) and our result `res`, through a stage that stays in L1. */
int dred_fold_chunk_out(dred_inst_t *in, const char *const *src, uint32_t n, uint64_t e0,
                        uint64_t ne, char *blk, char *res, char *tmp);

#endif
