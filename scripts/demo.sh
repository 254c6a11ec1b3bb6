#!/bin/sh
# demo.sh ATR - the main job on bundled data, no GPU, no network:
# generate a synthetic agent workload, convert the bundled real samples of
# every supported format, validate the results and print their statistics,
# then replay tool steps under per-step cgroup limits.
set -eu
atr=$1
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/demo
rm -rf "$out"
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "generate 20 synthetic SWE-agent-like traces (atr gen)"
"$atr" gen --kind swe --traces 20 --seed 7 -o "$out/gen-swe.ndjson"

step "convert the bundled real samples (atr convert, format sniffed)"
for dir in swe-agent mini-swe-agent openhands openai-chat mooncake azure burstgpt playwright; do
    files=$(find "$root/tests/data/$dir" -maxdepth 1 -type f \
        ! -name '*.txt' ! -name '*.golden*' ! -name '*.md' ! -name 'bad-*' 2>/dev/null | sort)
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

step "the generated agent workload on a simulated H100 serving Llama-3.1-8B (atr sim run)"
"$atr" sim run "$out/gen-swe.ndjson" --profile h100/llama-3.1-8b --save-result "$out/sim-result.json"

step "replay tool steps in cgroups (atr replay tools, static-toolcall, --mem-max 128M)"
# One step of the bundled trace needs 200 MiB: the per-step limit stops it
# (an OOM kill in its metrics) while the other steps run normally.
"$atr" replay tools --config static-toolcall --mem-max 128M --timeout 20 \
    "$root/tests/data/replay/steps.ndjson" --out "$out/replay"
grep '"oom_kills":[1-9]' "$out/replay/metrics.jsonl" | cut -c1-160

printf '\ndemo: outputs in %s\n' "$out"
