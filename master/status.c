/*
 * status.c -- dred-master's live status socket (see status.h).
 *
 * How it works.  master_status_start() binds a libuv pipe server (uv_pipe_t) to
 * <storage_dir>/job-<id>/dred-master.sock in the master's own loop, so a connection is
 * accepted as soon as epoll reports it.  On each connection the master formats one text
 * snapshot, writes it and closes the connection: no request parsing, no per-client state
 * beyond the pending write, so a misbehaving client cannot hold anything up.  Per worker
 * it shows liveness, measured speed, the link, and the shared-memory pool as the worker's
 * last PONG reported it (bytes in use / size, peak, buffers that did not fit and went to
 * private memory -- the slow RMA path).
 *
 * Why a Unix socket with mode 0600: the snapshot tells who failed and how fast each worker
 * is; only the job's user should see it, and nothing should listen on the network.  The
 * socket is created under umask 077 (no window where another user could connect) and then
 * chmod-ed to 0600 explicitly.
 *
 * Stale sockets.  A master killed with SIGKILL leaves its socket file behind.  At start we
 * try to connect to an existing socket: refused means stale (unlinked); accepted means a
 * live master uses the same storage directory, and stealing its socket would be wrong, so
 * the status server is not started (logged).  A path that exists and is not a socket is
 * never removed.
 *
 * SIGPIPE.  A client may close before the snapshot is written (a second master probing the
 * socket, a killed dredstat); libuv writes with write(2), so that would raise SIGPIPE and
 * kill the master, i.e. the whole job.  master_status_start() therefore ignores SIGPIPE
 * (unless a handler is installed) and the failed write is just an EPIPE, logged.
 */
#include "status.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/leave.h"
#include "../common/log.h"
#include "../common/sockpath.h"
#include "../storage/storedir.h" /* DRED_STOREDIR_STATUS_SOCKET */

typedef struct status_client {
  uv_pipe_t pipe;
  uv_write_t wr;
  char *text;
  struct status_client *prev, *next; /* open connections, so stop can close them */
  struct master_status *st;          /* NULL once stop detached it                */
} status_client_t;

struct master_status {
  uv_pipe_t server;
  master_t *m;
  status_client_t *clients;
  uint64_t connections;
  char path[4096];
};

/* ---- the snapshot ------------------------------------------------------------------ */

typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
  va_list ap;
  int n;
  if (b->oom) return;
  for (;;) {
    size_t room = b->cap - b->len;
    va_start(ap, fmt);
    n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = 1;
      return;
    }
    if ((size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap - b->len <= (size_t)n) cap *= 2;
    char *q = realloc(b->p, cap);
    if (q == NULL) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
}

