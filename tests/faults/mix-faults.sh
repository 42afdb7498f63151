#!/usr/bin/env bash
# mix-faults.sh -- the randomized mix (tests/mpi/mix.c) with a real process loss in it.
#
#   bash tests/faults/mix-faults.sh [--trials N] [--np P] [--sim-nodes LIST] [--node]
#        [--seed S] [--rounds R] [--max-delay US] [--limit SEC] [--default-timeouts]
#        [--external] [--fixed] [-- MIX-ARGS...]
#
# Trial t runs `dredrun [--sim-nodes LIST] -n P mpi_mix -s S+t -r R -X X[:node] -x US
# MIX-ARGS`: in round X (1..R-2, drawn from the trial's seed) one member drawn by the mix
# from its seed -- or with --node every member of one node other than dred-master's --
# dies by SIGKILL at a moment drawn from 0..US microseconds after it starts issuing that
# round's collectives (reduce, allreduce and bcast on seven kinds of communicators, tags,
# types, ops, IN_PLACE, threads, abandoned futures, mismatches: mix.c's header).  Every
# survivor checks every collective: one whose group holds a victim ends in DRED_OK with the
# exact result, DRED_ERR_PROC_FAILED or DRED_ERR_ROOT_FAILED; every other one must be
# exact.  Each survivor ends with "SURVIVOR rank=R fails=0".  --external: dred-master
# beside the job (dredrun --external-master).  --fixed: every trial runs seed S (a plan
# and kill known to have found a bug: the timing differs from run to run).
#
# A trial passes when every survivor printed that line, no process printed a FAIL line,
# the job ended within --limit seconds (default 240) and no process of it is left.  It is
# "wrong" with a FAIL line -- "deaf" instead when every FAIL line is DRED_ERR_PROC_FAILED
# where success was due and a worker logged that its MPI_Rget of a live process made no
# progress (dred's bound on a survivor whose UCX shared-memory FIFO a killed sender left
# blocked, between simulated nodes: docs/faults.md, "The node-loss hang, found"; an
# explicit error, not a wrong value, and still not a pass) -- "hung" past the limit (then
# killed), "died" when a survivor ended without its line, "setup" when the mix never said
# whom it kills.  Failure
# detection uses the test timeouts (DRED_HEARTBEAT_MS=100, DRED_FAIL_TIMEOUT_MS=1000,
# DRED_MASTER_TIMEOUT_MS=2000) unless --default-timeouts or the variables are set.
# Processes are found by pid only (tests/faults/jobprocs.sh): the trial's session and a
# marker variable in its environment.  Logs: $BUILD/faults/mix/<seed>.log, or
# <seed>.<n>.log when that exists (no log is overwritten).  Exit
# status 0 when every trial passed.
set -u
set +m

BUILD=${BUILD:-build}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=jobprocs.sh
. "$here/jobprocs.sh"

trials=20 np=4 sim="" node=0 seed=1 rounds=8 delay=20000 limit=240 default_to=0 external=() fixed=0
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --sim-nodes) sim=$2; shift 2 ;;
    --node) node=1; shift ;;
    --seed) seed=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --max-delay) delay=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --default-timeouts) default_to=1; shift ;;
    --external) external=(--external-master); shift ;;
    --fixed) fixed=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "mix-faults.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
[ "$rounds" -ge 3 ] || { echo "mix-faults.sh: --rounds must be 3 or more" >&2; exit 2; }
[ "$node" = 0 ] || [ -n "$sim" ] || { echo "mix-faults.sh: --node needs --sim-nodes" >&2; exit 2; }
scale=${DRED_TEST_TIMEOUT_SCALE:-1}
limit=$(awk -v a="$limit" -v b="$scale" 'BEGIN { printf "%d", a * b }')
if [ "$default_to" = 0 ]; then
  export DRED_HEARTBEAT_MS=${DRED_HEARTBEAT_MS:-100}
  export DRED_FAIL_TIMEOUT_MS=${DRED_FAIL_TIMEOUT_MS:-1000}
  export DRED_MASTER_TIMEOUT_MS=${DRED_MASTER_TIMEOUT_MS:-2000}
fi
export MPIR_CVAR_DEVICE_COLLECTIVES=${MPIR_CVAR_DEVICE_COLLECTIVES:-none}
logdir=$BUILD/faults/mix
mkdir -p "$logdir"

# job_pids LEADER MARKER: the trial's live processes (its session's tree, or the marker)
job_pids() {
  local p
  for p in $( { tree_pids "$1"; marked_pids "DRED_TEST_CASE_ID=$2"; } | grep -vx "$$" | sort -un); do
    alive "$p" && echo "$p"
  done
}

reap() {
  local leader=$1 marker=$2 p
  for sig in TERM KILL; do
    kill "-$sig" -- "-$leader" 2>/dev/null
    for p in $(job_pids "$leader" "$marker"); do kill "-$sig" "$p" 2>/dev/null; done
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      [ -z "$(job_pids "$leader" "$marker")" ] && break
      sleep 0.3
    done
  done
}

