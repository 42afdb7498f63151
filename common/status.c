/*
 * status.c -- text for the DRED_* status codes, shared by libdred (dred_strerror) and
 * dred-master, which has no libdred.
 */
#include "status.h"

#include "../include/dred_status.h"

const char *dred_status_str(int status) {
  switch (status) {
    case DRED_OK: return "success";
    case DRED_ERR_ARG: return "invalid argument";
    case DRED_ERR_MISMATCH: return "members disagree on count, datatype size, op or root";
    case DRED_ERR_NOMEM: return "out of memory";
    case DRED_ERR_PROC_FAILED: return "an operand was lost with a failed process and no replica survived";
    case DRED_ERR_ROOT_FAILED: return "the root process failed";
    case DRED_ERR_MASTER_LOST: return "dred-master was lost";
    case DRED_ERR_STORAGE: return "replica storage failed";
    case DRED_ERR_SHUTDOWN: return "dred is shut down";
    case DRED_ERR_INTERNAL: return "internal error (see the log)";
    case DRED_ERR_TIMEOUT: return "timed out";
    default: return "unknown status";
  }
}
