/*
 * sched_internal.h -- what master/sched/sched.c, sched_recover.c and sched_nodes.c share: the
 * scheduler's state and the helpers they call.  Private to master/sched/sched*.c: not
 * installed, not included anywhere else; the scheduler's API is sched.h.
 *
 * The scheduler is one state machine in three files.  sched.c keeps the failure-free rules
 * (instances, pairing, executor choice, tasks, ends) and the public API; sched_recover.c
 * keeps the recovery rules (a worker failed, RECOVER, RECOVER_FAILED, a recovered READY);
 * sched_nodes.c pairs within each node first when a group spans nodes.
 * The vocabulary and the invariants are in sched.c's opening comment.
 */
#ifndef DRED_SCHED_INTERNAL_H
#define DRED_SCHED_INTERNAL_H

#include "../common/keymap.h"
#include "sched.h"

/* ---- state -------------------------------------------------------------------------------- */

typedef struct msg msg_t;

typedef struct {
  dred_keymap_node_t node; /* s->groups, by (id, 0) */
  uint64_t id;
  uint32_t n;
  uint32_t nnodes;    /* distinct nodes of its workers (sched_nodes.c)        */
  uint32_t *node_ix;  /* member k's node, numbered 0..nnodes-1                */
  uint64_t node_gen;  /* sched.node_gen when node_ix was computed (0: never)   */
  uint32_t workers[]; /* member k runs on workers[k] */
} group_t;

typedef struct {
  uint8_t alive;
  uint8_t measured;      /* speed holds at least one sample            */
  uint64_t queued_bytes; /* bytes of tasks dispatched to it, not done */
  uint64_t last_exec_ns; /* its last task's run time (LAST_TIME)     */
  double speed;          /* bytes/ns, EWMA with alpha 0.5 (PREDICT)  */
  uint32_t dist_sent;    /* DATA pieces sent it since the last sched_dist_pump */
} worker_t;

typedef enum {
  M_WAITING = 0, /* no operand of it is in any message yet           */
  M_LIVE,        /* its operand is inside exactly one live message   */
  M_RECOVERING   /* lost; a RECOVER is outstanding at `asked` (or, inside another
                    member's unit, at that member's: `via`)          */
} member_state_t;


typedef struct {
  uint8_t state;    /* member_state_t                                  */
  uint8_t arrived;  /* its own READY came: it is owed an END           */
  uint8_t told;     /* its END went out                                */
  uint8_t nreplicas;
  uint32_t replicas[PROTO_MAX_REPLICAS];
  uint32_t try_idx; /* position of `asked` in its holder list (holder_at) */
  uint32_t asked;   /* worker of the outstanding RECOVER (0: none of its own) */
  /* Absorption (sched_recover.c's opening comment): the member whose snapshot absorbed
   * this member's unit in place, the member whose unit this one's snapshot absorbed last,
   * and, while this member's unit is being recovered after its worker died in an
   * absorbing task, the provider whose absorption may be under way and its message.
   * PROTO_NO_MEMBER: none. */
  uint32_t absorber, last, tentative;
  uint32_t via;     /* M_RECOVERING inside another member's unit: that member */
  uint8_t no_unit;  /* its snapshot no longer stands for its unit: recover it alone */
  msg_t *held;      /* the tentative provider's message, held until the answer */
  uint64_t dsent;   /* distribution (sched_distribute.c): bytes of the result sent to it */
  uint8_t follow;   /* an allreduce member copying the result from its node's relay
                       leader: sent nothing, not even an error, until its HAVE */
  uint8_t covered;  /* arrived inside a node partial (sched.c, on_partial): a READY of
                       its own, sent when the partial seemed lost, is ignored */
} member_t;

struct msg {
  dred_queue_t q;    /* in inst->queue while queued; unlinked while a task holds it */
  int64_t seq;       /* arrival order: tail inserts count up, head inserts count down */
  uint32_t worker;   /* holder */
  uint32_t member;   /* holder member: the member whose message started this buffer */
  proto_buf_t buf;
  uint32_t lo, hi;   /* lowest and highest member in set (an interval if non-commutative) */
  uint32_t nset;     /* members in set */
  uint8_t snap;      /* buf is `member`'s own snapshot and set is exactly its unit */
  uint64_t set[];    /* bitset over the n members */
};

struct inst;

