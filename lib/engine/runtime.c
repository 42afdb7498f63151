/*
 * runtime.c -- libdred's runtime thread.
 *
 * One thread per process runs a libuv loop that sleeps in epoll until something happens:
 * a control message on a link (common/net.h), the master's link closing, the watchdog
 * timer, or an application thread's uv_async_send after it queued a reduction.  After
 * every wake-up the `turn` check handle does one turn of work:
 *   1. take new reductions handed over by application threads (submitq): prepare the
 *      accumulator, define the group to the master once, send READY;
 *   2. take control messages (TASK, END, PING, SHUTDOWN, ...);
 *   3. advance the head task by one time slice (combine.c), report DONE when finished;
 *   4. move replica transfers along (replicate.c);
 *   5. at dred_finalize: say BYE once nothing is pending, or abandon what still is once
 *      DRED_FINALIZE_WAIT_S ran out (the watchdog timer wakes the loop to notice).
 * While there is work the CPU can do now (a combine, new reductions, messages taken in)
 * the idle handle keeps the loop from sleeping.  Work that only waits for MPI -- a task's
 * MPI_Rget reads from another node, other nodes reading from us (MPICH serves them from
 * our progress engine), replica copies crossing -- needs MPI polled, not a core: the loop
 * spins for SPIN_NS after its last progress, then polls from epoll every millisecond
 * (sockets still wake it at once).  On a node whose cores are all busy, a thread that
 * spun through a whole transfer took a core from the processes it was waiting for.  With
 * nothing in flight the thread costs no CPU and calls no MPI function, so it never waits
 * for MPICH's lock while the application sits in a blocking MPI call.
 * Futures complete here when the master's END arrives.  The loop ends after SHUTDOWN
 * (everyone said BYE) or when the master is lost.
 *
 * Every step does a bounded amount of work per turn (SUBMIT_BATCH announcements,
 * RECV_BATCH messages, one task time slice, bounded replica polling), and every lookup a
 * message triggers is indexed: with 10 000 reductions in flight a turn still takes
 * microseconds, so PINGs are answered at once and no one is falsely declared failed.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/deathwatch.h"
#include "../../common/log.h"
#include "../../common/status.h"
#include "../mpi/dataplane.h"
#include "../mpi/nodemem.h"
#include "../paths/distribute.h"
#include "../paths/meetpath.h"
#include "../paths/offnode.h"
#include "../paths/partial.h"
#include "../paths/relay.h"
#include "../shm/copy.h"
#include "admit.h"
#include "future.h"
#include "group.h"
#include "inst.h"
#include "lifetime.h"
#include "robust.h"
#include "runtime.h"
#include "task.h"

#define RECV_BATCH 64
/* How long a loop waiting only for MPI keeps spinning after its last progress: long
 * enough for a chunk read between nodes with RDMA (~100 us per MiB), short against a
 * scheduler's time slice. */
#define SPIN_NS 200000ull
#define MASTER_EOF_GRACE_NS 500000000ull /* after our BYE: how long a SHUTDOWN may lag an EOF */
#define SUBMIT_BATCH 64 /* announcements per turn: an application may queue thousands */
/* How long a failed peer's incoming link is read after FAILED, at most: a dead process's
 * socket ends at once; a peer on a lost node may never say so. */
#define PEER_DRAIN_MS 50

dred_inst_t *dred_rt_find(dred_rt_t *rt, uint64_t group_id, int64_t tag) {
  dred_keymap_node_t *n = dred_keymap_find(&rt->inst, group_id, tag);
  return n != NULL ? DRED_KEYMAP_DATA(n, dred_inst_t, knode) : NULL;
}

void dred_rt_insert(dred_rt_t *rt, dred_inst_t *in) {
  /* never fails: dred_rt_start gave the map its slots */
  (void)dred_keymap_insert(&rt->inst, &in->knode, in->group_id, in->tag);
  rt->ninst++;
  rt->nrefused += in->refused;
}

proto_buf_t dred_rt_bufref(const dred_rt_t *rt, const char *p, int64_t pool_off, uint64_t len) {
  proto_buf_t b;
  MPI_Aint a = 0;
  if (p != NULL) MPI_Get_address(p, &a);
  b.addr = (uint64_t)a;
  b.pool_off = pool_off;
  b.len = len;
  b.owner = (uint32_t)rt->world_rank; /* the private communicator duplicates the world */
  return b;
}

/* The last instance freed without extra bytes, kept for the next call's (a small
 * collective costs less than a calloc and a free).  One process-wide place, swapped
 * atomically: an instance is either there or in use. */
static dred_inst_t *inst_spare;

dred_inst_t *dred_rt_inst_alloc(size_t extra) {
  dred_inst_t *in = extra == 0 ? __atomic_exchange_n(&inst_spare, NULL, __ATOMIC_ACQUIRE) : NULL;
  if (in != NULL) {
    memset(in, 0, sizeof *in);
    return in;
  }
  return calloc(1, sizeof *in + extra);
}

void dred_rt_inst_free(dred_inst_t *in) {
  /* extra bytes hold an inline operand, which inl_data names (api.c) */
  if (DRED_KEEP_SPARE && in != NULL && in->inl_data == NULL)
    in = __atomic_exchange_n(&inst_spare, in, __ATOMIC_ACQ_REL);
  free(in);
}

void dred_rt_inst_drop_spare(void) { free(__atomic_exchange_n(&inst_spare, NULL, __ATOMIC_ACQUIRE)); }

/* The two halves every ending shares, around the bookkeeping under rt->lock that differs:
 * first an instance's buffers and the datatype it held (a packed or image result reaches
 * recvbuf only now, and only if it is the result) ... */
static int inst_release(dred_rt_t *rt, dred_inst_t *in, int status) {
  status = dred_dist_finish(rt, in, status);
  dred_dp_acc_release(rt, in);
  if (in->type_hold != MPI_DATATYPE_NULL) PMPI_Type_free(&in->type_hold); /* our own dup */
  return status;
}

/* ... then its outcome logged, the op and datatype it kept alive let go, its future
 * completed (or discarded: nobody holds it) and the instance freed.  The lifetimes go
 * before the future completes, so that an op or datatype freed after dred_future_get
 * returned is freed at once, exactly as without dred. */
static void inst_forget(dred_inst_t *in, int status, int seen) {
  if (status != DRED_OK)
    DRED_INFO("reduction (group %016llx, tag " PROTO_KEY_FMT ") ended: %s",
              (unsigned long long)in->group_id, PROTO_KEY_ARG(in->tag), dred_status_str(status));
  dred_lifetime_release(in->op, in->type, in->held);
  if (seen)
    dred_future_complete(in->fut, status);
  else
    dred_future_discard(in->fut);
  dred_rt_inst_free(in);
}

/* End an instance: release its buffers, complete its future, forget it. */
int dred_rt_inst_finish(dred_rt_t *rt, dred_inst_t *in, int status) {
  int bye;
  dred_partial_done(rt, in); /* leaves its node's partial slot (partial.c) */
  status = inst_release(rt, in, status);
  uv_mutex_lock(&rt->lock);
  dred_keymap_remove(&rt->inst, &in->knode);
  if (dred_inst_state(in) == INST_MEET) { /* settled by meetpath.c, which claimed it */
    dred_queue_remove(&in->qlink);
    rt->meet_done++;
  }
  rt->ninst--;
  rt->nrefused -= in->refused;
  dred_nodemem_give(rt, in->node_bytes);
  in->node_bytes = 0;
  /* Ended by a finalize deadline (ours or another member's) while dred_finalize waited for
   * it: dred_finalize reports DRED_ERR_TIMEOUT. */
  if (status == DRED_ERR_SHUTDOWN && rt->bye_requested) rt->cut_short++;
  bye = rt->bye_requested;
  uv_mutex_unlock(&rt->lock);
  inst_forget(in, status, 1);
  return bye;
}

