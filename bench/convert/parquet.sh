#!/bin/sh
# parquet.sh - `atr convert` of the same rows as Parquet and as JSON lines.
#
# usage: sh bench/convert/parquet.sh ATR [SIZE_MB]     (default 1024)
#
# Generates SIZE_MB of OpenAI-chat trajectories as JSON lines with
# gen_chat.py (observations 200-8000 characters, ~31 turns a row; kept in
# bench/convert/work/ for the next run), writes the same rows as a Hugging
# Face style dataset folder (data/train-0000K-of-00004.parquet, zstd, as
# DuckDB writes them, with build/atr-duckdb-sql) and the JSON lines of that
# folder's rows, then times:
#   jsonl 1 core      atr convert of the JSON lines, pinned to CPU 0
#   parquet 1 core    the folder, DuckDB at one thread, pinned to CPU 0
#                     (atr's fetching thread and its parser share the core)
#   parquet unpinned  the same, not pinned: the fetching thread (DuckDB's
#                     decoding and to_json) beside the parser
#   parquet all cores the folder, DuckDB at one thread per core
#   parquet by file   one atr per file, all at once (partition by file)
# and checks that the outputs are the same bytes. MB/s is of the JSON-lines
# bytes (the uncompressed text), so the rows are compared per byte of text.
# The rows keep their order: DuckDB preserves insertion order (its default).
# shellcheck disable=SC2086  # $PIN is split on purpose
set -eu

ATR=${1:?usage: parquet.sh ATR [SIZE_MB]}
SIZE=${2:-1024}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$HERE/work
case $ATR in /*) ;; *) ATR=$(pwd)/$ATR ;; esac
SQL=$(dirname "$ATR")/atr-duckdb-sql
[ -x "$SQL" ] || { echo "parquet.sh: no $SQL (sh scripts/deps.sh, then rebuild)" >&2; exit 1; }
mkdir -p "$WORK"
IN=$WORK/chat-${SIZE}mb.ndjson
DS=$WORK/chat-${SIZE}mb-parquet
TIMES=$WORK/pq-time.txt
trap 'rm -f "$TIMES" "$WORK"/pq-out*.ndjson "$WORK"/*.part' EXIT
PIN=""
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
    PIN="taskset -c 0"
fi

if [ ! -s "$IN" ]; then
    echo "generating $IN ($SIZE MB, seed 1) ..." >&2
    python3 "$HERE/gen_chat.py" "$IN.part" --size-mb "$SIZE" --seed 1
    mv "$IN.part" "$IN"
fi
if [ ! -d "$DS" ]; then
    echo "writing $DS (4 files) ..." >&2
    rm -rf "$DS.part" && mkdir -p "$DS.part/data"
    rows=$(wc -l <"$IN")
    per=$(( (rows + 3) / 4 ))
    set -- "CREATE TABLE t AS SELECT * FROM read_json_auto('$IN', format = 'newline_delimited', maximum_object_size = 268435456)"
    for k in 0 1 2 3; do
        set -- "$@" "COPY (SELECT * FROM t LIMIT $per OFFSET $((k * per))) TO '$DS.part/data/train-0000$k-of-00004.parquet' (FORMAT parquet, COMPRESSION zstd)"
    done
    "$SQL" "$@"
    mv "$DS.part" "$DS"
fi
# The JSON form of the Parquet rows, as DuckDB (or Hugging Face's viewer)
# writes it: Parquet has one schema per column, so a struct holds the union
# of the keys its rows had, and rows without one say null. Those nulls are
# part of the rows (atr renders tool schemas as the JSON they are), so the
# JSON-lines path reads this file, not gen_chat's.
JS=$WORK/chat-${SIZE}mb-parquet.jsonl
if [ ! -s "$JS" ]; then
    "$SQL" "COPY (SELECT * FROM read_parquet('$DS/data/*.parquet')) TO '$JS.part' (FORMAT json)"
    mv "$JS.part" "$JS"
fi

bytes=$(wc -c <"$JS")
rows=$(wc -l <"$JS")
pq_bytes=$(cat "$DS"/data/*.parquet | wc -c)
echo "input: $rows rows, $(awk "BEGIN { printf \"%.1f\", $bytes / 1e6 }") MB as JSON lines, $(awk "BEGIN { printf \"%.1f\", $pq_bytes / 1e6 }") MB as Parquet (4 files)"
echo "| path | wall s | CPU s | rows/s | MB/s (text) | peak RSS MB |"
echo "|---|---:|---:|---:|---:|---:|"
# row NAME CMD...: times CMD, prints the table row.
row() {
    name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$TIMES" "$@"
    read -r wall user sys peak <"$TIMES"
    awk -v n="$name" -v w="$wall" -v c="$(echo "$user + $sys" | bc)" -v p="$peak" \
        -v r="$rows" -v b="$bytes" 'BEGIN { printf "| %s | %.2f | %.2f | %.0f | %.1f | %.0f |\n",
        n, w, c, r / w, b / 1e6 / w, p / 1024 }'
}
row "jsonl, 1 core" $PIN "$ATR" convert -q "$JS" -o "$WORK/pq-out-json.ndjson"
ATR_PARQUET_THREADS=1 row "parquet, 1 core" $PIN "$ATR" convert -q "$DS" -o "$WORK/pq-out-1.ndjson"
ATR_PARQUET_THREADS=1 row "parquet, unpinned, DuckDB 1 thread" "$ATR" convert -q "$DS" -o "$WORK/pq-out-u.ndjson"
row "parquet, all cores ($(nproc)), DuckDB default" "$ATR" convert -q "$DS" -o "$WORK/pq-out-n.ndjson"
row "parquet, one atr per file (4)" sh -c 'for f in "$1"/data/*.parquet; do
    ATR_PARQUET_THREADS=1 "$2" convert -q "$f" -o "$3/pq-out-$(basename "$f" .parquet).ndjson" &
    done; wait' sh "$DS" "$ATR" "$WORK"
same=yes
cmp -s "$WORK/pq-out-json.ndjson" "$WORK/pq-out-1.ndjson" || same=no
cmp -s "$WORK/pq-out-json.ndjson" "$WORK/pq-out-n.ndjson" || same=no
cmp -s "$WORK/pq-out-json.ndjson" "$WORK/pq-out-u.ndjson" || same=no
cat "$WORK"/pq-out-train-*.ndjson | cmp -s "$WORK/pq-out-json.ndjson" - || same=no
echo "same atr-trace bytes from JSON lines and from Parquet: $same"
