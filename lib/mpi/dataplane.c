/*
 * dataplane.c -- where operands live and how an executor combines a provider's data.
 *
 * Every worker owns a pool: one MPI shared-memory window segment (MPI_Win_allocate_shared
 * on the node communicator), carved by lib/shm/pool.c after a small head that holds the
 * snapshot directory (snapdir.c).  A non-root member copies its operand into a pool block
 * (its accumulator, "acc") inside dred_ireduce, on the caller's thread: that single copy
 * puts the operand in shared memory, where node peers combine from it and its replicas
 * are taken from it.  An operand already in the pool -- a contiguous sendbuf inside a
 * dred_alloc_mem block (mem.c) -- is not copied at all: that block is the accumulator,
 * read-only.  The root's accumulator is its recvbuf -- unless the datatype has
 * holes or a lower bound (a PACKED or IMAGE layout, lib/engine/typecheck.c): then every
 * member's operand is loaded into dred's layout (dred_dp_load: MPI_Pack, or a byte image
 * from the true lower bound), the root combines in a buffer of its own, and the result
 * is unpacked into recvbuf when the reduction ends (dred_dp_unpack_result), writing only
 * the typemap's bytes, as MPI does.
 *
 * Two ways to read the provider:
 *   - same node, provider's acc in its pool: a direct pointer into the provider's segment
 *     (MPI_Win_shared_query), so the combine reads the peer's memory with no copy;
 *   - otherwise: MPI_Rget from the dynamic window (the pool and any malloc'd acc are
 *     attached to it), DRED_RMA_DEPTH reads of DRED_RMA_CHUNK_KB in flight, each combined
 *     as it lands, so the transfer and the combine overlap.  Many small reads rather than
 *     a few large ones: over UCX's TCP transport a read is served by the provider's
 *     progress engine, so each read costs a round trip and throughput grows with the
 *     reads in flight (three simulated nodes, p = 8, 32 MiB: 4 x 1 MiB 311 ms, 64 x
 *     128 KiB 167 ms).
 * Work is cut into chunks of DRED_CHUNK_KB and a task step does at most a few of them, so
 * the runtime thread keeps answering the master while a large task runs.
 *
 * In place or out of place.  A task normally combines in place into the executor's acc.
 * It builds its result in a new buffer instead (then swaps it in) when the executor's
 * buffer must stay intact: on the RMA path, so a provider dying mid-read leaves the
 * executor's data whole; when acc is still the replica snapshot that copies are being
 * taken from (the member's first task as executor); and when acc is the application's
 * own send buffer, a dred_alloc_mem block read in place (mem.c), which dred never writes
 * (MPI's rule for send buffers) and never frees.  When dred-master says both buffers are
 * snapshots on this node (TASK's absorb), the robust layer may instead absorb the
 * provider's snapshot into ours in place, piece by piece, in a way a node peer can finish
 * if we die (absorb.c).  The out-of-place direct combine works
 * in small sub-chunks -- copy the provider's piece, combine the executor's into it -- so
 * the second pass runs in cache and costs about what a fused kernel would.
 *
 * The combine itself is lib/engine/kernel.c's vectorised loop for predefined ops on basic
 * types (proven bit-equal to MPI_Reduce_local by tests/unit/test_kernel.c), else
 * MPI_Reduce_local.
 *
 * Order: MPI_Reduce_local(in, inout) computes inout = in op inout.  For commutative ops
 * and when the executor's members lie right of the provider's, that is acc = prov op acc.
 * When the executor lies left under a non-commutative op, acc = acc op prov is computed
 * in a scratch chunk and copied back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/bigbuf.h"
#include "../../common/log.h"
#include "../engine/kernel.h"
#include "../engine/admit.h"
#include "../engine/inst.h"
#include "../engine/mem.h"
#include "../engine/robust.h"
#include "../engine/runtime.h"
#include "../engine/snapdir.h"
#include "../engine/task.h"
#include "../engine/typecheck.h"
#include "../paths/handover.h"
#include "../paths/meetpath.h"
#include "dataplane.h"
#include "nodemem.h"

#define TASK_STEP_NS 500000ull /* time slice of one task step */

/* Each process takes its own page faults on a shared segment, and MPICH does not touch
 * ours in advance: the first operand copied into a fresh block would pay a fault per page
 * inside dred_ireduce -- the window in which a crash loses the operand, and time the
 * caller waits.  So init reads one byte of every page of our segment, which maps it
 * (shmem pages map writable on a read fault) before the master starts watching us
 * (docs/performance.md, Log: Start-up).  Not in a background thread: a low-priority thread
 * preempted inside a page fault holds the process's mmap lock, and the runtime thread's
 * own mmap/munmap would stall behind it, on a loaded node long enough to be declared
 * failed. */
static void populate_range(char *base, size_t len) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), off;
  for (off = 0; off < len; off += pg) (void)*(volatile char *)(base + off);
}

