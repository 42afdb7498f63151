/*
 * fast.c -- the meeting place's fast lane (meet.h, "The fast lane"): a small blocking
 * reduce, allreduce or bcast whose members each write one post of their own and read
 * their peers', with no lock and no field anyone else writes.
 *
 * A post's `tag` says what its member did for a seq: WRITING (its parameters and operand
 * are being written), POSTED (they are in), SLOW (a looker found it declared failed
 * before it posted: it never will), CLOSED (a member went the slot's way while it was
 * writing: it never will either).  A member that goes the slot's way for seq instead
 * opens the slot for seq, or spills seq (meet.c): the lane's members watch the slot's
 * `busy`, `seq` and `spilled`, which nothing else writes while the lane is in use, so
 * watching them costs nothing.  Its `ack` (a line of its own) says up to which seq it
 * reads no post of this slot any more; only a writer that cannot tell otherwise reads
 * it (dred_meet_fast_post's `peers_past`).
 *
 * Everything a member decides comes from what the posts and the slot say, never from
 * timing:
 *   - a bcast's root POSTED: the whole bcast is served from that post, whoever comes and
 *     whichever way (dred_meet__fast_settle for a member that went the slot's way);
 *   - otherwise all POSTED: the same posts for everyone, the same comparison, the same
 *     outcome;
 *   - otherwise, the slot opened or spilled for seq: a post not in by then never comes --
 *     a writer looks at the slot after marking itself WRITING, and whoever went the slot's
 *     way closes the posts still WRITING after it said so (one of the two sees the
 *     other: both are sequentially consistent) -- so, once no root posted, everyone goes
 *     there.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>

#include "../../include/dred_status.h"
#include "meet_int.h"

/* POSTED comes in four kinds (dred_meet_fast_post_as): by a blocking call or by a
 * nonblocking one (NB: its call returned, so whoever takes the slot for seq records such a
 * post there as its member's arrival, dred_meet__fast_import); and clean, when its member
 * had no other nonblocking post unresolved (so that it had given its ack for every earlier
 * collective of the stream), or DIRTY. */
enum {
  FAST_POSTED = 0, FAST_WRITING = 1, FAST_SLOW = 2, FAST_CLOSED = 3,
  FAST_POSTED_DIRTY = 4, FAST_POSTED_NB = 5, FAST_POSTED_NB_DIRTY = 6
};

static uint64_t fast_tag(uint64_t seq, uint64_t what) { return ((seq + 1) << 3) | what; }

/* Whether tag t says POSTED for seq, of any kind; a nonblocking call's; a clean one. */
static int posted_tag(uint64_t t, uint64_t seq) {
  return (t >> 3) == seq + 1 && ((t & 7) == FAST_POSTED || (t & 7) >= FAST_POSTED_DIRTY);
}
static int nb_tag(uint64_t t, uint64_t seq) {
  return t == fast_tag(seq, FAST_POSTED_NB) || t == fast_tag(seq, FAST_POSTED_NB_DIRTY);
}
static int clean_tag(uint64_t t, uint64_t seq) {
  return t == fast_tag(seq, FAST_POSTED) || t == fast_tag(seq, FAST_POSTED_NB);
}

static struct dred_meet_post *post_of(dred_meet_ring_t *r, uint64_t seq, uint32_t k) {
  return &r->posts[seq % DRED_MEET_DEPTH][k];
}

static uint64_t *ack_of(dred_meet_ring_t *r, uint64_t seq, uint32_t k) {
  return &r->acks[seq % DRED_MEET_DEPTH][k].ack;
}

static dred_meet_slot_t *slot_of(dred_meet_ring_t *r, uint64_t seq) {
  return &r->slots[seq % DRED_MEET_DEPTH];
}

/* The rings whose members may post: plain ones (a relay's or a partial's slots have
 * members on other nodes) of a group small enough that each reads all posts. */
static int ring_fast(const dred_meet_ring_t *r) {
  return r != NULL && r->relay == RING_PLAIN && r->n <= DRED_MEET_FAST_MEMBERS;
}

