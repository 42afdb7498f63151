/*
 * mix_app.c -- a randomized differential test of libdred-mpi at the MPI level: an unmodified
 * MPI program (plain mpicc, no dred header) that mixes MPI_Reduce, MPI_Allreduce, MPI_Bcast
 * and their nonblocking forms over several communicators, types, ops, counts and
 * completion calls, and checks every result byte for byte against a value it computes
 * itself.  tests/interpose/run.sh runs it through libdred-mpi.so (`dredrun --mpi`).
 *
 *   dredrun --mpi -n P mix_app [-s SEED] [-r ROUNDS] [-R FIRST] [-K MAXK] [-B MAXBYTES]
 *                              [-k KINDS] [-C COMM] [-I] [-v]
 *     -s SEED   seed of everything (default 20240611)
 *     -r ROUNDS rounds (default 10), numbered from FIRST (-R, default 0): a round's plan
 *               depends on (seed, round) only, so `-R N -r 1` replays round N alone
 *     -K MAXK   at most MAXK collectives per round (default 16, at most 64)
 *     -B BYTES  largest operand in bytes (default 300000)
 *     -k KINDS  the kinds drawn, a comma list of reduce, allreduce, bcast (default all)
 *     -C NAME   only communicator NAME (world, dup, half, rev, parity, one, self)
 *     -I        a reduce's root other than 0 may pass MPI_IN_PLACE too (MPICH 4.0.2's own
 *               MPI_Reduce crashes on that from a few KiB: only for runs whose calls all go
 *               to dred; without -I only root 0 does)
 *     -v        rank 0 prints every round's plan
 *
 * Communicators, made once at start: MPI_COMM_WORLD; an MPI_Comm_dup of it; its two halves
 * (ranks below P/2, the rest); all of it in reversed order (split, key P-1-rank); even and
 * odd ranks, each in decreasing rank order; one member each (split, color = rank); and
 * MPI_COMM_SELF itself (which libdred-mpi always leaves to MPI).  Every process belongs to
 * exactly one part of each, so every process takes part in every collective of a round, on
 * its part.
 *
 * A round: every process draws the same plan from (seed, round) with a splitmix64
 * generator: K (1..MAXK) collectives, each with a kind (reduce, allreduce, bcast),
 * blocking or not, a communicator, a root (a draw taken modulo the part's size), a count
 * (0, 1, small, up to 32 KB, up to MAXBYTES), and a (type, op) pair: MPI_INT, MPI_DOUBLE,
 * MPI_LONG, MPI_UNSIGNED under the predefined ops that apply (SUM, PROD, MAX, MIN, BXOR on
 * the integers), MPI_DOUBLE_INT under MINLOC/MAXLOC, a commutative user op (x o y =
 * x + y + xy mod 2^32 on 32-bit cells) on MPI_INT, MPI_UNSIGNED, a contiguous type (3
 * ints) and a vector with holes (2 ints, stride 2, resized to 16 bytes), and a
 * NON-commutative user op (composition of affine maps x -> a x + b mod 2^32, whose result
 * depends on the rank order) on a contiguous pair of unsigned and on a pair with holes.
 * (MPI defines the predefined ops on predefined types only, and MPICH 4.0.2 refuses them on
 * derived ones, so the derived types are reduced with user ops; a bcast takes any type.)
 * MPI_IN_PLACE where MPI allows it: a reduce's root (root 0 only, unless -I); an
 * allreduce's every member.
 * Collectives are issued in plan order on every process (MPI's order per communicator; a
 * blocking one then never waits for a process blocked elsewhere; and libdred-mpi's first
 * call on a communicator agrees its tags by a collective over it).  Each process on its
 * own decides: whether a reduce's non-root passes recvbuf NULL or a buffer that must stay
 * untouched; short pauses before calls and before it waits ("computing"); and how and in
 * which order its nonblocking requests complete: MPI_Wait, MPI_Waitall, MPI_Waitany,
 * MPI_Waitsome, or MPI_Test, MPI_Testall, MPI_Testany, MPI_Testsome loops, on random
 * subsets in a random order, sometimes with MPI_REQUEST_NULL entries among them (a
 * completion order that differs between processes is legal).  A test loop gives up
 * after 60 s x DRED_TEST_TIMEOUT_SCALE, and a watchdog thread does the same for any
 * blocking call: a FAIL line naming the call, then MPI_Abort.
 *
 * Checks: every call returns MPI_SUCCESS; a completed request is MPI_REQUEST_NULL, and a
 * completion call completes as many as it says (Waitsome/Testsome: the ones its indices
 * name); a Testall that says "not yet" leaves its requests alone.  As soon as a collective
 * is complete (a blocking one: when it returns), and again at the round's end (a late
 * write), its buffers are checked: where the result lands (a reduce's root, every
 * allreduce and bcast member) the whole receive span -- count elements and a 64-byte
 * guard past them -- equals the expected image byte for byte (data, the holes of derived
 * types untouched, nothing written past the end; MPI_DOUBLE_INT compared field by field,
 * its padding being unspecified); a reduce's non-root recvbuf and a bcast root's buffer
 * are unchanged, and so is every sendbuf (with its guard).  The
 * expected value is not MPI's: every process's operand is a function of (seed, round,
 * collective, part, rank in the communicator, element), so each process generates every
 * member's and folds them in rank order with MPI_Reduce_local (MPICH 4.0.2's own
 * collectives are wrong on uneven multi-node layouts).  Values are small integers (PROD
 * factors 2, -1, 1), so floating results are exact in any order.
 *
 * Output: "FAIL mix_app seed=S round=R coll=J: <the collective's plan>: <what>" for each
 * wrong thing, one "PASS mix_app ..." line per process and round, and from rank 0 at the
 * end "ALL PASSED mix_app (P=n)" when every process passed (tallied by point-to-point
 * messages, so no collective under test decides the verdict); exit status 1 otherwise.
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GUARD 64 /* bytes past the data that nobody may write */
#define MAXK_LIMIT 64
#define STEP_LIMIT_S 60.0

static int g_rank, g_size, g_nfail, g_verbose, g_level;
static int g_inplace_any; /* -I: a reduce's root other than 0 may go in place too */
static uint64_t g_seed = 20240611;
static double g_limit; /* STEP_LIMIT_S x DRED_TEST_TIMEOUT_SCALE */

/* ---------------------------------------------------------------- output, time, watchdog */

