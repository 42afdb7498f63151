/*
 * future.c -- the future a dred_ireduce() call returns.
 *
 * Two references: the application's (dropped by dred_future_free) and the runtime's
 * (dropped when the reduction ends).  Whoever drops the last one frees it, so an
 * application may free a future that is still pending without the runtime touching freed
 * memory later.
 */
#include <stdlib.h>

#include "../common/log.h"
#include "runtime.h"

dred_future *dred_future_new(void) {
  dred_future *f = calloc(1, sizeof *f);
  if (f == NULL) return NULL;
  if (uv_mutex_init(&f->mu) != 0) {
    free(f);
    return NULL;
  }
  if (uv_cond_init(&f->cv) != 0) {
    uv_mutex_destroy(&f->mu);
    free(f);
    return NULL;
  }
  f->refs = 2;
  return f;
}

static void future_unref_locked_and_unlock(dred_future *f) {
  int last = --f->refs == 0;
  uv_mutex_unlock(&f->mu);
  if (last) {
    uv_cond_destroy(&f->cv);
    uv_mutex_destroy(&f->mu);
    free(f);
  }
}

void dred_future_complete(dred_future *f, int status) {
  uv_mutex_lock(&f->mu);
  if (!f->done) {
    f->done = 1;
    f->status = status;
    uv_cond_broadcast(&f->cv);
  }
  future_unref_locked_and_unlock(f);
}

int dred_future_get(dred_future *f) {
  int st;
  if (f == NULL) {
    DRED_ERROR("dred_future_get: future is NULL");
    return DRED_ERR_ARG;
  }
  uv_mutex_lock(&f->mu);
  while (!f->done) uv_cond_wait(&f->cv, &f->mu);
  st = f->status;
  uv_mutex_unlock(&f->mu);
  return st;
}

int dred_future_is_done(dred_future *f) {
  int d;
  if (f == NULL) return -1;
  uv_mutex_lock(&f->mu);
  d = f->done;
  uv_mutex_unlock(&f->mu);
  return d;
}

void dred_future_free(dred_future *f) {
  if (f == NULL) return;
  uv_mutex_lock(&f->mu);
  future_unref_locked_and_unlock(f);
}