int dred_rt_inst_end_unseen(dred_rt_t *rt, dred_inst_t *in, int status) {
  status = inst_release(rt, in, status);
  uv_mutex_lock(&rt->lock);
  rt->entering--;
  rt->meet_done++;
  dred_nodemem_give(rt, in->node_bytes);
  in->node_bytes = 0;
  uv_mutex_unlock(&rt->lock);
  inst_forget(in, status, 0);
  return status;
}

void dred_rt_inst_maybe_finish(dred_rt_t *rt, dred_inst_t *in) {
  if (dred_inst_state(in) == INST_ENDED && in->tasks_pending == 0 &&
      (in->repl == NULL || !rt->robust->reading(in))) {
    if (in->relay_copy) { /* a relay follower (relay.c): a thread may be copying into it */
      int claimed;
      uv_mutex_lock(&rt->lock);
      claimed = in->relay_claimed;
      if (claimed) in->relay_finish_due = 1; /* that thread finishes it */
      uv_mutex_unlock(&rt->lock);
      if (claimed) return;
    }
    if (in->end_status == DRED_OK && dred_dist_unpack_defer(rt, in)) return; /* in parts */
    (void)dred_rt_inst_finish(rt, in, in->end_status);
  }
}

static void send_to_master(dred_rt_t *rt, const proto_msg_t *m, const uint32_t *workers) {
  if (dred_net_send(&rt->net, 0, m, workers) != 0)
    DRED_ERROR("could not send %s to dred-master", proto_type_name(m->type));
}

void dred_rt_send_master(dred_rt_t *rt, const proto_msg_t *m) { send_to_master(rt, m, NULL); }

/* ---- 2. submissions ------------------------------------------------------------------ */

/* Ask the master to end `in` for every member with `status` (ABANDON), once: dred_finalize
 * could wait no longer for it (DRED_ERR_SHUTDOWN), or this member cannot give what the
 * collective needs from it (distribute.c).  Our buffers stay until its END (other members'
 * tasks may be reading them). */
void dred_rt_abandon(dred_rt_t *rt, dred_inst_t *in, int status) {
  proto_msg_t m;
  if (in->abandon_sent || dred_inst_state(in) != INST_ANNOUNCED) return;
  memset(&m, 0, sizeof m);
  m.type = PROTO_ABANDON;
  m.u.recover.group = in->group_id;
  m.u.recover.tag = in->tag;
  m.u.recover.member = in->member;
  m.u.recover.error = status;
  send_to_master(rt, &m, NULL);
  in->abandon_sent = 1;
}

static void send_abandon(dred_rt_t *rt, dred_inst_t *in) { dred_rt_abandon(rt, in, DRED_ERR_SHUTDOWN); }

/* One builder for every READY this process sends, whether it announces its own operand
 * or a recovered copy of another member's: the master compares the parameters of all
 * READYs of an instance (a disagreement is DRED_ERR_MISMATCH), so they must come from one
 * place.  `inl` is the instance's own flag: recovered READYs are never inline (an inline
 * operand has no replicas), so it is 0 there. */
proto_params_t dred_rt_params(const dred_inst_t *in) {
  proto_params_t p;
  memset(&p, 0, sizeof p);
  p.count = in->count;
  p.type_size = in->ti.size;
  p.extent = in->ti.extent;
  if (in->kind == PROTO_KIND_BCAST) {
    /* A bcast's data is a byte stream in every layout (typecheck.c): members may describe
     * it with different counts and datatypes of one type signature, as MPI allows */
    p.count = in->bytes;
    p.type_size = 1;
    p.extent = 1;
  }
  p.type_sig = in->ti.sig;
  p.root = in->root;
  p.op = (int32_t)MPI_Op_c2f(in->op);
  p.op_is_user = (uint8_t)in->ti.op_is_user;
  p.commutative = (uint8_t)in->ti.commutative;
  p.inl = (uint8_t)(in->inl != 0);
  p.kind = (uint8_t)in->kind;
  return p;
}

void dred_rt_ready(const dred_inst_t *in, uint32_t member, proto_msg_t *m) {
  proto_params_t p = dred_rt_params(in);
  memset(m, 0, sizeof *m);
  m->type = PROTO_READY;
  m->u.ready.group = in->group_id;
  m->u.ready.tag = in->tag;
  m->u.ready.member = member;
  proto_params_set(m, &p);
  /* its slot in the meeting place was mixed: the members that met there (meetpath.c) */
  if (member == in->member) m->u.ready.meet_mask = in->meet_mask;
}

/* The error a READY may carry for a member that joins without its operand: its refusal
 * (DRED_ERR_ARG, DRED_ERR_NOMEM: api.c) or DRED_ERR_INTERNAL; any other local failure to
 * get a buffer is a lack of memory. */
static int32_t ready_error(int rc) {
  return rc == DRED_ERR_INTERNAL || rc == DRED_ERR_ARG ? rc : DRED_ERR_NOMEM;
}

/* An inline collective: one READY carrying the operand (a reduce's root sends none, its
 * operand stays in its acc; an allreduce's every member sends its acc, a bcast's root its
 * data, a bcast's other members nothing), no replicas, no buffer reference; the master
 * answers the root (an allreduce's every member) with INLINE, a bcast's members with
 * DATA, and everyone with END. */
static void inline_ready(dred_rt_t *rt, dred_inst_t *in, proto_msg_t *m) {
  int rc = in->join_error;
  dred_rt_ready(in, in->member, m);
  m->u.ready.buf.pool_off = -1;
  m->u.ready.buf.len = in->bytes;
  m->u.ready.buf.owner = (uint32_t)rt->world_rank;
  if (rc == DRED_OK && in->is_root) rc = dred_dp_acc_prepare(rt, in);
  if (rc != DRED_OK) {
    if (in->join_error == DRED_OK) /* a refused call was logged by dred_ireduce */
      DRED_ERROR("reduction (tag " PROTO_KEY_FMT ") cannot start here: %s",
                 PROTO_KEY_ARG(in->tag), dred_status_str(rc));
    m->u.ready.error = ready_error(rc);
  } else if (in->kind == PROTO_KIND_REDUCE && !in->is_root) {
    m->u.ready.data = in->inl_data;
    m->u.ready.data_len = (uint32_t)in->bytes;
  } else if (in->kind != PROTO_KIND_REDUCE && in->is_root) {
    m->u.ready.data = (const uint8_t *)in->acc;
    m->u.ready.data_len = (uint32_t)in->bytes;
  }
}

static void announce_inline(dred_rt_t *rt, dred_inst_t *in, proto_msg_t *m) {
  inline_ready(rt, in, m);
  send_to_master(rt, m, NULL);
  dred_inst_set_state(in, INST_ANNOUNCED);
  if (rt->abandon_pass) send_abandon(rt, in);
}

