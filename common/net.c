/*
 * net.c -- control links over libuv streams (see net.h for what and why).
 *
 * A link is one stream (a Unix domain socket or TCP) plus the bytes read from it and not
 * yet parsed.  An accepted link starts in `pending` and is admitted (indexed by rank in
 * `in`) only by a HELLO frame carrying the job's token; a link we open is indexed in
 * `out` at once and sends HELLO as its first write (libuv queues writes behind the
 * connect).
 *
 * Reading: libuv hands us bytes into the link's buffer (alloc_cb grows it, never past one
 * maximal frame); parse() then takes HELLO or whole frames off its front.  The 8-byte
 * header is checked before the payload is awaited, so an announced length above
 * PROTO_MAX_SIZE closes the link without a byte of it being stored.
 *
 * Bulk: a REPLICA header whose copy is not in shared memory (pool_off -1) is followed on
 * the same stream by its u.replica.len raw bytes (dred_net_send_bulk).  The reader reads
 * them straight into a buffer of their own and queues the message only when the last
 * byte is in, so the owner sees a whole copy or, if the peer dies first, only its LOST.
 * Replica bytes thus travel like every other byte of the control plane: in libuv's epoll
 * loop, never inside an MPI call (MPICH serialises those behind one lock, and UCX's TCP
 * transport can abort a survivor whose peer dies mid-transfer).
 *
 * Writing from another thread (dred_net_send_now): everything libuv does with a link runs
 * on the loop's thread, except that an application thread may write one small frame
 * straight into the link's socket -- the runtime thread then need not be woken only to
 * forward it.  That is safe only while libuv has nothing of ours to write on that link
 * (otherwise the frame would overtake queued bytes or cut into them), so every write the
 * loop queues is counted per link (`queued`, dropped in write_cb) under `wlock`, and the
 * direct write happens under `wlock` only when the count is 0.  The kernel takes a frame
 * whole, or none of it, or (a stream socket nearly full) the first part: the rest then
 * becomes the link's `tail`, which the loop writes (woken by `flush`) before anything
 * else it writes there.  Links are opened and closed under `wlock` too, so the direct
 * writer never sees a closed descriptor.
 *
 * Waiting for HELLO: an accepted link sits in `pending` (oldest first) with the loop time it
 * came in.  One unreferenced timer, armed while anything waits, closes those past their
 * deadline.  on_connection closes the oldest waiting link when there are more than the cap
 * (never below twice the job's ranks, so the job's own links, which may all arrive in one
 * burst before any is read, never push each other out), and, once the new link's
 * descriptor number says the reserve is being eaten into, the oldest one that came in on an
 * earlier turn of the loop.  The number tells because the kernel hands out the lowest free
 * descriptor: all below it are taken, so at most limit - fd - 1 are free.
 *
 * Closing: a link that reads EOF or an error is closed; if it was admitted, an inbox entry
 * tells the owner which peer is gone, behind what the peer sent before -- that is how the
 * master sees a killed worker within milliseconds, and a worker its master.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "bigbuf.h"
#include "config.h"
#include "../include/dred_status.h"
#include "log.h"
#include "net.h"

#define HELLO_MAGIC 0x4c485244u /* "DRHL" little-endian */
#define HELLO_BYTES (8u + DRED_NET_TOKEN_BYTES)
#define READ_CHUNK 65536u

struct dred_net_link {
  dred_queue_t qlink; /* n->pending while not admitted */
  dred_net_t *net;
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tcp_t tcp;
  } h;
  uv_connect_t conn;
  int peer;     /* rank once admitted (or for an outgoing link), else -1 */
  uint64_t accepted_ms; /* loop time it was accepted (waiting for HELLO) */
  int admitted;
  int outgoing; /* we opened it: n->out[peer], else n->in[peer] */
  int closing;
  uint8_t *rbuf;
  size_t rlen, rcap;
  struct inbox_entry *bulk; /* a message whose payload is still being read, or NULL */
  size_t bulk_got;          /* payload bytes in so far */
  size_t queued;            /* writes handed to libuv, write_cb not yet run (wlock) */
  struct wreq *tail;        /* the rest of a frame a direct write began (wlock), or NULL */
  int draining;             /* an incoming link of a peer declared failed, read until its
                             * end closes or drain_until_ms (dred_net_drop_draining) */
  uint64_t drain_until_ms;
};

typedef struct inbox_entry {
  dred_queue_t link; /* n->inbox */
  int src;
  int lost;          /* not a message: LINK_LOST (the link to src closed) or LINK_NOFD */
  proto_msg_t msg;
  uint8_t *payload;  /* bulk bytes that followed the message (NULL: none, or discarded) */
  size_t payload_len;
  size_t len;
  uint8_t bytes[];
} inbox_entry_t;

/* Why a link closes, for link_close: nothing to report, the peer's link is gone, or this
 * process could not set it up for want of descriptors. */
#define LINK_QUIET 0
#define LINK_LOST 1
#define LINK_NOFD 2

/* Descriptors kept free for the job's own links, beyond one per rank. */
#define FD_RESERVE_EXTRA 16

typedef struct wreq {
  uv_write_t req;
  dred_net_link_t *link;
  uv_buf_t buf[2];
  dred_net_sent_cb cb; /* bulk sends: told when the payload is no longer needed */
  void *arg;
  uint8_t data[];
} wreq_t;

/* How many raw bytes follow message m on the stream (see "Bulk" above). */
static size_t bulk_len(const proto_msg_t *m) {
  return m->type == PROTO_REPLICA && m->u.replica.pool_off == -1 ? (size_t)m->u.replica.len : 0;
}

