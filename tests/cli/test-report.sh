# test-report.sh - `atr report`: one self-contained HTML file from bundled
# traces, a result JSON and a sweep made here and bench folders; hostile
# text stays text; bad inputs fail with one line and leave no file (docs/report.md).
R=$T/report
mkdir -p "$R"

# The page's facts, from Python's html.parser: external references, the
# sections, the trace table's rows, and the data block's raw text.
cat >"$R/facts.py" <<'EOF'
import json, sys
from html.parser import HTMLParser

class Facts(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs, self.sections, self.rows, self.imgs = [], [], 0, 0
        self.in_traces = self.in_data = False
        self.data = ""
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "audio", "video", "source") and a.get("src"):
            self.refs.append((tag, a["src"]))
        if tag == "link" and a.get("href"):
            self.refs.append((tag, a["href"]))
        if tag == "img":
            self.imgs += 1
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "table" and a.get("id") == "trace-table":
            self.in_traces = True
        if tag == "tr" and self.in_traces and "data-i" in a:
            self.rows += 1
        if tag == "script" and a.get("id") == "data":
            self.in_data = True
    def handle_endtag(self, tag):
        if tag == "table":
            self.in_traces = False
        if tag == "script":
            self.in_data = False
    def handle_data(self, d):
        if self.in_data:
            self.data += d

text = open(sys.argv[1], encoding="utf-8").read()
f = Facts()
f.feed(text)
data = json.loads(f.data)
print(json.dumps({
    "refs": f.refs, "sections": f.sections, "rows": f.rows, "imgs": f.imgs,
    "urls": text.count("http://") + text.count("https://"),
    "traces": len(data["traces"]), "results": len(data["results"]),
    "raw_lt_in_data": "<" in f.data,
    "ids": [t["id"] for t in data["traces"]],
}))
EOF

# ---- a report from bundled data ----
"$ATR" sim run -q "$DATA/atr/small.ndjson" --profile h100/llama-3.1-8b --save-result "$R/sim.json" \
    >/dev/null 2>&1
ok "report from traces, a result and bench folders" "$ATR" report -o "$R/all.html" \
    "$DATA/atr/small.ndjson" "$DATA/swe-agent/function_calling_simple.traj" "$R/sim.json" \
    "$DATA/bench/claude_code" "$DATA/bench/iso-bench"
check "report written" "[ -s '$R/all.html' ]"
check "report is html.parser-clean" "python3 '$R/facts.py' '$R/all.html' >'$R/facts.json'"
traces=$("$ATR" stats --json "$DATA/atr/small.ndjson" "$DATA/swe-agent/function_calling_simple.traj" |
    python3 -c "import json, sys; print(json.load(sys.stdin)['traces'])")
check "no external reference (script src, link href, img src)" \
    "python3 -c \"import json; f = json.load(open('$R/facts.json')); assert f['refs'] == [], f['refs']\""
check "no http:// or https:// anywhere" \
    "python3 -c \"import json; f = json.load(open('$R/facts.json')); assert f['urls'] == 0, f['urls']\""
for s in overview traces results bench appendix; do
    check "section $s present" \
        "python3 -c \"import json; assert '$s' in json.load(open('$R/facts.json'))['sections']\""
done
check "trace table rows = trace count ($traces)" \
    "python3 -c \"import json; f = json.load(open('$R/facts.json')); assert f['rows'] == $traces == f['traces'], f\""
check "one result in the data" \
    "python3 -c \"import json; assert json.load(open('$R/facts.json'))['results'] == 1\""
check "percentile table and charts" "grep -q '<h3>TTFT (ms)</h3>' '$R/all.html' && grep -q 'E2EL (ms)</text>' '$R/all.html'"
check "bench comparison" "grep -q 'claude_code: agent against baseline and human' '$R/all.html'"
check "appendix has size and XXH3-128 hash of an input" \
    "grep -Eq 'sim.json</td><td>result</td><td>[^<]*</td><td class=\"n\">[0-9]+</td><td><code>[0-9a-f]{32}</code>' '$R/all.html'"
check "appendix has the version and the command line" \
    "grep -q 'command: <code>atr report -o ' '$R/all.html'"
check "light and dark" "grep -q 'prefers-color-scheme: dark' '$R/all.html'"

