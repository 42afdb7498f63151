/*
 * types.c -- every named datatype (C, Fortran, C++) under every predefined op, and
 * non-contiguous derived datatypes under predefined and user ops, through dred, compared
 * with the result MPI defines (ref_reduce in mpitest.c).
 *
 *   dredrun -n P mpi_types [-s SEED] [-c COUNTS] [--named-only | --derived-only]
 *
 * Named part.  The test's own table says which (op, type) pairs MPI reduces: the MPI
 * standard's table (MPI-4.0 6.9.2) plus what MPICH 4.0.2's op functions compute beyond it
 * (MPI_CHAR/MPI_CHARACTER as integers, logical ops on Fortran integers, LXOR on C
 * floats; not the logical ops on Fortran reals, which MPICH accepts and leaves undone);
 * types MPICH defines but reduces with no predefined op (MPI_WCHAR, MPI_PACKED,
 * MPI_COMPLEX32, MPIX_C_FLOAT16) and MPI_INTEGER16 (MPI_DATATYPE_NULL here) are refused.
 * Fortran's parameterized types (MPI_Type_create_f90_real/_integer/_complex, which MPI
 * counts as predefined) take the ops of their class, as the named type of their size.
 * tests/unit/test_typecheck.c checks that table against MPI_Reduce_local itself, pair by
 * pair; here every pair the table accepts must reduce to ref_reduce's bytes (values for
 * floating fields, so -0 == +0) for each count of -c (default 1,1000), and every other
 * pair must return DRED_ERR_ARG.  The reductions of one type are all started before any
 * is waited for (nonblocking, auto tags), which keeps the run short.  Data is
 * integer-valued and PROD factors are +-1 with a few 2s, so every combine order gives the
 * same bits.  MPI_REAL16 is compared at P = 1 only: this MPICH build computes garbage for
 * it (1.5 + 2.25 gives a NaN), so at P > 1 the bits depend on the combine order.
 *
 * Derived part.  Vector, indexed, struct (one basic type), resized with holes (size 4,
 * extent 8, as MPICH's tests use) and with a negative lower bound, a matrix column resized
 * to one element (elements interleave), a vector of Fortran's real(15) and one of the
 * padded pair MPI_DOUBLE_INT, under SUM/MAX/MAXLOC; the expected value is ref_reduce on the
 * basic elements gathered by hand from the known layout, scattered back into a recvbuf
 * image whose holes hold a pattern.  User ops (commutative sum, non-commutative affine
 * composition) on unsigned vector/indexed (lower bound 4)/resized types and on a struct
 * mixing unsigned and double, and on a struct with a hole longer than a page (dred copies
 * only the type's bytes there); the expected value is ref_reduce with the same type and op.
 * The whole recvbuf span is compared, so a byte written into a hole fails.  Also: IN_PLACE
 * at a non-zero root, members whose layouts differ but signatures agree (reduced), members
 * whose signatures differ (DRED_ERR_MISMATCH everywhere), and refused calls (SUM on a
 * mixed struct, MAXLOC on a hand-built pair struct, MPI_LAND on MPI_DOUBLE, MPI_REPLACE,
 * MPI_INTEGER16) made while a good reduction is in flight, which must still be right.
 */
#include <complex.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dred.h"
#include "mpitest.h"

#define WAIT_S 60.0

/* ---- the named types -------------------------------------------------------------- */

enum cls { C_INT, C_CFLT, C_FFLT, C_LOG, C_CPLX, C_BYTE, C_PAIR, C_NONE, C_NULL };
/* field kinds of an element, for filling and comparing */
enum fk { F_I1 = 1, F_I2 = 2, F_I4 = 4, F_I8 = 8, F_F, F_D, F_LD, F_BOOL };

struct ntype {
  const char *name;
  MPI_Datatype dt;
  enum cls cls;
  int is_signed;
  int nf;           /* fields per element */
  enum fk f[2];
  int off[2];
};

