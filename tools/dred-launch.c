/*
 * dred-launch.c -- keeps MPICH's Hydra from killing a job when one of its processes dies.
 *
 * Measured here (MPICH 4.0.2, Hydra): with `mpiexec -disable-auto-cleanup`, when a process
 * dies the Hydra proxy sends SIGUSR1 to every other process and, moments later, SIGKILL
 * to all of them -- so no survivor lives to finish its reduction.  dredrun therefore
 * starts every process through this launcher:
 *
 *     mpiexec ... -n 1 dred-launch dred-master : -n P dred-launch ./app args
 *
 * The launcher forks the real program (same process group, same PMI descriptors) and
 * waits.  If the program exits, the launcher exits with the same code at once.  If the
 * program is killed by a signal, the launcher stays -- so Hydra sees no death and keeps
 * everyone alive -- until every sibling under the same proxy has exited (or
 * DRED_LAUNCH_LINGER_S seconds pass, default 3600), then dies by the same signal, so
 * mpiexec still reports the failure at the end.  MPI_Abort and Ctrl-C behave as before:
 * Hydra kills the whole process group, program included.
 *
 * Whenever the program ends, the launcher also tells the proxy, on the PMI socket the two
 * share (PMI_FD, PMI-1's "cmd=finalize"), that it is done with PMI -- what MPI_Finalize
 * does, and what a program that died or skipped MPI_Finalize (dred does after a failure:
 * the collective shutdown would hang) never did.  Without it the proxy reports the closed
 * socket as a dead process (PROCESS_TERMINATED), and mpiexec forwards SIGUSR1 to every
 * other proxy, asserting that each one's control socket is open: a proxy whose processes
 * had all just exited fails that assertion and mpiexec tears the whole job down, SIGKILL
 * to every survivor.  Measured here with a 20-line MPI program on a:2,b:2,c:2 (a's two
 * processes killed, the others exiting without MPI_Finalize 10 ms later, one staying):
 * the staying one was killed in 10 of 20 runs, 2 of 20 when only killed programs were
 * finalized for, 0 of 30 with every program finalized for.  dred does not use Hydra's
 * failure notice (it detects failures itself).  A program that did finalize has shut the
 * socket down, so the launcher's attempt fails at once.
 *
 * Lingering is for a program that dies once the job is up: the others carry on without
 * it.  One killed during start-up -- before its dred_init (dred-master: its own start-up)
 * finished -- leaves every other process in the start-up collectives, which never end
 * without it: lingering would hide the death until DRED_START_TIMEOUT_S, and the master
 * would then blame the phase it waited in.  So the launcher hands the program the write
 * end of a pipe, its number in DRED_LAUNCH_FD; libdred and dred-master write "up" on it
 * once their start-up is over (common/mpi/boot.c, dred_boot_tell_launcher).  A program
 * killed before that is reported as dead during start-up, and the launcher dies at once
 * of the same signal without finalizing PMI for it: Hydra then ends the whole job, as it
 * does for any process that dies without the launcher.  Likewise a program that exits
 * with a non-zero status before that (a bad setting, a usage error, or one that could not
 * be run at all: 127): the job ends at once through PMI's abort.  A program that exits 0
 * early (one that does not use dred, or /bin/true) is not such a failure: the master's
 * start-up watch says what it waited for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/settings.h"

#define LINGER_NAME "dred-linger"

static pid_t child = -1;

/* End the whole job through PMI ("cmd=abort", what MPI_Abort sends): mpiexec then kills
 * every process, -disable-auto-cleanup or not.  Needed because a death during start-up is
 * not always seen by the others: a program killed before its MPI connections were made
 * leaves them spinning in the start-up collectives with nothing to fail on, and Hydra,
 * told not to clean up, waits for them (seen here in about one trial in four).  Nothing
 * to do without PMI_FD (not under Hydra). */
/* Until the Hydra proxy has read what we wrote on stderr (a pipe to it), at most 0.5 s: the
 * abort below makes it end the job at once, and a line still in the pipe -- the one saying
 * who died -- would be lost with it. */
static void stderr_drain(void) {
  struct timespec step = {0, 5000000};
  int left = 0, i;
  fflush(stderr);
  for (i = 0; i < 100 && ioctl(2, FIONREAD, &left) == 0 && left > 0; i++) nanosleep(&step, NULL);
}

