/*
 * test_journal.c -- CMocka tests of storage/journal.c, the master's SQLite journal.
 *
 * Each test works in its own mkdtemp() directory (removed afterwards) and checks what the
 * journal wrote by opening the file with a second, plain sqlite3 connection, the way
 * dredstat reads it: the schema and version, every column of every record kind, that a
 * batch is invisible to readers until dred_journal_flush (or close) commits it, that
 * reopening appends, and that files which are not dred journals are refused untouched.
 */
/* nftw */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../storage/journal.h"

typedef struct {
  char dir[64];
  char path[128];
} fixture_t;

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/dred-test-journal-XXXXXX");
  if (mkdtemp(f->dir) == NULL) {
    free(f);
    return -1;
  }
  snprintf(f->path, sizeof f->path, "%s/journal.db", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(f);
  return 0;
}

/* One integer from a query on a separate connection (the reader's view). */
static int64_t query_int(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int64_t v = -12345;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

static void exec_sql(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  char *msg = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
  sqlite3_close(db);
}

static void write_file(const char *path, const void *data, size_t len) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(data, 1, len, fp), len);
  fclose(fp);
}

static size_t read_file(const char *path, void *buf, size_t cap) {
  FILE *fp = fopen(path, "rb");
  size_t n;
  assert_non_null(fp);
  n = fread(buf, 1, cap, fp);
  fclose(fp);
  return n;
}

static void test_null_args(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = (dred_journal_t *)0x1;

  assert_int_equal(dred_journal_open(NULL, &j), DRED_ERR_ARG);
  assert_null(j);
  assert_int_equal(dred_journal_open("", &j), DRED_ERR_ARG);
  assert_int_equal(dred_journal_open(f->path, NULL), DRED_ERR_ARG);
  assert_int_equal(access(f->path, F_OK), -1); /* nothing created */

  assert_int_equal(dred_journal_meta(NULL, "k", "v"), DRED_ERR_ARG);
  assert_int_equal(dred_journal_task(NULL, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0), DRED_ERR_ARG);
  assert_int_equal(dred_journal_reduction(NULL, 1, 2, 3, 4, 5, 6, 7, 8, 0), DRED_ERR_ARG);
  assert_int_equal(dred_journal_worker_failed(NULL, 1, 2), DRED_ERR_ARG);
  assert_int_equal(dred_journal_flush(NULL), DRED_ERR_ARG);
  assert_int_equal(dred_journal_close(NULL), DRED_OK); /* documented: NULL is ignored */

  assert_int_equal(dred_journal_open(f->path, &j), DRED_OK);
  assert_int_equal(dred_journal_meta(j, NULL, "v"), DRED_ERR_ARG);
  assert_int_equal(dred_journal_meta(j, "k", NULL), DRED_ERR_ARG);
  assert_int_equal(dred_journal_meta(j, "", "v"), DRED_ERR_ARG);
  assert_int_equal(dred_journal_close(j), DRED_OK);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM meta"), 0);
}

static void test_create_schema(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = NULL;
  static const char *cols[] = {
      "reductions:id,grp,tag,members,bytes,start_ns,end_ns,tasks,recovered,status",
      "tasks:id,task_id,grp,tag,executor,provider,bytes,start_ns,end_ns,exec_ns,status",
      "workers:worker,failed_ns", "meta:key,value"};
  size_t i;

  assert_int_equal(dred_journal_open(f->path, &j), DRED_OK);
  assert_non_null(j);
  assert_int_equal(dred_journal_close(j), DRED_OK);

  assert_int_equal(query_int(f->path, "PRAGMA user_version"), 1);
  assert_int_equal(query_int(f->path, "PRAGMA application_id"), 0x44524a4c);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM sqlite_master WHERE type='table'"),
                   4);
  for (i = 0; i < sizeof cols / sizeof cols[0]; i++) {
    char sql[256], table[32];
    sqlite3 *db;
    sqlite3_stmt *st;
    const char *colon = strchr(cols[i], ':');
    snprintf(table, sizeof table, "%.*s", (int)(colon - cols[i]), cols[i]);
    snprintf(sql, sizeof sql,
             "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('%s') "
             "ORDER BY cid)",
             table);
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), colon + 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM pragma_journal_mode "
                                      "WHERE journal_mode = 'wal'"),
                   1);
}

