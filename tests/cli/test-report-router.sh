# test-report-router.sh - `atr report`'s Router lab: a router model and a
# `router eval --json` file recognised by content; the section's tables
# without JS (model, picks per trace equal to `atr router decide --trace`,
# the confusion matrix); malformed inputs; then in headless Chromium
# (tests/node/report-router.mjs, offline): for three feature sets the lab's
# pick, probabilities and logits equal `atr router decide`'s to the bit,
# its per-turn picks of every trace equal atr's, no console error, no
# network request. The section's screenshot stays in $T/report-router
# (copied to $ATR_KEEP_ARTIFACTS when set).
RR=$T/report-router
mkdir -p "$RR/shot"
M=$DATA/router/model.json
"$ATR" gen -q --kind swe --traces 4 --seed 11 -o "$RR/swe.ndjson"
ok report-router-eval "$ATR" router eval "$RR/swe.ndjson" --model "$M" --all --json "$RR/eval.json"
ok report-router-build "$ATR" report "$RR/swe.ndjson" "$M" "$RR/eval.json" -o "$RR/r.html"
check report-router-section "grep -q '<section id=\"router\"><h2>Router lab</h2>' '$RR/r.html' && grep -q 'href=\"#router\">Router lab' '$RR/r.html'"
check report-router-appendix "grep -q '<td>router model</td>' '$RR/r.html' && grep -q '<td>router evaluation</td>' '$RR/r.html'"
"$ATR" router decide --model "$M" --trace "$RR/swe.ndjson" >"$RR/decide-trace.ndjson"
check report-router-picks-table "python3 - '$RR' <<'EOF'
import json, re, sys, collections
d = sys.argv[1]
html = open(d + '/r.html').read()
table = html[html.index('<table id=\"router-picks\">'):]
table = table[:table.index('</table>')]
rows = [re.findall(r'<td[^>]*>([^<]*)</td>', r) for r in table.split('<tr>')[2:]]
per = collections.defaultdict(collections.Counter)
for l in open(d + '/decide-trace.ndjson'):
    o = json.loads(l)
    per[o['trace']][o['pick']] += 1
cands = ['naive', 'prefix-cache', 'compaction', 'max-tokens']
assert len(rows) == 4, rows
for r in rows:
    assert [int(x) for x in r[3:]] == [per[r[1]][c] for c in cands], (r, per[r[1]])
