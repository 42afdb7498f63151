/*
 * noncomm.c -- non-commutative and user-defined ops, and MAXLOC/MINLOC tie rules.
 *
 *   dredrun -n P mpi_noncomm [-s SEED] [--noncomm-only]
 *
 * --noncomm-only runs the non-commutative ops (1 and 2) alone: on simulated nodes a run
 * whose log shows node partials then shows them folded under those ops.
 * 1. 2x2 matrix product (unsigned, mod 2^32) on a contiguous type of 4 unsigned, from
 *    MPI_Op_create(commute = 0): the result must be M_0 * M_1 * ... * M_{P-1} in rank order.
 * 2. Composition of affine maps x -> a*x + b (non-commutative, associative).
 * 3. MPI_MAXLOC / MPI_MINLOC on MPI_DOUBLE_INT with ties: equal values on several members,
 *    indices deliberately not in rank order; MPI's rule is the lowest index wins.
 * 4. A commutative user op (element-wise max of |x| on int, commute = 1).
 * Every result is compared with MPI_Reduce on dred_comm() AND with the value computed
 * independently at the root from every member's (deterministic) input.  Roots 0, P-1, P/2
 * and a random one; counts 1, 100, 5000.
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

struct mat { unsigned m[4]; };     /* row-major 2x2 */
struct di { double v; int i; };

static void mat_mul(const struct mat *x, const struct mat *y, struct mat *out)
{
    struct mat r;
    r.m[0] = x->m[0] * y->m[0] + x->m[1] * y->m[2];
    r.m[1] = x->m[0] * y->m[1] + x->m[1] * y->m[3];
    r.m[2] = x->m[2] * y->m[0] + x->m[3] * y->m[2];
    r.m[3] = x->m[2] * y->m[1] + x->m[3] * y->m[3];
    *out = r;
}
/* MPI: inout = in op inout, `in` holding the lower ranks' operand */
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    struct mat *a = in, *b = inout;
    for (int k = 0; k < *len; k++) mat_mul(&a[k], &b[k], &b[k]);
}
static void affine_then(const struct affine *f, const struct affine *g, struct affine *out)
{
    struct affine r = {f->a * g->a, g->a * f->b + g->b}; /* g(f(x)) */
    *out = r;
}
static void maxabs_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++) {
        int x = abs(a[k]), y = abs(b[k]);
        b[k] = x > y ? x : y;
    }
}

static uint64_t g_seed;
static uint64_t eh(int kind, int rank, int i)
{
    return mix64(g_seed ^ ((uint64_t)kind << 56) ^ ((uint64_t)rank << 32) ^ (uint64_t)i);
}

enum { K_MAT, K_AFFINE, K_MAXLOC, K_MINLOC, K_MAXABS, K_N };
static const char *kname[K_N] = {"matmul2x2", "affine", "double_int_maxloc_ties",
                                 "double_int_minloc_ties", "user_commutative_maxabs"};
static MPI_Datatype t_mat, t_affine;
static MPI_Op op_mat, op_affine, op_maxabs;

static size_t esize(int kind)
{
    switch (kind) {
    case K_MAT: return sizeof(struct mat);
    case K_AFFINE: return sizeof(struct affine);
    case K_MAXLOC: case K_MINLOC: return sizeof(struct di);
    default: return sizeof(int);
    }
}

static void gen(int kind, int rank, int p, void *buf, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t h = eh(kind, rank, i);
        switch (kind) {
        case K_MAT: {
            struct mat *m = &((struct mat *)buf)[i];
            for (int k = 0; k < 4; k++) m->m[k] = (unsigned)((h >> (8 * k)) % 4);
            break;
        }
        case K_AFFINE:
            ((struct affine *)buf)[i].a = 1 + (unsigned)(h % 6);
            ((struct affine *)buf)[i].b = (unsigned)((h >> 8) % 9);
            break;
        case K_MAXLOC: case K_MINLOC: {
            struct di *d = &((struct di *)buf)[i];
            /* element i%3==0: every member ties; otherwise values in 0..2 (frequent ties) */
            d->v = i % 3 == 0 ? 1.0 : (double)(h % 3);
            /* indices not in rank order: the highest rank holds the lowest index */
            d->i = (p - rank) * 10 + (int)(h >> 40) % 3;
            break;
        }
        default: ((int *)buf)[i] = (int)(h % 2001) - 1000; break;
        }
    }
}

