# test-exit-codes.sh - wrong usage exits 2 with one line that names the
# command as typed, for every command, decided before any work (a missing
# input is never read); options that would be ignored are usage errors
# (issue 11, items 9, 12, 13).
X=$T/exit-codes
mkdir -p "$X"
P=h100/llama-3.1-8b
W=$X/w.ndjson
ok "exit: a workload" "$ATR" gen -q --kind requests --traces 3 --seed 4 -o "$W"

# Each command's unknown option and option without its value: one line.
unknown() {    # unknown NAME PREFIX CMD...: CMD --bogus fails naming PREFIX
    name=$1 prefix=$2; shift 2
    fails "exit: $name unknown option" 2 "^atr $prefix: unknown option '--bogus' \\(try 'atr help" \
        "$@" --bogus
}
unknown convert convert "$ATR" convert "$W" -o "$X/o.ndjson"
unknown validate validate "$ATR" validate "$W"
unknown stats stats "$ATR" stats "$W"
unknown gen gen "$ATR" gen --kind swe -n 1 -o -
unknown sample sample "$ATR" sample "$W" --size 1 -o -
unknown "replay tools" "replay tools" "$ATR" replay tools "$W" --out "$X/r"
unknown "replay llm" "replay llm" "$ATR" replay llm "$W" --target sim:$P
unknown "sim run" "sim run" "$ATR" sim run "$W" --profile $P
unknown "sim serve" "sim serve" timeout 20 "$ATR" sim serve --profile $P --port 0
unknown compare compare "$ATR" compare "$W"
unknown "compare --run" compare "$ATR" compare --run "$W" --target sim:$P
unknown "router train" router "$ATR" router train "$W" --profile $P -o "$X/m.json"
unknown "router eval" router "$ATR" router eval "$W" --model "$X/m.json"
fails "exit: convert -o without a value" 2 "^atr convert: option '-o' needs a value" \
    "$ATR" convert "$W" -o
fails "exit: sim run --profile without a value" 2 "^atr sim run: option '--profile' needs a value" \
    "$ATR" sim run "$W" --profile
fails "exit: sim serve --port without a value" 2 "^atr sim serve: option '--port' needs a value" \
    timeout 20 "$ATR" sim serve --profile $P --port

# Commands, modes and help pages that do not exist.
"$ATR" >/dev/null 2>&1; st=$?
check "exit: no command" "[ $st -eq 2 ]"
fails "exit: unknown command" 2 "^atr: no command 'nope'" "$ATR" nope
fails "exit: help of an unknown command" 2 "^atr: no command 'nope'" "$ATR" help nope
fails "exit: sim without a mode" 2 "^atr sim: wants a mode" "$ATR" sim
fails "exit: replay without a mode" 2 "^atr replay: wants a mode" "$ATR" replay
fails "exit: router without a mode" 2 "^atr router: wants a mode" "$ATR" router

# Profiles and tensor parallelism (item 13): checked before the trace is
# read, so a missing trace is not what is reported.
N=$X/nope.ndjson
fails "exit: sim run unknown profile" 2 "^atr sim run: profile \"nope\": expected GPU/MODEL" \
    "$ATR" sim run "$N" --profile nope
fails "exit: sim run unknown model" 2 "^atr sim run: profile \"h100/nope\": unknown model" \
    "$ATR" sim run "$N" --profile h100/nope
fails "exit: sim run --tp 3" 2 "^atr sim run: --tp 3 does not suit llama-3.1-8b" \
    "$ATR" sim run "$N" --profile $P --tp 3
fails "exit: compare --run unknown profile" 2 "^atr compare: profile \"nope\"" \
    "$ATR" compare --run "$N" --target sim:nope
fails "exit: compare --run --tp 3" 2 "^atr compare: --tp 3 does not suit" \
    "$ATR" compare --run "$N" --target sim:$P --tp 3
fails "exit: compare --run without a target" 2 "^atr compare: --run wants --target sim:GPU/MODEL" \
    "$ATR" compare --run "$N"
fails "exit: replay llm unknown sim profile" 2 "^atr replay llm: profile \"nope\"" \
    "$ATR" replay llm "$N" --target sim:nope
fails "exit: replay llm --tp 3" 2 "^atr replay llm: --tp 3 does not suit" \
    "$ATR" replay llm "$N" --target sim:$P --tp 3
fails "exit: router train unknown profile" 2 "^atr router: profile \"nope\"" \
    "$ATR" router train "$N" --profile nope -o "$X/m.json"
