/*
 * group.h -- communicator -> dred group (group.c): the member list, the group's id, its
 * auto-tag sequence and explicit tags' use counts, and its ring in the meeting place.
 */
#ifndef DRED_GROUP_H
#define DRED_GROUP_H

#include <mpi.h>
#include <stdint.h>

#include "../../common/proto.h"
#include "../../common/queue.h"
#include "../../common/tagseq.h"

struct dred_rt;
struct dred_meet_ring;

typedef struct dred_group {
  dred_queue_t link;  /* rt->groups */
  uint64_t id;
  uint32_t n;
  uint32_t *workers;  /* private-communicator ranks of the members, in comm order */
  int64_t auto_seq;   /* next DRED_TAG_AUTO sequence number (under rt->lock)      */
  dred_tagseq_t tags[PROTO_KINDS]; /* explicit tags' use counts, per kind, for their
                                     * keys (under rt->lock) */
  int defined;        /* GROUP sent to the master (set by the runtime under lock) */
  int spans_nodes;    /* its members are on more than one node                     */
  /* Its ring in the node's meeting place (meetpath.c), looked up at its first auto-tagged
   * reduction: NULL when it spans nodes, is too large, or the table was full. */
  struct dred_meet_ring *meet_ring;
  int meet_looked;
  uint64_t meet_fast_next; /* 1 + the auto seq last decided in the fast lane (lanepath.c) */
  uint32_t lane_nb_open;   /* slots of the ring (bit seq % DRED_MEET_DEPTH) where a nonblocking
                            * call of ours posted in the fast lane is still unresolved:
                            * nothing of ours posts there again until it is (atomic) */
  /* Where this member put an operand too large for its fast-lane post (a bcast root's
   * data, an allreduce member's operand), per slot of the ring: a block of its pool,
   * reused while large enough (the peers' acks say when nobody reads it any more;
   * lanepath.c).  The pool's end frees them. */
  struct {
    char *p;
    int64_t off;
    size_t cap;
  } lane_blk[16];
  /* Its members on other nodes than this process's (bit k: member k, the first 64) and
   * how many are on this one, this process included: fixed for the group's life. */
  uint64_t off_node;
  uint32_t nlocal;
  /* A group spanning nodes: its auto stream's relay ring on this node (relay.c). */
  struct dred_meet_ring *relay_ring;
  int relay_looked;
  /* ... and its auto stream's partial ring (partial.c). */
  struct dred_meet_ring *partial_ring;
  int partial_looked;
} dred_group_t;

/* Resolve `comm` to its group and this process's member rank.  DRED_ERR_ARG (logged)
 * when comm is not derived from dred_comm(). */
int dred_group_of(struct dred_rt *rt, MPI_Comm comm, dred_group_t **g, int *member);
/* dred's communicator attribute's delete callback, and what it does: forget every
 * thread's cached lookup (dred_finalize calls it too). */
int dred_group_attr_delete(MPI_Comm comm, int keyval, void *val, void *extra);
void dred_group_forget(void);
void dred_groups_free(struct dred_rt *rt);
/* May worker `src` send this process a copy of `member`'s operand in group `id`?  NULL
 * when it may, or when this process does not know the group yet (its application has not
 * reduced on it: nothing to judge by, so the header's own checks must do); else why not
 * (only a member's own process sends its copies, and only to the holders common/placement.h
 * names for it). */
const char *dred_group_copy_refused(struct dred_rt *rt, uint64_t id, uint32_t member, int src);

#endif /* DRED_GROUP_H */
