/*
 * status.h -- text for the DRED_* status codes (include/dred_status.h).
 */
#ifndef DRED_COMMON_STATUS_H
#define DRED_COMMON_STATUS_H

const char *dred_status_str(int status);

#endif /* DRED_COMMON_STATUS_H */
