#!/usr/bin/env bash
# check-layers.sh -- the layering docs/design.md describes holds in the built objects.
#
# The rules (docs/design.md, "Code layout and layers"):
#   1. common/ and storage/ are the floor: their objects use no symbol defined by worker/
#      or master/, and their sources include nothing from there.
#   2. worker/ (libdred) and master/ (dred-master) meet only through common/ and storage/:
#      neither uses a symbol the other defines.
#   3. Inside libdred the robust layer (replicate.c, replica_send.c, replica_recv.c,
#      recover.c, absorb.c) sits beside the engine, rabit-style: it calls the engine, the engine
#      calls it only through the table of hooks in runtime.h (rt->robust).  The one engine
#      reference to the layer is dred_init's call of dred_robust_layer() in api.c.
# Why a check: an include or a call added in passing breaks a rule and nothing else
# fails.  Symbols are read with `nm` from the objects `make all` built, so what is
# checked is what links, not what a grep of the sources guesses.
# Usage: bash tests/check-layers.sh BUILD_DIR
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
obj="${1:?usage: check-layers.sh BUILD_DIR}/obj"
fail=0

if [ ! -d "$obj/lib/engine" ] || [ ! -d "$obj/master" ] || [ ! -d "$obj/common" ]; then
  echo "layers-check: $obj has no worker/master/common objects: build first" >&2; exit 1
fi
defined() { nm --defined-only "$@" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $3 }' | sort -u; }
used() { nm -u "$1" 2>/dev/null | awk '{ print $2 }' | sort -u; }

robust_files="replicate replica_send replica_recv recover absorb"
robust_objs=""; engine_objs=""
for o in "$obj"/lib/{engine,paths,mpi,robust}/*.o; do
  b="$(basename "$o" .o)"
  case " $robust_files " in *" $b "*) robust_objs="$robust_objs $o" ;; *) engine_objs="$engine_objs $o" ;; esac
done
worker_defs="$(defined "$obj"/lib/*/*.o)"
master_defs="$(defined "$obj"/master/*.o "$obj"/master/sched/*.o)"
robust_defs="$(defined $robust_objs)"

# check OBJS DEFS WHAT [ALLOWED]: no object of OBJS uses a symbol of DEFS (but ALLOWED).
check() {
  local objs="$1" defs="$2" what="$3" allowed="${4:-}" o s
  for o in $objs; do
    for s in $(comm -12 <(used "$o") <(echo "$defs")); do
      [ -n "$allowed" ] && [ "$(basename "$o"):$s" = "$allowed" ] && continue
      echo "layers-check: ${o#"$obj"/} uses $s ($what)" >&2
      fail=1
    done
  done
}
floor_objs="$(ls "$obj"/common/*.o "$obj"/common/mpi/*.o "$obj"/storage/*.o 2>/dev/null)"
check "$floor_objs" "$worker_defs" "common/ and storage/ must not use worker/"
check "$floor_objs" "$master_defs" "common/ and storage/ must not use master/"
check "$(ls "$obj"/lib/*/*.o)" "$master_defs" "libdred must not use dred-master's code"
check "$(ls "$obj"/master/*.o "$obj"/master/sched/*.o)" "$worker_defs" "dred-master must not use libdred's code"
check "$engine_objs" "$robust_defs" "the engine calls the robust layer through rt->robust" \
  "api.o:dred_robust_layer"

# Sources: the floor includes nothing from above it.
if grep -nE '#include *"(\.\./)*(lib|master)/' "$root"/common/*.[ch] "$root"/common/mpi/*.[ch] \
     "$root"/storage/*.[ch] >&2; then
  echo "layers-check: common/ or storage/ includes worker/ or master/ (above)" >&2
  fail=1
fi

if [ "$fail" -ne 0 ]; then echo "layers-check: FAILED" >&2; exit 1; fi
echo "layers-check: ok (floor: $(echo $floor_objs | wc -w) objects; libdred: engine" \
     "$(echo $engine_objs | wc -w), robust layer $(echo $robust_objs | wc -w); dred-master" \
     "$(ls "$obj"/master/*.o "$obj"/master/sched/*.o | wc -l))"