/* Whether some member went the slot's way for seq: it opened the slot for seq, or found
 * it held and spilled seq.  (While a member of seq waits here the slot cannot have moved
 * past seq: its release needs that member.) */
static int slot_taken(dred_meet_slot_t *s, uint64_t seq) {
  return (__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) && __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq) ||
         __atomic_load_n(&s->spilled, __ATOMIC_ACQUIRE) > seq;
}

/* Wake the slot's sleepers, if any, after what they wait for was stored: the word is
 * bumped only then, so that a member with nobody asleep writes no line but its own.  A
 * sleeper counts itself in `nwait` before its last look; the fence makes one of the two
 * see the other. */
static void wake_sleepers(dred_meet_slot_t *s) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(&s->nwait, __ATOMIC_RELAXED) > 0) dred_meet__wake(s);
}

void dred_meet__fast_ack(dred_meet_ring_t *r, uint64_t seq, uint32_t member) {
  uint64_t *a, t, x, done;
  if (!ring_fast(r) || member >= r->n) return;
  a = ack_of(r, seq, member);
  done = __atomic_load_n(a, __ATOMIC_RELAXED);
  if (done >= seq + 1) return;
  /* An ack is "nothing of this slot up to seq read any more": not while our own
   * nonblocking post of an earlier seq x here is unresolved (its look still reads the
   * peers' posts of x).  Its resolution acks x; an arrival of ours for a later seq here
   * leaves the ack behind meanwhile (its peers go the slot's way there once more). */
  t = __atomic_load_n(&post_of(r, seq, member)->tag, __ATOMIC_ACQUIRE);
  x = (t >> 3) - 1;
  if (t >= 8 && x < seq && nb_tag(t, x) && done < x + 1) return;
  __atomic_store_n(a, seq + 1, __ATOMIC_RELEASE);
}

void dred_meet__fast_wake(dred_meet_ring_t *r, uint64_t seq) {
  if (ring_fast(r)) wake_sleepers(slot_of(r, seq));
}

/* A writer DEPTH collectives ahead of a peer polls up to ack_wait_ns for the peer's ack
 * of seq - DEPTH, where every process has a core (dred_meet__spin_ns): a bcast root
 * streaming from one root, whose peers post nothing, gets there whenever it runs ahead.
 * A peer busy in the stream's calls gives that ack within one call's time, while the
 * slot's way costs both members more than a call and, once taken, tends to keep the
 * stream there (docs/performance.md, session 53: 1.8-2.5 x MPI's time per 8 B bcast in
 * some runs without the poll).  A peer that gives none by then is elsewhere (computing,
 * stopped or dead): the slot's way serves, and this thread polls no more for a while
 * (ACK_IDLE_TIMES the bound), so a root far ahead of a busy peer pays the poll rarely. */
#define ACK_IDLE_TIMES 500u
static uint64_t ack_wait_ns = 2000;
static __thread uint64_t ack_idle_until; /* this thread's polls off until then */

void dred_meet_set_ack_wait(uint64_t ns) {
  ack_wait_ns = ns;
  ack_idle_until = 0;
}

static int peer_acked(dred_meet_ring_t *r, uint64_t seq, uint32_t k) {
  return __atomic_load_n(ack_of(r, seq, k), __ATOMIC_ACQUIRE) >= seq - DRED_MEET_DEPTH + 1;
}

/* Whether every living peer is done with the posts of seq - DEPTH (seq >= DEPTH). */
static int peers_acked(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint64_t gone) {
  uint64_t t0 = 0, now, limit = 0;
  uint32_t k, i;
  for (k = 0; k < r->n; k++) {
    if (k == member || (gone & bit(k))) continue;
    for (i = 0; !peer_acked(r, seq, k); i++) {
      if (t0 == 0) { /* the first ack missing: poll at all? (off the path where all are in) */
        limit = dred_meet__spin_ns() > 0 ? ack_wait_ns : 0;
        if (limit == 0) return 0;
        t0 = dred_meet__now_ns();
        if (t0 < ack_idle_until) return 0;
      } else if ((i & 15) == 15) {
        if ((now = dred_meet__now_ns()) - t0 >= limit) {
          ack_idle_until = now + ACK_IDLE_TIMES * limit;
          return 0;
        }
        if (__atomic_load_n(&r->gone, __ATOMIC_ACQUIRE) & bit(k)) break; /* declared dead */
      }
      relax();
    }
  }
  return 1;
}

