/*
 * sched_bench.c -- microbenchmark of the scheduler state machine (master/sched/sched.c): events
 * per second through sched_feed() and actions per second out of sched_next_action().
 *
 * No MPI: a small simulator plays P workers.  Each configuration (P workers, C concurrent
 * instances) defines one group of all P workers (member k on worker k+1) and runs N full
 * reductions in batches of C instances (tags 0, 1, 2, ...; root = tag mod P).  A batch puts
 * the P READY events of each of its C instances into a pool of pending events; the
 * simulator takes them out in random order, feeds each one, drains every action after it
 * and answers each TASK with a TASK_DONE that joins the pool (so READYs and DONEs of many
 * instances interleave, as in the master).  Executors report exec_ns from a per-worker
 * speed (four speed classes), so the executor choice has measurements to work with.
 *
 * Checks: every instance ends DRED_OK, with P-1 TASK and P-1 JOURNAL_TASK actions, P END
 * actions and one JOURNAL_REDUCTION (tasks = P-1, status OK); the scheduler is empty at the
 * end.  Any failure prints why and exits 1.
 *
 * Time (CLOCK_MONOTONIC) covers the whole loop, simulator included (a random pick and an
 * array push per event), so ns/event is an upper bound on the scheduler's own cost.  Each
 * configuration runs --reps times; the table shows the median run.
 *
 * The second table is the master's cost per reduction at scale, 64 nodes x 64 ranks
 * (the node engine's shape): "ranks" is today's shape, every rank a member of a 4096-member group
 * with its workers on 64 nodes (sched_set_node, so master/sched/sched_nodes.c pairs within each
 * node first), 4096 READYs and 4095 DONEs per reduction; "node partials" is the same
 * group with each node's ranks combined in shared memory before the master hears of it:
 * one READY per node whose cover names the node's 64 members (the root's node: held by
 * the root; any other: by its first member), so 64 READYs and 63 DONEs per reduction,
 * and still an END to each of the 4096 members.  "ranks" copies each operand to a worker
 * on the next node, as replica placement does.  The table gives
 * events and microseconds per reduction, with 1 and 16 reductions in flight: wall clock,
 * and this thread's CPU time, which a machine busy with other work stretches less.
 *
 *   dred-sched-bench [--quick] [--events N] [--reps R] [--policy predict|last|first]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../master/sched/sched.h"

#define GROUP_ID 0x5eedULL
#define ELEM_BYTES 8u
#define COUNT (1u << 17) /* 1 MiB of doubles per member */

/* A pending event: READY of (slot, member) -- a node partial when per-node covers are in
 * use -- or DONE of a task. */
typedef struct {
  uint8_t is_done;
  uint32_t slot;    /* READY: batch slot of the instance  */
  uint32_t member;  /* READY: group rank                  */
  uint64_t task_id; /* DONE                                */
  uint32_t worker;  /* DONE: the executor                  */
} pending_t;

/* Per-instance bookkeeping of one batch. */
typedef struct {
  uint32_t tasks, jtasks, ends, jreds;
  int32_t end_status, jred_status;
  uint32_t jred_tasks;
} inst_check_t;

typedef struct {
  uint64_t events, actions, reductions, tasks;
  double seconds, cpu_seconds; /* wall clock; this thread's CPU time */
  int failed;
} result_t;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* This thread's CPU time: the cost itself, where a busy machine stretches the wall clock. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Simulated run time of one combine of COUNT elements on worker w: 4 speed classes. */
static uint64_t exec_ns_of(uint32_t w) { return 100000u * (1u + w % 4u); }

static int fail(result_t *r, const char *what, long long a, long long b) {
  if (!r->failed) fprintf(stderr, "sched-bench: FAILED: %s (%lld, %lld)\n", what, a, b);
  r->failed = 1;
  return -1;
}

