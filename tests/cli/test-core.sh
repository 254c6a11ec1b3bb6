# test-core.sh - the CLI itself, atr-trace round trips, compression, bad input.

golden "version" "$DATA/atr/version.golden" "$ATR" --version
ok "help overview" "$ATR" --help
check "help lists convert" "grep -q '^  convert' '$T/out'"
ok "help convert" "$ATR" help convert
check "convert help lists formats" "grep -q 'mini-swe-agent' '$T/out'"
ok "convert --help" "$ATR" convert --help
fails "unknown command" 2 "no command 'frobnicate'" "$ATR" frobnicate
fails "unknown format" 2 "unknown format 'nope'" "$ATR" convert --from nope x -o y
fails "missing -o" 2 "missing -o OUT" "$ATR" convert "$DATA/atr/small.ndjson"
fails "bad block size" 2 "block-size" "$ATR" convert -b 0 "$DATA/atr/small.ndjson" -o "$T/x"

# Round trip: atr -> atr is stable, compact and expanded forms agree.
ok "convert atr" "$ATR" convert -q "$DATA/atr/small.ndjson" -o "$T/rt1.ndjson"
ok "convert again" "$ATR" convert -q "$T/rt1.ndjson" -o "$T/rt2.ndjson"
check "round trip stable" "cmp '$T/rt1.ndjson' '$T/rt2.ndjson'"
check "unknown fields kept" "grep -q '\"zz\":\\[1,{\"a\":null}\\]' '$T/rt1.ndjson' && grep -q '\"custom\":true' '$T/rt1.ndjson'"
check "compact prefix written" "grep -q '\"prefix\":{\"step\":0,\"blocks\":3}' '$T/rt1.ndjson'"
ok "expand" "$ATR" convert -q --expand "$T/rt1.ndjson" -o "$T/exp.ndjson"
check "expanded ids" "grep -q '\"hash_ids\":\\[11,12,13,14\\]' '$T/exp.ndjson'"
ok "redact" "$ATR" convert -q --redact-commands "$T/rt1.ndjson" -o "$T/red.ndjson"
check "command redacted" "! grep -q 'pip install' '$T/red.ndjson' && grep -q '\"command_head\":\"pip\"' '$T/red.ndjson'"
ok "validate redacted" "$ATR" validate "$T/red.ndjson"

# Compressed and stdin inputs convert to the same bytes.
gzip -c "$DATA/atr/small.ndjson" >"$T/small.ndjson.gz"
zstd -q -c "$DATA/atr/small.ndjson" >"$T/small.zst"
ok "gzip input" "$ATR" convert -q "$T/small.ndjson.gz" -o "$T/gz.ndjson"
check "gzip same" "cmp '$T/gz.ndjson' '$T/rt1.ndjson'"
ok "zstd input" "$ATR" convert -q "$T/small.zst" -o "$T/zst.ndjson"
check "zstd same" "cmp '$T/zst.ndjson' '$T/rt1.ndjson'"
ok "stdin input" sh -c "cat '$T/small.zst' | '$ATR' convert -q - -o '$T/stdin.ndjson'"
check "stdin same" "cmp '$T/stdin.ndjson' '$T/rt1.ndjson'"
ok "stdout output" sh -c "'$ATR' convert -q '$DATA/atr/small.ndjson' -o - >'$T/so.ndjson'"
check "stdout same" "cmp '$T/so.ndjson' '$T/rt1.ndjson'"

# validate
golden "validate ok" "$DATA/atr/validate.golden" sh -c "cd '$DATA/atr' && '$ATR' validate small.ndjson"
cat "$DATA/atr/small.ndjson" "$DATA/atr/small.ndjson" >"$T/dup.ndjson"
fails "duplicate trace id" 1 'dup.ndjson:2: trace_id "x/1" repeats the trace of line 1' "$ATR" validate "$T/dup.ndjson"
printf '{"format":"atr-trace/1","trace_id":"a","steps":[{"kind":"llm","input_tokens":40,"hash_ids":[1]}]}\n' >"$T/badlen.ndjson"
fails "hash ids vs tokens" 1 'badlen.ndjson:1:49: expected 3 hash ids for 40 input tokens in blocks of 16, found 1' "$ATR" validate "$T/badlen.ndjson"
fails "output in /proc names why" 1 '^atr: /proc/x: cannot write: /proc takes no new files' \
    "$ATR" convert "$DATA/atr/small.ndjson" -o /proc/x