/* The calling thread announces an inline reduction itself when it can: the READY is all
 * there is to do, and waking the runtime thread only to forward it costs two context
 * switches per member and reduction -- on a machine whose cores are busy with the
 * application's own MPI progress, that is what a small reduction's time is made of
 * (tests/bench: scenario loop).  Possible when the master already knows the group (its
 * GROUP went out before; net.c keeps the READY behind it) and the link to the master is
 * idle; otherwise the runtime announces it as usual.  Under rt->lock, so that nothing the
 * master answers is handled before `in` is ANNOUNCED. */
int dred_rt_announce_now(dred_rt_t *rt, dred_inst_t *in) {
  proto_msg_t m;
  if (!in->inl || !in->group->defined || in->join_error != DRED_OK || rt->dead) return 0;
  inline_ready(rt, in, &m);
  if (m.u.ready.error != DRED_OK || dred_net_send_now(&rt->net, 0, &m) != DRED_OK) return 0;
  dred_inst_set_state(in, INST_ANNOUNCED);
  rt->announced_now++;
  return 1;
}

/* DRED_TEST_READY_KILL (common/config.h): this worker's READY for `in` never goes out,
 * and the process dies half a second later -- its copies, started before the READY,
 * are held by then -- from a thread of its own, so nothing here waits for it. */
static void *ready_kill_later(void *arg) {
  struct timespec ts = {0, 500000000L};
  (void)arg;
  nanosleep(&ts, NULL);
  raise(SIGKILL);
  return NULL;
}

static int ready_kill(dred_rt_t *rt, const dred_inst_t *in) {
  const dred_config_t *c = &rt->cfg;
  pthread_t th;
  if (!c->test_ready_kill || in->tag < 0 || proto_key_tag(in->tag) != c->test_ready_kill_tag ||
      rt->world_rank != c->test_ready_kill_rank)
    return 0;
  DRED_WARN("DRED_TEST_READY_KILL: no READY for reduction (tag " PROTO_KEY_FMT "); SIGKILLing "
            "this process in 0.5 s", PROTO_KEY_ARG(in->tag));
  if (pthread_create(&th, NULL, ready_kill_later, NULL) == 0) pthread_detach(th);
  else raise(SIGKILL);
  return 1;
}

static void announce(dred_rt_t *rt, dred_inst_t *in) {
  proto_msg_t m;
  int rc;

  if (!in->group->defined) {
    memset(&m, 0, sizeof m);
    m.type = PROTO_GROUP;
    m.u.group.id = in->group->id;
    m.u.group.n = in->group->n;
    send_to_master(rt, &m, in->group->workers);
    uv_mutex_lock(&rt->lock); /* read by application threads (dred_rt_announce_now) */
    in->group->defined = 1;
    uv_mutex_unlock(&rt->lock);
  }
  if (in->inl) {
    announce_inline(rt, in, &m);
    return;
  }
  if (in->kind == PROTO_KIND_BCAST) {
    dred_dist_announce_bcast(rt, in);
    if (rt->abandon_pass) send_abandon(rt, in);
    return;
  }
  if (dred_admit_defer(rt, in)) return; /* waits for pool room; admit.c announces it later */
  dred_rt_ready(in, in->member, &m); /* before the replicas: they add their holders to it */
  if (in->relay_copy) m.u.ready.have = PROTO_HAVE_FOLLOW; /* it copies from its node's leader */
  /* Replicas first: until the neighbour has our header, a crash here loses the operand
   * for good, so that window is kept as short as one copy of it. */
  if (rt->cfg.replicas > 0) rt->robust->on_ready(rt, in, &m);
  if ((rc = dred_dp_acc_prepare(rt, in)) != DRED_OK) {
    /* The other members are already on their way: tell the master this member's
     * reduction failed, so every member's future ends instead of waiting for us. */
    if (in->join_error == DRED_OK) /* a refused call was logged by dred_ireduce */
      DRED_ERROR("reduction (tag " PROTO_KEY_FMT ") cannot start here: %s",
                 PROTO_KEY_ARG(in->tag), dred_status_str(rc));
    in->acc = NULL;
  }
  if (in->acc != NULL) {
    m.u.ready.buf = dred_rt_bufref(rt, in->acc, in->pool_off, in->bytes);
    m.u.ready.snap = (uint8_t)(in->repl != NULL && rt->robust->acc_listed(in));
  } else {
    /* No buffer: join anyway, saying why, so the master ends the instance with this
     * status for every member instead of leaving them waiting for us. */
    m.u.ready.error = ready_error(rc);
    m.u.ready.buf.pool_off = -1;
  }
  /* A reduce spanning nodes: its node's members may go to the master as one partial
   * (partial.c) -- folded and sent by this member, or by another that covers it. */
  if (!ready_kill(rt, in) && !dred_partial_announce(rt, in, &m)) send_to_master(rt, &m, NULL);
  dred_inst_set_state(in, INST_ANNOUNCED);
  if (DRED_RT_ROBUST_ON(rt)) rt->robust->on_ready_sent(rt, in); /* a RECOVER may wait for it */
  if (rt->abandon_pass) send_abandon(rt, in); /* finalize stopped waiting before we got here */
}

static int drain_submissions(dred_rt_t *rt) {
  dred_queue_t local, *q;
  int n = 0;
  /* At most SUBMIT_BATCH per turn: announcing costs sends and replica work, and a turn
   * that announced 10 000 reductions would leave PINGs unanswered meanwhile. */
  dred_queue_init(&local);
  uv_mutex_lock(&rt->lock);
  while (n < SUBMIT_BATCH && (q = dred_queue_head(&rt->submitq)) != NULL) {
    dred_queue_remove(q);
    dred_queue_insert_tail(&local, q);
    n++;
  }
  uv_mutex_unlock(&rt->lock);
  n = 0;
  while ((q = dred_queue_head(&local)) != NULL) {
    dred_queue_remove(q);
    announce(rt, DRED_QUEUE_DATA(q, dred_inst_t, qlink));
    n++;
  }
  return n;
}

/* ---- 3. messages from the master ---------------------------------------------------- */

/* Whether task t reads its provider over RMA (not from a node peer's shared memory, which
 * outlives the peer): such a read of a dead provider never completes. */
static int task_reads_rma(const dred_rt_t *rt, const dred_task_t *t) {
  if (t->started) return t->src == NULL;
  return !(t->buf.pool_off >= 0 && t->provider < (uint32_t)rt->world_size &&
           rt->peer_base[t->provider] != NULL);
}

/* Tell the master task t ended PROVIDER_LOST: the provider's data could not be read, the
 * executor's buffer is intact. */
static void task_provider_lost(dred_rt_t *rt, const dred_task_t *t) {
  proto_msg_t d;
  memset(&d, 0, sizeof d);
  d.type = PROTO_DONE;
  d.u.done.task_id = t->task_id;
  d.u.done.status = PROTO_TASK_PROVIDER_LOST;
  d.u.done.buf = dred_rt_bufref(rt, t->dst, t->dst_pool_off, t->inst->bytes);
  dred_rt_send_master(rt, &d);
}

