/*
 * group.c -- from an application communicator to a dred group.
 *
 * A dred group is the ordered list of its members' ranks in dred's private communicator;
 * its id is a hash of that list (proto_group_id), so every member computes the same id
 * without talking to anyone.  The result is cached on the communicator as an MPI
 * attribute, so only the first reduction on a communicator pays for the rank translation.
 * Groups live in rt->groups until dred_finalize; communicators with the same member list
 * share one group (and one DRED_TAG_AUTO sequence).
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/placement.h"
#include "group.h"
#include "runtime.h"

static dred_group_t *group_find_or_add(dred_rt_t *rt, uint64_t id, uint32_t n,
                                       uint32_t *workers) {
  dred_queue_t *q;
  dred_group_t *g;
  DRED_QUEUE_FOREACH(q, &rt->groups) {
    g = DRED_QUEUE_DATA(q, dred_group_t, link);
    if (g->id == id && g->n == n && memcmp(g->workers, workers, n * sizeof *workers) == 0) {
      free(workers);
      return g;
    }
  }
  if ((g = calloc(1, sizeof *g)) == NULL) {
    free(workers);
    return NULL;
  }
  g->id = id;
  g->n = n;
  g->workers = workers;
  g->spans_nodes = !dred_place_one_node(n, workers, rt->boot.node_of);
  {
    uint32_t k, mine = rt->boot.node_of[rt->world_rank];
    for (k = 0; k < n; k++) {
      if (rt->boot.node_of[workers[k]] == mine)
        g->nlocal++;
      else if (k < 64)
        g->off_node |= (uint64_t)1 << k;
    }
  }
  dred_queue_insert_tail(&rt->groups, &g->link);
  return g;
}

/* The last communicator each thread looked up, with its group and our rank in it.  A
 * communicator's group never changes while it lives, and every communicator this cache
 * can hold carries dred's attribute, whose delete callback (MPI_Comm_free, dred_finalize)
 * moves the generation: a freed handle that MPI hands out again is never taken for the
 * old one.  Small collectives call thousands of times a second on one communicator. */
static uint64_t group_gen = 1;
static __thread struct {
  MPI_Comm comm;
  uint64_t gen;
  dred_group_t *g;
  int member;
} last;

void dred_group_forget(void) { __atomic_add_fetch(&group_gen, 1, __ATOMIC_ACQ_REL); }

int dred_group_attr_delete(MPI_Comm comm, int keyval, void *val, void *extra) {
  (void)comm, (void)keyval, (void)val, (void)extra;
  dred_group_forget();
  return MPI_SUCCESS;
}

int dred_group_of(dred_rt_t *rt, MPI_Comm comm, dred_group_t **out, int *member) {
  int flag = 0, inter = 0, n = 0, i, result;
  uint64_t gen = __atomic_load_n(&group_gen, __ATOMIC_ACQUIRE);
  void *val = NULL;
  MPI_Group cg, pg;
  int *in, *outr;
  uint32_t *workers;
  dred_group_t *g;

  if (comm == MPI_COMM_NULL) {
    DRED_ERROR("communicator is MPI_COMM_NULL");
    return DRED_ERR_ARG;
  }
  if (last.gen == gen && last.comm == comm) {
    *out = last.g;
    *member = last.member;
    return DRED_OK;
  }
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
    DRED_ERROR("communicator is an intercommunicator (not derived from dred_comm())");
    return DRED_ERR_ARG;
  }
  MPI_Comm_rank(comm, member);
  if (MPI_Comm_get_attr(comm, rt->comm_keyval, &val, &flag) == MPI_SUCCESS && flag) {
    *out = val;
    last.comm = comm;
    last.g = val;
    last.member = *member;
    last.gen = gen; /* read before the attribute: a free since then leaves it stale */
    return DRED_OK;
  }
  MPI_Comm_compare(comm, MPI_COMM_SELF, &result);
  if (result == MPI_IDENT) {
    DRED_ERROR("communicator is MPI_COMM_SELF, not derived from dred_comm()");
    return DRED_ERR_ARG;
  }
  MPI_Comm_size(comm, &n);
  MPI_Comm_group(comm, &cg);
  MPI_Comm_group(rt->priv, &pg);
  in = malloc(sizeof(int) * (size_t)n);
  outr = malloc(sizeof(int) * (size_t)n);
  workers = malloc(sizeof(uint32_t) * (size_t)n);
  if (in == NULL || outr == NULL || workers == NULL) {
    free(in), free(outr), free(workers);
    MPI_Group_free(&cg), MPI_Group_free(&pg);
    return DRED_ERR_NOMEM;
  }
  for (i = 0; i < n; i++) in[i] = i;
  MPI_Group_translate_ranks(cg, n, in, pg, outr);
  MPI_Group_free(&cg);
  MPI_Group_free(&pg);
  for (i = 0; i < n; i++) {
    int r = outr[i] == MPI_UNDEFINED ? -1 : dred_boot_job_rank(&rt->boot, outr[i]);
    if (r <= 0) {
      DRED_ERROR("communicator member %d is %s: the communicator is not derived from dred_comm()",
                 i, r == 0 ? "dred-master" : "outside the job");
      free(in), free(outr), free(workers);
      return DRED_ERR_ARG;
    }
    workers[i] = (uint32_t)r;
  }
  free(in);
  free(outr);
  uv_mutex_lock(&rt->lock);
  g = group_find_or_add(rt, proto_group_id((uint32_t)n, workers), (uint32_t)n, workers);
  uv_mutex_unlock(&rt->lock);
  if (g == NULL) return DRED_ERR_NOMEM;
  MPI_Comm_set_attr(comm, rt->comm_keyval, g);
  *out = g;
  return DRED_OK;
}

const char *dred_group_copy_refused(dred_rt_t *rt, uint64_t id, uint32_t member, int src) {
  const char *why = NULL;
  dred_queue_t *q;
  uv_mutex_lock(&rt->lock);
  DRED_QUEUE_FOREACH(q, &rt->groups) {
    dred_group_t *g = DRED_QUEUE_DATA(q, dred_group_t, link);
    uint32_t i, c;
    if (g->id != id) continue;
    if (member >= g->n) {
      why = "no such member in the group";
    } else if (g->workers[member] != (uint32_t)src) {
      why = "the sender is not that member's process";
    } else {
      why = "this process is not one of that member's replica holders";
      for (i = 0; i + 1 < g->n; i++) {
        c = dred_place_nth(g->n, g->workers, rt->boot.node_of, member, i);
        if (c < g->n && g->workers[c] == (uint32_t)rt->world_rank) {
          why = NULL;
          break;
        }
      }
    }
    break;
  }
  uv_mutex_unlock(&rt->lock);
  return why;
}

void dred_groups_free(dred_rt_t *rt) {
  dred_queue_t *q, *n;
  unsigned k;
  dred_group_forget(); /* no thread may find a freed group in its cache */
  DRED_QUEUE_FOREACH_SAFE(q, n, &rt->groups) {
    dred_group_t *g = DRED_QUEUE_DATA(q, dred_group_t, link);
    dred_queue_remove(q);
    free(g->workers);
    for (k = 0; k < PROTO_KINDS; k++) dred_tagseq_free(&g->tags[k]);
    free(g);
  }
}
