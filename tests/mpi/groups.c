/*
 * groups.c -- reductions over process groups derived from dred_comm().
 *
 *   dredrun -n P mpi_groups [-s SEED]
 *
 * Communicators: even/odd ranks (MPI_Comm_split, natural key order); a split into
 * "rank % 3 == 0" / the rest with reversed key order; every member in a rotated order
 * (split with key (rank + P/2) % P); MPI_Comm_create_group of every other rank counted from
 * the top, listed in descending order; and an MPI_Comm_dup of dred_comm() (same members,
 * same order: it shares dred_comm()'s DRED_TAG_AUTO sequence, used strictly in turn).
 * On each: int SUM, double MAX, a non-commutative user op (affine-map composition), MAXLOC
 * on MPI_2INT and long long BXOR, random roots (same seed on every member), compared with
 * MPI_Reduce on the same sub-communicator.  Finally two reductions with the same explicit
 * tag on two overlapping groups are in flight at once.
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

static MPI_Datatype t_affine;
static MPI_Op op_affine;

enum { K_ISUM, K_DMAX, K_AFFINE, K_MAXLOC, K_BXOR, K_N };
static const char *kname[K_N] = {"int_sum", "double_max", "affine_noncomm", "2int_maxloc",
                                 "longlong_bxor"};

static void setup(int kind, MPI_Datatype *dt, MPI_Op *op, size_t *esz)
{
    switch (kind) {
    case K_ISUM: *dt = MPI_INT; *op = MPI_SUM; *esz = sizeof(int); break;
    case K_DMAX: *dt = MPI_DOUBLE; *op = MPI_MAX; *esz = sizeof(double); break;
    case K_AFFINE: *dt = t_affine; *op = op_affine; *esz = sizeof(struct affine); break;
    case K_MAXLOC: *dt = MPI_2INT; *op = MPI_MAXLOC; *esz = 2 * sizeof(int); break;
    default: *dt = MPI_LONG_LONG; *op = MPI_BXOR; *esz = sizeof(long long); break;
    }
}

static void gen(int kind, void *buf, int n, int wrank, uint64_t seed)
{
    for (int i = 0; i < n; i++) {
        uint64_t h = mix64(seed ^ ((uint64_t)wrank << 32) ^ (uint64_t)i);
        switch (kind) {
        case K_ISUM: ((int *)buf)[i] = (int)(h % 2001) - 1000; break;
        case K_DMAX: ((double *)buf)[i] = (double)((int64_t)(h % 200001) - 100000); break;
        case K_AFFINE: {
            struct affine *a = buf;
            a[i].a = 1 + (unsigned)(h % 5);
            a[i].b = (unsigned)((h >> 8) % 10);
            break;
        }
        case K_MAXLOC: ((int *)buf)[2 * i] = (int)(h % 4); ((int *)buf)[2 * i + 1] = wrank; break;
        default: ((long long *)buf)[i] = (long long)h; break;
        }
    }
}

/* one reduction on `comm` (this process is a member), checked against MPI_Reduce */
static void run_one(MPI_Comm comm, const char *cname, int kind, int n, int root, uint64_t seed)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    MPI_Datatype dt;
    MPI_Op op;
    size_t esz;
    setup(kind, &dt, &op, &esz);
    char check[160];
    snprintf(check, sizeof check, "groups/%s(p=%d)/%s/n=%d/root=%d", cname, p, kname[kind], n,
             root);
    void *s = malloc(esz * (size_t)n + 1), *rd = malloc(esz * (size_t)n + 1),
         *rm = malloc(esz * (size_t)n + 1);
    gen(kind, s, n, g_rank, seed);
    memset(rd, 0xA5, esz * (size_t)n);
    memset(rm, 0x5A, esz * (size_t)n);
    dred_future *f = NULL;
    set_step("%s", check);
    int st = dred_ireduce(s, r == root ? rd : NULL, n, dt, op, root, comm, DRED_TAG_AUTO, &f);
    if (st == DRED_OK) {
        st = wait_bounded(f, 30, check);
        dred_future_free(f);
    }
    ref_reduce(s, rm, n, dt, op, root, comm);
    int ok = 1;
    if (st != DRED_OK) {
        fail("%s: status %d (%s)", check, st, dred_strerror(st));
        ok = 0;
    } else if (r == root && memcmp(rd, rm, esz * (size_t)n)) {
        size_t i = 0;
        while (i < esz * (size_t)n && ((char *)rd)[i] == ((char *)rm)[i]) i++;
        fail("%s: result differs from the reference (ref_reduce) at element %zu", check, i / esz);
        ok = 0;
    }
    if (ok && r == root) pass("%s", check);
    free(s); free(rd); free(rm);
}

static void run_suite(MPI_Comm comm, const char *cname, uint64_t seed)
{
    static const int counts[] = {1, 13, 1000, 20000};
    int p;
    MPI_Comm_size(comm, &p);
    uint64_t rng = mix64(seed ^ 0xabcdef);
    for (int kind = 0; kind < K_N; kind++)
        for (int c = 0; c < 4; c++) {
            rng = mix64(rng);
            run_one(comm, cname, kind, counts[c], (int)(rng % (uint64_t)p),
                    mix64(rng ^ (uint64_t)kind));
        }
}

