/*
 * bench.c -- dred-bench: dred against MPICH's own MPI_Reduce / MPI_Ireduce, same processes,
 * same run, interleaved.
 *
 *   dredrun -n P dred-bench [--scenario ideal|unbalanced|slow|concurrent|bound|all[,...]]
 *                           [--sizes 128K,8M,32M] [--reps R] [--quick] [--k 0,1,10]
 *                           [--conc 4,8,16,28] [--csv FILE] [--summary FILE] ...
 *   (dred-bench --help lists every option.)
 *
 * What is timed
 * -------------
 * Every measurement starts from a common start T0.  All ranks meet in a barrier, dred_comm
 * rank 0 picks T0 = now + margin (20 ms) on CLOCK_MONOTONIC and broadcasts it, and every rank
 * sleeps until T0 (clock_nanosleep, absolute).  On one node CLOCK_MONOTONIC is one clock, so
 * all ranks leave at the same instant and every timestamp below is comparable across ranks.
 * (On several nodes the bench falls back to "T0 = the rank's own exit from the barrier" and
 * the cross-rank metrics unbalanced_tail/unbalanced_own are not meaningful; it says so.)
 *
 *  - ideal, slow, unbalanced: the ROOT's time, T0 -> the root has the result (dred_reduce
 *    returned / MPI_Reduce returned at the root).  This is the "seconds" column.
 *  - unbalanced also records two derived metrics as their own scenario rows:
 *      unbalanced_tail = root completion - the LAST rank's arrival (what is left after the
 *                        last rank arrives: the part an algorithm can change),
 *      unbalanced_own  = max over ranks of (own completion - own arrival) (seed 000, fig. 11:
 *                        each rank's communication time from its own arrival, max over ranks).
 *  - concurrent: max over ranks of (T0 -> that rank's last request complete), i.e. until all
 *    C reductions are complete everywhere.
 *
 * Outside the timed region every rank waits in MPI's own blocking calls (MPI_Wait on a
 * barrier), as applications do between reductions: MPICH's blocking calls busy-poll, so a
 * rank that finished early takes an oversubscribed core from the ranks still inside the
 * timed region -- from dred's runtime threads and dred-master too, which is the habit dred
 * must not lose to.  DRED_WAIT=sleep makes those waits sleeping polls instead (MPI_Test +
 * nanosleep doubling from 1 us to 500 us): the second case, where nobody spins.
 *
 * Fairness: dred and MPI alternate every repetition and the order flips every repetition
 * (even reps dred first, odd reps MPI first); one untimed warm-up repetition per point
 * (--warmup).  The send data changes every repetition; receive buffers are overwritten
 * with NaN before each call.  dred's result is compared bit for bit with MPI's (integer
 * valued doubles, MPI_SUM, so both are exact) every repetition and spot-checked against
 * the closed form; a mismatch or a dred error prints WRONG and makes the exit code 1.
 *
 * Scenarios
 * ---------
 *  ideal       sizes 128 KiB .. 128 MiB (quick: 128K, 8M, 32M).
 *              unbalanced and slow use 128K, 8M, 32M (quick: unbalanced 8M, slow 8M and 32M);
 *              --sizes replaces the sizes of every scenario.
 *  unbalanced  before each call every rank sleeps a random 0..k (same draws for both
 *              contenders in a repetition), k = 0, 1x, 10x the ideal MPI time for that size
 *              (taken from this run's ideal scenario, or calibrated with 3 MPI_Reduce).
 *              Time from T0, i.e. before the sleeps.  --delay busy spins instead of sleeping.
 *  slow        the ideal measurement, labelled "slow"; the CPU hogs are started OUTSIDE by
 *              tests/bench/run-bench.sh (stress-ng pinned to the last CPU) while this scenario
 *              runs, so they hit both contenders alike.  Use with --pin, which pins app rank r
 *              of P (all its threads) to CPU r*ncpu/P before MPI starts, so that the ranks on
 *              the hogged CPU are the slow workers (with 2 CPUs: ranks P/2..P-1, as if the
 *              second of two nodes were loaded; the root, rank 0, is not slowed).  --hogs N
 *              only labels the param column.
 *  concurrent  C in --conc reductions of 8 MiB in flight (dred_ireduce with tags 0..C-1,
 *              roots j % p) vs C MPI_Ireduce + MPI_Waitall.  With --send-mem pool the send
 *              buffers come from dred_alloc_mem (both contenders use them; rows are named
 *              concurrent-mem): dred's zero-copy hand-over.
 *  small       many small nonblocking reductions back to back (issue 11, point 4): sizes 8 B
 *              and 1 KiB (--small-sizes), K = 1, 4, 16, 64 in flight (--kin).  A round: every
 *              rank leaves a barrier (MPI's blocking wait with DRED_WAIT=mpi, as applications
 *              wait), starts K reductions with tags 0..K-1 and roots j % p (dred_ireduce, or
 *              MPI_Ireduce), then waits for all K (dred_future_get each, or MPI_Waitall).  The
 *              round time is the max over ranks of (own barrier exit -> own K done); the
 *              figure is the median over --rounds rounds of round time / K: the time one
 *              reduction costs at that depth.  dred and MPI alternate round by round (order
 *              flips every round); every root checks each result against the closed form.
 *  loop        the shape of the application (issue 11, point 4): --loop-iters N
 *              (3000) iterations of { ireduce 1 double to root 0; MPI_Allreduce of one int
 *              and MPI_Bcast of one double (blocking, MPI's own); wait for the reduction }.
 *              Total time of the loop (sum over chunks of --loop-chunk iterations, dred,
 *              MPI and the floor taking turns chunk by chunk; max over ranks per chunk), dred
 *              vs MPI_Ireduce + MPI_Wait; --reps repetitions; every result checked at the
 *              root.  The floor is the same loop with no reduction at all (the application's
 *              own collectives alone): what neither contender can beat, printed as a third
 *              row "loop_floor" (dred/floor and MPI/floor).
 *  overlap     osu_ireduce's measure of how much of a nonblocking reduction hides behind the
 *              application's computation: pure = max over ranks of (ireduce; wait) back to
 *              back; overall = (ireduce; compute for that contender's pure median, a loop
 *              with no MPI or dred call; wait); overlap = 100 * (1 - (overall - compute) /
 *              pure), clamped to 0..100.  dred_ireduce + dred_future_get vs MPI_Ireduce +
 *              MPI_Wait, each with its own pure time as compute; sizes 1M, 8M (quick) or
 *              1M, 8M, 32M; every result checked at the root.
 *  bound       memory bandwidth of this machine: a[i] += b[i] over two 32 MiB double arrays
 *              (reads 2n, writes n bytes, counted as 3n), best of 50 one-pass trials (a pass
 *              is shorter than a time slice, so the best trial is one nobody preempted),
 *              first by one process (B1), then by two processes at once (B2, aggregate).
 *              Lower bound of a reduction of n bytes over p ranks: (p-1) combines of 3n bytes:
 *              bound1 = (p-1)*3n/B1 (one core), bound2 = (p-1)*3n/max(B1,B2) (the machine: the
 *              combines spread over both cores, or one core when two do not add bandwidth; the
 *              ratio "dred/bound" uses bound2).  The copy of each operand into dred's pool and
 *              the tree depth are not in the bound: it is what memory bandwidth alone
 *              allows.  Needs ideal medians for its sizes and measures them if this run has
 *              not (default size 32M, or every ideal size with ideal/all).
 *
 * Output: progress lines on stdout (rank 0); --csv FILE gets one row per call:
 *   scenario,p,bytes,param,contender,rep,seconds,cpu_s,settle_s
 * (cpu_s: user+system CPU seconds summed over the application ranks, from before the
 * start barrier until the ranks are idle again after the call -- so dred's background
 * work (replica puts after the future completed) is charged to dred; it excludes
 * dred-master.  settle_s: max over ranks of how long that background work lasted after the
 * call returned; the next call starts only once every rank is idle, see settle()).  --summary FILE
 * (default: the csv name with -summary.csv) gets medians/min/max per point and the ratio
 * dred/mpi.  Both files are appended to; the header is written when a file is empty.
 */
/* Build with -Iworker only (not the library's -Imaster: master/sched.h would shadow the
 * system <sched.h> used for --pin). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dred.h"
#include "../mpi/sleepy_wait.h"

#define MAXLIST 64
#define KIB 1024ull
#define MIB (1024ull * 1024ull)

/* ---- options --------------------------------------------------------------------------- */
enum {
  S_IDEAL = 1, S_UNBAL = 2, S_SLOW = 4, S_CONC = 8, S_BOUND = 16, S_SMALL = 32, S_LOOP = 64,
  S_OVERLAP = 128
};
static struct {
  unsigned scen;
  size_t sizes[MAXLIST];
  int nsizes; /* 0: per-scenario defaults */
  int reps, warmup, quick, root;
  double k[MAXLIST];
  int nk;
  int conc[MAXLIST];
  int nconc;
  size_t conc_bytes;
  int send_pool; /* --send-mem pool: concurrent send buffers from dred_alloc_mem */
  const char *csv, *summary;
  double margin_ms;
  int pin, hogs, busy_delay;
  int run_dred, run_mpi, keep_going;
  double settle_max_s; /* quiesce after each call: wait up to this long (0: do not) */
  uint64_t seed;
  size_t small_sizes[MAXLIST];
  int nsmall_sizes;
  int kin[MAXLIST];
  int nkin;
  int rounds, loop_iters, loop_chunk;
} opt;

