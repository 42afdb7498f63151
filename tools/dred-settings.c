/*
 * dred-settings.c -- print common/settings.h's table of DRED_* settings as documentation.
 *
 *   dred-settings --markdown        docs/configuration.md's settings table (the part between
 *                                   its "settings table" marker comments)
 *   dred-settings --man [READER [--except NAME...]]
 *                                   man-page ENVIRONMENT entries (.TP/.B), every setting or
 *                                   those READER reads (worker, master, ...; "all" rows
 *                                   count for both worker and master), but the NAMEs: the
 *                                   ones a page describes by hand (tests/check-settings.sh
 *                                   fills each page's generated block so)
 *   dred-settings --names [READER]  the names, one a line (tests/check-settings.sh)
 *
 * A build tool, not installed: the docs are generated from the table so that they cannot
 * drift from what the code reads, and tests/check-settings.sh (make settings-check)
 * regenerates them and fails on any difference.
 */
#include <stdio.h>
#include <string.h>

#include "../common/settings.h"

static int reader_mask(const char *name, unsigned *mask) {
  static const struct {
    const char *name;
    unsigned bit;
  } readers[] = {
      {"worker", DRED_BY_WORKER}, {"master", DRED_BY_MASTER},       {"libdred-mpi", DRED_BY_MPI},
      {"dred-launch", DRED_BY_LAUNCH}, {"dredstat", DRED_BY_STAT}, {"dredrun", DRED_BY_RUN},
      {"dred.sbatch", DRED_BY_SBATCH},
  };
  size_t i;
  if (name == NULL) {
    *mask = ~0u;
    return 0;
  }
  for (i = 0; i < sizeof readers / sizeof readers[0]; i++)
    if (strcmp(name, readers[i].name) == 0) {
      *mask = readers[i].bit;
      return 0;
    }
  return -1;
}

static void markdown(void) {
  char def[512], range[128], by[128];
  int i;
  printf("| variable | default | range | read by | meaning |\n");
  printf("|---|---|---|---|---|\n");
  for (i = 0; i < DRED_SETTINGS_COUNT; i++) {
    const dred_setting_t *s = &dred_settings[i];
    printf("| `%s` | %s | %s | %s | %s |\n", s->name, dred_setting_default_str(s, def, sizeof def),
           dred_setting_range_str(s, range, sizeof range),
           dred_setting_by_str(s->by, by, sizeof by), s->meaning);
  }
}

/* Markdown's `code` as bold, and roff's special characters escaped: a hyphen is \-
 * (a minus, as options and names want), a backslash \e. */
static void man_text(const char *t) {
  int code = 0;
  for (; *t; t++) {
    if (*t == '`') {
      fputs(code ? "\\fR" : "\\fB", stdout);
      code = !code;
    } else if (*t == '-') {
      fputs("\\-", stdout);
    } else if (*t == '\\') {
      fputs("\\e", stdout);
    } else {
      putchar(*t);
    }
  }
  if (code) fputs("\\fR", stdout);
}

static void man(unsigned mask, char **except, int nexcept) {
  char def[512], range[128];
  int i, j;
  for (i = 0; i < DRED_SETTINGS_COUNT; i++) {
    const dred_setting_t *s = &dred_settings[i];
    for (j = 0; j < nexcept && strcmp(except[j], s->name) != 0; j++) {
    }
    if (!(s->by & mask) || j < nexcept) continue;
    printf(".TP\n.B ");
    man_text(s->name);
    printf("\n");
    /* A sentence in the man page: capitalised (the docs table's cells are not). */
    if (s->meaning[0] >= 'a' && s->meaning[0] <= 'z') putchar(s->meaning[0] - 'a' + 'A');
    man_text(s->meaning + (s->meaning[0] >= 'a' && s->meaning[0] <= 'z'));
    printf(" (default ");
    man_text(dred_setting_default_str(s, def, sizeof def));
    printf("; ");
    man_text(dred_setting_range_str(s, range, sizeof range));
    printf(").\n");
  }
}

int main(int argc, char **argv) {
  unsigned mask;
  int i;
  if (argc >= 4 && strcmp(argv[1], "--man") == 0 && strcmp(argv[3], "--except") == 0 &&
      reader_mask(argv[2], &mask) == 0) {
    man(mask, argv + 4, argc - 4);
    return 0;
  }
  if (argc >= 2 && argc <= 3 && reader_mask(argc == 3 ? argv[2] : NULL, &mask) == 0) {
    if (strcmp(argv[1], "--markdown") == 0 && argc == 2) {
      markdown();
      return 0;
    }
    if (strcmp(argv[1], "--man") == 0) {
      man(mask, NULL, 0);
      return 0;
    }
    if (strcmp(argv[1], "--names") == 0) {
      for (i = 0; i < DRED_SETTINGS_COUNT; i++)
        if (dred_settings[i].by & mask) printf("%s\n", dred_settings[i].name);
      return 0;
    }
  }
  fprintf(stderr,
          "usage: dred-settings --markdown | --man [READER [--except NAME...]] | --names [READER]\n"
          "  READER: worker, master, libdred-mpi, dred-launch, dredstat, dredrun, dred.sbatch\n");
  return 2;
}
