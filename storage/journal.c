/*
 * journal.c -- the master's durable record of reductions, tasks and failures (SQLite).
 *
 * How it works.  dred_journal_open() opens (or creates) one SQLite file, checks that it
 * really is a dred journal, switches it to WAL with synchronous=OFF and prepares one
 * INSERT statement per record kind.  Every record call binds its values and steps its
 * statement inside a write transaction that the first record after a flush opens with
 * BEGIN; dred_journal_flush() (the master calls it from a libuv timer) and
 * dred_journal_close() COMMIT it.  So the master's hot loop pays one in-memory B-tree
 * insert per record, and each flush is one WAL append with no fsync at all
 * (tests/unit/test_journal.c prints the cost per record and per flush).
 *
 * Why WAL: dredstat (or a test) can read the file while the master keeps writing, and a
 * reader never blocks the master's commit.  Why synchronous=OFF: with NORMAL, the automatic
 * checkpoint fsyncs inside a commit, in the master's loop; on a node busy writing replicas
 * that fsync can stall the master for seconds, long enough for its failure detector to
 * declare every worker failed.  OFF still survives a crash of the process
 * (WAL); only a power cut can lose the last batches or corrupt the file -- acceptable for
 * a statistics record, which is not the service's state.
 *
 * What counts as "a dred journal": either an empty database (a new or zero-length file),
 * which we initialise, or a database whose PRAGMA user_version is 1, whose
 * application_id is ours or 0 (files written by other tools following the schema in
 * journal.h), and whose four tables have exactly the columns journal.h lists.  Anything
 * else (random bytes, another program's database, another schema version) is refused
 * with DRED_ERR_STORAGE and never modified.
 *
 * Integers: SQLite integers are signed 64-bit.  uint64 values (task ids, byte counts,
 * nanosecond times) are stored bit-for-bit, so a value above INT64_MAX would read back
 * negative; none of the master's values get there.  The group id is stored as 16 hex
 * digits (see journal.h), which keeps it readable and unsigned.
 *
 * Threads: a journal belongs to one thread at a time (the master's loop thread); the
 * connection is opened SQLITE_OPEN_NOMUTEX because a BEGIN-then-insert pair would not be
 * atomic across threads anyway.
 */
#include "journal.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "sqlite_util.h"

#define JOURNAL_VERSION 1
#define JOURNAL_APP_ID 0x44524a4c /* "DRJL": lets file(1) and us recognise the file */
#define JOURNAL_BUSY_MS 2000      /* a reader's checkpoint may hold the lock briefly */
#define WHAT "journal"            /* log prefix of the sqlite_util.h helpers */

struct dred_journal {
  sqlite3 *db;
  char *path;
  sqlite3_stmt *begin;
  sqlite3_stmt *commit;
  sqlite3_stmt *meta;
  sqlite3_stmt *task;
  sqlite3_stmt *reduction;
  sqlite3_stmt *worker;
  int in_txn;       /* a BEGIN is open: records since the last flush are pending */
  uint64_t pending; /* records in the open transaction, for the logs            */
};

/* The tables and their columns, in order, exactly as journal.h documents them.  Used both
 * to create a new journal and to recognise an existing one (here and in dredstat). */
const dred_journal_table_t dred_journal_tables[DRED_JOURNAL_NTABLES] = {
    {"reductions",
     "CREATE TABLE reductions(id INTEGER PRIMARY KEY, grp TEXT, tag INTEGER, "
     "members INTEGER, bytes INTEGER, start_ns INTEGER, end_ns INTEGER, tasks INTEGER, "
     "recovered INTEGER, status INTEGER)",
     {"id", "grp", "tag", "members", "bytes", "start_ns", "end_ns", "tasks", "recovered",
      "status", NULL}},
    {"tasks",
     "CREATE TABLE tasks(id INTEGER PRIMARY KEY, task_id INTEGER, grp TEXT, tag INTEGER, "
     "executor INTEGER, provider INTEGER, bytes INTEGER, start_ns INTEGER, "
     "end_ns INTEGER, exec_ns INTEGER, status INTEGER)",
     {"id", "task_id", "grp", "tag", "executor", "provider", "bytes", "start_ns", "end_ns",
      "exec_ns", "status", NULL}},
    {"workers", "CREATE TABLE workers(worker INTEGER PRIMARY KEY, failed_ns INTEGER)",
     {"worker", "failed_ns", NULL}},
    {"meta", "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)", {"key", "value", NULL}},
};

