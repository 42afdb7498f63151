#!/usr/bin/env bash
# fifo-block.sh -- run tests/faults/fifo_block.c (the node-loss hang without dred) N times.
#
#   bash tests/faults/fifo-block.sh [N] [FIRST_SEED]
#
# Each run: 4 processes on simulated nodes a:1,b:2,c:1 over UCX shared memory (UCX_TLS as
# dredrun --sim-nodes sets it), rank 1 SIGKILLed by rank 3 while it serves rank 0's reads,
# then a read of live rank 3.  Prints one line per run and the count of STUCK reads.
set -u
BUILD=${BUILD:-build}
n=${1:-20} first=${2:-1}
make -s BUILD="$BUILD" "$BUILD/tests/fifo_block" "$BUILD/bin/dred-launch" || exit 2
export UCX_TLS=${UCX_TLS:-^cma,tcp} MPIR_CVAR_DEVICE_COLLECTIVES=none
stuck=0 done=0
for ((s = first; s < first + n; s++)); do
  out=$(timeout 60 mpiexec -launcher fork -hosts a:1,b:2,c:1 -n 4 "$BUILD/bin/dred-launch" \
        "$BUILD/tests/fifo_block" "$s" 2>/dev/null | grep -E '^(fifo_block|  )')
  echo "${out:-fifo_block seed $s: no answer}"
  case "$out" in *STUCK*) stuck=$((stuck + 1)) ;; *COMPLETED*) done=$((done + 1)) ;; esac
done
echo "fifo-block: $n runs: $done live reads completed, $stuck stuck"
