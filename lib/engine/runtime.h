/*
 * runtime.h -- libdred's internal state, shared by its files in lib/engine/, lib/paths/,
 * lib/mpi/ and lib/robust/.
 *
 * One dred_rt_t per process.  Application threads touch only what `lock` protects (the
 * instance table, the submission queue, the group table); everything else -- MPI traffic,
 * tasks, buffers -- belongs to the runtime thread (runtime.c), which sleeps in its libuv
 * loop until a control link, a timer or an application thread (uv_async) wakes it.
 *
 *   api.c        public functions: argument checks, then hand-off to the runtime
 *   future.c     futures (mutex + condition variable, two references)
 *   group.c      communicator -> dred group (member list, id, auto-tag sequence)
 *   typecheck.c  which predefined ops apply to which datatypes; contiguity
 *   dataplane.c  RMA/shared-memory windows, the pool, and task execution (combine)
 *   snapdir.c    the table of operand snapshots at the head of each pool segment
 *   handover.c   the node's hand-over beacon: replica writes wait for operand copies
 *   lifetime.c   MPI_Op_free/MPI_Type_free wrappers: what a pending reduction uses stays
 *   mem.c        dred_alloc_mem/dred_free_mem: application blocks in the shared pool
 *   runtime.c    the runtime thread: messages from the master, instances, shutdown
 *   replicate.c  the robust layer's entry points: replica store, FAILED, END, progress
 *   replica_send.c   snapshots and the copies sent to neighbours (placement, shm, bulk, ACK)
 *   replica_recv.c   copies received from neighbours: checked, written to the store
 *   recover.c    answering RECOVER: an operand back from a copy, sendbuf or a snapshot
 *   absorb.c     combining into a snapshot in place, and finishing that for a dead peer
 */
#ifndef DRED_RUNTIME_H
#define DRED_RUNTIME_H

#include <mpi.h>
#include <stdint.h>
#include <uv.h>

#include "../../common/admission.h"
#include "../../common/config.h"
#include "../../common/keymap.h"
#include "../../common/mpi/boot.h"
#include "../../common/net.h"
#include "../shm/pool.h"
#include "../../common/queue.h"
#include "../shm/segment.h"
#include "../../common/tagseq.h"
#include "../../include/dred.h"
#include "robust.h"

/* The largest reduction dred accepts, in bytes (count * extent): 1 TiB, beyond any node
 * dred runs on; reductions above the node's physical memory are refused as well
 * (DRED_ERR_NOMEM).  Documented in dred(3). */
#define DRED_MAX_BYTES (1ull << 40)
#define DRED_RMA_MAX_DEPTH 64
#define DRED_SNAPDIR_BYTES 32768u /* head of each pool segment: the snapshot directory */
#define DRED_SNAPDIR_SLOT_BYTES 128u /* one slot (snapdir.c); the head's last 64 bytes are
                                        handover.c's beacon */
#define DRED_SNAPDIR_SLOTS ((DRED_SNAPDIR_BYTES - 64u) / DRED_SNAPDIR_SLOT_BYTES)

/* ---- futures (future.c) ---- */
struct dred_future {
  uv_mutex_t mu;
  uv_cond_t cv;
  int done;
  int status;
  int refs; /* the application's and the runtime's */
  int abandoned; /* the application freed it while pending: it wants nothing more */
  /* A reduction that met in shared memory (meetpath.c): nothing will complete it unless
   * the waiting thread looks at its slot.  Set before the future is handed out, then
   * read-only; meet_slot NULL otherwise. */
  struct dred_rt *meet_rt;
  struct dred_meet_slot *meet_slot;
  uint64_t meet_seq, meet_gid;
  int64_t meet_tag;
};
dred_future *dred_future_new(void);
void dred_future_complete(dred_future *f, int status); /* drops the runtime's reference */
/* Runtime thread, before reading the caller's sendbuf: returns 0 with the future locked
 * (read it, then dred_future_unlock), or 1 if the application abandoned the reduction
 * (then sendbuf may already be gone: do not touch it; nothing is locked). */
int dred_future_abandoned_lock(dred_future *f);
void dred_future_unlock(dred_future *f);

/* ---- groups (group.c) ---- */
typedef struct dred_group {
  dred_queue_t link;  /* rt->groups */
  uint64_t id;
  uint32_t n;
  uint32_t *workers;  /* private-communicator ranks of the members, in comm order */
  int64_t auto_seq;   /* next DRED_TAG_AUTO sequence number (under rt->lock)      */
  dred_tagseq_t tags[PROTO_KINDS]; /* explicit tags' use counts, per kind, for their
                                     * keys (under rt->lock) */
  int defined;        /* GROUP sent to the master (set by the runtime under lock) */
  int spans_nodes;    /* its members are on more than one node                     */
  /* Its ring in the node's meeting place (meetpath.c), looked up at its first auto-tagged
   * reduction: NULL when it spans nodes, is too large, or the table was full. */
  struct dred_meet_ring *meet_ring;
  int meet_looked;
} dred_group_t;

struct dred_rt;
/* Resolve `comm` to its group and this process's member rank.  DRED_ERR_ARG (logged)
 * when comm is not derived from dred_comm(). */
int dred_group_of(struct dred_rt *rt, MPI_Comm comm, dred_group_t **g, int *member);
/* dred's communicator attribute's delete callback, and what it does: forget every
 * thread's cached lookup (dred_finalize calls it too). */
