/*
 * handover.c -- the node's hand-over beacon: replica writers step aside while a member is
 * still copying its operand out of the application's buffer into its pool.
 *
 * Why.  Until dred_ireduce has copied a member's operand into its shared-memory pool, the
 * bytes exist only in that process: a kill then loses them for good, and no replica can
 * help (seed 002, eq. 5: reliability = 1 - that window / reduction time).  The copy is a
 * plain memcpy, but on a loaded node it shares cores and memory bandwidth with the SQLite
 * copies of operands handed over a moment earlier -- insurance that can wait a few ms.
 * Without the beacon those writers take most of the CPUs while calls copy, and the calls
 * take several times as long (docs/performance.md, figures behind defaults).
 *
 * How.  The last 8 bytes of the directory region at the head of each pool segment (after
 * the snapdir slots) hold the uv_hrtime() (CLOCK_MONOTONIC, ns) at which the segment's
 * owner began its current hand-over copies, or 0 when none is under way; the clock is the
 * node's, so peers can compare it with their own.  A replica put asks (storage/replica.c
 * pause hook, before it reads the operand and between its 1 MiB pieces) whether any node
 * peer's word is set; while one is, it sleeps in short steps, for at most
 * HANDOVER_MAX_WAIT_NS per ask.  A word older than HANDOVER_STALE_NS no longer counts:
 * its owner was killed in mid-copy, or is stopped, and must not hold everyone's copies.
 * The word is a hint: a stale or missed value costs only speed, never correctness.
 *
 * The other half of the hand-over -- how long a call in a group spanning nodes waits for
 * a copy on another node -- is offnode.c.
 */
#include <time.h>

#include "../engine/runtime.h"
#include "../engine/snapdir.h"
#include "handover.h"

#define HANDOVER_WORD_OFF (DRED_SNAPDIR_BYTES - sizeof(uint64_t))
#define HANDOVER_STEP_NS 250000ull       /* sleep between looks: 0.25 ms */
#define HANDOVER_MAX_WAIT_NS 20000000ull /* per ask: 20 ms */
#define HANDOVER_STALE_NS 500000000ull   /* a hand-over copy older than 0.5 s is ignored */

_Static_assert(DRED_SNAPDIR_SLOTS * DRED_SNAPDIR_SLOT_BYTES <= HANDOVER_WORD_OFF,
               "beacon overlaps the snapdir");

static uint64_t *beacon(char *segment) { return (uint64_t *)(void *)(segment + HANDOVER_WORD_OFF); }

void dred_handover_begin(dred_rt_t *rt) {
  if (!dred_snapdir_usable(rt)) return;
  uv_mutex_lock(&rt->pool_mu);
  if (rt->handover_active++ == 0) __atomic_store_n(beacon(rt->pool_base), uv_hrtime(), __ATOMIC_RELEASE);
  uv_mutex_unlock(&rt->pool_mu);
}

void dred_handover_end(dred_rt_t *rt) {
  if (!dred_snapdir_usable(rt)) return;
  uv_mutex_lock(&rt->pool_mu);
  if (--rt->handover_active == 0) __atomic_store_n(beacon(rt->pool_base), 0, __ATOMIC_RELEASE);
  uv_mutex_unlock(&rt->pool_mu);
}

/* 1 if some node peer (this process included) is in a fresh hand-over copy. */
static int node_busy(dred_rt_t *rt, uint64_t now) {
  int w;
  for (w = 0; w < rt->world_size; w++) {
    uint64_t since;
    if (rt->peer_base[w] == NULL) continue;
    since = __atomic_load_n(beacon(rt->peer_base[w]), __ATOMIC_ACQUIRE);
    if (since != 0 && now >= since && now - since < HANDOVER_STALE_NS) return 1;
  }
  return 0;
}

void dred_handover_yield(void *arg) {
  dred_rt_t *rt = arg;
  uint64_t start = uv_hrtime(), now = start;
  struct timespec step = {0, (long)HANDOVER_STEP_NS};
#ifdef DRED_HANDOVER_OFF /* A/B measurement builds: `make BUILD=build-ab OPT="-O2 -g -DDRED_HANDOVER_OFF"` */
  return;
#endif
  if (!dred_snapdir_usable(rt)) return;
  while (node_busy(rt, now) && now - start < HANDOVER_MAX_WAIT_NS) {
    nanosleep(&step, NULL);
    now = uv_hrtime();
  }
  if (now != start) {
    __atomic_add_fetch(&rt->handover_waits, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&rt->handover_wait_ns, now - start, __ATOMIC_RELAXED);
  }
}
