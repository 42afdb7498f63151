/*
 * meet.c -- the shared-memory meeting place of meet.h: rings of slots in a node's shared
 * region, a robust lock per slot, a futex word per slot for waiting.
 *
 * Every rule a member follows is decided under the slot's lock from what the slot holds,
 * never from timing, so members that agree always take the same path.  The region is
 * mapped at different addresses in different processes: nothing in it is a pointer (an
 * operand left in a pool block is named by its owner and offset, never its address).
 * The layout is meet_int.h's; the fast lane's posts, beside the slots, are fast.c's; a
 * decided slot's chunks (claims, folds, pieces, a bcast's progress) are meet_chunks.c's.
 */
#define _GNU_SOURCE
#include "meet_int.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../include/dred_status.h"

size_t dred_meet_table_bytes(void) { return sizeof(struct dred_meet_table); }

int dred_meet_table_init(void *mem) {
  dred_meet_table_t *t = mem;
  pthread_mutexattr_t a;
  uint32_t g, d;
  if (mem == NULL) return -1;
  if (pthread_mutexattr_init(&a) != 0) return -1;
  if (pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) != 0 ||
      pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) != 0) {
    pthread_mutexattr_destroy(&a);
    return -1;
  }
  for (g = 0; g < DRED_MEET_GROUPS; g++)
    for (d = 0; d < DRED_MEET_DEPTH; d++)
      if (pthread_mutex_init(&t->rings[g].slots[d].mu, &a) != 0) {
        pthread_mutexattr_destroy(&a);
        return -1;
      }
  pthread_mutexattr_destroy(&a);
  t->ngroups = DRED_MEET_GROUPS;
  __atomic_store_n(&t->magic, MEET_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

/* ---- rings ------------------------------------------------------------------------- */

static int ring_is(const dred_meet_ring_t *r, uint64_t gid, int64_t stream, uint32_t n,
                   const uint32_t *w, uint32_t relay) {
  return r->gid == gid && r->stream == stream && r->n == n && r->relay == relay &&
         memcmp(r->workers, w, n * sizeof *w) == 0;
}

dred_meet_ring_t *dred_meet_ring_of(dred_meet_table_t *t, uint64_t gid, uint32_t n,
                                    const uint32_t *workers) {
  return dred_meet_stream_of(t, gid, DRED_MEET_AUTO, n, workers);
}

/* The ring of (gid, stream, relay), claimed if there is none yet (`absent` is recorded by
 * the claimer: every member computes the same). */
static dred_meet_ring_t *ring_find(dred_meet_table_t *t, uint64_t gid, int64_t stream,
                                   uint32_t n, const uint32_t *workers, uint32_t relay,
                                   uint64_t absent) {
  uint64_t h;
  uint32_t i, start;
  if (t == NULL || workers == NULL || n == 0 || n > DRED_MEET_MAX_MEMBERS ||
      __atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) != MEET_MAGIC)
    return NULL;
  /* Linear probing from the id's hash.  A claim is a compare-and-swap FREE -> CLAIMING,
   * the fields, then READY: a reader that meets CLAIMING waits the few stores out.  Rings
   * are never freed, so "no ring for this group" is final for everyone. */
  h = gid ^ ((uint64_t)stream * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)relay << 62);
  start = (uint32_t)((h ^ (h >> 32)) % DRED_MEET_GROUPS);
  for (i = 0; i < DRED_MEET_GROUPS; i++) {
    dred_meet_ring_t *r = &t->rings[(start + i) % DRED_MEET_GROUPS];
    uint32_t st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    if (st == RING_FREE) {
      uint32_t expect = RING_FREE;
      if (__atomic_compare_exchange_n(&r->state, &expect, RING_CLAIMING, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
        r->gid = gid;
        r->stream = stream;
        r->n = n;
        r->relay = relay;
        r->absent = relay ? absent & all_of(n) : 0;
        memcpy(r->workers, workers, n * sizeof *workers);
        __atomic_store_n(&r->state, RING_READY, __ATOMIC_RELEASE);
        return r;
      }
      st = expect;
    }
    /* A claimer that died between its two stores leaves CLAIMING for ever: after a
     * bounded wait the ring counts as someone else's. */
    for (int spins = 0; st == RING_CLAIMING && spins < 1000000; spins++) {
      sched_yield();
      st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    }
    if (st == RING_READY && ring_is(r, gid, stream, n, workers, relay)) return r;
  }
  return NULL;
}

dred_meet_ring_t *dred_meet_stream_of(dred_meet_table_t *t, uint64_t gid, int64_t stream,
                                      uint32_t n, const uint32_t *workers) {
  return ring_find(t, gid, stream, n, workers, 0, 0);
}

dred_meet_ring_t *dred_meet_relay_of(dred_meet_table_t *t, uint64_t gid, int64_t stream,
                                     uint32_t n, const uint32_t *workers, uint64_t absent) {
  return ring_find(t, gid, stream, n, workers, RING_RELAY, absent);
}

dred_meet_ring_t *dred_meet_partial_of(dred_meet_table_t *t, uint64_t gid, int64_t stream,
                                       uint32_t n, const uint32_t *workers, uint64_t absent) {
  return ring_find(t, gid, stream, n, workers, RING_PARTIAL, absent);
}

int dred_meet_ring_member(const dred_meet_ring_t *r, uint32_t worker) {
  uint32_t k;
  if (r == NULL) return -1;
  for (k = 0; k < r->n; k++)
    if (r->workers[k] == worker) return (int)k;
  return -1;
}

/* ---- slots ------------------------------------------------------------------------- */

/* Move futex word `w` and wake its sleepers (`nwait` counts them: no system call to wake
 * nobody).  A slot has two: `wake` and `arr`. */
