# test-otlp.sh - the OTLP/JSON GenAI reader (--from otlp; docs/otel.md):
# goldens of the samples, validate, content dropped, the DAG read off span
# nesting and time, hostile input, a 100k-span file in bounded memory.
# Sourced by run.sh ($ATR, $DATA, $T).

O=$DATA/otlp
for f in subagents.json openai-v2.jsonl openllmetry-spans.jsonl; do
    golden "otlp-golden-$f" "$O/${f%.*}.golden.ndjson" "$ATR" convert "$O/$f" -q -o -
    ok "otlp-sniffed-$f" "$ATR" convert "$O/$f" -q -o "$T/otlp-$f.ndjson"
    ok "otlp-validate-$f" "$ATR" validate "$T/otlp-$f.ndjson"
    # every sample carries prompts, replies, tool arguments and results
    # marked SECRET_: none reaches the trace, not even with --keep-content
    check "otlp-source-has-content-$f" "grep -q SECRET_ '$O/$f'"
    ok "otlp-keep-content-$f" "$ATR" convert "$O/$f" --keep-content -q -o "$T/otlp-kc-$f.ndjson"
    check "otlp-no-content-$f" "! grep -q SECRET_ '$T/otlp-$f.ndjson' '$T/otlp-kc-$f.ndjson'"
done
golden otlp-validate "$O/validate.golden" sh -c "cd '$T' && '$ATR' validate otlp-subagents.json.ndjson otlp-openai-v2.jsonl.ndjson"
ok otlp-from "$ATR" convert --from otlp "$O/openai-v2.jsonl" -q -o "$T/otlp-from.ndjson"
check otlp-from-same "cmp '$T/otlp-from.ndjson' '$T/otlp-openai-v2.jsonl.ndjson'"

# the graph of subagents.json (see its SOURCE.txt): parallel tools fork and
# join, the task tool's two sub-agents start from the call that spawned
# them and the next main call joins the tool and both reports; tokens,
# cached tokens, model, exit codes from the status
check otlp-dag "python3 -c \"
import json
t = json.loads(open('$T/otlp-subagents.json.ndjson').readline())
st = t['steps']
par = lambda s: s.get('parents', [s['i'] - 1] if s['i'] else [])
assert t['format'] == 'atr-trace/1.1' and t['meta']['agent'] == 'coder'
assert t['meta']['model'] == 'claude-sonnet-4' and t['meta']['conversation_id'] == 'conv-fix-1423'
kinds = [(s['kind'], s.get('tool'), s.get('agent')) for s in st]
assert [k for k in kinds if k[2] is None] == [('llm', None, None), ('tool', 'read_file', None),
    ('tool', 'grep', None), ('llm', None, None), ('tool', 'task', None), ('llm', None, None)], kinds
assert par(st[1]) == [0] and par(st[2]) == [0] and par(st[3]) == [1, 2]
first = {}
for s in st:
    first.setdefault(s.get('agent'), s)
assert par(first['explorer']) == [3] and par(first['tester']) == [3]
last = st[-1]
assert last.get('agent') is None and sorted(st[p].get('agent') or st[p]['tool'] for p in par(last)) == ['explorer', 'task', 'tester']
assert st[0]['input_tokens'] == 4200 and st[0]['output_tokens'] == 120 and st[0]['tokens_from'] == 'recorded'
assert st[3]['cached_tokens'] == 4096 and st[3]['prefix'] == {'step': 0, 'blocks': 262}
assert [s.get('exit_code') for s in st if s.get('tool') == 'bash'] == [0, 1]
assert st[0]['t_ms'] == 10 and st[0]['dur_ms'] == 1500
\""
# older names (prompt_tokens), spans of one trace over two lines, traces in
# arrival order; OpenLLMetry's wrapper span is no step of its own
check otlp-openai-v2 "python3 -c \"
import json
ts = [json.loads(l) for l in open('$T/otlp-openai-v2.jsonl.ndjson')]
assert [t['trace_id'] for t in ts] == ['otlp/4bf92f3577b34da6a3ce929d0e0e4736', 'otlp/0af7651916cd43dd8448eb211c80319c']
assert [len(t['steps']) for t in ts] == [3, 1] and ts[1]['start_ms'] == 60000
assert ts[1]['steps'][0]['input_tokens'] == 12 and ts[0]['steps'][0]['max_tokens'] == 512
\""
check otlp-openllmetry-wrapper "python3 -c \"
import json
t = json.loads(open('$T/otlp-openllmetry-spans.jsonl.ndjson').readline())
assert [(s['input_tokens'], s['t_ms']) for s in t['steps']] == [(950, 120), (1100, 2200)], t['steps']
\""

