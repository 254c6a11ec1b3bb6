# test-output.sh - the shared output helper (src/util/output.c): a writer
# killed by SIGKILL leaves its OUT.tmp.XXXXXX, and the next command writing
# OUT sweeps it; the temporary of a live writer (it holds a lock on it) and
# those of other outputs are left alone.
O=$T/output
mkdir -p "$O"
"$ATR" gen --kind swe --traces 40 --seed 5 -q -o "$O/gen.ndjson"
mkfifo "$O/feed-a" "$O/feed-b"
out_tmps() { ls "$O"/out.ndjson.tmp.* 2>/dev/null; }

# Writer A reads the generated traces from a pipe that stays open, so it is
# mid-run (its temporary made) until it is killed.
"$ATR" convert -q - -o "$O/out.ndjson" <"$O/feed-a" 2>"$O/a.err" &
A=$!
exec 7>"$O/feed-a"
cat "$O/gen.ndjson" >&7
wait_for 20 "ls '$O'/out.ndjson.tmp.* >/dev/null"
kill -9 "$A"
wait "$A" 2>/dev/null
exec 7>&-
STALE=$(out_tmps)
check "output: SIGKILL leaves a temporary" "[ -f '$STALE' ]"

# Writer B, to the same file, is alive: its temporary is locked.
"$ATR" convert -q - -o "$O/out.ndjson" <"$O/feed-b" 2>"$O/b.err" &
B=$!
exec 8>"$O/feed-b"
cat "$O/gen.ndjson" >&8
wait_for 20 "[ \$(ls '$O'/out.ndjson.tmp.* | wc -l) -eq 2 ]"
LIVE=$(out_tmps | grep -vxF "$STALE")
echo unlocked >"$O/other.ndjson.tmp.AbCdEf"     # another output's

ok "output: the next run" "$ATR" convert -q "$O/gen.ndjson" -o "$O/out.ndjson"
check "output: the dead writer's temporary is swept" "[ ! -e '$STALE' ]"
check "output: the live writer's temporary is kept" "[ -f '$LIVE' ]"
check "output: another output's temporary is kept" "[ -f '$O/other.ndjson.tmp.AbCdEf' ]"
cp "$O/out.ndjson" "$O/first.ndjson"

# B finishes: its output replaces the file, nothing is left beside it.
exec 8>&-
wait "$B"
B_RC=$?
check "output: the live writer commits" "[ $B_RC -eq 0 ] && cmp '$O/out.ndjson' '$O/first.ndjson'"
check "output: no temporary left" "[ -z \"\$(ls '$O'/out.ndjson.tmp.* 2>/dev/null)\" ]"
