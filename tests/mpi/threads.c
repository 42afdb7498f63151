/*
 * threads.c -- application threads issuing reductions concurrently.
 *
 *   dredrun -n P mpi_threads [-T THREADS] [-k PER_THREAD]
 *
 * THREADS (default 4) pthreads per member, each issuing PER_THREAD (default 16) reductions
 * with its own explicit tags (thread t uses t*PER_THREAD + k), roots and counts varying with
 * the tag, long long SUM and double MAX.  Threads of even index issue all their reductions
 * and then wait for them; odd ones wait for each before issuing the next; the threads of a
 * member therefore interleave differently on every member.  Results are checked at each
 * root against the value computed locally from every member's deterministic input.
 * Part 2: min(THREADS, P) threads, each calling blocking dred_reduce (DRED_TAG_AUTO) on its
 * own communicator -- a different rotation of the members, hence its own group and auto-tag
 * sequence -- all at once.  Part 3: two threads in dred_future_get on the same future.
 */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>

#include "dred.h"
#include "mpitest.h"

static int T = 4, K = 16;
static pthread_barrier_t start_barrier;

static long long lval(int r, int tag, int i) { return (long long)((r * 31 + tag * 7 + i) % 1000) - 300; }
static double dval(int r, int tag, int i) { return (double)((r * 17 + tag + i * 3) % 1001); }

struct job {
    int tag, root, count, is_max;
    void *s, *r;
    dred_future *f;
    int st;
};

static void prepare(struct job *j, int tag)
{
    static const int counts[4] = {1, 257, 4096, 20000};
    j->tag = tag;
    j->root = (tag * 5 + 1) % g_size;
    j->count = counts[tag % 4];
    j->is_max = tag % 3 == 0;
    size_t es = j->is_max ? sizeof(double) : sizeof(long long);
    j->s = malloc(es * (size_t)j->count);
    j->r = g_rank == j->root ? calloc((size_t)j->count, es) : NULL;
    for (int i = 0; i < j->count; i++) {
        if (j->is_max) ((double *)j->s)[i] = dval(g_rank, tag, i);
        else ((long long *)j->s)[i] = lval(g_rank, tag, i);
    }
    j->f = NULL;
    j->st = -1;
}

static int start(struct job *j)
{
    j->st = dred_ireduce(j->s, j->r, j->count, j->is_max ? MPI_DOUBLE : MPI_LONG_LONG,
                         j->is_max ? MPI_MAX : MPI_SUM, j->root, dred_comm(), j->tag, &j->f);
    if (j->st != DRED_OK) {
        fail("threads/tag %d: dred_ireduce returned %d (%s)", j->tag, j->st, dred_strerror(j->st));
        return -1;
    }
    return 0;
}

static void finish(struct job *j, int thread)
{
    char what[96];
    snprintf(what, sizeof what, "threads/thread %d/tag %d", thread, j->tag);
    if (j->f) {
        j->st = wait_bounded(j->f, 60, what);
        dred_future_free(j->f);
        j->f = NULL;
    }
    if (j->st != DRED_OK) {
        fail("%s: status %d (%s)", what, j->st, dred_strerror(j->st));
    } else if (g_rank == j->root) {
        int bad = -1;
        for (int i = 0; i < j->count && bad < 0; i++) {
            if (j->is_max) {
                double m = dval(0, j->tag, i);
                for (int r = 1; r < g_size; r++) if (dval(r, j->tag, i) > m) m = dval(r, j->tag, i);
                if (((double *)j->r)[i] != m) bad = i;
            } else {
                long long s = 0;
                for (int r = 0; r < g_size; r++) s += lval(r, j->tag, i);
                if (((long long *)j->r)[i] != s) bad = i;
            }
        }
        if (bad >= 0) fail("%s: wrong result at element %d", what, bad);
        else pass("%s/%s/n=%d/root=%d", what, j->is_max ? "double_max" : "longlong_sum", j->count, j->root);
    }
    free(j->s);
    free(j->r);
}

static void *thread_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    struct job *jobs = calloc((size_t)K, sizeof *jobs);
    for (int k = 0; k < K; k++) prepare(&jobs[k], t * K + k);
    pthread_barrier_wait(&start_barrier);
    if (t % 2 == 0) {
        for (int k = 0; k < K; k++) start(&jobs[k]);
        for (int k = K - 1; k >= 0; k--) finish(&jobs[k], t);
    } else {
        for (int k = 0; k < K; k++) {
            start(&jobs[k]);
            finish(&jobs[k], t);
        }
    }
    free(jobs);
    return NULL;
}

/* part 2: each thread on its own communicator (a different rotation of dred_comm()'s
 * members, so a distinct group with its own auto-tag sequence), blocking dred_reduce */
