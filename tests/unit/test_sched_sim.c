/*
 * test_sched_sim.c -- the scheduler against a small simulator that plays every worker: it
 * answers each TASK with a TASK_DONE (absorbing in place or not) and each RECOVER with a
 * recovered READY (or RECOVER_FAILED) as dred's worker would, in random order, kills
 * workers at random, and tracks per buffer how many times each operand went into it, so a
 * result that counts an operand twice or misses one is caught.  SCHED_TEST_SEED=n picks
 * another seed for the random rounds.
 *
 * Events are built by tests/unit/sched_harness.h.
 */
#include "sched_harness.h"

/* ---- the simulator ------------------------------------------------------------------- */

/* The simulator plays every worker as dred's would, absorption included:
 *   - every non-root member's READY is its snapshot (snap = 1; snap_buf, a buffer that
 *     exists from the member's call on); it copies its operand to the next member's
 *     worker, unless the round makes it one of the members without a copy (norep), whose
 *     operand then survives its worker only in its snapshot, readable by node peers;
 *   - a TASK with absorb = 1 is done in place or not, at random: in place, the executor's
 *     snapshot takes the provider's buffer (DONE absorbed = 1, the same buffer id, its
 *     contents grown, snap_last = the provider); not in place, the sum goes to a fresh
 *     buffer and the snapshot stays as it was.  An executor killed with an in-place task
 *     has finished the absorption or not begun it, at random (a node peer finishes one
 *     under way, so those two are all a peer can find);
 *   - a RECOVER is answered by the member's own live worker from its snapshot as it stands
 *     (unit = 1; its operand alone when single is asked, unit = 0), by a holder of the
 *     copy with the operand alone (unit = 0), or by a node peer of a dead member from its
 *     snapshot: unit = 1, absorbed = 1 iff the snapshot's last absorption is the RECOVER's
 *     tentative member; refused (RECOVER_FAILED) when single is asked and the snapshot
 *     absorbed something, or when its last absorption is neither `last` nor `tentative`
 *     (counted as a mismatch: the scheduler's bookkeeping disagrees with the snapshot).
 * Node partials (lib/paths/partial.c): where a group spans nodes, the non-root members of
 * a node other than the root's may stay in their node's partial slot.  Its folder -- one of
 * them, drawn -- folds their operands into a fresh buffer and sends one READY whose cover
 * names them all, itself included (under a non-commutative op only a run of consecutive
 * members folds; any other choice spills, and every member sends its own READY); the
 * others send nothing, and their snapshots stay their operands.  A covered member may
 * give up and send its own READY as well (partial.c: when its folder dies, and now and
 * then at random, since dred-master must take either order), once.  A RECOVER of the
 * folder's own member retires the partial: its worker answers with its snapshot.
 * Allreduce and bcast (master/sched/sched_distribute.c): an allreduce reduces to member 0
 * as a reduce does; once one message covers every member, member 0 is sent PUSH -- its
 * buffer must then hold every operand exactly once -- and answers with DATA, which every
 * member that arrived is sent before its END.  A bcast has no tasks: its root's DATA
 * follows its READY.  Their root dies only once dred-master holds the whole result, and
 * then costs the survivors nothing (the simulator keeps every instance exact).
 * What the scheduler dispatches is checked against that model (TASK.absorb is 1 exactly
 * when both buffers are their members' snapshots, on one node, the executor not the root),
 * and every completed instance must count each operand exactly once. */

#define SIM_MAXN 128
#define SIM_MAXW 128
#define SIM_NONE PROTO_NO_MEMBER

enum { P_READY, P_RECOVER, P_DONE, P_PARTIAL, P_DATA, P_HAVE };

typedef struct {
  int kind, inst;
  uint32_t worker; /* who sends it; dropped if dead by then */
  uint32_t member;
  uint64_t task_id;
  uint32_t prov, em, pm;
  uint64_t pbuf;
  uint8_t absorb, inplace;      /* TASK: may absorb; this worker does it in place */
  uint32_t last, tentative;     /* RECOVER's fields */
  int32_t error;                /* HAVE's */
  uint8_t single;
  uint8_t cover[SIM_MAXN / 8];  /* PARTIAL: the members it covers, the folder's included */
} pend_t;

typedef struct {
  sched_key_t key;
  uint32_t n, workers[SIM_MAXN];
  uint32_t bogus[SIM_MAXN]; /* a replica holder that answers RECOVER_FAILED, or 0 */
  uint8_t norep[SIM_MAXN];  /* announces no copy: only its snapshot survives its worker */
  uint64_t snap_buf[SIM_MAXN]; /* non-root members: the snapshot's buffer id */
  uint32_t snap_last[SIM_MAXN]; /* the member whose unit the snapshot absorbed last */
  proto_msg_t p;
  int created;
  int ends[SIM_MAXN];
  uint32_t end_order[SIM_MAXN];
  uint32_t nend;
  int journaled;
  int32_t status;
  uint32_t jtasks, jrec, recovered_fed;
  uint64_t cur_buf[SIM_MAXN]; /* by holder member */
  uint32_t folder[SIM_MAXN];  /* the member folding k's node partial, or SIM_NONE */
  uint8_t gave_up[SIM_MAXN];  /* a covered member sent its own READY (at most once) */
  uint8_t covered[SIM_MAXN];  /* a partial naming k reached dred-master, taken or not */
  uint32_t saved;             /* tasks the partials may save: their members less one each */
  uint8_t kind;               /* PROTO_KIND_*: an allreduce reduces to member 0 (its root) */
  uint64_t bytes;             /* count x extent */
  uint64_t got[SIM_MAXN];     /* DATA bytes each member was sent (allreduce, bcast) */
  int pushed;                 /* PUSHes: an allreduce's whole result checked there */
  int data_in;                /* the holder's DATA all fed: dred-master holds the result */
  /* An allreduce's relay followers (lib/paths/relay.c): k copies the result from member
   * leader[k] of its node (SIM_NONE: it does not follow), then says so in a HAVE sent
   * after its READY -- error 0 once its leader was told OK, an error when the leader died
   * first (or, now and then, when the relay failed otherwise); dred-master sends it
   * nothing before (follow_state: 0 not arrived, 1 arrived, 2 HAVE due at arrival, 3 HAVE
   * sent, with have_error). */
  uint32_t leader[SIM_MAXN];
  uint8_t follow_state[SIM_MAXN];
  int32_t have_error[SIM_MAXN];
} sim_inst_t;

