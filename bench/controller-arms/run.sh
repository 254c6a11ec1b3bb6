#!/bin/sh
# run.sh ATR [REPS [shapes]] - the dynamic controller's arms side by side through
# `atr experiment timescale`: a bursty tenant (3 steps of atr-memhog
# touching 512 MiB in 0.4 s, over a 32 MiB target, ceiling 1 GiB) beside a
# victim tenant (30 steps of 8 MiB and 10 ms of CPU), REPS interleaved runs
# per arm (default 10). Prints the table; the run's folder is kept in
# $TMPDIR and named at the end. Root, on the host's cgroups.
# "shapes": instead, the seed's bursty class as atr-memhog shapes, one
# trace each: pytest (10 short steps of 64 MiB and 20 ms of CPU), make (3
# steps of three 96 MiB children at once) and npm install (2 steps ramping
# to 384 MiB over 1.5 s).
# "multitenant": the same two tenants through `atr experiment multitenant`
# (each also alone: per-tenant slowdown), then where the victim's time went:
# its step latency summed against its CPU and memory stall (PSI "some").
# "weights": the same two tenants shared under static-toolcall, REPS
# interleaved runs each with equal CPU weights and with the victim at 10x
# (--tenant-weights 100,1000): the victim's p50/p99 and CPU stall.
set -eu
ATR=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
REPS=${2:-10}
HOG=$(dirname "$ATR")/atr-memhog
D=$(mktemp -d)
step() { printf '{"kind":"tool","tool":"bash","command":"%s"}' "$1"; }
steps() { n=$1; shift; i=0; sep=""; while [ "$i" -lt "$n" ]; do printf '%s' "$sep"; step "$*"; sep=,; i=$((i + 1)); done; }
printf '{"format":"atr-trace/1","trace_id":"burst","steps":[%s]}\n' "$(steps 3 "$HOG -m 512 -r 400")" >"$D/burst.ndjson"
printf '{"format":"atr-trace/1","trace_id":"victim","steps":[%s]}\n' "$(steps 30 "$HOG -m 8 -c 10")" >"$D/victim.ndjson"
if [ "${3:-}" = weights ]; then
    r=0
    while [ "$r" -lt "$REPS" ]; do
        for w in 100,100 100,1000; do
            "$ATR" replay tools -q --config static-toolcall --mem-max 1G --sandbox none "$D/burst.ndjson" --tenants --no-baseline --tenant-weights "$w" "$D/victim.ndjson" --out "$D/w-$w-$r" >/dev/null
        done
        r=$((r + 1))
    done
    python3 - "$D" <<'PY'
import glob, json, sys
def pct(v, p):   # numpy's linear
    k = (len(v) - 1) * p / 100; f = int(k); c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)
for w in ("100,100", "100,1000"):
    lat, cpu = [], 0.0
    for f in glob.glob(f"{sys.argv[1]}/w-{w}-*/metrics.jsonl"):
        for line in open(f):
            o = json.loads(line)
            if o["trace_id"] == "victim":
                lat.append(o["latency_ms"]); cpu += o.get("cpu_pressure_some_ms") or 0
    lat.sort()
    print(f"weights {w:9s} victim steps {len(lat)}  p50 {pct(lat, 50):6.1f} ms  p99 {pct(lat, 99):6.1f} ms  cpu stall {cpu:7.0f} of {sum(lat):7.0f} ms")
PY
elif [ "${3:-}" = multitenant ]; then
    "$ATR" experiment multitenant --reps "$REPS" --mem-high 32M --mem-max 1G --victim "$D/victim.ndjson" "$D/burst.ndjson" --out "$D/exp"
    python3 - "$D/exp/summary.json" <<'PY'
import json, sys
print("\narm              victim ms  cpu stall  mem stall  cpu stall share")
for a in json.load(open(sys.argv[1]))["configs"]:
    if a.get("skipped"):
        continue
    t, c, m = a["victim_latency_ms_total"], a["victim_cpu_stall_ms_total"], a["victim_mem_stall_ms_total"]
    print(f"{a['arm']:15s} {t:10.1f} {c:10.1f} {m:10.1f} {100 * c / t:14.1f} %")
PY
elif [ "${3:-}" = shapes ]; then
    trace() { printf '{"format":"atr-trace/1","trace_id":"%s","steps":[%s]}\n' "$1" "$2"; }
    {
        trace pytest-shape "$(steps 10 "$HOG -m 64 -r 50 -c 20")"
        trace make-shape "$(steps 3 "$HOG -m 96 -r 200 & $HOG -m 96 -r 200 & $HOG -m 96 -r 200 & wait")"
        trace npm-shape "$(steps 2 "$HOG -m 384 -r 1500")"
    } >"$D/shapes.ndjson"
    "$ATR" experiment timescale --reps "$REPS" --mem-high 32M --mem-max 1G "$D/shapes.ndjson" --out "$D/exp"
else
    "$ATR" experiment timescale --reps "$REPS" --mem-high 32M --mem-max 1G --victim "$D/victim.ndjson" "$D/burst.ndjson" --out "$D/exp"
fi
echo "runs in $D/exp"