int dred_group_attr_delete(MPI_Comm comm, int keyval, void *val, void *extra);
void dred_group_forget(void);
void dred_groups_free(struct dred_rt *rt);
/* May worker `src` send this process a copy of `member`'s operand in group `id`?  NULL
 * when it may, or when this process does not know the group yet (its application has not
 * reduced on it: nothing to judge by, so the header's own checks must do); else why not
 * (only a member's own process sends its copies, and only to the holders common/placement.h
 * names for it). */
const char *dred_group_copy_refused(struct dred_rt *rt, uint64_t id, uint32_t member, int src);

/* ---- op/type checks (typecheck.c) ---- */
/* How an operand sits in dred's buffers (typecheck.c explains each). */
typedef enum {
  DRED_LAYOUT_DIRECT = 0, /* the caller's bytes as they are (memcpy; recvbuf is the root's acc) */
  DRED_LAYOUT_PACKED,     /* predefined op, derived type: count*mult elements of exec_type     */
  DRED_LAYOUT_IMAGE       /* user op, type with holes: the bytes from the true lower bound on   */
} dred_layout_t;

typedef struct {
  /* size: MPI_Type_size of one element of the caller's datatype; extent: bytes one element
   * takes in dred's buffers (the caller's extent, except PACKED: mult * extent(exec_type)) */
  uint32_t size, extent;
  int op_is_user, commutative;
  /* What MPI_Reduce_local is called with: MPICH 4.0.2 refuses predefined ops on derived
   * datatypes, so a derived type under a predefined op is combined as `mult` elements of
   * its predefined base type per element. */
  MPI_Datatype exec_type;
  uint32_t mult;
  int layout;            /* dred_layout_t */
  int base_padded;       /* PACKED: exec_type has padding (MPI_DOUBLE_INT...) */
  int named;             /* a named (predefined) datatype: never freed */
  MPI_Aint type_extent;  /* the caller's datatype: extent, true lower bound, true extent */
  MPI_Aint true_lb, true_extent;
  uint32_t sig;          /* type-signature fingerprint members must agree on (READY) */
} dred_typeinfo_t;
int dred_typecheck(MPI_Datatype type, MPI_Op op, dred_typeinfo_t *ti);
/* The same for a bcast, which has no op: DIRECT for a type without holes, else PACKED as
 * bytes (MPI_Pack / MPI_Unpack with the caller's type: only its bytes are written). */
int dred_typecheck_bcast(MPI_Datatype type, dred_typeinfo_t *ti);

/* ---- op/datatype lifetimes (lifetime.c) ---- */
#define DRED_HELD_OP 1   /* the reduction holds a reference on its user op          */
#define DRED_HELD_TYPE 2 /* ... and on its derived datatype                         */
/* Take references on a user op (op_is_user) and a derived datatype so that MPI_Op_free /
 * MPI_Type_free is deferred while the reduction is pending; *held_flags says which were
 * taken (pass it to release).  DRED_OK or DRED_ERR_NOMEM (logged, nothing held). */
int dred_lifetime_hold(MPI_Op op, int op_is_user, MPI_Datatype type, int type_is_named,
                       int *held_flags);
/* Drop them; performs the frees the application asked for meanwhile, if these were the
 * last references. */
void dred_lifetime_release(MPI_Op op, MPI_Datatype type, int held_flags);
/* Distinct handles held now; frees deferred and frees performed late, since the start. */
void dred_lifetime_stats(uint64_t *handles_held, uint64_t *deferred, uint64_t *done_late);

/* ---- a buffer holding a recovered copy of another member's operand (recover.c) ---- */
typedef struct dred_rbuf {
  dred_queue_t link; /* inst->rbufs */
  uint32_t member;
  char *p;
  int64_t pool_off;
  int malloced;
} dred_rbuf_t;

/* ---- application blocks in the shared pool (mem.c) ---- */
typedef struct dred_memblk dred_memblk_t;

/* ---- instances ---- */
/* INST_MEET: the reduction met in shared memory (meetpath.c); the runtime thread never
 * announces it, and whichever thread settles it first (meet_claimed) finishes it. */
typedef enum { INST_SUBMITTED = 0, INST_ANNOUNCED, INST_ENDED, INST_MEET } inst_state_t;

