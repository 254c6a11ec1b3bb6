#!/bin/sh
# run.sh - `atr convert --from openai-chat` vs the Python reference, side by side.
#
# usage: sh bench/convert/run.sh ATR [SIZE_MB]      (make bench runs it)
#
# Generates SIZE_MB (default 512) of OpenAI-chat trajectories once into
# bench/convert/work/ (kept for the next run), converts it with atr (median
# of ATR_BENCH_RUNS runs, default 3) and with reference.py (once if it takes
# over 30 s), both pinned to CPU 0, and prints MB/s, peak RSS and the ratio.
# Peak memory independence: atr also converts the first quarter of the file
# and the two peaks are compared. Outputs are deleted at the end.
# shellcheck disable=SC2046,SC2086  # $PIN and $(median ...) are split on purpose
set -eu

ATR=${1:?usage: run.sh ATR [SIZE_MB]}
SIZE=${2:-512}
RUNS=${ATR_BENCH_RUNS:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$HERE/work
PY=${PYTHON:-python3}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
[ -x "$ATR" ] || { echo "run.sh: $ATR: not an executable" >&2; exit 1; }
mkdir -p "$WORK"

IN=$WORK/chat-${SIZE}mb.ndjson
QUARTER=$WORK/chat-${SIZE}mb-quarter.ndjson
OUT=$WORK/out.ndjson
TIMES=$WORK/time.txt
trap 'rm -f "$OUT" "$TIMES" "$WORK"/*.part "$WORK/atr-out.ndjson"' EXIT
trap 'exit 130' INT TERM

# Pin to one core where the kernel lets us (containers may not).
PIN=""
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
    PIN="taskset -c 0"
fi

# The input is generated once per size; the name says the size, and the file
# only appears (renamed) when complete, so presence means it is right.
generate() {
    [ -s "$IN" ] && return 0
    echo "generating $IN ($SIZE MB, seed 1) ..." >&2
    "$PY" "$HERE/gen_chat.py" "$IN.part" --size-mb "$SIZE" --seed 1
    mv "$IN.part" "$IN"
    rm -f "$QUARTER"
}

quarter() {
    [ -s "$QUARTER" ] && return 0
    lines=$(wc -l <"$IN")
    head -n $((lines / 4)) "$IN" >"$QUARTER.part"
    mv "$QUARTER.part" "$QUARTER"
}

# measure CMD...: runs it, leaves "wall_s peak_kb user_s sys_s" in $TIMES.
measure() {
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%e %M %U %S" -o "$TIMES" "$@"
    else
        "$PY" - "$TIMES" "$@" <<'EOF'
import resource, subprocess, sys, time
t0 = time.perf_counter()
rc = subprocess.run(sys.argv[2:]).returncode
dt = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"{dt:.2f} {ru.ru_maxrss} {ru.ru_utime:.2f} {ru.ru_stime:.2f}\n")
sys.exit(rc)
EOF
    fi
}

# median FILE: the line of the median wall time ("wall_s peak_kb cpu_s"),
# cpu = user + sys of that run.
median() {
    sort -n "$1" | awk '{ l[NR] = $1 " " $2 " " $3 + $4 } END { print l[int((NR + 1) / 2)] }'
}

# atr_runs INPUT N: N timed conversions, "seconds peak_kb" per line in runs.txt.
atr_runs() {
    : >"$WORK/runs.txt"
    i=0
    while [ "$i" -lt "$2" ]; do
        measure $PIN "$ATR" convert --from openai-chat -q "$1" -o "$OUT" || {
            echo "run.sh: atr convert failed on $1" >&2
            exit 1
        }
        cat "$TIMES" >>"$WORK/runs.txt"
        i=$((i + 1))
    done
}

mb() { awk -v b="$(wc -c <"$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }

generate
quarter
MB=$(mb "$IN")
QMB=$(mb "$QUARTER")

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "input:   $IN ($MB MB = MiB, $(wc -l <"$IN") rows)"
echo "pinning: ${PIN:-none}; atr runs: $RUNS (median)"

