/*
 * kernel.h -- vectorised combine loops for the predefined MPI ops on the basic C types.
 *
 * MPI_Reduce_local is the reference: a kernel stores exactly the bytes it would store
 * (tests/unit/test_kernel.c proves it against MPICH).  Anything without a kernel -- user
 * ops, MAXLOC/MINLOC, pair types, long double, complex -- goes to MPI_Reduce_local.
 */
#ifndef DRED_KERNEL_H
#define DRED_KERNEL_H

#include <mpi.h>
#include <stddef.h>

typedef struct dred_kernel {
  /* inout[i] = in[i] op inout[i], exactly what MPI_Reduce_local(in, inout, n, type, op) stores */
  void (*inplace)(const void *in, void *inout, size_t n);
  /* out[i] = the value MPI_Reduce_local(in, inout, ...) would store in inout[i]; inout is
   * only read; out overlaps neither in nor inout */
  void (*outofplace)(const void *in, const void *inout, void *out, size_t n);
} dred_kernel_t;

/* The kernel for predefined `op` on predefined `type`, or NULL when there is none (user ops,
 * MAXLOC/MINLOC, pair types, long double, complex, ..., or when DRED_KERNELS=0 in the
 * environment): the caller then uses MPI_Reduce_local. n is in elements of `type`.
 * Thread-safe; makes no MPI call.  Buffers must be aligned for `type` and must not overlap
 * (in and inout of `inplace` are distinct, as MPI_Reduce_local requires). */
const dred_kernel_t *dred_kernel_find(MPI_Datatype type, MPI_Op op);

#endif /* DRED_KERNEL_H */
