/*
 * mpitest.c -- the shared scaffolding of the MPI integration tests (see mpitest.h: what the
 * functions do and why they live here rather than in each test).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

const char *g_prog = "mpitest";
int g_rank = -1, g_size = 0, g_fail = 0;
MPI_Comm g_comm = MPI_COMM_NULL;
char g_step[256] = "startup";

void set_step(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_step, sizeof g_step, fmt, ap);
    va_end(ap);
}

void on_term(int sig)
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
static void emit(const char *prefix, const char *suffix, const char *fmt, va_list ap)
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

void pass(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit("PASS ", "", fmt, ap);
    va_end(ap);
}

void fail(const char *fmt, ...)
{
    va_list ap;
    char suffix[32];
    g_fail = 1;
    snprintf(suffix, sizeof suffix, " [rank %d]", g_rank);
    va_start(ap, fmt);
    emit("FAIL ", suffix, fmt, ap);
    va_end(ap);
}

void test_init(int *argc, char ***argv, const char *prog)
{
    g_prog = prog;
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

int test_finish(void)
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

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds a single wait may take before the test gives up (scaled by
 * DRED_TEST_TIMEOUT_SCALE, e.g. under sanitizers). */
double wait_limit(double secs)
{
    const char *e = getenv("DRED_TEST_TIMEOUT_SCALE");
    double k = e ? atof(e) : 1.0;
    return secs * (k > 0 ? k : 1.0);
}

/* Wait for a future, polling dred_future_is_done, at most `secs`; a reduction that does not
 * finish in time is a failure and aborts the job (a hang must not pass as anything). */
int wait_bounded(dred_future *f, double secs, const char *what)
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

int pool_take_all(void **blk, int max)
{
    int n = 0;
    for (size_t sz = (size_t)1 << 34; sz >= 4096 && n < max;) {
        if (dred_alloc_mem(sz, &blk[n]) == DRED_OK) n++;
        else sz /= 2;
    }
    return n;
}

uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const struct affine *f = in;
    struct affine *g = inout;
    for (int k = 0; k < *len; k++) {
        struct affine r = {f[k].a * g[k].a, g[k].a * f[k].b + g[k].b};
        g[k] = r;
    }
}

void affine_create(MPI_Datatype *type, MPI_Op *op)
{
    MPI_Type_contiguous(2, MPI_UNSIGNED, type);
    MPI_Type_commit(type);
    MPI_Op_create(affine_op, 0, op);
}

void affine_free(MPI_Datatype *type, MPI_Op *op)
{
    MPI_Op_free(op);
    MPI_Type_free(type);
}

/* Room for n requests (aborts the job without memory: `who` says whose). */
static MPI_Request *requests_new(int n, const char *who)
{
    MPI_Request *rq = malloc(sizeof *rq * (size_t)(n > 0 ? n : 1));
    if (rq == NULL) {
        fprintf(stderr, "%s: no memory for %d requests\n", who, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return rq;
}

/* Completes and frees the n requests posted in rq, then rq itself; returns rc, or the
 * first error of a wait when rc is MPI_SUCCESS. */
static int requests_wait(int n, MPI_Request *rq, int rc)
{
    for (int k = 0; k < n; k++) {
        int w = MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = w;
    }
    free(rq);
    return rc;
}

int ref_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
               int root, MPI_Comm comm)
{
    enum { REF_TAG = 7331 };
    int r, p, rc = MPI_SUCCESS, k;
    MPI_Aint lb, extent;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    MPI_Type_get_extent(dt, &lb, &extent);
    const void *mine = (r == root && sendbuf == MPI_IN_PLACE) ? recvbuf : sendbuf;
    if (count == 0) return MPI_SUCCESS;
    /* Point to point only: MPICH 4.0.2's node-aware Gather fails on such layouts too
     * ("Message truncated"), so no collective algorithm stands between us and the data. */
    if (r != root) return MPI_Send(mine, count, dt, root, REF_TAG, comm);
    size_t span = (size_t)count * (size_t)extent;
    char *all = malloc(span * (size_t)p);
    if (all == NULL) {
        fprintf(stderr, "ref_reduce: no memory for %d x %zu bytes\n", p, span);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* slot k holds rank k's operand laid out as `count` elements of dt (lb cancels out);
     * every receive posted at once, so that the operands land in whatever order their
     * senders get a core (received one by one, each could wait for a scheduler tick where
     * the processes outnumber the cores) */
    MPI_Request *rq = requests_new(p, "ref_reduce");
    int n = 0;
    for (k = 0; k < p && rc == MPI_SUCCESS; k++)
        if (k != r)
            rc = MPI_Irecv(all + (size_t)k * span - lb, count, dt, k, REF_TAG, comm, &rq[n++]);
    if (rc == MPI_SUCCESS)
        rc = MPI_Sendrecv(mine, count, dt, 0, 0, all + (size_t)r * span - lb, count, dt, 0, 0,
                          MPI_COMM_SELF, MPI_STATUS_IGNORE);
    rc = requests_wait(n, rq, rc);
    /* MPI_Reduce_local(in, inout) is inout = in op inout: fold from the right into the last
     * slot, which ends as x0 op (x1 op (... op x(p-1))) */
    char *acc = all + (size_t)(p - 1) * span - lb;
    for (k = p - 2; k >= 0 && rc == MPI_SUCCESS; k--)
        rc = MPI_Reduce_local(all + (size_t)k * span - lb, acc, count, dt, op);
    /* into recvbuf with MPI's own layout rules (holes of a derived type untouched) */
    if (rc == MPI_SUCCESS)
        rc = MPI_Sendrecv(acc, count, dt, 0, 0, recvbuf, count, dt, 0, 0, MPI_COMM_SELF,
                          MPI_STATUS_IGNORE);
    free(all);
    return rc;
}

int send_all(const void *buf, int count, int from, int tag, MPI_Comm comm)
{
    int p, k, n = 0, rc = MPI_SUCCESS;
    MPI_Comm_size(comm, &p);
    MPI_Request *rq = requests_new(p, "send_all");
    for (k = 0; k < p && rc == MPI_SUCCESS; k++)
        if (k != from) rc = MPI_Isend(buf, count, MPI_BYTE, k, tag, comm, &rq[n++]);
    return requests_wait(n, rq, rc);
}
