/*
 * mismatch_app.c -- one reduce in which a member that disagrees dies before dred-master
 * hears from it (tests/faults/unseen-mismatch.sh).
 *
 *   DRED_TEST_READY_KILL=7:W dredrun [--sim-nodes ...] -n P mismatch_app --outdir DIR
 *       [--bad-rank R] [--bytes B]
 *
 * Every rank reduces B bytes of doubles (in[i] = rank + i) to rank 0 with explicit tag 7,
 * MPI_SUM -- except rank R (--bad-rank), which passes MPI_MAX.  The hook makes the worker
 * of world rank W (R + 1 under dredrun: dred-master is world rank 0) send no READY for tag
 * 7 and SIGKILL itself half a second later, so dred-master recovers its operand from a
 * copy without ever having seen its parameters.  Without --bad-rank everyone agrees and
 * the root's result must be exact (the dead member's operand recovered); with it, every
 * survivor must end DRED_ERR_MISMATCH.
 *
 * Each rank writes DIR/rank.<r>.txt: "status=<code> check=<exact|wrong|none>" once its
 * reduce ended (bounded: 60 s), then "exit" -- files, because mpiexec may take the
 * survivors' stdout with it once a process died.
 */
#include <dred.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  const char *outdir = ".";
  long bytes = 1 << 20;
  int bad = -1, rank, size, st, i, n;
  double *in, *out;
  char path[1024];
  FILE *f;
  dred_future *fut = NULL;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--outdir") && i + 1 < argc) outdir = argv[++i];
    else if (!strcmp(argv[i], "--bad-rank") && i + 1 < argc) bad = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = atol(argv[++i]);
    else {
      fprintf(stderr, "mismatch_app: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (dred_init(&argc, &argv) != DRED_OK) return 1;
  MPI_Comm_rank(dred_comm(), &rank);
  MPI_Comm_size(dred_comm(), &size);
  n = (int)(bytes / (long)sizeof(double));
  in = malloc((size_t)n * sizeof *in);
  out = calloc((size_t)n, sizeof *out);
  if (in == NULL || out == NULL) return 1;
  for (i = 0; i < n; i++) in[i] = rank + i;
  snprintf(path, sizeof path, "%s/rank.%d.txt", outdir, rank);
  if ((f = fopen(path, "w")) == NULL) return 1;
  /* nobody may die before everyone is in */
  MPI_Barrier(dred_comm());
  st = dred_ireduce(in, out, n, MPI_DOUBLE, rank == bad ? MPI_MAX : MPI_SUM, 0, dred_comm(), 7,
                    &fut);
  if (st == DRED_OK) {
    st = dred_future_wait(fut, 60000);
    dred_future_free(fut);
  }
  if (rank == 0 && st == DRED_OK) {
    int exact = 1;
    for (i = 0; i < n && exact; i++) exact = out[i] == size * (size - 1) / 2.0 + (double)size * i;
    fprintf(f, "status=%d check=%s\n", st, exact ? "exact" : "wrong");
  } else {
    fprintf(f, "status=%d check=none\n", st);
  }
  fflush(f);
  fprintf(f, "exit\n");
  fclose(f);
  /* after a process failure dred_finalize skips MPI_Finalize: exit without it */
  if (dred_finalize() != DRED_OK) _exit(0);
  return 0;
}
