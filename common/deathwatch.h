/*
 * deathwatch.h -- learn within a millisecond that a process on this node died.
 *
 * Why: a killed process's sockets close only when the kernel has torn down its memory
 * (do_exit runs exit_mm before exit_files).  For a worker holding hundreds of MiB that
 * takes tens to hundreds of ms (docs/performance.md, figures behind defaults), and the
 * master would hear of the death that much later through the control link.  Before that
 * teardown, though, the kernel walks the dying thread's robust futex list: every robust
 * mutex the thread holds is marked "owner died" and a waiter is woken.  So each worker on
 * the master's node holds one robust, process-shared mutex for its whole life, and the
 * master keeps a thread waiting on each: the wait returns EOWNERDEAD the moment the
 * worker's holder thread dies, whatever its memory.
 *
 * Shape.  The watcher (dred-master) creates a small file of slots, one per rank, in the
 * job's private control directory (0600, created exclusively, no symlink followed) and
 * initialises every slot's mutex (PTHREAD_PROCESS_SHARED, PTHREAD_MUTEX_ROBUST).  A
 * watched process maps the file (dred_watch_attach) and, from the thread whose life is
 * the process's life to dred (the runtime thread), locks its own slot (dred_watch_hold);
 * an orderly exit marks the slot LEFT and unlocks it (dred_watch_release).  The watcher
 * starts one libuv thread per watched slot (dred_watch_start): it waits in
 * pthread_mutex_timedlock (100 ms steps, so dred_watch_stop can end it) and reports
 * EOWNERDEAD -- but not a clean release, nor a slot never held -- through a uv_async to
 * the watcher's loop, where the callback runs.  The file can be unlinked once everyone has
 * mapped it.
 *
 * This adds to the control links and heartbeats, never replaces them: it sees only
 * processes on the watcher's node, and only deaths (a stopped process or a lost node is
 * still the heartbeat's).  Anything that goes wrong here is logged and the job runs
 * without it.
 */
#ifndef DRED_DEATHWATCH_H
#define DRED_DEATHWATCH_H

#include <uv.h>

typedef struct dred_watch dred_watch_t;

/* Runs on the watcher's loop thread, once per slot whose holder died. */
typedef void (*dred_watch_cb)(dred_watch_t *w, int slot, void *arg);

/* Watcher: create `path` with `nslots` slots (0..nslots-1), every mutex initialised.
 * Returns 0, or a DRED_ERR_* with a log line (an existing file is refused). */
int dred_watch_create(const char *path, int nslots, dred_watch_t **out);

/* Watched process: map an existing watch file.  Returns 0 or a DRED_ERR_* with a log line
 * (wrong owner, mode, size or magic). */
int dred_watch_attach(const char *path, dred_watch_t **out);

/* Watched process, from the thread whose death must be seen: lock `slot`.  Returns 0 or a
 * DRED_ERR_* (slot out of range, already held, lock failure). */
int dred_watch_hold(dred_watch_t *w, int slot);

/* Orderly end of `slot`'s holder (same thread as dred_watch_hold): mark it LEFT, unlock. */
void dred_watch_release(dred_watch_t *w, int slot);

/* Watcher: watch each slot in `slots` (n of them) from a thread of its own; `cb(w, slot,
 * arg)` runs on `loop`'s thread for each holder that dies.  Call once.  Returns 0 or a
 * DRED_ERR_* (what was started is stopped again). */
int dred_watch_start(dred_watch_t *w, uv_loop_t *loop, const int *slots, int n,
                     dred_watch_cb cb, void *arg);

/* Watcher: end the watch threads (each within ~100 ms) and close the async handle; run the
 * loop afterwards so its close callback runs.  Safe without dred_watch_start. */
void dred_watch_stop(dred_watch_t *w);

/* Unmap and free (after dred_watch_stop, and after its loop ran the close callback). */
void dred_watch_close(dred_watch_t *w);

/* Deaths reported so far (for logs and tests). */
unsigned dred_watch_deaths(const dred_watch_t *w);

#endif /* DRED_DEATHWATCH_H */
