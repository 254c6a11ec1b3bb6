#!/bin/sh
# image.sh ATR N [K] - replay agent --image on a DAG of K sub-agents (a
# turn, a fork into K sub-agents with one turn and one `true` step each in
# /testbed, a join turn) against atr sim serve, N runs: session
# completion and tool time (medians, ranges). Needs root, podman, busybox.
set -eu
ATR=$1
N=${2:-7}
K=${3:-4}
D=$(mktemp -d)
IMG=atrbenchdag$$
"$ATR" sim serve --ttft 20 --itl 5 --port 0 >"$D/srv.out" 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null; podman rmi -f $IMG >/dev/null 2>&1; rm -rf "$D"' EXIT
mkdir -p "$D/rf/bin" "$D/rf/testbed"
cp /bin/busybox "$D/rf/bin/"
for l in sh true; do ln -s busybox "$D/rf/bin/$l"; done
tar -C "$D/rf" -cf "$D/rf.tar" . && podman import --change WORKDIR=/testbed "$D/rf.tar" "$IMG" >/dev/null 2>&1
python3 - "$K" >"$D/dag.ndjson" <<'PY'
import json, sys
k = int(sys.argv[1])
st = [{"kind": "llm", "input_tokens": 16, "output_tokens": 2}]
for i in range(k):
    st.append({"kind": "llm", "input_tokens": 16, "output_tokens": 2, "parents": [0], "agent": f"s{i}"})
for i in range(k):
    st.append({"kind": "tool", "tool": "bash", "command": "true", "cwd": "/testbed",
               "parents": [1 + i], "agent": f"s{i}"})
st.append({"kind": "llm", "input_tokens": 16, "output_tokens": 2, "parents": list(range(1 + k, 1 + 2 * k))})
print(json.dumps({"format": "atr-trace/1.1", "trace_id": "bench/dag-image", "steps": st}))
PY
i=0
while ! grep -q 'listening on' "$D/srv.out"; do
    i=$((i + 1)); [ $i -lt 200 ] || { echo "server did not start" >&2; exit 1; }
    sleep 0.05
done
PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$D/srv.out")
for r in $(seq "$N"); do
    "$ATR" replay agent -q --workdir "$D" --image "$IMG" "$D/dag.ndjson" \
        --target "http://127.0.0.1:$PORT" --save-result "$D/r$r.json" --requests-out "$D/q$r.ndjson"
done
python3 - "$D" "$N" <<'PY'
import json, statistics as st, sys
d, n = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, n + 1):
    s = json.load(open(f"{d}/r{r}.json"))["atr"]["agent"]["per_session"][0]
    t = [json.loads(x) for x in open(f"{d}/q{r}.ndjson")]
    assert all(x["exit_code"] == 0 for x in t if x["kind"] == "tool"), t
    rows.append((s["completion_s"], s["tool_s"]))
for i, name in enumerate(["completion_s", "tool_s"]):
    v = [x[i] for x in rows]
    print(f"{name}: median {st.median(v):.4f} range {min(v):.4f}-{max(v):.4f}")
PY
