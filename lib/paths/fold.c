/*
 * fold.c -- the fold of a one-node collective's operands in rank order, read in place from
 * the members' blocks of the node's shared memory (the slot's chunks and a reduce root's
 * fold, meetpath.c; the fast lane's, lanepath.c; a node's partial, partial.c).
 *
 * One rule everywhere: operand k's elements are combined in member order, so a
 * non-commutative op gets the rank-order result MPI defines, and every member that folds
 * the same elements gets the same bits (an allreduce's members may fold a chunk each, or
 * each the whole, and agree).  Predefined ops on basic types use lib/engine/kernel.c's
 * vectorised loops; anything else MPI_Reduce_local, through a scratch chunk when the
 * left operand must stay left.  Work goes DRED_FOLD_CHUNK bytes at a time so the piece
 * being combined stays in cache.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../engine/inst.h"
#include "../engine/kernel.h"
#include "../engine/typecheck.h"
#include "../mpi/dataplane.h"
#include "../shm/copy.h"
#include "../shm/meet.h"
#include "fold.h"

/* An allreduce up to this size, or one whose result goes past the cache, folds each chunk
 * it claims through an L1-sized stage (dred_fold_chunk_out).  -D it to compare builds. */
#ifndef STAGED_FOLD_MAX
#define STAGED_FOLD_MAX (4u * 1024u * 1024u)
#endif
#define STAGE_BYTES (16u * 1024u)

/* Fold elements [e0, e0 + ne) of the n operands src[0..n-1] into `acc` (which holds
 * src[r]'s elements there) in their order, DRED_FOLD_CHUNK of acc at a time: each piece becomes
 * ((x[r] op x[r+1]) op ... op x[n-1]), then x[k] op that for k = r-1 down to 0 -- by
 * associativity the rank-order result MPI defines.  `tmp` (DRED_FOLD_CHUNK rounded up to an
 * element) is scratch for a non-commutative op. */
int dred_fold(dred_inst_t *in, const char *const *src, uint32_t n, uint32_t r, char *acc,
              uint64_t e0, uint64_t ne, char *tmp) {
  const dred_typeinfo_t *ti = &in->ti;
  const dred_kernel_t *kern = dred_dp_kernel(in);
  MPI_Aint sh = ti->layout == DRED_LAYOUT_IMAGE ? ti->true_lb : 0;
  uint64_t ce = DRED_FOLD_CHUNK / ti->extent, end = e0 + ne;
  uint32_t k;
  if (ce == 0) ce = 1;
  for (; e0 < end; e0 += ce) {
    uint64_t m = end - e0 < ce ? end - e0 : ce;
    size_t off = (size_t)e0 * ti->extent, nb = (size_t)m * ti->extent;
    int cnt = (int)(m * ti->mult);
    char *a = acc + off;
    for (k = r + 1; k < n; k++) { /* a = a op x[k] */
      if (ti->commutative && kern != NULL) {
        kern->inplace(src[k] + off, a, (size_t)cnt);
      } else if (ti->commutative) {
        if (MPI_Reduce_local(src[k] + off - sh, a - sh, cnt, ti->exec_type, in->op) != MPI_SUCCESS)
          return DRED_ERR_INTERNAL;
      } else {
        memcpy(tmp, src[k] + off, nb);
        if (MPI_Reduce_local(a - sh, tmp - sh, cnt, ti->exec_type, in->op) != MPI_SUCCESS)
          return DRED_ERR_INTERNAL;
        memcpy(a, tmp, nb);
      }
    }
    for (k = r; k-- > 0;) { /* a = x[k] op a */
      if (kern != NULL)
        kern->inplace(src[k] + off, a, (size_t)cnt);
      else if (MPI_Reduce_local(src[k] + off - sh, a - sh, cnt, ti->exec_type, in->op) != MPI_SUCCESS)
        return DRED_ERR_INTERNAL;
    }
  }
  return DRED_OK;
}

char *dred_fold_tmp(const dred_inst_t *in, int *rc) {
  uint64_t ce = DRED_FOLD_CHUNK / in->ti.extent;
  char *tmp;
  *rc = DRED_OK;
  if (in->ti.commutative) return NULL;
  if ((tmp = malloc((size_t)(ce == 0 ? 1 : ce) * in->ti.extent)) == NULL) *rc = DRED_ERR_NOMEM;
  return tmp;
}

