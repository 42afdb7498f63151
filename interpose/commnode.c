/*
 * commnode.c -- whether an application communicator's processes all share one node, the
 * one layout fact route.c decides by.
 *
 * Why it matters: on one node dred's members meet in shared memory and its collectives
 * measured faster than MPICH's from 32 KiB; across nodes they pair through dred-master,
 * and MPI stays faster much longer (common/settings.h, DRED_MPI_NODE_MIN_BYTES).
 *
 * How.  MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) over the communicator gives each member
 * its node's part of it; the communicator is on one node when that part is all of it.  A
 * split partitions the communicator, so every member computes the same answer; an
 * MPI_Allreduce (MIN) of it then makes sure of that even if a split failed on one member
 * only.  Both are collectives, so this runs only where every member makes the same call on
 * the same communicator: for MPI_COMM_WORLD in MPI_Init (so no call on it ever blocks for
 * this, as commtag.c's agreement spares it too); for any other communicator at the first
 * call whose size lies between the one-node threshold and the general one, which every
 * member reaches alike (route.c).  The answer is cached as an attribute (not copied by
 * MPI_Comm_dup: a duplicate asks again), its value the answer itself.
 */
#include <stdint.h>
#include <stdio.h>

#include "interpose.h"

static int keyval = MPI_KEYVAL_INVALID;
static int world_one_node;

/* The collective answer for `comm` (see above). */
static int ask(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  int size = 0, nsize = -1, mine, all = 0;
  PMPI_Comm_size(comm, &size);
  if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS &&
      node != MPI_COMM_NULL) {
    PMPI_Comm_size(node, &nsize);
    PMPI_Comm_free(&node);
  }
  mine = nsize == size;
  if (PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) all = 0;
  return all;
}

/* In MPI_Init, on every process before anything that could fail on one of them alone. */
int dmpi_commnode_init(void) {
  world_one_node = ask(MPI_COMM_WORLD);
  return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
}

void dmpi_commnode_finalize(void) {
  if (keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval);
}

int dmpi_comm_one_node(MPI_Comm comm) {
  void *cached = NULL;
  int flag = 0, all;
  if (comm == MPI_COMM_WORLD) return world_one_node;
  if (keyval == MPI_KEYVAL_INVALID) return 0; /* the same everywhere: init refused dred */
  PMPI_Comm_get_attr(comm, keyval, &cached, &flag);
  if (flag) return (int)((intptr_t)cached - 1);
  all = ask(comm);
  /* The answer is the attribute's value itself (1 + answer): keeping it allocates nothing
   * of ours.  Should MPI fail to keep it, this process alone would ask again at a later
   * call -- a collective the others never join, so a hang -- so that ends the job. */
  if (PMPI_Comm_set_attr(comm, keyval, (void *)(intptr_t)(all + 1)) != MPI_SUCCESS) {
    fprintf(stderr, "dred-mpi: cannot keep whether a communicator is on one node (out of "
                    "memory?): ending the job rather than letting its members disagree later\n");
    PMPI_Abort(comm, MPI_ERR_NO_MEM);
  }
  return all;
}
