#!/bin/sh
# run.sh ATR ROOT [NAME...] - black-box tests: every tests/cli/test-*.sh (or
# only test-NAME.sh), against the real binary, with golden files under
# tests/data and real traces in ROOT/../shared/data. Each run has its own
# TMPDIR. Prints "N passed, N failed".
set -u
ATR=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$2" && pwd)
# Real traces live beside the checkout, not in it: without them every test
# that reads one would fail on its own, so say it once and stop.
if [ ! -d "$ROOT/../shared/data" ]; then
    echo "run.sh: the tests read ../shared/data, and $ROOT/../shared/data is missing" >&2
    exit 1
fi
DATA=$ROOT/tests/data
REAL=$ROOT/../shared/data/real
T=$(mktemp -d)
[ -n "${ATR_TEST_KEEP:-}" ] && echo "keeping $T" || trap 'rm -rf "$T"' EXIT
# Hermetic: atr's temporary files (and those of the tools the tests run) go
# below this run's own folder, so two suites at once never see each other's.
TMPDIR=$T/tmp
mkdir "$TMPDIR"
export ATR ROOT DATA REAL T TMPDIR
PASSED=0 FAILED=0
. "$ROOT/tests/cli/lib.sh"
shift 2
tests=""
for n in "$@"; do tests="$tests $ROOT/tests/cli/test-$n.sh"; done
[ -n "$tests" ] || tests=$(echo "$ROOT"/tests/cli/test-*.sh)
for t in $tests; do
    cd "$T" || exit 1
    . "$t"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
