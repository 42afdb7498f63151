/*
 * coll_app.c -- an unmodified MPI program (plain mpicc, no dred header) whose allreduces
 * and broadcasts tests/interpose/run.sh sends through libdred-mpi.so (`dredrun --mpi`).
 *
 * Every process computes, locally, the exact value each collective must give it (small
 * integer operands, exact in every type used) and checks its own result: an allreduce's
 * result must be right on every member, a broadcast's data everywhere.  Parts: predefined
 * ops x types x counts through MPI_Allreduce and MPI_Iallreduce; MPI_IN_PLACE on every
 * member; MPI_Bcast and MPI_Ibcast from every root, several types and counts, and with
 * MPI_INT at the root against contiguous(4, MPI_INT) elsewhere; both on the
 * halves of an MPI_Comm_split; Iallreduce and Ibcast requests mixed with Isend/Irecv in
 * MPI_Waitall and MPI_Waitany.  Prints "FAIL ..." for each wrong value and "ALL PASSED"
 * at rank 0 when every process passed; exits 1 otherwise.
 */
#include "app.h"

/* One allreduce on `comm` (world ranks members[]), checked on every member. */
static void allreduce(MPI_Comm comm, const int *members, tkind t, MPI_Op op, int count, int nb,
                      int inplace, const char *what) {
  int me, n, i, rc;
  void *in = malloc(tsize(t) * (size_t)count), *out = malloc(tsize(t) * (size_t)count);
  MPI_Request req;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  for (i = 0; i < count; i++) put(inplace ? out : in, t, i, val(members[me], i));
  if (nb) {
    rc = MPI_Iallreduce(inplace ? MPI_IN_PLACE : in, out, count, mpitype(t), op, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, count, mpitype(t), op, comm);
  }
  CHECK(rc == MPI_SUCCESS, "%s: allreduce returned %d", what, rc);
  for (i = 0; rc == MPI_SUCCESS && i < count; i++) {
    long e = expect(op, i, n, members);
    if (get(out, t, i) != e) {
      CHECK(0, "%s: allreduce count %d element %d = %ld, expected %ld", what, count, i,
            get(out, t, i), e);
      break;
    }
  }
  free(in);
  free(out);
}

