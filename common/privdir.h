/*
 * privdir.h -- private directories: is a path a directory only we can use, and which
 * directory a job stores its files in when DRED_STORAGE_DIR does not say.
 *
 * The old default, /tmp/dred-<uid>, is a name anyone can compute and create first: a
 * directory another user made there either fails every job (dred refuses it) or, to a
 * tool that trusts it, serves whatever was planted in it (a socket, a journal).  So the
 * default is chosen here, once, by rules that cannot be squatted:
 *   1. $XDG_RUNTIME_DIR/dred when XDG_RUNTIME_DIR is an absolute path to a private
 *      directory of ours (the per-login directory systemd makes, 0700, on tmpfs);
 *   2. else <tmp>/dred-<uid> when it is absent (dred creates it, 0700) or private;
 *   3. else -- it exists but is not ours, is a link, or is open to others -- a fresh
 *      <tmp>/dred-<uid>-XXXXXX made by mkdtemp (0700, a name nobody can take first), with
 *      a warning naming the squatted path.
 * "Private" is the rule of storage/storedir.h: a real directory (lstat: never a symbolic
 * link), owned by the effective user, no access for group or others.
 * A fresh directory of rule 3 is one process's choice: the processes of a job agree on
 * it only if one of them chooses and passes it on, which dredrun does (it asks
 * `dred-master --print-storage` and exports DRED_STORAGE_DIR to the whole job).
 * No MPI, nothing above common/ in here.
 */
#ifndef DRED_PRIVDIR_H
#define DRED_PRIVDIR_H

#include <stddef.h>

/* 0 when `path` is a private directory of ours; ENOENT when nothing is there; otherwise
 * -1 with a sentence saying why not in `why` (`cap` bytes; may be NULL), e.g. "owned by
 * uid 65534, not by you (uid 0)". */
int dred_privdir_check(const char *path, char *why, size_t cap);

/* What dred_privdir_default chose. */
#define DRED_PRIVDIR_XDG 0      /* $XDG_RUNTIME_DIR/dred                              */
#define DRED_PRIVDIR_TMP 1      /* <tmp>/dred-<uid>: absent or private                 */
#define DRED_PRIVDIR_FRESH 2    /* <tmp>/dred-<uid> is squatted: a new mkdtemp one     */
#define DRED_PRIVDIR_SQUATTED 3 /* (create == 0) <tmp>/dred-<uid> is squatted: its path */

/* The default storage directory by the rules above, written to `out` (`cap` bytes); `tmp`
 * is the shared temporary directory ("/tmp"; tests give their own).  With `create` 0
 * nothing is made: a squatted <tmp>/dred-<uid> is returned as DRED_PRIVDIR_SQUATTED (for
 * tools that only look, like dredstat).  Returns one of DRED_PRIVDIR_*, or -1 with `out`
 * empty and the reason logged (mkdtemp failed, path too long, bad arguments). */
int dred_privdir_default(const char *tmp, int create, char *out, size_t cap);

#endif /* DRED_PRIVDIR_H */
