/*
 * sqlite_util.c -- SQLite helpers shared by journal.c and replica.c (see sqlite_util.h:
 * what each does, and why they live here).
 */
#include "sqlite_util.h"

#include <stdio.h>

#include "../common/log.h"
#include "storedir.h"

int dred_sqlite_open(const char *what, const char *path, int busy_ms, sqlite3 **out) {
  sqlite3 *db = NULL;
  int rc;
  *out = NULL;
  /* SQLite would create the file 0644 (less the umask) and follow a symbolic link planted
   * in its place: create it 0600 ourselves, refuse a link, and have SQLite refuse one too
   * should it appear in between.  Its side files take the main file's mode. */
  if (dred_storedir_private_file(what, path) != DRED_OK) return DRED_ERR_STORAGE;
  rc = sqlite3_open_v2(path, &db,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                           SQLITE_OPEN_NOFOLLOW,
                       NULL);
  if (rc != SQLITE_OK) {
    DRED_ERROR("%s %s: cannot open: %s", what, path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db); /* a failed open may still have allocated a handle */
    return DRED_ERR_STORAGE;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_ms);
  *out = db;
  return DRED_OK;
}

int dred_sqlite_exec(sqlite3 *db, const char *what, const char *path, const char *sql) {
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK)
    DRED_ERROR("%s %s: \"%s\" failed: %s", what, path, sql, msg ? msg : sqlite3_errstr(rc));
  sqlite3_free(msg);
  return rc == SQLITE_OK ? DRED_OK : DRED_ERR_STORAGE;
}

int dred_sqlite_query_int(sqlite3 *db, const char *what, const char *path, const char *sql,
                          int64_t *out) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      *out = sqlite3_column_int64(st, 0);
      rc = SQLITE_OK;
    }
  }
  if (rc != SQLITE_OK)
    DRED_ERROR("%s %s: \"%s\" failed: %s", what, path, sql, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc == SQLITE_OK ? DRED_OK : DRED_ERR_STORAGE;
}

int dred_sqlite_prepare(sqlite3 *db, const char *what, const char *path, sqlite3_stmt **st,
                        const char *sql) {
  int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
  if (rc != SQLITE_OK) {
    DRED_ERROR("%s %s: cannot prepare \"%s\": %s", what, path, sql, sqlite3_errmsg(db));
    return DRED_ERR_STORAGE;
  }
  return DRED_OK;
}

int dred_sqlite_header(sqlite3 *db, const char *what, const char *path, int64_t *version,
                       int64_t *app_id, int64_t *objects) {
  int st;
  if ((st = dred_sqlite_query_int(db, what, path, "PRAGMA user_version", version)) != DRED_OK ||
      (st = dred_sqlite_query_int(db, what, path, "PRAGMA application_id", app_id)) != DRED_OK)
    return st;
  return dred_sqlite_query_int(db, what, path, "SELECT count(*) FROM sqlite_master", objects);
}

int dred_sqlite_stamp(sqlite3 *db, const char *what, const char *path, int version,
                      int app_id) {
  char sql[64];
  int st;
  snprintf(sql, sizeof sql, "PRAGMA user_version=%d", version);
  if ((st = dred_sqlite_exec(db, what, path, sql)) != DRED_OK) return st;
  snprintf(sql, sizeof sql, "PRAGMA application_id=%d", app_id);
  return dred_sqlite_exec(db, what, path, sql);
}

void dred_sqlite_rollback(sqlite3 *db) {
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

int dred_sqlite_close(sqlite3 *db, const char *what, const char *path) {
  int rc = sqlite3_close(db);
  if (rc == SQLITE_OK) return DRED_OK;
  DRED_ERROR("%s %s: close failed: %s", what, path, sqlite3_errstr(rc));
  sqlite3_close_v2(db);
  return DRED_ERR_STORAGE;
}
