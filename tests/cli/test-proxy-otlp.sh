# test-proxy-otlp.sh - `atr proxy --otlp FILE`: every completed request also
# appended as an OTLP/JSON export document (docs/otel.md): the same
# requests as the journal, its counts and times, the session as
# gen_ai.conversation.id, never content (not even with --record-content).
# Sourced by run.sh ($ATR, $DATA, $T).

PO=$T/proxy-otlp
mkdir -p "$PO"

# po_port FILE PID : the port from "...: listening on http://H:PORT" (polled).
po_port() {
    po_i=0 po_p=
    while [ "$po_i" -lt 300 ] && [ -z "$po_p" ]; do
        po_p=$(sed -n 's|^atr [a-z ]*: listening on http://127.0.0.1:\([0-9][0-9]*\)$|\1|p' "$1")
        [ -n "$po_p" ] && break
        kill -0 "$2" 2>/dev/null || break
        sleep 0.05
        po_i=$((po_i + 1))
    done
    echo "$po_p"
}

: >"$PO/up.out"; : >"$PO/px.out"   # there before the first poll reads them
"$ATR" sim serve --port 0 --ttft 0 --itl 0 >"$PO/up.out" 2>"$PO/up.err" &
PO_UP=$!
PO_UPURL=http://127.0.0.1:$(po_port "$PO/up.out" $PO_UP)
"$ATR" proxy --port 0 --upstream "$PO_UPURL" --record "$PO/j.ndjson" --record-content \
    --otlp "$PO/spans.jsonl" --fsync-interval 0.05 >"$PO/px.out" 2>"$PO/px.err" &
PO_PX=$!
PO_URL=http://127.0.0.1:$(po_port "$PO/px.out" $PO_PX)
for k in 1 2 3; do
    curl -s "$PO_URL/v1/chat/completions" -H "X-Session-Id: s$((k % 2))" \
        -d '{"model":"atr-sim","messages":[{"role":"user","content":"hello SECRET_MARKER '$k'"}],"max_tokens":3}' \
        >"$PO/r$k.json"
done
kill "$PO_PX" 2>/dev/null; wait "$PO_PX" 2>/dev/null
kill "$PO_UP" 2>/dev/null; wait "$PO_UP" 2>/dev/null

check proxy-otlp-lines "[ \$(wc -l <'$PO/spans.jsonl') -eq 3 ] && [ \$(wc -l <'$PO/j.ndjson') -eq 3 ]"
check proxy-otlp-journal-has-content "grep -q SECRET_MARKER '$PO/j.ndjson'"
check proxy-otlp-no-content "! grep -q SECRET_MARKER '$PO/spans.jsonl'"
ok proxy-otlp-reads "$ATR" convert "$PO/spans.jsonl" -q -o "$PO/back.ndjson"
ok proxy-otlp-validates "$ATR" validate "$PO/back.ndjson"
check proxy-otlp-same-requests "python3 -c \"
import json
j = [json.loads(l) for l in open('$PO/j.ndjson')]
b = {t['trace_id']: t for t in map(json.loads, open('$PO/back.ndjson'))}
assert sorted(b) == sorted(t['trace_id'] for t in j), (sorted(b), [t['trace_id'] for t in j])
for t in j:
    s, u = t['steps'][0], b[t['trace_id']]['steps'][0]
    for k in ('input_tokens', 'output_tokens', 'dur_ms'):
        assert s.get(k) == u.get(k), (k, s, u)
    assert b[t['trace_id']]['meta']['conversation_id'] == t['meta']['session']
    assert b[t['trace_id']]['meta']['model'] == t['meta']['model']
# Unix times: the span starts at the request's start
d = json.loads(open('$PO/spans.jsonl').readline())
sp = d['resourceSpans'][0]['scopeSpans'][0]['spans']
assert len(sp) == 1 and 'parentSpanId' not in sp[0]
assert int(sp[0]['startTimeUnixNano']) // 10**6 == j[0]['start_ms'], (sp[0], j[0]['start_ms'])
\""
fails proxy-otlp-empty-name 2 "--otlp wants a file" "$ATR" proxy --upstream http://127.0.0.1:9 --otlp ""
