/*
 * meet.c -- the meeting place (lib/shm/meet.h, lib/paths/meetpath.c): small DRED_TAG_AUTO
 * reductions of one-node groups met in shared memory instead of through dred-master.
 *
 *   dredrun -n P mpi_meet [-s SEED] [-q]
 *
 * Every root result is compared exactly with the operands folded locally in rank order with
 * MPI_Reduce_local (every member's operand is a function of the seed, its rank in
 * dred_comm() and the reduction, so the root computes the expected value alone); every
 * member checks its status.  Sections, each on dred_comm() and on derived communicators
 * (halves, reversed order, one-member splits, the node-local split of
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and its reversed halves):
 *   plain     batches of dred_ireduce and blocking dred_reduce, 1..256 elements (both sides
 *             of the n x bytes <= DRED_MEET_DATA bound and of DRED_INLINE_MAX), doubles,
 *             ints, MPI_DOUBLE_INT MINLOC/MAXLOC, a non-commutative user op (2x2 matrix
 *             product), random roots, MPI_IN_PLACE at the root, a few explicit tags between
 *             auto-tagged calls;
 *   lane      blocking dred_reduce, dred_allreduce and dred_bcast within the fast lane's
 *             88 bytes, 200, 100 and 200 in a row, then 150 allreduces, 150 reduces and the
 *             bcasts of 89 bytes to 64 KiB (the posts name pool blocks), one member in turn calling the
 *             nonblocking form now and then (the posted members follow it into the slot; a
 *             bcast's is served from its root's post if the root posted first); counts that
 *             differ across the lane's bound and within it (MISMATCH everywhere; a bcast's
 *             disagreeing member, or someone), a bcast naming another root, then exact ones;
 *   large     operands of 256-330 KiB (a fold shared out among the members that wait):
 *             roots first, last, middle, random; blocking, late and bounded-look waits;
 *             then a root folding early arrivals when the slot spills after all (the last
 *             member's pool taken by dred_alloc_mem), with sendbuf and in place;
 *   ring      100 (> DRED_MEET_DEPTH) in flight before any wait, waited in reverse order;
 *             then a staggered wrap (each rank waits a different subset, issues more, waits
 *             the rest in a rank-dependent order);
 *   mismatch  members disagreeing on count (small/large, small/medium, small/small), op,
 *             root, type, user op commutativity, with forced arrival orders (rank 0 first,
 *             rank 0 last, staggered, none): every member must get DRED_ERR_MISMATCH within
 *             20 s; the next reductions on the same communicator are exact;
 *   abandon   non-roots free pending futures (20 rounds: the ring fills up with slots that
 *             are never released, later ones spill), roots free theirs, everyone frees;
 *             then exact reductions; dred_finalize must return DRED_OK;
 *             then the mismatch cases again on the node communicator, whose ring is now
 *             full of slots never released (every reduction spills);
 *   poll      dred_future_is_done / dred_future_wait(f, 0) / wait(f, 1) loops, several
 *             futures polled round robin;
 *   timeout   dred_future_wait(f, 30 ms) while the other members are held back by a
 *             barrier: DRED_ERR_TIMEOUT, then the reduction finishes exact (or the future
 *             is freed after the timeout);
 *   threads   two threads, each on its own communicator (different member orders); and two
 *             threads waiting on the same futures at once (get vs is_done / wait(f, 0));
 *   full      (last) more one-node groups than the node's table has rings (72 splits of
 *             the node communicator, distinct member orders): the rest go through
 *             dred-master, all exact.
 * Counts include 0.
 * With DRED_MEET=0, or when dred_comm() spans simulated nodes, the same checks hold (the
 * master path).  -q: fewer counts (for slow runs).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dred.h"
#include "mpitest.h"

enum { K_DBL, K_INT, K_DI, K_MAT, K_N };
static const char *kname[K_N] = {"double", "int", "double_int", "mat2x2"};
struct di { double v; int i; };

static MPI_Datatype t_mat;            /* 4 doubles: a 2x2 matrix            */
static MPI_Op op_mat, op_madd;        /* product (non-commutative), sum     */
static MPI_Group g_world_grp;
static int g_quick;
static pthread_mutex_t g_cnt_mu = PTHREAD_MUTEX_INITIALIZER;
static long g_checked, g_errs;        /* results checked; failures printed  */

static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const double *a = in;
    double *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        double r0 = a[0] * b[0] + a[1] * b[2], r1 = a[0] * b[1] + a[1] * b[3];
        double r2 = a[2] * b[0] + a[3] * b[2], r3 = a[2] * b[1] + a[3] * b[3];
        b[0] = r0; b[1] = r1; b[2] = r2; b[3] = r3;
    }
}

static void madd_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const double *a = in;
    double *b = inout;
    for (int k = 0; k < 4 * *len; k++) b[k] += a[k];
}

static size_t esz(int kind)
{
    switch (kind) {
    case K_DBL: return sizeof(double);
    case K_INT: return sizeof(int);
    case K_DI: return sizeof(struct di);
    default: return 4 * sizeof(double);
    }
}

static MPI_Datatype kdt(int kind)
{
    switch (kind) {
    case K_DBL: return MPI_DOUBLE;
    case K_INT: return MPI_INT;
    case K_DI: return MPI_DOUBLE_INT;
    default: return t_mat;
    }
}

static MPI_Op kop(int kind, int v)
{
    switch (kind) {
    case K_DBL: return v ? MPI_MAX : MPI_SUM;
    case K_INT: return v ? MPI_BXOR : MPI_SUM;
    case K_DI: return v ? MPI_MINLOC : MPI_MAXLOC;
    default: return op_mat;
    }
}

/* member `wrank`'s (rank in dred_comm()) operand of the reduction named by `salt` */
static void gen(int kind, void *buf, int n, int wrank, uint64_t salt)
{
    for (int i = 0; i < n; i++) {
        uint64_t h = mix64(salt ^ ((uint64_t)(wrank + 1) << 40) ^ (uint64_t)i);
        switch (kind) {
        case K_DBL: ((double *)buf)[i] = (double)((int64_t)(h % 4001) - 2000) / 4.0; break;
        case K_INT: ((int *)buf)[i] = (int)(h % 200001) - 100000; break;
        case K_DI: {
            struct di *d = buf;
            memset(&d[i], 0, sizeof d[i]);
            d[i].v = (double)(h % 5);         /* many ties: the index rule matters */
            d[i].i = (int)((h >> 16) % 7) + wrank;
            break;
        }
        default: {
            double *m = (double *)buf + 4 * (size_t)i;
            /* entries 0..2: no negative zero, whose sign would depend on the grouping that
             * MPI allows an associative op (exact otherwise: small integers) */
            for (int j = 0; j < 4; j++) m[j] = (double)((h >> (8 * j)) % 3);
            break;
        }
        }
    }
}

static void count_check(int failed)
{
    pthread_mutex_lock(&g_cnt_mu);
    g_checked++;
    if (failed) g_errs++;
    pthread_mutex_unlock(&g_cnt_mu);
}

/* a failure line, at most 40 of them per process (a broken path fails every reduction) */
#define FAILQ(...)                                              \
    do {                                                        \
        if (g_errs < 40) fail(__VA_ARGS__);                     \
        else g_fail = 1;                                        \
        count_check(1);                                         \
    } while (0)

/* One reduction: its parameters, buffers and future. */
typedef struct {
    MPI_Comm comm;
    const char *cname;
    int kind, opv, count, root, inplace, tag;
    uint64_t salt;
    int r, p;
    unsigned char *s, *rb;
    dred_future *f;
    int st;  /* of dred_ireduce */
    char what[200];
} red_t;

