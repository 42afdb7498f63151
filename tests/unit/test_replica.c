/*
 * test_replica.c -- CMocka tests of the node-local replica store (storage/replica*.c).
 *
 * Each test gets its own mkdtemp() directory (removed afterwards).  Covered: argument
 * checks; put/get round trips from 0 bytes to 128 MiB (32 MiB timed and printed as MB/s);
 * a missing copy -> DRED_ERR_PROC_FAILED; a copy corrupted on disk (one byte flipped in
 * the blob through a plain sqlite3 connection, or a wrong length/sum column) ->
 * DRED_ERR_STORAGE; the checksum's single-byte guarantee, exhaustively on small buffers;
 * drop; the purge of another job's copies on open; refusing foreign files and a store a
 * live process holds; recovery after a process is SIGKILLed in the middle of puts; the
 * async helpers through a real uv loop, including pool puts racing loop-thread drops and
 * close with operations still queued.
 */
/* nftw */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "../../storage/replica.h"
#include "../../storage/replica_async.h"

#define MiB (1024u * 1024u)

typedef struct {
  char dir[64];
} fixture_t;

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/dred-test-replica-XXXXXX");
  if (mkdtemp(f->dir) == NULL) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(f);
  return 0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Deterministic bytes that differ per (seed, offset). */
static void fill(void *buf, size_t len, uint64_t seed) {
  unsigned char *p = buf;
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  size_t i;
  for (i = 0; i < len; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (unsigned char)x;
  }
}

static dred_replica_t *open_store(const fixture_t *f, uint32_t worker, const char *job) {
  dred_replica_t *r = NULL;
  assert_int_equal(dred_replica_open(f->dir, worker, job, &r), DRED_OK);
  assert_non_null(r);
  return r;
}

static uint64_t count_of(dred_replica_t *r) {
  uint64_t n = 0;
  assert_int_equal(dred_replica_count(r, &n), DRED_OK);
  return n;
}

/* Run SQL on the store's file with a plain connection (the store must be closed). */
static void exec_on(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  char *msg = NULL;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
  sqlite3_close(db);
}

/* XOR byte `off` of the stored copy of (grp, tag, member) with `mask`, in place, through
 * SQLite's own incremental blob I/O on the piece that holds it (1 MiB pieces, replica.c;
 * the store must be closed). */
static void flip_byte(const char *path, int64_t grp, int64_t tag, int member, int off,
                      unsigned char mask) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  sqlite3_blob *blob = NULL;
  unsigned char b;
  sqlite3_int64 rowid;

  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT p.id FROM pieces p JOIN replicas r ON p.copy = r.id "
                                      "WHERE r.grp = ?1 AND r.tag = ?2 AND r.member = ?3 "
                                      "AND p.idx = ?4",
                                      -1, &st, NULL),
                   SQLITE_OK);
  sqlite3_bind_int64(st, 1, grp);
  sqlite3_bind_int64(st, 2, tag);
  sqlite3_bind_int(st, 3, member);
  sqlite3_bind_int(st, 4, off / (int)MiB);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  rowid = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  assert_int_equal(sqlite3_blob_open(db, "main", "pieces", "data", rowid, 1, &blob),
                   SQLITE_OK);
  assert_int_equal(sqlite3_blob_read(blob, &b, 1, off % (int)MiB), SQLITE_OK);
  b ^= mask;
  assert_int_equal(sqlite3_blob_write(blob, &b, 1, off % (int)MiB), SQLITE_OK);
  assert_int_equal(sqlite3_blob_close(blob), SQLITE_OK);
  assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

/* ---- arguments ------------------------------------------------------------------ */

static void test_null_args(void **state) {
  fixture_t *f = *state;
  dred_replica_t *r = (dred_replica_t *)0x1;
  uint64_t n;
  char buf[8] = {0};
  uv_loop_t loop;

  assert_int_equal(dred_replica_open(NULL, 0, "job", &r), DRED_ERR_ARG);
  assert_null(r);
  assert_int_equal(dred_replica_open("", 0, "job", &r), DRED_ERR_ARG);
  assert_int_equal(dred_replica_open(f->dir, 0, NULL, &r), DRED_ERR_ARG);
  assert_int_equal(dred_replica_open(f->dir, 0, "", &r), DRED_ERR_ARG);
  assert_int_equal(dred_replica_open(f->dir, 0, "job", NULL), DRED_ERR_ARG);

  assert_int_equal(dred_replica_put(NULL, 1, 1, 0, buf, sizeof buf), DRED_ERR_ARG);
  assert_int_equal(dred_replica_get(NULL, 1, 1, 0, buf, sizeof buf), DRED_ERR_ARG);
  assert_int_equal(dred_replica_drop(NULL, 1, 1), DRED_ERR_ARG);
  assert_int_equal(dred_replica_count(NULL, &n), DRED_ERR_ARG);
  assert_int_equal(dred_replica_purged(NULL, &n), DRED_ERR_ARG);
  assert_null(dred_replica_path(NULL));
  assert_int_equal(dred_replica_close(NULL), DRED_OK);

  r = open_store(f, 0, "job");
  assert_int_equal(dred_replica_put(r, 1, 1, 0, NULL, 8), DRED_ERR_ARG);
  assert_int_equal(dred_replica_get(r, 1, 1, 0, NULL, 8), DRED_ERR_ARG);
  assert_int_equal(dred_replica_count(r, NULL), DRED_ERR_ARG);
  assert_int_equal(dred_replica_purged(r, NULL), DRED_ERR_ARG);

  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(dred_replica_put_async(NULL, r, 1, 1, 0, buf, 8, NULL, NULL), DRED_ERR_ARG);
  assert_int_equal(dred_replica_put_async(&loop, NULL, 1, 1, 0, buf, 8, NULL, NULL),
                   DRED_ERR_ARG);
  assert_int_equal(dred_replica_put_async(&loop, r, 1, 1, 0, buf, 8, NULL, NULL),
                   DRED_ERR_ARG); /* no callback */
  assert_int_equal(dred_replica_get_async(&loop, r, 1, 1, 0, NULL, 8, NULL, NULL),
                   DRED_ERR_ARG);
  assert_int_equal(dred_replica_drop_async(&loop, NULL, 1, 1, NULL, NULL), DRED_ERR_ARG);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0); /* nothing was queued */
  assert_int_equal(uv_loop_close(&loop), 0);

  assert_int_equal(count_of(r), 0);
  assert_int_equal(dred_replica_close(r), DRED_OK);
}

