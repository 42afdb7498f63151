#!/usr/bin/env bash
# check-readme.sh -- README.md's C programs compile and run as printed (`make readme-check`).
#
#   BUILD=build bash tests/check-readme.sh [FILE.md]
#
# Every ```c block of the file (README.md by default) must be a whole program.  The script
# installs the build into a temporary prefix (`make install PREFIX=...`, so dred.pc, the
# headers, libdred and dredrun are the installed ones), compiles each block the way README
# says, `mpicc prog.c $(pkg-config --cflags --libs dred)`, and runs it with the installed
# dredrun, -n 3, once in the MPMD form and once with --external-master, each bounded by
# `timeout`, with a fresh DRED_STORAGE_DIR.  A program passes when it compiles without
# warnings (-Wall -Wextra -Werror) and every run exits 0.  Prints "N passed, N failed".
# Environment: BUILD (default build), README_NP (default 3), README_TIMEOUT seconds per run
# (default 60, times DRED_TEST_TIMEOUT_SCALE).
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
BUILD=${BUILD:-build}
md=${1:-README.md}
np=${README_NP:-3}
scale=${DRED_TEST_TIMEOUT_SCALE:-1}
limit=$(awk -v a="${README_TIMEOUT:-60}" -v b="$scale" 'BEGIN { printf "%d", a * b }')

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dred-readme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
if ! make --no-print-directory -s install BUILD="$BUILD" PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"; echo "readme-check: make install PREFIX=$prefix failed"; exit 1
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PATH="$prefix/bin:$PATH"

# Split the ```c blocks into $tmp/block-N.c; N counts blocks from 1.
awk -v dir="$tmp" '
  /^```c[[:space:]]*$/ { n++; f = sprintf("%s/block-%d.c", dir, n); inblock = 1; next }
  inblock && /^```/ { inblock = 0; close(f); next }
  inblock { print > f }
' "$md"

passed=0
failed=0
shopt -s nullglob
blocks=("$tmp"/block-*.c)
if [ "${#blocks[@]}" -eq 0 ]; then echo "readme-check: no \`\`\`c block in $md"; exit 1; fi
for src in "${blocks[@]}"; do
  name="$md:$(basename "$src" .c)"
  bin="${src%.c}"
  start=$(date +%s.%N)
  # shellcheck disable=SC2046  # pkg-config's output is deliberately word-split, as in README
  if ! mpicc -Wall -Wextra -Werror "$src" $(pkg-config --cflags --libs dred) -o "$bin" >"$bin.cc.log" 2>&1; then
    echo "FAIL $name: does not compile"; sed 's/^/    | /' "$bin.cc.log"
    failed=$((failed + 1)); continue
  fi
  why=""
  for form in mpmd external; do
    ext=(); [ "$form" = external ] && ext=(--external-master)
    storage=$(mktemp -d "$tmp/storage.XXXXXX")
    DRED_STORAGE_DIR="$storage" timeout -k 5 "$limit" dredrun "${ext[@]}" -n "$np" "$bin" \
      </dev/null >"$bin.$form.log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ]; then
      why="$form run: exit status $rc$([ "$rc" -eq 124 ] && echo " (timed out after ${limit} s)")"
      sed 's/^/    | /' "$bin.$form.log" | tail -n 20
      break
    fi
  done
  secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  if [ -z "$why" ]; then
    echo "PASS $name (${secs} s): $(head -n 1 "$bin.mpmd.log")"
    passed=$((passed + 1))
  else
    echo "FAIL $name: $why"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
