# test-dashboard.sh - `atr dashboard`, black-box with curl and in headless
# Chromium (tests/node/dashboard-check.mjs): usage errors; a folder of
# finished, interrupted and stopped runs shows each as such, with
# percentiles equal to numpy's (linear) over the records; hostile input
# (a path with ../, symbolic links out of the folder, a file named with
# markup, a missing or wrong token off loopback, a POST, one event stream
# past the cap); and live: a replay through `atr proxy` recording into a
# watched folder, seen growing in the run list (curl, then the browser,
# without reload), checked against the final files, and the no-JS view;
# the replay's own --requests-out followed through FILE.partial (total,
# ETA, its CDFs redrawn live in the browser); bench folders by their
# state file; a replay SIGKILLed (stopped) and one SIGTERMed (interrupted).
# Screenshots stay in $T/dashboard/shots; with ATR_DASHBOARD_SHOTS=DIR
# they are also copied there (docs/img for the docs).

DB=$T/dashboard
mkdir -p "$DB/w1/runs" "$DB/outside" "$DB/shots"
DB_PIDS=

# db_start NAME ARGS... : starts a dashboard; sets DB_PID, DB_URL ("" when
# it never printed its URL).
db_start() {
    n=$1; shift
    : >"$DB/$n.out"
    "$ATR" dashboard --port 0 "$@" >"$DB/$n.out" 2>"$DB/$n.err" &
    DB_PID=$!
    DB_PIDS="$DB_PIDS $DB_PID"
    DB_URL=
    db_i=0
    while [ $db_i -lt 300 ] && [ -z "$DB_URL" ] && kill -0 $DB_PID 2>/dev/null; do
        DB_URL=$(sed -n 's|^atr dashboard: \(http://[^ ]*\)$|\1|p' "$DB/$n.out")
        [ -n "$DB_URL" ] || sleep 0.05
        db_i=$((db_i + 1))
    done
}

# bg_start NAME CMD... : a server that prints "listening on URL"; sets BG_URL.
bg_start() {
    n=$1; shift
    : >"$DB/$n.out"
    "$@" >"$DB/$n.out" 2>"$DB/$n.err" &
    BG_PID=$!
    DB_PIDS="$DB_PIDS $BG_PID"
    BG_URL=
    db_i=0
    while [ $db_i -lt 300 ] && [ -z "$BG_URL" ] && kill -0 $BG_PID 2>/dev/null; do
        BG_URL=$(sed -n 's|^atr [a-z ]*: listening on \(http://.*\)$|\1|p' "$DB/$n.out")
        [ -n "$BG_URL" ] || sleep 0.05
        db_i=$((db_i + 1))
    done
}

CODE="curl -s -o /dev/null -w %{http_code}"

# numpy's percentile (method "linear"), written out: checks the dashboard's
# figures against the definition, not against atr's own code.
cat >"$DB/pct.py" <<'PY'
import json, math, sys
def pct(v, p):
    v = sorted(v)
    if not v: return None
    h = (len(v) - 1) * (p / 100.0)   # numpy: q = p / 100 first
    lo = math.floor(h); g = h - lo
    a = v[lo]; b = v[min(lo + 1, len(v) - 1)]
    return a + (b - a) * g if g < 0.5 else b - (b - a) * (1 - g)
def figures(path):
    ttft, lat, ok, n = [], [], 0, 0
    for line in open(path):
        if not line.strip(): continue
        o = json.loads(line); n += 1
        if "success" in o:
            good, t, e = o["success"], o.get("ttft_ms"), o.get("e2el_ms")
        else:
            m = o["meta"]; good = m["status"] == 200 and m.get("error") is None
            t, e = m.get("ttft_ms"), o["steps"][0].get("dur_ms")
        if good:
            ok += 1
            if t is not None: ttft.append(float(t))
            if e is not None: lat.append(float(e))
    return {"done": n, "ok": ok, "failed": n - ok,
            "ttft_ms": {k: pct(ttft, p) for k, p in (("p50", 50), ("p90", 90), ("p99", 99))},
            "latency_ms": {k: pct(lat, p) for k, p in (("p50", 50), ("p90", 90), ("p99", 99))}}
PY
# same RUNS_JSON RUN FILE : the run's figures in the JSON equal the file's, exactly.
same() {
    python3 - "$@" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[4])
from pct import figures
runs = {r["run"]: r for r in json.load(open(sys.argv[1]))["runs"]}
r, want = runs[sys.argv[2]], figures(sys.argv[3])
got = {k: r[k] for k in want}
assert got == want, (got, want)
PY
}

# ---- usage ----
fails dashboard-no-dir 2 "missing DIR" "$ATR" dashboard
fails dashboard-missing-dir 1 "^atr: $DB/nope: no such folder$" "$ATR" dashboard "$DB/nope"
: >"$DB/plain-file"
fails dashboard-bad-proxy-url 1 "^atr: --proxy wants http://HOST:PORT, not 'ftp://x'$" "$ATR" dashboard "$DB" --proxy ftp://x
fails dashboard-file-not-dir 1 "^atr: $DB/plain-file: not a folder$" "$ATR" dashboard "$DB/plain-file"

