/*
 * fault_app.c -- the application side of dred's fault-injection harness.
 *
 *   dredrun -n P fault_app --outdir DIR [--bytes B] [--reductions N] [--concurrent C]
 *           [--root R] [--calib K]
 *           [--victim-mode none|worker|root|master|two|concurrent|node|masternode]
 *           [--kill-rank K[,K2]] [--kill-at SEC|call | --kill-frac F] [--kill-index I]
 *           [--master-pid-file FILE] [--pool-buffers] [--root-late SEC] [--op sum|affine]
 *           [--auto-tags [--blocking]] [--coll reduce|allreduce|bcast] [--kill-after-peers]
 *
 * --coll allreduce: every step's collectives are dred_iallreduce, and every member (not
 * only the root) checks its result against the closed form.  --coll bcast: dred_ibcast
 * from the root, every member checks that it holds the root's operand.  The victim modes
 * are the same; the harness's modes allreduce, bcast and bcastroot use them
 * (tests/faults/run-faults.sh).
 *
 * --auto-tags: every reduction is DRED_TAG_AUTO instead of an explicit tag, so small ones
 * of a one-node job meet in shared memory (lib/paths/meetpath.c) rather than go through
 * dred-master: the kill then lands in that path.  --blocking (with --auto-tags): each
 * collective is the blocking call (dred_reduce, dred_allreduce, dred_bcast), one after
 * the other, so that small ones of a one-node job take the meeting place's fast lane
 * (lib/shm/fast.c); the status is the call's.
 *
 * --op affine: a non-commutative op instead of MPI_SUM on doubles.  Each element is a pair
 * (a, b) of integer-valued doubles below AFF_Q, the affine map x -> a x + b mod AFF_Q;
 * the op composes two maps, (a1, b1) op (a2, b2) = (a1 a2, a1 b2 + b1) mod AFF_Q (the
 * product of the matrices [a b; 0 1]), a user op created non-commutative over a contiguous
 * type of two doubles.  The result must be the maps of ranks 0..P-1 composed in rank
 * order, which the root computes itself: a recovery that put an operand back in the wrong
 * place, or combined one twice, gives a wrong answer here even where a sum would not tell.
 *
 * --kill-after-peers: a victim that kills itself at a fixed moment (--kill-at SEC) waits
 * past that moment, if need be, until every rank's calls of the kill step returned (each
 * writes DIR/called.<r>; bounded: 30 s, then it dies anyway).  A trial that promises the
 * survivors' outcome once everyone arrived (a root killed while it folds the peers'
 * blocks) then tests that promise, not whether a loaded machine let a late rank reach its
 * call within the moment.
 *
 * --root-late SEC: in the kill step the root calls SEC seconds after the others, so the
 * non-roots pair among themselves first (the first two into an absorbing task on one node:
 * tests/faults/rollforward.sh).
 *
 * --pool-buffers: every operand buffer comes from dred_alloc_mem (the node's shared pool),
 * so a non-root member's dred_ireduce reads it in place instead of copying it out of
 * private memory: a kill inside or right after the call must then lose nothing.
 *
 * What one job does:
 *   1. dred_init; every rank writes DIR/pid.<r> ("<pid> <ppid>": the program and its
 *      dred-launch) and sends its own stderr through a pipe to a thread that prefixes every
 *      line with the wall-clock time (seconds.microseconds) and appends it to DIR/stderr.<r>.
 *      mpiexec may exit as soon as one process dies, taking the survivors' stdout/stderr
 *      pipes with it, so everything this program reports goes to files.
 *   2. MPI_Barrier on dred_comm(): nobody may die before every process finished init.
 *   3. Calibration: K failure-free steps (each: fill the operands, barrier, then the clock
 *      starts and C concurrent dred_ireduce of B/8 doubles each, explicit tags), checked
 *      like every other step.  A step's time is the
 *      slowest rank's time until all its futures are done; t = median over the K steps,
 *      written by rank 0 to DIR/t.txt (seconds).
 *   4. N main steps, same shape.  Steps before --kill-index are preceded by a barrier; the
 *      kill step too (it is the last collective call of the job: once a process is dead,
 *      MPI collectives hang), followed there by a barrier through files (DIR/passed.<r>,
 *      no MPI) so that no process is still finishing MPI's barrier when the fault comes.
 *      In the kill step each victim rank starts a thread that, at
 *      kill-at seconds (or kill-frac * t) after the rank's own start of that step, writes
 *      DIR/kill.<r> (wall-clock ns) and DIR/entered.<r> (when its first call of the step
 *      began, 0 if it had not) and raise(SIGKILL)s its process.  In mode "master" the
 *      killer is app rank --kill-rank (a survivor) and it SIGKILLs dred-master's pid (from
 *      --master-pid-file), writing DIR/kill.master first.  A victim/killer whose step ends
 *      before its deadline waits for the deadline, so every trial really injects its fault.
 *      Modes "node" and "masternode" lose a whole (simulated) node at once: the victims are
 *      every application rank of that node (--kill-rank lists them) and the root -- on
 *      another node -- is the killer: at the deadline it writes DIR/kill.<r> for each
 *      victim (and DIR/kill.master in masternode mode), then SIGKILLs them by the pids they
 *      wrote to DIR/pid.<r> (and dred-master's, from --master-pid-file), back to back.
 *   5. Every rank appends one line per reduction to DIR/rank.<r>.txt as it completes
 *      (status, and at the root "exact" or "wrong" after comparing every element with
 *      the closed-form sum), then "final", then calls dred_finalize and writes its status,
 *      then "exit".  After a failure dred_finalize returns an error without collective
 *      calls and the program exits without MPI_Finalize, as dred.h says.
 *      The final line also carries kill_step_done_ns (wall clock, CLOCK_REALTIME as in
 *      DIR/kill.<r>, when the last of the kill step's futures returned from
 *      dred_future_get, stamped before the result is checked) and, at the root,
 *      combine_ms / kernel_ms: one combine of a reduction's operand (MPI_Reduce_local, and
 *      dred's own loop, lib/engine/kernel.c), timed after calibration (time_combine below).
 *
 * Values are integer-valued doubles, so sums are exact whatever the combine order:
 *   send[r][i] = (r + 1) * (1 + j % 3) + (i + 13 j + 7 s) % 1000   (reduction j of step s)
 *   sum        = (1 + j % 3) * P (P + 1) / 2 + P * ((i + 13 j + 7 s) % 1000)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "dred.h"
#include "../../lib/engine/kernel.h" /* dred_kernel_find: the combine loop dred itself uses, timed beside MPI's */
#include "../mpi/sleepy_wait.h"

