#!/usr/bin/env bash
# run-mpi.sh -- run the MPI integration tests under dredrun, each with a hard timeout.
#
#   BUILD=build bash tests/run-mpi.sh [PATTERN...]
#
# Each case of the table below runs
#     $BUILD/bin/dredrun -n P $BUILD/tests/mpi_<prog> ARGS
# in a session of its own (setsid), with DRED_STORAGE_DIR set to a fresh temporary
# directory (removed afterwards) and its output in $BUILD/test-logs/<case>.log.  A case
# passes when the job exits 0, its log has no "FAIL" line and it printed "ALL PASSED".
# On timeout the test processes get SIGTERM first (they print the step they were in), then
# the whole session/process group, then SIGKILL; processes are found by pid only: the
# session id and a per-case marker variable in their environment (DRED_TEST_CASE_ID),
# never by name.  Processes of a case still alive after its mpiexec ended are killed too and
# fail the case.  Ends with "N passed, N failed"; exits non-zero if any case failed.
#
# PATTERN: run only the cases whose name contains one of the patterns (e.g. "ops badinput");
# a PATTERN =NAME selects the case named exactly NAME (e.g. "=ops-p3", not inline-off-ops-p3).
# Environment: BUILD (default build); DRED_TEST_TIMEOUT_SCALE multiplies every timeout
# (and every bounded wait inside the test programs), e.g. 3 under sanitizers.
set -u
set +m  # no job control: background jobs stay in our process group, so setsid does not fork

BUILD=${BUILD:-build}
scale=${DRED_TEST_TIMEOUT_SCALE:-1}
export DRED_TEST_TIMEOUT_SCALE=$scale

