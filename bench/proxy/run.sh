#!/bin/sh
# run.sh - `atr proxy` vs nginx vs no proxy at all, side by side, in front of
# the same `atr sim serve` upstream on loopback.
#
# usage: sh bench/proxy/run.sh [ATR]         (default: build/atr of this tree)
#
# Paths to the same upstream (`atr sim serve --ttft 0 --itl ITL --port 0`):
#   direct       the load generator talks to the upstream itself
#   nginx        Debian's nginx (apt-get installed when missing), a private
#                foreground instance (`nginx -p DIR -c DIR/nginx.conf -g
#                'daemon off;'`, as nobody when run as root), one worker,
#                tuned for streaming (proxy_buffering off,
#                proxy_request_buffering off, HTTP/1.1 upstream keep-alive
#                pool of 512, no access log)
#   atr          `atr proxy --upstream URL --port 0`
#   atr+record   the same with `--record FILE`
# When `ATR proxy --help` fails (no proxy command in that build), the atr
# rows are left out and the table says so.
#
# CPUs: the proxy alone on CPU 1; the load generator and the upstream share
# CPU 0 in every path (the direct row: what CPU 0 delivers on its own). How
# busy each core was is in the table: the one near 100 % limited the row.
# The load generator is loadgen.c (one thread, epoll), built here with cc
# into the temporary directory.
#
# Per configuration (ITL 0 and 5 ms; ATR_BENCH_ITLS), ATR_BENCH_RUNS (3)
# interleaved rounds (the order of the paths rotates each round); per round,
# path and stream count (ATR_BENCH_STREAMS: 1 100 1000) one closed-loop step
# of ATR_BENCH_STEP_S (3) seconds after a warm-up: chunks per second, TTFT
# p50/p99 (at 1 stream: the added TTFT), CPU seconds of the proxy's
# processes per 10k requests. Then, per round, fresh proxies in front of an
# upstream that sends its first token at once and the next one a minute
# later (--itl 60000): RSS at rest, RSS with ATR_BENCH_HOLD (1000) such
# streams open, KiB per open stream. The table gives medians over rounds.
#
# Everything lives in a mktemp directory that the exit trap removes, with
# every process this script started.
# shellcheck disable=SC2086  # $PIN* are split on purpose
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/proxy
ATR=${1:-$ROOT/build/atr}
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
RUNS=${ATR_BENCH_RUNS:-3}
STEP_S=${ATR_BENCH_STEP_S:-3}
STREAMS=${ATR_BENCH_STREAMS:-"1 100 1000"}
ITLS=${ATR_BENCH_ITLS:-"0 5"}
HOLD=${ATR_BENCH_HOLD:-1000}
CC=${CC:-cc}
[ -x "$ATR" ] || { echo "run.sh: $ATR: not an executable" >&2; exit 1; }
command -v "$CC" >/dev/null 2>&1 || { echo "run.sh: needs a C compiler ($CC)" >&2; exit 1; }
command -v curl >/dev/null 2>&1 || { echo "run.sh: needs curl" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "run.sh: needs python3" >&2; exit 1; }

# nginx: Debian's package, installed the way the other benchmarks install
# what they need.
NGINX=$(sh "$ROOT/bench/need-nginx.sh") || exit 1

ATR_SHOWN=$ATR
HAVE_ATR=1
"$ATR" proxy --help >/dev/null 2>&1 || HAVE_ATR=0

# 1000 streams through a proxy: 2000 descriptors in it, 1000 in the others.
# shellcheck disable=SC3045  # dash, bash and busybox sh all have ulimit -n
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# shellcheck disable=SC3045
NOFILE=$(ulimit -n)
if [ "$NOFILE" != unlimited ] && [ "$NOFILE" -lt $((2 * HOLD + 256)) ]; then
    echo "run.sh: ulimit -n is $NOFILE, too low for $HOLD streams" >&2
    exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-proxy.XXXXXX")
PIDS=""
cleanup() {
    for _p in $PIDS; do kill "$_p" 2>/dev/null || true; done
    for _p in $PIDS; do wait "$_p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PIN0="" PIN1=""
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ] &&
    taskset -c 0 true 2>/dev/null && taskset -c 1 true 2>/dev/null; then
    PIN0="taskset -c 0" PIN1="taskset -c 1"
