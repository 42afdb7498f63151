/*
 * runtime.c -- libdred's runtime thread.
 *
 * One thread per process owns all of dred's MPI traffic.  Its loop:
 *   1. run due libuv timers (the master watchdog) without blocking;
 *   2. take new reductions handed over by application threads (submitq): prepare the
 *      accumulator, define the group to the master once, send READY;
 *   3. receive control messages (TASK, END, PING, SHUTDOWN, ...);
 *   4. advance the head task by one time slice (dataplane.c), report DONE when finished;
 *   5. sleep with adaptive back-off if none of that found work (common/poller.h).
 * Futures complete here when the master's END arrives.  The loop ends after SHUTDOWN
 * (everyone said BYE) or when the master is declared lost.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/status.h"
#include "../master/sched.h"
#include "runtime.h"

#define RECV_BATCH 64

static unsigned inst_bucket(uint64_t group_id, int64_t tag) {
  uint64_t h = group_id ^ ((uint64_t)tag * 0x9e3779b97f4a7c15ull);
  h ^= h >> 29;
  return (unsigned)(h % DRED_INST_BUCKETS);
}

dred_inst_t *dred_rt_find(dred_rt_t *rt, uint64_t group_id, int64_t tag) {
  dred_queue_t *q, *h = &rt->inst[inst_bucket(group_id, tag)];
  DRED_QUEUE_FOREACH(q, h) {
    dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, hlink);
    if (in->group_id == group_id && in->tag == tag) return in;
  }
  return NULL;
}

void dred_rt_insert(dred_rt_t *rt, dred_inst_t *in) {
  dred_queue_insert_tail(&rt->inst[inst_bucket(in->group_id, in->tag)], &in->hlink);
  rt->ninst++;
}

proto_buf_t dred_rt_bufref(const char *p, int64_t pool_off) {
  proto_buf_t b;
  MPI_Aint a = 0;
  MPI_Get_address(p, &a);
  b.addr = (uint64_t)a;
  b.pool_off = pool_off;
  return b;
}

/* End an instance: release its buffers, complete its future, forget it. */
static void inst_finish(dred_rt_t *rt, dred_inst_t *in, int status) {
  /* a packed or image result reaches recvbuf only now, and only if it is the result */
  if (status == DRED_OK && in->is_root) status = dred_dp_unpack_result(rt, in);
  dred_dp_acc_release(rt, in);
  if (in->type_hold != MPI_DATATYPE_NULL) MPI_Type_free(&in->type_hold);
  uv_mutex_lock(&rt->lock);
  dred_queue_remove(&in->hlink);
  rt->ninst--;
  uv_mutex_unlock(&rt->lock);
  if (status != DRED_OK)
    DRED_INFO("reduction (group %016llx, tag %lld) ended: %s", (unsigned long long)in->group_id,
              (long long)in->tag, dred_status_str(status));
  dred_future_complete(in->fut, status);
  free(in);
}

void dred_rt_inst_maybe_finish(dred_rt_t *rt, dred_inst_t *in) {
  if (in->state == INST_ENDED && in->tasks_pending == 0 && in->io_pending == 0)
    inst_finish(rt, in, in->end_status);
}

static void send_to_master(dred_rt_t *rt, const proto_msg_t *m, const uint32_t *workers) {
  if (dred_chan_send(&rt->chan, 0, m, workers) != 0)
    DRED_ERROR("could not send %s to dred-master", proto_type_name(m->type));
}

void dred_rt_send_master(dred_rt_t *rt, const proto_msg_t *m) { send_to_master(rt, m, NULL); }

/* ---- 2. submissions ------------------------------------------------------------------ */

