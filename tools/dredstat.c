/*
 * dredstat.c -- look at what dred did: summaries, task timelines and live status.
 *
 *   dredstat summary JOURNAL              per-reduction and per-worker tables
 *   dredstat trace   JOURNAL [-o FILE]    Chrome trace event JSON (Perfetto, chrome://tracing)
 *   dredstat plot    JOURNAL [-o FILE]    per-worker Gantt chart of tasks (PNG, via gnuplot)
 *   dredstat status  [SOCKET]             ask a running dred-master (Unix socket)
 *
 * How it works.  The journal is the SQLite file dred-master writes (schema in
 * storage/journal.h, whose table dred_journal_tables this checks against; the file and
 * socket names are storage/storedir.h's, the task outcome names common/proto.h's).  It is opened read-only (SQLITE_OPEN_READONLY) so dredstat can never
 * change or create a journal, and it may read one the master is still writing: the journal
 * is in WAL mode, so a reader sees the last committed batch and never blocks the master.
 * Before any query the file is checked to be a dred journal (its four tables with the
 * documented columns), so a wrong file gives one clear sentence rather than an SQL error.
 * `plot` writes a data file and a gnuplot script to a private temporary directory, runs
 * gnuplot there, copies the PNG out and removes them; no journal text and no path enters
 * the script (see "plot" below).  A journal is data from whoever wrote it: every string
 * from a journal or a status socket is escaped before it reaches a terminal.  `status` connects to the master's status socket with
 * libuv and copies what the master writes until it closes the connection.
 *
 * Times in the journal are nanoseconds since the master started; a task's span is from
 * the master dispatching it to the master receiving its DONE, and exec_ns is the time the
 * executor itself measured for the work.  Worker N is rank N-1 of dred_comm().
 *
 * Exit codes: 0 success, 1 a runtime error (bad or missing journal, gnuplot failed, no
 * master answering), 2 a usage error.  No MPI in here.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "../common/privdir.h"
#include "../common/sockpath.h"
#include "../common/proto.h"  /* proto_task_status_name() */
#include "../common/settings.h"
#include "../common/status.h" /* dred_status_str() */
#include "../storage/journal.h"
#include "../storage/storedir.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define STATUS_TIMEOUT_MS 5000

static void usage(FILE *out) {
  fprintf(out,
          "usage: dredstat COMMAND [args]\n"
          "  summary JOURNAL            per-reduction and per-worker tables\n"
          "  trace JOURNAL [-o FILE]    Chrome trace event JSON, one event per task\n"
          "                             (default trace.json; '-' for stdout)\n"
          "  plot JOURNAL [-o FILE]     per-worker Gantt chart of tasks as PNG via gnuplot\n"
          "                             (default tasks.png)\n"
          "  status [SOCKET]            live status of a running dred-master\n"
          "                             (default: the one running job's socket,\n"
          "                             $DRED_STORAGE_DIR/job-<id>/" DRED_STOREDIR_STATUS_SOCKET ")\n"
          "  -h, --help                 this text\n"
          "JOURNAL is the master's SQLite journal, by default\n"
          "$DRED_STORAGE_DIR/job-<id>/" DRED_STOREDIR_JOURNAL " (one directory per job).\n"
          "Exit status: 0 ok, 1 error (bad journal, no master, gnuplot failed), 2 usage.\n");
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "dredstat: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  usage(stderr);
  exit(EXIT_USAGE);
}

static void term_write(FILE *out, const char *buf, size_t n);

/* Print one error line.  Its arguments may carry journal text (column names, SQLite's
 * messages about the file) or names found in a directory, so it is written through
 * term_write: no control character from them reaches the terminal. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof msg) n = (int)sizeof msg - 1;
  fputs("dredstat: ", stderr);
  term_write(stderr, msg, (size_t)n);
  fputc('\n', stderr);
  return EXIT_RUNTIME;
}

/* ---- text from a journal or a socket ------------------------------------------------------
 *
 * A journal or a status socket may come from someone else (a copied journal, a socket
 * planted in a directory we do not own), so what they say is data, never markup: before
 * it reaches a terminal every control character and every byte outside printable ASCII is
 * written as \xNN (an escape sequence could otherwise rewrite the screen or the title,
 * or answer back to the terminal), and before it reaches a gnuplot script it is cut down
 * to a short run of characters gnuplot gives no meaning to inside a quoted string. */

static int byte_is_plain(unsigned char c) { return c >= 0x20 && c < 0x7f; }

/* `s` with every byte that is not printable ASCII written as \xNN (a backslash itself as
 * \x5c, so the output is unambiguous); malloc'd, NULL when out of memory. */
static char *term_safe(const char *s) {
  const unsigned char *p;
  size_t n = 1;
  char *out, *o;
  if (s == NULL) s = "";
  for (p = (const unsigned char *)s; *p; p++) n += byte_is_plain(*p) && *p != '\\' ? 1 : 4;
  if ((out = malloc(n)) == NULL) return NULL;
  for (o = out, p = (const unsigned char *)s; *p; p++) {
    if (byte_is_plain(*p) && *p != '\\') *o++ = (char)*p;
    else o += sprintf(o, "\\x%02x", *p);
  }
  *o = '\0';
  return out;
}

/* Write n bytes of a status answer to `out`: lines and tabs as they are, anything else
 * that is not printable ASCII as \xNN. */
static void term_write(FILE *out, const char *buf, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)buf[i];
    if ((byte_is_plain(c) && c != '\\') || c == '\n' || c == '\t') fputc(c, out);
    else fprintf(out, "\\x%02x", c);
  }
}

/* `s` for a gnuplot title: at most cap-1 characters of [A-Za-z0-9 _.,:=+-], anything
 * else replaced by '_'.  No quote, backslash, newline, '@' or '{' can reach the script,
 * so a journal value can neither end the string nor start a command or markup. */
