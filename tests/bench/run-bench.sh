#!/usr/bin/env bash
# run-bench.sh -- run dred-bench (dred vs MPICH MPI_Reduce/MPI_Ireduce) and dred-bench-coll
# (dred vs MPI_Allreduce/MPI_Bcast), write CSV, PNG plots and a table of dred/MPI ratios.
# `make bench` runs the quick mode.
#
#   bash tests/bench/run-bench.sh [--quick | --full] [options]
#
#   --quick          (default) p = $(nproc), one rank per core, then p = 8, oversubscribed where
#                    there are fewer than 8 CPUs; fewer sizes; about 10 minutes on a quiet 2-CPU
#                    machine, plus about 3 for the coll jobs (p = 2: 15 s, p = 8: 3 min)
#   --full           p = $(nproc), then 4, 8, 16; every size 128 KiB..128 MiB; for docs/performance.md
#   --ps "LIST"      override the process counts, e.g. --ps "8 16"
#   --reps R         timed repetitions per point (default 7)
#   --hogs N         stress-ng CPU hogs for the slow scenario (default 2), pinned to the last CPU
#   --only LIST      run only these parts: ideal,unbalanced,sleepwait,concurrent,slow,master,policy,
#                    replicas,nodes,small,coll (default all)
#   --quiet-wait S   before each job wait up to S seconds for the machine to be idle
#                    (default 30 quick, 300 full; 0 = do not wait)
#   --no-plots       skip gnuplot
#   --out DIR        output directory (default $BUILD/bench)
#
# Every job's members wait in MPI's own blocking calls between reductions (dred-bench's
# default, as applications do), except part 1b.
# The rank-per-core case comes first: p = the number of CPUs, one application rank per core
# (dred-master and dred's threads still share them), then the oversubscribed p = 8 that the
# issue-4 targets are stated for.  Every table labels each p: "per-core" (p = CPUs), "over xN"
# (N ranks per CPU) or "under" (fewer ranks than CPUs); ratios.txt also sets each point of
# the rank-per-core run beside the same point of the largest p.
# Jobs (for each p):
#   1. ideal + unbalanced + bound:  dred-bench --scenario ideal,unbalanced,bound
#   1b. sleepwait: the ideal points again with DRED_WAIT=sleep (sleeping polls between calls:
#      nobody spins, so dred's threads never wait for a core); sleepwait.csv, table in ratios.txt
#   2. concurrent:                  dred-bench --scenario concurrent
#   3. slow: dred-bench --scenario slow --pin --hogs 0 (pinned baseline, no hogs), then the same
#      with N `stress-ng --cpu N --taskset <last CPU>` hogs running for the whole job, started in
#      the job's session (autogroup scheduling would otherwise cap them at half the CPU).
#      --pin puts app rank r of P on CPU r*ncpu/P, so with 2 CPUs ranks P/2..P-1 share their CPU
#      with the hogs (the root, rank 0, does not).  The hogs are stopped by pid with the job.
#   4. master load (largest p only): dred-bench --scenario concurrent --conc <largest C>
#      --only dred with DRED_LOG_LEVEL=info; samples dred-master's CPU from /proc/<pid>/stat and
#      reads its "dred-master done: ... messages in, ... out" line.
#   5. policy (largest p only): the executor choice, DRED_POLICY=last (the paper's rule: the
#      worker whose last task took less time) against DRED_POLICY=predict (queued bytes plus
#      this task's, over the measured speed): the hogged slow job of part 3 and the concurrent
#      job with C = 16, each once per policy (jobs alternate last, predict).  Rows go to
#      policy-<policy>.csv / policy-<policy>-summary.csv (not raw.csv/summary.csv), and
#      policy.txt gets the table: dred median per policy, predict/last, and each job's own MPI
#      median (MPI does not depend on the policy: the two MPI columns show the drift between
#      jobs; "norm" = (predict/its MPI) / (last/its MPI) corrects for it).  Quick mode: 4 jobs,
#      ~1.5 min on a quiet machine (plus the quiet waits); each job checks that dred-master
#      itself got the DRED_POLICY it was meant to (from /proc/PID/environ).
#   6. replicas (largest p only): the failure-free cost of fault tolerance.  The ideal scenario
#      at 8M and 32M with DRED_REPLICAS=0 (off: no copies, no snapshot directory), with the
#      default DRED_REPLICAS=2 (eager: copies start at the call) and with DRED_REPLICAS=2
#      DRED_REPLICA_DELAY_MS=1000 (lazy, dred's default); two rounds of off, eager, lazy.  Rows go to
#      replicas-<variant>.csv / -summary.csv and replicas.txt gets the tables: dred median
#      per variant, eager/off and lazy/off, each job's own MPI median (norm as in part 5).
#   7. nodes (largest p only): 1, 2, 3 and 4 simulated nodes (dredrun --sim-nodes: Hydra's
#      fork launcher, every process on this machine, MPI sees one node per name) -- a:P+1,
#      a:..,b:.., a:..,b:..,c:.. and a:..,b:..,c:..,d:.. (master + P filled in order) -- the ideal scenario at
#      128K and 8M, dred against MPI_Reduce in the same job.  Every layout gets the settings
#      dredrun gives a multi-node job (MPIR_CVAR_DEVICE_COLLECTIVES=none, so MPI's own answer
#      is right: pmodels/mpich#6893; UCX_TLS=^cma,tcp), the 1-node layout too, so the four
#      differ only in where the node boundaries fall: across them dred reads providers with
#      MPI_Rget and sends replica copies over its own links (common/net.c) instead of
#      through shared memory.  A fifth job repeats 3 nodes with DRED_REPLICAS=0 to separate
#      the copies' cost from the reads'.  Rows go to nodes-<layout>.csv / -summary.csv, the
#      table to nodes.txt.  Quick mode: 5 jobs of 5 repetitions, about 2 min on a quiet
#      machine.
#   8. small (largest p, then p = 7): many small nonblocking reductions, with
#      DRED_WAIT=mpi (members wait in MPI's blocking calls between rounds, as applications do):
#      dred-bench --scenario small (8 B and 1 KiB, K = 1, 4, 16, 64 in flight, per-reduction time
#      = median over rounds of round time / K), then at p = 7 --scenario loop (an
#      application's shape: ireduce of 8 B + MPI_Allreduce + MPI_Bcast + wait, 3000 iterations in
#      full mode, 600 in quick mode, dred and MPI alternating in chunks of 100).  Rows go to
#      small.csv / small-summary.csv, the table to small.txt.
#   9. coll (each p): allreduce and bcast, dred-bench-coll (dred_allreduce / dred_bcast against
#      MPI_Allreduce / MPI_Bcast in the same job, MPI_SUM of doubles and bytes, slowest member
#      per repetition, medians): three jobs per p -- ideal; --late 10 (unbalanced arrival: one
#      member, in turn, 10 x MPI's time late; last return minus last arrival); --conc 4 (4 in
#      flight per member: dred_iallreduce / dred_ibcast with tags 0..3, issued in a shuffled
#      order per member, against MPI_Iallreduce / MPI_Ibcast + MPI_Waitall; bcast roots j mod
#      p; per-collective time = round / 4).  Quick mode: 8 B..2 MiB, --reps R; full mode:
#      8 B..128 MiB with dred-bench-coll's own repetition counts (30, 15 above 32 KiB, 7 above
#      256 KiB; --reps R overrides), the --conc job up to the largest of 128, 32, 8 MiB whose
#      buffers (p x 5 x size, doubled for dred's and MPI's copies) fit MemAvailable.  Rows go
#      to coll.csv (mode,param,p,bytes,... in us), the table to coll.txt.
# Every job runs in a session of its own with a marker variable in its environment, under a hard
# timeout; its processes are found by session id / marker and killed by pid, never by name.
# A job whose results are complete but which does not exit within 60 s (a hang in
# dred_finalize/MPI_Finalize) is killed, its results kept, and the run reported as failed.
#
# Outputs in $OUT: raw.csv (one row per call), summary.csv (medians per point), ratios.txt
# (the table), machine.txt, master-load.txt, policy-*.csv, policy.txt, replicas-*.csv,
# replicas.txt, coll.csv, coll.txt, logs/*.log, ideal.png,
# unbalanced.png, concurrent.png, slow.png.  Exit status: non-zero if a job failed, timed out
# or reported WRONG.
# shellcheck disable=SC2317  # functions called through traps and $on_tick
set -u
set +m # no job control: background jobs stay in our process group, so setsid does not fork

