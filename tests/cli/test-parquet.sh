# test-parquet.sh - Parquet input (docs/datasets.md): the rows of a Parquet
# file, glob or dataset folder convert as the JSON form of the same rows.

# Without the library: one clear error naming the set-up, whether this atr
# was built with DuckDB or not (the magic alone decides it is Parquet).
printf 'PAR1 not really\n' >"$T/nolib.parquet"
ATR_DUCKDB_LIB=$T/none/libduckdb.so fails "parquet without duckdb" 1 \
    'nolib.parquet: Parquet input needs DuckDB.*scripts/deps.sh' \
    "$ATR" convert "$T/nolib.parquet" -o "$T/p0"
absent "parquet without duckdb leaves nothing" "$T/p0"

# The Parquet files are written by DuckDB itself (tests/helpers/duckdb-sql.c,
# built beside atr only where scripts/deps.sh installed DuckDB).
SQL=$(dirname "$ATR")/atr-duckdb-sql
if [ ! -x "$SQL" ]; then
    echo "skip: parquet tests need DuckDB (sh scripts/deps.sh, then rebuild): no $SQL"
else
PQ=$T/pq
mkdir -p "$PQ/ds/data" "$PQ/hf/default" "$PQ/empty"
# parquet_of JSON OUT [OPTIONS]: the JSON file's rows (an array or JSON lines) as Parquet.
parquet_of() {
    "$SQL" "COPY (SELECT * FROM read_json_auto('$1')) TO '$2' (FORMAT parquet${3:+, $3})"
}

