/*
 * allreduce.c -- dred_iallreduce / dred_allreduce against the MPI definition.
 *
 *   dredrun -n P mpi_allreduce [-s SEED] [-l COUNT]
 *
 * What it checks: a table of op x type pairs (SUM, PROD, MIN, MAX, LAND, BOR, BXOR, BAND on
 * int, long, float, double; MAXLOC/MINLOC on MPI_DOUBLE_INT; a derived type under SUM; the
 * non-commutative affine user op) at counts that take the inline path and the large path
 * (one and several DATA pieces), every other member passing MPI_IN_PLACE; the result of
 * every member equals the reference and is bit-identical on every member; then the same on
 * sub-communicators (MPI_Comm_split); then reduce, allreduce and bcast with explicit tags,
 * in flight together, issued in a different shuffled order on every member; then
 * mismatches (kind, count) that must end DRED_ERR_MISMATCH everywhere, followed by a
 * collective that must work.
 *
 * The reference is ref_reduce (mpitest.h: point to point, rank order) at member 0, sent to
 * every member by point to point: MPICH 4.0.2's own collectives are wrong on uneven
 * simulated layouts.  Floating values are small integers, so every order sums exactly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dred.h"
#include "mpitest.h"

struct di { double v; int i; };

typedef struct {
  const char *name;
  int kind; /* 0 int, 1 long, 2 float, 3 double, 4 double_int, 5 derived (2 ints), 6 affine */
  MPI_Op op;
} pair_t;

static MPI_Datatype t_affine, t_pair;
static MPI_Op op_affine;

static size_t esize(int kind) {
  static const size_t s[] = {sizeof(int), sizeof(long), sizeof(float), sizeof(double),
                             sizeof(struct di), 2 * sizeof(int), sizeof(struct affine)};
  return s[kind];
}

static MPI_Datatype dtype(int kind) {
  MPI_Datatype t[] = {MPI_INT, MPI_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_DOUBLE_INT, t_pair, t_affine};
  return t[kind];
}

static void gen(int kind, void *buf, int n, uint64_t seed, int rank) {
  for (int i = 0; i < n; i++) {
    uint64_t h = mix64(seed ^ ((uint64_t)rank << 40) ^ (uint64_t)i);
    switch (kind) {
      case 0: ((int *)buf)[i] = (int)(h % 7) - 3 + (h % 11 == 0); break;
      case 1: ((long *)buf)[i] = (long)(h % 1000003) - 500000; break;
      case 2: ((float *)buf)[i] = (float)((int)(h % 9) - 4); break;
      case 3: ((double *)buf)[i] = (double)((int)(h % 2001) - 1000); break;
      case 4:
        ((struct di *)buf)[i].v = (double)(h % 3);
        ((struct di *)buf)[i].i = (int)((h >> 20) % 5) + rank;
        break;
      case 5: ((int *)buf)[2 * i] = (int)(h % 100); ((int *)buf)[2 * i + 1] = (int)(h >> 32) % 100; break;
      default:
        ((struct affine *)buf)[i].a = 1 + (unsigned)(h % 5);
        ((struct affine *)buf)[i].b = (unsigned)((h >> 9) % 7);
        break;
    }
  }
}

/* Values equal (pair types: value and index only; their padding is not data). */
static int same(int kind, const void *a, const void *b, int n) {
  if (kind == 4) {
    const struct di *x = a, *y = b;
    for (int i = 0; i < n; i++)
      if (x[i].v != y[i].v || x[i].i != y[i].i) return 0;
    return 1;
  }
  return memcmp(a, b, esize(kind) * (size_t)n) == 0;
}

/* rank 0's buffer to every rank of comm, point to point */
static void share0(void *buf, size_t bytes, MPI_Comm comm) {
  int r, p;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  for (size_t off = 0; off < bytes; off += 1 << 30) {
    int len = (int)(bytes - off < (1u << 30) ? bytes - off : 1u << 30);
    if (r == 0)
      send_all((char *)buf + off, len, 0, 77, comm);
    else
      MPI_Recv((char *)buf + off, len, MPI_BYTE, 0, 77, comm, MPI_STATUS_IGNORE);
  }
}

