/*
 * bench_concurrent.c -- several reductions in flight at once, dred_ireduce against
 * MPI_Ireduce + MPI_Waitall.
 *
 *  concurrent  C in --conc reductions of 8 MiB in flight (dred_ireduce with tags 0..C-1,
 *              roots j % p) vs C MPI_Ireduce + MPI_Waitall.  With --send-mem pool the send
 *              buffers come from dred_alloc_mem (both contenders use them; rows are named
 *              concurrent-mem): dred's zero-copy hand-over.
 */
#include "bench.h"

void measure_conc(int C) {
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
      /* the zero-copy hand-over: dred reads the operand in place; MPI reads the
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
