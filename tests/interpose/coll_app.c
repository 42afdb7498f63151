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
 * MPI_Waitall and MPI_Waitany; requests polled with MPI_Request_get_status, on
 * communicators freed before the wait; Fortran's parameterized types; the MPI-4
 * large-count forms (MPI_Allreduce_c, MPI_Ibcast_c...); with --big alone, a 2 GiB bcast
 * described differently at the root (MPI_Bcast_c) and elsewhere.  Prints "FAIL ..."
 * for each wrong value and "ALL PASSED" at rank 0 when every process passed; exits 1
 * otherwise.
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

/* Completion calls other than wait and test, and a communicator freed before its
 * collective completes (MPI completes it normally): an Iallreduce and an Ibcast polled
 * with MPI_Request_get_status, which leaves the request to a later MPI_Wait; the same on
 * a duplicate of MPI_COMM_WORLD freed right after the call. */
static void requests(void) {
  enum { N = 3000 };
  static double a[N], ar[N], bc[N];
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request req;
  int i, k, flag, rc;
  for (k = 0; k < 4; k++) {
    double t0;
    for (i = 0; i < N; i++) {
      a[i] = rank + i;
      bc[i] = rank == k % size ? 3.0 * i + k : -1;
    }
    if (k >= 2) MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (k % 2 == 0)
      rc = MPI_Iallreduce(a, ar, N, MPI_DOUBLE, MPI_SUM, k >= 2 ? dup : MPI_COMM_WORLD, &req);
    else
      rc = MPI_Ibcast(bc, N, MPI_DOUBLE, k % size, k >= 2 ? dup : MPI_COMM_WORLD, &req);
    if (k >= 2) MPI_Comm_free(&dup);
    CHECK(rc == MPI_SUCCESS, "requests %d: start returned %d", k, rc);
    if (rc != MPI_SUCCESS) continue;
    t0 = MPI_Wtime();
    for (flag = 0; !flag && MPI_Wtime() - t0 < 60;)
      MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE);
    CHECK(flag, "requests %d: MPI_Request_get_status said incomplete for 60 s", k);
    CHECK(req != MPI_REQUEST_NULL, "requests %d: MPI_Request_get_status freed the request", k);
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "requests %d: wait returned %d", k, rc);
    for (i = 0; i < N; i++)
      if (k % 2 == 0 ? ar[i] != size * (size - 1) / 2.0 + (double)size * i : bc[i] != 3.0 * i + k) {
        CHECK(0, "requests %d: element %d = %g", k, i, k % 2 == 0 ? ar[i] : bc[i]);
        break;
      }
  }
}

/* Fortran's parameterized types (selected_real_kind and friends in a Fortran program):
 * MPI counts them as predefined, and they reduce like the named type of their size. */
