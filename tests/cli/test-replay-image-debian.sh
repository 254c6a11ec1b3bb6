# test-replay-image-debian.sh - the realistic end of replay tools --image
# (issue 30, point 4, bash part): a Debian bookworm image with python3 and
# pytest (debootstrap against the Debian mirror, cached under the build
# folder as a tar by lib.sh's debian_tar), holding a small repository at
# /testbed whose test fails. tests/data/openhands/calc-1.jsonl (OpenHands eval-output shape)
# lists /testbed, runs pytest (fails), reads the file (an editor step),
# fixes it with sed, runs pytest (passes): inside the image every step does what the recording says; on
# the host the same steps fail for want of /testbed. The first run takes
# minutes (debootstrap); without the mirror the test is skipped with the
# reason. Hermetic: its own image name, removed at the end.
DEB=$T/debian
if [ "$(id -u)" != 0 ]; then
    echo "skipped: test-replay-image-debian needs root (debootstrap, the sandbox, podman)" >&2
elif ! command -v podman >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
    echo "skipped: test-replay-image-debian needs podman and debootstrap (scripts/deps.sh installs them)" >&2
else
mkdir -p "$DEB"
if ! DEBTAR=$(debian_tar); then
    echo "skipped: test-replay-image-debian: $DEBTAR" >&2
else
IMG=atrtest$(echo "$T" | cksum | cut -d' ' -f1)-debian
mkdir -p "$DEB/layer/testbed"
printf 'def add(a, b):\n    return a - b\n' >"$DEB/layer/testbed/calc.py"
printf 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n' >"$DEB/layer/testbed/test_calc.py"
cp "$DEBTAR" "$DEB/image.tar"
tar --numeric-owner --owner=0 --group=0 -C "$DEB/layer" -rf "$DEB/image.tar" ./testbed
podman import --change WORKDIR=/testbed --change ENV=PYTHONDONTWRITEBYTECODE=1 \
    "$DEB/image.tar" "$IMG" >/dev/null 2>&1
rm -f "$DEB/image.tar"
cp "$DATA/openhands/calc-1.jsonl" "$DEB/calc-1.jsonl"
ok debian-image "$ATR" replay tools -q --image "$IMG" "$DEB/calc-1.jsonl" -o "$DEB/in"
check debian-image-steps "python3 -c '
import json
rows = [json.loads(l) for l in open(\"$DEB/in/metrics.jsonl\")]
assert [r[\"exit_code\"] for r in rows] == [0, 1, 0, 0, 0], rows
assert [r[\"class\"] for r in rows] == [\"ok\", \"failed\", \"ok\", \"ok\", \"ok\"], rows
assert rows[2][\"file_op\"] == \"view\" and \"missing_file\" not in rows[2], rows
assert all(rows[i][\"rss_scope\"] == \"cgroup\" and rows[i][\"max_rss_mb\"] > 1 for i in (1, 4)), rows
'"
ok debian-host "$ATR" replay tools -q "$DEB/calc-1.jsonl" -o "$DEB/host"
check debian-host-fails "python3 -c '
import json
rows = [json.loads(l) for l in open(\"$DEB/host/metrics.jsonl\")]
assert all(rows[i][\"exit_code\"] != 0 for i in (0, 1, 3, 4)), rows
assert all(rows[i].get(\"missing_cwd\") == \"/testbed\" for i in (1, 3, 4)), rows
assert rows[2].get(\"missing_file\") == \"/testbed/calc.py\", rows
'"
for c in $(podman ps -a --format '{{.Names}} {{.Image}}' | awk -v i="localhost/$IMG:latest" '$2 == i {print $1}'); do
    CURRENT=debian-none-left; fail "container $c of $IMG left"; podman rm -f "$c" >/dev/null 2>&1
done
podman rmi -f "$IMG" >/dev/null 2>&1
fi
fi
