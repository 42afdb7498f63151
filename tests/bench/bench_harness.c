/*
 * bench_harness.c -- dred-bench's shared harness: the clocks and the common start T0, the
 * waits between calls (MPI's own blocking wait by default, see bench.h), the data every
 * rank sends and the check of dred's result against MPI's, medians and the per-point
 * summary rows, and the verdict of a repetition.  What is timed, and how, is in bench.c's
 * opening comment; the scenarios use these pieces in the same way.
 */
#include "bench.h"

/* The process's state (bench.h says what each is for). */
MPI_Comm comm;
int rank, P, one_node = 1, any_wrong = 0, late_starts = 0;
double dred_timed_s;
long dred_timed_calls;
int stop_all;
FILE *csv_f, *sum_f;
summary_t sums[1024];
int nsums;

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sleep_until(double t) {
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

double cpu_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* After a call, wait until this process's threads stop using CPU (below 10% of a core
 * over 10 ms), at most --settle-max s, and return how long that took.  dred completes a
 * future before its background work (replica puts) ends; without this the leftover work
 * would run during the next contender's repetition and be charged to it.  The CPU it uses
 * is charged to the call that caused it (cpu_s), its duration goes to settle_s. */
double settle(void) {
  double t_start = now_s(), c_prev = cpu_now(), t_prev = t_start;
  if (opt.settle_max_s <= 0) return 0;
  for (;;) {
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
    double c = cpu_now(), t = now_s();
    if (c - c_prev < 0.1 * (t - t_prev) || t - t_start > opt.settle_max_s) break;
    c_prev = c;
    t_prev = t;
  }
  return now_s() - t_start;
}

