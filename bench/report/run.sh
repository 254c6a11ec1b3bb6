#!/bin/sh
# run.sh - `atr report`'s size and browser load time at 100, 1 000 and
# 10 000 traces (issue 14's goal: < 10 MB and < 2 s at 10 000).
#
# usage: sh bench/report/run.sh ATR [RUNS]
#
# Per size: `atr gen --kind swe --traces N --seed 9`, `atr report` of it
# (wall time, peak RSS), then tests/node/report-load.mjs in headless Debian
# Chromium: RUNS (3) page loads to the "everything drawn" mark, and the
# time to open the first trace's timeline; medians printed. Leaves no files.
set -eu
ATR=${1:?usage: run.sh ATR [RUNS]}
RUNS=${2:-3}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-report.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

echo "| traces | report size | \`atr report\` wall / peak RSS | Chromium load, median | first timeline, median |"
echo "|---:|---:|---:|---:|---:|"
for n in 100 1000 10000; do
    "$ATR" gen -q --kind swe --traces $n --seed 9 -o "$TMP/w.ndjson"
    /usr/bin/time -f "%e %M" -o "$TMP/time" "$ATR" report -o "$TMP/r.html" "$TMP/w.ndjson"
    (cd "$ROOT/tests/node" && node report-load.mjs "$TMP/r.html" "$RUNS") >"$TMP/load"
    python3 - "$n" "$TMP" <<'PY'
import json, os, statistics, sys
n, tmp = sys.argv[1], sys.argv[2]
wall, rss = open(f"{tmp}/time").read().split()
runs = [json.loads(l) for l in open(f"{tmp}/load")]
load = statistics.median(r["loadMs"] for r in runs)
tl = statistics.median(r["timelineMs"] for r in runs)
print(f"| {int(n):,} | {os.path.getsize(tmp + '/r.html') / 1e6:.1f} MB | {float(wall):.2f} s / {int(rss) // 1024} MB "
      f"| {load:.0f} ms | {tl:.0f} ms |".replace(",", " "))
PY
done
