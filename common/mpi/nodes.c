/*
 * nodes.c -- the node table every process learns at start (see nodes.h).
 *
 * The node id comes from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and needs no message.
 * Gathering the table uses point-to-point messages through rank 0 rather than
 * MPI_Allgather: MPICH 4.0.2's node-aware collective compositions misbehave on
 * communicators spread unevenly over nodes (pmodels/mpich#6893), and this runs before
 * dredrun's MPIR_CVAR_DEVICE_COLLECTIVES=none can be relied on (a user may launch by hand).
 */
#include "nodes.h"

#include <stdlib.h>

#include "../log.h"
#include "../dred_status.h"

static int my_node(MPI_Comm priv, uint32_t *id) {
  MPI_Comm node;
  MPI_Group ng, pg;
  int n = 0, i, *in = NULL, *out = NULL, rc = DRED_OK;
  if (MPI_Comm_split_type(priv, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
    DRED_ERROR("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed: node table unknown");
    return DRED_ERR_INTERNAL;
  }
  MPI_Comm_size(node, &n);
  MPI_Comm_group(node, &ng);
  MPI_Comm_group(priv, &pg);
  in = malloc(sizeof *in * (size_t)n);
  out = malloc(sizeof *out * (size_t)n);
  if (in == NULL || out == NULL) {
    DRED_ERROR("no memory for the node table");
    rc = DRED_ERR_NOMEM;
  } else {
    for (i = 0; i < n; i++) in[i] = i;
    MPI_Group_translate_ranks(ng, n, in, pg, out);
    *id = (uint32_t)out[0];
    for (i = 1; i < n; i++)
      if ((uint32_t)out[i] < *id) *id = (uint32_t)out[i];
  }
  free(in);
  free(out);
  MPI_Group_free(&ng);
  MPI_Group_free(&pg);
  MPI_Comm_free(&node);
  return rc;
}

int dred_nodes_exchange(MPI_Comm priv, uint32_t **node_of, int *nnodes) {
  int rank, size, r, rc, distinct = 0;
  uint32_t id = 0, *tab;

  MPI_Comm_rank(priv, &rank);
  MPI_Comm_size(priv, &size);
  rc = my_node(priv, &id); /* collective: made even if the table cannot be allocated */
  if ((tab = calloc((size_t)size, sizeof *tab)) == NULL) {
    /* A few KiB at start: the job cannot run anyway, and like any failed dred_init the
     * others then wait for this process until the launcher ends the job. */
    DRED_ERROR("no memory for the node table (%d processes)", size);
    return DRED_ERR_NOMEM;
  }
  if (rank == 0) {
    tab[0] = id;
    for (r = 1; r < size; r++)
      MPI_Recv(&tab[r], 1, MPI_UINT32_T, r, DRED_NODES_TAG, priv, MPI_STATUS_IGNORE);
    for (r = 1; r < size; r++) MPI_Send(tab, size, MPI_UINT32_T, r, DRED_NODES_TAG, priv);
  } else {
    MPI_Send(&id, 1, MPI_UINT32_T, 0, DRED_NODES_TAG, priv);
    MPI_Recv(tab, size, MPI_UINT32_T, 0, DRED_NODES_TAG, priv, MPI_STATUS_IGNORE);
  }
  if (rc != DRED_OK) {
    free(tab);
    return rc;
  }
  for (r = 0; r < size; r++) {
    int seen = 0, j;
    for (j = 0; j < r && !seen; j++) seen = tab[j] == tab[r];
    distinct += !seen;
  }
  *node_of = tab;
  *nnodes = distinct;
  return DRED_OK;
}
