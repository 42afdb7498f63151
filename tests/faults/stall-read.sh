#!/usr/bin/env bash
# stall-read.sh -- a task's MPI_Rget that never completes must end its reduction with an
# explicit error, not hang it.
#
#   BUILD=build bash tests/faults/stall-read.sh [--trials N]
#
# Why.  Between simulated nodes a process SIGKILLed while it writes into a survivor's UCX
# shared-memory receive FIFO leaves that FIFO blocked: the survivor's reads never complete,
# from any live provider, and MPI never says so (tests/faults/fifo_block.c; docs/faults.md,
# "The node-loss hang").  dred bounds such a read (lib/mpi/combine.c, rma_stalled): after
# twice DRED_FAIL_TIMEOUT_MS without a read landing the task ends, and its reduction with
# DRED_ERR_PROC_FAILED on every member.  A real kill hits that window rarely (about 1 trial
# in 50 of the node-loss mix), so this test makes the read itself: the LD_PRELOAD shim
# tests/faults/stall_rget.c turns the Nth MPI_Rget of every process into a request that
# never completes.
#
# How.  One job per trial: `dredrun --sim-nodes a:2,b:2 -n 3 fault_app --victim-mode none`
# (8 MiB reductions spanning both nodes, read by MPI_Rget), dred's test timeouts (100 /
# 1000 / 2000 ms), STALL_NTH drawn from 1-40.  A trial passes when the job ends by itself
# within 60 s, with nothing left behind, every rank's reductions each exact (the root's
# check) or DRED_ERR_PROC_FAILED, at least one PROC_FAILED and the log line saying why,
# and dred_finalize returning.  Prints "N passed, N failed" (tests/faults/short.sh).
set -u
set +m
BUILD=${BUILD:-build}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=jobprocs.sh
. "$here/jobprocs.sh"
trials=2
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "stall-read.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
APP=$BUILD/tests/fault_app SHIM=$BUILD/tests/libstall_rget.so
for f in "$APP" "$SHIM" "$BUILD/bin/dredrun"; do
  [ -e "$f" ] || { echo "stall-read.sh: $f missing (make $APP $SHIM)" >&2; exit 2; }
done
SHIM=$(cd "$(dirname "$SHIM")" && pwd)/$(basename "$SHIM")

pass=0 fail=0
for n in $(seq 1 "$trials"); do
  dir="$BUILD/faults/stall-read-$n"
  rm -rf "$dir"
  mkdir -p "$dir/tmp"
  marker="stallread-$$-$n"
  nth=$((1 + RANDOM % 40))
  t0=$(date +%s)
  env DRED_STALL_TRIAL_ID="$marker" DRED_STORAGE_DIR="$dir/store" TMPDIR="$dir/tmp" \
    DRED_HEARTBEAT_MS=100 DRED_FAIL_TIMEOUT_MS=1000 DRED_MASTER_TIMEOUT_MS=2000 \
    STALL_NTH=$nth LD_PRELOAD="$SHIM" \
    setsid "$BUILD/bin/dredrun" --sim-nodes a:2,b:2 -n 3 "$APP" --outdir "$dir" --bytes 8M \
    --reductions 6 --calib 2 --victim-mode none >"$dir/dredrun.out" 2>&1 </dev/null &
  sid=$!
  why=$(job_end "$sid" "DRED_STALL_TRIAL_ID=$marker" 60) # (a read left hanging?)
  { wait "$sid"; } 2>/dev/null
  cat "$dir"/stderr.* "$dir/dredrun.out" >"$dir/all.log" 2>/dev/null
  nstall=$(grep -c '^stall_rget:' "$dir/all.log")
  nbound=$(grep -c 'made no progress for' "$dir/all.log")
  cat "$dir"/rank.*.txt >"$dir/ranks.txt" 2>/dev/null
  nfailed=$(grep -c '^red .* name=PROC_FAILED ' "$dir/ranks.txt")
  nbad=$(grep '^red ' "$dir/ranks.txt" | grep -v -c -E ' name=PROC_FAILED | name=OK check=(exact|na) ')
  nexit=$(grep -c '^exit' "$dir/ranks.txt")
  nfin=$(grep -c '^finalize status=' "$dir/ranks.txt")
  if [ -z "$why" ]; then
    if [ "$nstall" = 0 ]; then why="no MPI_Rget was stalled (STALL_NTH=$nth beyond the job's reads?)"
    elif [ "$nbad" != 0 ]; then why="$nbad reduction(s) neither exact nor PROC_FAILED"
    elif [ "$nfailed" = 0 ] || [ "$nbound" = 0 ]; then why="no reduction ended by the bound ($nfailed PROC_FAILED, $nbound log lines)"
    elif [ "$nexit" != 3 ] || [ "$nfin" != 3 ]; then why="$nexit of 3 ranks exited, $nfin finalized"
    fi
  fi
  if [ -z "$why" ]; then
    pass=$((pass + 1))
    echo "stall-read trial $n (read #$nth stalled in $nstall process(es)): pass in $(($(date +%s) - t0)) s, $nfailed PROC_FAILED over the ranks, every other reduction exact"
  else
    fail=$((fail + 1))
    echo "   FAIL: stall-read trial $n (read #$nth): $why (see $dir)"
  fi
done
echo "$pass passed, $fail failed"