static void entry_free(inbox_entry_t *e) {
  if (e == NULL) return;
  dred_bigbuf_free(e->payload, e->payload_len);
  free(e);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* Token comparison in constant time: how much of a guess was right must not leak. */
static int token_equal(const uint8_t *a, const uint8_t *b) {
  uint8_t d = 0;
  unsigned i;
  for (i = 0; i < DRED_NET_TOKEN_BYTES; i++) d |= (uint8_t)(a[i] ^ b[i]);
  return d == 0;
}

static void link_free_cb(uv_handle_t *h) {
  dred_net_link_t *l = h->data;
  entry_free(l->bulk); /* a copy cut short is never delivered */
  free(l->tail);       /* a frame cut short: the peer is gone anyway */
  free(l->rbuf);
  free(l);
}

/* Close a link; `lost` (LINK_LOST, LINK_NOFD) reports an admitted peer to the owner (in
 * order, via the inbox). */
static void link_close(dred_net_link_t *l, int lost) {
  dred_net_t *n = l->net;
  int peer = l->peer;
  inbox_entry_t *e;
  if (l->closing) return;
  if (l->draining) { /* its peer was declared failed: nothing more to report */
    lost = LINK_QUIET;
    n->drained++;
    n->ndraining--;
  }
  uv_mutex_lock(&n->wlock); /* a direct writer must not write to a descriptor being closed */
  l->closing = 1;
  if (!l->admitted) {
    dred_queue_remove(&l->qlink);
    n->npending--;
  }
  if (l->admitted && peer >= 0) {
    dred_net_link_t **slot = l->outgoing ? &n->out[peer] : &n->in[peer];
    if (*slot == l) *slot = NULL;
  }
  uv_close(&l->h.handle, link_free_cb);
  uv_mutex_unlock(&n->wlock);
  /* A peer whose link broke is never dialled again: its process is gone (or said goodbye),
   * and a reconnect to a dead master's address only produces "connection refused". */
  if (lost == LINK_LOST && l->admitted && peer >= 0) n->book[peer][0] = '\0';
  if (lost && l->admitted && peer >= 0 && (e = calloc(1, sizeof *e)) != NULL) {
    e->src = peer;
    e->lost = lost;
    dred_queue_insert_tail(&n->inbox, &e->link);
  }
}

static dred_net_link_t *link_new(dred_net_t *n, int tcp) {
  dred_net_link_t *l = calloc(1, sizeof *l);
  int rc;
  if (l == NULL) return NULL;
  l->net = n;
  l->peer = -1;
  rc = tcp ? uv_tcp_init(n->loop, &l->h.tcp) : uv_pipe_init(n->loop, &l->h.pipe, 0);
  if (rc != 0) {
    free(l);
    return NULL;
  }
  l->h.handle.data = l;
  return l;
}

/* Room in the kernel for most of an operand copy in flight.  With the default (208 KiB
 * on Linux) an 8 MiB copy crosses in ~40 rounds of sender writes and receiver reads, each
 * needing both loops to get a core, and dred_ireduce waits for that copy in a group
 * spanning nodes (lib/paths/offnode.c).  On a loaded machine it hardly shortens that wait
 * (the receiver's loop getting a core dominates; docs/performance.md, figures behind
 * defaults), but it costs nothing: the kernel caps the value at net.core.wmem_max /
 * rmem_max and charges only bytes in flight; failure only costs speed. */
#define LINK_SOCKBUF (4 << 20)

static void link_grow_buffers(dred_net_link_t *l) {
  int v = LINK_SOCKBUF;
  (void)uv_send_buffer_size(&l->h.handle, &v);
  v = LINK_SOCKBUF;
  (void)uv_recv_buffer_size(&l->h.handle, &v);
}

static void write_cb(uv_write_t *req, int status) {
  wreq_t *w = (wreq_t *)req;
  dred_net_t *n = req->data;
  /* A failed write shows up as EOF/reset on the read side too; a bulk sender is told. */
  n->writes--;
  uv_mutex_lock(&n->wlock);
  w->link->queued--;
  uv_mutex_unlock(&n->wlock);
  if (w->cb != NULL) w->cb(w->arg, status == 0 ? DRED_OK : DRED_ERR_PROC_FAILED);
  free(req);
}

/* Hand a prepared request to libuv (loop thread, wlock held).  Consumes w.  `bufs` may be
 * w->buf or a caller's array: uv_write copies the array (not the bytes). */
static int link_submit(dred_net_link_t *l, wreq_t *w, const uv_buf_t *bufs, unsigned nbufs) {
  int rc;
  w->req.data = l->net;
  w->link = l;
  l->net->writes++;
  l->queued++;
  if ((rc = uv_write(&w->req, &l->h.stream, bufs, nbufs, write_cb)) != 0) {
    l->net->writes--;
    l->queued--;
    free(w);
    DRED_ERROR("control link to rank %d: write failed: %s", l->peer, uv_strerror(rc));
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

/* A direct write's unwritten rest goes first (loop thread, wlock held). */
static int link_flush_tail(dred_net_link_t *l) {
  wreq_t *t = l->tail;
  if (t == NULL) return DRED_OK;
  l->tail = NULL;
  return link_submit(l, t, t->buf, 1);
}

/* Queue `len` bytes (copied) and, for a bulk send, `plen` payload bytes (not copied: they
 * must stay valid until cb).  The payload goes as one write request per piece of at most
 * n->bulk_piece bytes, all queued here at once, so nothing can come between its pieces on
 * the stream; cb rides on the last request, so it runs once, when the last byte is written
 * (or when the link fails: libuv then ends every queued request with an error).  One
 * request per piece is what bounds a turn of the loop: libuv's uv__write finishes at most
 * 32 requests per pass, but writes a request's buffers with one writev, and a writev into
 * a socket its reader keeps draining runs until the whole request is in. */
static int link_write(dred_net_link_t *l, const uint8_t *bytes, size_t len, const void *payload,
                      size_t plen, dred_net_sent_cb cb, void *arg) {
  size_t piece = l->net->bulk_piece > 0 ? l->net->bulk_piece : 1, nreq, i, sent = 0;
  wreq_t **w;
  int rc = DRED_OK;
  /* request 0: the frame and the first piece; request i > 0: piece i */
  nreq = plen / piece + (plen % piece != 0);
  if (nreq == 0) nreq = 1;
  if (nreq >= UINT32_MAX) return DRED_ERR_ARG;
  if ((w = calloc(nreq, sizeof *w)) == NULL) return DRED_ERR_NOMEM;
  for (i = 0; i < nreq && rc == DRED_OK; i++)
    if ((w[i] = malloc(sizeof **w + (i == 0 ? len : 0))) == NULL) rc = DRED_ERR_NOMEM;
  if (rc != DRED_OK) {
    for (i = 0; i < nreq; i++) free(w[i]);
    free(w);
    return rc;
  }
  memcpy(w[0]->data, bytes, len);
  w[0]->buf[0] = uv_buf_init((char *)w[0]->data, (unsigned)len);
  for (i = 0; i < nreq; i++) {
    size_t off = i * piece, n = plen - off < piece ? plen - off : piece;
    if (plen > 0) w[i]->buf[i == 0] = uv_buf_init((char *)payload + off, (unsigned)n);
    w[i]->cb = i == nreq - 1 ? cb : NULL;
    w[i]->arg = arg;
  }
  uv_mutex_lock(&l->net->wlock);
  rc = link_flush_tail(l);
  for (i = 0; i < nreq; i++) {
    if (rc != DRED_OK) {
      free(w[i]);
      continue;
    }
    /* (link_submit frees a request it cannot queue) */
    if ((rc = link_submit(l, w[i], w[i]->buf, i == 0 && plen > 0 ? 2 : 1)) == DRED_OK) sent++;
  }
  uv_mutex_unlock(&l->net->wlock);
  free(w);
  /* A frame cut short would leave the stream out of step: the link goes instead (its
   * peer sees it lost; the queued pieces end cancelled, and cb is not called). */
  if (rc != DRED_OK && sent > 0) link_close(l, LINK_LOST);
  return rc;
}

/* Woken by a direct write that left a tail: write it (it may be alone on its link). */
static void flush_cb(uv_async_t *a) {
  dred_net_t *n = a->data;
  int i;
  if (n->out == NULL) return;
  uv_mutex_lock(&n->wlock);
  for (i = 0; i < n->nranks; i++) {
    if (n->out[i] != NULL) (void)link_flush_tail(n->out[i]);
    if (n->in[i] != NULL) (void)link_flush_tail(n->in[i]);
  }
  uv_mutex_unlock(&n->wlock);
}

/* ---- reading ------------------------------------------------------------------------- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  dred_net_link_t *l = h->data;
  size_t want = l->rlen + READ_CHUNK, cap_max = PROTO_MAX_SIZE + READ_CHUNK;
  (void)suggested;
  if (l->bulk != NULL && l->bulk->payload != NULL) { /* straight into the copy's buffer */
    /* A piece at a time: a read from a socket its writer keeps filling goes on until the
     * buffer is full, so one read of a whole 2 GiB copy held the loop (its heartbeats
     * too) for seconds.  libuv's uv__read reads at most 32 times per pass. */
    size_t rest = l->bulk->payload_len - l->bulk_got, piece = l->net->bulk_piece;
    buf->base = (char *)l->bulk->payload + l->bulk_got;
    buf->len = piece > 0 && rest > piece ? piece : rest;
    return;
  }
  if (want > cap_max) want = cap_max;
  if (l->rcap < want) {
    uint8_t *nb = realloc(l->rbuf, want);
    if (nb != NULL) {
      l->rbuf = nb;
      l->rcap = want;
    }
  }
  if (l->rbuf == NULL || l->rcap <= l->rlen) {
    buf->base = NULL; /* libuv reports UV_ENOBUFS: the link is closed */
    buf->len = 0;
    return;
  }
  buf->base = (char *)l->rbuf + l->rlen;
  buf->len = l->rcap - l->rlen;
}

/* Admit a listener's link by its HELLO.  Returns 0, or -1 (refused, logged). */
static int admit(dred_net_link_t *l, const uint8_t *p) {
  dred_net_t *n = l->net;
  uint32_t rank = le32(p + 4);
  /* Anyone who can reach the port can make these: logged at powers of 2 only. */
  if (le32(p) != HELLO_MAGIC || !token_equal(p + 8, n->token)) {
    if (dred_log_due(++n->refused))
      DRED_ERROR("control link refused: not a HELLO with this job's token (%llu link(s) "
                 "refused so far; logged at powers of 2)", (unsigned long long)n->refused);
    return -1;
  }
  if (rank >= (uint32_t)n->nranks || (int)rank == n->self || n->in[rank] != NULL) {
    if (dred_log_due(++n->refused))
      DRED_ERROR("control link refused: rank %u is out of range or already connected (%llu "
                 "link(s) refused so far; logged at powers of 2)", rank,
                 (unsigned long long)n->refused);
    return -1;
  }
  dred_queue_remove(&l->qlink);
  n->npending--;
  l->peer = (int)rank;
  l->admitted = 1;
  uv_mutex_lock(&n->wlock);
  n->in[rank] = l;
  uv_mutex_unlock(&n->wlock);
  return 0;
}

/* Take HELLO or whole frames off the front of the buffer.  Returns -1 if the link must
 * close (a refused HELLO, a header that is not dred's or announces an oversize frame). */
static int parse(dred_net_link_t *l) {
  dred_net_t *n = l->net;
  size_t off = 0;
  int rc = 0;
  while (rc == 0) {
    const uint8_t *p = l->rbuf + off;
    size_t avail = l->rlen - off, frame;
    inbox_entry_t *e;
    if (!l->admitted) {
      if (avail < HELLO_BYTES) break;
      if (admit(l, p) != 0) {
        rc = -1;
        break;
      }
      off += HELLO_BYTES;
      continue;
    }
    if (avail < PROTO_HEADER) break;
    if ((p[0] | p[1] << 8) != PROTO_MAGIC || p[2] != PROTO_VERSION) {
      DRED_ERROR("control link from rank %d: a frame that is not dred protocol v%u: closed",
                 l->peer, PROTO_VERSION);
      rc = -1;
      break;
    }
    frame = PROTO_HEADER + (size_t)le32(p + 4);
    if (frame > PROTO_MAX_SIZE) {
      DRED_ERROR("control link from rank %d: a frame of %zu bytes announced (the protocol's "
                 "maximum is %u): closed without reading it",
                 l->peer, frame, (unsigned)PROTO_MAX_SIZE);
      rc = -1;
      break;
    }
    if (avail < frame) break;
    off += frame;
    if ((e = malloc(sizeof *e + frame)) == NULL) {
      DRED_ERROR("control link from rank %d: no memory for a %zu-byte message: dropped",
                 l->peer, frame);
      continue;
    }
    memcpy(e->bytes, p, frame);
    e->len = frame;
    e->src = l->peer;
    if (proto_decode(e->bytes, frame, &e->msg) != 0) {
      DRED_ERROR("control link from rank %d: malformed %u-byte message dropped", l->peer,
                 (unsigned)frame);
      free(e);
      continue;
    }
    e->lost = 0;
    e->payload = NULL;
    e->payload_len = bulk_len(&e->msg);
    if (e->payload_len > 0) {
      size_t take;
      if (e->payload_len > DRED_NET_BULK_MAX) {
        DRED_ERROR("control link from rank %d: %zu bytes announced after a REPLICA header: "
                   "closed without reading them", l->peer, e->payload_len);
        free(e);
        rc = -1;
        break;
      }
      /* Without memory the bytes are still read (and dropped): the stream stays in step
       * and the owner sees the header with no payload. */
      e->payload = dred_bigbuf_alloc(e->payload_len); /* filled once: see bigbuf.h */
      take = avail - frame < e->payload_len ? avail - frame : e->payload_len;
      if (e->payload != NULL) memcpy(e->payload, p + frame, take);
      off += take;
      if (take < e->payload_len) { /* the rest is read by alloc_cb/read_cb */
        l->bulk = e;
        l->bulk_got = take;
        break;
      }
    }
    n->received++;
    dred_queue_insert_tail(&n->inbox, &e->link);
  }
  if (off > 0 && off < l->rlen) memmove(l->rbuf, l->rbuf + off, l->rlen - off);
  l->rlen -= off < l->rlen ? off : l->rlen;
  return rc;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  dred_net_link_t *l = s->data;
  (void)buf;
  if (nread < 0) {
    if (nread != UV_EOF)
      DRED_DEBUG("control link to rank %d: %s", l->peer, uv_strerror((int)nread));
    link_close(l, LINK_LOST);
    return;
  }
  if (l->bulk != NULL) {
    inbox_entry_t *e = l->bulk;
    if (e->payload != NULL) { /* read in place */
      l->bulk_got += (size_t)nread;
    } else { /* being dropped: these bytes landed in rbuf at rlen */
      size_t need = e->payload_len - l->bulk_got, n = (size_t)nread < need ? (size_t)nread : need;
      l->bulk_got += n;
      if (n < (size_t)nread) memmove(l->rbuf + l->rlen, l->rbuf + l->rlen + n, (size_t)nread - n);
      nread -= (ssize_t)n;
    }
    if (l->bulk_got < e->payload_len) return;
    l->bulk = NULL;
    l->net->received++;
    dred_queue_insert_tail(&l->net->inbox, &e->link);
    if (e->payload != NULL) return; /* the buffer held exactly the rest of the payload */
  }
  l->rlen += (size_t)nread;
  if (parse(l) != 0) link_close(l, LINK_LOST);
}

/* ---- listening and connecting -------------------------------------------------------- */

static int is_nofd(int err) { return err == UV_EMFILE || err == UV_ENFILE; }

/* This process could not open or accept a link for want of descriptors: say so plainly,
 * at powers of 2 (a shortage repeats at every attempt). */
static void log_nofd(dred_net_t *n, const char *what, int peer, int err) {
  if (!dred_log_due(++n->nofd)) return;
  if (peer >= 0)
    DRED_ERROR("cannot %s a control link to rank %d: %s: this process is out of file "
               "descriptors (limit %d; raise `ulimit -n`); rank %d is not known to have "
               "failed (%llu shortage(s) so far; logged at powers of 2)",
               what, peer, uv_strerror(err), n->fd_limit, peer, (unsigned long long)n->nofd);
  else
    DRED_ERROR("cannot %s a control link: %s: this process is out of file descriptors "
               "(limit %d; raise `ulimit -n`); the connection was closed unread, and if it "
               "was one of the job's the job cannot go on (%llu shortage(s) so far; logged at "
               "powers of 2)", what, uv_strerror(err), n->fd_limit, (unsigned long long)n->nofd);
}

/* Close waiting link `l` (why: for the log), counting it. */
static void pending_evict(dred_net_link_t *l, const char *why) {
  dred_net_t *n = l->net;
  if (dred_log_due(++n->evicted))
    DRED_WARN("control link closed before HELLO: %s (%llu closed so far; logged at powers of "
              "2)", why, (unsigned long long)n->evicted);
  link_close(l, LINK_QUIET);
}

static void hello_timer_cb(uv_timer_t *t) {
  dred_net_t *n = t->data;
  uint64_t now = uv_now(n->loop);
  dred_queue_t *q;
  while ((q = dred_queue_head(&n->pending)) != NULL) {
    dred_net_link_t *l = DRED_QUEUE_DATA(q, dred_net_link_t, qlink);
    if (l->accepted_ms + n->hello_timeout_ms > now) {
      uv_timer_start(&n->hello_timer, hello_timer_cb, l->accepted_ms + n->hello_timeout_ms - now, 0);
      return;
    }
    pending_evict(l, "no HELLO within DRED_HELLO_TIMEOUT_MS");
  }
}

static void on_connection(uv_stream_t *srv, int status) {
  dred_net_t *n = srv->data;
  dred_net_link_t *l;
  dred_queue_t *q;
  size_t cap;
  int tcp = srv == (uv_stream_t *)&n->tcp_srv, fd = -1;
  if (status != 0) {
    /* libuv has closed the connection that found no descriptor (its spare-descriptor trick) */
    if (is_nofd(status)) log_nofd(n, "accept", -1, status);
    else DRED_DEBUG("control listener: accept failed: %s", uv_strerror(status));
    return;
  }
  if ((l = link_new(n, tcp)) == NULL) return;
  l->accepted_ms = uv_now(n->loop);
  dred_queue_insert_tail(&n->pending, &l->qlink);
  n->npending++;
  if (uv_accept(srv, &l->h.stream) != 0 || uv_read_start(&l->h.stream, alloc_cb, read_cb) != 0) {
    link_close(l, LINK_QUIET);
    return;
  }
  if (tcp) uv_tcp_nodelay(&l->h.tcp, 1);
  link_grow_buffers(l);
  if (!uv_is_active((uv_handle_t *)&n->hello_timer))
    uv_timer_start(&n->hello_timer, hello_timer_cb, n->hello_timeout_ms, 0);
  cap = n->max_pending > 2 * (size_t)n->nranks ? n->max_pending : 2 * (size_t)n->nranks;
  while (n->npending > cap && (q = dred_queue_head(&n->pending)) != NULL)
    pending_evict(DRED_QUEUE_DATA(q, dred_net_link_t, qlink),
                  "more links waiting for HELLO than DRED_MAX_PENDING_LINKS");
  if (n->fd_limit > 0 && uv_fileno(&l->h.handle, &fd) == 0 &&
      fd >= n->fd_limit - (n->nranks + FD_RESERVE_EXTRA) &&
      (q = dred_queue_head(&n->pending)) != NULL) {
    dred_net_link_t *old = DRED_QUEUE_DATA(q, dred_net_link_t, qlink);
    if (old != l && old->accepted_ms < l->accepted_ms)
      pending_evict(old, "file descriptors are running out; the rest are kept for the job's "
                         "own links");
  }
}

/* Raise the soft limit on descriptors to the hard one (a job's links, stores and MPI's own
 * need more than a default of 1024 at scale); the limit in force, or -1 if unknown. */
static int fd_limit_raise(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  if (rl.rlim_cur < rl.rlim_max) {
    rlim_t want = rl.rlim_max;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) (void)getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 0x3fffffff ? 0x3fffffff : (int)rl.rlim_cur;
}

int dred_net_fd_free(const dred_net_t *n) {
  DIR *d;
  struct dirent *e;
  int used = 0;
  if (n == NULL || n->fd_limit <= 0) return -1;
  if ((d = opendir("/proc/self/fd")) == NULL) return errno == EMFILE || errno == ENFILE ? 0 : -1;
  while ((e = readdir(d)) != NULL) used += e->d_name[0] != '.';
  closedir(d);
  used--; /* the directory's own descriptor */
  return used >= n->fd_limit ? 0 : n->fd_limit - used;
}

int dred_net_token_new(uint8_t token[DRED_NET_TOKEN_BYTES]) {
  return uv_random(NULL, NULL, token, DRED_NET_TOKEN_BYTES, 0, NULL);
}

int dred_net_init(dred_net_t *n, uv_loop_t *loop, int self, int nranks,
                  const uint8_t token[DRED_NET_TOKEN_BYTES]) {
  if (n == NULL || loop == NULL || nranks <= 0 || self < 0 || self >= nranks || token == NULL)
    return DRED_ERR_ARG;
  memset(n, 0, sizeof *n);
  n->bulk_piece = DRED_NET_BULK_PIECE;
  n->loop = loop;
  n->self = self;
  n->nranks = nranks;
  memcpy(n->token, token, DRED_NET_TOKEN_BYTES);
  n->out = calloc((size_t)nranks, sizeof *n->out);
  n->in = calloc((size_t)nranks, sizeof *n->in);
  n->book = calloc((size_t)nranks, sizeof *n->book);
  if (n->out == NULL || n->in == NULL || n->book == NULL) goto fail;
  if (uv_mutex_init(&n->wlock) != 0) goto fail;
  if (uv_async_init(loop, &n->flush, flush_cb) != 0) {
    uv_mutex_destroy(&n->wlock);
    goto fail;
  }
  n->flush.data = n;
  uv_timer_init(loop, &n->hello_timer); /* cannot fail on Linux */
  uv_unref((uv_handle_t *)&n->hello_timer); /* it never keeps a loop running */
  n->hello_timer.data = n;
  dred_config_links(&n->hello_timeout_ms, &n->max_pending);
  n->fd_limit = fd_limit_raise();
  dred_queue_init(&n->pending);
  dred_queue_init(&n->inbox);
  return DRED_OK;

fail:
  free(n->out);
  free(n->in);
  free(n->book);
  n->out = n->in = NULL;
  n->book = NULL;
  return DRED_ERR_NOMEM;
}

int dred_net_listen(dred_net_t *n, const char *unix_path, const char *tcp_host,
                    char unix_addr[DRED_NET_ADDR_MAX], char tcp_addr[DRED_NET_ADDR_MAX]) {
  int rc;
  if (n == NULL || unix_path == NULL) return UV_EINVAL;
  if (strlen(unix_path) + 1 > sizeof(((struct sockaddr_un *)0)->sun_path)) {
    DRED_ERROR("control socket path '%s' is too long for a Unix domain socket", unix_path);
    return UV_ENAMETOOLONG;
  }
  (void)unlink(unix_path); /* a stale socket of a dead job of ours */
  if ((rc = uv_pipe_init(n->loop, &n->unix_srv, 0)) != 0) return rc;
  n->unix_srv.data = n;
  n->unix_open = 1;
  if ((rc = uv_pipe_bind(&n->unix_srv, unix_path)) != 0 ||
      (rc = uv_listen((uv_stream_t *)&n->unix_srv, 128, on_connection)) != 0) {
    DRED_ERROR("cannot listen on %s: %s", unix_path, uv_strerror(rc));
    return rc;
  }
  (void)chmod(unix_path, 0600);
  snprintf(n->unix_path, sizeof n->unix_path, "%s", unix_path);
  if (unix_addr != NULL) snprintf(unix_addr, DRED_NET_ADDR_MAX, "unix:%s", unix_path);
  if (tcp_addr != NULL) tcp_addr[0] = '\0';
  if (tcp_host != NULL) {
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[64];
    uv_getaddrinfo_t gai;
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    /* synchronous: no callback; this runs once, at init */
    if ((rc = uv_getaddrinfo(n->loop, &gai, NULL, tcp_host, "0", &hints)) != 0) {
      DRED_ERROR("cannot resolve '%s' for the control listener: %s", tcp_host, uv_strerror(rc));
      return rc;
    }
    if ((rc = uv_tcp_init(n->loop, &n->tcp_srv)) != 0) {
      uv_freeaddrinfo(gai.addrinfo);
      return rc;
    }
    n->tcp_srv.data = n;
    n->tcp_open = 1;
    rc = uv_tcp_bind(&n->tcp_srv, gai.addrinfo->ai_addr, 0);
    uv_freeaddrinfo(gai.addrinfo);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&n->tcp_srv, 128, on_connection);
    if (rc == 0) rc = uv_tcp_getsockname(&n->tcp_srv, (struct sockaddr *)&ss, &len);
    if (rc == 0) rc = uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
    if (rc != 0) {
      DRED_ERROR("cannot listen on TCP at %s: %s", tcp_host, uv_strerror(rc));
      return rc;
    }
    if (tcp_addr != NULL)
      snprintf(tcp_addr, DRED_NET_ADDR_MAX, "tcp:%s:%d", ip,
               ntohs(((struct sockaddr_in *)&ss)->sin_port));
  }
  return 0;
}

