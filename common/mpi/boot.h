/*
 * boot.h -- how dred-master and libdred meet: the collective start-up both programs run,
 * in the same order, over MPI, and the control links it leaves them with; then the
 * start-of-job handshake (below) in which they agree that the job can run.
 *
 * MPI is the bootstrap (docs/design.md): every process of the job is in MPI_COMM_WORLD, rank 0
 * is dred-master.  dred_boot_start() makes dred's private communicator (a duplicate of
 * the world, so dred never matches the application's messages), splits off dred_comm()
 * (the application processes; the master passes MPI_UNDEFINED), learns which processes
 * share a node (the job's one node record: the master's scheduler, the workers' replica
 * placement, common/placement.h, and their segment table, lib/shm/segment.h, all read it),
 * and sets up the control plane (common/net.h): rank 0 draws the job's
 * random token and job id and broadcasts them; every process listens on a Unix domain
 * socket in a private per-job directory (and on TCP when the job spans nodes) and the
 * addresses are gathered everywhere; a worker then opens its link to the master.  After
 * this, control traffic never touches MPI.
 *
 * The order of collectives here is the contract between the two programs: change it on
 * one side and both hang, which is why it lives in one function both call.
 */
#ifndef DRED_MPI_BOOT_H
#define DRED_MPI_BOOT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "../net.h"

/* dred sends no MPI message (every message and replica copy travels on the links,
 * common/net.c).  This tag is only probed, never sent on: an MPI_Iprobe on the private
 * communicator drives MPICH's progress for peers reading our memory by MPI_Rget
 * (lib/engine/runtime.c, on_serve). */
#define DRED_MPI_PROBE_TAG 8

typedef struct {
  MPI_Comm priv;     /* dred's traffic: a duplicate of MPI_COMM_WORLD            */
  MPI_Comm comm;     /* dred_comm() at a worker; MPI_COMM_NULL at the master      */
  int rank, size;    /* job ranks: 0 is dred-master, workers 1..size-1            */
  int external;      /* the master runs outside MPI_COMM_WORLD (below)            */
  int base;          /* job rank of priv's rank 0: 0 (MPMD), 1 (external)         */
  uint32_t *node_of; /* by rank: the node, named by its lowest rank (the master's:
                        0).  MPI_COMM_TYPE_SHARED decides: one node per host name,
                        simulated nodes included                                  */
  int nnodes;        /* distinct nodes of the job                                 */
  int multinode;     /* some process lives on another node than rank 0            */
  char dir[DRED_NET_ADDR_MAX];      /* this job's control-socket directory       */
  char sock[DRED_NET_ADDR_MAX + 16]; /* our socket in it                          */
  char watch[DRED_NET_ADDR_MAX + 16]; /* the master's death-watch file (deathwatch.h) */
  char master_sock[DRED_NET_ADDR_MAX]; /* beside the job, on our node: its socket, in a
                                          directory of its own ("" otherwise)       */
} dred_boot_t;

/* Job ranks and priv's ranks.  With the master as rank 0 of MPI_COMM_WORLD they are the
 * same; with the master outside, priv is the application's world and worker k of it is
 * job rank k + 1.  Every MPI call that names a process translates here. */
static inline int dred_boot_job_rank(const dred_boot_t *b, int mpi_rank) { return mpi_rank + b->base; }
static inline int dred_boot_mpi_rank(const dred_boot_t *b, int job_rank) { return job_rank - b->base; }

/* The collective start-up (see above).  `net` is initialised on `loop` and listening;
 * a worker's link to the master is open (its HELLO queued).  Returns DRED_OK or a DRED_ERR_*
 * with a log line; on error the job cannot run (the caller aborts or returns it). */
int dred_boot_start(dred_boot_t *b, int is_master, dred_net_t *net, uv_loop_t *loop);

/* Job rank `rank` is dead (declared failed): remove its socket if it was on our node,
 * since it cannot, so that the last process to leave can remove the directory. */
void dred_boot_forget(const dred_boot_t *b, int rank);

/* Remove our socket (and the directory, if we are the last to leave); free node_of.
 * Local only: called at every exit, also after a failure. */
void dred_boot_finish(dred_boot_t *b);

/* The job is ending without its collective end (MPI_Abort next, which kills every process
 * of the job before it can tidy up): remove the whole control directory on this node --
 * every rank's socket in it, the death-watch file, the directory -- rather than only our
 * socket.  Local; safe from any thread once dred_boot_start returned. */
void dred_boot_abandon(const dred_boot_t *b);

/* Start-up is over for this process: tell dred-launch (tools/dred-launch.c), if it started
 * us, on the pipe it named in DRED_LAUNCH_FD; from then on a death of ours is a failure the
 * job survives, not a start-up that cannot finish.  No launcher: nothing to do. */
void dred_boot_tell_launcher(void);

/* ---- teardown: the collective end both programs run, in the same order ----------------
 *
 * Once the master sent SHUTDOWN and the loops ended, and only if no process of the job
 * died (collective frees and MPI_Finalize hang once one did: docs/design.md; then neither
 * program calls this and both exit without MPI_Finalize), each process calls
 * dred_boot_teardown(), which runs:
 *   1. MPI_Win_free(dwin): the dynamic RMA window every process created over priv after
 *      the handshake (master/main.c; lib/mpi/window.c and buffer.c, which attach buffers to
 *      it).  Collective over priv, so it comes first, in both programs.  A worker has
 *      already released what only it and its node peers share (dred_dp_finalize: its
 *      lock on dwin, the pool's shared window and the node communicator; the master is in
 *      none of them).
 *   2. MPI_Comm_free of dred_comm() (workers; MPI_COMM_NULL at the master), then of priv:
 *      the reverse of the order dred_boot_start made them.
 *   3. MPI_Finalize if `finalize` (always at the master; at a worker only if dred_init
 *      initialised MPI, otherwise the application does).
 * The caller bounds the wait (the master's alarm, dred_finalize's watchdog): a process
 * that vanished after SHUTDOWN would otherwise leave the others in step 1 for ever. */