static void word_bump(uint32_t *w, const uint32_t *nwait) {
  __atomic_add_fetch(w, 1, __ATOMIC_RELEASE);
  if (__atomic_load_n(nwait, __ATOMIC_ACQUIRE) > 0)
    syscall(SYS_futex, w, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

static void slot_wake(dred_meet_slot_t *s) { word_bump(&s->wake, &s->nwait); }
static void slot_bump_arr(dred_meet_slot_t *s) { word_bump(&s->arr, &s->nwait_arr); }

static void slot_end(dred_meet_slot_t *s, uint32_t state, int status) {
  s->status = status;
  __atomic_store_n(&s->state, state, __ATOMIC_RELEASE); /* after status: see decided() */
  slot_wake(s);
  /* only a reduce's root waits on `arr` (dred_meet_solo), and only after its arrival set
   * arr_watch: an allreduce's or a bcast's outcome leaves that line alone */
  if (s->arr_watch) slot_bump_arr(s);
}

/* How long a waiter polls the futex word before sleeping on it.  A futex wake-up costs
 * tens of microseconds (the kernel, then the scheduler), more than a small collective
 * takes: a member with a core of its own polls instead, as MPI's waiting ranks do, and
 * sleeps only once the wait is long (a member still computing).  0 where processes
 * outnumber cores: there polling takes the core from the member it waits for. */
static uint64_t spin_ns = 1000000;

void dred_meet_set_spin(uint64_t ns) { spin_ns = ns; }

/* Tries of the lock before sleeping on it (spin_ns > 0: a core per member). */
#define LOCK_TRIES 200

/* Lock the slot.  A holder that died mid-update leaves its slot's contents unknown: an
 * open reduction there ends with DRED_ERR_PROC_FAILED (what the holder's death means for
 * it anyway), and the lock is usable again. */
static void slot_lock(dred_meet_slot_t *s) {
  /* Members that each have a core arrive together and hold the lock for a few hundred
   * nanoseconds: trying again briefly beats glibc's robust lock, which sleeps in the
   * kernel at the first contention (a futex wait, and a futex wake at the holder's
   * unlock: microseconds, more than a small collective takes). */
  int rc = EBUSY, tries = spin_ns > 0 ? LOCK_TRIES : 0;
  while (tries-- > 0 && (rc = pthread_mutex_trylock(&s->mu)) == EBUSY) {
    relax();
  }
  if (rc == EBUSY) rc = pthread_mutex_lock(&s->mu);
  if (rc == EOWNERDEAD) {
    if (slot_busy(s) && s->state == DRED_MEET_OPEN) slot_end(s, DRED_MEET_FAILED, DRED_ERR_PROC_FAILED);
    pthread_mutex_consistent(&s->mu);
  }
}

static void slot_unlock(dred_meet_slot_t *s) { pthread_mutex_unlock(&s->mu); }

void dred_meet__lock(dred_meet_slot_t *s) { slot_lock(s); }
void dred_meet__unlock(dred_meet_slot_t *s) { slot_unlock(s); }

/* Whether a collective of `kind` rooted at `root` reads member k's operand. */
static int reads_operand(uint32_t kind, uint32_t root, uint32_t k) {
  if (kind == PROTO_KIND_ALLREDUCE) return 1;
  if (kind == PROTO_KIND_BCAST) return k == root;
  return k != root;
}

/* Everyone is in: decide.  Called with the lock held, the slot open, no member via
 * dred-master (that would have made it MIXED). */
static void slot_decide(dred_meet_slot_t *s, uint32_t n) {
  uint32_t k;
  if (s->p[0].root >= n) {
    slot_end(s, DRED_MEET_FAILED, DRED_ERR_MISMATCH);
    return;
  }
  for (k = 1; k < n; k++)
    if (!proto_params_agree(&s->p[0], &s->p[k])) {
      slot_end(s, DRED_MEET_FAILED, DRED_ERR_MISMATCH);
      return;
    }
  if (s->error != DRED_OK) {
    slot_end(s, DRED_MEET_FAILED, s->error);
    return;
  }
  /* Every operand the collective reads must be readable where it says it is: a reduce's
   * all but the root's (the root folds into its own), an allreduce's all, a bcast's the
   * root's alone. */
  for (k = 0; k < n; k++)
    if (reads_operand(s->p[0].kind, s->p[0].root, k) && s->ref[k].kind != DRED_MEET_OP_SLOT &&
        s->ref[k].kind != DRED_MEET_OP_POOL) {
      slot_end(s, DRED_MEET_FAILED, DRED_ERR_MISMATCH);
      return;
    }
  s->root = s->p[0].root;
  s->kind = s->p[0].kind;
  slot_end(s, DRED_MEET_OK, DRED_OK);
}

/* What the members of an open slot get when `lost` (members that never arrived) died: a
 * bcast whose root is among them lost its data (DRED_ERR_ROOT_FAILED, as dred-master
 * says it); anything else lost an operand or a reader (DRED_ERR_PROC_FAILED).  The kind
 * and root are read from any member that arrived (they agree, or the slot would end with
 * MISMATCH, which the death makes moot). */
static int lost_status(const dred_meet_slot_t *s, uint64_t lost) {
  uint32_t k;
  for (k = 0; k < s->n; k++)
    if (s->arrived & bit(k))
      return s->p[k].kind == PROTO_KIND_BCAST && s->p[k].root < 64 && (lost & bit(s->p[k].root))
                 ? DRED_ERR_ROOT_FAILED
                 : DRED_ERR_PROC_FAILED;
  return DRED_ERR_PROC_FAILED;
}

/* The collective of the slot as its arrivals say (decided or not): the decided kind, else
 * any arrived member's (they agree, or the slot ends with MISMATCH); and, for a bcast, its
 * root as the arrivals name it.  Lock held. */
static uint32_t slot_kind(const dred_meet_slot_t *s, uint32_t *root) {
  uint32_t k;
  *root = s->root;
  if (s->relay == RING_RELAY) { /* a node relay: a bcast whose data comes from its leader */
    if (!s->led) *root = s->n;
    return PROTO_KIND_BCAST;
  }
  if (s->state == DRED_MEET_OK) return s->kind;
  for (k = 0; k < s->n; k++)
    if (s->arrived & ~s->master & bit(k)) {
      *root = s->p[k].root;
      return s->p[k].kind;
    }
  return PROTO_KIND_REDUCE;
}

/* Whether the deaths of `lost` (members that never arrived) end the open slot: always,
 * except a bcast's non-roots while the others can still be served early -- nobody reads
 * what they never gave.  Once no early service can come (a member's error, or a root that
 * arrived with no readable data), only the slot's decision ends it, and that needs every
 * member: the death ends it then.  Called at each death and at each arrival, so a death
 * seen before the error came still ends the slot when it comes. */
static int lost_ends(const dred_meet_slot_t *s, uint64_t lost) {
  uint32_t root, kind;
  if (s->relay == RING_RELAY) return 0; /* the leader arrived first: nobody else is waited for */
  kind = slot_kind(s, &root);
  if (kind != PROTO_KIND_BCAST || root >= s->n || (lost & bit(root)) != 0) return 1;
  if (s->error != DRED_OK) return 1;
  return (s->arrived & ~s->master & bit(root)) != 0 && s->ref[root].kind != DRED_MEET_OP_SLOT &&
         s->ref[root].kind != DRED_MEET_OP_POOL;
}

/* Whether `member`'s parameters `p` disagree with those of a member already here (not
 * gone to dred-master).  Lock held. */
static int disagrees(const dred_meet_slot_t *s, uint32_t member, const proto_params_t *p) {
  uint64_t in = s->arrived & ~s->master;
  uint32_t k;
  for (k = 0; k < s->n; k++)
    if ((in & bit(k)) && k != member && !proto_params_agree(&s->p[k], p)) return 1;
  return 0;
}

/* A bcast member's outcome before everyone arrived (seed 000: early arrivals are served
 * first, nobody waits for the last): MISMATCH as soon as a member already there disagrees
 * with it (root included: two members that both call themselves the root disagree, and
 * the later one sees it); else, once the root arrived with its data readable (in the slot
 * or its pool block), OK.  So of two members that disagree the later one always gets
 * MISMATCH, and one served before a disagreeing member came keeps OK (it has the root's
 * data), as through dred-master: who was served is fixed at the arrivals (bcast_serve),
 * not at the member's looks, which may come after.  1 with *status when known, else 0
 * (then the slot's own outcome decides: the root not there yet, a member's error, a
 * spill).  Lock held. */
static int bcast_early(const dred_meet_slot_t *s, uint32_t member, int *status) {
  uint64_t in = s->arrived & ~s->master;
  uint32_t r;
  if (member < s->n && (s->served & bit(member))) { /* (never in a relay slot, nor one spilled) */
    *status = DRED_OK; /* served before anyone disagreeing came: whatever came after */
    return 1;
  }
  /* (a relay slot's data comes from its leader whatever the kind: a bcast's or an
   * allreduce's result) */
  if (member >= s->n || !(in & bit(member)) ||
      (s->p[member].kind != PROTO_KIND_BCAST && s->relay != RING_RELAY) || s->error != DRED_OK ||
      s->state == DRED_MEET_MIXED || s->state == DRED_MEET_SPILL)
    return 0;
  if (s->relay == RING_PARTIAL) return 0;
  if (s->relay && !s->led) return 0;
  r = s->relay ? s->root : s->p[member].root;
  if (r >= s->n || disagrees(s, member, &s->p[member])) {
    *status = DRED_ERR_MISMATCH;
    return 1;
  }
  if (!(in & bit(r))) return 0;
  if (s->ref[r].kind != DRED_MEET_OP_SLOT && s->ref[r].kind != DRED_MEET_OP_POOL) return 0;
  *status = DRED_OK;
  return 1;
}

/* Fix which bcast members are served, at the arrival of `member` (lock held, its
 * parameters and reference in): every member that could take the root's data at this
 * moment, with nobody there disagreeing with it, is served, and stays so whatever arrives
 * later -- so a member's outcome follows the order of arrivals, not of its looks.  At the
 * root's arrival that is everyone there, if all agree with the root (agreement is
 * equality of the parameters: one disagreeing member disagrees with each of them); at a
 * later member's, that member alone.  Members served nowhere here (a relay, one recorded
 * from the fast lane) are decided by bcast_early's rule at their looks. */
static void bcast_serve(dred_meet_slot_t *s, uint32_t member) {
  uint64_t in = s->arrived & ~s->master, now;
  uint32_t r = s->p[member].root;
  /* (the root there and agreeing with `member` is a bcast naming itself the root) */
  if (s->relay || s->state != DRED_MEET_OPEN || s->error != DRED_OK ||
      s->p[member].kind != PROTO_KIND_BCAST || r >= s->n || !(in & bit(r)) ||
      (s->ref[r].kind != DRED_MEET_OP_SLOT && s->ref[r].kind != DRED_MEET_OP_POOL) ||
      disagrees(s, member, &s->p[member]))
    return;
  now = member == r ? in & ~bit(r) : bit(member);
  __atomic_store_n(&s->served, s->served | now, __ATOMIC_RELEASE); /* read lock-free too */
}

/* `bits` joined `released`, which held `old` just before: the addition that completed the
 * set frees the slot.  Every addition is atomic -- a member's own release a
 * compare-and-swap outside the lock (dred_meet_release), the others a fetch-or under it
 * (slot_released) -- so exactly one completes it. */
static void slot_free_if_completed(dred_meet_slot_t *s, uint64_t old, uint64_t bits, uint32_t n) {
  uint64_t all = all_of(n);
  if ((old & all) != all && ((old | bits) & all) == all) __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
}

/* Members are done with the slot (or dead): add them. */
static void slot_released(dred_meet_slot_t *s, uint64_t bits, uint32_t n) {
  slot_free_if_completed(s, __atomic_fetch_or(&s->released, bits, __ATOMIC_ACQ_REL), bits, n);
}

/* Whether a member arriving in a relay slot (lock held, its bit and parameters in) stays:
 * the first one with a block leads -- dred-master sends it the data, which it puts in
 * that block for the others -- and every later one follows, copying from the leader's
 * block.  Nothing is decided here: a follower that disagrees with the leader, or finds
 * the relay failed, goes to dred-master (0), which decides for it as for any member. */
static int relay_wants(dred_meet_slot_t *s, uint32_t member, int wants,
                       const dred_meet_ref_t *op, dred_meet_arrival_t *out) {
  int st = DRED_OK;
  if (wants && s->state == DRED_MEET_OPEN && s->fold_status == DRED_OK) {
    if (!s->led && op->kind == DRED_MEET_OP_POOL) {
      s->led = 1;
      s->root = member;
      s->kind = PROTO_KIND_BCAST;
      s->ref[member] = *op;
      out->lead = 1;
    } else if (!s->led || !bcast_early(s, member, &st) || st != DRED_OK) {
      wants = 0; /* no leader (and no block to lead with), or one we disagree with */
    }
  } else {
    wants = 0;
  }
  return wants;
}

/* Everyone of the node is in a partial slot (lock held): the members that stay
 * (`arrived & ~master`) combine here if the last arrival is one of them, they are at least
 * two, and they agree -- then that member folds them (`root`) and sends their node
 * partial; otherwise (a member that went to dred-master came last, or they disagree) the
 * slot SPILLs and each goes to dred-master on its own, which decides as for anyone.  Under
 * a non-commutative op the partial must be a run of consecutive group ranks (members of
 * other nodes or ones that went to dred-master between them: it spills), since dred-master
 * combines a run only with the runs beside it. */
static void partial_decide(dred_meet_slot_t *s, uint32_t last, uint32_t n, dred_meet_arrival_t *out) {
  uint64_t stay = s->arrived & ~s->master & all_of(n), run;
  uint32_t k;
  int ok = (stay & bit(last)) != 0 && __builtin_popcountll(stay) >= 2;
  for (k = 0; ok && k < n; k++)
    if ((stay & bit(k)) && !proto_params_agree(&s->p[last], &s->p[k])) ok = 0;
  if (ok && !s->p[last].commutative) {
    run = stay >> __builtin_ctzll(stay);
    ok = (run & (run + 1)) == 0; /* 0...01...1: consecutive */
  }
  if (!ok) {
    slot_end(s, DRED_MEET_SPILL, DRED_OK);
    return;
  }
  s->root = last;
  s->kind = PROTO_KIND_REDUCE;
  slot_end(s, DRED_MEET_OK, DRED_OK);
  out->lead = 1;
}

/* An arrival in a partial slot (dred_meet_partial_of; lock held, its bit and parameters
 * in): a member that wants stays with its pool block; any other goes to dred-master
 * without disturbing the others (a reduce's root, a member with no block).  The slot waits
 * for every member of the node, then partial_decide.  A member declared failed before the
 * slot opened will not come: the slot FAILs, and those that stayed go to dred-master on
 * their own.  Returns whether this member stays. */
static int partial_arrive(dred_meet_ring_t *r, dred_meet_slot_t *s, uint32_t member, int wants,
                          const dred_meet_ref_t *op, int error, dred_meet_arrival_t *out) {
  uint32_t n = r->n;
  uint64_t all = all_of(n), lost;
  wants = wants && error == DRED_OK && op->kind == DRED_MEET_OP_POOL && s->state == DRED_MEET_OPEN;
  if (wants)
    s->ref[member] = *op;
  else
    s->master |= bit(member);
  lost = __atomic_load_n(&r->gone, __ATOMIC_ACQUIRE) & ~s->arrived & ~r->absent & all;
  if (s->state == DRED_MEET_OPEN && lost != 0)
    slot_end(s, DRED_MEET_FAILED, DRED_ERR_PROC_FAILED);
  else if (s->state == DRED_MEET_OPEN && ((s->arrived | r->absent) & all) == all)
    partial_decide(s, member, n, out);
  return wants;
}

int dred_meet_arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                     const proto_params_t *p, int wants, const void *data, size_t bytes,
                     int error, dred_meet_arrival_t *out) {
  dred_meet_ref_t op;
  memset(&op, 0, sizeof op);
  /* the small path's rule: every member but the root copies its operand into the slot */
  op.kind = p != NULL && member != p->root ? DRED_MEET_OP_SLOT : DRED_MEET_OP_NONE;
  op.len = bytes;
  if (wants && r != NULL && p != NULL &&
      (p->count > DRED_MEET_DATA || (uint64_t)r->n * p->count * p->extent > DRED_MEET_DATA)) {
    out->meet = 0;
    out->slot = NULL;
    out->mask = 0;
    out->lead = 0;
    out->taken = 0;
    out->held = 0;
    return -1; /* the small path's operands must fit the slot, the root's included */
  }
  return dred_meet_arrive_op(r, seq, member, p, wants, &op, data, error, out);
}

/* Whether `member`, whose arrival in `s` is whole (lock held), can take its outcome now:
 * DRED_OK and final.  A bcast member is served (bcast_early) once the root's data is in
 * the slot: its OK stands whatever comes later.  Anyone else only once the slot decided
 * OK, which is final.  Only the small path: every operand the collective reads is in the
 * slot, so copying them to `take` is all the member still needs from it.  Copies them and
 * returns 1, or returns 0 (the member looks and waits as usual). */
static int slot_take(const dred_meet_slot_t *s, uint32_t member, void *take, size_t cap) {
  const proto_params_t *p = &s->p[member];
  uint64_t len = p->count * p->extent;
  uint32_t k, n = s->n;
  int st = DRED_OK;
  if (s->relay || member >= n) return 0;
  if (p->kind == PROTO_KIND_BCAST && s->state != DRED_MEET_OK) {
    /* (bcast_early: the root is in, readable, and every member there agrees with us) */
    if (s->state != DRED_MEET_OPEN || !bcast_early(s, member, &st) || st != DRED_OK ||
        s->ref[p->root].kind != DRED_MEET_OP_SLOT || s->ref[p->root].len != len)
      return 0;
    if (member == p->root) return 1; /* its data is in: it reads nothing */
    if ((uint64_t)(p->root + 1) * len > cap) return 0;
    memcpy((char *)take + p->root * len, s->data + p->root * len, len);
    return 1;
  }
  if (s->state != DRED_MEET_OK) return 0;
  for (k = 0; k < n; k++)
    if (reads_operand(s->kind, s->root, k) &&
        (s->ref[k].kind != DRED_MEET_OP_SLOT || s->ref[k].len != len))
      return 0; /* an operand by reference: the usual path reads it in place */
  if (s->kind == PROTO_KIND_REDUCE && member != s->root) return 1; /* reads nothing */
  if (s->kind == PROTO_KIND_BCAST) {
    if (member == s->root) return 1;
    if ((uint64_t)(s->root + 1) * len > cap) return 0;
    memcpy((char *)take + s->root * len, s->data + s->root * len, len);
    return 1;
  }
  if ((uint64_t)n * len > cap) return 0;
  memcpy(take, s->data, n * len);
  return 1;
}

static int arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t member, const proto_params_t *p,
                  int wants, const dred_meet_ref_t *op, const void *data, int error, void *take,
                  size_t cap, int held_returns, dred_meet_arrival_t *out);

