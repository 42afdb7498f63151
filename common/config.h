/*
 * config.h -- dred's tunables, read once from the environment (DRED_*), with defaults.
 *
 * One table so that README's configuration section, dred-master's --help and the code
 * agree.  dred-master flags override the environment for the master's own settings.
 */
#ifndef DRED_CONFIG_H
#define DRED_CONFIG_H

#include <stdint.h>

typedef struct {
  uint64_t poll_min_us;      /* DRED_POLL_MIN_US      back-off start (1)                   */
  uint64_t poll_max_us;      /* DRED_POLL_MAX_US      back-off cap while busy (200)        */
  uint64_t poll_idle_us;     /* DRED_POLL_IDLE_US     worker cap once idle for 100 ms (20000): an
                                idle worker only gets pings, so latency does not matter */
  uint64_t master_idle_us;   /* DRED_MASTER_POLL_IDLE_US master cap once idle (2000): bounds the
                                delay of the first message after a quiet spell        */
  uint64_t chunk_kb;         /* DRED_CHUNK_KB         combine / RMA chunk (1024)           */
  uint64_t rma_depth;        /* DRED_RMA_DEPTH        Rgets in flight per task (4)         */
  uint64_t pool_mb;          /* DRED_POOL_MB          shared-memory pool per worker (256)  */
  uint64_t heartbeat_ms;     /* DRED_HEARTBEAT_MS     master ping interval (500)           */
  uint64_t fail_timeout_ms;  /* DRED_FAIL_TIMEOUT_MS  silence before a worker is failed (5000) */
  uint64_t master_timeout_ms;/* DRED_MASTER_TIMEOUT_MS silence before the master is lost (10000) */
  uint64_t replicas;         /* DRED_REPLICAS         copies of each operand: 0 none, 1 local,
                                2 local + next live member (2)                        */
  uint64_t replica_delay_ms; /* DRED_REPLICA_DELAY_MS copies that shared memory already covers
                                start this long after the call, and not at all if the
                                reduction ended by then (0: at once)                   */
  uint64_t finalize_timeout_s; /* DRED_FINALIZE_TIMEOUT_S bound on the collective shutdown, the
                                part of dred_finalize after SHUTDOWN (60)              */
  uint64_t finalize_wait_s;  /* DRED_FINALIZE_WAIT_S  how long dred_finalize waits for this
                                process's pending reductions before ending them with
                                DRED_ERR_SHUTDOWN (60; 0 = no bound)                   */
  uint64_t max_inflight;     /* DRED_MAX_INFLIGHT     reductions in flight per process;
                                dred_ireduce beyond it returns DRED_ERR_NOMEM (65536)  */
  int shm;                   /* DRED_SHM              0 forces RMA even on one node (1)    */
  char policy[16];           /* DRED_POLICY           predict | last | first (predict)     */
  char storage_dir[512];     /* DRED_STORAGE_DIR      replicas and journal (/tmp/dred-$USER) */
  char journal[512];         /* DRED_JOURNAL          master journal path (<storage>/journal.db) */
} dred_config_t;

/* Fill `c` from the environment.  Bad values are logged and replaced by the default. */
void dred_config_load(dred_config_t *c);

#endif /* DRED_CONFIG_H */
