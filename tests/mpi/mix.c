/*
 * mix.c -- randomized differential test: many features mixed in the same batches of
 * collectives (reduce, allreduce, bcast), every result checked exactly, to find the bugs
 * that live between features.
 *
 *   dredrun -n P mpi_mix [-s SEED] [-r ROUNDS] [-R FIRST] [-K MAXK] [-B MAXBYTES]
 *                        [-t NTAGS] [-p US] [-T COMBO] [-C COMM] [-k KINDS] [-S N]
 *                        [-X ROUND[:node] [-x US]] [--no-bad] [-v | -vv]
 *     -s SEED    seed of everything (default 20240611); the same seed gives the same plan
 *     -r ROUNDS  rounds (default 20), numbered from FIRST (-R, default 0): each round's plan
 *                depends on (seed, round) only, so -R N -r 1 replays round N alone
 *     -K MAXK    at most MAXK reductions per round (default 24, at most 64)
 *     -B BYTES   largest operand in bytes (default 300000)
 *     -t NTAGS   explicit tags are drawn from 0..NTAGS-1 (default 40), and a few large ones
 *     -p US      a pause before some calls is 0..US microseconds (default 2000)
 *     -T NAME    only the (type, op) combination NAME (e.g. vec_sum; -T list prints them)
 *     -C NAME    only communicator NAME (world, rev, half, sub, self, dup, fresh)
 *     -k KINDS   the kinds drawn, a comma list of reduce, allreduce, bcast (default all)
 *     -S N       in about one round of N each member takes its whole pool (dred_alloc_mem)
 *                before a random one of its calls and gives it back once they are issued:
 *                its arrivals meanwhile spill their slots to dred-master, after whatever
 *                the peers did there (default 0: never)
 *     -X ROUND   a member drawn from the seed dies by SIGKILL in round ROUND, at a moment
 *                drawn from 0..US (-x, default 10000) microseconds after it starts issuing;
 *                ROUND:node: every member of one node dies (the section "a member dies"
 *                below says what survivors check; tests/faults/mix-faults.sh runs trials)
 *     --no-bad   no deliberately mismatched calls
 *     -v         rank 0 prints every round's plan; -vv: every member also prints its calls
 *
 * Communicators, made once at start: dred_comm(); its reverse (split, key size-1-rank);
 * even/odd halves; a random subset and its complement, in a random key order; one member
 * each (split, color = rank); an MPI_Comm_dup of dred_comm() (the same group, so it shares
 * dred_comm()'s auto-tag sequence and tag names).  And in a third of the rounds a fresh
 * split into up to three parts in a random order, freed at the round's end.  Every member
 * belongs to exactly one part of each, so every member takes part in every reduction of a
 * round, on its part.  Explicit tags are unique in a round among kinds that share a group
 * somewhere (the same tag runs on different groups at once).
 *
 * A round: every member draws the same plan from (seed, round): K (1..MAXK) collectives
 * ("reductions" below; a bcast is one too, its root's operand the data), each with a kind,
 * a communicator, root, count (0, 1, small, the DRED_INLINE_MAX boundary and
 * one past it, up to 32 KB, up to MAXBYTES), a (type, op) combination from `combos` below
 * (MPI_INT, MPI_DOUBLE, MPI_LONG, MPI_UNSIGNED, MPI_INTEGER, MPI_DOUBLE_PRECISION under the
 * predefined ops that apply, MPI_DOUBLE_INT under MINLOC/MAXLOC, MPI_C_DOUBLE_COMPLEX under
 * SUM/PROD, a strided int vector with holes, a struct of doubles resized with holes before
 * and after (true lower bound 8), a 600-int vector whose element (7 KB) is larger than a
 * DRED_CHUNK_KB=4 chunk; commutative user ops on those; mpitest.h's non-commutative affine
 * op and an affine op over a type with holes), DRED_TAG_AUTO or an explicit tag (drawn from
 * a small range, so tags are reused round after round; explicit tags are per kind),
 * MPI_IN_PLACE at a reduce's root, recvbuf from dred_alloc_mem where the result lands;
 * sometimes a twin of the previous reduction (the same operands, its own kind, root and
 * tag: members pass both the same sendbuf; never a bcast); and sometimes a deliberately bad
 * call: one member gives count +- 1, another root (not an allreduce), (predefined ops of a
 * reduce or allreduce) MAX/MIN instead of the op, or (auto tags) the other of reduce and
 * allreduce, so every member must get DRED_ERR_MISMATCH while the rest of the batch stays
 * exact.  In some rounds every member calls MPI_Barrier or MPI_Allreduce
 * on one of the communicators while the reductions run.
 *
 * Each member on its own decides: sendbuf from dred_alloc_mem (at an offset inside its
 * block) or malloc; whether an allreduce passes MPI_IN_PLACE; whether to scribble over a
 * reduce non-root's private sendbuf once the batch is issued (it was copied, and only
 * recovery reads it again; roots and the other kinds keep dred(3)'s rule, untouched until
 * done); whether to free a block while its reduction is pending and allocate
 * and scribble a new one; whether a non-root passes recvbuf NULL or a buffer that must stay
 * untouched; whether a derived datatype is a dup (MPI_Type_dup) or a user op a new one
 * (MPI_Op_create, same function), freed once the batch is issued (libdred keeps them for
 * the pending reductions); refused calls (count -1, MPI_IN_PLACE at a non-root, NULL
 * sendbuf, root out of range, tag -2, NULL future pointer, MPI_OP_NULL) before some calls,
 * with the next call's communicator and tag: each must return DRED_ERR_ARG with no future
 * and use up no auto-tag turn or tag use; pauses of 0..2 ms before calls; the order of its
 * calls (DRED_TAG_AUTO calls keep the plan's relative order, explicit-tag ones land
 * anywhere); dred_reduce (blocking) for some DRED_TAG_AUTO ones (they come in the same
 * order everywhere, so no member blocks on one another member has not reached; likewise
 * dred_allreduce, dred_bcast); freeing the future of some DRED_TAG_AUTO reductions at once
 * where it is not the root, any member of an allreduce (abandoning them locally: the
 * others' results must not suffer; its private sendbuf is scribbled over, its recvbuf
 * outlives the round); in a third of the rounds a second thread that issues the
 * explicit-tag reductions while the first issues the rest; whether it computes for up to
 * 5 ms before it waits; the order it waits, and how: polling dred_future_is_done
 * (wait_bounded) or in dred_future_wait slices of 0, 1, 20 or 200 ms (wait_in_call).
 *
 * Checks: every nonblocking call returns DRED_OK (else the job is aborted: the others would
 * wait on that tag), every future ends DRED_OK (DRED_ERR_MISMATCH for the bad ones), and
 * where the result lands (a reduce's root, every allreduce and bcast member) the whole
 * recvbuf span (count + 1 elements and a guard) equals the expected image byte for byte: data, holes of derived types untouched, nothing written past the
 * end; MPI_DOUBLE_INT compared field by field (its padding is unspecified), complex by
 * value (-0 == +0).  A sendbuf not scribbled must be unchanged, a reduce's non-root recvbuf
 * untouched, a bcast root's buffer unchanged whatever the outcome.  The expected value is not MPI_Reduce's (MPICH 4.0.2 is wrong on uneven
 * multi-node communicators): every member's operand is a function of (seed, round,
 * reduction, part, rank in the communicator, element), so the root generates all of them
 * and folds them in rank order with MPI_Reduce_local (from the highest rank down: inout =
 * in op inout), on the basic elements for predefined ops (MPICH refuses them on derived
 * types), in the datatype's layout for user ops.  Values are small integers (PROD factors
 * 1, 2, -1), so floating results are exact in any combine order.  A failure names seed,
 * round, reduction and its whole plan.  One PASS line per member and round.
 */
#include <complex.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dred.h"
#include "mpitest.h"
#include "../../common/settings.h"

#define MAXK_LIMIT 64
#define GUARD 64 /* bytes past count + 1 elements that nobody may write */

/* ---------------------------------------------------------------- communicators */

static uint64_t g_seed = 20240611;

enum { C_WORLD, C_REV, C_HALF, C_SUB, C_SELF, C_DUP, C_FRESH, NCOMM };
static const char *cname[NCOMM] = {"world", "rev", "half", "sub", "self", "dup", "fresh"};
static MPI_Comm comms[NCOMM];
static int crank[NCOMM], csize[NCOMM], ccolor[NCOMM];
static int cshare[NCOMM][NCOMM]; /* kinds a and b have a group in common somewhere */
static uint64_t cmask[NCOMM];     /* dred_comm() ranks in this member's part of each kind */
static int cworld[NCOMM][64];     /* member k of this member's part: its dred_comm() rank */

/* Which kinds share a group somewhere (the same members in the same order: dred_comm()
 * and its dup always, others by chance, e.g. a subset that is a half): explicit tags name
 * reductions per group, so two such kinds never get the same tag in one batch; kinds that
 * share no group may (the same tag on different groups at once).  Each member hashes its
 * part of each kind as the ordered list of dred_comm() ranks; two kinds share a group iff
 * some member's hashes agree.  Collective over g_comm. */
static void compute_share(void)
{
    int p = g_size;
    uint64_t mine[NCOMM], *all = malloc(sizeof mine * (size_t)p);
    MPI_Group wg;
    MPI_Comm_group(g_comm, &wg);
    for (int c = 0; c < NCOMM; c++) {
        MPI_Group cg;
        mine[c] = 0;
        if (comms[c] == MPI_COMM_NULL) continue;
        int n = csize[c], *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
        MPI_Comm_group(comms[c], &cg);
        for (int k = 0; k < n; k++) in[k] = k;
        MPI_Group_translate_ranks(cg, n, in, wg, out);
        mine[c] = 0x9a3;
        cmask[c] = 0;
        for (int k = 0; k < n; k++) {
            mine[c] = mix64(mine[c] ^ (uint64_t)out[k]);
            if (out[k] < 64) cmask[c] |= 1ULL << out[k];
            if (k < 64) cworld[c][k] = out[k];
        }
        MPI_Group_free(&cg);
        free(in);
        free(out);
    }
    MPI_Group_free(&wg);
    MPI_Allgather(mine, NCOMM * 8, MPI_BYTE, all, NCOMM * 8, MPI_BYTE, g_comm);
    for (int a = 0; a < NCOMM; a++)
        for (int b = 0; b < NCOMM; b++) {
            cshare[a][b] = a == b;
            for (int m = 0; m < p; m++)
                cshare[a][b] |= all[m * NCOMM + a] != 0 && all[m * NCOMM + a] == all[m * NCOMM + b];
        }
    free(all);
}

