/*
 * stall_rget.c -- an LD_PRELOAD shim for tests/faults/stall-read.sh: one MPI_Rget of the
 * job never completes, as a read whose answer is stuck behind a receive FIFO that a
 * killed process left blocked (tests/faults/fifo_block.c shows that without dred).
 *
 * In the process whose MPI_COMM_WORLD rank is STALL_RANK (every process when it is unset),
 * the STALL_NTH-th MPI_Rget (counting from 1) is not posted: the caller gets the request of
 * an MPI_Irecv on MPI_COMM_SELF that nothing is ever sent to -- it never completes and
 * never fails, which is what MPICH gives for a read of a deaf process.  Every other call
 * goes to MPI.  Only dred's task reads (lib/mpi/combine.c) call MPI_Rget.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int MPI_Rget(void *origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp,
             int tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request *req) {
  static long n; /* dred's runtime thread is the only caller */
  static char sink[1];
  const char *rank = getenv("STALL_RANK"), *nth = getenv("STALL_NTH");
  int me = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (nth != NULL && (rank == NULL || me == atoi(rank)) && ++n == atol(nth)) {
    fprintf(stderr, "stall_rget: rank %d: MPI_Rget #%ld (target %d) will never complete\n", me,
            n, target);
    return PMPI_Irecv(sink, 1, MPI_BYTE, 0, 32000, MPI_COMM_SELF, req);
  }
  return PMPI_Rget(origin, ocount, otype, target, disp, tcount, ttype, win, req);
}
