/*
 * test_kernel.c -- lib/engine/kernel.c's combine kernels against MPICH's MPI_Reduce_local.
 *
 * For every (type, op) pair with a kernel, both entry points must store exactly the bytes
 * MPI_Reduce_local stores (memcmp), on random data built to hit the corners: overflow for
 * SUM/PROD, zeros and ties for the logical ops and MAX/MIN, and for float/double NaNs of
 * both signs and several payloads (signalling ones too), +-0, +-inf, denormals.  Which pairs
 * have a kernel is checked against lib/engine/typecheck.c (a kernel only where dred accepts the
 * pair, and one for every accepted pair of the types kernel.c covers), and DRED_KERNELS=0
 * is checked in child processes, since kernel.c reads it once.
 *
 * Both builds of kernel.c are checked: lib/engine/kernel.o (whose AVX2 clones this CPU runs if
 * it has AVX2) and kernel_baseline.o (-DDRED_KERNEL_BASELINE: no clones, the code other
 * CPUs run).  Unlike the other unit tests this one needs MPI: it is built with mpicc, links
 * those and lib/engine/typecheck.o, and calls MPI_Init as a singleton (MPICH needs no mpiexec
 * for that).  DRED_TEST_SEED=n changes the random data (default 1).
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
#include <limits.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "../../lib/engine/kernel.h"
#include "../../lib/engine/typecheck.h"

extern char **environ;

/* lib/engine/kernel.c built with -DDRED_KERNEL_BASELINE: the code CPUs without AVX2 run */
const dred_kernel_t *dred_kernel_find_baseline(MPI_Datatype type, MPI_Op op);

enum { K_INT, K_BOOL, K_BYTE, K_FLOAT, K_DOUBLE, K_OTHER };

typedef struct {
  const char *name;
  MPI_Datatype type;
  size_t size; /* bytes per element (0 for K_OTHER: never combined here) */
  int kind;
  int is_unsigned; /* K_INT: no MAX/MIN kernel (MPICH 4.0.2 compares them as signed) */
} type_t;

