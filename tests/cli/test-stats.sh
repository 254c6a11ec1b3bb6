# test-stats.sh - `atr stats`: golden table and JSON on hand-made traces whose
# figures are worked out in tests/data/stats/README, aggregation, stdin,
# compressed input, -o, bad input and options, and the real samples.
S=$DATA/stats
cp "$S/small.ndjson" "$S/notools.ndjson" "$S/bad.ndjson" "$S/onetool.ndjson" "$S/nosteps.ndjson" .

golden stats-table "$S/small.txt" "$ATR" stats small.ndjson
golden stats-json "$S/small.json" "$ATR" stats --json small.ndjson
golden stats-from-atr "$S/small.txt" "$ATR" stats --from atr small.ndjson
golden stats-capped "$S/notools-capped.json" "$ATR" stats --json --max-ids 2 notools.ndjson
check stats-json-parses "! command -v python3 || python3 -m json.tool '$S/small.json'"

# Wording (issue 11, item 16): singular counts, no "n/a %", and sections
# without a figure left out (tests/data/stats/README).
golden stats-no-tools "$S/notools.txt" "$ATR" stats notools.ndjson
golden stats-one-tool "$S/onetool.txt" "$ATR" stats onetool.ndjson
golden stats-no-steps "$S/nosteps.txt" "$ATR" stats nosteps.ndjson
check stats-no-na-pct "! grep -q 'n/a %' '$S/nosteps.txt' '$S/onetool.txt' '$S/notools.txt'"
check stats-singular "grep -q '(atr, 1 trace, 1 step)' '$S/onetool.txt' && grep -q '^tool mix (1 kind) ' '$S/onetool.txt'"
check stats-no-empty-tool-mix "! grep -q '^tool mix' '$S/notools.txt'"

# several files are aggregated, and listed one by one
ok stats-two-files "$ATR" stats --json small.ndjson notools.ndjson
check stats-two-files-sum "grep -q '\"traces\":6,\"steps\":16,\"llm_steps\":8,\"tool_steps\":8,' '$T/out'"
check stats-two-files-list "grep -q '\"name\":\"notools.ndjson\",\"format\":\"atr\",\"traces\":2' '$T/out'"
# the default cap leaves the cross-trace figure exact: 2 of 5 blocks either way
ok stats-uncapped "$ATR" stats --json notools.ndjson
check stats-uncapped-exact "grep -q '\"across\":{\"shared\":2,\"blocks\":5,\"ratio\":0.4,\"approximate\":false}' '$T/out'"

# stdin and compressed input give the same figures as the file
gzip -c small.ndjson >small.ndjson.gz
ok stats-gz "$ATR" stats --json small.ndjson.gz
check stats-gz-same "sed 's/small.ndjson.gz/small.ndjson/' '$T/out' | cmp -s - '$S/small.json'"
ok stats-stdin sh -c "'$ATR' stats - <small.ndjson"
check stats-stdin-named "grep -q '<stdin>  (atr, 4 traces, 14 steps)' '$T/out'"

# -o writes the same text atomically; nothing is left on failure
ok stats-output "$ATR" stats -o stats.txt small.ndjson
check stats-output-same "cmp -s stats.txt '$S/small.txt' && ! test -s '$T/out'"
fails stats-output-bad 1 '^atr: bad\.ndjson:2:51: expected 1 hash ids' "$ATR" stats -o bad-stats.txt small.ndjson bad.ndjson
absent stats-output-bad-absent bad-stats.txt

# bad input: one error line with file:line:col, exit 1, no table
fails stats-missing 1 '^atr: nonexistent\.ndjson: No such file' "$ATR" stats nonexistent.ndjson
fails stats-malformed 1 '^atr: bad\.ndjson:2:51: expected 1 hash ids for 16 input tokens' "$ATR" stats bad.ndjson
printf '{"format":"atr-trace/1","trace_id":"x","steps":[' >trunc.ndjson
fails stats-truncated 1 '^atr: trunc\.ndjson:1:[0-9]+: ' "$ATR" stats small.ndjson trunc.ndjson
fails stats-wrong-from 1 '^atr: small\.ndjson:1:1: ' "$ATR" stats --from mooncake small.ndjson

# bad options: usage, exit 2
fails stats-no-file 2 'missing FILE' "$ATR" stats
fails stats-bad-format 2 "unknown format 'nope'" "$ATR" stats --from nope small.ndjson
fails stats-bad-max-ids 2 'max-ids wants an integer' "$ATR" stats --max-ids 0 small.ndjson
fails stats-bad-block 2 'block-size wants an integer' "$ATR" stats -b x small.ndjson
fails stats-unknown-long 2 "unknown option '--bogus'" "$ATR" stats --bogus small.ndjson
fails stats-unknown-short 2 "unknown option '-z'" "$ATR" stats -z small.ndjson
fails stats-needs-value 2 "option '--from' needs a value" "$ATR" stats small.ndjson --from
ok stats-help "$ATR" stats --help
check stats-help-keys "grep -q 'prefix_reuse.within' '$T/out' && grep -q 'token_error' '$T/out'"

# real samples: every file the converter handles also gives stats, with the
# same trace count (readers still being written may not convert yet)
for f in "$REAL"/*/*.traj "$REAL"/*/*.json "$REAL"/*/*.jsonl "$REAL"/*/*.csv "$REAL"/*/*.zip; do
    [ -f "$f" ] || continue
    "$ATR" convert -q -o real.ndjson "$f" 2>/dev/null || continue
    n=$(wc -l <real.ndjson)
    ok "stats-real $(basename "$f")" "$ATR" stats --json real.ndjson
    check "stats-real-count $(basename "$f")" "grep -q '^{\"files\":\\[{\"name\":\"real.ndjson\",\"format\":\"atr\",\"traces\":$n,' '$T/out'"
done
rm -f real.ndjson
