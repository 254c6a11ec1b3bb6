#!/bin/sh
# run.sh - `atr replay llm` vs Python asyncio + aiohttp clients following
# vLLM's benchmark logic, side by side, against `atr sim serve` with zero
# latency on loopback.
#
# usage: sh bench/replay-client/run.sh ATR
#
# Clients (ATR_BENCH_CLIENTS, default "atr py512 py"):
#   atr    atr replay llm (a pool of 1024 connections; requests beyond wait
#          in its FIFO)
#   py512  vllm_client.py --limit 512: aiohttp with a bounded pool of 512
#          connections (requests beyond wait in aiohttp's connector): the
#          fairest Python client
#   py     vllm_client.py --limit 0: vLLM's own setting, no bound (one
#          connection per request in flight)
# The server, the same for every client, pinned to CPU 1; every client
# pinned to CPU 0. The server (ATR_BENCH_SERVER):
#   stub   (default) the C stub (stub.c, built with cc): one fresh stub per
#          step, answering every POST at once with the sim server's recorded
#          answer (8 chunks, usage, [DONE], Content-Length) and logging when
#          each request arrived: the steps are judged at the server
#          (arrivals.py), not by what the clients say of themselves
#   sim    `atr sim serve --ttft 0 --itl 0 --port 0`: streams each
#          answer as a real engine would, ~30 us of its CPU per request, so
#          it holds ~30k req/s on a free core
#   nginx  Debian's nginx (apt-get installed when missing, as bench/proxy
#          does), one worker, keep-alive without a request limit, no access
#          log, answering every POST with one fixed SSE answer recorded from
#          `atr sim serve` (8 chunks, usage, [DONE]; `return 200`, so with a
#          Content-Length instead of chunked encoding): a server far cheaper
#          than any client, for when the sim server is the ceiling
# Per client and run:
#   - a rate ladder (ATR_BENCH_RATES, req/s) with constant arrivals, each
#     step ATR_BENCH_STEP_S (3) seconds of one-turn requests (32 prompt
#     tokens, 8 output tokens); the sustainable rate is the highest step
#     whose achieved rate is within 2% of the asked one, with every
#     request successful and lag p99 under 10 ms (also reported: under
#     1 ms). With the stub, rate and lag are the server's: arrivals per
#     second and how late each request arrived against the schedule
#     (arrivals.py); with the other servers they are the clients' own send
#     lag: when the request's bytes leave on a connection (pool wait
#     included) minus when it was due.
#     The ladder stops after three failed steps in a row (a loaded host
#     fails a step now and then by a scheduling stall), or at the first
#     step below 90% of the asked rate.
#   - peak throughput: ATR_BENCH_PEAK_N (10000) requests all due at once
#     (--rate inf); successes / (last end - first due).
#   - the mean TTFT at 100 req/s: with a zero-latency server this is client
#     + loopback + server time, the same server for every client.
#   - CPU seconds per 1000 requests at the 1000 req/s step, and CPU per
#     request (user and system apart) of a run of ATR_BENCH_CPU_RATE
#     (10000) req/s for ATR_BENCH_STEP_S seconds, whether the client keeps
#     up or not (atr: the whole process, start-up and reading the trace
#     included; Python: the run, imports and set-up excluded).
# ATR_BENCH_RUNS (default 3) interleaved runs; the table gives medians.
# shellcheck disable=SC2086  # $PIN_* are split on purpose
set -eu

