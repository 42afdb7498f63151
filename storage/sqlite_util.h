/*
 * sqlite_util.h -- the SQLite plumbing shared by the master's journal (journal.c) and the
 * node-local replica store (replica.c).
 *
 * What: open a connection the way both open theirs (read-write, create, NOMUTEX: each
 * file guards its connection itself; extended result codes; a busy timeout), run a
 * statement that returns no rows, read one integer (a PRAGMA or a count), prepare a
 * statement that lives as long as the connection, read and write the header fields a
 * file is recognised by (user_version, application_id, whether it has any schema
 * object), roll back an open transaction, close.
 *
 * Why: journal.c and replica.c each carried a copy of these helpers, the same code but for
 * the prefix of their log lines.  Every helper here takes that prefix (`what`: "journal",
 * "replica store") and the file's path, so the logs read as before ("<what> <path>: ...").
 * Failures are logged here (common/log.h) and returned as DRED_ERR_STORAGE; the callers
 * keep their own policy (which file is acceptable, what a failure means).  No MPI.
 */
#ifndef DRED_SQLITE_UTIL_H
#define DRED_SQLITE_UTIL_H

#include <sqlite3.h>
#include <stdint.h>

#include "../include/dred_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Open (or create) `path` read-write, NOMUTEX, extended result codes, `busy_ms` busy
 * timeout.  The file is created 0600 and must not be a symbolic link
 * (dred_storedir_private_file, SQLITE_OPEN_NOFOLLOW).  Returns DRED_OK and sets *out, or DRED_ERR_STORAGE (logged, *out = NULL). */
int dred_sqlite_open(const char *what, const char *path, int busy_ms, sqlite3 **out);

/* Run SQL that returns no rows we need.  DRED_OK or DRED_ERR_STORAGE (logged). */
int dred_sqlite_exec(sqlite3 *db, const char *what, const char *path, const char *sql);

/* Run a query returning one integer into *out.  DRED_OK or DRED_ERR_STORAGE (logged). */
int dred_sqlite_query_int(sqlite3 *db, const char *what, const char *path, const char *sql,
                          int64_t *out);

/* Prepare a statement that lives as long as the connection (SQLITE_PREPARE_PERSISTENT:
 * SQLite then keeps it out of its lookaside allocator).  DRED_OK or DRED_ERR_STORAGE. */
int dred_sqlite_prepare(sqlite3 *db, const char *what, const char *path, sqlite3_stmt **st,
                        const char *sql);

/* The fields a file is recognised by: PRAGMA user_version, PRAGMA application_id and the
 * number of schema objects (0: an empty database).  DRED_OK or DRED_ERR_STORAGE. */
int dred_sqlite_header(sqlite3 *db, const char *what, const char *path, int64_t *version,
                       int64_t *app_id, int64_t *objects);

/* Stamp a new file: PRAGMA user_version = version, application_id = app_id. */
int dred_sqlite_stamp(sqlite3 *db, const char *what, const char *path, int version,
                      int app_id);

/* Roll back the open transaction, if any (quietly: used on error paths). */
void dred_sqlite_rollback(sqlite3 *db);

/* sqlite3_close; if that fails (a statement still open), log it, hand the connection to
 * sqlite3_close_v2 (freed once whatever holds it is gone) and return DRED_ERR_STORAGE. */
int dred_sqlite_close(sqlite3 *db, const char *what, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* DRED_SQLITE_UTIL_H */