static void red_init(red_t *x, MPI_Comm comm, const char *cname, int kind, int opv, int count,
                     int root, int inplace, uint64_t salt)
{
    memset(x, 0, sizeof *x);
    x->comm = comm;
    x->cname = cname;
    x->kind = kind;
    x->opv = opv;
    x->count = count;
    x->root = root;
    x->inplace = inplace;
    x->salt = salt;
    x->tag = DRED_TAG_AUTO;
    MPI_Comm_rank(comm, &x->r);
    MPI_Comm_size(comm, &x->p);
    size_t b = esz(kind) * (size_t)count;
    x->s = malloc(b + 1);
    gen(kind, x->s, count, g_rank, salt);
    if (x->r == root) {
        x->rb = malloc(b + 1);
        if (inplace) memcpy(x->rb, x->s, b);
        else memset(x->rb, 0xA5, b);
    }
    snprintf(x->what, sizeof x->what, "%s(p=%d)/%s/%s/n=%d/root=%d%s", cname, x->p, kname[kind],
             kind == K_MAT ? "matmul" : opv ? "op1" : "op0", count, root,
             inplace && x->r == root ? "/in_place" : "");
}

static void red_free(red_t *x)
{
    free(x->s);
    free(x->rb);
    x->s = x->rb = NULL;
}

static int red_issue(red_t *x)
{
    const void *sb = x->inplace && x->r == x->root ? MPI_IN_PLACE : (const void *)x->s;
    x->f = NULL;
    x->st = dred_ireduce(sb, x->r == x->root ? x->rb : NULL, x->count, kdt(x->kind),
                         kop(x->kind, x->opv), x->root, x->comm, x->tag, &x->f);
    if (x->st != DRED_OK) FAILQ("meet/%s: dred_ireduce returned %d (%s)", x->what, x->st,
                                dred_strerror(x->st));
    return x->st;
}

/* expected result at the root: every member's operand, folded in rank order */
static void expected(const red_t *x, unsigned char *acc)
{
    int *cr = malloc(sizeof(int) * (size_t)x->p), *wr = malloc(sizeof(int) * (size_t)x->p);
    MPI_Group grp;
    MPI_Comm_group(x->comm, &grp);
    for (int k = 0; k < x->p; k++) cr[k] = k;
    MPI_Group_translate_ranks(grp, x->p, cr, g_world_grp, wr);
    MPI_Group_free(&grp);
    size_t b = esz(x->kind) * (size_t)x->count;
    unsigned char *t = malloc(b + 1);
    gen(x->kind, acc, x->count, wr[x->p - 1], x->salt);
    for (int k = x->p - 2; k >= 0; k--) {
        gen(x->kind, t, x->count, wr[k], x->salt);
        MPI_Reduce_local(t, acc, x->count, kdt(x->kind), kop(x->kind, x->opv));
    }
    free(t);
    free(cr);
    free(wr);
}

/* check status `st` (the future's) and, at the root, the result; frees the buffers */
static int red_check(red_t *x, int st)
{
    int bad = 0;
    if (st != DRED_OK) {
        FAILQ("meet/%s: status %d (%s)", x->what, st, dred_strerror(st));
        bad = 1;
    } else if (x->r == x->root) {
        size_t b = esz(x->kind) * (size_t)x->count;
        unsigned char *e = malloc(b + 1);
        expected(x, e);
        int i;
        for (i = 0; i < x->count; i++) {
            if (x->kind == K_DI) {
                struct di a, c;
                memcpy(&a, x->rb + (size_t)i * sizeof a, sizeof a);
                memcpy(&c, e + (size_t)i * sizeof c, sizeof c);
                if (a.v != c.v || a.i != c.i) break;
            } else if (memcmp(x->rb + (size_t)i * esz(x->kind), e + (size_t)i * esz(x->kind),
                              esz(x->kind))) {
                break;
            }
        }
        if (i < x->count) {
            if (x->kind == K_MAT) {
                const double *g = (const double *)x->rb + 4 * (size_t)i, *w = (const double *)e + 4 * (size_t)i;
                FAILQ("meet/%s: result differs from the rank-order fold at element %d: "
                      "[%g %g; %g %g], expected [%g %g; %g %g]", x->what, i, g[0], g[1], g[2], g[3],
                      w[0], w[1], w[2], w[3]);
            } else
                FAILQ("meet/%s: result differs from the rank-order fold at element %d", x->what, i);
            bad = 1;
        }
        free(e);
    }
    if (!bad) count_check(0);
    red_free(x);
    return !bad;
}

static int wait_st(red_t *x)
{
    if (x->st != DRED_OK) return x->st;
    int st = wait_bounded(x->f, 20, x->what);
    dred_future_free(x->f);
    x->f = NULL;
    return st;
}

/* ---- sections ------------------------------------------------------------------------ */

static const int counts_all[] = {0, 1, 2, 3, 5, 8, 13, 16, 25, 32, 51, 52, 63, 64, 65, 100, 127,
                                 128, 129, 200, 256};
static const int counts_quick[] = {0, 1, 3, 16, 51, 52, 64, 65, 128, 129, 256};

static void section_done(const char *sec, const char *cname, MPI_Comm comm, long before_ok,
                         long before_err)
{
    int r;
    MPI_Comm_rank(comm, &r);
    long ok = g_checked - before_ok, err = g_errs - before_err;
    if (err == 0 && r == 0) pass("meet/%s/%s: %ld member checks exact", sec, cname, ok);
}

/* 1. plain: batches of ireduce plus blocking reduces, all kinds and counts */
static void plain(MPI_Comm comm, const char *cname, uint64_t sd)
{
    const int *counts = g_quick ? counts_quick : counts_all;
    int nc = g_quick ? (int)(sizeof counts_quick / sizeof *counts)
                     : (int)(sizeof counts_all / sizeof *counts);
    int p;
    MPI_Comm_size(comm, &p);
    long c0 = g_checked, e0 = g_errs;
    uint64_t rng = mix64(sd);
    enum { B = 12 };
    red_t batch[B];
    int nb = 0, ntag = 0;
    set_step("plain on %s", cname);
    for (int ci = 0; ci < nc; ci++)
        for (int kind = 0; kind < K_N; kind++) {
            rng = mix64(rng);
            int root = (int)(rng % (uint64_t)p), inplace = (int)((rng >> 8) & 1),
                opv = (int)((rng >> 9) & 1), blocking = (rng >> 10) % 5 == 0,
                explicit_tag = (rng >> 13) % 9 == 0;
            if (blocking) {
                red_t x;
                red_init(&x, comm, cname, kind, opv, counts[ci], root, inplace, rng);
                const void *sb = inplace && x.r == root ? MPI_IN_PLACE : (const void *)x.s;
                int st = dred_reduce(sb, x.r == root ? x.rb : NULL, x.count, kdt(kind),
                                     kop(kind, opv), root, comm);
                red_check(&x, st);
                continue;
            }
            red_t *x = &batch[nb++];
            red_init(x, comm, cname, kind, opv, counts[ci], root, inplace, rng);
            if (explicit_tag) x->tag = 1000 + ntag++;
            red_issue(x);
            if (nb == B) {
                /* wait in order, reverse order or odd-then-even, by the batch */
                int mode = (int)((rng >> 20) % 3);
                for (int i = 0; i < nb; i++) {
                    int j = mode == 0 ? i : mode == 1 ? nb - 1 - i : (i < nb / 2 ? 2 * i + 1 : 2 * (i - nb / 2));
                    red_check(&batch[j], wait_st(&batch[j]));
                }
                nb = 0;
            }
        }
    for (int i = 0; i < nb; i++) red_check(&batch[i], wait_st(&batch[i]));
    section_done("plain", cname, comm, c0, e0);
}

