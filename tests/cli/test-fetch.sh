# test-fetch.sh - `atr fetch` against a local stand-in for the Hugging Face
# Hub (tests/helpers/hubstub.py on 127.0.0.1, port 0): the listing over
# pages, LFS files behind a redirect, --split/--files/--limit-files, a
# dropped connection and an interrupted run resumed with Range, a wrong
# checksum, 401 (the HF_TOKEN message), 404, 429 with Retry-After; then
# fetch + convert + stats end to end on a JSONL dataset of real rows
# (../shared/data/real/openai-chat, SOURCE.txt there). No internet.
FX=$T/fetch
mkdir -p "$FX/root/acme/chat/data"
python3 - "$REAL/openai-chat/swe-gym_openhands_sampled_trajectories.sample_raw.json" \
    "$FX/root/acme/chat" <<'PY'
import json, sys
rows, d = json.load(open(sys.argv[1])), sys.argv[2]
for name, rs in (("train-00000-of-00002.jsonl", rows[:3]), ("train-00001-of-00002.jsonl", rows[3:]),
                 ("test-00000-of-00001.jsonl", rows[:1])):
    open(d + "/data/" + name, "w").write("".join(json.dumps(r) + "\n" for r in rs))
open(d + "/README.md", "w").write("# chat\n")
PY
for owner in flaky corrupt busy gated norange evil; do
    mkdir -p "$FX/root/$owner" && cp -r "$FX/root/acme/chat" "$FX/root/$owner/"
done
# A Parquet dataset (written by DuckDB itself, where scripts/deps.sh
# installed it: tests/helpers/duckdb-sql.c), as the Hub serves most.
SQL=$(dirname "$ATR")/atr-duckdb-sql
NEB=$REAL/openai-chat/nebius_SWE-agent-trajectories.sample_raw.json
if [ -x "$SQL" ]; then
    mkdir -p "$FX/root/acme/pq/data"
    "$SQL" "COPY (SELECT * FROM read_json_auto('$NEB')) TO '$FX/root/acme/pq/data/train-00000-of-00001.parquet' (FORMAT parquet, COMPRESSION zstd)"
fi
python3 "$ROOT/tests/helpers/hubstub.py" "$FX/root" "$FX/port" "$FX/log" 2>"$FX/stub.err" &
FX_PID=$!
if ! wait_for 10 "[ -s '$FX/port' ]"; then
    fail "the hub stand-in did not start: $(head -c 300 "$FX/stub.err")"
fi
HF_ENDPOINT=http://127.0.0.1:$(cat "$FX/port")
export HF_ENDPOINT
unset HF_TOKEN
fx_same() { cmp -s "$FX/root/$1" "$2"; }

# The whole revision: four files over two listing pages, LFS ones redirected.
ok fetch-all "$ATR" fetch hf:acme/chat -o "$FX/all"
check fetch-all-summary "grep -q '^hf:acme/chat@[0-9a-f]\{40\}: 4 files, .* (4 fetched, 0 up to date' '$T/out'"
check fetch-all-files "cmp -s '$FX/root/acme/chat/README.md' '$FX/all/README.md' && cmp -s '$FX/root/acme/chat/data/train-00001-of-00002.jsonl' '$FX/all/data/train-00001-of-00002.jsonl' && [ \$(find '$FX/all' -type f | wc -l) = 4 ]"
check fetch-pages-followed "grep -q 'tree/[0-9a-f]*?recursive=true&cursor=2' '$FX/log'"
check fetch-lfs-redirected "grep -q '^GET /cdn/acme%2Fchat/' '$FX/log'"
ok fetch-again-up-to-date "$ATR" fetch hf:acme/chat -o "$FX/all"
check fetch-again-nothing-fetched "grep -q '(0 fetched, 4 up to date, 0.0 MB downloaded)' '$T/out'"

ok fetch-json "$ATR" fetch -q --json hf:acme/chat --files '*.md' -o "$FX/all"
check fetch-json-fields "python3 -c \"
import json; d = json.load(open('$T/out'))
assert d['repo'] == 'acme/chat' and d['revision'] == 'main' and len(d['commit']) == 40, d
assert d['bytes_downloaded'] == 0 and d['files'] == [{'path': 'README.md', 'size': 7, 'sha256': None, 'fetched': False}], d\""

# Selection.
ok fetch-split "$ATR" fetch hf:acme/chat --split train -o "$FX/train"
check fetch-split-files "[ \"\$(cd '$FX/train' && find . -type f | sort | tr '\n' ' ')\" = './data/train-00000-of-00002.jsonl ./data/train-00001-of-00002.jsonl ' ]"
ok fetch-files-limit "$ATR" fetch hf:acme/chat --files 'data/*.jsonl' --limit-files 1 -o "$FX/one"
check fetch-files-limit-one "[ \"\$(cd '$FX/one' && find . -type f)\" = './data/test-00000-of-00001.jsonl' ]"
fails fetch-no-match 1 '^atr: hf:acme/chat@main: no file matches the selection$' \
    "$ATR" fetch -q hf:acme/chat --split validation -o "$FX/none"

