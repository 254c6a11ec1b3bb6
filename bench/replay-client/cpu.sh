#!/bin/sh
# cpu.sh - CPU per request of clients at 10 000 req/s against the C stub,
# interleaved round by round (BENCHMARKS.md, issue 33 point 2).
#
# usage: sh bench/replay-client/cpu.sh ROUNDS PY_ROUNDS CLIENT...
#   CLIENT: NAME=ATR (an atr binary, e.g. base=/tmp/atr-274a5b8 new=build/atr),
#           floor (floor.c: the cheapest client there is) or py (the fair
#           Python client, aiohttp with a pool of 512; only in the first
#           PY_ROUNDS rounds: it runs ~30-90 s a round).
# Per round and client: a fresh stub (stub.c, the sim server's recorded
# answer) on CPU 1, the client on CPU 0, 30 000 requests asked at 10 000/s
# with constant arrivals. Prints one line per run: client round user_us
# sys_us total_us (a request; atr: the whole process from /usr/bin/time,
# start-up and reading the trace in; Python: its own figure for the run)
# server_rate lag_p99_ms (arrivals.py, what the stub saw) load1; then the
# medians and ranges per client.
set -eu

[ $# -ge 3 ] || { echo "usage: cpu.sh ROUNDS PY_ROUNDS CLIENT..." >&2; exit 2; }
ROUNDS=$1 PY_ROUNDS=$2
shift 2
N=${ATR_BENCH_CPU_N:-30000} RATE=${ATR_BENCH_CPU_RATE:-10000}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-cpu.XXXXXX")
STUB=""
cleanup() {
    [ -n "$STUB" ] && kill "$STUB" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ATR=""   # the first atr named: records the answer, makes the workload
for c in "$@"; do
    case $c in *=*) ATR=${ATR:-${c#*=}} ;; esac
done
if [ -z "$ATR" ] || [ ! -x "$ATR" ]; then
    echo "cpu.sh: no NAME=ATR client with an executable atr" >&2
    exit 2
fi
cc -O2 -o "$WORK/stub" "$HERE/stub.c"
cc -O2 -o "$WORK/floor" "$HERE/floor.c"
"$ATR" gen --kind requests --traces "$N" --input-tokens 32 --output-tokens 8 --seed 1 \
    -o "$WORK/w.ndjson" 2>/dev/null
# servers.sh records the stub's answer from atr sim serve; it reads
# PIN_SERVER, WORK, ATR and PY.
# shellcheck disable=SC2034
PIN_SERVER=""
# shellcheck source=bench/replay-client/servers.sh
. "$HERE/servers.sh"
start_sim_server
start_stub
kill "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null || true

# up: a fresh stub on CPU 1 (its log in $WORK/arrivals.log); sets URL.
up() {
    rm -f "$WORK/stub.out" "$WORK/arrivals.log"
    taskset -c 1 "$WORK/stub" "$WORK/answer.sse" "$WORK/arrivals.log" >"$WORK/stub.out" 2>&1 &
    STUB=$!
    i=0
    while ! grep -q 'listening on' "$WORK/stub.out" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -lt 500 ] || { echo "cpu.sh: the stub did not start" >&2; exit 1; }
        sleep 0.02
    done
    URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$WORK/stub.out")
}

down() {
    kill "$STUB"
    wait "$STUB" 2>/dev/null || true
    STUB=""
}

# run CLIENT: prints "user_us sys_us" a request.
run() {
    case $1 in
    floor)
        answer=$(curl -si -X POST "$URL/v1/completions" -d '{}' | wc -c)
        taskset -c 0 "$WORK/floor" "${URL##*:}" "$N" "$RATE" "$answer" |
            sed -n 's/.*user \([0-9.]*\) us, system \([0-9.]*\) us.*/\1 \2/p' ;;
    py)
        timeout 300 taskset -c 0 "$PY" "$HERE/vllm_client.py" --base-url "$URL" --model atr-sim \
            --rate "$RATE" --num-requests "$N" --out "$WORK/py.json" --limit 512 >/dev/null 2>&1
        "$PY" -c 'import json, sys; j = json.load(open(sys.argv[1])); n = int(sys.argv[2])
print(j["cpu_user_s"] * 1e6 / n, j["cpu_sys_s"] * 1e6 / n)' "$WORK/py.json" "$N" ;;
    *=*)
        /usr/bin/time -f "%U %S" -o "$WORK/time.txt" taskset -c 0 "${1#*=}" replay llm \
            "$WORK/w.ndjson" --target "$URL" --model atr-sim --rate "$RATE" --arrival constant \
            -q >/dev/null 2>"$WORK/atr.err"
        awk -v n="$N" '{ print $1 * 1e6 / n, $2 * 1e6 / n }' "$WORK/time.txt" ;;
    esac
}

: >"$WORK/rows.txt"
for r in $(seq 1 "$ROUNDS"); do
    for c in "$@"; do
        [ "$c" = py ] && [ "$r" -gt "$PY_ROUNDS" ] && continue
        load=$(cut -d' ' -f1 /proc/loadavg)
        up
        us=$(run "$c" || true)
        down
        [ -n "$us" ] || { echo "cpu.sh: $c round $r gave no figure" >&2; continue; }
        srv=$("$PY" "$HERE/arrivals.py" "$WORK/arrivals.log" "$N" "$RATE" | awk '{ print $1, $3 }')
        echo "${c%%=*} $r $us $srv $load" |
            awk '{ printf "%-6s %2d %7.1f %7.1f %7.1f %8.0f %9.3f %s\n", $1, $2, $3, $4, $3 + $4, $5, $6, $7 }' |
            tee -a "$WORK/rows.txt"
    done
done
"$PY" - "$WORK/rows.txt" <<'EOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    f = line.split()
    by.setdefault(f[0], []).append([float(x) for x in f[2:5]])
for name, rows in by.items():
    cols = []
    for i, what in enumerate(("user", "system", "total")):
        v = sorted(r[i] for r in rows)
        cols.append("%s %.1f (%.1f-%.1f)" % (what, statistics.median(v), v[0], v[-1]))
    print("%-6s n=%d  %s us a request, median (range)" % (name, len(rows), ", ".join(cols)))
EOF
