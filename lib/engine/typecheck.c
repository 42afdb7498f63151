/*
 * typecheck.c -- which datatypes dred accepts, which predefined ops apply to them, and how
 * dred lays the operand out in its own buffers.
 *
 * The op/type table.  MPI_Reduce_local is trusted to combine, but not to reject: MPICH
 * 4.0.2's MPI_Reduce checks a pair against one table (MPIR_<OP>_check_dtype) and then
 * combines with another (the op function's switch), and the two disagree: MPI_Reduce
 * accepts MPI_LAND on MPI_DOUBLE, and the combine then fails (an assertion in opland.c
 * aborts the process).  So the pairs accepted here are the pairs MPI can actually reduce:
 * the MPI standard's table (MPI-4.0 section 6.9.2, "Predefined Reduction Operations": C
 * integer, Fortran integer, floating point, logical, complex, byte, multi-language and the
 * MINLOC/MAXLOC pair types, C, Fortran and C++ names) plus the extensions MPICH's op
 * functions compute (src/include/mpir_op_util.h: MPI_CHAR and MPI_CHARACTER count as
 * integers, Fortran integers and MPI_AINT/OFFSET/COUNT take the logical ops, MPI_LXOR
 * takes the C floating types).  Refused although MPI_Reduce_local returns MPI_SUCCESS:
 * LAND/LOR/LXOR on the Fortran reals (MPI_REAL, MPI_DOUBLE_PRECISION, MPI_REAL4/8/16),
 * which MPICH 4.0.2 "combines" by leaving inout as it was -- MPI says they do not apply,
 * and a reduction that silently returns one member's operand is worse than a refusal.
 * The named types MPICH defines but cannot reduce with any predefined op -- MPI_WCHAR,
 * MPI_PACKED, MPI_COMPLEX32, MPIX_C_FLOAT16 -- are refused; an optional type this build
 * lacks (MPI_INTEGER16) is MPI_DATATYPE_NULL and refused as such.  tests/unit/test_typecheck.c checks every (op,
 * named type) pair against MPICH's MPI_Reduce_local in a child process, so a different MPI
 * build shows up as a failing test rather than a wrong answer.
 *
 * Layouts.  The combine works on dred's own copy of each operand (a pool block), cut into
 * elements of a fixed stride (ti->extent):
 *   DIRECT  the buffer as it is: named types (and Fortran's parameterized types, which MPI
 *           counts as predefined: each is the named type of its class and size), types
 *           built by MPI_Type_contiguous/dup from one named type (predefined ops: combined
 *           as `mult` base elements each), and any derived type without holes or offsets
 *           (user ops).  Zero-copy paths stay as they were: memcpy in, and the root's
 *           accumulator is its recvbuf.
 *   PACKED  predefined op on any other derived type (vector, indexed, struct, resized...):
 *           MPI only reduces what the op applies to, element by element, so every basic
 *           element must be the same named type B (MPI's rule for predefined ops on derived
 *           types, as in MPI_Accumulate); the operand is packed in typemap order into an
 *           array of count*mult B elements and combined as such.  B's packed form has no
 *           padding, so for the padded pair types (MPI_DOUBLE_INT...) the array is rebuilt
 *           with MPI_Unpack on B (lib/mpi/buffer.c).
 *   IMAGE   user op on a derived type with holes or a nonzero lower bound: the user op is
 *           given the datatype, so it must see the typed layout: dred's copy is the byte
 *           image of the count elements, starting at the true lower bound (lb_shift), and
 *           MPI_Reduce_local(count, type) runs on image - lb_shift.
 * At the root PACKED and IMAGE results are unpacked into recvbuf with MPI_Unpack, so only
 * the type's bytes are written and its holes keep what they held, as in MPI.
 *
 * Type signature.  The master compares what READY carries; the element stride alone would
 * let MPI_INT meet MPI_FLOAT, or a vector of 2 doubles meet one of 4 floats, so READY also
 * carries `sig`: for predefined ops a hash of (B, mult) -- the whole type signature, since
 * every element is B -- and for user ops a hash of the layout (size, extent, true bounds,
 * and the named type if there is one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "typecheck.h"

enum {
  T_CINT = 1,      /* C and Fortran integers, multi-language types, MPI_CHAR(ACTER) */
  T_CFLOAT = 2,    /* C floating point                                              */
  T_FFLOAT = 4,    /* Fortran reals (no LXOR, unlike MPICH's C floats)              */
  T_LOGICAL = 8,   /* MPI_LOGICAL, MPI_C_BOOL, MPI_CXX_BOOL                          */
  T_COMPLEX = 16,  /* every complex type                                            */
  T_BYTE = 32,     /* MPI_BYTE                                                      */
  T_PAIR = 64,     /* MINLOC/MAXLOC pair types                                      */
  T_NONE = 128     /* a named type no predefined op applies to                      */
};

