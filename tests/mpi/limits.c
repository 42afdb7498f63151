/*
 * limits.c -- dred at its limits: many reductions in flight, the in-flight cap, members
 * that finalize early or never join, waits with a timeout, sizes no node can hold.
 *
 *   dredrun -n P mpi_limits flood [-n N]   N one-double reductions with distinct tags in
 *                                          flight at once (roots rotate), every result
 *                                          compared with ref_reduce; replicas stay on
 *   dredrun -n P mpi_limits cap            DRED_MAX_INFLIGHT=40 (set here): rank 0's 41st
 *                                          reduction in flight gets DRED_ERR_NOMEM, and one
 *                                          more works once the 40 ended; the others' call
 *                                          of that tag ends DRED_ERR_NOMEM (its turn taken)
 *   dredrun -n P mpi_limits capsync [-n B] DRED_MAX_INFLIGHT=32: the last rank issues B
 *                                          auto-tagged calls alone (refused at the cap), then
 *                                          all do; 200 more after: exact, and every call's
 *                                          outcome agrees across members
 *   dredrun -n P mpi_limits nodemem       with DRED_NODE_MEM_MB=1 for the job, P >= 2 on one
 *                                          node: 100 KiB operands fit, 600 KiB ones end
 *                                          DRED_ERR_NOMEM on every member; the budget returns
 *   dredrun -n P mpi_limits early [-d S]   the last rank calls dred_finalize at once, the
 *                                          others S seconds later: everyone gets DRED_OK
 *   dredrun -n P mpi_limits wait [-d S]    the last rank calls a reduction S seconds late:
 *                                          dred_future_wait(f, 200 ms) and (f, 0) give
 *                                          DRED_ERR_TIMEOUT, (f, -1) the right result;
 *                                          -a: a small auto-tagged one, met in shared
 *                                          memory, waited 1000 ms (never much longer)
 *   dredrun -n P mpi_limits neverjoin      the last rank never calls two reductions (one of
 *                                          which the others abandon with dred_future_free)
 *                                          and finalizes late: the others' dred_finalize
 *                                          ends them with DRED_ERR_SHUTDOWN after
 *                                          DRED_FINALIZE_WAIT_S (set to 2 here) and returns
 *                                          DRED_ERR_TIMEOUT.  -a: with DRED_TAG_AUTO, so on
 *                                          one node the two meet in shared memory
 *                                          (lib/paths/meetpath.c) and dred_finalize's sweep
 *                                          must end them the same way
 *   dredrun -n P mpi_limits sizes          count * extent beyond any memory: DRED_ERR_ARG /
 *                                          DRED_ERR_NOMEM from dred_ireduce on every member;
 *                                          one member that cannot allocate (RLIMIT_AS, no
 *                                          pool): every member's future ends DRED_ERR_NOMEM
 *
 * Why: each mode failed before its fix: flood with false
 * failure detections and DRED_ERR_MASTER_LOST, cap with no cap, early with
 * DRED_ERR_MASTER_LOST at the early rank (and a hang or exit 70 elsewhere), wait/neverjoin
 * with no timed wait and a dred_finalize that hung, sizes with DRED_ERR_MISMATCH.
 * Modes that end in an error status finish on their own (each process checks its own
 * dred_finalize), since test_finish() expects DRED_OK.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"
#include "../../common/settings.h"

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Agree on failures, then finalize and check this process's own status; every process
 * reports what went wrong for itself (after dred_finalize there is no MPI to agree on). */
static int finish_expect(int want_finalize)
{
    int any = 0;
    MPI_Allreduce(&g_fail, &any, 1, MPI_INT, MPI_MAX, g_comm);
    set_step("dred_finalize");
    int st = dred_finalize();
    if (st != want_finalize) {
        fail("%s: dred_finalize returned %d (%s), expected %d (%s)", g_prog, st,
             dred_strerror(st), want_finalize, dred_strerror(want_finalize));
        any = 1;
    }
    if (g_rank == 0 && !any && !g_fail) printf("ALL PASSED %s (P=%d)\n", g_prog, g_size);
    fflush(stdout);
    return (any || g_fail) ? 1 : 0;
}