# A section appears only when its inputs are given.
ok "report from traces alone" "$ATR" report "$DATA/atr/small.ndjson" -o "$R/traces.html"
check "no results or bench section without those inputs" \
    "! grep -q 'id=\"results\"' '$R/traces.html' && ! grep -q 'id=\"bench\"' '$R/traces.html'"
ok "report from a result alone" "$ATR" report "$R/sim.json" -o "$R/result.html"
check "no traces section without traces" "! grep -q 'id=\"traces\"' '$R/result.html'"
ok "report from vLLM's own result file" "$ATR" report \
    "$DATA/bench/vllm/nv-action__serving_llama8B_tp1_1.json" -o "$R/vllm.html"
check "vLLM's result is a result" \
    "grep -q 'id=\"results\"' '$R/vllm.html' && grep -q 'result (vLLM)' '$R/vllm.html'"

# ---- agent shapes: per-source distributions, after Traces ----
"$ATR" gen -q --kind swe --traces 20 --seed 2 -o "$R/gen.ndjson" >/dev/null 2>&1
ok "report of two trace sources" "$ATR" report "$DATA/atr/small.ndjson" "$R/gen.ndjson" -o "$R/shapes.html"
cat >"$R/shapes.py" <<'EOF2'
import json, re, sys
page, gen = sys.argv[1], sys.argv[2]
t = open(page, encoding="utf-8").read()
sec = t[t.index('<section id="shapes">'):]
sec = sec[:sec.index('</section>')]
srcs = set()
for l in (sys.argv[3], gen):
    for line in open(l, encoding="utf-8"):
        if line.strip():
            o = json.loads(line)
            if o.get("type", "trace") == "trace" and "steps" in o:
                srcs.add(o.get("source") or "unknown")
def table(d):
    m = re.search(r'<table class="shape" data-dist="%s">.*?</table>' % d, sec, re.S)
    assert m, d
    rows = {}
    for r in re.findall(r'<tr data-src>(.*?)</tr>', m.group(0)):
        cells = re.findall(r'<td[^>]*>(?:<span[^>]*></span>)?([^<]*)</td>', r)
        rows[cells[0]] = cells[1:]
    return rows
for d in ("steps", "input", "output", "think", "tools"):
    rows = table(d)
    assert sorted(rows) == sorted(srcs), (d, sorted(rows), sorted(srcs))
# steps per trace of source "gen", numpy's linear percentile
v = sorted(len(json.loads(l)["steps"]) for l in open(gen, encoding="utf-8") if l.strip())
h = (len(v) - 1) * 0.5
lo = int(h)
p50 = v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (h - lo)
got = float(table("steps")["gen"][2])
assert abs(got - p50) < 1e-9, (got, p50)
for s, cells in table("tools").items():
    shares = [float(c) for c in cells[1:] if c != "n/a"]
    assert not shares or abs(sum(shares) - 100) <= 0.2, (s, shares)
assert "growth" in sec and re.search(r'prompt growth p50', sec)
print("ok", sorted(srcs), p50)
EOF2
check "shapes: the section after Traces, in the nav" \
    "python3 '$R/facts.py' '$R/shapes.html' >'$R/shf.json' && python3 -c \"
import json; s = json.load(open('$R/shf.json'))['sections']
assert s == ['overview', 'traces', 'shapes', 'appendix'], s\" && grep -q 'href=\"#shapes\">Agent shapes</a>' '$R/shapes.html'"
check "shapes: a row per source per distribution, gen's steps p50 as numpy, tool mix sums to 100 %" \
    "python3 '$R/shapes.py' '$R/shapes.html' '$R/gen.ndjson' '$DATA/atr/small.ndjson' >/dev/null"
check "shapes: box charts with labelled axes" \
    "grep -q '<svg class=\"chart shape-chart\"' '$R/shapes.html' && grep -Eq '>Input tokens per llm call \(tokens(, log scale)?\)</text>' '$R/shapes.html'"
check "no Agent shapes section without traces" "! grep -q 'id=\"shapes\"' '$R/result.html'"

