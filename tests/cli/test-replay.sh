# test-replay.sh - atr replay tools on real processes and the host's real
# cgroups (we run as root): metrics, limits, timeouts, leftovers, safety.
# Leftovers are looked for only among what these tests started (other
# checkouts may run the same tests on this host at once): runs start with
# setsid (`own`), their work directories go under $R/wd, and
# leftovers.sh PID lists that run's processes, "atr-PID" groups and work
# directories.
R=$T/replay
WD=$R/wd
mkdir -p "$R" "$WD"
TR=$DATA/replay/steps.ndjson
# own NAME CMD...: like `ok`, with CMD in a session of its own; $PID is its
# pid and session id (a background job of this non-interactive shell is
# not a group leader, so setsid runs CMD in place rather than forking).
own() {
    CURRENT=$1; shift
    setsid "$@" >"$T/out" 2>"$T/err" &
    PID=$!
    wait "$PID"
    st=$?
    if [ "$st" -eq 0 ]; then pass; else fail "exit $st from: $* -- $(head -c 400 "$T/err")"; fi
}
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
fails "replay bad shard" 2 "--shard 3:3: shards count from 0: the last of 3 is 2:3" "$ATR" replay tools --shard 3:3 "$TR" --out "$R/x"
fails "replay old shard spelling" 2 "--shard 1/3: the I/N spelling is gone \\(replay tools counted from 0\\): write --shard 1:3" \
    "$ATR" replay tools --shard 1/3 "$TR" --out "$R/x"
fails "replay missing trace" 1 "nothere.ndjson: No such file" "$ATR" replay tools "$R/nothere.ndjson" --out "$R/x"

ok "dry run" "$ATR" replay tools --dry-run "$TR"
check "dry run lists runs and skips" "grep -q 'replay/basic	1	run	echo hello' '$T/out' && grep -q 'replay/basic	2	skip	not a shell command' '$T/out' && grep -q 'replay/basic	6	skip	command redacted' '$T/out'"

own "replay static-toolcall" "$ATR" replay tools -q --config static-toolcall --mem-max 128M --timeout 20 --workdir "$WD" "$TR" --out "$R/st"
st_pid=$PID
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
check "summary written" "python3 -c \"import json; s=json.load(open('$R/st/summary.json')); c=s['configs'][0]; assert c['config']=='static-toolcall' and c['total_steps']==9 and c['skipped_steps']==2 and c['traces']==2, c\""
check "complete run: not incomplete, no reason" "python3 -c \"import json; s=json.load(open('$R/st/summary.json')); assert s['incomplete'] is False and s['reason'] is None, s\""
# The background `sleep 299.93` of replay/basic step 5 included.
check "nothing left: processes, groups, work directories" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $st_pid '$WD')\" ]"

# Several configurations, shards and merge give the same steps.
ok "replay none+static-env" "$ATR" replay tools -q --config none,static-env --sandbox none "$TR" --out "$R/two"
check "both configs in summary" "python3 -c \"import json; s=json.load(open('$R/two/summary.json')); assert [c['config'] for c in s['configs']]==['none','static-env']\""
check "none has no cgroup peak" "[ \"\$('$R/field' '$R/two/metrics.jsonl' replay/basic 4 none rss_scope)\" = process ]"
ok "shard 0:2" "$ATR" replay tools -q --config none --sandbox none --shard 0:2 "$TR" --out "$R/s0"
ok "shard 1:2" "$ATR" replay tools -q --config none --sandbox none --shard 1:2 "$TR" --out "$R/s1"
check "shards split the traces" "grep -q replay/basic '$R/s0/metrics.jsonl' && ! grep -q replay/limits '$R/s0/metrics.jsonl' && grep -q replay/limits '$R/s1/metrics.jsonl'"
ok "merge" "$ATR" replay tools -q --merge "$R/s0" "$R/s1" --out "$R/merged"
check "merged steps" "python3 -c \"import json; c=json.load(open('$R/merged/summary.json'))['configs'][0]; assert c['traces']==2 and c['total_steps']==9, c\""
fails "merge bad input" 1 "metrics.jsonl:1:1: " sh -c "mkdir -p '$R/bad' && echo 'not json' >'$R/bad/metrics.jsonl' && '$ATR' replay tools --merge '$R/bad' --out '$R/m2'"