/* One bcast of `count` doubles (root's: root * 1000 + i + k) where this member takes the
 * slot's way when `slow` (dred_ibcast), names `myroot` and gives `mycount`: its status,
 * and 1 in *bad if it says DRED_OK with data that is not the root's. */
enum { LANE_BCAST_MAX = 32768 }; /* doubles: 256 KiB, the lane's bound by reference */

static int lane_bcast_one(MPI_Comm comm, int i, int root, int myroot, int mycount, int slow, int *bad)
{
    static double buf[LANE_BCAST_MAX + 1];
    int r, st, k;
    MPI_Comm_rank(comm, &r);
    for (k = 0; k <= LANE_BCAST_MAX; k++) buf[k] = r == myroot ? (double)(root * 1000 + i + k) : -1.0;
    if (slow) {
        dred_future *f = NULL;
        st = dred_ibcast(buf, mycount, MPI_DOUBLE, myroot, comm, DRED_TAG_AUTO, &f);
        if (st == DRED_OK) {
            st = wait_bounded(f, 20, "meet/lane/bcast");
            dred_future_free(f);
        }
    } else {
        st = dred_bcast(buf, mycount, MPI_DOUBLE, myroot, comm);
    }
    *bad = 0;
    for (k = 0; k < mycount && st == DRED_OK; k++) *bad |= buf[k] != (double)(root * 1000 + i + k);
    *bad |= r != myroot && buf[mycount] != -1.0; /* nothing past the data written */
    return st;
}

/* The lane's bcast (fast.c): the root's post serves every member, early arrivals first.
 * 200 blocking bcasts, the root in turn, of 1-11 doubles (in the post) and every third of
 * 12-16384 (in the root's pool block, which the post names); in every sixth one member (in
 * turn) calls dred_ibcast instead -- served from the root's post when the root posted
 * first, else everyone meets in the slot.  Then members that disagree -- a non-root whose
 * count differs (12 doubles, by reference, against 11), one that names another root: that one
 * gets MISMATCH or someone does (of two that disagree the later one is sure to), every
 * DRED_OK has the root's data -- and an exact bcast after each. */
static void lane_bcast(MPI_Comm comm, const char *cname)
{
    int p, r, st, bad, mism;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    for (int i = 0; i < 200; i++) {
        int root = i % p, count = i % 3 == 0 ? 12 + (i * 37) % (LANE_BCAST_MAX - 11) : 1 + i % 11;
        st = lane_bcast_one(comm, i, root, root, count, i % 6 == 5 && r == (i / 6) % p, &bad);
        if (st != DRED_OK || bad)
            FAILQ("meet/lane/%s(p=%d): bcast %d of %d doubles from %d: status %d (%s)%s", cname, p, i,
                  count, root, st, dred_strerror(st), bad ? ", wrong data" : "");
        else
            count_check(0);
    }
    if (p < 2) return;
    for (int c = 0; c < 2 && (c == 0 || p >= 3); c++) {
        /* c 0: the last member gives 12 doubles against 11; c 1: it names root 1, not 0 */
        int odd = r == p - 1;
        st = lane_bcast_one(comm, 500 + c, 0, odd && c == 1 ? 1 : 0, odd && c == 0 ? 12 : 11, 0, &bad);
        MPI_Allreduce((int[]){st == DRED_ERR_MISMATCH}, &mism, 1, MPI_INT, MPI_SUM, comm);
        if ((st != DRED_OK && st != DRED_ERR_MISMATCH) || bad || mism == 0 ||
            (c == 0 && odd && st != DRED_ERR_MISMATCH))
            FAILQ("meet/lane/%s: bcast with member %d disagreeing (%s): status %d (%s)%s, %d MISMATCH",
                  cname, p - 1, c == 0 ? "count" : "root", st, dred_strerror(st),
                  bad ? ", wrong data" : "", mism);
        else
            count_check(0);
        st = lane_bcast_one(comm, 600 + c, 1, 1, 5, 0, &bad);
        if (st != DRED_OK || bad)
            FAILQ("meet/lane/%s: the bcast after a disagreement: status %d (%s)%s", cname, st,
                  dred_strerror(st), bad ? ", wrong data" : "");
        else
            count_check(0);
    }
}

/* The lane by reference (fast.c, lanepath.c's lane_fold): 150 blocking allreduces and
 * 150 reduces (random roots) whose operands exceed a post (89 bytes to 16 KiB, every type
 * and op of the table, the matrix product in rank order included; every fourth in place),
 * an allreduce's every member and a reduce's root folding the pool blocks themselves --
 * or, where the group's operands together pass the whole-fold bound, the slot's way; in
 * every seventh one member (in turn) calls the nonblocking form, so the members that
 * posted follow it into the slot.  Every result is checked against the rank-order fold. */
static void lane_by_ref(MPI_Comm comm, const char *cname, uint64_t sd)
{
    int p, r, st;
    uint64_t rng = mix64(sd ^ 0x1a3f);
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    for (int i = 0; i < 300; i++) {
        rng = mix64(rng);
        int kind = (int)(rng % K_N), opv = (int)((rng >> 8) & 1), all = i < 150;
        int lo = 88 / (int)esz(kind) + 1, hi = 16384 / (int)esz(kind);
        int count = lo + (int)((rng >> 20) % (uint64_t)(hi - lo + 1));
        int root = all ? r : (int)((rng >> 40) % (uint64_t)p); /* an allreduce: a result everywhere */
        int inplace = i % 4 == 3, slow = i % 7 == 6 && r == (i / 7) % p;
        red_t x;
        red_init(&x, comm, cname, kind, opv, count, root, inplace, rng);
        const void *sb = inplace && r == root ? MPI_IN_PLACE : (const void *)x.s;
        if (slow && all) {
            x.st = dred_iallreduce(sb, x.rb, count, kdt(kind), kop(kind, opv), comm, DRED_TAG_AUTO, &x.f);
            st = wait_st(&x);
        } else if (slow) {
            red_issue(&x);
            st = wait_st(&x);
        } else if (all) {
            st = dred_allreduce(sb, x.rb, count, kdt(kind), kop(kind, opv), comm);
        } else {
            st = dred_reduce(sb, r == root ? x.rb : NULL, count, kdt(kind), kop(kind, opv), root, comm);
        }
        red_check(&x, st);
    }
}

/* 1a. the fast lane (lib/shm/fast.c): blocking dred_reduce and dred_allreduce whose
 * operands fit a post (88 bytes), 200 and 100 in a row (round the ring's posts many
 * times); in every fifth reduce and seventh allreduce one member (in turn) calls the
 * nonblocking form instead, so the members that posted follow it into the slot; then
 * a member whose count crosses the lane's bound, and two whose counts differ within it:
 * everyone gets MISMATCH, and the next allreduce is exact. */