typedef struct {
  MPI_Datatype t;
  const char *name;
  int cls;
} named_t;

#define N(t, c) {t, #t, c}
static const named_t named[] = {
    /* C integer (MPI_CHAR: an MPICH extension) */
    N(MPI_CHAR, T_CINT), N(MPI_SIGNED_CHAR, T_CINT), N(MPI_UNSIGNED_CHAR, T_CINT),
    N(MPI_SHORT, T_CINT), N(MPI_UNSIGNED_SHORT, T_CINT), N(MPI_INT, T_CINT),
    N(MPI_UNSIGNED, T_CINT), N(MPI_LONG, T_CINT), N(MPI_UNSIGNED_LONG, T_CINT),
    N(MPI_LONG_LONG_INT, T_CINT), N(MPI_LONG_LONG, T_CINT), N(MPI_UNSIGNED_LONG_LONG, T_CINT),
    N(MPI_INT8_T, T_CINT), N(MPI_INT16_T, T_CINT), N(MPI_INT32_T, T_CINT),
    N(MPI_INT64_T, T_CINT), N(MPI_UINT8_T, T_CINT), N(MPI_UINT16_T, T_CINT),
    N(MPI_UINT32_T, T_CINT), N(MPI_UINT64_T, T_CINT),
    /* Fortran integer (MPI_CHARACTER: an MPICH extension), multi-language types */
    N(MPI_INTEGER, T_CINT), N(MPI_INTEGER1, T_CINT), N(MPI_INTEGER2, T_CINT),
    N(MPI_INTEGER4, T_CINT), N(MPI_INTEGER8, T_CINT), N(MPI_INTEGER16, T_CINT),
    N(MPI_CHARACTER, T_CINT), N(MPI_AINT, T_CINT), N(MPI_OFFSET, T_CINT),
    N(MPI_COUNT, T_CINT),
    /* floating point */
    N(MPI_FLOAT, T_CFLOAT), N(MPI_DOUBLE, T_CFLOAT), N(MPI_LONG_DOUBLE, T_CFLOAT),
    N(MPI_REAL, T_FFLOAT), N(MPI_DOUBLE_PRECISION, T_FFLOAT), N(MPI_REAL4, T_FFLOAT),
    N(MPI_REAL8, T_FFLOAT), N(MPI_REAL16, T_FFLOAT),
    /* logical */
    N(MPI_LOGICAL, T_LOGICAL), N(MPI_C_BOOL, T_LOGICAL), N(MPI_CXX_BOOL, T_LOGICAL),
    /* complex */
    N(MPI_C_FLOAT_COMPLEX, T_COMPLEX), N(MPI_C_COMPLEX, T_COMPLEX),
    N(MPI_C_DOUBLE_COMPLEX, T_COMPLEX), N(MPI_C_LONG_DOUBLE_COMPLEX, T_COMPLEX),
    N(MPI_COMPLEX, T_COMPLEX), N(MPI_DOUBLE_COMPLEX, T_COMPLEX), N(MPI_COMPLEX8, T_COMPLEX),
    N(MPI_COMPLEX16, T_COMPLEX), N(MPI_CXX_FLOAT_COMPLEX, T_COMPLEX),
    N(MPI_CXX_DOUBLE_COMPLEX, T_COMPLEX), N(MPI_CXX_LONG_DOUBLE_COMPLEX, T_COMPLEX),
    /* byte */
    N(MPI_BYTE, T_BYTE),
    /* MINLOC/MAXLOC pairs, C and Fortran */
    N(MPI_FLOAT_INT, T_PAIR), N(MPI_DOUBLE_INT, T_PAIR), N(MPI_LONG_INT, T_PAIR),
    N(MPI_2INT, T_PAIR), N(MPI_SHORT_INT, T_PAIR), N(MPI_LONG_DOUBLE_INT, T_PAIR),
    N(MPI_2INTEGER, T_PAIR), N(MPI_2REAL, T_PAIR), N(MPI_2DOUBLE_PRECISION, T_PAIR),
    /* named, but MPICH 4.0.2 has no predefined op for them (MPI_Reduce_local refuses
     * every op); user ops still reduce them */
    N(MPI_WCHAR, T_NONE), N(MPI_PACKED, T_NONE), N(MPI_COMPLEX32, T_NONE),
#ifdef MPIX_C_FLOAT16
    N(MPIX_C_FLOAT16, T_NONE),
#endif
};
#undef N

