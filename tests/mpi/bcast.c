/*
 * bcast.c -- dred_ibcast / dred_bcast against the MPI definition.
 *
 *   dredrun -n P mpi_bcast [-s SEED] [-l COUNT]
 *
 * What it checks: roots 0, P-1 and P/2; MPI_INT, MPI_DOUBLE, MPI_DOUBLE_INT and a vector
 * type with holes (the holes of every member's buffer must keep what they held: the type
 * travels packed); counts from 0 through the inline path to several DATA pieces; every
 * member's buffer must equal the root's.  Then nonblocking bcasts with explicit tags in
 * flight together, waited for in reverse; then members that describe the same data with
 * different counts and datatypes of one type signature (4n MPI_INT at the root, n
 * contiguous(4, MPI_INT) elsewhere; the holed vector against plain ints both ways: all
 * reduced to the root's ints), and type signatures that differ (MPI_INT against MPI_FLOAT:
 * MISMATCH somewhere, no hang); then a root mismatch (DRED_ERR_MISMATCH at the
 * member that disagrees, no hang anywhere) and one where nobody calls itself the root
 * (MISMATCH everywhere), each followed by a bcast that must work, small and large (a
 * node relay's across nodes); on a sub-communicator too; then a member with no pool room
 * naming itself the root after others were served (mismatch_noplace).
 * The expected data is the root's, sent to member 0 and on to all by point to point.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dred.h"
#include "mpitest.h"

struct di { double v; int i; };
static MPI_Datatype t_vec; /* 2 ints out of every 3 */

static size_t esize(int kind) {
  static const size_t s[] = {sizeof(int), sizeof(double), sizeof(struct di), 3 * sizeof(int)};
  return s[kind];
}
static const char *kname[] = {"int", "double", "double_int", "vector_holes"};

static void gen(int kind, unsigned char *buf, int n, uint64_t seed) {
  for (size_t i = 0; i < esize(kind) * (size_t)n; i++) buf[i] = (unsigned char)mix64(seed + i);
  if (kind == 2) /* a defined padding is not required: compare values only */
    for (int i = 0; i < n; i++) ((struct di *)buf)[i].v = (double)(mix64(seed ^ (uint64_t)i) % 1000);
}

/* root's buffer -> everyone, point to point */
static void from_root(void *buf, size_t bytes, int root, MPI_Comm comm) {
  int r, p;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  if (r == root) {
    send_all(buf, (int)bytes, root, 81, comm);
  } else {
    MPI_Recv(buf, (int)bytes, MPI_BYTE, root, 81, comm, MPI_STATUS_IGNORE);
  }
}

static int same(int kind, const unsigned char *a, const unsigned char *b, int n) {
  if (kind == 2) {
    for (int i = 0; i < n; i++) {
      const struct di *x = (const void *)(a + i * sizeof(struct di)), *y = (const void *)(b + i * sizeof(struct di));
      if (x->v != y->v || x->i != y->i) return 0;
    }
    return 1;
  }
  if (kind == 3) { /* the data ints; every third int is a hole that must be untouched */
    const int *x = (const void *)a, *y = (const void *)b;
    for (int i = 0; i < 3 * n; i++)
      if (i % 3 != 2 && x[i] != y[i]) return 0;
    return 1;
  }
  return memcmp(a, b, esize(kind) * (size_t)n) == 0;
}

/* One bcast from `root`, checked against the root's data on every member: nonblocking
 * with an auto tag, or (`blocking`) dred_bcast. */