static void connect_cb(uv_connect_t *req, int status) {
  dred_net_link_t *l = req->handle->data;
  if (status != 0) {
    if (is_nofd(status)) {
      log_nofd(l->net, "open", l->peer, status);
      link_close(l, LINK_NOFD);
      return;
    }
    DRED_ERROR("control link to rank %d: connect failed: %s", l->peer, uv_strerror(status));
    link_close(l, LINK_LOST);
    return;
  }
  link_grow_buffers(l);
  if (uv_read_start(&l->h.stream, alloc_cb, read_cb) != 0) link_close(l, LINK_LOST);
}

int dred_net_connect(dred_net_t *n, int peer, const char *addr) {
  dred_net_link_t *l;
  uint8_t hello[HELLO_BYTES];
  int tcp, rc;
  if (n == NULL || addr == NULL || peer < 0 || peer >= n->nranks || n->out[peer] != NULL)
    return UV_EINVAL;
  if (strncmp(addr, "unix:", 5) == 0) {
    tcp = 0;
  } else if (strncmp(addr, "tcp:", 4) == 0) {
    tcp = 1;
  } else {
    DRED_ERROR("control address '%s' is neither unix: nor tcp:", addr);
    return UV_EINVAL;
  }
  if ((l = link_new(n, tcp)) == NULL) return UV_ENOMEM;
  l->peer = peer;
  l->admitted = 1;
  l->outgoing = 1;
  if (!tcp) {
    /* The socket is made here, not by uv_pipe_connect, so that a shortage of descriptors
     * is known for what it is (libuv would report it later as a failed connect). */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    rc = fd < 0 ? uv_translate_sys_error(errno) : uv_pipe_open(&l->h.pipe, fd);
    if (rc != 0) {
      if (fd >= 0) close(fd);
      if (is_nofd(rc)) log_nofd(n, "open", peer, rc);
      else DRED_ERROR("control address '%s': %s", addr, uv_strerror(rc));
      link_close(l, is_nofd(rc) ? LINK_NOFD : LINK_QUIET);
      return rc;
    }
    uv_pipe_connect(&l->conn, &l->h.pipe, addr + 5, connect_cb);
  } else {
    char host[DRED_NET_ADDR_MAX];
    const char *colon = strrchr(addr + 4, ':');
    struct sockaddr_in sa;
    if (colon == NULL || (size_t)(colon - (addr + 4)) >= sizeof host) {
      link_close(l, LINK_QUIET);
      return UV_EINVAL;
    }
    memcpy(host, addr + 4, (size_t)(colon - (addr + 4)));
    host[colon - (addr + 4)] = '\0';
    if ((rc = uv_ip4_addr(host, atoi(colon + 1), &sa)) != 0 ||
        (rc = uv_tcp_connect(&l->conn, &l->h.tcp, (const struct sockaddr *)&sa, connect_cb)) != 0) {
      if (is_nofd(rc)) log_nofd(n, "open", peer, rc);
      else DRED_ERROR("control address '%s': %s", addr, uv_strerror(rc));
      link_close(l, is_nofd(rc) ? LINK_NOFD : LINK_QUIET); /* the owner hears of a shortage */
      return rc;
    }
    uv_tcp_nodelay(&l->h.tcp, 1);
  }
  put_le32(hello, HELLO_MAGIC);
  put_le32(hello + 4, (uint32_t)n->self);
  memcpy(hello + 8, n->token, DRED_NET_TOKEN_BYTES);
  if (link_write(l, hello, sizeof hello, NULL, 0, NULL, NULL) != DRED_OK) {
    link_close(l, LINK_QUIET);
    return UV_EIO;
  }
  /* Indexed only with HELLO queued first: a direct writer (dred_net_send_now) finds the
   * link only then, and waits until that write is through. */
  uv_mutex_lock(&n->wlock);
  n->out[peer] = l;
  uv_mutex_unlock(&n->wlock);
  return 0;
}