/* Everything is read on the loop thread, between two scheduler steps: a consistent view. */
static char *status_text(const master_t *m, size_t *len) {
  sbuf_t b = {0};
  uint64_t now = uv_hrtime();
  double up_s = (double)(now - m->t_start) / 1e9;
  int w, alive = 0;

  for (w = 1; w <= m->nworkers; w++)
    if (!master_worker_failed(m, w) && !m->bye[w]) alive++;
  sb_printf(&b, "dred-master status\n");
  sb_printf(&b, "pid: %ld\n", (long)getpid());
  sb_printf(&b, "uptime_s: %.3f\n", up_s);
  sb_printf(&b, "policy: %s\n", m->cfg.policy);
  sb_printf(&b, "journal: %s\n", m->journal ? m->cfg.journal : "(none)");
  sb_printf(&b, "workers: %d total, %d alive, %d failed, %d said bye\n", m->nworkers, alive,
            master_nfailed(m), m->nbye);
  sb_printf(&b, "reductions_in_flight: %zu\n", sched_instances(m->sched));
  sb_printf(&b, "tasks_in_flight: %zu\n", sched_tasks_in_flight(m->sched));
  {
    size_t longest = 0, queued = sched_queue_stats(m->sched, &longest);
    sb_printf(&b, "queued_messages: %zu (longest queue %zu)\n", queued, longest);
  }
  sb_printf(&b, "tasks_dispatched: %llu\n", (unsigned long long)m->tasks_sent);
  sb_printf(&b, "tasks_per_s: %.1f (since start)\n",
            up_s > 0 ? (double)m->tasks_sent / up_s : 0.0);
  sb_printf(&b, "messages: %llu in, %llu out, %zu writes pending\n",
            (unsigned long long)m->net.received, (unsigned long long)m->net.sent,
            m->net.writes);
  sb_printf(&b, "scheduler: %llu events, %llu actions, %llu stale READYs dropped\n",
            (unsigned long long)m->events, (unsigned long long)m->actions,
            (unsigned long long)sched_stale_readys(m->sched));
  sb_printf(&b, "shutting_down: %s\n", m->shutdown_sent ? "yes" : "no");
  sb_printf(&b, "%8s  %-6s  %13s  %10s  %4s  %15s  %8s  %9s  %9s\n", "worker", "state",
            "last_heard_ms", "speed_GB/s", "link", "pool_used_MiB", "peak_MiB", "fallbacks",
            "met_shm");
  for (w = 1; w <= m->nworkers; w++) {
    const char *state = master_worker_failed(m, w) ? "failed" : m->bye[w] ? "bye" : "alive";
    double speed = sched_worker_speed(m->sched, (uint32_t)w); /* bytes/ns == GB/s */
    char sp[32];
    if (speed > 0) snprintf(sp, sizeof sp, "%.3f", speed);
    else snprintf(sp, sizeof sp, "-");
    const proto_msg_t *pg = &m->pong[w]; /* "-" until the worker's first PONG */
    /* met_shm: reductions that met in the node's shared memory, never seen here */
    char used[40] = "-", peak[24] = "-", fb[24] = "-", met[24] = "-";
    if (pg->type == PROTO_PONG) {
      snprintf(used, sizeof used, "%.1f/%.0f", (double)pg->u.ping.pool_used / 1048576.0,
               (double)pg->u.ping.pool_size / 1048576.0);
      snprintf(peak, sizeof peak, "%.1f", (double)pg->u.ping.pool_peak / 1048576.0);
      snprintf(fb, sizeof fb, "%llu", (unsigned long long)pg->u.ping.pool_fallbacks);
      snprintf(met, sizeof met, "%llu", (unsigned long long)pg->u.ping.meet_done);
    }
    sb_printf(&b, "%8d  %-6s  %13.1f  %10s  %4s  %15s  %8s  %9s  %9s\n", w, state,
              (double)(now - m->last_heard[w]) / 1e6, sp,
              dred_net_connected(&m->net, w) ? "up" : "down", used, peak, fb, met);
  }
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *len = b.len;
  return b.p;
}

/* ---- connections --------------------------------------------------------------------- */

static void client_unlink(status_client_t *c) {
  if (c->st == NULL) return;
  if (c->prev) c->prev->next = c->next;
  else c->st->clients = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  c->st = NULL;
}

static void client_closed(uv_handle_t *h) {
  status_client_t *c = h->data;
  free(c->text);
  free(c);
}

static void client_close(status_client_t *c) {
  client_unlink(c);
  if (!uv_is_closing((uv_handle_t *)&c->pipe)) uv_close((uv_handle_t *)&c->pipe, client_closed);
}

static void client_written(uv_write_t *req, int status) {
  status_client_t *c = req->data;
  /* A client that left early (EPIPE, ECONNRESET) is its own business, not the master's. */
  if (status == UV_EPIPE || status == UV_ECONNRESET)
    DRED_INFO("status socket: a client left before its answer: %s", uv_strerror(status));
  else if (status != 0 && status != UV_ECANCELED)
    DRED_WARN("status socket: write to a client failed: %s", uv_strerror(status));
  client_close(c);
}

static void on_connection(uv_stream_t *server, int status) {
  struct master_status *st = server->data;
  status_client_t *c;
  uv_buf_t buf;
  size_t len = 0;
  int rc;

  if (status != 0) {
    DRED_WARN("status socket: accept failed: %s", uv_strerror(status));
    return;
  }
  c = calloc(1, sizeof *c);
  if (c == NULL) {
    DRED_WARN("status socket: no memory for a connection");
    return;
  }
  uv_pipe_init(server->loop, &c->pipe, 0);
  c->pipe.data = c;
  c->wr.data = c;
  c->st = st;
  c->next = st->clients;
  if (st->clients) st->clients->prev = c;
  st->clients = c;
  if ((rc = uv_accept(server, (uv_stream_t *)&c->pipe)) != 0) {
    DRED_WARN("status socket: accept failed: %s", uv_strerror(rc));
    client_close(c);
    return;
  }
  st->connections++;
  c->text = status_text(st->m, &len);
  if (c->text == NULL) {
    DRED_WARN("status socket: no memory for the status text");
    client_close(c);
    return;
  }
  buf = uv_buf_init(c->text, (unsigned)len);
  if ((rc = uv_write(&c->wr, (uv_stream_t *)&c->pipe, &buf, 1, client_written)) != 0) {
    DRED_WARN("status socket: write failed: %s", uv_strerror(rc));
    client_close(c);
  }
}