static void lane(MPI_Comm comm, const char *cname, uint64_t sd)
{
    int p, r, st;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    long c0 = g_checked, e0 = g_errs;
    uint64_t rng = mix64(sd ^ 0x1a2e);
    set_step("lane on %s", cname);
    for (int i = 0; i < 200; i++) {
        rng = mix64(rng);
        int kind = (int)(rng % K_N), opv = (int)((rng >> 8) & 1), root = (int)((rng >> 12) % (uint64_t)p);
        int count = 1 + (int)((rng >> 20) % (uint64_t)(88 / esz(kind)));
        int slow = i % 5 == 4 && r == (i / 5) % p; /* this member goes the slot's way */
        red_t x;
        red_init(&x, comm, cname, kind, opv, count, root, 0, rng);
        if (slow) {
            red_issue(&x);
            red_check(&x, wait_st(&x));
        } else {
            st = dred_reduce(x.s, r == root ? x.rb : NULL, count, kdt(kind), kop(kind, opv), root, comm);
            red_check(&x, st);
        }
    }
    for (int i = 0; i < 100; i++) {
        int count = 1 + i % 11, k, bad = 0;
        double sb[11], got[11];
        for (k = 0; k < count; k++) sb[k] = (double)(r * 100 + i + k);
        if (i % 7 == 6 && r == i % p) { /* the slot's way for this one */
            dred_future *f = NULL;
            st = dred_iallreduce(sb, got, count, MPI_DOUBLE, MPI_SUM, comm, DRED_TAG_AUTO, &f);
            if (st == DRED_OK) {
                st = wait_bounded(f, 20, "meet/lane/allreduce");
                dred_future_free(f);
            }
        } else {
            st = dred_allreduce(sb, got, count, MPI_DOUBLE, MPI_SUM, comm);
        }
        for (k = 0; k < count && st == DRED_OK; k++)
            bad |= got[k] != 100.0 * p * (p - 1) / 2 + (double)p * (i + k);
        if (st != DRED_OK || bad)
            FAILQ("meet/lane/%s(p=%d): allreduce %d of %d doubles: status %d (%s)%s", cname, p, i,
                  count, st, dred_strerror(st), bad ? ", wrong sum" : "");
        else
            count_check(0);
    }
    if (p >= 2) {
        double sb[12] = {0}, got[12];
        /* 12 doubles (96 bytes: the post names a block) against 11 (in the post) */
        st = dred_allreduce(sb, got, r == p - 1 ? 12 : 11, MPI_DOUBLE, MPI_SUM, comm);
        if (st != DRED_ERR_MISMATCH)
            FAILQ("meet/lane/%s: counts 12 and 11: status %d (%s), expected MISMATCH", cname, st, dred_strerror(st));
        else
            count_check(0);
        /* both in the lane: 3 doubles against 2 */
        st = dred_allreduce(sb, got, r == 0 ? 3 : 2, MPI_DOUBLE, MPI_SUM, comm);
        if (st != DRED_ERR_MISMATCH)
            FAILQ("meet/lane/%s: counts 3 and 2: status %d (%s), expected MISMATCH", cname, st, dred_strerror(st));
        else
            count_check(0);
        for (int k = 0; k < 4; k++) sb[k] = 1.0;
        st = dred_allreduce(sb, got, 4, MPI_DOUBLE, MPI_SUM, comm);
        if (st != DRED_OK || got[0] != p || got[3] != p)
            FAILQ("meet/lane/%s: the allreduce after the mismatches: status %d (%s)", cname, st, dred_strerror(st));
        else
            count_check(0);
    }
    lane_by_ref(comm, cname, sd);
    lane_bcast(comm, cname);
    section_done("lane", cname, comm, c0, e0);
}

/* 1b. large: operands of 256-330 KiB, whose fold the members that wait share out in
 * chunks (lib/paths/meetpath.c: reduce_help, reduce_root_shared) from 3 members on.  Roots
 * first, last, in the middle (a non-commutative op then folds at the root alone) and
 * random; members wait blocking, late (the root or the others fold their share), or by
 * bounded looks (dred_future_wait(f, 0), dred_future_is_done); three in flight waited in
 * reverse. */
static void large(MPI_Comm comm, const char *cname, uint64_t sd)
{
    int p, r;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    long c0 = g_checked, e0 = g_errs;
    uint64_t rng = mix64(sd ^ 0x1a29e);
    set_step("large on %s", cname);
    for (int k = 0; k < 16; k++) {
        rng = mix64(rng);
        int kind = k % K_N, mode = (k / K_N) % 4;
        int count = (int)((256 * 1024 + rng % (74 * 1024)) / esz(kind));
        int roots[4] = {0, p - 1, p / 2, (int)((rng >> 24) % (uint64_t)p)};
        int root = roots[(k + (int)(rng >> 40)) % 4], inplace = (int)((rng >> 8) & 1);
        red_t x;
        red_init(&x, comm, cname, kind, (int)((rng >> 9) & 1), count, root, inplace, rng);
        if (mode == 0) { /* every member blocks in dred_reduce */
            const void *sb = inplace && r == root ? MPI_IN_PLACE : (const void *)x.s;
            red_check(&x, dred_reduce(sb, r == root ? x.rb : NULL, count, kdt(kind),
                                      kop(kind, x.opv), root, comm));
            continue;
        }
        if (red_issue(&x) != DRED_OK) { red_free(&x); continue; }
        if (mode == 1 && r % 2 == 1) { /* late: the members already waiting fold its share */
            struct timespec ts = {0, 2000000L};
            nanosleep(&ts, NULL);
        }
        if (mode == 2 || (mode == 3 && r == root)) { /* bounded looks */
            double dl = now_s() + wait_limit(20);
            int st = DRED_ERR_TIMEOUT;
            while (now_s() < dl) {
                if (mode == 2) {
                    st = dred_future_wait(x.f, 0);
                    if (st != DRED_ERR_TIMEOUT) break;
                } else {
                    int d = dred_future_is_done(x.f);
                    if (d != 0) { st = d < 0 ? d : dred_future_get(x.f); break; }
                }
            }
            if (st == DRED_ERR_TIMEOUT)
                FAILQ("meet/large/%s: not done after %.0f s of bounded looks", x.what, wait_limit(20));
            dred_future_free(x.f);
            if (st == DRED_ERR_TIMEOUT) red_free(&x);
            else red_check(&x, st);
            continue;
        }
        red_check(&x, wait_st(&x));
    }
    /* the root waits first, folding early arrivals, and a member with another large
     * count comes before the last: everyone gets MISMATCH, not an error of the early fold */
    if (p >= 3) {
        int cnt = 40000 + (r == p - 1), st;
        double *sb = calloc((size_t)cnt, sizeof *sb), *rb = r == 0 ? calloc((size_t)cnt, sizeof *rb) : NULL;
        struct timespec ts = {0, r == 0 ? 0 : r == p - 1 ? 2000000L : 6000000L};
        nanosleep(&ts, NULL);
        st = dred_reduce(sb, rb, cnt, MPI_DOUBLE, MPI_SUM, 0, comm);
        if (st != DRED_ERR_MISMATCH)
            FAILQ("meet/large/%s: a larger count arriving early: status %d (%s), expected MISMATCH",
                  cname, st, dred_strerror(st));
        else
            count_check(0);
        free(sb);
        free(rb);
    }
    /* three in flight, waited in reverse */
    red_t v[3];
    for (int i = 0; i < 3; i++) {
        rng = mix64(rng);
        red_init(&v[i], comm, cname, i == 2 ? K_MAT : i, 0, (int)(300 * 1024 / esz(i == 2 ? K_MAT : i)),
                 i == 2 ? p - 1 : (int)(rng % (uint64_t)p), 0, rng);
        if (red_issue(&v[i]) != DRED_OK) v[i].f = NULL;
    }
    for (int i = 2; i >= 0; i--) {
        if (v[i].f == NULL) { red_free(&v[i]); continue; }
        red_check(&v[i], wait_st(&v[i]));
    }
    section_done("large", cname, comm, c0, e0);
}

