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
    if sh -c "$2" >/dev/null 2>&1; then pass; else fail "condition failed: $2"; fi
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
