#!/bin/sh
# run.sh ROOT - the include graph of src/ keeps docs/architecture.md's
# layering; and the check itself catches an upward, a sideways and an
# unknown edge (on a small tree made here), so a broken check cannot pass.
set -u
root=$(cd "$1" && pwd)
check="$root/scripts/check-layering.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0

sh "$check" "$root" || fail=1

# A tree with faults: sched includes sim (above it), sim includes a
# folder that is no module, and src/extra is missing from the picture.
mkdir -p "$t/docs" "$t/src/sched" "$t/src/sim" "$t/src/gen" "$t/src/extra"
cat > "$t/docs/architecture.md" <<'MD'
<!-- layers -->
```
sim      top
sched    middle
gen      bottom
```
<!-- /layers -->
MD
printf '#include "sim/engine.h"\n#include "gen/rng.h"\n' > "$t/src/sched/a.c"
printf '#include "sched/heap.h"\n#include "nosuch/x.h"\n' > "$t/src/sim/b.c"
printf '#include <stdio.h>\n' > "$t/src/gen/c.c"
out=$(sh "$check" "$t")
rc=$?
expect() {
    if ! echo "$out" | grep -qF "$1"; then
        echo "layering self-test: the check did not report: $1"
        fail=1
    fi
}
[ $rc -ne 0 ] || { echo "layering self-test: faults passed the check"; fail=1; }
expect "src/sched/a.c:1: sched includes sim (above it)"
expect "src/sim/b.c:2: sim includes nosuch, which is not a module"
expect "src/extra: not in docs/architecture.md's layers"
if echo "$out" | grep -q 'includes gen\|includes sched'; then
    echo "layering self-test: a downward include was reported"; fail=1
fi
exit $fail
