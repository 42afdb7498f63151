/*
 * allocmem.c -- reductions from dred_alloc_mem blocks (zero copy), and the calls' errors.
 *
 *   dredrun -n P mpi_allocmem [-s SEED] [--quick]
 *
 * Operands live in blocks of the node's shared pool (dred_alloc_mem), so a non-root
 * member's dred_ireduce reads them in place instead of copying them.  Checked, every result
 * against ref_reduce (tests/mpi/mpitest.c: MPI_Reduce_local in rank order), bit for bit:
 *   1. blocking: MPI_SUM (integer-valued doubles), MPI_PROD (small ints), MPI_MAX (floats)
 *      and the non-commutative affine user op, counts 1, 7, 1000, 12345, 999999 and
 *      8 MiB + 1 element, roots 0, P-1, P/2; every rank's sendbuf is a pool block (the
 *      root's too), some at an offset inside their block, and some roots receive into a
 *      pool block;
 *   2. nonblocking: 6 reductions in flight (different ops, roots, sizes), from one block
 *      each or from slices of one shared block, waited in reverse order;
 *   3. a block freed (dred_free_mem) while its reduction is pending, and a new block
 *      allocated and scribbled at once: the free is deferred, the result stays exact;
 *   4. the pool nearly full of application blocks: the reduction's own buffers no longer
 *      fit the pool and fall back to private memory, the result stays exact;
 * and after each: every sendbuf is unchanged (dred never writes the application's send
 * buffer) and a non-root recvbuf is untouched.  Bad calls: NULL ptr, size 0, sizes beyond
 * the pool (DRED_ERR_ARG / DRED_ERR_NOMEM), dred_free_mem of NULL, of a malloc'd pointer,
 * of a stack address, of a pointer inside a block, twice (DRED_ERR_ARG); after
 * dred_finalize both calls return DRED_ERR_SHUTDOWN.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dred.h"
#include "mpitest.h"

enum { K_SUM, K_PROD, K_MAX, K_AFFINE, K_N };
static const char *kname[K_N] = {"double_sum", "int_prod", "float_max", "affine_noncomm"};
static MPI_Datatype t_affine;
static MPI_Op op_affine;

static size_t esize(int k)
{
    return k == K_SUM ? sizeof(double) : k == K_PROD ? sizeof(int)
         : k == K_MAX ? sizeof(float) : sizeof(struct affine);
}
static MPI_Datatype ktype(int k)
{
    return k == K_SUM ? MPI_DOUBLE : k == K_PROD ? MPI_INT : k == K_MAX ? MPI_FLOAT : t_affine;
}
static MPI_Op kop(int k)
{
    return k == K_SUM ? MPI_SUM : k == K_PROD ? MPI_PROD : k == K_MAX ? MPI_MAX : op_affine;
}

/* Values whose reduction is exact in any order: integers well inside the types' ranges
 * (a product of P factors in {-2..2} \ {0}, with most of them +-1). */
static void gen(int k, void *buf, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t h = mix64(seed ^ ((uint64_t)g_rank << 40) ^ (uint64_t)i);
        switch (k) {
        case K_SUM: ((double *)buf)[i] = (double)((int64_t)(h % 2000001) - 1000000); break;
        case K_PROD: {
            static const int f[8] = {1, -1, 1, 1, -1, 2, 1, -2};
            ((int *)buf)[i] = f[h % 8];
            break;
        }
        case K_MAX: ((float *)buf)[i] = (float)((int)(h % 200001) - 100000); break;
        default:
            ((struct affine *)buf)[i].a = 1 + (unsigned)(h % 5);
            ((struct affine *)buf)[i].b = (unsigned)((h >> 9) % 7);
            break;
        }
    }
}

