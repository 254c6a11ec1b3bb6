# test-llama-bench.sh - `atr bench run` with llama.cpp's llama-server as the
# engine: the prebuilt one (scripts/llama.sh; no rebuild here, that is
# `make bench-llama`) serving atr's own tiny GGUF. A corrupt GGUF named by
# the server command (-m/--model) is refused by atr's own reader before
# any server starts (model_invalid, naming the file and the offset; this
# part needs no llama-server). Two variants with different server flags
# both succeed with latency metrics; a server that exits at once (an option
# it does not know) and one killed with SIGKILL mid-benchmark are
# server_crashed with the server's last line in the error and its log's
# tail in the result, and the run goes on to the next variant. The engine
# part is skipped when llama-server is not built.

LB=$T/llama-bench
mkdir -p "$LB"
"$ATR" gen --kind gguf --preset tiny --seed 3 -o "$LB/tiny.gguf" 2>"$LB/gen.err"
head -c 3000 "$LB/tiny.gguf" >"$LB/cut.gguf"               # ends inside the vocabulary
{ printf 'GGUF\007\000\000\000'; tail -c +9 "$LB/tiny.gguf"; } >"$LB/v7.gguf"
cp "$LB/tiny.gguf" "$LB/sound one.gguf"

# flat DIR : "RUN FIELD VALUE" lines of every result in DIR/results (one
# python for all the checks below: it starts slowly on a busy machine).
cat >"$LB/flat.py" <<'PY'
import json, os, sys
d0 = os.path.join(sys.argv[1], "results")
for f in sorted(n for n in os.listdir(d0) if n.endswith("_result.json")):
    d = json.load(open(os.path.join(d0, f)))
    m, x = d["metrics"], d["server_exit"] or {}
    run = f[:-len("_result.json")]
    rows = [("outcome", d["outcome"]), ("status", d["status"]), ("error", d["error"]),
            ("benchmark", d["benchmark"]), ("server_exit", bool(x)), ("phase", x.get("phase")),
            ("exit_status", x.get("status")), ("completed", m.get("completed")),
            ("latency", m.get("ttft_mean_ms", 0) > 0 and m.get("e2el_p99_ms", 0) > 0
                        and "tpot_p99_ms" in m and "itl_p99_ms" in m)]
    rows += [("tail", line) for line in (d["server_log_tail"] or "").splitlines()]
    for k, v in rows:
        print(run, k, v)
PY

# ---- a corrupt GGUF, refused before the server starts ----
# A "server" that leaves a mark when it runs; -m FILE names the model.
MARK="sh -c 'echo ran >>{spec_dir}/ran; sleep 30'"
cat >"$LB/models.json" <<EOF
{"format": "atr-bench-spec/1", "workdir": "work", "port": 0,
 "variants": {
  "cut": {"server": "$MARK -m {spec_dir}/cut.gguf", "ready_url": "http://127.0.0.1:{port}/"},
  "version": {"server": "$MARK --model {spec_dir}/v7.gguf", "ready_url": "http://127.0.0.1:{port}/"},
  "missing": {"server": "$MARK -m {spec_dir}/none.gguf", "ready_url": "http://127.0.0.1:{port}/"},
  "quoted": {"server": "$MARK -m '{spec_dir}/sound one.gguf' --port {port}",
             "ready_url": "http://127.0.0.1:{port}/", "startup_timeout_s": 0.2},
  "shell-word": {"server": "$MARK -m \$NOPE/cut.gguf --port {port}",
                 "ready_url": "http://127.0.0.1:{port}/", "startup_timeout_s": 0.2}},
 "items": [{"human_commit": "v0.4.0", "parent_commit": "v0.4.0", "model": "atr-tiny"}],
 "workload": {"generate": {"requests": 1}}}
EOF
ok llama-bench-models-run "$ATR" bench run -q "$LB/models.json" -o "$LB/models"
F=$LB/models.flat
python3 "$LB/flat.py" "$LB/models" >"$F"
for v in cut version missing; do
    check "llama-bench-model-$v-refused" "grep -qx 'v0.4.0_$v outcome model_invalid' $F && grep -qx 'v0.4.0_$v status error' $F && \
        grep -qx 'v0.4.0_$v server_exit False' $F && ! grep -q '==> server' $LB/models/logs/v0.4.0_$v.log"
