#!/usr/bin/env bash
# run-faults.sh -- dred's fault-injection harness (`make faults`).
#
#   bash tests/faults/run-faults.sh [--trials N] [--workers P] [--bytes B] [--mode M]
#        [--seed S] [--csv FILE] [--expect STATUS] [--frac-min F] [--frac-max F]
#        [--reductions N] [--calib K] [--conc C] [--kill-at SEC|call] [--default-timeouts] [--keep]
#        (--kill-at call: the victim dies right after its dred_ireduce call returns)
#        [--kill-after-peers] (with --kill-at SEC: a self-killing victim also waits until
#                         every rank's calls of the kill step returned, bounded 30 s)
#        [--pool-buffers] (operands in dred_alloc_mem blocks: read in place, no copy in the
#                         call; the default label gets "-pool")
#        [--auto-tags]    (DRED_TAG_AUTO reductions: small ones of a one-node job meet in
#                         shared memory, lib/paths/meetpath.c; label "-auto")
#        [--blocking]     (with --auto-tags: the blocking calls, one at a time, so small
#                         ones take the fast lane, lib/shm/fast.c; label "-blocking")
#        [--op sum|affine] (affine: a non-commutative user op, the composition of affine
#                         maps, checked against the maps composed in rank order; label
#                         "-affine")
#        [--table-only]   (the table of every row already in --csv)
#        [--external]     (dred-master beside the job: dredrun --external-master; not
#                         with the node modes)
#        [--nodes N | --sim-nodes LIST]  (node modes: N simulated nodes, default 3, filled
#                         in order with master + workers; or an explicit a:3,b:3,c:3.
#                         Given with the worker, root, master, two or concurrent modes, those
#                         run on the simulated nodes too: one process lost while its node
#                         peers live on, with reductions spanning nodes)
#   (make faults TRIALS=100 WORKERS=8 BYTES=32M MODE=worker|root|master|two|concurrent|all)
#
# Every trial is a fresh job: `dredrun -n P fault_app ...` (tests/faults/fault_app.c) with a
# random root.  The app measures the failure-free time t of one step (median of --calib
# steps), runs a warm-up step, then in the kill step a fault is injected at a uniformly
# random moment f*t, f in [frac-min, frac-max] (default [0, 1]), after the start of that
# step on the victim, and then it runs one more step (started after the fault).
#   worker      SIGKILL one random non-root worker (1 reduction of B bytes per step)
#   root        SIGKILL the root                          (expected: ROOT_FAILED everywhere)
#   master      SIGKILL dred-master (by a survivor, kill(2) on its pid) (expected: MASTER_LOST)
#   two         SIGKILL two adjacent non-root workers k, k+1 at the same moment
#   concurrent  SIGKILL one random non-root worker during 16 concurrent reductions (B/16 each)
#   node        on simulated nodes (dredrun --sim-nodes, default 3 nodes): SIGKILL every
#               application process of one node -- not the master's, not the root's -- at
#               once, by pid (the root kills them; tests/faults/fault_app.c)
#   masternode  the same for the master's node: dred-master and the application processes
#               beside it (the root elsewhere)  (expected: MASTER_LOST everywhere)
#   allreduce   dred_iallreduce instead of reduce (fault_app --coll allreduce), member 0
#               gathers the result; SIGKILL one random other member: every survivor
#               checks its own result (exact, or PROC_FAILED where the victim's operand
#               was lost before it was in)
#   allreduceroot  the same, SIGKILL member 0, the holder of the gathered result (expected:
#               exact once dred-master held the whole result, ROOT_FAILED everywhere
#               before; with the node relay, the leaders' collectives end in that error
#               while their followers copy)
#   bcast       dred_ibcast from a random root; SIGKILL one random non-root member: every
#               survivor must end exact
#   bcastroot   the same, SIGKILL the root (expected: exact once dred-master held its data,
#               ROOT_FAILED everywhere before)
#   all         worker root master two concurrent: TRIALS for worker, max(TRIALS/5, 10) for the others
#
# A survivor's outcome is the status of the kill step's reductions on it: "exact" (DRED_OK
# everywhere and, at the root, every element equal to the closed-form sum), an explicit
# error (PROC_FAILED, ROOT_FAILED, MASTER_LOST, ...), "wrong" (DRED_OK with a wrong value at
# the root, in any step), "hung" (alive but no final line within the bound
# 3 * max(fail timeout, master timeout) + 10 t + 20 s after calibration), "died" (a survivor
# that vanished without its final line).  "setup": t was never measured (the job failed
# to start, or hung in its failure-free calibration -- e.g. after a false detection).  A trial's outcome is the worst survivor's
# (wrong > hung > died > mixed/error > exact).  Setup failures (no t measured) are counted
# apart.  Detection latency: the victim's kill time (written just before raise(SIGKILL))
# to the time each survivor logged "dred-master reports worker X failed" (or, master mode,
# "master lost"); dred stamps its own log lines (DRED_LOG_TIME=1), the master's are also
# stamped by a wrapper.
# Recovery time: the victim's kill time to the moment the root's last kill-step
# future returned from dred_future_get (fault_app's kill_step_done_ns, the same wall clock),
# for trials whose kill came before the root's result (hit); set against the detection of
# the last victim (det_last: kill -> "worker X declared failed" in the master's log) plus one
# combine of one reduction's operand (fault_app times MPI_Reduce_local -- and dred's own
# kernel -- of B bytes, B/C in concurrent mode, at the root after calibration, median of 5).
# CSV columns recov_ms, det_last_ms, combine_ms, kernel_ms; the table's rec_med, rec_p90,
# comb_ms, and a "recovery <mode>:" line per mode.
#
# Exit status: 0 when no trial is wrong, hung, died, failed to set up, left dred_finalize
# hanging, or (--expect S) ended on some survivor with anything but S.  Output: a table per
# mode (this invocation's trials), a CSV (default build/faults/faults.csv; rows are
# appended, delete the file to start over) and each trial's files in
# build/faults/runs/<mode>-<label>-<n>/ (rank.<r>.txt, stderr.<r>, master.err, kill.*,
# t.txt, the master's journal in store/job-<id>/).
# Timeouts: DRED_HEARTBEAT_MS / DRED_FAIL_TIMEOUT_MS / DRED_MASTER_TIMEOUT_MS from the
# environment, else 100 / 1000 / 2000 ms; --default-timeouts runs at dred's defaults.
#
# A hung trial also gets `dredstat status` of the live master (DREDSTAT or $BUILD/bin/dredstat,
# if built) in hang.status, and with FAULTS_GDB=1 every live process's stacks in hang.bt.*.
#
# Processes: each job runs in its own session (setsid); everything it leaves is found by
# pid only (pid files the app and the master wrapper write, the session's process group,
# and a per-trial marker variable DRED_FAULT_TRIAL_ID in the environment), never by name.
set -u
set +m # no job control: background jobs stay in our process group, so setsid does not fork

