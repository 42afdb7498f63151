#!/usr/bin/env bash
# test-beside.sh -- a dred-master started by hand beside the job, and what others can do
# to it: its address file, its TCP port, and a process short of descriptors.
#
#   1. dred-master refuses an --addr-file in a directory others can write to; in a private
#      one it writes the file 0600.
#   2. `dredrun --addr-env FILE CMD` runs CMD with only the file's DRED_MASTER_* and
#      DRED_JOB_TOKEN, and refuses (exit 2, CMD not run) a file with any other line (an
#      LD_PRELOAD= line), a file others may read, one in a directory others may write to.
#   3. The manual flow under attack: dred-master (its descriptors limited to 256) is sent
#      2000 HELLOs with a wrong token -- its log must hold O(log n) "refused" lines, not
#      2000 -- and then held 400 idle TCP connections, more than its cap of waiting links
#      and than its descriptors; a 3-process job started through --addr-env must still
#      start and reduce correctly (stat-app checks every result against MPI_Reduce).
#   4. `ulimit -n 48` on 3 simulated nodes: the job either runs or ends with an error about
#      file descriptors; no worker is ever "declared failed" for it.
# Every process started here is started in the background, waited for by pid with a
# deadline and killed by pid (a job: its process group, made by setsid).
# Usage: BUILD=build bash tests/tools/test-beside.sh
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="$build/bin"
LIMIT="${LIMIT:-90}"

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok    $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL  $1"; [ $# -gt 1 ] && printf '        %s\n' "$2"; }

tmp="$(mktemp -d /tmp/dred-beside-test.XXXXXX)"
pids=()      # single processes (master, flooder)
groups=()    # setsid'd jobs: killed as process groups
cleanup() {
  local p
  for p in ${groups[@]+"${groups[@]}"}; do
    if kill -0 "$p" 2>/dev/null; then kill -TERM -- "-$p" 2>/dev/null; sleep 1; kill -KILL -- "-$p" 2>/dev/null; fi
  done
  for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

for f in "$bin/dredrun" "$bin/dred-master" "$bin/dred-launch" "$build/lib/libdred.a"; do
  if [ ! -e "$f" ]; then echo "test-beside: $f missing: build first" >&2; exit 1; fi
done
app="$tmp/stat-app"
if ! mpicc -std=gnu11 -O2 -I"$root/include" -o "$app" "$root/tests/tools/stat-app.c" \
     "$build/lib/libdred.a" -luv -lsqlite3 -lm -pthread; then
  echo "test-beside: cannot build stat-app" >&2; exit 1
fi
mkdir -m 700 "$tmp/st" "$tmp/me"
export DRED_STORAGE_DIR="$tmp/st"

# wait_gone PID SECS: wait for PID to end, at most SECS; 0 if it ended (its status in $wrc).
wait_gone() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; wrc=$?; return 0; }
    sleep 0.1
  done
  return 1
}
# wait_file F SECS
wait_file() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}
# run_job NAME CMD...: CMD in its own session, bounded by LIMIT; sets rc and out.
run_job() {
  local name="$1" p; shift
  setsid "$@" >"$tmp/$name.log" 2>&1 &
  p=$!; groups+=("$p")
  if wait_gone "$p" "$LIMIT"; then rc=$wrc; else
    kill -TERM -- "-$p" 2>/dev/null; sleep 1; kill -KILL -- "-$p" 2>/dev/null; wait "$p" 2>/dev/null; rc=124
  fi
  out="$(cat "$tmp/$name.log")"
}

echo "test-beside: the address file's directory and mode"
mkdir -m 700 "$tmp/open" && chmod 777 "$tmp/open"
"$bin/dred-master" --workers 1 --addr-file "$tmp/open/addr" --start-timeout-s 5 >"$tmp/open.log" 2>&1 &
p=$!; pids+=("$p")
if wait_gone "$p" 20 && [ "$wrc" -ne 0 ] && [ ! -e "$tmp/open/addr" ] &&
   grep -q -- "--addr-file directory $tmp/open: mode 0777" "$tmp/open.log"; then
  ok "--addr-file in a 0777 directory: refused (exit $wrc), nothing written"
