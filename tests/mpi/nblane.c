/*
 * nblane.c -- small nonblocking collectives in the meeting place's fast lane
 * (lib/shm/meet.h, "Nonblocking calls"; lib/paths/lanepath.c).
 *
 *   dredrun -n P mpi_nblane [--nb-off RANK] [-s SEED]
 *
 * A small auto-tagged dred_ireduce / dred_iallreduce of a one-node group posts its operand
 * in the lane and returns; its member's wait takes the outcome from the posts.  Nobody may
 * ever wait for a posted member's thread: when some member goes the slot's way instead, the
 * one that opens the slot records the posts there.  --nb-off RANK turns the lane off
 * (DRED_MEET_FAST_NB=0, set before dred_init) in the process of dred_comm() rank RANK, so
 * that its calls arrive in the slot during the call, after the others posted.  Sections, on
 * dred_comm() and on a reversed split of it:
 *   sleepers  8 rounds: every member but one (the lane-off member, else one in turn) posts,
 *             a barrier, then that one calls and waits while the others sleep 300 ms before
 *             waiting: it must have its exact result within 200 ms;
 *   inflight  40 nonblocking calls in flight (more than the ring's 16 slots), allreduce and
 *             reduce by turns, waited in an order of each member's own;
 *   mixed     the same collectives called blocking on some members and nonblocking on the
 *             others, by turns;
 *   freed     every third call's future freed before it completes, on some members; the
 *             others' results exact, and later calls too.
 * Every result is compared exactly with the sum of the members' integer-valued operands.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dred.h"
#include "mpitest.h"

enum { MAXC = 8 };

/* member r's operand of collective i: small integers, exact in any order */
static double val(int r, int i, int k) { return (double)((r * 7 + i * 3 + k) % 1000); }

static double sum_of(int p, int i, int k) {
    double s = 0;
    for (int r = 0; r < p; r++) s += val(r, i, k);
    return s;
}

typedef struct {
    double sb[MAXC], rb[MAXC];
    int i, count, root; /* root < 0: an allreduce */
    dred_future *f;
} coll_t;

static int coll_start(coll_t *c, MPI_Comm comm, int i, int root, int blocking) {
    int r, st;
    MPI_Comm_rank(comm, &r);
    c->i = i;
    c->count = 1 + i % MAXC;
    c->root = root;
    c->f = NULL;
    for (int k = 0; k < c->count; k++) c->sb[k] = val(r, i, k), c->rb[k] = -1;
    if (blocking)
        return root < 0 ? dred_allreduce(c->sb, c->rb, c->count, MPI_DOUBLE, MPI_SUM, comm)
                        : dred_reduce(c->sb, c->rb, c->count, MPI_DOUBLE, MPI_SUM, root, comm);
    st = root < 0 ? dred_iallreduce(c->sb, c->rb, c->count, MPI_DOUBLE, MPI_SUM, comm, DRED_TAG_AUTO, &c->f)
                  : dred_ireduce(c->sb, c->rb, c->count, MPI_DOUBLE, MPI_SUM, root, comm, DRED_TAG_AUTO, &c->f);
    return st;
}

/* The result of c, finished with status st: exact where it is defined. */
static void coll_check(const coll_t *c, MPI_Comm comm, int st, const char *what) {
    int r, p, bad = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    if (st != DRED_OK) {
        fail("%s: collective %d: status %d (%s)", what, c->i, st, dred_strerror(st));
        return;
    }
    if (c->root < 0 || c->root == r)
        for (int k = 0; k < c->count; k++) bad |= c->rb[k] != sum_of(p, c->i, k);
    if (bad) fail("%s: collective %d (%s, %d doubles): wrong result", what, c->i,
                  c->root < 0 ? "allreduce" : "reduce", c->count);
}

static int coll_wait(coll_t *c, const char *what) {
    int st = wait_bounded(c->f, 20, what);
    dred_future_free(c->f);
    c->f = NULL;
    return st;
}

static void sleepers(MPI_Comm comm, const char *cname, int off) {
    int r, p, bad = 0;
    double worst = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    set_step("sleepers on %s", cname);
    for (int i = 0; i < 8; i++) {
        int last = off >= 0 ? off : i % p, root = i % 2 ? (i / 2) % p : -1, st;
        coll_t c;
        if (r != last && (st = coll_start(&c, comm, i, root, 0)) != DRED_OK) {
            fail("nblane/sleepers/%s: call %d: status %d", cname, i, st);
            continue;
        }
        MPI_Barrier(comm);
        if (r == last) {
            double t0 = now_s(), dt;
            st = coll_start(&c, comm, i, root, 0);
            if (st == DRED_OK) st = coll_wait(&c, "nblane/sleepers");
            dt = now_s() - t0;
            if (dt > worst) worst = dt;
            if (dt > wait_limit(0.2)) {
                fail("nblane/sleepers/%s: collective %d took %.3f s while the posted members "
                     "slept: waited for their threads", cname, i, dt);
                bad = 1;
            }
        } else {
            usleep(300000);
            st = coll_wait(&c, "nblane/sleepers");
        }
        coll_check(&c, comm, st, "nblane/sleepers");
    }
    if (!bad && r == (off >= 0 ? off : 0))
        pass("nblane/sleepers/%s: the last member never waited for sleeping posters (worst %.1f ms)",
             cname, worst * 1e3);
}