fi
# nginx drops to nobody when started as root; make the whole instance
# unprivileged instead (its files in a directory nobody may use).
AS_NOBODY=""
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
    AS_NOBODY="setpriv --reuid=$(id -u nobody) --regid=$(id -g nobody) --clear-groups"
    chmod 711 "$WORK"
fi

# One binary for the whole run, even if the build tree changes under it.
cp "$ATR" "$WORK/atr"
ATR=$WORK/atr
$CC -O2 -std=c11 -Wall -o "$WORK/loadgen" "$HERE/loadgen.c"
LOADGEN=$WORK/loadgen

forget() {      # forget PID: drop it from the list of processes to kill
    _np=""
    for _p in $PIDS; do [ "$_p" = "$1" ] || _np="$_np $_p"; done
    PIDS=$_np
}
stop() {        # stop PID: SIGTERM, wait, forget
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    forget "$1"
}
now_ms() { date +%s%3N; }

# wait_line FILE PID WHAT: waits (10 s at most) for the "listening on" line.
wait_line() {
    _end=$(($(now_ms) + 10000))
    while ! grep -q 'listening on http' "$1" 2>/dev/null; do
        if ! kill -0 "$2" 2>/dev/null || [ "$(now_ms)" -gt "$_end" ]; then
            echo "run.sh: $3 did not start:" >&2
            cat "${1%.out}.err" >&2 2>/dev/null || true
            exit 1
        fi
        sleep 0.02
    done
    sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$1" | head -n 1
}

# start_sim NAME ARGS...: an upstream on CPU 0; sets SIM_PID, SIM_PORT.
start_sim() {
    _n=$1
    shift
    $PIN0 "$ATR" sim serve --port 0 "$@" >"$WORK/$_n.out" 2>"$WORK/$_n.err" &
    SIM_PID=$!
    SIM_LOG=$WORK/$_n.err
    PIDS="$PIDS $SIM_PID"
    SIM_PORT=$(wait_line "$WORK/$_n.out" "$SIM_PID" "atr sim serve")
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# probe PORT: 0 once GET /health through PORT answers 200.
probe() {
    [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$1/health" 2>/dev/null)" = 200 ]
}

# start_nginx NAME UPSTREAM_PORT: sets PX_PID (master), PX_PIDS (master,worker), PX_PORT.
start_nginx() {
    _d=$WORK/$1
    mkdir -p "$_d"
    _tries=0
    while :; do
        _tries=$((_tries + 1))
        PX_PORT=$(free_port)
        cat >"$_d/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile $NOFILE;
pid $_d/nginx.pid;
error_log $_d/error.log warn;
events { worker_connections 16384; }
http {
    access_log off;
    client_body_temp_path $_d/body;
    proxy_temp_path $_d/proxy;
    fastcgi_temp_path $_d/fastcgi;
    uwsgi_temp_path $_d/uwsgi;
    scgi_temp_path $_d/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    upstream sim {
        server 127.0.0.1:$2;
        keepalive 512;
        keepalive_requests 1000000;
        keepalive_timeout 300s;
    }
    server {
        listen 127.0.0.1:$PX_PORT backlog=4096;
        location / {
            proxy_pass http://sim;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
        }
    }
}
EOF
        [ -z "$AS_NOBODY" ] || chown -R nobody "$_d"
        $PIN1 $AS_NOBODY "$NGINX" -p "$_d" -e "$_d/error.log" -c "$_d/nginx.conf" \
            -g 'daemon off;' >"$_d/stdout" 2>&1 &
        PX_PID=$!
        PIDS="$PIDS $PX_PID"
        _end=$(($(now_ms) + 10000))
        while ! probe "$PX_PORT"; do
            if ! kill -0 "$PX_PID" 2>/dev/null || [ "$(now_ms)" -gt "$_end" ]; then break; fi
            sleep 0.02
        done
        if probe "$PX_PORT"; then break; fi
        stop "$PX_PID"
        if [ "$_tries" -ge 5 ]; then
            echo "run.sh: nginx did not start:" >&2
            cat "$_d/error.log" "$_d/stdout" >&2 2>/dev/null || true
            exit 1
        fi
    done
    _w=$(ps -o pid= --ppid "$PX_PID" | tr -d ' ' | head -n 1)
    PX_PIDS=$PX_PID${_w:+,$_w}
    PX_LOG=$_d/error.log
}

# start_atr NAME UPSTREAM_PORT [ARGS...]: sets PX_PID, PX_PIDS, PX_PORT.
start_atr() {
    _n=$1 _up=$2
    shift 2
    $PIN1 "$ATR" proxy --upstream "http://127.0.0.1:$_up" --port 0 "$@" \
        >"$WORK/$_n.out" 2>"$WORK/$_n.err" &
    PX_PID=$!
    PIDS="$PIDS $PX_PID"
    PX_PORT=$(wait_line "$WORK/$_n.out" "$PX_PID" "atr proxy")
    PX_PIDS=$PX_PID
    PX_LOG=$WORK/$_n.err
    probe "$PX_PORT" || true    # one request through it, as nginx had
}

# start_path PATH UPSTREAM_PORT TAG: sets PX_* (direct: the upstream itself).
start_path() {
    case $1 in
    direct) PX_PID="" PX_PORT=$2 PX_PIDS=- PX_LOG=$SIM_LOG ;;
    nginx) start_nginx "nginx-$3" "$2" ;;
    atr) start_atr "atr-$3" "$2" ;;
    atr+record) start_atr "atrrec-$3" "$2" --record "$WORK/record-$3.ndjson" ;;
    esac
}

