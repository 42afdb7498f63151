/*
 * beside.c -- dred-master started beside the MPI job instead of as its rank 0
 * (`dredrun --external-master`; common/mpi/boot.h says how the two sides meet).
 *
 * Such a master makes no MPI call.  It listens (Unix socket; TCP too when the job may
 * span nodes), publishes where it listens and the job's token in a file the launcher
 * reads (written whole, then renamed, so a reader never sees half of it; 0600 in the
 * master's private directory), and waits, bounded, for every worker's JOIN: the worker's
 * node and the node the workers place the master on.  Then every worker gets a WELCOME
 * -- the verdict on the master's settings, the job id and the heartbeat interval, what
 * the MPMD start-up broadcasts over MPI -- and main.c's loop takes over.  A worker is
 * pinged and judged by the failure detector only once its JOIN stage 1 says it is set
 * up (dispatch.c); one that never says so is declared failed after the start bound
 * (detector.c), as one whose link closes is at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/status.h"
#include "../storage/storedir.h"
#include "master.h"

/* The address file: the variables a worker reads (common/mpi/boot.h), one KEY=VALUE a
 * line: DRED_MASTER_HOST=this host's name, DRED_MASTER_ADDR=unix:PATH,
 * DRED_MASTER_TCP=tcp:HOST:PORT (only when listening on TCP), DRED_JOB_TOKEN=HEX.  The
 * launcher exports them to the job (it may name the host otherwise: simulated nodes);
 * `dredrun --addr-env FILE CMD...` is the reader for a master started by hand, and takes
 * exactly these keys.
 *
 * The file holds the job's token and says where the workers go, so whoever can replace it
 * owns the job.  Its directory must therefore be one nobody else can write to
 * (storage/storedir.h: dred_storedir_owned), and the file is made under a fresh name there
 * with mode 0600, written whole and renamed over `path`: a reader never sees half of it. */
static int write_addr_file(const char *path, const char *uaddr, const char *taddr,
                           const uint8_t token[DRED_NET_TOKEN_BYTES]) {
  char tmp[1100], dir[1100];
  const char *slash = strrchr(path, '/');
  FILE *f;
  int fd, i, ok;
  if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
    DRED_ERROR("--addr-file %s: path too long", path);
    return DRED_ERR_ARG;
  }
  if (slash == NULL) snprintf(dir, sizeof dir, ".");
  else if (slash == path) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  if (slash != NULL && slash[1] == '\0') {
    DRED_ERROR("--addr-file %s: names a directory, not a file", path);
    return DRED_ERR_ARG;
  }
  if (dred_storedir_owned("--addr-file directory", dir) != DRED_OK) {
    DRED_ERROR("--addr-file %s: refused: the file holds the job's token and where its workers "
               "connect, so it must be in a directory only you can write to", path);
    return DRED_ERR_ARG;
  }
  if ((fd = mkstemp(tmp)) < 0 || fchmod(fd, 0600) != 0 || (f = fdopen(fd, "w")) == NULL) {
    DRED_ERROR("--addr-file %s: cannot create %s: %s", path, tmp, strerror(errno));
    if (fd >= 0) {
      close(fd);
      (void)unlink(tmp);
    }
    return DRED_ERR_ARG;
  }
  {
    char host[256];
    size_t hlen = sizeof host;
    if (uv_os_gethostname(host, &hlen) == 0) fprintf(f, "DRED_MASTER_HOST=%s\n", host);
  }
  fprintf(f, "DRED_MASTER_ADDR=%s\n", uaddr);
  if (taddr[0] != '\0') fprintf(f, "DRED_MASTER_TCP=%s\n", taddr);
  fprintf(f, "DRED_JOB_TOKEN=");
  for (i = 0; i < DRED_NET_TOKEN_BYTES; i++) fprintf(f, "%02x", token[i]);
  fprintf(f, "\n");
  ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    DRED_ERROR("--addr-file %s: cannot write it: %s", path, strerror(errno));
    (void)unlink(tmp);
    return DRED_ERR_ARG;
  }
  return DRED_OK;
}

static void start_timeout(uv_timer_t *t) { *(int *)t->data = 1; }
static void close_noop(uv_handle_t *h) { (void)h; }

/* Every worker's JOIN, or why not (logged).  Messages of other kinds cannot come yet:
 * a worker sends nothing else before its WELCOME. */
