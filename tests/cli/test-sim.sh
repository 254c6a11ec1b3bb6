# test-sim.sh - atr sim run: the fidelity check through the CLI,
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
fails "sim unknown gpu" 1 "unknown GPU" "$ATR" sim run "$S/w.ndjson" --profile b200/llama-3.1-8b
fails "sim model too big" 1 "does not fit" "$ATR" sim run "$S/w.ndjson" --profile h100/llama-3-70b
fails "sim bad trace" 1 "nope.ndjson: No such file" "$ATR" sim run "$S/nope.ndjson" --profile h100/llama-3.1-8b
# --goodput takes several words, as vLLM's does.
ok "goodput as separate words" "$ATR" sim run -q "$S/w.ndjson" --rate inf --profile h100/llama-3.1-8b \
    --goodput ttft:600 tpot:30 e2el:3000 --save-result "$S/good.json"
check "goodput SLOs all read" "python3 -c \"import json; g=json.load(open('$S/good.json'))['atr']['goodput']; assert g['slo_ms']=={'ttft':600.0,'tpot':30.0,'e2el':3000.0}, g\""
fails "goodput junk" 2 "--goodput wants" "$ATR" sim run "$S/w.ndjson" --profile h100/llama-3.1-8b --goodput ttft:fast
