/*
 * chan.h -- the control channel: proto messages over dred's private communicator.
 *
 * Sends are nonblocking: each message is encoded into its own buffer, posted with
 * MPI_Isend and kept on a list until MPI_Test says it is done, so neither the master nor a
 * worker ever blocks on a slow (or dead) peer.  Receives use MPI_Improbe/MPI_Mrecv, which
 * match a message and take it in one step, safe with other threads using MPI.
 * Used only from the thread that owns dred's MPI traffic.
 */
#ifndef DRED_CHAN_H
#define DRED_CHAN_H

#include <mpi.h>
#include <stdint.h>

#include "../proto.h"
#include "../queue.h"

#define DRED_CHAN_TAG 7
#define DRED_CHAN_DATA_TAG 8 /* replica payloads, worker to worker */

typedef struct {
  MPI_Comm comm;
  dred_queue_t sends; /* in-flight sends */
  size_t nsends;
  size_t *pending_by_dest; /* in-flight sends per rank of comm: O(1) dred_chan_pending_to */
  int comm_size;
  uint8_t *rbuf;
  size_t rcap;
  uint64_t sent, received; /* statistics */
} dred_chan_t;

int dred_chan_init(dred_chan_t *c, MPI_Comm comm);
/* Frees buffers of completed sends; sends still pending (to a dead peer) are abandoned. */
void dred_chan_close(dred_chan_t *c);

/* Encode and post.  Returns 0 or a DRED_ERR_* (logged). */
int dred_chan_send(dred_chan_t *c, int dest, const proto_msg_t *m, const uint32_t *group_workers);

/* Retire completed sends; returns how many completed.  Tests at most DRED_CHAN_TEST_BATCH
 * sends per call, round robin, so one call stays short with thousands in flight. */
#define DRED_CHAN_TEST_BATCH 256
int dred_chan_progress(dred_chan_t *c);

/* Sends to `dest` still pending. */
size_t dred_chan_pending_to(const dred_chan_t *c, int dest);

/* Abandon every pending send to `dest` (a peer declared dead): its requests are freed with
 * MPI_Request_free so they no longer count as pending. */
void dred_chan_forget(dred_chan_t *c, int dest);

/* Receive one message if one is waiting.  Returns 1 and fills *src and *m (group member lists
 * point into the channel's buffer, valid until the next recv), 0 if none, or -1 for a
 * malformed message (logged and dropped). */
int dred_chan_recv(dred_chan_t *c, int *src, proto_msg_t *m);

#endif /* DRED_CHAN_H */
