/*
 * bench.c -- dred-bench: dred against MPICH's own MPI_Reduce / MPI_Ireduce, same processes,
 * same run, interleaved.
 *
 *   dredrun -n P dred-bench [--scenario ideal|unbalanced|slow|concurrent|bound|all[,...]]
 *                           [--sizes 128K,8M,32M] [--reps R] [--quick] [--k 0,1,10]
 *                           [--conc 4,8,16,28] [--csv FILE] [--summary FILE] ...
 *   (dred-bench --help lists every option.)
 *
 * What is timed
 * -------------
 * Every measurement starts from a common start T0.  All ranks meet in a barrier, dred_comm
 * rank 0 picks T0 = now + margin (20 ms) on CLOCK_MONOTONIC and broadcasts it, and every rank
 * sleeps until T0 (clock_nanosleep, absolute).  On one node CLOCK_MONOTONIC is one clock, so
 * all ranks leave at the same instant and every timestamp below is comparable across ranks.
 * (On several nodes the bench falls back to "T0 = the rank's own exit from the barrier" and
 * the cross-rank metrics unbalanced_tail/unbalanced_own are not meaningful; it says so.)
 *
 *  - ideal, slow, unbalanced: the ROOT's time, T0 -> the root has the result (dred_reduce
 *    returned / MPI_Reduce returned at the root).  This is the "seconds" column.
 *  - unbalanced also records two derived metrics as their own scenario rows:
 *      unbalanced_tail = root completion - the LAST rank's arrival (what is left after the
 *                        last rank arrives: the part an algorithm can change),
 *      unbalanced_own  = max over ranks of (own completion - own arrival) (seed 000, fig. 11:
 *                        each rank's communication time from its own arrival, max over ranks).
 *  - concurrent: max over ranks of (T0 -> that rank's last request complete), i.e. until all
 *    C reductions are complete everywhere.
 *
 * Outside the timed region every rank waits in MPI's own blocking calls (MPI_Wait on a
 * barrier), as applications do between reductions: MPICH's blocking calls busy-poll, so a
 * rank that finished early takes an oversubscribed core from the ranks still inside the
 * timed region -- from dred's runtime threads and dred-master too, which is the habit dred
 * must not lose to.  DRED_WAIT=sleep makes those waits sleeping polls instead (MPI_Test +
 * nanosleep doubling from 1 us to 500 us): the case where nobody spins.
 *
 * Fairness: dred and MPI alternate every repetition and the order flips every repetition
 * (even reps dred first, odd reps MPI first); one untimed warm-up repetition per point
 * (--warmup).  The send data changes every repetition; receive buffers are overwritten
 * with NaN before each call.  dred's result is compared bit for bit with MPI's (integer
 * valued doubles, MPI_SUM, so both are exact) every repetition and spot-checked against
 * the closed form; a mismatch or a dred error prints WRONG and makes the exit code 1.
 *
 * Scenarios
 * ---------
 * One file per family, each opening with how it measures: bench_single.c (ideal,
 * unbalanced, slow), bench_concurrent.c (concurrent), bench_small.c (small),
 * bench_loop.c (loop), bench_overlap.c (overlap), bench_bound.c (bound).  The shared
 * harness (common start, timing, medians, the check against MPI's result, CSV rows) is
 * bench_harness.c, the command line bench_args.c, the declarations bench.h; this file
 * starts the job, runs the scenarios asked for and prints the summary table.
 *
 *
 * Output: progress lines on stdout (rank 0); --csv FILE gets one row per call:
 *   scenario,p,bytes,param,contender,rep,seconds,cpu_s,settle_s
 * (cpu_s: user+system CPU seconds summed over the application ranks, from before the
 * start barrier until the ranks are idle again after the call -- so dred's background
 * work (replica puts after the future completed) is charged to dred; it excludes
 * dred-master.  settle_s: max over ranks of how long that background work lasted after the
 * call returned; the next call starts only once every rank is idle, see settle()).  --summary FILE
 * (default: the csv name with -summary.csv) gets medians/min/max per point and the ratio
 * dred/mpi.  Both files are appended to; the header is written when a file is empty.
 */
#include "bench.h"

