/*
 * leave.c -- see leave.h.  A fixed table of paths, published by a count: the handler reads
 * only the entries below the count it sees, and an entry is written before the count that
 * covers it, so a signal in the middle of dred_leave_add sees a whole table.
 */
#include "leave.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static char paths[DRED_LEAVE_MAX][DRED_LEAVE_PATH_MAX];
static int is_dirs[DRED_LEAVE_MAX];
static volatile sig_atomic_t count;

void dred_leave_add(const char *path, int is_dir) {
  size_t len;
  int i = count;
  if (path == NULL || path[0] == '\0') return;
  len = strlen(path);
  if (i >= DRED_LEAVE_MAX || len >= DRED_LEAVE_PATH_MAX) {
    DRED_WARN("%s will not be removed if a signal ends this process (%s)", path,
              i >= DRED_LEAVE_MAX ? "too many paths" : "path too long");
    return;
  }
  memcpy(paths[i], path, len + 1);
  is_dirs[i] = is_dir;
  __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the entry before the count that covers it */
  count = i + 1;
}

void dred_leave_clear(void) { count = 0; }

void dred_leave_now(void) {
  int i, n = count;
  for (i = 0; i < n; i++) {
    if (is_dirs[i])
      (void)rmdir(paths[i]);
    else
      (void)unlink(paths[i]);
  }
}