/* ---- messages ------------------------------------------------------------------------ */

/* The link a message to `dest` goes on, dialled from the address book if there is none. */
static int link_to(dred_net_t *n, int dest, dred_net_link_t **out) {
  dred_net_link_t *l;
  if (n->out == NULL) return DRED_ERR_SHUTDOWN; /* closed: a late callback's reply */
  if (dest >= n->nranks) return DRED_ERR_ARG;
  if (n->out[dest] == NULL && n->in[dest] == NULL && n->book[dest][0] != '\0' &&
      dred_net_connect(n, dest, n->book[dest]) != 0)
    return DRED_ERR_PROC_FAILED;
  l = n->out[dest] != NULL ? n->out[dest] : n->in[dest];
  if (l == NULL || l->closing) return DRED_ERR_PROC_FAILED;
  *out = l;
  return DRED_OK;
}

size_t dred_net_backlog(dred_net_t *n, int dest) {
  dred_net_link_t *l;
  size_t q;
  if (n == NULL || n->out == NULL || dest < 0 || dest >= n->nranks) return 0;
  uv_mutex_lock(&n->wlock);
  l = n->out[dest] != NULL ? n->out[dest] : n->in[dest];
  q = l != NULL ? l->queued : 0;
  uv_mutex_unlock(&n->wlock);
  return q;
}

