#!/bin/sh
# run.sh - "same weights, same prompts; the difference is runtime policy"
# on a real engine: an agent workload replayed on two llama-server
# replicas of atr's own random-weight model under naive, prefix-cache and
# prefix-route, repeated with the policies interleaved, beside what the
# simulator predicts for the same workload (docs/policies.md, "On a real
# engine (llama-server)").
#
# usage: sh bench/llama-policy/run.sh ATR [OUT]
#
# OUT (default build/llama-policy) gets, per repeat K, rK.POLICY.json
# (--save-result) and rK-req.POLICY.ndjson (--requests-out, each line with
# its "replica"), the simulator's sim.POLICY.json, and table.md: mean
# TTFT, mean E2E and prefix hit rate (the server's own cached_tokens over
# prompt tokens) per policy, median of the repeats with their min-max, the
# cuts against naive (per repeat, then median and min-max), and the
# simulator's figures beside them.
#
# Environment (defaults in brackets):
#   REPEATS [3]     runs of the three policies; each repeat starts fresh
#                   servers (a server's RAM prompt cache outlives a run:
#                   the next repeat's run words would hit it)
#   SESSIONS [4]    `atr gen --kind swe` sessions (seed SEED [7])
#   TURNS [6]       llm turns kept per session (the first ones): prompts of
#                   2.3-6k tokens, so prefill matters
#   REPLY [32]      replies longer than this many tokens are cut to it (the
#                   recorded ~150 would make decode, the same under every
#                   policy, most of each request on these CPUs)
#   PRESET [tiny]   atr gen --kind gguf --preset (small: 47 MiB, slower)
#   SLOTS [2]       llama-server -np per replica (-t 1 each: one CPU each)
#   TIME_SCALE [0.05]  multiplies the recorded tool times (think time)
#   POLICY_OPTS [prefix-route.slots=SLOTS]  --policy-options of both runs
#   SIM_ATR [ATR]   the atr binary of the simulator part
#   SIM_ARGS        the simulator's set-up: where SIM_ATR has the llama.cpp
#                   engine flavour, [--engine llama.cpp --parallel SLOTS
#                   --ctx-size SLOTS*16384 --profile cpu2-tiny/atr-PRESET]
#                   (its CPU profile, calibrated on the development
#                   machine); else the closest GPU set-up,
#                   [--profile l4/qwen2.5-0.5b --max-num-seqs SLOTS]
# Exits 0 with one "skip:" line when llama-server is not built.
set -eu
atr=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${2:-$root/build/llama-policy}
REPEATS=${REPEATS:-3} SESSIONS=${SESSIONS:-4} TURNS=${TURNS:-6} SEED=${SEED:-7} REPLY=${REPLY:-32}
PRESET=${PRESET:-tiny} SLOTS=${SLOTS:-2} TIME_SCALE=${TIME_SCALE:-0.05}
SIM_ATR=${SIM_ATR:-$atr}
if "$SIM_ATR" sim run --help 2>/dev/null | grep -q 'llama\.cpp'; then
    sim_default="--engine llama.cpp --parallel $SLOTS --ctx-size $((SLOTS * 16384))"
    sim_default="$sim_default --profile cpu2-tiny/atr-$PRESET"
else
    sim_default="--profile l4/qwen2.5-0.5b --max-num-seqs $SLOTS"
fi
SIM_ARGS=${SIM_ARGS:-$sim_default}
POLICIES=naive,prefix-cache,prefix-route
# Each replica knows its slots: a replica whose slots are all busy queues
# a request that matched it (docs/policies.md, prefix-route).
POLICY_OPTS=${POLICY_OPTS:-prefix-route.slots=$SLOTS}

llama=$(sh "$root/scripts/llama.sh" --path 2>/dev/null) || {
    echo "skip: llama-server is not built (sh scripts/llama.sh builds it)"
    exit 0
}
rm -rf "$out"
mkdir -p "$out"
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done' EXIT

# start NAME: one replica on a free port; sets url once /health answers
# 200 (polled, 30 s at most). Not in a $(...) subshell: pids must reach
# this shell, or stop_all would leave the servers running.
start() {
    "$llama" -m "$out/model.gguf" --host 127.0.0.1 --port 0 --no-webui -np "$SLOTS" -t 1 \
        -c $((SLOTS * 16384)) >"$out/$1.log" 2>&1 &
    srv=$!
    pids="$pids $srv"
    deadline=$(($(date +%s) + 30))
    while [ "$(date +%s)" -lt "$deadline" ] && kill -0 "$srv" 2>/dev/null; do
        port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9][0-9]*\).*|\1|p' "$out/$1.log" |
            head -n 1)
        if [ -n "$port" ] &&
            [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then
            url="http://127.0.0.1:$port"
            return 0
        fi
        sleep 0.05
    done
    echo "llama-policy: replica $1 not healthy in 30 s: $(tail -n 3 "$out/$1.log" | tr '\n' ' ')" >&2
    return 1
}

