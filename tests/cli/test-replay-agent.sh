# test-replay-agent.sh - atr replay agent against `atr sim serve` on
# 127.0.0.1 and the in-process sim: target: tool steps measured as real
# processes between the turns, causal order in the request lines, the
# split adding up, tool failures (continue / stop), bad input, Ctrl-C.
A=$T/replay-agent
mkdir -p "$A"
AG_PIDS=""
# --sandbox none: the CLI tests must also run where namespaces are not
# allowed; test-sandbox covers the jail the runner shares with replay tools.
RA="$ATR replay agent --sandbox none --workdir $A"

# agent_serve ARGS... : `atr sim serve ARGS --port 0`, PORT once it listens.
agent_serve() {
    "$ATR" sim serve "$@" --port 0 >"$A/srv.out" 2>"$A/srv.err" &
    AG_PIDS="$AG_PIDS $!"
    PORT=""
    wait_for 20 "grep -q 'listening on' '$A/srv.out'" &&
        PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$A/srv.out")
    [ -n "$PORT" ] || echo "test-replay-agent: server did not start: $(cat "$A/srv.err")"
}
agent_serve --ttft 20 --itl 5
URL=http://127.0.0.1:$PORT

cat >"$A/check.py" <<'PY'
# check.py RESULT REQUESTS: the properties every run must have.
import json, sys
res = json.load(open(sys.argv[1]))["atr"]["agent"]
lines = [json.loads(l) for l in open(sys.argv[2])]
llm = [l for l in lines if l["kind"] == "llm"]
tool = [l for l in lines if l["kind"] == "tool"]
def turn(s, k):
    return next(l for l in llm if l["session"] == s and l["turn"] == k)
for t in tool:              # causal: a step starts after the turn before it ended,
    if t["after_turn"] >= 0:    # the next turn is sent after it ended
        assert t["start_s"] >= turn(t["session"], t["after_turn"])["end_s"], t
    nxt = [l for l in llm if l["session"] == t["session"] and l["turn"] == t["after_turn"] + 1]
    for n in nxt:
        assert n["sent_s"] >= t["end_s"], (t, n)
for s in res["per_session"]:    # the split adds up to the completion time
    # (handoffs are "other": how large they are is a figure, not a bound)
    parts = s["model_s"] + s["tool_s"] + s["queue_s"] + s["other_s"]
    assert abs(s["completion_s"] - parts) <= 1e-3 + 1e-6 * s["completion_s"], s
    assert s["other_s"] >= -1e-3, s
print("ok")
PY

ok "replay agent http" $RA "$DATA/agent/two.ndjson" --target "$URL" --rate inf \
    --save-result "$A/r.json" --requests-out "$A/q.ndjson"
check "http: causal order, split adds up" "python3 '$A/check.py' '$A/r.json' '$A/q.ndjson'"
check "http: block has the split" "grep -q '^Tool time (s):' '$T/out' && grep -q '^Model time (s):' '$T/out'"
check "http: sleep 0.3 is measured as >= 0.3 s of tool time" "python3 -c \"
import json; r=json.load(open('$A/r.json'))['atr']['agent']['per_session']
a=[s for s in r if s['trace_id']=='agent/a'][0]
assert a['tool_s'] >= 0.3 and a['tool_exec_s'] >= 0.3, a\""
check "http: every turn sent, one line per request and step" "python3 -c \"
import json; l=[json.loads(x) for x in open('$A/q.ndjson')]
assert sum(x['kind']=='llm' for x in l)==5 and sum(x['kind']=='tool' for x in l)==5, l\""
check "http: files persist across a session's steps" "python3 -c \"
import json; l=[json.loads(x) for x in open('$A/q.ndjson')]
c=[x for x in l if x.get('cmd')=='cat f.txt'][0]; assert c['exit_code']==0 and c['output_bytes']==3, c\""
check "http: the failed step is recorded, its session goes on" "python3 -c \"
import json; r=json.load(open('$A/r.json'))['atr']['agent']
b=[s for s in r['per_session'] if s['trace_id']=='agent/b'][0]
assert b['tool_failed']==1 and b['turns']==2 and not b['stopped'] and r['turns_dropped']==0, r\""
check "http: resource figures" "python3 -c \"
import json; r=json.load(open('$A/r.json'))['atr']['agent']
assert r['tool_peak_rss_mb'] >= 0 and r['tool_cpu_s'] >= 0 and 0 < r['split']['tool_share'] < 1, r\""