/* ---- the store's files ----------------------------------------------------------- */

/* File 0 is the database open uses; remove deletes it with every side file SQLite may
 * have left (a dead owner's -journal, say), and is fine when none exists. */
static void test_files_and_remove(void **state) {
  fixture_t *f = *state;
  char path[DRED_REPLICA_FILES][4200], tiny[8];
  dred_replica_t *r = open_store(f, 3, "job-files");
  unsigned i;

  for (i = 0; i < DRED_REPLICA_FILES; i++)
    assert_int_equal(dred_replica_file(f->dir, 3, i, path[i], sizeof path[i]), DRED_OK);
  assert_string_equal(path[0], dred_replica_path(r));
  assert_string_equal(path[DRED_REPLICA_FILES - 1] + strlen(path[0]), "-journal");
  assert_int_equal(dred_replica_file(f->dir, 3, DRED_REPLICA_FILES, tiny, sizeof tiny),
                   DRED_ERR_ARG);
  assert_int_equal(dred_replica_file(f->dir, 3, 0, tiny, sizeof tiny), DRED_ERR_ARG);
  assert_int_equal(dred_replica_file(NULL, 3, 0, path[0], sizeof path[0]), DRED_ERR_ARG);
  assert_int_equal(dred_replica_close(r), DRED_OK);

  for (i = 1; i < DRED_REPLICA_FILES; i++) { /* side files as a killed owner leaves them */
    FILE *fp = fopen(path[i], "w");
    assert_non_null(fp);
    fclose(fp);
  }
  assert_int_equal(dred_replica_remove(f->dir, 3), DRED_OK);
  for (i = 0; i < DRED_REPLICA_FILES; i++) assert_int_not_equal(access(path[i], F_OK), 0);
  assert_int_equal(dred_replica_remove(f->dir, 3), DRED_OK); /* nothing left: still fine */
  assert_int_equal(dred_replica_remove("", 3), DRED_ERR_ARG);
}

/* ---- round trips ---------------------------------------------------------------- */

static void test_roundtrip_small(void **state) {
  fixture_t *f = *state;
  static const size_t sizes[] = {0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 1000, 65536, 65537};
  const size_t n = sizeof sizes / sizeof sizes[0];
  unsigned char in[65537], out[65537];
  dred_replica_t *r = open_store(f, 3, "job-small");
  size_t i;

  assert_non_null(strstr(dred_replica_path(r), "/dred-replica-3.db"));
  for (i = 0; i < n; i++) {
    fill(in, sizes[i], i);
    assert_int_equal(dred_replica_put(r, 0xfedcba9876543210ULL, -1, (uint32_t)i, in, sizes[i]),
                     DRED_OK);
  }
  assert_int_equal(count_of(r), n);
  for (i = 0; i < n; i++) {
    fill(in, sizes[i], i);
    memset(out, 0xa5, sizeof out);
    assert_int_equal(
        dred_replica_get(r, 0xfedcba9876543210ULL, -1, (uint32_t)i, out, sizes[i]), DRED_OK);
    if (sizes[i] > 0) assert_memory_equal(out, in, sizes[i]);
  }
  /* (NULL, 0) is a valid empty operand. */
  assert_int_equal(dred_replica_put(r, 5, 5, 5, NULL, 0), DRED_OK);
  assert_int_equal(dred_replica_get(r, 5, 5, 5, NULL, 0), DRED_OK);

  /* Replacing a copy: the new bytes and length win, the row count does not grow. */
  fill(in, 100, 77);
  assert_int_equal(dred_replica_put(r, 0xfedcba9876543210ULL, -1, 10, in, 100), DRED_OK);
  assert_int_equal(count_of(r), n + 1);
  assert_int_equal(dred_replica_get(r, 0xfedcba9876543210ULL, -1, 10, out, 100), DRED_OK);
  assert_memory_equal(out, in, 100);

  /* Survives close and reopen by the same job. */
  assert_int_equal(dred_replica_close(r), DRED_OK);
  r = open_store(f, 3, "job-small");
  assert_int_equal(count_of(r), n + 1);
  assert_int_equal(dred_replica_get(r, 0xfedcba9876543210ULL, -1, 10, out, 100), DRED_OK);
  assert_memory_equal(out, in, 100);
  fill(in, 1000, 11);
  assert_int_equal(dred_replica_get(r, 0xfedcba9876543210ULL, -1, 11, out, 1000), DRED_OK);
  assert_memory_equal(out, in, 1000);
  assert_int_equal(dred_replica_close(r), DRED_OK);
}

/* The pause hook (how libdred lets operand copies into shared memory go first): asked
 * once before the bytes are read and once more before each further 1 MiB piece; removing
 * it stops the calls; what is stored is unaffected. */
static int pauses;
static void count_pause(void *arg) {
  assert_ptr_equal(arg, &pauses);
  pauses++;
}

