/*
 * badinput.c -- every bad argument returns the right status, never crashes or hangs, and
 * never disturbs a reduction already in flight; members that disagree get
 * DRED_ERR_MISMATCH and the communicator stays usable.
 *
 *   dredrun -n P mpi_badinput
 *
 * 1. A good reduction (tag 100) is started by every member but the last, which joins only
 *    after everybody made the bad calls, so it is certainly in flight meanwhile.
 * 2. Bad calls, each must return DRED_ERR_ARG and set *future to NULL: NULL sendbuf at a
 *    non-root and at the root, NULL recvbuf at the root, NULL future pointer, count < 0,
 *    root < 0, root >= size, MPI_COMM_NULL, MPI_COMM_WORLD (includes dred-master),
 *    MPI_COMM_SELF, MPI_DATATYPE_NULL, MPI_OP_NULL, ops that do not apply to the type
 *    (BAND/DOUBLE, MAXLOC/INT, SUM/C_BOOL), SUM on a struct of int and double (a predefined op
 *    needs one basic type; strided types of one type are reduced, tests/mpi/types.c), tag < -1, the tag of
 *    the in-flight reduction, MPI_IN_PLACE at a non-root.  Explicit-tag and DRED_TAG_AUTO
 *    forms; member 0 makes extra rejected DRED_TAG_AUTO calls, which must not consume an
 *    auto-tag (the DRED_TAG_AUTO reductions after them must still match).  The tag of the
 *    in-flight reduction is refused from the member's own state, not its arguments, so that
 *    call takes its turn: the late member's second use of the tag must end DRED_ERR_ARG.
 * 3. The good reduction's result is checked against MPI_Reduce.
 * 4. dred_future_is_done(NULL) == -1, dred_future_get(NULL) == DRED_ERR_ARG,
 *    dred_future_free(NULL) is harmless, dred_strerror never returns NULL.
 * 5. Disagreement (P >= 2), the last member differing: count, datatype size (INT vs
 *    DOUBLE), root, op (SUM vs MAX; once with DRED_TAG_AUTO): every member must get
 *    DRED_ERR_MISMATCH; afterwards the same tag and a DRED_TAG_AUTO reduction work.
 * 6. Bad dred_iallreduce / dred_allreduce and dred_ibcast / dred_bcast arguments, in the
 *    explicit-tag, auto-tag and blocking forms; sendbuf and recvbuf that are the same
 *    buffer or overlap (allreduce, and a reduce's root) are DRED_ERR_ARG; buffers that
 *    only touch, and a matrix column reduced into the next one through a strided type,
 *    reduce exactly (coll_args).
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

#define N 1000

static void pass0(const char *what)
{
    if (g_rank == 0) pass("%s", what);
}

static void expect_status(const char *what, int expect, const void *sb, void *rb, int count,
                          MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, int tag)
{
    static char sentinel;
    dred_future *f = (dred_future *)&sentinel;
    char check[200];
    snprintf(check, sizeof check, "badinput/%s/%s", what, tag == DRED_TAG_AUTO ? "auto" : "tag");
    set_step("%s", check);
    int st = dred_ireduce(sb, rb, count, dt, op, root, comm, tag, &f);
    if (st != expect) {
        fail("%s: returned %d (%s), expected %d (%s)", check, st, dred_strerror(st), expect,
             dred_strerror(expect));
        if (st == DRED_OK && f && f != (dred_future *)&sentinel) dred_future_free(f);
    } else if (f != NULL) {
        fail("%s: returned %d but *future was not set to NULL", check, st);
    } else
        pass0(check);
}

static void expect_null_future(const char *what, int tag, int count, int root)
{
    char check[200];
    static int buf[N], rbuf[N];
    snprintf(check, sizeof check, "badinput/%s/%s", what, tag == DRED_TAG_AUTO ? "auto" : "tag");
    set_step("%s", check);
    int st = dred_ireduce(buf, rbuf, count, MPI_INT, MPI_SUM, root, g_comm, tag, NULL);
    if (st != DRED_ERR_ARG)
        fail("%s: returned %d (%s), expected DRED_ERR_ARG", check, st, dred_strerror(st));
    else
        pass0(check);
}

/* member r's operand, element i */
static int operand(int r, int i, int salt)
{
    return (i * 7 + r * 13 + salt) % 1000 - 500;
}

/* member r's entry i of the matrix column the strided-type checks reduce */
static int column(int r, int i)
{
    return (i * 3 + r * 5) % 100;
}

