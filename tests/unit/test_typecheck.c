/*
 * test_typecheck.c -- lib/engine/typecheck.c against MPICH itself: for every named datatype
 * mpi.h defines and every predefined op, dred accepts the pair exactly when MPI computes it;
 * and the layouts, element strides and signature fingerprints given to derived datatypes.
 *
 * How "MPI computes it" is decided: MPICH 4.0.2 cannot be asked in-process -- some pairs
 * may abort the process, and some return MPI_SUCCESS without doing anything (LAND on
 * MPI_REAL leaves inout as it was).  So a forked child runs MPI_Reduce_local on random
 * bytes, 16 times a pair: computed if every call succeeded and inout changed at least once
 * (a real op on random data does); refused if a call returned an error, or the child died,
 * or nothing ever changed.  The one deliberate difference (logical ops on MPI_REAL16) is
 * listed in deliberate() with its reason.
 * Needs MPI (built with mpicc, singleton MPI_Init) and forks after MPI_Init: the children
 * make only MPI_Reduce_local calls, which touch no network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/engine/typecheck.h"

#define T(x) {#x, x}
static const struct {
  const char *name;
  MPI_Datatype t;
} types[] = {
    T(MPI_CHAR), T(MPI_SIGNED_CHAR), T(MPI_UNSIGNED_CHAR), T(MPI_BYTE), T(MPI_WCHAR),
    T(MPI_SHORT), T(MPI_UNSIGNED_SHORT), T(MPI_INT), T(MPI_UNSIGNED), T(MPI_LONG),
    T(MPI_UNSIGNED_LONG), T(MPI_FLOAT), T(MPI_DOUBLE), T(MPI_LONG_DOUBLE), T(MPI_LONG_LONG_INT),
    T(MPI_UNSIGNED_LONG_LONG), T(MPI_PACKED), T(MPI_FLOAT_INT), T(MPI_DOUBLE_INT),
    T(MPI_LONG_INT), T(MPI_SHORT_INT), T(MPI_2INT), T(MPI_LONG_DOUBLE_INT), T(MPI_COMPLEX),
    T(MPI_DOUBLE_COMPLEX), T(MPI_LOGICAL), T(MPI_REAL), T(MPI_DOUBLE_PRECISION), T(MPI_INTEGER),
    T(MPI_2INTEGER), T(MPI_2REAL), T(MPI_2DOUBLE_PRECISION), T(MPI_CHARACTER), T(MPI_REAL4),
    T(MPI_REAL8), T(MPI_REAL16), T(MPI_COMPLEX8), T(MPI_COMPLEX16), T(MPI_COMPLEX32),
    T(MPI_INTEGER1), T(MPI_INTEGER2), T(MPI_INTEGER4), T(MPI_INTEGER8), T(MPI_INTEGER16),
    T(MPI_INT8_T), T(MPI_INT16_T), T(MPI_INT32_T), T(MPI_INT64_T), T(MPI_UINT8_T),
    T(MPI_UINT16_T), T(MPI_UINT32_T), T(MPI_UINT64_T), T(MPI_C_BOOL), T(MPI_C_FLOAT_COMPLEX),
    T(MPI_C_DOUBLE_COMPLEX), T(MPI_C_LONG_DOUBLE_COMPLEX), T(MPI_AINT), T(MPI_OFFSET),
    T(MPI_COUNT), T(MPI_CXX_BOOL), T(MPI_CXX_FLOAT_COMPLEX), T(MPI_CXX_DOUBLE_COMPLEX),
    T(MPI_CXX_LONG_DOUBLE_COMPLEX),
#ifdef MPIX_C_FLOAT16
    T(MPIX_C_FLOAT16),
#endif
};
static const struct {
  const char *name;
  MPI_Op o;
} ops[] = {T(MPI_MAX),  T(MPI_MIN),  T(MPI_SUM),  T(MPI_PROD),   T(MPI_LAND),
           T(MPI_BAND), T(MPI_LOR),  T(MPI_BOR),  T(MPI_LXOR),   T(MPI_BXOR),
           T(MPI_MINLOC), T(MPI_MAXLOC), T(MPI_REPLACE), T(MPI_NO_OP)};
#undef T
#define NT (sizeof types / sizeof types[0])
#define NO (sizeof ops / sizeof ops[0])

/* dred_typecheck with its error lines kept off the output */
static int check(MPI_Datatype t, MPI_Op o, dred_typeinfo_t *ti) {
  int saved = dup(2), null = open("/dev/null", O_WRONLY), rc;
  fflush(stderr);
  dup2(null, 2);
  rc = dred_typecheck(t, o, ti);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(null);
  return rc;
}

