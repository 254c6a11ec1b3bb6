# test-replay-image.sh - replay tools --image: a trace's steps run inside a
# container of a real (podman-imported busybox) image, one container per
# trace: they see the image's files, env and WORKDIR (/testbed), a step's
# edit (bash or editor) is seen by the next step but not by the image afterwards, per-step
# metrics are the host path's; the same trace on the host fails for want of
# /testbed. Bad input (missing image, an image without /bin/sh, a wrong
# template placeholder, no CLI) is one clear error with nothing left, and a
# SIGKILLed atr leaves no container (the guard). Hermetic: its own image
# names (from $T), and it looks only at containers of its own images.
IM=$T/image
if [ "$(id -u)" != 0 ]; then
    echo "skipped: test-replay-image needs root (the sandbox and podman do)" >&2
elif ! command -v podman >/dev/null 2>&1; then
    echo "skipped: test-replay-image needs podman (scripts/deps.sh installs it)" >&2
elif [ ! -x /bin/busybox ]; then
    echo "skipped: test-replay-image needs /bin/busybox (busybox-static)" >&2
else
ID=atrtest$(echo "$T" | cksum | cut -d' ' -f1)
IMG=$ID-img NOSH=$ID-nosh
mkdir -p "$IM/rf/bin" "$IM/rf/testbed" "$IM/nosh/etc"
cp /bin/busybox "$IM/rf/bin/"
for l in sh cat grep test pwd echo ls mkdir true id sleep head touch; do ln -s busybox "$IM/rf/bin/$l"; done
echo hello >"$IM/rf/testbed/README"
echo x >"$IM/nosh/etc/hostname"
tar -C "$IM/rf" -cf "$IM/rf.tar" . && tar -C "$IM/nosh" -cf "$IM/nosh.tar" .
podman import --change WORKDIR=/testbed --change ENV=FOO=bar "$IM/rf.tar" "$IMG" >/dev/null 2>&1
podman import "$IM/nosh.tar" "$NOSH" >/dev/null 2>&1
# left IMAGE: containers of IMAGE that still exist (none is the only pass);
# by name, as `--filter ancestor` misses containers made with a uid map.
# A script, for the conditions check and wait_for run with sh -c.
cat >"$IM/left" <<'SH'
podman ps -a --format '{{.Names}} {{.Image}}' | awk -v i="localhost/$1:latest" '$2 == i {print $1}'
SH
left() { sh "$IM/left" "$1"; }

tr -d '\n' >"$IM/steps.ndjson" <<'EOF'
{"format":"atr-trace/1","trace_id":"img-1","source":"test","meta":{"instance_id":"Img__One"},"steps":[
 {"i":0,"kind":"tool","tool":"bash","command":"test \"$(pwd)\" = /testbed && test \"$FOO\" = bar && grep -q hello README","cwd":"/testbed"},
 {"i":1,"kind":"tool","tool":"bash","command":"echo edited > README && touch /made-at-root","cwd":"/testbed"},
 {"i":2,"kind":"tool","tool":"bash","command":"grep -q edited README && test -f /made-at-root","cwd":"/testbed"},
 {"i":3,"kind":"tool","tool":"bash","command":"head -c 8000000 /dev/zero | cat >/dev/null; test \"$(id -u)\" = 0 && exit 3"},
 {"i":4,"kind":"tool","tool":"bash","command":"pwd | grep -qx /testbed"},
 {"i":5,"kind":"tool","tool":"editor","action":"create","path":"/testbed/pkg/new.py","file_op":"create","bytes":100,"cwd":"/testbed"},
 {"i":6,"kind":"tool","tool":"editor","action":"view","path":"README","file_op":"view"},
 {"i":7,"kind":"tool","tool":"bash","command":"test $(cat pkg/new.py | wc -c) -eq 100 && echo more >> pkg/new.py && touch pkg/x","cwd":"/testbed"}]}
