# test-llama-bench.sh - `atr bench run` with llama.cpp's llama-server as the
# engine: the prebuilt one (scripts/llama.sh; no rebuild here, that is
# `make bench-llama`) serving atr's own tiny GGUF. Two variants with
# different server flags both succeed with latency metrics; a server that
# exits at once (an option it does not know) and one killed with SIGKILL
# mid-benchmark are server_crashed with the server's last line in the error
# and its log's tail in the result, and the run goes on to the next
# variant; a corrupt GGUF is refused by atr's own reader before any server
# starts (model_invalid, naming the file and the offset). Skipped when
# llama-server is not built.

LLAMA=$(llama_bin) || { echo "skip: $LLAMA"; return 0; }
LB=$T/llama-bench
mkdir -p "$LB"
"$ATR" gen --kind gguf --preset tiny --seed 3 -o "$LB/tiny.gguf" 2>"$LB/gen.err"

# One item, a variant per case. Servers run -t 1 (2 CPUs shared), on free
# ports ("port": 0); 12 requests of 64 in / 16 out, 2 at a time, take well
# under a second on the tiny model.
SERVE="$LLAMA -m {spec_dir}/tiny.gguf --alias {model} --host 127.0.0.1 --port {port} --no-webui -t 1"
KILL="sh $DATA/llama-bench/kill-after.sh 2 {spec_dir}/killed.llama.log"
cat >"$LB/spec.json" <<EOF
{"format": "atr-bench-spec/1", "workdir": "work", "port": 0,
 "variants": {
  "np1": {"server": "$SERVE -np 1 -c 1024", "ready_url": "http://127.0.0.1:{port}/health",
          "startup_timeout_s": 30, "benchmark_timeout_s": 60},
  "np2": {"server": "$SERVE -np 2 -c 2048", "ready_url": "http://127.0.0.1:{port}/health",
          "startup_timeout_s": 30, "benchmark_timeout_s": 60},
  "exits": {"server": "$SERVE --no-such-option", "ready_url": "http://127.0.0.1:{port}/health",
            "startup_timeout_s": 30, "benchmark_timeout_s": 60},
  "killed": {"server": "$KILL $SERVE -np 2 -c 2048", "ready_url": "http://127.0.0.1:{port}/health",
             "startup_timeout_s": 30, "benchmark_timeout_s": 60},
  "after": {"server": "$SERVE -np 1 -c 1024", "ready_url": "http://127.0.0.1:{port}/health",
            "startup_timeout_s": 30, "benchmark_timeout_s": 60}},
 "items": [{"human_commit": "v0.4.0", "parent_commit": "v0.4.0", "model": "atr-tiny"}],
 "workload": {"generate": {"requests": 12, "input_tokens": 64, "output_tokens": 16,
                           "concurrency": 2}}}
EOF

# field FILE EXPR : prints the Python expression over the result d.
cat >"$LB/field" <<'SH'
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"
SH
field="sh $LB/field"
R=$LB/out/results

ok llama-bench-runs "$ATR" bench run -q "$LB/spec.json" -o "$LB/out"
for v in np1 np2 after; do
    check "llama-bench-$v-success" "[ \"\$($field $R/v0.4.0_${v}_result.json 'd[\"outcome\"]')\" = success ]"
    check "llama-bench-$v-metrics" "$field $R/v0.4.0_${v}_result.json \
        'd[\"metrics\"][\"completed\"] == 12 and d[\"metrics\"][\"ttft_mean_ms\"] > 0 and d[\"metrics\"][\"tpot_p99_ms\"] > 0' | grep -qx True"
done
check llama-bench-flags-differ "grep -q -- '-np 1 ' $LB/out/logs/v0.4.0_np1.log && grep -q -- '-np 2 ' $LB/out/logs/v0.4.0_np2.log"

# The server that exits at once: its own words in the error, the log's tail
# in the result, no benchmark.
X=$R/v0.4.0_exits_result.json
check llama-bench-exits-crashed "[ \"\$($field $X 'd[\"outcome\"]')\" = server_crashed ]"
check llama-bench-exits-error "$field $X 'd[\"error\"]' | grep -qx 'Server crashed during startup: exit status 1: error: invalid argument: --no-such-option'"
check llama-bench-exits-tail "$field $X 'd[\"server_log_tail\"]' | grep -q 'invalid argument: --no-such-option'"
check llama-bench-exits-phase "$field $X 'd[\"server_exit\"][\"phase\"], d[\"benchmark\"]' | grep -qx \"('startup', None)\""

# Killed by SIGKILL after its 2nd request: the benchmark stops there, the
# run goes on (the "after" variant above succeeded).
K=$R/v0.4.0_killed_result.json
check llama-bench-killed-crashed "[ \"\$($field $K 'd[\"outcome\"]')\" = server_crashed ]"
check llama-bench-killed-phase "$field $K 'd[\"server_exit\"][\"phase\"], d[\"server_exit\"][\"status\"]' | grep -qx \"('the benchmark', 137)\""
check llama-bench-killed-error "$field $K 'd[\"error\"]' | grep -q '^Server crashed during the benchmark: exit status 137'"
check llama-bench-killed-tail "$field $K 'd[\"server_log_tail\"]' | grep -q 'slot *release'"
check llama-bench-killed-cut "$field $K 'd[\"benchmark\"]' | grep -Eq '^[0-9]+ of 12 requests succeeded' && \
    ! $field $K 'd[\"benchmark\"]' | grep -q '^12 of 12'"
check llama-bench-summary "grep -q . $LB/out/logs/v0.4.0_after.log && [ \$(ls $R | wc -l) = 5 ]"
