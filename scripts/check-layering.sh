#!/bin/sh
# check-layering.sh ROOT [SRC] - fails when a module under SRC (default
# ROOT/src) includes a module that is not below it in the picture of
# ROOT/docs/architecture.md, or when a folder is missing from the picture.
# Prints one line per fault: "src/FILE:LINE: MOD includes OTHER (above it)".
set -u
root=$1
src=${2:-$root/src}
layers=$(awk '/<!-- layers/ {on = 1; next} /<!-- \/layers -->/ {on = 0}
              on && $1 !~ /^```/ && NF {print $1}' "$root/docs/architecture.md")
[ -n "$layers" ] || { echo "no layers block in $root/docs/architecture.md"; exit 1; }
# rank: 0 for the top line, growing downward; a module may include only
# modules of a larger rank.
ranks=$(echo "$layers" | awk '{print $1, NR}')
faults=$(
  for dir in "$src"/*/; do
    mod=$(basename "$dir")
    echo "$ranks" | grep -q "^$mod " || { echo "src/$mod: not in docs/architecture.md's layers"; continue; }
    find "$dir" -name '*.[ch]' | sort | while read -r f; do
      grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z0-9_-]*/' "$f" |
        sed 's/^\([0-9]*\):.*"\([a-z0-9_-]*\)\/.*/\1 \2/' |
        while read -r line other; do
          [ "$other" = "$mod" ] && continue
          echo "$ranks" | awk -v m="$mod" -v o="$other" -v f="${f#$src/}" -v l="$line" '
            $1 == m {rm = $2} $1 == o {ro = $2}
            END {
              if (ro == "") printf "src/%s:%s: %s includes %s, which is not a module\n", f, l, m, o
              else if (ro <= rm) printf "src/%s:%s: %s includes %s (%s it)\n", f, l, m, o,
                                        ro < rm ? "above" : "beside"
            }'
        done
    done
  done)
if [ -n "$faults" ]; then
  echo "$faults"
  echo "layering: $(echo "$faults" | wc -l) fault(s); the picture is in docs/architecture.md"
  exit 1
fi
echo "layering: ok ($(echo "$layers" | wc -l) modules)"