# A failing run loses nothing (issue 26): every input and option is checked
# before --out is touched, the run writes into DIR.tmp.XXXXXX beside it and
# renames it into place at the end, and a DIR with files is refused unless
# --force. The old result survives byte for byte.
RK=$R/keep
ok "keep: a good result" "$ATR" replay tools -q --config none --sandbox none "$TR" --out "$RK"
cp -a "$RK" "$R/keep.orig"
printf '{"format":"atr-trace/1","trace_id":"talk","steps":[{"kind":"llm","input_tokens":3,"output_tokens":2}]}\n' >"$R/talk.ndjson"
kept() {   # kept NAME: the old result is as it was, nothing beside it
    check "$1: the old result survives" "diff -r '$R/keep.orig' '$RK' && [ -z \"\$(ls -d '$RK'.tmp.* '$RK'.old.* 2>/dev/null)\" ]"
}
# Without --force too (old atr truncated DIR/metrics.jsonl here).
fails "keep: a missing trace, no --force" 1 "nothere.ndjson: No such file|keep: exists and is not empty" "$ATR" replay tools -q --config none --sandbox none "$R/nothere.ndjson" --out "$RK"
kept "keep: a missing trace, no --force"
fails "keep: --merge A MISSING, no --force" 1 "nothere/metrics.jsonl: No such file|keep: exists and is not empty" "$ATR" replay tools -q --merge "$R/s0" "$R/nothere" --out "$RK"
kept "keep: --merge A MISSING, no --force"
fails "keep: a missing trace" 1 "nothere.ndjson: No such file" "$ATR" replay tools -q --config none --sandbox none --force "$R/nothere.ndjson" --out "$RK"
kept "keep: a missing trace"
fails "keep: no tool steps" 1 "no tool steps in .*talk.ndjson$" "$ATR" replay tools -q --config none --sandbox none --force "$R/talk.ndjson" --out "$RK"
kept "keep: no tool steps"
fails "keep: a bad trace among good ones" 1 "trunc0.ndjson:1:[0-9]+: " sh -c "printf '{\"format\":\"atr-trace/1\",\"trace_id\":\"cut\",\"steps\":[{\"kind\":\"to' >'$R/trunc0.ndjson'; \"\$0\" replay tools -q --config none --sandbox none --force '$TR' '$R/trunc0.ndjson' --out '$RK'" "$ATR"
kept "keep: a bad trace among good ones"
fails "keep: --rootfs missing" 1 "/nonexistent: No such file or directory \\(--rootfs" "$ATR" replay tools -q --config none --force --rootfs /nonexistent "$TR" --out "$RK"
kept "keep: --rootfs missing"
fails "keep: --rootfs without /bin/sh" 1 "not a root filesystem: no /bin/sh in it" "$ATR" replay tools -q --config none --force --rootfs "$R/wd" "$TR" --out "$RK"
fails "keep: --rootfs without the sandbox" 2 "--rootfs needs the sandbox" "$ATR" replay tools -q --config none --sandbox none --force --rootfs / "$TR" --out "$RK"
fails "keep: --merge A MISSING" 1 "nothere/metrics.jsonl: No such file" "$ATR" replay tools -q --force --merge "$R/s0" "$R/nothere" --out "$RK"
kept "keep: --merge A MISSING"
fails "keep: --merge of a bad line" 1 "metrics.jsonl:1:1: " "$ATR" replay tools -q --force --merge "$R/s0" "$R/bad" --out "$RK"
kept "keep: --merge of a bad line"
fails "keep: a typo in an option" 2 "unknown option '--mem-maxx'" "$ATR" replay tools -q --force --mem-maxx 1G "$TR" --out "$RK"
kept "keep: a typo in an option"
fails "keep: a folder with files wants --force" 1 "keep: exists and is not empty \\(give --force to replace it\\)$" "$ATR" replay tools -q --config none --sandbox none "$TR" --out "$RK"
kept "keep: without --force"
fails "keep: merge wants --force too" 1 "exists and is not empty \\(give --force" "$ATR" replay tools -q --merge "$R/s0" --out "$RK"
kept "keep: merge without --force"
ok "keep: --force replaces it" "$ATR" replay tools -q --config none --sandbox none --force --shard 0:2 "$TR" --out "$RK"
check "keep: --force gave the new result, nothing beside it" "! grep -q replay/limits '$RK/metrics.jsonl' && grep -q replay/basic '$RK/metrics.jsonl' && [ -z \"\$(ls -d '$RK'.tmp.* '$RK'.old.* 2>/dev/null)\" ]"
mkdir "$R/empty"
ok "keep: an empty folder needs no --force" "$ATR" replay tools -q --config none --sandbox none "$TR" --out "$R/empty/"
check "keep: the empty folder got the result" "[ -s '$R/empty/metrics.jsonl' ] && [ -s '$R/empty/summary.json' ]"
# A FIFO (as `<(...)` gives) is read once, by the run itself.
mkfifo "$R/fifo"
cat "$TR" >"$R/fifo" &
ok "keep: a FIFO input is read once" "$ATR" replay tools -q --config none --sandbox none "$R/fifo" --out "$R/fifo-out"
check "keep: a FIFO input ran every step" "[ \$(wc -l <'$R/fifo-out/metrics.jsonl') -eq 9 ]"
# A merge into one of its own inputs reads it whole before replacing it.
cp -a "$R/s0" "$R/s0b"
ok "keep: merge into an input" "$ATR" replay tools -q --force --merge "$R/s0b" "$R/s1" --out "$R/s0b"
check "keep: merge into an input has every step" "cmp '$R/s0b/summary.json' '$R/merged/summary.json'"

