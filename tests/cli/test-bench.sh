# test-bench.sh - `atr bench report`: per-group counts and rates of
# ISO-Bench-style folders checked against figures computed here in Python
# from the files themselves, group naming and merging, --json, --csv,
# --noise, -o, the 3-way report over repeats (tests/data/bench-repeat:
# medians, intervals, verdicts, per-agent and true success, golden), and
# bad inputs (one error line, exit 1 or 2, no output).
rm -rf bench && cp -R "$DATA/bench" bench && chmod -R u+w bench   # relative names

# The expected figures, computed from the files without atr: status counts,
# and outcomes as docs/bench.md maps ISO-Bench's error texts.
cat >"$T/expect.py" <<'PY'
import json, os, sys
def outcome(d):
    if "outcome" in d: return d["outcome"]
    s, e, raw = d["status"], (d.get("error") or "").lower(), (d.get("raw_output") or "").lower()
    if s == "success": return "success"
    if "out of memory" in e or (s == "error" and "out of memory" in raw): return "oom"
    if "no metrics" in e: return "no_metrics"
    if "crash" in e: return "server_crashed"
    if "start" in e: return "startup_timeout"
    if s == "timeout" or "timed out" in e: return "benchmark_timeout"
    if "patch" in e: return "patch_failed"
    return "other_error"
got = {g["group"]: g for g in json.load(open(sys.argv[1]))}
for arg in sys.argv[2:]:
    name, d = arg.split("=")
    docs = [json.load(open(os.path.join(d, f))) for f in sorted(os.listdir(d)) if f.endswith(".json")]
    st = [x["status"] for x in docs]
    want = {"group": name, "total": len(docs), "success": st.count("success"),
            "error": st.count("error"), "timeout": st.count("timeout")}
    outs = {}
    for x in docs: outs[outcome(x)] = outs.get(outcome(x), 0) + 1
    g = got[name]
    for k, v in want.items(): assert g[k] == v, (name, k, g[k], v)
    assert g["outcomes"] == outs, (name, g["outcomes"], outs)
    rate = 100.0 * want["success"] / want["total"]
    assert abs(g["success_rate"] - rate) < 1e-4, (name, g["success_rate"], rate)
    print("%s %d of %d, %.1f %%" % (name, want["success"], want["total"], rate))
PY
G="bench/claude_code/results bench/codex/results bench/iso-bench"
# shellcheck disable=SC2086
ok bench-json "$ATR" bench report --json $G
cp "$T/out" "$T/report.json"
check bench-json-counts "python3 '$T/expect.py' '$T/report.json' claude_code=bench/claude_code/results codex=bench/codex/results iso-bench=bench/iso-bench >'$T/rates'"
check bench-json-keys "python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))[0]; assert set(g) >= {\"group\",\"total\",\"success\",\"error\",\"timeout\",\"success_rate\",\"outcomes\",\"comparison\",\"wins\",\"ties\",\"losses\",\"without_latency\"}' '$T/report.json'"
check bench-json-geomean "python3 -c 'import json,sys,math; g=json.load(open(sys.argv[1]))[0]; r=[3500/3300,2120/2100,3900/4400,1300/1200]; assert abs(g[\"geomean_agent_over_human\"]-math.exp(sum(map(math.log,r))/4))<1e-3; assert (g[\"wins\"],g[\"ties\"],g[\"losses\"],g[\"inconclusive\"])==(0,0,0,4); assert g[\"without_latency\"]==[\"bench/claude_code/results/3d4e5f60_agent_result.json\"]' '$T/report.json'"
# the Markdown states the same rates, in the issue's words
# shellcheck disable=SC2086
ok bench-md "$ATR" bench report $G
check bench-rates-computed "[ \$(wc -l <'$T/rates') -eq 3 ]"
check bench-md-rates "while read -r name rate; do grep -q \"^## \$name\$\" '$T/out' && grep -q \"| \$rate |\$\" '$T/out' || exit 1; done <'$T/rates'"
check bench-md-rate-text "grep -q '| 21 | 14 | 6 | 1 | 14 of 21, 66.7 % |' '$T/out'"
# One run a side has no interval: the verdict is inconclusive, whatever the
# ratio (the old fixed 5 % band called 3500/3300 a win).
check bench-md-verdicts "grep -q '^| 0a1b2c3d | agent | 1/1/1 | 0/0/0 | 3000.00 | 3300.00 | 3500.00 | 1.061 | - | inconclusive | 1.167 | - | inconclusive | no |' '$T/out' && grep -q 'within 1 +- 5 % (--noise, the tie margin)' '$T/out'"

