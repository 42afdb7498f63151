/*
 * sched.h -- the reduction scheduler: a pure state machine, events in, actions out.
 *
 * No MPI, no clock, no I/O in here.  The master's transport feeds it events (a group was
 * defined, a member's operand is ready, a task finished, a worker failed) each stamped
 * with the time, and drains the actions it emits (send this task, end this reduction,
 * journal this record).  Everything the seed paper's scheduler decides lives here, so the
 * unit tests in tests/unit/test_sched.c drive every rule directly.
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
 * Inline reductions (params.inl, small operands: DRED_INLINE_MAX) take no tasks at all:
 * each non-root member's READY carries its operand (count x extent bytes), the root's
 * carries none; the scheduler keeps every arrived operand, and when all n members have
 * arrived it emits one SCHED_ACT_INLINE to the root (all operands in member order) and
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

#include "../common/proto.h"
#include "../common/queue.h"
#include "../common/dred_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sched sched_t;

/* Replica holders a READY may name: the wire's limit, so a decoded READY always fits. */
#define SCHED_MAX_REPLICAS PROTO_MAX_REPLICAS

/* How the executor of a non-root task is chosen. */
typedef enum {
  SCHED_POLICY_PREDICT = 0, /* earliest predicted finish: queued bytes + this task's bytes,
                               over the worker's measured speed (bytes/ns, EWMA)        */
  SCHED_POLICY_LAST_TIME,   /* the paper's rule: the worker whose last task took less time */
  SCHED_POLICY_FIRST        /* always the holder of the earlier message (a baseline)     */
} sched_policy_t;

/* Where a holder's buffer is, as the holder announced it (the wire's own type); opaque to
 * the scheduler, which passes it from the holder's READY/DONE to the executor's TASK. */
typedef proto_buf_t sched_bufref_t;

typedef struct {
  uint64_t group; /* group id (hash of the member list; see common/proto.h) */
  int64_t tag;    /* user tag >= 0, or an auto tag < 0                       */
} sched_key_t;

/* What every member must agree on; a disagreement ends the instance with MISMATCH. */
typedef struct {
  uint64_t count;
  uint32_t type_size; /* MPI_Type_size of the datatype                   */
  uint32_t extent;    /* bytes per element in the workers' buffers        */
  uint32_t type_sig;  /* type-signature fingerprint (worker/typecheck.c)  */
  int32_t op;         /* the op handle (predefined ops compare exactly)  */
  uint8_t op_is_user; /* user ops compare only by commutativity          */
  uint8_t commutative;
  uint32_t root;      /* group rank of the root                          */
  uint8_t inl;        /* an inline reduction: operands travel in READY    */
} sched_params_t;

/* ---- events in ------------------------------------------------------------------- */

typedef enum {
  SCHED_EV_READY = 1, /* a member called reduce: its operand is ready in its buffer      */
  SCHED_EV_TASK_DONE, /* an executor finished a task (or failed it, see status)          */
  SCHED_EV_WORKER_FAILED, /* the failure detector declared a worker dead                 */
  SCHED_EV_RECOVER_FAILED, /* a worker asked to RECOVER an operand has no usable copy     */
  SCHED_EV_ABANDON        /* a member gives up on a reduction it announced (its shutdown
                             could wait no longer): the instance ends with `error` for all */
} sched_ev_type_t;

/* Task outcome reported by an executor: the wire's own codes (common/proto.h), which the
 * workers send and the journal records. */
typedef proto_task_status_t sched_task_status_t;
#define SCHED_TASK_OK PROTO_TASK_OK
#define SCHED_TASK_PROVIDER_LOST PROTO_TASK_PROVIDER_LOST
#define SCHED_TASK_EXEC_CORRUPT PROTO_TASK_EXEC_CORRUPT
#define SCHED_TASK_ERROR PROTO_TASK_ERROR