typedef struct dred_inst {
  dred_keymap_node_t knode; /* rt->inst, by (group_id, tag) (under lock) */
  dred_queue_t qlink;  /* rt->submitq (under lock)              */
  uint64_t group_id;
  int64_t tag;
  dred_group_t *group;
  uint32_t member, root;
  /* The collective (PROTO_KIND_*) and this member's role in it (distribute.c).  is_root:
   * the member that combines into its own accumulator and ends with the result there --
   * a reduce's root, a large allreduce's member 0 (where the reduction gathers), every
   * member of an inline allreduce, a bcast's root (its data).  receives: the member gets
   * the result from dred-master as DATA into `res` (recvbuf, or a buffer of its own for
   * PACKED and IMAGE layouts): a large allreduce's other members, a bcast's non-roots. */
  int kind;
  int is_root;
  int receives;
  char *res;
  int res_own;         /* res is ours (malloc'd), not recvbuf */
  uint64_t res_have;   /* bytes of the result received so far */
  dred_future *fut;
  const void *sendbuf; /* MPI_IN_PLACE at the root: operand already in recvbuf */
  void *recvbuf;
  uint64_t count;
  MPI_Datatype type;
  MPI_Datatype type_hold; /* PACKED/IMAGE layouts: a dup of `type` for MPI_Pack/MPI_Unpack,
                           * valid whatever the caller does with `type`; else NULL */
  MPI_Op op;
  int held;            /* DRED_HELD_* references on op/type (lifetime.c) */
  dred_typeinfo_t ti;
  size_t bytes;        /* count * ti.extent: the operand in dred's layout */
  /* the accumulator: recvbuf at a DIRECT root, else a pool block or a malloc'd buffer */
  char *acc;
  int64_t pool_off;    /* -1 unless acc is in the shared pool */
  int acc_malloced;
  int acc_early;       /* acc filled by dred_ireduce on the caller's thread */
  /* Zero copy (mem.c): a non-root DIRECT sendbuf inside a dred_alloc_mem block is read in
   * place.  app_blk: the block, one of whose users this reduction is until it is released.
   * acc_is_app: acc is still that sendbuf -- the application's memory, read-only to dred
   * and never freed by it: the first combine here writes its result to a new buffer. */
  dred_memblk_t *app_blk;
  int acc_is_app;
  /* Pool admission (admit.c): the pool bytes reserved for this reduction here, and
   * whether its operand had to wait for room: pool_queued stays set once it did;
   * pool_wait while acc is a plain private copy (not attached to any window) and the
   * reduction sits unannounced in rt->poolq. */
  size_t pool_future;  /* its first partial result, admitted but not yet allocated */
  int pool_admitted, pool_queued, pool_wait;
  uint64_t pool_queued_ns;
  int join_error;      /* dred_ireduce could not allocate acc: joins with this error */
  int refused;         /* the call was refused (join_error says why): holds no operand */
  uint64_t node_bytes; /* taken from the node's memory budget (nodemem.c) until it ends */
  int abandon_sent;    /* ABANDON sent: dred_finalize could wait no longer for it */
  /* An inline reduction (bytes <= DRED_INLINE_MAX): a non-root member's operand, in dred's
   * layout, is inl_data (inside this allocation) and travels in its READY; it has no acc,
   * no snapshot, no replicas and runs no task.  The root keeps acc as usual and folds the
   * master's INLINE message into it (dred_dp_inline_fold). */
  int inl;
  uint8_t *inl_data;
  int inl_status;      /* the root's fold failed: its future ends with this */
  int inl_folded;      /* the root took its INLINE message */
  /* The meeting place (meetpath.c): the slot and sequence number of a reduction that met
   * there (state INST_MEET, linked in rt->meetq by qlink), or -- one that went to the
   * master from a mixed slot -- the members that met there, named in its READY. */
  struct dred_meet_slot *meet_slot;
  uint64_t meet_seq, meet_mask;
  int meet_claimed;
  /* A non-root operand that met by reference: the pool block peers read (acc itself when
   * acc is a plain pool block of ours, else meet_blk, a copy made for the meeting), and
   * the root's progress through a fold done in bounded steps. */
  int meet_by_ref;
  char *meet_blk;
  int64_t meet_blk_off;
  uint64_t meet_fold_next; /* a reduce root's next element to fold; a bcast's next byte  */
  uint64_t meet_copied;    /* an allreduce's chunks copied to our result (bit c)         */
  int meet_publish;        /* a bcast root: the slot is still to be told its data is in  */
  int meet_pipelined;      /* ... and the data is still to be copied into meet_blk       */
  inst_state_t state;
  int end_status;      /* set when END arrives while tasks are still running */
  int tasks_pending;   /* tasks queued or running for this instance */
  /* The robust layer's part of this reduction -- its snapshot and directory slot, store
   * reads in flight, recovered copies of other members' operands (replicate_internal.h).
   * Opaque here, and NULL until that layer needs it: never with DRED_REPLICAS=0 and no
   * failure. */
  struct dred_repl_inst *repl;
} dred_inst_t;

/* ---- tasks (dataplane.c) ---- */
typedef struct {
  MPI_Request req;
  char *buf;
  uint64_t elem0, nelem;
  int busy;
} dred_rma_slot_t;

typedef struct dred_task {
  dred_queue_t link;
  uint64_t task_id;
  uint64_t group_id;
  int64_t tag;
  uint32_t provider; /* private-communicator rank */
  uint64_t count;
  int exec_is_left;
  proto_buf_t buf;
  dred_inst_t *inst;
  uint32_t exec_member;
  char *dst;           /* the executor's buffer: inst->acc or a recovered copy */
  int64_t dst_pool_off;
  /* where that buffer is recorded, so the RMA path can swap in its result */
  char **own_p;
  int64_t *own_pool_off;
  int *own_malloced;
  int own_ro;          /* that buffer is the replica snapshot: build the result elsewhere */
  /* In-place absorption (absorb.c): the master allows it (TASK's absorb), and whether
   * this task does it -- dst is then our snapshot, listed in directory slot abs_slot,
   * combined piece by piece through scratch `scr` in our pool. */
  int absorb, absorbing;
  uint32_t prov_member;
  int abs_slot;
  char *scr;
  int64_t scr_off;
  int scr_malloced;
  uint64_t piece_elems;
  int oop;             /* this task builds its result in `out` (RMA path, or own_ro)  */
  const struct dred_kernel *kern; /* vectorised combine (kernel.h), or NULL: MPI_Reduce_local */
  /* RMA path: the result is built out of place, so a provider dying mid-read leaves the
   * executor's buffer intact (the reads land here, then the executor's data is combined in) */
  char *out;
  int64_t out_pool_off;
  int out_malloced;
  /* progress */
  int started;
  uint64_t t0;
  uint64_t next_elem;  /* first element not yet fetched/combined */
  uint64_t done_elems;
  const char *src;     /* direct pointer into the provider's pool, or NULL for RMA */
  int nslots;
  int serving;         /* SERVE on sent to the provider (RMA path): send SERVE off */
  dred_rma_slot_t slot[DRED_RMA_MAX_DEPTH];
} dred_task_t;

