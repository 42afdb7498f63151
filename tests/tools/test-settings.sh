#!/usr/bin/env bash
# test-settings.sh -- a bad setting, an unusable storage directory or a program that never
# calls dred_init fails the whole job fast, saying which.
#
# Each case runs a tiny dred job (2 workers, tests/tools/stat-app.c) through dredrun and
# checks that it exits non-zero within LIMIT seconds and that its output names the setting
# or the directory.  Before the fix DRED_POLICY=bogus made dred-master exit before MPI_Init
# and every worker hung in dred_init; DRED_HEARTBEAT_MS=20000 was accepted and every
# worker then declared the master lost; a 0777 storage directory was used silently.  The
# DRED_REPLICAS=0 opt-out must still run.  Every job is started in the background, waited
# for by pid with a deadline, and killed by pid (its process group) if it overstays.
# Usage: BUILD=build bash tests/tools/test-settings.sh
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="$build/bin"
LIMIT="${LIMIT:-45}"   # generous: MPI start-up on a loaded 2-core machine takes seconds

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok    $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL  $1"; [ $# -gt 1 ] && printf '        %s\n' "$2"; }

tmp="$(mktemp -d /tmp/dred-settings-test.XXXXXX)"
jobpid=""; mpid=""
cleanup() {
  [ -z "$mpid" ] || kill -KILL "$mpid" 2>/dev/null
  if [ -n "$jobpid" ] && kill -0 "$jobpid" 2>/dev/null; then
    kill -TERM -- "-$jobpid" 2>/dev/null; sleep 1; kill -KILL -- "-$jobpid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

for f in "$bin/dredrun" "$bin/dred-master" "$build/lib/libdred.a"; do
  if [ ! -e "$f" ]; then echo "test-settings: $f missing: build first" >&2; exit 1; fi
done
app="$tmp/stat-app"
if ! mpicc -std=gnu11 -O2 -I"$root/include" -o "$app" "$root/tests/tools/stat-app.c" \
     "$build/lib/libdred.a" -luv -lsqlite3 -lm -pthread; then
  echo "test-settings: cannot build stat-app" >&2; exit 1
fi
export DRED_MASTER="$bin/dred-master"
mkdir -m 700 "$tmp/st"

# run NAME: the job with the environment/flags given after NAME; sets rc, secs, out.
launch=("$bin/dredrun" -n 2)
run() {
  local name="$1" t0; shift
  t0=$(date +%s)
  # setsid: the job gets its own process group, so a stuck one is killed whole, by pid.
  setsid env "$@" "${launch[@]}" "$app" -c 1000 -r 1 -k 1 >"$tmp/$name.log" 2>&1 &
  jobpid=$!
  local waited=0 # tenths of a second
  while kill -0 "$jobpid" 2>/dev/null && [ "$waited" -lt $((LIMIT * 10)) ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 "$jobpid" 2>/dev/null; then
    kill -TERM -- "-$jobpid" 2>/dev/null; sleep 1; kill -KILL -- "-$jobpid" 2>/dev/null
    wait "$jobpid" 2>/dev/null; rc=124
  else
    wait "$jobpid"; rc=$?
  fi
  jobpid=""
  secs=$(( $(date +%s) - t0 ))
  out="$(cat "$tmp/$name.log")"
}

# expect_fail NAME PATTERN ENV...: non-zero exit within LIMIT s, output matches PATTERN
expect_fail() {
  local name="$1" pat="$2"; shift 2
  run "$name" "$@"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && printf '%s\n' "$out" | grep -q -- "$pat"; then
    ok "$name: exit $rc in ${secs} s, says /$pat/"
  else
    bad "$name: exit non-zero within ${LIMIT} s saying /$pat/" "rc=$rc after ${secs} s: $(printf '%s' "$out" | grep -v UCX | head -4)"
  fi
}

echo "test-settings: bad settings end the job at once, naming the setting"
expect_fail "DRED_POLICY=bogus" "DRED_POLICY.*bogus" DRED_STORAGE_DIR="$tmp/st" DRED_POLICY=bogus
expect_fail "DRED_HEARTBEAT_MS=20000" "DRED_HEARTBEAT_MS" DRED_STORAGE_DIR="$tmp/st" DRED_HEARTBEAT_MS=20000
expect_fail "heartbeat vs DRED_MASTER_TIMEOUT_MS" "DRED_MASTER_TIMEOUT_MS" \
  DRED_STORAGE_DIR="$tmp/st" DRED_HEARTBEAT_MS=2000 DRED_FAIL_TIMEOUT_MS=5000 DRED_MASTER_TIMEOUT_MS=3000
long="$tmp/$(head -c 450 /dev/zero | tr '\0' 'x')"
expect_fail "over-long DRED_STORAGE_DIR" "DRED_STORAGE_DIR.*longer" DRED_STORAGE_DIR="$long"

echo "test-settings: an unsafe storage directory fails dred_init with DRED_ERR_STORAGE"
mkdir -m 700 "$tmp/open" && chmod 777 "$tmp/open"
expect_fail "storage directory of mode 0777" "$tmp/open: mode 0777" DRED_STORAGE_DIR="$tmp/open"
ln -s "$tmp/st" "$tmp/link"
expect_fail "storage directory that is a symbolic link" "$tmp/link: is a symbolic link" DRED_STORAGE_DIR="$tmp/link"
run "DRED_REPLICAS=0 opt-out" DRED_STORAGE_DIR="$tmp/open" DRED_REPLICAS=0
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "stat-app: ok"; then
  ok "DRED_REPLICAS=0 runs without a store (exit 0 in ${secs} s)"
else
  bad "DRED_REPLICAS=0 runs without a store" "rc=$rc: $(printf '%s' "$out" | grep -v UCX | tail -3)"
fi

echo "test-settings: a good job leaves a private, per-job directory, stores removed"
run "good job" DRED_STORAGE_DIR="$tmp/st"
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "stat-app: ok"; then ok "good job runs"; else
  bad "good job runs" "rc=$rc: $(printf '%s' "$out" | grep -v UCX | tail -3)"; fi
n="$(find "$tmp/st" -mindepth 1 -maxdepth 1 -name 'job-*' -type d -perm 700 | wc -l)"
if [ "$n" -eq 1 ] && [ -z "$(find "$tmp/st" -name 'dred-replica-*')" ]; then
  ok "one job directory, mode 0700, no replica store left"
else
  bad "one job directory, mode 0700, no replica store left" "$(ls -lR "$tmp/st" | head -8)"
fi

echo "test-settings: TMPDIR holds the job's control sockets; one too long for them falls back to /tmp"
mkdir -p "$tmp/td"
run "TMPDIR short" DRED_STORAGE_DIR="$tmp/st" TMPDIR="$tmp/td"
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "stat-app: ok" && [ -z "$(ls -A "$tmp/td")" ]; then
  ok "TMPDIR=$tmp/td: the job runs, its control directory is gone afterwards"
else
  bad "TMPDIR short: the job runs and leaves nothing" "rc=$rc, left: $(ls -A "$tmp/td"): $(printf '%s' "$out" | grep -v UCX | tail -2)"
fi
longtd="$tmp/td/$(printf 'd%.0s' $(seq 1 90))"
mkdir -p "$longtd"
run "TMPDIR long" DRED_STORAGE_DIR="$tmp/st" TMPDIR="$longtd"
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "stat-app: ok" &&
   printf '%s\n' "$out" | grep -q "TMPDIR .* too long .* /tmp" && [ -z "$(ls -A "$longtd")" ]; then
  ok "TMPDIR of ${#longtd} characters: a warning, control sockets in /tmp, the job runs"
else
  bad "TMPDIR too long for a socket path: warning and /tmp" "rc=$rc: $(printf '%s' "$out" | grep -v UCX | tail -3)"
fi

echo "test-settings: a program that never calls dred_init ends the job, saying why (DRED_START_TIMEOUT_S)"
# A plain MPI program under dredrun: its MPI_COMM_WORLD holds dred-master, which waits in
# its start-up collectives for a dred_init that never comes.  Before master/startwatch.c
# the job hung until killed.
cat >"$tmp/plain.c" <<'PLAIN'
#include <mpi.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
PLAIN
if mpicc -o "$tmp/plain" "$tmp/plain.c"; then
  dred_app="$app"; app="$tmp/plain"
  expect_fail "plain MPI program, DRED_START_TIMEOUT_S=3" \
    "start-up did not finish within 3 s (DRED_START_TIMEOUT_S), waiting for every application process to call dred_init" \
    DRED_STORAGE_DIR="$tmp/st" DRED_START_TIMEOUT_S=3
  if [ "$rc" -ne 0 ] && [ "$secs" -le 20 ]; then ok "  ... and it ended ${secs} s after launch"; else
    bad "plain MPI program: ended within 20 s of launch" "rc=$rc after ${secs} s"; fi
  app="$dred_app"
else
  bad "plain MPI program: builds" "mpicc failed"
fi
# A program that initialises MPI itself without MPI_THREAD_MULTIPLE: its dred_init refuses
# in the start-up handshake, so the job ends at once rather than after
# DRED_START_TIMEOUT_S (the default 300 s here: before, the master waited it out).
cat >"$tmp/single.c" <<'SINGLE'
#include <mpi.h>
#include <dred.h>
int main(int argc, char **argv) {
  int rc;
  MPI_Init(&argc, &argv);
  rc = dred_init(&argc, &argv);
  if (rc == DRED_OK) dred_finalize();
  MPI_Finalize();
  return rc == DRED_OK ? 0 : 1;
}
SINGLE
if mpicc -std=gnu11 -I"$root/include" -o "$tmp/single" "$tmp/single.c" "$build/lib/libdred.a" \
     -luv -lsqlite3 -lm -pthread; then
  dred_app="$app"; app="$tmp/single"
  expect_fail "MPI_Init without MPI_THREAD_MULTIPLE, then dred_init" \
    "initialised without MPI_THREAD_MULTIPLE" DRED_STORAGE_DIR="$tmp/st"
  if [ "$rc" -ne 0 ] && [ "$secs" -le 20 ]; then ok "  ... and it ended ${secs} s after launch"; else
    bad "MPI_Init without MPI_THREAD_MULTIPLE: ended within 20 s of launch" "rc=$rc after ${secs} s"; fi
  app="$dred_app"
else
  bad "a program calling MPI_Init then dred_init: builds" "mpicc failed"
fi
# A program that does not use MPI at all: the master waited inside MPI_Init for ever, also
# after the program had ended.
dred_app="$app"; app=/bin/true
expect_fail "a program without MPI (true), DRED_START_TIMEOUT_S=3" \
  "start-up did not finish within 3 s (DRED_START_TIMEOUT_S), inside MPI_Init" \
  DRED_STORAGE_DIR="$tmp/st" DRED_START_TIMEOUT_S=3
app="$dred_app"
run "good job, DRED_START_TIMEOUT_S=60" DRED_STORAGE_DIR="$tmp/st" DRED_START_TIMEOUT_S=60
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "stat-app: ok"; then
  ok "a job that starts in time is not touched by the watch"
else
  bad "good job with DRED_START_TIMEOUT_S=60 runs" "rc=$rc: $(printf '%s' "$out" | grep -v UCX | tail -3)"
fi

echo "test-settings: the same with dred-master beside the job (dredrun --external-master)"
launch=("$bin/dredrun" --external-master -n 2)
expect_fail "external: DRED_POLICY=bogus" "DRED_POLICY.*bogus" DRED_STORAGE_DIR="$tmp/st" DRED_POLICY=bogus
expect_fail "external: storage directory of mode 0777" "$tmp/open: mode 0777" DRED_STORAGE_DIR="$tmp/open"
run "external: good job" DRED_STORAGE_DIR="$tmp/st"
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "stat-app: ok"; then ok "external: good job runs"; else
  bad "external: good job runs" "rc=$rc: $(printf '%s' "$out" | grep -v UCX | tail -3)"; fi
# A plain mpiexec line whose master is not there, or whose token is not the master's.
launch=(mpiexec -n 2)
expect_fail "DRED_MASTER_ADDR naming no master" "no dred-master's socket" \
  DRED_STORAGE_DIR="$tmp/st" DRED_MASTER_ADDR="unix:$tmp/nobody/0.sock" DRED_JOB_TOKEN=00112233445566778899aabbccddeeff
expect_fail "DRED_JOB_TOKEN malformed" "DRED_JOB_TOKEN" \
  DRED_STORAGE_DIR="$tmp/st" DRED_MASTER_ADDR="unix:$tmp/nobody/0.sock" DRED_JOB_TOKEN=xyz
"$bin/dred-master" --workers 2 --addr-file "$tmp/addr" --start-timeout-s 5 >"$tmp/master.log" 2>&1 &
mpid=$!
for _ in $(seq 1 100); do [ -f "$tmp/addr" ] && break; sleep 0.1; done
maddr="$(sed -n 's/^DRED_MASTER_ADDR=//p' "$tmp/addr" 2>/dev/null)"
expect_fail "a token that is not the master's" "closed its link" \
  DRED_STORAGE_DIR="$tmp/st" DRED_MASTER_ADDR="$maddr" DRED_JOB_TOKEN=00112233445566778899aabbccddeeff
for _ in $(seq 1 100); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$mpid" 2>/dev/null; then
  kill -KILL "$mpid"; bad "the master, joined by nobody, gives up after --start-timeout-s 5" "still running"
elif wait "$mpid"; then
  bad "the master, joined by nobody, gives up after --start-timeout-s 5" "exit 0"
elif grep -q "refused" "$tmp/master.log" && grep -q "0 of 2 workers joined" "$tmp/master.log"; then
  ok "the master refused the foreign links and gave up after --start-timeout-s 5"
else
  bad "the master refused the foreign links and gave up after --start-timeout-s 5" "$(cat "$tmp/master.log")"
fi

echo "test-settings: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
