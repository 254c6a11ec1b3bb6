# test-report-scale.sh - `atr report` past ATR_HTML_STATIC_ROWS (1000)
# traces: the HTML holds the first 1000 rows and says so, the data holds
# every trace, the deflated timelines block decodes to one step array per
# trace, and in headless Chromium the explorer pages through all of them
# and a row's timeline opens (inflated on first use).

RS=$T/report-scale
mkdir -p "$RS"
"$ATR" gen -q --kind swe --traces 1200 --seed 5 -o "$RS/w.ndjson" 2>/dev/null
ok report-scale-build "$ATR" report -o "$RS/r.html" "$RS/w.ndjson"
cat >"$RS/facts.py" <<'PY'
import base64, json, re, sys, zlib
text = open(sys.argv[1], encoding="utf-8").read()
body = re.search(r'<table id="trace-table">.*?</table>', text, re.S).group(0)
data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1))
m = re.search(r'<script type="application/octet-stream" id="timelines" data-bytes="(\d+)">([A-Za-z0-9+/=]*)</script>', text)
raw = zlib.decompress(base64.b64decode(m.group(2)))
tl = json.loads(raw)
steps = [0] * len(tl["tl"])
for i, f in enumerate(tl["tl"]):
    k = 0
    while k < len(f):
        steps[i] += 1
        k += 5 if f[k] == 0 else 4
print(json.dumps({"rows": body.count("<tr data-i="), "note": "only the first 1000 rows" in text,
                  "traces": len(data["traces"]), "bytes_ok": int(m.group(1)) == len(raw),
                  "steps_match": steps == [t["steps"] for t in data["traces"]],
                  "labels": len(tl["labels"])}))
PY
check report-scale-static-rows "python3 '$RS/facts.py' '$RS/r.html' >'$RS/f.json' && python3 -c \"
import json; f = json.load(open('$RS/f.json'))
assert f['rows'] == 1000 and f['note'] and f['traces'] == 1200, f\""
check report-scale-timelines-decode "python3 -c \"
import json; f = json.load(open('$RS/f.json'))
assert f['bytes_ok'] and f['steps_match'] and f['labels'] > 0, f\""
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ] && [ -f "$ROOT/tests/node/node_modules/playwright-core/package.json" ]; then
    ok report-scale-browser sh -c "node '$ROOT/tests/node/report-load.mjs' '$RS/r.html' 1 >'$RS/load.json'"
    check report-scale-explorer-pages "python3 -c \"
import json; l = json.loads(open('$RS/load.json').readline())
assert l['rows'] == 'rows 1-200 of 1200 (page 1 of 6)' and l['timelineMs'] is not None, l\""
else
    CURRENT="report-scale: chromium or tests/node/node_modules missing"; fail "scripts/deps.sh installs both"
fi

# The data appendix names the machine that wrote the report.
check report-machine-facts "python3 -c \"
import json, os, re
text = open('$RS/r.html', encoding='utf-8').read()
assert 'The machine that wrote this report' in text
d = json.loads(re.search(r'<script type=\\\"application/json\\\" id=\\\"data\\\">(.*?)</script>', text, re.S).group(1))
m = d['machine']
assert m['cpus'] == len(os.sched_getaffinity(0)) and m['mem_bytes'] > 0 and m['kernel'].startswith('Linux'), m
assert m['cgroup'] in ('v1', 'hybrid', 'v2', 'none'), m
\""
