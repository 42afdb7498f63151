/*
 * leave.h -- the files a process of the job removes if a signal ends it.
 *
 * A job cancelled by its batch system, or interrupted at the terminal, gets SIGTERM or
 * SIGINT on every process at once (mpiexec forwards them): nobody is left to remove what
 * the others leave (control sockets and their directory, replica stores, the status
 * socket), so each process removes its own on the way out.  A process registers those
 * paths once it has made them, in the order they must go (files before the directories
 * holding them); its handler for the terminating signal calls dred_leave_now(), which only
 * uses unlink(2) and rmdir(2) (async-signal-safe), then dies of the signal as it would have.
 */
#ifndef DRED_LEAVE_H
#define DRED_LEAVE_H

#define DRED_LEAVE_MAX 12        /* paths one process registers */
#define DRED_LEAVE_PATH_MAX 4200 /* bytes per path, NUL included */

/* Register `path` (a file, or a directory when is_dir: removed only if empty).  Called from
 * one thread before the handler can need it; a path too long or past DRED_LEAVE_MAX is
 * logged and not registered.  NULL or "" is ignored. */
void dred_leave_add(const char *path, int is_dir);

/* Forget every registered path (the process removed them itself on an orderly exit). */
void dred_leave_clear(void);

/* Remove every registered path, in the order registered; async-signal-safe. */
void dred_leave_now(void);

#endif
