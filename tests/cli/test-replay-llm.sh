# test-replay-llm.sh - atr replay llm against real `atr sim serve` servers on
# 127.0.0.1: measured latencies, schedules, sessions, faults, failures,
# prefix reuse over HTTP, Ctrl-C, the sim: target, and bad arguments.
L=$T/replay-llm
mkdir -p "$L"
LLM_PIDS=""

# serve NAME ARGS... : starts `atr sim serve ARGS --port 0`, waits (with a
# deadline) for its listening line, and sets PORT.
serve() {
    name=$1; shift
    "$ATR" sim serve "$@" --port 0 >"$L/$name.out" 2>"$L/$name.err" &
    eval "PID_$name=$!"
    LLM_PIDS="$LLM_PIDS $!"
    deadline=$(($(date +%s) + 20))
    PORT=""
    while [ -z "$PORT" ] && [ "$(date +%s)" -lt "$deadline" ]; do
        PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$L/$name.out" 2>/dev/null)
    done
    [ -n "$PORT" ] || echo "test-replay-llm: server $name did not start: $(cat "$L/$name.err")"
}

# $J FILE EXPR : true when the Python expression holds for the JSON object r.
cat >"$L/j.py" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
J="python3 $L/j.py"

"$ATR" gen -q --kind requests --traces 40 --input-tokens 64 --output-tokens 20 --seed 3 \
    -o "$L/req.ndjson"

# --- Fixed latencies: TTFT 50 ms, ITL 10 ms. ---
# Timing bounds here are sanity bounds, never precision claims (a loaded
# machine must not fail a test): the lower bound is what the server
# guarantees (it sleeps that long), the upper one a generous multiple. How
# closely the client tracks the server is a benchmark figure
# (bench/replay-client, BENCHMARKS.md).
serve fixed --ttft 50 --itl 10
URL=http://127.0.0.1:$PORT
ok "replay fixed latencies" "$ATR" replay llm -q "$L/req.ndjson" --target "$URL" --rate 40 \
    --save-result "$L/fixed.json" --requests-out "$L/fixed.ndjson"
check "all 40 completed" "$J '$L/fixed.json' \"r['completed'] == 40 and r['failed'] == 0\""
check "output tokens from usage" "$J '$L/fixed.json' \"r['total_output_tokens'] == 800\""
check "mean TTFT 50 ms (45..250)" "$J '$L/fixed.json' \"45 <= r['mean_ttft_ms'] <= 250\""
check "mean ITL 10 ms (9..50)" "$J '$L/fixed.json' \"9 <= r['mean_itl_ms'] <= 50\""
check "model from /v1/models" "$J '$L/fixed.json' \"r['model_id'] == 'atr-sim'\""
check "per-request lines" "[ \$(wc -l <'$L/fixed.ndjson') -eq 40 ]"

# --- --time-scale on the server: simulated 100/20 ms served at half. ---
serve scaled --ttft 100 --itl 20 --time-scale 0.5
ok "replay against a time-scaled server" "$ATR" replay llm -q "$L/req.ndjson" \
    --target "http://127.0.0.1:$PORT" --rate 40 --save-result "$L/scaled.json"
check "time-scaled TTFT 50 ms and ITL 10 ms (not the unscaled 100 and 20)" "$J '$L/scaled.json' \"45 <= r['mean_ttft_ms'] < 100 and 9 <= r['mean_itl_ms'] < 20\""
kill "$PID_scaled" 2>/dev/null

# --- Poisson at 200/s over 5 s: sends at the schedule's rate. ---
"$ATR" gen -q --kind requests --traces 1000 --input-tokens 16 --output-tokens 2 --seed 4 \
    -o "$L/many.ndjson"
ok "replay poisson 200/s" "$ATR" replay llm -q "$L/many.ndjson" --target "$URL" --rate 200 \
    --save-result "$L/poisson.json" --requests-out "$L/poisson.ndjson"
# The client sends at the schedule's rate: 25% is loose enough for a loaded
# machine (a late stall of 1 s is 20% of the span) and still tells a
# schedule kept from one sent all at once (rate unbounded) or one request
# after another (~16/s here). The schedule's own rate over 1000 draws has a
# 3% spread around 200 (its distribution is checked on 200,000 draws in
# test-sched), so it gets a 10% bound.
check "poisson: 1000 sent over about 5 s at the schedule's rate (+-25%)" "python3 -c \"
import json
rows = [json.loads(l) for l in open('$L/poisson.ndjson')]
sends = sorted(r['send_s'] for r in rows)
sched = sorted(r['scheduled_s'] for r in rows)
rate = (len(sends) - 1) / (sends[-1] - sends[0])
want = (len(sched) - 1) / (sched[-1] - sched[0])
assert len(rows) == 1000 and abs(rate - want) / want < 0.25, (rate, want)
assert abs(want - 200) / 200 < 0.10, want
\""
check "poisson: sends follow the schedule (lag p99 < 1 s; the figure is a benchmark)" \
    "$J '$L/poisson.json' \"0 <= r['atr']['p99_schedule_lag_ms'] < 1000\""