# ---- repeats: tests/data/bench-repeat (SOURCE.txt), 5 repeats a variant ----
rm -rf rep && cp -R "$DATA/bench-repeat/results" rep && chmod -R u+w rep
golden bench-repeat-md "$DATA/bench-repeat/report.md" "$ATR" bench report bench-repeat=rep
ok bench-repeat-json "$ATR" bench report --json rep
cp "$T/out" "$T/repeat.json"
cat >"$T/repeat.py" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))[0]
rows = {(r["commit"], r["agent"]): r for r in g["comparison"]}
def tok(c, a, against):
    return rows[(c, a)]["metrics"]["tok_s"]["agent_over_" + against]
# every ratio has its interval around the point, over the repeats
for (c, a), r in rows.items():
    for m, v in r["metrics"].items():
        for k in ("agent_over_baseline", "agent_over_human"):
            x = v[k]
            if x is None:
                continue
            assert x["method"] in ("pairs", "repeats") and x["lo"] <= x["ratio"] <= x["hi"], (c, a, m, x)
# the rounds of an interleaved run are pairs; a side with failed repeats is not
assert tok("aaaa1111", "fast", "baseline")["method"] == "pairs"
assert tok("aaaa1111", "flaky", "baseline")["method"] == "repeats"
v = {k: tok("aaaa1111", a, k)["verdict"] for a in ("fast",) for k in ("baseline", "human")}
assert v == {"baseline": "win", "human": "win"}, v
assert tok("aaaa1111", "same", "baseline")["verdict"] == "tie"
assert tok("aaaa1111", "same", "human")["verdict"] == "loss"
assert tok("aaaa1111", "flaky", "baseline")["verdict"] == "inconclusive"
assert tok("aaaa1111", "flaky", "baseline")["n"] == 2       # 3 failed repeats left out
assert rows[("aaaa1111", "broken")]["metrics"]["tok_s"]["agent_over_baseline"] is None
# lower latency is the win: the fast agent's TTFT ratio is below 1
t = rows[("bbbb2222", "fast")]["metrics"]["ttft_ms"]["agent_over_human"]
assert t["ratio"] < 1 and t["verdict"] == "win", t
# failed repeats are counted, not averaged
assert rows[("aaaa1111", "flaky")]["runs"]["agent"] == {"runs": 5, "successful": 2}
# true success: ran and beat the baseline beyond noise
ts = sorted((c, a) for (c, a), r in rows.items() if r["true_success"])
assert ts == [("aaaa1111", "fast"), ("bbbb2222", "fast")], ts
assert g["true_success"] == 2
# per agent: only the agent's own runs
pa = {a["agent"]: a for a in g["per_agent"]}
assert set(pa) == {"fast", "same", "flaky", "broken"}, set(pa)
assert (pa["flaky"]["runs"], pa["flaky"]["success"], pa["flaky"]["outcomes"]) == \
    (5, 2, {"success": 2, "no_metrics": 1, "server_crashed": 2}), pa["flaky"]