static void announce(dred_rt_t *rt, dred_inst_t *in) {
  proto_msg_t m;
  int rc;

  if (!in->group->defined) {
    memset(&m, 0, sizeof m);
    m.type = PROTO_GROUP;
    m.u.group.id = in->group->id;
    m.u.group.n = in->group->n;
    send_to_master(rt, &m, in->group->workers);
    in->group->defined = 1;
  }
  memset(&m, 0, sizeof m);
  /* Replicas first: until the neighbour has our header, a crash here loses the operand
   * for good, so that window is kept as short as one copy of it. */
  dred_repl_on_announce(rt, in, &m);
  if ((rc = dred_dp_acc_prepare(rt, in)) != DRED_OK) {
    /* The other members are already on their way: tell the master this member's
     * reduction failed, so every member's future ends instead of waiting for us. */
    DRED_ERROR("reduction (tag %lld) cannot start here: %s", (long long)in->tag,
               dred_status_str(rc));
    in->acc = NULL;
  }
  m.type = PROTO_READY;
  m.u.ready.group = in->group_id;
  m.u.ready.tag = in->tag;
  m.u.ready.member = in->member;
  m.u.ready.root = in->root;
  m.u.ready.count = in->count;
  m.u.ready.type_size = in->ti.size;
  m.u.ready.extent = in->ti.extent;
  m.u.ready.type_sig = in->ti.sig;
  m.u.ready.op = (int32_t)MPI_Op_c2f(in->op);
  m.u.ready.op_is_user = (uint8_t)in->ti.op_is_user;
  m.u.ready.commutative = (uint8_t)in->ti.commutative;
  if (in->acc != NULL) {
    m.u.ready.buf = dred_rt_bufref(in->acc, in->pool_off);
  } else {
    /* No buffer: announce an impossible element size so the master ends the instance
     * with MISMATCH for everyone (the log line above says why). */
    m.u.ready.type_size = 0;
    m.u.ready.buf.pool_off = -1;
  }
  send_to_master(rt, &m, NULL);
  in->state = INST_ANNOUNCED;
  rt->parked_retry = 1; /* a parked RECOVER may have been waiting for this call */
}

static int drain_submissions(dred_rt_t *rt) {
  dred_queue_t local, *q;
  int n = 0;
  uv_mutex_lock(&rt->lock);
  if (dred_queue_empty(&rt->submitq)) {
    uv_mutex_unlock(&rt->lock);
    return 0;
  }
  /* move the whole queue to a local head */
  local = rt->submitq;
  local.next->prev = &local;
  local.prev->next = &local;
  dred_queue_init(&rt->submitq);
  uv_mutex_unlock(&rt->lock);
  while ((q = dred_queue_head(&local)) != NULL) {
    dred_queue_remove(q);
    announce(rt, DRED_QUEUE_DATA(q, dred_inst_t, qlink));
    n++;
  }
  return n;
}

/* ---- 3. messages from the master ---------------------------------------------------- */

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
  if (in != NULL && in->state == INST_ANNOUNCED) {
    if (m->u.task.exec_member == in->member) {
      dst = in->acc;
      dst_off = in->pool_off;
      own_p = &in->acc;
      own_off = &in->pool_off;
      own_malloced = &in->acc_malloced;
    } else { /* a recovered copy we hold for another member */
      dred_queue_t *q;
      DRED_QUEUE_FOREACH(q, &in->rbufs) {
        dred_rbuf_t *b = DRED_QUEUE_DATA(q, dred_rbuf_t, link);
        if (b->member == m->u.task.exec_member) {
          dst = b->p;
          dst_off = b->pool_off;
          own_p = &b->p;
          own_off = &b->pool_off;
          own_malloced = &b->malloced;
        }
      }
    }
  }
  if (dst == NULL || m->u.task.count != in->count || (t = calloc(1, sizeof *t)) == NULL) {
    DRED_ERROR("task %llu for an unknown or finished reduction (tag %lld): refused",
               (unsigned long long)m->u.task.task_id, (long long)m->u.task.tag);
    memset(&r, 0, sizeof r);
    r.type = PROTO_DONE;
    r.u.done.task_id = m->u.task.task_id;
    r.u.done.status = SCHED_TASK_ERROR;
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
  t->buf = m->u.task.buf;
  t->inst = in;
  t->exec_member = m->u.task.exec_member;
  t->dst = dst;
  t->dst_pool_off = dst_off;
  t->own_p = own_p;
  t->own_pool_off = own_off;
  t->own_malloced = own_malloced;
  t->out_pool_off = -1;
  in->tasks_pending++;
  dred_queue_insert_tail(&rt->tasks, &t->link);
}