int dred_meet_arrive_op(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                        const proto_params_t *p, int wants, const dred_meet_ref_t *op,
                        const void *data, int error, dred_meet_arrival_t *out) {
  return arrive(r, seq, member, p, wants, op, data, error, NULL, 0, 0, out);
}

int dred_meet_arrive_take(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                          const proto_params_t *p, int wants, const dred_meet_ref_t *op,
                          const void *data, int error, void *take, size_t cap,
                          int held_returns, dred_meet_arrival_t *out) {
  if (take == NULL || (op != NULL && wants && op->kind != DRED_MEET_OP_SLOT &&
                       op->kind != DRED_MEET_OP_NONE)) {
    take = NULL; /* by reference: blocks are lent, published, folded in steps */
    cap = 0;
  }
  return arrive(r, seq, member, p, wants, op, data, error, take, cap, held_returns, out);
}

/* An arrival that opened the slot for seq or spilled seq (said so: busy and seq, or
 * spilled, stored) of a bcast whose root posted in the fast lane: served from that post
 * (fast.c), as `taken` -- nothing recorded in the slot.  Lock held; 1 if so. */
static int lane_served(dred_meet_ring_t *r, uint64_t seq, uint32_t member, const proto_params_t *p,
                       int error, dred_meet_slot_t *s, dred_meet_arrival_t *out) {
  int st, rc;
  rc = dred_meet__fast_settle(r, seq, member, p, error, out->lane_data, sizeof out->lane_data, &st);
  if (rc == 0) return 0;
  out->meet = 1;
  out->slot = s;
  out->taken = 1;
  out->lane = 1;
  out->lane_ref = rc == 2;
  out->status = st;
  return 1;
}

