/*
 * replica.h -- the node-local replica store: checksummed copies of reduction operands.
 *
 * Fault tolerance (docs/design.md, seed 002 section 3): when member i of a group calls reduce,
 * its operand O_i is written to worker i's own store and to the store of the next live
 * member, so the operand survives the loss of the buffer it was combined into, or of
 * worker i itself.  Recovery reads a copy back; the copies of a reduction are dropped when
 * it ends.  One store per worker process, one SQLite file per store:
 *
 *     <dir>/dred-replica-<worker>.db        (<dir> is on the node's local disk)
 *
 * Schema (version 2 in PRAGMA user_version, application_id 0x44524452 "DRDR"):
 *   replicas(id INTEGER PRIMARY KEY, job TEXT, grp INTEGER, tag INTEGER, member INTEGER,
 *            len INTEGER, sum INTEGER, pieces INTEGER, UNIQUE(grp, tag, member))
 *   pieces(id INTEGER PRIMARY KEY, copy INTEGER, idx INTEGER, data BLOB,
 *          UNIQUE(copy, idx))           -- a copy's bytes, 1 MiB per row, idx 0, 1, ...
 *   meta(key TEXT PRIMARY KEY, value TEXT)       -- 'job': the job that owns the store
 * A version-1 store (one blob per copy) is dropped and recreated on open.
 * `grp` and `sum` are the uint64 values stored bit-for-bit (they may read back negative).
 * `sum` is dred_replica_checksum(data, len).
 *
 * Lifetime: opening a store deletes the copies any other job left in it (a job that died
 * without closing), and holds an exclusive lock on the file until close, so a second live
 * process (say, another job given the same directory and worker number) is refused
 * instead of silently deleting this job's copies.  The kernel drops the lock when a
 * process dies, so a dead job's store can always be reopened and cleaned.
 *
 * Threads: every call may be made from any thread, concurrently (the worker's loop thread
 * and the libuv thread pool, see replica_async.h).  Calls on one store are serialised by a
 * mutex around its single connection: SQLite allows one writer per file anyway.  A call
 * can therefore wait for a put in progress (milliseconds for a copy of tens of MiB); a
 * loop thread that must not wait uses the *_async variants.
 *
 * Status codes: DRED_OK, DRED_ERR_ARG (bad argument), DRED_ERR_NOMEM,
 * DRED_ERR_PROC_FAILED (no copy of that operand here), DRED_ERR_STORAGE (I/O error,
 * corrupt copy, file in use or not a replica store).  Every error is logged with its
 * reason.  No MPI in here.
 */
#ifndef DRED_REPLICA_H
#define DRED_REPLICA_H

#include <stddef.h>
#include <stdint.h>

#include "../include/dred_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dred_replica dred_replica_t;

/* Open (creating `dir` with mode 0700 and any missing parents, and the file, 0600) the store of
 * `worker` for job `job_id` (a non-empty string naming this run, e.g. the launcher's job
 * id).  Copies left by any other job are deleted (count: dred_replica_purged).  Refuses,
 * with DRED_ERR_STORAGE, a file that is not a replica store or that a live process holds,
 * a symbolic link in place of the file, and a directory storedir.h does not accept.
 * Returns DRED_OK and sets *out, or an error and sets *out to NULL. */
int dred_replica_open(const char *dir, uint32_t worker, const char *job_id,
                      dred_replica_t **out);

/* Close the store.  Waits for queued async operations on it to finish their storage work
 * (their callbacks still run later, on their loop).  A store left empty is compacted so
 * the file gives its space back.  NULL is ignored.  Returns DRED_OK or DRED_ERR_STORAGE. */
int dred_replica_close(dred_replica_t *r);

/* A put calls `fn(arg)` before it reads the caller's bytes and again between pieces of
 * REPLICA_PAUSE_CHUNK bytes, so a caller can make copies step aside for more urgent
 * work (libdred: a node peer still copying an operand out of its application's buffer,
 * lib/paths/handover.c).  `fn` should return soon; NULL removes the hook.  Set it before
 * queueing any operation on the store. */
