/*
 * chan.c -- see chan.h.
 */
#include "chan.h"

#include <stdlib.h>
#include <string.h>

#include "../../worker/dred_status.h"
#include "../log.h"

typedef struct {
  dred_queue_t link;
  MPI_Request req;
  int dest;
  size_t len;
  uint8_t data[];
} chan_send_t;

int dred_chan_init(dred_chan_t *c, MPI_Comm comm) {
  memset(c, 0, sizeof *c);
  c->comm = comm;
  dred_queue_init(&c->sends);
  MPI_Comm_size(comm, &c->comm_size);
  c->pending_by_dest = calloc((size_t)c->comm_size, sizeof *c->pending_by_dest);
  if (c->pending_by_dest == NULL) return DRED_ERR_NOMEM;
  c->rcap = 4096;
  c->rbuf = malloc(c->rcap);
  return c->rbuf == NULL ? DRED_ERR_NOMEM : 0;
}

void dred_chan_close(dred_chan_t *c) {
  dred_queue_t *q, *n;
  size_t rounds = c->nsends / DRED_CHAN_TEST_BATCH + 1;
  while (rounds-- > 0) dred_chan_progress(c); /* test every send once */
  DRED_QUEUE_FOREACH_SAFE(q, n, &c->sends) {
    chan_send_t *s = DRED_QUEUE_DATA(q, chan_send_t, link);
    /* Still pending: the peer is gone.  Free the request so MPI forgets it; the buffer
     * must outlive the request, so it is deliberately leaked (a few bytes per dead peer). */
    MPI_Request_free(&s->req);
    dred_queue_remove(q);
  }
  free(c->rbuf);
  c->rbuf = NULL;
  free(c->pending_by_dest);
  c->pending_by_dest = NULL;
}

int dred_chan_send(dred_chan_t *c, int dest, const proto_msg_t *m, const uint32_t *group_workers) {
  size_t cap = PROTO_HEADER + 128;
  chan_send_t *s;

  if (m->type == PROTO_GROUP) cap = PROTO_HEADER + 16 + 4u * (size_t)m->u.group.n;
  s = malloc(sizeof *s + cap);
  if (s == NULL) return DRED_ERR_NOMEM;
  s->len = proto_encode(m, group_workers, s->data, cap);
  if (s->len == 0) {
    DRED_ERROR("cannot encode a %s message (invalid fields)", proto_type_name(m->type));
    free(s);
    return DRED_ERR_INTERNAL;
  }
  s->dest = dest;
  if (MPI_Isend(s->data, (int)s->len, MPI_BYTE, dest, DRED_CHAN_TAG, c->comm, &s->req) !=
      MPI_SUCCESS) {
    DRED_ERROR("MPI_Isend of %s to %d failed", proto_type_name(m->type), dest);
    free(s);
    return DRED_ERR_INTERNAL;
  }
  dred_queue_insert_tail(&c->sends, &s->link);
  c->nsends++;
  if (dest >= 0 && dest < c->comm_size) c->pending_by_dest[dest]++;
  c->sent++;
  return 0;
}

static void chan_retire(dred_chan_t *c, chan_send_t *s) {
  dred_queue_remove(&s->link);
  c->nsends--;
  if (s->dest >= 0 && s->dest < c->comm_size) c->pending_by_dest[s->dest]--;
}

int dred_chan_progress(dred_chan_t *c) {
  dred_queue_t *q, *n;
  int done = 0, flag, tested = 0;
  DRED_QUEUE_FOREACH_SAFE(q, n, &c->sends) {
    chan_send_t *s = DRED_QUEUE_DATA(q, chan_send_t, link);
    if (tested++ == DRED_CHAN_TEST_BATCH) {
      /* next call starts here: make q the head (the sentinel moves just before it) */
      dred_queue_remove(&c->sends);
      c->sends.next = q;
      c->sends.prev = q->prev;
      q->prev->next = &c->sends;
      q->prev = &c->sends;
      break;
    }
    flag = 0;
    MPI_Test(&s->req, &flag, MPI_STATUS_IGNORE);
    if (flag) {
      chan_retire(c, s);
      free(s);
      done++;
    }
  }
  return done;
}

size_t dred_chan_pending_to(const dred_chan_t *c, int dest) {
  return dest >= 0 && dest < c->comm_size ? c->pending_by_dest[dest] : 0;
}

void dred_chan_forget(dred_chan_t *c, int dest) {
  dred_queue_t *q, *n;
  DRED_QUEUE_FOREACH_SAFE(q, n, &c->sends) {
    chan_send_t *s = DRED_QUEUE_DATA(q, chan_send_t, link);
    if (s->dest != dest) continue;
    MPI_Request_free(&s->req); /* buffer leaked on purpose: see dred_chan_close */
    chan_retire(c, s);
  }
}

int dred_chan_recv(dred_chan_t *c, int *src, proto_msg_t *m) {
  MPI_Message msg;
  MPI_Status st;
  int flag = 0, count = 0;

  if (MPI_Improbe(MPI_ANY_SOURCE, DRED_CHAN_TAG, c->comm, &flag, &msg, &st) != MPI_SUCCESS ||
      !flag)
    return 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  if ((size_t)count > c->rcap) {
    uint8_t *nb = realloc(c->rbuf, (size_t)count);
    if (nb == NULL) {
      char sink;
      MPI_Mrecv(&sink, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE); /* truncates; dropped */
      DRED_ERROR("no memory for a %d-byte control message from %d: dropped", count, st.MPI_SOURCE);
      return -1;
    }
    c->rbuf = nb;
    c->rcap = (size_t)count;
  }
  MPI_Mrecv(c->rbuf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
  c->received++;
  *src = st.MPI_SOURCE;
  if (proto_decode(c->rbuf, (size_t)count, m) != 0) {
    DRED_ERROR("malformed %d-byte control message from rank %d: dropped", count, st.MPI_SOURCE);
    return -1;
  }
  return 1;
}
