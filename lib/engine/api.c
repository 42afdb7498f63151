/*
 * api.c -- libdred's public functions (dred.h).
 *
 * Everything a caller can get wrong is checked here, at the top, before any state
 * changes: a bad call returns a status and logs why, and never touches reductions in
 * flight.  A good call builds an instance and hands it to the runtime thread (runtime.c)
 * through a locked queue, then kicks the thread awake; the caller gets a future at once.
 */
#include <signal.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/deathwatch.h"
#include "../../common/log.h"
#include "../../common/mpi/boot.h"
#include "../../common/settings.h"
#include "../../common/status.h"
#include "../../common/watchdog.h"
#include "../mpi/dataplane.h"
#include "../mpi/nodemem.h"
#include "../paths/lanepath.h"
#include "../paths/meetpath.h"
#include "../paths/offnode.h"
#include "../paths/relay.h"
#include "admit.h"
#include "api.h"
#include "future.h"
#include "group.h"
#include "inst.h"
#include "lifetime.h"
#include "mem.h"
#include "robust.h"
#include "runtime.h"
#include "signals.h"
#include "typecheck.h"

enum { API_UNINIT = 0, API_RUNNING, API_FINALIZED };

static dred_rt_t *g_rt;
static int g_state = API_UNINIT;

const char *dred_strerror(int status) { return dred_status_str(status); }

/* Is the library usable right now?  Returns DRED_OK or the status to give the caller. */
static int api_check(const char *fn) {
  if (g_state == API_UNINIT) {
    DRED_ERROR("%s called before dred_init()", fn);
    return DRED_ERR_ARG;
  }
  if (g_state == API_FINALIZED) {
    DRED_ERROR("%s called after dred_finalize()", fn);
    return DRED_ERR_SHUTDOWN;
  }
  return DRED_OK;
}

dred_rt_t *dred_api_rt(const char *fn, int *rc) {
  if ((*rc = api_check(fn)) != DRED_OK) return NULL;
  return g_rt;
}

MPI_Comm dred_comm(void) { return g_state == API_RUNNING ? g_rt->comm : MPI_COMM_NULL; }

/* On dred-master's node, map its death-watch file (common/deathwatch.h; made before the
 * start-up exchange, unlinked after the agreement that follows it).  Without it the master
 * still learns of our death, only later: by our control link closing. */
static void watch_attach(dred_rt_t *rt) {
  if (!rt->cfg.death_watch || rt->boot.node_of[rt->world_rank] != rt->boot.node_of[0] ||
      rt->boot.watch[0] == '\0')
    return;
  if (dred_watch_attach(rt->boot.watch, &rt->watch) != DRED_OK) rt->watch = NULL;
}

/* DRED_TEST_START_PAUSE_MS (a test hook): a start-up that lasts at least this long, so
 * that tests/tools/test-launch.sh's stops and kills land inside it on any machine. */
static void test_start_pause(void) {
  uint64_t ms = dred_setting_u64(DRED_S_TEST_START_PAUSE_MS); /* at most 600000 */
  if (ms == 0) return;
  DRED_WARN("DRED_TEST_START_PAUSE_MS: start-up pauses %llu ms (a test hook)", (unsigned long long)ms);
  uv_sleep((unsigned int)ms);
}