# ARGS may start with @LAYOUT: the case then runs on simulated nodes (dredrun --sim-nodes
# LAYOUT: every process on this machine, one MPI node per name).  Each multi-node layout
# holds P + 1 processes (the master is the first process of the first name) and is uneven,
# so communicators cross nodes with different numbers of members on each.
# ARGS may then start with %ext: the case runs with dred-master beside the job (dredrun
# --external-master): the application's MPI_COMM_WORLD is its own, P processes in all.
# ARGS may then start with +VAR=VALUE words: the case runs with those variables set (in every
# process, dred-master included), e.g. short heartbeat and failure timeouts.
# ARGS may then start with ?TEXT words: the log must also contain each TEXT (a fixed
# string, '~' for a space), e.g. the line saying a setting took effect.
# ARGS may then start with !TEXT words: the log must not contain TEXT (same form), e.g. a
# count of 0 where the case must have used a path.
# name              prog        P  timeout(s)  args
CASES=(
  "ops-p1           ops         1   60  --no-derived"
  "ops-p2           ops         2   90  --no-derived"
  "ops-p3           ops         3  120  --no-derived"
  "ops-p5           ops         5  120  --no-derived -s 5 -c 1,7,1000 -e 24"
  "ops-p8           ops         8  150  --no-derived -s 8 -c 7,1000 -e 32"
  "ops-derived-p1   ops         1   30  --derived-only"
  "ops-derived-p3   ops         3   45  --derived-only"
  "types-p1         types       1   60"
  "types-p3         types       3  120"
  "types-derived@abc types      3   90  @a:2,b:1,c:1 --derived-only -s 7"
  "huge-parts@ab    huge        3   90  @a:1,b:2 +DRED_LOG_LEVEL=debug ?unpacked~into~recvbuf~in~parts -n 2000000 -s 3"
  "groups-p4        groups      4   60"
  "groups-p7        groups      7   90  -s 17"
  "concurrent-p3    concurrent  3   60"
  "concurrent-p8    concurrent  8  120  -s 88"
  "noncomm-p1       noncomm     1   30"
  "noncomm-p3       noncomm     3   60  -s 3"
  "noncomm-p8       noncomm     8   90  -s 8"
  "bottom-p1        bottom      1   60"
  "bottom-p3        bottom      3   90  ?recvbuf~is~NULL"
  "bottom@abc       bottom      4   90  @a:2,b:2,c:1 -n 600000"
  "inplace-p1       inplace     1   30"
  "inplace-p4       inplace     4   60"
  "progress-p2      progress    2   45"
  "progress-p4      progress    4   45  -r 2 -b 1"
  "badinput-p1      badinput    1   45"
  "badinput-p3      badinput    3   90"
  "badinput-p4      badinput    4   90"
  "lifecycle-self   lifecycle   2   30  self"
  "lifecycle-app    lifecycle   3   30  app"
  "threads-p3       threads     3   60"
  "threads-p5       threads     5   60  -T 6 -k 12"
  "lifetimes-p2     lifetimes   2   60"
  "lifetimes-p4     lifetimes   4   90  -n 24"
  "lifetimes-so-p3  lifetimes_so 3  90"
  "allreduce-p1     allreduce   1   60"
  "allreduce-p2     allreduce   2   90"
  "allreduce-p3     allreduce   3  120  +DRED_MEET_PIECES=1"
  "allreduce-p5     allreduce   5  150  -s 5"
  "allreduce-parts-p5 allreduce 5  150  +DRED_MEET_PIECES=1 -s 55"
  "allreduce-p8     allreduce   8  240  -s 8"
  "allreduce@abc    allreduce   7  240  @a:3,b:3,c:2 -s 73"
  "bcast-p1         bcast       1   60"
  "bcast-p2         bcast       2   90"
  "bcast-p3         bcast       3  120  +DRED_MEET_PIECES=1"
  "bcast-p5         bcast       5  150  -s 5"
  "bcast-p8         bcast       8  240  -s 8"
  # results past the cache (lib/shm/copy.c): on any machine with DRED_SHM_STREAM=1
  "allreduce-big-p2 allreduce   2  180  +DRED_SHM_STREAM=1 +DRED_LOG_LEVEL=debug ?results~written~past~the~cache -l 1100000 -s 21"
  "allreduce-big-p3 allreduce   3  180  +DRED_SHM_STREAM=1 +DRED_MEET_PIECES=1 -l 1100000 -s 22"
  "bcast-big-p3     bcast       3  180  +DRED_SHM_STREAM=1 +DRED_LOG_LEVEL=debug ?results~written~past~the~cache -l 2200000 -s 23"
  "bcast@abc        bcast       7  240  @a:3,b:3,c:2 -s 73"
  # the node relay (lib/paths/relay.c): every node but the master's has 3 members, so some
  # lead and some copy from their leader; the allreduce's -l is past the runtime thread's
  # 4 MiB step, so a result nobody waits on is copied over several turns
  "bcast-relay@abc  bcast       8  240  @a:3,b:3,c:3 +DRED_LOG_LEVEL=info ?node~relay:~led ?node~relay:~copied -s 74"
  "allreduce-relay@abc allreduce 8 240  @a:3,b:3,c:3 +DRED_LOG_LEVEL=info ?node~relay:~led ?node~relay:~copied ?a~step~per~turn,~over~several~turns -s 75 -l 600000"
  # A reduce spanning nodes: each node without the root sends dred-master one partial
  # (lib/paths/partial.c); tagged and auto reduces in flight together, shuffled
  "partial-p8@abc   concurrent  8  150  @a:3,b:3,c:3 +DRED_LOG_LEVEL=info ?node~partials:~folded -s 94"
  "ops-p8@abc       ops         8  200  @a:3,b:3,c:3 --no-derived -s 81 -c 7,1000 -e 32"
  "ops-p8@abcd      ops         8  200  @a:2,b:2,c:2,d:3 --no-derived -s 82 -c 1,999 -e 24"
  "ops-derived@abc  ops         3   60  @a:2,b:1,c:1 --derived-only"
  "groups-p8@abc    groups      8  120  @a:3,b:3,c:3 -s 17"
  "groups-p7@abcd   groups      7  120  @a:2,b:2,c:2,d:2 -s 19"
  "concurrent@abcd  concurrent  8  150  @a:2,b:2,c:2,d:3 -s 89"
  "noncomm-p8@abc   noncomm     8  120  @a:3,b:3,c:3 -s 8"
  # non-commutative ops alone: a node of consecutive ranks still folds its partial, in
  # rank order
  "partial-noncomm@abc noncomm  8  120  @a:3,b:3,c:3 +DRED_LOG_LEVEL=info ?node~partials:~folded -s 11 --noncomm-only"
  "inplace-p4@abc   inplace     4   60  @a:2,b:2,c:1"
  "threads-p5@abc   threads     5   90  @a:1,b:3,c:2 -T 6 -k 12"
  # (on one node, with the meeting place off: its reductions send no READY to rewrite)
  "hostile-offset   hostile     3   60  +DRED_MEET=0 -m offset"
  "hostile-len      hostile     3   60  +DRED_MEET=0 -m len"
  "hostile-owner    hostile     4   60  +DRED_MEET=0 -m owner"
  # (member 1 alone on node b: it always sends its own READY -- with a node peer, that
  # peer may fold both operands into a node partial, and member 1's lie never goes out --
  # and every reader of its buffer is on another node)
  "hostile-addr@abc hostile     4   90  @a:2,b:1,c:2 -m addr"
  "hostile-off@abc  hostile     4   90  @a:2,b:1,c:2 -m offset"
  "hostile-replica  hostile     3   60  +DRED_MEET=0 +DRED_REPLICA_DELAY_MS=0 -m replica"
  "hostile-repl-member hostile  4   60  +DRED_MEET=0 +DRED_REPLICA_DELAY_MS=0 -m replica-member -r 6"
  "limits-flood     limits      3  150  +DRED_HEARTBEAT_MS=100 +DRED_FAIL_TIMEOUT_MS=1500 +DRED_MASTER_TIMEOUT_MS=3000 flood -n 10000"
  "limits-cap       limits      3   40  cap"
  "limits-capsync   limits      4   90  capsync -n 400"
  "limits-capsync@ab limits     4   90  @a:2,b:3 capsync -n 400"
  "limits-nodemem   limits      3   60  +DRED_NODE_MEM_MB=1 nodemem"
  "limits-early     limits      3   45  +DRED_HEARTBEAT_MS=100 +DRED_FAIL_TIMEOUT_MS=1000 +DRED_MASTER_TIMEOUT_MS=1500 early -d 3"
  "limits-wait      limits      3   40  wait -d 1.5"
  "limits-wait-meet limits      3   40  +DRED_LOG_LEVEL=info ?place:~1~reduction(s)~met wait -d 3 -a"
  "limits-neverjoin limits      3   45  +DRED_FINALIZE_WAIT_S=2 neverjoin -d 5"
  "limits-neverjoin-meet limits 3   45  +DRED_FINALIZE_WAIT_S=2 +DRED_LOG_LEVEL=info ?met~in~shared~memory~still~wait neverjoin -d 5 -a"
  "limits-sizes     limits      3   60  +DRED_REPLICAS=1 sizes"
  "lifetimes-p4@abc lifetimes   4  120  @a:2,b:2,c:1"
  # Operands in dred_alloc_mem blocks (zero copy), on one node and across simulated nodes
  "allocmem-p1      allocmem    1   90  --quick"
  "allocmem-p4      allocmem    4  240"
  "allocmem-p8@abc  allocmem    8  400  @a:3,b:3,c:3 --quick -s 77"
  # Inline reductions (operands inside the control messages, DRED_INLINE_MAX): raised so
  # that every count below travels inline (1000 doubles x 8 members = 64 KB, under
  # PROTO_INLINE_TOTAL), on one node and across simulated nodes; and switched off, so
  # the small counts take the task path too.
  "inline-ops-p5    ops         5  150  +DRED_INLINE_MAX=65536 --no-derived -s 51 -c 1,7,100,1000 -e 8"
  "inline-derived-p3 ops        3   60  +DRED_INLINE_MAX=65536 --derived-only"
  "inline-types-p3  types       3  120  +DRED_INLINE_MAX=65536"
  "inline-noncomm-p5 noncomm    5   90  +DRED_INLINE_MAX=65536 -s 5"
  "inline-inplace-p4 inplace    4   60  +DRED_INLINE_MAX=65536"
  "inline-ops@abc   ops         8  200  @a:3,b:3,c:3 +DRED_INLINE_MAX=65536 --no-derived -s 83 -c 1,7,1000 -e 32"
  "inline-noncomm@abc noncomm   8  120  @a:3,b:3,c:3 +DRED_INLINE_MAX=65536 -s 9"
  "inline-off-ops-p3 ops        3  120  +DRED_INLINE_MAX=0 --no-derived -s 52 -c 1,7"
  "inline-off-allreduce-p3 allreduce 3 150 +DRED_INLINE_MAX=0 -s 53"
  "inline-off-bcast-p3 bcast    3  150  +DRED_INLINE_MAX=0 -s 54"
  # No replicas (DRED_REPLICAS=0): the base engine alone, the robust layer never called
  # in a failure-free job (lib/engine/robust.h, DRED_RT_ROBUST_ON)
  "norepl-ops-p5    ops         5  150  +DRED_REPLICAS=0 --no-derived -s 53 -c 1,7,1000 -e 8"
  "norepl-concurrent@abc concurrent 8 150 @a:3,b:3,c:2 +DRED_REPLICAS=0 -s 90"
  "norepl-allocmem-p4 allocmem  4  240  +DRED_REPLICAS=0 --quick"
  # dred-master beside the job (dredrun --external-master, common/mpi/boot.h): no MPI in
  # the master, the application's MPI_COMM_WORLD its own; on one node and across
  # simulated nodes (the master on the first name's node: Unix socket and death watch
  # there, TCP to the others)
  "ext-ops-p5       ops         5  150  %ext --no-derived -s 54 -c 1,7,1000 -e 24"
  "ext-ops-p8@abc   ops         8  200  @a:3,b:3,c:2 %ext --no-derived -s 84 -c 7,1000 -e 32"
  "ext-concurrent@abcd concurrent 8 150 @a:2,b:2,c:2,d:2 %ext -s 91"
  "ext-groups-p7    groups      7   90  %ext -s 18"
  "ext-inplace-p4@abc inplace   4   60  @a:2,b:1,c:1 %ext"
  "ext-allocmem-p4  allocmem    4  240  %ext --quick"
  "ext-world-p4     lifecycle   4   45  %ext world"
  "ext-world-mpmd   lifecycle   3   30  world"
  # A pool far too small for 64 reductions in flight (lib/engine/admit.c): reductions wait for
  # room instead of falling onto the RMA path, and members that issue them in different
  # orders (part 1: shuffled tags) get past the deadlock that waiting could make
  "poolq-concurrent concurrent  4  150  +DRED_POOL_MB=1 -s 91"
  "poolq-concurrent@abc concurrent 8 200 @a:3,b:3,c:2 +DRED_POOL_MB=1 -s 92"
  "poolq-allreduce-p3 allreduce   3  150  +DRED_POOL_MB=1 -s 94"
  # Node peers' pools mapped at start (DRED_PREFAULT_PEERS): the log must say so, and
  # reductions reading the peers' segments stay exact
  "prefault-concurrent@abc concurrent 8 150 @a:3,b:3,c:2 +DRED_PREFAULT_PEERS=1 +DRED_POOL_MB=64 +DRED_LOG_LEVEL=info ?DRED_PREFAULT_PEERS:~mapped~2~node~peers -s 93"
  # Randomized differential test (tests/mpi/mix.c): batches mixing reduce, allreduce and
  # bcast, communicators, types, ops, tags, IN_PLACE, pool blocks and mismatched calls,
  # every result checked exactly; on one node, on simulated nodes, with inline reductions
  # off, and allreduce/bcast alone with operands up to 2 MB copied in pieces
  "mix-p5           mix         5   90  -s 1 -r 100"
  "mix-p8@abc       mix         8   90  @a:3,b:3,c:3 -s 2 -r 60"
  "mix-p8@abcd      mix         8   90  @a:2,b:2,c:2,d:3 -s 3 -r 60"
  "mix-inline-off-p5 mix        5   90  +DRED_INLINE_MAX=0 -s 4 -r 100"
  "mix-coll-pieces-p3 mix       3   90  +DRED_MEET_PIECES=1 -k allreduce,bcast -B 2000000 -K 10 -s 5 -r 80"
  # ... and with members taking their whole pool mid-issue (-S), so that slots spill to
  # dred-master after peers met, folded or were served there
  "mix-starve-p4    mix         4   90  +DRED_MEET_PIECES=1 -S 2 -B 1200000 -s 6 -r 60"
  # The meeting place (lib/shm/meet.h, lib/paths/meetpath.c): small auto-tagged reductions of
  # one-node groups met in shared memory -- plain, ring wrap (> DRED_MEET_DEPTH in flight),
  # mixed-path and small/small mismatches, abandoned futures, polling, threads, a full
  # table; on one node (the log must show reductions met there), on simulated nodes
  # (dred_comm() through dred-master, node-local splits met), and switched off
  "meet-p5          meet        5   60  +DRED_LOG_LEVEL=info +DRED_MEET_SHARE=1 ?met~in~shared~memory !meeting~place:~0~reduction -s 1"
  "meet-p7@abc      meet        7  120  @a:3,b:3,c:2 +DRED_LOG_LEVEL=info +DRED_MEET_SHARE=1 ?met~in~shared~memory !meeting~place:~0~reduction -s 2"
  "meet-off-p4      meet        4   60  +DRED_MEET=0 +DRED_LOG_LEVEL=info !met~in~shared~memory -s 3"
  # Small nonblocking calls posted in the fast lane: nobody waits for a posted member's
  # thread, whether everyone posts (p2) or one member's lane is off, so that it opens the
  # slot and records the others' posts there (off-p3).
  "nblane-p2        nblane      2   60"
  "nblane-off-p3    nblane      3   60  --nb-off 1"
)