static void run_as(int kind, int n, int root, uint64_t seed, MPI_Comm comm, const char *where,
                   int blocking) {
  int r;
  MPI_Comm_rank(comm, &r);
  size_t bytes = esize(kind) * (size_t)n;
  unsigned char *buf = malloc(bytes + 1), *ref = malloc(bytes + 1);
  MPI_Datatype dt = kind == 0 ? MPI_INT : kind == 1 ? MPI_DOUBLE : kind == 2 ? MPI_DOUBLE_INT : t_vec;
  char check[200];
  dred_future *f = NULL;
  int st;
  snprintf(check, sizeof check, "bcast/%s/%s/n=%d/root=%d", where, kname[kind], n, root);
  set_step("%s", check);
  if (r == root) gen(kind, buf, n, seed);
  else memset(buf, 0x33, bytes);
  memcpy(ref, buf, bytes);
  if (blocking) {
    st = dred_bcast(buf, n, dt, root, comm);
  } else {
    st = dred_ibcast(buf, n, dt, root, comm, DRED_TAG_AUTO, &f);
    if (st == DRED_OK) {
      st = wait_bounded(f, 60, check);
      dred_future_free(f);
    }
  }
  from_root(ref, bytes, root, comm);
  if (st != DRED_OK) {
    fail("%s: rank %d status %s", check, r, dred_strerror(st));
  } else if (!same(kind, buf, ref, n)) {
    fail("%s: rank %d data differs from the root's", check, r);
  } else if (kind == 3 && r != root) {
    for (int i = 2; i < 3 * n; i += 3)
      if (((int *)buf)[i] != 0x33333333) {
        fail("%s: rank %d: a hole of the datatype was written", check, r);
        break;
      }
  }
  if (st == DRED_OK && r == root) pass("%s", check);
  free(buf); free(ref);
}

static void run(int kind, int n, int root, uint64_t seed, MPI_Comm comm, const char *where) {
  run_as(kind, n, root, seed, comm, where, 0);
}

static void tagged(uint64_t seed) {
  enum { N = 6 };
  int *b[N], *ref[N];
  dred_future *f[N];
  const int counts[N] = {1, 200, 5000, 70000, 300000, 10};
  set_step("tagged: issue");
  for (int i = 0; i < N; i++) {
    int root = i % g_size;
    b[i] = malloc(sizeof(int) * (size_t)counts[i]);
    ref[i] = malloc(sizeof(int) * (size_t)counts[i]);
    for (int k = 0; k < counts[i]; k++) ref[i][k] = (int)mix64(seed + (uint64_t)(i * 1000003 + k));
    memcpy(b[i], ref[i], sizeof(int) * (size_t)counts[i]);
    if (g_rank != root) memset(b[i], 0, sizeof(int) * (size_t)counts[i]);
    if (dred_ibcast(b[i], counts[i], MPI_INT, root, g_comm, 100 + i, &f[i]) != DRED_OK) {
      fail("tagged: bcast %d refused", i);
      f[i] = NULL;
    }
  }
  for (int i = N - 1; i >= 0; i--) {
    char check[64];
    snprintf(check, sizeof check, "bcast/tagged/tag=%d/n=%d", 100 + i, counts[i]);
    int st = f[i] ? wait_bounded(f[i], 60, check) : -1;
    dred_future_free(f[i]);
    if (st != DRED_OK) fail("%s: status %d", check, st);
    else if (memcmp(b[i], ref[i], sizeof(int) * (size_t)counts[i])) fail("%s: rank %d wrong data", check, g_rank);
    else if (g_rank == 0) pass("%s", check);
    free(b[i]); free(ref[i]);
  }
}

/* The same data described differently (MPI matches type signatures, not counts or types):
 * `rk` at the root and `ok` elsewhere, kinds: 0 = 4n MPI_INT / n contiguous(4, MPI_INT);
 * 1 = n t_vec (2 ints of every 3: packed) / 2n MPI_INT; 2 = 2n MPI_INT / n t_vec.  Every
 * member must hold the root's ints where its own type puts them, its holes untouched. */