/* ---- flood: N reductions in flight ---------------------------------------------------- */

static int run_flood(int n)
{
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    double *want = malloc(sizeof(double) * (size_t)n);
    dred_future **f = calloc((size_t)n, sizeof *f);
    int bad = 0, notok = 0, firstbad = -1;
    if (!x || !y || !want || !f) {
        fail("flood: no memory");
        return finish_expect(DRED_OK);
    }
    for (int i = 0; i < n; i++) {
        x[i] = (double)((g_rank + 1) * (i % 97)) + 0.25 * g_rank;
        y[i] = -1.0;
    }
    MPI_Barrier(g_comm);
    double t0 = now_s();
    set_step("flood: %d dred_ireduce calls", n);
    for (int i = 0; i < n; i++) {
        int st = dred_ireduce(&x[i], &y[i], 1, MPI_DOUBLE, MPI_SUM, i % g_size, g_comm, i, &f[i]);
        if (st != DRED_OK) {
            fail("flood: dred_ireduce #%d returned %d (%s)", i, st, dred_strerror(st));
            f[i] = NULL;
        }
    }
    double t1 = now_s();
    set_step("flood: waiting for %d futures", n);
    for (int i = 0; i < n; i++) {
        if (f[i] == NULL) continue;
        int st = wait_bounded(f[i], 120, "flood");
        if (st != DRED_OK) {
            if (notok++ < 5)
                fail("flood: reduction %d ended with %d (%s)", i, st, dred_strerror(st));
        }
        dred_future_free(f[i]);
    }
    double t2 = now_s();
    for (int r = 0; r < g_size; r++) {
        ref_reduce(x, want, n, MPI_DOUBLE, MPI_SUM, r, g_comm);
        if (g_rank != r) continue;
        for (int i = r; i < n; i += g_size)
            if (y[i] != want[i] && bad++ == 0) firstbad = i;
    }
    if (notok > 0) fail("flood: %d of %d reductions did not end DRED_OK", notok, n);
    if (bad > 0)
        fail("flood: %d wrong results (first: #%d = %g, expected %g)", bad, firstbad,
             y[firstbad], want[firstbad]);
    else if (notok == 0 && g_rank == 0)
        pass("flood: %d reductions in flight on %d processes: all right (calls %.2f s, "
             "all done %.2f s)", n, g_size, t1 - t0, t2 - t0);
    free(x);
    free(y);
    free(want);
    free(f);
    return test_finish();
}

/* ---- cap: DRED_MAX_INFLIGHT ------------------------------------------------------------- */

