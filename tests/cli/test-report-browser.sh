# test-report-browser.sh - `atr report` in a real browser: Debian's
# headless Chromium driven by playwright-core (tests/node/report-check.mjs),
# offline: no console or page error, no network request attempted (every
# one is refused and counted), every section shown, the explorer's rows
# equal the trace count and its filter narrows them, a row opens the step
# timeline; the Results' per-request CDFs have a curve per per-request
# file, the log toggle and hover work, the Overview's token race plays and
# its clock advances, pause holds it; a hostile trace's and hostile policy
# names' markup never runs (no dialog); the demo's report has every section,
# its tool replay table fits a 1400 px window without a word broken, its
# latency race's legend names p50 (solid) and p99 (dashed) in colours of at
# least 3:1 on white, and a peak-memory chart keeps its scale to the data
# under a limit far above it (tests/node/report-layout.mjs). Screenshots
# of each section stay in $T/report-browser (kept by run.sh's caller when
# ATR_KEEP_ARTIFACTS names a folder).

RB=$T/report-browser
mkdir -p "$RB/all" "$RB/hostile"
if [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM:-}" ]; then
    CURRENT="report-browser: chromium missing (scripts/deps.sh installs it)"; fail "no /usr/bin/chromium"
elif [ ! -f "$ROOT/tests/node/node_modules/playwright-core/package.json" ]; then
    CURRENT="report-browser: tests/node/node_modules missing"; fail "run 'npm ci' in $ROOT/tests/node"
else
    "$ATR" sim run -q "$DATA/atr/small.ndjson" --profile h100/llama-3.1-8b --save-result "$RB/sim.json" >/dev/null 2>&1
    "$ATR" gen --kind swe --traces 30 --seed 3 -o "$RB/swe.ndjson" 2>/dev/null
    "$ATR" sim run -q "$RB/swe.ndjson" --profile h100/llama-3.1-8b --rate 0.5 --policy naive,prefix-cache \
        --requests-out "$RB/req.ndjson" >/dev/null 2>&1
    ok report-browser-build "$ATR" report -o "$RB/all.html" "$RB/swe.ndjson" "$DATA/atr/small.ndjson" \
        "$RB/sim.json" "$DATA/bench/claude_code" "$RB/req.naive.ndjson" "$RB/req.prefix-cache.ndjson" \
        "$DATA/report/replay-dynamic"
    ok report-browser-open node "$ROOT/tests/node/report-check.mjs" "$RB/all.html" "$RB/all" small.ndjson
    J=$RB/all/check.json
    check report-browser-no-errors "python3 -c \"import json; c=json.load(open('$J')); assert not c['consoleErrors'] and not c['pageErrors'], c\""
    check report-browser-no-network "python3 -c \"import json; c=json.load(open('$J')); assert c['requests'] == [], c['requests']\""
    check report-browser-ready "python3 -c \"import json; c=json.load(open('$J')); assert c['ready'], c\""
    # reaction: each configuration's curve, and psi-poll's upper bound dashed
    check report-browser-replay-cdfs "python3 -c \"import json; c=json.load(open('$J')); assert c['replayCurves'] == {'latency': 2, 'reaction': 2}, c['replayCurves']\""
    check report-browser-sections "python3 -c \"import json; c=json.load(open('$J')); assert c['sections'] == ['overview', 'traces', 'shapes', 'results', 'replay', 'bench', 'appendix'], c['sections']\""
    check report-browser-rows "python3 -c \"import json; c=json.load(open('$J')); assert c['traceCount'] == 31 and c['traceRowsShown'] == 31, c\""
    check report-browser-filter "python3 -c \"import json; c=json.load(open('$J')); assert 0 < c['traceRowsFiltered'] < 31, c\""
    check report-browser-timeline "python3 -c \"import json; c=json.load(open('$J')); assert c['timelineOpened'], c\""
    check report-browser-cdf-curves "python3 -c \"import json; c=json.load(open('$J')); assert c['requestSets'] == 2 and c['cdfCurves'] == {'ttft': 2, 'tpot': 2, 'itl': 2, 'e2el': 2} and c['rollCurves'] == 4, c\""
    check report-browser-cdf-log-toggle "python3 -c \"import json; c=json.load(open('$J')); a, b = c['cdfAxisBefore'], c['cdfAxisAfter']; assert a.startswith('TTFT (ms') and ('log scale' in a) != ('log scale' in b), (a, b)\""
    check report-browser-cdf-hover "python3 -c \"import json; c=json.load(open('$J')); h = c['cdfHover']; assert 'naive: ' in h and 'prefix-cache: ' in h and ' ms' in h, h\""
    check report-browser-race-plays "python3 -c \"import json; r=json.load(open('$J'))['race']; assert r['lanes'] == 2 and r['playingAtLoad'] and r['t1'] > r['t0'] >= 0 and r['pauseHolds'] and r['barsDrawn'] > 0, r\""
    check report-browser-race-reduced-motion "python3 -c \"import json; r=json.load(open('$J'))['race']['reducedMotion']; assert r == {'playing': '0', 't': 0}, r\""
    check report-browser-screenshots "[ -s '$RB/all/section-traces.png' ] && [ -s '$RB/all/section-results.png' ] && [ -s '$RB/all/section-overview.png' ]"
    python3 - "$RB" <<'EOF'