# dynamic: both controllers raise memory.high under a growing step and
# record their reaction times, per step and in the summary. The step grows
# 64 MiB over half a second (atr-memhog -r), so a controller polling every
# 10 ms has dozens of chances to act, even on a loaded host.
HOG=$(dirname "$ATR")/atr-memhog
printf '{"format":"atr-trace/1","trace_id":"grow","steps":[{"kind":"tool","tool":"bash","command":"%s -m 64 -r 500"}]}\n' "$HOG" >"$R/grow.ndjson"
for k in psi-poll psi-trigger; do
    # (--bind: the sandbox hides the host's /tmp, where the build may be)
    own "replay dynamic $k" "$ATR" replay tools -q --config dynamic --controller "$k" --interval 10 --mem-high 8M --bind "$(dirname "$HOG")" --workdir "$WD" "$TR" "$R/grow.ndjson" --out "$R/dyn-$k"
    check "dynamic $k leaves nothing" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $PID '$WD')\" ]"
    check "dynamic $k adjusted" "[ \"\$('$R/field' '$R/dyn-$k/metrics.jsonl' grow 0 dynamic ctl_adjustments)\" -ge 1 ]"
    check "dynamic $k reaction recorded" "python3 -c \"import json; c=json.load(open('$R/dyn-$k/summary.json'))['configs'][0]; assert c['ctl_adjustments']>=1 and c['ctl_reaction_p50_us']>0 and c['ctl_reaction_bound_p99_us']>=c['ctl_reaction_p50_us'], c\""
done