static void fill(int *b, int n, int salt)
{
    for (int i = 0; i < n; i++) b[i] = operand(g_rank, i, salt);
}

/* a normal reduction on g_comm with `tag`, checked against MPI_Reduce */
static void good_reduction(const char *what, int tag, int root)
{
    int *s = malloc(sizeof(int) * N), *rd = calloc(N, sizeof(int)), *rm = calloc(N, sizeof(int));
    fill(s, N, tag % 1000 + root); /* no int overflow for tag = INT_MAX */
    char check[200];
    snprintf(check, sizeof check, "badinput/%s", what);
    set_step("%s", check);
    dred_future *f = NULL;
    int st = dred_ireduce(s, rd, N, MPI_INT, MPI_SUM, root, g_comm, tag, &f);
    if (st == DRED_OK) {
        st = wait_bounded(f, 30, check);
        dred_future_free(f);
    }
    ref_reduce(s, rm, N, MPI_INT, MPI_SUM, root, g_comm);
    if (st != DRED_OK) fail("%s: status %d (%s)", check, st, dred_strerror(st));
    else if (g_rank == root && memcmp(rd, rm, sizeof(int) * N)) fail("%s: wrong result", check);
    else if (g_rank == root) pass("%s", check);
    free(s); free(rd); free(rm);
}

/* every member starts a reduction where the last member differs; all must get MISMATCH */
static void mismatch(const char *what, int tag, int count_last, MPI_Datatype dt_last,
                     int root_last, MPI_Op op_last)
{
    int last = g_rank == g_size - 1;
    double *s = calloc(N, sizeof(double)), *r = calloc(N, sizeof(double));
    for (int i = 0; i < N; i++) s[i] = 1.0;
    int count = last ? count_last : N;
    MPI_Datatype dt = last ? dt_last : MPI_INT;
    int root = last ? root_last : 0;
    MPI_Op op = last ? op_last : MPI_SUM;
    char check[200];
    snprintf(check, sizeof check, "badinput/mismatch/%s/%s", what,
             tag == DRED_TAG_AUTO ? "auto" : "tag");
    set_step("%s", check);
    dred_future *f = NULL;
    int st = dred_ireduce(s, r, count, dt, op, root, g_comm, tag, &f);
    if (st == DRED_OK) {
        st = wait_bounded(f, 30, check);
        dred_future_free(f);
    }
    if (st != DRED_ERR_MISMATCH)
        fail("%s: got %d (%s), expected DRED_ERR_MISMATCH on every member", check, st,
             dred_strerror(st));
    int ok = st == DRED_ERR_MISMATCH, all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g_comm);
    if (all) pass0(check);
    free(s); free(r);
    /* the communicator and the tag still work */
    char again[200];
    snprintf(again, sizeof again, "mismatch/%s/then same tag works", what);
    good_reduction(again, tag == DRED_TAG_AUTO ? 400 : tag, 0);
    snprintf(again, sizeof again, "mismatch/%s/then auto tag works", what);
    good_reduction(again, DRED_TAG_AUTO, g_size - 1);
}

/* 6. dred_iallreduce / dred_allreduce (kind 0) and dred_ibcast / dred_bcast (kind 1): a bad
 * call returns `expect` (nonblocking: *future NULL) and takes no turn.  `tag` AUTO with
 * `blocking` is the blocking form. */
static void expect_coll(const char *what, int expect, int kind, int blocking, const void *sb,
                        void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                        int tag)
{
    static char sentinel;
    dred_future *f = (dred_future *)&sentinel;
    char check[200];
    int st;
    snprintf(check, sizeof check, "badinput/%s/%s/%s", kind ? "bcast" : "allreduce", what,
             blocking ? "blocking" : tag == DRED_TAG_AUTO ? "auto" : "tag");
    set_step("%s", check);
    if (blocking) {
        f = NULL;
        st = kind ? dred_bcast(rb, count, dt, root, comm) : dred_allreduce(sb, rb, count, dt, op, comm);
    } else {
        st = kind ? dred_ibcast(rb, count, dt, root, comm, tag, &f)
                  : dred_iallreduce(sb, rb, count, dt, op, comm, tag, &f);
    }
    if (st != expect) {
        fail("%s: returned %d (%s), expected %d (%s)", check, st, dred_strerror(st), expect,
             dred_strerror(expect));
        if (st == DRED_OK && f && f != (dred_future *)&sentinel) {
            (void)wait_bounded(f, 30, check);
            dred_future_free(f);
        }
    } else if (f != NULL) {
        fail("%s: returned %d but *future was not set to NULL", check, st);
    } else
        pass0(check);
}

