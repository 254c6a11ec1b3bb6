#!/bin/sh
# run.sh ATR ROOT - black-box tests: every tests/cli/test-*.sh, against the
# real binary, with golden files under tests/data. Prints "N passed, N failed".
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
for t in "$ROOT"/tests/cli/test-*.sh; do
    cd "$T" || exit 1
    . "$t"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
