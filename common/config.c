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

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi) {
  const char *s = getenv(name);
  char *end;
  unsigned long long v;
  if (s == NULL || *s == '\0') return def;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) {
    DRED_WARN("%s=%s is not a number in [%llu, %llu]; using %llu", name, s,
              (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)def);
    return def;
  }
  return v;
}

void dred_config_load(dred_config_t *c) {
  const char *s;
  memset(c, 0, sizeof *c);
  c->poll_min_us = env_u64("DRED_POLL_MIN_US", 1, 1, 1000000);
  c->poll_max_us = env_u64("DRED_POLL_MAX_US", 200, c->poll_min_us, 10000000);
  c->poll_idle_us = env_u64("DRED_POLL_IDLE_US", 20000, c->poll_max_us, 100000000);
  c->master_idle_us = env_u64("DRED_MASTER_POLL_IDLE_US", 2000, c->poll_max_us, 100000000);
  c->chunk_kb = env_u64("DRED_CHUNK_KB", 1024, 4, 1 << 20);
  c->rma_depth = env_u64("DRED_RMA_DEPTH", 4, 1, 64);
  c->pool_mb = env_u64("DRED_POOL_MB", 256, 0, 1 << 20);
  c->heartbeat_ms = env_u64("DRED_HEARTBEAT_MS", 500, 10, 3600000);
  c->fail_timeout_ms = env_u64("DRED_FAIL_TIMEOUT_MS", 5000, 50, 86400000);
  c->master_timeout_ms = env_u64("DRED_MASTER_TIMEOUT_MS", 10000, 50, 86400000);
  c->shm = (int)env_u64("DRED_SHM", 1, 0, 1);
  c->replicas = env_u64("DRED_REPLICAS", 2, 0, 1 + 4);
  c->replica_delay_ms = env_u64("DRED_REPLICA_DELAY_MS", 0, 0, 86400000);
  c->finalize_timeout_s = env_u64("DRED_FINALIZE_TIMEOUT_S", 60, 1, 86400);
  c->finalize_wait_s = env_u64("DRED_FINALIZE_WAIT_S", 60, 0, 86400 * 365);
  c->max_inflight = env_u64("DRED_MAX_INFLIGHT", 65536, 1, 1u << 24);
  s = getenv("DRED_POLICY");
  snprintf(c->policy, sizeof c->policy, "%s", (s && *s) ? s : "predict");
  s = getenv("DRED_STORAGE_DIR");
  if (s && *s)
    snprintf(c->storage_dir, sizeof c->storage_dir, "%s", s);
  else
    snprintf(c->storage_dir, sizeof c->storage_dir, "/tmp/dred-%ld", (long)getuid());
  s = getenv("DRED_JOURNAL");
  if (s && *s)
    snprintf(c->journal, sizeof c->journal, "%s", s);
  else
    snprintf(c->journal, sizeof c->journal, "%.480s/journal.db", c->storage_dir);
}