typedef struct {
  dred_keymap_node_t node; /* s->tasks, by (id, 0) */
  dred_queue_t q;   /* inst->tasks, dispatch order */
  uint64_t id;
  struct inst *inst;
  msg_t *exec, *prov;
  uint8_t absorb;   /* the executor may absorb the provider's snapshot in place */
  uint64_t bytes;
  uint64_t start_ns;
} task_t;

typedef struct inst {
  dred_keymap_node_t node; /* s->insts, by (group, tag) */
  dred_queue_t link;  /* s->inst_list              */
  sched_key_t key;
  const group_t *g;
  proto_params_t params; /* fixed by the first READY (common/proto.h) */
  uint64_t bytes;        /* per member               */
  uint64_t start_ns;
  dred_queue_t queue;    /* msg_t, arrival order     */
  dred_queue_t tasks;    /* task_t, dispatch order   */
  int64_t seq_head, seq_tail;
  msg_t **by_lo, **by_hi; /* non-commutative: queued message starting / ending at rank k */
  msg_t *fresh;           /* non-commutative: the message enqueued since the last pairing
                             pass, if it is the only one (nfresh == 1) and still queued */
  uint32_t nfresh;        /* messages enqueued since the last pairing pass */
  uint32_t ntasks;        /* tasks dispatched        */
  uint32_t nrecovered;    /* recovered READYs taken  */
  uint32_t nowed;         /* members alive and not told yet */
  int32_t status;         /* DRED_OK while running, else why it failed */
  uint8_t drained;        /* failed and its in-flight tasks are all back */
  uint8_t *inl_data;      /* inline: n x bytes, the arrived operands (NULL until needed) */
  uint32_t ninl;          /* inline: members arrived */
  uint8_t by_node;        /* pairs node by node (sched_nodes.c) until recovery begins */
  uint32_t *pend;         /* by_node: per node, members not arrived + tasks executing */
  msg_t **slot;           /* by_node: a pairing pass's scratch, one per node */
  /* Distribution (sched_distribute.c): a bcast from the start, an allreduce once its
   * result is whole at its holder.  res holds the result's first `have` bytes (NULL
   * until the first arrive); `holder` is the member whose worker sends them. */
  uint8_t dist;
  uint32_t holder;
  uint8_t *res;
  uint64_t have;
  uint8_t dist_waiting; /* in s->dist_wait by dist_link: a member's pieces held back */
  dred_queue_t dist_link;
  member_t m[];
} inst_t;

/* How many ended instances' keys the scheduler remembers (sched_t.ended): a stale READY
 * comes right after its member heard a worker died, within a few instances' time. */
#define SCHED_ENDED_KEEP 4096u

struct sched {
  uint32_t nworkers;
  uint32_t nfailed; /* workers with alive == 0 */
  sched_policy_t policy;
  worker_t *w; /* [1..nworkers] */
  uint32_t *node_of; /* [0..nworkers]: each worker's node (sched_set_node), 0 by default */
  uint64_t node_gen; /* counts node_of's changes, from 1: groups renumber their nodes */
  double speed_sum; /* over live measured workers, for the "unknown speed" mean */
  uint32_t nmeasured;
  dred_keymap_t groups, insts, tasks; /* common/keymap.h */
  /* The keys of the last SCHED_ENDED_KEEP instances that ended, a ring (sched.c,
   * ended_note): a READY for one of them is stale and dropped, never a new instance. */
  dred_keymap_t ended;
  dred_keymap_node_t *ended_ring;
  uint32_t ended_next, ended_count;
  uint64_t stale_readys; /* READYs dropped so */
  dred_queue_t inst_list;
  /* Distribution's pace (sched_distribute.c): room() says how many more DATA pieces a
   * worker's link takes now (unset: any number); instances with pieces held back wait in
   * dist_wait for sched_dist_pump. */
  sched_room_fn room;
  void *room_arg;
  dred_queue_t dist_wait;
  int dist_counted; /* some worker's dist_sent is not 0 */
  uint64_t next_task_id;
  uint64_t now; /* the current event's time */
  sched_action_t *act;
  size_t act_head, act_len, act_cap;
};

/* ---- sched.c: helpers the recovery rules call ------------------------------------------- */