rss_kb() {      # rss_kb PID,PID...: summed VmRSS in KiB
    _s=0
    for _p in $(echo "$1" | tr ',' ' '); do
        _v=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$_p/status" 2>/dev/null)
        _s=$((_s + ${_v:-0}))
    done
    echo "$_s"
}

PATHS="direct nginx"
[ "$HAVE_ATR" -eq 0 ] || PATHS="$PATHS atr atr+record"
HOLD_PATHS="nginx"
[ "$HAVE_ATR" -eq 0 ] || HOLD_PATHS="$HOLD_PATHS atr"

# rotate N LIST: LIST rotated left N times
rotate() {
    _k=$1
    shift
    while [ "$_k" -gt 0 ]; do
        _first=$1
        shift
        set -- "$@" "$_first"
        _k=$((_k - 1))
    done
    echo "$*"
}

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "atr:     $ATR_SHOWN$([ "$HAVE_ATR" -eq 1 ] || echo " (no 'atr proxy' in this build: direct and nginx only)")"
echo "nginx:   $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'), 1 worker$([ -z "$AS_NOBODY" ] || echo ", as nobody")"
echo "cpus:    proxy ${PIN1:-not pinned}; load generator + upstream ${PIN0:-not pinned}"
echo "steps:   streams $STREAMS, ${STEP_S} s each, upstream ITL $ITLS ms, max_tokens 64; $RUNS rounds (median); idle streams: $HOLD"
echo