check "poisson: request_rate recorded" "$J '$L/poisson.json' \"r['request_rate'] == 200\""

# --- Sessions: each turn is sent after the previous reply plus tool time. ---
# 3 sessions of 4 turns; each turn's prompt extends the previous one's
# blocks, and all share a 2-block system prompt; 0.1 s of tool time between.
python3 - "$L/sessions.ndjson" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for s in range(3):
        steps, ids = [], [1, 2]
        for k in range(4):
            ids = ids + [1000 * (s + 1) + len(ids) + j for j in range(2)]
            steps.append({"i": len(steps), "kind": "llm", "t_ms": 0, "dur_ms": 100,
                          "input_tokens": 16 * len(ids), "output_tokens": 5, "hash_ids": ids})
            steps.append({"i": len(steps), "kind": "tool", "tool": "bash", "command": "true",
                          "t_ms": 0, "dur_ms": 100})
        f.write(json.dumps({"format": "atr-trace/1", "trace_id": "s%d" % s, "start_ms": 0,
                            "block_size": 16, "steps": steps[:-1]}) + "\n")
PY
ok "replay sessions" "$ATR" replay llm -q "$L/sessions.ndjson" --target "$URL" --rate inf \
    --requests-out "$L/ses-req.ndjson" --save-result "$L/ses.json"
check "sessions keep causal order" "python3 -c \"
import json, collections
by = collections.defaultdict(list)
for l in open('$L/ses-req.ndjson'):
    r = json.loads(l); by[r['trace_id']].append(r)
assert sorted(by) == ['s0', 's1', 's2']
for rows in by.values():
    rows.sort(key=lambda r: r['turn'])
    assert [r['turn'] for r in rows] == [0, 1, 2, 3]
    for a, b in zip(rows, rows[1:]):
        assert b['scheduled_s'] >= a['end_s'] + 0.0999, (a, b)
        assert b['send_s'] >= b['scheduled_s'], b
\""

# --- Max concurrency: the slot wait is reported, not hidden. ---
ok "replay max-concurrency 2" "$ATR" replay llm -q "$L/req.ndjson" --target "$URL" --rate inf \
    --max-concurrency 4 --save-result "$L/conc.json" --requests-out "$L/conc.ndjson"
check "never more than 4 in flight" "python3 -c \"
import json
rows = [json.loads(l) for l in open('$L/conc.ndjson')]
for r in rows:
    n = sum(1 for o in rows if o['start_s'] <= r['start_s'] < o['end_s'])
    assert n <= 4, n
\""
check "queue time reported" "$J '$L/conc.json' \"r['atr']['mean_client_queue_ms'] > 100 and r['max_concurrency'] == 4\""

# --- Send lag: taken when the request leaves, so a slot wait is in it. ---
# One slot, 6 requests due at 0 on a server that answers each in >= 50 ms:
# the k-th leaves >= 50k ms after its schedule. The timer fired on time
# for all (schedule_lag_ms small); the send lag must hold the wait.
head -n 6 "$L/req.ndjson" >"$L/six.ndjson"
ok "replay max-concurrency 1" "$ATR" replay llm -q "$L/six.ndjson" --target "$URL" --rate inf \
    --max-concurrency 1 --save-result "$L/one.json" --requests-out "$L/one.ndjson"
check "send lag holds the slot wait (sent_s >= start_s >= send_s, last >= 250 ms)" "python3 -c \"
import json
rows = sorted((json.loads(l) for l in open('$L/one.ndjson')), key=lambda r: r['sent_s'])
assert len(rows) == 6
for r in rows:
    assert r['sent_s'] >= r['start_s'] >= r['send_s'] >= r['scheduled_s'] == 0, r
    assert abs(r['send_lag_ms'] - 1000 * r['sent_s']) < 1e-3, r
    assert r['send_lag_ms'] >= r['queue_ms'] + r['schedule_lag_ms'] - 1e-3, r
assert rows[-1]['send_lag_ms'] >= 250 > rows[-1]['schedule_lag_ms'], rows[-1]
\""
check "p99 send lag in the result, above the timer lag" "$J '$L/one.json' \"r['atr']['p99_send_lag_ms'] >= 200 and r['atr']['p99_send_lag_ms'] > r['atr']['p99_schedule_lag_ms']\""

