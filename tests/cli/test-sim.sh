# test-sim.sh - atr sim run: the issue's fidelity check through the CLI,
# determinism, sessions with prefix reuse, and bad input.
S=$T/sim
mkdir -p "$S"
ok "gen fidelity workload" "$ATR" gen -q --kind requests --traces 100 --input-tokens 200 --output-tokens 64 --seed 1 -o "$S/w.ndjson"
ok "sim run burst" "$ATR" sim run -q "$S/w.ndjson" --rate inf --profile h100/llama-3.1-8b --save-result "$S/r.json" --requests-out "$S/req1.ndjson"
# Published vLLM on one H100: 45-55 req/s, mean TPOT 23-31 ms; +-20%.
check "fidelity: request throughput" "python3 -c \"import json; r=json.load(open('$S/r.json')); assert 36 <= r['request_throughput'] <= 66, r['request_throughput']\""
check "fidelity: mean TPOT" "python3 -c \"import json; r=json.load(open('$S/r.json')); assert 18.4 <= r['mean_tpot_ms'] <= 37.2, r['mean_tpot_ms']\""
check "vLLM keys" "python3 -c \"import json; r=json.load(open('$S/r.json')); assert r['completed']==100 and r['total_output_tokens']==6400 and r['request_rate']=='inf' and 'p99_itl_ms' in r\""
ok "sim run again" "$ATR" sim run -q "$S/w.ndjson" --rate inf --profile h100/llama-3.1-8b --requests-out "$S/req2.ndjson"
check "deterministic" "cmp '$S/req1.ndjson' '$S/req2.ndjson'"
golden "result block" "$DATA/llm/sim-block.golden" sh -c "'$ATR' sim run '$S/w.ndjson' --rate inf --profile h100/llama-3.1-8b | sed 1d"

# Agent sessions: turns follow each other, shared prefixes hit the cache.
ok "gen swe" "$ATR" gen -q --kind swe --traces 5 --seed 2 -o "$S/swe.ndjson"
ok "sim run sessions" "$ATR" sim run "$S/swe.ndjson" --profile h100/llama-3.1-8b --save-result "$S/swe.json"
check "sessions hit the prefix cache" "grep -Eq 'prefix cache hit rate ([1-9][0-9]|[1-9])\\.' '$T/out'"

fails "sim needs a mode" 2 "wants a mode" "$ATR" sim "$S/w.ndjson"
fails "sim needs a profile" 2 "missing --profile" "$ATR" sim run "$S/w.ndjson"
fails "sim unknown gpu" 2 "unknown GPU" "$ATR" sim run "$S/w.ndjson" --profile b200/llama-3.1-8b
fails "sim model too big" 2 "does not fit" "$ATR" sim run "$S/w.ndjson" --profile h100/llama-3-70b
fails "sim bad trace" 1 "nope.ndjson: No such file" "$ATR" sim run "$S/nope.ndjson" --profile h100/llama-3.1-8b
# --goodput takes several words, as vLLM's does.
ok "goodput as separate words" "$ATR" sim run -q "$S/w.ndjson" --rate inf --profile h100/llama-3.1-8b \
    --goodput ttft:600 tpot:30 e2el:3000 --save-result "$S/good.json"
check "goodput SLOs all read" "python3 -c \"import json; g=json.load(open('$S/good.json'))['atr']['goodput']; assert g['slo_ms']=={'ttft':600.0,'tpot':30.0,'e2el':3000.0}, g\""
fails "goodput junk" 2 "--goodput wants" "$ATR" sim run "$S/w.ndjson" --profile h100/llama-3.1-8b --goodput ttft:fast

# Empty workloads are an error, not a block of zeros (issue 11, item 7).
printf '{"format":"atr-trace/1","trace_id":"t","steps":[{"i":0,"kind":"tool","tool":"bash","command":"true","t_ms":0,"dur_ms":5}]}\n' >"$S/tools.ndjson"
fails "sim run: no llm steps" 1 "no llm steps in .*/tools\\.ndjson$" "$ATR" sim run "$S/tools.ndjson" \
    --profile h100/llama-3.1-8b --save-result "$S/empty.json"