static void on_task(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in;
  dred_task_t *t;
  proto_msg_t r;

  char *dst = NULL, **own_p = NULL;
  int64_t dst_off = -1, *own_off = NULL;
  int *own_malloced = NULL;

  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, m->u.task.group, m->u.task.tag);
  uv_mutex_unlock(&rt->lock);
  if (in != NULL && dred_inst_state(in) == INST_ANNOUNCED && !in->inl) { /* inline: never a task */
    if (m->u.task.exec_member == in->member && in->partial == 2) {
      /* our message is our node's partial (partial.c): its block, not our operand */
      dst = in->partial_blk;
      dst_off = in->partial_blk_off;
      own_p = &in->partial_blk;
      own_off = &in->partial_blk_off;
      own_malloced = &in->partial_blk_malloced;
    } else if (m->u.task.exec_member == in->member) {
      dst = in->acc;
      dst_off = in->pool_off;
      own_p = &in->acc;
      own_off = &in->pool_off;
      own_malloced = &in->acc_malloced;
    } else { /* a recovered copy we hold for another member */
      dred_rbuf_t *b = in->repl != NULL ? rt->robust->recovered(in, m->u.task.exec_member) : NULL;
      if (b != NULL) {
        dst = b->p;
        dst_off = b->pool_off;
        own_p = &b->p;
        own_off = &b->pool_off;
        own_malloced = &b->malloced;
      }
    }
  }
  if (dst == NULL || m->u.task.count != in->count || (t = calloc(1, sizeof *t)) == NULL) {
    DRED_ERROR("task %llu for an unknown or finished reduction (tag " PROTO_KEY_FMT "): refused",
               (unsigned long long)m->u.task.task_id, PROTO_KEY_ARG(m->u.task.tag));
    memset(&r, 0, sizeof r);
    r.type = PROTO_DONE;
    r.u.done.task_id = m->u.task.task_id;
    r.u.done.status = PROTO_TASK_ERROR;
    r.u.done.error = DRED_ERR_INTERNAL;
    r.u.done.buf.pool_off = -1;
    send_to_master(rt, &r, NULL);
    return;
  }
  t->task_id = m->u.task.task_id;
  t->group_id = m->u.task.group;
  t->tag = m->u.task.tag;
  t->provider = m->u.task.provider;
  t->count = m->u.task.count;
  t->exec_is_left = m->u.task.exec_is_left;
  t->absorb = m->u.task.absorb;
  t->prov_member = m->u.task.prov_member;
  t->abs_slot = -1;
  t->scr_off = -1;
  t->buf = m->u.task.buf;
  t->inst = in;
  t->exec_member = m->u.task.exec_member;
  t->dst = dst;
  t->dst_pool_off = dst_off;
  t->own_p = own_p;
  t->own_pool_off = own_off;
  t->own_malloced = own_malloced;
  t->out_pool_off = -1;
  /* The master sends FAILED after every TASK it decided while the provider lived
   * (detector.c); should one still come after, its read over RMA would never end. */
  if (t->provider < (uint32_t)rt->world_size && rt->failed[t->provider] && task_reads_rma(rt, t)) {
    DRED_WARN("task %llu refused: provider %u failed (our buffer is intact)",
              (unsigned long long)t->task_id, t->provider);
    task_provider_lost(rt, t);
    free(t);
    return;
  }
  in->tasks_pending++;
  dred_queue_insert_tail(&rt->tasks, &t->link);
}

static void on_end(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in;
  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, m->u.end.group, m->u.end.tag);
  uv_mutex_unlock(&rt->lock);
  /* a met reduction: the master never saw it */
  if (in == NULL || dred_inst_state(in) == INST_MEET) {
    DRED_WARN("END for an unknown reduction (tag " PROTO_KEY_FMT ") ignored",
              PROTO_KEY_ARG(m->u.end.tag));
    return;
  }
  /* Buffers stay until our own tasks and replica I/O that read them are over. */
  dred_inst_set_state(in, INST_ENDED);
  in->end_status = m->u.end.status;
  /* an inline root whose fold failed: its result is not in recvbuf, whatever the master says */
  if (in->end_status == DRED_OK && in->inl_status != DRED_OK) in->end_status = in->inl_status;
  /* a receiver that never got its whole result cannot report success */
  in->end_status = dred_dist_end_status(in, in->end_status);
  /* an inline root that never got its operands cannot report success */
  if (in->end_status == DRED_OK && in->inl && in->is_root && !in->inl_folded &&
      in->kind != PROTO_KIND_BCAST) {
    DRED_ERROR("inline reduction (tag " PROTO_KEY_FMT ") ended OK without its operands",
               PROTO_KEY_ARG(in->tag));
    in->end_status = DRED_ERR_INTERNAL;
  }
  /* inline: nothing was replicated */
  if (!in->inl && DRED_RT_ROBUST_ON(rt)) rt->robust->on_reduction_end(rt, in);
  dred_rt_inst_maybe_finish(rt, in);
}

/* The root of an inline reduction gets every member's operand; END follows on the same
 * link.  A message that does not fit the reduction we called (not inline, not ours, other
 * sizes) is refused and logged: the END then reports the error. */
static void on_inline(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in;
  int rc;
  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, m->u.inl.group, m->u.inl.tag);
  uv_mutex_unlock(&rt->lock);
  if (in == NULL || dred_inst_state(in) != INST_ANNOUNCED || !in->inl || !in->is_root ||
      in->inl_folded) {
    DRED_WARN("INLINE for an unknown or finished reduction (tag " PROTO_KEY_FMT ") ignored",
              PROTO_KEY_ARG(m->u.inl.tag));
    return;
  }
  in->inl_folded = 1;
  if (m->u.inl.n != in->group->n || m->u.inl.bytes != in->bytes ||
      (in->kind == PROTO_KIND_REDUCE && m->u.inl.root != in->member)) {
    DRED_ERROR("INLINE for reduction (tag " PROTO_KEY_FMT ") does not match it (%u x %llu bytes)",
               PROTO_KEY_ARG(in->tag), m->u.inl.n, (unsigned long long)m->u.inl.bytes);
    in->inl_status = DRED_ERR_INTERNAL;
    return;
  }
  if ((rc = dred_dp_inline_fold(rt, in, m->u.inl.data, m->u.inl.n)) != DRED_OK)
    in->inl_status = rc;
}

void dred_rt_send_peer(dred_rt_t *rt, uint32_t peer, const proto_msg_t *m) {
  if (peer < (uint32_t)rt->world_size && !rt->failed[peer] &&
      dred_net_send(&rt->net, (int)peer, m, NULL) != 0)
    DRED_WARN("could not send %s to worker %u", proto_type_name(m->type), peer);
}

/* A worker on another node reads our memory by MPI_Rget (SERVE on) or has finished (off).
 * MPICH's dynamic-window RMA is served by the target's progress engine, and our runtime
 * thread otherwise makes no MPI call: while anyone reads, each turn pokes MPI. */
static void on_serve(dred_rt_t *rt, int src, const proto_msg_t *m) {
  if (src <= 0 || src >= rt->world_size) return;
  if (m->u.serve.on) {
    rt->serving[src]++;
    rt->nserving++;
  } else if (rt->serving[src] > 0) {
    rt->serving[src]--;
    rt->nserving--;
  }
}


/* dred-master declared worker w failed: record it (rt->failed is this process's only
 * record of who is dead), stop our work with w, then let the robust layer, the meeting
 * place and the node's memory budget react. */
static void worker_failed_stop(dred_rt_t *rt, uint32_t w);

