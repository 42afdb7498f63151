/*
 * test_privdir.c -- the default storage directory cannot be squatted (common/privdir.c).
 *
 * Each test works in its own mkdtemp() directory, which stands in for /tmp (the shared
 * temporary directory is an argument of dred_privdir_default for this reason), and with
 * XDG_RUNTIME_DIR unset unless the test sets it.  Covered: <tmp>/dred-<uid> absent or
 * private is the default; one squatted -- owned by another user (root only: chowned to
 * nobody), open to others (0755), a symbolic link to a private directory, a plain file --
 * is never used: with create, a fresh private <tmp>/dred-<uid>-XXXXXX is made (and the
 * squatted one left as it was); without, it is reported as squatted and nothing is made.
 * A private XDG_RUNTIME_DIR gives $XDG_RUNTIME_DIR/dred; one open to others or relative
 * is ignored.  dred_privdir_check says why a directory is refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../common/privdir.h"

typedef struct {
  char tmp[64];  /* the stand-in for /tmp */
  char home[96]; /* <tmp>/dred-<uid>      */
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->tmp, sizeof f->tmp, "/tmp/dred-test-privdir.XXXXXX");
  if (mkdtemp(f->tmp) == NULL) {
    free(f);
    return -1;
  }
  snprintf(f->home, sizeof f->home, "%s/dred-%ld", f->tmp, (long)geteuid());
  unsetenv("XDG_RUNTIME_DIR");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->tmp);
  if (system(cmd) != 0) return -1;
  unsetenv("XDG_RUNTIME_DIR");
  free(f);
  return 0;
}

/* The default is <tmp>/dred-<uid> when absent (not created here: the storage checks do)
 * and when it is ours and 0700. */
static void test_plain_default(void **state) {
  fixture_t *f = *state;
  char out[512];
  assert_int_equal(dred_privdir_default(f->tmp, 1, out, sizeof out), DRED_PRIVDIR_TMP);
  assert_string_equal(out, f->home);
  assert_int_equal(dred_privdir_check(f->home, NULL, 0), ENOENT);
  assert_int_equal(mkdir(f->home, 0700), 0);
  assert_int_equal(dred_privdir_default(f->tmp, 1, out, sizeof out), DRED_PRIVDIR_TMP);
  assert_string_equal(out, f->home);
  assert_int_equal(dred_privdir_check(f->home, NULL, 0), 0);
}

/* A squatted <tmp>/dred-<uid>: a fresh private directory instead, the squatted one
 * untouched; without create, reported and nothing made. */
static void expect_fresh(fixture_t *f, const char *what) {
  char out[512], why[256], prefix[128];
  struct stat before, after;
  print_message("squatted by %s\n", what);
  assert_int_equal(lstat(f->home, &before), 0);
  assert_true(dred_privdir_check(f->home, why, sizeof why) < 0);
  assert_true(why[0] != '\0');
  assert_int_equal(dred_privdir_default(f->tmp, 0, out, sizeof out), DRED_PRIVDIR_SQUATTED);
  assert_string_equal(out, f->home);
  assert_int_equal(dred_privdir_default(f->tmp, 1, out, sizeof out), DRED_PRIVDIR_FRESH);
  snprintf(prefix, sizeof prefix, "%s-", f->home);
  assert_int_equal(strncmp(out, prefix, strlen(prefix)), 0);
  assert_int_equal(strlen(out), strlen(prefix) + 6);
  assert_int_equal(dred_privdir_check(out, NULL, 0), 0);
  assert_int_equal(lstat(f->home, &after), 0);
  assert_int_equal(after.st_mode, before.st_mode);
  assert_int_equal(after.st_uid, before.st_uid);
  assert_int_equal(rmdir(out), 0);
}

static void test_squatted_open(void **state) {
  fixture_t *f = *state;
  assert_int_equal(mkdir(f->home, 0700), 0);
  assert_int_equal(chmod(f->home, 0755), 0);
  expect_fresh(f, "a 0755 directory");
}

static void test_squatted_other_user(void **state) {
  fixture_t *f = *state;
  char why[256];
  if (geteuid() != 0) {
    print_message("skipped: chown to another user needs root\n");
    return;
  }
  assert_int_equal(mkdir(f->home, 0700), 0);
  assert_int_equal(chown(f->home, 65534, 65534), 0);
  assert_true(dred_privdir_check(f->home, why, sizeof why) < 0);
  assert_non_null(strstr(why, "owned by uid 65534"));
  expect_fresh(f, "another user's 0700 directory");
}

static void test_squatted_link_and_file(void **state) {
  fixture_t *f = *state;
  char target[128];
  FILE *fp;
  snprintf(target, sizeof target, "%s/mine", f->tmp);
  assert_int_equal(mkdir(target, 0700), 0);
  assert_int_equal(symlink(target, f->home), 0);
  expect_fresh(f, "a symbolic link to a private directory");
  assert_int_equal(unlink(f->home), 0);
  fp = fopen(f->home, "w");
  assert_non_null(fp);
  fclose(fp);
  expect_fresh(f, "a plain file");
}

static void test_xdg(void **state) {
  fixture_t *f = *state;
  char xdg[128], out[512], want[160];
  snprintf(xdg, sizeof xdg, "%s/run", f->tmp);
  assert_int_equal(mkdir(xdg, 0700), 0);
  setenv("XDG_RUNTIME_DIR", xdg, 1);
  assert_int_equal(dred_privdir_default(f->tmp, 1, out, sizeof out), DRED_PRIVDIR_XDG);
  snprintf(want, sizeof want, "%s/dred", xdg);
  assert_string_equal(out, want);
  assert_int_equal(chmod(xdg, 0755), 0); /* not private: ignored */
  assert_int_equal(dred_privdir_default(f->tmp, 1, out, sizeof out), DRED_PRIVDIR_TMP);
  assert_string_equal(out, f->home);
  setenv("XDG_RUNTIME_DIR", "run", 1); /* relative: ignored */
  assert_int_equal(dred_privdir_default(f->tmp, 1, out, sizeof out), DRED_PRIVDIR_TMP);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_plain_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_squatted_open, setup, teardown),
      cmocka_unit_test_setup_teardown(test_squatted_other_user, setup, teardown),
      cmocka_unit_test_setup_teardown(test_squatted_link_and_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_xdg, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