# ---- hostile text: trace id, meta and a tool command hold </script>,
# <img onerror>, quotes, RTL marks and an escaped NUL ----
ok "report of a hostile trace" "$ATR" report "$DATA/report/hostile.ndjson" -o "$R/hostile.html"
check "hostile: no raw <img anywhere" "! grep -q '<img' '$R/hostile.html'"
check "hostile: </script> only where the three script elements (data, timelines, code) end" \
    "[ \$(grep -o '</script' '$R/hostile.html' | wc -l) -eq 3 ]"
check "hostile: html.parser sees no img and a data block without '<'" \
    "python3 '$R/facts.py' '$R/hostile.html' >'$R/hf.json' && python3 -c \"
import json; f = json.load(open('$R/hf.json'))
assert f['imgs'] == 0 and not f['raw_lt_in_data'] and f['rows'] == 1, f
assert f['ids'][0].startswith('</script><img src=x onerror=alert(1)>'), f['ids']\""
check "hostile: shown as escaped text in the table" \
    "grep -q '&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &quot;dq&quot; &#39;sq&#39;' '$R/hostile.html'"
check "hostile: no NUL byte in the page" "[ \$(tr -cd '\\000' <'$R/hostile.html' | wc -c) -eq 0 ]"

# ---- sweeps: `atr sweep` results get a Sweeps section after Results ----
"$ATR" sweep --generate 40:200:64 --target sim:h100/llama-3.1-8b --rates 3 \
    --slo ttft_p99=200ms -q -o "$R/sweep.json" >/dev/null 2>&1
check "sweep result made" "[ -s '$R/sweep.json' ]"
ok "report of a sweep and a result" "$ATR" report "$R/sim.json" "$R/sweep.json" -o "$R/sweep.html"
check "sweep: html.parser-clean, Sweeps right after Results" \
    "python3 '$R/facts.py' '$R/sweep.html' >'$R/sf.json' && python3 -c \"
import json; s = json.load(open('$R/sf.json'))['sections']
assert s == ['overview', 'results', 'sweeps', 'appendix'], s\""
check "sweep: a table row per run" "python3 -c \"
import json, re
runs = len(json.load(open('$R/sweep.json'))['runs'])
page = open('$R/sweep.html').read()
sec = page[page.index('<section id=\\\"sweeps\\\"'):]
sec = sec[:sec.index('</section>')]
rows = len(re.findall(r'<tr data-run=', sec))
assert runs >= 5 and rows == runs, (rows, runs)\""
check "sweep: SVG with the dashed SLO line and its label" \
    "grep -q '<line class=\"slo\"' '$R/sweep.html' && grep -q '>SLO</text>' '$R/sweep.html'"
check "sweep: the goodput point labelled" "grep -q '>goodput</text>' '$R/sweep.html'"
check "sweep: axes with units" \
    "grep -Eq 'TTFT p99 \(ms(, log scale)?\)</text>' '$R/sweep.html' && grep -q 'achieved request throughput (requests/s)</text>' '$R/sweep.html'"
check "sweep: in the data block and the appendix" \
    "grep -q '\"sweeps\":\[{\"format\":\"atr-sweep/1\"' '$R/sweep.html' && grep -q 'sweep.json</td><td>sweep</td>' '$R/sweep.html'"
check "no Sweeps section without a sweep input" "! grep -q 'id=\"sweeps\"' '$R/all.html'"
ok "report of a hostile sweep" "$ATR" report "$DATA/report/sweep-hostile.json" -o "$R/sweep-hostile.html"
check "hostile sweep: no raw <img or <i>, </script> only twice" \
    "! grep -q '<img' '$R/sweep-hostile.html' && ! grep -q '<i>p' '$R/sweep-hostile.html' && [ \$(grep -o '</script' '$R/sweep-hostile.html' | wc -l) -eq 2 ]"
check "hostile sweep: kind shown as escaped text" \
    "grep -q '<td>&lt;img src=z onerror=alert(2)&gt;</td>' '$R/sweep-hostile.html'"
fails "malformed sweep (runs not an array)" 1 'sweep-bad-runs.json: malformed atr-sweep/1 result: "runs" is not an array' \
    "$ATR" report "$DATA/atr/small.ndjson" "$DATA/report/sweep-bad-runs.json" -o "$R/bad.html"
absent "malformed sweep leaves no report" "$R/bad.html"

