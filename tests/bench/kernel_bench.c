/*
 * kernel_bench.c -- throughput of the MPI_SUM/MPI_DOUBLE combine: lib/engine/kernel.c's kernel
 * (the AVX2 clone on a CPU that has AVX2, and the baseline build) against MPI_Reduce_local.
 * Prints only; not a test.  `make kernel-bench` builds and runs it (a singleton MPI_Init).
 *
 *   kernel-bench [MiB] [reps]     operand size (32) and repetitions (20; the best is kept)
 *
 * GB/s counts operand bytes combined per second (n * 8 / time); memory traffic is three
 * times that (in and inout read, one written).  Three sizes: the operand as given (memory
 * bound), 1 MiB (DRED_CHUNK_KB's default chunk) and 256 KiB, combined over and over (in
 * cache: the loop itself).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../lib/engine/kernel.h"

const dred_kernel_t *dred_kernel_find_baseline(MPI_Datatype type, MPI_Op op);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { REDUCE_LOCAL, INPLACE, OUTOFPLACE };

/* Best time of `reps` runs of `rounds` combines of n doubles. */
static double best(int how, const dred_kernel_t *k, const double *in, double *io, double *out,
                   size_t n, int rounds, int reps) {
  double t_best = 1e30;
  int r, i;
  for (r = 0; r < reps; r++) {
    double t0 = now();
    for (i = 0; i < rounds; i++) {
      if (how == REDUCE_LOCAL)
        MPI_Reduce_local(in, io, (int)n, MPI_DOUBLE, MPI_SUM);
      else if (how == INPLACE)
        k->inplace(in, io, n);
      else
        k->outofplace(in, io, out, n);
    }
    double t = (now() - t0) / rounds;
    if (t < t_best) t_best = t;
  }
  return t_best;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 32;
  int reps = argc > 2 ? atoi(argv[2]) : 20;
  const dred_kernel_t *k = dred_kernel_find(MPI_DOUBLE, MPI_SUM);
  const dred_kernel_t *kb = dred_kernel_find_baseline(MPI_DOUBLE, MPI_SUM);
  size_t sizes[3] = {mib << 20, 1 << 20, 256 << 10}, j, i;

  MPI_Init(&argc, &argv);
  if (k == NULL || kb == NULL || mib == 0 || reps <= 0) {
    fprintf(stderr, "kernel-bench: no kernel (DRED_KERNELS=0?) or bad arguments\n");
    MPI_Finalize();
    return 1;
  }
  printf("MPI_SUM on MPI_DOUBLE, best of %d; GB/s = operand bytes / s; this CPU %s AVX2\n",
         reps, __builtin_cpu_supports("avx2") ? "has" : "lacks");
  for (j = 0; j < 3; j++) {
    size_t n = sizes[j] / sizeof(double);
    int rounds = j == 0 ? 1 : (int)((64u << 20) / sizes[j]); /* ~64 MiB per timing */
    double *in = malloc(n * sizeof *in), *io = malloc(n * sizeof *io),
           *out = malloc(n * sizeof *out);
    double t[5];
    if (in == NULL || io == NULL || out == NULL) return 1;
    for (i = 0; i < n; i++) { /* touch every page before timing */
      in[i] = (double)i * 1e-3;
      io[i] = 1.0;
      out[i] = 0.0;
    }
    t[0] = best(REDUCE_LOCAL, NULL, in, io, out, n, rounds, reps);
    t[1] = best(INPLACE, k, in, io, out, n, rounds, reps);
    t[2] = best(OUTOFPLACE, k, in, io, out, n, rounds, reps);
    t[3] = best(INPLACE, kb, in, io, out, n, rounds, reps);
    t[4] = best(OUTOFPLACE, kb, in, io, out, n, rounds, reps);
    printf("%8zu KiB  MPI_Reduce_local %6.2f GB/s | kernel inplace %6.2f, outofplace %6.2f | "
           "baseline inplace %6.2f, outofplace %6.2f\n",
           sizes[j] >> 10, sizes[j] / t[0] / 1e9, sizes[j] / t[1] / 1e9, sizes[j] / t[2] / 1e9,
           sizes[j] / t[3] / 1e9, sizes[j] / t[4] / 1e9);
    free(in), free(io), free(out);
  }
  MPI_Finalize();
  return 0;
}
