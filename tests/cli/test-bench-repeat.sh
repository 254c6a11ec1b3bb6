# test-bench-repeat.sh - `atr bench run --repeat N` (docs/bench.md): the
# example spec (examples/bench/sim.json) run 5 times, round by round (the
# order checked from the progress lines), repeat K > 1 named _r<K> with
# "repeat": K inside, every failed repeat recorded with its outcome, and
# the 3-way report of the folder with intervals, verdicts and per-agent
# success; resume with repeats (a finished repeat skipped, a missing one
# run, more repeats added later), the spec's "repeat" and --repeat over
# it, and bad input. Ports are free ones (--port 0).

BP=$T/bench-repeat
mkdir -p "$BP"
cp -r "$ROOT/examples/bench" "$BP/spec"
# The workdir in this run's folder; the agents' timeouts cut to 2 s (the
# stall and slow-start agents run into them in 10 of the 55 runs).
python3 - "$BP/spec/sim.json" "$BP/work" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["workdir"] = sys.argv[2]
spec["variants"]["agent"].update(startup_timeout_s=2, benchmark_timeout_s=2)
json.dump(spec, open(sys.argv[1], "w"), indent=2)
PY
SPEC=$BP/spec/sim.json

# ---- the example, 5 times ----
"$ATR" bench run "$SPEC" --repeat 5 --port 0 -o "$BP/r5" >"$BP/r5.out" 2>"$BP/r5.err"
rc=$?
check bench-repeat-exit-0 "[ $rc = 0 ]"
check bench-repeat-totals "grep -qx '55 runs: 55 written, 0 had a result; 25 success; 5 no_metrics; 5 server_crashed; 5 startup_timeout; 5 benchmark_timeout; 5 oom; 5 patch_failed' '$BP/r5.out'"

# Names, "repeat" inside, and each repeat's own log.
cat >"$BP/files.py" <<'PY'
import json, os, re, sys
d = sys.argv[1]
names = sorted(os.listdir(d + "/results"))
# beside the results, the runner's state for watchers (atr dashboard)
assert json.load(open(d + "/results/.atr-bench-state.json"))["state"] == "complete"
names = [n for n in names if n != ".atr-bench-state.json"]
assert len(names) == 55, len(names)
for n in names:
    m = re.fullmatch(r"(.*?)(?:_r([2-5]))?_result\.json", n)
    assert m, n
    k = int(m.group(2) or 1)
    r = json.load(open(d + "/results/" + n))
    assert (r["repeat"], r["repeats"]) == (k, 5), (n, r["repeat"], r["repeats"])
    log = d + "/logs/" + n[: -len("_result.json")] + ".log"
    assert ("repeat %d of 5" % k) in open(log).readline(), log
    stem = m.group(1)
    assert r["variant"] == stem.split("_")[1] and r["agent"] == (stem.split("_", 2)[2] if stem.count("_") > 1 else None), n
# a failed repeat is a result like any other, with its outcome
crash = json.load(open(d + "/results/a1b2c3d4_agent_crash_r3_result.json"))
assert crash["outcome"] == "server_crashed" and crash["status"] == "error", crash["outcome"]
PY
check bench-repeat-files "python3 '$BP/files.py' '$BP/r5'"

# Round by round: per item, the runs of round K are those of round 1, in
# the same order, and every round ends before the next begins.
cat >"$BP/order.py" <<'PY'
import re, sys
seq = {}
for line in open(sys.argv[1]):
    m = re.match(r"\[\d+/55\] (\w+) (.+?) \(repeat (\d)/5\): done, ", line)
    if m:
        seq.setdefault(m.group(1), []).append((int(m.group(3)), m.group(2)))
assert sorted(seq) == ["a1b2c3d4", "b2c3d4e5"], seq.keys()
for commit, runs in seq.items():
    first = [v for k, v in runs if k == 1]
    want = [(k, v) for k in range(1, 6) for v in first]
    assert runs == want, (commit, runs)
    assert first[:2] == ["baseline", "human"], first
PY
check bench-repeat-interleaved "python3 '$BP/order.py' '$BP/r5.err'"

