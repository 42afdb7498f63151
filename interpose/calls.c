/*
 * calls.c -- what libdred-mpi intercepts, and how often each call went to dred or to MPI.
 *
 * The counters are per process, bumped by whichever application thread made the call
 * (atomics: MPI_THREAD_MULTIPLE programs call from many threads).  With DRED_MPI_REPORT=1
 * MPI_Finalize prints one line per call kind the process made at least once:
 *     dred-mpi: MPI_Ireduce dred=40 mpi=2
 * and with DRED_MPI_REPORT=2, after each such line, one line per reason calls went to MPI.
 */
#include <stdio.h>

#include "interpose.h"

#define DMPI_CALL_NAME(id, name) name,
static const char *const call_names[DMPI_NCALLS] = {DMPI_CALLS(DMPI_CALL_NAME)};
#undef DMPI_CALL_NAME
#define DMPI_WHY_TEXT(id, text) text,
static const char *const why_texts[DMPI_NWHYS] = {DMPI_WHYS(DMPI_WHY_TEXT)};
#undef DMPI_WHY_TEXT

static uint64_t n_dred[DMPI_NCALLS];
static uint64_t n_mpi[DMPI_NCALLS][DMPI_NWHYS];

void dmpi_count_dred(dmpi_call_t call) { __atomic_add_fetch(&n_dred[call], 1, __ATOMIC_RELAXED); }

void dmpi_count_mpi(dmpi_call_t call, dmpi_why_t why) {
  __atomic_add_fetch(&n_mpi[call][why], 1, __ATOMIC_RELAXED);
}

void dmpi_report(int level) {
  int c, w;
  for (c = 0; c < DMPI_NCALLS; c++) {
    uint64_t d = __atomic_load_n(&n_dred[c], __ATOMIC_RELAXED), m = 0;
    for (w = 0; w < DMPI_NWHYS; w++) m += __atomic_load_n(&n_mpi[c][w], __ATOMIC_RELAXED);
    if (d + m == 0) continue;
    fprintf(stderr, "dred-mpi: %s dred=%llu mpi=%llu\n", call_names[c], (unsigned long long)d,
            (unsigned long long)m);
    if (level < 2) continue;
    for (w = 0; w < DMPI_NWHYS; w++)
      if (n_mpi[c][w] > 0)
        fprintf(stderr, "dred-mpi:   %s to MPI: %llu (%s)\n", call_names[c],
                (unsigned long long)n_mpi[c][w], why_texts[w]);
  }
  fflush(stderr);
}