int worker_alive(const sched_t *s, uint32_t w);
sched_key_t key_of(const proto_msg_t *m);
sched_action_t *act_send(sched_t *s, sched_key_t key, proto_type_t type, uint32_t worker);
inst_t *inst_find(const sched_t *s, sched_key_t key);
msg_t *msg_new(uint32_t n, uint32_t worker, uint32_t member, proto_buf_t buf);
void msg_enqueue(inst_t *in, msg_t *m, int at_head);
void msg_dequeue(inst_t *in, msg_t *m);
void task_dispatch(sched_t *s, inst_t *in, msg_t *a, msg_t *b);
void task_free(sched_t *s, task_t *t);
void inst_fail(inst_t *in, int32_t status);
void inst_settle(sched_t *s, inst_t *in);
void inst_tell(sched_t *s, inst_t *in, uint32_t k, int32_t status);
void inst_complete(sched_t *s, inst_t *in); /* tell every live member OK, then free */
void inst_journal_and_free(sched_t *s, inst_t *in);
int32_t known_error(int32_t error, int32_t otherwise);

/* ---- sched_distribute.c: allreduce and bcast ------------------------------------------------ */

/* The inline operand member k's READY must carry (bytes), by kind. */
uint64_t dist_inline_want(const inst_t *in, uint32_t k);
/* Every operand of an inline instance is here: INLINE to the root, or to every member of an
 * allreduce.  Then every live member is told OK. */
void dist_inline_complete(sched_t *s, inst_t *in);
/* A bcast member's READY (parameters agreed): the root's may carry the data. */
void dist_bcast_ready(sched_t *s, inst_t *in, uint32_t k, const proto_msg_t *r);
/* An allreduce's result is whole at the root (its message covers every member). */
void dist_begin(sched_t *s, inst_t *in, msg_t *whole);
/* Send what each arrived member lacks; tell those that have it all; free when done. */
void dist_settle(sched_t *s, inst_t *in);
/* Would the root's death end this instance with DRED_ERR_ROOT_FAILED?  A reduce's root is
 * where the result goes; a bcast's root and an allreduce's root (member 0, where the
 * result of a large one is gathered) matter only until the master holds the whole result,
 * and an inline allreduce's root is a member like the others. */
int dist_root_matters(const inst_t *in);
int on_data(sched_t *s, const sched_event_t *ev); /* PROTO_DATA */
int on_have(sched_t *s, const sched_event_t *ev); /* PROTO_HAVE */

/* ---- sched_recover.c: the recovery rules -------------------------------------------------- */

/* A buffer is gone: RECOVER each member of its set on its own. */
void lose_set(sched_t *s, inst_t *in, const msg_t *m);
/* A new instance some of whose members' workers are already dead: they may have called
 * it before dying, so each is recovered like a member dying before its READY (a dead root
 * fails it with DRED_ERR_ROOT_FAILED). */
void inst_started_after_deaths(sched_t *s, inst_t *in);
/* A READY flagged recovered (on_ready hands it over; `in` may be NULL). */
int on_recovered_ready(sched_t *s, inst_t *in, const sched_event_t *ev);
/* A node partial (its message m, not queued) overlapping members already covered or being
 * recovered (sched.c's on_partial): not taken; each member of it still waiting is
 * recovered on its own. */
void partial_refuse(sched_t *s, inst_t *in, const msg_t *m);
int on_worker_failed(sched_t *s, uint32_t w);              /* SCHED_EV_WORKER_FAILED */
int on_recover_failed(sched_t *s, const sched_event_t *ev); /* PROTO_RECOVER_FAILED   */

/* ---- sched_nodes.c: pairing within each node first ----------------------------------------- */

/* Switch node-by-node pairing on for a new instance if it applies (commutative, not inline,
 * more than one node).  -1 when out of memory, nothing changed. */
int nodes_inst_init(const sched_t *s, group_t *g, inst_t *in);
void nodes_inst_free(inst_t *in);
/* Something that may produce a buffer on member's node began (+1) or ended (-1): a
 * member's arrival (-1), a task executed by the member's worker (+1, then -1). */
void nodes_count(inst_t *in, uint32_t member, int delta);
/* Recovery begins: arrival order from now on. */
void nodes_off(inst_t *in);
/* A worker moves to another node (the master sets nodes once, before any reduction). */
void nodes_changed(sched_t *s);
/* A pairing pass of a by_node instance. */
void nodes_pair(sched_t *s, inst_t *in);

#endif /* DRED_SCHED_INTERNAL_H */
