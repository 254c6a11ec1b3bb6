# test-sandbox.sh - replay tools' sandbox contains a hostile trace: each
# step of tests/data/sandbox/hostile.ndjson.in tries one escape (writing
# the host, reading secrets, signalling or seeing a host process, the
# host's cgroups, mounts, memory past its limit, host unix sockets and the
# network, /proc/sys and /sys, modules, the clock, raw devices, nested
# namespaces, capabilities) and the host checks afterwards that none
# worked, beside what the steps' exit statuses say. The probes are
# harmless where they get out (they write back what is there, set the clock
# to now, kill only this test's own process), so a broken sandbox fails
# the test without damaging the machine. The same trace runs from inside
# an exported root (--rootfs) and a container image (--image).
SB=$T/sandbox
mkdir -p "$SB/host"
if [ "$(id -u)" != 0 ]; then
    echo "skipped: test-sandbox needs root (the sandbox does)" >&2
else
ID=sbx$$
# A victim outside the sandbox, in a v2 group of its own when the host has one.
sleep 600 & VICTIM=$!
CG=/sys/fs/cgroup/unified/atr-test-$ID
[ -d /sys/fs/cgroup/unified ] || CG=/sys/fs/cgroup/atr-test-$ID
mkdir "$CG" 2>/dev/null && echo "$VICTIM" >"$CG/cgroup.procs" || CG=$SB/no-cgroup
# A world-writable host unix socket where host sockets live, an abstract
# one, and a TCP listener on the host's loopback; each notes a connection.
cat >"$SB/listen.py" <<'PY'
import os, socket, sys, threading
sb, sock, ident = sys.argv[1], sys.argv[2], sys.argv[3]
def serve(s, name):
    s.listen(4)
    while True:
        c, _ = s.accept()
        open(os.path.join(sb, "reached-" + name), "w").close()
        c.close()
u = socket.socket(socket.AF_UNIX); u.bind(sock); os.chmod(sock, 0o666)
a = socket.socket(socket.AF_UNIX); a.bind("\0atr-hostile-" + ident)
t = socket.socket(); t.bind(("127.0.0.1", 0))
for s, n in ((u, "unix"), (a, "abstract"), (t, "tcp")):
    threading.Thread(target=serve, args=(s, n), daemon=True).start()
open(os.path.join(sb, "port.tmp"), "w").write(str(t.getsockname()[1]))
os.rename(os.path.join(sb, "port.tmp"), os.path.join(sb, "port"))
threading.Event().wait()
PY
SOCK=/run/atr-test-$ID.sock
python3 "$SB/listen.py" "$SB" "$SOCK" "$ID" & LISTENER=$!
wait_for 10 "[ -s '$SB/port' ]"
PORT=$(cat "$SB/port")
CORE=$(cat /proc/sys/kernel/core_pattern)
KSM=$(cat /sys/kernel/mm/ksm/run 2>/dev/null)
sed -e "s|@ID@|$ID|g" -e "s|@PID@|$VICTIM|g" -e "s|@CG@|$CG|g" -e "s|@SOCK@|$SOCK|g" \
    -e "s|@PORT@|$PORT|g" -e "s|@HOSTDIR@|$SB/host|g" "$DATA/sandbox/hostile.ndjson.in" >"$SB/hostile.ndjson"

# verdicts METRICS: one line per step whose exit status says it got out
# (or, for a control, that it failed): empty when all were contained.
cat >"$SB/verdicts" <<'PY'
#!/usr/bin/env python3
import json, sys
trace = json.loads(open(sys.argv[1]).readline())
want = {s["i"]: (s["escape"], s["expect"]) for s in trace["steps"]}
only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None
seen = set()
for line in open(sys.argv[2]):
    m = json.loads(line)
    name, expect = want[m["step_id"]]
    seen.add(name)
    ok = (m["exit_code"] == 0) == (expect == "ok")
    if not ok:
        print(f"{name}: exit {m['exit_code']}")
for name, _ in want.values():
    if name not in seen and (only is None or name in only):
        print(f"{name}: did not run")
