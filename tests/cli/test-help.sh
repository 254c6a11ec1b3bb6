# test-help.sh - every command's and mode's help text is in docs/cli.md,
# verbatim (scripts/cli-doc.py rewrites the doc from the binary).
for c in convert validate stats gen sample replay sim compare router "replay llm" "sim serve"; do
    f=$(echo "$c" | tr ' ' -)
    awk -v h="## atr $c" '$0 == h {f = 1; next} f && /^```text$/ {p = 1; next}
        p && /^```$/ {exit} p {print}' "$ROOT/docs/cli.md" >"$T/help-$f.doc"
    # shellcheck disable=SC2086
    golden "docs/cli.md has atr $c --help" "$T/help-$f.doc" "$ATR" $c --help
done
for c in convert validate stats gen sample replay sim compare router; do
    ok "help $c" "$ATR" help "$c"
    check "help $c = $c --help" "cmp '$T/out' '$T/help-$c.doc'"
done