static void *alloc_or_die(size_t bytes, const char *what)
{
    void *p = NULL;
    int st = dred_alloc_mem(bytes, &p);
    if (st != DRED_OK || p == NULL) {
        fail("%s: dred_alloc_mem(%zu) returned %d (%s)", what, bytes, st, dred_strerror(st));
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if ((uintptr_t)p % 64 != 0) fail("%s: dred_alloc_mem gave %p, not 64-byte aligned", what, p);
    return p;
}

static void free_checked(void *p, const char *what)
{
    int st = dred_free_mem(p);
    if (st != DRED_OK) fail("%s: dred_free_mem returned %d (%s)", what, st, dred_strerror(st));
}

/* One reduction in flight: where its operand and result are, and what they must be. */
typedef struct {
    int k, root;
    size_t n;
    char *send;       /* the operand (inside a pool block, maybe at an offset) */
    unsigned char *copy; /* private copy of the operand, for the reference and the check */
    char *recv;       /* the root's result (pool block or malloc), a non-root's sentinel */
    dred_future *f;
    char what[160];
} red_t;

static void red_start(red_t *r)
{
    int st;
    size_t bytes = esize(r->k) * r->n;
    r->copy = malloc(bytes);
    memcpy(r->copy, r->send, bytes);
    if (g_rank != r->root) memset(r->recv, 0x77, bytes);
    set_step("%s", r->what);
    r->f = NULL;
    st = dred_ireduce(r->send, r->recv, (int)r->n, ktype(r->k), kop(r->k), r->root, g_comm,
                      DRED_TAG_AUTO, &r->f);
    if (st != DRED_OK) {
        fail("%s: dred_ireduce returned %d (%s)", r->what, st, dred_strerror(st));
        r->f = NULL;
    }
}

/* Wait (collective: ref_reduce), then compare.  `check_send`: the sendbuf is still the
 * application's (not freed while pending) and must be unchanged. */
static void red_finish(red_t *r, int check_send)
{
    size_t bytes = esize(r->k) * r->n, i;
    int st = DRED_ERR_INTERNAL, ok = 1;
    unsigned char *ref = g_rank == r->root ? malloc(bytes) : NULL;
    set_step("%s (wait)", r->what);
    if (r->f != NULL) {
        st = wait_bounded(r->f, 120, r->what);
        dred_future_free(r->f);
        r->f = NULL;
    }
    set_step("%s (reference)", r->what);
    ref_reduce(r->copy, ref, (int)r->n, ktype(r->k), kop(r->k), r->root, g_comm);
    if (st != DRED_OK) {
        fail("%s: status %d (%s)", r->what, st, dred_strerror(st));
        ok = 0;
    } else if (g_rank == r->root && memcmp(r->recv, ref, bytes) != 0) {
        for (i = 0; i < bytes && ((unsigned char *)r->recv)[i] == ref[i]; i++) {
        }
        fail("%s: result differs from the reference at byte %zu", r->what, i);
        ok = 0;
    }
    if (check_send && memcmp(r->send, r->copy, bytes) != 0) {
        fail("%s: the sendbuf (a dred_alloc_mem block) was modified", r->what);
        ok = 0;
    }
    if (g_rank != r->root)
        for (i = 0; i < bytes && ok; i++)
            if (((unsigned char *)r->recv)[i] != 0x77) {
                fail("%s: non-root recvbuf written (byte %zu)", r->what, i);
                ok = 0;
            }
    /* every rank's verdict: a modified sendbuf shows on non-roots only */
    {
        int all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, g_comm);
        if (all && g_rank == 0) pass("%s", r->what);
    }
    free(r->copy);
    free(ref);
    r->copy = NULL;
}

