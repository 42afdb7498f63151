/*
 * jobinit.c -- the start-of-job handshake (see jobinit.h for what and why).
 */
#include "jobinit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../dred_status.h"

void dred_jobinit_new_id(char *out, size_t cap) {
  uint32_t r = 0;
  /* The pid alone repeats across nodes and reboots; 32 random bits make a clash of two
   * live jobs of one user practically impossible. */
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
    r = (uint32_t)clock() ^ (uint32_t)(uintptr_t)&r;
  snprintf(out, cap, "%ld-%ld-%08x", (long)time(NULL), (long)getpid(), (unsigned)r);
}

int dred_jobinit_exchange(MPI_Comm priv, dred_jobinit_t *ji) {
  int rc = MPI_Bcast(ji, (int)sizeof *ji, MPI_BYTE, 0, priv);
  ji->job_id[sizeof ji->job_id - 1] = '\0';
  ji->reason[sizeof ji->reason - 1] = '\0';
  return rc;
}

int dred_jobinit_agree(MPI_Comm priv, int mine, int *who) {
  int in[2], out[2];
  MPI_Comm_rank(priv, &in[1]);
  in[0] = mine;
  if (MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MAXLOC, priv) != MPI_SUCCESS) {
    *who = in[1];
    return DRED_ERR_INTERNAL;
  }
  *who = out[1];
  return out[0];
}
