# test-bench-prepare.sh - `atr bench run`'s prepare step under its limit:
# a prepare past prepare_timeout_s is killed with its whole cgroup (setsid
# children too) and the run's outcome is prepare_timeout, the next variant
# still runs; a bad prepare_timeout_s is one clear line, exit 2. The disk
# guard: below min_free_disk the cleanup runs, then the item is disk_full.

BP=$T/bench-prepare
mkdir -p "$BP"
# The "slow" prepare sleeps 30 s (a setsid child too) under a 1 s limit;
# "next" has no prepare. Command mode: no server is needed to prepare.
cat >"$BP/spec.json" <<EOF2
{"format": "atr-bench-spec/1", "port": 0, "workdir": "$BP",
 "variants": {
   "slow": {"server": "exec atr sim serve --ttft 0 --itl 0 --port {port} --model {model}",
            "ready_url": "http://127.0.0.1:{port}/health",
            "prepare": "echo \$\$ >{workdir}/prep-sh.pid; setsid sleep 30 & echo \$! >{workdir}/prep-child.pid; sleep 30",
            "prepare_timeout_s": 1},
   "next": {"server": "exec atr sim serve --ttft 0 --itl 0 --port {port} --model {model}",
            "ready_url": "http://127.0.0.1:{port}/health"}},
 "workload": {"mode": "command", "command": "echo 'Avg latency: 0.5 seconds'"},
 "items": [{"human_commit": "c0ffee00", "parent_commit": "p", "model": "m"}]}
EOF2
cat >"$BP/outcome_is" <<'SH'
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d['outcome'] != sys.argv[2])" \
    "$1/results/$2_result.json" "$3"
SH
# gone PIDFILE : the process whose pid PIDFILE holds is dead (no such
# process, a zombie, or the pid reused by something that is not ours).
cat >"$BP/gone" <<'SH'
p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] || exit 1
st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || exit 0
set -- $st
[ "$1" = Z ] && exit 0
! tr '\0' ' ' <"/proc/$p/cmdline" | grep -q '^\(sleep 30\|sh -c\) '
SH

ok bench-prepare-timeout-run "$ATR" bench run "$BP/spec.json" -q -o "$BP/out"
check bench-prepare-timeout-outcome "sh '$BP/outcome_is' '$BP/out' c0ffee00_slow prepare_timeout"
check bench-prepare-timeout-result "python3 -c \"
import json; d = json.load(open('$BP/out/results/c0ffee00_slow_result.json'))
assert d['status'] == 'timeout' and d['error'] == 'Prepare timed out after 1 s', d['error']
assert d['server_exit'] is None and d['timing']['prepare_s'] < 25, d['timing']\""
check bench-prepare-timeout-next-ran "[ -e '$BP/out/results/c0ffee00_next_result.json' ] && ! sh '$BP/outcome_is' '$BP/out' c0ffee00_next prepare_timeout"
# The prepare's shell and its setsid child die with its cgroup (on a host
# without cgroups only the process group is killed: the child may live).
wait_for 10 "sh '$BP/gone' '$BP/prep-sh.pid'"
check bench-prepare-timeout-shell-gone "sh '$BP/gone' '$BP/prep-sh.pid'"
if ! grep -q '"contained_by": "process group"' "$BP/out/results/c0ffee00_slow_result.json"; then
    wait_for 10 "sh '$BP/gone' '$BP/prep-child.pid'"
    check bench-prepare-timeout-child-gone "sh '$BP/gone' '$BP/prep-child.pid'"
fi
check bench-prepare-report "'$ATR' bench report '$BP/out' | grep -q prepare_timeout"

# Bad values: one line naming the field, exit 2, nothing run.
for v in -1 0 '"10"'; do
    sed "s/\"prepare_timeout_s\": 1/\"prepare_timeout_s\": $v/" "$BP/spec.json" >"$BP/bad.json"
    fails "bench-prepare-timeout-bad-$v" 2 \
        'bad\.json:[0-9]+:[0-9]+: variants\.slow\.prepare_timeout_s: expected a number from 0\.001 to 604800' \
        "$ATR" bench run "$BP/bad.json" -q -o "$BP/bad"