/* One whole line per write, so lines of different processes never interleave. */
static void emit(const char *prefix, const char *fmt, va_list ap) {
  char line[1200];
  int n = snprintf(line, sizeof line, "%s", prefix), m;
  if (n < 0) n = 0;
  m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  if (m > 0) n = (size_t)(n + m) < sizeof line - 1 ? n + m : (int)sizeof line - 2;
  line[n++] = '\n';
  fflush(stdout);
  if (write(1, line, (size_t)n) < 0) { /* nothing better to do */
  }
}

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("", fmt, ap);
  va_end(ap);
}

static void fail(const char *fmt, ...) {
  va_list ap;
  g_nfail++;
  va_start(ap, fmt);
  emit("FAIL mix_app ", fmt, ap);
  va_end(ap);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pthread_mutex_t step_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_step[600] = "MPI_Init";
static double g_step_t0;
static int g_in_mpi_finalize;

/* What the main thread is doing now (the watchdog and the SIGTERM handler name it). */
static void set_step(const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&step_mu);
  va_start(ap, fmt);
  vsnprintf(g_step, sizeof g_step, fmt, ap);
  va_end(ap);
  g_step_t0 = now_s();
  pthread_mutex_unlock(&step_mu);
}

static void *watchdog(void *arg) {
  (void)arg;
  for (;;) {
    char step[sizeof g_step];
    double t;
    int fin;
    sleep(1);
    pthread_mutex_lock(&step_mu);
    t = now_s() - g_step_t0;
    memcpy(step, g_step, sizeof step);
    fin = g_in_mpi_finalize;
    pthread_mutex_unlock(&step_mu);
    if (t <= g_limit) continue;
    say("FAIL mix_app seed=%llu rank=%d: no progress for %.0f s (limit %.0f s) in: %s",
        (unsigned long long)g_seed, g_rank, t, g_limit, step);
    fflush(stdout);
    if (g_level == MPI_THREAD_MULTIPLE && !fin) MPI_Abort(MPI_COMM_WORLD, 3);
    _exit(3);
  }
  return NULL;
}

static void on_term(int sig) {
  char buf[800];
  int n =
      snprintf(buf, sizeof buf, "FAIL mix_app seed=%llu rank=%d: killed by signal %d during: %s\n",
               (unsigned long long)g_seed, g_rank, sig, g_step);
  if (n > 0 && write(2, buf, (size_t)n) < 0) { /* nothing */
  }
  _exit(124);
}

/* ---------------------------------------------------------------- random numbers */

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* splitmix64: the state moves by the golden gamma, the output is its finaliser */
static uint64_t next(uint64_t *s) {
  *s += 0x9e3779b97f4a7c15ULL;
  return mix64(*s);
}

static uint64_t below(uint64_t *s, uint64_t n) { return n ? next(s) % n : 0; }

/* ---------------------------------------------------------------- communicators */

enum { C_WORLD, C_DUP, C_HALF, C_REV, C_PARITY, C_ONE, C_SELF, NCOMM };
static const char *cname[NCOMM] = {"world", "dup", "half", "rev", "parity", "one", "self"};
static MPI_Comm comms[NCOMM];
static int crank[NCOMM], csize[NCOMM], ccolor[NCOMM];

static void make_comms(void) {
  int r = g_rank, p = g_size, c;
  comms[C_WORLD] = MPI_COMM_WORLD;
  ccolor[C_WORLD] = 0;
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[C_DUP]);
  ccolor[C_DUP] = 0;
  ccolor[C_HALF] = r < p / 2 ? 0 : 1;
  MPI_Comm_split(MPI_COMM_WORLD, ccolor[C_HALF], r, &comms[C_HALF]);
  ccolor[C_REV] = 0;
  MPI_Comm_split(MPI_COMM_WORLD, 0, p - 1 - r, &comms[C_REV]);
  ccolor[C_PARITY] = r % 2;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, -r, &comms[C_PARITY]);
  ccolor[C_ONE] = r;
  MPI_Comm_split(MPI_COMM_WORLD, r, 0, &comms[C_ONE]);
  comms[C_SELF] = MPI_COMM_SELF;
  ccolor[C_SELF] = r;
  for (c = 0; c < NCOMM; c++) {
    MPI_Comm_rank(comms[c], &crank[c]);
    MPI_Comm_size(comms[c], &csize[c]);
    MPI_Comm_set_errhandler(comms[c], MPI_ERRORS_RETURN);
  }
}

static void free_comms(void) {
  int c;
  for (c = C_DUP; c <= C_ONE; c++) MPI_Comm_free(&comms[c]);
}

/* ---------------------------------------------------------------- types and ops */

enum { B_INT, B_UINT, B_LONG, B_DBL, B_DI };
struct di {
  double v;
  int i;
};

struct tdesc {
  const char *name;
  MPI_Datatype dt;
  int ncell;           /* basic cells per element */
  size_t cellsz;       /* a cell's extent (MPI_DOUBLE_INT: 16) */
  size_t datasz;       /* a cell's data bytes (MPI_DOUBLE_INT: 12) */
  size_t off0, stride; /* cell k of an element lies at off0 + k * stride */
  size_t ext;
  int base;
};

enum { T_INT, T_DOUBLE, T_LONG, T_UNSIGNED, T_DI, T_CONT, T_VEC, T_AFF, T_AFFH, NT };
static struct tdesc types[NT];

