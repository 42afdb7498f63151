/*
 * bottom.c -- MPI_BOTTOM buffers: variables that lie apart, reduced and broadcast in one
 * call through a datatype of their absolute addresses (MPI_Get_address), as MPI allows.
 *
 *   dredrun -n P mpi_bottom [-n BIG]
 *
 * The variables: two static arrays (one in .bss, one in .data), a small heap array (the
 * brk heap) and a large one of BIG doubles (default 300000: its own mapping, far from the
 * others, so its type's extent is tens of terabytes).  Three struct types of their
 * absolute addresses, all of MPI_DOUBLE: "near" (the statics and the small heap array:
 * small, the fast lane), "far" (a static and the large array: pool blocks and the slot,
 * cross-node transfers under --sim-nodes), and "ints" (MPI_INT statics and heap, for a
 * user op).  Each member fills every field with (rank + 1) x 1000 + j (integers, so every
 * combine order gives the same bits) and checks every field afterwards:
 *   - dred_allreduce(MPI_IN_PLACE, MPI_BOTTOM) of near and far under SUM and MAX;
 *   - dred_reduce to each root: non-roots' sendbuf MPI_BOTTOM, the root's MPI_IN_PLACE with
 *     recvbuf MPI_BOTTOM; non-roots' variables unchanged;
 *   - dred_bcast(MPI_BOTTOM) of near and far from each root;
 *   - nonblocking: a dred_iallreduce of near and a dred_ibcast of far (explicit tags) in
 *     flight together;
 *   - a user op on "ints": dred gives a user op its operands in the caller's typed layout,
 *     which must be the same on every member, and absolute addresses differ between
 *     processes (address-space randomization): the call must end alike on every member,
 *     either exact or DRED_ERR_MISMATCH (at P = 1 exact); DRED_ERR_ARG where the type's
 *     extent is over 2 GiB (the heap far from the statics, as under ASan);
 *   - a NULL buffer with MPI_DOUBLE (data at address 0): DRED_ERR_ARG on every member, a
 *     good allreduce right after it still exact.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dred.h"
#include "mpitest.h"

#define WAIT_S 60.0

static double g_bss[3];                       /* .bss */
static double g_data[4] = {1, 2, 3, 4};       /* .data */
static double g_far0[2];
static int g_ints[2];
static double *h_small, *h_big;
static int *h_ints;
static long g_nbig = 300000;

typedef struct {
  const char *name;
  int nvar;
  void *addr[3];
  int len[3];
  MPI_Datatype base, dt;
  long n; /* elements of base in all */
} vars_t;

static void vars_make(vars_t *v) {
  MPI_Aint disp[3];
  MPI_Datatype ts[3] = {v->base, v->base, v->base};
  v->n = 0;
  for (int i = 0; i < v->nvar; i++) {
    MPI_Get_address(v->addr[i], &disp[i]);
    v->n += v->len[i];
  }
  MPI_Type_create_struct(v->nvar, v->len, disp, ts, &v->dt);
  MPI_Type_commit(&v->dt);
}

/* Field j (in typemap order) of member r's operand. */
static double val(int r, long j) { return (double)((r + 1) * 1000 + j); }

static void fill(const vars_t *v, int r) {
  long j = 0;
  for (int i = 0; i < v->nvar; i++)
    for (int k = 0; k < v->len[i]; k++, j++) {
      if (v->base == MPI_INT) ((int *)v->addr[i])[k] = (int)val(r, j);
      else ((double *)v->addr[i])[k] = val(r, j);
    }
}

/* The fields against expect(j); fails with the first difference. */
static int check(const char *what, const vars_t *v, double (*expect)(long)) {
  long j = 0;
  for (int i = 0; i < v->nvar; i++)
    for (int k = 0; k < v->len[i]; k++, j++) {
      double got = v->base == MPI_INT ? ((int *)v->addr[i])[k] : ((double *)v->addr[i])[k];
      if (got != expect(j)) {
        fail("%s (%s): field %ld is %.17g, expected %.17g", what, v->name, j, got, expect(j));
        return 0;
      }
    }
  return 1;
}

static double e_sum(long j) {
  double s = 0;
  for (int r = 0; r < g_size; r++) s += val(r, j);
  return s;
}
static double e_max(long j) { return val(g_size - 1, j); }
static int g_root;
static double e_root(long j) { return val(g_root, j); }
static double e_mine(long j) { return val(g_rank, j); }

