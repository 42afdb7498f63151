#!/usr/bin/env bash
# run.sh -- unmodified MPI programs on dred through libdred-mpi.so (`dredrun --mpi`).
#
#   BUILD=build bash tests/interpose/run.sh [PATTERN...]
#
# PATTERN: run only the cases whose name starts with one of the patterns.
# Each case runs `dredrun --mpi [--sim-nodes L] -n P PROG` in a session of its own with
# DRED_MPI_REPORT=1, a fresh DRED_STORAGE_DIR and a deadline; on timeout its session's
# processes are killed by pid (the session id, never a name).  A case passes when the job
# exits 0, the log has no FAIL line and has "ALL PASSED", and -- the calls must really
# have gone through dred -- every one of the P processes printed a report line
# "dred-mpi: <call> dred=N" with N > 0 for each call kind the case lists (a kind listed
# as !<call>: dred=0 on every process, all of them sent to MPI).
# The mix cases run mix_app (tests/interpose/mix_app.c): seeded rounds of reduces,
# allreduces and bcasts, blocking and not, mixed over communicators, types, ops, counts and
# completion calls, each result checked against the operands folded locally in rank order.
# The fault case kills one rank by pid while MPI_Ireduce calls are in flight and checks
# that every survivor finished (a bounded wait: its requests completed, exactly or with an
# error class).  The python cases run py_app.py in the Python interpreter: MPI through
# ctypes from the process's global scope, as a compiled binding calls it, so the preloaded
# library takes the calls.  mpi4py itself is not run: Debian's python3-mpi4py is built
# against Open MPI (dred needs MPICH), and installing it switches the system's
# mpicc/mpiexec to Open MPI.
set -u
set +m

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$root/$BUILD" ;; esac
bin="$BUILD/tests/interpose"
dredrun="$BUILD/bin/dredrun"
logdir="$BUILD/test-logs/interpose"
mkdir -p "$logdir"
scale=${DRED_TEST_TIMEOUT_SCALE:-1}