# ---- a folder of finished, interrupted and stopped runs, and hostile names ----
"$ATR" gen -q --kind requests --traces 40 --seed 5 -o "$DB/reqs.ndjson"
"$ATR" sim run -q "$DB/reqs.ndjson" --profile h100/llama-3.1-8b --rate 20 \
    --save-result "$DB/w1/runs/done.json" --requests-out "$DB/w1/runs/done.ndjson" >/dev/null 2>&1
cp "$DB/w1/runs/done.ndjson" "$DB/w1/runs/cut.ndjson"
python3 -c "
import json; r = json.load(open('$DB/w1/runs/done.json')); r['atr']['incomplete'] = True
json.dump(r, open('$DB/w1/runs/cut.json', 'w'))"
head -n 7 "$DB/w1/runs/done.ndjson" >"$DB/w1/runs/left.ndjson"
sed 's/gen-requests-5-/SECRET-OUTSIDE-/' "$DB/w1/runs/done.ndjson" >"$DB/outside/secret.ndjson"
ln -s "$DB/outside/secret.ndjson" "$DB/w1/runs/linked.ndjson"
ln -s "$DB/outside" "$DB/w1/linked-dir"
cp "$DB/w1/runs/left.ndjson" "$DB/w1/runs/<img src=x onerror=alert(1)>.ndjson"
# bench folders: finished, interrupted (their runner's state file), and one
# whose runner is alive (this shell's pid) with no result for a while.
for b in done cut alive; do
    mkdir -p "$DB/w1/bench-$b/results"
    cp "$ROOT/tests/data/bench-repeat/results/aaaa1111_agent_fast_result.json" "$DB/w1/bench-$b/results/"
done
printf '{"state":"complete","planned":1,"pid":1}\n' >"$DB/w1/bench-done/results/.atr-bench-state.json"
printf '{"state":"interrupted","planned":3,"pid":1}\n' >"$DB/w1/bench-cut/results/.atr-bench-state.json"
printf '{"state":"running","planned":3,"pid":%d}\n' $$ >"$DB/w1/bench-alive/results/.atr-bench-state.json"
db_start w1 "$DB/w1" --idle 1 --max-clients 2
W1=$DB_URL
check dashboard-url-line "grep -Eq '^atr dashboard: http://127.0.0.1:[0-9]+/$' '$DB/w1.out'"
wait_for 10 "curl -s '${W1}runs.json' | grep -q '\"run\":\"w1/runs/left.ndjson\",\"kind\":\"requests\",\"status\":\"stopped\"'"
curl -s "${W1}runs.json" >"$DB/w1.json"
check dashboard-statuses "python3 -c \"
import json; s = {r['run']: r['status'] for r in json.load(open('$DB/w1.json'))['runs']}
assert s == {'w1/runs/done.ndjson': 'complete', 'w1/runs/cut.ndjson': 'interrupted',
             'w1/runs/left.ndjson': 'stopped', 'w1/runs/<img src=x onerror=alert(1)>.ndjson': 'stopped',
             'w1/bench-done/results': 'complete', 'w1/bench-cut/results': 'interrupted',
             'w1/bench-alive/results': 'running'}, s\""