static void worker_failed(dred_rt_t *rt, uint32_t w) {
  if (w >= (uint32_t)rt->world_size || rt->failed[w]) return;
  rt->failed[w] = 1;
  rt->nfailed++;
  rt->robust_engaged = 1;
  if (w == (uint32_t)rt->world_rank) {
    /* A false detection (this process was too slow to answer): the master no longer
     * counts on us, so nothing we hold will complete.  End everything explicitly. */
    DRED_ERROR("dred-master declared this process failed (it was silent too long; raise "
               "DRED_FAIL_TIMEOUT_MS?): ending every reduction");
    dred_rt_fail_everything(rt, DRED_ERR_PROC_FAILED);
  } else {
    worker_failed_stop(rt, w);
    rt->robust->on_member_failed(rt, w);
  }
  /* slots of the meeting place that wait for it end now (after failed[] is set) */
  dred_meetpath_on_failed(rt, w);
  (void)dred_partial_turn(rt); /* members whose node partial it was to fold, or cannot come */
  dred_nodemem_on_failed(rt, w); /* its share of the node's budget */
}

/* Our work with dead worker w stops: its link, calls waiting for it to hold a copy, and
 * tasks reading its memory over RMA. */
static void worker_failed_stop(dred_rt_t *rt, uint32_t w) {
  dred_queue_t *q, *n;
  DRED_WARN("dred-master reports worker %u failed", w);
  /* What w sent before it died is still read (a copy whole in our socket may be what a
   * RECOVER asks for: recover.c waits for the link to drain). */
  dred_net_drop_draining(&rt->net, (int)w, PEER_DRAIN_MS);
  dred_handover_holder_failed(rt, (int)w); /* calls waiting for w to hold a copy go on */
  /* Tasks reading w over RMA would wait forever: stop them and tell the master. */
  DRED_QUEUE_FOREACH_SAFE(q, n, &rt->tasks) {
    dred_task_t *t = DRED_QUEUE_DATA(q, dred_task_t, link);
    if (t->provider != w || !task_reads_rma(rt, t)) continue; /* shared memory goes on */
    if (t->started) dred_dp_task_abort(rt, t); /* our buffer is intact: built out of place */
    task_provider_lost(rt, t);
    DRED_WARN("task %llu stopped: provider %u failed (our buffer is intact)",
              (unsigned long long)t->task_id, w);
    dred_queue_remove(q);
    t->inst->tasks_pending--;
    dred_rt_inst_maybe_finish(rt, t->inst);
    free(t);
  }
  /* Copies on their way to or from w need nothing here: net.c never delivers a copy cut
   * short, and our sends to w end with its link. */
}

/* The master's link closed before SHUTDOWN: the master process is gone -- every reduction
 * ends now with DRED_ERR_MASTER_LOST instead of after the watchdog's timeout. */
static void master_lost(dred_rt_t *rt) {
  /* Just back from a stall longer than the failure timeout: the master most likely
   * declared us failed and dropped the link; say so, it is what the user must fix. */
  if (rt->stall_ns > rt->cfg.fail_timeout_ms * 1000000ull &&
      uv_hrtime() - rt->stall_end_ns < 2 * rt->cfg.heartbeat_ms * 1000000ull)
    DRED_ERROR("the control link to dred-master closed: master lost -- this process had "
               "just been stalled for %llu ms (stopped, or kept off the CPU), longer than "
               "DRED_FAIL_TIMEOUT_MS=%llu: dred-master has most likely declared it failed",
               (unsigned long long)(rt->stall_ns / 1000000ull),
               (unsigned long long)rt->cfg.fail_timeout_ms);
  else
    DRED_ERROR("the control link to dred-master closed: master lost");
  dred_boot_forget(&rt->boot, 0); /* its socket, if on our node: it cannot */
  dred_rt_fail_everything(rt, DRED_ERR_MASTER_LOST);
}
static int recv_messages(dred_rt_t *rt) {
  proto_msg_t m, r;
  int src, n, got = 0;

  for (n = 0; n < RECV_BATCH; n++) {
    int rc = dred_net_recv(&rt->net, &src, &m);
    if (rc == 0) break;
    got++;
    if (rc == DRED_NET_NOFD) {
      /* This process could not open a link (net.c logged the limit).  To a peer: the next
       * message dials again, and the master judges the peer, not us.  To the master: what
       * was queued on it is gone, so every reduction ends now, saying why, instead of
       * waiting out DRED_MASTER_TIMEOUT_MS and calling the master lost. */
      if (src == 0 && !rt->shutdown && !rt->dead) {
        DRED_ERROR("this process could not open its control link to dred-master: out of file "
                   "descriptors (raise `ulimit -n`); its reductions end with an error");
        dred_rt_fail_everything(rt, DRED_ERR_INTERNAL);
      }
      continue;
    }
    if (rc == DRED_NET_LOST) {
      /* The master's link, before SHUTDOWN: the master process is gone -- every reduction
       * ends now with DRED_ERR_MASTER_LOST instead of after the watchdog's timeout.  A
       * peer's: the master says whether it failed (FAILED), so nothing to do here. */
      if (src == 0 && !rt->shutdown && !rt->dead) {
        /* After our BYE the master closing its links is its shutdown: its SHUTDOWN may sit
         * unread on its other link (it dialled us too, and closes both at once).  Give that
         * a moment before calling the master lost (the turn checks, master_eof_ns). */
        if (rt->bye_sent) {
          if (rt->master_eof_ns == 0) rt->master_eof_ns = uv_hrtime();
        } else {
          master_lost(rt);
        }
      }
      continue;
    }
    /* a failed peer's link drains only for the copies it sent before it died */
    if (src != 0 && src < rt->world_size && rt->failed[src] &&
        (m.type == PROTO_REPLICA_ACK || m.type == PROTO_SERVE))
      continue;
    if (src != 0) {
      const char *why = m.type == PROTO_REPLICA
                            ? dred_group_copy_refused(rt, m.u.replica.group, m.u.replica.member, src)
                            : NULL;
      if (why != NULL) {
        /* Not a copy a conforming worker sends us: dropped, bytes and all (no ACK: the
         * sender of a shared-memory copy is not one we keep anything for). */
        DRED_ERROR("replica header from rank %d (member %u, tag " PROTO_KEY_FMT ") refused: %s",
                   src, m.u.replica.member, PROTO_KEY_ARG(m.u.replica.tag), why);
        free(dred_net_take_payload(&rt->net, NULL));
      } else if (m.type == PROTO_REPLICA)
        rt->robust->on_replica(rt, src, &m);
      else if (m.type == PROTO_REPLICA_ACK)
        rt->robust->on_replica_ack(rt, src, &m);
      else if (m.type == PROTO_SERVE)
        on_serve(rt, src, &m);
      else
        DRED_WARN("%s from rank %d (not the master) ignored", proto_type_name(m.type), src);
      continue;
    }
    rt->last_master_ns = uv_hrtime();
    switch (m.type) {
      case PROTO_TASK:
        on_task(rt, &m);
        break;
      case PROTO_END:
        on_end(rt, &m);
        break;
      case PROTO_INLINE:
        on_inline(rt, &m);
        break;
      case PROTO_DATA:
        dred_dist_on_data(rt, &m);
        break;
      case PROTO_PUSH:
        dred_dist_on_push(rt, &m);
        break;
      case PROTO_PING:
        /* Answered after our BYE too, until SHUTDOWN: a process that finalized early
         * waits for the others and must neither be declared failed nor declare the
         * master lost meanwhile (the master keeps pinging it and counts the answers it
         * must take in before its MPI_Finalize).  But once we gave up on the master (it
         * was silent too long -- perhaps only stalled) we take part in nothing more:
         * staying silent lets a master that is in fact alive declare us failed, which
         * ends the reductions other members still wait on instead of leaving them
         * hanging. */
        if (rt->shutdown || rt->dead) break;
        /* A link already closing: its LOST is next in the inbox and says what happened;
         * a failed PONG would only add noise before it. */
        if (!dred_net_connected(&rt->net, 0)) break;
        memset(&r, 0, sizeof r);
        r.type = PROTO_PONG;
        r.u.ping.seq = m.u.ping.seq;
        dred_dp_pool_stats(rt, &r);
        uv_mutex_lock(&rt->lock);
        r.u.ping.meet_done = rt->meet_done;
        uv_mutex_unlock(&rt->lock);
        send_to_master(rt, &r, NULL);
        break;
      case PROTO_SHUTDOWN:
        if (!rt->bye_sent) { /* never leave while the application still counts on us */
          DRED_ERROR("SHUTDOWN from dred-master before this process said BYE: ignored");
          break;
        }
        rt->shutdown = 1;
        if (DRED_RT_ROBUST_ON(rt)) rt->robust->on_shutdown(rt);
        break;
      case PROTO_FAILED:
        if (m.u.failed.worker < (uint32_t)rt->world_size) { /* its reads are over */
          rt->nserving -= rt->serving[m.u.failed.worker];
          rt->serving[m.u.failed.worker] = 0;
        }
        /* its control socket, if on our node: it cannot remove it, and the last of us to
         * leave removes the directory only once it is empty */
        dred_boot_forget(&rt->boot, (int)m.u.failed.worker);
        worker_failed(rt, m.u.failed.worker);
        break;
      case PROTO_RECOVER:
        rt->robust_engaged = 1;
        dred_partial_on_recover(rt, &m); /* our node partial no longer stands for us */
        rt->robust->on_recover(rt, &m);
        break;
      default:
        DRED_WARN("unexpected %s from dred-master ignored", proto_type_name(m.type));
        break;
    }
  }
  return got;
}

