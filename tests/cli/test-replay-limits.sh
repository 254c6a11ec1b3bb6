# test-replay-limits.sh - atr replay tools' limits are on by default and
# say when a step met one: a fork storm stops at pids.max (pids_max_hit),
# a write past --disk-max gets ENOSPC (disk_full), the memory ceiling is
# derived from the machine; summary.json has the limits in force. Also the
# trace's directory layout (R/work, R/tmp, their owner). Needs root (the
# cgroups, the capped mount); only this run's own --workdir.
R=$T/limits
mkdir -p "$R/wd"
chmod 755 "$R"
cat >"$R/get" <<'PY'
#!/usr/bin/env python3
# get FILE KEY...: a value of summary.json (a path of keys) or, for a
# metrics.jsonl, of line STEP (the first key is the step id).
import json, sys
f, keys = sys.argv[1], sys.argv[2:]
if f.endswith('.jsonl'):
    lines = [json.loads(l) for l in open(f)]
    v = next(m for m in lines if m['step_id'] == int(keys[0]))
    keys = keys[1:]
else:
    v = json.load(open(f))
for k in keys:
    v = v[int(k)] if isinstance(v, list) else v.get(k)
print(v)
PY
chmod +x "$R/get"

if [ "$(id -u)" != 0 ]; then
    echo "skip: replay limits need root (cgroups, mounts)"
else

# The fork storm: its pids group's peak and limit, read from inside the
# step (--sandbox none: the host's cgroupfs), written beside the test.
storm() {
    printf '{"format":"atr-trace/1","trace_id":"storm","steps":[{"kind":"tool","tool":"bash","command":"(for i in $(seq 2000); do sleep 30 & done) 2>/dev/null; g=$(sed -n s/^[0-9]*:pids://p /proc/self/cgroup); d=/sys/fs/cgroup/pids$g; test ${#g} -gt 0 || d=/sys/fs/cgroup$(sed -n s/^0:://p /proc/self/cgroup); cat $d/pids.peak $d/pids.max >%s"}]}\n' "$R/$1.txt" >"$R/$1.ndjson"
}
storm pids
storm pids50
ok "a fork storm under the default limits" "$ATR" replay tools -q --sandbox none --workdir "$R/wd" "$R/pids.ndjson" --out "$R/storm"
check "the storm's group is capped at 1024 by default" "[ \"\$(sed -n 2p '$R/pids.txt')\" = 1024 ] && [ \"\$(sed -n 1p '$R/pids.txt')\" -le 1024 ]"
check "the storm's metrics say pids_max_hit" "[ \"\$('$R/get' '$R/storm/metrics.jsonl' 0 pids_max_hit)\" -ge 1 ]"
check "summary counts the step at pids.max" "[ \"\$('$R/get' '$R/storm/summary.json' configs 0 pids_max_hit_steps)\" = 1 ]"
ok "--pids-max overrides it" "$ATR" replay tools -q --sandbox none --pids-max 50 --workdir "$R/wd" "$R/pids50.ndjson" --out "$R/storm50"
check "the storm reaches at most 50" "[ \"\$(sed -n 2p '$R/pids50.txt')\" = 50 ] && [ \"\$(sed -n 1p '$R/pids50.txt')\" -le 50 ]"