/* In a child: MPI_Reduce_local(t, o) on random bytes, 16 times.  0: MPI computes it (it
 * succeeded and changed inout at least once); 1: it returned an error; 3: it returned
 * MPI_SUCCESS and never changed anything. */
static unsigned char probe(MPI_Datatype t, MPI_Op o) {
  uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)(unsigned)t ^ ((uint64_t)(unsigned)o << 32);
  int k, changed = 0;
  for (k = 0; k < 16; k++) {
    unsigned char in[64], io[64], io0[64];
    size_t j;
    for (j = 0; j < sizeof in; j++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      in[j] = (unsigned char)x;
      io[j] = (unsigned char)(x >> 8);
      /* an x87 long double needs its explicit integer bit (bit 63, in byte 7): without it
       * the bytes are an "unnormal", which compares false with everything, and MAXLOC on
       * MPI_LONG_DOUBLE_INT would look like a no-op; other types just get a set bit */
      if (j % 16 == 7) in[j] |= 0x80, io[j] |= 0x80;
    }
    memcpy(io0, io, sizeof io);
    if (MPI_Reduce_local(in, io, 1, t, o) != MPI_SUCCESS) return 1;
    changed |= memcmp(io, io0, sizeof io) != 0;
  }
  return changed ? 0 : 3;
}

/* verdict[i * NO + j] for every (type i, op j): probe()'s value, or 2 when the probe
 * killed the process (an abort or a signal), 1 for MPI_DATATYPE_NULL.  One child runs the
 * pairs in turn and writes each verdict to a pipe; when it dies, the pair it was on is
 * marked 2 and a new child goes on from the next (a fork costs up to a second here, so
 * not one per pair). */
static void mpi_verdicts(unsigned char *verdict) {
  size_t p = 0, n = NT * NO;
  while (p < n) {
    int fd[2], st;
    pid_t pid;
    unsigned char v;
    if (pipe(fd) != 0) fail_msg("pipe failed");
    fflush(stdout);
    fflush(stderr);
    if ((pid = fork()) == 0) {
      int null = open("/dev/null", O_WRONLY);
      size_t k;
      close(fd[0]);
      dup2(null, 1);
      dup2(null, 2);
      for (k = p; k < n; k++) {
        MPI_Datatype t = types[k / NO].t;
        v = t == MPI_DATATYPE_NULL ? 1 : probe(t, ops[k % NO].o);
        if (write(fd[1], &v, 1) != 1) _exit(9);
      }
      _exit(0);
    }
    close(fd[1]);
    while (p < n && read(fd[0], &v, 1) == 1) verdict[p++] = v;
    close(fd[0]);
    waitpid(pid, &st, 0);
    if (p < n) verdict[p++] = 2; /* the child died on this pair */
  }
}

/* Pairs where dred deliberately refuses what MPICH 4.0.2's MPI_Reduce_local changes
 * something for: logical ops on MPI_REAL16.  MPI says logical ops do not apply to
 * floating point, the other Fortran reals get no effect at all from MPICH for them, and
 * this build's REAL16 arithmetic is wrong anyway (1.5 + 2.25 gives a NaN). */
static int deliberate(MPI_Datatype t, MPI_Op o) {
  return t == MPI_REAL16 && (o == MPI_LAND || o == MPI_LOR || o == MPI_LXOR);
}

static void test_named_against_mpi(void **state) {
  size_t i, j;
  int accepted = 0, refused = 0, noop = 0, bad = 0;
  dred_typeinfo_t ti;
  (void)state;
  static unsigned char verdict[NT * NO];
  mpi_verdicts(verdict);
  for (i = 0; i < NT; i++) {
    for (j = 0; j < NO; j++) {
      int v = verdict[i * NO + j];
      int ok = check(types[i].t, ops[j].o, &ti) == DRED_OK;
      if (v == 3) printf("note: MPI_Reduce_local(%s, %s) returns MPI_SUCCESS without effect\n",
                         ops[j].name, types[i].name);
      if (ok != (v == 0) && !(deliberate(types[i].t, ops[j].o) && !ok)) {
        printf("MISMATCH %s %s: dred %s, MPI_Reduce_local %s\n", ops[j].name, types[i].name,
               ok ? "accepts" : "refuses",
               v == 0 ? "computes it" : v == 1 ? "returns an error" : v == 3 ?
               "returns MPI_SUCCESS but changes nothing" : "aborts");
        bad++;
      }
      if (ok) {
        accepted++;
        /* a named type is never repacked, and is combined as itself */
        assert_int_equal(ti.layout, DRED_LAYOUT_DIRECT);
        assert_int_equal(ti.mult, 1);
        assert_true(ti.exec_type == types[i].t);
      } else {
        refused++;
      }
      noop += v == 3;
    }
  }
  printf("typecheck: %zu named types x %zu ops: %d accepted, %d refused (%d of them "
         "MPI_SUCCESS without effect in MPI_Reduce_local)\n", NT, NO, accepted, refused, noop);
  assert_int_equal(bad, 0);
  assert_true(accepted > 300); /* the table is not empty by accident */
}

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)in, (void)inout, (void)len, (void)type;
}

