/*
 * recover.c -- answering the master's RECOVER: bringing a lost operand back.
 *
 * What it is for.  When a buffer dies with a worker, dred-master splits it into single
 * operands and asks, for each, a worker that may hold it to RECOVER it
 * (master/sched/sched_recover.c).  This file answers: it loads the operand into a buffer of
 * ours and reports it with a READY flagged recovered, or says RECOVER_FAILED so the
 * master asks the next holder.
 *
 * How it works.
 *   - Our own operand: a non-root member whose accumulator is still the untouched
 *     snapshot (or the application's block) has nothing to reload.  Otherwise the
 *     primary buffer is reloaded from our local copy, falling back to sendbuf (which the
 *     API keeps valid and unchanged) if that copy is missing or corrupt -- unless the
 *     application abandoned the reduction, then sendbuf is no longer ours.  The root
 *     reloads from sendbuf (a partly combined accumulator cannot be trusted), or fails
 *     when it reduced in place into its only copy.
 *   - Another member's operand: read from the copy it sent us (replica_recv.c) into a new
 *     buffer kept with the instance; with no usable copy, a dead node peer's snapshot
 *     may still be listed in its pool's directory (snapdir.c): it died before its
 *     neighbour heard of it, and its segment outlives it.
 *   - A RECOVER for a reduction this process has not called yet, or not announced yet (a
 *     member still in a meeting slot that spilled to dred-master), or whose copy is still
 *     being written, is parked and retried by dred_repl_progress (replicate.c); one for a
 *     reduction that ended is dropped; an inline reduction keeps no copies and answers
 *     RECOVER_FAILED at once.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/status.h"
#include "../../storage/replica.h"
#include "../../storage/replica_async.h"
#include "../mpi/dataplane.h"
#include "replicate_internal.h"

/* ---- recovery ------------------------------------------------------------------------ */

/* unit: p holds member's unit (its snapshot as it stands, absorptions finished), not its
 * operand alone; absorbed: that includes the RECOVER's tentative absorption; snap: p is
 * our own snapshot, which may absorb again. */
static void send_recovered(dred_rt_t *rt, dred_inst_t *in, uint32_t member, const char *p,
                           int64_t pool_off, int unit, int absorbed, int snap,
                           const proto_params_t *stated) {
  proto_msg_t m;
  proto_params_t own;
  dred_rt_ready(in, member, &m);
  /* Another member's copy states that member's parameters, as its READY would have --
   * those its snapshot directory listed (`stated`), or those its copy's header came with:
   * dred-master compares them with the others', so a member that died before its READY
   * and disagreed still makes the reduction DRED_ERR_MISMATCH.  (Ours stand for it only
   * where neither exists: a copy made by a build without them cannot be.) */
  if (stated != NULL)
    proto_params_set(&m, stated);
  else if (member != in->member && dred_repl_params_find(rt, in->group_id, in->tag, member, &own))
    proto_params_set(&m, &own);
  m.u.ready.recovered = 1;
  m.u.ready.unit = (uint8_t)unit;
  m.u.ready.absorbed = (uint8_t)absorbed;
  m.u.ready.snap = (uint8_t)snap;
  m.u.ready.buf = dred_rt_bufref(rt, p, pool_off, in->bytes);
  if (pool_off >= 0) MPI_Win_sync(rt->swin);
  dred_rt_send_master(rt, &m);
}

static void send_recover_failed(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                                int error) {
  proto_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = PROTO_RECOVER_FAILED;
  m.u.recover.group = group;
  m.u.recover.tag = tag;
  m.u.recover.member = member;
  m.u.recover.error = error;
  dred_rt_send_master(rt, &m);
}

/* No stored copy of a dead member's operand here.  If the member shared our node, its
 * snapshot may still be listed in its pool's directory: rebuild its unit from there into
 * io->buf (absorb.c finishes an absorption it died in).  Returns 1 when found. */
static int snapdir_found(dred_rt_t *rt, dred_inst_t *in, repl_io_t *io) {
  int absorbed = 0;
  if (dred_absorb_recover(rt, in, io->member, io->last, io->tentative, io->single, io->buf,
                          &absorbed, &io->params) != DRED_OK)
    return 0;
  io->has_params = 1;
  io->unit = !io->single;
  io->absorbed = absorbed;
  return 1;
}