int dred_meet_fast_begin(dred_meet_ring_t *r, uint64_t seq, uint32_t member, int peers_past) {
  struct dred_meet_post *me;
  uint64_t gone, t, want;
  uint32_t k;
  if (!ring_fast(r) || member >= r->n) return 0;
  gone = __atomic_load_n(&r->gone, __ATOMIC_ACQUIRE);
  if (gone & bit(member)) return 0; /* dred-master, which declared it, answers it */
  me = post_of(r, seq, member);
  /* our line, and the peers' we read next, on their way at once */
  __builtin_prefetch(me, 1, 3);
  for (k = 0; k < r->n; k++)
    if (k != member) __builtin_prefetch(post_of(r, seq, k), 0, 3);
  /* Every living peer done with the posts of seq - DEPTH here: known when they all posted
   * a later seq of this stream, as blocking calls do one after the other; else asked. */
  if (seq >= DRED_MEET_DEPTH && !peers_past && !peers_acked(r, seq, member, gone)) return 0;
  /* gone the slot's way for seq already (its peers may have seen it): never both */
  if (__atomic_load_n(ack_of(r, seq, member), __ATOMIC_RELAXED) >= seq + 1 ||
      slot_taken(slot_of(r, seq), seq))
    return 0;
  want = fast_tag(seq, FAST_WRITING);
  t = __atomic_load_n(&me->tag, __ATOMIC_ACQUIRE);
  do {
    if (t >= fast_tag(seq, FAST_POSTED)) return 0; /* marked SLOW, or posted already */
  } while (!__atomic_compare_exchange_n(&me->tag, &t, want, 0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE));
  /* WRITING, then the slot once more: whoever went the slot's way since our first look
   * may not have seen us WRITING, so we see it (both sides fence), and stay out */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (slot_taken(slot_of(r, seq), seq)) {
    dred_meet_fast_abandon(r, seq, member);
    return 0;
  }
  return 1;
}

int dred_meet_fast_publish(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                           const proto_params_t *p, const void *data, size_t bytes) {
  return dred_meet_fast_publish_as(r, seq, member, p, data, bytes, DRED_MEET_POST_CLEAN);
}

int dred_meet_fast_publish_as(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                              const proto_params_t *p, const void *data, size_t bytes, int how) {
  static const uint64_t what[] = {FAST_POSTED, FAST_POSTED_DIRTY, FAST_POSTED_NB,
                                  FAST_POSTED_NB_DIRTY};
  struct dred_meet_post *me;
  uint64_t want = fast_tag(seq, FAST_WRITING);
  if (!ring_fast(r) || member >= r->n || p == NULL || bytes > DRED_MEET_FAST_DATA ||
      (bytes > 0 && data == NULL) || how < DRED_MEET_POST_CLEAN || how > DRED_MEET_POST_NB_DIRTY) {
    dred_meet_fast_abandon(r, seq, member);
    return 0;
  }
  me = post_of(r, seq, member);
  me->p = *p;
  if (bytes > 0) memcpy(me->data, data, bytes);
  /* POSTED, unless a looker marked us SLOW (declared failed) or CLOSED (gone the slot's
   * way) meanwhile: then the slot */
  return __atomic_compare_exchange_n(&me->tag, &want, fast_tag(seq, what[how]), 0,
                                     __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE);
}

void dred_meet_fast_abandon(dred_meet_ring_t *r, uint64_t seq, uint32_t member) {
  uint64_t want = fast_tag(seq, FAST_WRITING);
  if (!ring_fast(r) || member >= r->n) return;
  (void)__atomic_compare_exchange_n(&post_of(r, seq, member)->tag, &want,
                                    fast_tag(seq, FAST_CLOSED), 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_ACQUIRE);
}