#define MAX_VICTIMS 16

static int g_rank = -1, g_size = 0;
/* --kill-at call: the victim dies right after its first dred_ireduce of the kill step
 * returns -- before its runtime thread may have told anyone of the operand. */
static int g_kill_after_call, g_kill_now;
/* --kill-after-peers: a self-kill waits for every rank's DIR/called.<r> too */
static int g_kill_after_peers;
/* A victim in its kill step: once all its dred_ireduce calls returned, DIR/called.<r> gets
 * the wall-clock time, so the harness can tell kills during the call (the operand still only
 * in this process's memory) from kills during the reduction proper. */
static int g_victim_step;
/* ... and the wall-clock time its first call of the kill step began (0: not yet), which
 * its self-kill writes to DIR/entered.<r>: a kill before it is a kill before the
 * reduction began (the application had not handed anything to dred yet). */
static long long g_entered_ns;
static FILE *g_out;  /* DIR/rank.<r>.txt */
static char g_outdir[3072] = ".";

/* ---- clocks ------------------------------------------------------------------------------ */

/* b - a in ms */
static double tv_ms(struct timeval b, struct timeval a) {
  return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_usec - a.tv_usec) / 1e3;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long long wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- output -------------------------------------------------------------------------- */

static __attribute__((format(printf, 1, 2))) void out(const char *fmt, ...) {
  va_list ap;
  if (g_out == NULL) return;
  va_start(ap, fmt);
  vfprintf(g_out, fmt, ap);
  va_end(ap);
  fputc('\n', g_out);
  fflush(g_out);
}