static void test_pause_hook(void **state) {
  fixture_t *f = *state;
  const size_t len = (10u << 20) + 1; /* 10 pieces of 1 MiB and one of 1 byte */
  unsigned char *in = malloc(len), *out = malloc(len);
  dred_replica_t *r = open_store(f, 4, "job-pause");

  assert_non_null(in);
  assert_non_null(out);
  fill(in, len, 3);
  dred_replica_set_pause(r, count_pause, &pauses);
  pauses = 0;
  assert_int_equal(dred_replica_put(r, 1, 2, 3, in, len), DRED_OK);
  assert_int_equal(pauses, 11);
  assert_int_equal(dred_replica_put(r, 1, 2, 4, in, 1u << 20), DRED_OK);
  assert_int_equal(pauses, 12); /* exactly one piece: asked before it only */
  assert_int_equal(dred_replica_put(r, 1, 2, 5, NULL, 0), DRED_OK);
  assert_int_equal(pauses, 13);
  assert_int_equal(dred_replica_get(r, 1, 2, 3, out, len), DRED_OK); /* reads never pause */
  assert_int_equal(pauses, 13);
  assert_memory_equal(out, in, len);
  dred_replica_set_pause(r, NULL, NULL);
  assert_int_equal(dred_replica_put(r, 1, 2, 6, in, len), DRED_OK);
  assert_int_equal(pauses, 13);
  dred_replica_set_pause(NULL, count_pause, &pauses); /* ignored */
  assert_int_equal(dred_replica_close(r), DRED_OK);
  free(in);
  free(out);
}

static void test_roundtrip_32mib_timed(void **state) {
  fixture_t *f = *state;
  const size_t len = 32 * MiB;
  const int reps = 5;
  unsigned char *in = malloc(len), *out = malloc(len);
  dred_replica_t *r = open_store(f, 1, "job-big");
  double t0, put_s = 1e9, get_s = 1e9, t;
  int i;

  assert_non_null(in);
  assert_non_null(out);
  fill(in, len, 32);
  /* Best of `reps`, each into a new key (the common case: an operand stored once). */
  for (i = 0; i < reps; i++) {
    t0 = now_s();
    assert_int_equal(dred_replica_put(r, 7, i, 0, in, len), DRED_OK);
    t = now_s() - t0;
    if (t < put_s) put_s = t;
  }
  for (i = 0; i < reps; i++) {
    memset(out, 0, len);
    t0 = now_s();
    assert_int_equal(dred_replica_get(r, 7, i, 0, out, len), DRED_OK);
    t = now_s() - t0;
    if (t < get_s) get_s = t;
    assert_memory_equal(out, in, len);
  }
  print_message("replica 32 MiB: put %.0f MB/s (%.1f ms), get %.0f MB/s (%.1f ms)\n",
                len / 1e6 / put_s, put_s * 1e3, len / 1e6 / get_s, get_s * 1e3);
  /* Replacing a 32 MiB copy. */
  fill(in, len, 33);
  assert_int_equal(dred_replica_put(r, 7, 0, 0, in, len), DRED_OK);
  assert_int_equal(dred_replica_get(r, 7, 0, 0, out, len), DRED_OK);
  assert_memory_equal(out, in, len);
  for (i = 0; i < reps; i++) assert_int_equal(dred_replica_drop(r, 7, i), DRED_OK);
  assert_int_equal(count_of(r), 0);
  assert_int_equal(dred_replica_close(r), DRED_OK);
  free(in);
  free(out);
}

static void test_roundtrip_128mib(void **state) {
  fixture_t *f = *state;
  const size_t len = 128 * MiB;
  unsigned char *in = malloc(len), *out = malloc(len);
  dred_replica_t *r = open_store(f, 1, "job-huge");
  struct stat sb;

  assert_non_null(in);
  assert_non_null(out);
  fill(in, len, 128);
  assert_int_equal(dred_replica_put(r, 8, 0, 1, in, len), DRED_OK);
  assert_int_equal(dred_replica_get(r, 8, 0, 1, out, len), DRED_OK);
  assert_memory_equal(out, in, len);
  /* A wrong expected size is a storage error, not a buffer overrun. */
  assert_int_equal(dred_replica_get(r, 8, 0, 1, out, len - 1), DRED_ERR_STORAGE);
  assert_int_equal(dred_replica_drop(r, 8, 0), DRED_OK);
  /* Closing an empty store hands the space back. */
  assert_int_equal(dred_replica_close(r), DRED_OK);
  free(in);
  free(out);
  {
    char path[160];
    snprintf(path, sizeof path, "%s/dred-replica-1.db", f->dir);
    assert_int_equal(stat(path, &sb), 0);
    assert_true(sb.st_size < 4 * (off_t)MiB);
  }
}


/* Run `sql` on the closed store of worker 4 (job "job"), then read (3, 4, 5) back:
 * the read must return `want`. */
static void damage_then_get(fixture_t *f, const char *path, const char *sql, void *out,
                            size_t len, int want) {
  dred_replica_t *r;
  exec_on(path, sql);
  r = open_store(f, 4, "job");
  assert_int_equal(dred_replica_get(r, 3, 4, 5, out, len), want);
  assert_int_equal(dred_replica_close(r), DRED_OK);
}
/* ---- missing and corrupt copies ------------------------------------------------- */

