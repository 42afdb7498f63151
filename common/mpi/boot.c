/*
 * boot.c -- the collective start-up of boot.h, the start-of-job handshake and the
 * collective teardown, shared by dred-master and libdred: every MPI collective the two
 * programs must run in step, at start and at the end, is here, in the order they run it.
 *
 * Start (dred_boot_start, then dred_jobinit_exchange and dred_jobinit_agree):
 *   MPI_Comm_dup(world) -> priv; MPI_Comm_split(priv) -> dred_comm (the master passes
 *   MPI_UNDEFINED); the node table (MPI_COMM_TYPE_SHARED); token and job id broadcast;
 *   control-socket addresses gathered; then the job-init broadcast and the verdict
 *   allreduce.  After that each program creates its dynamic window over priv (the worker
 *   after its node's shared pool window, worker/dataplane.c; the master in main.c).
 * End (dred_boot_teardown), only when no process died:
 *   a worker first releases its node-local part (dred_dp_finalize: its lock on dwin, the
 *   shared pool window, the node communicator: the master is in none of them); then both
 *   free dwin (collective over priv), dred_comm (workers), priv, and call MPI_Finalize.
 *   Why this order: each free is collective over the communicator it was made on, so
 *   every process must reach the same one in the same position; a window is freed before
 *   the communicator it lives on; and the last collective, MPI_Finalize, follows
 *   everything dred made.  After a death none of it runs (MPI collectives hang once a
 *   process died): both programs exit without MPI_Finalize, and only dred_boot_finish
 *   (local: our socket, node_of) is called.
 */
#include "boot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../dred_status.h"
#include "../log.h"

#define JOB_ID_BYTES 8

typedef struct {
  int32_t node;
  char unix_addr[DRED_NET_ADDR_MAX];
  char tcp_addr[DRED_NET_ADDR_MAX];
} boot_rec_t;

/* Our control directory: private to us (0700, ours, a real directory).  Every process
 * of the job on this node makes or finds it; a directory someone else made is refused. */