# ---- a tool replay folder (tests/data/report/replay: a recorded
# `atr replay tools --config none,static-toolcall --mem-max 128M` run of
# tests/data/replay/steps.ndjson, its summary.json given "limits") ----
ok "report of a replay folder" "$ATR" report "$DATA/report/replay" -o "$R/replay.html"
check "replay: a Tool replay section, after Sweeps and before Bench in the nav" \
    "grep -q '<section id=\"replay\"><h2>Tool replay</h2>' '$R/replay.html' && grep -q 'href=\"#replay\">Tool replay</a>' '$R/replay.html'"
check "replay: a row per config" \
    "python3 -c \"
import re
t = open('$R/replay.html').read()
sec = t[t.index('<section id=\\\"replay\\\"'):]
sec = sec[:sec.index('</section>')]
assert re.findall(r'<tr data-config><td>([^<]*)</td>', sec) == ['none', 'static-toolcall'], sec
assert sec.count('<svg class=\\\"chart replay-chart\\\"') == 2
\""
check "replay: the OOM kill counted in the table" \
    "grep -q '<tr data-config><td>static-toolcall</td><td class=\"n\">2</td><td class=\"n\">9</td><td class=\"n\">7</td><td class=\"n\">2</td><td class=\"n\">2</td><td class=\"n\">1</td><td class=\"n\">1</td><td class=\"n\">0</td><td class=\"n\">95</td>' '$R/replay.html'"
check "replay: the chart's dashed memory.max line at 128 MiB" \
    "grep -q '<line class=\"mem-max\" .*<title>memory.max = 128.0 MiB</title>' '$R/replay.html' && grep -q '>memory.max</text>' '$R/replay.html'"
check "replay: the OOM-killed step marked, and a legend" \
    "grep -q '<rect class=\"mem-oom\" x=\"[0-9.]*\" y=\"[0-9.]*\" width=\"[0-9.]*\" height=\"[0-9.]*\"><title>replay/limits step 1: peak 128.0 MiB, 1 OOM kill' '$R/replay.html' && grep -q 'class=\"oom-mark\"' '$R/replay.html' && grep -q '>OOM kill</text>' '$R/replay.html'"
check "replay: axes with units" \
    "grep -q '>peak memory (MiB)</text>' '$R/replay.html' && grep -q '>step, in the order run</text>' '$R/replay.html'"
check "replay: in the appendix and the data block" \
    "grep -q 'replay</td><td>tool replay</td>' '$R/replay.html' && grep -q '\"replays\":\[{\"backend\"' '$R/replay.html'"
check "no Tool replay section without a replay folder" "! grep -q 'id=\"replay\"' '$R/all.html'"
mkdir -p "$R/replay-hostile"
sed 's/static-toolcall/<b>st<\/b>/; s/replay\/limits/<img src=q>/' "$DATA/report/replay/summary.json" \
    >"$R/replay-hostile/summary.json"
sed 's/static-toolcall/<b>st<\/b>/; s/replay\/limits/<img src=q>/' "$DATA/report/replay/metrics.jsonl" \
    >"$R/replay-hostile/metrics.jsonl"
ok "report of a hostile replay folder" "$ATR" report "$R/replay-hostile" -o "$R/replay-hostile.html"
check "hostile replay: config and trace id as escaped text" \
    "! grep -q '<img' '$R/replay-hostile.html' && ! grep -q '<b>st' '$R/replay-hostile.html' && grep -q '<tr data-config><td>&lt;b&gt;st&lt;/b&gt;</td>' '$R/replay-hostile.html' && grep -q '<title>&lt;img src=q&gt; step 1' '$R/replay-hostile.html'"
# Latency and reaction-time CDFs (tests/data/report/replay-dynamic: a
# recorded static-toolcall,dynamic run whose controller adjusted 8 times).
ok "report of a dynamic replay folder" "$ATR" report "$DATA/report/replay-dynamic" -o "$R/replay-dyn.html"
check "replay: CDF data per config, n = the steps that ran and the reactions recorded" "python3 -c \"
import json, re
t = open('$R/replay-dyn.html').read()
d = json.loads(re.search(r'<script type=\\\"application/json\\\" id=\\\"data\\\">(.*?)</script>', t, re.S).group(1))
(f,) = d['replay_cdfs']
assert [c['config'] for c in f] == ['static-toolcall', 'dynamic'], f
assert [c['latency']['n'] for c in f] == [7, 7], f
assert f[0]['reaction'] is None and f[1]['reaction']['n'] == 8, f
assert f[0]['reaction_bound'] is None and 'reaction_bound' in f[1], f   # null where it equals reaction
us = 0; v = []
for g in f[1]['reaction']['v']:
    us += g; v.append(us)