static void gp_label(const char *s, char *out, size_t cap) {
  size_t i = 0;
  if (cap == 0) return;
  for (; s != NULL && *s && i + 1 < cap; s++) {
    char c = *s;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == ' ' || c == '_' || c == '.' || c == ',' || c == ':' || c == '=' ||
             c == '+' || c == '-';
    out[i++] = ok ? c : '_';
  }
  out[i] = '\0';
}

/* ---- the journal ----------------------------------------------------------------------- */

/* Table t's documented columns as "a,b,c" (how they are compared and reported). */
static void schema_columns(size_t t, char *out, size_t cap) {
  const char *const *c;
  size_t len = 0;
  out[0] = '\0';
  for (c = dred_journal_tables[t].columns; *c != NULL; c++) {
    int n = snprintf(out + len, cap - len, "%s%s", len ? "," : "", *c);
    if (n < 0 || (size_t)n >= cap - len) break;
    len += (size_t)n;
  }
}

/* Check that `db` holds the four tables with the documented columns.  Returns SQLITE_OK,
 * SQLITE_READONLY / SQLITE_CANTOPEN when the file cannot be read in place (the caller may
 * retry immutable), or -1 after printing why the file is not a journal. */
static int journal_check(sqlite3 *db, const char *path) {
  sqlite3_stmt *st = NULL;
  size_t t;
  int rc;

  for (t = 0; t < DRED_JOURNAL_NTABLES; t++) {
    char cols[256], want[256];
    size_t len = 0;
    cols[0] = '\0';
    schema_columns(t, want, sizeof want);
    rc = sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1, &st,
                            NULL);
    if (rc == SQLITE_OK) {
      sqlite3_bind_text(st, 1, dred_journal_tables[t].name, -1, SQLITE_STATIC);
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int n = snprintf(cols + len, sizeof cols - len, "%s%s", len ? "," : "",
                         name ? name : "");
        if (n < 0 || (size_t)n >= sizeof cols - len) break;
        len += (size_t)n;
      }
      sqlite3_finalize(st);
      if (rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK) {
      /* The first statement is where SQLite finds out what the file really is. */
      int prim = rc & 0xff;
      if (prim == SQLITE_READONLY || prim == SQLITE_CANTOPEN) return prim;
      if (prim == SQLITE_NOTADB)
        fail("%s: not an SQLite database, so not a dred journal", path);
      else
        fail("%s: cannot read: %s", path, sqlite3_errmsg(db));
      return -1;
    }
    if (len == 0) {
      fail("%s: not a dred journal: it has no '%s' table", path, dred_journal_tables[t].name);
      return -1;
    }
    if (strcmp(cols, want) != 0) {
      fail("%s: not a dred journal (or another schema version): table '%s' has columns (%s), "
           "expected (%s)", path, dred_journal_tables[t].name, cols, want);
      return -1;
    }
  }
  return SQLITE_OK;
}

/* Open `path` read-only and make sure it is a dred journal.  Returns 0 and sets *out, or 1
 * after printing why not.
 *
 * A WAL-mode file can be read read-only only if its -shm/-wal files exist or can be
 * created; a journal copied into a directory we cannot write (a finished run's results in
 * a shared project space) has neither.  No master can be writing such a file (it could not
 * create its WAL either), so it is then reopened as immutable, which needs no side files. */