static int arrive_slot(dred_meet_ring_t *r, uint64_t seq, uint32_t member, const proto_params_t *p,
                       int wants, const dred_meet_ref_t *op, const void *data, int error,
                       void *take, size_t cap, int held_returns, dred_meet_arrival_t *out);

/* This member reads no post of seq any more once its arrival is over (fast.c): its ack --
 * unless it still copies a bcast root's data from the block its post names (lane_ref). */
static int arrive(dred_meet_ring_t *r, uint64_t seq, uint32_t member, const proto_params_t *p,
                  int wants, const dred_meet_ref_t *op, const void *data, int error, void *take,
                  size_t cap, int held_returns, dred_meet_arrival_t *out) {
  int rc = arrive_slot(r, seq, member, p, wants, op, data, error, take, cap, held_returns, out);
  if (!out->held && !out->lane_ref) dred_meet__fast_ack(r, seq, member); /* (checks r, member) */
  return rc;
}

static int arrive_slot(dred_meet_ring_t *r, uint64_t seq, uint32_t member, const proto_params_t *p,
                       int wants, const dred_meet_ref_t *op, const void *data, int error,
                       void *take, size_t cap, int held_returns, dred_meet_arrival_t *out) {
  dred_meet_slot_t *s;
  dred_meet_ref_t none, pieced;
  uint32_t n;
  uint64_t me;
  int later = 0;
  out->meet = 0;
  out->slot = NULL;
  out->mask = 0;
  out->lead = 0;
  out->taken = 0;
  out->held = 0;
  out->lane = 0;
  out->lane_ref = 0;
  out->status = 0;
  if (r == NULL || p == NULL || member >= r->n)
    return -1;
  n = r->n;
  if (op == NULL || !wants) {
    memset(&none, 0, sizeof none);
    op = &none;
  }
  if (op->kind > DRED_MEET_OP_PIECES) return -1;
  if (wants && op->kind == DRED_MEET_OP_PIECES) {
    /* an allreduce's operand still to be written: a plain ring's (no relay or partial
     * slot reads an operand in chunks), recorded as POOL with its progress beside it */
    if (p->kind != PROTO_KIND_ALLREDUCE || r->relay != RING_PLAIN) return -1;
    pieced = *op;
    pieced.kind = DRED_MEET_OP_POOL;
    op = &pieced;
    later = 1;
  }
  if (wants && op->kind == DRED_MEET_OP_SLOT &&
      ((op->len > 0 && data == NULL) || (op->len != 0 && op->len != p->count * p->extent) ||
       p->count > DRED_MEET_DATA || (uint64_t)n * p->count * p->extent > DRED_MEET_DATA))
    return -1;
  if (wants && op->kind == DRED_MEET_OP_POOL && op->len != p->count * p->extent) return -1;
  me = bit(member);
  /* A member declared failed that still runs (it was only stalled) must not reopen a slot
   * the others left: it would wait for them for ever and hold the slot.  dred-master,
   * which declared it failed, answers it. */
  if (__atomic_load_n(&r->gone, __ATOMIC_ACQUIRE) & me) return 0;
  s = &r->slots[seq % DRED_MEET_DEPTH];
  slot_lock(s);
  if (!(slot_busy(s) && s->seq == seq)) {
    if (held_returns && slot_busy(s) && s->seq < seq && s->spilled <= seq) {
      /* held by an older one, and nobody of seq spilled it yet: the caller may wait (the
       * test dred_meet_slot_held makes, here under the lock) */
      slot_unlock(s);
      out->held = 1;
      return 0;
    }
    if (seq < s->spilled || slot_busy(s)) {
      /* Held by an older reduction (or spilled already): dred-master for everyone of seq.
       * A slot held by a newer one means this member was given up for dead: dred-master
       * too, which knows it. */
      if (slot_busy(s) && s->spilled < seq + 1) {
        __atomic_store_n(&s->spilled, seq + 1, __ATOMIC_SEQ_CST); /* (read lock-free: fast.c) */
        r->spills++;
        dred_meet__fast_wake(r, seq);
      }
      /* ... unless a bcast root posted seq in the fast lane: that post serves everyone */
      (void)lane_served(r, seq, member, p, error, s, out);
      slot_unlock(s);
      return 0;
    }
    __atomic_store_n(&s->busy, 1, __ATOMIC_RELAXED);
    s->n = n;
    __atomic_store_n(&s->seq, seq, __ATOMIC_SEQ_CST);
    if (lane_served(r, seq, member, p, error, s, out)) {
      /* nobody meets here for seq: the slot is free again at once (fast.c says why no
       * member can have come in meanwhile) */
      __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
      slot_unlock(s);
      return 0;
    }
    dred_meet__fast_wake(r, seq); /* a fast-lane member of seq, asleep, goes the slot's way */
    __atomic_store_n(&s->state, DRED_MEET_OPEN, __ATOMIC_RELEASE);
    s->status = DRED_OK;
    s->error = DRED_OK;
    s->root = 0;
    s->kind = PROTO_KIND_REDUCE;
    s->fold_status = DRED_OK;
    s->solo = 0;
    s->arr_watch = 0;
    s->relay = r->relay;
    s->led = 0;
    __atomic_store_n(&s->claimed, 0, __ATOMIC_RELAXED); /* read without the lock: */
    __atomic_store_n(&s->folded, 0, __ATOMIC_RELAXED);  /* dred_meet_claim, _chunks_folded */
    __atomic_store_n(&s->progress, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->pieces, 0, __ATOMIC_RELAXED);
    s->master = 0;
    __atomic_store_n(&s->served, 0, __ATOMIC_RELAXED); /* read without the lock: served_fast */
    __atomic_store_n(&s->arrived, 0, __ATOMIC_RELAXED); /* read without the lock: still_open */
    __atomic_store_n(&s->shown, 0, __ATOMIC_RELAXED);
    memset(s->ref, 0, n * sizeof s->ref[0]);
    /* members declared failed take nothing from it: only the living hold the slot */
    __atomic_store_n(&s->released,
                     (__atomic_load_n(&r->gone, __ATOMIC_ACQUIRE) | r->absent) & all_of(n),
                     __ATOMIC_RELEASE);
    /* nonblocking calls posted in the lane for seq arrive with their posts (meet.h) */
    s->imported = dred_meet__fast_import(r, seq, member, s);
    if (s->imported != 0) {
      uint32_t k;
      for (k = 0; k < n; k++)
        if ((s->imported & bit(k)) && s->p[k].kind == PROTO_KIND_REDUCE) s->arr_watch = 1;
      __atomic_store_n(&s->arrived, s->imported, __ATOMIC_RELEASE);
      __atomic_store_n(&s->shown, s->imported, __ATOMIC_RELEASE);
    }
  }
  if (s->arrived & me) {
    if (s->imported & me) {
      /* recorded from our nonblocking post when the slot opened: this arrival joins */
      s->imported &= ~me;
      slot_unlock(s);
      out->meet = 1;
      out->slot = s;
      return 0;
    }
    slot_unlock(s); /* a second arrival of one member: a caller bug, not a wait */
    return -1;
  }
  __atomic_store_n(&s->arrived, s->arrived | me, __ATOMIC_RELEASE);
  s->p[member] = *p;
  if (s->relay == RING_PARTIAL) {
    if (!partial_arrive(r, s, member, wants, op, error, out)) {
      slot_released(s, me, n); /* nothing to take from here */
      slot_unlock(s);
      return 0;
    }
    __atomic_store_n(&s->shown, s->shown | me, __ATOMIC_RELEASE);
    slot_unlock(s);
    out->meet = 1;
    out->slot = s;
    return 0;
  }
  if (p->kind == PROTO_KIND_REDUCE) s->arr_watch = 1;
  if (s->relay) {
    wants = relay_wants(s, member, wants, op, out);
  } else if (s->state == DRED_MEET_OPEN) {
    if (error != DRED_OK && s->error == DRED_OK) /* read without the lock too */
      __atomic_store_n(&s->error, error, __ATOMIC_RELEASE);
    if (!wants && (s->arrived & ~s->master & ~me) != 0) {
      /* Members that meet here arrived before us, who go to dred-master: a mismatch.  We
       * name them in our READY; they learn it here. */
      out->mask = s->arrived & ~s->master & ~me;
      r->mixed++;
      slot_end(s, DRED_MEET_MIXED, DRED_ERR_MISMATCH);
    } else if (wants && s->master != 0) {
      /* We would meet here but members before us went to dred-master: we follow them (our
       * READY disagrees with theirs), and so does everyone after us. */
      r->mixed++;
      slot_end(s, DRED_MEET_MIXED, DRED_ERR_MISMATCH);
      wants = 0;
    } else if (wants && op->kind == DRED_MEET_OP_NOPLACE && error == DRED_OK &&
               !disagrees(s, member, p)) {
      /* Our operand has no place a peer could read (the pool is full): the reduction goes
       * to dred-master whole.  Members that arrived before us learn it from the slot and
       * follow; everyone after us goes straight there.  Parameters are not compared here:
       * dred-master does that as for any reduction.  But one that disagrees with a member
       * already here meets instead (below, its operand nowhere): a bcast's members served
       * before it never go to dred-master, which could not compare, so the slot says
       * MISMATCH as for any disagreement (bcast_early, slot_decide). */
      r->noplace++;
      slot_end(s, DRED_MEET_SPILL, DRED_OK);
      wants = 0;
    } else if (wants) {
      s->ref[member] = *op;
      if (later) {
        __atomic_store_n(&s->pin[member], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->pieces, s->pieces | me, __ATOMIC_RELEASE); /* (read lock-free) */
      }
      if (op->kind == DRED_MEET_OP_SLOT && op->len > 0)
        memcpy(s->data + (size_t)member * op->len, data, op->len);
      bcast_serve(s, member);
    }
  } else if (s->state == DRED_MEET_MIXED || s->state == DRED_MEET_SPILL) {
    wants = 0; /* MIXED: dred-master tells everyone who was not named; SPILL: it reduces */
  } else {
    wants = 1; /* FAILED (a death, a deadline): decided for everyone, taken here */
  }
  if (!wants) {
    s->master |= me;
    slot_released(s, me, n); /* nothing to take from here */
    slot_unlock(s);
    return 0;
  }
  if (s->state == DRED_MEET_OPEN && !s->relay && (s->arrived & all_of(n)) == all_of(n)) {
    slot_decide(s, n); /* a relay slot decides nothing (its absent members never come) */
  } else if (s->state == DRED_MEET_OPEN && p->kind == PROTO_KIND_BCAST && member == p->root &&
             (s->arrived & ~s->master & ~me) != 0) {
    /* the members already waiting are served now (bcast_early); with none there, nobody
     * waits on this collective's outcome: a later member sees the root at its arrival */
    slot_wake(s);
  }
  /* a member declared failed before this slot opened will not come */
  {
    uint64_t lost = __atomic_load_n(&r->gone, __ATOMIC_ACQUIRE) & ~s->arrived & all_of(n);
    if (s->state == DRED_MEET_OPEN && lost != 0 && lost_ends(s, lost))
      slot_end(s, DRED_MEET_FAILED, lost_status(s, lost));
  }
  /* a root folding early arrivals (dred_meet_solo) reads only a reduce's pool operands */
  if (s->state == DRED_MEET_OPEN && p->kind == PROTO_KIND_REDUCE && op->kind == DRED_MEET_OP_POOL)
    slot_bump_arr(s);
  __atomic_store_n(&s->shown, s->shown | me, __ATOMIC_RELEASE); /* after all of the above */
  /* Taken now: released last, since the release that completes the set frees the slot
   * (the slot's lines are ours under the lock: cheaper than a release after it) */
  if (take != NULL && slot_take(s, member, take, cap)) {
    out->taken = 1;
    slot_released(s, me, n);
  }
  slot_unlock(s);
  out->meet = 1;
  out->slot = s;
  return 0;
}