/* ---- start / stop --------------------------------------------------------------------- */

/* An existing socket at `path`: 1 if a live process accepts on it, 0 if stale, -1 on error. */
static int socket_is_live(const char *path) {
  struct sockaddr_un sa;
  dred_sockpath_t sp;
  int fd, rc, err;
  if (dred_sockpath_init(&sp, path) != 0) return -1;
  if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
    dred_sockpath_close(&sp);
    return -1;
  }
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, sp.addr, sizeof sp.addr);
  rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  err = errno;
  close(fd);
  dred_sockpath_close(&sp);
  if (rc == 0) return 1;
  return (err == ECONNREFUSED || err == ENOENT) ? 0 : -1;
}

static void server_closed(uv_handle_t *h) { free(h->data); }

int master_status_start(master_t *m) {
  struct master_status *st;
  struct stat sb;
  mode_t old_mask;
  int n, rc, bound;

  if (m == NULL || m->status != NULL) return DRED_ERR_ARG;
  {
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  }
  st = calloc(1, sizeof *st);
  if (st == NULL) {
    DRED_ERROR("status socket: out of memory");
    return DRED_ERR_NOMEM;
  }
  st->m = m;
  if (m->jobdir[0] == '\0') { /* refused at start (logged there) */
    free(st);
    return DRED_ERR_STORAGE;
  }
  n = snprintf(st->path, sizeof st->path, "%s/%s", m->jobdir, DRED_STOREDIR_STATUS_SOCKET);
  if (n < 0 || (size_t)n >= sizeof st->path) {
    DRED_ERROR("status socket: path %s/%s is too long; running without dredstat status",
               m->jobdir, DRED_STOREDIR_STATUS_SOCKET);
    free(st);
    return DRED_ERR_ARG;
  }
  /* The job directory exists and is private: main.c made it (storage/storedir.h). */
  if (lstat(st->path, &sb) == 0) {
    if (!S_ISSOCK(sb.st_mode)) {
      DRED_ERROR("status socket: %s exists and is not a socket: left alone, running without "
                 "dredstat status", st->path);
      free(st);
      return DRED_ERR_STORAGE;
    }
    rc = socket_is_live(st->path);
    if (rc != 0) {
      DRED_ERROR("status socket: %s %s: running without dredstat status (give this job its "
                 "own DRED_STORAGE_DIR)", st->path,
                 rc > 0 ? "is in use by another live dred-master" : "cannot be checked");
      free(st);
      return DRED_ERR_STORAGE;
    }
    if (unlink(st->path) != 0 && errno != ENOENT) {
      DRED_ERROR("status socket: cannot remove stale %s: %s", st->path, strerror(errno));
      free(st);
      return DRED_ERR_STORAGE;
    }
    DRED_INFO("status socket: removed a stale %s", st->path);
  }

  uv_pipe_init(&m->loop, &st->server, 0);
  st->server.data = st;
  old_mask = umask(077); /* the socket never exists with a wider mode */
  {
    dred_sockpath_t sp; /* a deep DRED_STORAGE_DIR: bound through the directory */
    if (dred_sockpath_init(&sp, st->path) != 0) {
      rc = uv_translate_sys_error(errno);
    } else {
      rc = uv_pipe_bind(&st->server, sp.addr);
      dred_sockpath_close(&sp);
    }
  }
  umask(old_mask);
  bound = rc == 0; /* only then is the file ours to remove */
  if (rc == 0 && chmod(st->path, 0600) != 0) rc = uv_translate_sys_error(errno);
  if (rc == 0) rc = uv_listen((uv_stream_t *)&st->server, 16, on_connection);
  if (rc != 0) {
    DRED_ERROR("status socket: cannot listen on %s: %s; running without dredstat status",
               st->path, uv_strerror(rc));
    if (bound) unlink(st->path);
    uv_close((uv_handle_t *)&st->server, server_closed); /* frees st on the next uv_run */
    return DRED_ERR_STORAGE;
  }
  m->status = st;
  dred_leave_add(st->path, 0); /* removed by a signal that ends the master too (leave.h) */
  DRED_INFO("status socket: %s", st->path);
  return DRED_OK;
}

void master_status_stop(master_t *m) {
  struct master_status *st;
  if (m == NULL || (st = m->status) == NULL) return;
  while (st->clients) client_close(st->clients);
  unlink(st->path);
  DRED_INFO("status socket: closed after %llu connection(s)", (unsigned long long)st->connections);
  uv_close((uv_handle_t *)&st->server, server_closed);
  m->status = NULL;
}
