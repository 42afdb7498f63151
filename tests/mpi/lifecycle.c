/*
 * lifecycle.c -- calls before dred_init and after dred_finalize; who owns MPI.
 *
 *   dredrun -n P mpi_lifecycle self   dred_init initialises MPI (the app never calls MPI_Init)
 *   dredrun -n P mpi_lifecycle app    the app calls MPI_Init_thread(MULTIPLE) first, then
 *                                     dred_init ... dred_finalize, then MPI_Finalize itself
 *   dredrun [--external-master] -n P mpi_lifecycle world
 *                                     as self, then whose MPI_COMM_WORLD it is: with the
 *                                     master beside the job (DRED_MASTER_ADDR set) the
 *                                     application's own -- P processes, dred_comm()
 *                                     congruent to it, dred_reduce on it exact; with the
 *                                     master as rank 0, dred_reduce on it DRED_ERR_ARG
 *
 * Before dred_init: dred_comm() == MPI_COMM_NULL, dred_reduce / dred_ireduce /
 * dred_finalize return DRED_ERR_ARG (*future set to NULL), NULL-future calls are safe, and
 * (self) MPI is still uninitialised.  Then dred_init works: MPI initialised with
 * MPI_THREAD_MULTIPLE, dred_comm() has WORLD size - 1 members, reductions are right.
 * After dred_finalize: dred_comm() == MPI_COMM_NULL, dred_reduce / dred_ireduce /
 * dred_finalize return DRED_ERR_SHUTDOWN; (self) MPI is finalised, (app) it is not and the
 * app's own communicator still works.  Checks are local to each process (no MPI outside
 * the window); each process exits non-zero on a failure of its own.
 */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dred.h"
#include "mpitest.h"
#include "../../common/settings.h"

static int world_rank_env(void)
{
    const char *e = getenv("PMI_RANK");
    return e ? atoi(e) : -1;
}

/* The value of an integer MPI_T control variable, or -1 when this MPI has no such variable.
 * dred_init turns MPICH's symmetric-heap probe off while it allocates its pool
 * (lib/mpi/window.c) and must put it back: the application's own windows keep MPI's
 * behaviour, and its own MPI_T calls keep working.  The test's MPI_T session stays open
 * (MPICH 4.0.2 crashes in MPI_Init after an MPI_T_init/MPI_T_finalize pair, and refuses
 * MPI_T_init_thread after the last MPI_T_finalize). */
static int cvar_int(const char *name)
{
    static int inited;
    int prov, idx, n, v = -1;
    MPI_T_cvar_handle h;
    if (!inited && MPI_T_init_thread(MPI_THREAD_MULTIPLE, &prov) != MPI_SUCCESS) return -2;
    inited = 1;
    if (MPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) == MPI_SUCCESS) {
        if (n != 1 || MPI_T_cvar_read(h, &v) != MPI_SUCCESS) v = -1;
        MPI_T_cvar_handle_free(&h);
    }
    return v;
}

static void lpass(const char *what)
{
    if (world_rank_env() == 1 || (g_rank == 0)) pass("%s", what);
}

static void expect(const char *what, int got, int want)
{
    if (got != want)
        fail("lifecycle/%s: returned %d (%s), expected %d (%s) [world rank %d]", what, got,
             dred_strerror(got), want, dred_strerror(want), world_rank_env());
    else {
        char b[200];
        snprintf(b, sizeof b, "lifecycle/%s", what);
        lpass(b);
    }
}

static void outside_window(const char *when, int want)
{
    char w[160];
    int s[4] = {1, 2, 3, 4}, r[4] = {0};
    snprintf(w, sizeof w, "%s/dred_comm_is_null", when);
    if (dred_comm() != MPI_COMM_NULL) fail("lifecycle/%s: dred_comm() is not MPI_COMM_NULL", w);
    else { char b[200]; snprintf(b, sizeof b, "lifecycle/%s", w); lpass(b); }
    snprintf(w, sizeof w, "%s/dred_reduce", when);
    expect(w, dred_reduce(s, r, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), want);
    static char sentinel;
    dred_future *f = (dred_future *)&sentinel;
    snprintf(w, sizeof w, "%s/dred_ireduce", when);
    expect(w, dred_ireduce(s, r, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, 3, &f), want);
    if (f != NULL) fail("lifecycle/%s: *future not set to NULL", w);
    snprintf(w, sizeof w, "%s/dred_ireduce_auto", when);
    f = (dred_future *)&sentinel;
    expect(w, dred_ireduce(s, r, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, DRED_TAG_AUTO, &f), want);
    snprintf(w, sizeof w, "%s/future_is_done(NULL)", when);
    expect(w, dred_future_is_done(NULL), -1);
    snprintf(w, sizeof w, "%s/future_get(NULL)", when);
    expect(w, dred_future_get(NULL), DRED_ERR_ARG);
    dred_future_free(NULL);
    const char *m = dred_strerror(want);
    if (!m || !*m) fail("lifecycle/%s: dred_strerror(%d) NULL or empty", when, want);
}

