/*
 * copy.c -- copying an operand into a block of the node's shared memory that node peers
 * will read.
 *
 * Why not memcpy.  A pool block is reused collective after collective, and between two
 * uses a node peer read it: its lines sit in that peer's cache.  memcpy writes through the
 * cache, so every line is first taken back from the peer (a read for ownership, a
 * cross-core transfer each), and those transfers are slow and erratic: on the development
 * machine, rewriting 1 MiB a peer has just read takes 140-170 us where a fresh 1 MiB
 * takes 23.  Non-temporal stores write whole lines to memory without reading them first
 * (50 us there); the peer then reads them from memory instead of from our cache, which
 * measured no slower from 1 MiB up.  Below that it depends on who reads: a block read
 * once, whole, by one peer streams from DRED_SHM_STREAM_MIN; an allreduce member's
 * operand, folded in parts by every peer right after, only from DRED_SHM_STREAM_FOLD_MIN
 * (figures, p = 2 on the development machine, an AMD EPYC guest: docs/performance.md,
 * sessions 33 and 40).
 *
 * Where it does not pay.  Where every process of the node runs under one last-level cache
 * that holds what the members write and read, the peer's lines are taken back from
 * that cache, not from a far core's, and a streamed block is read back from memory: on
 * an Intel Xeon guest with a 300 MiB L3 over both CPUs, writing 1 MiB a peer has just
 * read and the peer's read of it took 142 us cached against 214 streamed, 16 MiB 2.8 ms
 * against 3.3 (session 43).  There dred_shm_copy_cached_set raises the size below which
 * every copy goes through the cache (DRED_SHM_STREAM; dred_shm_llc_mine names the cache
 * each process of the node runs under).
 *
 * When sysfs is wrong.  In a virtual machine "one cache" may be two dies, now and then
 * (copymode.c): there a cached rewrite of a block a peer just read costs 6-18 times a
 * streamed one.  So under DRED_SHM_STREAM=2 (the default) a copy from DRED_COPYMODE_MIN
 * that the rule above sends through the cache is timed, and streamed instead while cached
 * copies of its size cost more than three times as much per byte (copymode.c decides).
 *
 * Used where one process writes a block every call and peers read it next: a bcast
 * root's data (whole below the pipelined publish where processes outnumber cores, in
 * pieces in the pipelined publish and the fast lane: stream_min SIZE_MAX, so only the
 * measurement streams them), a reduce non-root's operand and an allreduce member's
 * (lib/mpi/buffer.c, meetpath.c, the fast lane's blocks), and a large allreduce's folded
 * chunks (meetpath.c, fold.c).
 *
 * A large result.  An allreduce's or a bcast's result is written into the caller's
 * private buffer, which no peer reads; a cached store to a line not in cache reads it
 * from memory first.  Where what the call moves through each member's cache outgrows its
 * share of the last-level cache, the result's first lines are gone from the cache by the
 * time the call returns anyway, so its pieces are written past the cache: no line is read
 * before it is overwritten, and none of the lines still to be read is evicted for it
 * (dred_shm_copy_result).  An allreduce member moves about four times its result's bytes
 * (its operand, its copy in the pool, the folded chunks, the result), a bcast member two
 * (the root's block, the result).  At p = 2 on an AMD EPYC guest with a 32 MiB L3 (a
 * quarter of it per process: 4 MiB), streaming measured faster for allreduces from 4 MiB
 * and bcasts from 8 MiB, and a quarter slower for a bcast of 4 MiB (docs/performance.md,
 * session 70).
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "copy.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "copymode.h"

/* Copies below this many bytes go through the cache whatever their stream_min, unless the
 * measurement says otherwise (adapt); set once at dred_init, before any copy, and read by
 * every thread after. */
static size_t cached_max;
static int adapt;
static dred_copymode_t mode; /* this process's measurements (copymode.c) */
static uint64_t result_streamed; /* bytes of results written past the cache */

void dred_shm_copy_cached_set(size_t n) { __atomic_store_n(&cached_max, n, __ATOMIC_RELAXED); }

void dred_shm_copy_adapt_set(int on) { __atomic_store_n(&adapt, on, __ATOMIC_RELAXED); }

void dred_shm_copy_describe(char *buf, size_t cap) { dred_copymode_describe(&mode, buf, cap); }

uint64_t dred_shm_result_streamed(void) {
  return __atomic_load_n(&result_streamed, __ATOMIC_RELAXED);
}

void dred_shm_copy_counts(uint64_t *cached, uint64_t *streamed) {
  *cached = __atomic_load_n(&mode.done[DRED_COPY_CACHED], __ATOMIC_RELAXED);
  *streamed = __atomic_load_n(&mode.done[DRED_COPY_STREAMED], __ATOMIC_RELAXED);
}

/* The last-level cache of CPU `cpu` in sysfs: the highest cache index that is unified or
 * data; its size in bytes and its shared_cpu_list.  0 when sysfs does not say. */