/* io->buf holds another member's operand: keep it with the instance and announce it. */
static int keep_recovered(dred_rt_t *rt, dred_inst_t *in, repl_io_t *io, const char *from) {
  dred_rbuf_t *b = calloc(1, sizeof *b);
  if (b == NULL) return DRED_ERR_NOMEM;
  b->member = io->member;
  b->p = io->buf;
  b->pool_off = io->pool_off;
  b->malloced = io->malloced;
  dred_queue_insert_tail(&in->repl->rbufs, &b->link); /* made by dred_repl_try_recover */
  DRED_INFO("recovered member %u's %s from %s (tag " PROTO_KEY_FMT ")", io->member,
            io->absorbed ? "unit, its absorption finished," : io->unit ? "unit" : "operand", from,
            PROTO_KEY_ARG(in->tag));
  send_recovered(rt, in, io->member, b->p, b->pool_off, io->unit, io->absorbed, 0,
                 io->has_params ? &io->params : NULL);
  return DRED_OK;
}

/* Copy the caller's operand back into acc from sendbuf, which the API keeps valid and
 * unchanged -- unless the application abandoned the reduction (freed its pending
 * future): then sendbuf may be gone, and DRED_ERR_PROC_FAILED says so.  The future's lock
 * is held across the copy, so a dred_future_free that returned never races with it. */
static int reload_from_sendbuf(dred_rt_t *rt, dred_inst_t *in) {
  int rc;
  if (dred_future_abandoned_lock(in->fut)) return DRED_ERR_PROC_FAILED;
  rc = dred_dp_load(rt, in, in->acc); /* packed or image layouts as at the call */
  dred_future_unlock(in->fut);
  return rc;
}

static void recover_get_done(void *arg, int status) {
  repl_io_t *io = arg;
  dred_rt_t *rt = io->rt;
  dred_inst_t *in = io->inst;

  in->repl->io_pending--;
  if (dred_inst_state(in) != INST_ANNOUNCED) { /* ended meanwhile */
    if (!io->is_self) dred_dp_buf_free(rt, in->bytes, io->buf, io->pool_off, io->malloced);
  } else if (io->is_self) {
    if (status != DRED_OK && reload_from_sendbuf(rt, in) != DRED_OK) {
      DRED_ERROR("local replica of my operand (tag " PROTO_KEY_FMT
                 ") unusable (%s) and the reduction was "
                 "abandoned (its sendbuf is no longer ours): cannot recover it",
                 PROTO_KEY_ARG(in->tag), dred_status_str(status));
      send_recover_failed(rt, in->group_id, in->tag, in->member, DRED_ERR_PROC_FAILED);
    } else {
      if (status != DRED_OK)
        DRED_WARN("local replica of my operand (tag " PROTO_KEY_FMT
                  ") unusable (%s): reloaded from sendbuf",
                  PROTO_KEY_ARG(in->tag), dred_status_str(status));
      DRED_INFO("recovered my operand (tag " PROTO_KEY_FMT ")", PROTO_KEY_ARG(in->tag));
      send_recovered(rt, in, in->member, in->acc, in->pool_off, 0, 0, 0, NULL);
    }
  } else {
    const char *from = "the copy it sent us";
    if (status != DRED_OK && snapdir_found(rt, in, io)) {
      status = DRED_OK;
      from = "its snapshot in shared memory";
    }
    if (status == DRED_OK) status = keep_recovered(rt, in, io, from);
    if (status != DRED_OK) {
      dred_dp_buf_free(rt, in->bytes, io->buf, io->pool_off, io->malloced);
      send_recover_failed(rt, in->group_id, in->tag, io->member, status);
    }
  }
  dred_rt_inst_maybe_finish(rt, in);
  free(io);
}

static int write_pending(const dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member) {
  dred_queue_t *q;
  DRED_QUEUE_FOREACH(q, &dred_repl_state(rt)->writes) {
    repl_io_t *io = DRED_QUEUE_DATA(q, repl_io_t, link);
    if (io->group == group && io->tag == tag && io->member == member) return 1;
  }
  return 0;
}

