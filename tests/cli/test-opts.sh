# test-opts.sh - the option parser every command shares (src/cli/opts.c):
# the spellings getopt_long took, --goodput's extra words, shared option
# groups, and one usage line for each kind of bad value.
O=$T/opts
mkdir -p "$O"
P=h100/llama-3.1-8b
ok "opts: gen a workload" "$ATR" gen -q --kind requests --traces 3 --seed 4 -o "$O/w.ndjson"

# Spellings: --name value, --name=value, -n value, -nvalue, bundled flags.
ok "opts: --name=value" "$ATR" gen --quiet --kind=requests --traces=3 --seed=4 --output="$O/eq.ndjson"
check "opts: --name=value is --name value" "cmp '$O/w.ndjson' '$O/eq.ndjson'"
ok "opts: -nvalue and bundled -qk" "$ATR" gen -qk requests -n3 -s4 -o"$O/short.ndjson"
check "opts: short forms are the long ones" "cmp '$O/w.ndjson' '$O/short.ndjson'"

# Options after positional arguments, and -- ending the options.
ok "opts: options first" "$ATR" stats --json "$O/w.ndjson"
cp "$T/out" "$O/first.json"
ok "opts: options after the file" "$ATR" stats "$O/w.ndjson" --json
check "opts: same result either way" "cmp '$O/first.json' '$T/out'"
cp "$O/w.ndjson" "$O/-dash.ndjson"
fails "opts: a dash file is an option" 2 "^atr validate: unknown option '-d'" "$ATR" validate "$O/w.ndjson" -dash.ndjson
(cd "$O" && "$ATR" validate -- -dash.ndjson >"$T/out" 2>&1)
check "opts: -- ends the options" "grep -q '^-dash.ndjson: ok, 3 traces' '$T/out'"
ok "opts: - is stdin, not an option" sh -c "'$ATR' validate - <'$O/w.ndjson'"
fails "opts: value that looks like an option" 2 "unknown format '--quiet'" \
    "$ATR" convert "$O/w.ndjson" --from --quiet -o "$O/x.ndjson"

# Unknown options, missing values, flags given a value; names match exactly.
# Every command names the option in its one line (issue 11, item 12).
fails "opts: unknown long (named)" 2 "^atr stats: unknown option '--jso'" "$ATR" stats --jso "$O/w.ndjson"
fails "opts: unknown short in a bundle" 2 "^atr gen: unknown option '-z' \(try" "$ATR" gen -qz --kind swe -n 1 -o -
fails "opts: unknown short (named)" 2 "^atr stats: unknown option '-z'" "$ATR" stats -z "$O/w.ndjson"
fails "opts: flag with a value" 2 "^atr stats: unknown option '--json=1'" "$ATR" stats --json=1 "$O/w.ndjson"
fails "opts: missing value (named)" 2 "^atr compare: option '-o' needs a value" "$ATR" compare x.json -o
fails "opts: unknown option (named)" 2 "^atr sim run: unknown option '--nope' \(try" "$ATR" sim run --nope "$O/w.ndjson" --profile $P
fails "opts: missing value (named too)" 2 "^atr convert: option '-o' needs a value \(try" "$ATR" convert "$O/w.ndjson" -o

# Values: integer bounds, numbers, sizes, words, callbacks.
fails "opts: uint bound" 2 "^atr sim run: --tp wants 1\.\.64" "$ATR" sim run "$O/w.ndjson" --profile $P --tp 65
fails "opts: uint junk" 2 "--traces wants an integer 1\.\.10000000" "$ATR" gen --kind swe --traces 1x -o -
fails "opts: uint with the value in the message" 2 "--port wants 0\.\.65535, got '70000'" "$ATR" sim serve --profile $P --port 70000
fails "opts: number > 0" 2 "--burstiness wants a number > 0" "$ATR" sim run "$O/w.ndjson" --profile $P --burstiness 0
fails "opts: number, finite" 2 "--burstiness wants a number > 0" "$ATR" sim run "$O/w.ndjson" --profile $P --burstiness inf
fails "opts: number in a range" 2 "--holdout wants a number in \[0\.01, 0\.99\]" "$ATR" router train "$O/w.ndjson" --holdout 1
fails "opts: size" 2 "--max-line wants a size like 64M" "$ATR" stats --max-line 0 "$O/w.ndjson"
fails "opts: words" 2 "--arrival wants trace, poisson, constant or burst" "$ATR" sim run "$O/w.ndjson" --profile $P --arrival sometimes
fails "opts: words (sandbox)" 2 "--sandbox wants ns or none" "$ATR" replay tools "$O/w.ndjson" --out "$O/r" --sandbox maybe
fails "opts: callback's own message" 2 "unknown configuration 'hot'" "$ATR" replay tools "$O/w.ndjson" --out "$O/r" --config none,hot
fails "opts: group option, router's seed" 2 "^atr router: --seed wants a non-negative integer" "$ATR" router train "$O/w.ndjson" --seed -1
fails "opts: group option in replay llm" 2 "^atr replay llm: --max-concurrency wants 1\.\.1000000" \
    "$ATR" replay llm "$O/w.ndjson" --target sim:$P --max-concurrency 0

# --goodput takes the following KEY:NUMBER words, and only those.
ok "opts: goodput words, then the trace" "$ATR" sim run -q --goodput ttft:600 tpot:30 "$O/w.ndjson" \
    --profile $P --save-result "$O/g1.json"
check "opts: goodput words read" "python3 -c \"import json; g=json.load(open('$O/g1.json'))['atr']['goodput']; assert g['slo_ms']=={'ttft':600.0,'tpot':30.0}, g\""
ok "opts: goodput=, comma list" "$ATR" sim run -q "$O/w.ndjson" --goodput=ttft:600,e2el:900 --profile $P --save-result "$O/g2.json"
check "opts: goodput= read" "python3 -c \"import json; g=json.load(open('$O/g2.json'))['atr']['goodput']; assert g['slo_ms']=={'ttft':600.0,'e2el':900.0}, g\""
ok "opts: goodput stops at --" "$ATR" sim run -q --profile $P --goodput ttft:600 -- "$O/w.ndjson"
fails "opts: a bad goodput word" 2 "^atr sim run: --goodput wants ttft:MS" "$ATR" sim run "$O/w.ndjson" --profile $P --goodput ttft:600 itl:5
fails "opts: goodput needs a value" 2 "^atr replay llm: option '--goodput' needs a value" "$ATR" replay llm "$O/w.ndjson" --target sim:$P --goodput