# Known resource use through the project's helper: CPU time and the memory
# peak of the whole tree, also when a forked child does the allocation.
if [ -x "$HOG" ]; then
    printf '{"format":"atr-trace/1","trace_id":"hog","steps":[{"kind":"tool","tool":"bash","command":"%s -c 300"},{"kind":"tool","tool":"bash","command":"%s -m 96 -f"},{"kind":"tool","tool":"bash","command":"%s -g 2 -s 100000","timeout_ms":1500}]}\n' "$HOG" "$HOG" "$HOG" >"$R/hog.ndjson"
    own "replay memhog" "$ATR" replay tools -q --config static-toolcall --sandbox none --workdir "$WD" "$R/hog.ndjson" --out "$R/hog"
    check "cpu_ms of a 300 ms spin within 10%" "python3 -c \"import sys; v=float('\$('$R/field' '$R/hog/metrics.jsonl' hog 0 static-toolcall cpu_ms)'); sys.exit(not 270 <= v <= 330)\""
    check "96 MiB in a forked child within 10%" "python3 -c \"import sys; v=float('\$('$R/field' '$R/hog/metrics.jsonl' hog 1 static-toolcall max_rss_mb)'); sys.exit(not 86.4 <= v <= 105.6)\""
    check "timed-out step's grandchildren killed" "[ \"\$('$R/field' '$R/hog/metrics.jsonl' hog 2 static-toolcall timed_out)\" = True ] && [ -z \"\$(sh '$DATA/replay/leftovers.sh' $PID '$WD')\" ]"
else
    echo "skip: $HOG not built"
fi

# Ctrl-C: the running step is killed and not recorded, every line on disk
# is complete, the summary says incomplete, nothing is left behind.
printf '{"format":"atr-trace/1","trace_id":"int","steps":[{"kind":"tool","tool":"bash","command":"true"},{"kind":"tool","tool":"bash","command":"sleep 59.91"},{"kind":"tool","tool":"bash","command":"true"}]}\n' >"$R/int.ndjson"
setsid "$ATR" replay tools -q --workdir "$WD" "$R/int.ndjson" --out "$R/int" >/dev/null 2>"$R/int.err" &
pid=$!
deadline=$(( $(date +%s) + 20 ))
while [ "$(cat "$R"/int.tmp.*/metrics.jsonl 2>/dev/null | wc -l)" -lt 1 ] && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.05
done
kill -INT "$pid"
wait "$pid"
st=$?
CURRENT="ctrl-c exit status"; [ "$st" -eq 130 ] && pass || fail "exit status $st, not 130"
check "ctrl-c complete lines only" "[ \$(wc -l <'$R/int/metrics.jsonl') -eq 1 ] && python3 -c \"import json; [json.loads(l) for l in open('$R/int/metrics.jsonl')]\""
check "ctrl-c summary incomplete, reason interrupted" "python3 -c \"import json; s=json.load(open('$R/int/summary.json')); assert s['incomplete'] is True and s['reason']=='interrupted', s\""
check "ctrl-c message" "grep -q 'interrupted' '$R/int.err'"
check "ctrl-c leaves nothing: the step, groups, work directory" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $pid '$WD')\" ]"
# Ctrl-C of a --force run over a result: the old result stays, the
# interrupted run's steps stay beside it, and the message says where.
cp -a "$R/int" "$R/int.orig"
setsid "$ATR" replay tools -q --force --workdir "$WD" "$R/int.ndjson" --out "$R/int" >/dev/null 2>"$R/int2.err" &
pid=$!
deadline=$(( $(date +%s) + 20 ))
while [ "$(cat "$R"/int.tmp.*/metrics.jsonl 2>/dev/null | wc -l)" -lt 1 ] && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.05
done
kill -INT "$pid"
wait "$pid"
st=$?
CURRENT="ctrl-c over a result: exit status"; [ "$st" -eq 130 ] && pass || fail "exit status $st, not 130"
check "ctrl-c over a result: the old one survives" "diff -r '$R/int.orig' '$R/int'"
check "ctrl-c over a result: the message names the new steps" "grep -q '^atr: interrupted: complete steps are in $R/int.tmp.[A-Za-z0-9]*/metrics.jsonl ($R/int is as it was)\$' '$R/int2.err'"
check "ctrl-c over a result: the new steps are there" "python3 -c \"import glob, json; d=glob.glob('$R/int.tmp.*'); assert len(d)==1, d; s=json.load(open(d[0]+'/summary.json')); assert s['reason']=='interrupted' and len(open(d[0]+'/metrics.jsonl').readlines())==1\""

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
    check "rootfs: the cwd the image lacks is recorded" "[ \"\$('$R/field' '$R/rf/metrics.jsonl' rf 1 static-toolcall missing_cwd)\" = /not-in-image ] && [ \"\$('$R/field' '$R/rf/metrics.jsonl' rf 0 static-toolcall missing_cwd)\" = None ]"