absent "sim run: no llm steps writes nothing" "$S/empty.json"
fails "sim run: no llm steps names every input" 1 "no llm steps in .*/tools\\.ndjson, .*/tools\\.ndjson$" \
    "$ATR" sim run "$S/tools.ndjson" "$S/tools.ndjson" --profile h100/llama-3.1-8b

# Outputs are checked before the work and written all or none (item 10):
# the bad output is named before the missing trace is read, and a good
# output beside a bad one is not left behind.
fails "sim run: outputs checked first" 1 "^atr: /proc/x: " "$ATR" sim run "$S/nope.ndjson" \
    --profile h100/llama-3.1-8b --save-result /proc/x
fails "sim run: bad --requests-out" 1 "/proc/x: " "$ATR" sim run -q "$S/w.ndjson" \
    --profile h100/llama-3.1-8b --save-result "$S/ok.json" --requests-out /proc/x
absent "sim run: bad --requests-out leaves no result" "$S/ok.json"
fails "sim run: bad --iterations-out" 1 "/proc/x: " "$ATR" sim run -q "$S/w.ndjson" \
    --profile h100/llama-3.1-8b --save-result "$S/ok.json" --iterations-out /proc/x
absent "sim run: bad --iterations-out leaves no result" "$S/ok.json"
fails "sim run: bad output of a series" 1 "/proc/x\\.naive: " "$ATR" sim run -q \
    "$S/w.ndjson" --profile h100/llama-3.1-8b --policy naive,prefix-cache \
    --save-result "$S/pol.json" --requests-out /proc/x
absent "sim run: a series with a bad output leaves nothing" "$S/pol.naive.json"
fails "compare --run: bad output" 1 "/proc/x\\.naive: " "$ATR" compare --run "$S/w.ndjson" \
    --target sim:h100/llama-3.1-8b --policy naive,prefix-cache --save-result "$S/cmp.json" \
    --requests-out /proc/x
absent "compare --run: no result left" "$S/cmp.naive.json"
ok "sim run: all outputs written" "$ATR" sim run -q "$S/w.ndjson" --profile h100/llama-3.1-8b \
    --save-result "$S/all.json" --requests-out "$S/all.ndjson" --iterations-out "$S/all-it.ndjson"
check "sim run: every output there" "[ -s '$S/all.json' ] && [ -s '$S/all.ndjson' ] && [ -s '$S/all-it.ndjson' ] && ! ls '$S'/*.tmp.* >/dev/null 2>&1"

# Interrupted (item 14): one "interrupted" line, exit 130, no output left.
# The trace comes through a FIFO held open, so the run is still reading
# when the signal comes; its output temporary shows it has started.
mkfifo "$S/fifo"
"$ATR" sim run "$S/fifo" --profile h100/llama-3.1-8b --save-result "$S/int.json" \
    >"$S/int.out" 2>"$S/int.err" &
sp=$!
exec 3>"$S/fifo"
cat "$S/w.ndjson" >&3
deadline=$(($(date +%s) + 20))
while ! ls "$S"/int.json.tmp.* >/dev/null 2>&1 && [ "$(date +%s)" -lt "$deadline" ]; do :; done
kill -INT "$sp"
wait "$sp"; st=$?
exec 3>&-
check "sim run: SIGINT exits 130" "[ $st -eq 130 ]"
check "sim run: SIGINT says interrupted, once" "[ \"\$(cat '$S/int.err')\" = 'atr: interrupted' ] && [ ! -s '$S/int.out' ]"
absent "sim run: SIGINT leaves no result" "$S/int.json"

# --scheduler v0 (vLLM V0 without chunked prefill): an iteration that
# admits prompts runs only prefills; v1 (default) mixes them with decodes.
ok "sim run: a burst for the schedulers" "$ATR" gen -k requests -n 20 --input-tokens 300 \
    --output-tokens 20 -r 50 -q -o "$S/burst.ndjson"
ok "sim run --scheduler v0" "$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b \
    --scheduler v0 --iterations-out "$S/v0-it.ndjson"
check "sim run --scheduler v0: no step mixes prefill and decodes" \
    "! grep -E '\"prefill_tokens\": [1-9][0-9]*, \"decode_seqs\": [1-9]' '$S/v0-it.ndjson' && grep -q '\"decode_seqs\": [1-9]' '$S/v0-it.ndjson'"
ok "sim run --scheduler v1" "$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b \
    --iterations-out "$S/v1-it.ndjson"