#define INTT(mpi, ctype, u) {#mpi, mpi, sizeof(ctype), K_INT, u}
static type_t types[] = {
    INTT(MPI_CHAR, char, CHAR_MIN == 0),
    INTT(MPI_SIGNED_CHAR, signed char, 0),
    INTT(MPI_UNSIGNED_CHAR, unsigned char, 1),
    INTT(MPI_SHORT, short, 0),
    INTT(MPI_UNSIGNED_SHORT, unsigned short, 1),
    INTT(MPI_INT, int, 0),
    INTT(MPI_UNSIGNED, unsigned, 1),
    INTT(MPI_LONG, long, 0),
    INTT(MPI_UNSIGNED_LONG, unsigned long, 1),
    INTT(MPI_LONG_LONG_INT, long long, 0),
    INTT(MPI_LONG_LONG, long long, 0),
    INTT(MPI_UNSIGNED_LONG_LONG, unsigned long long, 1),
    INTT(MPI_INT8_T, int8_t, 0),
    INTT(MPI_INT16_T, int16_t, 0),
    INTT(MPI_INT32_T, int32_t, 0),
    INTT(MPI_INT64_T, int64_t, 0),
    INTT(MPI_UINT8_T, uint8_t, 1),
    INTT(MPI_UINT16_T, uint16_t, 1),
    INTT(MPI_UINT32_T, uint32_t, 1),
    INTT(MPI_UINT64_T, uint64_t, 1),
    INTT(MPI_AINT, MPI_Aint, 0),
    INTT(MPI_OFFSET, MPI_Offset, 0),
    INTT(MPI_COUNT, MPI_Count, 0),
    {"MPI_C_BOOL", MPI_C_BOOL, sizeof(_Bool), K_BOOL, 0},
    {"MPI_BYTE", MPI_BYTE, 1, K_BYTE, 0},
    {"MPI_FLOAT", MPI_FLOAT, sizeof(float), K_FLOAT, 0},
    {"MPI_DOUBLE", MPI_DOUBLE, sizeof(double), K_DOUBLE, 0},
    /* no kernel for these, whatever the op */
    {"MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, 0, K_OTHER, 0},
    {"MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, 0, K_OTHER, 0},
    {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, 0, K_OTHER, 0},
    {"MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, 0, K_OTHER, 0},
    {"MPI_WCHAR", MPI_WCHAR, 0, K_OTHER, 0},
    {"MPI_PACKED", MPI_PACKED, 0, K_OTHER, 0},
    {"MPI_2INT", MPI_2INT, 0, K_OTHER, 0},
    {"MPI_FLOAT_INT", MPI_FLOAT_INT, 0, K_OTHER, 0},
    {"MPI_DOUBLE_INT", MPI_DOUBLE_INT, 0, K_OTHER, 0},
    {"MPI_LONG_INT", MPI_LONG_INT, 0, K_OTHER, 0},
    {"MPI_SHORT_INT", MPI_SHORT_INT, 0, K_OTHER, 0},
    {"MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, 0, K_OTHER, 0},
};
#define NTYPES (sizeof types / sizeof types[0])

typedef struct {
  const char *name;
  MPI_Op op;
} op_t;

static op_t ops[] = {
    {"MPI_SUM", MPI_SUM},   {"MPI_PROD", MPI_PROD},     {"MPI_MAX", MPI_MAX},
    {"MPI_MIN", MPI_MIN},   {"MPI_LAND", MPI_LAND},     {"MPI_LOR", MPI_LOR},
    {"MPI_LXOR", MPI_LXOR}, {"MPI_BAND", MPI_BAND},     {"MPI_BOR", MPI_BOR},
    {"MPI_BXOR", MPI_BXOR}, {"MPI_MAXLOC", MPI_MAXLOC}, {"MPI_MINLOC", MPI_MINLOC},
    {"MPI_REPLACE", MPI_REPLACE}, {"MPI_NO_OP", MPI_NO_OP},
    {"user op", MPI_OP_NULL}, /* filled in by main() */
};
#define NOPS (sizeof ops / sizeof ops[0])
#define NKOPS 10 /* ops[0..NKOPS) can have kernels, the others never */

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)in, (void)inout, (void)len, (void)type;
}

/* ---- random data ---- */

static uint64_t rng = 1;
static uint64_t next(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1DULL;
}

/* Corner values: the integer extremes of every width, and for float/double +-0, +-inf, NaNs
 * of both signs with several payloads (signalling ones too), denormals, +-MAX, +-1. */
static const uint64_t extremes[] = {0, 1, UINT64_MAX, 2, 0x80ULL, 0x7fULL, 0x8000ULL,
                                    0x7fffULL, 0x80000000ULL, 0x7fffffffULL,
                                    0x8000000000000000ULL, 0x7fffffffffffffffULL, 0xffULL,
                                    0xffffULL, 0xffffffffULL, 0x100ULL};
static const uint64_t dspecial[] = {
    0x0000000000000000ULL, 0x8000000000000000ULL, /* +-0 */
    0x7ff0000000000000ULL, 0xfff0000000000000ULL, /* +-inf */
    0x7ff8000000000000ULL, 0xfff8000000000000ULL, /* +-quiet NaN (0xfff8...: x86's default) */
    0x7ff8000000000badULL, 0xfffc00000000beefULL, /* quiet NaNs with payloads */
    0x7ff0000000000001ULL, 0xfff4000000000123ULL, /* signalling NaNs */
    0x0000000000000001ULL, 0x800fffffffffffffULL, /* denormals: smallest, -largest */
    0x0008000000000000ULL, 0x0010000000000000ULL, /* a denormal, DBL_MIN */
    0x7fefffffffffffffULL, 0xffefffffffffffffULL, /* +-DBL_MAX */
    0x3ff0000000000000ULL, 0xbff0000000000000ULL, /* +-1 */
};
static const uint64_t fspecial[] = { /* the same for float */
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
    0x7fc00bad, 0xffe0beef, 0x7f800001, 0xffa00123, 0x00000001, 0x807fffff,
    0x00400000, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000,
};
#define NEXTREMES (sizeof extremes / sizeof extremes[0])
#define NSPECIAL (sizeof dspecial / sizeof dspecial[0])
_Static_assert(NSPECIAL == sizeof fspecial / sizeof fspecial[0], "one list per width");

/* One integer (its low bytes are used): full-width random bits (overflow for SUM/PROD), a
 * small value (zeros for the logical ops, equal values for MAX/MIN), an extreme. */
static uint64_t int_value(void) {
  uint64_t r = next();
  switch (r % 8) {
    case 0: case 1: case 2: return next();
    case 3: case 4: return (uint64_t)((int64_t)((r >> 32) % 7) - 3); /* -3..3, sign-extended */
    case 5: return extremes[(r >> 8) % NEXTREMES];
    case 6: return next() >> (r >> 8) % 64; /* every magnitude */
    default: return 0 - (next() >> (r >> 8) % 64);
  }
}

/* One float or double (as bits): a corner value, an ordinary one, random bits, or a huge
 * one (SUM and PROD overflow to infinity). */
static uint64_t fp_value(int is_double) {
  uint64_t r = next(), m = next();
  int sign = (int)(r >> 63);
  if (is_double) {
    switch (r % 10) {
      case 0: case 1: case 2: return dspecial[(r >> 8) % NSPECIAL];
      case 3: case 4: case 5: /* |x| in [2^-40, 2^40) */
        return (uint64_t)sign << 63 | (uint64_t)(1023 - 40 + (r >> 8) % 80) << 52 | (m >> 12);
      case 6: case 7: return next();
      default: /* |x| in [2^900, 2^1023) */
        return (uint64_t)sign << 63 | (uint64_t)(1023 + 900 + (r >> 8) % 124) << 52 | (m >> 12);
    }
  }
  switch (r % 10) {
    case 0: case 1: case 2: return fspecial[(r >> 8) % NSPECIAL];
    case 3: case 4: case 5:
      return (uint64_t)((uint32_t)sign << 31 | (uint32_t)(127 - 20 + (r >> 8) % 40) << 23 |
                        (uint32_t)(m >> 41));
    case 6: case 7: return next() >> 32;
    default:
      return (uint64_t)((uint32_t)sign << 31 | (uint32_t)(127 + 100 + (r >> 8) % 28) << 23 |
                        (uint32_t)(m >> 41));
  }
}

static uint64_t value(const type_t *t) {
  switch (t->kind) {
    case K_BOOL: return next() & 1;
    case K_FLOAT: return fp_value(0);
    case K_DOUBLE: return fp_value(1);
    default: return int_value();
  }
}

/* in[i] and inout[i].  When n allows, the buffers start with every pair of corner values
 * (NaN with NaN, +0 with -0, inf with -inf, INT_MIN with -1...); then random pairs, one in
 * six equal, one in twelve a value and its negation (+0/-0, exact cancellation).  With
 * `sweep`, only corner pairs, from the *sweep-th on: short runs of them reach the scalar
 * heads and tails of the vectorised loops, which compilers may build differently. */
static void fill(const type_t *t, unsigned char *in, unsigned char *io, size_t n, size_t *sweep) {
  const uint64_t *corner = t->kind == K_FLOAT ? fspecial : t->kind == K_DOUBLE ? dspecial
                                                                                : extremes;
  size_t i = 0, s = t->size, nc = t->kind == K_FLOAT || t->kind == K_DOUBLE ? NSPECIAL
                                   : t->kind == K_BOOL                      ? 2
                                                                            : NEXTREMES;
  if (sweep != NULL)
    for (; i < n; i++, ++*sweep) { /* bools: 0 and 1 are extremes[0..1] */
      memcpy(in + i * s, &corner[*sweep % (nc * nc) / nc], s); /* little-endian: low bytes */
      memcpy(io + i * s, &corner[*sweep % nc], s);
    }
  if (n >= nc * nc)
    for (; i < nc * nc; i++) {
      memcpy(in + i * s, &corner[i / nc], s);
      memcpy(io + i * s, &corner[i % nc], s);
    }
  for (; i < n; i++) {
    uint64_t a = value(t), b = value(t), r = next() % 12;
    if (r < 2) b = a;
    else if (r == 2 && t->kind == K_FLOAT) b = a ^ 0x80000000ULL;
    else if (r == 2 && t->kind == K_DOUBLE) b = a ^ 0x8000000000000000ULL;
    else if (r == 2 && t->kind != K_BOOL) b = 0 - a;
    memcpy(in + i * s, &a, s);
    memcpy(io + i * s, &b, s);
  }
}

/* ---- pairs with a kernel: equal to MPI_Reduce_local ---- */

static long comparisons, elements, pairs_tested;

static void show(const char *what, const unsigned char *p, size_t s) {
  size_t j;
  fprintf(stderr, " %s=0x", what);
  for (j = s; j-- > 0;) fprintf(stderr, "%02x", p[j]);
}

static void expect_same(const type_t *t, const op_t *o, const char *what, size_t n, size_t off,
                        const unsigned char *got, const unsigned char *want,
                        const unsigned char *in, const unsigned char *io) {
  size_t i, s = t->size;
  comparisons++;
  if (memcmp(got, want, n * s) == 0) return;
  for (i = 0; i < n && memcmp(got + i * s, want + i * s, s) == 0; i++) {
  }
  fprintf(stderr, "%s %s %s: n=%zu offset=%zu: first difference at element %zu:", t->name,
          o->name, what, n, off, i);
  show("in", in + i * s, s);
  show("inout", io + i * s, s);
  show("MPI_Reduce_local", want + i * s, s);
  show("kernel", got + i * s, s);
  fprintf(stderr, "\n");
  fail_msg("%s %s: %s differs from MPI_Reduce_local", t->name, o->name, what);
}

/* Both builds of the kernel (k[0]: this CPU's clone, k[1]: baseline) on the same data. */
static void check_pair(const type_t *t, const op_t *o, const dred_kernel_t *const k[2]) {
  /* (n, offset in elements): offsets start the buffers off the allocator's alignment;
   * then NSWEEP corner-sweep runs, n = 1..NSWEEP, offset n % 4 */
  static const size_t cases[][2] = {{0, 0}, {1, 0}, {7, 0}, {1000, 0}, {100003, 0},
                                    {1, 1}, {7, 3}, {999, 1}, {4097, 5}};
  enum { NCASES = sizeof cases / sizeof cases[0], NSWEEP = 40 };
  static const char *what[2][2] = {{"inplace", "outofplace"},
                                   {"inplace (baseline)", "outofplace (baseline)"}};
  enum { GUARD = 64 };
  size_t c, s = t->size, j, sweep = 0;
  int b;
  for (c = 0; c < NCASES + NSWEEP; c++) {
    size_t n = c < NCASES ? cases[c][0] : c - NCASES + 1;
    size_t off = c < NCASES ? cases[c][1] : n % 4, bytes = (off + n) * s + GUARD;
    unsigned char *in = malloc(bytes), *io = malloc(bytes), *want = malloc(bytes),
                  *got = malloc(bytes), *in0 = malloc(bytes), *io0 = malloc(bytes);
    unsigned char *pin = in + off * s, *pio = io + off * s;
    assert_non_null(in && io && want && got && in0 && io0);
    memset(in, 0xa5, bytes);
    memset(io, 0x5a, bytes);
    fill(t, pin, pio, n, c < NCASES ? NULL : &sweep);
    memcpy(in0, in, bytes);
    memcpy(io0, io, bytes);
    memcpy(want, io, bytes);
    assert_int_equal(MPI_Reduce_local(pin, want + off * s, (int)n, t->type, o->op), MPI_SUCCESS);

    for (b = 0; b < 2; b++) {
      /* inplace: inout becomes the result; nothing outside [off, off + n) is written */
      memcpy(got, io, bytes);
      k[b]->inplace(pin, got + off * s, n);
      expect_same(t, o, what[b][0], n, off, got + off * s, want + off * s, pin, pio);
      assert_memory_equal(got, want, bytes); /* the guard bytes too */
      assert_memory_equal(in, in0, bytes);

      /* outofplace: out gets the result, in and inout are left as they were */
      memset(got, 0xee, bytes);
      k[b]->outofplace(pin, pio, got + off * s, n);
      expect_same(t, o, what[b][1], n, off, got + off * s, want + off * s, pin, pio);
      for (j = 0; j < off * s; j++) assert_int_equal(got[j], 0xee);
      for (j = (off + n) * s; j < bytes; j++) assert_int_equal(got[j], 0xee);
      assert_memory_equal(in, in0, bytes);
      assert_memory_equal(io, io0, bytes);
      elements += (long)n;
    }
    free(in), free(io), free(want), free(got), free(in0), free(io0);
  }
}

/* What dred_typecheck says of (type, op), its error lines kept off the test's output. */
static int accepted(MPI_Datatype type, MPI_Op op) {
  dred_typeinfo_t ti;
  int saved = dup(2), null = open("/dev/null", O_WRONLY), rc;
  fflush(stderr);
  dup2(null, 2);
  rc = dred_typecheck(type, op, &ti);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(null);
  return rc == DRED_OK;
}

static void test_against_reduce_local(void **state) {
  size_t ti, oi;
  (void)state;
  for (ti = 0; ti < NTYPES; ti++)
    for (oi = 0; oi < NOPS; oi++) {
      const type_t *t = &types[ti];
      const op_t *o = &ops[oi];
      const dred_kernel_t *k = dred_kernel_find(t->type, o->op);
      const dred_kernel_t *both[2] = {k, dred_kernel_find_baseline(t->type, o->op)};
      int ok = accepted(t->type, o->op);
      if ((k == NULL) != (both[1] == NULL))
        fail_msg("%s %s: the baseline build disagrees", t->name, o->name);
      if (k != NULL && !ok) fail_msg("%s %s: a kernel for a pair dred refuses", t->name, o->name);
      if (t->kind == K_OTHER || oi >= NKOPS) {
        if (k != NULL) fail_msg("%s %s: a kernel, expected none", t->name, o->name);
        continue;
      }
      if (t->is_unsigned && (o->op == MPI_MAX || o->op == MPI_MIN)) {
        if (k != NULL) fail_msg("%s %s: a kernel, expected none", t->name, o->name);
        continue;
      }
      /* MPI_LXOR on float/double: an MPICH extension dred accepts (typecheck.c), left to
       * MPI_Reduce_local: no kernel needed */
      if (ok && k == NULL && !((t->kind == K_FLOAT || t->kind == K_DOUBLE) && o->op == MPI_LXOR))
        fail_msg("%s %s: accepted but no kernel", t->name, o->name);
      if (k == NULL) continue;
      assert_non_null(k->inplace);
      assert_non_null(k->outofplace);
      check_pair(t, o, both);
      pairs_tested++;
    }
  printf("kernels: %ld (type, op) pairs x 2 builds (AVX2 clones where the CPU has AVX2, and "
         "baseline): %ld comparisons with MPI_Reduce_local, %ld elements\n",
         pairs_tested, comparisons, elements);
  assert_true(pairs_tested > 0);
}

static void test_none(void **state) {
  MPI_Op user = ops[NOPS - 1].op;
  (void)state;
  assert_null(dred_kernel_find(MPI_DOUBLE, user));
  assert_null(dred_kernel_find(MPI_INT, user));
  assert_null(dred_kernel_find(MPI_2INT, MPI_MAXLOC));
  assert_null(dred_kernel_find(MPI_DOUBLE_INT, MPI_MINLOC));
  assert_null(dred_kernel_find(MPI_INT, MPI_MAXLOC));
  assert_null(dred_kernel_find(MPI_2INT, MPI_SUM));
  assert_null(dred_kernel_find(MPI_DOUBLE, MPI_LAND)); /* MPICH asserts on it; dred refuses it */
  assert_null(dred_kernel_find(MPI_FLOAT, MPI_BXOR));
  assert_null(dred_kernel_find(MPI_C_BOOL, MPI_SUM));
  assert_null(dred_kernel_find(MPI_BYTE, MPI_MAX));
  assert_null(dred_kernel_find(MPI_LONG_DOUBLE, MPI_SUM));
  assert_null(dred_kernel_find(MPI_C_DOUBLE_COMPLEX, MPI_SUM));
  assert_null(dred_kernel_find(MPI_DATATYPE_NULL, MPI_SUM));
  assert_null(dred_kernel_find(MPI_DOUBLE, MPI_OP_NULL));
  assert_null(dred_kernel_find(MPI_DOUBLE, MPI_REPLACE));
  /* unsigned MAX/MIN stay on MPI_Reduce_local: MPICH 4.0.2 compares them as signed */
  assert_null(dred_kernel_find(MPI_UNSIGNED_LONG, MPI_MAX));
  assert_null(dred_kernel_find(MPI_UINT8_T, MPI_MIN));
  {
    unsigned long in = ULONG_MAX, io = 0;
    assert_int_equal(MPI_Reduce_local(&in, &io, 1, MPI_UNSIGNED_LONG, MPI_MAX), MPI_SUCCESS);
    if (io == ULONG_MAX)
      printf("note: this MPI compares unsigned integers as unsigned (pmodels/mpich#6083 is "
             "fixed): lib/engine/kernel.c could have unsigned MAX/MIN kernels\n");
  }
  /* and a derived type, even a contiguous one: callers pass typecheck's exec_type */
  {
    MPI_Datatype c;
    MPI_Type_contiguous(4, MPI_DOUBLE, &c);
    MPI_Type_commit(&c);
    assert_null(dred_kernel_find(c, MPI_SUM));
    MPI_Type_free(&c);
  }
  assert_non_null(dred_kernel_find(MPI_DOUBLE, MPI_SUM));
}

/* ---- DRED_KERNELS, read once per process: ask child processes ---- */

#define CHILD_ARG "--kernel-env-child"
enum { CHILD_ALL_NULL = 10, CHILD_NONE_NULL = 11, CHILD_MIXED = 12 };

/* The child: a few pairs that have kernels; no MPI_Init (dred_kernel_find makes no MPI call). */
static int child_main(void) {
  const dred_kernel_t *k[] = {dred_kernel_find(MPI_DOUBLE, MPI_SUM),
                              dred_kernel_find(MPI_INT, MPI_BXOR),
                              dred_kernel_find(MPI_C_BOOL, MPI_LAND),
                              dred_kernel_find(MPI_INT8_T, MPI_MAX)};
  int nulls = 0;
  size_t i;
  for (i = 0; i < sizeof k / sizeof k[0]; i++) nulls += k[i] == NULL;
  return nulls == 4 ? CHILD_ALL_NULL : nulls == 0 ? CHILD_NONE_NULL : CHILD_MIXED;
}

/* Run this binary as a child with DRED_KERNELS=value (NULL: unset); its exit status. */
static int run_child(const char *value) {
  char *argv[] = {(char *)"/proc/self/exe", (char *)CHILD_ARG, NULL};
  char **env, var[64];
  size_t n = 0, i, j = 0;
  pid_t pid;
  int st;
  while (environ[n] != NULL) n++;
  env = calloc(n + 2, sizeof *env);
  assert_non_null(env);
  for (i = 0; i < n; i++)
    if (strncmp(environ[i], "DRED_KERNELS=", 13) != 0) env[j++] = environ[i];
  if (value != NULL) {
    snprintf(var, sizeof var, "DRED_KERNELS=%s", value);
    env[j++] = var;
  }
  env[j] = NULL;
  assert_int_equal(posix_spawn(&pid, argv[0], NULL, NULL, argv, env), 0);
  free(env);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

static void test_env(void **state) {
  (void)state;
  assert_int_equal(run_child("0"), CHILD_ALL_NULL);
  assert_int_equal(run_child(NULL), CHILD_NONE_NULL);
  assert_int_equal(run_child("1"), CHILD_NONE_NULL);
}

#ifdef __SANITIZE_ADDRESS__
/* UCX keeps some allocations where LSan does not find the pointers; they are not ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libucs.so\nleak:libuct.so\nleak:libucp.so\nleak:libmpich.so\n";
}
#endif

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_reduce_local),
                                     cmocka_unit_test(test_none), cmocka_unit_test(test_env)};
  const char *seed = getenv("DRED_TEST_SEED");
  int rc;

  if (argc > 1 && strcmp(argv[1], CHILD_ARG) == 0) return child_main();
  unsetenv("DRED_KERNELS"); /* this process tests the kernels themselves */
  if (seed != NULL) rng = strtoull(seed, NULL, 10) | 1;
  MPI_Init(&argc, &argv);
  MPI_Op_create(user_fn, 1, &ops[NOPS - 1].op);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Op_free(&ops[NOPS - 1].op);
#ifdef __SANITIZE_ADDRESS__
  /* The leak check, now rather than at exit: MPI_Finalize unloads UCX modules whose
   * allocations then look leaked from "<unknown module>" (the asan target of the Makefile
   * skips leak checks of the MPI tests for it); see also lsan_default_suppressions. */
  __lsan_do_leak_check();
#endif
  MPI_Finalize();
  return rc;
}
