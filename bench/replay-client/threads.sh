#!/bin/sh
# threads.sh - `atr replay llm --threads N`: how the client's throughput
# grows with its threads, and where the CPU goes, against nginx answering
# every request with a recorded `atr sim serve` answer (servers.sh; one
# worker, ~10 us of CPU a request, a quarter of the client's).
#
# usage: sh bench/replay-client/threads.sh ATR
#
# Per run and thread count (ATR_BENCH_THREADS, default "1 2"):
# ATR_BENCH_PEAK_N (60000) one-turn requests (32 prompt, 8 output tokens)
# all due at once. Nothing is pinned: the threads and the server share the
# machine's CPUs as in a user's run. Reported, medians of ATR_BENCH_RUNS
# (3) interleaved runs:
#   req/s         successes / (last end - first due)
#   client us/rq  the client process's user+sys CPU per request (start-up
#                 and reading the trace included)
#   server us/rq  nginx's worker, user+sys from /proc, per request
#   client cores  client CPU / wall time of the run; "all cores" adds the
#                 server's
# With 2 CPUs the second thread can only have what the server leaves, so
# req/s cannot double there: a flat "client us/rq" says the client itself
# scales (nothing shared between the threads costs CPU), "all cores" near
# the CPU count that the machine, not the client, was the limit.
set -eu

ATR=${1:?usage: threads.sh ATR}
RUNS=${ATR_BENCH_RUNS:-3}
THREADS=${ATR_BENCH_THREADS:-"1 2"}
PEAK_N=${ATR_BENCH_PEAK_N:-60000}
PY=python3
HERE=$(cd "$(dirname "$0")" && pwd)
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
[ -x "$ATR" ] || { echo "threads.sh: $ATR: not an executable" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-threads.XXXXXX")
SRV="" NGX="" PIN_SERVER=""
cleanup() {
    for p in $NGX $SRV; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. "$HERE/servers.sh"
start_sim_server
start_nginx
kill "$SRV" 2>/dev/null || true       # its answer is recorded; nginx serves it
wait "$SRV" 2>/dev/null || true
SRV=""
WORKER=$(ps -o pid= --ppid "$NGX" | tr -d ' ' | head -n 1)
[ -n "$WORKER" ] || { echo "threads.sh: no nginx worker under $NGX" >&2; exit 1; }

"$ATR" gen --kind requests --traces "$PEAK_N" --input-tokens 32 --output-tokens 8 --seed 1 \
    -r inf -q -o "$WORK/w.ndjson"

# ticks of user+sys CPU of a pid
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# one THREADS: prints "threads req/s client_s server_s wall_s"
one() {
    t0=$(ticks "$WORKER")
    /usr/bin/time -f "%U %S %e" -o "$WORK/time.txt" "$ATR" replay llm "$WORK/w.ndjson" \
        --target "$URL" --model atr-sim --rate inf --threads "$1" -q \
        --save-result "$WORK/r.json" >/dev/null 2>"$WORK/err.txt" ||
        { echo "threads.sh: atr replay llm --threads $1 failed:" >&2; cat "$WORK/err.txt" >&2; exit 1; }
    t1=$(ticks "$WORKER")
    "$PY" - "$1" "$WORK/r.json" "$WORK/time.txt" "$t0" "$t1" "$(getconf CLK_TCK)" <<'PY'
import json, sys
t, res, tm, t0, t1, hz = sys.argv[1:]
r = json.load(open(res))
u, s, e = map(float, open(tm).read().split()[-3:])
if r["failed"]:
    sys.exit("threads.sh: %d requests failed" % r["failed"])
print(t, r["request_throughput"], u + s, (float(t1) - float(t0)) / float(hz), e, r["completed"])
PY
}

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server:  $SERVER_SHOWN, not pinned; $PEAK_N requests at once; runs: $RUNS (median)"
echo
: >"$WORK/runs.txt"
run=1
while [ "$run" -le "$RUNS" ]; do
    for t in $THREADS; do
        line=$(one "$t")
        echo "$line" >>"$WORK/runs.txt"
        echo "$line" | awk -v r="$run" '{ printf "  run %d, %d thread(s): %.0f req/s\n", r, $1, $2 }' >&2
    done
    run=$((run + 1))
done

"$PY" - "$WORK/runs.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    t, rps, client, server, wall, n = line.split()
    rows.setdefault(int(t), []).append((float(rps), float(client), float(server), float(wall), int(n)))
med = statistics.median
base = None
print("%-8s %9s %6s %13s %13s %13s %10s" % ("threads", "req/s", "vs 1", "client us/rq",
      "server us/rq", "client cores", "all cores"))
for t in sorted(rows):
    r = rows[t]
    rps = med(x[0] for x in r)
    base = base or rps
    print("%-8d %9.0f %5.2fx %13.1f %13.1f %13.2f %10.2f" % (t, rps, rps / base,
          med(x[1] / x[4] * 1e6 for x in r), med(x[2] / x[4] * 1e6 for x in r),
          med(x[1] / x[3] for x in r), med((x[1] + x[2]) / x[3] for x in r)))
print("(client us/rq flat: each thread does the same work per request, nothing shared;")
print(" cores: CPU seconds / wall seconds of the run, start-up and reading the trace included)")
PY
