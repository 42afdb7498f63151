/*
 * typecheck.c -- which datatypes dred accepts and which predefined ops apply to them.
 *
 * MPI_Reduce_local is trusted to combine, but not to reject: MPICH 4.0.2 aborts the
 * process (an assertion in opland.c) for MPI_LAND on MPI_DOUBLE instead of returning an
 * error.  So the applicability table of the MPI standard (section 6.9.2, "Predefined
 * Reduction Operations") is checked here, before anything is sent, using MPICH's reading
 * of it (MPI_CHAR counts as a C integer).  Derived datatypes are accepted when they are
 * contiguous (size == extent == true extent, zero lower bounds); with a predefined op they
 * must also be built (by MPI_Type_contiguous or MPI_Type_dup) from one predefined type.
 */
#include <stdlib.h>

#include "../common/log.h"
#include "runtime.h"

enum {
  T_CINT = 1,     /* C integer      */
  T_FLOAT = 2,    /* floating point */
  T_LOGICAL = 4,  /* logical        */
  T_COMPLEX = 8,  /* complex        */
  T_BYTE = 16,    /* byte           */
  T_PAIR = 32     /* MINLOC/MAXLOC pair types */
};

static int named_class(MPI_Datatype t) {
  static const struct {
    MPI_Datatype t;
    int cls;
  } table[] = {
      {MPI_CHAR, T_CINT}, {MPI_SIGNED_CHAR, T_CINT}, {MPI_UNSIGNED_CHAR, T_CINT},
      {MPI_SHORT, T_CINT}, {MPI_UNSIGNED_SHORT, T_CINT}, {MPI_INT, T_CINT},
      {MPI_UNSIGNED, T_CINT}, {MPI_LONG, T_CINT}, {MPI_UNSIGNED_LONG, T_CINT},
      {MPI_LONG_LONG_INT, T_CINT}, {MPI_LONG_LONG, T_CINT}, {MPI_UNSIGNED_LONG_LONG, T_CINT},
      {MPI_INT8_T, T_CINT}, {MPI_INT16_T, T_CINT}, {MPI_INT32_T, T_CINT}, {MPI_INT64_T, T_CINT},
      {MPI_UINT8_T, T_CINT}, {MPI_UINT16_T, T_CINT}, {MPI_UINT32_T, T_CINT},
      {MPI_UINT64_T, T_CINT}, {MPI_AINT, T_CINT}, {MPI_OFFSET, T_CINT}, {MPI_COUNT, T_CINT},
      {MPI_FLOAT, T_FLOAT}, {MPI_DOUBLE, T_FLOAT}, {MPI_LONG_DOUBLE, T_FLOAT},
      {MPI_C_BOOL, T_LOGICAL},
      {MPI_C_COMPLEX, T_COMPLEX}, {MPI_C_FLOAT_COMPLEX, T_COMPLEX},
      {MPI_C_DOUBLE_COMPLEX, T_COMPLEX}, {MPI_C_LONG_DOUBLE_COMPLEX, T_COMPLEX},
      {MPI_BYTE, T_BYTE},
      {MPI_FLOAT_INT, T_PAIR}, {MPI_DOUBLE_INT, T_PAIR}, {MPI_LONG_INT, T_PAIR},
      {MPI_2INT, T_PAIR}, {MPI_SHORT_INT, T_PAIR}, {MPI_LONG_DOUBLE_INT, T_PAIR},
  };
  size_t i;
  for (i = 0; i < sizeof table / sizeof table[0]; i++)
    if (table[i].t == t) return table[i].cls;
  return 0;
}

/* Classes a predefined op applies to; 0 for a user op; -1 for ops reductions refuse. */
static int op_classes(MPI_Op op, const char **name) {
  static const struct {
    MPI_Op op;
    const char *name;
    int cls;
  } table[] = {
      {MPI_MAX, "MPI_MAX", T_CINT | T_FLOAT}, {MPI_MIN, "MPI_MIN", T_CINT | T_FLOAT},
      {MPI_SUM, "MPI_SUM", T_CINT | T_FLOAT | T_COMPLEX},
      {MPI_PROD, "MPI_PROD", T_CINT | T_FLOAT | T_COMPLEX},
      {MPI_LAND, "MPI_LAND", T_CINT | T_LOGICAL}, {MPI_LOR, "MPI_LOR", T_CINT | T_LOGICAL},
      {MPI_LXOR, "MPI_LXOR", T_CINT | T_LOGICAL}, {MPI_BAND, "MPI_BAND", T_CINT | T_BYTE},
      {MPI_BOR, "MPI_BOR", T_CINT | T_BYTE}, {MPI_BXOR, "MPI_BXOR", T_CINT | T_BYTE},
      {MPI_MAXLOC, "MPI_MAXLOC", T_PAIR}, {MPI_MINLOC, "MPI_MINLOC", T_PAIR},
      {MPI_REPLACE, "MPI_REPLACE", -1}, {MPI_NO_OP, "MPI_NO_OP", -1},
  };
  size_t i;
  for (i = 0; i < sizeof table / sizeof table[0]; i++)
    if (table[i].op == op) {
      *name = table[i].name;
      return table[i].cls;
    }
  *name = "user op";
  return 0;
}

