/*
 * bench.h -- what dred-bench's files share: its options, the process's state, the harness
 * (bench_harness.c) and one entry point per scenario family.
 *
 * dred-bench is one program made of bench.c (start-up, dispatch, the summary table),
 * bench_harness.c, bench_args.c (the command line) and a file per scenario family:
 * bench_single.c (ideal, unbalanced, slow), bench_concurrent.c, bench_small.c,
 * bench_loop.c, bench_overlap.c and bench_bound.c.  Include this header first: it sets
 * _GNU_SOURCE for the whole file.
 *
 * The Makefile builds the program with -fvisibility=hidden: its globals have short names
 * (rank, P, opt, check, split, ...), and hidden ones can never interpose on a symbol of the
 * same name in a shared library MPICH loads.
 */
#ifndef DRED_BENCH_H
#define DRED_BENCH_H

/* Build with -Iinclude only (never -Imaster/sched: master/sched/sched.h would shadow the
 * system <sched.h> used for --pin). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
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
/* Between calls dred-bench waits in MPI's own blocking calls, as applications do
 * (DRED_WAIT=sleep: naps instead).  sleepy_wait.h keeps its default in a static variable,
 * one copy per file, so the default is set here, at compile time, for every file alike. */
#ifdef DRED_TESTS_SLEEPY_WAIT_H
#error "include bench.h before tests/mpi/sleepy_wait.h"
#endif
#define SLEEPY_DEFAULT_MPI 1
#include "../mpi/sleepy_wait.h"

#define MAXLIST 64
#define KIB 1024ull
#define MIB (1024ull * 1024ull)

/* ---- options (bench_args.c) ----------------------------------------------------------- */
enum {
  S_IDEAL = 1, S_UNBAL = 2, S_SLOW = 4, S_CONC = 8, S_BOUND = 16, S_SMALL = 32, S_LOOP = 64,
  S_OVERLAP = 128
};
typedef struct {
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
} bench_opt_t;
extern bench_opt_t opt;

void parse(int argc, char **argv);
void pin_self(void);
/* The sizes of scenario `which` (S_IDEAL, S_SLOW, S_UNBAL, S_BOUND): --sizes or defaults. */
void single_sizes(unsigned which, size_t *out, int *n);

/* ---- process state (bench_harness.c) --------------------------------------------------- */
extern MPI_Comm comm;
extern int rank, P, one_node, any_wrong, late_starts;
/* rank 0: dred's timed seconds and calls, warm-ups included (master load per dred-second) */
extern double dred_timed_s;
extern long dred_timed_calls;
/* set on every rank after a WRONG repetition: the rest of the run is skipped (a dred error
 * such as a worker declared failed poisons every later reduction); --keep-going disables */
extern int stop_all;
extern FILE *csv_f, *sum_f;

/* ---- harness: time, waits, the common start (bench_harness.c) -------------------------- */
double now_s(void);
void sleep_until(double t);
double cpu_now(void);
double settle(void);
__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
void idle_barrier(void);
void idle_reduce(const double *in, double *out, int n, MPI_Op op);
void idle_bcast(void *buf, int n, MPI_Datatype t);
double sync_start(void);
void max_to_root(double *v, int n);

/* ---- data and the check against MPI's result ------------------------------------------- */
/* Integer-valued, < 1024 per rank, so any summation order is exact. */
static inline double val(size_t i, int r, int rep, int j) {
  return (double)((i * 7u + (size_t)r * 13u + (size_t)rep * 5u + (size_t)j * 11u) & 1023u);
}
void fill(double *buf, size_t count, int rep, int j);
void zap(double *buf, size_t count);
int check(const char *what, const double *d, const double *m, size_t count, int rep, int j);
int wrong_verdict(int bad_all, const char *what, int rep, int *wrong);

/* ---- results: one summary per point ---------------------------------------------------- */
typedef struct {
  char scen[24];
  size_t bytes;
  double param;
  int n;
  double dmed, dmin, dmax, mmed, mmin, mmax, dcpu, mcpu, dsettle, msettle;
  int wrong;
  double bound1, bound2;
} summary_t;
extern summary_t sums[1024];
extern int nsums;

double median(double *v, int n);
const char *human(size_t b, char *buf);
void csv_row(const char *scen, size_t bytes, double param, const char *who, int rep, double sec,
             double cpu, double settle_s);
summary_t *record(const char *scen, size_t bytes, double param, double *d, double *dc, double *ds,
                  double *m, double *mc, double *ms, int n, int wrong);
summary_t *find_sum(const char *scen, size_t bytes, double param);

/* ---- the scenario families ------------------------------------------------------------- */
/* bench_single.c: one reduction at a time (ideal, slow, unbalanced) */
extern double *sendbuf, *dred_recv, *mpi_recv;
void ensure_single_bufs(size_t count);
summary_t *measure_single(const char *scen, size_t bytes, double param, double kmult,
                          double ideal_t);
double ideal_mpi_time(size_t bytes);
/* bench_concurrent.c */
void measure_conc(int C);
/* bench_small.c */
void measure_small(size_t bytes, int K);
/* bench_loop.c */
void measure_loop(void);
/* bench_overlap.c */
void measure_overlap(size_t bytes);
/* bench_bound.c: the bandwidths, then the bound beside every ideal median of this run */
void measure_bound(void);

#endif /* DRED_BENCH_H */
