# test-bench-spec.sh - `atr bench run SPEC --dry-run` (docs/bench.md): the
# plan of the example spec and of a command-mode spec (golden files in
# tests/data/bench-spec/), nothing started, and bad specs: one line naming
# FILE:LINE:COL and the field, exit 2.
B=$DATA/bench-spec

# Run from the checkout so that the paths in the plan (taken from the
# spec's folder) read the same wherever it is.
golden bench-plan-sim "$B/sim-plan.txt" sh -c "cd '$ROOT' && '$ATR' bench run --dry-run examples/bench/sim.json"
golden bench-plan-command "$B/command-plan.txt" sh -c "cd '$DATA/..' && '$ATR' bench run -n data/bench-spec/command.json"
check bench-plan-override "grep -q 'model override: meta-llama/Llama-3.1-8B-Instruct -> meta-llama/Llama-3.2-1B-Instruct' '$B/sim-plan.txt' && grep -q -- '--model meta-llama/Llama-3.2-1B-Instruct' '$B/sim-plan.txt'"
# a value with a space or a quote is single-quoted ('\'' for each quote)
check bench-plan-quoted "grep -qF -e \"--model 'odd model'\" '$B/command-plan.txt'"

# docs/bench.md quotes examples/bench/sim.json as it is (the spec its first
# command runs), every patch the spec names is in examples/bench/, and the
# outcome table has a row per agent of the spec.
cat >doc-spec.py <<'EOS'
import json, os, re, sys
root = sys.argv[1]
doc = open(os.path.join(root, "docs/bench.md")).read()
assert "atr bench run examples/bench/sim.json" in doc
spec_text = open(os.path.join(root, "examples/bench/sim.json")).read()
quoted = re.search(r"## Spec\n.*?```json\n(.*?)```\n", doc, re.S).group(1)
assert quoted == spec_text, "docs/bench.md's spec differs from examples/bench/sim.json"
spec = json.loads(spec_text)
for item in spec["items"]:
    for agent, patch in item["agents"].items():
        assert patch is None or os.path.isfile(os.path.join(root, "examples/bench", patch)), patch
        assert re.search(r"^\|.*agent `%s` \|" % re.escape(agent), doc, re.M), agent
EOS
check bench-doc-quotes-example "python3 doc-spec.py '$ROOT'"

# --dry-run starts nothing: no prepare, server or cleanup command runs.
cat >started.json <<EOS
{"format": "atr-bench-spec/1", "workdir": "$T/work",
 "variants": {"v": {"prepare": "touch $T/prepared", "server": "touch $T/started",
                    "ready_url": "http://127.0.0.1:{port}/health"}},
 "cleanup": "touch $T/cleaned",
 "items": [{"human_commit": "c", "parent_commit": "p", "model": "m"}]}
EOS
ok bench-dry-run "$ATR" bench run --dry-run started.json
check bench-dry-run-plan "grep -q '^    server:   touch $T/started$' '$T/out' && grep -q '^1 run$' '$T/out'"
absent bench-dry-run-no-prepare "$T/prepared"
absent bench-dry-run-no-server "$T/started"
absent bench-dry-run-no-cleanup "$T/cleaned"
absent bench-dry-run-no-workdir "$T/work"

# Without --dry-run it wants -o DIR: exit 2, nothing started.
fails bench-run-wants-out 2 '^atr bench run: wants -o DIR' "$ATR" bench run started.json
absent bench-run-wants-out-nothing "$T/started"
# A bad spec with -o: exit 2 before anything starts, not even the folder.
fails bench-run-bad-spec-out 2 "bad-json\.json:2:39" "$ATR" bench run -o "$T/never" "$B/bad-json.json"
absent bench-run-bad-spec-no-folder "$T/never"

