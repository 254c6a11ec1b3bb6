# test-bench-run.sh - `atr bench run` for real: the example spec
# (examples/bench/sim.json, `atr sim serve` as the engine) produces every
# outcome; SIGKILL of atr mid-run leaves no server, cgroup or temporary and
# a second run resumes; two shards merge into the unsharded report; Ctrl-C;
# a port already taken; command mode parsing vLLM's console output; setsid
# children of a server and of a benchmark command killed with the run's
# cgroups (timeout, SIGKILL of atr, of atr and its guard), and the
# process-group fallback's warning on a host without cgroups.
# Ports are free ones chosen by atr (--port 0, "port": 0), so two suites
# can run at once.

BR=$T/bench-run
mkdir -p "$BR"
LEFT=$DATA/replay/leftovers.sh

# The example spec as the tests run it: its workdir in this run's folder
# (hermetic), and the agents' timeouts shortened (startup 5 -> 3 s,
# benchmark 10 -> 5 s). The stall and slow-start agents run into them in
# four of the runs below, which was most of this file's time; the other
# agents answer 20 requests in well under a second.
cp -r "$ROOT/examples/bench" "$BR/spec"
python3 - "$BR/spec/sim.json" "$BR/work" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["workdir"] = sys.argv[2]
spec["variants"]["agent"].update(startup_timeout_s=3, benchmark_timeout_s=5)
json.dump(spec, open(sys.argv[1], "w"), indent=2)
PY
SPEC=$BR/spec/sim.json

# outcome_is DIR NAME OUTCOME : DIR/results/NAME_result.json has it (a
# script, as check's conditions run in a new shell).
cat >"$BR/outcome_is" <<'SH'
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d['outcome'] != sys.argv[2])" \
    "$1/results/$2_result.json" "$3"
SH
outcome_is="sh $BR/outcome_is"

# ---- the example: every outcome, killed with SIGKILL mid-run and resumed ----
# The stall run (item 2) holds the benchmark for 5 s: kill atr there.
setsid "$ATR" bench run "$SPEC" --port 0 -o "$BR/full" \
    >"$BR/full.out" 2>"$BR/full.err" &
KPID=$!
wait_for 60 "grep -q 'agent stall: benchmark' '$BR/full.err'"
check bench-run-reached-stall "grep -q 'agent stall: benchmark' '$BR/full.err'"
STALL_PORT=$(sed -n 's|^atr sim serve: listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$BR/full/logs/b2c3d4e5_agent_stall.log")
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null
# The guard stops the server and removes the cgroups: poll until it has.
wait_for 10 "[ -z \"\$(sh '$LEFT' $KPID)\" ]"
check bench-run-sigkill-no-leftovers "[ -z \"\$(sh '$LEFT' $KPID)\" ]"
check bench-run-sigkill-port-free "[ -n '$STALL_PORT' ] && ! curl -s -m 1 -o /dev/null http://127.0.0.1:$STALL_PORT/health"
# "port": 0 picks a port below the ephemeral range, out of --port 0's way.
check bench-run-port-below-ephemeral "[ -n '$STALL_PORT' ] && [ '$STALL_PORT' -lt \$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range) ]"
check bench-run-sigkill-no-temporaries "! ls '$BR/full/results' | grep -q tmp"
check bench-run-sigkill-no-stall-result "[ ! -e '$BR/full/results/b2c3d4e5_agent_stall_result.json' ]"
check bench-run-sigkill-7-results "[ \$(ls '$BR/full/results' | wc -l) = 7 ]"

setsid "$ATR" bench run "$SPEC" --port 0 -o "$BR/full" \
    >"$BR/resume.out" 2>"$BR/resume.err" &
RPID=$!
wait "$RPID"; rc=$?
check bench-run-resume-exit-0 "[ $rc = 0 ]"
check bench-run-resume-skipped-7 "grep -q '^11 runs: 4 written, 7 had a result; 1 startup_timeout; 1 benchmark_timeout; 1 oom; 1 patch_failed$' '$BR/resume.out'"
check bench-run-resume-says-skipped "[ \$(grep -c 'has a result, skipped' '$BR/resume.err') = 7 ]"
check bench-run-resume-no-leftovers "[ -z \"\$(sh '$LEFT' $RPID)\" ]"
check bench-run-11-results "[ \$(ls '$BR/full/results' | wc -l) = 11 ] && [ \$(ls '$BR/full/logs' | wc -l) = 13 ]"
for pair in a1b2c3d4_baseline:success a1b2c3d4_human:success a1b2c3d4_agent_fast:success \
    a1b2c3d4_agent_crash:server_crashed a1b2c3d4_agent_fail-all:no_metrics \
    b2c3d4e5_baseline:success b2c3d4e5_human:success b2c3d4e5_agent_stall:benchmark_timeout \
    b2c3d4e5_agent_oom:oom b2c3d4e5_agent_slow-start:startup_timeout \
    b2c3d4e5_agent_empty:patch_failed; do
    check "bench-run-outcome-${pair%%:*}" "$outcome_is '$BR/full' ${pair%%:*} ${pair#*:}"
done
check bench-run-no-agent-none "[ ! -e '$BR/full/results/a1b2c3d4_agent_none_result.json' ]"

# ISO-Bench's fields, the full latency set, and atr's own.
cat >"$BR/fields.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("human_commit", "human_commit_full", "parent_commit", "model", "status", "error",
          "duration_s", "metrics", "raw_output", "timestamp", "outcome", "agent", "variant",
          "server_exit", "model_override", "atr_version", "spec_hash", "server_log_tail",
          "contained_by", "warning"):
    assert k in d, k
