#!/bin/sh
# run.sh - `atr sweep` beside a stdlib-asyncio re-implementation of GuideLLM's
# sweep method (guidellm_method.py), same server, same request count and the
# same rates, ATR_BENCH_RUNS rounds in alternating order; prints per-round
# tables and medians (summarize.py). See bench/README.md "sweep".
#
# usage: sh bench/sweep/run.sh [ATR_BINARY]      (default build/atr)
# env:   ATR_BENCH_RUNS (3) rounds; ATR_BENCH_N (100) requests per run;
#        ATR_BENCH_RATES (5) rate runs; ATR_BENCH_TTFT (20) and ATR_BENCH_ITL
#        (5) ms of the server; ATR_BENCH_IN (128) / ATR_BENCH_OUT (16) tokens
#
# One `atr sim serve --ttft T --itl I --port 0` serves every run, pinned to
# CPU 1, the clients to CPU 0 (when there are two CPUs). Everything goes to a
# mktemp -d directory that the exit trap removes, with the server.
set -eu

ATR=${1:-build/atr}
RUNS=${ATR_BENCH_RUNS:-3}
N=${ATR_BENCH_N:-100}
RATES=${ATR_BENCH_RATES:-5}
TTFT=${ATR_BENCH_TTFT:-20}
ITL=${ATR_BENCH_ITL:-5}
IN=${ATR_BENCH_IN:-128}
OUT=${ATR_BENCH_OUT:-16}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}

[ -x "$ATR" ] || { echo "run.sh: no atr binary at $ATR (build it first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "run.sh: needs /usr/bin/time" >&2; exit 2; }

PIN_SERVER=""
PIN_CLIENT=""
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
    PIN_SERVER="taskset -c 1"
    PIN_CLIENT="taskset -c 0"
fi

WORK=$(mktemp -d)
SERVER=""
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

$PIN_SERVER "$ATR" sim serve --ttft "$TTFT" --itl "$ITL" --port 0 >"$WORK/server.out" 2>&1 &
SERVER=$!
i=0
until grep -q 'listening on' "$WORK/server.out" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$SERVER" 2>/dev/null; then
        echo "run.sh: atr sim serve did not start:" >&2
        cat "$WORK/server.out" >&2
        exit 1
    fi
    sleep 0.1
done
URL=$(sed -n 's/.*listening on //p' "$WORK/server.out")

# The workload of atr's send-lag runs: N one-turn requests of IN and OUT tokens.
"$ATR" gen --kind requests --traces "$N" --input-tokens "$IN" --output-tokens "$OUT" \
    --seed 1 -o "$WORK/w.ndjson" 2>/dev/null

# atr_round R: the sweep (timed), then its rate runs again through
# `atr replay llm` at the same rate and seed, for per-request send times.
atr_round() {
    /usr/bin/time -f "%e %U %S" -o "$WORK/atr$1.time" $PIN_CLIENT "$ATR" sweep \
        --generate "$N:$IN:$OUT" --target "$URL" --model atr-sim --rates "$RATES" \
        --seed 0 -q -o "$WORK/atr$1.json"
    i=0
    sched=""
    for rate in $("$PY" -c 'import json,sys
for r in json.load(open(sys.argv[1]))["runs"]:
    if r["kind"] == "rate": print(r["rate"])' "$WORK/atr$1.json"); do
        $PIN_CLIENT "$ATR" replay llm "$WORK/w.ndjson" --target "$URL" --model atr-sim \
            --rate "$rate" --seed 0 --requests-out "$WORK/lag$1.$i.ndjson" -q >/dev/null
        sched="$sched${sched:+,}$WORK/lag$1.$i.ndjson"
        i=$((i + 1))
    done
    LAST_ATR=$WORK/atr$1.json
    LAST_SCHED=$sched
}

# py_round R: the GuideLLM method at the rates of the latest atr sweep, each
# rate run at the send times of atr's schedule for it.
py_round() {
    rates=$("$PY" -c 'import json,sys
print(",".join(str(r["rate"]) for r in json.load(open(sys.argv[1]))["runs"] if r["kind"] == "rate"))' "$LAST_ATR")
    /usr/bin/time -f "%e %U %S" -o "$WORK/py$1.time" $PIN_CLIENT "$PY" \
        "$HERE/guidellm_method.py" --url "$URL" --model atr-sim --requests "$N" \
        --input-tokens "$IN" --output-tokens "$OUT" --rates "$RATES" \
        --fixed-rates "$rates" --schedule-from "$LAST_SCHED" --seed 0 \
        --out "$WORK/py$1.json"
}

echo "sweep: $N requests per run, $RATES rates, server TTFT $TTFT ms ITL $ITL ms," \
    "$IN:$OUT tokens, $RUNS rounds (${PIN_CLIENT:-no pinning})" >&2
r=1
while [ $r -le "$RUNS" ]; do
    echo "round $r/$RUNS" >&2
    if [ $((r % 2)) -eq 1 ]; then
        atr_round $r
        py_round $r
    else
        py_round $r
        atr_round $r
    fi
    r=$((r + 1))
done

"$PY" "$HERE/summarize.py" "$WORK" "$RUNS" "$TTFT" "$ITL" "$OUT"
