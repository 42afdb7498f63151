/*
 * replica.c -- the node-local replica store (see replica.h for the contract and schema).
 *
 * How a copy is written.  dred_replica_put() checksums the caller's buffer (outside the
 * lock, so pool threads checksum in parallel), then, holding the store's mutex, runs one
 * transaction: a header row in `replicas` (length, checksum, number of pieces), then the
 * bytes as REPLICA_PIECE-sized rows of `pieces`, each bound in place (SQLITE_STATIC: SQLite
 * copies it once into its pages).  Pieces, not one big blob, for two reasons.  A blob must
 * exist before incremental blob I/O can write into it, and inserting a zeroblob writes
 * every page twice (zeros, then the data: 3.5-9 ms of the 9-15 ms a 32 MiB put took);
 * pieces write each page once (5.5-6 ms).  And a put can step aside between pieces: the
 * pause hook (dred_replica_set_pause) runs before each one, so a copy never holds a core
 * for more than a piece's worth (~0.3 ms) once libdred asks it to wait.  Reads open each
 * piece with sqlite3_blob_open/reopen and read it straight into the caller's buffer; the
 * checksum is verified there, outside the lock.
 *
 * Durability, and why it is cheap.  A replica only has to survive the *process* dying
 * (the failure dred tolerates), not the node losing power: after a process crash the
 * kernel still has every write() it made.  So synchronous=OFF (never fsync).  The
 * rollback journal stays on so that a process killed in the middle of a put leaves a hot
 * journal and the next open rolls the half-written transaction back instead of finding a
 * corrupt B-tree (journal_mode=MEMORY or OFF would save little, as new puts are hardly
 * journaled anyway, and lose exactly that).
 * journal_mode=PERSIST: with the file locked exclusively for the store's life, a commit
 * only zeroes the journal header instead of truncating the file, a fraction of the cost of
 * a small put; journal_size_limit stops a large replace leaving a large journal.
 * Pages are 64 KiB: a 32 MiB copy is ~520 overflow pages instead of ~8200, and pages
 * appended at the end of the file or taken from the free list need no journal entry.
 * Small pages and WAL (which writes every page twice) cost a large share of a put's
 * throughput, binding the whole operand as one blob costs its size in peak memory
 * (docs/performance.md, figures behind defaults); pieces of 1 MiB are bound in place: see
 * tests/unit/test_replica.c's timed round trip.
 *
 * Locking.  locking_mode=EXCLUSIVE: the first write at open (purging other jobs' copies
 * and recording our job id) takes the file's exclusive lock and keeps it until close.  A
 * second process opening the store gets SQLITE_BUSY at once (busy timeout 0) and is
 * refused; the kernel drops the lock of a dead process, so its leftovers get cleaned.
 *
 * Threads.  One connection per store, opened SQLITE_OPEN_NOMUTEX and guarded by our own
 * uv_mutex_t `db_lock`, held for a whole put/get/drop: the statements, the blob handle and
 * the transaction are one unit.  A second mutex `state_lock` guards only the count of
 * queued async operations (`holds`), so queueing one from the loop thread never waits
 * behind a put in progress, and close can wait (uv_cond_t) for them to finish.
 *
 * The checksum ("dred64").  XXH64's round, acc' = rotl(acc + w*P2, 31) * P1, is a
 * bijection of acc for a fixed word w and a bijection of w for a fixed acc (P1, P2 odd;
 * add, rotate and multiply-by-odd are all invertible mod 2^64).  We run four such lanes
 * over 32-byte stripes like XXH64, but fold the lanes, the length and the tail words into
 * one accumulator with the same round, and finish with XXH64's (invertible) avalanche.
 * Every step being a bijection in each argument, a change confined to one 8-byte word
 * changes that lane's state, and it stays changed through every later step: any single
 * corrupted byte is *always* detected (XXH64's own lane merge does not guarantee that).
 * Words are read little-endian so a store reads back the same on any host.
 */
#include "replica.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <uv.h>

#include "../common/log.h"
#include "../common/proto.h"
#include "sqlite_util.h"
#include "storedir.h"

#define REPLICA_VERSION 2 /* 1: one blob per copy (dropped and recreated on open) */
#define REPLICA_APP_ID 0x44524452 /* "DRDR" */
#define WHAT "replica store"      /* log prefix of the sqlite_util.h helpers */
#ifndef DRED_REPLICA_PAGE_SIZE
#define DRED_REPLICA_PAGE_SIZE 65536
#endif
#ifndef DRED_REPLICA_JOURNAL_MODE
#define DRED_REPLICA_JOURNAL_MODE "PERSIST"
#endif
/* Bytes per row of `pieces`: the unit a put writes (and may pause between). */
#define REPLICA_PIECE (1u << 20)
/* Compact a store whose free pages exceed this when it is opened or closed empty. */
#define REPLICA_VACUUM_BYTES (1 << 20)
/* Journal bytes kept between transactions (PERSIST mode). */
#define REPLICA_JOURNAL_KEEP "4194304"

