# test-llama-policy.sh - runtime policies on a real engine: two llama-server
# replicas of atr's tiny random-weight model, a few short agent sessions
# under naive, prefix-cache and prefix-route (bench/llama-policy/run.sh,
# what `make demo` runs), checked on what the server itself reports
# (cached_tokens) and on where each request went. No latency is asserted.
LLAMA=$(llama_bin) || { echo "skip: $LLAMA"; return 0; }
LP=$T/llama-policy
# Four sessions of three turns (replies cut to 8 tokens) on two replicas
# of two slots, one repeat.
ok "policies on two llama-server replicas" env REPEATS=1 SESSIONS=4 TURNS=3 REPLY=8 \
    sh "$ROOT/bench/llama-policy/run.sh" "$ATR" "$LP"
check "no replica left running" "
    for log in '$LP'/r1-a.log '$LP'/r1-b.log; do
        port=\$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' \"\$log\" | head -n 1)
        [ -n \"\$port\" ] || exit 1
        curl -s -o /dev/null --max-time 2 \"http://127.0.0.1:\$port/health\" && exit 1
    done; exit 0"
check "a result and per-request file per policy, and the simulator's" "
    for p in naive prefix-cache prefix-route; do
        [ -s '$LP/r1.'\$p.json ] && [ -s '$LP/r1-req.'\$p.ndjson ] && [ -s '$LP/sim.'\$p.json ] || exit 1
    done"
# The server's own cached_tokens: naive's unique word after the run word
# leaves only the template's first tokens to match; prefix-cache keeps
# the recorded layout and hits.
check "prefix-cache hits more than naive; naive ~0 beyond its salt" "python3 -c \"
import json
def reqs(p):
    return [json.loads(l) for l in open('$LP/r1-req.' + p + '.ndjson')]
n, c = reqs('naive'), reqs('prefix-cache')
assert len(n) == len(c) == 12 and all(q['success'] for q in n + c)
assert max(q['cached_tokens'] for q in n) <= 8, [q['cached_tokens'] for q in n]
rate = lambda rs: sum(q['cached_tokens'] for q in rs) / sum(q['prompt_tokens'] for q in rs)
assert rate(c) > 0.3 and rate(c) > 10 * rate(n), (rate(c), rate(n))
\""
# prefix-route with slots=2 (run.sh sets it): each session stays on one
# replica, and the four sessions split two and two over the replicas.
check "prefix-route keeps each session on one replica" "python3 -c \"
import json
on = {}
for l in open('$LP/r1-req.prefix-route.ndjson'):
    q = json.loads(l)
    on.setdefault(q['trace_id'], set()).add(q['replica'])
assert len(on) == 4 and all(len(v) == 1 for v in on.values()), on
per = [sum(1 for v in on.values() if r in v) for r in (0, 1)]
assert per == [2, 2], per
\""
ok "compare the real-engine runs" "$ATR" compare "$LP"/r1.*.json "$LP"/sim.*.json
check "the compare table: both targets, each with its three policies" "
    [ \$(grep -c '^| http://127.0.0.1:[0-9]*,http://127.0.0.1:[0-9]* ' '$T/out') -eq 3 ] &&
    [ \$(grep -c '^| sim:' '$T/out') -eq 3 ] && grep -q 'prefix-route' '$T/out'"
check "the measured table beside the simulator's" \
    "grep -q '^| prefix-route | ' '$LP/table.md' && grep -q 'sim TTFT' '$LP/table.md'"
