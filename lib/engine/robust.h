/*
 * robust.h -- the robust layer (replicas, recovery, what a death costs) as the engine sees
 * it: the events the engine raises and the few questions it asks about a reduction's
 * buffers.  rabit's AllreduceBase / AllreduceRobust split, in C.
 *
 * lib/robust/replicate.c fills the table (dred_robust_layer, called once by dred_init:
 * the only reference from the engine's files to the robust layer's); the engine calls
 * through rt->robust, so the engine's objects do not link against the layer's, and the
 * layer's files call the engine, never the other way round (tests/check-layers.sh).  The
 * layer keeps its state in rt->robust_state, which the engine never reads.
 *
 * With DRED_REPLICAS=0 and no failure only open, init, close and destroy run (start and
 * end of the job) and they do next to nothing: the engine raises a reduction's events
 * only for a reduction with robust state (in->repl), and the job's per-turn events only
 * while DRED_RT_ROBUST_ON.
 */
#ifndef DRED_ROBUST_H
#define DRED_ROBUST_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/proto.h"

struct dred_rt;
struct dred_inst;
struct dred_task;
struct dred_rbuf;

/* What dred_robust_t.waiting reports (bits). */
#define DRED_ROBUST_PARKED 1u /* requests wait for a copy or a call: poll for them       */
#define DRED_ROBUST_RETRY 2u  /* what they wait for may have come: another turn now      */

typedef struct dred_robust {
  /* ---- the job's life ---- */
  /* Create the layer's state and open this worker's replica store in the job's directory
   * (DRED_REPLICAS > 0): DRED_OK; DRED_ERR_NOMEM; or DRED_ERR_STORAGE (logged) -- dred_init
   * then fails (a job that asked for replicas must not run without them unknowingly). */
  int (*open)(struct dred_rt *rt);
  int (*init)(struct dred_rt *rt); /* the data plane is up */
  void (*close)(struct dred_rt *rt); /* the runtime thread stopped: the store goes */
  void (*destroy)(struct dred_rt *rt); /* with the runtime's memory: the state goes */

  /* ---- events of one reduction, in the order they happen ---- */
  /* The operand was handed over: dred_ireduce copied it into our pool (under rt->lock).
   * The layer lists it in the snapshot directory, so that a node peer can recover it
   * from the first instant.  Raised only with DRED_REPLICAS > 0. */
  void (*on_operand_pooled)(struct dred_rt *rt, struct dred_inst *in);
  /* The member's READY is about to go: store the operand here, send its copies, list
   * their holders in the READY.  Raised only with DRED_REPLICAS > 0. */
  void (*on_ready)(struct dred_rt *rt, struct dred_inst *in, proto_msg_t *ready);
  /* The READY went: a request waiting for this member's call may go on. */
  void (*on_ready_sent)(struct dred_rt *rt, struct dred_inst *in);
  /* A failed peer's incoming link finished draining (dred_net_drop_draining): a request
   * waiting for what that peer sent before it died may go on. */
  void (*on_peer_drained)(struct dred_rt *rt);
  /* A task starts whose TASK allows absorption and whose provider is in shared memory:
   * 1 if the layer runs its combine (in place, in the snapshot: then task_step does the
   * work and on_task_finished follows, finished or not), 0 if the engine combines as
   * usual. */
  int (*on_task_start)(struct dred_rt *rt, struct dred_task *t);
  int (*task_step)(struct dred_rt *rt, struct dred_task *t, uint64_t deadline);
  void (*on_task_finished)(struct dred_rt *rt, struct dred_task *t);
  /* The accumulator was replaced: the first combine wrote its result to a new buffer, so
   * acc is no longer the snapshot the copies are taken from; the engine's hold on it
   * goes.  Nothing when acc was not a snapshot. */
  void (*on_acc_replaced)(struct dred_rt *rt, struct dred_inst *in);
  /* The reduction ended (END): copies not started are not needed, parked requests for it
   * are moot, its rows in the store go. */
  void (*on_reduction_end)(struct dred_rt *rt, struct dred_inst *in);
  /* The reduction's buffers are about to be freed or reused: recovered copies freed,
   * directory slot retired, its robust state freed.  Returns 1 when acc was the snapshot
   * (now the snapshot's to free: its copies may still be in flight), else 0 (acc is the
   * engine's to free). */
  int (*on_buffers_release)(struct dred_rt *rt, struct dred_inst *in);

  /* ---- events of the job ---- */
  /* Messages for the layer: a neighbour's REPLICA header (and its bytes), its
   * REPLICA_ACK, the master's RECOVER. */
  void (*on_replica)(struct dred_rt *rt, int src, const proto_msg_t *m);
  void (*on_replica_ack)(struct dred_rt *rt, int src, const proto_msg_t *m);
  void (*on_recover)(struct dred_rt *rt, const proto_msg_t *m);
  /* Worker w failed (the engine has recorded it in rt->failed and stopped its own work
   * with w): its store goes, copies waiting for its ACK stop waiting. */
  void (*on_member_failed)(struct dred_rt *rt, uint32_t w);
  void (*on_shutdown)(struct dred_rt *rt); /* SHUTDOWN: copies still queued are moot */
  /* Once per loop turn: deferred copies due, parked requests retried.  *next_due_ns: when
   * it wants the next turn at the latest (uv_hrtime), or 0; the engine wakes the loop
   * then.  Returns how much it did. */
  int (*on_turn)(struct dred_rt *rt, uint64_t *next_due_ns);

  /* ---- questions ---- */
  unsigned (*waiting)(const struct dred_rt *rt); /* DRED_ROBUST_* bits, 0: nothing */
  /* acc is the snapshot copies are taken from: read-only, combine out of place. */
  int (*acc_read_only)(const struct dred_inst *in);
  /* acc is our snapshot in the pool, listed in the directory (READY's snap). */
  int (*acc_listed)(const struct dred_inst *in);
  /* Pool bytes a reduction whose acc will be its snapshot needs for its combines, beyond
   * the operand (pool admission reserves them at the call, before in->repl exists). */
  size_t (*pool_extra)(const struct dred_rt *rt, const struct dred_inst *in);
  /* Store reads into the reduction's buffers are in flight: it may not be freed yet. */
  int (*reading)(const struct dred_inst *in);
  /* The recovered copy of member `member`'s operand held here (a task's destination). */
  struct dred_rbuf *(*recovered)(struct dred_inst *in, uint32_t member);
} dred_robust_t;

const dred_robust_t *dred_robust_layer(void);

/* Whether the engine raises the job's per-turn events: the job keeps replicas, or the
 * layer has been told of a failure or a RECOVER (robust_engaged, set by the engine). */
#define DRED_RT_ROBUST_ON(rt) ((rt)->cfg.replicas > 0 || (rt)->robust_engaged)

#endif /* DRED_ROBUST_H */
