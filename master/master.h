/*
 * master.h -- dred-master's state, shared by the files of master/.
 *
 *   main.c      flags, MPI setup and teardown, the event loop
 *   beside.c    the start-up of a master outside the MPI job (no MPI at all)
 *   dispatch.c  control messages -> scheduler events; scheduler actions -> messages/journal
 *   detector.c  heartbeats: ping every worker, declare the silent ones failed
 *   sched.c     the scheduler state machine (no MPI; see sched.h)
 *   sched_recover.c  its recovery rules: a worker failed, RECOVER, RECOVER_FAILED
 *   status.c    the live status socket read by `dredstat status` (see status.h)
 */
#ifndef DRED_MASTER_H
#define DRED_MASTER_H

#include <mpi.h>
#include <stdint.h>
#include <uv.h>

#include "../common/config.h"
#include "../common/mpi/boot.h"
#include "../common/net.h"
#include "../storage/journal.h"
#include "sched/sched.h"

typedef struct {
  dred_config_t cfg;
  int nworkers;             /* workers are job ranks 1..nworkers (common/mpi/boot.h) */
  int external;             /* started beside the job, not as its rank 0 (beside.c) */
  uint8_t *up;              /* by worker: set up, so pinged and judged (all 1 in MPMD) */
  int nup;
  uint64_t t_welcome;       /* external: when the workers were welcomed */
  uint64_t start_timeout_ms; /* external: bound on welcome -> every worker up */
  MPI_Comm priv;
  MPI_Win dwin;
  sched_t *sched;
  dred_journal_t *journal;  /* NULL with --no-journal */
  dred_boot_t boot;         /* the shared start-up (common/mpi/boot.h) */
  dred_net_t net;           /* control links to the workers (common/net.h) */
  uv_loop_t loop;
  uv_check_t turn;          /* after each wake-up: messages in, actions out */
  uv_timer_t kick_timer;    /* a zero timeout: one more turn when messages are left */
  uv_timer_t heartbeat_timer, flush_timer;
  uint64_t *last_heard;     /* by worker rank, uv_hrtime() */
  proto_msg_t *pong;        /* by worker rank: its last PONG (pool use; type 0 before) */
  uint8_t *bye;             /* by worker rank: it said BYE */
  /* PINGs sent and PONGs received per worker.  Workers answer every PING that reaches
   * them before SHUTDOWN, even after their BYE (a process that finalized early is still
   * watched, and still watches us); so after SHUTDOWN the master knows exactly how many
   * answers are still on the way and takes them in before MPI_Finalize. */
  int nbye;
  uint64_t ping_seq;
  uint64_t last_tick;       /* when the heartbeat timer last ran */
  int shutdown_sent;
  int nofd_stop;            /* out of descriptors: the job was stopped (detector.c) */
  /* statistics */
  uint64_t t_start, events, actions, tasks_sent;
  struct master_status *status; /* status.c's socket server; NULL when not running */
  char job_id[64];          /* chosen here, sent to every worker (common/mpi/boot.h) */
  struct dred_watch *watch;  /* robust mutexes of the workers on this node (deathwatch.h) */
  uv_timer_t watch_timer;   /* declares the deaths the watch reported (main.c says why) */
  uint8_t *watch_dead;      /* by worker: its watch fired, not declared yet            */
  char watch_path[sizeof ((dred_boot_t *)0)->watch]; /* its file until every worker mapped it; "" without one */
  char jobdir[600];         /* <storage>/job-<id>: journal and status socket; "" if refused */
} master_t;

/* Who is dead: the scheduler's record is the master's only one.  The scheduler must know
 * (it recovers a dead worker's operands) and, being pure, keeps its own state fed by
 * events; so the adapter keeps no array beside it.  master_declare_failed() (detector.c)
 * is the one writer: it feeds WORKER_FAILED, and everything else in master/ asks here. */
static inline int master_worker_failed(const master_t *m, int w) {
  return !sched_worker_alive(m->sched, (uint32_t)w);
}
static inline int master_nfailed(const master_t *m) { return (int)sched_workers_failed(m->sched); }

/* dispatch.c */
void master_on_message(master_t *m, int src, const proto_msg_t *msg);
int master_drain_actions(master_t *m);

/* beside.c */
int master_beside_start(master_t *m, const char *addr_file, const char *tcp_host,
                        uint64_t start_timeout_ms, const dred_jobinit_t *ji);
void master_beside_up(master_t *m, int worker, const proto_msg_t *msg);

/* main.c */
void master_watch_create(master_t *m);
/* Before MPI_Abort: the line saying why is on its way through Hydra's proxy, which
 * MPI_Abort kills with whatever it has not forwarded yet; give it a moment. */
void master_abort_grace(void);

/* startwatch.c: MPI_Abort the job if start-up has not ended within timeout_s */
int master_startwatch_begin(uint64_t timeout_s); /* before MPI_Init */
void master_startwatch_mpi_up(int mpi_thread_level);
void master_startwatch_phase(const char *phase); /* a static string for the log line */
void master_startwatch_boot(const dred_boot_t *boot); /* control directory made: removed on time-out */
void master_startwatch_end(void);

/* detector.c */
void master_detector_start(master_t *m);
void master_declare_failed(master_t *m, int worker, const char *why);
/* The same for evidence that this master's own shortage of descriptors can fake (a link
 * that closed, silence): once this process could not open a link for want of descriptors
 * (net.nofd), or has next to none free now (libuv closes a connection it cannot accept
 * without a word), a worker's link may have been lost to that, not to the worker's death,
 * so no worker is declared failed; the job is stopped with an error saying why. */
void master_suspect_failed(master_t *m, int worker, const char *why);

#endif /* DRED_MASTER_H */