EOF
echo >>"$IM/steps.ndjson"
ok image-run "$ATR" replay tools -q --image "$IMG" "$IM/steps.ndjson" -o "$IM/out"
check image-steps "python3 -c '
import json, sys
rows = [json.loads(l) for l in open(\"$IM/out/metrics.jsonl\")]
assert [r[\"exit_code\"] for r in rows] == [0, 0, 0, 3, 0, 0, 0, 0], rows
for r in rows[:5] + rows[7:]:
    assert r[\"rss_scope\"] == \"cgroup\" and r[\"max_rss_mb\"] > 0 and r[\"cpu_ms\"] >= 0, r
    assert r[\"latency_ms\"] > 0 and r[\"oom_kills\"] == 0 and \"missing_cwd\" not in r, r
'"
check image-none-left "[ -z \"\$(sh $IM/left $IMG)\" ]"
# The image is as it was: a new run's container has the original README.
printf '%s\n' '{"format":"atr-trace/1","trace_id":"img-2","source":"test","steps":[{"i":0,"kind":"tool","tool":"bash","command":"grep -qx hello README && test ! -e /made-at-root && test ! -e pkg/new.py","cwd":"/testbed"}]}' >"$IM/again.ndjson"
ok image-untouched "$ATR" replay tools -q --image "$IMG" "$IM/again.ndjson" -o "$IM/again"
check image-untouched-ok "grep -q '\"exit_code\":0' '$IM/again/metrics.jsonl'"
# --image-template from the trace's instance_id; {sweb}: lower case, __ as _1776_.
podman tag "$IMG" "$ID-img_1776_one" >/dev/null 2>&1
ok image-template "$ATR" replay tools -q --image-template "$ID-{sweb}" "$IM/steps.ndjson" -o "$IM/tmpl"
check image-template-ok "[ \$(grep -c '\"exit_code\":0' '$IM/tmpl/metrics.jsonl') = 7 ]"
podman untag "$IMG" "localhost/$ID-img_1776_one:latest" >/dev/null 2>&1
# On the host the same trace fails for want of /testbed.
ok image-host "$ATR" replay tools -q "$IM/steps.ndjson" -o "$IM/host"
check image-host-fails "python3 -c '
import json
rows = [json.loads(l) for l in open(\"$IM/host/metrics.jsonl\")]
assert all(r[\"exit_code\"] != 0 and r.get(\"missing_cwd\") == \"/testbed\" for r in rows[:3]), rows
'"

# Bad input: one error, before anything runs, no output, no container.
fails image-missing 1 'atr: .*image not known' \
    "$ATR" replay tools -q --image "$ID-missing" "$IM/steps.ndjson" -o "$IM/bad1"
absent image-missing-out "$IM/bad1"
fails image-nosh 1 "atr: $NOSH: no /bin/sh in the image" \
    "$ATR" replay tools -q --image "$NOSH" "$IM/steps.ndjson" -o "$IM/bad2"
absent image-nosh-out "$IM/bad2"
check image-nosh-none-left "[ -z \"\$(sh $IM/left $NOSH)\" ]"
fails image-template-bad 2 'unknown placeholder \{bogus\}' \
    "$ATR" replay tools -q --image-template "$ID-{bogus}" "$IM/steps.ndjson" -o "$IM/bad3"
absent image-template-bad-out "$IM/bad3"
fails image-both 2 '--image and --image-template' \
    "$ATR" replay tools -q --image "$IMG" --image-template "x:{instance}" "$IM/steps.ndjson" -o "$IM/bad4"
fails image-no-sandbox 2 'not with --sandbox none' \
    "$ATR" replay tools -q --image "$IMG" --sandbox none "$IM/steps.ndjson" -o "$IM/bad5"
mkdir -p "$IM/emptypath"
fails image-no-cli 1 'no podman or docker on PATH: install podman \(apt-get install podman' \
    env PATH="$IM/emptypath" "$ATR" replay tools -q --image "$IMG" "$IM/steps.ndjson" -o "$IM/bad6"
absent image-no-cli-out "$IM/bad6"
fails image-cli-path 1 'nope/podman: No such file' \
    "$ATR" replay tools -q --image "$IMG" --container-cli "$IM/nope/podman" "$IM/steps.ndjson" -o "$IM/bad7"
# A CLI that hangs: killed at the deadline, one error.
mkdir -p "$IM/hang"
printf '#!/bin/sh\ncase "$*" in *--version*) echo podman version 4.3.1;; *) exec sleep 60;; esac\n' >"$IM/hang/podman"
chmod +x "$IM/hang/podman"
fails image-cli-hangs 1 'podman create: .*hang/podman did not answer within 2 s \(killed\)' \
    env ATR_CONTAINER_TIMEOUT_S=2 "$ATR" replay tools -q --image "$IMG" --container-cli "$IM/hang/podman" "$IM/steps.ndjson" -o "$IM/bad9"
absent image-cli-hangs-out "$IM/bad9"
# A template's trace without an instance_id: the error names the trace.
fails image-template-no-id 1 'trace img-2: no instance_id' \
    "$ATR" replay tools -q --image-template "$ID-{instance}" "$IM/again.ndjson" -o "$IM/bad8"
absent image-template-no-id-out "$IM/bad8"
fails image-template-missing 1 'trace img-1: atrtest[0-9]*-nosuch-img_1776_one: image not known \(pull it first' \
    "$ATR" replay tools -q --image-template "$ID-nosuch-{sweb}" "$IM/steps.ndjson" -o "$IM/bad10"
absent image-template-missing-out "$IM/bad10"
check image-bad-none-left "[ -z \"\$(sh $IM/left $IMG)\" ]"

# A recorded cwd the image lacks: counted, and the hint names the image.
printf '%s\n' '{"format":"atr-trace/1","trace_id":"img-3","source":"test","steps":[{"i":0,"kind":"tool","tool":"bash","command":"true","cwd":"/workspace/repo"}]}' >"$IM/nocwd.ndjson"
ok image-nocwd "$ATR" replay tools --image "$IMG" "$IM/nocwd.ndjson" -o "$IM/nocwd"
check image-nocwd-hint "grep -q '^hint: 1 step expects /workspace/repo, which the container image lacks' '$T/out'"
check image-nocwd-metrics "grep -q '\"missing_cwd\":\"/workspace/repo\"' '$IM/nocwd/metrics.jsonl'"

printf '%s\n' '{"format":"atr-trace/1","trace_id":"img-k","source":"test","steps":[{"i":0,"kind":"tool","tool":"bash","command":"true"},{"i":1,"kind":"tool","tool":"bash","command":"sleep 60"}]}' >"$IM/kill.ndjson"
# Ctrl-C mid-trace: atr stops (130) and removes the container itself.
"$ATR" replay tools -q --image "$IMG" "$IM/kill.ndjson" -o "$IM/int" >/dev/null 2>&1 &
IPID=$!
if wait_for 30 "grep -qs '\"step_id\":0' $IM/int.tmp.*/metrics.jsonl"; then
    kill -INT "$IPID"
    wait "$IPID"; rc=$? CURRENT=image-sigint
    if [ "$rc" -eq 130 ] && [ -z "$(left "$IMG")" ]; then pass; else
        fail "after SIGINT: exit $rc, containers left: $(left "$IMG")"; fi
else
    kill -9 "$IPID" 2>/dev/null
    CURRENT=image-sigint; fail "the first step never ran"
fi

# SIGKILL of atr mid-trace: the guard removes the container.
"$ATR" replay tools -q --image "$IMG" "$IM/kill.ndjson" -o "$IM/kill" >/dev/null 2>&1 &
KPID=$!
if wait_for 30 "grep -qs '\"step_id\":0' $IM/kill.tmp.*/metrics.jsonl" &&
   [ -n "$(left "$IMG")" ]; then
    kill -9 "$KPID"
    wait "$KPID" 2>/dev/null
    if wait_for 60 "[ -z \"\$(sh $IM/left $IMG)\" ]"; then pass; else
        CURRENT=image-sigkill; fail "a container of $IMG is left after SIGKILL: $(left "$IMG")"; fi
else
    kill -9 "$KPID" 2>/dev/null
    CURRENT=image-sigkill; fail "the first step never ran with its container up"
fi

for c in $(left "$IMG") $(left "$NOSH"); do podman rm -f "$c" >/dev/null 2>&1; done
podman rmi -f "$IMG" "$NOSH" >/dev/null 2>&1
fi
