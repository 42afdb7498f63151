/*
 * main.c -- dred-master: rank 0 of an MPMD job, the reduction scheduler's home.
 *
 * It mirrors libdred's collective set-up (dup of MPI_COMM_WORLD for dred's traffic, a
 * split that leaves the master out of dred_comm(), the dynamic RMA window), then runs one
 * loop: libuv timers (heartbeats, journal flushes), control messages in, scheduler
 * actions out, adaptive back-off when idle.  It ends when every live worker said BYE:
 * it answers SHUTDOWN, frees the window collectively (only if nobody died: collectives
 * hang after a failure) and finalises MPI.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "master.h"
#include "status.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: dred-master [options]   (started by dredrun as rank 0)\n"
          "  --heartbeat-ms N      ping interval (DRED_HEARTBEAT_MS, default 500)\n"
          "  --fail-timeout-ms N   silence before a worker is declared failed\n"
          "                        (DRED_FAIL_TIMEOUT_MS, default 5000)\n"
          "  --policy P            executor choice: predict | last | first (DRED_POLICY)\n"
          "  --journal PATH        SQLite journal (DRED_JOURNAL, default <storage>/journal.db)\n"
          "  --no-journal          do not journal\n"
          "  --storage DIR         storage directory (DRED_STORAGE_DIR)\n"
          "  -h, --help            this text\n");
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno || *end || v == 0) return -1;
  *out = v;
  return 0;
}

/* Returns 0, 1 for --help (exit 0), -1 for a bad flag. */
static int parse_flags(master_t *m, int argc, char **argv, int *no_journal) {
  static const struct option opts[] = {
      {"heartbeat-ms", required_argument, 0, 'b'}, {"fail-timeout-ms", required_argument, 0, 't'},
      {"policy", required_argument, 0, 'p'},       {"journal", required_argument, 0, 'j'},
      {"no-journal", no_argument, 0, 'n'},          {"storage", required_argument, 0, 's'},
      {"help", no_argument, 0, 'h'},                {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'b':
        if (parse_u64(optarg, &m->cfg.heartbeat_ms)) return -1;
        break;
      case 't':
        if (parse_u64(optarg, &m->cfg.fail_timeout_ms)) return -1;
        break;
      case 'p':
        snprintf(m->cfg.policy, sizeof m->cfg.policy, "%s", optarg);
        break;
      case 'j':
        snprintf(m->cfg.journal, sizeof m->cfg.journal, "%s", optarg);
        break;
      case 'n':
        *no_journal = 1;
        break;
      case 's':
        snprintf(m->cfg.storage_dir, sizeof m->cfg.storage_dir, "%s", optarg);
        snprintf(m->cfg.journal, sizeof m->cfg.journal, "%.480s/journal.db", optarg);
        break;
      case 'h':
        return 1;
      default:
        return -1;
    }
  }
  return 0;
}

static int policy_of(const char *s, sched_policy_t *p) {
  if (strcmp(s, "predict") == 0) *p = SCHED_POLICY_PREDICT;
  else if (strcmp(s, "last") == 0) *p = SCHED_POLICY_LAST_TIME;
  else if (strcmp(s, "first") == 0) *p = SCHED_POLICY_FIRST;
  else return -1;
  return 0;
}

static void flush_cb(uv_timer_t *t) {
  master_t *m = t->data;
  if (m->journal) dred_journal_flush(m->journal);
}

static int recv_batch(master_t *m) {
  proto_msg_t msg;
  int src, n, rc;
  int work = 0;
  for (n = 0; n < 256; n++) {
    rc = dred_chan_recv(&m->chan, &src, &msg);
    if (rc == 0) break;
    if (rc > 0) master_on_message(m, src, &msg);
    if (rc < 0 || msg.type != PROTO_PONG) work++; /* heartbeats do not reset the back-off */
  }
  return work;
}

static void maybe_shutdown(master_t *m) {
  proto_msg_t msg;
  int w, live_bye = 0;
  if (m->shutdown_sent) return;
  for (w = 1; w <= m->nworkers; w++) live_bye += m->bye[w] && !m->failed[w];
  if (live_bye == 0 || live_bye + m->nfailed < m->nworkers) return;
  memset(&msg, 0, sizeof msg);
  msg.type = PROTO_SHUTDOWN;
  for (w = 1; w <= m->nworkers; w++)
    if (!m->failed[w]) dred_chan_send(&m->chan, w, &msg, NULL);
  m->shutdown_sent = 1;
}

static void close_cb(uv_handle_t *h) { (void)h; }

/* The collective shutdown hangs if a worker dies during it (see dred_finalize). */
static void shutdown_timeout(int sig) {
  static const char msg[] =
      "[dred master] error: collective MPI shutdown stuck (a process died during it?): exiting\n";
  (void)sig;
  (void)!write(2, msg, sizeof msg - 1);
  _exit(70);
}

