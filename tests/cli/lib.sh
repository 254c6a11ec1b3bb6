# lib.sh - assertions for the black-box CLI tests (sourced by run.sh).
# Each assertion runs the real atr binary ($ATR) and records pass or fail.
# Set UPDATE_GOLDEN=1 to rewrite golden files instead of comparing.

pass() { PASSED=$((PASSED + 1)); }
fail() { FAILED=$((FAILED + 1)); printf 'FAIL %s: %s\n' "$CURRENT" "$1"; }

# ok NAME CMD... : CMD exits 0.
ok() {
    CURRENT=$1; shift
    if "$@" >"$T/out" 2>"$T/err"; then pass; else
        fail "exit $? from: $* -- $(head -c 400 "$T/err")"; fi
}

# fails NAME STATUS STDERR_REGEX CMD... : CMD exits STATUS, stderr is one
# line matching the (grep -E) regex, and stdout is empty.
fails() {
    CURRENT=$1; status=$2; pattern=$3; shift 3
    "$@" >"$T/out" 2>"$T/err"; got=$?
    if [ "$got" -ne "$status" ]; then fail "exit $got, wanted $status: $*"; return; fi
    if ! grep -Eq -- "$pattern" "$T/err"; then
        fail "stderr '$(head -c 300 "$T/err")' does not match '$pattern'"; return; fi
    if [ "$(wc -l <"$T/err")" -gt 1 ]; then fail "more than one error line: $(head -c 300 "$T/err")"; return; fi
    pass
}

# golden NAME FILE CMD... : CMD exits 0 and its stdout equals FILE.
golden() {
    CURRENT=$1; file=$2; shift 2
    if ! "$@" >"$T/out" 2>"$T/err"; then fail "exit $? from: $* -- $(head -c 300 "$T/err")"; return; fi
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then cp "$T/out" "$file"; pass; return; fi
    if diff -u "$file" "$T/out" >"$T/diff"; then pass; else fail "differs from $file:
$(head -n 30 "$T/diff")"; fi
}

# check NAME SHELL_CONDITION : the condition holds (evaluated with sh -c).
check() {
    CURRENT=$1
    if sh -c "$2" >/dev/null 2>"$T/check.err"; then pass; else
        fail "condition failed: $2 -- $(tail -c 600 "$T/check.err")"; fi
}

# absent NAME PATH : no file (and no temporary beside it) was left behind.
absent() {
    CURRENT=$1
    if [ -e "$2" ] || ls "$2".tmp.* >/dev/null 2>&1; then fail "$2 left behind"; else pass; fi
}

# wait_for SECONDS CONDITION : polls the shell condition until it holds.
wait_for() {
    wf_until=$(( $(date +%s) + $1 ))
    while ! sh -c "$2" 2>/dev/null; do
        [ "$(date +%s)" -ge "$wf_until" ] && return 1
        sleep 0.05
    done
}

# llama_bin : prints the built llama-server (scripts/llama.sh) or, when there
# is none, prints the skip reason to stdout and returns 1. Engine tests:
#   LLAMA=$(llama_bin) || { echo "skip: $LLAMA"; return 0; }
llama_bin() {
    sh "$ROOT/scripts/llama.sh" --path 2>/dev/null && return 0
    echo "llama-server not built ($(sh "$ROOT/scripts/llama.sh" --status))"
    return 1
}

# llama_start NAME MODEL [ARGS...] : starts $LLAMA (from llama_bin) on a free
# port of 127.0.0.1 and polls /health until it answers 200 (30 s). Sets
# LLAMA_URL and LLAMA_PID; its log is $T/NAME.llama.log. Returns 1 when it
# did not come up (the log's tail in the failure). Stop it: kill $LLAMA_PID.
llama_start() {
    ls_name=$1 ls_model=$2; shift 2
    : >"$T/$ls_name.llama.log"   # there before the first poll reads it
    "$LLAMA" -m "$ls_model" --host 127.0.0.1 --port 0 --no-webui "$@" >"$T/$ls_name.llama.log" 2>&1 &
    LLAMA_PID=$!
    LLAMA_URL=
    ls_until=$(( $(date +%s) + 30 ))
    while [ "$(date +%s)" -lt "$ls_until" ] && kill -0 "$LLAMA_PID" 2>/dev/null; do
        ls_port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9][0-9]*\).*|\1|p' "$T/$ls_name.llama.log" 2>/dev/null | head -n 1)
        if [ -n "$ls_port" ] &&
           [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ls_port/health")" = 200 ]; then
            LLAMA_URL=http://127.0.0.1:$ls_port
            return 0
        fi
        sleep 0.05
    done
    CURRENT="llama-server $ls_name starts"
    fail "not healthy in 30 s: $(tail -n 5 "$T/$ls_name.llama.log" | tr '\n' ' ' | cut -c1-400)"
    kill "$LLAMA_PID" 2>/dev/null
    return 1
}

# debian_tar : prints the path of a Debian bookworm root with python3 and
# pytest as a tar (debootstrap against the Debian mirror once, numeric
# owners, cached in $ATR_TEST_IMAGE_CACHE or $ROOT/build/test-images and
# shared by the release and ASan runs; a lock makes tests that want it at
# the same time wait for one build). When it cannot be had, prints the
# reason and returns 1:
#   TAR=$(debian_tar) || { echo "skipped: ...: $TAR" >&2; ... }
debian_tar() {
    dt_cache=${ATR_TEST_IMAGE_CACHE:-$ROOT/build/test-images}
    mkdir -p "$dt_cache" || { echo "cannot make $dt_cache"; return 1; }
    command -v debootstrap >/dev/null 2>&1 || { echo "no debootstrap (scripts/deps.sh installs it)"; return 1; }
    (
        flock 9
        [ -s "$dt_cache/debian-pytest.tar" ] && exit 0
        echo "debootstrap of bookworm with python3-pytest into $dt_cache (once, minutes)" >&2
        dt_root=$(mktemp -d "$dt_cache/root.XXXXXX")
        if timeout 1200 debootstrap --variant=minbase --include=python3,python3-pytest bookworm \
                "$dt_root/r" http://deb.debian.org/debian >"$dt_root.log" 2>&1 &&
           tar --numeric-owner -C "$dt_root/r" -cf "$dt_cache/debian-pytest.tar.tmp.$$" . &&
           mv "$dt_cache/debian-pytest.tar.tmp.$$" "$dt_cache/debian-pytest.tar"; then
            rc=0
        else
            echo "debootstrap failed (no Debian mirror?): $(tail -n 1 "$dt_root.log")" >"$dt_cache/why"
            rc=1
        fi
        rm -rf "$dt_root" "$dt_root.log" "$dt_cache/debian-pytest.tar.tmp.$$"
        exit $rc
    ) 9>"$dt_cache/.lock"
    if [ -s "$dt_cache/debian-pytest.tar" ]; then echo "$dt_cache/debian-pytest.tar"; return 0; fi
    cat "$dt_cache/why" 2>/dev/null || echo "no image built"
    return 1
}
