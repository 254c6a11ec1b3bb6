# test-compare.sh - `atr compare`: golden Markdown and JSON of atr, vLLM and
# SGLang result files (tests/data/compare/SOURCE.txt), stdin and gzip, -o,
# and broken inputs: each one error line file:line:col, exit 1, no output.
C=$DATA/compare
rm -rf cmp && cp -R "$C" cmp && chmod -R u+w cmp      # relative names in goldens
SET="cmp/atr-rtx3090-learned.json cmp/atr-rtx3090-max-tokens.json cmp/atr-rtx3090-compaction.json
 cmp/atr-rtx3090-prefix-route.json cmp/atr-rtx3090-prefix-cache.json cmp/atr-rtx3090-naive.json
 cmp/atr-h100-prefix-cache.json cmp/atr-h100-naive.json cmp/vllm/prefix-cache.json
 cmp/vllm/naive.json cmp/sglang/prefix-cache.jsonl cmp/sglang/naive.jsonl"

# shellcheck disable=SC2086
golden compare-md "$C/golden.md" "$ATR" compare $SET
# shellcheck disable=SC2086
golden compare-json "$C/golden.json" "$ATR" compare --json $SET
check compare-json-parses "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert len(r) == 12' '$C/golden.json'"
# the real third-party files: SGLang JSONL of two runs (bare Infinity), old vLLM without e2el
golden compare-real "$C/golden-real.md" "$ATR" compare cmp/sglang_1015_1000_1024_128.jsonl \
    cmp/nv-action__serving_llama8B_tp1_1.json
ok compare-real-json "$ATR" compare --json cmp/sglang_1015_1000_1024_128.jsonl \
    cmp/nv-action__serving_llama8B_tp1_1.json
check compare-real-json-parses "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [x[\"policy\"] for x in r] == [\"sglang_1015_1000_1024_128#1\", \"sglang_1015_1000_1024_128#2\", \"nv-action__serving_llama8B_tp1_1\"]' '$T/out'"

# the published cuts of the hand-made vLLM and SGLang pairs
ok compare-vllm "$ATR" compare cmp/vllm/naive.json cmp/vllm/prefix-cache.json
check compare-vllm-cut "grep -Eq '^\\| vllm:Qwen/Qwen3-4B-AWQ \\| prefix-cache .*\\| +69\\.25% \\| +98\\.56% \\|$' '$T/out'"
ok compare-sglang "$ATR" compare cmp/sglang/prefix-cache.jsonl cmp/sglang/naive.jsonl
check compare-sglang-cut "grep -Eq '^\\| sglang +\\| prefix-cache .*\\| +86\\.37% \\| +- \\|$' '$T/out'"

# stdin and gzip read the same; -o writes atomically
ok compare-stdin sh -c "'$ATR' compare --json - <cmp/vllm/naive.json"
check compare-stdin-named "grep -q '\"file\":\"<stdin>\",\"kind\":\"vllm\",\"target\":\"vllm:Qwen/Qwen3-4B-AWQ\",\"policy\":\"stdin\"' '$T/out'"
gzip -c cmp/vllm/naive.json >naive.json.gz
ok compare-gz "$ATR" compare --json naive.json.gz
check compare-gz-policy "grep -q '\"policy\":\"naive\"' '$T/out'"
# shellcheck disable=SC2086
ok compare-output "$ATR" compare -o cmp.md $SET
check compare-output-same "cmp -s cmp.md '$C/golden.md' && ! test -s '$T/out'"

# bad inputs: one line "file:line:col: expected ...", exit 1, nothing written
fails compare-truncated 1 '^atr: cmp/bad/truncated\.json:2:20: expected' "$ATR" compare -o bad.md cmp/vllm/naive.json cmp/bad/truncated.json
absent compare-truncated-absent bad.md
fails compare-array 1 '^atr: cmp/bad/array\.json:1:1: expected a result object, found array$' "$ATR" compare -o bad.md cmp/bad/array.json
absent compare-array-absent bad.md
fails compare-missing-keys 1 '^atr: cmp/bad/missing-keys\.json:1:1: expected "mean_ttft_ms", "mean_e2el_ms" or "mean_e2e_latency_ms"' "$ATR" compare -o bad.md cmp/vllm/naive.json cmp/bad/missing-keys.json
absent compare-missing-keys-absent bad.md
fails compare-junk 1 '^atr: cmp/bad/junk\.bin:1:1: expected a JSON value' "$ATR" compare -o bad.md cmp/bad/junk.bin
absent compare-junk-absent bad.md
fails compare-empty 1 '^atr: cmp/bad/empty\.json:1:1: expected a JSON value, found end of input$' "$ATR" compare -o bad.md cmp/bad/empty.json
absent compare-empty-absent bad.md
fails compare-string-figure 1 '^atr: cmp/bad/string-figure\.json:1:37: expected a number for "mean_ttft_ms", found string$' "$ATR" compare cmp/bad/string-figure.json
fails compare-bad-line 1 '^atr: cmp/bad/bad-line\.jsonl:2:46: expected a JSON value' "$ATR" compare -o bad.md cmp/bad/bad-line.jsonl
absent compare-bad-line-absent bad.md
fails compare-nonexistent 1 '^atr: cmp/nonexistent\.json: No such file' "$ATR" compare -o bad.md cmp/nonexistent.json
absent compare-nonexistent-absent bad.md
fails compare-no-files 2 '^atr compare: missing RESULT' "$ATR" compare
fails compare-no-files-json 2 '^atr compare: missing RESULT' "$ATR" compare --json -o bad.md
absent compare-no-files-absent bad.md
fails compare-bad-option 2 "^atr compare: unknown option '--nope'" "$ATR" compare --nope cmp/vllm/naive.json

# --run: simulate the policies, then the table alone.
"$ATR" gen -q --kind swe --traces 6 --seed 4 -o "$T/cmp-run.ndjson"
ok "compare --run" "$ATR" compare --run "$T/cmp-run.ndjson" --target sim:rtx3090/qwen3-4b-awq \
    --rate 0.05 --policy naive,prefix-cache
check "compare --run prints only the table" "[ \$(wc -l <'$T/out') -eq 4 ] && grep -Eq '^\\| sim:rtx3090/qwen3-4b-awq +\\| prefix-cache ' '$T/out'"
fails "compare --run needs a sim target" 2 "--run wants --target sim:" "$ATR" compare --run \
    "$T/cmp-run.ndjson" --target http://127.0.0.1:1 --policy naive
fails "compare --run needs a profile" 2 "^atr compare: --run wants --target sim:GPU/MODEL" "$ATR" compare --run "$T/cmp-run.ndjson" \
    --policy naive