import json, sys
d = sys.argv[1]
for pol, name, src in (("naive", "naive", "naive"),
                       ('<img src=x onerror="window.__atr_injected=true"></script>', "best", "prefix-cache")):
    with open(f"{d}/hostile.{name}.ndjson", "w") as out:
        for line in open(f"{d}/req.{src}.ndjson"):
            o = json.loads(line)
            o["policy"] = pol
            o["trace_id"] = '<img src=y onerror="window.__atr_injected=true">' + o.get("trace_id", "")
            out.write(json.dumps(o) + "\n")
EOF
    ok report-browser-hostile-build "$ATR" report -o "$RB/hostile.html" "$DATA/report/hostile.ndjson" \
        "$RB/hostile.naive.ndjson" "$RB/hostile.best.ndjson"
    ok report-browser-hostile-open node "$ROOT/tests/node/report-check.mjs" "$RB/hostile.html" "$RB/hostile"
    check report-browser-hostile-inert "python3 -c \"import json; c=json.load(open('$RB/hostile/check.json')); assert c['dialogs'] == [] and not c['injected'] and c['requests'] == [] and not c['pageErrors'], c\""
    check report-browser-hostile-race "python3 -c \"import json; c=json.load(open('$RB/hostile/check.json')); assert c['race']['lanes'] == 2 and c['cdfCurves']['ttft'] == 2, c\""
    check report-browser-hostile-timeline "python3 -c \"import json; c=json.load(open('$RB/hostile/check.json')); assert c['timelineOpened'], c\""
    # The demo's own report (scripts/demo.sh into this test's folder): every
    # section from the demo's outputs, measured at a 1400 px window; the
    # screenshots (layout-*.png) are for a person to look at.
    mkdir -p "$RB/demo-shots"
    ok report-browser-demo env ATR_DEMO_OUT="$RB/demo" sh "$ROOT/scripts/demo.sh" "$ATR"
    ok report-browser-demo-open node "$ROOT/tests/node/report-layout.mjs" "$RB/demo/report.html" "$RB/demo-shots"
    L=$RB/demo-shots/layout.json
    check report-browser-demo-sections "python3 -c \"import json; c=json.load(open('$L')); assert c['sections'] == ['overview', 'traces', 'shapes', 'results', 'sweeps', 'replay', 'router', 'bench', 'appendix'] and not c['pageErrors'], c\""
    # The Policies table; with llama-server built, the real engine's
    # two-replica target in it (the demo's step on llama-server).
    check report-browser-demo-policies "grep -q 'id=\"policies\"' '$RB/demo/report.html' && { ! sh '$ROOT/scripts/llama.sh' --path >/dev/null 2>&1 || grep -q '<td>http://127.0.0.1:[0-9]*,http://127.0.0.1:[0-9]*</td><td>prefix-route</td>' '$RB/demo/report.html'; }"
    check report-browser-demo-races "grep -q 'id=\"race\"' '$RB/demo/report.html' && python3 -c \"import json; c=json.load(open('$L'))['roll']; assert len(c) == 1 and len(c[0]['curveContrast']) == 4, c\""
    check report-browser-demo-replay-fits "python3 -c \"import json; c=json.load(open('$L')); t=c['replayTables']; assert t and all(x['scrollWidth'] <= 1400 and x['right'] <= 1400 and not x['broken'] for x in t) and c['pageScrollWidth'] <= 1400, (t, c['pageScrollWidth'])\""
    check report-browser-latency-race-legend "python3 -c \"import json; r=json.load(open('$L'))['roll'][0]; l=r['legend']; assert l[:2] == ['naive p50', 'naive p99'] and [x.split()[-1] for x in l] == ['p50', 'p99', 'p50', 'p99'] and l[2].split()[0] == l[3].split()[0] != 'naive' and r['keysDashedAsLabelled'], r\""
    check report-browser-latency-race-contrast "python3 -c \"import json; r=json.load(open('$L'))['roll'][0]; assert min(r['curveContrast']) >= 3, r\""
    # A memory limit far above the steps (8 GiB over a 128 MiB peak): the
    # bars keep the chart's height and the limit is named, not drawn.
    mkdir -p "$RB/replay-far" "$RB/far-shots"
    cp "$DATA/report/replay/metrics.jsonl" "$RB/replay-far/"
    sed 's/"mem_max_bytes":134217728/"mem_max_bytes":8589934592/' "$DATA/report/replay/summary.json" \
        >"$RB/replay-far/summary.json"
    ok report-browser-far-build "$ATR" report "$RB/replay-far" -o "$RB/replay-far.html"
    ok report-browser-far-open node "$ROOT/tests/node/report-layout.mjs" "$RB/replay-far.html" "$RB/far-shots"
    check report-browser-mem-scaled-to-data "python3 -c \"import json; m=json.load(open('$RB/far-shots/layout.json'))['memCharts']; assert len(m) == 2 and all(x['fill'] >= 0.6 for x in m), m\""
    check report-browser-mem-far-limit-named "python3 -c \"import json; m=json.load(open('$RB/far-shots/layout.json'))['memCharts']; assert m[1]['offScale'] == ['\u2191 memory.max 8192.0 MiB: above the scale'] and m[0]['offScale'] == [], m\""
    [ -z "${ATR_KEEP_ARTIFACTS:-}" ] || cp -r "$RB" "$ATR_KEEP_ARTIFACTS/"
fi