BUILD=${BUILD:-build}
mode=quick
ps_list=""
reps=7
reps_set=0
hogs=1
only="ideal,unbalanced,sleepwait,concurrent,slow,master,policy,replicas,nodes,small,coll"
quiet_wait=""
plots=1
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick; shift ;;
    --full) mode=full; shift ;;
    --ps) ps_list="$2"; shift 2 ;;
    --reps) reps="$2"; reps_set=1; shift 2 ;;
    --hogs) hogs="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --quiet-wait) quiet_wait="$2"; shift 2 ;;
    --no-plots) plots=0; shift ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
    *) echo "run-bench.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$BUILD/bench}
ncpu=$(nproc)
lastcpu=$((ncpu - 1))
# uniq_list WORDS...: the words once each, in their first order (the rank-per-core p leads)
uniq_list() { printf '%s\n' "$@" | awk '!seen[$0]++' | tr '\n' ' ' | sed 's/ $//'; }
# play P: how P application ranks sit on this machine's CPUs, as the tables label it
play() {
  if [ "$1" -eq "$ncpu" ]; then echo per-core
  elif [ "$1" -gt "$ncpu" ]; then awk -v p="$1" -v c="$ncpu" 'BEGIN { printf "over x%g", p / c }'
  else echo under; fi
}
if [ "$mode" = quick ]; then
  # shellcheck disable=SC2086
  ps_list=${ps_list:-$(uniq_list $ncpu 8)}
  quiet_wait=${quiet_wait:-30}
  qflag=--quick
  master_reps=3
  limit_main=360; limit_conc=300; limit_slow=200; limit_master=200; limit_coll=300
  coll_max=2097152
else
  # shellcheck disable=SC2086
  ps_list=${ps_list:-$(uniq_list $ncpu 4 8 16)}
  quiet_wait=${quiet_wait:-300}
  qflag=""
  master_reps=$reps
  limit_main=3600; limit_conc=1800; limit_slow=1200; limit_master=600; limit_coll=3600
  coll_max=134217728
fi
want() { [[ ",$only," == *",$1,"* ]]; }

bench="$BUILD/bin/dred-bench"
bench_coll="$BUILD/bin/dred-bench-coll"
dredrun="$BUILD/bin/dredrun"
for f in "$bench" "$dredrun" "$BUILD/bin/dred-master" $(want coll && echo "$bench_coll"); do
  [ -x "$f" ] || { echo "run-bench.sh: $f missing (build first: make bench)" >&2; exit 2; }
