/*
 * replicate_internal.h -- what the robust layer's files share (lib/robust/replicate.c,
 * replica_send.c, replica_recv.c, recover.c): the snapshot a member's copies are taken
 * from, the store operation in flight, a parked RECOVER, and the few lists and functions
 * more than one of them touches.  Private to those files; the rest of libdred calls the
 * dred_repl_* functions of runtime.h.
 */
#ifndef DRED_REPLICATE_INTERNAL_H
#define DRED_REPLICATE_INTERNAL_H

#include "../engine/inst.h"
#include "../engine/mem.h"
#include "../engine/runtime.h"
#include "../engine/task.h"

/* A member's own copy of its operand, the source of every replica of it. */
typedef struct {
  dred_rt_t *rt;
  char *p;
  int64_t pool_off; /* >= 0: in our pool, readable by node peers */
  int malloced;
  dred_memblk_t *borrowed; /* p is the application's dred_alloc_mem block: never freed here */
  size_t len;
  int refs;         /* copies still being taken */
  dred_queue_t link; /* the state's snapshots (so FAILED can release them) */
  uint64_t group;
  int64_t tag;
  uint32_t waiting[PROTO_MAX_REPLICAS]; /* shared-memory neighbours yet to ACK */
  int nwaiting;
  int dir_slot;      /* snapshot directory slot (snapdir.c), or -1 */
  uint32_t member;
  dred_keymap_node_t knode; /* the state's snap_index, by (group, tag) */
  dred_queue_t dlink; /* the state's deferred while deferred */
  /* Deferred copies (DRED_REPLICA_DELAY_MS): the local copy and the shared-memory
   * neighbours, started at due_ns by dred_repl_progress unless the reduction ended first. */
  int deferred;
  uint64_t due_ns;
  uint32_t later[PROTO_MAX_REPLICAS];
  int nlater;
  /* A task absorbed another snapshot into this one in place (absorb.c): it no longer
   * holds the operand alone but the member's unit, and it stays until the reduction
   * ends -- dred-master may need that unit even after acc moved elsewhere. */
  int absorbed;
  proto_params_t params; /* what the member's READY states: every copy carries them */
} snapshot_t;

/* The robust layer's part of one reduction (dred_inst_t.repl): created on first need by
 * dred_repl_inst_of, freed by dred_repl_inst_release with the reduction's buffers. */
struct dred_repl_inst {
  int dir_slot;       /* snapshot directory slot of acc (snapdir.c), or -1 */
  /* Non-NULL while acc is also the operand's replica snapshot (replica_send.c): acc is
   * then read-only -- copies are being taken from it -- so the first combine this member
   * executes writes its result to a new buffer and drops it (dred_repl_snapshot_drop). */
  snapshot_t *snap;
  int io_pending;     /* store reads for a RECOVER in flight (recover.c) */
  dred_queue_t rbufs; /* recovered copies of other members' operands held here */
};
typedef struct dred_repl_inst dred_repl_inst_t;

/* in->repl, created if need be; NULL when out of memory (the caller says what it skips). */
dred_repl_inst_t *dred_repl_inst_of(dred_inst_t *in);

/* The robust layer's state, one per runtime (rt->robust_state).  dred_repl_open creates
 * it, dred_repl_close closes its store and empties its lists, dred_repl_destroy frees it
 * with the runtime: a copy that finishes after close still finds it.  Runtime thread only,
 * like everything in this layer. */