assert v == sorted(v) and v[0] > 0, v
assert t.count('<figure class=\\\"replay-cdf\\\" data-kind=\\\"latency\\\">') == 1 and t.count('data-kind=\\\"reaction\\\"') == 1
\""
check "replay: no reaction figure when no controller adjusted" \
    "! grep -q 'data-kind=\"reaction\"' '$R/replay.html' && grep -q 'data-kind=\"latency\"' '$R/replay.html'"
# Memory over time and tenant slowdown bars (`atr experiment`): the step
# whose usage rose highest is drawn; a timeline whose arrays differ in
# length, or hold strings, nulls and negatives, never breaks the path.
mkdir -p "$R/replay-tl"
cat >"$R/replay-tl/summary.json" <<'JSON'
{"limits":{"mem_high_bytes":33554432,"mem_max_bytes":67108864},"configs":[{"config":"dynamic-psi-poll"},{"config":"dynamic-ebpf"}],
 "tenant_slowdown":[{"config":"dynamic-psi-poll","trace_id":"<img src=v>","victim":true,"slowdown_p50":1.5,"slowdown_p99":2},
  {"config":"dynamic-ebpf","trace_id":"<img src=v>","victim":true,"slowdown_p50":"x","slowdown_p99":null},
  {"config":"dynamic-psi-poll","trace_id":"noisy","victim":false,"slowdown_p50":1.1,"slowdown_p99":1.2}]}
JSON
cat >"$R/replay-tl/metrics.jsonl" <<'JSON'
{"config":"dynamic-psi-poll","trace_id":"<b>t</b>","step_id":0,"latency_ms":5,"ctl_timeline":{"t_ms":[0,10,20,30],"usage_mb":[0,20,null,40],"target_mb":[32,32,48,48]}}
{"config":"dynamic-psi-poll","trace_id":"small","step_id":1,"latency_ms":5,"ctl_timeline":{"t_ms":[0,10],"usage_mb":[0,2],"target_mb":[32,32]}}
{"config":"dynamic-ebpf","trace_id":"e","step_id":0,"latency_ms":5,"ctl_timeline":{"t_ms":[0,10,20],"usage_mb":[0,1],"target_mb":[32,32,32]}}
{"config":"dynamic-ebpf","trace_id":"e","step_id":1,"latency_ms":5,"ctl_timeline":{"t_ms":[0,"a",-5,9],"usage_mb":[1,"b",-1,3],"target_mb":[32,{},48,48]}}
{"config":"dynamic-ebpf","trace_id":"e","step_id":2,"latency_ms":5,"ctl_timeline":{"t_ms":[0,"a"],"usage_mb":[90,90],"target_mb":[32,32]}}
JSON
ok "report of a replay folder with timelines" "$ATR" report "$R/replay-tl" -o "$R/replay-tl.html"
check "timelines: one chart per configuration, the highest-rising drawable step, escaped" \
    "grep -q '>e step 1, the step' '$R/replay-tl.html' && [ \$(grep -o 'class=\"chart memline-chart\"' '$R/replay-tl.html' | wc -l) -eq 2 ] && grep -q '&lt;b&gt;t&lt;/b&gt; step 0, the step' '$R/replay-tl.html' && ! grep -q '<b>t' '$R/replay-tl.html'"
check "timelines: the target a step line, the ceiling, no NaN in a path" \
    "grep -q 'class=\"mem-target\" d=\"M' '$R/replay-tl.html' && grep -q '<title>ceiling = 64.0 MiB' '$R/replay-tl.html' && ! grep -Eqi 'd=\"[^\"]*nan' '$R/replay-tl.html'"
check "tenant slowdown: bars with escaped ids, a bad value left out" \
    "grep -q 'class=\"chart slowdown-chart\"' '$R/replay-tl.html' && grep -q '&lt;img src=v&gt; (the victim)' '$R/replay-tl.html' && ! grep -q '<img' '$R/replay-tl.html' && [ \$(grep -o 'x its solo run</title></rect>' '$R/replay-tl.html' | wc -l) -eq 2 ]"
