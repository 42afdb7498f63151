/*
 * bench_overlap.c -- how much of a nonblocking reduction hides behind the application's
 * computation (osu_ireduce's measure).
 *
 *  overlap     osu_ireduce's measure of how much of a nonblocking reduction hides behind the
 *              application's computation: pure = max over ranks of (ireduce; wait) back to
 *              back; overall = (ireduce; compute for that contender's pure median, a loop
 *              with no MPI or dred call; wait); overlap = 100 * (1 - (overall - compute) /
 *              pure), clamped to 0..100.  dred_ireduce + dred_future_get vs MPI_Ireduce +
 *              MPI_Wait, each with its own pure time as compute; sizes 1M, 8M (quick) or
 *              1M, 8M, 32M; every result checked at the root.
 */
#include "bench.h"

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

void measure_overlap(size_t bytes) {
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
