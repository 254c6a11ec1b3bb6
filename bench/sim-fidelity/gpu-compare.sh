#!/bin/sh
# gpu-compare.sh ATR FILE - the simulator's GPU term against gpu-step.py's
# measurements (FILE: its JSON lines, from a GPU machine).
#
# For each measured figure, simulates the same iteration on h200/MODEL with
# the engine's CPU work set to zero (ATR_SIM_CONSTANTS vllm.step_s=0,
# vllm.seq_s=0, vllm.token_s=0, --offline), so an iteration's time is its
# GPU term alone (docs/sim.md, "Cost of one iteration"):
#   decode-graph B  the first decode-only iteration of B sequences
#                   (prompts of the context less one, 64 tokens out: all B
#                   have their first tokens by then, with up to 16 tokens
#                   more context than measured)
#   prefill T       the first iteration of one T-token prompt
# and prints simulated vs measured. gpu-step.py is plain PyTorch, not vLLM
# (docs/sim.md, "The GPU term on an H200").
set -eu
ATR=${1:?usage: gpu-compare.sh ATR FILE}
FILE=${2:?usage: gpu-compare.sh ATR FILE}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/atr-gpu-compare.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export ATR_SIM_CONSTANTS=${ATR_SIM_CONSTANTS:+$ATR_SIM_CONSTANTS,}vllm.step_s=0,vllm.seq_s=0,vllm.token_s=0

# sim_ms MODEL N IN OUT KIND: ms of the first iteration of KIND (decode: N
# sequences decoding and nothing else; prefill: any prefill)
sim_ms() {
    "$ATR" gen -q -k requests -n "$2" --input-tokens "$3" --output-tokens "$4" -r inf \
        -o "$TMP/w.ndjson"
    "$ATR" sim run -q "$TMP/w.ndjson" -p "h200/$1" --offline --rate inf \
        --iterations-out "$TMP/it.ndjson"
    python3 - "$TMP/it.ndjson" "$5" "$2" <<'PY'
import json, sys
want, n = sys.argv[2], int(sys.argv[3])
for line in open(sys.argv[1]):
    it = json.loads(line)
    if want == "decode" and it["prefill_tokens"] == 0 and it["decode_seqs"] == n:
        print(it["dur_ms"]); break
    if want == "prefill" and it["prefill_tokens"] > 0:
        print(it["dur_ms"]); break
PY
}

printf '%-14s %-13s %6s %6s %10s %10s %8s\n' model what n ctx "sim ms" "gpu ms" "sim/gpu"
python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "model" in r and r["what"] in ("decode-graph", "prefill"):
        print(r["model"], r["what"], r["n"], r.get("ctx", 512), r["ms"])
' "$FILE" | while read -r model what n ctx ms; do
    case $what in
        decode-graph) s=$(sim_ms "$model" "$n" $((ctx - 1)) 64 decode) ;;
        prefill) s=$(sim_ms "$model" 1 "$n" 1 prefill) ;;
    esac
    awk -v m="$model" -v w="$what" -v n="$n" -v c="$ctx" -v s="$s" -v g="$ms" \
        'BEGIN { printf "%-14s %-13s %6d %6d %10.2f %10.2f %8.2f\n", m, w, n, c, s, g, s / g }'
done
