/*
 * dred.h -- public API of libdred, the task-parallel, fault-tolerant reduction service.
 *
 * An application launched with `dredrun -n P ./app` (rank 0 of MPI_COMM_WORLD is
 * dred-master, ranks 1..P run the app) calls dred_init(), then dred_ireduce() wherever
 * it would call MPI_Ireduce.  The call returns a future at once; the reduction proceeds on
 * libdred's runtime thread while the application computes, and dred_future_get() waits for
 * it.  Datatypes and ops are MPI's own, so converting an MPI_Ireduce call is a rename.
 *
 * Thread safety: every function may be called from any application thread at any time
 * after dred_init() and before dred_finalize() (MPI is initialised with
 * MPI_THREAD_MULTIPLE).  Calls made outside that window return DRED_ERR_ARG (or
 * DRED_ERR_SHUTDOWN after dred_finalize) and log why.
 *
 * Buffer lifetimes: `sendbuf` and `recvbuf` belong to the reduction until its future is
 * done (dred_future_is_done() returns 1 or dred_future_get()/dred_future_wait() returned
 * its status).  Do not modify `sendbuf` or read `recvbuf` before then.  Freeing a future
 * that is not done abandons the reduction locally (see dred_future_free).  A `sendbuf`
 * in a dred_alloc_mem block is read in place (no copy; see dred_alloc_mem).
 */
#ifndef DRED_H
#define DRED_H

#include <stddef.h> /* size_t */
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "dred_status.h" /* DRED_OK and the DRED_ERR_* codes */

/* Marks what libdred exports.  It is built with -fvisibility=hidden, so these functions
 * (and the MPI_Op_free / MPI_Type_free wrappers, lib/engine/lifetime.c) are its whole dynamic
 * interface; `make symbols-check` holds libdred.so to exactly that list. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define DRED_EXTERN __attribute__((visibility("default")))
#else
#define DRED_EXTERN
#endif

/* Pass as `tag` to match reductions by call order: the k-th DRED_TAG_AUTO call on a
 * group matches the k-th such call of every other member of that group.  A group is the
 * ordered member list of a communicator; two communicators with the same members in the
 * same order share one auto-tag sequence, so give such reductions explicit tags. */
#define DRED_TAG_AUTO (-1)

/* Initialise libdred.  Initialises MPI (MPI_THREAD_MULTIPLE) if the application has not;
 * if it has, MPI must have been initialised with MPI_THREAD_MULTIPLE.  Collective over
 * MPI_COMM_WORLD (dred-master takes part).  Returns DRED_OK or an error status. */
DRED_EXTERN int dred_init(int *argc, char ***argv);

/* Shut libdred down: waits for every reduction this process started (at most
 * DRED_FINALIZE_WAIT_S seconds, default 60; those still pending then end with
 * DRED_ERR_SHUTDOWN on every member, and dred_finalize returns DRED_ERR_TIMEOUT after an
 * otherwise complete shutdown, as it does when another member's bound ended them), leaves the service, waits for every other member to call
 * dred_finalize too (members may call it in any order, at any spacing), and finalises MPI
 * if dred_init() initialised it.  Collective over the application processes.  After a
 * process failure it returns without collective MPI calls and reports
 * DRED_ERR_PROC_FAILED; the application should then exit without MPI_Finalize. */
DRED_EXTERN int dred_finalize(void);

/* The communicator of the P application processes (dred-master excluded).  Use it, or
 * communicators derived from it, instead of MPI_COMM_WORLD.  MPI_COMM_NULL before
 * dred_init() and after dred_finalize(). */
DRED_EXTERN MPI_Comm dred_comm(void);

/* A static English description of a status code; never NULL. */
DRED_EXTERN const char *dred_strerror(int status);

/* A pending or completed reduction, returned by dred_ireduce(). */
typedef struct dred_future dred_future;

/* Start a reduction of `count` elements of `datatype` with `op` over the members of `comm`
 * (dred_comm() or a communicator derived from it), result at `root` (a rank of `comm`).
 * `recvbuf` matters only at the root and may be NULL elsewhere; the root may pass
 * MPI_IN_PLACE as `sendbuf`.  Every predefined op and datatype works, and user ops from
 * MPI_Op_create(); non-commutative ops give MPI's rank-order result.  Every datatype MPI
 * reduces works: predefined (pair types such as MPI_DOUBLE_INT included) and derived,
 * contiguous or not (dred(3)).  `tag` >= 0 names the reduction (members match on equal
 * tags; a tag may be reused once its reduction is done: the n-th call with a tag on a
 * communicator matches every other member's n-th call with it), or DRED_TAG_AUTO.  On
 * DRED_OK `*future` is set; on an error it is set to NULL.  Two kinds of error (dred(3),
 * "Refused calls"): a bad argument (DRED_ERR_ARG: pointers, count, root, tag, comm, type,
 * op, MPI_IN_PLACE at a non-root, count * extent above 1 TiB) takes no turn -- the call
 * never happened; a refusal from this process's state (DRED_ERR_NOMEM: more than
 * DRED_MAX_INFLIGHT, default 65536, reductions in flight here, or an operand that would take
 * the node's reductions in flight over DRED_NODE_MEM_MB, default its physical memory;
 * DRED_ERR_ARG: the same tag still in flight here) takes its turn
 * and every other member's future for that reduction ends with the same status.  A member
 * that cannot allocate its copy of the operand still joins, and the reduction ends
 * DRED_ERR_NOMEM on every member. */
