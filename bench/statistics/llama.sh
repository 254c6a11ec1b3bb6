#!/bin/sh
# llama.sh - the A/A checks of bench/statistics/run.sh on a real engine:
# llama.cpp's llama-server (built by scripts/llama.sh) serving atr's own
# random-weight model (`atr gen --kind gguf --preset tiny`).
#
# usage: sh bench/statistics/llama.sh ATR [OUT]    (after make build)
#
# One llama-server (-np 2 -t 2 -c 8192), one uncounted warm-up run, then
# RUNS (40) runs of one workload (`atr gen --kind requests`, REQUESTS (400)
# requests of 128 in / 16 out, seed 3, sent at once, 2 in flight). Then
# analyze.py without B runs: the noise of the runs, simulated A/A and 10 %
# pairs with that noise, 20 real A/A pairs within one run (runs 2i and
# 2i+1) and A/A pairs over repeats (5 runs a side). No real 10 % change:
# llama-server has no knob that slows it by a known 10 %.
# OUT (default build/statistics-llama) keeps the runs and table.md. The
# server is stopped on exit. Exits 0 with one "skip:" line when
# llama-server is not built.
set -eu
ATR=${1:?usage: llama.sh ATR [OUT]}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${2:-$ROOT/build/statistics-llama}
RUNS=${RUNS:-40}
REQUESTS=${REQUESTS:-400}
CC=${CC:-cc}
LIB=$(dirname "$ATR")/libatrlib.a
llama=$(sh "$ROOT/scripts/llama.sh" --path 2>/dev/null) || {
    echo "skip: llama-server is not built (sh scripts/llama.sh builds it)"
    exit 0
}
rm -rf "$OUT"
mkdir -p "$OUT"
# shellcheck disable=SC2046
$CC -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I "$ROOT/src" "$ROOT/bench/statistics/cistat.c" \
    "$LIB" $(pkg-config --libs zlib libzstd libxxhash libzip libevent libcurl libseccomp libcrypto) \
    -lm -o "$OUT/cistat"

pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM

"$ATR" gen -q --kind gguf --preset tiny --ctx 8192 -o "$OUT/model.gguf"
"$ATR" gen -q --kind requests --traces "$REQUESTS" --input-tokens 128 --output-tokens 16 --seed 3 \
    -o "$OUT/req.ndjson"
"$llama" -m "$OUT/model.gguf" --host 127.0.0.1 --port 0 --no-webui -np 2 -t 2 -c 8192 \
    >"$OUT/llama.log" 2>&1 &
pid=$!
# /health answers 200 once the model is loaded (polled, 30 s at most).
deadline=$(($(date +%s) + 30))
url=""
while [ -z "$url" ] && [ "$(date +%s)" -lt "$deadline" ] && kill -0 "$pid" 2>/dev/null; do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9][0-9]*\).*|\1|p' "$OUT/llama.log" | head -n 1)
    if [ -n "$port" ] &&
       [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then
        url=http://127.0.0.1:$port
    else
        sleep 0.05
    fi
done
[ -n "$url" ] || { echo "llama.sh: llama-server did not come up: $(tail -n 3 "$OUT/llama.log")" >&2; exit 1; }

"$ATR" replay llm -q "$OUT/req.ndjson" --target "$url" --rate inf --max-concurrency 2
echo "runs: $RUNS against llama-server ($(date -u +%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))"
i=0
while [ "$i" -lt "$RUNS" ]; do
    "$ATR" replay llm -q "$OUT/req.ndjson" --target "$url" --rate inf --max-concurrency 2 \
        --save-result "$OUT/a$i.json" --requests-out "$OUT/a$i.ndjson"
    i=$((i + 1))
done
echo "runs done ($(date -u +%H:%M) UTC)"
python3 "$ROOT/bench/statistics/analyze.py" "$OUT" "$RUNS" "$OUT/cistat"
