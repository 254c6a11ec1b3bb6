# test-browser.sh - browser steps replayed for real: Playwright trace zips
# driven in headless Chromium over its DevTools pipe, the recorded network
# served back, per-step figures that add up, bad traces, a page that
# allocates until memory.max kills the browser, Ctrl-C and SIGKILL leaving
# nothing behind. Needs Chromium (Debian's `chromium`, scripts/deps.sh):
# without it the browser tests are skipped, saying so.

B=$T/browser; mkdir -p "$B" "$B/wd"
python3 "$DATA/browser/make-traces.py" "$B"
# field FILE STEP KEY [CONFIG]: one member of one metrics line (Python repr).
cat >"$B/field" <<'PY'
#!/usr/bin/env python3
import json, sys
f, step, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conf = sys.argv[4] if len(sys.argv) > 4 else None
for l in open(f):
    d = json.loads(l)
    if d["step_id"] == step and (conf is None or d["config"] == conf):
        print(d.get(key)); break
PY
chmod +x "$B/field"
# adds_up FILE: per config and trace, the browser steps' cpu_ms add up to
# the browser group's total at the last step, and every figure is there.
cat >"$B/adds_up" <<'PY'
#!/usr/bin/env python3
import collections, json, sys
runs = collections.defaultdict(list)
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["tool"] == "browser" and "skipped" not in d:
        runs[(d["config"], d["trace_id"])].append(d)
assert runs, "no browser steps"
for key, steps in runs.items():
    if key[0] == "none":
        assert all(s["cpu_ms"] is None for s in steps), key
        continue
    total = steps[-1]["browser_cpu_total_ms"]
    got = sum(s["cpu_ms"] for s in steps)
    assert total > 0 and abs(got - total) <= 0.002 * len(steps), (key, got, total)
    assert all(s["max_rss_mb"] > 10 and s["rss_scope"] == "cgroup" for s in steps), key
PY
chmod +x "$B/adds_up"
# all_ok NAME FILE COUNT: COUNT metrics lines, every step ok or noop; a
# failure names the steps that were not, with their errors.
all_ok() {
    CURRENT=$1
    if out=$(python3 - "$2" "$3" 2>&1 <<'PY'
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])]
bad = [(x["config"], x["step_id"], x.get("action"), x.get("error")) for x in d
       if x.get("outcome") not in ("ok", "noop")]
assert len(d) == int(sys.argv[2]) and not bad, (len(d), bad)
PY
    ); then pass; else fail "$(printf '%s' "$out" | tail -n 1 | tail -c 600)"; fi
}

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/lib/chromium/chromium ] && [ -z "${ATR_CHROMIUM:-}" ]; then
    echo "skip: browser tests need chromium (sh scripts/deps.sh)"
else

# The bundled real traces replay end to end: v4 with two *.trace members
# (library + test runner) and its resources, v6 with a recording whose
# resources/ the archive lacks (every request then gets a counted 404).
ok "browser: v4 trace (trace-1.37) replays" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 20 \
    "$REAL/playwright/trace-1.37.zip" -o "$B/v4"
check "browser: v4 six library steps, all ok or noop" "python3 -c \"import json; d=[json.loads(l) for l in open('$B/v4/metrics.jsonl')]; assert len(d)==6 and all(x['outcome'] in ('ok','noop') for x in d), d\""
check "browser: v4 goto served both recorded responses" "[ \"\$('$B/field' '$B/v4/metrics.jsonl' 3 net_served)\" = 2 ] && [ \"\$('$B/field' '$B/v4/metrics.jsonl' 3 net_missing)\" = 0 ]"
check "browser: v4 page-load time from the page" "python3 -c \"import json; d=[json.loads(l) for l in open('$B/v4/metrics.jsonl')][3]; assert d['page_load_ms'] > 0, d\""
ok "browser: v6 trace (test-trace1) replays" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 20 \
    "$REAL/playwright/test-trace1.zip" -o "$B/v6"
check "browser: v6 goto: recorded but no resources/ -> counted as missing" "python3 -c \"import json; d=[json.loads(l) for l in open('$B/v6/metrics.jsonl')][1]; assert d['action']=='page.goto' and d['outcome']=='ok' and d['net_missing']>=1 and d['net_served']==0, d\""