/* Every member's result equals member 0's (gathered at 0, point to point). */
static int identical(int kind, const void *res, int n, MPI_Comm comm) {
  int r, p, ok = 1;
  size_t bytes = esize(kind) * (size_t)n;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  if (r == 0) {
    void *other = malloc(bytes ? bytes : 1);
    /* in whichever order they come: no member sends again before share0 below */
    for (int k = 1; k < p; k++) {
      MPI_Recv(other, (int)bytes, MPI_BYTE, MPI_ANY_SOURCE, 78, comm, MPI_STATUS_IGNORE);
      if (!same(kind, res, other, n)) ok = 0;
    }
    free(other);
  } else {
    MPI_Send(res, (int)bytes, MPI_BYTE, 0, 78, comm);
  }
  share0(&ok, sizeof ok, comm);
  return ok;
}

/* One allreduce of every member's generated operand, checked against MPI's reduce and
 * across members: nonblocking with an auto tag, or (`blocking`) dred_allreduce, which may
 * take the fast lane (an operand by reference in the lane is a blocking call's alone). */
static void run_as(const pair_t *pp, int n, uint64_t seed, MPI_Comm comm, const char *where,
                   int blocking) {
  int r;
  MPI_Comm_rank(comm, &r);
  size_t bytes = esize(pp->kind) * (size_t)n;
  unsigned char *mine = calloc(1, bytes + 1), *res = calloc(1, bytes + 1), *ref = calloc(1, bytes + 1);
  char check[200];
  int inplace = r % 2 == 1, st;
  dred_future *f = NULL;
  gen(pp->kind, mine, n, seed, r);
  snprintf(check, sizeof check, "allreduce/%s/%s/n=%d", where, pp->name, n);
  set_step("%s", check);
  if (inplace) memcpy(res, mine, bytes);
  if (blocking)
    st = dred_allreduce(inplace ? MPI_IN_PLACE : mine, res, n, dtype(pp->kind), pp->op, comm);
  else
    st = dred_iallreduce(inplace ? MPI_IN_PLACE : mine, res, n, dtype(pp->kind), pp->op, comm,
                         DRED_TAG_AUTO, &f);
  if (st == DRED_OK && !blocking) {
    st = wait_bounded(f, 60, check);
    dred_future_free(f);
  }
  /* MPICH refuses predefined ops on derived types in MPI_Reduce_local: 2n ints instead */
  if (pp->kind == 5)
    ref_reduce(mine, ref, 2 * n, MPI_INT, pp->op, 0, comm);
  else
    ref_reduce(mine, ref, n, dtype(pp->kind), pp->op, 0, comm);
  share0(ref, bytes, comm);
  if (st != DRED_OK)
    fail("%s: rank %d status %s", check, r, dred_strerror(st));
  else if (!same(pp->kind, res, ref, n))
    fail("%s: rank %d result differs from the reference", check, r);
  if (!identical(pp->kind, res, n, comm)) {
    if (r == 0) fail("%s: members' results are not identical", check);
  } else if (st == DRED_OK && r == 0) {
    pass("%s", check);
  }
  free(mine); free(res); free(ref);
}

static void run(const pair_t *pp, int n, uint64_t seed, MPI_Comm comm, const char *where) {
  run_as(pp, n, seed, comm, where, 0);
}

/* Reduce, allreduce and bcast with explicit tags in flight together, each member issuing
 * them in its own shuffled order. */