ok "on-tool-fail stop" $RA "$DATA/agent/two.ndjson" --target "$URL" --rate inf -q \
    --on-tool-fail stop --save-result "$A/stop.json" --requests-out "$A/stop.ndjson"
check "stop: the failing session ends, its later turn dropped" "python3 -c \"
import json; r=json.load(open('$A/stop.json'))['atr']['agent']
b=[s for s in r['per_session'] if s['trace_id']=='agent/b'][0]
assert b['stopped'] and b['turns']==1 and b['turns_dropped']==1 and r['turns']==4, r\""
check "stop: causal order, split adds up" "python3 '$A/check.py' '$A/stop.json' '$A/stop.ndjson'"

ok "steps before the first turn and after the last" $RA "$DATA/agent/prelude.ndjson" \
    --target "$URL" -q --save-result "$A/pre.json" --requests-out "$A/pre.ndjson"
check "prelude: causal order, split adds up" "python3 '$A/check.py' '$A/pre.json' '$A/pre.ndjson'"
check "prelude: the setup step runs before turn 0, the tail after the last reply" "python3 -c \"
import json; l=[json.loads(x) for x in open('$A/pre.ndjson')]
t0=[x for x in l if x['kind']=='llm' and x['turn']==0][0]
s=[x for x in l if x['kind']=='tool']
assert s[0]['after_turn']==-1 and s[0]['end_s'] <= t0['sent_s'], s
assert [x for x in s if x.get('cmd')=='cat s.txt'][0]['exit_code']==0
r=json.load(open('$A/pre.json'))['atr']['agent']['per_session'][0]
assert r['tool_s'] >= 0.2, r\""

ok "sim: target" $RA "$DATA/agent/two.ndjson" --target sim:h100/llama-3.1-8b --rate inf -q \
    --save-result "$A/sim.json" --requests-out "$A/sim.ndjson"
check "sim: causal order, split adds up" "python3 '$A/check.py' '$A/sim.json' '$A/sim.ndjson'"

ok "max-concurrency 1 queues the sessions" $RA "$DATA/agent/two.ndjson" --target "$URL" \
    --rate inf --max-concurrency 1 -q --save-result "$A/mc.json" --requests-out "$A/mc.ndjson"
check "max-concurrency: causal order, split adds up" "python3 '$A/check.py' '$A/mc.json' '$A/mc.ndjson'"

# --image: the session's tool steps in a container of a real image
# (podman-imported busybox), one for the whole trace, removed afterwards.
if [ "$(id -u)" != 0 ] || ! command -v podman >/dev/null 2>&1 || [ ! -x /bin/busybox ]; then
    echo "skipped: replay agent --image needs root, podman and /bin/busybox" >&2
else
    AID=atragent$(echo "$T" | cksum | cut -d' ' -f1)
    mkdir -p "$A/rf/bin" "$A/rf/testbed"
    cp /bin/busybox "$A/rf/bin/"
    for l in sh cat grep test echo sleep; do ln -s busybox "$A/rf/bin/$l"; done
    echo hello >"$A/rf/testbed/README"
    tar -C "$A/rf" -cf "$A/rf.tar" . && podman import --change WORKDIR=/testbed "$A/rf.tar" "$AID" >/dev/null 2>&1
    printf '%s\n' '{"format":"atr-trace/1","trace_id":"t/img","steps":[{"kind":"llm","input_tokens":8,"output_tokens":2},{"kind":"tool","tool":"bash","command":"grep -qx hello README && echo x > made","cwd":"/testbed"},{"kind":"llm","input_tokens":8,"output_tokens":2},{"kind":"tool","tool":"bash","command":"test -f made","cwd":"/testbed"}]}' >"$A/img.ndjson"
    ok "image: steps in the container" "$ATR" replay agent -q --workdir "$A" --image "$AID" "$A/img.ndjson" \
        --target "$URL" --save-result "$A/img.json" --requests-out "$A/img-q.ndjson"
    check "image: both steps ran there and succeeded" "python3 -c \"
import json; l=[json.loads(x) for x in open('$A/img-q.ndjson')]; t=[x for x in l if x['kind']=='tool']
assert len(t)==2 and all(x['exit_code']==0 for x in t), t\""
    check "image: causal order, split adds up" "python3 '$A/check.py' '$A/img.json' '$A/img-q.ndjson'"
    check "image: no container left" "[ -z \"\$(podman ps -a --format '{{.Image}}' | grep -F 'localhost/$AID:latest')\" ]"
    podman rmi -f "$AID" >/dev/null 2>&1
