#!/usr/bin/env bash
# pause.sh -- a whole job stalled and resumed: nobody died, so nobody may be called dead.
#
#   BUILD=build bash tests/faults/pause.sh [--pause-s S] [--trials N]
#        [--one | --master | --term] [--external] [--sim-nodes a:2,b:3]
#
# What it checks.  A paused VM, a job suspended with SIGSTOP and continued, a machine that
# kept every process of the job off the CPU for a while: each process sees its peers
# silent for longer than every failure timeout, but only because it was stalled itself.
# dred-master's detector and each worker's master watch must tell that from a death (a
# timer that fires late means "we were stalled": lib/engine/runtime.c on_watch,
# master/detector.c): no worker declared failed, no master declared lost, every reduction
# exact, and the job ends as it would have without the pause.
#
# How.  One job per trial: `dredrun -n 4 fault_app --victim-mode none` (tests/faults/
# fault_app.c), 400 steps of 4 concurrent 1 MiB reductions (3-6 s), short timeouts
# (heartbeat 100 ms, failure 1 s, master 2 s).  Once the application has calibrated
# (DIR/t.txt), the victims are found and a random 0-0.4 s later every process of the job
# (dredrun, mpiexec, its proxies, dred-master, the ranks and their runtime threads) gets
# SIGSTOP, S seconds pass (default 3: longer than both timeouts), then SIGCONT.  The job
# must then exit 0 within a bound, with every rank's "final outcome=OK", every reduction
# "status=0" and, at its root, "check=exact", and no "declared failed" / "master lost" in
# any log; some reduction must have ended after the stop (else the test missed).  The
# processes are found by pid (the tree below the launcher, and a marker variable in their
# environment), every wait is bounded, and whatever is left at the end is SIGKILLed by pid.
#
# --external: dred-master beside the job (dredrun --external-master); --sim-nodes: the
# job on simulated nodes (dredrun --sim-nodes), where links cross nodes over TCP.
#
# --one: the other side of the same rule.  Only one non-root application process is
# stopped (its pid from DIR/pid.<r>), for S seconds while the others run: that is a
# stopped process, and the master must declare it failed ("silent for") -- the survivors'
# reductions end exact or with an explicit error, none wrong, and once continued the
# stopped process must end too (its reductions with an explicit error, dred_finalize
# without hanging): every rank writes its final and exit lines and the job ends in time
# (exit status 0 or 1: dred-master exits 1 after a worker failed).
# --master: the same with dred-master stopped alone: every worker declares it lost
# (DRED_MASTER_TIMEOUT_MS), its reductions end DRED_ERR_MASTER_LOST, everyone ends.
# --term: not a stall but a cancelled job (scancel, Ctrl-C): SIGTERM to the launcher
# mid-job, which mpiexec forwards to every process; the job must end within 30 s.
#
# Every kind: each trial has its own TMPDIR, and at the end nothing may be left there or
# in the storage directory but the master's journal (control sockets, replica stores, the
# status socket: lib/engine/signals.c, common/leave.h, and the survivors' clean-up of a failed
# process's files).
#
# Prints "N passed, N failed"; exit status non-zero if any trial failed.  Each trial's
# files: $BUILD/faults/pause-<kind>-<n>/.
set -u
BUILD=${BUILD:-build}
pause_s=3
trials=2
one=0
master=0
term=0
launch=()
while [ $# -gt 0 ]; do
  case "$1" in
    --pause-s) pause_s=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --one) one=1; shift ;;
    --master) master=1; one=1; shift ;; # the --one checks, the master as the victim
    --term) term=1; shift ;;
    --external) launch+=(--external-master); shift ;;
    --sim-nodes) launch+=(--sim-nodes "$2"); shift 2 ;;
    *) echo "pause.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
DREDRUN="$BUILD/bin/dredrun"
APP="$BUILD/tests/fault_app"
for f in "$DREDRUN" "$APP"; do
  [ -x "$f" ] || { echo "pause.sh: $f is not built (make all $APP)" >&2; exit 2; }
done

# shellcheck source=jobprocs.sh
. "$(dirname "${BASH_SOURCE[0]}")/jobprocs.sh"