static void write_file(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static double mono_s(void);

/* MPI's barrier completes at each process only once the messages of its last round
 * arrive, which can be after a faster process has left it: a process killed then leaves
 * the slow one inside MPI_Ibarrier for ever (seen: a node-loss trial "hung" with a
 * survivor in the barrier before the kill step, the reduction waiting for its call).  So
 * before the kill step every process also says so in a file, and waits, without MPI, until
 * all have: nobody is in an MPI call of the application when the fault comes. */
static void all_passed_barrier(void) {
  char name[64], path[3200];
  double t_end = mono_s() + 120.0;
  int r, missing;
  snprintf(name, sizeof name, "passed.%d", g_rank);
  write_file(name, "1\n");
  do {
    for (missing = 0, r = 0; r < g_size && !missing; r++) {
      snprintf(path, sizeof path, "%s/passed.%d", g_outdir, r);
      missing = access(path, F_OK) != 0;
    }
    if (missing) usleep(1000);
  } while (missing && mono_s() < t_end);
  if (missing) out("error not every process passed the barrier before the kill step in 120 s");
}
static void write_file(const char *name, const char *fmt, ...) {
  char path[4096], tmp[4200];
  FILE *f;
  va_list ap;
  snprintf(path, sizeof path, "%s/%s", g_outdir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if ((f = fopen(tmp, "w")) == NULL) return;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fclose(f);
  rename(tmp, path); /* readers see the whole file or none */
}

/* ---- stderr ------------------------------------------------------------------------- */

/* Straight into DIR/stderr.<r>.  dred stamps its own lines with the wall clock
 * (DRED_LOG_TIME=1, which the harness reads); a stamping thread behind a pipe, as there
 * was, lost whatever a library wrote just before the process died -- the one message
 * that would say why. */
static void stderr_to_file(void) {
  char path[4096];
  int fd;
  snprintf(path, sizeof path, "%s/stderr.%d", g_outdir, g_rank);
  fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
  if (fd < 0) return;
  fflush(stderr);
  if (dup2(fd, 2) >= 0) setvbuf(stderr, NULL, _IONBF, 0);
  close(fd);
}

/* Our own exit closes g_out first; a library that calls exit() on its own (an MPI or UCX
 * fatal error) gets here with it open: say so, or the harness sees a survivor vanish
 * without a word. */
static void exit_unexpected(void) {
  if (g_out == NULL) return;
  out("exit_unexpected: exit() called before the app's own end (a library's fatal error?)");
  fclose(g_out);
  g_out = NULL;
}

/* A fatal signal (SIGSEGV, SIGBUS, SIGABRT, ...): the signal, the thread and a backtrace go
 * to rank.<r>.txt with write(2) (UCX's own handler would report it only on stderr), then
 * the signal's default action runs. */
static int g_out_fd = -1;

static void on_fatal(int sig, siginfo_t *si, void *uc) {
  char line[160];
  void *frames[48];
  int n, len;
  (void)uc;
  if (g_out_fd >= 0) {
    len = snprintf(line, sizeof line, "fatal_signal sig=%d (%s) addr=%p tid=%ld\n", sig,
                   strsignal(sig), si != NULL ? si->si_addr : NULL, (long)gettid());
    if (len > 0 && write(g_out_fd, line, (size_t)len) < 0) len = 0;
    n = backtrace(frames, 48);
    backtrace_symbols_fd(frames, n, g_out_fd);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Any other signal that could end us: who sent it goes to rank.<r>.txt first (a survivor
 * that vanished must say what ended it), then whatever was there before runs -- dred's,
 * MPICH's or UCX's handler, the default action, or nothing (ignored). */
static const int g_logged_sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                                    SIGPIPE, SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF};
static struct sigaction g_prev_sa[sizeof g_logged_sigs / sizeof g_logged_sigs[0]];

static void on_logged(int sig, siginfo_t *si, void *uc) {
  char line[160];
  size_t i;
  int len;
  if (g_out_fd >= 0) {
    len = snprintf(line, sizeof line, "signal sig=%d (%s) from_pid=%ld code=%d tid=%ld\n", sig,
                   strsignal(sig), si != NULL ? (long)si->si_pid : -1L,
                   si != NULL ? si->si_code : 0, (long)gettid());
    if (len > 0 && write(g_out_fd, line, (size_t)len) < 0) len = 0;
  }
  for (i = 0; i < sizeof g_logged_sigs / sizeof g_logged_sigs[0]; i++) {
    const struct sigaction *p = &g_prev_sa[i];
    if (g_logged_sigs[i] != sig) continue;
    if (p->sa_flags & SA_SIGINFO) {
      p->sa_sigaction(sig, si, uc);
    } else if (p->sa_handler == SIG_DFL) {
      signal(sig, SIG_DFL);
      raise(sig);
    } else if (p->sa_handler != SIG_IGN) {
      p->sa_handler(sig);
    }
  }
}

static void signal_reports_install(void) {
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
  struct sigaction sa;
  size_t i;
  if (g_out == NULL) return;
  g_out_fd = fileno(g_out);
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
  sa.sa_sigaction = on_logged;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  for (i = 0; i < sizeof g_logged_sigs / sizeof g_logged_sigs[0]; i++)
    sigaction(g_logged_sigs[i], &sa, &g_prev_sa[i]);
}

/* ---- the injected fault -------------------------------------------------------------- */

typedef struct {
  double deadline_mono;
  pid_t target; /* 0: myself (raise) */
  volatile int fired;
} killer_t;

/* Sleep until `deadline` (seconds on CLOCK_MONOTONIC, as mono_s() gives). */
static void sleep_until(double deadline) {
  struct timespec ts;
  ts.tv_sec = (time_t)deadline;
  ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static killer_t g_killer;

/* Waits until the calls of the kill step returned (DIR/called.<r>) at ranks[0..n-1], or
 * at every rank when ranks is NULL; bounded: 30 s in all, then the kill comes anyway. */
static void wait_called(const int *ranks, int n) {
  double give_up = mono_s() + 30.0;
  for (int i = 0; i < (ranks != NULL ? n : g_size); i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/called.%d", g_outdir, ranks != NULL ? ranks[i] : i);
    while (access(path, F_OK) != 0 && mono_s() < give_up) usleep(200);
  }
}

static void *killer_main(void *arg) {
  killer_t *k = arg;
  double d = k->deadline_mono;
  sleep_until(d);
  /* --kill-at call: once every rank's calls of the step returned, so the master dies
   * after every operand was handed over. */
  if (g_kill_after_call) wait_called(NULL, 0);
  write_file("kill.master", "%lld\n", wall_ns());
  kill(k->target, SIGKILL);
  k->fired = 1;
  out("killed master pid=%ld", (long)k->target);
  return NULL;
}

/* A node loss: the root kills every victim (and in masternode mode dred-master) at once,
 * by pid.  The time goes to every victim's kill file first, so the harness's detection
 * and in-call figures work as for a single victim. */
typedef struct {
  double deadline_mono;
  int n;
  int ranks[MAX_VICTIMS];
  pid_t pids[MAX_VICTIMS];
  pid_t master; /* 0: the master's node survives */
  /* --kill-at call: kill once every victim's calls returned (its DIR/called.<r>), not at a
   * fixed moment -- a fixed delay may land inside calls that take longer on a loaded
   * machine, and a kill inside the call is a different trial (PROC_FAILED is then right). */
  int after_calls;
} node_killer_t;

static node_killer_t g_node_killer;

static void *node_killer_main(void *arg) {
  node_killer_t *k = arg;
  char name[64];
  long long now;
  int i;
  double d = k->deadline_mono;
  sleep_until(d);
  if (k->after_calls) wait_called(k->ranks, k->n);
  now = wall_ns();
  for (i = 0; i < k->n; i++) {
    snprintf(name, sizeof name, "kill.%d", k->ranks[i]);
    write_file(name, "%lld\n", now);
  }
  if (k->master > 0) write_file("kill.master", "%lld\n", now);
  for (i = 0; i < k->n; i++)
    if (k->pids[i] > 1) kill(k->pids[i], SIGKILL);
  if (k->master > 1) kill(k->master, SIGKILL);
  out("killed node: %d application process(es)%s", k->n, k->master > 0 ? " and dred-master" : "");
  return NULL;
}

/* The pid a rank wrote to DIR/pid.<r> at start; 0 if unreadable. */
static pid_t rank_pid(int r) {
  char path[4200];
  long p = 0;
  FILE *f;
  snprintf(path, sizeof path, "%s/pid.%d", g_outdir, r);
  if ((f = fopen(path, "r")) == NULL) return 0;
  if (fscanf(f, "%ld", &p) != 1) p = 0;
  fclose(f);
  return (pid_t)p;
}

/* A victim's own kill: the wall-clock time of the kill goes to DIR/kill.<r> first. */
static void *victim_main(void *arg) {
  killer_t *k = arg;
  char name[64];
  double d = k->deadline_mono;
  long long entered;
  sleep_until(d);
  if (g_kill_after_peers) wait_called(NULL, 0);
  entered = __atomic_load_n(&g_entered_ns, __ATOMIC_SEQ_CST);
  snprintf(name, sizeof name, "kill.%d", g_rank);
  write_file(name, "%lld\n", wall_ns());
  snprintf(name, sizeof name, "entered.%d", g_rank);
  write_file(name, "%lld\n", entered);
  raise(SIGKILL);
  return NULL;
}

/* ---- values -------------------------------------------------------------------------- */

/* --op affine (see the top): n doubles are n / 2 maps (a, b), a in [1, AFF_Q), b in
 * [0, AFF_Q); products stay below 2^24, so every step is exact in doubles. */
#define AFF_Q 4093.0
static int g_affine;
static int g_auto_tags; /* --auto-tags */
static int g_blocking;  /* --blocking: the blocking calls, with DRED_TAG_AUTO */
static int g_coll;      /* --coll: 0 reduce, 1 allreduce, 2 bcast */
static int g_root;      /* the root (a bcast's result is its operand) */
static MPI_Datatype g_pair = MPI_DATATYPE_NULL;
static MPI_Op g_aff_op = MPI_OP_NULL;

/* Map e of rank r's operand in reduction j of step s. */
static void aff_map(size_t e, int r, int j, int s, double *a, double *b) {
  *a = (double)(1 + (e * 7u + (size_t)r * 131u + (size_t)j * 17u + (size_t)s * 29u) % 4092u);
  *b = (double)((e * 3u + (size_t)r * 1009u + (size_t)j * 5u + (size_t)s * 11u) % 4093u);
}

/* inout = in op inout, in lying left (lower ranks) of inout: MPI's order. */
static void aff_compose(void *in, void *inout, int *len, MPI_Datatype *dt) {
  const double *x = in;
  double *y = inout;
  int i;
  (void)dt;
  for (i = 0; i < *len; i++) {
    double a1 = x[2 * i], b1 = x[2 * i + 1], a2 = y[2 * i], b2 = y[2 * i + 1];
    y[2 * i] = fmod(a1 * a2, AFF_Q);
    y[2 * i + 1] = fmod(a1 * b2 + b1, AFF_Q);
  }
}

/* Map e of the result: the maps of ranks 0..p-1 composed in rank order. */
static void aff_expected(size_t e, int p, int j, int s, double *ea, double *eb) {
  double a = 1.0, b = 0.0, a2, b2;
  int r;
  for (r = 0; r < p; r++) {
    aff_map(e, r, j, s, &a2, &b2);
    b = fmod(a * b2 + b, AFF_Q); /* (a, b) op (a2, b2) */
    a = fmod(a * a2, AFF_Q);
  }
  *ea = a;
  *eb = b;
}

static void fill(double *b, size_t n, int r, int j, int s) {
  size_t i;
  double a = (double)((r + 1) * (1 + j % 3));
  if (g_affine) {
    for (i = 0; i + 1 < n; i += 2) aff_map(i / 2, r, j, s, &b[i], &b[i + 1]);
    return;
  }
  for (i = 0; i < n; i++) b[i] = a + (double)((i + 13u * (size_t)j + 7u * (size_t)s) % 1000u);
}

/* Number of wrong elements; *first gets the first wrong index. */
static size_t check(const double *b, size_t n, int p, int j, int s, size_t *first) {
  size_t i, bad = 0;
  double a = (double)((1 + j % 3) * p * (p + 1) / 2);
  if (g_coll == 2) { /* a bcast: the root's operand (fill), p plays no part */
    a = (double)((g_root + 1) * (1 + j % 3));
    for (i = 0; i < n; i++)
      if (b[i] != a + (double)((i + 13u * (size_t)j + 7u * (size_t)s) % 1000u)) {
        if (bad == 0) *first = i;
        bad++;
      }
    return bad;
  }
  if (g_affine) {
    for (i = 0; i + 1 < n; i += 2) {
      double ea, eb;
      aff_expected(i / 2, p, j, s, &ea, &eb);
      if (b[i] != ea || b[i + 1] != eb) {
        if (bad == 0) *first = i;
        bad++;
      }
    }
    return bad;
  }
  for (i = 0; i < n; i++) {
    double e = a + (double)p * (double)((i + 13u * (size_t)j + 7u * (size_t)s) % 1000u);
    if (b[i] != e) {
      if (bad == 0) *first = i;
      bad++;
    }
  }
  return bad;
}

static const char *sname(int st) {
  switch (st) {
  case DRED_OK: return "OK";
  case DRED_ERR_ARG: return "ARG";
  case DRED_ERR_MISMATCH: return "MISMATCH";
  case DRED_ERR_NOMEM: return "NOMEM";
  case DRED_ERR_PROC_FAILED: return "PROC_FAILED";
  case DRED_ERR_ROOT_FAILED: return "ROOT_FAILED";
  case DRED_ERR_MASTER_LOST: return "MASTER_LOST";
  case DRED_ERR_STORAGE: return "STORAGE";
  case DRED_ERR_SHUTDOWN: return "SHUTDOWN";
  case DRED_ERR_INTERNAL: return "INTERNAL";
  case DRED_ERR_TIMEOUT: return "TIMEOUT";
  default: return "UNKNOWN";
  }
}

/* ---- one step: C concurrent reductions ---------------------------------------------------- */

typedef struct {
  size_t count;
  int conc, root;
  double **send, **recv;
} bufs_t;

typedef struct {
  int worst;      /* first non-OK status seen, else DRED_OK */
  int wrong;      /* reductions that returned DRED_OK with a wrong value at the root */
  double seconds; /* until every future of the step is done, on this rank */
  long long first_done_ns, last_done_ns; /* wall clock (CLOCK_REALTIME, the time base of
                   DIR/kill.<r>) when the first / last of the step's futures returned from
                   dred_future_get (a call that failed to start counts at its return) */
} step_res_t;

/* One of the step's collectives was over at wall-clock `ns`: the step's first and last. */
static void res_stamp(step_res_t *res, long long ns) {
  if (res->first_done_ns == 0 || ns < res->first_done_ns) res->first_done_ns = ns;
  if (ns > res->last_done_ns) res->last_done_ns = ns;
}

/* The operands of step s.  Filled before the step's clock starts: a kill while the
 * application is still writing its own buffer is not a kill during a reduction. */
static void fill_step(bufs_t *b, const char *phase, int s) {
  int j;
  for (j = 0; j < b->conc; j++) fill(b->send[j], b->count, g_rank, j, s + (phase[0] == 'c' ? 500 : 0));
}

/* Runs step s (phase "calib" or "main"); the caller filled the operands (fill_step) and
 * did any barrier and arming. */
static step_res_t run_step(bufs_t *b, const char *phase, int s, int tagbase, double t0) {
  dred_future **f = calloc((size_t)b->conc, sizeof *f);
  int *done = calloc((size_t)b->conc, sizeof *done);
  double *call_ms = calloc((size_t)b->conc, sizeof *call_ms);
  int *fresh = calloc((size_t)b->conc, sizeof *fresh), *st = calloc((size_t)b->conc, sizeof *st);
  long long *got_ns = calloc((size_t)b->conc, sizeof *got_ns);
  int j, left = b->conc;
  step_res_t res = {DRED_OK, 0, 0.0, 0, 0};
  double last_mono = t0; /* when the step's last future returned: the checks come after */

  for (j = 0; j < b->conc; j++) {
    int tag = tagbase + j;
    if (j == b->conc - 1 && g_victim_step) g_victim_step = 2; /* the last call is next */
    struct rusage ru0, ru1;
    getrusage(RUSAGE_THREAD, &ru0); /* outside the timed call */
    if (g_victim_step && __atomic_load_n(&g_entered_ns, __ATOMIC_RELAXED) == 0)
      __atomic_store_n(&g_entered_ns, wall_ns(), __ATOMIC_SEQ_CST);
    double c0 = mono_s();
    int rc, cnt = (int)(g_affine ? b->count / 2 : b->count), tg = g_auto_tags ? DRED_TAG_AUTO : tag;
    MPI_Datatype dt = g_affine ? g_pair : MPI_DOUBLE;
    MPI_Op op = g_affine ? g_aff_op : MPI_SUM;
    if (g_blocking) {
      /* the call is the whole collective: its status is the future's */
      if (g_coll == 1) {
        st[j] = dred_allreduce(b->send[j], b->recv[j], cnt, dt, op, dred_comm());
      } else if (g_coll == 2) {
        if (g_rank == b->root) memcpy(b->recv[j], b->send[j], b->count * sizeof(double));
        st[j] = dred_bcast(b->recv[j], cnt, dt, b->root, dred_comm());
      } else {
        st[j] = dred_reduce(b->send[j], g_rank == b->root ? b->recv[j] : NULL, cnt, dt, op,
                            b->root, dred_comm());
      }
      rc = DRED_OK;
      f[j] = NULL;
      got_ns[j] = wall_ns();
      last_mono = mono_s();
      res_stamp(&res, got_ns[j]);
      done[j] = 1;
      fresh[j] = 1;
      left--;
    } else if (g_coll == 1) {
      rc = dred_iallreduce(b->send[j], b->recv[j], cnt, dt, op, dred_comm(), tg, &f[j]);
    } else if (g_coll == 2) {
      if (g_rank == b->root) memcpy(b->recv[j], b->send[j], b->count * sizeof(double));
      rc = dred_ibcast(b->recv[j], cnt, dt, b->root, dred_comm(), tg, &f[j]);
    } else {
      rc = dred_ireduce(b->send[j], g_rank == b->root ? b->recv[j] : NULL, cnt, dt, op, b->root,
                        dred_comm(), tg, &f[j]);
    }
    call_ms[j] = (mono_s() - c0) * 1e3;
    getrusage(RUSAGE_THREAD, &ru1);
    /* A slow call: was it waiting for a core (involuntary switches, little CPU), blocked
     * (voluntary switches) or faulting pages in? */
    if (call_ms[j] > 50)
      out("slowcall t0_mono=%.6f tid=%ld ms=%.1f minflt=%ld majflt=%ld nvcsw=%ld nivcsw=%ld "
          "utime_ms=%.1f stime_ms=%.1f",
          c0, (long)gettid(), call_ms[j], ru1.ru_minflt - ru0.ru_minflt,
          ru1.ru_majflt - ru0.ru_majflt, ru1.ru_nvcsw - ru0.ru_nvcsw,
          ru1.ru_nivcsw - ru0.ru_nivcsw, tv_ms(ru1.ru_utime, ru0.ru_utime),
          tv_ms(ru1.ru_stime, ru0.ru_stime));
    if (g_victim_step == 2) {
      char name[64];
      snprintf(name, sizeof name, "called.%d", g_rank);
      write_file(name, "%lld\n", wall_ns());
      g_victim_step = 0;
    }
    if (g_kill_now) {
      char name[64];
      snprintf(name, sizeof name, "kill.%d", g_rank);
      write_file(name, "%lld\n", wall_ns());
      raise(SIGKILL);
    }
    if (rc != DRED_OK) {
      out("red phase=%s step=%d idx=%d tag=%d status=%d name=%s check=na bad=0 ms=%.3f start_error=1",
          phase, s, j, tag, rc, sname(rc), (mono_s() - t0) * 1e3);
      if (res.worst == DRED_OK) res.worst = rc;
      done[j] = 1;
      left--;
      last_mono = mono_s();
      res_stamp(&res, wall_ns());
    }
  }
  int unchecked = g_blocking; /* blocking calls: all done, their results still to check */
  while (left > 0 || unchecked) {
    int progressed = 0;
    unchecked = 0;
    /* First every future that is done now, each stamped as it returns; the checks below
     * (a pass over the whole result at the root) come after, so that they do not delay the
     * stamps of the futures found in the same pass (concurrent mode). */
    for (j = 0; j < b->conc; j++) {
      if (done[j] || dred_future_is_done(f[j]) != 1) continue;
      st[j] = dred_future_get(f[j]);
      got_ns[j] = wall_ns();
      last_mono = mono_s();
      res_stamp(&res, got_ns[j]);
      done[j] = 1;
      fresh[j] = 1;
      left--;
      progressed = 1;
    }
    for (j = 0; j < b->conc; j++) {
      int tag = tagbase + j;
      const char *chk = "na";
      size_t bad = 0, first = 0;
      if (!fresh[j]) continue;
      fresh[j] = 0;
      if ((g_rank == b->root || g_coll != 0) && st[j] == DRED_OK) { /* every member's result */
        bad = check(b->recv[j], b->count, g_size, j, s + (phase[0] == 'c' ? 500 : 0), &first);
        chk = bad ? "wrong" : "exact";
        if (bad) res.wrong++;
      }
      if (st[j] != DRED_OK && res.worst == DRED_OK) res.worst = st[j];
      out("red phase=%s step=%d idx=%d tag=%d status=%d name=%s check=%s bad=%zu first_bad=%zu "
          "ms=%.3f call_ms=%.3f wall_ns=%lld got_ns=%lld",
          phase, s, j, tag, st[j], sname(st[j]), chk, bad, first, (mono_s() - t0) * 1e3, call_ms[j],
          wall_ns(), got_ns[j]);
      if (bad && g_affine) {
        double ea, eb;
        aff_expected(first / 2, g_size, j, s + (phase[0] == 'c' ? 500 : 0), &ea, &eb);
        out("wrong_detail tag=%d index=%zu got=(%.17g,%.17g) expected=(%.17g,%.17g)", tag,
            first, b->recv[j][first], b->recv[j][first + 1], ea, eb);
      } else if (bad) {
        double a = (double)((1 + j % 3) * g_size * (g_size + 1) / 2);
        double e = a + (double)g_size *
                           (double)((first + 13u * (size_t)j +
                                     7u * (size_t)(s + (phase[0] == 'c' ? 500 : 0))) % 1000u);
        out("wrong_detail tag=%d index=%zu got=%.17g expected=%.17g", tag, first,
            b->recv[j][first], e);
      }
      dred_future_free(f[j]);
    }
    if (!progressed) usleep(200);
  }
  /* The step's time ends when its last future returned, not after the root's checks: a
   * user op's closed form (--op affine) takes longer than the reduction itself. */
  res.seconds = last_mono - t0;
  free(f);
  free(done);
  free(call_ms);
  free(fresh);
  free(st);
  free(got_ns);
  return res;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The time of one combine of a reduction's operand (count doubles, MPI_SUM: the op every
 * reduction here uses), the work a recovery does at least once for a lost operand: median
 * of `reps` timed runs after one untimed warm-up, (a) MPI_Reduce_local and (b) the loop dred
 * itself combines with (lib/engine/kernel.c, dred_kernel_find; -1 if it has none).  In place, on
 * private buffers. */
static void time_combine(size_t count, int reps, double *mpi_ms, double *kern_ms) {
  double *in = malloc(count * sizeof *in), *io = malloc(count * sizeof *io);
  double *tm = calloc((size_t)reps, sizeof *tm);
  const dred_kernel_t *k = dred_kernel_find(MPI_DOUBLE, MPI_SUM);
  int i;
  *mpi_ms = *kern_ms = -1.0;
  if (in == NULL || io == NULL || tm == NULL) goto out;
  fill(in, count, 0, 0, 0);
  fill(io, count, 1, 0, 0);
  MPI_Reduce_local(in, io, (int)count, MPI_DOUBLE, MPI_SUM); /* warm: pages, caches */
  for (i = 0; i < reps; i++) {
    double c0 = mono_s();
    MPI_Reduce_local(in, io, (int)count, MPI_DOUBLE, MPI_SUM);
    tm[i] = (mono_s() - c0) * 1e3;
  }
  qsort(tm, (size_t)reps, sizeof *tm, cmp_d);
  *mpi_ms = tm[reps / 2];
  if (k != NULL) {
    k->inplace(in, io, count);
    for (i = 0; i < reps; i++) {
      double c0 = mono_s();
      k->inplace(in, io, count);
      tm[i] = (mono_s() - c0) * 1e3;
    }
    qsort(tm, (size_t)reps, sizeof *tm, cmp_d);
    *kern_ms = tm[reps / 2];
  }
out:
  free(in);
  free(io);
  free(tm);
}

static int has_rank(const int *v, int n, int r) {
  int i;
  for (i = 0; i < n; i++)
    if (v[i] == r) return 1;
  return 0;
}

int main(int argc, char **argv) {
  size_t bytes = 4u << 20;
  int nred = 1, conc = 1, root = 0, calib = 3, kill_index = 0, nvictims = 0;
  int victims[MAX_VICTIMS];
  double kill_at = -1.0, kill_frac = -1.0, root_late = 0.0;
  char mode[32] = "none", master_pid_file[4096] = "";
  static const struct option opts[] = {
      {"bytes", required_argument, 0, 'b'},      {"reductions", required_argument, 0, 'n'},
      {"concurrent", required_argument, 0, 'c'}, {"root", required_argument, 0, 'r'},
      {"calib", required_argument, 0, 'K'},      {"victim-mode", required_argument, 0, 'm'},
      {"kill-rank", required_argument, 0, 'k'},  {"kill-at", required_argument, 0, 'a'},
      {"kill-frac", required_argument, 0, 'F'},  {"kill-index", required_argument, 0, 'i'},
      {"outdir", required_argument, 0, 'o'},     {"master-pid-file", required_argument, 0, 'M'},
      {"pool-buffers", no_argument, 0, 'P'},     {"root-late", required_argument, 0, 'L'},
      {"op", required_argument, 0, 'O'},         {"coll", required_argument, 0, 'X'},         {"auto-tags", no_argument, 0, 'A'}, {"blocking", no_argument, 0, 'B'},
      {"kill-after-peers", no_argument, 0, 'W'},
      {0, 0, 0, 0}};
  int c, rc, s, j, victim = 0, killer = 0, node_mode, pool_buffers = 0;
  bufs_t b;
  double t = 0.0, t0, tk0 = 0.0, comb_ms = -1.0, kern_ms = -1.0;
  char path[4096];
  step_res_t kill_res = {DRED_OK, 0, 0.0, 0, 0};
  int wrong_total = 0;
  pthread_t kth;

  if ((rc = dred_init(&argc, &argv)) != DRED_OK) {
    fprintf(stderr, "fault_app: dred_init failed: %s\n", dred_strerror(rc));
    return 2;
  }
  MPI_Comm_rank(dred_comm(), &g_rank);
  MPI_Comm_size(dred_comm(), &g_size);

  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'b': {
      char *end;
      double v = strtod(optarg, &end);
      if (*end == 'K' || *end == 'k') v *= 1024;
      if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
      if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
      bytes = (size_t)v;
      break;
    }
    case 'n': nred = atoi(optarg); break;
    case 'c': conc = atoi(optarg); break;
    case 'r': root = atoi(optarg); break;
    case 'K': calib = atoi(optarg); break;
    case 'm': snprintf(mode, sizeof mode, "%s", optarg); break;
    case 'k': {
      char *p = optarg, *end;
      while (*p && nvictims < MAX_VICTIMS) {
        victims[nvictims++] = (int)strtol(p, &end, 10);
        if (end == p) break;
        p = (*end == ',') ? end + 1 : end;
      }
      break;
    }
    case 'a':
      if (strcmp(optarg, "call") == 0) g_kill_after_call = 1;
      else kill_at = atof(optarg);
      break;
    case 'F': kill_frac = atof(optarg); break;
    case 'i': kill_index = atoi(optarg); break;
    case 'o': snprintf(g_outdir, sizeof g_outdir, "%s", optarg); break;
    case 'M': snprintf(master_pid_file, sizeof master_pid_file, "%s", optarg); break;
    case 'P': pool_buffers = 1; break;
    case 'A': g_auto_tags = 1; break;
    case 'W': g_kill_after_peers = 1; break;
    case 'B': g_blocking = 1; break;
    case 'X':
      g_coll = strcmp(optarg, "allreduce") == 0 ? 1 : strcmp(optarg, "bcast") == 0 ? 2 : 0;
      if (g_coll == 0 && strcmp(optarg, "reduce") != 0) {
        fprintf(stderr, "fault_app: --coll reduce|allreduce|bcast, not %s\n", optarg);
        return 2;
      }
      break;
    case 'L': root_late = atof(optarg); break;
    case 'O':
      if (strcmp(optarg, "affine") == 0) g_affine = 1;
      else if (strcmp(optarg, "sum") != 0) {
        fprintf(stderr, "fault_app: --op sum|affine, not %s\n", optarg);
        return 2;
      }
      break;
    default: fprintf(stderr, "fault_app: bad option\n"); return 2;
    }
  }
  if (conc < 1) conc = 1;
  if (nred < 1) nred = 1;
  if (calib < 1) calib = 1;
  if (kill_index < 0 || kill_index >= nred) kill_index = nred - 1;
  if (root < 0 || root >= g_size) root = 0;
  g_root = root;

  stderr_to_file();
  snprintf(path, sizeof path, "%s/rank.%d.txt", g_outdir, g_rank);
  g_out = fopen(path, "w");
  atexit(exit_unexpected);
  signal_reports_install(); /* after dred_init (MPI_Init): ours, not UCX's, from here on */
  {
    char name[64];
    snprintf(name, sizeof name, "pid.%d", g_rank);
    write_file(name, "%ld %ld\n", (long)getpid(), (long)getppid());
  }
  out("start rank=%d size=%d pid=%ld bytes=%zu reductions=%d concurrent=%d root=%d mode=%s "
      "kill_index=%d pool_buffers=%d op=%s",
      g_rank, g_size, (long)getpid(), bytes, nred, conc, root, mode, kill_index, pool_buffers,
      g_affine ? "affine" : "sum");

  b.count = bytes / sizeof(double);
  if (b.count < 1) b.count = 1;
  if (g_affine) {
    b.count = b.count < 2 ? 2 : b.count & ~(size_t)1; /* whole maps */
    MPI_Type_contiguous(2, MPI_DOUBLE, &g_pair);
    MPI_Type_commit(&g_pair);
    MPI_Op_create(aff_compose, 0, &g_aff_op);
  }
  b.conc = conc;
  b.root = root;
  b.send = calloc((size_t)conc, sizeof *b.send);
  b.recv = calloc((size_t)conc, sizeof *b.recv);
  for (j = 0; j < conc; j++) {
    if (pool_buffers) {
      void *p = NULL;
      if ((rc = dred_alloc_mem(b.count * sizeof(double), &p)) != DRED_OK) {
        out("error dred_alloc_mem of %zu bytes: %s", b.count * sizeof(double), dred_strerror(rc));
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      b.send[j] = p;
    } else {
      b.send[j] = malloc(b.count * sizeof(double));
    }
    b.recv[j] = g_rank == root || g_coll ? malloc(b.count * sizeof(double)) : NULL;
    if (b.send[j] == NULL || ((g_rank == root || g_coll) && b.recv[j] == NULL)) {
      out("error no memory");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }

  /* Every barrier here sleeps while it waits (tests/mpi/sleepy_wait.h): with MPICH's spinning
   * MPI_Barrier the ranks that arrive first would take the cores the others need to finish
   * their step, and the first ranks out would copy their next operand while the last ones
   * still spin -- stretching the very hand-over window this harness measures. */
  sleepy_barrier(dred_comm()); /* every process finished init: kills may now be armed */

  /* Calibration: failure-free steps; t = median of the slowest rank's step time. */
  {
    double *times = calloc((size_t)calib, sizeof *times);
    for (s = 0; s < calib; s++) {
      step_res_t r;
      double mx;
      fill_step(&b, "calib", s);
      sleepy_barrier(dred_comm());
      t0 = mono_s();
      r = run_step(&b, "calib", s, 1000000 + s * conc, t0);
      wrong_total += r.wrong;
      MPI_Allreduce(&r.seconds, &mx, 1, MPI_DOUBLE, MPI_MAX, dred_comm());
      times[s] = mx;
    }
    qsort(times, (size_t)calib, sizeof *times, cmp_d);
    t = times[calib / 2];
    out("t sec=%.6f", t);
    if (g_rank == 0) write_file("t.txt", "%.6f\n", t);
    free(times);
  }
  /* One combine of an operand's size, timed at the root while the others wait in the next
   * barrier (asleep: tests/mpi/sleepy_wait.h), for the harness's recovery-time figure. */
  if (g_rank == root) {
    time_combine(b.count, 5, &comb_ms, &kern_ms);
    out("combine bytes=%zu reps=5 mpi_reduce_local_ms=%.3f dred_kernel_ms=%.3f",
        b.count * sizeof(double), comb_ms, kern_ms);
  }

  /* Who injects the fault. */
  node_mode = strcmp(mode, "node") == 0 || strcmp(mode, "masternode") == 0;
  if (node_mode && nvictims > 0) {
    victim = has_rank(victims, nvictims, g_rank);
    killer = g_rank == root && !victim;
  } else if (strcmp(mode, "none") != 0 && nvictims > 0) {
    if (strcmp(mode, "master") == 0)
      killer = (g_rank == victims[0]);
    else
      victim = has_rank(victims, nvictims, g_rank);
  }
  if (kill_at < 0.0) kill_at = (kill_frac >= 0.0 ? kill_frac : 0.5) * t;

  for (s = 0; s < nred; s++) {
    step_res_t r;
    fill_step(&b, "main", s);
    if (s <= kill_index) sleepy_barrier(dred_comm()); /* never after a possible kill */
    if (s == kill_index) all_passed_barrier(); /* nobody is still inside it when one dies */
    t0 = mono_s();
    if (s == kill_index && node_mode && (victim || killer)) {
      if (victim) g_victim_step = 1; /* killed by the root, not by itself */
      if (killer) {
        memset(&g_node_killer, 0, sizeof g_node_killer);
        g_node_killer.deadline_mono = t0 + kill_at;
        g_node_killer.after_calls = g_kill_after_call;
        for (j = 0; j < nvictims; j++) {
          g_node_killer.ranks[g_node_killer.n] = victims[j];
          if ((g_node_killer.pids[g_node_killer.n] = rank_pid(victims[j])) <= 1)
            out("error cannot read the pid of rank %d", victims[j]);
          g_node_killer.n++;
        }
        if (strcmp(mode, "masternode") == 0) {
          FILE *pf = fopen(master_pid_file, "r");
          long mp = 0;
          if (pf == NULL || fscanf(pf, "%ld", &mp) != 1 || mp <= 1) {
            out("error cannot read master pid from '%s'", master_pid_file);
            mp = 0;
          }
          if (pf) fclose(pf);
          g_node_killer.master = (pid_t)mp;
        }
        out("armed node-kill of %d rank(s)%s kill_at=%.6f step=%d", g_node_killer.n,
            g_node_killer.master > 0 ? " and the master" : "", kill_at, s);
        pthread_create(&kth, NULL, node_killer_main, &g_node_killer);
      }
      tk0 = t0;
    } else if (s == kill_index && (victim || killer)) {
      g_killer.deadline_mono = t0 + kill_at;
      g_killer.target = 0;
      if (killer) {
        FILE *pf = fopen(master_pid_file, "r");
        long mp = 0;
        if (pf == NULL || fscanf(pf, "%ld", &mp) != 1 || mp <= 1) {
          out("error cannot read master pid from '%s'", master_pid_file);
          mp = 0;
        }
        if (pf) fclose(pf);
        g_killer.target = (pid_t)mp;
      }
      if (victim) g_victim_step = 1;
      if (victim && g_kill_after_call) {
        out("armed self-kill kill_at=call step=%d", s);
        g_kill_now = 1;
      } else {
        out("armed %s kill_at=%.6f step=%d", killer ? "master-kill" : "self-kill", kill_at, s);
      }
      if (!g_kill_now && (!killer || g_killer.target > 0))
        pthread_create(&kth, NULL, killer ? killer_main : victim_main, &g_killer);
      tk0 = t0;
    }
    /* a master kill after the calls, or a self-kill after the peers' calls: every rank
     * says when its calls returned */
    if (s == kill_index && ((g_kill_after_call && strcmp(mode, "master") == 0) || g_kill_after_peers))
      g_victim_step = 1;
    if (s == kill_index && g_rank == root && root_late > 0.0) sleep_until(t0 + root_late);
    r = run_step(&b, "main", s, s * conc, t0);
    wrong_total += r.wrong;
    if (s == kill_index) {
      kill_res = r;
      if (victim) { /* the fault must happen: wait for our own death */
        out("victim step done before its kill (%.6f s < %.6f s): waiting for it", r.seconds, kill_at);
        for (;;) pause();
      }
      if (killer && node_mode) {
        if (mono_s() - tk0 < kill_at)
          out("killer step done before the node kill (%.6f s < %.6f s): waiting", r.seconds, kill_at);
        pthread_join(kth, NULL);
      } else if (killer && g_killer.target > 0) {
        if (mono_s() - tk0 < kill_at)
          out("killer step done before the master kill (%.6f s < %.6f s): waiting", r.seconds, kill_at);
        pthread_join(kth, NULL);
      }
    }
  }
  out("final outcome=%s kill_step_status=%d kill_step_name=%s kill_step_sec=%.6f wrong=%d "
      "kill_step_first_done_ns=%lld kill_step_done_ns=%lld combine_ms=%.3f kernel_ms=%.3f",
      wrong_total ? "WRONG" : sname(kill_res.worst), kill_res.worst, sname(kill_res.worst),
      kill_res.seconds, wrong_total, kill_res.first_done_ns, kill_res.last_done_ns, comb_ms,
      kern_ms);
  if (pool_buffers) /* every reduction is done here: the blocks are ours again */
    for (j = 0; j < conc; j++)
      if ((rc = dred_free_mem(b.send[j])) != DRED_OK)
        out("error dred_free_mem: %s", dred_strerror(rc));
  t0 = mono_s();
  rc = dred_finalize();
  out("finalize status=%d name=%s ms=%.3f", rc, sname(rc), (mono_s() - t0) * 1e3);
  out("exit");
  fclose(g_out);
  g_out = NULL;
  exit(0); /* after a failure dred_finalize did not finalise MPI: exit without MPI_Finalize */
}
