/*
 * combine.c -- how an executor combines a provider's data: the tasks dred-master hands
 * this worker (TASK), run a time slice at a time, and the fold at an inline reduction's
 * root.
 *
 * Two ways to read the provider:
 *   - same node, provider's acc in its pool: a direct pointer into the provider's segment
 *     (window.c maps them), so the combine reads the peer's memory with no copy;
 *   - otherwise: MPI_Rget from the dynamic window (the pool and any malloc'd acc are
 *     attached to it), DRED_RMA_DEPTH reads of DRED_RMA_CHUNK_KB in flight, each combined
 *     as it lands, so the transfer and the combine overlap.  Many small reads rather than
 *     a few large ones: over UCX's TCP transport a read is served by the provider's
 *     progress engine, so each read costs a round trip and throughput grows with the
 *     reads in flight (docs/design.md, "Many nodes").
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

#include "../../common/log.h"
#include "../engine/admit.h"
#include "../engine/inst.h"
#include "../engine/kernel.h"
#include "../engine/robust.h"
#include "../engine/runtime.h"
#include "../engine/task.h"
#include "../engine/typecheck.h"
#include "dataplane.h"

#define TASK_STEP_NS 500000ull /* time slice of one task step */

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

/* Reads in flight of which none has landed for twice DRED_FAIL_TIMEOUT_MS, their provider
 * not declared failed meanwhile: stop waiting for them (DRED_ERR_TIMEOUT to the caller).
 *
 * Why it happens.  Between simulated nodes (one host) dred's reads go over UCX's
 * shared-memory transport, whose receive FIFO is one ring per process written by every
 * sender: a sender takes the next element (an atomic step of the head), writes it, then
 * flags it written.  A sender SIGKILLed between the two leaves an element that is never
 * flagged, and the owner of the FIFO never reads past it -- from then on no active
 * message reaches that process from anyone.  MPICH 4.0.2 serves a dynamic window's
 * MPI_Rget by active messages (the target answers with the data), so a survivor that was
 * reading a provider of the lost node, whose answers were landing in its FIFO, can never
 * complete a read again, from any live provider (docs/faults.md, "The node-loss hang");
 * likewise a provider whose own FIFO is blocked never sees our request.  Nothing in MPI
 * says so: the request simply never completes.
 *
 * Twice the failure timeout: a provider that is really gone is declared by dred-master
 * within the failure timeout (and worker_failed_stop then ends the task as
 * PROVIDER_LOST, recovering its operand); only a read of a process nobody declared gets
 * here.  Time this process spent stalled itself is not counted against the reads
 * (rma_clock). */
static int rma_stalled(dred_rt_t *rt, dred_task_t *t, uint64_t now) {
  uint64_t limit = 2 * rt->cfg.fail_timeout_ms * 1000000ull;
  int i, busy = 0;
  for (i = 0; i < t->nslots; i++) busy += t->slot[i].busy;
  if (busy == 0 || limit == 0 || now - t->rma_moved_ns <= limit) return 0;
  DRED_ERROR("task %llu (tag " PROTO_KEY_FMT "): %d MPI_Rget read(s) from live worker %u made no "
             "progress for %llu ms (2 x DRED_FAIL_TIMEOUT_MS): MPI no longer carries data between "
             "it and this process (a process killed while sending to one of them can leave "
             "UCX's shared-memory FIFO blocked); the reduction ends with DRED_ERR_PROC_FAILED",
             (unsigned long long)t->task_id, PROTO_KEY_ARG(t->tag), busy, t->provider,
             (unsigned long long)((now - t->rma_moved_ns) / 1000000ull));
  return 1;
}

/* The reads' clock, read at every look at them.  A gap of more than half the bound since
 * the last look means this process itself was stalled (stopped, or kept off the CPU --
 * between steps, or inside one: a whole job stopped while this loop polls comes back
 * with its deadline long past): the reads had no chance meanwhile, so their clock starts
 * again now. */
static uint64_t rma_clock(dred_rt_t *rt, dred_task_t *t) {
  uint64_t now = uv_hrtime();
  if (t->rma_stepped_ns == 0 || now - t->rma_stepped_ns > rt->cfg.fail_timeout_ms * 1000000ull)
    t->rma_moved_ns = now;
  t->rma_stepped_ns = now;
  return now;
}

static int step_rma(dred_rt_t *rt, dred_task_t *t, uint64_t deadline, int *did) {
  dred_inst_t *in = t->inst;
  uint64_t ce = chunk_elems(rt->cfg.rma_chunk_kb * 1024u, in);
  int i, flag, rc;

  if (t->out == NULL) return DRED_ERR_NOMEM;
  do {
    (void)rma_clock(rt, t);
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
      t->rma_moved_ns = uv_hrtime();
      if ((rc = combine_out(rt, t, s->elem0, s->nelem)) != 0) return rc;
      t->done_elems += s->nelem;
      *did = 1;
    }
  } while (t->done_elems < t->count && uv_hrtime() < deadline && *did);
  if (!*did && rma_stalled(rt, t, rma_clock(rt, t))) return DRED_ERR_TIMEOUT;
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
  if (rc == DRED_ERR_TIMEOUT && t->src == NULL) {
    /* step_rma: reads of a live provider that never complete (rma_stalled).  Not
     * PROVIDER_LOST: dred-master would recover the provider's operand from the provider
     * itself and pair it again, most likely with this process, whose reads stall again --
     * no end in sight.  The reduction ends with an explicit error instead; the reads stay
     * abandoned with their buffer (dred_dp_task_abort). */
    *finished = 1;
    *status = PROTO_TASK_ERROR;
    *error = DRED_ERR_PROC_FAILED;
    dred_dp_task_abort(rt, t);
    return 1;
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
