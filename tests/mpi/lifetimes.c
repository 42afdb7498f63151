/*
 * lifetimes.c -- an op or datatype freed while a dred reduction using it is pending stays
 * valid for that reduction, and a free after completion frees at once.
 *
 *   dredrun -n P mpi_lifetimes [-n NRED]      (also built as mpi_lifetimes_so, linked with
 *                                              libdred.so instead of libdred.a)
 *
 * What MPI promises: MPI_Op_free / MPI_Type_free mark the object for deallocation, set the
 * caller's handle to MPI_OP_NULL / MPI_DATATYPE_NULL, and pending operations that use it
 * complete normally.  MPICH recycles a freed handle value at the next create, so a dred
 * that kept using the raw handle combined with whatever op the program created next.
 *
 * How each "pending" case makes sure the reduction is still pending when the handle is
 * freed and recycled: every member but the last ("late") one starts the reduction(s),
 * frees the op/datatype, creates a different op/datatype (which MPICH would give the freed
 * handle value), and only then waits in a barrier; the late member calls after the barrier
 * (and frees after completion: its own reduction may end before its next statement).
 * The combines with the late member's operand therefore run after every other member freed
 * and recycled its handles.  The "other" op writes a poison value and the "other" datatype
 * has half the size, so a reduction that used them gives a visibly wrong result.  Results
 * are compared at the root with ref_reduce (mpitest.c), run with fresh handles.
 *
 * Cases: user op freed (commutative, MPI_INT); non-commutative op and its derived
 * datatype freed (affine maps); derived datatype freed under a user op that reads the
 * datatype's size (MPI_Type_size(*dt)), and under MPI_SUM; NRED pending reductions
 * sharing one op freed once; a blocking dred_reduce on another thread while the main
 * thread frees its op; and frees after completion (nonblocking and blocking), which must
 * be real at once: MPICH then hands the same handle value back, and libdred's counters
 * show no deferred free.  The counters (dred_lifetime_stats, declared weak so the test
 * still builds and fails against a libdred without them) also prove that MPI_Op_free /
 * MPI_Type_free were intercepted at all, which matters for the libdred.so build.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dred.h"
#include "mpitest.h"

/* libdred internal (lib/engine/lifetime.c): handles held now, frees deferred, frees done late */
extern void dred_lifetime_stats(uint64_t *handles_held, uint64_t *deferred, uint64_t *done_late)
    __attribute__((weak));

#define COUNT 257
#define MAXRED 64

static int nred = 16;

static void lifetime_stats(uint64_t *held, uint64_t *deferred, uint64_t *late) {
  *held = *deferred = *late = 0;
  if (dred_lifetime_stats != NULL) dred_lifetime_stats(held, deferred, late);
}

/* inout += in over every int the elements hold; the element size comes from the datatype,
 * so a reduction run with a recycled, smaller datatype handle sums only part of it. */
static void isum_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
  int size = 0, k, n;
  const int *a = in;
  int *b = inout;
  MPI_Type_size(*dt, &size);
  n = *len * (size / (int)sizeof(int));
  for (k = 0; k < n; k++) b[k] += a[k];
}

/* what a recycled op handle would compute instead */
static void poison_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
  int size = 0, k, n;
  unsigned char *b = inout;
  (void)in;
  MPI_Type_size(*dt, &size);
  n = *len * size;
  for (k = 0; k < n; k++) b[k] = 0xA5;
}

typedef enum { K_OP_COMM = 0, K_OP_NONCOMM, K_TYPE_USEROP, K_TYPE_SUM } kind_t;
static const char *kind_name[] = {"user op (commutative)", "non-commutative op and its type",
                                  "derived type under a user op", "derived type under MPI_SUM"};

typedef struct {
  MPI_Datatype type;
  MPI_Op op;
  int type_owned, op_owned; /* created here (and to be freed) */
  int ints;                 /* ints per element */
} handles_t;

static void handles_create(kind_t k, handles_t *h) {
  memset(h, 0, sizeof *h);
  switch (k) {
    case K_OP_COMM:
      h->type = MPI_INT;
      h->ints = 1;
      MPI_Op_create(isum_op, 1, &h->op);
      h->op_owned = 1;
      break;
    case K_OP_NONCOMM:
      affine_create(&h->type, &h->op);
      h->ints = 2;
      h->type_owned = h->op_owned = 1;
      break;
    case K_TYPE_USEROP:
    case K_TYPE_SUM:
      MPI_Type_contiguous(4, MPI_INT, &h->type);
      MPI_Type_commit(&h->type);
      h->type_owned = 1;
      h->ints = 4;
      if (k == K_TYPE_USEROP) {
        MPI_Op_create(isum_op, 1, &h->op);
        h->op_owned = 1;
      } else {
        h->op = MPI_SUM;
      }
      break;
  }
}

