# test-bench-image.sh - bench run's "image" variants (issue 30, point 3): atr
# starts the container itself (podman run, attached, in the server's cgroup
# as its --cgroup-parent), on the host's network or with {port} published;
# a real server (this atr's `sim serve`, the host's /usr mounted read-only
# into a busybox image) is benchmarked inside it; the container's memory
# peak and an OOM kill at the variant's "memory" limit are read from the
# server's group (outcome oom); a missing image, a container that exits
# at start and a server that ignores SIGTERM each end as they should; no
# container is left after a run, Ctrl-C or SIGKILL of atr (the guard), and
# those of a run that died with its guard are removed by the next.
# Hermetic: its own image name (from $T); it looks only at containers of
# that image.
BI=$T/bench-image
if [ "$(id -u)" != 0 ]; then
    echo "skipped: test-bench-image needs root (podman, cgroups)" >&2
elif ! command -v podman >/dev/null 2>&1; then
    echo "skipped: test-bench-image needs podman (scripts/deps.sh installs it)" >&2
elif [ ! -x /bin/busybox ]; then
    echo "skipped: test-bench-image needs /bin/busybox (busybox-static)" >&2
else
IMG=atrtest$(echo "$T" | cksum | cut -d' ' -f1)-srv
ATRDIR=$(cd "$(dirname "$ATR")" && pwd)
mkdir -p "$BI/rf/bin" "$BI/rf/tmp" "$BI/rf/etc"
cp /bin/busybox "$BI/rf/bin/"
for l in sh cat echo awk sleep true; do ln -s busybox "$BI/rf/bin/$l"; done
ln -s usr/lib "$BI/rf/lib" && ln -s usr/lib64 "$BI/rf/lib64"   # the host's, mounted
tar -C "$BI/rf" -cf "$BI/rf.tar" . && podman import "$BI/rf.tar" "$IMG" >/dev/null 2>&1
cat >"$BI/left" <<'SH'
podman ps -a --format '{{.Names}} {{.Image}}' | awk -v i="localhost/$1:latest" '$2 == i {print $1}'
SH
left() { sh "$BI/left" "$1"; }
SERVE='/atr/atr sim serve --ttft 30 --itl 8 --time-scale 0.1 --model {model}'
cat >"$BI/spec.json" <<EOF
{
  "format": "atr-bench-spec/1",
  "workdir": "$BI/wd",
  "port": 0,
  "variants": {
    "baseline": {
      "image": "$IMG",
      "run_args": ["-v", "/usr:/usr:ro", "-v", "$ATRDIR:/atr:ro"],
      "server": "$SERVE --port {port}",
      "ready_url": "http://127.0.0.1:{port}/health", "startup_timeout_s": 30
    },
    "human": {
      "image": "$IMG", "container_port": 8000, "memory": "1G",
      "run_args": ["-v", "/usr:/usr:ro", "-v", "$ATRDIR:/atr:ro"],
      "server": "$SERVE --host 0.0.0.0 --port 8000",
      "ready_url": "http://127.0.0.1:{port}/health", "startup_timeout_s": 30
    },
    "hog": {
      "image": "$IMG", "memory": "64M",
      "server": "awk 'BEGIN{{s=\"a\"; while (1) s = s s}}'",
      "ready_url": "http://127.0.0.1:{port}/health", "startup_timeout_s": 30
    },
    "gone": {
      "image": "$IMG-nosuch", "server": "true",
      "ready_url": "http://127.0.0.1:{port}/health", "startup_timeout_s": 30
    },
    "exits": {
      "image": "$IMG", "server": "echo 'config error: no GPU found' >&2; exit 3",
      "ready_url": "http://127.0.0.1:{port}/health", "startup_timeout_s": 30
    },
    "stubborn": {
      "image": "$IMG",
      "run_args": ["-v", "/usr:/usr:ro", "-v", "$ATRDIR:/atr:ro"],
      "server": "trap '' TERM; $SERVE --port {port} & wait",
      "ready_url": "http://127.0.0.1:{port}/health", "startup_timeout_s": 30
    }
  },
  "workload": {"mode": "serving", "generate": {"requests": 10, "input_tokens": 100, "output_tokens": 16}},
  "items": [{"human_commit": "a1b2c3d4", "parent_commit": "0f1e2d3c", "model": "m"}]
}
EOF
# result VARIANT PYTHON_CONDITION : on the run's result file as d.
result() {
    python3 -c "
import json, sys
d = json.load(open('$BI/out/results/a1b2c3d4_$1_result.json'))
e = d['server_exit']
sys.exit(0 if ($2) else 1)"
}
ok bench-image-plan "$ATR" bench run "$BI/spec.json" -n
check bench-image-plan-lines "grep -q '^    image:    $IMG\$' '$T/out' &&
    grep -q 'network:  127.0.0.1:{port} published to the container.s 8000' '$T/out' &&
    grep -q 'network:  the host.s' '$T/out' && grep -q 'memory:   67108864 bytes' '$T/out'"
