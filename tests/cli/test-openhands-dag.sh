# test-openhands-dag.sh - OpenHands delegation as sub-agents (atr-trace/1.1):
# convert, validate, stats, sim run, and replay llm against sim serve, plus
# the bad and hostile streams. Sourced by run.sh ($ATR, $DATA, $T).
# The fixtures are built from OpenHands' serialization: no public
# trajectory with delegation was found (tests/data/openhands/SOURCE.txt).

OH=$DATA/openhands
DC="python3 $ROOT/tests/cli/dag-check.py"
ok oh-dag-convert "$ATR" convert -q "$OH/delegation.json" "$OH/delegation-nested.json" \
    -o "$T/oh-dag.ndjson"
ok oh-dag-validate "$ATR" validate "$T/oh-dag.ndjson"
check oh-dag-version "[ \$(grep -c '\"format\":\"atr-trace/1.1\"' '$T/oh-dag.ndjson') -eq 2 ]"
# every step says its agent; the delegate's steps follow the step that
# delegated, the parent's next step follows the delegate's last: OpenHands
# waits for its delegate, so no step names parents (each waits for the one
# before it)
check oh-dag-agents "python3 -c \"
import json
t = [json.loads(l) for l in open('$T/oh-dag.ndjson')]
a = [s.get('agent', '-') for s in t[0]['steps']]
assert a == ['-'] * 3 + ['BrowsingAgent/1'] * 4 + ['-'] * 3 + ['BrowsingAgent/2'] * 2 + ['-'] * 3, a
n = [s.get('agent', '-') for s in t[1]['steps']]
assert n[1] == 'CodeActAgent/1' and n[2:6] == ['BrowsingAgent/2'] * 4 and n[-1] == 'BrowsingAgent/3', n
assert not any('parents' in s for x in t for s in x['steps'])
m0, m1 = t[0]['meta'], t[1]['meta']
assert m0['openhands_delegates'] == 2 and m0['openhands_delegate_errors'] == 1, m0
assert m1['openhands_delegates'] == 2 and m1['openhands_open_delegates'] == 1, m1
\""
# a stream without delegation stays a chain, byte for byte (the golden)
golden oh-dag-chain-unchanged "$OH/wrong_initial_state.golden.ndjson" \
    "$ATR" convert -q "$OH/wrong_initial_state.json" -o -
ok oh-dag-stats "$ATR" stats "$T/oh-dag.ndjson" --json -o "$T/oh-dag-stats.json"
check oh-dag-stats-agents "python3 -c \"
import json
s = json.load(open('$T/oh-dag-stats.json'))['sub_agents']
assert s['traces'] == 2 and s['agents'] == 5 and s['steps'] == 16, s
\""

# out as OpenTelemetry spans (invoke_agent per delegate) and back: the
# same agents, still no step naming parents
ok oh-dag-otlp-out "$ATR" convert -q --to otlp "$T/oh-dag.ndjson" -o "$T/oh-dag.otlp.json"
ok oh-dag-otlp-back "$ATR" convert -q "$T/oh-dag.otlp.json" -o "$T/oh-dag-back.ndjson"
check oh-dag-otlp-same-agents "python3 -c \"
import json
a, b = ([json.loads(l) for l in open(f)] for f in ('$T/oh-dag.ndjson', '$T/oh-dag-back.ndjson'))
assert [[s.get('agent') for s in t['steps']] for t in a] == [[s.get('agent') for s in t['steps']] for t in b]
assert not any('parents' in s for t in b for s in t['steps'])
\""

# the report's trace explorer gives each delegate a lane of its own
ok oh-dag-report "$ATR" report -q "$T/oh-dag.ndjson" -o "$T/oh-dag.html"
check oh-dag-report-lanes "python3 -c \"
import base64, json, re, zlib
h = open('$T/oh-dag.html').read()
b = re.search(r'<script type=\\\"application/octet-stream\\\" id=\\\"timelines\\\"[^>]*>([^<]*)<', h).group(1)
d = json.loads(zlib.decompress(base64.b64decode(b)))
for a in ('BrowsingAgent/1', 'BrowsingAgent/2', 'CodeActAgent/1', 'BrowsingAgent/3'):
    assert a in d['labels'], d['labels']
\""

# ---- simulated: each turn goes exactly when the one before it (through
# the delegate's) is over, no two overlap; the figures are the requests' ----
ok oh-dag-sim "$ATR" sim run -q "$T/oh-dag.ndjson" -p h100/llama-3.1-8b \
    --requests-out "$T/oh-dag-sim.jsonl" --save-result "$T/oh-dag-sim.json"
check oh-dag-sim-order "$DC order '$T/oh-dag.ndjson' '$T/oh-dag-sim.jsonl' 1 exact serial"
check oh-dag-sim-figures "$DC figures '$T/oh-dag.ndjson' '$T/oh-dag-sim.jsonl' '$T/oh-dag-sim.json'"
check oh-dag-sim-parallelism "python3 -c \"
import json
s = json.load(open('$T/oh-dag-sim.json'))['atr']['sessions']
assert s['completed'] == 2 and 0 < s['parallelism']['mean'] < 1, s
assert 0 < s['mean_critical_path_ms'] < s['mean_completion_ms'], s
\""

# ---- over HTTP: replay llm against sim serve, 50x faster ----
"$ATR" sim serve --port 0 --profile h100/llama-3.1-8b --time-scale 0.02 \
    >"$T/oh-dag-sv.out" 2>"$T/oh-dag-sv.err" &
