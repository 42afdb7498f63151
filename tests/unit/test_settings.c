/*
 * test_settings.c -- common/settings.h's table and common/config.c's loading from it: the
 * defaults and ranges the settings had before the table (written out here on purpose, as
 * a second record), the warning-and-default rule for a bad number, the strict DRED_MPI_*
 * parsing, the docs' words for ranges, and that every name is DRED_ + the row's NAME.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/config.h"
#include "../../common/settings.h"

static void clear_env(void) {
  for (int i = 0; i < DRED_SETTINGS_COUNT; i++) unsetenv(dred_settings[i].name);
}

static void test_defaults(void **state) {
  dred_config_t c;
  uint64_t hello;
  size_t pending;
  char why[256];
  (void)state;
  clear_env();
  dred_config_load(&c);
  assert_int_equal(c.chunk_kb, 1024);
  assert_int_equal(c.rma_depth, 64);
  assert_int_equal(c.rma_chunk_kb, 128);
  assert_int_equal(c.pool_mb, 256);
  assert_int_equal(c.heartbeat_ms, 500);
  assert_int_equal(c.fail_timeout_ms, 5000);
  assert_int_equal(c.master_timeout_ms, 10000);
  assert_int_equal(c.shm, 1);
  assert_int_equal(c.meet, 1);
  assert_int_equal(c.prefault_peers, 0);
  assert_int_equal(c.replicas, 2);
  assert_int_equal(c.replica_delay_ms, 1000);
  assert_int_equal(c.finalize_timeout_s, 60);
  assert_int_equal(c.start_timeout_s, 300);
  assert_int_equal(c.finalize_wait_s, 60);
  assert_int_equal(c.max_inflight, 65536);
  assert_int_equal(c.node_mem_mb, 0);
  assert_int_equal(c.inline_max, 1024);
  assert_int_equal(c.death_watch, 1);
  assert_int_equal(c.handover_node, 1);
  assert_int_equal(c.keep_storage, 0);
  assert_string_equal(c.policy, "predict");
  assert_string_equal(c.journal, "");
  assert_int_equal(c.test_absorb_kill, 0);
  dred_config_links(&hello, &pending);
  assert_int_equal(hello, 5000);
  assert_int_equal(pending, 64);
  assert_int_equal(dred_config_load_mpi(&c, why, sizeof why), 0);
  assert_int_equal(c.mpi_min_bytes, 1048576);
  assert_int_equal(c.mpi_report, 0);
  assert_int_equal(dred_setting_u64(DRED_S_KERNELS), 1);
  assert_int_equal(dred_setting_u64(DRED_S_LAUNCH_LINGER_S), 3600);
  assert_int_equal(dred_setting_u64(DRED_S_LAUNCH_TERM_LINGER_S), 10);
}

/* The ranges: each bound accepted, one past it refused with the default kept. */
static void test_ranges(void **state) {
  static const struct {
    dred_setting_id id;
    uint64_t lo, hi;
  } r[] = {
      {DRED_S_CHUNK_KB, 4, 1 << 20},          {DRED_S_RMA_DEPTH, 1, 64},
      {DRED_S_RMA_CHUNK_KB, 4, 1 << 20},      {DRED_S_POOL_MB, 0, 1 << 20},
      {DRED_S_HEARTBEAT_MS, 10, 3600000},     {DRED_S_FAIL_TIMEOUT_MS, 50, 86400000},
      {DRED_S_MASTER_TIMEOUT_MS, 50, 86400000}, {DRED_S_REPLICAS, 0, 5},
      {DRED_S_REPLICA_DELAY_MS, 0, 86400000}, {DRED_S_FINALIZE_TIMEOUT_S, 1, 86400},
      {DRED_S_START_TIMEOUT_S, 1, 86400 * 365}, {DRED_S_FINALIZE_WAIT_S, 0, 86400 * 365},
      {DRED_S_MAX_INFLIGHT, 1, 1 << 24},      {DRED_S_NODE_MEM_MB, 0, (uint64_t)1 << 30},
      {DRED_S_INLINE_MAX, 0, 65536},          {DRED_S_HELLO_TIMEOUT_MS, 100, 600000},
      {DRED_S_MAX_PENDING_LINKS, 1, 1000000}, {DRED_S_MPI_MIN_BYTES, 0, (uint64_t)1 << 40},
      {DRED_S_MPI_REPORT, 0, 2},              {DRED_S_SHM, 0, 1},
  };
  char v[32], why[256];
  uint64_t out;
  (void)state;
  clear_env();
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
    const char *name = dred_settings[r[i].id].name;
    snprintf(v, sizeof v, "%llu", (unsigned long long)r[i].lo);
    setenv(name, v, 1);
    assert_int_equal(dred_setting_parse_u64(r[i].id, &out, why, sizeof why), 0);
    assert_true(out == r[i].lo);
    snprintf(v, sizeof v, "%llu", (unsigned long long)r[i].hi);
    setenv(name, v, 1);
    assert_int_equal(dred_setting_parse_u64(r[i].id, &out, why, sizeof why), 0);
    assert_true(out == r[i].hi);
    snprintf(v, sizeof v, "%llu", (unsigned long long)r[i].hi + 1);
    setenv(name, v, 1);
    assert_int_equal(dred_setting_parse_u64(r[i].id, &out, why, sizeof why), -1);
    assert_true(out == dred_settings[r[i].id].def);
    unsetenv(name);
  }
}