#define SMALL_FRAME 512

/* Encode `m` into `small` (SMALL_FRAME bytes) or, for the messages that can outgrow it (a
 * group's member list, inline operands), a malloc'd buffer; *len 0 if it cannot be. */
static uint8_t *frame_encode(const proto_msg_t *m, const uint32_t *group_workers, uint8_t *small,
                             size_t *len) {
  size_t cap = SMALL_FRAME;
  uint8_t *buf = small;
  if (m->type == PROTO_GROUP)
    cap = PROTO_HEADER + 16u + 4u * (size_t)m->u.group.n;
  else if (m->type == PROTO_INLINE && m->u.inl.n > 0 && m->u.inl.bytes <= PROTO_INLINE_TOTAL)
    cap = PROTO_HEADER + PROTO_INLINE_FIXED + (size_t)m->u.inl.n * (size_t)m->u.inl.bytes;
  else if (m->type == PROTO_READY)
    cap = PROTO_HEADER + 128u + (size_t)m->u.ready.data_len;
  else if (m->type == PROTO_DATA && m->u.data.len <= PROTO_DATA_MAX)
    cap = PROTO_HEADER + PROTO_DATA_FIXED + (size_t)m->u.data.len;
  *len = 0;
  if (cap > SMALL_FRAME && (buf = malloc(cap)) == NULL) return NULL;
  *len = proto_encode(m, group_workers, buf, cap);
  if (*len == 0) DRED_ERROR("%s could not be encoded", proto_type_name(m->type));
  return buf;
}