typedef void (*dred_replica_pause_fn)(void *arg);
void dred_replica_set_pause(dred_replica_t *r, dred_replica_pause_fn fn, void *arg);

/* Store a copy of member `member`'s operand of reduction (group, tag): `len` bytes at
 * `data` (data may be NULL only when len is 0), replacing any copy already stored for
 * that key.  The copy is checksummed and written in one transaction: a process dying in
 * the middle leaves the previous state. */
int dred_replica_put(dred_replica_t *r, uint64_t group, int64_t tag, uint32_t member,
                     const void *data, size_t len);

/* Read the copy of (group, tag, member) into `data`, which has room for `len` bytes (the
 * operand's size).  Returns DRED_OK; DRED_ERR_PROC_FAILED if this store holds no such
 * copy; DRED_ERR_STORAGE if the stored copy's length is not `len` or its checksum does not
 * match (then `data` holds unspecified bytes). */
int dred_replica_get(dred_replica_t *r, uint64_t group, int64_t tag, uint32_t member,
                     void *data, size_t len);

/* Delete every member's copy of reduction (group, tag) (the reduction ended).  Dropping
 * what is not there is not an error. */
int dred_replica_drop(dred_replica_t *r, uint64_t group, int64_t tag);

/* Number of copies in the store (all reductions). */
int dred_replica_count(dred_replica_t *r, uint64_t *count);

/* Number of copies of other jobs deleted when the store was opened. */
int dred_replica_purged(dred_replica_t *r, uint64_t *count);

/* The file behind the store (valid until close); never NULL for an open store. */
const char *dred_replica_path(const dred_replica_t *r);

/* The files a store is made of: the database (file 0) and SQLite's side files (-wal,
 * -shm, -journal).  dred_replica_file writes file `which` (< DRED_REPLICA_FILES) of worker
 * `worker`'s store in `dir` to buf; DRED_ERR_ARG if it does not fit in n bytes. */
#define DRED_REPLICA_FILES 4
int dred_replica_file(const char *dir, uint32_t worker, unsigned which, char *buf, size_t n);

/* Delete worker `worker`'s store in `dir` with SQLite's side files (-wal, -shm, -journal),
 * whether or not it exists: its owner closed it (dred_finalize) or is dead.  Only the
 * owner ever reads a store, so a dead worker's is of no use to anyone.  DRED_ERR_ARG for
 * a NULL or empty dir; a file that cannot be removed is only logged. */
int dred_replica_remove(const char *dir, uint32_t worker);

/* The 64-bit checksum stored with each copy ("dred64"; see replica.c): four XXH64-style
 * multiply-rotate lanes over 8-byte little-endian words, folded so that every step is a
 * bijection.  Any change confined to one 8-byte word, in particular any single corrupted
 * byte, always changes the sum; other damage goes unnoticed with probability ~2^-64.
 * ~10 GB/s; exposed so tests and callers can check data in memory the same way. */
uint64_t dred_replica_checksum(const void *data, size_t len);

/* The job's reductions all ended (the worker got SHUTDOWN): copies still queued would be
 * written only to be deleted at close.  After this, async puts and drops that have not
 * run yet complete with DRED_ERR_SHUTDOWN without touching the file (replica_async.c);
 * gets still run.  With 10 000 reductions in flight the queue held tens of thousands of
 * such writes and made dred_finalize wait for them. */
void dred_replica_set_moot(dred_replica_t *r);
int dred_replica_is_moot(dred_replica_t *r);

/* For replica_async.c: an async operation holds the store from queueing until its work
 * ends, so close waits for it.  _hold returns DRED_ERR_SHUTDOWN once close has begun. */
int dred_replica_hold(dred_replica_t *r);
void dred_replica_release(dred_replica_t *r);

#ifdef __cplusplus
}
#endif

#endif /* DRED_REPLICA_H */