check "sim run --scheduler v1: steps mix prefill and decodes" \
    "grep -Eq '\"prefill_tokens\": [1-9][0-9]*, \"decode_seqs\": [1-9]' '$S/v1-it.ndjson'"
# --scheduler v0 keeps a budget it is given (SGLang's prefill cap, a short
# --max-model-len): no prefill step above it; without one, the model's length.
ok "sim run --scheduler v0, a given budget" "$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b \
    --scheduler v0 --max-num-batched-tokens 4096 --iterations-out "$S/v0b-it.ndjson"
check "sim run --scheduler v0: prefill steps within the given budget" "python3 -c \"
import json
p = [json.loads(l)['prefill_tokens'] for l in open('$S/v0b-it.ndjson')]
assert 0 < max(p) <= 4096, max(p)\""
ok "gen a prompt longer than that budget" "$ATR" gen -q -k requests -n 2 --input-tokens 5000 \
    --output-tokens 4 -r inf -o "$S/long.ndjson"
fails "sim run --scheduler v0: a prompt over the given budget" 1 \
    "request 0 \(5000 prompt \+ 4 output tokens\) is longer than max_num_batched_tokens \(4096\).*use a larger --max-num-batched-tokens, or --skip-oversized" \
    "$ATR" sim run -q "$S/long.ndjson" -p h100/llama-3.1-8b --scheduler v0 --max-num-batched-tokens 4096
fails "sim run --scheduler v0: over budget with --skip-oversized" 1 "every request failed \(first: prompt longer than max_num_batched_tokens\)" \
    "$ATR" sim run -q "$S/long.ndjson" -p h100/llama-3.1-8b --scheduler v0 --max-num-batched-tokens 4096 \
    --skip-oversized --save-result "$S/long.json"
check "sim run --scheduler v0: both rejected, for the budget" "python3 -c \"import json; r=json.load(open('$S/long.json')); assert r['failed']==2 and r['completed']==0 and r['atr']['failures_by_reason']=={'prompt longer than max_num_batched_tokens': 2}, r\""
ok "sim run --scheduler v0: without a budget, the model's length" "$ATR" sim run -q "$S/long.ndjson" \
    -p h100/llama-3.1-8b --scheduler v0 --save-result "$S/long2.json"
check "sim run --scheduler v0: both ran" "python3 -c \"import json; r=json.load(open('$S/long2.json')); assert r['completed']==2, r\""
# --num-scheduler-steps (vLLM V0's multi-step scheduling, with v0 only):
# decode-only batches run in windows; tokens come at a window's end.
ok "sim run --num-scheduler-steps 8" "$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b \
    --scheduler v0 --num-scheduler-steps 8 --iterations-out "$S/ms-it.ndjson" --requests-out "$S/ms-q.ndjson"
check "sim run --num-scheduler-steps 8: decode steps come in windows of 8" "python3 -c \"
import json
it = [json.loads(l) for l in open('$S/ms-it.ndjson')]
runs, n = [], 0
for x in it:
    if x['prefill_tokens'] == 0:
        n += 1
    elif n:
        runs.append(n); n = 0
runs += [n] if n else []
assert runs and all(k % 8 == 0 for k in runs), runs
q = [json.loads(l) for l in open('$S/ms-q.ndjson')]
assert len(q) == 20 and all(r['success'] for r in q), len(q)\""
fails "sim run: --num-scheduler-steps without v0" 2 "--num-scheduler-steps needs --scheduler v0" \
    "$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b --num-scheduler-steps 8
fails "sim run: bad --num-scheduler-steps" 2 "--num-scheduler-steps wants 1..1024" \
    "$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b --scheduler v0 --num-scheduler-steps 0
fails "sim run: bad --scheduler" 2 "--scheduler wants v1 or v0" "$ATR" sim run -q \
    "$S/burst.ndjson" -p h100/llama-3.1-8b --scheduler v2

# ATR_SIM_CONSTANTS overrides the fitted constants (bench/sim-fidelity/fit.py).
ATR_SIM_CONSTANTS=vllm.step_s=0.01 "$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b \
    --save-result "$S/slow.json" >/dev/null 2>&1
"$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b --save-result "$S/base.json" \
    >/dev/null 2>&1
