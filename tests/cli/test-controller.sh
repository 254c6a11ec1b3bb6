# test-controller.sh - the dynamic controller's three arms on a real
# bursty step (atr-memhog growing 256 MiB in 0.3 s over a 32 MiB target):
# the step is throttled, not killed; at the ceiling the kernel's OOM
# killer decides again; --controller ebpf loads, stops and resumes, and
# leaves no program behind, also when atr is killed while a step is
# stopped. Runs as root on the host's cgroups; the eBPF checks are skipped
# with their reason where BPF cannot load.
C=$T/controller
WD=$C/wd
mkdir -p "$C" "$WD"
HOG=$(dirname "$ATR")/atr-memhog
# v RUN KEY: a field of RUN's one metrics line (a script: `check` runs sh -c)
cat >"$C/v" <<PY
#!/usr/bin/env python3
import json, sys
print(json.loads(open("$C/" + sys.argv[1] + "/metrics.jsonl").readline()).get(sys.argv[2]))
PY
chmod +x "$C/v"
# trace NAME COMMAND: a one-step trace file $C/NAME.ndjson
trace() {
    printf '{"format":"atr-trace/1","trace_id":"%s","steps":[{"kind":"tool","tool":"bash","command":"%s"}]}\n' "$1" "$2" >"$C/$1.ndjson"
}
# run NAME K TRACE ARGS...: a dynamic replay with controller K, in a session of its own
run() {
    CURRENT=$1; k=$2; tr=$3; shift 3
    setsid timeout 60 "$ATR" replay tools -q --config dynamic --controller "$k" --sandbox none --workdir "$WD" "$@" "$C/$tr.ndjson" --out "$C/$CURRENT" >"$T/out" 2>"$T/err" &
    PID=$!
    wait "$PID"
    st=$?
    if [ "$st" -eq 0 ]; then pass; else fail "exit $st: $(head -c 400 "$T/err")"; fi
}
# gone ID: the kernel has no program ID any more (without bpftool it
# cannot be asked: passes)
cat >"$C/gone" <<'SH'
#!/bin/sh
[ -n "$1" ] && [ "$1" != None ] || exit 1
command -v bpftool >/dev/null || exit 0
! bpftool prog show id "$1" >/dev/null 2>&1
SH
chmod +x "$C/gone"
V1=0    # a v1 memory controller (hybrid hosts): the held-limit knob
[ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] && V1=1

trace burst "$HOG -m 256 -r 300"
arms="psi-poll psi-trigger"
EBPF_WHY=""
if "$ATR" replay tools -q --config dynamic --controller ebpf --sandbox none --workdir "$WD" "$C/burst.ndjson" --out "$C/probe" >/dev/null 2>"$C/probe.err"; then
    arms="$arms ebpf"
else
    EBPF_WHY=$(head -c 300 "$C/probe.err")
    echo "skipped: --controller ebpf: $EBPF_WHY"
fi
# Where BPF cannot load (here: not root) the run fails before anything
# runs, with the reason, and writes nothing.
if [ -z "$EBPF_WHY" ] && [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    fails "ebpf unprivileged fails first" 1 "cannot load the eBPF controller: .*needs root" \
        setpriv --reuid 65534 --regid 65534 --clear-groups "$ATR" replay tools --config dynamic --controller ebpf --sandbox none "$C/burst.ndjson" --out "$C/nr"
    check "ebpf unprivileged: no output" "[ ! -e '$C/nr' ]"
fi
for k in $arms; do
    run "arm-$k" "$k" burst --mem-high 32M --mem-max 1G
    check "$k: the step ran to its end" "[ \"\$('$C/v' arm-$k exit_code)\" = 0 ] && [ \"\$('$C/v' arm-$k oom_kills)\" = 0 ]"
    check "$k: the limit followed the step up" "[ \"\$('$C/v' arm-$k ctl_adjustments)\" -ge 1 ] && python3 -c 'import sys; sys.exit(not float(\"'\$('$C/v' arm-$k ctl_max_mem_high_mb)'\") > 256)'"
    check "$k leaves nothing" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $PID '$WD')\" ]"
    # The memory timeline: usage sampled every ~10 ms and the target in
    # force, rising with the step from 32 MiB past 256 MiB.
    check "$k: the memory timeline with the moving target" "python3 -c \"import json,sys; t=json.loads(open('$C/arm-$k/metrics.jsonl').readline())['ctl_timeline']; g=t['target_mb']; u=[x for x in t['usage_mb'] if x is not None]; sys.exit(not (len(t['t_ms'])==len(t['usage_mb'])==len(g)>=20 and len(u)>=len(g)-2 and t['t_ms']==sorted(t['t_ms']) and g[0]==32 and max(g)>256 and len(set(g))>=3 and max(u)>=200))\""