/* Drain every pending action; TASKs become pending DONEs. */
static int drain(sched_t *s, pending_t *pool, size_t *npool, inst_check_t *chk, int64_t base,
                 uint32_t nslots, result_t *r) {
  sched_action_t a;
  while (sched_next_action(s, &a)) {
    int64_t slot = a.key.tag - base;
    inst_check_t *c;
    r->actions++;
    if (a.type == SCHED_ACT_SEND && a.msg.type == PROTO_FAILED) continue; /* no instance's */
    if (a.key.group != GROUP_ID || slot < 0 || slot >= (int64_t)nslots)
      return fail(r, "action for an unknown instance", (long long)a.key.tag, (long long)a.type);
    c = &chk[slot];
    /* a SEND by its message type (positive), a journal record by its own (negative) */
    switch (a.type == SCHED_ACT_SEND ? (int)a.msg.type : -(int)a.type) {
      case PROTO_TASK: {
        pending_t *p = &pool[(*npool)++];
        p->is_done = 1;
        p->task_id = a.msg.u.task.task_id;
        p->worker = a.worker;
        c->tasks++;
        break;
      }
      case PROTO_END:
        c->ends++;
        if (a.msg.u.end.status != DRED_OK) c->end_status = a.msg.u.end.status;
        break;
      case -SCHED_ACT_JOURNAL_TASK:
        c->jtasks++;
        break;
      case -SCHED_ACT_JOURNAL_REDUCTION:
        c->jreds++;
        c->jred_status = a.u.jred.status;
        c->jred_tasks = a.u.jred.tasks;
        break;
      default: /* RECOVER, INLINE: nothing here fails or is inline */
        return fail(r, "unexpected action type", (long long)a.key.tag, (long long)a.type);
    }
  }
  return 0;
}

/* One configuration: P workers, C instances at a time, N reductions (a multiple of C).
 * per_node > 0: worker w on node (w-1) / per_node, and each operand's copy on the worker
 * per_node further on (the next node); 0: every worker on one node, the copy on the next
 * worker.  partials: each node sends one READY covering its per_node members. */