/* ---- the runtime ---- */
struct dred_robust;
typedef struct dred_rt {
  const struct dred_robust *robust; /* the robust layer's hooks (dred_robust_layer) */
  struct dred_repl_state *robust_state; /* and its state: the layer's alone (open/destroy) */
  int robust_engaged;  /* the layer was told of a failure or a RECOVER (DRED_RT_ROBUST_ON) */
  dred_config_t cfg;
  int world_rank, world_size;
  int mpi_inited_by_us;
  MPI_Comm priv;       /* dred's own traffic: dup of MPI_COMM_WORLD       */
  MPI_Comm comm;       /* dred_comm(): the application processes          */
  MPI_Comm node;       /* application processes sharing this node         */
  int comm_keyval;

  /* data plane */
  MPI_Win dwin;        /* dynamic window over the whole world (RMA path)  */
  MPI_Win swin;        /* shared-memory pool window on `node`, or NULL    */
  char *pool_base;
  size_t pool_size;
  dred_pool_t pool;
  uv_mutex_t pool_mu;  /* pool and snapshot directory: application threads allocate too */
  uint64_t pool_fallbacks; /* buffers that did not fit the pool (under pool_mu) */
  /* admit.c: the admission rules' state (common/admission.h, under pool_mu); the
   * reductions waiting for room, oldest first (runtime thread only, linked by qlink);
   * totals for the log */
  dred_admission_t admission;
  dred_queue_t poolq;
  uint64_t pool_waited, pool_stalls;
  uint8_t snapdir_used[DRED_SNAPDIR_SLOTS];
  dred_queue_t memblks; /* dred_alloc_mem blocks (mem.c), under pool_mu */
  size_t nmemblks;
  uint64_t mem_borrows; /* operands read in place from those blocks (zero copy) */
  unsigned handover_active; /* dred_ireduce calls copying an operand in (pool_mu) */
  uint64_t handover_waits, handover_wait_ns; /* replica writes that stepped aside (atomic) */
  uint64_t offnode_calls, offnode_ns, offnode_max_ns; /* calls that waited for an off-node
                                                        copy, and how long (under lock) */
  char **peer_base;    /* by private rank: a node peer's pool, else NULL   */
  dred_seg_t *segs;    /* by private rank: every worker's pool segment (segment.h) */
  size_t chunk_bytes;
  char *scratch;       /* one chunk, for non-commutative left combines     */
  size_t scratch_size;

  /* shared with application threads, under `lock` */
  uv_mutex_t lock;
  dred_keymap_t inst; /* reductions in flight, by (group, tag) */
  size_t ninst;
  dred_queue_t submitq;
  dred_queue_t groups;
  int bye_requested;
  uint64_t finalize_deadline_ns; /* set with bye_requested: pending reductions are
                                    abandoned after it (0: never; DRED_FINALIZE_WAIT_S) */
  int dead;            /* master lost or fatal error: new calls fail */
  int dead_status;
  uint64_t dead_refused; /* dred_ireduce calls refused since (under `lock`) */
  uint64_t cap_refused;  /* calls refused at DRED_MAX_INFLIGHT (under `lock`) */
  size_t entering;       /* dred_ireduce calls between their turn and their insert */
  size_t nrefused;       /* refused calls in the table: not counted against the cap */
  /* The node's memory budget for reductions in flight (nodemem.c): the shared counters
   * (total, then one per node rank), or NULL and this process's own count. */
  uint64_t *nodemem;
  MPI_Win nodemem_win;
  uint64_t nodemem_limit, nodemem_local;
  int nodemem_me;
  int *nodemem_rank_of;  /* job rank -> node rank, -1 off this node */
  dred_queue_t handover_tickets; /* dred_ireduce calls waiting for an off-node copy (handover.c) */
  uv_cond_t handover_cv;         /* broadcast when one of them may go on */

  /* runtime thread only */
  uv_thread_t thread;
  uv_loop_t loop;      /* initialised in dred_init, run by the runtime thread */
  uv_timer_t watch_timer;
  struct dred_watch *watch; /* this node's death-watch file, when the master is on our node
                               (common/deathwatch.h): the runtime thread holds our slot */
  dred_boot_t boot;    /* the shared start-up (common/mpi/boot.h)             */
  dred_net_t net;      /* control links: the master, node and job peers       */
  uv_async_t wake;     /* application threads: "look at the submission queue" */
  uv_check_t turn;     /* after each wake-up: one turn of work (runtime.c)    */
  uv_idle_t spin;      /* active while a task runs: the loop does not sleep   */
  uv_timer_t mpi_poll; /* while only MPI transfers are pending: a 1 ms poll   */
  uv_timer_t due;      /* the robust layer's next deferred work (progress)     */
  uint64_t due_armed_ns; /* when `due` is set to fire (0: not armed)          */
  dred_queue_t tasks;  /* FIFO; the head runs */
  uint64_t last_master_ns;
  uint64_t last_watch_ns; /* when on_watch last ran: a late tick means we were stalled */
  uint64_t stall_ns, stall_end_ns; /* the last stall a watch tick saw, and when it saw it */
  int bye_sent;
  uint64_t master_eof_ns; /* the master's link closed after our BYE, SHUTDOWN not read yet */
  int abandon_pass;    /* the finalize deadline passed and pending reductions were abandoned */
  /* cut_short is written under `lock` */
  int cut_short;       /* reductions ended DRED_ERR_SHUTDOWN while dred_finalize waited (by
                          our deadline or another member's): it returns DRED_ERR_TIMEOUT */
  /* Who is dead, this process's only record: by private rank, declared failed by the
   * master (PROTO_FAILED; this process itself too, after a false detection).  Written
   * only by dred_repl_on_failed() (replicate.c), with nfailed its count; everything else
   * (replica placement, peer sends, snapshot lookups, dred_finalize's verdict) reads it.
   * net.c forgetting a dropped peer's address is link state, not a second record: it
   * only stops redialling.  `dead` above is about this process, not about others. */
  uint8_t *failed;
  uint32_t *serving;   /* by private rank: its RMA tasks reading our memory (SERVE) */
  uint64_t nserving;   /* their sum: while > 0 the loop drives MPI's progress     */
  int nfailed;          /* entries set in failed[] */
  char job_id[64];     /* from dred-master at init (common/mpi/boot.h) */
  int shutdown;        /* SHUTDOWN received */
  uint64_t tasks_run, bytes_combined;
  uint64_t max_turn_ns; /* longest loop turn (PINGs wait at most that long) */
  uint64_t progress_ns; /* when a turn last did something (runtime.c: spin or poll) */
  uint64_t announced_now; /* inline READYs the calling thread sent itself (under lock) */
  /* The node's meeting place (meetpath.c): the table in its own shared window, NULL when
   * the job does not use it (DRED_MEET=0 anywhere, no shared memory); the reductions that
   * met there and are not settled yet (under lock, linked by qlink); counters. */
  struct dred_meet_table *meet;
  MPI_Win meet_win;
  dred_queue_t meetq;
  uint64_t meet_done, meet_spilled; /* under lock */
  /* Pool blocks of ours that a met reduction's root may still read after our future
   * completed (meetpath.c): freed once the slot says it no longer needs them. */
  dred_queue_t meet_lent;
  uint64_t meet_turn_ns;
} dred_rt_t;