# name  prog[,ARG...]  P  timeout  layout(- for one node)  calls-that-must-show-dred  env...
# The mix cases run mix_app, the randomized differential test, with a seed of their own
# (replay a failure: the FAIL line names seed and round, e.g. `dredrun --mpi -n 3
# build/tests/interpose/mix_app -I -s 11 -R 4 -r 1 -v`).  Where every call goes to dred
# it passes -I (MPI_IN_PLACE at any reduce root: MPICH 4.0.2's own MPI_Reduce crashes on
# it); mix-default-* keep the default thresholds, so one run sends some calls to dred
# (32 KiB and up on a one-node communicator) and the rest to MPI: with their seeds every
# call kind reaches dred on every process (another seed may draw none of a kind that big).
MIXALL="MPI_Reduce,MPI_Ireduce,MPI_Allreduce,MPI_Iallreduce,MPI_Bcast,MPI_Ibcast"
MIXDRED="DRED_MPI_MIN_BYTES=0 DRED_MPI_COLL_MIN_BYTES=0"
CALL_C="MPI_Reduce_c,MPI_Ireduce_c,MPI_Allreduce_c,MPI_Iallreduce_c,MPI_Bcast_c,MPI_Ibcast_c"
CASES=(
  "reduce-p1     reduce_app 1  90 -        MPI_Reduce,MPI_Ireduce DRED_MPI_MIN_BYTES=0"
  "reduce-p2     reduce_app 2  90 -        MPI_Reduce,MPI_Ireduce DRED_MPI_MIN_BYTES=0"
  "reduce-p3     reduce_app 3 120 -        MPI_Reduce,MPI_Ireduce DRED_MPI_MIN_BYTES=0"
  "reduce-p5     reduce_app 5 150 -        MPI_Reduce,MPI_Ireduce DRED_MPI_MIN_BYTES=0"
  "reduce-p4@ab  reduce_app 4 150 a:2,b:2  MPI_Reduce,MPI_Ireduce DRED_MPI_MIN_BYTES=0"
  "reduce-p5@abc reduce_app 5 150 a:2,b:2,c:1 MPI_Reduce,MPI_Ireduce DRED_MPI_MIN_BYTES=0"
  "reduce-default-p2 reduce_app 2 90 -     MPI_Reduce"
  "reduce-default-p4@ab reduce_app 4 150 a:2,b:2 !MPI_Reduce,!MPI_Ireduce"
  "coll-p1       coll_app   1  90 -        MPI_Allreduce,MPI_Iallreduce,MPI_Bcast,MPI_Ibcast,MPI_Allreduce_c,MPI_Iallreduce_c,MPI_Bcast_c,MPI_Ibcast_c,MPI_Reduce_c,MPI_Ireduce_c DRED_MPI_COLL_MIN_BYTES=0 DRED_MPI_MIN_BYTES=0"
  "coll-p2       coll_app   2  90 -        MPI_Allreduce,MPI_Iallreduce,MPI_Bcast,MPI_Ibcast,MPI_Allreduce_c,MPI_Iallreduce_c,MPI_Bcast_c,MPI_Ibcast_c,MPI_Reduce_c,MPI_Ireduce_c DRED_MPI_COLL_MIN_BYTES=0 DRED_MPI_MIN_BYTES=0"
  "coll-p3       coll_app   3 120 -        MPI_Allreduce,MPI_Iallreduce,MPI_Bcast,MPI_Ibcast,MPI_Allreduce_c,MPI_Iallreduce_c,MPI_Bcast_c,MPI_Ibcast_c,MPI_Reduce_c,MPI_Ireduce_c DRED_MPI_COLL_MIN_BYTES=0 DRED_MPI_MIN_BYTES=0"
  "coll-p5@abc   coll_app   5 150 a:2,b:2,c:1 MPI_Allreduce,MPI_Iallreduce,MPI_Bcast,MPI_Ibcast,MPI_Allreduce_c,MPI_Iallreduce_c,MPI_Bcast_c,MPI_Ibcast_c,MPI_Reduce_c,MPI_Ireduce_c DRED_MPI_COLL_MIN_BYTES=0 DRED_MPI_MIN_BYTES=0"
  "coll-big-p2   coll_app,--big 2 120 - !MPI_Bcast DRED_MPI_COLL_MIN_BYTES=8"
  "coll-default-p3 coll_app 3 90 -       MPI_Allreduce,MPI_Bcast"
  "coll-default-p4@ab coll_app 4 150 a:2,b:2 !MPI_Allreduce,!MPI_Bcast,!MPI_Iallreduce,!MPI_Ibcast,!MPI_Allreduce_c,!MPI_Bcast_c"
  "bottom-p3     bottom_app 3  90 -        MPI_Bcast,MPI_Ibcast,MPI_Reduce,MPI_Iallreduce,!MPI_Allreduce DRED_MPI_MIN_BYTES=0 DRED_MPI_COLL_MIN_BYTES=0"
  "bottom-p4@ab  bottom_app 4 120 a:2,b:2  MPI_Bcast,MPI_Ibcast,MPI_Reduce,MPI_Iallreduce,!MPI_Allreduce DRED_MPI_MIN_BYTES=0 DRED_MPI_COLL_MIN_BYTES=0"
  "fortran-p2    reduce_f   2  60 -        MPI_Reduce,MPI_Ireduce DRED_MPI_MIN_BYTES=0"
  "fortran-p3@ab reduce_f   3  90 a:2,b:1  MPI_Reduce,MPI_Ireduce DRED_MPI_MIN_BYTES=0"
  "python-p2     py_app     2  90 -        $MIXALL,$CALL_C $MIXDRED"
  "python-p3@ab  py_app     3 150 a:2,b:1  $MIXALL,$CALL_C $MIXDRED"
  "mix-p1        mix_app,-I,-s,10,-r,40 1  90 - $MIXALL $MIXDRED"
  "mix-p3        mix_app,-I,-s,11,-r,60 3 120 - $MIXALL $MIXDRED"
  "mix-p5        mix_app,-I,-s,12,-r,40 5 150 - $MIXALL $MIXDRED"
  "mix-p5@ab     mix_app,-I,-s,13,-r,40 5 150 a:2,b:3 $MIXALL $MIXDRED"
  "mix-p6@abc    mix_app,-I,-s,14,-r,30 6 150 a:2,b:2,c:2 $MIXALL $MIXDRED"
  "mix-default-p4 mix_app,-s,15,-r,40 4 150 - $MIXALL"
  "mix-default-p5@ab mix_app,-s,16,-r,30 5 150 a:2,b:3 $MIXALL"
)

