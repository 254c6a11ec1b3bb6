# test-llama-replay.sh - `atr replay llm` and `atr sweep` against a real
# engine: llama.cpp's llama-server (scripts/llama.sh) with a model atr
# generates itself (atr gen --kind gguf, tiny: 2 layers, 64-d). Both APIs
# streaming with usage, more requests in flight than the server has slots,
# forced output lengths, prompt lengths checked against the server's
# prompt_tokens, cached tokens from its usage, a prompt past the context
# (400 with the server's message), the server killed mid-stream, a short
# rate sweep. Each server is on a free port and stopped by its PID.
# Skipped, with the reason, where llama-server is not built.

LR=$T/llama-replay
mkdir -p "$LR"

# q.py FILE EXPR... : prints each Python expression's value, with d =
# FILE's JSON, or reqs = its lines for a .ndjson FILE.
cat >"$LR/q.py" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
ndjson = sys.argv[1].endswith(".ndjson")
d = None if ndjson else json.loads(text)
reqs = [json.loads(l) for l in text.splitlines() if l.strip()] if ndjson else []
for e in sys.argv[2:]:
    print(eval(e))
PY
Q="python3 $LR/q.py"

# The warning needs no engine: request lines whose server counts are off.
cat >"$LR/off.ndjson" <<'EOF'
{"id": 0, "success": true, "error": null, "scheduled_s": 0.0, "send_s": 0.0, "start_s": 0.0, "sent_s": 0.0, "end_s": 0.1, "ttft_ms": 10.0, "itl_ms": [1.0], "prompt_tokens": 201, "output_tokens": 2, "cached_tokens": 0, "intended_prompt_tokens": 200}
{"id": 1, "success": true, "error": null, "scheduled_s": 0.0, "send_s": 0.0, "start_s": 0.0, "sent_s": 0.0, "end_s": 0.1, "ttft_ms": 10.0, "itl_ms": [1.0], "prompt_tokens": 251, "output_tokens": 2, "cached_tokens": 0, "intended_prompt_tokens": 200}
EOF
ok "llama-replay: merged lines with prompts off the intended length" \
    "$ATR" replay llm --merge "$LR/off.ndjson" -q --save-result "$LR/off.json"
check "llama-replay: the prompt check warns past 1 %" \
    "grep -q '^atr: warning: 1 of 2 prompts differ from their intended length by more than 1% (up to 25.0%)' '$T/err'"
check "llama-replay: the prompt check is in the result" \
    "[ \"\$(python3 -c 'import json; print(json.load(open(\"$LR/off.json\"))[\"atr\"][\"prompt_tokens_check\"])')\" = \"{'requests': 2, 'template_tokens': 1, 'mismatch': 1, 'max_rel_error': 0.25}\" ]"

LLAMA=$(llama_bin) || { echo "skip: test-llama-replay: $LLAMA"; return 0; }

ok "llama-replay: atr writes its model" \
    "$ATR" gen --kind gguf --preset tiny --ctx 65536 -o "$LR/tiny.gguf"
# 2 slots of 8192 tokens.
llama_start rep "$LR/tiny.gguf" -np 2 -t 1 -c 16384 || return 0

"$ATR" gen --kind requests --traces 12 --input-tokens 200 --output-tokens 32 --rate inf \
    -o "$LR/req.ndjson" 2>/dev/null

# Completions, 6 in flight on 2 slots: all succeed, each with exactly its
# 32 tokens (ignore_eos), the prompts as long as atr built them (the one
# constant extra token is the BOS). The server starts a third request only
# when one of the first two ended: 10 of 12 first chunks come after the
# earliest end (queueing shows in TTFT; no timing is asserted). 9 are
# asked for: chunks of two connections read in one wake-up of a descheduled
# client may be stamped in either order.
ok "llama-replay: completions, 6 in flight on 2 slots" \
    "$ATR" replay llm "$LR/req.ndjson" --target "$LLAMA_URL" --max-concurrency 6 -q \
    --save-result "$LR/c.json" --requests-out "$LR/c.ndjson"
check "llama-replay: completions all succeed" \
    "[ \"\$($Q '$LR/c.json' 'd[\"completed\"], d[\"failed\"]')\" = '(12, 0)' ]"
