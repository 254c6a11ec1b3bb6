# test-journal.sh - the journal of `atr proxy` (docs/proxy.md, "Record
# format"): tests/data/proxy/journal.ndjson (3 sessions, 7 requests,
# interleaved; test-journal.c checks it is what the journal writes) is a
# valid trace file as is, and `atr convert --sessions` folds it into one
# trace per session (golden), from rotated files too, that `atr sim run`
# replays with its think times. Bad journals: FILE:LINE:COL, exit 1, no
# output left.
JD=$DATA/proxy
J=$JD/journal.ndjson
JT=$T/journal
mkdir -p "$JT"

ok "journal: validate" "$ATR" validate "$J"
check "journal: validate counts" "grep -q 'ok, 7 traces, 7 steps' '$T/out'"
ok "journal: stats" "$ATR" stats "$J"
check "journal: stats counts" "grep -Eq '^traces +7\$' '$T/out' && grep -Eq '^  llm steps +7 ' '$T/out'"
# A line is what the trace writer writes: convert gives the file back.
ok "journal: convert" "$ATR" convert -q "$J" -o "$JT/same.ndjson"
check "journal: convert is the identity" "cmp '$J' '$JT/same.ndjson'"

golden "journal: convert --sessions" "$JD/sessions.golden" "$ATR" convert -q --sessions "$J" -o -
ok "journal: sessions validate" "$ATR" validate "$JD/sessions.golden"
check "journal: sessions counts" "grep -q 'ok, 3 traces, 11 steps' '$T/out'"
ok "journal: sessions to a file" "$ATR" convert --sessions "$J" -o "$JT/s.ndjson"
check "journal: sessions summary" "grep -q '3 traces, 11 steps (7 llm, 4 tool)' '$T/err' &&
    cmp '$JT/s.ndjson' '$JD/sessions.golden'"

# The upstream's counts: 6 requests with usage are "recorded" (331 prompt
# tokens; the estimate, 371, beside them), the timed-out one estimated.
ok "journal: stats by origin" "$ATR" stats "$J"
sed 1,2d "$T/out" >"$JT/stats-body.txt"    # all but the file's name
check "journal: stats recorded counts" "grep -Eq '^  atr-proxy +recorded +6 +331 +284\$' '$T/out' &&
    grep -Eq '^  atr-proxy +estimated +1 +65 +0\$' '$T/out' &&
    grep -Eq '^  step input +\+12\.1 % +estimated 371 vs recorded 331 over 6 steps\$' '$T/out'"

# A journal of an older atr (journal-old.ndjson: the same requests, the
# estimate as input_tokens and usage.prompt_tokens beside it as
# recorded_input_tokens) reads as the proxy writes it now: convert gives
# journal.ndjson, --sessions the same sessions, stats the same table.
JO=$JD/journal-old.ndjson
ok "journal: old journal convert" "$ATR" convert -q "$JO" -o "$JT/old.ndjson"
check "journal: old journal reads as new" "cmp '$J' '$JT/old.ndjson'"
golden "journal: old journal sessions" "$JD/sessions.golden" "$ATR" convert -q --sessions "$JO" -o -
ok "journal: old journal stats" "$ATR" stats "$JO"
check "journal: old journal stats as new" "sed 1,2d '$T/out' | cmp - '$JT/stats-body.txt'"

# Rotated journals: the older file first or not, the same sessions.
head -n 4 "$J" >"$JT/j.ndjson.1"
tail -n 3 "$J" >"$JT/j.ndjson"
golden "journal: sessions of rotated files" "$JD/sessions.golden" \
    "$ATR" convert -q --sessions "$JT/j.ndjson.1" "$JT/j.ndjson" -o -
golden "journal: sessions of rotated files, any order" "$JD/sessions.golden" \
    "$ATR" convert -q --sessions "$JT/j.ndjson" "$JT/j.ndjson.1" -o -

# The sessions replay: 7 requests in 3 sessions, the client time between a
# reply and the next request waited as think time (mean of 3470, 3698 and
# 2845 ms).
ok "journal: sim run sessions" "$ATR" sim run "$JD/sessions.golden" --profile h100/llama-3.1-8b
check "journal: sim run requests" "grep -Eq '^Successful requests: +7 *\$' '$T/out' &&
    grep -Eq '^Completed sessions: +3 *\$' '$T/out' &&
    grep -Eq '^Mean think/tool time \\(ms\\): +3337\\.67 *\$' '$T/out'"

# A journal cut mid-line (a writer killed, read before the next open):
# the line and column, exit 1, nothing left.
head -c -40 "$J" >"$JT/cut.ndjson"
fails "journal: cut last line" 1 'cut\.ndjson:7:[0-9]+: expected' \
    "$ATR" convert --sessions "$JT/cut.ndjson" -o "$JT/cut.out"
absent "journal: cut last line, no output" "$JT/cut.out"
# A line that is no journal line: no meta.session.
sed '3s/"session":"s-alpha",//' "$J" >"$JT/nosession.ndjson"
fails "journal: line without session" 1 \
    'nosession\.ndjson:3:[0-9]+: expected "meta"\."session" \(a string\)' \
    "$ATR" convert --sessions "$JT/nosession.ndjson" -o "$JT/nosession.out"
absent "journal: line without session, no output" "$JT/nosession.out"
# ... which is still a valid trace, so plain convert takes it.
ok "journal: without session, plain convert" "$ATR" convert -q "$JT/nosession.ndjson" -o "$JT/plain.out"
