/*
 * progress.c -- a reduction completes without the application's help.
 *
 *   dredrun -n P mpi_progress [-r ROOT] [-b BUSY] [-t SECONDS] [-m MIB] [-f FRACTION]
 *
 * Every member starts a dred_ireduce (MPI_SUM of MIB MiB of integer-valued doubles, default
 * 4) right after a barrier.  Member BUSY (default P-1; must not be ROOT, default 0) then
 * computes for SECONDS (default 2) in a pure arithmetic loop -- no MPI, no dred call --
 * before its dred_future_get.  The root polls dred_future_is_done with a bounded deadline
 * and must see the reduction done before FRACTION (default 0.75) of the busy member's
 * compute time has passed.  The busy member's own future must already be done (within
 * 100 ms) when it finishes computing.  The result is compared with ref_reduce (mpitest.h:
 * a local rank-order fold, independent of dred and of MPI's collectives).
 *
 * Then, with nothing in flight, every member sleeps (no MPI call) while it measures the CPU
 * time its runtime thread takes over one second (/proc/self/task/<tid>/stat of the thread
 * named dred-runtime): an idle runtime must sleep in epoll, so it must stay under 10% of
 * that second: a flag left set after a reduction would keep every runtime thread spinning
 * for the rest of the job, taking a core the application needs.
 */
#include <dirent.h>
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

