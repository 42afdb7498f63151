/*
 * app.h -- what the unmodified MPI test programs of tests/interpose share: the pass/fail
 * counter and CHECK, the operands (small integers, exact in every type used), the fold of
 * the predefined ops they use, and the element types they run over.  Plain MPI only: the
 * programs must build with mpicc and no dred header.  Static functions, one copy per
 * program (each is a single .c file).
 */
#ifndef DRED_TESTS_INTERPOSE_APP_H
#define DRED_TESTS_INTERPOSE_APP_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, nfail;

#define CHECK(cond, ...)                        \
  do {                                          \
    if (!(cond)) {                              \
      nfail++;                                  \
      printf("FAIL rank %d: ", rank);           \
      printf(__VA_ARGS__);                      \
      printf("\n");                             \
      fflush(stdout);                           \
    }                                           \
  } while (0)

/* The operand of rank r, element i: small, so sums and products stay exact. */
static long val(int r, int i) { return (r * 7 + i * 3) % 5 + 1; }

static long combine(MPI_Op op, long a, long b) {
  if (op == MPI_SUM) return a + b;
  if (op == MPI_PROD) return a * b;
  if (op == MPI_MAX) return a > b ? a : b;
  if (op == MPI_MIN) return a < b ? a : b;
  if (op == MPI_BOR) return a | b;
  return a & b; /* MPI_BAND */
}

static __attribute__((unused)) long expect(MPI_Op op, int i, int n, const int *members) {
  long acc = val(members[0], i);
  int k;
  for (k = 1; k < n; k++) acc = combine(op, acc, val(members[k], i));
  return acc;
}

typedef enum { T_INT, T_LONG, T_FLOAT, T_DOUBLE } tkind;
static __attribute__((unused)) MPI_Datatype mpitype(tkind t) {
  return t == T_INT ? MPI_INT : t == T_LONG ? MPI_LONG : t == T_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
}
static __attribute__((unused)) size_t tsize(tkind t) {
  return t == T_INT ? sizeof(int) : t == T_LONG ? sizeof(long) : t == T_FLOAT ? sizeof(float) : sizeof(double);
}
static __attribute__((unused)) void put(void *b, tkind t, int i, long v) {
  if (t == T_INT) ((int *)b)[i] = (int)v;
  else if (t == T_LONG) ((long *)b)[i] = v;
  else if (t == T_FLOAT) ((float *)b)[i] = (float)v;
  else ((double *)b)[i] = (double)v;
}
static __attribute__((unused)) long get(const void *b, tkind t, int i) {
  if (t == T_INT) return ((const int *)b)[i];
  if (t == T_LONG) return ((const long *)b)[i];
  if (t == T_FLOAT) return (long)((const float *)b)[i];
  return (long)((const double *)b)[i];
}

#endif /* DRED_TESTS_INTERPOSE_APP_H */