# Bad specs: one line, FILE:LINE:COL, what was expected, exit 2.
fails bench-bad-json 2 "^atr bench run: .*bad-json\.json:2:39: expected ',' or '\}'" "$ATR" bench run -n "$B/bad-json.json"
fails bench-bad-missing 2 '^atr bench run: .*bad-missing\.json:3:12: items\[0\]: missing "model"$' "$ATR" bench run -n "$B/bad-missing.json"
fails bench-bad-placeholder 2 '^atr bench run: .*bad-placeholder\.json:2:35: variants\.human\.server: unknown placeholder \{gpu\}' "$ATR" bench run -n "$B/bad-placeholder.json"
fails bench-bad-variant 2 '^atr bench run: .*bad-variant\.json:4:35: items\[0\]\.variants: unknown variant "agnet"$' "$ATR" bench run -n "$B/bad-variant.json"
fails bench-bad-type 2 '^atr bench run: .*bad-type\.json:3:25: variants\.human\.startup_timeout_s: expected a number' "$ATR" bench run -n "$B/bad-type.json"
fails bench-missing-spec 2 '^atr bench run: nonexistent\.json: ' "$ATR" bench run -n nonexistent.json
fails bench-no-spec 2 'missing SPEC' "$ATR" bench run --dry-run
fails bench-two-specs 2 'wants one SPEC' "$ATR" bench run --dry-run started.json started.json
fails bench-run-bad-option 2 "unknown option '--bogus'" "$ATR" bench run --bogus started.json
ok bench-run-help "$ATR" bench run --help
check bench-run-help-outcomes "grep -q 'benchmark_timeout, oom, patch_failed' '$T/out' && grep -q -- '--shard I:N' '$T/out'"

# Names from the spec never write outside -o DIR (docs/bench.md, Names):
# each spec below is refused when read (exit 2, the field at its position),
# before anything starts, where atr used to write beside or above DIR or
# stop halfway. Every run would fail its prepare at once (patch_failed),
# so a name that got through would leave its result and log somewhere.
NM=$T/names
mkdir -p "$NM/a/b/c"
# name_spec FILE VARIANT ITEM_FIELDS : a one-item spec in $NM/a/b/c.
name_spec() {
    cat >"$NM/a/b/c/$1" <<EOS
{"format": "atr-bench-spec/1", "workdir": "$NM/a/b/c/out/work", "port": 0,
 "cleanup": "touch $NM/cleaned",
 "variants": {"$2": {"prepare": "mkdir -p {workdir}/{commit}/{parent} && false",
  "server": "true", "ready_url": "http://127.0.0.1:{port}/health", "per_agent": true}},
 "items": [{"model": "m", $3}]}
EOS
}
name_spec commit.json v '"human_commit": "../../..", "parent_commit": "p", "agents": {"a": "a.diff"}'
name_spec agent.json v '"human_commit": "c", "parent_commit": "p", "agents": {"x/y": "a.diff"}'
name_spec variant.json '../../../v' '"human_commit": "c", "parent_commit": "p", "agents": {"a": "a.diff"}'
name_spec full.json v '"human_commit": "c", "human_commit_full": "../../../../x", "parent_commit": "p", "agents": {"a": "a.diff"}'
name_spec parent.json v '"human_commit": "c", "parent_commit": "../../../../y", "agents": {"a": "a.diff"}'
name_spec dash.json v '"human_commit": "c", "parent_commit": "--upload-pack=touch", "agents": {"a": "a.diff"}'
(
    cd "$NM/a/b/c" || exit 1
    fails bench-name-commit 2 '^atr bench run: commit\.json:5:43: items\[0\]\.human_commit: expected a commit of 1 to 64 letters, digits, .* \(it names the result files\)$' "$ATR" bench run -q commit.json -o out
    fails bench-name-agent 2 '^atr bench run: agent\.json:5:88: items\[0\]\.agents: agent name "x/y" wants 1 to 64 letters, digits' "$ATR" bench run -q agent.json -o out
    fails bench-name-variant 2 '^atr bench run: variant\.json:3:29: variants: variant name "\.\./\.\./\.\./v" wants' "$ATR" bench run -q variant.json -o out
    fails bench-name-commit-full 2 '^atr bench run: full\.json:5:69: items\[0\]\.human_commit_full: expected a commit \(hex, a ref or a revision' "$ATR" bench run -q full.json -o out
    fails bench-name-parent 2 '^atr bench run: parent\.json:5:65: items\[0\]\.parent_commit: expected a commit' "$ATR" bench run -q parent.json -o out
    fails bench-name-dash 2 '^atr bench run: dash\.json:5:65: items\[0\]\.parent_commit: expected a commit' "$ATR" bench run -q dash.json -o out
    echo "$PASSED $FAILED" >"$NM/counts"
)
read PASSED FAILED <"$NM/counts" && rm "$NM/counts"
# Nothing at all was written: no DIR, no result or log beside or above it,
# no folder made by a template from a climbing {commit}, no cleanup run.
check bench-names-nothing-written "[ \"\$(cd '$NM' && find . | sort | tr '\n' ' ')\" = '. ./a ./a/b ./a/b/c ./a/b/c/agent.json ./a/b/c/commit.json ./a/b/c/dash.json ./a/b/c/full.json ./a/b/c/parent.json ./a/b/c/variant.json ' ]"