static void test_missing_copy(void **state) {
  fixture_t *f = *state;
  dred_replica_t *r = open_store(f, 2, "job");
  char buf[16] = "0123456789abcde";

  assert_int_equal(dred_replica_get(r, 1, 1, 0, buf, sizeof buf), DRED_ERR_PROC_FAILED);
  assert_int_equal(dred_replica_put(r, 1, 1, 0, buf, sizeof buf), DRED_OK);
  assert_int_equal(dred_replica_get(r, 1, 1, 1, buf, sizeof buf), DRED_ERR_PROC_FAILED);
  assert_int_equal(dred_replica_get(r, 1, 2, 0, buf, sizeof buf), DRED_ERR_PROC_FAILED);
  assert_int_equal(dred_replica_get(r, 2, 1, 0, buf, sizeof buf), DRED_ERR_PROC_FAILED);
  /* Length disagreement: corrupt (or a caller bug), never a silent truncation. */
  assert_int_equal(dred_replica_get(r, 1, 1, 0, buf, sizeof buf - 1), DRED_ERR_STORAGE);
  assert_int_equal(dred_replica_get(r, 1, 1, 0, buf, sizeof buf), DRED_OK);
  assert_int_equal(dred_replica_close(r), DRED_OK);
}

static void test_corrupt_byte_detected(void **state) {
  fixture_t *f = *state;
  const size_t len = 1 * MiB + 13; /* stripes, whole words and a tail */
  const int offsets[] = {0, 1, 7, 8, 31, 32, (int)(512 * 1024 + 3), (int)len - 14,
                         (int)len - 13, (int)len - 5, (int)len - 1};
  unsigned char *in = malloc(len), *out = malloc(len);
  char path[160];
  dred_replica_t *r;
  size_t i;

  assert_non_null(in);
  assert_non_null(out);
  fill(in, len, 99);
  r = open_store(f, 4, "job");
  assert_int_equal(dred_replica_put(r, 3, 4, 5, in, len), DRED_OK);
  snprintf(path, sizeof path, "%s", dred_replica_path(r));
  assert_int_equal(dred_replica_close(r), DRED_OK);

  for (i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
    unsigned char mask = (unsigned char)(1u << (i % 8));
    flip_byte(path, 3, 4, 5, offsets[i], mask);
    r = open_store(f, 4, "job");
    assert_int_equal(dred_replica_get(r, 3, 4, 5, out, len), DRED_ERR_STORAGE);
    assert_int_equal(dred_replica_close(r), DRED_OK);
    flip_byte(path, 3, 4, 5, offsets[i], mask); /* repair */
    r = open_store(f, 4, "job");
    assert_int_equal(dred_replica_get(r, 3, 4, 5, out, len), DRED_OK);
    assert_memory_equal(out, in, len);
    assert_int_equal(dred_replica_close(r), DRED_OK);
  }

  /* Damaged metadata: the stored sum, then the stored length (and repaired). */
  damage_then_get(f, path, "UPDATE replicas SET sum = sum + 1", out, len, DRED_ERR_STORAGE);
  damage_then_get(f, path, "UPDATE replicas SET sum = sum - 1, len = len - 1", out, len,
                  DRED_ERR_STORAGE);
  damage_then_get(f, path, "UPDATE replicas SET len = len + 1", out, len, DRED_OK);
  /* A piece shorter than it should be, then a piece missing, then one too many. */
  damage_then_get(f, path,
                  "UPDATE pieces SET data = substr(data, 1, length(data) - 1) WHERE idx = 1",
                  out, len, DRED_ERR_STORAGE);
  damage_then_get(f, path, "DELETE FROM pieces WHERE idx = 1", out, len, DRED_ERR_STORAGE);
  damage_then_get(f, path,
                  "INSERT INTO pieces(copy, idx, data) SELECT copy, 1, x'00' FROM pieces "
                  "WHERE idx = 0; INSERT INTO pieces(copy, idx, data) SELECT copy, 2, x'00' "
                  "FROM pieces WHERE idx = 0",
                  out, len, DRED_ERR_STORAGE);
  free(in);
  free(out);
}

/* Every single-bit flip of every byte changes the checksum (the guarantee replica.h
 * states), for lengths around the 8-byte word and 32-byte stripe boundaries; so does
 * appending or dropping a zero byte. */
static void test_checksum_single_byte(void **state) {
  static const size_t lens[] = {1, 7, 8, 9, 31, 32, 33, 64, 100, 257};
  unsigned char buf[258];
  size_t l, i;
  int bit;

  (void)state;
  for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
    size_t len = lens[l];
    uint64_t base;
    fill(buf, len, len);
    base = dred_replica_checksum(buf, len);
    for (i = 0; i < len; i++)
      for (bit = 0; bit < 8; bit++) {
        buf[i] ^= (unsigned char)(1u << bit);
        assert_true(dred_replica_checksum(buf, len) != base);
        buf[i] ^= (unsigned char)(1u << bit);
      }
    /* Any other value of one byte, too. */
    for (i = 0; i < len; i += 7) {
      unsigned v;
      unsigned char keep = buf[i];
      for (v = 0; v < 256; v++) {
        if (v == keep) continue;
        buf[i] = (unsigned char)v;
        assert_true(dred_replica_checksum(buf, len) != base);
      }
      buf[i] = keep;
    }
    assert_int_equal(dred_replica_checksum(buf, len), base);
  }
  memset(buf, 0, sizeof buf);
  for (l = 0; l < 64; l++)
    assert_true(dred_replica_checksum(buf, l) != dred_replica_checksum(buf, l + 1));
  assert_int_equal(dred_replica_checksum(NULL, 0), dred_replica_checksum(buf, 0));
}

/* ---- drop and purge ------------------------------------------------------------- */