EOF"
check report-router-confusion "python3 - '$RR' <<'EOF'
import json, re, sys
d = sys.argv[1]
e = json.load(open(d + '/eval.json'))
html = open(d + '/r.html').read()
t = html[html.index('<table class=\"confusion\">'):]
t = t[:t.index('</table>')]
cells = [[int(x) for x in re.findall(r'<td class=\"n[^\"]*\">(\d+)</td>', r)] for r in t.split('<tr>')[2:]]
assert cells == e['confusion'], (cells, e['confusion'])
EOF"
# Issue 26: the features the model ignores (zero first-layer weights) are
# marked, and the single-feature rule stands beside the accuracy.
check report-router-weightless "python3 - '$RR' '$M' <<'EOF'
import json, re, sys
d, m = sys.argv[1], json.load(open(sys.argv[2]))
html = open(d + '/r.html').read()
row = html[html.index('<td id=\"router-weights\">'):]
row = row[:row.index('</td>')]
L = m['layers'][0]
zero = [f for j, f in enumerate(m['features']) if all(L['weights'][o * L['in'] + j] == 0 for o in range(L['out']))]
assert len(zero) == 11, zero
assert re.findall(r'<code class=\"weightless\">([a-z_]+)</code>', row) == zero, row
assert re.findall(r'<code class=\"weighted\">([a-z_]+)</code>', row) == ['log_input_tokens'], row
assert row.startswith('<td id=\"router-weights\">1 of 12 with weight'), row
EOF"
check report-router-rule "python3 - '$RR' <<'EOF'
import json, re, sys
d = sys.argv[1]
e = json.load(open(d + '/eval.json'))
html = open(d + '/r.html').read()
got = re.search(r'best single-feature rule <span class=\"router-rule\">([0-9.]+)</span> %: ([a-z_]+) &le; [0-9.]+: ([a-z-]+), else ([a-z-]+)\)', html)
assert got, 'no rule beside the accuracy'
assert float(got.group(1)) == round(100 * e['rule_correct'] / e['requests'], 1), (got.group(1), e)
assert got.groups()[1:] == (e['rule']['feature'], e['rule']['below'], e['rule']['above']), got.groups()
EOF"
"$ATR" gen -q --kind chat --traces 3 --seed 11 -o "$RR/chat.ndjson"
ok report-router-by-source-eval "$ATR" router eval --by-source "$RR/swe.ndjson" "$RR/chat.ndjson" --profile rtx3090/qwen3-4b-awq --epochs 10 --json "$RR/by-source.json"
ok report-router-by-source "$ATR" report "$RR/by-source.json" -o "$RR/bs.html"
check report-router-folds-table "python3 - '$RR' <<'EOF'
import json, re, sys
d = sys.argv[1]
e = json.load(open(d + '/by-source.json'))
html = open(d + '/bs.html').read()
t = html[html.index('<table class=\"router-folds\">'):]
t = t[:t.index('</table>')]
rows = [re.findall(r'<td[^>]*>([^<]*)</td>', r) for r in t.split('<tr>')[2:]]
assert [r[0] for r in rows] == [f['source'] for f in e['folds']] == ['gen-swe', 'gen-chat'], rows
assert [int(r[2]) for r in rows] == [f['requests'] for f in e['folds']], rows
assert [float(r[4]) for r in rows] == [round(100 * f['rule_correct'] / f['requests'], 1) for f in e['folds']], rows
EOF"
python3 -c "import json, sys; e = json.load(open(sys.argv[1])); e['candidates'][0] = '<img src=x onerror=alert(1)></script>'; e['scope'] = '<b>'; json.dump(e, open(sys.argv[2], 'w'))" \
    "$RR/eval.json" "$RR/hostile-eval.json"
ok report-router-hostile "$ATR" report "$RR/hostile-eval.json" "$M" -o "$RR/h.html"
check report-router-hostile-escaped "! grep -q '<img\\|<b>' '$RR/h.html' && grep -q '&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;' '$RR/h.html'"
printf '{"format": "atr-router-eval/1", "candidates": ["naive", "compaction"], "confusion": [[1, 2], [3]]}\n' >"$RR/bad-eval.json"
fails report-router-bad-eval 1 "bad-eval.json: malformed atr-router-eval/1: \"confusion\" is not 2 rows of 2 counts" \
    "$ATR" report "$RR/swe.ndjson" "$RR/bad-eval.json" -o "$RR/bad.html"
absent report-router-bad-no-output "$RR/bad.html"
printf '{"format": "atr-router/1", "objective": "e2el",\n "candidates": ["naive", "bogus"]}\n' >"$RR/bad-model.json"
fails report-router-bad-model 1 "bad-model.json:2:26: expected a policy name" \
    "$ATR" report "$RR/swe.ndjson" "$RR/bad-model.json" -o "$RR/bad.html"
fails report-router-two-models 1 "a second router model" "$ATR" report "$M" "$M" -o "$RR/bad.html"

if [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM:-}" ]; then
    CURRENT="report-router: chromium missing (scripts/deps.sh installs it)"; fail "no /usr/bin/chromium"
elif [ ! -f "$ROOT/tests/node/node_modules/playwright-core/package.json" ]; then
    CURRENT="report-router: tests/node/node_modules missing"; fail "run 'npm ci' in $ROOT/tests/node"
else
    cat >"$RR/sets.json" <<'EOF'
[{"log_input_tokens": 9.1, "log_turn": 2.5, "prefix_reuse": 0.9, "log_new_tokens": 6.2, "tool_shell": 1,
  "log_think_s": 0.4, "log_since_last_s": 0.4, "log_prev_output_tokens": 4.8, "log_mean_output_tokens": 5.0},
 {"log_input_tokens": 11.3, "log_turn": 3.9, "prefix_reuse": 0.97, "log_new_tokens": 7.0, "tool_editor": 1,
  "log_think_s": 1.2, "log_since_last_s": 1.25, "log_prev_output_tokens": 6.1, "log_mean_output_tokens": 5.5},
 {"log_input_tokens": 7.5, "tool_none": 1, "log_new_tokens": 7.5}]