fails "validate missing file" 1 'nothere.ndjson: No such file or directory' "$ATR" validate "$T/nothere.ndjson"

# Bad input: one error line with a position, exit 1, no output left behind.
: >"$T/empty.json"
fails "empty input" 1 'empty.json: empty input' "$ATR" convert "$T/empty.json" -o "$T/o1"
absent "empty leaves nothing" "$T/o1"
# No newline: an empty first line would move the error to line 2.
head -c 4096 /dev/urandom | tr -d '\n' >"$T/junk.bin"
printf '\001\002\003binary' >>"$T/junk.bin"
fails "binary input" 1 'unrecognised trace format' "$ATR" convert "$T/junk.bin" -o "$T/o2"
absent "binary leaves nothing" "$T/o2"
fails "binary as atr" 1 'junk.bin:1(:[0-9]+)?: ' "$ATR" convert --from atr "$T/junk.bin" -o "$T/o3"
absent "binary as atr leaves nothing" "$T/o3"
head -c 150 "$DATA/atr/small.ndjson" >"$T/trunc.ndjson"
fails "truncated" 1 'trunc.ndjson:1:146: unterminated string \(the text is truncated\)$' "$ATR" convert "$T/trunc.ndjson" -o "$T/o4"
absent "truncated leaves nothing" "$T/o4"
# A good file then a bad one: the output of the good one must not survive.
fails "second file bad" 1 'trunc.ndjson:1:146' "$ATR" convert "$DATA/atr/small.ndjson" "$T/trunc.ndjson" -o "$T/o5"
absent "partial output removed" "$T/o5"
fails "line cap" 1 'small.ndjson:1: line longer than 100 bytes' "$ATR" convert --max-line 100 "$DATA/atr/small.ndjson" -o "$T/o6"
absent "line cap leaves nothing" "$T/o6"
python3 -c "print('{\"format\":\"atr-trace/1\",\"trace_id\":\"d\",\"steps\":' + '['*300 + ']'*300 + '}')" >"$T/deep.ndjson"
fails "nesting cap" 1 'deep.ndjson:1:[0-9]+: nesting deeper than' "$ATR" convert "$T/deep.ndjson" -o "$T/o7"
# A line's JSON values are capped by the line cap (one per 16 bytes, plus
# 1024): 20K allows 2304; 3000 zeros in 6 KB are over it, 2000 are not.
zeros() { python3 -c "print('{\"format\":\"atr-trace/1\",\"trace_id\":\"z\",\"steps\":[{\"i\":0,\"kind\":\"llm\",\"input_tokens\":16,\"hash_ids\":[1],\"zz\":[' + ','.join(['0'] * $1) + ']}]}')"; }
zeros 3000 >"$T/zeros.ndjson"
fails "value cap" 1 'zeros.ndjson:1:[0-9]+: more than 2304 JSON values in one line, the limit for a line cap of 20480 bytes' "$ATR" validate --max-line 20K "$T/zeros.ndjson"
fails "value cap convert" 1 'zeros.ndjson:1:[0-9]+: more than 2304 JSON values' "$ATR" convert --max-line 20K "$T/zeros.ndjson" -o "$T/o7b"
absent "value cap leaves nothing" "$T/o7b"
zeros 2000 >"$T/zeros2k.ndjson"
ok "under the value cap" "$ATR" validate --max-line 20K "$T/zeros2k.ndjson"
# A tree that does not fit in memory is an error, not an abort (skipped
# where the binary cannot run under a 150 MB address space: ASan).
if sh -c 'ulimit -v 150000 && exec "$1" --version' sh "$ATR" >/dev/null 2>&1; then
    zeros 3000000 >"$T/zeros3m.ndjson"
    fails "tree out of memory" 1 'zeros3m.ndjson:1:[0-9]+: out of memory after [0-9]+ JSON values' \
        sh -c 'ulimit -v 150000 && exec "$@"' sh "$ATR" convert --max-line 64M "$T/zeros3m.ndjson" -o "$T/o7c"
    absent "out of memory leaves nothing" "$T/o7c"
    rm -f "$T/zeros3m.ndjson"
