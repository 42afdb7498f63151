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
 *   after its node's shared pool window, lib/mpi/window.c; the master in main.c).
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
 * The collectives and MPI_Finalize are called by their PMPI_ names: a profiling layer in
 * front of the application's MPI (libdred-mpi.so, interpose/) defines MPI_Allreduce,
 * MPI_Bcast and MPI_Finalize, and dred's own start-up must not run through it.
 */
#include "boot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../include/dred_status.h"
#include "../leave.h"
#include "../log.h"
#include "../settings.h"

#define JOB_ID_BYTES 8

typedef struct {
  int32_t node;
  char unix_addr[DRED_NET_ADDR_MAX];
  char tcp_addr[DRED_NET_ADDR_MAX];
} boot_rec_t;

/* Our control directory: private to us (0700, ours, a real directory).  Every process
 * of the job on this node makes or finds it; a directory someone else made is refused. */
static int make_dir(const char *dir, int *made) {
  struct stat st;
  *made = mkdir(dir, 0700) == 0;
  if (!*made && errno != EEXIST) {
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

/* The process that made the control directory names it to dredrun, when dredrun started
 * the job: DRED_RUN_DIR is a private directory of dredrun's, on its node, and dredrun
 * removes every directory named there once the job has ended, whatever ended it (MPI_Abort
 * and SIGKILL leave no process to tidy up).  One file per directory made: "ctl.<rank>",
 * holding the path.  Elsewhere (another node, no dredrun) there is nothing to do. */
static void name_to_dredrun(const dred_boot_t *b) {
  const char *run = dred_setting_raw(DRED_S_RUN_DIR);
  char path[4300];
  int fd, n;
  if (run == NULL || run[0] != '/') return;
  n = snprintf(path, sizeof path, "%s/ctl.%d", run, b->rank);
  if (n < 0 || (size_t)n >= sizeof path) return;
  if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) return;
  (void)!write(fd, b->dir, strlen(b->dir));
  (void)!write(fd, "\n", 1);
  close(fd);
}

/* Rank `rank`'s control socket in the job's control directory; 0 if it does not fit. */
static int sock_path(const dred_boot_t *b, int rank, char *buf, size_t n) {
  int len = snprintf(buf, n, "%s/%d.sock", b->dir, rank);
  return len >= 0 && (size_t)len < n;
}

/* The control directory and our socket in it, named by the job id bytes (never the token:
 * /tmp names are public). */
static void name_dir(dred_boot_t *b, const uint8_t *id) {
  const char *tmp = getenv("TMPDIR"), *base = tmp != NULL && tmp[0] == '/' ? tmp : "/tmp";
  char hex[2 * JOB_ID_BYTES + 1], dir[4200];
  int i, n;
  for (i = 0; i < JOB_ID_BYTES; i++) snprintf(hex + 2 * i, 3, "%02x", id[i]);
  /* Every socket, "<dir>/<rank>.sock" (the highest rank's included), must fit a Unix
   * socket's sun_path (108 bytes): a longer TMPDIR (a batch system's per-job directory,
   * say) cannot hold it, and /tmp can.  Cut short, it would name another directory. */
  n = snprintf(dir, sizeof dir, "%s/dred-ctl-%ld-%s", base, (long)getuid(), hex);
  if (n < 0 || (size_t)n >= sizeof b->dir ||
      (size_t)n + sizeof "/.sock" + 10 > sizeof(((struct sockaddr_un *)0)->sun_path)) {
    DRED_WARN("TMPDIR (%zu characters) is too long for dred's control sockets: they go to /tmp",
              strlen(base));
    n = snprintf(dir, sizeof dir, "/tmp/dred-ctl-%ld-%s", (long)getuid(), hex);
  }
  memcpy(b->dir, dir, (size_t)n + 1); /* n < sizeof b->dir: checked, or /tmp's short name */
  (void)sock_path(b, b->rank, b->sock, sizeof b->sock); /* fits: checked above */
}

/* Our node: named by the job rank of its lowest process of priv. */
static int node_leader(const dred_boot_t *b, int *nsize) {
  MPI_Comm node;
  MPI_Group ng, wg;
  int zero = 0, leader = 0;
  MPI_Comm_split_type(b->priv, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, nsize);
  MPI_Comm_group(node, &ng);
  MPI_Comm_group(b->priv, &wg);
  MPI_Group_translate_ranks(ng, 1, &zero, wg, &leader);
  MPI_Group_free(&ng);
  MPI_Group_free(&wg);
  MPI_Comm_free(&node);
  return dred_boot_job_rank(b, leader);
}

/* Our socket and the control directory, for a signal that ends the process (leave.h). */
static void leave_register(const dred_boot_t *b) {
  dred_leave_add(b->sock, 0);
  dred_leave_add(b->dir, 1);
}

/* Listen (TCP too when `spans`), gather every process's addresses over priv, fill the node
 * table and the address book.  Collective over priv whatever happens here. */
static int links_up(dred_boot_t *b, dred_net_t *net, uv_loop_t *loop, const uint8_t *token,
                    int node, int spans) {
  boot_rec_t mine, *all = NULL;
  char host[256];
  size_t hlen = sizeof host;
  int nproc, i, rc, made = 0;

  memset(&mine, 0, sizeof mine);
  mine.node = node;
  rc = make_dir(b->dir, &made);
  if (made) name_to_dredrun(b);
  if (rc == DRED_OK) rc = dred_net_init(net, loop, b->rank, b->size, token);
  if (rc == DRED_OK) {
    /* TCP only if the job spans nodes; single-node jobs open no port. */
    if (spans && uv_os_gethostname(host, &hlen) != 0) snprintf(host, sizeof host, "localhost");
    if (dred_net_listen(net, b->sock, spans ? host : NULL, mine.unix_addr, mine.tcp_addr) != 0)
      rc = DRED_ERR_INTERNAL;
    else
      leave_register(b);
  }
  MPI_Comm_size(b->priv, &nproc);
  /* everyone's addresses, and whether everyone got this far */
  if ((all = calloc((size_t)nproc, sizeof *all)) == NULL ||
      (b->node_of = calloc((size_t)b->size, sizeof *b->node_of)) == NULL)
    rc = DRED_ERR_NOMEM;
  {
    int bad = rc != DRED_OK, anybad = 0;
    PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, b->priv);
    if (anybad) {
      if (rc == DRED_OK) DRED_ERROR("another process of the job could not set up its control socket");
      free(all);
      return rc != DRED_OK ? rc : DRED_ERR_INTERNAL;
    }
  }
  MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, b->priv);
  for (i = 0; i < nproc; i++) {
    int r = dred_boot_job_rank(b, i);
    all[i].unix_addr[DRED_NET_ADDR_MAX - 1] = all[i].tcp_addr[DRED_NET_ADDR_MAX - 1] = '\0';
    b->node_of[r] = (uint32_t)all[i].node;
    /* a node is named by its lowest rank, so it is new exactly where it names itself */
    b->nnodes += all[i].node == r;
    if (r == b->rank) continue;
    dred_net_set_addr(net, r, all[i].node == node ? all[i].unix_addr : all[i].tcp_addr);
  }
  free(all);
  return DRED_OK;
}