int dred_init(int *argc, char ***argv) {
  int inited = 0, provided = 0, rc, flag = 0, *appnum = NULL, external, thread_ok;
  dred_rt_t *rt;

  if (g_state == API_RUNNING) {
    DRED_ERROR("dred_init called twice");
    return DRED_ERR_ARG;
  }
  if (g_state == API_FINALIZED) {
    DRED_ERROR("dred_init after dred_finalize is not supported");
    return DRED_ERR_SHUTDOWN;
  }
  /* PMPI names: libdred-mpi.so (interpose/) defines MPI_Init_thread and MPI_Query_thread
   * in front of MPI; dred asks MPI itself. */
  MPI_Initialized(&inited);
  if (!inited) {
    if (PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
      DRED_ERROR("MPI_Init_thread failed");
      return DRED_ERR_INTERNAL;
    }
  } else {
    PMPI_Query_thread(&provided);
  }
  if ((rt = calloc(1, sizeof *rt)) == NULL) return DRED_ERR_NOMEM;
  rt->robust = dred_robust_layer(); /* the one place the engine names the robust layer */
  rt->mpi_inited_by_us = !inited;
  MPI_Comm_rank(MPI_COMM_WORLD, &rt->world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &rt->world_size);
  /* A master outside the job (common/mpi/boot.h): our job rank is our world rank + 1. */
  external = dred_setting_raw(DRED_S_MASTER_ADDR) != NULL;
  dred_log_setup("worker", rt->world_rank + external);
  /* Too low a thread level is refused in the start-up handshake below, not here: the
   * master and every other process are already on their way into it, and a process that
   * left now would keep them there until DRED_START_TIMEOUT_S.  Start-up itself makes
   * MPI calls from this thread only. */
  thread_ok = provided >= MPI_THREAD_MULTIPLE;
  /* Otherwise rank 0 must be dred-master, launched as the first MPMD program (appnum 0). */
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
  if (external && flag && *appnum > 0) {
    /* An MPMD job (dred-master is program 0) with a master's address left in the
     * environment, say from an enclosing job: the job's own master wins.  Every process of
     * the job sees the same, so all take the same path. */
    external = 0;
    dred_log_setup("worker", rt->world_rank);
    DRED_WARN("DRED_MASTER_ADDR is set but this is an MPMD job with dred-master as rank 0: "
              "ignoring DRED_MASTER_ADDR");
    unsetenv("DRED_MASTER_ADDR");
  }
  if (!external && (rt->world_rank == 0 || rt->world_size < 2 || (flag && *appnum == 0))) {
    DRED_ERROR("no dred-master at rank 0: launch with `dredrun -n P app` "
               "(mpiexec -n 1 dred-master : -n P app)");
    free(rt);
    return DRED_ERR_ARG;
  }
  dred_config_load(&rt->cfg);
  dred_signals_init(); /* SIGUSR1/SIGPIPE survived, SIGTERM/INT/HUP tidy up (signals.c) */

  /* The same start-up runs in dred-master (common/mpi/boot.c). */
  if (uv_loop_init(&rt->loop) != 0) return DRED_ERR_INTERNAL;
  if ((rc = dred_boot_start(&rt->boot, 0, &rt->net, &rt->loop)) != DRED_OK) return rc;
  rt->priv = rt->boot.priv;
  rt->comm = rt->boot.comm;
  rt->world_rank = rt->boot.rank; /* job ranks from here on (boot.h) */
  rt->world_size = rt->boot.size;
  /* The start-of-job handshake (common/mpi/boot.h): the master's verdict on its own
   * settings and the job id, then every process's verdict on its own.  Nobody goes on
   * unless all agree, so a refusal anywhere is a status here, never a hang. */
  {
    dred_jobinit_t ji;
    char why[256];
    int mine = DRED_OK, who = 0, agreed;
    memset(&ji, 0, sizeof ji);
    if (rt->boot.external) {
      if (dred_boot_join(&rt->boot, &rt->net, &rt->loop, rt->cfg.master_timeout_ms, &ji) != DRED_OK) {
        ji.status = DRED_ERR_INTERNAL;
        snprintf(ji.reason, sizeof ji.reason, "the start-up exchange with dred-master failed");
      }
    } else if (dred_jobinit_exchange(rt->priv, &ji) != MPI_SUCCESS) {
      ji.status = DRED_ERR_INTERNAL;
      snprintf(ji.reason, sizeof ji.reason, "the start-up exchange with dred-master failed");
    }
    if (ji.status != DRED_OK) {
      mine = ji.status;
      DRED_ERROR("dred_init: dred-master refused to start the job: %s", ji.reason);
    } else if (!thread_ok) {
      mine = DRED_ERR_ARG;
      DRED_ERROR("MPI was initialised without MPI_THREAD_MULTIPLE; dred needs it "
                 "(call MPI_Init_thread with MPI_THREAD_MULTIPLE, or let dred_init do it)");
    } else if (dred_config_check(&rt->cfg, DRED_CONFIG_WORKER, ji.heartbeat_ms, why,
                                 sizeof why) != 0) {
      mine = DRED_ERR_ARG;
      DRED_ERROR("dred_init: %s", why);
    } else {
      snprintf(rt->job_id, sizeof rt->job_id, "%s", ji.job_id);
      mine = rt->robust->open(rt);
      watch_attach(rt);
    }
    agreed = dred_jobinit_agree(rt->priv, mine, &who);
    if (agreed != DRED_OK) {
      if (mine == DRED_OK)
        DRED_ERROR("dred_init: %s could not start (%s; its log says why): the job cannot run",
                   who == 0 && !rt->boot.external ? "dred-master" : "another process",
                   dred_strerror(agreed));
      rt->robust->close(rt);
      rt->robust->destroy(rt);
      dred_watch_close(rt->watch);
      dred_net_close(&rt->net);
      uv_run(&rt->loop, UV_RUN_NOWAIT); /* the close callbacks free the links */
      dred_boot_finish(&rt->boot);
      /* priv is left allocated: freeing it is collective and the master is leaving. */
      free(rt);
      return mine != DRED_OK ? mine : agreed;
    }
  }
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, dred_group_attr_delete, &rt->comm_keyval, NULL);
  test_start_pause();
  if ((rc = dred_dp_init(rt)) != DRED_OK) return rc;
  if ((rc = rt->robust->init(rt)) != DRED_OK) return rc;
  /* Set up: a master outside the job pings us from now on (the runtime thread next). */
  if ((rc = dred_boot_up(&rt->boot, &rt->net)) != DRED_OK) return rc;
  if ((rc = dred_rt_start(rt)) != DRED_OK) return rc;
  g_rt = rt;
  g_state = API_RUNNING;
  dred_boot_tell_launcher(); /* a death from now on is one the job survives */
  DRED_INFO("dred ready: %d workers, pool %zu MiB, chunk %zu KiB, dred-master %s",
            rt->world_size - 1, rt->pool_size >> 20, rt->chunk_bytes >> 10,
            rt->boot.external ? "outside the job" : "rank 0");
  return DRED_OK;
}

/* The collective part of shutdown (window frees, MPI_Finalize) hangs forever if a process
 * dies while it runs -- MPICH cannot complete a collective with a dead member.  A watchdog
 * (common/watchdog.h) bounds it: after DRED_FINALIZE_TIMEOUT_S the process says why and
 * exits. */
