# test-bench-history.sh - `atr bench history`: a regression planted in a
# generated nightly series is flagged (exit 1 with --fail-on-regression),
# an unchanged noisy series passes (exit 0), repeats of one commit make one
# point, order by the files' timestamps (and the order read without them),
# --json against figures computed here, --html charts, failed results
# counted and left out, and bad input (no results, one point, mixed metric
# sets, options).
H=$T/history
mkdir -p "$H"

# gen.py OUT SEED SHIFT_AT SCALE [REPEATS]: 12 nightly atr bench result
# folders OUT/night-KK[-rR]/results/<commit8>_agent_codex_result.json,
# every figure log-normal with a 2 % sd around its level; from night
# SHIFT_AT on (0: never) throughput is multiplied by SCALE and latencies
# divided by it. Timestamps one day apart, written in shuffled folder
# names' order so that only the timestamps give the order.
cat >"$H/gen.py" <<'PY'
import json, os, random, sys
out, seed, shift_at, scale = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 1
rnd = random.Random(seed)
order = list(range(1, 13))
rnd.shuffle(order)
for slot, night in enumerate(order):
    for r in range(repeats):
        f = scale if shift_at and night >= shift_at else 1.0
        noise = lambda: rnd.lognormvariate(0, 0.02)
        commit = "%08x" % (0xc0de0000 + night)
        m = {"request_throughput_req_s": 40 * f * noise(),
             "output_token_throughput_tok_s": 2600 * f * noise(),
             "ttft_median_ms": 450 / f * noise(), "ttft_p99_ms": 950 / f * noise(),
             "tpot_p99_ms": 38 / f * noise(), "e2el_median_ms": 1620 / f * noise(),
             "e2el_p99_ms": 3420 / f * noise()}
        d = {"human_commit": commit, "human_commit_full": commit * 5, "parent_commit": "0" * 40,
             "model": "m", "status": "success", "error": None, "outcome": "success",
             "duration_s": 60, "metrics": m, "raw_output": "", "variant": "agent",
             "agent": "codex", "timestamp": "2026-11-%02d 03:00:%02d" % (night, r)}
        folder = os.path.join(out, "n%02d-%d" % (slot, r), "results")
        os.makedirs(folder)
        json.dump(d, open(os.path.join(folder, commit + "_agent_codex_result.json"), "w"))
PY
python3 "$H/gen.py" "$H/steady" 7 0 1
python3 "$H/gen.py" "$H/planted" 7 9 0.8
python3 "$H/gen.py" "$H/repeats" 8 9 0.9 3

