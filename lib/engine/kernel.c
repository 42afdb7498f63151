/*
 * kernel.c -- the combine loops behind dred_kernel_find(): vectorised, and storing
 * bit-for-bit what MPICH's MPI_Reduce_local stores.
 *
 * Why: a worker combines every byte of every task it executes, and MPI_Reduce_local is
 * slow at it: MPICH 4.0.2 as Debian ships it runs one scalar addsd per element for
 * MPI_SUM on doubles (a dispatch per call, then a loop built at -O2 for the x86-64
 * baseline).  These loops are built here at -O3 for the CPU at hand, and can be called on
 * any sub-range of a buffer (a chunk as it lands).  `make kernel-bench` measures both.
 *
 * How: KERNEL() writes the pair of functions of one (op, C type) -- a plain loop over
 * restrict-qualified pointers -- and a table maps (op, representation) to the pair.  The
 * pragma below compiles the file at -O3 whatever OPT is (GCC 12's -O2 vectoriser gives up
 * on loops that need an epilogue), and on x86-64 each function is cloned for AVX2
 * (target_clones: an ifunc picks the clone once, at load time).  Checked with
 *   mpicc -std=gnu11 -O2 -Iinclude -fopt-info-vec-optimized -c lib/engine/kernel.c -o /dev/null
 * (and objdump): all 96 AVX2 clones report "loop vectorized using 32 byte vectors"; of the
 * 96 baseline (SSE2) ones, 84 use 16-byte vectors and 12 stay scalar -- 64-bit PROD,
 * LAND/LOR/LXOR and signed MAX/MIN, which need instructions SSE2 lacks.  Under the
 * sanitizers nothing is vectorised (ASan instruments every access); that build is for UB.
 *
 * Exactness: the element expression is MPICH's.  Its op functions (src/mpi/coll/op/op*.c,
 * MPIR_OP_TYPE_REDUCE_CASE) do a[i] = OP(a[i], b[i]) with a = inout and b = in, so here
 * x = inout[i] comes first and y = in[i] second:
 *   - MAX is MPL_MAX(x, y) = x > y ? x : y, MIN is x < y ? x : y.  For floats: a NaN on
 *     either side, or +0 against -0, gives y (in) -- the x86 maxpd/minpd rule, which is
 *     why GCC may emit those for it.
 *   - SUM/PROD of signed integers wrap in MPICH (two's complement, in practice); here they
 *     are computed in the unsigned type of the same width: the same bits, no undefined
 *     behaviour.  8- and 16-bit values widen to unsigned int, not int (65535 * 65535
 *     overflows int).
 *   - LAND/LOR/LXOR store 0 or 1, as MPICH's (a && b) etc. do.
 *   - float SUM/PROD: one IEEE operation per element, so the same rounding.  When both
 *     operands are NaNs, x86 returns the first operand's: MPICH's scalar loop (movsd inout;
 *     addsd in) returns inout's, quieted.  GCC orders the operands of + and * as it likes
 *     (it did put `in` first in a tail loop, and the test caught it), so when x is a NaN
 *     the kernel computes x + x (x * x) instead, which is x quieted whatever the order.
 *   - MPI_C_BOOL is combined as bytes: identical for valid bools (0 or 1).
 *   - No MAX/MIN kernel for unsigned integers: MPICH 4.0.2 compares them as signed
 *     (pmodels/mpich#6083, MIN(0, ULONG_MAX) = ULONG_MAX).  Rather than copy the bug or
 *     differ from MPI_Reduce (which dred's results are checked against), those pairs stay
 *     on MPI_Reduce_local; add U4(max)/U4(min) kernels once the MPI library is fixed.
 * Signed and unsigned integers of one width share every other kernel, and MPI types map
 * to a representation by size: MPI_LONG, MPI_AINT and MPI_INT64_T all use the 64-bit
 * kernels.  Every other pair lib/engine/typecheck.c accepts on C integer, logical, byte, float
 * and double types has a kernel; tests/unit/test_kernel.c compares each with
 * MPI_Reduce_local (NaNs, infinities, denormals, overflow included).
 *
 * DRED_KERNELS=0 in the environment (read once) makes dred_kernel_find() return NULL, so
 * every combine goes through MPI_Reduce_local: a switch to rule the kernels out.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* tests/unit/test_kernel.c also links a second build of this file, made with
 * -DDRED_KERNEL_BASELINE: no AVX2 clones, and dred_kernel_find() renamed, so that the code
 * a CPU without AVX2 runs is checked too. */
#ifdef DRED_KERNEL_BASELINE
#define dred_kernel_find dred_kernel_find_baseline
#endif
#include "kernel.h"
#include "../../common/settings.h"

/* -O3 to vectorise; no-trapping-math so that the float SUM/PROD select is vectorised too
 * (values are unchanged: only FP exception flags, which nobody reads here, are concerned). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(DRED_KERNEL_BASELINE)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

_Static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE single and double");

/* The pair of functions for element type T; E computes the result from x = inout[i] and
 * y = in[i] and is stored as (T)(E). */
