# test-proxy-clients.sh - real clients through atr proxy: the official OpenAI
# Node SDK (tests/node/openai-client.mjs) and curl get the same answers from
# `atr sim serve` directly and through `atr proxy --upstream` in front of it:
# chat and completions, streaming and not, the model list. A stream whose
# client did not ask for include_usage has no usage chunk through the proxy
# either (the proxy asks upstream for one and strips it). The Node part needs
# tests/node/node_modules (`make check` runs `npm ci` there via
# scripts/deps.sh); without it, or without `atr proxy`, a check fails: this
# test never passes by skipping.
PX=$T/proxy-clients
mkdir -p "$PX"
PX_UP_PID='' PX_UP_URL='' PX_PR_PID='' PX_PR_URL=''

# px_start NAME PREFIX CMD...: runs CMD (which prints "PREFIX: listening on
# http://127.0.0.1:PORT" once listening) in the background and polls its
# stdout for that line (30 s deadline); records a check, and sets PX_PID and
# PX_URL (empty when it never listened).
px_start() {
    px_name=$1 px_prefix=$2; shift 2
    : >"$PX/$px_name.out"
    "$@" >"$PX/$px_name.out" 2>"$PX/$px_name.err" &
    PX_PID=$!
    PX_PORT=
    px_i=0
    while [ "$px_i" -lt 300 ]; do
        PX_PORT=$(sed -n "s|^$px_prefix: listening on http://127.0.0.1:\\([0-9][0-9]*\\)\$|\\1|p" "$PX/$px_name.out")
        [ -n "$PX_PORT" ] && break
        kill -0 "$PX_PID" 2>/dev/null || break
        sleep 0.1
        px_i=$((px_i + 1))
    done
    PX_URL=
    [ -n "$PX_PORT" ] && PX_URL=http://127.0.0.1:$PX_PORT
    CURRENT="proxy-clients: $px_name listens"
    if [ -n "$PX_PORT" ]; then pass; else
        fail "no listening line: $(head -c 300 "$PX/$px_name.err")"; fi
    CURRENT="proxy-clients: $px_name prints exactly its listening line"
    if [ -z "$PX_PORT" ] || [ "$(wc -l <"$PX/$px_name.out")" -eq 1 ]; then pass; else
        fail "stdout: $(head -c 300 "$PX/$px_name.out")"; fi
}

# px_stop PID: SIGTERM, then SIGKILL if it is still there after 10 s; waits
# for it. Prints nothing; returns its exit status.
px_stop() {
    [ -n "$1" ] || return 0
    kill -TERM "$1" 2>/dev/null
    px_i=0
    while [ "$px_i" -lt 100 ] && kill -0 "$1" 2>/dev/null; do sleep 0.1; px_i=$((px_i + 1)); done
    kill -0 "$1" 2>/dev/null && kill -KILL "$1" 2>/dev/null
    wait "$1"
}

# The SSE normaliser: sse-norm.py FILE prints one line per event of a
# `curl -sN` stream: "[DONE]", or the chunk's JSON (keys in the order
# received) with `created` dropped and the number of `id` replaced by N.
# Fails on framing that is not `data: ...` events each ended by a blank line.
cat >"$PX/sse-norm.py" <<'PY'
import json, re, sys
text = open(sys.argv[1], encoding='utf-8').read()
assert text.endswith('\n\n'), 'events end with a blank line: %r' % text[-80:]
for e in text[:-2].split('\n\n'):
    assert e.startswith('data: ') and '\n' not in e, 'not one data line: %r' % e[:120]
    d = e[6:]
    if d == '[DONE]':
        print(d)
        continue
    c = json.loads(d)
    c.pop('created', None)
    if isinstance(c.get('id'), str):
        c['id'] = re.sub(r'[0-9]+$', 'N', c['id'])
    print(json.dumps(c, separators=(',', ':')))
PY
# px_sse NAME URL PATH BODY: streams with curl into $PX/NAME.sse, writes the
# normalised events to $PX/NAME.norm and "STATUS CONTENT_TYPE" to $PX/NAME.st.
px_sse() {
    curl -sN --max-time 20 -o "$PX/$1.sse" -w '%{http_code} %{content_type}' \
        -H 'Content-Type: application/json' -d "$4" "$2$3" >"$PX/$1.st" 2>/dev/null
    python3 "$PX/sse-norm.py" "$PX/$1.sse" >"$PX/$1.norm" 2>"$PX/$1.norm.err"
}
# The facts every run of openai-client.mjs must show (sim serve's answers to
# its fixed requests, max_tokens 8): usage only where asked for.
cat >"$PX/facts.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['chat']['usage']['completion_tokens'] == 8, d['chat']
assert d['completion']['usage']['completion_tokens'] == 8, d['completion']
for k, n, u in (('chat_stream', 9, False), ('chat_stream_usage', 10, True),
                ('completion_stream', 8, False)):
    s = d[k]
    assert s['chunk_count'] == n and s['usage_chunk'] is u and s['one_id'], (k, s['chunk_count'], s['usage_chunk'])
    assert s['usage_chunks'] == (1 if u else 0), k
    if u:
        assert s['chunks'][-1]['choices'] == [] and s['chunks'][-1]['usage']['completion_tokens'] == 8, k
assert [m['id'] for m in d['models']['data']] == ['atr-sim'], d['models']
PY

px_start upstream "atr sim serve" "$ATR" sim serve --port 0 --ttft 0 --itl 0
PX_UP_PID=$PX_PID PX_UP_URL=$PX_URL