done
mkdir -p "$OUT/logs"
rm -f "$OUT"/*.csv "$OUT"/*.png "$OUT"/*.dat "$OUT"/ratios.txt "$OUT"/master-load.txt "$OUT"/policy.txt "$OUT"/replicas.txt "$OUT"/small.txt "$OUT"/coll.txt \
  "$OUT"/logs/*.log
raw="$OUT/raw.csv"
summary="$OUT/summary.csv"
failed=0
shutdown_hangs=0
shutdown_grace=60

# ---- process bookkeeping (pids only) ------------------------------------------------------
tail_pid=""
job_leader=""
job_marker=""
alive() {
  local st
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
# job_pids MARKER SID: the job's processes: same session, or carrying the marker
job_pids() {
  local marker=$1 sid=$2 p
  {
    ps -eo pid=,sid= 2>/dev/null | awk -v s="$sid" '$2 == s { print $1 }'
    for p in /proc/[0-9]*; do
      p=${p#/proc/}
      [ "$p" = "$$" ] && continue
      grep -qzx "DRED_BENCH_RUN_ID=$marker" "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
  } | sort -un
}
signal_pids() {
  local sig=$1 p
  shift
  for p in "$@"; do alive "$p" && kill "-$sig" "$p" 2>/dev/null; done
  return 0
}
reap() { # MARKER LEADER: TERM, then KILL, everything of the job
  local marker=$1 leader=$2
  kill -TERM -- "-$leader" 2>/dev/null
  # shellcheck disable=SC2046
  signal_pids TERM $(job_pids "$marker" "$leader")
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ -z "$(for p in $(job_pids "$marker" "$leader"); do alive "$p" && echo "$p"; done)" ] && break
    sleep 0.3
  done
  kill -KILL -- "-$leader" 2>/dev/null
  # shellcheck disable=SC2046
  signal_pids KILL $(job_pids "$marker" "$leader")
}
cleanup() {
  [ -n "$job_leader" ] && alive "$job_leader" && reap "$job_marker" "$job_leader"
  [ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null
  [ -n "${storage:-}" ] && rm -rf "$storage"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# cpu_busy SECONDS: percent of all CPUs busy over the interval (from /proc/stat)
cpu_busy() {
  local a b
  a=$(awk '/^cpu /{ t=0; for (i=2;i<=NF;i++) t+=$i; print t, $5+$6 }' /proc/stat)
  sleep "$1"
  b=$(awk '/^cpu /{ t=0; for (i=2;i<=NF;i++) t+=$i; print t, $5+$6 }' /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
    t = y[1]-x[1]; i = y[2]-x[2]; printf "%d", (t > 0 ? 100*(t-i)/t : 0) }'
}
wait_quiet() {
  local waited=0 busy
  busy=$(cpu_busy 2)
  while [ "$busy" -gt 20 ] && [ "$waited" -lt "$quiet_wait" ]; do
    [ "$waited" = 0 ] && echo "   (machine ${busy}% busy before the job; waiting up to ${quiet_wait}s for it to be idle)"
    sleep 3; waited=$((waited + 5))
    busy=$(cpu_busy 2)
  done
  echo "   machine ${busy}% busy (all CPUs) at job start"
  [ "$busy" -gt 20 ] && echo "   WARNING: other load on the machine: results are noisy. Top:" &&
    ps -eo pid,pcpu,comm --sort=-pcpu | sed -n '2,6p' | sed 's/^/     /'
  return 0
}

# run_job NAME LIMIT ARGS...: run `dredrun ARGS` as a job; output to logs/NAME.log and stdout
job_rc=0
run_job() {
  local name=$1 limit=$2
  shift 2
  local log="$OUT/logs/$name.log"
  storage=$(mktemp -d "${TMPDIR:-/tmp}/dred-bench-$name.XXXXXX")
  job_marker="$name.$$.$RANDOM$RANDOM"
  echo "== $name: dredrun $*   (timeout ${limit}s)"
  wait_quiet
  echo "# dredrun $*  ($(date '+%F %T'))" >"$log"
  if [ "${job_hogs:-0}" -gt 0 ]; then
    # The hogs run inside the job's session: with the kernel's autogroup scheduling a hog in
    # another session would only ever take half of the CPU, however many there are.  They
    # carry the job's marker, so a timeout reaps them with the job; otherwise the wrapper
    # stops them by pid when dredrun returns.
    echo "   $job_hogs stress-ng CPU hog(s) on CPU $lastcpu for the whole job (in its session)"
    # shellcheck disable=SC2016  # $1.. are expanded by the wrapper shell
    DRED_STORAGE_DIR="$storage" DRED_BENCH_RUN_ID="$job_marker" \
      setsid bash -c 'stress-ng --cpu "$1" --taskset "$2" --timeout "$3" -q </dev/null >"$4" 2>&1 &
        h=$!; sleep 1; shift 4; "$@"; rc=$?
        kill -TERM "$h" 2>/dev/null; wait "$h" 2>/dev/null; exit "$rc"' hogwrap \
      "$job_hogs" "$lastcpu" "$((limit + 60))s" "$OUT/logs/stress-ng-$name.log" \
      "$dredrun" "$@" </dev/null >>"$log" 2>&1 &
  else
    DRED_STORAGE_DIR="$storage" DRED_BENCH_RUN_ID="$job_marker" \
      setsid "$dredrun" "$@" </dev/null >>"$log" 2>&1 &
  fi
  job_leader=$!
  tail -n +2 -f --pid="$job_leader" "$log" 2>/dev/null | grep --line-buffered -v '^dred-bench: MPICH' &
  tail_pid=$!
  local deadline=$(( $(date +%s) + limit )) timed_out=0 done_at="" shutdown_hang=0
  while alive "$job_leader"; do
    [ -n "${on_tick:-}" ] && "$on_tick"
    if [ "$(date +%s)" -ge "$deadline" ]; then
      timed_out=1
      echo "# TIMEOUT after ${limit}s" | tee -a "$log"
      reap "$job_marker" "$job_leader"
      break
    fi
    # The results are written before dred_finalize(); a shutdown that does not end within
    # $shutdown_grace s is a library hang: keep the results, kill the job, report it.
    if [ -z "$done_at" ] && grep -qE '^dred-bench(-coll)?: (all results verified|WRONG results)' "$log"; then
      done_at=$(date +%s)
    fi
    if [ -n "$done_at" ] && [ "$(date +%s)" -ge $((done_at + shutdown_grace)) ]; then
      shutdown_hang=1
      echo "# SHUTDOWN HANG: the results are complete but the job did not exit within ${shutdown_grace}s (dred_finalize/MPI_Finalize); killing it" | tee -a "$log"
      reap "$job_marker" "$job_leader"
      break
    fi
    sleep 0.5
  done
  wait "$job_leader" 2>/dev/null
  job_rc=$?
  sleep 0.3
  local strays=""
  for p in $(job_pids "$job_marker" "$job_leader"); do
    alive "$p" && strays="$strays $p($(cat "/proc/$p/comm" 2>/dev/null))"
  done
  [ -n "$strays" ] && echo "# stray processes after the job:$strays -- killed" | tee -a "$log" &&
    reap "$job_marker" "$job_leader"
  wait "$tail_pid" 2>/dev/null
  tail_pid=""
  job_leader=""
  rm -rf "$storage"
  storage=""
  [ "$timed_out" = 1 ] && job_rc=124
  if [ "$shutdown_hang" = 1 ]; then
    shutdown_hangs=$((shutdown_hangs + 1))
    echo "!! $name: results kept, but the job hung in shutdown (log: $log)"
    failed=1
  elif [ "$job_rc" -ne 0 ] || grep -q '^WRONG' "$log"; then
    echo "!! $name failed (exit $job_rc$(grep -q '^WRONG' "$log" && echo ', WRONG results')); log: $log"
    failed=1
  fi
}

# ---- machine description -------------------------------------------------------------------
{
  echo "date:    $(date '+%F %T %Z')"
  echo "host:    $(uname -srm)"
  echo "cpu:     $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(lscpu | sed -n 's/^CPU(s): *//p' | head -1) CPUs ($(lscpu | sed -n 's/^Core(s) per socket: *//p' | head -1) cores/socket, $(lscpu | sed -n 's/^Thread(s) per core: *//p' | head -1) threads/core)$(lscpu | grep -q '^Hypervisor' && echo ", $(lscpu | sed -n 's/^Hypervisor vendor: *//p') VM")"
  echo "memory:  $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "mpi:     $(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*/MPICH /p'), device $(mpichversion 2>/dev/null | sed -n 's/^MPICH Device:[[:space:]]*//p')"
  echo "cc:      $(mpicc -v 2>&1 | grep -m1 'gcc version' || true)"
  echo "dred:    $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "mode:    $mode, p in {$ps_list} ($(for p in $ps_list; do printf '%s ' "p=$p $(play "$p"),"; done | sed 's/, *$//')), reps $reps, slow: $hogs stress-ng hog(s) on CPU $lastcpu"
  echo "env:     $(env | grep -E '^(DRED_|MPIR_CVAR_|UCX_|HYDRA_)' | grep -v DRED_BENCH_RUN_ID | tr '\n' ' ')"
  echo "         (DRED_* unset = library defaults; MPICH at its defaults unless MPIR_CVAR_* listed)"
} >"$OUT/machine.txt"
echo "== machine"
sed 's/^/   /' "$OUT/machine.txt"
command -v stress-ng >/dev/null || echo "   WARNING: stress-ng not installed: the slow scenario is skipped"
command -v gnuplot >/dev/null || { echo "   WARNING: gnuplot not installed: no plots"; plots=0; }
t_start=$(date +%s)

