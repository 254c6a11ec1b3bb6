#!/bin/sh
# ab.sh - two atr builds' `convert --from openai-chat` on the bench input, interleaved.
#
# usage: sh bench/convert/ab.sh OLD NEW [SIZE_MB]      (ATR_BENCH_RUNS pairs, default 5)
#
# Uses the input run.sh generates (bench/convert/work/chat-SIZEmb.ndjson,
# default 512; generated here the same way when missing), runs OLD and NEW
# alternately, pinned to CPU 0 where allowed, and prints per build the
# median and range of wall, user and system seconds, MiB per CPU-second
# (user + system) and per user-second, and peak RSS; then whether the two
# outputs are byte-identical. On a shared VM wall time follows the other
# tenants; CPU seconds are the steadier figure.
# shellcheck disable=SC2086  # $PIN is split on purpose
set -eu

OLD=${1:?usage: ab.sh OLD NEW [SIZE_MB]}
NEW=${2:?usage: ab.sh OLD NEW [SIZE_MB]}
SIZE=${3:-512}
RUNS=${ATR_BENCH_RUNS:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$HERE/work
IN=$WORK/chat-${SIZE}mb.ndjson
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-convert-ab.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$WORK"
if [ ! -s "$IN" ]; then
    python3 "$HERE/gen_chat.py" "$IN.part" --size-mb "$SIZE" --seed 1
    mv "$IN.part" "$IN"
fi
PIN=""
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
    PIN="taskset -c 0"
fi

i=0
while [ "$i" -lt "$RUNS" ]; do
    for which in old new; do
        bin=$OLD
        [ "$which" = new ] && bin=$NEW
        /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" $PIN "$bin" convert --from openai-chat -q \
            "$IN" -o "$TMP/$which.ndjson"
        cat "$TMP/t" >>"$TMP/$which.times"
    done
    i=$((i + 1))
done

python3 - "$TMP" "$(wc -c <"$IN")" "$RUNS" <<'PY'
import statistics, sys
tmp, size, runs = sys.argv[1], int(sys.argv[2]) / 1048576, sys.argv[3]
print(f"input {size:.1f} MiB, {runs} interleaved pairs; median (min-max)")
print(f"{'build':5} {'wall s':>18} {'user s':>18} {'sys s':>18} {'MiB/cpu-s':>10} {'MiB/user-s':>10} {'RSS MiB':>8}")
for which in ("old", "new"):
    rows = [list(map(float, l.split())) for l in open(f"{tmp}/{which}.times")]
    col = lambda k: [r[k] for r in rows]
    fmt = lambda v: f"{statistics.median(v):6.2f} ({min(v):.2f}-{max(v):.2f})"
    cpu = statistics.median(r[1] + r[2] for r in rows)
    user = statistics.median(col(1))
    print(f"{which:5} {fmt(col(0)):>18} {fmt(col(1)):>18} {fmt(col(2)):>18} "
          f"{size / cpu:10.1f} {size / user:10.1f} {max(col(3)) / 1024:8.1f}")
PY
if cmp -s "$TMP/old.ndjson" "$TMP/new.ndjson"; then
    echo "outputs: byte-identical"
else
    echo "outputs: DIFFER"
    exit 1
fi