static void f90_types(void) {
  enum { N = 2000 };
  static double d[N], dr[N];
  static int v[N], vr[N];
  MPI_Datatype r15, i9;
  int i;
  MPI_Type_create_f90_real(15, MPI_UNDEFINED, &r15);
  MPI_Type_create_f90_integer(9, &i9);
  for (i = 0; i < N; i++) {
    d[i] = rank + 0.5 * i;
    v[i] = (rank * 7 + i) % 11;
  }
  CHECK(MPI_Allreduce(d, dr, N, r15, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "f90: allreduce failed");
  CHECK(MPI_Allreduce(v, vr, N, i9, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS, "f90: allreduce failed");
  for (i = 0; i < N; i++) {
    int j, m = 0;
    for (j = 0; j < size; j++) m = (j * 7 + i) % 11 > m ? (j * 7 + i) % 11 : m;
    if (dr[i] != size * (size - 1) / 2.0 + 0.5 * i * size || vr[i] != m) {
      CHECK(0, "f90: element %d = %g / %d", i, dr[i], vr[i]);
      break;
    }
  }
  for (i = 0; i < N; i++) d[i] = rank == size - 1 ? 2.0 * i : -1;
  CHECK(MPI_Bcast(d, N, r15, size - 1, MPI_COMM_WORLD) == MPI_SUCCESS, "f90: bcast failed");
  for (i = 0; i < N; i++)
    if (d[i] != 2.0 * i) {
      CHECK(0, "f90: bcast element %d = %g", i, d[i]);
      break;
    }
}

/* The MPI-4 large-count forms (what mpi4py 4 and Fortran's mpi_f08 call), counts within
 * int: the same collectives, through dred where the int forms go. */
static void large_count(void) {
  enum { N = 5000 };
  static double a[N], r[N], b[N];
  MPI_Request req[3];
  MPI_Status sts[3];
  int i, k, rc, root = size - 1;
  for (k = 0; k < 2; k++) {
    for (i = 0; i < N; i++) {
      a[i] = rank + i + k;
      r[i] = -1;
      b[i] = rank == root ? 5.0 * i + k : -1;
    }
    if (k == 0) {
      rc = MPI_Allreduce_c(a, r, (MPI_Count)N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      CHECK(rc == MPI_SUCCESS, "large count: MPI_Allreduce_c returned %d", rc);
      rc = MPI_Bcast_c(b, (MPI_Count)N, MPI_DOUBLE, root, MPI_COMM_WORLD);
      CHECK(rc == MPI_SUCCESS, "large count: MPI_Bcast_c returned %d", rc);
    } else {
      MPI_Iallreduce_c(a, r, (MPI_Count)N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
      MPI_Ibcast_c(b, (MPI_Count)N, MPI_DOUBLE, root, MPI_COMM_WORLD, &req[1]);
      rc = MPI_Waitall(2, req, sts);
      CHECK(rc == MPI_SUCCESS, "large count: Iallreduce_c/Ibcast_c returned %d", rc);
    }
    for (i = 0; i < N; i++)
      if (r[i] != size * (size - 1) / 2.0 + (double)size * (i + k) || b[i] != 5.0 * i + k) {
        CHECK(0, "large count %d: element %d = %g / %g", k, i, r[i], b[i]);
        break;
      }
    for (i = 0; i < N; i++) r[i] = -1;
    if (k == 0) {
      rc = MPI_Reduce_c(a, r, (MPI_Count)N, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
    } else {
      MPI_Ireduce_c(a, r, (MPI_Count)N, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD, &req[2]);
      rc = MPI_Wait(&req[2], MPI_STATUS_IGNORE);
    }
    CHECK(rc == MPI_SUCCESS, "large count: reduce %d returned %d", k, rc);
    for (i = 0; rank == root && i < N; i++)
      if (r[i] != size - 1 + i + k) {
        CHECK(0, "large count: reduce %d element %d = %g", k, i, r[i]);
        break;
      }
  }
}

/* A bcast of 2^31 + 16 bytes, described as MPI_Bcast_c of that many MPI_CHAR at the root
 * and as MPI_Bcast of 2^27 + 1 contiguous(16, MPI_CHAR) elsewhere: one type signature,
 * which MPI matches, so both descriptions must take the same path (MPI's, as dred's
 * count is an int). */
static void big_bcast(void) {
  MPI_Count n = ((MPI_Count)1 << 31) + 16, i;
  MPI_Datatype c16;
  char *b = malloc((size_t)n);
  int rc;
  if (b == NULL) {
    CHECK(0, "big bcast: no memory for %lld bytes", (long long)n);
    return;
  }
  for (i = 0; i < n; i++) b[i] = rank == 0 ? (char)(i * 7 + 3) : 0;
  MPI_Type_contiguous(16, MPI_CHAR, &c16);
  MPI_Type_commit(&c16);
  if (rank == 0)
    rc = MPI_Bcast_c(b, n, MPI_CHAR, 0, MPI_COMM_WORLD);
  else
    rc = MPI_Bcast(b, (int)(n / 16), c16, 0, MPI_COMM_WORLD);
  CHECK(rc == MPI_SUCCESS, "big bcast returned %d", rc);
  for (i = 0; rc == MPI_SUCCESS && i < n; i++)
    if (b[i] != (char)(i * 7 + 3)) {
      CHECK(0, "big bcast: byte %lld = %d", (long long)i, b[i]);
      break;
    }
  MPI_Type_free(&c16);
  free(b);
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
  if (argc > 1 && strcmp(argv[1], "--big") == 0) { /* that part alone */
    big_bcast();
    if (rank == 0) printf("PASS a 2 GiB bcast described differently at the root\n");
    goto end;
  }

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
  requests();
  if (rank == 0) printf("PASS MPI_Request_get_status polling, communicators freed before the wait\n");
  f90_types();
  if (rank == 0) printf("PASS Fortran parameterized types (MPI_Type_create_f90_*)\n");
  large_count();
  if (rank == 0) printf("PASS the large-count forms (MPI_Allreduce_c...)\n");

end:
  MPI_Reduce(&nfail, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("ALL PASSED\n");
  fflush(stdout);
  free(world);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
