#!/bin/sh
# kill-after.sh N LOG COMMAND... - runs COMMAND (a llama-server), its output
# into LOG and on to stdout, and kills it with SIGKILL once it has logged
# "slot release" N times (N requests done), then dies of SIGKILL itself: a
# server that crashes mid-benchmark at a known request, for
# test-llama-bench.sh. tail -f follows the log as it grows (no polling).
n=$1 log=$2
shift 2
: >"$log"
"$@" >>"$log" 2>&1 &
pid=$!
tail -n +1 -f --pid="$pid" "$log" |
    awk -v n="$n" -v pid="$pid" '{ print; fflush() }
        /slot +release/ && ++k == n { system("kill -9 " pid); exit }'
wait "$pid"
kill -9 $$