else
    echo "skip: --rootfs tests need /bin/busybox (Debian busybox-static)"
fi

# SIGKILL of atr and its guard leaves the run's work directory and groups
# (nothing can clean up after it); the next run sweeps both. A work directory is a live run's
# while its lock is held, whatever its pid says: here one named for a pid
# that does not exist, locked by a process in another PID namespace, is
# kept (with its trace's browser profile), and one named for a live pid
# (this shell's) that nobody locks is swept, as is a browser profile whose
# work directory is gone.
mkdir -p "$R/kwd" "$R/kwd/atr-work-999999999-0-held" "$R/kwd/atr-browser-999999999-0-0" \
    "$R/kwd/atr-work-$$-0-unlocked" "$R/kwd/atr-browser-$$-7-0"
unshare -fp --kill-child flock "$R/kwd/atr-work-999999999-0-held" sleep 120 &
holder=$!
deadline=$(( $(date +%s) + 20 ))
while flock -n "$R/kwd/atr-work-999999999-0-held" true && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.05
done
printf '{"format":"atr-trace/1","trace_id":"k","steps":[{"kind":"tool","tool":"bash","command":"true"},{"kind":"tool","tool":"bash","command":"sleep 59.92"}]}\n' >"$R/kill.ndjson"
setsid "$ATR" replay tools -q --workdir "$R/kwd" "$R/kill.ndjson" --out "$R/kill" >/dev/null 2>&1 &
kpid=$!
deadline=$(( $(date +%s) + 20 ))
while [ "$(cat "$R"/kill.tmp.*/metrics.jsonl 2>/dev/null | wc -l)" -lt 1 ] && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.05
done
for p in /proc/[0-9]*; do   # its guard (it would remove them): atr's child named atr-guard
    [ "$(awk '{print $4}' "$p/stat" 2>/dev/null)" = "$kpid" ] && [ "$(cat "$p/comm" 2>/dev/null)" = atr-guard ] && kill -KILL "${p#/proc/}"
done
kill -KILL "$kpid"
{ wait "$kpid"; } 2>/dev/null      # the shell's "Killed" is expected here
check "sigkill leaves a work directory behind" "sh '$DATA/replay/leftovers.sh' $kpid '$R/kwd' | grep -q 'work directory .*/atr-work-$kpid-'"
printf '{"format":"atr-trace/1","trace_id":"k2","steps":[{"kind":"tool","tool":"bash","command":"true"}]}\n' >"$R/next.ndjson"
own "the next run" "$ATR" replay tools -q --workdir "$R/kwd" "$R/next.ndjson" --out "$R/kill2"
check "the next run sweeps the dead run's work directory and groups" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $kpid '$R/kwd' | grep -v 'atr-work-999999999-0-held')\" ]"
check "a locked work directory is kept, whatever its pid" "[ -d '$R/kwd/atr-work-999999999-0-held' ] && [ -d '$R/kwd/atr-browser-999999999-0-0' ]"
check "an unlocked one is swept, though its pid lives" "[ ! -e '$R/kwd/atr-work-$$-0-unlocked' ] && [ ! -e '$R/kwd/atr-browser-$$-7-0' ]"
kill -KILL "$holder"     # unshare -f ignores SIGTERM; its child dies with it (--kill-child)
wait "$holder" 2>/dev/null

