/*
 * buffer.c -- a reduction's buffers: pool blocks and private buffers, the operand loaded
 * into dred's layout and the result unpacked from it, and the accumulator's life.
 *
 * A non-root member copies its operand into a pool block (its accumulator, "acc") inside
 * dred_ireduce, on the caller's thread: that single copy puts the operand in shared
 * memory, where node peers combine from it and its replicas are taken from it.  An operand
 * already in the pool -- a contiguous sendbuf inside a dred_alloc_mem block (mem.c) -- is
 * not copied at all: that block is the accumulator, read-only.  The root's accumulator is
 * its recvbuf -- unless the datatype has holes or a lower bound (a PACKED or IMAGE layout,
 * lib/engine/typecheck.c): then every member's operand is loaded into dred's layout
 * (dred_dp_load: MPI_Pack, or a byte image from the true lower bound), the root combines
 * in a buffer of its own, and the result is unpacked into recvbuf when the reduction ends
 * (dred_dp_unpack_part), writing only the typemap's bytes, as MPI does.
 *
 * Where a buffer lives.  In a block of our pool when there is room (node peers read it in
 * place, window.c); else in private memory (common/bigbuf.h), attached to the dynamic
 * window so that other nodes, and node peers, still read it by RMA.  Pool blocks are
 * taken and freed under rt->pool_mu -- application threads in dred_ireduce, the runtime
 * thread and the admission of waiting operands (admit.c) all take them -- and a freed
 * block tells those waiting for room.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/bigbuf.h"
#include "../../common/log.h"
#include "../engine/admit.h"
#include "../engine/inst.h"
#include "../engine/mem.h"
#include "../engine/robust.h"
#include "../engine/runtime.h"
#include "../engine/snapdir.h"
#include "../engine/typecheck.h"
#include "../paths/handover.h"
#include "../paths/meetpath.h"
#include "dataplane.h"
#include "../shm/copy.h"

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

/* MPI_Pack_c from, or MPI_Unpack_c into, the caller's buffer `buf` (`pack`: 1, 0).  A NULL
 * buffer is MPI_BOTTOM, which a datatype of absolute addresses counts from (api.c accepts
 * it for such types alone), but MPICH 4.0.2 refuses NULL there ("Null pointer in parameter
 * inbuf", pmodels/mpich#6410): the same bytes are then reached from the type's true lower
 * bound through a copy of the type shifted down by it, resized to the caller's extent so
 * that element i still lies i extents on. */
static int user_copy(int pack, void *buf, MPI_Count n, MPI_Datatype type, char *packed,
                     MPI_Count packed_size, MPI_Count *pos) {
  MPI_Datatype hind = MPI_DATATYPE_NULL, shifted = MPI_DATATYPE_NULL;
  MPI_Aint lb, extent, tlb, textent, disp;
  int one = 1, rc;
  if (buf == NULL && n > 0) {
    MPI_Type_get_extent(type, &lb, &extent);
    MPI_Type_get_true_extent(type, &tlb, &textent);
    disp = -tlb;
    rc = MPI_Type_create_hindexed(1, &one, &disp, type, &hind);
    if (rc == MPI_SUCCESS) rc = MPI_Type_create_resized(hind, lb - tlb, extent, &shifted);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&shifted);
    if (hind != MPI_DATATYPE_NULL) MPI_Type_free(&hind);
    if (rc != MPI_SUCCESS) {
      DRED_ERROR("a copy of a datatype shifted by its true lower bound (MPI_BOTTOM) failed");
      if (shifted != MPI_DATATYPE_NULL) MPI_Type_free(&shifted);
      return rc;
    }
    buf = (void *)(uintptr_t)tlb;
    type = shifted;
  }
  rc = pack ? MPI_Pack_c(buf, n, type, packed, packed_size, pos, MPI_COMM_SELF)
            : MPI_Unpack_c(packed, packed_size, pos, buf, n, type, MPI_COMM_SELF);
  if (shifted != MPI_DATATYPE_NULL) MPI_Type_free(&shifted);
  return rc;
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

/* Whether an IMAGE operand's span may be copied whole from the caller's buffer, holes and
 * all: only where no hole can hold a whole page.  A hole shorter than a page shares each
 * page it touches with a byte of the type, which the caller's buffer holds; a longer one
 * may span memory nobody mapped -- variables at absolute addresses (MPI_BOTTOM), say a
 * static array and a heap one, with the gap between the program's image and its heap. */
static int image_readable(const dred_inst_t *in) {
  const dred_typeinfo_t *ti = &in->ti;
  return ti->true_extent - (MPI_Aint)ti->size < 4096 &&
         (in->count <= 1 || ti->type_extent - ti->true_extent < 4096);
}

