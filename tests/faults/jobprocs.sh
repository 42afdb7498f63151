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