static void on_end(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in;
  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, m->u.end.group, m->u.end.tag);
  uv_mutex_unlock(&rt->lock);
  if (in == NULL) {
    DRED_WARN("END for an unknown reduction (tag %lld) ignored", (long long)m->u.end.tag);
    return;
  }
  /* Buffers stay until our own tasks and replica I/O that read them are over. */
  in->state = INST_ENDED;
  in->end_status = m->u.end.status;
  dred_repl_on_end(rt, in);
  dred_rt_inst_maybe_finish(rt, in);
}

static int recv_messages(dred_rt_t *rt) {
  proto_msg_t m, r;
  int src, n, got = 0;

  for (n = 0; n < RECV_BATCH; n++) {
    int rc = dred_chan_recv(&rt->chan, &src, &m);
    if (rc == 0) break;
    /* A ping is not work: counting it would reset the back-off twice a second and keep
     * an idle process polling at the busy rate. */
    if (rc < 0 || m.type != PROTO_PING) got++;
    if (rc < 0) continue;
    if (src != 0) {
      if (m.type == PROTO_REPLICA)
        dred_repl_on_header(rt, src, &m);
      else if (m.type == PROTO_REPLICA_ACK)
        dred_repl_on_ack(rt, src, &m);
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
      case PROTO_PING:
        /* After BYE the master reads nothing more from us: an answer would arrive
         * unmatched at its MPI_Finalize.  And once we gave up on the master (it was
         * silent too long -- perhaps only stalled) we take part in nothing more: staying
         * silent lets a master that is in fact alive declare us failed, which ends the
         * reductions other members still wait on instead of leaving them hanging. */
        if (rt->bye_sent || rt->dead) break;
        memset(&r, 0, sizeof r);
        r.type = PROTO_PONG;
        r.u.ping.seq = m.u.ping.seq;
        send_to_master(rt, &r, NULL);
        break;
      case PROTO_SHUTDOWN:
        if (!rt->bye_sent) { /* never leave while the application still counts on us */
          DRED_ERROR("SHUTDOWN from dred-master before this process said BYE: ignored");
          break;
        }
        rt->shutdown = 1;
        break;
      case PROTO_FAILED:
        dred_repl_on_failed(rt, m.u.failed.worker);
        break;
      case PROTO_RECOVER:
        dred_repl_on_recover(rt, &m);
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
  m.u.done.buf = dred_rt_bufref(t->dst, t->dst_pool_off);
  send_to_master(rt, &m, NULL);
  if (status == SCHED_TASK_OK) {
    rt->tasks_run++;
    rt->bytes_combined += in->bytes;
  } else {
    DRED_ERROR("task %llu (tag %lld) failed: %s", (unsigned long long)t->task_id,
               (long long)t->tag, dred_status_str(error));
  }
  dred_queue_remove(&t->link);
  free(t);
  in->tasks_pending--;
  dred_rt_inst_maybe_finish(rt, in);
  return 1;
}

/* ---- watchdog: the master must be heard from ----------------------------------------- */

void dred_rt_fail_everything(dred_rt_t *rt, int status) {
  unsigned b;
  dred_queue_t *q, *n;

  uv_mutex_lock(&rt->lock);
  rt->dead = 1;
  rt->dead_status = status;
  uv_mutex_unlock(&rt->lock);
  while ((q = dred_queue_head(&rt->tasks)) != NULL) {
    dred_task_t *t = DRED_QUEUE_DATA(q, dred_task_t, link);
    dred_queue_remove(q);
    if (t->started) dred_dp_task_abort(rt, t);
    t->inst->tasks_pending--;
    free(t);
  }
  for (b = 0; b < DRED_INST_BUCKETS; b++) {
    DRED_QUEUE_FOREACH_SAFE(q, n, &rt->inst[b]) {
      dred_inst_t *in = DRED_QUEUE_DATA(q, dred_inst_t, hlink);
      uv_mutex_lock(&rt->lock);
      if (in->state == INST_SUBMITTED) dred_queue_remove(&in->qlink);
      uv_mutex_unlock(&rt->lock);
      in->state = INST_ENDED;
      in->end_status = status;
      dred_rt_inst_maybe_finish(rt, in); /* replica I/O still reading sendbuf finishes first */
    }
  }
}

static void on_watch(uv_timer_t *timer) {
  dred_rt_t *rt = timer->data;
  uint64_t silent = uv_hrtime() - rt->last_master_ns;
  if (!rt->dead && silent > rt->cfg.master_timeout_ms * 1000000ull) {
    DRED_ERROR("dred-master silent for %llu ms (DRED_MASTER_TIMEOUT_MS=%llu): master lost",
               (unsigned long long)(silent / 1000000ull),
               (unsigned long long)rt->cfg.master_timeout_ms);
    dred_rt_fail_everything(rt, DRED_ERR_MASTER_LOST);
  }
}

/* ---- the loop ------------------------------------------------------------------------ */

static void maybe_bye(dred_rt_t *rt) {
  proto_msg_t m;
  int ready;
  if (rt->bye_sent) return;
  uv_mutex_lock(&rt->lock);
  ready = rt->bye_requested && rt->ninst == 0 && dred_queue_empty(&rt->submitq);
  uv_mutex_unlock(&rt->lock);
  if (!ready) return;
  memset(&m, 0, sizeof m);
  m.type = PROTO_BYE;
  send_to_master(rt, &m, NULL);
  rt->bye_sent = 1;
}

static void rt_main(void *arg) {
  dred_rt_t *rt = arg;
  pthread_setname_np(pthread_self(), "dred-runtime"); /* for top -H, perf, gdb */
  for (;;) {
    int work = 0, in_flight, stop;
    uv_run(&rt->loop, UV_RUN_NOWAIT);
    work += drain_submissions(rt);
    work += recv_messages(rt);
    dred_chan_progress(&rt->chan); /* completed sends are bookkeeping, not work */
    work += run_tasks(rt);
    work += dred_repl_progress(rt);
    maybe_bye(rt);
    uv_mutex_lock(&rt->lock);
    in_flight = rt->ninst > 0 || !dred_queue_empty(&rt->tasks) || rt->bye_requested ||
                !dred_queue_empty(&rt->repl_ops);
    stop = (rt->shutdown && rt->chan.nsends == 0) || (rt->dead && rt->bye_requested);
    uv_mutex_unlock(&rt->lock);
    if (stop) break;
    dred_poller_wait(&rt->poller, work, in_flight);
  }
}

int dred_rt_start(dred_rt_t *rt) {
  unsigned b;
  int rc;
  for (b = 0; b < DRED_INST_BUCKETS; b++) dred_queue_init(&rt->inst[b]);
  dred_queue_init(&rt->submitq);
  dred_queue_init(&rt->groups);
  dred_queue_init(&rt->tasks);
  dred_queue_init(&rt->repl_ops);
  dred_queue_init(&rt->parked);
  if ((rt->failed = calloc((size_t)rt->world_size, 1)) == NULL) return DRED_ERR_NOMEM;
  if ((rc = uv_mutex_init(&rt->lock)) != 0) return DRED_ERR_INTERNAL;
  if (uv_loop_init(&rt->loop) != 0) return DRED_ERR_INTERNAL;
  if (dred_poller_init(&rt->poller, rt->cfg.poll_min_us * 1000u, rt->cfg.poll_max_us * 1000u,
                       rt->cfg.poll_idle_us * 1000u, 100000000ull) != 0)
    return DRED_ERR_INTERNAL;
  if (dred_chan_init(&rt->chan, rt->priv) != 0) return DRED_ERR_NOMEM;
  uv_timer_init(&rt->loop, &rt->watch_timer);
  rt->watch_timer.data = rt;
  rt->last_master_ns = uv_hrtime();
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
  uv_close((uv_handle_t *)&rt->watch_timer, close_cb);
  uv_run(&rt->loop, UV_RUN_DEFAULT);
  uv_loop_close(&rt->loop);
  dred_chan_close(&rt->chan);
  dred_poller_close(&rt->poller);
}