__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...) {
  if (rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "dred-bench: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  exit(2);
}

void idle_barrier(void) { sleepy_barrier(comm); }

void idle_reduce(const double *in, double *out, int n, MPI_Op op) {
  MPI_Request r;
  MPI_Ireduce(in, out, n, MPI_DOUBLE, op, 0, comm, &r);
  sleepy_wait(&r);
}

void idle_bcast(void *buf, int n, MPI_Datatype t) {
  MPI_Request r;
  MPI_Ibcast(buf, n, t, 0, comm, &r);
  sleepy_wait(&r);
}

/* The common start; see the header comment. */
double sync_start(void) {
  double t0 = 0;
  idle_barrier();
  if (!one_node) return now_s();
  if (rank == 0) t0 = now_s() + opt.margin_ms * 1e-3;
  idle_bcast(&t0, 1, MPI_DOUBLE);
  if (now_s() > t0)
    late_starts++;
  else
    sleep_until(t0);
  return t0;
}

void fill(double *buf, size_t count, int rep, int j) {
  for (size_t i = 0; i < count; i++) buf[i] = val(i, rank, rep, j);
}

void zap(double *buf, size_t count) { memset(buf, 0xff, count * sizeof(double)); }

/* Root-side check: dred == MPI bit for bit, and both == the closed form at sampled points. */
int check(const char *what, const double *d, const double *m, size_t count, int rep,
                 int j) {
  int bad = 0;
  if (d && m && memcmp(d, m, count * sizeof(double)) != 0) {
    size_t i = 0;
    while (i < count && memcmp(&d[i], &m[i], sizeof(double)) == 0) i++;
    printf("WRONG %s rep %d: dred differs from MPI at element %zu: dred %.17g mpi %.17g\n",
           what, rep, i, i < count ? d[i] : 0.0, i < count ? m[i] : 0.0);
    bad = 1;
  }
  size_t step = count > 4096 ? count / 4096 : 1;
  for (size_t i = 0; i < count && !bad; i += step) {
    double e = 0;
    for (int r = 0; r < P; r++) e += val(i, r, rep, j);
    if (d && d[i] != e) {
      printf("WRONG %s rep %d: dred element %zu = %.17g, expected %.17g\n", what, rep, i, d[i], e);
      bad = 1;
    }
    if (m && m[i] != e) {
      printf("WRONG %s rep %d: MPI element %zu = %.17g, expected %.17g\n", what, rep, i, m[i], e);
      bad = 1;
    }
  }
  if (bad) {
    any_wrong = 1;
    fflush(stdout);
  }
  return bad;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

const char *human(size_t b, char *buf) {
  if (b >= MIB && b % MIB == 0)
    sprintf(buf, "%zuM", (size_t)(b / MIB));
  else if (b >= KIB && b % KIB == 0)
    sprintf(buf, "%zuK", (size_t)(b / KIB));
  else
    sprintf(buf, "%zu", b);
  return buf;
}

void csv_row(const char *scen, size_t bytes, double param, const char *who, int rep,
                    double sec, double cpu, double settle_s) {
  if (rank != 0 || !csv_f) return;
  fprintf(csv_f, "%s,%d,%zu,%g,%s,%d,%.9f,%.6f,%.6f\n", scen, P, bytes, param, who, rep, sec,
          cpu, settle_s);
  fflush(csv_f);
}

/* One point: per-rep arrays of dred and MPI times (root has them). */
summary_t *record(const char *scen, size_t bytes, double param, double *d, double *dc,
                         double *ds, double *m, double *mc, double *ms, int n, int wrong) {
  if (rank != 0) return NULL;
  summary_t *s = &sums[nsums < 1023 ? nsums++ : 1023];
  memset(s, 0, sizeof *s);
  snprintf(s->scen, sizeof s->scen, "%s", scen);
  s->bytes = bytes;
  s->param = param;
  s->n = n;
  s->wrong = wrong;
  s->dmin = s->mmin = INFINITY;
  s->dmax = s->mmax = -INFINITY;
  for (int i = 0; i < n; i++) {
    if (d[i] < s->dmin) s->dmin = d[i];
    if (d[i] > s->dmax) s->dmax = d[i];
    if (m[i] < s->mmin) s->mmin = m[i];
    if (m[i] > s->mmax) s->mmax = m[i];
  }
  double *tmp = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  memcpy(tmp, d, sizeof(double) * (size_t)n);
  s->dmed = opt.run_dred ? median(tmp, n) : NAN;
  memcpy(tmp, m, sizeof(double) * (size_t)n);
  s->mmed = opt.run_mpi ? median(tmp, n) : NAN;
  memcpy(tmp, dc, sizeof(double) * (size_t)n);
  s->dcpu = opt.run_dred ? median(tmp, n) : NAN;
  memcpy(tmp, mc, sizeof(double) * (size_t)n);
  s->mcpu = opt.run_mpi ? median(tmp, n) : NAN;
  memcpy(tmp, ds, sizeof(double) * (size_t)n);
  s->dsettle = opt.run_dred ? median(tmp, n) : NAN;
  memcpy(tmp, ms, sizeof(double) * (size_t)n);
  s->msettle = opt.run_mpi ? median(tmp, n) : NAN;
  free(tmp);
  s->bound1 = s->bound2 = NAN;
  if (!opt.run_dred) s->dmin = s->dmax = NAN;
  if (!opt.run_mpi) s->mmin = s->mmax = NAN;
  char hb[32];
  printf("  %-16s %6s param %-6g  dred %9.3f ms [%8.3f..%8.3f]  mpi %9.3f ms [%8.3f..%8.3f]"
         "  dred/mpi %6.3f  cpu dred/mpi %6.3f/%6.3f s  dred settle %5.0f ms%s\n",
         scen, human(bytes, hb), param, 1e3 * s->dmed, 1e3 * s->dmin, 1e3 * s->dmax,
         1e3 * s->mmed, 1e3 * s->mmin, 1e3 * s->mmax, s->dmed / s->mmed, s->dcpu, s->mcpu,
         1e3 * s->dsettle, wrong ? "  WRONG" : "");
  fflush(stdout);
  return s;
}

summary_t *find_sum(const char *scen, size_t bytes, double param) {
  for (int i = 0; i < nsums; i++)
    if (strcmp(sums[i].scen, scen) == 0 && sums[i].bytes == bytes && sums[i].param == param)
      return &sums[i];
  return NULL;
}

/* A repetition's verdict, known at rank 0: report it, share it, and say whether the run
 * must stop (the first WRONG one, unless --keep-going).  Collective over the app ranks. */
int wrong_verdict(int bad_all, const char *what, int rep, int *wrong) {
  if (rank == 0 && bad_all) {
    *wrong = 1;
    any_wrong = 1;
    say("WRONG %s rep %d (see above)\n", what, rep);
  }
  idle_bcast(&bad_all, 1, MPI_INT);
  if (bad_all && !opt.keep_going) {
    say("dred-bench: stopping the run after the first WRONG repetition (--keep-going to "
        "continue)\n");
    stop_all = 1;
    return 1;
  }
  return 0;
}

/* Collective: elementwise max over ranks of v[0..n-1], result at rank 0 (in place there). */
void max_to_root(double *v, int n) {
  MPI_Request r;
  if (rank == 0)
    MPI_Ireduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, 0, comm, &r);
  else
    MPI_Ireduce(v, NULL, n, MPI_DOUBLE, MPI_MAX, 0, comm, &r);
  sleepy_wait(&r);
}