#define KERNEL(name, T, E)                                                                   \
  static CLONES void name##_ip(const void *restrict in_, void *restrict inout_, size_t n) {  \
    const T *restrict in = in_;                                                              \
    T *restrict io = inout_;                                                                 \
    for (size_t i = 0; i < n; i++) {                                                         \
      T x = io[i], y = in[i];                                                                \
      io[i] = (T)(E);                                                                        \
    }                                                                                        \
  }                                                                                          \
  static CLONES void name##_oop(const void *restrict in_, const void *restrict inout_,       \
                                void *restrict out_, size_t n) {                             \
    const T *restrict in = in_;                                                              \
    const T *restrict io = inout_;                                                           \
    T *restrict out = out_;                                                                  \
    for (size_t i = 0; i < n; i++) {                                                         \
      T x = io[i], y = in[i];                                                                \
      out[i] = (T)(E);                                                                       \
    }                                                                                        \
  }                                                                                          \
  static const dred_kernel_t name = {name##_ip, name##_oop};

/* Unsigned integers of b bits, arithmetic in W (at least unsigned int: no signed overflow). */
#define UINT_KERNELS(b, W)                                  \
  KERNEL(k_sum_u##b, uint##b##_t, (W)x + (W)y)              \
  KERNEL(k_prod_u##b, uint##b##_t, (W)x * (W)y)             \
  KERNEL(k_land_u##b, uint##b##_t, (x != 0) & (y != 0))     \
  KERNEL(k_lor_u##b, uint##b##_t, (x != 0) | (y != 0))      \
  KERNEL(k_lxor_u##b, uint##b##_t, (x != 0) ^ (y != 0))     \
  KERNEL(k_band_u##b, uint##b##_t, x & y)                   \
  KERNEL(k_bor_u##b, uint##b##_t, x | y)                    \
  KERNEL(k_bxor_u##b, uint##b##_t, x ^ y)
/* MAX and MIN need the sign (signed only, see the table). */
#define SINT_KERNELS(b)                                     \
  KERNEL(k_max_i##b, int##b##_t, x > y ? x : y)             \
  KERNEL(k_min_i##b, int##b##_t, x < y ? x : y)
/* x != x: x (inout) is a NaN, which MPICH's loop returns, quieted: x + x does that, and x + y
 * might return y instead (GCC orders the operands of + as it likes).  Both sides are
 * computed and blended (no-trapping-math, above, lets GCC evaluate both). */
#define FLOAT_KERNELS(s, T)                                 \
  KERNEL(k_sum_##s, T, x != x ? x + x : x + y)              \
  KERNEL(k_prod_##s, T, x != x ? x * x : x * y)             \
  KERNEL(k_max_##s, T, x > y ? x : y)                       \
  KERNEL(k_min_##s, T, x < y ? x : y)

UINT_KERNELS(8, unsigned)
UINT_KERNELS(16, unsigned)
UINT_KERNELS(32, uint32_t)
UINT_KERNELS(64, uint64_t)
SINT_KERNELS(8)
SINT_KERNELS(16)
SINT_KERNELS(32)
SINT_KERNELS(64)
FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)

/* Representations (R_I8 + k and R_U8 + k are 2^k bytes) and ops. */
enum { R_I8, R_I16, R_I32, R_I64, R_U8, R_U16, R_U32, R_U64, R_F32, R_F64, R_N };
enum { O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_N };

#define U4(op) &k_##op##_u8, &k_##op##_u16, &k_##op##_u32, &k_##op##_u64
#define I4(op) &k_##op##_i8, &k_##op##_i16, &k_##op##_i32, &k_##op##_i64
static const dred_kernel_t *const kernels[O_N][R_N] = {
    [O_SUM] = {U4(sum), U4(sum), &k_sum_f32, &k_sum_f64},
    [O_PROD] = {U4(prod), U4(prod), &k_prod_f32, &k_prod_f64},
    /* no unsigned MAX/MIN: MPICH 4.0.2 compares unsigned integers as signed ones (see top) */
    [O_MAX] = {I4(max), NULL, NULL, NULL, NULL, &k_max_f32, &k_max_f64},
    [O_MIN] = {I4(min), NULL, NULL, NULL, NULL, &k_min_f32, &k_min_f64},
    [O_LAND] = {U4(land), U4(land), NULL, NULL},
    [O_LOR] = {U4(lor), U4(lor), NULL, NULL},
    [O_LXOR] = {U4(lxor), U4(lxor), NULL, NULL},
    [O_BAND] = {U4(band), U4(band), NULL, NULL},
    [O_BOR] = {U4(bor), U4(bor), NULL, NULL},
    [O_BXOR] = {U4(bxor), U4(bxor), NULL, NULL},
};

/* The ops each class of type takes (typecheck.c's table). */
#define M(o) (1u << (o))
#define C_INT ((1u << O_N) - 1)
#define C_FLOAT (M(O_SUM) | M(O_PROD) | M(O_MAX) | M(O_MIN))
#define C_LOGICAL (M(O_LAND) | M(O_LOR) | M(O_LXOR))
#define C_BYTE (M(O_BAND) | M(O_BOR) | M(O_BXOR))

/* Integer representation of `size` bytes, or -1. */
static int int_rep(size_t size, int is_signed) {
  int k = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;
  return k < 0 ? -1 : (is_signed ? R_I8 : R_U8) + k;
}

static int kernels_enabled(void) {
  static int state; /* 0 not read yet, 1 enabled, 2 disabled */
  int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (s == 0) {
    s = dred_setting_u64(DRED_S_KERNELS) == 0 ? 2 : 1;
    __atomic_store_n(&state, s, __ATOMIC_RELEASE);
  }
  return s == 1;
}

static const dred_kernel_t *kernel_lookup(MPI_Datatype type, MPI_Op op) {
  static const struct {
    MPI_Op op;
    int o;
  } ops[] = {
      {MPI_SUM, O_SUM},   {MPI_PROD, O_PROD}, {MPI_MAX, O_MAX},   {MPI_MIN, O_MIN},
      {MPI_LAND, O_LAND}, {MPI_LOR, O_LOR},   {MPI_LXOR, O_LXOR}, {MPI_BAND, O_BAND},
      {MPI_BOR, O_BOR},   {MPI_BXOR, O_BXOR},
  };
#define T(mpi, ctype, sgn, cls) {mpi, sizeof(ctype), sgn, cls}
  static const struct {
    MPI_Datatype type;
    size_t size;
    int is_signed; /* 2: floating point */
    unsigned cls;
  } types[] = {
      T(MPI_CHAR, char, CHAR_MIN < 0, C_INT),
      T(MPI_SIGNED_CHAR, signed char, 1, C_INT),
      T(MPI_UNSIGNED_CHAR, unsigned char, 0, C_INT),
      T(MPI_SHORT, short, 1, C_INT),
      T(MPI_UNSIGNED_SHORT, unsigned short, 0, C_INT),
      T(MPI_INT, int, 1, C_INT),
      T(MPI_UNSIGNED, unsigned, 0, C_INT),
      T(MPI_LONG, long, 1, C_INT),
      T(MPI_UNSIGNED_LONG, unsigned long, 0, C_INT),
      T(MPI_LONG_LONG_INT, long long, 1, C_INT),
      T(MPI_LONG_LONG, long long, 1, C_INT),
      T(MPI_UNSIGNED_LONG_LONG, unsigned long long, 0, C_INT),
      T(MPI_INT8_T, int8_t, 1, C_INT),
      T(MPI_INT16_T, int16_t, 1, C_INT),
      T(MPI_INT32_T, int32_t, 1, C_INT),
      T(MPI_INT64_T, int64_t, 1, C_INT),
      T(MPI_UINT8_T, uint8_t, 0, C_INT),
      T(MPI_UINT16_T, uint16_t, 0, C_INT),
      T(MPI_UINT32_T, uint32_t, 0, C_INT),
      T(MPI_UINT64_T, uint64_t, 0, C_INT),
      T(MPI_AINT, MPI_Aint, 1, C_INT),
      T(MPI_OFFSET, MPI_Offset, 1, C_INT),
      T(MPI_COUNT, MPI_Count, 1, C_INT),
      T(MPI_C_BOOL, _Bool, 0, C_LOGICAL),
      T(MPI_BYTE, unsigned char, 0, C_BYTE),
      T(MPI_FLOAT, float, 2, C_FLOAT),
      T(MPI_DOUBLE, double, 2, C_FLOAT),
  };
#undef T
  size_t i;
  int o = -1, r;

  if (!kernels_enabled()) return NULL;
  for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (ops[i].op == op) o = ops[i].o;
  if (o < 0) return NULL;
  for (i = 0; i < sizeof types / sizeof types[0]; i++) {
    if (types[i].type != type) continue;
    if (!(types[i].cls & M(o))) return NULL;
    if (types[i].is_signed == 2)
      r = types[i].size == 4 ? R_F32 : R_F64;
    else
      r = int_rep(types[i].size, types[i].is_signed);
    return r < 0 ? NULL : kernels[o][r];
  }
  return NULL;
}

/* Every combine of a collective asks, and the tables are scanned in order (MPI_DOUBLE is
 * last): a thread remembers its last answer, which depends on nothing but the two handles
 * (a predefined handle never changes meaning; any other gets NULL, whatever it names). */
const dred_kernel_t *dred_kernel_find(MPI_Datatype type, MPI_Op op) {
  static __thread struct {
    MPI_Datatype type;
    MPI_Op op;
    const dred_kernel_t *kern;
    int valid;
  } last;
  if (!last.valid || last.type != type || last.op != op) {
    last.kern = kernel_lookup(type, op);
    last.type = type;
    last.op = op;
    last.valid = 1;
  }
  return last.kern;
}