logdir="$BUILD/test-logs"
mkdir -p "$logdir"
dredrun="$BUILD/bin/dredrun"

# must_have LOG TEXT... [--which]: every TEXT ('~' stands for a space) is in LOG; with
# --which, print the first one missing
# must_not_have LOG TEXT...: print the first TEXT found in LOG and succeed; fail if none is
must_not_have() {
  local log=$1 t
  shift
  for t in "$@"; do
    if grep -qF -- "${t//\~/ }" "$log"; then
      echo "${t//\~/ }"
      return 0
    fi
  done
  return 1
}

must_have() {
  local log=$1 t which=0
  shift
  [ "${*: -1}" = --which ] && which=1
  for t in "$@"; do
    [ "$t" = --which ] && continue
    if ! grep -qF -- "${t//\~/ }" "$log"; then
      [ "$which" = 1 ] && echo "${t//\~/ }"
      return 1
    fi
  done
  return 0
}

# shellcheck source=faults/jobprocs.sh
. "$(dirname "${BASH_SOURCE[0]}")/faults/jobprocs.sh"

# case_pids MARKER SID: pids of this case's processes: same session, or carrying the marker
case_pids() {
  local marker=$1 sid=$2
  {
    ps -eo pid=,sid= 2>/dev/null | awk -v s="$sid" '$2 == s { print $1 }'
    marked_pids "DRED_TEST_CASE_ID=$marker"
  } | grep -vx "$$" | sort -un
}