/* ---- 4. tasks ------------------------------------------------------------------------ */

static int run_tasks(dred_rt_t *rt) {
  dred_queue_t *q = dred_queue_head(&rt->tasks);
  dred_task_t *t;
  int finished = 0, status = 0, error = 0, did;
  proto_msg_t m;
  dred_inst_t *in;

  if (q == NULL) return 0;
  t = DRED_QUEUE_DATA(q, dred_task_t, link);
  did = dred_dp_task_step(rt, t, &finished, &status, &error);
  if (!finished) return did;

  in = t->inst;
  memset(&m, 0, sizeof m);
  m.type = PROTO_DONE;
  m.u.done.task_id = t->task_id;
  m.u.done.status = (uint32_t)status;
  m.u.done.error = error;
  m.u.done.exec_ns = uv_hrtime() - t->t0;
  m.u.done.buf = dred_rt_bufref(rt, t->dst, t->dst_pool_off, t->inst->bytes);
  m.u.done.absorbed = (uint8_t)(status == PROTO_TASK_OK && t->absorbing);
  send_to_master(rt, &m, NULL);
  if (status == PROTO_TASK_OK) {
    rt->tasks_run++;
    rt->bytes_combined += in->bytes;
  } else {
    DRED_ERROR("task %llu (tag " PROTO_KEY_FMT ") failed: %s", (unsigned long long)t->task_id,
               PROTO_KEY_ARG(t->tag), dred_status_str(error));
  }
  dred_queue_remove(&t->link);
  free(t);
  in->tasks_pending--;
  dred_rt_inst_maybe_finish(rt, in);
  return 1;
}

/* ---- watchdog: the master must be heard from ----------------------------------------- */

void dred_rt_fail_everything(dred_rt_t *rt, int status) {
  dred_keymap_node_t *k, *kn;
  dred_queue_t *q;

  uv_mutex_lock(&rt->lock);
  rt->dead = 1;
  rt->dead_status = status;
  uv_mutex_unlock(&rt->lock);
  dred_handover_release_all(rt); /* calls waiting for an off-node copy return */
  while ((q = dred_queue_head(&rt->tasks)) != NULL) {
    dred_task_t *t = DRED_QUEUE_DATA(q, dred_task_t, link);
    dred_queue_remove(q);
    if (t->started) dred_dp_task_abort(rt, t);
    t->inst->tasks_pending--;
    free(t);
  }
  DRED_KEYMAP_FOREACH_SAFE(k, kn, &rt->inst) {
    dred_inst_t *in = DRED_KEYMAP_DATA(k, dred_inst_t, knode);
    if (dred_inst_state(in) == INST_MEET) continue; /* below: another thread may be finishing it */
    uv_mutex_lock(&rt->lock);
    if (dred_inst_state(in) == INST_SUBMITTED) dred_queue_remove(&in->qlink);
    uv_mutex_unlock(&rt->lock);
    dred_inst_set_state(in, INST_ENDED);
    in->end_status = status;
    dred_rt_inst_maybe_finish(rt, in); /* replica I/O still reading sendbuf finishes first */
  }
  dred_meetpath_fail_all(rt, status);
}

/* The master watch: dred-master silent for DRED_MASTER_TIMEOUT_MS is lost (its node may be
 * gone without a word; a master that merely died closed our link and was seen at once).
 * libuv runs due timers before it reads sockets, so after this process was stalled (a
 * SIGSTOP, a paused VM, a thread kept off the CPU) this tick comes before the PINGs that
 * waited in the socket meanwhile: the silence is ours.  Such a late tick judges nothing
 * (the master's detector does the same, master/detector.c); the next one, a heartbeat
 * later, comes after the loop has read what arrived. */
static void on_watch(uv_timer_t *timer) {
  dred_rt_t *rt = timer->data;
  uint64_t now = uv_hrtime(), limit = rt->cfg.master_timeout_ms * 1000000ull;
  uint64_t silent = now - rt->last_master_ns, since_tick = now - rt->last_watch_ns;
  rt->last_watch_ns = now;
  if (since_tick > 2 * rt->cfg.heartbeat_ms * 1000000ull) { /* for the link's LOST message */
    rt->stall_ns = since_tick;
    rt->stall_end_ns = now;
  }
  if (since_tick > limit / 2) {
    DRED_WARN("master watch ran %llu ms late: this process was stalled; judging dred-master "
              "again once its messages are read", (unsigned long long)(since_tick / 1000000ull));
    return;
  }
  if (!rt->dead && silent > limit) {
    DRED_ERROR("dred-master silent for %llu ms (DRED_MASTER_TIMEOUT_MS=%llu): master lost",
               (unsigned long long)(silent / 1000000ull),
               (unsigned long long)rt->cfg.master_timeout_ms);
    dred_rt_fail_everything(rt, DRED_ERR_MASTER_LOST);
  }
}

/* ---- the loop ------------------------------------------------------------------------ */

/* dred_finalize waits DRED_FINALIZE_WAIT_S for this process's pending reductions (a member
 * that never calls would otherwise hold it forever); then each is abandoned: the master
 * ends it with DRED_ERR_SHUTDOWN for every member, and our END for it releases what we
 * hold.  One pass over the table, once; reductions not yet announced send their ABANDON
 * right after their READY (announce). */
