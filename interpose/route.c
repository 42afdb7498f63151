/*
 * route.c -- dred or MPI, for one MPI_Reduce/MPI_Ireduce.
 *
 * A reduction must take the same path on every member: half the group in dred and half in
 * MPI waits forever.  So the decision uses only what a correct MPI program passes alike
 * on every member of the communicator -- the communicator itself (inter or intra, its
 * size), the root, the datatype and op (MPI requires the same op, and type signatures
 * whose byte counts match: count x type size is the same everywhere) -- and never a
 * local condition (a buffer address, this process's memory).  Checked in this order:
 *   dred not running here (dred_init failed: every process fails it together)
 *   a null or invalid communicator, a root out of range -> MPI, which reports the error
 *   an intercommunicator, MPI_COMM_SELF -> MPI (dred serves intracommunicators of its
 *     processes; MPI_COMM_SELF it refuses)
 *   a reduction of more than INT_MAX elements (a large-count call, MPI_Reduce_c...; every
 *     member passes the same count) -> MPI
 *   a bcast of no bytes, or of more than INT_MAX -> MPI.  MPI matches a bcast's type
 *     signature, not its count: one member may pass 2^31 + 16 MPI_CHAR to MPI_Bcast_c,
 *     which dred's int count cannot take, where another passes 2^27 + 1 contiguous(16,
 *     MPI_CHAR) to MPI_Bcast; or one member's type may be larger than an int can say
 *     (MPI_Type_size gives MPI_UNDEFINED, which dred refuses), or of size 0 with any
 *     count.  The bytes are the one thing all members share, so they decide
 *   count x type size below DRED_MPI_MIN_BYTES (allreduce, bcast: DRED_MPI_COLL_MIN_BYTES)
 *   -> MPI (faster there: common/settings.h) -- unless the communicator lives on one node
 *   (commnode.c, the same answer on every member) and it is at least
 *   DRED_MPI_NODE_MIN_BYTES
 *   a datatype/op pair dred's own check refuses (lib/engine/typecheck.c, the same code dred_ireduce
 *     runs, linked in here) -> MPI; this is why dred_ireduce's local DRED_ERR_ARG for
 *     them can never split a group
 *   a user op on a datatype of absolute addresses (true lower bound past the zero page, as
 *     MPI_Get_address gives, for MPI_BOTTOM) -> MPI: dred hands a user op its operands in
 *     the caller's typed layout, which must then be the same on every member, and absolute
 *     addresses differ from process to process (address-space randomization), where MPI
 *     allows it: dred would end the call with MISMATCH.  Every member builds such a type
 *     the same way, so every member sends it to MPI.  Predefined ops and bcasts on such
 *     types go to dred (packed: only the type signature must agree)
 *   no tag range for the communicator (commtag.c) -> MPI.
 * Refusals of predefined pairs are remembered: typecheck logs each refusal, and a program
 * that keeps reducing, say, MPI_WCHAR should not fill its log.
 */
#include <limits.h>
#include <pthread.h>

#include "interpose.h"
#include "../lib/engine/typecheck.h" /* dred_typecheck */

#define CACHE_MAX 64

typedef struct {
  MPI_Datatype type;
  MPI_Op op;
  int ok;
} pair_t;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static pair_t cache[CACHE_MAX];
static int ncache;

static int op_predefined(MPI_Op op) {
  static const MPI_Op ops[] = {MPI_MAX,  MPI_MIN,  MPI_SUM,  MPI_PROD, MPI_LAND,
                               MPI_BAND, MPI_LOR,  MPI_BOR,  MPI_LXOR, MPI_BXOR,
                               MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE, MPI_NO_OP};
  size_t i;
  for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (ops[i] == op) return 1;
  return 0;
}

/* A handle MPI never frees or reuses: a named type, or a Fortran parameterized one. */
static int type_named(MPI_Datatype t) {
  int ni, na, nd, combiner = MPI_COMBINER_NAMED;
  if (t == MPI_DATATYPE_NULL) return 1;
  PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  return combiner == MPI_COMBINER_NAMED || combiner == MPI_COMBINER_F90_REAL ||
         combiner == MPI_COMBINER_F90_COMPLEX || combiner == MPI_COMBINER_F90_INTEGER;
}

