/*
 * dataplane.h -- the data plane: where operands live and how an executor combines a
 * provider's data.  One header for three files:
 *   window.c   the windows: each worker's pool segment (shared over the node), the dynamic
 *              window other nodes read through, the segments every worker learns at start
 *   buffer.c   a reduction's buffers: pool blocks or private ones, the operand in dred's
 *              layout and the result out of it, the accumulator from the call to the end
 *   combine.c  the combine: a task run a time slice at a time (in shared memory or by
 *              MPI_Rget), the kernels, an inline reduction's fold
 */
#ifndef DRED_DATAPLANE_H
#define DRED_DATAPLANE_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/proto.h"
#include "../engine/inst.h"
#include "../engine/task.h"

struct dred_rt;
typedef struct dred_rt dred_rt_t;

/* ---- window.c ---------------------------------------------------------------------- */
int dred_dp_init(dred_rt_t *rt);      /* collective over priv (and node) */
/* Release the data plane; collective = 1 (nobody died): also the node's shared window and
 * node communicator and our lock on dwin.  dwin itself goes in dred_boot_teardown(). */
void dred_dp_finalize(dred_rt_t *rt, int collective);

/* ---- buffer.c ---------------------------------------------------------------------- */
int dred_dp_buf_alloc(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off, int *malloced);
/* A block of our pool and nothing else (no private fallback, no MPI call): DRED_OK, or
 * DRED_ERR_NOMEM when the pool has no room.  Freed with dred_dp_buf_free(..., 0). */
int dred_dp_pool_block(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off);
void dred_dp_buf_free(dred_rt_t *rt, size_t bytes, char *p, int64_t pool_off, int malloced);
/* A private copy from dred_bigbuf_alloc (*p, `bytes`) becomes a reduction buffer as
 * dred_dp_buf_alloc would give one: moved into the pool when it has room, else kept where
 * it is and made reachable by RMA -- not copied into a second private buffer.  On error
 * (logged) *p is unchanged and still the caller's. */
int dred_dp_buf_adopt(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off, int *malloced);
/* The pool's use, peak and fallbacks into a PONG (status socket, dredstat status). */
void dred_dp_pool_stats(dred_rt_t *rt, proto_msg_t *pong);
/* From how many bytes this member's operand goes into a shared block past the cache
 * (lib/shm/copy.h): an allreduce member's from DRED_SHM_STREAM_FOLD_MIN (its peers fold
 * it in parts), a reduce non-root's or a bcast root's from DRED_SHM_STREAM_MIN (one
 * reader, once). */
size_t dred_dp_stream_min(const dred_inst_t *in);
/* Fill `dst` (in->bytes) with this member's operand in dred's layout (ti.layout): a copy,
 * the packed elements, or the byte image; from sendbuf, or recvbuf at an in-place root. */
int dred_dp_load(dred_rt_t *rt, const dred_inst_t *in, char *dst);
/* A PACKED or IMAGE collective that succeeded: write elements [first, first + n) of its
 * result, held at `from_buf` in dred's layout (a root's acc, a receiver's res), into
 * recvbuf as the caller's datatype lays them out (holes untouched); a large result goes a
 * part per turn of the loop (distribute.c).  DIRECT: nothing to do. */
int dred_dp_unpack_part(dred_rt_t *rt, const dred_inst_t *in, const char *from_buf,
                        uint64_t first, uint64_t n);
/* On the caller's thread in dred_ireduce: fill the accumulator (a pool block for a
 * non-root member, recvbuf at the root) so the operand is in shared memory at once.
 * Leaves acc NULL when the pool is full: announce then takes the slow path. */
void dred_dp_acc_early(dred_rt_t *rt, dred_inst_t *in);
int dred_dp_acc_prepare(dred_rt_t *rt, dred_inst_t *in); /* allocate + fill the accumulator */
void dred_dp_acc_release(dred_rt_t *rt, dred_inst_t *in);

/* ---- combine.c --------------------------------------------------------------------- */
/* The root of an inline reduction: fold the n operands of `data` (member k at k x bytes;
 * the root's own slot is ignored, its operand is acc) into acc in rank order.  DRED_OK or
 * an error (logged). */
int dred_dp_inline_fold(dred_rt_t *rt, dred_inst_t *in, const uint8_t *data, uint32_t n);
/* The vectorised kernel for the reduction's op and type (kernel.h), or NULL: user ops and
 * pairs without one go through MPI_Reduce_local. */
const struct dred_kernel *dred_dp_kernel(const dred_inst_t *in);
/* One piece of n elements combined into `out` (never one of the operands): out = prov op
 * exec, or exec op prov when exec_left (the executor's operand is left under a
 * non-commutative op).  `kern` as for the task (NULL: MPI_Reduce_local).  0 or an error. */
int dred_dp_piece(const dred_inst_t *in, const struct dred_kernel *kern, int exec_left,
                  const char *exec, const char *prov, char *out, uint64_t n);
/* Advance the head task within a time budget.  Returns 1 if it did work; when the task
 * finishes, *finished is set and *status holds its outcome (a proto_task_status_t).  An
 * RMA task none of whose reads lands for twice DRED_FAIL_TIMEOUT_MS ends as an ERROR with
 * DRED_ERR_PROC_FAILED (combine.c, rma_stalled). */
int dred_dp_task_step(dred_rt_t *rt, dred_task_t *t, int *finished, int *status, int *error);
/* Stop task `t`: its provider died, or the task failed.  Reads still in flight are
 * abandoned with the buffer they land in.  The path that reads another process (MPI_Rget)
 * builds its result out of place, so a provider lost there leaves the executor's buffer
 * untouched: the task's outcome is PROVIDER_LOST. */
void dred_dp_task_abort(dred_rt_t *rt, dred_task_t *t);

#endif /* DRED_DATAPLANE_H */