check dashboard-bench-total "python3 -c \"
import json; r = {r['run']: r for r in json.load(open('$DB/w1.json'))['runs']}
assert r['w1/bench-cut/results']['total'] == 3 and r['w1/bench-cut/results']['done'] == 1, r\""
check dashboard-total-from-result "python3 -c \"
import json; r = [r for r in json.load(open('$DB/w1.json'))['runs'] if r['run'] == 'w1/runs/done.ndjson'][0]
assert r['total'] == 40 and r['done'] == 40, r\""
CURRENT=dashboard-percentiles-numpy
if same "$DB/w1.json" w1/runs/done.ndjson "$DB/w1/runs/done.ndjson" "$DB" 2>"$DB/same.err"; then pass; else fail "$(tail -n 3 "$DB/same.err")"; fi
CURRENT=dashboard-percentiles-numpy-partial
if same "$DB/w1.json" w1/runs/left.ndjson "$DB/w1/runs/left.ndjson" "$DB" 2>"$DB/same.err"; then pass; else fail "$(tail -n 3 "$DB/same.err")"; fi
check dashboard-symlinks-not-followed "python3 -c \"
import json; j = json.load(open('$DB/w1.json'))
assert j['skipped_links'] == 2 and not [r for r in j['runs'] if 'linked' in r['run']], j\""
curl -s "$W1" >"$DB/w1.html"
check dashboard-page-has-live-cdf "grep -q '<figure id=\"live-cdf\" hidden>' '$DB/w1.html' && grep -q '<th>ETA</th>' '$DB/w1.html'"
check dashboard-page-is-report "grep -q '<section id=\"live\">' '$DB/w1.html' && grep -q '<section id=\"results\">' '$DB/w1.html' && grep -q 'id=\"runs-body\"' '$DB/w1.html'"
check dashboard-symlink-content-absent "! grep -q SECRET-OUTSIDE '$DB/w1.html' && ! curl -s '${W1}runs.json' | grep -q SECRET"
check dashboard-markup-escaped "! grep -q '<img src=x' '$DB/w1.html' && grep -q '&lt;img src=x onerror=alert(1)&gt;.ndjson' '$DB/w1.html'"
check dashboard-traversal-404 "[ \$($CODE --path-as-is '${W1}../../../../etc/passwd') = 404 ] && [ \$($CODE '${W1}%2e%2e/%2e%2e/etc/passwd') = 404 ] && ! curl -s --path-as-is '${W1}../../../../etc/passwd' | grep -q root:"
check dashboard-read-only "[ \$($CODE -X POST --data x '${W1}runs.json') = 405 ] && [ \$($CODE -X DELETE '$W1') = 405 ]"
curl -s -N --max-time 1 "${W1}events?run=w1/runs/done.ndjson" >"$DB/events.txt"
# the CDF event of the run asked for: the report's encoding, n = its successful records
CURRENT=dashboard-cdf-event
if python3 - "$DB/events.txt" "$DB/w1/runs/done.ndjson" <<'PY' 2>"$DB/cdf.err"; then pass; else fail "$(tail -n 3 "$DB/cdf.err")"; fi
import json, sys
ev = [l[6:] for l in open(sys.argv[1]).read().split("event: cdf\n")[1].splitlines() if l.startswith("data: ")][0]
d = json.loads(ev)
lines = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
e2el = sorted(l["e2el_ms"] for l in lines if l["success"])
assert d["run"] == "w1/runs/done.ndjson" and d["status"] == "complete", d
assert d["latency"]["n"] == len(e2el) and len(d["latency"]["v"]) == len(e2el), d["latency"]
# gap-coded microseconds: the running sum is each sorted value, rounded
acc, k = 0, 0
for g in d["latency"]["v"]:
    acc += g
    assert abs(acc - e2el[k] * 1000) <= 1, (acc, e2el[k]); k += 1
PY
check dashboard-event-stream "grep -q '^event: runs$' '$DB/events.txt' && grep -q '<tr data-run=\"w1/runs/done.ndjson\" data-status=\"complete\">' '$DB/events.txt' && grep -q '^id: [0-9]' '$DB/events.txt'"
curl -s -N --max-time 1 "${W1}events?run=..%2F..%2F..%2Fetc%2Fpasswd" >"$DB/events-bad.txt"
check dashboard-cdf-unknown-run-nothing "grep -q '^event: runs$' '$DB/events-bad.txt' && ! grep -q '^event: cdf$' '$DB/events-bad.txt' && ! grep -q root: '$DB/events-bad.txt'"
curl -s -N --max-time 1 "${W1}events?run=w1%2Fruns%2F%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E.ndjson" >"$DB/events-markup.txt"
check dashboard-cdf-markup-name-json "python3 -c \"
import json; t = open('$DB/events-markup.txt').read().split('event: cdf\\n')[1]
d = json.loads(t.split('\\n')[0][6:]); assert d['run'] == 'w1/runs/<img src=x onerror=alert(1)>.ndjson' and d['latency']['n'] == 7, d\""
check dashboard-event-stream-escaped "grep -q 'data-run=\"w1/runs/&lt;img' '$DB/events.txt' && ! grep -q '<img' '$DB/events.txt'"
curl -s -N --max-time 20 "${W1}events" >/dev/null & E1=$!
curl -s -N --max-time 20 "${W1}events" >/dev/null & E2=$!
wait_for 10 "curl -s '${W1}runs.json' | grep -q '\"event_streams\":2}'"
check dashboard-stream-cap "[ \$($CODE --max-time 2 '${W1}events') = 503 ] && [ \$($CODE '${W1}runs.json') = 200 ]"
kill $E1 $E2 2>/dev/null; wait $E1 $E2 2>/dev/null
kill $DB_PID; wait $DB_PID
check dashboard-sigterm-exit-0 "[ $? = 0 ]"