typedef struct {
  sched_t *s;
  uint32_t nw;
  uint8_t dead[SIM_MAXW + 1];
  uint32_t node[SIM_MAXW + 1];
  sim_inst_t *in;
  int ninst;
  pend_t *pend;
  size_t npend, cappend;
  int16_t **vec; /* per buffer id: how often each member's operand is in it */
  size_t nbuf, capbuf;
  int last_inst;
  uint64_t last_buf;
  uint32_t last_worker; /* who sent the event fed last */
  uint64_t rng;
  int flaky; /* inject PROVIDER_LOST with live providers */
  int kinds; /* draw allreduces and bcasts too, not only reduces */
  uint32_t norep_pct; /* percent of non-root members without a copy */
  uint32_t target_pct; /* percent of deaths aimed at a worker with something in flight */
  uint32_t kills, max_kills;
  uint32_t tasks_seen;
  /* absorption counters: what the run exercised */
  uint32_t absorb_tasks, inplace, killed_inplace, unit_answers, absorbed_answers,
      split_answers, single_asks, peer_answers, refusals, mismatches;
  /* node partials: sent, members they covered, covered members that gave up */
  uint32_t partials, partial_members, giveups;
  /* allreduce and bcast: PUSHes answered, DATA pieces sent to members */
  uint32_t pushes, datas, haves, holder_kills;
} sim_t;

static uint64_t rnd(sim_t *m) { /* xorshift64* */
  m->rng ^= m->rng >> 12;
  m->rng ^= m->rng << 25;
  m->rng ^= m->rng >> 27;
  return m->rng * 2685821657736338717ULL;
}
static uint32_t rndn(sim_t *m, uint32_t n) { return (uint32_t)(rnd(m) % n); }

static uint64_t sim_buf(sim_t *m, int inst, int member) {
  if (m->nbuf == m->capbuf) {
    m->capbuf = m->capbuf ? m->capbuf * 2 : 256;
    m->vec = realloc(m->vec, m->capbuf * sizeof *m->vec);
    assert_non_null(m->vec);
  }
  m->vec[m->nbuf] = calloc(m->in[inst].n, sizeof(int16_t));
  assert_non_null(m->vec[m->nbuf]);
  if (member >= 0) m->vec[m->nbuf][member] = 1;
  return ++m->nbuf; /* ids start at 1 */
}

/* A fresh buffer holding what buffer `from` holds (a copy read from it). */
static uint64_t sim_buf_copy(sim_t *m, int inst, uint64_t from) {
  uint64_t b = sim_buf(m, inst, -1);
  memcpy(m->vec[b - 1], m->vec[from - 1], m->in[inst].n * sizeof(int16_t));
  return b;
}

static void sim_push(sim_t *m, pend_t pe) {
  if (m->npend == m->cappend) {
    m->cappend = m->cappend ? m->cappend * 2 : 256;
    m->pend = realloc(m->pend, m->cappend * sizeof *m->pend);
    assert_non_null(m->pend);
  }
  m->pend[m->npend++] = pe;
}

static int sim_find(const sim_t *m, sched_key_t k) {
  int i;
  for (i = 0; i < m->ninst; i++)
    if (m->in[i].key.group == k.group && m->in[i].key.tag == k.tag) return i;
  fail_msg("action for an unknown key");
  return -1;
}

static uint32_t sim_member_of(const sim_inst_t *in, uint32_t w) {
  uint32_t k;
  for (k = 0; k < in->n; k++)
    if (in->workers[k] == w) return k;
  fail_msg("END to a worker outside the group");
  return 0;
}

/* Only these hold a copy of member k's operand: its own worker and, unless it makes none,
 * the next member's (eq. 4). */
static int sim_has_copy(const sim_inst_t *in, uint32_t k, uint32_t w) {
  return w == in->workers[k] || (!in->norep[k] && in->n > 1 && w == in->workers[(k + 1) % in->n]);
}

/* Worker w, not member k's own, on the node of member k's worker: it can read k's
 * snapshot once k's worker is dead. */
static int sim_node_peer(const sim_t *m, const sim_inst_t *in, uint32_t k, uint32_t w) {
  return w != in->workers[k] && m->node[w] == m->node[in->workers[k]];
}

/* Absorb buffer `from` into member em's snapshot in place. */
static void sim_absorb(sim_t *m, sim_inst_t *in, uint32_t em, uint32_t pm, uint64_t from) {
  uint64_t sb = in->snap_buf[em];
  uint32_t k;
  for (k = 0; k < in->n; k++)
    m->vec[sb - 1][k] = (int16_t)(m->vec[sb - 1][k] + m->vec[from - 1][k]);
  in->snap_last[em] = pm;
}

static void sim_leader_over(sim_t *m, int inst, uint32_t j, int ok);