ATR=${1:?usage: run.sh ATR}
RUNS=${ATR_BENCH_RUNS:-3}
STEP_S=${ATR_BENCH_STEP_S:-3}
RATES=${ATR_BENCH_RATES:-"500 1000 1500 2000 2500 3000 4000 6000 8000 10000 12000 16000 20000 24000 28000 32000 40000 48000 56000 64000"}
CLIENTS=${ATR_BENCH_CLIENTS:-"atr py512 py"}
PEAK_N=${ATR_BENCH_PEAK_N:-10000}
SERVER=${ATR_BENCH_SERVER:-stub}
CPU_RATE_HI=${ATR_BENCH_CPU_RATE:-10000}
LOW_RATE=100
CPU_RATE=1000
# Debian's python3-aiohttp is on /usr/bin/python3; another python3 may have
# its own aiohttp.
PY=/usr/bin/python3
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null || PY=$(command -v python3)
HERE=$(cd "$(dirname "$0")" && pwd)
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
[ -x "$ATR" ] || { echo "run.sh: $ATR: not an executable" >&2; exit 1; }
# The reference needs Debian's aiohttp; install it the way the build
# installs its own dependencies.
"$PY" -c 'import aiohttp' 2>/dev/null ||
    { [ "$(id -u)" -eq 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-aiohttp >/dev/null; } ||
    true
# Debian's aiohttp, once installed, is /usr/bin/python3's.
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null && PY=/usr/bin/python3
"$PY" -c 'import aiohttp' 2>/dev/null || {
    echo "run.sh: $PY cannot import aiohttp (apt-get install -y python3-aiohttp)" >&2
    exit 1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/atr-bench-client.XXXXXX")
SRV=""
cleanup() {
    if [ -n "${STUB:-}" ]; then
        kill "$STUB" 2>/dev/null || true
        wait "$STUB" 2>/dev/null || true
    fi
    if [ -n "${NGX:-}" ]; then
        kill "$NGX" 2>/dev/null || true
        wait "$NGX" 2>/dev/null || true
    fi
    if [ -n "$SRV" ]; then
        kill "$SRV" 2>/dev/null || true
        wait "$SRV" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PIN_CLIENT="" PIN_SERVER=""
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
    PIN_CLIENT="taskset -c 0"
    if [ "$(nproc)" -ge 2 ] && taskset -c 1 true 2>/dev/null; then
        PIN_SERVER="taskset -c 1"
    fi
fi

. "$HERE/servers.sh"
start_sim_server
NGX=""
case $SERVER in
sim) ;;
nginx) start_nginx ;;
stub) start_stub ;;
*) echo "run.sh: ATR_BENCH_SERVER: stub, sim or nginx, not $SERVER" >&2; exit 1 ;;
esac

# workload N: a file of N one-turn requests (made once per N).
workload() {
    f=$WORK/w$1.ndjson
    [ -s "$f" ] || "$ATR" gen --kind requests --traces "$1" --input-tokens 32 \
        --output-tokens 8 --seed 1 -o "$f" 2>/dev/null
    echo "$f"
}

# step CLIENT RATE N: one timed run; prints "rate n failed achieved p50 p99
# ttft throughput cpu_s srv_rate srv_p50 srv_p99 user_s sys_s" (srv_*: the
# stub's judgement, 0 with another server), or zeros when the client did
# not finish in time. RATE may be inf (all due at once).
step() {
    q=$WORK/q.ndjson
    rm -f "$q" "$WORK/py.json" "$WORK/time.txt"
    if [ "$2" = inf ]; then limit=120; else limit=$(($3 * 2 / $2 + 10)); fi
    [ -n "${STEP_LIMIT:-}" ] && limit=$STEP_LIMIT
    [ "$SERVER" = stub ] && stub_up
    rc=0
    case $1 in
    atr)
        w=$(workload "$3")
        arrival="--arrival constant"      # all at once needs none
        [ "$2" = inf ] && arrival=""
        /usr/bin/time -f "%U %S" -o "$WORK/time.txt" timeout -k 2 "$limit" \
            $PIN_CLIENT "$ATR" replay llm "$w" --target "$URL" --model atr-sim \
            --rate "$2" $arrival --requests-out "$q" -q \
            >/dev/null 2>"$WORK/client.err" || rc=$?
        cpu=$(awk '{ print $1 + $2 }' "$WORK/time.txt" 2>/dev/null || echo 0)
        us=$(awk '{ print $1, $2 }' "$WORK/time.txt" 2>/dev/null || echo 0 0)
        ;;
    py512|py)
        pool=0
        [ "$1" = py512 ] && pool=512
        timeout -k 2 "$limit" $PIN_CLIENT "$PY" "$HERE/vllm_client.py" --base-url "$URL" \
            --model atr-sim --rate "$2" --num-requests "$3" --out "$WORK/py.json" --limit "$pool" \
            --requests-out "$q" >/dev/null 2>"$WORK/client.err" || rc=$?
        cpu=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu_s"])' \
            "$WORK/py.json" 2>/dev/null || echo 0)
        us=$("$PY" -c 'import json,sys; j = json.load(open(sys.argv[1])); print(j["cpu_user_s"], j["cpu_sys_s"])' \
            "$WORK/py.json" 2>/dev/null || echo 0 0)
        ;;
    esac
    srv="0 0 0"
    if [ "$SERVER" = stub ]; then
        stub_down
        [ "$2" != inf ] && srv=$("$PY" "$HERE/arrivals.py" "$WORK/arrivals.log" "$3" "$2")
    fi
    if [ "$rc" -ne 0 ] || [ ! -s "$q" ]; then
        echo "run.sh: $1 at $2 req/s: exit $rc (timeout ${limit}s: 124)" >&2
        echo "$2 0 0 0 0 0 0 0 0 0 0 0 0 0"
        return 0
    fi
    echo "$2 $("$PY" "$HERE/summarize.py" "$q") $cpu $srv $us"
}