struct dred_replica {
  sqlite3 *db;
  char *path;
  char *job;
  uint32_t worker;
  uint64_t purged;

  uv_mutex_t db_lock; /* the connection, its statements, its transaction */
  sqlite3_stmt *begin;
  sqlite3_stmt *commit;
  sqlite3_stmt *rollback;
  sqlite3_stmt *put_clear;  /* the pieces of the copy a put replaces */
  sqlite3_stmt *put;        /* the header row */
  sqlite3_stmt *put_piece;
  sqlite3_stmt *find;
  sqlite3_stmt *find_pieces;
  sqlite3_stmt *drop_pieces;
  sqlite3_stmt *drop;
  sqlite3_stmt *count;

  uv_mutex_t state_lock; /* holds and closing */
  uv_cond_t idle;        /* signalled when holds drops to 0 */
  unsigned holds;
  int closing;
  int moot; /* every reduction of the job ended: queued puts and drops are skipped */

  dred_replica_pause_fn pause; /* set before any operation is queued; read-only after */
  void *pause_arg;
};

/* ---- checksum ------------------------------------------------------------------- */

#define CK_P1 0x9E3779B185EBCA87ULL
#define CK_P2 0xC2B2AE3D27D4EB4FULL
#define CK_P3 0x165667B19E3779F9ULL
#define CK_P5 0x27D4EB2F165667C5ULL

static inline uint64_t ck_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* The one mixing step; a bijection in `acc` and in `w` (see the file comment). */
static inline uint64_t ck_round(uint64_t acc, uint64_t w) {
  return ck_rotl(acc + w * CK_P2, 31) * CK_P1;
}