static void sim_drain(sim_t *m) {
  sched_action_t a;
  while (sched_next_action(m->s, &a)) {
    if (a.type == SCHED_ACT_SEND && a.msg.type == PROTO_FAILED) continue; /* the adapter's */
    int i = sim_find(m, a.key);
    sim_inst_t *in = &m->in[i];
    uint32_t k;
    pend_t pe;
    memset(&pe, 0, sizeof pe);
    pe.inst = i;
    switch (a.type == SCHED_ACT_SEND ? (int)a.msg.type : -(int)a.type) {
      case PROTO_TASK: {
        uint32_t em = a.msg.u.task.exec_member, pm = a.msg.u.task.prov_member;
        uint64_t eb = in->cur_buf[em], pb = a.msg.u.task.buf.addr;
        int want;
        assert_false(m->dead[a.worker]);
        assert_false(m->dead[a.msg.u.task.provider]);
        assert_int_not_equal(eb, 0);
        assert_int_equal(in->cur_buf[pm], pb);
        for (k = 0; k < in->n; k++) /* the two sides never share an operand */
          assert_true(m->vec[eb - 1][k] + m->vec[pb - 1][k] <= 1);
        if (!in->p.u.ready.commutative) { /* adjacent intervals, exec_is_left as they lie */
          uint32_t elo = in->n, ehi = 0, plo = in->n, phi = 0;
          for (k = 0; k < in->n; k++) {
            if (m->vec[eb - 1][k]) { if (k < elo) elo = k; ehi = k; }
            if (m->vec[pb - 1][k]) { if (k < plo) plo = k; phi = k; }
          }
          assert_true(ehi + 1 == plo || phi + 1 == elo);
          assert_int_equal(a.msg.u.task.exec_is_left, ehi < plo);
        }
        /* in place exactly between two snapshots (held by their own workers, so the
         * buffers are the snapshots themselves) on one node, never at the root */
        want = em != in->p.u.ready.root && in->snap_buf[em] != 0 && eb == in->snap_buf[em] &&
               in->snap_buf[pm] != 0 && pb == in->snap_buf[pm] &&
               m->node[a.worker] == m->node[a.msg.u.task.provider];
        assert_int_equal(a.msg.u.task.absorb, want);
        if (want) {
          assert_int_equal(a.worker, in->workers[em]);
          assert_int_equal(a.msg.u.task.provider, in->workers[pm]);
          m->absorb_tasks++;
        }
        pe.kind = P_DONE;
        pe.worker = a.worker;
        pe.task_id = a.msg.u.task.task_id;
        pe.prov = a.msg.u.task.provider;
        pe.em = em;
        pe.pm = pm;
        pe.pbuf = pb;
        pe.absorb = a.msg.u.task.absorb;
        pe.inplace = pe.absorb && rndn(m, 3) != 0;
        sim_push(m, pe);
        m->tasks_seen++;
        break;
      }
      case PROTO_RECOVER:
        assert_false(m->dead[a.worker]);
        pe.kind = P_RECOVER;
        pe.worker = a.worker;
        pe.member = a.msg.u.recover.member;
        pe.last = a.msg.u.recover.last;
        pe.tentative = a.msg.u.recover.tentative;
        pe.single = a.msg.u.recover.single;
        assert_true(pe.last == SIM_NONE || pe.last < in->n);
        assert_true(pe.tentative == SIM_NONE || pe.tentative < in->n);
        if (pe.single) m->single_asks++;
        sim_push(m, pe);
        break;
      case PROTO_PUSH: /* an allreduce's whole result, at member 0: every operand once */
        assert_int_equal(in->kind, PROTO_KIND_ALLREDUCE);
        assert_int_equal(a.worker, in->workers[0]);
        assert_false(m->dead[a.worker]);
        for (k = 0; k < in->n; k++) assert_int_equal(m->vec[in->cur_buf[0] - 1][k], 1);
        in->pushed++;
        m->pushes++;
        pe.kind = P_DATA;
        pe.worker = a.worker;
        sim_push(m, pe);
        break;
      case PROTO_DATA: /* in order, within the result, to a member that arrived */
        k = sim_member_of(in, a.worker);
        assert_int_not_equal(in->kind, PROTO_KIND_REDUCE);
        assert_int_equal(a.msg.u.data.total, in->bytes);
        assert_int_equal(a.msg.u.data.offset, in->got[k]);
        assert_non_null(a.msg.u.data.data);
        assert_true(in->leader[k] == SIM_NONE || in->follow_state[k] == 3); /* not before HAVE */
        in->got[k] += a.msg.u.data.len;
        m->datas++;
        assert_true(in->got[k] <= in->bytes);
        break;
      case PROTO_END:
        k = sim_member_of(in, a.worker);
        assert_int_equal(a.msg.u.end.status, DRED_OK);
        assert_false(m->dead[a.worker]);
        if (in->leader[k] != SIM_NONE) /* a follower: after its HAVE, and the result */
          assert_true(in->follow_state[k] == 3 &&
                      in->got[k] == (in->have_error[k] == 0 ? 0 : in->bytes));
        else if (in->kind != PROTO_KIND_REDUCE && k != in->p.u.ready.root)
          assert_int_equal(in->got[k], in->bytes); /* the whole result before the END */
        if (in->kind == PROTO_KIND_ALLREDUCE) sim_leader_over(m, i, k, 1);
        in->ends[k]++;
        in->end_order[in->nend++] = a.worker;
        break;
      case -SCHED_ACT_JOURNAL_TASK:
        break;
      case PROTO_INLINE: /* the simulator never starts an inline instance */
        free(a.owned);
        fail_msg("INLINE for an instance that is not inline");
        break;
      case -SCHED_ACT_JOURNAL_REDUCTION:
        free(a.owned); /* an allreduce's or bcast's result, which its DATA pointed into */
        in->journaled++;
        in->status = a.u.jred.status;
        in->jtasks = a.u.jred.tasks;
        in->jrec = a.u.jred.recovered;
        assert_int_equal(a.u.jred.members, in->n);
        if (in->kind == PROTO_KIND_REDUCE) {
          /* the buffer fed last is the result: every operand exactly once */
          assert_int_equal(m->last_inst, i);
          assert_int_equal(m->last_worker, in->workers[in->p.u.ready.root]); /* at the root */
          for (k = 0; k < in->n; k++) assert_int_equal(m->vec[m->last_buf - 1][k], 1);
        } else if (in->kind == PROTO_KIND_ALLREDUCE) {
          assert_int_equal(in->pushed, in->bytes > 0 ? 1 : 0); /* checked at the PUSH */
        }
        /* every member alive at the end told exactly once, the dead never -- or, where
         * ENDs go out member by member as each holds the result (allreduce, bcast), at
         * most once before it died */
        for (k = 0; k < in->n; k++)
          if (!m->dead[in->workers[k]])
            assert_int_equal(in->ends[k], 1);
          else
            assert_true(in->ends[k] <= (in->kind == PROTO_KIND_REDUCE ? 0 : 1));
        break;
      default:
        fail_msg("unknown action");
    }
  }
}

/* Member k's READY with buffer `buf`: its own (recovered = 0: the
 * snapshot, replicas announced), or an answer to a RECOVER with its flags. */
static proto_msg_t sim_ready_msg(const sim_inst_t *in, uint32_t k, uint64_t buf, int recovered,
                                 int snap, int unit, int absorbed) {
  uint32_t reps[2];
  uint8_t nrep = 0;
  proto_msg_t r = ready_msg(in->key, k, in->p);
  if (!recovered && in->n > 1) {
    if (in->bogus[k]) reps[nrep++] = in->bogus[k];
    if (!in->norep[k]) reps[nrep++] = in->workers[(k + 1) % in->n];
  }
  r.u.ready.buf.addr = buf;
  if (!recovered && in->leader[k] != SIM_NONE) r.u.ready.have = PROTO_HAVE_FOLLOW;
  r.u.ready.recovered = (uint8_t)recovered;
  r.u.ready.snap = (uint8_t)snap;
  r.u.ready.unit = (uint8_t)unit;
  r.u.ready.absorbed = (uint8_t)absorbed;
  r.u.ready.nreplicas = nrep;
  memcpy(r.u.ready.replicas, reps, nrep * sizeof *reps);
  return r;
}

/* ... and fed: its buffer becomes what member k's message holds. */
static void sim_feed_ready(sim_t *m, int inst, uint32_t k, uint32_t w, uint64_t buf, int recovered,
                           int snap, int unit, int absorbed) {
  sim_inst_t *in = &m->in[inst];
  proto_msg_t r = sim_ready_msg(in, k, buf, recovered, snap, unit, absorbed);
  in->cur_buf[k] = buf;
  m->last_inst = inst;
  m->last_buf = buf;
  m->last_worker = w;
  if (recovered) in->recovered_fed++;
  assert_int_equal(feed(m->s, w, &r), 0);
  in->created = 1;
}