/* 1 if dred reduces `op` on `type`; with MPI_OP_NULL, if dred broadcasts `type`.  0 with
 * *absolute set for a user op on a type of absolute addresses (the top says why). */
static int dred_reduces(MPI_Datatype type, MPI_Op op, int *absolute) {
  dred_typeinfo_t ti;
  int i, ok, cacheable = op_predefined(op) && type_named(type);
  *absolute = 0;
  if (cacheable) {
    pthread_mutex_lock(&cache_mu);
    for (i = 0; i < ncache; i++) {
      if (cache[i].type == type && cache[i].op == op) {
        ok = cache[i].ok;
        pthread_mutex_unlock(&cache_mu);
        return ok;
      }
    }
    pthread_mutex_unlock(&cache_mu);
  }
  ok = (op == MPI_OP_NULL ? dred_typecheck_bcast(type, &ti) : dred_typecheck(type, op, &ti)) ==
       DRED_OK;
  *absolute = ok && ti.op_is_user && ti.true_lb >= DRED_BOTTOM_MIN;
  if (*absolute) ok = 0;
  if (cacheable) {
    pthread_mutex_lock(&cache_mu);
    if (ncache < CACHE_MAX) cache[ncache++] = (pair_t){type, op, ok};
    pthread_mutex_unlock(&cache_mu);
  }
  return ok;
}

int dmpi_route(dmpi_kind_t kind, MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm, int *tag, dmpi_why_t *why) {
  int inter = 0, size = 0, cmp = MPI_UNEQUAL, absolute = 0;
  MPI_Count tsize = 0;
  uint64_t bytes, min;
  if (!dmpi_dred_on()) {
    *why = DMPI_WHY_NO_DRED;
    return 0;
  }
  if (kind == DMPI_KIND_BCAST) op = MPI_OP_NULL; /* none: the type alone decides */
  if (kind == DMPI_KIND_ALLREDUCE) root = 0;      /* none */
  if (comm == MPI_COMM_NULL || count < 0 || type == MPI_DATATYPE_NULL ||
      (op == MPI_OP_NULL && kind != DMPI_KIND_BCAST) ||
      PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) {
    *why = DMPI_WHY_BAD_ARGS;
    return 0;
  }
  if (inter) {
    *why = DMPI_WHY_INTERCOMM;
    return 0;
  }
  PMPI_Comm_size(comm, &size);
  if (root < 0 || root >= size || PMPI_Type_size_x(type, &tsize) != MPI_SUCCESS || tsize < 0) {
    *why = DMPI_WHY_BAD_ARGS;
    return 0;
  }
  PMPI_Comm_compare(comm, MPI_COMM_SELF, &cmp);
  if (cmp == MPI_IDENT) {
    *why = DMPI_WHY_SELF;
    return 0;
  }
  bytes = (uint64_t)count * (uint64_t)tsize;
  if (kind != DMPI_KIND_BCAST && count > INT_MAX) {
    *why = DMPI_WHY_LARGE_COUNT;
    return 0;
  }
  if (kind == DMPI_KIND_BCAST && (bytes == 0 || bytes > INT_MAX)) {
    *why = DMPI_WHY_BCAST_BYTES;
    return 0;
  }
  min = kind == DMPI_KIND_REDUCE ? dmpi_settings.min_bytes : dmpi_settings.coll_min_bytes;
  /* the layout only when it can change the answer: asking is a collective (commnode.c) */
  if (bytes < min && (bytes < dmpi_settings.node_min_bytes || !dmpi_comm_one_node(comm))) {
    *why = DMPI_WHY_SMALL;
    return 0;
  }
  if (!dred_reduces(type, op, &absolute)) {
    *why = absolute ? DMPI_WHY_ABSOLUTE : DMPI_WHY_TYPE_OP;
    return 0;
  }
  if (dmpi_commtag_next(comm, tag) != 0) {
    *why = DMPI_WHY_NO_TAGS;
    return 0;
  }
  return 1;
}

int dmpi_take(dmpi_call_t call, dmpi_kind_t kind, MPI_Count count, MPI_Datatype type,
              MPI_Op op, int root, MPI_Comm comm, int *tag) {
  dmpi_why_t why;
  if (!dmpi_route(kind, count, type, op, root, comm, tag, &why)) {
    dmpi_count_mpi(call, why);
    return 0;
  }
  dmpi_count_dred(call);
  return 1;
}