/* One broadcast from `root` on `comm`, checked on every member. */
static void bcast(MPI_Comm comm, tkind t, int count, int root, int nb, const char *what) {
  int me, i, rc;
  void *b = malloc(tsize(t) * (size_t)count);
  MPI_Request req;
  MPI_Comm_rank(comm, &me);
  for (i = 0; i < count; i++) put(b, t, i, me == root ? val(root, i) + 10 : -1);
  if (nb) {
    rc = MPI_Ibcast(b, count, mpitype(t), root, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Bcast(b, count, mpitype(t), root, comm);
  }
  CHECK(rc == MPI_SUCCESS, "%s: bcast returned %d", what, rc);
  for (i = 0; rc == MPI_SUCCESS && i < count; i++)
    if (get(b, t, i) != val(root, i) + 10) {
      CHECK(0, "%s: bcast from %d count %d element %d = %ld", what, root, count, i, get(b, t, i));
      break;
    }
  free(b);
}

/* One bcast of 4n ints described as 4n MPI_INT at the root and n contiguous(4, MPI_INT)
 * elsewhere: MPI matches type signatures, not counts or datatypes. */
static void bcast_signatures(int n, int root, int nb) {
  MPI_Datatype c4;
  MPI_Request req;
  int *b = malloc(sizeof(int) * (size_t)(4 * n)), i, rc;
  MPI_Type_contiguous(4, MPI_INT, &c4);
  MPI_Type_commit(&c4);
  for (i = 0; i < 4 * n; i++) b[i] = rank == root ? 3 * i + 1 : -1;
  if (nb) {
    rc = MPI_Ibcast(b, rank == root ? 4 * n : n, rank == root ? MPI_INT : c4, root, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Bcast(b, rank == root ? 4 * n : n, rank == root ? MPI_INT : c4, root, MPI_COMM_WORLD);
  }
  CHECK(rc == MPI_SUCCESS, "bcast signatures n=%d: returned %d", n, rc);
  for (i = 0; rc == MPI_SUCCESS && i < 4 * n; i++)
    if (b[i] != 3 * i + 1) {
      CHECK(0, "bcast signatures n=%d root %d: int %d = %d", n, root, i, b[i]);
      break;
    }
  MPI_Type_free(&c4);
  free(b);
}

/* Iallreduce and Ibcast requests with a ring of Isend/Irecv, completed together. */
static void mixed(int any) {
  enum { N = 512 };
  static int a[N], ar[N], bc[N], sbuf[8], rbuf[8];
  MPI_Request req[4];
  MPI_Status sts[4];
  int i, idx, done = 0, next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (i = 0; i < N; i++) {
    a[i] = rank + i;
    bc[i] = rank == 0 ? 7 * i : -1;
  }
  for (i = 0; i < 8; i++) sbuf[i] = rank * 1000 + i;
  MPI_Irecv(rbuf, 8, MPI_INT, prev, 5, MPI_COMM_WORLD, &req[0]);
  MPI_Iallreduce(a, ar, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[1]);
  MPI_Ibcast(bc, N, MPI_INT, 0, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(sbuf, 8, MPI_INT, next, 5, MPI_COMM_WORLD, &req[3]);
  if (!any) {
    MPI_Waitall(4, req, sts);
  } else {
    while (done < 4) {
      MPI_Waitany(4, req, &idx, MPI_STATUS_IGNORE);
      if (idx != MPI_UNDEFINED) done++;
    }
  }
  for (i = 0; i < 4; i++) CHECK(req[i] == MPI_REQUEST_NULL, "mixed: request %d not freed", i);
  CHECK(rbuf[3] == prev * 1000 + 3, "mixed: point-to-point message wrong");
  for (i = 0; i < N; i++) {
    if (ar[i] != size * (size - 1) / 2 + size * i) {
      CHECK(0, "mixed: Iallreduce element %d = %d", i, ar[i]);
      break;
    }
    if (bc[i] != 7 * i) {
      CHECK(0, "mixed: Ibcast element %d = %d", i, bc[i]);
      break;
    }
  }
}

int main(int argc, char **argv) {
  static const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
  static const int counts[] = {1, 100, 5000};
  static const tkind kinds[] = {T_INT, T_LONG, T_DOUBLE};
  int *world, i, o, t, c, nb, r, all = 0, n;
  MPI_Comm split;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  world = malloc(sizeof(int) * (size_t)size);
  for (i = 0; i < size; i++) world[i] = i;

  for (o = 0; o < 4; o++)
    for (t = 0; t < 3; t++)
      for (c = 0; c < 3; c++)
        for (nb = 0; nb < 2; nb++) allreduce(MPI_COMM_WORLD, world, kinds[t], ops[o], counts[c], nb, 0, "world");
  if (rank == 0) printf("PASS allreduce ops x types x counts on MPI_COMM_WORLD\n");
  for (nb = 0; nb < 2; nb++) allreduce(MPI_COMM_WORLD, world, T_DOUBLE, MPI_SUM, 777, nb, 1, "in place");
  if (rank == 0) printf("PASS allreduce MPI_IN_PLACE\n");
  for (r = 0; r < size; r++)
    for (t = 0; t < 3; t++)
      for (c = 0; c < 3; c++) bcast(MPI_COMM_WORLD, kinds[t], counts[c], r, (r + t + c) % 2, "world");
  if (rank == 0) printf("PASS bcast from every root, types x counts\n");
  for (r = 0; r < size; r++)
    for (c = 0; c < 3; c++) bcast_signatures(counts[c], r, (r + c) % 2);
  if (rank == 0) printf("PASS bcast with MPI_INT at the root, contiguous(4, MPI_INT) elsewhere\n");

  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split); /* reversed order by key */
  {
    int *members;
    MPI_Comm_size(split, &n);
    members = malloc(sizeof(int) * (size_t)n);
    MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, split);
    for (i = 0; i < 4; i++) {
      allreduce(split, members, i % 2 ? T_LONG : T_DOUBLE, i < 2 ? MPI_SUM : MPI_MAX, 300, i % 2, 0, "split");
      bcast(split, T_INT, 300, i % n, i % 2, "split");
    }
    free(members);
  }
  MPI_Comm_free(&split);
  if (rank == 0) printf("PASS allreduce and bcast on MPI_Comm_split sub-communicators\n");
  for (i = 0; i < 4; i++) mixed(i % 2);
  if (rank == 0) printf("PASS Iallreduce and Ibcast mixed with Isend/Irecv in Waitall and Waitany\n");

  MPI_Reduce(&nfail, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("ALL PASSED\n");
  fflush(stdout);
  free(world);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
