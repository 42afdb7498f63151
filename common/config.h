/*
 * config.h -- dred's tunables, read once from the environment (DRED_*) into one struct.
 *
 * What each setting means, its default and its range are common/settings.h's table, not
 * here: dred_config_load walks that table, so the docs, dred-master's --help and the code
 * cannot disagree.  dred-master flags override the environment for the master's own
 * settings.
 */
#ifndef DRED_CONFIG_H
#define DRED_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "settings.h"

typedef struct {
  /* The numeric settings, one field per C row of DRED_SETTINGS (common/settings.h says
   * each one's default, range and meaning), loaded by dred_config_load: */
  uint64_t chunk_kb;          /* DRED_CHUNK_KB */
  uint64_t rma_depth;         /* DRED_RMA_DEPTH */
  uint64_t rma_chunk_kb;      /* DRED_RMA_CHUNK_KB */
  uint64_t pool_mb;           /* DRED_POOL_MB */
  uint64_t heartbeat_ms;      /* DRED_HEARTBEAT_MS */
  uint64_t fail_timeout_ms;   /* DRED_FAIL_TIMEOUT_MS */
  uint64_t master_timeout_ms; /* DRED_MASTER_TIMEOUT_MS */
  uint64_t replicas;          /* DRED_REPLICAS */
  uint64_t replica_delay_ms;  /* DRED_REPLICA_DELAY_MS */
  uint64_t finalize_timeout_s; /* DRED_FINALIZE_TIMEOUT_S */
  uint64_t start_timeout_s;   /* DRED_START_TIMEOUT_S (master/startwatch.c) */
  uint64_t finalize_wait_s;   /* DRED_FINALIZE_WAIT_S */
  uint64_t max_inflight;      /* DRED_MAX_INFLIGHT */
  uint64_t node_mem_mb;       /* DRED_NODE_MEM_MB */
  uint64_t inline_max;        /* DRED_INLINE_MAX */
  int handover_node;          /* DRED_HANDOVER_NODE */
  int shm;                    /* DRED_SHM */
  int meet;                   /* DRED_MEET */
  int meet_share;             /* DRED_MEET_SHARE (lib/paths/meetpath.c) */
  int meet_pieces;            /* DRED_MEET_PIECES (lib/paths/meetpath.c) */
  int meet_fast_nb;           /* DRED_MEET_FAST_NB (lib/paths/lanepath.c) */
  int shm_stream;             /* DRED_SHM_STREAM (lib/mpi/window.c, lib/shm/copy.c) */
  uint64_t meet_spin_us;      /* DRED_MEET_SPIN_US (lib/paths/meetpath.c) */
  int prefault_peers;         /* DRED_PREFAULT_PEERS (lib/mpi/window.c) */
  int death_watch;            /* DRED_DEATH_WATCH (common/deathwatch.h) */
  int keep_storage;           /* DRED_KEEP_STORAGE */
  /* libdred-mpi.so (interpose/), read by dred_config_load_mpi, strictly: */
  uint64_t mpi_min_bytes;     /* DRED_MPI_MIN_BYTES */
  uint64_t mpi_coll_min_bytes; /* DRED_MPI_COLL_MIN_BYTES */
  uint64_t mpi_node_min_bytes; /* DRED_MPI_NODE_MIN_BYTES */
  int mpi_report;             /* DRED_MPI_REPORT */
  /* Text settings, each parsed here: */
  char policy[16];            /* DRED_POLICY; checked by dred_config_check */
  char storage_dir[512];      /* DRED_STORAGE_DIR, else common/privdir.h's default; each
                                 job uses <storage_dir>/job-<id> (storage/storedir.h) */
  char journal[512];          /* DRED_JOURNAL ("": <job directory>/journal.db) */
  int storage_too_long;       /* DRED_STORAGE_DIR / DRED_JOURNAL did not fit: refused by
                                 dred_config_check, never used cut short */
  /* DRED_TEST_ABSORB_KILL=TAG:PIECE  a test hook, not a setting: a worker absorbing a
     snapshot for the reduction of explicit tag TAG SIGKILLs itself once piece PIECE's
     result is in scratch and half copied back (PIECE past the last: once every piece is
     done, before DONE), so tests/faults/rollforward.sh can make a node peer finish a
     dead executor's absorption at a chosen point.  Unset: never. */
  int test_absorb_kill;      /* 1 when set                                            */
  int64_t test_absorb_kill_tag;
  uint64_t test_absorb_kill_piece;
  /* DRED_TEST_READY_KILL=TAG:RANK  a test hook, not a setting: the worker of world rank
     RANK sends no READY for the reduction of explicit tag TAG and SIGKILLs itself half a
     second after it would have (its copies held), so tests/faults/unseen-mismatch.sh
     makes dred-master recover a member whose READY it never saw.  Unset: never. */
  int test_ready_kill;
  int64_t test_ready_kill_tag;
  int test_ready_kill_rank;
} dred_config_t;

/* Control links not yet through HELLO (common/net.h): DRED_HELLO_TIMEOUT_MS, how long one
 * may wait for it, and DRED_MAX_PENDING_LINKS, how many may wait at once before the oldest
 * is closed (never fewer than twice the job's ranks: net.c's part).  Read by dred_net_init
 * for every process's listener, dred-master's included.  Either pointer may be NULL. */
void dred_config_links(uint64_t *hello_timeout_ms, size_t *max_pending);

/* Fill `c` from the environment.  Bad values are logged and replaced by the default. */
void dred_config_load(dred_config_t *c);

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