fails "exit: router train --tp 3" 2 "^atr router: --tp 3 does not suit" \
    "$ATR" router train "$N" --profile $P --tp 3 -o "$X/m.json"
fails "exit: sim serve unknown profile" 2 "^atr sim serve: profile \"nope\"" \
    timeout 20 "$ATR" sim serve --profile nope --port 0
fails "exit: sim serve --tp 3" 2 "^atr sim serve: --tp 3 does not suit" \
    timeout 20 "$ATR" sim serve --profile $P --tp 3 --port 0

# Policies and their options (items 9, 13).
fails "exit: bad policy option value" 2 "^atr sim run: policy compaction: budget wants a number" \
    "$ATR" sim run "$N" --profile $P --policy compaction --policy-options budget=abc
fails "exit: policy option out of range" 2 "^atr sim run: policy max-tokens: quantile wants" \
    "$ATR" sim run "$N" --profile $P --policy max-tokens --policy-options quantile=2
fails "exit: unknown policy option key" 2 "^atr compare: policy naive: unknown option 'budget'" \
    "$ATR" compare --run "$N" --target sim:$P --policy naive --policy-options budget=5
fails "exit: option of a policy not in the run" 2 "'compacton\\.budget=5' is for a policy not in the run" \
    "$ATR" sim run "$N" --profile $P --policy naive,compaction --policy-options compacton.budget=5
fails "exit: --policy-options without --policy" 2 "^atr sim run: --policy-options wants --policy" \
    "$ATR" sim run "$N" --profile $P --policy-options budget=5
fails "exit: replay llm --policy-options without --policy" 2 \
    "^atr replay llm: --policy-options wants --policy" \
    "$ATR" replay llm "$N" --target sim:$P --policy-options budget=5
fails "exit: replay llm bad policy option value" 2 "^atr replay llm: policy compaction: budget" \
    "$ATR" replay llm "$N" --target sim:$P --policy compaction --policy-options budget=x
ok "exit: a policy's own option works" "$ATR" sim run -q "$W" --profile $P \
    --policy naive,compaction --policy-options compaction.budget=10000

# The schedule: options that another one would make meaningless (item 9).
fails "exit: --burstiness without --rate" 2 "^atr sim run: --burstiness shapes Poisson gaps" \
    "$ATR" sim run "$N" --profile $P --burstiness 2
fails "exit: --burstiness with --rate inf" 2 "--burstiness shapes Poisson gaps" \
    "$ATR" sim run "$N" --profile $P --rate inf --burstiness 0.5
fails "exit: --burstiness with constant arrivals" 2 "--burstiness shapes Poisson gaps" \
    "$ATR" sim run "$N" --profile $P --arrival constant --rate 2 --burstiness 2
fails "exit: --arrival trace --rate" 2 "^atr sim run: --arrival trace takes no --rate" \
    "$ATR" sim run "$N" --profile $P --arrival trace --rate 2
fails "exit: --rate, then --arrival trace" 2 "--arrival trace takes no --rate" \
    "$ATR" sim run "$N" --profile $P --rate 2 --arrival trace
fails "exit: --arrival burst --rate" 2 "--arrival burst takes no --rate" \
    "$ATR" sim run "$N" --profile $P --arrival burst --rate 2
fails "exit: --arrival constant --rate inf" 2 "--arrival constant wants a finite --rate" \
    "$ATR" sim run "$N" --profile $P --arrival constant --rate inf
fails "exit: replay llm --burstiness without --rate" 2 "^atr replay llm: --burstiness" \
    "$ATR" replay llm "$N" --target sim:$P --burstiness 2
fails "exit: router --arrival trace --rate" 2 "^atr router: --arrival trace takes no --rate" \
    "$ATR" router train "$N" --profile $P -o "$X/m.json" --arrival trace --rate 2
ok "exit: --rate with --burstiness" "$ATR" sim run -q "$W" --profile $P --rate 2 --burstiness 0.5
ok "exit: --arrival constant --rate" "$ATR" sim run -q "$W" --profile $P --arrival constant --rate 2
ok "exit: --arrival poisson --rate inf" "$ATR" sim run -q "$W" --profile $P --arrival poisson --rate inf

# sim serve: fixed latencies want both --ttft and --itl.
fails "exit: sim serve --ttft alone" 2 "^atr sim serve: --ttft alone: fixed latencies want both" \
    timeout 20 "$ATR" sim serve --ttft 50 --port 0
