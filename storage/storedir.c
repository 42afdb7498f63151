/*
 * storedir.c -- private, per-job storage directories (see storedir.h for the rules and
 * why they exist).
 *
 * How the checks avoid races: a directory is judged with lstat() (so a symbolic link is
 * seen as one, never followed) right after mkdir(), and a file is opened with O_NOFOLLOW
 * and judged with fstat() on the descriptor, so what is checked is what is used.  Once the
 * base directory is known to be ours and 0700, nobody else can create, rename or replace
 * anything inside it, so the later opens by name (SQLite's, with SQLITE_OPEN_NOFOLLOW)
 * find what was checked.  Parents of the base directory are the user's business (they may
 * well be symbolic links, like /tmp on some systems); only missing ones are created.
 */
#include "storedir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/privdir.h"

/* Is the directory entry at `dir` a real directory, owned by us, with none of the `forbid`
 * mode bits?  Logs why not, each line starting with `what` and ending with `hint` where
 * the user is to act. */
static int dir_judge(const char *what, const char *dir, mode_t forbid, const char *owner_hint,
                     const char *mode_hint) {
  struct stat sb;
  if (lstat(dir, &sb) != 0) {
    DRED_ERROR("%s %s: %s", what, dir, strerror(errno));
    return DRED_ERR_STORAGE;
  }
  if (S_ISLNK(sb.st_mode)) {
    DRED_ERROR("%s %s: is a symbolic link: refused (give a real directory of your own%s)",
               what, dir, forbid == 077 ? ", mode 0700" : "");
    return DRED_ERR_STORAGE;
  }
  if (!S_ISDIR(sb.st_mode)) {
    DRED_ERROR("%s %s: exists and is not a directory: refused", what, dir);
    return DRED_ERR_STORAGE;
  }
  if (sb.st_uid != geteuid()) {
    DRED_ERROR("%s %s: owned by uid %ld, not by you (uid %ld): refused (another user may have "
               "created it; %s)", what, dir, (long)sb.st_uid, (long)geteuid(), owner_hint);
    return DRED_ERR_STORAGE;
  }
  if ((sb.st_mode & forbid) != 0) {
    DRED_ERROR("%s %s: mode %04o lets other users %s: refused (%s)", what, dir,
               (unsigned)(sb.st_mode & 07777), forbid == 077 ? "in" : "replace what is in it",
               mode_hint);
    return DRED_ERR_STORAGE;
  }
  return DRED_OK;
}

/* Is the directory entry at `dir` a private directory of ours?  Logs why not.  The rule
 * is common/privdir.c's, which also picks the default directory by it. */
static int dir_is_private(const char *dir) {
  char why[256];
  int rc = dred_privdir_check(dir, why, sizeof why);
  if (rc == 0) return DRED_OK;
  DRED_ERROR("storage directory %s: %s", dir, rc == ENOENT ? strerror(ENOENT) : why);
  return DRED_ERR_STORAGE;
}

int dred_storedir_owned(const char *what, const char *dir) {
  if (what == NULL || dir == NULL || *dir == '\0') {
    DRED_ERROR("%s: empty directory path", what ? what : "directory");
    return DRED_ERR_ARG;
  }
  return dir_judge(what, dir, 022, "use a directory of your own",
                   "chmod go-w it, or use a directory of your own");
}