/* The folder pe->member's node partial: a fresh buffer holding every covered member's
 * operand, announced by one READY whose cover names them (partial.c's partial_send). */
static void sim_feed_partial(sim_t *m, const pend_t *pe) {
  sim_inst_t *in = &m->in[pe->inst];
  proto_msg_t r = ready_msg(in->key, pe->member, in->p);
  uint64_t b = sim_buf(m, pe->inst, -1);
  uint32_t k;
  for (k = 0; k < in->n; k++)
    if (pe->cover[k / 8] >> (k % 8) & 1) {
      m->vec[b - 1][k] = 1; /* the snapshots, folded */
      in->covered[k] = 1;
    }
  r.u.ready.buf.addr = b;
  r.u.ready.cover_len = (in->n + 7) / 8;
  r.u.ready.cover = (uint8_t *)pe->cover;
  in->cur_buf[pe->member] = b;
  m->last_inst = pe->inst;
  m->last_buf = b;
  m->last_worker = pe->worker;
  m->partials++;
  /* taken, or refused for a member already covered or being recovered: 0 either way */
  assert_int_equal(feed(m->s, pe->worker, &r), 0);
  in->created = 1;
}

/* Member k, covered by a node partial, gives up waiting and sends its own READY (at most
 * once: dred-master takes it, or ignores it when the partial covered k first). */
static void sim_give_up(sim_t *m, int inst, uint32_t k) {
  sim_inst_t *in = &m->in[inst];
  pend_t pe;
  if (in->gave_up[k] || m->dead[in->workers[k]]) return;
  in->gave_up[k] = 1;
  m->giveups++;
  memset(&pe, 0, sizeof pe);
  pe.kind = P_READY;
  pe.inst = inst;
  pe.member = k;
  pe.worker = in->workers[k];
  sim_push(m, pe);
}

/* Follower k's HAVE, with `error`: sent now if its READY went out, else right after it. */
static void sim_have(sim_t *m, int inst, uint32_t k, int32_t error) {
  sim_inst_t *in = &m->in[inst];
  pend_t pe;
  if (in->leader[k] == SIM_NONE || in->follow_state[k] >= 2 || m->dead[in->workers[k]]) return;
  in->have_error[k] = error;
  if (in->follow_state[k] == 0) { /* not arrived yet: its READY sends it */
    in->follow_state[k] = 2;
    return;
  }
  in->follow_state[k] = 3;
  memset(&pe, 0, sizeof pe);
  pe.kind = P_HAVE;
  pe.inst = inst;
  pe.member = k;
  pe.worker = in->workers[k];
  pe.error = error;
  sim_push(m, pe);
}

/* Member j was told OK (or its worker died): its followers copy from it, or cannot. */
static void sim_leader_over(sim_t *m, int inst, uint32_t j, int ok) {
  sim_inst_t *in = &m->in[inst];
  uint32_t k;
  for (k = 0; k < in->n; k++)
    if (in->leader[k] == j)
      sim_have(m, inst, k, ok && rndn(m, 10) != 0 ? 0 : DRED_ERR_PROC_FAILED);
}

/* Worker pe->worker answers a RECOVER of member pe->member, as dred's worker would. */
static void sim_answer(sim_t *m, const pend_t *pe) {
  sim_inst_t *in = &m->in[pe->inst];
  uint32_t k = pe->member, w = pe->worker, own = in->workers[k], root = in->p.u.ready.root;
  int copy, peer = 0, peer_absorbed = 0;
  uint64_t b;
  if (w == own) {
    if (k == root || pe->single) { /* its operand, reloaded (a snap flag means nothing here) */
      int unit = k == root && !pe->single && (int)rndn(m, 2);
      sim_feed_ready(m, pe->inst, k, w, sim_buf(m, pe->inst, (int)k), 1, (int)rndn(m, 2), unit, 0);
      if (!unit) m->split_answers++;
      return;
    }
    /* its snapshot as it stands: its unit; the scheduler must know what it absorbed */
    if (in->snap_last[k] != pe->last || pe->tentative != SIM_NONE) m->mismatches++;
    m->unit_answers++;
    sim_feed_ready(m, pe->inst, k, w, in->snap_buf[k], 1, 1, 1, 0);
    return;
  }
  copy = sim_has_copy(in, k, w);
  if (k != root && m->dead[own] && sim_node_peer(m, in, k, w)) { /* it may read the snapshot */
    uint32_t sl = in->snap_last[k];
    if (pe->single) {
      peer = sl == SIM_NONE; /* only a snapshot that never absorbed is the operand alone */
    } else if (pe->tentative != SIM_NONE && sl == pe->tentative) {
      peer = 1;
      peer_absorbed = 1;
    } else if (sl == pe->last) {
      peer = 1;
    } else {
      m->mismatches++;
    }
  }
  if (peer && (!copy || rndn(m, 2))) {
    b = sim_buf_copy(m, pe->inst, in->snap_buf[k]);
    m->peer_answers++;
    /* whatever snap says (it read a snapshot), only the member's own worker holds one */
    if (pe->single) {
      m->split_answers++;
      sim_feed_ready(m, pe->inst, k, w, b, 1, (int)rndn(m, 2), 0, 0);
    } else {
      m->unit_answers++;
      m->absorbed_answers += (uint32_t)peer_absorbed;
      sim_feed_ready(m, pe->inst, k, w, b, 1, (int)rndn(m, 2), 1, peer_absorbed);
    }
  } else if (copy) {
    m->split_answers++;
    sim_feed_ready(m, pe->inst, k, w, sim_buf(m, pe->inst, (int)k), 1, (int)rndn(m, 2), 0, 0);
  } else {
    m->refusals++;
    assert_int_equal(recfail(m->s, in->key, k, w, DRED_ERR_STORAGE), 0);
  }
}