enum { K_ALLREDUCE, K_REDUCE, K_BCAST };

/* One blocking call of `kind` on v's variables through MPI_BOTTOM (a reduce's root in
 * place), every field checked: an allreduce under `op` (SUM or MAX), a reduce under SUM. */
static void bottom_case(vars_t *v, int kind, MPI_Op op, const char *opn, int root) {
  double (*expect)(long);
  char what[96];
  int st;
  if (kind == K_ALLREDUCE) snprintf(what, sizeof what, "dred_allreduce MPI_BOTTOM %s", opn);
  else if (kind == K_REDUCE) snprintf(what, sizeof what, "dred_reduce MPI_BOTTOM SUM root %d", root);
  else snprintf(what, sizeof what, "dred_bcast MPI_BOTTOM root %d", root);
  set_step("%s %s", what, v->name);
  fill(v, g_rank);
  g_root = root;
  if (kind == K_ALLREDUCE) {
    st = dred_allreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, v->dt, op, g_comm);
    expect = op == MPI_MAX ? e_max : e_sum;
  } else if (kind == K_REDUCE) {
    st = dred_reduce(g_rank == root ? MPI_IN_PLACE : MPI_BOTTOM, MPI_BOTTOM, 1, v->dt, MPI_SUM,
                     root, g_comm);
    expect = g_rank == root ? e_sum : e_mine;
  } else {
    st = dred_bcast(MPI_BOTTOM, 1, v->dt, root, g_comm);
    expect = e_root;
  }
  if (st != DRED_OK) fail("%s (%s): %s", what, v->name, dred_strerror(st));
  else if (check(what, v, expect)) pass("%s (%s)", what, v->name);
}

static void nonblocking_case(vars_t *near, vars_t *far) {
  dred_future *fa = NULL, *fb = NULL;
  int sa, sb, root = g_size - 1;
  set_step("dred_iallreduce + dred_ibcast MPI_BOTTOM");
  fill(near, g_rank);
  fill(far, g_rank);
  g_root = root;
  sa = dred_iallreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, near->dt, MPI_SUM, g_comm, 11, &fa);
  sb = dred_ibcast(MPI_BOTTOM, 1, far->dt, root, g_comm, 12, &fb);
  if (sb == DRED_OK) sb = wait_bounded(fb, WAIT_S, "dred_ibcast MPI_BOTTOM");
  if (sa == DRED_OK) sa = wait_bounded(fa, WAIT_S, "dred_iallreduce MPI_BOTTOM");
  dred_future_free(fa);
  dred_future_free(fb);
  if (sa != DRED_OK || sb != DRED_OK)
    fail("nonblocking MPI_BOTTOM: iallreduce %s, ibcast %s", dred_strerror(sa),
         dred_strerror(sb));
  else if (check("dred_iallreduce MPI_BOTTOM", near, e_sum) &&
           check("dred_ibcast MPI_BOTTOM", far, e_root))
    pass("nonblocking MPI_BOTTOM: iallreduce and ibcast in flight together");
}

static void isum(void *in, void *inout, int *len, MPI_Datatype *dt) {
  int size = 0;
  MPI_Aint lb, extent;
  /* the elements are ints at the type's displacements: walk them from the flattened copy
   * the test knows (every field of h_ints and g_ints), relative to the buffer given */
  MPI_Type_size(*dt, &size);
  MPI_Type_get_extent(*dt, &lb, &extent);
  for (int e = 0; e < *len; e++) {
    MPI_Aint d0, d1;
    MPI_Get_address(g_ints, &d0);
    MPI_Get_address(h_ints, &d1);
    for (int k = 0; k < 2; k++)
      ((int *)((char *)inout + e * extent + d0))[k] += ((int *)((char *)in + e * extent + d0))[k];
    for (int k = 0; k < 3; k++)
      ((int *)((char *)inout + e * extent + d1))[k] += ((int *)((char *)in + e * extent + d1))[k];
  }
  (void)size;
}