/* Which handles a case frees while its reductions are pending. */
static int frees_op(kind_t k) { return k == K_OP_COMM || k == K_OP_NONCOMM; }
static int frees_type(kind_t k) { return k != K_OP_COMM; }

static void handles_free(handles_t *h) {
  if (h->op_owned && h->op != MPI_OP_NULL) MPI_Op_free(&h->op);
  if (h->type_owned && h->type != MPI_DATATYPE_NULL) MPI_Type_free(&h->type);
}

static void fill(int *buf, int n, int salt) {
  int i;
  for (i = 0; i < n; i++) buf[i] = (int)(mix64((uint64_t)(g_rank * 1000003 + salt * 7919 + i)) & 0xffff) | 1;
}

typedef struct {
  int *in, *out;
  dred_future *f;
} red_t;

/* Start n reductions. */
static void start(const char *what, handles_t *h, red_t *r, int n, int root) {
  int i, rc;
  set_step("%s: dred_ireduce x %d", what, n);
  for (i = 0; i < n; i++) {
    rc = dred_ireduce(r[i].in, r[i].out, COUNT, h->type, h->op, root, g_comm, DRED_TAG_AUTO,
                      &r[i].f);
    if (rc != DRED_OK) {
      fail("%s: dred_ireduce %d returned %s", what, i, dred_strerror(rc));
      r[i].f = NULL;
    }
  }
}

/* Free what the case frees (checking the caller's handles become NULL), then create
 * "other" handles; while the reductions are pending, MPICH must not recycle the freed
 * handle values for them. */
static void free_and_recreate(const char *what, kind_t k, handles_t *h, handles_t *other,
                              int pending) {
  MPI_Op old_op = h->op;
  MPI_Datatype old_type = h->type;

  set_step("%s: free %s", what, pending ? "while pending" : "after completion");
  memset(other, 0, sizeof *other);
  if (frees_op(k)) {
    MPI_Op_free(&h->op);
    if (h->op != MPI_OP_NULL) fail("%s: MPI_Op_free left the handle set", what);
    MPI_Op_create(poison_op, k == K_OP_COMM, &other->op);
    other->op_owned = 1;
    if (pending && other->op == old_op)
      fail("%s: MPI_Op_create handed back the freed op's handle while a reduction uses it",
           what);
  }
  if (frees_type(k)) {
    MPI_Type_free(&h->type);
    if (h->type != MPI_DATATYPE_NULL) fail("%s: MPI_Type_free left the handle set", what);
    MPI_Type_contiguous(h->ints / 2 > 0 ? h->ints / 2 : 1, MPI_INT, &other->type);
    MPI_Type_commit(&other->type);
    other->type_owned = 1;
    if (pending && other->type == old_type)
      fail("%s: MPI_Type_contiguous handed back the freed datatype's handle while a "
           "reduction uses it", what);
  }
}

static void wait_all(const char *what, red_t *r, int n) {
  int i, rc;
  for (i = 0; i < n; i++) {
    if (r[i].f == NULL) continue;
    rc = wait_bounded(r[i].f, 60, what);
    if (rc != DRED_OK) fail("%s: reduction %d ended with %s", what, i, dred_strerror(rc));
    dred_future_free(r[i].f);
    r[i].f = NULL;
  }
}

