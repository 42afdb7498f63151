/*
 * signals.c -- what libdred does with the signals a job gets, where the application has
 * not said otherwise (a handler of its own, or SIG_IGN, is never replaced).
 *
 *   SIGUSR1, SIGPIPE: ignored.  When a process dies, MPICH's Hydra proxy sends SIGUSR1 to
 *     every other process (its failure notification; the default action terminates), then
 *     mpiexec exits and the survivors' stdout/stderr pipes close, so the next log line
 *     would raise SIGPIPE.  A fault-tolerant job must survive both.
 *   SIGTERM, SIGINT, SIGHUP: still the end of the process, but first it removes the files
 *     it made (its control socket, the control directory if it is the last, its replica
 *     store: common/leave.h), which nobody else would once every process of the job got
 *     the same signal (a batch system cancelling the job, Ctrl-C forwarded by mpiexec).
 *     Then it dies of the signal, as it would have.
 */
#include <signal.h>
#include <stddef.h>

#include "../../common/leave.h"
#include "signals.h"

static void on_terminate(int sig) {
  dred_leave_now(); /* unlink/rmdir only: async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig); /* delivered once this handler returns: the default action, death */
}

void dred_signals_init(void) {
  static const int ignored[] = {SIGUSR1, SIGPIPE};
  static const int ending[] = {SIGTERM, SIGINT, SIGHUP};
  struct sigaction sa;
  size_t i;
  for (i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
    if (sigaction(ignored[i], NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) signal(ignored[i], SIG_IGN);
  for (i = 0; i < sizeof ending / sizeof ending[0]; i++) {
    if (sigaction(ending[i], NULL, &sa) != 0 || (sa.sa_flags & SA_SIGINFO) || sa.sa_handler != SIG_DFL)
      continue;
    sa.sa_handler = on_terminate;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(ending[i], &sa, NULL);
  }
}
