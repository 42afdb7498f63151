/*
 * sched.h -- the reduction scheduler: a pure state machine, events in, actions out.
 *
 * No MPI, no clock, no I/O in here.  The master's transport feeds it events (a group was
 * defined, a member's operand is ready, a task finished, a worker failed) each stamped
 * with the time, and drains the actions it emits (send this task, end this reduction,
 * journal this record).  Everything the seed paper's scheduler decides lives here, so the
 * unit tests in tests/unit/test_sched_*.c drive every rule directly.
 *
 * Vocabulary (seed 002, section 2).  A reduction instance is keyed by (group, tag).  A
 * message is (holder worker, path set P): the holder's buffer covers the operands of the
 * members in P.  The scheduler pairs the first two messages of an instance's queue in
 * arrival order into a task (executor, provider); the executor reads the provider's
 * buffer, combines, and its message comes back with P_exec U P_prov.  The message whose P
 * covers every member is at the root; the reduction then ends and every member is told.
 *
 * Workers are named by their rank in the master's private communicator (1..P); members of
 * a group by their rank in the group (0..n-1).
 *
 * Inline reductions (READY's inl, small operands: DRED_INLINE_MAX) take no tasks at all:
 * each non-root member's READY carries its operand (count x extent bytes), the root's
 * carries none; the scheduler keeps every arrived operand, and when all n members have
 * arrived it sends one PROTO_INLINE to the root (all operands in member order) and
 * END(OK) to every live member.  The master holds each arrived operand, so a member dying
 * after its READY loses nothing; one dying before it fails the instance with
 * DRED_ERR_PROC_FAILED (there are no replicas to recover from); the root dying fails it
 * with DRED_ERR_ROOT_FAILED.  Inline and ordinary READYs for one instance disagree on
 * `inl` and end it with DRED_ERR_MISMATCH, as does an operand of the wrong length or an
 * instance whose n x bytes exceeds PROTO_INLINE_TOTAL.
 */
#ifndef DRED_SCHED_H
#define DRED_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/proto.h"
#include "../../common/queue.h"
#include "../../include/dred_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sched sched_t;

/* How the executor of a non-root task is chosen. */
typedef enum {
  SCHED_POLICY_PREDICT = 0, /* earliest predicted finish: queued bytes + this task's bytes,
                               over the worker's measured speed (bytes/ns, EWMA)        */
  SCHED_POLICY_LAST_TIME,   /* the paper's rule: the worker whose last task took less time */
  SCHED_POLICY_FIRST        /* always the holder of the earlier message (a baseline)     */
} sched_policy_t;

/* A reduction instance: the group and tag every message about it carries. */
typedef struct {
  uint64_t group; /* group id (hash of the member list; see common/proto.h) */
  int64_t tag;    /* user tag >= 0, or an auto tag < 0                       */
} sched_key_t;

/* ---- events in ------------------------------------------------------------------- */

/* The messages the scheduler takes are the wire's own (common/proto.h): the adapter hands
 * over what proto_decode() produced, untouched, with the sender's rank beside it.  So a
 * field means the same thing on the wire, in the scheduler and in the tests, and no layer
 * copies one shape into another.
 *
 *   PROTO_READY           a member's operand is ready (recovered = 1: `worker` answers a
 *                         RECOVER and holds a copy of `member`'s operand, which may not
 *                         be its own); ready.error != 0: the member joined without a
 *                         buffer and the instance ends with that status for everyone
 *   PROTO_DONE            an executor finished a task (done.status: proto_task_status_t)
 *   PROTO_RECOVER_FAILED  the worker asked to RECOVER `member` has no usable copy
 *   PROTO_DATA            a piece of an allreduce's or bcast's result, from its holder
 *                         (sched_distribute.c)
 *   PROTO_ABANDON         a member gives up on a reduction it announced: the instance ends
 *                         with recover.error (0: DRED_ERR_SHUTDOWN) for every member
 *   PROTO_HAVE            an allreduce member that followed its node's relay leader holds
 *                         the result (recover.error 0) or needs it sent (sched_distribute.c)
 *
 * Any other message type is refused with DRED_ERR_ARG.
 *
 * Lifetime: `msg` is a copy of the decoded message, but the pointers inside it (READY's
 * `data`, GROUP's `workers_le`) point into the received frame.  They need only live until
 * sched_feed() returns: the scheduler copies what it keeps (an inline operand). */
typedef enum {
  SCHED_EV_MESSAGE = 1,  /* `msg` arrived from worker `worker`                         */
  SCHED_EV_WORKER_FAILED /* the failure detector declared worker `worker` dead         */
} sched_ev_type_t;

typedef struct {
  sched_ev_type_t type;
  uint64_t now_ns; /* the adapter's clock; the scheduler never reads one itself */
  uint32_t worker; /* MESSAGE: the sender's worker rank; WORKER_FAILED: the dead one */
  proto_msg_t msg; /* MESSAGE only */
} sched_event_t;

/* ---- actions out ------------------------------------------------------------------ */

