/*
 * window.c -- the data plane's windows: every worker's pool segment, the dynamic window
 * other nodes read through, and what each worker learns at start-up of the others' memory.
 *
 * Every worker owns a pool: one MPI shared-memory window segment (MPI_Win_allocate_shared
 * on the node communicator), carved by lib/shm/pool.c (buffer.c takes and frees its
 * blocks) after a small head that holds the snapshot directory (snapdir.c) and the
 * hand-over beacon (lib/paths/handover.c).  Node peers read each other's segments in
 * place: dred_dp_init asks MPI_Win_shared_query for each peer's base (rt->peer_base), so a
 * combine reads a peer's memory with no copy.  Everything a process on another node may
 * read -- the pool and any private buffer (buffer.c) -- is attached to one dynamic window,
 * created with dred-master over the private communicator, and read with MPI_Rget
 * (combine.c).  Every worker's segment (where it lies in its owner's address space, how
 * large, on which node) is gathered too, so a reader checks a buffer reference against
 * what it learnt itself rather than what a message claims (lib/shm/segment.h).
 *
 * Start-up time is the other concern here, because dred-master starts its failure
 * detector only once the dynamic window exists: MPICH's shared allocation is made without
 * its symmetric-address probe (symheap_off), and our own segment is mapped before we are
 * watched (populate) -- with DRED_PREFAULT_PEERS=1, our node peers' segments too.
 * Teardown is collective over the node when nobody died (dred_dp_finalize).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../common/log.h"
#include "../engine/admit.h"
#include "../engine/mem.h"
#include "../engine/runtime.h"
#include "../engine/snapdir.h"
#include "../paths/meetpath.h"
#include "../shm/copy.h"
#include "dataplane.h"
#include "nodemem.h"

/* Each process takes its own page faults on a shared segment, and MPICH does not touch
 * ours in advance: the first operand copied into a fresh block would pay a fault per page
 * inside dred_ireduce -- the window in which a crash loses the operand, and time the
 * caller waits.  So init maps every page of our segment, writable, before the master
 * starts watching us (docs/performance.md, Log: Start-up).  Not in a background thread: a
 * low-priority thread preempted inside a page fault holds the process's mmap lock, and
 * the runtime thread's own mmap/munmap would stall behind it, on a loaded node long
 * enough to be declared failed. */
static void populate_range(char *base, size_t len, int write) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), off;
#ifdef MADV_POPULATE_WRITE
  /* One call maps the whole range (Linux 5.14): a tenth of the time of one fault per page
   * where faults are dear (docs/performance.md, Log: Start-up).  It takes whole pages:
   * the segment starts past MPICH's header, so its first and last pages are read apart.
   * Older kernels refuse it (EINVAL): then the loop. */
  char *lo = (char *)(((uintptr_t)base + pg - 1) / pg * pg);
  char *hi = (char *)(((uintptr_t)base + len) / pg * pg);
  if (len > 0 && hi > lo &&
      madvise(lo, (size_t)(hi - lo), write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0) {
    (void)*(volatile char *)base;
    (void)*(volatile char *)(base + len - 1);
    return;
  }
#else
  (void)write;
#endif
  for (off = 0; off < len; off += pg) (void)*(volatile char *)(base + off);
}

static void populate(dred_rt_t *rt) {
  uint64_t t0 = uv_hrtime();
  populate_range(rt->pool_base, rt->pool_size, 1); /* ours: written as operands come */
  DRED_DEBUG("pool of %zu MiB mapped in %.1f ms", rt->pool_size >> 20, (uv_hrtime() - t0) / 1e6);
}

/* MPICH (ch4) tries to place a shared window at the same virtual address in every
 * process of the node (its "symmetric heap"), and probes each candidate range page by
 * page (one msync per page: pmodels/mpich#5962).  dred never needs equal addresses -- it
 * asks MPI_Win_shared_query for each peer's base -- and the probe is most of
 * MPI_Win_allocate_shared's time (docs/performance.md, Log: Start-up), which
 * MPIR_CVAR_SHM_SYMHEAP_RETRY=0 skips.  So the pool's allocation runs with that control
 * variable at 0, set through MPI_T and put back afterwards, so the application's own
 * windows keep MPICH's behaviour.  Not touched when the user set the variable, nor with an
 * MPI that does not have it.  Every worker of a node takes the same decision (the same
 * environment), as a collective's settings must agree.
 * The MPI_T session is never finalised: MPICH 4.0.2 fails every MPI_T_init_thread after
 * the process's last MPI_T_finalize, so ours ending would take MPI_T from an application
 * that uses it later (tests/mpi/lifecycle.c reads the variable after dred_init). */