static void finalize_deadline(dred_rt_t *rt) {
  dred_keymap_node_t *k, *kn;
  uint64_t deadline;
  int n = 0;
  if (rt->abandon_pass || rt->bye_sent) return;
  uv_mutex_lock(&rt->lock);
  deadline = rt->bye_requested ? rt->finalize_deadline_ns : 0;
  uv_mutex_unlock(&rt->lock);
  if (deadline == 0 || uv_hrtime() < deadline) return;
  rt->abandon_pass = 1;
  /* After bye_requested no application thread inserts; only this thread removes. */
  DRED_KEYMAP_FOREACH_SAFE(k, kn, &rt->inst) {
    dred_inst_t *in = DRED_KEYMAP_DATA(k, dred_inst_t, knode);
    inst_state_t st = dred_inst_state(in);
    if (st == INST_ENDED || st == INST_MEET) continue; /* met: the sweep's */
    n++;
    send_abandon(rt, in);
  }
  if (n > 0)
    DRED_ERROR("dred_finalize: %d reduction(s) still pending after DRED_FINALIZE_WAIT_S=%llu s "
               "(a member never called them?): ending them with DRED_ERR_SHUTDOWN", n,
               (unsigned long long)rt->cfg.finalize_wait_s);
}

static void maybe_bye(dred_rt_t *rt) {
  proto_msg_t m;
  int ready;
  if (rt->bye_sent) return;
  uv_mutex_lock(&rt->lock);
  /* Not once we gave up on the master: BYE tells it this process will take part in the
   * collective MPI teardown, which dred_finalize then skips (the master may have been only
   * stalled; reading our BYE it would wait in MPI for processes that are gone). */
  ready = rt->bye_requested && !rt->dead && rt->ninst == 0 && dred_queue_empty(&rt->submitq);
  uv_mutex_unlock(&rt->lock);
  if (!ready) return;
  memset(&m, 0, sizeof m);
  m.type = PROTO_BYE;
  uv_mutex_lock(&rt->lock);
  m.u.ping.meet_done = rt->meet_done; /* the journal's total (master/dispatch.c) */
  uv_mutex_unlock(&rt->lock);
  send_to_master(rt, &m, NULL);
  rt->bye_sent = 1;
}

static void noop_idle(uv_idle_t *h) { (void)h; }
static void noop_async(uv_async_t *h) { (void)h; }

static void wake_turn(uv_timer_t *t) { (void)t; } /* the turn after it does the work */

/* dred_finalize: reductions that met in shared memory and that no application thread is
 * waiting on are settled here (meetpath.c), and ended past the deadline.  Returns when to
 * look again (0: nothing pending): a slot deciding wakes nobody in this process. */
#define MEET_SWEEP_NS 2000000ull
static uint64_t meet_sweep(dred_rt_t *rt) {
  uint64_t deadline, now;
  int pending;
  uv_mutex_lock(&rt->lock);
  pending = rt->bye_requested && !dred_queue_empty(&rt->meetq);
  deadline = rt->finalize_deadline_ns;
  uv_mutex_unlock(&rt->lock);
  if (!pending) return 0;
  now = uv_hrtime();
  return dred_meetpath_sweep(rt, deadline != 0 && now >= deadline) > 0 ? now + MEET_SWEEP_NS : 0;
}

/* One turn of work after every wake-up of the loop (see the comment at the top). */
static void on_turn(uv_check_t *h) {
  dred_rt_t *rt = h->data;
  int now_work, tasks, mpi_wait, spin, stop, relay = 0;
  unsigned robust;
  uint64_t t0 = uv_hrtime(), t1, t2, t3, t4, turn;
  int progress = drain_submissions(rt) > 0;
  if (!dred_queue_empty(&rt->relayq)) relay = dred_relay_turn(rt); /* HAVEs after READYs */
  progress |= relay != 0;
  if (!dred_queue_empty(&rt->partialq)) progress |= dred_partial_turn(rt);
  if (!dred_queue_empty(&rt->pushq)) progress |= dred_dist_turn(rt);
  if (!dred_queue_empty(&rt->unpackq)) progress |= dred_dist_unpack_turn(rt);
  progress |= recv_messages(rt) > 0;
  t1 = uv_hrtime();
  progress |= run_tasks(rt) > 0;
  t2 = uv_hrtime();
  {
    uint64_t due = 0, admit_due = 0, meet_due, now;
    /* reductions waiting for pool room: a release above may have made some; all go once
     * dred_finalize stopped waiting */
    if (!dred_queue_empty(&rt->poolq))
      progress |= dred_admit_progress(rt, announce, rt->abandon_pass, &admit_due) > 0;
    if (DRED_RT_ROBUST_ON(rt)) rt->robust->on_turn(rt, &due);
    if (admit_due != 0 && (due == 0 || admit_due < due)) due = admit_due;
    if ((meet_due = meet_sweep(rt)) != 0 && (due == 0 || meet_due < due)) due = meet_due;
    progress |= dred_meetpath_turn(rt);
    /* armed once per due time, not every turn: turns run back to back while busy */
    if (due != 0 && due != rt->due_armed_ns && (now = uv_hrtime()) < due) {
      uv_timer_start(&rt->due, wake_turn, (due - now + 999999) / 1000000, 0); /* ms, up */
      rt->due_armed_ns = due;
    }
  }
  t3 = uv_hrtime();
  finalize_deadline(rt);
  maybe_bye(rt);
  if (rt->nserving > 0) { /* drive MPI's progress for the readers (on_serve) */
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, DRED_MPI_PROBE_TAG, rt->priv, &flag, MPI_STATUS_IGNORE);
  }
  /* A turn is how long PINGs may wait: say so when one is longer than a heartbeat (only
   * for a new longest turn, so an overloaded node does not flood the log), with where the
   * time went, since a long turn is what makes a live process look silent. */
  t4 = uv_hrtime();
  turn = t4 - t0;
  if (turn > rt->max_turn_ns) {
    rt->max_turn_ns = turn;
    if (turn > rt->cfg.heartbeat_ms * 1000000ull)
      DRED_WARN("runtime loop turn took %llu ms (heartbeat %llu ms): PINGs waited that long "
                "(messages %llu ms, tasks %llu ms, replicas %llu ms, rest %llu ms)",
                (unsigned long long)(turn / 1000000ull), (unsigned long long)rt->cfg.heartbeat_ms,
                (unsigned long long)((t1 - t0) / 1000000ull),
                (unsigned long long)((t2 - t1) / 1000000ull),
                (unsigned long long)((t3 - t2) / 1000000ull),
                (unsigned long long)((t4 - t3) / 1000000ull));
  }
  /* The master's link closed after our BYE and no SHUTDOWN followed: it is lost after all. */
  if (rt->master_eof_ns != 0 && !rt->shutdown && !rt->dead &&
      uv_hrtime() - rt->master_eof_ns > MASTER_EOF_GRACE_NS)
    master_lost(rt);
  uv_mutex_lock(&rt->lock);
  stop = (rt->shutdown && rt->net.writes == 0) || (rt->dead && rt->bye_requested);
  tasks = !dred_queue_empty(&rt->tasks);
  now_work = !dred_queue_empty(&rt->submitq);
  uv_mutex_unlock(&rt->lock);
  if (stop) {
    uv_stop(&rt->loop);
    return;
  }
  /* What the CPU can do at once, against what waits for MPI: the head task (a combine
   * steps forward every turn and counts as progress; a read from another node may not),
   * other nodes reading from us, RECOVERs parked for a copy (see the top). */
  if (dred_net_drain_check(&rt->net) > 0 && DRED_RT_ROBUST_ON(rt)) rt->robust->on_peer_drained(rt);
  robust = DRED_RT_ROBUST_ON(rt) ? rt->robust->waiting(rt) : 0;
  now_work = now_work || !dred_queue_empty(&rt->net.inbox) || (robust & DRED_ROBUST_RETRY) ||
             !dred_queue_empty(&rt->unpackq) || relay == 2; /* a part, a step per turn */
  mpi_wait = tasks || rt->nserving > 0 || (robust & DRED_ROBUST_PARKED);
  if (progress) rt->progress_ns = t4;
  spin = now_work || (mpi_wait && t4 - rt->progress_ns <= SPIN_NS) ||
         (rt->master_eof_ns != 0 && !rt->shutdown && !rt->dead); /* the grace above */
  if (spin) uv_idle_start(&rt->spin, noop_idle);
  else uv_idle_stop(&rt->spin);
  if (!spin && mpi_wait) {
    if (!uv_is_active((uv_handle_t *)&rt->mpi_poll)) uv_timer_start(&rt->mpi_poll, wake_turn, 1, 1);
  } else {
    uv_timer_stop(&rt->mpi_poll);
  }
}