# --- Prefix reuse over HTTP: sessions share byte-identical prefixes. ---
serve engine --profile h100/llama-3.1-8b
ok "replay sessions on the engine" "$ATR" replay llm -q "$L/sessions.ndjson" \
    --target "http://127.0.0.1:$PORT" --rate inf --save-result "$L/eng.json"
# Turn k+1 reuses turn k's blocks and all share the system prompt: over
# half of the prompt tokens come from the engine's prefix cache.
check "cached tokens from usage" "$J '$L/eng.json' \"r['atr']['cached_tokens'] > 0.5 * r['total_input_tokens']\""
# Policies on a real HTTP path: naive salts every prompt, so nothing hits;
# prefix-cache keeps prompts stable, so the cache hits (a fresh server
# each, so neither run warms the other's cache).
ok "replay naive policy" "$ATR" replay llm -q "$L/sessions.ndjson" --policy naive \
    --target "http://127.0.0.1:$PORT" --rate inf --warmup 0 --save-result "$L/pol-naive.json"
check "naive: salted prompts miss the cache" "$J '$L/pol-naive.json' \"r['atr']['cached_tokens'] == 0 and r['atr']['policy'] == 'naive' and r['atr']['policy_stats']['salted'] == 12\""
kill "$PID_engine" 2>/dev/null
serve engine2 --profile h100/llama-3.1-8b
E2=$PORT
serve engine3 --profile h100/llama-3.1-8b
E3=$PORT
ok "replay prefix-cache policy" "$ATR" replay llm -q "$L/sessions.ndjson" --policy prefix-cache \
    --target "http://127.0.0.1:$E2" --rate inf --warmup 0 --save-result "$L/pol-pc.json"
check "prefix-cache: stable prompts hit the cache" "$J '$L/pol-pc.json' \"r['atr']['cached_tokens'] > 0.5 * r['total_input_tokens'] and r['atr']['policy'] == 'prefix-cache'\""
# Two replicas: every request of the run reaches one of them.
ok "replay over two replicas" "$ATR" replay llm -q "$L/sessions.ndjson" --policy prefix-route \
    --target "http://127.0.0.1:$E2,http://127.0.0.1:$E3/v1" --rate inf --warmup 0 \
    --save-result "$L/pol-pr.json"
fails "two replicas without a policy" 2 "2 --target URLs need --policy" "$ATR" replay llm -q \
    "$L/sessions.ndjson" --target "http://127.0.0.1:$E2,http://127.0.0.1:$E3" --rate inf
check "two replicas: all completed" "$J '$L/pol-pr.json' \"r['completed'] == 12 and r['atr']['target'].count(',') == 1\""
kill "$PID_engine2" "$PID_engine3" 2>/dev/null
# Several policies against one server: each run has its own run word, so
# the second does not reuse the first one's cache, and a table compares them.
serve engine4 --profile h100/llama-3.1-8b
ok "replay two policies in turn" "$ATR" replay llm "$L/sessions.ndjson" --policy naive,prefix-cache \
    --target "http://127.0.0.1:$PORT" --rate inf --warmup 0 --save-result "$L/two.json"
check "two policies: comparison printed" "grep -q '^== comparison' '$T/out' && grep -Eq '\\| prefix-cache +\\|' '$T/out'"
check "two policies: naive misses, prefix-cache hits" "$J '$L/two.naive.json' \"r['atr']['cached_tokens'] == 0\" && $J '$L/two.prefix-cache.json' \"r['atr']['cached_tokens'] > 0.5 * r['total_input_tokens']\""
kill "$PID_engine4" 2>/dev/null
ok "sim target with two policies" "$ATR" replay llm -q "$L/sessions.ndjson" --target sim:h100/llama-3.1-8b \
    --policy naive,prefix-cache --save-result "$L/simtwo.json"
check "sim target: one result per policy" "[ -s '$L/simtwo.naive.json' ] && [ -s '$L/simtwo.prefix-cache.json' ]"
fails "replay llm unknown policy" 2 "unknown policy 'fastest'" "$ATR" replay llm "$L/req.ndjson" \
    --target "$URL" --model m --policy fastest

# --- Faults: each one counted with its reason, nothing crashes. ---
serve faults --ttft 5 --itl 1 --fail-rate 0.5 --fail-kinds 429,500,cut,stall --seed 9
FURL=http://127.0.0.1:$PORT
ok "replay with faults" "$ATR" replay llm -q "$L/req.ndjson" --target "$FURL" --rate 100 \
    --warmup 0 --stall-timeout 0.5 --save-result "$L/faults.json"