/* The master outside the job: where it is and the token, from the environment dredrun
 * (or whoever started it) gave the job.  Same on every process, so a refusal here is
 * everyone's and no collective is left waiting. */
static int beside_env(uint8_t *token, const char **unix_addr, const char **tcp_addr,
                      const char **host) {
  const char *hex = dred_setting_raw(DRED_S_JOB_TOKEN);
  unsigned v;
  int i;
  *unix_addr = dred_setting_raw(DRED_S_MASTER_ADDR);
  *tcp_addr = dred_setting_raw(DRED_S_MASTER_TCP);
  *host = dred_setting_raw(DRED_S_MASTER_HOST);
  if (*unix_addr == NULL || strncmp(*unix_addr, "unix:", 5) != 0 ||
      strlen(*unix_addr) >= DRED_NET_ADDR_MAX) {
    DRED_ERROR("DRED_MASTER_ADDR='%s' is not the master's \"unix:PATH\" address",
               *unix_addr ? *unix_addr : "");
    return DRED_ERR_ARG;
  }
  if (*tcp_addr != NULL && (*tcp_addr)[0] == '\0') *tcp_addr = NULL;
  if (*tcp_addr != NULL && (strncmp(*tcp_addr, "tcp:", 4) != 0 ||
                            strlen(*tcp_addr) >= DRED_NET_ADDR_MAX)) {
    DRED_ERROR("DRED_MASTER_TCP='%s' is not a \"tcp:HOST:PORT\" address", *tcp_addr);
    return DRED_ERR_ARG;
  }
  if (hex == NULL || strlen(hex) != 2 * DRED_NET_TOKEN_BYTES) {
    DRED_ERROR("DRED_JOB_TOKEN must be the master's %d hex digits (dredrun passes it)",
               2 * DRED_NET_TOKEN_BYTES);
    return DRED_ERR_ARG;
  }
  for (i = 0; i < DRED_NET_TOKEN_BYTES; i++) {
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
      DRED_ERROR("DRED_JOB_TOKEN is not hexadecimal");
      return DRED_ERR_ARG;
    }
    token[i] = (uint8_t)v;
  }
  return DRED_OK;
}

