#!/bin/sh
# run.sh - per-decision cost of the `learned` policy (issue 5: under 5
# microseconds), beside a pure-Python forward pass of the same model.
#
# usage: sh bench/router/run.sh ATR     (from the repository root, after
#                                        make build)
#
# Generates 64 `atr gen --kind swe` traces (seed 5), trains a router on
# them (rtx3090/qwen3-4b-awq, seed 3), builds bench/router/decide.c with cc
# against build/libatrlib.a, and times 1,000,000 decisions cycling over the
# workload's requests: a full decision (features, MLP, every candidate
# policy shadowing the request: decide + started + finished) and the bare
# forward pass (features + MLP argmax). reference.py does the forward pass
# in pure Python on the same feature vectors and checks its predictions
# agree with C. Median of RUNS (3) runs. Leaves no files behind.
set -eu

ATR=${1:?usage: run.sh ATR}
RUNS=${ATR_BENCH_RUNS:-3}
N=${ATR_BENCH_DECISIONS:-1000000}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$(dirname "$ATR")/libatrlib.a
CC=${CC:-cc}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-router.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

"$ATR" gen -q --kind swe --traces 64 --seed 5 -o "$TMP/w.ndjson"
"$ATR" router train "$TMP/w.ndjson" --profile rtx3090/qwen3-4b-awq --seed 3 \
    -o "$TMP/m.json" >/dev/null
# shellcheck disable=SC2046
$CC -O2 -std=c11 -D_GNU_SOURCE -I "$ROOT/src" "$ROOT/bench/router/decide.c" "$LIB" \
    $(pkg-config --libs zlib libzstd libxxhash libzip libevent libcurl) -lm -o "$TMP/decide"

: >"$TMP/c"
: >"$TMP/py"
for _ in $(seq "$RUNS"); do
    "$TMP/decide" "$TMP/m.json" "$TMP/w.ndjson" "$N" "$TMP/features" >>"$TMP/c"
    python3 "$ROOT/bench/router/reference.py" "$TMP/m.json" "$TMP/features" >>"$TMP/py"
done
python3 - "$TMP/c" "$TMP/py" <<'PY'
import statistics, sys
c = [l.split() for l in open(sys.argv[1]) if l.strip()]
py = [l.split() for l in open(sys.argv[2]) if l.strip()]
dec = statistics.median(float(r[1]) for r in c)
fwd = statistics.median(float(r[2]) for r in c)
pyf = statistics.median(float(r[1]) for r in py)
bad = max(int(r[2]) for r in py)
print("%-34s %12s %14s" % ("", "ns/decision", "vs Python"))
print("%-34s %12.0f %14s" % ("atr learned decide (4 shadows)", dec, "%.0fx faster" % (pyf / dec)))
print("%-34s %12.0f %14s" % ("atr features + MLP forward", fwd, "%.0fx faster" % (pyf / fwd)))
print("%-34s %12.0f %14s" % ("Python forward pass (reference)", pyf, "1x"))
rt = statistics.median(float(r[4]) for r in c)
print("%-34s %12.0f %14s" % ("atr prefix-route, 4 replicas", rt, "-"))
print("decisions per run: %s; Python/C prediction mismatches: %d" % (c[0][0], bad))
PY