static void test_drop(void **state) {
  fixture_t *f = *state;
  dred_replica_t *r = open_store(f, 5, "job");
  char buf[64];
  uint32_t m;

  fill(buf, sizeof buf, 1);
  for (m = 0; m < 4; m++) assert_int_equal(dred_replica_put(r, 10, 20, m, buf, 64), DRED_OK);
  assert_int_equal(dred_replica_put(r, 10, 21, 0, buf, 64), DRED_OK);
  assert_int_equal(dred_replica_put(r, 11, 20, 0, buf, 64), DRED_OK);
  assert_int_equal(count_of(r), 6);

  assert_int_equal(dred_replica_drop(r, 10, 20), DRED_OK);
  assert_int_equal(count_of(r), 2);
  for (m = 0; m < 4; m++)
    assert_int_equal(dred_replica_get(r, 10, 20, m, buf, 64), DRED_ERR_PROC_FAILED);
  assert_int_equal(dred_replica_get(r, 10, 21, 0, buf, 64), DRED_OK);
  assert_int_equal(dred_replica_get(r, 11, 20, 0, buf, 64), DRED_OK);
  assert_int_equal(dred_replica_drop(r, 10, 20), DRED_OK); /* again: nothing, no error */
  assert_int_equal(dred_replica_drop(r, 99, 99), DRED_OK);
  assert_int_equal(count_of(r), 2);
  assert_int_equal(dred_replica_close(r), DRED_OK);
}

static void test_stale_job_purged(void **state) {
  fixture_t *f = *state;
  dred_replica_t *r;
  char buf[4096], path[160];
  uint64_t purged = 99;
  uint32_t i;

  fill(buf, sizeof buf, 2);
  r = open_store(f, 6, "job-A");
  for (i = 0; i < 3; i++) assert_int_equal(dred_replica_put(r, 1, i, 0, buf, 4096), DRED_OK);
  assert_int_equal(dred_replica_purged(r, &purged), DRED_OK);
  assert_int_equal(purged, 0);
  snprintf(path, sizeof path, "%s", dred_replica_path(r));
  assert_int_equal(dred_replica_close(r), DRED_OK);

  /* The same job reopening keeps its copies. */
  r = open_store(f, 6, "job-A");
  assert_int_equal(dred_replica_purged(r, &purged), DRED_OK);
  assert_int_equal(purged, 0);
  assert_int_equal(count_of(r), 3);
  assert_int_equal(dred_replica_close(r), DRED_OK);

  /* Another job (job-A died) cleans them out. */
  r = open_store(f, 6, "job-B");
  assert_int_equal(dred_replica_purged(r, &purged), DRED_OK);
  assert_int_equal(purged, 3);
  assert_int_equal(count_of(r), 0);
  assert_int_equal(dred_replica_get(r, 1, 0, 0, buf, 4096), DRED_ERR_PROC_FAILED);
  assert_int_equal(dred_replica_put(r, 1, 0, 0, buf, 4096), DRED_OK);
  assert_int_equal(dred_replica_close(r), DRED_OK);

  /* Other workers' stores in the same directory are not touched. */
  r = open_store(f, 7, "job-C");
  assert_int_equal(dred_replica_close(r), DRED_OK);
  r = open_store(f, 6, "job-B");
  assert_int_equal(count_of(r), 1);
  assert_int_equal(dred_replica_close(r), DRED_OK);
  {
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'job'", -1,
                                        &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "job-B");
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
}

/* ---- files and directories ------------------------------------------------------ */

