/*
 * dred_status.h -- the status codes every dred call returns.
 *
 * Kept apart from dred.h so that MPI-free code (the scheduler, the storage layer, their
 * unit tests) can use the same codes without including mpi.h.  Installed beside dred.h.
 */
#ifndef DRED_STATUS_H
#define DRED_STATUS_H

/* Status codes.  0 is success; every other value names one failure. */
#define DRED_OK               0  /* the reduction completed; recvbuf at the root holds it   */
#define DRED_ERR_ARG          1  /* a bad argument, caught locally before anything was sent */
#define DRED_ERR_MISMATCH     2  /* members disagree on count, datatype size, op or root    */
#define DRED_ERR_NOMEM        3  /* out of memory                                           */
#define DRED_ERR_PROC_FAILED  4  /* an operand was lost and no replica of it survived       */
#define DRED_ERR_ROOT_FAILED  5  /* the root process of the reduction died                  */
#define DRED_ERR_MASTER_LOST  6  /* dred-master stopped answering                           */
#define DRED_ERR_STORAGE      7  /* the replica store failed (I/O error, corrupt copy)      */
#define DRED_ERR_SHUTDOWN     8  /* the service is shutting down or has shut down           */
#define DRED_ERR_INTERNAL     9  /* a bug or an MPI failure inside dred; see the log        */
#define DRED_ERR_TIMEOUT     10  /* a wait ran out (the reduction goes on), or dred_finalize
                                    cut pending reductions short after DRED_FINALIZE_WAIT_S */

#endif /* DRED_STATUS_H */
