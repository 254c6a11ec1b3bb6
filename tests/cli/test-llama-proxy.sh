# test-llama-proxy.sh - `atr proxy` in front of a real engine, llama.cpp's
# llama-server (scripts/llama.sh), with the tiny model atr generates: curl
# streams through the proxy byte for byte as llama-server wrote them
# (temperature 0; only ids, times and timings differ), the journal with
# the server's token counts and no prompt text, /metrics counting what the
# journal holds, atr replay llm through the proxy, and two policies as the
# proxy applies them: a max-tokens cap and prefix-route over two servers.
# Every server is on a free port and stopped by its PID. Skipped, with the
# reason, where llama-server is not built, except the first check: a small
# upstream that closes idle connections as llama-server does.

LP=$T/llama-proxy
mkdir -p "$LP"

# Without the engine too: an upstream that, as llama-server, closes each
# connection a little after its streamed answer while saying Keep-Alive
# (closing.py). A request that took that idle connection before the close
# was read got a 502; the proxy now sends it once more on a new one.
cat >"$LP/closing.py" <<'PY'
import socket, sys, threading, time
def serve(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return c.close()
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    while len(body) < n:
        body += c.recv(65536)
    ev = [b'{"choices":[{"index":0,"text":" the"}]}',
          b'{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}', b"[DONE]"]
    out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n"
    for e in ev:
        e = b"data: " + e + b"\n\n"
        out += b"%x\r\n%s\r\n" % (len(e), e)
    c.sendall(out + b"0\r\n\r\n")
    time.sleep(0.05)             # what arrives meanwhile is never answered
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print("closing: listening on http://127.0.0.1:%d" % s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$LP/closing.py" >"$LP/closing.out" 2>&1 &
lp_cl=$!
wait_for 30 "grep -q listening '$LP/closing.out' || ! kill -0 $lp_cl"
lp_clu=$(sed -n 's|^closing: listening on ||p' "$LP/closing.out")
"$ATR" proxy --port 0 --upstream "$lp_clu" >"$LP/clp.out" 2>"$LP/clp.err" &
lp_clp=$!
wait_for 30 "grep -q '^atr proxy: listening on ' '$LP/clp.out' || ! kill -0 $lp_clp"
lp_clpu=$(sed -n 's|^atr proxy: listening on ||p' "$LP/clp.out")
lp_i=0 lp_codes=
while [ $lp_i -lt 10 ]; do
    lp_codes="$lp_codes $(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
        -d '{"model":"m","prompt":"x","max_tokens":1,"stream":true}' "$lp_clpu/v1/completions")"
    lp_i=$((lp_i + 1))
done
check "llama-proxy: an upstream closing idle connections: 10 requests one after the other all get 200" \
    "[ \"\$(echo $lp_codes | tr ' ' '\n' | sort | uniq -c | tr -s ' ')\" = ' 10 200' ]"
kill "$lp_clp" "$lp_cl"; wait "$lp_clp" "$lp_cl" 2>/dev/null

LLAMA=$(llama_bin) || { echo "skip: test-llama-proxy: $LLAMA"; return 0; }

# lp_proxy NAME ARGS... : starts atr proxy on a free port, polls its stdout
# for the listening line (30 s); sets LP_PID and LP_URL (empty: it failed).
lp_proxy() {
    lp_n=$1; shift
    "$ATR" proxy --port 0 "$@" >"$LP/$lp_n.out" 2>"$LP/$lp_n.err" &
    LP_PID=$!
    wait_for 30 "grep -q '^atr proxy: listening on ' '$LP/$lp_n.out' || ! kill -0 $LP_PID"
    LP_URL=$(sed -n 's|^atr proxy: listening on \(http://127.0.0.1:[0-9]*\)$|\1|p' "$LP/$lp_n.out")
    CURRENT="llama-proxy: $lp_n listens"
    if [ -n "$LP_URL" ]; then pass; else fail "no listening line: $(head -c 300 "$LP/$lp_n.err")"; fi
}

lp_stop() {
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# lp_sse NAME URL PATH BODY : a curl stream into $LP/NAME.sse and the same
# bytes with what differs between two answers replaced into NAME.norm: the
# id, the creation second and llama-server's timings object.
lp_sse() {
    curl -sN --max-time 30 -H 'Content-Type: application/json' -d "$4" "$2$3" >"$LP/$1.sse" 2>/dev/null
    sed -e 's/"created":[0-9]*/"created":N/' -e 's/"id":"[a-z]*-[A-Za-z0-9]*"/"id":"N"/' \
        -e 's/,"timings":{[^}]*}//' "$LP/$1.sse" >"$LP/$1.norm"
}

cat >"$LP/q.py" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
ndjson = sys.argv[1].endswith(".ndjson")
d = None if ndjson else json.loads(text)
lines = [json.loads(l) for l in text.splitlines() if l.strip()] if ndjson else []
for e in sys.argv[2:]:
    print(eval(e))
PY
Q="python3 $LP/q.py"

ok "llama-proxy: atr writes its model" "$ATR" gen --kind gguf --preset tiny --ctx 65536 -o "$LP/tiny.gguf"
# One slot: every request finds the previous one's prompt in it, so the
# direct and the proxied request see the same cache.
llama_start px "$LP/tiny.gguf" -np 1 -t 1 -c 8192 || return 0
lp_proxy proxy --upstream "$LLAMA_URL" --record "$LP/j.ndjson"
[ -n "$LP_URL" ] || { kill "$LLAMA_PID"; return 0; }

# The same requests direct and through the proxy, after one that fills the
# slot: chat asking for usage, completions not asking (the proxy asks for
# it upstream; llama-server puts usage in the last chunk with choices, which
# the client gets as llama-server wrote it).
LP_CHAT='{"model":"m","messages":[{"role":"user","content":"the quokka of the river and the hill"}],"max_tokens":12,"temperature":0,"seed":1,"stream":true,"stream_options":{"include_usage":true}}'
LP_CMPL='{"model":"m","prompt":" the quokka of the river and the hill","max_tokens":12,"temperature":0,"seed":1,"stream":true}'
for lp_k in chat cmpl; do
    if [ $lp_k = chat ]; then lp_p=/v1/chat/completions lp_b=$LP_CHAT; else lp_p=/v1/completions lp_b=$LP_CMPL; fi
    lp_sse $lp_k-warm "$LLAMA_URL" $lp_p "$lp_b"
    lp_sse $lp_k-direct "$LLAMA_URL" $lp_p "$lp_b"
    lp_sse $lp_k-proxy "$LP_URL" $lp_p "$lp_b"
    check "llama-proxy: $lp_k stream: 12 tokens, usage and [DONE] direct" \
        "grep -q '\"completion_tokens\":12' '$LP/$lp_k-direct.sse' && [ \"\$(tail -n 2 '$LP/$lp_k-direct.sse')\" = 'data: [DONE]' ]"
    CURRENT="llama-proxy: $lp_k stream: the proxy passes llama-server's bytes unchanged"
    if cmp -s "$LP/$lp_k-direct.norm" "$LP/$lp_k-proxy.norm"; then pass; else
        fail "$(diff "$LP/$lp_k-direct.norm" "$LP/$lp_k-proxy.norm" | head -c 600)"; fi
done

# The journal: one line per proxied request, the server's counts (the
# direct stream's usage), no prompt text.
lp_usage() {  # the prompt_tokens and cached_tokens of a stream's usage
    sed -n 's/.*"prompt_tokens":\([0-9]*\).*"cached_tokens":\([0-9]*\).*/\1 \2/p' "$LP/$1.sse" | tail -n 1
}
check "llama-proxy: the journal has the two requests with the server's counts" \
    "[ \"\$($Q '$LP/j.ndjson' '\" \".join(\"%s %s %s %s\" % (l[\"meta\"][\"api\"], l[\"steps\"][0][\"input_tokens\"], l[\"steps\"][0][\"cached_tokens\"], l[\"steps\"][0][\"output_tokens\"]) for l in lines)')\" = \"chat $(lp_usage chat-direct) 12 completions $(lp_usage cmpl-direct) 12\" ]"
check "llama-proxy: the journal validates" "'$ATR' validate '$LP/j.ndjson'"
check "llama-proxy: the journal holds no prompt text" "! grep -q quokka '$LP/j.ndjson'"

# /metrics counts what the journal holds.
curl -s "$LP_URL/metrics" >"$LP/metrics.txt"
lp_metric() { sed -n "s/^$1 //p" "$LP/metrics.txt"; }
check "llama-proxy: /metrics counts the requests and the server's tokens" \
    "[ '$(lp_metric atr_proxy_requests_total) $(lp_metric atr_proxy_prompt_tokens_total) $(lp_metric atr_proxy_generation_tokens_total)' = \"2 \$($Q '$LP/j.ndjson' 'sum(l[\"steps\"][0][\"input_tokens\"] for l in lines)') 24\" ]"
check "llama-proxy: /metrics cached tokens per upstream are the journal's" \
    "grep -qx 'atr_proxy_upstream_cached_tokens_total{upstream=\"$LLAMA_URL\"} '\"\$($Q '$LP/j.ndjson' 'sum(l[\"steps\"][0][\"cached_tokens\"] for l in lines)')\" '$LP/metrics.txt'"

# atr replay llm through the proxy: 8 requests, 4 in flight on one slot,
# each with exactly its recorded 16 tokens (ignore_eos passes through), and
# a journal line each with the server's prompt count.
"$ATR" gen --kind requests --traces 8 --input-tokens 120 --output-tokens 16 --rate inf \
    -o "$LP/req.ndjson" 2>/dev/null
ok "llama-proxy: replay llm through the proxy" \
    "$ATR" replay llm "$LP/req.ndjson" --target "$LP_URL" --max-concurrency 4 --warmup 0 -q \
    --save-result "$LP/r.json" --requests-out "$LP/r.ndjson"
check "llama-proxy: replay through the proxy: all 8 with their 16 tokens" \
    "[ \"\$($Q '$LP/r.ndjson' 'len(lines), sorted(set(r[\"output_tokens\"] for r in lines)), sorted(set(r[\"prompt_tokens\"] - r[\"intended_prompt_tokens\"] for r in lines))')\" = '(8, [16], [1])' ]"
check "llama-proxy: replay through the proxy: journalled with the server's counts" \
    "[ \"\$($Q '$LP/j.ndjson' 'len(lines), sorted(set((l[\"steps\"][0][\"input_tokens\"], l[\"steps\"][0][\"output_tokens\"]) for l in lines[2:]))')\" = '(10, [(121, 16)])' ]"

# One request after the other through the proxy: llama-server closes each
# stream's connection after the answer, and a request that took that idle
# connection before its close was read got a 502 (one in ten); now it is
# sent again on a new connection, counted once.
"$ATR" gen --kind requests --traces 60 --input-tokens 200 --output-tokens 16 --seed 3 \
    -o "$LP/seq.ndjson" 2>/dev/null
ok "llama-proxy: 60 requests one at a time through the proxy" \
    "$ATR" replay llm "$LP/seq.ndjson" --target "$LP_URL" --max-concurrency 1 --rate inf -q \
    --save-result "$LP/seq.json"
check "llama-proxy: one at a time, none fails on a closed idle connection" \
    "[ \"\$($Q '$LP/seq.json' 'd[\"completed\"], d[\"failed\"]')\" = '(60, 0)' ]"
curl -s "$LP_URL/metrics" >"$LP/metrics2.txt"
check "llama-proxy: a resend is one upstream request, no failure" \
    "grep -qx 'atr_proxy_upstream_requests_total{upstream=\"$LLAMA_URL\"} 71' '$LP/metrics2.txt' && grep -qx 'atr_proxy_upstream_failures_total{upstream=\"$LLAMA_URL\"} 0' '$LP/metrics2.txt'"
lp_stop "$LP_PID"

# A policy's cap: max-tokens predicts 20 (no history: initial, clamped),
# the request asked for 64: the server writes 20 and the journal says so.
lp_proxy cap --upstream "$LLAMA_URL" --record "$LP/cap.ndjson" --policy max-tokens \
    --policy-options initial=20,min=16,max=20
lp_sse cap "$LP_URL" /v1/completions '{"model":"m","prompt":" the river","max_tokens":64,"ignore_eos":true,"temperature":0,"stream":true}'
check "llama-proxy: max-tokens: the server got the cap" "grep -q '\"completion_tokens\":20' '$LP/cap.sse'"
check "llama-proxy: max-tokens: the journal has the cap" \
    "[ \"\$($Q '$LP/cap.ndjson' 'lines[0][\"meta\"][\"max_tokens_cap\"], lines[0][\"steps\"][0][\"output_tokens\"]')\" = '(20, 20)' ]"
lp_stop "$LP_PID"

# The official OpenAI Node SDK (tests/node/openai-client.mjs: chat and
# completions, streams with and without include_usage, the model list)
# directly and through the proxy: every call succeeds both ways, with the
# usage the server gives (llama-server samples at its default temperature
# here, so the texts differ between runs and are not compared).
cat >"$LP/sdk-facts.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert 0 < d['chat']['usage']['completion_tokens'] <= 8, d['chat']
assert 0 < d['completion']['usage']['completion_tokens'] <= 8, d['completion']
assert d['chat_stream']['usage_chunks'] == 0, d['chat_stream']
s = d['chat_stream_usage']
assert s['usage_chunks'] == 1 and s['chunks'][-1]['choices'] == [], s
assert s['chunks'][-1]['usage']['prompt_tokens'] == d['chat']['usage']['prompt_tokens'], s
# llama-server puts usage in a completions stream's last chunk with choices
assert d['completion_stream']['usage_chunks'] == 1, d['completion_stream']
assert all(x[k]['one_id'] for x in [d] for k in ('chat_stream', 'chat_stream_usage', 'completion_stream'))
assert [m['id'].rsplit('/', 1)[-1] for m in d['models']['data']] == ['tiny.gguf'], d['models']
PY
if command -v node >/dev/null 2>&1 && [ -f "$ROOT/tests/node/node_modules/openai/package.json" ]; then
    lp_proxy sdk --upstream "$LLAMA_URL"
    for lp_k in direct proxy; do
        if [ $lp_k = direct ]; then lp_u=$LLAMA_URL; else lp_u=$LP_URL; fi
        ok "llama-proxy: openai sdk $lp_k" timeout 120 node "$ROOT/tests/node/openai-client.mjs" "$lp_u" "$LP/sdk-$lp_k.json"
        ok "llama-proxy: openai sdk $lp_k: answers and usage as llama-server gives them" \
            python3 "$LP/sdk-facts.py" "$LP/sdk-$lp_k.json"
    done
    lp_stop "$LP_PID"
else
    echo "skip: test-llama-proxy: the OpenAI SDK part (no node or no tests/node/node_modules; test-proxy-clients.sh says which)"
fi
kill "$LLAMA_PID"; wait "$LLAMA_PID" 2>/dev/null

# prefix-route over two servers: session A's two turns, then B's. Each
# continuation goes where its prefix is and hits it there (round robin
# would send A's second turn to the other server); B starts on the server
# with the smaller tree.
llama_start r0 "$LP/tiny.gguf" -np 1 -t 1 -c 4096 || return 0
lp_r0=$LLAMA_PID lp_u0=$LLAMA_URL
llama_start r1 "$LP/tiny.gguf" -np 1 -t 1 -c 4096 || { kill "$lp_r0"; return 0; }
lp_r1=$LLAMA_PID lp_u1=$LLAMA_URL
lp_proxy route --upstream "$lp_u0" --upstream "$lp_u1" --record "$LP/route.ndjson" --policy prefix-route
lp_words() {  # N words of atr's kind, from seed S
    python3 -c "import random; r = random.Random($2); w = 'the of and to in is for on that with as it be by at this'.split(); print(' '.join(r.choice(w) for _ in range($1)))"
}
lp_a=$(lp_words 200 1) lp_b=$(lp_words 200 2)
for lp_p in "$lp_a" "$lp_a $(lp_words 40 3)" "$lp_b" "$lp_b $(lp_words 40 4)"; do
    curl -s --max-time 30 -H 'Content-Type: application/json' "$LP_URL/v1/completions" \
        -d "{\"model\":\"m\",\"prompt\":\" $lp_p\",\"max_tokens\":4,\"temperature\":0}" >/dev/null
done
check "llama-proxy: prefix-route: each session stays on its server" \
    "[ \"\$($Q '$LP/route.ndjson' '[l[\"meta\"][\"upstream\"] for l in lines]')\" = '[0, 0, 1, 1]' ]"
check "llama-proxy: prefix-route: continuations hit their prefix" \
    "[ \"\$($Q '$LP/route.ndjson' '[l[\"steps\"][0][\"cached_tokens\"] >= 200 for l in lines]')\" = '[False, True, False, True]' ]"
lp_stop "$LP_PID"
kill "$lp_r0" "$lp_r1"; wait "$lp_r0" "$lp_r1" 2>/dev/null

# The server killed (-9) in the middle of a stream through the proxy: the
# client (atr replay llm) gets the proxy's error event and ends at once
# (exit 1: its one request failed), the journal says "upstream cut".
llama_start cut "$LP/tiny.gguf" -np 1 -t 1 -c 16384 || return 0
lp_proxy cut --upstream "$LLAMA_URL" --record "$LP/cut.ndjson"
"$ATR" gen --kind requests --traces 1 --input-tokens 50 --output-tokens 16000 -o "$LP/long.ndjson" 2>/dev/null
"$ATR" replay llm "$LP/long.ndjson" --target "$LP_URL" --warmup 0 -q \
    --requests-out "$LP/cut-r.ndjson" >"$LP/cut-r.out" 2>"$LP/cut-r.err" &
lp_rp=$!
wait_for 30 "curl -s '$LLAMA_URL/slots' | grep -q '\"n_decoded\":[1-9][0-9][0-9]' || ! kill -0 $lp_rp"
kill -9 "$LLAMA_PID"; wait "$LLAMA_PID" 2>/dev/null
wait "$lp_rp"; lp_rc=$?
check "llama-proxy: server killed mid-stream: the client fails at once, exit 1" "[ $lp_rc = 1 ]"
check "llama-proxy: server killed mid-stream: the client has the proxy's error event" \
    "[ \"\$($Q '$LP/cut-r.ndjson' 'lines[0][\"error\"], lines[0][\"error_detail\"], len(lines[0][\"itl_ms\"]) > 50')\" = \"('error event', 'upstream closed the stream', True)\" ]"
wait_for 10 "[ -s '$LP/cut.ndjson' ]"
check "llama-proxy: server killed mid-stream: the journal says upstream cut" \
    "[ \"\$($Q '$LP/cut.ndjson' 'lines[0][\"meta\"][\"error\"]')\" = 'upstream cut' ]"
lp_stop "$LP_PID"
