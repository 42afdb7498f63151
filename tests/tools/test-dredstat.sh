#!/usr/bin/env bash
# test-dredstat.sh -- end-to-end checks of dredstat and dred-master's status socket.
#
# Runs real dred jobs (4 workers, tests/tools/stat-app.c) and checks, on their journal:
#   summary  exit 0, the header counts match the journal's tables;
#   trace    valid JSON (python3 -m json.tool), one "X" event per row of `tasks`, one
#            thread_name per worker;
#   plot     a PNG file (file(1) says so);
#   status   against a live master (the app sleeps inside): "workers" in the answer, the
#            socket is mode 0600, a stale socket left beforehand was replaced, and the
#            socket is gone after the job; summary of the journal the master is writing;
#   errors   missing file, random bytes, empty file, SQLite without our tables, another
#            schema: exit 1 with a message; usage errors exit 2; the journal is opened
#            read-only (its bytes do not change).
# Every wait is bounded by timeout(1); what this script starts is killed by pid on exit.
# Usage: BUILD=build bash tests/tools/test-dredstat.sh   (binaries from $BUILD/bin, $BUILD/lib)
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bin="$build/bin"
dredstat="$bin/dredstat"
dredrun="$bin/dredrun"
JOB_TIMEOUT="${JOB_TIMEOUT:-180}"

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok    $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL  $1"; [ $# -gt 1 ] && printf '        %s\n' "$2"; }
check() { local name="$1"; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
# has RC WANT_RC TEXT PATTERN: the exit status is WANT_RC and TEXT matches PATTERN
has() { [ "$1" -eq "$2" ] && printf '%s\n' "$3" | grep -q -- "$4"; }

tmp="$(mktemp -d /tmp/dredstat-test.XXXXXX)"
bgpid=""
ubin=""   # a copy of dredstat an unprivileged user can run (root only)
sqbin=""  # the squat check's copies of the programs (root only)
sqpid=""  # the squat check's planted socket server (its own session)
squid=""  # the squat check's victim uid: /tmp/dred-<squid>* are removed at the end
# kill_squatter: the planted socket server and everything in its session (setsid made
# $sqpid its leader; `timeout` moves itself and python into a process group of their own,
# so the session, not the group, covers them), by pid.
kill_squatter() {
  local p
  [ -n "$sqpid" ] || return 0
  for p in $sqpid $(ps -eo pid=,sid= | awk -v s="$sqpid" '$2 == s { print $1 }'); do
    kill -KILL "$p" 2>/dev/null
  done
  wait "$sqpid" 2>/dev/null
  sqpid=""
}
cleanup() {
  if [ -n "$bgpid" ] && kill -0 "$bgpid" 2>/dev/null; then
    kill "$bgpid" 2>/dev/null; sleep 1; kill -9 "$bgpid" 2>/dev/null
  fi
  kill_squatter
  if [ -n "$squid" ]; then rm -rf "/tmp/dred-$squid" "/tmp/dred-$squid"-*; fi
  rm -rf "$tmp"
  if [ -n "$ubin" ]; then rm -rf "$ubin"; fi
  if [ -n "$sqbin" ]; then rm -rf "$sqbin"; fi
}
trap cleanup EXIT

for f in "$dredstat" "$dredrun" "$bin/dred-master" "$build/lib/libdred.a"; do
  if [ ! -e "$f" ]; then echo "test-dredstat: $f missing: build first (make all dredstat)" >&2; exit 1; fi
done
app="$tmp/stat-app"
if ! mpicc -std=gnu11 -O2 -I"$root/include" -o "$app" "$root/tests/tools/stat-app.c" \
     "$build/lib/libdred.a" -luv -lsqlite3 -lm -pthread; then
  echo "test-dredstat: cannot build stat-app" >&2; exit 1
fi
export DRED_MASTER="$bin/dred-master"

# Count rows of a table with Python's sqlite3 (read-only URI: never touches the file).
rows() { python3 -c 'import sqlite3,sys; c=sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True); print(c.execute("select count(*) from " + sys.argv[2]).fetchone()[0])' "$1" "$2"; }

echo "test-dredstat: job 1 (4 workers, journal for summary/trace/plot)"
st1="$tmp/st1"
# Two simulated nodes: the rounds' reductions span them and go through dred-master (tasks
# in the journal); the small ones stay on each node and meet in shared memory.
if timeout -k 5 "$JOB_TIMEOUT" "$dredrun" --sim-nodes a:3,b:2 -s "$st1" -n 4 "$app" -c 50000 -r 3 -k 3 -m 25 >"$tmp/job1.log" 2>&1 \
   && grep -q "stat-app: ok" "$tmp/job1.log"; then
  ok "job 1 ran and its results are right"
else
  bad "job 1 ran and its results are right" "$(tail -5 "$tmp/job1.log")"
fi
# Each job has its own directory, $DRED_STORAGE_DIR/job-<id>; the journal stays in it.
J="$(ls -d "$st1"/job-*/journal.db 2>/dev/null | head -1)"
check "job 1 left exactly one job directory, with its journal (stores removed)" \
  test "$(ls -d "$st1"/job-* | wc -l)" -eq 1 -a -n "$J" -a "$(ls "$st1"/job-* | grep -c dred-replica)" -eq 0
check "storage and job directories are mode 0700" \
  test "$(stat -c %a "$st1")" = 700 -a "$(stat -c %a "$(dirname "${J:-/nonexistent/x}")" 2>/dev/null)" = 700
check "the journal is mode 0600" test "$(stat -c %a "$J" 2>/dev/null)" = 600
[ -n "$J" ] || J="$st1/journal.db"
ntasks="$(rows "$J" tasks 2>/dev/null || echo -1)"
nred="$(rows "$J" reductions 2>/dev/null || echo -1)"
check "journal has tasks ($ntasks) and 12 reductions ($nred)" test "$ntasks" -gt 0 -a "$nred" -eq 12
sum_before="$(sha256sum "$J" | cut -d' ' -f1)"

# summary
if timeout 30 "$dredstat" summary "$J" >"$tmp/summary.txt" 2>"$tmp/summary.err"; then
  ok "summary exits 0"
else
  bad "summary exits 0" "$(cat "$tmp/summary.err")"
fi
check "summary header counts match the journal" \
  grep -q "4 workers, policy [a-z]*, $nred reductions (0 failed), $ntasks tasks" "$tmp/summary.txt"
# the 25 small reductions met in shared memory: not in the tables, counted apart (meta)
check "summary counts the 4 x 25 member calls met in shared memory apart from the tables" \
  grep -q "^met in shared memory (not in the tables): 100 member calls" "$tmp/summary.txt"
check "summary lists $nred reductions" \
  test "$(awk '/^reductions/{f=1;next} /^$/{f=0} f && $1 ~ /^[0-9]+$/' "$tmp/summary.txt" | wc -l)" -eq "$nred"
check "summary lists 4 workers" \
  test "$(awk '/^workers/{f=1;next} f && $1 ~ /^[0-9]+$/' "$tmp/summary.txt" | wc -l)" -eq 4
check "summary's task counts add up" \
  test "$(awk '/^workers/{f=1;next} f && $1 ~ /^[0-9]+$/ {s+=$3} END{print s}' "$tmp/summary.txt")" -eq "$ntasks"

# trace
if timeout 30 "$dredstat" trace "$J" -o "$tmp/trace.json" 2>"$tmp/trace.err"; then
  ok "trace exits 0"
else
  bad "trace exits 0" "$(cat "$tmp/trace.err")"
fi
check "trace is valid JSON" python3 -m json.tool "$tmp/trace.json" /dev/null
nx="$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; print(sum(1 for x in e if x["ph"]=="X"))' "$tmp/trace.json" 2>/dev/null || echo -1)"
check "trace has one X event per task ($nx == $ntasks)" test "$nx" -eq "$ntasks"
check "trace names 4 worker threads, every event on one of them" python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["traceEvents"]
names = {x["tid"]: x["args"]["name"] for x in e if x["ph"] == "M" and x["name"] == "thread_name"}
assert names == {w: "worker %d" % w for w in range(1, 5)}, names
for x in e:
    if x["ph"] == "X":
        assert x["tid"] in names and x["dur"] >= 0 and x["name"].startswith("task ")
        assert {"provider", "bytes", "group", "tag"} <= set(x["args"])
' "$tmp/trace.json"
check "trace -o - writes JSON to stdout" sh -c "'$dredstat' trace '$J' -o - | python3 -m json.tool >/dev/null"

# plot
rm -f "$tmp/tasks.png"
mkdir -p "$tmp/plottmp"   # plot's TMPDIR: it must be empty again afterwards
if TMPDIR="$tmp/plottmp" timeout 60 "$dredstat" plot "$J" -o "$tmp/tasks.png" 2>"$tmp/plot.err"; then
  ok "plot exits 0"
else
  bad "plot exits 0" "$(cat "$tmp/plot.err")"
fi
check "plot wrote a PNG" sh -c "file '$tmp/tasks.png' | grep -q 'PNG image data'"
check "plot removed its temporary files" test -z "$(ls -A "$tmp/plottmp")"
check "the journal was not modified (read-only)" test "$(sha256sum "$J" | cut -d' ' -f1)" = "$sum_before"

# A journal is data from whoever wrote it: a policy that would end gnuplot's quoted title
# and call system() must not run anything, and control characters must not reach the
# terminal (an escape sequence in the policy, a group name, the met counter).
evil="$tmp/evil.db"
marker="$tmp/pwned"
cp "$J" "$evil"
python3 - "$evil" "$marker" <<'EOF2'
import sqlite3, sys
db, marker = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db)
pol = "predict' noenhanced\nsystem(\"id > %s\")\nset title 'x" % marker
c.execute("update meta set value = ? where key = 'policy'", (pol,))
if c.execute("select count(*) from meta where key = 'policy'").fetchone()[0] == 0:
    c.execute("insert into meta(key, value) values('policy', ?)", (pol,))
