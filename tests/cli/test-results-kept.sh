# test-results-kept.sh - a failing run (bad input, a typo in an option, a
# bad profile) never truncates or replaces an earlier good result, for
# every command that writes a result file (issue 26; `replay tools`' result
# folder has its own tests in test-replay.sh). Each command writes its
# result once, then fails against the same paths; the result must be byte
# for byte what it was, with no temporary left beside it.
K=$T/kept
mkdir -p "$K"
"$ATR" gen --kind requests --traces 6 --seed 4 -o "$K/req.ndjson" 2>/dev/null
"$ATR" gen --kind swe --traces 3 --seed 4 -o "$K/swe.ndjson" 2>/dev/null
printf 'not a trace\n' >"$K/junk.ndjson"
printf '{"format":"atr-trace/1","trace_id":"t","steps":[{"kind":"tool","tool":"bash","command":"true"}]}\n' >"$K/tools.ndjson"
SIMP=h100/llama-3.1-8b

# kept_as NAME FILE...: each FILE is what it was at the snapshot.
snapshot() { for f in "$@"; do cp "$f" "$f.orig"; done; }
kept_as() {
    n=$1; shift
    for f in "$@"; do
        check "$n: $(basename "$f") kept" "cmp '$f.orig' '$f' && [ -z \"\$(ls '$f'.tmp.* 2>/dev/null)\" ]"
    done
}

# replay llm and sim run: --save-result and --requests-out.
ok "kept: replay llm" "$ATR" replay llm -q "$K/req.ndjson" --target sim:$SIMP \
    --save-result "$K/rl.json" --requests-out "$K/rl.ndjson"
snapshot "$K/rl.json" "$K/rl.ndjson"
fails "kept: replay llm, missing input" 1 "nothere.ndjson: No such file" "$ATR" replay llm -q "$K/nothere.ndjson" \
    --target sim:$SIMP --save-result "$K/rl.json" --requests-out "$K/rl.ndjson"
fails "kept: replay llm, bad input" 1 "junk.ndjson" "$ATR" replay llm -q "$K/junk.ndjson" \
    --target sim:$SIMP --save-result "$K/rl.json" --requests-out "$K/rl.ndjson"
fails "kept: replay llm, a typo" 2 "unknown option '--rat'" "$ATR" replay llm -q "$K/req.ndjson" --rat 4 \
    --target sim:$SIMP --save-result "$K/rl.json" --requests-out "$K/rl.ndjson"
fails "kept: replay llm, server down" 1 "warm-up request failed" "$ATR" replay llm -q "$K/req.ndjson" \
    --target http://127.0.0.1:9 --model m --save-result "$K/rl.json" --requests-out "$K/rl.ndjson"
kept_as "kept: replay llm" "$K/rl.json" "$K/rl.ndjson"

ok "kept: sim run" "$ATR" sim run -q "$K/req.ndjson" --profile $SIMP --save-result "$K/sr.json" \
    --requests-out "$K/sr.ndjson"
snapshot "$K/sr.json" "$K/sr.ndjson"
fails "kept: sim run, bad profile" 2 "unknown model" "$ATR" sim run -q "$K/req.ndjson" --profile h100/nope \
    --save-result "$K/sr.json" --requests-out "$K/sr.ndjson"
fails "kept: sim run, bad input" 1 "junk.ndjson" "$ATR" sim run -q "$K/req.ndjson" "$K/junk.ndjson" \
    --profile $SIMP --save-result "$K/sr.json" --requests-out "$K/sr.ndjson"
kept_as "kept: sim run" "$K/sr.json" "$K/sr.ndjson"

# convert -o, report -o, sweep -o, router train -o.
ok "kept: convert" "$ATR" convert -q "$K/swe.ndjson" -o "$K/c.ndjson"
snapshot "$K/c.ndjson"
fails "kept: convert, a bad file after a good one" 1 "junk.ndjson" "$ATR" convert -q "$K/swe.ndjson" \
    "$K/junk.ndjson" -o "$K/c.ndjson"
kept_as "kept: convert" "$K/c.ndjson"

ok "kept: report" "$ATR" report "$K/rl.json" -o "$K/r.html"
snapshot "$K/r.html"
fails "kept: report, missing input" 1 "nothere.json" "$ATR" report "$K/nothere.json" -o "$K/r.html"
fails "kept: report, bad input" 1 "junk.ndjson" "$ATR" report "$K/rl.json" "$K/junk.ndjson" -o "$K/r.html"
kept_as "kept: report" "$K/r.html"

ok "kept: sweep" "$ATR" sweep -q "$K/req.ndjson" --target sim:$SIMP --rates 1 -o "$K/sw.json"
snapshot "$K/sw.json"
fails "kept: sweep, bad --slo" 2 "--slo" "$ATR" sweep -q "$K/req.ndjson" --target sim:$SIMP --slo ttft=1 -o "$K/sw.json"
fails "kept: sweep, missing input" 1 "nothere.ndjson" "$ATR" sweep -q "$K/nothere.ndjson" --target sim:$SIMP -o "$K/sw.json"
kept_as "kept: sweep" "$K/sw.json"

ok "kept: router train" "$ATR" router train "$K/swe.ndjson" --profile $SIMP --epochs 20 -o "$K/m.json"
snapshot "$K/m.json"
fails "kept: router train, missing input" 1 "nothere.ndjson" "$ATR" router train "$K/nothere.ndjson" \
    --profile $SIMP -o "$K/m.json"
fails "kept: router train, no llm steps" 1 "router: no training sessions" "$ATR" router train "$K/tools.ndjson" \
    --profile $SIMP -o "$K/m.json"
kept_as "kept: router train" "$K/m.json"

# bench run: a bad spec or a typo fails before any result is touched.
mkdir -p "$K/b/results"
echo '{"status": "success"}' >"$K/b/results/abc_baseline_result.json"
snapshot "$K/b/results/abc_baseline_result.json"
printf '{"format": "atr-bench-spec/1", "variants": ' >"$K/bad-spec.json"
fails "kept: bench run, bad spec" 2 "bad-spec.json:1:" "$ATR" bench run "$K/bad-spec.json" -o "$K/b"
fails "kept: bench run, old shard spelling" 2 "--shard 1/2" "$ATR" bench run "$ROOT/examples/bench/sim.json" \
    --shard 1/2 -o "$K/b"
kept_as "kept: bench run" "$K/b/results/abc_baseline_result.json"
