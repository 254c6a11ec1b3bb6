#!/bin/sh
# run.sh - the checks of atr's intervals and verdicts (docs/statistics.md,
# issue 31): the false-verdict rate of A/A comparisons and the power on a
# real 10 % change, simulated with noise measured here and on real
# `atr sim serve` runs.
#
# usage: sh bench/statistics/run.sh ATR [OUT]    (after make build)
#
# 1. RUNS (40) runs of one workload (`atr gen --kind requests`, 400
#    requests of 256 in / 32 out, seed 3, sent at once, 64 in flight)
#    against one `atr sim serve --profile h100/llama-3.1-8b` (the A/A
#    runs), and as many against a second server with --time-scale 1.1
#    (every simulated second takes 1.1 s: a real 10 % slowdown), the two
#    interleaved (A B A B ...), after one uncounted warm-up run on each.
# 2. Noise from the A runs: per figure the sd of log values (plain, and
#    robust: 1.4826 MAD), the runs 3 robust sds off and their typical size.
# 3. Simulated checks (cistat sim): 200 A/A pairs at 5 repeats a side and
#    200 pairs with a 10 % change, log-normal noise of the measured robust
#    sd, outliers at the measured rate and size, a drift of 5 % across each
#    pair's runs; the same with the noise of llama-server's repeated runs
#    on this machine (BENCHMARKS.md, issue 29: TTFT medians of 5 runs),
#    at 5, 10 and 20 repeats; and a grid of noise levels.
# 4. Real pairs, within one run (atr_ci_ratio_runs over requests): A/A
#    pairs (A runs 2i and 2i+1) and 10 % pairs (A run i against B run i),
#    on TTFT p50 / p99, TPOT p50 and E2EL p99.
# 5. Real pairs over repeats (atr_ci_ratio, 5 runs a side): A/A and 10 %,
#    on throughput, TTFT p99 and E2EL p99.
# OUT (default build/statistics) keeps the runs and table.md. The servers
# are stopped on exit. llama-server is not run (scripts/llama.sh --status
# says whether it is built; the 20 real pairs on it are left to a machine
# where it is).
set -eu
ATR=${1:?usage: run.sh ATR [OUT]}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${2:-$ROOT/build/statistics}
RUNS=${RUNS:-40}
CC=${CC:-cc}
LIB=$(dirname "$ATR")/libatrlib.a
rm -rf "$OUT"
mkdir -p "$OUT"
# shellcheck disable=SC2046
$CC -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I "$ROOT/src" "$ROOT/bench/statistics/cistat.c" \
    "$LIB" $(pkg-config --libs zlib libzstd libxxhash libzip libevent libcurl libseccomp libcrypto) \
    -lm -o "$OUT/cistat"
CISTAT=$OUT/cistat

pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done' EXIT
trap 'exit 130' INT TERM

# serve NAME ARGS... : an `atr sim serve` on a free port; sets PORT once it
# prints its listening line (polled, 20 s at most).
serve() {
    name=$1; shift
    "$ATR" sim serve --profile h100/llama-3.1-8b "$@" --port 0 >"$OUT/$name.out" 2>"$OUT/$name.err" &
    pids="$pids $!"
    deadline=$(($(date +%s) + 20))
    PORT=""
    while [ -z "$PORT" ] && [ "$(date +%s)" -lt "$deadline" ]; do
        PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$OUT/$name.out")
        [ -n "$PORT" ] || sleep 0.05
    done
    [ -n "$PORT" ] || { echo "run.sh: server $name did not start: $(cat "$OUT/$name.err")" >&2; exit 1; }
}

"$ATR" gen -q --kind requests --traces 400 --input-tokens 256 --output-tokens 32 --seed 3 \
    -o "$OUT/req.ndjson"
serve a
PORT_A=$PORT
serve b --time-scale 1.1
PORT_B=$PORT

# One uncounted run per server first: a fresh server's prefix cache is
# empty, so its first run is slower (half the throughput, 7x the TTFT p99
# here) than every later one, which find the workload's prefixes cached.
for port in "$PORT_A" "$PORT_B"; do
    "$ATR" replay llm -q "$OUT/req.ndjson" --target "http://127.0.0.1:$port" --rate inf \
        --max-concurrency 64
done
echo "runs: $RUNS of A and of B, interleaved ($(date -u +%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))"
i=0
while [ "$i" -lt "$RUNS" ]; do
    for side in a b; do
        port=$PORT_A
        [ "$side" = b ] && port=$PORT_B
        "$ATR" replay llm -q "$OUT/req.ndjson" --target "http://127.0.0.1:$port" --rate inf \
            --max-concurrency 64 --save-result "$OUT/$side$i.json" --requests-out "$OUT/$side$i.ndjson"
    done
    i=$((i + 1))
done
echo "runs done ($(date -u +%H:%M) UTC)"

python3 "$ROOT/bench/statistics/analyze.py" "$OUT" "$RUNS" "$CISTAT"
