/*
 * config.h -- dred's tunables, read once from the environment (DRED_*), with defaults.
 *
 * One table so that docs/configuration.md, dred-master's --help and the code
 * agree.  dred-master flags override the environment for the master's own settings.
 */
#ifndef DRED_CONFIG_H
#define DRED_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t chunk_kb;         /* DRED_CHUNK_KB         combine chunk on a node (1024)       */
  uint64_t rma_depth;        /* DRED_RMA_DEPTH        Rgets in flight per task (64)        */
  uint64_t rma_chunk_kb;     /* DRED_RMA_CHUNK_KB     bytes of one Rget (128)              */
  uint64_t pool_mb;          /* DRED_POOL_MB          shared-memory pool per worker (256)  */
  uint64_t heartbeat_ms;     /* DRED_HEARTBEAT_MS     master ping interval (500)           */
  uint64_t fail_timeout_ms;  /* DRED_FAIL_TIMEOUT_MS  silence before a worker is failed (5000) */
  uint64_t master_timeout_ms;/* DRED_MASTER_TIMEOUT_MS silence before the master is lost (10000) */
  uint64_t replicas;         /* DRED_REPLICAS         copies of each operand: 0 none, 1 local,
                                2 local + next live member (2)                        */
  uint64_t replica_delay_ms; /* DRED_REPLICA_DELAY_MS copies that shared memory already covers
                                start this long after the call, copies received over a
                                link are written to the store this long after arrival,
                                and neither if the reduction ended by then (1000; 0: at
                                once)                                                 */
  uint64_t finalize_timeout_s; /* DRED_FINALIZE_TIMEOUT_S bound on the collective shutdown, the
                                part of dred_finalize after SHUTDOWN (60)              */
  uint64_t start_timeout_s;  /* DRED_START_TIMEOUT_S  every application process must have
                                called dred_init within this of dred-master's start, else
                                the job ends (master/startwatch.c) (300)               */
  uint64_t finalize_wait_s;  /* DRED_FINALIZE_WAIT_S  how long dred_finalize waits for this
                                process's pending reductions before ending them with
                                DRED_ERR_SHUTDOWN (60; 0 = no bound)                   */
  uint64_t max_inflight;     /* DRED_MAX_INFLIGHT     reductions in flight per process;
                                dred_ireduce beyond it returns DRED_ERR_NOMEM (65536)  */
  uint64_t node_mem_mb;      /* DRED_NODE_MEM_MB      operand bytes the reductions in flight
                                on one node may hold, all processes together (0: the
                                node's physical memory)                                */
  uint64_t inline_max;       /* DRED_INLINE_MAX       reductions of at most this many bytes per
                                operand travel inside the control messages: no pool
                                buffer, no snapshot, no replicas, no tasks (1024; 0 off) */
  /* libdred-mpi.so (interpose/), read by dred_config_load_mpi, strictly: */
  uint64_t mpi_min_bytes;    /* DRED_MPI_MIN_BYTES    MPI_Reduce/MPI_Ireduce of fewer bytes
                                (count x type size) go to MPI, not dred
                                (DRED_MPI_MIN_BYTES_DEFAULT)                         */
  int mpi_report;            /* DRED_MPI_REPORT       1: at MPI_Finalize each process prints
                                one line per intercepted call kind to stderr; 2: also
                                why calls went to MPI (0)                             */
  int handover_node;         /* DRED_HANDOVER_NODE    1: in a group spanning nodes, dred_ireduce
                                returns once a copy of the operand is held on another
                                node, so losing this node afterwards loses nothing; 0:
                                once it is in this node's shared memory (1)            */
  int shm;                   /* DRED_SHM              0 forces RMA even on one node (1)    */
  int meet;                  /* DRED_MEET             one-node groups' small auto-tagged
                              *                       reductions meet in shared memory,
                              *                       without dred-master (1; the job uses it
                              *                       only if every process says 1)         */
  int prefault_peers;        /* DRED_PREFAULT_PEERS   1: dred_init also maps every node peer's
                                pool segment, not only our own, so no reduction takes
                                those page faults (worker/dataplane.c) (0)             */
  int death_watch;           /* DRED_DEATH_WATCH      0: the master sees deaths on its node only
                                by their links, not by robust mutexes (common/deathwatch.h) (1) */
  char policy[16];           /* DRED_POLICY           predict | last | first (predict)     */
  char storage_dir[512];     /* DRED_STORAGE_DIR      base directory (default: common/privdir.h,
                                $XDG_RUNTIME_DIR/dred or /tmp/dred-<uid>, or a fresh
                                /tmp/dred-<uid>-XXXXXX when that one is squatted); each
                                job uses <storage_dir>/job-<id> (storage/storedir.h)  */
  char journal[512];         /* DRED_JOURNAL          master journal path ("": the default,
                                <job directory>/journal.db)                          */
  int keep_storage;          /* DRED_KEEP_STORAGE     1: leave the job's stores and directory
                                after a clean finalize (0)                            */
  int storage_too_long;      /* DRED_STORAGE_DIR / DRED_JOURNAL did not fit: refused by
                                dred_config_check, never used cut short              */
  /* DRED_TEST_ABSORB_KILL=TAG:PIECE  a test hook, not a setting: a worker absorbing a
     snapshot for the reduction of explicit tag TAG SIGKILLs itself once piece PIECE's
     result is in scratch and half copied back (PIECE past the last: once every piece is
     done, before DONE), so tests/faults/rollforward.sh can make a node peer finish a
     dead executor's absorption at a chosen point.  Unset: never. */
  int test_absorb_kill;      /* 1 when set                                            */
  int64_t test_absorb_kill_tag;
  uint64_t test_absorb_kill_piece;
} dred_config_t;