static int run_cap(void)
{
    enum { CAP = 40 };
    double x[CAP + 2], y[CAP + 2];
    dred_future *f[CAP + 2] = {0};
    for (int i = 0; i < CAP + 2; i++) x[i] = g_rank + i;
    /* Rank 0 fills its cap before anyone else calls, so none of its reductions can end
     * and the 41st must be refused whatever the timing. */
    if (g_rank != 0) MPI_Barrier(g_comm);
    for (int i = 0; i < CAP; i++) {
        int st = dred_ireduce(&x[i], &y[i], 1, MPI_DOUBLE, MPI_SUM, 0, g_comm, i, &f[i]);
        if (st != DRED_OK) fail("cap: reduction %d (under the cap) returned %s", i, dred_strerror(st));
    }
    if (g_rank == 0) {
        dred_future *extra = (dred_future *)&x[0];
        int st = dred_ireduce(&x[CAP], &y[CAP], 1, MPI_DOUBLE, MPI_SUM, 0, g_comm, CAP, &extra);
        if (st != DRED_ERR_NOMEM)
            fail("cap: reduction %d beyond DRED_MAX_INFLIGHT=%d returned %d (%s), expected "
                 "DRED_ERR_NOMEM", CAP + 1, CAP, st, dred_strerror(st));
        else if (extra != NULL)
            fail("cap: refused dred_ireduce did not set *future to NULL");
        else
            pass("cap: reduction %d beyond DRED_MAX_INFLIGHT=%d refused with DRED_ERR_NOMEM",
                 CAP + 1, CAP);
        if (st == DRED_OK) { /* keep the others in step: they would wait for it */
            wait_bounded(extra, 30, "cap: extra");
            dred_future_free(extra);
        }
        MPI_Barrier(g_comm);
    } else {
        /* The refused call took its turn: the others' call with tag CAP is that reduction,
         * and it ends with rank 0's refusal instead of waiting for it for ever. */
        dred_future *extra = NULL;
        int st = dred_ireduce(&x[CAP], &y[CAP], 1, MPI_DOUBLE, MPI_SUM, 0, g_comm, CAP, &extra);
        if (st == DRED_OK) {
            st = wait_bounded(extra, 30, "cap: the others' call rank 0 was refused");
            dred_future_free(extra);
        }
        if (st != DRED_ERR_NOMEM)
            fail("cap: the reduction rank 0 was refused ended %d (%s) here, expected "
                 "DRED_ERR_NOMEM", st, dred_strerror(st));
        else
            pass("cap: the reduction rank 0 was refused ended DRED_ERR_NOMEM here too");
    }
    for (int i = 0; i < CAP; i++) {
        if (f[i] == NULL) continue;
        int st = wait_bounded(f[i], 60, "cap");
        if (st != DRED_OK) fail("cap: reduction %d ended %s", i, dred_strerror(st));
        dred_future_free(f[i]);
    }
    /* The cap counts reductions in flight, not calls: with the 40 ended there is room. */
    dred_future *g = NULL;
    int st = dred_ireduce(&x[CAP + 1], &y[CAP + 1], 1, MPI_DOUBLE, MPI_SUM, 0, g_comm, 1000, &g);
    if (st != DRED_OK) fail("cap: a reduction after the 40 ended returned %s", dred_strerror(st));
    else if ((st = wait_bounded(g, 60, "cap: after")) != DRED_OK)
        fail("cap: a reduction after the 40 ended: %s", dred_strerror(st));
    dred_future_free(g);
    double want[CAP + 2];
    ref_reduce(x, want, CAP + 2, MPI_DOUBLE, MPI_SUM, 0, g_comm);
    if (g_rank == 0) {
        for (int i = 0; i < CAP; i++)
            if (y[i] != want[i]) fail("cap: reduction %d = %g, expected %g", i, y[i], want[i]);
        if (y[CAP + 1] != want[CAP + 1]) fail("cap: last reduction wrong");
        else pass("cap: %d reductions under the cap and one after them right", CAP);
    }
    return test_finish();
}

/* ---- capsync: refusals at the cap keep the members in step --------------------------------- */

/* The last rank issues a burst of auto-tagged reductions before anyone else calls (so it is
 * refused most of them at DRED_MAX_INFLIGHT), then the others issue the same burst, each
 * call waited for before the next (so they are never refused); the programs drop the
 * refused calls and go on, as an application would.  Then `after` more
 * reductions on every rank: their results must be exact.  Had the refused calls taken no
 * turn, the ranks' auto-tag sequences would disagree from there on and combine operands of
 * different calls (silently wrong) or wait for ever.  Every call's outcome must also agree
 * across members: ended DRED_OK on all of them, or refused/failed on all of them. */
