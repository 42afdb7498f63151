#!/usr/bin/env bash
# check-symbols.sh -- libdred.so exports exactly its public API, nothing else.
#
# libdred is compiled with -fvisibility=hidden, so a symbol is exported only when marked:
# the functions declared DRED_EXTERN in include/dred.h, and libdred's own MPI_Op_free /
# MPI_Type_free (lib/engine/lifetime.c), which must stay exported so they interpose on MPI's.
# Why a check: an internal symbol that leaks out becomes something applications can link
# against (and clash with), and a public one that goes hidden breaks every program linked
# to the shared library at run time, not at build time.
#
# The expected list is read from dred.h itself (so a new API function needs no second
# edit), the actual one from `nm -D --defined-only`; on a difference the script prints
# both lists as a unified diff and exits 1.
# Usage: bash tests/check-symbols.sh build/lib/libdred.so
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
so="${1:?usage: check-symbols.sh LIBDRED_SO}"
wrappers="MPI_Op_free MPI_Type_free"

if [ ! -f "$so" ]; then echo "symbols-check: $so missing: build it first" >&2; exit 1; fi
tmp="$(mktemp -d /tmp/dred-symbols.XXXXXX)"  # mkdtemp(3) template
trap 'rm -rf "$tmp"' EXIT

# "DRED_EXTERN <type> [*]name(" in dred.h: the declarations, one per line.
{ sed -n 's/^DRED_EXTERN [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$root/include/dred.h"
  printf '%s\n' $wrappers; } | LC_ALL=C sort -u >"$tmp/expected"
if [ "$(wc -l <"$tmp/expected")" -le "$(echo $wrappers | wc -w)" ]; then
  echo "symbols-check: found no DRED_EXTERN declaration in include/dred.h" >&2; exit 1
fi
if ! nm -D --defined-only "$so" >"$tmp/nm"; then
  echo "symbols-check: nm -D $so failed" >&2; exit 1
fi
awk 'NF >= 3 { print $3 }' "$tmp/nm" | LC_ALL=C sort -u >"$tmp/exported"

if ! diff -u --label "expected (include/dred.h DRED_EXTERN + $wrappers)" \
     --label "exported by $so (nm -D --defined-only)" "$tmp/expected" "$tmp/exported"; then
  echo "symbols-check: FAILED: libdred.so must export exactly the public API" \
       "('-' lines are missing, '+' lines leak; mark API functions DRED_EXTERN in" \
       "include/dred.h, keep everything else hidden)" >&2
  exit 1
fi
echo "symbols-check: ok ($(wc -l <"$tmp/exported") symbols: $(tr '\n' ' ' <"$tmp/exported"))"