/* ---- process state ---------------------------------------------------------------------- */
static MPI_Comm comm;
static int rank, P, one_node = 1, any_wrong = 0, late_starts = 0;
/* rank 0: dred's timed seconds and calls, warm-ups included (master load per dred-second) */
static double dred_timed_s;
static long dred_timed_calls;
/* set on every rank after a WRONG repetition: the rest of the run is skipped (a dred error
 * such as a worker declared failed poisons every later reduction); --keep-going disables */
static int stop_all;
/* the last dred status this rank saw in run_one (its buffer is not compared if not OK: the
 * error is the report) */
static int last_dred_status;
static FILE *csv_f, *sum_f;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_until(double t) {
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

static double cpu_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* After a call, wait until this process's threads stop using CPU (below 10% of a core
 * over 10 ms), at most --settle-max s, and return how long that took.  dred completes a
 * future before its background work (replica puts) ends; without this the leftover work
 * would run during the next contender's repetition and be charged to it.  The CPU it uses
 * is charged to the call that caused it (cpu_s), its duration goes to settle_s. */
static double settle(void) {
  double t_start = now_s(), c_prev = cpu_now(), t_prev = t_start;
  if (opt.settle_max_s <= 0) return 0;
  for (;;) {
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
    double c = cpu_now(), t = now_s();
    if (c - c_prev < 0.1 * (t - t_prev) || t - t_start > opt.settle_max_s) break;
    c_prev = c;
    t_prev = t;
  }
  return now_s() - t_start;
}

