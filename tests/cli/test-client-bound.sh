# test-client-bound.sh - replay llm says when the client, not the server,
# limited a run (issue 33; exp/client-bound.h): a pool of 2 connections in
# front of a 100 ms server at 300 requests/s is "connection pool
# exhausted", an impossible rate (100k/s) is client-bound whatever the
# reason, a gentle run is not pool-bound, --max-concurrency's waits are
# never the client's fault; the verdict is in the block and in
# --save-result's "client". Only verdicts that cannot depend on the
# machine's load are asserted.
CB=$T/client-bound
mkdir -p "$CB"
"$ATR" sim serve --ttft 100 --itl 5 --port 0 >"$CB/slow.out" 2>"$CB/slow.err" &
SLOW=$!
"$ATR" sim serve --ttft 0 --itl 0 --port 0 >"$CB/fast.out" 2>"$CB/fast.err" &
FAST=$!
port_of() { sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$1" 2>/dev/null; }
wait_for 20 "[ -n \"\$(sed -n 's|.*listening on http://127.0.0.1:\\([0-9]*\\).*|\\1|p' $CB/slow.out)\" ] && [ -n \"\$(sed -n 's|.*listening on http://127.0.0.1:\\([0-9]*\\).*|\\1|p' $CB/fast.out)\" ]"
SP=$(port_of "$CB/slow.out") FP=$(port_of "$CB/fast.out")
"$ATR" gen -q --kind requests --traces 60 --input-tokens 32 --output-tokens 4 --seed 5 -o "$CB/60.ndjson"
"$ATR" gen -q --kind requests --traces 3000 --input-tokens 32 --output-tokens 4 --seed 5 -o "$CB/3000.ndjson"
cat >"$CB/j.py" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["atr"]["client"]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
J="python3 $CB/j.py"

ok client-pool "$ATR" replay llm "$CB/60.ndjson" --target "http://127.0.0.1:$SP" --rate 300 \
    --connections 2 --save-result "$CB/pool.json"
check client-pool-block "grep -q '^CLIENT-BOUND: connection pool exhausted: [0-9]* requests in flight for 2 connections' '$T/out'"
check client-pool-json "$J '$CB/pool.json' 'c[\"client_bound\"] and c[\"connections\"] == 2 and c[\"max_in_flight\"] > 2 and c[\"reason\"].startswith(\"connection pool exhausted\")'"
check client-pool-fields "$J '$CB/pool.json' 'c[\"cpu_per_request_us\"] > 0 and 0 < c[\"busiest_loop\"] < 2 and c[\"p99_send_lag_ms\"] > 100 and c[\"scheduled_rate\"] > 100'"

ok client-flood "$ATR" replay llm "$CB/3000.ndjson" --target "http://127.0.0.1:$FP" --rate 100000 \
    --save-result "$CB/flood.json"
check client-flood-bound "$J '$CB/flood.json' 'c[\"client_bound\"] and c[\"reason\"]' && grep -q '^CLIENT-BOUND: ' '$T/out'"

ok client-gentle "$ATR" replay llm "$CB/60.ndjson" --target "http://127.0.0.1:$FP" --rate 30 \
    --save-result "$CB/gentle.json"
check client-gentle-not-pool "$J '$CB/gentle.json' 'c[\"max_in_flight\"] < c[\"connections\"] == 1024 and not (c[\"reason\"] or \"\").startswith(\"connection pool\")'"
check client-gentle-line "grep -Eq '^(Client: not the bottleneck|CLIENT-BOUND: )' '$T/out'"

# Waits --max-concurrency asks for are not the client's: neither the pool
# nor the send lag is a reason then.
ok client-maxconc "$ATR" replay llm "$CB/60.ndjson" --target "http://127.0.0.1:$SP" --rate 300 \
    --max-concurrency 2 --save-result "$CB/mc.json"
check client-maxconc-not-client "$J '$CB/mc.json' 'not (c[\"reason\"] or \"\").startswith((\"connection pool\", \"send lag\", \"requested rate\"))'"

# The report shows the verdict beside each result's throughput.
ok client-report "$ATR" report "$CB/pool.json" "$CB/gentle.json" -o "$CB/report.html"
check client-report-cell "grep -q '<th>client-bound</th>' '$CB/report.html' && grep -q '<strong>client-bound</strong>: connection pool exhausted' '$CB/report.html'"

# A sim: target runs in virtual time: no client figures.
ok client-sim "$ATR" replay llm "$CB/60.ndjson" --target sim:h100/llama-3.1-8b --save-result "$CB/sim.json"
check client-sim-none "python3 -c 'import json,sys; sys.exit(\"client\" in json.load(open(\"$CB/sim.json\"))[\"atr\"])' && ! grep -q 'CLIENT-BOUND\|not the bottleneck' '$T/out'"
fails client-connections-zero 2 'connections wants 1..65536' "$ATR" replay llm "$CB/60.ndjson" --target "http://127.0.0.1:$FP" --connections 0
kill "$SLOW" "$FAST" 2>/dev/null
wait "$SLOW" "$FAST" 2>/dev/null