# The work directory's size: a bash step and an editor step writing past
# --disk-max 16M meet ENOSPC; once the file is gone the disk is not full.
cat >"$R/disk.ndjson" <<'EOF'
{"format":"atr-trace/1","trace_id":"disk","steps":[{"kind":"tool","tool":"bash","command":"dd if=/dev/zero of=big bs=1M count=64 2>&1 | grep -q 'No space left'"},{"kind":"tool","tool":"bash","command":"rm big"},{"kind":"tool","tool":"editor","file_op":"create","path":"huge.txt","bytes":67108864},{"kind":"tool","tool":"bash","command":"rm huge.txt; [ $(df -k . | awk 'NR==2 {print $2}') -le 16384 ]"}]}
EOF
ok "writes past --disk-max" "$ATR" replay tools --disk-max 16M --workdir "$R/wd" "$R/disk.ndjson" --out "$R/disk"
check "the bash step got ENOSPC" "[ \"\$('$R/get' '$R/disk/metrics.jsonl' 0 exit_code)\" = 0 ]"
check "and its metrics say disk_full" "[ \"\$('$R/get' '$R/disk/metrics.jsonl' 0 disk_full)\" = True ]"
check "the disk is not full once the file is gone" "[ \"\$('$R/get' '$R/disk/metrics.jsonl' 1 disk_full)\" = False ]"
check "the editor step failed full" "[ \"\$('$R/get' '$R/disk/metrics.jsonl' 2 exit_code)\" = 1 ] && [ \"\$('$R/get' '$R/disk/metrics.jsonl' 2 disk_full)\" = True ]"
check "the work directory's file system is 16M" "[ \"\$('$R/get' '$R/disk/metrics.jsonl' 3 exit_code)\" = 0 ]"
check "summary counts the full steps" "[ \"\$('$R/get' '$R/disk/summary.json' configs 0 disk_full_steps)\" = 2 ] && [ \"\$('$R/get' '$R/disk/summary.json' limits disk_max_bytes)\" = 16777216 ]"
check "the table says which limits were hit" "grep -q 'limits hit: 0 steps at memory.max, 0 at pids.max, 2 with the work directory full' '$T/out'"
check "nothing is left mounted or behind" "! grep -q ' $R/wd/' /proc/self/mountinfo && [ -z \"\$(ls '$R/wd')\" ]"

# The defaults, in summary.json and in the step's own memory group.
printf '{"format":"atr-trace/1","trace_id":"def","steps":[{"kind":"tool","tool":"bash","command":"g=$(sed -n \\"s/^[0-9]*:memory://p\\" /proc/self/cgroup); if [ -n \\"$g\\" ]; then cat /sys/fs/cgroup/memory$g/memory.limit_in_bytes; else cat /sys/fs/cgroup$(sed -n \\"s/^0:://p\\" /proc/self/cgroup)/memory.max; fi >%s/mem.txt"}]}\n' "$R" >"$R/def.ndjson"
ok "a replay with the default limits" "$ATR" replay tools -q --sandbox none --workdir "$R/wd" "$R/def.ndjson" --out "$R/def"
check "summary.json has the limits in force" "python3 -c \"
import json
l = json.load(open('$R/def/summary.json'))['limits']
total = int(open('/proc/meminfo').read().split('MemTotal:')[1].split()[0]) * 1024
assert l['pids_max'] == 1024 and l['disk_max_bytes'] == 4 << 30, l
assert l['max_output_bytes'] == 1 << 20 and l['timeout_ms'] == 120000 and l['mem_high_bytes'] is None, l
assert 0 < l['mem_max_bytes'] <= total * 3 // 4, l
\""
check "the step's memory.max is the default ceiling" "[ \"\$(cat '$R/mem.txt')\" = \"\$('$R/get' '$R/def/summary.json' limits mem_max_bytes)\" ]"
ok "--mem-max, --disk-max and --pids-max none" "$ATR" replay tools -q --sandbox none --mem-max none --disk-max none --pids-max none --workdir "$R/wd" "$R/def.ndjson" --out "$R/nolim"
check "no limits then" "python3 -c \"
import json
l = json.load(open('$R/nolim/summary.json'))['limits']
assert l['pids_max'] is None and l['disk_max_bytes'] is None and l['mem_max_bytes'] is None, l
\""
fails "a disk cap below 1M" 2 "disk-max wants a size of 1M or more" "$ATR" replay tools --disk-max 4K "$R/def.ndjson" --out "$R/x"