# The 3-way report: intervals over the repeats, per-agent success, true
# success. The simulated servers' figures vary from run to run (real
# time), so the structure and the ratios that hold by a wide margin are
# checked, not a golden (test-bench.sh has one of fixed figures).
ok bench-repeat-report-json "$ATR" bench report --json "$BP/r5"
cp "$T/out" "$BP/r5.json"
cat >"$BP/report.py" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))[0]
assert (g["total"], g["success"]) == (55, 25), (g["total"], g["success"])
pa = {a["agent"]: a for a in g["per_agent"]}
assert set(pa) == {"fast", "crash", "fail-all", "stall", "oom", "slow-start", "empty"}, set(pa)
assert (pa["fast"]["runs"], pa["fast"]["success"], pa["fast"]["success_rate"]) == (5, 5, 100)
assert pa["crash"]["outcomes"] == {"server_crashed": 5} and pa["crash"]["success_rate"] == 0
assert pa["stall"]["outcomes"] == {"benchmark_timeout": 5}
rows = {(r["commit"], r["agent"]): r for r in g["comparison"]}
fast = rows[("a1b2c3d4", "fast")]
assert fast["runs"] == {"baseline": {"runs": 5, "successful": 5}, "human": {"runs": 5, "successful": 5},
                        "agent": {"runs": 5, "successful": 5}}, fast["runs"]
# throughput and E2EL have their intervals over the 5 rounds, paired
# (each round ran baseline, human and agent one after the other). The other
# latencies of these fast servers are fractions of a millisecond, written
# with 2 decimals: a run's median can be 0 (chunks read together, or a
# loaded client), and a value that is not positive gives no interval
# (method "none", inconclusive); where there is one it holds its point.
for m in ("tok_s", "ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
    for k in ("agent_over_baseline", "agent_over_human"):
        x = fast["metrics"][m][k]
        if m in ("tok_s", "e2el_ms"):
            # rounds paired when every round of both sides succeeded
            assert x["method"] in ("pairs", "repeats") and x["n"] >= 2, (m, k, x)
        if x is not None and x["method"] in ("pairs", "repeats"):
            assert x["lo"] <= x["ratio"] <= x["hi"], (m, k, x)
        assert x is None or x["verdict"] in ("win", "tie", "loss", "inconclusive"), x
# `fast` serves ~1.7x the baseline's tok/s and the human ~1.3x, but the
# servers run in real time on a shared machine: the figures are not
# checked against a bound (a loaded round narrows them), only that each
# verdict is the one its interval gives (stats/ci.c: tie within 1 +-
# noise, win beyond 1 for a higher-is-better metric) and true success
# follows the verdict
margin = g["noise_pct"] / 100
def verdict(x):
    if x["method"] not in ("pairs", "repeats"):
        return "inconclusive"
    if x["lo"] >= 1 / (1 + margin) and x["hi"] <= 1 + margin:
        return "tie"
    return "win" if x["lo"] > 1 else "loss" if x["hi"] < 1 else "inconclusive"
tok = fast["metrics"]["tok_s"]["agent_over_baseline"]
assert tok["ratio"] > 0 and tok["verdict"] == verdict(tok), tok
assert fast["true_success"] == (tok["verdict"] == "win") == (pa["fast"]["true_success"] == 1), tok
crash = rows[("a1b2c3d4", "crash")]
assert crash["runs"]["agent"] == {"runs": 5, "successful": 0} and not crash["true_success"]
assert crash["metrics"]["tok_s"]["agent_over_baseline"] is None
ref = {f["commit"]: f["metrics"]["tok_s"]["human_over_baseline"] for f in g["human_reference"]}
assert set(ref) == {"a1b2c3d4", "b2c3d4e5"} and all(
    r["method"] in ("pairs", "repeats") and r["lo"] <= r["ratio"] <= r["hi"] and r["verdict"] == verdict(r)
    for r in ref.values()), ref
PY
check bench-repeat-report "python3 '$BP/report.py' '$BP/r5.json'"
ok bench-repeat-report-md "$ATR" bench report "$BP/r5"
check bench-repeat-report-md-agents "grep -Eq '^\\| fast \\| 5 \\| 5 \\| 5 of 5, 100.0 % \\| success 5 \\| 1 \\| [01] of 1 \\|$' '$T/out' && grep -q '^| crash | 5 | 0 | 0 of 5, 0.0 % | server_crashed 5 | 1 | 0 of 1 |$' '$T/out'"
check bench-repeat-report-md-interval "grep -Eq '^\\| a1b2c3d4 \\| fast \\| 5/5/5 \\| 0/0/0 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| \\[[0-9.]+, [0-9.]+\\] \\| [a-z]+ \\| [0-9.]+ \\| \\[[0-9.]+, [0-9.]+\\] \\| (win \\| yes|inconclusive \\| no) \\|$' '$T/out'"

# ---- resume with repeats (one item) ----
ok bench-repeat-resume-2 "$ATR" bench run "$SPEC" --port 0 --only a1b2 --repeat 2 -o "$BP/res"
check bench-repeat-resume-2-runs "grep -q '^10 runs: 10 written, 0 had a result;' '$T/out'"
# three repeats over two done: round 3 only
"$ATR" bench run "$SPEC" --port 0 --only a1b2 --repeat 3 -o "$BP/res" >"$BP/res3.out" 2>"$BP/res3.err"
check bench-repeat-resume-3-runs "grep -q '^15 runs: 5 written, 10 had a result;' '$BP/res3.out' && [ \$(grep -c 'has a result, skipped' '$BP/res3.err') = 10 ] && [ \$(grep -c '(repeat 3/3): done' '$BP/res3.err') = 5 ]"
# a missing repeat runs again, the others stay
rm "$BP/res/results/a1b2c3d4_human_r2_result.json"
before=$(stat -c %Y "$BP/res/results/a1b2c3d4_human_r3_result.json")
"$ATR" bench run "$SPEC" --port 0 --only a1b2 --repeat 3 -o "$BP/res" >"$BP/res4.out" 2>"$BP/res4.err"
check bench-repeat-resume-missing "grep -q '^15 runs: 1 written, 14 had a result; 1 success$' '$BP/res4.out' && grep -q 'a1b2c3d4 human (repeat 2/3): done, success' '$BP/res4.err' && [ \$(stat -c %Y '$BP/res/results/a1b2c3d4_human_r3_result.json') = $before ]"
check bench-repeat-resume-refilled "python3 -c \"import json; d = json.load(open('$BP/res/results/a1b2c3d4_human_r2_result.json')); assert d['repeat'] == 2 and d['outcome'] == 'success'\""
# the spec's "repeat", and --repeat over it
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); s['repeat']=3; json.dump(s, open(sys.argv[2], 'w'))" "$SPEC" "$BP/spec/sim3.json"
ok bench-repeat-spec-field "$ATR" bench run "$BP/spec/sim3.json" --port 0 --only a1b2 -o "$BP/res"
check bench-repeat-spec-field-runs "grep -qx '15 runs: 0 written, 15 had a result' '$T/out'"
ok bench-repeat-cli-over-spec "$ATR" bench run "$BP/spec/sim3.json" --port 0 --only a1b2 --repeat 1 -o "$BP/res"
check bench-repeat-cli-over-spec-runs "grep -qx '5 runs: 0 written, 5 had a result' '$T/out'"
ok bench-repeat-plan "$ATR" bench run "$BP/spec/sim3.json" --dry-run
check bench-repeat-plan-runs "grep -qx 'repeat: every run 3 times, an item.s runs round by round' '$T/out' && grep -qx '33 runs' '$T/out'"