# the other shapes: a JSON array of spans (pretty), an array of export
# documents, a gzipped document: the same traces
python3 -c "
import json
json.dump([json.loads(l) for l in open('$O/openllmetry-spans.jsonl')], open('$T/otlp-arr.json', 'w'), indent=1)
json.dump([json.loads(l) for l in open('$O/openai-v2.jsonl')], open('$T/otlp-arrdocs.json', 'w'))"
golden otlp-array-of-spans "$O/openllmetry-spans.golden.ndjson" "$ATR" convert "$T/otlp-arr.json" -q -o -
golden otlp-array-of-documents "$O/openai-v2.golden.ndjson" "$ATR" convert "$T/otlp-arrdocs.json" -q -o -
gzip -c "$O/subagents.json" >"$T/otlp-sub.json.gz"
golden otlp-gzip "$O/subagents.golden.ndjson" "$ATR" convert "$T/otlp-sub.json.gz" -q -o -

# hostile input: file:line:col, exit 1, nothing written
hostile() {   # hostile NAME CONTENT ERROR-REGEX
    printf '%s\n' "$2" >"$T/otlp-$1.jsonl"
    fails "otlp-$1" 1 "^atr: .*otlp-$1.jsonl:$3" "$ATR" convert --from otlp "$T/otlp-$1.jsonl" -q -o "$T/otlp-$1.out"
    absent "otlp-$1-nothing-written" "$T/otlp-$1.out"
}
SP='"name":"chat m","startTimeUnixNano":"1000"'
hostile truncated '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"t","spanId":"s","startTimeUnixNano":"1"' \
    '1:95: .*\(the text is truncated\)'
