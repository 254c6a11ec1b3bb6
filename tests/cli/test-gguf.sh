# test-gguf.sh - `atr gen --kind gguf` and `atr validate` on GGUF models:
# same seed same bytes, impossible shapes refused with nothing left behind,
# damaged files named at an offset; and, when llama-server is built
# (scripts/llama.sh), the tiny model loads, streams 64 tokens with usage,
# gives one token per prompt word, and replay's prompt counts match the
# server's. Sourced by run.sh ($ATR, $ROOT, $T).

G=$T/gguf
mkdir -p "$G"

ok gguf-gen "$ATR" gen --kind gguf --preset tiny --seed 3 -o "$G/a.gguf"
ok gguf-gen-again "$ATR" gen --kind gguf --seed 3 -q -o "$G/b.gguf"
check gguf-same-seed-same-bytes "cmp -s '$G/a.gguf' '$G/b.gguf'"
ok gguf-gen-seed4 "$ATR" gen --kind gguf --seed 4 -q -o "$G/c.gguf"
check gguf-other-seed-differs "! cmp -s '$G/a.gguf' '$G/c.gguf'"
check gguf-same-size "[ \$(wc -c <'$G/a.gguf') -eq \$(wc -c <'$G/c.gguf') ]"
# the bytes of a seed are the same on every machine (tests/data/gguf/SOURCE.txt)
ok gguf-golden "$ATR" gen --kind gguf --layers 1 --embd 8 --heads 2 --kv-heads 1 --ff 8 \
    --ctx 64 --seed 7 -q -o "$G/golden.gguf"
check gguf-golden-bytes "cmp -s '$G/golden.gguf' '$DATA/gguf/tiny-seed7.gguf'"
ok gguf-gen-overrides "$ATR" gen --kind gguf --preset small --layers 1 --embd 128 --heads 4 \
    --kv-heads 1 --ff 64 --ctx 512 --vocab 1000 -q -o "$G/o.gguf"

ok gguf-validate "$ATR" validate "$G/a.gguf"
check gguf-validate-summary "grep -q 'a.gguf: ok, gguf v3 llama model: 2 layers, 64-d, 4/2 heads, FF 256, vocab [0-9]*, context 4096' '$T/out'"
ok gguf-validate-overrides "$ATR" validate "$G/o.gguf"
check gguf-validate-overrides-summary "grep -q '1 layer, 128-d, 4/1 heads, FF 64, vocab 1000, context 512' '$T/out'"

# Impossible shapes: one message, exit 2, no file (nor temporary) left.
fails gguf-heads 2 '^atr gen: the head count 3 does not divide the embedding length 64' \
    "$ATR" gen --kind gguf --heads 3 -o "$G/bad.gguf"
fails gguf-kv-heads 2 '^atr gen: the KV head count 3 does not divide the head count 4' \
    "$ATR" gen --kind gguf --kv-heads 3 -o "$G/bad.gguf"
fails gguf-layers 2 '^atr gen: the layer count 0 is not in 1..1024' \
    "$ATR" gen --kind gguf --layers 0 -o "$G/bad.gguf"
fails gguf-vocab 2 '^atr gen: a vocabulary of 100 tokens is smaller than the [0-9]+ fixed tokens' \
    "$ATR" gen --kind gguf --vocab 100 -o "$G/bad.gguf"
fails gguf-huge 2 '^atr gen: the model would take [0-9.]+ GiB, over the 4 GiB limit' \
    "$ATR" gen --kind gguf --embd 65536 --heads 64 --kv-heads 64 --ff 65536 -o "$G/bad.gguf"
fails gguf-preset 2 "^atr gen: unknown preset 'huge' \\(tiny, small\\)" \
    "$ATR" gen --kind gguf --preset huge -o "$G/bad.gguf"
fails gguf-eos 2 '^atr gen: --eos-prob wants a number 0..0.5' \
    "$ATR" gen --kind gguf --eos-prob 0.9 -o "$G/bad.gguf"
absent gguf-refused-leaves-nothing "$G/bad.gguf"
fails gguf-no-dir 1 "^atr: .*$G/nodir/m.gguf" "$ATR" gen --kind gguf -o "$G/nodir/m.gguf"
# a refused run keeps the file that was there
cp "$G/a.gguf" "$G/keep.gguf"
fails gguf-refused-keeps 2 'head count' "$ATR" gen --kind gguf --heads 5 -o "$G/keep.gguf"
check gguf-refused-keeps-file "cmp -s '$G/a.gguf' '$G/keep.gguf'"

# Damaged files: the first problem, at an offset, exit 1.
head -c 1000 "$G/a.gguf" >"$G/cut.gguf"
fails gguf-validate-cut 1 "^atr: $G/cut.gguf: offset [0-9]+: " "$ATR" validate "$G/cut.gguf"
head -c 100000 "$G/a.gguf" >"$G/cut2.gguf"
fails gguf-validate-cut-data 1 "^atr: $G/cut2.gguf: offset [0-9]+: tensor '.*' .* ends past the end of the file" \
    "$ATR" validate "$G/cut2.gguf"
printf 'GGUF\011\000\000\000' >"$G/v9.gguf"
fails gguf-validate-version 1 "^atr: $G/v9.gguf: offset 4: version 9, expected 2 or 3" \
    "$ATR" validate "$G/v9.gguf"
