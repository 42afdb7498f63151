/*
 * bench_loop.c -- a loop of small reductions among the application's own collectives, in
 * the shape of an iterative solver's step, against the same loop with no reduction at all.
 *
 *  loop        an iterative solver's step (small reductions among its own collectives): --loop-iters N
 *              (3000) iterations of { ireduce 1 double to root 0; MPI_Allreduce of one int
 *              and MPI_Bcast of one double (blocking, MPI's own); wait for the reduction }.
 *              Total time of the loop (sum over chunks of --loop-chunk iterations, dred,
 *              MPI and the floor taking turns chunk by chunk; max over ranks per chunk), dred
 *              vs MPI_Ireduce + MPI_Wait; --reps repetitions; every result checked at the
 *              root.  The floor is the same loop with no reduction at all (the application's
 *              own collectives alone): what neither contender can beat, printed as a third
 *              row "loop_floor" (dred/floor and MPI/floor).
 */
#include "bench.h"

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

void measure_loop(void) {
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
