/*
 * startwatch.c -- a bound on dred-master's MPI start-up, so a job whose application never
 * reaches dred_init ends with a reason instead of hanging.
 *
 * In the MPMD job (dredrun: dred-master is rank 0) the master's start-up is collective
 * with every application process's dred_init (common/mpi/boot.c).  A program launched
 * under dredrun that never calls dred_init -- a plain MPI program, one that does MPI
 * collectives on MPI_COMM_WORLD first, or one stuck before dred_init -- leaves the master
 * blocked in those collectives for ever, and the application with it (its
 * MPI_COMM_WORLD holds the master).  Measured: a 3-line MPI program (MPI_Init,
 * MPI_Barrier, MPI_Finalize) under `dredrun -n 8` hung until killed.
 *
 * A program that does not use MPI at all (`dredrun -n 2 /bin/sleep 3`) leaves the master
 * inside MPI_Init itself, waiting for processes that never start MPI, after they ended.
 *
 * So a thread, started before MPI_Init, waits DRED_START_TIMEOUT_S (300 s) for
 * master_startwatch_end(); if start-up has not finished by then it logs why and calls
 * MPI_Abort, which makes Hydra end every process of the job -- or, while this process is
 * still inside MPI_Init (no MPI call is allowed yet), exits with status 2.  MPI_Abort from
 * this thread while the main thread is inside a collective needs MPI_THREAD_MULTIPLE;
 * with less the watch exits instead.  The master beside the job (beside.c) has its own
 * bound (--start-timeout-s) on its socket.
 *
 * Once dred_boot_start has made the job's control directory (master_startwatch_boot), the
 * watch removes that directory before MPI_Abort: the processes MPI_Abort kills cannot.
 */
#include <mpi.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/watchdog.h"
#include "master.h"

static struct {
  dred_watchdog_t w;
  uint64_t timeout_s;
  int abort_ok;      /* MPI is initialised with MPI_THREAD_MULTIPLE: MPI_Abort may be called */
  const char *phase; /* what start-up waits for now: a static string */
  const dred_boot_t *boot; /* set once the control directory exists; not written after */
} g_sw;               /* abort_ok and phase change under the watchdog's lock */

static void timed_out(void *arg) {
  (void)arg;
  DRED_ERROR("start-up did not finish within %llu s (DRED_START_TIMEOUT_S), %s: ending "
             "the job", (unsigned long long)g_sw.timeout_s, g_sw.phase);
  if (g_sw.boot != NULL) dred_boot_abandon(g_sw.boot);
  master_abort_grace();
  if (g_sw.abort_ok) MPI_Abort(MPI_COMM_WORLD, 2);
  _exit(2); /* inside MPI_Init: no MPI call allowed; the others end on their own */
}

int master_startwatch_begin(uint64_t timeout_s) {
  if (timeout_s == 0) return DRED_ERR_ARG;
  g_sw.timeout_s = timeout_s;
  g_sw.abort_ok = 0;
  g_sw.phase = "inside MPI_Init, waiting for every application process to start MPI (a "
               "program that does not use MPI never does; dredrun runs programs that call "
               "dred_init())";
  if (dred_watchdog_start(&g_sw.w, timeout_s * 1000000000ull, timed_out, NULL) != 0) {
    DRED_WARN("cannot start the start-up watch: start-up is not bounded");
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

void master_startwatch_mpi_up(int mpi_thread_level) {
  dred_watchdog_lock(&g_sw.w);
  g_sw.abort_ok = mpi_thread_level >= MPI_THREAD_MULTIPLE;
  g_sw.phase = "waiting for every application process to call dred_init() (dredrun runs "
               "programs that call it before any communication on MPI_COMM_WORLD; a plain "
               "MPI program waits for ever for dred-master)";
  dred_watchdog_unlock(&g_sw.w);
  if (mpi_thread_level < MPI_THREAD_MULTIPLE)
    DRED_WARN("MPI gave thread level %d, not MPI_THREAD_MULTIPLE: a start-up past "
              "DRED_START_TIMEOUT_S ends this process only, not the job", mpi_thread_level);
}

void master_startwatch_phase(const char *phase) {
  dred_watchdog_lock(&g_sw.w);
  g_sw.phase = phase;
  dred_watchdog_unlock(&g_sw.w);
}

void master_startwatch_boot(const dred_boot_t *boot) {
  dred_watchdog_lock(&g_sw.w);
  g_sw.boot = boot;
  dred_watchdog_unlock(&g_sw.w);
}

void master_startwatch_end(void) { dred_watchdog_stop(&g_sw.w); }
