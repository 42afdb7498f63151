#!/usr/bin/env bash
# check-layers.sh -- the layering docs/design.md describes holds in the built objects.
#
# The folders are the layers, so the rules name folders, not files (docs/design.md, "Code
# layout and layers"):
#   1. common/ (with common/mpi/) and storage/ are the floor: their objects use no symbol
#      defined under lib/ or master/, and their sources include nothing from there.
#   2. lib/shm/ (shared-memory structures without MPI) uses no MPI symbol (no MPI_ or
#      PMPI_ name undefined in its objects) and nothing of lib/engine/, lib/paths/,
#      lib/mpi/ or lib/robust/: no symbol, no include.
#   3. libdred (lib/) and dred-master (master/, master/sched/) meet only through the floor:
#      neither uses a symbol the other defines, nor includes the other's sources.
#   4. master/sched/, the scheduler, uses no MPI symbol (it is CORE: unit tests, fuzzer).
#   5. Inside libdred the robust layer (lib/robust/) sits beside the engine (lib/engine/,
#      lib/paths/, lib/mpi/), rabit-style: it calls the engine, the engine calls it only
#      through the table of hooks in lib/engine/robust.h (rt->robust).  The one engine
#      reference to the layer is dred_init's call of dred_robust_layer() in api.c.
#   A folder under lib/ that is none of those five is no layer yet: the check says so.
# Why a check: an include or a call added in passing breaks a rule and nothing else
# fails.  Symbols are read with `nm` from the objects `make all` built (BUILD/obj/, the
# source tree's folders), so what is checked is what links, not what a grep of the sources
# guesses.
# Usage: bash tests/check-layers.sh BUILD_DIR
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
obj="${1:?usage: check-layers.sh BUILD_DIR}/obj"
fail=0
lib_layers="engine paths mpi robust shm"

# objs DIR...: the objects built from the sources of those folders (not their sub-folders).
objs() {
  local d
  for d in "$@"; do find "$obj/$d" -maxdepth 1 -name '*.o' 2>/dev/null; done | sort
}
for d in common common/mpi storage master master/sched $(printf 'lib/%s ' $lib_layers); do
  if [ -z "$(objs "$d")" ]; then
    echo "layers-check: no objects in $obj/$d: build first (make all)" >&2; exit 1
  fi
done
for d in "$root"/lib/*/; do
  case " $lib_layers " in *" $(basename "$d") "*) ;; *)
    echo "layers-check: lib/$(basename "$d")/ is none of libdred's layers ($lib_layers):" \
         "say in docs/design.md and here what it may use" >&2
    fail=1 ;;
  esac
done

defined() { [ $# -eq 0 ] || nm --defined-only "$@" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $3 }' | sort -u; }
used() { nm -u "$1" 2>/dev/null | awk '{ print $2 }' | sort -u; }

floor_objs="$(objs common common/mpi storage)"
shm_objs="$(objs lib/shm)"
engine_objs="$(objs lib/engine lib/paths lib/mpi)"
robust_objs="$(objs lib/robust)"
lib_objs="$(objs $(printf 'lib/%s ' $lib_layers))"
master_objs="$(objs master master/sched)"
sched_objs="$(objs master/sched)"

lib_defs="$(defined $lib_objs)"
master_defs="$(defined $master_objs)"
above_shm_defs="$(defined $engine_objs $robust_objs)"
robust_defs="$(defined $robust_objs)"

# check OBJS DEFS WHAT [ALLOWED]: no object of OBJS uses a symbol of DEFS (but ALLOWED, as
# OBJECT.o:SYMBOL).
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
# no_mpi OBJS WHAT: no object of OBJS uses an MPI function or constant.
no_mpi() {
  local o s
  for o in $1; do
    for s in $(used "$o" | grep -E '^P?MPIX?_'); do
      echo "layers-check: ${o#"$obj"/} uses $s ($2)" >&2
      fail=1
    done
  done
}
# no_include 'FOLDER...' REGEX WHAT: no source of those folders includes a path REGEX matches
# (after any ../ steps).
no_include() {
  local d files=()
  for d in $1; do files+=("$root/$d"/*.[ch]); done
  if grep -nE "#include *\"(\\.\\./)*($2)/" "${files[@]}" >&2; then
    echo "layers-check: $3 (above)" >&2
    fail=1
  fi
}

# 1. The floor.
check "$floor_objs" "$lib_defs" "common/ and storage/ must not use lib/"
check "$floor_objs" "$master_defs" "common/ and storage/ must not use master/"
no_include "common common/mpi storage" "lib|master" \
  "common/ or storage/ includes lib/ or master/"
# 2. lib/shm: no MPI, nothing of libdred above it.
no_mpi "$shm_objs" "lib/shm/ has no MPI in it"
check "$shm_objs" "$above_shm_defs" "lib/shm/ must not use lib/engine, lib/paths, lib/mpi or lib/robust"
no_include "lib/shm" "(lib/)?(engine|paths|mpi|robust)" \
  "lib/shm/ includes lib/engine, lib/paths, lib/mpi or lib/robust"
# 3. libdred and dred-master share only the floor.
check "$lib_objs" "$master_defs" "libdred must not use dred-master's code"
check "$master_objs" "$lib_defs" "dred-master must not use libdred's code"
no_include "$(printf 'lib/%s ' $lib_layers)" "master" "libdred includes master/"
no_include "master master/sched" "lib" "dred-master includes lib/"
# 4. The scheduler has no MPI in it.
no_mpi "$sched_objs" "master/sched/ has no MPI in it"
# 5. The engine reaches the robust layer only through rt->robust.
check "$engine_objs" "$robust_defs" "the engine calls the robust layer through rt->robust" \
  "api.o:dred_robust_layer"

if [ "$fail" -ne 0 ]; then echo "layers-check: FAILED" >&2; exit 1; fi
n() { echo $1 | wc -w; }
echo "layers-check: ok (floor: $(n "$floor_objs") objects; libdred: engine $(n "$engine_objs")," \
     "robust layer $(n "$robust_objs"), shm $(n "$shm_objs"); dred-master $(n "$master_objs")," \
     "scheduler $(n "$sched_objs") of them)"