static void finalize_timed_out(void *arg) {
  const dred_rt_t *rt = arg;
  DRED_ERROR("dred_finalize: the collective MPI shutdown did not finish in %llu s -- a process "
             "probably died during it; exiting (status 70)",
             (unsigned long long)rt->cfg.finalize_timeout_s);
  _exit(70);
}

int dred_finalize(void) {
  dred_rt_t *rt = g_rt;
  int rc, status;

  if ((rc = api_check("dred_finalize")) != DRED_OK) return rc;
  /* Two waits, bounded differently.  This process's pending reductions get
   * DRED_FINALIZE_WAIT_S, then are abandoned (runtime.c).  Then BYE, and the wait for
   * SHUTDOWN, which comes once every member said BYE: unbounded, because members may
   * finalize in any order and at any spacing, and meanwhile the master and this process
   * keep watching each other (a real failure still ends the wait).  Only the collective
   * MPI part after SHUTDOWN is bounded by DRED_FINALIZE_TIMEOUT_S (the watchdog below). */
  uv_mutex_lock(&rt->lock);
  rt->bye_requested = 1;
  rt->finalize_deadline_ns =
      rt->cfg.finalize_wait_s > 0 ? uv_hrtime() + rt->cfg.finalize_wait_s * 1000000000ull : 0;
  uv_mutex_unlock(&rt->lock);
  uv_async_send(&rt->wake);
  dred_rt_stop(rt); /* returns after SHUTDOWN, or once the master is declared lost */
  g_state = API_FINALIZED;
  rt->robust->close(rt);
  status = rt->dead ? rt->dead_status : rt->nfailed > 0 ? DRED_ERR_PROC_FAILED : DRED_OK;
  if (status != DRED_OK) {
    /* Collective frees and MPI_Finalize hang once a process died (docs/design.md, Fault
     * model). */
    DRED_ERROR("dred_finalize: %s; skipped the collective shutdown: exit without MPI_Finalize",
               rt->dead ? dred_strerror(status) : "a worker failed during the job");
    dred_dp_finalize(rt, 0);
    return status;
  }
  {
    dred_watchdog_t watchdog;
    (void)dred_watchdog_start(&watchdog, rt->cfg.finalize_timeout_s * 1000000000ull,
                              finalize_timed_out, rt);
    dred_dp_finalize(rt, 1); /* node-local: the pool's shared window, the node comm */
    MPI_Comm_free_keyval(&rt->comm_keyval);
    dred_groups_free(rt);
    uv_cond_destroy(&rt->handover_cv);
    uv_mutex_destroy(&rt->lock);
    /* In step with dred-master (common/mpi/boot.c): dwin, dred_comm, priv, MPI_Finalize
     * (only if dred_init started MPI: otherwise the application finalizes). */
    dred_boot_teardown(&rt->boot, &rt->dwin, rt->mpi_inited_by_us);
    rt->comm = rt->priv = MPI_COMM_NULL;
    dred_watchdog_stop(&watchdog);
  }
  rc = rt->cut_short > 0 ? DRED_ERR_TIMEOUT : DRED_OK;
  rt->robust->destroy(rt);
  free(rt);
  g_rt = NULL;
  dred_rt_inst_drop_spare(); /* the memory kept for the next call's */
  dred_future_drop_spare();
  return rc;
}

/* Frees an instance nobody else has seen: its operand copy, pool reservation, holds. */
static void inst_discard(dred_rt_t *rt, dred_inst_t *in) {
  dred_nodemem_give(rt, in->node_bytes);
  dred_meetpath_unprepare(rt, in);
  dred_relay_unprepare(rt, in);
  dred_lifetime_release(in->op, in->type, in->held);
  dred_admit_release(rt, in); /* its pool reservation, or the copy waiting for one */
  if (in->acc != NULL && !in->acc_is_app && !(in->is_root && in->acc == in->recvbuf))
    dred_dp_buf_free(rt, in->bytes, in->acc, in->pool_off, in->acc_malloced);
  dred_mem_unref(rt, in->app_blk); /* the application's block: never ours to free */
  if (in->type_hold != MPI_DATATYPE_NULL) PMPI_Type_free(&in->type_hold); /* our own dup */
  dred_future_free(in->fut);
  dred_future_free(in->fut); /* both references: nobody else saw it */
  dred_rt_inst_free(in);
}

/* Why this process cannot take part in a call right now, from its own state rather than
 * from the call's arguments: DRED_OK, or the status every member's collective ends with.
 * Under rt->lock. */
static int state_refusal(dred_rt_t *rt, const char *fn) {
  if (rt->ninst - rt->nrefused + rt->entering >= rt->cfg.max_inflight) {
    uint64_t n = ++rt->cap_refused;
    if (dred_log_due(n))
      DRED_ERROR("%s: %zu collectives already in flight on this process "
                 "(DRED_MAX_INFLIGHT=%llu): refused, and this one ends DRED_ERR_NOMEM on "
                 "every member (%llu call(s) refused so far; logged at powers of 2)", fn,
                 rt->ninst - rt->nrefused, (unsigned long long)rt->cfg.max_inflight,
                 (unsigned long long)n);
    return DRED_ERR_NOMEM;
  }
  return DRED_OK;
}

/* Takes `in`'s operand from the node's memory budget (nodemem.c): the node's reductions in
 * flight, every process's together, may hold at most DRED_NODE_MEM_MB (default: physical
 * memory).  DRED_OK, or DRED_ERR_NOMEM logged (at powers of 2).  Under rt->lock. */