DRED_EXTERN int dred_ireduce(const void *sendbuf, void *recvbuf, int count,
                             MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                             int tag, dred_future **future);

/* Blocking form: dred_ireduce with DRED_TAG_AUTO, then dred_future_get. */
DRED_EXTERN int dred_reduce(const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);

/* Start an allreduce: every member of `comm` gets, in `recvbuf`, the reduction of every
 * member's `sendbuf` (count elements of `datatype` under `op`), bit-identical on every
 * member (non-commutative ops in rank order).  Any member may pass MPI_IN_PLACE as
 * `sendbuf` (its operand is then in `recvbuf`).  Types, ops, tags, futures, refusals and
 * lifetimes are dred_ireduce's; DRED_TAG_AUTO calls of every kind share one sequence per
 * group (the k-th auto call of any kind matches the k-th elsewhere; members that disagree
 * on the kind get DRED_ERR_MISMATCH), explicit tags are per kind.  A member that dies
 * after its operand is in (or is recovered) costs the others nothing; member 0, where a
 * large allreduce gathers its result, dying before dred-master holds it ends the
 * allreduce with DRED_ERR_ROOT_FAILED everywhere (dred(3)). */
DRED_EXTERN int dred_iallreduce(const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, int tag,
                                dred_future **future);

/* Blocking form: dred_iallreduce with DRED_TAG_AUTO, then dred_future_get. */
DRED_EXTERN int dred_allreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/* Start a broadcast of `count` elements of `datatype` from `buffer` at `root` to `buffer`
 * at every other member of `comm` (any datatype; derived ones travel packed and are
 * unpacked with the caller's type).  `buffer` belongs to the bcast until its future is
 * done.  Tags, futures and refusals as for dred_iallreduce.  The root dying before
 * dred-master holds its data ends the bcast with DRED_ERR_ROOT_FAILED everywhere; after,
 * every surviving member still gets the data. */
DRED_EXTERN int dred_ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
                            MPI_Comm comm, int tag, dred_future **future);

/* Blocking form: dred_ibcast with DRED_TAG_AUTO, then dred_future_get. */
DRED_EXTERN int dred_bcast(void *buffer, int count, MPI_Datatype datatype, int root,
                           MPI_Comm comm);

/* Block until the reduction is done and return its status.  May be called again. */
DRED_EXTERN int dred_future_get(dred_future *f);

/* 1 if the reduction is done, 0 if not yet.  Never blocks.  (-1 for a NULL future.) */
DRED_EXTERN int dred_future_is_done(dred_future *f);

/* Wait at most `timeout_ms` milliseconds for the reduction: its status when it is done,
 * DRED_ERR_TIMEOUT if the wait ran out (the reduction goes on; wait again, or free the
 * future to abandon it).  timeout_ms < 0 waits as long as it takes (dred_future_get),
 * 0 only polls.  DRED_ERR_ARG for a NULL future. */
DRED_EXTERN int dred_future_wait(dred_future *f, int timeout_ms);

/* Release a future.  NULL is ignored.  On a pending future this abandons the reduction
 * locally: its status is never reported, and from the moment this returns libdred no
 * longer reads `sendbuf` (the operand was copied at the call; only a recovery would have
 * read it again) -- except a `sendbuf` read in place from a dred_alloc_mem block, which
 * stays the operand until the reduction ends: do not write it; dred_free_mem defers.  The reduction itself goes on for the other members: what they may
 * still read (this member's copy of its operand, its partial results, replicas) stays
 * alive inside libdred until the reduction ends or fails, then everything is released.
 * At the root, `recvbuf` is where the result is built: it is written until the
 * reduction ends, at the latest when dred_finalize() returns, so keep it allocated until
 * then.  dred_finalize() waits for abandoned reductions like for the others. */
DRED_EXTERN void dred_future_free(dred_future *f);

/* Memory in this process's share of the node's shared-memory pool (the shape of
 * MPI_Alloc_mem).  A dred_ireduce whose sendbuf lies wholly inside such a block (a
 * non-root member, a contiguous datatype, an operand above DRED_INLINE_MAX) makes no copy:
 * the block is the operand, recoverable by node peers from the moment the call starts,
 * so a kill inside or right after the call loses nothing while the node lives.  While a
 * reduction that reads a block is pending, do not write to the bytes it reads (reading is
 * fine); dred never writes them.  `*ptr` is aligned to 64 bytes and valid until
 * dred_free_mem or dred_finalize.  DRED_ERR_ARG: NULL ptr, size 0, or called outside
 * dred_init..dred_finalize; DRED_ERR_NOMEM: the pool (DRED_POOL_MB) cannot hold it. */
DRED_EXTERN int dred_alloc_mem(size_t size, void **ptr);

/* Return a block from dred_alloc_mem.  DRED_ERR_ARG (logged) for NULL, a pointer that is
 * not the start of a live block (foreign, inside a block, or freed already).  Freeing a
 * block that pending reductions (or their replica copies) still read is allowed: the call
 * returns DRED_OK, the block is the application's no longer, and dred returns it to the
 * pool once they are done with it. */
DRED_EXTERN int dred_free_mem(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* DRED_H */