/* Does table `t` exist with exactly the documented columns, in order? */
static int journal_table_matches(sqlite3 *db, const char *path, size_t t) {
  sqlite3_stmt *st = NULL;
  size_t col = 0;
  int rc;

  rc = sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1,
                          &st, NULL);
  if (rc != SQLITE_OK) {
    DRED_ERROR("journal %s: cannot inspect table %s: %s", path, dred_journal_tables[t].name,
               sqlite3_errmsg(db));
    return DRED_ERR_STORAGE;
  }
  sqlite3_bind_text(st, 1, dred_journal_tables[t].name, -1, SQLITE_STATIC);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    const char *want = dred_journal_tables[t].columns[col];
    if (want == NULL || name == NULL || strcmp(name, want) != 0) {
      DRED_ERROR("journal %s: not a dred journal: table %s has column %s where %s was "
                 "expected",
                 path, dred_journal_tables[t].name, name ? name : "(null)",
                 want ? want : "(none)");
      sqlite3_finalize(st);
      return DRED_ERR_STORAGE;
    }
    col++;
  }
  if (rc != SQLITE_DONE) {
    DRED_ERROR("journal %s: cannot inspect table %s: %s", path, dred_journal_tables[t].name,
               sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return DRED_ERR_STORAGE;
  }
  sqlite3_finalize(st);
  if (dred_journal_tables[t].columns[col] != NULL) {
    DRED_ERROR("journal %s: not a dred journal: table %s is %s", path,
               dred_journal_tables[t].name, col == 0 ? "missing" : "missing columns");
    return DRED_ERR_STORAGE;
  }
  return DRED_OK;
}

/* Initialise an empty database or verify an existing one, inside one IMMEDIATE
 * transaction so two masters opening the same new file cannot both create the schema. */
static int journal_prepare_schema(sqlite3 *db, const char *path) {
  int64_t version = 0, app_id = 0, objects = 0;
  int st, rc;
  size_t t;

  /* On random bytes this is where SQLite first reads the header. */
  rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    if ((rc & 0xff) == SQLITE_NOTADB)
      DRED_ERROR("journal %s: not a dred journal (not an SQLite database)", path);
    else
      DRED_ERROR("journal %s: cannot start using the file: %s", path, sqlite3_errmsg(db));
    return DRED_ERR_STORAGE;
  }
  if ((st = dred_sqlite_header(db, WHAT, path, &version, &app_id, &objects)) != DRED_OK)
    goto fail;

  if (objects == 0 && version == 0 && (app_id == 0 || app_id == JOURNAL_APP_ID)) {
    for (t = 0; t < DRED_JOURNAL_NTABLES; t++)
      if ((st = dred_sqlite_exec(db, WHAT, path, dred_journal_tables[t].create)) != DRED_OK)
        goto fail;
    if ((st = dred_sqlite_stamp(db, WHAT, path, JOURNAL_VERSION, JOURNAL_APP_ID)) != DRED_OK)
      goto fail;
    DRED_INFO("journal %s: created (schema version %d)", path, JOURNAL_VERSION);
  } else {
    if (app_id != 0 && app_id != JOURNAL_APP_ID) {
      DRED_ERROR("journal %s: not a dred journal (SQLite application_id 0x%08" PRIx64
                 " belongs to another program)",
                 path, (uint64_t)app_id);
      st = DRED_ERR_STORAGE;
      goto fail;
    }
    if (version != JOURNAL_VERSION) {
      DRED_ERROR("journal %s: not a dred journal of schema version %d (user_version is "
                 "%" PRId64 ")",
                 path, JOURNAL_VERSION, version);
      st = DRED_ERR_STORAGE;
      goto fail;
    }
    for (t = 0; t < DRED_JOURNAL_NTABLES; t++)
      if ((st = journal_table_matches(db, path, t)) != DRED_OK) goto fail;
  }
  return dred_sqlite_exec(db, WHAT, path, "COMMIT");

fail:
  dred_sqlite_rollback(db);
  return st;
}

/* These statements live as long as the journal. */
static int journal_prepare(dred_journal_t *j, sqlite3_stmt **st, const char *sql) {
  return dred_sqlite_prepare(j->db, WHAT, j->path, st, sql);
}

static void journal_finalize_all(dred_journal_t *j) {
  sqlite3_finalize(j->begin);
  sqlite3_finalize(j->commit);
  sqlite3_finalize(j->meta);
  sqlite3_finalize(j->task);
  sqlite3_finalize(j->reduction);
  sqlite3_finalize(j->worker);
  j->begin = j->commit = j->meta = j->task = j->reduction = j->worker = NULL;
}

static void journal_free(dred_journal_t *j) {
  journal_finalize_all(j);
  if (j->db != NULL && sqlite3_close(j->db) != SQLITE_OK)
    DRED_ERROR("journal %s: close failed: %s", j->path, sqlite3_errmsg(j->db));
  free(j->path);
  free(j);
}

