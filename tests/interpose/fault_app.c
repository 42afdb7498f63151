/*
 * fault_app.c -- an unmodified MPI program for run.sh's fault trial: one rank is SIGKILLed
 * (by pid, from the runner) while MPI_Ireduce calls are in flight; every survivor's
 * request must complete -- with the exact sum or with an error class -- never hang.
 *
 * Each process writes its pid to DIR/pid.<rank>, then runs ITERS rounds of MPI_Ireduce
 * (SUM of 1 Mi doubles, above DRED_MPI_MIN_BYTES, root 0) + MPI_Wait, writing
 * DIR/round.<rank> with the round it is in, and sleeping 100 ms between rounds.  Errors
 * return (MPI_ERRORS_RETURN).  A survivor ends with
 *     SURVIVOR rank R: N exact, M errors (classes ...)
 * and "survivor-done" when MPI_Finalize returned.  Usage: fault_app DIR ITERS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void put(const char *dir, const char *what, int rank, long v) {
  char p[512], t[520];
  FILE *f;
  snprintf(p, sizeof p, "%s/%s.%d", dir, what, rank);
  snprintf(t, sizeof t, "%s.tmp", p);
  if ((f = fopen(t, "w")) == NULL) return;
  fprintf(f, "%ld\n", v);
  fclose(f);
  rename(t, p);
}

int main(int argc, char **argv) {
  enum { N = 1 << 20 };
  const char *dir = argc > 1 ? argv[1] : ".";
  int iters = argc > 2 ? atoi(argv[2]) : 30, rank, size, it, i, exact = 0, errs = 0;
  char classes[256] = "";
  double *in = malloc(N * sizeof(double)), *out = malloc(N * sizeof(double));
  struct timespec nap = {0, 100 * 1000 * 1000};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  put(dir, "pid", rank, (long)getpid());
  for (i = 0; i < N; i++) in[i] = rank + 1;
  for (it = 0; it < iters; it++) {
    MPI_Request r;
    int rc, cls = MPI_SUCCESS;
    put(dir, "round", rank, it);
    rc = MPI_Ireduce(in, out, N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &r);
    if (rc == MPI_SUCCESS) {
      MPI_Status st;
      rc = MPI_Wait(&r, &st);
    }
    if (rc != MPI_SUCCESS) {
      char c[16];
      MPI_Error_class(rc, &cls);
      errs++;
      snprintf(c, sizeof c, " %d", cls);
      if (strlen(classes) + strlen(c) < sizeof classes && strstr(classes, c) == NULL)
        strcat(classes, c);
    } else if (rank == 0) {
      double e = (double)size * (size + 1) / 2;
      if (out[0] == e && out[N - 1] == e) {
        exact++;
      } else {
        printf("FAIL rank 0 round %d: %g, expected %g\n", it, out[0], e);
        fflush(stdout);
      }
    } else {
      exact++; /* a non-root's request completed without error */
    }
    nanosleep(&nap, NULL);
  }
  printf("SURVIVOR rank %d: %d exact, %d errors (classes%s)\n", rank, exact, errs, classes);
  fflush(stdout);
  MPI_Finalize();
  printf("survivor-done rank %d\n", rank);
  fflush(stdout);
  free(in);
  free(out);
  return 0;
}