pass=0; fail=0; failed=()
session_pids() { ps -eo pid=,sid= | awk -v s="$1" '$2 == s { print $1 }'; }
kill_session() { # TERM, up to 1 s to end, then KILL; no wait when nothing is left
  local p pids i
  pids=$(session_pids "$1")
  [ -n "$pids" ] || return 0
  for p in $pids; do kill -TERM "$p" 2>/dev/null; done
  for i in 1 2 3 4 5 6 7 8 9 10; do
    [ -n "$(session_pids "$1")" ] || return 0
    sleep 0.1
  done
  for p in $(session_pids "$1"); do kill -KILL "$p" 2>/dev/null; done
}
# run_job LOG LIMIT LAYOUT P ENVS PROG ARGS...: sets rc, timed_out, leader
run_job() {
  local log=$1 limit=$2 layout=$3 np=$4 envs=$5 deadline lay=()
  shift 5
  [ "$layout" = - ] || lay=(--sim-nodes "$layout")
  # shellcheck disable=SC2086  # envs: VAR=VALUE words
  env $envs setsid "$dredrun" --mpi ${lay[@]+"${lay[@]}"} -n "$np" "$@" </dev/null >>"$log" 2>&1 &
  leader=$!
  timed_out=0
  deadline=$(( $(date +%s) + limit ))
  while kill -0 "$leader" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      timed_out=1; echo "# TIMEOUT after ${limit}s" >>"$log"; kill_session "$leader"; break
    fi
    sleep 0.2
  done
  wait "$leader" 2>/dev/null; rc=$?
  kill_session "$leader" # strays
}
verdict() {
  local name=$1 why=$2 log=$3
  if [ -z "$why" ]; then echo "PASS $name"; pass=$((pass + 1))
  else
    echo "FAIL $name: $why (log: $log)"; tail -n 15 "$log" | sed 's/^/    | /'
    fail=$((fail + 1)); failed+=("$name")
  fi
}
want() {
  local pat
  [ $# -le 1 ] && return 0
  for pat in "${@:2}"; do [[ "$1" == "$pat"* ]] && return 0; done
  return 1
}

for line in "${CASES[@]}"; do
  read -r name prog np limit layout calls envs <<<"$line"
  read -ra args <<<"${prog//,/ }" # prog[,ARG...]
  prog=${args[0]}
  want "$name" "$@" || continue
  limit=$(awk -v a="$limit" -v b="$scale" 'BEGIN { printf "%d", a * b }')
  log="$logdir/$name.log"
  st=$(mktemp -d "${TMPDIR:-/tmp}/dred-interpose-$name.XXXXXX")
  echo "# $name: $envs dredrun --mpi ($layout) -n $np ${args[*]}" >"$log"
  run_job "$log" "$limit" "$layout" "$np" "DRED_MPI_REPORT=1 DRED_STORAGE_DIR=$st $envs" "$bin/$prog" "${args[@]:1}"
  echo "# rc $rc timed_out $timed_out" >>"$log"
  rm -rf "$st"
  why=""
  if grep -q "^# rc .* timed_out 1" "$log"; then why="timed out"
  elif ! grep -q "^# rc 0 " "$log"; then why="exit status $(sed -n 's/^# rc \([0-9]*\) .*/\1/p' "$log")"
  elif grep -qE '(^|[^A-Z])FAIL ' "$log"; then why="FAIL lines"
  elif ! grep -q 'ALL PASSED' "$log"; then why="no ALL PASSED"
  elif [ "$calls" != - ]; then
    for c in ${calls//,/ }; do
      # The processes' stdout and stderr meet in one stream, so a report line may follow
      # another process's unfinished line: count the reports, not the lines they start.
      if [[ "$c" == !* ]]; then
        n=$(grep -oE "dred-mpi: ${c#!} dred=0 " "$log" | wc -l)
        [ "$n" = "$np" ] || { why="$n of $np processes report '${c#!} dred=0'"; break; }
      else
        n=$(grep -oE "dred-mpi: $c dred=[1-9][0-9]* " "$log" | wc -l)
        [ "$n" = "$np" ] || { why="$n of $np processes report '$c dred=N>0'"; break; }
      fi
    done
  fi
  verdict "$name" "$why" "$log"
done

# The fault trial: rank P-1 SIGKILLed by pid once it is in its 3rd round of MPI_Ireduce.
if want fault-p3 "$@"; then
  name=fault-p3; np=3; log="$logdir/$name.log"
  limit=$(awk -v b="$scale" 'BEGIN { printf "%d", 120 * b }')
  st=$(mktemp -d "${TMPDIR:-/tmp}/dred-interpose-fault.XXXXXX")
  dir="$st/marks"; mkdir -p "$dir"
  echo "# $name: dredrun --mpi -n $np fault_app, rank $((np - 1)) killed in round 3" >"$log"
  DRED_MPI_REPORT=1 DRED_STORAGE_DIR="$st" DRED_HEARTBEAT_MS=200 DRED_FAIL_TIMEOUT_MS=2000 \
    setsid "$dredrun" --mpi -n "$np" "$bin/fault_app" "$dir" 12 </dev/null >>"$log" 2>&1 &
  leader=$!; victim=$((np - 1)); killed=""
  deadline=$(( $(date +%s) + limit ))
  while kill -0 "$leader" 2>/dev/null; do
    if [ -z "$killed" ] && [ -f "$dir/round.$victim" ] && [ "$(cat "$dir/round.$victim")" -ge 3 ]; then
      killed=$(cat "$dir/pid.$victim"); kill -KILL "$killed" && echo "# killed rank $victim (pid $killed)" >>"$log"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "# TIMEOUT" >>"$log"; kill_session "$leader"; break; fi
    sleep 0.1
  done
  wait "$leader" 2>/dev/null
  kill_session "$leader"
  why=""
  if grep -q "^# TIMEOUT" "$log"; then why="timed out (a survivor hung)"
  elif [ -z "$killed" ]; then why="the victim never reached round 3"
  elif grep -q '^FAIL' "$log"; then why="FAIL lines (a wrong sum)"
  else
    for r in $(seq 0 $((np - 2))); do
      grep -q "^SURVIVOR rank $r: " "$log" || { why="rank $r did not finish its rounds"; break; }
    done
  fi
  rm -rf "$st"
  verdict "$name" "$why" "$log"
fi

echo "$pass passed, $fail failed${failed[*]:+ (${failed[*]})}"
[ "$fail" -eq 0 ]
