#!/bin/sh
# openhands.sh ATR [N] [SCALE] - OpenHands delegation (tests/data/openhands/
# delegation*.json, converted): the critical path and parallelism through
# `atr sim run` and through N interleaved `atr replay llm` runs against a
# fresh `atr sim serve --time-scale SCALE` each (default 5 runs at 0.02:
# each wall ms of HTTP and scheduling costs 1/SCALE simulated ms), for each
# trace alone and for both at once. Prints one line per run.
set -eu
ATR=$1
N=${2:-5}
SCALE=${3:-0.02}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'kill "$SV" 2>/dev/null; rm -rf "$W"' EXIT
SV=
OH=$ROOT/tests/data/openhands
"$ATR" convert -q "$OH/delegation.json" -o "$W/seq.ndjson"
"$ATR" convert -q "$OH/delegation-nested.json" -o "$W/nested.ndjson"
cat "$W/seq.ndjson" "$W/nested.ndjson" >"$W/both.ndjson"
for k in seq nested both; do
    "$ATR" sim run -q "$W/$k.ndjson" -p h100/llama-3.1-8b --save-result "$W/$k-sim.json"
done
i=1
while [ "$i" -le "$N" ]; do
    for k in seq nested both; do
        : >"$W/sv.out"
        "$ATR" sim serve --port 0 --profile h100/llama-3.1-8b --time-scale "$SCALE" >"$W/sv.out" 2>/dev/null &
        SV=$!
        n=0
        until grep -q '^atr sim serve: listening on' "$W/sv.out"; do
            n=$((n + 1)); [ "$n" -lt 300 ] || { echo "sim serve did not start" >&2; exit 1; }
            sleep 0.1
        done
        URL=$(sed -n 's|^atr sim serve: listening on \(http://[0-9.:]*\)$|\1|p' "$W/sv.out")
        "$ATR" replay llm -q "$W/$k.ndjson" --target "$URL" --time-scale "$SCALE" --save-result "$W/http.json"
        kill -TERM "$SV"; wait "$SV" || true; SV=
        python3 -c "
import json
h, s = (json.load(open(p))['atr']['sessions'] for p in ('$W/http.json', '$W/$k-sim.json'))
hc = h['mean_critical_path_ms'] / $SCALE
print('%-6s replay %d: critical path sim run %.0f ms, sim serve %.0f ms (x%.4f); parallelism %.3f vs %.3f'
      % ('$k', $i, s['mean_critical_path_ms'], hc, hc / s['mean_critical_path_ms'],
         s['parallelism']['mean'], h['parallelism']['mean']))"
    done
    i=$((i + 1))
done