/* 2. ring wrap: 100 in flight, waited in reverse; then a staggered wrap */
static void ring(MPI_Comm comm, const char *cname, uint64_t sd)
{
    enum { N = 100, A = 24, M = 40 };
    red_t *v = calloc(N, sizeof *v);
    int p, r;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    long c0 = g_checked, e0 = g_errs;
    uint64_t rng = mix64(sd ^ 0x5157);
    set_step("ring (100 in flight) on %s", cname);
    for (int i = 0; i < N; i++) {
        rng = mix64(rng);
        int kind = (int)(rng % K_N);
        red_init(&v[i], comm, cname, kind, (int)((rng >> 8) & 1), 1 + (int)((rng >> 12) % 8),
                 (int)((rng >> 20) % (uint64_t)p), (int)((rng >> 30) & 1), rng);
        red_issue(&v[i]);
    }
    for (int i = N - 1; i >= 0; i--) red_check(&v[i], wait_st(&v[i]));
    section_done("ring_reverse", cname, comm, c0, e0);

    /* staggered: issue A; each rank waits a different prefix subset; issue M more; wait the
     * rest in a rank-dependent order */
    c0 = g_checked; e0 = g_errs;
    set_step("ring (staggered) on %s", cname);
    for (int i = 0; i < A + M; i++) {
        if (i == A) {
            for (int j = 0; j < A; j++)
                if (((unsigned)j * 7u + (unsigned)r) % 3u == 0) red_check(&v[j], wait_st(&v[j]));
        }
        rng = mix64(rng);
        int kind = (int)(rng % K_N);
        red_init(&v[i], comm, cname, kind, (int)((rng >> 8) & 1), 1 + (int)((rng >> 12) % 8),
                 (int)((rng >> 20) % (uint64_t)p), (int)((rng >> 30) & 1), rng);
        red_issue(&v[i]);
    }
    uint64_t h = mix64(sd + (uint64_t)r * 7919);
    int start = (int)(h % (A + M)), step = 1 + 2 * (int)((h >> 8) % 5); /* odd: coprime-ish */
    for (int k = 0; k < 4 * (A + M); k++) {
        int i = (start + k * step) % (A + M);
        if (v[i].s != NULL) red_check(&v[i], wait_st(&v[i]));
    }
    for (int i = 0; i < A + M; i++)
        if (v[i].s != NULL) red_check(&v[i], wait_st(&v[i]));
    section_done("ring_staggered", cname, comm, c0, e0);
    free(v);
}

/* 3. mismatch */
enum { M_SMALL_LARGE, M_LARGE_SMALL, M_ODD_SMALL, M_SMALL_MEDIUM, M_COUNT, M_OP, M_ROOT,
       M_TYPE, M_UCOMM, M_N };
static const char *mname[M_N] = {"r0_small/others_large", "r0_large/others_small",
                                 "odd_small/even_large", "r0_small/others_medium_inline",
                                 "count_2_vs_1", "op_max_vs_sum", "root_1_vs_0",
                                 "longlong_vs_double", "user_op_noncomm_vs_comm"};
enum { O_NONE, O_ZERO_FIRST, O_ZERO_LAST, O_STAGGER, O_N };
static const char *oname[O_N] = {"no_order", "rank0_first", "rank0_last", "staggered"};

static void mismatch_one(MPI_Comm comm, const char *cname, int mode, int order, uint64_t salt)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    if (p < 2) return;
    int count = 1, root = 0;
    MPI_Datatype dt = MPI_DOUBLE;
    MPI_Op op = MPI_SUM;
    switch (mode) {
    case M_SMALL_LARGE: count = r == 0 ? 1 : 10000; break;
    case M_LARGE_SMALL: count = r == 0 ? 10000 : 1; break;
    case M_ODD_SMALL: count = r % 2 ? 1 : 10000; break;
    case M_SMALL_MEDIUM: count = r == 0 ? 1 : 100; break;
    case M_COUNT: count = r == 0 ? 2 : 1; break;
    case M_OP: op = r == 0 ? MPI_MAX : MPI_SUM; break;
    case M_ROOT: root = r == 0 ? 1 : 0; break;
    case M_TYPE: dt = r == 0 ? MPI_LONG_LONG : MPI_DOUBLE; break;
    case M_UCOMM: dt = t_mat; op = r == 0 ? op_mat : op_madd; break;
    }
    char what[200];
    snprintf(what, sizeof what, "meet/mismatch/%s(p=%d)/%s/%s", cname, p, mname[mode], oname[order]);
    set_step("%s", what);
    double *s = calloc(4 * 10000, sizeof(double)), *rb = calloc(4 * 10000, sizeof(double));
    gen(K_DBL, s, 4 * 10000, g_rank, salt);
    dred_future *f = NULL;
    int st = -1;
    int issue_now = order == O_NONE || (order == O_ZERO_FIRST && r == 0) ||
                    (order == O_ZERO_LAST && r != 0);
    if (order == O_STAGGER) {
        struct timespec ts = {0, 2000000L * (long)r};
        nanosleep(&ts, NULL);
        issue_now = 1;
    }
    if (issue_now) st = dred_ireduce(s, rb, count, dt, op, root, comm, DRED_TAG_AUTO, &f);
    if (order == O_ZERO_FIRST || order == O_ZERO_LAST) {
        MPI_Barrier(comm);
        if (!issue_now) {
            struct timespec ts = {0, 10000000L};
            nanosleep(&ts, NULL);
            st = dred_ireduce(s, rb, count, dt, op, root, comm, DRED_TAG_AUTO, &f);
        }
    }
    if (st != DRED_OK) {
        if (st == DRED_ERR_MISMATCH) count_check(0);
        else FAILQ("%s: dred_ireduce returned %d (%s)", what, st, dred_strerror(st));
    } else {
        double t0 = now_s();
        int w = dred_future_wait(f, (int)(wait_limit(20) * 1000));
        if (w == DRED_ERR_TIMEOUT)
            FAILQ("%s: no outcome after %.0f s (expected DRED_ERR_MISMATCH for every member)", what,
                  now_s() - t0);
        else if (w != DRED_ERR_MISMATCH)
            FAILQ("%s: status %d (%s), expected DRED_ERR_MISMATCH", what, w, dred_strerror(w));
        else
            count_check(0);
        dred_future_free(f);
    }
    free(s);
    free(rb);
    /* the next correct reductions on the same communicator are exact */
    red_t x;
    red_init(&x, comm, cname, K_DBL, 0, 3, p - 1, 0, salt ^ 1);
    red_issue(&x);
    red_check(&x, wait_st(&x));
    red_init(&x, comm, cname, K_MAT, 0, 2, (int)(salt % (uint64_t)p), 1, salt ^ 2);
    red_issue(&x);
    red_check(&x, wait_st(&x));
}

static void mismatch(MPI_Comm comm, const char *cname, uint64_t sd)
{
    int p;
    MPI_Comm_size(comm, &p);
    if (p < 2) return;
    long c0 = g_checked, e0 = g_errs;
    for (int m = 0; m < M_N; m++)
        for (int o = 0; o < O_N; o++) mismatch_one(comm, cname, m, o, mix64(sd + (uint64_t)(m * 16 + o)));
    /* a larger correct one after all that */
    red_t x;
    red_init(&x, comm, cname, K_DBL, 0, 3000, 0, 0, sd ^ 99);
    red_issue(&x);
    red_check(&x, wait_st(&x));
    section_done("mismatch", cname, comm, c0, e0);
}

/* 4. abandoned futures.  Root receive buffers of abandoned reductions stay allocated until
 * after dred_finalize (the reduction may still write them). */
static void *g_keep[4096];
static int g_nkeep;