static void decided_wake(dred_meet_ring_t *r, uint64_t seq);

int dred_meet_fast_post(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                        const proto_params_t *p, const void *data, size_t bytes, int peers_past) {
  return dred_meet_fast_post_as(r, seq, member, p, data, bytes, peers_past, DRED_MEET_POST_CLEAN);
}

int dred_meet_fast_post_as(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                           const proto_params_t *p, const void *data, size_t bytes, int peers_past,
                           int how) {
  if (p == NULL || bytes > DRED_MEET_FAST_DATA || (bytes > 0 && data == NULL)) return 0;
  if (!dred_meet_fast_begin(r, seq, member, peers_past) ||
      !dred_meet_fast_publish_as(r, seq, member, p, data, bytes, how))
    return 0;
  /* a nonblocking call does not look after posting, as a blocking one does (whose look
   * wakes the sleepers once everyone posted): the last post may be its, so it wakes them */
  if (how >= DRED_MEET_POST_NB) decided_wake(r, seq);
  return 1;
}

/* What member k did for seq: 1 posted, -1 never will (CLOSED, or declared failed first:
 * marked SLOW here when `mark`, so that it cannot post after that), 0 not yet. */
static int member_state(dred_meet_ring_t *r, uint64_t seq, uint32_t k, uint64_t gone, int mark) {
  struct dred_meet_post *q = post_of(r, seq, k);
  uint64_t t = __atomic_load_n(&q->tag, __ATOMIC_ACQUIRE);
  for (;;) {
    if (posted_tag(t, seq)) return 1;
    if (t == fast_tag(seq, FAST_SLOW) || t == fast_tag(seq, FAST_CLOSED)) return -1;
    if (!(gone & bit(k))) return 0;
    if (!mark) return -1;
    if (__atomic_compare_exchange_n(&q->tag, &t, fast_tag(seq, FAST_SLOW), 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_ACQUIRE))
      return -1;
  }
}

/* The slot was taken for seq: the posts still WRITING never come (CLOSED; their writers
 * see it at their last compare-and-swap), so that what is POSTED now is all there will
 * be.  (A writer that has not marked itself WRITING yet sees the slot taken and stays
 * out: dred_meet_fast_post.) */
static void close_writing(dred_meet_ring_t *r, uint64_t seq) {
  uint32_t k;
  for (k = 0; k < r->n; k++) {
    uint64_t *tag = &post_of(r, seq, k)->tag, t = fast_tag(seq, FAST_WRITING);
    /* looked at first: a compare-and-swap takes the line from its writer even when it
     * fails, and most slot arrivals find nobody writing */
    if (__atomic_load_n(tag, __ATOMIC_SEQ_CST) == t)
      (void)__atomic_compare_exchange_n(tag, &t, fast_tag(seq, FAST_CLOSED), 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_ACQUIRE);
  }
}

/* The members whose post of seq is a bcast root's, POSTED (bit k: member k's): the bcast
 * is served from such a post. */
static uint64_t roots_of(dred_meet_ring_t *r, uint64_t seq) {
  uint64_t roots = 0;
  uint32_t k;
  for (k = 0; k < r->n; k++) {
    const struct dred_meet_post *q = post_of(r, seq, k);
    if (posted_tag(__atomic_load_n(&q->tag, __ATOMIC_ACQUIRE), seq) &&
        q->p.kind == PROTO_KIND_BCAST && q->p.root == k)
      roots |= bit(k);
  }
  return roots;
}

/* Whether the collective reads member k's operand (as meet.c's reads_operand). */
static int fast_reads(uint32_t kind, uint32_t root, uint32_t k) {
  if (kind == PROTO_KIND_BCAST) return k == root;
  return kind == PROTO_KIND_ALLREDUCE || k != root;
}

/* A copy out of the posts is sound only if none was rewritten meanwhile: that means we
 * were given up for dead (a living reader's ack holds every writer back), and what we
 * copied may not be seq's.  (A writer marks its tag WRITING before it writes anything
 * else.) */
