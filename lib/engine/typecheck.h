/*
 * typecheck.h -- which predefined ops apply to which datatypes, how an operand sits in
 * dred's buffers (its layout), and the type signature members must agree on (typecheck.c).
 */
#ifndef DRED_TYPECHECK_H
#define DRED_TYPECHECK_H

#include <mpi.h>
#include <stdint.h>

#include "../../include/dred.h" /* the DRED_* statuses returned */

/* How an operand sits in dred's buffers (typecheck.c explains each). */
typedef enum {
  DRED_LAYOUT_DIRECT = 0, /* the caller's bytes as they are (memcpy; recvbuf is the root's acc) */
  DRED_LAYOUT_PACKED,     /* predefined op, derived type: count*mult elements of exec_type     */
  DRED_LAYOUT_IMAGE       /* user op, type with holes: the bytes from the true lower bound on   */
} dred_layout_t;

typedef struct {
  /* size: MPI_Type_size of one element of the caller's datatype; extent: bytes one element
   * takes in dred's buffers (the caller's extent, except PACKED: mult * extent(exec_type)) */
  uint32_t size, extent;
  int op_is_user, commutative;
  /* What MPI_Reduce_local is called with: MPICH 4.0.2 refuses predefined ops on derived
   * datatypes, so a derived type under a predefined op is combined as `mult` elements of
   * its predefined base type per element. */
  MPI_Datatype exec_type;
  uint32_t mult;
  int layout;            /* dred_layout_t */
  int base_padded;       /* PACKED: exec_type has padding (MPI_DOUBLE_INT...) */
  int named;             /* a named (predefined) datatype: never freed */
  MPI_Aint type_extent;  /* the caller's datatype: extent, true lower bound, true extent */
  MPI_Aint true_lb, true_extent;
  uint32_t sig;          /* type-signature fingerprint members must agree on (READY) */
} dred_typeinfo_t;
/* A NULL buffer is MPI_BOTTOM where the datatype's true lower bound is at least this (an
 * absolute address, from MPI_Get_address): its data then lies past the zero page, which no
 * process maps.  Such a type is never DIRECT, since its lower bound is not 0. */
#define DRED_BOTTOM_MIN 4096
int dred_typecheck(MPI_Datatype type, MPI_Op op, dred_typeinfo_t *ti);
/* The same for a bcast, which has no op: DIRECT for a type without holes, else PACKED as
 * bytes (MPI_Pack / MPI_Unpack with the caller's type: only its bytes are written). */
int dred_typecheck_bcast(MPI_Datatype type, dred_typeinfo_t *ti);
/* The bytes that `count` elements of `type` (checked into *ti) at `a` and at `b` share --
 * the typemaps' bytes, not the spans, so buffers interleaved through holes share none --
 * or -1 where the check could not run (logged at debug level). */
int64_t dred_typemap_shared(const void *a, const void *b, int count, MPI_Datatype type,
                            const dred_typeinfo_t *ti);

#endif /* DRED_TYPECHECK_H */
