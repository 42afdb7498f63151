#!/usr/bin/env bash
# install-deps.sh -- make sure the Debian packages dred builds and runs with are present.
# Installs what is missing when run as root (or with sudo available); otherwise prints the
# exact command to run.  Used by `make run`, `make test` and deploy/ on Debian/Ubuntu.
set -euo pipefail
pkgs=(mpich libmpich-dev libuv1-dev libsqlite3-dev libcmocka-dev pkg-config gnuplot-nox stress-ng shellcheck python3 groff-base file sqlite3 clang)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "dred: installing missing packages: ${missing[*]}"
if ! command -v apt-get >/dev/null; then
  echo "dred: apt-get not found; install these packages with your system's package manager: ${missing[*]}" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
    echo "dred: not root; run:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh private log (mktemp: 0600, a new name): a fixed name in /tmp written as root
# would follow a link another user planted there.
log="$(mktemp "${TMPDIR:-/tmp}/dred-apt.XXXXXX.log")"
if ! $sudo apt-get install -y -q "${missing[@]}" >"$log" 2>&1; then
  $sudo apt-get update -q >>"$log" 2>&1 || true
  if ! $sudo apt-get install -y -q "${missing[@]}" >>"$log" 2>&1; then
    echo "dred: apt-get install failed (log: $log); run: apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
rm -f "$log"
echo "dred: packages installed"
