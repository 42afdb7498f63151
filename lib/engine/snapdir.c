/*
 * snapdir.c -- the snapshot directory: where a worker's operand snapshots sit in its pool.
 *
 * A member's operand is safe only once a copy of it exists outside its process.  The
 * member copies it into its shared-memory pool inside dred_ireduce (on the caller's
 * thread, before anything else happens), and the neighbour then stores it from there
 * (replica_recv.c).  Between that copy and the moment the neighbour hears of it there is a
 * gap -- the runtime thread must wake up and send the header -- and without more, a crash
 * in that gap would lose the operand for good, although its bytes still lie in shared
 * memory.
 *
 * The directory closes the gap: the first DRED_SNAPDIR_BYTES of every pool segment hold
 * a small table of (group, tag, member, offset, length) for the snapshots it contains,
 * with the parameters the member's READY states (a READY recovering it states them).
 * A node peer asked to RECOVER a dead member's operand that it has no stored copy of
 * looks the operand up in the dead member's table and copies it out.  The segment
 * outlives the process (the other node processes still map it), so this is the same
 * trust the shared-memory replica path already places in it: a process died, the node
 * did not.
 *
 * Each slot is a seqlock.  The owner (application threads publish, the runtime thread
 * retires) makes `seq` odd, writes the fields, makes it even again; it retires a slot
 * before the block is freed.  A reader takes seq, checks it is even and the key matches,
 * copies the block, and accepts the copy only if seq is unchanged afterwards.  That
 * keeps a reader safe even against an owner that is still alive (a false detection):
 * a block freed or reused during the copy shows as a changed seq.  A process killed
 * mid-write leaves seq odd, and its half-written slot is never trusted.
 *
 * Absorption (absorb.c).  When its owner combines another snapshot into this one in
 * place, the slot also says which member's unit is being absorbed, where that provider's
 * snapshot and the owner's scratch piece lie, and -- outside the seqlock, as two counters
 * the owner advances piece by piece -- how far it got: `done` pieces are final in the
 * snapshot, and `scr` (piece + 1, 0 for none) names a piece whose result is complete in
 * scratch and may be being copied over the snapshot.  That is all a node peer needs to
 * finish the absorption if the owner dies midway (dred_absorb_rollforward).
 */
#include <string.h>

#include "../../common/log.h"
#include "runtime.h"
#include "snapdir.h"

typedef struct {
  uint64_t seq; /* odd while being written */
  uint64_t group;
  int64_t tag;
  uint32_t member;
  uint32_t live;
  int64_t off;
  uint64_t len;
  /* the absorption, under seq: PROTO_NO_MEMBER in `absorbing` when none ever began */
  uint32_t absorbing, prov_worker;
  int64_t prov_off, scr_off;
  uint64_t piece;     /* bytes per piece, a whole number of elements */
  uint32_t exec_left; /* the owner's operand is the left one (non-commutative op) */
  uint32_t pad;
  /* its progress, outside seq (one writer; readers check it around what they read) */
  uint64_t done, scr;
  proto_params_t params; /* under seq: the member's, for a READY recovering it */
  uint64_t spare[3];
} slot_t;

#define NSLOTS DRED_SNAPDIR_SLOTS
_Static_assert(sizeof(slot_t) == DRED_SNAPDIR_SLOT_BYTES, "slot size");
_Static_assert(sizeof(slot_t) * DRED_SNAPDIR_SLOTS <= DRED_SNAPDIR_BYTES, "slot count");

static slot_t *table(char *segment) { return (slot_t *)(void *)segment; }

static void seq_begin(slot_t *s) {
  __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void seq_end(slot_t *s) { __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE); }

int dred_snapdir_usable(const dred_rt_t *rt) {
  return rt->pool_base != NULL && rt->pool_size > DRED_SNAPDIR_BYTES;
}

int dred_snapdir_publish(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                         int64_t off, uint64_t len, const proto_params_t *params) {
  slot_t *t;
  unsigned i;
  if (!dred_snapdir_usable(rt) || off < 0) return -1;
  t = table(rt->pool_base);
  uv_mutex_lock(&rt->pool_mu);
  for (i = 0; i < NSLOTS && rt->snapdir_used[i]; i++) {
  }
  if (i == NSLOTS) {
    uv_mutex_unlock(&rt->pool_mu);
    return -1; /* more snapshots in flight than slots: this one relies on its header */
  }
  rt->snapdir_used[i] = 1;
  uv_mutex_unlock(&rt->pool_mu);
  seq_begin(&t[i]);
  t[i].group = group;
  t[i].tag = tag;
  t[i].member = member;
  t[i].off = off;
  t[i].len = len;
  t[i].params = *params;
  t[i].absorbing = PROTO_NO_MEMBER;
  t[i].live = 1;
  __atomic_store_n(&t[i].done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&t[i].scr, 0, __ATOMIC_RELAXED);
  seq_end(&t[i]);
  return (int)i;
}