check "faults counted by reason" "$J '$L/faults.json' \"set(r['atr']['failures_by_reason']) == {'http 429', 'http 500', 'stream cut', 'stall'} and r['completed'] + r['failed'] == 40 and r['completed'] > 0\""
check "client counts = server counts" "python3 -c \"
import json, re, urllib.request
m = urllib.request.urlopen('$FURL/metrics').read().decode()
srv = {k: int(float(v)) for k, v in re.findall(r'atr_sim_faults_total\{kind=\\\"([a-z0-9]+)\\\"[^}]*\} ([0-9.e+]+)', m)}
cli = json.load(open('$L/faults.json'))['atr']['failures_by_reason']
names = {'429': 'http 429', '500': 'http 500', 'cut': 'stream cut', 'stall': 'stall'}
assert all(srv.get(k, 0) == cli.get(v, 0) for k, v in names.items()), (srv, cli)
\""
kill "$PID_faults" 2>/dev/null

# --- Servers that die or never answer. ---
# The server exits when the 5th request arrives. One request at a time, so
# the first 4 have finished by then whatever the machine's load: with
# several in flight, a slow first answer could leave none finished, and
# "every request failed" is another test's outcome.
serve crash --ttft 1 --itl 1 --crash-after 5
ok "server crashing mid-run" "$ATR" replay llm -q "$L/req.ndjson" --target "http://127.0.0.1:$PORT" \
    --model atr-sim --warmup 0 --rate 200 --max-concurrency 1 --save-result "$L/crash.json"
check "crash: failures counted" "$J '$L/crash.json' \"r['failed'] >= 35 and r['completed'] + r['failed'] == 40\""
serve hang --ttft 1 --itl 1 --hang
fails "server that never answers" 1 "every request failed" "$ATR" replay llm -q "$L/req.ndjson" \
    --target "http://127.0.0.1:$PORT" --model atr-sim --warmup 0 --rate inf --timeout 0.5 \
    --save-result "$L/hang.json"
check "hang: timeouts counted" "$J '$L/hang.json' \"r['atr']['failures_by_reason'].get('timeout', 0) + r['atr']['failures_by_reason'].get('stall', 0) == 40\""
kill "$PID_hang" 2>/dev/null
fails "nothing listening" 1 "warm-up request failed \\(connect" "$ATR" replay llm -q "$L/req.ndjson" \
    --target "http://127.0.0.1:1" --model m --save-result "$L/none.json"
absent "no result without a run" "$L/none.json"
fails "nothing listening, no --model" 1 "^atr: the server at http://127.0.0.1:1 is not reachable \\(Connection refused\\)$" \
    "$ATR" replay llm -q "$L/req.ndjson" --target "http://127.0.0.1:1"

# --- Ctrl-C: what finished is saved, marked incomplete. ---
serve slow --ttft 1 --itl 200
"$ATR" replay llm "$L/req.ndjson" --target "http://127.0.0.1:$PORT" --rate 20 --warmup 0 \
    --save-result "$L/int.json" --requests-out "$L/int.ndjson" >"$L/int.out" 2>"$L/int.err" &
rp=$!
deadline=$(($(date +%s) + 20))
while [ "$(date +%s)" -lt "$deadline" ] && kill -0 "$rp" 2>/dev/null; do
    if curl -s "http://127.0.0.1:$PORT/metrics" | grep -q '^vllm:generation_tokens_total{[^}]*} [1-9][0-9]'; then
        kill -INT "$rp"; break
    fi
done
wait "$rp"; st=$?
check "ctrl-c exits 130" "[ $st -eq 130 ]"
check "ctrl-c result marked incomplete" "$J '$L/int.json' \"r['atr']['incomplete'] is True and r['completed'] < 40\""
# The block printed after Ctrl-C says first that it is partial, and
# stderr says why the run ended, once (issue 11, item 14).
check "ctrl-c block headed INCOMPLETE" "head -n 1 '$L/int.out' | grep -Eq '^INCOMPLETE \(interrupted\): [0-9]+ of 40 requests finished$'"
check "ctrl-c says interrupted, once" "[ \$(wc -l <'$L/int.err') -eq 1 ] && grep -q '^atr: interrupted: [0-9]* of 40 requests finished, the result is marked incomplete$' '$L/int.err'"
kill "$PID_slow" 2>/dev/null

# --- The sim: target is atr sim run. ---
ok "replay llm sim target" "$ATR" replay llm "$L/req.ndjson" --target sim:h100/llama-3.1-8b --rate 10
sed 1d "$T/out" >"$L/sim-target.txt"
ok "sim run same workload" "$ATR" sim run "$L/req.ndjson" --profile h100/llama-3.1-8b --rate 10
check "sim target = sim run" "sed 1d '$T/out' | cmp - '$L/sim-target.txt'"