static int node_budget_take(dred_rt_t *rt, const char *fn, dred_inst_t *in) {
  uint64_t held = 0, n;
  if (in->bytes == 0 || dred_nodemem_take(rt, in->bytes, &held) == 0) {
    in->node_bytes = in->bytes;
    return DRED_OK;
  }
  n = ++rt->cap_refused;
  if (dred_log_due(n))
    DRED_ERROR("%s: %zu bytes would take this node's collectives in flight to %llu bytes, "
               "over DRED_NODE_MEM_MB's %llu: refused, and this one ends DRED_ERR_NOMEM on "
               "every member (%llu call(s) refused so far; logged at powers of 2)", fn, in->bytes, (unsigned long long)(held + in->bytes),
               (unsigned long long)rt->nodemem_limit, (unsigned long long)n);
  return DRED_ERR_NOMEM;
}

/* Takes the call's turn on its communicator: the k-th call with DRED_TAG_AUTO is the
 * group's k-th auto-tagged collective everywhere, whatever its kind (MPI orders a
 * communicator's collectives; members that disagree on the kind end with MISMATCH), the
 * k-th use of an explicit tag by one kind its k-th use everywhere (explicit tags are per
 * kind: common/proto.h, proto_key_kind).  Every call that got this far takes its turn,
 * refused or not -- that is what keeps the members' sequences in step when a limit is hit
 * on some of them only.  Under rt->lock.  Sets *key; may set *refuse (a tag still in
 * flight here).  Returns DRED_OK, or DRED_ERR_NOMEM when the tag's use count could not
 * grow (no turn taken). */
static int take_turn(dred_rt_t *rt, const char *fn, dred_group_t *g, int kind, int tag,
                     int64_t *key, int *refuse) {
  uint32_t uses;
  if (tag == DRED_TAG_AUTO) {
    *key = proto_key_auto(g->auto_seq);
    g->auto_seq++;
    return DRED_OK;
  }
  /* the key names this use of the tag (common/proto.h); the previous use is the one that
   * may still be in flight */
  uses = dred_tagseq_uses(&g->tags[kind], tag);
  if (dred_tagseq_bump(&g->tags[kind], tag) != DRED_OK) {
    DRED_ERROR("%s: no memory to count the uses of tag %d", fn, tag);
    return DRED_ERR_NOMEM;
  }
  if (*refuse == DRED_OK && uses > 0 &&
      dred_rt_find(rt, g->id, proto_key_kind(tag, uses - 1, (uint32_t)kind)) != NULL) {
    DRED_ERROR("%s: tag %d is already in flight on this communicator: refused, and "
               "this use of it ends DRED_ERR_ARG on every member", fn, tag);
    *refuse = DRED_ERR_ARG;
  }
  *key = proto_key_kind(tag, uses, (uint32_t)kind);
  return DRED_OK;
}

/* One call of any kind, as the caller made it (the front half below is shared). */
typedef struct {
  int kind;        /* PROTO_KIND_* */
  const char *fn;  /* the public function, for the log */
  const void *sendbuf;
  void *recvbuf;
  int count;
  MPI_Datatype type;
  MPI_Op op;       /* MPI_OP_NULL for a bcast */
  int root;        /* 0 for an allreduce */
  int blocking;    /* dred_reduce, dred_allreduce, dred_bcast: waits before returning */
} call_t;

/* Checks that need no group: the future pointer, the library's state, count and tag; then
 * the group of `comm` and this process's member number in it.  DRED_OK or the caller's
 * status (logged). */
static int call_args(const call_t *c, MPI_Comm comm, int tag, dred_future **future,
                     dred_group_t **g, int *member) {
  int rc;
  if (future == NULL) {
    DRED_ERROR("%s: future pointer is NULL", c->fn);
    return DRED_ERR_ARG;
  }
  *future = NULL;
  if ((rc = api_check(c->fn)) != DRED_OK) return rc;
  if (c->count < 0) {
    DRED_ERROR("%s: negative count %d", c->fn, c->count);
    return DRED_ERR_ARG;
  }
  if (tag < DRED_TAG_AUTO) {
    DRED_ERROR("%s: tag %d is negative (use >= 0 or DRED_TAG_AUTO)", c->fn, tag);
    return DRED_ERR_ARG;
  }
  return dred_group_of(g_rt, comm, g, member);
}

/* An operand and a result that share memory: MPI forbids it (MPI_IN_PLACE is the way to
 * reduce in place), and dred would read operand bytes the result already overwrote -- a
 * wrong answer with no error.  Checked where recvbuf is written: at a reduce's root and at
 * every allreduce member.  A contiguous type's buffers are the byte ranges they span; a
 * type with holes is packed, or copied as an image, and its result unpacked, so two
 * buffers may interleave through the holes without sharing a byte (a matrix's columns):
 * there the typemaps' bytes are compared (dred_typemap_shared), once the spans meet. */