cur_leader="" cur_marker=""
trap '[ -n "$cur_leader" ] && reap "$cur_leader" "$cur_marker"; exit 130' INT TERM HUP

declare -A count=([pass]=0 [wrong]=0 [deaf]=0 [hung]=0 [died]=0 [setup]=0 [leftover]=0)
errors=0 exact=0
for ((t = 0; t < trials; t++)); do
  s=$((seed + (fixed ? 0 : t)))
  x=$((1 + s * 7 % (rounds - 2)))
  spec=$x
  [ "$node" = 1 ] && spec="$x:node"
  log=$logdir/$s.log
  n=1
  while [ -e "$log" ]; do log=$logdir/$s.$n.log; n=$((n + 1)); done
  storage=$(mktemp -d)
  marker="mixfault-$$-$t"
  layout=()
  [ -n "$sim" ] && layout=(--sim-nodes "$sim")
  start=$(date +%s)
  DRED_STORAGE_DIR=$storage DRED_TEST_CASE_ID=$marker setsid "$BUILD/bin/dredrun" "${external[@]}" "${layout[@]}" \
    -n "$np" "$BUILD/tests/mpi_mix" -s "$s" -r "$rounds" -X "$spec" -x "$delay" "$@" >"$log" 2>&1 &
  leader=$!
  cur_leader=$leader cur_marker=$marker
  timed_out=0
  while alive "$leader"; do
    if [ $(($(date +%s) - start)) -ge "$limit" ]; then timed_out=1; break; fi
    sleep 0.2
  done
  [ "$timed_out" = 1 ] && reap "$leader" "$marker"
  wait "$leader" 2>/dev/null
  sleep 0.5
  left=$(job_pids "$leader" "$marker" | wc -l)
  [ "$left" -gt 0 ] && reap "$leader" "$marker"
  cur_leader=""
  rm -rf "$storage"

  victims=$(sed -n 's/^mix: round .* (victims 0x\([0-9a-f]*\))$/\1/p' "$log" | head -1)
  nsurv=$(grep -c '^SURVIVOR rank=[0-9]* fails=0 ' "$log")
  if [ -z "$victims" ]; then outcome=setup
  else
    nv=0 v=$((16#$victims))
    while [ "$v" -gt 0 ]; do nv=$((nv + (v & 1))); v=$((v >> 1)); done
    if grep -q '^FAIL' "$log"; then
      outcome=wrong
      if grep -q 'MPI_Rget read(s) from live worker .* made no progress for' "$log" &&
         ! grep '^FAIL' "$log" | grep -vq ': status 4 (.*), expected success'; then
        outcome=deaf
      fi
    elif [ "$timed_out" = 1 ]; then outcome=hung
    elif [ "$nsurv" -ne $((np - nv)) ]; then outcome=died
    else outcome=pass
    fi
  fi
  [ "$outcome" = pass ] && [ "$left" -gt 0 ] && outcome=leftover
  count[$outcome]=$((${count[$outcome]} + 1))
  e=$(sed -n "s/.*ended by a member's death: \([0-9]*\)$/\1/p" "$log" | awk '{ n += $1 } END { print n + 0 }')
  errors=$((errors + e))
  k=$(grep "^PASS mix/seed=$s/round=" "$log" | awk -v x="$x" -F'[/=:]' '$5 >= x' |
      sed -n 's/.* \([0-9]*\) exact or OK.*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
  exact=$((exact + k))
  if [ "$outcome" != pass ]; then
    echo "   FAIL: mix-faults trial $t (seed $s): $outcome (see $log)"
    grep -E '^FAIL' "$log" | head -5 | cut -c1-300 | sed 's/^/      /'
  fi
  kill_step=$(sed -n 's/^mix: rank [0-9]* kills .*(step: \(.*\))$/\1/p' "$log" | head -1)
  printf 'trial %d seed %d round %d: %s (%d survivors; %s) [killed during: %s]\n' "$t" "$s" "$x" \
    "$outcome" "$nsurv" "$([ "$left" -gt 0 ] && echo "$left processes left" || echo "none left")" \
    "${kill_step:-?}"
done
printf 'mix-faults: %d trials (np %d%s%s%s): %d passed, %d wrong, %d deaf, %d hung, %d died, %d setup, %d with processes left; survivors from the fault round on: %d collectives exact or OK, %d ended in an explicit error\n' \
    "$trials" "$np" "${sim:+, $sim}" "$([ "$node" = 1 ] && echo ", a node lost")" "${external[0]:+, master beside the job}" "${count[pass]}" \
  "${count[wrong]}" "${count[deaf]}" "${count[hung]}" "${count[died]}" "${count[setup]}" "${count[leftover]}" "$exact" "$errors"
echo "${count[pass]} passed, $((trials - count[pass])) failed"
[ "${count[pass]}" -eq "$trials" ]
