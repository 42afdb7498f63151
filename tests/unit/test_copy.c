/*
 * test_copy.c -- lib/shm/copy.c: a copy into a shared block, streamed past the cache or
 * through it.  Every way a copy can go (below stream_min, streamed with an unaligned head
 * and a tail under one line, forced through the cache by dred_shm_copy_cached_set) must
 * give the same bytes and write nothing outside the destination, the ways the measurement
 * picks too (copymode.c); and the last-level cache that decides the default is read from
 * sysfs for the CPUs the process may run on.
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../lib/shm/copy.h"

#define GUARD 80u

/* copy n bytes from src + soff to dst + doff, then check them and the guards around */
static void copy_check(size_t n, size_t soff, size_t doff, size_t stream_min) {
  size_t cap = n + soff + doff + 2 * GUARD;
  unsigned char *src = malloc(cap), *dst = malloc(cap);
  assert_non_null(src);
  assert_non_null(dst);
  for (size_t i = 0; i < cap; i++) {
    src[i] = (unsigned char)(i * 131u + 7u);
    dst[i] = 0xA5;
  }
  dred_shm_copy_in(dst + GUARD + doff, src + soff, n, stream_min);
  if (n > 0) assert_memory_equal(dst + GUARD + doff, src + soff, n);
  for (size_t i = 0; i < GUARD + doff; i++) assert_int_equal(dst[i], 0xA5);
  for (size_t i = GUARD + doff + n; i < cap; i++) assert_int_equal(dst[i], 0xA5);
  free(src);
  free(dst);
}

static const size_t sizes[] = {1, 63, 64, 65, 127, 4095, 16384 + 17, (1u << 20) + 3};

static void test_every_way(void **state) {
  (void)state;
  for (int forced = 0; forced < 2; forced++) {
    dred_shm_copy_cached_set(forced ? SIZE_MAX : 0);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
      for (size_t soff = 0; soff < 3; soff++)
        for (size_t doff = 0; doff < 20; doff += 7) {
          copy_check(sizes[k], soff, doff, 0);        /* streamed (unless forced) */
          copy_check(sizes[k], soff, doff, SIZE_MAX); /* through the cache */
        }
  }
  dred_shm_copy_cached_set(0);
}

/* DRED_SHM_STREAM=2's measurement: copies it sends either way give the same bytes, and
 * both ways are taken (the first copy of each size class tries streaming). */
static void test_adaptive_bytes(void **state) {
  static const size_t big[] = {4096, 4096 + 63, 16384 + 17, (1u << 20) + 3};
  uint64_t c0, s0, c1, s1;
  (void)state;
  dred_shm_copy_cached_set(SIZE_MAX);
  dred_shm_copy_adapt_set(1);
  dred_shm_copy_counts(&c0, &s0);
  for (int rep = 0; rep < 12; rep++)
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
      copy_check(big[k], (size_t)rep % 3, (size_t)rep * 5 % 19, SIZE_MAX);
      copy_check(big[k], 1, 3, 0);
    }
  dred_shm_copy_counts(&c1, &s1);
  dred_shm_copy_adapt_set(0);
  dred_shm_copy_cached_set(0);
#if defined(__x86_64__)
  assert_true(s1 > s0);
  assert_true(c1 > c0);
  assert_true((c1 - c0) + (s1 - s0) == 12 * 2 * (sizeof big / sizeof big[0]));
#endif
}

static void test_zero(void **state) {
  unsigned char a[4] = {1, 2, 3, 4}, b[4] = {9, 9, 9, 9};
  (void)state;
  dred_shm_copy_in(b, a, 0, 0);
  assert_int_equal(b[0], 9);
}

/* The default (DRED_SHM_STREAM=2) rests on this: the cache a process runs under, the
 * same whichever of its CPUs is asked, and none claimed where sysfs is silent. */
static void test_llc(void **state) {
  cpu_set_t all, one;
  uint64_t kall = 0, kone = 0, again = 0;
  size_t ball, bone;
  long cpu = 0;
  char path[96];
  (void)state;
  assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
  ball = dred_shm_llc_mine(&kall);
  assert_int_equal(ball % 1024u, 0);
  assert_int_equal(dred_shm_llc_mine(&again), ball);
  assert_true(again == kall);
  if (ball == 0) assert_true(kall == 0);
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &all)) cpu++;
  assert_true(cpu < CPU_SETSIZE);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  bone = dred_shm_llc_mine(&kone);
  assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index0/size", cpu);
  if (access(path, R_OK) != 0) {
    assert_int_equal(bone, 0); /* sysfs silent: no cache claimed */
    return;
  }
  assert_true(bone > 0); /* one CPU is always under one cache */
  if (ball > 0) {          /* the whole mask under one: the same one */
    assert_int_equal(bone, ball);
    assert_true(kone == kall);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_way),
      cmocka_unit_test(test_adaptive_bytes),
      cmocka_unit_test(test_zero),
      cmocka_unit_test(test_llc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
