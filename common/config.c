/*
 * config.c -- see config.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "privdir.h"
#include "../storage/storedir.h"
#include "dred_status.h"

int dred_config_env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi,
                        uint64_t *out, char *why, size_t cap) {
  const char *s = getenv(name);
  char *end;
  unsigned long long v;
  *out = def;
  if (s == NULL || *s == '\0') return 0;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || *s == '-' || v < lo || v > hi) {
    snprintf(why, cap, "%s=%s is not a number in [%llu, %llu]", name, s,
             (unsigned long long)lo, (unsigned long long)hi);
    return -1;
  }
  *out = v;
  return 0;
}

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi) {
  char why[160];
  uint64_t v;
  if (dred_config_env_u64(name, def, lo, hi, &v, why, sizeof why) != 0)
    DRED_WARN("%s; using %llu", why, (unsigned long long)def);
  return v;
}

void dred_config_load(dred_config_t *c) {
  const char *s;
  memset(c, 0, sizeof *c);
  c->chunk_kb = env_u64("DRED_CHUNK_KB", 1024, 4, 1 << 20);
  c->rma_depth = env_u64("DRED_RMA_DEPTH", 64, 1, 64);
  c->rma_chunk_kb = env_u64("DRED_RMA_CHUNK_KB", 128, 4, 1 << 20);
  c->pool_mb = env_u64("DRED_POOL_MB", 256, 0, 1 << 20);
  c->heartbeat_ms = env_u64("DRED_HEARTBEAT_MS", 500, 10, 3600000);
  c->fail_timeout_ms = env_u64("DRED_FAIL_TIMEOUT_MS", 5000, 50, 86400000);
  c->master_timeout_ms = env_u64("DRED_MASTER_TIMEOUT_MS", 10000, 50, 86400000);
  c->shm = (int)env_u64("DRED_SHM", 1, 0, 1);
  c->meet = (int)env_u64("DRED_MEET", 1, 0, 1);
  c->prefault_peers = (int)env_u64("DRED_PREFAULT_PEERS", 0, 0, 1);
  c->replicas = env_u64("DRED_REPLICAS", 2, 0, 1 + 4);
  c->replica_delay_ms = env_u64("DRED_REPLICA_DELAY_MS", 1000, 0, 86400000);
  c->finalize_timeout_s = env_u64("DRED_FINALIZE_TIMEOUT_S", 60, 1, 86400);
  c->start_timeout_s = env_u64("DRED_START_TIMEOUT_S", 300, 1, 86400 * 365);
  c->finalize_wait_s = env_u64("DRED_FINALIZE_WAIT_S", 60, 0, 86400 * 365);
  c->max_inflight = env_u64("DRED_MAX_INFLIGHT", 65536, 1, 1u << 24);
  c->node_mem_mb = env_u64("DRED_NODE_MEM_MB", 0, 0, (uint64_t)1 << 30);
  c->inline_max = env_u64("DRED_INLINE_MAX", 1024, 0, 64 * 1024);
  c->death_watch = (int)env_u64("DRED_DEATH_WATCH", 1, 0, 1);
  c->handover_node = (int)env_u64("DRED_HANDOVER_NODE", 1, 0, 1);
  s = getenv("DRED_POLICY");
  snprintf(c->policy, sizeof c->policy, "%s", (s && *s) ? s : "predict");
  c->keep_storage = (int)env_u64("DRED_KEEP_STORAGE", 0, 0, 1);
  s = getenv("DRED_STORAGE_DIR");
  if (s && *s) {
    if (strlen(s) >= sizeof c->storage_dir) c->storage_too_long = 1;
    snprintf(c->storage_dir, sizeof c->storage_dir, "%s", s);
  } else if (dred_privdir_default("/tmp", 1, c->storage_dir, sizeof c->storage_dir) < 0) {
    /* Logged; the storage checks refuse this name, so the job says why it cannot run. */
    snprintf(c->storage_dir, sizeof c->storage_dir, "/tmp/dred-%ld", (long)geteuid());
  }
  s = getenv("DRED_TEST_ABSORB_KILL");
  if (s && *s) {
    long long tag;
    unsigned long long piece;
    char extra;
    if (sscanf(s, "%lld:%llu%c", &tag, &piece, &extra) == 2 && tag >= 0) {
      c->test_absorb_kill = 1;
      c->test_absorb_kill_tag = tag;
      c->test_absorb_kill_piece = piece;
    } else {
      DRED_WARN("DRED_TEST_ABSORB_KILL=%s is not TAG:PIECE (two numbers); ignored", s);
    }
  }
  s = getenv("DRED_JOURNAL");
  if (s && *s) {
    if (strlen(s) >= sizeof c->journal) c->storage_too_long = 1;
    snprintf(c->journal, sizeof c->journal, "%s", s);
  }
}

