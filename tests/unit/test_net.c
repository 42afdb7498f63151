/*
 * test_net.c -- common/net.c, the control links, on a real libuv loop and real sockets.
 *
 * One "master" net listens (Unix domain socket in a private temporary directory, and TCP
 * on 127.0.0.1); "worker" nets connect as ranks 1 and 2.  Everything runs on this thread:
 * pump() turns the loop until a condition holds or a bound runs out.  Covered: messages
 * both ways over both transports, a member list of 60 000 workers, a wrong token and a
 * duplicate rank refused without a message getting through, an oversize frame closing
 * the link unread, a peer's close reported as lost -- after the messages it sent first;
 * a replica's bytes behind its header (bulk) intact over both transports, in many pieces
 * and past 2 GiB, and a copy cut
 * short by its sender's death never delivered; frames written straight into a link from
 * another thread (dred_net_send_now): refused while the loop has a write queued there,
 * in order with the loop's own, and finished by the loop when the kernel took a part.
 * Links that never say HELLO: a flood of wrong tokens logged at powers of 2 only; idle
 * links past the cap or the HELLO deadline closed, the job's own link still admitted; the
 * oldest waiting link given up when descriptors run short; and a link this process cannot
 * open or accept for want of descriptors reported as DRED_NET_NOFD, never as a lost peer.
 * Raw clients are plain blocking sockets of this thread: the kernel completes their
 * connect from the listen backlog, the loop accepts them when pumped.
 */
#define _GNU_SOURCE /* memfd_create */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/bigbuf.h"
#include "../../include/dred_status.h"
#include "../../common/net.h"

static uv_loop_t loop;
static char dir[64], sock_path[128];
static uint8_t token[DRED_NET_TOKEN_BYTES], bad_token[DRED_NET_TOKEN_BYTES];
static int lost_peer = -1;