static void test_creates_dirs(void **state) {
  fixture_t *f = *state;
  dred_replica_t *r = NULL;
  char dir[160], path[192];
  struct stat sb;

  snprintf(dir, sizeof dir, "%s/a/b/c", f->dir);
  assert_int_equal(dred_replica_open(dir, 9, "job", &r), DRED_OK);
  assert_int_equal(stat(dir, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(sb.st_mode & 0777, 0700);
  snprintf(dir, sizeof dir, "%s/a", f->dir);
  assert_int_equal(stat(dir, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0700);
  snprintf(path, sizeof path, "%s/a/b/c/dred-replica-9.db", f->dir);
  assert_string_equal(dred_replica_path(r), path);
  assert_int_equal(access(path, F_OK), 0);
  assert_int_equal(dred_replica_close(r), DRED_OK);

  /* Trailing slash, existing directory. */
  snprintf(dir, sizeof dir, "%s/a/b/c/", f->dir);
  assert_int_equal(dred_replica_open(dir, 9, "job", &r), DRED_OK);
  assert_int_equal(dred_replica_close(r), DRED_OK);

  /* A file where the directory should be. */
  snprintf(path, sizeof path, "%s/plainfile", f->dir);
  close(open(path, O_CREAT | O_WRONLY, 0600));
  r = (dred_replica_t *)0x1;
  assert_int_equal(dred_replica_open(path, 9, "job", &r), DRED_ERR_STORAGE);
  assert_null(r);
  snprintf(dir, sizeof dir, "%s/plainfile/sub", f->dir);
  assert_int_equal(dred_replica_open(dir, 9, "job", &r), DRED_ERR_STORAGE);
}

static void test_refuses_foreign_files(void **state) {
  fixture_t *f = *state;
  dred_replica_t *r = (dred_replica_t *)0x1;
  char path[160], junk[4096], back[4096];
  FILE *fp;

  fill(junk, sizeof junk, 3);
  snprintf(path, sizeof path, "%s/dred-replica-11.db", f->dir);
  fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(junk, 1, sizeof junk, fp), sizeof junk);
  fclose(fp);
  assert_int_equal(dred_replica_open(f->dir, 11, "job", &r), DRED_ERR_STORAGE);
  assert_null(r);
  fp = fopen(path, "rb");
  assert_int_equal(fread(back, 1, sizeof back, fp), sizeof junk);
  fclose(fp);
  assert_memory_equal(back, junk, sizeof junk);

  /* Another program's SQLite file, and a replica store of a future version. */
  snprintf(path, sizeof path, "%s/dred-replica-12.db", f->dir);
  {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE replicas(x)", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
  }
  assert_int_equal(dred_replica_open(f->dir, 12, "job", &r), DRED_ERR_STORAGE);
  r = open_store(f, 13, "job");
  assert_int_equal(dred_replica_close(r), DRED_OK);
  snprintf(path, sizeof path, "%s/dred-replica-13.db", f->dir);
  exec_on(path, "PRAGMA user_version=3"); /* a newer dred's format: not ours to touch */
  assert_int_equal(dred_replica_open(f->dir, 13, "job", &r), DRED_ERR_STORAGE);
}

/* A format-1 store (one blob per copy, before pieces) left by an older dred is ours: its
 * copies are of no use to a new job, so it is recreated in the current format. */
static void test_format1_store_recreated(void **state) {
  fixture_t *f = *state;
  char path[160];
  unsigned char in[100], out[100];
  dred_replica_t *r;

  snprintf(path, sizeof path, "%s/dred-replica-14.db", f->dir);
  {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "CREATE TABLE replicas(id INTEGER PRIMARY KEY, job TEXT NOT NULL, "
                     "grp INTEGER NOT NULL, tag INTEGER NOT NULL, member INTEGER NOT NULL, "
                     "len INTEGER NOT NULL, sum INTEGER NOT NULL, data BLOB NOT NULL, "
                     "UNIQUE(grp, tag, member));"
                     "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                     "INSERT INTO replicas VALUES(1, 'old', 1, 2, 3, 1, 0, x'00');"
                     "PRAGMA user_version=1; PRAGMA application_id=1146242130;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
  }
  r = open_store(f, 14, "job");
  assert_int_equal(count_of(r), 0);
  fill(in, sizeof in, 5);
  assert_int_equal(dred_replica_put(r, 1, 2, 3, in, sizeof in), DRED_OK);
  assert_int_equal(dred_replica_get(r, 1, 2, 3, out, sizeof out), DRED_OK);
  assert_memory_equal(out, in, sizeof in);
  assert_int_equal(dred_replica_close(r), DRED_OK);
}

/* A store is held exclusively while open: a second opener (here the same process; the
 * lock is the same across processes) is refused instead of purging live copies. */
static void test_second_open_refused(void **state) {
  fixture_t *f = *state;
  dred_replica_t *r = open_store(f, 14, "job-A"), *r2 = (dred_replica_t *)0x1;
  char buf[8] = "abcdefg";

  assert_int_equal(dred_replica_put(r, 1, 1, 0, buf, 8), DRED_OK);
  assert_int_equal(dred_replica_open(f->dir, 14, "job-B", &r2), DRED_ERR_STORAGE);
  assert_null(r2);
  assert_int_equal(dred_replica_get(r, 1, 1, 0, buf, 8), DRED_OK); /* still there */
  assert_int_equal(dred_replica_close(r), DRED_OK);
  r2 = open_store(f, 14, "job-A");
  assert_int_equal(count_of(r2), 1);
  assert_int_equal(dred_replica_close(r2), DRED_OK);
}

/* Is there a hot journal (a valid rollback-journal header) next to the store?  In
 * PERSIST mode a committed journal has its header zeroed. */
static int hot_journal(const char *dir, uint32_t worker) {
  static const unsigned char magic[8] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7};
  unsigned char head[8] = {0};
  char path[192];
  FILE *fp;
  snprintf(path, sizeof path, "%s/dred-replica-%u.db-journal", dir, (unsigned)worker);
  fp = fopen(path, "rb");
  if (fp == NULL) return 0;
  if (fread(head, 1, sizeof head, fp) != sizeof head) memset(head, 0, sizeof head);
  fclose(fp);
  return memcmp(head, magic, sizeof magic) == 0;
}

/* A process SIGKILLed in the middle of puts: the next open rolls the half-written
 * transaction back (hot journal), and every copy still there reads back intact.  Repeated
 * until at least one kill landed inside a transaction (nearly always the first). */
static void test_killed_mid_put(void **state) {
  fixture_t *f = *state;
  const size_t len = 4 * MiB;
  unsigned char *buf = malloc(len), *out = malloc(len);
  int attempt, hot = 0;

  assert_non_null(buf);
  assert_non_null(out);
  fill(buf, len, 999); /* the pattern the child writes after its stamp */
  for (attempt = 0; attempt < 10 && !hot; attempt++) {
    int pipefd[2], status, ok = 0, missing = 0;
    uint64_t n;
    int64_t t;
    pid_t pid;
    char c;
    dred_replica_t *r;

    assert_int_equal(pipe(pipefd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      dred_replica_t *cr = NULL;
      close(pipefd[0]);
      if (dred_replica_open(f->dir, 15, "job", &cr) != DRED_OK) _exit(2);
      /* Cheap per put (stamp t in the first 8 bytes), so kills land mostly in puts. */
      fill(buf, len, 999);
      for (t = 0;; t++) {
        memcpy(buf, &t, sizeof t);
        if (dred_replica_put(cr, 1, t % 64, 0, buf, len) != DRED_OK) _exit(3);
        if (t == 4 && write(pipefd[1], "x", 1) != 1) _exit(4);
      }
    }
    close(pipefd[1]);
    assert_int_equal(read(pipefd[0], &c, 1), 1); /* a few puts are done */
    close(pipefd[0]);
    usleep(3000 + (useconds_t)(attempt * 700));
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));

    hot = hot_journal(f->dir, 15);
    r = open_store(f, 15, "job"); /* the kernel dropped the dead child's lock */
    assert_false(hot_journal(f->dir, 15)); /* rolled back */
    assert_int_equal(dred_replica_count(r, &n), DRED_OK);
    for (t = 0; t < 64; t++) {
      int st = dred_replica_get(r, 1, t, 0, out, len);
      assert_true(st == DRED_OK || st == DRED_ERR_PROC_FAILED);
      if (st == DRED_OK) {
        /* The copy is one the child wrote for this key: stamp t' = t (mod 64), pattern. */
        int64_t stamp;
        memcpy(&stamp, out, sizeof stamp);
        assert_true(stamp >= 0 && stamp % 64 == t);
        assert_memory_equal(out + 8, buf + 8, len - 8);
        ok++;
      } else {
        missing++;
      }
    }
    assert_int_equal((uint64_t)ok, n);
    assert_true(ok >= 5);
    print_message("killed mid-put (attempt %d): %s, %d intact copies, %d never written\n",
                  attempt + 1, hot ? "hot journal rolled back" : "between transactions", ok,
                  missing);
    assert_int_equal(dred_replica_close(r), DRED_OK);
  }
  assert_true(hot);
  free(buf);
  free(out);
}