atr_runs "$IN" "$RUNS"
set -- $(median "$WORK/runs.txt")
ATR_S=$1 ATR_KB=$2 ATR_CPU=$3
ATR_LINES=$(wc -l <"$OUT")
mv "$OUT" "$WORK/atr-out.ndjson"

atr_runs "$QUARTER" 1
set -- $(median "$WORK/runs.txt")
Q_S=$1 Q_KB=$2 Q_CPU=$3

: >"$WORK/pyruns.txt"
# py_run: one timed run of the reference; a second and third when it is quick.
py_run() {
    measure $PIN "$PY" "$HERE/reference.py" "$IN" "$OUT" 2>"$WORK/py.err" || {
        echo "run.sh: reference.py failed:" >&2
        cat "$WORK/py.err" >&2
        exit 1
    }
    cat "$TIMES" >>"$WORK/pyruns.txt"
}
py_run
if awk -v s="$(cut -d' ' -f1 "$TIMES")" 'BEGIN { exit !(s < 30) }'; then
    py_run
    py_run
fi
PY_N=$(wc -l <"$WORK/pyruns.txt")
set -- $(median "$WORK/pyruns.txt")
PY_S=$1 PY_KB=$2 PY_CPU=$3
PY_LINES=$(wc -l <"$OUT")

# Same work? Token counts and block counts of every llm step of the first
# 200 traces must agree (the ids differ: XXH3 in atr, blake2b in Python).
SAME=$("$PY" - "$WORK/atr-out.ndjson" "$OUT" <<'EOF'
import itertools, json, sys
def shape(path):
    out = []
    with open(path) as f:
        for line in itertools.islice(f, 200):
            t = json.loads(line)
            for s in t["steps"]:
                if s["kind"] == "llm":
                    pre = s.get("prefix", {}).get("blocks", 0)
                    out.append((s["input_tokens"], s["output_tokens"], pre + len(s["hash_ids"])))
                else:
                    out.append((s.get("tool"), s.get("command"), s.get("action"), s.get("path")))
    return out
a, b = shape(sys.argv[1]), shape(sys.argv[2])
print("yes" if a == b else "NO (%d vs %d steps)" % (len(a), len(b)))
EOF
)
rm -f "$WORK/atr-out.ndjson" "$WORK/runs.txt" "$WORK/pyruns.txt" "$WORK/py.err"

echo
awk -v mb="$MB" -v qmb="$QMB" -v runs="$RUNS" -v pyn="$PY_N" \
    -v as="$ATR_S" -v ak="$ATR_KB" -v ac="$ATR_CPU" -v qs="$Q_S" -v qk="$Q_KB" -v qc="$Q_CPU" \
    -v ps="$PY_S" -v pk="$PY_KB" -v pc="$PY_CPU" '
# Times are 10 ms resolution: floor them so tiny inputs never divide by 0.
function nz(x) { return x < 0.01 ? 0.01 : x }
function row(name, m, s, c, k) {
    s = nz(s); c = nz(c)
    printf "%-24s %8.1f %9.2f %8.1f %9.2f %8.1f %12.1f\n", name, m, s, m / s, c, m / c, k / 1024
}
BEGIN {
    printf "%-24s %8s %9s %8s %9s %8s %12s\n", "tool", "MB", "wall s", "MB/s", "cpu s",
           "MB/cpu-s", "peak RSS MB"
    row("atr convert (median " runs ")", mb, as, ac, ak)
    row("atr convert, 1/4 file", qmb, qs, qc, qk)
    row("python reference (" pyn ")", mb, ps, pc, pk)
    printf "\nratio atr/python: %.1fx wall, %.1fx cpu   peak RSS full/quarter: %.2f\n",
           nz(ps) / nz(as), nz(pc) / nz(ac), ak / qk
}'
echo "traces: atr $ATR_LINES, python $PY_LINES; same token and block counts (first 200 traces): $SAME"
echo "goals: >= 5x python, >= 200 MB/s on one core, peak RSS independent of size"
