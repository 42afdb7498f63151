#!/usr/bin/env bash
# short.sh -- the short fault-injection run inside `make test`.
#
#   BUILD=build bash tests/faults/short.sh
#
# Parts, most through run-faults.sh (fresh job per trial, see that file):
#   1. 5 trials, 4 workers, 4 MiB, a random non-root worker SIGKILLed at a random moment
#      in [0, t] of a reduction: every survivor must end with the exact result or an explicit
#      error -- 0 wrong, 0 hung, no survivor dying, dred_finalize never hanging.  And 2 such
#      trials on simulated nodes a:2,b:2,c:2 (5 workers): one process lost, its node peers
#      alive, reductions spanning nodes, and the op non-commutative (fault_app --op affine:
#      a recovered operand put back out of rank order gives a wrong answer).
#   2. 1 trial killing the root 5 ms into a 64 MiB reduction: every survivor must get
#      DRED_ERR_ROOT_FAILED.
#   3. 1 trial killing dred-master 5 ms into a 64 MiB reduction: every survivor must get
#      DRED_ERR_MASTER_LOST.
#   4. 2 trials killing a worker right after its dred_ireduce call returns, 4 workers,
#      16 MiB: the operand is only in the victim's pool then (often before its neighbour
#      or the master heard of it) -- every survivor must get the exact result.
#   4b. the same for small auto-tagged reductions that meet in shared memory
#      (lib/paths/meetpath.c; fault_app --auto-tags, 64 B): killed right after its call, the
#      victim's operand is in the slot -- every survivor exact (2 trials); and with 8 such
#      reductions per step, the victim killed right after its first call (3 trials): that
#      one exact, the 7 it never joined end DRED_ERR_PROC_FAILED on every survivor once the
#      master declares it failed (random moments do not land inside steps this short).
#   4c. the node engine (one-node auto-tagged reductions of any size met in shared memory
#      by reference, lib/paths/meetpath.c): a non-root killed at a random moment of a 4 MiB
#      reduction (2 trials), right after its call of a 16 MiB one (2, exact: its pool block
#      outlives it), under a non-commutative op (2), during 16 concurrent ones (2); the root
#      killed 5 ms in, once every member's call returned (1: the others had nothing more
#      to do, DRED_OK; a member arriving after the death is known gets PROC_FAILED, so the
#      kill waits for the calls) and dred-master killed once every member's call returned
#      (1: exact, the engine needs no master; a member whose call starts after the master
#      is lost gets DRED_ERR_MASTER_LOST, as documented).  Parts 2, 3, 7's master kill and
#      9 test dred-master's own paths and run with DRED_MEET=0.
#   5. 2 node losses on simulated nodes a:2,b:2,c:2 (5 workers, 4 MiB): every application
#      process of one node that is neither the master's nor the root's, SIGKILLed at once
#      at a random moment -- exact or an explicit error, 0 wrong, 0 hung, no survivor dying.
#   5b. 1 such node loss where each victim dies right after its own dred_ireduce returned:
#      in a group spanning nodes the call returns once its operand's copy is held on another
#      node (lib/paths/offnode.c), so every survivor must get the exact result.
#   6. 1 loss of the master's node (dred-master and the worker beside it, 5 ms into a
#      64 MiB reduction): every survivor must get DRED_ERR_MASTER_LOST.
#   7. dred-master beside the job (dredrun --external-master): 2 worker kills at random
#      moments, 1 kill right after the victim's call (exact), 1 master kill 5 ms into a
#      64 MiB reduction (every survivor MASTER_LOST).
#   8. the whole job stalled: every process SIGSTOPped for 3 s mid-job, then SIGCONTed
#      (tests/faults/pause.sh, 2 trials): no worker declared failed, no master declared
#      lost, every reduction exact.  And 1 trial stopping one worker alone for 3 s: it is
#      declared failed, the survivors end exact or with explicit errors, and once continued
#      it ends too.  One whole-job pause each on simulated nodes a:2,b:3 and with the
#      master beside the job; dred-master stopped alone for 3 s: every worker declares it
#      lost, every reduction still pending ends MASTER_LOST, everyone ends.  And the job
#      cancelled with SIGTERM mid-job: every process ends, no socket or store left.
#      Every pause.sh trial also checks that nothing but the master's journal is left.
#   9. three deaths inside an absorption at chosen pieces
#      (tests/faults/rollforward.sh): a node peer finishes the dead executor's absorption
#      from the two snapshots and scratch, and every survivor's result is exact.
#  10. the randomized mix (tests/mpi/mix.c -X) with one member killed at a random moment
#      of a round (2 trials, 4 members) and one node lost (2 trials, a:3,b:3,c:3): every
#      collective whose group held no victim exact, the others exact or an explicit error
#      (tests/faults/mix-faults.sh); and 5 runs of a seed whose schedule once hung (a
#      RECOVER reaching a member still in a spilled meeting slot).
#  11. a task's MPI_Rget that never completes (tests/faults/stall-read.sh, 2 trials on
#      a:2,b:2): the reduction ends DRED_ERR_PROC_FAILED on every member after twice the
#      failure timeout, every other one exact, the job ends.
#  12. a member that disagrees on the op and dies before its READY
#      (tests/faults/unseen-mismatch.sh, DRED_TEST_READY_KILL): recovered from the copy held
#      on another node, or from its snapshot directory on its node, it still makes every
#      survivor's reduction DRED_ERR_MISMATCH; agreeing, the root's result is exact.
#   Part 1's node trials and parts 5 and 6 run with DRED_FAIL_TIMEOUT_MS=2000 /
#   DRED_MASTER_TIMEOUT_MS=4000: three simulated nodes start 6 MPI processes with more
#   set-up than one node, and a loaded machine can be silent for a second without any fault.
# Short timeouts (DRED_HEARTBEAT_MS=100, DRED_FAIL_TIMEOUT_MS=1000, DRED_MASTER_TIMEOUT_MS=2000)
# keep it to about a minute.  Prints "N passed, N failed" (trials) and exits non-zero if any
# trial failed.  CSV: $BUILD/faults/short.csv (rewritten each run).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD=${BUILD:-build}
export BUILD
csv="$BUILD/faults/short.csv"
mkdir -p "$BUILD/faults"
rm -f "$csv"
seed=${SEED:-$(date +%s)}

