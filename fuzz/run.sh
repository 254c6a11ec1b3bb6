#!/bin/sh
# run.sh BUILD_DIR SECONDS [JOBS] - runs every libFuzzer target in BUILD_DIR
# for SECONDS each, JOBS (default: the CPU count) at a time, seeded from
# tests/data (the corpus grows in fuzz/corpus-*/, which git ignores). Fails
# if any target finds a crash, leak or timeout.
set -eu
build=$1
seconds=$2
jobs=${3:-$(nproc)}
root=$(cd "$(dirname "$0")/.." && pwd)

# fuzz_one BIN : seeds BIN's corpus and fuzzes it; a finding leaves
# $failed/NAME (a background lane's status says only that its seeding
# stopped it). Each target has its own corpus, log and artifact names, so
# targets can run side by side.
fuzz_one() {
    bin=$1
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
    [ "$name" = fuzz-fmt-atr ] && cp "$root"/tests/data/dag/*.ndjson "$corpus/"
    [ "$name" = fuzz-trace-lean ] && cp "$root"/tests/data/atr/*.ndjson "$root"/tests/data/dag/*.ndjson "$corpus/"
    [ "$name" = fuzz-sessions ] && cp "$root"/tests/data/proxy/*.ndjson "$corpus/"
    [ "$name" = fuzz-bench-metrics ] && cp "$root"/tests/data/bench-run/*.txt "$corpus/"
    [ "$name" = fuzz-metrics ] && find "$root/tests/data/replay" -name '*.jsonl' -exec cp {} "$corpus/" \; 2>/dev/null
    [ "$name" = fuzz-llm-requests ] && cp "$root"/tests/data/llm/requests.ndjson "$corpus/"
    [ "$name" = fuzz-parquet ] && cp "$root"/tests/data/parquet/*.parquet "$corpus/"
    [ "$name" = fuzz-hub ] && cp "$root"/tests/data/hub/*.bin "$corpus/"
    [ "$name" = fuzz-gguf ] && cp "$root"/tests/data/gguf/*.gguf "$corpus/"
    # Profile files: the first byte picks GPU (even) or model (odd).
    if [ "$name" = fuzz-profile ]; then
        (printf '\000'; cat "$root/profiles/gpus/h100.json") >"$corpus/seed-gpu"
        (printf '\001'; cat "$root/profiles/models/qwen3-4b-awq.json") >"$corpus/seed-model"
    fi
    echo "fuzz: $name for ${seconds}s"
    if ! "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$root/fuzz/" "$corpus" >"$build/$name.log" 2>&1; then
        echo "fuzz: $name FAILED, see $build/$name.log"; tail -n 30 "$build/$name.log"
        touch "$failed/$name"
    fi
}

# Each fuzzer is one busy thread for a fixed time, so JOBS lanes (target i
# in lane i mod JOBS) take SECONDS x targets / JOBS. The lanes run fuzz_one
# outside any || so that set -e still stops a lane whose seeding fails.
failed=$(mktemp -d)
trap 'rm -rf "$failed"' EXIT
lanes=""
lane=0
while [ "$lane" -lt "$jobs" ]; do
    (
        i=0
        for bin in "$build"/fuzz-*; do
            [ -x "$bin" ] || continue
            if [ $((i % jobs)) -eq "$lane" ]; then fuzz_one "$bin"; fi
            i=$((i + 1))
        done
    ) &
    lanes="$lanes $!"
    lane=$((lane + 1))
done
status=0
for pid in $lanes; do wait "$pid" || status=1; done
[ -z "$(ls "$failed")" ] || status=1
exit $status