int dred_fold_failed(const dred_inst_t *in, int rc) {
  if (rc == DRED_ERR_INTERNAL)
    DRED_ERROR("MPI_Reduce_local failed while folding a collective met in shared memory "
               "(tag " PROTO_KEY_FMT ")", PROTO_KEY_ARG(in->tag));
  return rc;
}

/* Fold elements [e0, e0 + ne) of every operand src[0..n-1] in rank order into `out`,
 * which receives those elements alone. */
static int fold_range(dred_inst_t *in, const char *const *src, uint32_t n, uint64_t e0,
                      uint64_t ne, char *out, char *tmp) {
  const char *part[DRED_MEET_MAX_MEMBERS];
  size_t ext = in->ti.extent;
  uint32_t k;
  const dred_kernel_t *kern = dred_dp_kernel(in);
  for (k = 0; k < n; k++) part[k] = src[k] + e0 * ext;
  if (n >= 2 && kern != NULL) { /* x[0] op x[1] straight into out: no copy of x[0] first */
    kern->outofplace(part[1], part[0], out, (size_t)(ne * in->ti.mult));
    return n == 2 ? DRED_OK
                  : dred_fold_failed(in, dred_fold(in, part + 1, n - 1, 0, out, 0, ne, tmp));
  }
  memcpy(out, part[0], ne * ext);
  return dred_fold_failed(in, dred_fold(in, part, n, 0, out, 0, ne, tmp));
}

/* Fold chunk c of every operand src[0..n-1] in rank order into `dst`, which holds the
 * chunk alone (a fresh block) or -- whole -- the caller's result (dst_is_whole). */
int dred_fold_chunk(dred_inst_t *in, const char *const *src, uint32_t n, uint32_t nch,
                    uint32_t c, char *dst, int dst_is_whole, char *tmp) {
  uint64_t e0, ne;
  dred_meet_chunk_range(in->count, nch, c, &e0, &ne);
  return fold_range(in, src, n, e0, ne, dst_is_whole ? dst + e0 * in->ti.extent : dst, tmp);
}

/* Fold elements [e0, e0 + ne) -- a chunk -- into both the fresh block `blk` peers copy
 * it from and our result `res`.  Up to STAGED_FOLD_MAX, STAGE_BYTES at a time through a
 * buffer that stays in L1: the chunk is read once and written twice from cache, instead
 * of folded into blk and then read back from it for res (a fifth less time for an
 * allreduce of 256 KiB to 4 MiB at p = 2 on the development machine; larger ones measured
 * slower: docs/performance.md, session 40).  From DRED_SHM_STREAM_FOLD_MIN the block is
 * written past the cache, as the operands are (copy.c): the same time with warm caches,
 * 5-14 % less with cold ones.  A result that outgrows the cache (dred_shm_result_streams)
 * is staged at every size, and written to res past the cache: then neither write reads
 * its lines first (session 70: a sixth to a quarter less time for 6-16 MiB at p = 2). */
int dred_fold_chunk_out(dred_inst_t *in, const char *const *src, uint32_t n, uint64_t e0,
                        uint64_t ne, char *blk, char *res, char *tmp) {
  static _Thread_local _Alignas(64) char stage[STAGE_BYTES];
  size_t ext = in->ti.extent, stream_min = in->bytes >= DRED_SHM_STREAM_FOLD_MIN ? 0 : SIZE_MAX;
  uint64_t step = STAGE_BYTES / ext, k, m;
  int rc = DRED_OK, past = dred_shm_result_streams(in->bytes, DRED_SHM_WEIGHT_ALLREDUCE);
  if ((in->bytes > STAGED_FOLD_MAX && !past) || step == 0) { /* (0: an element over the stage) */
    if ((rc = fold_range(in, src, n, e0, ne, blk, tmp)) == DRED_OK)
      dred_shm_copy_result(res + e0 * ext, blk, ne * ext, in->bytes,
                           DRED_SHM_WEIGHT_ALLREDUCE);
    return rc;
  }
  for (k = 0; k < ne && rc == DRED_OK; k += m) {
    m = ne - k < step ? ne - k : step;
    if ((rc = fold_range(in, src, n, e0 + k, m, stage, tmp)) == DRED_OK) {
      dred_shm_copy_in(blk + k * ext, stage, m * ext, stream_min);
      dred_shm_copy_result(res + (e0 + k) * ext, stage, m * ext, in->bytes,
                           DRED_SHM_WEIGHT_ALLREDUCE);
    }
  }
  return rc;
}
