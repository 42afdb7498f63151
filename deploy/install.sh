#!/usr/bin/env bash
# install.sh -- build and install dred on Debian/Ubuntu.
#
#   deploy/install.sh [--prefix DIR] [--jobs N] [--no-deps] [--dry-run]
#
# Steps: (1) deploy/install-deps.sh installs the Debian packages dred needs (MPICH, libuv,
# SQLite, gnuplot, ...) when they are missing; (2) `make all` in the source tree; (3) `make
# install PREFIX=DIR` (binaries, libdred, dred.h, pkg-config file, man pages); (4) a smoke
# check that the installed dred-master and dredstat run.  Install into a prefix you can write
# (default /usr/local needs root: sudo is used for that step only, non-interactively);
# --prefix "$HOME/.local" needs no privileges.  --dry-run prints the commands, runs nothing.
# Every node that runs dred needs the same installation (or a shared prefix).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: deploy/install.sh [--prefix DIR] [--jobs N] [--no-deps] [--dry-run]
  --prefix DIR   installation prefix (default /usr/local)
  --jobs N       parallel make jobs (default: number of CPUs)
  --no-deps      do not check/install Debian packages
  --dry-run      print the commands instead of running them
  -h, --help     this text
USAGE
}

die() { echo "install.sh: $*" >&2; exit 2; }

prefix=/usr/local; jobs="$(nproc 2>/dev/null || echo 2)"; deps=1; dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --jobs|-j) [ $# -ge 2 ] || die "$1 needs a number"; jobs="$2"; shift 2 ;;
    --no-deps) deps=0; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) die "--prefix must be an absolute path, got '$prefix'" ;; esac
if ! [[ "$jobs" =~ ^[0-9]+$ ]] || [ "$jobs" -lt 1 ]; then die "--jobs must be a positive number"; fi

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -f "$src/Makefile" ] || die "no Makefile in $src: run this script from a dred source tree"

run() { # print, then run unless --dry-run
  printf '+'; printf ' %q' "$@"; echo
  [ "$dry" = 1 ] || "$@"
}

# Installing into a prefix we cannot write: sudo for that step only, never a password prompt.
sudo_cmd=()
probe="$prefix"
while [ ! -e "$probe" ]; do probe="$(dirname "$probe")"; done
if [ ! -w "$probe" ] && [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && { [ "$dry" = 1 ] || sudo -n true 2>/dev/null; }; then
    sudo_cmd=(sudo -n)
  else
    die "$prefix is not writable and sudo is not available without a password: use --prefix \"\$HOME/.local\" or run as root"
  fi
fi

if [ "$deps" = 1 ]; then
  if ! command -v dpkg-query >/dev/null; then
    die "not a Debian/Ubuntu system (no dpkg-query): install MPICH, libuv, SQLite3, CMocka, pkg-config and gnuplot yourself, then rerun with --no-deps"
  fi
  run bash "$src/deploy/install-deps.sh"
fi
run make -C "$src" -j "$jobs" all
run ${sudo_cmd[@]+"${sudo_cmd[@]}"} make -C "$src" install PREFIX="$prefix"

if [ "$dry" = 1 ]; then echo "install.sh: dry run: nothing was run"; exit 0; fi
"$prefix/bin/dred-master" --help >/dev/null || die "installed dred-master does not run"
"$prefix/bin/dredstat" --help >/dev/null || die "installed dredstat does not run"
cat <<EOF
install.sh: dred installed in $prefix.  If $prefix is not a system prefix, add:
  export PATH="$prefix/bin:\$PATH"
  export MANPATH="$prefix/share/man:\${MANPATH:-}"
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:\${PKG_CONFIG_PATH:-}"
Build an application:  mpicc app.c \$(pkg-config --cflags --libs dred) -o app
Run it:                dredrun -n 4 ./app   (see dredrun(1), dredstat(1), dred(3))
EOF
