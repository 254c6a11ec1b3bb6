# test-playwright.sh - Playwright trace.zip reader.

PW_T=$T/pw_t; mkdir -p "$PW_T"   # own folder: $T is shared by all test files

ok "playwright v4" "$ATR" convert -q "$REAL/playwright/trace-1.37.zip" -o "$PW_T/pw1.ndjson"
ok "playwright v4 validates" "$ATR" validate "$PW_T/pw1.ndjson"
check "playwright v4 library steps only" "grep -q '\"steps_from\":\"library\"' '$PW_T/pw1.ndjson' && ! grep -q 'Before Hooks' '$PW_T/pw1.ndjson'"
ok "playwright v6" "$ATR" convert -q "$REAL/playwright/test-trace1.zip" -o "$PW_T/pw2.ndjson"
ok "playwright v6 validates" "$ATR" validate "$PW_T/pw2.ndjson"
check "playwright v6 goto" "grep -q '\"action\":\"page.goto\",\"url\":\"https://playwright.dev/\",\"t_ms\":111,\"dur_ms\":663,\"exit_code\":0' '$PW_T/pw2.ndjson'"
# The DOM snapshot each call was recorded against is named (v4-v6
# beforeSnapshot; v7+ "before@<callId>"), its content stays in the zip.
check "playwright v6 names the goto's snapshot" "grep -q '\"method\":\"goto\",\"snapshot\":\"before@call@11\"' '$PW_T/pw2.ndjson'"
ok "playwright v10 with snapshots" "$ATR" convert -q "$DATA/browser/restore.zip" -o "$PW_T/pw4.ndjson"
check "playwright v10 snapshot names from callIds, no page content" "grep -q '\"method\":\"fill\",\"snapshot\":\"before@cwnp@13\"' '$PW_T/pw4.ndjson' && ! grep -q 'Sign up' '$PW_T/pw4.ndjson'"
golden "playwright golden" "$DATA/playwright/trace-1.37.golden.ndjson" \
    "$ATR" convert -q "$DATA/playwright/trace-1.37.zip" -o -
ok "playwright stdin" sh -c "'$ATR' convert -q - -o '$PW_T/pw3.ndjson' <'$DATA/playwright/test-trace1.zip'"
check "playwright stdin id" "grep -q '\"trace_id\":\"playwright/stdin\"' '$PW_T/pw3.ndjson'"

# Bad archives.
head -c 4000 "$DATA/playwright/trace-1.37.zip" >"$PW_T/cut.zip"
fails "playwright truncated" 1 'cut.zip: expected a zip archive' \
    "$ATR" convert --from playwright "$PW_T/cut.zip" -o "$PW_T/p1"
absent "playwright truncated leaves nothing" "$PW_T/p1"
printf 'not a zip\n' >"$PW_T/text.zip"
fails "playwright not a zip" 1 'text.zip: expected a zip archive \(playwright trace.zip\)' \
    "$ATR" convert --from playwright "$PW_T/text.zip" -o "$PW_T/p2"
absent "playwright not a zip leaves nothing" "$PW_T/p2"
python3 -c "
import zipfile, sys
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('trace.network', '{}\n')
with zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('0-trace.trace', '{\"type\":\"before\",\"callId\":\"c\",\"startTime\":1}\n{\"type\":\"after\",\"callId\":7}\n')
with zipfile.ZipFile(sys.argv[3], 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('0-trace.trace', '\n' * (3 << 20))
" "$PW_T/notrace.zip" "$PW_T/badcall.zip" "$PW_T/bomb.zip"
fails "playwright no trace member" 1 'notrace.zip: expected a playwright \*.trace member in the archive' \
    "$ATR" convert "$PW_T/notrace.zip" -o "$PW_T/p3"
absent "playwright no trace member leaves nothing" "$PW_T/p3"
fails "playwright bad member" 1 'badcall.zip: 0-trace.trace:2:26: expected "callId" string' \
    "$ATR" convert "$PW_T/badcall.zip" -o "$PW_T/p4"
absent "playwright bad member leaves nothing" "$PW_T/p4"
fails "playwright zip bomb" 1 'bomb.zip: 0-trace.trace: expected at most 1048576 uncompressed bytes' \
    "$ATR" convert --max-line 1M "$PW_T/bomb.zip" -o "$PW_T/p5"
absent "playwright zip bomb leaves nothing" "$PW_T/p5"
