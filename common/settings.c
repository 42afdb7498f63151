/*
 * settings.c -- settings.h's table as data, and the one place DRED_* variables are read.
 *
 * dred_settings[] is DRED_SETTINGS expanded once; every accessor takes a row's id, so a
 * reader can neither misspell a name nor use another default or range than the docs show.
 * Numbers are parsed strictly (decimal, no sign, no trailing text, within the row's range);
 * what a bad value leads to is the caller's choice (see settings.h).
 */
#include "settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define ROW_C(NAME, field, d, l, h, b, m) \
  {"DRED_" #NAME, DRED_SETTING_U64, (d), (l), (h), NULL, NULL, (b), 1, (m)},
#define ROW_N(NAME, d, l, h, b, m) \
  {"DRED_" #NAME, DRED_SETTING_U64, (d), (l), (h), NULL, NULL, (b), 0, (m)},
#define ROW_T(NAME, d, f, b, m) {"DRED_" #NAME, DRED_SETTING_TEXT, 0, 0, 0, (d), (f), (b), 0, (m)},
const dred_setting_t dred_settings[DRED_SETTINGS_COUNT] = {DRED_SETTINGS(ROW_C, ROW_N, ROW_T)};
#undef ROW_C
#undef ROW_N
#undef ROW_T

const char *dred_setting_raw(dred_setting_id id) {
  if ((unsigned)id >= DRED_SETTINGS_COUNT) return NULL;
  return getenv(dred_settings[id].name);
}

int dred_setting_parse_u64(dred_setting_id id, uint64_t *out, char *why, size_t cap) {
  const dred_setting_t *st;
  const char *s;
  char *end;
  unsigned long long v;
  if ((unsigned)id >= DRED_SETTINGS_COUNT) { /* only a caller's bug: never an index past the table */
    *out = 0;
    snprintf(why, cap, "setting #%d is not in the table", (int)id);
    return -1;
  }
  st = &dred_settings[id];
  s = getenv(st->name);
  *out = st->def;
  if (s == NULL || *s == '\0') return 0;
  errno = 0;
  v = strtoull(s, &end, 10);
  /* strtoull accepts "-1" as a huge number: a sign is refused, not wrapped. */
  if (errno != 0 || *end != '\0' || *s == '-' || v < st->lo || v > st->hi) {
    snprintf(why, cap, "%s=%s is not a number in [%llu, %llu]", st->name, s,
             (unsigned long long)st->lo, (unsigned long long)st->hi);
    return -1;
  }
  *out = v;
  return 0;
}

uint64_t dred_setting_u64(dred_setting_id id) {
  char why[160];
  uint64_t v;
  if (dred_setting_parse_u64(id, &v, why, sizeof why) != 0)
    DRED_WARN("%s; using %llu", why, (unsigned long long)v);
  return v;
}

/* 2^k for the large powers of two the table uses as bounds (2^30, 2^40): the docs read
 * them more easily than 1073741824. */
static void put_u64(uint64_t v, char *buf, size_t cap) {
  if (v >= ((uint64_t)1 << 30) && (v & (v - 1)) == 0)
    snprintf(buf, cap, "2^%d", __builtin_ctzll(v));
  else
    snprintf(buf, cap, "%llu", (unsigned long long)v);
}

const char *dred_setting_default_str(const dred_setting_t *s, char *buf, size_t cap) {
  if (s->type == DRED_SETTING_TEXT)
    snprintf(buf, cap, "%s", s->def_text);
  else
    put_u64(s->def, buf, cap);
  return buf;
}

const char *dred_setting_range_str(const dred_setting_t *s, char *buf, size_t cap) {
  char lo[32], hi[32];
  if (s->type == DRED_SETTING_TEXT) {
    snprintf(buf, cap, "%s", s->form);
  } else if (s->lo == 0 && s->hi == 1) {
    snprintf(buf, cap, "0, 1");
  } else {
    put_u64(s->lo, lo, sizeof lo);
    put_u64(s->hi, hi, sizeof hi);
    snprintf(buf, cap, "%s..%s", lo, hi);
  }
  return buf;
}

const char *dred_setting_by_str(unsigned by, char *buf, size_t cap) {
  static const struct {
    unsigned bit;
    const char *name;
  } names[] = {
      {DRED_BY_ALL, "all"},         {DRED_BY_WORKER, "worker"},     {DRED_BY_MASTER, "master"},
      {DRED_BY_MPI, "libdred-mpi"}, {DRED_BY_LAUNCH, "dred-launch"}, {DRED_BY_STAT, "dredstat"},
      {DRED_BY_RUN, "dredrun"},     {DRED_BY_SBATCH, "dred.sbatch"},
  };
  size_t i, n = 0;
  if (cap > 0) *buf = '\0';
  for (i = 0; i < sizeof names / sizeof names[0]; i++) {
    if ((by & names[i].bit) != names[i].bit) continue;
    by &= ~names[i].bit; /* "all" says worker and master: not again */
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", n ? ", " : "", names[i].name);
    if (n >= cap) break;
  }
  return buf;
}