static inline uint64_t ck_read(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

uint64_t dred_replica_checksum(const void *data, size_t len) {
  const unsigned char *p = data;
  size_t n = len;
  uint64_t h = CK_P5;

  if (p == NULL) n = 0; /* (NULL, 0) is the empty buffer; a NULL with len > 0 is a bug */
  if (n >= 32) {
    uint64_t v1 = CK_P1 + CK_P2, v2 = CK_P2, v3 = 0, v4 = 0 - CK_P1;
    do {
      v1 = ck_round(v1, ck_read(p));
      v2 = ck_round(v2, ck_read(p + 8));
      v3 = ck_round(v3, ck_read(p + 16));
      v4 = ck_round(v4, ck_read(p + 24));
      p += 32;
      n -= 32;
    } while (n >= 32);
    h = ck_round(ck_round(ck_round(ck_round(h, v1), v2), v3), v4);
  }
  h = ck_round(h, (uint64_t)len);
  for (; n >= 8; p += 8, n -= 8) h = ck_round(h, ck_read(p));
  if (n > 0) {
    unsigned char tail[8] = {0};
    memcpy(tail, p, n);
    h = ck_round(h, ck_read(tail));
  }
  h ^= h >> 33;
  h *= CK_P2;
  h ^= h >> 29;
  h *= CK_P3;
  h ^= h >> 32;
  return h;
}

/* ---- helpers -------------------------------------------------------------------- */

/* mkdir -p with mode 0700 for the directories we create. */
/* These statements live as long as the store. */
static int replica_prepare(dred_replica_t *r, sqlite3_stmt **st, const char *sql) {
  return dred_sqlite_prepare(r->db, WHAT, r->path, st, sql);
}

/* Step a statement that returns no row, then reset it; returns the step's code. */
static int replica_step(sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc;
}

/* Undo a failed put's transaction, if SQLite has not already done so. */
static void replica_rollback(dred_replica_t *r) {
  if (!sqlite3_get_autocommit(r->db) && replica_step(r->rollback) != SQLITE_DONE)
    DRED_ERROR("replica store %s: rollback failed: %s", r->path, sqlite3_errmsg(r->db));
}

/* Compact the file when enough of it is free pages (best effort: a failure only costs
 * disk space, so it is a warning, not an error). */
static void replica_maybe_vacuum(dred_replica_t *r) {
  int64_t free_pages = 0, page_size = 0;
  char *msg = NULL;

  if (dred_sqlite_query_int(r->db, WHAT, r->path, "PRAGMA freelist_count", &free_pages) !=
          DRED_OK ||
      dred_sqlite_query_int(r->db, WHAT, r->path, "PRAGMA page_size", &page_size) != DRED_OK)
    return;
  if (free_pages * page_size < REPLICA_VACUUM_BYTES) return;
  if (sqlite3_exec(r->db, "VACUUM", NULL, NULL, &msg) != SQLITE_OK)
    DRED_WARN("replica store %s: could not compact %" PRId64 " free bytes: %s", r->path,
              free_pages * page_size, msg ? msg : sqlite3_errmsg(r->db));
  else
    DRED_DEBUG("replica store %s: compacted %" PRId64 " free bytes", r->path,
               free_pages * page_size);
  sqlite3_free(msg);
}

static void replica_finalize_all(dred_replica_t *r) {
  sqlite3_finalize(r->begin);
  sqlite3_finalize(r->commit);
  sqlite3_finalize(r->rollback);
  sqlite3_finalize(r->put_clear);
  sqlite3_finalize(r->put);
  sqlite3_finalize(r->put_piece);
  sqlite3_finalize(r->find);
  sqlite3_finalize(r->find_pieces);
  sqlite3_finalize(r->drop_pieces);
  sqlite3_finalize(r->drop);
  sqlite3_finalize(r->count);
  r->begin = r->commit = r->rollback = r->put_clear = r->put = r->put_piece = NULL;
  r->find = r->find_pieces = r->drop_pieces = r->drop = r->count = NULL;
}

/* Free a store that open() did not finish; the mutexes are not initialised yet. */
static void replica_free_partial(dred_replica_t *r) {
  replica_finalize_all(r);
  if (r->db != NULL) sqlite3_close(r->db);
  free(r->path);
  free(r->job);
  free(r);
}

/* Create the schema in an empty file or check an existing one, then delete other jobs'
 * copies and record ours.  One IMMEDIATE transaction; its write takes the exclusive lock
 * that locking_mode=EXCLUSIVE then keeps. */
static int replica_setup(dred_replica_t *r) {
  sqlite3 *db = r->db;
  int64_t version = 0, app_id = 0, objects = 0;
  sqlite3_stmt *st = NULL;
  int rc, status = DRED_ERR_STORAGE;

  rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  if ((rc & 0xff) == SQLITE_BUSY) {
    DRED_ERROR("replica store %s: in use by another live process (another job given the "
               "same directory and worker number?)",
               r->path);
    return DRED_ERR_STORAGE;
  }
  if (rc != SQLITE_OK) {
    if ((rc & 0xff) == SQLITE_NOTADB) /* random bytes fail here, untouched */
      DRED_ERROR("replica store %s: not a replica store (not an SQLite database); "
                 "refusing to touch it",
                 r->path);
    else
      DRED_ERROR("replica store %s: cannot start using the file: %s", r->path,
                 sqlite3_errmsg(db));
    return DRED_ERR_STORAGE;
  }
  if (dred_sqlite_header(db, WHAT, r->path, &version, &app_id, &objects) != DRED_OK) goto out;

  if (app_id == REPLICA_APP_ID && version == 1) {
    /* Our own older format: copies only live as long as their job, so nothing of value is
     * lost by starting over. */
    if (dred_sqlite_exec(db, WHAT, r->path, "DROP TABLE replicas; DROP TABLE meta;") != DRED_OK)
      goto out;
    DRED_INFO("replica store %s: format 1 store dropped, recreated as format %d", r->path,
              REPLICA_VERSION);
    objects = 0;
    version = app_id = 0;
  }
  if (objects == 0 && version == 0 && app_id == 0) {
    if (dred_sqlite_exec(db, WHAT, r->path,
                         "CREATE TABLE replicas(id INTEGER PRIMARY KEY, job TEXT NOT NULL, "
                         "grp INTEGER NOT NULL, tag INTEGER NOT NULL, member INTEGER NOT NULL, "
                         "len INTEGER NOT NULL, sum INTEGER NOT NULL, pieces INTEGER NOT NULL, "
                         "UNIQUE(grp, tag, member));"
                         "CREATE TABLE pieces(id INTEGER PRIMARY KEY, copy INTEGER NOT NULL, "
                         "idx INTEGER NOT NULL, data BLOB NOT NULL, UNIQUE(copy, idx));"
                         "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);") != DRED_OK ||
        dred_sqlite_stamp(db, WHAT, r->path, REPLICA_VERSION, REPLICA_APP_ID) != DRED_OK)
      goto out;
  } else if (app_id != REPLICA_APP_ID || version != REPLICA_VERSION) {
    DRED_ERROR("replica store %s: not a dred replica store of version %d "
               "(application_id 0x%08" PRIx64 ", user_version %" PRId64 "); refusing to "
               "touch it",
               r->path, REPLICA_VERSION, (uint64_t)app_id, version);
    goto out;
  }

  /* A dead job's copies: nobody will ever read them again. */
  rc = sqlite3_prepare_v2(db,
                          "DELETE FROM pieces WHERE copy NOT IN "
                          "(SELECT id FROM replicas WHERE job = ?1)",
                          -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, r->job, -1, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  }
  sqlite3_finalize(st);
  st = NULL;
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, "DELETE FROM replicas WHERE job <> ?1", -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, r->job, -1, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  }
  if (rc != SQLITE_OK) {
    DRED_ERROR("replica store %s: cannot delete other jobs' copies: %s", r->path,
               sqlite3_errmsg(db));
    goto out;
  }
  r->purged = (uint64_t)sqlite3_changes(db);
  sqlite3_finalize(st);
  st = NULL;

  rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('job', ?1)",
                          -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, r->job, -1, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  }
  if (rc != SQLITE_OK) {
    DRED_ERROR("replica store %s: cannot record the job id: %s", r->path,
               sqlite3_errmsg(db));
    goto out;
  }
  if (dred_sqlite_exec(db, WHAT, r->path, "COMMIT") != DRED_OK) goto out;
  status = DRED_OK;

