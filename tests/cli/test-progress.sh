# test-progress.sh - long jobs show progress when stderr is not a terminal
# (a plain "atr: NAME: done/total UNIT (pct), rate/s, ETA" line per
# ATR_PROGRESS_INTERVAL_MS; 0 here: every update, so that no check depends
# on how long a run takes), -q removes it, and stdout is the same either way
# (issue 26, "a newcomer never waits blind").
G=$T/progress
mkdir -p "$G"
P=h100/llama-3.1-8b
W=$G/w.ndjson
"$ATR" gen -q --kind swe --traces 3 --seed 5 -o "$W"
R=$G/req.ndjson     # no think time: quick on a real server
"$ATR" gen -q --kind requests --traces 8 --seed 4 -o "$R"
LINE='^atr: %s: [0-9]+/[0-9]+ %s \([0-9]+%%\), [0-9.]+/s(, ETA [0-9]+ (s|min [0-9]+ s|h [0-9]+ min))?$'

# progress NAME LABEL UNIT CMD... : CMD (a deterministic one) shows progress
# lines on stderr at interval 0, none with -q (added at the end), and the
# same stdout as with the default interval.
progress() {
    name=$1 label=$2 unit=$3; shift 3
    re=$(printf "$LINE" "$label" "$unit")
    ATR_PROGRESS_INTERVAL_MS=0 "$@" >"$G/$name.out" 2>"$G/$name.err"
    check "progress: $name prints lines off a terminal" \
        "[ \$(grep -Ec '$re' '$G/$name.err') -ge 2 ] && ! grep -q \"\$(printf '\\r')\" '$G/$name.err'"
    "$@" >"$G/$name.default.out" 2>"$G/$name.default.err"
    check "progress: $name stdout unchanged by progress" "cmp '$G/$name.out' '$G/$name.default.out'"
    check "progress: $name none at the default interval on a short run" \
        "! grep -Eq '$re' '$G/$name.default.err'"
    ATR_PROGRESS_INTERVAL_MS=0 "$@" -q >"$G/$name.q.out" 2>"$G/$name.q.err"
    check "progress: $name -q prints none" "[ ! -s '$G/$name.q.err' ]"
}

progress "sim run" sim requests "$ATR" sim run "$W" --profile $P --rate inf
progress "replay llm sim:" sim requests "$ATR" replay llm "$W" --target sim:$P --rate inf
progress sweep sweep requests "$ATR" sweep "$W" --target sim:$P --rates 1 -o "$G/sweep.json"
check "progress: sweep run lines stay" "grep -q '^atr: sweep: run 1/3 synchronous' '$G/sweep.err'"

# replay llm against a real server: the run the issue saw silent for minutes.
: >"$G/serve.out"
"$ATR" sim serve --port 0 --ttft 1 --itl 1 >"$G/serve.out" 2>"$G/serve.err" &
SV_PID=$!
i=0 port=
while [ $i -lt 400 ] && [ -z "$port" ] && kill -0 $SV_PID 2>/dev/null; do
    port=$(sed -n 's|^atr sim serve: listening on http://127.0.0.1:\([0-9][0-9]*\)$|\1|p' "$G/serve.out")
    [ -n "$port" ] || sleep 0.05
    i=$((i + 1))
done
re=$(printf "$LINE" "replay llm" requests)
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" replay llm "$R" --target "http://127.0.0.1:$port" --rate inf \
    --save-result "$G/http.json" >"$G/http.out" 2>"$G/http.err"
check "progress: replay llm http prints lines" \
    "[ \$(grep -Ec '$re' '$G/http.err') -ge 2 ] && grep -q '^atr: replay llm: 8/8 requests' '$G/http.err'"
# --threads: one display, the threads' counts summed
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" replay llm "$R" --target "http://127.0.0.1:$port" --rate inf \
    --threads 2 >"$G/http2.out" 2>"$G/http2.err"
check "progress: replay llm --threads sums the threads" \
    "grep -Eq '$re' '$G/http2.err' && grep -q '^atr: replay llm: 8/8 requests' '$G/http2.err'"
check "progress: replay llm http result block" "grep -q '^Successful requests:' '$G/http.out'"
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" replay llm -q "$R" --target "http://127.0.0.1:$port" --rate inf \
    --save-result "$G/http-q.json" >"$G/http-q.out" 2>"$G/http-q.err"
check "progress: replay llm http -q prints none" "[ ! -s '$G/http-q.err' ] && [ -s '$G/http-q.json' ]"
kill $SV_PID 2>/dev/null
wait $SV_PID 2>/dev/null

# convert: bytes read, with the reader's name.
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" convert "$W" -o "$G/c.ndjson" 2>"$G/convert.err"
check "progress: convert prints lines" \
    "grep -Eq '^atr: .*/w\.ndjson +[0-9]+%  [0-9]+ MB  [0-9]+ MB/s  [0-9]+ traces' '$G/convert.err'"
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" convert -q "$W" -o "$G/cq.ndjson" 2>"$G/convert-q.err"
check "progress: convert -q prints none" "[ ! -s '$G/convert-q.err' ] && cmp -s '$G/c.ndjson' '$G/cq.ndjson'"