# ---- off loopback: the token ----
db_start tok "$DB/w1" --listen 0.0.0.0
TOK=$(sed -n 's|^atr dashboard: http://0.0.0.0:[0-9]*/?token=\([0-9a-f]\{32\}\)$|\1|p' "$DB/tok.out")
PORT=$(sed -n 's|^atr dashboard: http://0.0.0.0:\([0-9]*\)/.*|\1|p' "$DB/tok.out")
check dashboard-token-printed "[ -n '$TOK' ]"
check dashboard-token-missing-403 "[ \$($CODE 'http://127.0.0.1:$PORT/') = 403 ] && [ \$($CODE 'http://127.0.0.1:$PORT/runs.json') = 403 ] && [ \$($CODE 'http://127.0.0.1:$PORT/events') = 403 ]"
check dashboard-token-wrong-403 "[ \$($CODE 'http://127.0.0.1:$PORT/?token=00000000000000000000000000000000') = 403 ] && [ \$($CODE 'http://127.0.0.1:$PORT/?token=${TOK}0') = 403 ] && [ \$($CODE 'http://127.0.0.1:$PORT/?token=') = 403 ]"
check dashboard-token-right-200 "[ \$($CODE 'http://127.0.0.1:$PORT/?token=$TOK') = 200 ] && [ \$($CODE 'http://127.0.0.1:$PORT/runs.json?token=$TOK') = 200 ]"
kill $DB_PID; wait $DB_PID 2>/dev/null

# ---- live: a replay through the proxy, recorded into a watched folder ----
mkdir -p "$DB/w2/live" "$DB/w2/run" "$DB/w2/router"
# a router model the browser puts into the folder at the end (the Router lab, live)
"$ATR" gen -q --kind swe --traces 12 --seed 3 -o "$DB/rt-swe.ndjson"
"$ATR" router train "$DB/rt-swe.ndjson" --profile rtx3090/qwen3-4b-awq --seed 3 --epochs 50 \
    -o "$DB/rt-m.json" >/dev/null 2>&1

"$ATR" gen -q --kind requests --traces 90 --seed 7 -o "$DB/live.ndjson"
bg_start up "$ATR" sim serve --port 0 --ttft 30 --itl 2
UP=$BG_URL
check dashboard-live-upstream "[ -n '$UP' ]"
bg_start px "$ATR" proxy --port 0 --upstream "$UP" --record "$DB/w2/live/journal.ndjson"
PX=$BG_URL PX_PID=$BG_PID
check dashboard-live-proxy "[ -n '$PX' ]"
db_start w2 "$DB/w2" --poll-ms 100 --idle 2 --proxy "$PX"
W2=$DB_URL
replay() {
    "$ATR" replay llm "$DB/live.ndjson" --target "$PX" --rate 12 -q \
        --save-result "$DB/w2/run/r.json" --requests-out "$DB/w2/run/r.ndjson" >"$DB/replay.out" 2>&1 &
    RP_PID=$!
    DB_PIDS="$DB_PIDS $RP_PID"
}
# The run list as the server pushed it during the replay: every "runs"
# event recorded from before the replay starts, so the states between are
# there whatever the pace of the machine (a poll can miss a short run).
record_start() {
    curl -s -N "${W2}events" >"$DB/w2-events.txt" 2>/dev/null &
    REC_PID=$!
    DB_PIDS="$DB_PIDS $REC_PID"
    wait_for 20 "grep -q '^event: runs' '$DB/w2-events.txt'"
}
# partway : some records, not all, were shown as running while the replay
# ran (the proxy's journal; replay llm's own --requests-out, followed
# through its FILE.partial, with its total and ETA).
partway() {
    kill $REC_PID 2>/dev/null; wait $REC_PID 2>/dev/null
    CURRENT=dashboard-live-partial
    if python3 - "$DB/w2-events.txt" <<'PY' 2>"$DB/partway.err"; then pass; else fail "$(tail -n 3 "$DB/partway.err")"; fi
import re, sys
seen = {"w2/live/journal.ndjson": [], "w2/run/r.ndjson": []}
for ev in open(sys.argv[1]).read().split("\n\n"):
    if "event: runs" not in ev:
        continue
    html = "".join(l[6:] for l in ev.splitlines() if l.startswith("data: "))
    for run, status, cells in re.findall(r'<tr data-run="([^"]*)" data-status="([^"]*)">(.*?)</tr>', html):
        if run in seen:
            seen[run].append((status, re.findall(r"<td[^>]*>(.*?)</td>", cells)))
def partial(run, extra=lambda c: True):
    return [c for st, c in seen[run] if st == "running" and 0 < int(c[3]) < 90 and extra(c)]
assert partial("w2/live/journal.ndjson"), seen["w2/live/journal.ndjson"][-3:]
assert partial("w2/run/r.ndjson", lambda c: c[4] == "90" and c[8].endswith(" s")), seen["w2/run/r.ndjson"][-3:]
PY
}
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    CURRENT=dashboard-browser; fail "no chromium (scripts/deps.sh installs it)"
    record_start; replay
elif [ ! -f "$ROOT/tests/node/node_modules/playwright-core/package.json" ]; then
    CURRENT=dashboard-browser; fail "run 'npm ci' in $ROOT/tests/node"
    record_start; replay
