# test-openhands.sh - the OpenHands event-stream reader through the CLI.

# Every real sample converts (format sniffed) into one trace that validates.
for f in "$REAL"/openhands/*.json; do
    b=$(basename "$f" .json)
    ok "openhands real $b" "$ATR" convert -q "$f" -o "$T/oh-$b.ndjson"
    check "openhands $b one trace" "[ \$(wc -l <'$T/oh-$b.ndjson') -eq 1 ]"
    check "openhands $b sniffed" "grep -q '\"trace_id\":\"openhands/$b\",\"source\":\"openhands\"' '$T/oh-$b.ndjson'"
    ok "openhands $b validates" "$ATR" validate "$T/oh-$b.ndjson"
done
G=$T/oh-basic_gui_mode.ndjson
check "openhands timed bash step" "grep -q '\"tool\":\"bash\",\"command\":\"mkdir -p /workspace/todo-app\",\"t_ms\":21521,\"dur_ms\":659,\"exit_code\":0' '$G'"
check "openhands cwd and exit -1" "grep -q '\"cwd\":\"/workspace\",\"t_ms\":45763,\"dur_ms\":30580,\"exit_code\":-1' '$G'"
check "openhands recorded usage" "grep -q '\"recorded_input_tokens\":17297,\"recorded_output_tokens\":2024' '$G'"
check "openhands 5 model calls" "[ \$(grep -o '\"kind\":\"llm\"' '$G' | wc -l) -eq 5 ]"
check "openhands compact prefixes" "grep -q '\"prefix\":{\"step\":4,' '$G'"

# Content on request; gzip and stdin read the same.
ok "openhands keep content" "$ATR" convert -q --keep-content "$DATA/openhands/basic_interactions.json" -o "$T/oh-kc.ndjson"
check "openhands content written" "grep -q 'Goldbach' '$T/oh-kc.ndjson' && ! grep -q 'Goldbach' '$T/oh-basic_interactions.ndjson'"
ok "openhands keep content validates" "$ATR" validate "$T/oh-kc.ndjson"
gzip -c "$DATA/openhands/wrong_initial_state.json" >"$T/wrong_initial_state.json.gz"
ok "openhands gzip" "$ATR" convert -q "$T/wrong_initial_state.json.gz" -o "$T/oh-gz.ndjson"
check "openhands gzip same" "cmp '$T/oh-gz.ndjson' '$T/oh-wrong_initial_state.ndjson'"
ok "openhands stdin" sh -c "'$ATR' convert -q - -o '$T/oh-stdin.ndjson' <'$DATA/openhands/basic.json'"
check "openhands stdin trace id" "grep -q '\"trace_id\":\"openhands/stdin\"' '$T/oh-stdin.ndjson'"

# Eval output JSON lines: one trace per line, named by instance.
printf '%s\n' \
 '{"instance_id": "a-1", "history": [{"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "user", "action": "message", "args": {"content": "hi"}}, {"id": 1, "timestamp": "2025-01-01T00:00:02", "source": "agent", "action": "run", "args": {"command": "ls"}}, {"id": 2, "timestamp": "2025-01-01T00:00:03", "source": "agent", "cause": 1, "observation": "run", "content": "x", "extras": {"metadata": {"exit_code": 0}}}]}' \
 '' \
 '{"instance_id": "a-2", "history": []}' >"$T/eval.jsonl"
ok "openhands eval jsonl" "$ATR" convert -q "$T/eval.jsonl" -o "$T/oh-eval.ndjson"
check "openhands eval two traces" "[ \$(wc -l <'$T/oh-eval.ndjson') -eq 2 ] && grep -q '\"trace_id\":\"openhands/a-2\"' '$T/oh-eval.ndjson'"
check "openhands eval step" "grep -q '\"command\":\"ls\",\"t_ms\":2000,\"dur_ms\":1000,\"exit_code\":0' '$T/oh-eval.ndjson'"

golden "openhands golden" "$DATA/openhands/wrong_initial_state.golden.ndjson" \
    "$ATR" convert -q "$DATA/openhands/wrong_initial_state.json" -o -

# Bad input: exit 1, one "file:line:col: expected ..." line, no output left.
head -c 2000 "$DATA/openhands/basic.json" >"$T/trunc-oh.json"
fails "openhands truncated" 1 'trunc-oh.json:[0-9]+(:[0-9]+)?: (unterminated|expected )' \
    "$ATR" convert --from openhands "$T/trunc-oh.json" -o "$T/h1"
absent "openhands truncated leaves nothing" "$T/h1"
printf '[\n  {"id": 0, "source": "agent", "action": "run", "args": "ls"}\n]\n' >"$T/type-oh.json"
fails "openhands wrong type" 1 'type-oh.json:2:57: expected "args" to be an object, found string' \
    "$ATR" convert "$T/type-oh.json" -o "$T/h2"
absent "openhands wrong type leaves nothing" "$T/h2"
printf '[{"id": 0, "source": "agent", "action": "run", "timestamp": "Jan 5"}]' >"$T/time-oh.json"
fails "openhands bad timestamp" 1 'time-oh.json:1:61: expected "timestamp" as ISO-8601 date and time' \
    "$ATR" convert "$T/time-oh.json" -o "$T/h3"
absent "openhands bad timestamp leaves nothing" "$T/h3"
printf '\001\002\377garbage' >"$T/junk-oh.json"
fails "openhands binary" 1 'junk-oh.json:1:1: expected a JSON array of openhands events' \
    "$ATR" convert --from openhands "$T/junk-oh.json" -o "$T/h4"
absent "openhands binary leaves nothing" "$T/h4"
: >"$T/empty-oh.json"
fails "openhands empty" 1 'empty-oh.json:1:1: expected a JSON array of openhands events' \
    "$ATR" convert --from openhands "$T/empty-oh.json" -o "$T/h5"
absent "openhands empty leaves nothing" "$T/h5"

# A SWE-agent file read as openhands (its "history" is chat messages, not
# events) is a format error, not "1 traces, 0 steps" (issue 11, item 9).
for f in "$REAL"/swe-agent/*.traj; do
    b=$(basename "$f" .traj)
    fails "openhands: swe-agent $b refused" 1 \
        "$b\\.traj:[0-9]+:[0-9]+: expected an openhands event \\(an object with \"action\" or \"observation\"\\) \\(not an openhands trace: it looks like swe-agent\\)$" \
        "$ATR" convert --from openhands "$f" -o "$T/oh-swe.ndjson"
    absent "openhands: swe-agent $b leaves nothing" "$T/oh-swe.ndjson"
done