static slot_t *own_slot(dred_rt_t *rt, int slot) {
  if (slot < 0 || (unsigned)slot >= NSLOTS || !dred_snapdir_usable(rt)) return NULL;
  return &table(rt->pool_base)[slot];
}

int dred_snapdir_absorb_begin(dred_rt_t *rt, int slot, uint32_t member, uint32_t prov_worker,
                              int64_t prov_off, int64_t scr_off, uint64_t piece, int exec_left) {
  slot_t *t = own_slot(rt, slot);
  if (t == NULL || piece == 0) return -1;
  seq_begin(t);
  t->absorbing = member;
  t->prov_worker = prov_worker;
  t->prov_off = prov_off;
  t->scr_off = scr_off;
  t->piece = piece;
  t->exec_left = (uint32_t)(exec_left != 0);
  __atomic_store_n(&t->done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&t->scr, 0, __ATOMIC_RELAXED);
  seq_end(t);
  return 0;
}

/* Piece i's result is complete in scratch; the snapshot's piece i is about to be
 * overwritten with it.  The fence keeps those writes behind the store. */
void dred_snapdir_piece_ready(dred_rt_t *rt, int slot, uint64_t i) {
  slot_t *t = own_slot(rt, slot);
  if (t == NULL) return;
  __atomic_store_n(&t->scr, i + 1, __ATOMIC_RELEASE);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

/* Piece i is final in the snapshot; scratch is about to be reused for the next one. */
void dred_snapdir_piece_done(dred_rt_t *rt, int slot, uint64_t i) {
  slot_t *t = own_slot(rt, slot);
  if (t == NULL) return;
  __atomic_store_n(&t->done, i + 1, __ATOMIC_RELEASE);
  __atomic_store_n(&t->scr, 0, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

void dred_snapdir_absorb_clear(dred_rt_t *rt, int slot) {
  slot_t *t = own_slot(rt, slot);
  if (t == NULL) return;
  seq_begin(t);
  t->absorbing = PROTO_NO_MEMBER;
  __atomic_store_n(&t->done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&t->scr, 0, __ATOMIC_RELAXED);
  seq_end(t);
}

int dred_snapdir_view(dred_rt_t *rt, uint32_t worker, uint64_t group, int64_t tag,
                      uint32_t member, uint64_t len, dred_snapview_t *v) {
  char *seg;
  slot_t *t;
  unsigned i;
  if (worker >= (uint32_t)rt->world_size || (seg = rt->peer_base[worker]) == NULL ||
      !dred_snapdir_usable(rt))
    return DRED_ERR_PROC_FAILED;
  t = table(seg);
  for (i = 0; i < NSLOTS; i++) {
    uint64_t s1 = __atomic_load_n(&t[i].seq, __ATOMIC_ACQUIRE);
    if ((s1 & 1) || !t[i].live || t[i].group != group || t[i].tag != tag ||
        t[i].member != member || t[i].len != len)
      continue;
    v->off = t[i].off;
    v->absorbing = t[i].absorbing;
    v->prov_worker = t[i].prov_worker;
    v->prov_off = t[i].prov_off;
    v->scr_off = t[i].scr_off;
    v->piece = t[i].piece;
    v->exec_left = (int)t[i].exec_left;
    v->params = t[i].params;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&t[i].seq, __ATOMIC_RELAXED) != s1) continue;
    /* the slot is the peer's word: bound it by the peer's segment, not by ours */
    if (dred_seg_check_range(&rt->segs[worker], v->off, len, NULL, 0) != 0) continue;
    v->worker = worker;
    v->seq = s1;
    v->slot = &t[i];
    v->base = seg + v->off;
    return DRED_OK;
  }
  return DRED_ERR_PROC_FAILED;
}

int dred_snapdir_view_same(const dred_snapview_t *v) {
  const slot_t *t = v->slot;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(&t->seq, __ATOMIC_RELAXED) == v->seq;
}

void dred_snapdir_view_progress(const dred_snapview_t *v, uint64_t *done, uint64_t *scr) {
  slot_t *t = v->slot;
  /* scr first: a piece the owner finished between the two loads shows in done */
  *scr = __atomic_load_n(&t->scr, __ATOMIC_ACQUIRE);
  *done = __atomic_load_n(&t->done, __ATOMIC_ACQUIRE);
}

void dred_snapdir_retire(dred_rt_t *rt, int slot) {
  slot_t *t;
  if (slot < 0 || (unsigned)slot >= NSLOTS || !dred_snapdir_usable(rt)) return;
  t = table(rt->pool_base);
  seq_begin(&t[slot]);
  t[slot].live = 0;
  seq_end(&t[slot]);
  uv_mutex_lock(&rt->pool_mu);
  rt->snapdir_used[slot] = 0;
  uv_mutex_unlock(&rt->pool_mu);
}