# A form flow over a recorded site, under every configuration: fill,
# selectOption, press Enter, text= / role= / label selectors, a link to a
# second page, screenshot, wheel. Figures add up per browser.
ok "browser: shop flow, all configurations" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 20 \
    -c none,static-env,static-toolcall,dynamic --mem-high 512M "$B/shop.zip" -o "$B/shop"
all_ok "browser: every shop step ok in every configuration" "$B/shop/metrics.jsonl" 48
check "browser: the second page came from the recording" "[ \"\$('$B/field' '$B/shop/metrics.jsonl' 9 net_served static-env)\" = 1 ] || [ \"\$('$B/field' '$B/shop/metrics.jsonl' 8 net_served static-env)\" = 1 ]"
check "browser: screenshot taken" "python3 -c \"import json; d=[json.loads(l) for l in open('$B/shop/metrics.jsonl')][7]; assert d['action']=='page.screenshot' and d['screenshot_bytes']>1000, d\""
check "browser: one browser per trace, started at the first step" "[ \"\$('$B/field' '$B/shop/metrics.jsonl' 0 browser_started)\" = True ] && [ \"\$('$B/field' '$B/shop/metrics.jsonl' 11 browser_starts)\" = 1 ]"
check "browser: per-step cpu adds up to the browser's total" "'$B/adds_up' '$B/shop/metrics.jsonl'"
check "browser: dynamic controller ran on the browser's group" "[ \"\$('$B/field' '$B/shop/metrics.jsonl' 1 ctl_adjustments dynamic)\" != None ]"
ok "browser: without atr's sandbox" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 20 --sandbox none "$B/shop.zip" -o "$B/shop-nosb"
all_ok "browser: without sandbox, all ok" "$B/shop-nosb/metrics.jsonl" 12
check "browser: no work or profile directory left" "[ -z \"\$(ls '$B/wd')\" ]"

# Every trace format version the reader accepts (v4-v8; v8 names the
# call "title"), and library calls split over two *.trace members.
for v in shop-v4 shop-v5 shop-v7 shop-v8 split; do
    ok "browser: $v replays" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 20 "$B/$v.zip" -o "$B/$v"
    all_ok "browser: $v all 12 steps ok" "$B/$v/metrics.jsonl" 12
    check "browser: $v steps in order" "python3 -c \"import json; assert [json.loads(l)['step_id'] for l in open('$B/$v/metrics.jsonl')]==list(range(12))\""
done

# A selector that matches nothing: that step fails at its deadline, an
# unsupported engine fails at once, and the replay goes on.
ok "browser: no-match trace replays" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 2 "$B/nomatch.zip" -o "$B/nm"
check "browser: no match -> error with the timeout" "[ \"\$('$B/field' '$B/nm/metrics.jsonl' 2 outcome)\" = no_match ] && '$B/field' '$B/nm/metrics.jsonl' 2 error | grep -q \"selector '#no-such-button' matched nothing within 2000 ms\" && [ \"\$('$B/field' '$B/nm/metrics.jsonl' 2 timed_out)\" = True ]"
check "browser: unsupported engine -> clear error" "'$B/field' '$B/nm/metrics.jsonl' 3 error | grep -q 'unsupported selector engine _vue='"
check "browser: replay goes on after them" "[ \"\$('$B/field' '$B/nm/metrics.jsonl' 4 outcome)\" = ok ]"
check "browser: summary counts the two failures" "python3 -c \"import json; s=json.load(open('$B/nm/summary.json')); c=s['configs'][0]; assert c['failed_steps']==2, c\""

# Converted trace + --browser-resources: the same flow from NDJSON.
ok "browser: convert keeps params" "$ATR" convert -q --keep-content "$B/shop.zip" -o "$B/shop.ndjson"
ok "browser: converted trace with --browser-resources" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 20 \
    --browser-resources "$B/shop.zip" "$B/shop.ndjson" -o "$B/conv"
all_ok "browser: converted replay all ok" "$B/conv/metrics.jsonl" 12
fails "browser: --browser-resources not a zip" 1 "SOURCE.txt: expected a Playwright trace zip" \
    "$ATR" replay tools -q --workdir "$B/wd" --browser-resources "$REAL/playwright/SOURCE.txt" "$B/shop.ndjson" -o "$B/conv2"

