/*
 * init.c -- MPI_Init, MPI_Init_thread, MPI_Query_thread and MPI_Finalize: MPI first, then
 * dred; dred first, then MPI.
 *
 * Start: PMPI_Init_thread asking MPI_THREAD_MULTIPLE, which dred needs (its runtime thread
 * calls MPI beside the application's), then dred_init, which finds MPI initialised and
 * leaves finalising it to us.  The application is told the level it asked for, capped by
 * what MPI gave, as MPI_Init_thread would; MPI_Query_thread says the same.  Running at a
 * higher level than asked is invisible to a program.  If dred cannot start -- no
 * dred-master (the program was not launched by `dredrun --mpi`), MPI without
 * MPI_THREAD_MULTIPLE -- each process says so once and every call goes to MPI: dred_init
 * fails on every process together (its start-up ends in an agreement), so no group is
 * split.  A malformed DRED_MPI_* setting aborts the job (settings.c).
 *
 * End: with DRED_MPI_REPORT set, the report lines (calls.c); then dred_finalize, which
 * waits for this process's reductions and for every other process to arrive; then
 * PMPI_Finalize.  dred_finalize after a process failure says the collective shutdown
 * would hang (dred.h): MPI_Finalize then returns MPIX_ERR_PROC_FAILED without calling
 * PMPI_Finalize, and the program exits on its own.
 */
#include <stdio.h>

#include "interpose.h"

static int dred_on;     /* dred_init succeeded, dred_finalize not yet called */
static int app_level = MPI_THREAD_SINGLE; /* what the application was told */
static int started;     /* MPI_Init* went through here */

int dmpi_dred_on(void) { return __atomic_load_n(&dred_on, __ATOMIC_ACQUIRE); }

static int start(int *argc, char ***argv, int required, int *provided) {
  int got = MPI_THREAD_SINGLE, rc, st, ok;
  if ((rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &got)) != MPI_SUCCESS) return rc;
  app_level = required < got ? required : got;
  if (provided != NULL) *provided = app_level;
  started = 1;
  if (dmpi_settings_load(&dmpi_settings) != 0) PMPI_Abort(MPI_COMM_WORLD, 1);
  /* first: a collective over MPI_COMM_WORLD, before anything that may fail here alone */
  ok = dmpi_commnode_init() == MPI_SUCCESS && dmpi_commtag_init() == MPI_SUCCESS;
  /* dred_init is collective: a process that could not set up stays out only if all do */
  if (PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) ok = 0;
  if (!ok) {
    fprintf(stderr, "dred-mpi: no MPI attribute key for communicators here or on another "
            "process: every call goes to MPI\n");
    return MPI_SUCCESS;
  }
  if ((st = dred_init(argc, argv)) != DRED_OK) {
    fprintf(stderr, "dred-mpi: dred_init failed (%s): every call goes to MPI "
            "(launch with `dredrun --mpi`)\n", dred_strerror(st));
    return MPI_SUCCESS;
  }
  __atomic_store_n(&dred_on, 1, __ATOMIC_RELEASE);
  return MPI_SUCCESS;
}

DRED_EXTERN int MPI_Init(int *argc, char ***argv) {
  return start(argc, argv, MPI_THREAD_SINGLE, NULL);
}

DRED_EXTERN int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  return start(argc, argv, required, provided);
}

DRED_EXTERN int MPI_Query_thread(int *provided) {
  if (!started) return PMPI_Query_thread(provided);
  *provided = app_level;
  return MPI_SUCCESS;
}

DRED_EXTERN int MPI_Finalize(void) {
  int st = DRED_OK;
  if (started && dmpi_settings.report > 0) dmpi_report(dmpi_settings.report);
  if (dmpi_dred_on()) {
    __atomic_store_n(&dred_on, 0, __ATOMIC_RELEASE);
    st = dred_finalize();
  }
  if (st == DRED_ERR_PROC_FAILED || st == DRED_ERR_MASTER_LOST || st == DRED_ERR_ROOT_FAILED) {
    fprintf(stderr, "dred-mpi: dred_finalize: %s; MPI_Finalize skipped (it would hang)\n",
            dred_strerror(st));
    return dmpi_error_class(st);
  }
  dmpi_commtag_finalize();
  dmpi_commnode_finalize();
  return PMPI_Finalize();
}