static int journal_open(const char *path, sqlite3 **out) {
  sqlite3 *db = NULL;
  struct stat sb;
  int rc, attempt;

  *out = NULL;
  /* SQLite's own message for a missing file under READONLY is "unable to open database
   * file"; say what is actually wrong. */
  if (stat(path, &sb) != 0) return fail("%s: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode)) return fail("%s: not a regular file", path);
  if (sb.st_size == 0) return fail("%s: empty file, not a dred journal", path);
  for (attempt = 0; attempt < 2; attempt++) {
    char uri[4200];
    size_t u = 0;
    const unsigned char *p;
    if (attempt == 0) {
      rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    } else {
      /* file: URI, percent-encoding whatever URI syntax would misread. */
      u = (size_t)snprintf(uri, sizeof uri, "file:");
      for (p = (const unsigned char *)path; *p && u + 4 < sizeof uri - 16; p++) {
        if (*p == '%' || *p == '?' || *p == '#' || *p <= 0x20 || *p >= 0x7f)
          u += (size_t)snprintf(uri + u, sizeof uri - u, "%%%02X", *p);
        else
          uri[u++] = (char)*p;
      }
      snprintf(uri + u, sizeof uri - u, "?immutable=1");
      rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    }
    if (rc != SQLITE_OK) {
      fail("%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
      sqlite3_close(db);
      return EXIT_RUNTIME;
    }
    sqlite3_busy_timeout(db, 2000); /* the master may be committing a batch right now */
    rc = journal_check(db, path);
    if (rc == SQLITE_OK) {
      *out = db;
      return 0;
    }
    if (rc < 0 || attempt == 1) {
      if (rc > 0) fail("%s: cannot read: %s", path, sqlite3_errmsg(db));
      sqlite3_close(db);
      return EXIT_RUNTIME;
    }
    sqlite3_close(db); /* READONLY / CANTOPEN: try again immutable */
    db = NULL;
  }
  return EXIT_RUNTIME;
}

/* sqlite3_int64 is long long; int64_t may be long: convert once, print with PRId64. */
static int64_t col(sqlite3_stmt *st, int i) { return (int64_t)sqlite3_column_int64(st, i); }

/* Prepare a query against a journal already checked; a failure here is a real I/O error. */
static sqlite3_stmt *query(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fail("query failed: %s (%s)", sqlite3_errmsg(db), sql);
    return NULL;
  }
  return st;
}

/* A meta value, or `def`.  Returns a malloc'd string (NULL: absent and `def` NULL). */
static char *meta_get(sqlite3 *db, const char *key, const char *def) {
  sqlite3_stmt *st = query(db, "SELECT value FROM meta WHERE key = ?1");
  char *v = NULL;
  if (st) {
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
      v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  return v ? v : def != NULL ? strdup(def) : NULL;
}

/* Number of workers: the meta record, or the highest worker named anywhere. */
static int64_t journal_workers(sqlite3 *db) {
  char *s = meta_get(db, "workers", "0");
  int64_t n = strtoll(s, NULL, 10), hi = 0;
  sqlite3_stmt *st;
  free(s);
  st = query(db, "SELECT max(m) FROM (SELECT max(executor) AS m FROM tasks UNION ALL "
                 "SELECT max(provider) FROM tasks UNION ALL SELECT max(worker) FROM workers)");
  if (st && sqlite3_step(st) == SQLITE_ROW) hi = col(st, 0);
  sqlite3_finalize(st);
  if (hi > n) n = hi;
  if (n > 1000000) n = 1000000; /* a corrupt meta value must not make us allocate wildly */
  return n < 0 ? 0 : n;
}

/* ---- aligned text tables ------------------------------------------------------------------ */

typedef struct {
  int ncols;
  const char **head;
  const char *align; /* 'l' or 'r' per column */
  char **cell;       /* row-major */
  size_t nrows, cap;
} table_t;

static int table_add(table_t *t, ...) {
  va_list ap;
  int c;
  if (t->nrows == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    char **p = realloc(t->cell, cap * (size_t)t->ncols * sizeof *p);
    if (p == NULL) return -1;
    t->cell = p;
    t->cap = cap;
  }
  va_start(ap, t);
  for (c = 0; c < t->ncols; c++) {
    const char *s = va_arg(ap, const char *);
    t->cell[t->nrows * (size_t)t->ncols + (size_t)c] = term_safe(s); /* may be journal text */
  }
  va_end(ap);
  t->nrows++;
  return 0;
}

static void table_print(const table_t *t, FILE *out) {
  size_t w[32] = {0}, r;
  int c;
  for (c = 0; c < t->ncols; c++) w[c] = strlen(t->head[c]);
  for (r = 0; r < t->nrows; r++)
    for (c = 0; c < t->ncols; c++) {
      const char *s = t->cell[r * (size_t)t->ncols + (size_t)c];
      size_t l = s ? strlen(s) : 0;
      if (l > w[c]) w[c] = l;
    }
  for (r = 0; r <= t->nrows; r++) {
    fputs("  ", out);
    for (c = 0; c < t->ncols; c++) {
      const char *s = r == 0 ? t->head[c] : t->cell[(r - 1) * (size_t)t->ncols + (size_t)c];
      int last = c == t->ncols - 1;
      if (s == NULL) s = "";
      if (t->align[c] == 'r') fprintf(out, "%*s", (int)w[c], s);
      else if (last) fputs(s, out); /* no trailing blanks */
      else fprintf(out, "%-*s", (int)w[c], s);
      if (!last) fputs("  ", out);
    }
    fputc('\n', out);
  }
}

static void table_free(table_t *t) {
  size_t i;
  for (i = 0; i < t->nrows * (size_t)t->ncols; i++) free(t->cell[i]);
  free(t->cell);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ---- summary ------------------------------------------------------------------------------- */

typedef struct {
  int64_t tasks, bytes, provided, failed_tasks, speed_n;
  double speed_sum; /* sum of per-task bytes/exec_ns (GB/s) */
  int failed;
  int64_t failed_ns;
} worker_stat_t;

static int cmd_summary(const char *path) {
  sqlite3 *db;
  sqlite3_stmt *st;
  table_t red = {0}, wt = {0};
  static const char *rhead[] = {"id",    "group", "tag",       "members", "bytes",
                                "start_ms", "duration_ms", "tasks", "recovered", "status"};
  static const char *whead[] = {"worker",     "comm_rank", "tasks", "bytes_combined",
                                "mean_GB/s", "provided",  "failed_tasks", "failed"};
  worker_stat_t *ws = NULL;
  double *durs = NULL;
  size_t ndur = 0, capdur = 0;
  int64_t nworkers, w, ntasks = 0, nred = 0, nbad = 0, span_ns = 0;
  char *policy;
  int rc = 0;

  if ((rc = journal_open(path, &db)) != 0) return rc;
  nworkers = journal_workers(db);
  policy = meta_get(db, "policy", "?");

  red.ncols = 10;
  red.head = rhead;
  red.align = "rlrrrrrrrl";
  st = query(db, "SELECT id, grp, tag, members, bytes, start_ns, end_ns, tasks, recovered, "
                 "status FROM reductions ORDER BY start_ns, id");
  if (st == NULL) goto err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char c[9][32];
    int64_t s0 = col(st, 5), s1 = col(st, 6);
    int64_t status = col(st, 9);
    const char *grp = (const char *)sqlite3_column_text(st, 1);
    double dur = (double)(s1 - s0) / 1e6;
    snprintf(c[0], 32, "%" PRId64, col(st, 0));
    snprintf(c[1], 32, "%" PRId64, col(st, 2));
    snprintf(c[2], 32, "%" PRId64, col(st, 3));
    snprintf(c[3], 32, "%" PRId64, col(st, 4));
    snprintf(c[4], 32, "%.3f", (double)s0 / 1e6);
    snprintf(c[5], 32, "%.3f", dur);
    snprintf(c[6], 32, "%" PRId64, col(st, 7));
    snprintf(c[7], 32, "%" PRId64, col(st, 8));
    if (table_add(&red, c[0], grp ? grp : "?", c[1], c[2], c[3], c[4], c[5], c[6], c[7],
                  dred_status_str((int)status)) != 0)
      goto oom;
    if (ndur == capdur) {
      double *p = realloc(durs, (capdur = capdur ? capdur * 2 : 64) * sizeof *p);
      if (p == NULL) goto oom;
      durs = p;
    }
    durs[ndur++] = dur;
    nred++;
    if (status != 0) nbad++;
    if (s1 > span_ns) span_ns = s1;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) goto err;

  ws = calloc((size_t)nworkers + 1, sizeof *ws);
  if (ws == NULL) goto oom;
  st = query(db, "SELECT executor, provider, bytes, end_ns, exec_ns, status FROM tasks");
  if (st == NULL) goto err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t ex = col(st, 0), pr = col(st, 1);
    int64_t bytes = col(st, 2), end = col(st, 3);
    int64_t exec_ns = col(st, 4), status = col(st, 5);
    ntasks++;
    if (end > span_ns) span_ns = end;
    if (ex >= 1 && ex <= nworkers) {
      ws[ex].tasks++;
      if (status == 0) {
        ws[ex].bytes += bytes;
        if (exec_ns > 0) {
          ws[ex].speed_sum += (double)bytes / (double)exec_ns; /* bytes/ns == GB/s */
          ws[ex].speed_n++;
        }
      } else {
        ws[ex].failed_tasks++;
      }
    }
    if (pr >= 1 && pr <= nworkers) ws[pr].provided++;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) goto err;
  st = query(db, "SELECT worker, failed_ns FROM workers");
  if (st == NULL) goto err;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t wk = col(st, 0);
    if (wk >= 1 && wk <= nworkers) {
      ws[wk].failed = 1;
      ws[wk].failed_ns = col(st, 1);
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) goto err;

  wt.ncols = 8;
  wt.head = whead;
  wt.align = "rrrrrrrl";
  for (w = 1; w <= nworkers; w++) {
    char c[7][32], f[48];
    snprintf(c[0], 32, "%" PRId64, w);
    snprintf(c[1], 32, "%" PRId64, w - 1);
    snprintf(c[2], 32, "%" PRId64, ws[w].tasks);
    snprintf(c[3], 32, "%" PRId64, ws[w].bytes);
    if (ws[w].speed_n > 0) snprintf(c[4], 32, "%.3f", ws[w].speed_sum / (double)ws[w].speed_n);
    else snprintf(c[4], 32, "-");
    snprintf(c[5], 32, "%" PRId64, ws[w].provided);
    snprintf(c[6], 32, "%" PRId64, ws[w].failed_tasks);
    if (ws[w].failed) snprintf(f, sizeof f, "yes, at %.3f ms", (double)ws[w].failed_ns / 1e6);
    else snprintf(f, sizeof f, "no");
    if (table_add(&wt, c[0], c[1], c[2], c[3], c[4], c[5], c[6], f) != 0) goto oom;
  }

  {
    char *safe = term_safe(policy);
    printf("journal %s: %" PRId64 " workers, policy %s, %" PRId64 " reductions (%" PRId64
           " failed), %" PRId64 " tasks, %.3f ms journaled\n",
           path, nworkers, safe ? safe : "?", nred, nbad, ntasks, (double)span_ns / 1e6);
    free(safe);
  }
  {
    /* small reductions of one-node groups met in shared memory: the master never saw
     * them, so they are in no table here (lib/paths/meetpath.c) */
    char *met = meta_get(db, "met_in_shared_memory", NULL);
    char *safe = met != NULL ? term_safe(met) : NULL;
    if (safe != NULL) printf("met in shared memory (not in the tables): %s member calls\n", safe);
    free(safe);
    free(met);
  }
  if (ndur > 0) {
    qsort(durs, ndur, sizeof *durs, cmp_double);
    printf("reduction duration ms: median %.3f, p95 %.3f, max %.3f\n", durs[ndur / 2],
           durs[(size_t)ceil(0.95 * (double)ndur) - 1], durs[ndur - 1]);
  }
  printf("\nreductions (tag < 0: the k-th DRED_TAG_AUTO call is tag -k; bytes per member)\n");
  if (red.nrows) table_print(&red, stdout);
  else printf("  (none)\n");
  printf("\nworkers (worker N is rank N-1 of dred_comm(); mean_GB/s is the mean of "
         "bytes/exec_ns over its tasks)\n");
  if (wt.nrows) table_print(&wt, stdout);
  else printf("  (none)\n");
  rc = 0;
  goto out;
oom:
  rc = fail("out of memory");
  goto out;
err:
  rc = fail("%s: reading failed: %s", path, sqlite3_errmsg(db));
out:
  table_free(&red);
  table_free(&wt);
  free(durs);
  free(ws);
  free(policy);
  sqlite3_close(db);
  return rc;
}

/* ---- trace --------------------------------------------------------------------------------- */

/* A JSON string literal (RFC 8259): quotes, backslash and control characters escaped;
 * other bytes pass through (SQLite text is UTF-8). */
static void json_str(FILE *out, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  fputc('"', out);
  for (; *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", out); break;
      case '\\': fputs("\\\\", out); break;
      case '\n': fputs("\\n", out); break;
      case '\r': fputs("\\r", out); break;
      case '\t': fputs("\\t", out); break;
      default:
        if (*p < 0x20) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    }
  }
  fputc('"', out);
}