static int wait_joins(master_t *m, uint64_t timeout_ms) {
  uint8_t *joined = calloc((size_t)m->nworkers + 1, 1);
  uv_timer_t timer;
  proto_msg_t msg;
  int expired = 0, njoined = 0, src, r, rc = DRED_OK, have_mnode = 0;
  uint32_t mnode = 0;

  if (joined == NULL) return DRED_ERR_NOMEM;
  uv_timer_init(&m->loop, &timer);
  timer.data = &expired;
  uv_timer_start(&timer, start_timeout, timeout_ms, 0);
  while (rc == DRED_OK && njoined < m->nworkers && !expired) {
    uv_run(&m->loop, UV_RUN_ONCE);
    while (rc == DRED_OK && (r = dred_net_recv(&m->net, &src, &msg)) != 0) {
      if (src < 1 || src > m->nworkers || r == DRED_NET_NOFD) continue;
      if (r == DRED_NET_LOST && m->net.nofd > 0) {
        DRED_ERROR("worker %d's link closed before the job started, and this master has run out "
                   "of file descriptors (limit %d): raise `ulimit -n` for dred-master", src,
                   m->net.fd_limit);
        rc = DRED_ERR_INTERNAL;
      } else if (r == DRED_NET_LOST) {
        DRED_ERROR("worker %d left before the job started (its log says why)", src);
        rc = DRED_ERR_PROC_FAILED;
      } else if (msg.type != PROTO_JOIN || msg.u.join.stage != 0 || joined[src]) {
        DRED_WARN("worker %d sent %s before the job started: ignored", src,
                  proto_type_name(msg.type));
      } else if (msg.u.join.node < 1 || msg.u.join.node > (uint32_t)m->nworkers ||
                 (have_mnode && msg.u.join.master_node != mnode)) {
        DRED_ERROR("worker %d joined with node %u, master's node %u: not this job's node table",
                   src, msg.u.join.node, msg.u.join.master_node);
        rc = DRED_ERR_INTERNAL;
      } else {
        joined[src] = 1;
        njoined++;
        m->boot.node_of[src] = msg.u.join.node;
        mnode = msg.u.join.master_node;
        have_mnode = 1;
      }
    }
  }
  if (rc == DRED_OK && njoined < m->nworkers) {
    DRED_ERROR("%d of %d workers joined within %llu ms (--start-timeout-s): the job did not "
               "start%s", njoined, m->nworkers, (unsigned long long)timeout_ms,
               m->net.nofd > 0 ? "; this master ran out of file descriptors on the way (see "
                                 "above): raise `ulimit -n` for dred-master" : "");
    rc = DRED_ERR_TIMEOUT;
  }
  if (rc == DRED_OK) {
    int w;
    m->boot.node_of[0] = mnode; /* 0: no worker shares the master's host */
    m->boot.nnodes = mnode == 0;
    for (w = 1; w <= m->nworkers; w++) m->boot.nnodes += m->boot.node_of[w] == (uint32_t)w;
    m->boot.multinode = m->boot.nnodes > 1;
  }
  uv_timer_stop(&timer);
  uv_close((uv_handle_t *)&timer, close_noop);
  uv_run(&m->loop, UV_RUN_NOWAIT);
  free(joined);
  return rc;
}

int master_beside_start(master_t *m, const char *addr_file, const char *tcp_host,
                        uint64_t start_timeout_ms, const dred_jobinit_t *ji) {
  char uaddr[DRED_NET_ADDR_MAX] = "", taddr[DRED_NET_ADDR_MAX] = "";
  uint8_t token[DRED_NET_TOKEN_BYTES];
  proto_msg_t msg;
  int rc, w;

  rc = dred_boot_standalone(&m->boot, m->nworkers, &m->net, &m->loop, tcp_host, uaddr, taddr, token);
  if (rc != DRED_OK) return rc;
  m->watch_path[0] = '\0';
  if (ji->status == DRED_OK) master_watch_create(m); /* mapped by workers after WELCOME */
  rc = write_addr_file(addr_file, uaddr, taddr, token);
  memset(token, 0, sizeof token);
  if (rc != DRED_OK) return rc;
  DRED_INFO("dred-master outside the job: waiting for %d workers at %s%s%s", m->nworkers, uaddr,
            taddr[0] ? " and " : "", taddr);
  if ((rc = wait_joins(m, start_timeout_ms)) != DRED_OK) return rc;
  memset(&msg, 0, sizeof msg);
  msg.type = PROTO_WELCOME;
  msg.u.welcome.status = ji->status;
  msg.u.welcome.heartbeat_ms = ji->heartbeat_ms;
  msg.u.welcome.job_id = ji->job_id;
  msg.u.welcome.reason = ji->reason;
  for (w = 1; w <= m->nworkers; w++)
    if (dred_net_send(&m->net, w, &msg, NULL) != DRED_OK) {
      DRED_ERROR("cannot welcome worker %d: the job did not start", w);
      return DRED_ERR_INTERNAL;
    }
  m->t_welcome = uv_hrtime();
  return DRED_OK;
}

void master_beside_up(master_t *m, int w, const proto_msg_t *msg) {
  if (msg->u.join.stage != 1 || m->up[w]) {
    DRED_WARN("worker %d sent JOIN stage %u again: ignored", w, msg->u.join.stage);
    return;
  }
  m->up[w] = 1;
  m->last_heard[w] = uv_hrtime();
  if (++m->nup == m->nworkers) {
    /* Every worker on this node has mapped the death watch by now (dred_init does it
     * before it says it is up): its file is no longer needed. */
    if (m->watch_path[0] != '\0') (void)unlink(m->watch_path);
    DRED_INFO("all %d workers are up, %.0f ms after the welcome", m->nworkers,
              (double)(uv_hrtime() - m->t_welcome) / 1e6);
  }
}