dur() { tr ',' '\n' <"$1" | sed -n 's/^ *"duration": *//p'; }
check "ATR_SIM_CONSTANTS: a 10 ms step slows the run" \
    "awk 'BEGIN { exit !($(dur "$S/slow.json") > 1.2 * $(dur "$S/base.json")) }'"
fails "ATR_SIM_CONSTANTS: an unknown name" 2 "ATR_SIM_CONSTANTS: expected name=value.*\"bogus=1\"" \
    env ATR_SIM_CONSTANTS=bogus=1 "$ATR" sim run -q "$S/burst.ndjson" -p h100/llama-3.1-8b

# The front end tokenises each prompt: vllm.frontend_token_s a prompt token
# lands in TTFT (one request at a time: no queue at the tokeniser), and
# not offline (no API server).
"$ATR" gen -k requests -n 2 --input-tokens 2000 --output-tokens 8 -r 1 -q -o "$S/p2k.ndjson"
ttft() {
    env ATR_SIM_CONSTANTS="vllm.frontend_token_s=$1" "$ATR" sim run -q "$S/p2k.ndjson" \
        -p h100/llama-3.1-8b --max-concurrency 1 ${2:-} --save-result "$S/ft.json" >/dev/null 2>&1
    tr ',' '\n' <"$S/ft.json" | sed -n 's/^ *"mean_ttft_ms": *//p'
}
check "sim run: 1 ms a prompt token adds 2 s to a 2000-token prompt's TTFT" \
    "awk 'BEGIN { d = $(ttft 0.001) - $(ttft 0); exit !(d > 1999.99 && d < 2000.01) }'"
check "sim run --offline: no tokenising front end" \
    "[ $(ttft 0.001 --offline) = $(ttft 0 --offline) ]"

# A fidelity workload with earlier runs takes its figure over the last
# segment, which must be a per-request mean.
printf '%s\n' 'x|held|h100/llama-3.1-8b|2 300 8 inf; 2 600 8 inf|--max-concurrency 1|request_throughput|1|X' \
    > "$S/figs-bad.txt"
fails "fidelity: a throughput after earlier runs" 1 \
    "x: a workload with earlier runs takes a mean_ttft_ms, mean_tpot_ms or mean_e2el_ms figure" \
    sh "$ROOT/bench/sim-fidelity/run.sh" "$ATR" "$S/figs-bad.txt"
for wl in '2 300 8 inf;' '2 300 8 inf; ; 2 600 8 inf' 'two 300 8 inf' '2 300 8' '2 300 8 fast'; do
    printf 'x|held|h100/llama-3.1-8b|%s|--max-concurrency 1|mean_ttft_ms|1|X\n' "$wl" \
        > "$S/figs-bad.txt"
    fails "fidelity: bad workload '$wl'" 1 \
        "figs-bad.txt:1:26: expected a workload \"N IN OUT RATE \[SHARED\]\", segments separated by ;" \
        sh "$ROOT/bench/sim-fidelity/run.sh" "$ATR" "$S/figs-bad.txt"
done
printf '%s\n' 'x|held|h100/llama-3.1-8b|2 300 8 inf; 2 600 8 inf|--max-concurrency 1|mean_ttft_ms|1|X' \
    'y|held|h100/llama-3.1-8b|2 600 8 inf|--max-concurrency 1|mean_ttft_ms|1|X' > "$S/figs.txt"
ok "fidelity: a workload with earlier runs" sh "$ROOT/bench/sim-fidelity/run.sh" "$ATR" "$S/figs.txt"
check "fidelity: the earlier runs' prompts are cached, so the last segment's TTFT is lower" \
    "awk '\$1 == \"x\" { x = \$5 } \$1 == \"y\" { y = \$5 } END { exit !(x > 0 && x < y) }' '$T/out'"

# docs/sim.md's table of every profile is what the simulator gives today.
ok "docs/sim.md's profile table" python3 "$ROOT/tests/cli/sim-profile-table.py" "$ATR" \
    "$ROOT/docs/sim.md"

# docs/sim.md's validation table is what the simulator gives today: every
# figure's simulated value and error, and both sets' summaries.
ok "fidelity figures run" sh "$ROOT/bench/sim-fidelity/run.sh" "$ATR"
cp "$T/out" "$S/fidelity.txt"
ok "docs/sim.md's validation table is current" python3 "$ROOT/tests/cli/sim-doc-table.py" \
    "$ROOT/docs/sim.md" "$S/fidelity.txt"