printf 'GGUF' >"$G/magic-only.gguf"
fails gguf-validate-magic-only 1 "^atr: $G/magic-only.gguf: offset 4: expected a version, found end of file" \
    "$ATR" validate "$G/magic-only.gguf"

# ---- the real engine ----
LLAMA=$(llama_bin) || { echo "skip: $LLAMA"; return 0; }
llama_start gguf "$G/a.gguf" -t 1 -np 1 -c 1024 || return 0

# A streamed chat reply of exactly 64 tokens: every event JSON, the last
# chunk with usage, then [DONE].
curl -sN "$LLAMA_URL/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":" the of and to in"}],"max_tokens":64,
         "ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' >"$G/stream.txt"
CURRENT=gguf-llama-stream
if python3 - "$G/stream.txt" >"$G/stream.check" 2>&1 <<'PY'
import json, re, sys
events = [l[6:] for l in open(sys.argv[1]) if l.startswith("data: ")]
assert events and events[-1].strip() == "[DONE]", "no [DONE] at the end"
chunks = [json.loads(e) for e in events[:-1]]
text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
usage = chunks[-1]["usage"]
assert usage["completion_tokens"] == 64, usage
assert usage["prompt_tokens"] == 5 + 9, usage   # BOS + ChatML framing (8) + 5 words
# only word pieces: no byte token (invalid UTF-8 breaks the chat parser), no control token
assert re.fullmatch(r"[a-z ]+", text), repr(text)
PY
then pass; else fail "$(cat "$G/stream.check")"; fi

# Each of the 256 prompt words is one token, so 256 words are 256 tokens.
words=$(grep -o '" [a-z]*"' "$ROOT/src/trace/words.c" | tr -d '"\n')
curl -s "$LLAMA_URL/tokenize" -H 'Content-Type: application/json' \
    -d "{\"content\":\"$words\"}" >"$G/tok.json"
check gguf-llama-one-token-per-word "python3 -c 'import json,sys; assert len(json.load(open(\"$G/tok.json\"))[\"tokens\"]) == 256' &&
    [ \$(printf '%s' '$words' | wc -w) -eq 256 ]"

# Replay's prompts: the server counts the trace's 32 tokens plus BOS
# (completions), plus BOS and the chat template's 8 (chat).
ok gguf-requests "$ATR" gen --kind requests --traces 2 --input-tokens 32 --output-tokens 4 -q -o "$G/req.ndjson"
ok gguf-replay-completions "$ATR" replay llm -q "$G/req.ndjson" --target "$LLAMA_URL" --warmup 0 \
    --rate inf --requests-out "$G/r1.jsonl"
check gguf-replay-prompt-tokens "[ \$(grep -c '\"prompt_tokens\": 33,' '$G/r1.jsonl') -eq 2 ]"
ok gguf-replay-chat "$ATR" replay llm -q "$G/req.ndjson" --target "$LLAMA_URL" --warmup 0 \
    --rate inf --api chat --requests-out "$G/r2.jsonl"
check gguf-replay-chat-prompt-tokens "[ \$(grep -c '\"prompt_tokens\": 41,' '$G/r2.jsonl') -eq 2 ]"
check gguf-replay-output-tokens "[ \$(grep -c '\"output_tokens\": 4,' '$G/r2.jsonl') -eq 2 ]"

kill "$LLAMA_PID" 2>/dev/null
wait "$LLAMA_PID" 2>/dev/null
check gguf-llama-log-clean "! grep -qi 'error' '$T/gguf.llama.log'"

# A shape of its own, with padding tokens, loads and answers too.
llama_start gguf-o "$G/o.gguf" -t 1 -np 1 || return 0
curl -s "$LLAMA_URL/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":" the of"}],"max_tokens":16,"ignore_eos":true}' >"$G/o.json"
check gguf-llama-overrides "python3 -c 'import json; u = json.load(open(\"$G/o.json\"))[\"usage\"]; assert u[\"completion_tokens\"] == 16 and u[\"prompt_tokens\"] == 11, u'"
kill "$LLAMA_PID" 2>/dev/null
wait "$LLAMA_PID" 2>/dev/null

# --eos-prob: 0 never ends a reply before max_tokens; 0.5 ends each of a
# few within 64 tokens (a miss has odds below 1e-10 at the measured rate).
ok gguf-gen-eos0 "$ATR" gen --kind gguf --eos-prob 0 -q -o "$G/e0.gguf"
ok gguf-gen-eos5 "$ATR" gen --kind gguf --eos-prob 0.5 -q -o "$G/e5.gguf"
for e in e0 e5; do
    llama_start "gguf-$e" "$G/$e.gguf" -t 1 -np 1 -c 1024 || return 0
    for k in 1 2 3; do
        curl -s "$LLAMA_URL/v1/chat/completions" -H 'Content-Type: application/json' \
            -d "{\"messages\":[{\"role\":\"user\",\"content\":\" the of $k\"}],\"max_tokens\":64,\"seed\":$k}"
        echo
    done >"$G/$e.jsonl"
    kill "$LLAMA_PID" 2>/dev/null
    wait "$LLAMA_PID" 2>/dev/null
done
check gguf-eos0-never-stops "[ \$(grep -c '\"finish_reason\":\"length\"' '$G/e0.jsonl') -eq 3 ]"
check gguf-eos5-stops "[ \$(grep -c '\"finish_reason\":\"stop\"' '$G/e5.jsonl') -eq 3 ]"