else
    # The browser opens the page first; the replay starts once it is open,
    # so a slow browser start cannot miss the run.
    node "$ROOT/tests/node/dashboard-check.mjs" "$W2" "$DB/shots" \
        w2/live/journal.ndjson w2/run/r.ndjson "$DB/ready" "$DB/rt-m.json" "$DB/w2/router/m.json" \
        >"$DB/node.out" 2>&1 &
    NODE_PID=$!
    DB_PIDS="$DB_PIDS $NODE_PID"
    wait_for 60 "[ -e '$DB/ready' ] || ! kill -0 $NODE_PID"
    record_start; replay
    CURRENT=dashboard-browser
    if wait $NODE_PID; then pass; else fail "node: $(tail -c 400 "$DB/node.out")"; fi
    J=$DB/shots/check.json
    check dashboard-browser-no-errors "python3 -c \"import json; c=json.load(open('$J')); assert not c['consoleErrors'] and not c['pageErrors'] and not c['foreign'] and not c['dialogs'], c\""
    check dashboard-browser-sees-growth "python3 -c \"import json; c=json.load(open('$J')); assert 0 <= c['doneAtLoad'] < c['doneLater'] and c['versionAdvanced'] and c['sameDocument'], c\""
    check dashboard-browser-final-status "python3 -c \"import json; f=json.load(open('$J'))['final']; assert f['w2/run/r.ndjson']['status'] == 'complete' and f['w2/live/journal.ndjson']['status'] == 'stopped', f\""
    check dashboard-browser-sections "python3 -c \"import json; c=json.load(open('$J')); assert c['sectionsAfterReload'][:2] == ['live', 'overview'] and 'results' in c['sectionsAfterReload'], c\""
    check dashboard-browser-nojs "python3 -c \"import json; n=json.load(open('$J'))['noJs']; assert n['done']['status'] == 'complete' and n['live']['status'] == 'stopped' and n['state'].startswith('state at update'), n\""
    # The cells shown equal numpy's figures over the final files (2 decimals).
    CURRENT=dashboard-browser-cells-numpy
    if python3 - "$J" "$DB" "$DB/w2" <<'PY' 2>"$DB/cells.err"; then pass; else fail "$(tail -n 3 "$DB/cells.err")"; fi
import json, sys
sys.path.insert(0, sys.argv[2])
from pct import figures
final = json.load(open(sys.argv[1]))["final"]
for run, path in (("w2/run/r.ndjson", "run/r.ndjson"), ("w2/live/journal.ndjson", "live/journal.ndjson")):
    c, f = final[run]["cells"], figures(sys.argv[3] + "/" + path)
    assert [int(c[3]), int(c[5]), int(c[6])] == [f["done"], f["ok"], f["failed"]], (run, c, f)
    want = [f[k][p] for k in ("ttft_ms", "latency_ms") for p in ("p50", "p90", "p99")]
    for shown, x in zip(c[9:15], want):
        assert abs(float(shown) - x) <= 0.005 + 1e-9, (run, shown, x)
PY
    check dashboard-browser-requests-out-running "python3 -c \"import json; r=json.load(open('$J'))['doneRunWhileRunning']; assert r['status'] == 'running' and r['cells'][4] == '90' and r['cells'][8].endswith(' s'), r\""
    # Each drawing the follower page made: one run, more points as records
    # came (at least one drawing before the last), the last one all of them;
    # the clicked page shows the same run selected and ends on the same count.
    CURRENT=dashboard-browser-cdf-live
    if python3 - "$J" <<'PY' 2>"$DB/cdf-live.err"; then pass; else fail "$(tail -n 3 "$DB/cdf-live.err")"; fi
import json, sys
c = json.load(open(sys.argv[1])); d = [x for x in c["cdfDraws"] if x["latency"] > 0]
ok = int(c["final"]["w2/run/r.ndjson"]["cells"][5])
assert d and all(x["run"] == "w2/run/r.ndjson" and not x["hidden"] and x["paths"] == 2 for x in d), d
assert [x["draws"] for x in d] == sorted(set(x["draws"] for x in d)), d
assert all(a["latency"] <= b["latency"] for a, b in zip(d, d[1:])) and d[0]["latency"] < d[-1]["latency"] == ok, (d, ok)
assert c["clicked"]["run"] == "w2/run/r.ndjson" and c["selectedClass"] and c["sameDocumentAfterCdf"], c["clicked"]
PY
    check dashboard-browser-cdf-final "python3 -c \"
import json; c = json.load(open('$J')); f = c['final']['w2/run/r.ndjson']
assert c['cdfFinal']['latency'] == c['followerFinal']['latency'] == int(f['cells'][5]), (c['cdfFinal'], f)\""
    check dashboard-browser-journal-cdf "python3 -c \"
