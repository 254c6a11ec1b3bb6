# test-replay-cleanup.sh - a trace's work directory is removed however its
# steps leave it: an immutable file (chattr +i) and a tmpfs mounted inside
# (--sandbox none, as root: the mount is in our namespace), or the run
# says loudly which directory it left. Only this run's own --workdir.
R=$T/cleanup
mkdir -p "$R/wd"
printf 'x' >"$R/probe"
if command -v chattr >/dev/null && chattr +i "$R/probe" 2>/dev/null; then
    chattr -i "$R/probe"
    printf '{"format":"atr-trace/1","trace_id":"ci","steps":[{"kind":"tool","tool":"bash","command":"echo x > f && chattr +i f && lsattr f"}]}\n' >"$R/ci.ndjson"
    ok "a step makes a file immutable" "$ATR" replay tools -q --workdir "$R/wd" "$R/ci.ndjson" --out "$R/ci"
    check "the immutable file's work directory is gone" "[ -z \"\$(ls '$R/wd')\" ]"
    check "and nothing is reported left" "! grep -q 'left behind' '$T/err' && ! grep -q workdirs_left '$R/ci/summary.json'"
else
    echo "skip: chattr +i is not supported here (no chattr, or the file system of \$TMPDIR has no immutable flag)"
fi
if [ "$(id -u)" = 0 ] && mkdir "$R/mnt" && mount -t tmpfs none "$R/mnt" 2>/dev/null; then
    umount "$R/mnt"
    printf '{"format":"atr-trace/1","trace_id":"cm","steps":[{"kind":"tool","tool":"bash","command":"mkdir m && mount -t tmpfs none m && echo y > m/y"}]}\n' >"$R/cm.ndjson"
    ok "a step leaves a tmpfs mounted in its work directory" "$ATR" replay tools -q --sandbox none --workdir "$R/wd" "$R/cm.ndjson" --out "$R/cm"
    check "the mount is detached" "! grep -q ' $R/wd/' /proc/self/mountinfo"
    check "the mounted work directory is gone" "[ -z \"\$(ls '$R/wd')\" ]"
    check "and nothing is reported left" "! grep -q 'left behind' '$T/err' && ! grep -q workdirs_left '$R/cm/summary.json'"
else
    echo "skip: mounting a tmpfs needs root here"
fi