static void sim_deliver(sim_t *m, pend_t pe) {
  sim_inst_t *in = &m->in[pe.inst];
  uint32_t k;
  if (m->dead[pe.worker]) return; /* a dead worker's message never arrives */
  switch (pe.kind) {
    case P_READY: {
      uint32_t root = in->p.u.ready.root;
      if (in->covered[pe.member]) {
        /* a partial named it first: dred-master ignores this READY (on_ready), so what
         * the member's message holds stays as it is */
        proto_msg_t r = sim_ready_msg(in, pe.member, in->snap_buf[pe.member], 0, 1, 0, 0);
        assert_int_equal(feed(m->s, pe.worker, &r), 0);
      } else if (in->kind == PROTO_KIND_BCAST) { /* no buffer to pair: the root's data follows */
        sim_feed_ready(m, pe.inst, pe.member, pe.worker, in->snap_buf[pe.member], 0, 0, 0, 0);
        if (pe.member == root) {
          pend_t dp;
          memset(&dp, 0, sizeof dp);
          dp.kind = P_DATA;
          dp.inst = pe.inst;
          dp.worker = pe.worker;
          sim_push(m, dp);
        }
      } else if (pe.member == root) /* the root has no snapshot; a snap flag from it means nothing */
        sim_feed_ready(m, pe.inst, pe.member, pe.worker, sim_buf(m, pe.inst, (int)pe.member), 0,
                       (int)rndn(m, 2), 0, 0);
      else
        sim_feed_ready(m, pe.inst, pe.member, pe.worker, in->snap_buf[pe.member], 0, 1, 0, 0);
      if (in->leader[pe.member] != SIM_NONE) { /* a follower arrived: its HAVE may go now */
        int due = in->follow_state[pe.member] == 2;
        in->follow_state[pe.member] = 1;
        if (due) sim_have(m, pe.inst, pe.member, in->have_error[pe.member]);
      }
      break;
    }
    case P_RECOVER:
      sim_answer(m, &pe);
      break;
    case P_HAVE: {
      proto_msg_t h;
      memset(&h, 0, sizeof h);
      h.type = PROTO_HAVE;
      h.u.recover.group = in->key.group;
      h.u.recover.tag = in->key.tag;
      h.u.recover.member = pe.member;
      h.u.recover.error = pe.error;
      assert_int_equal(feed(m->s, pe.worker, &h), 0);
      m->haves++;
      break;
    }
    case P_PARTIAL:
      sim_feed_partial(m, &pe);
      break;
    case P_DATA: { /* the holder's result, in one to three pieces, in order */
      static const uint8_t zeros[PROTO_DATA_MAX];
      uint64_t off = 0;
      while (off < in->bytes) {
        proto_msg_t d;
        uint64_t len = in->bytes - off;
        if (len > PROTO_DATA_MAX) len = PROTO_DATA_MAX;
        if (len > 1 && rndn(m, 2)) len = 1 + rndn(m, (uint32_t)len - 1);
        memset(&d, 0, sizeof d);
        d.type = PROTO_DATA;
        d.u.data.group = in->key.group;
        d.u.data.tag = in->key.tag;
        d.u.data.offset = off;
        d.u.data.total = in->bytes;
        d.u.data.len = (uint32_t)len;
        d.u.data.data = zeros;
        assert_int_equal(feed(m->s, pe.worker, &d), 0);
        off += len;
        sim_drain(m);
      }
      in->data_in = 1;
      break;
    }
    case P_DONE: {
      uint64_t eb = in->cur_buf[pe.em];
      uint32_t r = rndn(m, 100);
      uint64_t addr;
      uint32_t st = PROTO_TASK_OK;
      int absorbed = 0;
      /* a dead provider was read before it died, or not */
      if (m->dead[pe.prov]) st = rndn(m, 2) ? PROTO_TASK_PROVIDER_LOST : PROTO_TASK_OK;
      else if (m->flaky && r < 5) st = PROTO_TASK_PROVIDER_LOST;
      uint64_t exec_ns = 1 + rndn(m, 1000);
      if (st == PROTO_TASK_OK && pe.inplace) { /* into its snapshot, which stays its buffer */
        assert_int_equal(eb, in->snap_buf[pe.em]);
        sim_absorb(m, in, pe.em, pe.pm, pe.pbuf);
        addr = eb;
        absorbed = 1;
        m->inplace++;
      } else if (st == PROTO_TASK_OK) {
        addr = sim_buf(m, pe.inst, -1);
        for (k = 0; k < in->n; k++)
          m->vec[addr - 1][k] = (int16_t)(m->vec[eb - 1][k] + m->vec[pe.pbuf - 1][k]);
      } else { /* PROVIDER_LOST: the executor's buffer is untouched */
        addr = eb;
      }
      in->cur_buf[pe.em] = addr;
      m->last_inst = pe.inst;
      m->last_buf = addr;
      m->last_worker = pe.worker;
      assert_int_equal(done_full(m->s, pe.task_id, pe.worker, st, exec_ns, addr, absorbed), 0);
      break;
    }
  }
}

/* Is member k of `in` still recoverable when worker w is dead too?  Its own worker, or the
 * holder of its copy, or a node peer that can read its snapshot whatever it is asked: a
 * member without a copy is never asked for its operand alone (single = 1 follows only an
 * answer of the operand alone, which only a copy or a single answer gives), and a
 * snapshot that never absorbed anything (and never will: its worker is dead, or it is
 * still there to answer) is the operand alone anyway. */
static int sim_recoverable_without(const sim_t *m, const sim_inst_t *in, uint32_t k, uint32_t w) {
  uint32_t own = in->workers[k], j;
  if (own != w && !m->dead[own]) return 1;
  if (!in->norep[k]) {
    uint32_t rep = in->workers[(k + 1) % in->n];
    if (in->n > 1 && rep != w && !m->dead[rep]) return 1;
    if (in->snap_last[k] != SIM_NONE) return 0;
  }
  if (k == in->p.u.ready.root) return 0;
  for (j = 0; j < in->n; j++) {
    uint32_t pw = in->workers[j];
    if (j != k && pw != w && !m->dead[pw] && sim_node_peer(m, in, k, pw)) return 1;
  }
  return 0;
}

/* May w die without making the run unrecoverable?  Never a root, never every holder of
 * an operand (seed 002: a failure before the remote copy is stored cannot be recovered). */
static int sim_can_kill(const sim_t *m, uint32_t w) {
  int i;
  uint32_t k;
  if (m->dead[w]) return 0;
  for (i = 0; i < m->ninst; i++) {
    const sim_inst_t *in = &m->in[i];
    if (in->journaled) continue;
    /* once dred-master holds an allreduce's or a bcast's whole result, its holder (the
     * root) may die too: the survivors are sent it all the same */
    if (in->data_in) continue;
    if (!in->created || in->workers[in->p.u.ready.root] == w) return 0;
    if (in->kind == PROTO_KIND_BCAST) continue; /* its members bring nothing to lose */
    for (k = 0; k < in->n; k++)
      if (!sim_recoverable_without(m, in, k, w)) return 0;
  }
  return 1;
}