static void abandon(MPI_Comm comm, const char *cname, uint64_t sd)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    long c0 = g_checked, e0 = g_errs;
    uint64_t rng = mix64(sd ^ 0xab);
    set_step("abandon (non-roots) on %s", cname);
    /* (a) non-roots free their pending future; the root waits: exact */
    for (int k = 0; k < 20; k++) {
        rng = mix64(rng);
        red_t x;
        red_init(&x, comm, cname, (int)(rng % K_N), (int)((rng >> 8) & 1), 1 + (int)((rng >> 12) % 6),
                 k % p, (int)((rng >> 30) & 1), rng);
        if (r != x.root) {
            if (red_issue(&x) == DRED_OK) dred_future_free(x.f);
            red_free(&x);
            MPI_Barrier(comm);
        } else {
            MPI_Barrier(comm);
            red_issue(&x);
            red_check(&x, wait_st(&x));
        }
    }
    /* (b) the root frees its pending future; non-roots wait: OK */
    set_step("abandon (root) on %s", cname);
    for (int k = 0; k < 6; k++) {
        rng = mix64(rng);
        red_t x;
        red_init(&x, comm, cname, K_DBL, 0, 1 + k, (k + 1) % p, 0, rng);
        if (r == x.root) {
            if (red_issue(&x) == DRED_OK) dred_future_free(x.f);
            if (g_nkeep < 4096) g_keep[g_nkeep++] = x.rb; else free(x.rb);
            x.rb = NULL;
            red_free(&x);
            MPI_Barrier(comm);
        } else {
            MPI_Barrier(comm);
            red_issue(&x);
            int st = wait_st(&x);
            red_check(&x, st);
        }
    }
    /* (c) everyone frees at once */
    set_step("abandon (all) on %s", cname);
    for (int k = 0; k < 6; k++) {
        rng = mix64(rng);
        red_t x;
        red_init(&x, comm, cname, K_INT, 0, 2, k % p, 0, rng);
        if (red_issue(&x) == DRED_OK) dred_future_free(x.f);
        if (x.rb) {
            if (g_nkeep < 4096) g_keep[g_nkeep++] = x.rb; else free(x.rb);
            x.rb = NULL;
        }
        red_free(&x);
    }
    /* then exact */
    set_step("after abandon on %s", cname);
    enum { N = 40 };
    red_t v[N];
    for (int i = 0; i < N; i++) {
        rng = mix64(rng);
        red_init(&v[i], comm, cname, (int)(rng % K_N), (int)((rng >> 8) & 1), 1 + (int)((rng >> 12) % 20),
                 (int)((rng >> 20) % (uint64_t)p), (int)((rng >> 30) & 1), rng);
        red_issue(&v[i]);
        if (i % 3 == 2)
            for (int j = i - 2; j <= i; j++) red_check(&v[j], wait_st(&v[j]));
    }
    for (int i = N - N % 3; i < N; i++) red_check(&v[i], wait_st(&v[i]));
    section_done("abandon", cname, comm, c0, e0);
}

/* 5. polling */
static void poll_sec(MPI_Comm comm, const char *cname, uint64_t sd)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    long c0 = g_checked, e0 = g_errs;
    uint64_t rng = mix64(sd ^ 0x9011);
    set_step("poll on %s", cname);
    for (int k = 0; k < 30; k++) {
        rng = mix64(rng);
        red_t x;
        red_init(&x, comm, cname, (int)(rng % K_N), (int)((rng >> 8) & 1), 1 + (int)((rng >> 12) % 30),
                 (int)((rng >> 20) % (uint64_t)p), (int)((rng >> 30) & 1), rng);
        if (((unsigned)r + (unsigned)k) % 3 == 0) {
            struct timespec ts = {0, 300000L * (long)(r + 1)};
            nanosleep(&ts, NULL);
        }
        if (red_issue(&x) != DRED_OK) { red_free(&x); continue; }
        double dl = now_s() + wait_limit(20);
        int st = DRED_ERR_TIMEOUT, mode = k % 3;
        long spins = 0;
        for (;;) {
            if (mode == 0) {
                int d = dred_future_is_done(x.f);
                if (d < 0) { st = d; break; }
                if (d == 1) { st = dred_future_get(x.f); break; }
            } else {
                st = dred_future_wait(x.f, mode == 1 ? 0 : 1);
                if (st != DRED_ERR_TIMEOUT) break;
            }
            spins++;
            if (now_s() > dl) break;
        }
        if (st == DRED_ERR_TIMEOUT)
            FAILQ("meet/poll/%s: not done after %.0f s of polling (%ld polls)", x.what,
                  wait_limit(20), spins);
        dred_future_free(x.f);
        if (st == DRED_ERR_TIMEOUT) red_free(&x);
        else red_check(&x, st);
    }
    /* several futures polled round robin */
    enum { N = 10 };
    red_t v[N];
    int done[N] = {0}, left = N;
    for (int i = 0; i < N; i++) {
        rng = mix64(rng);
        red_init(&v[i], comm, cname, (int)(rng % K_N), 0, 1 + (int)((rng >> 12) % 10),
                 (int)((rng >> 20) % (uint64_t)p), 0, rng);
        if (red_issue(&v[i]) != DRED_OK) { done[i] = 1; left--; red_free(&v[i]); }
    }
    double dl = now_s() + wait_limit(20);
    while (left > 0 && now_s() < dl)
        for (int i = N - 1; i >= 0; i--) {
            if (done[i]) continue;
            int d = (i & 1) ? dred_future_is_done(v[i].f)
                            : dred_future_wait(v[i].f, 0) != DRED_ERR_TIMEOUT;
            if (d) {
                int st = dred_future_get(v[i].f);
                dred_future_free(v[i].f);
                red_check(&v[i], st);
                done[i] = 1;
                left--;
            }
        }
    if (left > 0) {
        FAILQ("meet/poll/%s: %d of %d round-robin futures not done after %.0f s", cname, left, N,
              wait_limit(20));
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    section_done("poll", cname, comm, c0, e0);
}

/* 6. threads: each on its own communicator */
struct targ { MPI_Comm c1, c2; const char *n1, *n2; uint64_t sd; };

static void *thread_main(void *arg)
{
    struct targ *a = arg;
    MPI_Comm cs[2] = {a->c1, a->c2};
    const char *ns[2] = {a->n1, a->n2};
    uint64_t rng = mix64(a->sd);
    for (int c = 0; c < 2; c++) {
        if (cs[c] == MPI_COMM_NULL) continue;
        int p;
        MPI_Comm_size(cs[c], &p);
        enum { N = 60, B = 5 };
        red_t v[B];
        int nb = 0;
        for (int i = 0; i < N; i++) {
            rng = mix64(rng);
            red_t *x = &v[nb++];
            red_init(x, cs[c], ns[c], (int)(rng % K_N), (int)((rng >> 8) & 1),
                     1 + (int)((rng >> 12) % 40), (int)((rng >> 20) % (uint64_t)p),
                     (int)((rng >> 30) & 1), rng);
            red_issue(x);
            if (nb == B) {
                for (int j = 0; j < nb; j++) red_check(&v[j], wait_st(&v[j]));
                nb = 0;
            }
        }
        for (int j = 0; j < nb; j++) red_check(&v[j], wait_st(&v[j]));
    }
    return NULL;
}

static void threads_sec(MPI_Comm node, uint64_t sd)
{
    MPI_Comm a1, b1, a2, b2;
    int nr, np;
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &np);
    MPI_Comm_dup(g_comm, &a1);                            /* natural order */
    MPI_Comm_split(g_comm, 0, g_size - g_rank, &b1);      /* reversed      */
    MPI_Comm_dup(node, &a2);
    MPI_Comm_split(node, 0, np - nr, &b2);
    long c0 = g_checked, e0 = g_errs;
    set_step("threads");
    struct targ ta = {a1, a2, "thread0:dup_all", "thread0:dup_node", sd + 1};
    struct targ tb = {b1, b2, "thread1:reversed_all", "thread1:reversed_node", sd + 2};
    pthread_t t0, t1;
    pthread_create(&t0, NULL, thread_main, &ta);
    pthread_create(&t1, NULL, thread_main, &tb);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    section_done("threads", "two_threads", g_comm, c0, e0);
    MPI_Comm_free(&a1);
    MPI_Comm_free(&b1);
    MPI_Comm_free(&a2);
    MPI_Comm_free(&b2);
}

