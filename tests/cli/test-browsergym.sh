# test-browsergym.sh - BrowserGym web-agent trajectories (Go-Browse-WA
# step rows) through convert, validate, stats and replay tools --dry-run.

B=$DATA/browsergym
golden "browsergym golden" "$B/go-browse-wa.golden.ndjson" "$ATR" convert -q "$B/go-browse-wa.jsonl" -o -
ok "browsergym validates" "$ATR" validate "$B/go-browse-wa.golden.ndjson"
check "browsergym sniffed" "'$ATR' convert -q '$B/go-browse-wa.jsonl' -o - | grep -q '\"source\":\"browsergym\"'"
check "browsergym content dropped" "! grep -q 'hdmi cable\\|5.99\\|RootWebArea\\|electronics category' '$B/go-browse-wa.golden.ndjson'"
ok "browsergym keep content" "$ATR" convert -q --keep-content "$B/go-browse-wa.jsonl" -o "$T/gb-kc.ndjson"
check "browsergym kept what was entered" "grep -q '\"action\":\"fill\",\"selector\":\"\[bid=\\\\\"1520\\\\\"\]\",\"url\":\"http://localhost:7770/electronics.html\",\"t_ms\":4846,\"exit_code\":0,\"params\":{\"value\":\"hdmi cable\"}' '$T/gb-kc.ndjson' && grep -q '\"params\":{\"key\":\"Enter\"}' '$T/gb-kc.ndjson'"
ok "browsergym keep content validates" "$ATR" validate "$T/gb-kc.ndjson"
gzip -c "$B/go-browse-wa.jsonl" >"$T/gb.jsonl.gz"
golden "browsergym gzip" "$B/go-browse-wa.golden.ndjson" "$ATR" convert -q "$T/gb.jsonl.gz" -o -
golden "browsergym stdin" "$B/go-browse-wa.golden.ndjson" sh -c "'$ATR' convert -q - -o - <'$B/go-browse-wa.jsonl'"

# A real row's observation (DOM, accessibility tree) fills the sniffed head
# before traj_data comes.
awk 'BEGIN { s = ""; for (i = 0; i < 9000; i++) s = s "[12] link x "; printf "{\"step_data\": {\"action\": \"click(\x27a1\x27)\", \"parsed_action\": null, \"thought\": \"t\", \"obs\": {\"axtree_txt\": \"%s\"}}, \"traj_data\": {\"traj_num\": 0}}\n", s }' >"$T/bigobs.jsonl"
ok "browsergym big observation sniffed" "$ATR" convert -q "$T/bigobs.jsonl" -o "$T/bigobs.ndjson"
check "browsergym big observation step" "grep -q '\"trace_id\":\"browsergym/0\".*\"action\":\"click\",\"selector\"' '$T/bigobs.ndjson'"

# stats counts the browser steps by verb.
ok "browsergym stats" "$ATR" stats --json "$B/go-browse-wa.jsonl"
check "browsergym stats tool steps" "grep -q '\"tool_steps\":9' '$T/out'"
check "browsergym stats click" "grep -q '\"name\":\"browser:click\",\"count\":2' '$T/out'"

# Replay cannot act on a page the dataset does not carry: every step is a
# skip with its reason; given a recording, the page actions would run.
golden "browsergym dry run" "$B/dry-run.golden.txt" \
    "$ATR" replay tools --dry-run "$B/go-browse-wa.golden.ndjson"
ok "browsergym dry run with resources" \
    "$ATR" replay tools --dry-run --browser-resources "$DATA/browser/restore.zip" "$B/go-browse-wa.golden.ndjson"
check "browsergym page actions run with resources" \
    "grep -q 'browser	click \\[bid=\"227\"\\]' '$T/out' && grep -q 'skip	browser send_msg_to_user: web agent' '$T/out'"

# A real run (cgroups, as test-replay) records the same reasons and runs nothing.
ok "browsergym replay" "$ATR" replay tools "$B/go-browse-wa.golden.ndjson" -o "$T/gbrun"
check "browsergym replay skips all" "[ \$(grep -c '\"class\":\"skipped\"' '$T/gbrun/metrics.jsonl') -eq 9 ]"
check "browsergym replay reason" "grep -q '\"step_id\":0,\"tool\":\"browser\",\"cmd\":\"click\",\"skipped\":\"page not in the trace (web-agent dataset: --browser-resources ZIP)\"' '$T/gbrun/metrics.jsonl'"
check "browsergym replay chat reason" "grep -q '\"cmd\":\"send_msg_to_user\",\"skipped\":\"web agent.s message, not a page action\"' '$T/gbrun/metrics.jsonl'"

# One row is one trace; WebArena-style actions; keyword arguments.
printf '%s\n' '{"step_data": {"action": "type [56] [my query] [1]", "obs": {"url": "http://w.test/", "elapsed_time": 1.5}}, "traj_data": {"traj_num": 3}}' \
    '{"step_data": {"action": "click(bid=\"a7\")", "obs": {"elapsed_time": 2.25, "last_action_error": "TimeoutError"}}, "traj_data": {"traj_num": 3}}' \
    '{"step_data": {"action": "goto [http://w.test/b]"}, "traj_data": {"traj_num": 4}}' >"$T/wa.jsonl"