/* The predefined type a contiguous/dup chain is built from, or MPI_DATATYPE_NULL. */
static MPI_Datatype base_named(MPI_Datatype t, int depth) {
  int ni, na, nd, combiner;
  int ints[4];
  MPI_Aint aints[1];
  MPI_Datatype types[1], inner, result;

  if (depth > 16) return MPI_DATATYPE_NULL;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  if (combiner == MPI_COMBINER_NAMED) return t;
  if ((combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) || ni > 4 ||
      na > 1 || nd != 1)
    return MPI_DATATYPE_NULL;
  MPI_Type_get_contents(t, ni, na, nd, ints, aints, types);
  inner = types[0];
  result = base_named(inner, depth + 1);
  {
    int i2, a2, d2, c2;
    MPI_Type_get_envelope(inner, &i2, &a2, &d2, &c2);
    if (c2 != MPI_COMBINER_NAMED) MPI_Type_free(&inner); /* get_contents returned a copy */
  }
  return result;
}

int dred_typecheck(MPI_Datatype type, MPI_Op op, dred_typeinfo_t *ti) {
  int size = 0, ni, na, nd, combiner, cls, opcls, commute = 0;
  MPI_Aint lb, extent, tlb, textent;
  const char *opname;
  MPI_Datatype base = MPI_DATATYPE_NULL;

  if (type == MPI_DATATYPE_NULL) {
    DRED_ERROR("datatype is MPI_DATATYPE_NULL");
    return DRED_ERR_ARG;
  }
  if (op == MPI_OP_NULL) {
    DRED_ERROR("op is MPI_OP_NULL");
    return DRED_ERR_ARG;
  }
  MPI_Type_size(type, &size);
  MPI_Type_get_extent(type, &lb, &extent);
  MPI_Type_get_true_extent(type, &tlb, &textent);
  MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  if (size <= 0 || extent <= 0) {
    DRED_ERROR("datatype has size %d and extent %ld: nothing to reduce", size, (long)extent);
    return DRED_ERR_ARG;
  }
  if (combiner != MPI_COMBINER_NAMED &&
      (lb != 0 || tlb != 0 || (MPI_Aint)size != extent || textent != extent)) {
    DRED_ERROR("non-contiguous derived datatype (size %d, extent %ld, true extent %ld, lb %ld): "
               "dred supports predefined and contiguous datatypes only",
               size, (long)extent, (long)textent, (long)lb);
    return DRED_ERR_ARG;
  }
  opcls = op_classes(op, &opname);
  if (opcls < 0) {
    DRED_ERROR("%s is not a reduction operation", opname);
    return DRED_ERR_ARG;
  }
  if (opcls > 0) {
    base = combiner == MPI_COMBINER_NAMED ? type : base_named(type, 0);
    cls = base == MPI_DATATYPE_NULL ? 0 : named_class(base);
    if ((cls & opcls) == 0) {
      char tname[MPI_MAX_OBJECT_NAME] = "?";
      int len = 0;
      if (base != MPI_DATATYPE_NULL) MPI_Type_get_name(base, tname, &len);
      DRED_ERROR("%s does not apply to datatype %s", opname, tname);
      return DRED_ERR_ARG;
    }
  }
  MPI_Op_commutative(op, &commute);
  ti->exec_type = type;
  ti->mult = 1;
  if (opcls > 0 && combiner != MPI_COMBINER_NAMED) {
    int bsize = 0;
    MPI_Type_size(base, &bsize);
    ti->exec_type = base;
    ti->mult = (uint32_t)(size / (bsize > 0 ? bsize : 1));
  }
  ti->size = (uint32_t)size;
  ti->extent = (uint32_t)extent;
  ti->op_is_user = opcls == 0;
  ti->commutative = commute != 0;
  return DRED_OK;
}
