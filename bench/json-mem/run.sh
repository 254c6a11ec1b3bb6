#!/bin/sh
# run.sh - peak RSS of `atr validate` and `atr convert` on one 100 MB line
# of small numbers: an unknown member `[0,0,...]` (a node per value) and a
# `hash_ids` array of 50M ids (packed), each one atr-trace line.
#
# usage: sh bench/json-mem/run.sh ATR [WORKDIR]     (WORKDIR default: mktemp -d)
#
# Prints "input command exit peak_kb wall_s first-stderr-line" per run; the
# inputs (200 MB) are deleted at the end.
set -u
ATR=${1:?usage: run.sh ATR [WORKDIR]}
W=${2:-$(mktemp -d)}
mkdir -p "$W"
trap 'rm -f "$W/zeros.ndjson" "$W/hashids.ndjson" "$W/out.ndjson" "$W/time.txt"' EXIT

# line MEMBER_PREFIX INPUT_TOKENS: 50,000,001 zeros after the prefix.
line() {
    printf '{"format":"atr-trace/1","trace_id":"x/1","steps":[{"i":0,"kind":"llm",%s' "$1"
    yes 0, | tr -d '\n' | head -c 100000000
    printf '0]}]}\n'
}
line '"input_tokens":16,"hash_ids":[1],"zz":[' >"$W/zeros.ndjson"
line '"input_tokens":800000016,"hash_ids":[' >"$W/hashids.ndjson"

for f in zeros hashids; do
    for cmd in validate convert; do
        if [ "$cmd" = validate ]; then set -- validate "$W/$f.ndjson"
        else set -- convert "$W/$f.ndjson" -o "$W/out.ndjson"; fi
        /usr/bin/time -f "%M %e" -o "$W/time.txt" "$ATR" "$@" >/dev/null 2>"$W/err.txt"
        rc=$?
        printf '%s %s %s %s "%s"\n' "$f" "$cmd" "$rc" "$(cat "$W/time.txt" | tail -1)" \
            "$(tail -n 1 "$W/err.txt" | head -c 160)"
        rm -f "$W/out.ndjson"
    done
done
rm -f "$W/err.txt"