static int posts_still(dred_meet_ring_t *r, uint64_t seq, uint64_t which) {
  uint32_t k;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  for (k = 0; k < r->n; k++)
    if ((which & bit(k)) &&
        !posted_tag(__atomic_load_n(&post_of(r, seq, k)->tag, __ATOMIC_ACQUIRE), seq))
      return 0;
  return 1;
}

/* Whether a post's data (at p) is a reference to a pool block of `len` bytes, as a post
 * whose operand exceeds DRED_MEET_FAST_DATA holds. */
static int ref_names(const void *p, uint64_t len) {
  dred_meet_ref_t ref;
  memcpy(&ref, p, sizeof ref);
  return ref.kind == DRED_MEET_OP_POOL && ref.len == len;
}

/* The outcome of a member whose parameters are `me`, once a bcast root posted for seq
 * (`roots`, every such post seen): served from the post of the root it names -- DRED_OK
 * when they agree, its data copied to `take` (at the root's place when `at_root`, else
 * at 0) unless it is that root; DRED_ERR_MISMATCH when they disagree, or when it names
 * none of them (or is no bcast).  The root itself compares with every post there: of two
 * members that disagree, the later one always sees the other (slot_early's rule).
 * Decided by each member from the posts alone, the same way whichever way it came. */
static int served(dred_meet_ring_t *r, uint64_t seq, uint32_t member, const proto_params_t *me,
                  uint64_t roots, void *take, size_t cap, int at_root) {
  const struct dred_meet_post *q;
  uint32_t rt = me->kind == PROTO_KIND_BCAST ? me->root : r->n, k;
  uint64_t len;
  if (rt >= r->n || !(roots & bit(rt))) return DRED_ERR_MISMATCH;
  q = post_of(r, seq, rt);
  if (rt == member) {
    for (k = 0; k < r->n; k++)
      if (k != member && member_state(r, seq, k, 0, 0) > 0 &&
          !proto_params_agree(&post_of(r, seq, k)->p, me))
        return DRED_ERR_MISMATCH;
    return DRED_OK;
  }
  if (!proto_params_agree(&q->p, me)) return DRED_ERR_MISMATCH;
  len = q->p.count * q->p.extent;
  if (len > DRED_MEET_FAST_DATA) { /* the post holds where the data is: that, at 0 */
    if (cap < sizeof(dred_meet_ref_t) || take == NULL || !ref_names(q->data, len))
      return DRED_ERR_INTERNAL; /* the root wrote it so: cannot happen */
    memcpy(take, q->data, sizeof(dred_meet_ref_t));
  } else if ((at_root ? (uint64_t)(rt + 1) * len : len) > cap || (len > 0 && take == NULL)) {
    return DRED_ERR_INTERNAL; /* the caller's room is the small path's: cannot happen */
  } else if (len > 0) {
    memcpy((char *)take + (at_root ? rt * len : 0), q->data, len);
  }
  return posts_still(r, seq, bit(rt)) ? DRED_OK : DRED_ERR_PROC_FAILED;
}

int dred_meet_fast_still(dred_meet_ring_t *r, uint64_t seq, uint32_t k) {
  return ring_fast(r) && k < r->n && posts_still(r, seq, bit(k));
}

int dred_meet_fast_clean(dred_meet_ring_t *r, uint64_t seq) {
  uint32_t k;
  if (!ring_fast(r)) return 0;
  for (k = 0; k < r->n; k++)
    if (!clean_tag(__atomic_load_n(&post_of(r, seq, k)->tag, __ATOMIC_ACQUIRE), seq)) return 0;
  return 1;
}

/* Whether a member served from the bcast root's post must still copy the data from the
 * root's block (the post held a reference: DRED_MEET_FAST_DATA bytes exceeded). */
static int served_by_ref(uint32_t member, const proto_params_t *me, int status) {
  /* (DRED_OK: it agrees with the root's parameters, the size included) */
  return status == DRED_OK && me->kind == PROTO_KIND_BCAST && me->root != member &&
         me->count * me->extent > DRED_MEET_FAST_DATA;
}

