# test-openai-chat.sh - the OpenAI-chat rows reader through the CLI.

# Every real sample converts (format sniffed), one trace per row, and validates.
for f in "$REAL"/openai-chat/*.json; do
    b=$(basename "$f" .sample_raw.json)
    ok "openai-chat real $b" "$ATR" convert -q "$f" -o "$T/oc-$b.ndjson"
    check "openai-chat $b five rows" "[ \$(wc -l <'$T/oc-$b.ndjson') -eq 5 ] && grep -q '\"source\":\"openai-chat\"' '$T/oc-$b.ndjson'"
    ok "openai-chat $b validates" "$ATR" validate "$T/oc-$b.ndjson"
done
N=$T/oc-nebius_SWE-agent-trajectories.ndjson
check "openai-chat nebius ids" "grep -q '\"trace_id\":\"openai-chat/tomerfiliba__plumbum-366_17\"' '$N'"
check "openai-chat nebius fenced command" "grep -q '\"tool\":\"bash\",\"command\":\"ls -F\"' '$N'"
check "openai-chat nebius swe command" "grep -q '\"tool\":\"editor\",\"action\":\"find_file\",\"path\":\"plumbum\"' '$N'"
check "openai-chat nebius editor" "grep -q '\"tool\":\"editor\",\"action\":\"edit\",\"path\":\"/plumbum/plumbum/cli/image.py\"' '$N'"
check "openai-chat nebius 49 calls" "[ \$(grep -o '\"kind\":\"llm\"' '$N' | wc -l) -eq 49 ]"
S=$T/oc-swe-gym_openhands_sampled_trajectories.ndjson
check "openai-chat swe-gym exit code" "grep -q '\"command\":\"mypy /workspace/python__mypy__1.6/reproduce_error.py\",\"exit_code\":1' '$S'"
check "openai-chat swe-gym 83 tool steps" "[ \$(grep -o '\"kind\":\"tool\"' '$S' | wc -l) -eq 83 ]"
check "openai-chat swe-gym outcome" "grep -q '\"outcome\":\"resolved\"' '$S'"

# The same rows as JSON lines, compressed, from stdin.
ok "openai-chat jsonl" "$ATR" convert -q "$DATA/openai-chat/mixed-rows.jsonl" -o "$T/oc-mixed.ndjson"
ok "openai-chat jsonl validates" "$ATR" validate "$T/oc-mixed.ndjson"
zstd -q -c "$DATA/openai-chat/mixed-rows.jsonl" >"$T/mixed.zst"
ok "openai-chat zstd stdin" sh -c "'$ATR' convert -q - -o '$T/oc-zst.ndjson' <'$T/mixed.zst'"
check "openai-chat zstd same but named" "[ \$(wc -l <'$T/oc-zst.ndjson') -eq 3 ] && grep -q 'openai-chat/stdin/2' '$T/oc-zst.ndjson'"
ok "openai-chat keep content" "$ATR" convert -q --keep-content "$DATA/openai-chat/mixed-rows.jsonl" -o "$T/oc-kc.ndjson"
check "openai-chat content written" "grep -q 'Run the tests.' '$T/oc-kc.ndjson' && ! grep -q 'Run the tests.' '$T/oc-mixed.ndjson'"

# A big file (rows of 40-130 KiB, CRLF, no final newline) converts to the
# same bytes as the same file read from a pipe.
python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    for i, r in enumerate(rows * 3):
        f.write(json.dumps(r) + ("\r\n" if i % 2 else "\n"))
    f.write(open(sys.argv[3]).read().rstrip("\n"))
' "$REAL/openai-chat/swe-gym_openhands_sampled_trajectories.sample_raw.json" "$T/big-oc.jsonl" \
    "$DATA/openai-chat/mixed-rows.jsonl"
ok "openai-chat big file" "$ATR" convert -q "$T/big-oc.jsonl" -o "$T/oc-big-file.ndjson"
ok "openai-chat big pipe" sh -c "cat '$T/big-oc.jsonl' | '$ATR' convert -q - -o '$T/oc-big-pipe.ndjson'"
check "openai-chat file = piped" "[ \$(wc -l <'$T/oc-big-file.ndjson') -eq 18 ] && \
    sed 's|openai-chat/stdin/|openai-chat/big-oc/|' '$T/oc-big-pipe.ndjson' | cmp -s - '$T/oc-big-file.ndjson'"

golden "openai-chat golden" "$DATA/openai-chat/mixed-rows.golden.ndjson" \
    "$ATR" convert -q "$DATA/openai-chat/mixed-rows.jsonl" -o -

# Bad input: exit 1, one "file:line:col: expected ..." line, no output left.
head -c 5000 "$DATA/openai-chat/nebius_SWE-agent-trajectories.sample_raw.json" >"$T/trunc-oc.json"
fails "openai-chat truncated" 1 'trunc-oc.json:[0-9]+(:[0-9]+)?: (unterminated|expected )' \
    "$ATR" convert --from openai-chat "$T/trunc-oc.json" -o "$T/c1"
absent "openai-chat truncated leaves nothing" "$T/c1"
printf '{"messages": []}\n{"messages": [{"role": "user", "content": 7}]}\n' >"$T/type-oc.jsonl"
fails "openai-chat wrong type" 1 'type-oc.jsonl:2:43: expected message content to be a string or an array of parts, found number' \
    "$ATR" convert --from openai-chat "$T/type-oc.jsonl" -o "$T/c2"
absent "openai-chat wrong type leaves nothing" "$T/c2"
printf '[{"messages": [{"content": "hi"}]}]' >"$T/role-oc.json"
fails "openai-chat missing role" 1 'role-oc.json:1:16: expected "role" \(string\) in this object' \
    "$ATR" convert --from openai-chat "$T/role-oc.json" -o "$T/c3"
absent "openai-chat missing role leaves nothing" "$T/c3"
printf '\001\002\377garbage' >"$T/junk-oc.json"
fails "openai-chat binary" 1 'junk-oc.json:1:1: expected a JSON array of chat rows or JSON lines' \
    "$ATR" convert --from openai-chat "$T/junk-oc.json" -o "$T/c4"
absent "openai-chat binary leaves nothing" "$T/c4"
