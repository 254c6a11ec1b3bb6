# test-gen.sh - `atr gen`: valid, deterministic output; exact request sizes;
# bad options. Sourced by run.sh ($ATR, $DATA, $T).

ok gen-swe "$ATR" gen --kind swe --traces 4 --seed 3 -o "$T/gen-a.ndjson"
ok gen-swe-validates "$ATR" validate "$T/gen-a.ndjson"
check gen-swe-count "[ \$(wc -l <'$T/gen-a.ndjson') -eq 4 ]"
ok gen-swe-again "$ATR" gen --kind swe --traces 4 --seed 3 -q -o "$T/gen-b.ndjson"
check gen-same-seed-same-bytes "cmp -s '$T/gen-a.ndjson' '$T/gen-b.ndjson'"
ok gen-swe-seed4 "$ATR" gen --kind swe --traces 4 --seed 4 -q -o "$T/gen-c.ndjson"
check gen-other-seed-differs "! cmp -s '$T/gen-a.ndjson' '$T/gen-c.ndjson'"
# trace i does not depend on how many traces follow
ok gen-swe-two "$ATR" gen --kind swe --traces 2 --seed 3 -q -o "$T/gen-d.ndjson"
check gen-prefix-of-longer "head -n 2 '$T/gen-a.ndjson' | cmp -s - '$T/gen-d.ndjson'"
check gen-swe-has-tools "grep -q '\"tool\":\"bash\"' '$T/gen-a.ndjson' && grep -q '\"command\":\"' '$T/gen-a.ndjson'"

# Golden outputs pin the bytes for a seed across machines and versions.
golden gen-golden-requests "$DATA/gen/requests-seed7.ndjson" \
    "$ATR" gen --kind requests --traces 3 --seed 7 --input-tokens 40 --output-tokens 5 -o -
golden gen-golden-chat "$DATA/gen/chat-seed7.ndjson" "$ATR" gen --kind chat --traces 1 --seed 7 -o -
golden gen-golden-swe "$DATA/gen/swe-seed7.ndjson" "$ATR" gen --kind swe --traces 1 --seed 7 -o -

# sub-agents: a DAG in atr-trace/1.1; deterministic; no sub-agents asked =
# the same bytes as before the option existed
golden gen-golden-swe-subagents "$DATA/gen/swe-subagents-seed7.ndjson" \
    "$ATR" gen --kind swe --traces 1 --seed 7 --subagent-prob 0.1 --subagent-fanout 2 -o -
ok gen-swe-prob-zero "$ATR" gen --kind swe --traces 1 --seed 7 --subagent-prob 0 -q -o "$T/gen-p0.ndjson"
check gen-swe-prob-zero-same "cmp '$T/gen-p0.ndjson' '$DATA/gen/swe-seed7.ndjson'"
ok gen-swe-subagents "$ATR" gen --kind swe --traces 6 --seed 3 --subagent-prob 0.3 \
    --subagent-fanout 3 --subagent-depth 2 -q -o "$T/gen-sub.ndjson"
ok gen-swe-subagents-validate "$ATR" validate "$T/gen-sub.ndjson"
ok gen-swe-subagents-again "$ATR" gen --kind swe --traces 6 --seed 3 --subagent-prob 0.3 \
    --subagent-fanout 3 --subagent-depth 2 -q -o "$T/gen-sub2.ndjson"