static size_t llc_of(long cpu, char *cpus, size_t cap) {
  size_t best = 0;
  cpus[0] = 0;
  for (int idx = 0; idx < 8; idx++) {
    char path[128], type[32] = "", size[32] = "";
    unsigned long kb = 0;
    FILE *f;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/type", cpu, idx);
    if ((f = fopen(path, "r")) == NULL) break;
    if (fgets(type, sizeof type, f) == NULL) type[0] = 0;
    fclose(f);
    if (strncmp(type, "Instruction", 11) == 0) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/size", cpu, idx);
    if ((f = fopen(path, "r")) == NULL) continue;
    if (fgets(size, sizeof size, f) == NULL || sscanf(size, "%luK", &kb) != 1) kb = 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/shared_cpu_list",
             cpu, idx);
    if (kb == 0 || (f = fopen(path, "r")) == NULL) continue;
    if (fgets(cpus, (int)cap, f) == NULL) cpus[0] = 0;
    fclose(f);
    cpus[strcspn(cpus, "\n")] = 0;
    best = (size_t)kb * 1024u; /* a higher index is a further level */
  }
  return cpus[0] != 0 ? best : 0;
}

size_t dred_shm_llc_mine(uint64_t *key) {
  char first[256] = "", cpus[256];
  size_t bytes = 0, b;
  uint64_t h = 1469598103934665603ull; /* FNV-1a of the cache's CPU list */
  cpu_set_t set;
  *key = 0;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  for (long cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if ((b = llc_of(cpu, cpus, sizeof cpus)) == 0) return 0;
    if (first[0] == 0) {
      memcpy(first, cpus, sizeof first);
      bytes = b;
    } else if (strcmp(first, cpus) != 0) {
      return 0; /* this process may run under two caches */
    }
  }
  if (bytes == 0) return 0;
  for (const char *c = first; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  *key = h;
  return bytes;
}

#if defined(__x86_64__)
#include <emmintrin.h>
#include <x86intrin.h> /* __rdtsc: the clock copymode.c compares copies by */

/* n >= 64 bytes from src to dst with non-temporal stores, fenced */
static void copy_streamed(char *d, const char *s, size_t n) {
  size_t head = (16u - ((uintptr_t)d & 15u)) & 15u; /* SSE2 streaming stores: 16-byte aligned */
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s);
    __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, a);
    _mm_stream_si128((__m128i *)(d + 16), b);
    _mm_stream_si128((__m128i *)(d + 32), c);
    _mm_stream_si128((__m128i *)(d + 48), e);
  }
  memcpy(d, s, n);
  _mm_sfence(); /* the streamed lines are visible before anything published after this */
}

int dred_shm_result_streams(uint64_t bytes, unsigned weight) {
  size_t bound = __atomic_load_n(&cached_max, __ATOMIC_RELAXED);
  if (bound == SIZE_MAX) return 0; /* DRED_SHM_STREAM=0: through the cache, always */
  if (bound < DRED_SHM_RESULT_STREAM_MIN) bound = DRED_SHM_RESULT_STREAM_MIN;
  return (double)bytes * weight >= 4.0 * (double)bound;
}

void dred_shm_copy_result(void *dst, const void *src, size_t n, uint64_t bytes, unsigned weight) {
  if (n >= 64 && dred_shm_result_streams(bytes, weight)) {
    copy_streamed(dst, src, n);
    __atomic_fetch_add(&result_streamed, n, __ATOMIC_RELAXED);
  } else {
    memcpy(dst, src, n);
  }
}

void dred_shm_copy_in(void *dst, const void *src, size_t n, size_t stream_min) {
  int way;
  uint64_t t0;
  if (n < 64) {
    memcpy(dst, src, n);
    return;
  }
  if (n >= stream_min && n >= __atomic_load_n(&cached_max, __ATOMIC_RELAXED)) {
    copy_streamed(dst, src, n);
    return;
  }
  if (n < DRED_COPYMODE_MIN || !__atomic_load_n(&adapt, __ATOMIC_RELAXED)) {
    memcpy(dst, src, n);
    return;
  }
  way = dred_copymode_pick(&mode, n);
  t0 = way & DRED_COPY_TIMED ? __rdtsc() : 0;
  if (way & DRED_COPY_STREAMED)
    copy_streamed(dst, src, n);
  else
    memcpy(dst, src, n);
  if (way & DRED_COPY_TIMED) {
    /* until the stores are visible, not merely issued: a cached rewrite's reads for
     * ownership go on after its last store instruction (the store buffer holds dozens of
     * stores), and the publish after the copy waits for them anyway */
    _mm_mfence();
    _mm_lfence();
    t0 = __rdtsc() - t0;
  }
  dred_copymode_note(&mode, n, way, t0);
}

#else

int dred_shm_result_streams(uint64_t bytes, unsigned weight) {
  (void)bytes;
  (void)weight;
  return 0;
}

void dred_shm_copy_result(void *dst, const void *src, size_t n, uint64_t bytes, unsigned weight) {
  (void)bytes;
  (void)weight;
  memcpy(dst, src, n);
}

void dred_shm_copy_in(void *dst, const void *src, size_t n, size_t stream_min) {
  (void)stream_min;
  (void)mode;
  memcpy(dst, src, n);
}

#endif
