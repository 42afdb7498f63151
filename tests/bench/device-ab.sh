#!/usr/bin/env bash
# device-ab.sh -- builds compared in turn on a lent many-core machine, in one device command.
#
#   here:   make BUILD=build-X OPT="-O2 -g ..." build-X/bin/dred-bench-coll build-X/bin/dred-bench
#           bash ../shared/bundle/make-bundle.sh
#           cp build-X/bin/dred-bench-coll .devbundle/bin/dred-bench-coll.X    # each variant X
#           cp build-X/bin/dred-bench .devbundle/bin/dred-bench.X
#   there:  source .devbundle/env.sh && bash tests/bench/device-ab.sh --variants "A B ..."
#           [--ps "8 15 16"] [--rounds 2] [--coll "4096:32768 8192:65536 16384:131072"]
#           [--reduce "128K,1M,8M"] [--out DIR]
#   or, settings against each other on the one build (no copies):
#   there:  ... device-ab.sh --settings "default: stream1:DRED_SHM_STREAM=1 share0:DRED_MEET_SHARE=0"
#
# --settings "NAME:VAR=V[,VAR=V...] ...": each variant is the bundle's own dred-bench-coll
# and dred-bench run under those environment variables (NAME: alone, dred's defaults),
# in turn as builds are; the summary names the setting where it names the build.
#
# Each round, each p, each size group MIN:MAX of --coll (dred-bench-coll --min MIN --max
# MAX: MIN, x8 steps, MAX), runs every variant's dred-bench-coll.X one after another, so
# that the machine's drift falls on all of them alike; then, at the largest p, every
# variant's dred-bench.X --scenario ideal at the --reduce sizes (none when empty).  A core
# per rank (p <= nproc), members waiting in MPI's blocking calls between repetitions, dred
# against MPICH's own collective in the same job.  summary.txt: a line per variant and
# size, "round p variant bytes dred_us mpi_us ratio", allreduce and bcast; each round runs
# the variants in another order (round r starts at the r-th); every job's output in
# DIR/jobs.tar.gz (default DIR $OUT, else build/bench/device-ab).  Every job is bounded
# (timeout 40 s); the whole run stops starting jobs after --budget seconds (default 300).
set -u
out=${OUT:-build/bench/device-ab}
ps="" variants="" settings="" rounds=2 coll="4096:32768 8192:65536 16384:131072" reduce="" budget=300
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --ps) ps=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --settings) settings=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --coll) coll=$2; shift 2 ;;
    --reduce) reduce=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    *) echo "device-ab.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -z "$variants" ] || [ -z "$settings" ] ||
  { echo "device-ab.sh: --variants or --settings, not both" >&2; exit 2; }
[ -n "$variants$settings" ] ||
  { echo "device-ab.sh: --variants \"A B ...\" or --settings \"NAME:VAR=V ...\" is required" >&2; exit 2; }
# a setting's name -> its VAR=V,... list
declare -A envof
for st in $settings; do
  n=${st%%:*}
  [ "$n" != "$st" ] && [ -n "$n" ] ||
    { echo "device-ab.sh: setting '$st' is not NAME:VAR=V,..." >&2; exit 2; }
  envof[$n]=${st#*:}
  variants="$variants $n"
done
variants=${variants# }
# bin V PROGRAM: the program of variant V
bin() { if [ -n "$settings" ]; then echo "$2"; else echo "$2.$1"; fi; }
# envs V: its environment, VAR=V words for env(1)
envs() { [ -n "$settings" ] && echo "${envof[$1]//,/ }"; return 0; }
ncpu=$(nproc)
if [ -z "$ps" ]; then
  ps="8"
  [ "$ncpu" -ge 15 ] && ps="$ps 15"
  [ "$ncpu" -ge 16 ] && ps="$ps 16"
fi
for v in $variants; do
  command -v "$(bin "$v" dred-bench-coll)" >/dev/null ||
    { echo "device-ab.sh: $(bin "$v" dred-bench-coll) not on PATH" >&2; exit 2; }
done
mkdir -p "$out"
sum="$out/summary.txt"
start=$(date +%s)
{
  echo "# device-ab.sh $(date -u +%FT%TZ): variants $variants${settings:+ (settings: $settings)}, ps $ps, rounds $rounds"
  echo "# $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), nproc $ncpu"
} >"$sum"

# job NAME ARGS...: one bounded job, its output kept; 1 once the budget is spent
job() {
  local name=$1
  shift
  if [ $(($(date +%s) - start)) -ge "$budget" ]; then
    echo "   (budget spent: $name not run)" >>"$sum"
    return 1
  fi
  timeout -k 5 40 "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || echo "   ($name: exit $rc; 124: timed out)" >>"$sum"
  return 0
}

last=${ps##* }
read -ra vs <<<"$variants"
for r in $(seq 1 "$rounds"); do
  # round r starts at variant r: none always runs first or right after another
  order=""
  for i in $(seq 0 $((${#vs[@]} - 1))); do order="$order ${vs[$(((i + r - 1) % ${#vs[@]}))]}"; done
  for p in $ps; do
    for g in $coll; do
      for v in $order; do
        name="coll-r$r-p$p-${g%%:*}-$v"
        # shellcheck disable=SC2046 # envs: VAR=V words, split on purpose
        job "$name" env $(envs "$v") dredrun -n "$p" "$(bin "$v" dred-bench-coll)" \
          --min "${g%%:*}" --max "${g##*:}" || break 3
        awk -v r="$r" -v p="$p" -v v="$v" '$1 ~ /^[0-9]+$/ && NF >= 7 {
          printf "%s %s %-8s %9s allreduce %8s %8s %5s  bcast %8s %8s %5s\n", r, p, v, $1, $2, $3, $4, $5, $6, $7 }' \
          "$out/$name.txt" >>"$sum"
      done
    done
  done
  [ -n "$reduce" ] || continue
  for v in $variants; do
    command -v "$(bin "$v" dred-bench)" >/dev/null || continue
    name="reduce-r$r-p$last-$v"
    # shellcheck disable=SC2046
    job "$name" env $(envs "$v") dredrun -n "$last" "$(bin "$v" dred-bench)" --scenario ideal \
      --sizes "$reduce" --reps 9 || break 2
    grep -E '^ideal ' "$out/$name.txt" | sed "s/^/$r $last $v /" >>"$sum"
  done
done
echo "# took $(($(date +%s) - start)) s" >>"$sum"
# every job's output in one file: the device tool brings back a limited number of files
(cd "$out" && ls -- *-*.txt >jobs.list 2>/dev/null && tar -czf jobs.tar.gz -T jobs.list &&
  xargs rm -f <jobs.list && rm -f jobs.list) ||
  echo "# (the jobs' outputs left as they are: tar failed)" >>"$sum"
cat "$sum"