check gen-swe-subagents-deterministic "cmp '$T/gen-sub.ndjson' '$T/gen-sub2.ndjson'"
ok gen-swe-subagents-convert "$ATR" convert "$T/gen-sub.ndjson" -q -o "$T/gen-sub-rt.ndjson"
check gen-swe-subagents-round-trip "cmp '$T/gen-sub.ndjson' '$T/gen-sub-rt.ndjson'"
# the graph: parents earlier and started no later; a fork's sub-agents
# start at one llm step of their parent agent; a join waits for 3 reports
# (the sub-agents' last llm steps); depth 2 names sub-agents "sub-N.M"
check gen-swe-subagents-graph "python3 -c \"
import json
joins = forks = deep = 0
for l in open('$T/gen-sub.ndjson'):
    t = json.loads(l); st = t['steps']
    assert t['format'] == 'atr-trace/1.1'
    first = {}
    for s in st:
        ps = s.get('parents', [s['i'] - 1] if s['i'] else [])
        assert all(p < s['i'] and st[p]['t_ms'] <= s['t_ms'] for p in ps), s['i']
        a = s.get('agent')
        if a and a not in first:
            first[a] = s
            assert len(ps) == 1 and st[ps[0]]['kind'] == 'llm'
            assert st[ps[0]].get('agent') == (a.rsplit('.', 1)[0] if '.' in a else None)
            forks += 1; deep += '.' in a
        if len(ps) > 1:
            joins += 1
            assert len(ps) == 3 and all(st[p]['kind'] == 'llm' and st[p].get('agent') for p in ps)
    assert t['meta']['subagents'] == len(first)
assert forks > 10 and joins > 3 and deep > 0, (forks, joins, deep)\""
fails gen-subagent-prob-bad 2 "--subagent-prob wants a number 0..1" \
    "$ATR" gen --kind swe --traces 1 --subagent-prob 2 -o "$T/gen-x.ndjson"
fails gen-subagent-fanout-bad 2 "--subagent-fanout wants an integer 1..16" \
    "$ATR" gen --kind swe --traces 1 --subagent-prob 0.5 --subagent-fanout 17 -o "$T/gen-x.ndjson"
fails gen-subagent-not-swe 2 "--subagent-prob, --subagent-fanout and --subagent-depth are for --kind swe" \
    "$ATR" gen --kind chat --traces 1 --subagent-prob 0.5 -o "$T/gen-x.ndjson"
absent gen-subagent-not-swe-nothing "$T/gen-x.ndjson"
fails gen-subagent-depth-bad 2 "--subagent-depth wants an integer 1..4" \
    "$ATR" gen --kind swe --traces 1 --subagent-prob 0.5 --subagent-depth 0 -o "$T/gen-x.ndjson"

ok gen-chat "$ATR" gen --kind chat --traces 20 -o "$T/gen-chat.ndjson"
ok gen-chat-validates "$ATR" validate "$T/gen-chat.ndjson"
check gen-chat-no-tools "! grep -q '\"kind\":\"tool\"' '$T/gen-chat.ndjson'"

# requests: exact sizes, every trace, all at 0 with --rate inf
ok gen-requests "$ATR" gen --kind requests --traces 50 --input-tokens 300 --output-tokens 17 \
    --shared-prefix 100 --rate inf --expand -o "$T/gen-req.ndjson"
ok gen-requests-validates "$ATR" validate "$T/gen-req.ndjson"
check gen-requests-input "[ \$(grep -c '\"input_tokens\":300,' '$T/gen-req.ndjson') -eq 50 ]"
check gen-requests-output "[ \$(grep -c '\"output_tokens\":17,' '$T/gen-req.ndjson') -eq 50 ]"
check gen-requests-rate-inf "[ \$(grep -c '\"start_ms\":0,' '$T/gen-req.ndjson') -eq 50 ]"
# 100 shared tokens = 6 full blocks of 16 in common, the 7th differs
check gen-requests-shared "[ \$(sed 's/.*hash_ids\":\[//' '$T/gen-req.ndjson' | cut -d, -f1-6 | sort -u | wc -l) -eq 1 ] && [ \$(sed 's/.*hash_ids\":\[//' '$T/gen-req.ndjson' | cut -d, -f1-7 | sort -u | wc -l) -eq 50 ]"
ok gen-keep-content "$ATR" gen --kind requests --traces 2 --keep-content -o "$T/gen-kc.ndjson"
check gen-keep-content-messages "grep -q '\"messages\":\[{\"role\":\"user\"' '$T/gen-kc.ndjson'"
ok gen-rate "$ATR" gen --kind requests --traces 5 --rate 0.5 -o "$T/gen-rate.ndjson"
# requests with ranges: each request draws its own counts, uniformly in
# LO..HI (both ends reached), the reply's max_tokens with it; a range of one
# value is the exact count, byte for byte.
ok gen-requests-range "$ATR" gen --kind requests --traces 400 --input-tokens 20-30 --output-tokens 1-4 \
    --rate inf -o "$T/gen-range.ndjson"