# ---- master load sampling ----------------------------------------------------------------
master_pid=""
master_cpu=0
master_t0=""
sample_master() {
  if [ -z "$master_pid" ]; then
    local p
    for p in $(job_pids "$job_marker" "$job_leader"); do
      [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dred-master ] && master_pid=$p && master_t0=$(date +%s.%N)
    done
  fi
  if [ -n "$master_pid" ] && [ -r "/proc/$master_pid/stat" ]; then
    local c
    c=$(sed 's/^.*) //' "/proc/$master_pid/stat" 2>/dev/null | awk '{ print $12 + $13 }')
    [ -n "$c" ] && master_cpu=$c && master_t1=$(date +%s.%N)
  fi
}

# ---- policy check: which DRED_POLICY dred-master itself was started with ---------------------
policy_seen=""
check_policy() {
  [ -n "$policy_seen" ] && return 0
  local p
  for p in $(job_pids "$job_marker" "$job_leader"); do
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dred-master ]; then
      policy_seen=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^DRED_POLICY=//p')
      policy_seen=${policy_seen:-unset}
    fi
  done
}

# ---- the jobs --------------------------------------------------------------------------------
maxp=0
for p in $ps_list; do [ "$p" -gt "$maxp" ] && maxp=$p; done
conc_list="4,8,16,28"
policy_conc=16
replica_lazy_ms=1000 # dred's default
for p in $ps_list; do
  echo "== p = $p: $(play "$p") ($ncpu CPUs)"
  common=(--reps "$reps" --csv "$raw" --summary "$summary")
  if want ideal || want unbalanced; then
    sc=bound
    want ideal && sc="ideal,$sc"
    want unbalanced && sc="$sc,unbalanced"
    run_job "main-p$p" "$limit_main" -n "$p" "$bench" --scenario "$sc" $qflag "${common[@]}"
  fi
  if want sleepwait; then
    # the same ideal points with nobody spinning between calls (members sleep while they wait)
    DRED_WAIT=sleep run_job "sleepwait-p$p" "$limit_main" -n "$p" "$bench" --scenario ideal $qflag \
      --reps "$reps" --csv "$OUT/sleepwait.csv" --summary "$OUT/sleepwait-summary.csv"
  fi
  if want concurrent; then
    run_job "concurrent-p$p" "$limit_conc" -n "$p" "$bench" --scenario concurrent \
      --conc "$conc_list" $qflag "${common[@]}"
  fi
  if want slow && command -v stress-ng >/dev/null; then
    run_job "slow0-p$p" "$limit_slow" -n "$p" "$bench" --scenario slow --pin --hogs 0 $qflag \
      "${common[@]}"
    job_hogs=$hogs
    run_job "slow-p$p" "$limit_slow" -n "$p" "$bench" --scenario slow --pin --hogs "$hogs" $qflag \
      "${common[@]}"
    job_hogs=0
  fi
  if want master && [ "$p" = "$maxp" ]; then
    C=${conc_list##*,}
    master_pid=""; master_cpu=0; master_t1=""
    on_tick=sample_master
    DRED_LOG_LEVEL=info run_job "master-load-p$p" "$limit_master" -n "$p" "$bench" \
      --scenario concurrent --conc "$C" --only dred --reps "$master_reps" --csv "$OUT/master-load.csv"
    on_tick=""
    log="$OUT/logs/master-load-p$p.log"
    hz=$(getconf CLK_TCK)
    line=$(grep -m1 'dred-master done:' "$log" || true)
    timed=$(sed -n 's/^dred-bench: dred timed total \([0-9.]*\) s over \([0-9]*\).*/\1 \2/p' "$log")
    {
      echo "master load: p=$p, $C concurrent reductions of 8 MiB, dred only, $master_reps reps + 1 warm-up"
      echo "  ${line:-no 'dred-master done' line in $log}"
      echo "$line" | awk -v t="${timed% *}" -v n="${timed#* }" -v cpu="$master_cpu" -v hz="$hz" \
        -v t0="$master_t0" -v t1="${master_t1:-0}" '
        { for (i = 1; i <= NF; i++) { if ($i == "events,") ev = $(i-1); if ($i == "tasks,") tk = $(i-1);
            if ($i == "in,") mi = $(i-2); if ($i == "out") mo = $(i-1) } }
        END {
          life = t1 - t0; c = cpu / hz
          if (t > 0) printf "  dred timed: %.3f s for %d reductions -> %.0f messages/s (in+out), %.0f events/s, %.0f tasks/s\n", t, n, (mi+mo)/t, ev/t, tk/t
          if (life > 0) printf "  dred-master CPU: %.3f s over %.1f s of its life (%.1f%% of one core); per dred-timed second %.1f%%\n", c, life, 100*c/life, (t > 0 ? 100*c/t : 0)
        }'
    } | tee "$OUT/master-load.txt"
  fi
  if want policy && [ "$p" = "$maxp" ]; then
    for sc in slow concurrent; do
      if [ "$sc" = slow ] && ! command -v stress-ng >/dev/null; then
        echo "   policy: stress-ng not installed: slow scenario skipped"
        continue
      fi
      for pol in last predict; do
        policy_seen=""
        on_tick=check_policy
        pcommon=(--reps "$reps" --csv "$OUT/policy-$pol.csv" --summary "$OUT/policy-$pol-summary.csv")
        if [ "$sc" = slow ]; then
          job_hogs=$hogs
          DRED_POLICY=$pol run_job "policy-$pol-slow-p$p" "$limit_slow" -n "$p" "$bench" \
            --scenario slow --pin --hogs "$hogs" $qflag "${pcommon[@]}"
          job_hogs=0
        else
          DRED_POLICY=$pol run_job "policy-$pol-concurrent-p$p" "$limit_conc" -n "$p" "$bench" \
            --scenario concurrent --conc "$policy_conc" $qflag "${pcommon[@]}"
        fi
        on_tick=""
        if [ "$policy_seen" = "$pol" ]; then
          echo "   dred-master ran with DRED_POLICY=$pol"
        else
          echo "!! policy-$pol-$sc-p$p: dred-master's DRED_POLICY was '${policy_seen:-not seen}', not $pol"
          failed=1
        fi
      done
    done
  fi
  if want replicas && [ "$p" = "$maxp" ]; then
    for round in 1 2; do
      for v in off eager lazy; do
        case $v in
          off) nrep=0 delay=0 ;;
          eager) nrep=2 delay=0 ;;
          lazy) nrep=2 delay=$replica_lazy_ms ;;
        esac
        rcommon=(--reps "$reps" --csv "$OUT/replicas-$v.csv" --summary "$OUT/replicas-$v-summary.csv")
        DRED_REPLICAS=$nrep DRED_REPLICA_DELAY_MS=$delay run_job "replicas-$v-r$round-p$p" \
          "$limit_main" -n "$p" "$bench" --scenario ideal --sizes 8M,32M "${rcommon[@]}"
      done
    done
  fi
  if want coll; then
    # allreduce and bcast: ideal, unbalanced (10 x late), 4 in flight
    ccommon=(--csv "$OUT/coll.csv")
    { [ "$mode" = quick ] || [ "$reps_set" = 1 ]; } && ccommon+=(--reps "$reps")
    # --conc holds 5 buffers of the size per rank (4 results and the operand): the largest
    # size whose p x 5 x size, doubled for dred's and MPI's own copies, fits MemAvailable
    avail=$(awk '/^MemAvailable:/ { print $2 * 1024 }' /proc/meminfo)
    conc_max=$coll_max
    while [ "$conc_max" -gt 8388608 ] && [ $((p * 5 * conc_max * 2)) -gt "${avail:-0}" ]; do
      conc_max=$((conc_max / 4))
    done
    run_job "coll-ideal-p$p" "$limit_coll" -n "$p" "$bench_coll" --max "$coll_max" "${ccommon[@]}"
    run_job "coll-late-p$p" "$limit_coll" -n "$p" "$bench_coll" --max "$coll_max" --late 10 \
      "${ccommon[@]}"
    [ "$conc_max" != "$coll_max" ] &&
      echo "   coll --conc 4: up to $conc_max bytes (p x 5 x $coll_max x 2 is more than MemAvailable)"
    run_job "coll-conc-p$p" "$limit_coll" -n "$p" "$bench_coll" --max "$conc_max" --conc 4 \
      "${ccommon[@]}"
  fi
