# test-agent-dag.sh - atr replay agent on DAG traces: the sub-agents of a
# session share its work directory (a file one writes is there for the
# others, as in the recording), Ctrl-C and SIGTERM while sub-agents run
# tool steps on their threads, and the options replay llm shares with it
# (several targets under --policy, --session-hint, --kv-retain, --goodput).
G=$T/agent-dag
mkdir -p "$G"
GD_PIDS=""
RG="$ATR replay agent --sandbox none --workdir $G"

# gd_serve NAME ARGS... : `atr sim serve ARGS --port 0`; PORT once it listens.
gd_serve() {
    gd_n=$1; shift
    "$ATR" sim serve "$@" --port 0 >"$G/$gd_n.out" 2>"$G/$gd_n.err" &
    GD_PIDS="$GD_PIDS $!"
    PORT=""
    wait_for 20 "grep -q 'listening on' '$G/$gd_n.out'" &&
        PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$G/$gd_n.out")
    [ -n "$PORT" ] || echo "test-agent-dag: server $gd_n did not start: $(cat "$G/$gd_n.err")"
}
gd_serve fake --ttft 20 --itl 5
URL=http://127.0.0.1:$PORT

# --- One work directory per session, shared by its sub-agents. ---
ok "shared: a DAG whose sub-agents read each other's files" $RG "$DATA/agent/dag-shared.ndjson" \
    --target "$URL" --rate inf -q --save-result "$G/sh.json" --requests-out "$G/sh.ndjson"
check "shared: every step succeeded, b read a's file, the main agent both" "python3 -c \"
import json; l=[json.loads(x) for x in open('$G/sh.ndjson')]
t={x['cmd']: x for x in l if x['kind']=='tool'}
assert len(t)==4 and all(x['exit_code']==0 for x in t.values()), t
assert t['cat a.txt']['output_bytes']==2 and t['cat a.txt b.txt']['output_bytes']==4, t\""
check "shared: the two writers overlapped (parallel branches, one directory)" "python3 -c \"
import json; l=[json.loads(x) for x in open('$G/sh.ndjson')]
a=[x for x in l if x.get('cmd','').startswith('echo a')][0]
b=[x for x in l if x.get('cmd','').startswith('echo b')][0]
assert a['start_s'] < b['end_s'] and b['start_s'] < a['end_s'], (a, b)\""
check "shared: the work directory is gone" "[ -z \"\$(ls -d '$G'/atr-work-* 2>/dev/null)\" ]"

# In the default jail (root: namespaces, per-step cgroups) the same holds:
# the sub-agents' sandboxes see one work directory.
if [ "$(id -u)" = 0 ]; then
    ok "shared in the sandbox" "$ATR" replay agent -q --workdir "$G" "$DATA/agent/dag-shared.ndjson" \
        --target "$URL" --rate inf --requests-out "$G/sb.ndjson"
    check "shared in the sandbox: every step succeeded" "python3 -c \"
import json; l=[json.loads(x) for x in open('$G/sb.ndjson')]
t=[x for x in l if x['kind']=='tool']; assert len(t)==4 and all(x['exit_code']==0 for x in t), t\""
else
    echo "skipped: replay agent DAG in the sandbox needs root" >&2
fi

# --image: one container per session, its sub-agents' steps all in it.
if [ "$(id -u)" != 0 ] || ! command -v podman >/dev/null 2>&1 || [ ! -x /bin/busybox ]; then
    echo "skipped: replay agent DAG --image needs root, podman and /bin/busybox" >&2
else
    GID=atragentdag$(echo "$T" | cksum | cut -d' ' -f1)
    mkdir -p "$G/rf/bin" "$G/rf/testbed"
    cp /bin/busybox "$G/rf/bin/"
    for l in sh cat echo sleep; do ln -s busybox "$G/rf/bin/$l"; done
    tar -C "$G/rf" -cf "$G/rf.tar" . && podman import --change WORKDIR=/testbed "$G/rf.tar" "$GID" >/dev/null 2>&1
    sed 's|"tool":"bash","command"|"tool":"bash","cwd":"/testbed","command"|g' \
        "$DATA/agent/dag-shared.ndjson" >"$G/img.ndjson"
    ok "image: a DAG's sub-agents in one container" "$ATR" replay agent -q --workdir "$G" \
        --image "$GID" "$G/img.ndjson" --target "$URL" --requests-out "$G/img-q.ndjson"
    check "image: b read a's file in /testbed, the main agent both" "python3 -c \"