size_t dred_dp_stream_min(const dred_inst_t *in) {
  return in->kind == PROTO_KIND_ALLREDUCE ? DRED_SHM_STREAM_FOLD_MIN : DRED_SHM_STREAM_MIN;
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
      /* a non-root's block of our pool: peers read it next (copy.c) */
      if (!in->is_root && dst == in->acc && in->pool_off >= 0)
        dred_shm_copy_in(dst, src, in->bytes, dred_dp_stream_min(in));
      else
        memcpy(dst, src, in->bytes);
      return DRED_OK;
    case DRED_LAYOUT_IMAGE: {
      /* the bytes the count elements span, from the true lower bound; the tail of the last
       * element's extent (a hole past its data) may lie outside the caller's buffer */
      size_t span = (size_t)(in->count - 1) * (size_t)ti->type_extent + (size_t)ti->true_extent;
      if (image_readable(in)) {
        /* (src may be MPI_BOTTOM, NULL: the true lower bound is then an address) */
        memcpy(dst, (const char *)((uintptr_t)src + (uintptr_t)ti->true_lb), span);
        if (span < in->bytes) memset(dst + span, 0, in->bytes - span);
        return DRED_OK;
      }
      /* typed -> typed: only the type's bytes are read; the holes are zeros */
      memset(dst, 0, in->bytes);
      if ((tmp = pack_tmp(cnt, in->type_hold, &cap)) == NULL) return DRED_ERR_NOMEM;
      rc = user_copy(1, (void *)(uintptr_t)src, cnt, in->type_hold, tmp, cap, &pos);
      if (rc == MPI_SUCCESS)
        rc = MPI_Unpack_c(tmp, pos, &pos2, (char *)((uintptr_t)dst - (uintptr_t)ti->true_lb),
                          cnt, in->type_hold, MPI_COMM_SELF);
      free(tmp);
      if (rc != MPI_SUCCESS) {
        DRED_ERROR("copying the operand (%llu elements of a derived datatype) failed",
                   (unsigned long long)in->count);
        return DRED_ERR_INTERNAL;
      }
      return DRED_OK;
    }
    default: /* PACKED: the typemap's elements, in order, as an array of exec_type */
      if (!ti->base_padded)
        rc = user_copy(1, (void *)(uintptr_t)src, cnt, in->type_hold, dst, (MPI_Count)in->bytes, &pos);
      else if ((tmp = pack_tmp(cnt, in->type_hold, &cap)) == NULL)
        return DRED_ERR_NOMEM;
      else {
        /* a padded base (MPI_DOUBLE_INT...) packs without its padding: unpack it as the base
         * type to get the array; the padding bytes are zeroed so copies compare equal */
        memset(dst, 0, in->bytes);
        rc = user_copy(1, (void *)(uintptr_t)src, cnt, in->type_hold, tmp, cap, &pos);
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

int dred_dp_unpack_part(dred_rt_t *rt, const dred_inst_t *in, const char *from_buf,
                        uint64_t first, uint64_t n) {
  const dred_typeinfo_t *ti = &in->ti;
  MPI_Count cnt = (MPI_Count)n, pos = 0, pos2 = 0, cap;
  /* element i lies at i x ti->extent in dred's layout, at i x the caller's extent in recvbuf */
  const char *src = from_buf + first * ti->extent;
  char *out = (char *)((uintptr_t)in->recvbuf + (uintptr_t)((MPI_Aint)first * ti->type_extent)),
       *tmp = NULL; /* (recvbuf may be MPI_BOTTOM, NULL) */
  int rc;
  (void)rt;
  if (ti->layout == DRED_LAYOUT_DIRECT || in->bytes == 0 || from_buf == NULL || n == 0)
    return DRED_OK;
  if (ti->layout == DRED_LAYOUT_PACKED && !ti->base_padded) {
    rc = user_copy(0, out, cnt, in->type_hold, (char *)(uintptr_t)src,
                   (MPI_Count)(n * ti->extent), &pos);
  } else {
    /* typed -> typed: pack what we hold (the padded array, or the image at its true lower
     * bound), then unpack it with the caller's type, which writes only the type's bytes */
    MPI_Datatype from = ti->layout == DRED_LAYOUT_PACKED ? ti->exec_type : in->type_hold;
    MPI_Count nf = ti->layout == DRED_LAYOUT_PACKED ? cnt * ti->mult : cnt;
    const char *p = ti->layout == DRED_LAYOUT_PACKED ? src : src - ti->true_lb;
    if ((tmp = pack_tmp(nf, from, &cap)) == NULL) return DRED_ERR_NOMEM;
    rc = MPI_Pack_c(p, nf, from, tmp, cap, &pos2, MPI_COMM_SELF);
    if (rc == MPI_SUCCESS)
      rc = user_copy(0, out, cnt, in->type_hold, tmp, pos2, &pos);
    free(tmp);
  }
  if (rc != MPI_SUCCESS) {
    DRED_ERROR("unpacking the result into recvbuf (elements %llu to %llu of a derived "
               "datatype) failed",
               (unsigned long long)first, (unsigned long long)(first + n - 1));
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

void dred_dp_acc_early(dred_rt_t *rt, dred_inst_t *in) {
  if (in->is_root && in->ti.layout == DRED_LAYOUT_DIRECT) {
    /* (a bcast's root passes its buffer as both: nothing to copy).  A large allreduce
     * bound for the meeting place folds from the copy its peers read, never from acc:
     * its member 0 copies its operand once, there (dred_meetpath_defers_acc), not also here. */
    in->acc_deferred = dred_meetpath_defers_acc(rt, in);
    if (in->sendbuf != MPI_IN_PLACE && in->sendbuf != in->recvbuf && in->bytes > 0 &&
        !in->acc_deferred)
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
   * reads sendbuf after dred_ireduce returned, except to reload the operand in recovery
   * and a one-node root's after an early fold when its slot spills (meetpath.c's
   * reroute), and never once the reduction was abandoned (future.c).  A packed or image root
   * combines in a buffer of its own too, and unpacks the result into recvbuf at the end
   * (dred_dp_unpack_part), so recvbuf's holes stay untouched and, in place, its
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
  if (rc == DRED_OK && in->bytes > 0 && !in->is_root && !waits && !in->acc_malloced &&
      dred_meetpath_pieces(rt, in)) {
    /* a large allreduce's block, filled after this member arrived in its slot, as its
     * peers fold (meetpath.c); before it leaves the meeting place otherwise */
    in->acc_deferred = 1;
    in->meet_pipelined = 1;
  } else if (rc == DRED_OK && in->bytes > 0) {
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
