# test-replay.sh - atr replay tools on real processes and the host's real
# cgroups (we run as root): metrics, limits, timeouts, leftovers, safety.
R=$T/replay
mkdir -p "$R"
TR=$DATA/replay/steps.ndjson
# field FILE TRACE STEP CONFIG KEY: one value of a metrics line (a script,
# so that `check`, which runs sh -c, can call it).
cat >"$R/field" <<'PY'
#!/usr/bin/env python3
import json, sys
f, trace, step, config, key = sys.argv[1:]
for l in open(f):
    m = json.loads(l)
    if m['trace_id'] == trace and m['step_id'] == int(step) and m['config'] == config:
        print(m.get(key))
PY
chmod +x "$R/field"
field() { "$R/field" "$@"; }

fails "replay needs a mode" 2 "wants a mode" "$ATR" replay "$TR"
fails "replay bad config" 2 "unknown configuration 'fast'" "$ATR" replay tools --config fast "$TR" --out "$R/x"
fails "replay bad mem" 2 "mem-max wants a size" "$ATR" replay tools --mem-max lots "$TR" --out "$R/x"
fails "replay bad shard" 2 "shard wants I/N" "$ATR" replay tools --shard 3/3 "$TR" --out "$R/x"
fails "replay missing trace" 1 "nothere.ndjson: No such file" "$ATR" replay tools "$R/nothere.ndjson" --out "$R/x"

ok "dry run" "$ATR" replay tools --dry-run "$TR"
check "dry run lists runs and skips" "grep -q 'replay/basic	1	run	echo hello' '$T/out' && grep -q 'replay/basic	2	skip	not a shell command' '$T/out' && grep -q 'replay/basic	6	skip	command redacted' '$T/out'"

ok "replay static-toolcall" "$ATR" replay tools -q --config static-toolcall --mem-max 128M --timeout 20 "$TR" --out "$R/st"
M=$R/st/metrics.jsonl
check "one line per tool step" "[ \$(wc -l <'$M') -eq 9 ]"
check "echo ran" "[ \"\$('$R/field' '$M' replay/basic 1 static-toolcall exit_code)\" = 0 ]"
check "exit code kept" "[ \"\$('$R/field' '$M' replay/basic 3 static-toolcall exit_code)\" = 3 ]"
check "editor skipped" "[ \"\$('$R/field' '$M' replay/basic 2 static-toolcall skipped)\" = 'not a shell command' ]"
check "redacted skipped" "[ \"\$('$R/field' '$M' replay/basic 6 static-toolcall skipped)\" = 'command redacted' ]"
check "64 MiB peak of the tree" "python3 -c \"import sys; v=float('\$('$R/field' '$M' replay/basic 4 static-toolcall max_rss_mb)'); sys.exit(not 60 <= v <= 80)\""
check "peak from the cgroup" "[ \"\$('$R/field' '$M' replay/basic 4 static-toolcall rss_scope)\" = cgroup ]"
check "200 MiB over a 128M limit is stopped" "[ \"\$('$R/field' '$M' replay/limits 1 static-toolcall oom_kills)\" -ge 1 ] || [ \"\$('$R/field' '$M' replay/limits 1 static-toolcall mem_max_events)\" -ge 1 ]"
check "step timeout from the trace" "[ \"\$('$R/field' '$M' replay/limits 2 static-toolcall timed_out)\" = True ]"
check "timeout took about 1 s" "python3 -c \"import sys; v=float('\$('$R/field' '$M' replay/limits 2 static-toolcall latency_ms)'); sys.exit(not 900 <= v <= 5000)\""
check "fresh empty work directory" "grep -q '\"trace_id\":\"replay/limits\",\"step_id\":0' '$M'"
check "background process killed" "! pgrep -f 'sleep [2]99.93' >/dev/null"
check "summary written" "python3 -c \"import json; s=json.load(open('$R/st/summary.json')); c=s['configs'][0]; assert c['config']=='static-toolcall' and c['total_steps']==9 and c['skipped_steps']==2 and c['traces']==2, c\""
# Groups of live processes (other tests running in parallel) are fine; a
# group whose atr process is gone is a leak.
cat >"$R/leaks" <<'SH'
for d in /sys/fs/cgroup/*/atr-* /sys/fs/cgroup/*/*/atr-* /sys/fs/cgroup/*/*/*/atr-*; do
    [ -d "$d" ] || continue
    pid=${d##*/atr-}
    case $pid in *[!0-9]*) continue ;; esac    # only atr's own "atr-<pid>" roots
    [ -d "/proc/$pid" ] || echo "$d"