import json; l=[json.loads(x) for x in open('$G/img-q.ndjson')]; t={x['cmd']: x for x in l if x['kind']=='tool'}
assert len(t)==4 and all(x['exit_code']==0 for x in t.values()), t
assert t['cat a.txt b.txt']['output_bytes']==4, t\""
    check "image: no container left" "[ -z \"\$(podman ps -a --format '{{.Image}}' | grep -F 'localhost/$GID:latest')\" ]"
    podman rmi -f "$GID" >/dev/null 2>&1
fi

# --- Ctrl-C and SIGTERM while both sub-agents run a tool step. ---
printf '%s\n' '{"format":"atr-trace/1.1","trace_id":"t/dagint","steps":[{"kind":"llm","input_tokens":8,"output_tokens":2},{"kind":"llm","input_tokens":8,"output_tokens":2,"parents":[0],"agent":"a"},{"kind":"llm","input_tokens":8,"output_tokens":2,"parents":[0],"agent":"b"},{"kind":"tool","tool":"bash","command":"echo x > x.txt && sleep 59.91","parents":[1],"agent":"a"},{"kind":"tool","tool":"bash","command":"sleep 59.92","parents":[2],"agent":"b"},{"kind":"llm","input_tokens":8,"output_tokens":2,"parents":[3,4]}]}' >"$G/int.ndjson"
for sig in INT TERM; do
    rm -f "$G/int-$sig.json" "$G/int-$sig.ndjson"
    setsid $RG "$G/int.ndjson" --target "$URL" -q --save-result "$G/int-$sig.json" \
        --requests-out "$G/int-$sig.ndjson" >/dev/null 2>"$G/int-$sig.err" &
    pid=$!
    wait_for 20 "sh '$DATA/replay/leftovers.sh' $pid | grep -q 'sleep 59.91' && sh '$DATA/replay/leftovers.sh' $pid | grep -q 'sleep 59.92'"
    kill -"$sig" "$pid"
    wait "$pid"
    st=$?
    CURRENT="dag SIG$sig: exit status 130"; [ "$st" -eq 130 ] && pass || fail "exit status $st: $(cat "$G/int-$sig.err")"
    check "dag SIG$sig: the result whole and marked incomplete, the join turn not sent" "python3 -c \"
import json; r=json.load(open('$G/int-$sig.json'))['atr']
assert r['incomplete'] is True and r['agent']['turns_ok']==3, r['agent']\""
    check "dag SIG$sig: the request lines whole, no line for the killed steps" "python3 -c \"
import json; l=[json.loads(x) for x in open('$G/int-$sig.ndjson')]
assert sorted(x['turn'] for x in l if x['kind']=='llm')==[0,1,2], l
assert not [x for x in l if x['kind']=='tool'], l\""
    check "dag SIG$sig: one error line, interrupted" "grep -q 'interrupted' '$G/int-$sig.err' && [ \"\$(wc -l <'$G/int-$sig.err')\" -eq 1 ]"
    check "dag SIG$sig: nothing left (processes, cgroups, the shared work directory)" \
        "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $pid '$G')\" ]"
    check "dag SIG$sig: no temporary beside the outputs" "! ls '$G'/int-$sig.*.tmp.* >/dev/null 2>&1"
done

# SIGKILL while both run: the guard removes the steps, their groups and
# the shared work directory (polled with a deadline: it acts after atr died).
setsid $RG "$G/int.ndjson" --target "$URL" -q >/dev/null 2>&1 &
pid=$!
wait_for 20 "sh '$DATA/replay/leftovers.sh' $pid | grep -q 'sleep 59.91' && sh '$DATA/replay/leftovers.sh' $pid | grep -q 'sleep 59.92'"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
CURRENT="dag SIGKILL: nothing left"
if wait_for 30 "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $pid '$G')\" ]"; then pass
else fail "left: $(sh "$DATA/replay/leftovers.sh" $pid "$G" | head -3)"; fi

# --- Several targets, routed by --policy. ---
gd_serve r1 --profile h100/llama-3.1-8b
R1=$PORT
gd_serve r2 --profile h100/llama-3.1-8b
R2=$PORT
ok "two targets under prefix-route" $RG "$DATA/agent/two.ndjson" "$DATA/agent/dag.ndjson" \
    --target "http://127.0.0.1:$R1,http://127.0.0.1:$R2" --policy prefix-route --rate inf -q \
    --save-result "$G/two.json" --requests-out "$G/two.ndjson"