static int call_disjoint(const call_t *c, const dred_typeinfo_t *ti, int member, uint64_t bytes) {
  uintptr_t s = (uintptr_t)c->sendbuf, r = (uintptr_t)c->recvbuf;
  int64_t shared;
  /* (a NULL buffer here is MPI_BOTTOM: call_check) */
  if (c->kind == PROTO_KIND_BCAST || bytes == 0 || c->sendbuf == MPI_IN_PLACE ||
      (c->kind == PROTO_KIND_REDUCE && member != c->root))
    return DRED_OK;
  if (s == r) {
    DRED_ERROR("%s: sendbuf and recvbuf are the same buffer: pass MPI_IN_PLACE as sendbuf "
               "to reduce in place", c->fn);
    return DRED_ERR_ARG;
  }
  if (ti->layout == DRED_LAYOUT_DIRECT && s < r + bytes && r < s + bytes) {
    DRED_ERROR("%s: sendbuf and recvbuf overlap (%llu of their %llu bytes; MPI requires "
               "them disjoint): pass MPI_IN_PLACE as sendbuf to reduce in place", c->fn,
               (unsigned long long)(s < r ? s + bytes - r : r + bytes - s),
               (unsigned long long)bytes);
    return DRED_ERR_ARG;
  }
  if (ti->layout != DRED_LAYOUT_DIRECT &&
      (shared = dred_typemap_shared(c->sendbuf, c->recvbuf, c->count, c->type, ti)) > 0) {
    DRED_ERROR("%s: sendbuf and recvbuf share %lld bytes of their datatype's elements (MPI "
               "requires them disjoint): pass MPI_IN_PLACE as sendbuf to reduce in place",
               c->fn, (long long)shared);
    return DRED_ERR_ARG;
  }
  return DRED_OK;
}

/* A NULL buffer is MPI_BOTTOM: the datatype then locates its data by absolute addresses
 * (MPI_Get_address), as in MPI, where this is the way to reduce or broadcast variables
 * that lie apart (say a common block and a heap array) in one call.  Such a type has a
 * true lower bound past the zero page, and lays out as PACKED or IMAGE (typecheck.c),
 * whose copies go through MPI_Pack/MPI_Unpack or from the true lower bound, never through
 * the NULL pointer itself.  A NULL buffer whose data would start in the zero page is a
 * missing buffer.  1 if `what` may be NULL; else 0, logged. */
static int bottom_ok(const call_t *c, const dred_typeinfo_t *ti, const char *what) {
  if (ti->true_lb >= DRED_BOTTOM_MIN && ti->layout != DRED_LAYOUT_DIRECT) return 1;
  DRED_ERROR("%s: %s is NULL%s", c->fn, what,
             ti->true_lb != 0 ? " (MPI_BOTTOM), and its datatype's data would start below "
                                "any address a process maps"
                              : "");
  return 0;
}

/* The caller's arguments, checked against the group (bad ones take no turn).  Fills *ti,
 * *bytes and *is_root.  DRED_OK or DRED_ERR_ARG (logged). */
static int call_check(const call_t *c, const dred_group_t *g, int member, int inline_max,
                      dred_typeinfo_t *ti, uint64_t *bytes, int *inl, int *is_root) {
  int rc;
  if (c->root < 0 || (uint32_t)c->root >= g->n) {
    DRED_ERROR("%s: root %d out of range for a communicator of %u", c->fn, c->root, g->n);
    return DRED_ERR_ARG;
  }
  rc = c->kind == PROTO_KIND_BCAST ? dred_typecheck_bcast(c->type, ti)
                                   : dred_typecheck(c->type, c->op, ti);
  if (rc != DRED_OK) return rc;
  if (c->kind == PROTO_KIND_REDUCE && c->sendbuf == MPI_IN_PLACE && member != c->root) {
    DRED_ERROR("%s: MPI_IN_PLACE is allowed only at the root", c->fn);
    return DRED_ERR_ARG;
  }
  if (c->count > 0 && c->kind == PROTO_KIND_BCAST) { /* one buffer, `recvbuf` here */
    if (c->recvbuf == NULL && !bottom_ok(c, ti, "buffer")) return DRED_ERR_ARG;
  } else if (c->count > 0) {
    if (c->sendbuf == NULL && !bottom_ok(c, ti, "sendbuf")) return DRED_ERR_ARG;
    if (c->recvbuf == NULL && (c->kind == PROTO_KIND_ALLREDUCE || member == c->root) &&
        !bottom_ok(c, ti, c->kind == PROTO_KIND_REDUCE ? "recvbuf at the root" : "recvbuf"))
      return DRED_ERR_ARG;
  }
  /* count < 2^31 and extent < 2^32, so the product cannot overflow 64 bits; what it must
   * not do is exceed what a process could ever hold (the accumulator, plus the first
   * partial result at a non-root member). */
  *bytes = (uint64_t)c->count * ti->extent;
  if (*bytes > DRED_MAX_BYTES) {
    DRED_ERROR("%s: %d elements of %u bytes (%llu bytes) exceed the maximum of a "
               "collective (%llu bytes)", c->fn, c->count, ti->extent, (unsigned long long)*bytes,
               (unsigned long long)DRED_MAX_BYTES);
    return DRED_ERR_ARG;
  }
  if ((rc = call_disjoint(c, ti, member, *bytes)) != DRED_OK) return rc;
  /* Small enough to travel inside the control messages (DRED_INLINE_MAX), with all the
   * group's operands fitting one INLINE message (a bcast: the root's data one READY): no
   * pool block, no snapshot, no replica, no task.  Every member decides alike from count,
   * extent and group size, given the same setting; members whose settings differ
   * disagree and end with MISMATCH. */
  *inl = inline_max > 0 && *bytes <= (uint64_t)inline_max &&
         (c->kind == PROTO_KIND_BCAST || *bytes * g->n <= PROTO_INLINE_TOTAL);
  /* who combines into (or, for a bcast, sends from) its own accumulator: runtime.h */
  *is_root = member == c->root || (c->kind == PROTO_KIND_ALLREDUCE && *inl);
  return DRED_OK;
}

