#!/usr/bin/env bash
# device-faults.sh -- the prepared fault run for a lent many-core machine (no MPICH, no
# package registry there): node losses where two nodes' worth of links close in one turn
# of dred-master's loop, which two cores rarely give and sixteen do.
#
#   here:   bash ../shared/bundle/make-bundle.sh           # packs MPICH + this build
#   there:  source .devbundle/env.sh && bash tests/faults/device-faults.sh [--trials N]
#           [--out DIR] [--layout a:5,b:5,c:6] [--bytes 8M] [--seed S]
#           [--mix LAYOUT [--mix-trials N] [--mix-seconds S]] [--seconds S]
#
# What it runs: tests/faults/run-faults.sh --mode node on simulated nodes (default
# a:5,b:5,c:6: 15 workers and dred-master, the layout where one of 15 trials hung on a
# 16-core machine before the scheduler queued FAILED behind the TASKs it had decided), 8 MiB
# SUM reductions, dred's default timeouts, --trials N (default 30).  Every survivor checks
# its result against the exact value; a trial that hangs is reported as hung (run-faults.sh
# bounds each one); each trial's logs are kept in DIR/runs.  The programs come from the
# bundle (PATH): run-faults.sh is pointed at a folder of links to them.  The whole run is
# bounded by --seconds S (default 540, within one device command's 600; less when the
# same command runs other jobs too).  --mix LAYOUT first runs node losses of the
# randomized mix (tests/faults/mix-faults.sh --node, np = the layout's processes - 1, seeds
# from 5300, 25 s per trial, --mix-trials N (default 40) within --mix-seconds S (default
# 150), taken from --seconds); mix.txt has a line per trial and mix-logs.tar.gz every
# trial's log.  Output and the CSV go to DIR (default $OUT when the device tool sets it,
# else build/faults/device), summary.txt names the machine.
set -u
out=${OUT:-build/faults/device}
trials=30
layout=a:5,b:5,c:6
bytes=8M
seed=20261130
mix="" mix_trials=40 mix_seconds=150
budget=540
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --layout) layout=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --mix) mix=$2; shift 2 ;;
    --mix-trials) mix_trials=$2; shift 2 ;;
    --mix-seconds) mix_seconds=$2; shift 2 ;;
    --seconds) budget=$2; shift 2 ;;
    *) echo "device-faults.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
# workers: every process of the layout but dred-master (the first process of the first name)
# workers LAYOUT: the layout's processes but dred-master (a:5,b:5,c:6 -> 15)
workers() {
  local p n=-1 parts
  IFS=, read -ra parts <<<"$1"
  for p in "${parts[@]}"; do n=$((n + ${p#*:})); done
  echo "$n"
}
workers=$(workers "$layout")

# run-faults.sh takes $BUILD/bin/{dredrun,dred-master,dred-launch,dredstat} and
# $BUILD/tests/fault_app: links to the bundle's (or this checkout's build when run here)
b=$(mktemp -d "${TMPDIR:-/tmp}/dred-devfaults.XXXXXX")
trap 'rm -rf "$b"' EXIT
mkdir -p "$b/bin" "$b/tests"
for f in dredrun dred-master dred-launch dredstat; do
  path=$(command -v "$f" 2>/dev/null || true)
  [ -n "$path" ] || path="$top/build/bin/$f"
  [ -x "$path" ] || { echo "device-faults.sh: no $f (source .devbundle/env.sh first)" >&2; exit 2; }
  ln -s "$path" "$b/bin/$f"
done
app=$(command -v fault_app 2>/dev/null || true)
[ -n "$app" ] || app="$top/build/tests/fault_app"
[ -x "$app" ] || { echo "device-faults.sh: no fault_app (make build/tests/fault_app, then the bundle)" >&2; exit 2; }
ln -s "$app" "$b/tests/fault_app"

{
  echo "# device-faults.sh $(date -u +%FT%TZ)"
  echo "# machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# node loss on $layout ($workers workers), $bytes, $trials trials, seed $seed"
} >"$out/summary.txt"
if [ -n "$mix" ]; then
  # mix-faults.sh takes $BUILD/bin/dredrun and $BUILD/tests/mpi_mix, as run-faults.sh its own
  mixapp=$(command -v mpi_mix 2>/dev/null || true)
  [ -n "$mixapp" ] || mixapp="$top/build/tests/mpi_mix"
  [ -x "$mixapp" ] || { echo "device-faults.sh: no mpi_mix (make build/tests/mpi_mix, then the bundle)" >&2; exit 2; }
  ln -s "$mixapp" "$b/tests/mpi_mix"
  mixnp=$(workers "$mix")
  echo "# mix node losses on $mix (np $mixnp), $mix_trials trials from seed 5300, at most $mix_seconds s" >>"$out/summary.txt"
  timeout -k 10 "$mix_seconds" env BUILD="$b" bash "$top/tests/faults/mix-faults.sh" --node \
    --sim-nodes "$mix" --np "$mixnp" --trials "$mix_trials" --seed 5300 --limit 25 >"$out/mix.txt" 2>&1
  echo "# mix-faults.sh rc=$? (124: cut at $mix_seconds s): $(grep -c ': pass' "$out/mix.txt") passed" >>"$out/summary.txt"
  grep -E '^trial .*: (wrong|hung|died|setup|leftover)|^mix-faults:' "$out/mix.txt" >>"$out/summary.txt"
  [ -d "$b/faults/mix" ] && tar czf "$out/mix-logs.tar.gz" -C "$b/faults" mix
  budget=$((budget - mix_seconds))
fi
timeout -k 10 "$budget" env BUILD="$b" bash "$top/tests/faults/run-faults.sh" --mode node \
  --sim-nodes "$layout" --workers "$workers" --bytes "$bytes" --trials "$trials" --calib 3 \
  --frac-max 0.7 --default-timeouts --seed "$seed" --csv "$out/faults.csv" >"$out/node.txt" 2>&1
rc=$?
# each trial's logs (not its replica stores): what a hung or wrong trial left behind
if [ -d "$b/faults/runs" ]; then
  mkdir -p "$out/runs"
  (cd "$b/faults/runs" && tar cf - --exclude='store' --exclude='*.db*' .) | (cd "$out/runs" && tar xf -)
fi
grep -v '^\[node' "$out/node.txt" | tail -8 >>"$out/summary.txt"
echo "# run-faults.sh rc=$rc" >>"$out/summary.txt"
cat "$out/summary.txt"
exit $rc