/* Layouts of derived types, and which members' types may meet (signatures). */
static void test_derived(void **state) {
  MPI_Datatype vec, c2, v2, c4f, rsz, mixed, dipair, vdi, idx, c2di;
  dred_typeinfo_t a, b;
  MPI_Op user;
  (void)state;
  MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &vec);
  MPI_Type_contiguous(2, MPI_DOUBLE, &c2);
  MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &v2);
  MPI_Type_contiguous(4, MPI_FLOAT, &c4f);
  MPI_Type_create_resized(MPI_INT, 0, 8, &rsz);
  MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 8},
                         (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &mixed);
  MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 8},
                         (MPI_Datatype[]){MPI_DOUBLE, MPI_INT}, &dipair);
  MPI_Type_vector(2, 1, 3, MPI_DOUBLE_INT, &vdi);
  MPI_Type_indexed(2, (int[]){2, 4}, (int[]){1, 5}, MPI_UNSIGNED, &idx);
  MPI_Type_contiguous(2, MPI_DOUBLE_INT, &c2di);
  MPI_Datatype all[] = {vec, c2, v2, c4f, rsz, mixed, dipair, vdi, idx, c2di};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) MPI_Type_commit(&all[k]);
  MPI_Op_create(user_fn, 1, &user);

  /* vector of doubles under SUM: packed, 6 doubles per element */
  assert_int_equal(check(vec, MPI_SUM, &a), DRED_OK);
  assert_int_equal(a.layout, DRED_LAYOUT_PACKED);
  assert_true(a.exec_type == MPI_DOUBLE);
  assert_int_equal(a.mult, 6);
  assert_int_equal(a.extent, 48);
  assert_int_equal(a.size, 48);
  /* contiguous: direct, zero-copy path kept */
  assert_int_equal(check(c2, MPI_SUM, &b), DRED_OK);
  assert_int_equal(b.layout, DRED_LAYOUT_DIRECT);
  /* a vector of 2 doubles and 2 contiguous doubles: one signature, same stride */
  assert_int_equal(check(v2, MPI_SUM, &a), DRED_OK);
  assert_int_equal(a.layout, DRED_LAYOUT_PACKED);
  assert_int_equal(a.sig, b.sig);
  assert_int_equal(a.extent, b.extent);
  /* ... and the signature of 4 floats differs, as does MPI_INT's from MPI_FLOAT's */
  assert_int_equal(check(c4f, MPI_SUM, &b), DRED_OK);
  assert_int_equal(a.size, b.size);
  assert_true(a.sig != b.sig);
  assert_int_equal(check(MPI_INT, MPI_SUM, &a), DRED_OK);
  assert_int_equal(check(MPI_FLOAT, MPI_SUM, &b), DRED_OK);
  assert_true(a.sig != b.sig);
  /* resized int (size 4, extent 8) under MAX: packed to 4 bytes an element */
  assert_int_equal(check(rsz, MPI_MAX, &a), DRED_OK);
  assert_int_equal(a.layout, DRED_LAYOUT_PACKED);
  assert_int_equal(a.extent, 4);
  /* ... under a user op: the image, 8 bytes an element */
  assert_int_equal(check(rsz, user, &a), DRED_OK);
  assert_int_equal(a.layout, DRED_LAYOUT_IMAGE);
  assert_int_equal(a.extent, 8);
  assert_true(a.exec_type == rsz);
  /* indexed with a lower bound of 4 bytes under a user op: image from the true lb */
  assert_int_equal(check(idx, user, &a), DRED_OK);
  assert_int_equal(a.layout, DRED_LAYOUT_IMAGE);
  assert_int_equal(a.true_lb, 4);
  /* mixed basic types: refused under predefined ops, accepted (direct: no holes) under
   * a user op */
  assert_int_equal(check(mixed, MPI_SUM, &a), DRED_ERR_ARG);
  assert_int_equal(check(mixed, user, &a), DRED_OK);
  /* a hand-built {double, int} is not MPI_DOUBLE_INT: MAXLOC refuses it */
  assert_int_equal(check(dipair, MPI_MAXLOC, &a), DRED_ERR_ARG);
  /* a vector of the padded MPI_DOUBLE_INT: packed as 16-byte pairs */
  assert_int_equal(check(vdi, MPI_MAXLOC, &a), DRED_OK);
  assert_int_equal(a.layout, DRED_LAYOUT_PACKED);
  assert_true(a.exec_type == MPI_DOUBLE_INT);
  assert_int_equal(a.base_padded, 1);
  assert_int_equal(a.extent, 32);
  assert_int_equal(check(vdi, MPI_SUM, &a), DRED_ERR_ARG);
  /* contiguous MPI_DOUBLE_INT: the buffer already is the array */
  assert_int_equal(check(c2di, MPI_MINLOC, &a), DRED_OK);
  assert_int_equal(a.layout, DRED_LAYOUT_DIRECT);
  assert_int_equal(a.mult, 2);
  /* MPI_DATATYPE_NULL, an optional type this build lacks, and ops that are not reductions */
  assert_int_equal(check(MPI_DATATYPE_NULL, MPI_SUM, &a), DRED_ERR_ARG);
  assert_int_equal(check(MPI_INTEGER16, MPI_SUM, &a), DRED_ERR_ARG);
  assert_int_equal(check(vec, MPI_REPLACE, &a), DRED_ERR_ARG);
  assert_int_equal(check(vec, MPI_OP_NULL, &a), DRED_ERR_ARG);

  MPI_Op_free(&user);
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) MPI_Type_free(&all[k]);
}