static void set_type(int t, const char *name, MPI_Datatype dt, int ncell, size_t cellsz,
                     size_t datasz, size_t stride, int base) {
  MPI_Aint lb, ext;
  struct tdesc *d = &types[t];
  d->name = name;
  d->dt = dt;
  d->ncell = ncell;
  d->cellsz = cellsz;
  d->datasz = datasz;
  d->off0 = 0;
  d->stride = stride;
  d->base = base;
  MPI_Type_get_extent(dt, &lb, &ext);
  d->ext = (size_t)ext;
  if (lb != 0 || d->off0 + (size_t)(ncell - 1) * stride + datasz > d->ext) {
    fail("rank=%d: type %s has an unexpected layout (lb %ld, extent %ld)", g_rank, name, (long)lb,
         (long)ext);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

enum { O_SUM, O_PROD, O_MAX, O_MIN, O_BXOR, O_MINLOC, O_MAXLOC, O_CMIX, O_AFF, NO };
static const char *oname[NO] = {"sum",    "prod",   "max",  "min",   "bxor",
                                "minloc", "maxloc", "cmix", "affine"};
static MPI_Op ops[NO];

/* The layout a user op walks, found by the datatype handle MPI (or dred) passes it. */
static const struct tdesc *layout_of(MPI_Datatype dt) {
  int t;
  for (t = 0; t < NT; t++)
    if (types[t].dt == dt) return &types[t];
  say("FAIL mix_app seed=%llu rank=%d: a user op was called with a datatype never passed",
      (unsigned long long)g_seed, g_rank);
  fflush(stdout);
  abort();
}

/* commutative: x o y = x + y + x*y (mod 2^32) = (1+x)(1+y) - 1 on every 32-bit cell */
static void cmix_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
  const struct tdesc *d = layout_of(*dt);
  int i, k;
  for (i = 0; i < *len; i++) {
    const unsigned char *a = (const unsigned char *)in + (size_t)i * d->ext;
    unsigned char *b = (unsigned char *)inout + (size_t)i * d->ext;
    for (k = 0; k < d->ncell; k++) {
      uint32_t x, y;
      memcpy(&x, a + d->off0 + (size_t)k * d->stride, 4);
      memcpy(&y, b + d->off0 + (size_t)k * d->stride, 4);
      y = x + y + x * y;
      memcpy(b + d->off0 + (size_t)k * d->stride, &y, 4);
    }
  }
}

/* NON-commutative: affine maps x -> a x + b (mod 2^32), cells 0 (a) and 1 (b) of an
 * element.  inout = "in, then inout" (MPI passes the lower ranks' operand as in), so the
 * result applies rank 0's map first. */
static void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
  const struct tdesc *d = layout_of(*dt);
  int i;
  for (i = 0; i < *len; i++) {
    const unsigned char *p = (const unsigned char *)in + (size_t)i * d->ext;
    unsigned char *q = (unsigned char *)inout + (size_t)i * d->ext;
    uint32_t fa, fb, ga, gb, ra, rb;
    memcpy(&fa, p + d->off0, 4);
    memcpy(&fb, p + d->off0 + d->stride, 4);
    memcpy(&ga, q + d->off0, 4);
    memcpy(&gb, q + d->off0 + d->stride, 4);
    ra = fa * ga;
    rb = ga * fb + gb;
    memcpy(q + d->off0, &ra, 4);
    memcpy(q + d->off0 + d->stride, &rb, 4);
  }
}

/* 2 cells of `cell` (4 bytes) at 0 and 8, extent 16: holes at 4..8 and 12..16 */
static MPI_Datatype pair_with_holes(MPI_Datatype cell) {
  MPI_Datatype v, t;
  MPI_Type_vector(2, 1, 2, cell, &v);
  MPI_Type_create_resized(v, 0, 16, &t);
  MPI_Type_commit(&t);
  MPI_Type_free(&v);
  return t;
}

static void make_types(void) {
  MPI_Datatype t;
  set_type(T_INT, "int", MPI_INT, 1, 4, 4, 4, B_INT);
  set_type(T_DOUBLE, "double", MPI_DOUBLE, 1, 8, 8, 8, B_DBL);
  set_type(T_LONG, "long", MPI_LONG, 1, sizeof(long), sizeof(long), sizeof(long), B_LONG);
  set_type(T_UNSIGNED, "unsigned", MPI_UNSIGNED, 1, 4, 4, 4, B_UINT);
  set_type(T_DI, "double_int", MPI_DOUBLE_INT, 1, sizeof(struct di), 12, sizeof(struct di), B_DI);
  MPI_Type_contiguous(3, MPI_INT, &t);
  MPI_Type_commit(&t);
  set_type(T_CONT, "contig3int", t, 3, 4, 4, 4, B_INT);
  set_type(T_VEC, "vec2int", pair_with_holes(MPI_INT), 2, 4, 4, 8, B_INT);
  MPI_Type_contiguous(2, MPI_UNSIGNED, &t);
  MPI_Type_commit(&t);
  set_type(T_AFF, "affpair", t, 2, 4, 4, 4, B_UINT);
  set_type(T_AFFH, "affholes", pair_with_holes(MPI_UNSIGNED), 2, 4, 4, 8, B_UINT);
  ops[O_SUM] = MPI_SUM;
  ops[O_PROD] = MPI_PROD;
  ops[O_MAX] = MPI_MAX;
  ops[O_MIN] = MPI_MIN;
  ops[O_BXOR] = MPI_BXOR;
  ops[O_MINLOC] = MPI_MINLOC;
  ops[O_MAXLOC] = MPI_MAXLOC;
  MPI_Op_create(cmix_op, 1, &ops[O_CMIX]);
  MPI_Op_create(affine_op, 0, &ops[O_AFF]);
}

static void free_types(void) {
  int t;
  for (t = T_CONT; t < NT; t++) MPI_Type_free(&types[t].dt);
  MPI_Op_free(&ops[O_CMIX]);
  MPI_Op_free(&ops[O_AFF]);
}

/* The (type, op) pairs a reduce or allreduce draws from; the non-commutative ones twice. */
static const struct combo {
  int t, o;
} combos[] = {
    {T_INT, O_SUM},      {T_INT, O_PROD},     {T_INT, O_MAX},       {T_INT, O_MIN},
    {T_INT, O_BXOR},     {T_INT, O_CMIX},     {T_DOUBLE, O_SUM},    {T_DOUBLE, O_PROD},
    {T_DOUBLE, O_MAX},   {T_DOUBLE, O_MIN},   {T_LONG, O_SUM},      {T_LONG, O_PROD},
    {T_LONG, O_MAX},     {T_LONG, O_MIN},     {T_LONG, O_BXOR},     {T_UNSIGNED, O_SUM},
    {T_UNSIGNED, O_MAX}, {T_UNSIGNED, O_MIN}, {T_UNSIGNED, O_BXOR}, {T_UNSIGNED, O_CMIX},
    {T_DI, O_MINLOC},    {T_DI, O_MAXLOC},    {T_CONT, O_CMIX},     {T_VEC, O_CMIX},
    {T_AFF, O_AFF},      {T_AFF, O_AFF},      {T_AFFH, O_AFF},      {T_AFFH, O_AFF},
};
#define NCOMBO ((int)(sizeof combos / sizeof combos[0]))

/* ---------------------------------------------------------------- operands */

static int64_t ival(int o, uint64_t e) {
  static const int prod[6] = {2, -1, 1, 1, 1, 1};
  switch (o) {
    case O_SUM:
      return (int64_t)(e % 2001) - 1000;
    case O_PROD:
      return prod[e % 6];
    default:
      return (int64_t)e; /* MAX, MIN, BXOR, CMIX: any bits */
  }
}