/* CPU seconds used so far by this process's threads named `name` (/proc/self/task). */
static double threads_cpu_s(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    double ticks = 0;
    long hz = sysconf(_SC_CLK_TCK);
    if (d == NULL) return -1;
    while ((e = readdir(d)) != NULL) {
        char path[300], comm[64] = "", buf[1024];
        FILE *f;
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r")) == NULL) continue;
        if (fgets(comm, sizeof comm, f) == NULL) comm[0] = '\0';
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        if (strcmp(comm, name) != 0) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        if ((f = fopen(path, "r")) == NULL) continue;
        if (fgets(buf, sizeof buf, f) != NULL) {
            /* fields after the ")" that closes comm: state is field 3, utime 14, stime 15 */
            char *p = strrchr(buf, ')');
            unsigned long ut = 0, st = 0;
            if (p != NULL &&
                sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
                ticks += (double)(ut + st);
        }
        fclose(f);
    }
    closedir(d);
    return ticks / (double)(hz > 0 ? hz : 100);
}

int main(int argc, char **argv)
{
    int root = 0, busy = -1;
    double secs = 2.0, frac = 0.75;
    long mib = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) root = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-b") && i + 1 < argc) busy = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) mib = atol(argv[++i]);
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) frac = atof(argv[++i]);
    }
    test_init(&argc, &argv, "progress");
    if (busy < 0) busy = g_size - 1;
    if (g_size < 2 || root < 0 || root >= g_size || busy < 0 || busy >= g_size || busy == root) {
        if (g_rank == 0)
            fail("progress/setup: needs P >= 2 and distinct root/busy ranks (P=%d root=%d busy=%d)",
                 g_size, root, busy);
        return test_finish();
    }
    int n = (int)(mib * 1024 * 1024 / (long)sizeof(double));
    double *s = malloc(sizeof(double) * (size_t)n), *rd = malloc(sizeof(double) * (size_t)n),
           *rm = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) s[i] = (double)((i + 7 * g_rank) % 1000);
    memset(rd, 0, sizeof(double) * (size_t)n);
    char check[160];
    snprintf(check, sizeof check, "progress/P=%d/root=%d/busy=%d/%ldMiB/compute=%.1fs", g_size,
             root, busy, mib, secs);

    MPI_Barrier(g_comm);
    double t0 = now_s();
    dred_future *f = NULL;
    set_step("dred_ireduce %s", check);
    int st = dred_ireduce(s, rd, n, MPI_DOUBLE, MPI_SUM, root, g_comm, 1, &f);
    if (st != DRED_OK) {
        fail("%s: dred_ireduce returned %d (%s)", check, st, dred_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    double t_done = -1, t_compute_end = -1;
    int busy_done_at_end = -1;
    if (g_rank == busy) {
        set_step("busy compute loop");
        volatile double acc = 1.0;
        while (now_s() - t0 < secs)
            for (int k = 0; k < 200000; k++) acc = acc * 1.0000001 + 0.5;
        t_compute_end = now_s() - t0;
        /* the runtime thread should have completed our future meanwhile */
        double grace = now_s() + 0.1;
        do {
            busy_done_at_end = dred_future_is_done(f);
            if (busy_done_at_end == 1) break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        } while (now_s() < grace);
        st = wait_bounded(f, 30, check);
    } else if (g_rank == root) {
        set_step("root polling dred_future_is_done");
        double deadline = t0 + secs + wait_limit(20);
        int d;
        while ((d = dred_future_is_done(f)) == 0 && now_s() < deadline) {
            struct timespec ts = {0, 500000};
            nanosleep(&ts, NULL);
        }
        t_done = now_s() - t0;
        if (d != 1) {
            fail("%s: root future not done %.1f s after the start (is_done=%d)", check, t_done, d);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        st = dred_future_get(f);
    } else {
        st = wait_bounded(f, 30, check);
    }
    dred_future_free(f);

    /* the busy member's compute end, and its is_done at that moment, to the root */
    double info[2] = {t_compute_end, (double)busy_done_at_end};
    if (busy != root) {
        if (g_rank == busy) MPI_Send(info, 2, MPI_DOUBLE, root, 99, g_comm);
        if (g_rank == root) MPI_Recv(info, 2, MPI_DOUBLE, busy, 99, g_comm, MPI_STATUS_IGNORE);
    }
    ref_reduce(s, rm, n, MPI_DOUBLE, MPI_SUM, root, g_comm);
    if (st != DRED_OK) fail("%s: status %d (%s)", check, st, dred_strerror(st));
    if (g_rank == root) {
        printf("progress: root saw the reduction done at %.3f s; member %d computed until %.3f s\n",
               t_done, busy, info[0]);
        if (st == DRED_OK && memcmp(rd, rm, sizeof(double) * (size_t)n))
            fail("%s: result differs from the reference (ref_reduce)", check);
        else if (st == DRED_OK)
            pass("%s/result", check);
        if (t_done >= frac * info[0])
            fail("%s: root saw done at %.3f s, not before %.2f of the busy member's %.3f s of "
                 "computing: the reduction waited for the application", check, t_done, frac,
                 info[0]);
        else
            pass("%s/done at root after %.3f s, while member %d computed until %.3f s", check,
                 t_done, busy, info[0]);
        if (info[1] != 1)
            fail("%s: the busy member's future was not done when it finished computing "
                 "(is_done=%d 100 ms after)", check, (int)info[1]);
        else
            pass("%s/busy member's future done when its computation ended", check);
    }
    /* idle: no reduction in flight, nobody in an MPI call */
    MPI_Barrier(g_comm);
    {
        struct timespec settle = {0, 300000000}, ts = {0, 10000000};
        double c0, c1, w0, w;
        nanosleep(&settle, NULL); /* ENDs and DONEs of the reduction above are through */
        c0 = threads_cpu_s("dred-runtime");
        w0 = now_s();
        while (now_s() - w0 < 1.0) nanosleep(&ts, NULL);
        c1 = threads_cpu_s("dred-runtime");
        w = now_s() - w0;
        if (c0 < 0 || c1 < 0)
            fail("progress/idle: /proc/self/task unreadable");
        else if (c1 - c0 > 0.10 * w)
            fail("progress/idle: the idle runtime thread used %.0f ms of CPU in %.2f s (more "
                 "than 10%%: it spins instead of sleeping in epoll)", 1e3 * (c1 - c0), w);
        else
            pass("progress/idle/runtime thread used %.0f ms of CPU in %.2f s idle", 1e3 * (c1 - c0),
                 w);
    }
    MPI_Barrier(g_comm);
    free(s); free(rd); free(rm);
    return test_finish();
}