mkdir -p "$R/replay-nosummary"
cp "$DATA/report/replay/metrics.jsonl" "$R/replay-nosummary/"
fails "a folder without summary.json is read as bench results" 1 \
    'metrics.jsonl:1:1: expected a benchmark result, found a tool replay step' "$ATR" report "$R/replay-nosummary" -o "$R/bad.html"
absent "the failed bench read leaves no report" "$R/bad.html"

# ---- bad input: one error line, exit 1, no file left ----
fails "none of the kinds" 1 "none.txt: not a trace file, result JSON or bench folder" \
    "$ATR" report "$DATA/report/none.txt" -o "$R/bad.html"
absent "none of the kinds leaves no report" "$R/bad.html"
fails "missing input" 1 "nope.ndjson: no such file or folder" \
    "$ATR" report "$DATA/atr/small.ndjson" "$R/nope.ndjson" -o "$R/bad.html"
absent "missing input leaves no report" "$R/bad.html"
fails "no -o" 2 "missing -o" "$ATR" report "$DATA/atr/small.ndjson"
fails "no input" 2 "missing INPUT" "$ATR" report -o "$R/bad.html"
absent "usage error leaves no report" "$R/bad.html"

# ---- the overview's headline: the best policy against naive ----
"$ATR" gen -q --kind swe --traces 6 --seed 5 -o "$R/hl.ndjson"
"$ATR" sim run -q "$R/hl.ndjson" --profile h100/llama-3.1-8b --rate 0.2 \
    --policy naive,prefix-cache --save-result "$R/hl.json" >/dev/null 2>&1
ok "report headline" "$ATR" report "$R"/hl.naive.json "$R"/hl.prefix-cache.json -o "$R/hl.html"
check "headline names the policy, the cut and both means" \
    "grep -Eq '<p class=\"headline\">prefix-cache (cuts|raises) mean end-to-end latency [0-9]+ % against naive on these traces \([0-9.]+ ms &rarr; [0-9.]+ ms\)\.</p>' '$R/hl.html'"
# Results of two targets (a slow one first, a fast one after): the
# headline compares within the first naive's target, never one target's
# naive with another's policy; the Policies table has both, as atr compare.
"$ATR" sim run -q "$R/hl.ndjson" --profile h200/llama-3.2-1b --rate 0.2 --replicas 2 \
    --policy naive,prefix-route --save-result "$R/fast.json" >/dev/null 2>&1
ok "report of two targets" "$ATR" report "$R"/hl.naive.json "$R"/hl.prefix-cache.json \
    "$R"/fast.naive.json "$R"/fast.prefix-route.json -o "$R/hl2.html"
check "two targets: the headline stays on the first naive's target" \
    "grep -Eq '<p class=\"headline\">prefix-cache (cuts|raises) mean' '$R/hl2.html'"
check "two targets: a Policies table with each target's rows and cuts" "python3 -c \"
import re
h = open('$R/hl2.html').read()
t = h[h.index('id=\\\"policies\\\"'):]
t = t[:t.index('</table>')]
rows = [re.findall(r'<td[^>]*>([^<]*)</td>', r) for r in t.split('<tr>')[2:]]
assert [(r[0], r[1]) for r in rows] == [('sim:h100/llama-3.1-8b', 'naive'),
    ('sim:h100/llama-3.1-8b', 'prefix-cache'), ('sim:h200/llama-3.2-1b x2', 'naive'),
    ('sim:h200/llama-3.2-1b x2', 'prefix-route')], rows
assert rows[0][7] == 'n/a' and float(rows[1][8]) > 0 and float(rows[3][6]) > 50, rows
\""
ok "report without naive" "$ATR" report "$R"/hl.prefix-cache.json -o "$R/hl1.html"
check "no Policies table without a naive beside another policy" \
    "[ -s '$R/hl1.html' ] && ! grep -q 'id=\"policies\"' '$R/hl1.html'"
check "no headline without naive" "! grep -q 'class=\"headline\"' '$R/hl1.html'"

