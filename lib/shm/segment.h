/*
 * segment.h -- the memory of other processes that a worker may read, and the one check
 * every such read passes first.
 *
 * Each worker owns one pool segment: an MPI shared-memory window segment that node peers
 * map directly and that is also attached to the job's dynamic RMA window for readers on
 * other nodes.  At init every worker learns every other worker's segment (its address in
 * the owner's address space, its size, the node it lives on) over MPI -- facts the reader
 * holds itself, not facts a control message claims.  A buffer reference that arrives in a
 * message (proto_buf_t: owner, pool offset, address, length) is checked against that table
 * and against the byte count of the reduction before any access, so a stale, corrupt or
 * hostile reference fails the task with a reason instead of reading someone else's data
 * or faulting in the combine.
 *
 * Why the address is checked too: MPICH reads any address of the target process through a
 * dynamic window, attached or not (with MPICH 4.0.2, an MPI_Rget of an unattached
 * buffer, or one straddling the end of an attached region, returns success and data).  A
 * reference into the pool is therefore pinned to base + offset within the segment.  A
 * private (malloc'd, attached) buffer cannot be bounded by a reader on another node; it
 * is held to the owner's own address space (MPI targets only that process), outside its
 * pool segment, and to the reduction's length.
 *
 * Pure: no MPI, so tests/unit/test_segment.c drives every rule.
 */
#ifndef DRED_SEGMENT_H
#define DRED_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/proto.h"

typedef struct {
  uint64_t base;  /* the segment's address in its owner's address space (0: no pool)    */
  uint64_t size;  /* bytes of the segment, its head included (0: no pool)               */
  uint64_t head;  /* bytes at the head that never hold a buffer (snapshot directory)    */
  int32_t node;   /* the node (common/mpi/boot.h's node_of); -1: not a worker           */
} dred_seg_t;

/* May `b` be read as `bytes` bytes of `provider`'s memory?  `segs` has `nseg` entries,
 * indexed by private-communicator rank.  Returns 0, or -1 with the reason in `why`. */
int dred_seg_check_buf(const dred_seg_t *segs, uint32_t nseg, uint32_t provider,
                       const proto_buf_t *b, uint64_t bytes, char *why, size_t whylen);

/* Does [off, off + len) lie in the buffer area of `seg` (past its head, before its end)?
 * Returns 0, or -1 with the reason in `why`. */
int dred_seg_check_range(const dred_seg_t *seg, int64_t off, uint64_t len, char *why,
                         size_t whylen);

#endif /* DRED_SEGMENT_H */
