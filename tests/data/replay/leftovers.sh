#!/bin/sh
# leftovers.sh PID [DIR] - what the atr run PID left behind, looking at
# nothing but what that run made: processes of its session (the tests
# start atr with setsid, so its pid is its session id, which the steps
# keep), cgroups named "atr-PID", and with DIR (its --workdir) any work
# directory there. One line per leftover; nothing when clean.
pid=$1 dir=${2:-}
for p in /proc/[0-9]*; do
    # stat: "pid (comm) state ppid pgrp session ..."; comm may hold spaces
    st=$(sed 's/.*) //' "$p/stat" 2>/dev/null) || continue
    set -- $st
    # a zombie is dead already: reaping it is its parent's (or init's) job
    [ "${1:-}" != Z ] && [ "${4:-}" = "$pid" ] && echo "process ${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
done
find /sys/fs/cgroup -maxdepth 8 -type d -name "atr-$pid" 2>/dev/null | sed 's/^/cgroup /'
if [ -n "$dir" ]; then
    for d in "$dir"/atr-work-*; do
        [ -e "$d" ] && echo "work directory $d"
    done
fi
exit 0