/* distribute.c: allreduce and bcast, what the reduce path does not do */
/* A bcast's announcement: READY (the root's carries the data if inline), then at a large
 * bcast's root the data as DATA. */
void dred_dist_announce_bcast(dred_rt_t *rt, dred_inst_t *in);
void dred_dist_on_push(dred_rt_t *rt, const proto_msg_t *m);
void dred_dist_on_data(dred_rt_t *rt, const proto_msg_t *m);
/* A receiver's result buffer (`res`): recvbuf for a DIRECT layout, else a buffer of its
 * own unpacked into recvbuf at the end (dred_dist_finish).  NULL without memory (logged). */
char *dred_dist_result_buf(dred_inst_t *in);
/* END(OK) came: a receiver without its whole result cannot report success. */
int dred_dist_end_status(dred_inst_t *in, int status);
/* At the end: a receiver's result into recvbuf (PACKED, IMAGE), its buffer freed. */
int dred_dist_finish(dred_rt_t *rt, dred_inst_t *in, int status);

/* runtime.c */
int dred_rt_start(dred_rt_t *rt);
void dred_rt_stop(dred_rt_t *rt); /* after SHUTDOWN (or master lost): join the thread */
dred_inst_t *dred_rt_find(dred_rt_t *rt, uint64_t group_id, int64_t tag); /* under lock */
void dred_rt_insert(dred_rt_t *rt, dred_inst_t *in);                     /* under lock */

/* runtime.c: finish `in` once it ended and nothing reads its buffers any more */
void dred_rt_inst_maybe_finish(dred_rt_t *rt, dred_inst_t *in);
void dred_rt_send_master(dred_rt_t *rt, const proto_msg_t *m);
/* ABANDON `in` with `status` for every member (once; only an announced instance). */
void dred_rt_abandon(dred_rt_t *rt, dred_inst_t *in, int status);
/* End every reduction of this process with `status`; no new ones start. */
void dred_rt_fail_everything(dred_rt_t *rt, int status);
/* End `in` now: the root's result to recvbuf, buffers released, future completed, freed. */
void dred_rt_inst_finish(dred_rt_t *rt, dred_inst_t *in, int status);

/* ---- the node's meeting place (meetpath.c, over lib/shm/meet.h) ---- */
/* Runtime thread, once per loop turn: lent blocks the root is done with go back to the
 * pool, and met reductions whose slot spilled go to dred-master (for members whose
 * application thread does not look).  Returns 1 if it did anything. */
int dred_meetpath_turn(dred_rt_t *rt);
/* dred_init, collective over dred_comm(): map the node's table, agree job-wide whether it
 * is used.  Never fails the job: without it every reduction goes to the master. */
