#!/bin/sh
# run.sh - the 3-way bench of real llama.cpp builds (issue 29 point 5):
# `atr bench run examples/bench/llama.json`, then `atr bench report`, timed.
#
# usage: sh bench/llama/run.sh ATR        (make bench-llama runs it)
#
# The first run clones the pinned llama.cpp source (scripts/llama.sh
# --package) into build/bench-llama and builds it whole (CMake + Ninja,
# -j2); later runs rebuild only what a variant's patch or flag touches,
# and a variant whose flags and patch were built before builds nothing
# (examples/bench/llama/prepare.sh). Results go to a fresh
# build/bench-llama-out (OUT=DIR elsewhere); the report is printed and
# written to OUT/report.md. Not part of `make check`: it takes minutes.
set -eu
ATR=${1:?usage: run.sh ATR}
OUT=${OUT:-build/bench-llama-out}
for t in npm git cmake ninja g++; do
    command -v "$t" >/dev/null 2>&1 || { echo "bench-llama: $t is missing (sh scripts/deps.sh installs it)" >&2; exit 1; }
done
rm -rf "$OUT"
t0=$(date +%s)
"$ATR" bench run examples/bench/llama.json -o "$OUT"
t1=$(date +%s)
"$ATR" bench report "$OUT" -o "$OUT/report.md"
cat "$OUT/report.md"
echo "bench-llama: $((t1 - t0)) s for the runs (prepare, builds and benchmarks); results in $OUT"
