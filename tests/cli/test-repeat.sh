# test-repeat.sh - --repeat N of sim run, compare --run, replay llm and
# sweep: runs interleaved (ABAB, never AABB), every repeat's files and
# "repeat" index kept, the table of medians, intervals and verdicts over
# repeats (within-run intervals with --repeat 1), atr compare grouping
# result files by repeat, a failed repeat counted and left out, bad input.
R=$T/repeat
mkdir -p "$R/out"
PROFILE=h100/llama-3.1-8b
"$ATR" gen -q --kind swe --traces 6 --seed 1 -o "$R/w.ndjson"

# --- sim run: deterministic, so the whole output is a golden. ---
golden "sim run --repeat 5: blocks and the table over repeats" "$DATA/repeat/sim-run.golden" \
    "$ATR" sim run "$R/w.ndjson" --profile $PROFILE --rate 2 --policy naive,prefix-cache \
    --repeat 5 --save-result "$R/out/r.json" --requests-out "$R/out/q.ndjson"
check "interleaved: naive, prefix-cache, naive, prefix-cache, ..." \
    "[ \"\$(grep '^== policy' '$T/out' | head -4 | tr '\\n' '|')\" = '== policy naive, repeat 1 of 5|== policy prefix-cache, repeat 1 of 5|== policy naive, repeat 2 of 5|== policy prefix-cache, repeat 2 of 5|' ] && [ \$(grep -c '^== policy' '$T/out') -eq 10 ]"
check "the table names its method" "grep -q '| repeats' '$T/out' && grep -q 'prefix-cache .*| TTFT p50 ms .*| win ' '$T/out'"
for p in naive prefix-cache; do
    for k in 1 2 3 4 5; do
        check "result file of $p repeat $k says so" "python3 -c \"import json; a=json.load(open('$R/out/r.$p.r$k.json'))['atr']; assert a['repeat']==$k and a['policy']=='$p', a\""
        check "request lines of $p repeat $k" "[ -s '$R/out/q.$p.r$k.ndjson' ]"
    done
done
check "no file without its repeat" "[ ! -e '$R/out/r.json' ] && [ ! -e '$R/out/r.naive.json' ]"
# --rate's Poisson gaps are drawn afresh per repeat (seed + r - 1): the
# repeats differ; repeat 1 is the run without --repeat.
check "repeats differ (fresh arrivals)" "! cmp -s '$R/out/q.naive.r1.ndjson' '$R/out/q.naive.r2.ndjson'"
ok "the same run without --repeat" "$ATR" sim run -q "$R/w.ndjson" --profile $PROFILE --rate 2 \
    --policy naive --requests-out "$R/once.ndjson"
check "repeat 1 is the run without --repeat" "cmp '$R/once.ndjson' '$R/out/q.naive.r1.ndjson'"
ok "trace times: every repeat the same" "$ATR" sim run -q "$R/w.ndjson" --profile $PROFILE \
    --repeat 2 --requests-out "$R/same.ndjson"
check "trace-timed repeats identical (one policy: .rK only)" "cmp '$R/same.r1.ndjson' '$R/same.r2.ndjson'"

ok "replay llm on a sim: target, --repeat 2, one policy" "$ATR" replay llm -q "$R/w.ndjson" \
    --target sim:$PROFILE --rate 2 --repeat 2 --save-result "$R/rl.json"
check "one policy repeated: files named by the repeat alone" "python3 -c \"import json; assert [json.load(open('$R/rl.r%d.json' % k))['atr']['repeat'] for k in (1, 2)]==[1, 2]\" && [ ! -e '$R/rl.json' ]"

# --- compare --run: only the table; --repeat 1: within-run intervals. ---
golden "compare --run --repeat 5" "$DATA/repeat/compare-run.golden" \
    "$ATR" compare --run "$R/w.ndjson" --target sim:$PROFILE --rate 2 \
    --policy naive,prefix-cache --repeat 5
golden "compare --run --repeat 1: within-run intervals" "$DATA/repeat/compare-run-1.golden" \
    "$ATR" compare --run "$R/w.ndjson" --target sim:$PROFILE --rate 2 \
    --policy naive,prefix-cache --repeat 1
check "within-run method named" "grep -q 'requests-block' '$T/out'"

# --- atr compare reads the repeats back from the files. ---
golden "compare of result files with repeats" "$DATA/repeat/compare-files.golden" \
    "$ATR" compare "$R"/out/r.*.json