void dred_meetpath_init(dred_rt_t *rt);
void dred_meetpath_finalize(dred_rt_t *rt, int collective);
/* dred_ireduce, before taking rt->lock, once the operand is loaded: give a non-root
 * operand that will meet by reference a pool block, if it is not in one of ours already
 * (the copy is made here, outside the lock). */
void dred_meetpath_prepare(dred_rt_t *rt, dred_inst_t *in);
/* The block prepare gave `in`, freed (a call that ends before it arrives anywhere). */
void dred_meetpath_unprepare(dred_rt_t *rt, dred_inst_t *in);
/* dred_ireduce, under rt->lock, `in` complete (its key in->tag) but not inserted: 1 if it
 * met in shared memory (insert it, hand out the future, nothing for the runtime thread to
 * do); 0 to go to the master (in->meet_mask set). */
int dred_meetpath_arrive(dred_rt_t *rt, dred_inst_t *in);
/* A bcast root that met by reference: copy its data into the block it named, piece by
 * piece, telling the slot as it goes (the members copy out meanwhile).  On the calling
 * thread, after arriving, without rt->lock; nothing if there is nothing to publish. */
void dred_meetpath_publish(dred_rt_t *rt, dred_inst_t *in);
/* Any thread: finish a met collective whose slot decided, or with `status` if it has not
 * (0: only if decided).  `budget`: bytes of combining or copying this call may do
 * (UINT64_MAX: all).  Returns 0 while pending (or its work is only part done), 1 if it is
 * finished or another thread is finishing it, 2 if it went to dred-master instead, 3 if
 * its part is done and it waits for peers to fold the rest (an allreduce's chunks: wait
 * for the slot's epoch to move). */
int dred_meetpath_settle(dred_rt_t *rt, uint64_t gid, int64_t tag, int status, uint64_t budget);
/* The future's side: wait at most timeout_ns (UINT64_MAX: for ever) for a met reduction,
 * settling it when its slot decides.  Returns when the future is done or time ran out. */
void dred_meetpath_wait(dred_future *f, uint64_t timeout_ns);
/* Runtime thread: worker `w` was declared failed; the master is lost (status); at
 * dred_finalize, settle what decided and end the rest past the deadline.  Returns the
 * number still pending: nothing wakes the thread when a slot decides, so the caller
 * looks again shortly. */
void dred_meetpath_on_failed(dred_rt_t *rt, uint32_t w);
void dred_meetpath_fail_all(dred_rt_t *rt, int status);
int dred_meetpath_sweep(dred_rt_t *rt, int deadline_passed);
/* nodemem.c: the node's memory budget.  init/finalize are collective over the node (after
 * the pool); take returns 0, or -1 when the node's reductions in flight would exceed
 * DRED_NODE_MEM_MB (then *total says how much they hold); give returns what take took;
 * on_failed takes a dead node peer's share off the total. */
void dred_nodemem_init(dred_rt_t *rt);
void dred_nodemem_finalize(dred_rt_t *rt, int collective);
int dred_nodemem_take(dred_rt_t *rt, uint64_t bytes, uint64_t *total);
void dred_nodemem_give(dred_rt_t *rt, uint64_t bytes);
void dred_nodemem_on_failed(dred_rt_t *rt, uint32_t w);

/* Finish every met reduction whose slot decided and that nobody finished yet -- those
 * whose futures were freed or never waited on -- so they stop counting against
 * DRED_MAX_INFLIGHT.  Application thread, without rt->lock.  Returns how many. */
int dred_meetpath_reclaim(dred_rt_t *rt);

/* Signal dispositions libdred sets at dred_init where the application left the default
 * (signals.c): SIGUSR1/SIGPIPE ignored, SIGTERM/SIGINT/SIGHUP remove our files first. */
void dred_signals_init(void);
/* A reference to our buffer p (pool offset or -1) of len bytes, for a READY or DONE. */
proto_buf_t dred_rt_bufref(const dred_rt_t *rt, const char *p, int64_t pool_off, uint64_t len);
/* The one READY builder: *m becomes a READY for member `member`'s operand of `in`, with
 * every parameter the master checks members agree on; the caller adds the buffer (and
 * replicas, inline operand, error or the recovered flag).  A member's own READY
 * (runtime.c) and a recovered copy's (recover.c) both start here. */
void dred_rt_ready(const dred_inst_t *in, uint32_t member, proto_msg_t *m);
/* Application thread, under rt->lock, `in` inserted: send an inline reduction's READY
 * from this thread (1), or leave it to the runtime thread (0: submit it as usual). */
int dred_rt_announce_now(dred_rt_t *rt, dred_inst_t *in);

/* admit.c -- pool admission: reductions wait for room in the pool, not on the slow path */
#define DRED_ADMIT_STALL_MS 500 /* nothing freed this long: the oldest waiting goes ahead */
/* Application thread, dred_dp_acc_early, before a non-root operand is copied in: reserve
 * what the reduction will hold in our pool.  1: go ahead (copy into the pool); 0: room
 * is short, or others wait already -- copy into private memory and wait (the caller sets
 * pool_wait).  `wait_ok` 0 reserves whatever the outcome (an operand already in place). */
int dred_admit_call(dred_rt_t *rt, dred_inst_t *in, int wait_ok);
/* Once the pool is set up (dred_dp_init). */
void dred_admit_init(dred_rt_t *rt);
/* Runtime thread: `in` allocated its first partial result (task_begin). */
void dred_admit_spent(dred_rt_t *rt, dred_inst_t *in);
/* Its reservation, or its place in the queue and its private copy, go (any thread, once
 * nobody else can see `in`, or the runtime thread). */