static void user_op_case(vars_t *v) {
  MPI_Op op;
  MPI_Aint lb, extent;
  int st, lo, hi;
  set_step("user op on absolute addresses");
  MPI_Type_get_extent(v->dt, &lb, &extent);
  if (extent > (MPI_Aint)INT32_MAX) { /* (a heap far from the statics, as under ASan) */
    MPI_Op_create(isum, 1, &op);
    st = dred_allreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, v->dt, op, g_comm);
    MPI_Op_free(&op);
    if (st != DRED_ERR_ARG)
      fail("user op on absolute addresses, extent %ld: %s, expected DRED_ERR_ARG", (long)extent,
           dred_strerror(st));
    else
      pass("user op on absolute addresses, extent %ld: refused (over 2 GiB)", (long)extent);
    return;
  }
  MPI_Op_create(isum, 1, &op);
  fill(v, g_rank);
  st = dred_allreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, v->dt, op, g_comm);
  MPI_Allreduce(&st, &lo, 1, MPI_INT, MPI_MIN, g_comm);
  MPI_Allreduce(&st, &hi, 1, MPI_INT, MPI_MAX, g_comm);
  if (lo != hi) fail("user op on absolute addresses: statuses differ (%d .. %d)", lo, hi);
  else if (st == DRED_OK && check("user op on absolute addresses", v, e_sum))
    pass("user op on absolute addresses: exact on every member");
  else if (st == DRED_ERR_MISMATCH && g_size > 1)
    pass("user op on absolute addresses: DRED_ERR_MISMATCH on every member (layouts differ)");
  else if (st != DRED_OK)
    fail("user op on absolute addresses: %s on every member", dred_strerror(st));
  MPI_Op_free(&op);
}

static void null_case(vars_t *good) {
  double x[4] = {0};
  int st;
  set_step("NULL buffer with MPI_DOUBLE");
  (void)x;
  st = dred_allreduce(MPI_IN_PLACE, NULL, 4, MPI_DOUBLE, MPI_SUM, g_comm);
  if (st != DRED_ERR_ARG) fail("NULL recvbuf with MPI_DOUBLE: %s, expected DRED_ERR_ARG", dred_strerror(st));
  else pass("NULL recvbuf with MPI_DOUBLE refused");
  st = dred_bcast(NULL, 4, MPI_DOUBLE, 0, g_comm);
  if (st != DRED_ERR_ARG) fail("NULL bcast buffer with MPI_DOUBLE: %s, expected DRED_ERR_ARG", dred_strerror(st));
  else pass("NULL bcast buffer with MPI_DOUBLE refused");
  bottom_case(good, K_ALLREDUCE, MPI_SUM, "SUM after refusals", 0);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-n") && i + 1 < argc) g_nbig = atol(argv[++i]);
  test_init(&argc, &argv, "bottom");
  h_small = malloc(5 * sizeof *h_small);
  h_big = malloc((size_t)g_nbig * sizeof *h_big);
  h_ints = malloc(3 * sizeof *h_ints);
  if (h_small == NULL || h_big == NULL || h_ints == NULL || g_nbig < 1) {
    fail("no memory for the variables (or -n < 1)");
    return test_finish();
  }
  vars_t near = {"near", 3, {g_bss, h_small, g_data}, {3, 5, 4}, MPI_DOUBLE, 0, 0};
  vars_t far = {"far", 2, {g_far0, h_big}, {2, (int)g_nbig}, MPI_DOUBLE, 0, 0};
  vars_t ints = {"ints", 2, {g_ints, h_ints}, {2, 3}, MPI_INT, 0, 0};
  vars_make(&near);
  vars_make(&far);
  vars_make(&ints);
  vars_t *both[2] = {&near, &far};
  for (int t = 0; t < 2; t++) {
    bottom_case(both[t], K_ALLREDUCE, MPI_SUM, "SUM", 0);
    bottom_case(both[t], K_ALLREDUCE, MPI_MAX, "MAX", 0);
    for (int root = 0; root < g_size; root += g_size > 2 ? g_size - 1 : 1) {
      bottom_case(both[t], K_REDUCE, MPI_SUM, "SUM", root);
      bottom_case(both[t], K_BCAST, MPI_OP_NULL, "", root);
    }
  }
  nonblocking_case(&near, &far);
  user_op_case(&ints);
  null_case(&near);
  MPI_Type_free(&near.dt);
  MPI_Type_free(&far.dt);
  MPI_Type_free(&ints.dt);
  free(h_small);
  free(h_big);
  free(h_ints);
  return test_finish();
}
