# test-help.sh - every command's help text is in docs/cli.md, verbatim.
for c in convert validate stats gen sample replay sim; do
    awk -v h="## atr $c" '$0 == h {f = 1; next} f && /^```text$/ {p = 1; next}
        p && /^```$/ {exit} p {print}' "$ROOT/docs/cli.md" >"$T/help-$c.doc"
    golden "docs/cli.md has atr help $c" "$T/help-$c.doc" "$ATR" help "$c"
    ok "$c --help" "$ATR" "$c" --help
    check "$c --help = help $c" "cmp '$T/out' '$T/help-$c.doc'"
done