# Without --workdir, work directories go under $TMPDIR (each test run has
# its own), not /tmp.
mkdir -p "$R/tmpd"
printf '{"format":"atr-trace/1","trace_id":"w","steps":[{"kind":"tool","tool":"bash","command":"pwd >%s/pwd.txt"}]}\n' "$R" >"$R/pwd.ndjson"
TMPDIR=$R/tmpd ok "work directory under TMPDIR" "$ATR" replay tools -q --sandbox none --config none "$R/pwd.ndjson" --out "$R/pwd"
check "the step ran in \$TMPDIR/atr-work-*" "grep -q '^$R/tmpd/atr-work-' '$R/pwd.txt'"

# A parse error mid-file is found before anything runs: no output. Read
# from stdin (which is not read twice), it stops the run: the summary of
# the steps that ran says incomplete, and why.
{ cat "$TR"; printf '{"format":"atr-trace/1","trace_id":"cut","steps":[{"kind":"to'; } >"$R/trunc.ndjson"
fails "truncated input fails" 1 "trunc.ndjson:3:[0-9]+: " "$ATR" replay tools -q --config none --sandbox none --workdir "$WD" "$R/trunc.ndjson" --out "$R/trunc"
check "truncated input: nothing ran, nothing written" "[ ! -e '$R/trunc' ] && [ -z \"\$(ls -d '$R/trunc'.tmp.* 2>/dev/null)\" ]"
fails "truncated stdin fails" 1 "^atr: <stdin>:3:[0-9]+: " sh -c "\"\$0\" replay tools -q --config none --sandbox none --workdir '$WD' - --out '$R/trunc' <'$R/trunc.ndjson'" "$ATR"
check "truncated stdin: summary incomplete, with the error" "python3 -c \"import json; s=json.load(open('$R/trunc/summary.json')); assert s['incomplete'] is True and s['reason'].startswith('<stdin>:3:') and s['configs'][0]['total_steps']==9, s\""

# Nothing to replay is an error, not an empty success.
printf '{"format":"atr-trace/1","trace_id":"talk","steps":[{"kind":"llm","input_tokens":3,"output_tokens":2}]}\n' >"$R/nollm.ndjson"
fails "no tool steps" 1 "^atr: no tool steps in .*nollm.ndjson$" "$ATR" replay tools -q --config none --sandbox none --workdir "$WD" "$R/nollm.ndjson" --out "$R/none"
fails "no tool steps, dry run" 1 "^atr: no tool steps in .*nollm.ndjson and 1 more input$" "$ATR" replay tools --dry-run "$R/nollm.ndjson" "$R/nollm.ndjson"

