# test-router.sh - atr router train|eval: a model trained on a small
# generated workload, deterministic for a seed, evaluated with the learned
# policy in the simulator; bad model files and usage errors.
R=$T/router
mkdir -p "$R"
ok "router gen swe" "$ATR" gen -q --kind swe --traces 12 --seed 3 -o "$R/swe.ndjson"
ok "router train" "$ATR" router train "$R/swe.ndjson" --profile rtx3090/qwen3-4b-awq --seed 3 --epochs 100 -o "$R/m.json"
check "train reports held-out accuracy" "grep -Eq '^held-out: [0-9]+ requests, accuracy [0-9.]+% \\(majority baseline [a-z-]+ [0-9.]+%\\)' '$T/out'"
check "model file format" "python3 -c \"import json; m=json.load(open('$R/m.json')); assert m['format']=='atr-router/1' and m['candidates']==['naive','prefix-cache','compaction','max-tokens'] and len(m['features'])==len(m['mean'])==12 and m['layers'][-1]['out']==4 and len(m['layers'][0]['weights'])==12*m['layers'][0]['out']\""
ok "router train again" "$ATR" router train "$R/swe.ndjson" --profile rtx3090/qwen3-4b-awq --seed 3 --epochs 100 -o "$R/m2.json"
check "deterministic for a seed" "cmp '$R/m.json' '$R/m2.json'"
ok "router eval" "$ATR" router eval "$R/swe.ndjson" --model "$R/m.json"
check "eval accuracy beside baseline" "grep -Eq '^held-out: [0-9]+ requests, accuracy [0-9.]+% \\(majority baseline' '$T/out'"
check "eval confusion matrix" "grep -q '^confusion (rows: label, columns: predicted):' '$T/out' && grep -Eq '^compaction +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+$' '$T/out'"
check "eval latency per policy" "grep -Eq '^learned +[0-9.]+ +[0-9.]+$' '$T/out' && grep -Eq '^naive +[0-9.]+ +[0-9.]+$' '$T/out' && grep -q '^learned vs best fixed' '$T/out'"
ok "sim run learned" "$ATR" sim run "$R/swe.ndjson" --profile rtx3090/qwen3-4b-awq --policy learned --policy-options "model=$R/m.json" --save-result "$R/r.json"
check "learned reports its delegates" "python3 -c \"import json; s=json.load(open('$R/r.json'))['atr']['policy_stats']; assert s['requests']==sum(s['delegates'].values()), s\""
ok "router eval --all" "$ATR" router eval "$R/swe.ndjson" --model "$R/m.json" --all --profile rtx3090/qwen3-4b-awq
check "eval --all scores every request" "grep -Eq '^all: 439 requests' '$T/out'"

fails "sim learned needs a model" 2 "policy learned: needs model=PATH \\(train one with atr router train\\)" "$ATR" sim run "$R/swe.ndjson" --profile rtx3090/qwen3-4b-awq --policy learned
printf '{"format": "atr-router/1", "objective": "e2el",\n "candidates": ["naive", "bogus"]}\n' >"$R/bad.json"
fails "eval bad model" 1 "bad.json:2:26: expected a policy name" "$ATR" router eval "$R/swe.ndjson" --model "$R/bad.json"
printf '{"format": "atr-router/1", "candidates": [1,\n' >"$R/trunc.json"
fails "eval truncated model" 1 "trunc.json:2:1: expected" "$ATR" router eval "$R/swe.ndjson" --model "$R/trunc.json"
fails "router needs a mode" 2 "wants a mode" "$ATR" router "$R/swe.ndjson"
fails "train needs -o" 2 "missing -o MODEL.json" "$ATR" router train "$R/swe.ndjson" --profile rtx3090/qwen3-4b-awq
fails "train bad candidate" 2 "'learned' is not a candidate" "$ATR" router train "$R/swe.ndjson" --profile rtx3090/qwen3-4b-awq --policies naive,learned -o "$R/x.json"
fails "eval needs a model" 2 "missing --model" "$ATR" router eval "$R/swe.ndjson"
absent "no model from failed train" "$R/x.json"

# router decide: the learned policy's decision on given features, and per turn of a trace.
M=$DATA/router/model.json
ok "decide features" "$ATR" router decide --model "$M" --features log_input_tokens=9.1,log_turn=2.5,prefix_reuse=0.9,tool_shell=1 --features "log_input_tokens = 11"
check "decide one line per set, scores sum to 1" "python3 -c \"import json; L=[json.loads(l) for l in open('$T/out')]; assert len(L)==2; d=L[0]; assert d['pick'] in d['scores'] and d['index']==list(d['scores']).index(d['pick']) and abs(sum(d['scores'].values())-1)<1e-12 and max(d['logits'], key=d['logits'].get)==d['pick'] and d['features']['prefix_reuse']==0.9 and d['features']['log_new_tokens']==0 and L[1]['features']['log_input_tokens']==11, L\""
printf 'log_input_tokens=9.1,log_turn=2.5,prefix_reuse=0.9,tool_shell=1\n\nlog_input_tokens=11\n' >"$R/sets.txt"
ok "decide stdin" sh -c "'$ATR' router decide -m '$M' <'$R/sets.txt' >'$R/stdin.out' && '$ATR' router decide -m '$M' --features log_input_tokens=9.1,log_turn=2.5,prefix_reuse=0.9,tool_shell=1 --features log_input_tokens=11 >'$R/flags.out'"
check "decide stdin equals --features" "cmp '$R/stdin.out' '$R/flags.out'"
ok "decide trace" "$ATR" router decide --model "$R/m.json" --trace "$R/swe.ndjson"
check "decide trace: a line per llm turn" "[ \$(wc -l <'$T/out') -eq 439 ] && head -1 '$T/out' | grep -q '^{\"trace\":\"gen-swe-3-000000\",\"turn\":0,\"pick\":'"
fails "decide unknown feature" 1 "^atr: --features:1:12: expected a feature name .*not 'bogus'" "$ATR" router decide -m "$M" --features log_turn=1,bogus=2
fails "decide missing value" 1 "^atr: --features:2:10: expected a finite number for log_turn" "$ATR" router decide -m "$M" --features log_turn=1 --features log_turn=
fails "decide no '='" 1 "^atr: --features:1:9: expected '=' and a value after log_turn" "$ATR" router decide -m "$M" --features log_turn
fails "decide not a number" 1 "^atr: <stdin>:2:10: expected a finite number for log_turn" sh -c "printf 'log_turn=1\nlog_turn=1x\n' | '$ATR' router decide -m '$M'"
fails "decide bad model" 1 "bad.json:2:26: expected a policy name" "$ATR" router decide -m "$R/bad.json" --features log_turn=1
fails "decide needs a model" 2 "decide: missing --model" "$ATR" router decide --features log_turn=1
fails "decide takes no TRACE" 2 "decide takes no TRACE argument" "$ATR" router decide -m "$M" "$R/swe.ndjson"
ok "router eval --json" "$ATR" router eval "$R/swe.ndjson" --model "$R/m.json" --json "$R/eval.json"
check "eval json" "python3 -c \"import json; e=json.load(open('$R/eval.json')); n=len(e['candidates']); assert e['format']=='atr-router-eval/1' and len(e['confusion'])==n and sum(map(sum, e['confusion']))==e['requests'] and sum(e['confusion'][i][i] for i in range(n))==e['correct'] and e['latency'][0]['policy']=='learned', e\""
fails "eval --json unwritable" 1 "no-such-dir" "$ATR" router eval "$R/swe.ndjson" --model "$R/m.json" --json "$R/no-such-dir/e.json"
