/*
 * bench_small.c -- many small nonblocking reductions back to back, K in flight: what one
 * reduction costs at that depth.
 *
 *  small       many small nonblocking reductions back to back: sizes 8 B
 *              and 1 KiB (--small-sizes), K = 1, 4, 16, 64 in flight (--kin).  A round: every
 *              rank leaves a barrier (MPI's blocking wait with DRED_WAIT=mpi, as applications
 *              wait), starts K reductions with tags 0..K-1 and roots j % p (dred_ireduce, or
 *              MPI_Ireduce), then waits for all K (dred_future_get each, or MPI_Waitall).  The
 *              round time is the max over ranks of (own barrier exit -> own K done); the
 *              figure is the median over --rounds rounds of round time / K: the time one
 *              reduction costs at that depth.  dred and MPI alternate round by round (order
 *              flips every round); every root checks each result against the closed form.
 */
#include "bench.h"

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

void measure_small(size_t bytes, int K) {
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