# The shared samples, and other readers' row-shaped ones: the same
# atr-trace, byte for byte, from JSON and from Parquet (zstd pages).
for f in "$REAL"/openai-chat/*.sample_raw.json "$REAL"/mooncake/synthetic_trace.jsonl \
         "$DATA"/openai-chat/mixed-rows.jsonl; do
    b=$(basename "$f"); b=${b%%.*}
    ok "parquet write $b" parquet_of "$f" "$PQ/$b.parquet" "COMPRESSION zstd"
    ok "parquet json $b" "$ATR" convert -q "$f" -o "$PQ/$b.json.ndjson"
    ok "parquet convert $b" "$ATR" convert -q "$PQ/$b.parquet" -o "$PQ/$b.pq.ndjson"
    check "parquet same as json $b" "cmp '$PQ/$b.json.ndjson' '$PQ/$b.pq.ndjson' && [ -s '$PQ/$b.pq.ndjson' ]"
done
# Rows are written from DuckDB's vectors as to_json writes them (escapes,
# nulls, lists, structs, maps, JSON values as to_json rewrites them, and
# to_json's text for the types atr leaves to it): the same trace as with
# ATR_PARQUET_TO_JSON=1 (every column through to_json) and as from the
# rows' JSON form, message text kept.
ok "parquet types write" "$SQL" "COPY (SELECT 'r-' || i AS instance_id, i % 2 = 0 AS resolved, [{'role': 'user', 'content': 'fix ' || chr(1) || chr(31) || chr(9) || chr(10) || '\\ \"q\" é 😀 ' || i, 'meta': CASE WHEN i % 3 = 0 THEN NULL ELSE '{ \"a\" : [1, 2.50, \"x\\/y\\u00e9\"] }'::JSON END}, {'role': 'assistant', 'content': CASE WHEN i % 2 = 0 THEN NULL ELSE 'ok' END, 'meta': '{\"n\":-5,\"s\":\"\\u001F\\n\"}'::JSON}] AS messages, MAP {'k\"1': i, 'k2': NULL} AS m, [[i, NULL], [], NULL] AS ll, (i - 3)::TINYINT AS ti, 18446744073709551615::UBIGINT AS ub, i / 3 AS d, [i::FLOAT / 4] AS fl, NULL AS nul FROM range(5) r(i)) TO '$PQ/types.parquet' (FORMAT parquet)" \
    "COPY (SELECT * FROM read_parquet('$PQ/types.parquet')) TO '$PQ/types.jsonl' (FORMAT json)"
ok "parquet types" "$ATR" convert -q --keep-content "$PQ/types.parquet" -o "$PQ/types.pq.ndjson"
ok "parquet types to_json" env ATR_PARQUET_TO_JSON=1 "$ATR" convert -q --keep-content "$PQ/types.parquet" -o "$PQ/types.tj.ndjson"
ok "parquet types json" "$ATR" convert -q --keep-content "$PQ/types.jsonl" -o "$PQ/types.json.ndjson"
check "parquet types same as to_json" "cmp '$PQ/types.tj.ndjson' '$PQ/types.pq.ndjson' && [ \$(wc -l <'$PQ/types.pq.ndjson') -eq 5 ]"
check "parquet types same as json" "cmp '$PQ/types.json.ndjson' '$PQ/types.pq.ndjson'"
check "parquet types text kept" "grep -q 'fix \\\\u0001' '$PQ/types.pq.ndjson'"
# SWE-rebench's shape (OpenAI-chat messages under "trajectory"), sniffed.
printf '%s\n' '{"instance_id":"r-1","trajectory":[{"role":"user","content":"fix it"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"execute_bash","arguments":"{\"command\":\"ls -la\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"a b"}],"resolved":true}' >"$PQ/rebench.jsonl"
ok "parquet rebench write" parquet_of "$PQ/rebench.jsonl" "$PQ/rebench.parquet"
ok "parquet rebench sniffed" "$ATR" convert -q "$PQ/rebench.parquet" -o "$PQ/rebench.ndjson"
check "parquet rebench tool step" "grep -q '\"trace_id\":\"openai-chat/r-1\".*\"command\":\"ls -la\"' '$PQ/rebench.ndjson'"
N=nebius_SWE-agent-trajectories
ok "parquet stats" "$ATR" stats "$PQ/$N.parquet"
check "parquet stats five traces" "grep -q '(openai-chat, 5 traces, 98 steps)' '$T/out'"

# A dataset folder as Hugging Face lays it out, and a glob: the files in
# name order, as if their JSON forms were converted one after the other.
cp "$PQ/$N.parquet" "$PQ/ds/data/train-00001-of-00002.parquet"
cp "$PQ/swe-gym_openhands_sampled_trajectories.parquet" "$PQ/ds/data/train-00000-of-00002.parquet"
cat "$PQ/swe-gym_openhands_sampled_trajectories.json.ndjson" "$PQ/$N.json.ndjson" >"$PQ/both.ndjson"
ok "parquet folder" "$ATR" convert -q "$PQ/ds" -o "$PQ/ds.ndjson"
check "parquet folder = both files" "cmp '$PQ/both.ndjson' '$PQ/ds.ndjson'"
ok "parquet glob" "$ATR" convert -q "$PQ/ds/data/train-*.parquet" -o "$PQ/glob.ndjson"
check "parquet glob = both files" "cmp '$PQ/both.ndjson' '$PQ/glob.ndjson'"
cp "$PQ/$N.parquet" "$PQ/hf/default/train-00000-of-00001.parquet"
ok "parquet split folder" "$ATR" convert -q "$PQ/hf" -o "$PQ/hf.ndjson"
check "parquet split folder = file" "cmp '$PQ/$N.json.ndjson' '$PQ/hf.ndjson'"

# --limit: the first N traces, as from the JSON form.
ok "parquet limit" "$ATR" convert -q --limit 2 "$PQ/ds" -o "$PQ/l.ndjson"
check "parquet limit first two" "head -n 2 '$PQ/both.ndjson' | cmp - '$PQ/l.ndjson'"

# --sample N --seed S: N rows chosen from the footers' row counts over all
# the files of a glob, read alone, in file order; the same seed the same
# rows, another seed others; all rows when N is larger. 1500 rows in row
# groups of 100 over two files.
ok "parquet sample write a" "$SQL" "COPY (SELECT 'a-' || i AS instance_id, [{'role': 'user', 'content': 'fix ' || i}, {'role': 'assistant', 'content': 'ok'}] AS messages FROM range(1000) r(i)) TO '$PQ/s-a.parquet' (FORMAT parquet, ROW_GROUP_SIZE 100)"
ok "parquet sample write b" "$SQL" "COPY (SELECT 'b-' || i AS instance_id, [{'role': 'user', 'content': 'fix ' || i}, {'role': 'assistant', 'content': 'ok'}] AS messages FROM range(500) r(i)) TO '$PQ/s-b.parquet' (FORMAT parquet, ROW_GROUP_SIZE 100)"
ok "parquet sample all" "$ATR" convert -q "$PQ/s-*.parquet" -o "$PQ/s-all.ndjson"
ok "parquet sample" "$ATR" convert -q "$PQ/s-*.parquet" --sample 40 --seed 3 -o "$PQ/s-3.ndjson"
ok "parquet sample again" "$ATR" convert -q "$PQ/s-*.parquet" --sample 40 --seed 3 -o "$PQ/s-3b.ndjson"
ok "parquet sample seed 4" "$ATR" convert -q "$PQ/s-*.parquet" --sample 40 -s 4 -o "$PQ/s-4.ndjson"
check "parquet sample 40 rows" "[ \$(wc -l <'$PQ/s-3.ndjson') -eq 40 ]"
check "parquet sample same seed same rows" "cmp '$PQ/s-3.ndjson' '$PQ/s-3b.ndjson'"
check "parquet sample other seed other rows" "! cmp -s '$PQ/s-3.ndjson' '$PQ/s-4.ndjson'"
# Each sampled trace is the full conversion's, in the same order, and both
# files are drawn from (1000:500: about 27 and 13 of 40).
check "parquet sample in file order" "grep -F -x -f '$PQ/s-3.ndjson' '$PQ/s-all.ndjson' | cmp - '$PQ/s-3.ndjson'"
check "parquet sample both files" "grep -q '/a-' '$PQ/s-3.ndjson' && grep -q '/b-' '$PQ/s-3.ndjson'"
ok "parquet sample more than rows" "$ATR" convert -q "$PQ/s-*.parquet" --sample 5000 -o "$PQ/s-big.ndjson"
check "parquet sample more than rows is all" "cmp '$PQ/s-all.ndjson' '$PQ/s-big.ndjson'"
fails "parquet sample of JSON lines" 1 'mixed-rows.jsonl: --sample needs Parquet input.*atr sample' \
    "$ATR" convert "$DATA/openai-chat/mixed-rows.jsonl" --sample 2 -o "$PQ/s-x"
absent "parquet sample of JSON lines leaves nothing" "$PQ/s-x"
fails "parquet sample of two inputs" 2 '--sample takes one input' \
    "$ATR" convert "$PQ/s-a.parquet" "$PQ/s-b.parquet" --sample 2 -o "$PQ/s-x"
fails "parquet sample zero" 2 '--sample wants a positive integer' \
    "$ATR" convert "$PQ/s-a.parquet" --sample 0 -o "$PQ/s-x"
# An error in a sampled row is reported at its row of the file, not its
# position in the sample: rows 501.. of s-a hold a number where the
# messages are.
ok "parquet sample bad write" "$SQL" "COPY (SELECT 'c-' || i AS instance_id, CASE WHEN i < 500 THEN [{'role': 'user', 'content': 'fix'}] ELSE NULL END AS messages FROM range(1000) r(i)) TO '$PQ/s-c.parquet' (FORMAT parquet, ROW_GROUP_SIZE 100)"
fails "parquet sample error at its row" 1 's-c.parquet:[5-9][0-9][0-9]:[0-9]+: expected a row with a "messages" array' \
    "$ATR" convert "$PQ/s-c.parquet" --sample 10 -o "$PQ/s-x"
absent "parquet sample error leaves nothing" "$PQ/s-x"

# atr sample reads through the same reader: the seeded pick from the
# folder is the pick from the two JSON files.
ok "parquet sample" "$ATR" sample -q --size 3 --seed 7 "$PQ/ds" -o "$PQ/s1.ndjson"
ok "json sample" "$ATR" sample -q --size 3 --seed 7 "$REAL/openai-chat/swe-gym_openhands_sampled_trajectories.sample_raw.json" \
    "$REAL/openai-chat/$N.sample_raw.json" -o "$PQ/s2.ndjson"
check "parquet sample = json sample" "cmp '$PQ/s1.ndjson' '$PQ/s2.ndjson' && [ \$(wc -l <'$PQ/s1.ndjson') -eq 3 ]"

# Bad input: one error naming the file (and the row group or row), exit 1,
# nothing left behind.
head -c 20000 "$PQ/$N.parquet" >"$PQ/trunc.parquet"
fails "parquet truncated" 1 'trunc.parquet: not a readable Parquet file: .*magic' \
    "$ATR" convert "$PQ/trunc.parquet" -o "$PQ/b1"
absent "parquet truncated leaves nothing" "$PQ/b1"
{ printf 'PAR0'; tail -c +5 "$PQ/$N.parquet"; } >"$PQ/magic.parquet"
fails "parquet wrong magic" 1 'magic.parquet: not a Parquet file \(it does not start with the magic bytes PAR1\)' \
    "$ATR" convert "$PQ/magic.parquet" -o "$PQ/b2"
fails "parquet empty folder" 1 'empty: no Parquet files in this folder' \
    "$ATR" convert "$PQ/empty" -o "$PQ/b3"
fails "parquet glob without match" 1 'none-\*.parquet: no file matches this pattern' \
    "$ATR" convert "$PQ/none-*.parquet" -o "$PQ/b3"
absent "parquet empty leaves nothing" "$PQ/b3"
fails "parquet from stdin" 1 '<stdin>: Parquet needs a file' \
    sh -c "'$ATR' convert - -o '$PQ/b4' <'$PQ/$N.parquet'"
# Five row groups of 2048 rows, uncompressed; row group 2's first page
# overwritten (its offset from DuckDB's own footer reader).
ok "parquet row groups" "$SQL" "COPY (SELECT i * 10 AS timestamp, 100 + i % 50 AS input_length, 5 AS output_length, [i, i + 1] AS hash_ids FROM range(10000) r(i)) TO '$PQ/rg.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048, COMPRESSION uncompressed)" \
    "COPY (SELECT min(data_page_offset) FROM parquet_metadata('$PQ/rg.parquet') WHERE row_group_id = 2) TO '$PQ/rg.off' (FORMAT csv, HEADER false)"
ok "parquet row groups read" "$ATR" convert -q "$PQ/rg.parquet" -o "$PQ/rg.ndjson"
cp "$PQ/rg.parquet" "$PQ/corrupt.parquet"
printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' |
    dd of="$PQ/corrupt.parquet" bs=1 seek="$(cat "$PQ/rg.off")" conv=notrunc 2>/dev/null
fails "parquet corrupt row group" 1 'corrupt.parquet: row group 2 \(rows 4097-6144\): ' \
    "$ATR" convert "$PQ/corrupt.parquet" -o "$PQ/b5"
absent "parquet corrupt leaves nothing" "$PQ/b5"
# A column of an unexpected type: the reader's error at its row (line = row).
ok "parquet odd column" "$SQL" "COPY (SELECT 'a' AS instance_id, 5 AS messages) TO '$PQ/col.parquet' (FORMAT parquet)"
fails "parquet odd column named" 1 'col.parquet:1:[0-9]+: expected a row with a "messages" array' \
    "$ATR" convert --from openai-chat "$PQ/col.parquet" -o "$PQ/b6"
# In a folder, the error names the file of that row, and its row there.
mkdir -p "$PQ/mixed/data"
cp "$PQ/$N.parquet" "$PQ/mixed/data/a.parquet"
cp "$PQ/col.parquet" "$PQ/mixed/data/b.parquet"
fails "parquet folder error names its file" 1 'mixed/data/b.parquet:1:[0-9]+: expected a row with a "messages" array' \
    "$ATR" convert --from openai-chat "$PQ/mixed" -o "$PQ/b8"
absent "parquet folder error leaves nothing" "$PQ/b8"
# A huge string: the row's JSON over --max-line fails at that row.
ok "parquet huge row" "$SQL" "COPY (SELECT * FROM (VALUES ('a', [{'role': 'user', 'content': 'x'}]), ('b', [{'role': 'user', 'content': repeat('x', 3000000)}])) v(instance_id, messages)) TO '$PQ/huge.parquet' (FORMAT parquet)"
fails "parquet huge row named" 1 'huge.parquet:2: row \(as JSON\) longer than 1048576 bytes' \
    "$ATR" convert --max-line 1M --from openai-chat "$PQ/huge.parquet" -o "$PQ/b7"
absent "parquet huge leaves nothing" "$PQ/b7"
fi