static void test_bad_values(void **state) {
  dred_config_t c;
  char why[256];
  uint64_t out;
  (void)state;
  clear_env();
  setenv("DRED_CHUNK_KB", "-1", 1);
  assert_int_equal(dred_setting_parse_u64(DRED_S_CHUNK_KB, &out, why, sizeof why), -1);
  assert_string_equal(why, "DRED_CHUNK_KB=-1 is not a number in [4, 1048576]");
  setenv("DRED_CHUNK_KB", "12k", 1);
  setenv("DRED_RMA_DEPTH", "", 1); /* empty: the default, no complaint */
  dred_config_load(&c);
  assert_int_equal(c.chunk_kb, 1024);
  assert_int_equal(c.rma_depth, 64);
  /* libdred-mpi's are strict: an error, not a default */
  setenv("DRED_MPI_REPORT", "3", 1);
  assert_int_equal(dred_config_load_mpi(&c, why, sizeof why), -1);
  assert_string_equal(why, "DRED_MPI_REPORT=3 is not a number in [0, 2]");
  setenv("DRED_MPI_REPORT", "2", 1);
  setenv("DRED_MPI_MIN_BYTES", "0", 1);
  assert_int_equal(dred_config_load_mpi(&c, why, sizeof why), 0);
  assert_int_equal(c.mpi_report, 2);
  assert_int_equal(c.mpi_min_bytes, 0);
  setenv("DRED_TEST_ABSORB_KILL", "7:2", 1);
  setenv("DRED_POLICY", "last", 1);
  dred_config_load(&c);
  assert_int_equal(c.test_absorb_kill, 1);
  assert_int_equal(c.test_absorb_kill_tag, 7);
  assert_int_equal(c.test_absorb_kill_piece, 2);
  assert_string_equal(c.policy, "last");
  clear_env();
}

static void test_table_words(void **state) {
  char buf[512];
  (void)state;
  for (int i = 0; i < DRED_SETTINGS_COUNT; i++) {
    const dred_setting_t *s = &dred_settings[i];
    assert_true(strncmp(s->name, "DRED_", 5) == 0);
    assert_true(s->by != 0);
    assert_true(s->meaning[0] != '\0' && strchr(s->meaning, '|') == NULL); /* a markdown cell */
    if (s->type == DRED_SETTING_U64) assert_true(s->lo <= s->def && s->def <= s->hi);
    for (int j = 0; j < i; j++) assert_string_not_equal(s->name, dred_settings[j].name);
  }
  assert_string_equal(dred_settings[DRED_S_CHUNK_KB].name, "DRED_CHUNK_KB");
  assert_string_equal(dred_setting_range_str(&dred_settings[DRED_S_SHM], buf, sizeof buf), "0, 1");
  assert_string_equal(dred_setting_range_str(&dred_settings[DRED_S_NODE_MEM_MB], buf, sizeof buf),
                      "0..2^30");
  assert_string_equal(dred_setting_by_str(DRED_BY_ALL | DRED_BY_STAT, buf, sizeof buf),
                      "all, dredstat");
  assert_string_equal(dred_setting_by_str(DRED_BY_WORKER, buf, sizeof buf), "worker");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_ranges),
      cmocka_unit_test(test_bad_values),
      cmocka_unit_test(test_table_words),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