# The help names every built-in GPU and model: the lists come from the
# binary's own "unknown" errors, so a new profile file must reach the help.
"$ATR" sim run "$S/burst.ndjson" -p h100/no-such-model 2>"$S/known-models" >/dev/null
"$ATR" sim run "$S/burst.ndjson" -p no-such-gpu/llama-3.1-8b 2>"$S/known-gpus" >/dev/null
"$ATR" help sim run >"$S/help" 2>&1
for name in $(sed -n 's/.*(known: \([^)]*\)).*/\1/p' "$S/known-models" "$S/known-gpus" | tr -d ,); do
    check "help of sim run names profile $name" "tr -s ' \\n' '\\n\\n' <'$S/help' | sed 's/[.;]\$//' | grep -qx -- '$name'"
done
check "help lists came from the errors" "[ \$(sed -n 's/.*(known: \\([^)]*\\)).*/\\1/p' '$S/known-models' | tr ',' '\\n' | wc -l) -ge 15 ]"

# Context length (vLLM's rule, atr_context_check, the one sim serve answers
# 400 by): prompt + output over the model's 131072 tokens is refused at
# once, counted in failed with its reason; exactly 131072 runs.
python3 -c "
import json
for i, p in enumerate([200000, 131032, 131033]):
    print(json.dumps({'format': 'atr-trace/1', 'trace_id': 'c%d' % i, 'start_ms': 0,
                      'steps': [{'i': 0, 'kind': 'llm', 't_ms': 0, 'input_tokens': p,
                                 'output_tokens': 40}]}))" >"$S/ctx.ndjson"
ok "sim run: requests over the context" "$ATR" sim run -q "$S/ctx.ndjson" -p h100/llama-3.1-8b \
    --save-result "$S/ctx.json" --requests-out "$S/ctx-req.ndjson"
check "over the context: failed with the reason, the one at the limit ran" "python3 -c \"
import json
r = json.load(open('$S/ctx.json'))
why = \\\"prompt + output longer than the model's context\\\"
assert r['completed'] == 1 and r['failed'] == 2 and r['atr']['failures_by_reason'] == {why: 2}, r
q = {l['trace_id']: l for l in map(json.loads, open('$S/ctx-req.ndjson'))}
assert q['c1']['success'] and q['c1']['prompt_tokens'] == 131032
assert [q[k]['error'] for k in ('c0', 'c2')] == [why, why] and q['c0']['end_s'] == q['c0']['start_s']
\""

ok "sim run --max-model-len, as sim serve's" "$ATR" sim run -q "$S/ctx.ndjson" \
    -p h100/llama-3.1-8b --max-model-len 200040 --stall-timeout 0 --save-result "$S/ctx-long.json"
check "a longer --max-model-len lets all three run" "python3 -c \"
import json; r = json.load(open('$S/ctx-long.json')); assert r['completed'] == 3 and r['failed'] == 0, r\""

# The request timeouts of replay llm's client (--timeout, default 600 s from
# the slot; --stall-timeout, default 60 s without a token, the answer's head
# coming at the slot): 200 prompts of 100k tokens at once queue for ~900 s;
# those without a token at 60 s fail "stall" there, and without the stall
# timeout those not over at 600 s fail "timeout"; either way they leave
# the engine.
python3 -c "
import json
for i in range(200):
    print(json.dumps({'format': 'atr-trace/1', 'trace_id': 'l%d' % i, 'start_ms': 0,
                      'steps': [{'i': 0, 'kind': 'llm', 't_ms': 0, 'input_tokens': 100000,
                                 'output_tokens': 8}]}))" >"$S/long.ndjson"
ok "sim run: a long queue" "$ATR" sim run -q "$S/long.ndjson" -p h100/llama-3.1-8b \
    --save-result "$S/long-stall.json" --requests-out "$S/long-stall-req.ndjson"