static void signatures(int n, int root, int kind, uint64_t seed) {
  MPI_Datatype c4;
  int nints = kind == 0 ? 4 * n : 2 * n, st, me_root = g_rank == root;
  /* buffers of 3n ints: a t_vec member's ints are 0,1 of every 3 */
  int *buf = malloc(sizeof(int) * (size_t)(4 * n + 1)), *ints = malloc(sizeof(int) * (size_t)nints);
  int vec_me = (kind == 1 && me_root) || (kind == 2 && !me_root);
  char check[96];
  MPI_Type_contiguous(4, MPI_INT, &c4);
  MPI_Type_commit(&c4);
  snprintf(check, sizeof check, "bcast/signatures/%s/n=%d/root=%d",
           kind == 0 ? "int_vs_contig4" : kind == 1 ? "vec_vs_int" : "int_vs_vec", n, root);
  set_step("%s", check);
  for (int i = 0; i < nints; i++) ints[i] = (int)mix64(seed + (uint64_t)i);
  for (int i = 0; i < 4 * n + 1; i++) buf[i] = -7;
  if (me_root)
    for (int i = 0; i < nints; i++) buf[vec_me ? i / 2 * 3 + i % 2 : i] = ints[i];
  if (kind == 0) st = dred_bcast(buf, me_root ? 4 * n : n, me_root ? MPI_INT : c4, root, g_comm);
  else st = dred_bcast(buf, vec_me ? n : 2 * n, vec_me ? t_vec : MPI_INT, root, g_comm);
  if (st != DRED_OK) {
    fail("%s: rank %d got %s", check, g_rank, dred_strerror(st));
  } else {
    int bad = -1;
    for (int i = 0; i < nints && bad < 0; i++)
      if (buf[vec_me ? i / 2 * 3 + i % 2 : i] != ints[i]) bad = i;
    if (vec_me)
      for (int i = 0; i < n && bad < 0; i++)
        if (buf[3 * i + 2] != -7) bad = 3 * i + 2;
    if (bad >= 0) fail("%s: rank %d int %d wrong (or a hole written)", check, g_rank, bad);
    else if (g_rank == 0) pass("%s", check);
  }
  MPI_Type_free(&c4);
  free(buf);
  free(ints);
}

/* Type signatures that differ (MPI_INT at the root, MPI_FLOAT elsewhere: the same bytes):
 * at least one member gets MISMATCH, nobody waits for ever, and the next bcast works. */
static void signature_mismatch(int n) {
  int *a = calloc((size_t)n, sizeof *a), st, mism, total = 0;
  char step[64];
  if (g_size < 2 || a == NULL) {
    free(a);
    return;
  }
  snprintf(step, sizeof step, "bcast/signatures/int_vs_float/n=%d", n);
  set_step("%s", step);
  st = dred_bcast(a, n, g_rank == 0 ? MPI_INT : MPI_FLOAT, 0, g_comm);
  if (st != DRED_ERR_MISMATCH && st != DRED_OK) fail("%s: rank %d got %s", step, g_rank, dred_strerror(st));
  mism = st == DRED_ERR_MISMATCH;
  MPI_Allreduce(&mism, &total, 1, MPI_INT, MPI_SUM, g_comm);
  if (total == 0) fail("%s: nobody got MISMATCH", step);
  else if (g_rank == 0) pass("%s: %d member(s) got MISMATCH", step, total);
  for (int i = 0; i < n; i++) a[i] = g_rank == 0 ? i : -1;
  st = dred_bcast(a, n, MPI_INT, 0, g_comm);
  if (st != DRED_OK || a[n - 1] != n - 1) fail("%s: next bcast: rank %d got %s", step, g_rank, dred_strerror(st));
  free(a);
}

/* A root mismatch on n ints (100000: large enough for a node relay across nodes, where
 * a disagreeing member may be a node's leader or follower). */
