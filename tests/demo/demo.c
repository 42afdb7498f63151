/*
 * demo.c -- dred-demo, what `make run` launches (dredrun -n 8 dred-demo).
 *
 *   dredrun -n P dred-demo [-r REPS]
 *
 * Five cases, each repeated REPS times (default 5), dred interleaved with MPICH on the
 * same processes in the same run (the order alternates every repetition):
 *   (a) MPI_SUM of 8 MiB of doubles, root 0: dred_reduce vs MPI_Reduce;
 *   (b) a user op from MPI_Op_create (element-wise max of |x|, commutative) on 4 MiB of
 *       doubles, root P-1: dred_reduce vs MPI_Reduce;
 *   (c) 16 concurrent MPI_SUM reductions of 1 MiB of doubles each, roots k % P, distinct
 *       tags: dred_ireduce + dred_future_get vs MPI_Ireduce + MPI_Waitall;
 *   (d) MPI_SUM of 1 MiB of doubles to every member: dred_allreduce vs MPI_Allreduce;
 *   (e) 1 MiB of doubles from root 0 to every member: dred_bcast vs MPI_Bcast.
 * A repetition's time is the slowest member's time from a common barrier to its own
 * completion; outside the timed region members wait with a sleeping poll
 * (tests/mpi/sleepy_wait.h: MPICH's blocking calls busy-poll and would starve dred's
 * threads on an oversubscribed node).  Data is integer-valued, so every combine order gives
 * the same bits and dred's result must equal MPI's exactly.  Rank 0 of dred_comm() prints
 * a table: case, size, dred time (ms, median), MPI time (ms, median), ratio dred/MPI,
 * result OK/WRONG.  Exits non-zero if any result is WRONG or any dred call failed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dred.h"
#include "../mpi/sleepy_wait.h"

#define NCONC 16
#define NROWS 5

static int rank_, size_;
static MPI_Comm comm;

static void maxabs(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++) {
        double x = fabs(a[i]), y = fabs(b[i]);
        b[i] = x > y ? x : y;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fill(double *b, int n, int salt)
{
    for (int i = 0; i < n; i++) b[i] = (double)((i * 7 + rank_ * 131 + salt * 17) % 2001 - 1000);
}

/* the slowest member's time since the common barrier */
static double slowest(double t)
{
    double m;
    MPI_Request req;
    MPI_Iallreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, comm, &req);
    sleepy_wait(&req);
    return m;
}

struct row {
    const char *name;
    const char *size;
    double *dred_t, *mpi_t;
    int wrong, errors;
};

static void print_row(const struct row *r, int reps)
{
    double d = median(r->dred_t, reps) * 1e3, m = median(r->mpi_t, reps) * 1e3;
    printf("%-30s %-12s %10.2f %10.2f %7.2f  %s\n", r->name, r->size, d, m, m > 0 ? d / m : 0.0,
           r->errors ? "ERROR" : r->wrong ? "WRONG" : "OK");
}