/* Wake the members asleep on seq once this one decided: the last poster (of two last
 * posters at least one sees the other's post, and a sleeper counted itself before its
 * last look), or a bcast's root, whose post is what they wait for.  (Our post was the
 * sequentially consistent store: no fence needed before this load.) */
static void decided_wake(dred_meet_ring_t *r, uint64_t seq) {
  if (__atomic_load_n(&slot_of(r, seq)->nwait, __ATOMIC_SEQ_CST) > 0) dred_meet__wake(slot_of(r, seq));
}

/* What a look at seq finds (no change made unless `mark`): roots, a bcast root's posts;
 * slow, a member that never posts; missing, one not in yet; taken, the slot taken for
 * seq -- read first, so that a post not in by then never comes. */
typedef struct {
  uint64_t roots;
  int slow, missing, taken;
} survey_t;

static void survey(dred_meet_ring_t *r, uint64_t seq, uint64_t gone, int mark, survey_t *sv) {
  uint32_t k;
  sv->slow = sv->missing = 0;
  sv->taken = slot_taken(slot_of(r, seq), seq);
  if (sv->taken && mark) close_writing(r, seq);
  for (k = 0; k < r->n; k++) {
    int st = member_state(r, seq, k, gone, mark);
    sv->slow |= st < 0;
    sv->missing |= st == 0;
  }
  sv->roots = roots_of(r, seq);
}

int dred_meet_fast_look(dred_meet_ring_t *r, uint64_t seq, uint32_t member, void *take,
                        size_t cap, int *status) {
  proto_params_t p[DRED_MEET_FAST_MEMBERS];
  survey_t sv;
  uint64_t gone, len, each;
  uint32_t k, n;
  int st = DRED_OK;
  if (!ring_fast(r) || member >= r->n || status == NULL) return -1;
  n = r->n;
  gone = __atomic_load_n(&r->gone, __ATOMIC_ACQUIRE);
  /* Declared failed while it waited (stalled): its peers may have ended seq without it;
   * dred-master, which declared it, answers it (the slot's way sends it there). */
  if (gone & bit(member)) {
    dred_meet__fast_ack(r, seq, member);
    return -1;
  }
  survey(r, seq, gone, 1, &sv);
  if (sv.roots) {
    p[0] = post_of(r, seq, member)->p;
    *status = served(r, seq, member, &p[0], sv.roots, take, cap, 1);
    decided_wake(r, seq);
    return 2;
  }
  if (sv.slow || (sv.missing && sv.taken)) {
    dred_meet__fast_ack(r, seq, member);
    return -1;
  }
  if (sv.missing) return 0;
  /* Everyone posted: the same comparison as the slot's (meet.c, slot_decide). */
  for (k = 0; k < n; k++) p[k] = post_of(r, seq, k)->p;
  if (p[0].root >= n) st = DRED_ERR_MISMATCH;
  for (k = 1; k < n && st == DRED_OK; k++)
    if (!proto_params_agree(&p[0], &p[k])) st = DRED_ERR_MISMATCH;
  /* what each post holds: the operand, or past DRED_MEET_FAST_DATA where it is */
  len = p[0].count * p[0].extent;
  each = len > DRED_MEET_FAST_DATA ? sizeof(dred_meet_ref_t) : len;
  if (st == DRED_OK && ((uint64_t)n * each > cap || (each > 0 && take == NULL)))
    st = DRED_ERR_INTERNAL; /* a poster checked its own size: cannot happen */
  for (k = 0; k < n && st == DRED_OK; k++) {
    char *at = (char *)take + k * each;
    if (!fast_reads(p[0].kind, p[0].root, k) || each == 0) continue;
    memcpy(at, post_of(r, seq, k)->data, each);
    if (each == sizeof(dred_meet_ref_t) && each != len && !ref_names(at, len))
      st = DRED_ERR_INTERNAL; /* a poster wrote it so: cannot happen */
  }
  if (!posts_still(r, seq, all_of(n))) st = DRED_ERR_PROC_FAILED;
  *status = st;
  /* (the ack: dred_meet_fast_done, when the caller is done) */
  decided_wake(r, seq);
  return 1;
}