else
  bad "--addr-file in a 0777 directory refused" "$(head -3 "$tmp/open.log")"
fi

echo "test-beside: dredrun --addr-env takes only the known keys"
tok="0123456789abcdef0123456789abcdef"
good="DRED_MASTER_HOST=h1
DRED_MASTER_ADDR=unix:/tmp/x/ctl.sock
DRED_MASTER_TCP=tcp:10.0.0.1:4242
DRED_JOB_TOKEN=$tok"
printf '%s\n' "$good" >"$tmp/me/good"; chmod 600 "$tmp/me/good"
run_job addr-good "$bin/dredrun" --addr-env "$tmp/me/good" -- env
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -qx "DRED_JOB_TOKEN=$tok" &&
   printf '%s\n' "$out" | grep -qx "DRED_MASTER_TCP=tcp:10.0.0.1:4242"; then
  ok "a good file: the command runs with its variables"
else bad "a good file: the command runs with its variables" "rc=$rc: $(printf '%s' "$out" | head -3)"; fi
# refused NAME FILE: exit 2, a message, the command not run
refused() {
  rm -f "$tmp/ran"
  run_job "addr-$1" "$bin/dredrun" --addr-env "$2" -- touch "$tmp/ran"
  if [ "$rc" -eq 2 ] && [ ! -e "$tmp/ran" ] && printf '%s\n' "$out" | grep -q refused; then
    ok "$1: refused, command not run"
  else bad "$1: refused, command not run" "rc=$rc ran=$([ -e "$tmp/ran" ] && echo yes): $out"; fi
}
printf '%s\nLD_PRELOAD=%s/evil.so\n' "$good" "$tmp" >"$tmp/me/preload"; chmod 600 "$tmp/me/preload"
refused "an LD_PRELOAD= line" "$tmp/me/preload"
printf 'DRED_MASTER_ADDR=unix:/tmp/x/ctl.sock\nDRED_JOB_TOKEN=%s; touch /tmp/pwn\n' "$tok" >"$tmp/me/inject"
chmod 600 "$tmp/me/inject"
refused "a value with more than a token" "$tmp/me/inject"
printf '%s\n' "$good" >"$tmp/me/wide"; chmod 644 "$tmp/me/wide"
refused "a file of mode 0644" "$tmp/me/wide"
printf '%s\n' "$good" >"$tmp/open/good"; chmod 600 "$tmp/open/good"
refused "a file in a 0777 directory" "$tmp/open/good"
ln -s "$tmp/me/good" "$tmp/me/link"
refused "a symbolic link" "$tmp/me/link"

echo "test-beside: a master started by hand, flooded, still starts and serves the job"
# Its descriptors limited below the flood (soft and hard: nothing to raise).
(ulimit -n 256 && exec "$bin/dred-master" --workers 3 --tcp-host 127.0.0.1 --addr-file "$tmp/me/addr" \
   --start-timeout-s 60) >"$tmp/master.log" 2>&1 &
mpid=$!; pids+=("$mpid")
if ! wait_file "$tmp/me/addr" 20; then
  bad "dred-master writes its address file" "$(head -5 "$tmp/master.log")"