done
SH
check "no cgroup of atr left" "[ -z \"\$(sh '$R/leaks')\" ]"
check "no work directory left" "for d in /tmp/atr-work-*; do [ -d \"\$d\" ] || continue; p=\${d#/tmp/atr-work-}; p=\${p%%-*}; [ -d /proc/\$p ] || exit 1; done"

# Several configurations, shards and merge give the same steps.
ok "replay none+static-env" "$ATR" replay tools -q --config none,static-env --sandbox none "$TR" --out "$R/two"
check "both configs in summary" "python3 -c \"import json; s=json.load(open('$R/two/summary.json')); assert [c['config'] for c in s['configs']]==['none','static-env']\""
check "none has no cgroup peak" "[ \"\$('$R/field' '$R/two/metrics.jsonl' replay/basic 4 none rss_scope)\" = process ]"
ok "shard 0/2" "$ATR" replay tools -q --config none --sandbox none --shard 0/2 "$TR" --out "$R/s0"
ok "shard 1/2" "$ATR" replay tools -q --config none --sandbox none --shard 1/2 "$TR" --out "$R/s1"
check "shards split the traces" "grep -q replay/basic '$R/s0/metrics.jsonl' && ! grep -q replay/limits '$R/s0/metrics.jsonl' && grep -q replay/limits '$R/s1/metrics.jsonl'"
ok "merge" "$ATR" replay tools -q --merge "$R/s0" "$R/s1" --out "$R/merged"
check "merged steps" "python3 -c \"import json; c=json.load(open('$R/merged/summary.json'))['configs'][0]; assert c['traces']==2 and c['total_steps']==9, c\""
fails "merge bad input" 1 "metrics.jsonl:1:1: " sh -c "mkdir -p '$R/bad' && echo 'not json' >'$R/bad/metrics.jsonl' && '$ATR' replay tools --merge '$R/bad' --out '$R/m2'"

# dynamic: both controllers raise memory.high under a growing step and
# record their reaction times, per step and in the summary.
for k in psi-poll psi-trigger; do
    ok "replay dynamic $k" "$ATR" replay tools -q --config dynamic --controller "$k" --interval 10 --mem-high 8M "$TR" --out "$R/dyn-$k"
    check "dynamic $k adjusted" "[ \"\$('$R/field' '$R/dyn-$k/metrics.jsonl' replay/basic 4 dynamic ctl_adjustments)\" -ge 1 ]"
    check "dynamic $k reaction recorded" "python3 -c \"import json; c=json.load(open('$R/dyn-$k/summary.json'))['configs'][0]; assert c['ctl_adjustments']>=1 and c['ctl_reaction_p50_us']>0 and c['ctl_reaction_bound_p99_us']>=c['ctl_reaction_p50_us'], c\""
done
check "dynamic leaves no group" "[ -z \"\$(sh '$R/leaks')\" ]"

