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
 * to be the same on every process without asking).  Every other communicator, at its
 * first reduction, agrees with its members (one PMPI_Allreduce over it, MPI_MAX of two
 * numbers) on two things:
 *   - whether its ordered member list is new here: no communicator with the same list
 *     (MPI_COMM_WORLD included) got DRED_TAG_AUTO before, as far as any member knows.  A
 *     new list takes DRED_TAG_AUTO, and so dred's shared-memory meeting place the way
 *     MPI_COMM_WORLD does: one stream for all its reductions.  (Explicit tags each claim
 *     a stream of the meeting place for the whole job, and the node has 256: a
 *     communicator's fresh tag per call would fill it within 256 calls and send every
 *     later reduction through dred-master.)  Every member of a later communicator with
 *     the same list was a member of the first, and recorded its list then, so the later
 *     one always learns the list is taken; lists are compared by a 64-bit hash, and a
 *     collision only costs the auto stream (explicit tags, as below).
 *   - a number `id` >= 1, the maximum of each member's next unused number; a communicator
 *     whose list was taken uses the explicit tag id * SLOTS + k mod SLOTS for its k-th
 *     reduction.  Distinct ids on communicators that share members follow from every
 *     member taking part in each agreement and moving its next number past the result.
 * The agreement is a collective at a point where every member is making the same call on
 * the same communicator, so it is in MPI's own order there.  Cached as an attribute (not
 * copied by MPI_Comm_dup: a duplicate is a new communicator and agrees its own).  A freed
 * communicator's list stays taken: a later communicator with it gets explicit tags.
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
#include <stdio.h>
#include <stdlib.h>

#include "interpose.h"

#define SLOTS 65536
#define MAX_ID ((int)(0x7fffffff / SLOTS))

typedef struct {
  int is_auto;   /* the first communicator with its member list: DRED_TAG_AUTO */
  int id;        /* else 0: no tag range (MPI serves the communicator) */
  uint32_t next; /* calls made so far */
} commtag_t;

static int keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int next_id = 1; /* the lowest id this process has not agreed to */
static uint64_t *auto_lists; /* hashes of the member lists that took DRED_TAG_AUTO */
static size_t n_auto, cap_auto;

/* The ordered member list of `comm`, as ranks of MPI_COMM_WORLD, hashed (FNV-1a): the
 * same on every member.  0 if MPI could not say (then the list counts as taken). */
static uint64_t list_hash(MPI_Comm comm) {
  MPI_Group cg, wg;
  int n = 0, i, *in, *out;
  uint64_t h = 0;
  if (PMPI_Comm_group(comm, &cg) != MPI_SUCCESS) return 0;
  PMPI_Comm_group(MPI_COMM_WORLD, &wg);
  PMPI_Group_size(cg, &n);
  in = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  out = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  if (in != NULL && out != NULL) {
    for (i = 0; i < n; i++) in[i] = i;
    if (PMPI_Group_translate_ranks(cg, n, in, wg, out) == MPI_SUCCESS) {
      h = 0xcbf29ce484222325ull;
      for (i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) h = (h ^ (((uint32_t)out[i] >> (8 * b)) & 0xffu)) * 0x100000001b3ull;
      if (h == 0) h = 1;
    }
  }
  free(in);
  free(out);
  PMPI_Group_free(&cg);
  PMPI_Group_free(&wg);
  return h;
}

/* Under mu. */
static int list_taken(uint64_t h) {
  size_t i;
  if (h == 0) return 1;
  for (i = 0; i < n_auto; i++)
    if (auto_lists[i] == h) return 1;
  return 0;
}

/* Under mu.  0, or -1 without memory (the list then cannot be recorded). */
static int list_take(uint64_t h) {
  if (n_auto == cap_auto) {
    size_t cap = cap_auto ? 2 * cap_auto : 16;
    uint64_t *p = realloc(auto_lists, cap * sizeof *p);
    if (p == NULL) return -1;
    auto_lists = p;
    cap_auto = cap;
  }
  auto_lists[n_auto++] = h;
  return 0;
}

static int commtag_delete(MPI_Comm comm, int kv, void *val, void *extra) {
  free(val);
  return MPI_SUCCESS;
}

int dmpi_commtag_init(void) {
  int rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, commtag_delete, &keyval, NULL);
  uint64_t h = list_hash(MPI_COMM_WORLD);
  pthread_mutex_lock(&mu);
  if (h != 0 && list_take(h) != 0) rc = MPI_ERR_NO_MEM; /* MPI_COMM_WORLD's own list */
  pthread_mutex_unlock(&mu);
  return rc;
}

void dmpi_commtag_finalize(void) {
  if (keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval);
  pthread_mutex_lock(&mu);
  free(auto_lists);
  auto_lists = NULL;
  n_auto = cap_auto = 0;
  pthread_mutex_unlock(&mu);
}

int dmpi_commtag_next(MPI_Comm comm, int *tag) {
  commtag_t *ct = NULL;
  int flag = 0, mine[2], got[2];
  uint64_t h;
  if (comm == MPI_COMM_WORLD) {
    *tag = DRED_TAG_AUTO;
    return 0;
  }
  PMPI_Comm_get_attr(comm, keyval, &ct, &flag);
  if (!flag) {
    h = list_hash(comm);
    pthread_mutex_lock(&mu);
    mine[0] = next_id;
    mine[1] = list_taken(h);
    pthread_mutex_unlock(&mu);
    if (PMPI_Allreduce(mine, got, 2, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) return -1;
    /* No way back: the other members took their path already. */
    if ((ct = calloc(1, sizeof *ct)) == NULL) PMPI_Abort(comm, MPI_ERR_NO_MEM);
    pthread_mutex_lock(&mu);
    if (got[0] + 1 > next_id) next_id = got[0] + 1;
    if (!got[1] && list_take(h) != 0) PMPI_Abort(comm, MPI_ERR_NO_MEM);
    pthread_mutex_unlock(&mu);
    ct->is_auto = !got[1];
    ct->id = got[0] <= MAX_ID ? got[0] : 0;
    if (PMPI_Comm_set_attr(comm, keyval, ct) != MPI_SUCCESS) { /* it would ask alone later */
      fprintf(stderr, "dred-mpi: cannot keep a communicator's dred tag (out of memory?): "
                      "ending the job rather than letting its members disagree later\n");
      PMPI_Abort(comm, MPI_ERR_NO_MEM);
    }
  }
  if (ct->is_auto) {
    *tag = DRED_TAG_AUTO;
    return 0;
  }
  if (ct->id == 0) return -1;
  *tag = ct->id * SLOTS + (int)(ct->next++ % SLOTS);
  return 0;
}