done
ok "report: the memory timeline drawn" "$ATR" report -q "$C/arm-psi-poll" -o "$C/arm.html"
check "report: memory over time with the target line" "grep -q 'class=\"chart memline-chart\"' '$C/arm.html' && grep -q 'class=\"mem-target\"' '$C/arm.html'"
# v1 throttles for real: psi-poll at 50 ms lets the step reach its limit,
# where the kernel holds it (failcnt counts the failed charges) until the raise.
if [ "$V1" = 1 ]; then
    check "psi-poll v1: the step was held at its limit" "[ \"\$('$C/v' arm-psi-poll mem_max_events)\" -gt 0 ] && [ \"\$('$C/v' arm-psi-poll ctl_holds)\" -ge 1 ]"
fi
# At the ceiling the hold is released: the kernel's OOM killer ends the
# step as a static limit would (without the release it would wait forever).
trace big "$HOG -m 256"
run "ceiling-psi-poll" psi-poll big --mem-high 32M --mem-max 64M
check "at the ceiling the OOM killer decides" "[ \"\$('$C/v' ceiling-psi-poll oom_kills)\" -ge 1 ] && [ \"\$('$C/v' ceiling-psi-poll exit_code)\" != 0 ]"

case " $arms " in *" ebpf "*)
    check "ebpf: the kernel stopped the step" "[ \"\$('$C/v' arm-ebpf ctl_holds)\" -ge 1 ]"
    check "ebpf: kernel reaction under 1 ms" "python3 -c \"import json,sys; r=json.loads(open('$C/arm-ebpf/metrics.jsonl').readline())['ctl_reaction_us']; sys.exit(not (r and max(r) < 1000))\""
    check "ebpf: its program unloaded after the run" "'$C/gone' \"\$('$C/v' arm-ebpf ctl_bpf_prog)\""
    run "ceiling-ebpf" ebpf big --mem-high 32M --mem-max 64M
    check "ebpf at the ceiling: the OOM killer decides" "[ \"\$('$C/v' ceiling-ebpf oom_kills)\" -ge 1 ]"
    # In the default sandbox (namespaces): the same stops and resumes.
    if "$ATR" replay tools --help >/dev/null && [ -z "$(sh -c 'unshare -U -p -f true' 2>&1)" ]; then
        run "sandbox-ebpf" ebpf burst --sandbox ns --bind "$(dirname "$HOG")" --mem-high 32M --mem-max 1G
        check "ebpf in the sandbox: stopped, resumed, done" "[ \"\$('$C/v' sandbox-ebpf exit_code)\" = 0 ] && [ \"\$('$C/v' sandbox-ebpf ctl_holds)\" -ge 1 ]"
    else
        echo "skipped: ebpf in the sandbox: no user and PID namespaces here"
    fi
    # Three processes in one step (make -j): each one that faults over
    # the target is stopped and resumed; the step ends well.
    trace make "$HOG -m 96 -r 200 & $HOG -m 96 -r 200 & $HOG -m 96 -r 200 & wait"
    run "make-ebpf" ebpf make --mem-high 16M --mem-max 1G
    check "ebpf make: the children stopped, resumed, done" "[ \"\$('$C/v' make-ebpf exit_code)\" = 0 ] && [ \"\$('$C/v' make-ebpf ctl_holds)\" -ge 2 ] && python3 -c 'import sys; sys.exit(not float(\"'\$('$C/v' make-ebpf max_rss_mb)'\") > 200)'"
    check "ebpf make leaves nothing" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $PID '$WD')\" ]"
    # Two tenants at once share the program, each with its own ring.
    printf '{"format":"atr-trace/1","trace_id":"t0","steps":[{"kind":"tool","tool":"bash","command":"%s -m 128 -r 200"}]}\n{"format":"atr-trace/1","trace_id":"t1","steps":[{"kind":"tool","tool":"bash","command":"%s -m 128 -r 200"}]}\n' "$HOG" "$HOG" >"$C/two.ndjson"
    run "tenants-ebpf" ebpf two --tenants --no-baseline --mem-high 16M --mem-max 1G
    check "ebpf tenants: both stopped and resumed to their end" "python3 -c \"import json,sys; ms=[json.loads(l) for l in open('$C/tenants-ebpf/metrics.jsonl')]; sys.exit(not (len(ms)==2 and all(m['exit_code']==0 and m['ctl_holds']>=1 and m['ctl_reaction_us'] for m in ms)))\""
    # A step whose shell exits while its child is being stopped: the
    # child is resumed and killed with the step, nothing stays stopped.
    trace orphan "$HOG -m 256 -r 300 & sleep 0.1; exit 0"
    run "orphan-ebpf" ebpf orphan --mem-high 16M --mem-max 1G
    check "ebpf: a step that exits while stopped leaves nothing" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $PID '$WD')\" ]"
    # atr killed while its step is stopped: atr itself is stopped first
    # (so nobody resumes the step), then SIGKILLed; the guard kills and
    # removes the groups, the kernel unloads the program with atr's fds.
    trace slow "$HOG -m 256 -r 3000"
    setsid "$ATR" replay tools -q --config dynamic --controller ebpf --sandbox none --workdir "$WD" --mem-high 16M "$C/slow.ndjson" --out "$C/killed" >/dev/null 2>&1 &
    PID=$!
    CURRENT="ebpf killed: the step runs"
    wait_for 10 "pgrep -s $PID -x atr-memhog >/dev/null" && pass || fail "no atr-memhog in session $PID"
    kill -STOP "$PID"
    hog=$(pgrep -s "$PID" -x atr-memhog | head -1)
    prog=$(cat /proc/"$PID"/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' | head -1)
    CURRENT="ebpf killed: atr holds its program"
    [ -n "$prog" ] && pass || fail "no prog_id in /proc/$PID/fdinfo"
    CURRENT="ebpf killed: the kernel stopped the step"
    wait_for 10 "[ \"\$(sed 's/.*) //' /proc/$hog/stat | cut -d' ' -f1)\" = T ]" && pass || fail "atr-memhog $hog never stopped"
    kill -KILL "$PID"
    wait "$PID" 2>/dev/null
    CURRENT="ebpf killed: the guard removed everything"
    wait_for 10 "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $PID '$WD')\" ]" && pass || fail "left: $(sh "$DATA/replay/leftovers.sh" "$PID" "$WD")"
    check "ebpf killed: its program unloaded" "'$C/gone' '$prog'"
    ;;
esac

# atr experiment timescale: the arms side by side, bad input first.
fails "experiment wants a mode" 2 "wants a mode" "$ATR" experiment
fails "experiment unknown mode" 2 "not 'bogus'" "$ATR" experiment bogus "$C/burst.ndjson" --out "$C/x"
fails "experiment multitenant wants a victim" 2 "multitenant: wants --victim FILE" "$ATR" experiment multitenant "$C/burst.ndjson" --out "$C/x"
fails "experiment wants --out" 2 "--out DIR is required" "$ATR" experiment timescale "$C/burst.ndjson"
fails "experiment wants a trace" 2 "at least one TRACE" "$ATR" experiment timescale --out "$C/x"
fails "experiment missing trace" 1 "$C/nope.ndjson: No such file" "$ATR" experiment timescale "$C/nope.ndjson" --out "$C/x"
check "experiment: bad input wrote nothing" "[ ! -e '$C/x' ]"
fails "experiment bad reps" 2 "--reps wants 1..1000" "$ATR" experiment timescale --reps 0 "$C/burst.ndjson" --out "$C/x"
setsid "$ATR" experiment timescale --reps 2 "$C/burst.ndjson" --out "$C/exp" >"$C/exp.out" 2>"$C/exp.err" &
PID=$!
CURRENT="experiment timescale runs"
wait "$PID" && pass || fail "exit $?: $(head -c 400 "$C/exp.err")"
check "experiment: the report of the arms" "[ -s '$C/exp/report.html' ] && grep -q dynamic-ebpf '$C/exp/report.html'"
check "experiment: a memory timeline per dynamic arm, reaction CDFs" "[ \"\$(grep -o 'class=\"chart memline-chart\"' '$C/exp/report.html' | wc -l)\" -ge 2 ] && grep -q 'data-kind=\"reaction\"' '$C/exp/report.html'"
check "experiment: every arm in the table" "for a in static psi-poll psi-trigger ebpf; do grep -q \"^\$a \" '$C/exp.out' || exit 1; done"
check "experiment: summary and tagged metrics" "python3 -c \"import json,sys; s=json.load(open('$C/exp/summary.json')); a={x['arm']:x for x in s['configs']}; ms=[json.loads(l) for l in open('$C/exp/metrics.jsonl')]; sys.exit(not (list(a)==['static','psi-poll','psi-trigger','ebpf'] and a['static']['runs']==2 and a['psi-poll']['reaction_samples']>0 and a['psi-poll']['slowdown']>0 and all('arm' in m and 'rep' in m for m in ms)))\""
case " $arms " in *" ebpf "*)
    # The goal (in-kernel p99 < 1 ms, >= 20x below psi-poll's bound) is a
    # benchmark figure (bench/controller-arms, BENCHMARKS.md), never a test
    # bound: under ASan on a loaded machine one run missed it. Here: the
    # in-kernel arm measured reactions from kernel clocks, and psi-poll's
    # bound is no smaller than what it saw.
    check "experiment: in-kernel reactions measured, psi-poll's bound above its reaction" "python3 -c \"import json,sys; a={x['arm']:x for x in json.load(open('$C/exp/summary.json'))['configs']}; e=a['ebpf']; p=a['psi-poll']; sys.exit(not (e['reaction_samples'] > 0 and e['reaction_p99_us'] > 0 and p['reaction_bound_p99_us'] >= p['reaction_p99_us']))\"" ;;