/* Which bytes two buffers of a type with holes share: their typemaps', not their spans'. */
static void test_typemap_shared(void **state) {
  MPI_Datatype col, idx, rsz;
  dred_typeinfo_t ti;
  static int m[64];
  (void)state;
  MPI_Type_vector(8, 1, 2, MPI_INT, &col);                             /* a matrix column */
  MPI_Type_indexed(2, (int[]){1, 1}, (int[]){2, 6}, MPI_INT, &idx);   /* true lb 8 bytes */
  MPI_Type_create_resized(MPI_INT, 0, 12, &rsz);                      /* every third int */
  MPI_Type_commit(&col), MPI_Type_commit(&idx), MPI_Type_commit(&rsz);

  assert_int_equal(check(col, MPI_SUM, &ti), DRED_OK);
  assert_int_equal(dred_typemap_shared(m, m + 1, 1, col, &ti), 0);     /* interleaved */
  assert_int_equal(dred_typemap_shared(m + 1, m, 1, col, &ti), 0);
  assert_int_equal(dred_typemap_shared(m, m + 2, 1, col, &ti), 7 * 4); /* a row down */
  assert_int_equal(dred_typemap_shared(m + 14, m, 1, col, &ti), 1 * 4);
  assert_int_equal(dred_typemap_shared(m, m + 15, 1, col, &ti), 0);    /* spans apart */
  assert_int_equal(dred_typemap_shared(m, m, 2, col, &ti), 2 * 8 * 4);
  assert_int_equal(dred_typemap_shared(m, m + 1, 0, col, &ti), 0);
  /* elements {2, 6} (lb 8 bytes): the buffer 4 ints on shares element 6; 1 on, none */
  assert_int_equal(check(idx, MPI_SUM, &ti), DRED_OK);
  assert_int_equal(ti.true_lb, 8);
  assert_int_equal(dred_typemap_shared(m, m + 4, 1, idx, &ti), 4);
  assert_int_equal(dred_typemap_shared(m + 4, m, 1, idx, &ti), 4);
  assert_int_equal(dred_typemap_shared(m, m + 1, 1, idx, &ti), 0);
  /* ints 0, 3, 6 ... against 1, 4, 7 ... none; against 3, 6, 9 ... two of three */
  assert_int_equal(check(rsz, MPI_MAX, &ti), DRED_OK);
  assert_int_equal(dred_typemap_shared(m, m + 1, 3, rsz, &ti), 0);
  assert_int_equal(dred_typemap_shared(m, m + 3, 3, rsz, &ti), 2 * 4);

  MPI_Type_free(&col), MPI_Type_free(&idx), MPI_Type_free(&rsz);
}

#ifdef __SANITIZE_ADDRESS__
/* This test runs MPI, and MPICH/UCX leave allocations of modules they unload at
 * MPI_Finalize ("<unknown module>" frames, which no suppression by library name matches):
 * like the MPI tests under make asan, it runs without leak checking. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }
#endif

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_named_against_mpi),
                                     cmocka_unit_test(test_derived),
                                     cmocka_unit_test(test_typemap_shared)};
  int rc;
  MPI_Init(&argc, &argv);
  /* refusals come back as error codes (MPI_Reduce_local reports to MPI_COMM_SELF's
   * handler), so a probe child only dies when MPI really aborts */
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