done
# ---- the disk guard: min_free_disk before each item, cleanup once ----
# disk_spec NAME MIN : two items, one variant, a cleanup that counts its
# runs in NAME.marks (one line each).
disk_spec() {
    cat >"$BP/$1.json" <<EOF2
{"format": "atr-bench-spec/1", "port": 0, "workdir": "$BP/work-$1", "min_free_disk": $2,
 "cleanup": "echo {commit} >>$BP/$1.marks",
 "variants": {"base": {"server": "exec atr sim serve --ttft 0 --itl 0 --port {port} --model {model}",
                       "ready_url": "http://127.0.0.1:{port}/health"}},
 "workload": {"mode": "command", "command": "echo 'Avg latency: 0.5 seconds'"},
 "items": [{"human_commit": "d15c0001", "parent_commit": "p", "model": "m"},
           {"human_commit": "d15c0002", "parent_commit": "p", "model": "m"}]}
EOF2
}
# Never enough (1000 TiB): per item the cleanup runs once before (then
# still too little: disk_full, nothing started) and once after; both items.
disk_spec full '"1000T"'
ok bench-prepare-disk-full-run "$ATR" bench run "$BP/full.json" -q -o "$BP/full"
for c in d15c0001 d15c0002; do
    check "bench-prepare-disk-full-$c" "sh '$BP/outcome_is' '$BP/full' ${c}_base disk_full"
done
check bench-prepare-disk-full-error "python3 -c \"
import json, re; d = json.load(open('$BP/full/results/d15c0001_base_result.json'))
assert d['status'] == 'error' and d['server_exit'] is None, d
m = re.fullmatch(r'Disk full: (\\d+) bytes free in .*/work-full, min_free_disk wants 1099511627776000 \\(after cleanup\\)', d['error'])
assert m and int(m.group(1)) < 1099511627776000, d['error']\""
check bench-prepare-disk-full-cleanups "[ \"\$(cat '$BP/full.marks' | tr '\\n' ' ')\" = 'd15c0001 d15c0001 d15c0002 d15c0002 ' ]"
check bench-prepare-disk-full-report "'$ATR' bench report '$BP/full' | grep -q disk_full"
# Resumed with every result there: nothing runs, so neither the guard's
# cleanup nor the after-item one runs again.
ok bench-prepare-disk-full-resume "$ATR" bench run "$BP/full.json" -q -o "$BP/full"
check bench-prepare-disk-full-resume-no-cleanup "[ \"\$(cat '$BP/full.marks' | tr '\\n' ' ')\" = 'd15c0001 d15c0001 d15c0002 d15c0002 ' ]"
# Enough (1 KiB): no guard cleanup, only the one after each item.
disk_spec enough '"1K"'
ok bench-prepare-disk-enough-run "$ATR" bench run "$BP/enough.json" -q -o "$BP/enough"
check bench-prepare-disk-enough-ran "! grep -l disk_full '$BP/enough/results/'*"
check bench-prepare-disk-enough-cleanups "[ \"\$(cat '$BP/enough.marks' | tr '\\n' ' ')\" = 'd15c0001 d15c0002 ' ]"
# Bad sizes: one line, exit 2.
for v in '"20X"' '"-1G"' '"0"' 20; do
    disk_spec bad "$v"
    fails "bench-prepare-disk-bad-$v" 2 \
        'bad\.json:[0-9]+:[0-9]+: spec\.min_free_disk: expected a size like "20G"' \
        "$ATR" bench run "$BP/bad.json" -q -o "$BP/bad-out"
done

# What outlived its run (a failure above) is ours to end.
for f in "$BP"/*.pid; do
    sh "$BP/gone" "$f" || kill -KILL "$(cat "$f")" 2>/dev/null
done