void dred_admit_release(dred_rt_t *rt, dred_inst_t *in);
/* Runtime thread, at announce: a waiting reduction joins the queue (1) instead. */
int dred_admit_defer(dred_rt_t *rt, dred_inst_t *in);
/* Runtime thread, once per turn: admit waiting reductions in order while room allows (or
 * the oldest after POOL_STALL_MS without a release, or all when `force`), each moved into
 * the pool and handed to `announce`.  Returns how many; *next_due_ns: when the oldest
 * would stall (uv_hrtime), or 0. */
int dred_admit_progress(dred_rt_t *rt, void (*announce)(dred_rt_t *, dred_inst_t *), int force,
                        uint64_t *next_due_ns);

/* snapdir.c -- the snapshot directory in each pool segment */
int dred_snapdir_usable(const dred_rt_t *rt);
/* Record a snapshot at pool offset `off` of our segment; returns its slot or -1. */
int dred_snapdir_publish(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                         int64_t off, uint64_t len);
void dred_snapdir_retire(dred_rt_t *rt, int slot); /* before the block is freed; -1: none */
/* Absorption's entries in our own slot (absorb.c): what is being absorbed and where, and
 * piece by piece how far it got. */
int dred_snapdir_absorb_begin(dred_rt_t *rt, int slot, uint32_t member, uint32_t prov_worker,
                              int64_t prov_off, int64_t scr_off, uint64_t piece, int exec_left);
void dred_snapdir_piece_ready(dred_rt_t *rt, int slot, uint64_t i); /* result in scratch */
void dred_snapdir_piece_done(dred_rt_t *rt, int slot, uint64_t i);  /* final in the snapshot */
void dred_snapdir_absorb_clear(dred_rt_t *rt, int slot); /* the snapshot is an operand again */
/* A node peer's slot as read (dred_snapdir_view): the snapshot and its absorption. */
typedef struct {
  uint32_t worker;
  const char *base;   /* the snapshot, in that peer's segment */
  int64_t off;
  uint32_t absorbing; /* PROTO_NO_MEMBER: it never absorbed anything */
  uint32_t prov_worker;
  int64_t prov_off, scr_off;
  uint64_t piece;
  int exec_left;
  uint64_t seq;
  void *slot;
} dred_snapview_t;
/* Find member's snapshot in node peer `worker`'s directory: DRED_OK or PROC_FAILED. */
int dred_snapdir_view(dred_rt_t *rt, uint32_t worker, uint64_t group, int64_t tag,
                      uint32_t member, uint64_t len, dred_snapview_t *v);
/* 1 if the slot did not change since the view was taken (the progress counters aside). */
int dred_snapdir_view_same(const dred_snapview_t *v);
void dred_snapdir_view_progress(const dred_snapview_t *v, uint64_t *done, uint64_t *scr);

/* handover.c -- operand copies into the pool go first on the node; in a group spanning
 * nodes, dred_ireduce returns once a copy is held on another node */
void dred_handover_begin(dred_rt_t *rt); /* around dred_ireduce's copy into the pool */
void dred_handover_end(dred_rt_t *rt);
/* A replica put's pause hook (arg: the runtime): waits, briefly, while a node peer is
 * copying an operand in. */
void dred_handover_yield(void *arg);

/* A dred_ireduce call waiting until its operand is held on another node (on its stack). */
typedef struct {
  dred_queue_t link; /* rt->handover_tickets */
  uint64_t group;
  int64_t tag;
  int holder;        /* the off-node worker whose receipt it waits for; -1: not known yet */
  int done;
} dred_handover_ticket_t;
/* Does `in`'s call wait for an off-node copy?  The one rule dred_ireduce and the runtime's
 * hooks both ask (a non-root, replicated, non-inline operand in a group spanning nodes). */
static inline int dred_handover_offnode(const dred_rt_t *rt, const dred_inst_t *in) {
  return rt->cfg.handover_node && rt->cfg.replicas > 1 && in->group->spans_nodes &&
         !in->is_root && !in->inl && in->bytes > 0 && in->join_error == DRED_OK &&
         in->kind != PROTO_KIND_BCAST && /* a bcast member has no operand to hand over */
         !in->pool_queued; /* one that waited for pool room does not wait in its call too */
}
/* Application thread, under rt->lock, before the reduction is submitted. */
void dred_handover_ticket_add(dred_rt_t *rt, dred_handover_ticket_t *t, uint64_t group,
                              int64_t tag);
/* Application thread, after submitting: wait (bounded) until the ticket is done. */
void dred_handover_wait(dred_rt_t *rt, dred_handover_ticket_t *t);
/* Runtime thread.  The reduction's off-node copy is on its way to `holder`, or there is
 * none (holder -1: the call may return at once). */
void dred_handover_expect(dred_rt_t *rt, uint64_t group, int64_t tag, int holder);
/* `holder` has the whole copy of (group, tag) in its memory; holder -1: the reduction
 * ended, or its off-node copy cannot be taken: either way the call may return. */
void dred_handover_held(dred_rt_t *rt, uint64_t group, int64_t tag, int holder);
/* Worker w failed: calls waiting for its receipt return. */
void dred_handover_holder_failed(dred_rt_t *rt, int w);
/* The runtime is dead or stopping: every waiting call returns. */
void dred_handover_release_all(dred_rt_t *rt);