fi

# The default sandbox (root: namespaces, seccomp, read-only root) and
# --rootfs: the steps run jailed, files still carry across steps.
if [ "$(id -u)" = 0 ] && [ -x /bin/busybox ]; then
    ok "sandbox: the default jail" "$ATR" replay agent -q --workdir "$A" "$DATA/agent/two.ndjson" \
        --target "$URL" --rate inf --save-result "$A/sb.json" --requests-out "$A/sb.ndjson"
    check "sandbox: causal order, split adds up" "python3 '$A/check.py' '$A/sb.json' '$A/sb.ndjson'"
    check "sandbox: exit codes as on the host" "python3 -c \"
import json; l=[json.loads(x) for x in open('$A/sb.ndjson')]
assert sorted(x['exit_code'] for x in l if x['kind']=='tool')==[0,0,0,0,3], l\""
else
    echo "skipped: replay agent in the sandbox needs root" >&2
fi
fails "--rootfs without /bin/sh" 1 "not a root filesystem" $RA --sandbox ns --rootfs "$A" \
    "$DATA/agent/two.ndjson" --target "$URL"
fails "--bind with --sandbox none" 2 "need the sandbox" $RA --bind "$A" "$DATA/agent/two.ndjson" \
    --target "$URL"

# Bad input: one line, no output file.
fails "missing target" 2 "missing --target" $RA "$DATA/agent/two.ndjson"
fails "missing trace" 2 "missing TRACE" $RA --target "$URL"
printf '{"format":"atr-trace/1","trace_id":"t/none","steps":[{"kind":"tool","tool":"bash","command":"true"}]}\n' >"$A/nollm.ndjson"
fails "trace without llm steps" 1 "nollm.ndjson: trace t/none has no llm steps" \
    $RA "$A/nollm.ndjson" --target "$URL" --save-result "$A/bad.json"
absent "no result after bad input" "$A/bad.json"
printf '{"format":"atr-trace/1","trace_id":"t/x","steps":[{"kind":"llm","input_tokens":5,"output_tokens":2}' >"$A/cut.ndjson"
fails "a cut trace" 1 "cut.ndjson:1:[0-9]+: " $RA "$A/cut.ndjson" --target "$URL"
printf '{"format":"atr-trace/1.1","trace_id":"t/dag","steps":[{"kind":"llm","input_tokens":8,"output_tokens":2},{"kind":"tool","tool":"bash","command":"true","parents":[7],"agent":"sub"}]}\n' >"$A/badpar.ndjson"
fails "a DAG step naming an unknown parent" 1 "badpar.ndjson:1:" $RA "$A/badpar.ndjson" --target "$URL"
fails "bad --on-tool-fail" 2 "--on-tool-fail wants continue or stop" \
    $RA "$DATA/agent/two.ndjson" --target "$URL" --on-tool-fail maybe
fails "bad --config" 2 "--config wants" $RA "$DATA/agent/two.ndjson" --target "$URL" --config x

# A DAG: a fork into two sub-agents, each with a `sleep 0.3`, then a join.
ok "dag: fork, two branches, join" $RA "$DATA/agent/dag.ndjson" --target "$URL" --rate inf \
    --save-result "$A/dag.json" --requests-out "$A/dag.ndjson"
check "dag: the two sleeps overlap, the join waits for both" "python3 -c \"
import json; l=[json.loads(x) for x in open('$A/dag.ndjson')]
t=[x for x in l if x['kind']=='tool']; q=[x for x in l if x['kind']=='llm']
assert len(t)==2 and len(q)==4 and all(x['exit_code']==0 for x in t), l
assert t[0]['start_s'] < t[1]['end_s'] and t[1]['start_s'] < t[0]['end_s'], t
j=[x for x in q if x['turn']==3][0]; assert j['sent_s'] >= max(x['end_s'] for x in t), (j, t)
b=[x for x in q if x['turn'] in (1, 2)]
assert all(x['start_s'] >= y['end_s'] for x in t for y in q if y['turn']==0), l
r=json.load(open('$A/dag.json'))['atr']['agent']['per_session'][0]
branches=sum(x['end_s']-x['start_s'] for x in t)+sum(x['end_s']-x['sent_s'] for x in b)
assert r['completion_s'] < branches and r['turns']==4 and r['tool_steps']==2, (r, branches)\""
check "dag: the split counts overlapping branches once, adds up" "python3 -c \"
import json; s=json.load(open('$A/dag.json'))['atr']['agent']['per_session'][0]
assert abs(s['completion_s'] - s['model_s'] - s['tool_s'] - s['queue_s'] - s['other_s']) <= 1e-3, s
assert s['other_s'] >= -1e-3 and s['tool_s'] >= 0.3 and s['tool_exec_s'] >= 0.6, s\""
check "dag: the session block has its critical path and parallelism" "grep -q '^Mean critical path (ms):' '$T/out' && grep -q '^Mean parallelism:' '$T/out'"