if "$ATR" proxy --help >/dev/null 2>&1; then
    if [ -n "$PX_UP_URL" ]; then
        px_start proxy "atr proxy" "$ATR" proxy --upstream "$PX_UP_URL" --port 0
        PX_PR_PID=$PX_PID PX_PR_URL=$PX_URL
    fi
else
    CURRENT="proxy-clients: atr proxy missing"
    fail "'$ATR proxy --help' fails: the proxy half of this test cannot run"
fi

# ---- the OpenAI Node SDK ----
PX_NODE_OK=
if ! command -v node >/dev/null 2>&1; then
    CURRENT="proxy-clients: node missing"
    fail "no node on PATH: the OpenAI SDK half of this test cannot run"
elif [ ! -f "$ROOT/tests/node/node_modules/openai/package.json" ]; then
    CURRENT="proxy-clients: tests/node/node_modules missing"
    fail "run 'npm ci' in $ROOT/tests/node (scripts/deps.sh does, under make check)"
else
    PX_NODE_OK=1
fi
if [ -n "$PX_NODE_OK" ] && [ -n "$PX_UP_URL" ]; then
    ok "proxy-clients: openai sdk direct" timeout 120 node "$ROOT/tests/node/openai-client.mjs" "$PX_UP_URL" "$PX/direct.json"
    check "proxy-clients: openai sdk direct: usage only where asked for" "python3 '$PX/facts.py' '$PX/direct.json'"
    if [ -n "$PX_PR_URL" ]; then
        ok "proxy-clients: openai sdk through proxy" timeout 120 node "$ROOT/tests/node/openai-client.mjs" "$PX_PR_URL" "$PX/proxy.json"
        check "proxy-clients: openai sdk through proxy: usage only where asked for" "python3 '$PX/facts.py' '$PX/proxy.json'"
        CURRENT="proxy-clients: openai sdk gets the same answers through the proxy"
        if diff -u "$PX/direct.json" "$PX/proxy.json" >"$PX/sdk.diff" 2>&1; then pass; else
            fail "direct vs proxy:
$(head -n 40 "$PX/sdk.diff")"; fi
    fi
fi

# ---- curl, raw SSE ----
PX_CMPL='{"model":"atr-sim","prompt":"Once upon a time","max_tokens":6,"stream":true}'
PX_CHAT='{"model":"atr-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}'
if [ -n "$PX_UP_URL" ]; then
    px_sse cmpl-direct "$PX_UP_URL" /v1/completions "$PX_CMPL"
    px_sse chat-direct "$PX_UP_URL" /v1/chat/completions "$PX_CHAT"
    check "proxy-clients: curl direct: 200 event streams" "[ \"\$(cat '$PX/cmpl-direct.st')\" = '200 text/event-stream' ] && [ \"\$(cat '$PX/chat-direct.st')\" = '200 text/event-stream' ] && [ ! -s '$PX/cmpl-direct.norm.err' ] && [ ! -s '$PX/chat-direct.norm.err' ]"
    check "proxy-clients: curl direct: 6 tokens, no usage, [DONE]" "[ \$(grep -c '\"text\"' '$PX/cmpl-direct.norm') = 6 ] && ! grep -q usage '$PX/cmpl-direct.norm' && [ \"\$(tail -n 1 '$PX/cmpl-direct.norm')\" = '[DONE]' ]"
    check "proxy-clients: curl direct chat: usage, [DONE]" "[ \$(grep -c '\"usage\"' '$PX/chat-direct.norm') = 1 ] && [ \"\$(tail -n 1 '$PX/chat-direct.norm')\" = '[DONE]' ]"
fi
if [ -n "$PX_PR_URL" ]; then
    for px_k in cmpl chat; do
        if [ "$px_k" = cmpl ]; then px_p=/v1/completions px_b=$PX_CMPL; else px_p=/v1/chat/completions px_b=$PX_CHAT; fi
        px_sse "$px_k-proxy" "$PX_PR_URL" "$px_p" "$px_b"
        check "proxy-clients: curl $px_k through proxy: same status and content type" "[ \"\$(cat '$PX/$px_k-proxy.st')\" = \"\$(cat '$PX/$px_k-direct.st')\" ]"
        CURRENT="proxy-clients: curl $px_k through proxy: same SSE events"
        if [ -s "$PX/$px_k-proxy.norm.err" ]; then
            fail "$(tail -n 1 "$PX/$px_k-proxy.norm.err") -- $(head -c 300 "$PX/$px_k-proxy.sse")"
        elif diff -u "$PX/$px_k-direct.norm" "$PX/$px_k-proxy.norm" >"$PX/$px_k.diff" 2>&1; then pass; else
            fail "direct vs proxy:
$(head -n 30 "$PX/$px_k.diff")"; fi
    done
    check "proxy-clients: curl through proxy: the usage chunk asked for upstream is stripped" "! grep -q usage '$PX/cmpl-proxy.sse'"
fi

# Stopped by their own PIDs (SIGTERM; SIGKILL after 10 s).
px_stop "$PX_PR_PID"
px_stop "$PX_UP_PID"
px_rc=$?
CURRENT="proxy-clients: sim serve exits 0 on SIGTERM"
if [ -z "$PX_UP_PID" ] || [ "$px_rc" -eq 0 ]; then pass; else fail "exit $px_rc"; fi
PX_PR_PID='' PX_UP_PID=''