static FILE *open_append(const char *path, const char *header) {
  FILE *f = fopen(path, "a");
  if (!f) die("cannot open %s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  if (ftell(f) == 0) fprintf(f, "%s\n", header);
  return f;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--pin")) pin_self();
  int st = dred_init(&argc, &argv);
  if (st != DRED_OK) die("dred_init: %s", dred_strerror(st));
  comm = dred_comm();
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);
  parse(argc, argv);
  if (opt.root < 0 || opt.root >= P) die("--root must be in [0, %d)", P);

  MPI_Comm node;
  int nsz;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &nsz);
  MPI_Comm_free(&node);
  one_node = nsz == P;

  if (rank == 0 && opt.csv) {
    csv_f = open_append(opt.csv, "scenario,p,bytes,param,contender,rep,seconds,cpu_s,settle_s");
    char sp[1024];
    if (!opt.summary) {
      size_t l = strlen(opt.csv);
      if (l > 4 && !strcmp(opt.csv + l - 4, ".csv"))
        snprintf(sp, sizeof sp, "%.*s-summary.csv", (int)(l - 4), opt.csv);
      else
        snprintf(sp, sizeof sp, "%s-summary.csv", opt.csv);
      opt.summary = strdup(sp);
    }
  }
  if (rank == 0 && opt.summary)
    sum_f = open_append(opt.summary,
                        "scenario,p,bytes,param,reps,dred_med_s,dred_min_s,dred_max_s,mpi_med_s,"
                        "mpi_min_s,mpi_max_s,ratio,wrong,dred_cpu_s,mpi_cpu_s,bound1_s,bound2_s,"
                        "dred_over_bound2,dred_settle_s,mpi_settle_s");

  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int ll;
  MPI_Get_library_version(lib, &ll);
  char *nl = strchr(lib, '\n');
  if (nl) *nl = 0;
  say("dred-bench: p=%d (%s), reps=%d (+%d warm-up), %s, root %d, margin %.0f ms%s%s, "
      "waits between calls: %s\n", P,
      one_node ? "one node: common start on CLOCK_MONOTONIC" : "several nodes: barrier start",
      opt.reps, opt.warmup, opt.quick ? "quick" : "full", opt.root, opt.margin_ms,
      opt.pin ? ", pinned" : "", opt.busy_delay ? ", busy delays" : "",
      sleepy_wait_is_mpi() ? "MPI's blocking MPI_Wait (DRED_WAIT=mpi)"
                           : "sleeping polls (DRED_WAIT=sleep)");
  say("dred-bench: %s\n", lib);

  size_t sz[MAXLIST];
  int nsz2;

  if (opt.scen & S_IDEAL) {
    say("== ideal (root time, T0 -> root has the result)\n");
    single_sizes(S_IDEAL, sz, &nsz2);
    for (int i = 0; i < nsz2 && !stop_all; i++) measure_single("ideal", sz[i], 0, -1, 0);
  }
  if (opt.scen & S_SLOW) {
    say("== slow (root time; %d CPU hog(s) started outside%s)\n", opt.hogs,
        opt.pin ? ", ranks pinned in blocks: r -> CPU r*ncpu/P" : ", ranks NOT pinned");
    single_sizes(S_SLOW, sz, &nsz2);
    for (int i = 0; i < nsz2 && !stop_all; i++) measure_single("slow", sz[i], opt.hogs, -1, 0);
  }
  if (opt.scen & S_UNBAL) {
    say("== unbalanced arrival (random 0..k %s before each call; time from T0)\n",
        opt.busy_delay ? "spin" : "sleep");
    single_sizes(S_UNBAL, sz, &nsz2);
    for (int i = 0; i < nsz2 && !stop_all; i++) {
      double t = ideal_mpi_time(sz[i]);
      for (int j = 0; j < opt.nk && !stop_all; j++) {
        char hb[32];
        say("  -- %s k = %g x %.3f ms = %.3f ms\n", human(sz[i], hb), opt.k[j], 1e3 * t,
            1e3 * t * opt.k[j]);
        measure_single("unbalanced", sz[i], opt.k[j], opt.k[j], t);
      }
    }
  }
  if (opt.scen & S_CONC) {
    say("== concurrent (max over ranks of T0 -> all C complete)\n");
    for (int i = 0; i < opt.nconc && !stop_all; i++) measure_conc(opt.conc[i]);
  }
  if (opt.scen & S_SMALL) {
    say("== small (per reduction: median over %d rounds of (max over ranks of the round) / K)\n",
        opt.rounds);
    for (int i = 0; i < opt.nsmall_sizes && !stop_all; i++)
      for (int j = 0; j < opt.nkin && !stop_all; j++) measure_small(opt.small_sizes[i], opt.kin[j]);
  }
  if ((opt.scen & S_LOOP) && !stop_all) {
    say("== loop (%d x {ireduce 8 B, MPI_Allreduce, MPI_Bcast, wait}: total, max over ranks)\n",
        opt.loop_iters);
    measure_loop();
  }
  if ((opt.scen & S_OVERLAP) && !stop_all) {
    static const size_t quick_ov[] = {1 * MIB, 8 * MIB}, full_ov[] = {1 * MIB, 8 * MIB, 32 * MIB};
    const size_t *ov = opt.nsizes ? opt.sizes : opt.quick ? quick_ov : full_ov;
    int nov = opt.nsizes ? opt.nsizes : opt.quick ? 2 : 3;
    say("== overlap (osu_ireduce: ireduce, compute for the pure time, wait; max over ranks)\n");
    for (int i = 0; i < nov && !stop_all; i++) measure_overlap(ov[i]);
  }
  if ((opt.scen & S_BOUND) && !stop_all) {
    say("== bound (memory bandwidth: a[i] += b[i] over 2 x 32 MiB)\n");
    measure_bound();
  }

  /* summary file and table */
  int late = 0;
  {
    MPI_Request r;
    MPI_Ireduce(&late_starts, &late, 1, MPI_INT, MPI_SUM, 0, comm, &r);
    sleepy_wait(&r);
  }
  if (rank == 0) {
    printf("\n%-16s %4s %7s %6s %12s %12s %8s\n", "scenario", "p", "bytes", "param",
           "dred_med_ms", "mpi_med_ms", "dred/mpi");
    for (int i = 0; i < nsums; i++) {
      summary_t *s = &sums[i];
      char hb[32];
      printf("%-16s %4d %7s %6g %12.3f %12.3f %8.3f%s\n", s->scen, P, human(s->bytes, hb),
             s->param, 1e3 * s->dmed, 1e3 * s->mmed, s->dmed / s->mmed,
             s->wrong ? " WRONG" : "");
      if (sum_f)
        fprintf(sum_f, "%s,%d,%zu,%g,%d,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f,%.6f,%d,%.6f,%.6f,%.9g,"
                       "%.9g,%.6g,%.6f,%.6f\n",
                s->scen, P, s->bytes, s->param, s->n, s->dmed, s->dmin, s->dmax, s->mmed,
                s->mmin, s->mmax, s->dmed / s->mmed, s->wrong, s->dcpu, s->mcpu, s->bound1,
                s->bound2, s->dmed / s->bound2, s->dsettle, s->msettle);
    }
    printf("dred-bench: dred timed total %.3f s over %ld reductions (warm-ups included)\n",
           dred_timed_s, dred_timed_calls);
    if (late)
      printf("note: %d rank-starts missed the common start (raise --margin-ms)\n", late);
    printf("%s\n", any_wrong ? "dred-bench: WRONG results (see above)" : "dred-bench: all results verified");
    fflush(stdout);
    if (csv_f) fclose(csv_f);
    if (sum_f) fclose(sum_f);
  }
  int wrong_all = 0;
  {
    MPI_Request r;
    MPI_Iallreduce(&any_wrong, &wrong_all, 1, MPI_INT, MPI_MAX, comm, &r);
    sleepy_wait(&r);
  }
  free(sendbuf);
  free(dred_recv);
  free(mpi_recv);
  st = dred_finalize();
  if (st != DRED_OK) {
    fprintf(stderr, "dred-bench: dred_finalize: %s\n", dred_strerror(st));
    return 1;
  }
  return wrong_all ? 1 : 0;
}