static void rt_main(void *arg) {
  dred_rt_t *rt = arg;
  pthread_setname_np(pthread_self(), "dred-runtime"); /* for top -H, perf, gdb */
  /* Held for as long as this thread runs: if the process is killed, the master on this
   * node learns it from the kernel at once (common/deathwatch.h). */
  if (rt->watch != NULL && dred_watch_hold(rt->watch, rt->world_rank) != DRED_OK)
    DRED_WARN("death watch slot not held: dred-master sees this process die by its link");
  uv_run(&rt->loop, UV_RUN_DEFAULT);
  dred_watch_release(rt->watch, rt->world_rank);
}

int dred_rt_start(dred_rt_t *rt) {
  int rc;
  if (dred_keymap_init(&rt->inst) != DRED_OK) return DRED_ERR_NOMEM;
  dred_queue_init(&rt->submitq);
  dred_queue_init(&rt->poolq);
  dred_queue_init(&rt->groups);
  dred_queue_init(&rt->tasks);
  dred_queue_init(&rt->pushq);
  dred_queue_init(&rt->unpackq);
  dred_queue_init(&rt->handover_tickets);
  if ((rt->failed = calloc((size_t)rt->world_size, 1)) == NULL ||
      (rt->serving = calloc((size_t)rt->world_size, sizeof *rt->serving)) == NULL)
    return DRED_ERR_NOMEM;
  if ((rc = uv_mutex_init(&rt->lock)) != 0 || (rc = uv_cond_init(&rt->handover_cv)) != 0)
    return DRED_ERR_INTERNAL;
  rt->net.data = rt;
  if (uv_async_init(&rt->loop, &rt->wake, noop_async) != 0 ||
      uv_check_init(&rt->loop, &rt->turn) != 0 || uv_idle_init(&rt->loop, &rt->spin) != 0 ||
      uv_timer_init(&rt->loop, &rt->mpi_poll) != 0 || uv_timer_init(&rt->loop, &rt->watch_timer) != 0 ||
      uv_timer_init(&rt->loop, &rt->due) != 0)
    return DRED_ERR_INTERNAL;
  rt->turn.data = rt;
  uv_check_start(&rt->turn, on_turn);
  uv_idle_start(&rt->spin, noop_idle); /* a first turn at once */
  rt->watch_timer.data = rt;
  rt->last_master_ns = rt->last_watch_ns = uv_hrtime();
  uv_timer_start(&rt->watch_timer, on_watch, rt->cfg.heartbeat_ms, rt->cfg.heartbeat_ms);
  if (uv_thread_create(&rt->thread, rt_main, rt) != 0) {
    DRED_ERROR("cannot start the runtime thread");
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

static void close_cb(uv_handle_t *h) { (void)h; }

void dred_rt_stop(dred_rt_t *rt) {
  uv_thread_join(&rt->thread);
  DRED_INFO("runtime: longest loop turn %.3f ms; %llu inline READY(s) sent by the calling "
            "thread", (double)rt->max_turn_ns / 1e6, (unsigned long long)rt->announced_now);
  if (rt->meet != NULL)
    DRED_INFO("meeting place: %llu reduction(s) met in shared memory, %llu went through "
              "dred-master because their slot was still held (DRED_MEET)",
              (unsigned long long)rt->meet_done, (unsigned long long)rt->meet_spilled);
  {
    uint64_t cached, streamed;
    char classes[512];
    dred_shm_copy_counts(&cached, &streamed);
    dred_shm_copy_describe(classes, sizeof classes);
    if (cached + streamed > 0)
      DRED_DEBUG("copies into shared memory measured (DRED_SHM_STREAM=2): %llu through the cache, "
                 "%llu streamed; by size, ticks per KiB cached/streamed and the way now: %s",
                 (unsigned long long)cached, (unsigned long long)streamed, classes);
    if (dred_shm_result_streamed() > 0)
      DRED_DEBUG("results written past the cache: %.1f MiB (lib/shm/copy.c, a large result)",
                 (double)dred_shm_result_streamed() / 1048576.0);
  }
  if (rt->relay_led > 0)
    DRED_INFO("node relay: led %llu cross-node bcast(s) or allreduce(s) for this node",
              (unsigned long long)rt->relay_led);
  if (rt->partial_folded > 0 || rt->partial_alone > 0)
    DRED_INFO("node partials: folded %llu here, covering %llu member(s); %llu member(s) went "
              "to dred-master alone after waiting in a partial slot",
              (unsigned long long)rt->partial_folded, (unsigned long long)rt->partial_covered,
              (unsigned long long)rt->partial_alone);
  if (rt->relay_followed > 0)
    DRED_INFO("node relay: copied %llu cross-node bcast(s) or allreduce result(s) from the node's leader",
              (unsigned long long)rt->relay_followed);
  if (rt->relay_split > 0)
    DRED_INFO("node relay: %llu result(s) nobody waited on were copied by the runtime thread "
              "a step per turn, over several turns",
              (unsigned long long)rt->relay_split);
  if (rt->pool_waited > 0)
    DRED_INFO("%llu reduction(s) waited for room in the shared-memory pool (DRED_POOL_MB); "
              "%llu of them went ahead on private memory when nothing freed room for %llu ms",
              (unsigned long long)rt->pool_waited, (unsigned long long)rt->pool_stalls,
              (unsigned long long)DRED_ADMIT_STALL_MS);
  if (rt->pool_fallbacks > 0)
    DRED_WARN("%llu buffer(s) did not fit this worker's shared-memory pool (peak %.1f of %.1f "
              "MiB, DRED_POOL_MB) and went to private memory: the slower MPI_Rget path",
              (unsigned long long)rt->pool_fallbacks, (double)rt->pool.peak / 1048576.0,
              (double)rt->pool.size / 1048576.0);
  uv_close((uv_handle_t *)&rt->watch_timer, close_cb);
  uv_close((uv_handle_t *)&rt->wake, close_cb);
  uv_close((uv_handle_t *)&rt->turn, close_cb);
  uv_close((uv_handle_t *)&rt->spin, close_cb);
  uv_close((uv_handle_t *)&rt->mpi_poll, close_cb);
  uv_close((uv_handle_t *)&rt->due, close_cb);
  dred_net_close(&rt->net);
  uv_run(&rt->loop, UV_RUN_DEFAULT);
  uv_loop_close(&rt->loop);
  dred_watch_close(rt->watch);
  rt->watch = NULL;
  dred_boot_finish(&rt->boot);
  free(rt->serving);
  rt->serving = NULL;
  dred_keymap_free(&rt->inst);
}
