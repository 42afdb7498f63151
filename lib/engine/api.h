/*
 * api.h -- what api.c offers libdred's other files.
 */
#ifndef DRED_API_H
#define DRED_API_H

#include "runtime.h"

/* api.c: the runtime for a public entry point, or NULL with *rc the status to return
 * (called before dred_init or after dred_finalize; logged). */
dred_rt_t *dred_api_rt(const char *fn, int *rc);

#endif /* DRED_API_H */