static MPI_Comm *rot_comm;
static void *thread_auto(void *arg)
{
    int t = (int)(intptr_t)arg, r, p;
    MPI_Comm c = rot_comm[t];
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &p);
    enum { NA = 2000 };
    long long *sv = malloc(sizeof(long long) * NA), *rv = malloc(sizeof(long long) * NA);
    pthread_barrier_wait(&start_barrier);
    for (int k = 0; k < K; k++) {
        int root = (k + t) % p;
        for (int i = 0; i < NA; i++) sv[i] = (long long)((g_rank * 13 + t * 101 + k * 7 + i) % 977);
        memset(rv, 0, sizeof(long long) * NA);
        int st = dred_reduce(sv, rv, NA, MPI_LONG_LONG, MPI_SUM, root, c);
        if (st != DRED_OK) {
            fail("threads/auto/thread %d/call %d: status %d (%s)", t, k, st, dred_strerror(st));
            continue;
        }
        if (r == root) {
            int bad = -1;
            for (int i = 0; i < NA && bad < 0; i++) {
                long long e = 0;
                for (int m = 0; m < g_size; m++) e += (long long)((m * 13 + t * 101 + k * 7 + i) % 977);
                if (rv[i] != e) bad = i;
            }
            if (bad >= 0) fail("threads/auto/thread %d/call %d: wrong result at %d", t, k, bad);
            else pass("threads/auto/thread %d (rotation %d)/call %d/root=%d", t, t, k, root);
        }
    }
    free(sv); free(rv);
    return NULL;
}

/* part 3: two threads wait on the same future at once */
static dred_future *shared_f;
static int shared_st[2];
static void *thread_get(void *arg)
{
    int t = (int)(intptr_t)arg;
    pthread_barrier_wait(&start_barrier);
    shared_st[t] = dred_future_get(shared_f);
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-T") && i + 1 < argc) T = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) K = atoi(argv[++i]);
    }
    if (T < 1) T = 1;
    if (K < 1) K = 1;
    test_init(&argc, &argv, "threads");
    set_step("%d threads x %d reductions", T, K);
    pthread_barrier_init(&start_barrier, NULL, (unsigned)T);
    pthread_t *th = malloc(sizeof(pthread_t) * (size_t)T);
    double t0 = now_s();
    for (int t = 0; t < T; t++)
        if (pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t)) {
            fail("threads: pthread_create failed");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start_barrier);
    if (g_rank == 0)
        printf("threads: %d threads x %d reductions done in %.2f s on member 0\n", T, K, now_s() - t0);

    /* part 2: min(T, P) threads, each with DRED_TAG_AUTO on its own group */
    int TA = T < g_size ? T : g_size;
    rot_comm = malloc(sizeof(MPI_Comm) * (size_t)TA);
    for (int t = 0; t < TA; t++) MPI_Comm_split(g_comm, 0, (g_rank + t) % g_size, &rot_comm[t]);
    set_step("part 2: %d threads, DRED_TAG_AUTO on their own groups", TA);
    pthread_barrier_init(&start_barrier, NULL, (unsigned)TA);
    t0 = now_s();
    for (int t = 0; t < TA; t++) pthread_create(&th[t], NULL, thread_auto, (void *)(intptr_t)t);
    for (int t = 0; t < TA; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start_barrier);
    if (g_rank == 0)
        printf("threads: %d threads x %d auto-tag reductions on own groups done in %.2f s\n", TA, K, now_s() - t0);
    for (int t = 0; t < TA; t++) MPI_Comm_free(&rot_comm[t]);
    free(rot_comm);

    /* part 3: one future, dred_future_get from two threads at once */
    {
        enum { NS = 50000 };
        double *sv = malloc(sizeof(double) * NS), *rv = calloc(NS, sizeof(double));
        for (int i = 0; i < NS; i++) sv[i] = (double)((i + g_rank) % 100);
        set_step("part 3: one future, two waiting threads");
        int st = dred_ireduce(sv, rv, NS, MPI_DOUBLE, MPI_SUM, 0, g_comm, 9999, &shared_f);
        if (st != DRED_OK) fail("threads/shared_future: dred_ireduce returned %d", st);
        else {
            pthread_barrier_init(&start_barrier, NULL, 2);
            for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, thread_get, (void *)(intptr_t)t);
            for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
            pthread_barrier_destroy(&start_barrier);
            dred_future_free(shared_f);
            if (shared_st[0] != DRED_OK || shared_st[1] != DRED_OK)
                fail("threads/shared_future: the two gets returned %d and %d", shared_st[0], shared_st[1]);
            else if (g_rank == 0) {
                int bad = -1;
                for (int i = 0; i < NS && bad < 0; i++) {
                    double e = 0;
                    for (int m = 0; m < g_size; m++) e += (double)((i + m) % 100);
                    if (rv[i] != e) bad = i;
                }
                if (bad >= 0) fail("threads/shared_future: wrong result at %d", bad);
                else pass("threads/shared_future: two threads in dred_future_get on one future");
            }
        }
        free(sv); free(rv);
    }
    free(th);
    return test_finish();
}
