/*
 * concurrent.c -- 64 reductions in flight at once.
 *
 *   dredrun -n P mpi_concurrent [-s SEED]
 *
 * Part 1: explicit tags 0..63.  Root, count, datatype and op are functions of the tag
 * (int SUM, integer-valued double SUM, long MAX, unsigned BXOR, MPI_DOUBLE_INT MINLOC and a
 * non-commutative user op); every member issues its 64 dred_ireduce calls in its own
 * shuffled order (seeded by its rank), then polls dred_future_is_done over all futures until
 * every one is done (bounded), then dred_future_get (twice: it may be called again).
 * Part 2: 64 DRED_TAG_AUTO reductions issued in the same order everywhere, waited in
 * reverse order.  Part 3: unbalanced arrival: 32 tagged reductions issued in a shuffled
 * order with random 0..10 ms pauses before each call (and a random start), waited in the
 * member's own order.  Part 4: tag 7 reused 24 times back to back, members skewed by
 * 0..3 ms.  Each result is compared at its root with MPI_Reduce on dred_comm().
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

#include "dred.h"
#include "mpitest.h"

#define NRED 64

static MPI_Datatype t_affine;
static MPI_Op op_affine;

struct di { double v; int i; };

struct red {
    int root, count, kind;
    MPI_Datatype dt;
    MPI_Op op;
    size_t esz;
    void *s, *rd, *rm;
    dred_future *f;
    int st;
};

static const char *kname[6] = {"int_sum", "double_sum", "long_max", "unsigned_bxor",
                               "double_int_minloc", "affine_noncomm"};

static void plan(struct red *r, int id, uint64_t seed)
{
    static const int counts[] = {1, 100, 3000, 10000, 30000};
    uint64_t h = mix64(seed ^ (uint64_t)id * 0x1234567ULL);
    r->root = (int)(h % (uint64_t)g_size);
    r->count = counts[(h >> 8) % 5];
    r->kind = (int)((h >> 16) % 6);
    switch (r->kind) {
    case 0: r->dt = MPI_INT; r->op = MPI_SUM; r->esz = sizeof(int); break;
    case 1: r->dt = MPI_DOUBLE; r->op = MPI_SUM; r->esz = sizeof(double); break;
    case 2: r->dt = MPI_LONG; r->op = MPI_MAX; r->esz = sizeof(long); break;
    case 3: r->dt = MPI_UNSIGNED; r->op = MPI_BXOR; r->esz = sizeof(unsigned); break;
    case 4: r->dt = MPI_DOUBLE_INT; r->op = MPI_MINLOC; r->esz = sizeof(struct di); break;
    default: r->dt = t_affine; r->op = op_affine; r->esz = sizeof(struct affine); break;
    }
    size_t bytes = r->esz * (size_t)r->count;
    r->s = calloc(1, bytes);
    r->rd = g_rank == r->root ? malloc(bytes) : NULL;
    r->rm = g_rank == r->root ? malloc(bytes) : NULL;
    if (!r->s || (g_rank == r->root && (!r->rd || !r->rm))) {
        fail("concurrent: out of memory");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (r->rd) memset(r->rd, 0xA5, bytes);
    if (r->rm) memset(r->rm, 0x5A, bytes);
    for (int i = 0; i < r->count; i++) {
        uint64_t e = mix64(h ^ ((uint64_t)g_rank << 40) ^ (uint64_t)i);
        switch (r->kind) {
        case 0: ((int *)r->s)[i] = (int)(e % 1001) - 500; break;
        case 1: ((double *)r->s)[i] = (double)((int)(e % 1001) - 500); break;
        case 2: ((long *)r->s)[i] = (long)e; break;
        case 3: ((unsigned *)r->s)[i] = (unsigned)e; break;
        case 4: ((struct di *)r->s)[i].v = (double)(e % 4); ((struct di *)r->s)[i].i = g_rank; break;
        default:
            ((struct affine *)r->s)[i].a = 1 + (unsigned)(e % 7);
            ((struct affine *)r->s)[i].b = (unsigned)((e >> 8) % 11);
            break;
        }
    }
    r->f = NULL;
    r->st = -1;
}

static void verify(struct red *r, const char *what, int id)
{
    char check[160];
    snprintf(check, sizeof check, "concurrent/%s/%d/%s/n=%d/root=%d", what, id, kname[r->kind],
             r->count, r->root);
    set_step("ref_reduce for %s", check);
    ref_reduce(r->s, r->rm, r->count, r->dt, r->op, r->root, g_comm);
    if (r->st != DRED_OK)
        fail("%s: status %d (%s)", check, r->st, dred_strerror(r->st));
    else if (g_rank == r->root) {
        int same = 1;
        if (r->kind == 4) { /* padding bytes after the int are unspecified: compare fields */
            const struct di *a = r->rd, *b = r->rm;
            for (int i = 0; i < r->count && same; i++) same = a[i].v == b[i].v && a[i].i == b[i].i;
        } else
            same = !memcmp(r->rd, r->rm, r->esz * (size_t)r->count);
        if (!same)
            fail("%s: result differs from the reference (ref_reduce)", check);
        else
            pass("%s", check);
    }
    free(r->s); free(r->rd); free(r->rm);
}

