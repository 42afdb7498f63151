/*
 * interpose.h -- libdred-mpi's internals: unmodified MPI programs on dred through MPI's
 * profiling interface.
 *
 * libdred-mpi.so defines MPI_Init, MPI_Init_thread, MPI_Query_thread, MPI_Finalize,
 * MPI_Reduce, MPI_Ireduce, MPI_Allreduce, MPI_Iallreduce, MPI_Bcast, MPI_Ibcast, their
 * MPI-4 large-count forms (MPI_Reduce_c...: what mpi4py 4 and Fortran's mpi_f08 call)
 * and MPI_Request_get_status.
 * Loaded before libmpi (LD_PRELOAD, which
 * `dredrun --mpi` sets, or linked ahead of it), its definitions are the ones the program
 * calls; each does its work and reaches MPI by the PMPI_ name.  Which file does what:
 *
 *   init.c      MPI_Init/_thread, MPI_Query_thread, MPI_Finalize: MPI, then dred
 *   settings.c  DRED_MPI_* through common/config.c, strictly
 *   calls.c     the table of intercepted calls (DMPI_CALLS) and their counters; the
 *               DRED_MPI_REPORT lines
 *   route.c     dred or MPI for one call, decided from what every member shares
 *   commtag.c   a tag sequence per application communicator (dred's auto-tag sequence is
 *               per member list, MPI's call order per communicator)
 *   commnode.c  whether a communicator's processes share one node
 *   request.c   MPI_Requests over dred futures (MPICH's extended generalized requests);
 *               MPI_Request_get_status, the one completion call that would not see them
 *   errors.c    dred statuses as MPI error classes; the communicator's error handler
 *   reduce.c    MPI_Reduce, MPI_Ireduce
 *   allreduce.c MPI_Allreduce, MPI_Iallreduce
 *   bcast.c     MPI_Bcast, MPI_Ibcast
 */
#ifndef DRED_INTERPOSE_H
#define DRED_INTERPOSE_H

#include <mpi.h>
#include <stdint.h>

#include "dred.h"

/* Every intercepted call kind: X(id, "name").  A call dred starts serving keeps its entry;
 * only its wrapper (forward.c to a file of its own) changes. */
#define DMPI_CALLS(X)                  \
  X(REDUCE, "MPI_Reduce")              \
  X(IREDUCE, "MPI_Ireduce")            \
  X(ALLREDUCE, "MPI_Allreduce")        \
  X(IALLREDUCE, "MPI_Iallreduce")      \
  X(BCAST, "MPI_Bcast")                \
  X(IBCAST, "MPI_Ibcast")              \
  X(REDUCE_C, "MPI_Reduce_c")          \
  X(IREDUCE_C, "MPI_Ireduce_c")        \
  X(ALLREDUCE_C, "MPI_Allreduce_c")    \
  X(IALLREDUCE_C, "MPI_Iallreduce_c")  \
  X(BCAST_C, "MPI_Bcast_c")            \
  X(IBCAST_C, "MPI_Ibcast_c")

#define DMPI_CALL_ENUM(id, name) DMPI_##id,
typedef enum { DMPI_CALLS(DMPI_CALL_ENUM) DMPI_NCALLS } dmpi_call_t;
#undef DMPI_CALL_ENUM

/* Why a call went to MPI rather than dred (DRED_MPI_REPORT=2 prints the counts). */
#define DMPI_WHYS(X)                                                     \
  X(NO_DRED, "dred is not running in this process")                      \
  X(BAD_ARGS, "arguments MPI reports on (null or invalid communicator, root)") \
  X(INTERCOMM, "intercommunicator")                                      \
  X(SELF, "MPI_COMM_SELF")                                               \
  X(SMALL, "below DRED_MPI_MIN_BYTES (DRED_MPI_COLL_MIN_BYTES)")        \
  X(TYPE_OP, "datatype/op dred does not reduce (or datatype it does not broadcast)") \
  X(ABSOLUTE, "user op on a datatype of absolute addresses (MPI_BOTTOM)") \
  X(NO_TAGS, "no dred tag range left for the communicator")             \
  X(LARGE_COUNT, "a reduction of more than INT_MAX elements (a large-count call)") \
  X(BCAST_BYTES, "a bcast of no bytes or of more than INT_MAX bytes")