check "compare --json keeps each row's repeat" "\"$ATR\" compare --json '$R'/out/r.*.json | python3 -c \"import json,sys; assert sorted(r['repeat'] for r in json.load(sys.stdin))==[1,1,2,2,3,3,4,4,5,5]\""
python3 - "$R/out/r.naive.r2.json" "$R/mixed.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
del r['p99_ttft_ms']
json.dump(r, open(sys.argv[2], 'w'))
PY
fails "compare: mixed metric sets across repeats" 1 "policy naive: mixed metric sets: repeat 1 has TTFT p99 ms, repeat 2 not" \
    "$ATR" compare "$R/out/r.naive.r1.json" "$R/mixed.json"
fails "compare: one repeat twice" 1 "policy naive: repeat 1 is there twice" \
    "$ATR" compare "$R/out/r.naive.r1.json" "$R/out/r.naive.r1.json"

# --- bad input ---
fails "sim run --repeat 0" 2 "--repeat wants 1..1000" "$ATR" sim run "$R/w.ndjson" --profile $PROFILE --repeat 0
fails "replay llm --repeat 0" 2 "--repeat wants 1..1000" "$ATR" replay llm "$R/w.ndjson" --target sim:$PROFILE --repeat 0
fails "compare --run --repeat junk" 2 "--repeat wants 1..1000" "$ATR" compare --run "$R/w.ndjson" --target sim:$PROFILE --policy naive --repeat x
fails "sweep --repeat 0" 2 "--repeat wants 1..1000" "$ATR" sweep --generate 4 --target sim:$PROFILE -o "$R/s.json" --repeat 0
fails "--merge takes no --repeat" 2 "--merge reads request files" "$ATR" replay llm --merge "$R/once.ndjson" --repeat 2
absent "nothing written on bad input" "$R/s.json"

# --- sweep: every rate repeated, interleaved, each run with its repeat. ---
ok "sweep --repeat 2" "$ATR" sweep --generate 12 --target sim:$PROFILE -o "$R/sweep.json" \
    --rates 2 --arrival poisson --repeat 2
check "sweep runs: sync/max alternate, then the rates in turn" "python3 -c \"import json; d=json.load(open('$R/sweep.json')); k=[(r['kind'], r['repeat']) for r in d['runs']]; assert d['repeats']==2 and k[:4]==[('synchronous',1),('throughput',1),('synchronous',2),('throughput',2)] and [x[1] for x in k[4:]]==[1,1,2,2], k\""
check "sweep table: medians per rate" "grep -q '^medians over repeats' '$T/out' && grep -q '^rate .* 2  ' '$T/out'"

# --- replay llm against a server that fails some requests: one request
# per repeat, so the server's seeded faults fail whole repeats (which ones
# is a pure function of its --seed and the request's order). ---
"$ATR" gen -q --kind requests --traces 1 --input-tokens 16 --output-tokens 4 --seed 3 -o "$R/one.ndjson"
"$ATR" sim serve --ttft 5 --itl 1 --fail-rate 0.5 --fail-kinds 500 --seed 4 --port 0 \
    >"$R/srv.out" 2>"$R/srv.err" &
SRV=$!
wait_for 20 "grep -q 'listening on' '$R/srv.out'" || echo "test-repeat: server did not start: $(cat "$R/srv.err")"
URL=$(sed -n 's|.*listening on \(http://127.0.0.1:[0-9]*\).*|\1|p' "$R/srv.out")
"$ATR" replay llm "$R/one.ndjson" --target "$URL" --warmup 0 --repeat 4 \
    --policy naive,prefix-cache --save-result "$R/http.json" >"$R/http.out" 2>"$R/http.err"
rc=$?
kill "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null
CURRENT="replay llm: a failed repeat fails the command"; [ $rc -eq 1 ] && pass || fail "exit $rc"
check "the failed repeat is named and counted" "grep -q 'repeat [1-4] of policy prefix-cache failed, excluded from the intervals: every request failed (first: http 500' '$R/http.err' && grep -q '1 of 8 runs failed' '$R/http.err'"
check "the table shows it left out" "grep -q 'failed runs, left out of the intervals: .* prefix-cache 1 of 4' '$R/http.out' && grep -q 'prefix-cache .* TTFT p50 ms | 3 ' '$R/http.out'"
check "its result is kept, recorded as failed" "[ \$(cat '$R'/http.prefix-cache.r*.json | python3 -c \"import json,sys; print(sum(json.loads(l)['completed']==0 for l in sys.stdin))\") -eq 1 ]"