int dred_meet__fast_settle(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                           const proto_params_t *p, int error, void *take, size_t cap,
                           int *status) {
  uint64_t roots;
  if (!ring_fast(r) || member >= r->n || p == NULL || status == NULL) return 0;
  /* the caller's open or spill of the slot, before our look at the tags (meet.h) */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  close_writing(r, seq);
  if ((roots = roots_of(r, seq)) == 0) return 0;
  /* a member's own error is its outcome; the others, served already or not, keep theirs */
  *status = error != DRED_OK ? error : served(r, seq, member, p, roots, take, cap, 0);
  return served_by_ref(member, p, *status) ? 2 : 1;
}

uint64_t dred_meet__fast_import(dred_meet_ring_t *r, uint64_t seq, uint32_t opener,
                                dred_meet_slot_t *s) {
  uint64_t got = 0, len;
  uint32_t k, n;
  if (!ring_fast(r) || s == NULL) return 0;
  n = r->n;
  for (k = 0; k < n; k++) {
    const struct dred_meet_post *q = post_of(r, seq, k);
    int reads;
    if (k == opener || !nb_tag(__atomic_load_n(&q->tag, __ATOMIC_ACQUIRE), seq)) continue;
    len = q->p.count * q->p.extent;
    reads = fast_reads(q->p.kind, q->p.root, k);
    /* (its poster checked both: an operand whole in its post, the group's in a slot) */
    if (reads && (len > DRED_MEET_FAST_DATA || (uint64_t)n * len > DRED_MEET_DATA)) continue;
    s->p[k] = q->p;
    memset(&s->ref[k], 0, sizeof s->ref[k]);
    s->ref[k].kind = reads ? DRED_MEET_OP_SLOT : DRED_MEET_OP_NONE;
    if (reads) {
      s->ref[k].len = len;
      if (len > 0) memcpy(s->data + (size_t)k * len, q->data, len);
    }
    got |= bit(k);
  }
  return got;
}

int dred_meet_fast_watch(dred_meet_ring_t *r, uint64_t seq, uint32_t member,
                         const proto_params_t *me, void *take, size_t cap, int *status) {
  uint64_t gone, roots;
  int taken;
  if (!ring_fast(r) || member >= r->n || me == NULL || status == NULL ||
      me->kind != PROTO_KIND_BCAST || me->root >= r->n || me->root == member)
    return -1; /* (the slot answers a root out of range: MISMATCH) */
  gone = __atomic_load_n(&r->gone, __ATOMIC_ACQUIRE);
  if (gone & bit(member)) return -1; /* dred-master, which declared it, answers it */
  taken = slot_taken(slot_of(r, seq), seq); /* first: a post not in by then never comes */
  if (taken) close_writing(r, seq);
  if ((roots = roots_of(r, seq)) != 0) {
    *status = served(r, seq, member, me, roots, take, cap, 1);
    return 2;
  }
  /* The root will not post a bcast root's post: it went the slot's way (taken), was
   * declared failed (its arrival, should it still run, goes through the slot, which
   * decides for everyone -- served from its post after all if it posted first), or it
   * posted something else (another kind, another root: its peers wait for everyone's
   * post, and ours never comes).  The slot then decides. */
  if (taken || member_state(r, seq, me->root, gone, 0) != 0) return -1;
  return 0;
}

/* Whether a look at seq would still say "not yet" (no change made): member's, a poster's
 * (watch_root >= n), or a bcast non-root's watching its root's post. */
static int pending(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint32_t watch_root) {
  uint64_t gone = __atomic_load_n(&r->gone, __ATOMIC_ACQUIRE);
  survey_t sv;
  if (gone & bit(member)) return 0;
  if (watch_root < r->n) /* dred_meet_fast_watch's rules, read only */
    return !slot_taken(slot_of(r, seq), seq) && member_state(r, seq, watch_root, gone, 0) == 0 &&
           !roots_of(r, seq);
  survey(r, seq, gone, 0, &sv);
  return !sv.roots && !sv.slow && sv.missing && !sv.taken;
}

