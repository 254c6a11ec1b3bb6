#!/bin/sh
# no-shared.sh ATR ROOT - run.sh on a checkout without ../shared fails once,
# early, with one line that names ../shared/data (not one failure per test).
set -u
ATR=$1 ROOT=$2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/main"
ln -s "$ROOT/tests" "$W/main/tests"   # the same tests, no sibling shared/
sh "$ROOT/tests/cli/run.sh" "$ATR" "$W/main" >"$W/out" 2>"$W/err"
rc=$?
bad=""
[ "$rc" -ne 0 ] || bad="exit 0;"
[ "$(wc -l <"$W/err")" -eq 1 ] || bad="$bad not one line on stderr;"
grep -q 'the tests read \.\./shared/data' "$W/err" || bad="$bad no mention of ../shared/data;"
[ ! -s "$W/out" ] || bad="$bad output on stdout;"
if [ -n "$bad" ]; then
    echo "FAIL no-shared:$bad" >&2
    head -c 600 "$W/err" >&2
    exit 1
fi
echo "no-shared: ok"