static void run_pending(kind_t k, int root, int n) {
  char what[160];
  handles_t h, other, ref;
  red_t r[MAXRED];
  int late = g_size - 1, i, bad = 0;
  size_t elems;
  uint64_t held0, def0, late0, held1, def1, late1;

  snprintf(what, sizeof what, "pending/%s/root %d/%d reduction%s", kind_name[k], root, n,
           n > 1 ? "s" : "");
  handles_create(k, &h);
  elems = (size_t)COUNT * (size_t)h.ints;
  for (i = 0; i < n; i++) {
    r[i].in = malloc(elems * sizeof(int));
    r[i].out = calloc(elems, sizeof(int));
    if (r[i].in == NULL || r[i].out == NULL) {
      fprintf(stderr, "no memory\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fill(r[i].in, (int)elems, (int)k * 100 + i);
  }
  lifetime_stats(&held0, &def0, &late0);
  if (g_rank != late) {
    start(what, &h, r, n, root);
    free_and_recreate(what, k, &h, &other, 1);
  }
  set_step("%s: barrier", what);
  MPI_Barrier(g_comm);
  if (g_rank == late) {
    /* The late member's own free cannot be guaranteed to come before its reductions end
     * (a descheduled main thread): it frees after completion, and the combines with its
     * operand still run after every other member freed and recycled its handles. */
    start(what, &h, r, n, root);
    wait_all(what, r, n);
    free_and_recreate(what, k, &h, &other, 0);
  }
  wait_all(what, r, n);
  /* Every future is done: nothing may be held any more, and the frees deferred meanwhile
   * (one per handle this case freed, none at the late member) were carried out. */
  lifetime_stats(&held1, &def1, &late1);
  {
    uint64_t want = g_rank == late ? 0 : (uint64_t)(frees_op(k) + frees_type(k));
    if (dred_lifetime_stats == NULL)
      fail("%s: libdred has no op/datatype lifetime tracking (dred_lifetime_stats)", what);
    else if (held1 != 0 || def1 - def0 != want || late1 - late0 != want)
      fail("%s: after completion %llu handle(s) still held, %llu free(s) deferred, %llu done "
           "late (want 0, %llu, %llu): MPI_Op_free/MPI_Type_free not intercepted?",
           what, (unsigned long long)held1, (unsigned long long)(def1 - def0),
           (unsigned long long)(late1 - late0), (unsigned long long)want,
           (unsigned long long)want);
  }

  set_step("%s: reference", what);
  handles_create(k, &ref);
  for (i = 0; i < n; i++) {
    int *want = g_rank == root ? calloc(elems, sizeof(int)) : NULL;
    /* MPICH's MPI_Reduce_local refuses a predefined op on a derived type: the reference
     * of the MPI_SUM case reduces the ints themselves */
    int rc2 = k == K_TYPE_SUM ? ref_reduce(r[i].in, want, (int)elems, MPI_INT, MPI_SUM, root, g_comm)
                              : ref_reduce(r[i].in, want, COUNT, ref.type, ref.op, root, g_comm);
    if (rc2 != MPI_SUCCESS)
      fail("%s: ref_reduce failed", what);
    if (g_rank == root && memcmp(want, r[i].out, elems * sizeof(int)) != 0) {
      size_t e;
      for (e = 0; e < elems && want[e] == r[i].out[e]; e++) {
      }
      if (!bad)
        fail("%s: reduction %d wrong at int %zu: %d, expected %d", what, i, e, r[i].out[e],
             want[e]);
      bad = 1;
    }
    free(want);
    free(r[i].in);
    free(r[i].out);
  }
  if (!bad && g_rank == root) pass("%s", what);
  handles_free(&ref);
  handles_free(&other);
  handles_free(&h); /* what this case did not free while pending */
}

/* ---- a blocking dred_reduce on another thread, its op freed by the main thread ---- */

typedef struct {
  handles_t *h;
  int *in, *out;
  int root, rc;
} blocking_arg_t;

static void *blocking_thread(void *p) {
  blocking_arg_t *a = p;
  a->rc = dred_reduce(a->in, a->out, COUNT, a->h->type, a->h->op, a->root, g_comm);
  return NULL;
}

static void run_blocking_pending(int root) {
  const char *what = "pending/blocking dred_reduce on a thread, op freed by another";
  handles_t h, other, ref;
  blocking_arg_t a;
  pthread_t th;
  int late = g_size - 1;
  int *in = malloc(COUNT * sizeof(int)), *out = calloc(COUNT, sizeof(int));
  int *want = calloc(COUNT, sizeof(int));
  uint64_t held, d, l;

  fill(in, COUNT, 77);
  handles_create(K_OP_COMM, &h);
  memset(&other, 0, sizeof other);
  a.h = &h;
  a.in = in;
  a.out = out;
  a.root = root;
  a.rc = -1;
  if (g_rank != late) {
    MPI_Op old = h.op;
    double deadline = now_s() + wait_limit(30);
    set_step("%s: start thread", what);
    pthread_create(&th, NULL, blocking_thread, &a);
    /* Free only once the thread's call holds the op (its dred_ireduce returned inside
     * dred_reduce); without the counters, give it a moment. */
    if (dred_lifetime_stats == NULL) {
      usleep(200000);
    } else {
      for (;;) {
        lifetime_stats(&held, &d, &l);
        if (held > 0) break;
        if (now_s() > deadline) {
          fail("%s: the thread's reduction never held its op", what);
          break;
        }
        usleep(1000);
      }
    }
    MPI_Op_free(&h.op);
    MPI_Op_create(poison_op, 1, &other.op);
    other.op_owned = 1;
    if (other.op == old) fail("%s: freed op handle recycled while the call runs", what);
  }
  set_step("%s: barrier", what);
  MPI_Barrier(g_comm);
  if (g_rank == late) {
    blocking_thread(&a); /* the late member blocks on this thread, op freed after */
  } else {
    pthread_join(th, NULL);
  }
  if (a.rc != DRED_OK) fail("%s: dred_reduce returned %s", what, dred_strerror(a.rc));
  handles_create(K_OP_COMM, &ref);
  if (ref_reduce(in, want, COUNT, ref.type, ref.op, root, g_comm) != MPI_SUCCESS)
    fail("%s: ref_reduce failed", what);
  if (g_rank == root) {
    if (memcmp(want, out, COUNT * sizeof(int)) != 0)
      fail("%s: wrong result (out[0] = %d, expected %d)", what, out[0], want[0]);
    else
      pass("%s", what);
  }
  handles_free(&ref);
  handles_free(&other);
  handles_free(&h);
  free(in);
  free(out);
  free(want);
}

/* ---- frees after completion are real at once ---- */

static void run_after(int blocking, int root) {
  char what[128];
  handles_t h, again;
  MPI_Op old_op;
  MPI_Datatype old_type;
  int *in = malloc(COUNT * 4 * sizeof(int)), *out = calloc(COUNT * 4, sizeof(int));
  int rc;
  uint64_t held0, def0, l0, held1, def1, l1;

  snprintf(what, sizeof what, "after completion/%s/free is immediate",
           blocking ? "dred_reduce" : "dred_ireduce");
  fill(in, COUNT * 4, 99);
  handles_create(K_TYPE_USEROP, &h);
  lifetime_stats(&held0, &def0, &l0);
  set_step("%s", what);
  if (blocking) {
    rc = dred_reduce(in, out, COUNT, h.type, h.op, root, g_comm);
  } else {
    dred_future *f = NULL;
    rc = dred_ireduce(in, out, COUNT, h.type, h.op, root, g_comm, DRED_TAG_AUTO, &f);
    if (rc == DRED_OK) {
      rc = wait_bounded(f, 60, what);
      dred_future_free(f);
    }
  }
  if (rc != DRED_OK) fail("%s: reduction returned %s", what, dred_strerror(rc));
  old_op = h.op;
  old_type = h.type;
  MPI_Op_free(&h.op);
  MPI_Type_free(&h.type);
  lifetime_stats(&held1, &def1, &l1);
  if (held1 != 0 || def1 != def0)
    fail("%s: %llu handle(s) still held, %llu free(s) deferred after completion", what,
         (unsigned long long)held1, (unsigned long long)(def1 - def0));
  /* MPI's own behaviour as the witness: MPICH gives a just-freed handle value to the next
   * object of its kind, so getting the old values back shows the frees were real. */
  handles_create(K_TYPE_USEROP, &again);
#ifdef MPICH_VERSION
  if (again.op != old_op || again.type != old_type)
    fail("%s: handles not recycled by MPICH (op %s, type %s): the free was deferred", what,
         again.op == old_op ? "reused" : "new", again.type == old_type ? "reused" : "new");
#else
  (void)old_op;
  (void)old_type;
#endif
  if (g_rank == root) pass("%s", what);
  handles_free(&again);
  free(in);
  free(out);
}

int main(int argc, char **argv) {
  int c;
  test_init(&argc, &argv, "lifetimes");
  while ((c = getopt(argc, argv, "n:")) != -1) {
    if (c == 'n') nred = atoi(optarg);
  }
  if (nred < 1 || nred > MAXRED) nred = 16;

  run_pending(K_OP_COMM, 0, 1);
  run_pending(K_OP_COMM, g_size - 1, 1);
  run_pending(K_OP_NONCOMM, 0, 1);
  run_pending(K_OP_NONCOMM, g_size - 1, 1);
  run_pending(K_TYPE_USEROP, 0, 1);
  run_pending(K_TYPE_SUM, g_size / 2, 1);
  run_pending(K_OP_COMM, 0, nred);
  run_pending(K_OP_NONCOMM, g_size / 2, nred);
  run_blocking_pending(0);
  run_after(0, 0);
  run_after(1, g_size - 1);
  return test_finish();
}