PY
chmod +x "$SB/verdicts"

ok "sandbox: the hostile trace replays" "$ATR" replay tools -q --config static-toolcall --mem-max 128M "$SB/hostile.ndjson" --out "$SB/r"
check "sandbox: every escape refused, the controls ran" "[ -s '$SB/r/metrics.jsonl' ] && [ -z \"\$('$SB/verdicts' '$SB/hostile.ndjson' '$SB/r/metrics.jsonl')\" ]"
[ -z "$("$SB/verdicts" "$SB/hostile.ndjson" "$SB/r/metrics.jsonl" 2>&1)" ] || "$SB/verdicts" "$SB/hostile.ndjson" "$SB/r/metrics.jsonl" | sed 's/^/  got out: /'
check "sandbox: host /etc and /root unwritten" "[ ! -e /etc/atr-hostile-$ID ] && [ ! -e /root/atr-hostile-$ID ] && [ ! -e '$SB/host/escaped' ]"
check "sandbox: the host process lives, in its group" "kill -0 $VICTIM && { [ ! -d '$CG' ] || grep -qx $VICTIM '$CG/cgroup.procs'; }"
check "sandbox: no socket or port was reached" "[ ! -e '$SB/reached-unix' ] && [ ! -e '$SB/reached-abstract' ] && [ ! -e '$SB/reached-tcp' ]"
check "sandbox: /proc/sys and /sys unchanged" "[ \"\$(cat /proc/sys/kernel/core_pattern)\" = '$CORE' ] && [ \"\$(cat /sys/kernel/mm/ksm/run 2>/dev/null)\" = '$KSM' ]"
check "sandbox: the memory hog was stopped by its limit" "python3 -c \"import json,sys; m=[json.loads(l) for l in open('$SB/r/metrics.jsonl') if json.loads(l)['step_id']==14][0]; sys.exit(not (m['exit_code']!=0 and (m.get('oom_kills') or 0)+(m.get('mem_max_events') or 0) > 0))\""
check "sandbox: work dirs and groups removed" "! ls '$TMPDIR' | grep -q '^atr-work-'"

# --allow-network: the host's loopback is reachable, nothing else changes.
ok "sandbox: --allow-network" "$ATR" replay tools -q --config none --allow-network "$SB/hostile.ndjson" --out "$SB/n"
check "sandbox: --allow-network reaches the host port" "[ -e '$SB/reached-tcp' ] && '$SB/verdicts' '$SB/hostile.ndjson' '$SB/n/metrics.jsonl' | grep -qx 'network: exit 0'"
check "sandbox: --allow-network leaves the rest contained" "[ \"\$('$SB/verdicts' '$SB/hostile.ndjson' '$SB/n/metrics.jsonl' | grep -v -e '^network:' -e '^memory-past-limit:' -e '^abstract-socket:')\" = '' ]"

# --bind DIR: that folder (only) becomes writable at its own path.
ok "sandbox: --bind" "$ATR" replay tools -q --config none --bind "$SB/host" "$SB/hostile.ndjson" --out "$SB/b"
check "sandbox: --bind makes its folder writable" "[ \"\$(cat '$SB/host/escaped')\" = pwned ] && '$SB/verdicts' '$SB/hostile.ndjson' '$SB/b/metrics.jsonl' | grep -qx 'write-host-dir: exit 0'"
check "sandbox: --bind leaves the rest contained" "[ \"\$('$SB/verdicts' '$SB/hostile.ndjson' '$SB/b/metrics.jsonl' | grep -v -e '^write-host-dir:' -e '^memory-past-limit:')\" = '' ] && [ ! -e /etc/atr-hostile-$ID ]"
rm -f "$SB/host/escaped"
fails "sandbox: --bind without the sandbox" 2 "--bind needs the sandbox" "$ATR" replay tools --sandbox none --bind "$SB/host" "$SB/hostile.ndjson" --out "$SB/x"
fails "sandbox: --bind of a missing folder" 2 "--bind wants an existing folder" "$ATR" replay tools --bind "$SB/nope" "$SB/hostile.ndjson" --out "$SB/x"

