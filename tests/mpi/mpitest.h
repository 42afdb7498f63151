/*
 * mpitest.h -- the scaffolding every MPI integration test in tests/mpi shares: init/finish
 * with dred, PASS/FAIL lines, the step a rank was in when it was killed, and bounded waits.
 *
 * What: test_init() installs SIGTERM/SIGINT handlers (a killed rank prints "FAIL <prog>:
 * rank R killed by signal S during: <step>" and exits 124), initialises dred and sets g_comm
 * = dred_comm(), g_rank, g_size; pass()/fail() print one whole line per write (ranks never
 * interleave) and fail() sets g_fail; test_finish() ORs g_fail over the ranks, prints "ALL
 * PASSED <prog> (P=n)" or "FAILED ..." at rank 0, calls dred_finalize and gives the exit
 * status.  wait_bounded() polls a future with back-off and aborts the job on a hang;
 * wait_limit() scales every bound by DRED_TEST_TIMEOUT_SCALE (tests/run-mpi.sh sets it).
 * affine_op() is the non-commutative user op of several tests.
 *
 * Why: one copy of the scaffolding every test program of tests/mpi needs (tests/mpi/
 * mpitest.c, compiled once and linked into every mpi_* test by the Makefile).
 * tests/run-mpi.sh matches on the line formats above: keep them as they are.
 */
#ifndef DRED_TESTS_MPITEST_H
#define DRED_TESTS_MPITEST_H

#include <stdint.h>

#include "dred.h"

extern const char *g_prog;  /* the program name in messages; test_init() sets it */
extern int g_rank, g_size;  /* in g_comm                                       */
extern int g_fail;          /* set by fail()                                   */
extern MPI_Comm g_comm;     /* dred_comm() after test_init()                   */
extern char g_step[256];    /* what the rank is doing, for the signal handler  */

/* Record the current step (printed if the rank is killed). */
void set_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* SIGTERM/SIGINT handler: print the step, _exit(124). */
void on_term(int sig);
void pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Set g_prog = prog, install the handlers, dred_init (exit(1) on failure), set g_comm,
 * g_rank, g_size. */
void test_init(int *argc, char ***argv, const char *prog);
/* Agree on failure over g_comm, print the verdict, dred_finalize; returns the exit status. */
int test_finish(void);

double now_s(void);                   /* CLOCK_MONOTONIC, seconds       */
/* Take this process's whole pool with dred_alloc_mem, in blocks as large as it gives (at
 * most max of them, into blk): its next operands find no pool room.  Returns how many;
 * give them back with dred_free_mem. */
int pool_take_all(void **blk, int max);
double wait_limit(double secs);       /* secs x DRED_TEST_TIMEOUT_SCALE */
/* Wait for a future at most wait_limit(secs); returns its status (or -1000 if
 * dred_future_is_done failed); a hang is a failure and aborts the job. */
int wait_bounded(dred_future *f, double secs, const char *what);
uint64_t mix64(uint64_t x);           /* splitmix64 finaliser           */

/* The non-commutative user op several tests reduce with: composition of affine maps
 * x -> a*x + b (mod 2^32).  inout[k] = "in[k], then inout[k]" (MPI passes the lower ranks'
 * operand as `in`), so the result applies rank 0's map first. */
struct affine { unsigned a, b; };
void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt);
/* Its datatype (2 x MPI_UNSIGNED, committed) and op (commute = 0); affine_free frees both. */
void affine_create(MPI_Datatype *type, MPI_Op *op);
void affine_free(MPI_Datatype *type, MPI_Op *op);

/* The expected result of a reduction, as the MPI standard defines it, computed without
 * MPI_Reduce: the root gathers every member's operand and folds them in rank order with
 * MPI_Reduce_local (x0 op x1 op ... op x(p-1)), so non-commutative ops come out in MPI's
 * order too.  Same arguments and MPI_IN_PLACE rule as MPI_Reduce; recvbuf matters only at
 * the root; point to point only.  Why not MPI_Reduce itself: MPICH 4.0.2's node-aware Reduce composition
 * returns wrong values on communicators spread unevenly over nodes (pmodels/mpich#6893;
 * reproduced here with `mpiexec -launcher fork -hosts a:3,b:3,c:3`), and a reference that
 * can be wrong made dred look wrong.  Collective over comm; returns MPI_SUCCESS or an
 * MPI error code (aborts the job if the root has no memory for p operands). */
int ref_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
               int root, MPI_Comm comm);

/* From `from`, `count` bytes of buf to every other member of comm, tag `tag`, point to
 * point, the sends all in flight at once (each member receives with MPI_Recv); returns
 * MPI_SUCCESS or an MPI error code. */
int send_all(const void *buf, int count, int from, int tag, MPI_Comm comm);

#endif /* DRED_TESTS_MPITEST_H */
