#!/usr/bin/env bash
# test-launch.sh -- a process lost during start-up ends the job at once, saying who and
# when; and a job that ends through MPI_Abort leaves no control directory behind.
#
# Part 1, a death during start-up.  A job's start-up is collective (common/mpi/boot.c):
# a process that dies before its dred_init finished leaves every other one waiting in
# collectives that never end.  Were dred-launch to linger there as after a death once the
# job is up (which keeps the survivors alive), the job would wait the whole
# DRED_START_TIMEOUT_S (300 s) and dred-master would then blame the phase it was waiting
# in ("shared-memory pools").  dred-launch knows whether its program's start-up was over
# (the program says "up" on the pipe DRED_LAUNCH_FD names: tools/dred-launch.c) and, if
# not, dies at once of the same signal, which makes Hydra end the job, with a line naming
# the program, its pid and that it died during start-up.  Each trial runs `dredrun -n 3 dred-demo`
# with DRED_TEST_START_PAUSE_MS=3000 (every worker's dred_init then lasts 3 s or more: a
# start-up takes under a second here, too short for a test's pid lookups and sleeps to
# land in it surely), stops one process as soon as it finds it -- a stopped process holds
# every start-up collective open -- SIGTERMs another, by pid, 0.6-2 s after the launch,
# continues the stopped one, and expects the job to end within LIMIT (30) s, non-zero,
# with that line and no "pools".
# The victim is a worker, or dred-master itself (then a worker is the stopped one).
#
# Part 2, no control directory left.  The job's control sockets live in a directory
# <TMPDIR>/dred-ctl-<uid>-<id> (boot.c); processes remove it as they leave, but MPI_Abort
# kills them all first.  Each job here has a TMPDIR of its own, so what this test's jobs
# leave is told apart from what other jobs on the machine make; it must be empty after
# every trial of part 1 and after two MPI_Abort paths of dred-master: a setting it refuses
# (DRED_POLICY=bogus: the job is refused after the start-up exchange) and its start-up
# watch (DRED_START_TIMEOUT_S=3 with one worker stopped during start-up).  dred-master
# removes the directory before MPI_Abort, and dredrun removes what the processes it
# started on its node named to it (DRED_RUN_DIR) once mpiexec has ended.
#
# Part 3, a program that exits with a non-zero status during start-up, or that cannot be
# run at all (127): the job ends at once too, saying which and why.
#
# Every job is started in its own session, waited for with a deadline, and every process
# it started is SIGKILLed by pid at the end (the tree below it and a marker variable in
# its environment: tests/faults/jobprocs.sh).  Usage: BUILD=build bash tests/tools/test-launch.sh
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="$build/bin"
LIMIT="${LIMIT:-30}"
# shellcheck source=../faults/jobprocs.sh
. "$root/tests/faults/jobprocs.sh"

for f in "$bin/dredrun" "$bin/dred-master" "$bin/dred-launch" "$bin/dred-demo"; do
  if [ ! -x "$f" ]; then echo "test-launch: $f missing: build first" >&2; exit 1; fi
done

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok    $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL  $1"; [ $# -gt 1 ] && printf '        %s\n' "$2"; }

tmp="$(mktemp -d /tmp/dred-launch-test.XXXXXX)"
mkdir -m 700 "$tmp/st"
jobpid=""; marker=""
kill_job() { # every process this job started, by pid
  local p
  [ -n "$jobpid" ] && for p in $(tree_pids "$jobpid") "$jobpid"; do kill -KILL "$p" 2>/dev/null; done
  [ -n "$marker" ] && for p in $(marked_pids "DRED_LAUNCH_TEST_ID=$marker"); do kill -KILL "$p" 2>/dev/null; done
  [ -n "$jobpid" ] && wait "$jobpid" 2>/dev/null
  jobpid=""
}
cleanup() { kill_job; rm -rf "$tmp"; }
trap cleanup EXIT

now_ms() { date +%s%3N; }

# start NAME ENV...: `dredrun -n 3 PROG` in its own session and TMPDIR ($td); PROG is
# $prog (dred-demo unless a part says otherwise).
n=0
prog="$bin/dred-demo"
start() {
  local name="$1"; shift
  n=$((n + 1)); marker="$$-$n"; td="$tmp/td.$n"; log="$tmp/$name.log"
  mkdir -p "$td"
  t0=$(now_ms)
  setsid env DRED_LAUNCH_TEST_ID="$marker" TMPDIR="$td" DRED_STORAGE_DIR="$tmp/st" "$@" \
    "$bin/dredrun" -n 3 "$prog" >"$log" 2>&1 </dev/null &
  jobpid=$!
}