static int run_capsync(int burst, int after)
{
    double *x = calloc(burst + after, sizeof *x), *y = calloc(burst + after, sizeof *y);
    dred_future **f = calloc(burst, sizeof *f);
    int *st = calloc(burst, sizeof *st), *all = NULL;
    int last = g_size - 1, refused = 0;
    for (int i = 0; i < burst + after; i++) x[i] = g_rank * 100000.0 + i;
    if (g_rank != last) MPI_Barrier(g_comm);
    for (int i = 0; i < burst; i++) {
        st[i] = dred_ireduce(&x[i], &y[i], 1, MPI_DOUBLE, MPI_SUM, 0, g_comm, DRED_TAG_AUTO, &f[i]);
        if (st[i] != DRED_OK && st[i] != DRED_ERR_NOMEM)
            fail("capsync: call %d returned %s", i, dred_strerror(st[i]));
        if (st[i] != DRED_OK) refused++;
        if (st[i] == DRED_OK && g_rank != last) { /* the others wait for each: never refused */
            st[i] = wait_bounded(f[i], 60, "capsync: burst");
            dred_future_free(f[i]);
            f[i] = NULL;
        }
    }
    if (g_rank == last) MPI_Barrier(g_comm);
    for (int i = 0; i < burst; i++) {
        if (st[i] != DRED_OK || f[i] == NULL) continue;
        st[i] = wait_bounded(f[i], 60, "capsync: burst");
        dred_future_free(f[i]);
    }
    pass("capsync: rank %d refused %d of %d calls at the cap", g_rank, refused, burst);
    for (int j = 0; j < after; j++) {
        dred_future *g = NULL;
        int s = dred_ireduce(&x[burst + j], &y[burst + j], 1, MPI_DOUBLE, MPI_SUM, 0, g_comm,
                             DRED_TAG_AUTO, &g);
        if (s == DRED_OK) {
            s = wait_bounded(g, 60, "capsync: after");
            dred_future_free(g);
        }
        if (s != DRED_OK) fail("capsync: reduction %d after the burst ended %s", j, dred_strerror(s));
    }
    if (g_rank == 0) all = calloc((size_t)burst * g_size, sizeof *all);
    MPI_Gather(st, burst, MPI_INT, all, burst, MPI_INT, 0, g_comm);
    double *want = calloc(burst + after, sizeof *want);
    ref_reduce(x, want, burst + after, MPI_DOUBLE, MPI_SUM, 0, g_comm);
    if (g_rank == 0) {
        int wrong = 0, split = 0, ok = 0;
        for (int i = 0; i < burst; i++) {
            int oks = 0;
            for (int r = 0; r < g_size; r++) oks += all[r * burst + i] == DRED_OK;
            if (oks != 0 && oks != g_size) split++;
            if (st[i] == DRED_OK && y[i] != want[i]) wrong++;
            ok += oks == g_size;
        }
        for (int j = 0; j < after; j++)
            if (y[burst + j] != want[burst + j]) wrong++;
        if (split) fail("capsync: %d call(s) ended DRED_OK on some members and not on others", split);
        if (wrong) fail("capsync: %d result(s) wrong", wrong);
        if (!split && !wrong)
            pass("capsync: %d burst reductions ended DRED_OK everywhere and exact, the rest refused "
                 "everywhere; %d reductions after the burst exact", ok, after);
    }
    free(all);
    free(want);
    free(x);
    free(y);
    free(f);
    free(st);
    return test_finish();
}

/* ---- nodemem: the node's memory budget (DRED_NODE_MEM_MB=1, set for the job) -------------- */

/* One reduction of `ints` ints on every member; returns its status here (refused or not). */
static int nodemem_one(int ints, int *x, int *y)
{
    dred_future *f = NULL;
    int st = dred_ireduce(x, y, ints, MPI_INT, MPI_SUM, 0, g_comm, DRED_TAG_AUTO, &f);
    if (st == DRED_OK) {
        st = wait_bounded(f, 30, "nodemem");
        dred_future_free(f);
    }
    return st;
}

/* The members on one node hold a copy of their operand each: with a budget of 1 MiB for
 * the node, three members' 100 KiB operands fit (and three such reductions in flight at
 * once), three 600 KiB ones do not -- every member's reduction must end DRED_ERR_NOMEM,
 * although each operand alone is under the budget -- and the budget is whole again after. */