int main(int argc, char **argv)
{
    int app_mode = argc > 1 && !strcmp(argv[1], "app");
    int world_mode = argc > 1 && !strcmp(argv[1], "world");
    int external = dred_setting_raw(DRED_S_MASTER_ADDR) != NULL;
    g_prog = app_mode ? "lifecycle(app)" : world_mode ? "lifecycle(world)" : "lifecycle(self)";
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    signal(SIGTERM, on_term);
    int flag = 0;

    if (app_mode) {
        int prov = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
        if (prov != MPI_THREAD_MULTIPLE) fail("lifecycle/app: MPI gave thread level %d", prov);
    }
    /* ---- before dred_init ---- */
    set_step("before dred_init");
    outside_window(app_mode ? "app/before_init" : "self/before_init", DRED_ERR_ARG);
    expect(app_mode ? "app/before_init/dred_finalize" : "self/before_init/dred_finalize",
           dred_finalize(), DRED_ERR_ARG);
    MPI_Initialized(&flag);
    if (!app_mode && flag) fail("lifecycle/self/before_init: a rejected call initialised MPI");

    /* ---- inside the window ---- */
    set_step("dred_init");
    int symheap = cvar_int("MPIR_CVAR_SHM_SYMHEAP_RETRY");
    int st = dred_init(&argc, &argv);
    if (st != DRED_OK) {
        fail("lifecycle/dred_init after the rejected calls: %d (%s)", st, dred_strerror(st));
        return 1;
    }
    g_comm = dred_comm();
    if (g_comm == MPI_COMM_NULL) {
        fail("lifecycle/dred_comm() is MPI_COMM_NULL after dred_init");
        return 1;
    }
    MPI_Comm_rank(g_comm, &g_rank);
    MPI_Comm_size(g_comm, &g_size);
    int wsize, level;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Initialized(&flag);
    if (!flag) fail("lifecycle/dred_init did not initialise MPI");
    MPI_Query_thread(&level);
    if (level != MPI_THREAD_MULTIPLE) fail("lifecycle/thread level %d, not MPI_THREAD_MULTIPLE", level);
    if (cvar_int("MPIR_CVAR_SHM_SYMHEAP_RETRY") != symheap)
        fail("lifecycle/dred_init left MPIR_CVAR_SHM_SYMHEAP_RETRY at %d (it was %d)",
             cvar_int("MPIR_CVAR_SHM_SYMHEAP_RETRY"), symheap);
    else if (g_rank == 0)
        pass("lifecycle/dred_init put MPICH's MPIR_CVAR_SHM_SYMHEAP_RETRY back (%d)", symheap);
    if (g_size != wsize - 1 + external) fail("lifecycle/dred_comm() has %d members, WORLD %d", g_size, wsize);
    else if (g_rank == 0)
        pass("lifecycle/%s/dred_init: MULTIPLE, dred_comm() = WORLD%s", app_mode ? "app" : "self",
             external ? " (master outside the job)" : " minus master");
    if (world_mode) {
        enum { W = 4096 };
        static double ws[W], wd[W], wm[W];
        int cmp = MPI_UNEQUAL, wrank;
        MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
        for (int i = 0; i < W; i++) ws[i] = (double)((i * 7 + wrank) % 1000) * 0.5;
        set_step("dred_reduce on MPI_COMM_WORLD");
        st = dred_reduce(ws, wd, W, MPI_DOUBLE, MPI_SUM, wsize - 1, MPI_COMM_WORLD);
        if (external) {
            MPI_Comm_compare(dred_comm(), MPI_COMM_WORLD, &cmp);
            if (cmp != MPI_CONGRUENT) fail("lifecycle/world: dred_comm() is not congruent to MPI_COMM_WORLD (%d)", cmp);
            ref_reduce(ws, wm, W, MPI_DOUBLE, MPI_SUM, wsize - 1, MPI_COMM_WORLD);
            if (st != DRED_OK) fail("lifecycle/world: dred_reduce on MPI_COMM_WORLD: %d (%s)", st, dred_strerror(st));
            else if (wrank == wsize - 1 && memcmp(wd, wm, sizeof wd))
                fail("lifecycle/world: dred_reduce on MPI_COMM_WORLD: wrong result");
            else if (wrank == wsize - 1)
                pass("lifecycle/world: MPI_COMM_WORLD is the application's (%d processes), dred_reduce on it exact", wsize);
        } else if (st != DRED_ERR_ARG) {
            fail("lifecycle/world: dred_reduce on MPI_COMM_WORLD (dred-master is rank 0) returned %d (%s), expected DRED_ERR_ARG",
                 st, dred_strerror(st));
        } else if (g_rank == 0) {
            pass("lifecycle/world: MPI_COMM_WORLD holds dred-master: refused (DRED_ERR_ARG)");
        }
    }

    enum { N = 10000 };
    static int s[N], rd[N], rm[N];
    for (int i = 0; i < N; i++) s[i] = i % 100 + g_rank;
    for (int root = 0; root < g_size && root < 3; root++) {
        set_step("dred_reduce root %d", root);
        st = dred_reduce(s, rd, N, MPI_INT, MPI_SUM, root, g_comm);
        ref_reduce(s, rm, N, MPI_INT, MPI_SUM, root, g_comm);
        if (st != DRED_OK) fail("lifecycle/reduce root %d: status %d (%s)", root, st, dred_strerror(st));
        else if (g_rank == root && memcmp(rd, rm, sizeof rd)) fail("lifecycle/reduce root %d: wrong result", root);
        else if (g_rank == root) pass("lifecycle/%s/reduce root %d", app_mode ? "app" : "self", root);
    }
    /* a reduction whose future is freed at once: dred_finalize must still wait for it, so
     * the root's recvbuf holds the result after dred_finalize (checked below) */
    static long long fs[N], fr[N];
    for (int i = 0; i < N; i++) { fs[i] = (long long)(i % 50) * (g_rank + 1); fr[i] = -1; }
    const int froot = g_size - 1;
    dred_future *ff = NULL;
    set_step("freed-future reduction");
    st = dred_ireduce(fs, fr, N, MPI_LONG_LONG, MPI_SUM, froot, g_comm, 77, &ff);
    if (st != DRED_OK) fail("lifecycle/freed_future: dred_ireduce returned %d (%s)", st, dred_strerror(st));
    dred_future_free(ff);
    MPI_Comm mine = MPI_COMM_NULL;
    if (app_mode) MPI_Comm_dup(g_comm, &mine);
    int any = 0;
    MPI_Allreduce(&g_fail, &any, 1, MPI_INT, MPI_MAX, g_comm);

    set_step("dred_finalize");
    st = dred_finalize();
    expect(app_mode ? "app/dred_finalize" : "self/dred_finalize", st, DRED_OK);

    /* ---- after dred_finalize ---- */
    set_step("after dred_finalize");
    outside_window(app_mode ? "app/after_finalize" : "self/after_finalize", DRED_ERR_SHUTDOWN);
    expect(app_mode ? "app/after_finalize/dred_finalize_again" : "self/after_finalize/dred_finalize_again",
           dred_finalize(), DRED_ERR_SHUTDOWN);
    if (g_rank == froot) {
        long long tri = (long long)g_size * (g_size + 1) / 2;
        int bad = -1;
        for (int i = 0; i < N && bad < 0; i++)
            if (fr[i] != (long long)(i % 50) * tri) bad = i;
        if (bad >= 0)
            fail("lifecycle/freed_future: after dred_finalize the root's recvbuf[%d] = %lld, "
                 "expected %lld (dred_finalize did not wait for the reduction whose future was "
                 "freed)", bad, fr[bad], (long long)(bad % 50) * tri);
        else
            pass("lifecycle/%s/freed future's reduction completed by dred_finalize", app_mode ? "app" : "self");
    }
    MPI_Finalized(&flag);
    if (app_mode) {
        if (flag) {
            fail("lifecycle/app: dred_finalize finalised MPI that the app initialised");
            return 1;
        }
        int lf = g_fail, all = 0;
        set_step("app's own allreduce after dred_finalize");
        MPI_Allreduce(&lf, &all, 1, MPI_INT, MPI_MAX, mine);
        if (g_rank == 0) pass("lifecycle/app/MPI still usable after dred_finalize");
        any |= all;
        MPI_Comm_free(&mine);
        set_step("MPI_Finalize by the app");
        MPI_Finalize();
    } else if (!flag)
        fail("lifecycle/self: MPI not finalised by dred_finalize though dred_init initialised it");
    if (g_rank == 0)
        printf("%s %s (P=%d)\n", (any || g_fail) ? "FAILED" : "ALL PASSED", g_prog, g_size);
    fflush(stdout);
    return (any || g_fail) ? 1 : 0;
}
