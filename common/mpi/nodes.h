/*
 * nodes.h -- which node every process of the job runs on, learned once at start.
 *
 * Replica placement (common/placement.h) needs each member's node on both sides: the
 * workers place copies, the master must know where they went.  MPI knows the nodes
 * (MPI_COMM_TYPE_SHARED: one node per host name, also for simulated nodes), so every
 * process -- dred-master and the workers alike -- calls dred_nodes_exchange at the same
 * point of its collective start-up sequence.
 */
#ifndef DRED_NODES_H
#define DRED_NODES_H

#include <mpi.h>
#include <stdint.h>

#define DRED_NODES_TAG 11 /* on the private communicator, before the control channel runs */

/* Collective over `priv` (a duplicate of MPI_COMM_WORLD).  On success *node_of is a
 * malloc'd table, one entry per rank of priv: the node's id (the lowest priv rank on that
 * node, so the master's node is 0), and *nnodes the number of distinct nodes.  Returns
 * DRED_OK or DRED_ERR_NOMEM / DRED_ERR_INTERNAL (logged). */
int dred_nodes_exchange(MPI_Comm priv, uint32_t **node_of, int *nnodes);

#endif /* DRED_NODES_H */