#define INT(t, c, s) {#t, t, C_INT, s, 1, {(enum fk)sizeof(c)}, {0}}
#define FLT(t, cls, k) {#t, t, cls, 1, 1, {k}, {0}}
#define CPX(t, k, sz) {#t, t, C_CPLX, 1, 2, {k, k}, {0, sz}}
#define PAIR(t, k, o) {#t, t, C_PAIR, 1, 2, {k, F_I4}, {0, o}}
static struct ntype ntypes[] = {
    INT(MPI_CHAR, char, CHAR_MIN < 0), INT(MPI_SIGNED_CHAR, signed char, 1),
    INT(MPI_UNSIGNED_CHAR, unsigned char, 0), INT(MPI_SHORT, short, 1),
    INT(MPI_UNSIGNED_SHORT, unsigned short, 0), INT(MPI_INT, int, 1),
    INT(MPI_UNSIGNED, unsigned, 0), INT(MPI_LONG, long, 1),
    INT(MPI_UNSIGNED_LONG, unsigned long, 0), INT(MPI_LONG_LONG, long long, 1),
    INT(MPI_UNSIGNED_LONG_LONG, unsigned long long, 0), INT(MPI_INT8_T, int8_t, 1),
    INT(MPI_INT16_T, int16_t, 1), INT(MPI_INT32_T, int32_t, 1), INT(MPI_INT64_T, int64_t, 1),
    INT(MPI_UINT8_T, uint8_t, 0), INT(MPI_UINT16_T, uint16_t, 0),
    INT(MPI_UINT32_T, uint32_t, 0), INT(MPI_UINT64_T, uint64_t, 0),
    INT(MPI_AINT, MPI_Aint, 1), INT(MPI_OFFSET, MPI_Offset, 1), INT(MPI_COUNT, MPI_Count, 1),
    INT(MPI_INTEGER, MPI_Fint, 1), INT(MPI_INTEGER1, int8_t, 1), INT(MPI_INTEGER2, int16_t, 1),
    INT(MPI_INTEGER4, int32_t, 1), INT(MPI_INTEGER8, int64_t, 1),
    INT(MPI_CHARACTER, char, CHAR_MIN < 0),
    FLT(MPI_FLOAT, C_CFLT, F_F), FLT(MPI_DOUBLE, C_CFLT, F_D),
    FLT(MPI_LONG_DOUBLE, C_CFLT, F_LD), FLT(MPI_REAL, C_FFLT, F_F),
    FLT(MPI_DOUBLE_PRECISION, C_FFLT, F_D), FLT(MPI_REAL4, C_FFLT, F_F),
    FLT(MPI_REAL8, C_FFLT, F_D), FLT(MPI_REAL16, C_FFLT, F_LD),
    {"MPI_LOGICAL", MPI_LOGICAL, C_LOG, 0, 1, {F_I4}, {0}},
    {"MPI_C_BOOL", MPI_C_BOOL, C_LOG, 0, 1, {F_BOOL}, {0}},
    {"MPI_CXX_BOOL", MPI_CXX_BOOL, C_LOG, 0, 1, {F_BOOL}, {0}},
    CPX(MPI_C_FLOAT_COMPLEX, F_F, 4), CPX(MPI_C_DOUBLE_COMPLEX, F_D, 8),
    CPX(MPI_C_LONG_DOUBLE_COMPLEX, F_LD, 16), CPX(MPI_COMPLEX, F_F, 4),
    CPX(MPI_DOUBLE_COMPLEX, F_D, 8), CPX(MPI_COMPLEX8, F_F, 4), CPX(MPI_COMPLEX16, F_D, 8),
    CPX(MPI_CXX_FLOAT_COMPLEX, F_F, 4), CPX(MPI_CXX_DOUBLE_COMPLEX, F_D, 8),
    CPX(MPI_CXX_LONG_DOUBLE_COMPLEX, F_LD, 16),
    {"MPI_BYTE", MPI_BYTE, C_BYTE, 0, 1, {F_I1}, {0}},
    PAIR(MPI_FLOAT_INT, F_F, 4), PAIR(MPI_DOUBLE_INT, F_D, 8), PAIR(MPI_LONG_INT, F_I8, 8),
    PAIR(MPI_2INT, F_I4, 4), PAIR(MPI_SHORT_INT, F_I2, 4), PAIR(MPI_LONG_DOUBLE_INT, F_LD, 16),
    {"MPI_2INTEGER", MPI_2INTEGER, C_PAIR, 1, 2, {F_I4, F_I4}, {0, 4}},
    {"MPI_2REAL", MPI_2REAL, C_PAIR, 1, 2, {F_F, F_F}, {0, 4}},
    {"MPI_2DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION, C_PAIR, 1, 2, {F_D, F_D}, {0, 8}},
    {"MPI_WCHAR", MPI_WCHAR, C_NONE, 0, 1, {F_I4}, {0}},
    {"MPI_PACKED", MPI_PACKED, C_NONE, 0, 1, {F_I1}, {0}},
    {"MPI_COMPLEX32", MPI_COMPLEX32, C_NONE, 0, 1, {F_I1}, {0}},
#ifdef MPIX_C_FLOAT16
    {"MPIX_C_FLOAT16", MPIX_C_FLOAT16, C_NONE, 0, 1, {F_I2}, {0}},
#endif
    {"MPI_INTEGER16", MPI_INTEGER16, C_NULL, 0, 1, {F_I1}, {0}},
    /* Fortran's parameterized types: predefined, but made at run time (f90_make) */
    {"f90_real(6)", MPI_DATATYPE_NULL, C_FFLT, 1, 1, {F_F}, {0}},
    {"f90_real(15)", MPI_DATATYPE_NULL, C_FFLT, 1, 1, {F_D}, {0}},
    {"f90_integer(4)", MPI_DATATYPE_NULL, C_INT, 1, 1, {F_I2}, {0}},
    {"f90_integer(18)", MPI_DATATYPE_NULL, C_INT, 1, 1, {F_I8}, {0}},
    {"f90_complex(15)", MPI_DATATYPE_NULL, C_CPLX, 1, 2, {F_D, F_D}, {0, 8}},
};
#define NNT ((int)(sizeof ntypes / sizeof ntypes[0]))

/* The parameterized entries' handles (MPI_Type_create_f90_*: the same (p, r) gives the
 * same handle, never freed). */
static void f90_make(void) {
  for (int t = 0; t < NNT; t++) {
    int p;
    if (sscanf(ntypes[t].name, "f90_real(%d)", &p) == 1)
      MPI_Type_create_f90_real(p, MPI_UNDEFINED, &ntypes[t].dt);
    else if (sscanf(ntypes[t].name, "f90_integer(%d)", &p) == 1)
      MPI_Type_create_f90_integer(p, &ntypes[t].dt);
    else if (sscanf(ntypes[t].name, "f90_complex(%d)", &p) == 1)
      MPI_Type_create_f90_complex(p, MPI_UNDEFINED, &ntypes[t].dt);
  }
}

enum { O_MAX, O_MIN, O_SUM, O_PROD, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MAXLOC,
       O_MINLOC, O_REPLACE, O_NO_OP, O_N };
static const char *opn[O_N] = {"max", "min", "sum", "prod", "land", "lor", "lxor",
                               "band", "bor", "bxor", "maxloc", "minloc", "replace", "no_op"};
static MPI_Op oph(int o) {
  static const MPI_Op h[O_N] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND,
                                MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR,
                                MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
  return h[o];
}

/* The test's table: does MPI reduce (op o, class c)? */
static int applies(int o, enum cls c) {
  switch (o) {
    case O_MAX: case O_MIN: return c == C_INT || c == C_CFLT || c == C_FFLT;
    case O_SUM: case O_PROD: return c == C_INT || c == C_CFLT || c == C_FFLT || c == C_CPLX;
    case O_LAND: case O_LOR: return c == C_INT || c == C_LOG;
    /* LAND/LOR/LXOR on Fortran reals: MPI_Reduce_local returns MPI_SUCCESS and leaves
     * inout unchanged in MPICH 4.0.2; MPI says they do not apply: refused */
    case O_LXOR: return c == C_INT || c == C_LOG || c == C_CFLT;
    case O_BAND: case O_BOR: case O_BXOR: return c == C_INT || c == C_BYTE;
    case O_MAXLOC: case O_MINLOC: return c == C_PAIR;
    default: return 0;
  }
}

static void put_field(unsigned char *p, enum fk k, double v, int64_t iv) {
  switch (k) {
    case F_I1: { int8_t x = (int8_t)iv; memcpy(p, &x, 1); break; }
    case F_I2: { int16_t x = (int16_t)iv; memcpy(p, &x, 2); break; }
    case F_I4: { int32_t x = (int32_t)iv; memcpy(p, &x, 4); break; }
    case F_I8: memcpy(p, &iv, 8); break;
    case F_F: { float x = (float)v; memcpy(p, &x, 4); break; }
    case F_D: memcpy(p, &v, 8); break;
    case F_LD: { long double x = v; memcpy(p, &x, sizeof x); break; }
    case F_BOOL: { bool x = iv != 0; memcpy(p, &x, 1); break; }
  }
}

/* element i of rank `rank` for op o: integer values, so any combine order is exact */
static void fill_elem(const struct ntype *t, int o, unsigned char *p, int rank, long i,
                      uint64_t h) {
  int64_t iv;
  double v;
  uint64_t a = h, b = mix64(h), c = mix64(b);
  if (t->cls == C_PAIR) {
    int vv = (int)(h % 6), ix = (int)((h >> 16) % 5); /* ties in value and index */
    put_field(p + t->off[0], t->f[0], vv, vv);
    put_field(p + t->off[1], t->f[1], ix, ix);
    return;
  }
  if (t->cls == C_CPLX) {
    double re, im;
    if (o == O_SUM) {
      re = (double)((int64_t)(h % 2001) - 1000);
      im = (double)((int64_t)((h >> 20) % 2001) - 1000);
    } else { /* 1, i, -1, -i, and a few 2s */
      static const double u[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
      int k = (int)(h % 4);
      re = u[k][0];
      im = u[k][1];
      if ((rank + i) % 5 == 0) re = 2, im = 0;
    }
    put_field(p + t->off[0], t->f[0], re, 0);
    put_field(p + t->off[1], t->f[1], im, 0);
    return;
  }
  switch (o) {
    case O_SUM:
      iv = t->is_signed ? (int64_t)(h % 21) - 10 : (int64_t)(h % 21);
      break;
    case O_PROD:
      iv = (rank + i) % 5 == 0 ? 2 : (t->is_signed && (h & 1)) ? -1 : 1;
      break;
    case O_MAX: case O_MIN:
      iv = t->cls == C_INT ? (int64_t)h : (int64_t)(h % 2000001) - 1000000;
      break;
    case O_LAND: iv = (h % 8 == 0) ? 0 : 1 + (int64_t)((h >> 8) % 2); break;
    case O_LOR: iv = (h % 8 == 0) ? 1 + (int64_t)((h >> 8) % 2) : 0; break;
    case O_LXOR: iv = (int64_t)(h % 3); break;
    case O_BAND: iv = (int64_t)(a | b | c); break;
    case O_BOR: iv = (int64_t)(a & b & c); break;
    default: iv = (int64_t)a; break;
  }
  if (t->cls == C_LOG) iv = iv != 0; /* valid logicals: 0 and 1 */
  v = (double)iv;
  put_field(p, t->f[0], v, iv);
}

static int field_eq(const unsigned char *a, const unsigned char *b, enum fk k) {
  switch (k) {
    case F_F: { float x, y; memcpy(&x, a, 4); memcpy(&y, b, 4); return x == y; }
    case F_D: { double x, y; memcpy(&x, a, 8); memcpy(&y, b, 8); return x == y; }
    case F_LD: { long double x, y; memcpy(&x, a, sizeof x); memcpy(&y, b, sizeof y); return x == y; }
    case F_BOOL: return a[0] == b[0];
    default: return memcmp(a, b, (size_t)k) == 0;
  }
}

static long first_diff(const struct ntype *t, const unsigned char *g, const unsigned char *e,
                       long n, MPI_Aint ext) {
  for (long i = 0; i < n; i++)
    for (int f = 0; f < t->nf; f++)
      if (!field_eq(g + i * ext + t->off[f], e + i * ext + t->off[f], t->f[f])) return i;
  return -1;
}

struct pend {
  dred_future *f;
  int o, st;
  long n;
  int root;
  unsigned char *sbuf, *rd;
};

static void named_part(uint64_t seed, const long *counts, int ncounts, int *nchecks) {
  uint64_t rng = seed * 31 + 7;
  for (int t = 0; t < NNT; t++) {
    struct ntype *ty = &ntypes[t];
    MPI_Aint lb = 0, ext = 1;
    struct pend p[O_N * 4];
    int np = 0;
    if (ty->dt != MPI_DATATYPE_NULL) MPI_Type_get_extent(ty->dt, &lb, &ext);
    /* start every reduction of this type, then wait for them */
    for (int o = 0; o < O_N; o++) {
      int ok = ty->cls != C_NULL && ty->cls != C_NONE && applies(o, ty->cls);
      for (int c = 0; c < ncounts; c++) {
        long n = counts[c];
        size_t bytes = (size_t)n * (size_t)ext;
        struct pend *q = &p[np];
        char check[160];
        rng = mix64(rng);
        q->o = o;
        q->n = n;
        q->root = (int)(rng % (uint64_t)g_size);
        q->sbuf = calloc(1, bytes ? bytes : 1);
        q->rd = calloc(1, bytes ? bytes : 1);
        if (!q->sbuf || !q->rd) MPI_Abort(MPI_COMM_WORLD, 2);
        uint64_t ds = mix64(seed ^ ((uint64_t)t << 24) ^ ((uint64_t)o << 16) ^ (uint64_t)n);
        for (long i = 0; ok && i < n; i++)
          fill_elem(ty, o, q->sbuf + i * ext, g_rank,
                    i, mix64(ds ^ mix64(((uint64_t)g_rank << 40) ^ (uint64_t)i)));
        memset(q->rd, 0xA5, bytes);
        snprintf(check, sizeof check, "types/%s/%s/n=%ld", opn[o], ty->name, n);
        set_step("dred_ireduce %s", check);
        q->f = NULL;
        q->st = dred_ireduce(q->sbuf, q->rd, (int)n, ty->dt, oph(o), q->root, g_comm,
                             DRED_TAG_AUTO, &q->f);
        if (!ok) {
          if (q->st != DRED_ERR_ARG)
            fail("%s: a pair MPI does not reduce returned %d (%s), expected DRED_ERR_ARG", check,
                 q->st, dred_strerror(q->st));
          else if (g_rank == 0 && c == 0)
            pass("%s: refused with DRED_ERR_ARG", check);
          if (q->f) { wait_bounded(q->f, WAIT_S, check); dred_future_free(q->f); }
          free(q->sbuf);
          free(q->rd);
          (*nchecks)++;
          continue;
        }
        if (q->st != DRED_OK) fail("%s: dred_ireduce returned %d (%s)", check, q->st, dred_strerror(q->st));
        np++;
      }
    }
    for (int k = 0; k < np; k++) {
      struct pend *q = &p[k];
      char check[160];
      size_t bytes = (size_t)q->n * (size_t)ext;
      snprintf(check, sizeof check, "types/%s/%s/n=%ld/root=%d", opn[q->o], ty->name, q->n,
               q->root);
      if (q->st == DRED_OK) {
        set_step("wait %s", check);
        q->st = wait_bounded(q->f, WAIT_S, check);
        dred_future_free(q->f);
      }
      unsigned char *rm = malloc(bytes ? bytes : 1);
      memset(rm, 0x5A, bytes);
      set_step("ref_reduce %s", check);
      int mrc = ref_reduce(q->sbuf, rm, (int)q->n, ty->dt, oph(q->o), q->root, g_comm);
      if (mrc != MPI_SUCCESS) {
        fail("%s: ref_reduce (MPI_Reduce_local) refused a pair the table accepts: %d", check, mrc);
      } else if (q->st != DRED_OK) {
        fail("%s: dred returned %d (%s)", check, q->st, dred_strerror(q->st));
      } else if (g_rank == q->root) {
        long bad = ty->dt == MPI_REAL16 && g_size > 1 ? -1 : first_diff(ty, q->rd, rm, q->n, ext);
        if (bad >= 0)
          fail("%s: element %ld differs from the reference", check, bad);
        else
          pass("%s%s", check,
               ty->dt == MPI_REAL16 && g_size > 1 ? ": accepted (values not compared: this "
                                                    "MPICH's REAL16 arithmetic is wrong)" : "");
      }
      (*nchecks)++;
      free(rm);
      free(q->sbuf);
      free(q->rd);
    }
  }
}

/* ---- derived types --------------------------------------------------------------- */

/* A derived type and where its basic elements lie in one element (typemap order). */
struct dtype {
  const char *name;
  MPI_Datatype dt;
  MPI_Datatype base;   /* the basic type (predefined-op types) */
  int bsize;           /* bytes of a basic element's data (12 for MPI_DOUBLE_INT) */
  MPI_Aint bext;       /* extent of the basic type */
  int nb;              /* basic elements per element */
  MPI_Aint off[16];
  MPI_Aint lb, ext;    /* MPI_Type_get_extent */
  MPI_Aint span0;      /* lowest byte any element touches: lb adjusted buffers start there */
  MPI_Aint tend;       /* true lb + true extent: end of element 0's data */
};

/* bytes from span0 that n elements cover (interleaved elements reach past n * extent) */
static size_t dspan(const struct dtype *d, long n) {
  MPI_Aint a = (MPI_Aint)n * d->ext, b = (MPI_Aint)(n - 1) * d->ext + d->tend;
  return (size_t)((a > b ? a : b) - d->span0);
}

static void describe(struct dtype *d) {
  MPI_Aint tlb, text;
  MPI_Type_commit(&d->dt);
  MPI_Type_get_extent(d->dt, &d->lb, &d->ext);
  MPI_Type_get_true_extent(d->dt, &tlb, &text);
  d->span0 = tlb < d->lb ? tlb : d->lb;
  d->tend = tlb + text;
}

/* an allocation covering n elements: returns the pointer MPI calls get (buf origin) */
static unsigned char *dalloc(const struct dtype *d, long n, unsigned char **block,
                             size_t *len) {
  *len = dspan(d, n > 0 ? n : 1) + 64;
  *block = malloc(*len);
  if (*block == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  return *block + 32 - d->span0; /* 32 bytes of room on both sides */
}

/* gather element i's basic elements of `buf` into an array of base elements */
static void gather(const struct dtype *d, const unsigned char *buf, long n, unsigned char *arr) {
  for (long i = 0; i < n; i++)
    for (int j = 0; j < d->nb; j++)
      memcpy(arr + ((size_t)i * (size_t)d->nb + (size_t)j) * (size_t)d->bext,
             buf + i * d->ext + d->off[j], (size_t)d->bsize);
}
static void scatter(const struct dtype *d, const unsigned char *arr, long n, unsigned char *buf) {
  for (long i = 0; i < n; i++)
    for (int j = 0; j < d->nb; j++)
      memcpy(buf + i * d->ext + d->off[j],
             arr + ((size_t)i * (size_t)d->nb + (size_t)j) * (size_t)d->bext, (size_t)d->bsize);
}

static MPI_Datatype g_mixed;
static MPI_Aint g_mixed_double_off = -1;
/* fill the data positions of n elements (holes untouched) with values for op o */
static void dfill(const struct dtype *d, int o, unsigned char *buf, long n, uint64_t seed) {
  for (long i = 0; i < n; i++)
    for (int j = 0; j < d->nb; j++) {
      uint64_t h = mix64(seed ^ mix64(((uint64_t)g_rank << 40) ^ (uint64_t)(i * d->nb + j)));
      unsigned char *p = buf + i * d->ext + d->off[j];
      if (d->base == MPI_DOUBLE) {
        double v = o == O_SUM ? (double)((int64_t)(h % 2001) - 1000) : (double)(int64_t)(h % 100001);
        memcpy(p, &v, 8);
      } else if (d->base == MPI_FLOAT) {
        float v = (float)((int64_t)(h % 2001) - 1000);
        memcpy(p, &v, 4);
      } else if (d->base == MPI_DOUBLE_INT) {
        double v = (double)(h % 6);
        int ix = (int)((h >> 16) % 5);
        memcpy(p, &v, 8);
        memcpy(p + 8, &ix, 4);
      } else { /* MPI_INT / MPI_UNSIGNED (user ops: any values) */
        int v = o == O_SUM ? (int)(h % 2001) - 1000 : (int)(uint32_t)h;
        memcpy(p, &v, 4);
      }
      if (d->dt == g_mixed && j == 0) { /* the struct's double: an integer value */
        double v = (double)(h % 1000);
        memcpy(buf + i * d->ext + g_mixed_double_off, &v, 8);
      }
    }
}

/* user ops over the unsigned-based test types: the layout comes from this table */
static struct dtype *g_utypes[8];
static int g_nut;
static const struct dtype *ulayout(MPI_Datatype dt) {
  for (int k = 0; k < g_nut; k++)
    if (g_utypes[k]->dt == dt) return g_utypes[k];
  return NULL;
}
/* each unsigned element summed; the double field of the mixed struct summed too */
static void dbl_sum(const unsigned char *in, unsigned char *io, MPI_Datatype dt) {
  double x, y;
  if (dt != g_mixed) return;
  memcpy(&x, in + g_mixed_double_off, 8);
  memcpy(&y, io + g_mixed_double_off, 8);
  y += x;
  memcpy(io + g_mixed_double_off, &y, 8);
}
static void usum(void *in, void *inout, int *len, MPI_Datatype *dt) {
  const struct dtype *d = ulayout(*dt);
  if (d == NULL) { fprintf(stderr, "usum: unknown datatype\n"); abort(); }
  for (int i = 0; i < *len; i++) {
    const unsigned char *a = (const unsigned char *)in + i * d->ext;
    unsigned char *b = (unsigned char *)inout + i * d->ext;
    for (int j = 0; j < d->nb; j++) {
      unsigned x, y;
      memcpy(&x, a + d->off[j], 4);
      memcpy(&y, b + d->off[j], 4);
      y += x;
      memcpy(b + d->off[j], &y, 4);
    }
    dbl_sum(a, b, *dt);
  }
}
/* consecutive unsigned pairs are affine maps (mpitest.h's affine_op): non-commutative */
static void uaffine(void *in, void *inout, int *len, MPI_Datatype *dt) {
  const struct dtype *d = ulayout(*dt);
  if (d == NULL) { fprintf(stderr, "uaffine: unknown datatype\n"); abort(); }
  for (int i = 0; i < *len; i++) {
    const unsigned char *a = (const unsigned char *)in + i * d->ext;
    unsigned char *b = (unsigned char *)inout + i * d->ext;
    for (int j = 0; j + 1 < d->nb; j += 2) {
      struct affine f, g;
      int one = 1;
      memcpy(&f.a, a + d->off[j], 4); memcpy(&f.b, a + d->off[j + 1], 4);
      memcpy(&g.a, b + d->off[j], 4); memcpy(&g.b, b + d->off[j + 1], 4);
      affine_op(&f, &g, &one, NULL);
      memcpy(b + d->off[j], &g.a, 4); memcpy(b + d->off[j + 1], &g.b, 4);
    }
    dbl_sum(a, b, *dt);
  }
}

static int dcheck(const char *check, const struct dtype *d, long n, const unsigned char *got,
                  const unsigned char *exp) {
  size_t span = dspan(d, n);
  const unsigned char *g = got + d->span0, *e = exp + d->span0;
  for (size_t k = 0; k < span; k++)
    if (g[k] != e[k]) {
      MPI_Aint x = (MPI_Aint)k + d->span0, in_elem = ((x % d->ext) + d->ext) % d->ext;
      int hole = d->tend - d->span0 <= d->ext; /* interleaved: not worked out here */
      for (int j = 0; j < d->nb; j++)
        if (in_elem >= d->off[j] && in_elem < d->off[j] + d->bsize) hole = 0;
      fail("%s: byte %zu of recvbuf differs (%s): dred %02x, expected %02x", check, k,
           hole ? "a hole of the datatype: MPI leaves it untouched" : "data", g[k], e[k]);
      return 0;
    }
  return 1;
}

/* one reduction of a derived type: dred vs the reference; in_place at the root */
static void dcase(struct dtype *d, int o, MPI_Op op, int user, long n, int root, int in_place,
                  uint64_t seed, int *nchecks) {
  unsigned char *sb, *rd, *rm, *bs, *br, *bm;
  size_t ls, lr, lm;
  char check[200];
  int st;
  sb = dalloc(d, n, &bs, &ls);
  rd = dalloc(d, n, &br, &lr);
  rm = dalloc(d, n, &bm, &lm);
  memset(bs, 0x11, ls);
  memset(br, 0xA5, lr);
  memset(bm, 0xA5, lm);
  dfill(d, o, sb, n, seed);
  snprintf(check, sizeof check, "types/derived/%s/%s/n=%ld/root=%d%s", d->name,
           user ? (o == O_SUM ? "user_sum" : "user_affine") : opn[o], n, root,
           in_place ? "/in_place" : "");
  if (in_place && g_rank == root) { /* the root's operand sits in recvbuf, holes intact */
    for (long i = 0; i < n; i++)
      for (int j = 0; j < d->nb; j++)
        memcpy(rd + i * d->ext + d->off[j], sb + i * d->ext + d->off[j], (size_t)d->bsize);
  }
  set_step("dred_reduce %s", check);
  st = dred_reduce(in_place && g_rank == root ? MPI_IN_PLACE : sb, rd, (int)n, d->dt, op, root,
                   g_comm);
  set_step("ref_reduce %s", check);
  if (user) {
    ref_reduce(sb, rm, (int)n, d->dt, op, root, g_comm);
  } else { /* MPI reduces a predefined op element by element of the basic type */
    size_t ab = (size_t)n * (size_t)d->nb * (size_t)d->bext;
    unsigned char *as = calloc(1, ab ? ab : 1), *ar = calloc(1, ab ? ab : 1);
    gather(d, sb, n, as);
    ref_reduce(as, ar, (int)(n * d->nb), d->base, op, root, g_comm);
    if (g_rank == root) scatter(d, ar, n, rm);
    free(as);
    free(ar);
  }
  if (st != DRED_OK)
    fail("%s: dred_reduce returned %d (%s)", check, st, dred_strerror(st));
  else if (g_rank == root && dcheck(check, d, n, rd, rm))
    pass("%s", check);
  (*nchecks)++;
  free(bs);
  free(br);
  free(bm);
}

static void derived_part(uint64_t seed, int *nchecks) {
  /* predefined-op types */
  struct dtype vec = {"vector3x2s4_double", 0, MPI_DOUBLE, 8, 8, 6, {0, 8, 32, 40, 64, 72}, 0, 0, 0, 0};
  MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &vec.dt);
  describe(&vec);
  struct dtype idx = {"indexed_int", 0, MPI_INT, 4, 4, 6, {0, 8, 12, 16, 28, 32}, 0, 0, 0, 0};
  MPI_Type_indexed(3, (int[]){1, 3, 2}, (int[]){0, 2, 7}, MPI_INT, &idx.dt);
  describe(&idx);
  struct dtype st = {"struct_float", 0, MPI_FLOAT, 4, 4, 3, {0, 4, 16}, 0, 0, 0, 0};
  MPI_Type_create_struct(2, (int[]){2, 1}, (MPI_Aint[]){0, 16}, (MPI_Datatype[]){MPI_FLOAT, MPI_FLOAT},
                         &st.dt);
  describe(&st);
  struct dtype rsz = {"resized_int_4_8", 0, MPI_INT, 4, 4, 1, {0}, 0, 0, 0, 0};
  MPI_Type_create_resized(MPI_INT, 0, 8, &rsz.dt);
  describe(&rsz);
  struct dtype rlb = {"resized_double_lb-8_ext24", 0, MPI_DOUBLE, 8, 8, 1, {0}, 0, 0, 0, 0};
  MPI_Type_create_resized(MPI_DOUBLE, -8, 24, &rlb.dt);
  describe(&rlb);
  /* a column of a 4x4 matrix resized to one double: element i is column i, so the
   * elements interleave (true extent 104 > extent 8); 4 of them are the whole matrix */
  struct dtype col = {"column4x4_resized_double", 0, MPI_DOUBLE, 8, 8, 4, {0, 32, 64, 96}, 0, 0, 0, 0};
  {
    MPI_Datatype c;
    MPI_Type_vector(4, 1, 4, MPI_DOUBLE, &c);
    MPI_Type_create_resized(c, 0, 8, &col.dt);
    MPI_Type_free(&c);
  }
  describe(&col);
  /* the same vector of Fortran's real(15): its basic element is a parameterized type */
  struct dtype vf90 = {"vector3x2s4_f90_real15", 0, MPI_DOUBLE, 8, 8, 6, {0, 8, 32, 40, 64, 72}, 0, 0, 0, 0};
  {
    MPI_Datatype r15;
    MPI_Type_create_f90_real(15, MPI_UNDEFINED, &r15);
    MPI_Type_vector(3, 2, 4, r15, &vf90.dt);
  }
  describe(&vf90);
  struct dtype vdi = {"vector_double_int", 0, MPI_DOUBLE_INT, 12, 16, 2, {0, 48}, 0, 0, 0, 0};
  MPI_Type_vector(2, 1, 3, MPI_DOUBLE_INT, &vdi.dt);
  describe(&vdi);
  /* user-op types, over MPI_UNSIGNED (consecutive pairs are affine maps) */
  struct dtype uvec = {"u_vector3x2s4", 0, MPI_UNSIGNED, 4, 4, 6, {0, 4, 16, 20, 32, 36}, 0, 0, 0, 0};
  MPI_Type_vector(3, 2, 4, MPI_UNSIGNED, &uvec.dt);
  describe(&uvec);
  struct dtype uidx = {"u_indexed_lb4", 0, MPI_UNSIGNED, 4, 4, 6, {4, 8, 20, 24, 28, 32}, 0, 0, 0, 0};
  MPI_Type_indexed(2, (int[]){2, 4}, (int[]){1, 5}, MPI_UNSIGNED, &uidx.dt);
  describe(&uidx);
  struct dtype ursz = {"u_resized_8_16", 0, MPI_UNSIGNED, 4, 4, 2, {0, 4}, 0, 0, 0, 0};
  {
    MPI_Datatype c2;
    MPI_Type_contiguous(2, MPI_UNSIGNED, &c2);
    MPI_Type_create_resized(c2, 0, 16, &ursz.dt);
    MPI_Type_free(&c2);
  }
  describe(&ursz);
  struct dtype umix = {"u_struct_mixed", 0, MPI_UNSIGNED, 4, 4, 2, {0, 4}, 0, 0, 0, 0};
  MPI_Type_create_struct(2, (int[]){2, 1}, (MPI_Aint[]){0, 8},
                         (MPI_Datatype[]){MPI_UNSIGNED, MPI_DOUBLE}, &umix.dt);
  describe(&umix);
  g_mixed = umix.dt;
  g_mixed_double_off = 8;
  /* a hole longer than a page: dred's image is then built from the type's bytes alone
   * (lib/mpi/buffer.c), since such a hole may span memory nobody mapped */
  struct dtype uhole = {"u_struct_hole8k", 0, MPI_UNSIGNED, 4, 4, 4, {0, 4, 8192, 8196}, 0, 0, 0, 0};
  MPI_Type_create_struct(2, (int[]){2, 2}, (MPI_Aint[]){0, 8192},
                         (MPI_Datatype[]){MPI_UNSIGNED, MPI_UNSIGNED}, &uhole.dt);
  describe(&uhole);
  g_utypes[0] = &uvec; g_utypes[1] = &uidx; g_utypes[2] = &ursz; g_utypes[3] = &umix;
  g_utypes[4] = &uhole;
  g_nut = 5;

  if (vec.ext != 80 || idx.ext != 36 || st.ext != 20 || rsz.ext != 8 || rlb.lb != -8 ||
      uidx.lb != 4 || ursz.ext != 16 || umix.ext != 16) {
    fail("types/derived/setup: unexpected extents (vec %ld idx %ld struct %ld rsz %ld rlb.lb %ld "
         "uidx.lb %ld ursz %ld umix %ld)", (long)vec.ext, (long)idx.ext, (long)st.ext,
         (long)rsz.ext, (long)rlb.lb, (long)uidx.lb, (long)ursz.ext, (long)umix.ext);
    return;
  }
  MPI_Op op_sum, op_aff;
  MPI_Op_create(usum, 1, &op_sum);
  MPI_Op_create(uaffine, 0, &op_aff);

  uint64_t rng = seed * 13 + 5;
  static const long ns[2] = {1, 700};
  struct dtype *pre[] = {&vec, &idx, &st, &rsz, &rlb, &vf90};
  for (unsigned k = 0; k < sizeof pre / sizeof pre[0]; k++)
    for (int c = 0; c < 2; c++)
      for (int o = 0; o < 2; o++) {
        int op = o == 0 ? O_SUM : O_MAX;
        rng = mix64(rng);
        dcase(pre[k], op, oph(op), 0, ns[c], (int)(rng % (uint64_t)g_size), 0, rng, nchecks);
      }
  for (int o = 0; o < 2; o++) { /* 4 columns: the whole matrix, no element overlaps */
    rng = mix64(rng);
    dcase(&col, o ? O_MAX : O_SUM, o ? MPI_MAX : MPI_SUM, 0, 4, (int)(rng % (uint64_t)g_size), 0,
          rng, nchecks);
  }
  for (int c = 0; c < 2; c++) {
    rng = mix64(rng);
    dcase(&vdi, O_MAXLOC, MPI_MAXLOC, 0, ns[c], (int)(rng % (uint64_t)g_size), 0, rng, nchecks);
  }
  struct dtype *usr[] = {&uvec, &uidx, &ursz, &umix, &uhole};
  for (unsigned k = 0; k < sizeof usr / sizeof usr[0]; k++)
    for (int c = 0; c < 2; c++) {
      rng = mix64(rng);
      dcase(usr[k], O_SUM, op_sum, 1, ns[c], (int)(rng % (uint64_t)g_size), 0, rng, nchecks);
      rng = mix64(rng);
      dcase(usr[k], O_PROD, op_aff, 1, ns[c], (int)(rng % (uint64_t)g_size), 0, rng, nchecks);
    }
  /* MPI_IN_PLACE at the last (non-zero when P > 1) root */
  dcase(&vec, O_SUM, MPI_SUM, 0, 333, g_size - 1, 1, seed + 1, nchecks);
  dcase(&vdi, O_MAXLOC, MPI_MAXLOC, 0, 50, g_size - 1, 1, seed + 2, nchecks);
  dcase(&uidx, O_PROD, op_aff, 1, 333, g_size - 1, 1, seed + 3, nchecks);
  /* results of 5-14 MB in dred's layout: a root reached through dred-master puts them into
   * recvbuf a part (4 MiB) per turn of its loop (lib/paths/distribute.c) -- packed, padded
   * and byte-image layouts, and a non-commutative user op */
  dcase(&rsz, O_SUM, MPI_SUM, 0, 1200000, 0, 0, seed + 4, nchecks);
  dcase(&rlb, O_MAX, MPI_MAX, 0, 600000, g_size - 1, 0, seed + 5, nchecks);
  dcase(&vdi, O_MAXLOC, MPI_MAXLOC, 0, 200000, g_size > 1 ? 1 : 0, 0, seed + 6, nchecks);
  dcase(&uidx, O_PROD, op_aff, 1, 250000, g_size - 1, 0, seed + 7, nchecks);

  /* different layouts, one signature: a vector of 2 doubles on member 0, contiguous
   * doubles elsewhere -- the same type signature, so MPI reduces them */
  {
    MPI_Datatype v2, c2;
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &v2);
    MPI_Type_contiguous(2, MPI_DOUBLE, &c2);
    MPI_Type_commit(&v2);
    MPI_Type_commit(&c2);
    double sb[3 * 40], rd[3 * 40], exp[2 * 40], mine[2 * 40];
    int n = 40, root = g_size > 1 ? 1 : 0, stt;
    for (int i = 0; i < 3 * n; i++) sb[i] = (double)((g_rank * 7 + i * 3) % 101);
    for (int i = 0; i < 3 * n; i++) rd[i] = -1.0;
    MPI_Datatype my = g_rank == 0 ? v2 : c2;
    /* my operand as a plain array, for the reference */
    for (int i = 0; i < n; i++) {
      mine[2 * i] = g_rank == 0 ? sb[3 * i] : sb[2 * i];
      mine[2 * i + 1] = g_rank == 0 ? sb[3 * i + 2] : sb[2 * i + 1];
    }
    set_step("dred_reduce types/derived/same_signature");
    stt = dred_reduce(sb, rd, n, my, MPI_SUM, root, g_comm);
    ref_reduce(mine, exp, 2 * n, MPI_DOUBLE, MPI_SUM, root, g_comm);
    if (stt != DRED_OK) {
      fail("types/derived/same_signature: dred_reduce returned %d (%s)", stt, dred_strerror(stt));
    } else if (g_rank == root) {
      int bad = 0;
      for (int i = 0; i < n && !bad; i++) /* the root's own layout (contiguous unless P = 1) */
        bad = root == 0 ? rd[3 * i] != exp[2 * i] || rd[3 * i + 2] != exp[2 * i + 1] ||
                              rd[3 * i + 1] != -1.0
                        : rd[2 * i] != exp[2 * i] || rd[2 * i + 1] != exp[2 * i + 1];
      if (bad) fail("types/derived/same_signature: result differs from the reference");
      else pass("types/derived/same_signature: vector and contiguous layouts reduced together");
    }
    (*nchecks)++;
    /* different signatures: 2 doubles against 4 floats (16 bytes each), and MPI_INT
     * against MPI_FLOAT: every member must get DRED_ERR_MISMATCH */
    if (g_size > 1) {
      MPI_Datatype c4f;
      MPI_Type_contiguous(4, MPI_FLOAT, &c4f);
      MPI_Type_commit(&c4f);
      set_step("dred_reduce types/derived/signature_mismatch");
      stt = dred_reduce(sb, rd, 3, g_rank == 0 ? v2 : c4f, MPI_SUM, 0, g_comm);
      if (stt != DRED_ERR_MISMATCH)
        fail("types/derived/signature_mismatch (2 doubles vs 4 floats): returned %d (%s), "
             "expected DRED_ERR_MISMATCH", stt, dred_strerror(stt));
      else if (g_rank == 0)
        pass("types/derived/signature_mismatch: 2 doubles vs 4 floats -> DRED_ERR_MISMATCH");
      stt = dred_reduce(sb, rd, 5, g_rank == 0 ? MPI_INT : MPI_FLOAT, MPI_SUM, 0, g_comm);
      if (stt != DRED_ERR_MISMATCH)
        fail("types/named/signature_mismatch (MPI_INT vs MPI_FLOAT): returned %d (%s), "
             "expected DRED_ERR_MISMATCH", stt, dred_strerror(stt));
      else if (g_rank == 0)
        pass("types/named/signature_mismatch: MPI_INT vs MPI_FLOAT -> DRED_ERR_MISMATCH");
      *nchecks += 2;
      MPI_Type_free(&c4f);
    }
    MPI_Type_free(&v2);
    MPI_Type_free(&c2);
  }

  /* refused calls while a good reduction is in flight */
  {
    long n = 500;
    unsigned char *bs, *br, *bm;
    size_t ls, lr, lm;
    unsigned char *sb = dalloc(&vec, n, &bs, &ls), *rd = dalloc(&vec, n, &br, &lr);
    unsigned char *rm = dalloc(&vec, n, &bm, &lm);
    MPI_Datatype pairst;
    dred_future *f = NULL, *f2 = NULL;
    double dd[4] = {1, 2, 3, 4}, dr[4];
    int root = g_size - 1, bad = 0, stt, rc;
    memset(bs, 0, ls);
    memset(br, 0xA5, lr);
    memset(bm, 0xA5, lm);
    dfill(&vec, O_SUM, sb, n, seed + 9);
    MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 8},
                           (MPI_Datatype[]){MPI_DOUBLE, MPI_INT}, &pairst);
    MPI_Type_commit(&pairst);
    set_step("types/derived/refusals: good reduction in flight");
    stt = dred_ireduce(sb, rd, (int)n, vec.dt, MPI_SUM, root, g_comm, 77, &f);
    if (stt != DRED_OK) fail("types/derived/refusals: good dred_ireduce returned %d", stt);
    struct { const char *what; int rc; } r[] = {
        {"MPI_SUM on a struct of MPI_UNSIGNED and MPI_DOUBLE",
         dred_ireduce(sb, rd, 2, umix.dt, MPI_SUM, root, g_comm, 78, &f2)},
        {"MPI_MAXLOC on a hand-built {double, int} struct",
         dred_ireduce(sb, rd, 2, pairst, MPI_MAXLOC, root, g_comm, 79, &f2)},
        {"MPI_LAND on MPI_DOUBLE", dred_ireduce(dd, dr, 4, MPI_DOUBLE, MPI_LAND, root, g_comm, 80, &f2)},
        {"MPI_REPLACE on MPI_INT", dred_ireduce(dd, dr, 4, MPI_INT, MPI_REPLACE, root, g_comm, 81, &f2)},
        {"MPI_SUM on MPI_INTEGER16 (MPI_DATATYPE_NULL here)",
         dred_ireduce(dd, dr, 1, MPI_INTEGER16, MPI_SUM, root, g_comm, 82, &f2)},
        {"MPI_BXOR on a vector of doubles",
         dred_ireduce(sb, rd, 1, vec.dt, MPI_BXOR, root, g_comm, 83, &f2)},
    };
    for (unsigned k = 0; k < sizeof r / sizeof r[0]; k++) {
      if (r[k].rc != DRED_ERR_ARG) {
        fail("types/derived/refusals: %s returned %d (%s), expected DRED_ERR_ARG", r[k].what,
             r[k].rc, dred_strerror(r[k].rc));
        bad = 1;
      } else if (g_rank == 0) {
        pass("types/derived/refusals: %s -> DRED_ERR_ARG", r[k].what);
      }
      (*nchecks)++;
    }
    rc = f ? wait_bounded(f, WAIT_S, "types/derived/refusals: good reduction") : -1;
    if (f) dred_future_free(f);
    {
      size_t ab = (size_t)n * 6 * 8;
      unsigned char *as = calloc(1, ab), *ar = calloc(1, ab);
      gather(&vec, sb, n, as);
      ref_reduce(as, ar, (int)(n * 6), MPI_DOUBLE, MPI_SUM, root, g_comm);
      if (g_rank == root) scatter(&vec, ar, n, rm);
      free(as);
      free(ar);
    }
    if (rc != DRED_OK)
      fail("types/derived/refusals: the good reduction returned %d (%s)", rc, dred_strerror(rc));
    else if (g_rank == root && dcheck("types/derived/refusals: good reduction", &vec, n, rd, rm) &&
             !bad)
      pass("types/derived/refusals: the concurrent good reduction is right");
    (*nchecks)++;
    MPI_Type_free(&pairst);
    free(bs);
    free(br);
    free(bm);
  }

  MPI_Op_free(&op_sum);
  MPI_Op_free(&op_aff);
  struct dtype *all[] = {&vec, &idx, &st, &rsz, &rlb, &vf90, &col, &vdi, &uvec, &uidx, &ursz,
                         &umix, &uhole};
  for (unsigned k = 0; k < sizeof all / sizeof all[0]; k++) MPI_Type_free(&all[k]->dt);
}

int main(int argc, char **argv) {
  uint64_t seed = 4242;
  char counts_arg[128] = "1,1000";
  int named = 1, derived = 1, nchecks = 0;
  long counts[8];
  int ncounts = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "-c") && i + 1 < argc) snprintf(counts_arg, sizeof counts_arg, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--named-only")) derived = 0;
    else if (!strcmp(argv[i], "--derived-only")) named = 0;
  }
  for (char *tok = strtok(counts_arg, ","); tok && ncounts < 4; tok = strtok(NULL, ","))
    counts[ncounts++] = strtol(tok, NULL, 0);

  test_init(&argc, &argv, "types");
  f90_make();
  double t0 = now_s();
  if (named) named_part(seed, counts, ncounts, &nchecks);
  double t1 = now_s();
  if (derived) derived_part(seed, &nchecks);
  if (g_rank == 0)
    printf("types: %d checks; named part %.1f s, derived part %.1f s\n", nchecks, t1 - t0,
           now_s() - t1);
  return test_finish();
}