static void populate(dred_rt_t *rt) {
  uint64_t t0 = uv_hrtime();
  populate_range(rt->pool_base, rt->pool_size);
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
    populate_range(base, (size_t)sz);
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

/* A pool block (offsets count from the segment base, past the directory), or -1. */
static int64_t pool_take(dred_rt_t *rt, size_t bytes) {
  int64_t off;
  if (bytes == 0 || !dred_snapdir_usable(rt)) return -1;
  uv_mutex_lock(&rt->pool_mu);
  off = dred_pool_alloc(&rt->pool, bytes);
  if (off < 0) rt->pool_fallbacks++; /* the caller goes to private memory */
  uv_mutex_unlock(&rt->pool_mu);
  return off < 0 ? -1 : off + (int64_t)DRED_SNAPDIR_BYTES;
}

/* Make a private buffer readable by RMA from other nodes (the dynamic window). */
static int attach_private(dred_rt_t *rt, char *p, size_t bytes) {
  if (bytes > 0 && MPI_Win_attach(rt->dwin, p, (MPI_Aint)bytes) != MPI_SUCCESS) {
    DRED_ERROR("MPI_Win_attach of a %zu-byte buffer failed", bytes);
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

int dred_dp_buf_alloc(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off, int *malloced) {
  *pool_off = pool_take(rt, bytes);
  *malloced = 0;
  if (*pool_off >= 0) {
    *p = rt->pool_base + *pool_off;
    return DRED_OK;
  }
  /* Pool full (or empty): a private buffer, reachable by RMA through the dynamic window,
   * on huge pages when large (common/bigbuf.h: it is filled at once, and 4 KiB pages
   * would fault one by one). */
  if ((*p = dred_bigbuf_alloc(bytes)) == NULL) {
    DRED_ERROR("no memory for a %zu-byte reduction buffer", bytes);
    return DRED_ERR_NOMEM;
  }
  *malloced = 1;
  if (attach_private(rt, *p, bytes) != DRED_OK) {
    dred_bigbuf_free(*p, bytes);
    *p = NULL;
    return DRED_ERR_INTERNAL;
  }
  DRED_DEBUG("pool full: %zu-byte buffer outside shared memory", bytes);
  return DRED_OK;
}

int dred_dp_pool_block(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off) {
  *pool_off = pool_take(rt, bytes);
  *p = *pool_off >= 0 ? rt->pool_base + *pool_off : NULL;
  return *pool_off >= 0 ? DRED_OK : DRED_ERR_NOMEM;
}

int dred_dp_buf_adopt(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off, int *malloced) {
  int64_t off = pool_take(rt, bytes);
  if (off >= 0) { /* at most a pool's worth: a short copy into pages mapped at start */
    memcpy(rt->pool_base + off, *p, bytes);
    dred_bigbuf_free(*p, bytes);
    *p = rt->pool_base + off;
    *pool_off = off;
    *malloced = 0;
    return DRED_OK;
  }
  /* Still no room.  Copying an operand larger than the pool into another private buffer
   * would only stall this loop (gigabytes of fresh pages: seconds, past the failure
   * timeout): the copy it has is as good. */
  if (attach_private(rt, *p, bytes) != DRED_OK) return DRED_ERR_INTERNAL;
  *pool_off = -1;
  *malloced = 1;
  return DRED_OK;
}

void dred_dp_pool_stats(dred_rt_t *rt, proto_msg_t *pong) {
  uv_mutex_lock(&rt->pool_mu);
  pong->u.ping.pool_used = rt->pool.used;
  pong->u.ping.pool_size = rt->pool.size;
  pong->u.ping.pool_peak = rt->pool.peak;
  pong->u.ping.pool_fallbacks = rt->pool_fallbacks;
  uv_mutex_unlock(&rt->pool_mu);
}

void dred_dp_buf_free(dred_rt_t *rt, size_t bytes, char *p, int64_t pool_off, int malloced) {
  if (p == NULL) return;
  if (malloced) {
    if (bytes > 0) MPI_Win_detach(rt->dwin, p);
    dred_bigbuf_free(p, bytes);
  } else if (pool_off >= 0) {
    uv_mutex_lock(&rt->pool_mu);
    dred_pool_free(&rt->pool, pool_off - (int64_t)DRED_SNAPDIR_BYTES, bytes);
    dred_admission_freed(&rt->admission, uv_hrtime()); /* room for those waiting (admit.c) */
    uv_mutex_unlock(&rt->pool_mu);
  }
}

/* The scratch buffer a typed copy goes through: MPI_Pack's output for `count` elements of
 * `type`, or NULL (logged). */
static char *pack_tmp(MPI_Count count, MPI_Datatype type, MPI_Count *cap) {
  char *p;
  *cap = 0;
  if (MPI_Pack_size_c(count, type, MPI_COMM_SELF, cap) != MPI_SUCCESS || *cap < 0) {
    DRED_ERROR("MPI_Pack_size of %lld elements failed", (long long)count);
    return NULL;
  }
  if ((p = malloc(*cap > 0 ? (size_t)*cap : 1)) == NULL)
    DRED_ERROR("no memory for %lld bytes of packed operand", (long long)*cap);
  return p;
}

int dred_dp_load(dred_rt_t *rt, const dred_inst_t *in, char *dst) {
  const char *src = in->sendbuf == MPI_IN_PLACE ? in->recvbuf : in->sendbuf;
  const dred_typeinfo_t *ti = &in->ti;
  MPI_Count cnt = (MPI_Count)in->count, pos = 0, pos2 = 0, cap;
  char *tmp;
  int rc = MPI_SUCCESS;
  (void)rt;
  if (in->bytes == 0) return DRED_OK;
  switch (ti->layout) {
    case DRED_LAYOUT_DIRECT:
      memcpy(dst, src, in->bytes);
      return DRED_OK;
    case DRED_LAYOUT_IMAGE: {
      /* the bytes the count elements span, from the true lower bound; the tail of the last
       * element's extent (a hole past its data) may lie outside the caller's buffer */
      size_t span = (size_t)(in->count - 1) * (size_t)ti->type_extent + (size_t)ti->true_extent;
      memcpy(dst, src + ti->true_lb, span);
      if (span < in->bytes) memset(dst + span, 0, in->bytes - span);
      return DRED_OK;
    }
    default: /* PACKED: the typemap's elements, in order, as an array of exec_type */
      if (!ti->base_padded)
        rc = MPI_Pack_c(src, cnt, in->type_hold, dst, (MPI_Count)in->bytes, &pos, MPI_COMM_SELF);
      else if ((tmp = pack_tmp(cnt, in->type_hold, &cap)) == NULL)
        return DRED_ERR_NOMEM;
      else {
        /* a padded base (MPI_DOUBLE_INT...) packs without its padding: unpack it as the base
         * type to get the array; the padding bytes are zeroed so copies compare equal */
        memset(dst, 0, in->bytes);
        rc = MPI_Pack_c(src, cnt, in->type_hold, tmp, cap, &pos, MPI_COMM_SELF);
        if (rc == MPI_SUCCESS)
          rc = MPI_Unpack_c(tmp, pos, &pos2, dst, cnt * ti->mult, ti->exec_type, MPI_COMM_SELF);
        free(tmp);
      }
      if (rc != MPI_SUCCESS) {
        DRED_ERROR("packing the operand (%llu elements of a derived datatype) failed",
                   (unsigned long long)in->count);
        return DRED_ERR_INTERNAL;
      }
      return DRED_OK;
  }
}

int dred_dp_unpack_result(dred_rt_t *rt, dred_inst_t *in) {
  const dred_typeinfo_t *ti = &in->ti;
  MPI_Count cnt = (MPI_Count)in->count, pos = 0, pos2 = 0, cap;
  char *tmp = NULL;
  int rc;
  (void)rt;
  if (ti->layout == DRED_LAYOUT_DIRECT || in->bytes == 0 || in->acc == NULL) return DRED_OK;
  if (ti->layout == DRED_LAYOUT_PACKED && !ti->base_padded) {
    rc = MPI_Unpack_c(in->acc, (MPI_Count)in->bytes, &pos, in->recvbuf, cnt, in->type_hold,
                      MPI_COMM_SELF);
  } else {
    /* typed -> typed: pack what we hold (the padded array, or the image at its true lower
     * bound), then unpack it with the caller's type, which writes only the type's bytes */
    MPI_Datatype from = ti->layout == DRED_LAYOUT_PACKED ? ti->exec_type : in->type_hold;
    MPI_Count n = ti->layout == DRED_LAYOUT_PACKED ? cnt * ti->mult : cnt;
    const char *p = ti->layout == DRED_LAYOUT_PACKED ? in->acc : in->acc - ti->true_lb;
    if ((tmp = pack_tmp(n, from, &cap)) == NULL) return DRED_ERR_NOMEM;
    rc = MPI_Pack_c(p, n, from, tmp, cap, &pos2, MPI_COMM_SELF);
    if (rc == MPI_SUCCESS)
      rc = MPI_Unpack_c(tmp, pos2, &pos, in->recvbuf, cnt, in->type_hold, MPI_COMM_SELF);
    free(tmp);
  }
  if (rc != MPI_SUCCESS) {
    DRED_ERROR("unpacking the result into recvbuf (%llu elements of a derived datatype) failed",
               (unsigned long long)in->count);
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

void dred_dp_acc_early(dred_rt_t *rt, dred_inst_t *in) {
  if (in->is_root && in->ti.layout == DRED_LAYOUT_DIRECT) {
    /* (a bcast's root passes its buffer as both: nothing to copy) */
    if (in->sendbuf != MPI_IN_PLACE && in->sendbuf != in->recvbuf && in->bytes > 0)
      memcpy(in->recvbuf, in->sendbuf, in->bytes);
    in->acc = in->recvbuf;
    in->pool_off = -1;
    in->acc_early = 1;
    return;
  }
  /* Zero copy: the operand already lies in our shared segment, in a block the application
   * took with dred_alloc_mem (mem.c).  It is the accumulator as it is -- read-only: the
   * first combine here writes its result elsewhere (task_begin), and nothing frees it --
   * and dred_ireduce lists it in the snapshot directory before returning, so a kill from
   * now on loses nothing while the node lives.  Only the DIRECT layout is bytes as they
   * are; packed and image layouts still go through dred_dp_load below. */
  if (!in->is_root && in->ti.layout == DRED_LAYOUT_DIRECT && in->bytes > 0 &&
      dred_mem_borrow(rt, in->sendbuf, in->bytes, &in->app_blk, &in->pool_off) == 0) {
    in->acc = (char *)(uintptr_t)in->sendbuf;
    in->acc_is_app = 1;
    in->acc_malloced = 0;
    in->acc_early = 1;
    (void)dred_admit_call(rt, in, 0); /* room for its first result; it is in place already */
    return;
  }
  /* Pool first (node peers read it without RMA); when the pool is full, a private buffer.
   * Either way the operand is copied here, on the caller's thread, so the runtime never
   * reads sendbuf after dred_ireduce returned (except to reload the operand in recovery,
   * and never once the reduction was abandoned: see future.c).  A packed or image root
   * combines in a buffer of its own too, and unpacks the result into recvbuf at the end
   * (dred_dp_unpack_result), so recvbuf's holes stay untouched and, in place, its
   * operand stays there until then.  When the pool lacks room for what this reduction
   * will hold there (admit.c), the copy goes to plain private memory and moves into the
   * pool once room is back, before the reduction is announced. */
  int waits = !in->is_root && !dred_admit_call(rt, in, 1), rc = DRED_OK;
  if (!waits) {
    rc = dred_dp_buf_alloc(rt, in->bytes, &in->acc, &in->pool_off, &in->acc_malloced);
  } else if ((in->acc = dred_bigbuf_alloc(in->bytes)) == NULL) { /* admit.c frees it */
    DRED_ERROR("no memory for a %zu-byte operand", in->bytes);
    rc = DRED_ERR_NOMEM;
  } else {
    in->pool_off = -1;
    in->acc_malloced = 0;
  }
  if (rc == DRED_OK && in->bytes > 0) {
    if (!in->is_root && !waits) dred_handover_begin(rt);
    rc = dred_dp_load(rt, in, in->acc);
    if (!in->is_root && !waits) dred_handover_end(rt);
  }
  if (rc != DRED_OK) {
    /* The member still joins: its READY says why, and every member's reduction ends with
     * that status (announce in runtime.c). */
    if (waits)
      dred_admit_release(rt, in); /* the private copy and its place in line */
    else if (in->acc != NULL)
      dred_dp_buf_free(rt, in->bytes, in->acc, in->pool_off, in->acc_malloced);
    in->acc = NULL;
    in->pool_off = -1;
    in->acc_malloced = 0;
    in->join_error = rc;
    return;
  }
  in->acc_early = 1;
}

int dred_dp_acc_prepare(dred_rt_t *rt, dred_inst_t *in) {
  /* dred_ireduce filled the accumulator, or could not allocate one (join_error). */
  if (!in->acc_early) return in->join_error ? in->join_error : DRED_ERR_INTERNAL;
  /* Make the caller's copy visible to node peers that will read it without a message
   * from us after this point (they are told through the master, which orders the rest). */
  if (in->pool_off >= 0) MPI_Win_sync(rt->swin);
  return DRED_OK;
}

void dred_dp_acc_release(dred_rt_t *rt, dred_inst_t *in) {
  dred_admit_release(rt, in); /* its pool reservation, or its private copy if it never got in */
  /* The robust layer's buffers first; if acc is its snapshot, the snapshot frees it once
   * its copies are taken. */
  int acc_is_snapshot = in->repl != NULL && rt->robust->on_buffers_release(rt, in);
  if (in->acc != NULL && !(in->is_root && in->acc == in->recvbuf)) { /* a direct root combines in recvbuf */
    if (!acc_is_snapshot && !in->acc_is_app) /* the application's block is never ours to free */
      dred_dp_buf_free(rt, in->bytes, in->acc, in->pool_off, in->acc_malloced);
    in->acc = NULL;
    in->pool_off = -1;
    in->acc_malloced = 0;
    in->acc_is_app = 0;
  }
  /* This reduction stops reading the application's block (a snapshot taken from it holds
   * its own reference). */
  dred_mem_unref(rt, in->app_blk);
  in->app_blk = NULL;
}

int dred_dp_inline_fold(dred_rt_t *rt, dred_inst_t *in, const uint8_t *data, uint32_t n) {
  const dred_typeinfo_t *ti = &in->ti;
  size_t b = in->bytes;
  /* an image starts at the type's true lower bound: MPI wants the buffer's origin */
  MPI_Aint sh = ti->layout == DRED_LAYOUT_IMAGE ? ti->true_lb : 0;
  const dred_kernel_t *kern;
  _Alignas(64) char local[4096];
  char *w, *acc_t;
  uint32_t k;
  int rc = MPI_SUCCESS, cnt;
  (void)rt;
  if (n != in->group->n || in->acc == NULL || !in->is_root) return DRED_ERR_INTERNAL;
  if (b == 0 || n == 1) return DRED_OK;
  cnt = (int)(in->count * ti->mult); /* inline sizes are far below INT_MAX elements */
  /* A working copy, aligned: the operands sit at arbitrary offsets of the received frame,
   * and the kernels (and user functions) expect aligned elements.  The root's own operand
   * takes its slot, so the fold below runs over one array in member order. */
  w = (size_t)n * b <= sizeof local ? local : malloc((size_t)n * b);
  if (w == NULL) {
    DRED_ERROR("no memory to fold an inline reduction of %u x %zu bytes", n, b);
    return DRED_ERR_NOMEM;
  }
  memcpy(w, data, (size_t)n * b);
  memcpy(w + (size_t)in->member * b, in->acc, b);
  kern = dred_dp_kernel(in);
  /* A right fold in rank order: acc_t = x[n-1], then acc_t = x[k] op acc_t for k = n-2..0.
   * MPI_Reduce_local(in, inout) computes inout = in op inout, so every step keeps the
   * left operand left: the result is x[0] op (x[1] op (... op x[n-1])), the rank-order
   * result MPI defines for non-commutative ops (ops are associative).  Predefined ops
   * use the vectorised kernels (bit-equal to MPI_Reduce_local, and no MPI call, so no
   * wait for MPICH's lock while the application sits in a blocking call). */
  acc_t = w + (size_t)(n - 1) * b;
  for (k = n - 1; k-- > 0 && rc == MPI_SUCCESS;) {
    char *x = w + (size_t)k * b;
    if (kern != NULL)
      kern->inplace(x, acc_t, (size_t)cnt);
    else
      rc = MPI_Reduce_local(x - sh, acc_t - sh, cnt, ti->exec_type, in->op);
  }
  if (rc == MPI_SUCCESS) memcpy(in->acc, acc_t, b);
  if (w != local) free(w);
  if (rc != MPI_SUCCESS) {
    DRED_ERROR("MPI_Reduce_local failed while folding an inline reduction (tag " PROTO_KEY_FMT ")",
               PROTO_KEY_ARG(in->tag));
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

/* inout = in op inout over `n` elements -- or inout = inout op in when `swap` (a
 * non-commutative op whose left operand is inout), computed in the scratch chunk since
 * MPI_Reduce_local only writes its second argument.  Predefined ops are commutative, so
 * the vectorised kernel never needs the swap. */
static int reduce_into(dred_rt_t *rt, dred_task_t *t, const char *in, char *inout, uint64_t n,
                       int swap) {
  dred_inst_t *inst = t->inst;
  size_t nb = (size_t)n * inst->ti.extent;
  int cnt = (int)(n * inst->ti.mult), rc;
  /* an image starts at the type's true lower bound: MPI wants the buffer's origin */
  MPI_Aint sh = inst->ti.layout == DRED_LAYOUT_IMAGE ? inst->ti.true_lb : 0;
  if (!swap && t->kern != NULL) {
    t->kern->inplace(in, inout, (size_t)cnt);
    return 0;
  }
  if (!swap)
    return MPI_Reduce_local(in - sh, inout - sh, cnt, inst->ti.exec_type, inst->op) == MPI_SUCCESS
               ? 0 : DRED_ERR_INTERNAL;
  if (nb > rt->scratch_size) { /* an element larger than a chunk */
    char *ns = realloc(rt->scratch, nb);
    if (ns == NULL) return DRED_ERR_NOMEM;
    rt->scratch = ns;
    rt->scratch_size = nb;
  }
  memcpy(rt->scratch, in, nb);
  rc = MPI_Reduce_local(inout - sh, rt->scratch - sh, cnt, inst->ti.exec_type, inst->op);
  memcpy(inout, rt->scratch, nb);
  return rc == MPI_SUCCESS ? 0 : DRED_ERR_INTERNAL;
}

const dred_kernel_t *dred_dp_kernel(const dred_inst_t *in) {
  return in->ti.op_is_user ? NULL : dred_kernel_find(in->ti.exec_type, in->op);
}

int dred_dp_piece(const dred_inst_t *in, const dred_kernel_t *kern, int exec_left,
                  const char *exec, const char *prov, char *out, uint64_t n) {
  size_t nb = (size_t)n * in->ti.extent;
  int cnt = (int)(n * in->ti.mult);
  MPI_Aint sh = in->ti.layout == DRED_LAYOUT_IMAGE ? in->ti.true_lb : 0;
  if (kern != NULL && !exec_left) { /* predefined ops are commutative: one pass */
    kern->outofplace(prov, exec, out, (size_t)cnt);
    return 0;
  }
  /* MPI_Reduce_local(a, b) computes b = a op b: b starts as the right operand */
  memcpy(out, exec_left ? prov : exec, nb);
  return MPI_Reduce_local((exec_left ? exec : prov) - sh, out - sh, cnt, in->ti.exec_type,
                          in->op) == MPI_SUCCESS ? 0 : DRED_ERR_INTERNAL;
}

/* Combine `n` elements that start at element `e0` of the provider's data (`src`) into acc:
 * acc = prov op acc, or acc op prov when the executor lies left under a non-commutative op. */
static int combine(dred_rt_t *rt, dred_task_t *t, const char *src, uint64_t e0, uint64_t n) {
  return reduce_into(rt, t, src, t->dst + e0 * t->inst->ti.extent, n,
                     !t->inst->ti.commutative && t->exec_is_left);
}

/* Before anything is read: the provider's buffer must lie in the provider's own memory
 * (inside its pool segment when it says so) and be exactly the reduction's length. */
static int task_check(dred_rt_t *rt, const dred_task_t *t) {
  char why[200];
  const dred_seg_t *s;
  if (dred_seg_check_buf(rt->segs, (uint32_t)rt->world_size, t->provider, &t->buf,
                         t->inst->bytes, why, sizeof why) == 0)
    return DRED_OK;
  s = t->provider < (uint32_t)rt->world_size ? &rt->segs[t->provider] : NULL;
  DRED_ERROR("task %llu (tag " PROTO_KEY_FMT
             "): refusing to read provider %u's buffer (segment: node %d, "
             "owner %u, %llu bytes; reference: offset %lld, %llu bytes): %s",
             (unsigned long long)t->task_id, PROTO_KEY_ARG(t->tag), t->provider, s ? s->node : -1,
             t->provider, s ? (unsigned long long)s->size : 0ull, (long long)t->buf.pool_off,
             (unsigned long long)t->buf.len, why);
  return DRED_ERR_INTERNAL;
}

/* Tell the provider we read it by RMA (on) or are done (off): see on_serve in runtime.c. */
static void task_serve(dred_rt_t *rt, dred_task_t *t, int on) {
  proto_msg_t m;
  if (t->serving == on) return;
  memset(&m, 0, sizeof m);
  m.type = PROTO_SERVE;
  m.u.serve.task_id = t->task_id;
  m.u.serve.on = (uint8_t)on;
  dred_rt_send_peer(rt, t->provider, &m);
  t->serving = on;
}

static void task_begin(dred_rt_t *rt, dred_task_t *t) {
  dred_inst_t *in = t->inst;
  int i;
  t->started = 1;
  t->t0 = uv_hrtime();
  t->kern = dred_dp_kernel(in);
  /* acc is the replica snapshot, or the application's own block (zero copy): read-only */
  t->own_ro = t->own_p == &in->acc &&
              ((in->repl != NULL && rt->robust->acc_read_only(in)) || in->acc_is_app);
  t->next_elem = t->done_elems = 0;
  t->src = NULL;
  if (t->provider == (uint32_t)rt->world_rank && t->buf.pool_off < 0) {
    /* Both operands are ours (a recovered copy next to our own): the provider's buffer is
     * in our heap, checked by task_check, and read in place. */
    t->src = (const char *)(uintptr_t)t->buf.addr;
  } else if (t->buf.pool_off >= 0 && t->provider < (uint32_t)rt->world_size &&
             rt->peer_base[t->provider] != NULL) {
    MPI_Win_sync(rt->swin); /* see the provider's stores before reading its segment */
    t->src = rt->peer_base[t->provider] + t->buf.pool_off;
  }
  if (t->src != NULL) {
    /* Both buffers snapshots on this node: the robust layer may absorb the provider's
     * into ours in place, recoverably (absorb.c). */
    if (t->absorb && in->repl != NULL && rt->robust->on_task_start(rt, t)) {
      t->oop = 0;
      return;
    }
    t->oop = t->own_ro;
    if (t->oop &&
        dred_dp_buf_alloc(rt, in->bytes, &t->out, &t->out_pool_off, &t->out_malloced) != DRED_OK)
      t->out = NULL; /* reported by the first step */
    if (t->oop && t->own_p == &in->acc) dred_admit_spent(rt, in); /* admitted for this one */
    return;
  }
  t->oop = 1;
  task_serve(rt, t, 1);
  /* RMA path: reads land in an out-of-place result buffer, DRED_RMA_DEPTH reads in flight;
   * each landed chunk gets the executor's data combined into it. */
  t->nslots = (int)rt->cfg.rma_depth;
  for (i = 0; i < t->nslots; i++) {
    t->slot[i].busy = 0;
    t->slot[i].buf = NULL;
  }
  if (dred_dp_buf_alloc(rt, in->bytes, &t->out, &t->out_pool_off, &t->out_malloced) != DRED_OK)
    t->out = NULL; /* reported by the first step */
  if (t->own_p == &in->acc) dred_admit_spent(rt, in);
}

static void task_end(dred_rt_t *rt, dred_task_t *t) {
  t->nslots = 0;
  task_serve(rt, t, 0);
  if (t->absorbing) rt->robust->on_task_finished(rt, t);
}

/* Whole elements in `bytes` (at least one: an element may be larger than a chunk). */
static uint64_t chunk_elems(size_t bytes, const dred_inst_t *in) {
  uint64_t e = bytes / in->ti.extent;
  return e == 0 ? 1 : e;
}

static int step_direct(dred_rt_t *rt, dred_task_t *t, uint64_t deadline) {
  dred_inst_t *in = t->inst;
  uint64_t ce = chunk_elems(rt->chunk_bytes, in);
  int rc;
  do {
    uint64_t n = t->count - t->next_elem < ce ? t->count - t->next_elem : ce;
    if (n == 0) break;
    rc = combine(rt, t, t->src + t->next_elem * in->ti.extent, t->next_elem, n);
    if (rc != 0) return rc;
    t->next_elem += n;
    t->done_elems += n;
  } while (uv_hrtime() < deadline);
  return 0;
}

static int combine_out(dred_rt_t *rt, dred_task_t *t, uint64_t e0, uint64_t n);
/* Out of place from the provider's segment: in sub-chunks that stay in cache, copy the
 * provider's piece into the result and combine the executor's into it. */
#define OOP_SUB_BYTES (128u * 1024u)
static int step_direct_oop(dred_rt_t *rt, dred_task_t *t, uint64_t deadline) {
  dred_inst_t *in = t->inst;
  uint64_t ce = OOP_SUB_BYTES / in->ti.extent;
  int rc;
  if (t->out == NULL) return DRED_ERR_NOMEM;
  if (ce == 0) ce = 1;
  do {
    uint64_t n = t->count - t->next_elem < ce ? t->count - t->next_elem : ce;
    size_t o = (size_t)t->next_elem * in->ti.extent;
    if (n == 0) break;
    if (t->kern != NULL) { /* predefined ops are commutative: out = prov op own, one pass */
      t->kern->outofplace(t->src + o, t->dst + o, t->out + o, (size_t)(n * in->ti.mult));
    } else {
      memcpy(t->out + o, t->src + o, (size_t)n * in->ti.extent);
      if ((rc = combine_out(rt, t, t->next_elem, n)) != 0) return rc;
    }
    t->next_elem += n;
    t->done_elems += n;
  } while (uv_hrtime() < deadline);
  return 0;
}

/* Combine the executor's data into a landed chunk of the result: out = exec op prov, or
 * prov op exec when the executor lies right of the provider under a non-commutative op. */
static int combine_out(dred_rt_t *rt, dred_task_t *t, uint64_t e0, uint64_t n) {
  size_t o = (size_t)e0 * t->inst->ti.extent;
  return reduce_into(rt, t, t->dst + o, t->out + o, n,
                     !t->inst->ti.commutative && !t->exec_is_left);
}

static int step_rma(dred_rt_t *rt, dred_task_t *t, uint64_t deadline, int *did) {
  dred_inst_t *in = t->inst;
  uint64_t ce = chunk_elems(rt->cfg.rma_chunk_kb * 1024u, in);
  int i, flag, rc;

  if (t->out == NULL) return DRED_ERR_NOMEM;
  do {
    /* post reads into free slots */
    for (i = 0; i < t->nslots && t->next_elem < t->count; i++) {
      dred_rma_slot_t *s = &t->slot[i];
      uint64_t n;
      if (s->busy) continue;
      n = t->count - t->next_elem < ce ? t->count - t->next_elem : ce;
      s->elem0 = t->next_elem;
      s->nelem = n;
      s->buf = t->out + s->elem0 * in->ti.extent;
      if (MPI_Rget(s->buf, (int)(n * in->ti.extent), MPI_BYTE,
                   dred_boot_mpi_rank(&rt->boot, (int)t->provider),
                   (MPI_Aint)(t->buf.addr + s->elem0 * in->ti.extent), (int)(n * in->ti.extent),
                   MPI_BYTE, rt->dwin, &s->req) != MPI_SUCCESS) {
        /* Over a transport that notices a dead peer (TCP between nodes) the read fails at
         * once instead of never completing.  The provider is unreachable: its data is
         * lost, the executor's (this path builds the result out of place) is intact, so
         * the scheduler recovers the provider's operands instead of failing the
         * reduction. */
        DRED_ERROR("MPI_Rget from rank %u failed: provider unreachable", t->provider);
        return DRED_ERR_PROC_FAILED;
      }
      s->busy = 1;
      t->next_elem += n;
      *did = 1;
    }
    /* combine the executor's data into what has landed */
    for (i = 0; i < t->nslots; i++) {
      dred_rma_slot_t *s = &t->slot[i];
      if (!s->busy) continue;
      flag = 0;
      if (MPI_Test(&s->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        DRED_ERROR("MPI_Rget from rank %u failed: provider unreachable", t->provider);
        return DRED_ERR_PROC_FAILED; /* as above; the failed request is complete */
      }
      if (!flag) continue;
      s->busy = 0;
      if ((rc = combine_out(rt, t, s->elem0, s->nelem)) != 0) return rc;
      t->done_elems += s->nelem;
      *did = 1;
    }
  } while (t->done_elems < t->count && uv_hrtime() < deadline && *did);
  return 0;
}

/* An out-of-place result is complete: it becomes the executor's buffer (the root's stays
 * its recvbuf, so the result is copied there).  The buffer it replaces is freed -- or, if
 * it is the replica snapshot, handed back to replica_send.c, which frees it once its copies
 * are taken; or, if it is the application's dred_alloc_mem block, left alone. */
static void oop_commit(dred_rt_t *rt, dred_task_t *t) {
  dred_inst_t *in = t->inst;
  if (in->is_root && t->dst == in->recvbuf) {
    if (in->bytes > 0) memcpy(t->dst, t->out, in->bytes);
    dred_dp_buf_free(rt, in->bytes, t->out, t->out_pool_off, t->out_malloced);
  } else {
    if (t->own_ro) {
      if (in->repl != NULL) rt->robust->on_acc_replaced(rt, in); /* if it was the snapshot */
      in->acc_is_app = 0; /* the application's block, if it was, stays untouched */
    } else
      dred_dp_buf_free(rt, in->bytes, *t->own_p, *t->own_pool_off, *t->own_malloced);
    *t->own_p = t->out;
    *t->own_pool_off = t->out_pool_off;
    *t->own_malloced = t->out_malloced;
    t->dst = t->out;
    t->dst_pool_off = t->out_pool_off;
  }
  t->out = NULL;
}

int dred_dp_task_step(dred_rt_t *rt, dred_task_t *t, int *finished, int *status, int *error) {
  uint64_t deadline;
  int rc, did = 0;

  *finished = 0;
  if (!t->started) {
    if ((rc = task_check(rt, t)) != DRED_OK) {
      t->started = 1; /* nothing posted, nothing to undo */
      *finished = 1;
      *status = PROTO_TASK_ERROR;
      *error = rc;
      return 1;
    }
    task_begin(rt, t);
  }
  deadline = uv_hrtime() + TASK_STEP_NS;
  if (t->absorbing) {
    rc = rt->robust->task_step(rt, t, deadline);
    did = 1;
  } else if (t->src != NULL) {
    rc = t->oop ? step_direct_oop(rt, t, deadline) : step_direct(rt, t, deadline);
    did = 1;
  } else {
    rc = step_rma(rt, t, deadline, &did);
  }
  if (rc == DRED_ERR_PROC_FAILED && t->src == NULL) {
    /* step_rma: the provider could not be read.  The executor's buffer is intact (the
     * result is built out of place), so only the provider's side is lost. */
    *finished = 1;
    *status = PROTO_TASK_PROVIDER_LOST;
    *error = 0;
    dred_dp_task_abort(rt, t);
    return 1;
  }
  if (rc != 0) {
    *finished = 1;
    *status = PROTO_TASK_ERROR;
    *error = rc;
    dred_dp_task_abort(rt, t);
    return 1;
  }
  if (t->done_elems >= t->count) {
    if (t->oop && t->out != NULL) oop_commit(rt, t);
    if (t->dst_pool_off >= 0) MPI_Win_sync(rt->swin); /* publish the result to node peers */
    *finished = 1;
    *status = PROTO_TASK_OK;
    *error = 0;
    task_end(rt, t);
  }
  return did;
}

void dred_dp_task_abort(dred_rt_t *rt, dred_task_t *t) {
  int i, busy = 0;
  /* Reads still outstanding target a dead process and never complete: the result buffer
   * they land in is abandoned, never freed under MPI's feet.  The executor's own buffer
   * was never written on this path, so only the provider's side is lost. */
  for (i = 0; i < t->nslots; i++) busy |= t->slot[i].busy;
  if (t->out != NULL && !busy && t->inst != NULL)
    dred_dp_buf_free(rt, t->inst->bytes, t->out, t->out_pool_off, t->out_malloced);
  t->out = NULL;
  task_end(rt, t);
}
