# test-tokens.sh - recorded token usage is what atr-trace carries and what
# replay sends: every real file with usage, stats by origin, round trips.
K=$T/tokens
mkdir -p "$K"
D=$DATA
# Stats name their files: run them from the data folder so goldens hold anywhere.
R="openhands/basic.json openhands/basic_gui_mode.json openhands/basic_interactions.json"
R="$R openhands/wrong_initial_state.json mini-swe-agent/django__django-14752__deepseek_chat_submitted.traj.json"
R="$R swe-agent/marshmallow-1867__function_calling_replace.traj mooncake/synthetic_trace_head200.jsonl"
R="$R azure/AzureLLMInferenceTrace_code.csv burstgpt/burstgpt_sample.csv"
cd "$D" || exit 1
golden "tokens stats by origin" "$D/tokens/real-stats.json" sh -c "'$ATR' stats --json $R | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in (\"token_error\", \"token_origin\")}, indent=1))'"
golden "tokens stats table" "$D/tokens/real-stats.txt" sh -c "'$ATR' stats $R | sed -n '/^token estimates/,\$p'"
cd - >/dev/null || exit 1

# OpenHands: each call carries its model_response.usage, says so, and its
# hash ids cover the recorded length (the validator checks ceil(in/16)).
ok "tokens convert openhands" "$ATR" convert -q "$D/openhands/basic_gui_mode.json" -o "$K/gui.ndjson"
check "tokens openhands per call" "python3 -c '
import json; t = json.loads(open(\"$K/gui.ndjson\").readline())
llm = [s for s in t[\"steps\"] if s[\"kind\"] == \"llm\"]
assert [(s[\"input_tokens\"], s[\"output_tokens\"], s[\"tokens_from\"]) for s in llm[:4]] == [
    (3439, 104, \"recorded\"), (3601, 1142, \"recorded\"), (4769, 693, \"recorded\"), (5488, 85, \"recorded\")]
assert llm[4][\"tokens_from\"] == \"estimated\" and llm[4][\"input_tokens\"] > 5488
assert all(s[\"estimated_input_tokens\"] < s[\"input_tokens\"] for s in llm)'"
ok "tokens validate" "$ATR" validate "$K/gui.ndjson"
# The atr reader and writer keep every new field: converting again is the same line.
ok "tokens round trip" "$ATR" convert -q "$K/gui.ndjson" -o "$K/gui2.ndjson"
check "tokens round trip same" "cmp -s '$K/gui.ndjson' '$K/gui2.ndjson'"
ok "tokens convert expanded" "$ATR" convert -q --expand "$K/gui.ndjson" -o "$K/gui3.ndjson"
ok "tokens validate expanded" "$ATR" validate "$K/gui3.ndjson"
fails "tokens bad origin" 1 "bad-origin.ndjson:1:118: expected \"tokens_from\" to be" \
    "$ATR" validate "$D/tokens/bad-origin.ndjson"

# mini-swe-agent: the recorded per-call usage, 31 calls summing to the totals.
ok "tokens convert mini" "$ATR" convert -q "$D/mini-swe-agent/django__django-14752__deepseek_chat_submitted.traj.json" -o "$K/mini.ndjson"
check "tokens mini sums" "python3 -c '
import json; t = json.loads(open(\"$K/mini.ndjson\").readline())
llm = [s for s in t[\"steps\"] if s[\"kind\"] == \"llm\"]
assert len(llm) == 31 and all(s[\"tokens_from\"] == \"recorded\" for s in llm)
assert sum(s[\"input_tokens\"] for s in llm) == 294301 and sum(s[\"output_tokens\"] for s in llm) == 7074'"

# replay llm against sim: sends exactly the recorded prompt and asks for the
# recorded output, call by call.
ok "tokens replay sim" "$ATR" replay llm -q "$K/gui.ndjson" --target sim:h100/llama-3.1-8b \
    --requests-out "$K/sim.jsonl"
check "tokens replay sim lengths" "python3 -c '
import json; r = [json.loads(l) for l in open(\"$K/sim.jsonl\")]
t = json.loads(open(\"$K/gui.ndjson\").readline())
llm = [s for s in t[\"steps\"] if s[\"kind\"] == \"llm\"]
assert [(x[\"prompt_tokens\"], x[\"output_tokens\"]) for x in r] == [(s[\"input_tokens\"], s[\"output_tokens\"]) for s in llm], r
assert [(x[\"prompt_tokens\"], x[\"output_tokens\"]) for x in r[:4]] == [(3439, 104), (3601, 1142), (4769, 693), (5488, 85)], r'"

# ... and against a real `atr sim serve` over HTTP (its usage counts the prompt).
"$ATR" sim serve --profile h100/llama-3.1-8b --port 0 >"$K/serve.out" 2>"$K/serve.err" &
TOK_PID=$!
deadline=$(($(date +%s) + 20))
PORT=""
while [ -z "$PORT" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$K/serve.out" 2>/dev/null)
done
ok "tokens replay http" "$ATR" replay llm -q "$K/gui.ndjson" --target "http://127.0.0.1:$PORT" \
    --requests-out "$K/http.jsonl"
kill "$TOK_PID" 2>/dev/null; wait "$TOK_PID" 2>/dev/null
check "tokens replay http lengths" "python3 -c '
import json; r = [json.loads(l) for l in open(\"$K/http.jsonl\")]
t = json.loads(open(\"$K/gui.ndjson\").readline())
llm = [s for s in t[\"steps\"] if s[\"kind\"] == \"llm\"]
assert [(x[\"prompt_tokens\"], x[\"output_tokens\"]) for x in r] == [(s[\"input_tokens\"], s[\"output_tokens\"]) for s in llm], r
assert [(x[\"prompt_tokens\"], x[\"output_tokens\"]) for x in r[:4]] == [(3439, 104), (3601, 1142), (4769, 693), (5488, 85)], r'"
