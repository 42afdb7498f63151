/*
 * bottom_app.c -- an unmodified MPI program (plain mpicc, no dred header) that reduces and
 * broadcasts variables lying apart through MPI_BOTTOM and a datatype of their absolute
 * addresses (MPI_Get_address), the way Fortran codes broadcast a common block and a
 * heap array in one call.  tests/interpose/run.sh runs it through libdred-mpi.so.
 *
 * The variables: a static array of 3 doubles and a heap array of N (argv[1], default
 * 50000) in a mapping of its own, far from the static one.  Each process computes the
 * value each call must give it and checks every field:
 *   - MPI_Bcast and MPI_Ibcast of MPI_BOTTOM from every root (dred: the data packed);
 *   - MPI_Reduce to every root, MPI_IN_PLACE at the root, MPI_BOTTOM elsewhere, and
 *     MPI_Iallreduce in place, both MPI_SUM (dred; MPICH 4.0.2 alone refuses predefined
 *     ops on derived types in these calls, so the case must route every call to dred);
 *   - MPI_Allreduce in place under a user op, of the static array and a second one:
 *     libdred-mpi sends a user op on absolute addresses to MPI (each process's layout
 *     differs; dred gives user ops the caller's layout), which computes it.
 * Prints "FAIL ..." for each wrong value and "ALL PASSED" at rank 0 when every process
 * passed; exits 1 otherwise.
 */
#include "app.h"

static double g_static[3], g_static2[4];
static double *g_heap;
static int g_n = 50000;

static double field(int r, int j) { return (double)val(r, j); }

static void fill(int r) {
  int j;
  for (j = 0; j < 3; j++) g_static[j] = field(r, j);
  for (j = 0; j < g_n; j++) g_heap[j] = field(r, 3 + j);
}

/* Every field against the value `e(j)`; one FAIL line for the first difference. */
static void check(const char *what, double (*e)(int), int r) {
  int j;
  for (j = 0; j < 3 + g_n; j++) {
    double got = j < 3 ? g_static[j] : g_heap[j - 3];
    if (got != e(j)) {
      CHECK(0, "%s (root %d): field %d = %g, expected %g", what, r, j, got, e(j));
      return;
    }
  }
}

static int g_root;
static double e_root(int j) { return field(g_root, j); }
static double e_mine(int j) { return field(rank, j); }
static double e_sum(int j) {
  double s = 0;
  int r;
  for (r = 0; r < size; r++) s += field(r, j);
  return s;
}

/* A user op that knows the layout: the two static arrays, at their absolute addresses
 * from the buffer origin it is given (MPI_BOTTOM's role), summed.  (Not the heap array:
 * MPICH's own allreduce takes a buffer of the type's extent, here tens of terabytes.) */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
  MPI_Aint a0, a1;
  int j;
  (void)dt;
  (void)len; /* one element: the type covers both variables */
  MPI_Get_address(g_static, &a0);
  MPI_Get_address(g_static2, &a1);
  for (j = 0; j < 3; j++) ((double *)((char *)inout + a0))[j] += ((double *)((char *)in + a0))[j];
  for (j = 0; j < 4; j++) ((double *)((char *)inout + a1))[j] += ((double *)((char *)in + a1))[j];
}

int main(int argc, char **argv) {
  MPI_Aint disp[2];
  int len[2] = {3, 0}, r, rc, j, all = 0;
  MPI_Datatype types[2] = {MPI_DOUBLE, MPI_DOUBLE}, t, u;
  MPI_Request req;
  MPI_Op op;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (argc > 1) g_n = atoi(argv[1]);
  if (g_n < 1 || (g_heap = malloc(sizeof(double) * (size_t)g_n)) == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  len[1] = g_n;
  MPI_Get_address(g_static, &disp[0]);
  MPI_Get_address(g_heap, &disp[1]);
  MPI_Type_create_struct(2, len, disp, types, &t);
  MPI_Type_commit(&t);

  for (r = 0; r < size; r++) {
    g_root = r;
    fill(rank);
    rc = MPI_Bcast(MPI_BOTTOM, 1, t, r, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "MPI_Bcast(MPI_BOTTOM) from %d returned %d", r, rc);
    check("MPI_Bcast(MPI_BOTTOM)", e_root, r);
    fill(rank);
    rc = MPI_Ibcast(MPI_BOTTOM, 1, t, r, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "MPI_Ibcast(MPI_BOTTOM) from %d returned %d", r, rc);
    check("MPI_Ibcast(MPI_BOTTOM)", e_root, r);
    fill(rank);
    rc = MPI_Reduce(rank == r ? MPI_IN_PLACE : MPI_BOTTOM, MPI_BOTTOM, 1, t, MPI_SUM, r,
                    MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "MPI_Reduce(MPI_BOTTOM) to %d returned %d", r, rc);
    check("MPI_Reduce(MPI_BOTTOM)", rank == r ? e_sum : e_mine, r);
  }
  if (rank == 0) printf("PASS MPI_Bcast, MPI_Ibcast, MPI_Reduce of MPI_BOTTOM, every root\n");

  fill(rank);
  rc = MPI_Iallreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, t, MPI_SUM, MPI_COMM_WORLD, &req);
  if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "MPI_Iallreduce(MPI_BOTTOM) returned %d", rc);
  check("MPI_Iallreduce(MPI_BOTTOM)", e_sum, 0);
  if (rank == 0) printf("PASS MPI_Iallreduce of MPI_BOTTOM, MPI_SUM\n");

  MPI_Op_create(user_sum, 1, &op);
  len[1] = 4;
  MPI_Get_address(g_static2, &disp[1]);
  MPI_Type_create_struct(2, len, disp, types, &u);
  MPI_Type_commit(&u);
  for (j = 0; j < 3; j++) g_static[j] = field(rank, j);
  for (j = 0; j < 4; j++) g_static2[j] = field(rank, 3 + j);
  rc = MPI_Allreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, u, op, MPI_COMM_WORLD);
  CHECK(rc == MPI_SUCCESS, "MPI_Allreduce(MPI_BOTTOM, user op) returned %d", rc);
  for (j = 0; j < 7; j++)
    if ((j < 3 ? g_static[j] : g_static2[j - 3]) != e_sum(j)) {
      CHECK(0, "MPI_Allreduce(MPI_BOTTOM, user op): field %d = %g, expected %g", j,
            j < 3 ? g_static[j] : g_static2[j - 3], e_sum(j));
      break;
    }
  if (rank == 0) printf("PASS MPI_Allreduce of MPI_BOTTOM, a user op\n");
  MPI_Op_free(&op);
  MPI_Type_free(&u);

  MPI_Type_free(&t);
  free(g_heap);
  /* (not MPI_Allreduce: the case requires that call's one use above to have gone to MPI) */
  MPI_Reduce(&nfail, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("ALL PASSED\n");
  fflush(stdout);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