done

# ---- small reductions ----------------------------------------------------------------------------
if want small; then
  scommon=(--reps "$reps" --csv "$OUT/small.csv" --summary "$OUT/small-summary.csv")
  if [ "$mode" = quick ]; then srounds=30 liters=600; else srounds=60 liters=3000; fi
  DRED_WAIT=mpi run_job "small-p$maxp" "$limit_main" -n "$maxp" "$bench" --scenario small \
    --rounds "$srounds" "${scommon[@]}"
  DRED_WAIT=mpi run_job "loop-p7" "$limit_main" -n 7 "$bench" --scenario loop \
    --loop-iters "$liters" --reps 1 --warmup 0 --csv "$OUT/small.csv" --summary "$OUT/small-summary.csv"
fi

# ---- simulated nodes ------------------------------------------------------------------------------
# layout N P: N simulated nodes for the master + P workers, filled in order (a:3,b:3,c:3 for 3, 8)
layout() {
  local n=$1 total=$(( $2 + 1 )) i c left out="" names=(a b c d e f g h)
  left=$total
  for ((i = 0; i < n; i++)); do
    c=$(( (left + n - i - 1) / (n - i) )); left=$((left - c)); out+="${out:+,}${names[$i]}:$c"
  done
  echo "$out"
}
if want nodes; then
  p=$maxp
  for v in n1 n2 n3 n4 n3-norep; do
    n=${v:1:1}; lay=$(layout "$n" "$p"); nrep=2
    [ "$v" = n3-norep ] && nrep=0
    nreps=$reps; [ "$mode" = quick ] && [ "$nreps" -gt 5 ] && nreps=5 # 5 jobs: keep quick quick
    ncommon=(--reps "$nreps" --csv "$OUT/nodes-$v.csv" --summary "$OUT/nodes-$v-summary.csv")
    DRED_REPLICAS=$nrep DRED_LOG_LEVEL=info run_job "nodes-$v-p$p" "$limit_main" --sim-nodes "$lay" \
      -n "$p" "$bench" --scenario ideal --sizes 128K,8M "${ncommon[@]}"
    grep -q "workers on $n node(s)" "$OUT/logs/nodes-$v-p$p.log" ||
      { echo "!! nodes-$v: dred-master did not report $n node(s) (see the log)"; failed=1; }
  done
fi