/* Messages go out in the wire's shape too: a SEND action is a proto_msg_t ready for
 * dred_net_send() and the worker it goes to.
 *
 *   PROTO_TASK     to the executor: combine task.provider's buffer task.buf into yours
 *   PROTO_END      to a member: the instance ended with end.status
 *   PROTO_RECOVER  to a holder: load recover.member's operand from a replica and report
 *                  it with a READY flagged recovered
 *   PROTO_INLINE   to the root of an inline instance (every member of an inline
 *                  allreduce): every member's operand.  inl.data points into `owned` of
 *                  the last INLINE of the instance, which frees it once encoded (or dropped)
 *   PROTO_PUSH     to an allreduce's member 0: its result is whole; send it as DATA
 *   PROTO_DATA     to a member of an allreduce or bcast: a piece of the result (it points
 *                  into the JOURNAL_REDUCTION's `owned`, which comes later)
 *   PROTO_FAILED   to every live worker, at WORKER_FAILED: failed.worker died (key 0, 0).
 *                  It goes behind every action decided before the death, so a worker
 *                  never gets a TASK naming a dead provider after that provider's FAILED,
 *                  and ahead of the RECOVERs the death decides
 *
 * Journal records are not messages: they keep the scheduler's own shapes below. */
typedef enum {
  SCHED_ACT_SEND = 1,          /* send `msg` to worker `worker`                        */
  SCHED_ACT_JOURNAL_TASK,      /* a task finished: record it                           */
  SCHED_ACT_JOURNAL_REDUCTION  /* an instance ended: record it                         */
} sched_act_type_t;

typedef struct {
  sched_act_type_t type;
  sched_key_t key;  /* the instance every action concerns (a SEND's msg carries the same
                       group and tag: the scheduler fills both from the instance)       */
  uint32_t worker;  /* SEND: the destination worker rank */
  proto_msg_t msg;  /* SEND: the message */
  /* Heap memory the taker must free() once the action is taken (after sending a SEND):
   * INLINE's operands (one copy for several INLINEs: only the last of them owns it), or,
   * on a JOURNAL_REDUCTION, the distributed result earlier DATA messages point into */
  void *owned;
  union {
    struct {
      uint64_t task_id;
      uint32_t executor, provider;
      uint64_t bytes;
      uint64_t start_ns, end_ns; /* dispatch to done, master clock */
      uint64_t exec_ns;          /* executor-measured run time     */
      int32_t status;            /* proto_task_status_t            */
    } jtask;
    struct {
      uint32_t members;
      uint64_t bytes; /* per member */
      uint64_t start_ns, end_ns;
      uint32_t tasks;
      uint32_t recovered; /* operands restored from replicas */
      int32_t status;
    } jred;
  } u;
} sched_action_t;

/* ---- the machine ------------------------------------------------------------------ */

/* Returns NULL on allocation failure.  `nworkers` counts workers 1..nworkers. */
sched_t *sched_new(uint32_t nworkers, sched_policy_t policy);
void sched_free(sched_t *s);

/* Define (or re-confirm) a group: `n` members, member k is worker `workers[k]`.
 * Returns 0, or DRED_ERR_ARG if `id` is already defined with another member list or a
 * worker is out of range. */
int sched_group_define(sched_t *s, uint64_t id, uint32_t n, const uint32_t *workers);

/* Record that `worker` runs on node `node` (any small integer naming the node; workers
 * default to node 0, i.e. one node).  Call before the groups' reductions start: replica
 * placement (common/placement.h) and so the RECOVER order depend on it.  Returns 0, or
 * DRED_ERR_ARG for a worker out of range. */
int sched_set_node(sched_t *s, uint32_t worker, uint32_t node);

/* *one_node = 1 when every member of group `id` is on one node, 0 when it spans nodes.
 * Returns 0, or DRED_ERR_ARG for an unknown group. */
int sched_group_one_node(const sched_t *s, uint64_t id, int *one_node);

/* Feed one event.  Actions are appended to the internal action list.  Returns 0, or a
 * DRED_ERR_* code for an event that is malformed or refers to unknown state (the event is
 * then ignored, nothing else changes). */
int sched_feed(sched_t *s, const sched_event_t *ev);

/* Take the next pending action; returns 1 and fills `*out`, or 0 when there is none. */
int sched_next_action(sched_t *s, sched_action_t *out);

/* Pace of a distributed result (allreduce, bcast): `room(arg, worker)` says how many more
 * DATA pieces that worker's link takes now; the scheduler sends it no more than that
 * between two sched_dist_pump calls and holds the rest back.  Unset: no limit.  Without
 * it a member arriving after the master held a 2 GiB result was sent 8,192 frames in one
 * turn: seconds without a heartbeat, and the result copied again into queued frames. */
typedef int (*sched_room_fn)(void *arg, uint32_t worker);
void sched_set_room(sched_t *s, sched_room_fn room, void *arg);
/* At every turn, once the actions went out: send what was held back, as room allows.
 * Returns 1 if it made actions (drain them). */
int sched_dist_pump(sched_t *s);

/* Introspection for tests, dredstat status and the master's log. */
size_t sched_instances(const sched_t *s);            /* instances in flight        */
uint64_t sched_stale_readys(const sched_t *s);        /* READYs of ended instances dropped */
size_t sched_queue_len(const sched_t *s, sched_key_t key); /* messages queued      */
size_t sched_tasks_in_flight(const sched_t *s);
/* Messages waiting in all instance queues; *longest gets the longest queue (may be NULL). */
size_t sched_queue_stats(const sched_t *s, size_t *longest);
int sched_worker_alive(const sched_t *s, uint32_t worker);
uint32_t sched_workers_failed(const sched_t *s);             /* WORKER_FAILED taken */
double sched_worker_speed(const sched_t *s, uint32_t worker); /* bytes/ns, 0 unknown */

#ifdef __cplusplus
}
#endif

#endif /* DRED_SCHED_H */