typedef struct {
  MPI_T_cvar_handle h;
  int old, set;
} symheap_t;

static void symheap_off(symheap_t *s) {
  static int t_inited; /* our one MPI_T session; dred_init runs once per process */
  int provided, idx, n, zero = 0;
  memset(s, 0, sizeof *s);
  if (getenv("MPIR_CVAR_SHM_SYMHEAP_RETRY") != NULL) return;
  if (!t_inited && MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return;
  t_inited = 1;
  if (MPI_T_cvar_get_index("MPIR_CVAR_SHM_SYMHEAP_RETRY", &idx) != MPI_SUCCESS ||
      MPI_T_cvar_handle_alloc(idx, NULL, &s->h, &n) != MPI_SUCCESS)
    return;
  if (n == 1 && MPI_T_cvar_read(s->h, &s->old) == MPI_SUCCESS &&
      MPI_T_cvar_write(s->h, &zero) == MPI_SUCCESS)
    s->set = 1;
  else
    MPI_T_cvar_handle_free(&s->h);
}

static void symheap_restore(symheap_t *s) {
  if (!s->set) return;
  if (MPI_T_cvar_write(s->h, &s->old) != MPI_SUCCESS)
    DRED_WARN("could not put MPIR_CVAR_SHM_SYMHEAP_RETRY back to %d", s->old);
  MPI_T_cvar_handle_free(&s->h);
}

/* Node peers' segments are mapped by the reads of the tasks that first use them: an
 * executor reading a provider's snapshot takes the faults for every page it has not read
 * before.  On a machine where a page fault is cheap that is noise; where it is not (on
 * some VMs a first access costs microseconds per page per process, even for pages another
 * process already has) the first batches of large concurrent reductions pay it, several
 * times their later cost (docs/performance.md, Log: Concurrent 28 x 8 MiB).
 * DRED_PREFAULT_PEERS=1 pays it here instead, once, before the master watches us.  Off by
 * default: a job whose reductions use only the bottom of each pool (first fit,
 * lib/shm/pool.c) would map pages it never reads. */
static void populate_peers(dred_rt_t *rt) {
  int i, nnode, me, npeers = 0;
  size_t total = 0;
  uint64_t t0 = uv_hrtime();
  MPI_Comm_size(rt->node, &nnode);
  MPI_Comm_rank(rt->node, &me);
  for (i = 0; i < nnode; i++) {
    MPI_Aint sz = 0;
    int disp;
    char *base = NULL;
    if (i == me) continue;
    if (MPI_Win_shared_query(rt->swin, i, &sz, &disp, &base) != MPI_SUCCESS || base == NULL ||
        sz <= 0)
      continue;
    populate_range(base, (size_t)sz, 0); /* only read here */
    total += (size_t)sz;
    npeers++;
  }
  DRED_INFO("DRED_PREFAULT_PEERS: mapped %d node peers' pools (%zu MiB) in %.1f ms", npeers,
            total >> 20, (uv_hrtime() - t0) / 1e6);
}

/* Every worker's pool segment -- where it is in its owner's address space, how large --
 * gathered over dred_comm() (the master takes no part), so a reader checks a buffer
 * reference against what it learnt itself (lib/shm/segment.h).  The node of each comes
 * from the job's node record made at start-up (common/mpi/boot.h). */
static int segs_init(dred_rt_t *rt) {
  uint64_t mine[2], *all;
  int ncomm = 0, i;
  MPI_Aint a = 0;
  MPI_Group pg, cg;

  MPI_Comm_size(rt->comm, &ncomm);
  rt->segs = calloc((size_t)rt->world_size, sizeof *rt->segs);
  all = malloc(sizeof mine * (size_t)ncomm);
  if (rt->segs == NULL || all == NULL) {
    free(all);
    return DRED_ERR_NOMEM;
  }
  for (i = 0; i < rt->world_size; i++) rt->segs[i].node = -1;
  MPI_Comm_group(rt->priv, &pg);
  MPI_Comm_group(rt->comm, &cg);
  if (rt->pool_size > 0) MPI_Get_address(rt->pool_base, &a);
  mine[0] = (uint64_t)a;
  mine[1] = rt->pool_size;
  MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, rt->comm);
  for (i = 0; i < ncomm; i++) {
    int prank = MPI_UNDEFINED;
    MPI_Group_translate_ranks(cg, 1, &i, pg, &prank);
    if (prank == MPI_UNDEFINED) continue;
    prank = dred_boot_job_rank(&rt->boot, prank);
    if (prank >= rt->world_size) continue;
    rt->segs[prank].base = all[2 * i];
    rt->segs[prank].size = all[2 * i + 1];
    rt->segs[prank].head = DRED_SNAPDIR_BYTES;
    rt->segs[prank].node = (int32_t)rt->boot.node_of[prank];
  }
  MPI_Group_free(&pg);
  MPI_Group_free(&cg);
  free(all);
  return DRED_OK;
}