# A DAG branch's step fails with --on-tool-fail stop: the join is dropped.
sed 's/"command":"sleep 0.3","parents":\[1\]/"command":"exit 3","parents":[1]/' \
    "$DATA/agent/dag.ndjson" >"$A/dagfail.ndjson"
ok "dag: on-tool-fail stop" $RA "$A/dagfail.ndjson" --target "$URL" --rate inf -q \
    --on-tool-fail stop --save-result "$A/dagstop.json"
check "dag stop: the join turn dropped, the session stopped" "python3 -c \"
import json; s=json.load(open('$A/dagstop.json'))['atr']['agent']['per_session'][0]
assert s['stopped'] and s['turns']==3 and s['turns_dropped']==1 and s['tool_failed']==1, s\""

# Ctrl-C while a tool step runs: exit 130, what finished saved and marked
# incomplete, no process, group or work directory left.
printf '{"format":"atr-trace/1","trace_id":"t/int","steps":[{"kind":"llm","input_tokens":8,"output_tokens":2},{"kind":"tool","tool":"bash","command":"sleep 59.93"},{"kind":"llm","input_tokens":8,"output_tokens":2}]}\n' >"$A/int.ndjson"
setsid $RA "$A/int.ndjson" --target "$URL" -q --save-result "$A/int.json" >/dev/null 2>"$A/int.err" &
pid=$!
wait_for 20 "sh '$DATA/replay/leftovers.sh' $pid | grep -q 'sleep 59.93'"
kill -INT "$pid"
wait "$pid"
st=$?
CURRENT="ctrl-c exit status"; [ "$st" -eq 130 ] && pass || fail "exit status $st, not 130"
check "ctrl-c: result marked incomplete" "python3 -c \"
import json; r=json.load(open('$A/int.json'))['atr']; assert r['incomplete'] is True, r\""
check "ctrl-c: nothing left (processes, cgroups, work directories)" \
    "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $pid '$A')\" ]"

# SIGKILL while a step runs: the guard removes the step, its group and the
# work directory (polled with a deadline: the guard acts after atr died).
setsid $RA "$A/int.ndjson" --target "$URL" -q >/dev/null 2>&1 &
pid=$!
wait_for 20 "sh '$DATA/replay/leftovers.sh' $pid | grep -q 'sleep 59.93'"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
CURRENT="sigkill: nothing left"
if wait_for 30 "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $pid '$A')\" ]"; then pass
else fail "left: $(sh "$DATA/replay/leftovers.sh" $pid "$A" | head -3)"; fi

# A server that is not there: one line, exit 1, nothing written.
fails "server down" 1 "warm-up request failed \\(connect" $RA "$DATA/agent/two.ndjson" -m x \
    --target http://127.0.0.1:9 --save-result "$A/down.json"
absent "server down: no result" "$A/down.json"

for p in $AG_PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done

# atr report shows the split of a replay agent result, per session too.
ok "report of a replay agent result" "$ATR" report "$A/r.json" -o "$A/report.html"
check "report: the agent table with both sessions" "grep -q 'Agent sessions: model vs tool time' '$A/report.html' && grep -q '<td>  agent/a</td>' '$A/report.html' && grep -q '<td>  agent/b</td>' '$A/report.html'"
# The --requests-out file is a request file for the readers: tool lines skipped.
ok "report reads the requests-out file" "$ATR" report "$A/r.json" "$A/q.ndjson" -o "$A/report2.html"
ok "replay llm --merge reads it" "$ATR" replay llm --merge "$A/q.ndjson"
check "merge: the 5 requests, no tool step" "grep -q '^Successful requests: *5 *\$' '$T/out'"