# The time a log line was made: dred's own stamp (DRED_LOG_TIME=1, the field before
# "[dred ...]"), else the stamp the master's wrapper put first.  The wrapper's stamp is
# late by however long it waited for the CPU, which on a loaded machine is most of a
# detection time.
log_stamp() {
  awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^\[dred/) { print $(i - 1); exit } print $1; exit }'
}

print_table() { # CSV rows (no header) on stdin
  awk -F, '
  { m = $2; seen[m] = 1; n[m]++; o = $14; c[m, o]++
    if ($18 != "") { d[m] = d[m] " " $18 }
    if ($20 != "") { tm[m] = tm[m] " " $20 }
    if ($13 == "1") { hit[m]++; if (o == "exact") hitx[m]++ }
    if ($17 ~ /fin_hung/) fh[m]++
    if ($27 != "" && $11 > 0) { win[m] += $27 / ($11 * 1000); nwin[m]++ }
    if ($26 == "1") incall[m]++
    else if ($26 == "pre") precall[m]++
    else if ($26 == "0") { after[m]++; if (o == "exact") afterx[m]++ }
    if ($13 == "1" && $28 != "") { rec[m] = rec[m] " " $28; if (o == "exact") recx[m] = recx[m] " " $28
      if ($29 != "" && $30 != "") ex[m] = ex[m] " " ($28 - $29 - $30) }
    if ($13 == "1" && $29 != "") dl[m] = dl[m] " " $29
    if ($30 != "") { cb[m] = cb[m] " " $30; cbytes[m] = $5 }
    if ($31 != "") kn[m] = kn[m] " " $31 }
  function median(s,   a, k, i, j, x) {
    k = split(s, a, " "); if (k == 0) return "-"
    for (i = 2; i <= k; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
  function pct(s, p,   a, k, i, j, x, r) { # nearest rank
    k = split(s, a, " "); if (k == 0) return "-"
    for (i = 2; i <= k; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    r = int(p * k); if (r < p * k) r++; if (r < 1) r = 1
    return a[r] }
  function cnt(s,   a) { return split(s, a, " ") }
  function f1(x) { return (x == "-") ? x : sprintf("%.1f", x) }
  function f3(x) { return (x == "-") ? x : sprintf("%.3f", x) }
  END {
    printf "%-11s %6s %5s %7s %7s %11s %11s %11s %6s %6s %5s %5s %5s %5s %6s %9s %9s %7s %7s %9s %8s %8s %8s %8s\n", "mode", "trials", "hit", "hit_ex", "exact", "PROC_FAILED", "ROOT_FAILED", "MASTER_LOST", "other", "mixed", "wrong", "hung", "died", "setup", "finhng", "det_ms", "told_ms", "in_call", "window", "after_ex", "rec_med", "rec_p90", "comb_ms", "pre_call"
    nm = split("worker root master two concurrent node masternode allreduce allreduceroot bcast bcastroot", order, " ")
    for (i = 1; i <= nm; i++) { m = order[i]; if (!(m in seen)) continue
      oth = n[m] - c[m, "exact"] - c[m, "PROC_FAILED"] - c[m, "ROOT_FAILED"] - c[m, "MASTER_LOST"] - c[m, "mixed"] - c[m, "wrong"] - c[m, "hung"] - c[m, "died"] - c[m, "setup"]
      printf "%-11s %6d %5d %7d %7d %11d %11d %11d %6d %6d %5d %5d %5d %5d %6d %9s %9s %7s %7s %9s %8s %8s %8s %8s\n", m, n[m], hit[m], hitx[m], c[m, "exact"], c[m, "PROC_FAILED"], c[m, "ROOT_FAILED"], c[m, "MASTER_LOST"], oth, c[m, "mixed"], c[m, "wrong"], c[m, "hung"], c[m, "died"], c[m, "setup"], fh[m], median(d[m]), median(tm[m]), (m ~ /master/ ? "-" : incall[m] + 0), (m ~ /master/ || !nwin[m] ? "-" : sprintf("%.1f", n[m] * win[m] / nwin[m])), (m ~ /master/ || !after[m] ? "-" : sprintf("%d/%d", afterx[m], after[m])), f1(median(rec[m])), f1(pct(rec[m], 0.9)), f3(median(cb[m])), (m ~ /master|node/ ? "-" : precall[m] + 0) }
    print "hit: the kill came before the root finished the kill step (hit_ex: of those, exact); det_ms: median kill -> dred-master declares the worker failed; told_ms: median kill -> last survivor told (FAILED, or master lost)"
    print "in_call: the kill came while the victim was still inside dred_ireduce, its operand only in its own memory (not recoverable by any replica); window: in_call as predicted by seed 002 eq. 5 -- trials x mean(hand-over time in dred_ireduce / t), from the calibration steps; after_ex: exact / trials whose kill came after the victim\x27s calls returned; pre_call: kills before the victim\x27s first call of the step began (it had handed nothing to dred: the reduction cannot finish; not counted in in_call)"
    print "rec_med, rec_p90: kill -> the root\x27s last kill-step future returned (its result or its error), median and p90 over the hit trials; comb_ms: median over trials of one combine of one reduction\x27s operand (MPI_Reduce_local, MPI_SUM of doubles, timed at the root)"
    for (i = 1; i <= nm; i++) { m = order[i]; if (!(m in seen) || m ~ /master/) continue
      dc = (median(dl[m]) == "-" || median(cb[m]) == "-") ? "-" : sprintf("%.1f", median(dl[m]) + median(cb[m]))
      printf "recovery %s: kill -> root result over %d of %d hit trials: median %s ms, p90 %s ms (exact hits only: %d, median %s ms, p90 %s ms); detection over those hits (kill -> last victim declared) median %s ms + one combine of %s bytes %s ms (dred\x27s kernel %s ms) = %s ms; per trial recov - det - combine: median %s ms, p90 %s ms (%d trials)\n", m, cnt(rec[m]), hit[m], f1(median(rec[m])), f1(pct(rec[m], 0.9)), cnt(recx[m]), f1(median(recx[m])), f1(pct(recx[m], 0.9)), f1(median(dl[m])), cbytes[m], f3(median(cb[m])), f3(median(kn[m])), dc, f1(median(ex[m])), f1(pct(ex[m], 0.9)), cnt(ex[m]) } }'
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root_dir="$(cd "$here/../.." && pwd)"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$root_dir/$BUILD" ;; esac

trials=${TRIALS:-100}
workers=${WORKERS:-8}
bytes=${BYTES:-32M}
mode=${MODE:-worker}
seed=${SEED:-$$}
csv=""
expect=""
frac_min=0
frac_max=1
kill_at_abs="" # --kill-at SEC: a fixed moment instead of f*t
after_peers=0  # --kill-after-peers: a self-kill waits for every rank's calls to return too
reductions=3 # warm-up, kill step, one step started after the fault
calib=3
conc=""
default_timeouts=0
keep=${KEEP:-0}
label=""
table_only=0 # --table-only: print the table of every row of --csv and exit
nnodes=3     # node modes: simulated nodes
sim_nodes="" # or an explicit layout
nodes_given=0 # --nodes / --sim-nodes: the other modes run on simulated nodes too
auto_tags=0    # --auto-tags: DRED_TAG_AUTO reductions (small ones meet in shared memory)
blocking=0     # --blocking: the blocking calls, auto-tagged (small ones: the fast lane)
pool_buffers=0 # --pool-buffers: fault_app takes its operands from dred_alloc_mem
external=0     # --external: dred-master beside the job (dredrun --external-master)
op=sum         # --op affine: a non-commutative user op (tests/faults/fault_app.c)

while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --frac-min) frac_min=$2; shift 2 ;;
    --frac-max) frac_max=$2; shift 2 ;;
    --kill-at) kill_at_abs=$2; shift 2 ;;
    --kill-after-peers) after_peers=1; shift ;;
    --reductions) reductions=$2; shift 2 ;;
    --calib) calib=$2; shift 2 ;;
    --conc) conc=$2; shift 2 ;;
    --default-timeouts) default_timeouts=1; shift ;;
    --keep) keep=1; shift ;;
    --label) label=$2; shift 2 ;;
    --table-only) table_only=1; shift ;;
    --nodes) nnodes=$2; nodes_given=1; shift 2 ;;
    --sim-nodes) sim_nodes=$2; nodes_given=1; shift 2 ;;
    --pool-buffers) pool_buffers=1; shift ;;
    --auto-tags) auto_tags=1; shift ;;
    --blocking) auto_tags=1; blocking=1; shift ;;
    --external) external=1; shift ;;
    --op) op=$2; shift 2 ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "run-faults.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