# live_case_pids MARKER SID: those of them still running
live_case_pids() {
  local p
  for p in $(case_pids "$1" "$2"); do
    alive "$p" && echo "$p"
  done
}

# signal_pids SIG PID...: signal the live ones among PIDs
signal_pids() {
  local sig=$1 p
  shift
  for p in "$@"; do
    alive "$p" && kill "-$sig" "$p" 2>/dev/null
  done
  return 0
}

# reap MARKER SID LEADER BIN: SIGTERM the test programs, then everything, then SIGKILL
reap() {
  local marker=$1 sid=$2 leader=$3 bin=$4 p exe binreal pids tests=()
  binreal=$(readlink -f "$bin")
  pids=$(case_pids "$marker" "$sid")
  for p in $pids; do
    exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
    [ "$exe" = "$binreal" ] && tests+=("$p")
  done
  # the test programs first, so their "killed during <step>" line still reaches the log
  if [ "${#tests[@]}" -gt 0 ]; then
    signal_pids TERM "${tests[@]}"
    sleep 1
  fi
  kill -TERM -- "-$leader" 2>/dev/null
  # shellcheck disable=SC2086
  signal_pids TERM $(case_pids "$marker" "$sid")
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ -z "$(live_case_pids "$marker" "$sid")" ] && break
    sleep 0.3
  done
  kill -KILL -- "-$leader" 2>/dev/null
  # shellcheck disable=SC2086
  signal_pids KILL $(case_pids "$marker" "$sid")
}