static int run_nodemem(void)
{
    enum { SMALL = 25600, BIG = 153600 }; /* 100 KiB, 600 KiB of ints */
    int *x = malloc(sizeof(int) * BIG), *y = malloc(sizeof(int) * BIG), *want = malloc(sizeof(int) * BIG);
    for (int i = 0; i < BIG; i++) x[i] = i % 1000 + g_rank;
    int st = nodemem_one(SMALL, x, y);
    ref_reduce(x, want, SMALL, MPI_INT, MPI_SUM, 0, g_comm);
    if (st != DRED_OK) fail("nodemem: 100 KiB reduction: %s", dred_strerror(st));
    else if (g_rank == 0 && memcmp(y, want, sizeof(int) * SMALL)) fail("nodemem: 100 KiB reduction wrong");
    else pass("nodemem: 100 KiB per member within a 1 MiB node budget");
    st = nodemem_one(BIG, x, y);
    if (st != DRED_ERR_NOMEM)
        fail("nodemem: 600 KiB per member over a 1 MiB node budget ended %d (%s), expected "
             "DRED_ERR_NOMEM on every member", st, dred_strerror(st));
    else pass("nodemem: 600 KiB per member over the node budget: DRED_ERR_NOMEM here");
    dred_future *f[3] = {0};
    int ok = 1;
    for (int k = 0; k < 3; k++)
        if (dred_ireduce(x, y, SMALL / 4, MPI_INT, MPI_SUM, 0, g_comm, DRED_TAG_AUTO, &f[k]) != DRED_OK) ok = 0;
    for (int k = 0; k < 3; k++) {
        if (f[k] == NULL) continue;
        if (wait_bounded(f[k], 30, "nodemem: three") != DRED_OK) ok = 0;
        dred_future_free(f[k]);
    }
    if (!ok) fail("nodemem: three 25 KiB reductions in flight within the budget failed");
    st = nodemem_one(SMALL, x, y);
    if (st != DRED_OK) fail("nodemem: 100 KiB after the refusal: %s (budget not given back?)", dred_strerror(st));
    else if (g_rank == 0 && memcmp(y, want, sizeof(int) * SMALL)) fail("nodemem: 100 KiB after the refusal wrong");
    else pass("nodemem: the budget is whole again after the refused reduction");
    free(x);
    free(y);
    free(want);
    return test_finish();
}

/* ---- early: one member finalizes long before the others ------------------------------------ */

static int run_early(double delay)
{
    double x[64], y[64], want[64];
    for (int i = 0; i < 64; i++) x[i] = g_rank * 64 + i;
    int st = dred_reduce(x, y, 64, MPI_DOUBLE, MPI_SUM, 0, g_comm);
    ref_reduce(x, want, 64, MPI_DOUBLE, MPI_SUM, 0, g_comm);
    if (st != DRED_OK) fail("early: warm-up reduction: %s", dred_strerror(st));
    else if (g_rank == 0 && memcmp(y, want, sizeof y)) fail("early: warm-up result wrong");
    int any = 0;
    MPI_Allreduce(&g_fail, &any, 1, MPI_INT, MPI_MAX, g_comm);
    int early = g_rank == g_size - 1;
    if (!early) {
        set_step("early: sleeping %.1f s before dred_finalize", delay);
        sleep_s(delay);
    }
    set_step("dred_finalize (%s)", early ? "early" : "late");
    double t0 = now_s();
    st = dred_finalize();
    double t1 = now_s();
    if (st != DRED_OK)
        fail("early: dred_finalize of the %s member returned %d (%s) after %.1f s",
             early ? "early" : "late", st, dred_strerror(st), t1 - t0);
    else if (early)
        pass("early: the early member's dred_finalize waited %.1f s for the others and "
             "returned DRED_OK", t1 - t0);
    if (g_rank == 0 && !any && !g_fail) printf("ALL PASSED %s (P=%d)\n", g_prog, g_size);
    fflush(stdout);
    return (any || g_fail) ? 1 : 0;
}

static int g_auto_tags; /* -a: wait's and neverjoin's reductions with DRED_TAG_AUTO */

/* ---- wait: dred_future_wait with a timeout ------------------------------------------------- */

