#!/bin/sh
# validate.sh - the llama.cpp flavour against a real llama-server on this
# machine (docs/sim.md, "llama.cpp on a CPU"): builds the model, starts the
# server, calibrates (atr sim calibrate, its fixed points), then runs each
# validation workload on the server and through the simulator with the
# fitted profile, side by side, and prints simulated / measured mean TTFT,
# mean TPOT and output throughput, then the median and largest error.
#
#   sh bench/sim-llama/validate.sh [build/atr] [tiny|small]
#
# Not a test: the CPUs here are shared, so figures move from run to run;
# calibrating right before and comparing within one run keeps them ratios,
# and each real figure is the median of REPS runs (default 3).
# SERVER_ARGS overrides the server's options (default -np 4 -c 16384 -t 1:
# one thread, as two threads that wait for each other at every op are
# slowed many times over on CPUs this loaded).
set -u
ATR=$(realpath "${1:-build/atr}")
PRESET=${2:-tiny}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/sim-llama.XXXXXX")
trap 'kill $LLAMA_PID 2>/dev/null; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
. "$ROOT/tests/cli/lib.sh"
FAILED=0 PASSED=0
LLAMA=$(llama_bin) || { echo "validate: $LLAMA" >&2; exit 1; }
NP=4 CTX=16384
SERVER_ARGS=${SERVER_ARGS:-"-np $NP -c $CTX -t 1"}
REPS=${REPS:-3}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$ATR" gen --kind gguf --preset "$PRESET" -o "$T/model.gguf" -q || exit 1
# shellcheck disable=SC2086
llama_start validate "$T/model.gguf" $SERVER_ARGS || { cat "$T/validate.llama.log" >&2; exit 1; }
mkdir -p "$T/prof/gpus"
"$ATR" sim calibrate --target "$LLAMA_URL" -o "$T/prof/gpus/cal.json" \
    --points-out "$T/points.jsonl" >&2 || exit 1
PROFILE=cal/atr-$PRESET

# NAME "GEN OPTIONS" "SCHEDULE OPTIONS": one workload, real then simulated.
# Each workload has its own seed: atr gen's request i begins with the same
# words at every length, and the server's caches outlive a workload.
SEED=100
row() {
    name=$1 gen=$2 sched=$3
    SEED=$((SEED + 1))
    # shellcheck disable=SC2086
    "$ATR" gen --kind requests $gen --seed $SEED -q -o "$T/$name.ndjson" || exit 1
    # Each real run REPS times, each with its own prompts (a new seed): the
    # figure is the median of the runs (on a shared CPU one run may be
    # several times slower than the next); the simulator runs the first.
    reals=""
    for k in $(seq "$REPS"); do
        [ "$k" = 1 ] || "$ATR" gen --kind requests $gen --seed $((SEED + 1000 * k)) -q \
            -o "$T/$name.$k.ndjson" || exit 1
        [ "$k" = 1 ] && cp "$T/$name.ndjson" "$T/$name.$k.ndjson"
        # shellcheck disable=SC2086
        "$ATR" replay llm "$T/$name.$k.ndjson" --target "$LLAMA_URL" $sched -q \
            --save-result "$T/$name.real$k.json" ||
            { echo "validate: $name: replay failed" >&2; exit 1; }
        reals="$reals,$T/$name.real$k.json"
    done
    # shellcheck disable=SC2086
    ATR_PROFILE_PATH=$T/prof "$ATR" sim run "$T/$name.ndjson" --profile "$PROFILE" \
        --engine llama.cpp --parallel $NP --ctx-size $CTX $sched -q \
        --save-result "$T/$name.sim.json" || { echo "validate: $name: sim failed" >&2; exit 1; }
    echo "$name ${reals#,} $T/$name.sim.json" >>"$T/rows"
}

# Lengths and loads the calibration did not use (it used prompts of 256,
# 1024 and 3072 tokens alone, 256 and 1024 four at a time).
row len-100 "--traces 8 --rate inf --input-tokens 100 --output-tokens 32" "--max-concurrency 1"
row len-600 "--traces 8 --rate inf --input-tokens 600 --output-tokens 32" "--max-concurrency 1"
row len-2000 "--traces 6 --rate inf --input-tokens 2000 --output-tokens 32" "--max-concurrency 1"
row len-4000 "--traces 4 --rate inf --input-tokens 4000 --output-tokens 32" "--max-concurrency 1"
row conc-2 "--traces 16 --rate inf --input-tokens 500 --output-tokens 48" "--max-concurrency 2"
row conc-8 "--traces 24 --rate inf --input-tokens 500 --output-tokens 48" "--max-concurrency 8"
row conc-16 "--traces 32 --rate inf --input-tokens 300 --output-tokens 48" "--max-concurrency 16"
row rate-10 "--traces 30 --input-tokens 400 --output-tokens 32" "--rate 10 --seed 3"
row rate-40 "--traces 40 --input-tokens 400 --output-tokens 32" "--rate 40 --seed 3"
row shared-2k "--traces 16 --rate inf --input-tokens 2000 --output-tokens 32 --shared-prefix 1800" "--max-concurrency 4"

python3 - "$T/rows" <<'PY'
import json, statistics, sys
keys = [("mean_ttft_ms", "TTFT"), ("mean_tpot_ms", "TPOT"), ("output_throughput", "tok/s")]
errs, spread = [], []
print("| workload | " + " | ".join(f"{k} real | {k} sim | err" for _, k in keys) + " |")
print("|---|" + "---:|" * (3 * len(keys)))
for line in open(sys.argv[1]):
    name, real, sim = line.split()
    runs, s = [json.load(open(f)) for f in real.split(",")], json.load(open(sim))
    r = {key: statistics.median(x[key] for x in runs) for key, _ in keys}
    spread += [max(x[k] for x in runs) / min(x[k] for x in runs) for k, _ in keys]
    cells = []
    for key, _ in keys:
        e = s[key] / r[key] - 1
        errs.append(abs(e))
        cells += [f"{r[key]:.2f}", f"{s[key]:.2f}", f"{100 * e:+.0f} %"]
    print(f"| {name} | " + " | ".join(cells) + " |")
print(f"\nmedian |error| {100 * statistics.median(errs):.1f} %, largest {100 * max(errs):.1f} %, "
      f"within 20 %: {sum(e <= 0.2 for e in errs)} of {len(errs)}")
print(f"real runs' own spread (slowest / fastest of a figure): median x{statistics.median(spread):.2f}, "
      f"largest x{max(spread):.2f}")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
