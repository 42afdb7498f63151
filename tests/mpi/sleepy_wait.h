/*
 * sleepy_wait.h -- wait for an MPI request without burning a core.
 *
 * MPICH's blocking calls (MPI_Wait, MPI_Barrier, MPI_Allreduce, ...) busy-poll.  On an
 * oversubscribed node a process that finished early would spin on the cores that the
 * others, and dred's runtime and replica threads, need.  The test programs (dred-bench,
 * dred-demo, fault_app) therefore start the nonblocking form and wait here: MPI_Test, then
 * a nap that doubles from 1 us to 500 us.  Header-only.
 * DRED_WAIT=mpi makes them wait in MPI's own blocking MPI_Wait instead, as most
 * applications do between reductions (the scenario dred's control plane must not lose in);
 * DRED_WAIT=sleep asks for the naps.  Unset, a program gets its own default:
 * sleepy_default_mpi, 0 (naps) unless the program sets it (SLEEPY_DEFAULT_MPI, below) --
 * dred-bench waits in MPI by default, as applications do, and measures the naps as the
 * second case.
 */
#ifndef DRED_TESTS_SLEEPY_WAIT_H
#define DRED_TESTS_SLEEPY_WAIT_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A program of several files sets its default at compile time, SLEEPY_DEFAULT_MPI before
 * this header (tests/bench/bench.h): the variable is each file's own copy, so a value
 * assigned at run time in one file would not reach the waits in the others. */
#ifndef SLEEPY_DEFAULT_MPI
#define SLEEPY_DEFAULT_MPI 0
#endif
static int sleepy_default_mpi = SLEEPY_DEFAULT_MPI;

/* 1: wait in MPI's blocking call; 0: MPI_Test and naps. */
static inline int sleepy_wait_is_mpi(void) {
  const char *how = getenv("DRED_WAIT");
  if (how != NULL && strcmp(how, "mpi") == 0) return 1;
  if (how != NULL && strcmp(how, "sleep") == 0) return 0;
  return sleepy_default_mpi;
}

static inline void sleepy_wait(MPI_Request *r) {
  int done = 0;
  long us = 1;
  if (sleepy_wait_is_mpi()) {
    MPI_Wait(r, MPI_STATUS_IGNORE);
    return;
  }
  for (;;) {
    struct timespec ts = {0, us * 1000};
    MPI_Test(r, &done, MPI_STATUS_IGNORE);
    if (done) return;
    nanosleep(&ts, NULL);
    if (us < 500) us *= 2;
  }
}

static inline void sleepy_barrier(MPI_Comm comm) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  sleepy_wait(&r);
}

#endif
