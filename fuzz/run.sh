#!/bin/sh
# run.sh BUILD_DIR SECONDS - runs every libFuzzer target in BUILD_DIR for
# SECONDS each, seeded from tests/data (the corpus grows in fuzz/corpus-*/,
# which git ignores). Fails if any target finds a crash, leak or timeout.
set -eu
build=$1
seconds=$2
root=$(cd "$(dirname "$0")/.." && pwd)
status=0
for bin in "$build"/fuzz-*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    corpus="$root/fuzz/corpus-$name"
    mkdir -p "$corpus"
    # Seeds: the test data of the matching format (fuzz-fmt-X -> tests/data/X).
    fmt=${name#fuzz-fmt-}
    for d in "$root/tests/data/$fmt" "$root/tests/data/${fmt%%-*}"; do
        [ -d "$d" ] && find "$d" -type f -size -256k -exec cp {} "$corpus/" \;
    done
    { [ "$name" = fuzz-json ] || [ "$name" = fuzz-json-scan ]; } && find "$root/tests/data" -name '*.json' -size -64k -exec cp {} "$corpus/" \; 2>/dev/null
    [ "$name" = fuzz-cgroup ] && find "$root/tests/data/cgroup" -type f | while read -r f; do
        cp "$f" "$corpus/$(echo "${f#"$root"/}" | tr / _)"; done
    [ "$name" = fuzz-bench-spec ] && cp "$root"/tests/data/bench-spec/*.json "$root"/examples/bench/*.json "$corpus/"
    [ "$name" = fuzz-report ] && cp "$root"/tests/data/report/*.json "$root"/tests/data/report/*.ndjson "$corpus/" 2>/dev/null
    [ "$name" = fuzz-sessions ] && cp "$root"/tests/data/proxy/*.ndjson "$corpus/"
    [ "$name" = fuzz-bench-metrics ] && cp "$root"/tests/data/bench-run/*.txt "$corpus/"
    [ "$name" = fuzz-metrics ] && find "$root/tests/data/replay" -name '*.jsonl' -exec cp {} "$corpus/" \; 2>/dev/null
    [ "$name" = fuzz-llm-requests ] && cp "$root"/tests/data/llm/requests.ndjson "$corpus/"
    # Profile files: the first byte picks GPU (even) or model (odd).
    if [ "$name" = fuzz-profile ]; then
        (printf '\000'; cat "$root/profiles/gpus/h100.json") >"$corpus/seed-gpu"
        (printf '\001'; cat "$root/profiles/models/qwen3-4b-awq.json") >"$corpus/seed-model"
    fi
    echo "fuzz: $name for ${seconds}s"
    if ! "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$root/fuzz/" "$corpus" >"$build/$name.log" 2>&1; then
        echo "fuzz: $name FAILED, see $build/$name.log"; tail -n 30 "$build/$name.log"
        status=1
    fi
done
exit $status