static void mixed(uint64_t seed) {
  enum { N = 9 };
  const int counts[3] = {16, 4000, 70000};
  int *send[N], *recv[N], *ref[N], order[N];
  dred_future *f[N];
  char check[128];
  for (int i = 0; i < N; i++) {
    int n = counts[i % 3];
    send[i] = malloc(sizeof(int) * (size_t)n);
    recv[i] = calloc((size_t)n, sizeof(int));
    ref[i] = calloc((size_t)n, sizeof(int));
    gen(0, send[i], n, seed + (uint64_t)i, g_rank);
    order[i] = i;
  }
  for (int i = N - 1; i > 0; i--) { /* this member's own order */
    int j = (int)(mix64(seed ^ (uint64_t)(g_rank * 977 + i)) % (uint64_t)(i + 1)), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  set_step("mixed: issue");
  for (int x = 0; x < N; x++) {
    int i = order[x], n = counts[i % 3], tag = 5, st, root = (i / 3) % g_size;
    if (i / 3 == 0)
      st = dred_ireduce(send[i], recv[i], n, MPI_INT, MPI_SUM, root, g_comm, tag + i % 3, &f[i]);
    else if (i / 3 == 1)
      st = dred_iallreduce(send[i], recv[i], n, MPI_INT, MPI_SUM, g_comm, tag + i % 3, &f[i]);
    else {
      if (g_rank == root) memcpy(recv[i], send[i], sizeof(int) * (size_t)n);
      st = dred_ibcast(recv[i], n, MPI_INT, root, g_comm, tag + i % 3, &f[i]);
    }
    if (st != DRED_OK) {
      fail("mixed: call %d refused: %s", i, dred_strerror(st));
      f[i] = NULL;
    }
  }
  for (int i = 0; i < N; i++) {
    int n = counts[i % 3], root = (i / 3) % g_size, st;
    snprintf(check, sizeof check, "mixed/%s/tag=%d/n=%d", i / 3 == 0 ? "reduce" : i / 3 == 1 ? "allreduce" : "bcast",
             5 + i % 3, n);
    st = f[i] ? wait_bounded(f[i], 60, check) : -1;
    dred_future_free(f[i]);
    if (i / 3 == 2) {
      if (g_rank == root) memcpy(ref[i], send[i], sizeof(int) * (size_t)n);
      if (root != 0) { /* the root's data to member 0, then to all */
        if (g_rank == root) MPI_Send(ref[i], n, MPI_INT, 0, 79, g_comm);
        if (g_rank == 0) MPI_Recv(ref[i], n, MPI_INT, root, 79, g_comm, MPI_STATUS_IGNORE);
      }
    } else {
      ref_reduce(send[i], ref[i], n, MPI_INT, MPI_SUM, 0, g_comm);
    }
    share0(ref[i], sizeof(int) * (size_t)n, g_comm);
    if (st != DRED_OK)
      fail("%s: status %d", check, st);
    else if ((i / 3 != 0 || g_rank == root) && memcmp(recv[i], ref[i], sizeof(int) * (size_t)n))
      fail("%s: rank %d wrong result", check, g_rank);
    else if (g_rank == 0)
      pass("%s", check);
    free(send[i]); free(recv[i]); free(ref[i]);
  }
}

/* Members that disagree end with DRED_ERR_MISMATCH; the next collective works. */
static void mismatch(void) {
  int a[300] = {0}, b[300] = {0}, st;
  if (g_size < 2) return;
  set_step("mismatch/kind");
  for (int i = 0; i < 300; i++) a[i] = g_rank + i;
  /* the k-th auto call: an allreduce on member 0, a reduce elsewhere */
  if (g_rank == 0)
    st = dred_allreduce(a, b, 3, MPI_INT, MPI_SUM, g_comm);
  else
    st = dred_reduce(a, b, 3, MPI_INT, MPI_SUM, 0, g_comm);
  if (st != DRED_ERR_MISMATCH) fail("mismatch/kind: rank %d got %s", g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("mismatch/kind (allreduce vs reduce)");
  set_step("mismatch/kind-bcast");
  if (g_rank == g_size - 1)
    st = dred_bcast(a, 300, MPI_INT, 0, g_comm);
  else
    st = dred_allreduce(a, b, 300, MPI_INT, MPI_SUM, g_comm);
  if (st != DRED_ERR_MISMATCH) fail("mismatch/kind-bcast: rank %d got %s", g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("mismatch/kind (bcast vs allreduce)");
  /* the same within a fast-lane post (3 ints): the bcast's member watches for its root's
   * post, and finds an allreduce's there -- it must not wait for one that never comes */
  set_step("mismatch/kind-bcast-small");
  if (g_rank == g_size - 1)
    st = dred_bcast(a, 3, MPI_INT, 0, g_comm);
  else
    st = dred_allreduce(a, b, 3, MPI_INT, MPI_SUM, g_comm);
  if (st != DRED_ERR_MISMATCH)
    fail("mismatch/kind-bcast-small: rank %d got %s", g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("mismatch/kind (a small bcast vs allreduce)");
  set_step("mismatch/kind-large");
  {
    /* a reduce large enough for node partials (lib/paths/partial.c), the last member calling
     * an allreduce instead: on its node the others wait in their partial slot for a member
     * that never comes there, give up after DRED_PARTIAL_WAIT_NS and go on alone */
    int n = 300000, *x = calloc((size_t)n, sizeof *x), *y = calloc((size_t)n, sizeof *y);
    if (x == NULL || y == NULL) fail("mismatch/kind-large: out of memory");
    else if (g_rank == g_size - 1)
      st = dred_allreduce(x, y, n, MPI_INT, MPI_SUM, g_comm);
    else
      st = dred_reduce(x, y, n, MPI_INT, MPI_SUM, 0, g_comm);
    if (x != NULL && y != NULL && st != DRED_ERR_MISMATCH)
      fail("mismatch/kind-large: rank %d got %s", g_rank, dred_strerror(st));
    else if (x != NULL && y != NULL && g_rank == 0)
      pass("mismatch/kind (a large reduce vs allreduce)");
    free(x);
    free(y);
  }
  set_step("mismatch/count");
  st = dred_allreduce(a, b, g_rank == 1 ? 299 : 300, MPI_INT, MPI_SUM, g_comm);
  if (st != DRED_ERR_MISMATCH) fail("mismatch/count: rank %d got %s", g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("mismatch/count");
  set_step("mismatch/after");
  st = dred_allreduce(a, b, 300, MPI_INT, MPI_SUM, g_comm);
  if (st != DRED_OK || b[0] != g_size * (g_size - 1) / 2)
    fail("mismatch/after: rank %d got %s, b[0] %d", g_rank, dred_strerror(st), b[0]);
  else if (g_rank == 0) pass("mismatch/after: the next allreduce works");
}

/* Large allreduces whose members do not all wait the same way (with the node relay on
 * several nodes, a follower copies its result when it waits, or the runtime thread does it
 * once nobody does): computing before the wait, polling dred_future_is_done, a future freed
 * unwaited; then members that disagree on the count (a follower that disagrees with its
 * leader goes to dred-master: MISMATCH everywhere) and an allreduce after them. */
static void relay_waits(int n) {
  double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
  double *lost = malloc(sizeof(double) * (size_t)n); /* never freed: see the end */
  const char *how[] = {"computing", "polled", "unwaited", "after"};
  int st;
  for (int i = 0; i < n; i++) a[i] = g_rank + (double)i;
  for (int w = 0; w < 4; w++) {
    dred_future *f = NULL;
    double *dst = w == 2 ? lost : b;
    int bad = 0;
    set_step("relay/%s", how[w]);
    for (int i = 0; i < n; i++) dst[i] = -1;
    st = dred_iallreduce(a, dst, n, MPI_DOUBLE, MPI_SUM, g_comm, 900 + w, &f);
    if (st != DRED_OK) {
      fail("relay/%s: rank %d: dred_iallreduce %s", how[w], g_rank, dred_strerror(st));
      continue;
    }
    if (w == 2) { /* never waited: the runtime thread ends it; its buffer stays valid */
      dred_future_free(f);
      continue;
    }
    if (w == 0) {
      double t0 = now_s();
      while (now_s() - t0 < 0.2) { /* computing */ }
    }
    if (w == 1) {
      double t0 = now_s();
      while (dred_future_is_done(f) == 0 && now_s() - t0 < wait_limit(60)) { /* polling */ }
    }
    st = wait_bounded(f, 60, how[w]);
    dred_future_free(f);
    for (int i = 0; i < n && !bad; i++)
      bad = b[i] != (double)g_size * (g_size - 1) / 2 + (double)g_size * i;
    if (st != DRED_OK || bad)
      fail("relay/%s: rank %d got %s%s", how[w], g_rank, dred_strerror(st), bad ? ", a wrong result" : "");
    else if (g_rank == 0)
      pass("relay/%s: %d doubles", how[w], n);
  }
  set_step("relay/mismatch");
  st = dred_allreduce(a, lost, g_rank == g_size - 1 ? n - 1 : n, MPI_DOUBLE, MPI_SUM, g_comm);
  if (st != DRED_ERR_MISMATCH) fail("relay/mismatch: rank %d got %s", g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("relay/mismatch: one member's count differs");
  set_step("relay/after-mismatch");
  st = dred_allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, g_comm);
  if (st != DRED_OK || b[n - 1] != (double)g_size * (g_size - 1) / 2 + (double)g_size * (n - 1))
    fail("relay/after-mismatch: rank %d got %s", g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("relay/after-mismatch");
  free(a);
  free(b);
  /* `lost` stays allocated: the unwaited collective may write it until it ends, at the
   * latest in dred_finalize */
}

/* A large allreduce (1 MiB) whose slot spills as member 0 arrives: the last member has
 * no room in its pool for its operand (the application took it all with dred_alloc_mem),
 * so it arrives first and spills the slot; member 0 arrives 100 ms later.  With
 * DRED_MEET_PIECES on, member 0's copy for its peers is made after its arrival, so the
 * spill finds that block still unwritten -- it held stale bytes, written here on purpose
 * -- and member 0 must take its operand from sendbuf into what dred-master reads, not
 * from the block.  Every member's result is checked. */
static void spill_at_arrival(void) {
  enum { N = 131072, MAXB = 4096 };
  double *a = malloc(sizeof(double) * N), *b = malloc(sizeof(double) * N);
  void *blk[MAXB];
  int nblk = 0, st, bad = 0;
  if (g_size < 2 || a == NULL || b == NULL) {
    free(a);
    free(b);
    return;
  }
  set_step("spill-at-arrival");
  for (int i = 0; i < N; i++) a[i] = g_rank + (double)(i % 1000);
  if (g_rank == 0) { /* stale bytes where its own copy is likely to go */
    void *p = NULL;
    if (dred_alloc_mem((size_t)8 * N * 4, &p) == DRED_OK) {
      memset(p, 0x5c, (size_t)8 * N * 4);
      dred_free_mem(p);
    }
  }
  if (g_rank == g_size - 1) nblk = pool_take_all(blk, MAXB);
  MPI_Barrier(g_comm);
  if (g_rank == 0) {
    double t0 = now_s();
    while (now_s() - t0 < 0.1) {}
  }
  st = dred_allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, g_comm);
  for (int i = 0; i < N && !bad; i++)
    bad = b[i] != (double)g_size * (g_size - 1) / 2 + (double)g_size * (i % 1000);
  if (st != DRED_OK || bad)
    fail("spill-at-arrival: rank %d got %s%s (b[0] %g)", g_rank, dred_strerror(st),
         bad ? ", a wrong result" : "", b[0]);
  else if (g_rank == 0)
    pass("spill-at-arrival: the last member's pool full, member 0 late");
  for (int k = 0; k < nblk; k++) dred_free_mem(blk[k]);
  free(a);
  free(b);
}

int main(int argc, char **argv) {
  uint64_t seed = 4242;
  int large = 0; /* -l COUNT: a sample of pairs at COUNT elements too (the node relay) */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    if (!strcmp(argv[i], "-l") && i + 1 < argc) large = atoi(argv[++i]);
  }
  test_init(&argc, &argv, "allreduce");
  affine_create(&t_affine, &op_affine);
  MPI_Type_contiguous(2, MPI_INT, &t_pair);
  MPI_Type_commit(&t_pair);
  const pair_t pairs[] = {
      {"int_sum", 0, MPI_SUM},     {"int_prod", 0, MPI_PROD},     {"int_min", 0, MPI_MIN},
      {"int_max", 0, MPI_MAX},     {"int_land", 0, MPI_LAND},     {"int_bor", 0, MPI_BOR},
      {"int_bxor", 0, MPI_BXOR},   {"long_sum", 1, MPI_SUM},      {"long_band", 1, MPI_BAND},
      {"float_sum", 2, MPI_SUM},   {"float_max", 2, MPI_MAX},     {"double_sum", 3, MPI_SUM},
      {"double_min", 3, MPI_MIN},  {"double_int_maxloc", 4, MPI_MAXLOC},
      {"double_int_minloc", 4, MPI_MINLOC}, {"contig2int_sum", 5, MPI_SUM},
      {"affine_noncomm", 6, MPI_OP_NULL}};
  const int counts[] = {0, 1, 100, 3000, 150000};
  int npairs = (int)(sizeof pairs / sizeof pairs[0]);
  for (int k = 0; k < npairs; k++) {
    pair_t p = pairs[k];
    if (p.kind == 6) p.op = op_affine;
    for (int c = 0; c < 5; c++) {
      if (c == 4 && k % 4 != 0 && p.kind != 6) continue; /* the large path: a sample */
      run(&p, counts[c], seed + (uint64_t)(k * 10 + c), g_comm, "world");
    }
  }
  /* Blocking calls: on one node the fast lane takes them, operands by reference from
   * 88 B; with 3 members or more, a core each (DRED_MEET_PIECES=1 forces it), operands of
   * at most 128 KiB and over 32 KiB together, folded in parts claimed by the members
   * (about 24 KiB each, parts of unequal size; a sample near 128 KiB, one past it, which
   * the slot takes); the same sizes nonblocking go to the slot.  Every pair at 24 KiB, so
   * that every op and type is folded in parts. */
  for (int k = 0; k < npairs; k++) {
    pair_t p = pairs[k];
    if (p.kind == 6) p.op = op_affine;
    run_as(&p, 24000 / (int)esize(p.kind) + 1, seed + 300 + (uint64_t)k, g_comm, "blocking", 1);
    if (k % 4 == 0 || p.kind == 6) run_as(&p, 30, seed + 400 + (uint64_t)k, g_comm, "blocking", 1);
    if (k % 5 == 0 || p.kind == 6) {
      run_as(&p, 131072 / (int)esize(p.kind) - 1, seed + 450 + (uint64_t)k, g_comm, "blocking", 1);
      run_as(&p, 131072 / (int)esize(p.kind) + 1, seed + 460 + (uint64_t)k, g_comm, "blocking", 1);
    }
  }
  /* Large blocking calls: from 512 KiB, where every process has a core (DRED_MEET_PIECES=1
   * forces it), a member not in place folds its own operand from sendbuf and copies in
   * only the chunks its peers fold (lib/paths/meetwork.c, home_give); one member a few
   * milliseconds late in turn, so that its peers run out of chunks and take over the top
   * of its home.  Odd counts: chunks of unequal size; the smaller from 128 KiB for 4-byte
   * elements (PIECES_MIN_BLOCKING), one chunk per member. */
  for (int k = 0; k < npairs; k++) {
    pair_t p = pairs[k];
    if (p.kind == 6) p.op = op_affine;
    if (k % 3 != 0 && p.kind != 6) continue;
    if (g_rank == k % g_size) usleep(3000);
    run_as(&p, 150001, seed + 500 + (uint64_t)k, g_comm, "blocking-large", 1);
    run_as(&p, 40001, seed + 600 + (uint64_t)k, g_comm, "blocking-large", 1);
  }
  /* -l: int sum, double sum (reduced before the relay), the non-commutative op, a type
   * with holes (MAXLOC's); nonblocking, and blocking (on one node, results the cache may
   * not hold are written past it: lib/shm/copy.c, "A large result") */
  if (large > 0)
    for (int k = 0; k < npairs; k++) {
      pair_t p = pairs[k];
      if (p.kind == 6) p.op = op_affine;
      if (k != 0 && k != 11 && k != 13 && p.kind != 6) continue;
      run(&p, large, seed + 700 + (uint64_t)k, g_comm, "world");
      run_as(&p, large + 1, seed + 750 + (uint64_t)k, g_comm, "world-blocking", 1);
    }
  if (g_size >= 3) { /* sub-communicators: evens and odds, reversed order */
    MPI_Comm sub;
    MPI_Comm_split(g_comm, g_rank % 2, g_size - g_rank, &sub);
    pair_t p1 = pairs[0], p2 = pairs[npairs - 1];
    p2.op = op_affine;
    run(&p1, 100, seed + 1000, sub, "split");
    run(&p1, 70000, seed + 1001, sub, "split");
    run(&p2, 5000, seed + 1002, sub, "split");
    run_as(&p2, 3001, seed + 1003, sub, "split-blocking", 1);
    MPI_Comm_free(&sub);
  }
  mixed(seed + 5000);
  mismatch();
  spill_at_arrival();
  if (large > 0) relay_waits(large);
  MPI_Type_free(&t_pair);
  affine_free(&t_affine, &op_affine);
  return test_finish();
}
