#!/bin/sh
# run.sh ATR [REPS] - the dynamic controller's three arms side by side on one
# bursty step (atr-memhog touching 256 MiB in 0.3 s over a 32 MiB target,
# ceiling 1 GiB), interleaved (arm order rotates every repetition), plus
# the same step without a controller (static-toolcall) for the slowdown.
# Prints one table: reaction p50/p99 (pooled raises), step latency median
# and its ratio to static, holds, OOM kills. Root, on the host's cgroups.
set -eu
ATR=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
REPS=${2:-10}
HOG=$(dirname "$ATR")/atr-memhog
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
mkdir "$D/wd"
printf '{"format":"atr-trace/1","trace_id":"burst","steps":[{"kind":"tool","tool":"bash","command":"%s -m 256 -r 300"}]}\n' "$HOG" >"$D/burst.ndjson"
arms="static psi-poll psi-trigger ebpf"
i=0
while [ "$i" -lt "$REPS" ]; do
    for k in $arms; do
        if [ "$k" = static ]; then
            set -- --config static-toolcall
        else
            set -- --config dynamic --controller "$k" --mem-high 32M
        fi
        "$ATR" replay tools -q --sandbox none --mem-max 1G --workdir "$D/wd" "$@" "$D/burst.ndjson" --out "$D/$k-$i"
        cat "$D/$k-$i/metrics.jsonl" >>"$D/$k.jsonl"
    done
    arms="$(echo $arms | cut -d' ' -f2-) $(echo $arms | cut -d' ' -f1)"
    i=$((i + 1))
done
python3 - "$D" <<'PY'
import json, statistics, sys
d = sys.argv[1]
def pct(v, p):
    v = sorted(v)
    if not v: return float('nan')
    k = (len(v) - 1) * p / 100
    f = int(k); c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)
rows = {k: [json.loads(l) for l in open(f"{d}/{k}.jsonl")] for k in ["static", "psi-poll", "psi-trigger", "ebpf"]}
base = statistics.median(m["latency_ms"] for m in rows["static"])
print("| arm | runs | raises | reaction p50 / p99 us | bound p99 us | step latency median ms | vs static | holds | held ms (median) | peak MiB | OOM kills |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for k, ms in rows.items():
    r = [x for m in ms for x in (m.get("ctl_reaction_us") or [])]
    b = [x for m in ms for x in (m.get("ctl_reaction_bound_us") or [])]
    lat = statistics.median(m["latency_ms"] for m in ms)
    held = statistics.median(m.get("ctl_held_ms") or 0 for m in ms)
    print(f"| {k} | {len(ms)} | {len(r)} | {pct(r,50):.1f} / {pct(r,99):.1f} | {pct(b,99):.1f} | {lat:.1f} | {lat/base:.2f}x | "
          f"{sum(m.get('ctl_holds') or 0 for m in ms)} | {held:.2f} | {max(m['max_rss_mb'] for m in ms):.0f} | {sum(m['oom_kills'] for m in ms)} |")
PY