fails "exit: sim serve --itl alone" 2 "^atr sim serve: --itl alone: fixed latencies want both" \
    timeout 20 "$ATR" sim serve --itl 5 --port 0
fails "exit: sim serve --profile with --ttft" 2 "^atr sim serve: wants either --profile" \
    timeout 20 "$ATR" sim serve --profile $P --ttft 50 --itl 5 --port 0

# A usage error leaves nothing behind.
fails "exit: usage error writes nothing" 2 "^atr sim run: --arrival trace takes no --rate" \
    "$ATR" sim run "$W" --profile $P --arrival trace --rate 2 --save-result "$X/none.json"
absent "exit: no result of a usage error" "$X/none.json"

# ---- issue 26: messages a newcomer can act on ----
# A mode that does not exist is named, with the valid ones.
fails "exit: replay names an unknown mode" 2 "^atr replay: wants a mode, tools, llm or agent, not 'foo'" \
    "$ATR" replay foo
fails "exit: sim names an unknown mode" 2 "^atr sim: wants a mode, run, serve or calibrate, not 'bogus'" \
    "$ATR" sim bogus
fails "exit: bench names an unknown mode" 2 "^atr bench: wants a mode, run, report or history, not 'x'" \
    "$ATR" bench x
fails "exit: router names an unknown mode" 2 \
    "^atr router: wants a mode, train, eval or decide, not 'x'" "$ATR" router x
fails "exit: sim without a mode lists them" 2 "^atr sim: wants a mode: run, serve or calibrate " "$ATR" sim

# Bad option values are usage errors (2), decided before any file is read.
fails "exit: router decide unknown feature" 2 \
    "^atr router: --features:1:1: expected a feature name .*not 'bogus'" \
    "$ATR" router decide --model "$N" --features bogus=1
for c in "sim run $N --profile $P" "replay llm $N --target sim:$P" \
         "router train $N --profile $P -o $X/m.json"; do
    fails "exit: $c --rate 1e-300" 2 "--rate wants requests per second >= 1e-06" \
        "$ATR" $c --rate 1e-300
done

# validate on a source format says what it is and to convert it first.
for f in swe-agent/function_calling_simple.traj openhands/basic.json \
         mini-swe-agent/github_issue.traj.json openai-chat/mixed-rows.jsonl \
         mooncake/synthetic_trace_head200.jsonl azure/AzureLLMInferenceTrace_code.csv \
         burstgpt/burstgpt_sample.csv playwright/trace-1.37.zip; do
    fmt=${f%%/*}
    fails "exit: validate names $fmt" 1 \
        ": this is the $fmt format \\([^)]*\\), not atr-trace: run atr convert first \\(atr convert .* -o OUT\\.ndjson\\)$" \
        "$ATR" validate "$DATA/$f"
done

# A server that is down is said to be down, without the --model hint; the
# hint stays for a server that answers but lists no model.
DOWN=http://127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fails "exit: replay llm, server down" 1 "^atr: the server at $DOWN is not reachable \\(Connection refused\\)$" \
    "$ATR" replay llm -q "$W" --target "$DOWN"
fails "exit: sweep, server down" 1 "^atr: the server at $DOWN is not reachable \\(Connection refused\\)$" \
    "$ATR" sweep -q "$W" --target "$DOWN" -o "$X/sw.json"
fails "exit: replay llm --model, server down" 1 \
    "^atr: warm-up request failed \\(connect: the server is not reachable: Connection refused" \
    "$ATR" replay llm -q "$W" --target "$DOWN" --model m
cat >"$X/no-models.py" <<'PY'
# Answers 404 to everything (a server without /v1/models); prints its port.
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$X/no-models.py" >"$X/no-models.port" &
NM_PID=$!
deadline=$(($(date +%s) + 20))
while [ ! -s "$X/no-models.port" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.05; done
NM=http://127.0.0.1:$(cat "$X/no-models.port")
fails "exit: no model list: the --model hint" 1 "^atr: $NM/v1/models: HTTP 404 \\(give --model\\)$" \
    "$ATR" replay llm -q "$W" --target "$NM"
kill "$NM_PID" 2>/dev/null
wait "$NM_PID" 2>/dev/null

# bench report of a missing path names it (test-bench.sh: a result file is read)
fails "exit: bench report of nothing" 1 "nowhere: no such result file or folder$" \
    "$ATR" bench report "$X/nowhere"
