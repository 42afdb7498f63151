/*
 * bench.c -- an unmodified MPI program timing MPI_Reduce, MPI_Allreduce or MPI_Bcast (SUM
 * of doubles; root 0) through libdred-mpi against MPICH's own collective in the same job:
 * the measurement behind the defaults of DRED_MPI_MIN_BYTES and DRED_MPI_COLL_MIN_BYTES.
 *
 *   dredrun --mpi -n P env DRED_MPI_MIN_BYTES=0 DRED_MPI_COLL_MIN_BYTES=0 bench OP [MAX_BYTES]
 *
 * OP is reduce, allreduce, bcast or ireduce (MPI_Ireduce + MPI_Wait).  The MPI_ calls go
 * where libdred-mpi routes them (with both settings 0: dred); the same calls through the
 * profiling names (PMPI_) reach MPICH directly.  Every repetition starts from a barrier, as
 * an application's members arrive from their own work, and is timed at every member from
 * the barrier to its return; the repetition's time is its slowest member's.  Blocks of
 * dred's and MPI's repetitions alternate, five of each per size.  Each line:
 *     bytes  dred-us  mpi-us  dred/mpi
 * (medians over every repetition), after a check that dred's result equals MPI's.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_REDUCE, OP_ALLREDUCE, OP_BCAST, OP_IREDUCE };

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One call of `op`, through dred's interposed name (pmpi = 0) or MPICH's (1). */
static void call(int op, int pmpi, double *in, double *out, int count) {
  MPI_Request r;
  switch (op) {
    case OP_REDUCE:
      (pmpi ? PMPI_Reduce : MPI_Reduce)(in, out, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      break;
    case OP_ALLREDUCE:
      (pmpi ? PMPI_Allreduce : MPI_Allreduce)(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      break;
    case OP_BCAST:
      (pmpi ? PMPI_Bcast : MPI_Bcast)(in, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      break;
    default:
      (pmpi ? PMPI_Ireduce : MPI_Ireduce)(in, out, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD,
                                          &r);
      (pmpi ? PMPI_Wait : MPI_Wait)(&r, MPI_STATUS_IGNORE);
      break;
  }
}

/* The operands again (a bcast overwrites its buffer at non-roots). */
static void fill(double *in, int count, int rank) {
  int i;
  for (i = 0; i < count; i++) in[i] = (double)((rank * 7 + i * 3) % 5 + 1);
}

/* Whether dred's result equals MPI's (at every member for an allreduce and a bcast, at
 * the root for a reduce): 1 everywhere, or 0 everywhere. */
static int same_result(int op, double *in, double *out, double *ref, int count, int rank) {
  int ok = 1, all;
  size_t bytes = (size_t)count * sizeof(double);
  double *got = op == OP_BCAST ? in : out;
  fill(in, count, rank);
  call(op, 1, in, out, count);
  memcpy(ref, got, bytes);
  fill(in, count, rank);
  memset(out, 0, bytes);
  call(op, 0, in, out, count);
  if (op == OP_ALLREDUCE || op == OP_BCAST || rank == 0) ok = memcmp(got, ref, bytes) == 0;
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

int main(int argc, char **argv) {
  static const char *names[] = {"reduce", "allreduce", "bcast", "ireduce"};
  const char *opname = argc > 1 ? argv[1] : "ireduce";
  long max = argc > 2 ? atol(argv[2]) : 16L << 20, bytes;
  int rank, op = -1, round, i, k, bad = 0;
  double *in, *out, *ref;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (k = 0; k < 4; k++)
    if (strcmp(opname, names[k]) == 0) op = k;
  if (op < 0 || max < 8) {
    if (rank == 0) fprintf(stderr, "usage: bench reduce|allreduce|bcast|ireduce [MAX_BYTES]\n");
    MPI_Finalize();
    return 2;
  }
  in = calloc((size_t)max / 8 + 1, 8);
  out = calloc((size_t)max / 8 + 1, 8);
  ref = calloc((size_t)max / 8 + 1, 8);
  if (rank == 0) printf("# %s: bytes dred-us mpi-us dred/mpi\n", opname);
  for (bytes = 8; bytes <= max; bytes *= 4) {
    int count = (int)(bytes / 8), reps = bytes <= 65536 ? 60 : bytes <= (1 << 20) ? 12 : 4;
    double *t[2], mine, slowest, med[2];
    if (!same_result(op, in, out, ref, count, rank)) {
      if (rank == 0) printf("%ld: dred's result differs from MPI's\n", bytes);
      bad = 1;
      break;
    }
    fill(in, count, rank);
    t[0] = malloc(sizeof(double) * 5 * (size_t)reps);
    t[1] = malloc(sizeof(double) * 5 * (size_t)reps);
    for (round = 0; round < 5; round++)
      for (k = 0; k < 2; k++)
        for (i = 0; i < reps; i++) {
          double t0;
          PMPI_Barrier(MPI_COMM_WORLD);
          t0 = MPI_Wtime();
          call(op, k, in, out, count);
          mine = MPI_Wtime() - t0;
          PMPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
          t[k][round * reps + i] = slowest;
        }
    for (k = 0; k < 2; k++) {
      qsort(t[k], 5 * (size_t)reps, sizeof(double), cmp);
      med[k] = t[k][5 * reps / 2] * 1e6;
    }
    if (rank == 0) printf("%ld %.2f %.2f %.3f\n", bytes, med[0], med[1], med[0] / med[1]);
    fflush(stdout);
    free(t[0]);
    free(t[1]);
  }
  free(in);
  free(out);
  free(ref);
  MPI_Finalize();
  return bad;
}
