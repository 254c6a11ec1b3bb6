#!/bin/sh
# instr.sh - instructions per request of `atr replay llm` against the C
# stub, marginal: (I(5000 requests) - I(500 requests)) / 4500 counted by
# callgrind, so start-up is out and reading the trace, the summary and
# the outputs are in (BENCHMARKS.md, issue 33 point 2).
#
# usage: sh bench/replay-client/instr.sh ATR
# Prints the two counts and the marginal figure; the callgrind files stay
# in $WORK (printed) for callgrind_annotate.
set -eu

[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: instr.sh ATR" >&2; exit 2; }
ATR=$1
command -v valgrind >/dev/null || { echo "instr.sh: valgrind is missing" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-instr.XXXXXX")
STUB="" SRV=""
cleanup() {
    [ -n "$STUB" ] && kill "$STUB" 2>/dev/null
    [ -n "$SRV" ] && kill "$SRV" 2>/dev/null
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2034
PIN_SERVER=""
# shellcheck source=bench/replay-client/servers.sh
. "$HERE/servers.sh"
start_sim_server
start_stub
kill "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null || true
SRV=""

for n in 500 5000; do
    "$ATR" gen --kind requests --traces "$n" --input-tokens 32 --output-tokens 8 --seed 1 \
        -o "$WORK/w$n.ndjson" 2>/dev/null
    stub_up
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.$n.out" "$ATR" replay llm \
        "$WORK/w$n.ndjson" --target "$URL" --model atr-sim --rate 500 --arrival constant -q \
        >/dev/null 2>"$WORK/vg.$n.err"
    stub_down
done
i500=$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$WORK/vg.500.err")
i5000=$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$WORK/vg.5000.err")
echo "instructions: 500 requests $i500, 5000 requests $i5000," \
     "marginal $(( (i5000 - i500) / 4500 )) a request (callgrind files in $WORK)"