# Failures by cause, in summary.json and the table, and a pointer to
# --rootfs when steps expect a directory of their repository image.
printf '{"format":"atr-trace/1","trace_id":"causes","steps":[{"kind":"tool","tool":"bash","command":"atr-no-such-command-7"},{"kind":"tool","tool":"bash","command":"exit 1","cwd":"/atr-no-such-dir-7"},{"kind":"tool","tool":"bash","command":"exit 4"},{"kind":"tool","tool":"bash","command":"sleep 30","timeout_ms":500},{"kind":"tool","tool":"bash","command":"dd if=/dev/zero of=/dev/null bs=200M count=1"},{"kind":"tool","tool":"bash","command":"true"}]}\n' >"$R/causes.ndjson"
own "replay failing steps" "$ATR" replay tools --config static-toolcall --mem-max 128M --workdir "$WD" "$R/causes.ndjson" --out "$R/causes"
check "table: failures by cause" "grep -q '^static-toolcall  failed: 1 timeout, .*1 command not found (exit 127), 1 missing directory, ' '$T/out'"
check "table: hint at --rootfs" "grep -q '^hint: 1 step expects a working directory this host lacks (e.g. /atr-no-such-dir-7): .*--rootfs DIR' '$T/out'"
cat >"$R/causes.py" <<'PY'
import json, sys
d = sys.argv[1]
c = json.load(open(d + '/summary.json'))['configs'][0]
dd = [m for m in map(json.loads, open(d + '/metrics.jsonl')) if m['step_id'] == 4][0]
want = {'timeout': 1, 'oom': 0, 'command_not_found': 1, 'missing_directory': 1, 'missing_file': 0, 'nonzero_exit': 1}
if dd['exit_code'] != 0:    # 200M under a 128M limit: OOM-killed where memory is limited
    want['oom' if dd['oom_kills'] else 'nonzero_exit'] += 1
assert c['failures'] == want and c['failed_steps'] == sum(want.values()), c
assert c['missing_cwd_steps'] == 1 and c['missing_cwd'] == '/atr-no-such-dir-7', c
PY
check "summary.json: failures by cause" "python3 '$R/causes.py' '$R/causes'"
# A real SWE-agent trajectory recorded in /testbed: python and the repository
# are not on the host (exit 127 where python is not on the replay's PATH).
SWE=$DATA/swe-agent/marshmallow-1867__function_calling_replace.traj
own "replay a SWE-agent trajectory" "$ATR" replay tools --workdir "$WD" "$SWE" --out "$R/swe"
check "swe: hint names /testbed and --rootfs" "grep -q '^hint: 4 steps expect a working directory this host lacks (e.g. /testbed): the trace wants its repository image; replay inside it with --image IMAGE (or --rootfs DIR)' '$T/out'"
check "swe: every failure has a cause" "python3 -c \"import json; c=json.load(open('$R/swe/summary.json'))['configs'][0]; f=c['failures']; assert c['failed_steps']==sum(f.values())>=1 and f['missing_directory']+f['missing_file']>=1 and c['missing_cwd']=='/testbed', c\""

# Without root (nobody): no namespaces for the sandbox, no delegated
# cgroups; said before anything runs, with what to pass, exit 2, nothing
# written.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
    NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
    chmod 711 "$T" "$R"                    # our own dirs: let nobody reach $R/np
    mkdir -p "$R/np" && chmod 777 "$R/np"
    # The checkout may sit where nobody cannot enter: give nobody its own
    # copies of the binary and the trace.
    cp "$ATR" "$R/np/atr" && cp "$TR" "$R/np/steps.ndjson" && chmod 755 "$R/np/atr"
    fails "non-root: sandbox refused, what to pass" 2 "the sandbox needs root \(mapping its uids was refused: uid_map: Operation not permitted\): pass --sandbox none" $NOBODY "$R/np/atr" replay tools "$R/np/steps.ndjson" --out "$R/np/a"
    absent "non-root: nothing written" "$R/np/a"
    if grep -q '"backend":"none' "$R/st/summary.json"; then
        echo "skip: non-root cgroup delegation check (no cgroups here)"
    else
        fails "non-root: cgroups not delegated, what to pass" 2 "^atr replay tools: cgroups are not delegated to this user \(.* is not writable\): pass --config none, or run atr in a delegated cgroup" $NOBODY "$R/np/atr" replay tools --sandbox none "$R/np/steps.ndjson" --out "$R/np/b"
        absent "non-root: nothing written either" "$R/np/b"
    fi
    ok "non-root: --sandbox none --config none runs" $NOBODY "$R/np/atr" replay tools -q --sandbox none --config none --workdir "$R/np" "$R/np/steps.ndjson" --out "$R/np/c"
else
    echo "skip: non-root replay checks need root and setpriv (util-linux)"
fi