pass=0
fail=0
# Every failing trial's line, repeated at the end with the tails of its logs: a CI log is
# often kept only from its end, and the trial's directory is gone with the machine.
faildigest="$BUILD/faults/short-failures.txt"
rm -f "$faildigest"
part() { # part DESCRIPTION run-faults.sh ARGS...
  local what=$1 out line p f
  shift
  echo "== faults: $what"
  out=$(bash "$here/run-faults.sh" --csv "$csv" --seed "$seed" "$@" 2>&1)
  echo "$out" | grep -E '^\[|FAIL|^mode |^(worker|root|master|two|concurrent|node|masternode|allreduce|allreduceroot|bcast|bcastroot) ' | sed 's/^/   /'
  echo "$out" | grep -F 'FAIL:' >>"$faildigest"
  line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -z "$line" ]; then
    echo "$out" | tail -20 | sed 's/^/   /'
    echo "   FAIL: run-faults.sh gave no verdict"
    echo "$what: run-faults.sh gave no verdict" >>"$faildigest"
    fail=$((fail + 1))
    return
  fi
  p=${line%% passed*}
  f=${line#*, }; f=${f%% failed*}
  pass=$((pass + p))
  fail=$((fail + f))
}

part "5 worker kills, 4 workers, 4 MiB (0 wrong, 0 hung)" \
  --mode worker --trials 5 --workers 4 --bytes 4M
DRED_HEARTBEAT_MS=200 DRED_FAIL_TIMEOUT_MS=2000 DRED_MASTER_TIMEOUT_MS=4000 \
  part "2 worker kills on simulated nodes a:2,b:2,c:2, 5 workers, 4 MiB, a non-commutative op (its node peers live on; 0 wrong, 0 hung)" \
  --mode worker --trials 2 --workers 5 --nodes 3 --bytes 4M --calib 1 --op affine