static void sim_kill(sim_t *m) {
  uint32_t tries, w;
  size_t j;
  int i;
  sched_event_t ev;
  for (tries = 0; tries < 8; tries++) {
    /* now and then a worker with something in flight (a task it executes, a RECOVER it
     * was asked): the deaths that exercise the recovery rules */
    w = m->npend > 0 && rndn(m, 100) < m->target_pct ? m->pend[rndn(m, (uint32_t)m->npend)].worker
                                                     : 1 + rndn(m, m->nw);
    if (!sim_can_kill(m, w)) continue;
    m->dead[w] = 1;
    m->kills++;
    for (i = 0; i < m->ninst; i++) /* the holder of a result dred-master holds whole */
      if (!m->in[i].journaled && m->in[i].data_in && m->in[i].workers[m->in[i].p.u.ready.root] == w)
        m->holder_kills++;
    /* its in-place absorptions: finished (a node peer completes one under way) or not
     * begun, at random; their DONEs never arrive */
    for (j = 0; j < m->npend; j++) {
      pend_t *pe = &m->pend[j];
      if (pe->kind != P_DONE || pe->worker != w || !pe->inplace || rndn(m, 2) == 0) continue;
      sim_absorb(m, &m->in[pe->inst], pe->em, pe->pm, pe->pbuf);
      m->killed_inplace++;
    }
    memset(&ev, 0, sizeof ev);
    ev.type = SCHED_EV_WORKER_FAILED;
    ev.worker = w;
    assert_int_equal(sched_feed(m->s, &ev), 0);
    assert_int_equal(sched_worker_alive(m->s, w), 0);
    /* the members its node partials covered see their folder dead and send their own
     * READY (partial.c), whether or not the partial reached dred-master */
    for (i = 0; i < m->ninst; i++) {
      sim_inst_t *in = &m->in[i];
      uint32_t k;
      if (in->journaled) continue;
      for (k = 0; k < in->n; k++) {
        if (in->folder[k] != SIM_NONE && in->folder[k] != k && in->workers[in->folder[k]] == w)
          sim_give_up(m, i, k);
        if (in->workers[k] == w) sim_leader_over(m, i, k, 0); /* its followers' relay failed */
      }
    }
    return;
  }
}

static void sim_add_inst(sim_t *m, uint64_t gid, int64_t tag, uint32_t n, const uint32_t *workers) {
  sim_inst_t *in;
  uint32_t k;
  m->in = realloc(m->in, (size_t)(m->ninst + 1) * sizeof *m->in);
  assert_non_null(m->in);
  in = &m->in[m->ninst];
  memset(in, 0, sizeof *in);
  in->key = K(gid, tag);
  in->n = n;
  memcpy(in->workers, workers, n * sizeof *workers);
  in->kind = m->kinds ? (uint8_t)(rndn(m, 10) < 5 ? PROTO_KIND_REDUCE
                                  : rndn(m, 5) < 3 ? PROTO_KIND_ALLREDUCE : PROTO_KIND_BCAST)
                      : PROTO_KIND_REDUCE;
  in->p = prm(in->kind == PROTO_KIND_ALLREDUCE ? 0 : rndn(m, n), (int)rndn(m, 2));
  in->p.u.ready.kind = in->kind;
  in->p.u.ready.count = 1 + rndn(m, 1000);
  in->p.u.ready.extent = in->p.u.ready.type_size = rndn(m, 2) ? 4 : 8;
  in->bytes = (uint64_t)in->p.u.ready.count * in->p.u.ready.extent;
  in->p.u.ready.op = 1 + (int32_t)rndn(m, 5);
  for (k = 0; k < n; k++) {
    uint32_t b = 1 + rndn(m, m->nw);
    in->norep[k] = k != in->p.u.ready.root && rndn(m, 100) < m->norep_pct;
    in->bogus[k] = sim_has_copy(in, k, b) ? 0 : b;
    in->snap_last[k] = SIM_NONE;
  }
  assert_int_equal(sched_group_define(m->s, gid, n, workers), 0);
  m->ninst++;
}

/* Instance i's arrivals: where its group spans nodes, each node other than the root's may
 * hold a node partial of some of its non-root members (one folder, drawn, sends it; a
 * non-commutative op folds only a run of consecutive members, else the slot spills); every
 * other member sends its own READY.  A covered member gives up now and then as well. */
static void sim_arrivals(sim_t *m, int i) {
  sim_inst_t *in = &m->in[i];
  uint32_t root = in->p.u.ready.root, rnode = m->node[in->workers[root]], k, j;
  uint8_t node_done[SIM_MAXW + 1], leads[SIM_MAXN];
  pend_t pe;
  memset(node_done, 0, sizeof node_done);
  for (k = 0; k < in->n; k++) in->folder[k] = in->leader[k] = SIM_NONE;
  /* an allreduce's relay followers: a member other than 0, now and then, copies the result
   * from a node peer that follows nobody (relay.c's leader: the node's first arrival) */
  memset(leads, 0, sizeof leads);
  for (k = 1; k < in->n && in->kind == PROTO_KIND_ALLREDUCE; k++) {
    uint32_t cand[SIM_MAXN], nc = 0;
    if (leads[k] || rndn(m, 3) != 0) continue;
    for (j = 0; j < in->n; j++)
      if (j != k && in->leader[j] == SIM_NONE && m->node[in->workers[j]] == m->node[in->workers[k]])
        cand[nc++] = j;
    if (nc == 0) continue;
    in->leader[k] = cand[rndn(m, nc)];
    leads[in->leader[k]] = 1;
  }
  for (k = 0; k < in->n && in->kind == PROTO_KIND_REDUCE; k++) {
    uint32_t nd = m->node[in->workers[k]], S[SIM_MAXN], ns = 0;
    if (k == root || nd == rnode || node_done[nd]) continue;
    node_done[nd] = 1;
    if (rndn(m, 4) == 0) continue; /* this node's slot spilled: no partial */
    for (j = k; j < in->n; j++) /* who stays in the slot: most of the node's members */
      if (j != root && m->node[in->workers[j]] == nd && rndn(m, 4) != 0) S[ns++] = j;
    if (ns < 2 || (!in->p.u.ready.commutative && S[ns - 1] - S[0] + 1 != ns)) continue;
    memset(&pe, 0, sizeof pe);
    pe.kind = P_PARTIAL;
    pe.inst = i;
    pe.member = S[rndn(m, ns)];
    pe.worker = in->workers[pe.member];
    for (j = 0; j < ns; j++) {
      pe.cover[S[j] / 8] |= (uint8_t)(1u << (S[j] % 8));
      in->folder[S[j]] = pe.member;
    }
    in->saved += ns - 1;
    m->partial_members += ns;
    sim_push(m, pe);
  }
  for (k = 0; k < in->n; k++) {
    if (in->folder[k] != SIM_NONE) {
      if (in->folder[k] != k && rndn(m, 8) == 0) sim_give_up(m, i, k);
      continue;
    }
    memset(&pe, 0, sizeof pe);
    pe.kind = P_READY;
    pe.inst = i;
    pe.member = k;
    pe.worker = in->workers[k];
    sim_push(m, pe);
  }
}

