/*
 * copy.h -- copying an operand into a block of the node's shared memory that node peers
 * will read (copy.c).
 */
#ifndef DRED_SHM_COPY_H
#define DRED_SHM_COPY_H

#include <stddef.h>

/* Copies of this many bytes up to DRED_SHM_STREAM_MAX bypass the cache (dred_shm_copy_in):
 * below, the line transfers are few; above, the reader fetching the block from memory
 * costs more than the writer's transfers would (copy.c). */
#define DRED_SHM_STREAM_MIN (16u * 1024u)
#define DRED_SHM_STREAM_MAX (512u * 1024u)

/* memcpy(dst, src, n) into a shared block a node peer reads next, with non-temporal stores
 * from DRED_SHM_STREAM_MIN to DRED_SHM_STREAM_MAX bytes (x86-64; elsewhere a plain memcpy).  Complete (fenced)
 * when it returns, so a flag published after it is seen after the bytes. */
void dred_shm_copy_in(void *dst, const void *src, size_t n);

#endif /* DRED_SHM_COPY_H */