/* The outcome of `seq` read without the lock, when it is decided: 1 with *state and
 * *status, else 0 (open, or not this seq: the caller takes the lock).  Sound for a member
 * that arrived in `seq` and has not released it -- the slot cannot move to another
 * reduction meanwhile -- and a decided state is final (only an open slot ever changes
 * state).  The seq is read again after the state, in case this member was given up for
 * dead and the slot moved on: then the lock decides.  Keeps the waiters' looks off the
 * slot's lock, whose cache line the other members are using. */
static int decided(dred_meet_slot_t *s, uint64_t seq, int *state, int *status) {
  uint32_t st;
  int stat;
  if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq) return 0;
  st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  if (st == DRED_MEET_OPEN) return 0;
  stat = st == DRED_MEET_OK ? DRED_OK : s->status;
  if (!__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) || __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq)
    return 0;
  *state = (int)st;
  *status = stat;
  return 1;
}

int dred_meet_poll(dred_meet_slot_t *s, uint64_t seq, int *status) {
  int decided_, st, stat;
  if (s == NULL) return 1;
  if (decided(s, seq, &st, &stat)) {
    if (status != NULL) *status = stat;
    return 1;
  }
  slot_lock(s);
  decided_ = slot_busy(s) && s->seq == seq ? s->state != DRED_MEET_OPEN : 1;
  if (status != NULL)
    *status = !(slot_busy(s) && s->seq == seq) ? DRED_ERR_INTERNAL
              : s->state == DRED_MEET_OK  ? DRED_OK
                                          : s->status;
  slot_unlock(s);
  return decided_;
}