typedef struct {
  sched_ev_type_t type;
  uint64_t now_ns; /* the adapter's clock; the scheduler never reads one itself */
  union {
    struct {
      sched_key_t key;
      uint32_t member;      /* group rank of the caller                              */
      uint32_t worker;      /* its worker rank                                       */
      sched_params_t params;
      sched_bufref_t buf;
      uint8_t recovered;    /* 1: this READY answers a RECOVER action: `worker` holds a
                               copy of `member`'s operand (it may not be `member`'s own
                               worker)                                                */
      uint8_t nreplicas;    /* workers holding a replica of the operand, besides the */
      uint32_t replicas[SCHED_MAX_REPLICAS]; /* member's own worker, in try order    */
      int32_t error;        /* 0, or DRED_ERR_NOMEM: the member joined but could not
                               allocate its buffer.  The instance ends with this status
                               for every member (unless it already failed otherwise).   */
      const uint8_t *data;  /* params.inl: the operand (copied; NULL when data_len 0)    */
      uint32_t data_len;
    } ready;
    struct {
      sched_key_t key;
      uint32_t member;  /* whose operand could not be recovered         */
      uint32_t worker;  /* who was asked                                */
      int32_t error;    /* DRED_ERR_PROC_FAILED (no copy) or DRED_ERR_STORAGE */
    } recover_failed;
    struct {
      sched_key_t key;
      uint32_t member;  /* who gives up: must have arrived             */
      uint32_t worker;  /* its worker (only a member abandons its own) */
      int32_t error;    /* the status every member gets (0: DRED_ERR_SHUTDOWN) */
    } abandon;
    struct {
      uint64_t task_id;
      uint32_t worker;       /* who reports (must be the task's executor) */
      sched_task_status_t status;
      int32_t error;         /* DRED_ERR_* when status == SCHED_TASK_ERROR */
      uint64_t exec_ns;      /* time the executor spent running the task */
      sched_bufref_t buf;    /* the executor's buffer after the task     */
    } done;
    struct {
      uint32_t worker;
    } failed;
  } u;
} sched_event_t;

/* ---- actions out ------------------------------------------------------------------ */

typedef enum {
  SCHED_ACT_TASK = 1,   /* send a task to `executor`                                  */
  SCHED_ACT_END,        /* tell `worker` (a member) that the instance ended: `status` */
  SCHED_ACT_RECOVER,    /* ask `worker` to load `member`'s operand from a replica and
                           report it with a READY flagged recovered                    */
  SCHED_ACT_JOURNAL_TASK,      /* a task finished: record it                           */
  SCHED_ACT_JOURNAL_REDUCTION, /* an instance ended: record it                         */
  SCHED_ACT_INLINE      /* an inline instance is complete: send its operands to the root.
                           The taker owns u.inl.data and must free() it                */
} sched_act_type_t;

typedef struct {
  sched_act_type_t type;
  sched_key_t key;
  union {
    struct {
      uint64_t task_id;
      uint32_t executor, provider;       /* worker ranks */
      uint32_t exec_member, prov_member; /* group ranks of the holders */
      sched_bufref_t prov_buf;
      uint64_t count;
      uint8_t exec_is_left; /* non-commutative: the executor's interval is left of the
                               provider's, so the result is exec op prov               */
    } task;
    struct {
      uint32_t worker;
      int32_t status; /* DRED_OK or DRED_ERR_* */
    } end;
    struct {
      uint32_t worker; /* who loads the replica  */
      uint32_t member; /* whose operand it is    */
    } recover;
    struct {
      uint64_t task_id;
      uint32_t executor, provider;
      uint64_t bytes;
      uint64_t start_ns, end_ns; /* dispatch to done, master clock */
      uint64_t exec_ns;          /* executor-measured run time     */
      int32_t status;            /* sched_task_status_t            */
    } jtask;
    struct {
      uint32_t worker;  /* the root's worker                                     */
      uint32_t root;    /* the root's member rank: its slot is zeros             */
      uint32_t n;       /* members                                                */
      uint64_t bytes;   /* per member                                             */
      uint8_t *data;    /* n x bytes, member k at k x bytes (malloc'd; NULL if 0) */
    } inl;
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

/* Introspection for tests, dredstat status and the master's log. */
size_t sched_instances(const sched_t *s);            /* instances in flight        */
size_t sched_queue_len(const sched_t *s, sched_key_t key); /* messages queued      */
size_t sched_tasks_in_flight(const sched_t *s);
/* Messages waiting in all instance queues; *longest gets the longest queue (may be NULL). */
size_t sched_queue_stats(const sched_t *s, size_t *longest);
int sched_worker_alive(const sched_t *s, uint32_t worker);
double sched_worker_speed(const sched_t *s, uint32_t worker); /* bytes/ns, 0 unknown */

#ifdef __cplusplus
}
#endif

#endif /* DRED_SCHED_H */