ok "browsergym webarena actions" "$ATR" convert -q "$T/wa.jsonl" -o "$T/wa.ndjson"
check "browsergym two traces" "[ \$(wc -l <'$T/wa.ndjson') -eq 2 ]"
check "browsergym type step" "grep -q '\"action\":\"type\",\"url\":\"http://w.test/\",\"t_ms\":0,\"exit_code\":1,\"element_id\":\"56\"' '$T/wa.ndjson'"
check "browsergym keyword bid" "grep -q '\"action\":\"click\",\"selector\":\"\[bid=\\\\\"a7\\\\\"\]\",\"t_ms\":750' '$T/wa.ndjson'"
check "browsergym goto url" "grep -q '\"trace_id\":\"browsergym/4\".*\"action\":\"goto\",\"url\":\"http://w.test/b\"' '$T/wa.ndjson'"
printf '{"step_data": {"action": "I think I should click"}, "traj_data": {"traj_num": 0}}\n' >"$T/prose.jsonl"
ok "browsergym prose action" "$ATR" convert -q "$T/prose.jsonl" -o "$T/prose.ndjson"
check "browsergym prose counted" "grep -q '\"skipped_actions\":1},\"steps\":\[\]' '$T/prose.ndjson'"

# Bad input: exit 1, one "file:line:col: expected ..." line, no output left.
head -c 5000 "$B/go-browse-wa.jsonl" >"$T/trunc-gb.jsonl"
fails "browsergym truncated" 1 'trunc-gb.jsonl:5:120: unterminated string' \
    "$ATR" convert "$T/trunc-gb.jsonl" -o "$T/g1"
absent "browsergym truncated leaves nothing" "$T/g1"
sed '3s/"traj_num": 0/"traj_num": "0"/' "$B/go-browse-wa.jsonl" >"$T/type-gb.jsonl"
fails "browsergym traj_num type" 1 'type-gb.jsonl:3:[0-9]+: expected "traj_num" to be number, found string' \
    "$ATR" convert "$T/type-gb.jsonl" -o "$T/g2"
absent "browsergym traj_num type leaves nothing" "$T/g2"
printf '{"step_data": {"action": 5}, "traj_data": {"traj_num": 1}}\n' >"$T/act-gb.jsonl"
fails "browsergym action type" 1 'act-gb.jsonl:1:26: expected "action" to be a string, found number' \
    "$ATR" convert "$T/act-gb.jsonl" -o "$T/g3"
printf '{"step_data": {}, "traj_data": {"traj_num": 1}}\n[1]\n' >"$T/arr-gb.jsonl"
fails "browsergym not a row" 1 'arr-gb.jsonl:2:1: expected a Go-Browse step row' \
    "$ATR" convert --from browsergym "$T/arr-gb.jsonl" -o "$T/g4"
absent "browsergym not a row leaves nothing" "$T/g4"
printf '{"step_data": {"action": "noop()"}}\n' >"$T/notraj-gb.jsonl"
fails "browsergym no traj_data" 1 'notraj-gb.jsonl:1:1: expected "traj_data" \(object\)' \
    "$ATR" convert --from browsergym "$T/notraj-gb.jsonl" -o "$T/g5"
: >"$T/empty-gb.jsonl"
fails "browsergym empty" 1 'empty-gb.jsonl:1:1: expected Go-Browse step rows, got empty input' \
    "$ATR" convert --from browsergym "$T/empty-gb.jsonl" -o "$T/g6"
printf '\001\002\377junk' >"$T/junk-gb.jsonl"
fails "browsergym binary" 1 'junk-gb.jsonl:1:1: expected a JSON value' \
    "$ATR" convert --from browsergym "$T/junk-gb.jsonl" -o "$T/g7"
# Hostile: an action string of 300 calls, nesting past the cap.
awk 'BEGIN { s = ""; for (i = 0; i < 300; i++) s = s "click(\x27a1\x27);"; printf "{\"step_data\": {\"action\": \"%s\"}, \"traj_data\": {\"traj_num\": 1}}\n", s }' >"$T/many-gb.jsonl"
fails "browsergym too many actions" 1 'many-gb.jsonl:1:26: expected at most 256 actions in one step' \
    "$ATR" convert "$T/many-gb.jsonl" -o "$T/g8"
absent "browsergym too many actions leaves nothing" "$T/g8"
awk 'BEGIN { s = ""; for (i = 0; i < 300; i++) s = s "["; for (i = 0; i < 300; i++) s = s "]"; printf "{\"step_data\": {\"obs\": %s}, \"traj_data\": {\"traj_num\": 1}}\n", s }' >"$T/deep-gb.jsonl"
fails "browsergym deep nesting" 1 'deep-gb.jsonl:1:[0-9]+: nesting deeper than 256 levels' \
    "$ATR" convert --from browsergym "$T/deep-gb.jsonl" -o "$T/g9"
