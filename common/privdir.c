/*
 * privdir.c -- private directories and the default storage directory (see privdir.h for
 * the rules and why).
 *
 * Every judgement is made with lstat(), so a symbolic link is seen as one and never
 * followed.  A directory judged private stays so: nobody else can rename, replace or add
 * anything in it.  A squatted directory is never entered, changed or removed -- it is not
 * ours to touch -- only named in the warning.
 */
#include "privdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

int dred_privdir_check(const char *path, char *why, size_t cap) {
  struct stat sb;
  char dummy[8];
  if (why == NULL || cap == 0) {
    why = dummy;
    cap = sizeof dummy;
  }
  *why = '\0';
  if (path == NULL || *path == '\0') {
    snprintf(why, cap, "empty path");
    return -1;
  }
  if (lstat(path, &sb) != 0) {
    if (errno == ENOENT) return ENOENT;
    snprintf(why, cap, "%s", strerror(errno));
    return -1;
  }
  if (S_ISLNK(sb.st_mode)) {
    snprintf(why, cap, "is a symbolic link: refused (give a real directory of your own, "
                       "mode 0700)");
    return -1;
  }
  if (!S_ISDIR(sb.st_mode)) {
    snprintf(why, cap, "exists and is not a directory: refused");
    return -1;
  }
  if (sb.st_uid != geteuid()) {
    snprintf(why, cap, "owned by uid %ld, not by you (uid %ld): refused (another user may "
                       "have created it; set DRED_STORAGE_DIR to a directory of your own)",
             (long)sb.st_uid, (long)geteuid());
    return -1;
  }
  if ((sb.st_mode & 077) != 0) {
    snprintf(why, cap, "mode %04o lets other users in: refused (chmod 700 it, or let dred "
                       "create it)", (unsigned)(sb.st_mode & 07777));
    return -1;
  }
  return 0;
}

int dred_privdir_default(const char *tmp, int create, char *out, size_t cap) {
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  char why[256];
  int n, rc;

  if (out == NULL || cap == 0) return -1;
  *out = '\0';
  if (tmp == NULL || *tmp == '\0') return -1;
  if (xdg != NULL && xdg[0] == '/' && dred_privdir_check(xdg, NULL, 0) == 0) {
    n = snprintf(out, cap, "%s/dred", xdg);
    if (n > 0 && (size_t)n < cap) return DRED_PRIVDIR_XDG;
    *out = '\0'; /* too long: fall through to <tmp> */
  }
  n = snprintf(out, cap, "%s/dred-%ld", tmp, (long)geteuid());
  if (n < 0 || (size_t)n + 7 >= cap) {
    DRED_ERROR("storage directory %s/dred-%ld: path too long", tmp, (long)geteuid());
    *out = '\0';
    return -1;
  }
  rc = dred_privdir_check(out, why, sizeof why);
  if (rc == 0 || rc == ENOENT) return DRED_PRIVDIR_TMP;
  if (!create) return DRED_PRIVDIR_SQUATTED;
  {
    char squatted[512];
    snprintf(squatted, sizeof squatted, "%s", out);
    strcat(out, "-XXXXXX"); /* room checked above */
    if (mkdtemp(out) == NULL) {
      DRED_ERROR("storage directory %s: %s; and cannot create a private one instead (%s): %s",
                 squatted, why, out, strerror(errno));
      *out = '\0';
      return -1;
    }
    DRED_WARN("storage directory %s: %s; using the new private directory %s instead "
              "(set DRED_STORAGE_DIR, or XDG_RUNTIME_DIR, to choose one)", squatted, why, out);
  }
  return DRED_PRIVDIR_FRESH;
}
