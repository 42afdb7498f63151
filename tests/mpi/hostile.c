/*
 * hostile.c -- a member whose buffer references lie: the readers must refuse them.
 *
 *   dredrun -n P mpi_hostile [-m offset|len|owner|addr|replica|replica-member] [-r ROUNDS]
 *
 * Member 1 (of dred_comm()) rewrites the READY and DONE messages its own libdred sends to
 * dred-master: this program defines uv_write, which the statically linked libdred's
 * control links (common/net.c) call, decodes each frame with dred's own codec, corrupts
 * the buffer reference and re-encodes it before handing it to libuv's uv_write.  The
 * corruptions:
 *   offset  pool offset (and address, consistently) moved one pool size ahead: into the
 *           next process's segment -- the review's attack, which made the root return
 *           DRED_OK with another process's data;
 *   len     the buffer claims twice the reduction's length;
 *   owner   the buffer claims to belong to another worker;
 *   addr    the address no longer matches the pool offset (what an RMA reader on another
 *           node would use);
 *   replica the REPLICA headers member 1 sends its neighbour point one pool size ahead
 *           (the review's second attack: it crashed the neighbour's replica thread); the
 *           neighbour must refuse to store that copy and every reduction stays exact.
 *   replica-member  member 1's REPLICA headers (shared-memory and link copies alike) claim
 *           to be copies of member 2's operand: a receiver that knows the group refuses
 *           them ("the sender is not that member's process", in its log); every reduction
 *           stays exact.  (What this cannot show from inside the job: that a copy taken
 *           would later restore the wrong operand -- that needs a kill; the refusal is in
 *           the log of the case.)
 * Every member then reduces ROUNDS times (1000 doubles, SUM, root 0, and a root != 0
 * variant).  The rule under test: a reduction may fail -- with DRED_ERR_INTERNAL from the
 * reader's refusal -- but it never returns DRED_OK with a wrong value, and nothing crashes
 * or hangs.  At least one refusal must be seen (a corruption nobody read would test
 * nothing), so the test fails before the segment checks existed either way: wrong data,
 * a crash in the combine, or no refusal.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "../../common/proto.h"
#include "../../common/settings.h"
#include "mpitest.h"

static int g_world_rank = -1;
static int g_hostile_world = -1; /* world rank of member 1, set after init */
static const char *g_mode = "offset";
static uint64_t g_pool_bytes;
static int g_corrupted; /* messages this process rewrote */

/* Re-encoded messages must outlive the send: a ring far longer than the sends in flight. */
#define RING 4096
static uint8_t g_ring[RING][PROTO_MAX_SIZE > 512 ? 512 : PROTO_MAX_SIZE];
static unsigned g_next;

static void corrupt(proto_buf_t *b) {
  if (!strcmp(g_mode, "offset")) {
    if (b->pool_off < 0) return; /* a private buffer: nothing to shift */
    b->pool_off += (int64_t)g_pool_bytes;
    b->addr += g_pool_bytes;
  } else if (!strcmp(g_mode, "len")) {
    b->len *= 2;
  } else if (!strcmp(g_mode, "owner")) {
    b->owner = b->owner == 2 ? 3 : 2;
  } else if (!strcmp(g_mode, "addr")) {
    b->addr += 64;
  }
}

typedef int (*uv_write_fn)(uv_write_t *, uv_stream_t *, const uv_buf_t[], unsigned int,
                          uv_write_cb);

int uv_write(uv_write_t *req, uv_stream_t *handle, const uv_buf_t bufs[], unsigned int nbufs,
             uv_write_cb cb) {
  static uv_write_fn real;
  proto_msg_t m;
  int replica_mode = !strcmp(g_mode, "replica") || !strcmp(g_mode, "replica-member");
  int member_mode = !strcmp(g_mode, "replica-member");
  if (real == NULL) real = (uv_write_fn)dlsym(RTLD_NEXT, "uv_write");
  int wr = __atomic_load_n(&g_world_rank, __ATOMIC_ACQUIRE); /* set by main after init */
  if (wr >= 0 && wr == g_hostile_world && nbufs == 1 &&
      proto_decode((const uint8_t *)bufs[0].base, bufs[0].len, &m) == 0) {
    uint8_t *out = g_ring[g_next % RING];
    int touched = 0;
    size_t n;
    if (!replica_mode && m.type == PROTO_READY) {
      corrupt(&m.u.ready.buf);
      touched = 1;
    } else if (!replica_mode && m.type == PROTO_DONE) {
      corrupt(&m.u.done.buf);
      touched = 1;
    } else if (member_mode && m.type == PROTO_REPLICA) {
      m.u.replica.member = 2;
      touched = 1;
    } else if (replica_mode && !member_mode && m.type == PROTO_REPLICA && m.u.replica.pool_off >= 0) {
      m.u.replica.pool_off += (int64_t)g_pool_bytes;
      touched = 1;
    }
    if (touched && (n = proto_encode(&m, NULL, out, sizeof g_ring[0])) > 0) {
      uv_buf_t nb = uv_buf_init((char *)out, (unsigned)n);
      g_next++;
      __atomic_add_fetch(&g_corrupted, 1, __ATOMIC_RELAXED);
      return real(req, handle, &nb, 1, cb);
    }
  }
  return real(req, handle, bufs, nbufs, cb);
}