int main(int argc, char **argv)
{
    int reps = 5;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
    if (reps < 1) reps = 1;

    int st = dred_init(&argc, &argv);
    if (st != DRED_OK) {
        fprintf(stderr, "dred-demo: dred_init: %s\n", dred_strerror(st));
        return 1;
    }
    comm = dred_comm();
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);

    struct row rows[NROWS] = {
        {"(a) MPI_SUM double", "8 MiB", NULL, NULL, 0, 0},
        {"(b) user op max|x| double", "4 MiB", NULL, NULL, 0, 0},
        {"(c) 16 concurrent MPI_SUM", "16 x 1 MiB", NULL, NULL, 0, 0},
        {"(d) allreduce MPI_SUM double", "1 MiB", NULL, NULL, 0, 0},
        {"(e) bcast double, root 0", "1 MiB", NULL, NULL, 0, 0},
    };
    for (int c = 0; c < NROWS; c++) {
        rows[c].dred_t = calloc((size_t)reps, sizeof(double));
        rows[c].mpi_t = calloc((size_t)reps, sizeof(double));
    }
    MPI_Op op_maxabs;
    MPI_Op_create(maxabs, 1, &op_maxabs);

    /* (a) 8 MiB sum, (b) 4 MiB user op */
    const int na = 8 * 1024 * 1024 / (int)sizeof(double), nb = 4 * 1024 * 1024 / (int)sizeof(double);
    double *sa = malloc(sizeof(double) * (size_t)na), *da = malloc(sizeof(double) * (size_t)na),
           *ma = malloc(sizeof(double) * (size_t)na);
    fill(sa, na, 1);
    for (int r = 0; r < reps; r++) {
        for (int c = 0; c < 2; c++) {
            int n = c == 0 ? na : nb, root = c == 0 ? 0 : size_ - 1;
            MPI_Op op = c == 0 ? MPI_SUM : op_maxabs;
            for (int which = 0; which < 2; which++) {
                int dred_turn = (which + r) % 2 == 0; /* alternate who goes first */
                sleepy_barrier(comm);
                double t0 = MPI_Wtime();
                if (dred_turn) {
                    int s = dred_reduce(sa, da, n, MPI_DOUBLE, op, root, comm);
                    if (s != DRED_OK) {
                        rows[c].errors++;
                        fprintf(stderr, "dred-demo: %s: %s\n", rows[c].name, dred_strerror(s));
                    }
                    rows[c].dred_t[r] = slowest(MPI_Wtime() - t0);
                } else {
                    MPI_Reduce(sa, ma, n, MPI_DOUBLE, op, root, comm);
                    rows[c].mpi_t[r] = slowest(MPI_Wtime() - t0);
                }
            }
            if (rank_ == root && memcmp(da, ma, sizeof(double) * (size_t)n)) rows[c].wrong = 1;
        }
    }
    free(sa); free(da); free(ma);

    /* (c) 16 concurrent reductions of 1 MiB each */
    const int nc = 1024 * 1024 / (int)sizeof(double);
    double *sc[NCONC], *dc[NCONC], *mc[NCONC];
    for (int k = 0; k < NCONC; k++) {
        sc[k] = malloc(sizeof(double) * (size_t)nc);
        fill(sc[k], nc, 100 + k);
        int root = k % size_;
        dc[k] = rank_ == root ? malloc(sizeof(double) * (size_t)nc) : NULL;
        mc[k] = rank_ == root ? malloc(sizeof(double) * (size_t)nc) : NULL;
    }
    for (int r = 0; r < reps; r++) {
        for (int which = 0; which < 2; which++) {
            int dred_turn = (which + r) % 2 == 0;
            sleepy_barrier(comm);
            double t0 = MPI_Wtime();
            if (dred_turn) {
                dred_future *f[NCONC];
                for (int k = 0; k < NCONC; k++) {
                    int s = dred_ireduce(sc[k], dc[k], nc, MPI_DOUBLE, MPI_SUM, k % size_, comm, k, &f[k]);
                    if (s != DRED_OK) {
                        rows[2].errors++;
                        f[k] = NULL;
                        fprintf(stderr, "dred-demo: (c) ireduce %d: %s\n", k, dred_strerror(s));
                    }
                }
                for (int k = 0; k < NCONC; k++) {
                    if (!f[k]) continue;
                    int s = dred_future_get(f[k]);
                    if (s != DRED_OK) {
                        rows[2].errors++;
                        fprintf(stderr, "dred-demo: (c) reduction %d: %s\n", k, dred_strerror(s));
                    }
                    dred_future_free(f[k]);
                }
                rows[2].dred_t[r] = slowest(MPI_Wtime() - t0);
            } else {
                MPI_Request q[NCONC];
                MPI_Status stv[NCONC]; /* not MPI_STATUSES_IGNORE: gcc -Wstringop-overflow */
                for (int k = 0; k < NCONC; k++)
                    MPI_Ireduce(sc[k], mc[k], nc, MPI_DOUBLE, MPI_SUM, k % size_, comm, &q[k]);
                MPI_Waitall(NCONC, q, stv);
                rows[2].mpi_t[r] = slowest(MPI_Wtime() - t0);
            }
        }
        for (int k = 0; k < NCONC; k++)
            if (rank_ == k % size_ && memcmp(dc[k], mc[k], sizeof(double) * (size_t)nc)) rows[2].wrong = 1;
    }
    for (int k = 0; k < NCONC; k++) { free(sc[k]); free(dc[k]); free(mc[k]); }

    /* (d) allreduce and (e) bcast of 1 MiB: every member holds the result */
    const int nd = 1024 * 1024 / (int)sizeof(double);
    double *sd = malloc(sizeof(double) * (size_t)nd), *dd = malloc(sizeof(double) * (size_t)nd),
           *md = malloc(sizeof(double) * (size_t)nd);
    fill(sd, nd, 7);
    for (int r = 0; r < reps; r++) {
        for (int c = 3; c < 5; c++) {
            for (int which = 0; which < 2; which++) {
                int dred_turn = (which + r) % 2 == 0, s = DRED_OK;
                double *buf = dred_turn ? dd : md;
                if (c == 4) { /* the root's data, garbage elsewhere */
                    if (rank_ == 0) memcpy(buf, sd, sizeof(double) * (size_t)nd);
                    else memset(buf, 0xff, sizeof(double) * (size_t)nd);
                }
                sleepy_barrier(comm);
                double t0 = MPI_Wtime();
                if (dred_turn) {
                    s = c == 3 ? dred_allreduce(sd, dd, nd, MPI_DOUBLE, MPI_SUM, comm)
                               : dred_bcast(dd, nd, MPI_DOUBLE, 0, comm);
                    if (s != DRED_OK) {
                        rows[c].errors++;
                        fprintf(stderr, "dred-demo: %s: %s\n", rows[c].name, dred_strerror(s));
                    }
                    rows[c].dred_t[r] = slowest(MPI_Wtime() - t0);
                } else {
                    if (c == 3) MPI_Allreduce(sd, md, nd, MPI_DOUBLE, MPI_SUM, comm);
                    else MPI_Bcast(md, nd, MPI_DOUBLE, 0, comm);
                    rows[c].mpi_t[r] = slowest(MPI_Wtime() - t0);
                }
            }
            if (memcmp(dd, md, sizeof(double) * (size_t)nd)) rows[c].wrong = 1; /* every member */
        }
    }
    free(sd); free(dd); free(md);

    /* gather verdicts */
    int local[2] = {0, 0}, global[2];
    int wrong_c[NROWS], err_c[NROWS];
    for (int c = 0; c < NROWS; c++) {
        MPI_Allreduce(&rows[c].wrong, &wrong_c[c], 1, MPI_INT, MPI_MAX, comm);
        MPI_Allreduce(&rows[c].errors, &err_c[c], 1, MPI_INT, MPI_MAX, comm);
        rows[c].wrong = wrong_c[c];
        rows[c].errors = err_c[c];
        local[0] |= wrong_c[c];
        local[1] |= err_c[c];
    }
    global[0] = local[0];
    global[1] = local[1];
    if (rank_ == 0) {
        printf("dred-demo: P=%d application processes, %d repetitions, median of the slowest "
               "member's time\n", size_, reps);
        printf("%-30s %-12s %10s %10s %7s  %s\n", "case", "size", "dred ms", "MPI ms", "ratio",
               "result");
        for (int c = 0; c < NROWS; c++) print_row(&rows[c], reps);
        printf("ratio = dred time / MPI time (MPICH MPI_Reduce / MPI_Ireduce / MPI_Allreduce / "
               "MPI_Bcast on dred_comm())\n");
        fflush(stdout);
    }
    for (int c = 0; c < NROWS; c++) { free(rows[c].dred_t); free(rows[c].mpi_t); }
    MPI_Op_free(&op_maxabs);
    st = dred_finalize();
    if (st != DRED_OK && rank_ == 0) fprintf(stderr, "dred-demo: dred_finalize: %s\n", dred_strerror(st));
    return (global[0] || global[1] || st != DRED_OK) ? 1 : 0;
}
