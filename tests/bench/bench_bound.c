/*
 * bench_bound.c -- the memory-bandwidth lower bound of a reduction on this machine, set
 * beside the ideal medians.
 *
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
 */
#include "bench.h"

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

/* The bound scenario: the bandwidths B1 and B2, then bound1 and bound2 beside every ideal
 * median of this run (the ideal points at the bound sizes are measured first if this run
 * has none).  Collective. */
void measure_bound(void) {
  size_t sz[MAXLIST];
  int nsz2;
  double B1 = NAN, B2 = NAN;
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