static void wait_for(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint32_t watch_root,
                     uint64_t timeout_ns) {
  dred_meet_slot_t *s;
  uint64_t t0, spin;
  uint32_t w, i;
  if (!ring_fast(r) || member >= r->n || timeout_ns == 0) return;
  s = slot_of(r, seq);
  spin = dred_meet__spin_ns() < timeout_ns ? dred_meet__spin_ns() : timeout_ns;
  t0 = dred_meet__now_ns();
  for (i = 0; spin > 0; i++) {
    if (!pending(r, seq, member, watch_root)) return;
    relax();
    if ((i & 63) == 63 && dred_meet__now_ns() - t0 >= spin) break;
  }
  if (timeout_ns <= spin) return;
  /* Asleep on the slot's wake word: counted first, then one more look (whoever resolves
   * it after that look sees us counted and wakes the word: wake_sleepers, a slot opened or
   * spilled, a death). */
  __atomic_add_fetch(&s->nwait, 1, __ATOMIC_SEQ_CST);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  w = __atomic_load_n(&s->wake, __ATOMIC_ACQUIRE);
  if (pending(r, seq, member, watch_root)) dred_meet__sleep(&s->wake, w, timeout_ns - spin);
  __atomic_sub_fetch(&s->nwait, 1, __ATOMIC_ACQ_REL);
}

int dred_meet_fast_pending(dred_meet_ring_t *r, uint64_t seq, uint32_t member) {
  return ring_fast(r) && member < r->n && pending(r, seq, member, UINT32_MAX);
}

void dred_meet_fast_wait(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint64_t timeout_ns) {
  wait_for(r, seq, member, UINT32_MAX, timeout_ns);
}

void dred_meet_fast_watch_wait(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint32_t root,
                               uint64_t timeout_ns) {
  if (r != NULL && root < r->n) wait_for(r, seq, member, root, timeout_ns);
}

_Static_assert((offsetof(struct dred_meet_post, data) + DRED_MEET_FAST_PROGRESS_OFF) % 8 == 0 &&
                   DRED_MEET_FAST_PROGRESS_OFF >= sizeof(dred_meet_ref_t),
               "a post's progress word: aligned, after its reference");

static uint64_t *progress_of(dred_meet_ring_t *r, uint64_t seq, uint32_t k) {
  return (uint64_t *)(void *)(post_of(r, seq, k)->data + DRED_MEET_FAST_PROGRESS_OFF);
}

void dred_meet_fast_progress_set(dred_meet_ring_t *r, uint64_t seq, uint32_t member, uint64_t bytes) {
  if (!ring_fast(r) || member >= r->n) return;
  __atomic_store_n(progress_of(r, seq, member), bytes, __ATOMIC_RELEASE); /* after the bytes */
}

uint64_t dred_meet_fast_progress(dred_meet_ring_t *r, uint64_t seq, uint32_t k) {
  uint64_t got;
  if (!ring_fast(r) || k >= r->n) return UINT64_MAX;
  got = __atomic_load_n(progress_of(r, seq, k), __ATOMIC_ACQUIRE);
  /* read before the tag: a post rewritten for a later seq shows in its tag afterwards */
  return posts_still(r, seq, bit(k)) ? got : UINT64_MAX;
}

int dred_meet_fast_progress_cas(dred_meet_ring_t *r, uint64_t seq, uint32_t k, uint64_t expect,
                                uint64_t want) {
  if (!ring_fast(r) || k >= r->n || !posts_still(r, seq, bit(k))) return 0;
  return __atomic_compare_exchange_n(progress_of(r, seq, k), &expect, want, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
}

void dred_meet_fast_wake(dred_meet_ring_t *r, uint64_t seq) { dred_meet__fast_wake(r, seq); }

int dred_meet_fast_gone(dred_meet_ring_t *r, uint32_t k) {
  return r != NULL && k < r->n && (__atomic_load_n(&r->gone, __ATOMIC_ACQUIRE) & bit(k)) != 0;
}

void dred_meet_fast_done(dred_meet_ring_t *r, uint64_t seq, uint32_t member) {
  dred_meet__fast_ack(r, seq, member);
}

