/*
 * inplace.c -- MPI_IN_PLACE at the root.
 *
 *   dredrun -n P mpi_inplace [-s SEED]
 *
 * The root passes MPI_IN_PLACE as sendbuf with its operand in recvbuf, for root 0, root P-1
 * and root P/2, with int SUM, double MAX, a non-commutative user op (affine maps) and
 * MPI_DOUBLE_INT MINLOC, counts 1, 1000, 50000.  The expected value comes from MPI_Reduce
 * WITHOUT MPI_IN_PLACE (separate send and receive buffers): MPICH 4.0.2 here segfaults on
 * MPI_Reduce with MPI_IN_PLACE at a non-zero root.  Non-roots also pass a recvbuf that must
 * stay untouched, and every non-root sendbuf must be unchanged.
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

struct di { double v; int i; };
enum { K_ISUM, K_DMAX, K_AFFINE, K_MINLOC, K_N };
static const char *kname[K_N] = {"int_sum", "double_max", "affine_noncomm", "double_int_minloc"};
static MPI_Datatype t_affine;
static MPI_Op op_affine;

static size_t esize(int k)
{
    return k == K_ISUM ? sizeof(int) : k == K_DMAX ? sizeof(double)
         : k == K_AFFINE ? sizeof(struct affine) : sizeof(struct di);
}

static void gen(int k, void *buf, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++) {
        uint64_t h = mix64(seed ^ ((uint64_t)g_rank << 36) ^ (uint64_t)i);
        switch (k) {
        case K_ISUM: ((int *)buf)[i] = (int)(h % 1001) - 500; break;
        case K_DMAX: ((double *)buf)[i] = (double)((int)(h % 100001) - 50000); break;
        case K_AFFINE:
            ((struct affine *)buf)[i].a = 1 + (unsigned)(h % 5);
            ((struct affine *)buf)[i].b = (unsigned)((h >> 9) % 7);
            break;
        default:
            ((struct di *)buf)[i].v = (double)(h % 3);
            ((struct di *)buf)[i].i = (int)((h >> 20) % 4) + g_rank;
            break;
        }
    }
}

static void run(int k, int n, int root, uint64_t seed)
{
    MPI_Datatype dt = k == K_ISUM ? MPI_INT : k == K_DMAX ? MPI_DOUBLE
                    : k == K_AFFINE ? t_affine : MPI_DOUBLE_INT;
    MPI_Op op = k == K_ISUM ? MPI_SUM : k == K_DMAX ? MPI_MAX : k == K_AFFINE ? op_affine : MPI_MINLOC;
    size_t bytes = esize(k) * (size_t)n;
    unsigned char *mine = malloc(bytes), *copy = malloc(bytes), *rbuf = malloc(bytes),
                  *rm = malloc(bytes);
    memset(mine, 0, bytes); /* defined padding */
    gen(k, mine, n, seed);
    memcpy(copy, mine, bytes);
    memset(rm, 0x5A, bytes);
    char check[160];
    snprintf(check, sizeof check, "inplace/%s/n=%d/root=%d", kname[k], n, root);
    set_step("%s", check);
    dred_future *f = NULL;
    int st;
    if (g_rank == root) {
        memcpy(rbuf, mine, bytes);
        st = dred_ireduce(MPI_IN_PLACE, rbuf, n, dt, op, root, g_comm, DRED_TAG_AUTO, &f);
    } else {
        memset(rbuf, 0x77, bytes);
        st = dred_ireduce(mine, rbuf, n, dt, op, root, g_comm, DRED_TAG_AUTO, &f);
    }
    if (st == DRED_OK) {
        st = wait_bounded(f, 30, check);
        dred_future_free(f);
    }
    /* expected: MPI_Reduce with separate buffers (never MPI_IN_PLACE, see above) */
    ref_reduce(copy, rm, n, dt, op, root, g_comm);
    int ok = 1;
    if (st != DRED_OK) {
        fail("%s: status %d (%s)", check, st, dred_strerror(st));
        ok = 0;
    } else if (g_rank == root) {
        int good = 1;
        if (k == K_MINLOC) {
            const struct di *a = (void *)rbuf, *b = (void *)rm;
            for (int i = 0; i < n && good; i++) good = a[i].v == b[i].v && a[i].i == b[i].i;
        } else
            good = !memcmp(rbuf, rm, bytes);
        if (!good) { fail("%s: in-place result differs from the reference (ref_reduce)", check); ok = 0; }
    } else {
        if (memcmp(mine, copy, bytes)) { fail("%s: non-root sendbuf modified", check); ok = 0; }
        for (size_t i = 0; i < bytes && ok; i++)
            if (rbuf[i] != 0x77) { fail("%s: non-root recvbuf written (byte %zu)", check, i); ok = 0; }
    }
    if (ok && g_rank == root) pass("%s", check);
    free(mine); free(copy); free(rbuf); free(rm);
}

int main(int argc, char **argv)
{
    uint64_t seed = 31337;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    test_init(&argc, &argv, "inplace");
    affine_create(&t_affine, &op_affine);
    int roots[3] = {0, g_size - 1, g_size / 2};
    static const int counts[3] = {1, 1000, 50000};
    for (int ri = 0; ri < 3; ri++)
        for (int k = 0; k < K_N; k++)
            for (int c = 0; c < 3; c++)
                run(k, counts[c], roots[ri], mix64(seed + (uint64_t)(ri * 100 + k * 10 + c)));
    affine_free(&t_affine, &op_affine);
    return test_finish();
}