static const named_t *named_find(MPI_Datatype t) {
  size_t i;
  if (t == MPI_DATATYPE_NULL) return NULL; /* optional types this build lacks */
  for (i = 0; i < sizeof named / sizeof named[0]; i++)
    if (named[i].t == t) return &named[i];
  return NULL;
}

/* Classes a predefined op applies to; 0 for a user op; -1 for ops reductions refuse. */
static int op_classes(MPI_Op op, const char **name) {
  static const struct {
    MPI_Op op;
    const char *name;
    int cls;
  } table[] = {
      {MPI_MAX, "MPI_MAX", T_CINT | T_CFLOAT | T_FFLOAT},
      {MPI_MIN, "MPI_MIN", T_CINT | T_CFLOAT | T_FFLOAT},
      {MPI_SUM, "MPI_SUM", T_CINT | T_CFLOAT | T_FFLOAT | T_COMPLEX},
      {MPI_PROD, "MPI_PROD", T_CINT | T_CFLOAT | T_FFLOAT | T_COMPLEX},
      {MPI_LAND, "MPI_LAND", T_CINT | T_LOGICAL},
      {MPI_LOR, "MPI_LOR", T_CINT | T_LOGICAL},
      {MPI_LXOR, "MPI_LXOR", T_CINT | T_LOGICAL | T_CFLOAT},
      {MPI_BAND, "MPI_BAND", T_CINT | T_BYTE}, {MPI_BOR, "MPI_BOR", T_CINT | T_BYTE},
      {MPI_BXOR, "MPI_BXOR", T_CINT | T_BYTE},
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

static const char *type_name(MPI_Datatype t, char *buf, size_t cap) {
  const named_t *n = named_find(t);
  int len = 0;
  if (n != NULL) return n->name;
  buf[0] = '\0';
  if (t != MPI_DATATYPE_NULL) MPI_Type_get_name(t, buf, &len);
  if (buf[0] == '\0') snprintf(buf, cap, "(derived datatype)");
  return buf;
}

/* A Fortran parameterized type (MPI_Type_create_f90_real/_complex/_integer) as the named
 * type of its class and size: MPI counts these as predefined (permanent handles, never
 * freed; the same (p, r) gives the same handle), and their typemap cannot be read
 * (MPI_Type_get_contents gives only p and r).  MPI_DATATYPE_NULL for any other type. */
static MPI_Datatype f90_named(MPI_Datatype t, int combiner) {
  int cls, size = 0;
  MPI_Datatype m = MPI_DATATYPE_NULL;
  if (combiner == MPI_COMBINER_F90_REAL)
    cls = MPI_TYPECLASS_REAL;
  else if (combiner == MPI_COMBINER_F90_COMPLEX)
    cls = MPI_TYPECLASS_COMPLEX;
  else if (combiner == MPI_COMBINER_F90_INTEGER)
    cls = MPI_TYPECLASS_INTEGER;
  else
    return MPI_DATATYPE_NULL;
  if (MPI_Type_size(t, &size) != MPI_SUCCESS || MPI_Type_match_size(cls, size, &m) != MPI_SUCCESS)
    return MPI_DATATYPE_NULL;
  return m;
}

/* What the typemap walk found. */
typedef struct {
  MPI_Datatype base; /* the first basic type met, or MPI_DATATYPE_NULL */
  MPI_Datatype other; /* a second, different one (mixed), or MPI_DATATYPE_NULL */
  int chain;          /* built only by contiguous/dup from `base` */
  int unsupported;    /* a typemap the walk cannot read (nested too deeply) */
} walk_t;

/* Collect the basic types of `t`'s typemap (MPI_LB/MPI_UB markers carry no data). */
static void walk(MPI_Datatype t, walk_t *w, int depth) {
  int ni, na, nd, combiner, i;
  MPI_Datatype named;
  int *ints;
  MPI_Aint *aints;
  MPI_Datatype *types;

  if (depth > 64) {
    w->unsupported = 1;
    return;
  }
  MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  if (combiner != MPI_COMBINER_NAMED && (named = f90_named(t, combiner)) != MPI_DATATYPE_NULL) {
    t = named; /* a basic type of its own: the named one it equals */
    combiner = MPI_COMBINER_NAMED;
  }
  if (combiner == MPI_COMBINER_NAMED) {
    if (t == MPI_LB || t == MPI_UB) return;
    if (w->base == MPI_DATATYPE_NULL)
      w->base = t;
    else if (t != w->base && w->other == MPI_DATATYPE_NULL)
      w->other = t;
    return;
  }
  if (nd <= 0) {
    w->unsupported = 1;
    return;
  }
  if (combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) w->chain = 0;
  ints = malloc(sizeof *ints * (size_t)(ni > 0 ? ni : 1));
  aints = malloc(sizeof *aints * (size_t)(na > 0 ? na : 1));
  types = malloc(sizeof *types * (size_t)nd);
  if (ints == NULL || aints == NULL || types == NULL) {
    w->unsupported = 1;
  } else {
    MPI_Type_get_contents(t, ni, na, nd, ints, aints, types);
    for (i = 0; i < nd; i++) {
      int i2, a2, d2, c2;
      walk(types[i], w, depth + 1);
      MPI_Type_get_envelope(types[i], &i2, &a2, &d2, &c2);
      /* get_contents returned a reference: to a Fortran parameterized type too, which
       * MPICH counts like a derived one (freed 5 times, it still works) */
      if (c2 != MPI_COMBINER_NAMED) PMPI_Type_free(&types[i]);
    }
  }
  free(ints);
  free(aints);
  free(types);
}

/* The walk of a whole datatype, from an empty start. */
static walk_t walk_of(MPI_Datatype type) {
  walk_t w = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, 1, 0};
  walk(type, &w, 0);
  return w;
}

static uint32_t fnv(uint32_t h, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) {
    h ^= (uint32_t)(v & 0xff);
    h *= 16777619u;
    v >>= 8;
  }
  return h;
}

