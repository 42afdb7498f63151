/*
 * bench_single.c -- one reduction at a time: the ideal, unbalanced and slow scenarios, and
 * the ideal MPI time the unbalanced delays are multiples of.
 *
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
 *
 * Also the single-reduction buffers the overlap scenario reuses (bench_overlap.c).
 */
#include "bench.h"

/* Send and receive buffers of the single reductions, grown as needed; shared with overlap. */
double *sendbuf, *dred_recv, *mpi_recv;
static size_t buf_count;
/* the last dred status this rank saw in run_one (its buffer is not compared if not OK: the
 * error is the report) */
static int last_dred_status;

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

void ensure_single_bufs(size_t count) {
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

/* kmult < 0: no delays.  ideal_t: the ideal MPI median that k multiplies. */
summary_t *measure_single(const char *scen, size_t bytes, double param, double kmult,
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
double ideal_mpi_time(size_t bytes) {
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
