/*
 * bench_collectives.c -- dred_allreduce and dred_bcast against MPI_Allreduce and MPI_Bcast
 * in the same job (dred-bench-coll).
 *
 *   dredrun -n P dred-bench-coll [--reps N] [--min BYTES] [--max BYTES] [--csv FILE]
 *                                [--late K | --conc K[,K...] [--in-order] [--fresh-tags]]
 *   BYTES: a number of bytes, or with K, M or G (16M); anything else is refused.
 *
 * What it measures: for each size from --min (default 8 B) to --max (default 8 MiB, x8
 * steps, and --max itself) and each collective, --reps timed repetitions (default 30, fewer
 * above 32 KiB) after untimed ones (18 up to 1 MiB, 2 above: warmups()).  Between
 * repetitions every member waits in a blocking MPI_Barrier, as applications wait in MPI
 * between collectives (the case dred's control plane must not lose in: MPICH spins there
 * and holds its lock).  Three modes:
 *
 * ideal (default): a repetition's time is the slowest member's, from its call to its return
 * (blocking dred_allreduce / dred_bcast, DRED_TAG_AUTO; MPI's blocking calls); the table
 * gives the median over repetitions, and dred/MPI.  Allreduce is MPI_SUM on doubles; bcast
 * is bytes from root 0.
 *
 * --late K: unbalanced arrival.  In each repetition one member (rank i mod P, so every
 * member is late in turn, the root included) starts its call K x MPI's median time for
 * that size (from a balanced run just before) after the others; a repetition's time is
 * then the last return minus the last arrival (CLOCK_MONOTONIC is one clock for all the
 * processes of a node, and of the simulated nodes of one machine): what the late member
 * costs everyone once it is there.
 *
 * --conc K (or a list, 4,16): K collectives in flight at once.  In each repetition every
 * member starts K of them, then waits for all: dred, K dred_iallreduce (dred_ibcast) with
 * explicit tags 0..K-1, then dred_future_get and dred_future_free on each; MPI, K
 * MPI_Iallreduce (MPI_Ibcast), then MPI_Waitall.  A tag is reused each repetition, never
 * while live: every member has waited for all K before the next repetition starts
 * (--fresh-tags: a new tag for every collective of the run instead; each explicit tag is a
 * stream with a ring of the node's meeting place for the whole job, and once the 256 rings
 * are taken the rest go through dred-master).  The j-th bcast of a repetition has root
 * j mod P, so the roots are spread over the members; the j-th allreduce reduces the shared
 * operand shifted by j doubles (each of the K has its own result).  dred matches
 * collectives by tag, so each member issues its K dred calls in its own shuffled order (a
 * fresh permutation per member and repetition); MPI's nonblocking collectives must be
 * started in the same order on every member, so its side is not shuffled (--in-order:
 * dred's in MPI's order too).  A repetition's time is the slowest member's, from its first
 * call to its last completion; the table gives, per collective, the median over
 * repetitions / K.
 *
 * Results are checked once per size, in a warm-up repetition (a wrong dred result aborts
 * the benchmark: a fast wrong answer is not a figure; --conc checks MPI's too, the
 * reference).  "dred-bench-coll: all results verified" at the end says every size passed.
 * --csv appends rows mode,param,p,bytes,dred_allreduce_us,mpi_allreduce_us,dred_bcast_us,
 * mpi_bcast_us (mode ideal, late or conc; param 0, K late or K in flight; in conc mode the
 * times are per collective), with the header only when the file is new or empty.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dred.h"
#include "../mpi/sleepy_wait.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of x[0..n-1] (sorts x). */
static double median(double *x, int n) {
  qsort(x, (size_t)n, sizeof *x, cmp_d);
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* The median over repetitions of the slowest member's time. */
static double median_of_max(double *t, int reps, MPI_Comm comm) {
  double *mx = malloc(sizeof(double) * (size_t)reps), med;
  MPI_Allreduce(t, mx, reps, MPI_DOUBLE, MPI_MAX, comm);
  med = median(mx, reps);
  free(mx);
  return med;
}

enum { C_DRED_ALLREDUCE, C_MPI_ALLREDUCE, C_DRED_BCAST, C_MPI_BCAST };

/* One size's buffers, shared by dred's runs and MPI's: the allreduce operand (n + k - 1
 * doubles: the j-th of --conc's K reads it from element j) and K result buffers (one
 * outside --conc).  Where a buffer lives changes the time of a large collective by a
 * factor: MPICH's copies between processes (process_vm_readv) of a 2 MiB allreduce at
 * p = 2 took 0.21 ms in some placements and 0.41 or 5 ms in others of the same run on
 * the AMD guest (glibc's heap or fresh mmaps, depending on the sizes run before), so a
 * run that gave each side buffers of its own compared placements as much as
 * implementations.  Both sides now use the same pages, touched before the timed runs. */
typedef struct {
  size_t n, len; /* doubles per operand; bytes per result buffer */
  int k;
  double *a;
  unsigned char **buf;
} bufs_t;

static void bufs_free(bufs_t *b) {
  for (int j = 0; b->buf != NULL && j < b->k; j++) free(b->buf[j]);
  free(b->buf);
  free(b->a);
}

static void bufs_alloc(bufs_t *b, size_t bytes, int k, int rank) {
  b->n = bytes / sizeof(double) ? bytes / sizeof(double) : 1;
  b->len = b->n * sizeof(double) > bytes ? b->n * sizeof(double) : bytes;
  b->k = k;
  b->a = malloc((b->n + (size_t)k) * sizeof(double));
  b->buf = calloc((size_t)k, sizeof(*b->buf));
  int ok = b->a != NULL && b->buf != NULL;
  for (int j = 0; ok && j < k; j++)
    if ((ok = (b->buf[j] = malloc(b->len)) != NULL)) memset(b->buf[j], 0, b->len); /* touched */
  if (!ok) {
    fprintf(stderr, "dred-bench-coll: out of memory (%d x %zu bytes)\n", k, bytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (size_t e = 0; e < b->n + (size_t)k; e++) b->a[e] = (double)(rank + 1) + (double)(e % 7);
}

/* The median over repetitions of the last return minus the last call (--late). */
static double median_after_last(double *st, double *en, int reps, MPI_Comm comm) {
  double *s = malloc(sizeof(double) * (size_t)reps), *e = malloc(sizeof(double) * (size_t)reps), med;
  MPI_Allreduce(st, s, reps, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(en, e, reps, MPI_DOUBLE, MPI_MAX, comm);
  for (int i = 0; i < reps; i++) e[i] -= s[i];
  med = median(e, reps);
  free(s);
  free(e);
  return med;
}

/* Untimed repetitions before the timed ones, the last of them the checked one.  Up to
 * 1 MiB more than the meeting place's ring has slots (16 per stream): in the fast lane each
 * slot keeps a pool block of its own (to 256 KiB), and the first collective through each
 * slot writes fresh memory (a 192 KiB bcast about twice a warm call's time on the Intel
 * guest, docs/performance.md, session 56), so with fewer the median of a short run would
 * be a cold-start figure.  Larger sizes never use the lane's blocks and keep two, which
 * keeps long runs (make bench to 128 MiB, --late) as long as they were.  MPI's calls get
 * the same warm-up. */
static int warmups(size_t bytes) { return bytes <= (1u << 20) ? 18 : 2; }

/* `late_s` > 0: one member per repetition calls that much after the others (--late). */
static double run(int which, size_t bytes, int reps, MPI_Comm comm, int rank, int size,
                  double late_s, const bufs_t *bf) {
  size_t n = bf->n;
  double *a = bf->a, *b = (double *)bf->buf[0];
  double *t = calloc((size_t)reps, sizeof(double)), med;
  double *st = calloc((size_t)reps, sizeof(double)), *en = calloc((size_t)reps, sizeof(double));
  int i, rc = DRED_OK;
  for (i = -warmups(bytes); i < reps; i++) {
    double t0;
    if (which == C_DRED_BCAST || which == C_MPI_BCAST) {
      if (rank == 0) memcpy(b, a, bytes);
      else memset(b, 0, bytes);
    }
    sleepy_barrier(comm);
    t0 = now_s();
    if (late_s > 0 && rank == (i < 0 ? size - 1 : i % size))
      while (now_s() < t0 + late_s) {} /* busy, as a member still computing is */
    if (i >= 0) st[i] = now_s();
    switch (which) {
      case C_DRED_ALLREDUCE: rc = dred_allreduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, comm); break;
      case C_MPI_ALLREDUCE: MPI_Allreduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, comm); break;
      case C_DRED_BCAST: rc = dred_bcast(b, (int)bytes, MPI_BYTE, 0, comm); break;
      default: MPI_Bcast(b, (int)bytes, MPI_BYTE, 0, comm); break;
    }
    if (i >= 0) {
      en[i] = now_s();
      t[i] = en[i] - t0;
    }
    if (rc != DRED_OK) {
      fprintf(stderr, "dred-bench-coll: %s failed: %s\n",
              which == C_DRED_BCAST ? "dred_bcast" : "dred_allreduce", dred_strerror(rc));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (i == -1 && (which == C_DRED_ALLREDUCE || which == C_DRED_BCAST)) {
      for (size_t k = 0; k < (which == C_DRED_BCAST ? bytes / sizeof(double) : n); k++) {
        double want = which == C_DRED_BCAST ? (double)1 + (double)(k % 7)
                                            : (double)size * (size + 1) / 2 + (double)size * (double)(k % 7);
        if (b[k] != want) {
          fprintf(stderr, "dred-bench-coll: wrong result at %zu on rank %d\n", k, rank);
          MPI_Abort(MPI_COMM_WORLD, 3);
        }
      }
    }
  }
  med = late_s > 0 ? median_after_last(st, en, reps, comm) : median_of_max(t, reps, comm);
  free(t); free(st); free(en);
  return med;
}

/* --conc: the j-th collective of a repetition has tag j; every member has waited for all K
 * before the next repetition starts, so no tag is reused while it is live.  --fresh-tags:
 * tag next_tag + j instead, a new tag per collective for the whole run (each explicit tag
 * is a stream of its own in the node's meeting place, whose 256 rings are never given
 * back: the rest of the run goes through dred-master once they are taken). */
static int fresh_tags, next_tag;
/* --in-order: dred's side issues its K in MPI's order too (to tell the shuffle's cost) */
static int in_order;

/* A permutation of 0..k-1 in perm, drawn from `seed` (xorshift; Fisher-Yates). */
static void shuffle(int *perm, int k, unsigned seed) {
  unsigned x = seed * 2654435761u + 0x9e3779b9u;
  for (int j = 0; j < k; j++) perm[j] = j;
  for (int j = k - 1; j > 0 && !in_order; j--) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    int r = (int)(x % (unsigned)(j + 1)), t = perm[j];
    perm[j] = perm[r];
    perm[r] = t;
  }
}

/* The bcast pattern of the j-th of K at byte k (its root fills it, the others check it). */
static unsigned char bcast_byte(int j, size_t k) {
  return (unsigned char)(k * 7 + (size_t)j * 13 + 1);
}

/* --conc: `k` collectives in flight per repetition (see the opening comment).  Returns the
 * median over repetitions of the slowest member's round, divided by k. */
static double run_conc(int which, size_t bytes, int reps, int k, MPI_Comm comm, int rank,
                       int size, const bufs_t *bf) {
  int bc = which == C_DRED_BCAST || which == C_MPI_BCAST;
  int dred = which == C_DRED_ALLREDUCE || which == C_DRED_BCAST;
  size_t n = bf->n;
  size_t len = bc ? bytes : n * sizeof(double); /* one result buffer */
  double *a = bf->a;
  unsigned char **buf = bf->buf;
  MPI_Request *req = malloc(sizeof(*req) * (size_t)k);
  /* a status array, not MPI_STATUSES_IGNORE: gcc's -Wstringop-overflow takes MPICH's
   * (MPI_Status *)1 for an array of size 0 */
  MPI_Status *sts = malloc(sizeof(*sts) * (size_t)k);
  dred_future **fut = malloc(sizeof(*fut) * (size_t)k);
  int *perm = malloc(sizeof(int) * (size_t)k);
  double *t = calloc((size_t)reps, sizeof(double)), med;
  if (req == NULL || sts == NULL || fut == NULL || perm == NULL || t == NULL) {
    fprintf(stderr, "dred-bench-coll: out of memory (--conc %d, %zu bytes)\n", k, bytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int j = 0; j < k; j++) /* the roots' data (an allreduce before wrote there) */
    if (bc && rank == j % size)
      for (size_t e = 0; e < bytes; e++) buf[j][e] = bcast_byte(j, e);
  for (int i = -warmups(bytes); i < reps; i++) {
    double t0;
    int base = fresh_tags ? next_tag : 0;
    next_tag += k;
    if (i == -1) /* the checked repetition: the results must come from this one */
      for (int j = 0; j < k; j++)
        if (!bc || rank != j % size) memset(buf[j], 0, len);
    if (dred) shuffle(perm, k, (unsigned)(rank * 7919 + (i + 2) * 104729 + k));
    sleepy_barrier(comm);
    t0 = now_s();
    if (dred) {
      for (int q = 0; q < k; q++) {
        int j = perm[q], rc;
        rc = bc ? dred_ibcast(buf[j], (int)bytes, MPI_BYTE, j % size, comm, base + j, &fut[j])
                : dred_iallreduce(a + j, buf[j], (int)n, MPI_DOUBLE, MPI_SUM, comm, base + j,
                                  &fut[j]);
        if (rc != DRED_OK) {
          fprintf(stderr, "dred-bench-coll: %s (tag %d, %d of %d in flight) refused: %s\n",
                  bc ? "dred_ibcast" : "dred_iallreduce", base + j, q + 1, k, dred_strerror(rc));
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
      }
      for (int q = 0; q < k; q++) {
        int j = perm[q], rc = dred_future_get(fut[j]);
        if (rc != DRED_OK) {
          fprintf(
              stderr, "dred-bench-coll: %s (tag %d, --conc %d, %zu bytes) failed on rank %d: %s\n",
              bc ? "dred_ibcast" : "dred_iallreduce", base + j, k, bytes, rank, dred_strerror(rc));
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
        dred_future_free(fut[j]);
      }
    } else {
      for (int j = 0; j < k; j++) {
        if (bc)
          MPI_Ibcast(buf[j], (int)bytes, MPI_BYTE, j % size, comm, &req[j]);
        else
          MPI_Iallreduce(a + j, buf[j], (int)n, MPI_DOUBLE, MPI_SUM, comm, &req[j]);
      }
      MPI_Waitall(k, req, sts);
    }
    if (i >= 0) t[i] = now_s() - t0;
    if (i == -1) {
      for (int j = 0; j < k; j++) {
        if (bc) {
          for (size_t e = 0; e < bytes; e++)
            if (buf[j][e] != bcast_byte(j, e)) {
              fprintf(stderr,
                      "dred-bench-coll: wrong %s result (--conc %d, bcast %d of root %d, "
                      "%zu bytes) at byte %zu on rank %d\n",
                      dred ? "dred" : "MPI (reference)", k, j, j % size, bytes, e, rank);
              MPI_Abort(MPI_COMM_WORLD, 3);
            }
        } else {
          const double *r = (const double *)buf[j];
          for (size_t e = 0; e < n; e++) {
            double want =
                (double)size * (size + 1) / 2 + (double)size * (double)((e + (size_t)j) % 7);
            if (r[e] != want) {
              fprintf(stderr,
                      "dred-bench-coll: wrong %s result (--conc %d, allreduce %d, %zu "
                      "bytes) at element %zu on rank %d: %g, want %g\n",
                      dred ? "dred" : "MPI (reference)", k, j, bytes, e, rank, r[e], want);
              MPI_Abort(MPI_COMM_WORLD, 3);
            }
          }
        }
      }
    }
  }
  med = median_of_max(t, reps, comm) / k;
  free(req);
  free(sts);
  free(fut);
  free(perm);
  free(t);
  return med;
}

/* The size after `bytes`: x8, and --max itself (8 MiB is not a power of 8). */
static size_t next_size(size_t bytes, size_t maxb) {
  return bytes * 8 > maxb && bytes < maxb ? maxb : bytes * 8;
}

#define MAX_CONC 16 /* entries in a --conc list */

/* A size argument: a whole number of bytes, optionally with K, M or G (KiB, MiB, GiB) as
 * the docs write them ("16M"); 0 for anything else, which main() refuses. */
static size_t bytes_arg(const char *s) {
  char *end;
  unsigned long long v;
  unsigned shift = 0;
  if (*s < '0' || *s > '9') return 0;
  v = strtoull(s, &end, 10);
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift > 0) end++;
  if (*end != '\0' || v > (1ull << 40) >> shift) return 0;
  return (size_t)(v << shift);
}

int main(int argc, char **argv) {
  int rank, size, reps_arg = 0, nconc = 0, conc[MAX_CONC];
  const char *bad_opt = NULL;
  double late = 0;
  size_t minb = 8, maxb = 8u << 20;
  const char *csv = NULL;
  FILE *cf = NULL;
  sleepy_default_mpi = 1; /* wait in MPI's blocking calls, as applications do */
  if (dred_init(&argc, &argv) != DRED_OK) return 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps_arg = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--min") && i + 1 < argc)
      minb = bytes_arg(argv[++i]);
    else if (!strcmp(argv[i], "--max") && i + 1 < argc)
      maxb = bytes_arg(argv[++i]);
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else if (!strcmp(argv[i], "--late") && i + 1 < argc)
      late = atof(argv[++i]);
    else if (!strcmp(argv[i], "--in-order"))
      in_order = 1;
    else if (!strcmp(argv[i], "--fresh-tags"))
      fresh_tags = 1;
    else if (!strcmp(argv[i], "--conc") && i + 1 < argc) {
      char *p = argv[++i], *end;
      nconc = 0;
      for (;;) {
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 4096 || nconc == MAX_CONC || (*end != ',' && *end != '\0')) {
          nconc = -1;
          break;
        }
        conc[nconc++] = (int)v;
        if (*end == '\0') break;
        p = end + 1;
      }
    } else {
      if (bad_opt == NULL) bad_opt = argv[i]; /* a typo must not run a sweep nobody asked for */
    }
  }
  MPI_Comm comm = dred_comm();
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (bad_opt != NULL || nconc < 0 || (nconc > 0 && late > 0) || minb < 1 || minb > maxb ||
      maxb > (size_t)1 << 30) {
    if (rank == 0)
      fprintf(stderr,
              "dred-bench-coll: bad arguments%s%s (options: --reps N, --min/--max BYTES "
              "with K, M or G allowed, 1 <= --min <= --max <= 1G; --csv FILE; --late K; --conc "
              "K[,K...], 1 to %d counts in 1..4096, not with --late; --in-order; --fresh-tags)\n",
              bad_opt != NULL ? ": unknown or incomplete option " : "",
              bad_opt != NULL ? bad_opt : "", MAX_CONC);
    dred_finalize();
    return 2;
  }
  if (rank == 0 && csv != NULL) {
    if ((cf = fopen(csv, "a")) == NULL)
      perror(csv);
    else if (ftell(cf) == 0)
      fprintf(cf,
              "mode,param,p,bytes,dred_allreduce_us,mpi_allreduce_us,dred_bcast_us,mpi_bcast_us\n");
  }
  for (int c = 0; c < (nconc > 0 ? nconc : 1); c++) {
    int k = nconc > 0 ? conc[c] : 0;
    if (rank == 0) {
      if (k > 0)
        printf(
            "dred-bench-coll: P=%d, K=%d collectives in flight per member (dred: explicit "
            "tags, issue order %s; MPI: the same order everywhere, "
            "MPI_Waitall); per collective: median over repetitions of the slowest member's "
            "round / K, blocking MPI waits between repetitions%s\n",
            size, k, in_order ? "MPI's" : "shuffled per member",
            fresh_tags ? "; a fresh dred tag per collective" : "");
      else if (late > 0)
        printf(
            "dred-bench-coll: P=%d, one member %.0f x MPI's time late per repetition (in "
            "turn); median of the last return minus the last arrival, blocking MPI waits "
            "between repetitions\n",
            size, late);
      else
        printf(
            "dred-bench-coll: P=%d, median of the slowest member per repetition, "
            "blocking MPI waits between repetitions\n",
            size);
      printf("%10s %14s %14s %8s %14s %14s %8s\n", "bytes", "dred_allred_us", "mpi_allred_us",
             "ratio", "dred_bcast_us", "mpi_bcast_us", "ratio");
      fflush(stdout);
    }
    for (size_t bytes = minb; bytes <= maxb; bytes = next_size(bytes, maxb)) {
      int reps = reps_arg > 0            ? reps_arg
                 : bytes <= (32u << 10)  ? 30
                 : bytes <= (16u << 20)  ? 15 /* a median of 7 moved by 2x at 2 MiB */
                                         : 7;
      double la = 0, lb = 0, da, ma, db, mb;
      bufs_t bf;
      bufs_alloc(&bf, bytes, k > 0 ? k : 1, rank);
      if (k > 0) {
        da = run_conc(C_DRED_ALLREDUCE, bytes, reps, k, comm, rank, size, &bf) * 1e6;
        ma = run_conc(C_MPI_ALLREDUCE, bytes, reps, k, comm, rank, size, &bf) * 1e6;
        db = run_conc(C_DRED_BCAST, bytes, reps, k, comm, rank, size, &bf) * 1e6;
        mb = run_conc(C_MPI_BCAST, bytes, reps, k, comm, rank, size, &bf) * 1e6;
      } else {
        if (late > 0) { /* how late: K x MPI's balanced time at this size */
          la = late * run(C_MPI_ALLREDUCE, bytes, reps, comm, rank, size, 0, &bf);
          lb = late * run(C_MPI_BCAST, bytes, reps, comm, rank, size, 0, &bf);
        }
        da = run(C_DRED_ALLREDUCE, bytes, reps, comm, rank, size, la, &bf) * 1e6;
        ma = run(C_MPI_ALLREDUCE, bytes, reps, comm, rank, size, la, &bf) * 1e6;
        db = run(C_DRED_BCAST, bytes, reps, comm, rank, size, lb, &bf) * 1e6;
        mb = run(C_MPI_BCAST, bytes, reps, comm, rank, size, lb, &bf) * 1e6;
      }
      bufs_free(&bf);
      if (rank == 0) {
        printf("%10zu %14.1f %14.1f %8.2f %14.1f %14.1f %8.2f\n", bytes, da, ma, da / ma, db, mb,
               db / mb);
        fflush(stdout);
        if (cf)
          fprintf(cf, "%s,%g,%d,%zu,%.2f,%.2f,%.2f,%.2f\n",
                  k > 0      ? "conc"
                  : late > 0 ? "late"
                             : "ideal",
                  k > 0 ? (double)k : late, size, bytes, da, ma, db, mb);
      }
      if (bytes == maxb) break;
    }
  }
  if (rank == 0) {
    printf("dred-bench-coll: all results verified\n"); /* a wrong one aborts the job */
    fflush(stdout);
  }
  if (cf) fclose(cf);
  return dred_finalize() == DRED_OK ? 0 : 1;
}