static result_t run(uint32_t P, uint32_t C, uint64_t N, sched_policy_t policy,
                    uint32_t per_node, int partials) {
  result_t r;
  sched_t *s = sched_new(P, policy);
  uint32_t *workers = malloc((size_t)P * sizeof *workers);
  pending_t *pool = malloc((size_t)C * P * 2 * sizeof *pool); /* READYs + tasks in flight */
  inst_check_t *chk = malloc((size_t)C * sizeof *chk);
  uint32_t nodes = partials ? P / per_node : P, senders = nodes; /* READYs per reduction */
  uint8_t *cover = partials ? calloc(nodes, (P + 7) / 8) : NULL; /* node i's at i x (P+7)/8 */
  sched_event_t ev;
  uint64_t now = 0, done_red = 0;
  double t0, c0;
  uint32_t k;

  memset(&r, 0, sizeof r);
  if (s == NULL || workers == NULL || pool == NULL || chk == NULL || (partials && cover == NULL)) {
    fail(&r, "out of memory", P, C);
    goto out;
  }
  memset(&ev, 0, sizeof ev);
  for (k = 0; k < P; k++) workers[k] = k + 1;
  for (k = 0; partials && k < P; k++)
    cover[(size_t)(k / per_node) * ((P + 7) / 8) + k / 8] |= (uint8_t)(1u << (k % 8));
  for (k = 0; per_node > 0 && k < P; k++)
    if (sched_set_node(s, k + 1, k / per_node) != 0) {
      fail(&r, "node assignment refused", k + 1, k / per_node);
      goto out;
    }

  t0 = now_s();
  c0 = cpu_s();
  if (sched_group_define(s, GROUP_ID, P, workers) != 0) {
    fail(&r, "group definition refused", P, 0);
    goto out;
  }
  while (done_red < N && !r.failed) {
    int64_t base = (int64_t)done_red;
    size_t npool = 0;
    uint32_t i;
    memset(chk, 0, (size_t)C * sizeof *chk);
    for (i = 0; i < C; i++)
      for (k = 0; k < senders; k++) {
        pending_t *p = &pool[npool++];
        uint32_t root = (uint32_t)((base + i) % P);
        p->is_done = 0;
        p->slot = i;
        /* a partial is held by the root on its node, else by the node's first member */
        p->member = !partials ? k : root / per_node == k ? root : k * per_node;
      }
    while (npool > 0) {
      size_t pick = (size_t)(rng() % npool);
      pending_t p = pool[pick];
      int rc;
      pool[pick] = pool[--npool];
      memset(&ev, 0, sizeof ev);
      ev.now_ns = (now += 1000);
      ev.type = SCHED_EV_MESSAGE; /* the decoded message, as the master passes it */
      if (p.is_done) {
        ev.worker = p.worker;
        ev.msg.type = PROTO_DONE;
        ev.msg.u.done.task_id = p.task_id;
        ev.msg.u.done.status = PROTO_TASK_OK;
        ev.msg.u.done.exec_ns = exec_ns_of(p.worker);
        ev.msg.u.done.buf.addr = 0x10000u * p.worker;
        ev.msg.u.done.buf.pool_off = -1;
      } else {
        int64_t tag = base + p.slot;
        ev.worker = p.member + 1;
        ev.msg.type = PROTO_READY;
        ev.msg.u.ready.group = GROUP_ID;
        ev.msg.u.ready.tag = tag;
        ev.msg.u.ready.member = p.member;
        ev.msg.u.ready.count = COUNT;
        ev.msg.u.ready.type_size = ELEM_BYTES;
        ev.msg.u.ready.extent = ELEM_BYTES;
        ev.msg.u.ready.op = 3;
        ev.msg.u.ready.commutative = 1;
        ev.msg.u.ready.root = (uint32_t)(tag % P);
        ev.msg.u.ready.buf.addr = 0x10000u * (p.member + 1);
        ev.msg.u.ready.buf.pool_off = (int64_t)p.member * COUNT * ELEM_BYTES;
        if (partials) { /* the node's members' copies lie where placement put them */
          ev.msg.u.ready.cover_len = (P + 7) / 8;
          ev.msg.u.ready.cover = cover + (size_t)(p.member / per_node) * ((P + 7) / 8);
        } else {
          ev.msg.u.ready.nreplicas = 1;
          ev.msg.u.ready.replicas[0] = (p.member + (per_node ? per_node : 1)) % P + 1;
        }
      }
      r.events++;
      if ((rc = sched_feed(s, &ev)) != 0) {
        fail(&r, "sched_feed refused an event", (long long)ev.msg.type, rc);
        break;
      }
      if (drain(s, pool, &npool, chk, base, C, &r) != 0) break;
    }
    if (r.failed) break;
    for (i = 0; i < C; i++) {
      const inst_check_t *c = &chk[i];
      if (c->tasks != senders - 1 || c->jtasks != senders - 1)
        fail(&r, "tasks per reduction != READYs - 1", c->tasks, c->jtasks);
      else if (c->ends != P || c->end_status != DRED_OK)
        fail(&r, "END count or status", c->ends, c->end_status);
      else if (c->jreds != 1 || c->jred_status != DRED_OK || c->jred_tasks != senders - 1)
        fail(&r, "JOURNAL_REDUCTION count, status or tasks", c->jreds, c->jred_status);
      r.tasks += c->tasks;
    }
    done_red += C;
  }
  r.seconds = now_s() - t0;
  r.cpu_seconds = cpu_s() - c0;
  r.reductions = done_red;
  if (!r.failed && (sched_instances(s) != 0 || sched_tasks_in_flight(s) != 0))
    fail(&r, "scheduler not empty at the end", (long long)sched_instances(s),
         (long long)sched_tasks_in_flight(s));
  if (!r.failed && r.tasks != r.reductions * (senders - 1))
    fail(&r, "total tasks != reductions * (READYs - 1)", (long long)r.tasks,
         (long long)r.reductions);
out:
  sched_free(s);
  free(cover);
  free(workers);
  free(pool);
  free(chk);
  return r;
}

static int cmp_result(const void *a, const void *b) {
  double x = ((const result_t *)a)->seconds, y = ((const result_t *)b)->seconds;
  return (x > y) - (x < y);
}

/* The median of `reps` runs of one configuration, about `target` events each. */
static result_t median_run(uint32_t P, uint32_t C, uint64_t target, int reps,
                           sched_policy_t policy, uint32_t per_node, int partials, int *bad) {
  uint64_t per_red = 2ull * (partials ? P / per_node : P) - 1,
           batches = (target / per_red + C - 1) / C;
  result_t res[99];
  int rep;
  if (batches == 0) batches = 1;
  for (rep = 0; rep < reps; rep++) {
    res[rep] = run(P, C, batches * C, policy, per_node, partials);
    if (res[rep].failed) *bad = 1;
  }
  qsort(res, (size_t)reps, sizeof *res, cmp_result);
  return res[reps / 2];
}

/* The master's cost per reduction at 64 nodes x 64 ranks, today and with node partials
 * (see the opening comment).  Returns 1 if a run failed its checks. */