# ---- bad input: exit 2 (usage, spec) or 1 (runner), nothing written ----
fails bench-repeat-zero 2 "^atr bench run: --repeat wants a number of runs from 1 to 1000, got '0'" \
    "$ATR" bench run "$SPEC" --repeat 0 -o "$BP/never"
fails bench-repeat-word 2 "^atr bench run: --repeat wants a number of runs from 1 to 1000, got 'five'" \
    "$ATR" bench run "$SPEC" --repeat five -o "$BP/never"
for bad in '"5"' 0 2.5 1001 null; do
    python3 -c "import json,sys; s=json.load(open(sys.argv[1])); s['repeat']=json.loads(sys.argv[3]); json.dump(s, open(sys.argv[2], 'w'), indent=2)" \
        "$SPEC" "$BP/spec/bad.json" "$bad"
    fails "bench-repeat-spec-$bad" 2 "^atr bench run: .*/spec/bad\\.json:[0-9]+:[0-9]+: spec\\.repeat: expected an integer from 1 to 1000$" \
        "$ATR" bench run "$BP/spec/bad.json" -o "$BP/never"
done
absent bench-repeat-bad-nothing "$BP/never"
# repeat 2 of agent x is named like agent x_r2's only run: refused before
# anything starts (the spec alone, one run each, is fine)
cat >"$BP/clash.json" <<EOF2
{"format": "atr-bench-spec/1", "port": 0,
 "variants": {"agent": {"per_agent": true, "server": "atr sim serve --port {port}",
                        "ready_url": "http://127.0.0.1:{port}/health"}},
 "items": [{"human_commit": "cafe0001", "parent_commit": "p", "model": "m",
            "agents": {"x": "$BP/clash.json", "x_r2": "$BP/clash.json"}}]}
EOF2
ok bench-repeat-clash-plan "$ATR" bench run "$BP/clash.json" --dry-run
fails bench-repeat-clash 1 "^atr: two runs would write results/cafe0001_agent_x_r2_result\\.json: repeat K of a run adds _r<K> to its name" \
    "$ATR" bench run "$BP/clash.json" --repeat 2 -o "$BP/clash"
absent bench-repeat-clash-nothing "$BP/clash"