/* 1. blocking-shaped (one at a time), every op x count x root */
static void part_blocking(uint64_t seed, int quick)
{
    static const size_t counts[] = {1, 7, 1000, 12345, 999999, (8u << 20) / 8 + 1};
    int roots[3] = {0, g_size - 1, g_size / 2}, nroots = g_size > 2 ? 3 : g_size;
    size_t nc = sizeof counts / sizeof counts[0];
    for (int ri = 0; ri < nroots; ri++)
        for (int k = 0; k < K_N; k++)
            for (size_t c = 0; c < nc; c++) {
                red_t r;
                size_t n = counts[c], bytes = esize(k) * n;
                /* big ones: every op at root 0, SUM at every root (time on 2 cores) */
                if (n > 100000 && ri > 0 && k != K_SUM) continue;
                if (quick && n > 100000 && !(ri == 0 && k == K_SUM)) continue;
                /* odd cases: the operand at an offset inside a larger block */
                size_t shift = (c % 2) ? 3 * esize(k) : 0;
                char *blk = alloc_or_die(bytes + shift + 40, "blocking");
                char *rblk = NULL;
                memset(&r, 0, sizeof r);
                r.k = k;
                r.root = roots[ri];
                r.n = n;
                r.send = blk + shift;
                gen(k, r.send, n, mix64(seed + (uint64_t)(ri * 1000 + k * 100 + (int)c)));
                /* the root receives into a pool block every other case */
                if (g_rank == r.root && (c % 2) == 0)
                    r.recv = rblk = alloc_or_die(bytes, "blocking recv");
                else
                    r.recv = malloc(bytes);
                snprintf(r.what, sizeof r.what, "blocking/%s/n=%zu/root=%d%s%s", kname[k], n,
                         r.root, shift ? "/inside-block" : "", rblk ? "/recv-in-pool" : "");
                red_start(&r);
                red_finish(&r, 1);
                if (rblk) free_checked(rblk, r.what); else free(r.recv);
                free_checked(blk, r.what);
            }
}

/* 2. several in flight: own blocks and slices of one shared block */
static void part_nonblocking(uint64_t seed)
{
    enum { NR = 6 };
    static const size_t counts[NR] = {4097, 100001, 333, 65536, 1048577, 25};
    red_t r[NR];
    char *shared = NULL, *own[NR] = {0};
    size_t shared_bytes = 0, off[NR];
    /* reductions 0, 2, 4 take slices of one block; 1, 3, 5 have blocks of their own */
    for (int j = 0; j < NR; j += 2) {
        off[j] = shared_bytes;
        shared_bytes += (esize(j % K_N) * counts[j] + 63) & ~(size_t)63;
    }
    shared = alloc_or_die(shared_bytes, "nonblocking shared");
    for (int j = 0; j < NR; j++) {
        int k = j % K_N;
        size_t bytes = esize(k) * counts[j];
        memset(&r[j], 0, sizeof r[j]);
        r[j].k = k;
        r[j].n = counts[j];
        r[j].root = (j * 3) % g_size;
        r[j].send = (j % 2 == 0) ? shared + off[j] : (own[j] = alloc_or_die(bytes, "nonblocking"));
        gen(k, r[j].send, counts[j], mix64(seed + 7000 + (uint64_t)j));
        r[j].recv = malloc(bytes);
        snprintf(r[j].what, sizeof r[j].what, "nonblocking/%d-in-flight/%s/n=%zu/root=%d%s", NR,
                 kname[k], counts[j], r[j].root, j % 2 == 0 ? "/slice" : "");
    }
    for (int j = 0; j < NR; j++) red_start(&r[j]);
    for (int j = NR - 1; j >= 0; j--) red_finish(&r[j], 1);
    for (int j = 0; j < NR; j++) {
        free(r[j].recv);
        if (own[j]) free_checked(own[j], r[j].what);
    }
    free_checked(shared, "nonblocking shared");
}

/* 3. freed while pending: deferred, never reused under the reduction */
static void part_free_pending(uint64_t seed)
{
    red_t r;
    size_t n = 2u << 20, bytes = n * sizeof(double);
    char *blk = alloc_or_die(bytes, "free-pending");
    memset(&r, 0, sizeof r);
    r.k = K_SUM;
    r.n = n;
    r.root = g_size - 1;
    r.send = blk;
    gen(K_SUM, blk, n, mix64(seed + 9000));
    r.recv = malloc(bytes);
    snprintf(r.what, sizeof r.what, "free-while-pending/double_sum/n=%zu/root=%d", n, r.root);
    red_start(&r);
    /* the application gives the block back at once and takes a new one of the same size:
     * if dred let the pool reuse the pending block, the scribble would change the result */
    free_checked(blk, r.what);
    {
        char *again = alloc_or_die(bytes, "free-pending realloc");
        memset(again, 0xA5, bytes);
        red_finish(&r, 0);
        free_checked(again, r.what);
    }
    free(r.recv);
    /* the deferred free happened: a second free of it is an error */
    if (dred_free_mem(blk) != DRED_ERR_ARG) fail("free-while-pending: second free accepted");
}