static void make_comms(uint64_t seed)
{
    int r = g_rank, p = g_size;
    comms[C_WORLD] = g_comm;
    ccolor[C_WORLD] = 0;
    MPI_Comm_split(g_comm, 0, p - 1 - r, &comms[C_REV]);
    ccolor[C_REV] = 0;
    ccolor[C_HALF] = r % 2;
    MPI_Comm_split(g_comm, r % 2, r, &comms[C_HALF]);
    /* a random subset (its complement the other part), members in a random order */
    uint64_t h = mix64(seed ^ 0x5ab5e7ULL ^ mix64((uint64_t)r + 1));
    ccolor[C_SUB] = (int)(h & 1);
    MPI_Comm_split(g_comm, ccolor[C_SUB], (int)((h >> 8) % 100000), &comms[C_SUB]);
    ccolor[C_SELF] = r;
    MPI_Comm_split(g_comm, r, 0, &comms[C_SELF]);
    ccolor[C_DUP] = 0;
    MPI_Comm_dup(g_comm, &comms[C_DUP]);
    comms[C_FRESH] = MPI_COMM_NULL; /* made by the rounds that use it */
    for (int c = 0; c < NCOMM; c++) {
        if (comms[c] == MPI_COMM_NULL) continue;
        MPI_Comm_rank(comms[c], &crank[c]);
        MPI_Comm_size(comms[c], &csize[c]);
    }
    compute_share();
}

/* A communicator for one round only, freed at its end (MPI may hand its handle out again):
 * up to three parts, members in a random order; its member lists are new groups or old
 * ones again (a group's auto-tag turns and tag uses go on across communicators). */
static void make_fresh_comm(int round)
{
    uint64_t h = mix64(g_seed ^ 0xf7e5ULL ^ mix64(((uint64_t)round << 20) + (uint64_t)g_rank));
    ccolor[C_FRESH] = (int)(h % 3);
    MPI_Comm_split(g_comm, ccolor[C_FRESH], (int)((h >> 8) % 100000), &comms[C_FRESH]);
    MPI_Comm_rank(comms[C_FRESH], &crank[C_FRESH]);
    MPI_Comm_size(comms[C_FRESH], &csize[C_FRESH]);
    compute_share();
}

/* ---------------------------------------------------------------- types and ops */

enum base { B_INT, B_UINT, B_LONG, B_DBL, B_DI, B_CPLX };
enum cmpmode { CMP_BYTES, CMP_PAIR, CMP_CPLX };

struct tdesc {
    const char *name;
    MPI_Datatype dt;
    MPI_Datatype cell; /* basic type of one cell */
    int ncell;         /* cells per element */
    int base;
    size_t cellsz;     /* extent of a cell */
    int off0, stride;  /* cell k of an element is at byte off0 + k * stride */
    MPI_Aint ext;
    int cmp;
};

enum { T_INT, T_DOUBLE, T_LONG, T_UNSIGNED, T_DI, T_CPLX, T_FINT, T_FDBL, T_VEC, T_HOLE,
       T_AFF, T_AFFH, T_BIGV, NT };
static struct tdesc types[NT];

static size_t cell_off(const struct tdesc *d, int k)
{
    return (size_t)d->off0 + (size_t)k * (size_t)d->stride;
}

struct di { double v; int i; };

static void set_type(int t, const char *name, MPI_Datatype dt, MPI_Datatype cell, int ncell,
                     int base, int cmp)
{
    struct tdesc *d = &types[t];
    MPI_Aint lb, ext;
    MPI_Aint clb, csz;
    d->name = name;
    d->dt = dt;
    d->cell = cell;
    d->ncell = ncell;
    d->base = base;
    d->cmp = cmp;
    MPI_Type_get_extent(cell, &clb, &csz); /* MPI_DOUBLE_INT: 16 bytes, 12 of data */
    d->cellsz = (size_t)csz;
    MPI_Type_get_extent(dt, &lb, &ext);
    d->ext = ext;
    if (lb != 0) {
        fprintf(stderr, "mix: type %s has lb %ld\n", name, (long)lb);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    d->off0 = 0; /* contiguous unless set after */
    d->stride = (int)csz;
}

enum { O_SUM, O_PROD, O_MAX, O_MIN, O_BXOR, O_BAND, O_LXOR, O_MINLOC, O_MAXLOC, O_CMIX,
       O_DSUM, O_AFF, O_AFFH, NO };
static const char *oname[NO] = {"sum", "prod", "max", "min", "bxor", "band", "lxor",
                                "minloc", "maxloc", "cmix", "dsum", "compose", "compose"};
static MPI_Op ops[NO];
static MPI_User_function *ufn[NO]; /* the user ops' functions */
static int ucommute[NO];

/* Dups of the derived types (MPI_Type_dup), freed by the application while their
 * reductions are pending: the user ops find their layout here too.  An abandoned reduction
 * may still call its op after its round (on dred's runtime thread), so entries stay: a
 * handle MPI hands out again (the old type really freed, so no reduction uses it) just
 * gets its new layout.  A mutex, since the runtime thread reads while the test adds. */
#define MAXVT 4096
static struct { MPI_Datatype h; const struct tdesc *d; } g_vt[MAXVT];
static int g_nvt;
static pthread_mutex_t g_vt_mu = PTHREAD_MUTEX_INITIALIZER;

static void vt_add(MPI_Datatype h, const struct tdesc *d)
{
    int k;
    pthread_mutex_lock(&g_vt_mu);
    for (k = 0; k < g_nvt && g_vt[k].h != h; k++) {}
    if (k == g_nvt && g_nvt < MAXVT) g_nvt++;
    if (k < MAXVT) {
        g_vt[k].h = h;
        g_vt[k].d = d;
    }
    pthread_mutex_unlock(&g_vt_mu);
    if (k >= MAXVT) {
        fprintf(stderr, "mix: more than %d distinct datatype handles\n", MAXVT);
        abort();
    }
}

/* the layout a user op walks, found by the caller's datatype handle (dred passes it on) */
static const struct tdesc *layout_of(MPI_Datatype dt)
{
    const struct tdesc *d = NULL;
    for (int t = 0; t < NT; t++)
        if (types[t].dt == dt) return &types[t];
    pthread_mutex_lock(&g_vt_mu);
    for (int k = 0; k < g_nvt && d == NULL; k++)
        if (g_vt[k].h == dt) d = g_vt[k].d;
    pthread_mutex_unlock(&g_vt_mu);
    if (d != NULL) return d;
    fprintf(stderr, "mix: user op called with an unknown datatype\n");
    abort();
}

/* commutative user op on 32-bit integer cells: x o y = x + y + x*y (mod 2^32), which is
 * (1+x)(1+y) - 1: associative and commutative, exact in any order */
static void cmix_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const struct tdesc *d = layout_of(*dt);
    for (int i = 0; i < *len; i++) {
        const unsigned char *a = (const unsigned char *)in + (size_t)i * (size_t)d->ext;
        unsigned char *b = (unsigned char *)inout + (size_t)i * (size_t)d->ext;
        for (int k = 0; k < d->ncell; k++) {
            uint32_t x, y;
            memcpy(&x, a + cell_off(d, k), 4);
            memcpy(&y, b + cell_off(d, k), 4);
            y = x + y + x * y;
            memcpy(b + cell_off(d, k), &y, 4);
        }
    }
}

/* commutative user op on double cells: the sum (integer values: exact in any order) */
static void dsum_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const struct tdesc *d = layout_of(*dt);
    for (int i = 0; i < *len; i++) {
        const unsigned char *a = (const unsigned char *)in + (size_t)i * (size_t)d->ext;
        unsigned char *b = (unsigned char *)inout + (size_t)i * (size_t)d->ext;
        for (int k = 0; k < d->ncell; k++) {
            double x, y;
            memcpy(&x, a + cell_off(d, k), 8);
            memcpy(&y, b + cell_off(d, k), 8);
            y += x;
            memcpy(b + cell_off(d, k), &y, 8);
        }
    }
}

/* mpitest.h's affine composition over the type with holes (a at 0, b at 8, extent 16) */
static void affh_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const struct tdesc *d = layout_of(*dt);
    for (int i = 0; i < *len; i++) {
        const unsigned char *a = (const unsigned char *)in + (size_t)i * (size_t)d->ext;
        unsigned char *b = (unsigned char *)inout + (size_t)i * (size_t)d->ext;
        struct affine f, g;
        memcpy(&f.a, a + cell_off(d, 0), 4);
        memcpy(&f.b, a + cell_off(d, 1), 4);
        memcpy(&g.a, b + cell_off(d, 0), 4);
        memcpy(&g.b, b + cell_off(d, 1), 4);
        int one = 1;
        MPI_Datatype t = types[T_AFF].dt;
        affine_op(&f, &g, &one, &t);
        memcpy(b + cell_off(d, 0), &g.a, 4);
        memcpy(b + cell_off(d, 1), &g.b, 4);
    }
}