/* bcast_early's DRED_OK read without the lock, for a member that arrived in `seq` and has
 * not released it: 1 when it is served, 0 when the lock must decide (anything but a plain
 * OK -- a mismatch, an error, a spill, a relay -- or not known yet).  Sound because every
 * fact it needs to say yes comes from arrivals already whole (`shown`, published at the
 * end of each arrival under the lock, after the parameters, reference and data), those
 * never change while the slot holds `seq`, and everything that could turn the answer into
 * something else (error, state) only ever moves away from OK: read after `shown`, a value
 * that is still OK means the answer was OK when `shown` was read, before any later
 * arrival -- the member was served before a disagreeing one came, as under the lock. */
static int bcast_served_fast(const dred_meet_slot_t *s, uint64_t seq, uint32_t member) {
  uint64_t sh;
  uint32_t r, k, st;
  if (member >= DRED_MEET_MAX_MEMBERS || __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq ||
      !__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) || s->relay)
    return 0;
  if (__atomic_load_n(&s->served, __ATOMIC_ACQUIRE) & bit(member)) /* fixed, never undone */
    return __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq;
  sh = __atomic_load_n(&s->shown, __ATOMIC_ACQUIRE);
  r = s->p[member].root;
  if (!(sh & bit(member)) || r >= s->n || !(sh & bit(r)) || s->p[member].kind != PROTO_KIND_BCAST ||
      (s->ref[r].kind != DRED_MEET_OP_SLOT && s->ref[r].kind != DRED_MEET_OP_POOL))
    return 0;
  for (k = 0; k < s->n; k++)
    if ((sh & bit(k)) && k != member && !proto_params_agree(&s->p[k], &s->p[member])) return 0;
  st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  if ((st != DRED_MEET_OPEN && st != DRED_MEET_OK) || __atomic_load_n(&s->error, __ATOMIC_ACQUIRE) != DRED_OK)
    return 0;
  /* given up for dead meanwhile, the slot may hold another collective: the lock decides */
  return __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq;
}

int dred_meet_bcast_early(dred_meet_slot_t *s, uint64_t seq, uint32_t member, int *status) {
  int known = 0, st = DRED_OK;
  if (s == NULL) return 0;
  slot_lock(s);
  if (slot_busy(s) && s->seq == seq) known = bcast_early(s, member, &st);
  slot_unlock(s);
  if (known && status != NULL) *status = st;
  return known;
}

/* Whether `seq` is still open with nothing a waiter could take yet, read without the
 * lock: the slot is ours until we release it (as in decided()), an open slot's seq and
 * its arrivals only grow, and a bcast member alone in the slot cannot be served.  A
 * waiter's looks stay off the lock the members arriving now need.  (A lock holder that
 * dies meanwhile is found by the next member to take the lock, or by the runtime's
 * dred_meet_member_failed when the death is declared.) */
static int still_open(const dred_meet_slot_t *s, uint64_t seq, uint32_t member, int is_bcast) {
  uint32_t root;
  if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq || !__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) ||
      __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != DRED_MEET_OPEN)
    return 0;
  if (is_bcast) {
    /* Only while nobody else is there: any other arrival (the root, or a member that
     * disagrees with us and so ends our wait with MISMATCH) needs the locked look. */
    if (member >= DRED_MEET_MAX_MEMBERS) return 0;
    root = s->p[member].root; /* our own parameters, written by our arrival */
    if (root == member || (__atomic_load_n(&s->arrived, __ATOMIC_ACQUIRE) & ~bit(member)) != 0)
      return 0;
  }
  return __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq;
}

int dred_meet_look(dred_meet_slot_t *s, uint64_t seq, uint32_t member, int is_bcast,
                   int *early, int *early_status) {
  int st, stat;
  *early = 0;
  if (s == NULL) return -1;
  if (decided(s, seq, &st, &stat) && (!is_bcast || st == DRED_MEET_SPILL)) return st;
  if (is_bcast && bcast_served_fast(s, seq, member)) {
    /* served: the state only says whether the slot spilled, which it cannot have now */
    *early = 1;
    *early_status = DRED_OK;
    st = (int)__atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
    return st == DRED_MEET_OK ? DRED_MEET_OK : DRED_MEET_OPEN;
  }
  slot_lock(s); /* one look for both answers */
  if (slot_busy(s) && s->seq == seq) {
    st = (int)s->state;
    if (is_bcast && st != DRED_MEET_SPILL) *early = bcast_early(s, member, early_status);
  } else {
    st = -1;
  }
  slot_unlock(s);
  return st;
}

int dred_meet_ready(dred_meet_slot_t *s, uint64_t seq, uint32_t member, int is_bcast) {
  int early, st, state;
  if (s == NULL) return 1;
  if (still_open(s, seq, member, is_bcast)) return 0;
  state = dred_meet_look(s, seq, member, is_bcast, &early, &st);
  return state != DRED_MEET_OPEN || early;
}

dred_meet_slot_t *dred_meet_slot_at(dred_meet_ring_t *r, uint64_t seq) {
  return r == NULL ? NULL : &r->slots[seq % DRED_MEET_DEPTH];
}

int dred_meet_slot_held(dred_meet_ring_t *r, uint64_t seq) {
  const dred_meet_slot_t *s;
  if (r == NULL) return 0;
  s = &r->slots[seq % DRED_MEET_DEPTH];
  /* a hint, read without the lock: arriving decides for real */
  return __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) &&
         __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) < seq &&
         __atomic_load_n(&s->spilled, __ATOMIC_ACQUIRE) <= seq;
}

void dred_meet_prewake(dred_meet_ring_t *r, uint64_t seq) {
  dred_meet_slot_t *s;
  if (r == NULL) return;
  s = &r->slots[seq % DRED_MEET_DEPTH];
  if (!__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) || __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq)
    return; /* nobody arrived for seq: nobody waits for it there */
  /* the waiters' loops look again on any move of their word (a spurious one included) */
  if (__atomic_load_n(&s->nwait, __ATOMIC_ACQUIRE) > 0) slot_wake(s);
  if (__atomic_load_n(&s->nwait_arr, __ATOMIC_ACQUIRE) > 0) slot_bump_arr(s);
}

