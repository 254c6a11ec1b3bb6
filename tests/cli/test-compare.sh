# test-compare.sh - `atr compare`: golden Markdown and JSON of atr, vLLM and
# SGLang result files (tests/data/compare/SOURCE.txt), of `atr bench run`'s
# and ISO-Bench's result files (tests/data/bench/SOURCE.txt), all kinds in
# one table (n/a where a kind has no such figure), stdin and gzip, -o, and
# broken inputs and other atr files: each one error line file:line:col,
# exit 1, no output.
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
check compare-sglang-cut "grep -Eq '^\\| sglang +\\| prefix-cache .*\\| +86\\.37% \\| +n/a \\|$' '$T/out'"

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
# a result with throughput only: its latencies n/a
ok compare-missing-keys "$ATR" compare cmp/bad/missing-keys.json
check compare-missing-keys-na "grep -Eq '^\\| vllm:m +\\| missing-keys +\\| +n/a \\| +n/a \\| +n/a \\| +n/a \\| +n/a \\| +n/a \\| +3\\.50 \\| +n/a \\|' '$T/out'"
echo '{"hello": 1}' >not-result.json
fails compare-not-result 1 '^atr: not-result\.json:1:1: expected a benchmark result: vLLM.s, SGLang.s or atr.s figures \("mean_ttft_ms", "request_throughput", \.\.\.\) or ISO-Bench.s "status" and "metrics"$' "$ATR" compare -o bad.md cmp/vllm/naive.json not-result.json
absent compare-not-result-absent bad.md
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

# `atr bench run`'s result files (atr's own: outcome, variant, agent, the
# full latency set) and ISO-Bench's real ones: a row per file, grouped by
# MODEL@COMMIT, named by variant, failures with their outcome.
rm -rf bres && cp -R "$DATA/bench" bres && chmod -R u+w bres
BENCH="bres/codex/results/4e5f6071_agent_codex_result.json bres/codex/results/3d4e5f60_agent_codex_result.json
 bres/iso-bench/e206b543_human_result.json bres/iso-bench/3a243095_agent_result_error.json"
# shellcheck disable=SC2086
golden compare-bench "$C/golden-bench.md" "$ATR" compare $BENCH
# shellcheck disable=SC2086
golden compare-bench-json "$C/golden-bench.json" "$ATR" compare --json $BENCH
# every kind in one table: the figures they share, n/a for the others
# shellcheck disable=SC2086
golden compare-mixed "$C/golden-mixed.md" "$ATR" compare cmp/atr-h100-naive.json cmp/vllm/naive.json \
    cmp/sglang/naive.jsonl cmp/nv-action__serving_llama8B_tp1_1.json $BENCH

# an `atr sweep` result: a row per run, in the order they ran (run 10,
# a bisection step, after run 9)
"$ATR" sweep -q --generate 8:64:8 --target sim:h100/llama-3.1-8b --rates 3 \
    --slo ttft_p99=22ms -o sweep.json
golden compare-sweep "$C/golden-sweep.md" "$ATR" compare sweep.json
check compare-sweep-runs "python3 -c \"import json; n=len(json.load(open('sweep.json'))['runs']); assert n >= 10, n\""

# other atr files: refused, naming what they are
fails compare-replay-summary 1 '^atr: .*/report/replay/summary\.json:1:1: expected a benchmark result, found a tool replay summary' "$ATR" compare "$DATA/report/replay/summary.json"
"$ATR" sim run -q "$DATA/atr/small.ndjson" --profile h100/llama-3.1-8b --requests-out req.ndjson >/dev/null
fails compare-requests 1 '^atr: req\.ndjson:1:1: expected a benchmark result, found a request record \(--requests-out: `atr report` reads it\)$' "$ATR" compare req.ndjson
fails compare-trace 1 '^atr: .*/atr/small\.ndjson:1:1: expected a benchmark result, found a trace, not a result' "$ATR" compare "$DATA/atr/small.ndjson"

# --run: simulate the policies, then the table alone.
"$ATR" gen -q --kind swe --traces 6 --seed 4 -o "$T/cmp-run.ndjson"
ok "compare --run" "$ATR" compare --run "$T/cmp-run.ndjson" --target sim:rtx3090/qwen3-4b-awq \
    --rate 0.05 --policy naive,prefix-cache