int dred_storedir_check(const char *dir) {
  char *p, *s;
  size_t len = dir ? strlen(dir) : 0;

  if (len == 0) {
    DRED_ERROR("storage directory: empty path");
    return DRED_ERR_STORAGE;
  }
  if (len > DRED_STOREDIR_MAX) {
    DRED_ERROR("storage directory %.60s...: path of %zu bytes is longer than %d: refused "
               "(it would be cut short into another directory)", dir, len, DRED_STOREDIR_MAX);
    return DRED_ERR_STORAGE;
  }
  if ((p = strdup(dir)) == NULL) {
    DRED_ERROR("storage directory %s: out of memory", dir);
    return DRED_ERR_NOMEM;
  }
  /* Missing parents are created private too; existing ones are left as they are. */
  for (s = p + 1; *s != '\0'; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0700) != 0 && errno != EEXIST) {
      DRED_ERROR("storage directory: cannot create %s: %s", p, strerror(errno));
      free(p);
      return DRED_ERR_STORAGE;
    }
    *s = '/';
  }
  free(p);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    DRED_ERROR("storage directory: cannot create %s: %s", dir, strerror(errno));
    return DRED_ERR_STORAGE;
  }
  return dir_is_private(dir);
}

int dred_storedir_job(const char *base, const char *job_id, char *out, size_t cap) {
  size_t i, n;
  int st, len;

  if (out == NULL || cap == 0) return DRED_ERR_ARG;
  *out = '\0';
  n = job_id ? strlen(job_id) : 0;
  if (n == 0 || n > DRED_JOB_ID_MAX || job_id[0] == '.') {
    DRED_ERROR("storage: bad job id \"%.60s\" (1..%d characters, not starting with '.')",
               job_id ? job_id : "(null)", DRED_JOB_ID_MAX);
    return DRED_ERR_ARG;
  }
  for (i = 0; i < n; i++) {
    char c = job_id[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '-' || c == '_' || c == '.')) {
      DRED_ERROR("storage: bad job id \"%s\": only letters, digits, '-', '_' and '.'", job_id);
      return DRED_ERR_ARG;
    }
  }
  if ((st = dred_storedir_check(base)) != DRED_OK) return st;
  len = snprintf(out, cap, "%s/job-%s", base, job_id);
  if (len < 0 || (size_t)len >= cap) {
    DRED_ERROR("storage directory %s/job-%s: path too long", base, job_id);
    *out = '\0';
    return DRED_ERR_STORAGE;
  }
  /* Several processes of the job on one node create it at once: EEXIST is the normal
   * case for all but one, and the check below is what makes accepting it safe. */
  if (mkdir(out, 0700) != 0 && errno != EEXIST) {
    DRED_ERROR("storage directory: cannot create %s: %s", out, strerror(errno));
    *out = '\0';
    return DRED_ERR_STORAGE;
  }
  if ((st = dir_is_private(out)) != DRED_OK) *out = '\0';
  return st;
}

void dred_storedir_release(const char *jobdir) {
  if (jobdir == NULL || *jobdir == '\0') return;
  if (rmdir(jobdir) == 0) DRED_INFO("storage directory %s: removed", jobdir);
  /* ENOTEMPTY/EEXIST: another process of the job, or the journal, still uses it. */
}

int dred_storedir_private_file(const char *what, const char *path) {
  struct stat sb;
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) {
    if (errno == ELOOP)
      DRED_ERROR("%s %s: is a symbolic link: refused (it could point at any file)", what, path);
    else
      DRED_ERROR("%s %s: cannot open: %s", what, path, strerror(errno));
    return DRED_ERR_STORAGE;
  }
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    DRED_ERROR("%s %s: not a regular file: refused", what, path);
    close(fd);
    return DRED_ERR_STORAGE;
  }
  if (sb.st_uid != geteuid()) {
    DRED_ERROR("%s %s: owned by uid %ld, not by you (uid %ld): refused", what, path,
               (long)sb.st_uid, (long)geteuid());
    close(fd);
    return DRED_ERR_STORAGE;
  }
  if ((sb.st_mode & 077) != 0 && fchmod(fd, 0600) != 0) {
    DRED_ERROR("%s %s: mode %04o and cannot make it 0600: %s", what, path,
               (unsigned)(sb.st_mode & 07777), strerror(errno));
    close(fd);
    return DRED_ERR_STORAGE;
  }
  close(fd);
  return DRED_OK;
}