static int scale_table(uint64_t target, int reps, sched_policy_t policy) {
  static const struct {
    const char *shape;
    uint32_t P, per_node;
    int partials;
  } shapes[] = {{"ranks", 64 * 64, 64, 0}, {"node partials", 64 * 64, 64, 1}};
  static const uint32_t Cs[] = {1, 16};
  size_t si, ci;
  int bad = 0;
  printf("\nmaster's cost per reduction at 64 nodes x 64 ranks (4096 ranks):\n");
  printf("%-14s %7s %3s %10s %10s %11s %10s %10s %9s\n", "shape", "members", "C", "reductions",
         "events/red", "actions/red", "us/red", "cpu us/red", "ns/event");
  for (si = 0; si < sizeof shapes / sizeof *shapes; si++)
    for (ci = 0; ci < sizeof Cs / sizeof *Cs; ci++) {
      int row_bad = 0;
      result_t m = median_run(shapes[si].P, Cs[ci], target, reps, policy, shapes[si].per_node,
                              shapes[si].partials, &row_bad);
      double red = (double)m.reductions;
      printf("%-14s %7u %3u %10llu %10.0f %11.0f %10.1f %10.1f %9.1f%s\n", shapes[si].shape,
             shapes[si].P, Cs[ci], (unsigned long long)m.reductions, (double)m.events / red,
             (double)m.actions / red, 1e6 * m.seconds / red, 1e6 * m.cpu_seconds / red,
             1e9 * m.seconds / (double)m.events, row_bad ? "  FAILED" : "");
      fflush(stdout);
      bad |= row_bad;
    }
  return bad;
}

int main(int argc, char **argv) {
  static const uint32_t Ps[] = {8, 64, 512}, Cs[] = {1, 16, 256};
  uint64_t target = 2000000; /* events per configuration and repetition */
  int reps = 3, i, bad = 0;
  sched_policy_t policy = SCHED_POLICY_PREDICT;
  const char *policy_name = "predict";
  size_t pi, ci;

  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      target = 500000;
      reps = 1;
    } else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc) {
      target = strtoull(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc) {
      policy_name = argv[++i];
      if (strcmp(policy_name, "predict") == 0)
        policy = SCHED_POLICY_PREDICT;
      else if (strcmp(policy_name, "last") == 0)
        policy = SCHED_POLICY_LAST_TIME;
      else if (strcmp(policy_name, "first") == 0)
        policy = SCHED_POLICY_FIRST;
      else
        goto usage;
    } else {
      goto usage;
    }
  }
  if (reps < 1 || reps > 99 || target < 1) goto usage;

  printf("scheduler microbenchmark: policy %s, ~%llu events per configuration, median of %d "
         "run%s\n",
         policy_name, (unsigned long long)target, reps, reps == 1 ? "" : "s");
  printf("%5s %5s %11s %11s %11s %9s %12s %12s %9s\n", "P", "C", "reductions", "events",
         "actions", "time ms", "events/s", "actions/s", "ns/event");
  for (pi = 0; pi < sizeof Ps / sizeof *Ps; pi++) {
    for (ci = 0; ci < sizeof Cs / sizeof *Cs; ci++) {
      uint32_t P = Ps[pi], C = Cs[ci];
      int row_bad = 0;
      result_t m = median_run(P, C, target, reps, policy, 0, 0, &row_bad);
      bad |= row_bad;
      printf("%5u %5u %11llu %11llu %11llu %9.1f %12.0f %12.0f %9.1f%s\n", P, C,
             (unsigned long long)m.reductions, (unsigned long long)m.events,
             (unsigned long long)m.actions, 1e3 * m.seconds, (double)m.events / m.seconds,
             (double)m.actions / m.seconds, 1e9 * m.seconds / (double)m.events,
             row_bad ? "  FAILED" : "");
      fflush(stdout);
    }
  }
  bad |= scale_table(target, reps, policy);
  if (bad) {
    printf("sched-bench: FAILED (see stderr)\n");
    return 1;
  }
  printf("sched-bench: ok (every instance ended OK with READYs - 1 tasks)\n");
  return 0;
usage:
  fprintf(stderr, "usage: %s [--quick] [--events N] [--reps R] [--policy predict|last|first]\n",
          argv[0]);
  return 2;
}
