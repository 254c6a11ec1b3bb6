# test-sample.sh - `atr sample`: exact counts, strata coverage, input order,
# determinism, stdin, bad input. Sourced by run.sh ($ATR, $DATA, $T).

S=$DATA/gen/strata.ndjson    # 16 traces, 4 strata of 4 (trace ids name them)

ok sample-four "$ATR" sample --size 4 "$S" -o "$T/smp-a.ndjson"
ok sample-validates "$ATR" validate "$T/smp-a.ndjson"
check sample-count "[ \$(wc -l <'$T/smp-a.ndjson') -eq 4 ]"
for st in short-pytest long-pytest short-grep long-grep; do
    check "sample-covers-$st" "[ \$(grep -c '\"trace_id\":\"$st-' '$T/smp-a.ndjson') -eq 1 ]"
done
# the picks keep input order: their start_ms (= input position) ascend
check sample-input-order "grep -o '\"start_ms\":[0-9]*' '$T/smp-a.ndjson' | cut -d: -f2 | sort -n -c"
ok sample-again "$ATR" sample --size 4 -q "$S" -o "$T/smp-b.ndjson"
check sample-deterministic "cmp -s '$T/smp-a.ndjson' '$T/smp-b.ndjson'"
ok sample-seed2 "$ATR" sample --size 4 --seed 2 -q "$S" -o "$T/smp-c.ndjson"
check sample-other-seed-differs "! cmp -s '$T/smp-a.ndjson' '$T/smp-c.ndjson'"
ok sample-stdin sh -c "cat '$S' | '$ATR' sample --size 4 -q - -o '$T/smp-d.ndjson'"
check sample-stdin-same "cmp -s '$T/smp-a.ndjson' '$T/smp-d.ndjson'"
ok sample-smoke "$ATR" sample --size smoke "$S" -o "$T/smp-e.ndjson"
check sample-smoke-5 "[ \$(wc -l <'$T/smp-e.ndjson') -eq 5 ]"
check sample-smoke-summary "grep -q 'sampled 5 of 16' '$T/err'"
# two files count as one input, in argument order
ok sample-two-files "$ATR" sample --size dev "$S" "$S" -o "$T/smp-f.ndjson"
check sample-two-files-20 "[ \$(wc -l <'$T/smp-f.ndjson') -eq 20 ]"
ok sample-all "$ATR" sample --size paper "$S" -o "$T/smp-g.ndjson"
check sample-all-16 "[ \$(wc -l <'$T/smp-g.ndjson') -eq 16 ]"
check sample-all-says-so "grep -q 'writing all of them' '$T/err'"

# over gen output, the whole pipeline
ok sample-gen "$ATR" gen --kind swe --traces 30 -q -o "$T/smp-gen.ndjson"
ok sample-gen-dev "$ATR" sample --size 7 --seed 5 "$T/smp-gen.ndjson" -o "$T/smp-h.ndjson"
check sample-gen-7 "[ \$(wc -l <'$T/smp-h.ndjson') -eq 7 ]"

fails sample-bad-size 2 "--size wants" "$ATR" sample --size huge "$S" -o "$T/smp-x.ndjson"
fails sample-zero-size 2 "--size wants" "$ATR" sample --size 0 "$S" -o "$T/smp-x.ndjson"
fails sample-no-size 2 "missing --size" "$ATR" sample "$S" -o "$T/smp-x.ndjson"
fails sample-no-input 2 "missing input" "$ATR" sample --size 3 -o "$T/smp-x.ndjson"
fails sample-bad-format 2 "unknown format" "$ATR" sample --size 3 --from nope "$S" -o "$T/smp-x.ndjson"
fails sample-missing-file 1 "no-such.ndjson" "$ATR" sample --size 3 "$T/no-such.ndjson" -o "$T/smp-x.ndjson"
printf '{"format":"atr-trace/1","trace_id":"a","steps":[]}\n{"format":"atr-trace/1",\n' >"$T/smp-bad.ndjson"
fails sample-malformed 1 "smp-bad.ndjson:2" "$ATR" sample --size 1 "$T/smp-bad.ndjson" -o "$T/smp-x.ndjson"
fails sample-malformed-stdin 1 "^atr: <stdin>:2" sh -c "'$ATR' sample --size 1 - -o '$T/smp-x.ndjson' <'$T/smp-bad.ndjson'"
absent sample-nothing-written "$T/smp-x.ndjson"

# --by resource: the second key is the resource class of the tool steps
# (the class that took most of their time; a minute-long step makes a
# trace long-running), one trace of each class here.
RS=$T/sample-resource
mkdir -p "$RS"
rs_trace() {  # ID COMMAND DUR_MS
    printf '{"format":"atr-trace/1","trace_id":"%s","steps":[{"kind":"llm","input_tokens":10,"output_tokens":2},{"kind":"tool","tool":"bash","command":"%s","dur_ms":%s},{"kind":"tool","tool":"bash","command":"grep -r x .","dur_ms":100}]}\n' "$1" "$2" "$3"
}
{ rs_trace long "sleep 70" 70000; rs_trace bursty "pytest -q" 5000; rs_trace memory "node server.js" 3000
  rs_trace cpu "python3 run.py" 2000; rs_trace io "cat README" 50; } >"$RS/five.ndjson"
ok sample-by-resource "$ATR" sample --size 5 --by resource "$RS/five.ndjson" -o "$RS/out.ndjson"
check sample-by-resource-classes "grep -q 'resource class' '$T/err' && for c in long-running bursty memory cpu io; do grep -Eq \"^  [0-9]+-[0-9]+ +\$c +1 +1\\\$\" '$T/err' || exit 1; done"
fails sample-by-bad 2 '--by wants tool or resource' "$ATR" sample --size 5 --by cpu "$RS/five.ndjson" -o "$RS/x.ndjson"