else
  st="$(stat -c '%a' "$tmp/me/addr")"
  if [ "$st" = 600 ]; then ok "address file written, mode 0600"; else bad "address file mode 0600" "mode $st"; fi
  tcp="$(sed -n 's/^DRED_MASTER_TCP=tcp://p' "$tmp/me/addr")"
  host="${tcp%:*}"; port="${tcp##*:}"
  # 2000 HELLOs with a wrong token, one connection each.
  (
    for ((i = 0; i < 2000; i++)); do
      exec {fd}<>"/dev/tcp/$host/$port" || break
      printf 'DRHL\001\000\000\000ABCDEFGHIJKLMNOP' >&"$fd" 2>/dev/null
      exec {fd}>&-
    done
  ) 2>/dev/null &
  fp=$!; pids+=("$fp")
  wait_gone "$fp" 60 || kill -KILL "$fp" 2>/dev/null
  sleep 1
  # 400 idle connections, held until killed.
  (
    n=0
    for ((i = 0; i < 400; i++)); do exec {fd}<>"/dev/tcp/$host/$port" && n=$((n + 1)); done
    echo "$n" >"$tmp/flood.ready"
    exec sleep 120 # the same pid, holding the connections
  ) 2>/dev/null &
  fp=$!; pids+=("$fp")
  wait_file "$tmp/flood.ready" 30
  echo "    $(cat "$tmp/flood.ready" 2>/dev/null || echo 0) idle connections opened"
  run_job flooded "$bin/dredrun" --addr-env "$tmp/me/addr" -- \
    mpiexec -disable-auto-cleanup -n 3 "$bin/dred-launch" "$app" -c 1000 -r 2 -k 1
  if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "stat-app: ok"; then
    ok "the job starts and reduces correctly through 2000 bad HELLOs and 400 idle links"
  else
    bad "the job starts and reduces correctly under the flood" \
      "rc=$rc: $(printf '%s' "$out" | grep -v UCX | tail -3) | master: $(grep -v UCX "$tmp/master.log" | tail -3)"
  fi
  kill -KILL "$fp" 2>/dev/null; wait "$fp" 2>/dev/null
  if wait_gone "$mpid" 20; then
    if [ "$wrc" -eq 0 ]; then ok "dred-master exits 0 after the job"; else
      bad "dred-master exits 0 after the job" "status $wrc: $(grep -v UCX "$tmp/master.log" | grep -v "before HELLO" | tail -3)"; fi
  else
    bad "dred-master exits 0 after the job" "still running 20 s after it: $(grep -v UCX "$tmp/master.log" | grep -v "before HELLO" | tail -3)"
    kill -KILL "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null
  fi
  nref="$(grep -c "control link refused" "$tmp/master.log")"
  if [ "$nref" -ge 1 ] && [ "$nref" -le 12 ]; then
    ok "2000 wrong-token HELLOs: $nref log lines (1st, 2nd, 4th...)"
  else
    bad "2000 wrong-token HELLOs logged O(log n) times" "$nref lines"
  fi
  if grep -q "control link closed before HELLO" "$tmp/master.log"; then
    ok "idle links closed, and said so: $(grep -c "control link closed before HELLO" "$tmp/master.log") line(s)"
  else
    bad "idle links beyond the cap closed, and said so" "$(grep -v UCX "$tmp/master.log" | tail -3)"
  fi
fi

echo "test-beside: ulimit -n 48 on 3 simulated nodes: success or an error about descriptors"
run_job ulimit48 bash -c 'ulimit -n 48 && exec "$0" --sim-nodes a:3,b:3,c:3 -n 8 "$1" -c 1000 -r 2 -k 1' \
  "$bin/dredrun" "$app"
if printf '%s\n' "$out" | grep -q "declared failed:"; then
  bad "no worker declared failed for this process's shortage" "$(printf '%s' "$out" | grep "declared failed:" | head -2)"
elif [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "stat-app: ok"; then
  ok "ulimit -n 48: the job ran (rc 0)"
elif [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && printf '%s\n' "$out" | grep -q "file descriptors"; then
  ok "ulimit -n 48: rc $rc, an error about file descriptors, nobody declared failed"
else
  bad "ulimit -n 48: success or an error about descriptors" "rc=$rc: $(printf '%s' "$out" | grep -v UCX | tail -3)"
fi

echo "test-beside: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