# --- Empty workloads, outputs, deaths at warm-up, Ctrl-C (issue 11). ---
printf '{"format":"atr-trace/1","trace_id":"t","steps":[{"i":0,"kind":"tool","tool":"bash","command":"true","t_ms":0,"dur_ms":5}]}\n' >"$L/tools.ndjson"
fails "replay llm sim: no llm steps" 1 "no llm steps in .*/tools\\.ndjson$" "$ATR" replay llm \
    "$L/tools.ndjson" --target sim:h100/llama-3.1-8b --save-result "$L/empty.json"
absent "replay llm sim: no llm steps writes nothing" "$L/empty.json"
fails "replay llm HTTP: no llm steps" 1 "no llm steps in .*/tools\\.ndjson$" "$ATR" replay llm \
    "$L/tools.ndjson" --target "$URL" --model atr-sim --save-result "$L/empty.json"
absent "replay llm HTTP: no llm steps writes nothing" "$L/empty.json"

# Outputs are checked before the work (the bad output is named before the
# missing trace is read) and written all or none.
fails "replay llm: outputs checked first" 1 "^atr: /proc/x: " "$ATR" replay llm "$L/nope.ndjson" \
    --target "$URL" --model m --save-result /proc/x
fails "replay llm: bad --requests-out" 1 "/proc/x: " "$ATR" replay llm -q "$L/req.ndjson" \
    --target "$URL" --model atr-sim --save-result "$L/ok.json" --requests-out /proc/x
absent "replay llm: bad --requests-out leaves no result" "$L/ok.json"
fails "replay llm sim: bad --requests-out" 1 "/proc/x: " "$ATR" replay llm -q "$L/req.ndjson" \
    --target sim:h100/llama-3.1-8b --save-result "$L/ok.json" --requests-out /proc/x
absent "replay llm sim: bad --requests-out leaves no result" "$L/ok.json"
# A bad policy of a series is a usage error before the first runs (issue
# 11, item 13): the series leaves none of its files.
fails "replay llm: a series that fails" 2 "unknown policy 'fastest'" "$ATR" replay llm -q \
    "$L/sessions.ndjson" --target sim:h100/llama-3.1-8b --policy naive,fastest \
    --save-result "$L/ser.json"
absent "replay llm: a series that fails leaves nothing" "$L/ser.naive.json"

# A server that dies at warm-up: the error says what happened to the
# connection, and asks about the model only when the server refused it.
serve crashwarm --ttft 1 --itl 1 --crash-after 1
fails "death at warm-up: closed before answering" 1 \
    "warm-up request failed \\(connect: the server closed the connection before answering" \
    "$ATR" replay llm -q "$L/req.ndjson" --target "http://127.0.0.1:$PORT" --model atr-sim \
    --save-result "$L/cw.json"
check "death at warm-up: no question about the model" "! grep -q 'serving model' '$T/err'"
absent "death at warm-up: no result" "$L/cw.json"
serve cutwarm --ttft 1 --itl 1 --fail-rate 1 --fail-kinds cut
fails "cut at warm-up: bytes and status" 1 \
    "warm-up request failed \\(stream cut: the connection closed after [1-9][0-9]* bytes of the HTTP 200 body, before data: \\[DONE\\]" \
    "$ATR" replay llm -q "$L/req.ndjson" --target "http://127.0.0.1:$PORT" --model atr-sim
check "cut at warm-up: no question about the model" "! grep -q 'serving model' '$T/err'"
kill "$PID_cutwarm" 2>/dev/null
fails "wrong model at warm-up: asks about the model" 1 "http 404: .*; is the target serving model 'nope'\\?$" \
    "$ATR" replay llm -q "$L/req.ndjson" --target "$URL" --model nope

# Ctrl-C during warm-up (a server that never answers): a run of nothing,
# marked incomplete, not an error. The output's temporary shows the run
# has started (the stop handler is in place before it is opened).
serve hang2 --ttft 1 --itl 1 --hang
"$ATR" replay llm "$L/req.ndjson" --target "http://127.0.0.1:$PORT" --model atr-sim \
    --save-result "$L/wint.json" >"$L/wint.out" 2>"$L/wint.err" &
