/*
 * log.h -- one-line diagnostics to stderr, prefixed with the process's role and rank.
 *
 * Every error a caller gets back as a status code is also logged here with the reason,
 * so a user can see *what* was wrong.  The level comes from DRED_LOG_LEVEL
 * (error, warn, info, debug; default warn).  DRED_LOG_TIME=1 starts each line with the
 * wall-clock time it was made (seconds.microseconds since the epoch), for correlating the
 * logs of many processes.  Thread-safe: each line is one fprintf.
 */
#ifndef DRED_LOG_H
#define DRED_LOG_H

typedef enum { DRED_LOG_ERROR = 0, DRED_LOG_WARN, DRED_LOG_INFO, DRED_LOG_DEBUG } dred_log_level_t;

/* Set the prefix, e.g. ("master", 0) or ("worker", 3).  Reads DRED_LOG_LEVEL once. */
void dred_log_setup(const char *role, int rank);
int dred_log_enabled(dred_log_level_t level);
void dred_log(dred_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A message that can repeat without bound (links refused in a flood, calls refused after a
 * failure) is logged at its 1st, 2nd, 4th, 8th... occurrence only, with the count so far:
 * O(log n) lines for n occurrences, and the first one at once.  The caller keeps the count
 * (under whatever lock guards it) and asks with the new value. */
int dred_log_due(unsigned long long count);

#define DRED_ERROR(...) dred_log(DRED_LOG_ERROR, __VA_ARGS__)
#define DRED_WARN(...) dred_log(DRED_LOG_WARN, __VA_ARGS__)
#define DRED_INFO(...) \
  do { if (dred_log_enabled(DRED_LOG_INFO)) dred_log(DRED_LOG_INFO, __VA_ARGS__); } while (0)
#define DRED_DEBUG(...) \
  do { if (dred_log_enabled(DRED_LOG_DEBUG)) dred_log(DRED_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif /* DRED_LOG_H */