# If this script is interrupted or terminated, take the running case down with it
# (otherwise its processes would be orphaned and keep loading the machine).
cur_marker=""
cur_leader=""
cur_bin=""
on_signal() {
  trap - INT TERM HUP
  if [ -n "$cur_marker" ]; then
    echo "# run-mpi.sh interrupted: killing case processes" >&2
    reap "$cur_marker" "$cur_leader" "$cur_leader" "$cur_bin"
    [ -n "${storage:-}" ] && rm -rf "$storage"
  fi
  echo "$passed passed, $((failed + 1)) failed (interrupted)"
  exit 130
}
trap on_signal INT TERM HUP

passed=0
failed=0
failed_names=()
suite_start=$(date +%s)

for line in "${CASES[@]}"; do
  read -r name prog np limit args <<<"$line"
  if [ $# -gt 0 ]; then
    want=0
    for pat in "$@"; do
      if [[ "$pat" == =* ]]; then
        [[ "$name" == "${pat#=}" ]] && want=1
      elif [[ "$name" == *"$pat"* ]]; then
        want=1
      fi
    done
    [ "$want" = 1 ] || continue
  fi
  limit=$(awk -v a="$limit" -v b="$scale" 'BEGIN { printf "%d", a * b }')
  layout=()
  if [[ "$args" == @* ]]; then
    read -r lay args <<<"$args"
    layout=(--sim-nodes "${lay#@}")
  fi
  ext=()
  if [[ "$args" == %ext* ]]; then
    read -r _ args <<<"$args"
    ext=(--external-master)
  fi
  envs=()
  while [[ "$args" == +* ]]; do
    read -r kv args <<<"$args"
    envs+=("${kv#+}")
  done
  musts=()
  while [[ "$args" == \?* ]]; do
    read -r kv args <<<"$args"
    musts+=("${kv#\?}")
  done
  nots=()
  while [[ "$args" == \!* ]]; do
    read -r kv args <<<"$args"
    nots+=("${kv#\!}")
  done
  bin="$BUILD/tests/mpi_$prog"
  log="$logdir/$name.log"
  if [ ! -x "$dredrun" ] || [ ! -x "$bin" ]; then
    echo "FAIL $name: missing $([ -x "$dredrun" ] || echo "$dredrun ")$([ -x "$bin" ] || echo "$bin") (run make first)"
    failed=$((failed + 1)); failed_names+=("$name")
    continue
  fi
  storage=$(mktemp -d "${TMPDIR:-/tmp}/dred-test-$name.XXXXXX")
  marker="$name.$$.$RANDOM$RANDOM"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086  # args is deliberately word-split
  {
    echo "# case $name: ${envs[*]} $dredrun ${ext[*]} ${layout[*]} -n $np $bin $args"
    echo "# DRED_STORAGE_DIR=$storage timeout=${limit}s started $(date '+%F %T')"
  } >"$log"
  # setsid (not a group leader here, so it does not fork): $! is the session leader's pid
  # shellcheck disable=SC2086
  # env sets the case's +VAR=VALUE words and execs setsid: $! stays the session leader
  DRED_STORAGE_DIR="$storage" DRED_TEST_CASE_ID="$marker" \
    env "${envs[@]}" setsid "$dredrun" "${ext[@]}" "${layout[@]}" -n "$np" "$bin" $args </dev/null >>"$log" 2>&1 &
  leader=$!
  cur_marker=$marker; cur_leader=$leader; cur_bin=$bin
  timed_out=0
  deadline=$(( $(date +%s) + limit ))
  while alive "$leader"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      timed_out=1
      echo "# TIMEOUT after ${limit}s: killing the case's processes" >>"$log"
      reap "$marker" "$leader" "$leader" "$bin"
      break
    fi
    sleep 0.1 & wait $!   # (a foreground sleep would delay the signal trap)
  done
  wait "$leader" 2>/dev/null
  rc=$?
  # anything of this case still running 0.3 s after its mpiexec ended is a stray
  strays=""
  for _ in 1 2 3 4 5 6; do
    left=$(live_case_pids "$marker" "$leader")
    [ -z "$left" ] && break
    sleep 0.05
  done
  for p in $left; do
    alive "$p" && strays="$strays $p($(cat "/proc/$p/comm" 2>/dev/null))"
  done
  if [ -n "$strays" ]; then
    echo "# stray processes after the job ended:$strays -- killed" >>"$log"
    reap "$marker" "$leader" "$leader" "$bin"
  fi
  cur_marker=""
  secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  echo "# exit status $rc after ${secs}s" >>"$log"
  rm -rf "$storage"

  why=""
  if [ "$timed_out" = 1 ]; then why="timed out after ${limit} s"
  elif [ "$rc" -ne 0 ]; then why="exit status $rc"
  elif grep -q '^FAIL' "$log"; then why="FAIL lines in the log"
  elif ! grep -q '^ALL PASSED' "$log"; then why="no 'ALL PASSED' line"
  elif [ ${#musts[@]} -gt 0 ] && ! must_have "$log" "${musts[@]}"; then
    why="the log lacks '$(must_have "$log" "${musts[@]}" --which)'"
  elif [ ${#nots[@]} -gt 0 ] && bad_text=$(must_not_have "$log" "${nots[@]}"); then
    why="the log has '$bad_text'"
  elif [ -n "$strays" ]; then why="stray processes left:$strays"
  fi
  if [ -z "$why" ]; then
    npass=$(grep -c '^PASS' "$log")
    printf 'PASS %-16s P=%-2s %5ss  (%s checks)\n' "$name" "$np" "$secs" "$npass"
    passed=$((passed + 1))
  else
    printf 'FAIL %-16s P=%-2s %5ss  %s  (log: %s)\n' "$name" "$np" "$secs" "$why" "$log"
    nfail=$(grep -c '^FAIL' "$log")
    if [ "$nfail" -gt 0 ]; then
      echo "    first FAIL lines ($nfail in all):"
      grep '^FAIL' "$log" | head -n 10 | sed 's/^/    | /'
    fi
    echo "    log tail:"
    tail -n 25 "$log" | sed 's/^/    | /'
    failed=$((failed + 1)); failed_names+=("$name")
  fi
done

echo "# MPI suite took $(( $(date +%s) - suite_start ))s; logs in $logdir"
[ "$failed" -gt 0 ] && echo "# failed: ${failed_names[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