int dred_net_send(dred_net_t *n, int dest, const proto_msg_t *m, const uint32_t *group_workers) {
  uint8_t small[SMALL_FRAME], *buf;
  size_t len;
  int rc;
  dred_net_link_t *l;
  if (n == NULL || m == NULL || dest < 0) return DRED_ERR_ARG;
  if ((rc = link_to(n, dest, &l)) != DRED_OK) return rc;
  if ((buf = frame_encode(m, group_workers, small, &len)) == NULL) return DRED_ERR_NOMEM;
  rc = len == 0 ? DRED_ERR_ARG : link_write(l, buf, len, NULL, 0, NULL, NULL);
  if (buf != small) free(buf);
  if (rc == DRED_OK) n->sent++;
  return rc;
}

int dred_net_send_now(dred_net_t *n, int dest, const proto_msg_t *m) {
  uint8_t small[SMALL_FRAME], *buf;
  size_t len, done = 0;
  dred_net_link_t *l;
  int fd, rc = DRED_NET_LATER;
  if (n == NULL || m == NULL || dest < 0 || dest >= n->nranks) return DRED_ERR_ARG;
  if (m->type == PROTO_GROUP) return DRED_ERR_ARG; /* needs a member list: the loop's job */
  if ((buf = frame_encode(m, NULL, small, &len)) == NULL) return DRED_NET_LATER;
  if (len == 0) {
    if (buf != small) free(buf);
    return DRED_ERR_ARG;
  }
  uv_mutex_lock(&n->wlock);
  l = n->out == NULL ? NULL : n->out[dest] != NULL ? n->out[dest] : n->in[dest];
  if (l != NULL && !l->closing && l->queued == 0 && l->tail == NULL &&
      uv_fileno(&l->h.handle, &fd) == 0) {
    while (done < len) {
      ssize_t w = send(fd, buf + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w > 0) done += (size_t)w;
      else if (w < 0 && errno == EINTR) continue;
      else break; /* full (nothing of it went: the loop sends it) or broken (its read says so) */
    }
    if (done == len) {
      rc = DRED_OK;
    } else if (done > 0) { /* the peer has the frame's start: its rest must follow at once */
      wreq_t *t = malloc(sizeof *t + (len - done));
      if (t == NULL) {
        DRED_ERROR("control link to rank %d: no memory for the rest of a frame: closing it", dest);
        (void)shutdown(fd, SHUT_RDWR); /* a cut frame must not be taken for the next one */
      } else {
        memcpy(t->data, buf + done, len - done);
        t->buf[0] = uv_buf_init((char *)t->data, (unsigned)(len - done));
        t->cb = NULL;
        t->arg = NULL;
        l->tail = t;
        uv_async_send(&n->flush);
      }
      rc = DRED_OK; /* sent, as far as the caller is concerned: the loop finishes it */
    }
  }
  uv_mutex_unlock(&n->wlock);
  if (buf != small) free(buf);
  return rc;
}