/* ---- async ---------------------------------------------------------------------- */

typedef struct {
  int calls;
  int status;
} cb_record_t;

static void record_cb(void *arg, int status) {
  cb_record_t *c = arg;
  c->calls++;
  c->status = status;
}

static void test_async_put_get(void **state) {
  fixture_t *f = *state;
  const size_t big = 32 * MiB;
  unsigned char *in = malloc(big), *out = malloc(big), small[100], small_out[100];
  cb_record_t c[6];
  uv_loop_t loop;
  dred_replica_t *r = open_store(f, 16, "job");
  double t0, put_s, get_s;

  assert_non_null(in);
  assert_non_null(out);
  memset(c, 0, sizeof c);
  fill(in, big, 5);
  fill(small, sizeof small, 6);
  assert_int_equal(uv_loop_init(&loop), 0);

  t0 = now_s();
  assert_int_equal(dred_replica_put_async(&loop, r, 1, 2, 0, in, big, record_cb, &c[0]), DRED_OK);
  assert_int_equal(
      dred_replica_put_async(&loop, r, 1, 2, 1, small, sizeof small, record_cb, &c[1]),
      DRED_OK);
  assert_int_equal(c[0].calls + c[1].calls, 0); /* callbacks only from the loop */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  put_s = now_s() - t0;
  assert_int_equal(c[0].calls, 1);
  assert_int_equal(c[0].status, DRED_OK);
  assert_int_equal(c[1].calls, 1);
  assert_int_equal(c[1].status, DRED_OK);

  t0 = now_s();
  assert_int_equal(dred_replica_get_async(&loop, r, 1, 2, 0, out, big, record_cb, &c[2]), DRED_OK);
  assert_int_equal(dred_replica_get_async(&loop, r, 1, 2, 1, small_out, sizeof small_out,
                                          record_cb, &c[3]),
                   DRED_OK);
  assert_int_equal(dred_replica_get_async(&loop, r, 1, 2, 7, small_out, sizeof small_out,
                                          record_cb, &c[4]),
                   DRED_OK);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  get_s = now_s() - t0;
  assert_int_equal(c[2].calls, 1);
  assert_int_equal(c[2].status, DRED_OK);
  assert_memory_equal(out, in, big);
  assert_int_equal(c[3].status, DRED_OK);
  assert_memory_equal(small_out, small, sizeof small);
  assert_int_equal(c[4].calls, 1);
  assert_int_equal(c[4].status, DRED_ERR_PROC_FAILED);
  print_message("replica async 32 MiB (+100 B): put %.1f ms, get %.1f ms\n", put_s * 1e3,
                get_s * 1e3);

  assert_int_equal(dred_replica_drop_async(&loop, r, 1, 2, record_cb, &c[5]), DRED_OK);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(c[5].calls, 1);
  assert_int_equal(c[5].status, DRED_OK);
  assert_int_equal(count_of(r), 0);

  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(dred_replica_close(r), DRED_OK);
  free(in);
  free(out);
}

/* Once the job's reductions all ended (a worker got SHUTDOWN), queued puts and drops are
 * moot: they complete with DRED_ERR_SHUTDOWN without writing, so dred_finalize does not
 * wait for thousands of copies nobody will read; gets still run. */
static void test_async_moot_skips_writes(void **state) {
  fixture_t *f = *state;
  unsigned char in[64], out[64];
  cb_record_t c[4];
  uv_loop_t loop;
  dred_replica_t *r = open_store(f, 17, "job");

  memset(c, 0, sizeof c);
  fill(in, sizeof in, 9);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(dred_replica_put_async(&loop, r, 3, 4, 0, in, sizeof in, record_cb, &c[0]),
                   DRED_OK);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(c[0].status, DRED_OK);
  assert_int_equal(count_of(r), 1);

  dred_replica_set_moot(r);
  assert_int_equal(dred_replica_put_async(&loop, r, 3, 5, 0, in, sizeof in, record_cb, &c[1]),
                   DRED_OK);
  assert_int_equal(dred_replica_drop_async(&loop, r, 3, 4, record_cb, &c[2]), DRED_OK);
  assert_int_equal(dred_replica_get_async(&loop, r, 3, 4, 0, out, sizeof out, record_cb, &c[3]),
                   DRED_OK);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(c[1].calls, 1);
  assert_int_equal(c[1].status, DRED_ERR_SHUTDOWN);
  assert_int_equal(c[2].calls, 1);
  assert_int_equal(c[2].status, DRED_ERR_SHUTDOWN);
  assert_int_equal(count_of(r), 1); /* neither the put nor the drop touched the file */
  assert_int_equal(c[3].status, DRED_OK);
  assert_memory_equal(out, in, sizeof in);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(dred_replica_close(r), DRED_OK);
}

#define RACE_KEYS 48
#define RACE_LEN (256 * 1024)