# ---- per-request files (--requests-out): the Results' exact percentile
# tables, CDF data capped at 1000 points, the headline and token race ----
"$ATR" sim run "$R/hl.ndjson" --profile h100/llama-3.1-8b --rate 0.2 --policy naive,prefix-cache \
    --save-result "$R/pr.json" --requests-out "$R/pr.ndjson" >"$R/pr.out" 2>/dev/null
check "per-request files made" "[ -s '$R/pr.naive.ndjson' ] && [ -s '$R/pr.prefix-cache.ndjson' ]"
ok "report of two per-request files" "$ATR" report "$R/pr.naive.ndjson" "$R/pr.prefix-cache.ndjson" \
    -o "$R/pr.html"
cat >"$R/pr.py" <<'EOF3'
# The report's per-request tables against what `atr sim run` printed (TTFT,
# TPOT, ITL: mean, median, P99) and saved (E2EL), per policy; the data's
# CDFs capped at 1000 points with n counting every value.
import json, re, sys
page, printed, saved = sys.argv[1], sys.argv[2], sys.argv[3:]
t = open(page, encoding="utf-8").read()
sec = t[t.index('<section id="results">'):]
sec = sec[:sec.index('</section>')]
def table(metric):
    m = re.search(r'<table class="req-pct" data-metric="%s">.*?</table>' % metric, sec, re.S)
    rows = {}
    for r in re.findall(r'<tr data-set="\d+">(.*?)</tr>', m.group(0)):
        c = re.findall(r'<td[^>]*>(?:<span[^>]*></span>)?([^<]*)</td>', r)
        rows[c[0]] = dict(zip(["n", "mean", "p50", "p90", "p99", "max"], c[1:]))
    return rows
blocks = open(printed).read().split("Serving Benchmark Result")[1:]
assert len(blocks) == 2, len(blocks)
checked = 0
for pol, block in zip(["naive", "prefix-cache"], blocks):
    for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL")):
        row = table(metric)[pol]
        for stat, col in (("Mean", "mean"), ("Median", "p50"), ("P99", "p99")):
            want = float(re.search(r"%s %s \(ms\):\s+([0-9.]+)" % (stat, name), block).group(1))
            assert abs(float(row[col]) - want) <= 0.011, (pol, metric, stat, row[col], want)
            checked += 1
for f in saved:
    r = json.load(open(f))
    row = table("e2el")[r["atr"]["policy"]]
    for key, col in (("mean_e2el_ms", "mean"), ("median_e2el_ms", "p50"), ("p99_e2el_ms", "p99")):
        assert abs(float(row[col]) - r[key]) <= 0.006, (key, row[col], r[key])
        checked += 1
    assert int(row["n"]) == r["completed"], (row, r["completed"])
d = t[t.index('<script type="application/json" id="data">') + 42:]
data = json.loads(d[:d.index('</script>')])
sets = data["requests"]
assert [s["label"] for s in sets] == ["naive", "prefix-cache"], sets
for s in sets:
    for m in ("ttft", "tpot", "itl", "e2el"):
        c = s["cdf"][m]
        assert len(c["v"]) == min(c["n"], 1000) and min(c["v"]) >= 0, (m, c["n"], len(c["v"]))
    assert s["cdf"]["itl"]["n"] > 1000, s["cdf"]["itl"]["n"]   # so the cap is exercised
    assert len(s["roll"]["t"]) == len(s["roll"]["p50"]) == len(s["roll"]["p99"]) > 0
race = data["race"]
assert race["a"] == "naive" and race["b"] == "prefix-cache" and 0 < len(race["lanes"]) <= 8, race
for l in race["lanes"]:
    assert len(l["a"]) == len(l["b"]) == l["out"], (l["id"], len(l["a"]), l["out"])
print("ok", checked)
EOF3
check "per-request: tables equal sim run's printed and saved figures, CDFs capped at 1000 points" \
    "python3 '$R/pr.py' '$R/pr.html' '$R/pr.out' '$R/pr.naive.json' '$R/pr.prefix-cache.json'"
check "per-request: a Results section without result files, in the nav" \
    "python3 '$R/facts.py' '$R/pr.html' >'$R/prf.json' && python3 -c \"
import json; s = json.load(open('$R/prf.json'))['sections']
assert s == ['overview', 'results', 'appendix'], s\" && grep -q 'href=\"#results\">Results</a>' '$R/pr.html'"
check "per-request: the headline from per-request files alone" \
    "grep -Eq '<p class=\"headline\">prefix-cache (cuts|raises) mean end-to-end latency [0-9]+ % against naive' '$R/pr.html'"