static __attribute__((format(printf, 1, 2))) void say(const char *fmt, ...) {
  if (rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "dred-bench: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  exit(2);
}

static void idle_barrier(void) { sleepy_barrier(comm); }

static void idle_reduce(const double *in, double *out, int n, MPI_Op op) {
  MPI_Request r;
  MPI_Ireduce(in, out, n, MPI_DOUBLE, op, 0, comm, &r);
  sleepy_wait(&r);
}

static void idle_bcast(void *buf, int n, MPI_Datatype t) {
  MPI_Request r;
  MPI_Ibcast(buf, n, t, 0, comm, &r);
  sleepy_wait(&r);
}

/* The common start; see the header comment. */
static double sync_start(void) {
  double t0 = 0;
  idle_barrier();
  if (!one_node) return now_s();
  if (rank == 0) t0 = now_s() + opt.margin_ms * 1e-3;
  idle_bcast(&t0, 1, MPI_DOUBLE);
  if (now_s() > t0)
    late_starts++;
  else
    sleep_until(t0);
  return t0;
}

/* ---- data --------------------------------------------------------------------------------- */
/* Integer-valued, < 1024 per rank, so any summation order is exact. */
static inline double val(size_t i, int r, int rep, int j) {
  return (double)((i * 7u + (size_t)r * 13u + (size_t)rep * 5u + (size_t)j * 11u) & 1023u);
}

static void fill(double *buf, size_t count, int rep, int j) {
  for (size_t i = 0; i < count; i++) buf[i] = val(i, rank, rep, j);
}

static void zap(double *buf, size_t count) { memset(buf, 0xff, count * sizeof(double)); }

/* Root-side check: dred == MPI bit for bit, and both == the closed form at sampled points. */
static int check(const char *what, const double *d, const double *m, size_t count, int rep,
                 int j) {
  int bad = 0;
  if (d && m && memcmp(d, m, count * sizeof(double)) != 0) {
    size_t i = 0;
    while (i < count && memcmp(&d[i], &m[i], sizeof(double)) == 0) i++;
    printf("WRONG %s rep %d: dred differs from MPI at element %zu: dred %.17g mpi %.17g\n",
           what, rep, i, i < count ? d[i] : 0.0, i < count ? m[i] : 0.0);
    bad = 1;
  }
  size_t step = count > 4096 ? count / 4096 : 1;
  for (size_t i = 0; i < count && !bad; i += step) {
    double e = 0;
    for (int r = 0; r < P; r++) e += val(i, r, rep, j);
    if (d && d[i] != e) {
      printf("WRONG %s rep %d: dred element %zu = %.17g, expected %.17g\n", what, rep, i, d[i], e);
      bad = 1;
    }
    if (m && m[i] != e) {
      printf("WRONG %s rep %d: MPI element %zu = %.17g, expected %.17g\n", what, rep, i, m[i], e);
      bad = 1;
    }
  }
  if (bad) {
    any_wrong = 1;
    fflush(stdout);
  }
  return bad;
}

/* ---- results ------------------------------------------------------------------------------ */
typedef struct {
  char scen[24];
  size_t bytes;
  double param;
  int n;
  double dmed, dmin, dmax, mmed, mmin, mmax, dcpu, mcpu, dsettle, msettle;
  int wrong;
  double bound1, bound2;
} summary_t;
static summary_t sums[1024];
static int nsums;

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char *human(size_t b, char *buf) {
  if (b >= MIB && b % MIB == 0)
    sprintf(buf, "%zuM", (size_t)(b / MIB));
  else if (b >= KIB && b % KIB == 0)
    sprintf(buf, "%zuK", (size_t)(b / KIB));
  else
    sprintf(buf, "%zu", b);
  return buf;
}

static void csv_row(const char *scen, size_t bytes, double param, const char *who, int rep,
                    double sec, double cpu, double settle_s) {
  if (rank != 0 || !csv_f) return;
  fprintf(csv_f, "%s,%d,%zu,%g,%s,%d,%.9f,%.6f,%.6f\n", scen, P, bytes, param, who, rep, sec,
          cpu, settle_s);
  fflush(csv_f);
}

/* One point: per-rep arrays of dred and MPI times (root has them). */
static summary_t *record(const char *scen, size_t bytes, double param, double *d, double *dc,
                         double *ds, double *m, double *mc, double *ms, int n, int wrong) {
  if (rank != 0) return NULL;
  summary_t *s = &sums[nsums < 1023 ? nsums++ : 1023];
  memset(s, 0, sizeof *s);
  snprintf(s->scen, sizeof s->scen, "%s", scen);
  s->bytes = bytes;
  s->param = param;
  s->n = n;
  s->wrong = wrong;
  s->dmin = s->mmin = INFINITY;
  s->dmax = s->mmax = -INFINITY;
  for (int i = 0; i < n; i++) {
    if (d[i] < s->dmin) s->dmin = d[i];
    if (d[i] > s->dmax) s->dmax = d[i];
    if (m[i] < s->mmin) s->mmin = m[i];
    if (m[i] > s->mmax) s->mmax = m[i];
  }
  double *tmp = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  memcpy(tmp, d, sizeof(double) * (size_t)n);
  s->dmed = opt.run_dred ? median(tmp, n) : NAN;
  memcpy(tmp, m, sizeof(double) * (size_t)n);
  s->mmed = opt.run_mpi ? median(tmp, n) : NAN;
  memcpy(tmp, dc, sizeof(double) * (size_t)n);
  s->dcpu = opt.run_dred ? median(tmp, n) : NAN;
  memcpy(tmp, mc, sizeof(double) * (size_t)n);
  s->mcpu = opt.run_mpi ? median(tmp, n) : NAN;
  memcpy(tmp, ds, sizeof(double) * (size_t)n);
  s->dsettle = opt.run_dred ? median(tmp, n) : NAN;
  memcpy(tmp, ms, sizeof(double) * (size_t)n);
  s->msettle = opt.run_mpi ? median(tmp, n) : NAN;
  free(tmp);
  s->bound1 = s->bound2 = NAN;
  if (!opt.run_dred) s->dmin = s->dmax = NAN;
  if (!opt.run_mpi) s->mmin = s->mmax = NAN;
  char hb[32];
  printf("  %-16s %6s param %-6g  dred %9.3f ms [%8.3f..%8.3f]  mpi %9.3f ms [%8.3f..%8.3f]"
         "  dred/mpi %6.3f  cpu dred/mpi %6.3f/%6.3f s  dred settle %5.0f ms%s\n",
         scen, human(bytes, hb), param, 1e3 * s->dmed, 1e3 * s->dmin, 1e3 * s->dmax,
         1e3 * s->mmed, 1e3 * s->mmin, 1e3 * s->mmax, s->dmed / s->mmed, s->dcpu, s->mcpu,
         1e3 * s->dsettle, wrong ? "  WRONG" : "");
  fflush(stdout);
  return s;
}

static summary_t *find_sum(const char *scen, size_t bytes, double param) {
  for (int i = 0; i < nsums; i++)
    if (strcmp(sums[i].scen, scen) == 0 && sums[i].bytes == bytes && sums[i].param == param)
      return &sums[i];
  return NULL;
}

/* ---- single-reduction measurements (ideal, slow, unbalanced) ------------------------------- */
static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static double uniform01(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t h = splitmix(opt.seed ^ splitmix(a ^ splitmix(b ^ splitmix(c ^ splitmix(d)))));
  return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

static double *sendbuf, *dred_recv, *mpi_recv;
static size_t buf_count;

static void ensure_single_bufs(size_t count) {
  if (count <= buf_count) return;
  free(sendbuf);
  free(dred_recv);
  free(mpi_recv);
  sendbuf = malloc(count * sizeof(double));
  dred_recv = rank == opt.root ? malloc(count * sizeof(double)) : NULL;
  mpi_recv = rank == opt.root ? malloc(count * sizeof(double)) : NULL;
  if (!sendbuf || (rank == opt.root && (!dred_recv || !mpi_recv)))
    die("out of memory for %zu doubles", count);
  buf_count = count;
}

/* Runs one contender once.  delay: this rank's arrival offset after T0 (seconds).
 * out[0] = root time (T0 -> root done), out[1] = arrival, out[2] = end, out[3] = cpu (sum),
 * out[4] = errors (sum), out[5] = max(end - arrival), out[6] = max arrival,
 * out[7] = max settle time (background work after the call). */
static void run_one(int who_dred, size_t count, double delay, int rep, double out[8]) {
  double *recv = who_dred ? dred_recv : mpi_recv;
  if (rank == opt.root) zap(recv, count);
  double c0 = cpu_now();
  double t0 = sync_start();
  if (delay > 0) {
    if (opt.busy_delay)
      while (now_s() < t0 + delay) {}
    else
      sleep_until(t0 + delay);
  }
  double t_arr = now_s();
  int err = 0;
  if (who_dred) {
    int st = dred_reduce(sendbuf, rank == opt.root ? recv : NULL, (int)count, MPI_DOUBLE,
                         MPI_SUM, opt.root, comm);
    last_dred_status = st;
    if (st != DRED_OK) {
      fprintf(stdout, "WRONG dred_reduce rep %d on rank %d returned %d (%s)\n", rep, rank, st,
              dred_strerror(st));
      err = 1;
    }
  } else {
    if (MPI_Reduce(sendbuf, rank == opt.root ? recv : NULL, (int)count, MPI_DOUBLE, MPI_SUM,
                   opt.root, comm) != MPI_SUCCESS)
      err = 1;
  }
  double t_end = now_s();
  double q = settle();
  /* root time goes to rank 0 of comm (the bench's reporter) */
  double mx_in[4] = {t_end - t_arr, t_arr - t0, rank == opt.root ? t_end - t0 : 0.0, q};
  double mx_out[4] = {0, 0, 0, 0};
  double sm_in[2], sm_out[2] = {0, 0};
  idle_reduce(mx_in, mx_out, 4, MPI_MAX);
  sm_in[0] = cpu_now() - c0;
  sm_in[1] = err;
  idle_reduce(sm_in, sm_out, 2, MPI_SUM);
  if (rank == 0) {
    if (who_dred) {
      dred_timed_s += mx_out[2];
      dred_timed_calls++;
    }
    out[0] = mx_out[2];
    out[3] = sm_out[0];
    out[4] = sm_out[1];
    out[5] = mx_out[0];
    out[6] = mx_out[1];
    out[7] = mx_out[3];
  }
  out[1] = t_arr - t0;
  out[2] = t_end - t0;
}

/* A repetition's verdict, known at rank 0: report it, share it, and say whether the run
 * must stop (the first WRONG one, unless --keep-going).  Collective over the app ranks. */
static int wrong_verdict(int bad_all, const char *what, int rep, int *wrong) {
  if (rank == 0 && bad_all) {
    *wrong = 1;
    any_wrong = 1;
    say("WRONG %s rep %d (see above)\n", what, rep);
  }
  idle_bcast(&bad_all, 1, MPI_INT);
  if (bad_all && !opt.keep_going) {
    say("dred-bench: stopping the run after the first WRONG repetition (--keep-going to "
        "continue)\n");
    stop_all = 1;
    return 1;
  }
  return 0;
}

/* kmult < 0: no delays.  ideal_t: the ideal MPI median that k multiplies. */
static summary_t *measure_single(const char *scen, size_t bytes, double param, double kmult,
                                 double ideal_t) {
  size_t count = bytes / sizeof(double);
  ensure_single_bufs(count);
  int reps = opt.reps, n = 0, wrong = 0;
  double d[reps], dc[reps], m[reps], mc[reps], dsq[reps], msq[reps];
  double dt[reps], mt[reps], dow[reps], mow[reps];
  char what[96], hb[32];
  snprintf(what, sizeof what, "%s %s param %g", scen, human(bytes, hb), param);
  for (int rep = -opt.warmup; rep < reps; rep++) {
    int rr = rep < 0 ? 1000 + rep : rep; /* data/draw index */
    fill(sendbuf, count, rr, 0);
    double delay = 0;
    if (kmult > 0)
      delay = kmult * ideal_t * uniform01(bytes, (uint64_t)(kmult * 1000), (uint64_t)rr,
                                          (uint64_t)rank);
    double od[8] = {0}, om[8] = {0};
    int dred_first = (rep & 1) == 0;
    for (int c = 0; c < 2; c++) {
      int who_dred = (c == 0) == dred_first;
      if (who_dred && opt.run_dred) run_one(1, count, delay, rr, od);
      if (!who_dred && opt.run_mpi) run_one(0, count, delay, rr, om);
    }
    int bad = 0;
    if (rank == opt.root) {
      char w2[128];
      snprintf(w2, sizeof w2, "%.100s", what);
      bad = check(w2, opt.run_dred && last_dred_status == DRED_OK ? dred_recv : NULL,
                  opt.run_mpi ? mpi_recv : NULL, count, rr, 0);
    }
    /* errors reported by dred on any rank, and the root's check, reach rank 0 */
    int bad_all = 0;
    {
      MPI_Request r;
      MPI_Iallreduce(&bad, &bad_all, 1, MPI_INT, MPI_MAX, comm, &r);
      sleepy_wait(&r);
    }
    if (rank == 0 && (od[4] > 0 || om[4] > 0)) bad_all = 1;
    if (wrong_verdict(bad_all, what, rep, &wrong)) break;
    if (rep < 0 || rank != 0) continue;
    d[n] = od[0]; dc[n] = od[3]; m[n] = om[0]; mc[n] = om[3]; dsq[n] = od[7]; msq[n] = om[7];
    dt[n] = od[0] - od[6]; mt[n] = om[0] - om[6]; /* root done - last arrival */
    dow[n] = od[5]; mow[n] = om[5];
    n++;
    if (opt.run_dred) csv_row(scen, bytes, param, "dred", rep, od[0], od[3], od[7]);
    if (opt.run_mpi) csv_row(scen, bytes, param, "mpi", rep, om[0], om[3], om[7]);
    if (kmult >= 0) {
      if (opt.run_dred) csv_row("unbalanced_tail", bytes, param, "dred", rep, dt[n - 1], od[3], od[7]);
      if (opt.run_mpi) csv_row("unbalanced_tail", bytes, param, "mpi", rep, mt[n - 1], om[3], om[7]);
      if (opt.run_dred) csv_row("unbalanced_own", bytes, param, "dred", rep, dow[n - 1], od[3], od[7]);
      if (opt.run_mpi) csv_row("unbalanced_own", bytes, param, "mpi", rep, mow[n - 1], om[3], om[7]);
    }
  }
  summary_t *s = record(scen, bytes, param, d, dc, dsq, m, mc, msq, n, wrong);
  if (kmult >= 0 && rank == 0) {
    record("unbalanced_tail", bytes, param, dt, dc, dsq, mt, mc, msq, n, wrong);
    record("unbalanced_own", bytes, param, dow, dc, dsq, mow, mc, msq, n, wrong);
    s = find_sum(scen, bytes, param);
  }
  return s;
}

/* The ideal MPI median for `bytes`, agreed by all ranks. */
static double ideal_mpi_time(size_t bytes) {
  double t = 0;
  if (rank == 0) {
    summary_t *s = find_sum("ideal", bytes, 0);
    t = s && opt.run_mpi ? s->mmed : -1;
  }
  idle_bcast(&t, 1, MPI_DOUBLE);
  if (t > 0) return t;
  /* calibrate: 3 timed MPI_Reduce at this size, median at the root */
  size_t count = bytes / sizeof(double);
  ensure_single_bufs(count);
  double v[3], o[8];
  fill(sendbuf, count, 999, 0);
  run_one(0, count, 0, 999, o); /* warm-up */
  for (int i = 0; i < 3; i++) {
    run_one(0, count, 0, 999, o);
    v[i] = o[0];
  }
  if (rank == 0) t = median(v, 3);
  idle_bcast(&t, 1, MPI_DOUBLE);
  char hb[32];
  say("  (calibrated ideal MPI time for %s: %.3f ms)\n", human(bytes, hb), 1e3 * t);
  return t;
}

/* ---- concurrent -------------------------------------------------------------------------- */
static void measure_conc(int C) {
  size_t bytes = opt.conc_bytes, count = bytes / sizeof(double);
  double **snd = calloc((size_t)C, sizeof *snd), **dr = calloc((size_t)C, sizeof *dr),
         **mr = calloc((size_t)C, sizeof *mr);
  dred_future **f = calloc((size_t)C, sizeof *f);
  int *fst = calloc((size_t)C, sizeof *fst); /* dred status per reduction */
  MPI_Request *req = calloc((size_t)C, sizeof *req);
  MPI_Status *sts = calloc((size_t)C, sizeof *sts); /* not MPI_STATUSES_IGNORE: gcc 12 warns */
  if (!snd || !dr || !mr || !f || !req || !sts || !fst) die("out of memory");
  for (int j = 0; j < C; j++) {
    if (opt.send_pool) {
      /* the zero-copy hand-over (issue 15): dred reads the operand in place; MPI reads the
       * same buffer, so both contenders get the same memory */
      if (dred_alloc_mem(bytes, (void **)&snd[j]) != DRED_OK)
        die("dred_alloc_mem of concurrent send %d failed: raise DRED_POOL_MB (needs %d x %zu "
            "MiB beside the reductions' own blocks)", j, C, bytes >> 20);
    } else {
      snd[j] = malloc(bytes);
    }
    if (!snd[j]) die("out of memory (concurrent send %d)", j);
    if (j % P == rank) {
      dr[j] = malloc(bytes);
      mr[j] = malloc(bytes);
      if (!dr[j] || !mr[j]) die("out of memory (concurrent recv %d)", j);
    }
  }
  int reps = opt.reps, n = 0, wrong = 0;
  double d[reps], dc[reps], m[reps], mc[reps], dsq[reps], msq[reps];
  char what[96], hb[32];
  const char *scen = opt.send_pool ? "concurrent-mem" : "concurrent";
  snprintf(what, sizeof what, "concurrent %d x %s%s", C, human(bytes, hb),
           opt.send_pool ? " (send buffers from dred_alloc_mem)" : "");
  for (int rep = -opt.warmup; rep < reps; rep++) {
    int rr = rep < 0 ? 1000 + rep : rep;
    for (int j = 0; j < C; j++) fill(snd[j], count, rr, j);
    double res[2][3] = {{0, 0, 0}, {0, 0, 0}}; /* [dred/mpi][time, cpu, settle] */
    int errs[2] = {0, 0};
    int dred_first = (rep & 1) == 0;
    for (int c = 0; c < 2; c++) {
      int who_dred = (c == 0) == dred_first;
      if ((who_dred && !opt.run_dred) || (!who_dred && !opt.run_mpi)) continue;
      for (int j = 0; j < C; j++)
        if (j % P == rank) zap(who_dred ? dr[j] : mr[j], count);
      double c0 = cpu_now();
      double t0 = sync_start();
      int err = 0;
      if (who_dred) {
        for (int j = 0; j < C; j++) {
          int st = dred_ireduce(snd[j], dr[j], (int)count, MPI_DOUBLE, MPI_SUM, j % P, comm, j,
                                &f[j]);
          fst[j] = st;
          if (st != DRED_OK) {
            printf("WRONG dred_ireduce %d rep %d rank %d: %s\n", j, rep, rank, dred_strerror(st));
            f[j] = NULL;
            err++;
          }
        }
        for (int j = 0; j < C; j++) {
          if (!f[j]) continue;
          int st = dred_future_get(f[j]);
          fst[j] = st;
          if (st != DRED_OK) {
            printf("WRONG concurrent %d rep %d rank %d: %s\n", j, rep, rank, dred_strerror(st));
            err++;
          }
          dred_future_free(f[j]);
        }
      } else {
        for (int j = 0; j < C; j++)
          MPI_Ireduce(snd[j], mr[j], (int)count, MPI_DOUBLE, MPI_SUM, j % P, comm, &req[j]);
        if (MPI_Waitall(C, req, sts) != MPI_SUCCESS) err++;
      }
      double tq[2] = {now_s() - t0, 0}, tqmax[2] = {0, 0}, cs[2] = {0, 0}, cin[2];
      tq[1] = settle();
      idle_reduce(tq, tqmax, 2, MPI_MAX);
      double tmax = tqmax[0];
      cin[0] = cpu_now() - c0;
      cin[1] = err;
      idle_reduce(cin, cs, 2, MPI_SUM);
      if (who_dred && rank == 0) {
        dred_timed_s += tmax;
        dred_timed_calls += C;
      }
      res[!who_dred][0] = tmax;
      res[!who_dred][1] = cs[0];
      res[!who_dred][2] = tqmax[1];
      errs[!who_dred] = (int)cs[1];
    }
    int bad = 0, bad_all = 0;
    for (int j = 0; j < C; j++)
      if (j % P == rank) {
        char w2[128];
        snprintf(w2, sizeof w2, "%.90s #%d", what, j);
        bad |= check(w2, opt.run_dred && fst[j] == DRED_OK ? dr[j] : NULL,
                     opt.run_mpi ? mr[j] : NULL, count, rr, j);
      }
    MPI_Request r;
    MPI_Iallreduce(&bad, &bad_all, 1, MPI_INT, MPI_MAX, comm, &r);
    sleepy_wait(&r);
    if (rank == 0 && (errs[0] || errs[1])) bad_all = 1;
    if (wrong_verdict(bad_all, what, rep, &wrong)) break;
    if (rep < 0 || rank != 0) continue;
    d[n] = res[0][0]; dc[n] = res[0][1]; m[n] = res[1][0]; mc[n] = res[1][1];
    dsq[n] = res[0][2]; msq[n] = res[1][2];
    n++;
    if (opt.run_dred)
      csv_row(scen, bytes, C, "dred", rep, res[0][0], res[0][1], res[0][2]);
    if (opt.run_mpi) csv_row(scen, bytes, C, "mpi", rep, res[1][0], res[1][1], res[1][2]);
  }
  record(scen, bytes, C, d, dc, dsq, m, mc, msq, n, wrong);
  for (int j = 0; j < C; j++) {
    if (opt.send_pool) dred_free_mem(snd[j]);
    else free(snd[j]);
    free(dr[j]);
    free(mr[j]);
  }
  free(snd); free(dr); free(mr); free(f); free(req); free(sts); free(fst);
}


/* ---- small: many small reductions in flight ---------------------------------------------- */
/* Collective: elementwise max over ranks of v[0..n-1], result at rank 0 (in place there). */
static void max_to_root(double *v, int n) {
  MPI_Request r;
  if (rank == 0)
    MPI_Ireduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, 0, comm, &r);
  else
    MPI_Ireduce(v, NULL, n, MPI_DOUBLE, MPI_MAX, 0, comm, &r);
  sleepy_wait(&r);
}

/* Exact check of reduction j's result at its root against the closed form. */
static int check_small(const char *who, const double *d, size_t count, int round, int j, int K) {
  for (size_t i = 0; i < count; i++) {
    double e = 0;
    for (int r = 0; r < P; r++) e += val(i, r, round, j);
    if (d[i] != e) {
      printf("WRONG small %s %zu B K=%d round %d #%d: element %zu = %.17g, expected %.17g\n", who,
             count * sizeof(double), K, round, j, i, d[i], e);
      fflush(stdout);
      return 1;
    }
  }
  return 0;
}

static void measure_small(size_t bytes, int K) {
  size_t count = bytes / sizeof(double);
  int R = opt.rounds, wrong = 0, n = 0;
  double *snd = malloc((size_t)K * bytes), *rcv = malloc((size_t)K * bytes);
  dred_future **f = calloc((size_t)K, sizeof *f);
  MPI_Request *req = calloc((size_t)K, sizeof *req);
  MPI_Status *sts = calloc((size_t)K, sizeof *sts);
  double *t[2], *z = calloc((size_t)R, sizeof(double));
  int errs[2] = {0, 0};
  t[0] = calloc((size_t)(R + 1), sizeof(double));
  t[1] = calloc((size_t)(R + 1), sizeof(double));
  if (!snd || !rcv || !f || !req || !sts || !t[0] || !t[1] || !z) die("out of memory (small)");
  for (int round = -opt.warmup; round < R; round++) {
    int rr = round < 0 ? 1000 + round : round;
    int dred_first = (rr & 1) == 0;
    for (int c = 0; c < 2; c++) {
      int who_dred = (c == 0) == dred_first;
      if ((who_dred && !opt.run_dred) || (!who_dred && !opt.run_mpi)) continue;
      for (int j = 0; j < K; j++) fill(snd + (size_t)j * count, count, rr, j);
      memset(rcv, 0xff, (size_t)K * bytes);
      idle_barrier(); /* by default MPI's own blocking wait, as applications do */
      double t0 = now_s();
      if (who_dred) {
        for (int j = 0; j < K; j++) {
          int st = dred_ireduce(snd + (size_t)j * count, rcv + (size_t)j * count, (int)count,
                                MPI_DOUBLE, MPI_SUM, j % P, comm, j, &f[j]);
          if (st != DRED_OK) {
            printf("WRONG small dred_ireduce #%d round %d rank %d: %s\n", j, rr, rank,
                   dred_strerror(st));
            f[j] = NULL;
            errs[0]++;
          }
        }
        for (int j = 0; j < K; j++) {
          if (!f[j]) continue;
          int st = dred_future_get(f[j]);
          if (st != DRED_OK) {
            printf("WRONG small dred #%d round %d rank %d: %s\n", j, rr, rank, dred_strerror(st));
            errs[0]++;
          }
          dred_future_free(f[j]);
        }
      } else {
        for (int j = 0; j < K; j++)
          MPI_Ireduce(snd + (size_t)j * count, j % P == rank ? rcv + (size_t)j * count : NULL,
                      (int)count, MPI_DOUBLE, MPI_SUM, j % P, comm, &req[j]);
        if (MPI_Waitall(K, req, sts) != MPI_SUCCESS) errs[1]++;
      }
      double el = now_s() - t0;
      for (int j = 0; j < K; j++)
        if (j % P == rank)
          errs[!who_dred] += check_small(who_dred ? "dred" : "mpi", rcv + (size_t)j * count,
                                         count, rr, j, K);
      if (round >= 0) t[!who_dred][round] = el;
    }
  }
  t[0][R] = errs[0];
  t[1][R] = errs[1];
  max_to_root(t[0], R + 1);
  max_to_root(t[1], R + 1);
  if (rank == 0) {
    wrong = t[0][R] > 0 || t[1][R] > 0;
    if (wrong) any_wrong = 1;
    for (int i = 0; i < R; i++) {
      t[0][i] /= K;
      t[1][i] /= K;
      if (opt.run_dred) csv_row("small", bytes, K, "dred", i, t[0][i], 0, 0);
      if (opt.run_mpi) csv_row("small", bytes, K, "mpi", i, t[1][i], 0, 0);
    }
    n = R;
    record("small", bytes, K, t[0], z, z, t[1], z, z, n, wrong);
  }
  free(snd); free(rcv); free(f); free(req); free(sts); free(t[0]); free(t[1]); free(z);
}

/* ---- overlap (osu_ireduce's measure) ------------------------------------------------------ */

/* One call of one contender, every rank: ireduce, then compute for compute_s (0: none),
 * then wait.  Returns the max over ranks of the time from the common start (rank 0). */
static double overlap_once(int who_dred, size_t count, double compute_s, int *err) {
  double *recv = who_dred ? dred_recv : mpi_recv;
  double t0, t, mx = 0;
  if (rank == opt.root) zap(recv, count);
  t0 = sync_start();
  if (who_dred) {
    dred_future *f = NULL;
    int st = dred_ireduce(sendbuf, rank == opt.root ? recv : NULL, (int)count, MPI_DOUBLE,
                          MPI_SUM, opt.root, comm, DRED_TAG_AUTO, &f);
    if (st == DRED_OK) {
      double until = now_s() + compute_s;
      while (now_s() < until) {} /* the application's computation: no MPI, no dred call */
      st = dred_future_get(f);
      dred_future_free(f);
    }
    if (st != DRED_OK) (*err)++;
  } else {
    MPI_Request r;
    double until;
    if (MPI_Ireduce(sendbuf, rank == opt.root ? recv : NULL, (int)count, MPI_DOUBLE, MPI_SUM,
                    opt.root, comm, &r) != MPI_SUCCESS)
      (*err)++;
    until = now_s() + compute_s;
    while (now_s() < until) {}
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  t = now_s() - t0;
  (void)settle(); /* dred's background work stays out of the next call */
  idle_reduce(&t, &mx, 1, MPI_MAX);
  return mx;
}

static void measure_overlap(size_t bytes) {
  size_t count = bytes / sizeof(double);
  int reps = opt.reps, n = 0, wrong = 0;
  double pd[reps], pm[reps], od[reps], om[reps], z[reps], pure[2] = {0, 0};
  char what[64], hb[32];
  ensure_single_bufs(count);
  memset(z, 0, sizeof z);
  snprintf(what, sizeof what, "overlap %s", human(bytes, hb));
  /* phase 0: pure times (compute 0); phase 1: compute for each contender's pure median */
  for (int phase = 0; phase < 2 && !stop_all; phase++) {
    n = 0;
    for (int rep = -opt.warmup; rep < reps; rep++) {
      int rr = rep < 0 ? 1000 + rep : rep, err = 0, bad = 0, bad_all = 0;
      double td = 0, tm = 0;
      fill(sendbuf, count, rr + 100 * phase, 0);
      for (int c = 0; c < 2; c++) {
        int who_dred = (c == 0) == ((rep & 1) == 0);
        if (who_dred && opt.run_dred) td = overlap_once(1, count, phase ? pure[0] : 0, &err);
        if (!who_dred && opt.run_mpi) tm = overlap_once(0, count, phase ? pure[1] : 0, &err);
      }
      if (rank == opt.root)
        bad = check(what, opt.run_dred ? dred_recv : NULL, opt.run_mpi ? mpi_recv : NULL, count,
                    rr + 100 * phase, 0);
      bad |= err != 0;
      {
        MPI_Request r;
        MPI_Iallreduce(&bad, &bad_all, 1, MPI_INT, MPI_MAX, comm, &r);
        sleepy_wait(&r);
      }
      if (wrong_verdict(bad_all, what, rep, &wrong)) break;
      if (rep < 0 || rank != 0) continue;
      if (phase == 0) pd[n] = td, pm[n] = tm;
      else od[n] = td, om[n] = tm;
      if (opt.run_dred) csv_row(phase ? "overlap_overall" : "overlap_pure", bytes, 0, "dred", rep, td, 0, 0);
      if (opt.run_mpi) csv_row(phase ? "overlap_overall" : "overlap_pure", bytes, 0, "mpi", rep, tm, 0, 0);
      n++;
    }
    if (phase == 0) {
      if (rank == 0) {
        double a[reps], b[reps];
        memcpy(a, pd, sizeof(double) * (size_t)n);
        memcpy(b, pm, sizeof(double) * (size_t)n);
        pure[0] = median(a, n);
        pure[1] = median(b, n);
      }
      idle_bcast(pure, 2, MPI_DOUBLE);
    }
  }
  if (rank != 0 || stop_all) return;
  record("overlap_pure", bytes, 0, pd, z, z, pm, z, z, n, wrong);
  record("overlap_overall", bytes, 0, od, z, z, om, z, z, n, wrong);
  {
    double a[reps], b[reps], ovd, ovm, ptd, ptm;
    memcpy(a, od, sizeof(double) * (size_t)n);
    memcpy(b, om, sizeof(double) * (size_t)n);
    ovd = median(a, n);
    ovm = median(b, n);
    ptd = 100.0 * (1.0 - (ovd - pure[0]) / pure[0]);
    ptm = 100.0 * (1.0 - (ovm - pure[1]) / pure[1]);
    ptd = ptd < 0 ? 0 : ptd > 100 ? 100 : ptd;
    ptm = ptm < 0 ? 0 : ptm > 100 ? 100 : ptm;
    say("  overlap %6s  dred: pure %9.3f ms, overall %9.3f ms, overlap %5.1f%%   "
        "MPI: pure %9.3f ms, overall %9.3f ms, overlap %5.1f%%\n",
        human(bytes, hb), 1e3 * pure[0], 1e3 * ovd, ptd, 1e3 * pure[1], 1e3 * ovm, ptm);
    if (csv_f) {
      fprintf(csv_f, "overlap_pct,%d,%zu,0,dred,0,%.3f,0,0\n", P, bytes, ptd);
      fprintf(csv_f, "overlap_pct,%d,%zu,0,mpi,0,%.3f,0,0\n", P, bytes, ptm);
      fflush(csv_f);
    }
  }
}

/* The application shape: small ireduce calls mixed with the application's own
 * blocking collectives, back to back.  The N iterations run in chunks of --loop-chunk, the
 * contenders taking turns chunk by chunk (the order rotating every round of turns), so a
 * machine whose load drifts during the minutes this takes charges all alike; each
 * contender's total is the sum of its chunks (max over ranks per chunk).  One repetition
 * per --reps.  Contenders: LOOP_DRED, LOOP_MPI, and LOOP_FLOOR -- no reduction at all, the
 * application's collectives alone: what a reduction riding on them costs is the distance to
 * that floor, and no implementation can be faster than it. */
enum { LOOP_DRED, LOOP_MPI, LOOP_FLOOR, LOOP_WHO };
static const char *const loop_who[LOOP_WHO] = {"dred", "mpi", "none"};

static void loop_chunk(int who, int it0, int n, double errs[LOOP_WHO]) {
  for (int it = it0; it < it0 + n; it++) {
    double in = val(0, rank, it, 3), out = NAN, b = rank == 0 ? (double)it : -1.0;
    int one = 1, sum = 0;
    dred_future *fu = NULL;
    MPI_Request r = MPI_REQUEST_NULL;
    if (who == LOOP_DRED) {
      int st = dred_ireduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, 0, comm, DRED_TAG_AUTO, &fu);
      if (st != DRED_OK) errs[who]++, fu = NULL;
    } else if (who == LOOP_MPI) {
      MPI_Ireduce(&in, rank == 0 ? &out : NULL, 1, MPI_DOUBLE, MPI_SUM, 0, comm, &r);
    }
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    MPI_Bcast(&b, 1, MPI_DOUBLE, 0, comm);
    if (sum != P || b != (double)it) errs[who]++;
    if (who == LOOP_DRED) {
      if (fu != NULL) {
        if (dred_future_get(fu) != DRED_OK) errs[who]++;
        dred_future_free(fu);
      }
    } else if (who == LOOP_MPI) {
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    if (rank == 0 && who != LOOP_FLOOR) {
      double e = 0;
      for (int q = 0; q < P; q++) e += val(0, q, it, 3);
      if (out != e) {
        if (errs[who] == 0)
          printf("WRONG loop %s iteration %d: %.17g, expected %.17g\n", loop_who[who], it, out, e);
        errs[who]++;
      }
    }
  }
}

static void measure_loop(void) {
  int N = opt.loop_iters, reps = opt.reps, wrong = 0, nrec = 0, C = opt.loop_chunk;
  double d[reps], m[reps], f[reps], z[reps];
  memset(z, 0, sizeof z);
  if (C < 1 || C > N) C = N;
  for (int rep = -opt.warmup; rep < reps; rep++) {
    double el[LOOP_WHO] = {0, 0, 0}, errs[LOOP_WHO] = {0, 0, 0}, tot[LOOP_WHO + 1];
    for (int it0 = 0, turn = 0; it0 < N; it0 += C, turn++) {
      int n = N - it0 < C ? N - it0 : C;
      for (int c = 0; c < LOOP_WHO; c++) {
        int who = ((c + turn + rep) % LOOP_WHO + LOOP_WHO) % LOOP_WHO; /* rep < 0: warm-up */
        double e, emax = 0;
        if ((who == LOOP_DRED && !opt.run_dred) || (who == LOOP_MPI && !opt.run_mpi)) continue;
        idle_barrier();
        e = now_s();
        loop_chunk(who, it0, n, errs);
        e = now_s() - e;
        MPI_Allreduce(&e, &emax, 1, MPI_DOUBLE, MPI_MAX, comm); /* outside the chunk */
        el[who] += emax;
      }
    }
    memcpy(tot, el, sizeof el);
    tot[LOOP_WHO] = errs[0] + errs[1] + errs[2];
    max_to_root(tot, LOOP_WHO + 1);
    if (rank == 0 && tot[LOOP_WHO] > 0) wrong = any_wrong = 1;
    if (rep < 0 || rank != 0) continue;
    d[nrec] = tot[LOOP_DRED];
    m[nrec] = tot[LOOP_MPI];
    f[nrec] = tot[LOOP_FLOOR];
    for (int w = 0; w < LOOP_WHO; w++)
      if ((w != LOOP_DRED || opt.run_dred) && (w != LOOP_MPI || opt.run_mpi))
        csv_row("loop", 8, N, loop_who[w], rep, tot[w], 0, 0);
    nrec++;
  }
  if (rank == 0) {
    double fl;
    record("loop", 8, N, d, z, z, m, z, z, nrec, wrong);
    fl = median(f, nrec);
    say("  loop_floor       no reduction %9.3f ms  dred/floor %6.3f  mpi/floor %6.3f\n", 1e3 * fl,
        opt.run_dred ? median(d, nrec) / fl : NAN, opt.run_mpi ? median(m, nrec) / fl : NAN);
  }
}

/* ---- memory bandwidth bound -------------------------------------------------------------- */
static void add_kernel(double *__restrict a, const double *__restrict b, size_t n) {
  for (size_t i = 0; i < n; i++) a[i] += b[i];
}

/* Best aggregate bandwidth (bytes/s) with ranks 0..nproc-1 combining at once; others idle.
 * Each trial is ONE pass (a few ms, shorter than a scheduler time slice), started by all
 * participants at the common start and timed from it to the slowest one's end (so two
 * passes that did not overlap cannot count as double bandwidth); best of `trials`, so a
 * trial in which another process got the core does not count.  *med gets the median. */
static double bandwidth(int nproc, double *med) {
  const size_t n = 32 * MIB / sizeof(double);
  enum { trials = 50 };
  double *a = NULL, *b = NULL, best = 0, all[trials];
  if (rank < nproc) {
    a = malloc(n * sizeof *a);
    b = malloc(n * sizeof *b);
    if (!a || !b) die("out of memory (bandwidth)");
    for (size_t i = 0; i < n; i++) { a[i] = 1.0; b[i] = 1e-9; }
    add_kernel(a, b, n); /* warm */
  }
  for (int t = 0; t < trials; t++) {
    double t0 = sync_start();
    double el = 0, elmax = 0;
    if (rank < nproc) {
      double s = one_node ? t0 : now_s();
      add_kernel(a, b, n);
      el = now_s() - s; /* from the common start: a late start cannot fake overlap */
    }
    idle_reduce(&el, &elmax, 1, MPI_MAX);
    double bw = (double)nproc * 3.0 * (double)(n * sizeof(double)) / elmax;
    all[t] = bw;
    if (rank == 0 && bw > best) best = bw;
  }
  if (rank < nproc) {
    volatile double sink = a[n / 2];
    (void)sink;
  }
  free(a);
  free(b);
  double m = rank == 0 ? median(all, trials) : 0;
  idle_bcast(&best, 1, MPI_DOUBLE);
  idle_bcast(&m, 1, MPI_DOUBLE);
  if (med) *med = m;
  return best;
}

/* ---- option parsing ------------------------------------------------------------------------ */
static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  size_t mul = 1;
  if (*end == 'k' || *end == 'K') mul = KIB, end++;
  else if (*end == 'm' || *end == 'M') mul = MIB, end++;
  else if (*end == 'g' || *end == 'G') mul = 1024 * MIB, end++;
  if (*end == 'i' || *end == 'I') end++;
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0' || v <= 0) die("bad size '%s'", s);
  size_t b = (size_t)(v * (double)mul);
  b -= b % sizeof(double);
  if (b == 0 || b / sizeof(double) > (size_t)INT32_MAX) die("size '%s' out of range", s);
  return b;
}

static int split(char *s, char **out) {
  int n = 0;
  for (char *tok = strtok(s, ","); tok && n < MAXLIST; tok = strtok(NULL, ",")) out[n++] = tok;
  return n;
}

static void usage(void) {
  say("usage: dredrun -n P dred-bench [options]\n"
      "  --scenario LIST   ideal,unbalanced,slow,concurrent,bound,small,loop,overlap or all (default all\n"
      "                    = ideal,unbalanced,concurrent,bound)\n"
      "  --sizes LIST      message sizes, e.g. 128K,1M,8M,32M,128M (default per scenario)\n"
      "  --reps R          timed repetitions per point (default 7)\n"
      "  --warmup W        untimed repetitions per point (default 1)\n"
      "  --quick           fewer sizes (ideal 128K,8M,32M; unbalanced 8M; slow 8M,32M)\n"
      "  --k LIST          unbalanced delay multipliers of the ideal MPI time (default 0,1,10)\n"
      "  --conc LIST       concurrent reductions in flight (default 4,8,16,28)\n"
      "  --conc-size S     size of each concurrent reduction (default 8M)\n"
      "  --send-mem malloc|pool  concurrent: send buffers from malloc (default) or from\n"
      "                    dred_alloc_mem, which dred reads in place (size DRED_POOL_MB for them)\n"
      "  --small-sizes L   sizes of the small scenario (default 8,1K)\n"
      "  --kin LIST        small: reductions in flight per round (default 1,4,16,64)\n"
      "  --rounds N        small: timed rounds per point (default 60; quick 30)\n"
      "  --loop-iters N    loop: iterations (default 3000)\n"
      "  --loop-chunk N    loop: dred and MPI alternate every N iterations (default 100)\n"
      "  --csv FILE        per-call rows (appended)\n"
      "  --summary FILE    per-point medians (default: CSV name with -summary.csv)\n"
      "  --root R          root of the single reductions (default 0)\n"
      "  --pin             pin app rank r of P to CPU r*ncpu/P before MPI starts (slow scenario)\n"
      "  --hogs N          label: CPU hogs running outside (param column of 'slow')\n"
      "  --delay sleep|busy  how a late rank waits in 'unbalanced' (default sleep)\n"
      "  --only dred|mpi   run one contender only (e.g. to measure dred-master's load)\n"
      "  --margin-ms M     common-start margin (default 20)\n"
      "  --seed S          seed of the arrival draws (default 1)\n"
      "  --keep-going      do not stop the run at the first WRONG repetition\n"
      "  --settle-max S    after each call wait up to S s for the process to go idle (default\n"
      "                    10; 0 = do not wait)\n");
}

static void parse(int argc, char **argv) {
  static struct option lo[] = {
      {"scenario", 1, 0, 's'}, {"sizes", 1, 0, 'z'},   {"reps", 1, 0, 'r'},
      {"warmup", 1, 0, 'w'},   {"quick", 0, 0, 'q'},   {"k", 1, 0, 'k'},
      {"conc", 1, 0, 'c'},     {"conc-size", 1, 0, 'C'}, {"csv", 1, 0, 'o'},
      {"summary", 1, 0, 'S'},  {"root", 1, 0, 'R'},    {"pin", 0, 0, 'p'},
      {"hogs", 1, 0, 'H'},     {"delay", 1, 0, 'd'},   {"only", 1, 0, 'O'},
      {"margin-ms", 1, 0, 'M'}, {"seed", 1, 0, 'e'},   {"help", 0, 0, 'h'},
      {"keep-going", 0, 0, 'K'}, {"settle-max", 1, 0, 'Q'},
      {"small-sizes", 1, 0, 'Z'}, {"kin", 1, 0, 'I'}, {"rounds", 1, 0, 'N'},
      {"loop-iters", 1, 0, 'L'}, {"loop-chunk", 1, 0, 'J'}, {"send-mem", 1, 0, 'm'},
      {0, 0, 0, 0}};
  char *items[MAXLIST];
  opt.reps = 7;
  opt.warmup = 1;
  opt.conc_bytes = 8 * MIB;
  opt.margin_ms = 20;
  opt.settle_max_s = 10;
  opt.seed = 1;
  opt.run_dred = opt.run_mpi = 1;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 's': {
      char *s = strdup(optarg);
      int n = split(s, items);
      for (int i = 0; i < n; i++) {
        if (!strcmp(items[i], "ideal")) opt.scen |= S_IDEAL;
        else if (!strcmp(items[i], "unbalanced")) opt.scen |= S_UNBAL;
        else if (!strcmp(items[i], "slow")) opt.scen |= S_SLOW;
        else if (!strcmp(items[i], "concurrent")) opt.scen |= S_CONC;
        else if (!strcmp(items[i], "bound")) opt.scen |= S_BOUND;
        else if (!strcmp(items[i], "small")) opt.scen |= S_SMALL;
        else if (!strcmp(items[i], "loop")) opt.scen |= S_LOOP;
        else if (!strcmp(items[i], "overlap")) opt.scen |= S_OVERLAP;
        else if (!strcmp(items[i], "all")) opt.scen |= S_IDEAL | S_UNBAL | S_CONC | S_BOUND;
        else die("unknown scenario '%s'", items[i]);
      }
      free(s);
      break;
    }
    case 'z': {
      char *s = strdup(optarg);
      int n = split(s, items);
      for (int i = 0; i < n; i++) opt.sizes[i] = parse_size(items[i]);
      opt.nsizes = n;
      free(s);
      break;
    }
    case 'r': opt.reps = atoi(optarg); break;
    case 'w': opt.warmup = atoi(optarg); break;
    case 'q': opt.quick = 1; break;
    case 'k': {
      char *s = strdup(optarg);
      opt.nk = split(s, items);
      for (int i = 0; i < opt.nk; i++) opt.k[i] = atof(items[i]);
      free(s);
      break;
    }
    case 'c': {
      char *s = strdup(optarg);
      opt.nconc = split(s, items);
      for (int i = 0; i < opt.nconc; i++) opt.conc[i] = atoi(items[i]);
      free(s);
      break;
    }
    case 'C': opt.conc_bytes = parse_size(optarg); break;
    case 'm':
      if (!strcmp(optarg, "pool")) opt.send_pool = 1;
      else if (strcmp(optarg, "malloc")) die("--send-mem malloc|pool");
      break;
    case 'o': opt.csv = optarg; break;
    case 'S': opt.summary = optarg; break;
    case 'R': opt.root = atoi(optarg); break;
    case 'p': opt.pin = 1; break;
    case 'H': opt.hogs = atoi(optarg); break;
    case 'd':
      if (!strcmp(optarg, "busy")) opt.busy_delay = 1;
      else if (strcmp(optarg, "sleep")) die("--delay sleep|busy");
      break;
    case 'O':
      if (!strcmp(optarg, "dred")) opt.run_mpi = 0;
      else if (!strcmp(optarg, "mpi")) opt.run_dred = 0;
      else die("--only dred|mpi");
      break;
    case 'M': opt.margin_ms = atof(optarg); break;
    case 'e': opt.seed = strtoull(optarg, NULL, 10); break;
    case 'K': opt.keep_going = 1; break;
    case 'Q': opt.settle_max_s = atof(optarg); break;
    case 'Z': {
      char *s = strdup(optarg);
      int n = split(s, items);
      for (int i = 0; i < n; i++) opt.small_sizes[i] = parse_size(items[i]);
      opt.nsmall_sizes = n;
      free(s);
      break;
    }
    case 'I': {
      char *s = strdup(optarg);
      opt.nkin = split(s, items);
      for (int i = 0; i < opt.nkin; i++)
        if ((opt.kin[i] = atoi(items[i])) < 1) die("--kin: counts >= 1");
      free(s);
      break;
    }
    case 'N': opt.rounds = atoi(optarg); break;
    case 'L': opt.loop_iters = atoi(optarg); break;
    case 'J': opt.loop_chunk = atoi(optarg); break;
    case 'h': usage(); exit(0);
    default: usage(); die("bad option '%s'", argv[optind - 1]);
    }
  }
  if (!opt.scen) opt.scen = S_IDEAL | S_UNBAL | S_CONC | S_BOUND;
  if (opt.reps < 1 || opt.warmup < 0) die("--reps >= 1, --warmup >= 0");
  if (!opt.nk) { opt.k[0] = 0; opt.k[1] = 1; opt.k[2] = 10; opt.nk = 3; }
  if (!opt.nsmall_sizes) { opt.small_sizes[0] = 8; opt.small_sizes[1] = KIB; opt.nsmall_sizes = 2; }
  if (!opt.nkin) { opt.kin[0] = 1; opt.kin[1] = 4; opt.kin[2] = 16; opt.kin[3] = 64; opt.nkin = 4; }
  if (opt.rounds <= 0) opt.rounds = opt.quick ? 30 : 60;
  if (opt.loop_iters <= 0) opt.loop_iters = 3000;
  if (opt.loop_chunk <= 0) opt.loop_chunk = 100;
  if (!opt.nconc) { opt.conc[0] = 4; opt.conc[1] = 8; opt.conc[2] = 16; opt.conc[3] = 28; opt.nconc = 4; }
}