static void end_job_now(int code) {
  char req[64];
  const char *s = getenv("PMI_FD");
  int fd, n;
  stderr_drain();
  if (s == NULL || (fd = atoi(s)) < 0) return;
  n = snprintf(req, sizeof req, "cmd=abort exitcode=%d\n", code);
  if (write(fd, req, (size_t)n) != n) return;
}
static volatile sig_atomic_t terminating;

/* A termination request (Ctrl-C, mpiexec cleanup, timeout) goes to the program, and the
 * launcher will not linger after it: the job is meant to end. */
static void forward(int sig) {
  terminating = 1;
  if (child > 0) kill(child, sig);
}

/* Other children of our parent (the Hydra proxy) still running a program, read from
 * /proc.  Exited ones (zombies) and launchers lingering like us do not count, or two
 * lingering launchers would wait for each other forever. */
static int siblings_alive(pid_t parent, pid_t self) {
  char path[64], buf[8192];
  FILE *f;
  size_t n;
  int count = 0;
  char *tok, *save = NULL;

  snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)parent, (long)parent);
  if ((f = fopen(path, "r")) == NULL) return 0; /* cannot tell: do not linger */
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
    pid_t p = (pid_t)atol(tok);
    char st[64], state = '?', comm[32] = "";
    FILE *sf;
    if (p == self) continue;
    snprintf(st, sizeof st, "/proc/%ld/stat", (long)p);
    if ((sf = fopen(st, "r")) != NULL) {
      /* "pid (comm) S ..." -- a zombie (Z) has exited already */
      char line[512];
      if (fgets(line, sizeof line, sf) != NULL) {
        char *lp = strchr(line, '('), *rp = strrchr(line, ')');
        if (rp != NULL && rp[1] == ' ') state = rp[2];
        if (lp != NULL && rp != NULL && rp > lp && (size_t)(rp - lp - 1) < sizeof comm) {
          memcpy(comm, lp + 1, (size_t)(rp - lp - 1));
          comm[rp - lp - 1] = '\0';
        }
      }
      fclose(sf);
    }
    if (state != 'Z' && state != '?' && strcmp(comm, LINGER_NAME) != 0) count++;
  }
  return count;
}

/* PMI-1 finalize on the program's behalf (see the top): "cmd=finalize", then wait, at most
 * `timeout_ms`, for "cmd=finalize_ack".  Nothing to do without PMI_FD (not under Hydra). */
static void pmi_finalize_for_program(int timeout_ms) {
  static const char req[] = "cmd=finalize\n";
  const char *s = getenv("PMI_FD");
  char buf[256];
  size_t got = 0;
  int fd;
  if (s == NULL || (fd = atoi(s)) < 0) return;
  if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) return; /* finalized: shut */
  while (got < sizeof buf - 1) {
    struct pollfd p = {fd, POLLIN, 0};
    ssize_t n;
    if (poll(&p, 1, timeout_ms) <= 0) return;
    if ((n = read(fd, buf + got, sizeof buf - 1 - got)) <= 0) return;
    got += (size_t)n;
    buf[got] = '\0';
    if (strchr(buf, '\n') != NULL) return; /* cmd=finalize_ack */
  }
}

/* Whether the program said its start-up is over (the top): "up" on the pipe, read
 * without waiting -- the program has ended, so whatever it wrote is there. */
static int program_was_up(int rfd) {
  char buf[64];
  size_t got = 0;
  ssize_t n;
  if (rfd < 0) return 1; /* no pipe: cannot tell, so linger as for a program that was up */
  while (got < sizeof buf - 1 && (n = read(rfd, buf + got, sizeof buf - 1 - got)) > 0)
    got += (size_t)n;
  buf[got] = '\0';
  return strstr(buf, "up") != NULL;
}

