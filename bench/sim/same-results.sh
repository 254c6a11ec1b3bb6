#!/bin/sh
# same-results.sh BASE NEW - whether two atr binaries simulate alike: the
# speed work on the simulator (issue 16) must leave every result as it was.
#
# Runs each line of bench/sim/golden/cases (light, busy and all-at-once
# loads, heavy eviction and preemption, SGLang's schedule, replicas under
# prefix-route, the prefix-cache, compaction and max-tokens policies, no
# prefix cache with a concurrency limit and goodput, a small batch, vLLM V0's
# scheduler offline) on a seeded `atr gen --kind swe` workload through both binaries, the
# first 200 requests of the real Mooncake trace (tests/data/mooncake: its
# own block ids) in both flavours with a small KV cache, plus the
# 10,694-request workload of run.sh at 0.5/s, 5/s and all at once and
# the whole Mooncake trace (../shared/data/real/mooncake, when there) with
# FULL=1, and compares their digests (golden/digest.py: the printed block,
# every result JSON figure, the requests and iterations files by value).
# The two must share a cost model (build BASE from the same tree without
# the change under test). Prints one line per case; exit 1 on a difference.
set -eu
BASE=${1:?usage: same-results.sh BASE NEW}
NEW=${2:?usage: same-results.sh BASE NEW}
D=$(cd "$(dirname "$0")" && pwd)/golden
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-same.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
"$NEW" gen -q --kind swe --traces 24 --seed 3 -o "$TMP/w.ndjson"
cases=$(grep -v '^#' "$D/cases")
cases="$cases
mooncake MOON --profile l4/qwen3-4b --rate inf --skip-oversized
mooncake-sglang MOON --profile l4/qwen3-4b --rate inf --skip-oversized --engine sglang"
MOON=$D/../../../tests/data/mooncake/synthetic_trace_head200.jsonl
SHARED_MOON=$D/../../../../shared/data/real/mooncake/synthetic_trace.jsonl
if [ "${FULL:-0}" = 1 ]; then
    "$NEW" gen -q --kind swe --traces 350 --seed 4 -o "$TMP/big.ndjson"
    cases="$cases
big-0.5 BIG --profile h100/llama-3.1-8b --rate 0.5
big-5 BIG --profile h100/llama-3.1-8b --rate 5
big-inf BIG --profile h100/llama-3.1-8b --rate inf"
    [ -e "$SHARED_MOON" ] && cases="$cases
mooncake-all SHARED_MOON --profile l4/qwen3-4b --skip-oversized
mooncake-all-sglang SHARED_MOON --profile l4/qwen3-4b --skip-oversized --engine sglang"
fi
echo "$cases" | while read -r name opts; do
    [ -n "$name" ] || continue
    w=$TMP/w.ndjson
    case $opts in
    BIG*) w=$TMP/big.ndjson opts=${opts#BIG } ;;
    MOON*) w=$MOON opts=${opts#MOON } ;;
    SHARED_MOON*) w=$SHARED_MOON opts=${opts#SHARED_MOON } ;;
    esac
    # shellcheck disable=SC2086 # the options are words by design
    if ! sh "$D/case.sh" "$BASE" "$w" "$TMP/a-$name" $opts >"$TMP/a.digest" ||
       ! sh "$D/case.sh" "$NEW" "$w" "$TMP/b-$name" $opts >"$TMP/b.digest"; then
        echo "FAILED     $name"
        echo 1 >"$TMP/bad"
    elif python3 "$D/check.py" "$TMP/a.digest" "$TMP/b.digest" >"$TMP/diff" &&
       python3 "$D/check.py" "$TMP/b.digest" "$TMP/a.digest" >>"$TMP/diff"; then
        echo "same       $name"
    else
        echo "DIFFERENT  $name"; head -n 5 "$TMP/diff"
        echo 1 >"$TMP/bad"
    fi
done
[ ! -e "$TMP/bad" ]
