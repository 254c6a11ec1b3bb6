#!/bin/sh
# run.sh - simulated requests per CPU-second of `atr sim run` on a
# 10,000-request agent workload (issue 4's simulator benchmark).
#
# usage: sh bench/sim/run.sh ATR         (make bench-sim runs it)
#
# Generates `atr gen --kind swe` sessions until they hold at least 10,000
# llm requests (seeded, so every run simulates the same workload), then
# times `atr sim run` on h100/llama-3.1-8b under three loads: sessions
# arriving at 0.5/s (light: small batches), at 5/s (busy), and all at once
# (KV cache full, preemptions). Each load runs RUNS (3) times; the table
# gives the median user+system CPU time, simulated requests per CPU-second,
# how much faster than real time the simulation ran (simulated duration
# / wall time), the peak resident memory of those runs (the largest) in MB
# and KB per request, and that of one more run writing --requests-out (it
# should be the same: lines are written a record at a time), and beside the
# times the instructions of one run counted by callgrind, in all and per
# request (a figure the host's noise does not move; "-" without valgrind).
# Leaves no files behind. A faster build must also simulate alike: check it with
# `sh bench/sim/same-results.sh BASE NEW` (FULL=1 adds this workload).
set -eu

# Every request is simulated to its end: sim run's client timeouts (as
# replay llm's: --stall-timeout 60 s without a token, --timeout 600 s) fail
# two in five requests of the all-at-once load (preempted, then stalled),
# which would time a smaller job than the table says.
NOTO="--timeout 0 --stall-timeout 0"
ATR=${1:?usage: run.sh ATR}
RUNS=${ATR_BENCH_RUNS:-3}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-sim.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

"$ATR" gen -q --kind swe --traces 350 --seed 4 -o "$TMP/w.ndjson"
"$ATR" sim run -q "$TMP/w.ndjson" --profile h100/llama-3.1-8b --rate inf $NOTO \
    --save-result "$TMP/probe.json"
n=$(python3 -c "import json; r = json.load(open('$TMP/probe.json')); print(r['completed'] if not r['failed'] else -1)")
[ "$n" -ge 10000 ] || { echo "run.sh: workload has only $n completed requests (-1: some failed)" >&2; exit 1; }

printf '%-18s %9s %10s %14s %12s %12s %8s %7s %12s %9s %9s\n' load requests "cpu s" \
    "req/cpu-s" "sim s" "x realtime" "RSS MB" "KB/req" "+req-out MB" "instr G" "instr/req"
for load in 0.5 5 inf; do
    : >"$TMP/times"
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" "$ATR" sim run -q "$TMP/w.ndjson" \
            --profile h100/llama-3.1-8b --rate "$load" $NOTO --save-result "$TMP/r.json"
        cat "$TMP/t" >>"$TMP/times"
    done
    /usr/bin/time -f "%M" -o "$TMP/rss" "$ATR" sim run -q "$TMP/w.ndjson" \
        --profile h100/llama-3.1-8b --rate "$load" $NOTO --requests-out "$TMP/q.ndjson"
    rm -f "$TMP/q.ndjson"
    echo - >"$TMP/ir"
    if command -v valgrind >/dev/null; then
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$ATR" sim run -q \
            "$TMP/w.ndjson" --profile h100/llama-3.1-8b --rate "$load" $NOTO 2>&1 >/dev/null |
            sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' >"$TMP/ir"
    fi
    python3 - "$TMP/times" "$TMP/r.json" "$load" "$TMP/rss" "$TMP/ir" <<'PY'
import json, statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
cpu = statistics.median(r[1] + r[2] for r in rows)
wall = statistics.median(r[0] for r in rows)
rss_kb = max(r[3] for r in rows)
rss_out_kb = float(open(sys.argv[4]).read())
r = json.load(open(sys.argv[2]))
name = "all at once" if sys.argv[3] == "inf" else sys.argv[3] + " sessions/s"
ir = open(sys.argv[5]).read().strip()
ir_g, ir_req = ("%.3f" % (int(ir) / 1e9), "%.0f" % (int(ir) / r["completed"])) \
    if ir.isdigit() else ("-", "-")
print("%-18s %9d %10.2f %14.0f %12.0f %12.0f %8.0f %7.1f %12.0f %9s %9s" % (
    name, r["completed"], cpu, r["completed"] / max(cpu, 1e-3), r["duration"],
    r["duration"] / max(wall, 1e-3), rss_kb / 1024, rss_kb / r["completed"],
    rss_out_kb / 1024, ir_g, ir_req))
PY
done