import json; c = json.load(open('$J'))['journalCdf']
lines = [json.loads(l)['meta'] for l in open('$DB/w2/live/journal.ndjson')]
ok = [m for m in lines if m['status'] == 200 and m['error'] is None]
assert c['run'] == 'w2/live/journal.ndjson' and not c['itlHidden'] and c['ttftSeries'] == 1, c
assert c['itl'] == len([m for m in ok if m['itl_ms']['mean'] is not None]) and c['ttft'] == len([m for m in ok if m['ttft_ms'] is not None]), (c, len(ok))\""
    check dashboard-browser-router-live "python3 -c \"
import json; r = json.load(open('$J'))['routerLive']; assert r['live'] and r['features'] > 0 and r['sameDocument'], r\""
    # the views docs/dashboard.md shows (not the long Results one)
    [ -z "${ATR_DASHBOARD_SHOTS:-}" ] || for v in live cdf proxy-cdf runs nojs; do
        cp "$DB/shots/dashboard-$v.png" "$ATR_DASHBOARD_SHOTS/"; done
    check dashboard-browser-screenshots "[ -s '$DB/shots/dashboard-cdf.png' ] && [ -s '$DB/shots/dashboard-live.png' ] && [ -s '$DB/shots/dashboard-runs.png' ] && [ -s '$DB/shots/dashboard-nojs.png' ]"
fi
wait $RP_PID 2>/dev/null
partway
check dashboard-partial-removed "[ -s '$DB/w2/run/r.ndjson' ] && [ ! -e '$DB/w2/run/r.ndjson.partial' ]"
wait_for 10 "curl -s '${W2}runs.json' | grep -q '\"run\":\"w2/run/r.ndjson\",\"kind\":\"requests\",\"status\":\"complete\"'"
curl -s "${W2}runs.json" >"$DB/w2.json"
CURRENT=dashboard-live-final-numpy
if same "$DB/w2.json" w2/run/r.ndjson "$DB/w2/run/r.ndjson" "$DB" 2>"$DB/same.err" &&
   same "$DB/w2.json" w2/live/journal.ndjson "$DB/w2/live/journal.ndjson" "$DB" 2>>"$DB/same.err"; then pass
else fail "$(tail -n 3 "$DB/same.err")"; fi
# --proxy: the proxy's GET /records gave the same records as its journal.
CURRENT=dashboard-proxy-feed-numpy
if same "$DB/w2.json" "proxy $PX" "$DB/w2/live/journal.ndjson" "$DB" 2>"$DB/same.err"; then pass
else fail "$(tail -n 3 "$DB/same.err")"; fi
check dashboard-proxy-feed-no-content "curl -s -N --max-time 1 '$PX/records' | grep -q '^retry: 2000' && ! grep -q 'prompt_text\|\"content\"' '$DB/w2.json'"
kill $PX_PID; wait $PX_PID 2>/dev/null    # the proxy: its feed ends, the run says so
wait_for 10 "curl -s '${W2}runs.json' | grep -q '\"connected\":false'"
check dashboard-proxy-disconnected "curl -s '${W2}runs.json' | grep -q '\"run\":\"proxy $PX\",\"kind\":\"proxy journal\",\"status\":\"[a-z]*\",\"done\":[1-9]'"
check dashboard-journal-upstreams "python3 -c \"
import json; r = [r for r in json.load(open('$DB/w2.json'))['runs'] if r['run'] == 'w2/live/journal.ndjson'][0]
lines = [json.loads(l) for l in open('$DB/w2/live/journal.ndjson')]
t = [l['meta']['ttft_ms'] for l in lines if l['meta']['status'] == 200 and l['meta']['ttft_ms'] is not None]
want = [{'upstream': '$UP', 'policy': 'naive', 'requests': len(lines), 'ok': r['ok'], 'mean_ttft_ms': sum(t) / len(t)}]
assert [{k: u[k] for k in want[0]} for u in r['upstreams']] == want, (r['upstreams'], want)\""
# ---- a journal split over two upstreams and two policies: each pair's
# TTFT and ITL percentiles (numpy's) and CDFs, in the table, the JSON and
# the cdf event. The live journal's lines, relabelled: odd ones "b". ----
mkdir -p "$DB/w3"
python3 - "$DB/w2/live/journal.ndjson" "$DB/w3/split.ndjson" <<'PY'
import json, sys
out = open(sys.argv[2], "w")
for i, l in enumerate(open(sys.argv[1])):
    o = json.loads(l)
    if i % 2:
        o["meta"]["upstream_url"] = "http://b.invalid/<b>"
        o["meta"]["policy"] = "prefix-route"
    out.write(json.dumps(o) + "\n")