static void test_records_roundtrip(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = NULL;
  sqlite3 *db;
  sqlite3_stmt *st;

  assert_int_equal(dred_journal_open(f->path, &j), DRED_OK);
  assert_int_equal(dred_journal_meta(j, "version", "0.1"), DRED_OK);
  assert_int_equal(dred_journal_meta(j, "workers", "8"), DRED_OK);
  assert_int_equal(dred_journal_meta(j, "version", "0.2"), DRED_OK); /* replaces */
  assert_int_equal(dred_journal_task(j, 42, 0xfedcba9876543210ULL, -7, 3, 4, 1u << 20,
                                     1000000001ULL, 1000500002ULL, 400000ULL, DRED_OK),
                   DRED_OK);
  assert_int_equal(dred_journal_task(j, 43, 0x1ULL, 5, 4, 3, 8, 10, 20, 5,
                                     DRED_ERR_PROC_FAILED),
                   DRED_OK);
  assert_int_equal(dred_journal_reduction(j, 0xfedcba9876543210ULL, -7, 8, 1u << 20, 999ULL,
                                          2000000000ULL, 7, 1, DRED_OK),
                   DRED_OK);
  assert_int_equal(dred_journal_worker_failed(j, 5, 300), DRED_OK);
  assert_int_equal(dred_journal_worker_failed(j, 5, 200), DRED_OK); /* keeps the first */
  assert_int_equal(dred_journal_worker_failed(j, 5, 900), DRED_OK);
  assert_int_equal(dred_journal_worker_failed(j, 6, 1234567890123ULL), DRED_OK);
  assert_int_equal(dred_journal_flush(j), DRED_OK);

  assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT task_id, grp, tag, executor, provider, bytes, "
                                      "start_ns, end_ns, exec_ns, status FROM tasks ORDER BY id",
                                      -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int64(st, 0), 42);
  assert_string_equal((const char *)sqlite3_column_text(st, 1), "fedcba9876543210");
  assert_int_equal(sqlite3_column_int64(st, 2), -7);
  assert_int_equal(sqlite3_column_int64(st, 3), 3);
  assert_int_equal(sqlite3_column_int64(st, 4), 4);
  assert_int_equal(sqlite3_column_int64(st, 5), 1 << 20);
  assert_int_equal(sqlite3_column_int64(st, 6), 1000000001LL);
  assert_int_equal(sqlite3_column_int64(st, 7), 1000500002LL);
  assert_int_equal(sqlite3_column_int64(st, 8), 400000);
  assert_int_equal(sqlite3_column_int64(st, 9), DRED_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int64(st, 0), 43);
  assert_string_equal((const char *)sqlite3_column_text(st, 1), "0000000000000001");
  assert_int_equal(sqlite3_column_int64(st, 9), DRED_ERR_PROC_FAILED);
  assert_int_equal(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);

  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT grp, tag, members, bytes, start_ns, end_ns, "
                                      "tasks, recovered, status FROM reductions",
                                      -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(st, 0), "fedcba9876543210");
  assert_int_equal(sqlite3_column_int64(st, 1), -7);
  assert_int_equal(sqlite3_column_int64(st, 2), 8);
  assert_int_equal(sqlite3_column_int64(st, 3), 1 << 20);
  assert_int_equal(sqlite3_column_int64(st, 4), 999);
  assert_int_equal(sqlite3_column_int64(st, 5), 2000000000LL);
  assert_int_equal(sqlite3_column_int64(st, 6), 7);
  assert_int_equal(sqlite3_column_int64(st, 7), 1);
  assert_int_equal(sqlite3_column_int64(st, 8), DRED_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  sqlite3_close(db);

  assert_int_equal(query_int(f->path, "SELECT failed_ns FROM workers WHERE worker = 5"), 200);
  assert_int_equal(query_int(f->path, "SELECT failed_ns FROM workers WHERE worker = 6"),
                   1234567890123LL);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM meta"), 2);
  assert_int_equal(query_int(f->path, "SELECT value = '0.2' FROM meta WHERE key = 'version'"),
                   1);
  assert_int_equal(dred_journal_close(j), DRED_OK);
}

/* A batch is one open transaction: readers see nothing until flush, then all of it. */
static void test_flush_semantics(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = NULL;
  int i;

  assert_int_equal(dred_journal_open(f->path, &j), DRED_OK);
  assert_int_equal(dred_journal_flush(j), DRED_OK); /* nothing pending: a no-op */
  for (i = 0; i < 10; i++)
    assert_int_equal(dred_journal_task(j, (uint64_t)i, 9, 0, 1, 2, 64, 1, 2, 1, DRED_OK),
                     DRED_OK);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM tasks"), 0);
  assert_int_equal(dred_journal_flush(j), DRED_OK);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM tasks"), 10);
  assert_int_equal(dred_journal_flush(j), DRED_OK); /* again: still a no-op */

  assert_int_equal(dred_journal_reduction(j, 9, 0, 2, 64, 1, 5, 1, 0, DRED_OK), DRED_OK);
  assert_int_equal(dred_journal_worker_failed(j, 2, 77), DRED_OK);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM reductions"), 0);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM workers"), 0);
  /* close commits what is pending */
  assert_int_equal(dred_journal_close(j), DRED_OK);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM reductions"), 1);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM workers"), 1);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM tasks"), 10);
}

