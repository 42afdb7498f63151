/*
 * sockpath.h -- a Unix-domain socket address for a path of any length.
 *
 * sun_path holds 107 bytes, and a job's directory under a deep DRED_STORAGE_DIR (a build
 * tree, a cluster's scratch file system) is often longer.  A path that does not fit is
 * reached through its directory instead: the directory is opened (O_PATH) and the socket
 * is named /proc/self/fd/<fd>/<name>, which the kernel resolves at bind(2) and connect(2)
 * time to the same file.  The descriptor is needed only until that call returns.
 */
#ifndef DRED_SOCKPATH_H
#define DRED_SOCKPATH_H

#include <sys/un.h>

typedef struct {
  char addr[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* what to bind or connect to */
  int dirfd;                                              /* -1 when addr is the path itself */
} dred_sockpath_t;

/* Fill sp for `path`.  0 on success; -1 (errno set) if the path is too long and its
 * directory cannot be opened, or the name alone does not fit. */
int dred_sockpath_init(dred_sockpath_t *sp, const char *path);
/* Release the directory descriptor (after bind/connect); safe to call twice. */
void dred_sockpath_close(dred_sockpath_t *sp);

#endif /* DRED_SOCKPATH_H */
