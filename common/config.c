/*
 * config.c -- see config.h.  The numeric settings come from common/settings.h's table
 * (DRED_SETTINGS, rows marked C), the text ones through their parsers here; nothing in
 * this file names a default or a range.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "privdir.h"
#include "settings.h"
#include "../include/dred_status.h"

/* Settings load in the table's order; a bad value is logged and replaced by its default
 * (dred_setting_u64).  The assignment casts to the field's own type: the 0/1 switches are
 * ints, the rest uint64_t. */
void dred_config_load(dred_config_t *c) {
  const char *s;
  memset(c, 0, sizeof *c);
#define LOAD_C(NAME, field, def, lo, hi, by, meaning) \
  c->field = (__typeof__(c->field))dred_setting_u64(DRED_S_##NAME);
#define SKIP_N(NAME, def, lo, hi, by, meaning)
#define SKIP_T(NAME, def, form, by, meaning)
  DRED_SETTINGS(LOAD_C, SKIP_N, SKIP_T)
#undef LOAD_C
#undef SKIP_N
#undef SKIP_T
  s = dred_setting_raw(DRED_S_POLICY);
  snprintf(c->policy, sizeof c->policy, "%s", (s && *s) ? s : "predict");
  s = dred_setting_raw(DRED_S_STORAGE_DIR);
  if (s && *s) {
    if (strlen(s) >= sizeof c->storage_dir) c->storage_too_long = 1;
    snprintf(c->storage_dir, sizeof c->storage_dir, "%s", s);
  } else if (dred_privdir_default("/tmp", 1, c->storage_dir, sizeof c->storage_dir) < 0) {
    /* Logged; the storage checks refuse this name, so the job says why it cannot run. */
    snprintf(c->storage_dir, sizeof c->storage_dir, "/tmp/dred-%ld", (long)geteuid());
  }
  s = dred_setting_raw(DRED_S_TEST_ABSORB_KILL);
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
  s = dred_setting_raw(DRED_S_TEST_READY_KILL);
  if (s && *s) {
    long long tag;
    int rank;
    char extra;
    if (sscanf(s, "%lld:%d%c", &tag, &rank, &extra) == 2 && tag >= 0 && rank >= 0) {
      c->test_ready_kill = 1;
      c->test_ready_kill_tag = tag;
      c->test_ready_kill_rank = rank;
    } else {
      DRED_WARN("DRED_TEST_READY_KILL=%s is not TAG:RANK (two numbers); ignored", s);
    }
  }
  s = dred_setting_raw(DRED_S_JOURNAL);
  if (s && *s) {
    if (strlen(s) >= sizeof c->journal) c->storage_too_long = 1;
    snprintf(c->journal, sizeof c->journal, "%s", s);
  }
}

int dred_config_load_mpi(dred_config_t *c, char *why, size_t cap) {
  uint64_t v;
  if (dred_setting_parse_u64(DRED_S_MPI_MIN_BYTES, &c->mpi_min_bytes, why, cap) != 0) return -1;
  if (dred_setting_parse_u64(DRED_S_MPI_COLL_MIN_BYTES, &c->mpi_coll_min_bytes, why, cap) != 0)
    return -1;
  if (dred_setting_parse_u64(DRED_S_MPI_NODE_MIN_BYTES, &c->mpi_node_min_bytes, why, cap) != 0)
    return -1;
  if (dred_setting_parse_u64(DRED_S_MPI_REPORT, &v, why, cap) != 0) return -1;
  c->mpi_report = (int)v;
  return 0;
}

void dred_config_links(uint64_t *hello_timeout_ms, size_t *max_pending) {
  if (hello_timeout_ms != NULL) *hello_timeout_ms = dred_setting_u64(DRED_S_HELLO_TIMEOUT_MS);
  if (max_pending != NULL) *max_pending = (size_t)dred_setting_u64(DRED_S_MAX_PENDING_LINKS);
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
