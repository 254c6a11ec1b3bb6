#!/bin/sh
# bench/bench-image/run.sh ATR [RUNS] - what an "image" variant of `atr
# bench run` costs beside the same server on the host: the same `atr sim
# serve` started as a host command and inside a busybox image (the host's
# /usr mounted read-only, podman, the host's network), RUNS rounds of one
# bench run holding both variants (so they alternate), then per variant the
# medians of startup (start to ready), teardown (SIGTERM to port free) and
# the server group's memory peak, from the result files. Root and podman.
set -eu
ATR=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
RUNS=${2:-5}
W=$(mktemp -d)
trap 'podman rmi -f atrbench-srv >/dev/null 2>&1; rm -rf "$W"' EXIT
mkdir -p "$W/rf/bin" "$W/rf/tmp"
cp /bin/busybox "$W/rf/bin/" && ln -s busybox "$W/rf/bin/sh"
ln -s usr/lib "$W/rf/lib" && ln -s usr/lib64 "$W/rf/lib64"
tar -C "$W/rf" -cf "$W/rf.tar" . && podman import "$W/rf.tar" atrbench-srv >/dev/null 2>&1
ATRDIR=$(dirname "$ATR")
SERVE="atr sim serve --ttft 30 --itl 8 --time-scale 0.1 --port {port} --model {model}"
cat >"$W/spec.json" <<EOF
{"format": "atr-bench-spec/1", "port": 0,
 "variants": {
  "baseline": {"server": "$SERVE", "ready_url": "http://127.0.0.1:{port}/health"},
  "human": {"image": "atrbench-srv", "run_args": ["-v", "/usr:/usr:ro", "-v", "$ATRDIR:/atr:ro"],
            "server": "/atr/$SERVE", "ready_url": "http://127.0.0.1:{port}/health"}},
 "workload": {"mode": "serving", "generate": {"requests": 10, "input_tokens": 100, "output_tokens": 16}},
 "items": [{"human_commit": "a1b2c3d4", "parent_commit": "p", "model": "m"}]}
EOF
for i in $(seq "$RUNS"); do "$ATR" bench run -q "$W/spec.json" -o "$W/r$i"; done
python3 - "$W" "$RUNS" <<'PY'
import json, statistics, sys
w, runs = sys.argv[1], int(sys.argv[2])
rows = {}
for v, label in (("baseline", "host command"), ("human", "image (podman)")):
    rs = [json.load(open(f"{w}/r{i}/results/a1b2c3d4_{v}_result.json")) for i in range(1, runs + 1)]
    assert all(r["outcome"] == "success" for r in rs), [r["error"] for r in rs]
    def fig(xs, scale, digits):   # median [min .. max]
        xs = [x * scale for x in xs]
        return f"{statistics.median(xs):.{digits}f} [{min(xs):.{digits}f} .. {max(xs):.{digits}f}]"
    rows[label] = (fig([r["timing"]["startup_s"] for r in rs], 1000, 0),
                   fig([r["timing"]["teardown_s"] for r in rs], 1000, 0),
                   fig([r["server_exit"]["memory_peak_bytes"] for r in rs], 2**-20, 1))
print(f"| start | startup ms, median [min .. max] of {runs} | teardown ms | memory peak MiB |")
print("|---|---:|---:|---:|")
for k, (s, t, m) in rows.items():
    print(f"| {k} | {s} | {t} | {m} |")
PY