m = d["metrics"]
# Gaps can be 0: chunks that reach the client in one read share a time (a
# slow client, as under the sanitizers, reads several at once).
for f in ("ttft", "tpot", "itl", "e2el"):
    for s in ("mean", "median", "p90", "p99"):
        v = m[f"{f}_{s}_ms"]
        assert v > 0 if f in ("ttft", "e2el") else v >= 0, (f, s, v)
assert m["itl_p99_ms"] > 0 and m["tpot_mean_ms"] > 0
assert m["request_throughput_req_s"] > 0 and m["output_token_throughput_tok_s"] > 0
assert m["completed"] == 20 and m["failed"] == 0
assert d["status"] == "success" and d["error"] is None
assert "Serving Benchmark Result" in d["raw_output"]
assert d["timing"]["startup_s"] > 0 and d["timing"]["teardown_s"] > 0
PY
check bench-run-result-fields "python3 '$BR/fields.py' '$BR/full/results/a1b2c3d4_human_result.json'"
check bench-run-model-override "python3 -c \"
import json; d = json.load(open('$BR/full/results/b2c3d4e5_human_result.json'))
assert d['model'] == 'meta-llama/Llama-3.2-1B-Instruct', d['model']
assert d['model_override'] == {'from': 'meta-llama/Llama-3.1-8B-Instruct', 'to': 'meta-llama/Llama-3.2-1B-Instruct', 'reason': 'the parent engine cannot load Llama 3.1 rope scaling'}
assert '--model meta-llama/Llama-3.2-1B-Instruct' in d['server_command']\""
check bench-run-crash-status "python3 -c \"
import json; d = json.load(open('$BR/full/results/a1b2c3d4_agent_crash_result.json'))
assert d['status'] == 'error' and d['server_exit']['phase'] == 'the benchmark' and d['server_exit']['status'] == 3, d['server_exit']
assert 'crashing after 5 requests' in d['server_log_tail']\""
check bench-run-oom-line "python3 -c \"
import json; d = json.load(open('$BR/full/results/b2c3d4e5_agent_oom_result.json'))
assert 'CUDA out of memory' in d['error'] and d['server_exit']['status'] == 1\""
check bench-run-timeouts-status "python3 -c \"
import json
for n in ('b2c3d4e5_agent_stall', 'b2c3d4e5_agent_slow-start'):
    assert json.load(open('$BR/full/results/' + n + '_result.json'))['status'] == 'timeout', n\""