static void expected(int kind, int p, void *out, int n)
{
    size_t es = esize(kind);
    unsigned char *tmp = malloc(es * (size_t)n);
    gen(kind, 0, p, out, n);
    for (int r = 1; r < p; r++) {
        gen(kind, r, p, tmp, n);
        for (int i = 0; i < n; i++) {
            switch (kind) {
            case K_MAT: {
                struct mat *acc = &((struct mat *)out)[i];
                mat_mul(acc, &((struct mat *)tmp)[i], acc); /* acc = acc * M_r */
                break;
            }
            case K_AFFINE: {
                struct affine *acc = &((struct affine *)out)[i];
                affine_then(acc, &((struct affine *)tmp)[i], acc);
                break;
            }
            case K_MAXLOC: case K_MINLOC: {
                struct di *acc = &((struct di *)out)[i], *x = &((struct di *)tmp)[i];
                int better = kind == K_MAXLOC ? x->v > acc->v : x->v < acc->v;
                if (better || (x->v == acc->v && x->i < acc->i)) *acc = *x;
                break;
            }
            default: {
                int *acc = &((int *)out)[i], x = abs(((int *)tmp)[i]);
                if (r == 1) *acc = abs(*acc);
                if (x > *acc) *acc = x;
                break;
            }
            }
        }
    }
    /* (P = 1: the operand itself; MPI never applies the op) */
    free(tmp);
}

static int same(int kind, const void *a, const void *b, int n)
{
    if (kind == K_MAXLOC || kind == K_MINLOC) {
        const struct di *x = a, *y = b;
        for (int i = 0; i < n; i++)
            if (x[i].v != y[i].v || x[i].i != y[i].i) return 0;
        return 1;
    }
    return memcmp(a, b, esize(kind) * (size_t)n) == 0;
}

/* arrival skews: 0 none; 1 reverse rank order; 2 a random order; 3 odd ranks first, then
 * even; 4 the two ends first, the middle last.  A member sleeps before its dred_ireduce. */
static const char *skew_name[5] = {"", "/arrive_reversed", "/arrive_random", "/arrive_odd_first",
                                   "/arrive_ends_first"};