static int cmd_trace(const char *path, const char *outpath) {
  sqlite3 *db;
  sqlite3_stmt *st;
  FILE *out;
  int64_t nworkers, w, n = 0;
  int rc, to_stdout = strcmp(outpath, "-") == 0, first = 1;

  if ((rc = journal_open(path, &db)) != 0) return rc;
  nworkers = journal_workers(db);
  out = to_stdout ? stdout : fopen(outpath, "w");
  if (out == NULL) {
    sqlite3_close(db);
    return fail("%s: cannot write: %s", outpath, strerror(errno));
  }
  /* The JSON object form: traceEvents plus otherData (the journal's meta table), which
   * Perfetto shows as the trace's metadata. */
  fprintf(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{");
  st = query(db, "SELECT key, value FROM meta ORDER BY key");
  if (st) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      if (!first) fputc(',', out);
      first = 0;
      json_str(out, (const char *)sqlite3_column_text(st, 0));
      fputc(':', out);
      json_str(out, (const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
  }
  fprintf(out, "},\n\"traceEvents\":[\n");
  fprintf(out, "{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\","
               "\"args\":{\"name\":\"dred tasks\"}}");
  for (w = 1; w <= nworkers; w++)
    fprintf(out, ",\n{\"ph\":\"M\",\"pid\":0,\"tid\":%" PRId64 ",\"name\":\"thread_name\","
                 "\"args\":{\"name\":\"worker %" PRId64 "\"}}", w, w);
  st = query(db, "SELECT task_id, grp, tag, executor, provider, bytes, start_ns, end_ns, "
                 "exec_ns, status FROM tasks ORDER BY start_ns, id");
  if (st == NULL) {
    rc = EXIT_RUNTIME;
    goto done;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t s0 = col(st, 6), s1 = col(st, 7);
    fprintf(out, ",\n{\"ph\":\"X\",\"pid\":0,\"tid\":%" PRId64 ",\"name\":\"task %" PRId64
                 "\",\"cat\":\"task\",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"provider\":%" PRId64
                 ",\"bytes\":%" PRId64 ",\"group\":",
            col(st, 3), col(st, 0), (double)s0 / 1e3,
            (double)(s1 > s0 ? s1 - s0 : 0) / 1e3, col(st, 4),
            col(st, 5));
    json_str(out, (const char *)sqlite3_column_text(st, 1));
    fprintf(out, ",\"tag\":%" PRId64 ",\"exec_us\":%.3f,\"status\":", col(st, 2),
            (double)col(st, 8) / 1e3);
    {
      int64_t ts = col(st, 9); /* an int32 as written; anything else is "unknown" too */
      json_str(out, proto_task_status_name(ts >= INT32_MIN && ts <= INT32_MAX ? (int)ts : -1));
    }
    fputs("}}", out);
    n++;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    rc = fail("%s: reading tasks failed: %s", path, sqlite3_errmsg(db));
    goto done;
  }
  fprintf(out, "\n]}\n");
  rc = 0;
done:
  if (fflush(out) != 0 || ferror(out)) rc = fail("%s: write failed: %s", outpath, strerror(errno));
  if (!to_stdout && fclose(out) != 0 && rc == 0)
    rc = fail("%s: write failed: %s", outpath, strerror(errno));
  if (rc != 0 && !to_stdout) unlink(outpath); /* never leave half a JSON file behind */
  else if (!to_stdout)
    fprintf(stderr, "dredstat: wrote %" PRId64 " task events for %" PRId64 " workers to %s\n", n,
            nworkers, outpath);
  sqlite3_close(db);
  return rc;
}

/* ---- plot ---------------------------------------------------------------------------------- */

/* What goes into the gnuplot script.  gnuplot is a programming language (system(),
 * backquotes, `load`), so the script holds nothing but our own text, numbers, and the
 * policy name cut down by gp_label; the task data go in a data file, which gnuplot only
 * reads numbers from.  Even the file names are fixed ones inside the private directory
 * (gnuplot runs there), so neither the -o path nor $TMPDIR is ever parsed by gnuplot:
 * the PNG is copied to its destination afterwards. */
#define GP_SCRIPT "plot.gp"
#define GP_DATA "tasks.dat"
#define GP_PNG "tasks.png"

/* Copy the file `from` to `to` (created or truncated, mode 0666 less the umask). */
static int copy_file(const char *from, const char *to) {
  char buf[65536];
  FILE *in = fopen(from, "rb"), *out;
  size_t n;
  int rc = 0;
  if (in == NULL) return fail("%s: %s", from, strerror(errno));
  if ((out = fopen(to, "wb")) == NULL) {
    fclose(in);
    return fail("%s: cannot write: %s", to, strerror(errno));
  }
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) break;
  if (ferror(in)) rc = fail("%s: %s", from, strerror(errno));
  if ((ferror(out) || fclose(out) != 0) && rc == 0)
    rc = fail("%s: write failed: %s", to, strerror(errno));
  fclose(in);
  if (rc != 0) unlink(to); /* never leave half a PNG behind */
  return rc;
}

/* Run gnuplot on GP_SCRIPT inside `dir`; returns 0 when it exited 0. */
static int run_gnuplot(const char *dir) {
  const char *gp = getenv("GNUPLOT");
  pid_t pid;
  int status;
  if (gp == NULL || *gp == '\0') gp = "gnuplot";
  pid = fork();
  if (pid < 0) return fail("fork failed: %s", strerror(errno));
  if (pid == 0) {
    if (chdir(dir) != 0) {
      fprintf(stderr, "dredstat: %s: %s\n", dir, strerror(errno));
      _exit(127);
    }
    execlp(gp, gp, GP_SCRIPT, (char *)NULL);
    fprintf(stderr, "dredstat: cannot run %s: %s (install gnuplot, e.g. apt-get install "
                    "gnuplot-nox, or set GNUPLOT)\n", gp, strerror(errno));
    _exit(127);
  }
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return fail("waitpid failed: %s", strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return EXIT_RUNTIME; /* said why */
  return fail("%s failed (%s %d)", gp, WIFEXITED(status) ? "exit status" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

static int cmd_plot(const char *path, const char *outpath) {
  sqlite3 *db;
  sqlite3_stmt *st;
  const char *tmp = getenv("TMPDIR");
  char dirbuf[512];
  FILE *f = NULL;
  int64_t nworkers, w, ntasks = 0, *count = NULL, span_ns = 0;
  int rc, height;
  char *policy = NULL, title_policy[33];
  struct stat sb;

  if ((rc = journal_open(path, &db)) != 0) return rc;
  nworkers = journal_workers(db);
  policy = meta_get(db, "policy", "?");
  count = calloc((size_t)nworkers + 1, sizeof *count);
  if (count == NULL) {
    rc = fail("out of memory");
    goto out_db;
  }
  /* A private directory: the script and data never collide with another user's files. */
  if (tmp && *tmp && strlen(tmp) < sizeof dirbuf - 32)
    snprintf(dirbuf, sizeof dirbuf, "%s/dredstat.XXXXXX", tmp);
  else
    snprintf(dirbuf, sizeof dirbuf, "/tmp/dredstat.XXXXXX");
  if (mkdtemp(dirbuf) == NULL) {
    rc = fail("cannot create a temporary directory %s: %s", dirbuf, strerror(errno));
    goto out_db;
  }
  {
    char dpath[600], spath[600], ppath[600];
    snprintf(dpath, sizeof dpath, "%s/" GP_DATA, dirbuf);
    snprintf(spath, sizeof spath, "%s/" GP_SCRIPT, dirbuf);
    snprintf(ppath, sizeof ppath, "%s/" GP_PNG, dirbuf);
    /* Data: worker start_ms end_ms colour.  The colour is a hash of the reduction's key
     * (group, tag), so the tasks of one reduction share a colour and consecutive auto-tag
     * reductions of a group get different ones. */
    f = fopen(dpath, "w");
    if (f == NULL) {
      rc = fail("%s: %s", dpath, strerror(errno));
      goto out_tmp;
    }
    st = query(db, "SELECT executor, start_ns, end_ns, grp, tag FROM tasks ORDER BY start_ns");
    if (st == NULL) {
      rc = EXIT_RUNTIME;
      goto out_tmp;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t ex = col(st, 0), s0 = col(st, 1),
              s1 = col(st, 2), tag = col(st, 4);
      const char *grp = (const char *)sqlite3_column_text(st, 3);
      uint64_t k = grp ? strtoull(grp, NULL, 16) : 0;
      k = (k ^ (k >> 29)) + (uint64_t)(tag < 0 ? -tag : tag);
      fprintf(f, "%" PRId64 " %.6f %.6f %d\n", ex, (double)s0 / 1e6,
              (double)(s1 > s0 ? s1 : s0) / 1e6, 1 + (int)(k % 8));
      if (ex >= 1 && ex <= nworkers) count[ex]++;
      if (s1 > span_ns) span_ns = s1;
      ntasks++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      rc = fail("%s: reading tasks failed: %s", path, sqlite3_errmsg(db));
      goto out_tmp;
    }
    if (fclose(f) != 0) {
      f = NULL;
      rc = fail("%s: %s", dpath, strerror(errno));
      goto out_tmp;
    }
    f = NULL;
    if (ntasks == 0) {
      rc = fail("%s: the journal has no tasks: nothing to plot", path);
      goto out_tmp;
    }

    f = fopen(spath, "w");
    if (f == NULL) {
      rc = fail("%s: %s", spath, strerror(errno));
      goto out_tmp;
    }
    height = 120 + 40 * (int)(nworkers < 64 ? nworkers : 64);
    /* pngcairo draws nicer text; plain png (libgd) is what some gnuplot builds have. */
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
               "  set terminal pngcairo size 1200,%d font 'sans,10'\n"
               "} else {\n"
               "  set terminal png size 1200,%d\n"
               "}\n", height, height);
    gp_label(policy, title_policy, sizeof title_policy);
    fprintf(f, "set output '" GP_PNG "'\n");
    fprintf(f, "set title 'dred tasks per worker: %" PRId64 " tasks, policy %s "
               "(colour = reduction)' noenhanced\n", ntasks, title_policy);
    fprintf(f, "set xlabel 'time since dred-master start (ms)'\n"
               "set xrange [0:%.6f]\n"
               "set yrange [0.4:%" PRId64 ".6]\n"
               "set grid xtics\n"
               "set ytics (", (double)span_ns / 1e6 * 1.02 + 1e-3, nworkers);
    for (w = 1; w <= nworkers; w++)
      fprintf(f, "%s'worker %" PRId64 " (%" PRId64 " tasks)' %" PRId64, w > 1 ? ", " : "", w,
              count[w], w);
    /* Most tasks are far shorter than the run: give every box at least ~2 pixels so its
     * colour shows, and a grey border that separates neighbours without turning thin boxes
     * black. */
    fprintf(f, ")\nset style fill solid 0.9 border lc rgb 'gray40'\nminw = %.9f\n",
            (double)span_ns / 1e6 * 0.0009);
    /* Eight distinct colours (gnuplot's own cycle includes black, which hides borders). */
    fprintf(f, "set linetype 1 lc rgb '#1f77b4'\nset linetype 2 lc rgb '#ff7f0e'\n"
               "set linetype 3 lc rgb '#2ca02c'\nset linetype 4 lc rgb '#d62728'\n"
               "set linetype 5 lc rgb '#9467bd'\nset linetype 6 lc rgb '#8c564b'\n"
               "set linetype 7 lc rgb '#e377c2'\nset linetype 8 lc rgb '#17becf'\n"
               "plot '" GP_DATA "'");
    fprintf(f, " using (($2+$3)/2):1:(($3-$2)/2 > minw ? ($3-$2)/2 : minw):(0.35):4 "
               "with boxxyerror lc variable notitle\n");
    if (fclose(f) != 0) {
      f = NULL;
      rc = fail("%s: %s", spath, strerror(errno));
      goto out_tmp;
    }
    f = NULL;
    unlink(outpath); /* so a stale PNG is never mistaken for this one */
    rc = run_gnuplot(dirbuf);
    if (rc == 0 && (stat(ppath, &sb) != 0 || sb.st_size == 0))
      rc = fail("gnuplot did not write a PNG");
    if (rc == 0) rc = copy_file(ppath, outpath);
    if (rc == 0)
      fprintf(stderr, "dredstat: plotted %" PRId64 " tasks on %" PRId64 " workers to %s\n",
              ntasks, nworkers, outpath);
  out_tmp:
    if (f) fclose(f);
    unlink(dpath);
    unlink(spath);
    unlink(ppath);
    rmdir(dirbuf);
  }
out_db:
  free(count);
  free(policy);
  sqlite3_close(db);
  return rc;
}

/* ---- status -------------------------------------------------------------------------------- */

typedef struct {
  uv_pipe_t pipe;
  uv_connect_t conn;
  uv_timer_t timer;
  const char *path;
  char buf[4096];
  size_t got;
  int rc; /* -1 until decided */
} status_ctx_t;

static void st_close(status_ctx_t *c) {
  if (!uv_is_closing((uv_handle_t *)&c->pipe)) uv_close((uv_handle_t *)&c->pipe, NULL);
  if (!uv_is_closing((uv_handle_t *)&c->timer)) uv_close((uv_handle_t *)&c->timer, NULL);
}

static void st_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
  status_ctx_t *c = h->data;
  *b = uv_buf_init(c->buf, sizeof c->buf);
}

static void st_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  status_ctx_t *c = s->data;
  if (n > 0) {
    term_write(stdout, b->base, (size_t)n); /* the text is the peer's: no escapes through */
    c->got += (size_t)n;
    return;
  }
  if (n == UV_EOF && c->got > 0) c->rc = 0;
  else if (n == UV_EOF) c->rc = fail("%s: dred-master closed the connection without answering", c->path);
  else if (n < 0) c->rc = fail("%s: read failed: %s", c->path, uv_strerror((int)n));
  if (n < 0) st_close(c);
}

static void st_connected(uv_connect_t *req, int status) {
  status_ctx_t *c = req->data;
  int rc;
  if (status != 0) {
    if (status == UV_ENOENT)
      c->rc = fail("%s: no status socket: is dred-master running with this DRED_STORAGE_DIR?",
                   c->path);
    else if (status == UV_ECONNREFUSED)
      c->rc = fail("%s: connection refused: a stale socket, its dred-master is gone", c->path);
    else if (status == UV_EACCES)
      c->rc = fail("%s: permission denied: the socket belongs to another user", c->path);
    else if (status != UV_ECANCELED)
      c->rc = fail("%s: cannot connect: %s", c->path, uv_strerror(status));
    st_close(c);
    return;
  }
  if ((rc = uv_read_start((uv_stream_t *)&c->pipe, st_alloc, st_read)) != 0) {
    c->rc = fail("%s: cannot read: %s", c->path, uv_strerror(rc));
    st_close(c);
  }
}

static void st_timeout(uv_timer_t *t) {
  status_ctx_t *c = t->data;
  c->rc = fail("%s: no answer from dred-master within %d ms (it is busy or hung)", c->path,
               STATUS_TIMEOUT_MS);
  st_close(c);
}

/* May dredstat talk to the socket at `path`?  Only to a socket (lstat: never through a
 * link) owned by us, in a directory owned by us that nobody else can write, so that what
 * was checked is what connect() reaches.  A socket someone else made could answer
 * anything.  Returns 0, or 1 after printing why not. */
static int sock_check(const char *path) {
  struct stat sb;
  char dir[600], *slash;
  if (lstat(path, &sb) != 0) {
    if (errno == ENOENT)
      return fail("%s: no status socket: is dred-master running with this DRED_STORAGE_DIR?",
                  path);
    return fail("%s: %s", path, strerror(errno));
  }
  if (!S_ISSOCK(sb.st_mode)) return fail("%s: not a socket: refused", path);
  if (sb.st_uid != geteuid())
    return fail("%s: owned by uid %ld, not by you (uid %ld): refused (someone else's socket "
                "can say anything)", path, (long)sb.st_uid, (long)geteuid());
  snprintf(dir, sizeof dir, "%s", path);
  slash = strrchr(dir, '/');
  if (slash == dir) dir[1] = '\0';
  else if (slash != NULL) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  if (stat(dir, &sb) != 0) return fail("%s: %s", dir, strerror(errno));
  if (sb.st_uid != geteuid() || (sb.st_mode & 022) != 0)
    return fail("%s: the socket's directory %s is %s: refused (the socket could be swapped)",
                path, dir, sb.st_uid != geteuid() ? "another user's" : "writable by others");
  return 0;
}

/* One storage directory for status_find: each of its job directories' socket that passes
 * the checks is counted in *nfound, the first kept in `first`, the others listed. */
static void status_scan(const char *base, char *first, size_t cap, size_t *nfound) {
  char why[256], pat[1024];
  glob_t g;
  size_t j;
  int rc = dred_privdir_check(base, why, sizeof why);
  if (rc == ENOENT) return;
  if (rc != 0) {
    fail("%s: %s: not searched", base, why);
    return;
  }
  if (strlen(base) > sizeof pat - 64) return;
  snprintf(pat, sizeof pat, "%s/job-*/" DRED_STOREDIR_STATUS_SOCKET, base);
  if (glob(pat, 0, NULL, &g) != 0) return;
  for (j = 0; j < g.gl_pathc; j++) {
    char jobdir[1024], *slash;
    snprintf(jobdir, sizeof jobdir, "%s", g.gl_pathv[j]);
    if ((slash = strrchr(jobdir, '/')) != NULL) *slash = '\0';
    if (dred_privdir_check(jobdir, why, sizeof why) != 0) {
      fail("%s: %s: not searched", jobdir, why);
      continue;
    }
    if (sock_check(g.gl_pathv[j]) != 0) continue;
    if (*nfound == 0) {
      snprintf(first, cap, "%s", g.gl_pathv[j]);
    } else {
      char *f = *nfound == 1 ? term_safe(first) : NULL, *safe = term_safe(g.gl_pathv[j]);
      if (*nfound == 1)
        fprintf(stderr, "dredstat: several jobs have a status socket; give one:\n"
                        "  dredstat status %s\n", f ? f : "?");
      fprintf(stderr, "  dredstat status %s\n", safe ? safe : "?");
      free(f);
      free(safe);
    }
    (*nfound)++;
  }
  globfree(&g);
}

/* The running job's status socket under the storage directories: $DRED_STORAGE_DIR, else
 * the default ones (common/privdir.h: $XDG_RUNTIME_DIR/dred or /tmp/dred-<uid>, and any
 * fresh /tmp/dred-<uid>-XXXXXX chosen when that one was squatted).  Directories that are
 * not private to us, job directories likewise, and sockets not ours are passed over with
 * a warning, never connected to.  Returns 0 with the path in `out`, 1 (none) or 2 (several;
 * listed) after printing. */
static int status_find(char *out, size_t cap) {
  const char *env = dred_setting_raw(DRED_S_STORAGE_DIR);
  char base[600], why[256];
  size_t nfound = 0;

  *out = '\0';
  if (env != NULL && *env != '\0') {
    snprintf(base, sizeof base, "%s", env);
    status_scan(base, out, cap, &nfound);
  } else {
    glob_t g;
    char pat[64];
    size_t i;
    int kind = dred_privdir_default("/tmp", 0, base, sizeof base);
    if (kind == DRED_PRIVDIR_XDG || kind == DRED_PRIVDIR_TMP)
      status_scan(base, out, cap, &nfound);
    else if (kind == DRED_PRIVDIR_SQUATTED && dred_privdir_check(base, why, sizeof why) < 0)
      fail("%s: %s: not searched", base, why);
    snprintf(pat, sizeof pat, "/tmp/dred-%ld-*", (long)geteuid());
    if (glob(pat, 0, NULL, &g) == 0) {
      for (i = 0; i < g.gl_pathc; i++) status_scan(g.gl_pathv[i], out, cap, &nfound);
      globfree(&g);
    }
  }
  if (nfound > 1) return 2;
  if (nfound == 0) {
    char *safe = term_safe(base);
    fail("%s/job-*/%s: no status socket of yours: is dred-master running with this "
         "DRED_STORAGE_DIR?", safe ? safe : "?", DRED_STOREDIR_STATUS_SOCKET);
    free(safe);
    return 1;
  }
  return 0;
}

static int cmd_status(const char *sock) {
  status_ctx_t c;
  uv_loop_t loop;
  dred_sockpath_t sp;
  char def[600];
  size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
  int rc;

  if (sock == NULL) {
    /* Each job has its own directory, <storage>/job-<id> (storage/storedir.h): take the
     * one job with a socket; with several running, the user must say which. */
    if ((rc = status_find(def, sizeof def)) != 0) return rc;
    sock = def;
  } else if (sock_check(sock) != 0) {
    return EXIT_RUNTIME;
  }
  if (dred_sockpath_init(&sp, sock) != 0)
    return fail("%s: path longer than a Unix socket allows (%zu bytes) and its directory "
                "cannot be opened: %s", sock, max, strerror(errno));
  memset(&c, 0, sizeof c);
  c.path = sock;
  c.rc = -1;
  if (uv_loop_init(&loop) != 0) return fail("cannot initialise libuv");
  uv_pipe_init(&loop, &c.pipe, 0);
  uv_timer_init(&loop, &c.timer);
  c.pipe.data = c.timer.data = c.conn.data = &c;
  uv_pipe_connect(&c.conn, &c.pipe, sp.addr, st_connected); /* connect(2) happens here */
  dred_sockpath_close(&sp);
  uv_timer_start(&c.timer, st_timeout, STATUS_TIMEOUT_MS, 0);
  /* After EOF the read callback leaves the handles open; close them here. */
  while (uv_run(&loop, UV_RUN_ONCE) != 0)
    if (c.rc >= 0) st_close(&c);
  uv_loop_close(&loop);
  fflush(stdout);
  return c.rc < 0 ? fail("%s: no answer", sock) : c.rc;
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  const char *cmd, *out = NULL;
  int c, nargs;
  char **args;

  if (argc < 2) die_usage("no command given");
  cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  /* Options may come before or after the operands (GNU getopt permutes). */
  optind = 2;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
      case 'o':
        if (*optarg == '\0') die_usage("-o needs a file name");
        out = optarg;
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return EXIT_USAGE;
    }
  }
  args = argv + optind;
  nargs = argc - optind;

  if (strcmp(cmd, "summary") == 0 || strcmp(cmd, "trace") == 0 || strcmp(cmd, "plot") == 0) {
    if (nargs != 1) die_usage("%s needs exactly one JOURNAL", cmd);
    if (cmd[0] == 's') {
      if (out) die_usage("summary writes to stdout; -o is for trace and plot");
      return cmd_summary(args[0]);
    }
    if (cmd[0] == 't') return cmd_trace(args[0], out ? out : "trace.json");
    if (out && strcmp(out, "-") == 0) die_usage("plot cannot write a PNG to stdout");
    return cmd_plot(args[0], out ? out : "tasks.png");
  }
  if (strcmp(cmd, "status") == 0) {
    if (out) die_usage("status prints to stdout; -o is for trace and plot");
    if (nargs > 1) die_usage("status takes at most one SOCKET");
    return cmd_status(nargs == 1 ? args[0] : NULL);
  }
  die_usage("unknown command '%s'", cmd);
}