# What real specs use is taken: ISO-Bench's 8-hex human_commit with its
# full hash, refs and revisions, agent and variant names with '_', '-', '.'.
cat >refs.json <<'EOS'
{"format": "atr-bench-spec/1",
 "variants": {"agent-no-cuda-graphs": {"server": "s {commit} {parent}", "ready_url": "u", "per_agent": true}},
 "items": [{"human_commit": "e206b543", "human_commit_full": "e206b5433109d298e53451015465b2bf8f03ef0a",
            "parent_commit": "HEAD~1", "model": "meta-llama/Llama-3.1-8B-Instruct",
            "agents": {"claude_code": "a.diff", "trae-1.2": "a.diff"}},
           {"human_commit": "v0.6.0", "human_commit_full": "refs/tags/v0.6.0",
            "parent_commit": "origin/main^", "model": "m"}]}
EOS
ok bench-names-real "$ATR" bench run -n refs.json
check bench-names-real-plan "grep -q '^  agent-no-cuda-graphs trae-1.2$' '$T/out' && grep -qF 'item 2/2: refs/tags/v0.6.0 (parent origin/main^)' '$T/out' && grep -q '^2 runs$' '$T/out'"

# "image" variants (docs/bench.md, Containers): the container keys need an
# image, "server" is optional with one, sizes and ports are checked.
IS=$T/image-spec
mkdir -p "$IS"
# image_spec NAME VARIANT_JSON : a one-variant spec.
image_spec() {
    printf '{"format": "atr-bench-spec/1",\n "variants": {"v": %s},\n "items": [{"human_commit": "a1b2c3d4", "parent_commit": "p", "model": "m"}]}\n' "$2" >"$IS/$1.json"
}
image_spec no-server '{"ready_url": "u"}'
image_spec run-args-alone '{"server": "s", "ready_url": "u", "run_args": ["-v", "x:y"]}'
image_spec port-alone '{"server": "s", "ready_url": "u", "container_port": 80}'
image_spec bad-port '{"image": "i", "ready_url": "u", "container_port": 70000}'
image_spec bad-memory '{"image": "i", "ready_url": "u", "memory": "lots"}'
image_spec bad-arg '{"image": "i", "ready_url": "u", "run_args": ["-v", 3]}'
image_spec bad-arg-placeholder '{"image": "i", "ready_url": "u", "run_args": ["{gpu}"]}'
image_spec bad-image-placeholder '{"image": "engine:{sha}", "ready_url": "u"}'
image_spec image-only '{"image": "engine:{commit}", "ready_url": "http://127.0.0.1:{port}/health", "memory": "2G", "run_args": ["--device", "nvidia.com/gpu=all"]}'
fails bench-image-no-server 2 'no-server\.json:2:20: variants\.v: missing "server" \(or an "image" to run\)$' "$ATR" bench run -n "$IS/no-server.json"
fails bench-image-run-args-alone 2 'run-args-alone\.json:2:66: variants\.v\.run_args: only with "image"$' "$ATR" bench run -n "$IS/run-args-alone.json"
fails bench-image-port-alone 2 'port-alone\.json:2:72: variants\.v\.container_port: only with "image"$' "$ATR" bench run -n "$IS/port-alone.json"
fails bench-image-bad-port 2 'bad-port\.json:2:[0-9]+: variants\.v\.container_port: expected an integer from 1 to 65535$' "$ATR" bench run -n "$IS/bad-port.json"
fails bench-image-bad-memory 2 'bad-memory\.json:2:[0-9]+: variants\.v\.memory: expected a size like "20G"' "$ATR" bench run -n "$IS/bad-memory.json"
fails bench-image-bad-arg 2 'bad-arg\.json:2:[0-9]+: variants\.v\.run_args\[1\]: expected a non-empty string$' "$ATR" bench run -n "$IS/bad-arg.json"
fails bench-image-bad-arg-placeholder 2 'variants\.v\.run_args\[0\]: unknown placeholder \{gpu\}' "$ATR" bench run -n "$IS/bad-arg-placeholder.json"
fails bench-image-bad-image-placeholder 2 'variants\.v\.image: unknown placeholder \{sha\}' "$ATR" bench run -n "$IS/bad-image-placeholder.json"
ok bench-image-only-plan "$ATR" bench run -n "$IS/image-only.json"
check bench-image-only-plan-lines "grep -q '^    image:    engine:a1b2c3d4\$' '$T/out' && ! grep -q 'command:' '$T/out' && grep -q '^    run arg:  nvidia.com/gpu=all\$' '$T/out' && grep -q '^    memory:   2147483648 bytes\$' '$T/out'"