/* The last checks of a named type with a predefined op (or, op MPI_OP_NULL, a bcast's
 * named type), per thread.  Both handles are permanent in MPI -- never freed, never reused
 * for another object -- so a hit is the same answer the MPI queries would give again; a
 * derived type or a user op is never cached (its handle may be freed and reused).  Small
 * collectives call with the same pair thousands of times a second. */
#define TI_CACHE 4
typedef struct {
  MPI_Datatype type;
  MPI_Op op;
  int used;
  dred_typeinfo_t ti;
} ti_cached_t;
static __thread ti_cached_t ti_cache[TI_CACHE];
static __thread unsigned ti_next;

static int ti_cache_get(MPI_Datatype type, MPI_Op op, dred_typeinfo_t *ti) {
  unsigned i;
  for (i = 0; i < TI_CACHE; i++)
    if (ti_cache[i].used && ti_cache[i].type == type && ti_cache[i].op == op) {
      *ti = ti_cache[i].ti;
      return 1;
    }
  return 0;
}

static void ti_cache_put(MPI_Datatype type, MPI_Op op, const dred_typeinfo_t *ti) {
  ti_cached_t *c = &ti_cache[ti_next++ % TI_CACHE];
  c->type = type;
  c->op = op;
  c->ti = *ti;
  c->used = 1;
}

