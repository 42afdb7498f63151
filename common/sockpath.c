/*
 * sockpath.c -- see sockpath.h.  Linux only (/proc/self/fd), like the rest of dred.
 */
#define _GNU_SOURCE
#include "sockpath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int dred_sockpath_init(dred_sockpath_t *sp, const char *path) {
  char dir[4096];
  const char *slash;
  size_t dlen;
  int n;

  if (sp == NULL || path == NULL || path[0] == '\0') {
    errno = EINVAL;
    return -1;
  }
  sp->dirfd = -1;
  if (strlen(path) < sizeof sp->addr) {
    memcpy(sp->addr, path, strlen(path) + 1);
    return 0;
  }
  slash = strrchr(path, '/');
  if (slash == NULL || slash[1] == '\0') {
    errno = ENAMETOOLONG;
    return -1;
  }
  dlen = slash == path ? 1 : (size_t)(slash - path);
  if (dlen >= sizeof dir) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(dir, path, dlen);
  dir[dlen] = '\0';
  if ((sp->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) return -1;
  n = snprintf(sp->addr, sizeof sp->addr, "/proc/self/fd/%d/%s", sp->dirfd, slash + 1);
  if (n < 0 || (size_t)n >= sizeof sp->addr) {
    dred_sockpath_close(sp);
    errno = ENAMETOOLONG;
    return -1;
  }
  return 0;
}

void dred_sockpath_close(dred_sockpath_t *sp) {
  if (sp != NULL && sp->dirfd >= 0) {
    close(sp->dirfd);
    sp->dirfd = -1;
  }
}
