#!/bin/sh
# tenants.sh ATR OUT [CONFIG] - the multi-tenant experiment of docs/browser.md
# on the bundled data: tenant A a browser trace (the shop flow of
# tests/data/browser, repeated 5 times: 55 browser steps with 10 page
# loads), B a bash-heavy trace (a shell "test suite": 12 CPU-bound steps),
# C a noisy neighbour (atr gen --kind noisy: memory hogs, fork storms
# within pids.max, CPU spinners). All three run together, then each alone
# (`atr replay tools --tenants`); OUT/summary.json's "tenants" gives per
# tenant the step latency distribution alone vs together (mean, p50, p95,
# sd), A's page-load degradation and B's test-time variance. Needs root
# (cgroups, namespaces) and Chromium.
set -eu
ATR=$1 OUT=$2 CONFIG=${3:-static-toolcall}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 "$ROOT/tests/data/browser/make-traces.py" "$W"
python3 "$ROOT/bench/browser/repeat.py" "$W/shop.zip" 5 "$W/A-browser.zip" "$W/site.json"
python3 - "$W/B-bash.ndjson" <<'PY'
import json, sys
steps = [{"kind": "tool", "tool": "bash", "command":
          "i=0; while [ $i -lt %d ]; do i=$((i+1)); done" % (150000 + 25000 * (k % 3))}
         for k in range(12)]
json.dump({"format": "atr-trace/1", "trace_id": "B-bash-tests", "steps": steps},
          open(sys.argv[1], "w"))
PY
"$ATR" gen --kind noisy --traces 1 --seed 3 -o "$W/C-noisy.ndjson"
"$ATR" replay tools --tenants --config "$CONFIG" --timeout 60 --browser-timeout 60 --pids-max 256 --mem-max 1G \
    "$W/A-browser.zip" "$W/B-bash.ndjson" "$W/C-noisy.ndjson" --out "$OUT"