pass=0
fail=0
kind=all
[ "$one" = 1 ] && kind=one
[ "$master" = 1 ] && kind=master
[ "$term" = 1 ] && kind=term
case " ${launch[*]+${launch[*]}} " in *" --external-master "*) kind="$kind-ext" ;; esac
case " ${launch[*]+${launch[*]}} " in *" --sim-nodes "*) kind="$kind-nodes" ;; esac
for n in $(seq 1 "$trials"); do
  dir="$BUILD/faults/pause-$kind-$n"
  rm -rf "$dir"
  mkdir -p "$dir/tmp"
  marker="pause-$$-$n"
  env DRED_PAUSE_TRIAL_ID="$marker" DRED_STORAGE_DIR="$dir/store" TMPDIR="$dir/tmp" \
    DRED_HEARTBEAT_MS=100 DRED_FAIL_TIMEOUT_MS=1000 \
    DRED_MASTER_TIMEOUT_MS=2000 \
    "$DREDRUN" ${launch[@]+"${launch[@]}"} -n 4 "$APP" --outdir "$dir" --bytes 1M --concurrent 4 --reductions 400 \
    --calib 3 --victim-mode none >"$dir/dredrun.out" 2>&1 </dev/null &
  sid=$!
  why=""
  # calibration done, bounded
  for _ in $(seq 1 600); do
    [ -s "$dir/t.txt" ] && break
    kill -0 "$sid" 2>/dev/null || break
    sleep 0.1
  done
  if [ ! -s "$dir/t.txt" ]; then
    why="the job did not calibrate within 60 s"
  elif [ "$term" = 1 ]; then
    # a batch system cancelling the job: SIGTERM to the launcher, which mpiexec forwards
    sleep "0.$((RANDOM % 5))"
    t_stop=$(date +%s%N)
    kill -TERM "$sid" 2>/dev/null
    echo "sent SIGTERM to the launcher mid-job" >"$dir/pause.txt"
    for _ in $(seq 1 300); do # bounded: 30 s
      kill -0 "$sid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$sid" 2>/dev/null && why="the job did not end within 30 s of SIGTERM"
    sleep 1 # the processes Hydra signalled may outlive mpiexec by a moment
  else
    if [ "$master" = 1 ]; then
      pids=$(for p in $(tree_pids "$sid"); do
               [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dred-master ] && echo "$p"; done)
      what="dred-master (pid $pids)"
    elif [ "$one" = 1 ]; then
      victim=$((1 + RANDOM % 3)) # app rank; the root is 0
      pids=$(cut -d' ' -f1 "$dir/pid.$victim")
      what="app rank $victim (pid $pids)"
    else
      pids=$(tree_pids "$sid")
      what="$(echo $pids | wc -w) processes"
    fi
    sleep "0.$((RANDOM % 5))" # the victims are found first: that takes time on a busy machine
    t_stop=$(date +%s%N)
    # shellcheck disable=SC2086
    kill -STOP $pids 2>/dev/null
    echo "stopped $what for $pause_s s mid-job" >"$dir/pause.txt"
    sleep "$pause_s"
    # shellcheck disable=SC2086
    kill -CONT $pids 2>/dev/null
    for _ in $(seq 1 900); do # the rest of the job, bounded: 90 s
      kill -0 "$sid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$sid" 2>/dev/null; then
      why="the job did not end within 90 s of SIGCONT"
    else
      wait "$sid"
      rc=$?
      # with a worker declared failed (--one) dred-master exits 1 (dred-master(1))
      if [ "$rc" != 0 ] && ! { [ "$one" = 1 ] && [ "$rc" = 1 ]; }; then why="dredrun exited $rc"; fi
    fi
  fi
  # leftovers, by pid: whatever is still below the launcher or carries the marker
  left=$( (tree_pids "$sid"; marked_pids "DRED_PAUSE_TRIAL_ID=$marker") | sort -u)
  if [ -n "$left" ]; then
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
    why="${why:+$why; }$(echo $left | wc -w) process(es) left behind"
  fi
  wait "$sid" 2>/dev/null
  if [ -z "$why" ] && [ "$term" = 1 ]; then
    wrong=$(cat "$dir"/rank.*.txt 2>/dev/null | grep -c 'check=wrong')
    [ "$wrong" != 0 ] && why="$wrong wrong results"
  elif [ -z "$why" ] && [ "$one" = 1 ]; then
    # job rank = app rank + 1 (dred-master is rank 0 of the MPMD job)
    ends=$(cat "$dir"/rank.*.txt 2>/dev/null | grep -c '^exit')
    wrong=$(cat "$dir"/rank.*.txt 2>/dev/null | grep -c 'check=wrong\|outcome=WRONG')
    early_bad=$(cat "$dir"/rank.*.txt | grep '^red ' |
      awk -v t="$t_stop" '{ ok = 0; late = 0
        for (i = 1; i <= NF; i++) { if ($i == "status=0") ok = 1
          if ($i ~ /^got_ns=/ && substr($i, 8) + 0 > t + 0) late = 1
          if ($i ~ /^start_error=/) late = 1 } # refused at the call: after the resume
        if (!late && !ok) n++ } END { print n + 0 }')
    if [ "$master" = 1 ]; then
      if [ -z "$pids" ]; then why="dred-master's pid not found"
      elif [ "$(cat "$dir"/stderr.* | grep -c 'dred-master silent for')" != 4 ]; then
        why="not every worker declared the stopped master lost"
      elif [ "$(cat "$dir"/rank.*.txt | grep -c '^finalize status=6 ')" != 4 ]; then
        why="not every dred_finalize said MASTER_LOST"
      fi
    elif ! grep -q "worker $((victim + 1)) declared failed: silent for" "$dir/dredrun.out"; then
      why="the stopped process was not declared failed"
    elif [ "$ends" != 4 ]; then why="$ends of 4 ranks reached their exit line";
    elif [ "$wrong" != 0 ]; then why="$wrong wrong results";
    elif [ "$early_bad" != 0 ]; then why="$early_bad reductions done before the stop not OK";
    elif [ "$master" = 0 ] && ! grep '^red ' "$dir/rank.$victim.txt" | grep -qv ' status=0 '; then
      why="the stopped process's later reductions did not end with an error"
    fi
  elif [ -z "$why" ]; then
    finals=$(cat "$dir"/rank.*.txt 2>/dev/null | grep -c '^final outcome=OK ')
    reds=$(cat "$dir"/rank.*.txt 2>/dev/null | grep -c '^red ')
    bad=$(cat "$dir"/rank.*.txt 2>/dev/null | grep '^red ' | grep -vc ' status=0 ')
    wrong=$(cat "$dir"/rank.*.txt 2>/dev/null | grep '^red ' | grep -c 'check=wrong')
    false_det=$(cat "$dir"/stderr.* "$dir/dredrun.out" 2>/dev/null | grep -Ec 'declared failed|master lost|reports worker [0-9]+ failed')
    if [ "$finals" != 4 ]; then why="$finals of 4 ranks ended with outcome=OK";
    elif [ "$reds" -lt $((4 * 4 * 403)) ]; then why="only $reds reductions reported";
    elif [ "$bad" != 0 ] || [ "$wrong" != 0 ]; then why="$bad reductions not OK, $wrong wrong";
    elif [ "$false_det" != 0 ]; then why="$false_det false failure reports";
    fi
  fi
  # every kind: nothing left on disk but the master's journal.  The processes removed their
  # control sockets and replica stores, the survivors those of a process that failed
  # (--one, --master), and a signal that ended them (--term) removed them first.
  if [ -z "$why" ]; then
    files=$(cd "$dir" && ls -d tmp/* store/job-*/dred-replica-* store/job-*/*.sock 2>/dev/null | tr '\n' ' ')
    [ -n "$files" ] && why="left behind: $files"
  fi
  # every kind but --term: some reduction must have ended after the stop, else the test missed
  if [ -z "$why" ] && [ "$term" = 0 ] && ! cat "$dir"/rank.*.txt | grep '^red phase=main' |
       awk -v t="$t_stop" '{ for (i = 1; i <= NF; i++) if ($i ~ /^got_ns=/ && substr($i, 8) + 0 > t + 0) found = 1 }
                           END { exit !found }'; then
    why="the stop came after the last reduction (the test missed; lengthen the job)"
  fi
  [ "$one" = 1 ] || [ "$term" = 1 ] && late=0 || late=$(cat "$dir"/stderr.* "$dir/dredrun.out" 2>/dev/null | grep -Ec 'ran [0-9]+ ms late')
  if [ -z "$why" ]; then
    pass=$((pass + 1))
    echo "   pause $n: ok ($(cat "$dir/pause.txt"); $late late-timer notices)"
  else
    fail=$((fail + 1))
    echo "   pause $n: FAIL: $why (files: $dir)"
    grep -hE 'declared failed|master lost|silent for' "$dir"/stderr.* "$dir/dredrun.out" 2>/dev/null | head -5 | sed 's/^/      /'
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
