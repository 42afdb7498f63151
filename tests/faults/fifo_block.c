/*
 * fifo_block.c -- the node-loss hang without dred: a process SIGKILLed while it sends to a
 * survivor over UCX's shared-memory transport can leave that survivor unable to receive
 * anything over MPI again (docs/faults.md, "The node-loss hang").
 *
 *   mpiexec -launcher fork -hosts a:1,b:2,c:1 -n 4 dred-launch fifo_block SEED
 *   (with UCX_TLS='^cma,tcp', as dredrun --sim-nodes sets it; tests/faults/fifo-block.sh)
 *
 * Four processes on simulated nodes, a dynamic window locked as dred locks it
 * (MPI_Win_lock_all(MPI_MODE_NOCHECK)).  Rank 0 keeps 8 MPI_Rget of 64 KiB in flight from
 * rank 1, whose only work is to drive MPI's progress (it serves the reads: MPICH 4.0.2
 * answers a dynamic window's reads by active messages carrying the data).  Rank 3 SIGKILLs
 * rank 1 at a moment drawn from SEED, 20-220 ms in -- from another process, as a node loss
 * does, so the kill can land while rank 1 is inside UCX writing an answer into rank 0's
 * receive FIFO.  Rank 0 then reads 64 KiB from rank 3, which is alive and polling, and
 * says whether that read COMPLETED within 3 s or is STUCK.  (Rank 2 only keeps rank 1's
 * node alive for Hydra.)
 *
 * Why a kill from outside: UCX's FIFO is one ring per receiving process, written by every
 * sender; a sender takes an element (an atomic step of the head), fills it, then flags it
 * written, and the receiver reads the elements in order.  A sender killed between the two
 * steps leaves an element that is never flagged, and nothing behind it is ever read.  A
 * victim that kills itself (raise) does so from its own code, never inside that window:
 * the first stand-alone check did that and saw 4 of 4 reads complete.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "settings.h"

#define CHUNK (64 * 1024)
#define SPAN (200 * CHUNK)
#define DEPTH 8

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void poll_for(double s) {
  double t0 = now_s();
  int flag;
  while (now_s() - t0 < s) MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

/* On STUCK: look at our own receive FIFO.  UCX 1.13's mm layout (src/uct/sm/mm/base): a
 * 12 KiB shared mapping, head at 0 (bit 63: event armed), tail at 128, the owner's pid at
 * 136, 64 elements of 128 bytes from 192, each flagged written by bit 0 of its first byte,
 * which flips on every pass over the ring.  Other UCX versions may differ: then this finds
 * nothing and says so. */
static void show_own_fifo(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512], perm[8];
  unsigned long lo, hi;
  int found = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    const unsigned char *b;
    uint64_t head, tail, k;
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 || strcmp(perm, "rw-s") != 0 ||
        hi - lo != 0x3000)
      continue;
    b = (const unsigned char *)lo;
    if (*(const int32_t *)(b + 136) != (int32_t)getpid()) continue;
    head = *(const volatile uint64_t *)b & ~(1ull << 63);
    tail = *(const volatile uint64_t *)(b + 128);
    if (head == 0 && tail == 0) continue; /* the transport UCX does not use for us */
    found = 1;
    for (k = tail; k < head; k++)
      if ((b[192 + (k % 64) * 128] & 1) != ((k >> 6) & 1)) break;
    if (k < head)
      printf("  our receive FIFO: head %llu, element %llu never flagged written, %llu written "
             "behind it\n", (unsigned long long)head, (unsigned long long)k,
             (unsigned long long)(head - k - 1));
    else
      printf("  our receive FIFO: head %llu tail %llu, every element written\n",
             (unsigned long long)head, (unsigned long long)tail);
    break; /* UCX maps it twice */
  }
  if (f != NULL) fclose(f);
  if (!found) printf("  (no UCX 1.13 mm FIFO of ours in use found)\n");
}

int main(int argc, char **argv) {
  int rank, size, prov, flag, i, nbusy = 0, busy[DEPTH] = {0}, pid, pids[4];
  long posted = 0;
  MPI_Win win;
  MPI_Aint mine, addr[4];
  MPI_Request r[DEPTH], live;
  const char *fd = dred_setting_raw(DRED_S_LAUNCH_FD); /* dred-launch's start-up pipe */
  char *buf = malloc(SPAN), *out = malloc((DEPTH + 1) * CHUNK);
  double delay, last, t0;

  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4 || argc < 2 || buf == NULL || out == NULL) {
    if (rank == 0) fprintf(stderr, "fifo_block: run 4 processes on a:1,b:2,c:1 with a seed\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* dred-launch waits for this before it shields the job from a death (tools/dred-launch.c) */
  if (fd != NULL && write(atoi(fd), "up\n", 3) < 0) perror("fifo_block: DRED_LAUNCH_FD");
  memset(buf, rank + 1, SPAN);
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Win_attach(win, buf, SPAN);
  MPI_Get_address(buf, &mine);
  MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
  pid = (int)getpid();
  MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
  srand((unsigned)atoi(argv[1]));
  delay = 0.02 + (double)(rand() % 2000) * 1e-4;
  MPI_Barrier(MPI_COMM_WORLD);

  if (rank == 1) for (;;) poll_for(1.0); /* serves rank 0's reads until killed */
  if (rank == 2) { /* never touches MPI again; exits without MPI_Finalize, as rank 3 does */
    sleep(5);
    _exit(0);
  }
  if (rank == 3) {
    poll_for(delay);
    kill((pid_t)pids[1], SIGKILL);
    poll_for(4.0); /* serves rank 0's live read */
    _exit(0);
  }
  /* rank 0: read rank 1 until its reads stop landing (it is dead), then read live rank 3 */
  last = now_s();
  while (now_s() - last < 0.3) {
    for (i = 0; i < DEPTH; i++) {
      if (!busy[i]) {
        MPI_Rget(out + i * CHUNK, CHUNK, MPI_BYTE, 1, addr[1] + (posted++ % 200) * CHUNK, CHUNK,
                 MPI_BYTE, win, &r[i]);
        busy[i] = 1;
      }
      flag = 0;
      MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE);
      if (flag) {
        busy[i] = 0;
        last = now_s();
      }
    }
  }
  for (i = 0; i < DEPTH; i++) nbusy += busy[i];
  MPI_Rget(out + DEPTH * CHUNK, CHUNK, MPI_BYTE, 3, addr[3], CHUNK, MPI_BYTE, win, &live);
  flag = 0;
  t0 = now_s();
  while (!flag && now_s() - t0 < 3.0) MPI_Test(&live, &flag, MPI_STATUS_IGNORE);
  printf("fifo_block seed %s: rank 1 killed %.1f ms in, %d of its reads abandoned (%ld "
         "posted); a read of live rank 3: %s\n",
         argv[1], delay * 1e3, nbusy, posted, flag ? "COMPLETED" : "STUCK");
  if (!flag) show_own_fifo();
  fflush(stdout);
  _exit(0); /* no MPI_Finalize: a process of the job is dead */
}