RES=$WORK/results.txt
: >"$RES"
for itl in $ITLS; do
    start_sim "sim$itl" --ttft 0 --itl "$itl"
    UP=$SIM_PORT
    UP_PID=$SIM_PID
    STARTED=""
    : >"$WORK/paths.txt"
    for p in $PATHS; do
        start_path "$p" "$UP" "$itl"
        echo "$p $PX_PORT $PX_PIDS $PX_LOG" >>"$WORK/paths.txt"
        [ -z "$PX_PID" ] || STARTED="$STARTED $PX_PID"
    done
    r=1
    while [ "$r" -le "$RUNS" ]; do
        for s in $STREAMS; do
            for p in $(rotate $(((r - 1) % $(echo $PATHS | wc -w))) $PATHS); do
                port=$(awk -v p="$p" '$1 == p { print $2 }' "$WORK/paths.txt")
                pids=$(awk -v p="$p" '$1 == p { print $3 }' "$WORK/paths.txt")
                log=$(awk -v p="$p" '$1 == p { print $4 }' "$WORK/paths.txt")
                first=${pids%%,*}
                [ "$first" != - ] || first=$UP_PID
                if ! kill -0 "$first" 2>/dev/null; then
                    echo "  itl $itl round $r $p $s streams: skipped ($p is gone)" >&2
                    continue
                fi
                line=$(timeout -k 2 $((STEP_S + 90)) $PIN0 "$LOADGEN" run "$port" "$s" "$STEP_S" "$pids" "$UP_PID" \
                    2>"$WORK/loadgen.err") || {
                    echo "run.sh: itl $itl, $p, $s streams: load generator failed:" >&2
                    head -n 3 "$WORK/loadgen.err" >&2
                    if ! kill -0 "$first" 2>/dev/null; then
                        echo "run.sh: $p is gone; the end of its log:" >&2
                        tail -n 5 "$log" >&2
                    fi
                    line="streams=$s requests=0 chunks=0 window_s=1 chunks_per_s=0 ttft_n=0 ttft_p50_ms=0 ttft_p99_ms=0 errors=1 proxy_cpu_s=0 client_cpu_s=0 upstream_cpu_s=0 core_busy_pct=0,0"
                }
                echo "run $itl $r $p $line" >>"$RES"
                echo "$itl $r $p $line" | tr '=' ' ' | awk '{
                    printf "  itl %s round %s %-10s %4d streams: %9.0f chunks/s %7d rq  ttft p50 %.3f p99 %.3f ms  proxy %.2f s (%3.0f%%) client %2.0f%% upstream %2.0f%%  cores busy %s%%  errors %d\n",
                        $1, $2, $3, $5, $13, $7, $17, $19, $23, 100 * $23 / $11, 100 * $25 / $11, 100 * $27 / $11, $29, $21 }' >&2
            done
        done
        r=$((r + 1))
    done
    for q in $STARTED; do stop "$q"; done
    if [ -f "$WORK/record-$itl.ndjson" ]; then
        echo "record $itl $(wc -l <"$WORK/record-$itl.ndjson") $(wc -c <"$WORK/record-$itl.ndjson")" >>"$RES"
    fi
    stop "$UP_PID"
done

# Idle streams: the first token at once, the next one a minute later.
start_sim simhold --ttft 0 --itl 60000
r=1
while [ "$r" -le "$RUNS" ]; do
    for p in $HOLD_PATHS; do
        start_path "$p" "$SIM_PORT" "hold$r"
        rest=$(rss_kb "$PX_PIDS")
        $PIN0 "$LOADGEN" hold "$PX_PORT" "$HOLD" >"$WORK/hold.out" 2>"$WORK/hold.err" &
        LG=$!
        PIDS="$PIDS $LG"
        end=$(($(now_ms) + 60000))
        ok=1
        while ! grep -q '^ready' "$WORK/hold.out"; do
            if ! kill -0 "$LG" 2>/dev/null || [ "$(now_ms)" -gt "$end" ]; then
                echo "run.sh: $p: $HOLD streams did not open:" >&2
                cat "$WORK/hold.err" >&2
                ok=0
                break
            fi
            sleep 0.05
        done
        held=$(rss_kb "$PX_PIDS")
        stop "$LG"
        [ "$ok" -eq 0 ] || echo "hold $r $p $rest $held $HOLD" >>"$RES"
        echo "$r $p $rest $held $HOLD $ok" | awk '{
            printf "  idle streams round %s %-10s rest %d KiB, with %d streams %d KiB: %.1f KiB per stream%s\n",
                $1, $2, $3, $5, $4, ($4 - $3) / $5, ($6 ? "" : " FAILED") }' >&2
        stop "$PX_PID"
    done
    r=$((r + 1))
done
stop "$SIM_PID"