/* A master that dies leaves every worker waiting; say why before going. */
static void fatal_signal(int sig) {
  char msg[64];
  int n = snprintf(msg, sizeof msg, "[dred master] fatal: signal %d\n", sig);
  if (n > 0) (void)!write(2, msg, (size_t)n);
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char **argv) {
  master_t m;
  int provided, rank, size, no_journal = 0, rc, flag = 0, *appnum = NULL;
  sched_policy_t policy;
  MPI_Comm none;

  memset(&m, 0, sizeof m);
  /* Survive a worker's death: Hydra sends SIGUSR1 to the others, then mpiexec exits and
   * closes our stderr (see dred_init in worker/api.c). */
  signal(SIGUSR1, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGSEGV, fatal_signal);
  signal(SIGBUS, fatal_signal);
  signal(SIGABRT, fatal_signal);
  signal(SIGTERM, fatal_signal);
  signal(SIGINT, fatal_signal);
  dred_config_load(&m.cfg);
  rc = parse_flags(&m, argc, argv, &no_journal);
  if (rc != 0) {
    usage(rc > 0 ? stdout : stderr);
    return rc > 0 ? 0 : 2;
  }
  if (policy_of(m.cfg.policy, &policy) != 0) {
    fprintf(stderr, "dred-master: unknown policy '%s' (predict | last | first)\n", m.cfg.policy);
    return 2;
  }
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  dred_log_setup("master", rank);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
  if (rank != 0 || size < 2 || (flag && *appnum != 0)) {
    DRED_ERROR("dred-master must be rank 0 of an MPMD job with workers: use dredrun");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  m.nworkers = size - 1;

  /* Collective set-up, matching dred_init() in every worker. */
  MPI_Comm_dup(MPI_COMM_WORLD, &m.priv);
  MPI_Comm_set_errhandler(m.priv, MPI_ERRORS_RETURN);
  MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, &none);
  if (dred_nodes_exchange(m.priv, &m.node_of, &m.nnodes) != DRED_OK) MPI_Abort(MPI_COMM_WORLD, 3);
  MPI_Win_create_dynamic(MPI_INFO_NULL, m.priv, &m.dwin); /* returns once workers are set up */
  m.t_start = uv_hrtime();

  m.sched = sched_new((uint32_t)m.nworkers, policy);
  m.last_heard = calloc((size_t)size, sizeof *m.last_heard);
  m.failed = calloc((size_t)size, 1);
  m.bye = calloc((size_t)size, 1);
  if (m.sched == NULL || m.last_heard == NULL || m.failed == NULL || m.bye == NULL) {
    DRED_ERROR("out of memory at start");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  for (rc = 1; rc <= m.nworkers; rc++) {
    m.last_heard[rc] = m.t_start;
    sched_set_node(m.sched, (uint32_t)rc, m.node_of[rc]);
  }
  if (!no_journal) {
    if (mkdir(m.cfg.storage_dir, 0700) != 0 && errno != EEXIST)
      DRED_WARN("cannot create storage dir %s: %s", m.cfg.storage_dir, strerror(errno));
    if (dred_journal_open(m.cfg.journal, &m.journal) != DRED_OK) {
      DRED_WARN("journal %s unavailable: running without a journal", m.cfg.journal);
      m.journal = NULL;
    } else {
      char buf[32];
      snprintf(buf, sizeof buf, "%d", m.nworkers);
      dred_journal_meta(m.journal, "workers", buf);
      dred_journal_meta(m.journal, "policy", m.cfg.policy);
    }
  }
  dred_chan_init(&m.chan, m.priv);
  dred_poller_init(&m.poller, m.cfg.poll_min_us * 1000u, m.cfg.poll_max_us * 1000u,
                   m.cfg.master_idle_us * 1000u, 100000000ull);
  uv_loop_init(&m.loop);
  master_detector_start(&m);
  master_status_start(&m); /* optional: on failure it logs why and the job runs without it */
  uv_timer_init(&m.loop, &m.flush_timer);
  m.flush_timer.data = &m;
  uv_timer_start(&m.flush_timer, flush_cb, 1000, 1000);
  DRED_INFO("dred-master up: %d workers on %d node(s), policy %s, journal %s", m.nworkers,
            m.nnodes, m.cfg.policy, m.journal ? m.cfg.journal : "(none)");

  for (;;) {
    int work = 0;
    uv_run(&m.loop, UV_RUN_NOWAIT);
    work += recv_batch(&m);
    work += master_drain_actions(&m);
    dred_chan_progress(&m.chan); /* completed sends are bookkeeping, not work */
    maybe_shutdown(&m);
    if (m.shutdown_sent && m.chan.nsends == 0) break;
    if (m.nfailed == m.nworkers) {
      DRED_ERROR("every worker failed: stopping");
      break;
    }
    dred_poller_wait(&m.poller, work, sched_instances(m.sched) > 0);
  }

  DRED_INFO("dred-master done: %llu events, %llu tasks, %llu messages in, %llu out",
            (unsigned long long)m.events, (unsigned long long)m.tasks_sent,
            (unsigned long long)m.chan.received, (unsigned long long)m.chan.sent);
  master_status_stop(&m);
  uv_close((uv_handle_t *)&m.heartbeat_timer, close_cb);
  uv_close((uv_handle_t *)&m.flush_timer, close_cb);
  uv_run(&m.loop, UV_RUN_DEFAULT);
  uv_loop_close(&m.loop);
  if (m.journal) dred_journal_close(m.journal);
  dred_chan_close(&m.chan);
  dred_poller_close(&m.poller);
  sched_free(m.sched);
  free(m.node_of);
  free(m.last_heard);
  free(m.bye);
  if (m.nfailed > 0) {
    /* Collective frees and MPI_Finalize hang once a process died (DESIGN.md). */
    DRED_WARN("%d worker(s) failed during the job: exiting without MPI_Finalize", m.nfailed);
    free(m.failed);
    return 0;
  }
  free(m.failed);
  signal(SIGALRM, shutdown_timeout);
  alarm((unsigned)m.cfg.finalize_timeout_s);
  MPI_Win_free(&m.dwin);
  MPI_Comm_free(&m.priv);
  MPI_Finalize();
  return 0;
}