/* Which copies into the pool bypass the cache (DRED_SHM_STREAM, lib/shm/copy.c): where one
 * last-level cache serves every process of the node, what the members write and read
 * stays in it, and copies up to a quarter of it per process go through it.  Collective
 * over the node whatever this process's setting, so that processes set differently
 * still meet here. */
static void stream_init(dred_rt_t *rt) {
  int nnode = 1;
  uint64_t key = 0, v[2], agreed[2] = {0, 0};
  size_t llc = dred_shm_llc_mine(&key), cached = 0;
  MPI_Comm_size(rt->node, &nnode);
  /* the largest key and the largest complement: one cache everywhere when the smallest
   * and the largest key agree; a process without one sends what no key can agree with */
  v[0] = llc > 0 ? key : UINT64_MAX;
  v[1] = llc > 0 ? ~key : UINT64_MAX;
  if (PMPI_Allreduce(v, agreed, 2, MPI_UINT64_T, MPI_MAX, rt->node) != MPI_SUCCESS ||
      agreed[0] != ~agreed[1])
    llc = 0;
  if (rt->cfg.shm_stream == 0)
    cached = SIZE_MAX;
  else if (rt->cfg.shm_stream == 2 && llc > 0)
    cached = llc / (4u * (size_t)(nnode > 0 ? nnode : 1));
  dred_shm_copy_cached_set(cached);
  dred_shm_copy_adapt_set(rt->cfg.shm_stream == 2);
  if (llc > 0 && rt->cfg.shm_stream == 2)
    DRED_DEBUG("the node's %d process(es) run under one %zu KiB last-level cache: copies into "
               "the pool below %zu KiB go through it",
               nnode, llc >> 10, cached >> 10);
}