static double dval(int o, uint64_t e) {
  static const double prod[6] = {2, -1, 1, 1, 1, 1};
  switch (o) {
    case O_PROD:
      return prod[e % 6];
    case O_MAX:
    case O_MIN:
      return (double)((int64_t)(e % 2000001) - 1000000);
    default:
      return (double)((int64_t)(e % 2001) - 1000);
  }
}

/* cell s of an element, from the random word e */
static void cell_value(int o, int base, int s, uint64_t e, unsigned char *out) {
  switch (base) {
    case B_INT: {
      int32_t v = (int32_t)ival(o, e);
      memcpy(out, &v, 4);
      break;
    }
    case B_UINT: {
      uint32_t v;
      if (o == O_AFF)
        v = s == 0 ? ((uint32_t)e | 1u) : (uint32_t)(e >> 32);
      else
        v = o == O_SUM ? (uint32_t)e : (uint32_t)ival(o, e); /* unsigned wraps */
      memcpy(out, &v, 4);
      break;
    }
    case B_LONG: {
      long v = (long)ival(o, e);
      memcpy(out, &v, sizeof v);
      break;
    }
    case B_DBL: {
      double v = dval(o, e);
      memcpy(out, &v, 8);
      break;
    }
    default: {
      struct di v;
      memset(&v, 0, sizeof v);
      v.v = (double)(e % 4); /* many ties: the lower index must win */
      v.i = (int)((e >> 8) % 64);
      memcpy(out, &v, sizeof v);
    }
  }
}

/* ---------------------------------------------------------------- the plan */

enum { K_REDUCE, K_ALLREDUCE, K_BCAST, NKIND };
static const char *callname[2][NKIND] = {{"MPI_Reduce", "MPI_Allreduce", "MPI_Bcast"},
                                         {"MPI_Ireduce", "MPI_Iallreduce", "MPI_Ibcast"}};
static const char *kname[NKIND] = {"reduce", "allreduce", "bcast"};

struct coll {
  /* the plan: the same on every process */
  int j, kind, nb, comm, t, o, count, inplace;
  uint64_t rootsel;
  /* this process's view */
  MPI_Comm c;
  int cr, cs, color, root, is_root;
  const struct tdesc *d;
  int null_recv; /* a reduce's non-root passes recvbuf NULL */
  size_t span;   /* count * extent + GUARD */
  unsigned char *sbuf, *scopy, *rbuf, *rinit;
  unsigned char *want; /* the receive span as it must be once complete (first check) */
  int checked, bad;    /* checked at completion; found wrong then */
  MPI_Request req;
  int pending;
  int rc;
};

/* Whether this process passes MPI_IN_PLACE: every allreduce member, or a reduce's root --
 * root 0 only unless -I: MPICH 4.0.2's own MPI_Reduce dies of SIGSEGV with MPI_IN_PLACE at
 * any other root from a few KiB (seen with every call left to MPI: 300 MPI_LONGs at roots
 * 1 and P-1 of p = 2 and 5 crash, 100 do not), and the runs with default thresholds send
 * such calls to it.  The cases whose calls all go to dred pass -I. */
static int uses_inplace(const struct coll *x) {
  if (!x->inplace || x->kind == K_BCAST) return 0;
  return x->kind == K_ALLREDUCE || (x->cr == x->root && (x->root == 0 || g_inplace_any));
}

static int draw_count(uint64_t *rng, size_t ext, long maxbytes) {
  int x = (int)below(rng, 100);
  long big = maxbytes / (long)ext, mid = 32768 / (long)ext;
  if (big < 2) big = 2;
  if (mid > big) mid = big;
  if (x < 6) return 0;
  if (x < 16) return 1;
  if (x < 46) return (int)(2 + below(rng, 63));
  if (x < 78) return (int)(1 + below(rng, (uint64_t)mid));
  return (int)(1 + below(rng, (uint64_t)big));
}

static void describe(const struct coll *x, int round, char *buf, size_t n) {
  char tb[40];
  if (x->kind == K_BCAST)
    snprintf(tb, sizeof tb, "%s", types[x->t].name);
  else
    snprintf(tb, sizeof tb, "%s_%s", types[x->t].name, oname[x->o]);
  snprintf(buf, n,
           "seed=%llu round=%d coll=%d: %s comm=%s(color %d, size %d, my rank %d) root=%d "
           "count=%d %s%s (world rank %d; replay: mix_app -s %llu -R %d -r 1%s, P=%d)",
           (unsigned long long)g_seed, round, x->j, callname[x->nb][x->kind], cname[x->comm],
           x->color, x->cs, x->cr, x->kind == K_ALLREDUCE ? -1 : x->root, x->count, tb,
           !x->inplace                     ? ""
           : x->kind == K_ALLREDUCE        ? " in_place"
           : x->root == 0 || g_inplace_any ? " in_place(root)"
                                           : " (in_place drawn, root not 0: no -I)",
           g_rank, (unsigned long long)g_seed, round, g_inplace_any ? " -I" : "", g_size);
}

struct opts {
  int rounds, first, maxk, kinds, only_comm;
  long maxbytes;
};

/* The plan of a round: drawn alike everywhere from (seed, round). */
static int draw_plan(int round, const struct opts *op, struct coll *plan) {
  uint64_t rng = mix64(g_seed ^ 0x6d69785f617070ULL) ^ mix64((uint64_t)round + 1);
  int k = 1 + (int)below(&rng, (uint64_t)op->maxk), j;
  for (j = 0; j < k; j++) {
    struct coll *x = &plan[j];
    memset(x, 0, sizeof *x);
    x->j = j;
    do x->kind = (int)below(&rng, NKIND);
    while (!(op->kinds & (1 << x->kind)));
    x->nb = (int)below(&rng, 2);
    x->comm = op->only_comm >= 0 ? op->only_comm : (int)below(&rng, NCOMM);
    if (x->kind == K_BCAST) {
      x->t = (int)below(&rng, NT);
      x->o = O_MAX; /* the operand's values: any */
    } else {
      const struct combo *cb = &combos[below(&rng, NCOMBO)];
      x->t = cb->t;
      x->o = cb->o;
    }
    x->count = draw_count(&rng, types[x->t].ext, op->maxbytes);
    x->inplace = below(&rng, 3) == 0 && x->kind != K_BCAST;
    x->rootsel = next(&rng);
  }
  return k;
}

/* ---------------------------------------------------------------- buffers and values */

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) {
    fail("rank=%d: out of memory (%zu bytes)", g_rank, n);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}

