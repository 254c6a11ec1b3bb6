#!/bin/sh
# ci-parallel.sh ATR [ROOT] - the black-box suite twice at once, from two temp
# copies of the tree, as two clones' `make check` on one machine would run:
# both must pass, so no test may see another run's files or processes.
set -u
ATR=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "${2:-$(dirname "$0")/..}" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# copy N: clone-like tree at $W/N/main (the working tree's files, not builds)
# beside a link to the one shared/, which run.sh reads as ../shared.
copy() {
    mkdir -p "$W/$1/main"
    git -C "$ROOT" ls-files -co --exclude-standard -z |
        tar -C "$ROOT" --null -T - --ignore-failed-read -cf - | tar -C "$W/$1/main" -xf -
    [ ! -d "$ROOT/../shared" ] || ln -s "$(cd "$ROOT/../shared" && pwd)" "$W/$1/shared"
    # what `make check` installed in a clone (git ignores it): the Node SDK
    [ ! -d "$ROOT/tests/node/node_modules" ] || cp -a "$ROOT/tests/node/node_modules" "$W/$1/main/tests/node/"
}

copy 1 && copy 2 || { echo "ci-parallel: cannot copy $ROOT" >&2; exit 1; }
sh "$W/1/main/tests/cli/run.sh" "$ATR" "$W/1/main" >"$W/1.log" 2>&1 &
p1=$!
sh "$W/2/main/tests/cli/run.sh" "$ATR" "$W/2/main" >"$W/2.log" 2>&1 &
p2=$!
wait $p1; rc1=$?
wait $p2; rc2=$?

failed=0
for n in 1 2; do
    eval rc=\$rc$n
    echo "ci-parallel: copy $n: $(tail -n 1 "$W/$n.log")"
    [ "$rc" -ne 0 ] || continue
    failed=1
    echo "ci-parallel: copy $n failed (exit $rc):" >&2
    tail -n 40 "$W/$n.log" >&2
done
exit $failed
