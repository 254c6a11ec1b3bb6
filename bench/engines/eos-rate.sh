#!/bin/sh
# eos-rate.sh ATR MODEL.gguf [REQUESTS] [MAX_TOKENS] - how often a model
# `atr gen --kind gguf` wrote ends a reply on its own under llama-server's
# default sampling: stops per generated token over REQUESTS chat requests
# (default 30) of up to MAX_TOKENS (default 1500) each, one slot, -t 1.
# The figures of docs/engines.md's --eos-prob table come from here.
set -eu
atr=$1 model=$2 n=${3:-30} max=${4:-1500}
llama=$(sh "$(dirname "$0")/../../scripts/llama.sh" --path) || { echo "eos-rate: llama-server not built (sh scripts/llama.sh)" >&2; exit 1; }
"$atr" validate "$model" >/dev/null
t=$(mktemp -d)
"$llama" -m "$model" --host 127.0.0.1 --port 0 -t 1 -np 1 -c 4096 --no-webui >"$t/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$t"' EXIT
until=$(( $(date +%s) + 60 )) url=
while [ -z "$url" ] && [ "$(date +%s)" -lt "$until" ]; do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9][0-9]*\).*|\1|p' "$t/log" | head -n 1)
    [ -n "$port" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] &&
        url=http://127.0.0.1:$port
    sleep 0.05
done
[ -n "$url" ] || { echo "eos-rate: llama-server did not come up: $(tail -n 3 "$t/log")" >&2; exit 1; }
k=0
while [ $k -lt "$n" ]; do
    curl -s "$url/v1/chat/completions" -H 'Content-Type: application/json' \
        -d "{\"messages\":[{\"role\":\"user\",\"content\":\" the of and to in $k\"}],\"max_tokens\":$max,\"seed\":$k}"
    echo
    k=$((k + 1))
done | python3 -c '
import json, sys
n = toks = stops = 0
for line in sys.stdin:
    if line.strip():
        d = json.loads(line)
        n += 1
        toks += d["usage"]["completion_tokens"]
        stops += d["choices"][0]["finish_reason"] == "stop"
print("requests %d, tokens %d, stops %d, stops per token %.4f, mean length %.1f"
      % (n, toks, stops, stops / max(toks, 1), toks / max(n, 1)))
'