c.execute("update reductions set grp = ? where id = (select min(id) from reductions)",
          ("g\x1b]0;owned\x07\x1b[2J",))
c.execute("insert or replace into meta(key, value) values('met_in_shared_memory', ?)",
          ("1\x1b[31mred",))
c.commit()
EOF2
rm -f "$marker" "$tmp/evil.png"
out="$(TMPDIR="$tmp/plottmp" timeout 60 "$dredstat" plot "$evil" -o "$tmp/evil.png" 2>&1)"; rc=$?
check "plot of a journal whose policy calls system(): the command did not run" test ! -e "$marker"
if [ "$rc" -eq 0 ] && file "$tmp/evil.png" | grep -q 'PNG image data'; then
  ok "plot of that journal still draws its PNG"
else
  bad "plot of that journal still draws its PNG" "rc=$rc: $(printf '%s' "$out" | head -3)"
fi
check "plot of that journal removed its temporary files" test -z "$(ls -A "$tmp/plottmp")"
timeout 30 "$dredstat" summary "$evil" >"$tmp/evil.txt" 2>&1
check "summary of that journal prints no control characters (escaped as \\xNN)" sh -c \
  "! LC_ALL=C grep -q '[[:cntrl:]]' '$tmp/evil.txt' && grep -q 'x1b\\]0;owned' '$tmp/evil.txt' && grep -q 'policy predict.*x0asystem' '$tmp/evil.txt'"