check "llama-replay: completions have their recorded output length" \
    "[ \"\$($Q '$LR/c.ndjson' 'sorted(set(r[\"output_tokens\"] for r in reqs))')\" = '[32]' ]"
check "llama-replay: completions prompts are the intended length" \
    "[ \"\$($Q '$LR/c.json' 'd[\"atr\"][\"prompt_tokens_check\"]')\" = \"{'requests': 12, 'template_tokens': 1, 'mismatch': 0, 'max_rel_error': 0.0}\" ]"
check "llama-replay: per request, the server counted the intended tokens plus the BOS" \
    "[ \"\$($Q '$LR/c.ndjson' 'sorted(set((r[\"intended_prompt_tokens\"], r[\"prompt_tokens\"]) for r in reqs))')\" = '[(200, 201)]' ]"
check "llama-replay: requests past the 2 slots wait for one to end" \
    "[ \"\$($Q '$LR/c.ndjson' 'sum(r[\"start_s\"] + r[\"ttft_ms\"] / 1000 > min(q[\"end_s\"] for q in reqs) for r in reqs)')\" -ge 9 ]"

# One request after the other: llama-server closes the connection after
# each stream without saying so, and libcurl 7.88's resends on a closed
# reused connection, counted per handle across requests, made every sixth
# one fail ("Connection died, tried 5 times"): 4 to 6 of these 60.
"$ATR" gen --kind requests --traces 60 --input-tokens 100 --output-tokens 4 --seed 3 \
    -o "$LR/seq.ndjson" 2>/dev/null
ok "llama-replay: 60 requests one at a time" \
    "$ATR" replay llm "$LR/seq.ndjson" --target "$LLAMA_URL" --max-concurrency 1 --rate inf -q \
    --save-result "$LR/seq.json"
check "llama-replay: one at a time, none fails on a closed connection" \
    "[ \"\$($Q '$LR/seq.json' 'd[\"completed\"], d[\"failed\"]')\" = '(60, 0)' ]"

# Chat: the same through the chat template, whose tokens are the constant
# excess; output lengths forced the same way.
ok "llama-replay: chat, 6 in flight on 2 slots" \
    "$ATR" replay llm "$LR/req.ndjson" --api chat --target "$LLAMA_URL" --max-concurrency 6 -q \
    --save-result "$LR/h.json" --requests-out "$LR/h.ndjson"
check "llama-replay: chat all succeed, prompts the intended length past the template" \
    "[ \"\$($Q '$LR/h.json' 'd[\"completed\"], d[\"failed\"], d[\"atr\"][\"prompt_tokens_check\"][\"mismatch\"], d[\"atr\"][\"prompt_tokens_check\"][\"template_tokens\"] > 1')\" = '(12, 0, 0, True)' ]"
check "llama-replay: chat has the recorded output length" \
    "[ \"\$($Q '$LR/h.ndjson' 'sorted(set(r[\"output_tokens\"] for r in reqs))')\" = '[32]' ]"

# Cached tokens: 6 prompts sharing their first 160 tokens, one at a time:
# every one after the first finds the prefix (and the BOS) in its slot.
"$ATR" gen --kind requests --traces 6 --input-tokens 200 --output-tokens 8 --shared-prefix 160 \
    --rate 20 -o "$LR/shared.ndjson" 2>/dev/null
ok "llama-replay: a shared prefix, one request at a time" \
    "$ATR" replay llm "$LR/shared.ndjson" --target "$LLAMA_URL" --max-concurrency 1 \
    --save-result "$LR/s.json" --requests-out "$LR/s.ndjson"
cp "$T/out" "$LR/s.block"
check "llama-replay: the block has the server's cached tokens and hit rate" \
    "grep -Eq '^Cached prompt tokens: +8[0-9][0-9] ' '$LR/s.block' && grep -Eq '^Prefix cache hit rate \\(%\\): +6[0-9]\\.[0-9][0-9] ' '$LR/s.block'"
check "llama-replay: cached tokens read from the server's usage" \
    "[ \"\$($Q '$LR/s.ndjson' 'sorted(r[\"cached_tokens\"] >= 160 for r in reqs)')\" = '[False, True, True, True, True, True]' ]"
