# test-help.sh - every command's and mode's help text is in docs/cli.md,
# verbatim (scripts/cli-doc.py rewrites the doc from the binary), and so is
# the top-level page.
awk '/^```text$/ {p = 1; next} p && /^```$/ {exit} p {print}' "$ROOT/docs/cli.md" >"$T/help-top.doc"
golden "docs/cli.md has atr --help" "$T/help-top.doc" "$ATR" --help
ok "help alone" "$ATR" help
check "help alone = --help" "cmp '$T/out' '$T/help-top.doc'"
for c in convert fetch validate stats gen sample replay sim compare router bench proxy report sweep experiment; do
    check "top-level page lists $c" "grep -q '^  $c ' '$T/help-top.doc'"
done
for c in convert fetch validate stats gen sample replay sim compare router bench proxy report sweep experiment \
    "replay llm" "sim serve" "sim calibrate" "bench run" "bench report"; do
    f=$(echo "$c" | tr ' ' -)
    awk -v h="## atr $c" '$0 == h {f = 1; next} f && /^```text$/ {p = 1; next}
        p && /^```$/ {exit} p {print}' "$ROOT/docs/cli.md" >"$T/help-$f.doc"
    # shellcheck disable=SC2086
    golden "docs/cli.md has atr $c --help" "$T/help-$f.doc" "$ATR" $c --help
done
# `atr help COMMAND [MODE]` is `atr COMMAND [MODE] --help`: a mode with a
# page of its own gets that page (issue 11, item 11).
for c in convert fetch validate stats gen sample replay sim compare router bench proxy report sweep experiment \
    "replay llm" "sim serve" "sim calibrate" "bench run" "bench report"; do
    f=$(echo "$c" | tr ' ' -)
    # shellcheck disable=SC2086
    ok "help $c" "$ATR" help $c
    check "help $c = $c --help" "cmp '$T/out' '$T/help-$f.doc'"
done
ok "help sim run" "$ATR" help sim run
check "help sim run = sim --help" "cmp '$T/out' '$T/help-sim.doc'"
# printf-style escapes never reach a help text
for f in "$T"/help-*.doc; do
    check "no %% in $(basename "$f")" "! grep -q '%%' '$f'"
done
check "gen kinds on the top-level page" "grep -q 'swe, chat, requests, noisy' '$T/help-top.doc'"

