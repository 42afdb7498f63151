#!/usr/bin/env bash
# unseen-mismatch.sh -- a member that disagrees and dies before dred-master heard from it
# still makes its reduction DRED_ERR_MISMATCH.
#
#   BUILD=build bash tests/faults/unseen-mismatch.sh
#
# Why.  dred-master compares every member's parameters, READY by READY.  A member that
# dies after its operand's copies are held but before its READY goes out is recovered from
# a copy: the holder's READY answering the RECOVER must state the dead member's own
# parameters -- which its copy's header carried, or its snapshot directory lists -- not the
# holder's, or a mismatching op is never seen and the reduction ends DRED_OK.
#
# How.  tests/faults/mismatch_app.c: one reduce of 1 MiB to rank 0, explicit tag 7; rank 2
# passes MPI_MAX where the others pass MPI_SUM (--bad-rank 2), and DRED_TEST_READY_KILL=7:3
# (world rank 3 is app rank 2 under dredrun) makes it send no READY and SIGKILL itself
# half a second later.  Four runs:
#   nodes        --sim-nodes a:2,b:1,c:1 (rank 2 alone on c): its copy went on the link to
#                another node and is held there; every survivor must end MISMATCH;
#   nodes-agree  the same with every member passing MPI_SUM: DRED_OK, rank 0's result
#                exact (the dead member's operand recovered: the control);
#   snapdir      one node, DRED_MEET=0 (dred-master pairs), DRED_REPLICA_DELAY_MS=5000 (no
#                neighbour copy started yet): the copy is read from the dead member's
#                snapshot directory; MISMATCH;
#   snapdir-agree  the same, agreeing: DRED_OK, exact.
# Test timeouts (DRED_HEARTBEAT_MS=100, DRED_FAIL_TIMEOUT_MS=1000), DRED_LOG_LEVEL=info:
# a run passes when exactly rank 2 died, a survivor logged recovering member 2, every
# survivor wrote its status (MISMATCH, or OK with rank 0 exact) and exited, and no
# process of the job is left (by pid: the launcher's tree and a marker variable).  Every
# wait is bounded.  Prints "N passed, N failed", exits non-zero on a failure.
set -u
BUILD=${BUILD:-build}
DREDRUN="$BUILD/bin/dredrun"
APP="$BUILD/tests/mismatch_app"
for f in "$DREDRUN" "$APP"; do
  [ -x "$f" ] || { echo "unseen-mismatch.sh: $f is not built (make all $APP)" >&2; exit 2; }
done
# shellcheck source=jobprocs.sh
. "$(dirname "${BASH_SOURCE[0]}")/jobprocs.sh"

MISMATCH=$(sed -n "s/^#define DRED_ERR_MISMATCH *\([0-9-]*\).*/\1/p" \
  "$(dirname "${BASH_SOURCE[0]}")/../../include/dred_status.h" | head -1)
[ -n "$MISMATCH" ] || { echo "unseen-mismatch.sh: DRED_ERR_MISMATCH not found in include/dred_status.h" >&2; exit 2; }

pass=0
fail=0
# run NAME AGREE(0|1) ENV... -- DREDRUN-ARGS...
run() {
  local name=$1 agree=$2 dir marker sid why died r got want rec env=()
  shift 2
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  dir="$BUILD/faults/unseen-mismatch-$name"
  rm -rf "$dir"
  mkdir -p "$dir/tmp"
  marker="unseen-mismatch-$$-$name"
  env DRED_FAULT_TRIAL_ID="$marker" DRED_STORAGE_DIR="$dir/store" TMPDIR="$dir/tmp" \
    DRED_TEST_READY_KILL=7:3 DRED_LOG_LEVEL=info \
    DRED_HEARTBEAT_MS=100 DRED_FAIL_TIMEOUT_MS=1000 DRED_MASTER_TIMEOUT_MS=2000 "${env[@]}" \
    "$DREDRUN" "$@" "$APP" --outdir "$dir" $([ "$agree" = 1 ] || echo --bad-rank 2) \
    >"$dir/dredrun.out" 2>&1 </dev/null &
  sid=$!
  why=$(job_end "$sid" "DRED_FAULT_TRIAL_ID=$marker" 90)
  wait "$sid" 2>/dev/null
  died=""
  for r in 0 1 2; do grep -q '^exit' "$dir/rank.$r.txt" 2>/dev/null || died="$died $r"; done
  [ "$died" = " 2" ] || why="${why:+$why; }died:${died:- none} (want rank 2 alone)"
  rec=$(grep -c "recovered member 2's" "$dir/dredrun.out")
  [ "$rec" -ge 1 ] || why="${why:+$why; }no survivor recovered member 2"
  for r in 0 1; do
    got=$(sed -n 's/^status=\(-*[0-9]*\) check=\([a-z]*\)$/\1 \2/p' "$dir/rank.$r.txt" 2>/dev/null)
    if [ "$agree" = 1 ]; then
      want="0 none"
      [ "$r" = 0 ] && want="0 exact"
    else
      want="$MISMATCH none"
    fi
    [ "$got" = "$want" ] || why="${why:+$why; }rank $r: '${got:-nothing}', want '$want'"
  done
  if [ -z "$why" ]; then
    echo "PASS $name: rank 2 died before its READY, $([ "$agree" = 1 ] && echo "recovered, rank 0 exact" || echo "every survivor MISMATCH")"
    pass=$((pass + 1))
  else
    echo "FAIL $name: $why (see $dir)"
    fail=$((fail + 1))
  fi
}

run nodes 0 -- --sim-nodes a:2,b:1,c:1 -n 3
run nodes-agree 1 -- --sim-nodes a:2,b:1,c:1 -n 3
run snapdir 0 DRED_MEET=0 DRED_REPLICA_DELAY_MS=5000 -- -n 3
run snapdir-agree 1 DRED_MEET=0 DRED_REPLICA_DELAY_MS=5000 -- -n 3
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
