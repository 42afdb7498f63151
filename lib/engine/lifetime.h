/*
 * lifetime.h -- MPI_Op_free / MPI_Type_free deferred while a pending reduction uses the
 * op or the datatype (lifetime.c).
 */
#ifndef DRED_LIFETIME_H
#define DRED_LIFETIME_H

#include <mpi.h>
#include <stdint.h>

#include "../../include/dred.h" /* the DRED_* statuses returned */

#define DRED_HELD_OP 1   /* the reduction holds a reference on its user op          */
#define DRED_HELD_TYPE 2 /* ... and on its derived datatype                         */
/* Take references on a user op (op_is_user) and a derived datatype so that MPI_Op_free /
 * MPI_Type_free is deferred while the reduction is pending; *held_flags says which were
 * taken (pass it to release).  DRED_OK or DRED_ERR_NOMEM (logged, nothing held). */
int dred_lifetime_hold(MPI_Op op, int op_is_user, MPI_Datatype type, int type_is_named,
                       int *held_flags);
/* Drop them; performs the frees the application asked for meanwhile, if these were the
 * last references. */
void dred_lifetime_release(MPI_Op op, MPI_Datatype type, int held_flags);
/* Distinct handles held now; frees deferred and frees performed late, since the start. */
void dred_lifetime_stats(uint64_t *handles_held, uint64_t *deferred, uint64_t *done_late);

#endif /* DRED_LIFETIME_H */