fi
printf '\037\213\010\000\000\000\000\000\000\003garbage-garbage' >"$T/corrupt.gz"
fails "corrupt gzip" 1 'corrupt.gz: corrupt gzip data' "$ATR" convert --from atr "$T/corrupt.gz" -o "$T/o8"
absent "corrupt gzip leaves nothing" "$T/o8"
fails "unwritable output" 1 'nodir/out.ndjson: cannot write: directory .*/nodir: No such file or directory' "$ATR" convert "$DATA/atr/small.ndjson" -o "$T/nodir/out.ndjson"
# -o to a device writes through it; it must stay a device (we run as root).
ok "output to /dev/null" "$ATR" convert -q "$DATA/atr/small.ndjson" -o /dev/null
check "/dev/null still a device" "[ -c /dev/null ]"

# Outputs are checked before the work (issue 11, item 10): the bad -o is
# named before the missing input is read.
fails "convert: -o checked first" 1 "^atr: /proc/x: " "$ATR" convert "$T/nothere.ndjson" -o /proc/x
fails "router train: -o checked first" 1 "^atr: /proc/x: " "$ATR" router train "$T/nothere.ndjson" \
    --profile h100/llama-3.1-8b -o /proc/x

# Interrupted convert (item 14): one "interrupted" line, exit 130, no
# output. The input is a FIFO held open, so convert is still reading when
# the signal comes; the output's temporary shows it has started.
mkfifo "$T/conv.fifo"
"$ATR" convert -q "$T/conv.fifo" -o "$T/o9" 2>"$T/conv-int.err" &
cvp=$!
exec 3>"$T/conv.fifo"
cat "$DATA/atr/small.ndjson" >&3
deadline=$(($(date +%s) + 20))
while ! ls "$T"/o9.tmp.* >/dev/null 2>&1 && [ "$(date +%s)" -lt "$deadline" ]; do :; done
kill -INT "$cvp"
wait "$cvp"; st=$?
exec 3>&-
check "convert: SIGINT exits 130" "[ $st -eq 130 ]"
check "convert: SIGINT says interrupted, once" "[ \"\$(cat '$T/conv-int.err')\" = 'atr: interrupted' ]"
absent "convert: SIGINT leaves no output" "$T/o9"

# Issue 11, item 16: validate says "empty input" as convert and stats do,
# and a file read as the wrong format says which format it looks like.
fails "validate empty input" 1 '^atr: .*empty.json: empty input$' "$ATR" validate "$T/empty.json"
fails "stats empty input" 1 '^atr: .*empty.json: empty input$' "$ATR" stats "$T/empty.json"
fails "--from atr on a .traj" 1 \
    'function_calling_simple\.traj:1:2: .* \(not an atr trace: it looks like swe-agent\)$' \
    "$ATR" convert --from atr "$DATA/swe-agent/function_calling_simple.traj" -o "$T/o10"
absent "--from atr on a .traj leaves nothing" "$T/o10"
fails "validate of a .traj" 1 \
    'simple\.traj: this is the swe-agent format \(SWE-agent \.traj trajectory\), not atr-trace: run atr convert first \(atr convert .*simple\.traj -o OUT\.ndjson\)$' \
    "$ATR" validate "$DATA/swe-agent/function_calling_simple.traj"
# Counts are singular where they are one (item 16).
"$ATR" convert "$DATA/atr/small.ndjson" -o "$T/o11" 2>"$T/conv-one.err"
check "convert summary in the singular" "grep -q '^atr: converted 1 file: 1 trace, 3 steps ' '$T/conv-one.err'"