static void make_types(void)
{
    set_type(T_INT, "int", MPI_INT, MPI_INT, 1, B_INT, CMP_BYTES);
    set_type(T_DOUBLE, "double", MPI_DOUBLE, MPI_DOUBLE, 1, B_DBL, CMP_BYTES);
    set_type(T_LONG, "long", MPI_LONG, MPI_LONG, 1, B_LONG, CMP_BYTES);
    set_type(T_UNSIGNED, "unsigned", MPI_UNSIGNED, MPI_UNSIGNED, 1, B_UINT, CMP_BYTES);
    set_type(T_DI, "double_int", MPI_DOUBLE_INT, MPI_DOUBLE_INT, 1, B_DI, CMP_PAIR);
    set_type(T_CPLX, "c_double_complex", MPI_C_DOUBLE_COMPLEX, MPI_C_DOUBLE_COMPLEX, 1, B_CPLX,
             CMP_CPLX);
    set_type(T_FINT, "integer", MPI_INTEGER, MPI_INTEGER, 1, B_INT, CMP_BYTES);
    set_type(T_FDBL, "double_precision", MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, 1, B_DBL,
             CMP_BYTES);
    if (types[T_FINT].cellsz != 4 || types[T_FDBL].cellsz != 8) {
        fprintf(stderr, "mix: MPI_INTEGER / MPI_DOUBLE_PRECISION sizes unexpected\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Datatype v, vr, s, sr, a, ar;
    /* 3 ints at 0, 8, 16, resized to 24: holes at 4, 12, 20 */
    MPI_Type_vector(3, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 24, &vr);
    MPI_Type_commit(&vr);
    MPI_Type_free(&v);
    set_type(T_VEC, "vec", vr, MPI_INT, 3, B_INT, CMP_BYTES);
    types[T_VEC].stride = 8;
    /* 2 doubles at 8 and 16, resized to 0..32: holes at 0..8 and 24..32 (true lb 8) */
    int bl = 2;
    MPI_Aint disp = 8;
    MPI_Datatype dbl = MPI_DOUBLE;
    MPI_Type_create_struct(1, &bl, &disp, &dbl, &s);
    MPI_Type_create_resized(s, 0, 32, &sr);
    MPI_Type_commit(&sr);
    MPI_Type_free(&s);
    set_type(T_HOLE, "holes", sr, MPI_DOUBLE, 2, B_DBL, CMP_BYTES);
    types[T_HOLE].off0 = 8;
    /* mpitest.h's affine type: 2 unsigned, contiguous */
    MPI_Op aop;
    affine_create(&a, &aop);
    set_type(T_AFF, "affine", a, MPI_UNSIGNED, 2, B_UINT, CMP_BYTES);
    ops[O_AFF] = aop;
    /* affine maps with holes: a at 0, b at 8, extent 16 */
    int bl2[2] = {1, 1};
    MPI_Aint d2[2] = {0, 8};
    MPI_Datatype u2[2] = {MPI_UNSIGNED, MPI_UNSIGNED};
    MPI_Datatype st;
    MPI_Type_create_struct(2, bl2, d2, u2, &st);
    MPI_Type_create_resized(st, 0, 16, &ar);
    MPI_Type_commit(&ar);
    MPI_Type_free(&st);
    set_type(T_AFFH, "affine_holes", ar, MPI_UNSIGNED, 2, B_UINT, CMP_BYTES);
    types[T_AFFH].stride = 8;
    /* an element larger than a combine chunk at DRED_CHUNK_KB=4: 600 ints, every third
     * one (extent 7192 bytes, 2400 of data) */
    MPI_Datatype bv;
    MPI_Type_vector(600, 1, 3, MPI_INT, &bv);
    MPI_Type_commit(&bv);
    set_type(T_BIGV, "bigvec", bv, MPI_INT, 600, B_INT, CMP_BYTES);
    types[T_BIGV].stride = 12;

    ops[O_SUM] = MPI_SUM; ops[O_PROD] = MPI_PROD; ops[O_MAX] = MPI_MAX; ops[O_MIN] = MPI_MIN;
    ops[O_BXOR] = MPI_BXOR; ops[O_BAND] = MPI_BAND; ops[O_LXOR] = MPI_LXOR;
    ops[O_MINLOC] = MPI_MINLOC; ops[O_MAXLOC] = MPI_MAXLOC;
    ufn[O_CMIX] = cmix_op; ucommute[O_CMIX] = 1;
    ufn[O_DSUM] = dsum_op; ucommute[O_DSUM] = 1;
    ufn[O_AFFH] = affh_op; ucommute[O_AFFH] = 0;
    ufn[O_AFF] = affine_op; ucommute[O_AFF] = 0;
    MPI_Op_create(cmix_op, 1, &ops[O_CMIX]);
    MPI_Op_create(dsum_op, 1, &ops[O_DSUM]);
    MPI_Op_create(affh_op, 0, &ops[O_AFFH]);
}

/* Freed before dred_finalize, which may still run abandoned collectives whose user ops
 * look their datatype up (layout_of): the handles stay in types[] (libdred holds the
 * types themselves until those collectives end), only copies are freed. */
static void free_types(void)
{
    MPI_Datatype aff = types[T_AFF].dt, vec = types[T_VEC].dt, hole = types[T_HOLE].dt,
                 affh = types[T_AFFH].dt, bigv = types[T_BIGV].dt;
    MPI_Op_free(&ops[O_CMIX]);
    MPI_Op_free(&ops[O_DSUM]);
    MPI_Op_free(&ops[O_AFFH]);
    affine_free(&aff, &ops[O_AFF]);
    MPI_Type_free(&vec);
    MPI_Type_free(&hole);
    MPI_Type_free(&affh);
    MPI_Type_free(&bigv);
}

/* the (type, op) combinations a reduction draws from; non-commutative ones twice */
static const struct combo { int t, o; } combos[] = {
    {T_INT, O_SUM}, {T_INT, O_PROD}, {T_INT, O_MAX}, {T_INT, O_MIN}, {T_INT, O_BXOR},
    {T_INT, O_BAND}, {T_INT, O_LXOR}, {T_INT, O_CMIX},
    {T_DOUBLE, O_SUM}, {T_DOUBLE, O_PROD}, {T_DOUBLE, O_MAX}, {T_DOUBLE, O_MIN},
    {T_DOUBLE, O_DSUM},
    {T_LONG, O_SUM}, {T_LONG, O_PROD}, {T_LONG, O_MAX}, {T_LONG, O_MIN}, {T_LONG, O_BXOR},
    {T_LONG, O_BAND},
    {T_UNSIGNED, O_SUM}, {T_UNSIGNED, O_MAX}, {T_UNSIGNED, O_MIN}, {T_UNSIGNED, O_BXOR},
    {T_UNSIGNED, O_LXOR}, {T_UNSIGNED, O_CMIX},
    {T_DI, O_MINLOC}, {T_DI, O_MAXLOC},
    {T_CPLX, O_SUM}, {T_CPLX, O_PROD},
    {T_FINT, O_SUM}, {T_FINT, O_MAX}, {T_FINT, O_BXOR}, {T_FINT, O_PROD},
    {T_FDBL, O_SUM}, {T_FDBL, O_MIN}, {T_FDBL, O_PROD},
    {T_VEC, O_SUM}, {T_VEC, O_MAX}, {T_VEC, O_BXOR}, {T_VEC, O_PROD}, {T_VEC, O_CMIX},
    {T_HOLE, O_SUM}, {T_HOLE, O_MIN}, {T_HOLE, O_DSUM},
    {T_BIGV, O_SUM}, {T_BIGV, O_MAX}, {T_BIGV, O_CMIX},
    {T_AFF, O_AFF}, {T_AFF, O_AFF}, {T_AFFH, O_AFFH}, {T_AFFH, O_AFFH},
};
#define NCOMBO ((int)(sizeof combos / sizeof combos[0]))

static void combo_name(int c, char *buf, size_t n)
{
    snprintf(buf, n, "%s_%s", types[combos[c].t].name, oname[combos[c].o]);
}

/* ---------------------------------------------------------------- operands */

static int64_t ival(int o, uint64_t e)
{
    switch (o) {
    case O_SUM: return (int64_t)(e % 2001) - 1000;
    case O_PROD: { int r = (int)(e % 6); return r == 0 ? 2 : r == 1 ? -1 : 1; }
    case O_BAND: return (int64_t)(e | mix64(e) | mix64(e + 1));
    case O_LXOR: return (int64_t)(e % 3);
    default: return (int64_t)e; /* MAX, MIN, BXOR, CMIX, affine */
    }
}

static double dval(int o, uint64_t e)
{
    switch (o) {
    case O_PROD: { int r = (int)(e % 6); return r == 0 ? 2.0 : r == 1 ? -1.0 : 1.0; }
    case O_MAX: case O_MIN: return (double)((int64_t)(e % 2000001) - 1000000);
    default: return (double)((int64_t)(e % 2001) - 1000); /* SUM, DSUM */
    }
}

static void cell_value(int o, int base, int s, uint64_t e, unsigned char *out)
{
    switch (base) {
    case B_INT: { int32_t v = (int32_t)ival(o, e); memcpy(out, &v, 4); break; }
    case B_UINT: {
        uint32_t v;
        if (o == O_AFF || o == O_AFFH) v = s == 0 ? ((uint32_t)e | 1u) : (uint32_t)(e >> 32);
        else if (o == O_SUM) v = (uint32_t)e; /* wraps: defined for unsigned */
        else v = (uint32_t)ival(o, e);
        memcpy(out, &v, 4);
        break;
    }
    case B_LONG: { long v = (long)ival(o, e); memcpy(out, &v, sizeof v); break; }
    case B_DBL: { double v = dval(o, e); memcpy(out, &v, 8); break; }
    case B_DI: {
        struct di v;
        memset(&v, 0, sizeof v);
        v.v = (double)(e % 4); /* many ties: the lower index must win */
        v.i = (int)((e >> 8) % 64);
        memcpy(out, &v, sizeof v);
        break;
    }
    default: { /* complex */
        double _Complex z;
        if (o == O_PROD) {
            static const double re[6] = {1, 0, -1, 0, 2, 1}, im[6] = {0, 1, 0, -1, 0, 1};
            int k = (int)(e % 6);
            z = CMPLX(re[k], im[k]);
        } else
            z = CMPLX((double)((int)(e % 101) - 50), (double)((int)((e >> 16) % 101) - 50));
        memcpy(out, &z, sizeof z);
        break;
    }
    }
}

/* ---------------------------------------------------------------- the plan */

/* The collective a reduction of the plan is: drawn per reduction from the kinds -k names
 * (all three by default). */
enum { K_REDUCE, K_ALLREDUCE, K_BCAST, NKIND };
static const char *kname[NKIND] = {"reduce", "allreduce", "bcast"};

enum { BAD_NONE, BAD_COUNT, BAD_ROOT, BAD_OP, BAD_KIND };
static const char *badname[5] = {"", " BAD(count)", " BAD(root)", " BAD(op)", " BAD(kind)"};

struct red {
    /* agreed by every member (drawn from the round's RNG) */
    int j, kind, comm, combo, tag, inplace, recv_block, badkind, badsign, count;
    int src; /* whose operands: j, or the reduction j is a twin of (same operands) */
    int bad_planned; /* the plan wants a bad call (one happens where the part has 2+ members) */
    uint64_t rootsel, badsel, badsel2;
    /* this member's view */
    MPI_Comm c;
    int cr, cs, color, root, is_root, bad_rank;
    const struct tdesc *td;
    MPI_Op op;
    int o;
    /* this member's call: kind, count, root, op (a bad member's differ), MPI_IN_PLACE or
     * not; my_is_root: its own call names it the root (every allreduce member is one: its
     * recvbuf gets the result) */
    int mykind, mycount, myroot, my_is_root, my_inplace, myo;
    /* this member's own choices */
    int use_block, block_off, scribble, early_free, null_recv, blocking, vtype, vop, abandon;
    int keep_rbuf; /* abandoned where libdred may write recvbuf until the collective ends */
    int poll_wait; /* wait by polling dred_future_is_done, else in dred_future_wait */
    MPI_Datatype calldt; /* td->dt, or a dup of it freed once the batch is issued */
    MPI_Op callop;       /* op, or a new user op with the same function, freed likewise */
    /* buffers */
    size_t span;
    unsigned char *sbuf, *sbase, *scopy, *rbuf, *rinit, *exp;
    int sbuf_is_block, rbuf_is_block;
    void *block2;
    dred_future *f;
    int st;
};

static int g_inline_max = 1024;
static int g_verbose = 0;

static uint64_t next(uint64_t *s)
{
    *s = mix64(*s);
    return *s;
}

static int draw_count(uint64_t *rng, MPI_Aint ext, long maxbytes)
{
    int x = (int)(next(rng) % 100);
    long inl = g_inline_max > 0 ? g_inline_max / (long)ext : 1024 / (long)ext;
    if (inl < 1) inl = 1;
    long big = maxbytes / (long)ext;
    if (big < 2) big = 2;
    if (x < 5) return 0;
    if (x < 15) return 1;
    if (x < 45) return (int)(1 + next(rng) % (uint64_t)inl);
    if (x < 52) return (int)(inl + (long)(next(rng) % 2)); /* at the inline bound, one past */
    if (x < 80) return (int)(1 + next(rng) % (uint64_t)(32768 / ext));
    return (int)(1 + next(rng) % (uint64_t)big);
}

/* describe a reduction for messages */
static void describe(const struct red *r, int round, char *buf, size_t n)
{
    char cb[64];
    combo_name(r->combo, cb, sizeof cb);
    char tb[24];
    if (r->tag == DRED_TAG_AUTO) snprintf(tb, sizeof tb, "auto");
    else snprintf(tb, sizeof tb, "%d", r->tag);
    snprintf(buf, n,
             "mix/seed=%llu/round=%d/red=%d: %s comm=%s(color %d, size %d) root=%d count=%d %s tag=%s%s%s%s%s",
             (unsigned long long)g_seed, round, r->j, kname[r->kind], cname[r->comm], r->color,
             r->cs, r->kind == K_ALLREDUCE ? -1 : r->root, r->count, cb, tb,
             r->inplace ? " in_place" : "", r->recv_block ? " recv_block" : "",
             r->bad_rank >= 0 ? badname[r->badkind] : "", r->src != r->j ? " twin" : "");
}

/* the operand of member `m` (rank in the communicator) of reduction r, `cnt` elements, as
 * packed cells (cnt x ncell basic values); the caller frees it */
static unsigned char *gen_cells(const struct red *r, int round, int m, int cnt)
{
    const struct tdesc *d = r->td;
    size_t ncells = (size_t)cnt * (size_t)d->ncell;
    unsigned char *cells = malloc(ncells * d->cellsz + 1);
    if (!cells) { fail("mix: out of memory"); MPI_Abort(MPI_COMM_WORLD, 2); }
    uint64_t h = mix64(g_seed ^ mix64(((uint64_t)round << 32) ^ ((uint64_t)r->src << 20) ^
                                      ((uint64_t)r->color << 10) ^ (uint64_t)m));
    for (size_t k = 0; k < ncells; k++)
        cell_value(r->o, d->base, (int)(k % (size_t)d->ncell), mix64(h ^ (k * 0x9e3779b97f4a7c15ULL)),
                   cells + k * d->cellsz);
    return cells;
}

/* packed cells into the datatype's layout in buf (holes untouched): MPI places them */
static void place(const struct red *r, const unsigned char *cells, int cnt, unsigned char *buf)
{
    if (cnt == 0) return;
    MPI_Sendrecv(cells, cnt * r->td->ncell, r->td->cell, 0, 11, buf, cnt, r->td->dt, 0, 11,
                 MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

/* the operand of member m, `cnt` elements, in the datatype's layout into buf */
static void gen_operand(const struct red *r, int round, int m, int cnt, unsigned char *buf)
{
    if (cnt == 0) return;
    unsigned char *cells = gen_cells(r, round, m, cnt);
    place(r, cells, cnt, buf);
    free(cells);
}

static void pattern(unsigned char *p, size_t n, uint64_t h)
{
    for (size_t k = 0; k < n; k++) {
        if (k % 8 == 0) h = mix64(h);
        p[k] = (unsigned char)(h >> (8 * (k % 8)));
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fail("mix: out of memory"); MPI_Abort(MPI_COMM_WORLD, 2); }
    return p;
}

/* a buffer from the pool if asked and possible, else malloc; *is_block says which */
static void *get_buf(size_t n, int want_block, int *is_block)
{
    void *p = NULL;
    *is_block = 0;
    if (want_block && dred_alloc_mem(n, &p) == DRED_OK) {
        *is_block = 1;
        return p;
    }
    return xmalloc(n);
}

static void put_buf(void *p, int is_block)
{
    if (!p) return;
    if (is_block) {
        int st = dred_free_mem(p);
        if (st != DRED_OK) fail("mix: dred_free_mem returned %d (%s)", st, dred_strerror(st));
    } else
        free(p);
}

/* the expected recvbuf image where the result lands (a reduce's root, every allreduce
 * member, every bcast member): rinit with the rank-order fold -- a bcast's root operand --
 * written into it.  Predefined ops fold the packed cells (MPICH's MPI_Reduce_local refuses
 * them on derived types), user ops fold in the datatype's layout, as dred must call them. */
static void expected(struct red *r, int round)
{
    const struct tdesc *d = r->td;
    int user = r->o >= O_CMIX, n = user ? r->count : r->count * d->ncell;
    MPI_Datatype t = user ? d->dt : d->cell;
    r->exp = xmalloc(r->span);
    memcpy(r->exp, r->rinit, r->span);
    if (r->count == 0) return;
    if (r->kind == K_BCAST) {
        gen_operand(r, round, r->root, r->count, r->exp);
        return;
    }
    size_t bytes = (size_t)r->count * (size_t)d->ext;
    unsigned char *acc = NULL, *x = NULL;
    if (user) {
        acc = xmalloc(bytes);
        x = xmalloc(bytes);
        memset(acc, 0, bytes);
        memset(x, 0, bytes);
        gen_operand(r, round, r->cs - 1, r->count, acc);
    } else
        acc = gen_cells(r, round, r->cs - 1, r->count);
    for (int m = r->cs - 2; m >= 0; m--) {
        if (user) gen_operand(r, round, m, r->count, x);
        else x = gen_cells(r, round, m, r->count);
        int rc = MPI_Reduce_local(x, acc, n, t, r->op);
        if (rc != MPI_SUCCESS) {
            char w[300];
            describe(r, round, w, sizeof w);
            fail("%s: MPI_Reduce_local returned %d", w, rc);
        }
        if (!user) { free(x); x = NULL; }
    }
    if (user)
        MPI_Sendrecv(acc, r->count, d->dt, 0, 12, r->exp, r->count, d->dt, 0, 12, MPI_COMM_SELF,
                     MPI_STATUS_IGNORE);
    else
        place(r, acc, r->count, r->exp);
    free(acc);
    free(x);
}

/* compare the root's recvbuf with the expected image; returns 1 when equal */
static int compare(const struct red *r, char *why, size_t n)
{
    const struct tdesc *d = r->td;
    size_t data = (size_t)r->count * (size_t)d->ext, from = 0;
    if (d->cmp == CMP_PAIR) {
        for (int i = 0; i < r->count; i++) {
            struct di a, b;
            memcpy(&a, r->rbuf + (size_t)i * sizeof a, sizeof a);
            memcpy(&b, r->exp + (size_t)i * sizeof b, sizeof b);
            if (a.v != b.v || a.i != b.i) {
                snprintf(why, n, "element %d is (%g,%d), expected (%g,%d)", i, a.v, a.i, b.v, b.i);
                return 0;
            }
        }
        from = data;
    } else if (d->cmp == CMP_CPLX) {
        for (int i = 0; i < r->count; i++) {
            double _Complex a, b;
            memcpy(&a, r->rbuf + (size_t)i * sizeof a, sizeof a);
            memcpy(&b, r->exp + (size_t)i * sizeof b, sizeof b);
            if (creal(a) != creal(b) || cimag(a) != cimag(b)) {
                snprintf(why, n, "element %d is %g%+gi, expected %g%+gi", i, creal(a), cimag(a),
                         creal(b), cimag(b));
                return 0;
            }
        }
        from = data;
    }
    for (size_t k = from; k < r->span; k++)
        if (r->rbuf[k] != r->exp[k]) {
            size_t el = k / (size_t)d->ext, in = k % (size_t)d->ext;
            const char *where = k >= data ? "past the result (element count .. guard)" : "in the result";
            int hole = 1;
            if (in >= (size_t)d->off0 && (in - (size_t)d->off0) / (size_t)d->stride < (size_t)d->ncell &&
                (in - (size_t)d->off0) % (size_t)d->stride < d->cellsz)
                hole = 0;
            size_t ndiff = 0, last = k;
            for (size_t q = k; q < r->span; q++)
                if (r->rbuf[q] != r->exp[q]) ndiff++, last = q;
            snprintf(why, n, "byte %zu (element %zu, offset %zu%s, %s) is 0x%02x, expected 0x%02x "
                     "(%zu bytes differ, the last at %zu of %zu)",
                     k, el, in, hole ? ", a hole" : "", where, r->rbuf[k], r->exp[k], ndiff, last, data);
            return 0;
        }
    return 1;
}

/* A bcast one member of which disagrees (count or root), as dred(3) promises it: a member
 * served before the disagreeing one arrived keeps DRED_OK, so each member gets DRED_OK or
 * DRED_ERR_MISMATCH and at least one member of the communicator gets the error (unless
 * one abandoned it: that one's may be the only error); a member whose call names itself
 * the root keeps its data whatever the outcome (checked by the caller); and one that got
 * DRED_OK as a non-root must have asked for the root's data as the root sent it -- the
 * same root and count -- and hold exactly it.  Collective over the communicator.
 * Returns 1 when all holds here. */
/* cross: the members also agree that one of them got DRED_ERR_MISMATCH (an MPI
 * collective: not after a member died, -X) */
static int check_bcast_mismatch(struct red *r, int round, const char *w, int cross)
{
    int mine[2] = {r->abandon ? 0 : r->st == DRED_ERR_MISMATCH, r->abandon}, sum[2] = {1, 0};
    char why[300];
    int ok = 1;
    if (cross) MPI_Allreduce(mine, sum, 2, MPI_INT, MPI_SUM, r->c);
    if (r->abandon) return 1;
    if (r->st != DRED_OK && r->st != DRED_ERR_MISMATCH) {
        fail("%s: status %d (%s) [member %d%s]", w, r->st, dred_strerror(r->st), r->cr,
             r->cr == r->bad_rank ? ", the bad one" : "");
        ok = 0;
    }
    if (sum[0] == 0 && sum[1] == 0 && r->cr == 0) {
        fail("%s: nobody got DRED_ERR_MISMATCH", w);
        ok = 0;
    }
    if (r->st == DRED_OK && !r->my_is_root) {
        if (r->mycount != r->count || r->myroot != r->root) {
            fail("%s: DRED_OK at member %d, whose call (root %d, count %d) disagrees with the root's",
                 w, r->cr, r->myroot, r->mycount);
            ok = 0;
        } else {
            expected(r, round);
            if (!compare(r, why, sizeof why)) {
                fail("%s: DRED_OK at member %d with wrong data: %s", w, r->cr, why);
                ok = 0;
            }
        }
    }
    return ok;
}

/* ---------------------------------------------------------------- a member dies (-X) */

/* -X ROUND: in round ROUND one member, drawn from the seed, dies by SIGKILL at a moment
 * drawn from 0..-x microseconds after it starts issuing that round's calls -- inside a
 * call, in its runtime thread's work, while it computes or waits, or a round later.  With
 * -X ROUND:node every member of one node drawn from the seed dies at that moment, not
 * dred-master's node (the node of dred_comm() rank 0: dredrun --sim-nodes puts the master
 * first on the first name, so give that name 2+ processes): the lowest of them kills the
 * others by pid, then itself.  A real process loss, not a simulated one.
 *
 * Every member finishes the round before it (an MPI_Barrier) before anyone starts it.
 * From that round on, a collective whose group holds a victim may end in
 * DRED_ERR_PROC_FAILED or DRED_ERR_ROOT_FAILED, or in DRED_OK and then exact -- but a
 * bcast whose root lives must end exact (a non-root's death costs the others nothing);
 * every other collective must be exact as always, which is the point: a death must not
 * leak into collectives it had no part in.  Nothing collective of MPI runs from that round on
 * (MPICH's collectives and frees hang once a process died): no fresh communicators, no
 * application collectives, no cross-member look at a mismatched bcast.  Survivors end with
 * dred_finalize, which must say DRED_ERR_PROC_FAILED, and exit without MPI_Finalize; each
 * prints "SURVIVOR rank=R fails=N" (tests/faults/mix-faults.sh counts them). */
static int g_fault_round = -1; /* -1: nobody dies */
static int g_fault_node;       /* a whole node dies */
static long g_fault_delay_us = 10000;
static uint64_t g_dead;        /* dred_comm() ranks that die */
static int g_killer = -1;      /* the rank that kills itself (and its node peers) */
static int *g_pids;            /* every member's pid, by dred_comm() rank */
static pthread_t g_kill_thread;
static int g_kill_started;

/* Collective over g_comm, before the first round: the victims, the killer, the pids. */
static void fault_setup(void)
{
    int p = g_size, me = (int)getpid(), lead, nc = 0, cand[64];
    MPI_Comm node;
    if (p > 64) {
        fail("mix: -X needs at most 64 members (%d)", p);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    g_pids = malloc(sizeof(int) * (size_t)p);
    int *leads = malloc(sizeof(int) * (size_t)p);
    MPI_Allgather(&me, 1, MPI_INT, g_pids, 1, MPI_INT, g_comm);
    MPI_Comm_split_type(g_comm, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    MPI_Allreduce(&g_rank, &lead, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    MPI_Allgather(&lead, 1, MPI_INT, leads, 1, MPI_INT, g_comm);
    uint64_t h = mix64(g_seed ^ 0xdead0001ULL);
    if (!g_fault_node) {
        g_killer = (int)(h % (uint64_t)p);
        g_dead = 1ULL << g_killer;
    } else {
        for (int m = 0; m < p; m++)
            if (leads[m] == m && m != leads[0]) cand[nc++] = m;
        if (nc == 0) {
            if (g_rank == 0) fail("mix: -X ROUND:node needs a node without dred_comm() rank 0");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        g_killer = cand[h % (uint64_t)nc];
        for (int m = 0; m < p; m++)
            if (leads[m] == g_killer) g_dead |= 1ULL << m;
    }
    free(leads);
    g_fault_delay_us = (long)(mix64(g_seed ^ 0xdead0002ULL) % (uint64_t)(g_fault_delay_us + 1));
    if (g_rank == 0)
        printf("mix: round %d: %s %d dies %ld us after it starts issuing (victims 0x%llx)\n",
               g_fault_round, g_fault_node ? "the node of rank" : "rank", g_killer,
               g_fault_delay_us, (unsigned long long)g_dead);
}

static void *killer_main(void *arg)
{
    (void)arg;
    struct timespec ts = {g_fault_delay_us / 1000000, (g_fault_delay_us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
    printf("mix: rank %d kills %s by SIGKILL (step: %s)\n", g_rank,
           g_fault_node ? "its node" : "itself", g_step);
    fflush(stdout);
    for (int m = 0; m < g_size; m++)
        if ((g_dead >> m & 1) && m != g_rank) kill((pid_t)g_pids[m], SIGKILL);
    kill(getpid(), SIGKILL);
    return NULL;
}

/* The killer arms its clock as it starts issuing the fault round's calls. */
static void fault_arm(int round)
{
    if (round != g_fault_round || g_rank != g_killer) return;
    if (pthread_create(&g_kill_thread, NULL, killer_main, NULL) != 0) {
        fail("mix: pthread_create (killer) failed");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    g_kill_started = 1;
}

/* No MPI collective from the fault round on. */
static int mpi_colls_ok(int round)
{
    return g_fault_round < 0 || round < g_fault_round;
}

/* The group of r holds a victim, from the fault round on: an explicit error is allowed. */
static int exposed(const struct red *r, int round)
{
    return g_fault_round >= 0 && round >= g_fault_round && (cmask[r->comm] & g_dead) != 0;
}

/* A victim whose rounds ended before its death waits for it; a survivor finalizes (a
 * member died: DRED_ERR_PROC_FAILED) and exits without MPI_Finalize. */
static int fault_finish(int rounds)
{
    if (g_dead >> g_rank & 1) {
        set_step("after its rounds, waiting to be killed");
        double until = now_s() + wait_limit(60);
        while (now_s() < until) {
            struct timespec ts = {0, 10000000L};
            nanosleep(&ts, NULL);
        }
        fail("mix: victim rank %d still alive 60 s after its rounds", g_rank);
        fflush(stdout);
        _exit(1);
    }
    set_step("dred_finalize after a failure");
    int st = dred_finalize();
    if (st != DRED_ERR_PROC_FAILED)
        fail("mix: dred_finalize after a member died returned %d (%s), expected %s", st,
             dred_strerror(st), dred_strerror(DRED_ERR_PROC_FAILED));
    printf("SURVIVOR rank=%d fails=%d rounds=%d\n", g_rank, g_fail, rounds);
    fflush(stdout);
    _exit(g_fail ? 1 : 0);
}

/* ---------------------------------------------------------------- a round */

struct opts {
    int rounds, first, maxk, only_combo, only_comm, no_bad, ntags, kinds;
    long maxbytes, maxpause_us;
    int starve; /* -S N: in about one round of N a member takes its whole pool mid-issue */
};

static __thread int t_helper; /* this thread is a round's second issuer: no set_step */
#define STEP(...) do { if (!t_helper) set_step(__VA_ARGS__); } while (0)

/* This member's call of kind r->mykind with these arguments (a bcast's buffer is rb). */
static int call_kind(const struct red *r, const void *sb, void *rb, int count, MPI_Op op, int root,
                     int tag, dred_future **f)
{
    switch (r->mykind) {
    case K_REDUCE: return dred_ireduce(sb, rb, count, r->calldt, op, root, r->c, tag, f);
    case K_ALLREDUCE: return dred_iallreduce(sb, rb, count, r->calldt, op, r->c, tag, f);
    default: return dred_ibcast(rb, count, r->calldt, root, r->c, tag, f);
    }
}

/* A call the library must refuse locally (DRED_ERR_ARG, *future NULL), made just before
 * this member's call of r with r's kind, communicator and tag: it must not use up an
 * auto-tag turn or a use of the tag, nor disturb anything in flight. */
static void junk_call(const struct red *r, uint64_t x, const char *w)
{
    static char sentinel;
    dred_future *f = (dred_future *)&sentinel;
    const void *sb = r->sbuf ? (const void *)r->sbuf : (const void *)r->rbuf;
    void *rb = r->rbuf ? (void *)r->rbuf : (void *)&sentinel;
    int kind = (int)(x % 7), st;
    static const char *what[7] = {"count -1", "MPI_IN_PLACE at a non-root", "NULL sendbuf",
                                  "root out of range", "tag -2", "NULL future pointer",
                                  "MPI_OP_NULL"};
    if (kind == 1 && (r->cs < 2 || r->mykind != K_REDUCE)) kind = 0; /* allreduce: allowed */
    if ((kind == 3 && r->mykind == K_ALLREDUCE) || (kind == 6 && r->mykind == K_BCAST)) kind = 4;
    if (sb == NULL) sb = &sentinel;
    STEP("junk call (%s) before %s", what[kind], w);
    switch (kind) {
    case 0: st = call_kind(r, sb, rb, -1, r->callop, r->myroot, r->tag, &f); break;
    case 1: st = call_kind(r, MPI_IN_PLACE, rb, r->mycount, r->callop, (r->cr + 1) % r->cs, r->tag, &f); break;
    case 2: /* (a bcast's NULL buffer) */
        st = call_kind(r, NULL, r->mykind == K_BCAST ? NULL : rb, r->count + 1, r->callop, r->myroot, r->tag, &f);
        break;
    case 3: st = call_kind(r, sb, rb, r->mycount, r->callop, r->cs, r->tag, &f); break;
    case 4: st = call_kind(r, sb, rb, r->mycount, r->callop, r->myroot, -2, &f); break;
    case 5: f = NULL; st = call_kind(r, sb, rb, r->mycount, r->callop, r->myroot, r->tag, NULL); break;
    default: st = call_kind(r, sb, rb, r->mycount, MPI_OP_NULL, r->myroot, r->tag, &f); break;
    }
    if (g_verbose > 1) printf("issue rank=%d: junk call (%s) before %s\n", g_rank, what[kind], w);
    if (st != DRED_ERR_ARG || f != NULL) {
        fail("%s: a refused %s call (%s) returned %d (%s) and future %s", w, kname[r->mykind],
             what[kind], st, dred_strerror(st), f == NULL ? "NULL" : "set");
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 4); /* it may have started a reduction nobody else joins */
    }
}

/* a predefined op the bad member may use instead (MIN or MAX apply to the type), or -1 */
static int other_op(const struct red *r)
{
    int t = combos[r->combo].t;
    if (r->o >= O_CMIX || t == T_DI || t == T_CPLX || t == T_AFF || t == T_AFFH) return -1;
    return r->o == O_MAX ? O_MIN : O_MAX;
}

/* One member's call of r, after an optional pause and refused call.  Blocking calls
 * (dred_reduce) only for DRED_TAG_AUTO reductions: those come in the same order
 * everywhere, so the first one any member blocks in has every member's call issued or
 * coming, and no member waits for another that is blocked behind it. */
enum { STARVE_MAX = 4096 }; /* blocks of a pool taken whole (-S) */

static void issue_one(struct red *r, int round, uint64_t *rng, const struct opts *o)
{
    char w[400];
    if (next(rng) % 4 == 0) {
        long us = (long)(next(rng) % (uint64_t)(o->maxpause_us + 1));
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
        nanosleep(&ts, NULL);
    }
    const void *sb = r->my_inplace ? MPI_IN_PLACE : (const void *)r->sbuf;
    describe(r, round, w, sizeof w);
    if (next(rng) % 12 == 0) junk_call(r, next(rng), w);
    if (g_verbose > 1)
        printf("issue rank=%d%s: %s%s%s\n", g_rank, t_helper ? " (2nd thread)" : "", w,
               r->blocking ? " (blocking)" : "", r->cr == r->bad_rank ? " (the bad member)" : ""),
            fflush(stdout);
    if (r->blocking) {
        STEP("blocking %s %s", kname[r->mykind], w);
        if (r->mykind == K_REDUCE)
            r->st = dred_reduce(sb, r->rbuf, r->mycount, r->calldt, r->callop, r->myroot, r->c);
        else if (r->mykind == K_ALLREDUCE)
            r->st = dred_allreduce(sb, r->rbuf, r->mycount, r->calldt, r->callop, r->c);
        else
            r->st = dred_bcast(r->rbuf, r->mycount, r->calldt, r->myroot, r->c);
        r->f = NULL;
        return;
    }
    STEP("nonblocking %s %s", kname[r->mykind], w);
    r->st = call_kind(r, sb, r->rbuf, r->mycount, r->callop, r->myroot, r->tag, &r->f);
    if ((r->st == DRED_ERR_PROC_FAILED || r->st == DRED_ERR_ROOT_FAILED) && exposed(r, round)) {
        r->f = NULL; /* a member of its group died (-X): refused at the call */
        return;
    }
    if (r->st != DRED_OK) {
        fail("%s: the nonblocking %s returned %d (%s)", w, kname[r->mykind], r->st, dred_strerror(r->st));
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 4); /* the others would wait on it for ever */
    }
    if (r->abandon) {
        dred_future_free(r->f);
        r->f = NULL;
        /* libdred never reads a private sendbuf again: scribble it with the others
         * after the batch (a block stays the operand until the reduction ends); recvbuf
         * may be written until the collective ends, so it outlives the round */
        r->keep_rbuf = r->mykind != K_REDUCE;
        if (r->sbase != NULL && !r->sbuf_is_block) {
            r->scribble = 1;
            free(r->scopy);
            r->scopy = NULL;
        }
    }
}

/* Wait for a future in dred_future_wait slices (the waiting thread does its collective's
 * pending work, where wait_bounded's polls only look), at most wait_limit(secs); a hang
 * fails and aborts the job, as wait_bounded's does. */
static int wait_in_call(dred_future *f, double secs, const char *what, uint64_t x)
{
    static const int slice_ms[4] = {0, 1, 20, 200}; /* 0: a bounded look, as a poll */
    double deadline = now_s() + wait_limit(secs);
    for (;;) {
        int st = dred_future_wait(f, slice_ms[x % 4]);
        if (st != DRED_ERR_TIMEOUT) return st;
        if (now_s() > deadline) {
            fail("%s: not done after %.0f s in dred_future_wait (hang?)", what, wait_limit(secs));
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

struct issuer {
    struct red **list;
    int n;
    uint64_t rng;
    int round;
    const struct opts *o;
};

static void *issuer_main(void *arg)
{
    struct issuer *is = arg;
    t_helper = 1;
    for (int k = 0; k < is->n; k++) issue_one(is->list[k], is->round, &is->rng, is->o);
    return NULL;
}

/* r's group holds a member that died (-X): an explicit error, or DRED_OK with the exact
 * result where it lands.  A mismatched collective may still say DRED_ERR_MISMATCH; where
 * it says DRED_OK, only a bcast member whose own call agrees with the root's may, with the
 * root's data (a reduce or allreduce folded across a disagreement would be wrong).  A
 * bcast whose root lives is owed more: a non-root's death, whenever it comes, costs the
 * others nothing (dred(3), dred_ibcast), so DRED_OK and the root's data. */
static int check_exposed(struct red *r, int round, const char *w)
{
    char why[300];
    int bad = r->bad_rank >= 0, lands = r->kind != K_REDUCE || r->is_root;
    if (r->abandon) return 1;
    if (r->kind == K_BCAST && !bad && r->root < 64 && !(g_dead >> cworld[r->comm][r->root] & 1)) {
        if (r->st != DRED_OK) {
            fail("%s: status %d (%s) at member %d of a bcast whose root lives, after a non-root "
                 "died (it should cost the others nothing)", w, r->st, dred_strerror(r->st), r->cr);
            return 0;
        }
        if (!compare(r, why, sizeof why)) {
            fail("%s: wrong data at member %d after a non-root died: %s", w, r->cr, why);
            return 0;
        }
        return 1;
    }
    if (r->st == DRED_ERR_PROC_FAILED || r->st == DRED_ERR_ROOT_FAILED || (bad && r->st == DRED_ERR_MISMATCH))
        return 1;
    if (r->st != DRED_OK) {
        fail("%s: status %d (%s) after a member of its group died [member %d]", w, r->st,
             dred_strerror(r->st), r->cr);
        return 0;
    }
    if (bad && r->kind == K_BCAST) return check_bcast_mismatch(r, round, w, 0);
    if (bad && (lands || r->my_is_root)) {
        /* A disagreeing member that died before dred-master heard from it is recovered from
         * a copy that states its own parameters (tests/faults/unseen-mismatch.sh): the
         * disagreement is seen all the same, whoever died. */
        fail("%s: DRED_OK at member %d of a mismatched %s after a member died%s", w, r->cr,
             kname[r->kind], (g_dead >> cworld[r->comm][r->bad_rank] & 1) ? " (the disagreeing one)" : "");
        return 0;
    }
    if (!bad && lands && !compare(r, why, sizeof why)) {
        fail("%s: wrong result at member %d%s after a member of its group died: %s", w, r->cr,
             r->is_root ? " (the root)" : "", why);
        return 0;
    }
    return 1;
}

static int run_round(int round, const struct opts *o)
{
    static struct red R[MAXK_LIMIT];
    uint64_t rng = mix64(g_seed ^ mix64(0x726f756e64ULL + (uint64_t)round));
    int K = 1 + (int)(next(&rng) % (uint64_t)o->maxk);
    int fresh = o->only_comm == C_FRESH || (o->only_comm < 0 && next(&rng) % 3 == 0);
    if (!mpi_colls_ok(round)) fresh = 0; /* (-X: no MPI collective once a member died) */
    int ncomm = fresh ? NCOMM : NCOMM - 1; /* C_FRESH is the last kind */
    int coll = (int)(next(&rng) % 4), coll_comm = (int)(next(&rng) % (uint64_t)ncomm);
    if (!mpi_colls_ok(round)) coll = 0;
    if (fresh) {
        set_step("round %d: making the round's communicator", round);
        make_fresh_comm(round);
    }
    int used_tags[MAXK_LIMIT], used_comm[MAXK_LIMIT], nused = 0;
    char w[400];

    /* 1. the plan (the same on every member) */
    for (int j = 0; j < K; j++) {
        struct red *r = &R[j];
        memset(r, 0, sizeof *r);
        r->j = r->src = j;
        r->comm = o->only_comm >= 0 ? o->only_comm : (int)(next(&rng) % (uint64_t)ncomm);
        r->combo = o->only_combo >= 0 ? o->only_combo : (int)(next(&rng) % NCOMBO);
        do r->kind = (int)(next(&rng) % NKIND); while (!(o->kinds & (1 << r->kind)));
        /* a twin of the previous reduction: the same communicator, type, op, count and
         * operands (its own kind, root and tag), so members may pass the same sendbuf to
         * both (no bcast: its buffer is written at the non-roots) */
        int twin = j > 0 && next(&rng) % 8 == 0 && !R[j - 1].bad_planned && r->kind != K_BCAST &&
                   R[j - 1].kind != K_BCAST;
        if (twin) {
            r->src = R[j - 1].src;
            r->comm = R[j - 1].comm;
            r->combo = R[j - 1].combo;
        }
        r->td = &types[combos[r->combo].t];
        r->o = combos[r->combo].o;
        r->op = ops[r->o];
        r->count = draw_count(&rng, r->td->ext, o->maxbytes);
        if (twin) r->count = R[j - 1].count;
        r->rootsel = next(&rng);
        if (next(&rng) % 2) r->tag = DRED_TAG_AUTO;
        else {
            int t, dup, tries = 0;
            do {
                uint64_t x = next(&rng);
                t = x % 16 == 0 ? (x % 32 == 0 ? INT_MAX : (1 << 30) + (int)(x % 3)) : (int)(x % (uint64_t)o->ntags);
                dup = 0;
                for (int k = 0; k < nused; k++) dup |= used_tags[k] == t && cshare[used_comm[k]][r->comm];
            } while (dup && ++tries < 1000);
            if (dup) r->tag = DRED_TAG_AUTO; /* every tag taken on this group */
            else {
                used_comm[nused] = r->comm;
                used_tags[nused++] = t;
                r->tag = t;
            }
        }
        r->inplace = next(&rng) % 4 == 0 && r->kind == K_REDUCE; /* allreduce: each member's own */
        r->recv_block = next(&rng) % 5 == 0;
        int bad = !o->no_bad && next(&rng) % 12 == 0 && !twin;
        r->bad_planned = bad;
        uint64_t bk = next(&rng);
        r->badsel = next(&rng);
        r->badsel2 = next(&rng);
        r->badsign = (int)(next(&rng) % 2);
        /* this member's view */
        r->c = comms[r->comm];
        r->cr = crank[r->comm];
        r->cs = csize[r->comm];
        r->color = ccolor[r->comm];
        r->root = (int)(r->rootsel % (uint64_t)r->cs);
        r->is_root = r->cr == r->root;
        r->badkind = BAD_NONE;
        if (bad && r->cs >= 2) {
            /* a kind mismatch only between reduce and allreduce (the same arguments) and
             * auto-tagged (explicit tags are per kind: the two would never meet) */
            r->badkind = (int)(bk % 4) + BAD_COUNT;
            if ((r->badkind == BAD_OP && (other_op(r) < 0 || r->kind == K_BCAST)) ||
                (r->badkind == BAD_ROOT && r->kind == K_ALLREDUCE) ||
                (r->badkind == BAD_KIND && (r->kind == K_BCAST || r->tag != DRED_TAG_AUTO)))
                r->badkind = BAD_COUNT;
        }
        r->bad_rank = r->badkind != BAD_NONE ? (int)(r->badsel % (uint64_t)r->cs) : -1;
        r->mykind = r->kind;
        r->mycount = r->count;
        r->myroot = r->root;
        r->myo = r->o;
        if (r->cr == r->bad_rank) {
            if (r->badkind == BAD_COUNT)
                r->mycount = r->count > 0 && r->badsign ? r->count - 1 : r->count + 1;
            else if (r->badkind == BAD_ROOT)
                r->myroot = (r->root + 1 + (int)(r->badsel2 % (uint64_t)(r->cs - 1))) % r->cs;
            else if (r->badkind == BAD_KIND)
                r->mykind = r->kind == K_REDUCE ? K_ALLREDUCE : K_REDUCE;
            else
                r->myo = other_op(r);
        }
        r->my_is_root = r->mykind == K_ALLREDUCE || r->cr == r->myroot;
        /* MPI_IN_PLACE only where this member's own call names itself the root, and not
         * from a member that disagrees on the root (it would be refused at a non-root) */
        r->my_inplace = r->inplace && r->my_is_root && r->badkind != BAD_ROOT;
        r->span = (size_t)(r->count + 1) * (size_t)r->td->ext + GUARD;
        r->st = -1;
    }
    if (g_verbose && g_rank == 0)
        for (int j = 0; j < K; j++) {
            describe(&R[j], round, w, sizeof w);
            printf("plan %s\n", w);
        }

    /* 2. this member's own choices and buffers */
    uint64_t lrng = mix64(g_seed ^ mix64(0x6c6f63616cULL + ((uint64_t)round << 16) + (uint64_t)g_rank));
    for (int j = 0; j < K; j++) {
        struct red *r = &R[j];
        int derived = r->td->dt != r->td->cell && r->td != &types[T_DI] && r->td != &types[T_CPLX];
        /* any allreduce member may pass MPI_IN_PLACE (not in a kind mismatch: its reduce
         * counterpart would be refused at a non-root) */
        if (r->mykind == K_ALLREDUCE && r->badkind != BAD_KIND && next(&lrng) % 4 == 0)
            r->my_inplace = 1;
        r->poll_wait = next(&lrng) % 2;
        r->use_block = next(&lrng) % 3 == 0;
        r->block_off = 8 * (int)(next(&lrng) % 9);
        /* (a reduce's non-root operand is copied in the call and read again only in
         * recovery -- a member whose own copy is not stored yet reloads it from sendbuf --
         * so never from the fault round on (-X), where recovery is the point; a root may
         * read its sendbuf again when its slot spills after an early fold, and the other
         * kinds keep dred(3)'s rule too: sendbuf untouched until the future is done) */
        r->scribble = next(&lrng) % 3 == 0 && r->mykind == K_REDUCE && !r->my_is_root &&
                      (g_fault_round < 0 || round < g_fault_round);
        r->early_free = r->use_block && next(&lrng) % 3 == 0;
        r->null_recv = next(&lrng) % 2 && !r->my_is_root && r->mykind == K_REDUCE;
        r->blocking = r->tag == DRED_TAG_AUTO && next(&lrng) % 6 == 0;
        /* a non-root member that frees its future at once (abandons the reduction
         * locally): the others must still get their result.  Auto tags only: an explicit
         * tag reused next round could still be in flight here, which is refused. */
        int any_member = r->kind == K_ALLREDUCE && r->mykind == K_ALLREDUCE;
        r->abandon = r->tag == DRED_TAG_AUTO && !r->blocking &&
                     (any_member || (!r->is_root && !r->my_is_root)) && next(&lrng) % 10 == 0;
        r->vtype = derived && next(&lrng) % 3 == 0;
        r->vop = r->myo >= O_CMIX && r->mykind != K_BCAST && next(&lrng) % 3 == 0;
        r->calldt = r->td->dt;
        r->callop = ops[r->myo];
        if (r->vtype) {
            MPI_Type_dup(r->td->dt, &r->calldt);
            vt_add(r->calldt, r->td);
        }
        if (r->vop) MPI_Op_create(ufn[r->myo], ucommute[r->myo], &r->callop);
        struct red *tw = r->src != r->j ? &R[j - 1] : NULL;
        if (r->mykind == K_BCAST) {
            /* no sendbuf: the buffer below is the root's data, the others' result */
        } else if (!r->my_inplace && tw && tw->sbuf) {
            /* the twin's sendbuf, read by both reductions (a pool block: two pending
             * reductions reading the same bytes); checked unchanged by its owner */
            r->sbuf = tw->sbuf;
            r->sbuf_is_block = tw->sbuf_is_block;
            r->scribble = r->early_free = 0;
        } else if (!r->my_inplace) {
            r->sbase = get_buf(r->span + (size_t)r->block_off, r->use_block, &r->sbuf_is_block);
            r->sbuf = r->sbase + (r->sbuf_is_block ? r->block_off : 0);
            pattern(r->sbuf, r->span, next(&lrng));
            gen_operand(r, round, r->cr, r->mycount, r->sbuf);
            if (!r->scribble || r->sbuf_is_block) {
                r->scribble = 0;
                r->scopy = xmalloc(r->span);
                memcpy(r->scopy, r->sbuf, r->span);
            }
        }
        if (r->is_root || r->my_is_root || !r->null_recv) {
            /* (not for an abandoned one: it outlives the round, see issue_one) */
            int block = r->recv_block && (r->kind != K_REDUCE || r->is_root) && !r->abandon;
            r->rbuf = get_buf(r->span, block, &r->rbuf_is_block);
            r->rinit = xmalloc(r->span);
            pattern(r->rinit, r->span, next(&lrng));
            memcpy(r->rbuf, r->rinit, r->span);
            if (r->my_inplace) gen_operand(r, round, r->cr, r->mycount, r->rbuf);
            if (r->mykind == K_BCAST && r->my_is_root) { /* its data, which must stay so */
                gen_operand(r, round, r->cr, r->mycount, r->rbuf);
                memcpy(r->rinit, r->rbuf, r->span);
            }
        }
    }

    /* 3. the issue order: shuffled; the DRED_TAG_AUTO slots then refilled in plan order */
    int order[MAXK_LIMIT], autos[MAXK_LIMIT], na = 0;
    for (int j = 0; j < K; j++) order[j] = j;
    for (int j = K - 1; j > 0; j--) {
        int k = (int)(next(&lrng) % (uint64_t)(j + 1)), x = order[j];
        order[j] = order[k];
        order[k] = x;
    }
    for (int j = 0; j < K; j++) if (R[j].tag == DRED_TAG_AUTO) autos[na++] = j;
    for (int k = 0, a = 0; k < K; k++) if (R[order[k]].tag == DRED_TAG_AUTO) order[k] = autos[a++];

    /* Some rounds, a second thread issues the explicit-tag reductions (in this member's
     * order) while this one issues the rest: libdred's calls are thread-safe. */
    struct issuer helper = {NULL, 0, next(&lrng), round, o};
    struct red *mine[MAXK_LIMIT];
    int nmine = 0, threaded = next(&lrng) % 3 == 0;
    pthread_t th;
    if (threaded) helper.list = malloc(sizeof(struct red *) * (size_t)K);
    for (int k = 0; k < K; k++) {
        struct red *r = &R[order[k]];
        if (threaded && r->tag != DRED_TAG_AUTO) helper.list[helper.n++] = r;
        else mine[nmine++] = r;
    }
    if (threaded && pthread_create(&th, NULL, issuer_main, &helper) != 0) {
        fail("mix: pthread_create failed");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* -S: this member's pool taken with dred_alloc_mem before its starve_at-th call and
     * given back once its calls are issued, so its arrivals in that window have no place
     * for an operand and their slots spill to dred-master, after whatever its peers did
     * there (its own RNG: the round's draws stay those of the same seed without -S) */
    uint64_t srng = mix64(g_seed ^ mix64(0x7374617276ULL + (uint64_t)round * 977u + (uint64_t)g_rank));
    int starve_at = o->starve > 0 && next(&srng) % (uint64_t)o->starve == 0
                        ? (int)(next(&srng) % (uint64_t)(nmine + 1)) : -1, nstarve = 0;
    void **starved = starve_at >= 0 ? malloc(sizeof(void *) * STARVE_MAX) : NULL;
    fault_arm(round);
    for (int k = 0; k <= nmine; k++) {
        if (k == starve_at && starved != NULL) {
            STEP("round %d: taking this member's pool", round);
            nstarve = pool_take_all(starved, STARVE_MAX);
            if (g_verbose) printf("mix: round %d rank %d: pool taken (%d blocks) before call %d of %d\n",
                                  round, g_rank, nstarve, k, nmine);
        }
        if (k < nmine) issue_one(mine[k], round, &lrng, o);
    }
    if (threaded) {
        pthread_join(th, NULL);
        free(helper.list);
    }
    for (int k = 0; k < nstarve; k++) dred_free_mem(starved[k]);
    free(starved);
    /* 4. sendbufs were copied: scribble over some; free some blocks while pending and
     * scribble over a new block (it must not overlap the pending one); free the dup'd
     * datatypes and new ops (libdred keeps them for their reductions) */
    for (int j = 0; j < K; j++) {
        struct red *r = &R[j];
        if (r->scribble && r->sbuf) memset(r->sbuf, 0xEE, r->span);
        if (r->early_free && r->sbuf_is_block) {
            int st = dred_free_mem(r->sbase);
            if (st != DRED_OK) fail("mix: early dred_free_mem returned %d (%s)", st, dred_strerror(st));
            r->sbuf = r->sbase = NULL;
            free(r->scopy);
            r->scopy = NULL;
            if (dred_alloc_mem(r->span, &r->block2) == DRED_OK) memset(r->block2, 0xDD, r->span);
            else r->block2 = NULL;
        }
        if (r->vtype) MPI_Type_free(&r->calldt);
        if (r->vop) MPI_Op_free(&r->callop);
    }
    /* 4a. computing before it waits (some rounds, each member its own time): nobody waits,
     * so whatever the collectives need done meanwhile is the runtime thread's */
    if (next(&lrng) % 4 == 0) {
        double until = now_s() + 1e-6 * (double)(next(&lrng) % 5000);
        while (now_s() < until) {}
    }
    /* 4b. the application's own collectives while the reductions run (some rounds) */
    if (coll == 1) {
        set_step("round %d: MPI_Barrier", round);
        MPI_Barrier(g_comm);
    } else if (coll == 2) {
        int one = 1, n = 0;
        set_step("round %d: MPI_Allreduce on %s", round, cname[coll_comm]);
        MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, comms[coll_comm]);
        if (n != csize[coll_comm]) fail("mix: MPI_Allreduce on %s gave %d", cname[coll_comm], n);
    }
    /* 5. the expected values, while the reductions run */
    for (int j = 0; j < K; j++)
        if ((R[j].kind != K_REDUCE || R[j].is_root) && R[j].bad_rank < 0 && !R[j].abandon) {
            set_step("round %d: expected value of reduction %d", round, j);
            expected(&R[j], round);
        }
    /* 6. wait in a random order */
    for (int j = K - 1; j > 0; j--) {
        int k = (int)(next(&lrng) % (uint64_t)(j + 1)), x = order[j];
        order[j] = order[k];
        order[k] = x;
    }
    for (int k = 0; k < K; k++) {
        struct red *r = &R[order[k]];
        if (r->f == NULL) continue; /* dred_reduce, or abandoned */
        describe(r, round, w, sizeof w);
        set_step("waiting %s", w);
        r->st = r->poll_wait ? wait_bounded(r->f, 60, w) : wait_in_call(r->f, 60, w, next(&lrng));
        dred_future_free(r->f);
    }
    /* 7. checks */
    int nok = 0, nbad = 0, nfail = 0, nabandoned = 0, nerr = 0;
    for (int j = 0; j < K; j++) {
        struct red *r = &R[j];
        char why[300];
        describe(r, round, w, sizeof w);
        int want = r->bad_rank >= 0 ? DRED_ERR_MISMATCH : DRED_OK;
        int ok = 1;
        if (exposed(r, round)) {
            ok = check_exposed(r, round, w);
            nerr += ok && !r->abandon && r->st != DRED_OK && r->st != DRED_ERR_MISMATCH;
        } else if (r->kind == K_BCAST && r->bad_rank >= 0) {
            ok = check_bcast_mismatch(r, round, w, mpi_colls_ok(round));
        } else if (r->abandon) {
            /* nothing reported here; the root checks the result */
        } else if (r->st != want) {
            fail("%s: status %d (%s), expected %s [member %d of the comm%s]", w, r->st,
                 dred_strerror(r->st), dred_strerror(want), r->cr,
                 r->cr == r->bad_rank ? ", the bad one" : "");
            ok = 0;
        } else if ((r->kind != K_REDUCE || r->is_root) && want == DRED_OK &&
                   !compare(r, why, sizeof why)) {
            fail("%s: wrong result at member %d%s: %s", w, r->cr, r->is_root ? " (the root)" : "", why);
            ok = 0;
        }
        if (r->scopy && r->sbuf && memcmp(r->scopy, r->sbuf, r->span)) {
            fail("%s: sendbuf changed [member %d%s]", w, r->cr, r->sbuf_is_block ? ", a dred_alloc_mem block" : "");
            ok = 0;
        }
        if (r->mykind == K_REDUCE && !r->my_is_root && r->rbuf && memcmp(r->rbuf, r->rinit, r->span)) {
            fail("%s: recvbuf of non-root member %d written", w, r->cr);
            ok = 0;
        }
        if (r->mykind == K_BCAST && r->my_is_root && !r->abandon && memcmp(r->rbuf, r->rinit, r->span)) {
            fail("%s: the buffer of bcast root %d changed (status %d)", w, r->cr, r->st);
            ok = 0;
        }
        if (!ok) nfail++;
        else if (r->abandon) nabandoned++;
        else if (r->st == DRED_OK) nok++;
        else if (r->st == DRED_ERR_MISMATCH) nbad++;
        put_buf(r->sbase, r->sbuf_is_block);
        if (!r->keep_rbuf) put_buf(r->rbuf, r->rbuf_is_block); /* (else malloc'd: left) */
        put_buf(r->block2, 1);
        free(r->scopy); free(r->rinit); free(r->exp);
    }
    if (fresh) MPI_Comm_free(&comms[C_FRESH]);
    /* -X: every member done with the rounds before the fault round before a victim can
     * die (members are not in step: a root that got its result may be a round ahead while
     * the others still wait, and its death then rightly ends theirs in ROOT_FAILED) */
    if (g_fault_round >= 0 && round == g_fault_round - 1) MPI_Barrier(g_comm);
    if (nfail == 0)
        pass("mix/seed=%llu/round=%d/rank=%d: %d collectives, %d exact or OK, %d mismatches reported, "
             "%d abandoned%s%.0d", (unsigned long long)g_seed, round, g_rank, K, nok, nbad, nabandoned,
             nerr ? ", ended by a member's death: " : "", nerr);
    return nfail;
}

int main(int argc, char **argv)
{
    struct opts o = {20, 0, 24, -1, -1, 0, 40, (1 << NKIND) - 1, 300000, 2000, 0};
    int list = 0;
    const char *only_combo = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) g_seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) o.rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-R") && i + 1 < argc) o.first = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-K") && i + 1 < argc) o.maxk = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-B") && i + 1 < argc) o.maxbytes = atol(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) o.ntags = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) {
            char *list = argv[++i], *save = NULL;
            o.kinds = 0;
            for (char *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int c = 0; c < NKIND; c++)
                    if (!strcmp(k, kname[c])) o.kinds |= 1 << c, found = 1;
                if (!found) { fprintf(stderr, "mix: unknown kind %s (reduce, allreduce, bcast)\n", k); return 2; }
            }
        }
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) o.maxpause_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) only_combo = argv[++i];
        else if (!strcmp(argv[i], "-C") && i + 1 < argc) {
            const char *n = argv[++i];
            for (int c = 0; c < NCOMM; c++) if (!strcmp(n, cname[c])) o.only_comm = c;
            if (o.only_comm < 0) { fprintf(stderr, "mix: unknown communicator %s\n", n); return 2; }
        } else if (!strcmp(argv[i], "--no-bad")) o.no_bad = 1;
        else if (!strcmp(argv[i], "-S") && i + 1 < argc) o.starve = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-X") && i + 1 < argc) {
            char *x = argv[++i];
            g_fault_round = atoi(x);
            g_fault_node = strstr(x, ":node") != NULL;
        } else if (!strcmp(argv[i], "-x") && i + 1 < argc) g_fault_delay_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "-v")) g_verbose = 1;
        else if (!strcmp(argv[i], "-vv")) g_verbose = 2;
    }
    if (o.maxk < 1) o.maxk = 1;
    if (o.maxk > MAXK_LIMIT) o.maxk = MAXK_LIMIT;
    if (o.maxbytes < 64) o.maxbytes = 64;
    if (o.ntags < 1) o.ntags = 1;
    if (o.maxpause_us < 0) o.maxpause_us = 0;
    const char *im = dred_setting_raw(DRED_S_INLINE_MAX);
    if (im) g_inline_max = atoi(im);

    test_init(&argc, &argv, "mix");
    make_types();
    if (only_combo) {
        char n[64];
        list = !strcmp(only_combo, "list");
        for (int c = 0; c < NCOMBO; c++) {
            combo_name(c, n, sizeof n);
            if (list && g_rank == 0) printf("combo %s\n", n);
            if (!strcmp(n, only_combo)) o.only_combo = c;
        }
        if (o.only_combo < 0 && !list) {
            if (g_rank == 0) fprintf(stderr, "mix: unknown combination %s (-T list)\n", only_combo);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    make_comms(g_seed);
    if (g_fault_round >= 0) {
        if (g_fault_round < o.first || g_fault_round >= o.first + o.rounds || g_fault_delay_us < 0) {
            if (g_rank == 0) fprintf(stderr, "mix: -X %d outside rounds %d..%d (or -x < 0)\n",
                                     g_fault_round, o.first, o.first + o.rounds - 1);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        fault_setup();
    }
    if (g_rank == 0)
        printf("mix: seed %llu, rounds %d..%d, P=%d, DRED_INLINE_MAX=%d; sub part of rank 0: "
               "color %d size %d\n",
               (unsigned long long)g_seed, o.first, o.first + o.rounds - 1, g_size, g_inline_max,
               ccolor[C_SUB], csize[C_SUB]);
    double t0 = now_s();
    int nfail = 0;
    for (int round = o.first; !list && round < o.first + o.rounds; round++)
        nfail += run_round(round, &o);
    if (g_rank == 0 || g_fault_round >= 0)
        printf("mix: %d rounds in %.2f s\n", o.rounds, now_s() - t0);
    (void)nfail;
    if (g_fault_round >= 0) return fault_finish(o.rounds);
    for (int c = 1; c < NCOMM; c++)
        if (comms[c] != MPI_COMM_NULL) MPI_Comm_free(&comms[c]);
    free_types();
    return test_finish();
}