int dred_typecheck(MPI_Datatype type, MPI_Op op, dred_typeinfo_t *ti) {
  int size = 0, ni, na, nd, combiner, opcls, commute = 0, bsize = 0;
  MPI_Aint lb, extent, tlb, textent, blb, bext;
  MPI_Datatype as_named;
  const char *opname;
  const named_t *nt;
  walk_t w;
  char tn[MPI_MAX_OBJECT_NAME], tn2[MPI_MAX_OBJECT_NAME];
  uint32_t sig = 2166136261u;

  if (type == MPI_DATATYPE_NULL) {
    DRED_ERROR("datatype is MPI_DATATYPE_NULL (an optional named type this MPI build does "
               "not provide, such as MPI_INTEGER16 here, is MPI_DATATYPE_NULL too)");
    return DRED_ERR_ARG;
  }
  if (op == MPI_OP_NULL) {
    DRED_ERROR("op is MPI_OP_NULL");
    return DRED_ERR_ARG;
  }
  if (ti_cache_get(type, op, ti)) return DRED_OK;
  opcls = op_classes(op, &opname);
  if (opcls < 0) {
    DRED_ERROR("%s is not a reduction operation", opname);
    return DRED_ERR_ARG;
  }
  MPI_Type_size(type, &size);
  MPI_Type_get_extent(type, &lb, &extent);
  MPI_Type_get_true_extent(type, &tlb, &textent);
  MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  if (size <= 0 || extent <= 0) {
    DRED_ERROR("datatype %s has size %d and extent %ld: nothing to reduce",
               type_name(type, tn, sizeof tn), size, (long)extent);
    return DRED_ERR_ARG;
  }
  MPI_Op_commutative(op, &commute);
  ti->size = (uint32_t)size;
  ti->op_is_user = opcls == 0;
  ti->commutative = commute != 0;
  ti->type_extent = extent;
  ti->true_lb = tlb;
  ti->true_extent = textent;
  ti->base_padded = 0;
  as_named = combiner == MPI_COMBINER_NAMED ? type : f90_named(type, combiner);
  ti->named = as_named != MPI_DATATYPE_NULL;

  if (as_named != MPI_DATATYPE_NULL) {
    nt = named_find(as_named);
    if (opcls > 0 && (nt == NULL || (nt->cls & opcls) == 0)) {
      DRED_ERROR("%s does not apply to datatype %s", opname,
                 type_name(as_named, tn, sizeof tn));
      return DRED_ERR_ARG;
    }
    ti->layout = DRED_LAYOUT_DIRECT;
    /* a user op is handed the caller's own type (it may compare it); dred's kernels and
     * MPI_Reduce_local take a Fortran parameterized type's named equal */
    ti->exec_type = opcls > 0 ? as_named : type;
    ti->mult = 1;
    ti->extent = (uint32_t)extent;
    ti->sig = fnv(fnv(sig, (uint32_t)MPI_Type_c2f(ti->exec_type)), 1);
    if (opcls > 0) ti_cache_put(type, op, ti); /* both permanent handles */
    return DRED_OK;
  }

  if (opcls == 0) {
    /* A user op gets the datatype: the typed layout is kept (DIRECT or IMAGE), one element
     * per extent of dred's buffers.  (A predefined op's PACKED elements are as large as
     * their data, whatever the extent: variables at absolute addresses, with MPI_BOTTOM.) */
    if (extent > (MPI_Aint)UINT32_MAX / 2) {
      DRED_ERROR("user op on datatype %s: extent %ld is too large (at most %u)",
                 type_name(type, tn, sizeof tn), (long)extent, UINT32_MAX / 2);
      return DRED_ERR_ARG;
    }
    if (textent > extent) {
      /* elements that interleave (a matrix column resized to one element, say): an image
       * cut into chunks of whole elements cannot hold them; a predefined op packs them */
      DRED_ERROR("user op on datatype %s: elements of extent %ld with a true extent of %ld "
                 "interleave; dred reduces such types with predefined ops only",
                 type_name(type, tn, sizeof tn), (long)extent, (long)textent);
      return DRED_ERR_ARG;
    }
    ti->exec_type = type;
    ti->mult = 1;
    ti->extent = (uint32_t)extent;
    ti->layout = lb == 0 && tlb == 0 && (MPI_Aint)size == extent && textent == extent
                     ? DRED_LAYOUT_DIRECT
                     : DRED_LAYOUT_IMAGE;
    sig = fnv(sig, 0x75736572u); /* "user" */
    sig = fnv(sig, (uint64_t)size);
    sig = fnv(sig, (uint64_t)extent);
    sig = fnv(sig, (uint64_t)tlb);
    ti->sig = fnv(sig, (uint64_t)textent);
    return DRED_OK;
  }

  /* A predefined op on a derived type: every basic element must be one named type the
   * op applies to. */
  w = walk_of(type);
  if (w.unsupported) {
    DRED_ERROR("%s on datatype %s: dred cannot read its typemap (nested more than 64 "
               "levels deep, or out of memory)",
               opname, type_name(type, tn, sizeof tn));
    return DRED_ERR_ARG;
  }
  if (w.base == MPI_DATATYPE_NULL) {
    DRED_ERROR("%s on datatype %s: no basic element found in its typemap", opname,
               type_name(type, tn, sizeof tn));
    return DRED_ERR_ARG;
  }
  if (w.other != MPI_DATATYPE_NULL) {
    DRED_ERROR("%s on a derived datatype mixing %s and %s: a predefined op applies to "
               "derived datatypes whose basic elements are all of one predefined type "
               "(use a user op from MPI_Op_create)",
               opname, type_name(w.base, tn, sizeof tn), type_name(w.other, tn2, sizeof tn2));
    return DRED_ERR_ARG;
  }
  nt = named_find(w.base);
  if (nt == NULL || (nt->cls & opcls) == 0) {
    DRED_ERROR("%s does not apply to datatype %s (the basic type of a derived datatype)",
               opname, type_name(w.base, tn, sizeof tn));
    return DRED_ERR_ARG;
  }
  MPI_Type_size(w.base, &bsize);
  MPI_Type_get_extent(w.base, &blb, &bext);
  if (bsize <= 0 || size % bsize != 0) {
    DRED_ERROR("%s on a derived datatype of %s: size %d is not a multiple of %d",
               opname, nt->name, size, bsize);
    return DRED_ERR_ARG;
  }
  ti->exec_type = w.base;
  ti->mult = (uint32_t)(size / bsize);
  if ((uint64_t)ti->mult * (uint64_t)bext > (uint64_t)UINT32_MAX / 2) {
    DRED_ERROR("%s on a derived datatype of %u x %s: element too large", opname, ti->mult,
               nt->name);
    return DRED_ERR_ARG;
  }
  ti->extent = ti->mult * (uint32_t)bext;
  /* contiguous/dup of the base from offset 0: the buffer already is the array */
  ti->layout = w.chain && lb == 0 && tlb == 0 && (MPI_Aint)ti->extent == extent
                   ? DRED_LAYOUT_DIRECT
                   : DRED_LAYOUT_PACKED;
  ti->base_padded = (MPI_Aint)bsize != bext;
  sig = fnv(sig, (uint32_t)MPI_Type_c2f(w.base));
  ti->sig = fnv(sig, ti->mult);
  return DRED_OK;
}