typedef struct {
  dred_replica_t *r;
  uv_idle_t idle;
  int next_drop;
  int drops_ok;
  int puts_done;
  int put_status[RACE_KEYS];
} race_t;

static void race_put_cb(void *arg, int status) {
  int *slot = arg;
  *slot = status;
}

/* On the loop thread, while pool threads put group 1: drop one group-2 key per turn. */
static void race_idle_cb(uv_idle_t *h) {
  race_t *rc = h->data;
  if (rc->next_drop < RACE_KEYS) {
    if (dred_replica_drop(rc->r, 2, rc->next_drop) == DRED_OK) rc->drops_ok++;
    rc->next_drop++;
  } else {
    uv_idle_stop(h);
    uv_close((uv_handle_t *)h, NULL);
  }
}

static void test_async_concurrent_with_drops(void **state) {
  fixture_t *f = *state;
  unsigned char *bufs = malloc((size_t)RACE_KEYS * RACE_LEN), *out = malloc(RACE_LEN);
  race_t rc;
  uv_loop_t loop;
  int i;

  assert_non_null(bufs);
  assert_non_null(out);
  memset(&rc, 0, sizeof rc);
  rc.r = open_store(f, 17, "job");
  for (i = 0; i < RACE_KEYS; i++) {
    rc.put_status[i] = -1;
    fill(bufs + (size_t)i * RACE_LEN, RACE_LEN, (uint64_t)i + 1000);
    /* group 2: stored up front, dropped by the loop thread during the race */
    assert_int_equal(dred_replica_put(rc.r, 2, i, 0, bufs + (size_t)i * RACE_LEN, 4096),
                     DRED_OK);
  }
  assert_int_equal(uv_loop_init(&loop), 0);
  for (i = 0; i < RACE_KEYS; i++)
    assert_int_equal(dred_replica_put_async(&loop, rc.r, 1, i, (uint32_t)(i % 3),
                                            bufs + (size_t)i * RACE_LEN, RACE_LEN, race_put_cb,
                                            &rc.put_status[i]),
                     DRED_OK);
  assert_int_equal(uv_idle_init(&loop, &rc.idle), 0);
  rc.idle.data = &rc;
  assert_int_equal(uv_idle_start(&rc.idle, race_idle_cb), 0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);

  assert_int_equal(rc.drops_ok, RACE_KEYS);
  for (i = 0; i < RACE_KEYS; i++) {
    assert_int_equal(rc.put_status[i], DRED_OK);
    assert_int_equal(dred_replica_get(rc.r, 1, i, (uint32_t)(i % 3), out, RACE_LEN), DRED_OK);
    assert_memory_equal(out, bufs + (size_t)i * RACE_LEN, RACE_LEN);
    assert_int_equal(dred_replica_get(rc.r, 2, i, 0, out, 4096), DRED_ERR_PROC_FAILED);
  }
  assert_int_equal(count_of(rc.r), RACE_KEYS);
  assert_int_equal(dred_replica_close(rc.r), DRED_OK);
  free(bufs);
  free(out);
}

/* Closing with async puts still queued waits for their storage work; the callbacks then
 * run on the next loop turn and the copies are on disk. */
static void test_close_with_async_in_flight(void **state) {
  fixture_t *f = *state;
  const size_t len = 2 * MiB;
  unsigned char *buf = malloc(len), *out = malloc(len);
  cb_record_t c[8];
  uv_loop_t loop;
  dred_replica_t *r = open_store(f, 18, "job");
  int i;

  assert_non_null(buf);
  assert_non_null(out);
  memset(c, 0, sizeof c);
  fill(buf, len, 8);
  assert_int_equal(uv_loop_init(&loop), 0);
  for (i = 0; i < 8; i++)
    assert_int_equal(dred_replica_put_async(&loop, r, 4, i, 0, buf, len, record_cb, &c[i]),
                     DRED_OK);
  assert_int_equal(dred_replica_close(r), DRED_OK);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  for (i = 0; i < 8; i++) {
    assert_int_equal(c[i].calls, 1);
    assert_int_equal(c[i].status, DRED_OK);
  }
  assert_int_equal(uv_loop_close(&loop), 0);

  r = open_store(f, 18, "job");
  assert_int_equal(count_of(r), 8);
  for (i = 0; i < 8; i++) {
    assert_int_equal(dred_replica_get(r, 4, i, 0, out, len), DRED_OK);
    assert_memory_equal(out, buf, len);
  }
  assert_int_equal(dred_replica_close(r), DRED_OK);
  free(buf);
  free(out);
}

int main(void) {
  /* Missing copies are logged as warnings by design; keep the output readable unless
   * the caller asked for a level. */
  setenv("DRED_LOG_LEVEL", "error", 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_null_args, setup, teardown),
      cmocka_unit_test_setup_teardown(test_files_and_remove, setup, teardown),
      cmocka_unit_test_setup_teardown(test_roundtrip_small, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pause_hook, setup, teardown),
      cmocka_unit_test_setup_teardown(test_roundtrip_32mib_timed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_roundtrip_128mib, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_byte_detected, setup, teardown),
      cmocka_unit_test(test_checksum_single_byte),
      cmocka_unit_test_setup_teardown(test_drop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stale_job_purged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_creates_dirs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_foreign_files, setup, teardown),
      cmocka_unit_test_setup_teardown(test_format1_store_recreated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_second_open_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_killed_mid_put, setup, teardown),
      cmocka_unit_test_setup_teardown(test_async_put_get, setup, teardown),
      cmocka_unit_test_setup_teardown(test_async_moot_skips_writes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_async_concurrent_with_drops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_with_async_in_flight, setup, teardown),
  };
  return cmocka_run_group_tests_name("replica", tests, NULL, NULL);
}
