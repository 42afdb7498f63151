#!/usr/bin/env bash
# run-unit.sh -- run CMocka unit-test binaries, each under its own timeout.
#
#   bash tests/run-unit.sh BIN...
#
# Prints one result line per binary (its output too when it fails), then the single line
# "N passed, N failed" (N counts binaries) and exits non-zero if any binary failed.
# Environment: UNIT_TIMEOUT seconds per binary (default 60), multiplied by
# DRED_TEST_TIMEOUT_SCALE (default 1, e.g. 3 under sanitizers).
set -u

limit=${UNIT_TIMEOUT:-60}
scale=${DRED_TEST_TIMEOUT_SCALE:-1}
limit=$(awk -v a="$limit" -v b="$scale" 'BEGIN { v = a * b; if (v < 1) v = 1; printf "%d", v }')

passed=0
failed=0
for bin in "$@"; do
  name=$(basename "$bin")
  if [ ! -x "$bin" ]; then
    echo "FAIL $name: not found or not executable ($bin)"
    failed=$((failed + 1))
    continue
  fi
  out=$(mktemp "${TMPDIR:-/tmp}/dred-unit.XXXXXX")
  start=$(date +%s.%N)
  # -k: SIGKILL if it ignores SIGTERM; stdin closed so nothing waits on a terminal
  timeout -k 5 "$limit" "$bin" </dev/null >"$out" 2>&1
  rc=$?
  secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  if [ "$rc" -eq 0 ]; then
    # CMocka's own summary line, e.g. "[  PASSED  ] 12 test(s)."
    summary=$(grep -E '^\[  PASSED  \]' "$out" | tail -n 1 | sed 's/^\[  PASSED  \] *//')
    echo "PASS $name (${secs} s)${summary:+ - $summary}"
    passed=$((passed + 1))
  else
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      why="timed out after ${limit} s"
    elif [ "$rc" -gt 128 ]; then
      why="killed by signal $((rc - 128))"
    else
      why="exit status $rc"
    fi
    echo "FAIL $name: $why (${secs} s)"
    sed 's/^/    | /' "$out" | tail -n 60
    failed=$((failed + 1))
  fi
  rm -f "$out"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
