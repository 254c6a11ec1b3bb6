#!/bin/sh
# run.sh ATR [N] - DAG sessions: the critical path of a generated sub-agent
# workload through `atr sim run` (virtual time) and through `atr replay
# llm` against `atr sim serve --time-scale 0.02` (real time over HTTP, 50x
# faster), N interleaved replays (default 3); then `sim run --kv-retain`
# at 0/5/30/120 s on an overloaded L4. Prints one line per run.
set -eu
ATR=$1
N=${2:-3}
W=$(mktemp -d)
trap 'kill "$SV" 2>/dev/null; rm -rf "$W"' EXIT
SV=
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
