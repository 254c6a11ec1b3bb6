# test-sweep.sh - `atr sweep` on the simulator: the table and the result
# JSON are golden for a seed (a small generated workload, an SLO that makes
# the bisection run), the same bytes twice, traces as the workload, and
# one clear line with exit 2 for each kind of bad usage.
SW=$T/sweep
mkdir -p "$SW"
SIM=sim:h100/llama-3.1-8b

golden "sweep table" "$DATA/sweep/gen-slo.golden" \
    "$ATR" sweep --generate 40:256:64 --target $SIM --rates 3 --seed 1 --arrival poisson \
    --slo ttft_p99=38ms,tpot_p99=20ms -o "$SW/a.json"
golden "sweep result json" "$DATA/sweep/gen-slo.json" cat "$SW/a.json"
ok "sweep again" "$ATR" sweep -q -g 40:256:64 -t $SIM --rates 3 --seed 1 --arrival poisson \
    --slo ttft_p99=38ms,tpot_p99=20ms -o "$SW/b.json"
check "sweep deterministic" "cmp '$SW/a.json' '$SW/b.json'"
check "sweep -q prints nothing" "[ ! -s '$T/out' ] && [ ! -s '$T/err' ]"
check "sweep result parses" "python3 -c \"import json; d = json.load(open('$SW/a.json')); \
assert d['format'] == 'atr-sweep/1'; k = [r['kind'] for r in d['runs']]; \
assert k[:5] == ['synchronous', 'throughput', 'rate', 'rate', 'rate'], k; \
assert 'bisect' in k; assert d['goodput']['goodput_rate'] > 0\""

ok "sweep progress" "$ATR" sweep -g 10 -t $SIM --rates 2 -o "$SW/c.json"
check "sweep progress on stderr" "grep -q '^atr: sweep: run 1/4 synchronous' '$T/err' && \
[ \$(grep -c '^atr: sweep: run' '$T/err') = 4 ]"
check "sweep without slo: goodput null" "grep -q '\"slo\":null' '$SW/c.json' && \
grep -q '\"goodput\":null' '$SW/c.json'"

ok "sweep none meets" "$ATR" sweep -g 10 -t $SIM --rates 2 --slo ttft_p50=1ms -o "$SW/d.json"
check "sweep says none meets" "grep -q '^goodput rate: none' '$T/out'"

ok "sweep traces" "$ATR" sweep "$DATA/gen/chat-seed7.ndjson" -t $SIM --rates 2 -q \
    --policy prefix-cache -o "$SW/e.json"
check "sweep traces workload" "grep -q '\"kind\":\"traces\"' '$SW/e.json' && \
grep -q '\"policy\":\"prefix-cache\"' '$SW/e.json'"

fails "sweep bad slo key" 2 "^atr sweep: --slo: unknown key 'ttft_p95'" \
    "$ATR" sweep -g 5 -t $SIM --slo ttft_p95=1ms -o "$SW/x.json"
fails "sweep bad slo value" 2 "^atr sweep: --slo: '5' wants a duration" \
    "$ATR" sweep -g 5 -t $SIM --slo ttft_p99=5 -o "$SW/x.json"
fails "sweep no workload" 2 "^atr sweep: missing workload" \
    "$ATR" sweep -t $SIM -o "$SW/x.json"
fails "sweep bad generate" 2 "^atr sweep: --generate wants N" \
    "$ATR" sweep -g 5:1 -t $SIM -o "$SW/x.json"
fails "sweep bad target" 2 "^atr sweep: --target wants" \
    "$ATR" sweep -g 5 -t bogus -o "$SW/x.json"
fails "sweep unknown profile" 2 "^atr sweep: profile \"nope/x\"" \
    "$ATR" sweep -g 5 -t sim:nope/x -o "$SW/x.json"
fails "sweep no target" 2 "^atr sweep: missing --target" "$ATR" sweep -g 5 -o "$SW/x.json"
fails "sweep no output" 2 "^atr sweep: missing -o" "$ATR" sweep -g 5 -t $SIM
fails "sweep bad rates" 2 "^atr sweep: --rates wants" \
    "$ATR" sweep -g 5 -t $SIM --rates 0 -o "$SW/x.json"
fails "sweep bad arrival" 2 "^atr sweep: --arrival wants constant or poisson, not 'gamma'" \
    "$ATR" sweep -g 5 -t $SIM --arrival gamma -o "$SW/x.json"
absent "sweep bad usage writes nothing" "$SW/x.json"

# Constant arrivals are the default (GuideLLM's): recorded, and a different
# schedule from Poisson's at the same rates.
ok "sweep constant arrivals" "$ATR" sweep -q -g 40:256:64 -t $SIM --rates 3 --seed 1 -o "$SW/k.json"
check "sweep constant is the default and differs from poisson" "python3 -c \"
import json; k = json.load(open('$SW/k.json')); p = json.load(open('$SW/a.json'))
assert k['workload']['arrival'] == 'constant' and p['workload']['arrival'] == 'poisson', (k['workload'], p['workload'])
kr = [r['metrics']['duration_s'] for r in k['runs'] if r['kind'] == 'rate']
pr = [r['metrics']['duration_s'] for r in p['runs'] if r['kind'] == 'rate']
assert len(kr) == 3 and kr != pr, (kr, pr)
\""
