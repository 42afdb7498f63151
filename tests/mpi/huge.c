/*
 * huge.c -- collectives whose operand passes 2 GiB (count x extent beyond an int), by hand:
 * too big for `make test` (about 12 GiB of memory and 3 minutes at p = 2).
 *
 *   dredrun -n 2 build/tests/mpi_huge [-n COUNT] [-k arb] [-l SECONDS]
 *
 * COUNT ints per member (default 2^29 + 5: 2 GiB + 20 B, past the pool, so the
 * collectives go through dred-master and the operand's copies through the links); -k the
 * kinds, in this order: a(llreduce) MPI_SUM, r(educe) MPI_SUM to the last rank, b(cast)
 * from rank 0; -l: every rank but the root calls the bcast SECONDS late, after dred-master
 * holds all the data.  Every element of every result is compared with the exact value;
 * each process prints one line per kind and exits 1 if any was wrong or failed.
 *
 * Why: at 2 GiB a process's runtime thread read the operand's replica in one read() and
 * sent a result to dred-master as 8,192 frames in one turn, and dred-master sent a late
 * member the whole bcast in one turn: each silent for 9-11 s, declared failed or lost
 * (common/net.c's pieces, distribute.c's and the scheduler's pace).
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

static int report(int rank, const char *what, int rc, long wrong) {
  printf("rank %d %s: %s, %ld wrong element(s)\n", rank, what, dred_strerror(rc), wrong);
  return rc != DRED_OK || wrong != 0;
}

int main(int argc, char **argv) {
  long n = (1L << 29) + 5, i, wrong;
  const char *kinds = "arb";
  int rank, size, rc, bad = 0, late = 0, opt;
  int *a, *b;
  MPI_Comm c;
  if (dred_init(&argc, &argv) != DRED_OK) return 1;
  while ((opt = getopt(argc, argv, "n:k:l:")) != -1) {
    if (opt == 'n') n = atol(optarg);
    else if (opt == 'k') kinds = optarg;
    else if (opt == 'l') late = atoi(optarg);
  }
  if (n < 1 || n > 0x7fffffffL) {
    fprintf(stderr, "mpi_huge: -n takes 1..2^31-1\n");
    return 2;
  }
  c = dred_comm();
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  a = malloc((size_t)n * sizeof *a);
  b = malloc((size_t)n * sizeof *b);
  if (a == NULL || b == NULL) {
    printf("rank %d: no memory for 2 x %ld ints\n", rank, n);
    return 1;
  }
  for (i = 0; i < n; i++) a[i] = (int)((i * 7 + rank) % 1000);
  if (strchr(kinds, 'a')) {
    memset(b, 0xff, (size_t)n * sizeof *b);
    rc = dred_allreduce(a, b, (int)n, MPI_INT, MPI_SUM, c);
    for (wrong = 0, i = 0; rc == DRED_OK && i < n; i++) wrong += b[i] != expect(i, size);
    bad |= report(rank, "allreduce", rc, wrong);
  }
  if (strchr(kinds, 'r')) {
    memset(b, 0xff, (size_t)n * sizeof *b);
    rc = dred_reduce(a, b, (int)n, MPI_INT, MPI_SUM, size - 1, c);
    for (wrong = 0, i = 0; rc == DRED_OK && rank == size - 1 && i < n; i++)
      wrong += b[i] != expect(i, size);
    bad |= report(rank, "reduce", rc, wrong);
  }
  if (strchr(kinds, 'b')) {
    for (i = 0; i < n; i++) b[i] = rank == 0 ? (int)(i * 3 + 1) : 0;
    if (rank != 0 && late > 0) sleep((unsigned)late);
    rc = dred_bcast(b, (int)n, MPI_INT, 0, c);
    for (wrong = 0, i = 0; rc == DRED_OK && i < n; i++) wrong += b[i] != (int)(i * 3 + 1);
    bad |= report(rank, "bcast", rc, wrong);
  }
  free(a);
  free(b);
  if (dred_finalize() != DRED_OK) bad = 1;
  return bad;
}