# Restoring the recorded DOM (docs/browser.md): restore.zip is a real trace
# recorded with snapshots (tests/data/browser/SOURCE.txt): page.setContent,
# then locator actions. Converted without content, its setContent has no
# HTML: each action's "before" snapshot, read from the zip, is set as the
# page first. Step 7 waits for an element a script added after a click:
# its snapshot lacks it, so it ends at its scaled timeout (10x 300 ms,
# raised to the 5 s floor), not at 120 s.
RS=$B/restore; mkdir -p "$RS"
ok "restore: convert keeps snapshot names, no content" "$ATR" convert -q "$DATA/browser/restore.zip" -o "$RS/r.ndjson"
check "restore: converted steps name their snapshot, the page is not in it" "grep -q '\"snapshot\":\"before@cwnp@13\"' '$RS/r.ndjson' && ! grep -q 'Sign up' '$RS/r.ndjson'"
ok "restore: replay with the zip's snapshots" "$ATR" replay tools --workdir "$B/wd" \
    --browser-resources "$DATA/browser/restore.zip" "$RS/r.ndjson" -o "$RS/a"
check "restore: summary line says what was and was not restored" "grep -q 'browser DOM: [0-9]* live, [1-9][0-9]* restored; not restored: 0 snapshot missing, 1 selector not in its snapshot, 0 resources missing' '$T/out'"
cat >"$RS/steps.py" <<'PY'
#!/usr/bin/env python3
# steps.py METRICS CHECKS: CHECKS is a Python expression over d (the lines by step_id).
import json, sys
d = {x["step_id"]: x for x in map(json.loads, open(sys.argv[1]))}
assert eval(sys.argv[2]), {k: (v.get("outcome"), v.get("restore"), v.get("not_restored"), v.get("error")) for k, v in d.items()}
PY
check "restore: the first locator action restores its snapshot, stylesheet served from the recording" "python3 '$RS/steps.py' '$RS/a/metrics.jsonl' \"d[3]['restore']=='restored' and d[3]['outcome']=='ok' and d[3]['net_served']>=1 and d[3]['restore_resources_missing']==0 and 'not_restored' not in d[3]\""
check "restore: fill, label, check, role click, h1 click all ok on the restored DOM" "python3 '$RS/steps.py' '$RS/a/metrics.jsonl' \"all(d[i]['outcome']=='ok' and d[i]['restore'] in ('live','restored') for i in (3,4,5,6,8))\""
check "restore: the selector its snapshot lacks ends at its scaled timeout" "python3 '$RS/steps.py' '$RS/a/metrics.jsonl' \"d[7]['outcome']=='no_match' and d[7]['timed_out'] and d[7]['timeout_ms']==5000 and 'within 5000 ms' in d[7]['error'] and d[7]['restore']=='selector_missing' and d[7]['not_restored']==['selector #done: not in the restored snapshot']\""
check "restore: every step's timeout from its recorded duration" "python3 '$RS/steps.py' '$RS/a/metrics.jsonl' \"all(x['timeout_ms']==5000 for x in d.values())\""
check "restore: summary.json counts restores" "python3 -c \"import json; r=json.load(open('$RS/a/summary.json'))['configs'][0]['browser_restore']; assert r['restored']>=1 and r['selector_missing']==1 and r['snapshot_missing']==0 and r['resources_missing']==0 and r['live']+r['restored']==5, r\""
ok "restore: --merge counts the same restores" "$ATR" replay tools -q --merge "$RS/a" -o "$RS/m"
check "restore: merged summary equal" "python3 -c \"import json; a, m = (json.load(open(p))['configs'][0]['browser_restore'] for p in ('$RS/a/summary.json', '$RS/m/summary.json')); assert a == m, (a, m)\""
# Damaged copies of the real trace: step 3's snapshot renamed away (its
# place in the frame's list kept, so later references still resolve) and
# the stylesheet's resources/ blob dropped.
python3 - "$DATA/browser/restore.zip" "$RS/damaged.zip" <<'PY'
import sys, zipfile
src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED)
for n in src.namelist():
    if n.startswith("resources/") and n.endswith(".css"):
        continue
    b = src.read(n)
    if n.endswith(".trace"):
        b = b.replace(b'"callId":"cwnp@13","phase":"before"', b'"callId":"cwnp@13","phase":"lost"')
    dst.writestr(n, b)