int dred_typecheck_bcast(MPI_Datatype type, dred_typeinfo_t *ti) {
  int size = 0, ni, na, nd, combiner;
  MPI_Datatype as_named;
  MPI_Aint lb, extent, tlb, textent;
  char tn[MPI_MAX_OBJECT_NAME];
  uint32_t sig = 2166136261u;
  walk_t w;

  if (type == MPI_DATATYPE_NULL) {
    DRED_ERROR("datatype is MPI_DATATYPE_NULL");
    return DRED_ERR_ARG;
  }
  if (ti_cache_get(type, MPI_OP_NULL, ti)) return DRED_OK;
  MPI_Type_size(type, &size);
  MPI_Type_get_extent(type, &lb, &extent);
  MPI_Type_get_true_extent(type, &tlb, &textent);
  MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  /* (any extent: a derived type travels as its size's bytes, packed) */
  if (size <= 0 || extent <= 0) {
    DRED_ERROR("datatype %s has size %d and extent %ld: nothing to broadcast",
               type_name(type, tn, sizeof tn), size, (long)extent);
    return DRED_ERR_ARG;
  }
  ti->size = (uint32_t)size;
  ti->op_is_user = 0;
  ti->commutative = 1;
  ti->type_extent = extent;
  ti->true_lb = tlb;
  ti->true_extent = textent;
  ti->base_padded = 0;
  as_named = combiner == MPI_COMBINER_NAMED ? type : f90_named(type, combiner);
  ti->named = as_named != MPI_DATATYPE_NULL;
  ti->mult = 1;
  /* MPI matches a bcast's type signatures -- the sequences of basic types of count x type
   * at each member -- not counts or layouts: 8 MPI_INT at the root may arrive as 2
   * contiguous(4, MPI_INT) elsewhere.  So members compare their data's bytes (the count
   * dred_rt_params sends for a bcast) and this: the one basic type a named type, or every
   * basic element of a derived type, is; a type mixing basic types is "mixed" (compared by
   * its bytes alone). */
  if (as_named != MPI_DATATYPE_NULL) {
    ti->layout = DRED_LAYOUT_DIRECT;
    ti->exec_type = type;
    ti->extent = (uint32_t)extent;
    ti->sig = fnv(fnv(sig, 0x62636173u), (uint32_t)MPI_Type_c2f(as_named)); /* "bcas" */
    ti_cache_put(type, MPI_OP_NULL, ti); /* a permanent handle */
    return DRED_OK;
  }
  w = walk_of(type);
  ti->sig = w.unsupported || w.base == MPI_DATATYPE_NULL || w.other != MPI_DATATYPE_NULL
                ? fnv(sig, 0x6d697865u) /* "mixe(d)" */
                : fnv(fnv(sig, 0x62636173u), (uint32_t)MPI_Type_c2f(w.base));
  if (lb == 0 && tlb == 0 && (MPI_Aint)size == extent && textent == extent) {
    ti->layout = DRED_LAYOUT_DIRECT; /* no holes: the bytes as they are */
    ti->exec_type = type;
    ti->extent = (uint32_t)extent;
    return DRED_OK;
  }
  /* holes or offsets: travel packed (MPI_Pack writes size bytes per element) */
  ti->layout = DRED_LAYOUT_PACKED;
  ti->exec_type = MPI_BYTE;
  ti->mult = (uint32_t)size;
  ti->extent = (uint32_t)size;
  return DRED_OK;
}