int dred_dp_init(dred_rt_t *rt) {
  int nnode = 0, i, rc;
  MPI_Info info;
  MPI_Group ng, pg;
  symheap_t sh;

  rt->chunk_bytes = (size_t)rt->cfg.chunk_kb * 1024u;
  rt->scratch = malloc(rt->chunk_bytes);
  rt->scratch_size = rt->chunk_bytes;
  rt->peer_base = calloc((size_t)rt->world_size, sizeof(char *));
  if (rt->scratch == NULL || rt->peer_base == NULL) return DRED_ERR_NOMEM;

  /* The pool.  Collective over the node communicator, so every worker calls it even
   * when DRED_POOL_MB=0 (then with size 0: no shared memory, RMA only). */
  MPI_Comm_split_type(rt->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &rt->node);
  stream_init(rt);
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  /* DRED_POOL_MB of blocks plus the directory at the head, so an operand of exactly the
   * pool's size still fits. */
  rt->pool_size = rt->cfg.pool_mb > 0 ? ((size_t)rt->cfg.pool_mb << 20) + DRED_SNAPDIR_BYTES : 0;
  symheap_off(&sh);
  rc = MPI_Win_allocate_shared((MPI_Aint)rt->pool_size, 1, info, rt->node, &rt->pool_base,
                               &rt->swin);
  symheap_restore(&sh);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) {
    DRED_ERROR("MPI_Win_allocate_shared of %zu MiB failed: set DRED_POOL_MB lower",
               rt->pool_size >> 20);
    return DRED_ERR_NOMEM;
  }
  MPI_Win_set_errhandler(rt->swin, MPI_ERRORS_RETURN);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, rt->swin);
  if (uv_mutex_init(&rt->pool_mu) != 0) return DRED_ERR_INTERNAL;
  dred_mem_init(rt);
  /* The directory at the head of the segment starts out empty (MPICH zeroes the pages,
   * but say so rather than rely on it). */
  if (dred_snapdir_usable(rt)) memset(rt->pool_base, 0, DRED_SNAPDIR_BYTES);
  populate(rt);
  if (rt->cfg.prefault_peers && rt->cfg.shm && rt->pool_size > 0) populate_peers(rt);
  if (dred_pool_init(&rt->pool, dred_snapdir_usable(rt) ? rt->pool_size - DRED_SNAPDIR_BYTES
                                                        : 0) != 0)
    return DRED_ERR_NOMEM;
  dred_admit_init(rt);
  dred_meetpath_init(rt); /* collective too: the node's meeting place (meetpath.c) */
  dred_nodemem_init(rt);  /* and the node's memory budget (nodemem.c) */

  /* The dynamic window comes after the pool: it is collective with dred-master, which
   * starts its failure detector only once this returns -- MPICH touches every page of a
   * shared segment at allocation, which takes seconds for large pools. */
  if (MPI_Win_create_dynamic(MPI_INFO_NULL, rt->priv, &rt->dwin) != MPI_SUCCESS) {
    DRED_ERROR("MPI_Win_create_dynamic failed");
    return DRED_ERR_INTERNAL;
  }
  MPI_Win_set_errhandler(rt->dwin, MPI_ERRORS_RETURN);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, rt->dwin);
  if (rt->pool_size > 0) MPI_Win_attach(rt->dwin, rt->pool_base, (MPI_Aint)rt->pool_size);

  /* Map node peers' segments: node rank -> private-communicator rank -> base pointer. */
  MPI_Comm_size(rt->node, &nnode);
  MPI_Comm_group(rt->node, &ng);
  MPI_Comm_group(rt->priv, &pg);
  for (i = 0; i < nnode; i++) {
    int prank = MPI_UNDEFINED, disp;
    MPI_Aint sz = 0;
    char *base = NULL;
    MPI_Group_translate_ranks(ng, 1, &i, pg, &prank);
    MPI_Win_shared_query(rt->swin, i, &sz, &disp, &base);
    if (prank != MPI_UNDEFINED && sz > 0 && rt->cfg.shm)
      rt->peer_base[dred_boot_job_rank(&rt->boot, prank)] = base;
  }
  MPI_Group_free(&ng);
  MPI_Group_free(&pg);
  return segs_init(rt);
}

void dred_dp_finalize(dred_rt_t *rt, int collective) {
  /* Only what is this node's and ours: the dynamic window itself is freed with dred-master
   * in dred_boot_teardown() (common/mpi/boot.c), after this. */
  dred_meetpath_finalize(rt, collective); /* its window, collective over the node too */
  dred_nodemem_finalize(rt, collective);
  if (collective) {
    if (rt->pool_size > 0) MPI_Win_detach(rt->dwin, rt->pool_base);
    MPI_Win_unlock_all(rt->swin);
    MPI_Win_free(&rt->swin); /* collective over our node's workers: the master is not in it */
    MPI_Win_unlock_all(rt->dwin);
    MPI_Comm_free(&rt->node);
  }
  dred_mem_finalize(rt);
  dred_pool_destroy(&rt->pool);
  uv_mutex_destroy(&rt->pool_mu);
  free(rt->peer_base);
  free(rt->segs);
  free(rt->scratch);
  rt->peer_base = NULL;
  rt->segs = NULL;
  rt->scratch = NULL;
}