# A connection dropped halfway through each file: resumed with Range.
ok fetch-dropped-resumed "$ATR" fetch hf:flaky/chat --split train -o "$FX/flaky"
check fetch-dropped-same-bytes "cmp -s '$FX/root/flaky/chat/data/train-00000-of-00002.jsonl' '$FX/flaky/data/train-00000-of-00002.jsonl' && cmp -s '$FX/root/flaky/chat/data/train-00001-of-00002.jsonl' '$FX/flaky/data/train-00001-of-00002.jsonl'"
check fetch-dropped-range-sent "grep -q '^GET /cdn/flaky%2Fchat/.* bytes=[1-9][0-9]*- -$' '$FX/log'"
# An interrupted run's .part: the next run asks only for the rest.
mkdir -p "$FX/part/data"
head -c 1000 "$FX/root/acme/chat/data/test-00000-of-00001.jsonl" >"$FX/part/data/test-00000-of-00001.jsonl.part"
ok fetch-part-resumed "$ATR" fetch hf:acme/chat --split test -o "$FX/part"
check fetch-part-range "grep -q '^GET /cdn/acme%2Fchat/.* bytes=1000- -$' '$FX/log' && cmp -s '$FX/root/acme/chat/data/test-00000-of-00001.jsonl' '$FX/part/data/test-00000-of-00001.jsonl'"
absent fetch-part-renamed "$FX/part/data/test-00000-of-00001.jsonl.part"
# A CDN that ignores the Range (200, the whole file): read from the start.
mkdir -p "$FX/norange/data"
head -c 1000 "$FX/root/acme/chat/data/test-00000-of-00001.jsonl" >"$FX/norange/data/test-00000-of-00001.jsonl.part"
ok fetch-range-ignored "$ATR" fetch hf:norange/chat --split test -o "$FX/norange"
check fetch-range-ignored-same "grep -q '^GET /cdn/norange%2Fchat/.* bytes=1000- -$' '$FX/log' && cmp -s '$FX/root/acme/chat/data/test-00000-of-00001.jsonl' '$FX/norange/data/test-00000-of-00001.jsonl'"

# A wrong checksum: one clear error, no file (nor .part) left.
fails fetch-corrupt 1 '^atr: data/test-00000-of-00001.jsonl: sha256 is [0-9a-f]{64}, the listing says [0-9a-f]{64}: the download is corrupt \(removed\)$' \
    "$ATR" fetch -q hf:corrupt/chat --split test -o "$FX/corrupt"
absent fetch-corrupt-no-file "$FX/corrupt/data/test-00000-of-00001.jsonl"
absent fetch-corrupt-no-part "$FX/corrupt/data/test-00000-of-00001.jsonl.part"
# A .part that is not a prefix of the file fails its check the same way.
mkdir -p "$FX/badpart/data"
printf 'not the file' >"$FX/badpart/data/test-00000-of-00001.jsonl.part"
fails fetch-bad-part 1 'the download is corrupt \(removed\)$' \
    "$ATR" fetch -q hf:acme/chat --split test -o "$FX/badpart"
absent fetch-bad-part-removed "$FX/badpart/data/test-00000-of-00001.jsonl.part"

# 401, 404, 429.
fails fetch-gated-no-token 1 'HTTP 401: a gated dataset, and no token was given: .*: set HF_TOKEN to a token that may read it' \
    "$ATR" fetch -q hf:gated/chat -o "$FX/gated"
absent fetch-gated-no-dir "$FX/gated"
fails fetch-gated-bad-token 1 'HTTP 401: a gated dataset, and the token has no access: .*: check that HF_TOKEN may read this dataset$' \
    env HF_TOKEN=hf_bad "$ATR" fetch -q hf:gated/chat -o "$FX/gated"
ok fetch-gated-token "env" HF_TOKEN=hf_good "$ATR" fetch -q hf:gated/chat --split test -o "$FX/gated"
check fetch-gated-token-file "[ -f '$FX/gated/data/test-00000-of-00001.jsonl' ]"
check fetch-gated-token-sent "grep -q '^GET /datasets/gated/chat/resolve/.* auth$' '$FX/log'"
check fetch-gated-token-not-to-cdn "grep -q '^GET /cdn/gated%2Fchat/.* -$' '$FX/log' && ! grep -q '^GET /cdn/.* auth$' '$FX/log'"
fails fetch-404-repo 1 'revision/main: HTTP 404: no such dataset, revision or file: Repository not found$' \
    "$ATR" fetch -q hf:nobody/chat -o "$FX/nobody"