# pid_of COMM [NOT]: a process of the job whose name is COMM (not NOT), waiting up to 20 s
pid_of() {
  local p
  for _ in $(seq 1 400); do
    for p in $(tree_pids "$jobpid"); do
      [ "$p" != "${2:-}" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] && { echo "$p"; return 0; }
    done
    kill -0 "$jobpid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# finish: wait for the job, at most LIMIT s after its launch; sets rc, secs, out
finish() {
  while kill -0 "$jobpid" 2>/dev/null && [ $(( $(now_ms) - t0 )) -lt $((LIMIT * 1000)) ]; do sleep 0.1; done
  if kill -0 "$jobpid" 2>/dev/null; then
    rc=124
    # what was still running, for the failure's report
    for p in "$jobpid" $(tree_pids "$jobpid"); do
      echo "# still running: $(ps -o pid=,stat=,args= -p "$p" 2>/dev/null | cut -c1-120)" >>"$log"
    done
    kill_job
  else wait "$jobpid"; rc=$?; jobpid=""; fi
  secs=$(awk -v a="$t0" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
  kill_job # anything that outlived mpiexec
  out="$(grep -v UCX "$log")"
}

# nothing_left WHAT: the job's TMPDIR holds no control directory (nor dredrun's own)
nothing_left() {
  local left
  left="$(cd "$td" && ls -A)"
  if [ -z "$left" ]; then ok "$1: no control directory left"; else
    bad "$1: no control directory left" "left in TMPDIR: $left $(cd "$td" && ls -A dred-ctl-* 2>/dev/null | tr '\n' ' ')"; fi
}

echo "test-launch: a process killed during start-up ends the job at once, named (limit ${LIMIT} s)"
# victim stopped delay: the victim gets SIGTERM `delay` s after the launch while `stopped`
# holds start-up open
for trial in "worker dred-master 0.6" "worker dred-master 1.2" "worker dred-master 2.0" "master dred-demo 1.0"; do
  read -r what hold delay <<<"$trial"
  start "startdeath-$what-$delay" DRED_TEST_START_PAUSE_MS=3000
  if ! held=$(pid_of "$hold"); then
    finish; bad "$what killed at $delay s: the job started" "no $hold process: $(printf '%s' "$out" | tail -3)"; continue
  fi
  kill -STOP "$held"
  if [ "$what" = worker ]; then victim=$(pid_of dred-demo); else victim=$(pid_of dred-master); fi
  wait_ms=$(awk -v d="$delay" -v a="$t0" -v b="$(now_ms)" 'BEGIN { w = d * 1000 - (b - a); print (w > 0 ? int(w) : 0) }')
  sleep "$(awk -v w="$wait_ms" 'BEGIN { printf "%.3f", w / 1000 }')"
  at=$(awk -v a="$t0" -v b="$(now_ms)" 'BEGIN { printf "%.2f", (b - a) / 1000 }')
  [ -n "$victim" ] && kill -TERM "$victim"
  sleep 0.2
  kill -CONT "$held" 2>/dev/null
  finish
  name="$what (pid ${victim:-?}) SIGTERMed ${at} s after launch"
  if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
     printf '%s\n' "$out" | grep -q "(pid $victim) was killed by signal 15 (Terminated) during start-up" &&
     ! printf '%s\n' "$out" | grep -q "shared-memory pools"; then
    ok "$name: the job ended in $secs s (exit $rc), naming it and start-up"
  else
    bad "$name: the job ends within ${LIMIT} s, naming it and start-up" \
      "rc=$rc after $secs s: $(printf '%s' "$out" | grep -E 'dred|error|still running' | head -9)"
  fi
  nothing_left "$name"
done

echo "test-launch: jobs that end through dred-master's MPI_Abort leave no control directory"
start "refused" DRED_POLICY=bogus
finish
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && printf '%s\n' "$out" | grep -q "DRED_POLICY"; then
  ok "DRED_POLICY=bogus: refused (exit $rc in $secs s)"
else
  bad "DRED_POLICY=bogus: refused" "rc=$rc after $secs s: $(printf '%s' "$out" | head -3)"
fi
nothing_left "DRED_POLICY=bogus"

# A worker stopped once the control directory exists (the start-up collectives have begun)
# and before its pool is set up (DRED_TEST_START_PAUSE_MS holds every worker there 2 s,
# far longer than this poll; unstopped, start-up would end before the 3 s bound): the
# start-up watch then ends the job while the directory is there.
start "timeout" DRED_START_TIMEOUT_S=3 DRED_TEST_START_PAUSE_MS=2000
held=""
for _ in $(seq 1 1000); do
  ls "$td" 2>/dev/null | grep -q dred-ctl && break
  kill -0 "$jobpid" 2>/dev/null || break
  sleep 0.02
done
seen="$(ls -A "$td" | grep dred-ctl)"
[ -n "$seen" ] && held=$(pid_of dred-demo) && kill -STOP "$held"
finish
if [ -n "$held" ] && [ -n "$seen" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
   printf '%s\n' "$out" | grep -q "start-up did not finish within 3 s"; then
  ok "a worker stopped in start-up, DRED_START_TIMEOUT_S=3: the watch ended the job (exit $rc in $secs s)"
else
  bad "a worker stopped in start-up, DRED_START_TIMEOUT_S=3: the watch ends the job" \
    "rc=$rc after $secs s, control directory seen: '${seen}', stopped pid: '${held}'; output: $(printf '%s' "$out" | tail -5)"
fi
nothing_left "start-up watch's MPI_Abort"

echo "test-launch: a program that fails during start-up, or cannot be run, ends the job at once"
# Every other process waits for it in start-up collectives: without dred-launch's abort the
# job lasted DRED_START_TIMEOUT_S (300 s).  A program that exits 0 before its start-up
# (one that does not use dred) is left to the watch: tests/tools/test-settings.sh.
for trial in "$tmp/no-such-program:127:cannot run" "/bin/false:1:status 1 during start-up"; do
  IFS=: read -r prog want text <<<"$trial"
  start "startfail-$want"
  finish
  if [ "$rc" -eq "$want" ] && [ "${secs%.*}" -lt 10 ] && printf '%s\n' "$out" | grep -q "$text" &&
     printf '%s\n' "$out" | grep -q "during start-up, before its dred_init finished: ending the job"; then
    ok "$prog: the job ended at once (exit $rc in $secs s), saying why"
  else
    bad "$prog: the job ends at once with exit $want, saying why" \
      "rc=$rc after $secs s: $(printf '%s' "$out" | tail -4)"
  fi
  nothing_left "$prog"
done
prog="$bin/dred-demo"

echo "test-launch: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