typedef struct dred_repl_state {
  struct dred_replica *store; /* this worker's replica store; NULL without replicas    */
  char jobdir[600];           /* <storage>/job-<id> on this node; "" without replicas  */
  /* Snapshots (replica_send.c): every one, for FAILED; by (group, tag); and those whose
   * copies wait for DRED_REPLICA_DELAY_MS, in due order. */
  dred_queue_t snapshots;
  dred_keymap_t snap_index;
  dred_queue_t deferred;
  /* Copies that came over the network, held in memory until their write is due
   * (replica_recv.c): in arrival order, which is due order; by (group, tag); their bytes. */
  dred_queue_t held;
  dred_keymap_t held_index;
  size_t held_bytes;
  dred_queue_t writes;        /* neighbour copies being written: a RECOVER waits for them */
  /* Keys (group, tag) this process has put a copy of into its store (or started to): END
   * drops only those, so a reduction that wrote nothing here -- every one that ends before
   * DRED_REPLICA_DELAY_MS on a node -- costs no SQLite transaction at its end. */
  dred_keymap_t stored;
  /* The parameters each copy's header stated (replica_recv.c), by (group, tag), until
   * the reduction ends: a RECOVER answered from one states its member's own
   * (recover.c), so a member that died before its READY is still compared. */
  dred_keymap_t params_index;
  /* RECOVERs waiting for the local call or a write (recover.c parks them), and whether
   * something they may wait for happened since they were last tried. */
  dred_queue_t parked;
  int parked_retry;
} dred_repl_state_t;

static inline dred_repl_state_t *dred_repl_state(const dred_rt_t *rt) {
  return rt->robust_state;
}

void dred_repl_stored_add(dred_rt_t *rt, uint64_t group, int64_t tag);
int dred_repl_stored_take(dred_rt_t *rt, uint64_t group, int64_t tag); /* 1: it was listed */

/* An async store operation in flight (put or get). */
typedef struct {
  dred_rt_t *rt;
  dred_inst_t *inst; /* NULL for a neighbour's copy being written */
  uint64_t group;
  int64_t tag;
  uint32_t member;
  char *buf;         /* put: a received copy to free after; get: target */
  int64_t pool_off;
  int malloced;
  int is_self;       /* get: reloading our own operand into the primary buffer */
  /* RECOVER: what the master expects of a snapshot (proto.h) and, once found, what the
   * answer holds: a unit (from a snapshot) with or without the tentative absorption */
  uint32_t last, tentative;
  int single, unit, absorbed;
  /* RECOVER from a snapshot directory: the parameters its member published there */
  int has_params;
  proto_params_t params;
  dred_queue_t link; /* the state's writes (or held), so RECOVER can wait for them */
  snapshot_t *snap;  /* local put: the snapshot it reads */
  int ack_to;        /* neighbour put from shared memory: who gets REPLICA_ACK (-1 none) */
  int64_t ack_off;
  /* A copy that came over the network, held in memory until its write is due
   * (replica_recv.c): its size, due time and entry in the held index. */
  size_t len;
  uint64_t due_ns;
  dred_keymap_node_t knode;
} repl_io_t;

/* A RECOVER that must wait (recover.c parks it, dred_repl_progress retries it). */
typedef struct {
  dred_queue_t link; /* the state's parked */
  proto_msg_t msg;
} parked_t;

/* The hooks of dred_robust_t (lib/engine/robust.h), by file: replicate.c open, init,
 * close, destroy, on_operand_pooled (publish), on_ready_sent, on_reduction_end,
 * on_buffers_release (inst_release), on_member_failed, on_shutdown, on_turn (progress),
 * waiting, acc_read_only, reading (busy), recovered (rbuf); replica_send.c on_ready
 * (on_announce), on_replica_ack, on_acc_replaced (snapshot_drop); replica_recv.c
 * on_replica (on_header); recover.c on_recover; absorb.c on_task_start, task_step,
 * on_task_finished, acc_listed, pool_extra.  Each is documented at its slot there. */