absent fetch-404-no-dir "$FX/nobody"
fails fetch-404-revision 1 'revision/v9: HTTP 404: no such dataset, revision or file: Invalid rev id: v9$' \
    "$ATR" fetch -q hf:acme/chat@v9 -o "$FX/nobody"
ok fetch-429-retried "$ATR" fetch -q hf:busy/chat --split test -o "$FX/busy"
check fetch-429-asked-twice "[ \$(grep -c '^GET /api/datasets/busy/chat/revision/main ' '$FX/log') = 2 ]"
mv "$FX/root/busy/chat" "$FX/root/busy/chat2"
fails fetch-429-no-retries 1 'HTTP 429' "$ATR" fetch -q --retries 0 hf:busy/chat2 -o "$FX/busy2"

# A listing naming a path outside DIR: refused before anything is written.
fails fetch-unsafe-path 1 "tree/[0-9a-f]{40}\\?recursive=true&cursor=4: 1:[0-9]+: unsafe file path '\\.\\./escape'\$" \
    "$ATR" fetch -q hf:evil/chat -o "$FX/evil"
absent fetch-unsafe-no-dir "$FX/evil"

# A DIR another fetch holds (its flock) is refused, and left as it was.
mkdir -p "$FX/locked"
ok fetch-locked python3 -c "
import fcntl, os, subprocess, sys
fd = os.open('$FX/locked', os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
p = subprocess.run(['$ATR', 'fetch', '-q', 'hf:acme/chat', '-o', '$FX/locked'], capture_output=True, text=True)
sys.stdout.write('%d %s' % (p.returncode, p.stderr))"
check fetch-locked-refused "grep -qx '1 atr: .*/locked: another atr fetch is writing there' '$T/out' && [ -z \"\$(ls -A '$FX/locked')\" ]"

# Usage errors.
fails fetch-usage-spec 2 "^atr fetch: 'acme/chat' is not hf:OWNER/NAME\[@REVISION\]" \
    "$ATR" fetch acme/chat -o "$FX/x"
fails fetch-usage-out 2 '^atr fetch: missing -o DIR' "$ATR" fetch hf:acme/chat

# Progress on stderr, one line per update here (ATR_PROGRESS_INTERVAL_MS=0).
ok fetch-progress env ATR_PROGRESS_INTERVAL_MS=0 "$ATR" fetch hf:acme/chat --split train -o "$FX/prog"
check fetch-progress-lines "grep -q '^atr: fetch  *[0-9]*%  .* MB/s  file 2/2' '$T/err'"

# End to end: fetch, convert, stats; the same traces as the rows' JSON form.
ok fetch-e2e-convert "$ATR" convert -q "$FX/train/data/train-00000-of-00002.jsonl" \
    "$FX/train/data/train-00001-of-00002.jsonl" -o "$FX/fetched.ndjson"
ok fetch-e2e-direct "$ATR" convert -q "$REAL/openai-chat/swe-gym_openhands_sampled_trajectories.sample_raw.json" \
    -o "$FX/direct.ndjson"
check fetch-e2e-same-traces "cmp -s '$FX/fetched.ndjson' '$FX/direct.ndjson'"
ok fetch-e2e-stats "$ATR" stats "$FX/fetched.ndjson"
check fetch-e2e-stats-counts "grep -q 'fetched.ndjson  (atr, 5 traces, 171 steps)' '$T/out'"

# The same, from a Parquet dataset folder: fetch, convert the folder, stats.
if [ -x "$SQL" ]; then
    ok fetch-e2e-parquet "$ATR" fetch -q hf:acme/pq --split train -o "$FX/pq"
    ok fetch-e2e-parquet-convert "$ATR" convert -q "$FX/pq" -o "$FX/pq.ndjson"
    ok fetch-e2e-parquet-direct "$ATR" convert -q "$NEB" -o "$FX/pq-direct.ndjson"
    check fetch-e2e-parquet-same-traces "cmp -s '$FX/pq.ndjson' '$FX/pq-direct.ndjson' && [ -s '$FX/pq.ndjson' ]"
    ok fetch-e2e-parquet-stats "$ATR" stats "$FX/pq.ndjson"
    check fetch-e2e-parquet-stats-counts "grep -q 'pq.ndjson  (atr, 5 traces, ' '$T/out'"
else
    echo "skip: the Parquet end to end needs DuckDB (sh scripts/deps.sh, then rebuild): no $SQL"
fi

kill "$FX_PID" 2>/dev/null
wait "$FX_PID" 2>/dev/null
unset HF_ENDPOINT