int main(int argc, char **argv) {
  int status = 0, note[2] = {-1, -1}, up;
  pid_t parent = getppid();
  /* From the settings table (common/settings.h): a bad value is logged, the default used. */
  long linger = (long)dred_setting_u64(DRED_S_LAUNCH_LINGER_S),
       term_linger = (long)dred_setting_u64(DRED_S_LAUNCH_TERM_LINGER_S);
  time_t until;

  if (argc < 2) {
    fprintf(stderr, "usage: dred-launch PROGRAM [ARGS...]  (used by dredrun)\n");
    return 2;
  }
  /* Non-blocking read end (read once the program ended); the write end is the program's. */
  if (pipe2(note, O_CLOEXEC | O_NONBLOCK) != 0) note[0] = note[1] = -1;
  child = fork();
  if (child < 0) {
    perror("dred-launch: fork");
    return 127;
  }
  if (child == 0) {
    if (note[1] >= 0) {
      char fd[16];
      int fl = fcntl(note[1], F_GETFL);
      /* the program's end blocks as usual (a write of 3 bytes never fills a pipe anyway) */
      if (fl >= 0) (void)fcntl(note[1], F_SETFL, fl & ~O_NONBLOCK);
      (void)fcntl(note[1], F_SETFD, 0); /* kept across exec */
      snprintf(fd, sizeof fd, "%d", note[1]);
      setenv("DRED_LAUNCH_FD", fd, 1);
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "dred-launch: cannot run %s: %s\n", argv[1], strerror(errno));
    _exit(127);
  }
  if (note[1] >= 0) close(note[1]);
  signal(SIGINT, forward);
  signal(SIGTERM, forward);
  signal(SIGHUP, forward);
  signal(SIGUSR1, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      perror("dred-launch: waitpid");
      return 127;
    }
  }
  up = program_was_up(note[0]);
  if (WIFSIGNALED(status) && !up && !terminating) {
    /* Killed during start-up: end the job now (the top), naming who and when. */
    fprintf(stderr, "dred-launch: %s (pid %ld) was killed by signal %d (%s) during start-up, "
            "before its dred_init finished: ending the job (the others wait for it in "
            "start-up collectives that cannot finish)\n", argv[1], (long)child,
            WTERMSIG(status), strsignal(WTERMSIG(status)));
    end_job_now(128 + WTERMSIG(status));
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && !up && !terminating) {
    /* Failed during start-up, or could not be run at all (127, said above): the others
     * wait for it in start-up collectives that cannot finish, as after a death there, so
     * end the job now rather than after DRED_START_TIMEOUT_S.  (A program that exits 0
     * before its start-up, one that does not use dred, is left to the master's watch.) */
    fprintf(stderr, "dred-launch: %s (pid %ld) exited with status %d during start-up, before "
            "its dred_init finished: ending the job (the others wait for it in start-up "
            "collectives that cannot finish)\n", argv[1], (long)child, WEXITSTATUS(status));
    end_job_now(WEXITSTATUS(status));
    return WEXITSTATUS(status);
  }
  pmi_finalize_for_program(1000);
  /* Hydra's own report comes only at the job's end, if at all (a lingering launcher hides
   * the death from it), and names no program: say here who ended how. */
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    fprintf(stderr, "dred-launch: %s (pid %ld) exited with status %d\n", argv[1], (long)child,
            WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    fprintf(stderr, "dred-launch: %s (pid %ld) was killed by signal %d (%s)%s\n", argv[1],
            (long)child, WTERMSIG(status), strsignal(WTERMSIG(status)),
            terminating ? "" : "; staying until its node's other processes end");
  if (terminating) {
    /* A cancelled job (SIGTERM from a batch system, Ctrl-C): every program got the signal
     * and removes its files before it ends (lib/engine/signals.c).  But as soon as Hydra sees
     * one process of the job end it SIGKILLs the others, and on a busy node some have not
     * run their handler yet: they would leave their control sockets and replica stores
     * behind (tests/faults/pause.sh --term lost 1 trial in 14 that way).  So a launcher
     * that was told to terminate ends only once its node's other programs have ended too,
     * or after DRED_LAUNCH_TERM_LINGER_S seconds (default 10). */
    prctl(PR_SET_NAME, LINGER_NAME, 0, 0, 0);
    until = time(NULL) + (term_linger > 0 ? term_linger : 0);
    while (time(NULL) < until && siblings_alive(parent, getpid()) > 0) usleep(20000);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (!WIFSIGNALED(status)) return 127;
  if (terminating) {
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  /* The program died: keep Hydra from tearing the survivors down. */
  prctl(PR_SET_NAME, LINGER_NAME, 0, 0, 0);
  until = time(NULL) + (linger > 0 ? linger : 0);
  while (time(NULL) < until && siblings_alive(parent, getpid()) > 0) usleep(100000);
  signal(WTERMSIG(status), SIG_DFL);
  raise(WTERMSIG(status));
  return 128 + WTERMSIG(status);
}