/* Returns 1 when handled (or dropped), 0 when it must wait (park it). */
int dred_repl_try_recover(dred_rt_t *rt, const proto_msg_t *m) {
  dred_inst_t *in;
  dred_repl_inst_t *r;
  repl_io_t *io;
  const repl_io_t *held;
  uint32_t member = m->u.recover.member;
  int rc, single = m->u.recover.single;
  inst_state_t st;

  uv_mutex_lock(&rt->lock);
  in = dred_rt_find(rt, m->u.recover.group, m->u.recover.tag);
  uv_mutex_unlock(&rt->lock);
  /* Not called yet; or called but not announced: still in the meeting place, its slot
   * spilled to dred-master (the master holds the reduction) and this member not yet
   * rerouted there -- its READY, and the copies its robust state keeps, come then, and
   * its READY sent retries what is parked (dred_repl_on_ready_sent).  Answered now, the
   * answer would find no announced instance to report through and be lost, leaving the
   * master waiting on this worker for ever. */
  if (in == NULL) return 0;
  st = dred_inst_state(in);
  if (st == INST_SUBMITTED || st == INST_MEET) return 0;
  if (st == INST_ENDED) return 1;
  if (member >= in->group->n) {
    send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_INTERNAL);
    return 1;
  }
  if (in->inl) { /* an inline reduction keeps no copies (the master holds its operands) */
    send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_PROC_FAILED);
    return 1;
  }
  if (write_pending(rt, in->group_id, in->tag, member)) return 0;
  /* The member's copy may be whole in our socket, unread: its process died, and its link
   * is still read until it ends (dred_net_drop_draining; bounded).  Ask again then. */
  if (member != in->member && dred_net_draining(&rt->net, (int)in->group->workers[member]))
    return 0;
  held = member != in->member ? dred_repl_held_find(rt, in->group_id, in->tag, member) : NULL;
  if ((r = dred_repl_inst_of(in)) == NULL || (io = calloc(1, sizeof *io)) == NULL) {
    send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_NOMEM);
    return 1;
  }
  io->rt = rt;
  io->inst = in;
  io->member = member;
  io->last = m->u.recover.last;
  io->tentative = m->u.recover.tentative;
  io->single = single;
  io->is_self = member == in->member;
  if (io->is_self) {
    if (in->is_root) {
      /* A partly combined accumulator cannot be trusted.  The root's operand is still in
       * sendbuf -- or, in place, in recvbuf when the root combines in a buffer of its own
       * (a packed or image layout leaves recvbuf alone until the end); a direct root
       * reducing in place combined into its only copy. */
      free(io);
      if ((in->sendbuf == MPI_IN_PLACE && in->ti.layout == DRED_LAYOUT_DIRECT) ||
          reload_from_sendbuf(rt, in) != DRED_OK) {
        send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_PROC_FAILED);
      } else {
        send_recovered(rt, in, member, in->acc, in->pool_off, 0, 0, 0, NULL);
      }
      return 1;
    }
    if ((dred_repl_acc_is_snapshot(in) && !(single && r->snap->absorbed)) || in->acc_is_app) {
      /* acc is still our snapshot -- our operand, or the unit it absorbed, which is what
       * the master asks for unless it wants the operand alone -- or the application's
       * block it is read from in place: nothing to reload. */
      free(io);
      send_recovered(rt, in, member, in->acc, in->pool_off, !single, 0,
                     dred_absorb_acc_ok(in), NULL);
      return 1;
    }
    if (dred_repl_acc_is_snapshot(in)) { /* it absorbed: the operand alone goes back in */
      dred_snapdir_absorb_clear(rt, r->snap->dir_slot);
      r->snap->absorbed = 0;
    }
    io->buf = in->acc;
    io->pool_off = in->pool_off;
  } else if (dred_dp_buf_alloc(rt, in->bytes, &io->buf, &io->pool_off, &io->malloced) != DRED_OK) {
    free(io);
    send_recover_failed(rt, in->group_id, in->tag, member, DRED_ERR_NOMEM);
    return 1;
  }
  if (held != NULL) { /* the copy it sent us is still in our memory, its write not due */
    r->io_pending++;
    if (held->len == in->bytes) memcpy(io->buf, held->buf, in->bytes);
    recover_get_done(io, held->len == in->bytes ? DRED_OK : DRED_ERR_STORAGE);
    return 1;
  }
  if (dred_repl_state(rt)->store == NULL) {
    r->io_pending++;
    recover_get_done(io, DRED_ERR_PROC_FAILED);
    return 1;
  }
  rc = dred_replica_get_async(&rt->loop, dred_repl_state(rt)->store, in->group_id, in->tag, member, io->buf,
                              in->bytes, recover_get_done, io);
  r->io_pending++;
  if (rc != DRED_OK) recover_get_done(io, rc);
  return 1;
}

void dred_repl_on_recover(dred_rt_t *rt, const proto_msg_t *m) {
  parked_t *p;
  if (dred_repl_try_recover(rt, m)) return;
  if ((p = malloc(sizeof *p)) == NULL) {
    send_recover_failed(rt, m->u.recover.group, m->u.recover.tag, m->u.recover.member,
                        DRED_ERR_NOMEM);
    return;
  }
  p->msg = *m;
  dred_queue_insert_tail(&dred_repl_state(rt)->parked, &p->link);
}
