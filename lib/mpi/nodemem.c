/*
 * nodemem.c -- the node's memory budget for reductions in flight.
 *
 * Why: a reduction's members each hold a copy of their operand (in the pool or in private
 * memory) until it ends, so P ranks of one node that each start a reduction just under the
 * node's memory would need P times what the node has.  A check per call cannot see that;
 * the budget is the node's, so it lives in the node's shared memory.
 *
 * How: a small shared window of the node (node rank 0 allocates it) holds the node's total
 * and one counter per node rank, both in bytes.  A call takes its operand's size from the
 * total with one atomic add, and gives it back if that went over the limit
 * (DRED_NODE_MEM_MB, default the node's physical memory): exact, with no lock.  It also
 * adds to its own counter, so that when a process of the node dies, the survivors take its
 * counter (an atomic exchange with 0: exactly one of them gets it) off the total instead of
 * leaking it.  A process declared failed that was only stalled can never give back more
 * than its counter still holds, so the total cannot underflow.
 *
 * Small operands (a quarter of a grain or less) do not touch the shared line at every
 * call: a process takes the budget a grain at a time and keeps what it has not used as
 * credit, which small operands take from and give back to.  The node's total counts the
 * credit as held, so the limit still bounds what the node's reductions may hold; what it
 * costs is slack: each process keeps at most two grains unused, and a grain is at most
 * 1 MiB and at most 1/64 of the node's limit per process.  (With every rank of a node
 * updating one line at each call, that line moved between cores at every collective:
 * a few percent of an 8-byte allreduce at p = 2.)
 *
 * Refusals come from the node's state, not from the call's arguments, so api.c makes them
 * take their turn (the reduction ends DRED_ERR_NOMEM on every member).  Without the window
 * (MPI refused it) the budget is this process's alone: the same rule, weaker.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/log.h"
#include "../engine/runtime.h"
#include "nodemem.h"

/* The total and each rank's counter on a cache line of its own: a process's own counter
 * changes at each of its calls, and should not take a line its neighbours are using. */
#define LINE 64
#define COUNTER(i) ((size_t)(1 + (i)) * (LINE / sizeof(uint64_t)))

#define GRAIN_MAX (1u << 20)

static uint64_t phys_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : UINT64_MAX;
}

void dred_nodemem_init(dred_rt_t *rt) {
  int nnode = 0, me = 0, du = 0, ok, i;
  MPI_Aint sz = 0;
  void *base = NULL;
  MPI_Group ng, pg;

  rt->nodemem = NULL;
  rt->nodemem_win = MPI_WIN_NULL;
  rt->nodemem_limit = rt->cfg.node_mem_mb > 0 ? rt->cfg.node_mem_mb << 20 : phys_bytes();
  MPI_Comm_size(rt->node, &nnode);
  MPI_Comm_rank(rt->node, &me);
  rt->nodemem_me = me;
  rt->nodemem_credit = 0;
  rt->nodemem_grain = rt->nodemem_limit / 64u / (uint64_t)(nnode > 0 ? nnode : 1);
  if (rt->nodemem_grain > GRAIN_MAX) rt->nodemem_grain = GRAIN_MAX;
  rt->nodemem_rank_of = malloc((size_t)rt->world_size * sizeof(int));
  if (rt->nodemem_rank_of != NULL) {
    for (i = 0; i < rt->world_size; i++) rt->nodemem_rank_of[i] = -1;
    MPI_Comm_group(rt->node, &ng);
    MPI_Comm_group(rt->priv, &pg);
    for (i = 0; i < nnode; i++) {
      int prank = MPI_UNDEFINED;
      MPI_Group_translate_ranks(ng, 1, &i, pg, &prank);
      if (prank != MPI_UNDEFINED) rt->nodemem_rank_of[dred_boot_job_rank(&rt->boot, prank)] = i;
    }
    MPI_Group_free(&ng);
    MPI_Group_free(&pg);
  }
  /* Collective over the node, like the pool: every worker calls it. */
  ok = MPI_Win_allocate_shared(me == 0 ? (MPI_Aint)((size_t)(nnode + 1) * LINE) : 0,
                               1, MPI_INFO_NULL, rt->node, &base, &rt->nodemem_win) == MPI_SUCCESS;
  if (!ok) {
    rt->nodemem_win = MPI_WIN_NULL;
  } else if (MPI_Win_shared_query(rt->nodemem_win, 0, &sz, &du, &base) != MPI_SUCCESS ||
             (size_t)sz < (size_t)(nnode + 1) * LINE || base == NULL) {
    ok = 0;
  } else {
    if (me == 0) memset(base, 0, (size_t)(nnode + 1) * LINE);
    rt->nodemem = base;
  }
  /* rank 0's zeroing before anyone's first take */
  MPI_Barrier(rt->node);
  if (!ok) {
    DRED_WARN("node memory budget: no shared window; each process counts only its own "
              "reductions against DRED_NODE_MEM_MB");
    rt->nodemem = NULL;
  }
}

