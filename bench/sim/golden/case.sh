#!/bin/sh
# case.sh ATR WORKLOAD DIR OPTIONS... - one same-results.sh case: runs
# `atr sim run WORKLOAD OPTIONS` writing its result JSON, requests and (when
# OPTIONS hold the word ITER) iterations into DIR, and prints their digest
# (digest.py: the printed block, the JSON figures, the NDJSON values).
set -eu
ATR=$1 W=$2 D=$3
shift 3
rm -rf "$D" && mkdir -p "$D/out"
args=""
for a in "$@"; do
    [ "$a" = ITER ] && a=$D/out/iter.ndjson
    args="$args $a"
done
# shellcheck disable=SC2086 # the options are words by design
"$ATR" sim run "$W" $args --save-result "$D/out/result.json" --requests-out "$D/out/req.ndjson" \
    >"$D/block"
python3 "$(dirname "$0")/digest.py" "$D/out" <"$D/block"