/* Pin this process (and every thread it will create) before MPI starts, in blocks as
 * consecutive ranks share a node on a cluster: app rank r = world rank - 1 (world rank 0 is
 * dred-master) of P goes to allowed CPU r * n / P.  With 2 CPUs: ranks 0..P/2-1 on the first,
 * P/2..P-1 on the last, where run-bench.sh puts the hogs.  (Round-robin placement would make
 * the slow ranks exactly the leaves of MPI's binomial tree rooted at 0, which do nothing but
 * expose their buffer: measured, 4 hogs then slowed neither contender.) */
static void pin_self(void) {
  const char *e = getenv("PMI_RANK");
  if (!e) e = getenv("PMIX_RANK");
  if (!e) {
    fprintf(stderr, "dred-bench: --pin: no PMI_RANK in the environment; not pinning\n");
    return;
  }
  const char *z = getenv("PMI_SIZE");
  if (!z) z = getenv("PMIX_SIZE");
  int wr = atoi(e), r = wr > 0 ? wr - 1 : 0, papp = z ? atoi(z) - 1 : 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  int cpus[CPU_SETSIZE], n = 0;
  for (int i = 0; i < CPU_SETSIZE; i++)
    if (CPU_ISSET(i, &set)) cpus[n++] = i;
  if (n == 0) return;
  CPU_ZERO(&set);
  CPU_SET(papp > 0 ? cpus[(long)r * n / papp] : cpus[r % n], &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) perror("dred-bench: sched_setaffinity");
}

