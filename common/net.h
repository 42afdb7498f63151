/*
 * net.h -- dred's control links: proto messages over libuv streams.
 *
 * The control plane (READY, TASK, DONE, END, RECOVER, heartbeats) between dred-master and
 * the workers' runtime threads.  Why not MPI: MPICH 4.0.2 serialises every MPI call of a
 * process behind one lock, so while the application waits inside a blocking MPI call a
 * runtime thread polling MPI for control messages waits for that lock, and every control
 * hop costs a scheduling round (docs/design.md).  A socket is woken by the kernel (epoll, via
 * the libuv loop the thread already runs), costs nothing when idle, and tells the other end
 * at once when a process dies: its descriptors close, the peer reads EOF or a reset.
 *
 * Shape.  One dred_net_t per process, owned by the thread that runs its loop.  Every
 * process listens (dred_net_listen): a Unix domain socket always, TCP only when the job
 * spans nodes; the addresses are exchanged over MPI at init (common/mpi/boot.c) and kept
 * in an address book.  The first message to a peer opens a link to it (or the master's
 * link is opened at init), which starts with a HELLO frame: the job's random token and the
 * sender's rank.  A listener admits an incoming link only after a HELLO with the right
 * token and a rank that has no incoming link yet; anything else is closed unread, so
 * nothing outside the job can talk to it.  Two processes may each open a link to the
 * other: sends use our own outgoing link when there is one, else the peer's.
 *
 * Links not yet through HELLO cost a descriptor each and say nothing about who holds them,
 * so they are bounded three ways: a link that sends no HELLO within hello_timeout_ms is
 * closed; beyond max_pending of them the oldest is closed; and once the descriptor a new
 * link got shows that fewer than `reserve` descriptors are left (the job's own links still
 * to come), the oldest other waiting link is closed for it.  Each of these, a refused
 * HELLO and an accept that failed for want of descriptors are logged at the 1st, 2nd,
 * 4th... occurrence (log.h).  A link this process could not open for want of descriptors
 * (EMFILE, ENFILE) is not a peer's failure: it comes out of the inbox as DRED_NET_NOFD,
 * never as DRED_NET_LOST, and `nofd` counts every such shortage seen, so the owner can
 * tell its own shortage from a peer's death (accepts that libuv drops silently: see
 * dred_net_fd_free).  dred_net_init raises the soft limit
 * on descriptors to the hard one.
 *
 * Frames are the codec's own messages (common/proto.h: an 8-byte header carrying the
 * payload length).  A header that is not dred's, or that announces more than
 * PROTO_MAX_SIZE, closes the link before anything is allocated for it.  Decoded messages
 * wait in an inbox that dred_net_recv() pops, so the owner's loop keeps its "take what
 * came in" structure.  A link that closes is reported through the same inbox, after the
 * messages that came before it: a worker's last DONE or the master's SHUTDOWN is never
 * overtaken by the news that its sender is gone.
 */
#ifndef DRED_NET_H
#define DRED_NET_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "proto.h"
#include "queue.h"

#define DRED_NET_TOKEN_BYTES 16
#define DRED_NET_ADDR_MAX 160 /* "unix:/path" (sun_path is 108) or "tcp:host:port" */

typedef struct dred_net dred_net_t;
typedef void (*dred_net_cb)(dred_net_t *n, int peer);

typedef struct dred_net_link dred_net_link_t;

struct dred_net {
  uv_loop_t *loop;
  int self;                 /* our rank on the private communicator */
  int nranks;
  uint8_t token[DRED_NET_TOKEN_BYTES];
  dred_net_link_t **out;    /* by peer rank: the link we opened, or NULL        */
  dred_net_link_t **in;     /* by peer rank: the link it opened (admitted), or NULL */
  char (*book)[DRED_NET_ADDR_MAX]; /* by peer rank: where to connect ("" unknown)  */
  size_t writes;            /* writes queued and not yet completed */
  uv_mutex_t wlock;         /* links' write state, shared with dred_net_send_now (net.c) */
  uv_async_t flush;         /* a direct write left a frame's rest for the loop to write */
  dred_queue_t pending;     /* accepted, not yet through HELLO */
  dred_queue_t inbox;       /* decoded messages not yet taken */
  void *last;               /* the entry the last dred_net_recv returned (freed next call) */
  uv_pipe_t unix_srv;
  uv_tcp_t tcp_srv;
  int unix_open, tcp_open;
  char unix_path[DRED_NET_ADDR_MAX];
  void *data;               /* the owner's */
  uint64_t sent, received, refused;
  /* Links not yet through HELLO (see above); the owner may change the first two after
   * dred_net_init (common/config.h: DRED_HELLO_TIMEOUT_MS, DRED_MAX_PENDING_LINKS). */
  uint64_t hello_timeout_ms;
  size_t max_pending;
  size_t npending;
  int fd_limit;             /* the soft limit on descriptors after dred_net_init raised it */
  uv_timer_t hello_timer;   /* closes links past their HELLO deadline (unreferenced) */
  uint64_t nofd;            /* accepts and opens that failed for want of descriptors */
  uint64_t evicted;         /* waiting links closed: no HELLO in time, over the cap, reserve */
  uint64_t drained;         /* draining links closed since dred_net_drain_check last looked */
  int ndraining;            /* incoming links draining now (dred_net_drop_draining)     */
  size_t bulk_piece;        /* bulk bytes go through the loop in pieces of at most this many:
                               one write request, one read each (net.c's "Bulk"); tests
                               lower it to cut small payloads into many pieces */
};

/* Set up on `loop` for process `self` of `nranks`, with the job's token. */
int dred_net_init(dred_net_t *n, uv_loop_t *loop, int self, int nranks,
                  const uint8_t token[DRED_NET_TOKEN_BYTES]);

