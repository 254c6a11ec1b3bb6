#!/bin/sh
# run.sh ATR ROOT [NAME...] - black-box tests: every tests/cli/test-*.sh (or
# only test-NAME.sh), against the real binary, with golden files under
# tests/data. Prints "N passed, N failed".
set -u
ATR=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$2" && pwd)
DATA=$ROOT/tests/data
REAL=$ROOT/../shared/data/real
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export ATR ROOT DATA REAL T
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
