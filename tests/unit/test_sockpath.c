/*
 * test_sockpath.c -- common/sockpath.c: a Unix socket at a path longer than sun_path
 * (the status socket under a deep DRED_STORAGE_DIR) can be bound, connected to and
 * unlinked by its real path; a short path is used as it is; what cannot work is refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/sockpath.h"

static char base[64];

static int setup(void **state) {
  (void)state;
  /* a mkdtemp(3) template: the X's are replaced by the call below */
  snprintf(base, sizeof base, "/tmp/dred-sockpath.XXXXXX");
  return mkdtemp(base) == NULL ? -1 : 0;
}

static int teardown(void **state) {
  char cmd[128];
  (void)state;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  return system(cmd) == 0 ? 0 : -1;
}

static int do_socket(const char *path, int listen_not_connect) {
  struct sockaddr_un sa;
  dred_sockpath_t sp;
  int fd, rc;
  if (dred_sockpath_init(&sp, path) != 0) return -1;
  fd = socket(AF_UNIX, SOCK_STREAM, 0);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, sp.addr, sizeof sp.addr);
  rc = listen_not_connect ? bind(fd, (struct sockaddr *)&sa, sizeof sa)
                          : connect(fd, (struct sockaddr *)&sa, sizeof sa);
  if (rc == 0 && listen_not_connect) rc = listen(fd, 1);
  dred_sockpath_close(&sp);
  dred_sockpath_close(&sp); /* twice is harmless */
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void test_short_path_as_is(void **state) {
  dred_sockpath_t sp;
  char path[128];
  (void)state;
  snprintf(path, sizeof path, "%s/s.sock", base);
  assert_int_equal(dred_sockpath_init(&sp, path), 0);
  assert_string_equal(sp.addr, path);
  assert_int_equal(sp.dirfd, -1);
}

static void test_long_path_bind_connect(void **state) {
  char dir[512], path[600];
  struct stat sb;
  int lfd, cfd;
  (void)state;
  snprintf(dir, sizeof dir, "%s/", base);
  while (strlen(dir) < 200) strcat(dir, "d");
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/dred-master.sock", dir);
  assert_true(strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path));
  lfd = do_socket(path, 1);
  assert_true(lfd >= 0);
  /* The socket file is where the long path says, not under /proc. */
  assert_int_equal(lstat(path, &sb), 0);
  assert_true(S_ISSOCK(sb.st_mode));
  cfd = do_socket(path, 0);
  assert_true(cfd >= 0);
  close(cfd);
  close(lfd);
  assert_int_equal(unlink(path), 0);
}

static void test_refused(void **state) {
  dred_sockpath_t sp;
  char path[600];
  (void)state;
  assert_int_equal(dred_sockpath_init(&sp, ""), -1);
  assert_int_equal(dred_sockpath_init(NULL, "/x"), -1);
  /* long, and its directory does not exist */
  snprintf(path, sizeof path, "%s/", base);
  while (strlen(path) < 200) strcat(path, "n");
  strcat(path, "/s.sock");
  assert_int_equal(dred_sockpath_init(&sp, path), -1);
  assert_int_equal(errno, ENOENT);
  /* long, and the file name alone does not fit */
  snprintf(path, sizeof path, "%s/", base);
  while (strlen(path) < 300) strcat(path, "f");
  assert_int_equal(dred_sockpath_init(&sp, path), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_short_path_as_is),
      cmocka_unit_test(test_long_path_bind_connect),
      cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