/* Which bytes a typemap touches, MPI's own answer: count elements of all-ones bytes are
 * unpacked through the type at `a` into a zeroed copy of the window both spans cover, then
 * packed back through the type at `b`; each nonzero byte packed is one both touch.  Only
 * when the spans overlap (a caller's matrix columns, or an error), so the window's memory
 * and time are those of one copy of the operand, paid in that case alone. */
#define TYPEMAP_WINDOW_MAX ((uint64_t)1 << 30)
int64_t dred_typemap_shared(const void *a, const void *b, int count, MPI_Datatype type,
                            const dred_typeinfo_t *ti) {
  uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b, lo, hi;
  uint64_t span;
  MPI_Count cap = 0, pos = 0, pos2 = 0;
  unsigned char *win = NULL, *ones = NULL;
  int64_t shared = -1;
  if (count <= 0 || ti->size == 0) return 0;
  /* extent > 0 (dred_typecheck): element i lies in [i*extent + true_lb, + true_extent) */
  span = (uint64_t)(count - 1) * (uint64_t)ti->type_extent + (uint64_t)ti->true_extent;
  if (pa + span <= pb || pb + span <= pa) return 0;
  lo = (pa < pb ? pa : pb) + (uintptr_t)ti->true_lb;
  hi = (pa < pb ? pb : pa) + (uintptr_t)ti->true_lb + span;
  if (hi - lo > TYPEMAP_WINDOW_MAX ||
      MPI_Pack_size_c((MPI_Count)count, type, MPI_COMM_SELF, &cap) != MPI_SUCCESS || cap <= 0) {
    DRED_DEBUG("buffers' shared bytes not checked: a window of %llu bytes",
               (unsigned long long)(hi - lo));
    return -1;
  }
  if ((win = calloc(1, hi - lo)) == NULL || (ones = malloc((size_t)cap)) == NULL) {
    DRED_DEBUG("buffers' shared bytes not checked: no memory for %llu bytes",
               (unsigned long long)(hi - lo + (uint64_t)cap));
    goto out;
  }
  memset(ones, 0xff, (size_t)cap);
  /* address x of the caller's is win + (x - lo); a buffer's address itself may lie before
   * the window (a positive true lower bound), its typemap's bytes never do */
  if (MPI_Unpack_c(ones, cap, &pos, win + (intptr_t)(pa - lo), (MPI_Count)count, type,
                   MPI_COMM_SELF) == MPI_SUCCESS) {
    memset(ones, 0, (size_t)cap);
    if (MPI_Pack_c(win + (intptr_t)(pb - lo), (MPI_Count)count, type, ones, cap, &pos2,
                   MPI_COMM_SELF) == MPI_SUCCESS) {
      shared = 0;
      for (MPI_Count i = 0; i < pos2; i++) shared += ones[i] != 0;
    }
  }
  if (shared < 0) DRED_DEBUG("buffers' shared bytes not checked: MPI_Unpack or MPI_Pack failed");
out:
  free(win);
  free(ones);
  return shared;
}
