/*
 * meetpath_int.h -- what the meeting place's two paths share: meetpath.c (the slot) and
 * lanepath.c (the fast lane).  Nothing outside them includes it.
 */
#ifndef DRED_MEETPATH_INT_H
#define DRED_MEETPATH_INT_H

#include <stdint.h>

#include "../shm/meet.h"
#include "../engine/inst.h"
#include "../engine/runtime.h"
#include "distribute.h"

#define WAIT_SLICE_NS 100000000ull /* a waiter rechecks its future at least this often */

/* The operands a small collective's member took -- at its arrival in the slot
 * (dred_meet_arrive_take), or from the lane's posts -- until its call finishes it on the
 * same thread (dred_lanepath__taken_result). */
extern _Thread_local unsigned char dred_meetpath__taken[DRED_MEET_DATA];

/* The group's operands all fit the slot: they are copied there (the small path). */
static inline int meet_small(const dred_inst_t *in) {
  return in->inl && (uint64_t)in->group->n * in->bytes <= DRED_MEET_DATA;
}

/* Whether this member puts an operand in the slot: a reduce's non-roots, an allreduce's
 * every member, a bcast's root (its data). */
static inline int publishes(const dred_inst_t *in) {
  if (in->kind == PROTO_KIND_ALLREDUCE) return 1;
  if (in->kind == PROTO_KIND_BCAST) return in->is_root;
  return !in->is_root;
}

/* The operand in dred's layout: a non-root's inline copy, else acc (recvbuf, the
 * application's block, a snapshot, or a buffer of our own). */
static inline const void *operand_of(const dred_inst_t *in) {
  if (in->acc_deferred) return in->sendbuf;
  return in->inl_data != NULL ? (const void *)in->inl_data : (const void *)in->acc;
}

/* Where this member's result goes: acc for a member that combines there (recvbuf, or a
 * buffer unpacked into it at the end), else `res` as dred-master's DATA would fill it. */
static inline char *result_dst(dred_inst_t *in) {
  return in->is_root ? in->acc : dred_dist_result_buf(in);
}

/* 0 while the service lives; once it died (master lost), the status its collectives end
 * with.  Read under rt->lock. */
static inline int service_dead(dred_rt_t *rt) {
  int st;
  uv_mutex_lock(&rt->lock);
  st = !rt->dead ? 0 : rt->dead_status != DRED_OK ? rt->dead_status : DRED_ERR_MASTER_LOST;
  uv_mutex_unlock(&rt->lock);
  return st;
}

/* meetpath.c: the ring of a one-node group's auto-tagged stream, looked up once under
 * rt->lock and never changed after (read without it once looked); NULL when it has none. */
dred_meet_ring_t *dred_meetpath__auto_ring(dred_rt_t *rt, dred_inst_t *in);
/* meetpath.c: `in`, out of the meeting place with nothing of it there, goes to
 * dred-master as any collective does.  Under rt->lock, `in` on no queue. */
void dred_meetpath__to_master(dred_rt_t *rt, dred_inst_t *in);

/* lanepath.c: a small collective's result from the operands taken (the same bytes the
 * slot or the posts held: the same fold, the same result as the slot's).  Returns the
 * status. */
int dred_lanepath__taken_result(dred_rt_t *rt, dred_inst_t *in);
/* lanepath.c: a nonblocking call posted in the lane, claimed: its look, then its outcome
 * from the posts, the slot's way, or `status` when that ends it here and the lane has not
 * resolved.  Returns as dred_meetpath_settle. */
int dred_lanepath__settle(dred_rt_t *rt, dred_inst_t *in, int status);

#endif
