/*
 * sched_distribute.c -- the scheduler's rules for allreduce and bcast: getting one result
 * to every member.
 *
 * What it is for.  A reduce ends when the root holds the result.  An allreduce or a bcast
 * ends only when every member does, so after (or instead of) the reduction the result must
 * travel.  dred-master is the one process every member already talks to, which outlives
 * any of them, so it carries the result: whatever it holds is safe from a member's death.
 *
 * How it works.
 *   - Inline allreduce (small operands): every member's READY carries its operand, as a
 *     reduce's non-root members' do; once all are here every live member gets the same
 *     INLINE message and folds it in rank order (lib/mpi/combine.c), so all results are
 *     bit-identical.  A member dying after its READY costs nothing.
 *   - Bcast: no tasks.  The root's data reaches the master in its READY (small) or as DATA
 *     messages right behind it; each member that arrived is sent DATA for every piece the
 *     master holds and it lacks, as soon as the master holds it -- early arrivers first,
 *     nobody waits for the others -- and END once it has everything.  A member whose READY
 *     says it has the data (`have`: it copied it from its node's relay leader) lacks none.
 *     The master keeps the data until every member was told, so a relay leader's death
 *     costs its followers nothing: they come here without `have` and are sent it all.
 *   - A large allreduce's relay followers: a member whose READY says it follows
 *     (PROTO_HAVE_FOLLOW) copies the result from its node's relay leader, which receives
 *     it from here as any member does.  It is sent nothing -- no DATA, and no END, not
 *     even an error's, since it may be reading that block meanwhile -- until its HAVE
 *     comes: error 0, it holds the whole result and is owed its END alone; an error, the
 *     relay failed (its leader died or its collective failed first) and it is sent the
 *     result as anyone is, or told the instance's error.
 *   - Large allreduce: the reduction runs as a reduce to member 0 (the ordinary tasks,
 *     replicas and recovery, rank order for non-commutative ops); when one message covers
 *     every member, member 0 is sent PUSH and answers with its result as DATA, which then
 *     travels as a bcast's does.
 *   - Faults: a member that dies only stops being owed.  The holder (bcast root, allreduce
 *     member 0) dying before the master holds the whole result ends the instance with
 *     DRED_ERR_ROOT_FAILED for every survivor; after, nothing is lost.
 *
 * Memory: `res` is allocated when its first byte arrives (calloc of the result's size);
 * DATA actions point into it, and the instance's journal record takes it when the instance
 * is freed, so the adapter frees it after every DATA went out (actions leave in order).
 */
#include "sched_internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t dist_inline_want(const inst_t *in, uint32_t k) {
  switch (in->params.kind) {
    case PROTO_KIND_ALLREDUCE:
      return in->bytes; /* every member folds every operand */
    case PROTO_KIND_BCAST:
      return k == in->params.root ? in->bytes : 0;
    default:
      return k == in->params.root ? 0 : in->bytes;
  }
}

int dist_root_matters(const inst_t *in) {
  switch (in->params.kind) {
    case PROTO_KIND_ALLREDUCE:
      return !in->params.inl && !(in->dist && in->have == in->bytes);
    case PROTO_KIND_BCAST:
      return !(in->m[in->params.root].arrived && in->have == in->bytes);
    default:
      return 1;
  }
}

void dist_inline_complete(sched_t *s, inst_t *in) {
  uint32_t k, root = in->params.root, last = in->g->n;
  if (in->params.kind != PROTO_KIND_ALLREDUCE) {
    if (worker_alive(s, in->g->workers[root])) last = root;
  } else {
    for (k = 0; k < in->g->n; k++)
      if (worker_alive(s, in->g->workers[k])) last = k;
  }
  /* One buffer for every INLINE: the last one sent owns it (actions leave in order). */
  for (k = 0; k < in->g->n && last < in->g->n; k++) {
    sched_action_t *a;
    if (in->params.kind != PROTO_KIND_ALLREDUCE && k != root) continue;
    if (!worker_alive(s, in->g->workers[k])) continue;
    a = act_send(s, in->key, PROTO_INLINE, in->g->workers[k]);
    a->msg.u.inl.root = root;
    a->msg.u.inl.n = in->g->n;
    a->msg.u.inl.bytes = in->bytes;
    a->msg.u.inl.data = in->inl_data;
    if (k == last) {
      a->owned = in->inl_data;
      in->inl_data = NULL;
    }
  }
  inst_complete(s, in);
}

/* Room for the result, on its first byte.  0, or -1 (the instance failed NOMEM). */
static int res_ready(inst_t *in) {
  if (in->res != NULL || in->bytes == 0) return 0;
  if ((in->res = malloc((size_t)in->bytes)) == NULL) {
    inst_fail(in, DRED_ERR_NOMEM);
    return -1;
  }
  return 0;
}

void dist_bcast_ready(sched_t *s, inst_t *in, uint32_t k, const proto_msg_t *r) {
  (void)s;
  in->dist = 1;
  in->holder = in->params.root;
  if (k != in->params.root) {
    /* A member that copied the data from its node's relay leader (lib/paths/relay.c) is
     * owed only its END: the same END, after the same whole data, as anyone's. */
    if (r->u.ready.have == PROTO_HAVE_DATA) in->m[k].dsent = in->bytes;
    return;
  }
  in->m[k].dsent = in->bytes; /* the root has it */
  if (!r->u.ready.inl) return; /* the data follows as DATA */
  if (r->u.ready.data_len != in->bytes || in->bytes > PROTO_INLINE_TOTAL ||
      (in->bytes > 0 && r->u.ready.data == NULL)) {
    inst_fail(in, DRED_ERR_MISMATCH); /* not what the members agreed on */
    return;
  }
  if (res_ready(in) != 0) return;
  if (in->bytes > 0) memcpy(in->res, r->u.ready.data, (size_t)in->bytes);
  in->have = in->bytes;
}