int dred_net_send_bulk(dred_net_t *n, int dest, const proto_msg_t *m, const void *payload,
                       size_t len, dred_net_sent_cb cb, void *arg) {
  uint8_t buf[512];
  size_t flen;
  int rc;
  dred_net_link_t *l;
  if (n == NULL || m == NULL || dest < 0 || payload == NULL || cb == NULL || bulk_len(m) != len ||
      len == 0 || len > DRED_NET_BULK_MAX)
    return DRED_ERR_ARG;
  if ((rc = link_to(n, dest, &l)) != DRED_OK) return rc;
  if ((flen = proto_encode(m, NULL, buf, sizeof buf)) == 0) return DRED_ERR_ARG;
  if (link_write(l, buf, flen, payload, len, cb, arg) != DRED_OK) return DRED_ERR_INTERNAL;
  n->sent++;
  return DRED_OK;
}

void *dred_net_take_payload(dred_net_t *n, size_t *len) {
  inbox_entry_t *e = n != NULL ? n->last : NULL;
  void *p;
  if (len != NULL) *len = 0;
  if (e == NULL || e->payload == NULL) return NULL;
  p = e->payload;
  if (len != NULL) *len = e->payload_len;
  e->payload = NULL;
  return p;
}

int dred_net_recv(dred_net_t *n, int *src, proto_msg_t *m) {
  dred_queue_t *q;
  inbox_entry_t *e;
  entry_free(n->last);
  n->last = NULL;
  if (n->out == NULL || (q = dred_queue_head(&n->inbox)) == NULL) return 0;
  dred_queue_remove(q);
  e = DRED_QUEUE_DATA(q, inbox_entry_t, link);
  *src = e->src;
  n->last = e; /* a GROUP's member list points into e->bytes */
  if (e->lost) return e->lost == LINK_NOFD ? DRED_NET_NOFD : DRED_NET_LOST;
  *m = e->msg;
  return DRED_NET_MSG;
}