/* Turn the loop until *flag != 0 or about 2 s passed. */
static void pump_until(int (*cond)(void *), void *arg) {
  int i;
  for (i = 0; i < 2000 && !cond(arg); i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
}

static int has_message(void *arg) { return !dred_queue_empty(&((dred_net_t *)arg)->inbox); }
/* drain the inbox of `net` (a global: is_lost's arg is the rank) until a LOST entry */
static dred_net_t *watched;
static int is_lost(void *arg) {
  proto_msg_t m;
  int src, rc;
  while ((rc = dred_net_recv(watched, &src, &m)) != 0)
    if (rc == DRED_NET_LOST) lost_peer = src;
  return lost_peer == *(int *)arg;
}
static int admitted(void *arg) {
  void **a = arg;
  return dred_net_connected(a[0], *(int *)a[1]);
}

static int setup(void **st) {
  (void)st;
  /* a mkdtemp(3) template: the X's are replaced by the call below */
  snprintf(dir, sizeof dir, "/tmp/dred-net-test.XXXXXX");
  if (mkdtemp(dir) == NULL) return -1;
  snprintf(sock_path, sizeof sock_path, "%s/ctl.sock", dir);
  uv_loop_init(&loop);
  dred_net_token_new(token);
  memcpy(bad_token, token, sizeof token);
  bad_token[3] ^= 1;
  lost_peer = -1;
  return 0;
}

static int teardown(void **st) {
  (void)st;
  uv_run(&loop, UV_RUN_NOWAIT);
  uv_loop_close(&loop);
  unlink(sock_path);
  rmdir(dir);
  return 0;
}

static void close_all(dred_net_t *a, dred_net_t *b) {
  dred_net_close(a);
  if (b) dred_net_close(b);
  uv_run(&loop, UV_RUN_DEFAULT); /* close callbacks free the links */
}

static proto_msg_t ready(uint32_t member) {
  proto_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = PROTO_READY;
  m.u.ready.group = 42;
  m.u.ready.tag = -7;
  m.u.ready.member = member;
  m.u.ready.count = 1000;
  m.u.ready.type_size = m.u.ready.extent = 8;
  m.u.ready.buf.pool_off = -1;
  m.u.ready.buf.owner = member + 1;
  return m;
}

/* A "master" (rank 0 of 4) listening on the Unix socket (and on TCP at tcp_host, if
 * given) and a "worker" of rank `rank` connecting to it over that transport. */
static void connect_pair(dred_net_t *srv, dred_net_t *w, int rank, const char *tcp_host) {
  char ua[DRED_NET_ADDR_MAX], ta[DRED_NET_ADDR_MAX];
  assert_int_equal(dred_net_init(srv, &loop, 0, 4, token), 0);
  assert_int_equal(dred_net_listen(srv, sock_path, tcp_host, ua, ta), 0);
  assert_int_equal(dred_net_init(w, &loop, rank, 4, token), 0);
  assert_int_equal(dred_net_connect(w, 0, tcp_host ? ta : ua), 0);
}

static void roundtrip(const char *tcp_host) {
  dred_net_t srv, w;
  proto_msg_t m = ready(0), r;
  int src = -1, one = 1;
  void *arg[2] = {&srv, &one};
  connect_pair(&srv, &w, 1, tcp_host);
  assert_int_equal(dred_net_send(&w, 0, &m, NULL), 0); /* queued behind the connect */
  pump_until(has_message, &srv);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(src, 1);
  assert_int_equal(r.type, PROTO_READY);
  assert_int_equal(r.u.ready.tag, -7);
  assert_int_equal(r.u.ready.buf.owner, 1);
  pump_until(admitted, arg);
  /* and back: the master answers on the link the worker opened */
  memset(&m, 0, sizeof m);
  m.type = PROTO_END;
  m.u.end.group = 42;
  m.u.end.tag = -7;
  assert_int_equal(dred_net_send(&srv, 1, &m, NULL), 0);
  pump_until(has_message, &w);
  assert_int_equal(dred_net_recv(&w, &src, &r), DRED_NET_MSG);
  assert_int_equal(src, 0);
  assert_int_equal(r.type, PROTO_END);
  assert_int_equal(dred_net_recv(&w, &src, &r), 0);
  close_all(&srv, &w);
}

static void unix_roundtrip(void **st) {
  (void)st;
  roundtrip(NULL);
}

static void tcp_roundtrip(void **st) {
  (void)st;
  roundtrip("127.0.0.1");
}

static void big_group(void **st) {
  dred_net_t srv, w;
  uint32_t n = 60000, i, *workers = malloc(n * sizeof *workers);
  proto_msg_t m, r;
  int src;
  (void)st;
  for (i = 0; i < n; i++) workers[i] = i + 1;
  connect_pair(&srv, &w, 2, NULL);
  memset(&m, 0, sizeof m);
  m.type = PROTO_GROUP;
  m.u.group.id = proto_group_id(n, workers);
  m.u.group.n = n;
  assert_int_equal(dred_net_send(&w, 0, &m, workers), 0);
  pump_until(has_message, &srv);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(r.u.group.n, n);
  assert_int_equal(proto_group_worker(&r, n - 1), n);
  free(workers);
  close_all(&srv, &w);
}

static void wrong_token_and_duplicate_rank_refused(void **st) {
  dred_net_t srv, bad, w1, dup;
  char ua[DRED_NET_ADDR_MAX];
  proto_msg_t m = ready(0);
  int i;
  (void)st;
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  assert_int_equal(dred_net_listen(&srv, sock_path, NULL, ua, NULL), 0);
  assert_int_equal(dred_net_init(&bad, &loop, 1, 4, bad_token), 0);
  assert_int_equal(dred_net_connect(&bad, 0, ua), 0);
  dred_net_send(&bad, 0, &m, NULL);
  for (i = 0; i < 200 && srv.refused == 0; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
  assert_int_equal(srv.refused, 1);
  assert_false(dred_net_connected(&srv, 1));
  assert_true(dred_queue_empty(&srv.inbox));
  /* a real rank 1, then an impostor claiming rank 1 again */
  assert_int_equal(dred_net_init(&w1, &loop, 1, 4, token), 0);
  assert_int_equal(dred_net_connect(&w1, 0, ua), 0);
  dred_net_send(&w1, 0, &m, NULL);
  pump_until(has_message, &srv);
  assert_int_equal(dred_net_init(&dup, &loop, 1, 4, token), 0);
  assert_int_equal(dred_net_connect(&dup, 0, ua), 0);
  for (i = 0; i < 200 && srv.refused < 2; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
  assert_int_equal(srv.refused, 2);
  assert_true(dred_net_connected(&srv, 1)); /* the first one keeps its link */
  dred_net_close(&bad);
  dred_net_close(&dup);
  close_all(&srv, &w1);
}

/* A raw client (not dred_net): a valid HELLO as net.c frames it ("DRHL", rank, token),
 * then a header announcing a 1 GiB frame.  The listener must close the link unread. */
static int raw_connected;
static void raw_connect_cb(uv_connect_t *req, int status) {
  (void)req;
  raw_connected = status == 0 ? 1 : -1;
}
static int raw_is_connected(void *arg) {
  (void)arg;
  return raw_connected != 0;
}
static void raw_close_cb(uv_handle_t *h) { (void)h; }

static void oversize_frame_closes_the_link(void **st) {
  dred_net_t srv;
  char ua[DRED_NET_ADDR_MAX];
  uint8_t msg[8 + DRED_NET_TOKEN_BYTES + 8] = {'D', 'R', 'H', 'L', 1, 0, 0, 0};
  uint8_t hdr[8] = {0x44, 0x52, PROTO_VERSION, PROTO_READY, 0, 0, 0, 0x40};
  uv_pipe_t raw;
  uv_connect_t creq;
  uv_write_t wreq;
  uv_buf_t b;
  int one = 1;
  (void)st;
  memcpy(msg + 8, token, DRED_NET_TOKEN_BYTES);
  memcpy(msg + 8 + DRED_NET_TOKEN_BYTES, hdr, sizeof hdr);
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  watched = &srv;
  assert_int_equal(dred_net_listen(&srv, sock_path, NULL, ua, NULL), 0);
  raw_connected = 0;
  uv_pipe_init(&loop, &raw, 0);
  uv_pipe_connect(&creq, &raw, sock_path, raw_connect_cb);
  pump_until(raw_is_connected, NULL);
  assert_int_equal(raw_connected, 1);
  b = uv_buf_init((char *)msg, sizeof msg);
  assert_int_equal(uv_write(&wreq, (uv_stream_t *)&raw, &b, 1, NULL), 0);
  pump_until(is_lost, &one); /* admitted as rank 1, then closed for the header */
  assert_int_equal(lost_peer, 1);
  assert_false(dred_net_connected(&srv, 1));
  assert_true(dred_queue_empty(&srv.inbox));
  uv_close((uv_handle_t *)&raw, raw_close_cb);
  close_all(&srv, NULL);
}

static void peer_close_is_reported(void **st) {
  dred_net_t srv, w;
  proto_msg_t m = ready(0), r;
  int src;
  (void)st;
  watched = &srv;
  connect_pair(&srv, &w, 1, NULL);
  dred_net_send(&w, 0, &m, NULL);
  pump_until(has_message, &srv);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  /* a last message, then the close: the message must come out first */
  m.u.ready.member = 9;
  dred_net_send(&w, 0, &m, NULL);
  dred_net_close(&w); /* what a killed process's kernel does to its sockets */
  for (int i = 0; i < 2000 && dred_queue_len(&srv.inbox) < 2; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(r.u.ready.member, 9);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_LOST);
  assert_int_equal(src, 1);
  assert_int_equal(dred_net_send(&srv, 1, &m, NULL) != 0, 1);
  close_all(&srv, NULL);
}


/* A peer declared failed whose link is dropped draining: what it sent before it died is
 * still delivered, its end closing is not reported as a loss, the link counts as draining
 * until then, and a link that never ends is closed once its time is up. */
static int not_draining(void *arg) { return !dred_net_draining(arg, 1); }
static void drop_draining_delivers_what_was_sent(void **st) {
  dred_net_t srv, w;
  proto_msg_t m = ready(0), r;
  int src, one = 1;
  void *arg[2] = {&srv, &one};
  (void)st;
  connect_pair(&srv, &w, 1, NULL);
  dred_net_send(&w, 0, &m, NULL);
  pump_until(has_message, &srv);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  pump_until(admitted, arg);
  /* declared failed before its last message is read: dropped, draining */
  m.u.ready.member = 9;
  dred_net_send(&w, 0, &m, NULL);
  dred_net_drop_draining(&srv, 1, 5000);
  assert_int_equal(dred_net_draining(&srv, 1), 1);
  assert_int_equal(dred_net_draining(&srv, 2), 0);
  dred_net_close(&w); /* what a killed process's kernel does to its sockets */
  pump_until(not_draining, &srv);
  assert_int_equal(dred_net_draining(&srv, 1), 0);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(r.u.ready.member, 9);
  assert_int_equal(src, 1);
  assert_int_equal(dred_net_recv(&srv, &src, &r), 0); /* no LOST: it was declared failed */
  assert_true(dred_net_drain_check(&srv) == 1);
  assert_true(dred_net_drain_check(&srv) == 0);
  assert_int_equal(dred_net_send(&srv, 1, &m, NULL) != 0, 1); /* never dialled again */
  close_all(&srv, NULL);

  /* a peer whose end never closes (a lost node): closed when its time is up */
  connect_pair(&srv, &w, 1, NULL);
  dred_net_send(&w, 0, &m, NULL);
  pump_until(has_message, &srv);
  pump_until(admitted, arg);
  dred_net_drop_draining(&srv, 1, 0);
  assert_int_equal(dred_net_draining(&srv, 1), 1);
  assert_true(dred_net_drain_check(&srv) == 1);
  assert_int_equal(dred_net_draining(&srv, 1), 0);
  close_all(&srv, &w);
}

/* ---- direct writes from another thread (dred_net_send_now) ------------------------------ */

typedef struct {
  dred_net_t *net;
  proto_msg_t m;
  int rc;
} now_arg_t;

static void send_now_thread(void *p) {
  now_arg_t *a = p;
  a->rc = dred_net_send_now(a->net, 0, &a->m);
}

static int nmsgs(void *arg) {
  dred_net_t *n = arg;
  int k = 0;
  dred_queue_t *q;
  DRED_QUEUE_FOREACH(q, &n->inbox) k++;
  return k;
}
static int want_n = 0;
static int has_n(void *arg) { return nmsgs(arg) >= want_n; }

/* A direct write is refused while the loop has a write of its own queued on the link (the
 * HELLO behind the connect, a message just sent), goes through from another thread once
 * the link is idle, and keeps the order: what the loop took first arrives first. */
static void send_now_keeps_order(const char *tcp_host) {
  dred_net_t srv, w;
  proto_msg_t m = ready(1), r;
  int src = -1, one = 1, i;
  void *arg[2] = {&srv, &one};
  now_arg_t a;
  uv_thread_t th;
  const int64_t want[3] = {-8, -9, -10};
  connect_pair(&srv, &w, 1, tcp_host);
  assert_int_equal(dred_net_send_now(&w, 0, &m), DRED_NET_LATER); /* HELLO still queued */
  assert_int_equal(dred_net_send_now(&w, 2, &m), DRED_NET_LATER); /* no link to rank 2 */
  pump_until(admitted, arg);
  uv_run(&loop, UV_RUN_NOWAIT); /* the HELLO's write callback */

  a.net = &w;
  a.m = ready(1);
  a.m.u.ready.tag = -8;
  a.rc = -1;
  assert_int_equal(uv_thread_create(&th, send_now_thread, &a), 0);
  assert_int_equal(uv_thread_join(&th), 0);
  assert_int_equal(a.rc, DRED_OK);

  m.u.ready.tag = -9;
  assert_int_equal(dred_net_send(&w, 0, &m, NULL), 0); /* the loop's own, queued */
  m.u.ready.tag = -99;
  assert_int_equal(dred_net_send_now(&w, 0, &m), DRED_NET_LATER); /* must not overtake it */
  uv_run(&loop, UV_RUN_NOWAIT);
  m.u.ready.tag = -10;
  assert_int_equal(dred_net_send_now(&w, 0, &m), DRED_OK);
  want_n = 3;
  pump_until(has_n, &srv);
  for (i = 0; i < 3; i++) {
    assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
    assert_int_equal(src, 1);
    assert_int_equal(r.type, PROTO_READY);
    assert_int_equal(r.u.ready.tag, want[i]);
  }
  m.type = PROTO_GROUP; /* a member list is the loop's job */
  assert_int_equal(dred_net_send_now(&w, 0, &m), DRED_ERR_ARG);
  close_all(&srv, &w);
}

static void send_now_unix(void **st) {
  (void)st;
  send_now_keeps_order(NULL);
}

static void send_now_tcp(void **st) {
  (void)st;
  send_now_keeps_order("127.0.0.1");
}

/* Direct writes of 100 KB frames into a link nobody reads until its socket is full: a
 * frame the kernel took only in part is finished by the loop (the tail) before anything
 * else, so every frame accepted arrives whole and in order, and then the link is usable
 * both ways again. */
static void send_now_full_socket_finishes_frames(void **st) {
  dred_net_t srv, w;
  enum { FRAME = 100000, MAXF = 400 };
  static uint8_t payload[FRAME];
  proto_msg_t m = ready(1), r;
  int src = -1, one = 1, sent = 0, rc = DRED_OK, i;
  void *arg[2] = {&srv, &one};
  (void)st;
  connect_pair(&srv, &w, 1, NULL);
  pump_until(admitted, arg);
  uv_run(&loop, UV_RUN_NOWAIT);
  m.u.ready.inl = 1;
  m.u.ready.data = payload;
  m.u.ready.data_len = FRAME;
  /* the loop does not run: the master reads nothing, the socket fills */
  while (sent < MAXF) {
    m.u.ready.tag = -sent;
    payload[0] = (uint8_t)sent; /* frame k carries k in its first byte */
    if ((rc = dred_net_send_now(&w, 0, &m)) != DRED_OK) break;
    sent++;
  }
  assert_int_equal(rc, DRED_NET_LATER); /* it did fill */
  assert_true(sent > 1);
  m.u.ready.tag = -1000;
  m.u.ready.data_len = 8;
  assert_int_equal(dred_net_send(&w, 0, &m, NULL), 0); /* behind every tail */
  want_n = sent + 1;
  for (i = 0; i < 20 && nmsgs(&srv) < want_n; i++) pump_until(has_n, &srv);
  for (i = 0; i < sent; i++) {
    assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
    assert_int_equal(r.u.ready.tag, -i);
    assert_int_equal(r.u.ready.data_len, FRAME);
    assert_int_equal(r.u.ready.data[0], (uint8_t)i);
  }
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(r.u.ready.tag, -1000);
  close_all(&srv, &w);
}

/* ---- bulk: a replica's bytes behind its header ------------------------------------------ */

static int sent_status = 99;
static void on_sent(void *arg, int status) {
  (void)arg;
  sent_status = status;
}

static proto_msg_t replica_header(size_t len) {
  proto_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = PROTO_REPLICA;
  m.u.replica.group = 42;
  m.u.replica.tag = 3;
  m.u.replica.member = 1;
  m.u.replica.len = len;
  m.u.replica.pool_off = -1;
  return m;
}

/* The next message `srv` holds is a REPLICA whose copy is `len` bytes equal to `data`,
 * taken once (the payload buffer then freed). */
static void expect_copy(dred_net_t *srv, const uint8_t *data, size_t len) {
  proto_msg_t r;
  uint8_t *in;
  size_t got = 0;
  int src = -1;
  assert_int_equal(dred_net_recv(srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(r.type, PROTO_REPLICA);
  in = dred_net_take_payload(srv, &got);
  assert_non_null(in);
  assert_int_equal(got, len);
  assert_memory_equal(in, data, len);
  assert_null(dred_net_take_payload(srv, &got)); /* taken once */
  dred_bigbuf_free(in, len);
}

/* A raw client's HELLO as `rank`: "DRHL", the rank (little-endian), the job's token. */
static void hello_of(uint8_t hello[8 + DRED_NET_TOKEN_BYTES], uint32_t rank) {
  hello[0] = 0x44; hello[1] = 0x52; hello[2] = 0x48; hello[3] = 0x4c; /* "DRHL" */
  hello[4] = (uint8_t)rank; hello[5] = (uint8_t)(rank >> 8);
  hello[6] = (uint8_t)(rank >> 16); hello[7] = (uint8_t)(rank >> 24);
  memcpy(hello + 8, token, DRED_NET_TOKEN_BYTES);
}

/* 3 MiB behind a header, then an ordinary message: both arrive, in order, bytes intact;
 * the sender hears when its buffer may go; wrong calls are refused.  `piece`: both sides'
 * bulk_piece (0: the default), small to move the payload in many pieces (more than
 * IOV_MAX).  A piece is one write request and one read, and libuv moves at most 32 of
 * them per pass of the loop, so the loop turns at least len / (64 x piece) times
 * (twice libuv's count, for slack): a sender that wrote as much as the socket takes in
 * one call, as it once did, needs a few passes for the lot.  (The reader's pieces are not
 * seen here, where the sender's pace bounds each read: bulk_read_in_pieces.) */
static void bulk_roundtrip(const char *tcp_host, size_t piece) {
  dred_net_t srv, w;
  size_t len = 3u << 20, got = 0, i;
  uint8_t *data = malloc(len);
  proto_msg_t m = replica_header(len), r, e = ready(0);
  int src = -1;
  assert_non_null(data);
  for (i = 0; i < len; i++) data[i] = (uint8_t)(i * 7 + 1);
  sent_status = 99;
  connect_pair(&srv, &w, 1, tcp_host);
  if (piece > 0) w.bulk_piece = srv.bulk_piece = piece;
  /* refused: length disagreeing with the header, no callback, not a bulk message */
  assert_int_not_equal(dred_net_send_bulk(&w, 0, &m, data, len - 1, on_sent, NULL), 0);
  assert_int_not_equal(dred_net_send_bulk(&w, 0, &m, data, len, NULL, NULL), 0);
  assert_int_not_equal(dred_net_send_bulk(&w, 0, &e, data, len, on_sent, NULL), 0);
  assert_int_equal(dred_net_send_bulk(&w, 0, &m, data, len, on_sent, NULL), 0);
  assert_int_equal(dred_net_send(&w, 0, &e, NULL), 0);
  for (i = 0; i < 4000 && dred_queue_len(&srv.inbox) < 2; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
  assert_int_equal(sent_status, 0); /* DRED_OK */
  if (piece > 0) assert_true(i >= len / (64 * piece));
  expect_copy(&srv, data, len);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(r.type, PROTO_READY);
  assert_null(dred_net_take_payload(&srv, &got));
  assert_int_equal(got, 0);
  close_all(&srv, &w);
  free(data);
}

static void bulk_unix(void **st) {
  (void)st;
  bulk_roundtrip(NULL, 0);
}

static void bulk_tcp(void **st) {
  (void)st;
  bulk_roundtrip("127.0.0.1", 0);
}

static void bulk_in_pieces_unix(void **st) {
  (void)st;
  bulk_roundtrip(NULL, 1000); /* 3146 pieces, the last of 576 bytes */
}

static void bulk_in_pieces_tcp(void **st) {
  (void)st;
  bulk_roundtrip("127.0.0.1", 4096);
}

/* A payload past 2 GiB (an int's range, once the limit of copies to other nodes), sent
 * by dred_net in its default 1 MiB pieces to a raw reader that checks every byte.  No
 * 2 GiB buffer is filled on either side (this machine's kernel backs even a read of an
 * untouched page with a fresh zeroed one): the sender's payload is one 3 MiB memfd mapped
 * again and again over a reserved range, so byte x holds pattern[x mod (3 MiB + 4 KiB)],
 * a period no multiple of the 1 MiB piece, so a piece sent twice, skipped or out of order
 * shows. */
#define BIG_LEN (((size_t)2 << 30) + 4096 + 3)
#define BIG_WIN (((size_t)3 << 20) + 4096)
static struct {
  uv_pipe_t srv, conn;
  size_t skip, got; /* stream bytes before the payload (HELLO + header), payload bytes in */
  size_t bad;       /* payload bytes that differ from the pattern */
  char buf[1 << 20];
  uint8_t pattern[BIG_WIN];
} big;

static void big_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  (void)h;
  (void)suggested;
  *b = uv_buf_init(big.buf, sizeof big.buf);
}

static void big_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b) {
  size_t n, i = 0;
  (void)s;
  if (nread < 0) return;
  n = (size_t)nread;
  if (big.skip > 0) { /* HELLO and the header */
    i = big.skip < n ? big.skip : n;
    big.skip -= i;
  }
  while (i < n) { /* compare with the pattern, one window segment at a time */
    size_t w = big.got % BIG_WIN, k = n - i < BIG_WIN - w ? n - i : BIG_WIN - w;
    if (memcmp(b->base + i, big.pattern + w, k) != 0) big.bad += k;
    big.got += k;
    i += k;
  }
}

static void big_accept(uv_stream_t *srv, int status) {
  int v = 4 << 20;
  assert_int_equal(status, 0);
  uv_pipe_init(&loop, &big.conn, 0);
  assert_int_equal(uv_accept(srv, (uv_stream_t *)&big.conn), 0);
  (void)uv_recv_buffer_size((uv_handle_t *)&big.conn, &v);
  uv_read_start((uv_stream_t *)&big.conn, big_alloc, big_read);
}

static void bulk_past_2gib_sent(void **st) {
  dred_net_t w;
  uint8_t frame[512], *data;
  proto_msg_t m = replica_header(BIG_LEN);
  char addr[DRED_NET_ADDR_MAX];
  size_t span = (BIG_LEN + BIG_WIN - 1) / BIG_WIN * BIG_WIN, off, i;
  uint64_t t0;
  int fd;
  (void)st;
  memset(&big, 0, sizeof big);
  for (i = 0; i < BIG_WIN; i++) big.pattern[i] = (uint8_t)(i * 7 + i / 4099 + 1);
  fd = memfd_create("test_net", 0);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)BIG_WIN), 0);
  assert_int_equal(pwrite(fd, big.pattern, BIG_WIN, 0), (ssize_t)BIG_WIN);
  data = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  assert_true(data != MAP_FAILED);
  for (off = 0; off < span; off += BIG_WIN)
    assert_true(mmap(data + off, BIG_WIN, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) ==
                data + off);
  big.skip = 8 + DRED_NET_TOKEN_BYTES + proto_encode(&m, NULL, frame, sizeof frame);
  uv_pipe_init(&loop, &big.srv, 0);
  assert_int_equal(uv_pipe_bind(&big.srv, sock_path), 0);
  assert_int_equal(uv_listen((uv_stream_t *)&big.srv, 4, big_accept), 0);
  assert_int_equal(dred_net_init(&w, &loop, 1, 4, token), 0);
  snprintf(addr, sizeof addr, "unix:%s", sock_path);
  assert_int_equal(dred_net_connect(&w, 0, addr), 0);
  sent_status = 99;
  assert_int_equal(dred_net_send_bulk(&w, 0, &m, data, BIG_LEN, on_sent, NULL), 0);
  t0 = uv_hrtime();
  while ((sent_status == 99 || big.got < BIG_LEN) && uv_hrtime() - t0 < 120000000000ull)
    if (uv_run(&loop, UV_RUN_NOWAIT) == 0) usleep(100);
  assert_int_equal(sent_status, 0); /* DRED_OK: written whole */
  assert_true(big.got == BIG_LEN);
  assert_true(big.bad == 0); /* every byte where it belongs */
  /* beyond the bound: refused at the sender, no callback */
  m = replica_header((size_t)DRED_NET_BULK_MAX + 1);
  sent_status = 99;
  assert_int_not_equal(dred_net_send_bulk(&w, 0, &m, data, (size_t)DRED_NET_BULK_MAX + 1,
                                          on_sent, NULL), 0);
  assert_int_equal(sent_status, 99);
  uv_close((uv_handle_t *)&big.conn, NULL);
  uv_close((uv_handle_t *)&big.srv, NULL);
  close_all(NULL, &w);
  munmap(data, span);
  close(fd);
}

/* A raw sender (not dred_net) announces `announced` bytes behind a REPLICA header, sends
 * `sent` of them and dies.  The receiver must hold the header back while the bytes are
 * awaited -- nothing in its inbox, not even a LOST: the link stays open -- and then report
 * only the sender's LOST, so a partial copy can never be stored (and later "recovered"
 * as the operand). */
static void bulk_cut_short(size_t announced, size_t sent) {
  dred_net_t srv;
  char ua[DRED_NET_ADDR_MAX];
  uv_pipe_t raw;
  uv_connect_t creq;
  uv_write_t wreq, w2;
  uv_buf_t b[2];
  uint8_t hello[8 + DRED_NET_TOKEN_BYTES], frame[512], *part;
  proto_msg_t m = replica_header(announced);
  size_t flen;
  int one = 1, i;
  signal(SIGPIPE, SIG_IGN); /* as libdred does (lib/engine/signals.c): a reader that closed
                             * the link must fail this test, not kill it */
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  watched = &srv;
  assert_int_equal(dred_net_listen(&srv, sock_path, NULL, ua, NULL), 0);
  hello_of(hello, 1);
  flen = proto_encode(&m, NULL, frame, sizeof frame);
  assert_true(flen > 0);
  part = calloc(1, sent);
  assert_non_null(part);
  uv_pipe_init(&loop, &raw, 0);
  raw_connected = 0;
  lost_peer = -1;
  uv_pipe_connect(&creq, &raw, sock_path, raw_connect_cb);
  pump_until(raw_is_connected, NULL);
  assert_int_equal(raw_connected, 1);
  b[0] = uv_buf_init((char *)hello, sizeof hello);
  assert_int_equal(uv_write(&wreq, (uv_stream_t *)&raw, b, 1, NULL), 0);
  b[0] = uv_buf_init((char *)frame, (unsigned)flen);
  b[1] = uv_buf_init((char *)part, (unsigned)sent);
  assert_int_equal(uv_write(&w2, (uv_stream_t *)&raw, b, 2, NULL), 0);
  for (i = 0; i < 200; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
  assert_true(dred_queue_empty(&srv.inbox));
  uv_close((uv_handle_t *)&raw, raw_close_cb); /* the sender dies */
  pump_until(is_lost, &one);
  assert_int_equal(lost_peer, 1);
  close_all(&srv, NULL);
  free(part);
}

static void bulk_cut_short_is_never_delivered(void **st) {
  (void)st;
  bulk_cut_short(1u << 20, 1u << 19);
}

/* The reader's pieces: a raw writer puts HELLO, a REPLICA header and `len` payload bytes
 * into the socket before the reader's loop runs at all, so a reader handing the kernel
 * the whole rest of the payload would take it in one read, one pass.  With bulk_piece
 * 256 it reads a piece at a time, at most 32 per pass (libuv's uv__read): the copy
 * arrives whole, after at least len / (64 x 256) passes. */
static void bulk_read_in_pieces(void **st) {
  dred_net_t srv;
  char ua[DRED_NET_ADDR_MAX];
  uint8_t hello[8 + DRED_NET_TOKEN_BYTES], frame[512], *data;
  size_t len = 128u << 10, flen, off; /* within any default socket buffer */
  proto_msg_t m = replica_header(len);
  struct sockaddr_un sa;
  int fd, v = 4 << 20, passes = 0;
  (void)st;
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  assert_int_equal(dred_net_listen(&srv, sock_path, NULL, ua, NULL), 0);
  srv.bulk_piece = 256;
  data = malloc(len);
  assert_non_null(data);
  for (off = 0; off < len; off++) data[off] = (uint8_t)(off * 5 + off / 1021);
  hello_of(hello, 1);
  flen = proto_encode(&m, NULL, frame, sizeof frame);
  assert_true(flen > 0);
  fd = socket(AF_UNIX, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v); /* capped by wmem_max */
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  assert_true(strlen(sock_path) < sizeof sa.sun_path);
  memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(write(fd, hello, sizeof hello), (ssize_t)sizeof hello);
  assert_int_equal(write(fd, frame, flen), (ssize_t)flen);
  /* all of it queued now (a blocking write that the socket cannot take would hang: the
   * nonblocking one says so instead) */
  assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
  assert_int_equal(write(fd, data, len), (ssize_t)len);
  while (dred_queue_empty(&srv.inbox) && passes < 4000) {
    uv_run(&loop, UV_RUN_NOWAIT);
    passes++;
  }
  expect_copy(&srv, data, len);
  assert_true((size_t)passes >= len / (64 * 256));
  close(fd);
  close_all(&srv, NULL);
  free(data);
}

/* The reader's side of a copy past 2 GiB: a header announcing 2.5 GiB is taken and its
 * bytes awaited (a length past DRED_NET_BULK_MAX would close the link at once). */
static void bulk_past_2gib_announced(void **st) {
  (void)st;
  bulk_cut_short((size_t)5 << 29, 1u << 20);
}

/* ---- links that never say HELLO ---------------------------------------------------- */

/* A blocking client socket connected to the Unix path or to TCP "tcp:IP:PORT" at `addr`. */
static int raw_dial(const char *addr) {
  int fd;
  if (strncmp(addr, "unix:", 5) == 0) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", addr + 5);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  } else {
    struct sockaddr_in sa;
    const char *colon = strrchr(addr, ':');
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  }
  return fd;
}

/* Has the far end closed `fd` (EOF, or a reset)? */
static int raw_closed(int fd) {
  char c;
  ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
  return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static void pump_ms(int ms) {
  int i;
  for (i = 0; i < ms; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
}

/* stderr into `path` until stderr_back: what the code under test logs, to be counted. */
static int stderr_to(const char *path) {
  int saved, fd;
  fflush(stderr);
  saved = dup(2);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  return saved;
}
static void stderr_back(int saved) {
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
}
static int lines_with(const char *path, const char *needle) {
  char line[2048];
  int n = 0;
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  while (fgets(line, sizeof line, f) != NULL) n += strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

/* 300 links with a wrong token: each refused, but O(log n) lines -- the 1st, 2nd, 4th... */
static void wrong_token_flood_logs_at_powers_of_2(void **st) {
  dred_net_t srv;
  char ua[DRED_NET_ADDR_MAX], log_path[160];
  uint8_t hello[24];
  int i, saved, fd;
  (void)st;
  snprintf(log_path, sizeof log_path, "%s/stderr.log", dir);
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  assert_int_equal(dred_net_listen(&srv, sock_path, NULL, ua, NULL), 0);
  memcpy(hello, "DRHL", 4); /* HELLO_MAGIC, little-endian */
  memset(hello + 4, 0, 4);  /* rank 0... */
  hello[4] = 1;             /* ...1 */
  memcpy(hello + 8, bad_token, DRED_NET_TOKEN_BYTES);
  saved = stderr_to(log_path);
  for (i = 0; i < 300; i++) {
    int j;
    fd = raw_dial(ua);
    assert_int_equal(write(fd, hello, sizeof hello), (ssize_t)sizeof hello);
    for (j = 0; j < 2000 && srv.refused < (uint64_t)i + 1; j++) {
      uv_run(&loop, UV_RUN_NOWAIT);
      if (srv.refused < (uint64_t)i + 1) usleep(100);
    }
    close(fd);
  }
  stderr_back(saved);
  assert_int_equal(srv.refused, 300);
  /* 1, 2, 4, ..., 256: 9 lines for 300 */
  assert_int_equal(lines_with(log_path, "control link refused"), 9);
  assert_int_equal(lines_with(log_path, "300 link(s) refused"), 0);
  assert_int_equal(lines_with(log_path, "256 link(s) refused so far"), 1);
  unlink(log_path);
  close_all(&srv, NULL);
}

/* 50 idle TCP links against a cap of 8 (the floor is twice the 4 ranks): at most 8 wait,
 * the oldest are closed, and a worker of the job still gets in and is heard. */
static void idle_links_beyond_the_cap_are_closed(void **st) {
  dred_net_t srv, w;
  char ua[DRED_NET_ADDR_MAX], ta[DRED_NET_ADDR_MAX];
  proto_msg_t m = ready(0), r;
  int fds[50], i, closed = 0, src = -1;
  (void)st;
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  srv.max_pending = 8;
  assert_int_equal(dred_net_listen(&srv, sock_path, "127.0.0.1", ua, ta), 0);
  for (i = 0; i < 50; i++) {
    fds[i] = raw_dial(ta);
    if (i % 10 == 9) pump_ms(5);
  }
  pump_ms(100);
  assert_true(srv.npending <= 8);
  for (i = 0; i < 50; i++) closed += raw_closed(fds[i]);
  assert_true(closed >= 42);
  assert_true(srv.evicted >= 42);
  assert_int_equal(dred_net_init(&w, &loop, 1, 4, token), 0);
  assert_int_equal(dred_net_connect(&w, 0, ta), 0);
  assert_int_equal(dred_net_send(&w, 0, &m, NULL), 0);
  pump_until(has_message, &srv);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(src, 1);
  for (i = 0; i < 50; i++) close(fds[i]);
  close_all(&srv, &w);
}

/* A link that sends nothing is closed once its HELLO deadline passed; one of the job's,
 * admitted meanwhile, is not. */
static void silent_links_closed_at_the_hello_deadline(void **st) {
  dred_net_t srv, w;
  char ua[DRED_NET_ADDR_MAX], ta[DRED_NET_ADDR_MAX];
  proto_msg_t m = ready(0);
  int fds[3], i, one = 1;
  void *arg[2] = {&srv, &one};
  (void)st;
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  srv.hello_timeout_ms = 200;
  assert_int_equal(dred_net_listen(&srv, sock_path, "127.0.0.1", ua, ta), 0);
  fds[0] = raw_dial(ta);
  fds[1] = raw_dial(ua);
  fds[2] = raw_dial(ta);
  assert_int_equal(dred_net_init(&w, &loop, 1, 4, token), 0);
  assert_int_equal(dred_net_connect(&w, 0, ua), 0);
  assert_int_equal(dred_net_send(&w, 0, &m, NULL), 0);
  pump_ms(50);
  assert_int_equal(srv.npending, 3);
  for (i = 0; i < 3; i++) assert_false(raw_closed(fds[i]));
  pump_ms(400);
  assert_int_equal(srv.npending, 0);
  for (i = 0; i < 3; i++) assert_true(raw_closed(fds[i]));
  assert_true(dred_net_connected(&srv, 1));
  pump_until(admitted, arg);
  for (i = 0; i < 3; i++) close(fds[i]);
  close_all(&srv, &w);
}

/* Descriptors short (the limit the listener believes in lowered so that every new link
 * eats into the reserve): a new link pushes out the oldest waiting one from an earlier turn,
 * and the job's own link still gets in. */
static void short_of_descriptors_the_oldest_waiting_link_goes(void **st) {
  dred_net_t srv, w;
  char ua[DRED_NET_ADDR_MAX], ta[DRED_NET_ADDR_MAX];
  proto_msg_t m = ready(0), r;
  int a, b, src = -1;
  (void)st;
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  assert_int_equal(dred_net_listen(&srv, sock_path, "127.0.0.1", ua, ta), 0);
  srv.fd_limit = 8;
  a = raw_dial(ta);
  pump_ms(20);
  assert_int_equal(srv.npending, 1);
  b = raw_dial(ta);
  pump_ms(20);
  assert_int_equal(srv.npending, 1);
  assert_true(raw_closed(a));
  assert_false(raw_closed(b));
  assert_int_equal(dred_net_init(&w, &loop, 1, 4, token), 0);
  assert_int_equal(dred_net_connect(&w, 0, ta), 0);
  assert_int_equal(dred_net_send(&w, 0, &m, NULL), 0);
  pump_until(has_message, &srv);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(src, 1);
  close(a);
  close(b);
  close_all(&srv, &w);
}

/* No descriptor left: the link this process opens comes back as DRED_NET_NOFD, not as a
 * lost peer, and the peer's address is kept (the next message dials again, and gets in);
 * an accept that finds none is closed (by libuv) without a waiting link left behind, and
 * dred_net_fd_free says none is free.  The soft limit is set to the lowest free
 * descriptor, so the next socket() fails with EMFILE. */
static void out_of_descriptors_is_not_a_lost_peer(void **st) {
  dred_net_t srv, w;
  char ua[DRED_NET_ADDR_MAX];
  proto_msg_t m = ready(0), r;
  struct rlimit saved, low;
  int src = -1, rc = 0, i, probe, raw;
  (void)st;
  assert_int_equal(dred_net_init(&srv, &loop, 0, 4, token), 0);
  assert_int_equal(dred_net_listen(&srv, sock_path, NULL, ua, NULL), 0);
  assert_int_equal(dred_net_init(&w, &loop, 1, 4, token), 0);
  dred_net_set_addr(&w, 0, ua);
  raw = socket(AF_UNIX, SOCK_STREAM, 0); /* made now: it needs no descriptor later */
  assert_true(raw >= 0);
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
  probe = dup(0);
  assert_true(probe >= 0);
  close(probe);
  low = saved;
  low.rlim_cur = (rlim_t)probe;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  rc = dred_net_send(&w, 0, &m, NULL); /* dials: socket() fails */
  for (i = 0; i < 200 && dred_queue_empty(&w.inbox); i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
  {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    assert_true(strlen(sock_path) < sizeof sa.sun_path);
    memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
    assert_int_equal(connect(raw, (struct sockaddr *)&sa, sizeof sa), 0);
  }
  pump_ms(50);
  srv.fd_limit = (int)probe;
  assert_int_equal(dred_net_fd_free(&srv), 0);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
  (void)rc;
  assert_true(w.nofd >= 1);
  assert_int_equal(dred_net_recv(&w, &src, &r), DRED_NET_NOFD);
  assert_int_equal(src, 0);
  /* libuv closed the connection it could not accept (its spare descriptor), unannounced */
  assert_true(raw_closed(raw));
  assert_int_equal(srv.npending, 0);
  /* descriptors back: the next message dials again */
  assert_int_equal(dred_net_send(&w, 0, &m, NULL), 0);
  pump_until(has_message, &srv);
  assert_int_equal(dred_net_recv(&srv, &src, &r), DRED_NET_MSG);
  assert_int_equal(src, 1);
  close(raw);
  close_all(&srv, &w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(unix_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(tcp_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(big_group, setup, teardown),
      cmocka_unit_test_setup_teardown(wrong_token_and_duplicate_rank_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(oversize_frame_closes_the_link, setup, teardown),
      cmocka_unit_test_setup_teardown(peer_close_is_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(drop_draining_delivers_what_was_sent, setup, teardown),
      cmocka_unit_test_setup_teardown(bulk_unix, setup, teardown),
      cmocka_unit_test_setup_teardown(bulk_tcp, setup, teardown),
      cmocka_unit_test_setup_teardown(bulk_in_pieces_unix, setup, teardown),
      cmocka_unit_test_setup_teardown(bulk_in_pieces_tcp, setup, teardown),
      cmocka_unit_test_setup_teardown(bulk_read_in_pieces, setup, teardown),
      cmocka_unit_test_setup_teardown(bulk_past_2gib_sent, setup, teardown),
      cmocka_unit_test_setup_teardown(bulk_past_2gib_announced, setup, teardown),
      cmocka_unit_test_setup_teardown(bulk_cut_short_is_never_delivered, setup, teardown),
      cmocka_unit_test_setup_teardown(send_now_unix, setup, teardown),
      cmocka_unit_test_setup_teardown(send_now_tcp, setup, teardown),
      cmocka_unit_test_setup_teardown(send_now_full_socket_finishes_frames, setup, teardown),
      cmocka_unit_test_setup_teardown(wrong_token_flood_logs_at_powers_of_2, setup, teardown),
      cmocka_unit_test_setup_teardown(idle_links_beyond_the_cap_are_closed, setup, teardown),
      cmocka_unit_test_setup_teardown(silent_links_closed_at_the_hello_deadline, setup, teardown),
      cmocka_unit_test_setup_teardown(short_of_descriptors_the_oldest_waiting_link_goes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(out_of_descriptors_is_not_a_lost_peer, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
