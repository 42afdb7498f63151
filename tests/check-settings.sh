#!/usr/bin/env bash
# check-settings.sh -- every DRED_* setting is defined once, in common/settings.h, and the
# docs, the man pages and the code all follow that table (make settings-check).
#
# Four checks, each against build/bin/dred-settings (the table, printed):
#   1. docs/configuration.md's settings table, between its marker comments, is exactly
#      `dred-settings --markdown`.
#   2. Every setting a worker (or "all") reads has an entry in man/dred.3's ENVIRONMENT
#      section, every setting the master (or "all") reads one in man/dred-master.1's: an
#      entry written by hand (a .TP whose header line names it) or one in the page's
#      generated block, which must be exactly `dred-settings --man READER --except <the
#      names the page describes by hand>`.
#   3. No getenv("DRED_...") outside common/settings.c: everything else reads through the
#      table (dred_setting_raw/_u64).  Test programs may read the test-only variables
#      docs/configuration.md lists by hand ("Settings of the test programs").
#   4. Every DRED_* variable the code or a script uses is in the table or that test-only
#      list.  Candidates: names in getenv/setenv/unsetenv calls in C, and in shell (deploy/,
#      tools/, tests/) `$DRED_X` / `${DRED_X...}` expansions and `DRED_X=` assignments --
#      not every DRED_ word, which would catch DRED_ERR_*, DRED_OK and macros.
# Why: a setting described in several places and read with getenv in several files drifts
# (missing from the man pages, one default in two places) and nothing fails.
# Usage: bash tests/check-settings.sh BUILD_DIR [--update]
#   --update rewrites the docs table and the man pages' generated blocks from the table
#   (then run it again without --update).
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:?usage: check-settings.sh BUILD_DIR [--update]}"
update=0; [ "${2:-}" = --update ] && update=1
gen="$build/bin/dred-settings"
[ -x "$gen" ] || { echo "settings-check: $gen missing: build first (make all)" >&2; exit 1; }
fail=0
bad() { echo "settings-check: $*" >&2; fail=1; }
tmp="$(mktemp -d /tmp/dred-settings-check.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

doc="$root/docs/configuration.md"
doc_begin='<!-- settings table: generated'
doc_end='<!-- end of settings table -->'
man_begin='.\" BEGIN generated settings'
man_end='.\" END generated settings'

# between FILE BEGIN END: the lines strictly between the two marker lines (prefix match).
# (Markers reach awk through the environment: -v would turn the man pages' \" into ".)
between() { B="$2" E="$3" awk 'index($0, ENVIRON["E"]) == 1 { on = 0 } on { print } index($0, ENVIRON["B"]) == 1 { on = 1 }' "$1"; }
# replace FILE BEGIN END NEWFILE: put NEWFILE's lines between the markers.
replace() {
  B="$2" E="$3" NEW="$4" awk '
    index($0, ENVIRON["E"]) == 1 { on = 0 }
    !on { print }
    index($0, ENVIRON["B"]) == 1 { on = 1; while ((getline l < ENVIRON["NEW"]) > 0) print l }' "$1" >"$tmp/replaced" &&
    cat "$tmp/replaced" >"$1"
}
markers() { # markers FILE BEGIN END: exactly one of each, in order
  local nb ne
  nb=$(grep -cF -- "$2" "$1"); ne=$(grep -cF -- "$3" "$1")
  [ "$nb" = 1 ] && [ "$ne" = 1 ] || { bad "${1#"$root"/} must have one '$2' and one '$3' marker line"; return 1; }
}

# 1. The docs table.
"$gen" --markdown >"$tmp/table.md" || { bad "dred-settings --markdown failed"; exit 1; }
if markers "$doc" "$doc_begin" "$doc_end"; then
  if [ "$update" = 1 ]; then replace "$doc" "$doc_begin" "$doc_end" "$tmp/table.md"; fi
  if ! between "$doc" "$doc_begin" "$doc_end" | diff -u --label "docs/configuration.md" \
       --label "dred-settings --markdown" - "$tmp/table.md" >"$tmp/doc.diff"; then
    head -40 "$tmp/doc.diff" >&2
    bad "docs/configuration.md's settings table is not common/settings.h's (run: bash tests/check-settings.sh $build --update)"
  fi
fi