rp=$!
deadline=$(($(date +%s) + 20))
while ! ls "$L"/wint.json.tmp.* >/dev/null 2>&1 && [ "$(date +%s)" -lt "$deadline" ]; do :; done
kill -INT "$rp"
wait "$rp"; st=$?
kill "$PID_hang2" 2>/dev/null
check "ctrl-c at warm-up exits 130" "[ $st -eq 130 ]"
check "ctrl-c at warm-up says interrupted, once" "[ \$(wc -l <'$L/wint.err') -eq 1 ] && grep -q '^atr: interrupted: 0 of 40 requests' '$L/wint.err'"
check "ctrl-c at warm-up: block headed INCOMPLETE" "head -n 1 '$L/wint.out' | grep -q '^INCOMPLETE (interrupted)'"
check "ctrl-c at warm-up: result marked incomplete" "$J '$L/wint.json' \"r['atr']['incomplete'] is True and r['completed'] == 0\""

# Ctrl-C on the sim target: the trace comes through a FIFO held open, so
# the run is still reading when the signal comes.
mkfifo "$L/fifo"
"$ATR" replay llm "$L/fifo" --target sim:h100/llama-3.1-8b --save-result "$L/sint.json" \
    >"$L/sint.out" 2>"$L/sint.err" &
rp=$!
exec 3>"$L/fifo"
cat "$L/req.ndjson" >&3
deadline=$(($(date +%s) + 20))
while ! ls "$L"/sint.json.tmp.* >/dev/null 2>&1 && [ "$(date +%s)" -lt "$deadline" ]; do :; done
kill -INT "$rp"
wait "$rp"; st=$?
exec 3>&-
check "sim target: ctrl-c exits 130" "[ $st -eq 130 ]"
check "sim target: ctrl-c says interrupted, once" "[ \"\$(cat '$L/sint.err')\" = 'atr: interrupted' ] && [ ! -s '$L/sint.out' ]"
absent "sim target: ctrl-c leaves no result" "$L/sint.json"

# --- Shards and --merge: a run on two "machines" is the run on one. ---
# The sim: target is deterministic: 40 requests 1 s apart never overlap, so
# each shard's requests take exactly what they take unsharded, and the
# merged figures must equal the unsharded run's (percentiles exactly; sums
# of another order to 1e-9).
SIMT=sim:h100/llama-3.1-8b
for sh in "" 0:2 1:2; do
    n=$(echo "$sh" | tr -d :)
    ok "sim run shard '$sh'" "$ATR" replay llm -q "$L/req.ndjson" --target $SIMT --rate 1 \
        --arrival constant ${sh:+--shard $sh} --requests-out "$L/sh$n.ndjson" --save-result "$L/sh$n.json"
done
check "shards split the sessions: 20 + 20, every one once" "python3 -c \"
import json
a = [json.loads(l)['trace_id'] for l in open('$L/sh02.ndjson')]
b = [json.loads(l)['trace_id'] for l in open('$L/sh12.ndjson')]
u = [json.loads(l)['trace_id'] for l in open('$L/sh.ndjson')]
assert len(a) == len(b) == 20 and sorted(a + b) == sorted(u) and not set(a) & set(b), (a, b)
\""
ok "merge two shards" "$ATR" replay llm --merge "$L/sh02.ndjson" "$L/sh12.ndjson" --rate 1 \
    --percentiles 50,90,99 --save-result "$L/merged.json" --requests-out "$L/merged.ndjson"
check "merge prints the block" "grep -q 'Serving Benchmark Result' '$T/out' && grep -Eq '^Successful requests: +40 *\$' '$T/out'"
ok "merge the unsharded run" "$ATR" replay llm -q --merge "$L/sh.ndjson" --rate 1 \
    --percentiles 50,90,99 --save-result "$L/unmerged.json"