static void pattern(unsigned char *p, size_t n, uint64_t h) {
  size_t k;
  for (k = 0; k < n; k++) {
    if (k % 8 == 0) h = mix64(h);
    p[k] = (unsigned char)(h >> (8 * (k % 8)));
  }
}

/* member m's operand of x: count x ncell cells, packed (cellsz apart) */
static unsigned char *gen_cells(const struct coll *x, int round, int m) {
  const struct tdesc *d = x->d;
  size_t ncells = (size_t)x->count * (size_t)d->ncell, k;
  unsigned char *cells = xmalloc(ncells * d->cellsz);
  uint64_t h = mix64(g_seed ^ mix64(((uint64_t)round << 32) ^ ((uint64_t)x->j << 20) ^
                                    ((uint64_t)x->color << 10) ^ (uint64_t)m));
  for (k = 0; k < ncells; k++)
    cell_value(x->o, d->base, (int)(k % (size_t)d->ncell), mix64(h ^ (k * 0x9e3779b97f4a7c15ULL)),
               cells + k * d->cellsz);
  return cells;
}

/* packed cells into the datatype's layout in buf (holes, padding untouched) */
static void place(const struct tdesc *d, const unsigned char *cells, int count,
                  unsigned char *buf) {
  int i, k;
  for (i = 0; i < count; i++)
    for (k = 0; k < d->ncell; k++)
      memcpy(buf + (size_t)i * d->ext + d->off0 + (size_t)k * d->stride,
             cells + ((size_t)i * (size_t)d->ncell + (size_t)k) * d->cellsz, d->datasz);
}

static void gen_operand(const struct coll *x, int round, int m, unsigned char *buf) {
  unsigned char *cells = gen_cells(x, round, m);
  place(x->d, cells, x->count, buf);
  free(cells);
}

static void ref_fail(const struct coll *x, int round, int rc) {
  char w[600];
  describe(x, round, w, sizeof w);
  fail("%s: MPI_Reduce_local (computing the expected result) returned %d", w, rc);
}

/* The expected image of the receive span where the result lands: rinit with the rank-order
 * fold (a bcast: the root's operand) written into it.  Predefined ops fold the packed cells;
 * user ops fold in the datatype's layout, as MPI calls them. */
static unsigned char *expected(const struct coll *x, int round) {
  const struct tdesc *d = x->d;
  unsigned char *exp = xmalloc(x->span), *acc, *y;
  int m, rc, user = x->o == O_CMIX || x->o == O_AFF;
  size_t bytes = (size_t)x->count * d->ext;
  memcpy(exp, x->rinit, x->span);
  if (x->count == 0) return exp;
  if (x->kind == K_BCAST) {
    gen_operand(x, round, x->root, exp);
    return exp;
  }
  if (!user) {
    acc = gen_cells(x, round, x->cs - 1);
    for (m = x->cs - 2; m >= 0; m--) {
      y = gen_cells(x, round, m);
      rc = MPI_Reduce_local(y, acc, x->count * d->ncell, d->dt, ops[x->o]);
      free(y);
      if (rc != MPI_SUCCESS) {
        ref_fail(x, round, rc);
        break;
      }
    }
    place(d, acc, x->count, exp);
    free(acc);
    return exp;
  }
  acc = xmalloc(bytes);
  y = xmalloc(bytes);
  memset(acc, 0, bytes);
  gen_operand(x, round, x->cs - 1, acc);
  for (m = x->cs - 2; m >= 0; m--) {
    memset(y, 0, bytes);
    gen_operand(x, round, m, y);
    rc = MPI_Reduce_local(y, acc, x->count, d->dt, ops[x->o]); /* acc = y o acc */
    if (rc != MPI_SUCCESS) {
      ref_fail(x, round, rc);
      break;
    }
  }
  /* the layout image's cells into exp: copy cell by cell */
  {
    int i, k;
    for (i = 0; i < x->count; i++)
      for (k = 0; k < d->ncell; k++) {
        size_t at = (size_t)i * d->ext + d->off0 + (size_t)k * d->stride;
        memcpy(exp + at, acc + at, d->datasz);
      }
  }
  free(acc);
  free(y);
  return exp;
}

/* got vs want over the span; returns 1 when equal, else says why */
static int compare(const struct coll *x, const unsigned char *got, const unsigned char *want,
                   size_t span, int pairs, char *why, size_t n) {
  const struct tdesc *d = x->d;
  size_t data = (size_t)x->count * d->ext, from = 0, k, ndiff = 0, last = 0;
  if (pairs && d->base == B_DI) {
    int i;
    for (i = 0; i < x->count; i++) {
      struct di a, b;
      memcpy(&a, got + (size_t)i * d->ext, sizeof a);
      memcpy(&b, want + (size_t)i * d->ext, sizeof b);
      if (a.v != b.v || a.i != b.i) {
        snprintf(why, n, "element %d is (%g,%d), expected (%g,%d)", i, a.v, a.i, b.v, b.i);
        return 0;
      }
    }
    from = data;
  }
  for (k = from; k < span; k++)
    if (got[k] != want[k]) break;
  if (k == span) return 1;
  for (last = k; last < span; last++)
    if (got[last] != want[last]) ndiff++;
  for (last = span - 1; got[last] == want[last]; last--) {
  }
  {
    size_t el = d->ext ? k / d->ext : 0, in = d->ext ? k % d->ext : 0;
    int hole = 1, kk;
    for (kk = 0; kk < d->ncell; kk++)
      if (in >= d->off0 + (size_t)kk * d->stride &&
          in < d->off0 + (size_t)kk * d->stride + d->datasz)
        hole = 0;
    snprintf(why, n,
             "byte %zu (element %zu, offset %zu%s, %s) is 0x%02x, expected 0x%02x (%zu bytes "
             "differ, the last at %zu; data is %zu bytes, guard %d)",
             k, el, in, k < data && hole ? ", a hole" : "",
             k >= data ? "past the data" : "in the data", got[k], want[k], ndiff, last, data,
             GUARD);
  }
  return 0;
}

