# test-editor.sh - editor steps replayed as the file operations they were
# (synthetic bytes of the recorded length), and every step classed: ok,
# env_missing (its environment is not here) or failed (on its own).
E=$T/editor
mkdir -p "$E"
WD=$E/work
mkdir -p "$WD"
ok "editor replay" "$ATR" replay tools --config none --sandbox none --workdir "$WD" \
    "$DATA/editor/edits.ndjson" --out "$E/a"
cp "$T/out" "$E/a.txt"
classes() {
    python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print(d["step_id"], d.get("file_op") or "-", d["class"], d.get("exit_code"), d.get("missing_file") or "-")' "$1"
}
golden "editor classes" "$DATA/editor/edits.classes" classes "$E/a/metrics.jsonl"
# A later shell step sees the file at its recorded size: 120 bytes, then
# 120 - 40 + 10 + 5 after the replace and the insert; python runs it.
check "editor later step sees the file" "python3 -c '
import json; m = [json.loads(l) for l in open(\"$E/a/metrics.jsonl\")]
assert m[1][\"exit_code\"] == 0 and m[1][\"output_bytes\"] == len(\"120\\nmain.py\\n\"), m[1]
assert m[4][\"exit_code\"] == 0 and m[4][\"output_bytes\"] == 3 and m[5][\"output_bytes\"] == 95'"
check "editor per trace in summary.json" "python3 -c '
import json; c = json.load(open(\"$E/a/summary.json\"))[\"configs\"][0]
assert c[\"per_trace\"] == [{\"trace_id\": \"edits\", \"steps\": 12, \"ran\": 11, \"ok\": 6,
    \"env_missing\": 2, \"failed\": 3, \"skipped\": 1}], c[\"per_trace\"]
assert c[\"env_missing_steps\"] == 2 and c[\"own_failed_steps\"] == 3
assert c[\"failures\"][\"missing_file\"] == 1 and c[\"failures\"][\"command_not_found\"] == 1'"
check "editor per trace printed" "grep -q 'edits: 11 ran, 6 ok, 2 failed (environment missing), 3 failed (own), 1 skipped' '$E/a.txt'"
# --dry-run says the same: editor steps run as file operations.
ok "editor dry run" "$ATR" replay tools --dry-run --config none "$DATA/editor/edits.ndjson" --out "$E/dry"
check "editor dry run says file ops" "grep -q '^none	edits	0	file	create /workspace/app/main.py$' '$T/out' && grep -q '^none	edits	10	skip	not a shell command$' '$T/out'"
# Nothing outside the work directory: "../escape.txt" was refused.
absent "editor no escape" "$WD/../escape.txt"
# --merge reads the classes back from metrics.jsonl: the same summary.
ok "editor merge" "$ATR" replay tools --merge "$E/a" --out "$E/m"
check "editor merge same per trace" "python3 -c '
import json; a, m = (json.load(open(p))[\"configs\"][0] for p in (\"$E/a/summary.json\", \"$E/m/summary.json\"))
assert a[\"per_trace\"] == m[\"per_trace\"] and a[\"failures\"] == m[\"failures\"]'"

# Real traces: OpenHands' create writes the recorded 3409 bytes; SWE-agent's
# create + insert make reproduce.py, and its views and edits of the
# repository's files (absent here) are environment failures, not its own.
ok "editor convert openhands" "$ATR" convert -q "$DATA/openhands/basic.json" -o "$E/oh.ndjson"
ok "editor replay openhands" "$ATR" replay tools -q --config none --sandbox none --workdir "$WD" "$E/oh.ndjson" --out "$E/oh"
check "editor openhands create" "python3 -c '
import json; m = [json.loads(l) for l in open(\"$E/oh/metrics.jsonl\")]
assert [(x[\"file_op\"], x[\"class\"]) for x in m] == [(\"create\", \"ok\")], m'"
ok "editor convert swe-agent" "$ATR" convert -q "$DATA/swe-agent/marshmallow-1867__function_calling_replace.traj" -o "$E/swe.ndjson"
ok "editor replay swe-agent" "$ATR" replay tools -q --config none --sandbox none --workdir "$WD" "$E/swe.ndjson" --out "$E/swe"
check "editor swe-agent classes" "python3 -c '
import json; m = [json.loads(l) for l in open(\"$E/swe/metrics.jsonl\")]
ed = [(x[\"file_op\"], x[\"class\"]) for x in m if x.get(\"file_op\")]
assert ed == [(\"create\", \"ok\"), (\"insert\", \"ok\"), (\"view\", \"env_missing\"),
    (\"replace\", \"env_missing\"), (\"replace\", \"env_missing\")], ed
assert all(\"class\" in x for x in m)'"

# A hostile trace: a shell step links outside the work directory, then an
# editor step (run by atr itself, outside any sandbox) writes through the
# link and a view reads through it. Neither may leave the work directory.
mkdir -p "$E/outside"
echo secret >"$E/outside/secret"
cat >"$E/escape.ndjson" <<EOS
{"format":"atr-trace/1","trace_id":"escape","source":"atr","steps":[{"i":0,"kind":"tool","tool":"bash","command":"ln -s '$E/outside' x","cwd":"/workspace"},{"i":1,"kind":"tool","tool":"editor","action":"create","path":"/workspace/x/evil","file_op":"create","bytes":10},{"i":2,"kind":"tool","tool":"editor","action":"create","path":"/workspace/x/sub/evil","file_op":"create","bytes":10},{"i":3,"kind":"tool","tool":"editor","action":"overwrite","path":"/workspace/x/secret","file_op":"overwrite","bytes":3}]}
EOS
ok "editor: links out of the work dir" "$ATR" replay tools -q --config none --sandbox none --workdir "$WD" "$E/escape.ndjson" --out "$E/escape"
check "editor: nothing written through a link" "[ ! -e '$E/outside/evil' ] && [ ! -e '$E/outside/sub' ] && [ \"\$(cat '$E/outside/secret')\" = secret ] && [ \"\$(grep -c '\"exit_code\":1' '$E/escape/metrics.jsonl')\" -eq 3 ]"