static void test_reopen_appends(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = NULL;

  assert_int_equal(dred_journal_open(f->path, &j), DRED_OK);
  assert_int_equal(dred_journal_task(j, 1, 1, 1, 1, 2, 8, 1, 2, 1, DRED_OK), DRED_OK);
  assert_int_equal(dred_journal_meta(j, "run", "first"), DRED_OK);
  assert_int_equal(dred_journal_close(j), DRED_OK);

  j = NULL;
  assert_int_equal(dred_journal_open(f->path, &j), DRED_OK);
  assert_non_null(j);
  assert_int_equal(dred_journal_task(j, 2, 1, 2, 2, 1, 8, 3, 4, 1, DRED_OK), DRED_OK);
  assert_int_equal(dred_journal_meta(j, "run", "second"), DRED_OK);
  assert_int_equal(dred_journal_close(j), DRED_OK);

  assert_int_equal(query_int(f->path, "SELECT count(*) FROM tasks"), 2);
  assert_int_equal(query_int(f->path, "SELECT group_concat(task_id) = '1,2' FROM "
                                      "(SELECT task_id FROM tasks ORDER BY id)"),
                   1);
  assert_int_equal(query_int(f->path, "SELECT value = 'second' FROM meta WHERE key = 'run'"),
                   1);
  assert_int_equal(query_int(f->path, "PRAGMA user_version"), 1);
}

static void test_refuses_garbage(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = (dred_journal_t *)0x1;
  unsigned char junk[8192], back[8192];
  size_t i;
  uint32_t x = 12345;

  for (i = 0; i < sizeof junk; i++) {
    x = x * 1103515245u + 12345u;
    junk[i] = (unsigned char)(x >> 16);
  }
  write_file(f->path, junk, sizeof junk);
  assert_int_equal(dred_journal_open(f->path, &j), DRED_ERR_STORAGE);
  assert_null(j);
  assert_int_equal(read_file(f->path, back, sizeof back), sizeof junk);
  assert_memory_equal(back, junk, sizeof junk); /* refused untouched */

  /* Text that is not a database either. */
  write_file(f->path, "hello, world\n", 13);
  assert_int_equal(dred_journal_open(f->path, &j), DRED_ERR_STORAGE);
  assert_int_equal(read_file(f->path, back, sizeof back), 13);
}

