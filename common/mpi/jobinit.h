/*
 * jobinit.h -- the start-of-job handshake between dred-master and every worker.
 *
 * Two collectives on dred's private communicator, right after it is duplicated, in
 * dred-master (master/main.c) and in dred_init (worker/api.c) alike:
 *   1. MPI_Bcast from the master (rank 0) of a dred_jobinit_t: whether the master accepts
 *      its settings (and if not, the sentence saying which setting is wrong), its
 *      heartbeat interval (workers check their master timeout against it) and the job id
 *      that names the job's storage directory (<DRED_STORAGE_DIR>/job-<id>) on every node.
 *   2. MPI_Allreduce(MPI_MAXLOC) of (status, rank): each process adds its own verdict
 *      (a worker's settings, its replica store), so all of them learn whether the job can
 *      run and who refused first.
 * Why: a master that refused a setting used to exit before MPI_Init, leaving every worker
 * in dred_init forever; a worker that could not open its store ran without replicas and
 * its application never knew.  Now the master still joins MPI_Init and these two
 * collectives, so every dred_init returns the refusal as a status (DRED_ERR_ARG for a
 * setting, DRED_ERR_STORAGE for a store), and the master then ends the job (MPI_Abort).
 */
#ifndef DRED_JOBINIT_H
#define DRED_JOBINIT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int32_t status;        /* DRED_OK, or the status the master refuses the job with  */
  uint32_t heartbeat_ms; /* the master's ping interval                               */
  char job_id[64];       /* names <storage>/job-<id>; NUL-terminated                 */
  char reason[256];      /* why status != DRED_OK: names the setting                 */
} dred_jobinit_t;

/* A job id unique on this node and very likely everywhere: time, pid, 32 random bits. */
void dred_jobinit_new_id(char *out, size_t cap);

/* Step 1: the master sends `ji`; a worker receives it into `ji` (terminated strings
 * guaranteed).  Returns MPI's status. */
int dred_jobinit_exchange(MPI_Comm priv, dred_jobinit_t *ji);

/* Step 2: everyone's verdict.  `mine` is this process's status.  Returns DRED_OK when all
 * are, else the largest status code given (MPI_MAXLOC) and sets *who to the lowest rank
 * that gave it.  An MPI failure counts as DRED_ERR_INTERNAL. */
int dred_jobinit_agree(MPI_Comm priv, int mine, int *who);

#endif /* DRED_JOBINIT_H */
