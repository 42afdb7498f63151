/*
 * replica_async.h -- replica store operations run on the libuv thread pool.
 *
 * A worker's runtime thread is a libuv loop that must keep answering heartbeats and
 * driving RMA while an operand's copies are written (docs/design.md: replicas are stored
 * "asynchronously so it overlaps the reduction").  These helpers queue the blocking
 * dred_replica_* call with uv_queue_work() and call `cb(arg, status)` on the loop's
 * thread when it is done; `status` is what the blocking call returned, or
 * DRED_ERR_SHUTDOWN if the work was cancelled before it ran.
 *
 * Contract: every call must be made on the loop's thread.  On DRED_OK the callback will
 * be called exactly once; on any other return it will not be called (and the error was
 * logged).  The caller keeps `data` valid, and for get does not touch it, until the
 * callback runs.  dred_replica_close() waits for queued operations' storage work, so
 * closing the store with operations in flight is safe; run the loop afterwards to
 * deliver their callbacks.  No MPI in here.
 */
#ifndef DRED_REPLICA_ASYNC_H
#define DRED_REPLICA_ASYNC_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "replica.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*dred_replica_cb)(void *arg, int status);

/* dred_replica_put() on the thread pool. */
int dred_replica_put_async(uv_loop_t *loop, dred_replica_t *r, uint64_t group, int64_t tag,
                           uint32_t member, const void *data, size_t len, dred_replica_cb cb,
                           void *arg);

/* dred_replica_get() on the thread pool: `data` is filled before cb runs. */
int dred_replica_get_async(uv_loop_t *loop, dred_replica_t *r, uint64_t group, int64_t tag,
                           uint32_t member, void *data, size_t len, dred_replica_cb cb,
                           void *arg);

/* dred_replica_drop() on the thread pool (dropping 32 MiB of copies takes ~9 ms). */
int dred_replica_drop_async(uv_loop_t *loop, dred_replica_t *r, uint64_t group, int64_t tag,
                            dred_replica_cb cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* DRED_REPLICA_ASYNC_H */