static void arrive(int skew)
{
    if (skew == 0 || g_size == 1) return;
    int slot = 0;
    switch (skew) {
    case 1: slot = g_size - 1 - g_rank; break;
    case 2: {
        int *perm = malloc(sizeof(int) * (size_t)g_size);
        for (int r = 0; r < g_size; r++) perm[r] = r;
        uint64_t h = mix64(g_seed ^ 0x5eed);
        for (int r = g_size - 1; r > 0; r--) {
            h = mix64(h);
            int j = (int)(h % (uint64_t)(r + 1)), x = perm[r];
            perm[r] = perm[j];
            perm[j] = x;
        }
        slot = perm[g_rank];
        free(perm);
        break;
    }
    case 3: slot = g_rank % 2 ? 0 : 1; break;
    default: {
        int d1 = g_rank, d2 = g_size - 1 - g_rank;
        slot = d1 < d2 ? d1 : d2;
        break;
    }
    }
    struct timespec ts = {0, 20000000L * slot}; /* 20 ms per slot */
    while (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    nanosleep(&ts, NULL);
}

static void run_skew(int kind, int n, int root, int skew)
{
    MPI_Datatype dt;
    MPI_Op op;
    switch (kind) {
    case K_MAT: dt = t_mat; op = op_mat; break;
    case K_AFFINE: dt = t_affine; op = op_affine; break;
    case K_MAXLOC: dt = MPI_DOUBLE_INT; op = MPI_MAXLOC; break;
    case K_MINLOC: dt = MPI_DOUBLE_INT; op = MPI_MINLOC; break;
    default: dt = MPI_INT; op = op_maxabs; break;
    }
    size_t bytes = esize(kind) * (size_t)n;
    void *s = malloc(bytes), *rd = malloc(bytes), *rm = malloc(bytes), *ex = malloc(bytes);
    gen(kind, g_rank, g_size, s, n);
    memset(rd, 0xA5, bytes);
    memset(rm, 0x5A, bytes);
    char check[160];
    snprintf(check, sizeof check, "noncomm/%s/n=%d/root=%d%s", kname[kind], n, root, skew_name[skew]);
    set_step("%s", check);
    MPI_Barrier(g_comm);
    arrive(skew);
    dred_future *f = NULL;
    int st = dred_ireduce(s, rd, n, dt, op, root, g_comm, DRED_TAG_AUTO, &f);
    if (st == DRED_OK) {
        st = wait_bounded(f, 30, check);
        dred_future_free(f);
    }
    ref_reduce(s, rm, n, dt, op, root, g_comm);
    if (st != DRED_OK) {
        fail("%s: status %d (%s)", check, st, dred_strerror(st));
    } else if (g_rank == root) {
        expected(kind, g_size, ex, n);
        if (!same(kind, rm, ex, n))
            fail("%s: TEST BUG? ref_reduce disagrees with the locally computed value", check);
        else if (!same(kind, rd, ex, n)) {
            int i = 0;
            while (i < n && same(kind, (char *)rd + esize(kind) * (size_t)i,
                                 (char *)ex + esize(kind) * (size_t)i, 1))
                i++;
            fail("%s: dred result differs from the rank-order result at element %d", check, i);
        } else
            pass("%s", check);
    }
    free(s); free(rd); free(rm); free(ex);
}

static void run(int kind, int n, int root)
{
    run_skew(kind, n, root, 0);
}

int main(int argc, char **argv)
{
    int noncomm_only = 0;
    g_seed = 99;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-s") && i + 1 < argc) g_seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--noncomm-only")) noncomm_only = 1;
    test_init(&argc, &argv, "noncomm");
    MPI_Type_contiguous(4, MPI_UNSIGNED, &t_mat);
    MPI_Type_commit(&t_mat);
    MPI_Type_contiguous(2, MPI_UNSIGNED, &t_affine);
    MPI_Type_commit(&t_affine);
    MPI_Op_create(mat_op, 0, &op_mat);
    MPI_Op_create(affine_op, 0, &op_affine);
    MPI_Op_create(maxabs_op, 1, &op_maxabs);

    int roots[4] = {0, g_size - 1, g_size / 2, (int)(mix64(g_seed) % (uint64_t)g_size)};
    static const int counts[3] = {1, 100, 5000};
    for (int kind = 0; kind < (noncomm_only ? K_AFFINE + 1 : K_N); kind++)
        for (int ri = 0; ri < 4; ri++)
            for (int c = 0; c < 3; c++) run(kind, counts[c], roots[ri]);
    /* the same under skewed arrival orders: the pairing must keep rank order whatever
     * order the operands arrive in */
    for (int skew = 1; skew <= 4; skew++)
        for (int kind = K_MAT; kind <= K_AFFINE; kind++) {
            run_skew(kind, 1000, roots[skew % 4], skew);
            run_skew(kind, 7, roots[(skew + 1) % 4], skew);
        }
    if (!noncomm_only) {
        run_skew(K_MAXLOC, 1000, roots[1], 1);
        run_skew(K_MINLOC, 1000, roots[2], 2);
    }
    /* one large non-commutative reduction (may be split/pipelined inside dred) */
    run_skew(K_MAT, 100000, roots[3], 2);

    MPI_Op_free(&op_mat);
    MPI_Op_free(&op_affine);
    MPI_Op_free(&op_maxabs);
    MPI_Type_free(&t_mat);
    MPI_Type_free(&t_affine);
    return test_finish();
}