/* 4. the pool nearly full of application blocks */
static void part_pool_full(uint64_t seed)
{
    enum { MAXB = 64 };
    void *hog[MAXB];
    int nh = 0;
    red_t r;
    size_t n = 262147, bytes = n * sizeof(double), s;
    char *blk = alloc_or_die(bytes, "pool-full");
    /* take what is left, largest pieces first, down to 4 KiB */
    for (s = (size_t)1 << 30; s >= 4096 && nh < MAXB;) {
        void *p = NULL;
        if (dred_alloc_mem(s, &p) == DRED_OK) hog[nh++] = p;
        else s /= 2;
    }
    memset(&r, 0, sizeof r);
    r.k = K_SUM;
    r.n = n;
    r.root = 0;
    r.send = blk;
    gen(K_SUM, blk, n, mix64(seed + 9500));
    r.recv = malloc(bytes);
    snprintf(r.what, sizeof r.what, "pool-full/double_sum/n=%zu/root=0 (%d hog blocks)", n, nh);
    red_start(&r);
    red_finish(&r, 1);
    free(r.recv);
    for (int i = 0; i < nh; i++) free_checked(hog[i], "pool-full hog");
    free_checked(blk, "pool-full");
}

static void expect(int got, int want, const char *what)
{
    if (got != want)
        fail("bad call %s: returned %d (%s), expected %d (%s)", what, got, dred_strerror(got),
             want, dred_strerror(want));
    else if (g_rank == 0)
        pass("bad call %s -> %s", what, dred_strerror(want));
}

static void part_bad_calls(void)
{
    void *p = (void *)&p, *q = NULL;
    char *b, *heap = malloc(64);
    int local;
    set_step("bad calls");
    expect(dred_alloc_mem(64, NULL), DRED_ERR_ARG, "dred_alloc_mem(64, NULL)");
    expect(dred_alloc_mem(0, &p), DRED_ERR_ARG, "dred_alloc_mem(0)");
    if (p != NULL) fail("dred_alloc_mem(0): *ptr not set to NULL");
    expect(dred_alloc_mem(SIZE_MAX, &q), DRED_ERR_NOMEM, "dred_alloc_mem(SIZE_MAX)");
    expect(dred_alloc_mem((size_t)1 << 40, &q), DRED_ERR_NOMEM, "dred_alloc_mem(1 TiB)");
    expect(dred_free_mem(NULL), DRED_ERR_ARG, "dred_free_mem(NULL)");
    expect(dred_free_mem(heap), DRED_ERR_ARG, "dred_free_mem(malloc'd)");
    expect(dred_free_mem(&local), DRED_ERR_ARG, "dred_free_mem(stack address)");
    b = alloc_or_die(4096, "bad calls");
    expect(dred_free_mem(b + 64), DRED_ERR_ARG, "dred_free_mem(inside a block)");
    expect(dred_free_mem(b), DRED_OK, "dred_free_mem(block)");
    expect(dred_free_mem(b), DRED_ERR_ARG, "dred_free_mem(block) twice");
    free(heap);
}

int main(int argc, char **argv)
{
    uint64_t seed = 4242;
    int quick = 0, rc;
    void *p = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--quick")) quick = 1;
    }
    test_init(&argc, &argv, "allocmem");
    affine_create(&t_affine, &op_affine);
    part_bad_calls();
    part_blocking(seed, quick);
    part_nonblocking(seed);
    part_free_pending(seed);
    part_pool_full(seed);
    part_bad_calls(); /* the registry is in order after all that */
    affine_free(&t_affine, &op_affine);
    rc = test_finish();
    /* outside dred_init..dred_finalize */
    if (dred_alloc_mem(64, &p) != DRED_ERR_SHUTDOWN || dred_free_mem(&p) != DRED_ERR_SHUTDOWN) {
        printf("FAIL allocmem: dred_alloc_mem/dred_free_mem after dred_finalize did not return "
               "DRED_ERR_SHUTDOWN [rank %d]\n", g_rank);
        rc = 1;
    }
    return rc;
}