if [ "$table_only" = 1 ]; then
  [ -n "$csv" ] || csv="$BUILD/faults/faults.csv"
  tail -n +2 "$csv" | print_table
  exit 0
fi

DREDRUN="$BUILD/bin/dredrun"
MASTER_BIN="$BUILD/bin/dred-master"
APP="$BUILD/tests/fault_app"
for f in "$DREDRUN" "$MASTER_BIN" "$APP" "$BUILD/bin/dred-launch"; do
  [ -x "$f" ] || { echo "run-faults.sh: $f missing (build it first)" >&2; exit 2; }
done
[ "$workers" -ge 3 ] || { echo "run-faults.sh: need at least 3 workers" >&2; exit 2; }
case "$op" in sum|affine) ;; *) echo "run-faults.sh: --op sum|affine, not $op" >&2; exit 2 ;; esac
if [ "$external" = 1 ] && [[ "$mode" == *node* || "$mode" == all || "$nodes_given" = 1 ]]; then
  # The node modes place processes by world rank with the master as rank 0.
  echo "run-faults.sh: --external runs the worker, root, master, two and concurrent modes" >&2; exit 2
fi

# Bytes with a K/M/G suffix.
to_bytes() {
  local v=$1 n
  case "$v" in
    *[kK]) n=$(( ${v%?} * 1024 )) ;;
    *[mM]) n=$(( ${v%?} * 1024 * 1024 )) ;;
    *[gG]) n=$(( ${v%?} * 1024 * 1024 * 1024 )) ;;
    *) n=$v ;;
  esac
  echo "$n"
}
nbytes=$(to_bytes "$bytes")

# Simulated nodes for the node modes: node_cnt[i] processes on node i, filled in world-rank
# order (the master is world rank 0, application rank r is world rank r + 1).
node_cnt=()
if [ -n "$sim_nodes" ]; then
  IFS=',' read -r -a _parts <<<"$sim_nodes"
  for _p in "${_parts[@]}"; do node_cnt+=("${_p#*:}"); done
