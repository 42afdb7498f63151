/*
 * boot.h -- how dred-master and libdred meet: the collective start-up both programs run,
 * in the same order, over MPI, and the control links it leaves them with.
 *
 * MPI is the bootstrap (DESIGN.md): every process of the job is in MPI_COMM_WORLD, rank 0
 * is dred-master.  dred_boot_start() makes dred's private communicator (a duplicate of
 * the world, so dred never matches the application's messages), splits off dred_comm()
 * (the application processes; the master passes MPI_UNDEFINED), learns which processes
 * share a node, and sets up the control plane (common/net.h): rank 0 draws the job's
 * random token and job id and broadcasts them; every process listens on a Unix domain
 * socket in a private per-job directory (and on TCP when the job spans nodes) and the
 * addresses are gathered everywhere; a worker then opens its link to the master.  After
 * this, control traffic never touches MPI.
 *
 * The order of collectives here is the contract between the two programs: change it on
 * one side and both hang, which is why it lives in one function both call.
 */
#ifndef DRED_MPI_BOOT_H
#define DRED_MPI_BOOT_H

#include <mpi.h>
#include <uv.h>

#include "../net.h"

/* The one MPI tag dred still sends on its private communicator: replica copies going to a
 * member on another node (worker/replicate.c).  Everything else travels on the links. */
#define DRED_MPI_REPLICA_TAG 8

typedef struct {
  MPI_Comm priv;     /* dred's traffic: a duplicate of MPI_COMM_WORLD            */
  MPI_Comm comm;     /* dred_comm() at a worker; MPI_COMM_NULL at the master      */
  int rank, size;    /* in priv (= MPI_COMM_WORLD)                                */
  int *node;         /* by rank: the node, as the lowest world rank on it         */
  int multinode;     /* some process lives on another node than rank 0            */
  char dir[128];     /* this job's control-socket directory                      */
  char sock[160];    /* our socket in it                                          */
} dred_boot_t;

/* The collective start-up (see above).  `net` is initialised on `loop` and listening;
 * a worker's link to the master is open (its HELLO queued).  Returns DRED_OK or a DRED_ERR_*
 * with a log line; on error the job cannot run (the caller aborts or returns it). */
int dred_boot_start(dred_boot_t *b, int is_master, dred_net_t *net, uv_loop_t *loop);

/* Remove our socket (and the directory, if we are the last to leave); free the table. */
void dred_boot_finish(dred_boot_t *b);

#endif /* DRED_MPI_BOOT_H */
