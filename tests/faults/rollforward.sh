#!/usr/bin/env bash
# rollforward.sh -- a node peer finishes a dead executor's absorption, at chosen moments.
#
#   BUILD=build bash tests/faults/rollforward.sh [--pieces 0,513,999999]
#
# Why.  Absorption (lib/robust/absorb.c) combines a node peer's snapshot into the executor's in
# place, piece by piece; when the executor dies inside it, a node peer rebuilds the unit
# from the two snapshots, the scratch piece and the slot's counters.  Random kills
# (run-faults.sh) land there only now and then (4 in 60 trials), so this script puts the
# death where it matters, every run:
#   piece 0       the first piece's result in scratch, half copied back: the snapshot's
#                 first piece is torn, only scratch has it whole;
#   piece 513     513 pieces final in the snapshot, the 514th torn, the rest untouched;
#   piece 999999  (past the last) every piece done, DONE not yet sent.
# The root is rank 0 and is never the executor of an absorption, so rank 0's result is
# always there to check.
#
# How.  One job per piece: `dredrun -n 4 fault_app --bytes 4M --reductions 1 --root-late
# 0.3` with DRED_TEST_ABSORB_KILL=0:PIECE (common/config.h: the executor of an absorption
# for the reduction of tag 0 SIGKILLs itself there).  The root calls 0.3 s after the
# others, so the three other members pair among themselves first: the first two make the
# one absorbing task of the reduction.  Passes when exactly one process died (the
# ranks that never wrote "exit"), a survivor logged that it recovered the dead member's unit with the absorption
# finished, the root's result is exact (every element checked against the closed form:
# an operand counted twice or missed shows), every survivor ends its reduction with
# DRED_OK and exits, and no process is left (by pid: the launcher's tree and a marker
# variable).  Every wait is bounded.  Prints "N passed, N failed", exits non-zero on a
# failure.
set -u
BUILD=${BUILD:-build}
pieces="0,513,999999"
while [ $# -gt 0 ]; do
  case "$1" in
    --pieces) pieces=$2; shift 2 ;;
    *) echo "rollforward.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
DREDRUN="$BUILD/bin/dredrun"
APP="$BUILD/tests/fault_app"
for f in "$DREDRUN" "$APP"; do
  [ -x "$f" ] || { echo "rollforward.sh: $f is not built (make all $APP)" >&2; exit 2; }
done

# shellcheck source=jobprocs.sh
. "$(dirname "${BASH_SOURCE[0]}")/jobprocs.sh"

pass=0
fail=0
IFS=',' read -r -a plist <<<"$pieces"
for piece in "${plist[@]}"; do
  dir="$BUILD/faults/rollforward-$piece"
  rm -rf "$dir"
  mkdir -p "$dir/tmp"
  marker="rollforward-$$-$piece"
  env DRED_ROLLFORWARD_ID="$marker" DRED_STORAGE_DIR="$dir/store" TMPDIR="$dir/tmp" \
    DRED_TEST_ABSORB_KILL="0:$piece" DRED_LOG_LEVEL=info \
    DRED_HEARTBEAT_MS=100 DRED_FAIL_TIMEOUT_MS=1000 DRED_MASTER_TIMEOUT_MS=2000 \
    "$DREDRUN" -n 4 "$APP" --outdir "$dir" --bytes 4M --reductions 1 --calib 1 \
    --victim-mode none --root-late 0.3 >"$dir/dredrun.out" 2>&1 </dev/null &
  sid=$!
  why=$(job_end "$sid" "DRED_ROLLFORWARD_ID=$marker" 90)
  wait "$sid" 2>/dev/null
  # The victim's own log line may die with it (fault_app relays stderr through a thread of
  # the same process), so the dead are the ranks that never wrote "exit".
  died=0
  victim=-1
  for r in 0 1 2 3; do
    grep -q '^exit' "$dir/rank.$r.txt" 2>/dev/null || { died=$((died + 1)); victim=$r; }
  done
  rolled=$(cat "$dir"/stderr.* 2>/dev/null | grep -c "unit, its absorption finished,")
  exact=$(grep -c '^red phase=main .*status=0 .*check=exact' "$dir/rank.0.txt" 2>/dev/null)
  wrong=$(cat "$dir"/rank.*.txt 2>/dev/null | grep -c 'check=wrong\|outcome=WRONG')
  okend=0
  for r in 0 1 2 3; do
    [ "$r" = "$victim" ] && continue
    grep -q '^red phase=main .*status=0 ' "$dir/rank.$r.txt" 2>/dev/null && okend=$((okend + 1))
  done
  [ "$died" = 1 ] || why="${why:+$why; }$died processes died (want 1: the executor of the absorption)"
  [ "$rolled" -ge 1 ] || why="${why:+$why; }no survivor finished the dead executor's absorption"
  [ "$wrong" = 0 ] || why="${why:+$why; }WRONG result"
  [ "$exact" = 1 ] || why="${why:+$why; }the root's result is not exact"
  [ "$okend" = 3 ] || why="${why:+$why; }$okend of 3 survivors ended with DRED_OK and exited"
  if [ -z "$why" ]; then
    echo "PASS piece $piece: the executor died $( [ "$piece" -ge 1024 ] && echo "after its last piece" || echo "halfway through piece $piece"), a node peer finished its absorption, root exact"
    pass=$((pass + 1))
  else
    echo "FAIL piece $piece: $why (see $dir)"
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