# ---- plots --------------------------------------------------------------------------------------
# summary.csv columns: 1 scenario,2 p,3 bytes,4 param,5 reps,6 dred_med_s,7 dred_min_s,8 dred_max_s,
# 9 mpi_med_s,10 mpi_min_s,11 mpi_max_s,12 ratio,13 wrong,14 dred_cpu_s,15 mpi_cpu_s,16 bound1_s,
# 17 bound2_s,18 dred_over_bound2
dat() { # SCEN P [PARAM] > file: x, dred med/min/max, mpi med/min/max, bound2   (x = bytes or param)
  awk -F, -v s="$1" -v p="$2" -v k="${3:-}" -v xcol="${4:-3}" 'NR > 1 && $1 == s && $2 == p && (k == "" || $4 == k) {
    printf "%s %s %s %s %s %s %s %s\n", $xcol, $6, $7, $8, $9, $10, $11, $17 }' "$summary" | sort -g
}
if [ "$plots" = 1 ] && [ -s "$summary" ]; then
  echo "== plots"
  pal=(1 2 3 4 6 7)
  ideal_cmd=""; conc_cmd=""; slow_cmd=""; unb_cmd=""; i=0
  for p in $ps_list; do
    f="$OUT/ideal-p$p.dat"; dat ideal "$p" >"$f"
    if [ -s "$f" ]; then
      ideal_cmd+="'$f' u (\$1/1048576):(\$2*1e3):(\$3*1e3):(\$4*1e3) w yerrorlines lc ${pal[i]} dt 1 pt 7 t 'dred p=$p', "
      ideal_cmd+="'$f' u (\$1/1048576):(\$5*1e3):(\$6*1e3):(\$7*1e3) w yerrorlines lc ${pal[i]} dt 2 pt 5 t 'MPI_Reduce p=$p', "
      awk '$8 != "nan" && $8 > 0' "$f" | grep -q . &&
        ideal_cmd+="'$f' u (\$1/1048576):(\$8 > 0 ? \$8*1e3 : 1/0) w l lc ${pal[i]} dt 3 lw 2 t 'bandwidth bound p=$p', "
    fi
    f="$OUT/concurrent-p$p.dat"; dat concurrent "$p" "" 4 >"$f"
    if [ -s "$f" ]; then
      conc_cmd+="'$f' u 1:(\$2*1e3):(\$3*1e3):(\$4*1e3) w yerrorlines lc ${pal[i]} dt 1 pt 7 t 'dred p=$p', "
      conc_cmd+="'$f' u 1:(\$5*1e3):(\$6*1e3):(\$7*1e3) w yerrorlines lc ${pal[i]} dt 2 pt 5 t 'MPI_Ireduce+Waitall p=$p', "
    fi
    for h in 0 "$hogs"; do
      f="$OUT/slow-h$h-p$p.dat"; dat slow "$p" "$h" >"$f"
      if [ -s "$f" ]; then
        lbl=$([ "$h" = 0 ] && echo "pinned, no hog" || echo "$h hog(s)")
        dt=$([ "$h" = 0 ] && echo 3 || echo 1)
        slow_cmd+="'$f' u (\$1/1048576):(\$2*1e3):(\$3*1e3):(\$4*1e3) w yerrorlines lc ${pal[i]} dt $dt pt 7 t 'dred p=$p $lbl', "
        slow_cmd+="'$f' u (\$1/1048576):(\$5*1e3):(\$6*1e3):(\$7*1e3) w yerrorlines lc ${pal[i]} dt $dt pt 4 t 'MPI p=$p $lbl', "
      fi
    done
    i=$((i + 1))
  done
  # unbalanced: one panel per metric; x = k, one line per (size, contender), largest p only
  # shellcheck disable=SC2034
  for s in unbalanced unbalanced_tail; do
    j=0
    # shellcheck disable=SC2013
    for b in $(awk -F, -v s="$s" -v p="$maxp" 'NR > 1 && $1 == s && $2 == p { print $3 }' "$summary" | sort -gu); do
      f="$OUT/$s-$b-p$maxp.dat"
      awk -F, -v s="$s" -v p="$maxp" -v b="$b" 'NR > 1 && $1 == s && $2 == p && $3 == b {
        printf "%s %s %s %s %s %s %s\n", $4, $6, $7, $8, $9, $10, $11 }' "$summary" | sort -g >"$f"
      mb=$(awk -v b="$b" 'BEGIN { if (b >= 1048576) printf "%gM", b/1048576; else printf "%gK", b/1024 }')
      unb_cmd+="$s|'$f' u (\$1+0.3):(\$2*1e3):(\$3*1e3):(\$4*1e3) w yerrorlines lc ${pal[j]} dt 1 pt 7 t 'dred $mb', "
      unb_cmd+="$s|'$f' u (\$1+0.3):(\$5*1e3):(\$6*1e3):(\$7*1e3) w yerrorlines lc ${pal[j]} dt 2 pt 5 t 'MPI_Reduce $mb', "
      j=$((j + 1))
    done
  done
  gp() { # OUTFILE SCRIPT
    if ! gnuplot -e "$2" 2>"$OUT/logs/gnuplot-$(basename "$1" .png).log"; then
      echo "   gnuplot failed for $1 (log: $OUT/logs/gnuplot-$(basename "$1" .png).log)"
    else
      echo "   $1"
    fi
  }
  head="set terminal pngcairo size 1100,700 noenhanced font ',10'; set grid; set key left top;"
  [ -n "$ideal_cmd" ] && gp "$OUT/ideal.png" "$head set output '$OUT/ideal.png';
    set title 'ideal: one reduction (MPI_SUM of doubles), root time, median of $reps (bars: min..max)';
    set logscale xy 2; set xlabel 'message size (MiB)'; set ylabel 'time (ms)'; set logscale y 10;
    plot ${ideal_cmd%, }"
  [ -n "$conc_cmd" ] && gp "$OUT/concurrent.png" "$head set output '$OUT/concurrent.png';
    set title 'concurrent: C reductions of 8 MiB in flight, until all complete, median of $reps';
    set xlabel 'reductions in flight C'; set ylabel 'time (ms)'; set logscale y 10; set xtics (4, 8, 16, 28);
    plot ${conc_cmd%, }"
  [ -n "$slow_cmd" ] && gp "$OUT/slow.png" "$head set output '$OUT/slow.png';
    set title 'slow workers: ranks pinned in blocks over $ncpu CPUs, $hogs stress-ng hog(s) on CPU $lastcpu (upper half of the ranks slow), root time';
    set logscale x 2; set logscale y 10; set xlabel 'message size (MiB)'; set ylabel 'time (ms)';
    plot ${slow_cmd%, }"
  if [ -n "$unb_cmd" ]; then
    u1=$(echo "$unb_cmd" | tr -d '\n' | awk -v RS=', ' '/^unbalanced\|/ { sub(/^unbalanced\|/, ""); printf "%s, ", $0 }')
    u2=$(echo "$unb_cmd" | tr -d '\n' | awk -v RS=', ' '/^unbalanced_tail\|/ { sub(/^unbalanced_tail\|/, ""); printf "%s, ", $0 }')
    gp "$OUT/unbalanced.png" "set terminal pngcairo size 1400,650 noenhanced font ',10'; set grid;
      set output '$OUT/unbalanced.png'; set multiplot layout 1,2;
      set logscale x 10; set logscale y 10; set xrange [0.2:20]; set xtics ('0' 0.3, '1x' 1.3, '10x' 10.3);
      set xlabel 'arrival spread k (multiple of the ideal MPI time)'; set ylabel 'time (ms)'; set key left top;
      set title 'unbalanced arrival p=$maxp: common start -> root has result';
      plot ${u1%, };
      set title 'unbalanced arrival p=$maxp: last arrival -> root has result (tail)';
      plot ${u2%, };
      unset multiplot"
  fi
fi