PY
db_start w3 "$DB/w3" --poll-ms 100
W3=$DB_URL
curl -s "${W3}runs.json" >"$DB/w3.json"
curl -s -N --max-time 1 "${W3}events?run=w3/split.ndjson" >"$DB/w3-events.txt"
curl -s "$W3" >"$DB/w3.html"
CURRENT=dashboard-journal-split-pcts
if python3 - "$DB/w3.json" "$DB/w3/split.ndjson" "$DB" "$DB/w3-events.txt" <<'PY' 2>"$DB/split.err"; then pass; else fail "$(tail -n 3 "$DB/split.err")"; fi
import json, sys
sys.path.insert(0, sys.argv[3])
from pct import pct
r = [r for r in json.load(open(sys.argv[1]))["runs"] if r["run"] == "w3/split.ndjson"][0]
pairs = {}
for l in open(sys.argv[2]):
    m = json.loads(l)["meta"]
    g = pairs.setdefault((m["upstream_url"], m["policy"]), {"ttft": [], "itl": []})
    if m["status"] == 200 and m["error"] is None:
        if m["ttft_ms"] is not None: g["ttft"].append(m["ttft_ms"])
        if m["itl_ms"]["mean"] is not None: g["itl"].append(m["itl_ms"]["mean"])
assert len(pairs) == 2 and len(r["upstreams"]) == 2, r["upstreams"]
ev = open(sys.argv[4]).read().split("event: cdf\n")[1].split("\n")[0]
d = json.loads(ev[6:])
assert d["run"] == "w3/split.ndjson" and len(d["groups"]) == 2, d.keys()
for u, c in zip(r["upstreams"], d["groups"]):
    g = pairs[(u["upstream"], u["policy"])]
    assert g["itl"], "no ITL in the journal"
    for key in ("ttft", "itl"):
        want = {f"p{p}": pct(g[key], p) for p in (50, 90, 99)}
        assert u[key + "_ms"] == want, (key, u[key + "_ms"], want)
        assert (c["upstream"], c["policy"]) == (u["upstream"], u["policy"])
        assert c[key]["n"] == len(g[key]), (key, c[key]["n"], len(g[key]))
PY
check dashboard-journal-split-table "grep -q 'http://b.invalid/&lt;b&gt; (prefix-route): [0-9]*, mean TTFT [0-9.]* ms; TTFT p50 [0-9.]* / p99 [0-9.]*, ITL p50 [0-9.]* / p99 [0-9.]* ms' '$DB/w3.html' && ! grep -q 'b.invalid/<b>' '$DB/w3.html' && grep -q 'data-metric=\"itl\" hidden' '$DB/w3.html'"
kill $DB_PID; wait $DB_PID 2>/dev/null
check dashboard-live-rate "python3 -c \"
import json; r = [r for r in json.load(open('$DB/w2.json'))['runs'] if r['run'] == 'w2/live/journal.ndjson'][0]
assert r['rate'] is not None and 1 < r['rate'] < 100, r\""
# ---- a replay killed mid-way: its FILE.partial stays, reads stopped, never complete ----
mkdir -p "$DB/w2/killed"
"$ATR" replay llm "$DB/live.ndjson" --target "$UP" --rate 5 -q \
    --save-result "$DB/w2/killed/k.json" --requests-out "$DB/w2/killed/k.ndjson" >/dev/null 2>&1 &
KP=$!
DB_PIDS="$DB_PIDS $KP"
wait_for 20 "[ \$(wc -l <'$DB/w2/killed/k.ndjson.partial' 2>/dev/null || echo 0) -ge 4 ]"
kill -9 $KP; wait $KP 2>/dev/null
wait_for 10 "curl -s '${W2}runs.json' | grep -q '\"run\":\"w2/killed/k.ndjson\",\"kind\":\"requests\",\"status\":\"stopped\"'"
check dashboard-killed-reads-stopped "curl -s '${W2}runs.json' | grep -q '\"run\":\"w2/killed/k.ndjson\",\"kind\":\"requests\",\"status\":\"stopped\",\"done\":[1-9]' && [ ! -e '$DB/w2/killed/k.ndjson' ] && [ ! -e '$DB/w2/killed/k.json' ]"
# ---- a replay stopped with SIGTERM: FILE committed (incomplete), no .partial, interrupted ----
mkdir -p "$DB/w2/term"
"$ATR" replay llm "$DB/live.ndjson" --target "$UP" --rate 5 -q \
    --save-result "$DB/w2/term/t.json" --requests-out "$DB/w2/term/t.ndjson" >/dev/null 2>&1 &
