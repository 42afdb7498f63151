/*
 * lifetime.c -- user ops and derived datatypes outlive MPI_Op_free / MPI_Type_free while a
 * dred reduction that uses them is pending, as MPI promises for its own nonblocking calls.
 *
 * Why: MPI lets a program free an op or a datatype right after starting a nonblocking
 * reduction with it; the reduction must still use what it was started with.  dred combines
 * long after dred_ireduce returned, on its runtime thread, with the handle the caller gave.
 * Freed, MPICH recycles the handle value at once: the next MPI_Op_create returns the same
 * handle, and a pending reduction would silently combine with the new op.
 *
 * How: libdred defines MPI_Op_free and MPI_Type_free itself -- MPI's profiling interface
 * allows a library to -- and calls PMPI_Op_free / PMPI_Type_free for the real work.
 * dred_ireduce takes a reference on the user op and the derived datatype of each reduction
 * (dred_lifetime_hold); the runtime drops it when the reduction's instance is finished,
 * just before its future completes (dred_lifetime_release).  MPI_Op_free / MPI_Type_free
 * on a handle that has references sets the caller's handle to MPI_OP_NULL /
 * MPI_DATATYPE_NULL at once, as MPI says, and only counts the free; the last release
 * performs the counted frees.  Since MPICH's object stays allocated meanwhile, MPICH
 * cannot hand the same handle value to a new MPI_Op_create / MPI_Type_* call while dred
 * still uses it.  A handle with no references is freed on the spot, so a free after the
 * reduction completed behaves exactly as without dred.  Frees are counted rather than
 * flagged because a datatype can legitimately be freed more than once: every
 * MPI_Type_get_contents returns another reference to the same handle.
 *
 * Predefined ops and named datatypes are never held (MPI forbids freeing them; the call
 * goes straight to MPI, which reports the error).  A derived datatype is held as the
 * caller's own handle, not copied with MPI_Type_dup: a user op receives the datatype
 * handle as an argument and may compare it with its own, so it must see the same value.
 *
 * Linking: these definitions live in the object that also defines the hold/release
 * functions api.c and runtime.c call, so any program using dred_ireduce pulls this
 * object out of libdred.a, and its MPI_Op_free / MPI_Type_free then take precedence over
 * libmpi's (the executable's definition wins); with libdred.so they win because libdred
 * comes before libmpi in the program's library search order.  libdred's own code calls
 * PMPI_Type_free for references it took from MPI (typecheck.c), never held here.
 *
 * Thread-safe: one mutex, initialised statically because an application may free an op
 * before dred_init and from any thread.  The table is a short array searched linearly: it
 * holds one entry per distinct handle in use by pending reductions (usually one or two),
 * not one per reduction.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "lifetime.h"

typedef enum { HELD_OP = 1, HELD_TYPE = 2 } held_kind_t;

typedef struct {
  held_kind_t kind;
  MPI_Op op;          /* HELD_OP   */
  MPI_Datatype type;  /* HELD_TYPE */
  uint64_t refs;      /* pending reductions using the handle */
  uint64_t frees;     /* MPI_*_free calls deferred until refs drops to 0 */
} held_t;

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static held_t *held;
static size_t nheld, held_cap;
static uint64_t frees_deferred, frees_done_late; /* statistics, under held_mu */

static held_t *held_find(held_kind_t kind, MPI_Op op, MPI_Datatype type) {
  size_t i;
  for (i = 0; i < nheld; i++) {
    if (held[i].kind != kind) continue;
    if (kind == HELD_OP ? held[i].op == op : held[i].type == type) return &held[i];
  }
  return NULL;
}

/* Take one reference; returns DRED_OK or DRED_ERR_NOMEM.  Under held_mu. */
static int held_take(held_kind_t kind, MPI_Op op, MPI_Datatype type) {
  held_t *h = held_find(kind, op, type);
  if (h == NULL) {
    if (nheld == held_cap) {
      size_t cap = held_cap ? held_cap * 2 : 8;
      held_t *nh = realloc(held, cap * sizeof *nh);
      if (nh == NULL) return DRED_ERR_NOMEM;
      held = nh;
      held_cap = cap;
    }
    h = &held[nheld++];
    memset(h, 0, sizeof *h);
    h->kind = kind;
    h->op = op;
    h->type = type;
  }
  h->refs++;
  return DRED_OK;
}

/* Drop one reference; returns how many frees are now due (the entry is gone then).
 * Under held_mu. */
static uint64_t held_drop(held_kind_t kind, MPI_Op op, MPI_Datatype type) {
  held_t *h = held_find(kind, op, type);
  uint64_t due;
  if (h == NULL || h->refs == 0) {
    DRED_ERROR("internal: release of an %s handle dred does not hold",
               kind == HELD_OP ? "op" : "datatype");
    return 0;
  }
  if (--h->refs > 0) return 0;
  due = h->frees;
  *h = held[--nheld]; /* keep the array dense; order does not matter */
  if (due > 0) frees_done_late += due;
  return due;
}

