/*
 * net.h -- dred's control links: proto messages over libuv streams.
 *
 * The control plane (READY, TASK, DONE, END, RECOVER, heartbeats) between dred-master and
 * the workers' runtime threads.  Why not MPI: MPICH 4.0.2 serialises every MPI call of a
 * process behind one lock, so while the application waits inside a blocking MPI call a
 * runtime thread polling MPI for control messages waits for that lock, and every control
 * hop costs a scheduling round (DESIGN.md).  A socket is woken by the kernel (epoll, via
 * the libuv loop the thread already runs), costs nothing when idle, and tells the other end
 * at once when a process dies: its descriptors close, the peer reads EOF or a reset.
 *
 * Shape.  One dred_net_t per process, owned by the thread that runs its loop.  The master
 * listens (dred_net_listen): a Unix domain socket always, TCP only when some worker lives
 * on another node.  Workers connect (dred_net_connect) to the address the master handed
 * out over MPI at init and first send a HELLO frame: the job's random token and their
 * rank.  The listener admits a link only after a HELLO with the right token and a rank it
 * has not seen; anything else is closed unread, so nothing outside the job can talk to it.
 *
 * Frames are the codec's own messages (common/proto.h: an 8-byte header carrying the
 * payload length).  A header that is not dred's, or that announces more than
 * PROTO_MAX_SIZE, closes the link before anything is allocated for it.  Decoded messages
 * wait in an inbox that dred_net_recv() pops, so the owner's loop keeps its "take what
 * came in" structure; `on_message` (optional) tells it something arrived, `on_lost` that a
 * peer's link closed.
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
  dred_net_link_t **links;  /* by peer rank: the admitted link, or NULL */
  dred_queue_t pending;     /* accepted, not yet through HELLO */
  dred_queue_t inbox;       /* decoded messages not yet taken */
  void *last;               /* the entry the last dred_net_recv returned (freed next call) */
  uv_pipe_t unix_srv;
  uv_tcp_t tcp_srv;
  int unix_open, tcp_open;
  char unix_path[DRED_NET_ADDR_MAX];
  dred_net_cb on_message;   /* a message was queued (optional) */
  dred_net_cb on_lost;      /* an admitted peer's link closed (optional) */
  void *data;               /* the owner's */
  uint64_t sent, received, refused;
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

/* Encode and queue `m` to `dest` (group member list as for proto_encode).  Returns 0, or
 * DRED_ERR_* when there is no link to dest or the message cannot be encoded. */
int dred_net_send(dred_net_t *n, int dest, const proto_msg_t *m, const uint32_t *group_workers);

/* Take one received message: 1 (src, m filled; group lists valid until the next call),
 * 0 if none. */
int dred_net_recv(dred_net_t *n, int *src, proto_msg_t *m);

/* Is there an admitted link to `peer`? */
int dred_net_connected(const dred_net_t *n, int peer);

/* Drop the link to `peer` (a peer declared failed); no on_lost call. */
void dred_net_drop(dred_net_t *n, int peer);

/* Close every handle; run the loop afterwards so the close callbacks free them. */
void dred_net_close(dred_net_t *n);

/* 16 random bytes for a job's token (uv_random). */
int dred_net_token_new(uint8_t token[DRED_NET_TOKEN_BYTES]);

#endif /* DRED_NET_H */