/* api.c: the runtime for a public entry point, or NULL with *rc the status to return
 * (called before dred_init or after dred_finalize; logged). */
dred_rt_t *dred_api_rt(const char *fn, int *rc);

/* mem.c -- application blocks in the shared pool (dred_alloc_mem) */
void dred_mem_init(dred_rt_t *rt);     /* dred_dp_init, once the pool exists */
void dred_mem_finalize(dred_rt_t *rt); /* forget every block (the pool goes) */
/* If [p, p+len) lies wholly inside a live block: count a user on it, set *blk and
 * *pool_off (our segment's offset of p) and return 0; else -1. */
int dred_mem_borrow(dred_rt_t *rt, const void *p, size_t len, dred_memblk_t **blk,
                    int64_t *pool_off);
void dred_mem_ref(dred_rt_t *rt, dred_memblk_t *b);   /* one more user; NULL: nothing */
void dred_mem_unref(dred_rt_t *rt, dred_memblk_t *b); /* last user of a freed block: freed */

/* runtime.c: a message to another worker over the control links */
void dred_rt_send_peer(dred_rt_t *rt, uint32_t peer, const proto_msg_t *m);

/* dataplane.c */
/* On the caller's thread in dred_ireduce: fill the accumulator (a pool block for a
 * non-root member, recvbuf at the root) so the operand is in shared memory at once.
 * Leaves acc NULL when the pool is full: announce then takes the slow path. */
void dred_dp_acc_early(dred_rt_t *rt, dred_inst_t *in);
/* Fill `dst` (in->bytes) with this member's operand in dred's layout (ti.layout): a copy,
 * the packed elements, or the byte image; from sendbuf, or recvbuf at an in-place root. */
int dred_dp_load(dred_rt_t *rt, const dred_inst_t *in, char *dst);
/* At the root of a PACKED or IMAGE reduction that succeeded: write the result (acc) into
 * recvbuf as the caller's datatype lays it out (holes untouched).  DIRECT: nothing to do. */
int dred_dp_unpack_result(dred_rt_t *rt, dred_inst_t *in);
int dred_dp_buf_alloc(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off, int *malloced);
/* A block of our pool and nothing else (no private fallback, no MPI call): DRED_OK, or
 * DRED_ERR_NOMEM when the pool has no room.  Freed with dred_dp_buf_free(..., 0). */
int dred_dp_pool_block(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off);
void dred_dp_buf_free(dred_rt_t *rt, size_t bytes, char *p, int64_t pool_off, int malloced);
/* A private copy from dred_bigbuf_alloc (*p, `bytes`) becomes a reduction buffer as
 * dred_dp_buf_alloc would give one: moved into the pool when it has room, else kept where
 * it is and made reachable by RMA -- not copied into a second private buffer.  On error
 * (logged) *p is unchanged and still the caller's. */
int dred_dp_buf_adopt(dred_rt_t *rt, size_t bytes, char **p, int64_t *pool_off, int *malloced);
/* The pool's use, peak and fallbacks into a PONG (status socket, dredstat status). */
void dred_dp_pool_stats(dred_rt_t *rt, proto_msg_t *pong);
int dred_dp_init(dred_rt_t *rt);      /* collective over priv (and node) */
/* Release the data plane; collective = 1 (nobody died): also the node's shared window and
 * node communicator and our lock on dwin.  dwin itself goes in dred_boot_teardown(). */
void dred_dp_finalize(dred_rt_t *rt, int collective);
int dred_dp_acc_prepare(dred_rt_t *rt, dred_inst_t *in); /* allocate + fill the accumulator */
/* The root of an inline reduction: fold the n operands of `data` (member k at k x bytes;
 * the root's own slot is ignored, its operand is acc) into acc in rank order.  DRED_OK or
 * an error (logged). */
int dred_dp_inline_fold(dred_rt_t *rt, dred_inst_t *in, const uint8_t *data, uint32_t n);
void dred_dp_acc_release(dred_rt_t *rt, dred_inst_t *in);
/* The vectorised kernel for the reduction's op and type (kernel.h), or NULL: user ops and
 * pairs without one go through MPI_Reduce_local. */
const struct dred_kernel *dred_dp_kernel(const dred_inst_t *in);
/* One piece of n elements combined into `out` (never one of the operands): out = prov op
 * exec, or exec op prov when exec_left (the executor's operand is left under a
 * non-commutative op).  `kern` as for the task (NULL: MPI_Reduce_local).  0 or an error. */
int dred_dp_piece(const dred_inst_t *in, const struct dred_kernel *kern, int exec_left,
                  const char *exec, const char *prov, char *out, uint64_t n);
/* Advance the head task within a time budget.  Returns 1 if it did work; when the task
 * finishes, *finished is set and *status holds its outcome (a proto_task_status_t). */
int dred_dp_task_step(dred_rt_t *rt, dred_task_t *t, int *finished, int *status, int *error);
/* Stop task `t`: its provider died, or the task failed.  Reads still in flight are
 * abandoned with the buffer they land in.  The path that reads another process (MPI_Rget)
 * builds its result out of place, so a provider lost there leaves the executor's buffer
 * untouched: the task's outcome is PROVIDER_LOST. */
void dred_dp_task_abort(dred_rt_t *rt, dred_task_t *t);

#endif /* DRED_RUNTIME_H */