# a finished journal copied into a directory nobody may write (no -wal/-shm can be made)
rodir="$tmp/ro"
mkdir "$rodir" && cp "$J" "$rodir/journal.db" && chmod 644 "$rodir/journal.db" && chmod 555 "$rodir"
as_user=()
ro_dredstat="$dredstat"
skip_why="no unprivileged user"
if [ "$(id -u)" = 0 ]; then  # root ignores directory modes: read as an unprivileged user
  if command -v runuser >/dev/null && id nobody >/dev/null 2>&1; then
    # nobody may not reach the build tree (a clone in a 0700 directory such as mktemp -d or
    # /root): run a copy of dredstat from a directory of its own that nobody can enter.
    ubin="$(mktemp -d /tmp/dredstat-bin.XXXXXX)"
    chmod 755 "$ubin" && cp "$dredstat" "$ubin/dredstat" && chmod 755 "$ubin/dredstat"
    ro_dredstat="$ubin/dredstat"
    chmod 711 "$tmp"
    if runuser -u nobody -- test -x "$ro_dredstat" -a -r "$rodir/journal.db"; then
      as_user=(runuser -u nobody --)
    else
      skip_why="nobody cannot run $ro_dredstat or read $rodir/journal.db"
    fi
  fi
fi
if [ "$(id -u)" = 0 ] && [ ${#as_user[@]} -eq 0 ]; then
  echo "  skip  summary of a journal in a read-only directory ($skip_why)"
else
  out="$(${as_user[@]+"${as_user[@]}"} timeout 30 "$ro_dredstat" summary "$rodir/journal.db" 2>&1)"; rc=$?
  if has "$rc" 0 "$out" "$nred reductions"; then ok "summary of a journal in a read-only directory"; else
    bad "summary of a journal in a read-only directory" "rc=$rc: $(printf '%s' "$out" | head -2)"; fi
fi
chmod 700 "$rodir"

# status against a live master
echo "test-dredstat: job 2 (app sleeps 12 s inside; dredstat status during it)"
# 80 bytes: the job's socket, $st2/job-<id>/dred-master.sock, is then longer than a Unix
# socket address holds (107), as under a deep scratch directory, and must still answer.
st2="$tmp/st2-"
while [ "${#st2}" -lt 80 ]; do st2="${st2}x"; done
mkdir -m 700 "$st2"
# A stale socket (bound, never unlinked) from a "dead master": dredstat must say so.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$st2/dred-master.sock"
out="$(timeout 10 "$dredstat" status "$st2/dred-master.sock" 2>&1)"; rc=$?
check "status on a stale socket: exit 1, says stale" has "$rc" 1 "$out" stale
timeout -k 5 "$JOB_TIMEOUT" "$dredrun" -s "$st2" -n 4 "$app" -c 20000 -r 2 -s 12 >"$tmp/job2.log" 2>&1 &
bgpid=$!
answered=0
sock2=""
for _ in $(seq 1 100); do   # up to ~30 s for MPI start-up on a loaded machine
  [ -n "$sock2" ] || sock2="$(ls -d "$st2"/job-*/dred-master.sock 2>/dev/null | head -1)"
  if DRED_STORAGE_DIR="$st2" timeout 10 "$dredstat" status >"$tmp/status.txt" 2>"$tmp/status.err" \
     && grep -q "^workers: 4 total" "$tmp/status.txt"; then
    answered=1; break
  fi
  kill -0 "$bgpid" 2>/dev/null || break
  sleep 0.3
done
# dredstat found the socket by itself; our own ls may have run a moment before it existed
[ -n "$sock2" ] || sock2="$(ls -d "$st2"/job-*/dred-master.sock 2>/dev/null | head -1)"
if [ "$answered" = 1 ]; then ok "status answers from a live master (default socket path)"; else
  bad "status answers from a live master (default socket path)" "$(cat "$tmp/status.err" "$tmp/status.txt" 2>/dev/null | head -5)"; fi
check "status reports workers, reductions, tasks/s, uptime" sh -c \
  "grep -q '^workers:' '$tmp/status.txt' && grep -q '^reductions_in_flight:' '$tmp/status.txt' && grep -q '^tasks_per_s:' '$tmp/status.txt' && grep -q '^uptime_s:' '$tmp/status.txt'"
# Clients that hang up at once (reset, unread answer) must not hurt the master: its write
# then fails with EPIPE, which would be a fatal SIGPIPE if the master did not ignore it.
# (Connected from the socket's folder: a deep clone's path exceeds sun_path's 108 bytes.)
hung=0
python3 - "$sock2" <<'EOF' || hung=$?
import os, socket, struct, sys
os.chdir(os.path.dirname(sys.argv[1]))
for _ in range(100):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.basename(sys.argv[1]))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
EOF
out5="$(timeout 10 "$dredstat" status "$sock2" 2>&1)"; rc=$?
[ "$hung" = 0 ] || { rc=1; out5="the 100 clients could not connect (python exit $hung)"; }
check "status still answers after 100 clients hung up early" has "$rc" 0 "$out5" '^workers: 4 total'
# Each worker's pool as its last PONG reported it (heartbeats every 500 ms by default).
pool_rows=0
for _ in $(seq 1 20); do
  out6="$(timeout 10 "$dredstat" status "$sock2" 2>&1)" || true
  pool_rows=$(printf '%s\n' "$out6" | grep -cE '^ +[1-4]  alive .* [0-9]+\.[0-9]/[0-9]+  +[0-9]+\.[0-9]  +[0-9]+  +[0-9]+$' || true)
  [ "$pool_rows" = 4 ] && break
  sleep 0.5
done
check "status shows every worker's pool use (used/size MiB, peak, fallbacks) and met_shm" test "$pool_rows" = 4
check "status socket is mode 0600" test "$(stat -c %a "$sock2" 2>/dev/null)" = 600
check "status socket is a socket owned by us" test -S "$sock2" -a -O "$sock2"
out2="$(timeout 10 "$dredstat" status "$sock2" 2>&1)"; rc=$?
check "a second status query answers too" has "$rc" 0 "$out2" '^workers:'
out4="$(timeout 30 "$dredstat" summary "$(dirname "$sock2")/journal.db" 2>&1)"; rc=$?
if has "$rc" 0 "$out4" '^journal .*workers, policy'; then ok "summary reads the journal while the master writes it"; else
  bad "summary reads the journal while the master writes it" "rc=$rc: $(printf '%s' "$out4" | head -3)"; fi

if timeout "$JOB_TIMEOUT" tail --pid="$bgpid" -f /dev/null; then :; fi
wait "$bgpid"; rc=$?; bgpid=""
if [ "$rc" -eq 0 ] && grep -q "stat-app: ok" "$tmp/job2.log"; then ok "job 2 ran and its results are right"; else
  bad "job 2 ran and its results are right" "$(tail -5 "$tmp/job2.log")"; fi
check "status socket removed when the master ends" test ! -e "$sock2"
out3="$(DRED_STORAGE_DIR="$st2" timeout 10 "$dredstat" status 2>&1)"; rc=$?
check "status with no master: exit 1 and a message" has "$rc" 1 "$out3" 'no status socket'

# malformed journals: exit 1 and one clear line naming the file
expect_bad_journal() { # name file pattern
  local name="$1" file="$2" pat="$3" cmd out rc
  for cmd in summary trace plot; do
    if [ "$cmd" = summary ]; then
      out="$(timeout 30 "$dredstat" summary "$file" 2>&1 >/dev/null)"; rc=$?
    else
      out="$(timeout 30 "$dredstat" "$cmd" "$file" -o "$tmp/bad.out" 2>&1 >/dev/null)"; rc=$?
    fi
    check "$name: $cmd exits 1 saying /$pat/" has "$rc" 1 "$out" "$pat"
  done
  check "$name: no output file left behind" test ! -e "$tmp/bad.out"
}
expect_bad_journal "missing file" "$tmp/nope.db" "No such file"
head -c 8192 /dev/urandom >"$tmp/random.db"
expect_bad_journal "random bytes" "$tmp/random.db" "not an SQLite database"
: >"$tmp/empty.db"
expect_bad_journal "zero-length file" "$tmp/empty.db" "empty file"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("pragma user_version=1"); c.commit()' "$tmp/notables.db"
expect_bad_journal "SQLite without tables" "$tmp/notables.db" "not a dred journal"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("create table reductions(a,b)"); c.commit()' "$tmp/other.db"
expect_bad_journal "another program's SQLite" "$tmp/other.db" "not a dred journal"
expect_bad_journal "a directory" "$tmp" "not a regular file"

# an empty but valid journal: summary works, plot says there is nothing to plot
python3 - "$J" "$tmp/nothing.db" <<'EOF'
import sqlite3, sys
src = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
dst = sqlite3.connect(sys.argv[2])
for (sql,) in src.execute("select sql from sqlite_master where type='table'"):
    dst.execute(sql)
dst.execute("pragma user_version=1"); dst.commit()
EOF
check "empty journal: summary exits 0" sh -c "'$dredstat' summary '$tmp/nothing.db' | grep -q '(none)'"
check "empty journal: trace is valid JSON" sh -c "'$dredstat' trace '$tmp/nothing.db' -o - | python3 -m json.tool >/dev/null"
out="$("$dredstat" plot "$tmp/nothing.db" -o "$tmp/n.png" 2>&1)"; rc=$?
check "empty journal: plot exits 1 (nothing to plot)" has "$rc" 1 "$out" 'no tasks'

# usage errors: exit 2
usage_case() { local rc; "$dredstat" "$@" >/dev/null 2>&1; rc=$?; if [ "$rc" -eq 2 ]; then ok "usage: dredstat $* exits 2"; else bad "usage: dredstat $* exits 2" "rc=$rc"; fi; }
usage_case
usage_case bogus
usage_case summary
usage_case trace "$J" "$J"
usage_case summary "$J" -o x
usage_case status a b
usage_case plot "$J" -o -
check "dredstat --help exits 0" sh -c "'$dredstat' --help | grep -q usage"

# A squatted default storage directory.  Another user who creates /tmp/dred-<uid> first
# (with a socket in it that talks escape sequences) must neither stop the victim's jobs
# nor be believed by the victim's dredstat.  Needs two local users besides root: victim
# dredtest2, squatter dredtest3 (created once, kept; never anyone else's account).
echo "test-dredstat: a squatted /tmp/dred-<uid> (victim dredtest2, squatter dredtest3)"
sq_skip=""
if [ "$(id -u)" != 0 ]; then sq_skip="not root: cannot act as two other users"
elif ! command -v runuser >/dev/null || ! command -v useradd >/dev/null; then sq_skip="no runuser/useradd"
else
  for u in dredtest2 dredtest3; do
    id "$u" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$u" >/dev/null 2>&1 \
      || { sq_skip="cannot create user $u"; break; }
  done
fi
if [ -z "$sq_skip" ]; then
  squid="$(id -u dredtest2)"
  rm -rf "/tmp/dred-$squid" "/tmp/dred-$squid"-*   # a previous run's, both test users'
  # The programs where the victim can run them (the clone may sit in a 0700 directory).
  sqbin="$(mktemp -d /tmp/dredstat-sq.XXXXXX)"
  chmod 755 "$sqbin"
  cp "$dredstat" "$bin/dred-master" "$bin/dred-launch" "$dredrun" "$app" "$sqbin/" && chmod 755 "$sqbin"/*
  # The squatter's directory, a job directory and a listening socket that answers with
  # escape sequences (an OSC title change, a screen clear) and a fake status line.
  runuser -u dredtest3 -- mkdir -m 755 "/tmp/dred-$squid" "/tmp/dred-$squid/job-planted"
  setsid runuser -u dredtest3 -- timeout 120 python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"\x1b]0;owned\x07\x1b[2Jworkers: 99 planted\n"); c.close()
' "/tmp/dred-$squid/job-planted/dred-master.sock" >/dev/null 2>&1 &
  sqpid=$!
  for _ in $(seq 1 50); do [ -S "/tmp/dred-$squid/job-planted/dred-master.sock" ] && break; sleep 0.1; done
  as_victim() { (cd /tmp && runuser -u dredtest2 -- env -u DRED_STORAGE_DIR -u XDG_RUNTIME_DIR \
    -u DRED_MASTER -u DRED_LAUNCH "$@"); }
  out="$(as_victim timeout 10 "$sqbin/dredstat" status 2>&1)"; rc=$?
  if [ "$rc" -ne 0 ] && ! printf '%s' "$out" | grep -q planted && ! printf '%s' "$out" | LC_ALL=C grep -q $'\x1b' &&
     printf '%s' "$out" | grep -q "/tmp/dred-$squid: owned by uid"; then
    ok "dredstat status refuses the squatter's directory and never reads its socket"
  else
    bad "dredstat status refuses the squatter's directory and never reads its socket" "rc=$rc: $(printf '%q' "$out")"
  fi
  out="$(as_victim timeout 10 "$sqbin/dredstat" status "/tmp/dred-$squid/job-planted/dred-master.sock" 2>&1)"; rc=$?
  check "dredstat status SOCKET refuses a socket owned by someone else" has "$rc" 1 "$out" "owned by uid"
  as_victim timeout -k 5 "$JOB_TIMEOUT" "$sqbin/dredrun" -n 2 "$sqbin/stat-app" -c 20000 -r 2 -s 8 \
    >"$tmp/sqjob.log" 2>&1 &
  bgpid=$!
  answered=0
  for _ in $(seq 1 100); do   # up to ~30 s for MPI start-up on a loaded machine
    if as_victim timeout 10 "$sqbin/dredstat" status >"$tmp/sqstatus.txt" 2>&1 &&
       grep -q "^workers: 2 total" "$tmp/sqstatus.txt"; then answered=1; break; fi
    kill -0 "$bgpid" 2>/dev/null || break
    sleep 0.3
  done
  if timeout "$JOB_TIMEOUT" tail --pid="$bgpid" -f /dev/null; then :; fi
  wait "$bgpid"; rc=$?; bgpid=""
  if [ "$rc" -eq 0 ] && grep -q "stat-app: ok" "$tmp/sqjob.log" &&
     grep -q "storage directory /tmp/dred-$squid: owned by uid .*using the new private directory /tmp/dred-$squid-" "$tmp/sqjob.log"; then
    ok "the victim's job runs anyway, in a fresh private directory, and the warning names the squatted one"
  else
    bad "the victim's job runs anyway, in a fresh private directory, and the warning names the squatted one" "rc=$rc: $(tail -5 "$tmp/sqjob.log")"
  fi
  check "dredstat status (no arguments) found the job in its fresh directory" test "$answered" = 1
  kill_squatter
else
  echo "  skip  squatted storage directory ($sq_skip)"
fi

echo "test-dredstat: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