# (2 and 3 through dred-master: DRED_MEET=0; on the node engine a dead root's peers and a
# dead master's workers need nothing from them: part 4c)
# 64 MiB: a kill 5 ms in must land well inside the step, which a 16 MiB step barely outlasts
# on a quiet machine, and a kill after the END went out rightly leaves everyone exact.
DRED_MEET=0 part "root kill, 4 workers, 64 MiB (every survivor ROOT_FAILED)" \
  --mode root --trials 1 --workers 4 --bytes 64M --kill-at 0.005 --expect ROOT_FAILED
DRED_MEET=0 part "master kill, 4 workers, 64 MiB (every survivor MASTER_LOST)" \
  --mode master --trials 1 --workers 4 --bytes 64M --kill-at 0.005 --expect MASTER_LOST
part "worker killed right after its call, 4 workers, 16 MiB (every survivor exact)" \
  --mode worker --trials 2 --workers 4 --bytes 16M --kill-at call --expect exact
part "worker killed right after its call, small auto-tagged reductions met in shared memory, 4 workers, 64 B (every survivor exact: the operand is in the slot)" \
  --mode worker --trials 2 --workers 4 --bytes 64 --auto-tags --kill-at call --expect exact
part "worker killed after the first of 8 small auto-tagged reductions met in shared memory, 4 workers, 64 B (the one it joined exact, the 7 it never joined PROC_FAILED on every survivor, none hangs)" \
  --mode worker --trials 3 --workers 4 --bytes 64 --conc 8 --auto-tags --kill-at call --expect PROC_FAILED
part "worker killed at a random moment, 4 MiB auto-tagged reductions met in shared memory by reference (the node engine: the root folds from the peers' pool blocks), 4 workers (exact or an explicit error)" \
  --mode worker --trials 2 --workers 4 --bytes 4M --auto-tags --calib 1
part "worker killed right after its call, 16 MiB met by reference, 4 workers (every survivor exact: its pool block outlives it)" \
  --mode worker --trials 2 --workers 4 --bytes 16M --auto-tags --kill-at call --expect exact
part "worker killed at a random moment, 1 MiB met by reference, non-commutative op (rank order kept)" \
  --mode worker --trials 2 --workers 4 --bytes 1M --auto-tags --op affine --calib 1
part "worker killed during 16 concurrent reductions met by reference, 4 workers" \
  --mode concurrent --trials 2 --workers 4 --bytes 4M --auto-tags --calib 1
# the kill waits for every rank's call to have returned (--kill-after-peers): a member still
# to arrive when the root's death is known rightly gets PROC_FAILED, which a loaded
# machine made happen now and then
part "root killed 5 ms into a 16 MiB reduction met by reference, once every member's call returned (the others had nothing more to do: exact, i.e. DRED_OK, no hang)" \
  --mode root --trials 1 --workers 4 --bytes 16M --auto-tags --kill-at 0.005 --kill-after-peers --expect exact
part "dred-master killed once every member's call of a 16 MiB reduction met by reference returned (the node engine needs no master: exact; later reductions MASTER_LOST)" \
  --mode master --trials 1 --workers 4 --bytes 16M --auto-tags --kill-at call --expect exact

DRED_HEARTBEAT_MS=200 DRED_FAIL_TIMEOUT_MS=2000 DRED_MASTER_TIMEOUT_MS=4000 \
  part "node loss on a:2,b:2,c:2, 5 workers, 4 MiB (0 wrong, 0 hung, no survivor dies)" \
  --mode node --trials 2 --workers 5 --nodes 3 --bytes 4M --calib 1
DRED_HEARTBEAT_MS=200 DRED_FAIL_TIMEOUT_MS=2000 DRED_MASTER_TIMEOUT_MS=4000 \
  part "node loss right after the victims' calls returned, a:2,b:2,c:2, 5 workers, 4 MiB (every survivor exact)" \
  --mode node --trials 1 --workers 5 --nodes 3 --bytes 4M --calib 1 --kill-at call --expect exact