/* Listen on a Unix domain socket at `unix_path` (created 0600, removed at close), and,
 * if `tcp_host` is non-NULL, on TCP at that host's address, any free port.  Writes the
 * addresses peers should use into unix_addr / tcp_addr (either may be NULL).
 * Returns 0 or a negative libuv error (logged). */
int dred_net_listen(dred_net_t *n, const char *unix_path, const char *tcp_host,
                    char unix_addr[DRED_NET_ADDR_MAX], char tcp_addr[DRED_NET_ADDR_MAX]);

/* Connect to `peer` at `addr` ("unix:PATH" or "tcp:HOST:PORT") and send HELLO.  The link
 * is usable at once: sends queue behind the connect.  Returns 0 or a negative error. */
int dred_net_connect(dred_net_t *n, int peer, const char *addr);

/* Where to reach `peer` when a message is first sent to it. */
void dred_net_set_addr(dred_net_t *n, int peer, const char *addr);

/* Encode and queue `m` to `dest` (group member list as for proto_encode), opening a link
 * from the address book if there is none.  Returns 0, or DRED_ERR_* when dest cannot be
 * reached or the message cannot be encoded. */
int dred_net_send(dred_net_t *n, int dest, const proto_msg_t *m, const uint32_t *group_workers);

/* From any thread: write `m` (not a GROUP) to `dest` now, without the loop's help, if
 * the link to dest exists and has nothing queued: DRED_OK, the frame is the peer's (or its
 * rest is queued for the loop to write next).  DRED_NET_LATER: nothing was written (no
 * idle link, or its socket is full or broken); send it with dred_net_send on the loop's
 * thread.  Order: the frame follows everything already handed to dred_net_send on that
 * link, and precedes what is handed to it later; what the caller's own loop has not yet
 * sent may come after it (lib/engine/runtime.c sends only inline READYs of groups already
 * announced this way). */
#define DRED_NET_LATER 3
int dred_net_send_now(dred_net_t *n, int dest, const proto_msg_t *m);

/* Writes queued to `dest` that libuv has not finished (0: none, or no link): what a
 * sender of many frames paces itself by, so that its copies neither pile up in memory nor
 * take the loop's turn (lib/paths/distribute.c). */
size_t dred_net_backlog(dred_net_t *n, int dest);

/* Bulk send: `m` (a PROTO_REPLICA whose copy is not in shared memory: pool_off -1) followed
 * on the same stream by its u.replica.len bytes at `payload`, which are not copied: they
 * must stay valid until `cb(arg, status)` (DRED_OK once written, else the link broke).
 * cb is not called if this returns an error.  At most DRED_NET_BULK_MAX bytes: a reader
 * closes a link that announces more (a sanity bound on what a header may make it
 * allocate, far above any operand MPI can describe in one reduction). */
#define DRED_NET_BULK_MAX ((uint64_t)1 << 40)
/* The default piece of a bulk payload in the loop (dred_net_t's bulk_piece). */
#define DRED_NET_BULK_PIECE ((size_t)1 << 20)
typedef void (*dred_net_sent_cb)(void *arg, int status);
int dred_net_send_bulk(dred_net_t *n, int dest, const proto_msg_t *m, const void *payload,
                       size_t len, dred_net_sent_cb cb, void *arg);

/* After dred_net_recv returned such a message: its payload, now the caller's
 * (dred_bigbuf_free(p, len), common/bigbuf.h), with its length; NULL when it had none or it could not be held (no memory). */
void *dred_net_take_payload(dred_net_t *n, size_t *len);

/* Take what came in next: DRED_NET_MSG (src and m filled; a GROUP's member list is
 * valid until the next call), DRED_NET_LOST (the link to src closed: EOF, reset, a refused
 * frame), DRED_NET_NOFD (above), or 0 if nothing is waiting. */
#define DRED_NET_MSG 1
#define DRED_NET_LOST 2
/* DRED_NET_NOFD: a link to src that this process opened could not be set up for want of
 * descriptors (logged, with the limit).  src is not known to have failed; its address is
 * kept, so the next message to it dials again. */
#define DRED_NET_NOFD 4
int dred_net_recv(dred_net_t *n, int *src, proto_msg_t *m);

/* Is there a link to `peer` (either way)? */
int dred_net_connected(const dred_net_t *n, int peer);

/* Drop the links to `peer` (a peer declared failed); no DRED_NET_LOST for it. */
void dred_net_drop(dred_net_t *n, int peer);
/* The same, but what `peer` sent before it died is still read: its incoming link stays
 * open until the peer's end closes (a dead process's socket closes with it) or `ms` pass,
 * and its messages are delivered as before.  A copy already whole in our socket is then
 * not lost to the order in which the links are read. */
void dred_net_drop_draining(dred_net_t *n, int peer, uint64_t ms);
/* Is `peer`'s incoming link still draining? */
int dred_net_draining(const dred_net_t *n, int peer);
/* Close the draining links whose time is up; returns how many draining links closed since
 * the last call (at their end or now). */
uint64_t dred_net_drain_check(dred_net_t *n);

/* Close every handle; run the loop afterwards so the close callbacks free them. */
void dred_net_close(dred_net_t *n);

/* How many descriptors this process has free (its limit less those open: /proc/self/fd),
 * 0 when none, -1 if unknown.  libuv drops a connection that finds no descriptor without
 * telling (it accepts and closes it on a spare one), so an owner about to blame a peer for
 * a link that never came or closed asks this first.  Costs a directory read: not per
 * message. */
int dred_net_fd_free(const dred_net_t *n);

/* 16 random bytes for a job's token (uv_random). */
int dred_net_token_new(uint8_t token[DRED_NET_TOKEN_BYTES]);

#endif /* DRED_NET_H */
