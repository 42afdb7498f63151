/*
 * log.c -- see log.h.  The level is parsed lazily so code that never calls
 * dred_log_setup() (unit tests, dredstat) still honours DRED_LOG_LEVEL.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "settings.h"

static char log_prefix[48] = "dred";
/* Both parsed on first use by whichever thread logs first: relaxed atomics, since two
 * threads may parse at once (each finds the same value). */
static int log_level = -1;
static int log_time = -1; /* DRED_LOG_TIME=1: each line starts with the wall-clock time */

static int log_level_parse(void) {
  const char *s = dred_setting_raw(DRED_S_LOG_LEVEL);
  if (s == NULL || *s == '\0') return DRED_LOG_WARN;
  if (strcasecmp(s, "error") == 0) return DRED_LOG_ERROR;
  if (strcasecmp(s, "warn") == 0) return DRED_LOG_WARN;
  if (strcasecmp(s, "info") == 0) return DRED_LOG_INFO;
  if (strcasecmp(s, "debug") == 0) return DRED_LOG_DEBUG;
  return DRED_LOG_WARN;
}

void dred_log_setup(const char *role, int rank) {
  if (rank >= 0)
    snprintf(log_prefix, sizeof log_prefix, "dred %s %d", role, rank);
  else
    snprintf(log_prefix, sizeof log_prefix, "dred %s", role);
  __atomic_store_n(&log_level, log_level_parse(), __ATOMIC_RELAXED);
}

int dred_log_enabled(dred_log_level_t level) {
  int l = __atomic_load_n(&log_level, __ATOMIC_RELAXED);
  if (l < 0) __atomic_store_n(&log_level, l = log_level_parse(), __ATOMIC_RELAXED);
  return (int)level <= l;
}

int dred_log_due(unsigned long long count) { return count != 0 && (count & (count - 1)) == 0; }

void dred_log(dred_log_level_t level, const char *fmt, ...) {
  static const char *names[] = {"error", "warn", "info", "debug"};
  char line[1024];
  va_list ap;
  int n, stamp;

  if (!dred_log_enabled(level)) return;
  if ((stamp = __atomic_load_n(&log_time, __ATOMIC_RELAXED)) < 0) {
    /* Raw, not dred_setting_u64: that logs a bad value, and this is the logger. */
    const char *t = dred_setting_raw(DRED_S_LOG_TIME);
    stamp = t != NULL && strcmp(t, "1") == 0;
    __atomic_store_n(&log_time, stamp, __ATOMIC_RELAXED);
  }
  if (stamp) {
    /* Taken when the line is made, not when someone reads the pipe: fault runs measure
     * detection latency from these stamps. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    n = snprintf(line, sizeof line, "%lld.%06ld [%s] %s: ", (long long)ts.tv_sec,
                 ts.tv_nsec / 1000, log_prefix, names[level]);
  } else {
    n = snprintf(line, sizeof line, "[%s] %s: ", log_prefix, names[level]);
  }
  if (n < 0 || (size_t)n >= sizeof line) n = 0;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line);
}