hostile cycle "{\"traceId\":\"t\",\"spanId\":\"a\",\"parentSpanId\":\"b\",$SP}
{\"traceId\":\"t\",\"spanId\":\"b\",\"parentSpanId\":\"a\",$SP}" '1:1: span "a" is its own ancestor \(a parentSpanId cycle\)'
hostile self-parent "{\"traceId\":\"t\",\"spanId\":\"a\",\"parentSpanId\":\"a\",$SP}" '1:1: span "a" is its own ancestor'
hostile repeated-span "{\"traceId\":\"t\",\"spanId\":\"a\",$SP}
{\"traceId\":\"t\",\"spanId\":\"a\",$SP}" '2:1: span "a" repeats the span at line 1'
hostile parent-id-type "{\"traceId\":\"t\",\"spanId\":\"a\",\"parentSpanId\":7,$SP}" '1:44: expected "parentSpanId" to be a string, found number'
hostile no-span-id "{\"traceId\":\"t\",\"spanId\":\"\",$SP}" '1:25: expected "spanId" \(a non-empty string\) in this span'
hostile bad-time '{"traceId":"t","spanId":"a","startTimeUnixNano":"12x"}' '1:49: expected "startTimeUnixNano" to be nanoseconds'
hostile no-time '{"traceId":"t","spanId":"a","name":"chat"}' '1:1: expected "startTimeUnixNano" in this span'
hostile ends-before-start "{\"traceId\":\"t\",\"spanId\":\"a\",$SP,\"endTimeUnixNano\":\"999\"}" '1:[0-9]+: span ends before it starts'
hostile bad-tokens "{\"traceId\":\"t\",\"spanId\":\"a\",$SP,\"attributes\":[{\"key\":\"gen_ai.usage.input_tokens\",\"value\":{\"intValue\":\"-3\"}}]}" \
    '1:[0-9]+: expected "gen_ai.usage.input_tokens" to be a non-negative integer'
hostile huge-tokens "{\"traceId\":\"t\",\"spanId\":\"a\",$SP,\"attributes\":[{\"key\":\"gen_ai.usage.input_tokens\",\"value\":{\"intValue\":\"999999999999\"}}]}" \
    '1:1: span "a" has more input tokens than any prompt'
hostile attributes-type "{\"traceId\":\"t\",\"spanId\":\"a\",$SP,\"attributes\":7}" '1:[0-9]+: expected "attributes" to be an array'
hostile scope-spans-type '{"resourceSpans":[{"scopeSpans":7}]}' '1:33: expected "scopeSpans" to be an array, found number'
hostile not-otlp '{"foo":1}' '1:1: expected an OTLP export'
hostile no-spans '{"resourceSpans":[]}' '1:1: expected at least one span'

# documented repairs: a parent that never appears makes a root (counted in
# meta); a step that starts before a step it waits for starts with it
printf '%s\n' "{\"traceId\":\"t\",\"spanId\":\"a\",\"parentSpanId\":\"gone\",$SP}" >"$T/otlp-orphan.jsonl"
ok otlp-orphan "$ATR" convert "$T/otlp-orphan.jsonl" -q -o "$T/otlp-orphan.ndjson"
check otlp-orphan-counted "grep -q '\"otlp_orphan_spans\":1' '$T/otlp-orphan.ndjson'"
cat >"$T/otlp-clock.jsonl" <<'J'
{"traceId":"t","spanId":"r","name":"chat m","startTimeUnixNano":"3000000000","endTimeUnixNano":"4000000000"}
{"traceId":"t","spanId":"p","name":"invoke_agent helper","startTimeUnixNano":"5000000000","endTimeUnixNano":"9000000000"}
{"traceId":"t","spanId":"c","parentSpanId":"p","name":"chat m","startTimeUnixNano":"1000000000","endTimeUnixNano":"2000000000"}
J
ok otlp-clock "$ATR" convert "$T/otlp-clock.jsonl" -q -o "$T/otlp-clock.ndjson"
ok otlp-clock-validates "$ATR" validate "$T/otlp-clock.ndjson"
check otlp-clock-repaired "python3 -c \"
import json
t = json.loads(open('$T/otlp-clock.ndjson').readline()); st = t['steps']
assert t['meta']['otlp_clock_repairs'] == 1 and [s['t_ms'] for s in st] == [2000, 2000], st
assert st[1]['agent'] == 'helper' and st[1].get('parents', [0]) == [0]
\""

# 100k spans over 100 lines, 50 traces: memory grows with the spans (a
# record each), not with the JSON: well under the input's 36 MB x 5
python3 - "$T/otlp-big.jsonl" <<'P'
import json, sys
T0 = 1748000000000000000
with open(sys.argv[1], 'w') as out:
    for line in range(100):
        spans = []
        for k in range(1000):
            i = line * 1000 + k; j = i % 2000
            sp = {"traceId": "%032x" % (i // 2000), "spanId": "%016x" % (i + 1),
                  "name": "chat m" if j % 2 == 0 else "execute_tool bash",
                  "startTimeUnixNano": str(T0 + j * 10**9), "endTimeUnixNano": str(T0 + j * 10**9 + 9 * 10**8),
                  "attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(1000 + j * 10)}},
                                 {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "50"}}]}
            if j % 2:
                sp["parentSpanId"] = "%016x" % i
            spans.append(sp)
        out.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
P
check otlp-100k-bounded "python3 -c \"
import resource, subprocess
subprocess.run(['$ATR', 'convert', '$T/otlp-big.jsonl', '-q', '-o', '$T/otlp-big.ndjson'], check=True)
kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
assert kb < 120 * 1024, kb
\""
ok otlp-100k-validate "$ATR" validate "$T/otlp-big.ndjson"
check otlp-100k-steps "[ \$(wc -l <'$T/otlp-big.ndjson') -eq 50 ] && '$ATR' validate '$T/otlp-big.ndjson' | grep -q '50 traces, 100000 steps'"

# ---- writing: atr convert --to otlp ----
golden otlp-write-golden "$O/fork-join.otlp.jsonl" "$ATR" convert "$DATA/dag/fork-join.ndjson" --to otlp -q -o -
# the OTLP shape: one export per trace and line, every parentSpanId a span
# of the same trace, a chat span's counts, no content of any kind
ok otlp-write-openhands "$ATR" convert "$DATA/openhands/basic_gui_mode.json" --to otlp -q -o "$T/otlp-oh.jsonl"
check otlp-write-shape "python3 -c \"
import json
for f in ['$T/otlp-oh.jsonl', '$O/fork-join.otlp.jsonl']:
    for l in open(f):
        d = json.loads(l)
        sp = [s for rs in d['resourceSpans'] for ss in rs['scopeSpans'] for s in ss['spans']]
        ids = {s['spanId'] for s in sp}
        assert len(ids) == len(sp) and len({s['traceId'] for s in sp}) == 1
        assert all(len(s['traceId']) == 32 and len(s['spanId']) == 16 for s in sp)
        assert all(s.get('parentSpanId') in ids for s in sp[1:]) and 'parentSpanId' not in sp[0]
        ops = [a['value']['stringValue'] for s in sp for a in s['attributes'] if a['key'] == 'gen_ai.operation.name']
        assert ops[0] == 'invoke_agent' and set(ops) <= {'invoke_agent', 'chat', 'execute_tool'}
        keys = {a['key'] for s in sp for a in s['attributes']}
        assert keys <= {'gen_ai.operation.name', 'gen_ai.agent.name', 'atr.trace_id', 'gen_ai.request.model',
            'gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens', 'gen_ai.usage.cache_read.input_tokens',
            'gen_ai.request.max_tokens', 'gen_ai.tool.name', 'process.exit.code'}, keys
\""
check otlp-write-no-command "! grep -q 'mkdir' '$T/otlp-oh.jsonl'"

# round trip atr -> otlp -> atr: the same steps, kinds, tools, agents,
# parents, timings, counts and exit codes (a DAG of sub-agents generated,
# a converted OpenHands trajectory)
ok otlp-rt-gen "$ATR" gen --kind swe --traces 4 --seed 5 --subagent-prob 0.3 --subagent-fanout 3 \
    --subagent-depth 2 -q -o "$T/otlp-rt-a.ndjson"
for src in "$T/otlp-rt-a.ndjson" "$DATA/openhands/basic_gui_mode.json"; do
    n=$(basename "$src")
    ok "otlp-rt-to-$n" "$ATR" convert "$src" -q -o "$T/otlp-rt-$n.atr"
    ok "otlp-rt-out-$n" "$ATR" convert "$T/otlp-rt-$n.atr" --to otlp -q -o "$T/otlp-rt-$n.otlp"
    ok "otlp-rt-back-$n" "$ATR" convert "$T/otlp-rt-$n.otlp" -q -o "$T/otlp-rt-$n.back"
    ok "otlp-rt-validate-$n" "$ATR" validate "$T/otlp-rt-$n.back"
    check "otlp-round-trip-$n" "python3 -c \"
import json
keys = ['kind', 'tool', 'agent', 't_ms', 'dur_ms', 'input_tokens', 'output_tokens', 'cached_tokens',
        'max_tokens', 'exit_code']
eff = lambda s: s.get('parents', [s['i'] - 1] if s['i'] else [])
a = [json.loads(l) for l in open('$T/otlp-rt-$n.atr')]
b = [json.loads(l) for l in open('$T/otlp-rt-$n.back')]
assert [t['trace_id'] for t in a] == [t['trace_id'] for t in b]
n = 0
for x, y in zip(a, b):
    assert len(x['steps']) == len(y['steps'])
    for s, u in zip(x['steps'], y['steps']):
        assert [s.get(k) for k in keys] == [u.get(k) for k in keys], (s['i'], s, u)
        assert eff(s) == eff(u), (s['i'], eff(s), eff(u)); n += 1
assert n >= 9
\""
done
fails otlp-to-bad 2 "--to wants atr or otlp" "$ATR" convert "$DATA/dag/fork-join.ndjson" --to csv -o "$T/otlp-x"

# Real exports from public instrumentation libraries (upstream/SOURCE.txt):
# OpenLLMetry, OpenInference, the Vercel AI SDK. Each converts to what was
# checked by hand, validates, leaks none of its content (prompt, reply,
# tool arguments and result, an authorization header), and replays over
# HTTP against a real `atr sim serve`.
U=$O/upstream
for f in openllmetry openinference vercel; do
    golden "otlp-upstream-$f" "$U/$f.golden.ndjson" "$ATR" convert "$U/$f.in.json" -q -o -
    ok "otlp-upstream-kc-$f" "$ATR" convert "$U/$f.in.json" --keep-content -q -o "$T/otlp-up-$f.ndjson"
    ok "otlp-upstream-validate-$f" "$ATR" validate "$T/otlp-up-$f.ndjson"
    check "otlp-upstream-has-content-$f" "grep -q 'A-1187' '$U/$f.in.json'"
    check "otlp-upstream-no-content-$f" "! grep -Eq 'A-1187|support agent|lookup_order.*order_id|sk-proj|in_transit' '$T/otlp-up-$f.ndjson'"
done
check otlp-upstream-vercel-steps "python3 -c \"
import json
t = json.loads(open('$T/otlp-up-vercel.ndjson').readline())
s = t['steps']
assert [x['kind'] for x in s] == ['llm', 'tool'] and s[1]['tool'] == 'lookup_order', s
assert (s[0]['input_tokens'], s[0]['output_tokens'], s[0]['dur_ms']) == (412, 27, 1890)
\""
"$ATR" sim serve --ttft 0 --itl 0 --port 0 >"$T/otlp-serve.out" 2>"$T/otlp-serve.err" &
OTLP_SERVE=$!
deadline=$(($(date +%s) + 20)); OTLP_PORT=""
while [ -z "$OTLP_PORT" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    OTLP_PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/otlp-serve.out" 2>/dev/null)
done
ok otlp-upstream-replay "$ATR" replay llm "$T/otlp-up-openllmetry.ndjson" "$T/otlp-up-openinference.ndjson" \
    "$T/otlp-up-vercel.ndjson" --target "http://127.0.0.1:$OTLP_PORT" --warmup 0 -q \
    --save-result "$T/otlp-up-replay.json"
check otlp-upstream-replayed "python3 -c \"
import json
r = json.load(open('$T/otlp-up-replay.json'))
assert r['completed'] == 3 and r['failed'] == 0, r
assert r['total_input_tokens'] == 3 * 412 and r['total_output_tokens'] == 3 * 27, r
\""
kill "$OTLP_SERVE" 2>/dev/null; wait "$OTLP_SERVE" 2>/dev/null