# --- an unchanged noisy series passes the gate ---
ok history-steady "$ATR" bench history --fail-on-regression "$H"/steady/*
check history-steady-none "grep -q '^0 regressions beyond noise.' '$T/out'"
check history-steady-order "grep -q 'Ordered by the time measured.' '$T/out'"
check history-steady-rows "[ \$(grep -c '^| [0-9]* | c0de00' '$T/out') -eq 12 ]"
# rows in timestamp order: nights 1..12, whatever the folder names' order
check history-steady-sorted "grep '^| [0-9]* | c0de00' '$T/out' | cut -d'|' -f3 | tr -d ' ' >'$H/commits' && printf 'c0de%04x\n' 1 2 3 4 5 6 7 8 9 10 11 12 | diff - '$H/commits'"

# --- a planted 20 % drop from night 9: flagged, exit 1 ---
"$ATR" bench history --fail-on-regression "$H"/planted/* >"$H/planted.md" 2>"$H/planted.err"
check history-planted-exit "[ $? -eq 1 ] && [ ! -s '$H/planted.err' ]"
check history-planted-flagged "grep -q 'agent codex m, point 9 (c0de0009): req/s' '$H/planted.md'"
check history-planted-latency "grep -q 'point 9 (c0de0009): p99 TTFT ms' '$H/planted.md'"
check history-planted-nothing-before "! grep -q 'point [1-8] (c0de000[1-8])' '$H/planted.md'"
# without the gate the same report exits 0
ok history-planted-no-gate "$ATR" bench history "$H"/planted/*
# --html: a chart per metric (7), the 7 regressions in red, the rest not
ok history-html "$ATR" bench history --html "$H/planted.html" "$H"/planted/*
check history-html-charts "[ \$(grep -c '<svg ' '$H/planted.html') -eq 7 ]"
check history-html-red "[ \$(grep -c 'fill=\"#c62828\"' '$H/planted.html') -eq 7 ] && grep -q 'c0de0009: 32.* regression</title>' '$H/planted.html'"

# --- JSON: figures checked against the files ---
ok history-json "$ATR" bench history --json --window 3 "$H"/planted/*
cp "$T/out" "$H/planted.json"
cat >"$H/check.py" <<'PY'
import json, glob, statistics, sys
h = json.load(open(sys.argv[1]))
assert h["window"] == 3 and h["margin"] == 0.05 and h["results"] == 12 and h["failed"] == 0
[s] = h["series"]
assert s["series"] == "agent codex m" and s["order"] == "measured"
pts = s["points"]
assert [p["commit"] for p in pts] == ["c0de%04x" % n for n in range(1, 13)]
files = {json.load(open(f))["human_commit"]: json.load(open(f))
         for f in glob.glob(sys.argv[2] + "/*/results/*.json")}
for p in pts:
    want = files[p["commit"]]["metrics"]["request_throughput_req_s"]
    assert abs(p["metrics"]["req_s"]["value"] - want) < 1e-9, (p["commit"], want)
first = pts[0]["metrics"]["req_s"]
assert "ratio" not in first and first["regression"] is False
p9 = pts[8]["metrics"]["req_s"]
base = [pts[k]["metrics"]["req_s"]["value"] for k in (5, 6, 7)]
assert abs(p9["ratio"] - p9["value"] / statistics.median(base)) < 1e-9
assert p9["baseline_runs"] == 3 and p9["method"] == "repeats"
assert p9["regression"] and p9["verdict"] == "loss" and p9["hi"] < 1 / 1.05
assert h["regressions"] == sum(c["regression"] for p in pts for c in p["metrics"].values())
PY
check history-json-figures "python3 '$H/check.py' '$H/planted.json' '$H/planted'"

# --- repeats: three results of one commit make one point of 3 runs ---
ok history-repeats "$ATR" bench history --json "$H"/repeats/*
check history-repeats-points "python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))[\"series\"][0]; assert len(s[\"points\"]) == 12; assert all(p[\"runs\"] == 3 for p in s[\"points\"]); c = s[\"points\"][8][\"metrics\"][\"req_s\"]; assert c[\"baseline_runs\"] == 15 and c[\"verdict\"] == \"loss\", c' '$T/out'"

# --- failed results are counted, not measured ---
mkdir -p "$H/failed/results"
cat >"$H/failed/results/c0de0005_agent_codex_result.json" <<'EOF'
{"human_commit": "c0de0005", "model": "m", "status": "error", "error": "Server crashed after applying patch",
 "variant": "agent", "agent": "codex", "metrics": null, "timestamp": "2026-11-05 04:00:00"}
EOF
ok history-failed "$ATR" bench history --json "$H"/steady/* "$H/failed"
check history-failed-counted "python3 -c 'import json,sys; h=json.load(open(sys.argv[1])); p=h[\"series\"][0][\"points\"][4]; assert h[\"failed\"] == 1 and p[\"failed\"] == 1 and p[\"runs\"] == 1, p' '$T/out'"

# --- no timestamps: the order read, and said ---
mkdir -p "$H/untimed"
for n in 1 2 3; do
    printf '{"request_throughput": %s, "mean_ttft_ms": 10, "p99_ttft_ms": 20}\n' "1$n" >"$H/untimed/run$n.json"
done
ok history-untimed "$ATR" bench history "$H/untimed"
check history-untimed-said "grep -q 'Ordered as read: 3 of its results say nothing of when they were measured.' '$T/out'"

# --- bad input: one message, exit 1 (2 for usage), nothing on stdout ---
mkdir -p "$H/empty"
fails history-empty-dir 1 "empty: no result files" "$ATR" bench history "$H/empty"
fails history-one-point 1 "one point only: a history needs results of at least two commits" \
    "$ATR" bench history "$H/steady/n00-0"
mkdir -p "$H/mixed"
printf '{"request_throughput": 10, "p99_ttft_ms": 20}\n' >"$H/mixed/a.json"
printf '{"request_throughput": 11}\n' >"$H/mixed/b.json"
fails history-mixed-metrics 1 "b.json: no p99 TTFT ms, which .*a.json has \(the results of one series must carry the same metrics\)" \
    "$ATR" bench history "$H/mixed"
fails history-only-failed 1 "no result that measured anything \(1 failed\)" \
    "$ATR" bench history "$H/failed"
fails history-missing 1 "nope: no such result file or folder" "$ATR" bench history "$H/nope"
fails history-no-dir 2 "missing DIR or FILE" "$ATR" bench history
fails history-window-0 2 "--window wants a number of points in 1..1000" \
    "$ATR" bench history --window 0 "$H/steady"
fails history-margin 2 "--margin wants a percentage" "$ATR" bench history --margin -1 "$H/steady"