# The same with every received copy written to the store at once: the lost operands come
# back from the holders' stores, not from copies held in memory (lib/robust/replica_recv.c)
DRED_HEARTBEAT_MS=200 DRED_FAIL_TIMEOUT_MS=2000 DRED_MASTER_TIMEOUT_MS=4000 DRED_REPLICA_DELAY_MS=0 \
  part "node loss right after the calls, copies stored at once (DRED_REPLICA_DELAY_MS=0), a:2,b:2,c:2, 5 workers, 4 MiB (every survivor exact)" \
  --mode node --trials 1 --workers 5 --nodes 3 --bytes 4M --calib 1 --kill-at call --expect exact
# allreduce and bcast: every survivor checks its own result (tests/faults/fault_app.c --coll)
part "allreduce: 3 member kills, 4 workers, 4 MiB (every survivor exact or an explicit error; 0 wrong, 0 hung)" \
  --mode allreduce --trials 3 --workers 4 --bytes 4M
part "bcast: 2 non-root kills and 2 root kills, 4 workers, 4 MiB (0 wrong, 0 hung)" \
  --mode bcast,bcastroot --trials 2 --workers 4 --bytes 4M
part "bcast: a non-root killed right after its call, 4 workers, 16 MiB (every survivor exact)" \
  --mode bcast --trials 1 --workers 4 --bytes 16M --kill-at call --expect exact
# dred-master beside the job (dredrun --external-master): the same guarantees without it
# in the application's MPI_COMM_WORLD
part "external master: 2 worker kills, 4 workers, 4 MiB (0 wrong, 0 hung)" \
  --external --mode worker --trials 2 --workers 4 --bytes 4M
part "external master: worker killed right after its call, 4 workers, 16 MiB (every survivor exact)" \
  --external --mode worker --trials 1 --workers 4 --bytes 16M --kill-at call --expect exact
DRED_MEET=0 part "external master: master kill, 4 workers, 64 MiB (every survivor MASTER_LOST)" \
  --external --mode master --trials 1 --workers 4 --bytes 64M --kill-at 0.005 --expect MASTER_LOST
# The master's node lost.  When a process ends without PMI finalize, mpiexec's SIGUSR1
# fan-out can hit a proxy that has just closed, and mpiexec then SIGKILLs the whole job, so
# dred-launch finalizes PMI for every program it ran (tools/dred-launch.c): the survivors
# must all end MASTER_LOST.
DRED_HEARTBEAT_MS=200 DRED_FAIL_TIMEOUT_MS=2000 DRED_MASTER_TIMEOUT_MS=4000 \
  part "master's node lost, 5 workers, 64 MiB (every survivor MASTER_LOST)" \
  --mode masternode --trials 1 --workers 5 --nodes 3 --bytes 64M --calib 1 --kill-at 0.005 --expect MASTER_LOST

# 8. stalls (tests/faults/pause.sh): the whole job stopped 3 s mid-job, longer than both
#    timeouts, then continued -- nobody declared failed or lost, every reduction exact; one
#    worker stopped alone -- declared failed, and it ends once continued.
script_part() { # script_part DESCRIPTION SCRIPT ARGS... (a script printing "N passed, N failed")
  local what=$1 script=$2 out line p f
  shift 2
  echo "== faults: $what"
  out=$(bash "$here/$script" "$@" 2>&1)
  echo "$out" | grep -v -E '^[0-9]+ passed, [0-9]+ failed$'
  echo "$out" | grep -E 'FAIL( |:)' >>"$faildigest"
  line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -z "$line" ]; then
    echo "   FAIL: $script gave no verdict"
    echo "$what: $script gave no verdict" >>"$faildigest"
    fail=$((fail + 1))
    return
  fi
  p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
  pass=$((pass + p)); fail=$((fail + f))
}
script_part "whole job paused 3 s and resumed, 4 workers (no false detection, every reduction exact)" pause.sh \
  --trials 2
script_part "one worker stopped 3 s, then continued (declared failed; survivors exact or explicit errors; it ends too)" pause.sh \
  --trials 1 --one
