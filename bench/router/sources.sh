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
# and, for whether anything but the prompt size is learnable (issue 26;
# docs/policies.md, "What the metadata cannot tell"), labels made where
# other features could matter:
#   light, light+all     size / every feature, the traces' gaps and tool
#              times x100 (--time-scale 100: a lightly loaded engine, where
#              prefix reuse and time between turns decide what is cached)
#   replicas2, replicas2+all  two replicas and prefix-route among the
#              candidates (prefix reuse decides where a turn's cache is)
#   fit        in distribution (gen-swe, held-out sessions): a wider MLP
#              (64,32, 2000 epochs) on every feature, light and replicas2
#              labels: how well it fits its training rows against how
#              well it does held out (ATR_BENCH_FIT=0 skips it; ~90 s)
# Every accuracy line carries the best single-feature rule (a threshold on
# one feature fitted on the training sources) beside the model's.
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
row light "$@" --time-scale 100
row light+all "$@" --time-scale 100 --inputs all
R2="--replicas 2 --policies naive,prefix-cache,prefix-route,compaction,max-tokens"
# shellcheck disable=SC2086
row replicas2 "$@" $R2
# shellcheck disable=SC2086
row replicas2+all "$@" $R2 --inputs all
if [ "${ATR_BENCH_FIT:-1}" != 0 ]; then
    for opts in "--time-scale 100" "$R2"; do
        echo "== fit, in distribution: gen-swe, every feature, hidden 64,32, 2000 epochs, $opts"
        # shellcheck disable=SC2086
        "$ATR" router train "$TMP/swe.ndjson" --profile "$PROFILE" --seed 3 --inputs all \
            --hidden 64,32 --epochs 2000 $opts -o "$TMP/fit.json" | grep -E '^(labels|all|held-out):'
    done
fi
[ "${ATR_BENCH_SELECT:-1}" = 0 ] || row select "$@" --select