assert (pa["fast"]["commits"], pa["fast"]["true_success"], pa["fast"]["success_rate"]) == (2, 2, 100)
assert pa["broken"]["success_rate"] == 0 and pa["broken"]["outcomes"] == {"patch_failed": 5}
# the human's speedup is the reference: a win on one commit, a loss on the other
ref = {f["commit"]: f["metrics"]["tok_s"]["human_over_baseline"]["verdict"] for f in g["human_reference"]}
assert ref == {"aaaa1111": "win", "bbbb2222": "loss"}, ref
assert g["human_vs_baseline"] == {"wins": 1, "ties": 0, "losses": 1, "inconclusive": 0}
assert g["ci_level_pct"] == 95 and g["noise_pct"] == 5
PY
check bench-repeat-verdicts "python3 '$T/repeat.py' '$T/repeat.json'"
# --noise is only the tie margin: the same agent's interval (within 0.3 %
# of 1 over its paired rounds) is a tie at 5 % and inconclusive at 0.1 %,
# never a win or a loss
ok bench-repeat-noise "$ATR" bench report --json --noise 0.1 rep
check bench-repeat-noise-margin "python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))[0]; r=[x for x in g[\"comparison\"] if x[\"agent\"]==\"same\"][0]; assert r[\"verdict_vs_baseline\"]==\"inconclusive\", r' '$T/out'"
# --csv-ratios: one row per ratio; --csv: the repeat of each result
ok bench-repeat-csv-ratios "$ATR" bench report --csv-ratios rep
check bench-repeat-csv-ratios-rows "python3 -c '
import csv,sys; r=list(csv.DictReader(open(sys.argv[1])))
# 2 commits x 5 metrics human/baseline; agents with figures: 4 x 5 x 2
assert len(r)==10+40, len(r)
x=[w for w in r if (w[\"commit\"],w[\"agent\"],w[\"reference\"],w[\"metric\"])==(\"aaaa1111\",\"fast\",\"baseline\",\"tok_s\")][0]
assert (x[\"candidate\"],x[\"verdict\"],x[\"n_reference\"],x[\"n_candidate\"],x[\"method\"])==(\"agent\",\"win\",\"5\",\"5\",\"pairs\"), x
assert float(x[\"lo\"])<=float(x[\"ratio\"])<=float(x[\"hi\"])' '$T/out'"
ok bench-repeat-csv "$ATR" bench report --csv rep
check bench-repeat-csv-repeats "python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert sorted(set(x[\"repeat\"] for x in r))==[\"1\",\"2\",\"3\",\"4\",\"5\"]; assert all(x[\"agent\"]!=\"fast_r2\" for x in r)' '$T/out'"
# the HTML report's bench section: per agent, the intervals and verdicts,
# the reference and the latencies, from the same JSON
ok bench-repeat-html "$ATR" report -o "$T/rep.html" rep
cat >"$T/html.py" <<'PY'
import re, sys
h = open(sys.argv[1]).read()
sec = h[h.index('<section id="bench">'):]
sec = re.sub(r"<[^>]+>", " ", sec[:sec.index("</section>")])
sec = re.sub(r"\s+", " ", sec)
assert "rep: per agent (its own runs only)" in sec, sec[:300]
assert " flaky 5 2 40.0 1 0 " in sec, sec
assert "aaaa1111 fast 5 of 5 / 5 of 5 / 5 of 5 1000.0 1200.0 1300.0 1.083 [" in sec, sec
assert "] win 1.300 [" in sec and "] tie no " in sec
assert "The reference, human against baseline" in sec and "bbbb2222 500.0 450.0 0.900 [" in sec
assert "bbbb2222 fast TTFT ms 80.20 90.20 70.20 0.875 [" in sec, sec
PY
check bench-repeat-html-section "python3 '$T/html.py' '$T/rep.html'"
# A repeat number of the wrong type is an error at its place
sed 's/"repeat": 2,/"repeat": "2",/' rep/aaaa1111_baseline_r2_result.json >"$T/bad-repeat.json"
mkdir -p badrep && cp "$T/bad-repeat.json" badrep/aaaa1111_baseline_r2_result.json
fails bench-repeat-bad-type 1 '^atr: badrep/aaaa1111_baseline_r2_result\.json:[0-9]+:[0-9]+: expected a positive integer as "repeat"$' "$ATR" bench report badrep

# --csv: one row per result, every figure
# shellcheck disable=SC2086
ok bench-csv "$ATR" bench report --csv $G
check bench-csv-rows "python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert len(r)==28; assert r[0][\"group\"]==\"claude_code\"; assert sum(x[\"outcome\"]==\"success\" for x in r)==17' '$T/out'"

# naming: NAME=DIR; shards given one name merge into one group
ok bench-name "$ATR" bench report --json mine=bench/codex/results mine=bench/iso-bench
check bench-name-merged "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [g[\"group\"] for g in r]==[\"mine\"] and r[0][\"total\"]==7' '$T/out'"
# vLLM and SGLang files: one result per SGLang line; the old vLLM schema has no throughput
ok bench-vllm-sglang "$ATR" bench report --json bench/vllm bench/sglang
check bench-vllm-sglang-counts "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [(g[\"group\"],g[\"total\"],g[\"success\"]) for g in r]==[(\"vllm\",1,1),(\"sglang\",2,2)]' '$T/out'"
# -o writes the file atomically, nothing on stdout
ok bench-output "$ATR" bench report -o "$T/report.md" bench/iso-bench
check bench-output-file "grep -q '^## iso-bench' '$T/report.md' && [ ! -s '$T/out' ]"

# Hostile result fields (tests/data/bench-hostile/SOURCE.txt): the Markdown
# holds no raw HTML, backtick or line break from them, and every table row
# has its own table's cells, no more (a '|' in a field is not a cell).
rm -rf hostile && cp -R "$DATA/bench-hostile/results" hostile && chmod -R u+w hostile
mv hostile/x_throughput_result.json 'hostile/t<b>|`x`_result.json'
golden bench-md-hostile "$DATA/bench-hostile/report.md" "$ATR" bench report '<b>group|`1`&=hostile'
cat >"$T/cells.py" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
assert not any(c in "".join(lines) for c in "<>`\r\t\x1b"), "raw HTML, code or a control character"
head = None
for line in lines:
    if not line.startswith("|"):
        head = None
    elif head is None:
        head = line.count("|")
    else:
        assert line.count("|") == head, line
PY
check bench-md-hostile-cells "python3 '$T/cells.py' '$T/out'"

# bad inputs: one line FILE:LINE:COL, exit 1, nothing written
mkdir -p bad1 bad2 bad3 bad4 bad5 empty && echo x >empty/notes.txt
head -c 200 bench/iso-bench/e206b543_human_result.json >bad1/e206b543_human_result.json
sed 's/"status": "success"/"status": "done"/' bench/iso-bench/e206b543_human_result.json >bad2/e206b543_human_result.json
sed 's/"metrics": {/"metrics": 3, "x": {/' bench/iso-bench/e206b543_human_result.json >bad3/e206b543_human_result.json
{ head -n 1 bench/sglang/sglang_1015_1000_1024_128.jsonl; echo '{"backend": "sglang", "completed": "x"}'; } >bad4/runs.jsonl
echo '{"hello": 1}' >bad5/x.json
fails bench-bad-json 1 '^atr: bad1/e206b543_human_result\.json:[0-9]+:[0-9]+: ' "$ATR" bench report bad1
fails bench-bad-status 1 '^atr: bad2/e206b543_human_result\.json:6:13: expected status success, error or timeout$' "$ATR" bench report bad2
fails bench-bad-metrics 1 'e206b543_human_result\.json:[0-9]+:[0-9]+: expected an object as "metrics"$' "$ATR" bench report bad3
fails bench-bad-jsonl-line 1 '^atr: bad4/runs\.jsonl:2:[0-9]+: expected a number for "completed", found string$' "$ATR" bench report bad4
fails bench-not-result 1 '^atr: bad5/x\.json:1:1: expected a benchmark result' "$ATR" bench report bad5
fails bench-no-results 1 'empty: no result files' "$ATR" bench report empty
fails bench-missing-dir 1 '^atr: nosuch: no such result file or folder$' "$ATR" bench report nosuch
fails bench-not-file-or-dir 1 '^atr: /dev/null: expected a result folder or a result file$' "$ATR" bench report /dev/null
# one result file: read as a group of one, named by its folder
ok bench-report-file "$ATR" bench report --json bench/iso-bench/e206b543_human_result.json
check bench-report-file-group "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [(g[\"group\"], g[\"total\"], g[\"success\"]) for g in r] == [(\"iso-bench\", 1, 1)], r' '$T/out'"
fails bench-bad-after-good 1 'bad1/' "$ATR" bench report -o "$T/never.md" bench/iso-bench bad1
absent bench-bad-no-output "$T/never.md"
# usage: exit 2, naming the option
fails bench-no-dir 2 'atr bench report: missing DIR' "$ATR" bench report
fails bench-bad-noise 2 'atr bench report: --noise wants a percentage' "$ATR" bench report --noise -1 bench/iso-bench
fails bench-json-csv 2 'atr bench report: --json, --csv and --csv-ratios exclude each other' "$ATR" bench report --json --csv bench/iso-bench
fails bench-no-mode 2 'atr bench: wants a mode' "$ATR" bench
fails bench-unknown-opt 2 "unknown option '--bogus'" "$ATR" bench report --bogus bench/iso-bench
ok bench-report-help "$ATR" bench report --help
check bench-report-help-text "grep -q 'usage: atr bench report' '$T/out'"