static int type_is_derived(MPI_Datatype type) {
  int ni = 0, na = 0, nd = 0, combiner = MPI_COMBINER_NAMED;
  if (type == MPI_DATATYPE_NULL) return 0;
  MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  return combiner != MPI_COMBINER_NAMED;
}

int dred_lifetime_hold(MPI_Op op, int op_is_user, MPI_Datatype type, int type_is_named,
                       int *held_flags) {
  int rc = DRED_OK, derived = !type_is_named && type_is_derived(type);
  *held_flags = 0;
  if (!op_is_user && !derived) return DRED_OK; /* nothing freeable: the common case */
  pthread_mutex_lock(&held_mu);
  if (op_is_user) {
    rc = held_take(HELD_OP, op, MPI_DATATYPE_NULL);
    if (rc == DRED_OK) *held_flags |= DRED_HELD_OP;
  }
  if (rc == DRED_OK && derived) {
    rc = held_take(HELD_TYPE, MPI_OP_NULL, type);
    if (rc == DRED_OK) *held_flags |= DRED_HELD_TYPE;
  }
  pthread_mutex_unlock(&held_mu);
  if (rc != DRED_OK) {
    dred_lifetime_release(op, type, *held_flags);
    *held_flags = 0;
    DRED_ERROR("dred_ireduce: no memory to hold the op/datatype for the reduction");
  }
  return rc;
}

void dred_lifetime_release(MPI_Op op, MPI_Datatype type, int held_flags) {
  uint64_t op_frees = 0, type_frees = 0;
  if (held_flags == 0) return;
  pthread_mutex_lock(&held_mu);
  if (held_flags & DRED_HELD_OP) op_frees = held_drop(HELD_OP, op, MPI_DATATYPE_NULL);
  if (held_flags & DRED_HELD_TYPE) type_frees = held_drop(HELD_TYPE, MPI_OP_NULL, type);
  pthread_mutex_unlock(&held_mu);
  /* The frees the application asked for while the reduction ran, now that nothing of dred
   * uses the handle any more.  Outside the mutex: MPI may take its own lock. */
  for (; op_frees > 0; op_frees--) {
    MPI_Op h = op;
    if (PMPI_Op_free(&h) != MPI_SUCCESS) DRED_ERROR("deferred MPI_Op_free failed");
  }
  for (; type_frees > 0; type_frees--) {
    MPI_Datatype h = type;
    if (PMPI_Type_free(&h) != MPI_SUCCESS) DRED_ERROR("deferred MPI_Type_free failed");
  }
}

void dred_lifetime_stats(uint64_t *handles_held, uint64_t *deferred, uint64_t *done_late) {
  pthread_mutex_lock(&held_mu);
  *handles_held = nheld;
  *deferred = frees_deferred;
  *done_late = frees_done_late;
  pthread_mutex_unlock(&held_mu);
}

/* ---- the profiling-interface wrappers ------------------------------------------------- */

/* Exported from libdred.so like the API (DRED_EXTERN, despite -fvisibility=hidden): the
 * dynamic linker must find them before libmpi's, or frees would not be deferred. */
DRED_EXTERN int MPI_Op_free(MPI_Op *op) {
  held_t *h;
  if (op != NULL && *op != MPI_OP_NULL) {
    pthread_mutex_lock(&held_mu);
    if ((h = held_find(HELD_OP, *op, MPI_DATATYPE_NULL)) != NULL) {
      h->frees++;
      frees_deferred++;
      pthread_mutex_unlock(&held_mu);
      DRED_DEBUG("MPI_Op_free deferred: a pending reduction uses the op");
      *op = MPI_OP_NULL;
      return MPI_SUCCESS;
    }
    pthread_mutex_unlock(&held_mu);
  }
  return PMPI_Op_free(op);
}

DRED_EXTERN int MPI_Type_free(MPI_Datatype *type) {
  held_t *h;
  if (type != NULL && *type != MPI_DATATYPE_NULL) {
    pthread_mutex_lock(&held_mu);
    if ((h = held_find(HELD_TYPE, MPI_OP_NULL, *type)) != NULL) {
      h->frees++;
      frees_deferred++;
      pthread_mutex_unlock(&held_mu);
      DRED_DEBUG("MPI_Type_free deferred: a pending reduction uses the datatype");
      *type = MPI_DATATYPE_NULL;
      return MPI_SUCCESS;
    }
    pthread_mutex_unlock(&held_mu);
  }
  return PMPI_Type_free(type);
}