int dred_config_load_mpi(dred_config_t *c, char *why, size_t cap) {
  uint64_t v;
  if (dred_config_env_u64("DRED_MPI_MIN_BYTES", DRED_MPI_MIN_BYTES_DEFAULT, 0,
                          (uint64_t)1 << 40, &c->mpi_min_bytes, why, cap) != 0)
    return -1;
  if (dred_config_env_u64("DRED_MPI_REPORT", 0, 0, 2, &v, why, cap) != 0) return -1;
  c->mpi_report = (int)v;
  return 0;
}

void dred_config_links(uint64_t *hello_timeout_ms, size_t *max_pending) {
  if (hello_timeout_ms != NULL)
    *hello_timeout_ms = env_u64("DRED_HELLO_TIMEOUT_MS", DRED_HELLO_TIMEOUT_MS_DEFAULT, 100, 600000);
  if (max_pending != NULL)
    *max_pending = (size_t)env_u64("DRED_MAX_PENDING_LINKS", DRED_MAX_PENDING_LINKS_DEFAULT, 1,
                                   1000000);
}

int dred_config_check(const dred_config_t *c, int role, uint64_t master_heartbeat_ms, char *why,
                      size_t cap) {
#define CHECK_FAIL(...) (snprintf(why, cap, __VA_ARGS__), DRED_ERR_ARG)
  if (cap > 0) *why = '\0';
  if (c->storage_too_long || strlen(c->storage_dir) > DRED_STOREDIR_MAX)
    return CHECK_FAIL("DRED_STORAGE_DIR (or --storage) is longer than %d bytes",
                      DRED_STOREDIR_MAX);
  if (role == DRED_CONFIG_MASTER) {
    if (strcmp(c->policy, "predict") != 0 && strcmp(c->policy, "last") != 0 &&
        strcmp(c->policy, "first") != 0)
      return CHECK_FAIL("DRED_POLICY (or --policy) '%s' is not predict, last or first",
                        c->policy);
    if (2 * c->heartbeat_ms > c->fail_timeout_ms)
      return CHECK_FAIL("DRED_HEARTBEAT_MS (or --heartbeat-ms) %llu must be at most half of "
                        "DRED_FAIL_TIMEOUT_MS (or --fail-timeout-ms) %llu, else live workers "
                        "are declared failed",
                        (unsigned long long)c->heartbeat_ms,
                        (unsigned long long)c->fail_timeout_ms);
  } else {
    if (2 * master_heartbeat_ms > c->master_timeout_ms)
      return CHECK_FAIL("DRED_MASTER_TIMEOUT_MS %llu must be at least twice dred-master's "
                        "heartbeat interval (DRED_HEARTBEAT_MS or --heartbeat-ms) %llu, else "
                        "every worker declares the master lost",
                        (unsigned long long)c->master_timeout_ms,
                        (unsigned long long)master_heartbeat_ms);
  }
  return 0;
#undef CHECK_FAIL
}