# 2. The man pages.  env_section FILE: the ENVIRONMENT section without the generated block.
env_section() {
  B="$man_begin" E="$man_end" awk '
    /^\.SH / { on = ($0 ~ /^\.SH ENVIRONMENT/); next }
    index($0, ENVIRON["B"]) == 1 { gen = 1 } index($0, ENVIRON["E"]) == 1 { gen = 0; next }
    on && !gen' "$1"
}
# The names on entry header lines (the line after .TP) of the hand-written part.
hand_names() { env_section "$1" | awk 'tp { print } { tp = /^\.TP/ }' | grep -oE 'DRED_[A-Z0-9_]+' | sort -u; }
for pair in "man/dred.3 worker" "man/dred-master.1 master"; do
  page="$root/${pair% *}"; reader="${pair#* }"
  markers "$page" "$man_begin" "$man_end" || continue
  "$gen" --names "$reader" | sort -u >"$tmp/need"
  hand_names "$page" >"$tmp/hand"
  # shellcheck disable=SC2046
  "$gen" --man "$reader" --except $(comm -12 "$tmp/need" "$tmp/hand") >"$tmp/block"
  [ "$update" = 1 ] && replace "$page" "$man_begin" "$man_end" "$tmp/block"
  between "$page" "$man_begin" "$man_end" >"$tmp/have"
  for n in $(comm -23 "$tmp/need" "$tmp/hand"); do
    grep -qx "\.B $n" "$tmp/have" || bad "${pair% *}: $n (read by $reader) has no ENVIRONMENT entry"
  done
  if ! diff -u --label "${pair% *} (generated block)" --label "dred-settings --man $reader" \
       "$tmp/have" "$tmp/block" >"$tmp/man.diff"; then
    head -30 "$tmp/man.diff" >&2
    bad "${pair% *}'s generated settings block is not common/settings.h's (run: bash tests/check-settings.sh $build --update)"
  fi
done

# The test-only variables: backquoted names in the docs' "Settings of the test programs".
awk '/^## Settings of the test programs/ { on = 1; next } /^## / { on = 0 } on' "$doc" |
  grep -oE '`DRED_[A-Z0-9_]+`' | tr -d '`' | sort -u >"$tmp/testonly"
"$gen" --names | sort -u >"$tmp/table"
cat "$tmp/table" "$tmp/testonly" | sort -u >"$tmp/known"

# 3. getenv("DRED_...) only in common/settings.c (tests: test-only names only).
cd "$root" || exit 1
while IFS= read -r hit; do
  file="${hit%%:*}"; name="$(grep -oE 'getenv *\( *"DRED_[A-Z0-9_]+' <<<"$hit" | grep -oE 'DRED_[A-Z0-9_]+')"
  [ "$file" = common/settings.c ] && continue
  case "$file" in tests/*) grep -qx "$name" "$tmp/testonly" && continue ;; esac
  bad "$hit: read it through common/settings.h (dred_setting_raw/dred_setting_u64), not getenv"
done < <(grep -rnE --include='*.c' --include='*.h' 'getenv *\( *"DRED_' include common lib master storage interpose tools tests)

# 4. Every DRED_* variable used is known.
{
  grep -rhoE --include='*.c' --include='*.h' '(getenv|setenv|unsetenv|putenv) *\( *"DRED_[A-Z0-9_]+' \
    include common lib master storage interpose tools tests | grep -oE 'DRED_[A-Z0-9_]+' | sed 's/^/c /'
  # Shell and other script text: every file under deploy/, tools/, tests/ but C and docs.
  # (not this script: its comments show the patterns)
  find deploy tools tests -type f ! -name '*.[ch]' ! -name '*.md' ! -name '*.f90' \
    ! -path tests/check-settings.sh -print0 |
    xargs -0 grep -hoE '\$\{?DRED_[A-Z0-9_]+|(^|[^A-Za-z0-9_$"])DRED_[A-Z0-9_]+=' 2>/dev/null |
    grep -oE 'DRED_[A-Z0-9_]+' | sed 's/^/sh /'
} | sort -u >"$tmp/used"
while read -r kind name; do
  grep -qx "$name" "$tmp/known" ||
    bad "$name is used ($([ "$kind" = c ] && echo 'C getenv/setenv' || echo 'shell expansion or assignment')) but is neither in common/settings.h nor in docs/configuration.md's test-only list"
done <"$tmp/used"

if [ "$fail" = 0 ]; then
  echo "settings-check: ok ($(wc -l <"$tmp/table") settings; docs table and man pages match; no stray getenv or unknown DRED_ name)"
fi
exit "$fail"