cat >"$L/same.py" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
def flat(d, p=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from flat(v, p + k + ".")
        else:
            yield p + k, v
fa, fb = dict(flat(a)), dict(flat(b))
assert fa.keys() == fb.keys(), fa.keys() ^ fb.keys()
for k, v in fa.items():
    if k == "date":
        continue
    if k.split(".")[-1].startswith(("p", "median")) or not isinstance(v, float):
        assert v == fb[k], (k, v, fb[k])          # percentiles, counts: exact
    else:
        assert abs(v - fb[k]) <= 1e-9 * max(1.0, abs(v)), (k, v, fb[k])
assert fa["completed"] == 40 and fa["atr.p99_send_lag_ms"] == fb["atr.p99_send_lag_ms"]
PY
check "merged shards == unsharded run (percentiles exact)" "python3 '$L/same.py' '$L/merged.json' '$L/unmerged.json'"
check "merged = unsharded run's own figures" "python3 -c \"
import json
m = json.load(open('$L/merged.json')); u = json.load(open('$L/sh.json'))
for k in ('completed', 'total_output_tokens', 'p99_ttft_ms', 'mean_itl_ms', 'p99_e2el_ms', 'duration'):
    assert abs(m[k] - u[k]) <= 1e-6 * max(1, abs(u[k])), (k, m[k], u[k])
\""
check "merged --requests-out has every line" "[ \$(wc -l <'$L/merged.ndjson') -eq 40 ]"
# Over HTTP, two shards at once on one shared wall-clock start: together
# they keep the one schedule (exactly the unsharded scheduled_s per trace),
# and neither sends before the start (the run takes at least its wait).
serve shards --ttft 5 --itl 1
SURL=http://127.0.0.1:$PORT
ok "http unsharded" "$ATR" replay llm -q "$L/req.ndjson" --target "$SURL" --rate 50 --seed 2 \
    --requests-out "$L/hu.ndjson"
at=$(($(date +%s) + 2))
t0=$(date +%s)
"$ATR" replay llm -q "$L/req.ndjson" --target "$SURL" --rate 50 --seed 2 --shard 0:2 \
    --start-at "$at" --requests-out "$L/h0.ndjson" 2>"$L/h0.err" &
p0=$!
"$ATR" replay llm -q "$L/req.ndjson" --target "$SURL" --rate 50 --seed 2 --shard 1:2 \
    --start-at "$at" --requests-out "$L/h1.ndjson" 2>"$L/h1.err" &
p1=$!
wait $p0; s0=$?
wait $p1; s1=$?
t1=$(date +%s)
check "http shards ran (exit 0 both)" "[ $s0 -eq 0 ] && [ $s1 -eq 0 ]"
check "http shards waited for --start-at" "[ $t1 -ge $at ]"
check "http shards keep the unsharded schedule" "python3 -c \"
import json
s = lambda f: {json.loads(l)['trace_id']: json.loads(l)['scheduled_s'] for l in open(f)}
u, a, b = s('$L/hu.ndjson'), s('$L/h0.ndjson'), s('$L/h1.ndjson')
assert len(a) == len(b) == 20 and {**a, **b} == u, (a, b, u)
\""
ok "http merge" "$ATR" replay llm -q --merge "$L/h0.ndjson" "$L/h1.ndjson" --save-result "$L/hm.json"
check "http merge: 40 requests, one duration" "$J '$L/hm.json' \"r['completed'] == 40 and 0.5 < r['duration'] < 30\""
# Four shards as four processes on one wall-clock start (as four pods of
# an Indexed Job would run, docs/replay-llm.md): together every request
# once, on the one schedule; merging the four files is merging their
# concatenation (percentiles exactly, sums to the last bit), and the merged percentiles are numpy's
# over the union of the shards' own request lines (to their 1 ns print).
at=$(($(date +%s) + 2))
for i in 0 1 2 3; do
    "$ATR" replay llm -q "$L/req.ndjson" --target "$SURL" --rate 50 --seed 2 --shard "$i:4" \
        --start-at "$at" --requests-out "$L/q$i.ndjson" 2>"$L/q$i.err" &
    eval "qp$i=\$!"
done
qs=0
for i in 0 1 2 3; do eval "wait \$qp$i" || qs=1; done
check "4 shards ran" "[ $qs -eq 0 ]"
check "4 shards keep the unsharded schedule" "python3 -c \"
import json
s = lambda f: {json.loads(l)['trace_id']: json.loads(l)['scheduled_s'] for l in open(f)}
u, parts = s('$L/hu.ndjson'), [s('$L/q%d.ndjson' % i) for i in range(4)]
assert [len(p) for p in parts] == [10] * 4 and {k: v for p in parts for k, v in p.items()} == u
\""
ok "4 shards merge" "$ATR" replay llm -q --merge "$L/q0.ndjson" "$L/q1.ndjson" "$L/q2.ndjson" "$L/q3.ndjson" \
    --percentiles 50,90,99 --save-result "$L/q.json"
cat "$L/q2.ndjson" "$L/q0.ndjson" "$L/q3.ndjson" "$L/q1.ndjson" >"$L/qall.ndjson"
ok "4 shards as one file" "$ATR" replay llm -q --merge "$L/qall.ndjson" --percentiles 50,90,99 --save-result "$L/qall.json"
check "4 shards: merge = merge of the concatenation" "python3 -c \"
import json
def flat(d, pre=''):
    for k, v in d.items():
        yield from flat(v, pre + k + '.') if isinstance(v, dict) else [(pre + k, v)]
a, b = dict(flat(json.load(open('$L/q.json')))), dict(flat(json.load(open('$L/qall.json'))))
assert a.keys() == b.keys()
for k in a:   # sums (means, stds) may differ in the last bit with the order added
    same = a[k] == b[k] or (k.split('.')[-1].startswith(('mean_', 'std_')) and abs(a[k] - b[k]) <= 1e-12 * abs(a[k]))
    assert same or k == 'date', (k, a[k], b[k])
\""
check "4 shards: percentiles of the union" "python3 -c \"
import json, math
rows = [json.loads(l) for i in range(4) for l in open('$L/q%d.ndjson' % i)]
r = json.load(open('$L/q.json'))
def pct(v, p):
    v = sorted(v); h = (len(v) - 1) * p / 100; lo = math.floor(h)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (h - lo)
for m in ('ttft', 'e2el'):
    v = [x[m + '_ms'] for x in rows if x['success']]
    assert len(v) == 40
    for p in (50, 90, 99):
        got = r['median_%s_ms' % m if p == 50 else 'p%d_%s_ms' % (p, m)]
        assert abs(got - pct(v, p)) < 1e-5, (m, p, got, pct(v, p))
\""
# --threads: two event loops, one run: every request, the one schedule.
ok "http two threads" "$ATR" replay llm -q "$L/req.ndjson" --target "$SURL" --rate 50 --seed 2 \
    --threads 2 --requests-out "$L/ht.ndjson" --save-result "$L/ht.json"
check "threads: one schedule, every request once, none sent early" "python3 -c \"
import json
rows = [json.loads(l) for l in open('$L/ht.ndjson')]
u = {json.loads(l)['trace_id']: json.loads(l)['scheduled_s'] for l in open('$L/hu.ndjson')}
assert {r['trace_id']: r['scheduled_s'] for r in rows} == u and len(rows) == 40
assert all(r['success'] and r['sent_s'] >= r['scheduled_s'] for r in rows)
\""
check "threads: the result counts all" "$J '$L/ht.json' \"r['completed'] == 40 and r['num_prompts'] == 40\""
fails "threads: not for sim" 2 "--threads is for servers" "$ATR" replay llm "$L/req.ndjson" \
    --target $SIMT --threads 2
fails "threads: not with a policy" 2 "--threads does not combine with --policy" "$ATR" replay llm \
    "$L/req.ndjson" --target "$SURL" --threads 2 --policy naive
fails "merge: a line that is not a request" 1 "bad.ndjson:2:1: a request line wants \"scheduled_s\", a number" \
    sh -c "head -n 1 '$L/h0.ndjson' >'$L/bad.ndjson'; echo '{\"id\": 1, \"success\": true}' >>'$L/bad.ndjson'; \"\$0\" replay llm --merge '$L/bad.ndjson' --save-result '$L/bad.json'" "$ATR"
absent "merge: bad input leaves no result" "$L/bad.json"
fails "merge: bad JSON" 1 "bad2.ndjson:1:[0-9]+: " \
    sh -c "echo '{\"id\": ' >'$L/bad2.ndjson'; \"\$0\" replay llm --merge '$L/bad2.ndjson'" "$ATR"
fails "shard: bad spec" 2 "--shard 2:2: shards count from 0: the last of 2 is 1:2" "$ATR" replay llm \
    "$L/req.ndjson" --target "$URL" --shard 2:2
fails "shard: old spelling" 2 "--shard 1/2: the I/N spelling is gone \\(replay llm counted from 0\\): write --shard 1:2" \
    "$ATR" replay llm "$L/req.ndjson" --target "$URL" --shard 1/2
fails "shard: empty shard" 1 "shard 39:50 has no llm steps" "$ATR" replay llm "$L/six.ndjson" \
    --target $SIMT --shard 39:50
fails "start-at: not for sim" 2 "--start-at is for servers" "$ATR" replay llm "$L/req.ndjson" \
    --target $SIMT --start-at 1800000000
fails "merge: no target" 2 "--merge reads request files" "$ATR" replay llm --merge "$L/h0.ndjson" --target "$URL"

# --- Bad arguments. ---
fails "replay llm needs a target" 2 "missing --target" "$ATR" replay llm "$L/req.ndjson"
fails "replay llm bad target" 2 "--target wants" "$ATR" replay llm "$L/req.ndjson" --target ftp://x
fails "replay llm bad rate" 2 "--rate wants" "$ATR" replay llm "$L/req.ndjson" --target "$URL" --rate -3
fails "replay llm bad goodput" 2 "--goodput wants" "$ATR" replay llm "$L/req.ndjson" --target "$URL" --goodput fast
fails "replay llm bad trace" 1 "nope.ndjson" "$ATR" replay llm "$L/nope.ndjson" --target "$URL" --model m

for p in $LLM_PIDS; do kill "$p" 2>/dev/null; done
for p in $LLM_PIDS; do wait "$p" 2>/dev/null; done