out:
  sqlite3_finalize(st);
  if (status != DRED_OK) dred_sqlite_rollback(db);
  return status;
}

/* ---- public API ----------------------------------------------------------------- */

int dred_replica_open(const char *dir, uint32_t worker, const char *job_id,
                      dred_replica_t **out) {
  dred_replica_t *r;
  char sql[64], path[PATH_MAX];
  int status;

  if (out == NULL) {
    DRED_ERROR("dred_replica_open: out is NULL");
    return DRED_ERR_ARG;
  }
  *out = NULL;
  if (dir == NULL || *dir == '\0') {
    DRED_ERROR("dred_replica_open: dir is %s", dir == NULL ? "NULL" : "empty");
    return DRED_ERR_ARG;
  }
  if (job_id == NULL || *job_id == '\0') {
    DRED_ERROR("dred_replica_open: job_id is %s", job_id == NULL ? "NULL" : "empty");
    return DRED_ERR_ARG;
  }
  /* A private directory (storedir.h): in one others can write, the store could be
   * swapped for a link to any file of ours. */
  if ((status = dred_storedir_check(dir)) != DRED_OK) return status;
  if (dred_replica_file(dir, worker, 0, path, sizeof path) != DRED_OK) {
    DRED_ERROR("dred_replica_open: the store's path in %s is too long", dir);
    return DRED_ERR_ARG;
  }

  r = calloc(1, sizeof *r);
  if (r == NULL || (r->path = strdup(path)) == NULL || (r->job = strdup(job_id)) == NULL) {
    DRED_ERROR("replica store in %s: out of memory", dir);
    if (r != NULL) replica_free_partial(r);
    return DRED_ERR_NOMEM;
  }
  r->worker = worker;

  /* Busy timeout 0: a held lock means a live owner: fail at once. */
  if ((status = dred_sqlite_open(WHAT, r->path, 0, &r->db)) != DRED_OK) {
    replica_free_partial(r);
    return status;
  }

  /* Before the first read: locking mode, and the page size a new file is created with
   * (ignored for an existing file). */
  snprintf(sql, sizeof sql, "PRAGMA page_size=%d", DRED_REPLICA_PAGE_SIZE);
  if (dred_sqlite_exec(r->db, WHAT, r->path, "PRAGMA locking_mode=EXCLUSIVE") != DRED_OK ||
      dred_sqlite_exec(r->db, WHAT, r->path, sql) != DRED_OK) {
    replica_free_partial(r);
    return DRED_ERR_STORAGE;
  }
  if ((status = replica_setup(r)) != DRED_OK) {
    replica_free_partial(r);
    return status;
  }
  if (r->purged > 0) replica_maybe_vacuum(r);
  if (dred_sqlite_exec(r->db, WHAT, r->path, "PRAGMA journal_mode=" DRED_REPLICA_JOURNAL_MODE) !=
          DRED_OK ||
      dred_sqlite_exec(r->db, WHAT, r->path, "PRAGMA journal_size_limit=" REPLICA_JOURNAL_KEEP) !=
          DRED_OK ||
      dred_sqlite_exec(r->db, WHAT, r->path, "PRAGMA synchronous=OFF") != DRED_OK ||
      replica_prepare(r, &r->begin, "BEGIN IMMEDIATE") != DRED_OK ||
      replica_prepare(r, &r->commit, "COMMIT") != DRED_OK ||
      replica_prepare(r, &r->rollback, "ROLLBACK") != DRED_OK ||
      replica_prepare(r, &r->put_clear,
                      "DELETE FROM pieces WHERE copy IN (SELECT id FROM replicas "
                      "WHERE grp = ?1 AND tag = ?2 AND member = ?3)") != DRED_OK ||
      replica_prepare(r, &r->put,
                      "INSERT OR REPLACE INTO replicas(job, grp, tag, member, len, sum, pieces) "
                      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)") != DRED_OK ||
      replica_prepare(r, &r->put_piece,
                      "INSERT INTO pieces(copy, idx, data) VALUES(?1, ?2, ?3)") != DRED_OK ||
      replica_prepare(r, &r->find,
                      "SELECT id, len, sum, pieces FROM replicas "
                      "WHERE grp = ?1 AND tag = ?2 AND member = ?3") != DRED_OK ||
      /* length() of a blob is read from the record header, not the pages. */
      replica_prepare(r, &r->find_pieces,
                      "SELECT id, idx, length(data) FROM pieces WHERE copy = ?1 "
                      "ORDER BY idx") != DRED_OK ||
      replica_prepare(r, &r->drop_pieces,
                      "DELETE FROM pieces WHERE copy IN (SELECT id FROM replicas "
                      "WHERE grp = ?1 AND tag = ?2)") != DRED_OK ||
      replica_prepare(r, &r->drop, "DELETE FROM replicas WHERE grp = ?1 AND tag = ?2") !=
          DRED_OK ||
      replica_prepare(r, &r->count, "SELECT count(*) FROM replicas") != DRED_OK) {
    replica_free_partial(r);
    return DRED_ERR_STORAGE;
  }
  /* The job id never changes: bind it once. */
  sqlite3_bind_text(r->put, 1, r->job, -1, SQLITE_STATIC);

  if (uv_mutex_init(&r->db_lock) != 0) {
    DRED_ERROR("replica store %s: cannot create a mutex", r->path);
    replica_free_partial(r);
    return DRED_ERR_INTERNAL;
  }
  if (uv_mutex_init(&r->state_lock) != 0) {
    DRED_ERROR("replica store %s: cannot create a mutex", r->path);
    uv_mutex_destroy(&r->db_lock);
    replica_free_partial(r);
    return DRED_ERR_INTERNAL;
  }
  if (uv_cond_init(&r->idle) != 0) {
    DRED_ERROR("replica store %s: cannot create a condition variable", r->path);
    uv_mutex_destroy(&r->state_lock);
    uv_mutex_destroy(&r->db_lock);
    replica_free_partial(r);
    return DRED_ERR_INTERNAL;
  }

  if (r->purged > 0)
    DRED_INFO("replica store %s: purged %" PRIu64 " stale copies left by another job",
              r->path, r->purged);
  DRED_INFO("replica store %s: open for job %s", r->path, r->job);
  *out = r;
  return DRED_OK;
}