else
  _total=$((workers + 1)); _left=$_total
  for ((_i = 0; _i < nnodes; _i++)); do
    _c=$(( (_left + nnodes - _i - 1) / (nnodes - _i) )); node_cnt+=("$_c"); _left=$((_left - _c))
  done
  _names=(a b c d e f g h i j k l)
  sim_nodes=""
  for ((_i = 0; _i < nnodes; _i++)); do sim_nodes+="${sim_nodes:+,}${_names[$_i]}:${node_cnt[$_i]}"; done
fi
node_of_rank() { # application rank -> node index
  local w=$(( $1 + 1 )) i acc=0
  for ((i = 0; i < ${#node_cnt[@]}; i++)); do
    acc=$((acc + node_cnt[i])); [ "$w" -lt "$acc" ] && { echo "$i"; return; }
  done
  echo -1
}
ranks_on_node() { # node index -> application ranks, space-separated
  local r out=""
  for ((r = 0; r < workers; r++)); do [ "$(node_of_rank "$r")" = "$1" ] && out+="$r "; done
  echo "$out"
}

if [ "$default_timeouts" = 1 ]; then
  unset DRED_HEARTBEAT_MS DRED_FAIL_TIMEOUT_MS DRED_MASTER_TIMEOUT_MS
  hb=500; fto=5000; mto=10000
else
  hb=${DRED_HEARTBEAT_MS:-100}; fto=${DRED_FAIL_TIMEOUT_MS:-1000}; mto=${DRED_MASTER_TIMEOUT_MS:-2000}
  export DRED_HEARTBEAT_MS=$hb DRED_FAIL_TIMEOUT_MS=$fto DRED_MASTER_TIMEOUT_MS=$mto
fi
pool_flag=""
[ "$pool_buffers" = 1 ] && pool_flag=--pool-buffers
auto_flag=""
[ "$auto_tags" = 1 ] && auto_flag=--auto-tags
block_flag=""
[ "$blocking" = 1 ] && block_flag=--blocking
[ -n "$label" ] || { label="hb${hb}-ft${fto}-mt${mto}"; [ -n "$pool_flag" ] && label="$label-pool"
  [ "$nodes_given" = 1 ] && label="$label-n${#node_cnt[@]}"
  [ "$op" != sum ] && label="$label-$op"; [ -n "$auto_flag" ] && label="$label-auto"; [ -n "$block_flag" ] && label="$label-blocking"; }

outbase="$BUILD/faults"
runs="$outbase/runs"
mkdir -p "$runs"
[ -n "$csv" ] || csv="$outbase/faults.csv"
case "$csv" in /*) ;; *) csv="$PWD/$csv" ;; esac
mkdir -p "$(dirname "$csv")"
if [ ! -s "$csv" ]; then
  echo "trial,mode,label,workers,bytes,conc,root,victims,kill_frac,kill_at_s,t_s,kill_step_root_s,kill_before_root_done,outcome,survivors,post_step,finalize,det_master_ms,told_min_ms,told_max_ms,leftover,calib_s,done_s,trial_s,dir,in_call,handover_ms,recov_ms,det_last_ms,combine_ms,kernel_ms" >"$csv"
fi

RANDOM=$seed

# ---- helpers -----------------------------------------------------------------------------

alive() { # alive PID: exists and is not a zombie
  local st
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || return 1
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

rand_int() { # rand_int N -> 0..N-1
  echo $(( (RANDOM * 32768 + RANDOM) % $1 ))
}

rand_frac() { # uniform in [frac_min, frac_max]
  local r=$(( RANDOM * 32768 + RANDOM ))
  awk -v r="$r" -v a="$frac_min" -v b="$frac_max" 'BEGIN { printf "%.6f", a + (b - a) * r / 1073741824 }'
}

now_s() { date +%s.%N; }

# Pids of processes whose environment carries our trial marker (same user only).
marked_pids() {
  # One grep over every environ file (-z: NUL-separated entries): a shell loop that forks
  # per process takes seconds on a loaded machine with a hundred processes.
  grep -l -a -z -x -F "DRED_FAULT_TRIAL_ID=$1" /proc/[0-9]*/environ 2>/dev/null |
    sed -e 's|^/proc/||' -e 's|/environ$||'
}

# All pids a trial recorded: ranks and their dred-launch, master and its launcher, the
# master log's time-stamper.
recorded_pids() {
  local d=$1 f
  for f in "$d"/pid.* "$d/master.pid" "$d/ts.pid"; do
    [ -f "$f" ] && tr ' ' '\n' <"$f"
  done | grep -E '^[0-9]+$' | sort -u
}

# ---- one trial -------------------------------------------------------------------------

fail_count=0
pass_count=0

run_trial() { # run_trial MODE N
  local m=$1 n=$2 dir marker c b root v killrank frac t0 mpid tfile t bound coll
  local survivors r i vlist told_min told_max det kill_ns left trial_s
  local start_deadline now

  dir="$runs/$m-$label-$n"
  rm -rf "$dir"
  mkdir -p -m 700 "$dir/store"
  marker="dredfault-$$-$m-$n-$RANDOM"

  c=1; b=$nbytes
  if [ "$m" = concurrent ]; then c=${conc:-16}; b=$(( nbytes / c )); elif [ -n "$conc" ]; then c=$conc; fi
  root=$(rand_int "$workers")
  coll=reduce
  case "$m" in
    allreduce) coll=allreduce; root=0
      v=$(( 1 + $(rand_int $((workers - 1))) )); vlist="$v"; killrank="$v" ;;
    bcast) coll=bcast
      v=$(( (root + 1 + $(rand_int $((workers - 1)))) % workers )); vlist="$v"; killrank="$v" ;;
    bcastroot) coll=bcast; v=$root; vlist="$v"; killrank="$v" ;;
    allreduceroot) coll=allreduce; root=0; v=0; vlist="$v"; killrank="$v" ;;
    worker|concurrent)
      v=$(( (root + 1 + $(rand_int $((workers - 1)))) % workers )); vlist="$v"; killrank="$v" ;;
    root)
      v=$root; vlist="$v"; killrank="$v" ;;
    master)
      v=$(rand_int "$workers"); vlist="master"; killrank="$v" ;;
    node) # every application rank of one node other than the master's (0) and the root's
      local vn nodes_n=${#node_cnt[@]} cand=()
      [ "$nodes_n" -ge 2 ] || { echo "run-faults.sh: mode node needs 2+ nodes" >&2; exit 2; }
      vn=$(( 1 + $(rand_int $((nodes_n - 1))) ))
      for ((i = 0; i < workers; i++)); do [ "$(node_of_rank "$i")" != "$vn" ] && cand+=("$i"); done
      root=${cand[$(rand_int ${#cand[@]})]} # any rank off the victim node
      v=$(ranks_on_node "$vn"); v=${v% }
      [ -n "$v" ] || { echo "run-faults.sh: node $vn has no application process" >&2; exit 2; }
      vlist="${v// /;}"; killrank="${v// /,}" ;;
    masternode) # dred-master's node: the master and every application rank beside it
      local cand=()
      for ((i = 0; i < workers; i++)); do [ "$(node_of_rank "$i")" != 0 ] && cand+=("$i"); done
      [ "${#cand[@]}" -ge 1 ] || { echo "run-faults.sh: every process is on the master's node" >&2; exit 2; }
      root=${cand[$(rand_int ${#cand[@]})]}
      v=$(ranks_on_node 0); v=${v% }
      vlist="${v// /;}"; killrank="${v// /,}" ;;
    two) # k and k+1 (mod P), neither the root
      v=$(( (root + 1 + $(rand_int $((workers - 2)))) % workers ))
      vlist="$v;$(( (v + 1) % workers ))"; killrank="$v,$(( (v + 1) % workers ))" ;;
    *) echo "run-faults.sh: unknown mode $m" >&2; exit 2 ;;
  esac
  frac=$(rand_frac)
  local layout="" ucx_tls="${UCX_TLS:-}"
  # Node modes, and every mode under --nodes / --sim-nodes: the simulated nodes talk over
  # UCX's TCP transport, as real nodes talk over
  # a network.  dredrun's --sim-nodes default (UCX shared memory, no CMA, no TCP) is right
  # for failure-free jobs, but a victim killed halfway through writing into a survivor's
  # shared-memory receive FIFO blocked that survivor (1 of 24 trials), which a lost remote
  # node cannot do.  After a failure dred skips MPI_Finalize, so UCX's TCP cleanup hang
  # (openucx/ucx#8738) does not bite here.
  if [ "$nodes_given" = 1 ] || [ "$m" = node ] || [ "$m" = masternode ]; then
    layout=$sim_nodes; [ -n "$ucx_tls" ] || ucx_tls=self,tcp
  fi

  cat >"$dir/master.sh" <<EOF
#!/usr/bin/env bash
# dred-master with its pid recorded and every stderr line time-stamped (wall clock).
echo "\$\$ \$PPID" >"$dir/master.pid"
# The time-stamper ignores SIGUSR1: Hydra sends it to every process when one dies, and a
# dead stamper took the master's log with it (no detection times in node trials).
exec 2> >(trap '' USR1; while IFS= read -r l; do printf '%s %s\n' "\$EPOCHREALTIME" "\$l"; done >"$dir/master.err")
echo "\$!" >"$dir/ts.pid"
exec "$MASTER_BIN" "\$@"
EOF
  chmod +x "$dir/master.sh"

  t0=$(now_s)
  mkdir -p "$dir/tmp" # TMPDIR: the job's control directory goes here, checked at the end
  env DRED_FAULT_TRIAL_ID="$marker" DRED_MASTER="$dir/master.sh" DRED_STORAGE_DIR="$dir/store" \
    TMPDIR="$dir/tmp" \
    DRED_LOG_TIME=1 ${ucx_tls:+UCX_TLS="$ucx_tls"} \
    setsid "$DREDRUN" ${layout:+--sim-nodes "$layout"} $([ "$external" = 1 ] && echo --external-master) -n "$workers" "$APP" --outdir "$dir" --bytes "$b" --concurrent "$c" \
    --root "$root" --calib "$calib" --reductions "$reductions" --kill-index 1 \
    --victim-mode "$m" --kill-rank "$killrank" --kill-frac "$frac" ${kill_at_abs:+--kill-at "$kill_at_abs"} \
    $([ "$after_peers" = 1 ] && echo --kill-after-peers) --master-pid-file "$dir/master.pid" ${pool_flag:+"$pool_flag"} ${auto_flag:+"$auto_flag"} ${block_flag:+"$block_flag"} --op "$op" --coll "$coll" \
    >"$dir/dredrun.out" 2>&1 </dev/null &
  mpid=$!
  echo "$mpid" >"$dir/mpiexec.pid"

  # Phase 1: calibration (t.txt), bounded; phase 2: every survivor's final line, bounded.
  tfile="$dir/t.txt"
  start_deadline=$(awk -v a="$t0" -v w="$workers" -v b="$b" -v c="$c" \
    'BEGIN { printf "%.3f", a + 90 + (4 + 2 * '"$calib"') * w * b * c / 5e7 }')
  while [ ! -s "$tfile" ]; do
    now=$(now_s)
    if awk -v a="$now" -v d="$start_deadline" 'BEGIN { exit !(a > d) }'; then break; fi
    if ! alive "$mpid" && [ ! -s "$tfile" ]; then sleep 0.5; [ -s "$tfile" ] || break; fi
    sleep 0.1
  done
  survivors=()
  for ((r = 0; r < workers; r++)); do
    case ";$vlist;" in *";$r;"*) [ "$m" != master ] && continue ;; esac
    survivors+=("$r")
  done
  t=""
  [ -s "$tfile" ] && t=$(cat "$tfile")
  local calib_s done_s
  calib_s=$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }')
  if [ -n "$t" ]; then
    bound=$(awk -v now="$(now_s)" -v t="$t" -v f="$fto" -v mt="$mto" \
      'BEGIN { m = (f > mt) ? f : mt; printf "%.3f", now + 3 * m / 1000 + 10 * t + 20 }')
    while :; do
      local pending=0
      for r in "${survivors[@]}"; do
        if ! grep -q '^exit' "$dir/rank.$r.txt" 2>/dev/null; then
          if [ -f "$dir/pid.$r" ] && alive "$(cut -d' ' -f1 "$dir/pid.$r")"; then pending=1; fi
        fi
      done
      [ "$pending" = 0 ] && break
      now=$(now_s)
      awk -v a="$now" -v d="$bound" 'BEGIN { exit !(a > d) }' && break
      sleep 0.1
    done
    # survivors that wrote "exit" get a moment to actually leave
    for ((i = 0; i < 30; i++)); do
      left=0
      for r in "${survivors[@]}"; do
        [ -f "$dir/pid.$r" ] && alive "$(cut -d' ' -f1 "$dir/pid.$r")" && left=$((left + 1))
      done
      [ "$left" = 0 ] && break
      sleep 0.1
    done
  fi

  done_s=$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }')
  # ---- classify (before killing anything: hung = alive without its final line) ----------
  local worst="exact" o st kill_step_root before
  local -a per=() posts=() fins=()
  local nexact=0 nerr=0 errkinds=""
  for r in "${survivors[@]}"; do
    local f="$dir/rank.$r.txt" pid=""
    [ -f "$dir/pid.$r" ] && pid=$(cut -d' ' -f1 "$dir/pid.$r")
    if [ -z "$t" ]; then o="setup"
    elif grep -q '^final' "$f" 2>/dev/null; then
      o=$(awk '/^final/ { for (i = 1; i <= NF; i++) if ($i ~ /^outcome=/) { sub("outcome=", "", $i); print $i } }' "$f")
      [ "$o" = OK ] && o=exact
      [ "$o" = WRONG ] && o=wrong
    elif [ -n "$pid" ] && alive "$pid"; then o="hung"
    else o="died"
    fi
    per+=("$r:$o")
    st=$(awk '/^red phase=main step=2 / { for (i = 1; i <= NF; i++) if ($i ~ /^name=/) { sub("name=", "", $i); s = s (s ? "/" : "") $i } } END { print s }' "$f" 2>/dev/null)
    posts+=("$r:${st:-none}")
    st=$(awk '/^finalize/ { for (i = 1; i <= NF; i++) if ($i ~ /^name=/) { sub("name=", "", $i); print $i } }' "$f" 2>/dev/null)
    if [ -z "$st" ]; then
      if [ -n "$pid" ] && alive "$pid"; then st="fin_hung"; else st="none"; fi
    fi
    fins+=("$r:$st")
    case "$o" in
      exact) nexact=$((nexact + 1)) ;;
      wrong|hung|died|setup) ;;
      *) nerr=$((nerr + 1)); case " $errkinds " in *" $o "*) ;; *) errkinds="$errkinds $o" ;; esac ;;
    esac
  done
  if printf '%s\n' "${per[@]}" | grep -q ':wrong$'; then worst=wrong
  elif printf '%s\n' "${per[@]}" | grep -q ':hung$'; then worst=hung
  elif printf '%s\n' "${per[@]}" | grep -q ':died$'; then worst=died
  elif printf '%s\n' "${per[@]}" | grep -q ':setup$'; then worst=setup
  elif [ "$nerr" = 0 ]; then worst=exact
  elif [ "$nexact" = 0 ] && [ "$(echo "$errkinds" | wc -w)" = 1 ]; then worst=$(echo "$errkinds" | tr -d ' ')
  else worst="mixed"
  fi

  # ---- detection latency ---------------------------------------------------------------
  kill_ns=""
  if [ "$m" = master ] || [ "$m" = masternode ]; then
    [ -s "$dir/kill.master" ] && kill_ns=$(cat "$dir/kill.master")
  else
    [ -s "$dir/kill.${vlist%%;*}" ] && kill_ns=$(cat "$dir/kill.${vlist%%;*}")
  fi
  det=""; told_min=""; told_max=""
  if [ -n "$kill_ns" ]; then
    local w1=0 pat ts all=""
    if [ "$m" = master ] || [ "$m" = masternode ]; then pat="master lost"; else w1=$(( ${vlist%%;*} + 1 )); pat="dred-master reports worker $w1 failed"; fi
    for r in "${survivors[@]}"; do
      ts=$(grep -m1 -F "$pat" "$dir/stderr.$r" 2>/dev/null | log_stamp)
      [ -n "$ts" ] && all="$all $ts"
    done
    if [ -n "$all" ]; then
      told_min=$(echo "$all" | tr ' ' '\n' | grep . | awk -v k="$kill_ns" 'NR == 1 || $1 < m { m = $1 } END { printf "%.1f", (m - k / 1e9) * 1000 }')
      told_max=$(echo "$all" | tr ' ' '\n' | grep . | awk -v k="$kill_ns" 'NR == 1 || $1 > m { m = $1 } END { printf "%.1f", (m - k / 1e9) * 1000 }')
    fi
    if [ "$m" != master ] && [ "$m" != masternode ]; then
      ts=$(grep -m1 -F "worker $w1 declared failed" "$dir/master.err" 2>/dev/null | log_stamp)
      [ -n "$ts" ] && det=$(awk -v a="$ts" -v k="$kill_ns" 'BEGIN { printf "%.1f", (a - k / 1e9) * 1000 }')
    fi
  fi
  # did the fault hit a running reduction?  (kill before the root finished the kill step)
  kill_step_root=$(awk '/^final/ { for (i = 1; i <= NF; i++) if ($i ~ /^kill_step_sec=/) { sub("kill_step_sec=", "", $i); print $i } }' "$dir/rank.$root.txt" 2>/dev/null)
  before=""
  if [ -n "$kill_ns" ]; then
    local rdone
    # got_ns: when the root's future returned, before its check of the result (a slow
    # check -- a user op's closed form -- must not make a later kill count as a hit)
    rdone=$(awk '/^red phase=main step=1 / { v = ""; for (i = 1; i <= NF; i++) { if ($i ~ /^wall_ns=/ && v == "") { sub("wall_ns=", "", $i); v = $i } if ($i ~ /^got_ns=/ && $i != "got_ns=0") { sub("got_ns=", "", $i); v = $i } } if (v > m) m = v } END { if (m) print m }' "$dir/rank.$root.txt" 2>/dev/null)
    if [ -n "$rdone" ]; then before=$(awk -v k="$kill_ns" -v d="$rdone" 'BEGIN { print (k < d) ? 1 : 0 }'); else before=1; fi
  fi
  # recovery: the kill -> the moment the root's last kill-step future returned (fault_app's
  # kill_step_done_ns, CLOCK_REALTIME like kill.<r>), for trials whose kill came before the
  # root's result; against the detection of the last victim (its "declared failed" in the
  # master's log) and one combine of one reduction's operand (timed by the root's fault_app).
  local done_ns comb kern recov="" det_last=""
  done_ns=$(awk '/^final/ { for (i = 1; i <= NF; i++) if ($i ~ /^kill_step_done_ns=/) { sub("kill_step_done_ns=", "", $i); print $i } }' "$dir/rank.$root.txt" 2>/dev/null)
  comb=$(awk '/^combine / { for (i = 1; i <= NF; i++) if ($i ~ /^mpi_reduce_local_ms=/) { sub("mpi_reduce_local_ms=", "", $i); if ($i + 0 >= 0) print $i } }' "$dir/rank.$root.txt" 2>/dev/null)
  kern=$(awk '/^combine / { for (i = 1; i <= NF; i++) if ($i ~ /^dred_kernel_ms=/) { sub("dred_kernel_ms=", "", $i); if ($i + 0 >= 0) print $i } }' "$dir/rank.$root.txt" 2>/dev/null)
  if [ "$before" = 1 ] && [ -n "$done_ns" ] && [ "$done_ns" != 0 ]; then
    recov=$(awk -v d="$done_ns" -v k="$kill_ns" 'BEGIN { printf "%.1f", (d - k) / 1e6 }')
  fi
  if [ -n "$kill_ns" ] && [ "$m" != master ] && [ "$m" != masternode ]; then
    local v ts dmax=""
    for v in ${vlist//;/ }; do
      ts=$(grep -m1 -F "worker $((v + 1)) declared failed" "$dir/master.err" 2>/dev/null | log_stamp)
      [ -n "$ts" ] || { dmax=""; break; }
      dmax=$(awk -v a="$ts" -v b="$dmax" 'BEGIN { print (b == "" || a > b) ? a : b }')
    done
    [ -n "$dmax" ] && det_last=$(awk -v a="$dmax" -v k="$kill_ns" 'BEGIN { printf "%.1f", (a - k / 1e9) * 1000 }')
  fi
  # did it land while a victim was still inside dred_ireduce (its operand not yet handed
  # over: only in its own memory)?  fault_app writes called.<r> once its calls returned,
  # kill.<r> just before it dies, and with a self-kill entered.<r>: when its first call
  # began (0: not yet).  Any victim in its call counts (mode two has two): in_call 1; a
  # kill before every victim's call began (nothing handed to dred yet): "pre"; else 0.
  in_call=""
  if [ -n "$kill_ns" ] && [ "$m" != master ] && [ "$m" != masternode ]; then
    local called entered v k pre=1
    in_call=0
    for v in ${vlist//;/ }; do
      k=$(cat "$dir/kill.$v" 2>/dev/null); [ -n "$k" ] || k=$kill_ns
      called=$(cat "$dir/called.$v" 2>/dev/null)
      entered=$(cat "$dir/entered.$v" 2>/dev/null)
      if [ -z "$entered" ] || [ "$(awk -v k="$k" -v e="$entered" 'BEGIN { print (e > 0 && k >= e) ? 1 : 0 }')" = 1 ]; then pre=0; fi
      if [ -z "$called" ] || [ "$(awk -v k="$k" -v c="$called" 'BEGIN { print (k < c) ? 1 : 0 }')" = 1 ]; then in_call=1; fi
    done
    [ "$in_call" = 1 ] && [ "$pre" = 1 ] && in_call=pre
  fi

  # the hand-over window (seed 002, eq. 5: a kill before the operand left the process is
  # unrecoverable): time inside dred_ireduce per step, summed over the step's calls, mean
  # over the non-root ranks' calibration steps.  handover_ms / t predicts in_call's rate.
  handover=$(for r in $(seq 0 $((workers - 1))); do
      [ "$r" = "$root" ] && continue
      awk '/^red phase=calib / { for (i = 1; i <= NF; i++) { if ($i ~ /^step=/) s = $i; if ($i ~ /^call_ms=/) { sub("call_ms=", "", $i); w[s] += $i } } }
           END { for (s in w) print w[s] }' "$dir/rank.$r.txt" 2>/dev/null
    done | awk '{ x += $1; k++ } END { if (k) printf "%.2f", x / k }')

  # ---- a hung trial: what the live processes say, before they are killed ------------------
  if [ "$worst" = hung ] || printf '%s\n' "${fins[@]}" | grep -q ':fin_hung$'; then
    local stat_bin="${DREDSTAT:-$BUILD/bin/dredstat}"
    local sock # one job per trial directory: its job-<id> subdirectory holds the socket
    sock="$(ls -d "$dir"/store/job-*/dred-master.sock 2>/dev/null | head -1)"
    if [ -x "$stat_bin" ] && [ -n "$sock" ] && [ -S "$sock" ]; then
      timeout 10 "$stat_bin" status "$sock" >"$dir/hang.status" 2>&1
    fi
    if [ "${FAULTS_GDB:-0}" = 1 ] && command -v gdb >/dev/null; then
      for r in "${survivors[@]}" master; do
        local gp
        if [ "$r" = master ]; then gp=$(cut -d' ' -f1 "$dir/master.pid" 2>/dev/null); else gp=$(cut -d' ' -f1 "$dir/pid.$r" 2>/dev/null); fi
        alive "$gp" && timeout 30 gdb -p "$gp" -batch -ex 'thread apply all bt' >"$dir/hang.bt.$r" 2>&1
      done
    fi
  fi

  # ---- clean up by pid -------------------------------------------------------------------
  local p leftover=0
  for p in $(recorded_pids "$dir"); do
    if alive "$p"; then leftover=$((leftover + 1)); kill -KILL "$p" 2>/dev/null; fi
  done
  if alive "$mpid"; then kill -KILL -- "-$mpid" 2>/dev/null; kill -KILL "$mpid" 2>/dev/null; fi
  for p in $(marked_pids "$marker"); do kill -KILL "$p" 2>/dev/null; done
  wait "$mpid" 2>/dev/null
  sleep 0.2
  for p in $(marked_pids "$marker"); do kill -KILL "$p" 2>/dev/null; done
  # What the job left on disk: survivors remove a dead node peer's control socket and
  # replica store (lib/engine/runtime.c, lib/robust/replicate.c), so once every process is gone
  # only the master's journal may remain -- except after a node loss, whose files are the
  # lost node's (here all simulated nodes share one disk).
  local left_files=""
  case "$m" in node|masternode) ;; *)
    [ "$leftover" = 0 ] && left_files=$(cd "$dir" && ls -d tmp/dred-ctl-* tmp/dred-ctl-*/* \
      store/job-*/dred-replica-* 2>/dev/null | tr '\n' ' ') ;;
  esac
  # replica stores are big: keep only the master's journal (dredstat summary/trace)
  [ "$keep" = 1 ] || find "$dir/store" -maxdepth 2 -name 'dred-replica-*' -delete 2>/dev/null

  trial_s=$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }')
  local kill_at
  if [ -n "$kill_at_abs" ]; then
    kill_at=$kill_at_abs; frac=$(awk -v k="$kill_at_abs" -v t="${t:-0}" 'BEGIN { printf "%.6f", (t > 0 ? k / t : 0) }')
  else
    kill_at=$(awk -v f="$frac" -v t="${t:-0}" 'BEGIN { printf "%.4f", f * t }')
  fi
  echo "$n,$m,$label,$workers,$b,$c,$root,$(echo "$vlist" | tr ';' ' '),$frac,$kill_at,${t:-},${kill_step_root:-},${before:-},$worst,$(IFS=' '; echo "${per[*]}"),$(IFS=' '; echo "${posts[*]}"),$(IFS=' '; echo "${fins[*]}"),${det:-},${told_min:-},${told_max:-},$leftover,$calib_s,$done_s,$trial_s,$dir,$in_call,${handover:-},${recov:-},${det_last:-},${comb:-},${kern:-}" >>"$csv"

  # ---- verdict ---------------------------------------------------------------------------
  local ok=1 why=""
  case "$worst" in wrong|hung|died|setup) ok=0; why="$worst" ;; esac
  if [ -n "$expect" ] && [ "$ok" = 1 ]; then
    for o in "${per[@]}"; do [ "${o#*:}" = "$expect" ] || { ok=0; why="expected $expect, got ${per[*]}"; }; done
  fi
  if printf '%s\n' "${fins[@]}" | grep -q ':fin_hung$'; then ok=0; why="${why:+$why; }dred_finalize hung"; fi
  if [ -n "$left_files" ]; then ok=0; why="${why:+$why; }left behind: $left_files"; fi
  if [ "$ok" = 1 ]; then pass_count=$((pass_count + 1)); else fail_count=$((fail_count + 1)); fi
  printf '[%s %3d] root=%d victim=%-5s f=%.3f t=%6.3fs hit=%-1s -> %-11s told=%s..%s ms  rec=%s ms  post=%s  fin=%s  %ss%s\n' \
    "$m" "$n" "$root" "$(echo "$vlist" | tr ';' ',')" "$frac" "${t:-0}" "${before:--}" "$worst" \
    "${told_min:--}" "${told_max:--}" "${recov:--}" "$(printf '%s\n' "${posts[@]}" | cut -d: -f2 | tr '/' '\n' | sort | uniq -c | awk '{printf "%s%sx%s", (NR>1?",":""), $1, $2}')" \
    "$(printf '%s\n' "${fins[@]}" | cut -d: -f2 | sort | uniq -c | awk '{printf "%s%sx%s", (NR>1?",":""), $1, $2}')" \
    "$trial_s" "$([ "$ok" = 1 ] && echo "" || echo "  FAIL: $why ($dir)")"
}


# ---- main -------------------------------------------------------------------------------

if [ "$mode" = all ]; then
  modes=(worker root master two concurrent)
else
  IFS=',' read -r -a modes <<<"$mode"
fi
other=$(( trials / 5 )); [ "$other" -lt 10 ] && other=10; [ "$other" -gt "$trials" ] && other=$trials

echo "dred fault injection: modes ${modes[*]}, $workers workers, $bytes per reduction, seed $seed," \
  "DRED_HEARTBEAT_MS=$hb DRED_FAIL_TIMEOUT_MS=$fto DRED_MASTER_TIMEOUT_MS=$mto, kill at f*t, f in [$frac_min, $frac_max]"
csv_first=$(wc -l <"$csv")
for m in "${modes[@]}"; do
  k=$trials
  [ "$mode" = all ] && [ "$m" != worker ] && k=$other
  for ((n = 1; n <= k; n++)); do run_trial "$m" "$n"; done
done

# ---- table (this run's rows only) -------------------------------------------------------
echo
tail -n +$((csv_first + 1)) "$csv" | print_table
echo "CSV: $csv"
echo "$pass_count passed, $fail_count failed"
[ "$fail_count" = 0 ]
