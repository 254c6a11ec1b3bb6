#!/bin/sh
# run.sh - overhead of `atr bench run`'s server lifecycle (start, readiness
# poll, stop, port free) beside the Python loop a user would otherwise
# write (pyrunner.py). Goals (issue 12): the runner sees the server ready
# less than 50 ms after its port opens, and a teardown (SIGTERM -> port
# free) takes less than 1 s.
#
# usage: sh bench/bench-runner/run.sh [ATR] [N]     (defaults: build/atr, 10)
#        ATR_BENCH_SEED=S (default 1) picks the server delays.
#
# Generates one spec (docs/bench.md) with N items and one variant "v" whose
# server is `PYTHON server.py DELAY {workdir}/stamp-{commit} {port}`
# (PYTHON: python3's sys.executable, a full path, for both runners):
# it sleeps DELAY (0.2-0.6 s, seeded, different per item so that the
# runners' poll phases do not line up with it), listens, and stamps the
# moments its port opened and, on SIGTERM, closed. The item's parent_commit
# carries DELAY (placeholder {parent}); the workload is mode "command" with
# command `true`. The spec is checked with `atr bench run --dry-run`, then
# pyrunner.py runs it, then `atr bench run SPEC -o DIR`, each in its own
# workdir on the same free port; summarize.py prints the table (detection
# = ready_unix_s - port-open stamp, teardown = teardown_s, ...) with
# python/atr ratios. Everything lives in a mktemp -d directory removed on
# exit.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/bench-runner
ATR=${1:-$ROOT/build/atr}
N=${2:-10}
SEED=${ATR_BENCH_SEED:-1}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
case $N in '' | *[!0-9]* | 0) echo "usage: run.sh [ATR] [N]: N is a positive integer" >&2; exit 2 ;; esac
[ -x "$ATR" ] || { echo "run.sh: $ATR: not an executable (make -C $ROOT build)" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-runner.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
now() { date +%s.%N; }
# One interpreter for everything, by its full path: `python3` may be a
# wrapper (a pyenv shim is a bash script that adds ~50 ms per start), and a
# Python runner's children would skip it (the shim puts the real binary
# first on PATH) while atr's would not.
PY=$(python3 -c 'import sys; print(sys.executable)')

PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for r in atr py; do
    mkdir -p "$TMP/$r/w"
    "$PY" - "$PY" "$HERE/server.py" "$TMP/$r/w" "$PORT" "$N" "$SEED" >"$TMP/$r/spec.json" <<'EOF'
import json, random, shlex, sys
py, server, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
port, n, seed = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rng = random.Random(seed)
print(json.dumps({
    "format": "atr-bench-spec/1",
    "workdir": workdir,
    "port": port,
    "variants": {"v": {
        "server": "%s %s {parent} {workdir}/stamp-{commit} {port}" % (shlex.quote(py), shlex.quote(server)),
        "ready_url": "http://127.0.0.1:{port}/health",
        "startup_timeout_s": 10,
        "benchmark_timeout_s": 30}},
    "workload": {"mode": "command", "command": "true"},
    "items": [{"human_commit": "%08x" % (i + 1),
               "parent_commit": "%.3f" % rng.uniform(0.2, 0.6),
               "model": "none"} for i in range(n)],
}, indent=1))
EOF
done
"$ATR" bench run "$TMP/atr/spec.json" --dry-run >"$TMP/plan" 2>&1 ||
    { cat "$TMP/plan" >&2; echo "run.sh: the generated spec does not parse" >&2; exit 1; }

echo "atr bench run vs pyrunner.py: $N items, server delays 0.2-0.6 s (seed $SEED), port $PORT;" \
    "Python polls every 10 ms, grace 10 s"
t0=$(now)
"$PY" "$HERE/pyrunner.py" "$TMP/py/spec.json" -o "$TMP/py/runs.jsonl"
PY_WALL=$("$PY" -c "print($(now) - $t0)")

t0=$(now)
if ! "$ATR" bench run "$TMP/atr/spec.json" -o "$TMP/atr/out" >"$TMP/atr/log" 2>&1; then
    tail -n 20 "$TMP/atr/log" >&2
    echo "run.sh: atr bench run failed; the Python side:" >&2
    "$PY" "$HERE/summarize.py" "$N" "$TMP/py/runs.jsonl" "$TMP/py/w" "$PY_WALL"
    exit 1
fi
ATR_WALL=$("$PY" -c "print($(now) - $t0)")
"$PY" "$HERE/summarize.py" "$N" "$TMP/py/runs.jsonl" "$TMP/py/w" "$PY_WALL" \
    "$TMP/atr/out" "$TMP/atr/w" "$ATR_WALL"