int dred_replica_close(dred_replica_t *r) {
  int64_t rows = -1;
  int status = DRED_OK;

  if (r == NULL) return DRED_OK;

  uv_mutex_lock(&r->state_lock);
  r->closing = 1;
  while (r->holds > 0) uv_cond_wait(&r->idle, &r->state_lock);
  uv_mutex_unlock(&r->state_lock);

  uv_mutex_lock(&r->db_lock);
  if (dred_sqlite_query_int(r->db, WHAT, r->path, "SELECT count(*) FROM replicas", &rows) ==
          DRED_OK &&
      rows == 0)
    replica_maybe_vacuum(r);
  replica_finalize_all(r);
  if (dred_sqlite_close(r->db, WHAT, r->path) != DRED_OK)
    status = DRED_ERR_STORAGE;
  else
    DRED_INFO("replica store %s: closed (%" PRId64 " copies left)", r->path, rows);
  r->db = NULL;
  uv_mutex_unlock(&r->db_lock);

  uv_cond_destroy(&r->idle);
  uv_mutex_destroy(&r->state_lock);
  uv_mutex_destroy(&r->db_lock);
  free(r->path);
  free(r->job);
  free(r);
  return status;
}

void dred_replica_set_pause(dred_replica_t *r, dred_replica_pause_fn fn, void *arg) {
  if (r == NULL) return;
  r->pause = fn;
  r->pause_arg = arg;
}

static void replica_pause(dred_replica_t *r) {
  if (r->pause != NULL) r->pause(r->pause_arg);
}