# Layout: the step runs in R/work; R/tmp beside it, which the sandbox
# shows as /tmp; both the caller's (the sandbox sees them as its own
# through idmapped mounts).
layout='[ "${PWD##*/}" = work ] && [ "$HOME" = "$PWD" ] && [ "$(stat -c %u:%g:%a . $TMPD)" = "$(printf "%s\n" "0:0:700" "0:0:700")" ] && echo kept > $TMPD/k'
printf '{"format":"atr-trace/1","trace_id":"lay","steps":[{"kind":"tool","tool":"bash","command":"TMPD=/tmp; %s"},{"kind":"tool","tool":"bash","command":"test \\"$(cat /tmp/k)\\" = kept"}]}\n' "$(printf '%s' "$layout" | sed 's/"/\\"/g')" >"$R/lay.ndjson"
ok "layout, sandboxed" "$ATR" replay tools -q --workdir "$R/wd" "$R/lay.ndjson" --out "$R/lay"
check "R/work and R/tmp (its /tmp, kept across steps) are the step's own" "[ \"\$('$R/get' '$R/lay/metrics.jsonl' 0 exit_code)\" = 0 ] && [ \"\$('$R/get' '$R/lay/metrics.jsonl' 1 exit_code)\" = 0 ]"
sed 's|TMPD=/tmp|TMPD=../tmp|' "$R/lay.ndjson" | sed 's|cat /tmp/k|cat ../tmp/k|' >"$R/lay0.ndjson"
ok "layout, --sandbox none" "$ATR" replay tools -q --sandbox none --workdir "$R/wd" "$R/lay0.ndjson" --out "$R/lay0"
check "R/work and R/tmp stay the caller's" "[ \"\$('$R/get' '$R/lay0/metrics.jsonl' 0 exit_code)\" = 0 ]"

# Without root no file system can be mounted: no cap, and a warning.
if command -v setpriv >/dev/null; then
    chmod 711 "$T"      # nobody passes through to its own folder, for this one run
    mkdir -p "$R/nobody" && chmod 777 "$R/nobody" && cp "$R/def.ndjson" "$R/nobody/t.ndjson" && chmod 644 "$R/nobody/t.ndjson"
    sed -i "s|$R/mem.txt|/dev/null|" "$R/nobody/t.ndjson"
    ok "as an unprivileged user" setpriv --reuid=65534 --regid=65534 --clear-groups "$ATR" replay tools --sandbox none --config none --workdir "$R/nobody" "$R/nobody/t.ndjson" --out "$R/nobody/o"
    check "the work directory is not capped, with a warning" "grep -q 'warning: work directories are not size-capped' '$T/err' && [ \"\$('$R/get' '$R/nobody/o/summary.json' limits disk_max_bytes)\" = None ]"
    chmod 700 "$T"
fi
# SIGKILL of atr mid-step: its guard detaches the work directory's capped
# mount and removes it (no mount of this run left on the host).
mkdir -p "$R/kwd"
printf '{"format":"atr-trace/1","trace_id":"k","steps":[{"kind":"tool","tool":"bash","command":"touch started; sleep 60"}]}\n' >"$R/k.ndjson"
"$ATR" replay tools -q --disk-max 16M --workdir "$R/kwd" "$R/k.ndjson" --out "$R/k" >/dev/null 2>&1 &
kpid=$!
wait_for 20 "ls '$R/kwd'/atr-work-*/work/started >/dev/null 2>&1"
kill -KILL "$kpid"
wait "$kpid" 2>/dev/null
CURRENT="SIGKILL: the capped work directory is unmounted and removed"
if wait_for 20 "[ -z \"\$(ls '$R/kwd')\" ] && ! grep -q ' $R/kwd/' /proc/self/mountinfo"; then pass; else
    fail "left: $(ls "$R/kwd") $(grep " $R/kwd/" /proc/self/mountinfo | head -1)"; fi

fi
