# test-sessions.sh - session metrics of multi-turn workloads (sim run,
# replay llm, compare) checked against the per-request lines, and
# --percentiles / --metric-percentiles: keys, block lines, bad lists.
SS=$T/sessions
mkdir -p "$SS"
P=h100/llama-3.1-8b
ok "sessions: gen swe" "$ATR" gen -q --kind swe --traces 6 --seed 3 -o "$SS/swe.ndjson"
ok "sessions: gen requests" "$ATR" gen -q --kind requests --traces 20 --seed 3 -o "$SS/req.ndjson"

# A multi-turn workload: the section, and the JSON figures equal the ones
# recomputed from --requests-out (first send to last end, sum of turns).
ok "sessions: sim run" "$ATR" sim run "$SS/swe.ndjson" --profile $P --rate 0.5 \
    --save-result "$SS/r.json" --requests-out "$SS/q.ndjson"
check "sessions: block section" "grep -q -- '-Session Metrics-' '$T/out' &&
    grep -Eq '^Completed sessions: +6 *\$' '$T/out' && grep -Eq '^P90 completion time \\(ms\\):' '$T/out' &&
    grep -Eq '^Mean think/tool time \\(ms\\):' '$T/out'"
cat >"$SS/recompute.py" <<'EOF'
import json, sys
res = json.load(open(sys.argv[1]))["atr"]["sessions"]
by = {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    by.setdefault(r["trace_id"], []).append(r)
comp = sorted(max(x["end_s"] for x in v) - min(x["send_s"] for x in v) for v in by.values())
model = sorted(sum(x["end_s"] - x["send_s"] for x in v) for v in by.values())
def close(a, b): return abs(a - b) <= 1e-6 * max(1.0, abs(b))
def median(v): n = len(v); return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
assert res["completed"] == len(by) == 6 and res["failed"] == 0, res
assert close(res["mean_completion_ms"], 1000 * sum(comp) / len(comp)), res
assert close(res["median_completion_ms"], 1000 * median(comp)), res
assert close(res["mean_model_time_ms"], 1000 * sum(model) / len(model)), res
assert close(res["mean_think_time_ms"], res["mean_completion_ms"] - res["mean_model_time_ms"]), res
assert close(res["p99_completion_ms"], 1000 * (comp[-2] + 0.95 * (comp[-1] - comp[-2]))), res
assert set(k for k in res if k.startswith("p")) == {"p90_completion_ms", "p99_completion_ms",
    "p90_model_time_ms", "p99_model_time_ms", "p90_think_time_ms", "p99_think_time_ms"}, res
EOF
check "sessions: JSON = recomputed from requests" "python3 '$SS/recompute.py' '$SS/r.json' '$SS/q.ndjson'"
# KV retention across tool pauses: every later turn of the 6 sessions is in
# one pause bin, its reuse recomputed from the request lines (cached tokens
# over the previous prompt plus reply, capped at the prompt); the report
# shows the table.
cat >"$SS/retention.py" <<'EOF'
import json, math, sys
kv = json.load(open(sys.argv[1]))["atr"]["sessions"]["kv_retention"]
by = {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    by.setdefault(r["trace_id"], []).append(r)
his = [0.1, 1, 5, 30, 120, 600, math.inf]
share, cached, turns = [0] * 7, [0] * 7, [0] * 7
for v in by.values():
    v.sort(key=lambda r: r["turn"])
    for a, b in zip(v, v[1:]):
        sent = b["sent_s"] if b.get("sent_s") else b["start_s"]
        k = next(i for i, h in enumerate(his) if sent - a["end_s"] < h)
        s = min(b["prompt_tokens"], a["prompt_tokens"] + a["output_tokens"])
        share[k] += s; cached[k] += min(b["cached_tokens"], s); turns[k] += 1
assert kv["turns"] == sum(turns) > 0 and kv["unknown"] == 0, kv
for k, bin in enumerate(kv["bins"]):
    assert bin["turns"] == turns[k], (k, bin, turns)
    assert (bin["reuse"] is None) == (share[k] == 0) and (not share[k] or abs(bin["reuse"] - cached[k] / share[k]) < 1e-9), (k, bin)
EOF
check "sessions: kv retention = recomputed from requests" "python3 '$SS/retention.py' '$SS/r.json' '$SS/q.ndjson'"
ok "sessions: report" "$ATR" report "$SS/r.json" -o "$SS/report.html"
check "sessions: report has the retention table" "grep -q 'KV cache across tool pauses' '$SS/report.html' && grep -Eq '<td class=\"n\">[0-9.]+ % \\([0-9]+\\)</td>' '$SS/report.html'"
# --goodput session:MS: the sessions that completed within it, recomputed
# from the request lines (first send to last end), and per second.
ok "sessions: session goodput" "$ATR" sim run "$SS/swe.ndjson" --profile $P --rate 0.5 \
    --goodput session:120000 --save-result "$SS/g.json" --requests-out "$SS/gq.ndjson"
check "sessions: session goodput lines" "grep -Eq '^Good sessions: +[0-9]+ *\$' '$T/out' && grep -q '^Session goodput (sess/s):' '$T/out'"
check "sessions: session goodput = recomputed" "python3 -c \"
import json
r = json.load(open('$SS/g.json')); s = r['atr']['sessions']
by = {}
for l in open('$SS/gq.ndjson'):
    q = json.loads(l); by.setdefault(q['trace_id'], []).append(q)
good = sum(1 for v in by.values() if (max(x['end_s'] for x in v) - min(x['send_s'] for x in v)) * 1000 <= 120000)
assert s['good_completed'] == good and s['slo_completion_ms'] == 120000, (s, good)
assert abs(s['goodput'] - good / r['duration']) < 1e-9 and r['request_goodput'] is None, s
\""
fails "sessions: session goodput of 0" 2 "goodput" "$ATR" sim run "$SS/swe.ndjson" --profile $P --goodput session:0
ok "sessions: replay llm sim target" "$ATR" replay llm "$SS/swe.ndjson" --target sim:$P --rate 0.5 \
    --save-result "$SS/r2.json"
check "sessions: replay llm has them" "grep -q -- '-Session Metrics-' '$T/out' &&
    python3 -c \"import json; a=json.load(open('$SS/r.json'))['atr']['sessions']; b=json.load(open('$SS/r2.json'))['atr']['sessions']; assert a == b, (a, b)\""

# Single requests: nothing added (the block and keys vLLM has).
ok "sessions: single requests" "$ATR" sim run "$SS/req.ndjson" --profile $P --rate inf --save-result "$SS/s.json"
check "sessions: no section for single requests" "! grep -q 'Session' '$T/out' &&
    python3 -c \"import json; assert 'sessions' not in json.load(open('$SS/s.json'))['atr']\""

# --percentiles: every latency figure, vLLM's key words; sessions follow it.
ok "percentiles: sim run" "$ATR" sim run "$SS/swe.ndjson" --profile $P --rate 0.5 \
    --percentiles 50,90,95,99,99.9 --save-result "$SS/p.json"
check "percentiles: block lines" "grep -Eq '^P99\\.9 TTFT \\(ms\\):' '$T/out' && grep -Eq '^P95 ITL \\(ms\\):' '$T/out' &&
    grep -Eq '^P50 TPOT \\(ms\\):' '$T/out' && grep -Eq '^P99\\.9 think/tool time \\(ms\\):' '$T/out'"
check "percentiles: keys" "python3 -c \"import json; r=json.load(open('$SS/p.json'))
for m in ('ttft', 'tpot', 'itl', 'e2el'):
    assert [k for k in r if k.startswith('p') and k.endswith('_' + m + '_ms')] == ['p50_%s_ms' % m, 'p90_%s_ms' % m, 'p95_%s_ms' % m, 'p99_%s_ms' % m, 'p99.9_%s_ms' % m], m
a = r['atr']; assert 'p99.9_ttft_from_send_ms' in a and 'p99.9_completion_ms' in a['sessions'] and 'p95_think_time_ms' in a['sessions']
assert r['p50_ttft_ms'] <= r['p99_ttft_ms'] <= r['p99.9_ttft_ms']\""
check "percentiles: default is p99" "python3 -c \"import json; r=json.load(open('$SS/r.json')); assert [k for k in r if k.endswith('_ttft_ms') and k.startswith('p')] == ['p99_ttft_ms']\""
ok "percentiles: vLLM spelling" "$ATR" replay llm "$SS/req.ndjson" --target sim:$P --rate inf -q \
    --metric-percentiles 25,75 --save-result "$SS/m.json"
check "percentiles: vLLM spelling keys" "python3 -c \"import json; r=json.load(open('$SS/m.json')); assert 'p25_e2el_ms' in r and 'p75_itl_ms' in r and 'p99_ttft_ms' not in r\""
for bad in "" 50,,90 90, ,90 101 -1 nan abc 50,50 1,2,3,4,5,6,7,8,9; do
    fails "percentiles: bad '$bad'" 2 "^atr sim run: --percentiles wants up to 8 distinct numbers 0\\.\\.100" \
        "$ATR" sim run "$SS/swe.ndjson" --profile $P --percentiles "$bad"
done
fails "percentiles: bad in replay llm" 2 "^atr replay llm: --metric-percentiles wants" \
    "$ATR" replay llm "$SS/swe.ndjson" --target sim:$P --metric-percentiles 99,200

# compare: session columns from atr results and from --run; vLLM rows show n/a.
ok "compare: session columns" "$ATR" compare "$SS/r.json" "$DATA/compare/vllm/naive.json"
check "compare: session header and cells" "grep -q '| p99 E2E ms | avg session s | p50 session s | p99 session s | req/s |' '$T/out' &&
    grep -Eq '^\\| vllm:[^|]*\\| naive .*\\| +n/a \\| +n/a \\| +n/a \\| +[0-9.]+ \\|' '$T/out'"
ok "compare: session JSON" "$ATR" compare --json "$SS/r.json" "$DATA/compare/vllm/naive.json"
check "compare: session JSON keys" "python3 -c \"import json,sys; r=json.load(open('$T/out')); s=json.load(open('$SS/r.json'))['atr']['sessions']
assert r[0]['mean_session_ms'] == s['mean_completion_ms'] and r[0]['p99_session_ms'] == s['p99_completion_ms'] and r[1]['mean_session_ms'] is None, r\""
ok "compare: no session columns for single requests" "$ATR" compare "$SS/s.json"
check "compare: single requests table as before" "! grep -q session '$T/out'"
ok "compare --run sessions" "$ATR" compare --run "$SS/swe.ndjson" --target sim:$P --rate 0.5 \
    --policy naive,prefix-cache --percentiles 50,90
check "compare --run: session columns, p99 missing" "grep -q 'avg session s' '$T/out' &&
    grep -Eq '^\\| sim:h100/llama-3.1-8b +\\| prefix-cache +\\|( +[0-9.]+ \\|){2} +n/a \\|( +[0-9.]+ \\|){2} +n/a \\|( +[0-9.]+ \\|){2} +n/a \\|' '$T/out'"