int main(int argc, char **argv)
{
    uint64_t seed = 777;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    test_init(&argc, &argv, "groups");
    affine_create(&t_affine, &op_affine);

    /* even / odd, natural order */
    MPI_Comm eo;
    MPI_Comm_split(g_comm, g_rank % 2, g_rank, &eo);
    run_suite(eo, g_rank % 2 ? "odd" : "even", seed + 1 + (uint64_t)(g_rank % 2));

    /* rank%3==0 / rest, reversed key order */
    MPI_Comm rev;
    int col = g_rank % 3 == 0;
    MPI_Comm_split(g_comm, col, g_size - g_rank, &rev);
    run_suite(rev, col ? "mod3_reversed" : "rest_reversed", seed + 10 + (uint64_t)col);

    /* everyone, rotated order */
    MPI_Comm rot;
    MPI_Comm_split(g_comm, 0, (g_rank + g_size / 2) % g_size, &rot);
    run_suite(rot, "all_rotated", seed + 20);

    /* MPI_Comm_create_group: every other rank from the top, descending */
    MPI_Group world_g, sub_g;
    MPI_Comm_group(g_comm, &world_g);
    int nm = 0, *members = malloc(sizeof(int) * (size_t)g_size);
    for (int r = g_size - 1; r >= 0; r -= 2) members[nm++] = r;
    MPI_Group_incl(world_g, nm, members, &sub_g);
    int in_cg = (g_size - 1 - g_rank) % 2 == 0;
    MPI_Comm cg = MPI_COMM_NULL;
    if (in_cg) {
        MPI_Comm_create_group(g_comm, sub_g, 7, &cg);
        run_suite(cg, "create_group_desc", seed + 30);
    }

    /* a dup of dred_comm(): same group, shares the auto-tag sequence; used in turn */
    MPI_Comm dup;
    MPI_Comm_dup(g_comm, &dup);
    run_one(dup, "dup", K_ISUM, 500, g_size - 1, seed + 40);
    run_one(g_comm, "dred_comm", K_DMAX, 500, 0, seed + 41);
    run_one(dup, "dup", K_AFFINE, 500, g_size / 2, seed + 42);

    /* two reductions with the same explicit tag on overlapping groups, in flight at once */
    {
        const int n = 4096, tag = 5;
        /* at P=1 both groups are {0}: the same group, so the second needs its own tag */
        const int tag2 = g_size == 1 ? 6 : 5;
        int er, ep, rr, rp;
        MPI_Comm_rank(eo, &er); MPI_Comm_size(eo, &ep);
        MPI_Comm_rank(rot, &rr); MPI_Comm_size(rot, &rp);
        int *s1 = malloc(sizeof(int) * n), *s2 = malloc(sizeof(int) * n);
        int *d1 = malloc(sizeof(int) * n), *d2 = malloc(sizeof(int) * n);
        int *m1 = malloc(sizeof(int) * n), *m2 = malloc(sizeof(int) * n);
        gen(K_ISUM, s1, n, g_rank, seed + 50);
        gen(K_ISUM, s2, n, g_rank, seed + 51);
        dred_future *f1 = NULL, *f2 = NULL;
        set_step("overlap: ireduce on rotated then even/odd");
        /* opposite issue orders on even and odd ranks */
        int st1, st2;
        if (g_rank % 2) {
            st2 = dred_ireduce(s2, d2, n, MPI_INT, MPI_SUM, rp - 1, rot, tag2, &f2);
            st1 = dred_ireduce(s1, d1, n, MPI_INT, MPI_SUM, 0, eo, tag, &f1);
        } else {
            st1 = dred_ireduce(s1, d1, n, MPI_INT, MPI_SUM, 0, eo, tag, &f1);
            st2 = dred_ireduce(s2, d2, n, MPI_INT, MPI_SUM, rp - 1, rot, tag2, &f2);
        }
        if (st1 == DRED_OK) { st1 = wait_bounded(f1, 30, "groups/overlap/eo"); dred_future_free(f1); }
        if (st2 == DRED_OK) { st2 = wait_bounded(f2, 30, "groups/overlap/rot"); dred_future_free(f2); }
        ref_reduce(s1, m1, n, MPI_INT, MPI_SUM, 0, eo);
        ref_reduce(s2, m2, n, MPI_INT, MPI_SUM, rp - 1, rot);
        if (st1 != DRED_OK) fail("groups/overlap/even_odd tag 5: status %d", st1);
        else if (er == 0) {
            if (memcmp(d1, m1, sizeof(int) * n)) fail("groups/overlap/even_odd tag 5: wrong result");
            else pass("groups/overlap/%s tag 5 (concurrent with all_rotated tag 5)", g_rank % 2 ? "odd" : "even");
        }
        if (st2 != DRED_OK) fail("groups/overlap/all_rotated tag %d: status %d", tag2, st2);
        else if (rr == rp - 1) {
            if (memcmp(d2, m2, sizeof(int) * n)) fail("groups/overlap/all_rotated tag 5: wrong result");
            else pass("groups/overlap/all_rotated tag %d (concurrent with even/odd tag 5)", tag2);
        }
        (void)ep;
        free(s1); free(s2); free(d1); free(d2); free(m1); free(m2);
    }

    MPI_Comm_free(&dup);
    if (cg != MPI_COMM_NULL) MPI_Comm_free(&cg);
    MPI_Group_free(&sub_g);
    MPI_Group_free(&world_g);
    free(members);
    MPI_Comm_free(&rot);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&eo);
    affine_free(&t_affine, &op_affine);
    return test_finish();
}