EOF
    python3 -c "import json, sys; [print(','.join(f'{k}={v!r}' for k, v in s.items())) for s in json.load(open(sys.argv[1]))]" \
        "$RR/sets.json" >"$RR/sets.txt"
    ok report-router-cli sh -c "'$ATR' router decide --model '$M' <'$RR/sets.txt' >'$RR/cli.ndjson'"
    ok report-router-open node "$ROOT/tests/node/report-router.mjs" "$RR/r.html" "$RR/shot" "$RR/sets.json"
    J=$RR/shot/router.json
    check report-router-no-errors "python3 -c \"import json; c=json.load(open('$J')); assert c['ready'] and not c['consoleErrors'] and not c['pageErrors'], c\""
    check report-router-no-network "python3 -c \"import json; c=json.load(open('$J')); assert c['requests'] == [], c['requests']\""
    check report-router-sliders-weightless "python3 -c \"import json; c=json.load(open('$J')); assert c['weightless'] == ['router-f-' + f for f in json.load(open('$M'))['features'][1:]], c['weightless']\""
    check report-router-equals-cli "python3 - '$RR' <<'EOF'
import json, sys
d = sys.argv[1]
cli = [json.loads(l) for l in open(d + '/cli.ndjson')]
js = json.load(open(d + '/shot/router.json'))['decisions']
assert len(cli) == len(js) == 3, (cli, js)
assert len({c['pick'] for c in cli}) >= 2, 'the sets should not all pick the same candidate'
for c, j in zip(cli, js):
    assert c['pick'] == j['pick'] and j['shown'] == 'picks ' + c['pick'], (c, j)
    assert c['scores'] == j['scores'] and c['logits'] == j['logits'], (c, j)
EOF"
    check report-router-turns-equal-cli "python3 - '$RR' <<'EOF'
import json, sys
d = sys.argv[1]
cli = [json.loads(l)['pick'] for l in open(d + '/decide-trace.ndjson')]
tr = json.load(open(d + '/shot/router.json'))['traces']
assert len(tr) == 4 and all(t['mismatch'] == 0 for t in tr), tr
assert [p for t in tr for p in t['picks']] == cli
EOF"
    check report-router-screenshot "head -c 8 '$RR/shot/section-router.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
fi

# --png DIR: one PNG per chart (a <figure> of the report) through headless
# Chromium spawned by atr itself; a missing Chromium is one error and
# leaves neither the report nor a PNG.
if [ -x /usr/bin/chromium ] || [ -n "${CHROMIUM:-}" ]; then
    "$ATR" sim run -q "$RR/swe.ndjson" --profile rtx3090/qwen3-4b-awq --rate 0.05 --policy naive,prefix-cache \
        --save-result "$RR/res.json" >/dev/null 2>&1
    ok report-png "$ATR" report "$RR/swe.ndjson" "$RR/res.naive.json" "$RR/res.prefix-cache.json" -o "$RR/p.html" --png "$RR/png"
    check report-png-says "grep -Eq '^wrote [0-9]+ PNG files to ' '$T/out'"
    check report-png-count "n=\$(grep -o '<figure[ >]' '$RR/p.html' | wc -l); [ \"\$n\" -ge 5 ] && [ \$(ls '$RR/png' | wc -l) -eq \"\$n\" ] && [ \$(ls -A '$RR/png' | wc -l) -eq \"\$n\" ]"
    check report-png-magic "for f in '$RR'/png/*.png; do head -c 8 \"\$f\" | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a' || exit 1; done"
    check report-png-names "ls '$RR/png' | head -1 | grep -Eq '^01-[a-z]+\\.png$'"
fi
fails report-png-no-chromium 1 "no-chromium: Chromium not found \\(install chromium, or set CHROMIUM" \
    env CHROMIUM="$RR/no-chromium" "$ATR" report "$RR/swe.ndjson" -o "$RR/nc.html" --png "$RR/png-nc"
absent report-png-no-chromium-no-report "$RR/nc.html"
[ -z "${ATR_KEEP_ARTIFACTS:-}" ] || cp -r "$RR" "$ATR_KEEP_ARTIFACTS/"