int dred_replica_put(dred_replica_t *r, uint64_t group, int64_t tag, uint32_t member,
                     const void *data, size_t len) {
  sqlite3_int64 copy;
  uint64_t sum, npieces, i;
  int rc;

  if (r == NULL || (data == NULL && len > 0)) {
    DRED_ERROR("dred_replica_put: %s", r == NULL ? "NULL store" : "NULL data with len > 0");
    return DRED_ERR_ARG;
  }
  npieces = ((uint64_t)len + REPLICA_PIECE - 1) / REPLICA_PIECE;

  replica_pause(r);
  sum = dred_replica_checksum(data, len);

  uv_mutex_lock(&r->db_lock);
  rc = replica_step(r->begin);
  if (rc != SQLITE_DONE) goto fail;

  sqlite3_bind_int64(r->put_clear, 1, (sqlite3_int64)group);
  sqlite3_bind_int64(r->put_clear, 2, tag);
  sqlite3_bind_int64(r->put_clear, 3, member);
  rc = replica_step(r->put_clear);
  if (rc != SQLITE_DONE) goto fail;

  sqlite3_bind_int64(r->put, 2, (sqlite3_int64)group);
  sqlite3_bind_int64(r->put, 3, tag);
  sqlite3_bind_int64(r->put, 4, member);
  sqlite3_bind_int64(r->put, 5, (sqlite3_int64)len);
  sqlite3_bind_int64(r->put, 6, (sqlite3_int64)sum);
  sqlite3_bind_int64(r->put, 7, (sqlite3_int64)npieces);
  rc = replica_step(r->put);
  if (rc != SQLITE_DONE) goto fail;
  copy = sqlite3_last_insert_rowid(r->db);

  for (i = 0; i < npieces; i++) {
    size_t off = (size_t)i * REPLICA_PIECE;
    size_t n = len - off < REPLICA_PIECE ? len - off : REPLICA_PIECE;
    if (i > 0) replica_pause(r);
    sqlite3_bind_int64(r->put_piece, 1, copy);
    sqlite3_bind_int64(r->put_piece, 2, (sqlite3_int64)i);
    sqlite3_bind_blob64(r->put_piece, 3, (const char *)data + off, (sqlite3_uint64)n,
                        SQLITE_STATIC);
    rc = replica_step(r->put_piece);
    sqlite3_clear_bindings(r->put_piece); /* drop the pointer into the caller's buffer */
    if (rc != SQLITE_DONE) goto fail;
  }
  rc = replica_step(r->commit);
  if (rc != SQLITE_DONE) goto fail;
  uv_mutex_unlock(&r->db_lock);
  DRED_DEBUG("replica store %s: stored group %016" PRIx64 " tag " PROTO_KEY_FMT " member %" PRIu32
             " (%zu bytes)",
             r->path, group, PROTO_KEY_ARG(tag), member, len);
  return DRED_OK;

fail:
  DRED_ERROR("replica store %s: cannot store group %016" PRIx64 " tag " PROTO_KEY_FMT
             " member %" PRIu32 " (%zu bytes): %s",
             r->path, group, PROTO_KEY_ARG(tag), member, len, sqlite3_errmsg(r->db));
  replica_rollback(r);
  uv_mutex_unlock(&r->db_lock);
  return DRED_ERR_STORAGE;
}

/* Read the `npieces` pieces of copy `copy` into data[0..len); the caller holds db_lock.
 * DRED_OK, DRED_ERR_STORAGE after logging what is wrong (a piece missing, out of order or
 * of the wrong size counts as corruption), or -1 with the SQLite error left in the
 * connection. */
static int replica_read_pieces(dred_replica_t *r, sqlite3_int64 copy, uint64_t npieces,
                               char *data, size_t len, const char *what) {
  sqlite3_blob *blob = NULL;
  uint64_t i = 0;
  int rc, status = -1;

  sqlite3_bind_int64(r->find_pieces, 1, copy);
  while ((rc = sqlite3_step(r->find_pieces)) == SQLITE_ROW) {
    sqlite3_int64 id = sqlite3_column_int64(r->find_pieces, 0);
    int64_t idx = sqlite3_column_int64(r->find_pieces, 1);
    int64_t n = sqlite3_column_int64(r->find_pieces, 2);
    size_t off = (size_t)i * REPLICA_PIECE;
    size_t want = i < npieces ? (len - off < REPLICA_PIECE ? len - off : REPLICA_PIECE) : 0;
    if (i >= npieces || idx != (int64_t)i || n < 0 || (uint64_t)n != (uint64_t)want) {
      DRED_ERROR("replica store %s: corrupt replica of %s: piece %" PRId64 " of %" PRId64
                 " bytes where piece %" PRIu64 " of %zu was expected",
                 r->path, what, idx, n, i, want);
      status = DRED_ERR_STORAGE;
      goto out;
    }
    rc = blob == NULL ? sqlite3_blob_open(r->db, "main", "pieces", "data", id, 0, &blob)
                      : sqlite3_blob_reopen(blob, id);
    if (rc != SQLITE_OK || sqlite3_blob_read(blob, data + off, (int)want, 0) != SQLITE_OK)
      goto out;
    i++;
  }
  if (rc != SQLITE_DONE) goto out;
  if (i != npieces) {
    DRED_ERROR("replica store %s: corrupt replica of %s: %" PRIu64 " of its %" PRIu64
               " pieces found",
               r->path, what, i, npieces);
    status = DRED_ERR_STORAGE;
    goto out;
  }
  status = DRED_OK;
out:
  sqlite3_reset(r->find_pieces);
  if (blob != NULL) sqlite3_blob_close(blob);
  return status;
}