/* The host this process runs on as the job names it: Hydra tells each process the host
 * name it was launched for (so simulated nodes have names of their own). */
static void my_host(char *out, size_t cap) {
  const char *h = getenv("MPIR_CVAR_CH3_INTERFACE_HOSTNAME");
  size_t n = cap;
  if (h != NULL && h[0] != '\0') snprintf(out, cap, "%s", h);
  else if (uv_os_gethostname(out, &n) != 0) snprintf(out, cap, "localhost");
}

/* A worker of a job whose master runs outside MPI_COMM_WORLD (boot.h). */
static int boot_beside(dred_boot_t *b, dred_net_t *net, uv_loop_t *loop) {
  uint8_t secret[DRED_NET_TOKEN_BYTES + JOB_ID_BYTES];
  const char *uaddr = NULL, *taddr = NULL, *mhost = NULL;
  char host[256];
  int wr, ws, nsize = 0, node, here, mnode = INT32_MAX, ok, allok = 0, spans = 0, rc;

  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  b->external = 1;
  b->base = 1;
  b->rank = wr + 1;
  b->size = ws + 1;
  MPI_Comm_dup(MPI_COMM_WORLD, &b->priv);
  MPI_Comm_set_errhandler(b->priv, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &b->comm); /* the application's own world, duplicated */
  rc = beside_env(secret, &uaddr, &taddr, &mhost);
  ok = rc == DRED_OK;
  PMPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, b->priv);
  if (!allok) return rc != DRED_OK ? rc : DRED_ERR_ARG;
  node = node_leader(b, &nsize);
  /* The master's node: the one whose processes share its host name (none: every worker
   * reaches it over TCP and it has no death watch over them). */
  my_host(host, sizeof host);
  /* Without DRED_MASTER_HOST (a hand-made launch): here if its socket is here. */
  here = mhost != NULL ? strcmp(host, mhost) == 0 : access(uaddr + 5, F_OK) == 0;
  {
    int in = here ? node : INT32_MAX;
    PMPI_Allreduce(&in, &mnode, 1, MPI_INT, MPI_MIN, b->priv);
  }
  if (wr == 0 && uv_random(NULL, NULL, secret + DRED_NET_TOKEN_BYTES, JOB_ID_BYTES, 0, NULL) != 0)
    memset(secret + DRED_NET_TOKEN_BYTES, 0, JOB_ID_BYTES);
  PMPI_Bcast(secret + DRED_NET_TOKEN_BYTES, JOB_ID_BYTES, MPI_BYTE, 0, b->priv);
  name_dir(b, secret + DRED_NET_TOKEN_BYTES);
  {
    int local = nsize < ws || mnode != node;
    PMPI_Allreduce(&local, &spans, 1, MPI_INT, MPI_MAX, b->priv);
  }
  b->multinode = spans;
  rc = links_up(b, net, loop, secret, node, spans);
  memset(secret, 0, sizeof secret);
  if (rc != DRED_OK) return rc;
  b->node_of[0] = mnode == INT32_MAX ? 0u : (uint32_t)mnode;
  b->nnodes += mnode == INT32_MAX;
  {
    const char *dir = uaddr + 5, *slash = strrchr(dir, '/');
    if (slash != NULL && slash > dir)
      snprintf(b->watch, sizeof b->watch, "%.*s/watch", (int)(slash - dir) > 160 ? 160 : (int)(slash - dir), dir);
    if (node == (int)b->node_of[0] && strlen(dir) < sizeof b->master_sock)
      memcpy(b->master_sock, dir, strlen(dir) + 1);
  }
  if (node != (int)b->node_of[0] && taddr == NULL && mhost == NULL) {
    DRED_ERROR("no dred-master's socket at %s on this host, and no DRED_MASTER_TCP to reach "
               "one elsewhere", uaddr + 5);
    return DRED_ERR_ARG;
  }
  if (node != (int)b->node_of[0] && taddr == NULL) {
    DRED_ERROR("dred-master runs on another node (host %s, this is %s) but listens on no TCP "
               "address (DRED_MASTER_TCP): start it with --tcp-host", mhost ? mhost : "?", host);
    return DRED_ERR_ARG;
  }
  dred_net_set_addr(net, 0, node == (int)b->node_of[0] ? uaddr : taddr);
  DRED_INFO("dred-master outside the job, on %s: reached at %s", mhost ? mhost : "another host",
            net->book[0]);
  if (dred_net_connect(net, 0, net->book[0]) != 0) {
    DRED_ERROR("cannot connect to dred-master at '%s'", net->book[0]);
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

int dred_boot_start(dred_boot_t *b, int is_master, dred_net_t *net, uv_loop_t *loop) {
  uint8_t secret[DRED_NET_TOKEN_BYTES + JOB_ID_BYTES];
  int nsize = 0, node, rc, spans = 0;

  memset(b, 0, sizeof *b);
  if (!is_master && dred_setting_raw(DRED_S_MASTER_ADDR) != NULL) return boot_beside(b, net, loop);
  MPI_Comm_rank(MPI_COMM_WORLD, &b->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b->size);
  MPI_Comm_dup(MPI_COMM_WORLD, &b->priv);
  MPI_Comm_set_errhandler(b->priv, MPI_ERRORS_RETURN);
  MPI_Comm_split(MPI_COMM_WORLD, is_master ? MPI_UNDEFINED : 1, b->rank, &b->comm);
  node = node_leader(b, &nsize);

  /* The token admits links; the job id names the directory. */
  if (b->rank == 0 && (dred_net_token_new(secret) != 0 ||
                       uv_random(NULL, NULL, secret + DRED_NET_TOKEN_BYTES, JOB_ID_BYTES, 0, NULL) != 0))
    memset(secret, 0, sizeof secret); /* caught below: every process gets the same zeros */
  PMPI_Bcast(secret, (int)sizeof secret, MPI_BYTE, 0, b->priv);
  name_dir(b, secret + DRED_NET_TOKEN_BYTES);
  snprintf(b->watch, sizeof b->watch, "%s/watch", b->dir); /* fits: dir < DRED_NET_ADDR_MAX */
  {
    int local = nsize < b->size;
    PMPI_Allreduce(&local, &spans, 1, MPI_INT, MPI_MAX, b->priv);
  }
  b->multinode = spans;
  rc = links_up(b, net, loop, secret, node, spans);
  memset(secret, 0, sizeof secret);
  if (rc != DRED_OK) return rc;
  /* A worker opens its link to the master now: the master learns of a worker that dies
   * from here on by its link closing. */
  if (!is_master && dred_net_connect(net, 0, net->book[0]) != 0) {
    DRED_ERROR("cannot connect to dred-master at '%s'", net->book[0]);
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

/* ---- a master outside the MPI job (boot.h) ---- */

int dred_boot_standalone(dred_boot_t *b, int nworkers, dred_net_t *net, uv_loop_t *loop,
                         const char *tcp_host, char unix_addr[DRED_NET_ADDR_MAX],
                         char tcp_addr[DRED_NET_ADDR_MAX], uint8_t token[DRED_NET_TOKEN_BYTES]) {
  uint8_t id[JOB_ID_BYTES];
  int rc, made = 0;
  memset(b, 0, sizeof *b);
  b->priv = b->comm = MPI_COMM_NULL;
  b->external = 1;
  b->base = 1;
  b->rank = 0;
  b->size = nworkers + 1;
  if (dred_net_token_new(token) != 0 || uv_random(NULL, NULL, id, sizeof id, 0, NULL) != 0) {
    DRED_ERROR("no random bytes for the job's token");
    return DRED_ERR_INTERNAL;
  }
  name_dir(b, id);
  snprintf(b->watch, sizeof b->watch, "%s/watch", b->dir); /* fits: dir < DRED_NET_ADDR_MAX */
  if ((b->node_of = calloc((size_t)b->size, sizeof *b->node_of)) == NULL) return DRED_ERR_NOMEM;
  b->nnodes = 1;
  if ((rc = make_dir(b->dir, &made)) != DRED_OK) return rc;
  if (made) name_to_dredrun(b);
  if ((rc = dred_net_init(net, loop, 0, b->size, token)) != DRED_OK) return rc;
  if (dred_net_listen(net, b->sock, tcp_host, unix_addr, tcp_addr) != 0) return DRED_ERR_INTERNAL;
  leave_register(b);
  return DRED_OK;
}

static void join_timeout(uv_timer_t *t) { *(int *)t->data = 1; }
static void join_close(uv_handle_t *h) { (void)h; }

int dred_boot_join(dred_boot_t *b, dred_net_t *net, uv_loop_t *loop, uint64_t timeout_ms,
                   dred_jobinit_t *ji) {
  proto_msg_t m;
  uv_timer_t timer;
  int expired = 0, src, rc = DRED_ERR_INTERNAL, got = 0;

  memset(&m, 0, sizeof m);
  m.type = PROTO_JOIN;
  m.u.join.stage = 0;
  m.u.join.node = b->node_of[b->rank];
  m.u.join.master_node = b->node_of[0];
  if (dred_net_send(net, 0, &m, NULL) != DRED_OK) {
    DRED_ERROR("cannot write to dred-master");
    return DRED_ERR_INTERNAL;
  }
  uv_timer_init(loop, &timer);
  timer.data = &expired;
  uv_timer_start(&timer, join_timeout, timeout_ms, 0);
  while (!got && !expired) {
    int r;
    uv_run(loop, UV_RUN_ONCE);
    while (!got && (r = dred_net_recv(net, &src, &m)) != 0) {
      if (src != 0) continue; /* nobody else talks to us before the job agreed to run */
      if (r == DRED_NET_NOFD) {
        DRED_ERROR("cannot open the control link to dred-master: this process is out of file "
                   "descriptors (raise `ulimit -n`)");
        got = -1;
      } else if (r == DRED_NET_LOST) {
        DRED_ERROR("dred-master closed its link before it welcomed this worker");
        got = -1;
      } else if (m.type == PROTO_WELCOME) {
        memset(ji, 0, sizeof *ji);
        ji->status = m.u.welcome.status;
        ji->heartbeat_ms = m.u.welcome.heartbeat_ms;
        snprintf(ji->job_id, sizeof ji->job_id, "%s", m.u.welcome.job_id);
        snprintf(ji->reason, sizeof ji->reason, "%s", m.u.welcome.reason);
        got = 1;
        rc = DRED_OK;
      }
    }
  }
  if (!got)
    DRED_ERROR("no word from dred-master within %llu ms of joining (DRED_MASTER_TIMEOUT_MS)",
               (unsigned long long)timeout_ms);
  uv_timer_stop(&timer);
  uv_close((uv_handle_t *)&timer, join_close);
  uv_run(loop, UV_RUN_NOWAIT); /* the close callback: the timer lives on our stack */
  return rc;
}

int dred_boot_up(dred_boot_t *b, dred_net_t *net) {
  proto_msg_t m;
  if (!b->external) return DRED_OK;
  memset(&m, 0, sizeof m);
  m.type = PROTO_JOIN;
  m.u.join.stage = 1;
  m.u.join.node = b->node_of[b->rank];
  m.u.join.master_node = b->node_of[0];
  return dred_net_send(net, 0, &m, NULL);
}

void dred_boot_forget(const dred_boot_t *b, int rank) {
  char path[sizeof b->sock];
  if (rank == 0 && b->external && b->rank != 0) { /* a master beside the job: its own dir */
    const char *slash = strrchr(b->master_sock, '/');
    if (b->master_sock[0] == '\0' || slash == NULL || slash == b->master_sock) return;
    (void)unlink(b->master_sock);
    snprintf(path, sizeof path, "%.*s", (int)(slash - b->master_sock), b->master_sock);
    (void)rmdir(path); /* fails while anything else is in it: fine */
    return;
  }
  if (b->node_of == NULL || b->dir[0] == '\0' || rank < 0 || rank >= b->size || rank == b->rank ||
      b->node_of[rank] != b->node_of[b->rank])
    return;
  if (!sock_path(b, rank, path, sizeof path)) return;
  (void)unlink(path);
}

void dred_boot_finish(dred_boot_t *b) {
  dred_leave_clear(); /* removed here, or by the robust layer before */
  if (b->sock[0] != '\0') (void)unlink(b->sock);
  if (b->dir[0] != '\0') (void)rmdir(b->dir); /* fails until the last process left: fine */
  free(b->node_of);
  b->node_of = NULL;
}

void dred_boot_abandon(const dred_boot_t *b) {
  char path[sizeof b->sock];
  int r;
  if (b->dir[0] == '\0') return;
  dred_leave_clear();
  for (r = 0; r < b->size; r++)
    if (sock_path(b, r, path, sizeof path)) (void)unlink(path);
  if (b->watch[0] != '\0' && strncmp(b->watch, b->dir, strlen(b->dir)) == 0) (void)unlink(b->watch);
  (void)rmdir(b->dir);
}

void dred_boot_tell_launcher(void) {
  static const char up[] = "up\n";
  const char *s = dred_setting_raw(DRED_S_LAUNCH_FD);
  char *end;
  struct stat st;
  long fd;
  if (s == NULL || s[0] == '\0') return;
  errno = 0;
  fd = strtol(s, &end, 10);
  /* Only a pipe: a number left in the environment must not make us write into a file. */
  if (errno == 0 && *end == '\0' && fd > 2 && fd < 1 << 20 && fstat((int)fd, &st) == 0 &&
      S_ISFIFO(st.st_mode)) {
    (void)!write((int)fd, up, sizeof up - 1);
    close((int)fd);
  }
  unsetenv("DRED_LAUNCH_FD"); /* not the launcher of a program this one starts */
}

void dred_boot_teardown(dred_boot_t *b, MPI_Win *dwin, int finalize) {
  if (b->external && b->rank == 0) return; /* a master outside the job has no MPI */
  if (dwin != NULL && *dwin != MPI_WIN_NULL) MPI_Win_free(dwin);
  if (b->comm != MPI_COMM_NULL) MPI_Comm_free(&b->comm);
  if (b->priv != MPI_COMM_NULL) MPI_Comm_free(&b->priv);
  if (finalize) PMPI_Finalize();
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
  int rc = PMPI_Bcast(ji, (int)sizeof *ji, MPI_BYTE, 0, priv);
  ji->job_id[sizeof ji->job_id - 1] = '\0';
  ji->reason[sizeof ji->reason - 1] = '\0';
  return rc;
}

int dred_jobinit_agree(MPI_Comm priv, int mine, int *who) {
  int in[2], out[2];
  MPI_Comm_rank(priv, &in[1]);
  in[0] = mine;
  if (PMPI_Allreduce(in, out, 1, MPI_2INT, MPI_MAXLOC, priv) != MPI_SUCCESS) {
    *who = in[1];
    return DRED_ERR_INTERNAL;
  }
  *who = out[1];
  return out[0];
}