int dred_meet_state(dred_meet_slot_t *s, uint64_t seq) {
  int st, stat;
  if (s == NULL) return -1;
  if (decided(s, seq, &st, &stat)) return st;
  slot_lock(s);
  st = slot_busy(s) && s->seq == seq ? (int)s->state : -1;
  slot_unlock(s);
  return st;
}

const void *dred_meet_data(const dred_meet_slot_t *s) { return s->data; }

dred_meet_ref_t dred_meet_operand(const dred_meet_slot_t *s, uint32_t k) {
  dred_meet_ref_t none;
  if (s != NULL && k < DRED_MEET_MAX_MEMBERS) return s->ref[k];
  memset(&none, 0, sizeof none);
  return none;
}

/* No lock (every member asks as it ends): the caller has not released `seq`, so the slot
 * holds it unless the caller was given up for dead -- and then its bit is set there and
 * in any slot reopened since (as dred_meet_release relies on). */
int dred_meet_given_up(dred_meet_slot_t *s, uint64_t seq, uint32_t member) {
  if (s == NULL || member >= DRED_MEET_MAX_MEMBERS) return 0;
  if ((released_of(s) & bit(member)) != 0) return 1;
  return !__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) || __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq;
}

int dred_meet_needs(dred_meet_slot_t *s, uint64_t seq, uint32_t member) {
  int needs;
  if (s == NULL || member >= DRED_MEET_MAX_MEMBERS) return 0;
  slot_lock(s);
  /* A reduce's blocks are read by its root alone; an allreduce's (chunk results and
   * operands) by every member until it is done, once the slot decided.  A bcast's root's
   * block is read from the moment it arrived (members are served early, bcast_early)
   * until every member is done, whatever the slot decides meanwhile. */
  if (!(slot_busy(s) && s->seq == seq) || s->ref[member].kind != DRED_MEET_OP_POOL) {
    needs = 0;
  } else {
    uint32_t root, kind = slot_kind(s, &root);
    if (kind == PROTO_KIND_BCAST)
      needs = (released_of(s) & all_of(s->n)) != all_of(s->n);
    else
      needs = s->state == DRED_MEET_OK && s->root < s->n &&
              (s->kind == PROTO_KIND_REDUCE ? !(released_of(s) & bit(s->root))
                                            : (released_of(s) & all_of(s->n)) != all_of(s->n));
  }
  slot_unlock(s);
  return needs;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Poll futex word `word` for at most `limit_ns` while it still reads `w`: 1 if it moved. */
static int spin_moved(const uint32_t *word, uint32_t w, uint64_t limit_ns) {
  uint64_t t0 = 0;
  unsigned i;
  if (limit_ns == 0) return 0;
  for (i = 0;; i++) {
    if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != w) return 1;
    relax();
    if ((i & 63) == 0) { /* the clock every 64 polls: a vDSO call, not a system call */
      uint64_t now = mono_ns();
      if (t0 == 0) t0 = now;
      else if (now - t0 >= limit_ns) return 0;
    }
  }
}

/* Sleep on futex word `word` while it reads `w`, at most timeout_ns (returns at once if it
 * moved since the caller read it: no lost wake-up).  The caller counts itself a sleeper. */
static void futex_sleep(uint32_t *word, uint32_t w, uint64_t timeout_ns) {
  struct timespec ts;
  ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
  ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
  syscall(SYS_futex, word, FUTEX_WAIT, w, &ts, NULL, 0);
}

/* Wait at most timeout_ns for futex word `word` to move from `w` (at once if it moved):
 * polled first up to spin_ns, then asleep, counted in `nwait`. */
static void word_wait(uint32_t *word, uint32_t *nwait, uint32_t w, uint64_t timeout_ns) {
  if (timeout_ns == 0) return;
  if (spin_moved(word, w, timeout_ns < spin_ns ? timeout_ns : spin_ns)) return;
  if (timeout_ns <= spin_ns) return;
  __atomic_add_fetch(nwait, 1, __ATOMIC_ACQ_REL);
  futex_sleep(word, w, timeout_ns - spin_ns);
  __atomic_sub_fetch(nwait, 1, __ATOMIC_ACQ_REL);
}

void dred_meet__wake(dred_meet_slot_t *s) { slot_wake(s); }
uint64_t dred_meet__spin_ns(void) { return spin_ns; }
uint64_t dred_meet__now_ns(void) { return mono_ns(); }
void dred_meet__sleep(uint32_t *word, uint32_t w, uint64_t timeout_ns) { futex_sleep(word, w, timeout_ns); }

void dred_meet_wait(dred_meet_slot_t *s, uint64_t seq, uint32_t member, int is_bcast,
                    uint64_t timeout_ns) {
  uint32_t w;
  if (s == NULL) return;
  w = __atomic_load_n(&s->wake, __ATOMIC_ACQUIRE); /* before the look: no lost wake-up */
  if (dred_meet_ready(s, seq, member, is_bcast)) return;
  if (spin_moved(&s->wake, w, timeout_ns < spin_ns ? timeout_ns : spin_ns)) return;
  if (timeout_ns <= spin_ns) return;
  __atomic_add_fetch(&s->nwait, 1, __ATOMIC_ACQ_REL);
  w = __atomic_load_n(&s->wake, __ATOMIC_ACQUIRE);
  if (!dred_meet_ready(s, seq, member, is_bcast)) futex_sleep(&s->wake, w, timeout_ns - spin_ns);
  __atomic_sub_fetch(&s->nwait, 1, __ATOMIC_ACQ_REL);
}

uint32_t dred_meet_epoch(const dred_meet_slot_t *s) {
  return s == NULL ? 0 : __atomic_load_n(&s->wake, __ATOMIC_ACQUIRE);
}

void dred_meet_wait_epoch(dred_meet_slot_t *s, uint32_t epoch, uint64_t timeout_ns) {
  if (s != NULL) word_wait(&s->wake, &s->nwait, epoch, timeout_ns);
}

uint64_t dred_meet_solo(dred_meet_slot_t *s, uint64_t seq, uint32_t member) {
  uint64_t ready = 0, in;
  uint32_t k;
  if (s == NULL || member >= DRED_MEET_MAX_MEMBERS) return 0;
  slot_lock(s);
  if (slot_busy(s) && s->seq == seq && s->state == DRED_MEET_OPEN && member < s->n &&
      (s->arrived & ~s->master & bit(member)) && s->p[member].kind == PROTO_KIND_REDUCE &&
      s->p[member].root == member) {
    in = s->arrived & ~s->master;
    for (k = 0; k < s->n; k++)
      if (k != member && (in & bit(k)) && s->ref[k].kind == DRED_MEET_OP_POOL &&
          proto_params_agree(&s->p[member], &s->p[k]))
        ready |= bit(k);
    if (ready != 0) s->solo = 1;
  }
  slot_unlock(s);
  return ready;
}

uint32_t dred_meet_arrivals(const dred_meet_slot_t *s) {
  return s == NULL ? 0 : __atomic_load_n(&s->arr, __ATOMIC_ACQUIRE);
}

void dred_meet_wait_arrivals(dred_meet_slot_t *s, uint32_t w, uint64_t timeout_ns) {
  if (s != NULL) word_wait(&s->arr, &s->nwait_arr, w, timeout_ns);
}

/* No lock: every member takes one at arrival, and a lock handed between cores costs more
 * than a small collective.  The slot holds `seq` until every member is in `released`, and
 * we are not yet, so seq, busy and n are stable while we look -- unless we were released
 * for dead (declared failed while only stalled): then our bit is set, in this slot and in
 * any slot reopened since (a reopened slot starts with the dead members' bits), so the
 * compare-and-swap below, which expects it clear, can never set it in another reduction's
 * slot. */