int dred_replica_get(dred_replica_t *r, uint64_t group, int64_t tag, uint32_t member,
                     void *data, size_t len) {
  sqlite3_int64 copy, stored_len, npieces;
  uint64_t stored_sum, sum;
  char what[96];
  int rc;

  if (r == NULL || (data == NULL && len > 0)) {
    DRED_ERROR("dred_replica_get: %s", r == NULL ? "NULL store" : "NULL data with len > 0");
    return DRED_ERR_ARG;
  }
  snprintf(what, sizeof what, "group %016" PRIx64 " tag " PROTO_KEY_FMT " member %" PRIu32, group,
           PROTO_KEY_ARG(tag), member);

  uv_mutex_lock(&r->db_lock);
  sqlite3_bind_int64(r->find, 1, (sqlite3_int64)group);
  sqlite3_bind_int64(r->find, 2, tag);
  sqlite3_bind_int64(r->find, 3, member);
  rc = sqlite3_step(r->find);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(r->find);
    uv_mutex_unlock(&r->db_lock);
    DRED_WARN("replica store %s: no copy of %s", r->path, what);
    return DRED_ERR_PROC_FAILED;
  }
  if (rc != SQLITE_ROW) goto fail;
  copy = sqlite3_column_int64(r->find, 0);
  stored_len = sqlite3_column_int64(r->find, 1);
  stored_sum = (uint64_t)sqlite3_column_int64(r->find, 2);
  npieces = sqlite3_column_int64(r->find, 3);
  sqlite3_reset(r->find);

  if (stored_len < 0 || (uint64_t)stored_len != (uint64_t)len ||
      (uint64_t)npieces != ((uint64_t)len + REPLICA_PIECE - 1) / REPLICA_PIECE) {
    uv_mutex_unlock(&r->db_lock);
    DRED_ERROR("replica store %s: corrupt replica of %s: stored length %" PRId64 " in %" PRId64
               " pieces, expected %zu",
               r->path, what, (int64_t)stored_len, (int64_t)npieces, len);
    return DRED_ERR_STORAGE;
  }
  rc = replica_read_pieces(r, copy, (uint64_t)npieces, data, len, what);
  if (rc == -1) goto fail;
  uv_mutex_unlock(&r->db_lock);
  if (rc != DRED_OK) return rc;

  sum = dred_replica_checksum(data, len);
  if (sum != stored_sum) {
    DRED_ERROR("replica store %s: corrupt replica of %s: checksum %016" PRIx64
               ", stored %016" PRIx64,
               r->path, what, sum, stored_sum);
    return DRED_ERR_STORAGE;
  }
  return DRED_OK;

fail:
  DRED_ERROR("replica store %s: cannot read %s: %s", r->path, what, sqlite3_errmsg(r->db));
  sqlite3_reset(r->find);
  uv_mutex_unlock(&r->db_lock);
  return DRED_ERR_STORAGE;
}

int dred_replica_drop(dred_replica_t *r, uint64_t group, int64_t tag) {
  int rc, n = 0;

  if (r == NULL) {
    DRED_ERROR("dred_replica_drop: NULL store");
    return DRED_ERR_ARG;
  }
  uv_mutex_lock(&r->db_lock);
  rc = replica_step(r->begin);
  if (rc == SQLITE_DONE) {
    sqlite3_bind_int64(r->drop_pieces, 1, (sqlite3_int64)group);
    sqlite3_bind_int64(r->drop_pieces, 2, tag);
    rc = replica_step(r->drop_pieces);
  }
  if (rc == SQLITE_DONE) {
    sqlite3_bind_int64(r->drop, 1, (sqlite3_int64)group);
    sqlite3_bind_int64(r->drop, 2, tag);
    rc = replica_step(r->drop);
    n = sqlite3_changes(r->db);
  }
  if (rc == SQLITE_DONE) rc = replica_step(r->commit);
  if (rc != SQLITE_DONE) {
    DRED_ERROR("replica store %s: cannot drop group %016" PRIx64 " tag " PROTO_KEY_FMT ": %s",
               r->path, group, PROTO_KEY_ARG(tag), sqlite3_errmsg(r->db));
    replica_rollback(r);
    uv_mutex_unlock(&r->db_lock);
    return DRED_ERR_STORAGE;
  }
  uv_mutex_unlock(&r->db_lock);
  DRED_DEBUG("replica store %s: dropped %d copies of group %016" PRIx64 " tag " PROTO_KEY_FMT,
             r->path, n, group, PROTO_KEY_ARG(tag));
  return DRED_OK;
}

