/*
 * deathwatch.c -- robust mutexes in a node-shared file (see deathwatch.h for why).
 *
 * File layout: a header (magic, slot count) and one 128-byte slot per rank, each holding a
 * robust process-shared pthread mutex, the slot's state and the holder's pid.  The states
 * let a watch thread tell the three ways its lock can succeed apart:
 *   EOWNERDEAD            the holder died: report (once), then stop watching;
 *   0, state LEFT         the holder released it on an orderly exit: stop quietly;
 *   0, state FREE         nobody has held it yet: let go, nap (1 ms doubling to 100 ms), retry.
 * A mutex whose owner died is made consistent again before it is unlocked, so the slot
 * never becomes unusable for the one waiter there is.
 */
#include "deathwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../include/dred_status.h"
#include "log.h"

#define WATCH_MAGIC 0x48435457u /* "WTCH" */
#define WATCH_STEP_MS 100       /* how long a watch thread blocks before looking at `stop` */

enum { SLOT_FREE = 0, SLOT_HELD = 1, SLOT_LEFT = 2 };

typedef struct {
  pthread_mutex_t mu;
  _Atomic uint32_t state;
  int32_t pid;
} watch_slot_raw_t;

typedef union {
  watch_slot_raw_t s;
  char pad[128]; /* slots on separate cache lines: holders never share one */
} watch_slot_t;

typedef struct {
  uint32_t magic;
  uint32_t nslots;
  char pad[120];
} watch_head_t;

typedef struct {
  dred_watch_t *w;
  int slot;
  uv_thread_t thread;
} watcher_t;

struct dred_watch {
  watch_head_t *head;
  watch_slot_t *slots;
  size_t map_len;
  int nslots;
  /* watcher side */
  uv_async_t async;
  int async_open;
  watcher_t *watchers;
  int nwatchers;
  _Atomic int stop;
  _Atomic uint32_t *dead;   /* by slot: 1 = died, not yet reported to the loop */
  _Atomic unsigned deaths;
  dred_watch_cb cb;
  void *arg;
};

static size_t map_size(int nslots) {
  return sizeof(watch_head_t) + (size_t)nslots * sizeof(watch_slot_t);
}

static int map_file(int fd, size_t len, dred_watch_t **out) {
  dred_watch_t *w = calloc(1, sizeof *w);
  void *p;
  if (w == NULL) return DRED_ERR_NOMEM;
  p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    DRED_WARN("death watch: mmap of %zu bytes failed: %s", len, strerror(errno));
    free(w);
    return DRED_ERR_INTERNAL;
  }
  w->head = p;
  w->slots = (watch_slot_t *)((char *)p + sizeof(watch_head_t));
  w->map_len = len;
  *out = w;
  return DRED_OK;
}

int dred_watch_create(const char *path, int nslots, dred_watch_t **out) {
  pthread_mutexattr_t attr;
  size_t len;
  int fd, i, rc;

  if (path == NULL || out == NULL || nslots < 1 || nslots > (1 << 20)) return DRED_ERR_ARG;
  *out = NULL;
  len = map_size(nslots);
  fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    DRED_WARN("death watch: cannot create %s: %s", path, strerror(errno));
    return DRED_ERR_INTERNAL;
  }
  if (ftruncate(fd, (off_t)len) != 0) {
    DRED_WARN("death watch: cannot size %s: %s", path, strerror(errno));
    close(fd);
    unlink(path);
    return DRED_ERR_INTERNAL;
  }
  rc = map_file(fd, len, out);
  close(fd);
  if (rc != DRED_OK) {
    unlink(path);
    return rc;
  }
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  for (i = 0; i < nslots; i++) {
    if (pthread_mutex_init(&(*out)->slots[i].s.mu, &attr) != 0) {
      DRED_WARN("death watch: cannot initialise a robust process-shared mutex");
      pthread_mutexattr_destroy(&attr);
      dred_watch_close(*out);
      *out = NULL;
      unlink(path);
      return DRED_ERR_INTERNAL;
    }
    atomic_store(&(*out)->slots[i].s.state, SLOT_FREE);
  }
  pthread_mutexattr_destroy(&attr);
  (*out)->nslots = nslots;
  (*out)->head->nslots = (uint32_t)nslots;
  /* Last: a process that maps the file early sees no magic and refuses it. */
  atomic_thread_fence(memory_order_release);
  (*out)->head->magic = WATCH_MAGIC;
  return DRED_OK;
}

int dred_watch_attach(const char *path, dred_watch_t **out) {
  struct stat st;
  watch_head_t head;
  int fd, rc;

  if (path == NULL || out == NULL) return DRED_ERR_ARG;
  *out = NULL;
  fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    DRED_WARN("death watch: cannot open %s: %s", path, strerror(errno));
    return DRED_ERR_INTERNAL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0 || (size_t)st.st_size < sizeof head ||
      pread(fd, &head, sizeof head, 0) != (ssize_t)sizeof head || head.magic != WATCH_MAGIC ||
      head.nslots < 1 || head.nslots > (1u << 20) ||
      (size_t)st.st_size != map_size((int)head.nslots)) {
    DRED_WARN("death watch: %s is not a private watch file of this user: not used", path);
    close(fd);
    return DRED_ERR_INTERNAL;
  }
  rc = map_file(fd, (size_t)st.st_size, out);
  close(fd);
  if (rc == DRED_OK) (*out)->nslots = (int)head.nslots;
  return rc;
}