int dred_journal_open(const char *path, dred_journal_t **out) {
  dred_journal_t *j;
  char mode[16] = "";
  sqlite3_stmt *st = NULL;
  int rc, status;

  if (out == NULL) {
    DRED_ERROR("dred_journal_open: out is NULL");
    return DRED_ERR_ARG;
  }
  *out = NULL;
  if (path == NULL || *path == '\0') {
    DRED_ERROR("dred_journal_open: %s path", path == NULL ? "NULL" : "empty");
    return DRED_ERR_ARG;
  }

  j = calloc(1, sizeof *j);
  if (j == NULL || (j->path = strdup(path)) == NULL) {
    DRED_ERROR("journal %s: out of memory", path);
    free(j);
    return DRED_ERR_NOMEM;
  }

  if ((status = dred_sqlite_open(WHAT, path, JOURNAL_BUSY_MS, &j->db)) != DRED_OK ||
      (status = journal_prepare_schema(j->db, path)) != DRED_OK) {
    journal_free(j);
    return status;
  }

  /* journal_mode reports the mode it ended up in; a file system without shared memory
   * (some network mounts) stays in rollback mode, which is slower but still correct. */
  rc = sqlite3_prepare_v2(j->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
  if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  if (strcmp(mode, "wal") != 0)
    DRED_WARN("journal %s: WAL mode unavailable (journal_mode is \"%s\"); readers may "
              "block the master's flushes",
              path, mode);
  if ((status = dred_sqlite_exec(j->db, WHAT, path, "PRAGMA synchronous=OFF")) != DRED_OK ||
      (status = journal_prepare(j, &j->begin, "BEGIN")) != DRED_OK ||
      (status = journal_prepare(j, &j->commit, "COMMIT")) != DRED_OK ||
      (status = journal_prepare(j, &j->meta,
                                "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)")) !=
          DRED_OK ||
      (status = journal_prepare(
           j, &j->task,
           "INSERT INTO tasks(task_id, grp, tag, executor, provider, bytes, start_ns, "
           "end_ns, exec_ns, status) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")) !=
          DRED_OK ||
      (status = journal_prepare(
           j, &j->reduction,
           "INSERT INTO reductions(grp, tag, members, bytes, start_ns, end_ns, tasks, "
           "recovered, status) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")) != DRED_OK ||
      /* A worker fails once; if the detector reports it again keep the first time. */
      (status = journal_prepare(j, &j->worker,
                                "INSERT INTO workers(worker, failed_ns) VALUES(?1, ?2) "
                                "ON CONFLICT(worker) DO UPDATE SET "
                                "failed_ns = min(failed_ns, excluded.failed_ns)")) != DRED_OK) {
    journal_free(j);
    return status;
  }

  DRED_INFO("journal %s: open", path);
  *out = j;
  return DRED_OK;
}

/* Step one bound INSERT inside the batch transaction, opening it if needed. */
static int journal_append(dred_journal_t *j, sqlite3_stmt *st, const char *what) {
  int rc;

  if (!j->in_txn) {
    rc = sqlite3_step(j->begin);
    sqlite3_reset(j->begin);
    if (rc != SQLITE_DONE) {
      DRED_ERROR("journal %s: cannot begin a batch for a %s record: %s", j->path, what,
                 sqlite3_errmsg(j->db));
      sqlite3_reset(st);
      return DRED_ERR_STORAGE;
    }
    j->in_txn = 1;
    j->pending = 0;
  }
  rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) {
    DRED_ERROR("journal %s: cannot write a %s record: %s", j->path, what,
               sqlite3_errmsg(j->db));
    /* Some errors (disk full, I/O, out of memory) make SQLite roll the whole transaction
     * back; then the batch is gone and the next record must BEGIN again. */
    if (sqlite3_get_autocommit(j->db)) {
      if (j->pending > 0)
        DRED_ERROR("journal %s: the error rolled back %" PRIu64 " unflushed records",
                   j->path, j->pending);
      j->in_txn = 0;
      j->pending = 0;
    }
    return DRED_ERR_STORAGE;
  }
  j->pending++;
  return DRED_OK;
}

static void journal_bind_group(sqlite3_stmt *st, int idx, uint64_t group) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016" PRIx64, group);
  sqlite3_bind_text(st, idx, hex, 16, SQLITE_TRANSIENT);
}

