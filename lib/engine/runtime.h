/*
 * runtime.h -- the runtime (dred_rt_t): libdred's state in one process, and what runtime.c
 * offers the other files.
 *
 * One dred_rt_t per process.  Application threads touch only what `lock` protects (the
 * instance table, the submission queue, the group table); everything else -- MPI traffic,
 * tasks, buffers -- belongs to the runtime thread (runtime.c), which sleeps in its libuv
 * loop until a control link, a timer or an application thread (uv_async) wakes it.
 *
 * Each module of libdred has its own header; this one holds only the runtime.  By folder:
 *   lib/engine/  api.h, future.h, group.h, typecheck.h, lifetime.h, inst.h (a reduction),
 *                task.h (a combine), snapdir.h, admit.h, mem.h, signals.h, kernel.h, and
 *                robust.h (the robust layer's events and questions, as the engine sees them)
 *   lib/paths/   meetpath.h (the meeting place), distribute.h (allreduce/bcast through
 *                dred-master), handover.h (the beacon: operand copies into the pool go
 *                first), offnode.h (a call waits for a copy on another node)
 *   lib/mpi/     dataplane.h (window.c, buffer.c, combine.c: windows, pool, buffers, task
 *                execution), nodemem.h
 *   lib/robust/  replicate_internal.h (private to the layer)
 *   lib/shm/     meet.h, pool.h, segment.h (no MPI, no runtime)
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
#include "../../common/proto.h"
#include "../../common/queue.h"
#include "../shm/pool.h"
#include "../shm/segment.h"
#include "inst.h"
#include "snapdir.h"

/* The largest reduction dred accepts, in bytes (count * extent): 1 TiB, beyond any node
 * dred runs on; reductions above the node's physical memory are refused as well
 * (DRED_ERR_NOMEM).  Documented in dred(3). */
#define DRED_MAX_BYTES (1ull << 40)

/* The most bytes one turn of the runtime loop copies or unpacks for one collective (a
 * result unpacked into recvbuf, distribute.c; a relay follower's copy, relay.c), the rest
 * at the next turns: a turn is how long PINGs wait, and 4 MiB takes milliseconds where a
 * whole result took up to seconds. */
#define DRED_TURN_BYTES (4u << 20)

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
  /* Budget taken from the node and not used yet, for small operands (nodemem.c); atomic:
   * calls and the runtime thread take and give without rt->lock. */
  uint64_t nodemem_credit, nodemem_grain;
  int nodemem_me;
  int *nodemem_rank_of;  /* job rank -> node rank, -1 off this node */
  dred_queue_t handover_tickets; /* dred_ireduce calls waiting for an off-node copy (offnode.c) */
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
  uint64_t relay_led, relay_followed; /* collectives relayed on this node (relay.c), under lock */
  uint64_t relay_split; /* followers' copies the runtime thread made over several turns (lock) */
  /* Allreduce members that follow their node's relay leader after their READY
   * (relay.c): copying, or with a HAVE to send; linked by relay_link, under lock. */
  dred_queue_t relayq;
  /* Results going to dred-master piece by piece (distribute.c), linked by push_link;
   * runtime thread only. */
  dred_queue_t pushq;
  /* Ended instances whose result goes into recvbuf a part per turn (distribute.c), linked
   * by unpack_link; runtime thread only. */
  dred_queue_t unpackq;
  /* Reduce members waiting for their node's partial (partial.c), linked by partial_link;
   * runtime thread only.  Counters: partials folded here, members they covered, members
   * that went to dred-master alone after waiting in a partial slot. */
  dred_queue_t partialq;
  uint64_t partial_folded, partial_covered, partial_alone;
  /* Pool blocks of ours that a met reduction's root may still read after our future
   * completed (meetpath.c): freed once the slot says it no longer needs them. */
  dred_queue_t meet_lent;
  /* how many: changed under rt->lock, read without it (a peek before taking the lock) */
  uint64_t meet_nlent;
  uint64_t meet_turn_ns;
  int meet_share; /* large reduces share their fold (DRED_MEET_SHARE, decided at init) */
  int meet_pieces; /* large allreduce operands written after arriving (a core per process) */
} dred_rt_t;

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
/* End `in` now: the root's result to recvbuf, buffers released, future completed, freed.
 * Returns whether dred_finalize had begun when `in` left the table (it waits for the
 * table to empty: a thread other than the runtime's that finished `in` wakes it). */
int dred_rt_inst_finish(dred_rt_t *rt, dred_inst_t *in, int status);
/* The same for an instance nobody else ever saw -- never inserted, its future never handed
 * out (a blocking call decided in the meeting place's fast lane): no table to leave, no
 * future to complete.  Counted as met; the call's place under the cap (rt->entering) is
 * given back.  Returns the status the call returns; `in` and its future are freed. */
int dred_rt_inst_end_unseen(dred_rt_t *rt, dred_inst_t *in, int status);
/* An instance's memory, zeroed, with `extra` bytes after it (NULL: no memory), and its
 * return; the last one without extra bytes is kept for the next (dred_rt_inst_drop_spare
 * frees it). */
dred_inst_t *dred_rt_inst_alloc(size_t extra);
void dred_rt_inst_free(dred_inst_t *in);
void dred_rt_inst_drop_spare(void);


/* A reference to our buffer p (pool offset or -1) of len bytes, for a READY or DONE. */
proto_buf_t dred_rt_bufref(const dred_rt_t *rt, const char *p, int64_t pool_off, uint64_t len);
/* The one READY builder: *m becomes a READY for member `member`'s operand of `in`, with
 * every parameter the master checks members agree on; the caller adds the buffer (and
 * replicas, inline operand, error or the recovered flag).  A member's own READY
 * (runtime.c) and a recovered copy's (recover.c) both start here. */
void dred_rt_ready(const dred_inst_t *in, uint32_t member, proto_msg_t *m);
/* The parameters `in`'s READY states (dred_rt_ready's): what its members must agree on,
 * compared by dred-master, in a meeting slot, and kept with every copy of the operand. */
proto_params_t dred_rt_params(const dred_inst_t *in);
/* Application thread, under rt->lock, `in` inserted: send an inline reduction's READY
 * from this thread (1), or leave it to the runtime thread (0: submit it as usual). */
int dred_rt_announce_now(dred_rt_t *rt, dred_inst_t *in);

/* runtime.c: a message to another worker over the control links */
void dred_rt_send_peer(dred_rt_t *rt, uint32_t peer, const proto_msg_t *m);

#endif /* DRED_RUNTIME_H */