OH_SV=$!
CURRENT=oh-dag-sim-serve-listens
if wait_for 30 "grep -q '^atr sim serve: listening on' '$T/oh-dag-sv.out'"; then
    pass
    OH_URL=$(sed -n 's|^atr sim serve: listening on \(http://[0-9.:]*\)$|\1|p' "$T/oh-dag-sv.out")
    ok oh-dag-replay "$ATR" replay llm -q "$T/oh-dag.ndjson" --target "$OH_URL" \
        --time-scale 0.02 --requests-out "$T/oh-dag-http.jsonl" --save-result "$T/oh-dag-http.json"
    check oh-dag-replay-order "$DC order '$T/oh-dag.ndjson' '$T/oh-dag-http.jsonl' 0.02 serial"
    check oh-dag-replay-figures "$DC figures '$T/oh-dag.ndjson' '$T/oh-dag-http.jsonl' '$T/oh-dag-http.json'"
    # The critical paths' ratio is kept in the check's name, not bounded:
    # the two sessions share the engine, and over HTTP their turns meet in
    # other batches than in virtual time (a few % either way; BENCHMARKS.md
    # "OpenHands delegation" has the figure)
    python3 -c "
import json
h, s = (json.load(open('$T/oh-dag-%s.json' % k))['atr']['sessions'] for k in ('http', 'sim'))
print('%.4f' % (h['mean_critical_path_ms'] / 0.02 / s['mean_critical_path_ms']))
" >"$T/oh-dag-ratio.txt" 2>&1
    check "oh-dag-critical-path (x$(cat "$T/oh-dag-ratio.txt") of sim run)" \
        "python3 -c 'import math, sys; r = float(open(\"$T/oh-dag-ratio.txt\").read()); sys.exit(not (math.isfinite(r) and r > 0))'"
else
    fail "no listening line: $(head -c 300 "$T/oh-dag-sv.err")"
fi
kill -TERM "$OH_SV" 2>/dev/null
wait "$OH_SV" 2>/dev/null

# ---- bad input: exit 1, one file:line:col line, nothing written ----
ev() {   # ev ID REST: one agent event
    printf '{"id": %s, "timestamp": "2025-01-01T00:00:%02d", "source": "agent", %s}' "$1" "$1" "$2"
}
DEL='"action": "delegate", "args": {"agent": "BrowsingAgent", "inputs": {"task": "t"}}'
{
    printf '[\n'
    k=0
    while [ $k -lt 17 ]; do printf '%s,\n' "$(ev $k "$DEL")"; k=$((k + 1)); done
    printf '%s\n]\n' "$(ev 17 '"action": "run", "args": {"command": "ls"}')"
} >"$T/deep-oh.json"
fails oh-dag-too-deep 1 'deep-oh.json:18:1: delegation nested deeper than 16 agents' \
    "$ATR" convert "$T/deep-oh.json" -o "$T/d1"
absent oh-dag-too-deep-nothing "$T/d1"
printf '[%s]\n' "$(ev 1 '"action": "delegate", "args": {"agent": ["x"]}')" >"$T/agent-oh.json"
fails oh-dag-agent-type 1 'agent-oh.json:1:107: expected "agent" to be a string, found array' \
    "$ATR" convert "$T/agent-oh.json" -o "$T/d2"
absent oh-dag-agent-type-nothing "$T/d2"

# ---- repairs (docs/trace-format.md, "OpenHands delegation") ----
# an observation with no delegate open: a plain result, counted
printf '[%s,\n%s]\n' "$(ev 1 '"observation": "delegate", "content": "late", "extras": {}')" \
    "$(ev 2 '"action": "run", "args": {"command": "ls"}')" >"$T/orphan-oh.json"
ok oh-dag-orphan "$ATR" convert -q "$T/orphan-oh.json" -o "$T/orphan.ndjson"
check oh-dag-orphan-chain "grep -q '\"format\":\"atr-trace/1\",' '$T/orphan.ndjson' && grep -q '\"openhands_unmatched_delegate_observations\":1' '$T/orphan.ndjson'"
# a delegate never closed: its steps end the trace, counted
printf '[%s,\n%s]\n' "$(ev 1 "$DEL")" "$(ev 2 '"action": "run", "args": {"command": "ls"}')" \
    >"$T/open-oh.json"
ok oh-dag-open "$ATR" convert -q "$T/open-oh.json" -o "$T/open.ndjson"
ok oh-dag-open-validates "$ATR" validate "$T/open.ndjson"
check oh-dag-open-counted "grep -q '\"agent\":\"BrowsingAgent/1\"' '$T/open.ndjson' && grep -q '\"openhands_open_delegates\":1' '$T/open.ndjson'"
# hostile sizes: 20000 delegates in sequence and a 1 MB agent class: names
# stay short, memory stays that of one trace
python3 -c "
import json
ev = []
for k in range(20000):
    ev.append({'id': 3 * k, 'source': 'agent', 'action': 'delegate',
               'args': {'agent': 'A' * (1 << 20) if k == 0 else 'B', 'inputs': {}}})
    ev.append({'id': 3 * k + 1, 'source': 'agent', 'action': 'run', 'args': {'command': 'true'}})
    ev.append({'id': 3 * k + 2, 'source': 'agent', 'observation': 'delegate', 'content': '', 'extras': {}})
json.dump(ev, open('$T/many-oh.json', 'w'))
"
ok oh-dag-many "$ATR" convert -q "$T/many-oh.json" -o "$T/many.ndjson"
check oh-dag-many-shape "python3 -c \"
import json
t = json.loads(open('$T/many.ndjson').read())
assert t['meta']['openhands_delegates'] == 20000, t['meta']
assert max(len(s.get('agent', '')) for s in t['steps']) <= 64 + 6
assert t['steps'][-1]['agent'] == 'B/20000'
\""