/* 6b. two threads wait on the same futures at once: the main thread with dred_future_get
 * in reverse order, a helper polling dred_future_is_done / dred_future_wait(f, 0) in
 * order; exactly one of them may finish each met reduction */
enum { SW_B = 8 };
struct shared_w {
    pthread_barrier_t bar;
    red_t *v;
    int n, stop, bad;
};

static void *shared_helper(void *arg)
{
    struct shared_w *w = arg;
    for (;;) {
        pthread_barrier_wait(&w->bar);
        if (w->stop) return NULL;
        double dl = now_s() + wait_limit(20);
        for (int i = 0; i < w->n; i++) {
            if (w->v[i].st != DRED_OK) continue;
            int d;
            while ((d = (i & 1) ? dred_future_is_done(w->v[i].f)
                                : dred_future_wait(w->v[i].f, 0) != DRED_ERR_TIMEOUT) == 0 &&
                   now_s() < dl)
                ;
            if (d != 1) w->bad = 1;
        }
        pthread_barrier_wait(&w->bar);
    }
}

static void shared_waiters(MPI_Comm comm, const char *cname, uint64_t sd)
{
    int p;
    MPI_Comm_size(comm, &p);
    long c0 = g_checked, e0 = g_errs;
    struct shared_w w;
    red_t v[SW_B];
    memset(&w, 0, sizeof w);
    pthread_barrier_init(&w.bar, NULL, 2);
    w.v = v;
    w.n = SW_B;
    pthread_t t;
    pthread_create(&t, NULL, shared_helper, &w);
    uint64_t rng = mix64(sd ^ 0x5a5a);
    set_step("shared waiters on %s", cname);
    for (int b = 0; b < 12; b++) {
        for (int i = 0; i < SW_B; i++) {
            rng = mix64(rng);
            red_init(&v[i], comm, cname, (int)(rng % K_N), (int)((rng >> 8) & 1),
                     1 + (int)((rng >> 12) % 12), (int)((rng >> 20) % (uint64_t)p),
                     (int)((rng >> 30) & 1), rng);
            red_issue(&v[i]);
        }
        pthread_barrier_wait(&w.bar);
        int st[SW_B];
        for (int i = SW_B - 1; i >= 0; i--)
            st[i] = v[i].st != DRED_OK ? v[i].st : wait_bounded(v[i].f, 20, v[i].what);
        pthread_barrier_wait(&w.bar);
        if (w.bad) {
            FAILQ("meet/shared_waiters/%s: the helper thread saw a future not done within 20 s "
                  "(or dred_future_is_done < 0) that the main thread's wait finished", cname);
            w.bad = 0;
        }
        for (int i = 0; i < SW_B; i++) {
            /* both threads must see the same status */
            if (v[i].st == DRED_OK) {
                int again = dred_future_get(v[i].f);
                if (again != st[i])
                    FAILQ("meet/shared_waiters/%s: dred_future_get says %d after %d", v[i].what,
                          again, st[i]);
                dred_future_free(v[i].f);
            }
            red_check(&v[i], st[i]);
        }
    }
    w.stop = 1;
    pthread_barrier_wait(&w.bar);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&w.bar);
    section_done("shared_waiters", cname, comm, c0, e0);
}

/* 5b. a bounded wait that times out (the other members are held back by a barrier) leaves
 * the reduction going: it then finishes exact; also a future freed after its wait timed out */
static void timeout_sec(MPI_Comm comm, const char *cname, uint64_t sd)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    if (p < 2) return;
    long c0 = g_checked, e0 = g_errs;
    uint64_t rng = mix64(sd ^ 0x7117);
    set_step("timeout on %s", cname);
    for (int k = 0; k < 8; k++) {
        rng = mix64(rng);
        red_t x;
        int root = (int)(rng % (uint64_t)p), early = k % p;
        red_init(&x, comm, cname, (int)((rng >> 8) % K_N), 0, 1 + (int)((rng >> 12) % 10), root,
                 (int)((rng >> 30) & 1), rng);
        if (r == early) {
            red_issue(&x);
            int st = x.st == DRED_OK ? dred_future_wait(x.f, 30) : x.st;
            if (st != DRED_ERR_TIMEOUT)
                FAILQ("meet/timeout/%s: dred_future_wait(30 ms) before the others called "
                      "returned %d (%s), expected DRED_ERR_TIMEOUT", x.what, st, dred_strerror(st));
            MPI_Barrier(comm);
            if (k % 4 == 3 && r != root) { /* give it up after the timeout */
                if (x.st == DRED_OK) dred_future_free(x.f);
                red_free(&x);
                continue;
            }
        } else {
            MPI_Barrier(comm);
            red_issue(&x);
        }
        red_check(&x, wait_st(&x));
    }
    section_done("timeout", cname, comm, c0, e0);
}

/* 7. more one-node groups than rings (DRED_MEET_GROUPS = 64): 72 splits of the node
 * communicator; two rounds of one reduction on each, all in flight at once */
static void full_sec(MPI_Comm node, uint64_t sd)
{
    enum { S = 72 };
    MPI_Comm cs[S];
    int nr;
    MPI_Comm_rank(node, &nr);
    long c0 = g_checked, e0 = g_errs;
    set_step("full table");
    int np;
    MPI_Comm_size(node, &np);
    for (int i = 0; i < S; i++) {
        /* even i: every node member, in the order of permutation i/2 (distinct orders as long
         * as np! allows: 120 for 5 members); odd i: two random ordered halves */
        uint64_t h = mix64(sd + (uint64_t)i * 1000003u + (uint64_t)g_rank);
        int color = (int)(h & 1), key = (int)((h >> 8) % 1000);
        if (i % 2 == 0) {
            int pool[64], m = np < 64 ? np : 64, idx = i / 2;
            for (int k = 0; k < m; k++) pool[k] = k;
            color = 0;
            for (int pos = 0; pos < m; pos++) { /* factorial-base digits of idx */
                int left = m - pos, d = idx % left;
                idx /= left;
                if (pool[d] == nr) key = pos;
                pool[d] = pool[left - 1];
            }
        }
        MPI_Comm_split(node, color, key, &cs[i]);
    }
    for (int round = 0; round < 2; round++) {
        red_t v[S];
        for (int i = 0; i < S; i++) {
            int p;
            MPI_Comm_size(cs[i], &p);
            uint64_t rng = mix64(sd ^ ((uint64_t)i << 20) ^ (uint64_t)round);
            /* same salt for every member of cs[i]: derived from i and the color alone */
            int r;
            MPI_Comm_rank(cs[i], &r);
            red_init(&v[i], cs[i], "split_random", (int)(rng % K_N), (int)((rng >> 8) & 1),
                     1 + (int)((rng >> 12) % 8), (int)((rng >> 20) % (uint64_t)p), 0, rng);
            red_issue(&v[i]);
        }
        for (int i = S - 1; i >= 0; i--) red_check(&v[i], wait_st(&v[i]));
    }
    for (int i = 0; i < S; i++) MPI_Comm_free(&cs[i]);
    section_done("full_table", "node_splits", g_comm, c0, e0);
}

/* A large reduce (512 KiB of doubles, SUM) whose root, in a blocking call, folds the early
 * members' operands while it waits, then the slot spills: the last member has no pool room
 * for its operand (the application took the pool with dred_alloc_mem) and comes 100 ms
 * late.  dred-master must get the root's operand alone, not with the early ones folded in
 * (they would count twice).  Then the same in place (the root folds nothing early: its
 * operand is where the fold would go). */