void dist_begin(sched_t *s, inst_t *in, msg_t *whole) {
  uint32_t root = in->params.root;
  msg_dequeue(in, whole);
  free(whole); /* the result stays in the root's buffer until its END */
  in->dist = 1;
  in->holder = root;
  in->m[root].dsent = in->bytes;
  if (in->bytes == 0) return; /* nothing to send: the caller's dist_settle ends it */
  act_send(s, in->key, PROTO_PUSH, in->g->workers[root]);
}

/* Whether worker w's link takes one more DATA piece now (sched_set_room). */
static int room_for(sched_t *s, uint32_t w) {
  if (s->room == NULL) return 1;
  return (int64_t)s->w[w].dist_sent < (int64_t)s->room(s->room_arg, w);
}

void dist_settle(sched_t *s, inst_t *in) {
  uint32_t k;
  int held = 0;
  for (k = 0; k < in->g->n; k++) {
    member_t *mb = &in->m[k];
    uint32_t w = in->g->workers[k];
    if (!mb->arrived || mb->told || mb->follow || !worker_alive(s, w)) continue;
    while (mb->dsent < in->have) {
      uint64_t len = in->have - mb->dsent;
      sched_action_t *a;
      if (!room_for(s, w)) {
        held = 1; /* the rest at a later sched_dist_pump */
        break;
      }
      s->w[w].dist_sent++;
      s->dist_counted = 1;
      a = act_send(s, in->key, PROTO_DATA, w);
      if (len > PROTO_DATA_MAX) len = PROTO_DATA_MAX;
      a->msg.u.data.offset = mb->dsent;
      a->msg.u.data.total = in->bytes;
      a->msg.u.data.len = (uint32_t)len;
      a->msg.u.data.data = in->res + mb->dsent;
      mb->dsent += len;
    }
    /* everything is here (a bcast also needs its root's READY: the data may be empty) */
    if (mb->dsent == in->bytes && in->have == in->bytes && in->m[in->holder].arrived)
      inst_tell(s, in, k, DRED_OK);
  }
  if (held && !in->dist_waiting) {
    dred_queue_insert_tail(&s->dist_wait, &in->dist_link);
    in->dist_waiting = 1;
  } else if (!held && in->dist_waiting) {
    dred_queue_remove(&in->dist_link);
    in->dist_waiting = 0;
  }
  if (in->nowed == 0) inst_journal_and_free(s, in);
}

void sched_set_room(sched_t *s, sched_room_fn room, void *arg) {
  if (s == NULL) return;
  s->room = room;
  s->room_arg = arg;
}

int sched_dist_pump(sched_t *s) {
  dred_queue_t *q, *next;
  size_t before;
  uint32_t w;
  if (s == NULL || s->room == NULL) return 0;
  if (s->dist_counted) { /* the pieces counted since the last pump are in the backlogs now */
    for (w = 1; w <= s->nworkers; w++) s->w[w].dist_sent = 0;
    s->dist_counted = 0;
  }
  if (dred_queue_empty(&s->dist_wait)) return 0;
  before = s->act_len - s->act_head;
  DRED_QUEUE_FOREACH_SAFE(q, next, &s->dist_wait) {
    inst_t *in = DRED_QUEUE_DATA(q, inst_t, dist_link);
    inst_settle(s, in); /* (may free it: inst_free unlinks it) */
  }
  return s->act_len - s->act_head != before;
}

int on_data(sched_t *s, const sched_event_t *ev) {
  const proto_msg_t *d = &ev->msg;
  sched_key_t key;
  inst_t *in;
  key.group = d->u.data.group;
  key.tag = d->u.data.tag;
  in = inst_find(s, key);
  if (in == NULL || in->status != DRED_OK) return 0; /* it ended meanwhile: late pieces */
  /* only the holder sends, once it may, in order, within the agreed size */
  if (!in->dist || ev->worker != in->g->workers[in->holder] || !in->m[in->holder].arrived ||
      d->u.data.total != in->bytes || d->u.data.offset != in->have ||
      d->u.data.len > in->bytes - in->have || (d->u.data.len > 0 && d->u.data.data == NULL))
    return DRED_ERR_ARG;
  if (d->u.data.len == 0) return 0;
  if (res_ready(in) == 0) {
    memcpy(in->res + in->have, d->u.data.data, d->u.data.len);
    in->have += d->u.data.len;
  }
  inst_settle(s, in);
  return 0;
}

int on_have(sched_t *s, const sched_event_t *ev) {
  const proto_msg_t *h = &ev->msg;
  inst_t *in = inst_find(s, key_of(h));
  uint32_t k = h->u.recover.member;
  if (in == NULL) return DRED_ERR_ARG; /* a follower is never told before its HAVE */
  if (k >= in->g->n || in->g->workers[k] != ev->worker || !in->m[k].follow) return DRED_ERR_ARG;
  in->m[k].follow = 0;
  /* error 0: it copied the whole result from its leader (which the master sent it, so it
   * is all here): only its END is owed.  Else it is sent the result (dsent is 0). */
  if (h->u.recover.error == 0 && in->status == DRED_OK) in->m[k].dsent = in->bytes;
  inst_settle(s, in);
  return 0;
}