check gen-requests-range-bounds "python3 -c \"
import json
s = [json.loads(l)['steps'][0] for l in open('$T/gen-range.ndjson')]
i = sorted({x['input_tokens'] for x in s}); o = sorted({x['output_tokens'] for x in s})
assert i == list(range(20, 31)) and o == [1, 2, 3, 4], (i, o)
assert all(x['max_tokens'] == x['output_tokens'] for x in s)
assert 23.5 < sum(x['input_tokens'] for x in s) / len(s) < 26.5\""
ok gen-requests-range-again "$ATR" gen --kind requests --traces 400 --input-tokens 20-30 --output-tokens 1-4 \
    --rate inf -o "$T/gen-range2.ndjson"
check gen-requests-range-deterministic "cmp '$T/gen-range.ndjson' '$T/gen-range2.ndjson'"
ok gen-requests-range-one "$ATR" gen --kind requests --traces 50 --input-tokens 300-300 --output-tokens 17-17 \
    --shared-prefix 100 --rate inf --expand -o "$T/gen-req1.ndjson"
check gen-requests-range-one-is-exact "cmp '$T/gen-req.ndjson' '$T/gen-req1.ndjson'"
check gen-rate-spread "[ \$(grep -c '\"start_ms\":0,' '$T/gen-rate.ndjson') -eq 1 ]"

# bad options: usage errors, nothing written
fails gen-bad-kind 2 "unknown kind 'foo'" "$ATR" gen --kind foo --traces 2 -o "$T/gen-x.ndjson"
fails gen-traces-zero 2 "--traces wants" "$ATR" gen --kind swe --traces 0 -o "$T/gen-x.ndjson"
fails gen-traces-junk 2 "--traces wants" "$ATR" gen --kind swe --traces 12x -o "$T/gen-x.ndjson"
fails gen-no-kind 2 "missing --kind" "$ATR" gen --traces 2 -o "$T/gen-x.ndjson"
fails gen-no-output 2 "missing -o" "$ATR" gen --kind swe --traces 2
fails gen-bad-rate 2 "--rate wants" "$ATR" gen --kind swe --traces 2 --rate 0 -o "$T/gen-x.ndjson"
fails gen-bad-seed 2 "--seed wants" "$ATR" gen --kind swe --traces 2 --seed -1 -o "$T/gen-x.ndjson"
fails gen-input-too-small 2 "--input-tokens must be more than" \
    "$ATR" gen --kind requests --traces 2 --input-tokens 3 -o "$T/gen-x.ndjson"
fails gen-shared-too-big 2 "--input-tokens must be more than" \
    "$ATR" gen --kind requests --traces 2 --input-tokens 100 --shared-prefix 100 -o "$T/gen-x.ndjson"
for bad in 0 5-3 3- -3 x 1-10000001 20000000 1-2-3 ' 5'; do
    fails "gen-bad-token-range '$bad'" 2 "--input-tokens wants an integer 1..10000000 or a range LO-HI" \
        "$ATR" gen --kind requests --traces 2 --input-tokens "$bad" -o "$T/gen-x.ndjson"
done
fails gen-bad-output-range 2 "--output-tokens wants" \
    "$ATR" gen --kind requests --traces 2 --output-tokens 9-8 -o "$T/gen-x.ndjson"
fails gen-range-below-framing 2 "--input-tokens must be more than" \
    "$ATR" gen --kind requests --traces 2 --input-tokens 1-8192 -o "$T/gen-x.ndjson"
absent gen-nothing-written "$T/gen-x.ndjson"
fails gen-unwritable 1 "." "$ATR" gen --kind swe --traces 2 -o "$T/no-such-dir/out.ndjson"
absent gen-unwritable-absent "$T/no-such-dir/out.ndjson"
