# test-dag.sh - atr-trace/1.1 DAGs (parents, agent): validate, convert
# round trip byte for byte, and every broken graph refused at file:line:col
# with nothing written. Sourced by run.sh ($ATR, $DATA, $T).

D=$DATA/dag
golden dag-validate "$D/validate.golden" sh -c "cd '$D' && '$ATR' validate fork-join.ndjson"
golden dag-round-trip "$D/fork-join.ndjson" "$ATR" convert "$D/fork-join.ndjson" -q -o -
# --expand writes full lists; reading those back and compacting again gives the file
ok dag-expand "$ATR" convert "$D/fork-join.ndjson" --expand -q -o "$T/dag-x.ndjson"
check dag-expand-no-prefix "! grep -q '\"prefix\"' '$T/dag-x.ndjson' && grep -q '\"parents\":\[4,5\]' '$T/dag-x.ndjson'"
golden dag-expand-back "$D/fork-join.ndjson" "$ATR" convert "$T/dag-x.ndjson" -q -o -
# a chain keeps version 1 and has no DAG field
check dag-chain-stays-v1 "grep '\"dag/chain\"' '$D/fork-join.ndjson' | grep -q '\"atr-trace/1\"' && ! grep '\"dag/chain\"' '$D/fork-join.ndjson' | grep -q parents"

# hostile graphs: one line each, the error points at the bad parent
bad() {   # bad NAME STEPS-JSON EXPECTED-ERROR
    printf '{"format":"atr-trace/1.1","trace_id":"x","steps":[%s]}\n' "$2" >"$T/$1.ndjson"
    fails "dag-$1" 1 "^atr: .*$1.ndjson:$3" "$ATR" validate "$T/$1.ndjson"
    fails "dag-$1-convert" 1 "$1.ndjson:$3" "$ATR" convert "$T/$1.ndjson" -q -o "$T/$1.out"
    absent "dag-$1-nothing-written" "$T/$1.out"
}
L='{"kind":"llm"}'
bad forward "$L,{\"kind\":\"llm\",\"parents\":[2]},$L" \
    '1:91: expected a parent of step 1 to be an earlier step \(0\.\.0\)'
bad self "$L,{\"kind\":\"llm\",\"parents\":[1]}" \
    '1:91: expected a parent of step 1 to be an earlier step \(0\.\.0\)'
bad root-parent '{"kind":"llm","parents":[0]}' \
    '1:76: step 0 has no earlier step to wait for \(a root has "parents":\[\]\)'
bad out-of-range "$L,{\"kind\":\"llm\",\"parents\":[99999999999]}" \
    '1:91: expected a parent of step 1 to be an earlier step'
bad negative "$L,{\"kind\":\"llm\",\"parents\":[-1]}" '1:91: expected a parent of step 1'
bad fraction "$L,{\"kind\":\"llm\",\"parents\":[0.5]}" '1:91: expected a parent of step 1'
bad repeated "$L,$L,{\"kind\":\"llm\",\"parents\":[1,0,1]}" '1:110: parent 1 of step 2 repeats'
bad not-array "$L,{\"kind\":\"llm\",\"parents\":1}" '1:90: expected "parents" to be an array of step indices'
bad agent-empty '{"kind":"llm","agent":""}' '1:73: expected "agent" to be a non-empty string'
bad agent-type '{"kind":"llm","agent":7}' '1:73: expected "agent" to be a non-empty string'
# a cycle needs a forward edge, refused above; a join on a step that never
# appears is the out-of-range case. Time order still holds with parents:
bad time-order '{"kind":"llm","t_ms":5},{"kind":"llm","parents":[0],"t_ms":4}' \
    '1:.*: step 1 starts at 4 ms, before step 0 \(5 ms\): steps must be in time order'
