/*
 * test_storedir.c -- the storage directory is private (storage/storedir.c).
 *
 * Each test works in its own mkdtemp() directory under a umask of 022 (a usual one, under
 * which SQLite alone created 0644 files).  Covered: a missing base directory is created
 * 0700; one owned by another user (root only: the test chowns it to nobody), one of mode
 * 0777 and a symbolic link to a private directory are refused; so is a path longer than
 * DRED_STOREDIR_MAX (not cut short into its parent); a symbolic link planted where a
 * replica store or a journal goes is refused and its target neither created nor
 * touched; stores, their side files and journals are 0600; the per-job directory is
 * created 0700, accepted when it exists and is ours, refused otherwise, bad job ids are
 * refused, and release removes it only when empty.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
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

#include "../../storage/journal.h"
#include "../../storage/replica.h"
#include "../../storage/storedir.h"

typedef struct {
  char dir[64];
  mode_t old_umask;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  /* a mkdtemp(3) template: the X's are replaced by the call below */
  snprintf(f->dir, sizeof f->dir, "/tmp/dred-test-storedir.XXXXXX");
  if (mkdtemp(f->dir) == NULL) {
    free(f);
    return -1;
  }
  f->old_umask = umask(022);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  char cmd[128];
  umask(f->old_umask);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  if (system(cmd) != 0) return -1;
  free(f);
  return 0;
}

static mode_t mode_of(const char *path) {
  struct stat sb;
  assert_int_equal(lstat(path, &sb), 0);
  return sb.st_mode & 07777;
}

static void test_creates_private(void **state) {
  fixture_t *f = *state;
  char d[160];
  snprintf(d, sizeof d, "%s/a/b", f->dir);
  assert_int_equal(dred_storedir_check(d), DRED_OK);
  assert_int_equal(mode_of(d), 0700);
  snprintf(d, sizeof d, "%s/a", f->dir);
  assert_int_equal(mode_of(d), 0700);
  assert_int_equal(dred_storedir_check(d), DRED_OK); /* existing and ours: fine */
}

static void test_refuses_open_mode(void **state) {
  fixture_t *f = *state;
  char d[160];
  dred_replica_t *r = (dred_replica_t *)0x1;
  snprintf(d, sizeof d, "%s/open", f->dir);
  assert_int_equal(mkdir(d, 0700), 0);
  assert_int_equal(chmod(d, 0777), 0);
  assert_int_equal(dred_storedir_check(d), DRED_ERR_STORAGE);
  assert_int_equal(dred_replica_open(d, 1, "job", &r), DRED_ERR_STORAGE);
  assert_null(r);
  assert_int_equal(chmod(d, 0750), 0); /* group access is refused too */
  assert_int_equal(dred_storedir_check(d), DRED_ERR_STORAGE);
  assert_int_equal(chmod(d, 0700), 0);
  assert_int_equal(dred_storedir_check(d), DRED_OK);
}

static void test_refuses_other_owner(void **state) {
  fixture_t *f = *state;
  char d[160];
  struct passwd *pw = getpwnam("nobody");
  if (geteuid() != 0 || pw == NULL) {
    print_message("skip: other owner needs root and a 'nobody' user\n");
    return;
  }
  snprintf(d, sizeof d, "%s/theirs", f->dir);
  assert_int_equal(mkdir(d, 0700), 0);
  assert_int_equal(chown(d, pw->pw_uid, pw->pw_gid), 0);
  assert_int_equal(dred_storedir_check(d), DRED_ERR_STORAGE);
  {
    char job[200];
    assert_int_equal(dred_storedir_job(d, "j1", job, sizeof job), DRED_ERR_STORAGE);
    assert_string_equal(job, "");
  }
  /* Ours, but the job directory inside was planted by another user. */
  snprintf(d, sizeof d, "%s/mine", f->dir);
  assert_int_equal(mkdir(d, 0700), 0);
  {
    char planted[200], job[200];
    snprintf(planted, sizeof planted, "%s/job-j2", d);
    assert_int_equal(mkdir(planted, 0700), 0);
    assert_int_equal(chown(planted, pw->pw_uid, pw->pw_gid), 0);
    assert_int_equal(dred_storedir_job(d, "j2", job, sizeof job), DRED_ERR_STORAGE);
  }
  /* A store file owned by someone else is refused too. */
  {
    char path[200];
    dred_replica_t *r = NULL;
    snprintf(path, sizeof path, "%s/dred-replica-3.db", d);
    close(open(path, O_CREAT | O_WRONLY, 0600));
    assert_int_equal(chown(path, pw->pw_uid, pw->pw_gid), 0);
    assert_int_equal(dred_replica_open(d, 3, "job", &r), DRED_ERR_STORAGE);
  }
}

