/*
 * bench.c -- an unmodified MPI program timing MPI_Ireduce + MPI_Wait (SUM of doubles to
 * rank 0) at sizes from 8 bytes to 16 MiB: the measurement behind DRED_MPI_MIN_BYTES's
 * default.  Run it under `dredrun --mpi` twice, with DRED_MPI_MIN_BYTES=0 (every call
 * through dred) and with DRED_MPI_MIN_BYTES=1099511627776 (every call to MPI); each line is
 *     bytes  microseconds-per-call
 * (the median of 5 rounds, each the mean of its iterations, at rank 0).
 * Usage: bench [MAX_BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  long max = argc > 1 ? atol(argv[1]) : 16L << 20, bytes;
  int rank, i, round;
  double *in, *out;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  in = calloc((size_t)max / 8 + 1, 8);
  out = calloc((size_t)max / 8 + 1, 8);
  for (bytes = 8; bytes <= max; bytes *= 4) {
    int count = (int)(bytes / 8), iters = bytes <= 65536 ? 200 : bytes <= (1 << 20) ? 40 : 8;
    double t[5];
    for (round = 0; round < 5; round++) {
      double t0;
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      for (i = 0; i < iters; i++) {
        MPI_Request r;
        MPI_Ireduce(in, out, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
      t[round] = (MPI_Wtime() - t0) / iters * 1e6;
    }
    qsort(t, 5, sizeof t[0], cmp);
    if (rank == 0) printf("%ld %.1f\n", bytes, t[2]);
    fflush(stdout);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
