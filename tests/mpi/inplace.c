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

/* ---- shared test scaffolding (copied in every tests/mpi program) ---------------------- */
static const char *g_prog = "inplace";
static int g_rank = -1, g_size = 0, g_fail = 0;
static MPI_Comm g_comm = MPI_COMM_NULL;
static char g_step[256] = "startup";

static __attribute__((unused, format(printf, 1, 2))) void set_step(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_step, sizeof g_step, fmt, ap);
    va_end(ap);
}

static __attribute__((unused)) void on_term(int sig)
{
    char buf[400];
    int n = snprintf(buf, sizeof buf, "FAIL %s: rank %d killed by signal %d during: %s\n",
                     g_prog, g_rank, sig, g_step);
    if (n > 0) {
        ssize_t w = write(2, buf, (size_t)n);
        (void)w;
    }
    _exit(124);
}

/* one whole line per write, so lines of different ranks never interleave */
static __attribute__((unused)) void emit(const char *prefix, const char *suffix, const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "%s", prefix);
    if (n < 0) n = 0;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (m > 0) n = (size_t)(n + m) < sizeof line ? n + m : (int)sizeof line - 1;
    snprintf(line + n, sizeof line - (size_t)n, "%s\n", suffix);
    fputs(line, stdout);
    fflush(stdout);
}

static __attribute__((unused, format(printf, 1, 2))) void pass(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit("PASS ", "", fmt, ap);
    va_end(ap);
}

static __attribute__((unused, format(printf, 1, 2))) void fail(const char *fmt, ...)
{
    va_list ap;
    char suffix[32];
    g_fail = 1;
    snprintf(suffix, sizeof suffix, " [rank %d]", g_rank);
    va_start(ap, fmt);
    emit("FAIL ", suffix, fmt, ap);
    va_end(ap);
}

static __attribute__((unused)) void test_init(int *argc, char ***argv)
{
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    int st = dred_init(argc, argv);
    if (st != DRED_OK) {
        printf("FAIL %s: dred_init returned %d (%s)\n", g_prog, st, dred_strerror(st));
        exit(1);
    }
    g_comm = dred_comm();
    MPI_Comm_rank(g_comm, &g_rank);
    MPI_Comm_size(g_comm, &g_size);
}

static __attribute__((unused)) int test_finish(void)
{
    int any = 0;
    set_step("final fail-flag allreduce");
    MPI_Allreduce(&g_fail, &any, 1, MPI_INT, MPI_MAX, g_comm);
    if (g_rank == 0)
        printf("%s %s (P=%d)\n", any ? "FAILED" : "ALL PASSED", g_prog, g_size);
    set_step("dred_finalize");
    int st = dred_finalize();
    if (st != DRED_OK) {
        printf("FAIL %s: dred_finalize returned %d (%s) [rank %d]\n", g_prog, st,
               dred_strerror(st), g_rank);
        any = 1;
    }
    return any ? 1 : 0;
}

static __attribute__((unused)) double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds a single wait may take before the test gives up (scaled by
 * DRED_TEST_TIMEOUT_SCALE, e.g. under sanitizers). */
static __attribute__((unused)) double wait_limit(double secs)
{
    const char *e = getenv("DRED_TEST_TIMEOUT_SCALE");
    double k = e ? atof(e) : 1.0;
    return secs * (k > 0 ? k : 1.0);
}

/* Wait for a future, polling dred_future_is_done, at most `secs`; a reduction that does not
 * finish in time is a failure and aborts the job (a hang must not pass as anything). */
static __attribute__((unused)) int wait_bounded(dred_future *f, double secs, const char *what)
{
    double deadline = now_s() + wait_limit(secs);
    long ns = 1000;
    for (;;) {
        int d = dred_future_is_done(f);
        if (d == 1) return dred_future_get(f);
        if (d != 0) {
            fail("%s: dred_future_is_done returned %d", what, d);
            return -1000;
        }
        if (now_s() > deadline) {
            fail("%s: reduction not done after %.0f s (hang?)", what, wait_limit(secs));
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 1000000) ns *= 2;
    }
}

static __attribute__((unused)) uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
/* ---------------------------------------------------------------------------------------- */

struct affine { unsigned a, b; };
struct di { double v; int i; };
static void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const struct affine *f = in;
    struct affine *g = inout;
    for (int k = 0; k < *len; k++) {
        struct affine r = {f[k].a * g[k].a, g[k].a * f[k].b + g[k].b};
        g[k] = r;
    }
}

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
    MPI_Reduce(copy, rm, n, dt, op, root, g_comm);
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
        if (!good) { fail("%s: in-place result differs from MPI_Reduce", check); ok = 0; }
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
    test_init(&argc, &argv);
    MPI_Type_contiguous(2, MPI_UNSIGNED, &t_affine);
    MPI_Type_commit(&t_affine);
    MPI_Op_create(affine_op, 0, &op_affine);
    int roots[3] = {0, g_size - 1, g_size / 2};
    static const int counts[3] = {1, 1000, 50000};
    for (int ri = 0; ri < 3; ri++)
        for (int k = 0; k < K_N; k++)
            for (int c = 0; c < 3; c++)
                run(k, counts[c], roots[ri], mix64(seed + (uint64_t)(ri * 100 + k * 10 + c)));
    MPI_Op_free(&op_affine);
    MPI_Type_free(&t_affine);
    return test_finish();
}