# ---- table ----------------------------------------------------------------------------------
if [ -s "$summary" ]; then
  {
    echo "dred / MPI, medians of $reps repetitions (dred time / MPI time; < 1 means dred is faster)"
    echo "machine: $(sed -n 's/^cpu: *//p' "$OUT/machine.txt"); $(sed -n 's/^mpi: *//p' "$OUT/machine.txt")"
    echo "(cpu: CPU seconds per call summed over the ranks, dred's background replica work included;"
    echo " settle: how long dred's ranks stayed busy after the call returned; both medians)"
    echo "(layout: per-core = one application rank per CPU, over xN = N ranks per CPU; $ncpu CPUs)"
    printf '%-16s %3s %-8s %6s %6s %11s %11s %9s %9s %9s %9s  %s\n' scenario p layout size param "dred ms" "MPI ms" dred/MPI \
      "dred cpu" "MPI cpu" "settle ms" ""
    awk -F, -v c="$ncpu" 'NR > 1 {
      b = $3; sz = b >= 1048576 ? sprintf("%gM", b/1048576) : sprintf("%gK", b/1024)
      lay = $2 == c ? "per-core" : $2 > c ? sprintf("over x%g", $2 / c) : "under"
      printf "%-16s %3s %-8s %6s %6s %11.2f %11.2f %9.3f %9.3f %9.3f %9.0f  %s\n", $1, $2, lay, sz, $4, $6*1e3, $9*1e3, $12,
        $14, $15, $19*1e3, ($13 == 1 ? "WRONG" : "") }' "$summary"
    if [ "$ncpu" != "$maxp" ] && awk -F, -v c="$ncpu" 'NR > 1 && $2 == c { f = 1 } END { exit !f }' "$summary"; then
      echo
      echo "rank per core (p = $ncpu) beside oversubscribed (p = $maxp, $(play "$maxp")): dred/MPI medians, same points"
      printf '%-16s %6s %6s %10s %10s %9s %10s %10s %9s\n' scenario size param "dred ms" "MPI ms" "p=$ncpu" \
        "dred ms" "MPI ms" "p=$maxp"
      awk -F, -v c="$ncpu" -v m="$maxp" 'NR > 1 && ($2 == c || $2 == m) {
        k = $1 SUBSEP $3 SUBSEP $4
        if (!(k in seen)) { seen[k] = 1; order[++n] = k; sc[k] = $1; b[k] = $3; pa[k] = $4 }
        d[k, $2] = $6; mm[k, $2] = $9; r[k, $2] = $12 }
      function cell(k, p) { return ((k, p) in r) ? sprintf("%10.2f %10.2f %9.3f", d[k, p] * 1e3, mm[k, p] * 1e3, r[k, p]) : sprintf("%10s %10s %9s", "-", "-", "-") }
      END { for (i = 1; i <= n; i++) { k = order[i]
          sz = b[k] >= 1048576 ? sprintf("%gM", b[k] / 1048576) : sprintf("%gK", b[k] / 1024)
          printf "%-16s %6s %6s %s %s\n", sc[k], sz, pa[k], cell(k, c), cell(k, m) } }' "$summary"
    fi
    echo
    echo "memory-bandwidth bound (ideal rows): bound2 = (p-1) combines x 3n bytes / max(1-process, 2-process aggregate bandwidth)"
    awk -F, '$1 == "bandwidth" { printf "  p=%s run: a[i] += b[i] over 2 x 32 MiB, %s process(es) at once: %.2f GB/s\n", $2, $4, $7 / 1e9 }' "$raw"
    printf '%-4s %6s %12s %12s %12s %10s %10s\n' p size "bound2 ms" "dred ms" "MPI ms" dred/bound mpi/bound
    awk -F, 'NR > 1 && $1 == "ideal" && $17 != "nan" && $17 > 0 {
      b = $3; sz = b >= 1048576 ? sprintf("%gM", b/1048576) : sprintf("%gK", b/1024)
      printf "%-4s %6s %12.3f %12.3f %12.3f %10.2f %10.2f\n", $2, sz, $17*1e3, $6*1e3, $9*1e3, $6/$17, $9/$17 }' "$summary"
    echo
    echo "targets (p = 8):"
    awk -F, 'NR > 1 && $2 == 8 {
      r = $12; b = $3; sz = b >= 1048576 ? sprintf("%gM", b/1048576) : sprintf("%gK", b/1024)
      if ($1 == "ideal" && b == 131072) t("ideal 128K", r, 0.2)
      if ($1 == "ideal" && b >= 8388608) t("ideal " sz, r, 0.3)
      if ($1 == "unbalanced" && $4 == 10) t("unbalanced k=10x " sz " (from common start)", r, 0.5)
      if ($1 == "unbalanced_tail" && $4 == 10) t("unbalanced k=10x " sz " (tail after last arrival)", r, 0.5)
      if ($1 == "slow" && $4 > 0) t(sprintf("slow %s (%d hog(s))", sz, $4), r, 0.4)
      if ($1 == "concurrent" && $4 == 16) t("concurrent 16 x 8M", r, 0.3)
      if ($1 == "ideal" && b == 33554432 && $17 > 0) t("ideal 32M vs bound2 (dred/bound)", $6/$17, 2.5)
    }
    function t(name, v, lim) { printf "  %-50s %7.3f  target <= %-4g %s\n", name, v, lim, v <= lim ? "met" : "MISSED" }' "$summary"
    [ -s "$OUT/master-load.txt" ] && echo && cat "$OUT/master-load.txt"
  } | tee "$OUT/ratios.txt"
