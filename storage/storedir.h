/*
 * storedir.h -- the storage directory: private to its user, one subdirectory per job.
 *
 * Replica stores, the master's journal and its status socket live under a base directory
 * (DRED_STORAGE_DIR; the default, chosen so that it cannot be squatted, is
 * common/privdir.h's).  A name given by the user may still be one another user created
 * first, and a store in a directory others can write can be replaced by a symbolic link
 * to any file of ours.  So the base directory and every job
 * directory must be a real directory (not a symbolic link), owned by the effective user,
 * with no access for group or others (0700); dred creates them that way and refuses
 * anything else with DRED_ERR_STORAGE and a log line naming the path and the problem.
 * Paths longer than DRED_STOREDIR_MAX are refused, never cut short (a cut path names
 * another directory, possibly the parent).
 *
 * Each job gets <base>/job-<id>, the id chosen by dred-master and sent to every process
 * at dred_init (common/mpi/boot.h), so two jobs of one user on one node never share a
 * store.  No MPI in here.
 */
#ifndef DRED_STOREDIR_H
#define DRED_STOREDIR_H

#include <stddef.h>

#include "../include/dred_status.h"
#include "../common/settings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DRED_STOREDIR_MAX, the longest accepted base directory in bytes, is common/settings.h's:
 * it is DRED_STORAGE_DIR's range, which common/config.c checks too. */
/* Longest job id (characters [A-Za-z0-9_.-], not starting with '.'). */
#define DRED_JOB_ID_MAX 48

/* What dred-master keeps in <base>/job-<id>: its journal (storage/journal.h, unless
 * --journal says otherwise) and its status socket (master/status.h).  dredstat finds both
 * by these names. */
#define DRED_STOREDIR_JOURNAL "journal.db"
#define DRED_STOREDIR_STATUS_SOCKET "dred-master.sock"

/* Make sure `dir` is a private directory of ours, creating it (mode 0700, and any missing
 * parents 0700) if absent.  Refused (DRED_ERR_STORAGE, logged): a path that is empty or
 * longer than DRED_STOREDIR_MAX, a symbolic link, not a directory, owned by
 * another user, or open to group or others.  DRED_OK otherwise. */
int dred_storedir_check(const char *dir);

/* Is `dir` a directory nobody else can change: a real directory (not a symbolic link),
 * owned by the effective user, not writable by group or others (reading is allowed: this
 * is for a file whose own mode keeps it private, written there by rename).  Nothing is
 * created.  `what` starts the log lines.  DRED_OK or DRED_ERR_STORAGE (logged). */
int dred_storedir_owned(const char *what, const char *dir);

/* Check `base` as above, then create (or, for a second process of the job on this node,
 * accept) <base>/job-<job_id>, checked the same way, and write its path to `out` (`cap`
 * bytes).  DRED_ERR_ARG for a job id that is empty, too long or has other characters. */
int dred_storedir_job(const char *base, const char *job_id, char *out, size_t cap);

/* Remove the job directory if it is empty (the last process of the job on the node to
 * finish removes it; a journal left in it keeps it).  Never fails loudly. */
void dred_storedir_release(const char *jobdir);

/* Create `path` as an empty regular file of mode 0600 if it does not exist, and check an
 * existing one: a regular file (not a symbolic link: O_NOFOLLOW), owned by us; a wider
 * mode is narrowed to 0600.  SQLite then opens it (SQLITE_OPEN_NOFOLLOW) and creates its
 * side files (-journal, -wal, -shm) with the same mode.  `what` prefixes the log lines.
 * DRED_OK or DRED_ERR_STORAGE (logged). */
int dred_storedir_private_file(const char *what, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* DRED_STOREDIR_H */