/* The instance of a checked call (call_check's findings), with `extra` bytes after it for
 * an inline operand; NULL when memory ran out (logged). */
static dred_inst_t *inst_build(const call_t *c, dred_group_t *g, int member,
                               const dred_typeinfo_t *ti, uint64_t bytes, int inl,
                               int is_root, size_t extra) {
  dred_inst_t *in;
  if ((in = dred_rt_inst_alloc(extra)) == NULL || (in->fut = dred_future_new()) == NULL) {
    dred_rt_inst_free(in);
    DRED_ERROR("%s: out of memory", c->fn);
    return NULL;
  }
  in->group = g;
  in->group_id = g->id;
  in->member = (uint32_t)member;
  in->root = (uint32_t)c->root;
  in->kind = c->kind;
  in->blocking = c->blocking;
  in->is_root = is_root;
  in->receives = c->kind != PROTO_KIND_REDUCE && !is_root;
  in->sendbuf = c->sendbuf;
  in->recvbuf = c->recvbuf;
  in->count = (uint64_t)c->count;
  in->type = c->type;
  in->type_hold = MPI_DATATYPE_NULL;
  in->op = c->op;
  in->ti = *ti;
  in->bytes = (size_t)bytes;
  in->pool_off = -1;
  in->inl = inl;
  if (extra > 0) in->inl_data = (uint8_t *)(in + 1);
  return in;
}

/* The call's turn on its group (in->tag), and this process's refusal if it has one.
 * Returns 1 if the call goes on (*refuse: DRED_OK, or the status it joins with; counted in
 * rt->entering until submitted), 0 if it ends here (`in` discarded, *refuse: the status the
 * caller gets). */
static int call_turn(dred_rt_t *rt, const call_t *c, int tag, dred_inst_t *in, int *refuse) {
  int64_t itag;
  /* At the cap, met reductions that decided but that nobody waited on (freed futures,
   * refused calls) are finished first: they hold a place only until someone looks. */
  uv_mutex_lock(&rt->lock);
  if (rt->ninst - rt->nrefused + rt->entering >= rt->cfg.max_inflight &&
      !dred_queue_empty(&rt->meetq)) {
    uv_mutex_unlock(&rt->lock);
    (void)dred_meetpath_reclaim(rt);
    uv_mutex_lock(&rt->lock);
  }
  /* The turn first: whatever happens next, this call is the group's next one here. */
  if (rt->dead) {
    *refuse = rt->dead_status;
  } else if (rt->bye_requested) {
    *refuse = DRED_ERR_SHUTDOWN; /* the runtime counts on no insert after this */
  } else {
    *refuse = state_refusal(rt, c->fn);
  }
  if (take_turn(rt, c->fn, in->group, c->kind, tag, &itag, refuse) != DRED_OK) {
    uv_mutex_unlock(&rt->lock);
    inst_discard(rt, in);
    *refuse = DRED_ERR_NOMEM;
    return 0;
  }
  in->tag = itag;
  if (rt->dead || rt->bye_requested) {
    uint64_t n = ++rt->dead_refused;
    uv_mutex_unlock(&rt->lock);
    /* Every later call is refused the same way: an application that goes on calling
     * after the failure would flood the log, so the 1st, 2nd, 4th, 8th... are logged. */
    if (dred_log_due(n))
      DRED_ERROR("%s: %s (%llu call(s) refused so far; logged at powers of 2)", c->fn,
                 *refuse == DRED_ERR_SHUTDOWN ? "dred_finalize is in progress" : dred_strerror(*refuse),
                 (unsigned long long)n);
    inst_discard(rt, in);
    return 0;
  }
  if (*refuse == DRED_OK) *refuse = node_budget_take(rt, c->fn, in);
  rt->entering++; /* counted against the cap until inserted */
  uv_mutex_unlock(&rt->lock);
  return 1;
}

/* The operand (or a bcast root's data) into dred's buffers on the caller's thread: until
 * a copy exists outside this process, a crash loses it.  Errors become the instance's
 * join_error: it joins saying so, and every member ends with that status. */
static void call_load(dred_rt_t *rt, dred_inst_t *in, int user_op, size_t extra) {
  int rc;
  /* Before the call returns: the application may free the op or datatype as soon as it
   * has its future, and the runtime combines with them later (lifetime.c). */
  if ((rc = dred_lifetime_hold(in->op, user_op, in->type, in->ti.named, &in->held)) != DRED_OK) {
    in->join_error = rc;
    return;
  }
  /* Packed and image layouts run MPI_Pack/MPI_Unpack with the datatype after this call
   * returns (reloads, the unpack at the end); MPI lets the caller free it meanwhile. */
  if (in->ti.layout != DRED_LAYOUT_DIRECT && MPI_Type_dup(in->type, &in->type_hold) != MPI_SUCCESS) {
    DRED_ERROR("MPI_Type_dup of the datatype failed");
    in->type_hold = MPI_DATATYPE_NULL;
    in->join_error = DRED_ERR_INTERNAL;
    return;
  }
  if (in->kind == PROTO_KIND_BCAST && !in->is_root) return; /* nothing to send */
  if (in->inl && !in->is_root) {
    /* The operand, in dred's layout, goes with the READY; the master holds it from then
     * on (a crash before the READY is sent loses it: DRED_ERR_PROC_FAILED, as a crash
     * during the copy into the pool does on the ordinary path). */
    if (extra > 0 && (rc = dred_dp_load(rt, in, (char *)in->inl_data)) != DRED_OK)
      in->join_error = rc; /* joins saying so: every member ends with it (announce) */
    return;
  }
  /* Into shared memory now, on this thread, rather than when the runtime thread gets
   * round to it.  (A root -- an inline allreduce's every member, a bcast's root --
   * combines or sends from acc: recvbuf, or a buffer of its own.) */
  dred_dp_acc_early(rt, in);
}

