/*
 * inst.h -- one reduction of this process (dred_inst_t): the collective, this member's
 * role, its buffers, and which path it took (the master, the meeting place, inline).
 * Created by dred_ireduce/iallreduce/ibcast (api.c), owned by the runtime (runtime.c).
 */
#ifndef DRED_INST_H
#define DRED_INST_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/keymap.h"
#include "../../common/queue.h"
#include "future.h"
#include "group.h"
#include "typecheck.h"

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
  int blocking;        /* the blocking form (dred_reduce, dred_allreduce, dred_bcast): its
                        * caller waits from the call to the end, sendbuf the call's */
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
  int acc_deferred;    /* a DIRECT allreduce's member 0 bound for the meeting place: acc
                        * is recvbuf, where only the result goes; its operand is in
                        * sendbuf (and the copy peers read), copied into acc only if the
                        * collective leaves the meeting place (meetpath.c undefer);
                        * a large allreduce's other member (dred_meetpath_pieces): acc
                        * is its pool block, filled after it arrived (or as it leaves) */
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
  /* An explicit tag's ring, looked up once per call (the slot-held check, the arrival):
   * rings are never given back, so the answer, NULL included, holds for the call. */
  struct dred_meet_ring *meet_ring;
  int meet_ring_looked;
  int meet_claimed;
  /* A non-root operand that met by reference: the pool block peers read (acc itself when
   * acc is a plain pool block of ours, else meet_blk, a copy made for the meeting), and
   * the root's progress through a fold done in bounded steps. */
  int meet_by_ref;
  char *meet_blk;
  int64_t meet_blk_off;
  uint64_t meet_fold_next; /* a reduce root's next element to fold; a bcast's next byte  */
  uint64_t meet_copied;    /* an allreduce's chunks copied to our result, a shared reduce
                            * root's chunks folded or combined into it (bit c)           */
  uint64_t meet_wait_ns;   /* a shared reduce's root: since when only helpers' chunks are
                            * left (0: not waiting)                                      */
  uint64_t meet_chunk_ns;  /* ... and what its own last chunk took to fold               */
  uint64_t meet_prefolded; /* a reduce root's early arrivals folded into acc (bit k)    */
  int meet_taken;          /* its outcome was taken at its arrival (meet_status): finished
                            * at once by its own call (dred_meetpath_finish_taken)       */
  int meet_status;         /* decided in the fast lane -- a blocking call there, or an
                            * arrival served from a bcast root's post: its outcome       */
  int meet_fast_all;       /* ... with every member's post seen (not a bcast served early) */
  int meet_lane_nb;        /* a nonblocking call posted in the fast lane, not yet resolved
                           * there nor gone the slot's way (lanepath.c, "Nonblocking calls") */
  int meet_lane_ref;       /* ... a bcast served from its root's pool block, which the
                            * post names (dred_meetpath__taken holds it): copied, checked
                            * and acked as it finishes                                   */
  int meet_publish;        /* a bcast root: the slot is still to be told its data is in;
                            * an allreduce member: how far its operand is (PIECES)       */
  int meet_pipelined;      /* ... and it is still to be copied into meet_blk (or acc):
                            * wholly, or (a PIECES allreduce member in a blocking call)
                            * the chunks of it not in meet_pin; meanwhile this member
                            * folds its own operand from sendbuf                          */
  uint64_t meet_pin;       /* a PIECES allreduce member: its chunks in its block so far   */
  /* A result (a bcast root's data) going to dred-master as DATA (distribute.c): in
   * rt->pushq by push_link while pushing, push_off bytes sent so far. */
  int pushing;
  uint64_t push_off;
  dred_queue_t push_link;
  /* A large PACKED or IMAGE result going into recvbuf a part per turn (distribute.c): in
   * rt->unpackq by unpack_link while unpacking, unpack_next elements written so far;
   * unpacked once they all were. */
  int unpacking, unpacked;
  uint64_t unpack_next;
  dred_queue_t unpack_link;
  /* A cross-node bcast's node relay (lib/paths/relay.c).  The leader receives the data
   * from dred-master as any member does and also puts it in relay_blk (a block of its
   * pool) for its node's followers, advancing relay_slot's progress; a follower copies it
   * from there (state INST_MEET, meet_slot) and then tells dred-master it has it
   * (relay_have in its READY). */
  int relay_lead, relay_follow, relay_have;
  /* A large allreduce's follower (relay.c) goes to dred-master at once (its READY carries
   * its operand, and says it follows) and copies the result from its leader's block
   * (relay_slot) meanwhile; then it sends HAVE.  relay_copy: still copying;
   * relay_claimed: a thread is copying now (under rt->lock); relay_finish_due: the
   * instance ended meanwhile, the copying thread finishes it; relay_have_due: HAVE with
   * relay_have_status is to be sent by the runtime thread (in rt->relayq by relay_link
   * while relay_queued); relay_split: the runtime thread copied it over more than one
   * turn (counted once in rt->relay_split). */
  int relay_copy, relay_claimed, relay_finish_due, relay_have_due, relay_have_status;
  int relay_queued, relay_split;
  dred_queue_t relay_link;
  struct dred_meet_slot *relay_slot;
  uint64_t relay_seq;
  char *relay_blk;
  int64_t relay_blk_off;
  struct dred_meet_ring *relay_ring; /* an explicit tag's relay ring, looked up once */
  int relay_ring_looked;
  /* A reduce's node partial (lib/paths/partial.c).  partial: 1 while this member waits
   * in its node's partial slot for another member to fold it (in rt->partialq by
   * partial_link, since partial_since; partial_ready is its own READY, sent if the partial
   * does not happen); 2 once this member folded its node's members into partial_blk (a
   * block of its pool) and sent their READY; 3 once it left the slot (its own READY went
   * out); 4 once dred-master asked a folder for its own operand (the partial was refused
   * or lost: TASKs for it then combine into acc, not partial_blk).  0: not in a partial
   * slot. */
  int partial;
  dred_queue_t partial_link;
  struct dred_meet_slot *partial_slot;
  uint64_t partial_seq, partial_since;
  uint32_t partial_folder; /* 1 + the folder's member index once the slot decided, or 0 */
  proto_msg_t partial_ready;
  char *partial_blk;     /* a task executed on the partial may replace it (combine.c) */
  int64_t partial_blk_off;
  int partial_blk_malloced;
  struct dred_meet_ring *partial_ring; /* an explicit tag's partial ring, looked up once */
  int partial_ring_looked;
  inst_state_t state;
  int end_status;      /* set when END arrives while tasks are still running */
  int tasks_pending;   /* tasks queued or running for this instance */
  /* The robust layer's part of this reduction -- its snapshot and directory slot, store
   * reads in flight, recovered copies of other members' operands (replicate_internal.h).
   * Opaque here, and NULL until that layer needs it: never with DRED_REPLICAS=0 and no
   * failure. */
  struct dred_repl_inst *repl;
} dred_inst_t;

/* An instance's state is moved by the runtime thread without rt->lock (announce, end)
 * and by an application thread under it (a meeting, a re-route), and application threads
 * read it under rt->lock while the runtime thread may be moving it: every access is an
 * atomic one, relaxed -- nothing else is ordered by it (rt->lock orders the rest). */
static inline inst_state_t dred_inst_state(const dred_inst_t *in) {
  return __atomic_load_n(&in->state, __ATOMIC_RELAXED);
}
static inline void dred_inst_set_state(dred_inst_t *in, inst_state_t s) {
  __atomic_store_n(&in->state, s, __ATOMIC_RELAXED);
}

#endif /* DRED_INST_H */