int dred_replica_count(dred_replica_t *r, uint64_t *count) {
  int rc;

  if (r == NULL || count == NULL) {
    DRED_ERROR("dred_replica_count: NULL %s", r == NULL ? "store" : "count");
    return DRED_ERR_ARG;
  }
  uv_mutex_lock(&r->db_lock);
  rc = sqlite3_step(r->count);
  if (rc == SQLITE_ROW) *count = (uint64_t)sqlite3_column_int64(r->count, 0);
  sqlite3_reset(r->count);
  if (rc != SQLITE_ROW) {
    DRED_ERROR("replica store %s: cannot count copies: %s", r->path, sqlite3_errmsg(r->db));
    uv_mutex_unlock(&r->db_lock);
    return DRED_ERR_STORAGE;
  }
  uv_mutex_unlock(&r->db_lock);
  return DRED_OK;
}

int dred_replica_purged(dred_replica_t *r, uint64_t *count) {
  if (r == NULL || count == NULL) {
    DRED_ERROR("dred_replica_purged: NULL %s", r == NULL ? "store" : "count");
    return DRED_ERR_ARG;
  }
  *count = r->purged; /* written once by open, before the store is shared */
  return DRED_OK;
}

int dred_replica_file(const char *dir, uint32_t worker, unsigned which, char *buf, size_t n) {
  static const char *const side[DRED_REPLICA_FILES] = {"", "-wal", "-shm", "-journal"};
  int len;
  if (dir == NULL || buf == NULL || which >= DRED_REPLICA_FILES) {
    DRED_ERROR("dred_replica_file: %s", dir == NULL ? "NULL dir" : buf == NULL ? "NULL buf"
                                                                                : "no such file");
    return DRED_ERR_ARG;
  }
  len = snprintf(buf, n, "%s/dred-replica-%" PRIu32 ".db%s", dir, worker, side[which]);
  return len >= 0 && (size_t)len < n ? DRED_OK : DRED_ERR_ARG;
}

int dred_replica_remove(const char *dir, uint32_t worker) {
  char path[PATH_MAX];
  unsigned i;
  if (dir == NULL || dir[0] == '\0') {
    DRED_ERROR("dred_replica_remove: dir is %s", dir == NULL ? "NULL" : "empty");
    return DRED_ERR_ARG;
  }
  for (i = 0; i < DRED_REPLICA_FILES; i++) {
    if (dred_replica_file(dir, worker, i, path, sizeof path) != DRED_OK) {
      DRED_ERROR("dred_replica_remove: path in %s too long", dir);
      return DRED_ERR_ARG;
    }
    if (unlink(path) != 0 && errno != ENOENT)
      DRED_WARN("replica store file %s not removed: %s", path, strerror(errno));
  }
  return DRED_OK;
}

const char *dred_replica_path(const dred_replica_t *r) {
  if (r == NULL) {
    DRED_ERROR("dred_replica_path: NULL store");
    return NULL;
  }
  return r->path;
}

void dred_replica_set_moot(dred_replica_t *r) {
  if (r == NULL) return;
  uv_mutex_lock(&r->state_lock);
  r->moot = 1;
  uv_mutex_unlock(&r->state_lock);
}

int dred_replica_is_moot(dred_replica_t *r) {
  int m;
  uv_mutex_lock(&r->state_lock);
  m = r->moot;
  uv_mutex_unlock(&r->state_lock);
  return m;
}

int dred_replica_hold(dred_replica_t *r) {
  int status = DRED_OK;

  if (r == NULL) {
    DRED_ERROR("dred_replica_hold: NULL store");
    return DRED_ERR_ARG;
  }
  uv_mutex_lock(&r->state_lock);
  if (r->closing)
    status = DRED_ERR_SHUTDOWN;
  else
    r->holds++;
  uv_mutex_unlock(&r->state_lock);
  if (status != DRED_OK)
    DRED_ERROR("replica store %s: closing, no new operations accepted", r->path);
  return status;
}

void dred_replica_release(dred_replica_t *r) {
  if (r == NULL) return;
  uv_mutex_lock(&r->state_lock);
  if (r->holds > 0 && --r->holds == 0) uv_cond_broadcast(&r->idle);
  uv_mutex_unlock(&r->state_lock);
}