static void mismatch(int n) {
  int *a = calloc((size_t)n, sizeof *a), st;
  char step[64];
  if (g_size < 2 || a == NULL) {
    free(a);
    return;
  }
  snprintf(step, sizeof step, "bcast/mismatch/root/n=%d", n);
  set_step(step);
  /* Members are served as soon as the root's data is in, so one served before the
   * disagreeing member arrived keeps its DRED_OK (it has the root's data), and nobody
   * waits forever. */
  /* Which member "disagrees" is whichever arrives after the first READY fixed the
   * parameters: at least one member gets MISMATCH, every other OK. */
  st = dred_bcast(a, n, MPI_INT, g_rank == 1 ? 1 : 0, g_comm);
  {
    int mism = st == DRED_ERR_MISMATCH, total = 0;
    if (st != DRED_ERR_MISMATCH && st != DRED_OK)
      fail("%s: rank %d got %s", step, g_rank, dred_strerror(st));
    if (g_rank == 0) {
      total = mism;
      for (int k = 1; k < g_size; k++) {
        MPI_Recv(&mism, 1, MPI_INT, k, 82, g_comm, MPI_STATUS_IGNORE);
        total += mism;
      }
      if (total == 0) fail("%s: nobody got MISMATCH", step);
      else pass("%s: %d member(s) got MISMATCH", step, total);
    } else {
      MPI_Send(&mism, 1, MPI_INT, 0, 82, g_comm);
    }
  }
  snprintf(step, sizeof step, "bcast/mismatch/after/n=%d", n);
  set_step(step);
  for (int i = 0; i < n; i++) a[i] = g_rank == 0 ? i : -1;
  st = dred_bcast(a, n, MPI_INT, 0, g_comm);
  if (st != DRED_OK || a[n - 1] != n - 1) fail("%s: rank %d got %s", step, g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("%s: the next bcast works", step);
  /* Nobody calls itself the root (each names the next member): no root's data ever
   * comes, so nobody can be served -- everyone gets MISMATCH, nobody waits for ever. */
  snprintf(step, sizeof step, "bcast/mismatch/no-root/n=%d", n);
  set_step(step);
  st = dred_bcast(a, n, MPI_INT, (g_rank + 1) % g_size, g_comm);
  if (st != DRED_ERR_MISMATCH) fail("%s: rank %d got %s", step, g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("%s", step);
  snprintf(step, sizeof step, "bcast/mismatch/after-no-root/n=%d", n);
  set_step(step);
  for (int i = 0; i < n; i++) a[i] = g_rank == 0 ? i : -1;
  st = dred_bcast(a, n, MPI_INT, 0, g_comm);
  if (st != DRED_OK || a[n - 1] != n - 1) fail("%s: rank %d got %s", step, g_rank, dred_strerror(st));
  else if (g_rank == 0) pass("%s: the next bcast works", step);
  free(a);
}

/* A member that names itself the root with no pool room (its operand has no place a peer
 * could read, which alone would send the collective to dred-master) arriving after the
 * root, and after another member was served: members 0-2 of a sub-communicator of the
 * first three (one node).  Member 0 is the root of a 16 MiB dred_ibcast and calls
 * nothing more for 11 ms, then looks at its future and starts the next bcast at once;
 * member 1 calls dred_bcast at 10 ms (served from member 0's block); member 2, its pool
 * taken with dred_alloc_mem, calls dred_ibcast naming itself the root at 10.5 ms.
 * Member 2 disagrees with a root already there, so it must get MISMATCH (the slot says
 * so; dred-master, which never hears from the members served in the slot, could not),
 * and member 1's DRED_OK must come with member 0's data -- a root whose slot went to
 * dred-master under member 1's copy once freed its block for its next bcast to
 * overwrite.  In the later trials messages order the arrivals -- the root, member 1,
 * member 2 -- and member 1 copies a step (dred_future_is_done) before member 2 comes and
 * the rest after: on one node, served before anyone disagreed, it must get DRED_OK with
 * the data, whenever it looks (its outcome follows the arrivals, not its looks), and its
 * copy must not trip over member 2's reference (no block, another root). */
static void mismatch_noplace(void) {
  enum { N = 16 << 20, TRIALS = 4, MAXB = 4096 };
  MPI_Comm c3;
  int r3, color = g_rank < 3, one_node;
  unsigned char *a, *b;
  void **blk;
  if (g_size < 3) return;
  MPI_Comm_split(g_comm, color, g_rank, &c3);
  if (!color) {
    MPI_Comm_free(&c3);
    return;
  }
  MPI_Comm_rank(c3, &r3);
  {
    /* across nodes member 1 is served once dred-master has sent it all the data, which
     * member 2's arrival may precede: there either outcome is the contract's */
    MPI_Comm nc;
    int nn = 0;
    MPI_Comm_split_type(c3, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &nc);
    MPI_Comm_size(nc, &nn);
    MPI_Comm_free(&nc);
    one_node = nn == 3;
  }
  a = malloc(N);
  b = malloc(N);
  blk = malloc(sizeof *blk * MAXB);
  if (a == NULL || b == NULL || blk == NULL) {
    fail("bcast/mismatch-noplace: no memory");
    free(a), free(b), free(blk);
    MPI_Comm_free(&c3);
    return;
  }
  for (int t = 0; t < TRIALS; t++) {
    int st = DRED_OK, st2 = DRED_OK, nblk = 0, bad = 0, k2 = 0;
    double t0, mark = 0, marks[3];
    dred_future *f1 = NULL, *f2 = NULL;
    set_step("bcast/mismatch-noplace/%d", t);
    memset(a, r3 == 0 ? 0xA0 + t : 0, N);
    memset(b, r3 == 0 ? 0x0B : 0, N);
    if (r3 == 2) nblk = pool_take_all(blk, MAXB);
    MPI_Barrier(c3);
    t0 = now_s();
    if (r3 == 0) {
      st = dred_ibcast(a, N, MPI_BYTE, 0, c3, DRED_TAG_AUTO, &f1);
      mark = now_s(); /* returned: its data is in the slot */
      if (t >= TRIALS / 2) MPI_Send(&k2, 1, MPI_INT, 1, 75, c3); /* arrived: member 1 may come */
      while (now_s() < t0 + 0.011) {}
      for (int k = 0; k < 50 && st == DRED_OK && !dred_future_is_done(f1); k++) {}
      st2 = dred_ibcast(b, N, MPI_BYTE, 0, c3, DRED_TAG_AUTO, &f2);
      if (st == DRED_OK) st = wait_bounded(f1, 30, "bcast/mismatch-noplace");
      dred_future_free(f1);
      if (st2 == DRED_OK) st2 = wait_bounded(f2, 30, "bcast/mismatch-noplace/next");
      dred_future_free(f2);
    } else if (r3 == 1) {
      while (now_s() < t0 + 0.010) {}
      if (t < TRIALS / 2) {
        st = dred_bcast(a, N, MPI_BYTE, 0, c3);
      } else { /* served, it copies a step, then the rest once member 2 has arrived */
        MPI_Recv(&k2, 1, MPI_INT, 0, 75, c3, MPI_STATUS_IGNORE);
        st = dred_ibcast(a, N, MPI_BYTE, 0, c3, DRED_TAG_AUTO, &f1);
        if (st == DRED_OK) (void)dred_future_is_done(f1);
        MPI_Send(&k2, 1, MPI_INT, 2, 76, c3); /* arrived: member 2 may come */
        MPI_Recv(&k2, 1, MPI_INT, 2, 77, c3, MPI_STATUS_IGNORE);
        if (st == DRED_OK) st = wait_bounded(f1, 30, "bcast/mismatch-noplace");
        dred_future_free(f1);
      }
      for (int i = 0; i < N && st == DRED_OK && !bad; i++) bad = a[i] != (unsigned char)(0xA0 + t);
      st2 = dred_bcast(b, N, MPI_BYTE, 0, c3);
    } else {
      while (now_s() < t0 + 0.0105) {}
      if (t >= TRIALS / 2) MPI_Recv(&k2, 1, MPI_INT, 1, 76, c3, MPI_STATUS_IGNORE);
      mark = now_s(); /* calling: the root's call returned before this, or not */
      st = dred_ibcast(a, N, MPI_BYTE, 2, c3, DRED_TAG_AUTO, &f1); /* names itself the root */
      if (t >= TRIALS / 2) MPI_Send(&k2, 1, MPI_INT, 1, 77, c3); /* it has arrived */
      if (st == DRED_OK) st = wait_bounded(f1, 30, "bcast/mismatch-noplace");
      dred_future_free(f1);
      st2 = dred_bcast(b, N, MPI_BYTE, 0, c3);
    }
    for (int k = 0; k < nblk; k++) dred_free_mem(blk[k]);
    MPI_Allgather(&mark, 1, MPI_DOUBLE, marks, 1, MPI_DOUBLE, c3);
    if (st != DRED_OK && st != DRED_ERR_MISMATCH)
      fail("bcast/mismatch-noplace/%d: member %d got %s", t, r3, dred_strerror(st));
    else if (t >= TRIALS / 2 && r3 == 1 && st != DRED_OK && one_node)
      fail("bcast/mismatch-noplace/%d: member 1, served before member 2 came, got %s", t,
           dred_strerror(st));
    else if (bad)
      fail("bcast/mismatch-noplace/%d: member 1 got DRED_OK with data that is not the root's", t);
    else if (r3 == 2 && marks[0] < marks[2] && st != DRED_ERR_MISMATCH)
      fail("bcast/mismatch-noplace/%d: member 2 named itself the root after the root's call "
           "and got %s, not MISMATCH", t, dred_strerror(st));
    else if (st2 != DRED_OK || (r3 != 0 && b[N - 1] != 0x0B))
      fail("bcast/mismatch-noplace/%d: the next bcast at member %d: %s", t, r3, dred_strerror(st2));
    else if (r3 == 0)
      pass("bcast/mismatch-noplace/%d", t);
  }
  free(a), free(b), free(blk);
  MPI_Comm_free(&c3);
}

int main(int argc, char **argv) {
  uint64_t seed = 777;
  int large = 0; /* -l COUNT: ints and a type with holes at COUNT elements too */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    if (!strcmp(argv[i], "-l") && i + 1 < argc) large = atoi(argv[++i]);
  }
  test_init(&argc, &argv, "bcast");
  MPI_Datatype v;
  MPI_Type_vector(1, 2, 3, MPI_INT, &v);
  MPI_Type_create_resized(v, 0, 3 * sizeof(int), &t_vec);
  MPI_Type_free(&v);
  MPI_Type_commit(&t_vec);
  const int counts[] = {0, 1, 50, 2000, 100000};
  int roots[3] = {0, g_size - 1, g_size / 2};
  for (int ri = 0; ri < 3; ri++) {
    if (ri > 0 && roots[ri] == roots[ri - 1]) continue;
    for (int k = 0; k < 4; k++)
      for (int c = 0; c < 5; c++)
        run(k, counts[c], roots[ri], seed + (uint64_t)(ri * 100 + k * 10 + c), g_comm, "world");
  }
  /* Large ones, nonblocking and blocking: results the cache may not hold are written past
   * it (lib/shm/copy.c, "A large result"; DRED_SHM_STREAM=1 makes every one of them so) */
  for (int ri = 0; large > 0 && ri < 2; ri++)
    for (int k = 0; k < 4; k += 3)
      for (int b = 0; b < 2; b++)
        run_as(k, large + ri, ri ? g_size - 1 : 0, seed + 800 + (uint64_t)(ri * 10 + k * 2 + b),
               g_comm, b ? "large-blocking" : "large", b);
  if (g_size >= 3) {
    MPI_Comm sub;
    MPI_Comm_split(g_comm, g_rank % 2, g_size - g_rank, &sub);
    run(0, 100, 0, seed + 900, sub, "split");
    run(3, 90000, 0, seed + 901, sub, "split");
    MPI_Comm_free(&sub);
  }
  tagged(seed + 1000);
  {
    const int sn[3] = {1, 700, 100000};
    for (int c = 0; c < 3; c++)
      for (int kind = 0; kind < 3; kind++)
        signatures(sn[c], (c + kind) % 2 ? g_size - 1 : 0, kind, seed + 2000 + (uint64_t)(c * 3 + kind));
    signature_mismatch(10);
    signature_mismatch(100000);
  }
  mismatch(50);
  mismatch(100000);
  mismatch_noplace();
  MPI_Type_free(&t_vec);
  return test_finish();
}
