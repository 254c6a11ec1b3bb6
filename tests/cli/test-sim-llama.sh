# test-sim-llama.sh - the simulator's llama.cpp flavour (docs/sim-engine.md,
# "llama.cpp flavour"): the same bytes twice, its options, and `atr sim
# calibrate` against a real llama-server with the tiny model (its profile
# loaded by `atr sim run`) and against bad targets.
SL=$T/sim-llama
mkdir -p "$SL/prof/gpus"
"$ATR" gen -q --kind chat --traces 12 --seed 5 -o "$SL/chat.ndjson"
"$ATR" gen -q --kind requests --traces 20 --input-tokens 300 --output-tokens 20 --rate 50 \
    -o "$SL/req.ndjson"

# --- Determinism and options: no engine needed. ---
for k in 1 2; do
    "$ATR" sim run -q "$SL/chat.ndjson" --profile cpu2-tiny/atr-tiny --engine llama.cpp \
        --parallel 2 --ctx-size 8192 --requests-out "$SL/req$k.jsonl" --save-result "$SL/res$k.json"
done
check "llama.cpp flavour: same bytes twice" "[ -s '$SL/req1.jsonl' ] && cmp '$SL/req1.jsonl' '$SL/req2.jsonl'"
check "llama.cpp flavour: named in the result" "grep -q 'llama.cpp' '$SL/res1.json'"
check "llama.cpp flavour: slots hit their own prefixes" "python3 -c \"
import json, sys
r = json.load(open('$SL/res1.json'))
sys.exit(0 if r['atr']['prefix_cache_hit_rate'] > 0.3 else 1)\""
fails "llama.cpp flavour: a turn over a slot's context" 1 \
    "longer than a slot's context \\(64 tokens\\); use a larger --ctx-size or fewer --parallel" \
    "$ATR" sim run -q "$SL/chat.ndjson" --profile cpu2-tiny/atr-tiny --engine llama.cpp \
    --parallel 4 --ctx-size 256
fails "llama.cpp flavour: no --scheduler v0" 2 "takes neither --scheduler v0" \
    "$ATR" sim run -q "$SL/chat.ndjson" --profile cpu2-tiny/atr-tiny --engine llama.cpp \
    --scheduler v0
fails "unknown engine flavour" 2 "--engine wants vllm, sglang or llama.cpp" \
    "$ATR" sim run -q "$SL/chat.ndjson" --profile cpu2-tiny/atr-tiny --engine tgi

# --- calibrate: bad targets and arguments (no engine needed). ---
fails "calibrate: missing -o" 2 "missing -o FILE" "$ATR" sim calibrate --target http://127.0.0.1:9
fails "calibrate: not a URL" 2 "wants an http:// or https:// URL" \
    "$ATR" sim calibrate --target 127.0.0.1:9 -o "$SL/x.json"
fails "calibrate: nothing listening" 1 "127.0.0.1:9" \
    "$ATR" sim calibrate --target http://127.0.0.1:9 -o "$SL/x.json" --timeout 5
absent "calibrate: nothing listening leaves no profile" "$SL/x.json"
# A server that answers every completion with a 500 (atr's own, faults on).
"$ATR" sim serve --ttft 1 --itl 1 --fail-rate 1 --fail-kinds 500 --port 0 \
    >"$SL/serve.out" 2>"$SL/serve.err" &
SL_PID=$!
wait_for 20 "grep -q 'listening on' '$SL/serve.out'"
SL_PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$SL/serve.out")
fails "calibrate: a server that errors" 1 "a probe request failed: http 500" \
    "$ATR" sim calibrate --target "http://127.0.0.1:$SL_PORT" -o "$SL/x.json"
absent "calibrate: an erroring server leaves no profile" "$SL/x.json"
kill "$SL_PID" 2>/dev/null
wait "$SL_PID" 2>/dev/null

# --- calibrate against llama-server, the tiny model. ---
sim_llama_real() {
    LLAMA=$(llama_bin) || { echo "skip: $LLAMA"; return 0; }
    "$ATR" gen --kind gguf --preset tiny -q -o "$SL/tiny.gguf" || { fail "gen gguf"; return; }
    llama_start sim-llama "$SL/tiny.gguf" -np 4 -c 16384 -t 1 || return 0
    ok "calibrate against llama-server" "$ATR" sim calibrate --target "$LLAMA_URL" --reps 1 \
        -o "$SL/prof/gpus/cal.json" --points-out "$SL/points.jsonl"
    check "calibrate: 15 requests measured (and a warm-up)" "[ \$(wc -l <'$SL/points.jsonl') -eq 15 ]"
    check "calibrate: the fit printed" "grep -q 'per ubatch' '$T/out'"
    ok "sim run loads the calibrated profile" env ATR_PROFILE_PATH="$SL/prof" \
        "$ATR" sim run -q "$SL/req.ndjson" --profile cal/atr-tiny --engine llama.cpp \
        --ctx-size 16384 --save-result "$SL/cal.json"
    check "calibrated run: every request completed" "python3 -c \"
import json, sys
r = json.load(open('$SL/cal.json'))
sys.exit(0 if r['completed'] == 20 and r['failed'] == 0 else 1)\""
    kill "$LLAMA_PID" 2>/dev/null
    wait "$LLAMA_PID" 2>/dev/null
}
sim_llama_real
