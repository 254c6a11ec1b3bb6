# test-requests.sh - request-log readers: Mooncake JSONL, Azure CSV, BurstGPT CSV.

REQ_T=$T/req_t; mkdir -p "$REQ_T"   # own folder: $T is shared by all test files

# Real files convert (format sniffed) and validate.
ok "mooncake real" "$ATR" convert -q "$REAL/mooncake/synthetic_trace.jsonl" -o "$REQ_T/mc.ndjson"
check "mooncake one trace per request" "[ \$(wc -l <'$REQ_T/mc.ndjson') -eq 3993 ]"
check "mooncake 512-token blocks" "head -n 1 '$REQ_T/mc.ndjson' | grep -q '\"block_size\":512'"
check "mooncake last arrival" "tail -n 1 '$REQ_T/mc.ndjson' | grep -q '\"trace_id\":\"mooncake/synthetic_trace/3993\",\"source\":\"mooncake\",\"start_ms\":1022025'"
ok "mooncake validates" "$ATR" validate "$REQ_T/mc.ndjson"
ok "azure real" "$ATR" convert -q "$DATA/azure/AzureLLMInferenceTrace_code.csv" -o "$REQ_T/az.ndjson"
check "azure one trace per row" "[ \$(wc -l <'$REQ_T/az.ndjson') -eq 8819 ]"
check "azure last row (no final newline)" "tail -n 1 '$REQ_T/az.ndjson' | grep -q '\"start_ms\":3435948,.*\"input_tokens\":549,\"output_tokens\":173'"
ok "azure validates" "$ATR" validate "$REQ_T/az.ndjson"
ok "burstgpt sample" "$ATR" convert -q "$DATA/burstgpt/burstgpt_sample.csv" -o "$REQ_T/bg.ndjson"
check "burstgpt failures kept" "[ \$(grep -c '\"outcome\":\"failed\"' '$REQ_T/bg.ndjson') -eq 2 ]"
ok "burstgpt validates" "$ATR" validate "$REQ_T/bg.ndjson"

# Goldens: small conversions checked by eye (stdin: trace ids say "stdin").
golden "mooncake golden" "$DATA/mooncake/head3.golden.ndjson" \
    sh -c "head -n 3 '$DATA/mooncake/synthetic_trace_head200.jsonl' | '$ATR' convert -q - -o -"
golden "azure golden" "$DATA/azure/head6.golden.ndjson" \
    sh -c "head -n 6 '$DATA/azure/AzureLLMInferenceTrace_code.csv' | '$ATR' convert -q --from azure - -o -"
golden "burstgpt golden" "$DATA/burstgpt/burstgpt_sample.golden.ndjson" \
    "$ATR" convert -q "$DATA/burstgpt/burstgpt_sample.csv" -o -

# Bad input: exit 1, one "file:line:col: expected ..." line, no output left.
head -c 150 "$DATA/mooncake/synthetic_trace_head200.jsonl" >"$REQ_T/trunc.jsonl"
fails "mooncake truncated" 1 'trunc.jsonl:1:151: expected a JSON value' \
    "$ATR" convert "$REQ_T/trunc.jsonl" -o "$REQ_T/r1"
absent "mooncake truncated leaves nothing" "$REQ_T/r1"
printf '{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1, "input_length": "5", "output_length": 1}\n' >"$REQ_T/type.jsonl"
fails "mooncake wrong type" 1 'type.jsonl:2:34: expected "input_length" to be number, found string' \
    "$ATR" convert "$REQ_T/type.jsonl" -o "$REQ_T/r2"
absent "mooncake wrong type leaves nothing" "$REQ_T/r2"
: >"$REQ_T/empty.csv"
fails "azure empty" 1 'empty.csv:1:1: expected header "TIMESTAMP,ContextTokens,GeneratedTokens", got empty input' \
    "$ATR" convert --from azure "$REQ_T/empty.csv" -o "$REQ_T/r3"
absent "azure empty leaves nothing" "$REQ_T/r3"
printf 'TIMESTAMP,Tokens\r\n' >"$REQ_T/hdr.csv"
fails "azure bad header" 1 'hdr.csv:1:1: expected header "TIMESTAMP,ContextTokens,GeneratedTokens"' \
    "$ATR" convert --from azure "$REQ_T/hdr.csv" -o "$REQ_T/r4"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,12,3\r\n2023-11-16 18:17:04.1,12\r\n' >"$REQ_T/cols.csv"
fails "azure missing column" 1 'cols.csv:3:25: expected 3 columns, got 2' \
    "$ATR" convert "$REQ_T/cols.csv" -o "$REQ_T/r5"
absent "azure missing column leaves nothing" "$REQ_T/r5"
printf 'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,-1,2,1,API log\n' >"$REQ_T/neg.csv"
fails "burstgpt negative" 1 'neg.csv:2:11: expected Request tokens as a non-negative integer' \
    "$ATR" convert "$REQ_T/neg.csv" -o "$REQ_T/r6"
absent "burstgpt negative leaves nothing" "$REQ_T/r6"
printf '\001\002\003\377binary\000junk' >"$REQ_T/junk.bin"
fails "burstgpt binary" 1 'junk.bin:1:1: expected header "Timestamp,Model,' \
    "$ATR" convert --from burstgpt "$REQ_T/junk.bin" -o "$REQ_T/r7"
absent "burstgpt binary leaves nothing" "$REQ_T/r7"