int main(int argc, char **argv) {
  int rounds = 4, c, refusals = 0, all_refusals = 0;
  while ((c = getopt(argc, argv, "m:r:")) != -1) {
    if (c == 'm') g_mode = optarg;
    else if (c == 'r') rounds = atoi(optarg);
  }
  {
    const char *mb = dred_setting_raw(DRED_S_POOL_MB);
    g_pool_bytes = ((uint64_t)(mb ? strtoull(mb, NULL, 10) : 256) << 20) + 8192u;
  }
  test_init(&argc, &argv, "hostile");
  if (g_size < 3) {
    fail("hostile: needs at least 3 members");
    return test_finish();
  }
  {
    int hostile_comm = 1, wr;
    MPI_Group cg, wg;
    MPI_Comm_group(g_comm, &cg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(cg, 1, &hostile_comm, wg, &g_hostile_world);
    MPI_Group_free(&cg);
    MPI_Group_free(&wg);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    /* from here on member 1's libdred lies (read by the runtime thread's writes) */
    __atomic_store_n(&g_world_rank, wr, __ATOMIC_RELEASE);
  }
  const int n = 1000;
  double *s = malloc(n * sizeof *s), *r = malloc(n * sizeof *r), *e = malloc(n * sizeof *e);
  for (int k = 0; k < rounds; k++) {
    int root = k % 2 == 0 ? 0 : g_size - 1;
    char check[120];
    snprintf(check, sizeof check, "hostile/%s/round=%d/root=%d", g_mode, k, root);
    for (int i = 0; i < n; i++) s[i] = (double)(g_rank * 1000 + i + k);
    memset(r, 0, n * sizeof *r);
    set_step("%s", check);
    dred_future *f = NULL;
    int st = dred_ireduce(s, r, n, MPI_DOUBLE, MPI_SUM, root, g_comm, DRED_TAG_AUTO, &f);
    if (st == DRED_OK) {
      st = wait_bounded(f, 30, check);
      dred_future_free(f);
    }
    ref_reduce(s, e, n, MPI_DOUBLE, MPI_SUM, root, g_comm);
    if (st == DRED_ERR_INTERNAL) {
      refusals++;
      if (g_rank == root) pass("%s: refused (%s)", check, dred_strerror(st));
    } else if (st != DRED_OK) {
      fail("%s: status %d (%s), expected DRED_OK or DRED_ERR_INTERNAL", check, st,
           dred_strerror(st));
    } else if (g_rank == root && memcmp(r, e, n * sizeof *r)) {
      fail("%s: DRED_OK with a wrong result (r[0] = %g, expected %g)", check, r[0], e[0]);
    } else if (g_rank == root) {
      pass("%s: exact", check);
    }
  }
  MPI_Allreduce(&refusals, &all_refusals, 1, MPI_INT, MPI_SUM, g_comm);
  int corrupted = 0;
  MPI_Allreduce(&g_corrupted, &corrupted, 1, MPI_INT, MPI_SUM, g_comm);
  if (corrupted == 0) fail("hostile/%s: member 1 rewrote no message: nothing was tested", g_mode);
  if (!strcmp(g_mode, "replica") || !strcmp(g_mode, "replica-member")) {
    /* a bad replica header costs a copy, never a reduction */
    if (all_refusals > 0) fail("hostile/replica: %d reductions failed", all_refusals);
  } else if (all_refusals == 0) {
    fail("hostile/%s: no member saw a refusal: the corruption was never read", g_mode);
  }
  free(s);
  free(r);
  free(e);
  return test_finish();
}