check "per-request: the token race with its table, captioned with its cap" \
    "grep -q '<div id=\"race\"><h3>Token race: naive against prefix-cache</h3>' '$R/pr.html' && grep -q 'at most 2000 tokens each are animated' '$R/pr.html'"
check "per-request: in the appendix" "grep -q 'pr.naive.ndjson</td><td>per-request</td>' '$R/pr.html'"
# The same records with integer microseconds (_us) read the same.
python3 - "$R/pr.naive.ndjson" "$R/us.naive.ndjson" <<'EOF3'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        o = json.loads(line)
        for k in ("ttft", "tpot", "e2el", "send", "start"):
            src = k + ("_s" if k in ("send", "start") else "_ms")
            v = o.pop(src)
            o[k + "_us"] = None if v is None else round(v * (1e6 if src.endswith("_s") else 1e3))
        o["itl_us"] = [round(x * 1000) for x in o.pop("itl_ms")]
        out.write(json.dumps(o) + "\n")
EOF3
ok "report of integer-microsecond records" "$ATR" report "$R/us.naive.ndjson" -o "$R/us.html"
check "microsecond records: the same TTFT p50 and p99 to 0.01 ms" "python3 -c \"
import re
def row(p):
    t = open(p).read()
    m = re.search(r'data-metric=\\\"ttft\\\">.*?<tr data-set=\\\"0\\\">(.*?)</tr>', t, re.S)
    return [float(x) for x in re.findall(r'<td class=\\\"n\\\">([0-9.]+)</td>', m.group(1))]
a, b = row('$R/pr.html'), row('$R/us.html')
assert all(abs(x - y) <= 0.011 for x, y in zip(a, b)), (a, b)\""
# Hostile policy names and file names are text.
python3 - "$R/pr.naive.ndjson" "$R/pr.prefix-cache.ndjson" "$R" <<'EOF3'
import json, sys
for src, pol, dst in ((sys.argv[1], "naive", "h<i>1.naive.ndjson"),
                      (sys.argv[2], "</script><img src=x onerror=alert(7)> \"q\" \u202e", "h<i>2.best.ndjson")):
    with open(sys.argv[3] + "/" + dst, "w") as out:
        for line in open(src):
            o = json.loads(line)
            o["policy"] = pol
            o["trace_id"] = "<b>" + o.get("trace_id", "")
            out.write(json.dumps(o) + "\n")
EOF3
ok "report of hostile per-request files" "$ATR" report "$R/h<i>1.naive.ndjson" "$R/h<i>2.best.ndjson" \
    -o "$R/pr-hostile.html"
check "hostile per-request: no raw markup, </script> only twice" \
    "! grep -q '<img' '$R/pr-hostile.html' && ! grep -q '<i>' '$R/pr-hostile.html' && ! grep -q '<b>' '$R/pr-hostile.html' && [ \$(grep -o '</script' '$R/pr-hostile.html' | wc -l) -eq 2 ]"
check "hostile per-request: the policy shown as escaped text in the race and tables" \
    "grep -q 'Token race: naive against &lt;/script&gt;&lt;img src=x onerror=alert(7)&gt; &quot;q&quot;' '$R/pr-hostile.html' && grep -q '<td>&lt;b&gt;gen-swe' '$R/pr-hostile.html'"
# A malformed record fails the whole report at its line.
{ head -n 1 "$R/pr.naive.ndjson"; printf '{"success": true, "ttft_ms": 1,\n'; } >"$R/pr-bad.ndjson"
fails "malformed per-request line" 1 'pr-bad.ndjson:2:[0-9]+: ' \
    "$ATR" report "$R/pr-bad.ndjson" -o "$R/bad.html"
absent "malformed per-request file leaves no report" "$R/bad.html"
{ head -n 1 "$R/pr.naive.ndjson"; printf '[1, 2]\n'; } >"$R/pr-bad2.ndjson"
fails "a line that is not a record" 1 'pr-bad2.ndjson:2:1: expected a request record' \
    "$ATR" report "$R/pr-bad2.ndjson" -o "$R/bad.html"
absent "a bad record leaves no report" "$R/bad.html"