check "default stall timeout: 60 s without a token, failed with the reason" "python3 -c \"
import json
r = json.load(open('$S/long-stall.json'))
assert r['completed'] > 0 and r['failed'] > 0 and r['atr']['failures_by_reason'] == {'stall': r['failed']}, r
q = list(map(json.loads, open('$S/long-stall-req.ndjson')))
assert all(l['ttft_ms'] <= 60000 for l in q if l['success'])
assert all(abs(l['end_s'] - l['start_s'] - 60) < 1e-9 for l in q if not l['success'])
\""
ok "sim run: a long queue without the stall timeout" "$ATR" sim run -q "$S/long.ndjson" \
    -p h100/llama-3.1-8b --stall-timeout 0 --save-result "$S/long.json" \
    --requests-out "$S/long-req.ndjson"
check "default timeout: 600 s, failed with the reason" "python3 -c \"
import json
r = json.load(open('$S/long.json'))
assert r['completed'] > 0 and r['failed'] > 0 and r['atr']['failures_by_reason'] == {'timeout': r['failed']}, r
q = list(map(json.loads, open('$S/long-req.ndjson')))
assert all(l['e2el_ms'] <= 600000 for l in q if l['success'])
assert all(abs(l['end_s'] - l['start_s'] - 600) < 1e-9 for l in q if not l['success'])
\""
ok "sim run --timeout 0: none" "$ATR" sim run -q "$S/long.ndjson" -p h100/llama-3.1-8b \
    --timeout 0 --stall-timeout 0 --save-result "$S/long0.json"
check "without a timeout every request runs" "python3 -c \"
import json; r = json.load(open('$S/long0.json')); assert r['completed'] == 200 and r['p99_ttft_ms'] > 600000, r['p99_ttft_ms']\""
ok "replay llm --target sim: --timeout" "$ATR" replay llm -q "$S/long.ndjson" \
    --target sim:h100/llama-3.1-8b --timeout 100 --stall-timeout 0 --save-result "$S/long100.json"
check "replay llm's --timeout holds for a sim target" "python3 -c \"
import json; r = json.load(open('$S/long100.json')); assert r['atr']['failures_by_reason'] == {'timeout': r['failed']} and r['max_e2el_ms' if 'max_e2el_ms' in r else 'p99_e2el_ms'] <= 100000, r\""
fails "sim run --timeout wants seconds" 2 "timeout wants seconds" \
    "$ATR" sim run "$S/long.ndjson" -p h100/llama-3.1-8b --timeout -1

# Rate fields. vLLM's request_rate is requests a second sent whatever the
# server does ("inf": all at once): a trace of single requests has its
# recorded mean rate, not "inf"; sessions of several turns have none (null:
# a later turn waits for an answer). atr.schedule and the block name the
# schedule.
"$ATR" gen -q --kind requests --traces 60 --rate 4 -o "$S/r4.ndjson"
ok "sim run trace-timed" "$ATR" sim run "$S/r4.ndjson" -p h100/llama-3.1-8b --save-result "$S/r4.json"
check "trace-timed: request_rate is the trace's mean arrival rate" "python3 -c \"
import json
t = [json.loads(l)['start_ms'] for l in open('$S/r4.ndjson')]
r = json.load(open('$S/r4.json'))
want = 59 / ((max(t) - min(t)) / 1000)
assert abs(r['request_rate'] - want) < 1e-9 and 2 < want < 8, (r['request_rate'], want)
assert r['atr']['schedule'] == {'arrival': 'trace', 'session_rate': r['request_rate'], 'time_scale': 1.0}
\""
check "trace-timed block: the rate and the schedule" "grep -Eq '^Request rate configured \\(RPS\\): +[2-7]\\.[0-9]{2} *\$' '$T/out' && grep -Eq '^Arrival schedule: +trace *\$' '$T/out'"
ok "sim run multi-turn at a session rate" "$ATR" sim run "$S/swe.ndjson" -p h100/llama-3.1-8b \
    --rate 2 --save-result "$S/swe-r2.json"
check "multi-turn: no request rate, the session rate under atr" "python3 -c \"
import json
r = json.load(open('$S/swe-r2.json'))
assert r['request_rate'] is None, r['request_rate']
assert r['atr']['schedule'] == {'arrival': 'poisson', 'session_rate': 2.0, 'time_scale': 1.0}, r['atr']['schedule']
\""
check "multi-turn block: schedule and session rate, no request rate" "! grep -q '^Request rate configured' '$T/out' && grep -Eq '^Arrival schedule: +poisson *\$' '$T/out' && grep -Eq '^Session start rate \\(/s\\): +2\\.00 *\$' '$T/out'"
