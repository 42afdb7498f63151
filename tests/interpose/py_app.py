#!/usr/bin/env python3
"""py_app -- a Python MPI program, unmodified (no dred import, no dred call), whose
allreduces, broadcasts and reduces tests/interpose/run.sh sends through libdred-mpi.so
(`dredrun --mpi`, which preloads it into the Python interpreter).

It calls MPI through ctypes from the process's global symbol scope, as a compiled binding
(mpi4py) calls it through its links: the preloaded library's MPI_* come first, MPICH's
after.  (Debian's python3-mpi4py is built against Open MPI, which dred cannot run on, so
mpi4py itself is not tested here.)  The handles come from this build's mpi.h
(mpi_consts.py, written by py_consts.c).

Every process computes the exact value each collective must give it (small integer
operands, as tests/interpose/app.h) and checks its own result: MPI_Allreduce (SUM on
doubles, PROD and MAX on ints; MPI_IN_PLACE on every member), MPI_Iallreduce + MPI_Wait,
MPI_Bcast and MPI_Ibcast from every root, MPI_Reduce and MPI_Ireduce to every root, at
counts from 1 to 100000 elements; at 1000 elements each through its MPI-4 large-count form
(MPI_Allreduce_c..., what mpi4py 4 calls), the nonblocking ones polled with
MPI_Request_get_status before the wait.  Prints "FAIL ..." for each wrong value and
"ALL PASSED" at rank 0 when every process passed; exits 1 otherwise.
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_consts as M  # noqa: E402  (beside this program in the build tree)

mpi = ctypes.CDLL(None)  # the global scope: a preloaded MPI_Allreduce before MPICH's
c_int, c_void_p, c_long, c_double = ctypes.c_int, ctypes.c_void_p, ctypes.c_long, ctypes.c_double
IN_PLACE = c_void_p(M.IN_PLACE)
STATUS_IGNORE = c_void_p(M.STATUS_IGNORE)

rank = size = 0
nfail = 0


def check(cond, msg):
    global nfail
    if not cond:
        nfail += 1
        print("FAIL rank %d: %s" % (rank, msg), flush=True)


def val(r, i):
    return (r * 7 + i * 3) % 5 + 1


def ctype_of(dt):
    return {M.INT: ctypes.c_int, M.LONG: c_long, M.DOUBLE: c_double}[dt]


def fold(op, values):
    acc = values[0]
    for v in values[1:]:
        acc = acc + v if op == M.SUM else acc * v if op == M.PROD else max(acc, v) if op == M.MAX else min(acc, v)
    return acc


def call(name, nb, large, *args):
    """MPI_<name>(*args), or with nb its nonblocking form and MPI_Wait: the status.  With
    large, the MPI-4 large-count form (MPI_<name>_c, the count an MPI_Count), as mpi4py 4
    calls it, and a nonblocking call polled with MPI_Request_get_status first, as its
    Request.Get_status does."""
    suffix = "_c" if large else ""
    if not nb:
        return getattr(mpi, "MPI_" + name + suffix)(*args)
    req, flag = c_int(0), c_int(0)
    rc = getattr(mpi, "MPI_I" + name.lower() + suffix)(*args, ctypes.byref(req))
    while large and rc == M.SUCCESS and not flag.value:
        rc = mpi.MPI_Request_get_status(req, ctypes.byref(flag), STATUS_IGNORE)
    return mpi.MPI_Wait(ctypes.byref(req), STATUS_IGNORE) if rc == M.SUCCESS else rc


def count(n, large):
    return ctypes.c_long(n) if large else n  # MPI_Count is a long in this MPICH (mpi.h)


def allreduce(dt, op, n, inplace, nb, large):
    what = "allreduce dt=%d op=%d n=%d%s%s%s" % (dt, op, n, " in place" if inplace else "",
                                               " nonblocking" if nb else "", " _c" if large else "")
    T = ctype_of(dt) * n
    sb, rb = T(), T()
    for i in range(n):
        (rb if inplace else sb)[i] = val(rank, i)
    rc = call("Allreduce", nb, large, IN_PLACE if inplace else sb, rb, count(n, large), dt, op, M.COMM_WORLD)
    check(rc == M.SUCCESS, "%s: returned %d" % (what, rc))
    for i in range(n if rc == M.SUCCESS else 0):
        want = fold(op, [val(r, i) for r in range(size)])
        if rb[i] != want:
            check(False, "%s: element %d = %s, expected %s" % (what, i, rb[i], want))
            break


def bcast(root, n, nb, large):
    what = "bcast root=%d n=%d%s%s" % (root, n, " nonblocking" if nb else "", " _c" if large else "")
    buf = (ctypes.c_ubyte * n)()
    for i in range(n):
        buf[i] = (i * 7 + root) % 251 if rank == root else 0
    rc = call("Bcast", nb, large, buf, count(n, large), M.BYTE, root, M.COMM_WORLD)
    check(rc == M.SUCCESS, "%s: returned %d" % (what, rc))
    for i in range(n if rc == M.SUCCESS else 0):
        if buf[i] != (i * 7 + root) % 251:
            check(False, "%s: byte %d = %d, expected %d" % (what, i, buf[i], (i * 7 + root) % 251))
            break


def reduce(root, n, nb, large):
    what = "reduce root=%d n=%d%s%s" % (root, n, " nonblocking" if nb else "", " _c" if large else "")
    T = c_long * n
    sb, rb = T(), T()
    for i in range(n):
        sb[i] = val(rank, i)
    rc = call("Reduce", nb, large, sb, rb, count(n, large), M.LONG, M.SUM, root, M.COMM_WORLD)
    check(rc == M.SUCCESS, "%s: returned %d" % (what, rc))
    for i in range(n if rc == M.SUCCESS and rank == root else 0):
        want = sum(val(r, i) for r in range(size))
        if rb[i] != want:
            check(False, "%s: element %d = %d, expected %d" % (what, i, rb[i], want))
            break


def main():
    global rank, size
    if mpi.MPI_Init(None, None) != M.SUCCESS:
        print("FAIL: MPI_Init failed", flush=True)
        return 1
    r, s = c_int(0), c_int(0)
    mpi.MPI_Comm_rank(M.COMM_WORLD, ctypes.byref(r))
    mpi.MPI_Comm_size(M.COMM_WORLD, ctypes.byref(s))
    rank, size = r.value, s.value
    for n in (1, 1000, 100000):
        large = n == 1000
        for nb in (0, 1):
            allreduce(M.DOUBLE, M.SUM, n, 0, nb, large)
            allreduce(M.DOUBLE, M.SUM, n, 1, nb, large)
            allreduce(M.INT, M.MAX, n, 0, nb, large)
            allreduce(M.INT, M.PROD, n, 1, nb, large)
            for root in range(size):
                bcast(root, n * 8, nb, large)
                reduce(root, n, nb, large)
    ok, all_ok = c_int(1 if nfail == 0 else 0), c_int(0)
    mpi.MPI_Allreduce(ctypes.byref(ok), ctypes.byref(all_ok), 1, M.INT, M.MIN, M.COMM_WORLD)
    if rank == 0 and all_ok.value:
        print("ALL PASSED", flush=True)
    mpi.MPI_Finalize()
    return 0 if all_ok.value else 1


sys.exit(main())
