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

# A journal cut mid-line (a proxy killed, or read while it writes): every
# complete line is read, the cut one ignored with one warning, exit 0.
head -c -40 "$J" >"$JT/cut.ndjson"
CUT_BYTES=$(tail -n 1 "$JT/cut.ndjson" | wc -c)
CUT_WARN="^atr: $JT/cut\.ndjson:7: warning: the last line is cut \(a file being written\?\): $CUT_BYTES bytes ignored\$"
ok "journal: cut last line, validate" "$ATR" validate "$JT/cut.ndjson"
check "journal: cut last line, valid up to the cut" \
    "grep -q 'ok, 6 traces, 6 steps (up to the cut last line)\$' '$T/out' && grep -Eq '$CUT_WARN' '$T/err'"
ok "journal: cut last line, stats" "$ATR" stats "$JT/cut.ndjson"
check "journal: cut last line, stats counts" "grep -Eq '^traces +6\$' '$T/out' && grep -Eq '$CUT_WARN' '$T/err'"
ok "journal: cut last line, convert" "$ATR" convert -q "$JT/cut.ndjson" -o "$JT/cut.out"
check "journal: cut last line, the complete lines" \
    "head -n 6 '$J' | cmp - '$JT/cut.out' && [ \$(wc -l <'$T/err') -eq 1 ] && grep -Eq '$CUT_WARN' '$T/err'"
ok "journal: cut last line, convert --sessions" \
    "$ATR" convert -q --sessions "$JT/cut.ndjson" -o "$JT/cut-s.out"
check "journal: cut last line, sessions" \
    "[ \$(wc -l <'$JT/cut-s.out') -eq 3 ] && grep -Eq '$CUT_WARN' '$T/err'"
ok "journal: cut last line, report" "$ATR" report -o "$JT/cut.html" "$JT/cut.ndjson"
check "journal: cut last line, report warns" "grep -Eq '$CUT_WARN' '$T/err' && [ -s '$JT/cut.html' ]"
# A last line without its newline that parses is complete: no warning.
head -c -1 "$J" >"$JT/nonl.ndjson"
ok "journal: last line without newline" "$ATR" validate "$JT/nonl.ndjson"
check "journal: last line without newline is a line" \
    "grep -q 'ok, 7 traces, 7 steps\$' '$T/out' && [ ! -s '$T/err' ]"
# A cut anywhere else is an error naming the truncation; so is a
# compressed journal whose stream ends early.
{ head -n 3 "$J" | head -c -30; echo; tail -n 4 "$J"; } >"$JT/midcut.ndjson"
fails "journal: a cut line in the middle" 1 \
    'midcut\.ndjson:3:[0-9]+: expected .*found end of input \(the text is truncated\)$' \
    "$ATR" convert "$JT/midcut.ndjson" -o "$JT/midcut.out"
absent "journal: a cut line in the middle, no output" "$JT/midcut.out"
# A last line over the value budget is refused, never taken for a cut one.
{ cat "$J"; printf '{"format":"atr-trace/1","trace_id":"big","steps":[%s' "$(yes 0 | head -n 3000 | paste -sd,)"; } >"$JT/big-tail.ndjson"
fails "journal: a last line over the value budget is no cut" 1 \
    'big-tail\.ndjson:8:[0-9]+: more than [0-9]+ JSON values in one line' \
    "$ATR" validate --max-line 20K "$JT/big-tail.ndjson"
gzip -c "$J" | head -c 600 >"$JT/cut.ndjson.gz"
fails "journal: a cut gzip stream" 1 'cut\.ndjson\.gz: truncated gzip data' \
    "$ATR" stats "$JT/cut.ndjson.gz"

# `atr stats` on a journal being written (docs/proxy.md suggests it): a
# writer appends the journal's lines over and over, each in two writes
# with a pause between, while stats runs 30 times: every run succeeds.
head -n 1 "$J" >"$JT/live.ndjson"
python3 - "$J" "$JT/live.ndjson" <<'PY' &
import sys, time
lines = open(sys.argv[1], "rb").read().splitlines(keepends=True)
with open(sys.argv[2], "ab", buffering=0) as out:
    for i in range(3000):
        line = lines[i % len(lines)]
        out.write(line[: len(line) // 2])
        time.sleep(0.001)     # a half line is in the file for a while
        out.write(line[len(line) // 2 :])
PY
WRITER=$!
LIVE_FAILS=0 LIVE_CUTS=0
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30; do
    "$ATR" stats "$JT/live.ndjson" >"$JT/live.out" 2>"$JT/live.err" || LIVE_FAILS=$((LIVE_FAILS + 1))
    grep -q 'warning: the last line is cut' "$JT/live.err" && LIVE_CUTS=$((LIVE_CUTS + 1))
done
kill "$WRITER" 2>/dev/null
wait "$WRITER" 2>/dev/null
check "journal: stats on a journal being written, 30 runs ($LIVE_CUTS saw a cut line)" \
    "[ $LIVE_FAILS -eq 0 ]"
# A line that is no journal line: no meta.session.
sed '3s/"session":"s-alpha",//' "$J" >"$JT/nosession.ndjson"
fails "journal: line without session" 1 \
    'nosession\.ndjson:3:[0-9]+: expected "meta"\."session" \(a string\)' \
    "$ATR" convert --sessions "$JT/nosession.ndjson" -o "$JT/nosession.out"
absent "journal: line without session, no output" "$JT/nosession.out"
# ... which is still a valid trace, so plain convert takes it.
ok "journal: without session, plain convert" "$ATR" convert -q "$JT/nosession.ndjson" -o "$JT/plain.out"
