#!/usr/bin/env bash
# run-hostfile.sh -- run an MPI application under dred on hosts listed in a hostfile
# (MPICH's hydra mpiexec, no batch system).
#
#   run-hostfile.sh [options] -f HOSTFILE [-n P] APP [ARGS...]
#
# It works out what a hostfile run needs -- the process count from the hostfile's slots,
# a node-local storage directory of its own for this launch, where the journal will be --
# and hands the launch to dredrun(1), which builds the MPMD line
#   mpiexec -disable-auto-cleanup -f HOSTFILE -n 1 dred-master [FLAGS] : -n P APP ARGS
# (with whatever else dredrun adds for fault tolerance).  hydra fills the hosts in file
# order, so dred-master (rank 0) runs on the first host and its journal is DIR/journal.db
# there.  DIR must be node-local (replicas are written there on every host, SQLite needs a
# local file system); dredrun exports it as DRED_STORAGE_DIR, and hydra's default
# environment propagation gives every host the same value, with every other DRED_* variable.
#
# --external-master: dred-master runs here, beside the job (dredrun --external-master),
# and the application gets every slot (-n defaults to the total).
#
# Requirements: passwordless ssh from here to every host (hydra's launcher), the same
# paths for dred-master and APP on every host (or a shared file system), MPICH everywhere.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: run-hostfile.sh [options] -f HOSTFILE [-n P] APP [ARGS...]
  -f, --hostfile F   hydra hostfile: one "host[:slots]" per line, '#' comments;
                     dred-master runs on the first host
  -n P               application processes (default: total slots - 1, at least 1)
  -m, --master FLAGS extra dred-master flags, one quoted string (e.g. "--heartbeat-ms 200")
  -s, --storage DIR  node-local storage directory used on every host
                     (default $DRED_STORAGE_DIR, else /tmp/dred-<uid>-<date>-<pid>)
  --mpiexec CMD      mpiexec to use (default: $MPIEXEC or mpiexec)
  --external-master  dred-master on this host, beside the job (dredrun(1)); the
                     application gets every slot and its own MPI_COMM_WORLD
  --dry-run          print the command line instead of running it
  -h, --help         this text
Environment: DREDRUN (path to dredrun), DRED_MASTER (path to dred-master);
every DRED_* variable is passed on.
USAGE
}

die() { echo "run-hostfile.sh: $*" >&2; exit 2; }

hostfile=""; np=""; master_args=""; storage="${DRED_STORAGE_DIR:-}"; dry=0; external=()
mpiexec_cmd="${MPIEXEC:-mpiexec}"
while [ $# -gt 0 ]; do
  case "$1" in
    -f|--hostfile) [ $# -ge 2 ] || die "$1 needs a file"; hostfile="$2"; shift 2 ;;
    -n) [ $# -ge 2 ] || die "-n needs a number"; np="$2"; shift 2 ;;
    -m|--master) [ $# -ge 2 ] || die "$1 needs flags"; master_args="$2"; shift 2 ;;
    -s|--storage) [ $# -ge 2 ] || die "$1 needs a directory"; storage="$2"; shift 2 ;;
    --mpiexec) [ $# -ge 2 ] || die "--mpiexec needs a command"; mpiexec_cmd="$2"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --external-master) external=(--external-master); shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "run-hostfile.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -n "$hostfile" ] || { echo "run-hostfile.sh: -f HOSTFILE is required" >&2; usage >&2; exit 2; }
[ -r "$hostfile" ] || die "cannot read hostfile '$hostfile'"
[ $# -ge 1 ] || { echo "run-hostfile.sh: no application given" >&2; usage >&2; exit 2; }

# Slots and the first host, read the way hydra reads the file.
slots=0; first=""
while IFS= read -r line || [ -n "$line" ]; do
  line="${line%%#*}"
  read -r entry _ <<<"$line" || true
  [ -n "${entry:-}" ] || continue
  host="${entry%%:*}"
  n=1
  if [[ "$entry" == *:* ]]; then
    n="${entry#*:}"
    if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ]; then die "bad slot count in hostfile line '$entry'"; fi
  fi
  [ -n "$first" ] || first="$host"
  slots=$((slots + n))
done <"$hostfile"
[ "$slots" -ge 1 ] || die "hostfile '$hostfile' lists no hosts"
mslot=$((${#external[@]} == 0)) # the master's slot, unless it runs here beside the job
if [ -z "$np" ]; then
  np=$((slots - mslot)); [ "$np" -ge 1 ] || np=1
fi
if ! [[ "$np" =~ ^[0-9]+$ ]] || [ "$np" -lt 1 ]; then die "-n P must be a positive number, got '$np'"; fi
if [ $((np + mslot)) -gt "$slots" ]; then
  echo "run-hostfile.sh: warning: $((np + mslot)) processes on $slots slots: hosts will be oversubscribed" >&2
fi

# A per-launch directory by default: two jobs on the same hosts must not share replicas.
# One level under /tmp, because dred-master creates only the last component.
if [ -z "$storage" ]; then
  storage="/tmp/dred-$(id -u)-$(date +%Y%m%d-%H%M%S)-$$"
fi
case "$storage" in /*) ;; *) die "storage directory must be an absolute path (it is used on every host): '$storage'" ;; esac

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dredrun="${DREDRUN:-}"
if [ -z "$dredrun" ]; then
  for c in "$here/../dredrun" "$here/../../bin/dredrun"; do
    if [ -f "$c" ]; then dredrun="$(cd "$(dirname "$c")" && pwd)/dredrun"; break; fi
  done
fi
[ -n "$dredrun" ] || dredrun="$(command -v dredrun || true)"
[ -n "$dredrun" ] || die "dredrun not found (set DREDRUN)"

cmd=(bash "$dredrun" ${external[@]+"${external[@]}"} -f "$hostfile" -s "$storage" --mpiexec "$mpiexec_cmd")
[ -z "$master_args" ] || cmd+=(-m "$master_args")
cmd+=(-n "$np" "$@")

if [ "$dry" = 1 ]; then
  echo "DRED_STORAGE_DIR=$storage"
  exec "${cmd[@]:0:2}" --dry-run "${cmd[@]:2}"
fi
[ "$mslot" = 1 ] || first="$(hostname) (beside the job)"
echo "run-hostfile.sh: dred-master on $first, $np application processes; journal $first:$storage/journal.db" >&2
exec "${cmd[@]}"