/* A user op on one column of an N x 2 matrix of ints (MPI_Type_vector(N, 1, 2)): what dred
 * hands it is an image of the typed bytes, holes included (the IMAGE layout). */
static void colsum_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int *a = in;
    int *b = inout;
    (void)dt;
    for (int e = 0; e < *len; e++)
        for (int j = 0; j < N; j++) b[e * (2 * N - 1) + 2 * j] += a[e * (2 * N - 1) + 2 * j];
}

/* Bad allreduce and bcast arguments, in each form (explicit tag, auto tag, blocking), then
 * the buffers an operand and a result may share: the same address or overlapping bytes
 * are refused (MPI forbids them; dred would read operand bytes the result overwrote), at
 * an allreduce's every member and a reduce's root; buffers that only touch, and columns
 * of one matrix interleaved through a strided type's holes, are fine and reduce exactly,
 * where a strided type's elements that share bytes are refused (predefined and user ops). */
static void coll_args(void)
{
    static int sb[2 * N], rb[N];
    double dsb[N], drb[N];
    const int P = g_size, me = g_rank;
    struct { int tag, blocking; } forms[3] = {{210, 0}, {DRED_TAG_AUTO, 0}, {DRED_TAG_AUTO, 1}};
    memset(dsb, 0, sizeof dsb);
    for (int k = 0; k < 3; k++) {
        int t = forms[k].tag, b = forms[k].blocking;
        expect_coll("null_sendbuf", DRED_ERR_ARG, 0, b, NULL, rb, N, MPI_INT, MPI_SUM, 0, g_comm, t);
        expect_coll("null_recvbuf", DRED_ERR_ARG, 0, b, sb, NULL, N, MPI_INT, MPI_SUM, 0, g_comm, t);
        expect_coll("count_negative", DRED_ERR_ARG, 0, b, sb, rb, -1, MPI_INT, MPI_SUM, 0, g_comm, t);
        expect_coll("comm_null", DRED_ERR_ARG, 0, b, sb, rb, N, MPI_INT, MPI_SUM, 0, MPI_COMM_NULL, t);
        expect_coll("comm_world", DRED_ERR_ARG, 0, b, sb, rb, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, t);
        expect_coll("comm_self", DRED_ERR_ARG, 0, b, sb, rb, N, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF, t);
        expect_coll("datatype_null", DRED_ERR_ARG, 0, b, sb, rb, N, MPI_DATATYPE_NULL, MPI_SUM, 0, g_comm, t);
        expect_coll("op_null", DRED_ERR_ARG, 0, b, sb, rb, N, MPI_INT, MPI_OP_NULL, 0, g_comm, t);
        expect_coll("band_on_double", DRED_ERR_ARG, 0, b, dsb, drb, N, MPI_DOUBLE, MPI_BAND, 0, g_comm, t);
        expect_coll("same_buffer", DRED_ERR_ARG, 0, b, sb, sb, N, MPI_INT, MPI_SUM, 0, g_comm, t);
        expect_coll("recvbuf_inside_sendbuf", DRED_ERR_ARG, 0, b, sb, sb + 3, N, MPI_INT, MPI_SUM, 0, g_comm, t);
        expect_coll("sendbuf_inside_recvbuf", DRED_ERR_ARG, 0, b, sb + 3, sb, N, MPI_INT, MPI_SUM, 0, g_comm, t);
        expect_coll("null_buffer", DRED_ERR_ARG, 1, b, NULL, NULL, N, MPI_INT, MPI_OP_NULL, 0, g_comm, t);
        expect_coll("count_negative", DRED_ERR_ARG, 1, b, NULL, rb, -1, MPI_INT, MPI_OP_NULL, 0, g_comm, t);
        expect_coll("root_negative", DRED_ERR_ARG, 1, b, NULL, rb, N, MPI_INT, MPI_OP_NULL, -1, g_comm, t);
        expect_coll("root_eq_size", DRED_ERR_ARG, 1, b, NULL, rb, N, MPI_INT, MPI_OP_NULL, P, g_comm, t);
        expect_coll("datatype_null", DRED_ERR_ARG, 1, b, NULL, rb, N, MPI_DATATYPE_NULL, MPI_OP_NULL, 0, g_comm, t);
        expect_coll("comm_world", DRED_ERR_ARG, 1, b, NULL, rb, N, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD, t);
        /* a reduce's root reads its operand and writes its result: the same rule */
        expect_status("same_buffer_at_root", DRED_ERR_ARG, sb, sb, N, MPI_INT, MPI_SUM, me, g_comm, t);
        expect_status("overlap_at_root", DRED_ERR_ARG, sb, sb + N / 2, N, MPI_INT, MPI_SUM, me, g_comm, t);
    }
    expect_coll("tag_minus_2", DRED_ERR_ARG, 0, 0, sb, rb, N, MPI_INT, MPI_SUM, 0, g_comm, -2);
    expect_coll("tag_minus_2", DRED_ERR_ARG, 1, 0, NULL, rb, N, MPI_INT, MPI_OP_NULL, 0, g_comm, -2);

    /* accepted: buffers that touch, and a matrix's column 0 reduced into its column 1 */
    {
        int *m = malloc(sizeof(int) * (2 * N + 2)), bad = 0, st;
        MPI_Datatype col;
        MPI_Op colsum;
        fill(m, N, 0);
        set_step("badinput/allreduce/buffers_that_touch");
        st = dred_allreduce(m, m + N, N, MPI_INT, MPI_SUM, g_comm);
        for (int i = 0; i < N && st == DRED_OK; i++) {
            int want = 0;
            for (int r = 0; r < P; r++) want += operand(r, i, 0);
            bad += m[N + i] != want || m[i] != operand(me, i, 0);
        }
        if (st != DRED_OK || bad)
            fail("badinput/allreduce/buffers_that_touch: %s, %d wrong", dred_strerror(st), bad);
        else
            pass0("badinput/allreduce/buffers_that_touch");
        MPI_Type_vector(N, 1, 2, MPI_INT, &col);
        MPI_Type_commit(&col);
        for (int i = 0; i < N; i++) {
            m[2 * i] = column(me, i);
            m[2 * i + 1] = -1;
        }
        set_step("badinput/allreduce/interleaved_columns");
        st = dred_allreduce(m, m + 1, 1, col, MPI_SUM, g_comm);
        bad = 0;
        for (int i = 0; i < N && st == DRED_OK; i++) {
            int want = 0;
            for (int r = 0; r < P; r++) want += column(r, i);
            bad += m[2 * i + 1] != want || m[2 * i] != column(me, i);
        }
        if (st != DRED_OK || bad)
            fail("badinput/allreduce/interleaved_columns: %s, %d wrong", dred_strerror(st), bad);
        else
            pass0("badinput/allreduce/interleaved_columns");
        /* a user op on the same columns, reduced at a root (the IMAGE layout) */
        MPI_Op_create(colsum_op, 1, &colsum);
        for (int i = 0; i < N; i++) m[2 * i + 1] = -1;
        set_step("badinput/reduce/interleaved_columns_user_op");
        st = dred_reduce(m, m + 1, 1, col, colsum, 0, g_comm);
        bad = 0;
        for (int i = 0; i < N && st == DRED_OK; i++) {
            int want = 0;
            for (int r = 0; r < P; r++) want += column(r, i);
            bad += (me == 0 && m[2 * i + 1] != want) || (me != 0 && m[2 * i + 1] != -1) ||
                   m[2 * i] != column(me, i);
        }
        if (st != DRED_OK || bad)
            fail("badinput/reduce/interleaved_columns_user_op: %s, %d wrong", dred_strerror(st), bad);
        else
            pass0("badinput/reduce/interleaved_columns_user_op");
        /* refused: the column at m and the one at m + 2 (a row down) share N - 1 elements */
        expect_coll("strided_overlap", DRED_ERR_ARG, 0, 0, m, m + 2, 1, col, MPI_SUM, 0, g_comm, 211);
        expect_coll("strided_overlap", DRED_ERR_ARG, 0, 1, m, m + 2, 1, col, MPI_SUM, 0, g_comm,
                    DRED_TAG_AUTO);
        expect_status("strided_overlap_at_root", DRED_ERR_ARG, m, m + 2, 1, col, MPI_SUM, me,
                      g_comm, 212);
        expect_status("strided_overlap_user_op_at_root", DRED_ERR_ARG, m, m + 2, 1, col, colsum,
                      me, g_comm, DRED_TAG_AUTO);
        MPI_Op_free(&colsum);
        MPI_Type_free(&col);
        free(m);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, "badinput");
    const int P = g_size, me = g_rank, late = P - 1, groot = 0;
    int *gs = malloc(sizeof(int) * N), *gd = calloc(N, sizeof(int)), *gm = calloc(N, sizeof(int));
    fill(gs, N, 1);

    /* 1. the good reduction, in flight during the bad calls (the last member joins later) */
    dred_future *good = NULL;
    int gst = DRED_OK;
    if (me != late || P == 1) {
        set_step("good reduction tag 100");
        gst = dred_ireduce(gs, gd, N, MPI_INT, MPI_SUM, groot, g_comm, 100, &good);
        if (gst != DRED_OK) fail("badinput/good tag 100: dred_ireduce returned %d", gst);
    }

    /* 2. bad calls */
    static int sb[N], rb[N];
    double dsb[N], drb[N];
    bool bsb[N], brb[N];
    memset(dsb, 0, sizeof dsb); memset(bsb, 0, sizeof bsb);
    int other = (me + 1) % P;
    int tags[2] = {200, DRED_TAG_AUTO};
    MPI_Datatype vec; /* {int, double}: mixed basic types */
    MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 8},
                           (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &vec);
    MPI_Type_commit(&vec);
    for (int t = 0; t < 2; t++) {
        int tag = tags[t];
        if (P >= 2)
            expect_status("null_sendbuf_nonroot", DRED_ERR_ARG, NULL, rb, N, MPI_INT, MPI_SUM, other, g_comm, tag);
        expect_status("null_sendbuf_root", DRED_ERR_ARG, NULL, rb, N, MPI_INT, MPI_SUM, me, g_comm, tag);
        expect_status("null_recvbuf_root", DRED_ERR_ARG, sb, NULL, N, MPI_INT, MPI_SUM, me, g_comm, tag);
        expect_null_future("null_future_ptr", tag, N, 0);
        expect_status("count_negative", DRED_ERR_ARG, sb, rb, -1, MPI_INT, MPI_SUM, 0, g_comm, tag);
        expect_status("root_negative", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, -1, g_comm, tag);
        expect_status("root_eq_size", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, P, g_comm, tag);
        expect_status("root_gt_size", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, P + 5, g_comm, tag);
        expect_status("comm_null", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, 0, MPI_COMM_NULL, tag);
        expect_status("comm_world", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, tag);
        expect_status("comm_self", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF, tag);
        expect_status("datatype_null", DRED_ERR_ARG, sb, rb, N, MPI_DATATYPE_NULL, MPI_SUM, 0, g_comm, tag);
        expect_status("op_null", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_OP_NULL, 0, g_comm, tag);
        expect_status("band_on_double", DRED_ERR_ARG, dsb, drb, N, MPI_DOUBLE, MPI_BAND, 0, g_comm, tag);
        expect_status("maxloc_on_int", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_MAXLOC, 0, g_comm, tag);
        expect_status("sum_on_c_bool", DRED_ERR_ARG, bsb, brb, N, MPI_C_BOOL, MPI_SUM, 0, g_comm, tag);
        expect_status("sum_on_mixed_struct", DRED_ERR_ARG, sb, rb, N / 8, vec, MPI_SUM, 0, g_comm, tag);
        if (P >= 2)
            expect_status("in_place_at_nonroot", DRED_ERR_ARG, MPI_IN_PLACE, rb, N, MPI_INT, MPI_SUM, other, g_comm, tag);
    }
    expect_status("tag_minus_2", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, 0, g_comm, -2);
    expect_status("tag_int_min", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, 0, g_comm, INT_MIN);
    if (P >= 2 && me != late) {
        /* tag 100 is in flight here: the last member has not joined it yet */
        expect_status("tag_reused_in_flight", DRED_ERR_ARG, sb, rb, N, MPI_INT, MPI_SUM, groot, g_comm, 100);
        if (me == 0 && good && dred_future_is_done(good) != 0)
            fail("badinput/good tag 100: done before its last member joined");
    }
    if (me == 0) /* extra rejected auto calls on member 0 only: must not consume auto tags */
        for (int k = 0; k < 3; k++)
            expect_status("member0_extra_rejected_auto", DRED_ERR_ARG, sb, rb, -5, MPI_INT, MPI_SUM, 0, g_comm, DRED_TAG_AUTO);
    MPI_Type_free(&vec);

    /* 3. the last member joins the good reduction; everyone checks it */
    MPI_Barrier(g_comm);
    if (me == late && P >= 2) {
        set_step("good reduction tag 100 (late member)");
        gst = dred_ireduce(gs, gd, N, MPI_INT, MPI_SUM, groot, g_comm, 100, &good);
        if (gst != DRED_OK) fail("badinput/good tag 100: late dred_ireduce returned %d", gst);
    }
    if (gst == DRED_OK) {
        gst = wait_bounded(good, 30, "badinput/good tag 100");
        dred_future_free(good);
    }
    ref_reduce(gs, gm, N, MPI_INT, MPI_SUM, groot, g_comm);
    if (gst != DRED_OK) fail("badinput/good_reduction_during_bad_calls: status %d (%s)", gst, dred_strerror(gst));
    else if (me == groot) {
        if (memcmp(gd, gm, sizeof(int) * N)) fail("badinput/good_reduction_during_bad_calls: wrong result");
        else pass("badinput/good_reduction_during_bad_calls");
    }
    /* A refusal from a member's own state takes its turn: the members that were refused
     * tag 100 while it was in flight joined its second use saying so, and the late member's
     * second use of it (accepted here: its first use ended) ends DRED_ERR_ARG too. */
    if (P >= 2 && me == late) {
        dred_future *again = NULL;
        set_step("tag 100 again (late member)");
        int st = dred_ireduce(gs, gd, N, MPI_INT, MPI_SUM, groot, g_comm, 100, &again);
        if (st == DRED_OK) {
            st = wait_bounded(again, 30, "badinput/tag 100 again");
            dred_future_free(again);
        }
        if (st != DRED_ERR_ARG)
            fail("badinput/tag_reused_in_flight_is_collective: the late member's second use of "
                 "tag 100 ended %d (%s), expected DRED_ERR_ARG", st, dred_strerror(st));
        else
            pass("badinput/tag_reused_in_flight_is_collective");
    }
    good_reduction("auto_after_rejected_auto_calls", DRED_TAG_AUTO, 0);
    good_reduction("tag_200_after_rejected_calls_with_it", 200, P / 2);

    /* 4. NULL futures, strerror */
    set_step("NULL future calls");
    int d = dred_future_is_done(NULL);
    if (d != -1) fail("badinput/is_done(NULL): returned %d, expected -1", d); else pass0("badinput/is_done(NULL)");
    int g = dred_future_get(NULL);
    if (g != DRED_ERR_ARG) fail("badinput/get(NULL): returned %d, expected DRED_ERR_ARG", g); else pass0("badinput/get(NULL)");
    dred_future_free(NULL);
    pass0("badinput/free(NULL)");
    int codes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 42, -1, INT_MAX};
    int sok = 1;
    for (unsigned k = 0; k < sizeof codes / sizeof codes[0]; k++) {
        const char *m = dred_strerror(codes[k]);
        if (!m || !*m) { fail("badinput/strerror(%d): NULL or empty", codes[k]); sok = 0; }
    }
    if (sok) pass0("badinput/strerror");

    /* 5. disagreement */
    if (P >= 2) {
        mismatch("count", 300, N - 1, MPI_INT, 0, MPI_SUM);
        mismatch("datatype_size_int_vs_double", 301, N, MPI_DOUBLE, 0, MPI_SUM);
        mismatch("root", 302, N, MPI_INT, 1, MPI_SUM);
        mismatch("op_sum_vs_max", 303, N, MPI_INT, 0, MPI_MAX);
        mismatch("op_sum_vs_max", DRED_TAG_AUTO, N, MPI_INT, 0, MPI_MAX);
    } else if (me == 0)
        printf("badinput: P=1, disagreement checks skipped\n");
    /* large valid tags */
    {
        static const int big[3] = {INT_MAX, 1 << 30, 65536};
        for (int k = 0; k < 3; k++) {
            char w[64];
            snprintf(w, sizeof w, "large_valid_tag_%d", big[k]);
            good_reduction(w, big[k], k % P);
        }
    }
    /* count 0 is legal in MPI: every member passes count 0 */
    {
        int zs[1] = {5}, zr[1] = {7};
        dred_future *f = NULL;
        set_step("count 0");
        int st = dred_ireduce(zs, zr, 0, MPI_INT, MPI_SUM, 0, g_comm, 500, &f);
        if (st == DRED_OK) {
            st = wait_bounded(f, 30, "badinput/count_zero");
            dred_future_free(f);
        }
        if (st != DRED_OK) fail("badinput/count_zero: status %d (%s), expected DRED_OK", st, dred_strerror(st));
        else if (zr[0] != 7) fail("badinput/count_zero: recvbuf written");
        else pass0("badinput/count_zero");
    }
    coll_args();
    good_reduction("final_auto_reduction", DRED_TAG_AUTO, 0);

    free(gs); free(gd); free(gm);
    return test_finish();
}