static int run_wait(double delay)
{
    enum { N = 1000 };
    static int x[N], y[N], want[N];
    int late = g_rank == g_size - 1, st;
    dred_future *f = NULL;
    for (int i = 0; i < N; i++) x[i] = i * (g_rank + 3);
    st = dred_future_wait(NULL, 0);
    if (st != DRED_ERR_ARG) fail("wait: dred_future_wait(NULL) returned %s", dred_strerror(st));
    MPI_Barrier(g_comm);
    if (late) {
        set_step("wait: sleeping %.1f s before calling", delay);
        sleep_s(delay);
    }
    /* -a: a small auto-tagged reduction, which meets in shared memory on one node */
    int count = g_auto_tags ? 8 : N, ms = g_auto_tags ? 1000 : 200;
    st = dred_ireduce(x, y, count, MPI_INT, MPI_SUM, 0, g_comm, g_auto_tags ? DRED_TAG_AUTO : 5, &f);
    if (st != DRED_OK) {
        fail("wait: dred_ireduce: %s", dred_strerror(st));
        return finish_expect(DRED_OK);
    }
    if (!late) {
        double t0 = now_s();
        st = dred_future_wait(f, ms);
        double dt = now_s() - t0;
        /* the bound is a promise: a wait that took twice its timeout fails here */
        if (st != DRED_ERR_TIMEOUT)
            fail("wait: dred_future_wait(f, %d) while a member is %.1f s late returned %d (%s)",
                 ms, delay, st, dred_strerror(st));
        else if (dt < ms / 1000.0 - 0.01 || dt > ms / 1000.0 + wait_limit(0.5))
            fail("wait: dred_future_wait(f, %d) returned after %.3f s", ms, dt);
        else
            pass("wait: dred_future_wait(f, %d) gave DRED_ERR_TIMEOUT after %.3f s", ms, dt);
        t0 = now_s();
        st = dred_future_wait(f, 0);
        dt = now_s() - t0;
        if (st != DRED_ERR_TIMEOUT || dt > 0.1)
            fail("wait: dred_future_wait(f, 0) returned %s after %.3f s", dred_strerror(st), dt);
        if (dred_future_is_done(f) != 0) fail("wait: the future is done after a timed-out wait");
    }
    /* the reduction went on: an unbounded wait gets its result */
    set_step("wait: dred_future_wait(f, -1)");
    st = dred_future_wait(f, -1);
    if (st != DRED_OK) fail("wait: dred_future_wait(f, -1) returned %s", dred_strerror(st));
    if ((st = dred_future_wait(f, 0)) != DRED_OK)
        fail("wait: dred_future_wait(f, 0) on a done future returned %s", dred_strerror(st));
    dred_future_free(f);
    ref_reduce(x, want, count, MPI_INT, MPI_SUM, 0, g_comm);
    if (g_rank == 0) {
        if (memcmp(y, want, sizeof(int) * count)) fail("wait: wrong result");
        else pass("wait: the reduction a timed-out wait left running completed right");
    }
    return test_finish();
}

/* ---- neverjoin: a member never calls; dred_finalize is bounded ----------------------------- */

static struct {
    dred_future *f;
    double done_at;
    int status;
} g_watch;

static void *watch_future(void *arg)
{
    (void)arg;
    g_watch.status = dred_future_wait(g_watch.f, -1);
    g_watch.done_at = now_s();
    return NULL;
}