fi
# ---- A/B tables (parts 5 and 6) -------------------------------------------------------------
# ab_table A_SUMMARY B_SUMMARY A_NAME B_NAME: per point, dred median under A and under B, B/A,
# each job's own MPI median, and norm = (B / its MPI) / (A / its MPI), which corrects for the
# machine drifting between jobs.  A summary holding several jobs' rows for one point (part 6
# runs two rounds) contributes the median of their medians.
ab_table() {
  local fa=$1 fb=$2 na=$3 nb=$4
  printf '%-11s %-12s %10s %11s %12s %10s %10s %7s  %s\n' scenario point "$na ms" "$nb ms" \
    "$nb/$na" "MPI($na)" "MPI($nb)" norm verdict
  awk -F, -v fa="$fa" -v na="$na" -v nb="$nb" '
    FNR == 1 { next }
    { k = $1 SUBSEP $3 SUBSEP $4
      if (!(k in seen)) { seen[k] = 1; order[++n] = k; sc[k] = $1; b[k] = $3; pa[k] = $4 }
      if (FILENAME == fa) { da[k] = da[k] " " $6; ma[k] = ma[k] " " $9 }
      else { db[k] = db[k] " " $6; mb[k] = mb[k] " " $9 } }
    function med(s,   a, c, i, j, x) {
      c = split(s, a, " "); if (c == 0) return ""
      for (i = 2; i <= c; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
      return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
    function ms(v) { return v == "" ? "-" : sprintf("%.2f", v * 1e3) }
    END {
      for (i = 1; i <= n; i++) {
        k = order[i]
        xa = med(da[k]); xb = med(db[k]); ya = med(ma[k]); yb = med(mb[k])
        sz = b[k] >= 1048576 ? sprintf("%gM", b[k] / 1048576) : sprintf("%gK", b[k] / 1024)
        pt = sc[k] == "concurrent" ? sprintf("%d x %s", pa[k], sz) : \
             sc[k] == "slow" ? sprintf("%s, %d hog%s", sz, pa[k], pa[k] == 1 ? "" : "s") : sz
        r = (xa > 0 && xb != "") ? sprintf("%.3f", xb / xa) : "-"
        nm = (xa > 0 && ya > 0 && yb > 0 && xb != "") ? sprintf("%.3f", (xb / yb) / (xa / ya)) : "-"
        v = (r == "-" || nm == "-") ? "" : (r + 0 < 1 && nm + 0 < 1) ? nb " faster" : \
            (r + 0 > 1 && nm + 0 > 1) ? na " faster" : "unclear"
        printf "%-11s %-12s %10s %11s %12s %10s %10s %7s  %s\n", sc[k], pt, ms(xa), ms(xb), r, ms(ya), ms(yb), nm, v
      }
    }' "$fa" "$fb"
}

pl="$OUT/policy-last-summary.csv"
pp="$OUT/policy-predict-summary.csv"
if [ -s "$pl" ] && [ -s "$pp" ]; then
  {
    echo
    echo "executor policy, p = $maxp: dred medians of $reps with DRED_POLICY=last (paper) and =predict (default)"
    echo "(MPI ms: the MPI median of the same job; norm = (predict / its MPI) / (last / its MPI))"
    echo "(verdict only where both predict/last and norm agree; else 'unclear')"
    ab_table "$pl" "$pp" last predict
  } | tee "$OUT/policy.txt"
  [ -f "$OUT/ratios.txt" ] && cat "$OUT/policy.txt" >>"$OUT/ratios.txt"
elif want policy; then
  echo "!! policy: no results (see $OUT/logs/policy-*.log)"
fi
r0="$OUT/replicas-off-summary.csv"
r2="$OUT/replicas-eager-summary.csv"
rl="$OUT/replicas-lazy-summary.csv"
if [ -s "$r0" ] && [ -s "$r2" ] && [ -s "$rl" ]; then
  {
    echo
    echo "replication overhead, p = $maxp, ideal: dred medians with DRED_REPLICAS=0 (off), =2 with copies"
    echo "at once (eager, DRED_REPLICA_DELAY_MS=0) and =2 with DRED_REPLICA_DELAY_MS=$replica_lazy_ms (lazy, the default); two jobs each,"
    echo "alternating; MPI ms from the same jobs"
    ab_table "$r0" "$r2" off eager
    ab_table "$r0" "$rl" off lazy
  } | tee "$OUT/replicas.txt"
  [ -f "$OUT/ratios.txt" ] && cat "$OUT/replicas.txt" >>"$OUT/ratios.txt"
elif want replicas; then
  echo "!! replicas: no results (see $OUT/logs/replicas-*.log)"
fi
if want sleepwait && [ -s "$OUT/sleepwait-summary.csv" ]; then
  {
    echo
    echo "ideal with sleeping waits between calls (DRED_WAIT=sleep; the main table waits in MPI_Wait)"
    printf '%-6s %4s %-8s %10s %12s %12s %8s\n' scen p layout bytes "dred ms" "MPI ms" dred/MPI
    awk -F, -v c="$ncpu" 'FNR > 1 && $1 == "ideal" { lay = $2 == c ? "per-core" : $2 > c ? sprintf("over x%g", $2 / c) : "under"
      printf "%-6s %4d %-8s %10d %12.3f %12.3f %8.3f\n", $1, $2, lay, $3, $6 * 1e3, $9 * 1e3, ($9 > 0 ? $6 / $9 : 0) }' \
      "$OUT/sleepwait-summary.csv"
  } | tee "$OUT/sleepwait.txt"
  [ -f "$OUT/ratios.txt" ] && cat "$OUT/sleepwait.txt" >>"$OUT/ratios.txt"
fi
if want small && [ -s "$OUT/small-summary.csv" ]; then
  {
    echo
    echo "small reductions (DRED_WAIT=mpi): per reduction, median over rounds of (max over ranks of"
    echo "a round) / K, K reductions in flight; loop: total seconds of the P=7 loop (param = iterations)"
    printf '%-6s %4s %6s %6s %12s %12s %8s\n' scen p bytes K "dred ms" "MPI ms" dred/MPI
    awk -F, 'FNR > 1 { printf "%-6s %4d %6d %6g %12.3f %12.3f %8.3f\n", $1, $2, $3, $4, $6 * 1e3, $9 * 1e3, ($9 > 0 ? $6 / $9 : 0) }' \
      "$OUT/small-summary.csv"
    # The loop's third contender: the same loop with no reduction (dred-bench's LOOP_FLOOR),
    # what no reduction riding on the application's collectives can beat.  Medians over reps.
    loopmed() { awk -F, -v w="$1" '$1 == "loop" && $5 == w { print $7 }' "$OUT/small.csv" | sort -g |
      awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
    fl=$(loopmed none) ld=$(loopmed dred) lm=$(loopmed mpi)
    if [ -n "$fl" ] && [ -n "$ld" ] && [ -n "$lm" ]; then
      awk -v f="$fl" -v d="$ld" -v m="$lm" 'BEGIN { printf "loop floor (no reduction): %.3f s; dred/floor %.3f, MPI/floor %.3f\n", f, d / f, m / f }'
    fi
  } | tee "$OUT/small.txt"
  [ -f "$OUT/ratios.txt" ] && cat "$OUT/small.txt" >>"$OUT/ratios.txt"
elif want small; then
  echo "!! small: no results (see $OUT/logs/small-*.log)"
fi
if want coll && [ -s "$OUT/coll.csv" ]; then
  {
    echo
    echo "allreduce and bcast (dred-bench-coll; us, median over repetitions of the slowest member;"
    echo "late: one member 10 x MPI's time late, last return minus last arrival; conc: K in flight,"
    echo "per collective = round / K)"
    printf '%-5s %5s %4s %-8s %10s %10s %10s %8s %10s %10s %8s\n' mode param p layout bytes \
      "dred allr" "MPI allr" dred/MPI "dred bc" "MPI bc" dred/MPI
    awk -F, -v c="$ncpu" 'FNR > 1 { lay = $3 == c ? "per-core" : $3 > c ? sprintf("over x%g", $3 / c) : "under"
      printf "%-5s %5s %4d %-8s %10d %10.1f %10.1f %8.3f %10.1f %10.1f %8.3f\n", $1, $2, $3, lay, $4,
        $5, $6, ($6 > 0 ? $5 / $6 : 0), $7, $8, ($8 > 0 ? $7 / $8 : 0) }' "$OUT/coll.csv"
  } | tee "$OUT/coll.txt"
  [ -f "$OUT/ratios.txt" ] && cat "$OUT/coll.txt" >>"$OUT/ratios.txt"
elif want coll; then
  echo "!! coll: no results (see $OUT/logs/coll-*.log)"
fi
if want nodes && [ -s "$OUT/nodes-n1-summary.csv" ]; then
  {
    echo
    echo "simulated nodes, p = $maxp, ideal (dred / MPI_Reduce medians of $nreps, same job; every"
    echo "layout with MPIR_CVAR_DEVICE_COLLECTIVES=none and UCX_TLS=^cma,tcp, as dredrun sets them)"
    printf '%-24s %-6s %10s %10s %8s\n' layout size "dred ms" "MPI ms" dred/MPI
    for v in n1 n2 n3 n4 n3-norep; do
      f="$OUT/nodes-$v-summary.csv"
      [ -s "$f" ] || continue
      n=${v:1:1}
      lbl="$(layout "$n" "$maxp")$([ "$v" = n3-norep ] && echo ' REPLICAS=0')"
      awk -F, -v l="$lbl" 'FNR > 1 && $1 == "ideal" {
        sz = $3 >= 1048576 ? sprintf("%gM", $3 / 1048576) : sprintf("%gK", $3 / 1024)
        printf "%-24s %-6s %10.2f %10.2f %8.3f\n", l, sz, $6 * 1e3, $9 * 1e3, ($9 > 0 ? $6 / $9 : 0) }' "$f"
    done
  } | tee "$OUT/nodes.txt"
  [ -f "$OUT/ratios.txt" ] && cat "$OUT/nodes.txt" >>"$OUT/ratios.txt"
elif want nodes; then
  echo "!! nodes: no results (see $OUT/logs/nodes-*.log)"
fi
[ "$shutdown_hangs" -gt 0 ] && echo "!! $shutdown_hangs job(s) hung in dred_finalize/MPI_Finalize after writing their results (killed after ${shutdown_grace}s; see logs)"
# No process is killed in a benchmark, so any failure declared is a false detection (the
# defaults must survive the CPU hogs of the slow scenario).
fd=$(cat "$OUT"/logs/*.log 2>/dev/null | grep -c "declared failed")
{
  echo
  echo "false failure detections in all jobs (none are killed here; dred's default timeouts): $fd"
} | tee -a "$OUT/ratios.txt"
[ "$fd" = 0 ] || failed=1
echo "== done in $(( $(date +%s) - t_start ))s; outputs in $OUT"
exit "$failed"
