# test-requests.sh - request-log readers: Mooncake JSONL, Azure CSV, BurstGPT CSV.

# Real files convert (format sniffed) and validate.
ok "mooncake real" "$ATR" convert -q "$REAL/mooncake/synthetic_trace.jsonl" -o "$T/mc.ndjson"
check "mooncake one trace per request" "[ \$(wc -l <'$T/mc.ndjson') -eq 3993 ]"
check "mooncake 512-token blocks" "head -n 1 '$T/mc.ndjson' | grep -q '\"block_size\":512'"
check "mooncake last arrival" "tail -n 1 '$T/mc.ndjson' | grep -q '\"trace_id\":\"mooncake/synthetic_trace/3993\",\"source\":\"mooncake\",\"start_ms\":1022025'"
ok "mooncake validates" "$ATR" validate "$T/mc.ndjson"
ok "azure real" "$ATR" convert -q "$DATA/azure/AzureLLMInferenceTrace_code.csv" -o "$T/az.ndjson"
check "azure one trace per row" "[ \$(wc -l <'$T/az.ndjson') -eq 8819 ]"
check "azure last row (no final newline)" "tail -n 1 '$T/az.ndjson' | grep -q '\"start_ms\":3435948,.*\"input_tokens\":549,\"output_tokens\":173'"
ok "azure validates" "$ATR" validate "$T/az.ndjson"
ok "burstgpt sample" "$ATR" convert -q "$DATA/burstgpt/burstgpt_sample.csv" -o "$T/bg.ndjson"
check "burstgpt failures kept" "[ \$(grep -c '\"outcome\":\"failed\"' '$T/bg.ndjson') -eq 2 ]"
ok "burstgpt validates" "$ATR" validate "$T/bg.ndjson"

# Goldens: small conversions checked by eye (stdin: trace ids say "stdin").
golden "mooncake golden" "$DATA/mooncake/head3.golden.ndjson" \
    sh -c "head -n 3 '$DATA/mooncake/synthetic_trace_head200.jsonl' | '$ATR' convert -q - -o -"
golden "azure golden" "$DATA/azure/head6.golden.ndjson" \
    sh -c "head -n 6 '$DATA/azure/AzureLLMInferenceTrace_code.csv' | '$ATR' convert -q --from azure - -o -"
golden "burstgpt golden" "$DATA/burstgpt/burstgpt_sample.golden.ndjson" \
    "$ATR" convert -q "$DATA/burstgpt/burstgpt_sample.csv" -o -

# Bad input: exit 1, one "file:line:col: expected ..." line, no output left.
head -c 150 "$DATA/mooncake/synthetic_trace_head200.jsonl" >"$T/trunc.jsonl"
fails "mooncake truncated" 1 'trunc.jsonl:1:151: expected a JSON value' \
    "$ATR" convert "$T/trunc.jsonl" -o "$T/r1"
absent "mooncake truncated leaves nothing" "$T/r1"
printf '{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1, "input_length": "5", "output_length": 1}\n' >"$T/type.jsonl"
fails "mooncake wrong type" 1 'type.jsonl:2:34: expected "input_length" to be number, found string' \
    "$ATR" convert "$T/type.jsonl" -o "$T/r2"
absent "mooncake wrong type leaves nothing" "$T/r2"
: >"$T/empty.csv"
fails "azure empty" 1 'empty.csv:1:1: expected header "TIMESTAMP,ContextTokens,GeneratedTokens", got empty input' \
    "$ATR" convert --from azure "$T/empty.csv" -o "$T/r3"
absent "azure empty leaves nothing" "$T/r3"
printf 'TIMESTAMP,Tokens\r\n' >"$T/hdr.csv"
fails "azure bad header" 1 'hdr.csv:1:1: expected header "TIMESTAMP,ContextTokens,GeneratedTokens"' \
    "$ATR" convert --from azure "$T/hdr.csv" -o "$T/r4"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,12,3\r\n2023-11-16 18:17:04.1,12\r\n' >"$T/cols.csv"
fails "azure missing column" 1 'cols.csv:3:25: expected 3 columns, got 2' \
    "$ATR" convert "$T/cols.csv" -o "$T/r5"
absent "azure missing column leaves nothing" "$T/r5"
printf 'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,-1,2,1,API log\n' >"$T/neg.csv"
fails "burstgpt negative" 1 'neg.csv:2:11: expected Request tokens as a non-negative integer' \
    "$ATR" convert "$T/neg.csv" -o "$T/r6"
absent "burstgpt negative leaves nothing" "$T/r6"
fails "burstgpt binary" 1 'zeros.bin:1:1: expected header "Timestamp,Model,' \
    sh -c "head -c 100 /dev/zero | tr '\\\\0' '\\\\1' >'$T/zeros.bin' && '$ATR' convert --from burstgpt '$T/zeros.bin' -o '$T/r7'"
absent "burstgpt binary leaves nothing" "$T/r7"