static int make_dir(const char *dir) {
  struct stat st;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    DRED_ERROR("cannot create the control directory %s: %s", dir, strerror(errno));
    return DRED_ERR_INTERNAL;
  }
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0) {
    DRED_ERROR("control directory %s is not a private directory of this user: refused", dir);
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

int dred_boot_start(dred_boot_t *b, int is_master, dred_net_t *net, uv_loop_t *loop) {
  uint8_t secret[DRED_NET_TOKEN_BYTES + JOB_ID_BYTES];
  char hex[2 * JOB_ID_BYTES + 1], host[256];
  const char *tmp = getenv("TMPDIR");
  boot_rec_t mine, *all = NULL;
  MPI_Comm node;
  int nsize = 0, zero = 0, leader = 0, i, rc;
  size_t hlen = sizeof host;
  MPI_Group ng, wg;

  memset(b, 0, sizeof *b);
  MPI_Comm_rank(MPI_COMM_WORLD, &b->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b->size);
  MPI_Comm_dup(MPI_COMM_WORLD, &b->priv);
  MPI_Comm_set_errhandler(b->priv, MPI_ERRORS_RETURN);
  MPI_Comm_split(MPI_COMM_WORLD, is_master ? MPI_UNDEFINED : 1, b->rank, &b->comm);

  /* Who shares a node with whom: the node is named by its lowest world rank. */
  MPI_Comm_split_type(b->priv, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &nsize);
  MPI_Comm_group(node, &ng);
  MPI_Comm_group(b->priv, &wg);
  MPI_Group_translate_ranks(ng, 1, &zero, wg, &leader);
  MPI_Group_free(&ng);
  MPI_Group_free(&wg);
  MPI_Comm_free(&node);

  /* The token admits links; the job id names the directory (never the token: /tmp names
   * are public). */
  if (b->rank == 0 && (dred_net_token_new(secret) != 0 ||
                       uv_random(NULL, NULL, secret + DRED_NET_TOKEN_BYTES, JOB_ID_BYTES, 0, NULL) != 0))
    memset(secret, 0, sizeof secret); /* caught below: every process gets the same zeros */
  MPI_Bcast(secret, (int)sizeof secret, MPI_BYTE, 0, b->priv);
  for (i = 0; i < JOB_ID_BYTES; i++)
    snprintf(hex + 2 * i, 3, "%02x", secret[DRED_NET_TOKEN_BYTES + i]);
  snprintf(b->dir, sizeof b->dir, "%.60s/dred-ctl-%ld-%s", tmp != NULL && tmp[0] == '/' ? tmp : "/tmp",
           (long)getuid(), hex);
  snprintf(b->sock, sizeof b->sock, "%s/%d.sock", b->dir, b->rank);

  memset(&mine, 0, sizeof mine);
  mine.node = leader;
  rc = make_dir(b->dir);
  if (rc == DRED_OK) rc = dred_net_init(net, loop, b->rank, b->size, secret);
  if (rc == DRED_OK) {
    /* TCP only if the job spans nodes; single-node jobs open no port. */
    int local = 0, spans = 0;
    local = nsize < b->size;
    MPI_Allreduce(&local, &spans, 1, MPI_INT, MPI_MAX, b->priv);
    b->multinode = spans;
    if (spans && uv_os_gethostname(host, &hlen) != 0) snprintf(host, sizeof host, "localhost");
    if (dred_net_listen(net, b->sock, spans ? host : NULL, mine.unix_addr, mine.tcp_addr) != 0)
      rc = DRED_ERR_INTERNAL;
  } else {
    int local = 0, spans = 0;
    MPI_Allreduce(&local, &spans, 1, MPI_INT, MPI_MAX, b->priv); /* keep the sequence */
  }
  /* everyone's addresses, and whether everyone got this far */
  if ((all = calloc((size_t)b->size, sizeof *all)) == NULL) rc = DRED_ERR_NOMEM;
  {
    int bad = rc != DRED_OK, anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, b->priv);
    if (anybad) {
      if (rc == DRED_OK) DRED_ERROR("another process of the job could not set up its control socket");
      free(all);
      return rc != DRED_OK ? rc : DRED_ERR_INTERNAL;
    }
  }
  MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, b->priv);
  if ((b->node_of = calloc((size_t)b->size, sizeof *b->node_of)) == NULL) {
    DRED_ERROR("no memory for the node table (%d processes)", b->size);
    free(all);
    return DRED_ERR_NOMEM;
  }
  for (i = 0; i < b->size; i++) {
    all[i].unix_addr[DRED_NET_ADDR_MAX - 1] = all[i].tcp_addr[DRED_NET_ADDR_MAX - 1] = '\0';
    b->node_of[i] = (uint32_t)all[i].node;
    /* a node is named by its lowest rank, so it is new exactly where it names itself */
    b->nnodes += all[i].node == i;
    if (i == b->rank) continue;
    dred_net_set_addr(net, i, all[i].node == leader ? all[i].unix_addr : all[i].tcp_addr);
  }
  free(all);
  memset(secret, 0, sizeof secret);
  /* A worker opens its link to the master now: the master learns of a worker that dies
   * from here on by its link closing. */
  if (!is_master && dred_net_connect(net, 0, net->book[0]) != 0) {
    DRED_ERROR("cannot connect to dred-master at '%s'", net->book[0]);
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

void dred_boot_finish(dred_boot_t *b) {
  if (b->sock[0] != '\0') (void)unlink(b->sock);
  if (b->dir[0] != '\0') (void)rmdir(b->dir); /* fails until the last process left: fine */
  free(b->node_of);
  b->node_of = NULL;
}

void dred_boot_teardown(dred_boot_t *b, MPI_Win *dwin, int finalize) {
  if (dwin != NULL && *dwin != MPI_WIN_NULL) MPI_Win_free(dwin);
  if (b->comm != MPI_COMM_NULL) MPI_Comm_free(&b->comm);
  if (b->priv != MPI_COMM_NULL) MPI_Comm_free(&b->priv);
  if (finalize) MPI_Finalize();
}

/* ---- the start-of-job handshake (boot.h) ---- */

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