static void single_sizes(unsigned which, size_t *out, int *n) {
  static const size_t full_ideal[] = {128 * KIB, 256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB,
                                      4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB};
  if (opt.nsizes) {
    memcpy(out, opt.sizes, sizeof(size_t) * (size_t)opt.nsizes);
    *n = opt.nsizes;
    return;
  }
  if (which == S_IDEAL && !opt.quick) {
    memcpy(out, full_ideal, sizeof full_ideal);
    *n = 11;
  } else if (which == S_IDEAL) {
    out[0] = 128 * KIB; out[1] = 8 * MIB; out[2] = 32 * MIB;
    *n = 3;
  } else if (which == S_BOUND) {
    out[0] = 32 * MIB;
    *n = 1;
  } else if (opt.quick && which == S_UNBAL) {
    out[0] = 8 * MIB;
    *n = 1;
  } else if (opt.quick) {
    out[0] = 8 * MIB; out[1] = 32 * MIB;
    *n = 2;
  } else {
    out[0] = 128 * KIB; out[1] = 8 * MIB; out[2] = 32 * MIB;
    *n = 3;
  }
}

static FILE *open_append(const char *path, const char *header) {
  FILE *f = fopen(path, "a");
  if (!f) die("cannot open %s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  if (ftell(f) == 0) fprintf(f, "%s\n", header);
  return f;
}

int main(int argc, char **argv) {
  sleepy_default_mpi = 1; /* applications wait in MPI's blocking calls (DRED_WAIT=sleep: naps) */
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--pin")) pin_self();
  int st = dred_init(&argc, &argv);
  if (st != DRED_OK) die("dred_init: %s", dred_strerror(st));
  comm = dred_comm();
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);
  parse(argc, argv);
  if (opt.root < 0 || opt.root >= P) die("--root must be in [0, %d)", P);

  MPI_Comm node;
  int nsz;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &nsz);
  MPI_Comm_free(&node);
  one_node = nsz == P;

  if (rank == 0 && opt.csv) {
    csv_f = open_append(opt.csv, "scenario,p,bytes,param,contender,rep,seconds,cpu_s,settle_s");
    char sp[1024];
    if (!opt.summary) {
      size_t l = strlen(opt.csv);
      if (l > 4 && !strcmp(opt.csv + l - 4, ".csv"))
        snprintf(sp, sizeof sp, "%.*s-summary.csv", (int)(l - 4), opt.csv);
      else
        snprintf(sp, sizeof sp, "%s-summary.csv", opt.csv);
      opt.summary = strdup(sp);
    }
  }
  if (rank == 0 && opt.summary)
    sum_f = open_append(opt.summary,
                        "scenario,p,bytes,param,reps,dred_med_s,dred_min_s,dred_max_s,mpi_med_s,"
                        "mpi_min_s,mpi_max_s,ratio,wrong,dred_cpu_s,mpi_cpu_s,bound1_s,bound2_s,"
                        "dred_over_bound2,dred_settle_s,mpi_settle_s");

  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int ll;
  MPI_Get_library_version(lib, &ll);
  char *nl = strchr(lib, '\n');
  if (nl) *nl = 0;
  say("dred-bench: p=%d (%s), reps=%d (+%d warm-up), %s, root %d, margin %.0f ms%s%s, "
      "waits between calls: %s\n", P,
      one_node ? "one node: common start on CLOCK_MONOTONIC" : "several nodes: barrier start",
      opt.reps, opt.warmup, opt.quick ? "quick" : "full", opt.root, opt.margin_ms,
      opt.pin ? ", pinned" : "", opt.busy_delay ? ", busy delays" : "",
      sleepy_wait_is_mpi() ? "MPI's blocking MPI_Wait (DRED_WAIT=mpi)"
                           : "sleeping polls (DRED_WAIT=sleep)");
  say("dred-bench: %s\n", lib);

  size_t sz[MAXLIST];
  int nsz2;
  double B1 = NAN, B2 = NAN;

  if (opt.scen & S_IDEAL) {
    say("== ideal (root time, T0 -> root has the result)\n");
    single_sizes(S_IDEAL, sz, &nsz2);
    for (int i = 0; i < nsz2 && !stop_all; i++) measure_single("ideal", sz[i], 0, -1, 0);
  }
  if (opt.scen & S_SLOW) {
    say("== slow (root time; %d CPU hog(s) started outside%s)\n", opt.hogs,
        opt.pin ? ", ranks pinned in blocks: r -> CPU r*ncpu/P" : ", ranks NOT pinned");
    single_sizes(S_SLOW, sz, &nsz2);
    for (int i = 0; i < nsz2 && !stop_all; i++) measure_single("slow", sz[i], opt.hogs, -1, 0);
  }
  if (opt.scen & S_UNBAL) {
    say("== unbalanced arrival (random 0..k %s before each call; time from T0)\n",
        opt.busy_delay ? "spin" : "sleep");
    single_sizes(S_UNBAL, sz, &nsz2);
    for (int i = 0; i < nsz2 && !stop_all; i++) {
      double t = ideal_mpi_time(sz[i]);
      for (int j = 0; j < opt.nk && !stop_all; j++) {
        char hb[32];
        say("  -- %s k = %g x %.3f ms = %.3f ms\n", human(sz[i], hb), opt.k[j], 1e3 * t,
            1e3 * t * opt.k[j]);
        measure_single("unbalanced", sz[i], opt.k[j], opt.k[j], t);
      }
    }
  }
  if (opt.scen & S_CONC) {
    say("== concurrent (max over ranks of T0 -> all C complete)\n");
    for (int i = 0; i < opt.nconc && !stop_all; i++) measure_conc(opt.conc[i]);
  }
  if (opt.scen & S_SMALL) {
    say("== small (per reduction: median over %d rounds of (max over ranks of the round) / K)\n",
        opt.rounds);
    for (int i = 0; i < opt.nsmall_sizes && !stop_all; i++)
      for (int j = 0; j < opt.nkin && !stop_all; j++) measure_small(opt.small_sizes[i], opt.kin[j]);
  }
  if ((opt.scen & S_LOOP) && !stop_all) {
    say("== loop (%d x {ireduce 8 B, MPI_Allreduce, MPI_Bcast, wait}: total, max over ranks)\n",
        opt.loop_iters);
    measure_loop();
  }
  if ((opt.scen & S_OVERLAP) && !stop_all) {
    static const size_t quick_ov[] = {1 * MIB, 8 * MIB}, full_ov[] = {1 * MIB, 8 * MIB, 32 * MIB};
    const size_t *ov = opt.nsizes ? opt.sizes : opt.quick ? quick_ov : full_ov;
    int nov = opt.nsizes ? opt.nsizes : opt.quick ? 2 : 3;
    say("== overlap (osu_ireduce: ireduce, compute for the pure time, wait; max over ranks)\n");
    for (int i = 0; i < nov && !stop_all; i++) measure_overlap(ov[i]);
  }
  if ((opt.scen & S_BOUND) && !stop_all) {
    say("== bound (memory bandwidth: a[i] += b[i] over 2 x 32 MiB)\n");
    double M1 = NAN, M2 = NAN;
    B1 = bandwidth(1, &M1);
    B2 = P >= 2 ? bandwidth(2, &M2) : B1;
    say("  bandwidth (best of 50 one-pass trials; median in brackets): 1 process %.2f GB/s "
        "[%.2f], 2 processes %.2f GB/s [%.2f] (aggregate); 3n bytes counted per combine of "
        "n bytes\n",
        B1 / 1e9, M1 / 1e9, B2 / 1e9, M2 / 1e9);
    /* sizes: every ideal size measured in this run, else the bound sizes */
    int have = 0;
    if (rank == 0)
      for (int i = 0; i < nsums; i++) have += !strcmp(sums[i].scen, "ideal");
    idle_bcast(&have, 1, MPI_INT);
    if (!have) {
      single_sizes(S_BOUND, sz, &nsz2);
      for (int i = 0; i < nsz2; i++) measure_single("ideal", sz[i], 0, -1, 0);
    }
    if (rank == 0) {
      for (int i = 0; i < nsums; i++) {
        summary_t *s = &sums[i];
        if (strcmp(s->scen, "ideal")) continue;
        double n3 = 3.0 * (double)s->bytes * (double)(P - 1);
        s->bound1 = n3 / B1;
        s->bound2 = n3 / (B2 > B1 ? B2 : B1); /* the best this machine showed */
        char hb[32];
        say("  %6s: bound1 (1 core) %8.3f ms, bound2 (machine) %8.3f ms; dred %8.3f ms = "
            "%6.2f x bound2; mpi %8.3f ms = %6.2f x bound2\n",
            human(s->bytes, hb), 1e3 * s->bound1, 1e3 * s->bound2, 1e3 * s->dmed,
            s->dmed / s->bound2, 1e3 * s->mmed, s->mmed / s->bound2);
        csv_row("bound", s->bytes, 1, "bound", 0, s->bound1, 0, 0);
        csv_row("bound", s->bytes, 2, "bound", 0, s->bound2, 0, 0);
      }
      if (csv_f) {
        fprintf(csv_f, "bandwidth,%d,%zu,1,bytes_per_s,0,%.6g,0,0\n", P, (size_t)(32 * MIB), B1);
        fprintf(csv_f, "bandwidth,%d,%zu,2,bytes_per_s,0,%.6g,0,0\n", P, (size_t)(32 * MIB), B2);
        fflush(csv_f);
      }
    }
  }

  /* summary file and table */
  int late = 0;
  {
    MPI_Request r;
    MPI_Ireduce(&late_starts, &late, 1, MPI_INT, MPI_SUM, 0, comm, &r);
    sleepy_wait(&r);
  }
  if (rank == 0) {
    printf("\n%-16s %4s %7s %6s %12s %12s %8s\n", "scenario", "p", "bytes", "param",
           "dred_med_ms", "mpi_med_ms", "dred/mpi");
    for (int i = 0; i < nsums; i++) {
      summary_t *s = &sums[i];
      char hb[32];
      printf("%-16s %4d %7s %6g %12.3f %12.3f %8.3f%s\n", s->scen, P, human(s->bytes, hb),
             s->param, 1e3 * s->dmed, 1e3 * s->mmed, s->dmed / s->mmed,
             s->wrong ? " WRONG" : "");
      if (sum_f)
        fprintf(sum_f, "%s,%d,%zu,%g,%d,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f,%.6f,%d,%.6f,%.6f,%.9g,"
                       "%.9g,%.6g,%.6f,%.6f\n",
                s->scen, P, s->bytes, s->param, s->n, s->dmed, s->dmin, s->dmax, s->mmed,
                s->mmin, s->mmax, s->dmed / s->mmed, s->wrong, s->dcpu, s->mcpu, s->bound1,
                s->bound2, s->dmed / s->bound2, s->dsettle, s->msettle);
    }
    printf("dred-bench: dred timed total %.3f s over %ld reductions (warm-ups included)\n",
           dred_timed_s, dred_timed_calls);
    if (late)
      printf("note: %d rank-starts missed the common start (raise --margin-ms)\n", late);
    printf("%s\n", any_wrong ? "dred-bench: WRONG results (see above)" : "dred-bench: all results verified");
    fflush(stdout);
    if (csv_f) fclose(csv_f);
    if (sum_f) fclose(sum_f);
  }
  int wrong_all = 0;
  {
    MPI_Request r;
    MPI_Iallreduce(&any_wrong, &wrong_all, 1, MPI_INT, MPI_MAX, comm, &r);
    sleepy_wait(&r);
  }
  free(sendbuf);
  free(dred_recv);
  free(mpi_recv);
  st = dred_finalize();
  if (st != DRED_OK) {
    fprintf(stderr, "dred-bench: dred_finalize: %s\n", dred_strerror(st));
    return 1;
  }
  return wrong_all ? 1 : 0;
}