# Known resource use through the project's helper: CPU time and the memory
# peak of the whole tree, also when a forked child does the allocation.
HOG=$(dirname "$ATR")/atr-memhog
if [ -x "$HOG" ]; then
    printf '{"format":"atr-trace/1","trace_id":"hog","steps":[{"kind":"tool","tool":"bash","command":"%s -c 300"},{"kind":"tool","tool":"bash","command":"%s -m 96 -f"},{"kind":"tool","tool":"bash","command":"%s -g 2 -s 100000","timeout_ms":1500}]}\n' "$HOG" "$HOG" "$HOG" >"$R/hog.ndjson"
    ok "replay memhog" "$ATR" replay tools -q --config static-toolcall --sandbox none "$R/hog.ndjson" --out "$R/hog"
    check "cpu_ms of a 300 ms spin within 10%" "python3 -c \"import sys; v=float('\$('$R/field' '$R/hog/metrics.jsonl' hog 0 static-toolcall cpu_ms)'); sys.exit(not 270 <= v <= 330)\""
    check "96 MiB in a forked child within 10%" "python3 -c \"import sys; v=float('\$('$R/field' '$R/hog/metrics.jsonl' hog 1 static-toolcall max_rss_mb)'); sys.exit(not 86.4 <= v <= 105.6)\""
    check "timed-out step's grandchildren killed" "[ \"\$('$R/field' '$R/hog/metrics.jsonl' hog 2 static-toolcall timed_out)\" = True ] && ! pgrep -f 'atr-memhog [-]g 2' >/dev/null"
else
    echo "skip: $HOG not built"
fi

# Ctrl-C: the running step is killed and not recorded, every line on disk
# is complete, the summary says incomplete, nothing is left behind.
printf '{"format":"atr-trace/1","trace_id":"int","steps":[{"kind":"tool","tool":"bash","command":"true"},{"kind":"tool","tool":"bash","command":"sleep 59.91"},{"kind":"tool","tool":"bash","command":"true"}]}\n' >"$R/int.ndjson"
"$ATR" replay tools -q "$R/int.ndjson" --out "$R/int" >/dev/null 2>"$R/int.err" &
pid=$!
deadline=$(( $(date +%s) + 20 ))
while [ "$( (wc -l <"$R/int/metrics.jsonl") 2>/dev/null || echo 0)" -lt 1 ] && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.05
done
kill -INT "$pid"
wait "$pid"
st=$?
CURRENT="ctrl-c exit status"; [ "$st" -eq 130 ] && pass || fail "exit status $st, not 130"
check "ctrl-c complete lines only" "[ \$(wc -l <'$R/int/metrics.jsonl') -eq 1 ] && python3 -c \"import json; [json.loads(l) for l in open('$R/int/metrics.jsonl')]\""
check "ctrl-c summary incomplete" "python3 -c \"import json; assert json.load(open('$R/int/summary.json'))['incomplete'] is True\""
check "ctrl-c message" "grep -q 'interrupted' '$R/int.err'"
check "ctrl-c killed the step" "! pgrep -f 'sleep [5]9.91' >/dev/null"
check "ctrl-c leaves no group" "[ -z \"\$(sh '$R/leaks')\" ]"

# --rootfs: steps run inside an exported root file system (a tiny one from
# Debian's busybox-static), in the step's recorded cwd when the image has it.
if [ -x /bin/busybox ]; then
    RF=$R/rootfs
    mkdir -p "$RF/bin" "$RF/testbed"
    cp /bin/busybox "$RF/bin/"
    for c in sh echo cat pwd; do ln -sf busybox "$RF/bin/$c"; done
    printf '{"format":"atr-trace/1","trace_id":"rf","steps":[{"kind":"tool","tool":"bash","command":"echo hi > /out; pwd > /where","cwd":"/testbed"},{"kind":"tool","tool":"bash","command":"pwd","cwd":"/not-in-image"}]}\n' >"$R/rf.ndjson"
    ok "replay --rootfs" "$ATR" replay tools -q --rootfs "$RF" "$R/rf.ndjson" --out "$R/rf"
    check "rootfs step wrote inside the image" "[ \"\$(cat '$RF/out')\" = hi ] && [ ! -e /out ]"
    check "rootfs step ran in its recorded cwd" "[ \"\$(cat '$RF/where')\" = /testbed ]"
    check "rootfs falls back to /" "[ \"\$('$R/field' '$R/rf/metrics.jsonl' rf 1 static-toolcall output_bytes)\" = 2 ]"
else
    echo "skip: --rootfs tests need /bin/busybox (Debian busybox-static)"
fi
