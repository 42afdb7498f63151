#!/usr/bin/env bash
# device-sweep.sh -- the one prepared script for a lent many-core machine (no MPICH, no
# package registry there): the rank-per-core sweep of `make bench`'s binaries, in well under
# the 10 minutes one device command may run.
#
#   here:   bash ../shared/bundle/make-bundle.sh           # packs MPICH + this build
#   there:  source .devbundle/env.sh && bash tests/bench/device-sweep.sh [--out DIR] [--ps "8 15 16"]
#
# What it runs, for each p (default 8, 15, 16 where the machine has 16 CPUs), members
# waiting in MPI's blocking calls between repetitions (the binaries' default), dred against
# MPICH's own collective in the same job:
#   1. reduce, ideal arrival: dred-bench --scenario ideal, 8 B .. 8 MiB;
#   2. allreduce and bcast: dred-bench-coll, 8 B .. 32 MiB, and 16 KiB / 128 KiB (where the
#      fast lane's whole fold gives way to the slot's shared one);
#   3. at the largest p only: the reduce's fold shared by the members that wait against the
#      root alone (DRED_MEET_SHARE=2 and 0 at 1 MiB and 8 MiB, in turn), unbalanced arrival
#      (k = 10, the tail after the last arrival), and the loop of small reductions.
# Every job is bounded (timeout: 660 s in all at three ps; the jobs took 53 s in all on a
# 16-core machine, session 47, so one device command's 600 is ample)
# and its output kept in DIR (default $OUT when the device
# tool sets it, else build/bench/device); summary.txt gathers the ratio lines with the
# machine's lscpu model, nproc, CPU 0's caches and the load average at each job's start.
set -u
out=${OUT:-build/bench/device}
ps=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --ps) ps=$2; shift 2 ;;
    *) echo "device-sweep.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
ncpu=$(nproc)
if [ -z "$ps" ]; then
  ps="8"
  [ "$ncpu" -ge 15 ] && ps="$ps 15"
  [ "$ncpu" -ge 16 ] && ps="$ps 16"
fi
mkdir -p "$out"
sum="$out/summary.txt"
{
  echo "# device-sweep.sh $(date -u +%FT%TZ)"
  echo "# $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), nproc $ncpu, ps: $ps"
  # the caches decide how dred copies into shared memory (DRED_SHM_STREAM, docs/performance.md)
  for c in /sys/devices/system/cpu/cpu0/cache/index*; do
    [ -r "$c/level" ] || continue
    echo "# cpu0 cache L$(cat "$c/level") $(cat "$c/type") $(cat "$c/size"), shared with CPUs $(cat "$c/shared_cpu_list")"
  done
} >"$sum"
for t in dredrun dred-bench dred-bench-coll; do
  command -v "$t" >/dev/null || { echo "device-sweep.sh: $t not on PATH (source .devbundle/env.sh)" >&2; exit 2; }
done

# run NAME LIMIT_S ARGS...: one job, its output to NAME.txt, its result lines to the summary
run() {
  local name=$1 limit=$2
  shift 2
  echo "== $name (load $(cut -d' ' -f1 /proc/loadavg))" >>"$sum"
  timeout -k 5 "$limit" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  grep -E '^(ideal|unbalanced[a-z_]*|loop) |^ +[0-9]+ ' "$out/$name.txt" >>"$sum"
  [ $rc -eq 0 ] || echo "   (exit $rc; 124: timed out)" >>"$sum"
}

last=${ps##* }
for p in $ps; do
  run "reduce-ideal-p$p" 60 dredrun -n "$p" dred-bench --scenario ideal --sizes 8,1K,128K,1M,8M --reps 9
  run "coll-p$p" 60 dredrun -n "$p" dred-bench-coll --max 33554432
  # the sizes between, where the lane's whole fold gives way to the slot's shared one
  run "coll-mid-p$p" 30 dredrun -n "$p" dred-bench-coll --min 16384 --max 131072
done
for share in 2 0 2 0; do
  run "share$share-p$last" 30 env DRED_MEET_SHARE=$share dredrun -n "$last" dred-bench --scenario ideal --sizes 1M,8M --reps 9
done
run "unbalanced-p$last" 45 dredrun -n "$last" dred-bench --scenario unbalanced --sizes 8M --k 10 --reps 9
run "loop-p$last" 45 dredrun -n "$last" dred-bench --scenario loop --loop-iters 600 --reps 5
cat "$sum"