#define DMPI_WHY_ENUM(id, text) DMPI_WHY_##id,
typedef enum { DMPI_WHYS(DMPI_WHY_ENUM) DMPI_NWHYS } dmpi_why_t;
#undef DMPI_WHY_ENUM

/* ---- settings.c ---- */
typedef struct {
  uint64_t min_bytes; /* DRED_MPI_MIN_BYTES: reduce */
  uint64_t coll_min_bytes; /* DRED_MPI_COLL_MIN_BYTES: allreduce, bcast */
  uint64_t node_min_bytes; /* DRED_MPI_NODE_MIN_BYTES: any kind, a one-node communicator */
  int report;         /* DRED_MPI_REPORT    */
} dmpi_settings_t;
/* Read DRED_MPI_*; on a malformed value print why and return -1. */
int dmpi_settings_load(dmpi_settings_t *s);
extern dmpi_settings_t dmpi_settings;

/* ---- init.c ---- */
/* 1 between a successful dred_init in MPI_Init* and dred_finalize in MPI_Finalize. */
int dmpi_dred_on(void);

/* ---- calls.c ---- */
void dmpi_count_dred(dmpi_call_t call);
void dmpi_count_mpi(dmpi_call_t call, dmpi_why_t why);
/* The DRED_MPI_REPORT lines of this process, on stderr. */
void dmpi_report(int level);

/* ---- route.c ---- */
/* Should this collective go to dred?  Returns 1 with *tag set (DRED_TAG_AUTO or an
 * explicit tag, commtag.c), or 0 with *why set.  Decided only from what a correct program
 * passes alike on every member of `comm`, so every member takes the same path; may run a
 * collective over `comm` (the first collective on a communicator, commtag.c).  `op` is
 * ignored for a bcast, `root` for an allreduce.  `count` may be a large-count call's:
 * dred is chosen only where it fits an int. */
typedef enum { DMPI_KIND_REDUCE, DMPI_KIND_ALLREDUCE, DMPI_KIND_BCAST } dmpi_kind_t;
int dmpi_route(dmpi_kind_t kind, MPI_Count count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm, int *tag, dmpi_why_t *why);
/* dmpi_route for one call of kind `call`, counted (calls.c) where it went: 1 for dred. */
int dmpi_take(dmpi_call_t call, dmpi_kind_t kind, MPI_Count count, MPI_Datatype type,
              MPI_Op op, int root, MPI_Comm comm, int *tag);

/* ---- commtag.c ---- */
int dmpi_commtag_init(void);
void dmpi_commtag_finalize(void);
/* The tag of the next reduction on `comm`; -1 when the communicator has no tag range. */
int dmpi_commtag_next(MPI_Comm comm, int *tag);

/* ---- commnode.c ---- */
/* In MPI_Init on every process (a collective over MPI_COMM_WORLD). */
int dmpi_commnode_init(void);
void dmpi_commnode_finalize(void);
/* 1 if every process of `comm` lives on one node, else 0; the same on every member.  Runs
 * a collective over `comm` the first time it is asked for it (then cached). */
int dmpi_comm_one_node(MPI_Comm comm);

/* ---- errors.c ---- */
/* The MPI error class for a dred status (MPI_SUCCESS for DRED_OK). */
int dmpi_error_class(int dred_status);
/* Raise `code` on `comm` (its error handler decides: abort, or return) and return it. */
int dmpi_raise(MPI_Comm comm, int code);

/* ---- request.c ---- */
/* An MPI_Request for a started dred reduction (its future); MPI_SUCCESS or an error code. */
int dmpi_request_start(dred_future *f, MPI_Comm comm, MPI_Request *request);

#endif /* DRED_INTERPOSE_H */
