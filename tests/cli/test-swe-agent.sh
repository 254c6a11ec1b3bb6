# test-swe-agent.sh - SWE-agent .traj and mini-swe-agent .traj.json readers.

# Every real sample converts (format sniffed) and validates.
for f in "$REAL"/swe-agent/*.traj; do
    b=$(basename "$f" .traj)
    ok "swe-agent real $b" "$ATR" convert -q "$f" -o "$T/swe-$b.ndjson"
    check "swe-agent $b one trace" "[ \$(wc -l <'$T/swe-$b.ndjson') -eq 1 ]"
    ok "swe-agent $b validates" "$ATR" validate "$T/swe-$b.ndjson"
done
for f in "$REAL"/mini-swe-agent/*.traj.json; do
    b=$(basename "$f" .traj.json)
    ok "mini-swe-agent real $b" "$ATR" convert -q "$f" -o "$T/mini-$b.ndjson"
    check "mini-swe-agent $b one trace" "[ \$(wc -l <'$T/mini-$b.ndjson') -eq 1 ]"
    ok "mini-swe-agent $b validates" "$ATR" validate "$T/mini-$b.ndjson"
done
M=$T/swe-marshmallow-1867__function_calling_replace.ndjson
check "swe-agent trace id from the instance" "grep -q '\"trace_id\":\"swe-agent/marshmallow-code__marshmallow-1867\",\"source\":\"swe-agent\"' '$M'"
check "swe-agent model and outcome" "grep -q '\"model\":\"gpt-4o\"' '$M' && grep -q '\"exit_status\":\"submitted\"' '$M'"
check "swe-agent execution_time" "grep -q '\"tool\":\"bash\",\"command\":\"python reproduce.py\",\"cwd\":\"/testbed\",\"dur_ms\":330' '$M'"
check "swe-agent editor step" "grep -q '\"tool\":\"editor\",\"action\":\"open\",\"path\":\"src/marshmallow/fields.py\"' '$M'"
check "swe-agent compact prefixes" "grep -q '\"prefix\":{\"step\":0,' '$M'"
D=$T/mini-django__django-14752__deepseek_chat_submitted.ndjson
check "mini-swe-agent 31 calls" "[ \$(grep -o '\"kind\":\"llm\"' '$D' | wc -l) -eq 31 ]"
check "mini-swe-agent recorded usage" "grep -q '\"recorded_input_tokens\":294301,\"recorded_output_tokens\":7074' '$D'"
check "mini-swe-agent timed tool step" "grep -q '\"timeout_ms\":60000,\"t_ms\":1218,\"dur_ms\":302,\"exit_code\":0' '$D'"

# Content is kept only on request; compressed and stdin inputs read the same.
ok "swe-agent keep content" "$ATR" convert -q --keep-content "$DATA/swe-agent/function_calling_simple.traj" -o "$T/swe-kc.ndjson"
check "swe-agent content written" "grep -q 'missing_colon' '$T/swe-kc.ndjson' && ! grep -q 'missing_colon.py as follows' '$T/swe-function_calling_simple.ndjson'"
ok "swe-agent keep content validates" "$ATR" validate "$T/swe-kc.ndjson"
gzip -c "$DATA/mini-swe-agent/github_issue.traj.json" >"$T/github_issue.traj.json.gz"
ok "mini-swe-agent gzip" "$ATR" convert -q "$T/github_issue.traj.json.gz" -o "$T/mini-gz.ndjson"
check "mini-swe-agent gzip same" "cmp '$T/mini-gz.ndjson' '$T/mini-github_issue.ndjson'"
ok "swe-agent stdin" sh -c "'$ATR' convert -q - -o '$T/swe-stdin.ndjson' <'$DATA/swe-agent/humanevalfix-python-0__human_thought.traj'"
check "swe-agent stdin trace id" "grep -q '\"trace_id\":\"swe-agent/stdin\"' '$T/swe-stdin.ndjson'"

# Goldens: small conversions checked by eye.
golden "swe-agent golden" "$DATA/swe-agent/humanevalfix-python-0__human_thought.golden.ndjson" \
    "$ATR" convert -q "$DATA/swe-agent/humanevalfix-python-0__human_thought.traj" -o -
golden "mini-swe-agent golden" "$DATA/mini-swe-agent/github_issue.golden.ndjson" \
    "$ATR" convert -q "$DATA/mini-swe-agent/github_issue.traj.json" -o -

# Bad input: exit 1, one "file:line:col: expected ..." line, no output left.
head -c 3000 "$DATA/swe-agent/humanevalfix-python-0__human_thought.traj" >"$T/trunc.traj"
fails "swe-agent truncated" 1 'trunc.traj:[0-9]+:[0-9]+: (unterminated string|expected )' \
    "$ATR" convert --from swe-agent "$T/trunc.traj" -o "$T/s1"
absent "swe-agent truncated leaves nothing" "$T/s1"
printf '{"history": [],\n "trajectory": {"action": "ls"}}\n' >"$T/type.traj"
fails "swe-agent wrong type" 1 'type.traj:2:16: expected "trajectory" to be an array, found object' \
    "$ATR" convert "$T/type.traj" -o "$T/s2"
absent "swe-agent wrong type leaves nothing" "$T/s2"
printf '{"trajectory": [{"action": "ls", "execution_time": "fast"}]}' >"$T/time.traj"
fails "swe-agent bad execution_time" 1 'time.traj:1:52: expected "execution_time" to be a number, found string' \
    "$ATR" convert --from swe-agent "$T/time.traj" -o "$T/s3"
absent "swe-agent bad execution_time leaves nothing" "$T/s3"
: >"$T/empty.traj"
fails "swe-agent empty" 1 'empty.traj:1:1: expected a JSON value' \
    "$ATR" convert --from swe-agent "$T/empty.traj" -o "$T/s4"
absent "swe-agent empty leaves nothing" "$T/s4"
head -c 2048 /dev/urandom | tr '{[' '()' >"$T/junk.traj"
fails "swe-agent binary" 1 'junk.traj:[0-9]+:[0-9]+: ' \
    "$ATR" convert --from swe-agent "$T/junk.traj" -o "$T/s5"
absent "swe-agent binary leaves nothing" "$T/s5"
printf '[{"role": "user", "content": "hi"},\n {"role": "assistant", "content": 42}]' >"$T/content.traj.json"
fails "mini-swe-agent wrong type" 1 'content.traj.json:2:35: expected "content" to be a string or an array of parts, found number' \
    "$ATR" convert --from mini-swe-agent "$T/content.traj.json" -o "$T/s6"
absent "mini-swe-agent wrong type leaves nothing" "$T/s6"
printf '{"trajectory_format": "mini-swe-agent-1.1", "info": {}}' >"$T/nomsg.traj.json"
fails "mini-swe-agent no messages" 1 'nomsg.traj.json:1:1: expected "messages" \(array\) in this object' \
    "$ATR" convert "$T/nomsg.traj.json" -o "$T/s7"
absent "mini-swe-agent no messages leaves nothing" "$T/s7"
head -c 5000 "$DATA/mini-swe-agent/django__django-14752__deepseek_chat_submitted.traj.json" >"$T/trunc.traj.json"
fails "mini-swe-agent truncated" 1 'trunc.traj.json:[0-9]+:[0-9]+: ' \
    "$ATR" convert "$T/trunc.traj.json" -o "$T/s8"
absent "mini-swe-agent truncated leaves nothing" "$T/s8"
fails "mini-swe-agent oversized" 1 'github_issue.traj.json' \
    "$ATR" convert --max-line 1000 "$DATA/mini-swe-agent/github_issue.traj.json" -o "$T/s9"
absent "mini-swe-agent oversized leaves nothing" "$T/s9"
