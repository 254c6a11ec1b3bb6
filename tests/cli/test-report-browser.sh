# test-report-browser.sh - `atr report` in a real browser: Debian's
# headless Chromium driven by playwright-core (tests/node/report-check.mjs),
# offline: no console or page error, no network request attempted (every
# one is refused and counted), every section shown, the explorer's rows
# equal the trace count and its filter narrows them, a row opens the step
# timeline; a hostile trace's markup never runs (no dialog). Screenshots
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
    ok report-browser-build "$ATR" report -o "$RB/all.html" "$RB/swe.ndjson" "$DATA/atr/small.ndjson" \
        "$RB/sim.json" "$DATA/bench/claude_code"
    ok report-browser-open node "$ROOT/tests/node/report-check.mjs" "$RB/all.html" "$RB/all" small.ndjson
    J=$RB/all/check.json
    check report-browser-no-errors "python3 -c \"import json; c=json.load(open('$J')); assert not c['consoleErrors'] and not c['pageErrors'], c\""
    check report-browser-no-network "python3 -c \"import json; c=json.load(open('$J')); assert c['requests'] == [], c['requests']\""
    check report-browser-ready "python3 -c \"import json; c=json.load(open('$J')); assert c['ready'], c\""
    check report-browser-sections "python3 -c \"import json; c=json.load(open('$J')); assert c['sections'] == ['overview', 'traces', 'shapes', 'results', 'bench', 'appendix'], c['sections']\""
    check report-browser-rows "python3 -c \"import json; c=json.load(open('$J')); assert c['traceCount'] == 31 and c['traceRowsShown'] == 31, c\""
    check report-browser-filter "python3 -c \"import json; c=json.load(open('$J')); assert 0 < c['traceRowsFiltered'] < 31, c\""
    check report-browser-timeline "python3 -c \"import json; c=json.load(open('$J')); assert c['timelineOpened'], c\""
    check report-browser-screenshots "[ -s '$RB/all/section-traces.png' ] && [ -s '$RB/all/section-results.png' ]"
    ok report-browser-hostile-build "$ATR" report -o "$RB/hostile.html" "$DATA/report/hostile.ndjson"
    ok report-browser-hostile-open node "$ROOT/tests/node/report-check.mjs" "$RB/hostile.html" "$RB/hostile"
    check report-browser-hostile-inert "python3 -c \"import json; c=json.load(open('$RB/hostile/check.json')); assert c['dialogs'] == [] and not c['injected'] and c['requests'] == [] and not c['pageErrors'], c\""
    check report-browser-hostile-timeline "python3 -c \"import json; c=json.load(open('$RB/hostile/check.json')); assert c['timelineOpened'], c\""
    [ -z "${ATR_KEEP_ARTIFACTS:-}" ] || cp -r "$RB" "$ATR_KEEP_ARTIFACTS/"
fi
