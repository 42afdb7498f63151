/*
 * meetpath_int.h -- what the meeting place's files share: meetpath.c (the slot's life),
 * meetwork.c (the work on a decided slot's operands) and lanepath.c (the fast lane).
 * Nothing outside them includes it.
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

/* A reduce's root whose operand is large and whose op commutes folds, while it waits
 * for the last members, the operands of those already there (dred_meet_solo): once the
 * last one comes only its operand is left, not n - 1.  From 3 members: with 2, the other
 * one's arrival is the decision.  acc then holds more than the root's operand; should the
 * slot still spill (a later member with no pool room), dred-master must get the operand
 * alone, so the root loads it again (reroute) -- never where acc is where it lies (in
 * place, or sendbuf == recvbuf, with acc = recvbuf). */
#define PREFOLD_MIN_BYTES (64u * 1024u)

static inline int prefolds(const dred_inst_t *in) {
  const void *src = in->sendbuf == MPI_IN_PLACE ? in->recvbuf : in->sendbuf;
  return in->kind == PROTO_KIND_REDUCE && in->is_root && !meet_small(in) &&
         in->ti.commutative && in->group->n >= 3 && in->bytes >= PREFOLD_MIN_BYTES &&
         !(in->ti.layout == DRED_LAYOUT_DIRECT && src == (const void *)in->acc);
}

/* meetpath.c: the ring of a one-node group's auto-tagged stream, looked up once under
 * rt->lock and never changed after (read without it once looked); NULL when it has none. */
dred_meet_ring_t *dred_meetpath__auto_ring(dred_rt_t *rt, dred_inst_t *in);
/* meetpath.c: `in`, out of the meeting place with nothing of it there, goes to
 * dred-master as any collective does.  Under rt->lock, `in` on no queue. */
void dred_meetpath__to_master(dred_rt_t *rt, dred_inst_t *in);

/* meetpath.c: chunk c of a PIECES allreduce member's operand from sendbuf into its block,
 * told to the slot (nothing if it is in already).  On the thread that holds `in`. */
void dred_meetpath__piece_in(dred_inst_t *in, uint32_t c);

/* meetwork.c: the work of member `in` on its claimed, decided collective whose outcome is
 * DRED_OK (a fold, chunks, a copy), about `budget` bytes of it; `status` other than
 * DRED_OK: it is being ended here.  Returns the status; *done whether the work is over,
 * *reads whether it read peers' blocks, *step what a chunked step said (3: its part is
 * done, the rest is its peers'). */
int dred_meetpath__work(dred_rt_t *rt, dred_inst_t *in, int status, uint64_t budget, int *done,
                        int *reads, int *step);

/* lanepath.c: a small collective's result from the operands taken (the same bytes the
 * slot or the posts held: the same fold, the same result as the slot's).  Returns the
 * status. */
int dred_lanepath__taken_result(dred_rt_t *rt, dred_inst_t *in);
/* lanepath.c: a nonblocking call posted in the lane, claimed: its look, then its outcome
 * from the posts, the slot's way, or `status` when that ends it here and the lane has not
 * resolved.  Returns as dred_meetpath_settle. */
int dred_lanepath__settle(dred_rt_t *rt, dred_inst_t *in, int status);

#endif