dst.close()
PY
ok "restore: replay of a damaged copy" "$ATR" replay tools -q --workdir "$B/wd" --browser-resources "$RS/damaged.zip" "$RS/r.ndjson" -o "$RS/d"
check "restore: a missing snapshot is named, its step fails at its timeout" "python3 '$RS/steps.py' '$RS/d/metrics.jsonl' \"d[3]['restore']=='snapshot_missing' and d[3]['outcome']=='no_match' and d[3]['not_restored']==['snapshot before@cwnp@13: not in the trace']\""
check "restore: a missing resource is named, the step still runs" "python3 '$RS/steps.py' '$RS/d/metrics.jsonl' \"d[4]['restore']=='restored' and d[4]['outcome']=='ok' and d[4]['restore_resources_missing']==1 and d[4]['not_restored']==['resource https://app.test/style.css: not in the recording']\""
check "restore: damaged summary" "python3 -c \"import json; r=json.load(open('$RS/d/summary.json'))['configs'][0]['browser_restore']; assert r['snapshot_missing']==1 and r['resources_missing']==2 and r['selector_missing']==1, r\""
# Without the zip there is nothing to restore from: said per step.
ok "restore: --restore never" "$ATR" replay tools -q --workdir "$B/wd" --restore never --browser-timeout 1 \
    --browser-resources "$DATA/browser/restore.zip" "$RS/r.ndjson" -o "$RS/n"
check "restore: never restores, so the blank page matches nothing" "python3 '$RS/steps.py' '$RS/n/metrics.jsonl' \"d[3]['outcome']=='no_match' and 'restore' not in d[3] and d[3]['timeout_ms']==1000\""
fails "restore: bad --restore" 2 "--restore wants auto, always or never" \
    "$ATR" replay tools --restore sometimes "$RS/r.ndjson" -o "$RS/x"
fails "restore: bad --browser-timeout" 2 "--browser-timeout wants seconds 1..86400" \
    "$ATR" replay tools --browser-timeout 0 "$RS/r.ndjson" -o "$RS/x"

# Bad archives: a *.trace cut mid-line, a zip with its resources missing.
fails "browser: truncated *.trace" 1 "cut.zip: 0-trace.trace:[0-9]+:[0-9]+: [a-z]" \
    "$ATR" replay tools -q --workdir "$B/wd" "$B/cut.zip" -o "$B/cut"
ok "browser: missing resources replays" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 20 "$B/missing.zip" -o "$B/miss"
check "browser: missing resources counted" "[ \"\$('$B/field' '$B/miss/metrics.jsonl' 1 net_missing)\" -ge 1 ] && [ \"\$('$B/field' '$B/miss/metrics.jsonl' 1 outcome)\" = ok ]"

# A page that allocates until memory.max: the OOM killer ends the step
# (crashed, oom_kills counted), the next step gets a fresh browser.
ok "browser: oom trace replays" "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 30 --mem-max 400M "$B/oom.zip" -o "$B/oom"
check "browser: oom step crashed with an OOM kill" "[ \"\$('$B/field' '$B/oom/metrics.jsonl' 2 outcome)\" = crashed ] && [ \"\$('$B/field' '$B/oom/metrics.jsonl' 2 browser_crashed)\" = True ] && [ \"\$('$B/field' '$B/oom/metrics.jsonl' 2 oom_kills)\" -ge 1 ]"
check "browser: next step on a fresh browser" "[ \"\$('$B/field' '$B/oom/metrics.jsonl' 3 browser_started)\" = True ] && [ \"\$('$B/field' '$B/oom/metrics.jsonl' 3 browser_starts)\" = 2 ] && [ \"\$('$B/field' '$B/oom/metrics.jsonl' 4 outcome)\" = ok ]"
check "browser: oom figures still add up" "'$B/adds_up' '$B/oom/metrics.jsonl'"
check "browser: summary counts the oom" "python3 -c \"import json; s=json.load(open('$B/oom/summary.json')); c=s['configs'][0]; assert c['failed_steps']==1, c\""
check "browser: oom run left no profile" "[ -z \"\$(ls '$B/wd')\" ]"