done
check llama-bench-model-cut-offset "grep -Eq '^v0.4.0_cut error Model refused before the server started: .*/cut.gguf: offset [0-9]+: ' $F"
check llama-bench-model-version "grep -Eq '^v0.4.0_version error .*/v7.gguf: offset 4: ' $F"
check llama-bench-model-missing "grep -q '^v0.4.0_missing error .*/none.gguf' $F"
# A sound model in a quoted path is checked, then the server starts (and
# runs into its 0.2 s startup timeout: it never listens). Only it ran.
check llama-bench-model-quoted-checked "grep -q '==> model: .*/sound one.gguf: GGUF v3, llama, 2 layers' $LB/models/logs/v0.4.0_quoted.log && \
    grep -qx 'v0.4.0_quoted outcome startup_timeout' $F"
# A path the shell would expand is not guessed at: that server starts.
check llama-bench-model-shell-word "grep -qx 'v0.4.0_shell-word outcome startup_timeout' $F && \
    ! grep -q '==> model' $LB/models/logs/v0.4.0_shell-word.log"
check llama-bench-model-only-sound-ran "[ \"\$(cat $LB/ran)\" = 'ran
ran' ]"
# The report reads the new outcome back.
ok llama-bench-models-report "$ATR" bench report --json "$LB/models"
check llama-bench-models-report-outcome "grep -q '\"model_invalid\": 3' $T/out"

# ---- llama-server ----
LLAMA=$(llama_bin) || { echo "skip: $LLAMA"; return 0; }

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
  "corrupt": {"server": "$LLAMA -m {spec_dir}/cut.gguf --host 127.0.0.1 --port {port} -t 1",
              "ready_url": "http://127.0.0.1:{port}/health"},
  "after": {"server": "$SERVE -np 1 -c 1024", "ready_url": "http://127.0.0.1:{port}/health",
            "startup_timeout_s": 30, "benchmark_timeout_s": 60}},
 "items": [{"human_commit": "v0.4.0", "parent_commit": "v0.4.0", "model": "atr-tiny"}],
 "workload": {"generate": {"requests": 12, "input_tokens": 64, "output_tokens": 16,
                           "concurrency": 2}}}
EOF
ok llama-bench-runs "$ATR" bench run -q "$LB/spec.json" -o "$LB/out"
F=$LB/out.flat
python3 "$LB/flat.py" "$LB/out" >"$F"
for v in np1 np2 after; do
    check "llama-bench-$v-success" "grep -qx 'v0.4.0_$v outcome success' $F"
    check "llama-bench-$v-metrics" "grep -qx 'v0.4.0_$v completed 12' $F && grep -qx 'v0.4.0_$v latency True' $F"
done
check llama-bench-flags-differ "grep -q -- '-np 1 ' $LB/out/logs/v0.4.0_np1.log && grep -q -- '-np 2 ' $LB/out/logs/v0.4.0_np2.log"

# The server that exits at once: its own words in the error, the log's tail
# in the result, no benchmark.
check llama-bench-exits-crashed "grep -qx 'v0.4.0_exits outcome server_crashed' $F"
check llama-bench-exits-error "grep -qx 'v0.4.0_exits error Server crashed during startup: exit status 1: error: invalid argument: --no-such-option' $F"
check llama-bench-exits-tail "grep -qx 'v0.4.0_exits tail error: invalid argument: --no-such-option' $F"
check llama-bench-exits-phase "grep -qx 'v0.4.0_exits phase startup' $F && grep -qx 'v0.4.0_exits benchmark None' $F"

# Killed by SIGKILL after its 2nd request: the benchmark stops there, the
# run goes on (the "after" variant above succeeded).
check llama-bench-killed-crashed "grep -qx 'v0.4.0_killed outcome server_crashed' $F"
check llama-bench-killed-phase "grep -qx 'v0.4.0_killed phase the benchmark' $F && grep -qx 'v0.4.0_killed exit_status 137' $F"
check llama-bench-killed-error "grep -q '^v0.4.0_killed error Server crashed during the benchmark: exit status 137' $F"
check llama-bench-killed-tail "grep -q '^v0.4.0_killed tail .*slot *release' $F"
check llama-bench-killed-cut "grep -Eq '^v0.4.0_killed benchmark [0-9]+ of 12 requests succeeded' $F && \
    ! grep -q '^v0.4.0_killed benchmark 12 of 12' $F"

# The real engine never sees the corrupt model.
check llama-bench-corrupt-refused "grep -qx 'v0.4.0_corrupt outcome model_invalid' $F && \
    ! grep -q '==> server' $LB/out/logs/v0.4.0_corrupt.log"
check llama-bench-results "[ \$(ls $LB/out/results | wc -l) = 6 ]"