# Containers of a run that died with its guard (its pid gone) are removed
# before anything starts; a live pid's are not.
DEAD=$(sh -c 'echo $$')
podman create --runtime runc --cgroup-manager cgroupfs --name "atr-$DEAD-9" "$IMG" true >/dev/null 2>&1
podman create --runtime runc --cgroup-manager cgroupfs --name "atr-$$-9" "$IMG" true >/dev/null 2>&1
ok bench-image-run "$ATR" bench run -q --grace 2 "$BI/spec.json" -o "$BI/out"
check bench-image-stale-swept "! podman container exists atr-$DEAD-9 && podman container exists atr-$$-9"
podman rm -f --ignore --time 0 "atr-$$-9" "atr-$DEAD-9" >/dev/null 2>&1
CURRENT=bench-image-outcomes
for v in baseline human hog gone exits stubborn; do
    [ -s "$BI/out/results/a1b2c3d4_${v}_result.json" ] || fail "no result for $v"
done
pass
CURRENT=bench-image-host-net
if result baseline "d['outcome'] == 'success' and d['image'] == '$IMG' and e['memory_peak_bytes'] > 1 << 20
        and d['metrics']['completed'] == 10 and '--network host' in d['server_command']
        and '--cgroup-parent /' in d['server_command']"; then pass; else fail "$(head -c 600 "$BI/out/results/a1b2c3d4_baseline_result.json")"; fi
CURRENT=bench-image-published
if result human "d['outcome'] == 'success' and '--publish 127.0.0.1:' in d['server_command']
        and d['metrics']['completed'] == 10 and e['oom_kills'] == 0"; then pass; else fail "$(head -c 600 "$BI/out/results/a1b2c3d4_human_result.json")"; fi
CURRENT=bench-image-oom
if result hog "d['outcome'] == 'oom' and e['oom_kills'] >= 1 and 'OOM-killed' in d['error']
        and e['memory_peak_bytes'] <= 64 << 20"; then pass; else fail "$(head -c 600 "$BI/out/results/a1b2c3d4_hog_result.json")"; fi
CURRENT=bench-image-missing
if result gone "d['outcome'] == 'server_crashed' and 'image not known' in d['error']"; then pass; else fail "$(head -c 600 "$BI/out/results/a1b2c3d4_gone_result.json")"; fi
CURRENT=bench-image-exits
if result exits "d['outcome'] == 'server_crashed' and d['error'].endswith('exit status 3: config error: no GPU found')"; then pass; else fail "$(head -c 600 "$BI/out/results/a1b2c3d4_exits_result.json")"; fi
CURRENT=bench-image-stubborn
if result stubborn "d['outcome'] == 'success' and e['killed'] and d['timing']['teardown_s'] < 8"; then pass; else fail "$(head -c 900 "$BI/out/results/a1b2c3d4_stubborn_result.json")"; fi
check bench-image-engine-logged "grep -q '^# container engine: .*podman' '$BI/out/logs/a1b2c3d4_baseline.log'"
check bench-image-none-left "[ -z \"\$(sh $BI/left $IMG)\" ]"

# No engine: refused before anything runs, nothing written.
fails bench-image-no-cli 1 'variant baseline names an image: .*nope/podman: No such file' \
    "$ATR" bench run -q --container-cli "$BI/nope/podman" "$BI/spec.json" -o "$BI/bad"
check bench-image-no-cli-nothing "[ -z \"\$(ls '$BI/bad/results' 2>/dev/null)\" ]"
mkdir -p "$BI/bin" && ln -sf "$(command -v python3)" "$BI/bin/python3"
fails bench-image-no-podman 1 'names an image: no podman or docker on PATH: install podman \(apt-get install podman' \
    env PATH="$BI/bin" "$ATR" bench run -q "$BI/spec.json" -o "$BI/bad2"

# Ctrl-C and SIGKILL during the benchmark: no container left (after a
# SIGKILL the guard's engine calls may take long on a loaded machine: each
# has 60 s, and there are two).
python3 - "$BI/spec.json" "$BI/long.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["variants"] = {"baseline": s["variants"]["baseline"]}
s["variants"]["baseline"]["server"] = s["variants"]["baseline"]["server"].replace("--time-scale 0.1", "--time-scale 20")
json.dump(s, open(sys.argv[2], "w"))
PY
for sig in INT KILL; do
    "$ATR" bench run -q "$BI/long.json" -o "$BI/$sig" >/dev/null 2>&1 &
    BPID=$!
    CURRENT=bench-image-sig$sig
    if wait_for 60 "grep -qs '^==> benchmark' $BI/$sig/logs/a1b2c3d4_baseline.log" && [ -n "$(left "$IMG")" ]; then
        kill -$sig "$BPID"; wait "$BPID" 2>/dev/null; rc=$?
        if [ "$sig" = INT ] && [ "$rc" -ne 130 ]; then fail "exit $rc after SIGINT"
        elif wait_for 150 "[ -z \"\$(sh $BI/left $IMG)\" ]"; then pass
        else fail "containers left after SIG$sig: $(left "$IMG")"; fi
    else
        kill -9 "$BPID" 2>/dev/null; wait "$BPID" 2>/dev/null; fail "the benchmark never started"
    fi
done
for c in $(left "$IMG"); do podman rm -f --time 0 "$c" >/dev/null 2>&1; done
podman rmi -f "$IMG" >/dev/null 2>&1
fi
