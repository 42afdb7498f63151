/*
 * snapdir.c -- the snapshot directory: where a worker's operand snapshots sit in its pool.
 *
 * A member's operand is safe only once a copy of it exists outside its process.  The
 * member copies it into its shared-memory pool inside dred_ireduce (on the caller's
 * thread, before anything else happens), and the neighbour then stores it from there
 * (replica_recv.c).  Between that copy and the moment the neighbour hears of it there is a
 * gap -- the runtime thread must wake up and send the header -- and a crash in that gap
 * used to lose the operand for good, although its bytes still lay in shared memory.
 *
 * The directory closes the gap: the first DRED_SNAPDIR_BYTES of every pool segment hold
 * a small table of (group, tag, member, offset, length) for the snapshots it contains.
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
 */
#include <string.h>

#include "../common/log.h"
#include "runtime.h"

typedef struct {
  uint64_t seq; /* odd while being written */
  uint64_t group;
  int64_t tag;
  uint32_t member;
  uint32_t live;
  int64_t off;
  uint64_t len;
} slot_t;

#define NSLOTS DRED_SNAPDIR_SLOTS
_Static_assert(sizeof(slot_t) * DRED_SNAPDIR_SLOTS <= DRED_SNAPDIR_BYTES, "slot size");

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
                         int64_t off, uint64_t len) {
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
  t[i].live = 1;
  seq_end(&t[i]);
  return (int)i;
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

int dred_snapdir_read(dred_rt_t *rt, uint32_t worker, uint64_t group, int64_t tag,
                      uint32_t member, char *dst, uint64_t len) {
  char *seg;
  slot_t *t;
  unsigned i;
  if (worker >= (uint32_t)rt->world_size || (seg = rt->peer_base[worker]) == NULL ||
      !dred_snapdir_usable(rt))
    return DRED_ERR_PROC_FAILED;
  t = table(seg);
  for (i = 0; i < NSLOTS; i++) {
    uint64_t s1 = __atomic_load_n(&t[i].seq, __ATOMIC_ACQUIRE), s2;
    int64_t off;
    if ((s1 & 1) || !t[i].live || t[i].group != group || t[i].tag != tag ||
        t[i].member != member || t[i].len != len)
      continue;
    off = t[i].off;
    /* the slot is the peer's word: bound it by the peer's segment, not by ours */
    if (dred_seg_check_range(&rt->segs[worker], off, len, NULL, 0) != 0) continue;
    memcpy(dst, seg + off, len);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    s2 = __atomic_load_n(&t[i].seq, __ATOMIC_RELAXED);
    if (s1 == s2) return DRED_OK;
    DRED_WARN("snapshot of member %u (tag " PROTO_KEY_FMT
              ") changed while read from worker %u's pool",
              member, PROTO_KEY_ARG(tag), worker);
  }
  return DRED_ERR_PROC_FAILED;
}
