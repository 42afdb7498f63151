# jobprocs.sh -- finding every process of a test job, by pid (sourced by the fault scripts).
#
# A test must clean up every process it started, and only those: never by name (another
# user's or another job's dred-master would go too).  Two ways cover a job:
#   tree_pids PID        every process below PID (the launcher).  Hydra gives each proxy
#                        and each process a session of its own, so a session or process
#                        group id does not cover them, but parent links do while they live;
#   marked_pids VAR=VAL  processes whose environment carries the trial's marker variable:
#                        leftovers whose parent is already gone.  One grep over every
#                        environ file (-z: NUL-separated entries; our own user's only).

tree_pids() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END { inside[root] = 1
          do { grew = 0
               for (p in parent) if (!(p in inside) && (parent[p] in inside)) { inside[p] = 1; grew = 1 }
          } while (grew)
          for (p in inside) if (p in parent) print p }'
}

marked_pids() {
  grep -l -a -z -x -F "$1" /proc/[0-9]*/environ 2>/dev/null |
    sed -e 's|^/proc/||' -e 's|/environ$||'
}

# alive PID: the process exists and is not a zombie (the state after the command name,
# which may hold spaces and parentheses)
alive() {
  local st
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# job_end PID MARKER SECONDS: wait at most SECONDS for the job led by PID (started in the
# background by the caller, who still reaps it with `wait`) to end, then kill what is left
# of it (tree_pids, marked_pids MARKER).  Prints why it failed; nothing when it ended in
# time and left no process behind.
job_end() {
  local sid=$1 marker=$2 limit=$3 why="" left
  for _ in $(seq 1 $((limit * 10))); do
    kill -0 "$sid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$sid" 2>/dev/null && why="the job did not end within $limit s"
  left=$( (tree_pids "$sid"; marked_pids "$marker") | sort -u)
  if [ -n "$left" ]; then
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
    why="${why:+$why; }$(echo $left | wc -w) process(es) left behind"
  fi
  echo "$why"
}
