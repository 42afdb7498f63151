/*
 * sleepy_wait.h -- wait for an MPI request without burning a core.
 *
 * MPICH's blocking calls (MPI_Wait, MPI_Barrier, MPI_Allreduce, ...) busy-poll.  On an
 * oversubscribed node a process that finished early would spin on the cores that the
 * others, and dred's runtime and replica threads, need.  The test programs (dred-bench,
 * dred-demo, fault_app) therefore start the nonblocking form and wait here: MPI_Test, then
 * a nap that doubles from 1 us to 500 us.  Header-only: each program is one source file.
 * DRED_WAIT=mpi makes them wait in MPI's own blocking MPI_Wait instead, as most
 * applications do between reductions (the scenario dred's control plane must not lose in).
 */
#ifndef DRED_TESTS_SLEEPY_WAIT_H
#define DRED_TESTS_SLEEPY_WAIT_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void sleepy_wait(MPI_Request *r) {
  int done = 0;
  long us = 1;
  const char *how = getenv("DRED_WAIT");
  if (how != NULL && strcmp(how, "mpi") == 0) {
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