static void inflight(MPI_Comm comm, const char *cname, uint64_t sd) {
    enum { K = 40 };
    coll_t c[K];
    int order[K], r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    set_step("inflight on %s", cname);
    for (int i = 0; i < K; i++) {
        int st = coll_start(&c[i], comm, 100 + i, i % 3 == 2 ? i % p : -1, 0);
        if (st != DRED_OK) fail("nblane/inflight/%s: call %d: status %d", cname, i, st);
        order[i] = i;
    }
    uint64_t h = mix64(sd + (uint64_t)r);
    for (int i = K - 1; i > 0; i--) { /* a shuffle of this member's own */
        h = mix64(h);
        int j = (int)(h % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (int i = 0; i < K; i++) {
        coll_t *x = &c[order[i]];
        if (x->f != NULL) coll_check(x, comm, coll_wait(x, "nblane/inflight"), "nblane/inflight");
    }
    pass("nblane/inflight/%s: %d in flight, waited in a shuffled order", cname, K);
}

static void mixed(MPI_Comm comm, const char *cname) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    set_step("mixed on %s", cname);
    for (int i = 0; i < 60; i++) {
        int blocking = (r + i) % 3 == 0, root = i % 4 == 3 ? i % p : -1;
        coll_t c;
        int st = coll_start(&c, comm, 200 + i, root, blocking);
        if (!blocking && st == DRED_OK) st = coll_wait(&c, "nblane/mixed");
        coll_check(&c, comm, st, "nblane/mixed");
    }
    pass("nblane/mixed/%s: blocking and nonblocking calls of the same collectives", cname);
}

/* An allreduce's recvbuf is written until it ends, at the latest in dred_finalize, even
 * once its future was freed (dred.h): the buffers of every call here stay allocated until
 * the program exits. */
static coll_t g_freed[2][45];

static void freed(MPI_Comm comm, const char *cname, int round) {
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    set_step("freed on %s", cname);
    for (int i = 0; i < 45; i++) {
        coll_t *c = &g_freed[round][i];
        int st = coll_start(c, comm, 300 + i, -1, 0);
        if (st != DRED_OK) {
            fail("nblane/freed/%s: call %d: status %d", cname, i, st);
            continue;
        }
        if (i % 3 == 0 && r % 2 == 1) { /* nobody here wants this one */
            dred_future_free(c->f);
            continue;
        }
        coll_check(c, comm, coll_wait(c, "nblane/freed"), "nblane/freed");
    }
    pass("nblane/freed/%s: futures freed unfinished on some members, the rest exact", cname);
}

int main(int argc, char **argv) {
    int off = -1;
    uint64_t seed = 11;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nb-off") && i + 1 < argc) off = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    }
    /* Hydra's PMI_RANK: dred-master is 0 when dredrun launches it first, the application's
     * ranks follow (checked below against dred_comm()). */
    const char *pr = getenv("PMI_RANK");
    int set_here = off >= 0 && pr != NULL && atoi(pr) == off + 1;
    if (set_here) setenv("DRED_MEET_FAST_NB", "0", 1);
    test_init(&argc, &argv, "nblane");
    if (off >= 0) {
        int mine = set_here ? g_rank : -1, who = -1;
        MPI_Allreduce(&mine, &who, 1, MPI_INT, MPI_MAX, g_comm);
        if (who != off) {
            if (g_rank == 0) fail("nblane/setup: the lane-off member is %d, not %d (launch with dredrun)", who, off);
            return test_finish();
        }
    }
    MPI_Comm rev;
    MPI_Comm_split(g_comm, 0, g_size - g_rank, &rev);
    sleepers(g_comm, "dred_comm", off);
    sleepers(rev, "reversed", off >= 0 ? g_size - 1 - off : -1);
    inflight(g_comm, "dred_comm", seed);
    inflight(rev, "reversed", seed + 1);
    mixed(g_comm, "dred_comm");
    freed(g_comm, "dred_comm", 0);
    freed(rev, "reversed", 1);
    inflight(g_comm, "dred_comm_after", seed + 2); /* still exact after the freed ones */
    MPI_Comm_free(&rev);
    return test_finish();
}