int dred_repl_open(dred_rt_t *rt);
int dred_repl_init(dred_rt_t *rt);
void dred_repl_close(dred_rt_t *rt);
void dred_repl_destroy(dred_rt_t *rt);
void dred_repl_publish(dred_rt_t *rt, dred_inst_t *in);
void dred_repl_on_announce(dred_rt_t *rt, dred_inst_t *in, proto_msg_t *ready);
void dred_repl_on_header(dred_rt_t *rt, int src, const proto_msg_t *m);
void dred_repl_on_ack(dred_rt_t *rt, int src, const proto_msg_t *m);
void dred_repl_on_recover(dred_rt_t *rt, const proto_msg_t *m);
void dred_repl_on_failed(dred_rt_t *rt, uint32_t worker);
void dred_repl_on_shutdown(dred_rt_t *rt);
void dred_repl_on_end(dred_rt_t *rt, dred_inst_t *in);
void dred_repl_on_ready_sent(dred_rt_t *rt, dred_inst_t *in);
void dred_repl_on_peer_drained(dred_rt_t *rt);
unsigned dred_repl_waiting(const dred_rt_t *rt);
int dred_repl_progress(dred_rt_t *rt, uint64_t *next_due_ns);
void dred_repl_snapshot_drop(dred_rt_t *rt, dred_inst_t *in);
int dred_repl_acc_is_snapshot(const dred_inst_t *in);
int dred_repl_busy(const dred_inst_t *in);
dred_rbuf_t *dred_repl_rbuf(dred_inst_t *in, uint32_t member);
int dred_repl_inst_release(dred_rt_t *rt, dred_inst_t *in);

/* replica_send.c */
/* One copy fewer is being taken from `sn`: the last one frees it (and its slot). */
void dred_repl_snapshot_unref(snapshot_t *sn);
/* The deferred copies of `sn` are due (or its reduction ended: cancel them). */
void dred_repl_deferred_run(dred_rt_t *rt, snapshot_t *sn, int cancel);

/* Copies that came over the network and are held in memory (replica_recv.c, in the
 * state's held) until their store write is due, DRED_REPLICA_DELAY_MS after
 * arrival. */
/* Start the writes that are due; *next_due_ns: the next due time if earlier (0: none). */
int dred_repl_held_progress(dred_rt_t *rt, uint64_t *next_due_ns);
/* The held copy of (group, tag, member), or NULL: a RECOVER reads it from memory. */
const repl_io_t *dred_repl_held_find(const dred_rt_t *rt, uint64_t group, int64_t tag,
                                     uint32_t member);
/* The reduction ended: its held copies are not needed any more (never written). */
void dred_repl_held_drop(dred_rt_t *rt, uint64_t group, int64_t tag);
/* The parameters member's copy of reduction (group, tag) came with: 1 and *p, or 0 when
 * no header of it reached us; dropped at the reduction's end, all at close. */
int dred_repl_params_find(const dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                          proto_params_t *p);
void dred_repl_params_drop(dred_rt_t *rt, uint64_t group, int64_t tag);
void dred_repl_params_clear(dred_rt_t *rt);
/* Shutdown: every held copy goes. */
void dred_repl_held_clear(dred_rt_t *rt);

/* absorb.c -- the hooks acc_listed, pool_extra, on_task_start, task_step, on_task_finished */
int dred_absorb_acc_ok(const dred_inst_t *in);
size_t dred_absorb_room(const dred_rt_t *rt, const dred_inst_t *in);
int dred_absorb_begin(dred_rt_t *rt, dred_task_t *t);
int dred_absorb_step(dred_rt_t *rt, dred_task_t *t, uint64_t deadline);
void dred_absorb_end(dred_rt_t *rt, dred_task_t *t);
/* A RECOVER asks for dead node peer member's unit: rebuild it from its snapshot into dst,
 * finishing an absorption it was in (roll forward).  last, tentative, single: the
 * RECOVER's.  DRED_OK with *absorbed = the unit includes `tentative`'s and *params the
 * parameters its member published with it; else DRED_ERR_PROC_FAILED (no usable
 * snapshot, or not the one the master expects). */
int dred_absorb_recover(dred_rt_t *rt, dred_inst_t *in, uint32_t member, uint32_t last,
                        uint32_t tentative, int single, char *dst, int *absorbed,
                        proto_params_t *params);

/* recover.c */
/* Answer a RECOVER: returns 1 when handled (or dropped), 0 when it must wait (park it). */
int dred_repl_try_recover(dred_rt_t *rt, const proto_msg_t *m);

#endif /* DRED_REPLICATE_INTERNAL_H */