/* The path, decided under rt->lock: the node's meeting place, the inline path, or
 * dred-master through the runtime thread (then the call may wait for a copy on another
 * node).  Returns 1 once `in` is handed over, 0 if the service died meanwhile (`in`
 * discarded, *status: the caller's), 2 if a blocking call ended here in the fast lane
 * (`in` and its future freed, *status: the call's). */
static int call_submit(dred_rt_t *rt, dred_inst_t *in, int blocking, int *status) {
  dred_handover_ticket_t ticket;
  int offnode, met, first;

  /* A blocking small collective of a one-node group tries the meeting place's
   * fast lane first: decided there, it is finished before the call waits (lanepath.c). */
  if (blocking && dred_lanepath_call(rt, in)) {
    *status = dred_lanepath_finish(rt, in); /* `in` and its future are gone */
    return 2;
  }

  /* A nonblocking small one posts in the fast lane instead, and returns (lanepath.c). */
  if (!blocking && dred_lanepath_post(rt, in)) {
    uv_mutex_lock(&rt->lock);
    rt->entering--;
    if (rt->dead) { /* as below: the turn is taken; end it here */
      *status = rt->dead_status;
      uv_mutex_unlock(&rt->lock);
      dred_lanepath_cancel(in);
      inst_discard(rt, in);
      return 0;
    }
    dred_lanepath_join(rt, in);
    dred_rt_insert(rt, in);
    uv_mutex_unlock(&rt->lock);
    return 1;
  }

  dred_meetpath_prepare(rt, in); /* a pool block peers can read, if it needs one */
  dred_relay_prepare(rt, in);    /* ... or one for a node relay's data, if it may lead */
  uv_mutex_lock(&rt->lock);
  for (first = 1;; first = 0) {
    if (rt->dead) {
      /* The service died while the operand was being copied: the runtime has already
       * ended what it knew of (dred_meetpath_fail_all), and a slot joined now would wait
       * for members that are refusing every call.  The turn is taken; end it here. */
      rt->entering--;
      *status = rt->dead_status;
      uv_mutex_unlock(&rt->lock);
      inst_discard(rt, in);
      return 0;
    }
    /* A collective of a one-node group meets its peers in the node's shared memory
     * (meetpath.c): no message, nothing for the runtime thread; the future's waits finish
     * it.  Otherwise (another node in the group, no ring, a spill) it goes to dred-master.
     * A slot still held by an older collective is waited for a moment first. */
    if ((met = dred_meetpath_arrive(rt, in, first)) != 2) break;
    uv_mutex_unlock(&rt->lock);
    dred_meetpath_wait_slot(rt, in);
    uv_mutex_lock(&rt->lock);
  }
  rt->entering--;
  if (met) {
    int publish = in->meet_publish; /* read now: once unlocked, `in` may finish */
    int taken = in->meet_taken;     /* ... unless taken (claimed): then it is ours to finish */
    dred_rt_insert(rt, in);
    uv_mutex_unlock(&rt->lock);
    if (taken)
      dred_meetpath_finish_taken(rt, in); /* its outcome came with its arrival */
    else if (publish)
      dred_meetpath_publish(rt, in); /* a bcast root's data, an allreduce operand */
    return 1;
  }
  /* A large bcast of a group spanning nodes: the node's first member to arrive receives
   * the data from dred-master for the node, the others copy it from there (relay.c). */
  if (dred_relay_arrive(rt, in)) {
    uv_mutex_unlock(&rt->lock);
    return 1;
  }
  if (rt->cfg.replicas > 0 && in->kind != PROTO_KIND_BCAST)
    rt->robust->on_operand_pooled(rt, in);
  /* A copy on another node, not only in this node's memory, before the call returns
   * (offnode.c): registered before the runtime can see `in`, so its answer is not
   * missed. */
  if ((offnode = dred_handover_offnode(rt, in)))
    dred_handover_ticket_add(rt, &ticket, in->group_id, in->tag);
  /* `in` is the runtime's as soon as the lock is released: it may finish and free it. */
  dred_rt_insert(rt, in);
  if (dred_rt_announce_now(rt, in)) {
    uv_mutex_unlock(&rt->lock);
    return 1; /* inline: no hand-over, nothing for the runtime thread to do */
  }
  dred_queue_insert_tail(&rt->submitq, &in->qlink);
  uv_mutex_unlock(&rt->lock);
  uv_async_send(&rt->wake);
  if (offnode) dred_handover_wait(rt, &ticket);
  return 1;
}