int dred_watch_hold(dred_watch_t *w, int slot) {
  watch_slot_raw_t *s;
  int rc;
  if (w == NULL || slot < 0 || slot >= w->nslots) return DRED_ERR_ARG;
  s = &w->slots[slot].s;
  if (atomic_load(&s->state) != SLOT_FREE) return DRED_ERR_ARG;
  /* A watch thread may hold it for a moment (it found the slot FREE): this waits for it. */
  rc = pthread_mutex_lock(&s->mu);
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(&s->mu);
    rc = 0;
  }
  if (rc != 0) {
    DRED_WARN("death watch: cannot lock slot %d: %s", slot, strerror(rc));
    return DRED_ERR_INTERNAL;
  }
  s->pid = (int32_t)getpid();
  atomic_store(&s->state, SLOT_HELD);
  return DRED_OK;
}

void dred_watch_release(dred_watch_t *w, int slot) {
  watch_slot_raw_t *s;
  if (w == NULL || slot < 0 || slot >= w->nslots) return;
  s = &w->slots[slot].s;
  if (atomic_load(&s->state) != SLOT_HELD) return;
  atomic_store(&s->state, SLOT_LEFT);
  pthread_mutex_unlock(&s->mu);
}

static void on_async(uv_async_t *a) {
  dred_watch_t *w = a->data;
  int i;
  for (i = 0; i < w->nslots; i++)
    if (atomic_exchange(&w->dead[i], 0) != 0 && w->cb != NULL) w->cb(w, i, w->arg);
}

static void watch_main(void *arg) {
  watcher_t *me = arg;
  dred_watch_t *w = me->w;
  watch_slot_raw_t *s = &w->slots[me->slot].s;
  long nap_ms = 1;

  while (!atomic_load(&w->stop)) {
    struct timespec until;
    int rc;
    clock_gettime(CLOCK_REALTIME, &until); /* pthread_mutex_timedlock's clock */
    until.tv_nsec += WATCH_STEP_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    rc = pthread_mutex_timedlock(&s->mu, &until);
    if (rc == ETIMEDOUT) continue; /* held: the holder lives */
    if (rc == EOWNERDEAD) {
      pthread_mutex_consistent(&s->mu);
      pthread_mutex_unlock(&s->mu);
      atomic_fetch_add(&w->deaths, 1);
      atomic_store(&w->dead[me->slot], 1);
      uv_async_send(&w->async);
      return;
    }
    if (rc != 0) {
      DRED_WARN("death watch: slot %d cannot be watched: %s", me->slot, strerror(rc));
      return;
    }
    /* We got it: the holder has not taken it yet, or left in order. */
    {
      uint32_t st = atomic_load(&s->state);
      pthread_mutex_unlock(&s->mu);
      if (st == SLOT_LEFT) return;
    }
    {
      struct timespec nap = {0, nap_ms * 1000000L};
      nanosleep(&nap, NULL);
      if (nap_ms < WATCH_STEP_MS) nap_ms *= 2;
    }
  }
}

int dred_watch_start(dred_watch_t *w, uv_loop_t *loop, const int *slots, int n,
                     dred_watch_cb cb, void *arg) {
  int i;
  if (w == NULL || loop == NULL || (n > 0 && slots == NULL) || n < 0 || w->watchers != NULL)
    return DRED_ERR_ARG;
  for (i = 0; i < n; i++)
    if (slots[i] < 0 || slots[i] >= w->nslots) return DRED_ERR_ARG;
  w->cb = cb;
  w->arg = arg;
  if ((w->dead = calloc((size_t)w->nslots, sizeof *w->dead)) == NULL ||
      (w->watchers = calloc((size_t)(n > 0 ? n : 1), sizeof *w->watchers)) == NULL)
    return DRED_ERR_NOMEM;
  if (uv_async_init(loop, &w->async, on_async) != 0) return DRED_ERR_INTERNAL;
  w->async.data = w;
  w->async_open = 1;
  for (i = 0; i < n; i++) {
    uv_thread_options_t opt;
    opt.flags = UV_THREAD_HAS_STACK_SIZE;
    opt.stack_size = 64 * 1024; /* one small thread per watched process */
    w->watchers[i].w = w;
    w->watchers[i].slot = slots[i];
    if (uv_thread_create_ex(&w->watchers[i].thread, &opt, watch_main, &w->watchers[i]) != 0) {
      DRED_WARN("death watch: cannot start a watch thread for slot %d", slots[i]);
      dred_watch_stop(w);
      return DRED_ERR_INTERNAL;
    }
    w->nwatchers++;
  }
  return DRED_OK;
}

static void async_closed(uv_handle_t *h) { (void)h; }

void dred_watch_stop(dred_watch_t *w) {
  int i;
  if (w == NULL) return;
  atomic_store(&w->stop, 1);
  for (i = 0; i < w->nwatchers; i++) uv_thread_join(&w->watchers[i].thread);
  w->nwatchers = 0;
  if (w->async_open) {
    uv_close((uv_handle_t *)&w->async, async_closed);
    w->async_open = 0;
  }
}

void dred_watch_close(dred_watch_t *w) {
  if (w == NULL) return;
  if (w->head != NULL) munmap(w->head, w->map_len);
  free(w->watchers);
  free((void *)w->dead);
  free(w);
}

unsigned dred_watch_deaths(const dred_watch_t *w) {
  return w == NULL ? 0 : atomic_load(&((dred_watch_t *)w)->deaths);
}
