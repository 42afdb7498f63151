/*
 * main.c -- dred-master: rank 0 of an MPMD job (or, with --addr-file, a process beside
 * the job: beside.c), the reduction scheduler's home.
 *
 * It runs the start-up libdred runs too (common/mpi/boot.c: dred's private communicator,
 * the split that leaves the master out of dred_comm(), the control links), joins the
 * dynamic RMA window, then lives in one libuv loop that sleeps in epoll until something
 * happens: a control message (the `turn` check handle feeds every message to the
 * scheduler and sends its actions), a worker's link closing or, on this node, its death
 * watch firing (declared failed at once; common/deathwatch.h),
 * a heartbeat or journal timer, a status-socket client.  No MPI call is made in the loop.
 * It ends when every live worker said BYE: it answers SHUTDOWN, waits for those writes,
 * frees the window collectively (only if nobody died: collectives hang after a failure)
 * and finalises MPI.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/deathwatch.h"
#include "../common/leave.h"
#include "../common/log.h"
#include "../common/mpi/boot.h"
#include "../common/settings.h"
#include "../common/status.h"
#include "../storage/storedir.h"
#include "master.h"
#include "status.h"

/* The table's words are markdown: its `code` quotes are left out on a terminal. */
static void put_plain(FILE *out, const char *s) {
  for (; *s; s++)
    if (*s != '`') fputc(*s, out);
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: dred-master [options]   (started by dredrun as rank 0)\n"
          "  --heartbeat-ms N      ping interval (DRED_HEARTBEAT_MS, default 500)\n"
          "  --fail-timeout-ms N   silence before a worker is declared failed\n"
          "                        (DRED_FAIL_TIMEOUT_MS, default 5000)\n"
          "  --policy P            executor choice: predict | last | first (DRED_POLICY)\n"
          "  --journal PATH        SQLite journal (DRED_JOURNAL, default <storage>/job-<id>/journal.db)\n"
          "  --no-journal          do not journal\n"
          "  --storage DIR         storage directory (DRED_STORAGE_DIR): private (0700, yours),\n"
          "                        one job-<id> subdirectory per job\n"
          "  --print-storage       make sure the storage directory exists and is private, print\n"
          "                        its path and exit (dredrun exports it, so that every process\n"
          "                        of a job uses the one this chose)\n"
          "  --start-timeout-s N   bound on the job's start-up: every application process must\n"
          "                        have called dred_init by then (DRED_START_TIMEOUT_S, 300)\n"
          "Outside the MPI job (dredrun --external-master; no MPI in this process):\n"
          "  --workers P           the job's application processes\n"
          "  --addr-file F         write the addresses and the job's token to F (0600)\n"
          "  --tcp-host H          listen on TCP at H's address too (jobs spanning nodes)\n"
          "  -h, --help            this text\n"
          "Settings dred-master reads (environment; default, range; see dred-master(1)):\n");
  /* From common/settings.h's table, so --help cannot miss one or show another default. */
  for (int i = 0; i < DRED_SETTINGS_COUNT; i++) {
    const dred_setting_t *s = &dred_settings[i];
    char def[512], range[128];
    if (!(s->by & DRED_BY_MASTER)) continue;
    fprintf(out, "  %-24s ", s->name);
    put_plain(out, dred_setting_default_str(s, def, sizeof def));
    fputs("; ", out);
    put_plain(out, dred_setting_range_str(s, range, sizeof range));
    fputc('\n', out);
  }
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
typedef struct {
  const char *addr_file, *tcp_host; /* beside the job (beside.c) */
  uint64_t workers, start_timeout_s;
  int print_storage; /* --print-storage: not a job, a question from dredrun */
} beside_flags_t;