check "llama-replay: the result's cached tokens and hit rate are the requests'" \
    "[ \"\$($Q '$LR/s.json' 'd[\"atr\"][\"cached_tokens\"] == sum(r[\"cached_tokens\"] for r in [json.loads(l) for l in open(\"$LR/s.ndjson\")]) > 800, d[\"atr\"][\"prefix_cache_hit_rate\"] == d[\"atr\"][\"cached_tokens\"] / d[\"total_input_tokens\"]')\" = '(True, True)' ]"

# A prompt past a slot's 8192 tokens: the server answers 400, the request
# is an error with the server's own message, the others succeed.
"$ATR" gen --kind requests --traces 2 --input-tokens 100 --output-tokens 8 -o "$LR/small.ndjson" 2>/dev/null
"$ATR" gen --kind requests --traces 1 --input-tokens 9000 --output-tokens 8 --seed 2 \
    -o "$LR/big.ndjson" 2>/dev/null
ok "llama-replay: one prompt past the context" \
    "$ATR" replay llm "$LR/small.ndjson" "$LR/big.ndjson" --target "$LLAMA_URL" -q \
    --save-result "$LR/o.json" --requests-out "$LR/o.ndjson"
check "llama-replay: the overflow is one http 400" \
    "[ \"\$($Q '$LR/o.json' 'd[\"completed\"], d[\"failed\"], d[\"atr\"][\"failures_by_reason\"]')\" = \"(2, 1, {'http 400': 1})\" ]"
check "llama-replay: the overflow carries the server's message" \
    "$Q '$LR/o.ndjson' '[r.get(\"error_detail\") for r in reqs if not r[\"success\"]][0]' | grep -q '^request (9001 tokens) exceeds the available context size (8192 tokens)'"
fails "llama-replay: every prompt past the context fails the run with the message" 1 \
    '^atr: every request failed \(first: http 400: request \(9001 tokens\) exceeds the available context size \(8192 tokens\)' \
    "$ATR" replay llm "$LR/big.ndjson" --target "$LLAMA_URL" --warmup 0 -q

# A short rate sweep: synchronous, throughput and one rate between.
ok "llama-replay: sweep" \
    "$ATR" sweep --generate 12:100:16 --target "$LLAMA_URL" --rates 1 -q -o "$LR/sweep.json"
check "llama-replay: every sweep run completes" \
    "[ \"\$($Q '$LR/sweep.json' '[(r[\"kind\"], r[\"metrics\"][\"completed\"], r[\"metrics\"][\"failed\"]) for r in d[\"runs\"]]')\" = \"[('synchronous', 12, 0), ('throughput', 12, 0), ('rate', 12, 0)]\" ]"
kill "$LLAMA_PID"; wait "$LLAMA_PID" 2>/dev/null

# The server killed (-9) while it streams a long reply: the request is a
# "stream cut" with how far it got, the run ends (every request failed:
# exit 1) instead of waiting for the stall timeout.
llama_start kill "$LR/tiny.gguf" -np 1 -t 1 -c 16384 || return 0
"$ATR" gen --kind requests --traces 1 --input-tokens 50 --output-tokens 16000 -o "$LR/long.ndjson" 2>/dev/null
"$ATR" replay llm "$LR/long.ndjson" --target "$LLAMA_URL" --warmup 0 -q \
    --requests-out "$LR/k.ndjson" >"$LR/k.out" 2>"$LR/k.err" &
lr_pid=$!
wait_for 30 "curl -s '$LLAMA_URL/slots' | grep -q '\"n_decoded\":[1-9][0-9][0-9]' || ! kill -0 $lr_pid"
kill -9 "$LLAMA_PID"; wait "$LLAMA_PID" 2>/dev/null
wait "$lr_pid"; lr_rc=$?
check "llama-replay: killed mid-stream: exit 1" "[ $lr_rc = 1 ]"
check "llama-replay: killed mid-stream: one line saying where it was cut" \
    "[ \$(wc -l <'$LR/k.err') = 1 ] && grep -q '^atr: every request failed (first: stream cut: the connection closed after [0-9]* bytes of the HTTP 200 body' '$LR/k.err'"
check "llama-replay: killed mid-stream: the request line has the reason" \
    "[ \"\$($Q '$LR/k.ndjson' 'reqs[0][\"error\"], len(reqs[0][\"itl_ms\"]) > 50')\" = \"('stream cut', True)\" ]"