TP=$!
DB_PIDS="$DB_PIDS $TP"
wait_for 20 "[ \$(wc -l <'$DB/w2/term/t.ndjson.partial' 2>/dev/null || echo 0) -ge 4 ]"
kill -TERM $TP; wait $TP 2>/dev/null
wait_for 10 "curl -s '${W2}runs.json' | grep -q '\"run\":\"w2/term/t.ndjson\",\"kind\":\"requests\",\"status\":\"interrupted\"'"
check dashboard-sigterm-reads-interrupted "curl -s '${W2}runs.json' | grep -q '\"run\":\"w2/term/t.ndjson\",\"kind\":\"requests\",\"status\":\"interrupted\"' && [ -s '$DB/w2/term/t.ndjson' ] && [ ! -e '$DB/w2/term/t.ndjson.partial' ]"
# ---- sim run --requests-out: FILE.partial written as the simulation goes.
# Its .partial made a FIFO: the simulation blocks writing a batch until
# the test reads, so the first line is read while it still runs (and
# before FILE is committed), with no timing; the live lines are FILE's. ----
mkdir -p "$DB/w4/sim"
"$ATR" gen -q --kind requests --traces 400 --seed 9 -o "$DB/sim-reqs.ndjson"
mkfifo "$DB/fifo.ndjson.partial"
"$ATR" sim run -q "$DB/sim-reqs.ndjson" --profile h100/llama-3.1-8b --rate 20 \
    --save-result "$DB/fifo.json" --requests-out "$DB/fifo.ndjson" >/dev/null 2>&1 &
SP=$!
DB_PIDS="$DB_PIDS $SP"
# (a deadline: a simulation that failed before opening it cannot hang the test)
timeout 60 sh -c '
    { read -r head; kill -0 "$1" 2>/dev/null && [ ! -e "$2.ndjson" ] && alive=1 || alive=0
      echo "$head" >"$2.head"; echo $alive >"$2.alive"; cat >"$2-live.ndjson"; } <"$2.ndjson.partial"
' sh $SP "$DB/fifo" || kill $SP 2>/dev/null
wait $SP
SIM_HEAD=$(cat "$DB/fifo.head" 2>/dev/null) SIM_ALIVE=$(cat "$DB/fifo.alive" 2>/dev/null)
check dashboard-sim-partial-live "[ $SIM_ALIVE = 1 ] && [ '$SIM_HEAD' = '{\"atr_partial\":\"requests\",\"total\":400}' ]"
check dashboard-sim-partial-same-lines "cmp -s '$DB/fifo-live.ndjson' '$DB/fifo.ndjson' && [ ! -e '$DB/fifo.ndjson.partial' ]"
# a plain file: removed once FILE is committed
"$ATR" sim run -q "$DB/sim-reqs.ndjson" --profile h100/llama-3.1-8b --rate 20 \
    --save-result "$DB/w4/sim/done.json" --requests-out "$DB/w4/sim/done.ndjson" >/dev/null 2>&1
check dashboard-sim-partial-removed "[ -s '$DB/w4/sim/done.ndjson' ] && [ ! -e '$DB/w4/sim/done.ndjson.partial' ]"
# what a watcher sees mid-way: the header and the first 150 lines
{ echo "$SIM_HEAD"; head -n 150 "$DB/fifo-live.ndjson"; } >"$DB/w4/sim/mid.ndjson.partial"
db_start w4 "$DB/w4" --poll-ms 100 --idle 600
W4=$DB_URL
check dashboard-sim-partial-running "curl -s '${W4}runs.json' | grep -q '\"run\":\"w4/sim/mid.ndjson\",\"kind\":\"requests\",\"status\":\"running\",\"done\":150,\"total\":400'"
kill $DB_PID; wait $DB_PID 2>/dev/null
# ---- the Router lab sent again when a router model lands or is replaced ----
mkdir -p "$DB/w5"
db_start w5 "$DB/w5" --poll-ms 100
W5=$DB_URL
curl -s -N --max-time 30 "${W5}events" >"$DB/w5-events.txt" & E5=$!
wait_for 10 "grep -q '^event: runs$' '$DB/w5-events.txt'"
check dashboard-router-none-yet "! grep -q '^event: router$' '$DB/w5-events.txt'"
cp "$DB/rt-m.json" "$DB/w5/.m.json" && mv "$DB/w5/.m.json" "$DB/w5/m.json"
wait_for 10 "[ \$(grep -c '^event: router$' '$DB/w5-events.txt') -ge 1 ]"
check dashboard-router-event "grep -q '^data: <section id=\"router\"><h2>Router lab</h2>' '$DB/w5-events.txt' && grep -q 'id=\"router-data\"' '$DB/w5-events.txt'"
"$ATR" router train "$DB/rt-swe.ndjson" --profile rtx3090/qwen3-4b-awq --seed 4 --epochs 20 \
    -o "$DB/w5/m.json" >/dev/null 2>&1
wait_for 10 "[ \$(grep -c '^event: router$' '$DB/w5-events.txt') -ge 2 ]"
check dashboard-router-event-replaced "[ \$(grep -c '^event: router$' '$DB/w5-events.txt') -ge 2 ]"
check dashboard-router-event-late-stream "curl -s -N --max-time 1 '${W5}events' | grep -q '^event: router$'"
kill $E5 $DB_PID 2>/dev/null; wait $E5 $DB_PID 2>/dev/null
for p in $DB_PIDS; do kill "$p" 2>/dev/null; done
for p in $DB_PIDS; do wait "$p" 2>/dev/null; done
