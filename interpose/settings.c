/*
 * settings.c -- libdred-mpi's settings: DRED_MPI_MIN_BYTES, DRED_MPI_COLL_MIN_BYTES,
 * DRED_MPI_NODE_MIN_BYTES and DRED_MPI_REPORT.
 *
 * Parsed by common/config.c (dred_config_load_mpi), like every DRED_* setting, but
 * strictly: a malformed value is an error at MPI_Init, not a default used with a warning.
 * A job that asked for a threshold or a report and silently ran without it would measure
 * the wrong thing.  Every process reads the same environment, so all refuse together.
 */
#include <stdio.h>

#include "config.h"
#include "interpose.h"

dmpi_settings_t dmpi_settings;

int dmpi_settings_load(dmpi_settings_t *s) {
  dred_config_t c;
  char why[256];
  if (dred_config_load_mpi(&c, why, sizeof why) != 0) {
    fprintf(stderr, "dred-mpi: %s\n", why);
    return -1;
  }
  s->min_bytes = c.mpi_min_bytes;
  s->coll_min_bytes = c.mpi_coll_min_bytes;
  s->node_min_bytes = c.mpi_node_min_bytes;
  s->report = c.mpi_report;
  return 0;
}