# replay tools: the backend is said before the first step, then the steps.
printf '{"format":"atr-trace/1","trace_id":"p/1","steps":[{"i":0,"kind":"tool","tool":"bash","command":"true"},{"i":1,"kind":"tool","tool":"bash","command":"echo hi"},{"i":2,"kind":"tool","tool":"bash","command":"true"}]}\n' >"$G/tools.ndjson"
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" replay tools --config none --sandbox none "$G/tools.ndjson" \
    --out "$G/rt" >"$G/rt.out" 2>"$G/rt.err"
check "progress: replay tools says its backend first" \
    "head -n 1 '$G/rt.err' | grep -q '^atr: replay tools: none, backend: '"
check "progress: replay tools counts steps" \
    "grep -Eq '^atr: replay tools: 1 step, [0-9.]+/s$' '$G/rt.err' && grep -Eq '^atr: replay tools: 3 steps, [0-9.]+/s$' '$G/rt.err'"
check "progress: replay tools table on stdout" "grep -q '^backend: ' '$G/rt.out'"
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" replay tools -q --config none --sandbox none "$G/tools.ndjson" \
    --out "$G/rtq" >"$G/rtq.out" 2>"$G/rtq.err"
check "progress: replay tools -q prints none" "[ ! -s '$G/rtq.err' ] && [ ! -s '$G/rtq.out' ]"
printf '{"format":"atr-trace/1","trace_id":"a","steps":[{"kind":"tool","tool":"bash","command":"true"}]}\n{"format":"atr-trace/1","trace_id":"b","steps":[{"kind":"tool","tool":"bash","command":"true"}]}\n' >"$G/ab.ndjson"
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" replay tools --tenants --no-baseline --config none --sandbox none \
    "$G/ab.ndjson" --out "$G/rtt" >"$G/rtt.out" 2>"$G/rtt.err"
check "progress: replay tools --tenants says its backend and counts steps" \
    "head -n 1 '$G/rtt.err' | grep -q '^atr: replay tools: none, backend: ' && grep -Eq '^atr: replay tools: 2 steps, [0-9.]+/s$' '$G/rtt.err'"

# report --png: charts shot so far (Chromium takes about a second each).
if [ -x /usr/bin/chromium ] || [ -n "${CHROMIUM:-}" ]; then
    re=$(printf "$LINE" "report --png" charts)
    ATR_PROGRESS_INTERVAL_MS=0 "$ATR" report "$W" -o "$G/r.html" --png "$G/png" \
        >"$G/png.out" 2>"$G/png.err"
    check "progress: report --png prints lines" \
        "grep -Eq '$re' '$G/png.err' && n=\$(ls '$G/png' | wc -l) && grep -q \"^atr: report --png: \$n/\$n charts\" '$G/png.err'"
    check "progress: report --png stdout" "grep -Eq '^wrote [0-9]+ PNG files to ' '$G/png.out'"
    ATR_PROGRESS_INTERVAL_MS=0 "$ATR" report -q "$W" -o "$G/rq.html" --png "$G/pngq" \
        >"$G/pngq.out" 2>"$G/pngq.err"
    check "progress: report --png -q prints none" \
        "[ ! -s '$G/pngq.err' ] && grep -Eq '^wrote [0-9]+ PNG files to ' '$G/pngq.out'"
fi

# bench run, serving mode: its phase lines, and the requests during the
# benchmark phase (a long benchmark was one silent phase line).
cat >"$G/bench.json" <<EOF2
{"format": "atr-bench-spec/1", "port": 0,
 "variants": {"human": {"server": "atr sim serve --ttft 1 --itl 1 --port {port} --model {model}",
                        "ready_url": "http://127.0.0.1:{port}/health"}},
 "workload": {"trace": "$G/req.ndjson"},
 "items": [{"human_commit": "abcdef12", "parent_commit": "p", "model": "m"}]}
EOF2
re=$(printf "$LINE" "bench run" requests)
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" bench run "$G/bench.json" -o "$G/b1" >"$G/b1.out" 2>"$G/b1.err"
check "progress: bench run counts requests in the benchmark phase" \
    "grep -Eq '$re' '$G/b1.err' && grep -q '^atr: bench run: 8/8 requests' '$G/b1.err' && grep -q '^\\[1/1\\] abcdef12 human: benchmark' '$G/b1.err'"
ATR_PROGRESS_INTERVAL_MS=0 "$ATR" bench run -q "$G/bench.json" -o "$G/b2" >"$G/b2.out" 2>"$G/b2.err"
check "progress: bench run -q prints none" "[ ! -s '$G/b2.err' ] && [ -s '$G/b2/results/abcdef12_human_result.json' ]"
