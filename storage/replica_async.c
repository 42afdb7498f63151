/*
 * replica_async.c -- see replica_async.h.
 *
 * Each call allocates one request holding a uv_work_t and the arguments, takes a hold on
 * the store (dred_replica_hold: close then waits for us instead of freeing the store
 * under a pool thread), and queues it.  The pool thread runs the blocking call and
 * releases the hold as soon as the store is no longer touched; the after-work callback,
 * on the loop thread, reports the status and frees the request.  If the work is cancelled
 * before it runs (uv_cancel), the after-work callback releases the hold instead.
 */
#define _GNU_SOURCE /* SCHED_IDLE */
#include "replica_async.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/settings.h"

typedef enum { REPLICA_OP_PUT, REPLICA_OP_GET, REPLICA_OP_DROP } replica_op_t;

typedef struct {
  uv_work_t work; /* first: the request is found from the uv_work_t */
  dred_replica_t *r;
  replica_op_t op;
  uint64_t group;
  int64_t tag;
  uint32_t member;
  const void *src; /* put */
  void *dst;       /* get */
  size_t len;
  int status;
  int released; /* the hold was given back by the pool thread */
  dred_replica_cb cb;
  void *arg;
} replica_req_t;

static const char *const replica_op_names[] = {"put", "get", "drop"};

/* Writing copies is insurance, not the reduction's critical path: on a node whose cores
 * are all busy combining, pool threads doing puts step aside: nice DRED_REPLICA_NICE
 * (default 10; 0 = normal priority), or "idle" for SCHED_IDLE (run only on a core nothing
 * else wants -- no faster where memory bandwidth is the shared resource, docs/performance.md,
 * figures behind defaults; and it can starve copies for as long as the node is fully
 * loaded, so not the default).  Linux applies both per thread.  A thread once lowered
 * stays lowered (raising it again needs privileges), so a recovery read that lands on it
 * runs at that priority too; we try to raise it for reads, which works where the limits
 * allow. */
static void replica_async_set_priority(int for_put) {
  static __thread int lowered;
  const char *s = dred_setting_raw(DRED_S_REPLICA_NICE);
  long nice_val;
  struct sched_param sp;
  memset(&sp, 0, sizeof sp);
  if (!for_put) {
    if (lowered == 2 && pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp) == 0) lowered = 0;
    return;
  }
  if (lowered) return;
  if (s != NULL && strcmp(s, "idle") == 0) {
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0) lowered = 2;
    return;
  }
  nice_val = (s != NULL && *s != '\0') ? strtol(s, NULL, 10) : 10;
  if (nice_val > 0 && nice_val <= 19 &&
      setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), (int)nice_val) == 0)
    lowered = 1;
}

static void replica_async_work(uv_work_t *w) {
  replica_req_t *q = (replica_req_t *)w;
  static __thread int named;

  if (!named) { /* a libuv pool thread doing replica I/O: say so in top -H, perf, gdb */
    pthread_setname_np(pthread_self(), "dred-replica");
    named = 1;
  }
  if (q->op != REPLICA_OP_GET && dred_replica_is_moot(q->r)) {
    q->status = DRED_ERR_SHUTDOWN; /* nobody will read it: the store is deleted at close */
    dred_replica_release(q->r);
    q->released = 1;
    return;
  }
  replica_async_set_priority(q->op == REPLICA_OP_PUT);
  switch (q->op) {
    case REPLICA_OP_PUT:
      q->status = dred_replica_put(q->r, q->group, q->tag, q->member, q->src, q->len);
      break;
    case REPLICA_OP_GET:
      q->status = dred_replica_get(q->r, q->group, q->tag, q->member, q->dst, q->len);
      break;
    case REPLICA_OP_DROP:
      q->status = dred_replica_drop(q->r, q->group, q->tag);
      break;
  }
  /* After this the store may be closed and freed: do not touch q->r again. */
  dred_replica_release(q->r);
  q->released = 1;
}

static void replica_async_done(uv_work_t *w, int uvstatus) {
  replica_req_t *q = (replica_req_t *)w;

  if (uvstatus != 0) {
    /* Only UV_ECANCELED is possible: the work never ran and never released its hold. */
    DRED_ERROR("replica %s of group %016" PRIx64 " tag %" PRId64 " member %" PRIu32
               " cancelled before it ran: %s",
               replica_op_names[q->op], q->group, q->tag, q->member, uv_strerror(uvstatus));
    q->status = DRED_ERR_SHUTDOWN;
    if (!q->released) dred_replica_release(q->r);
  }
  q->cb(q->arg, q->status);
  free(q);
}

/* Validate, allocate, hold the store and queue; on DRED_OK the callback will run. */
static int replica_async_queue(const char *fn, uv_loop_t *loop, dred_replica_t *r,
                               replica_op_t op, uint64_t group, int64_t tag, uint32_t member,
                               const void *src, void *dst, size_t len, dred_replica_cb cb,
                               void *arg) {
  replica_req_t *q;
  int rc, status;

  if (loop == NULL || r == NULL || cb == NULL) {
    DRED_ERROR("%s: NULL %s", fn, loop == NULL ? "loop" : r == NULL ? "store" : "callback");
    return DRED_ERR_ARG;
  }
  if (len > 0 &&
      ((op == REPLICA_OP_PUT && src == NULL) || (op == REPLICA_OP_GET && dst == NULL))) {
    DRED_ERROR("%s: NULL data with len > 0", fn);
    return DRED_ERR_ARG;
  }
  q = calloc(1, sizeof *q);
  if (q == NULL) {
    DRED_ERROR("%s: out of memory", fn);
    return DRED_ERR_NOMEM;
  }
  q->r = r;
  q->op = op;
  q->group = group;
  q->tag = tag;
  q->member = member;
  q->src = src;
  q->dst = dst;
  q->len = len;
  q->cb = cb;
  q->arg = arg;

  if ((status = dred_replica_hold(r)) != DRED_OK) { /* logged: the store is closing */
    free(q);
    return status;
  }
  rc = uv_queue_work(loop, &q->work, replica_async_work, replica_async_done);
  if (rc != 0) {
    DRED_ERROR("%s: uv_queue_work failed: %s", fn, uv_strerror(rc));
    dred_replica_release(r);
    free(q);
    return DRED_ERR_INTERNAL;
  }
  return DRED_OK;
}

int dred_replica_put_async(uv_loop_t *loop, dred_replica_t *r, uint64_t group, int64_t tag,
                           uint32_t member, const void *data, size_t len, dred_replica_cb cb,
                           void *arg) {
  return replica_async_queue("dred_replica_put_async", loop, r, REPLICA_OP_PUT, group, tag,
                             member, data, NULL, len, cb, arg);
}

int dred_replica_get_async(uv_loop_t *loop, dred_replica_t *r, uint64_t group, int64_t tag,
                           uint32_t member, void *data, size_t len, dred_replica_cb cb,
                           void *arg) {
  return replica_async_queue("dred_replica_get_async", loop, r, REPLICA_OP_GET, group, tag,
                             member, NULL, data, len, cb, arg);
}

int dred_replica_drop_async(uv_loop_t *loop, dred_replica_t *r, uint64_t group, int64_t tag,
                            dred_replica_cb cb, void *arg) {
  return replica_async_queue("dred_replica_drop_async", loop, r, REPLICA_OP_DROP, group, tag,
                             0, NULL, NULL, 0, cb, arg);
}