/* Deliver pending messages in random order until none is left, killing workers at random
 * once every instance exists.  Then every instance must have ended OK with each operand
 * counted once and each live member told exactly once. */
static void sim_run(sim_t *m, int kill_permille) {
  int i;
  uint32_t k;
  pend_t pe;
  for (i = 0; i < m->ninst; i++) { /* every member calls; READYs travel in any order */
    for (k = 0; k < m->in[i].n; k++)
      if (k != m->in[i].p.u.ready.root) m->in[i].snap_buf[k] = sim_buf(m, i, (int)k);
    sim_arrivals(m, i);
  }
  while (m->npend > 0) {
    size_t j = rndn(m, (uint32_t)m->npend);
    int all_created = 1;
    for (i = 0; i < m->ninst; i++) all_created &= m->in[i].created;
    if (all_created && m->kills < m->max_kills && (int)rndn(m, 1000) < kill_permille) {
      sim_kill(m);
      sim_drain(m);
    }
    pe = m->pend[j];
    m->pend[j] = m->pend[--m->npend];
    sim_deliver(m, pe);
    sim_drain(m);
  }
  assert_int_equal(sched_instances(m->s), 0);
  assert_int_equal(sched_tasks_in_flight(m->s), 0);
  assert_int_equal(m->mismatches, 0); /* no answer found a snapshot the scheduler did not expect */
  for (i = 0; i < m->ninst; i++) {
    sim_inst_t *in = &m->in[i];
    assert_int_equal(in->journaled, 1);
    assert_int_equal(in->status, DRED_OK);
    assert_int_equal(in->jrec, in->recovered_fed);
    if (in->kind != PROTO_KIND_BCAST) assert_true(in->jtasks + in->saved >= in->n - 1);
  }
}

static void sim_free(sim_t *m) {
  size_t b;
  for (b = 0; b < m->nbuf; b++) free(m->vec[b]);
  free(m->vec);
  free(m->pend);
  free(m->in);
  sched_free(m->s);
}

/* 64 instances on 16 groups x 4 tags, their events interleaved at random: each completes
 * on its own with n-1 tasks and its ENDs in member order (every worker on one node, so
 * many tasks absorb in place). */
static void test_isolation_64_instances(void **state) {
  sim_t m;
  uint32_t gi, t, k;
  int i;
  memset(&m, 0, sizeof m);
  m.rng = 0x9e3779b97f4a7c15ULL;
  m.nw = 16;
  m.s = sched_new(m.nw, SCHED_POLICY_PREDICT);
  for (gi = 0; gi < 16; gi++) {
    uint32_t n = 2 + gi % 9, w[16];
    for (k = 0; k < n; k++) w[k] = 1 + (gi + 3 * k) % 16; /* distinct: 3 is prime to 16 */
    for (t = 0; t < 4; t++) sim_add_inst(&m, 500 + gi, (int64_t)t - 2, n, w);
  }
  sim_run(&m, 0);
  for (i = 0; i < m.ninst; i++) {
    sim_inst_t *in = &m.in[i];
    assert_int_equal(in->jtasks, in->n - 1);
    assert_int_equal(in->jrec, 0);
    assert_int_equal(in->nend, in->n);
    for (k = 0; k < in->n; k++) assert_int_equal(in->end_order[k], in->workers[k]);
  }
  for (i = 0, t = 0; i < m.ninst; i++) t += m.in[i].n - 1;
  assert_int_equal(m.tasks_seen, t); /* no task beyond the n-1 each instance needs */
  assert_true(m.inplace > 0);
  sim_free(&m);
}

/* How a batch of random rounds is drawn. */
typedef struct {
  uint32_t rounds, min_instances; /* at least this many rounds and instances */
  int kill_permille;              /* chance of a death before each delivery */
  uint32_t max_kills;             /* deaths per round: 0 .. max_kills - 1 */
  uint32_t max_nodes;             /* workers on 1 .. max_nodes nodes */
  uint32_t norep_rounds;          /* one round in norep_rounds has members without a copy */
  uint32_t target_pct;
  uint32_t big_every;             /* every big_every-th round has 65..124 workers */
  int kinds;                      /* allreduces and bcasts among the reduces */
} sim_cfg_t;

/* Run the rounds of `cfg` from `seed`; *sum adds up their counters (kills in sum->kills,
 * operands recovered in sum->tasks_seen).  Returns the number of instances. */
static uint32_t sim_rounds(const sim_cfg_t *cfg, uint64_t seed, sim_t *sum) {
  uint32_t round, total = 0;
  for (round = 0; total < cfg->min_instances || round < cfg->rounds; round++) {
    sim_t m;
    uint32_t ninst, i, k, perm[SIM_MAXW], nnodes, w;
    memset(&m, 0, sizeof m);
    m.rng = seed * 0x9e3779b97f4a7c15ULL + round + 1;
    m.nw = round % cfg->big_every == cfg->big_every - 1 ? 65 + rndn(&m, 60) : 2 + rndn(&m, 11);
    m.s = sched_new(m.nw, (sched_policy_t)rndn(&m, 3));
    m.flaky = (int)rndn(&m, 2);
    m.kinds = cfg->kinds;
    m.max_kills = rndn(&m, cfg->max_kills);
    m.norep_pct = rndn(&m, cfg->norep_rounds) == 0 ? 50 : 0;
    m.target_pct = cfg->target_pct;
    nnodes = 1 + rndn(&m, cfg->max_nodes);
    for (w = 1; w <= m.nw; w++) {
      m.node[w] = rndn(&m, nnodes);
      assert_int_equal(sched_set_node(m.s, w, m.node[w]), 0);
    }
    ninst = 1 + rndn(&m, 4);
    for (i = 0; i < ninst; i++) {
      uint32_t n = 1 + rndn(&m, m.nw);
      for (k = 0; k < m.nw; k++) perm[k] = k + 1;
      for (k = m.nw - 1; k > 0; k--) { /* Fisher-Yates */
        uint32_t j = rndn(&m, k + 1), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
      }
      sim_add_inst(&m, 1000 + i, (int64_t)rndn(&m, 3), n, perm);
    }
    sim_run(&m, cfg->kill_permille);
    total += ninst;
    sum->kills += m.kills;
    for (i = 0; i < ninst; i++) sum->tasks_seen += m.in[i].jrec;
    sum->absorb_tasks += m.absorb_tasks;
    sum->inplace += m.inplace;
    sum->killed_inplace += m.killed_inplace;
    sum->unit_answers += m.unit_answers;
    sum->absorbed_answers += m.absorbed_answers;
    sum->split_answers += m.split_answers;
    sum->single_asks += m.single_asks;
    sum->peer_answers += m.peer_answers;
    sum->refusals += m.refusals;
    sum->partials += m.partials;
    sum->partial_members += m.partial_members;
    sum->giveups += m.giveups;
    sum->pushes += m.pushes;
    sum->datas += m.datas;
    sum->haves += m.haves;
    sum->holder_kills += m.holder_kills;
    sim_free(&m);
  }
  return total;
}