void dred_boot_teardown(dred_boot_t *b, MPI_Win *dwin, int finalize);

/* ---- the start-of-job handshake ---------------------------------------------------------
 *
 * Right after dred_boot_start, two more collectives on dred's private communicator, in
 * dred-master (master/main.c) and in dred_init (lib/engine/api.c) alike:
 *   1. MPI_Bcast from the master (rank 0) of a dred_jobinit_t: whether the master accepts
 *      its settings (and if not, the sentence saying which setting is wrong), its
 *      heartbeat interval (workers check their master timeout against it) and the job id
 *      that names the job's storage directory (<DRED_STORAGE_DIR>/job-<id>) on every node.
 *   2. MPI_Allreduce(MPI_MAXLOC) of (status, rank): each process adds its own verdict
 *      (a worker's settings, its replica store), so all of them learn whether the job can
 *      run and who refused first.
 * Why: a master that exited before MPI_Init over a bad setting would leave every worker in
 * dred_init for ever, and a worker that could not open its store would run without
 * replicas with its application none the wiser.  So the master still joins MPI_Init and
 * these two collectives, every dred_init returns the refusal as a status (DRED_ERR_ARG for
 * a setting, DRED_ERR_STORAGE for a store), and the master then ends the job (MPI_Abort).
 */

typedef struct {
  int32_t status;        /* DRED_OK, or the status the master refuses the job with  */
  uint32_t heartbeat_ms; /* the master's ping interval                               */
  char job_id[64];       /* names <storage>/job-<id>; NUL-terminated                 */
  char reason[256];      /* why status != DRED_OK: names the setting                 */
} dred_jobinit_t;

/* A job id unique on this node and very likely everywhere: time, pid, 32 random bits. */
void dred_jobinit_new_id(char *out, size_t cap);

/* Step 1: the master sends `ji`; a worker receives it into `ji` (terminated strings
 * guaranteed).  Returns MPI's status. */
int dred_jobinit_exchange(MPI_Comm priv, dred_jobinit_t *ji);

/* Step 2: everyone's verdict.  `mine` is this process's status.  Returns DRED_OK when all
 * are, else the largest status code given (MPI_MAXLOC) and sets *who to the lowest rank
 * that gave it.  An MPI failure counts as DRED_ERR_INTERNAL. */
int dred_jobinit_agree(MPI_Comm priv, int mine, int *who);

/* ---- a master outside the MPI job --------------------------------------------------------
 *
 * dredrun --external-master starts dred-master beside the job instead of as its rank 0:
 * the application keeps MPI_COMM_WORLD to itself (dred_comm() is its duplicate) and the
 * job is a plain `mpiexec -n P app`.  MPICH 4.0.2 over UCX cannot join two MPI jobs
 * (MPI_Open_port: "not supported with ucx netmod"), so this master makes no MPI call at
 * all and the start-up goes over its socket instead:
 *   - the master listens (dred_boot_standalone: Unix socket, and TCP when --tcp-host says
 *     the job may span nodes) and writes its addresses and the job's token to a file;
 *     dredrun hands them to every process: DRED_MASTER_ADDR (unix:PATH), DRED_MASTER_TCP
 *     (tcp:HOST:PORT), DRED_MASTER_HOST (the host it runs on, as the job names hosts),
 *     DRED_JOB_TOKEN (hex);
 *   - dred_init finds DRED_MASTER_ADDR set: dred_boot_start runs the same collectives
 *     over the application's world (node table, job directory, addresses), places the
 *     master on the node whose processes share its host name (Unix socket and death
 *     watch there, TCP elsewhere) and connects;
 *   - dred_boot_join sends JOIN (its node, the master's node) and waits, bounded, for the
 *     master's WELCOME, which carries what the MPMD start-up broadcasts (dred_jobinit_t);
 *     the workers' verdicts are then agreed among them (dred_jobinit_agree over priv): a
 *     refusal closes their links, which is how the master learns of it;
 *   - dred_boot_up, once the worker is set up (pool, runtime thread next): from then on
 *     the master pings it (the MPMD master waits in MPI_Win_create_dynamic for the same).
 * Teardown is the workers' alone (the master is in none of their communicators). */

/* The master: listen for `nworkers` workers, on TCP too if tcp_host is not NULL; a fresh
 * token.  Returns DRED_OK or DRED_ERR_* (logged). */
int dred_boot_standalone(dred_boot_t *b, int nworkers, dred_net_t *net, uv_loop_t *loop,
                         const char *tcp_host, char unix_addr[DRED_NET_ADDR_MAX],
                         char tcp_addr[DRED_NET_ADDR_MAX], uint8_t token[DRED_NET_TOKEN_BYTES]);

/* A worker: JOIN, then run `loop` until WELCOME fills `ji` (DRED_OK), the master's link
 * closes or timeout_ms pass (DRED_ERR_INTERNAL, logged). */
int dred_boot_join(dred_boot_t *b, dred_net_t *net, uv_loop_t *loop, uint64_t timeout_ms,
                   dred_jobinit_t *ji);

/* A worker, set up: JOIN stage 1 (nothing in the MPMD start-up). */
int dred_boot_up(dred_boot_t *b, dred_net_t *net);

#endif /* DRED_MPI_BOOT_H */