/* Buffers of x for this process (lrng: its own choices). */
static void setup(struct coll *x, int round, uint64_t *lrng) {
  int sendside;
  x->c = comms[x->comm];
  x->cr = crank[x->comm];
  x->cs = csize[x->comm];
  x->color = ccolor[x->comm];
  x->d = &types[x->t];
  x->root = x->kind == K_ALLREDUCE ? -1 : (int)(x->rootsel % (uint64_t)x->cs);
  x->is_root = x->kind == K_ALLREDUCE || x->cr == x->root;
  x->span = (size_t)x->count * x->d->ext + GUARD;
  x->req = MPI_REQUEST_NULL;
  x->rc = MPI_SUCCESS;
  x->sbuf = x->scopy = x->rbuf = x->rinit = x->want = NULL;
  x->checked = x->bad = 0;
  x->null_recv = x->kind == K_REDUCE && !x->is_root && below(lrng, 4) == 0;
  /* receive buffer: a pattern, with this process's operand in it where it goes in place
   * (a bcast's root: its data) */
  if (!x->null_recv) {
    x->rbuf = xmalloc(x->span);
    pattern(x->rbuf, x->span,
            mix64(g_seed ^ ((uint64_t)round << 24) ^ ((uint64_t)x->j << 8) ^ 0xaa) ^
                (uint64_t)g_rank);
    if (x->count > 0 && ((x->kind == K_BCAST && x->cr == x->root) || uses_inplace(x)))
      gen_operand(x, round, x->cr, x->rbuf);
    x->rinit = xmalloc(x->span);
    memcpy(x->rinit, x->rbuf, x->span);
  }
  /* send buffer (with a guard: nothing may write it) */
  sendside = x->kind != K_BCAST && !uses_inplace(x);
  if (sendside) {
    x->sbuf = xmalloc(x->span);
    pattern(x->sbuf, x->span,
            mix64(g_seed ^ ((uint64_t)round << 24) ^ ((uint64_t)x->j << 8) ^ 0x55) ^
                (uint64_t)g_rank);
    if (x->count > 0) gen_operand(x, round, x->cr, x->sbuf);
    x->scopy = xmalloc(x->span);
    memcpy(x->scopy, x->sbuf, x->span);
  }
}

static void release(struct coll *x) {
  free(x->sbuf);
  free(x->scopy);
  free(x->rbuf);
  free(x->rinit);
  free(x->want);
  x->sbuf = x->scopy = x->rbuf = x->rinit = x->want = NULL;
}

/* This process's call of x, in plan order. */
static void issue(struct coll *x, int round) {
  char w[600];
  const void *sb = x->sbuf;
  MPI_Datatype dt = x->d->dt;
  MPI_Op op = ops[x->o];
  int rc;
  describe(x, round, w, sizeof w);
  set_step("issuing %s", w);
  if (uses_inplace(x)) sb = MPI_IN_PLACE;
  switch (x->kind) {
    case K_REDUCE:
      rc = x->nb ? MPI_Ireduce(sb, x->rbuf, x->count, dt, op, x->root, x->c, &x->req)
                 : MPI_Reduce(sb, x->rbuf, x->count, dt, op, x->root, x->c);
      break;
    case K_ALLREDUCE:
      rc = x->nb ? MPI_Iallreduce(sb, x->rbuf, x->count, dt, op, x->c, &x->req)
                 : MPI_Allreduce(sb, x->rbuf, x->count, dt, op, x->c);
      break;
    default:
      rc = x->nb ? MPI_Ibcast(x->rbuf, x->count, dt, x->root, x->c, &x->req)
                 : MPI_Bcast(x->rbuf, x->count, dt, x->root, x->c);
  }
  if (rc != MPI_SUCCESS) {
    char es[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, es, &len);
    fail("%s: the call returned %d (%s)", w, rc, es);
    if (x->nb) { /* the others would wait on it forever */
      fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 4);
    }
    x->rc = rc;
    return;
  }
  if (x->nb) {
    if (x->req == MPI_REQUEST_NULL) {
      fail("%s: returned MPI_SUCCESS and MPI_REQUEST_NULL", w);
      return;
    }
    x->pending = 1;
  }
}

/* ---------------------------------------------------------------- checks */

/* x's buffers, once x is complete (again = 0: at its completion; again = 1: at the round's
 * end, so a write that lands after the completion is caught too). */
static void check(struct coll *x, int round, int again) {
  char w[600], why[400];
  const char *when = again ? " (at the round's end: right when it completed)" : "", *what;
  int lands;
  if (x->rc != MPI_SUCCESS || x->bad) return; /* said already */
  describe(x, round, w, sizeof w);
  x->checked = 1;
  if (x->sbuf != NULL && !compare(x, x->sbuf, x->scopy, x->span, 0, why, sizeof why)) {
    fail("%s: the sendbuf changed%s: %s", w, when, why);
    x->bad = 1;
  }
  if (x->rbuf == NULL) return;
  lands = !((x->kind == K_REDUCE && !x->is_root) || (x->kind == K_BCAST && x->cr == x->root));
  what = lands                 ? "wrong result"
         : x->kind == K_REDUCE ? "a non-root's recvbuf changed"
                               : "the root's buffer changed";
  if (x->want == NULL) {
    if (lands)
      x->want = expected(x, round);
    else {
      x->want = xmalloc(x->span);
      memcpy(x->want, x->rinit, x->span);
    }
  }
  if (!compare(x, x->rbuf, x->want, x->span, lands, why, sizeof why)) {
    fail("%s: %s%s: %s", w, what, when, why);
    x->bad = 1;
  }
}

/* ---------------------------------------------------------------- completion */

static const char *how_name[] = {"MPI_Wait",         "MPI_Waitall",      "MPI_Waitany",
                                 "MPI_Waitsome",     "MPI_Test loop",    "MPI_Testall loop",
                                 "MPI_Testany loop", "MPI_Testsome loop"};

static void pause_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
  nanosleep(&ts, NULL);
}

/* Mark the collectives idx[] whose entries of arr[] became MPI_REQUEST_NULL as complete;
 * returns how many.  (idx[i] < 0: a null entry of our own.) */
static int collect(struct coll *plan, const int *idx, MPI_Request *arr, int n, int round,
                   const char *how) {
  int i, done = 0;
  for (i = 0; i < n; i++) {
    struct coll *x;
    if (idx[i] < 0) continue;
    x = &plan[idx[i]];
    if (arr[i] == MPI_REQUEST_NULL && x->pending) {
      x->pending = 0;
      x->req = MPI_REQUEST_NULL;
      done++;
    } else if (arr[i] != x->req) {
      char w[600];
      describe(x, round, w, sizeof w);
      fail("%s: %s changed the request handle without completing it", w, how);
      x->req = arr[i];
    }
  }
  return done;
}