stop_all() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    pids=""
}

"$atr" gen -q --kind gguf --preset "$PRESET" --ctx 16384 --seed 1 -o "$out/model.gguf"
"$atr" gen -q --kind swe --traces "$SESSIONS" --seed "$SEED" -o "$out/swe-full.ndjson"
# The first TURNS llm turns of each session (and the tool steps between),
# replies cut to REPLY tokens: compact prefixes refer to earlier steps
# only, so a cut keeps them valid.
python3 - "$out/swe-full.ndjson" "$out/swe.ndjson" "$TURNS" "$REPLY" <<'EOF'
import json, sys
src, dst, turns, reply = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(src) as f, open(dst, "w") as o:
    for line in f:
        t = json.loads(line)
        keep, llm = [], 0
        for s in t["steps"]:
            if s.get("kind") == "llm":
                if llm == turns:
                    break
                llm += 1
                s["output_tokens"] = min(s.get("output_tokens", reply), reply)
            keep.append(s)
        t["steps"] = keep
        o.write(json.dumps(t, separators=(",", ":")) + "\n")
EOF

schedule="--rate inf --time-scale $TIME_SCALE"
for k in $(seq 1 "$REPEATS"); do
    start "r$k-a"
    a=$url
    start "r$k-b"
    b=$url
    # shellcheck disable=SC2086
    "$atr" replay llm -q "$out/swe.ndjson" --target "$a,$b" $schedule \
        --policy "$POLICIES" --policy-options "$POLICY_OPTS" \
        --save-result "$out/r$k.json" --requests-out "$out/r$k-req.ndjson"
    stop_all
done
# shellcheck disable=SC2086
"$SIM_ATR" sim run -q "$out/swe.ndjson" $SIM_ARGS --replicas 2 $schedule \
    --policy "$POLICIES" --policy-options "$POLICY_OPTS" --save-result "$out/sim.json"

python3 - "$out" "$REPEATS" "$SIM_ARGS" >"$out/table.md" <<'EOF'
import json, statistics, sys
out, reps, sim_args = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pols = ["naive", "prefix-cache", "prefix-route"]
def fig(path):
    r = json.load(open(path))
    a = r["atr"]
    return r["mean_ttft_ms"], r["mean_e2el_ms"], 100 * a["prefix_cache_hit_rate"]
real = {p: [fig(f"{out}/r{k}.{p}.json") for k in range(1, reps + 1)] for p in pols}
sim = {p: fig(f"{out}/sim.{p}.json") for p in pols}
def med(p, i):
    return statistics.median(x[i] for x in real[p])
def spread(p, i, d):
    v = [x[i] for x in real[p]]
    return f"{med(p, i):.{d}f}" + (f" ({min(v):.{d}f}-{max(v):.{d}f})" if reps > 1 else "")
def cut(n, v):
    return f"{100 * (n - v) / n:.0f}%" if n > 0 else "-"
def cuts(p, i):
    # per repeat (the policies of one repeat ran back to back), median (min-max)
    c = sorted(100 * (n[i] - x[i]) / n[i] for n, x in zip(real["naive"], real[p]))
    return f"{statistics.median(c):.0f}%" + (f" ({c[0]:.0f}-{c[-1]:.0f}%)" if reps > 1 else "")
print(f"real: 2 llama-server replicas, median of {reps} interleaved repeat(s) (min-max); "
      f"sim: atr sim run {sim_args} --replicas 2")
print()
print("| policy | mean TTFT ms | mean E2E ms | hit rate | TTFT cut | E2E cut "
      "| sim TTFT ms | sim E2E ms | sim hit | sim TTFT cut | sim E2E cut |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for p in pols:
    tc = "-" if p == "naive" else cuts(p, 0)
    ec = "-" if p == "naive" else cuts(p, 1)
    stc = "-" if p == "naive" else cut(sim["naive"][0], sim[p][0])
    sec = "-" if p == "naive" else cut(sim["naive"][1], sim[p][1])
    print(f"| {p} | {spread(p, 0, 1)} | {spread(p, 1, 1)} | {spread(p, 2, 1)}% | {tc} | {ec} "
          f"| {sim[p][0]:.1f} | {sim[p][1]:.1f} | {sim[p][2]:.1f}% | {stc} | {sec} |")
EOF
cat "$out/table.md"
