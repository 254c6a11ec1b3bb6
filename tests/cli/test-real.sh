# test-real.sh - every real trace file in ../shared/data/real converts with its
# format sniffed, and the output validates. (bench-results holds benchmark
# result files, not traces: a later issue reads them.)
if [ -d "$REAL" ]; then
    mkdir -p "$T/real"
    for f in $(find "$REAL" -type f ! -name '*.txt' ! -name '*.md' ! -path '*/bench-results/*' | sort); do
        name=$(basename "$f")
        ok "real convert $name" "$ATR" convert -q "$f" -o "$T/real/$name.ndjson"
        ok "real validate $name" "$ATR" validate "$T/real/$name.ndjson"
        check "real non-empty $name" "[ -s '$T/real/$name.ndjson' ]"
    done
fi