# verdict LINE MAX_P99: 0 when the step passes (judged at the server with
# the stub, else by the client's own send lag).
verdict() {
    echo "$1" | awk -v m="$2" -v srv="$JUDGE_SRV" '{ a = srv ? $10 : $4; p = srv ? $12 : $6
        ok = $2 > 0 && $3 == 0 && a >= 0.98 * $1 && a <= 1.02 * $1 && p < m
        exit !ok }'
}
JUDGE_SRV=0
[ "$SERVER" = stub ] && JUDGE_SRV=1

# ladder CLIENT RUN: appends every step to steps.txt as "client run LINE".
ladder() {
    fails=0
    for r in $RATES; do
        line=$(step "$1" "$r" $((r * STEP_S)))
        echo "$1 $2 $line" >>"$WORK/steps.txt"
        echo "$1 $2 $line" | awk '{ printf "  %-6s run %s: %6d req/s  sent %9.1f/s  failed %d  send lag p50 %.3f p99 %.3f ms  ttft %.3f ms  cpu %.2f s  server: %.1f/s lag p99 %.3f ms\n", $1, $2, $3, $6, $5, $7, $8, $9, $11, $12, $14 }' >&2
        if verdict "$line" 10; then fails=0; else fails=$((fails + 1)); fi
        sent=$(echo "$line" | awk '{ print ($4 < 0.9 * $1) }')
        [ "$fails" -ge 3 ] || [ "$sent" = 1 ] && break
    done
    return 0
}

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
echo "server:  $SERVER_SHOWN ($URL), ${PIN_SERVER:-not pinned}"
echo "clients: $CLIENTS, ${PIN_CLIENT:-not pinned}; python: $("$PY" -c 'import sys, aiohttp; print(sys.version.split()[0], "aiohttp", aiohttp.__version__)')"
echo "ladder:  $RATES req/s, ${STEP_S} s each, constant arrivals; peak: $PEAK_N at once; runs: $RUNS (median)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at the start"
echo

: >"$WORK/steps.txt"
: >"$WORK/low.txt"
: >"$WORK/peak.txt"
: >"$WORK/cpu.txt"
run=1
while [ "$run" -le "$RUNS" ]; do
    for c in $CLIENTS; do
        echo "$c $run $(step "$c" "$LOW_RATE" $((LOW_RATE * STEP_S)))" >>"$WORK/low.txt"
        ladder "$c" "$run"
        line=$(step "$c" inf "$PEAK_N")
        echo "$c $run $line" >>"$WORK/peak.txt"
        echo "$c $run $line" | awk '{ printf "  %-6s run %s: peak %d at once: failed %d  %.0f req/s  cpu %.2f s\n", $1, $2, $4, $5, $10, $11 }' >&2
        line=$(STEP_LIMIT=180 step "$c" "$CPU_RATE_HI" $((CPU_RATE_HI * STEP_S)))
        echo "$c $run $line" >>"$WORK/cpu.txt"
        echo "$c $run $line" | awk '{ printf "  %-6s run %s: %d req/s asked, %d sent at %.0f/s: cpu %.1f us a request (user %.1f, sys %.1f)\n", $1, $2, $3, $4, $6, $4 ? $11 / $4 * 1e6 : 0, $4 ? $15 / $4 * 1e6 : 0, $4 ? $16 / $4 * 1e6 : 0 }' >&2
    done
    run=$((run + 1))
done

# Per client and run: the best step under 1 ms and under 10 ms, the TTFT at
# LOW_RATE, the CPU per 1000 requests at CPU_RATE and the peak throughput;
# then medians over runs.
awk -v runs="$RUNS" -v low="$LOW_RATE" -v cr="$CPU_RATE" -v hi="$CPU_RATE_HI" -v clients="$CLIENTS" \
    -v steps="$WORK/steps.txt" -v peakf="$WORK/peak.txt" -v cpuf="$WORK/cpu.txt" -v srv="$JUDGE_SRV" '
