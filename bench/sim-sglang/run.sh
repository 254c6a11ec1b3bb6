#!/bin/sh
# run.sh - the simulator's two engine flavours beside the published RTX 3090
# contrast (issue 16): same prompts and weights (Qwen3-4B-AWQ), vLLM
# 644 -> 198 ms mean latency by prefix sharing (69 % cut), SGLang
# 976 -> 133 ms (86 % cut).
#
# usage: sh bench/sim-sglang/run.sh ATR
#
# The published prompts (SWE-bench Verified) and their lengths are not
# published, so this runs the stand-in of docs/policies.md: 200 single-turn
# requests of 2500 prompt tokens whose first 2048 are shared, 32 output
# tokens, on rtx3090/qwen3-4b-awq, `--engine vllm|sglang`, without
# (`naive`) and with (`prefix-cache`) prefix sharing. Loads: Poisson 0.5/s
# (policies.md's setting: nothing waits), 2/s (a queue forms without
# sharing) and all at once (prefills of the shared prefix overlap: where
# SGLang's longest-prefix-first queue and one-copy radix tree could act).
# A second workload shares 2040 tokens, not a multiple of 16: vLLM's blocks
# lose the last 8 shared tokens of each prompt; SGLang's radix tree would
# keep them, but a trace's 16-token block ids cannot say so (see
# docs/sim-engine.md, "SGLang flavour"), so the two flavours lose them alike.
# Prints one row per (workload, load, engine): mean E2E without and with
# sharing, the cut, the prefix hit rate, and the published row to compare.
# Leaves no files behind. Deterministic: the same binary prints the same
# table.
set -eu

ATR=${1:?usage: run.sh ATR}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-sglang.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

for p in 2048 2040; do
    "$ATR" gen -q --kind requests --traces 200 --input-tokens 2500 --output-tokens 32 \
        --shared-prefix "$p" --seed 2 -o "$TMP/rq-$p.ndjson"
done

mean() {    # mean E2E ms and prefix hit rate of one result file
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
print('%.1f %.1f' % (d['mean_e2el_ms'], 100 * d['atr']['prefix_cache_hit_rate']))" "$1"
}

printf '%-7s %-5s %-7s %11s %11s %7s %7s   %s\n' shared load engine "naive ms" \
    "sharing ms" cut "hit %" "published (naive -> sharing, cut)"
for p in 2048 2040; do
    for load in 0.5 2 inf; do
        for eng in vllm sglang; do
            for pol in naive prefix-cache; do
                "$ATR" sim run -q "$TMP/rq-$p.ndjson" --profile rtx3090/qwen3-4b-awq \
                    --rate "$load" --engine "$eng" --policy "$pol" \
                    --save-result "$TMP/$pol.json"
            done
            set -- $(mean "$TMP/naive.json") $(mean "$TMP/prefix-cache.json")
            cut=$(python3 -c "print('%.1f%%' % (100 * (1 - $3 / $1)))")
            case $eng in
                vllm) pub="644 -> 198 ms, 69.3%" ;;
                sglang) pub="976 -> 133 ms, 86.4%" ;;
            esac
            printf '%-7s %-5s %-7s %11s %11s %7s %7s   %s\n' "$p" "$load" "$eng" "$1" "$3" \
                "$cut" "$4" "$pub"
        done
    done
done
