#!/bin/sh
# run.sh ATR [N] - DAG sessions: the critical path of a generated sub-agent
# workload through `atr sim run` (virtual time) and through `atr replay
# llm` against `atr sim serve --time-scale 0.02` (real time over HTTP, 50x
# faster), N interleaved replays (default 3); then `sim run --kv-retain`
# at 0/5/30/120 s on an overloaded L4; then, when llama-server is built
# (scripts/llama.sh), the tiny model: a sim profile calibrated against it
# (`atr sim calibrate`) and the DAG replayed against it N times, interleaved
# with a recalibration, beside `sim run` with that profile. Prints one line
# per run.
set -eu
ATR=$1
N=${2:-3}
W=$(mktemp -d)
trap 'kill "$SV" "$LP" 2>/dev/null; rm -rf "$W"' EXIT
SV=
LP=
"$ATR" gen -q --kind swe --traces 2 --seed 5 --rate 0.05 --subagent-prob 0.3 -o "$W/dag.ndjson"
"$ATR" sim run -q "$W/dag.ndjson" -p h100/llama-3.1-8b --save-result "$W/sim.json"
i=1
while [ "$i" -le "$N" ]; do
    : >"$W/sv.out"
    "$ATR" sim serve --port 0 --profile h100/llama-3.1-8b --time-scale 0.02 >"$W/sv.out" 2>/dev/null &
    SV=$!
    n=0
    until grep -q '^atr sim serve: listening on' "$W/sv.out"; do
        n=$((n + 1)); [ "$n" -lt 300 ] || { echo "sim serve did not start" >&2; exit 1; }
        sleep 0.1
    done
    URL=$(sed -n 's|^atr sim serve: listening on \(http://[0-9.:]*\)$|\1|p' "$W/sv.out")
    "$ATR" replay llm -q "$W/dag.ndjson" --target "$URL" --time-scale 0.02 --save-result "$W/http.json"
    kill -TERM "$SV"; wait "$SV" || true; SV=
    python3 -c "
import json
h, s = (json.load(open('$W/%s.json' % k))['atr']['sessions'] for k in ('http', 'sim'))
hc = h['mean_critical_path_ms'] / 0.02
print('replay %d: critical path sim run %.0f ms, sim serve %.0f ms (x%.4f); parallelism %.3f vs %.3f'
      % ($i, s['mean_critical_path_ms'], hc, hc / s['mean_critical_path_ms'],
         s['parallelism']['mean'], h['parallelism']['mean']))"
    i=$((i + 1))
done
"$ATR" gen -q --kind swe --traces 60 --seed 2 --rate 0.5 -o "$W/many.ndjson"
for r in 0 5 30 120; do
    "$ATR" sim run -q "$W/many.ndjson" -p l4/llama-3.1-8b --skip-oversized --kv-retain "$r" \
        --save-result "$W/kr.json"
    python3 -c "
import json
d = json.load(open('$W/kr.json')); e = d['atr']['engine']; b = d['atr']['sessions']['kv_retention']['bins']
reuse = ' '.join('%s' % ('-' if x['reuse'] is None else '%.3f' % x['reuse']) for x in b[:4])
print('kv-retain %3s s: hit rate %.4f, evictions %d, pins %d (dropped %d), preemptions %d, '
      'mean TTFT %.0f ms, reuse by pause <0.1/0.1-1/1-5/5-30 s: %s'
      % ('$r', e['prefix_cache_hit_rate'], e['evictions'], e.get('kv_pins', 0),
         e.get('kv_pins_dropped', 0), e['preemptions'], d['mean_ttft_ms'], reuse))"
done

# ---- llama-server vs the simulator calibrated against it ----
LLAMA=$(sh "$(dirname "$0")/../../scripts/llama.sh" --path 2>/dev/null) || {
    echo "llama-server not built: skipping the llama-server runs"; exit 0; }
ROOT=$(dirname "$0")/../..
"$ATR" gen --kind gguf --preset tiny -q -o "$W/tiny.gguf"
# fork-join as in the tests, and the same with 8x the reply tokens (decode,
# which calibrate measures best, then dominates the critical path)
python3 -c "
import json
for l in open('$ROOT/tests/data/dag/fork-join.ndjson'):
    t = json.loads(l)
    for s in t['steps']:
        if 'output_tokens' in s:
            s['output_tokens'] *= 8
    print(json.dumps(t, separators=(',', ':')))" >"$W/fj8.ndjson"
cp "$ROOT/tests/data/dag/fork-join.ndjson" "$W/fj1.ndjson"
: >"$W/llama.log"
"$LLAMA" -m "$W/tiny.gguf" --host 127.0.0.1 --port 0 --no-webui -np 4 -c 16384 -t 1 >"$W/llama.log" 2>&1 &
LP=$!
n=0
until PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9][0-9]*\).*|\1|p' "$W/llama.log" | head -n 1) &&
      [ -n "$PORT" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health")" = 200 ]; do
    n=$((n + 1)); [ "$n" -lt 300 ] || { echo "llama-server did not start" >&2; exit 1; }
    sleep 0.1
done
LURL=http://127.0.0.1:$PORT
mkdir -p "$W/cal/gpus"
i=1
while [ "$i" -le "$N" ]; do
    "$ATR" sim calibrate --target "$LURL" --reps 3 -o "$W/cal/gpus/cal.json" >/dev/null
    for w in fj1 fj8; do
        "$ATR" replay llm -q "$W/$w.ndjson" --target "$LURL" --time-scale 0.1 --save-result "$W/ll.json"
        ATR_PROFILE_PATH="$W/cal" "$ATR" sim run -q "$W/$w.ndjson" -p cal/atr-tiny --engine llama.cpp \
            --ctx-size 16384 --time-scale 0.1 --save-result "$W/cs.json"
        python3 -c "
import json
h, s = (json.load(open('$W/%s.json' % k))['atr']['sessions'] for k in ('ll', 'cs'))
print('llama %d %s: critical path llama-server %.2f ms, calibrated sim run %.2f ms (x%.3f); '
      'parallelism %.3f vs %.3f' % ($i, '$w', h['mean_critical_path_ms'], s['mean_critical_path_ms'],
      h['mean_critical_path_ms'] / s['mean_critical_path_ms'], h['parallelism']['mean'],
      s['parallelism']['mean']))"
    done
    i=$((i + 1))
done
