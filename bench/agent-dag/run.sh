#!/bin/sh
# run.sh ATR N - replay agent on tests/data/agent/dag.ndjson (a fork into
# two sub-agents, a `sleep 0.3` each, a join) against atr sim serve, N
# runs: session completion vs the branches' sum, the sleeps' overlap, and
# the join's lag after the last step ended (medians and ranges).
set -eu
ATR=$1
N=${2:-7}
D=$(mktemp -d)
"$ATR" sim serve --ttft 20 --itl 5 --port 0 >"$D/srv.out" 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$D"' EXIT
i=0
while ! grep -q 'listening on' "$D/srv.out"; do
    i=$((i + 1)); [ $i -lt 200 ] || { echo "server did not start" >&2; exit 1; }
    sleep 0.05
done
PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$D/srv.out")
for k in $(seq "$N"); do
    "$ATR" replay agent --sandbox none --workdir "$D" tests/data/agent/dag.ndjson \
        --target "http://127.0.0.1:$PORT" --rate inf -q --save-result "$D/r$k.json" \
        --requests-out "$D/q$k.ndjson"
done
python3 - "$D" "$N" <<'PY'
import json, statistics as st, sys
d, n = sys.argv[1], int(sys.argv[2])
rows = []
for k in range(1, n + 1):
    s = json.load(open(f"{d}/r{k}.json"))["atr"]["agent"]["per_session"][0]
    l = [json.loads(x) for x in open(f"{d}/q{k}.ndjson")]
    t = [x for x in l if x["kind"] == "tool"]
    q = {x["turn"]: x for x in l if x["kind"] == "llm"}
    br = sum(x["end_s"] - x["start_s"] for x in t) + sum(q[j]["end_s"] - q[j]["sent_s"] for j in (1, 2))
    ov = min(x["end_s"] for x in t) - max(x["start_s"] for x in t)
    rows.append((s["completion_s"], br, ov, q[3]["sent_s"] - max(x["end_s"] for x in t)))
for i, name in enumerate(["completion_s", "branches_sum_s", "sleep_overlap_s", "join_lag_s"]):
    v = [r[i] for r in rows]
    print(f"{name}: median {st.median(v):.4f} range {min(v):.4f}-{max(v):.4f}")
PY