/* A completion call went wrong: say so, naming the first collective of its subset. */
static void complete_fail(struct coll *plan, const int *idx, int n, int round, const char *how,
                          const char *fmt, ...) {
  char w[600], what[300];
  va_list ap;
  int i;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  for (i = 0; i < n; i++)
    if (idx[i] >= 0) {
      describe(&plan[idx[i]], round, w, sizeof w);
      fail("%s: %s of %d requests (this one among them): %s", w, how, n, what);
      return;
    }
  fail("seed=%llu round=%d rank=%d: %s: %s", (unsigned long long)g_seed, round, g_rank, how, what);
}

static const char *errstr(int rc, char *buf) {
  int len = 0;
  buf[0] = '\0';
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) snprintf(buf, MPI_MAX_ERROR_STRING, "?");
  return buf;
}

/* Complete every pending request, in a random order and by random calls. */
static void complete_all(struct coll *plan, int k, int round, uint64_t *lrng) {
  int order[MAXK_LIMIT], npend = 0, i;
  for (i = 0; i < k; i++)
    if (plan[i].pending) order[npend++] = i;
  for (i = npend - 1; i > 0; i--) { /* shuffle */
    int s = (int)below(lrng, (uint64_t)i + 1), t = order[i];
    order[i] = order[s];
    order[s] = t;
  }
  while (npend > 0) {
    int how = (int)below(lrng, 8), n, idx[MAXK_LIMIT + 1], outidx[MAXK_LIMIT + 1], rc = MPI_SUCCESS;
    int flag = 0, one = 0, outc = 0, nnull;
    MPI_Request arr[MAXK_LIMIT + 1], before[MAXK_LIMIT + 1];
    MPI_Status sts[MAXK_LIMIT + 1];
    char es[MPI_MAX_ERROR_STRING];
    double deadline = now_s() + g_limit;
    char w[600];
    /* a subset: the first n of the remaining order, in the order drawn */
    n = how == 0 || how == 4 ? 1 : 1 + (int)below(lrng, (uint64_t)npend);
    for (i = 0; i < n; i++) {
      idx[i] = order[i];
      arr[i] = plan[order[i]].req;
    }
    nnull = how != 0 && how != 4 && below(lrng, 4) == 0; /* a null entry among them */
    if (nnull) {
      int at = (int)below(lrng, (uint64_t)n + 1);
      memmove(&idx[at + 1], &idx[at], sizeof idx[0] * (size_t)(n - at));
      memmove(&arr[at + 1], &arr[at], sizeof arr[0] * (size_t)(n - at));
      idx[at] = -1;
      arr[at] = MPI_REQUEST_NULL;
      n++;
    }
    if (below(lrng, 4) == 0) pause_us(below(lrng, 2000)); /* computing before it waits */
    memcpy(before, arr, sizeof arr[0] * (size_t)n);
    describe(&plan[order[0]], round, w, sizeof w);
    set_step("%s of %d requests, the first: %s", how_name[how], n, w);
    switch (how) {
      case 0:
        rc = MPI_Wait(&arr[0], &sts[0]);
        break;
      case 1:
        rc = MPI_Waitall(n, arr, sts);
        break;
      case 2:
        rc = MPI_Waitany(n, arr, &one, &sts[0]);
        if (rc == MPI_SUCCESS && (one == MPI_UNDEFINED || one < 0 || one >= n || idx[one] < 0 ||
                                  arr[one] != MPI_REQUEST_NULL))
          complete_fail(plan, idx, n, round, how_name[how], "returned index %d", one);
        break;
      case 3:
        rc = MPI_Waitsome(n, arr, &outc, outidx, sts);
        if (rc == MPI_SUCCESS && (outc == MPI_UNDEFINED || outc < 1))
          complete_fail(plan, idx, n, round, how_name[how], "returned outcount %d", outc);
        break;
      default:
        for (;;) {
          if (how == 4)
            rc = MPI_Test(&arr[0], &flag, &sts[0]);
          else if (how == 5)
            rc = MPI_Testall(n, arr, &flag, sts);
          else if (how == 6) {
            rc = MPI_Testany(n, arr, &one, &flag, &sts[0]);
            if (rc == MPI_SUCCESS && flag && (one < 0 || one >= n || idx[one] < 0)) {
              complete_fail(plan, idx, n, round, how_name[how], "flag set with index %d", one);
              break;
            }
          } else {
            rc = MPI_Testsome(n, arr, &outc, outidx, sts);
            flag = rc == MPI_SUCCESS && outc != MPI_UNDEFINED && outc > 0;
            if (rc == MPI_SUCCESS && outc == MPI_UNDEFINED) {
              complete_fail(plan, idx, n, round, how_name[how],
                            "outcount MPI_UNDEFINED with active requests");
              break;
            }
          }
          if (rc != MPI_SUCCESS || flag) break;
          if (how == 5 && memcmp(before, arr, sizeof arr[0] * (size_t)n) != 0) {
            complete_fail(plan, idx, n, round, how_name[how],
                          "flag false, yet request handles changed");
            memcpy(arr, before, sizeof arr[0] * (size_t)n);
          }
          if (now_s() > deadline) {
            complete_fail(plan, idx, n, round, how_name[how], "not complete after %.0f s", g_limit);
            say("FAIL mix_app seed=%llu round=%d rank=%d: giving up after %.0f s in %s",
                (unsigned long long)g_seed, round, g_rank, g_limit, how_name[how]);
            MPI_Abort(MPI_COMM_WORLD, 3);
          }
          if (below(lrng, 8) == 0) pause_us(below(lrng, 200));
        }
    }
    if (rc != MPI_SUCCESS) {
      int e;
      complete_fail(plan, idx, n, round, how_name[how], "returned %d (%s)", rc, errstr(rc, es));
      for (e = 0; e < n; e++) /* MPI_ERR_IN_STATUS: which */
        if (idx[e] >= 0 && (how == 1 || how == 5) && sts[e].MPI_ERROR != MPI_SUCCESS) {
          describe(&plan[idx[e]], round, w, sizeof w);
          fail("%s: status MPI_ERROR %d", w, sts[e].MPI_ERROR);
          plan[idx[e]].rc = sts[e].MPI_ERROR;
        }
      /* the job cannot go on consistently: the requests' state is unknown */
      fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 4);
    }
    {
      int got = collect(plan, idx, arr, n, round, how_name[how]), want = 1, q;
      if (how == 1 || how == 5) want = n - nnull;
      if (how == 3 || how == 7) {
        want = outc;
        for (q = 0; q < outc; q++)
          if (outidx[q] < 0 || outidx[q] >= n || idx[outidx[q]] < 0 ||
              arr[outidx[q]] != MPI_REQUEST_NULL)
            complete_fail(plan, idx, n, round, how_name[how],
                          "index %d of %d names entry %d, not one it completed", q, outc,
                          outidx[q]);
      }
      if (got != want)
        complete_fail(plan, idx, n, round, how_name[how], "completed %d requests, said %d", got,
                      want);
      for (q = 0; q < n; q++) /* each one checked as soon as it is complete */
        if (idx[q] >= 0 && !plan[idx[q]].pending && !plan[idx[q]].checked)
          check(&plan[idx[q]], round, 0);
    }
    /* the remaining order: drop the completed ones */
    {
      int m = 0;
      for (i = 0; i < npend; i++)
        if (plan[order[i]].pending) order[m++] = order[i];
      npend = m;
    }
  }
}