check "compare --run prints only the table" "[ \$(wc -l <'$T/out') -eq 4 ] && grep -Eq '^\\| sim:rtx3090/qwen3-4b-awq +\\| prefix-cache ' '$T/out'"
fails "compare --run needs a sim target" 2 "--run wants --target sim:" "$ATR" compare --run \
    "$T/cmp-run.ndjson" --target http://127.0.0.1:1 --policy naive
fails "compare --run needs a profile" 2 "^atr compare: --run wants --target sim:GPU/MODEL" "$ATR" compare --run "$T/cmp-run.ndjson" \
    --policy naive

# A name from a result file (here the policy, the file's name) is text in
# the Markdown table, never raw HTML or a cell break (issue 27).
HOSTILE="$T/x<img src=x onerror=alert(1)>|\`.json"
cp "$DATA/compare/vllm/naive.json" "$HOSTILE"
ok "compare: hostile name" "$ATR" compare "$HOSTILE"
check "compare: hostile name escaped" "tail -n 1 '$T/out' | grep -qF '| x&lt;img src=x onerror=alert(1)&gt;&#124;&#96; |' && ! grep -q '[<>\`]' '$T/out' && [ \"\$(tail -n 1 '$T/out' | tr -cd '|' | wc -c)\" -eq \"\$(head -n 1 '$T/out' | tr -cd '|' | wc -c)\" ]"

# A bench run's folder (tests/data/bench-repeat: 5 repeats of each variant):
# every result in it, its repeats grouped into medians with intervals; the
# same rows as its files given one by one (in the folder's order: by name,
# then repeat).
ok compare-bench-folder "$ATR" compare "$DATA/bench-repeat"
cp "$T/out" "$T/compare-folder.md"
ok compare-bench-files "$ATR" compare "$DATA/bench-repeat/results/"*.json
check compare-bench-folder-same-rows "[ \"\$(sort '$T/compare-folder.md')\" = \"\$(sort '$T/out')\" ]"
check compare-bench-folder-intervals "grep -q '| m@bbbb2222 | human .*| req/s .*| 5 .*\\.\\. .*| repeats |' '$T/compare-folder.md'"
mkdir -p "$T/compare-empty"
fails compare-empty-folder 1 'compare-empty: no result files \(\*\.json, \*\.jsonl\)' "$ATR" compare "$T/compare-empty"

# The retention knob's cost (--kv-retain): pins, dropped pins and evictions
# beside the hit rate, read from each result's atr.engine; a run without
# the knob shows its evictions as the baseline; a table with no pins has
# no such columns.
"$ATR" sim run -q "$DATA/dag/fork-join.ndjson" -p h100/llama-3.1-8b --save-result "$T/kv-off.json"
"$ATR" sim run -q "$DATA/dag/fork-join.ndjson" -p h100/llama-3.1-8b --kv-retain 5 --save-result "$T/kv-5.json"
ok compare-kv "$ATR" compare "$T/kv-off.json" "$T/kv-5.json"
check compare-kv-columns "head -n 1 '$T/out' | grep -q '| prefix hit | kv pins | pins dropped | evictions | E2E cut |' && grep -q '| kv-off .*|  *n/a |  *n/a |  *0 |' '$T/out' && grep -q '| kv-5 .*|  *4 |  *0 |  *0 |' '$T/out'"
ok compare-kv-json "$ATR" compare --json "$T/kv-off.json" "$T/kv-5.json"
check compare-kv-json-keys "python3 -c \"
import json
r = {x['policy']: x for x in json.load(open('$T/out'))}
e = json.load(open('$T/kv-5.json'))['atr']['engine']
assert (r['kv-5']['kv_pins'], r['kv-5']['kv_pins_dropped'], r['kv-5']['evictions']) == (e['kv_pins'], e['kv_pins_dropped'], e['evictions']), r
assert r['kv-off']['kv_pins'] is None and r['kv-off']['evictions'] == 0, r
\""
ok compare-kv-none "$ATR" compare "$T/kv-off.json"
check compare-kv-none-no-columns "! grep -q 'kv pins\|evictions' '$T/out'"
