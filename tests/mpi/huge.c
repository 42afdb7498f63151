/*
 * huge.c -- collectives whose operand passes 2 GiB (count x extent beyond an int), by hand:
 * too big for `make test` (about 12 GiB of memory and 3 minutes at p = 2).
 *
 *   dredrun -n 2 build/tests/mpi_huge [-n COUNT] [-k arb] [-l SECONDS] [-s STRIDE]
 *
 * COUNT ints per member (default 2^29 + 5: 2 GiB + 20 B, past the pool, so the
 * collectives go through dred-master and the operand's copies through the links); -k the
 * kinds, in this order: a(llreduce) MPI_SUM, r(educe) MPI_SUM to the last rank, b(cast)
 * from rank 0; -l: every rank but the root calls the bcast SECONDS late, after dred-master
 * holds all the data; -s: each element an int with an extent of STRIDE ints (a resized
 * type: the data count x 4 bytes, the buffers count x STRIDE x 4), so that the holes'
 * offsets pass 2 GiB while the data may not.  Every element of every result is compared
 * with the exact value, and every hole of every buffer checked unchanged; each process
 * prints one line per kind (with the call's time) and exits 1 if any was wrong or failed.
 *
 * tests/run-mpi.sh runs a small case on simulated nodes (huge-parts@ab: 8 MB results of a
 * holed type, which reach recvbuf a part per turn, lib/paths/distribute.c).
 *
 * Why: at 2 GiB a process's runtime thread read the operand's replica in one read() and
 * sent a result to dred-master as 8,192 frames in one turn, and dred-master sent a late
 * member the whole bcast in one turn: each silent for 9-11 s, declared failed or lost
 * (common/net.c's pieces, distribute.c's and the scheduler's pace).  A reduce root put a
 * 1 GiB result of a holed type (-s 2) into recvbuf in one MPI_Unpack: 0.5-0.8 s silent,
 * which with DRED_FAIL_TIMEOUT_MS=300 ended the job (now a part per turn).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dred.h"

static long expect(long i, int size) {
  long e = 0;
  for (int r = 0; r < size; r++) e += (i * 7 + r) % 1000;
  return e;
}

static int report(int rank, const char *what, int rc, long wrong, double secs) {
  printf("rank %d %s: %s, %ld wrong element(s) or hole(s), %.3f s\n", rank, what,
         dred_strerror(rc), wrong, secs);
  return rc != DRED_OK || wrong != 0;
}

#define HOLE_A (-7)        /* what the operand's holes hold: never to be read into a result */
#define HOLE_B ((int)0xffffffff) /* what the result's holes hold: never to be written */

/* Holes of x (n elements of `stride` ints) that no longer hold `v`. */
static long holes_changed(const int *x, long n, long stride, int v) {
  long w = 0;
  for (long i = 0; i < n; i++)
    for (long h = 1; h < stride; h++) w += x[i * stride + h] != v;
  return w;
}

int main(int argc, char **argv) {
  long n = (1L << 29) + 5, i, wrong, st = 1;
  const char *kinds = "arb";
  int rank, size, rc, bad = 0, late = 0, opt;
  int *a, *b;
  double t0;
  MPI_Comm c;
  MPI_Datatype t = MPI_INT;
  if (dred_init(&argc, &argv) != DRED_OK) return 1;
  while ((opt = getopt(argc, argv, "n:k:l:s:")) != -1) {
    if (opt == 'n') n = atol(optarg);
    else if (opt == 'k') kinds = optarg;
    else if (opt == 'l') late = atoi(optarg);
    else if (opt == 's') st = atol(optarg);
  }
  if (n < 1 || n > 0x7fffffffL || st < 1 || st > 64) {
    fprintf(stderr, "mpi_huge: -n takes 1..2^31-1, -s 1..64\n");
    return 2;
  }
  c = dred_comm();
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  if (st > 1) {
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)(st * (long)sizeof(int)), &t);
    MPI_Type_commit(&t);
  }
  a = malloc((size_t)(n * st) * sizeof *a);
  b = malloc((size_t)(n * st) * sizeof *b);
  if (a == NULL || b == NULL) {
    printf("rank %d: no memory for 2 x %ld ints\n", rank, n * st);
    return 1;
  }
  for (i = 0; i < n * st; i++) a[i] = i % st ? HOLE_A : (int)((i / st * 7 + rank) % 1000);
  if (strchr(kinds, 'a')) {
    memset(b, 0xff, (size_t)(n * st) * sizeof *b);
    t0 = MPI_Wtime();
    rc = dred_allreduce(a, b, (int)n, t, MPI_SUM, c);
    t0 = MPI_Wtime() - t0;
    for (wrong = 0, i = 0; rc == DRED_OK && i < n; i++) wrong += b[i * st] != expect(i, size);
    wrong += holes_changed(b, n, st, HOLE_B);
    bad |= report(rank, "allreduce", rc, wrong, t0);
  }
  if (strchr(kinds, 'r')) {
    memset(b, 0xff, (size_t)(n * st) * sizeof *b);
    t0 = MPI_Wtime();
    rc = dred_reduce(a, b, (int)n, t, MPI_SUM, size - 1, c);
    t0 = MPI_Wtime() - t0;
    for (wrong = 0, i = 0; rc == DRED_OK && rank == size - 1 && i < n; i++)
      wrong += b[i * st] != expect(i, size);
    wrong += holes_changed(b, n, st, HOLE_B);
    bad |= report(rank, "reduce", rc, wrong, t0);
  }
  if (strchr(kinds, 'b')) {
    memset(b, 0xff, (size_t)(n * st) * sizeof *b);
    for (i = 0; i < n; i++) b[i * st] = rank == 0 ? (int)(i * 3 + 1) : 0;
    if (rank != 0 && late > 0) sleep((unsigned)late);
    t0 = MPI_Wtime();
    rc = dred_bcast(b, (int)n, t, 0, c);
    t0 = MPI_Wtime() - t0;
    for (wrong = 0, i = 0; rc == DRED_OK && i < n; i++) wrong += b[i * st] != (int)(i * 3 + 1);
    wrong += holes_changed(b, n, st, HOLE_B);
    bad |= report(rank, "bcast", rc, wrong, t0);
  }
  wrong = holes_changed(a, n, st, HOLE_A); /* an operand is only read */
  if (wrong) bad |= report(rank, "operand", DRED_OK, wrong, 0);
  if (t != MPI_INT) MPI_Type_free(&t);
  free(a);
  free(b);
  { /* the line tests/run-mpi.sh looks for: every member's checks passed */
    int any = bad;
    if (dred_allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, c) == DRED_OK && any == 0 &&
        rank == 0)
      printf("ALL PASSED\n");
  }
  if (dred_finalize() != DRED_OK) bad = 1;
  return bad;
}