static void test_refuses_symlinks(void **state) {
  fixture_t *f = *state;
  char real[160], link[160], victim[160], store[200], jpath[200];
  dred_replica_t *r = (dred_replica_t *)0x1;
  dred_journal_t *j = (dred_journal_t *)0x1;
  struct stat sb;

  /* The directory itself is a link (to a perfectly private directory). */
  snprintf(real, sizeof real, "%s/real", f->dir);
  snprintf(link, sizeof link, "%s/link", f->dir);
  assert_int_equal(mkdir(real, 0700), 0);
  assert_int_equal(symlink(real, link), 0);
  assert_int_equal(dred_storedir_check(link), DRED_ERR_STORAGE);
  assert_int_equal(dred_replica_open(link, 1, "job", &r), DRED_ERR_STORAGE);
  assert_null(r);

  /* A link planted where a store goes, pointing at a file that does not exist yet:
   * before the fix SQLite followed it and created the file outside the directory. */
  snprintf(victim, sizeof victim, "%s/victim.db", f->dir);
  snprintf(store, sizeof store, "%s/dred-replica-4.db", real);
  assert_int_equal(symlink(victim, store), 0);
  assert_int_equal(dred_replica_open(real, 4, "job", &r), DRED_ERR_STORAGE);
  assert_null(r);
  assert_int_equal(lstat(victim, &sb), -1);
  assert_int_equal(errno, ENOENT);

  /* ... and pointing at an existing file: it is not modified. */
  {
    FILE *fp = fopen(victim, "w");
    assert_non_null(fp);
    fputs("precious", fp);
    fclose(fp);
  }
  assert_int_equal(dred_replica_open(real, 4, "job", &r), DRED_ERR_STORAGE);
  assert_int_equal(stat(victim, &sb), 0);
  assert_int_equal(sb.st_size, 8);

  /* The journal refuses a link in its place the same way. */
  snprintf(jpath, sizeof jpath, "%s/journal.db", real);
  assert_int_equal(symlink(victim, jpath), 0);
  assert_int_equal(dred_journal_open(jpath, &j), DRED_ERR_STORAGE);
  assert_null(j);
  assert_int_equal(stat(victim, &sb), 0);
  assert_int_equal(sb.st_size, 8);
}

static void test_refuses_long_path(void **state) {
  fixture_t *f = *state;
  char d[DRED_STOREDIR_MAX + 64], job[DRED_STOREDIR_MAX + 128];
  dred_replica_t *r = (dred_replica_t *)0x1;
  size_t n;
  struct stat sb;

  /* Exactly at the limit: accepted (made of 100-byte components). */
  n = (size_t)snprintf(d, sizeof d, "%s", f->dir);
  while (n + 101 <= DRED_STOREDIR_MAX) {
    d[n++] = '/';
    memset(d + n, 'x', 100);
    n += 100;
    d[n] = '\0';
  }
  assert_int_equal(dred_storedir_check(d), DRED_OK);
  /* One byte over: refused, and nothing is created in its parent. */
  memset(d + n, 'y', DRED_STOREDIR_MAX + 1 - n);
  d[DRED_STOREDIR_MAX + 1] = '\0';
  assert_int_equal(strlen(d), DRED_STOREDIR_MAX + 1);
  assert_int_equal(dred_storedir_check(d), DRED_ERR_STORAGE);
  assert_int_equal(dred_replica_open(d, 1, "job", &r), DRED_ERR_STORAGE);
  assert_null(r);
  assert_int_equal(dred_storedir_job(d, "j", job, sizeof job), DRED_ERR_STORAGE);
  assert_int_equal(lstat(d, &sb), -1);
}