int dred_journal_meta(dred_journal_t *j, const char *key, const char *value) {
  if (j == NULL || key == NULL || value == NULL || *key == '\0') {
    DRED_ERROR("dred_journal_meta: %s", j == NULL     ? "NULL journal"
                                        : key == NULL ? "NULL key"
                                        : *key == '\0' ? "empty key"
                                                       : "NULL value");
    return DRED_ERR_ARG;
  }
  sqlite3_bind_text(j->meta, 1, key, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(j->meta, 2, value, -1, SQLITE_TRANSIENT);
  return journal_append(j, j->meta, "meta");
}

int dred_journal_task(dred_journal_t *j, uint64_t task_id, uint64_t group, int64_t tag,
                      uint32_t executor, uint32_t provider, uint64_t bytes, uint64_t start_ns,
                      uint64_t end_ns, uint64_t exec_ns, int32_t status) {
  sqlite3_stmt *st;

  if (j == NULL) {
    DRED_ERROR("dred_journal_task: NULL journal");
    return DRED_ERR_ARG;
  }
  st = j->task;
  sqlite3_bind_int64(st, 1, (sqlite3_int64)task_id);
  journal_bind_group(st, 2, group);
  sqlite3_bind_int64(st, 3, tag);
  sqlite3_bind_int64(st, 4, executor);
  sqlite3_bind_int64(st, 5, provider);
  sqlite3_bind_int64(st, 6, (sqlite3_int64)bytes);
  sqlite3_bind_int64(st, 7, (sqlite3_int64)start_ns);
  sqlite3_bind_int64(st, 8, (sqlite3_int64)end_ns);
  sqlite3_bind_int64(st, 9, (sqlite3_int64)exec_ns);
  sqlite3_bind_int(st, 10, status);
  return journal_append(j, st, "task");
}

int dred_journal_reduction(dred_journal_t *j, uint64_t group, int64_t tag, uint32_t members,
                           uint64_t bytes, uint64_t start_ns, uint64_t end_ns, uint32_t tasks,
                           uint32_t recovered, int32_t status) {
  sqlite3_stmt *st;

  if (j == NULL) {
    DRED_ERROR("dred_journal_reduction: NULL journal");
    return DRED_ERR_ARG;
  }
  st = j->reduction;
  journal_bind_group(st, 1, group);
  sqlite3_bind_int64(st, 2, tag);
  sqlite3_bind_int64(st, 3, members);
  sqlite3_bind_int64(st, 4, (sqlite3_int64)bytes);
  sqlite3_bind_int64(st, 5, (sqlite3_int64)start_ns);
  sqlite3_bind_int64(st, 6, (sqlite3_int64)end_ns);
  sqlite3_bind_int64(st, 7, tasks);
  sqlite3_bind_int64(st, 8, recovered);
  sqlite3_bind_int(st, 9, status);
  return journal_append(j, st, "reduction");
}

int dred_journal_worker_failed(dred_journal_t *j, uint32_t worker, uint64_t failed_ns) {
  if (j == NULL) {
    DRED_ERROR("dred_journal_worker_failed: NULL journal");
    return DRED_ERR_ARG;
  }
  sqlite3_bind_int64(j->worker, 1, worker);
  sqlite3_bind_int64(j->worker, 2, (sqlite3_int64)failed_ns);
  return journal_append(j, j->worker, "worker");
}

int dred_journal_flush(dred_journal_t *j) {
  int rc;

  if (j == NULL) {
    DRED_ERROR("dred_journal_flush: NULL journal");
    return DRED_ERR_ARG;
  }
  if (!j->in_txn) return DRED_OK;
  rc = sqlite3_step(j->commit);
  sqlite3_reset(j->commit);
  if (rc != SQLITE_DONE) {
    /* A COMMIT that fails with BUSY leaves the transaction open: keep the batch and let
     * the next flush retry.  Any other failure rolled it back. */
    if (!sqlite3_get_autocommit(j->db)) {
      DRED_ERROR("journal %s: cannot commit %" PRIu64 " records yet (will retry): %s",
                 j->path, j->pending, sqlite3_errmsg(j->db));
    } else {
      DRED_ERROR("journal %s: commit failed, %" PRIu64 " records lost: %s", j->path,
                 j->pending, sqlite3_errmsg(j->db));
      j->in_txn = 0;
      j->pending = 0;
    }
    return DRED_ERR_STORAGE;
  }
  DRED_DEBUG("journal %s: flushed %" PRIu64 " records", j->path, j->pending);
  j->in_txn = 0;
  j->pending = 0;
  return DRED_OK;
}

int dred_journal_close(dred_journal_t *j) {
  int status;

  if (j == NULL) return DRED_OK;
  status = dred_journal_flush(j);
  /* Finalize by hand so a failing sqlite3_close (it would mean a leaked statement) is
   * reported as a storage error rather than only logged. */
  journal_finalize_all(j);
  /* A batch whose commit kept failing is rolled back by sqlite3_close. */
  if (dred_sqlite_close(j->db, WHAT, j->path) != DRED_OK)
    status = DRED_ERR_STORAGE;
  else
    DRED_INFO("journal %s: closed", j->path);
  j->db = NULL;
  free(j->path);
  free(j);
  return status;
}
