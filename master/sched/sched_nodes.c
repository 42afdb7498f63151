/*
 * sched_nodes.c -- pairing that keeps combines on one node until a node is done.
 *
 * What it is for.  Arrival order alone (sched.c) pairs whichever two buffers are ready
 * first, wherever they are.  When a group spans nodes that makes most tasks cross nodes:
 * on three simulated nodes, 5 of the 7 tasks of a p = 8 reduction read their provider
 * over the network (MPI_Rget), each several times slower than a read from a node peer's
 * shared memory, and three of them lay one after another on the path to the root.  A
 * reduction needs only (nodes - 1) transfers between nodes: combine within each node,
 * then combine the nodes' results.
 *
 * How it works.  For a commutative, non-inline instance whose members span more than one
 * node:
 *   - members are numbered by node (group_t.node_ix, computed once per group from
 *     sched.node_of), and the instance counts per node what may still produce a buffer
 *     there: members not arrived yet and tasks executing there (inst.pend);
 *   - a pass first pairs queued buffers on the same node, in arrival order;
 *   - a buffer then pairs with one on another node only if nothing is pending on its own
 *     node (it is that node's whole contribution so far, and nothing will join it there),
 *     the earliest two such buffers first.
 * So a late member delays only its own node's partial result, never the other nodes',
 * which combine with each other meanwhile; the cost is one combine within its node after
 * it arrives (a shared-memory read) before the cross-node one.
 *
 * Recovery switches it off for the instance (nodes_off): a recovered operand may come
 * back on any node, and the recovery rules (sched_recover.c) are written, and tested,
 * against arrival order.  From then on the instance pairs in arrival order; so do the
 * instances running when a worker is moved to another node (nodes_changed: the master
 * sets nodes once at start, before any reduction, but the rule must not depend on it).  Every
 * pending count is only ever read while the instance is on, so counts left stale by a
 * switch-off do not matter.  Every node's pending count reaches 0 once its members
 * arrived and its tasks ended, so the rule never waits for an event that cannot come.
 */
#include "sched_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  uint32_t node;
  uint32_t member;
} node_member_t;

static int by_node(const void *a, const void *b) {
  const node_member_t *x = a, *y = b;
  if (x->node != y->node) return x->node < y->node ? -1 : 1;
  return x->member < y->member ? -1 : (x->member > y->member);
}

/* Number the group's nodes 0..nnodes-1 (node_ix[k]: member k's).  Redone when
 * sched_set_node changed a node since.  On running out of memory the group counts as one
 * node: arrival order, which is always correct. */
static void group_number_nodes(const sched_t *s, group_t *g) {
  node_member_t *t;
  uint32_t k, ix = 0;
  if (g->node_gen == s->node_gen) return;
  g->node_gen = s->node_gen;
  g->nnodes = 1;
  if (g->node_ix == NULL) g->node_ix = calloc(g->n, sizeof *g->node_ix);
  t = malloc((size_t)g->n * sizeof *t);
  if (g->node_ix == NULL || t == NULL) {
    free(t);
    return;
  }
  for (k = 0; k < g->n; k++) {
    t[k].node = s->node_of[g->workers[k]];
    t[k].member = k;
  }
  qsort(t, g->n, sizeof *t, by_node);
  for (k = 0; k < g->n; k++) {
    if (k > 0 && t[k].node != t[k - 1].node) ix++;
    g->node_ix[t[k].member] = ix;
  }
  g->nnodes = ix + 1;
  free(t);
}

int nodes_inst_init(const sched_t *s, group_t *g, inst_t *in) {
  uint32_t k;
  if (!in->params.commutative || in->params.inl) return 0;
  group_number_nodes(s, g);
  if (g->nnodes < 2) return 0;
  in->pend = calloc(g->nnodes, sizeof *in->pend);
  in->slot = calloc(g->nnodes, sizeof *in->slot);
  if (in->pend == NULL || in->slot == NULL) {
    free(in->pend);
    free(in->slot);
    in->pend = NULL;
    in->slot = NULL;
    return -1;
  }
  for (k = 0; k < g->n; k++) in->pend[g->node_ix[k]]++;
  in->by_node = 1;
  return 0;
}

void nodes_inst_free(inst_t *in) {
  free(in->pend);
  free(in->slot);
}

void nodes_off(inst_t *in) { in->by_node = 0; }

/* Groups renumber their nodes at their next instance; instances running now keep arrival
 * order, since their counts and slots follow the old numbering. */
void nodes_changed(sched_t *s) {
  dred_queue_t *q;
  s->node_gen++;
  DRED_QUEUE_FOREACH(q, &s->inst_list) nodes_off(DRED_QUEUE_DATA(q, inst_t, link));
}

void nodes_count(inst_t *in, uint32_t member, int delta) {
  if (in->by_node) in->pend[in->g->node_ix[member]] += (uint32_t)delta;
}

void nodes_pair(sched_t *s, inst_t *in) {
  dred_queue_t *q, *next;
  const uint32_t *ix = in->g->node_ix;
  msg_t *cross = NULL;
  memset(in->slot, 0, in->g->nnodes * sizeof *in->slot);
  /* Same node first: each buffer waits in its node's slot for the next one there. */
  for (q = in->queue.next; q != &in->queue; q = next) {
    msg_t *a = DRED_QUEUE_DATA(q, msg_t, q), *b = in->slot[ix[a->member]];
    next = q->next; /* neither a nor the earlier b */
    if (b == NULL) {
      in->slot[ix[a->member]] = a;
      continue;
    }
    in->slot[ix[a->member]] = NULL;
    task_dispatch(s, in, b, a);
  }
  /* At most one buffer per node is left: those whose node is done cross, in pairs. */
  for (q = in->queue.next; q != &in->queue; q = next) {
    msg_t *a = DRED_QUEUE_DATA(q, msg_t, q);
    next = q->next;
    if (in->pend[ix[a->member]] != 0) continue;
    if (cross == NULL) {
      cross = a;
      continue;
    }
    task_dispatch(s, in, cross, a);
    cross = NULL;
  }
}