static uint64_t sim_seed(void) {
  const char *env = getenv("SCHED_TEST_SEED");
  return env ? strtoull(env, NULL, 0) : 20240601ULL;
}

/* A path the rounds must have exercised.  The default seed is known to exercise every one,
 * so there a miss fails the test (a change made the path unreachable); another seed may
 * miss a rare one by chance (single asks: none in 1 seed of 3,400), which is said, not
 * failed -- its correctness checks are the ones that matter. */
#define sim_expect(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      if (getenv("SCHED_TEST_SEED") == NULL) fail_msg("not exercised: %s", #cond);        \
      print_message("seed %llu did not exercise: %s\n", (unsigned long long)sim_seed(), #cond); \
    }                                                                                     \
  } while (0)

static void sim_report(const char *name, uint64_t seed, uint32_t total, const sim_t *sum) {
  print_message("%s: seed %llu, %u instances, %u worker deaths, %u operands recovered\n", name,
                (unsigned long long)seed, total, sum->kills, sum->tasks_seen);
  print_message("%s: %u absorbing tasks, %u in place, %u killed in place; answers: %u unit, "
                "%u absorbed, %u operand alone, %u from node peers; %u single asked, %u refused\n",
                name, sum->absorb_tasks, sum->inplace, sum->killed_inplace, sum->unit_answers,
                sum->absorbed_answers, sum->split_answers, sum->peer_answers, sum->single_asks,
                sum->refusals);
  print_message("%s: %u node partials sent, covering %u members; %u covered members gave up\n",
                name, sum->partials, sum->partial_members, sum->giveups);
  if (sum->pushes > 0 || sum->datas > 0)
    print_message("%s: %u allreduce results pushed, %u DATA pieces sent, %u relay HAVEs, "
                  "%u holders killed after\n", name, sum->pushes, sum->datas, sum->haves,
                  sum->holder_kills);
}

/* Run `cfg`'s rounds from SCHED_TEST_SEED's seed and print what they exercised; *sum gets
 * their counters.  Returns the number of instances. */
static uint32_t sim_batch(const char *name, const sim_cfg_t *cfg, sim_t *sum) {
  uint64_t seed = sim_seed();
  uint32_t total;
  memset(sum, 0, sizeof *sum);
  total = sim_rounds(cfg, seed, sum);
  sim_report(name, seed, total, sum);
  return total;
}

/* Random rounds of 1..4 concurrent instances (some of more than 64 members), workers on
 * 1..3 nodes, random arrival and completion order, random in-place absorption, random
 * worker deaths and flaky reads, some members without a copy (their snapshot is all
 * that is left when their worker dies): every instance must end OK with every operand
 * counted exactly once.  SCHED_TEST_SEED=n picks another seed. */
static void test_random_with_failures(void **state) {
  const sim_cfg_t cfg = {150, 200, 30, 4, 3, 3, 50, 10, 0};
  sim_t sum;
  uint32_t total = sim_batch("random", &cfg, &sum);
  sim_expect(total >= 200);
  sim_expect(sum.kills > 0);
  sim_expect(sum.tasks_seen > 0);
  sim_expect(sum.inplace > 0 && sum.unit_answers > 0 && sum.peer_answers > 0);
}

/* The same simulator aimed at absorption: small groups on one or two nodes (so most tasks
 * may absorb), many deaths, most of them of a worker with a task or a RECOVER in flight,
 * and members without a copy in half the rounds.  Every rule must have been exercised:
 * executors killed in the middle of an in-place absorption, node peers finishing one
 * (absorbed = 1), units split by an answer of the operand alone and, after that, RECOVERs
 * asking for the operand alone (single = 1). */
static void test_random_absorption(void **state) {
  const sim_cfg_t cfg = {1500, 1500, 200, 12, 2, 2, 80, 1000000, 0};
  sim_t sum;
  (void)sim_batch("absorption", &cfg, &sum);
  sim_expect(sum.inplace > 0 && sum.killed_inplace > 0 && sum.absorbed_answers > 0);
  sim_expect(sum.unit_answers > 0 && sum.split_answers > 0 && sum.peer_answers > 0);
  sim_expect(sum.single_asks > 0);
}

/* The same simulator aimed at node partials: groups spread over 2..5 nodes, so that most
 * nodes other than the root's send a partial, many deaths (a folder among them, with its
 * covered members giving up), members without a copy in half the rounds.  A partial must
 * never count a member twice -- taken, refused for a member already arrived or being
 * recovered, or lost with its folder -- and every instance must end OK. */
static void test_random_partials(void **state) {
  const sim_cfg_t cfg = {800, 800, 150, 8, 5, 2, 70, 1000000, 0};
  sim_t sum;
  (void)sim_batch("partials", &cfg, &sum);
  sim_expect(sum.partials > 0 && sum.giveups > 0 && sum.kills > 0);
}

/* Reduces, allreduces and bcasts together (about half, three tenths and a fifth), with
 * the deaths, absorptions and partials of the rounds above: an allreduce's result at its
 * PUSH holds every operand once, and every member it ends for was sent the whole result
 * first; a bcast ends for every survivor after its data. */
static void test_random_kinds(void **state) {
  const sim_cfg_t cfg = {800, 800, 100, 6, 4, 3, 60, 10, 1};
  sim_t sum;
  (void)sim_batch("kinds", &cfg, &sum);
  sim_expect(sum.kills > 0 && sum.tasks_seen > 0 && sum.partials > 0);
  sim_expect(sum.pushes > 0 && sum.datas > sum.pushes && sum.haves > 0);
  sim_expect(sum.holder_kills > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_isolation_64_instances),
      cmocka_unit_test(test_random_with_failures),
      cmocka_unit_test(test_random_absorption),
      cmocka_unit_test(test_random_partials),
      cmocka_unit_test(test_random_kinds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