*)
    check "experiment: ebpf skipped with its reason" "python3 -c \"import json,sys; a={x['arm']:x for x in json.load(open('$C/exp/summary.json'))['configs']}; sys.exit(not a['ebpf'].get('skipped'))\"" ;;
esac
check "experiment leaves nothing" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $PID '$WD')\" ]"
fails "experiment refuses an existing DIR" 1 "exists .use --force" "$ATR" experiment timescale "$C/burst.ndjson" --out "$C/exp"
# --victim: a small tenant beside the burst, its latency apart per arm.
printf '{"format":"atr-trace/1","trace_id":"victim","steps":[{"kind":"tool","tool":"bash","command":"%s -m 4 -c 5"},{"kind":"tool","tool":"bash","command":"%s -m 4 -c 5"},{"kind":"tool","tool":"bash","command":"%s -m 4 -c 5"}]}\n' "$HOG" "$HOG" "$HOG" >"$C/victim.ndjson"
ok "experiment --victim" "$ATR" experiment timescale -q --reps 1 --victim "$C/victim.ndjson" "$C/burst.ndjson" --out "$C/expv"
check "experiment --victim: victim apart in every arm" "python3 -c \"import json,sys; s=json.load(open('$C/expv/summary.json'))['configs']; sys.exit(not all(a.get('skipped') or (a['victim_steps']==3 and a['victim_latency_p99_ms']>0 and a['total_steps']==1) for a in s))\""
# multitenant: the victim's tail latency per arm, beside the noisy burst.
ok "experiment multitenant" "$ATR" experiment multitenant -q --reps 1 --victim "$C/victim.ndjson" "$C/burst.ndjson" --out "$C/expm"
check "experiment multitenant: three arms, the victim apart" "python3 -c \"import json,sys; d=json.load(open('$C/expm/summary.json')); s=d['configs']; sys.exit(not (d['experiment']=='multitenant' and [a['arm'] for a in s]==['static-toolcall','psi-poll','ebpf'] and all(a.get('skipped') or a['victim_steps']==3 for a in s)))\""
# ... each tenant also alone: its slowdown shared / solo per arm, as bars.
check "experiment multitenant: per-tenant slowdown vs solo" "python3 -c \"import json,sys; d=json.load(open('$C/expm/summary.json')); t=d['tenant_slowdown']; arms={x['arm'] for x in d['configs'] if not x.get('skipped')}; ok=all(x['slowdown_p50']>0 and x['steps_solo']==x['steps_shared']>0 for x in t); v={(x['arm'],x['trace_id']) for x in t}; sys.exit(not (ok and all((a,'victim') in v and (a,'burst') in v for a in arms) and all(x['victim']==(x['trace_id']=='victim') for x in t)))\""
check "experiment multitenant: the victim's stalls summed" "python3 -c \"import json,sys; s=json.load(open('$C/expm/summary.json'))['configs']; sys.exit(not all(a.get('skipped') or (a['victim_latency_ms_total']>0 and a['victim_cpu_stall_ms_total']>=0 and a['victim_mem_stall_ms_total']>=0) for a in s))\""
check "experiment multitenant: the slowdown bars in the report" "grep -q 'class=\"chart slowdown-chart\"' '$C/expm/report.html'"
fails "experiment --victim not a trace" 1 "no trace with a trace_id" "$ATR" experiment timescale --victim "$C/v" "$C/burst.ndjson" --out "$C/x2"
# domain and overhead: the same machinery, other arms.
trace tiny "true"
ok "experiment overhead" "$ATR" experiment overhead -q --reps 2 "$C/tiny.ndjson" --out "$C/ovh"
check "experiment overhead: none, static-toolcall, dynamic, each timed whole" "python3 -c \"import json,sys; s=json.load(open('$C/ovh/summary.json')); c=s['configs']; sys.exit(not (s['experiment']=='overhead' and [x['config'] for x in c]==['none','static-toolcall','dynamic'] and all(x['runs']==2 and x['run_wall_p50_ms']>0 for x in c) and c[0]['slowdown']==1))\""
# ... beside plain fork/exec always and systemd-run --scope where systemd runs
check "experiment overhead: fork/exec and systemd-run references" "python3 -c \"import json,sys,os; r=json.load(open('$C/ovh/summary.json'))['references']; f=r['fork_exec']; s=r['systemd_run_scope']; sd=os.path.isdir('/run/systemd/system'); sys.exit(not (f['runs']==100 and f['step_p50_ms']>0 and (s.get('runs',0)>0 if sd else 'no systemd manager' in s['skipped'])))\""
ok "experiment domain" "$ATR" experiment domain -q --reps 1 "$C/burst.ndjson" --out "$C/dom"
check "experiment domain: static-env, static-toolcall, dynamic" "python3 -c \"import json,sys; c=json.load(open('$C/dom/summary.json'))['configs']; sys.exit(not ([x['config'] for x in c]==['static-env','static-toolcall','dynamic'] and c[2]['reaction_samples']>0))\""