/* SQLite files that are not dred journals. */
static void test_refuses_foreign_db(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = (dred_journal_t *)0x1;
  char path[160];

  /* Another program's database. */
  snprintf(path, sizeof path, "%s/other.db", f->dir);
  exec_sql(path, "CREATE TABLE foo(x INTEGER); INSERT INTO foo VALUES(1);");
  assert_int_equal(dred_journal_open(path, &j), DRED_ERR_STORAGE);
  assert_null(j);
  assert_int_equal(query_int(path, "SELECT count(*) FROM foo"), 1);
  assert_int_equal(query_int(path, "SELECT count(*) FROM sqlite_master"), 1); /* untouched */

  /* Our schema, another version. */
  snprintf(path, sizeof path, "%s/v2.db", f->dir);
  assert_int_equal(dred_journal_open(path, &j), DRED_OK);
  assert_int_equal(dred_journal_close(j), DRED_OK);
  exec_sql(path, "PRAGMA user_version=2");
  assert_int_equal(dred_journal_open(path, &j), DRED_ERR_STORAGE);
  assert_null(j);
  assert_int_equal(query_int(path, "PRAGMA user_version"), 2);

  /* Version 1 claimed, but a table is missing a column. */
  snprintf(path, sizeof path, "%s/cols.db", f->dir);
  exec_sql(path,
           "CREATE TABLE reductions(id INTEGER PRIMARY KEY, grp TEXT, tag INTEGER, "
           "members INTEGER, bytes INTEGER, start_ns INTEGER, end_ns INTEGER, tasks INTEGER, "
           "recovered INTEGER, status INTEGER);"
           "CREATE TABLE tasks(id INTEGER PRIMARY KEY, task_id INTEGER, grp TEXT);"
           "CREATE TABLE workers(worker INTEGER PRIMARY KEY, failed_ns INTEGER);"
           "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
           "PRAGMA user_version=1;");
  assert_int_equal(dred_journal_open(path, &j), DRED_ERR_STORAGE);

  /* Version 1 and the right tables, but another program's application_id. */
  snprintf(path, sizeof path, "%s/appid.db", f->dir);
  assert_int_equal(dred_journal_open(path, &j), DRED_OK);
  assert_int_equal(dred_journal_close(j), DRED_OK);
  exec_sql(path, "PRAGMA application_id=1234");
  assert_int_equal(dred_journal_open(path, &j), DRED_ERR_STORAGE);

  /* A table-less database that only claims version 1 is not empty either. */
  snprintf(path, sizeof path, "%s/bare.db", f->dir);
  exec_sql(path, "PRAGMA user_version=1");
  assert_int_equal(dred_journal_open(path, &j), DRED_ERR_STORAGE);

  /* The schema written by hand (another tool following journal.h): accepted. */
  snprintf(path, sizeof path, "%s/byhand.db", f->dir);
  exec_sql(path,
           "CREATE TABLE reductions(id INTEGER PRIMARY KEY, grp TEXT, tag INTEGER, "
           "members INTEGER, bytes INTEGER, start_ns INTEGER, end_ns INTEGER, tasks INTEGER, "
           "recovered INTEGER, status INTEGER);"
           "CREATE TABLE tasks(id INTEGER PRIMARY KEY, task_id INTEGER, grp TEXT, tag INTEGER, "
           "executor INTEGER, provider INTEGER, bytes INTEGER, start_ns INTEGER, "
           "end_ns INTEGER, exec_ns INTEGER, status INTEGER);"
           "CREATE TABLE workers(worker INTEGER PRIMARY KEY, failed_ns INTEGER);"
           "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
           "PRAGMA user_version=1;");
  assert_int_equal(dred_journal_open(path, &j), DRED_OK);
  assert_int_equal(dred_journal_close(j), DRED_OK);
}

/* A zero-length file is an empty database: it becomes a journal. */
static void test_empty_file_becomes_journal(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = NULL;

  write_file(f->path, "", 0);
  assert_int_equal(dred_journal_open(f->path, &j), DRED_OK);
  assert_int_equal(dred_journal_close(j), DRED_OK);
  assert_int_equal(query_int(f->path, "PRAGMA user_version"), 1);
}

static void test_missing_parent_dir(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = (dred_journal_t *)0x1;
  char path[160];

  snprintf(path, sizeof path, "%s/no/such/dir/journal.db", f->dir);
  assert_int_equal(dred_journal_open(path, &j), DRED_ERR_STORAGE);
  assert_null(j);
}

/* What one record costs the master's loop (printed, loosely bounded). */
static void test_record_cost(void **state) {
  fixture_t *f = *state;
  dred_journal_t *j = NULL;
  struct timespec t0, t1, t2;
  const int n = 100000;
  double per_rec_us, flush_ms;
  int i;

  assert_int_equal(dred_journal_open(f->path, &j), DRED_OK);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (i = 0; i < n; i++)
    assert_int_equal(dred_journal_task(j, (uint64_t)i, 0xabcdefULL, i % 100, (uint32_t)(i % 8),
                                       (uint32_t)((i + 1) % 8), 4096, (uint64_t)i * 1000,
                                       (uint64_t)i * 1000 + 500, 400, DRED_OK),
                     DRED_OK);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_int_equal(dred_journal_flush(j), DRED_OK);
  clock_gettime(CLOCK_MONOTONIC, &t2);
  per_rec_us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
  flush_ms = ((t2.tv_sec - t1.tv_sec) * 1e9 + (t2.tv_nsec - t1.tv_nsec)) / 1e6;
  print_message("journal: %.2f us per task record, flush of %d records %.1f ms\n", per_rec_us,
                n, flush_ms);
  assert_true(per_rec_us < 100.0);
  assert_int_equal(dred_journal_close(j), DRED_OK);
  assert_int_equal(query_int(f->path, "SELECT count(*) FROM tasks"), n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_null_args, setup, teardown),
      cmocka_unit_test_setup_teardown(test_create_schema, setup, teardown),
      cmocka_unit_test_setup_teardown(test_records_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_flush_semantics, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reopen_appends, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_garbage, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_foreign_db, setup, teardown),
      cmocka_unit_test_setup_teardown(test_empty_file_becomes_journal, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_parent_dir, setup, teardown),
      cmocka_unit_test_setup_teardown(test_record_cost, setup, teardown),
  };
  return cmocka_run_group_tests_name("journal", tests, NULL, NULL);
}