check bench-run-patch-failed-no-server "python3 -c \"
import json; d = json.load(open('$BR/full/results/b2c3d4e5_agent_empty_result.json'))
assert d['server_exit'] is None and 'prepare ended with exit status 1' in d['error']\""
ok bench-run-report "$ATR" bench report "$BR/full"
check bench-run-report-counts "grep -q '| 11 | 5 | 4 | 2 | 5 of 11, 45.5 % |' '$T/out'"
# atr compare reads the same files: a row each, the human run's figures
# as its file has them, a failed run named with its outcome
ok bench-run-compare "$ATR" compare --json "$BR"/full/results/*_result.json
check bench-run-compare-rows "python3 -c \"
import json, glob
rows = json.load(open('$T/out')); files = glob.glob('$BR/full/results/*_result.json')
assert len(rows) == len(files) == 11, (len(rows), len(files))
h = [r for r in rows if r['file'].endswith('/a1b2c3d4_human_result.json')][0]
m = json.load(open(h['file']))['metrics']
assert h['policy'] == 'human' and h['target'].endswith('@a1b2c3d4'), h
assert (h['mean_ttft_ms'], h['p99_e2el_ms'], h['request_throughput']) == (m['ttft_mean_ms'], m['e2el_p99_ms'], m['request_throughput_req_s']), (h, m)
assert any(r['policy'] == 'agent/crash (server_crashed)' for r in rows), [r['policy'] for r in rows]\""

# ---- shards: 0:2 and 1:2 into two folders, merged by name = unsharded ----
ok bench-run-shard-1 "$ATR" bench run "$SPEC" --port 0 -q --shard 0:2 -o "$BR/s1"
ok bench-run-shard-2 "$ATR" bench run "$SPEC" --port 0 -q --shard 1:2 -o "$BR/s2"
check bench-run-shards-split "[ \$(ls '$BR/s1/results' | grep -c '^a1b2c3d4_') = 5 ] && [ \$(ls '$BR/s2/results' | grep -c '^b2c3d4e5_') = 6 ] && ! ls '$BR/s1/results' | grep -q b2c3d4e5"
"$ATR" bench report --json all="$BR/full" >"$BR/full.json"
"$ATR" bench report --json all="$BR/s1" all="$BR/s2" >"$BR/shards.json"
cat >"$BR/counts.py" <<'PY'
import json, sys
def counts(path):
    g = json.load(open(path))[0]
    keep = {k: g[k] for k in ("group", "total", "success", "error", "timeout", "success_rate", "outcomes")}
    keep["verdicts"] = sorted((c["commit"], c["agent"], c["verdict"] is not None) for c in g["comparison"])
    return keep
a, b = counts(sys.argv[1]), counts(sys.argv[2])
assert a == b, (a, b)
PY
check bench-run-shards-equal-unsharded "python3 '$BR/counts.py' '$BR/full.json' '$BR/shards.json'"
# Shards count from 0 as in replay (issue 26); the old 1-based I/N is
# refused, even where its I would be valid, with the I:N it meant.
fails bench-run-bad-shard 2 "--shard 2:2: shards count from 0: the last of 2 is 1:2" \
    "$ATR" bench run "$SPEC" --shard 2:2 -o "$BR/x"
fails bench-run-old-shard-last 2 "--shard 2/2: the I/N spelling is gone \\(bench run counted from 1\\): write --shard 1:2, shards count from 0" \
    "$ATR" bench run "$SPEC" --shard 2/2 -o "$BR/x"
fails bench-run-old-shard-first 2 "--shard 1/2: .*write --shard 0:2" "$ATR" bench run "$SPEC" --shard 1/2 -o "$BR/x"
fails bench-run-old-shard-zero 2 "--shard 0/2: the I/N spelling is gone: write I:N, shards count from 0 \\(the last of 2 is 1:2\\)" \
    "$ATR" bench run "$SPEC" --shard 0/2 -o "$BR/x"
fails bench-run-bad-shard-word 2 "--shard wants I:N with 0 <= I < N" "$ATR" bench run "$SPEC" --shard 1of2 -o "$BR/x"
absent bench-run-bad-shard-no-dir "$BR/x"

# ---- --only and --retry-failed ----
ok bench-run-only "$ATR" bench run "$SPEC" --port 0 -q --only b2c3 -o "$BR/only"
check bench-run-only-one-item "[ \$(ls '$BR/only/results' | wc -l) = 6 ] && ! ls '$BR/only/results' | grep -q a1b2c3d4"
# Retry: the 5 failures of item 2 run again (the same outcomes), successes stay.
before=$(stat -c %Y "$BR/only/results/b2c3d4e5_human_result.json")
"$ATR" bench run "$SPEC" --port 0 --only b2c3d4e5 --retry-failed -o "$BR/only" >"$BR/retry.out" 2>"$BR/retry.err"
check bench-run-retry-failed "grep -q '^6 runs: 4 written, 2 had a result;' '$BR/retry.out' && [ \$(stat -c %Y '$BR/only/results/b2c3d4e5_human_result.json') = $before ]"

# ---- Ctrl-C mid-benchmark: exit 130, no result for that run, nothing left ----
setsid "$ATR" bench run "$SPEC" --port 0 --only b2c3d4e5 -o "$BR/int" \
    >"$BR/int.out" 2>"$BR/int.err" &
IPID=$!
wait_for 60 "grep -q 'agent stall: benchmark' '$BR/int.err'"
kill -INT "$IPID"
wait "$IPID"; rc=$?
check bench-run-sigint-130 "[ $rc = 130 ] && grep -q 'interrupted' '$BR/int.err'"
check bench-run-sigint-no-stall-result "[ ! -e '$BR/int/results/b2c3d4e5_agent_stall_result.json' ] && [ -e '$BR/int/results/b2c3d4e5_human_result.json' ]"
check bench-run-sigint-no-leftovers "[ -z \"\$(sh '$LEFT' $IPID)\" ]"

# ---- a port already held by another server: exit 1, nothing run ----
"$ATR" sim serve --port 0 --ttft 0 --itl 0 >"$BR/held.out" 2>&1 &
HPID=$!
wait_for 10 "grep -q listening '$BR/held.out'"
HELD=$(sed -n 's|.*127.0.0.1:\([0-9]*\)$|\1|p' "$BR/held.out")
fails bench-run-port-held 1 "port $HELD is in use before the baseline server of a1b2c3d4 started" \
    "$ATR" bench run "$SPEC" -q --port "$HELD" -o "$BR/held"
check bench-run-port-held-no-results "[ -z \"\$(ls '$BR/held/results')\" ]"
kill "$HPID"; wait "$HPID" 2>/dev/null

# ---- command mode: vLLM's console output parsed; none; a timeout ----
mkdir -p "$BR/cmd/work"
cp "$DATA/bench-run/command.json" "$BR/cmd/"
cp "$DATA/bench-run/vllm-serving-output.txt" "$BR/cmd/work/output.txt"
ok bench-run-command "$ATR" bench run "$BR/cmd/command.json" -q -o "$BR/cmd/ok"
check bench-run-command-figures "python3 -c \"
import json; d = json.load(open('$BR/cmd/ok/results/c0ffee00_baseline_result.json'))
m = d['metrics']
assert d['outcome'] == 'success' and m['ttft_p99_ms'] == 920.66 and m['itl_median_ms'] == 16.98 and m['request_throughput_req_s'] == 49.4 and m['completed'] == 100, m\""
check bench-run-oom-at-start "$outcome_is '$BR/cmd/ok' c0ffee00_human oom && grep -q '\"phase\": \"startup\"' '$BR/cmd/ok/results/c0ffee00_human_result.json'"
: >"$BR/cmd/work/output.txt"
ok bench-run-command-empty "$ATR" bench run "$BR/cmd/command.json" -q -o "$BR/cmd/none"
check bench-run-command-no-metrics "$outcome_is '$BR/cmd/none' c0ffee00_baseline no_metrics"
touch "$BR/cmd/work/sleep"
ok bench-run-command-slow "$ATR" bench run "$BR/cmd/command.json" -q -o "$BR/cmd/slow"
check bench-run-command-timeout "$outcome_is '$BR/cmd/slow' c0ffee00_baseline benchmark_timeout"

# ---- serving mode with a trace: its llm steps are the requests ----
cat >"$BR/trace.json" <<EOF2
{"format": "atr-bench-spec/1", "port": 0,
 "variants": {"human": {"server": "atr sim serve --ttft 1 --itl 1 --port {port} --model {model}",
                        "ready_url": "http://127.0.0.1:{port}/health"}},
 "workload": {"trace": "$DATA/atr/small.ndjson"},
 "items": [{"human_commit": "abcdef12", "parent_commit": "p", "model": "m"}]}
EOF2
ok bench-run-trace "$ATR" bench run "$BR/trace.json" -q -o "$BR/trace"
check bench-run-trace-requests "python3 -c \"
import json; d = json.load(open('$BR/trace/results/abcdef12_human_result.json'))
assert d['outcome'] == 'success' and d['metrics']['completed'] == 2 and d['benchmark'] == '2 of 2 requests succeeded', d['benchmark']\""
sed "s|small.ndjson|missing.ndjson|" "$BR/trace.json" >"$BR/trace-missing.json"
fails bench-run-trace-missing 1 "missing\.ndjson: No such file or directory" "$ATR" bench run "$BR/trace-missing.json" -q -o "$BR/never"
absent bench-run-trace-missing-nothing "$BR/never"

# ---- containment: what a server and a benchmark command leave running ----
# Each runs in a cgroup of atr's own, so children that called setsid (out
# of the process group atr kills) die with the run: after a benchmark
# timeout, after SIGKILL of atr and its guard (the next run sweeps the
# groups left), and without cgroups the run goes on with a warning.
ESC=$BR/esc
mkdir -p "$ESC"
# esc_spec NAME TIMEOUT : a spec whose server and benchmark command each
# start a setsid sleep (pids in NAME-server.pid, NAME-bench.pid).
esc_spec() {
    cat >"$ESC/$1.json" <<EOF2
{"format": "atr-bench-spec/1", "port": 0, "workdir": "$ESC",
 "variants": {"baseline": {
   "server": "setsid sleep 1001 & echo \$! >{workdir}/$1-server.pid; exec atr sim serve --ttft 0 --itl 0 --port {port} --model {model}",
   "ready_url": "http://127.0.0.1:{port}/health", "startup_timeout_s": 10, "benchmark_timeout_s": $2}},
 "workload": {"mode": "command", "command": "setsid sleep 1002 & echo \$! >{workdir}/$1-bench.pid; sleep 30"},
 "items": [{"human_commit": "e5cafe00", "parent_commit": "p", "model": "m"}]}
EOF2
}
# gone PIDFILE : the sleep whose pid PIDFILE holds is dead: no such
# process, a zombie (dead, its reaping is init's), or the pid reused.
cat >"$ESC/gone" <<'SH'
p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] || exit 1
st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || exit 0
set -- $st
[ "$1" = Z ] && exit 0
! tr '\0' ' ' <"/proc/$p/cmdline" | grep -q '^sleep 100[12] '
SH
gone="sh $ESC/gone"

esc_spec timeout 1
ok bench-run-setsid-timeout "$ATR" bench run "$ESC/timeout.json" -q -o "$ESC/timeout"
check bench-run-setsid-timeout-outcome "$outcome_is '$ESC/timeout' e5cafe00_baseline benchmark_timeout"
# A host without cgroups can only warn (its result says so); others kill.
if ! grep -q '"contained_by": "process group"' "$ESC/timeout/results/e5cafe00_baseline_result.json"; then
    check bench-run-setsid-timeout-cgroup "grep -q '\"contained_by\": \"cgroup\", \"warning\": null' '$ESC/timeout/results/e5cafe00_baseline_result.json'"
    wait_for 10 "$gone '$ESC/timeout-bench.pid' && $gone '$ESC/timeout-server.pid'"
    check bench-run-setsid-bench-child-killed "$gone '$ESC/timeout-bench.pid'"
    check bench-run-setsid-server-child-killed "$gone '$ESC/timeout-server.pid'"

    # SIGKILL of atr alone mid-benchmark: its guard removes the groups, and
    # with them the benchmark command's children (setsid or not).
    esc_spec guard 60
    setsid "$ATR" bench run "$ESC/guard.json" -q -o "$ESC/guard" >/dev/null 2>&1 &
    KPID=$!
    wait_for 30 "[ -s '$ESC/guard-bench.pid' ] && [ -s '$ESC/guard-server.pid' ]"
    kill -KILL "$KPID"
    wait "$KPID" 2>/dev/null
    wait_for 10 "$gone '$ESC/guard-bench.pid' && $gone '$ESC/guard-server.pid' && [ -z \"\$(sh '$LEFT' $KPID)\" ]"
    check bench-run-guard-bench-child "$gone '$ESC/guard-bench.pid'"
    check bench-run-guard-server-child "$gone '$ESC/guard-server.pid'"
    check bench-run-guard-no-leftovers "[ -z \"\$(sh '$LEFT' $KPID)\" ]"

    # SIGKILL of atr and of its guard (so nothing cleans up) mid-benchmark:
    # the groups stay, with the children in them, until the next run sweeps.
    esc_spec killed 60
    setsid "$ATR" bench run "$ESC/killed.json" -q -o "$ESC/killed" >/dev/null 2>&1 &
    KPID=$!
    wait_for 30 "[ -s '$ESC/killed-bench.pid' ] && [ -s '$ESC/killed-server.pid' ]"
    GPID=
    for p in /proc/[0-9]*; do
        st=$(sed 's/.*) //' "$p/stat" 2>/dev/null) || continue
        # shellcheck disable=SC2086
        set -- $st
        [ "$2" = "$KPID" ] && [ "$(cat "$p/comm" 2>/dev/null)" = atr-guard ] && GPID=${p#/proc/}
    done
    check bench-run-killed-guard-found "[ -n '$GPID' ]"
    [ -n "$GPID" ] && kill -KILL "$GPID"   # the guard first: it would clean up
    kill -KILL "$KPID"
    wait "$KPID" 2>/dev/null
    check bench-run-killed-groups-left "find /sys/fs/cgroup -maxdepth 8 -type d -name 'atr-$KPID' | grep -q ."
    esc_spec next 1
    ok bench-run-killed-next-run "$ATR" bench run "$ESC/next.json" -q -o "$ESC/next"
    wait_for 10 "$gone '$ESC/killed-bench.pid' && $gone '$ESC/killed-server.pid'"
    check bench-run-killed-swept-bench-child "$gone '$ESC/killed-bench.pid'"
    check bench-run-killed-swept-server-child "$gone '$ESC/killed-server.pid'"
    check bench-run-killed-swept-groups "[ -z \"\$(sh '$LEFT' $KPID)\" ]"
else
    check bench-run-setsid-warns "grep -q '\"contained_by\": \"process group\", \"warning\": \"no cgroups of atr.s own here' '$ESC/timeout/results/e5cafe00_baseline_result.json'"
fi

# Without cgroups (a mount namespace without cgroupfs): the run goes on,
# process groups only, and says so on stderr and in the result.
if unshare -m true 2>/dev/null; then
    esc_spec nocg 1
    unshare -m sh -c "umount -l /sys/fs/cgroup && exec '$ATR' bench run '$ESC/nocg.json' -q -o '$ESC/nocg'" \
        >"$ESC/nocg.out" 2>"$ESC/nocg.err"
    rc=$?
    check bench-run-nocg-exit-0 "[ $rc = 0 ] && $outcome_is '$ESC/nocg' e5cafe00_baseline benchmark_timeout"
    check bench-run-nocg-warning "grep -q '^atr bench run: warning: no cgroups of atr.s own here (.*): servers and commands are stopped by their process group only' '$ESC/nocg.err'"
    check bench-run-nocg-result "grep -q '\"contained_by\": \"process group\", \"warning\": \"no cgroups of atr.s own here' '$ESC/nocg/results/e5cafe00_baseline_result.json'"
fi
# What outlived its run (the fallback's, or a failure above) is ours to end.
for f in "$ESC"/*.pid; do
    $gone "$f" || kill -KILL "$(cat "$f")" 2>/dev/null
done