function ok(f, m,   a, p) {
    a = srv ? f[12] : f[6]; p = srv ? f[14] : f[8]
    return f[4] > 0 && f[5] == 0 && a >= 0.98 * f[3] && a <= 1.02 * f[3] && p < m
}
function med(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : 0
}
FILENAME == peakf { if ($4 > 0) peak[$1, $2] = $10; next }
FILENAME == cpuf { if ($4 > 0) { us[$1, $2] = $11 / $4 * 1e6; uu[$1, $2] = $15 / $4 * 1e6; su[$1, $2] = $16 / $4 * 1e6; hs[$1, $2] = $6 }; next }
FILENAME != steps { ttft[$1, $2] = $9; next }
{
    split($0, f, " "); k = f[1] SUBSEP f[2]
    if (ok(f, 1) && f[3] > best1[k]) { best1[k] = f[3]; p99[k] = srv ? f[14] : f[8] }
    if (ok(f, 10) && f[3] > best10[k]) { best10[k] = f[3]; p99b[k] = srv ? f[14] : f[8] }
    if (f[3] == cr && f[4] > 0) cpu[k] = f[11] / f[4] * 1000
}
END {
    name["atr"] = "atr replay llm"; name["py512"] = "python, pool 512"; name["py"] = "python, unbounded"
    printf "%-18s %12s %9s %13s %9s %11s %12s %13s %21s\n", "client", "rate p99<1ms", "lag p99", \
        "rate p99<10ms", "lag p99", "peak req/s", "TTFT@" low "/s", "CPU s/1000 rq", "us/rq@" hi "/s (u+s)"
    n = split(clients, cl, " ")
    for (c = 1; c <= n; c++) {
        for (r = 1; r <= runs; r++) {
            k = cl[c] SUBSEP r
            a[r] = best1[k] + 0; b[r] = p99[k] + 0; d[r] = best10[k] + 0; e[r] = p99b[k] + 0
            g[r] = ttft[cl[c], r] + 0; h[r] = cpu[k] + 0; pk[r] = peak[k] + 0
            x[r] = us[k] + 0; y[r] = uu[k] + 0; z[r] = su[k] + 0
        }
        R1[cl[c]] = med(a, runs); R10[cl[c]] = med(d, runs); P[cl[c]] = med(pk, runs); U[cl[c]] = med(x, runs)
        printf "%-18s %12s %9s %13s %9s %11d %12.3f %13.3f %21s\n", \
            (cl[c] in name ? name[cl[c]] : cl[c]), \
            (R1[cl[c]] ? sprintf("%d", R1[cl[c]]) : "none"), (R1[cl[c]] ? sprintf("%.3f", med(b, runs)) : "-"), \
            (R10[cl[c]] ? sprintf("%d", R10[cl[c]]) : "none"), (R10[cl[c]] ? sprintf("%.3f", med(e, runs)) : "-"), \
            P[cl[c]], med(g, runs), med(h, runs), sprintf("%.1f (%.1f+%.1f)", U[cl[c]], med(y, runs), med(z, runs))
    }
    for (c = 1; c <= n; c++) {
        if (cl[c] == "atr" || !("atr" in R10)) continue
        printf "\natr / %s: rate p99<1ms %s, rate p99<10ms %s, peak %s, CPU a request at %d/s %s", name[cl[c]], \
            (R1[cl[c]] ? sprintf("%.1fx", R1["atr"] / R1[cl[c]]) : "n/a"), \
            (R10[cl[c]] ? sprintf("%.1fx", R10["atr"] / R10[cl[c]]) : "n/a"), \
            (P[cl[c]] ? sprintf("%.1fx", P["atr"] / P[cl[c]]) : "n/a"), hi, \
            (U["atr"] ? sprintf("%.1fx less", U[cl[c]] / U["atr"]) : "n/a")
    }
    printf "\n(rates: median over %d runs of the highest ladder step passing, judged %s; lag: p99 in ms at\n", runs, \
        srv ? "at the server (arrivals against the schedule)" : "by the clients (send lag)"
    printf " that step; peak: successes per second with all requests due at once; TTFT@%d/s: mean\n", low
    printf " TTFT in ms at %d req/s; CPU: user+sys per 1000 requests at %d req/s; us/rq: CPU per request\n", low, cr
    printf " of a run asked for %d req/s, user + system)\n", hi
}' "$WORK/peak.txt" "$WORK/cpu.txt" "$WORK/low.txt" "$WORK/steps.txt"

echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at the end"

if [ "${ATR_BENCH_KEEP:-}" ]; then
    cp "$WORK/steps.txt" "$WORK/low.txt" "$WORK/peak.txt" "$WORK/cpu.txt" "$ATR_BENCH_KEEP"/
fi