void dred_meet_release(dred_meet_slot_t *s, uint64_t seq, uint32_t member) {
  uint64_t me, old;
  if (s == NULL || member >= DRED_MEET_MAX_MEMBERS) return;
  me = bit(member);
  old = released_of(s);
  for (;;) {
    if (!__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) || __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq ||
        (old & me))
      return;
    if (__atomic_compare_exchange_n(&s->released, &old, old | me, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      break;
  }
  slot_free_if_completed(s, old, me, s->n);
}

void dred_meet_end(dred_meet_slot_t *s, uint64_t seq, int status) {
  if (s == NULL) return;
  slot_lock(s);
  if (slot_busy(s) && s->seq == seq && s->state == DRED_MEET_OPEN)
    slot_end(s, DRED_MEET_FAILED, status != DRED_OK ? status : DRED_ERR_INTERNAL);
  slot_unlock(s);
}

void dred_meet_relay_fail(dred_meet_slot_t *s, uint64_t seq, int status) {
  if (s == NULL) return;
  slot_lock(s);
  if (slot_busy(s) && s->seq == seq && s->relay == RING_RELAY) {
    if (s->fold_status == DRED_OK)
      __atomic_store_n(&s->fold_status, status != DRED_OK ? status : DRED_ERR_INTERNAL,
                       __ATOMIC_RELEASE);
    if (s->state == DRED_MEET_OPEN) slot_end(s, DRED_MEET_FAILED, s->fold_status);
    slot_wake(s);
  }
  slot_unlock(s);
}

uint32_t dred_meet_leader(const dred_meet_slot_t *s) {
  /* a follower asks: it arrived after the leader, under the lock, and holds the slot */
  return s != NULL && s->relay == RING_RELAY && s->led ? s->root : DRED_MEET_MAX_MEMBERS;
}

int dred_meet_partial_leave(dred_meet_slot_t *s, uint64_t seq, uint32_t member) {
  int left = 1;
  if (s == NULL || member >= DRED_MEET_MAX_MEMBERS) return 1;
  slot_lock(s);
  if (slot_busy(s) && s->seq == seq && s->relay == RING_PARTIAL) {
    if (s->state == DRED_MEET_OPEN)
      s->master |= bit(member); /* a folder deciding later leaves it out */
    else if (s->state == DRED_MEET_OK && (s->arrived & ~s->master & bit(member)))
      left = 0; /* decided: the folder's READY covers it */
  }
  slot_unlock(s);
  return left;
}

uint32_t dred_meet_folder(dred_meet_slot_t *s, uint64_t seq, uint64_t *members) {
  uint32_t f = DRED_MEET_MAX_MEMBERS;
  if (members != NULL) *members = 0;
  if (s == NULL) return f;
  slot_lock(s);
  if (slot_busy(s) && s->seq == seq && s->relay == RING_PARTIAL && s->state == DRED_MEET_OK) {
    f = s->root;
    if (members != NULL) *members = s->arrived & ~s->master & all_of(s->n);
  }
  slot_unlock(s);
  return f;
}

/* The chunks of an allreduce member writing its operand after arrival (s->pieces) not
 * in its block yet. */
static uint64_t pieces_missing(const dred_meet_slot_t *s, uint32_t member) {
  uint32_t nch = dred_meet_nchunks(s->p[member].count, s->ref[member].len, s->n);
  uint64_t all = all_of(nch);
  return ~__atomic_load_n(&s->pin[member], __ATOMIC_ACQUIRE) & all;
}

/* The chunks `member` claimed and did not say it folded. */
static uint64_t died_folding(const dred_meet_slot_t *s, uint32_t member) {
  uint64_t open = s->claimed & ~s->folded, mine = 0;
  uint32_t c;
  for (c = 0; c < DRED_MEET_MAX_CHUNKS; c++)
    if ((open & bit(c)) && s->claimer[c] == member) mine |= bit(c);
  return mine;
}

void dred_meet_member_failed(dred_meet_ring_t *r, uint32_t member, int status) {
  uint32_t d;
  if (r == NULL || member >= r->n) return;
  __atomic_or_fetch(&r->gone, bit(member), __ATOMIC_ACQ_REL); /* before the sweep: no gap */
  for (d = 0; d < DRED_MEET_DEPTH; d++) {
    dred_meet_slot_t *s = &r->slots[d];
    slot_lock(s);
    uint32_t root, kind = slot_busy(s) ? slot_kind(s, &root) : PROTO_KIND_REDUCE;
    if (slot_busy(s)) {
      /* (a partial ring's member on another node is absent from it, not lost) */
      if (s->state == DRED_MEET_OPEN && !(s->arrived & bit(member)) &&
          !(s->relay == RING_PARTIAL && (r->absent & bit(member)))) {
        if (lost_ends(s, bit(member)))
          slot_end(s, DRED_MEET_FAILED,
                   status == DRED_OK || status == DRED_ERR_PROC_FAILED ? lost_status(s, bit(member)) : status);
      } else if ((s->state == DRED_MEET_OK || s->state == DRED_MEET_OPEN) &&
                 s->fold_status == DRED_OK && kind == PROTO_KIND_BCAST && member == root &&
                 s->ref[member].kind == DRED_MEET_OP_POOL &&
                 __atomic_load_n(&s->progress, __ATOMIC_ACQUIRE) < s->ref[member].len) {
        /* the root died before all its data was in its block: it never left its process */
        __atomic_store_n(&s->fold_status, DRED_ERR_ROOT_FAILED, __ATOMIC_RELEASE);
        slot_wake(s);
      } else if ((s->state == DRED_MEET_OK || s->state == DRED_MEET_OPEN) &&
                 s->fold_status == DRED_OK && (s->pieces & bit(member)) &&
                 (pieces_missing(s, member) & ~s->folded) != 0) {
        /* it died before a chunk nobody folded yet was in its block (it was writing its
         * operand there after it arrived, or folding that chunk from its own memory):
         * that part never left its process */
        __atomic_store_n(&s->fold_status, DRED_ERR_PROC_FAILED, __ATOMIC_RELEASE);
        slot_wake(s);
      } else if (s->state == DRED_MEET_OK && s->fold_status == DRED_OK && died_folding(s, member) != 0) {
        /* it died folding a chunk into a block of its own: the operands are intact, so
         * the chunk is anybody's again */
        __atomic_and_fetch(&s->claimed, ~died_folding(s, member), __ATOMIC_RELEASE);
        slot_wake(s);
      }
      slot_released(s, bit(member), s->n);
    }
    slot_unlock(s);
    slot_wake(s); /* fast-lane members sleeping on it look again (fast.c) */
  }
}

void dred_meet_group_member_failed(dred_meet_table_t *t, uint64_t gid, uint32_t member,
                                   int status) {
  uint32_t g;
  if (t == NULL || __atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) != MEET_MAGIC) return;
  for (g = 0; g < DRED_MEET_GROUPS; g++) {
    dred_meet_ring_t *r = &t->rings[g];
    if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == RING_READY && r->gid == gid)
      dred_meet_member_failed(r, member, status);
  }
}

void dred_meet_ring_stats(const dred_meet_ring_t *r, dred_meet_ring_stats_t *st) {
  uint32_t d;
  memset(st, 0, sizeof *st);
  if (r == NULL) return;
  for (d = 0; d < DRED_MEET_DEPTH; d++) st->busy += __atomic_load_n(&r->slots[d].busy, __ATOMIC_ACQUIRE) != 0;
  st->spills = r->spills;
  st->mixed = r->mixed;
  st->noplace = r->noplace;
}