/* ---------------------------------------------------------------- a round */

static void print_plan(const struct coll *plan, int k, int round) {
  int j;
  say("plan seed=%llu round=%d: %d collectives", (unsigned long long)g_seed, round, k);
  for (j = 0; j < k; j++) {
    const struct coll *x = &plan[j];
    say("plan seed=%llu round=%d coll=%d: %s comm=%s rootsel=%llu count=%d %s%s%s%s",
        (unsigned long long)g_seed, round, j, callname[x->nb][x->kind], cname[x->comm],
        (unsigned long long)(x->rootsel % 1000), x->count, types[x->t].name,
        x->kind == K_BCAST ? "" : "_", x->kind == K_BCAST ? "" : oname[x->o],
        x->inplace ? " in_place" : "");
  }
}

static void run_round(int round, const struct opts *op) {
  static struct coll plan[MAXK_LIMIT];
  uint64_t lrng =
      mix64(g_seed ^ 0x6c6f63616cULL) ^ mix64(((uint64_t)round << 16) + (uint64_t)g_rank + 1);
  int k = draw_plan(round, op, plan), j, before = g_nfail, nk[NKIND] = {0, 0, 0}, nnb = 0;
  if (g_verbose && g_rank == 0) print_plan(plan, k, round);
  for (j = 0; j < k; j++) setup(&plan[j], round, &lrng);
  for (j = 0; j < k; j++) {
    if (below(&lrng, 8) == 0) pause_us(below(&lrng, 1000));
    issue(&plan[j], round);
    if (!plan[j].nb) check(&plan[j], round, 0);
    nk[plan[j].kind]++;
    nnb += plan[j].nb;
  }
  complete_all(plan, k, round, &lrng);
  set_step("checking round %d", round);
  for (j = 0; j < k; j++) {
    check(&plan[j], round, 1);
    release(&plan[j]);
  }
  if (g_nfail == before)
    say("PASS mix_app seed=%llu round=%d rank=%d: %d collectives (%d reduce, %d allreduce, "
        "%d bcast; %d nonblocking)",
        (unsigned long long)g_seed, round, g_rank, k, nk[K_REDUCE], nk[K_ALLREDUCE], nk[K_BCAST],
        nnb);
}

/* ---------------------------------------------------------------- main */

static void usage(void) {
  if (g_rank == 0)
    fprintf(stderr,
            "usage: mix_app [-s SEED] [-r ROUNDS] [-R FIRST] [-K MAXK] [-B MAXBYTES] "
            "[-k reduce,allreduce,bcast] [-C world|dup|half|rev|parity|one|self] [-I] [-v]\n");
  MPI_Finalize();
  exit(2);
}

static int parse_kinds(const char *s) {
  int m = 0, k;
  char buf[128], *tok, *save = NULL;
  snprintf(buf, sizeof buf, "%s", s);
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    for (k = 0; k < NKIND && strcmp(tok, kname[k]) != 0; k++) {
    }
    if (k == NKIND) return 0;
    m |= 1 << k;
  }
  return m;
}

int main(int argc, char **argv) {
  struct opts op = {10, 0, 16, 7, -1, 300000};
  int i, round, total = 0;
  pthread_t wd;
  const char *e;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &g_level);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-v")) {
      g_verbose = 1;
      continue;
    }
    if (!strcmp(a, "-I")) {
      g_inplace_any = 1;
      continue;
    }
    if (v == NULL) usage();
    i++;
    if (!strcmp(a, "-s"))
      g_seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "-r"))
      op.rounds = atoi(v);
    else if (!strcmp(a, "-R"))
      op.first = atoi(v);
    else if (!strcmp(a, "-K"))
      op.maxk = atoi(v);
    else if (!strcmp(a, "-B"))
      op.maxbytes = atol(v);
    else if (!strcmp(a, "-k"))
      op.kinds = parse_kinds(v);
    else if (!strcmp(a, "-C")) {
      for (op.only_comm = 0; op.only_comm < NCOMM && strcmp(v, cname[op.only_comm]);
           op.only_comm++) {
      }
      if (op.only_comm == NCOMM) usage();
    } else
      usage();
  }
  if (op.maxk < 1 || op.maxk > MAXK_LIMIT || op.kinds == 0 || op.maxbytes < 1 || op.rounds < 0)
    usage();
  e = getenv("DRED_TEST_TIMEOUT_SCALE");
  g_limit = STEP_LIMIT_S * (e && atof(e) > 0 ? atof(e) : 1.0);
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  set_step("start");
  pthread_create(&wd, NULL, watchdog, NULL);
  pthread_detach(wd);

  make_types();
  make_comms();
  for (round = op.first; round < op.first + op.rounds; round++) run_round(round, &op);

  /* the verdict by point-to-point messages: no collective under test decides it */
  set_step("tallying the failures");
  if (g_rank == 0) {
    total = g_nfail;
    for (i = 1; i < g_size; i++) {
      int n = 0;
      MPI_Recv(&n, 1, MPI_INT, i, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      total += n;
    }
    for (i = 1; i < g_size; i++) MPI_Send(&total, 1, MPI_INT, i, 78, MPI_COMM_WORLD);
    if (total == 0)
      say("ALL PASSED mix_app (P=%d)", g_size);
    else
      say("FAILED mix_app (P=%d): %d failures, seed %llu", g_size, total,
          (unsigned long long)g_seed);
  } else {
    MPI_Send(&g_nfail, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
    MPI_Recv(&total, 1, MPI_INT, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  free_comms();
  free_types();
  pthread_mutex_lock(&step_mu);
  g_in_mpi_finalize = 1;
  pthread_mutex_unlock(&step_mu);
  set_step("MPI_Finalize");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