check "two targets: every turn answered, both replicas used, the policy's figures saved" "python3 -c \"
import json; r=json.load(open('$G/two.json'))
assert r['completed']==9 and r['atr']['policy']=='prefix-route', r['atr']
assert r['atr']['policy_stats']['requests']==9, r['atr']['policy_stats']
l=[json.loads(x) for x in open('$G/two.ndjson')]
reps={x['replica'] for x in l if x['kind']=='llm'}
assert reps=={0, 1}, reps\""
check "two targets: the split still adds up" "python3 -c \"
import json; r=json.load(open('$G/two.json'))['atr']['agent']['per_session']
for s in r: assert abs(s['completion_s']-s['model_s']-s['tool_s']-s['queue_s']-s['other_s']) <= 1e-3, s\""
fails "two targets without --policy" 2 "need --policy" $RG "$DATA/agent/two.ndjson" \
    --target "http://127.0.0.1:$R1,http://127.0.0.1:$R2"
fails "two policies" 2 "one policy" $RG "$DATA/agent/two.ndjson" --target "$URL" \
    --policy naive,prefix-cache
fails "an unknown policy" 2 "unknown policy 'fastest'" $RG "$DATA/agent/two.ndjson" \
    --target "$URL" --policy fastest
fails "--policy-options without --policy" 2 "wants --policy" $RG "$DATA/agent/two.ndjson" \
    --target "$URL" --policy-options budget=5

# --- --session-hint: atr sim serve --kv-retain pins the turns with one to come. ---
gd_serve kv --profile h100/llama-3.1-8b --kv-retain 30
KV=$PORT
ok "session hint to a retaining server" $RG "$DATA/agent/two.ndjson" --target "http://127.0.0.1:$KV" \
    --rate inf -q --session-hint --warmup 0 --save-result "$G/kv.json"
check "session hint: the server pinned the 3 turns that have a turn to come" "python3 -c \"
import re, urllib.request
m=urllib.request.urlopen('http://127.0.0.1:$KV/metrics').read().decode()
v=re.search(r'^atr_sim_kv_pins_total(?:\\{[^}]*\\})? ([0-9.e+]+)', m, re.M)
assert v and int(float(v.group(1)))==3, m[-800:]\""
check "session hint: said in the result" "python3 -c \"
import json; assert json.load(open('$G/kv.json'))['atr']['session_hint'] is True\""
ok "sim: target with --kv-retain" $RG "$DATA/agent/two.ndjson" --target sim:h100/llama-3.1-8b \
    --kv-retain 30 --rate inf --save-result "$G/simkv.json"
check "sim --kv-retain: hints sent, the in-process engine pinned the 3 turns with one to come" "python3 -c \"
import json; r=json.load(open('$G/simkv.json'))['atr']
assert r['session_hint'] is True and r['engine']['kv_pins']==3 and r['engine']['profile']=='h100/llama-3.1-8b', r['engine']\" && grep -q '^engine (sim, in atr): .*3 pinned requests' '$T/out'"
fails "--kv-retain on a server target" 2 "--kv-retain is for a sim: target" $RG \
    "$DATA/agent/two.ndjson" --target "$URL" --kv-retain 5

# --- --goodput session:MS on the agent's completion, tools included. ---
ok "goodput on session completion" $RG "$DATA/agent/two.ndjson" --target "$URL" --rate inf \
    --goodput session:100000 --save-result "$G/gp.json"
check "goodput: both sessions good under a loose SLO, in the block" "python3 -c \"
import json; a=json.load(open('$G/gp.json'))['atr']['agent']
assert a['sessions_good']==2 and a['slo_session_ms']==100000 and a['session_goodput'] > 0, a\" && grep -q '^Good sessions (<= 100000 ms, tools in): *2 of 2' '$T/out'"
ok "goodput: an SLO below the 0.3 s tool step" $RG "$DATA/agent/two.ndjson" --target "$URL" \
    --rate inf -q --goodput session:250 --save-result "$G/gp2.json"
check "goodput: the session with the sleep misses it" "python3 -c \"
import json; a=json.load(open('$G/gp2.json'))['atr']['agent']
slow=[s for s in a['per_session'] if s['completion_s'] > 0.25]
assert slow and a['sessions_good']==2-len(slow), a\""

for p in $GD_PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
