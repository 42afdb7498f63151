/*
 * task.h -- a combine dred-master gave this worker (TASK): the executor's buffer, the
 * provider's operand, and the progress of the combine (lib/mpi/combine.c runs it; the
 * robust layer may run it in place, lib/robust/absorb.c).
 */
#ifndef DRED_TASK_H
#define DRED_TASK_H

#include <mpi.h>
#include <stdint.h>

#include "../../common/proto.h"
#include "../../common/queue.h"
#include "inst.h"

#define DRED_RMA_MAX_DEPTH 64

typedef struct {
  MPI_Request req;
  char *buf;
  uint64_t elem0, nelem;
  int busy;
} dred_rma_slot_t;

typedef struct dred_task {
  dred_queue_t link;
  uint64_t task_id;
  uint64_t group_id;
  int64_t tag;
  uint32_t provider; /* private-communicator rank */
  uint64_t count;
  int exec_is_left;
  proto_buf_t buf;
  dred_inst_t *inst;
  uint32_t exec_member;
  char *dst;           /* the executor's buffer: inst->acc or a recovered copy */
  int64_t dst_pool_off;
  /* where that buffer is recorded, so the RMA path can swap in its result */
  char **own_p;
  int64_t *own_pool_off;
  int *own_malloced;
  int own_ro;          /* that buffer is the replica snapshot: build the result elsewhere */
  /* In-place absorption (absorb.c): the master allows it (TASK's absorb), and whether
   * this task does it -- dst is then our snapshot, listed in directory slot abs_slot,
   * combined piece by piece through scratch `scr` in our pool. */
  int absorb, absorbing;
  uint32_t prov_member;
  int abs_slot;
  char *scr;
  int64_t scr_off;
  int scr_malloced;
  uint64_t piece_elems;
  int oop;             /* this task builds its result in `out` (RMA path, or own_ro)  */
  const struct dred_kernel *kern; /* vectorised combine (kernel.h), or NULL: MPI_Reduce_local */
  /* RMA path: the result is built out of place, so a provider dying mid-read leaves the
   * executor's buffer intact (the reads land here, then the executor's data is combined in) */
  char *out;
  int64_t out_pool_off;
  int out_malloced;
  /* progress */
  int started;
  uint64_t t0;
  uint64_t next_elem;  /* first element not yet fetched/combined */
  uint64_t done_elems;
  const char *src;     /* direct pointer into the provider's pool, or NULL for RMA */
  int nslots;
  int serving;         /* SERVE on sent to the provider (RMA path): send SERVE off */
  /* RMA path: when a read last landed (or the first were posted), and when this task was
   * last stepped -- a read that makes no progress is bounded (combine.c, rma_stalled) */
  uint64_t rma_moved_ns, rma_stepped_ns;
  dred_rma_slot_t slot[DRED_RMA_MAX_DEPTH];
} dred_task_t;

#endif /* DRED_TASK_H */