void dred_net_set_addr(dred_net_t *n, int peer, const char *addr) {
  if (n == NULL || peer < 0 || peer >= n->nranks || addr == NULL) return;
  snprintf(n->book[peer], DRED_NET_ADDR_MAX, "%s", addr);
}

int dred_net_connected(const dred_net_t *n, int peer) {
  return n != NULL && n->out != NULL && n->in != NULL && peer >= 0 && peer < n->nranks &&
         ((n->out[peer] != NULL && !n->out[peer]->closing) ||
          (n->in[peer] != NULL && !n->in[peer]->closing));
}

void dred_net_drop(dred_net_t *n, int peer) {
  if (n == NULL || peer < 0 || peer >= n->nranks) return;
  if (n->out[peer] != NULL) link_close(n->out[peer], LINK_QUIET);
  if (n->in[peer] != NULL) link_close(n->in[peer], LINK_QUIET);
  n->book[peer][0] = '\0'; /* never reconnect to a peer declared failed */
}

void dred_net_drop_draining(dred_net_t *n, int peer, uint64_t ms) {
  dred_net_link_t *l;
  if (n == NULL || peer < 0 || peer >= n->nranks) return;
  if (n->out[peer] != NULL) link_close(n->out[peer], LINK_QUIET);
  n->book[peer][0] = '\0'; /* never reconnect to a peer declared failed */
  if ((l = n->in[peer]) == NULL || l->closing || l->draining) return;
  l->draining = 1;
  l->drain_until_ms = uv_now(n->loop) + ms;
  n->ndraining++;
}

int dred_net_draining(const dred_net_t *n, int peer) {
  const dred_net_link_t *l;
  if (n == NULL || peer < 0 || peer >= n->nranks || (l = n->in[peer]) == NULL) return 0;
  return l->draining && !l->closing;
}

uint64_t dred_net_drain_check(dred_net_t *n) {
  uint64_t now, closed;
  int i;
  if (n == NULL || n->in == NULL) return 0;
  if (n->ndraining == 0 && n->drained == 0) return 0; /* every runtime turn asks */
  now = uv_now(n->loop);
  for (i = 0; i < n->nranks && n->ndraining > 0; i++) {
    dred_net_link_t *l = n->in[i];
    if (l != NULL && l->draining && !l->closing && now >= l->drain_until_ms) link_close(l, LINK_QUIET);
  }
  closed = n->drained;
  n->drained = 0;
  return closed;
}

static void srv_close_cb(uv_handle_t *h) { (void)h; }

void dred_net_close(dred_net_t *n) {
  dred_queue_t *q;
  int i;
  if (n == NULL || n->out == NULL) return;
  for (i = 0; i < n->nranks; i++) {
    if (n->out[i] != NULL) link_close(n->out[i], LINK_QUIET);
    if (n->in[i] != NULL) link_close(n->in[i], LINK_QUIET);
  }
  while ((q = dred_queue_head(&n->pending)) != NULL)
    link_close(DRED_QUEUE_DATA(q, dred_net_link_t, qlink), LINK_QUIET);
  if (n->unix_open) {
    uv_close((uv_handle_t *)&n->unix_srv, srv_close_cb);
    if (n->unix_path[0] != '\0') (void)unlink(n->unix_path);
  }
  if (n->tcp_open) uv_close((uv_handle_t *)&n->tcp_srv, srv_close_cb);
  n->unix_open = n->tcp_open = 0;
  uv_close((uv_handle_t *)&n->flush, srv_close_cb);
  uv_close((uv_handle_t *)&n->hello_timer, srv_close_cb);
  while ((q = dred_queue_head(&n->inbox)) != NULL) {
    dred_queue_remove(q);
    entry_free(DRED_QUEUE_DATA(q, inbox_entry_t, link));
  }
  entry_free(n->last);
  n->last = NULL;
  uv_mutex_lock(&n->wlock);
  free(n->out);
  free(n->in);
  n->out = n->in = NULL;
  uv_mutex_unlock(&n->wlock);
  free(n->book);
  n->book = NULL;
}