script_part "whole job paused 3 s on simulated nodes a:2,b:3 (links over TCP)" pause.sh \
  --trials 1 --sim-nodes a:2,b:3
script_part "whole job paused 3 s, dred-master beside the job" pause.sh --trials 1 --external
script_part "dred-master stopped 3 s, then continued (every worker declares it lost; everyone ends)" pause.sh \
  --trials 1 --master
script_part "the job cancelled with SIGTERM mid-job (every process ends, leaving no socket or store)" pause.sh \
  --trials 1 --term

# 9. roll-forward (tests/faults/rollforward.sh): the executor of an absorption killed by
#    DRED_TEST_ABSORB_KILL halfway through its first piece, halfway through piece 513, and
#    after its last piece: a node peer finishes the absorption, every survivor exact.
DRED_MEET=0 script_part "executor killed inside an absorption at pieces 0, 513 and after the last (a node peer finishes it; exact)" \
  rollforward.sh

# 10. the randomized mix with a process loss in it (tests/faults/mix-faults.sh): a member
#     (or every member of a node) SIGKILLed at a random moment of a round mixing reduce,
#     allreduce and bcast on seven kinds of communicators; collectives whose group held a
#     victim end exact or in an explicit error, every other one exact.
script_part "the mix with a member killed mid-round, 4 members (collectives it had no part in exact)" mix-faults.sh \
  --trials 2 --np 4 --seed "$seed"
DRED_HEARTBEAT_MS=200 DRED_FAIL_TIMEOUT_MS=2000 DRED_MASTER_TIMEOUT_MS=4000 \
  script_part "the mix with a node lost mid-round, a:3,b:3,c:3" mix-faults.sh \
  --trials 2 --np 8 --sim-nodes a:3,b:3,c:3 --node --seed "$seed"
# A schedule that hung in 1 run of 3 before the fix in lib/robust/recover.c: one-node slots
# spill for want of pool room (8 MiB pools, 2 MB operands) while a member that never
# called dies, and dred-master asks a member still in its spilled slot to recover the dead
# one's operand before that member is rerouted.
DRED_POOL_MB=8 script_part "the mix, seed 2504: a RECOVER reaching a member still in its spilled slot (pools of 8 MiB; 5 runs)" \
  mix-faults.sh --trials 5 --np 4 --seed 2504 --fixed -- -B 2000000

# 11. a read that never completes (tests/faults/stall-read.sh): the LD_PRELOAD shim
#     tests/faults/stall_rget.c stalls one MPI_Rget of each process, as a survivor's
#     receive FIFO blocked by a process killed while writing into it does (between
#     simulated nodes): the reduction ends DRED_ERR_PROC_FAILED everywhere after twice
#     the failure timeout, every other one exact, the job ends.
script_part "a task's MPI_Rget that never completes, a:2,b:2 (its reduction PROC_FAILED everywhere, the rest exact, no hang)" \
  stall-read.sh --trials 2

# 12. a disagreeing member dead before its READY (tests/faults/unseen-mismatch.sh): the
#     copy it is recovered from states its own parameters, so the others see MISMATCH.
script_part "a member passing another op dies before its READY (MISMATCH everywhere; agreeing, exact)" \
  unseen-mismatch.sh

if [ -s "$faildigest" ]; then
  echo "== faults: the failing trials again, with their logs' last lines"
  while IFS= read -r fl; do
    echo "$fl"
    d=$(echo "$fl" | sed -n 's/.*(\(files: \|see \)\{0,1\}\([^()]*\))[[:space:]]*$/\2/p')
    [ -n "$d" ] && [ -d "$d" ] || continue
    for f in "$d"/rank.*.txt "$d"/stderr.* "$d"/master.err "$d"/dredrun.out; do
      [ -s "$f" ] || continue
      echo "   -- $(basename "$f") (last 8 lines)"
      tail -n 8 "$f" | cut -c1-300 | sed 's/^/      /'
    done
  done <"$faildigest"
fi
echo "faults: CSV $csv (seed $seed)"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