static void test_file_modes(void **state) {
  fixture_t *f = *state;
  char path[200], side[220];
  dred_replica_t *r;
  dred_journal_t *j;
  double x[1024] = {1.0};
  struct stat sb;
  const char *sfx[] = {"-journal", "-wal", "-shm"};
  size_t i;

  assert_int_equal(dred_replica_open(f->dir, 5, "job", &r), DRED_OK);
  assert_int_equal(dred_replica_put(r, 1, 2, 3, x, sizeof x), DRED_OK);
  snprintf(path, sizeof path, "%s/dred-replica-5.db", f->dir);
  assert_int_equal(mode_of(path), 0600);
  for (i = 0; i < 3; i++) {
    snprintf(side, sizeof side, "%s%s", path, sfx[i]);
    if (lstat(side, &sb) == 0) assert_int_equal(sb.st_mode & 07777, 0600);
  }
  assert_int_equal(dred_replica_close(r), DRED_OK);

  snprintf(path, sizeof path, "%s/journal.db", f->dir);
  assert_int_equal(dred_journal_open(path, &j), DRED_OK);
  assert_int_equal(dred_journal_meta(j, "k", "v"), DRED_OK);
  assert_int_equal(dred_journal_flush(j), DRED_OK);
  assert_int_equal(mode_of(path), 0600);
  for (i = 0; i < 3; i++) {
    snprintf(side, sizeof side, "%s%s", path, sfx[i]);
    if (lstat(side, &sb) == 0) assert_int_equal(sb.st_mode & 07777, 0600);
  }
  assert_int_equal(dred_journal_close(j), DRED_OK);

  /* An existing store of ours with a wide mode is narrowed. */
  snprintf(path, sizeof path, "%s/dred-replica-6.db", f->dir);
  close(open(path, O_CREAT | O_WRONLY, 0644));
  assert_int_equal(chmod(path, 0666), 0);
  assert_int_equal(dred_replica_open(f->dir, 6, "job", &r), DRED_OK);
  assert_int_equal(mode_of(path), 0600);
  assert_int_equal(dred_replica_close(r), DRED_OK);
}

static void test_job_dir(void **state) {
  fixture_t *f = *state;
  char base[160], job[300], job2[300], file[340];
  snprintf(base, sizeof base, "%s/base", f->dir);
  assert_int_equal(dred_storedir_job(base, "1700000000-42-ab12", job, sizeof job), DRED_OK);
  assert_int_equal(mode_of(base), 0700);
  assert_int_equal(mode_of(job), 0700);
  assert_non_null(strstr(job, "/job-1700000000-42-ab12"));
  /* A second process of the job on this node accepts it; another job gets its own. */
  assert_int_equal(dred_storedir_job(base, "1700000000-42-ab12", job2, sizeof job2), DRED_OK);
  assert_string_equal(job, job2);
  assert_int_equal(dred_storedir_job(base, "other", job2, sizeof job2), DRED_OK);
  assert_string_not_equal(job, job2);
  /* Bad ids: a path in disguise, empty, too long, odd characters. */
  assert_int_equal(dred_storedir_job(base, "../x", job2, sizeof job2), DRED_ERR_ARG);
  assert_int_equal(dred_storedir_job(base, "", job2, sizeof job2), DRED_ERR_ARG);
  assert_int_equal(dred_storedir_job(base, ".hidden", job2, sizeof job2), DRED_ERR_ARG);
  assert_int_equal(dred_storedir_job(base, "a b", job2, sizeof job2), DRED_ERR_ARG);
  assert_int_equal(dred_storedir_job(base, "0123456789012345678901234567890123456789012345678",
                                     job2, sizeof job2), DRED_ERR_ARG);
  /* A job directory opened up by someone is refused. */
  assert_int_equal(chmod(job, 0755), 0);
  assert_int_equal(dred_storedir_job(base, "1700000000-42-ab12", job2, sizeof job2),
                   DRED_ERR_STORAGE);
  assert_int_equal(chmod(job, 0700), 0);
  /* Release removes it only when empty. */
  snprintf(file, sizeof file, "%s/journal.db", job);
  close(open(file, O_CREAT | O_WRONLY, 0600));
  dred_storedir_release(job);
  assert_int_equal(mode_of(job), 0700);
  assert_int_equal(unlink(file), 0);
  dred_storedir_release(job);
  assert_int_equal(access(job, F_OK), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_creates_private, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_open_mode, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_other_owner, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_symlinks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_long_path, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_modes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_job_dir, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
