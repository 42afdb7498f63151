/*
 * commtag.c -- which dred tag each application reduction gets, so that dred matches
 * reductions the way MPI does: the k-th on a communicator with the k-th on the same
 * communicator, on every member.
 *
 * Why not DRED_TAG_AUTO everywhere: dred counts auto-tagged calls per member list, not per
 * communicator (dred.h), and MPI lets a program start reductions on two communicators with
 * the same members -- MPI_COMM_WORLD and a duplicate of it, say -- in different orders on
 * different processes.  With one shared sequence those calls would be paired across the
 * two communicators, silently, whenever their counts and types agree.
 *
 * So: MPI_COMM_WORLD keeps DRED_TAG_AUTO (it is the one communicator this library knows
 * to be the same on every process without asking; it also keeps dred's shared-memory
 * meeting place for small one-node reductions, which only auto-tagged calls use).  Every
 * other communicator gets, at its first reduction, a number `id` >= 1 agreed by its
 * members -- the maximum of each member's next unused number, by PMPI_Allreduce over the
 * communicator -- and its k-th reduction the explicit tag id * SLOTS + k mod SLOTS.
 * Distinct ids on communicators that share members follow from every member taking part
 * in each agreement and moving its next number past the result.  The agreement is a
 * collective at a point where every member is making the same call on the same
 * communicator, so it is in MPI's own order there.  Cached as an attribute (not copied by
 * MPI_Comm_dup: a duplicate is a new communicator and agrees its own id).
 *
 * SLOTS = 65536 = DRED_MAX_INFLIGHT's default: dred refuses a tag whose previous use is
 * still in flight, and the call SLOTS reductions back on the same communicator can only
 * be, if this process has more reductions in flight than dred allows by default.  Ids
 * then run to 32767; later communicators go to MPI (counted, "no dred tag range").
 *
 * Limits (dred(3)): the agreement blocks, so the first reduction on a communicator other
 * than MPI_COMM_WORLD waits for every member's first reduction on it; first reductions on
 * two communicators with the same members must not be made concurrently from two threads.
 */
#include <pthread.h>
#include <stdlib.h>

#include "interpose.h"

#define SLOTS 65536
#define MAX_ID ((int)(0x7fffffff / SLOTS))

typedef struct {
  int id;        /* 0: no tag range (MPI serves the communicator) */
  uint32_t next; /* calls made so far */
} commtag_t;

static int keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int next_id = 1; /* the lowest id this process has not agreed to */

static int commtag_delete(MPI_Comm comm, int kv, void *val, void *extra) {
  free(val);
  return MPI_SUCCESS;
}

int dmpi_commtag_init(void) {
  return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, commtag_delete, &keyval, NULL);
}

void dmpi_commtag_finalize(void) {
  if (keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval);
}

int dmpi_commtag_next(MPI_Comm comm, int *tag) {
  commtag_t *ct = NULL;
  int flag = 0, mine, id;
  if (comm == MPI_COMM_WORLD) {
    *tag = DRED_TAG_AUTO;
    return 0;
  }
  PMPI_Comm_get_attr(comm, keyval, &ct, &flag);
  if (!flag) {
    pthread_mutex_lock(&mu);
    mine = next_id;
    pthread_mutex_unlock(&mu);
    if (PMPI_Allreduce(&mine, &id, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) return -1;
    pthread_mutex_lock(&mu);
    if (id + 1 > next_id) next_id = id + 1;
    pthread_mutex_unlock(&mu);
    /* No way back: the other members took their path already. */
    if ((ct = calloc(1, sizeof *ct)) == NULL) PMPI_Abort(comm, MPI_ERR_NO_MEM);
    ct->id = id <= MAX_ID ? id : 0;
    PMPI_Comm_set_attr(comm, keyval, ct);
  }
  if (ct->id == 0) return -1;
  *tag = ct->id * SLOTS + (int)(ct->next++ % SLOTS);
  return 0;
}