static int parse_flags(master_t *m, int argc, char **argv, int *no_journal, beside_flags_t *bf) {
  static const struct option opts[] = {
      {"heartbeat-ms", required_argument, 0, 'b'}, {"fail-timeout-ms", required_argument, 0, 't'},
      {"policy", required_argument, 0, 'p'},       {"journal", required_argument, 0, 'j'},
      {"no-journal", no_argument, 0, 'n'},          {"storage", required_argument, 0, 's'},
      {"workers", required_argument, 0, 'w'},       {"addr-file", required_argument, 0, 'a'},
      {"tcp-host", required_argument, 0, 'H'},      {"start-timeout-s", required_argument, 0, 'S'},
      {"print-storage", no_argument, 0, 'P'},      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'w':
        if (parse_u64(optarg, &bf->workers) || bf->workers > PROTO_MAX_GROUP) return -1;
        break;
      case 'a':
        bf->addr_file = optarg;
        break;
      case 'H':
        bf->tcp_host = optarg;
        break;
      case 'S':
        if (parse_u64(optarg, &bf->start_timeout_s)) return -1;
        break;
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
        if (strlen(optarg) >= sizeof m->cfg.journal) m->cfg.storage_too_long = 1;
        snprintf(m->cfg.journal, sizeof m->cfg.journal, "%s", optarg);
        break;
      case 'n':
        *no_journal = 1;
        break;
      case 's':
        if (strlen(optarg) >= sizeof m->cfg.storage_dir) m->cfg.storage_too_long = 1;
        snprintf(m->cfg.storage_dir, sizeof m->cfg.storage_dir, "%s", optarg);
        break;
      case 'P':
        bf->print_storage = 1;
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

static void maybe_shutdown(master_t *m);

/* ---- the death watch (common/deathwatch.h) ----
 * Workers on the master's node each hold a robust mutex in <control dir>/watch; the kernel
 * releases it as their thread dies, before it tears down their memory (which is when their
 * control link would close).  Workers on other nodes are seen by their links and pings. */
void master_watch_create(master_t *m) {
  int w, here = 0;
  if (!m->cfg.death_watch) return; /* DRED_DEATH_WATCH=0 */
  /* Outside the job the master learns where its workers are only as they join: made for
   * all, started for those beside it (watch_start). */
  for (w = 1; w <= m->nworkers; w++) here += m->boot.node_of[w] == m->boot.node_of[0];
  if (here == 0 && !m->external) return;
  snprintf(m->watch_path, sizeof m->watch_path, "%s", m->boot.watch);
  if (dred_watch_create(m->watch_path, m->nworkers + 1, &m->watch) != DRED_OK) {
    DRED_WARN("no death watch (see above): workers on this node are seen dead when their "
              "control link closes");
    m->watch = NULL;
    m->watch_path[0] = '\0';
  }
}

/* The watch fires as the worker's thread dies, which can be before this loop has read
 * what the worker wrote just before (a READY sent right after its dred_ireduce returned):
 * declared now, the master would drop the link with that READY unread and have to ask the
 * worker's replica holders for an operand whose whereabouts the READY named (a RECOVER
 * round trip or more, sched_recover.c).  So the declaration waits one millisecond -- at
 * least one more poll of the link -- and until the inbox is empty: the worker's last
 * messages are taken first, exactly as when its link closes. */
static void on_watch_timer(uv_timer_t *t) {
  master_t *m = t->data;
  int w;
  if (!dred_queue_empty(&m->net.inbox)) {
    uv_timer_start(&m->watch_timer, on_watch_timer, 1, 0);
    return;
  }
  for (w = 1; w <= m->nworkers; w++) {
    if (!m->watch_dead[w]) continue;
    m->watch_dead[w] = 0;
    /* After SHUTDOWN workers leave; a death then is nobody's concern (as for links). */
    if (!m->shutdown_sent) master_declare_failed(m, w, "its process died (death watch)");
  }
}

static void on_watched_death(dred_watch_t *w, int worker, void *arg) {
  master_t *m = arg;
  (void)w;
  if (worker < 1 || worker > m->nworkers || m->shutdown_sent) return;
  m->watch_dead[worker] = 1;
  uv_timer_start(&m->watch_timer, on_watch_timer, 1, 0);
}

static void watch_start(master_t *m) {
  int *slots, w, n = 0;
  if (m->watch == NULL) return;
  if ((slots = calloc((size_t)m->nworkers, sizeof *slots)) == NULL ||
      (m->watch_dead = calloc((size_t)m->nworkers + 1, 1)) == NULL) {
    DRED_WARN("death watch not started: out of memory");
    free(slots);
    return;
  }
  uv_timer_init(&m->loop, &m->watch_timer);
  m->watch_timer.data = m;
  for (w = 1; w <= m->nworkers; w++)
    if (m->boot.node_of[w] == m->boot.node_of[0]) slots[n++] = w;
  if (n == 0) {
    free(slots);
    return;
  }
  if (dred_watch_start(m->watch, &m->loop, slots, n, on_watched_death, m) != DRED_OK)
    DRED_WARN("death watch not started: workers on this node are seen dead when their "
              "control link closes");
  else
    DRED_INFO("death watch on %d worker(s) of this node", n);
  free(slots);
}
static void noop_timer(uv_timer_t *t) { (void)t; }

/* How many more DATA frames worker w's link takes now (sched_set_room). */
static int dist_room(void *arg, uint32_t w) {
  master_t *m = arg;
  size_t b = dred_net_backlog(&m->net, (int)w);
  return b >= PROTO_DATA_AHEAD ? 0 : (int)(PROTO_DATA_AHEAD - b);
}

/* After every wake-up of the loop: take what came in, act on it.  Bounded per turn so the
 * heartbeat timer and the links keep their turn under a flood. */
static void on_turn(uv_check_t *h) {
  master_t *m = h->data;
  proto_msg_t msg;
  int src, n, rc;
  for (n = 0; n < 4096 && (rc = dred_net_recv(&m->net, &src, &msg)) != 0; n++) {
    if (rc == DRED_NET_MSG) {
      master_on_message(m, src, &msg);
    } else if (rc == DRED_NET_LOST && !m->shutdown_sent && src >= 1 && src <= m->nworkers) {
      /* Before SHUTDOWN a closed link means the process died (or lost its node): say so
       * now rather than a failure timeout later. */
      master_suspect_failed(m, src, "its control link closed");
    } /* DRED_NET_NOFD: our own shortage, logged by net.c; the next send dials again */
  }
  master_drain_actions(m);
  if (sched_dist_pump(m->sched)) master_drain_actions(m); /* results held back for room */
  maybe_shutdown(m);
  if (!dred_queue_empty(&m->net.inbox)) uv_timer_start(&m->kick_timer, noop_timer, 0, 0);
  if (m->shutdown_sent && m->net.writes == 0) uv_stop(&m->loop);
  if (m->nofd_stop) uv_stop(&m->loop);
  if (master_nfailed(m) == m->nworkers) {
    DRED_ERROR("every worker failed: stopping");
    uv_stop(&m->loop);
  }
}



static void maybe_shutdown(master_t *m) {
  proto_msg_t msg;
  int w, live_bye = 0;
  if (m->shutdown_sent) return;
  for (w = 1; w <= m->nworkers; w++) live_bye += m->bye[w] && !master_worker_failed(m, w);
  if (live_bye == 0 || live_bye + master_nfailed(m) < m->nworkers) return;
  memset(&msg, 0, sizeof msg);
  msg.type = PROTO_SHUTDOWN;
  for (w = 1; w <= m->nworkers; w++)
    if (!master_worker_failed(m, w)) dred_net_send(&m->net, w, &msg, NULL);
  m->shutdown_sent = 1;
}

static void close_cb(uv_handle_t *h) { (void)h; }

void master_abort_grace(void) {
  fflush(stderr);
  usleep(200000); /* without it the reason was sometimes missing from the job's output,
                   * the job's exit status the only trace (tests/tools/test-launch.sh) */
}

/* MPI_Abort kills every process of the job before any can remove its control socket:
 * remove this node's whole control directory first (common/mpi/boot.h). */
static void master_abort(master_t *m, int code) {
  dred_boot_abandon(&m->boot);
  master_abort_grace();
  MPI_Abort(MPI_COMM_WORLD, code);
  exit(code); /* not reached: MPI_Abort does not return */
}

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
  dred_leave_now(); /* our sockets and control directory (common/leave.h) */
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char **argv) {
  master_t m;
  int provided, rank, size, no_journal = 0, rc, flag = 0, *appnum = NULL, who = 0, nfailed;
  sched_policy_t policy = SCHED_POLICY_PREDICT;
  dred_jobinit_t ji;
  beside_flags_t bf;

  memset(&m, 0, sizeof m);
  memset(&bf, 0, sizeof bf);
  /* Survive a worker's death: Hydra sends SIGUSR1 to the others, then mpiexec exits and
   * closes our stderr (see dred_init in lib/engine/api.c). */
  signal(SIGUSR1, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGSEGV, fatal_signal);
  signal(SIGBUS, fatal_signal);
  signal(SIGABRT, fatal_signal);
  signal(SIGTERM, fatal_signal);
  signal(SIGINT, fatal_signal);
  signal(SIGHUP, fatal_signal);
  dred_config_load(&m.cfg);
  rc = parse_flags(&m, argc, argv, &no_journal, &bf);
  if (rc > 0) {
    usage(stdout);
    return 0;
  }
  if (rc == 0 && bf.print_storage) {
    /* The default may be a fresh directory (common/privdir.h): dredrun asks here once and
     * passes the answer to every process of the job. */
    if (m.cfg.storage_too_long || dred_storedir_check(m.cfg.storage_dir) != DRED_OK) return 1;
    printf("%s\n", m.cfg.storage_dir);
    return 0;
  }
  /* A setting this master cannot run with must still fail the whole job, not just this
   * process: the workers are already waiting in dred_init's collectives.  So the verdict
   * is kept until MPI is up and sent to them (common/mpi/boot.h). */
  memset(&ji, 0, sizeof ji);
  ji.status = DRED_OK;
  if (rc < 0) {
    usage(stderr);
    ji.status = DRED_ERR_ARG;
    snprintf(ji.reason, sizeof ji.reason, "dred-master: bad command-line flag (see its usage)");
  } else if (dred_config_check(&m.cfg, DRED_CONFIG_MASTER, 0, ji.reason, sizeof ji.reason) != 0 ||
             policy_of(m.cfg.policy, &policy) != 0) {
    ji.status = DRED_ERR_ARG;
  }
  ji.heartbeat_ms = (uint32_t)m.cfg.heartbeat_ms;
  if (ji.status == DRED_OK) dred_jobinit_new_id(ji.job_id, sizeof ji.job_id);
  snprintf(m.job_id, sizeof m.job_id, "%s", ji.job_id);
  uv_loop_init(&m.loop);
  m.net.data = &m;
  if (bf.addr_file != NULL) {
    /* Beside the job (beside.c): no MPI in this process. */
    m.external = 1;
    m.nworkers = (int)bf.workers;
    m.start_timeout_ms = (bf.start_timeout_s ? bf.start_timeout_s : m.cfg.start_timeout_s) * 1000ull;
    dred_log_setup("master", 0);
    if (m.nworkers < 1) {
      DRED_ERROR("--addr-file needs --workers P (the job's application processes)");
      return 2;
    }
    if (ji.status != DRED_OK) DRED_ERROR("refusing to start the job: %s", ji.reason);
    rc = master_beside_start(&m, bf.addr_file, bf.tcp_host, m.start_timeout_ms, &ji);
    if (rc != DRED_OK || ji.status != DRED_OK) {
      /* Workers still waiting for a WELCOME see our links close: their dred_init fails. */
      if (rc != DRED_OK) DRED_ERROR("start-up failed: %s", dred_status_str(rc));
      else sleep(1); /* the WELCOME carrying the refusal goes out first */
      if (m.watch_path[0] != '\0') (void)unlink(m.watch_path);
      dred_boot_finish(&m.boot);
      return 2;
    }
    if ((m.up = calloc((size_t)m.nworkers + 1, 1)) == NULL) {
      DRED_ERROR("out of memory at start");
      return 3;
    }
  } else {
    if (bf.workers || bf.tcp_host) {
      ji.status = DRED_ERR_ARG;
      snprintf(ji.reason, sizeof ji.reason,
               "dred-master: --workers and --tcp-host need --addr-file");
    }
    /* MULTIPLE: the start-up watch (startwatch.c) may MPI_Abort from its own thread while
     * this one waits in a collective. */
    dred_log_setup("master", 0); /* rank 0 in the MPMD job, checked below */
    (void)master_startwatch_begin(bf.start_timeout_s ? bf.start_timeout_s : m.cfg.start_timeout_s);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    master_startwatch_mpi_up(provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    dred_log_setup("master", rank);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    if (rank != 0 || size < 2 || (flag && *appnum != 0)) {
      DRED_ERROR("dred-master must be rank 0 of an MPMD job with workers: use dredrun");
      master_abort_grace();
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    m.nworkers = size - 1;

    /* Collective set-up, the same function dred_init() runs in every worker. */
    if ((rc = dred_boot_start(&m.boot, 1, &m.net, &m.loop)) != DRED_OK) {
      DRED_ERROR("start-up failed: %s", dred_status_str(rc));
      master_abort(&m, 2);
    }
    master_startwatch_boot(&m.boot); /* its control directory goes if the watch ends the job */
    m.priv = m.boot.priv;
    if (ji.status != DRED_OK) DRED_ERROR("refusing to start the job: %s", ji.reason);
    /* The death watch of the workers on this node (common/deathwatch.h): made before the
     * exchange, so the workers here can map it right after it; unlinked once all agreed. */
    if (ji.status == DRED_OK) master_watch_create(&m);
    dred_jobinit_exchange(m.priv, &ji);
    rc = dred_jobinit_agree(m.priv, ji.status, &who);
    if (m.watch_path[0] != '\0') (void)unlink(m.watch_path);
    if (rc != DRED_OK) {
      if (who != 0)
        DRED_ERROR("worker %d could not start (%s; its log says why): ending the job", who,
                   dred_status_str(rc));
      /* Every dred_init has its status now (the collective above completed).  Give their
       * log lines a moment, then end the job: an application that carried on regardless
       * would wait for a master that is gone (MPI_Finalize would hang). */
      sleep(1);
      master_abort(&m, 2);
      return 2;
    }
    master_startwatch_phase("while the workers set up their shared-memory pools (DRED_POOL_MB "
                            "per worker, every page touched once: raise DRED_START_TIMEOUT_S "
                            "or lower DRED_POOL_MB)");
    MPI_Win_create_dynamic(MPI_INFO_NULL, m.priv, &m.dwin); /* returns once workers are set up */
    master_startwatch_end();
    dred_boot_tell_launcher(); /* a death from now on is one the job survives */
    if ((m.up = calloc((size_t)m.nworkers + 1, 1)) == NULL) master_abort(&m, 3);
    memset(m.up, 1, (size_t)m.nworkers + 1);
    m.nup = m.nworkers;
  }
  m.t_start = uv_hrtime();

  m.sched = sched_new((uint32_t)m.nworkers, policy);
  sched_set_room(m.sched, dist_room, &m);
  m.last_heard = calloc((size_t)m.nworkers + 1, sizeof *m.last_heard);
  m.bye = calloc((size_t)m.nworkers + 1, 1);
  m.pong = calloc((size_t)m.nworkers + 1, sizeof *m.pong);
  if (m.sched == NULL || m.last_heard == NULL || m.bye == NULL || m.pong == NULL) {
    DRED_ERROR("out of memory at start");
    if (m.external) return 3;
    master_abort(&m, 3);
  }
  for (rc = 1; rc <= m.nworkers; rc++) {
    m.last_heard[rc] = m.t_start;
    sched_set_node(m.sched, (uint32_t)rc, m.boot.node_of[rc]);
  }
  /* This job's directory (journal, status socket), private and not shared with any other
   * job (storage/storedir.h).  Without it the job still runs, only unobserved. */
  if (dred_storedir_job(m.cfg.storage_dir, m.job_id, m.jobdir, sizeof m.jobdir) != DRED_OK)
    DRED_WARN("storage directory %s refused (see above): no journal unless --journal says "
              "where, no status socket", m.cfg.storage_dir);
  if (!no_journal && m.cfg.journal[0] == '\0' && m.jobdir[0] != '\0')
    snprintf(m.cfg.journal, sizeof m.cfg.journal, "%.490s/" DRED_STOREDIR_JOURNAL, m.jobdir);
  if (!no_journal && m.cfg.journal[0] != '\0') {
    if (dred_journal_open(m.cfg.journal, &m.journal) != DRED_OK) {
      DRED_WARN("journal %s unavailable: running without a journal", m.cfg.journal);
      m.journal = NULL;
    } else {
      char buf[32];
      snprintf(buf, sizeof buf, "%d", m.nworkers);
      dred_journal_meta(m.journal, "workers", buf);
      dred_journal_meta(m.journal, "policy", m.cfg.policy);
      dred_journal_meta(m.journal, "job", m.job_id);
    }
  }
  master_detector_start(&m);
  watch_start(&m);
  master_status_start(&m); /* optional: on failure it logs why and the job runs without it */
  uv_timer_init(&m.loop, &m.flush_timer);
  m.flush_timer.data = &m;
  uv_timer_start(&m.flush_timer, flush_cb, 1000, 1000);
  DRED_INFO("dred-master up: %d workers on %d node(s), policy %s, journal %s", m.nworkers,
            m.boot.nnodes, m.cfg.policy, m.journal ? m.cfg.journal : "(none)");

  uv_check_init(&m.loop, &m.turn);
  m.turn.data = &m;
  uv_check_start(&m.turn, on_turn);
  uv_timer_init(&m.loop, &m.kick_timer); /* re-runs a turn that left messages queued */
  uv_timer_start(&m.kick_timer, noop_timer, 0, 0);
  uv_run(&m.loop, UV_RUN_DEFAULT);

  DRED_INFO("dred-master done: %llu events, %llu tasks, %llu messages in, %llu out",
            (unsigned long long)m.events, (unsigned long long)m.tasks_sent,
            (unsigned long long)m.net.received, (unsigned long long)m.net.sent);
  master_status_stop(&m);
  dred_watch_stop(m.watch);
  if (m.watch_dead != NULL) uv_close((uv_handle_t *)&m.watch_timer, close_cb);
  uv_close((uv_handle_t *)&m.heartbeat_timer, close_cb);
  uv_close((uv_handle_t *)&m.flush_timer, close_cb);
  uv_close((uv_handle_t *)&m.kick_timer, close_cb);
  uv_close((uv_handle_t *)&m.turn, close_cb);
  dred_net_close(&m.net);
  uv_run(&m.loop, UV_RUN_DEFAULT);
  uv_loop_close(&m.loop);
  dred_watch_close(m.watch);
  free(m.watch_dead);
  dred_boot_finish(&m.boot);
  if (m.journal) dred_journal_close(m.journal);
  /* Gone once empty: the workers remove their stores at finalize, the journal keeps it. */
  if (!m.cfg.keep_storage) dred_storedir_release(m.jobdir);
  nfailed = master_nfailed(&m); /* the record goes with the scheduler */
  sched_free(m.sched);
  free(m.last_heard);
  free(m.pong);
  free(m.bye);
  free(m.up);
  /* Exit status 1 after a worker failure, in both forms: the job's status then says a
   * process was lost even when every process that is left exits 0 (one stopped past the
   * failure timeout and continued, say). */
  if (m.nofd_stop) return 1; /* workers may be anywhere: no collective shutdown */
  if (m.external) return nfailed > 0 ? 1 : 0; /* no MPI here (beside.c) */
  if (nfailed > 0) {
    /* Collective frees and MPI_Finalize hang once a process died (docs/design.md, Fault
     * model). */
    DRED_WARN("%d worker(s) failed during the job: exiting without MPI_Finalize, status 1",
              nfailed);
    return 1;
  }
  signal(SIGALRM, shutdown_timeout);
  alarm((unsigned)m.cfg.finalize_timeout_s);
  dred_boot_teardown(&m.boot, &m.dwin, 1); /* in step with every dred_finalize */
  m.priv = MPI_COMM_NULL;
  return 0;
}