int main(int argc, char **argv)
{
    uint64_t seed = 4242;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    test_init(&argc, &argv, "concurrent");
    affine_create(&t_affine, &op_affine);

    /* ---- part 1: explicit tags, per-member shuffled issue order ---- */
    static struct red R[NRED];
    for (int t = 0; t < NRED; t++) plan(&R[t], t, seed);
    int order[NRED];
    for (int t = 0; t < NRED; t++) order[t] = t;
    uint64_t rng = mix64(seed ^ (uint64_t)(g_rank + 1) * 977);
    for (int t = NRED - 1; t > 0; t--) {
        rng = mix64(rng);
        int j = (int)(rng % (uint64_t)(t + 1)), x = order[t];
        order[t] = order[j];
        order[j] = x;
    }
    MPI_Barrier(g_comm);
    double tp = now_s();
    set_step("issuing 64 tagged dred_ireduce");
    int issue_fail = 0;
    for (int k = 0; k < NRED; k++) {
        struct red *r = &R[order[k]];
        r->st = dred_ireduce(r->s, r->rd, r->count, r->dt, r->op, r->root, g_comm, order[k], &r->f);
        if (r->st != DRED_OK) {
            fail("concurrent/tag/%d: dred_ireduce returned %d (%s)", order[k], r->st,
                 dred_strerror(r->st));
            issue_fail = 1;
        }
    }
    if (issue_fail) MPI_Abort(MPI_COMM_WORLD, 4); /* peers would wait forever on those tags */
    /* poll every future with dred_future_is_done until all are done */
    set_step("polling 64 futures with dred_future_is_done");
    double deadline = now_s() + wait_limit(90);
    long polls = 0;
    int ndone = 0;
    char done[NRED] = {0};
    while (ndone < NRED) {
        for (int t = 0; t < NRED; t++) {
            if (done[t]) continue;
            int d = dred_future_is_done(R[t].f);
            polls++;
            if (d == 1) { done[t] = 1; ndone++; }
            else if (d != 0) { fail("concurrent/tag/%d: is_done returned %d", t, d); done[t] = 1; ndone++; }
        }
        if (ndone < NRED && now_s() > deadline) {
            char buf[600];
            int k = 0;
            for (int t = 0; t < NRED && k < 500; t++)
                if (!done[t]) k += snprintf(buf + k, sizeof buf - (size_t)k, " %d", t);
            fail("concurrent/tag: %d of %d reductions not done after %.0f s; pending tags:%s",
                 NRED - ndone, NRED, wait_limit(90), buf);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    for (int t = 0; t < NRED; t++) {
        int a = dred_future_get(R[t].f), b = dred_future_get(R[t].f);
        if (a != b) fail("concurrent/tag/%d: dred_future_get returned %d then %d", t, a, b);
        R[t].st = a;
        dred_future_free(R[t].f);
    }
    if (g_rank == 0)
        printf("concurrent: 64 tagged reductions done in %.2f s after %ld is_done polls\n",
               now_s() - tp, polls);
    for (int t = 0; t < NRED; t++) verify(&R[t], "tag", t);

    /* ---- part 2: 64 DRED_TAG_AUTO calls, same order everywhere ---- */
    MPI_Barrier(g_comm);
    for (int t = 0; t < NRED; t++) plan(&R[t], 1000 + t, seed);
    set_step("issuing 64 DRED_TAG_AUTO dred_ireduce");
    tp = now_s();
    for (int t = 0; t < NRED; t++) {
        struct red *r = &R[t];
        r->st = dred_ireduce(r->s, r->rd, r->count, r->dt, r->op, r->root, g_comm,
                             DRED_TAG_AUTO, &r->f);
        if (r->st != DRED_OK) {
            fail("concurrent/auto/%d: dred_ireduce returned %d (%s)", t, r->st, dred_strerror(r->st));
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
    }
    for (int t = NRED - 1; t >= 0; t--) {
        char what[64];
        snprintf(what, sizeof what, "concurrent/auto/%d", t);
        set_step("waiting %s", what);
        R[t].st = wait_bounded(R[t].f, 90, what);
        dred_future_free(R[t].f);
    }
    if (g_rank == 0) printf("concurrent: 64 auto-tag reductions done in %.2f s\n", now_s() - tp);
    for (int t = 0; t < NRED; t++) verify(&R[t], "auto", t);

    /* ---- part 3: unbalanced arrival: 32 tagged reductions, every member sleeping a random
     * 0..10 ms before each call (after a random 0..40 ms start), waited in its own order ---- */
    MPI_Barrier(g_comm);
    enum { NSKEW = 32 };
    for (int t = 0; t < NSKEW; t++) plan(&R[t], 2000 + t, seed);
    uint64_t srng = mix64(seed ^ 0xa11 ^ (uint64_t)(g_rank + 1) * 0x9e37);
    for (int t = NSKEW - 1; t > 0; t--) {
        srng = mix64(srng);
        int j = (int)(srng % (uint64_t)(t + 1)), x = order[t];
        order[t] = order[j];
        order[j] = x;
    }
    int k2 = 0, sorder[NSKEW];
    for (int t = 0; t < NRED; t++) if (order[t] < NSKEW) sorder[k2++] = order[t];
    srng = mix64(srng);
    struct timespec ts0 = {0, (long)(srng % 40) * 1000000L};
    nanosleep(&ts0, NULL);
    set_step("issuing 32 tagged dred_ireduce with random delays");
    tp = now_s();
    for (int k = 0; k < NSKEW; k++) {
        struct red *r = &R[sorder[k]];
        srng = mix64(srng);
        struct timespec ts = {0, (long)(srng % 11) * 1000000L};
        nanosleep(&ts, NULL);
        r->st = dred_ireduce(r->s, r->rd, r->count, r->dt, r->op, r->root, g_comm, 200 + sorder[k], &r->f);
        if (r->st != DRED_OK) {
            fail("concurrent/skew/%d: dred_ireduce returned %d (%s)", sorder[k], r->st, dred_strerror(r->st));
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
    }
    for (int k = NSKEW - 1; k >= 0; k--) {
        char what[64];
        snprintf(what, sizeof what, "concurrent/skew/%d", sorder[k]);
        set_step("waiting %s", what);
        R[sorder[k]].st = wait_bounded(R[sorder[k]].f, 90, what);
        dred_future_free(R[sorder[k]].f);
    }
    if (g_rank == 0) printf("concurrent: 32 skewed reductions done in %.2f s\n", now_s() - tp);
    for (int t = 0; t < NSKEW; t++) verify(&R[t], "skew", t);

    /* ---- part 4: one tag reused back to back: tag 7 (its first use was part 1's) 24 more
     * times, each use with its own root, type, op and operands, members arriving 0..3 ms
     * apart: a member done with one use calls the next while others may still be in the
     * previous one, and every use must get its own operands ---- */
    enum { NREUSE = 24 };
    MPI_Barrier(g_comm);
    set_step("reusing tag 7");
    tp = now_s();
    for (int u = 0; u < NREUSE; u++) {
        struct red *r = &R[0];
        char what[64];
        plan(r, 3000 + u, seed);
        srng = mix64(srng);
        struct timespec ts = {0, (long)(srng % 4) * 1000000L};
        nanosleep(&ts, NULL);
        r->st = dred_ireduce(r->s, r->rd, r->count, r->dt, r->op, r->root, g_comm, 7, &r->f);
        if (r->st != DRED_OK) {
            fail("concurrent/reuse/%d: dred_ireduce returned %d (%s)", u, r->st, dred_strerror(r->st));
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
        snprintf(what, sizeof what, "concurrent/reuse/%d", u);
        r->st = wait_bounded(r->f, 90, what);
        dred_future_free(r->f);
        verify(r, "reuse", u);
    }
    if (g_rank == 0)
        printf("concurrent: tag 7 reused %d times in %.2f s\n", NREUSE, now_s() - tp);

    affine_free(&t_affine, &op_affine);
    return test_finish();
}
