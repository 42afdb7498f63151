#!/usr/bin/env bash
# check-deploy.sh -- checks of everything in deploy/, dry-run and real.
#
# Each launcher is checked four ways:
#   1. `bash -n` and `shellcheck` on every deploy script (dredrun, *.sh, *.sbatch);
#   2. each launcher's --dry-run prints exactly the command line it would run
#      (dredrun, hostfile/run-hostfile.sh, slurm/dred.sbatch, install.sh);
#   3. bad invocations exit 2 with a message, the example files parse, and words are
#      quoted (no glob expansion of flag strings, no ':' slipping into the mpiexec line,
#      no fixed log name in /tmp, which another user could create first);
#   4. real jobs on simulated nodes: a hostfile naming a, b, c run through
#      hostfile/run-hostfile.sh with Hydra's fork launcher (every process on this machine,
#      MPI sees three nodes), and slurm/dred.sbatch run outside Slurm with SLURM_* set and
#      a stand-in `srun` (tests/deploy/fake-srun) that starts the --multi-prog file through
#      the same fork launcher; each job's reductions are checked against the closed form.
#      What the stand-in cannot test: Slurm's own PMI (--mpi=pmi2), its task placement and
#      --kill-on-bad-exit/--no-kill, SLURM_TMPDIR on real node-local disks.
#      Part 4 needs a build (build/bin, build/tests/fault_app); without one it is skipped.
# Prints "N passed, N failed, N skipped"; exits non-zero when anything failed.
# Usage: bash tests/deploy/check-deploy.sh   (from anywhere)
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
d="$root/deploy"
pass=0; fail=0; skip=0
ok()  { pass=$((pass + 1)); echo "  ok    $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL  $1"; [ $# -gt 1 ] && printf '        %s\n' "$2"; }

# expect_out NAME WANT CMD...: CMD exits 0 and its stdout, trimmed, equals WANT.
expect_out() {
  local name="$1" want="$2" got rc
  shift 2
  got="$("$@" 2>&1)"; rc=$?
  got="$(printf '%s' "$got" | sed -e 's/[[:space:]]*$//')"
  if [ "$rc" -eq 0 ] && [ "$got" = "$want" ]; then ok "$name"; else
    bad "$name" "rc=$rc; want: $want | got: $got"; fi
}
# expect_has NAME PATTERN CMD...: CMD exits 0 and its output contains PATTERN (fixed string).
expect_has() {
  local name="$1" pat="$2" got rc
  shift 2
  got="$("$@" 2>&1)"; rc=$?
  if [ "$rc" -eq 0 ] && printf '%s\n' "$got" | grep -qF -- "$pat"; then ok "$name"; else
    bad "$name" "rc=$rc; want /$pat/ in: $got"; fi
}
# expect_usage NAME CMD...: CMD exits 2 and says something on stderr.
expect_usage() {
  local name="$1" err rc
  shift
  err="$("$@" 2>&1 >/dev/null)"; rc=$?
  if [ "$rc" -eq 2 ] && [ -n "$err" ]; then ok "$name"; else bad "$name" "rc=$rc, stderr: $err"; fi
}

scripts=("$d/dredrun" "$d/install-deps.sh" "$d/install.sh" "$d/hostfile/run-hostfile.sh"
         "$d/slurm/dred.sbatch")
echo "check-deploy: syntax"
for s in "${scripts[@]}"; do
  rel="${s#"$root"/}"
  if [ ! -f "$s" ]; then bad "$rel exists"; continue; fi
  if out="$(bash -n "$s" 2>&1)"; then ok "bash -n $rel"; else bad "bash -n $rel" "$out"; fi
  if command -v shellcheck >/dev/null; then
    if out="$(shellcheck -s bash "$s" 2>&1)"; then ok "shellcheck $rel"; else bad "shellcheck $rel" "$out"; fi
  else
    skip=$((skip + 1)); echo "  skip  shellcheck $rel (shellcheck not installed: apt-get install shellcheck)"
  fi
  if [ -x "$s" ]; then ok "$rel is executable"; else bad "$rel is executable"; fi
done

tmp="$(mktemp -d /tmp/check-deploy.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
M=/opt/dred/bin/dred-master   # fixed paths make the printed lines exact
export DRED_LAUNCH=/opt/dred/bin/dred-launch
# dredrun may start every process through dred-launch (which keeps Hydra from killing the
# survivors of a failure); then both programs on the line are prefixed with it.
L=""
if bash "$d/dredrun" --help 2>/dev/null | grep -q -- --no-launcher; then L="$DRED_LAUNCH "; fi
cd "$tmp" || exit 1

echo "check-deploy: dredrun"
expect_out "dredrun --dry-run -n 4 ./app" \
  "mpiexec -disable-auto-cleanup -n 1 $L$M : -n 4 ${L}./app" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --dry-run -n 4 ./app
expect_out "dredrun: hostfile, master flags, app args (quoted)" \
  "mpiexec -disable-auto-cleanup -f hosts -n 1 $L$M --heartbeat-ms 200 --policy last : -n 8 ${L}./app -x a\\ b" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --dry-run -f hosts -m "--heartbeat-ms 200 --policy last" -n 8 ./app -x "a b"
expect_out "dredrun: --mpiexec" \
  "/usr/bin/mpiexec.hydra -disable-auto-cleanup -n 1 $L$M : -n 2 ${L}./app" \
  env DRED_MASTER="$M" bash "$d/dredrun" --dry-run --mpiexec /usr/bin/mpiexec.hydra -n 2 ./app
if [ -n "$L" ]; then
  expect_out "dredrun --no-launcher starts the programs directly" \
    "mpiexec -disable-auto-cleanup -n 1 $M : -n 4 ./app" \
    env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --dry-run --no-launcher -n 4 ./app
fi
if [ -x "$root/build/bin/dred-master" ]; then
  expect_has "dredrun finds dred-master in build/bin" \
    " $root/deploy/../build/bin/dred-master : -n 4 " \
    env -u DRED_MASTER bash "$d/dredrun" --dry-run -n 4 ./app
else
  skip=$((skip + 1)); echo "  skip  dredrun finds dred-master in build/bin (not built)"
fi
expect_usage "dredrun without -n exits 2" env DRED_MASTER="$M" bash "$d/dredrun" --dry-run ./app
expect_usage "dredrun -n 0 exits 2" env DRED_MASTER="$M" bash "$d/dredrun" --dry-run -n 0 ./app
expect_usage "dredrun without an app exits 2" env DRED_MASTER="$M" bash "$d/dredrun" --dry-run -n 2
expect_usage "dredrun unknown option exits 2" env DRED_MASTER="$M" bash "$d/dredrun" --bogus -n 2 ./app
expect_has "dredrun --help documents -n, hostfile, master flags, storage" "--storage DIR" \
  bash "$d/dredrun" --help

echo "check-deploy: hostfile/run-hostfile.sh"
printf '# test\nnodeA:3\nnodeB   # one slot\n\nnodeC:2\n' >hosts
expect_out "run-hostfile --dry-run (P from slots: 6 - 1)" \
  "DRED_STORAGE_DIR=/scratch/dred
mpiexec -disable-auto-cleanup -f hosts -n 1 $L$M : -n 5 ${L}./app" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/hostfile/run-hostfile.sh" --dry-run -f hosts -s /scratch/dred ./app
expect_out "run-hostfile: -n, master flags, quoted args" \
  "DRED_STORAGE_DIR=/scratch/dred
mpiexec -disable-auto-cleanup -f hosts -n 1 $L$M --fail-timeout-ms 900 : -n 3 ${L}./app a\\ b" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/hostfile/run-hostfile.sh" --dry-run -f hosts -s /scratch/dred -n 3 -m "--fail-timeout-ms 900" ./app "a b"
expect_has "run-hostfile: default storage is a per-launch /tmp directory" \
  "DRED_STORAGE_DIR=/tmp/dred-$(id -u)-" \
  env -u DRED_STORAGE_DIR DRED_MASTER="$M" bash "$d/hostfile/run-hostfile.sh" --dry-run -f hosts ./app
expect_has "run-hostfile: hosts.example parses (13 slots: -n 12)" ": -n 12 ${L}./app" \
  env DRED_MASTER="$M" bash "$d/hostfile/run-hostfile.sh" --dry-run -f "$d/hostfile/hosts.example" -s /x ./app
expect_usage "run-hostfile without -f exits 2" env DRED_MASTER="$M" bash "$d/hostfile/run-hostfile.sh" --dry-run ./app
expect_usage "run-hostfile with a missing hostfile exits 2" env DRED_MASTER="$M" bash "$d/hostfile/run-hostfile.sh" --dry-run -f nope ./app
printf 'nodeA:x\n' >badhosts
expect_usage "run-hostfile with a bad slot count exits 2" env DRED_MASTER="$M" bash "$d/hostfile/run-hostfile.sh" --dry-run -f badhosts ./app
expect_usage "run-hostfile with a relative storage dir exits 2" env DRED_MASTER="$M" bash "$d/hostfile/run-hostfile.sh" --dry-run -f hosts -s rel ./app
expect_usage "run-hostfile without an app exits 2" env DRED_MASTER="$M" bash "$d/hostfile/run-hostfile.sh" --dry-run -f hosts

echo "check-deploy: slurm/dred.sbatch"
sb() { env -u DRED_STORAGE_DIR -u SLURM_TMPDIR -u UCX_TLS -u DRED_UCX_CMA -u MPIR_CVAR_DEVICE_COLLECTIVES DRED_MASTER="$M" SLURM_JOB_ID=42 SLURM_SUBMIT_DIR="$tmp" "$@"; }
want_sb="DRED_STORAGE_DIR=/tmp/dred-42.XXXXXXXX
UCX_TLS=^cma
MPIR_CVAR_DEVICE_COLLECTIVES=none
# generated by dred.sbatch for job 42: task 0 dred-master, 1-8 the application
0 $M
1-8 ./app -x 3
srun --kill-on-bad-exit=0 --mpi=pmi2 --ntasks=9 --multi-prog ${TMPDIR:-/tmp}/dred-42.multi-prog.XXXXXX"
expect_out "dred.sbatch --dry-run (9 tasks: master + 8)" "$want_sb" \
  sb SLURM_NTASKS=9 bash "$d/slurm/dred.sbatch" --dry-run ./app -x 3
expect_has "dred.sbatch: SLURM_TMPDIR is the node-local storage" "DRED_STORAGE_DIR=/local/job42/dred-42" \
  sb SLURM_NTASKS=3 SLURM_TMPDIR=/local/job42 DRED_DRY_RUN=1 bash "$d/slurm/dred.sbatch" ./app
expect_has "dred.sbatch: master flags go on task 0's line" "0 $M --heartbeat-ms 200" \
  sb SLURM_NTASKS=3 DRED_MASTER_FLAGS="--heartbeat-ms 200" bash "$d/slurm/dred.sbatch" --dry-run ./app
expect_has "dred.sbatch: DRED_SRUN_MPI and DRED_SRUN_FLAGS" "srun --kill-on-bad-exit=0 --mpi=pmix --cpu-bind=cores --ntasks=3 --multi-prog" \
  sb SLURM_NTASKS=3 DRED_SRUN_MPI=pmix DRED_SRUN_FLAGS="--cpu-bind=cores" bash "$d/slurm/dred.sbatch" --dry-run ./app
expect_has "dred.sbatch: a user's UCX_TLS is kept" "UCX_TLS=rc,sm" \
  sb SLURM_NTASKS=3 UCX_TLS=rc,sm bash "$d/slurm/dred.sbatch" --dry-run ./app
expect_usage "dred.sbatch with 1 task exits 2" sb SLURM_NTASKS=1 bash "$d/slurm/dred.sbatch" --dry-run ./app
expect_usage "dred.sbatch outside Slurm exits 2" env -u SLURM_NTASKS -u SLURM_NPROCS bash "$d/slurm/dred.sbatch" --dry-run ./app
expect_usage "dred.sbatch refuses an argument srun would split" sb SLURM_NTASKS=3 bash "$d/slurm/dred.sbatch" --dry-run ./app "a b"
expect_usage "dred.sbatch refuses % (srun expands it)" sb SLURM_NTASKS=3 bash "$d/slurm/dred.sbatch" --dry-run ./app 50%
expect_usage "dred.sbatch without an app exits 2" sb SLURM_NTASKS=3 bash "$d/slurm/dred.sbatch" --dry-run

# A job id is public, so a fixed storage name can be created first by another user, with a
# journal planted in it.  dred.sbatch must neither use such a directory nor copy a journal
# out of a directory that is not privately ours.  A stand-in srun runs the per-node mkdir
# and rm and "runs" the step by doing nothing (as a job whose every process failed at
# dred_init would): whatever journal reaches the submit directory was planted.
mkdir -p plant/bin plant/tmp plant/submit
printf '#!/usr/bin/env bash\n# srun stand-in: per-node commands run here, the step does nothing\nwhile [ $# -gt 0 ]; do\n  case "$1" in --ntasks-per-node=1) shift; exec "$@" ;; --*) shift ;; *) break ;; esac\ndone\nexit 0\n' >plant/bin/srun
chmod +x plant/bin/srun
# plant DIR: a squatted storage directory, as another user would leave it (owned by nobody
# when we are root; else at least open to others), holding a journal for job 4244.
plant() {
  mkdir -p "$1/job-planted" && echo "planted journal" >"$1/job-planted/journal.db"
  chmod 755 "$1" "$1/job-planted"
  if [ "$(id -u)" = 0 ]; then chown -R 65534:65534 "$1"; fi
}
plant "$tmp/plant/tmp/dred-4244"
plant "$tmp/plant/squat"
psb() { env -u DRED_STORAGE_DIR -u SLURM_TMPDIR -u DRED_EXTERNAL_MASTER PATH="$tmp/plant/bin:$PATH" \
  DRED_MASTER=/bin/true SLURM_NTASKS=3 SLURM_JOB_ID=4244 SLURM_SUBMIT_DIR="$tmp/plant/submit" "$@"; }
out="$(psb SLURM_TMPDIR="$tmp/plant/tmp" bash "$d/slurm/dred.sbatch" ./app 2>&1)"
if [ ! -e plant/submit/dred-4244.journal.db ] && [ -d plant/tmp/dred-4244/job-planted ] &&
   ! printf '%s\n' "$out" | grep -q "storage $tmp/plant/tmp/dred-4244 "; then
  ok "dred.sbatch: a planted \$SLURM_TMPDIR/dred-<jobid> is neither used nor copied from"
else
  bad "dred.sbatch: a planted \$SLURM_TMPDIR/dred-<jobid> is neither used nor copied from" \
    "$(ls plant/submit); $out"
fi
check_leftover="$(find plant/tmp -mindepth 1 -maxdepth 1 ! -name dred-4244)"
if [ -z "$check_leftover" ]; then ok "dred.sbatch removed the storage directory it made itself"; else
  bad "dred.sbatch removed the storage directory it made itself" "$check_leftover"; fi
rm -f plant/submit/dred-4244.journal.db
out="$(psb DRED_STORAGE_DIR="$tmp/plant/squat" bash "$d/slurm/dred.sbatch" ./app 2>&1)"
if [ ! -e plant/submit/dred-4244.journal.db ] && printf '%s\n' "$out" | grep -q "no journal copied"; then
  ok "dred.sbatch: no journal copied from a DRED_STORAGE_DIR that is not privately ours"
else
  bad "dred.sbatch: no journal copied from a DRED_STORAGE_DIR that is not privately ours" \
    "$(ls plant/submit); $out"
fi

# A multi-prog file is valid for dred when its ranges cover 0..N-1 exactly once and task 0
# runs dred-master (what srun's own verify_multi_name checks, plus dred's rule).
check_conf() { # file ntasks
  python3 - "$1" "$2" <<'EOF'
import sys
path, n = sys.argv[1], int(sys.argv[2])
seen = {}
for line in open(path):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    ranks, prog = line.split()[:2]
    for part in ranks.split(","):
        lo, _, hi = part.partition("-")
        for r in range(int(lo), int(hi or lo) + 1):
            assert r not in seen, "task %d listed twice" % r
            seen[r] = prog
assert sorted(seen) == list(range(n)), "tasks %s, want 0..%d" % (sorted(seen), n - 1)
assert seen[0].endswith("dred-master"), "task 0 runs %s, not dred-master" % seen[0]
assert all(not p.endswith("dred-master") for r, p in seen.items() if r), "dred-master on a task > 0"
EOF
}
if check_conf "$d/slurm/multi-prog.conf.example" 9 2>"$tmp/conf.err"; then ok "multi-prog.conf.example covers tasks 0..8, master on task 0"; else
  bad "multi-prog.conf.example covers tasks 0..8, master on task 0" "$(cat "$tmp/conf.err")"; fi
sb SLURM_NTASKS=6 bash "$d/slurm/dred.sbatch" --dry-run ./app 2>/dev/null | grep -v '^srun\|^[A-Z_]*=' >gen.conf
if check_conf gen.conf 6 2>"$tmp/conf.err"; then ok "generated multi-prog file covers tasks 0..5, master on task 0"; else
  bad "generated multi-prog file covers tasks 0..5, master on task 0" "$(cat "$tmp/conf.err")"; fi

echo "check-deploy: quoting (no globbing, no ':' sections, no fixed /tmp names)"
touch a1.db a2.db # words like "a*.db" must reach the programs as written
expect_out "dredrun -m flags are not glob-expanded" \
  "mpiexec -disable-auto-cleanup -n 1 $L$M --journal a\\*.db : -n 2 ${L}./app" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --dry-run -m "--journal a*.db" -n 2 ./app
expect_usage "dredrun refuses an application argument ':' (a new MPMD section)" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --dry-run -n 2 ./app x : y
expect_usage "dredrun refuses ':' in -m flags" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --dry-run -m "--policy :" -n 2 ./app
expect_usage "run-hostfile passes the ':' refusal on" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/hostfile/run-hostfile.sh" --dry-run -f hosts -s /x ./app :
expect_has "dred.sbatch: DRED_MASTER_FLAGS are not glob-expanded" "0 $M --journal a*.db" \
  sb SLURM_NTASKS=3 DRED_MASTER_FLAGS="--journal a*.db" bash "$d/slurm/dred.sbatch" --dry-run ./app
expect_has "dred.sbatch: DRED_SRUN_FLAGS are not glob-expanded" "--cpu-bind=cores a\\*.db --ntasks=3" \
  sb SLURM_NTASKS=3 DRED_SRUN_FLAGS="--cpu-bind=cores a*.db" bash "$d/slurm/dred.sbatch" --dry-run ./app
# dred-master beside the job (--external-master / DRED_EXTERNAL_MASTER=1)
expect_has "dredrun --external-master: the master beside a plain mpiexec line" "$M --workers 4 --addr-file FILE" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --external-master --dry-run -n 4 ./app
expect_has "dredrun --external-master: the application has every process" "mpiexec -disable-auto-cleanup -n 4 ${L}./app" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --external-master --dry-run -n 4 ./app
expect_has "dredrun --external-master --sim-nodes: TCP too, the master on the first name" "DRED_MASTER_HOST=a" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/dredrun" --external-master --sim-nodes a:2,b:2 --dry-run -n 4 ./app
expect_has "run-hostfile --external-master: every slot to the application" "-n 6 ${L}./app" \
  env DRED_MASTER="$M" MPIEXEC= bash "$d/hostfile/run-hostfile.sh" --external-master --dry-run -f hosts -s /x ./app
expect_has "dred.sbatch DRED_EXTERNAL_MASTER=1: a plain srun step of every task" \
  "srun --kill-on-bad-exit=0 --mpi=pmi2 --ntasks=3 ./app -x 3" \
  sb SLURM_NTASKS=3 DRED_EXTERNAL_MASTER=1 bash "$d/slurm/dred.sbatch" --dry-run ./app -x 3
expect_has "dred.sbatch DRED_EXTERNAL_MASTER=1: the master here, listening on TCP too" \
  "$M --workers 3 --tcp-host" \
  sb SLURM_NTASKS=3 DRED_EXTERNAL_MASTER=1 bash "$d/slurm/dred.sbatch" --dry-run ./app
# install-deps.sh's apt log: a fresh mktemp file (0600), never a fixed name in /tmp.  A
# stand-in dpkg-query says nothing is installed and a stand-in apt-get fails, so the
# script takes its install path without touching the system.
mkdir -p fakebin tmpd
printf '#!/bin/sh\nexit 1\n' >fakebin/dpkg-query
printf '#!/bin/sh\necho "apt-get stand-in: failing on purpose"\nexit 100\n' >fakebin/apt-get
chmod +x fakebin/dpkg-query fakebin/apt-get
if [ "$(id -u)" = 0 ]; then
  err="$(env PATH="$tmp/fakebin:$PATH" TMPDIR="$tmp/tmpd" bash "$d/install-deps.sh" 2>&1 >/dev/null)"; rc=$?
  log="$(printf '%s\n' "$err" | sed -n 's/.*(log: \([^)]*\)).*/\1/p')"
  if [ "$rc" -ne 0 ] && [ -n "$log" ] && [[ "$log" == "$tmp/tmpd/"* ]] && [ -f "$log" ] &&
     [ "$(stat -c %a "$log")" = 600 ] && grep -q "failing on purpose" "$log"; then
    ok "install-deps.sh logs apt-get to a private mktemp file ($log)"
  else
    bad "install-deps.sh logs apt-get to a private mktemp file" "rc=$rc log='$log' stderr: $err"
  fi
else
  skip=$((skip + 1)); echo "  skip  install-deps.sh log file (not root: the script stops before apt-get)"
fi

echo "check-deploy: real jobs on simulated nodes a, b, c (fork launcher)"
B="$root/build"
APPB="$B/tests/fault_app"
if [ -x "$B/bin/dred-master" ] && [ -x "$B/bin/dred-launch" ] && [ -x "$APPB" ] && command -v mpiexec >/dev/null; then
  # real_job NAME OUTDIR CMD...: run CMD (its own session, 180 s at most), then check that
  # the master saw 3 nodes and every rank ended exact; every process it left is killed by
  # the pids the job wrote (fault_app's pid.<r>), never by name.
  real_job() {
    local name="$1" out="$2" pid rc=0 i r okr=0 why=""
    shift 2
    mkdir -p "$out"
    setsid "$@" >"$out/job.log" 2>&1 </dev/null &
    pid=$!
    for ((i = 0; i < 1800; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      why="timed out after 180 s; "; kill -KILL -- "-$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null || rc=$?
    for f in "$out"/pid.*; do
      [ -f "$f" ] || continue
      r=$(cut -d' ' -f1 "$f"); kill -0 "$r" 2>/dev/null && { kill -KILL "$r"; why+="rank ${f##*.} left running; "; }
    done
    for ((r = 0; r < 8; r++)); do grep -q '^final outcome=OK .* wrong=0' "$out/rank.$r.txt" 2>/dev/null && okr=$((okr + 1)); done
    grep -q "8 workers on 3 node(s)" "$out/job.log" || why+="master did not see 3 nodes; "
    [ "$okr" = 8 ] || why+="$okr of 8 ranks exact; "
    [ "$rc" = 0 ] || why+="exit status $rc; "
    if [ -z "$why" ]; then ok "$name"; else bad "$name" "$why(see $out/job.log: $(tail -3 "$out/job.log" | tr '\n' ' '))"; fi
  }
  app_args=(--bytes 1M --reductions 3 --calib 1 --root 5 --victim-mode none)
  printf '#!/bin/sh\n# mpiexec with the fork launcher: every host of the hostfile is this machine\nexec mpiexec -launcher fork "$@"\n' >mpiexec-fork
  chmod +x mpiexec-fork
  printf '# simulated nodes: Hydra starts everything here, MPI sees three nodes\na:3\nb:3\nc:3\n' >abc.hosts
  # The hosts are all this machine: UCX between them as dredrun --sim-nodes sets it, no TCP
  # (UCX's TCP transport hangs MPI_Finalize, openucx/ucx#8738); real hosts get ^cma.
  real_job "hostfile/run-hostfile.sh runs a job on hosts a, b, c (9 slots: master + 8, results exact)" "$tmp/hf" \
    env -u DRED_LAUNCH -u DRED_MASTER -u DRED_STORAGE_DIR DRED_LOG_LEVEL=info UCX_TLS='^cma,tcp' \
    bash "$d/hostfile/run-hostfile.sh" -f abc.hosts -s "$tmp/hf-store" --mpiexec "$tmp/mpiexec-fork" \
    "$APPB" --outdir "$tmp/hf" "${app_args[@]}"
  mkdir -p slurmtmp submit fsbin
  cp "$root/tests/deploy/fake-srun" fsbin/srun
  real_job "slurm/dred.sbatch runs a job outside Slurm (SLURM_* set, stand-in srun on a, b, c)" "$tmp/sl" \
    env -u DRED_LAUNCH -u DRED_STORAGE_DIR -u MPIR_CVAR_DEVICE_COLLECTIVES UCX_TLS='^cma,tcp' \
    PATH="$tmp/fsbin:$PATH" DRED_MASTER="$B/bin/dred-master" DRED_LOG_LEVEL=info \
    SLURM_NTASKS=9 SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=3 SLURM_TMPDIR="$tmp/slurmtmp" \
    SLURM_SUBMIT_DIR="$tmp/submit" \
    bash "$d/slurm/dred.sbatch" "$APPB" --outdir "$tmp/sl" "${app_args[@]}"
  if [ -f submit/dred-4242.journal.db ] && [ -z "$(ls -d slurmtmp/dred-4242* 2>/dev/null)" ]; then
    ok "dred.sbatch copied the journal to the submit directory and removed its storage"
  else
    bad "dred.sbatch copied the journal to the submit directory and removed its storage" "$(ls -R submit slurmtmp)"
  fi
  # The same two launches with dred-master beside the job: 8 application processes on the
  # 9 slots, the master placed on a (DRED_MASTER_HOST; on a cluster: the launching host).
  real_job "run-hostfile.sh --external-master runs a job on hosts a, b, c (master beside it, results exact)" "$tmp/hfx" \
    env -u DRED_LAUNCH -u DRED_MASTER -u DRED_STORAGE_DIR DRED_LOG_LEVEL=info UCX_TLS='^cma,tcp' DRED_MASTER_HOST=a \
    bash "$d/hostfile/run-hostfile.sh" --external-master -f abc.hosts -n 8 -s "$tmp/hfx-store" \
    --mpiexec "$tmp/mpiexec-fork" "$APPB" --outdir "$tmp/hfx" "${app_args[@]}"
  real_job "dred.sbatch DRED_EXTERNAL_MASTER=1 runs a job outside Slurm (stand-in srun on a, b, c)" "$tmp/slx" \
    env -u DRED_LAUNCH -u DRED_STORAGE_DIR -u MPIR_CVAR_DEVICE_COLLECTIVES UCX_TLS='^cma,tcp' \
    PATH="$tmp/fsbin:$PATH" DRED_MASTER="$B/bin/dred-master" DRED_LOG_LEVEL=info \
    DRED_EXTERNAL_MASTER=1 DRED_MASTER_HOST=a \
    SLURM_NTASKS=8 SLURM_JOB_ID=4243 SLURM_JOB_NUM_NODES=3 SLURM_TMPDIR="$tmp/slurmtmp" \
    SLURM_SUBMIT_DIR="$tmp/submit" \
    bash "$d/slurm/dred.sbatch" "$APPB" --outdir "$tmp/slx" "${app_args[@]}"
  if [ -f submit/dred-4243.journal.db ] && [ -z "$(ls -d slurmtmp/dred-4243* 2>/dev/null)" ]; then
    ok "dred.sbatch (master beside the step) copied the journal and removed its storage"
  else
    bad "dred.sbatch (master beside the step) copied the journal and removed its storage" "$(ls -R submit slurmtmp)"
  fi
else
  skip=$((skip + 6)); echo "  skip  real jobs on simulated nodes (build first: make all build/tests/fault_app)"
fi

echo "check-deploy: install.sh"
expect_out "install.sh --dry-run --no-deps" \
  "+ make -C $root -j 3 all
+ make -C $root install PREFIX=/tmp/dred-prefix
install.sh: dry run: nothing was run" \
  bash "$d/install.sh" --dry-run --no-deps --jobs 3 --prefix /tmp/dred-prefix
expect_has "install.sh --dry-run runs install-deps.sh first" "+ bash $root/deploy/install-deps.sh" \
  bash "$d/install.sh" --dry-run --jobs 3 --prefix /tmp/dred-prefix
expect_usage "install.sh with a relative prefix exits 2" bash "$d/install.sh" --dry-run --prefix rel
expect_usage "install.sh with a bad argument exits 2" bash "$d/install.sh" --bogus

echo "check-deploy: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
