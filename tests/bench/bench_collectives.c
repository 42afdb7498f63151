/*
 * bench_collectives.c -- dred_allreduce and dred_bcast against MPI_Allreduce and MPI_Bcast
 * in the same job (dred-bench-coll).
 *
 *   dredrun -n P dred-bench-coll [--reps N] [--max BYTES] [--csv FILE] [--late K]
 *
 * What it measures: for each size from 8 B to --max (default 8 MiB, x8 steps) and each
 * collective, --reps timed repetitions (default 30, fewer above 32 KiB) after two warm-up
 * ones.  Between repetitions every member waits in a blocking MPI_Barrier, as applications
 * wait in MPI between collectives (the case dred's control plane must not lose in: MPICH
 * spins there and holds its lock).  A repetition's time is the slowest member's, from its
 * call to its return (blocking dred_allreduce / dred_bcast, DRED_TAG_AUTO; MPI's blocking
 * calls); the table gives the median over repetitions, and dred/MPI.  Allreduce is MPI_SUM
 * on doubles; bcast is bytes from root 0.  Results are checked once per size (a wrong
 * dred result aborts the benchmark: a fast wrong answer is not a figure).
 *
 * --late K: unbalanced arrival.  In each repetition one member (rank i mod P, so every
 * member is late in turn, the root included) starts its call K x MPI's median time for
 * that size (from a balanced run just before) after the others; a repetition's time is
 * then the last return minus the last arrival (CLOCK_MONOTONIC is one clock for all the
 * processes of a node, and of the simulated nodes of one machine): what the late member
 * costs everyone once it is there.
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

/* `late_s` > 0: one member per repetition calls that much after the others (--late). */
static double run(int which, size_t bytes, int reps, MPI_Comm comm, int rank, int size,
                  double late_s) {
  size_t n = bytes / sizeof(double) ? bytes / sizeof(double) : 1;
  double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
  double *t = calloc((size_t)reps, sizeof(double)), med;
  double *st = calloc((size_t)reps, sizeof(double)), *en = calloc((size_t)reps, sizeof(double));
  int i, rc = DRED_OK;
  for (size_t k = 0; k < n; k++) a[k] = (double)(rank + 1) + (double)(k % 7);
  for (i = -2; i < reps; i++) {
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
  free(a); free(b); free(t); free(st); free(en);
  return med;
}

int main(int argc, char **argv) {
  int rank, size, reps_arg = 0;
  double late = 0;
  size_t maxb = 8u << 20;
  const char *csv = NULL;
  FILE *cf = NULL;
  sleepy_default_mpi = 1; /* wait in MPI's blocking calls, as applications do */
  if (dred_init(&argc, &argv) != DRED_OK) return 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps_arg = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--max") && i + 1 < argc) maxb = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
    else if (!strcmp(argv[i], "--late") && i + 1 < argc) late = atof(argv[++i]);
  }
  MPI_Comm comm = dred_comm();
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank == 0) {
    if (late > 0)
      printf("dred-bench-coll: P=%d, one member %.0f x MPI's time late per repetition (in "
             "turn); median of the last return minus the last arrival, blocking MPI waits "
             "between repetitions\n", size, late);
    else
      printf("dred-bench-coll: P=%d, median of the slowest member per repetition, "
             "blocking MPI waits between repetitions\n", size);
    printf("%10s %14s %14s %8s %14s %14s %8s\n", "bytes", "dred_allred_us", "mpi_allred_us",
           "ratio", "dred_bcast_us", "mpi_bcast_us", "ratio");
    if (csv != NULL && (cf = fopen(csv, "a")) != NULL)
      fprintf(cf, "p,bytes,dred_allreduce_us,mpi_allreduce_us,dred_bcast_us,mpi_bcast_us\n");
  }
  /* 8 B, x8 steps, and --max itself (8 MiB is not a power of 8) */
  for (size_t bytes = 8; bytes <= maxb; bytes = bytes * 8 > maxb && bytes < maxb ? maxb : bytes * 8) {
    int reps = reps_arg > 0 ? reps_arg : bytes <= (32u << 10) ? 30 : bytes <= (256u << 10) ? 15 : 7;
    double la = 0, lb = 0, da, ma, db, mb;
    if (late > 0) { /* how late: K x MPI's balanced time at this size */
      la = late * run(C_MPI_ALLREDUCE, bytes, reps, comm, rank, size, 0);
      lb = late * run(C_MPI_BCAST, bytes, reps, comm, rank, size, 0);
    }
    da = run(C_DRED_ALLREDUCE, bytes, reps, comm, rank, size, la) * 1e6;
    ma = run(C_MPI_ALLREDUCE, bytes, reps, comm, rank, size, la) * 1e6;
    db = run(C_DRED_BCAST, bytes, reps, comm, rank, size, lb) * 1e6;
    mb = run(C_MPI_BCAST, bytes, reps, comm, rank, size, lb) * 1e6;
    if (rank == 0) {
      printf("%10zu %14.1f %14.1f %8.2f %14.1f %14.1f %8.2f\n", bytes, da, ma, da / ma, db, mb,
             db / mb);
      fflush(stdout);
      if (cf) fprintf(cf, "%d,%zu,%.1f,%.1f,%.1f,%.1f\n", size, bytes, da, ma, db, mb);
    }
  }
  if (cf) fclose(cf);
  return dred_finalize() == DRED_OK ? 0 : 1;
}
