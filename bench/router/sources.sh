#!/bin/sh
# sources.sh - the learned router on sources it never saw (issue 16): atr
# router eval --by-source (leave one source out; docs/policies.md, "##
# learned") over 9 sources, for the trainer's input sets.
#
# usage: sh bench/router/sources.sh ATR [OUTDIR]   (from the repository root)
#
# Sources: atr gen --kind swe (64 traces, seed 5) and --kind chat (64, seed
# 5), and the bundled real traces: swe-agent, mini-swe-agent, openai-chat,
# openhands (all of each), mooncake (the 200-request head in tests/data),
# azure (the first 200 requests) and burstgpt (the 12-request sample).
# REAL (default ../shared/data/real) holds the real traces. Labels are the
# default's (--cut-wins no: a cut output does not win) but in the last row.
# Rows:
#   all        every feature (the trainer before issue 16)
#   size       log_input_tokens only (the default)
#   size+reuse log_input_tokens and prefix_reuse
#   all+bal    every feature, each source weighing the same
#   select     per fold, the input set picked by inner leave-one-source-out
#              on the training sources (nested; minutes; ATR_BENCH_SELECT=0
#              skips it)
#   size,cut-wins  size, on the labels before the fix (--cut-wins yes: a
#              request max-tokens truncated counts as a max-tokens win)
# With OUTDIR, each row's `--json` (atr-router-eval/1 with "folds" and the
# pooled confusion matrix) is kept there as by-source-ROW.json.
set -eu

ATR=${1:?usage: sources.sh ATR [OUTDIR]}
OUTDIR=${2:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REAL=${REAL:-$ROOT/../shared/data/real}
PROFILE=${ATR_BENCH_PROFILE:-rtx3090/qwen3-4b-awq}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-router-src.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

"$ATR" gen -q --kind swe --traces 64 --seed 5 -o "$TMP/swe.ndjson"
"$ATR" gen -q --kind chat --traces 64 --seed 5 -o "$TMP/chat.ndjson"
head -n 201 "$ROOT/tests/data/azure/AzureLLMInferenceTrace_code.csv" >"$TMP/azure200.csv"
set -- "$TMP/swe.ndjson" "$TMP/chat.ndjson" "$REAL"/swe-agent/*.traj \
    "$REAL"/mini-swe-agent/*.traj.json "$REAL"/openai-chat/*.json "$REAL"/openhands/*.json \
    "$ROOT/tests/data/mooncake/synthetic_trace_head200.jsonl" "$TMP/azure200.csv" \
    "$ROOT/tests/data/burstgpt/burstgpt_sample.csv"

row() {
    name=$1
    shift
    json=$TMP/$name.json
    "$ATR" router eval --by-source "$@" --profile "$PROFILE" --seed 3 --json "$json" \
        >"$TMP/$name.out"
    if [ -n "$OUTDIR" ]; then
        mkdir -p "$OUTDIR"
        cp "$json" "$OUTDIR/by-source-$name.json"
    fi
    echo "== $name"
    sed -n '2,/^pooled/p' "$TMP/$name.out"
}

row all "$@" --inputs all
row size "$@"
row size+reuse "$@" --inputs log_input_tokens,prefix_reuse
row all+bal "$@" --inputs all --balance-sources
row size,cut-wins "$@" --cut-wins yes
[ "${ATR_BENCH_SELECT:-1}" = 0 ] || row select "$@" --select
