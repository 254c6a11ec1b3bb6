# test-tenants.sh - atr gen --kind noisy, and atr replay tools --tenants on
# real processes and cgroups: a victim of short shell loops beside a noisy
# neighbour, both phases recorded, inflation computed, nothing left behind.
# No timing threshold is asserted: inflation depends on the machine.
# Leftovers are looked for only among what this run made (see
# test-replay.sh): its session, its "atr-PID" groups, its --workdir.
TN=$T/tenants
mkdir -p "$TN" "$TN/wd"

# --kind noisy: valid, deterministic, all three neighbours in the mix.
ok "gen noisy" "$ATR" gen -q --kind noisy --traces 20 --seed 5 -o "$TN/noisy20.ndjson"
ok "gen noisy validates" "$ATR" validate "$TN/noisy20.ndjson"
ok "gen noisy again" "$ATR" gen -q --kind noisy --traces 3 --seed 5 -o "$TN/noisy3.ndjson"
check "gen noisy is a prefix of more traces" "head -n 3 '$TN/noisy20.ndjson' | cmp -s - '$TN/noisy3.ndjson'"
check "gen noisy has cpu spins, memory hogs, fork storms" "grep -q \"timeout [0-9.]* sh -c 'while :; do :; done'\" '$TN/noisy20.ndjson' && grep -q 'dd if=/dev/zero of=/dev/null bs=[0-9]*M' '$TN/noisy20.ndjson' && grep -q '/bin/true &' '$TN/noisy20.ndjson'"
check "gen noisy only bash steps" "! grep -q '\"kind\":\"llm\"' '$TN/noisy20.ndjson'"
fails "gen unknown kind names noisy" 2 "swe, chat, requests, noisy" "$ATR" gen --kind loud --traces 1 -o -

# A victim of ten CPU-light steps and one noisy neighbour.
loop='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
{
    printf '{"format":"atr-trace/1","trace_id":"victim","steps":['
    for k in 0 1 2 3 4 5 6 7 8 9; do
        [ "$k" -gt 0 ] && printf ','
        printf '{"kind":"tool","tool":"bash","command":"%s"}' "$loop"
    done
    printf ']}\n'
} >"$TN/victim.ndjson"
ok "gen one neighbour" "$ATR" gen -q --kind noisy --traces 1 --seed 3 -o "$TN/noisy.ndjson"

fails "tenants not with shard" 2 "not with --merge or --shard" "$ATR" replay tools --tenants --shard 0/2 "$TN/victim.ndjson" --out "$TN/x"
fails "tenant weights need tenants" 2 "need --tenants" "$ATR" replay tools --tenant-weights 100,200 "$TN/victim.ndjson" --out "$TN/x"
fails "tenant weight range" 2 "tenant-weights wants" "$ATR" replay tools --tenants --tenant-weights 100,0 "$TN/victim.ndjson" --out "$TN/x"

# In the background, in a session of its own, only to learn its pid (and
# session): what it leaves is named by it (other atr runs may share this
# host's cgroups and /tmp meanwhile).
setsid "$ATR" replay tools --tenants --tenant-weights 100,100 --config static-toolcall --mem-max 384M --pids-max 1000 --timeout 20 --workdir "$TN/wd" "$TN/victim.ndjson" "$TN/noisy.ndjson" --out "$TN/run" >"$T/out" 2>"$T/err" &
pid=$!
wait "$pid"
st=$?
CURRENT="replay two tenants"; [ "$st" -eq 0 ] && pass || fail "exit $st: $(head -c 300 "$T/err")"
check "table shows the tenants" "grep -q 'shared ms' '$T/out' && grep -q ' victim ' '$T/out' && grep -q 'gen-noisy-3-000000' '$T/out'"
cat >"$TN/check.py" <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(d + '/summary.json'))
ts = s['tenants']
assert [(t['tenant'], t['trace_id']) for t in ts] == [(0, 'victim'), (1, 'gen-noisy-3-000000')], ts
noisy_steps = sum(1 for l in open(sys.argv[2]) for _ in json.loads(l)['steps'])
assert ts[0]['steps'] == 10 and ts[1]['steps'] == noisy_steps, ts
for t in ts:
    assert t['config'] == 'static-toolcall' and t['weight'] == 100, t
    for k in ('latency_mean_ms_alone', 'latency_mean_ms_shared', 'latency_p50_ms_alone',
              'latency_p50_ms_shared', 'inflation_mean', 'inflation_p50'):
        assert isinstance(t[k], float) and t[k] > 0, (k, t)
    assert abs(t['inflation_mean'] - t['latency_mean_ms_shared'] / t['latency_mean_ms_alone']) < 1e-3, t
lines = [json.loads(l) for l in open(d + '/metrics.jsonl')]
count = {}
for m in lines:
    assert m['phase'] in ('shared', 'alone') and m['tenant'] in (0, 1), m
    assert m['exit_code'] == 0, m
    count[(m['tenant'], m['phase'])] = count.get((m['tenant'], m['phase']), 0) + 1
assert count == {(0, 'shared'): 10, (0, 'alone'): 10, (1, 'shared'): noisy_steps,
                 (1, 'alone'): noisy_steps}, count
c = s['configs'][0]
assert c['config'] == 'static-toolcall' and c['traces'] == 2 and c['total_steps'] == 10 + noisy_steps, c
PY
check "tenants summary, phases and inflation" "python3 '$TN/check.py' '$TN/run' '$TN/noisy.ndjson'"
check "tenants leave no cgroup" "! sh '$DATA/replay/leftovers.sh' $pid | grep -q '^cgroup '"
check "tenants leave no process" "! sh '$DATA/replay/leftovers.sh' $pid | grep -q '^process '"
check "tenants leave no work directory" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $pid '$TN/wd')\" ]"

# --no-baseline: the shared phase only, so no inflation.
printf '{"format":"atr-trace/1","trace_id":"a","steps":[{"kind":"tool","tool":"bash","command":"true"}]}\n{"format":"atr-trace/1","trace_id":"b","steps":[{"kind":"tool","tool":"bash","command":"true"},{"kind":"tool","tool":"editor","action":"view","path":"x"}]}\n' >"$TN/ab.ndjson"
ok "tenants no baseline" "$ATR" replay tools -q --tenants --no-baseline --config none --sandbox none "$TN/ab.ndjson" --out "$TN/nb"
check "no baseline: no alone lines, inflation null" "python3 -c \"
import json
ls = [json.loads(l) for l in open('$TN/nb/metrics.jsonl')]
assert len(ls) == 3 and all(m['phase'] == 'shared' for m in ls), ls
ts = json.load(open('$TN/nb/summary.json'))['tenants']
assert [t['steps'] for t in ts] == [1, 1] and all(t['inflation_mean'] is None and t['latency_mean_ms_alone'] is None for t in ts), ts
\""
# The table says n/a for the figures it has not, as the others do (issue 26).
ok "tenants no baseline table" "$ATR" replay tools --tenants --no-baseline --config none --sandbox none "$TN/ab.ndjson" --out "$TN/nb-table"
check "tenants table n/a, not nan" "grep -q ' n/a ' '$T/out' && ! grep -qw 'nan' '$T/out'"
