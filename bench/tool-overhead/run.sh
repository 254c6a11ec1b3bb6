#!/bin/sh
# run.sh - per-step overhead of `atr replay tools` and the dynamic
# controller's reaction time.
#
# usage: sh bench/tool-overhead/run.sh ATR        (make bench-tools runs it)
#
# Part 1, overhead: STEPS (default 500) steps of `true` under atr's configs
# none, static-toolcall, dynamic (all --sandbox none) and static-toolcall
# --sandbox ns, next to bare fork + execve("/bin/sh -c true") + waitpid
# (forkexec.c, built here with cc into a temporary directory), a naive shell
# per-step v1 cgroup (mkdir, limit, join, exec, rmdir) and systemd-run
# --scope where a systemd manager runs. ROUNDS (default 3) interleaved
# rounds; medians over all steps of all rounds.
# Part 2, reaction time: 20 steps that grow to 128 MiB at ~1 MiB/ms under
# config dynamic with --mem-high 8M, once per controller (psi-poll,
# psi-trigger, and ebpf where it loads); p50/p99 from summary.json and
# the per-step samples. Part 1 also runs config dynamic with ebpf there.
# Needs root, cgroups, cc and python3. Leaves no files or cgroups behind.
set -eu

ATR=${1:?usage: run.sh ATR}
STEPS=${ATR_BENCH_STEPS:-500}
ROUNDS=${ATR_BENCH_ROUNDS:-3}
GROW_STEPS=20
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
CC=${CC:-cc}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
[ -x "$ATR" ] || { echo "run.sh: $ATR: not an executable" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-tools.XXXXXX")
NAIVE=""   # the naive loop's parent v1 memory cgroup, once created
cleanup() {
    if [ -n "$NAIVE" ] && [ -d "$NAIVE" ]; then
        [ -d "$NAIVE/step" ] && rmdir "$NAIVE/step" 2>/dev/null
        rmdir "$NAIVE" 2>/dev/null || echo "run.sh: could not remove $NAIVE" >&2
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

FE=$TMP/forkexec
$CC -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -o "$FE" "$HERE/forkexec.c"

# trace FILE ID N CMD: one atr-trace with N bash steps running CMD.
trace() {
    "$PY" - "$@" <<'EOF'
import json, sys
path, tid, n, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
steps = [{"i": i, "kind": "tool", "tool": "bash", "command": cmd} for i in range(n)]
with open(path, "w") as f:
    f.write(json.dumps({"format": "atr-trace/1", "trace_id": tid, "source": "bench",
                        "steps": steps}) + "\n")
EOF
}
trace "$TMP/true.ndjson" bench/true "$STEPS" true
STAMPS=$TMP/stamps
trace "$TMP/stamp.ndjson" bench/stamp "$STEPS" "$FE stamp $STAMPS"
trace "$TMP/grow.ndjson" bench/grow "$GROW_STEPS" "$FE grow 128 100"

now_ns() { date +%s%N; }

# cycles NAME: appends the step-to-step cycles (ms) of the stamp file to
# NAME.cyc, then empties it.
cycles() {
    awk 'NR > 1 { printf "%.4f\n", ($1 - p) / 1e6 } { p = $1 }' "$STAMPS" >>"$TMP/$1.cyc"
    rm -f "$STAMPS"
}

# atr_run NAME ARGS...: one atr run over the `true` trace (metrics lines to
# NAME.jsonl, "STEPS WALL us" to NAME.wall, per round) and one over the
# stamp trace (cycles to NAME.cyc).
atr_run() {
    name=$1
    shift
    t0=$(now_ns)
    "$ATR" replay tools -q "$@" "$TMP/true.ndjson" --out "$TMP/out" >/dev/null
    t1=$(now_ns)
    echo "$STEPS $(((t1 - t0) / 1000)) us" >>"$TMP/$name.wall"
    cat "$TMP/out/metrics.jsonl" >>"$TMP/$name.jsonl"
    cp "$TMP/out/summary.json" "$TMP/summary-last.json"
    rm -rf "$TMP/out"
    "$ATR" replay tools -q "$@" "$TMP/stamp.ndjson" --out "$TMP/out" >/dev/null
    rm -rf "$TMP/out"
    cycles "$name"
}

# fe_run NAME N CMD [CYCLE_CMD]: N timed fork/exec/wait steps of /bin/sh -c
# CMD; with CYCLE_CMD, N more of it for the cycles.
fe_run() {
    "$FE" loop "$2" "$3" >"$TMP/fe.out"
    grep -v '^total' "$TMP/fe.out" >>"$TMP/$1.ms"
    echo "$2 $(sed -n 's/^total //p' "$TMP/fe.out") ms" >>"$TMP/$1.wall"
    if [ $# -ge 4 ]; then
        "$FE" loop "$2" "$4" >/dev/null
        cycles "$1"
    fi
}

# The naive approach a user script would take for a per-step cgroup on
# this host: a v1 memory group per step under our own memory cgroup.
MEMCG=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup | head -n 1)
NAIVE_CMD=""
if [ -w "$MEMCG" ] && mkdir "$MEMCG/atr-bench-naive-$$" 2>/dev/null; then
    NAIVE=$MEMCG/atr-bench-naive-$$
    G=$NAIVE/step
    naive() {
        echo "mkdir $G && echo 512M >$G/memory.limit_in_bytes && /bin/sh -c 'echo \$\$ >$G/cgroup.procs && exec /bin/sh -c \"$1\"'; rmdir $G"
    }
    NAIVE_CMD=$(naive true)
    NAIVE_STAMP=$(naive "$FE stamp $STAMPS")
fi

# --controller ebpf where the eBPF program loads (root, BTF, built with it)
trace "$TMP/one.ndjson" bench/one 1 true
EBPF=""
if "$ATR" replay tools -q --config dynamic --controller ebpf --mem-high 8M --sandbox none \
    "$TMP/one.ndjson" --out "$TMP/probe" >/dev/null 2>"$TMP/probe.err"; then
    EBPF=yes
else
    echo "ebpf: not here: $(head -c 300 "$TMP/probe.err")"
fi
rm -rf "$TMP/probe"

SYSTEMD_RUN=""
if command -v systemd-run >/dev/null 2>&1 && systemd-run --scope --quiet true >/dev/null 2>&1; then
    SYSTEMD_RUN="systemd-run --scope --quiet true"
fi

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), kernel $(uname -r)"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "steps:   $STEPS of \`true\` per config per round, $ROUNDS interleaved rounds"

r=0
while [ "$r" -lt "$ROUNDS" ]; do
    fe_run bare "$STEPS" true "$FE stamp $STAMPS"
    [ -n "$NAIVE_CMD" ] && fe_run naive "$STEPS" "$NAIVE_CMD" "$NAIVE_STAMP"
    atr_run none --config none --sandbox none
    atr_run static-toolcall --config static-toolcall --mem-max 512M --sandbox none
    atr_run dynamic --config dynamic --mem-high 256M --mem-max 512M --sandbox none
    [ -n "$EBPF" ] && atr_run dynamic-ebpf --config dynamic --controller ebpf --mem-high 256M \
        --mem-max 512M --sandbox none
    # The sandbox shows the host read-only with a private /tmp: the stamp
    # file's folder (and forkexec, in it) is bound in writable.
    atr_run static-toolcall-ns --config static-toolcall --mem-max 512M --sandbox ns --bind "$TMP"
    r=$((r + 1))
done
# systemd-run costs 10-20 ms a step: 50 steps, once, are enough for a median.
[ -n "$SYSTEMD_RUN" ] && fe_run systemd-run 50 "$SYSTEMD_RUN" \
    "systemd-run --scope --quiet $FE stamp $STAMPS"

echo "backend: $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["backend"])' "$TMP/summary-last.json")"

for c in psi-poll psi-trigger ${EBPF:+ebpf}; do
    "$ATR" replay tools -q --config dynamic --controller "$c" --mem-high 8M --sandbox none \
        "$TMP/grow.ndjson" --out "$TMP/grow-$c" >/dev/null
done

echo
"$PY" - "$TMP" "$STEPS" "$ROUNDS" "${NAIVE:+yes}" "${SYSTEMD_RUN:+yes}" "${EBPF:+yes}" <<'EOF'
import json, os, statistics, sys
tmp, steps, rounds, naive, sdrun, ebpf = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                          sys.argv[4], sys.argv[5], sys.argv[6])

def p(path):
    return os.path.join(tmp, path)

def wall_per_step(name):
    """Mean ms per step of whole runs: total elapsed / steps, over rounds."""
    n = t = 0.0
    for line in open(p(name + ".wall")):
        k, v, unit = line.split()
        n += int(k)
        t += float(v) / (1000.0 if unit == "us" else 1.0)
    return t / n

def steps_ms(name):
    if os.path.exists(p(name + ".ms")):
        return [float(x) for x in open(p(name + ".ms"))]
    rows = [json.loads(l) for l in open(p(name + ".jsonl"))]
    bad = [r for r in rows if r.get("exit_code") != 0]
    if bad:
        sys.exit("run.sh: %s: %d steps failed, e.g. %s" % (name, len(bad), bad[0]))
    return [r["latency_ms"] for r in rows]

rows = [("bare fork/exec/wait", "bare")]
if naive:
    rows.append(("naive sh: v1 cgroup per step", "naive"))
rows += [("atr none", "none"), ("atr static-toolcall", "static-toolcall"),
         ("atr dynamic (psi-poll 50ms)", "dynamic"),
         *([("atr dynamic (ebpf)", "dynamic-ebpf")] if ebpf else []),
         ("atr static-toolcall, sandbox ns", "static-toolcall-ns")]
if sdrun:
    rows.append(("systemd-run --scope", "systemd-run"))

def cycles_ms(name):
    return [float(x) for x in open(p(name + ".cyc"))]

med = {k: statistics.median(steps_ms(k)) for _, k in rows}
cnt = {k: len(steps_ms(k)) for _, k in rows}
cyc = {k: statistics.median(cycles_ms(k)) for _, k in rows}
wall = {k: wall_per_step(k) for _, k in rows}
print("%-33s %6s %10s %10s %10s %10s %10s %10s" % ("config", "steps", "span p50", "over bare",
      "cycle p50", "over bare", "wall/step", "sd-run/x"))
for label, k in rows:
    ratio = "%.1fx" % (cyc["systemd-run"] / cyc[k]) if sdrun else "n/a"
    print("%-33s %6d %10.3f %10.3f %10.3f %10.3f %10.3f %10s" % (label, cnt[k], med[k],
          med[k] - med["bare"], cyc[k], cyc[k] - cyc["bare"], wall[k], ratio))
print("(ms; span: fork/clone -> reap of one step, atr's latency_ms; cycle: step start ->"
      " next step start; wall/step: whole run / steps, a mean)")
if not sdrun:
    print("systemd-run: not available here (no systemd manager)")
for what, d in (("span", med), ("cycle", cyc)):
    o = d["static-toolcall"] - d["bare"]
    print("goal: static-toolcall median %s under 1 ms over bare fork/exec: +%.3f ms, %s"
          % (what, o, "met" if o < 1.0 else "NOT met"))

print()
print("controller reaction time: %d steps growing to 128 MiB at ~1 MiB/ms, --mem-high 8M"
      % 20)
print("%-12s %7s %7s %7s %14s %14s %14s %14s" % ("controller", "raises", "events", "polls",
      "seen p50 us", "seen p99 us", "bound p50 us", "bound p99 us"))
for c in ("psi-poll", "psi-trigger") + (("ebpf",) if ebpf else ()):
    d = json.load(open(p("grow-%s/summary.json" % c)))["configs"][0]
    seen, bound = [], []
    for line in open(p("grow-%s/metrics.jsonl" % c)):
        r = json.loads(line)
        seen += r.get("ctl_reaction_us") or []
        bound += r.get("ctl_reaction_bound_us") or []
    # An event's bound is its seen time; a poll's or tick's bound is longer.
    events = sum(1 for s, b in zip(seen, bound) if b - s < 1.0)
    def f(x):
        return "-" if x is None else "%.1f" % x
    print("%-12s %7d %7d %7d %14s %14s %14s %14s" % (c, len(seen), events, len(seen) - events,
          f(d["ctl_reaction_p50_us"]), f(d["ctl_reaction_p99_us"]),
          f(d["ctl_reaction_bound_p50_us"]), f(d["ctl_reaction_bound_p99_us"])))
EOF
