#!/bin/sh
# run.sh - what `atr replay agent` adds to a session: the handoff between
# the llm loop and a session's tool thread (the "other" part of a
# session's time) and the runner's cost around each step (tool time less
# the steps' own latency), per held turn.
#
# usage: sh bench/replay-agent/run.sh ATR [RUNS]
#
# A trace of TURNS (default 40) llm turns (8 output tokens), each followed
# by one `true` step, in SESSIONS (default 4) concurrent sessions, against
# `atr sim serve --ttft 20 --itl 5` on 127.0.0.1; --config static-toolcall
# and --config none, both --sandbox none, RUNS (default 5) runs each,
# interleaved. Prints per configuration the median and range over runs of:
# handoff per held turn (us), runner cost per step (ms: tool_s -
# tool_exec_s over steps), the tool share of the summed completion time.
set -eu
ATR=${1:?usage: run.sh ATR [RUNS]}
RUNS=${2:-5}
TURNS=${ATR_BENCH_TURNS:-40}
SESSIONS=${ATR_BENCH_SESSIONS:-4}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
D=$(mktemp -d)
SRV=""
trap '[ -n "$SRV" ] && kill $SRV 2>/dev/null; rm -rf "$D"' EXIT
python3 - "$TURNS" "$SESSIONS" >"$D/t.ndjson" <<'PY'
import json, sys
turns, sessions = int(sys.argv[1]), int(sys.argv[2])
for s in range(sessions):
    steps = []
    for k in range(turns):
        steps.append({"kind": "llm", "input_tokens": 64 + 8 * k, "output_tokens": 8})
        steps.append({"kind": "tool", "tool": "bash", "command": "true"})
    print(json.dumps({"format": "atr-trace/1", "trace_id": "b/%d" % s, "steps": steps}))
PY
"$ATR" sim serve --ttft 20 --itl 5 --port 0 >"$D/srv.out" 2>&1 &
SRV=$!
i=0
while ! grep -q 'listening on' "$D/srv.out" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 400 ] || { echo "run.sh: server did not start" >&2; exit 1; }
    sleep 0.05
done
URL=$(sed -n 's|.*listening on \(http://[0-9.:]*\).*|\1|p' "$D/srv.out")
for r in $(seq "$RUNS"); do
    for c in static-toolcall none; do
        "$ATR" replay agent -q --sandbox none --workdir "$D" --config "$c" --rate inf \
            "$D/t.ndjson" --target "$URL" --save-result "$D/$c.$r.json"
    done
done
python3 - "$D" "$RUNS" "$TURNS" <<'PY'
import json, statistics, sys
d, runs, turns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for c in ("static-toolcall", "none"):
    hand, cost, share = [], [], []
    for r in range(1, runs + 1):
        a = json.load(open("%s/%s.%d.json" % (d, c, r)))["atr"]["agent"]
        ps = a["per_session"]
        held = sum(s["tool_steps"] for s in ps)
        hand.append(1e6 * sum(s["other_s"] for s in ps) / held)
        cost.append(1e3 * sum(s["tool_s"] - s["tool_exec_s"] for s in ps) / held)
        share.append(100 * a["split"]["tool_share"])
    f = lambda v, u: "%.1f %s (%.1f-%.1f)" % (statistics.median(v), u, min(v), max(v))
    print("%-16s handoff/turn %s, runner cost/step %s, tool share %s" %
          (c, f(hand, "us"), f(cost, "ms"), f(share, "%")))
PY