static int run_neverjoin(double late_s)
{
    double x = g_rank, y = 0, x2 = 2.0 * g_rank, y2 = 0;
    int lagger = g_rank == g_size - 1, st, any = 0;
    const char *e = dred_setting_raw(DRED_S_FINALIZE_WAIT_S);
    double bound = e ? atof(e) : 60;
    dred_future *kept = NULL, *abandoned = NULL;
    pthread_t th;

    if (!lagger) {
        st = dred_ireduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, g_comm, g_auto_tags ? DRED_TAG_AUTO : 9,
                          &kept);
        if (st != DRED_OK) fail("neverjoin: dred_ireduce 9: %s", dred_strerror(st));
        st = dred_ireduce(&x2, &y2, 1, MPI_DOUBLE, MPI_MAX, g_size - 1, g_comm,
                          g_auto_tags ? DRED_TAG_AUTO : 10, &abandoned);
        if (st != DRED_OK) fail("neverjoin: dred_ireduce 10: %s", dred_strerror(st));
        /* abandon it: the application gives up on tag 10 */
        dred_future_free(abandoned);
        if (kept != NULL && dred_future_wait(kept, 300) != DRED_ERR_TIMEOUT)
            fail("neverjoin: a reduction a member never called did not time out");
    }
    MPI_Allreduce(&g_fail, &any, 1, MPI_INT, MPI_MAX, g_comm);
    if (lagger) {
        /* late enough that the others' pending reductions must end by their own bound */
        set_step("neverjoin: sleeping %.1f s", late_s);
        sleep_s(late_s);
        set_step("dred_finalize (late member)");
        st = dred_finalize();
        if (st != DRED_OK) fail("neverjoin: the late member's dred_finalize returned %s", dred_strerror(st));
    } else {
        g_watch.f = kept;
        g_watch.done_at = 0;
        pthread_create(&th, NULL, watch_future, NULL);
        set_step("dred_finalize with pending reductions");
        double t0 = now_s();
        st = dred_finalize();
        double t1 = now_s();
        pthread_join(th, NULL);
        if (st != DRED_ERR_TIMEOUT)
            fail("neverjoin: dred_finalize with a reduction nobody can finish returned %d (%s), "
                 "expected DRED_ERR_TIMEOUT", st, dred_strerror(st));
        if (g_watch.status != DRED_ERR_SHUTDOWN)
            fail("neverjoin: the pending reduction ended %d (%s), expected DRED_ERR_SHUTDOWN",
                 g_watch.status, dred_strerror(g_watch.status));
        else if (g_watch.done_at - t0 > bound + wait_limit(1.5) || g_watch.done_at - t0 < bound - 0.5)
            fail("neverjoin: the pending reduction ended %.1f s into dred_finalize "
                 "(DRED_FINALIZE_WAIT_S=%.0f)", g_watch.done_at - t0, bound);
        else if (g_rank == 0)
            pass("neverjoin: pending reduction ended DRED_ERR_SHUTDOWN %.1f s into "
                 "dred_finalize (bound %.0f s); dred_finalize returned DRED_ERR_TIMEOUT "
                 "after %.1f s (the late member came at %.1f s)", g_watch.done_at - t0, bound,
                 t1 - t0, late_s);
        if (dred_future_is_done(kept) != 1) fail("neverjoin: future not done after dred_finalize");
        dred_future_free(kept);
    }
    if (g_rank == 0 && !any && !g_fail) printf("ALL PASSED %s (P=%d)\n", g_prog, g_size);
    fflush(stdout);
    return (any || g_fail) ? 1 : 0;
}

/* ---- sizes ---------------------------------------------------------------------------------- */