echo
python3 - "$RES" "$HAVE_ATR" "$STREAMS" "$ITLS" <<'PY'
import statistics, sys
res, have_atr, streams, itls = sys.argv[1], sys.argv[2] == "1", sys.argv[3].split(), sys.argv[4].split()
runs, holds, records = {}, {}, {}
for ln in open(res):
    f = ln.split()
    if f[0] == "run":
        kv = dict(x.split("=", 1) for x in f[4:])
        row = {k: float(v) for k, v in kv.items() if k != "core_busy_pct"}
        row["cores"] = [float(x) for x in kv.get("core_busy_pct", "0").split(",")]
        runs.setdefault((f[1], f[3], kv["streams"]), []).append(row)
    elif f[0] == "hold":
        rest, held, n = float(f[3]), float(f[4]), float(f[5])
        holds.setdefault(f[2], []).append((held - rest) / n)
    elif f[0] == "record":
        records[f[1]] = (int(f[2]), int(f[3]))

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def fig(itl, path, s, key):
    rows = runs.get((itl, path, s), [])
    if key == "cpu10k":
        # Requests relayed in the window = content chunks / 64 (every answer
        # has 64): with a fixed ITL the streams finish in waves, and counting
        # whole answers would quantise the figure. /proc/PID/stat counts in
        # clock ticks (10 ms): steps with under 0.2 s of proxy CPU (the
        # 1-stream steps with a 5 ms ITL) say nothing and are left out.
        return med([r["proxy_cpu_s"] / (r["chunks"] / 64) * 1e4
                    if r["chunks"] and not r["errors"] and r["proxy_cpu_s"] >= 0.2 else None for r in rows])
    if key in ("core0", "core1"):
        i = int(key[-1])
        return med([r["cores"][i] if not r["errors"] and len(r["cores"]) > i else None for r in rows])
    if key == "busy":
        return med([100 * r["proxy_cpu_s"] / r["window_s"] if not r["errors"] else None for r in rows])
    return med([r[key] if not r["errors"] else None for r in rows])