# --rootfs: the same escapes (those a busybox image can run) from inside an
# exported root file system.
if [ -x /bin/busybox ]; then
    RF=$SB/rootfs
    mkdir -p "$RF/bin" "$RF/etc" "$RF/sys" "$RF/root"
    cp /bin/busybox "$RF/bin/"
    for c in sh echo cat ls test kill grep mkdir mount date unshare for; do ln -sf busybox "$RF/bin/$c"; done
    ok "sandbox --rootfs: the hostile trace replays" "$ATR" replay tools -q --config static-toolcall --rootfs "$RF" "$SB/hostile.ndjson" --out "$SB/rf"
    check "sandbox --rootfs: every escape a shell can try refused" "[ -z \"\$('$SB/verdicts' '$SB/hostile.ndjson' '$SB/rf/metrics.jsonl' | grep -v -e '^control-workdir' -e '^write-etc:' -e '^write-root:' -e '^read-root:')\" ]"
    check "sandbox --rootfs: the image is the step's own (its /etc written)" "[ -e '$RF/etc/atr-hostile-$ID' ] && [ ! -e /etc/atr-hostile-$ID ]"
    check "sandbox --rootfs: the host process lives, in its group" "kill -0 $VICTIM && { [ ! -d '$CG' ] || grep -qx $VICTIM '$CG/cgroup.procs'; }"
fi

# --image: every escape from inside a task's container image (a Debian
# root with python3, so every probe runs; lib.sh's debian_tar builds it
# once). The container's own /etc and /root are the step's to write; the
# host's stay untouched, and the container is gone after the run.
if ! command -v podman >/dev/null 2>&1; then
    echo "skipped: test-sandbox --image needs podman (scripts/deps.sh installs it)" >&2
elif ! DEBTAR=$(debian_tar); then
    echo "skipped: test-sandbox --image: $DEBTAR" >&2
else
    SIMG=atrtest$(echo "$T" | cksum | cut -d' ' -f1)-sandbox
    podman import "$DEBTAR" "$SIMG" >/dev/null 2>&1
    rm -f "$SB"/reached-* "$SB/host/escaped"   # --allow-network and --bind made them
    ok "sandbox --image: the hostile trace replays" "$ATR" replay tools -q --config static-toolcall --mem-max 128M --image "$SIMG" "$SB/hostile.ndjson" --out "$SB/im"
    check "sandbox --image: every escape refused but the container's own files" "[ -s '$SB/im/metrics.jsonl' ] && [ -z \"\$('$SB/verdicts' '$SB/hostile.ndjson' '$SB/im/metrics.jsonl' | grep -v -e '^write-etc:' -e '^write-root:' -e '^read-shadow:' -e '^read-root:')\" ]"
    check "sandbox --image: host /etc and /root unwritten" "[ ! -e /etc/atr-hostile-$ID ] && [ ! -e /root/atr-hostile-$ID ] && [ ! -e '$SB/host/escaped' ]"
    check "sandbox --image: the host process lives, in its group" "kill -0 $VICTIM && { [ ! -d '$CG' ] || grep -qx $VICTIM '$CG/cgroup.procs'; }"
    check "sandbox --image: no socket or port was reached" "[ ! -e '$SB/reached-unix' ] && [ ! -e '$SB/reached-abstract' ] && [ ! -e '$SB/reached-tcp' ]"
    check "sandbox --image: no container left" "[ -z \"\$(podman ps -a --format '{{.Image}}' | grep -x 'localhost/$SIMG:latest')\" ]"
    podman rmi -f "$SIMG" >/dev/null 2>&1
fi

kill "$VICTIM" "$LISTENER" 2>/dev/null
wait "$VICTIM" "$LISTENER" 2>/dev/null
[ -d "$CG" ] && rmdir "$CG"
rm -f "$SOCK" "/etc/atr-hostile-$ID" "/root/atr-hostile-$ID"
fi