# The browser killed by a signal mid-step: that step ends crashed with the
# signal's exit code, the next runs on a fresh browser.
setsid "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 40 "$B/crash.zip" -o "$B/crash" >/dev/null 2>&1 &
pid=$!
deadline=$(( $(date +%s) + 30 ))
while [ "$(cat "$B"/crash.tmp.*/metrics.jsonl 2>/dev/null | wc -l)" -lt 2 ] && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.05
done
# No need to wait until step 2 has begun: a browser killed between steps
# is found dead by the next one, which then crashes the same way.
# The browser's main process: among this atr's own descendants (never a
# machine-wide search), the one with its profile and no --type= (children
# of Chromium have one).
descendants() { for c in $(ps -o pid= --ppid "$1"); do echo "$c"; descendants "$c"; done; }
bpid=$(descendants "$pid" | while read -r p; do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -- "--user-data-dir=$B/wd/atr-browser-$pid-" |
        grep -qv -- '--type=' && echo "$p"; done | head -n 1)
CURRENT="browser: found the browser to kill"; [ -n "$bpid" ] && pass || fail "no browser of atr $pid"
[ -n "$bpid" ] && kill -KILL "$bpid"
wait "$pid"
CURRENT="browser: replay goes on after the browser is killed"; [ $? -eq 0 ] && pass || fail "atr failed"
check "browser: killed step crashed, exit 137" "[ \"\$('$B/field' '$B/crash/metrics.jsonl' 2 outcome)\" = crashed ] && [ \"\$('$B/field' '$B/crash/metrics.jsonl' 2 exit_code)\" = 137 ]"
check "browser: next step on a fresh browser" "[ \"\$('$B/field' '$B/crash/metrics.jsonl' 3 browser_starts)\" = 2 ] && [ \"\$('$B/field' '$B/crash/metrics.jsonl' 3 outcome)\" = ok ]"
check "browser: nothing left after the crash" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $pid; ls '$B/wd' | grep 'atr-browser-$pid-')\" ]"

# Ctrl-C and SIGKILL of atr while the browser waits: nothing of the run is
# left (processes of its session, its cgroups, its browser profiles).
for sig in INT KILL; do
    setsid "$ATR" replay tools -q --workdir "$B/wd" --browser-timeout 60 "$B/hang.zip" -o "$B/hang-$sig" >/dev/null 2>&1 &
    pid=$!
    deadline=$(( $(date +%s) + 30 ))
    while [ "$(cat "$B/hang-$sig".tmp.*/metrics.jsonl 2>/dev/null | wc -l)" -lt 2 ] && [ "$(date +%s)" -lt "$deadline" ]; do
        sleep 0.05
    done
    CURRENT="browser: $sig: a browser was running"
    if sh "$DATA/replay/leftovers.sh" "$pid" | grep -q chromium; then pass; else fail "no chromium under atr $pid"; fi
    kill -"$sig" "$pid"
    { wait "$pid"; } 2>/dev/null
    st=$?
    [ "$sig" = INT ] && { CURRENT="browser: ctrl-c exit status"; [ "$st" -eq 130 ] && pass || fail "exit $st"; }
    deadline=$(( $(date +%s) + 20 ))
    while [ -n "$(sh "$DATA/replay/leftovers.sh" "$pid"; ls "$B/wd" | grep "atr-browser-$pid-")" ] && [ "$(date +%s)" -lt "$deadline" ]; do
        sleep 0.1
    done
    check "browser: $sig leaves no chromium, cgroup or profile" "[ -z \"\$(sh '$DATA/replay/leftovers.sh' $pid; ls '$B/wd' | grep 'atr-browser-$pid-')\" ]"
done
rm -rf "$B/wd"/atr-work-*     # SIGKILL leaves the bash work directory for the next run's sweep

fi

# The multi-tenant experiment (docs/browser.md): browser, bash-heavy and
# noisy tenants together and alone, from one command on the bundled data.
if command -v chromium >/dev/null 2>&1 || [ -x /usr/lib/chromium/chromium ] || [ -n "${ATR_CHROMIUM:-}" ]; then
    ok "browser: tenants experiment" sh "$ROOT/bench/browser/tenants.sh" "$ATR" "$B/ten"
    check "browser: tenants report page loads, p95 and sd alone vs together" "python3 -c \"
import json; s=json.load(open('$B/ten/summary.json')); a, b, c = s['tenants']
assert a['page_loads'] == 10 and a['page_load_mean_ms_alone'] > 0 and a['page_load_degradation'] > 0, a
assert b['latency_sd_ms_alone'] >= 0 and b['latency_sd_ms_shared'] >= 0 and b['page_loads'] == 0 and b['page_load_degradation'] is None, b
assert all(t['latency_p95_ms_shared'] >= t['latency_p50_ms_shared'] for t in (a, b, c)), s['tenants']\""
fi