static void prefold_spill(MPI_Comm comm, const char *cname)
{
    enum { N = 65536, MAXB = 4096 };
    int r, p, nblk = 0;
    void *blk[MAXB];
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    if (p < 3) return;
    double *a = malloc(sizeof(double) * N), *b = malloc(sizeof(double) * N);
    if (a == NULL || b == NULL) { fail("prefold-spill: out of memory"); MPI_Abort(MPI_COMM_WORLD, 2); }
    for (int i = 0; i < N; i++) a[i] = r + 1 + i % 100;
    if (r == p - 1) nblk = pool_take_all(blk, MAXB);
    for (int inplace = 0; inplace < 2; inplace++) {
        int bad = 0, st;
        set_step("prefold-spill/%s/%s", cname, inplace ? "in_place" : "sendbuf");
        if (r == 0 && inplace) memcpy(b, a, sizeof(double) * N);
        MPI_Barrier(comm);
        if (r == p - 1) {
            double t0 = now_s();
            while (now_s() - t0 < 0.1) {}
        }
        st = dred_reduce(r == 0 && inplace ? MPI_IN_PLACE : a, b, N, MPI_DOUBLE, MPI_SUM, 0, comm);
        for (int i = 0; r == 0 && i < N && !bad; i++)
            bad = b[i] != (double)p * (p + 1) / 2 + (double)p * (i % 100);
        g_checked++;
        if (st != DRED_OK || bad)
            fail("prefold-spill/%s/%s: rank %d got %s%s (b[0] %g, expected %g)", cname,
                 inplace ? "in_place" : "sendbuf", r, dred_strerror(st),
                 bad ? ", a wrong result" : "", b[0], (double)p * (p + 1) / 2);
        else if (r == 0)
            pass("prefold-spill/%s/%s: the last member's pool full, the root folding early",
                 cname, inplace ? "in_place" : "sendbuf");
    }
    for (int k = 0; k < nblk; k++) dred_free_mem(blk[k]);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    uint64_t seed = 4242;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-q")) g_quick = 1;
    }
    test_init(&argc, &argv, "meet");
    MPI_Comm_group(g_comm, &g_world_grp);
    MPI_Type_contiguous(4, MPI_DOUBLE, &t_mat);
    MPI_Type_commit(&t_mat);
    MPI_Op_create(mat_op, 0, &op_mat);
    MPI_Op_create(madd_op, 1, &op_madd);

    /* communicators */
    MPI_Comm half, rev, single, node, node_rev_half;
    int lo = g_rank < (g_size + 1) / 2;
    MPI_Comm_split(g_comm, lo, g_rank, &half);
    MPI_Comm_split(g_comm, 0, g_size - g_rank, &rev);
    MPI_Comm_split(g_comm, g_rank, 0, &single);
    MPI_Comm_split_type(g_comm, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    int nr, np;
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &np);
    MPI_Comm_split(node, nr % 2, np - nr, &node_rev_half);
    int nodes = 0;
    {
        int nn = nr == 0;
        MPI_Allreduce(&nn, &nodes, 1, MPI_INT, MPI_SUM, g_comm);
        if (g_rank == 0) printf("# meet: P=%d on %d node(s), this node %d member(s)\n", g_size, nodes, np);
        fflush(stdout);
    }
    int nodeid = g_rank; /* the node leader's rank: the same in every member of `node` */
    MPI_Bcast(&nodeid, 1, MPI_INT, 0, node);
    /* color: what makes a communicator's members draw the same parameters (and different
     * communicators of one split different ones) */
    struct { MPI_Comm c; const char *name; int color; } cs[] = {
        {g_comm, "dred_comm", 0}, {half, lo ? "low_half" : "high_half", lo},
        {rev, "reversed", 0}, {single, "single", g_rank}, {node, "node", nodeid},
        {node_rev_half, nr % 2 ? "node_odd_rev" : "node_even_rev", 2 * nodeid + nr % 2},
    };
    int ncs = (int)(sizeof cs / sizeof *cs);
    double t0 = now_s();

    for (int i = 0; i < ncs; i++) plain(cs[i].c, cs[i].name, mix64(seed + 100 * (uint64_t)i) + (uint64_t)cs[i].color);
    if (g_rank == 0) printf("# plain done at %.1f s\n", now_s() - t0);
    for (int i = 0; i < ncs; i++) lane(cs[i].c, cs[i].name, mix64(seed + 300 + 100 * (uint64_t)i) + (uint64_t)cs[i].color);
    if (g_rank == 0) printf("# lane done at %.1f s\n", now_s() - t0);
    large(g_comm, "dred_comm", seed + 70);
    large(node, "node", seed + 71 + 1000 * (uint64_t)nodeid);
    large(rev, "reversed", seed + 72);
    large(half, lo ? "low_half" : "high_half", seed + 73 + (uint64_t)lo);
    prefold_spill(node, "node");
    if (g_rank == 0) printf("# large done at %.1f s\n", now_s() - t0);
    ring(g_comm, "dred_comm", seed + 1);
    ring(node, "node", seed + 2 + 1000 * (uint64_t)nodeid);
    ring(half, lo ? "low_half" : "high_half", seed + 3 + (uint64_t)lo);
    ring(single, "single", seed + 5);
    if (g_rank == 0) printf("# ring done at %.1f s\n", now_s() - t0);
    mismatch(g_comm, "dred_comm", seed + 10);
    mismatch(node, "node", seed + 11 + 1000 * (uint64_t)nodeid);
    /* (across nodes every mismatch goes through dred-master, whatever the members' order:
     * dred_comm's cases cover it there, at a third of the time) */
    if (nodes == 1) mismatch(rev, "reversed", seed + 12);
    if (g_rank == 0) printf("# mismatch done at %.1f s\n", now_s() - t0);
    abandon(node, "node", seed + 20 + 1000 * (uint64_t)nodeid);
    abandon(g_comm, "dred_comm", seed + 21);
    abandon(single, "single", seed + 22);
    if (g_rank == 0) printf("# abandon done at %.1f s\n", now_s() - t0);
    poll_sec(node, "node", seed + 30 + 1000 * (uint64_t)nodeid);
    poll_sec(rev, "reversed", seed + 31);
    poll_sec(single, "single", seed + 32);
    timeout_sec(node, "node", seed + 33 + 1000 * (uint64_t)nodeid);
    timeout_sec(g_comm, "dred_comm", seed + 34);
    if (g_rank == 0) printf("# poll done at %.1f s\n", now_s() - t0);
    threads_sec(node, seed + 40);
    shared_waiters(node, "node", seed + 41 + 1000 * (uint64_t)nodeid);
    shared_waiters(rev, "reversed", seed + 42);
    /* mismatches again on a communicator whose ring is full of abandoned slots (spills) */
    for (int m = 0; m < M_N; m += 2)
        mismatch_one(node, "node_after_abandon", m, m % O_N, seed + 43 + 1000 * (uint64_t)nodeid + (uint64_t)m);
    if (g_rank == 0) printf("# threads done at %.1f s\n", now_s() - t0);
    full_sec(node, seed + 50 + 1000 * (uint64_t)nodeid);
    /* and the communicators of the first sections still work (rings full or not) */
    plain(node, "node_again", seed + 60 + 1000 * (uint64_t)nodeid);
    if (g_rank == 0) printf("# full done at %.1f s\n", now_s() - t0);
    fflush(stdout);

    long tot = 0, mine = g_checked;
    MPI_Reduce(&mine, &tot, 1, MPI_LONG, MPI_SUM, 0, g_comm);
    if (g_rank == 0) printf("# meet: %ld member checks in all\n", tot);

    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&single);
    MPI_Comm_free(&node_rev_half);
    MPI_Comm_free(&node);
    int rc = test_finish();
    for (int i = 0; i < g_nkeep; i++) free(g_keep[i]);
    return rc;
}