paths = ["direct", "nginx"] + (["atr", "atr+record"] if have_atr else [])
s1, smid, smax = streams[0], streams[len(streams) // 2], streams[-1]
cols = ["TTFT p50", "p99", "+p50", "+p99"] + ["kch/s@" + s for s in streams] + \
       ["CPU/10k@" + s for s in streams] + ["proxy%@" + smax, "core1%@" + smax, "core0%@" + smax, "KiB/idle"]
def fmt(v, nd):
    return "-" if v is None else ("%.*f" % (nd, v))
def ratio(a, b):
    return "-" if a is None or b is None or b <= 0 or a < 0 else "%.2f" % (a / b)

WS = [max(9, len(c) + 1) for c in cols]
hdr = "%-26s" % "path" + "".join("%*s" % (w, c) for w, c in zip(WS, cols))
print(hdr)
table = {}
for itl in itls:
    print("upstream --ttft 0 --itl %s" % itl)
    for p in paths:
        d = {}
        d["p50"] = fig(itl, p, s1, "ttft_p50_ms")
        d["p99"] = fig(itl, p, s1, "ttft_p99_ms")
        dp50, dp99 = fig(itl, "direct", s1, "ttft_p50_ms"), fig(itl, "direct", s1, "ttft_p99_ms")
        d["+p50"] = None if p == "direct" or d["p50"] is None or dp50 is None else d["p50"] - dp50
        d["+p99"] = None if p == "direct" or d["p99"] is None or dp99 is None else d["p99"] - dp99
        for s in streams:
            v = fig(itl, p, s, "chunks_per_s")
            d["kch" + s] = None if v is None else v / 1e3
            d["cpu" + s] = None if p == "direct" else fig(itl, p, s, "cpu10k")
        d["busy"] = None if p == "direct" else fig(itl, p, smax, "busy")
        d["core1"] = fig(itl, p, smax, "core1")
        d["core0"] = fig(itl, p, smax, "core0")
        d["kib"] = med(holds.get(p, [])) if itl == itls[0] and p != "direct" else None
        table[(itl, p)] = d
        vals = [fmt(d["p50"], 3), fmt(d["p99"], 3), fmt(d["+p50"], 3), fmt(d["+p99"], 3)] + \
               [fmt(d["kch" + s], 1) for s in streams] + [fmt(d["cpu" + s], 3) for s in streams] + \
               [fmt(d["busy"], 0), fmt(d["core1"], 0), fmt(d["core0"], 0), fmt(d["kib"], 1)]
        name = {"direct": "direct (no proxy)", "nginx": "nginx, 1 worker", "atr": "atr proxy",
                "atr+record": "atr proxy --record"}[p]
        print("  %-24s" % name + "".join("%*s" % (w, v) for w, v in zip(WS, vals)))
    keys = ["p50", "p99", "+p50", "+p99"] + ["kch" + s for s in streams] + ["cpu" + s for s in streams] + ["busy", "core1", "core0", "kib"]
    for num, den, label in (("atr", "nginx", "ratio atr/nginx"), ("atr+record", "atr", "ratio record/atr"),
                            ("nginx", "direct", "ratio nginx/direct")):
        if (itl, num) not in table or (itl, den) not in table:
            continue
        a, b = table[(itl, num)], table[(itl, den)]
        skip = ("busy", "core1", "core0") if den == "direct" else ()
        print("  %-24s" % label + "".join("%*s" % (w, "-" if k in skip else ratio(a[k], b[k]))
                                          for w, k in zip(WS, keys)))

print()
print("TTFT p50/p99: ms at %s stream (first content chunk at the client); +p50/+p99: minus direct's." % s1)
print("kch/s@N: thousands of content chunks per second at the client with N streams (closed loop).")
print("CPU/10k@N: user+sys CPU seconds of the proxy (nginx: master + worker) per 10,000 requests")
print("  (relayed: content chunks / 64) at N streams; '-': under 0.2 s of CPU in the step.")
print("proxy%%@%s: the proxy's CPU time (utime + stime) over the step's wall time." % smax)
print("core1%%@%s, core0%%@%s: how busy CPU 1 (the proxy's) and CPU 0 (load generator + upstream) were, from" % (smax, smax))
print("  /proc/stat: softirq work (loopback delivery) included, which no process is charged for; near 100: the limit.")
print("KiB/idle: (RSS with the idle streams open - RSS at rest) / streams, upstream --itl 60000.")
print("ratios: atr/nginx (throughput >= 1 is better, costs <= 1 are better), record/atr, nginx/direct.")
print("goals: throughput 'tie' = atr within 2% below nginx (the noise of this machine).")
for itl, (n, b) in sorted(records.items()):
    if n:
        print("record file, itl %s: %d lines, %.0f bytes per line" % (itl, n, b / n))
if not have_atr:
    print("\n'atr proxy' is not in this build: the atr rows are left out.")
    sys.exit(0)
print("\ngoals (atr proxy):")
for itl in itls:
    a, n, r = table[(itl, "atr")], table[(itl, "nginx")], table[(itl, "atr+record")]
    def le(x, y, tie=0.0):
        if x is None or y is None:
            return "n/a"
        return "met" if x <= y else ("tie" if x <= y * (1 + tie) else "NOT met")
    print("  itl %s: added TTFT <= nginx's: p50 %s (%s vs %s ms), p99 %s (%s vs %s ms)" % (
        itl, le(a["+p50"], n["+p50"]), fmt(a["+p50"], 3), fmt(n["+p50"], 3),
        le(a["+p99"], n["+p99"]), fmt(a["+p99"], 3), fmt(n["+p99"], 3)))
    print("  itl %s: throughput >= nginx's: %s" % (itl, ", ".join(
        "%s streams %s (%s)" % (s, le(n["kch" + s], a["kch" + s], 0.02), ratio(a["kch" + s], n["kch" + s]))
        for s in streams)))
    cost = [None if r["cpu" + s] is None or not a["cpu" + s] else 100 * (r["cpu" + s] / a["cpu" + s] - 1) for s in streams]
    tput = [None if r["kch" + s] is None or not a["kch" + s] else 100 * (1 - r["kch" + s] / a["kch" + s]) for s in streams]
    print("  itl %s: recording costs < 5%%: CPU %s; throughput lost %s" % (
        itl, ", ".join("%s%% @%s" % (fmt(c, 1), s) for c, s in zip(cost, streams)),
        ", ".join("%s%% @%s" % (fmt(t, 1), s) for t, s in zip(tput, streams))))
k = table[(itls[0], "atr")]["kib"]
print("  <= 64 KiB per idle stream: %s (%s KiB)" % ("n/a" if k is None else ("met" if k <= 64 else "NOT met"), fmt(k, 1)))
PY
