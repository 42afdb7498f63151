/*
 * journal.h -- the master's durable record of every reduction and every task (SQLite).
 *
 * dred-master appends one row per finished task and one per ended reduction; dredstat
 * reads the file afterwards.  Writes are batched in a transaction that is committed every
 * `flush` call (the master flushes from a libuv timer and at exit), so journaling costs
 * the master's hot loop one prepared-statement step per record.  No MPI in here.
 *
 * Schema (version 1, stored in PRAGMA user_version):
 *   reductions(id INTEGER PRIMARY KEY, grp TEXT, tag INTEGER, members INTEGER,
 *              bytes INTEGER, start_ns INTEGER, end_ns INTEGER, tasks INTEGER,
 *              recovered INTEGER, status INTEGER)
 *   tasks(id INTEGER PRIMARY KEY, task_id INTEGER, grp TEXT, tag INTEGER,
 *         executor INTEGER, provider INTEGER, bytes INTEGER, start_ns INTEGER,
 *         end_ns INTEGER, exec_ns INTEGER, status INTEGER)
 *   workers(worker INTEGER PRIMARY KEY, failed_ns INTEGER)      -- failures seen
 *   meta(key TEXT PRIMARY KEY, value TEXT)                      -- run info
 * `grp` is the 64-bit group id printed as 16 hex digits (SQLite integers are signed).
 */
#ifndef DRED_JOURNAL_H
#define DRED_JOURNAL_H

#include <stdint.h>

#include "../include/dred_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dred_journal dred_journal_t;

/* The schema above as data: each table, the statement that creates it and its columns in
 * order (NULL-terminated).  journal.c creates and recognises journals by it; dredstat
 * checks a file against it before it reads one, so the two never disagree. */
#define DRED_JOURNAL_NTABLES 4
typedef struct {
  const char *name;
  const char *create;
  const char *columns[12];
} dred_journal_table_t;
extern const dred_journal_table_t dred_journal_tables[DRED_JOURNAL_NTABLES];

/* Open or create the journal at `path` (parent directory must exist).  An existing file
 * with another schema version or that is not a dred journal is refused.
 * Returns DRED_OK and sets *out, or DRED_ERR_ARG / DRED_ERR_STORAGE (logged). */
int dred_journal_open(const char *path, dred_journal_t **out);

/* Commit what is pending and close.  NULL is ignored.  Returns DRED_OK or DRED_ERR_STORAGE. */
int dred_journal_close(dred_journal_t *j);

int dred_journal_meta(dred_journal_t *j, const char *key, const char *value);

int dred_journal_task(dred_journal_t *j, uint64_t task_id, uint64_t group, int64_t tag,
                      uint32_t executor, uint32_t provider, uint64_t bytes, uint64_t start_ns,
                      uint64_t end_ns, uint64_t exec_ns, int32_t status);

int dred_journal_reduction(dred_journal_t *j, uint64_t group, int64_t tag, uint32_t members,
                           uint64_t bytes, uint64_t start_ns, uint64_t end_ns, uint32_t tasks,
                           uint32_t recovered, int32_t status);

int dred_journal_worker_failed(dred_journal_t *j, uint32_t worker, uint64_t failed_ns);

/* Commit the open batch (a no-op when nothing is pending). */
int dred_journal_flush(dred_journal_t *j);

#ifdef __cplusplus
}
#endif

#endif /* DRED_JOURNAL_H */