void dred_nodemem_finalize(dred_rt_t *rt, int collective) {
  if (collective && rt->nodemem_win != MPI_WIN_NULL) MPI_Win_free(&rt->nodemem_win);
  rt->nodemem = NULL;
  free(rt->nodemem_rank_of);
  rt->nodemem_rank_of = NULL;
}

/* Take `bytes` from the node's total (and our counter): 0, or -1 with *total. */
static int node_take(dred_rt_t *rt, uint64_t bytes, uint64_t *total) {
  uint64_t *sum = rt->nodemem != NULL ? &rt->nodemem[0] : &rt->nodemem_local;
  uint64_t now = __atomic_add_fetch(sum, bytes, __ATOMIC_ACQ_REL);
  if (now > rt->nodemem_limit || now < bytes) {
    __atomic_sub_fetch(sum, bytes, __ATOMIC_ACQ_REL);
    if (total != NULL) *total = now - bytes;
    return -1;
  }
  if (rt->nodemem != NULL) __atomic_add_fetch(&rt->nodemem[COUNTER(rt->nodemem_me)], bytes, __ATOMIC_ACQ_REL);
  return 0;
}

/* Give `bytes` back to the node's total: never more than our counter still holds, since
 * survivors may have taken it off already (a process declared failed while stalled). */
static void node_give(dred_rt_t *rt, uint64_t bytes) {
  uint64_t held, part;
  if (bytes == 0) return;
  if (rt->nodemem == NULL) {
    __atomic_sub_fetch(&rt->nodemem_local, bytes, __ATOMIC_ACQ_REL);
    return;
  }
  held = __atomic_load_n(&rt->nodemem[COUNTER(rt->nodemem_me)], __ATOMIC_ACQUIRE);
  do {
    part = held < bytes ? held : bytes;
  } while (part > 0 && !__atomic_compare_exchange_n(&rt->nodemem[COUNTER(rt->nodemem_me)], &held,
                                                    held - part, 0, __ATOMIC_ACQ_REL,
                                                    __ATOMIC_ACQUIRE));
  if (part > 0) __atomic_sub_fetch(&rt->nodemem[0], part, __ATOMIC_ACQ_REL);
}

static int small(const dred_rt_t *rt, uint64_t bytes) { return bytes <= rt->nodemem_grain / 4; }

int dred_nodemem_take(dred_rt_t *rt, uint64_t bytes, uint64_t *total) {
  uint64_t c;
  if (!small(rt, bytes)) return node_take(rt, bytes, total);
  c = __atomic_load_n(&rt->nodemem_credit, __ATOMIC_ACQUIRE);
  while (c >= bytes)
    if (__atomic_compare_exchange_n(&rt->nodemem_credit, &c, c - bytes, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      return 0;
  /* a grain more, the operand's part of it used now; near the limit, the operand alone */
  if (node_take(rt, rt->nodemem_grain, NULL) == 0) {
    __atomic_add_fetch(&rt->nodemem_credit, rt->nodemem_grain - bytes, __ATOMIC_ACQ_REL);
    return 0;
  }
  return node_take(rt, bytes, total);
}

void dred_nodemem_give(dred_rt_t *rt, uint64_t bytes) {
  uint64_t c, g = rt->nodemem_grain;
  if (bytes == 0) return;
  if (!small(rt, bytes)) {
    node_give(rt, bytes);
    return;
  }
  /* back into the credit; beyond two grains, one goes back to the node */
  c = __atomic_add_fetch(&rt->nodemem_credit, bytes, __ATOMIC_ACQ_REL);
  while (c > 2 * g)
    if (__atomic_compare_exchange_n(&rt->nodemem_credit, &c, c - g, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      node_give(rt, g);
      return;
    }
}

void dred_nodemem_on_failed(dred_rt_t *rt, uint32_t w) {
  int i;
  uint64_t held;
  if (rt->nodemem == NULL || rt->nodemem_rank_of == NULL || w >= (uint32_t)rt->world_size) return;
  if ((i = rt->nodemem_rank_of[w]) < 0 || i == rt->nodemem_me) return;
  held = __atomic_exchange_n(&rt->nodemem[COUNTER(i)], 0, __ATOMIC_ACQ_REL);
  if (held > 0) __atomic_sub_fetch(&rt->nodemem[0], held, __ATOMIC_ACQ_REL);
}