/*
 * One call of any kind: check, build the instance, take the turn, load the operand, submit.
 * Two kinds of refusal, told apart on purpose (dred(3), "Refused calls"):
 *   - a bad argument (DRED_ERR_ARG before the call takes its turn): a function of the
 *     caller's own arguments only; the call did not happen, takes no turn, and the program
 *     may issue it again corrected;
 *   - a refusal from this process's state (the in-flight cap, the node's memory budget, a
 *     tag still in flight here): another member may well have accepted the same call, so the
 *     call takes its turn and joins the collective saying why; the caller gets the status
 *     now, and every other member's future for that collective ends with it.
 * After dred_finalize began or the service died, a call takes its turn and is refused
 * here only: nothing more can complete anyway.
 */
static int call_start(const call_t *c, MPI_Comm comm, int tag, dred_future **future) {
  dred_rt_t *rt = g_rt;
  dred_group_t *g;
  dred_typeinfo_t ti;
  dred_inst_t *in;
  dred_future *fut;
  int rc, member, is_root, inl, refuse = DRED_OK;
  size_t extra;
  uint64_t bytes;

  /* check: the caller's arguments, alone and against the group (bad ones take no turn) */
  if ((rc = call_args(c, comm, tag, future, &g, &member)) != DRED_OK) return rc;
  if ((rc = call_check(c, g, member, (int)rt->cfg.inline_max, &ti, &bytes, &inl, &is_root)) !=
      DRED_OK)
    return rc;
  /* build the instance (an inline reduce's non-root operand travels behind it) */
  extra = inl && !is_root && c->kind == PROTO_KIND_REDUCE ? (size_t)bytes : 0;
  if ((in = inst_build(c, g, member, &ti, bytes, inl, is_root, extra)) == NULL)
    return DRED_ERR_NOMEM;
  /* take the turn (every call that got this far does), and this process's refusal if any */
  if (!call_turn(rt, c, tag, in, &refuse)) return refuse;
  /* load the operand, or join without one, saying why: no copy, no hold on op or
   * datatype, and no place under the cap (it holds a few hundred bytes until its peers
   * arrive) */
  if (refuse != DRED_OK) {
    in->join_error = refuse;
    in->refused = 1;
  } else {
    dred_meetpath_prewake(rt, in); /* peers asleep in its slot wake during the copy */
    call_load(rt, in, ti.op_is_user, extra);
  }
  /* decide the path and submit: meeting place, inline, or dred-master */
  fut = in->fut;
  switch (call_submit(rt, in, c->blocking, &rc)) {
    case 0: return rc;
    case 2: *future = NULL; return rc; /* a blocking call, over */
    default: break;
  }
  if (refuse != DRED_OK) {
    dred_future_free(fut); /* the caller gets the status, not a future */
    return refuse;
  }
  *future = fut;
  return DRED_OK;
}

/* The blocking forms: the call with DRED_TAG_AUTO (its status rc, its future f: two
 * statements, as argument evaluation order is unspecified), then dred_future_get -- unless
 * it ended in the meeting place's fast lane (no future: rc is its status). */
static int call_wait(int rc, dred_future *f) {
  if (rc == DRED_OK && f != NULL) { /* (none: ended in the fast lane, rc its status) */
    rc = dred_future_get(f);
    dred_future_free(f);
  }
  dred_lanepath_done(); /* last: see lanepath.h */
  return rc;
}

int dred_ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm, int tag, dred_future **future) {
  call_t c = {PROTO_KIND_REDUCE, "dred_ireduce", sendbuf, recvbuf, count, datatype, op, root, 0};
  return call_start(&c, comm, tag, future);
}

int dred_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                MPI_Op op, int root, MPI_Comm comm) {
  call_t c = {PROTO_KIND_REDUCE, "dred_reduce", sendbuf, recvbuf, count, datatype, op, root, 1};
  dred_future *f = NULL;
  int rc = call_start(&c, comm, DRED_TAG_AUTO, &f);
  return call_wait(rc, f);
}

int dred_iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, int tag, dred_future **future) {
  call_t c = {PROTO_KIND_ALLREDUCE, "dred_iallreduce", sendbuf, recvbuf, count, datatype, op, 0, 0};
  return call_start(&c, comm, tag, future);
}

int dred_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm) {
  call_t c = {PROTO_KIND_ALLREDUCE, "dred_allreduce", sendbuf, recvbuf, count, datatype, op, 0, 1};
  dred_future *f = NULL;
  int rc = call_start(&c, comm, DRED_TAG_AUTO, &f);
  return call_wait(rc, f);
}

/* A bcast: the root's data is its operand, already in place in `buffer` (MPI_IN_PLACE);
 * every member's result goes to `buffer`. */
static int bcast_start(const char *name, void *buffer, int count, MPI_Datatype datatype, int root,
                       MPI_Comm comm, int tag, int blocking, dred_future **future) {
  call_t c = {PROTO_KIND_BCAST, name, buffer, buffer, count, datatype, MPI_OP_NULL, root, blocking};
  if (count > 0) c.sendbuf = MPI_IN_PLACE; /* (a NULL buffer: call_check, MPI_BOTTOM) */
  return call_start(&c, comm, tag, future);
}

int dred_ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                int tag, dred_future **future) {
  return bcast_start("dred_ibcast", buffer, count, datatype, root, comm, tag, 0, future);
}

int dred_bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  dred_future *f = NULL;
  int rc = bcast_start("dred_bcast", buffer, count, datatype, root, comm, DRED_TAG_AUTO, 1, &f);
  return call_wait(rc, f);
}
