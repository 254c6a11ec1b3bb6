#!/bin/sh
# demo.sh ATR - the main job on bundled data, no GPU, no network:
# generate a synthetic agent workload, convert the bundled real samples of
# every supported format, validate the results and print their statistics,
# replay the LLM turns on the serving simulator (virtual time, then over
# HTTP), replay tool steps under per-step cgroup limits, and end with the
# six runtime policies compared on the agent workload (three of them on a
# real engine too: llama-server, when built), a load sweep, and one HTML
# report of it all. Outputs go to build/demo, or to $ATR_DEMO_OUT
# (the browser test's own folder).
set -eu
atr=$1
root=$(cd "$(dirname "$0")/.." && pwd)
out=${ATR_DEMO_OUT:-$root/build/demo}
rm -rf "$out"
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "generate 20 synthetic SWE-agent-like traces (atr gen)"
"$atr" gen --kind swe --traces 20 --seed 7 -o "$out/gen-swe.ndjson"

step "convert the bundled real samples (atr convert, format sniffed)"
for dir in swe-agent mini-swe-agent openhands openai-chat mooncake azure burstgpt playwright; do
    files=$(find "$root/tests/data/$dir" -maxdepth 1 -type f \
        ! -name '*.txt' ! -name '*.golden*' ! -name '*.md' ! -name 'bad-*' ! -name '*.py' \
        ! -name 'delegation*' 2>/dev/null | sort)   # delegation*: built from OpenHands' source, not recorded
    [ -n "$files" ] || continue
    # shellcheck disable=SC2086
    "$atr" convert $files -o "$out/$dir.ndjson"
done

step "validate everything (atr validate)"
"$atr" validate "$out"/*.ndjson

step "statistics of the real samples (atr stats)"
"$atr" stats "$out"/swe-agent.ndjson "$out"/mini-swe-agent.ndjson \
    "$out"/openhands.ndjson "$out"/openai-chat.ndjson

step "statistics of the generated workload"
"$atr" stats "$out/gen-swe.ndjson"

step "LLM replay of the generated agent workload on a simulated H100 serving Llama-3.1-8B (atr replay llm --target sim:, virtual time)"
"$atr" replay llm "$out/gen-swe.ndjson" --target sim:h100/llama-3.1-8b \
    --save-result "$out/sim-result.json" --requests-out "$out/sim-requests.ndjson"

step "the same engine in real time over HTTP (atr sim serve + atr replay llm, 200 requests at 40/s)"
: >"$out/serve.out"    # there before the server's shell opens it: the poll below reads it
"$atr" sim serve --profile h100/llama-3.1-8b --port 0 >"$out/serve.out" 2>"$out/serve.err" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
deadline=$(($(date +%s) + 20))
url=""
while [ -z "$url" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    url=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$out/serve.out")
done
[ -n "$url" ] || { echo "demo: atr sim serve did not start: $(cat "$out/serve.err")" >&2; exit 1; }
"$atr" gen -q --kind requests --traces 200 --input-tokens 400 --output-tokens 32 \
    --shared-prefix 256 --seed 1 -o "$out/gen-requests.ndjson"
"$atr" replay llm "$out/gen-requests.ndjson" --target "$url" --rate 40 \
    --save-result "$out/http-result.json"
kill "$server"

step "replay tool steps in cgroups (atr replay tools, static-toolcall, --mem-max 128M)"
# One step of the bundled trace needs 200 MiB: the per-step limit stops it
# (an OOM kill in its metrics) while the other steps run normally.
"$atr" replay tools --config static-toolcall --mem-max 128M --timeout 20 \
    "$root/tests/data/replay/steps.ndjson" --out "$out/replay"
grep '"oom_kills":[1-9]' "$out/replay/metrics.jsonl" | cut -c1-160

step "runtime policies on the agent workload, simulated RTX 3090 + Qwen3-4B-AWQ (atr router train, atr sim run --policy, atr compare)"
# The learned router is trained on other generated sessions than it is run on.
"$atr" gen -q --kind swe --traces 64 --seed 5 -o "$out/router-train.ndjson"
"$atr" router train "$out/router-train.ndjson" --profile rtx3090/qwen3-4b-awq --seed 3 \
    -o "$out/router.json" | grep -E '^(features|held-out|wrote)'
# Two replicas, so that prefix-route has a choice to make.
"$atr" sim run -q "$out/gen-swe.ndjson" --profile rtx3090/qwen3-4b-awq --rate 0.05 --replicas 2 \
    --policy naive,prefix-cache,prefix-route,compaction,max-tokens,learned \
    --policy-options "learned.model=$out/router.json" --save-result "$out/policy.json" \
    --requests-out "$out/policy-requests.ndjson"
"$atr" compare "$out"/policy.*.json

step "runtime policies on a real engine (llama-server, tiny model): naive, prefix-cache, prefix-route on two replicas, beside the simulator (bench/llama-policy/run.sh)"
# Four sessions of five turns (16-token replies) on two llama-server processes of atr's own
# random-weight model (-np 2 -t 1 each); one line saying why when the
# engine is not built (sh scripts/llama.sh builds it).
REPEATS=1 TURNS=5 REPLY=16 sh "$root/bench/llama-policy/run.sh" "$atr" "$out/llama"
llama_results=$(ls "$out"/llama/r1.*.json "$out"/llama/sim.*.json 2>/dev/null || true)

step "load against the simulated H100: synchronous, throughput and 4 rates, goodput under an SLO (atr sweep)"
"$atr" sweep --generate 60:400:32 --target sim:h100/llama-3.1-8b --rates 4 \
    --slo ttft_p99=100ms,tpot_p99=20ms -o "$out/sweep.json"

step "everything in one page (atr report)"
# The per-request files of naive and of the policy with the lowest mean
# latency (the largest E2E cut: the report's headline) feed the token race
# and the latency race; router.json the Router lab, sweep.json the sweep
# charts, replay/ the tool replay charts; the real engine's results (when
# it ran) join the Policies table as a target of their own.
best=$("$atr" compare --json "$out"/policy.*.json | awk '
    match($0, /"policy":"[^"]*"/) { p = substr($0, RSTART + 10, RLENGTH - 11) }
    match($0, /"e2el_cut_pct":[-0-9.e+]+/) {
        v = substr($0, RSTART + 15, RLENGTH - 15) + 0
        if (best == "" || v > bv) { best = p; bv = v }
    }
    END { print best }')
# shellcheck disable=SC2086
"$atr" report "$out/gen-swe.ndjson" "$out"/policy.*.json $llama_results "$out/http-result.json" \
    "$out"/policy-requests.naive.ndjson "$out/policy-requests.${best:-compaction}.ndjson" \
    "$out/router.json" "$out/sweep.json" "$out/replay" \
    "$root/tests/data/bench/claude_code" -o "$out/report.html"
printf '\ndemo: outputs in %s\ndemo: report: %s/report.html\n' "$out" "$out"
printf 'demo: live view of the same outputs: %s dashboard %s --port 0\n' "$atr" "$out"
