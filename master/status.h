/*
 * status.h -- dred-master's live status socket, read by `dredstat status`.
 *
 * A libuv pipe server on <storage_dir>/job-<id>/dred-master.sock (DRED_STOREDIR_STATUS_SOCKET
 * in storage/storedir.h, where dredstat finds it too; a Unix domain socket, mode 0600,
 * so only the job's user can read it; nothing listens on a network port).  Every
 * connection gets one plain-text snapshot of the master (workers alive/failed/said bye,
 * reductions and tasks in flight, message counters, tasks per second, uptime) and is
 * closed.  It runs inside the master's own loop (m->loop), so the snapshot is taken on the
 * master's thread and needs no locking.
 *
 * Not to be confused with common/status.h (status-code text): this guard and these names
 * are the master's.
 */
#ifndef DRED_MASTER_STATUS_H
#define DRED_MASTER_STATUS_H

#include "master.h"

/* Start listening.  Call after uv_loop_init(&m->loop).  A stale socket left by a dead
 * master is removed; a live one (another master using the same storage directory) or a
 * non-socket file at the path is left alone and the status server is not started.
 * Returns DRED_OK, or DRED_ERR_ARG / DRED_ERR_STORAGE / DRED_ERR_NOMEM (logged).  The
 * master runs fine without it, so callers may carry on after an error. */
int master_status_start(master_t *m);

/* Close the server and any connection still open (uv_close: the caller's final uv_run
 * completes them) and unlink the socket.  Safe when start failed or was never called. */
void master_status_stop(master_t *m);

#endif /* DRED_MASTER_STATUS_H */