static int run_sizes(void)
{
    MPI_Datatype big;
    dred_future *f = NULL;
    static double x[16], y[16];
    int st;

    /* 2^31-1 elements of 1 MiB each: 2 PiB, far above any node */
    MPI_Type_contiguous(1 << 17, MPI_DOUBLE, &big);
    MPI_Type_commit(&big);
    st = dred_ireduce(x, y, 0x7fffffff, big, MPI_SUM, 0, g_comm, 1, &f);
    if (st != DRED_ERR_ARG && st != DRED_ERR_NOMEM)
        fail("sizes: 2 PiB reduction returned %d (%s), expected DRED_ERR_ARG or DRED_ERR_NOMEM",
             st, dred_strerror(st));
    else if (g_rank == 0)
        pass("sizes: 2 PiB reduction refused (%s)", dred_strerror(st));
    if (st == DRED_OK) {
        wait_bounded(f, 60, "sizes: 2 PiB");
        dred_future_free(f);
    }
    MPI_Type_free(&big);

    /* One member cannot allocate: no pool (DRED_POOL_MB=0, set before dred_init in main)
     * and an address-space limit.  Every member must learn DRED_ERR_NOMEM. */
    enum { BIGN = 16 << 20, WARMN = 16 << 10 }; /* 128 MiB of doubles; 128 KiB */
    double *bx = malloc(sizeof(double) * BIGN), *by = g_rank == 0 ? malloc(sizeof(double) * BIGN) : NULL;
    if (bx == NULL || (g_rank == 0 && by == NULL)) {
        fail("sizes: no memory for the test's own buffers");
        return finish_expect(DRED_OK);
    }
    for (size_t i = 0; i < BIGN; i++) bx[i] = 1.0;
    /* A reduction first whose replica I/O starts libuv's thread pool, whose start aborts
     * the process when it cannot create its threads -- under the address-space limit below
     * it could not, which is libuv's limit, not the one tested here.  128 KiB: above any
     * DRED_INLINE_MAX (at most 64 KiB), since an inline reduction keeps no replicas and
     * would leave the pool unstarted. */
    for (size_t i = 0; i < WARMN; i++) bx[i] = (double)g_rank - (double)(i % 16);
    st = dred_reduce(bx, by, WARMN, MPI_DOUBLE, MPI_SUM, 0, g_comm);
    if (st != DRED_OK) fail("sizes: warm-up reduction: %s", dred_strerror(st));
    for (size_t i = 0; i < WARMN; i++) bx[i] = 1.0;
    /* Only the soft limit, and only for this reduction: lifted again below, so the rest of
     * the job (thread stacks, replica I/O) is not starved by the test itself. */
    struct rlimit old_rl;
    getrlimit(RLIMIT_AS, &old_rl);
    if (g_rank == g_size - 1) {
        struct rlimit rl = old_rl;
        FILE *fp = fopen("/proc/self/statm", "r");
        unsigned long pages = 0;
        if (fp == NULL || fscanf(fp, "%lu", &pages) != 1) fail("sizes: cannot read statm");
        if (fp) fclose(fp);
        rl.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20);
        if (setrlimit(RLIMIT_AS, &rl) != 0) fail("sizes: setrlimit failed");
    }
    MPI_Barrier(g_comm);
    st = dred_ireduce(bx, by, BIGN, MPI_DOUBLE, MPI_SUM, 0, g_comm, 2, &f);
    if (st == DRED_OK) st = wait_bounded(f, 60, "sizes: no memory at one member");
    if (st != DRED_ERR_NOMEM)
        fail("sizes: a member that cannot allocate: status %d (%s), expected DRED_ERR_NOMEM",
             st, dred_strerror(st));
    else
        pass("sizes: a member that cannot allocate: DRED_ERR_NOMEM at rank %d", g_rank);
    dred_future_free(f);
    if (g_rank == g_size - 1 && setrlimit(RLIMIT_AS, &old_rl) != 0) fail("sizes: cannot lift the limit");
    /* the job goes on: a small reduction still works */
    for (int i = 0; i < 16; i++) x[i] = g_rank + i;
    st = dred_reduce(x, y, 16, MPI_DOUBLE, MPI_SUM, 0, g_comm);
    if (st != DRED_OK) fail("sizes: a reduction after the NOMEM one: %s", dred_strerror(st));
    free(bx);
    free(by);
    return test_finish();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "flood";
    int n = 10000, c;
    double delay = -1;
    static char prog[64];
    snprintf(prog, sizeof prog, "limits(%s)", mode);
    /* settings this process needs before dred_init reads them */
    if (!strcmp(mode, "cap")) setenv("DRED_MAX_INFLIGHT", "40", 1);
    if (!strcmp(mode, "capsync")) setenv("DRED_MAX_INFLIGHT", "32", 1);
    if (!strcmp(mode, "neverjoin") && dred_setting_raw(DRED_S_FINALIZE_WAIT_S) == NULL)
        setenv("DRED_FINALIZE_WAIT_S", "2", 1);
    if (!strcmp(mode, "sizes")) {
        const char *r = getenv("PMI_RANK"), *s = getenv("PMI_SIZE");
        if (r && s && atoi(r) == atoi(s) - 1) setenv("DRED_POOL_MB", "0", 1);
    }
    optind = 2;
    while ((c = getopt(argc, argv, "n:d:a")) != -1) {
        if (c == 'n') n = atoi(optarg);
        else if (c == 'd') delay = atof(optarg);
        else if (c == 'a') g_auto_tags = 1;
    }
    test_init(&argc, &argv, prog);
    if (!strcmp(mode, "flood")) return run_flood(n);
    if (!strcmp(mode, "cap")) return run_cap();
    if (!strcmp(mode, "capsync")) return run_capsync(n < 10000 ? n : 400, 200);
    if (!strcmp(mode, "nodemem")) return run_nodemem();
    if (!strcmp(mode, "early")) return run_early(delay >= 0 ? delay : 3.0);
    if (!strcmp(mode, "wait")) return run_wait(delay >= 0 ? delay : 1.5);
    if (!strcmp(mode, "neverjoin")) return run_neverjoin(delay >= 0 ? delay : 5.0);
    if (!strcmp(mode, "sizes")) return run_sizes();
    fail("unknown mode %s", mode);
    return test_finish();
}
