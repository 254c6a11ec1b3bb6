#!/bin/sh
# run.sh - the simulator against published serving figures: for each line of
# figures.txt, builds the workload, runs `atr sim run` with the figure's
# profile and options, and prints simulated vs published and the error.
#
#   sh bench/sim-fidelity/run.sh build/atr [FIGURES]
#
# Calibration figures (set "calib") and held-out ones ("held") are
# summarised apart: the constants in src/sim/cost.c were fitted to the
# first set only. Error = (sim - published) / published.
set -eu
atr=${1:?usage: run.sh PATH/TO/atr [FIGURES]}
here=$(cd "$(dirname "$0")" && pwd)
figures=${2:-$here/figures.txt}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atr-fidelity.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# segment "N IN OUT RATE [SHARED]" -> a trace file (cached by spec)
segment() {
    f="$tmp/w-$(printf '%s' "$1" | tr ' ' '_').ndjson"
    if [ ! -f "$f" ]; then
        set -- $1
        # IN and OUT may be ranges LO-HI (atr gen draws each request's)
        if [ "${2#*-}" = "$2" ] && [ "$2" -le 5 ]; then
            # shorter than atr gen's message framing: written directly
            i=0
            : > "$f"
            while [ "$i" -lt "$1" ]; do
                printf '{"format":"atr-trace/1","trace_id":"r%d","start_ms":0,"steps":[{"i":0,"kind":"llm","t_ms":0,"input_tokens":%d,"output_tokens":%d}]}\n' \
                    "$i" "$2" "$3" >> "$f"
                i=$((i + 1))
            done
        else
            "$atr" gen -k requests -n "$1" --input-tokens "$2" --output-tokens "$3" \
                -r "$4" ${5:+--shared-prefix "$5"} -q -o "$f"
        fi
    fi
    printf '%s\n' "$f"
}

# workload "SEG; SEG; ...; SEG" -> a trace file: the segments in order. All
# but the last are the source's earlier runs against the same server, which
# leave their prompts in its prefix cache (atr gen's request i begins with
# the same words at every length, as the sources' seeded prompts do); the
# figure is taken over the last segment. Sets $f to the file and $warm to
# the number of earlier requests.
workload() {
    warm=0
    f="$tmp/s-$(printf '%s' "$1" | tr ' ;' '_+').ndjson"
    : > "$f.part"
    rest=$1
    while :; do
        seg=${rest%%;*}
        cat "$(segment "$(echo $seg)")" >> "$f.part"
        [ "$seg" = "$rest" ] && break
        warm=$((warm + $(echo $seg | awk '{print $1}')))
        rest=${rest#*;}
    done
    mv "$f.part" "$f"
}

# the mean of a per-request figure over the requests after the first $2
segment_mean() {
    key=$(printf '%s' "$1" | sed -n 's/^mean_\(ttft\|tpot\|e2el\)_ms$/\1_ms/p')
    [ -n "$key" ] || { echo "run.sh: $id: a workload with earlier runs takes a" \
                            "mean_ttft_ms, mean_tpot_ms or mean_e2el_ms figure" >&2; return 1; }
    awk -v skip="$2" -v key="\"$key\": " 'index($0, key) {
        id = $0; sub(/^\{"id": /, "", id); sub(/,.*/, "", id)
        if (id + 0 < skip) next
        v = substr($0, index($0, key) + length(key)); sub(/,.*/, "", v)
        sum += v; n++ }
        END { if (n) printf "%.6f\n", sum / n }' "$3"
}

# every figure line: 8 fields, a known set, a positive published value, and
# a workload of segments "N IN OUT RATE [SHARED]" separated by ';'
awk -F'|' -v f="$figures" '
    function count(x) { return x ~ /^[0-9]+(-[0-9]+)?$/ }
    function segment_ok(seg,   w, n) {
        n = split(seg, w, " ")
        return (n == 4 || n == 5) && w[1] ~ /^[1-9][0-9]*$/ && count(w[2]) && count(w[3]) &&
               (w[4] == "inf" || w[4] ~ /^[0-9]+(\.[0-9]+)?$/) && (n == 4 || w[5] ~ /^[0-9]+$/)
    }
    /^[[:space:]]*(#|$)/ { next }
    { set = $2; gsub(/[[:space:]]/, "", set) }
    NF != 8 || (set != "calib" && set != "held") || !($7 + 0 > 0) {
        printf "%s:%d:1: expected id|calib or held|profile|workload|options|metric|" \
               "published|source\n", f, NR > "/dev/stderr"; bad = 1; next }
    { n = split($4, segs, ";")
      for (i = 1; i <= n; i++) if (!segment_ok(segs[i])) {
          printf "%s:%d:%d: expected a workload \"N IN OUT RATE [SHARED]\", segments " \
                 "separated by ;\n", f, NR, length($1 $2 $3) + 4 > "/dev/stderr"
          bad = 1; break } }
    END { exit bad }' "$figures"

printf '%-16s %-5s %-24s %-18s %10s %10s %8s\n' figure set profile metric sim published error
: > "$tmp/errors"
grep -v '^[[:space:]]*#' "$figures" | grep -v '^[[:space:]]*$' |
while IFS='|' read -r id set profile wl opts metric published source; do
    id=$(echo $id); set=$(echo $set); metric=$(echo $metric)
    workload "$wl"
    # the schedule comes from the trace (--rate inf replays its start times)
    rate=$(echo ${wl##*;} | awk '{print $4}')
    # the published runs' client: vllm bench serve waits up to 6 hours for a
    # request (AIOHTTP_TIMEOUT) and has no stall timeout
    # shellcheck disable=SC2086
    "$atr" sim run "$f" -p "$profile" $opts --rate "$rate" -q --timeout 21600 --stall-timeout 0 \
        --save-result "$tmp/r.json" --requests-out "$tmp/r.ndjson" > /dev/null
    if [ "$warm" -gt 0 ]; then
        sim=$(segment_mean "$metric" "$warm" "$tmp/r.ndjson")
    else
        sim=$(tr ',' '\n' < "$tmp/r.json" | sed -n "s/^ *\"$metric\": *//p" | head -n 1)
    fi
    [ -n "$sim" ] || { echo "run.sh: $id: no \"$metric\" in the result" >&2; exit 1; }
    awk -v id="$id" -v set="$set" -v p="$profile" -v m="$metric" -v s="$sim" \
        -v pub="$published" -v src="$source" 'BEGIN {
        e = 100 * (s - pub) / pub
        printf "%-16s %-5s %-24s %-18s %10.2f %10.2f %+7.1f%%%s\n", id, set, p, m, s, pub, e,
               (e > 20 || e < -20) ? "  MISS" : ""
    }'
    awk -v set="$set" -v s="$sim" -v pub="$published" \
        'BEGIN { e = 100 * (s - pub) / pub; print set, (e < 0 ? -e : e) }' >> "$tmp/errors"
done

echo
for set in calib held; do
    grep "^$set " "$tmp/errors" | awk '{print $2}' | sort -n |
    awk -v set="$set" '{ e[NR] = $1 } END {
        if (!NR) exit
        med = NR % 2 ? e[(NR + 1) / 2] : (e[NR / 2] + e[NR / 2 + 1]) / 2
        in20 = 0
        for (i = 1; i <= NR; i++) if (e[i] <= 20) in20++
        printf "%-6s %2d figures: median |error| %.1f%%, max %.1f%%, %d within 20%%\n",
               set, NR, med, e[NR], in20
    }'
done