/* The default of DRED_MPI_MIN_BYTES (1 MiB).  Measured with tests/interpose/bench.c (an
 * Ireduce + Wait loop, SUM of doubles, p = 2, one node, 2 shared cores): MPI was faster
 * at every size up to 512 KiB (0.7-1.4 us against 1.2-2.1 us up to 512 B; 1.4 us-4.3 ms
 * against 4-40 ms from 2 KiB to 512 KiB, where dred leaves its inline and shared-memory
 * paths), dred from 2 MiB (4.8-7.1 ms against 8.0-10.4 ms; 8 MiB 7.7 against 19.5 ms). */
#define DRED_MPI_MIN_BYTES_DEFAULT 1048576

/* Control links not yet through HELLO (common/net.h): DRED_HELLO_TIMEOUT_MS, how long one
 * may wait for it (5000; 100..600000), and DRED_MAX_PENDING_LINKS, how many may wait at
 * once before the oldest is closed (64; 1..1000000; never fewer than twice the job's ranks).
 * Read by dred_net_init for every process's listener, dred-master's included. */
#define DRED_HELLO_TIMEOUT_MS_DEFAULT 5000
#define DRED_MAX_PENDING_LINKS_DEFAULT 64
void dred_config_links(uint64_t *hello_timeout_ms, size_t *max_pending);

/* Fill `c` from the environment.  Bad values are logged and replaced by the default. */
void dred_config_load(dred_config_t *c);

/* Read one unsigned setting: *out is `def` when `name` is unset or empty, else its value.
 * A value that is not a decimal number in [lo, hi] leaves *out = def, says why in `why`
 * and returns -1 (callers decide whether that is fatal); 0 otherwise. */
int dred_config_env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi,
                        uint64_t *out, char *why, size_t cap);

/* The libdred-mpi settings (DRED_MPI_*) into `c`.  Strict: a malformed value is not
 * replaced by its default; returns -1 with the reason in `why`, 0 when all are good. */
int dred_config_load_mpi(dred_config_t *c, char *why, size_t cap);

/* Cross-check settings that are each valid alone but not together.  `role` says whose
 * settings these are: DRED_CONFIG_MASTER checks the policy name and the heartbeat against
 * the fail timeout; DRED_CONFIG_WORKER checks DRED_MASTER_TIMEOUT_MS against
 * `master_heartbeat_ms` (the interval the master announced at init: its flags may
 * override the environment).  Both
 * check the storage paths' lengths.  Returns 0, or DRED_ERR_ARG with a sentence naming the
 * setting(s) in `why` (`cap` bytes).  A heartbeat must fit twice in a timeout: one late
 * ping must not fail a live process. */
#define DRED_CONFIG_MASTER 0
#define DRED_CONFIG_WORKER 1
int dred_config_check(const dred_config_t *c, int role, uint64_t master_heartbeat_ms, char *why,
                      size_t cap);

#endif /* DRED_CONFIG_H */
