/*
 * stat-app.c -- a small dred application that gives dredstat something to look at.
 *
 *   dredrun -n P stat-app [-c COUNT] [-r ROUNDS] [-k INFLIGHT] [-s SLEEP_S] [-m SMALL]
 *
 * Each round starts one reduction per root of dred_comm() (P reductions, up to INFLIGHT
 * of them in flight at once with dred_ireduce and explicit tags), checks every result
 * against MPI_Reduce on the same data, and after the first round sleeps SLEEP_S seconds
 * (so a test can query `dredstat status` while the master is up and idle).  Rank 0 prints
 * "stat-app: ok" when everything matched; the exit status is 0 only then.  -m SMALL: then
 * SMALL blocking dred_reduce calls of one double (auto tags) on each node's members, which
 * meet in shared memory and never reach the master's tables (the journal counts them
 * apart).  Run on more than one node (dredrun --sim-nodes), the rounds' reductions span
 * nodes and go through dred-master, so the journal has tasks.
 */
#include <dred.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(void) {
  fprintf(stderr, "usage: stat-app [-c COUNT] [-r ROUNDS] [-k INFLIGHT] [-s SLEEP_S] [-m SMALL]\n");
}

int main(int argc, char **argv) {
  int count = 100000, rounds = 2, inflight = 4, sleep_s = 0, c, rank, size, bad = 0, round;
  int small = 0;
  double *send, **recv, *want;
  dred_future **fut;
  MPI_Comm comm;

  if (dred_init(&argc, &argv) != DRED_OK) {
    fprintf(stderr, "stat-app: dred_init failed\n");
    return 1;
  }
  while ((c = getopt(argc, argv, "c:r:k:s:m:")) != -1) {
    switch (c) {
      case 'c': count = atoi(optarg); break;
      case 'r': rounds = atoi(optarg); break;
      case 'k': inflight = atoi(optarg); break;
      case 's': sleep_s = atoi(optarg); break;
      case 'm': small = atoi(optarg); break;
      default: usage(); dred_finalize(); return 2;
    }
  }
  if (count < 1 || rounds < 1 || inflight < 1 || sleep_s < 0 || small < 0) {
    usage();
    dred_finalize();
    return 2;
  }
  comm = dred_comm();
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  send = malloc(sizeof(double) * (size_t)count);
  want = malloc(sizeof(double) * (size_t)count);
  recv = calloc((size_t)size, sizeof *recv);
  fut = calloc((size_t)size, sizeof *fut);
  if (!send || !want || !recv || !fut) {
    fprintf(stderr, "stat-app: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  for (c = 0; c < size; c++) {
    recv[c] = malloc(sizeof(double) * (size_t)count);
    if (recv[c] == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  }

  for (round = 0; round < rounds; round++) {
    int i, root, first = 0;
    for (i = 0; i < count; i++) send[i] = rank + 0.5 * i + round;
    /* Up to `inflight` reductions at once; explicit tags keep them apart. */
    for (root = 0; root < size; root++) {
      int rc = dred_ireduce(send, recv[root], count, MPI_DOUBLE, MPI_SUM, root, comm,
                            round * size + root, &fut[root]);
      if (rc != DRED_OK) {
        fprintf(stderr, "stat-app: rank %d: dred_ireduce: %s\n", rank, dred_strerror(rc));
        bad++;
        fut[root] = NULL;
      }
      if (root - first + 1 >= inflight) {
        if (fut[first] && dred_future_get(fut[first]) != DRED_OK) bad++;
        first++;
      }
    }
    for (; first < size; first++)
      if (fut[first] && dred_future_get(fut[first]) != DRED_OK) bad++;
    for (root = 0; root < size; root++) {
      dred_future_free(fut[root]);
      MPI_Reduce(send, want, count, MPI_DOUBLE, MPI_SUM, root, comm);
      if (rank == root && memcmp(want, recv[root], sizeof(double) * (size_t)count) != 0) {
        fprintf(stderr, "stat-app: round %d root %d: wrong result\n", round, root);
        bad++;
      }
    }
    if (round == 0 && sleep_s > 0) sleep((unsigned)sleep_s);
  }
  if (small > 0) {
    /* On this node's members only: a group within one node meets in shared memory. */
    MPI_Comm node;
    int nrank, nsize, base = 0;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    MPI_Allreduce(&rank, &base, 1, MPI_INT, MPI_SUM, node); /* sum of the members' ranks */
    for (round = 0; round < small; round++) {
      double x = rank + round, sum = 0;
      if (dred_reduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, node) != DRED_OK) bad++;
      if (nrank == 0 && sum != (double)base + (double)nsize * round) bad++;
    }
    MPI_Comm_free(&node);
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, comm);
  if (rank == 0) printf("stat-app: %s (%d workers, %d rounds, %d doubles)\n",
                        bad ? "FAILED" : "ok", size, rounds, count);
  for (c = 0; c < size; c++) free(recv[c]);
  free(recv);
  free(fut);
  free(send);
  free(want);
  if (dred_finalize() != DRED_OK) bad++;
  return bad ? 1 : 0;
}
