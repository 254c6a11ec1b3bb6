#!/usr/bin/env python3
"""sim-profile-table.py ATR DOC [--write] - docs/sim.md's "Every profile"
table against the simulator: each row's decode and prefill times are run
again with `atr sim run --offline --iterations-out` (decode x1: one
sequence at 1000 tokens of context; x64: 64 of them; prefill: one
8192-token chunk, no earlier context, 8191 for a model whose context is
8192 tokens, as the simulator refuses a prompt and its output token past
it) and must print the same digits. A row whose 64 sequences do not fit
the KV cache keeps its x64 as written.
Prints what differs; --write rewrites the rows instead."""
import json
import os
import re
import subprocess
import sys
import tempfile

atr, doc = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="atr-profile-table.")


def trace(name, n, prompt, output):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"format": "atr-trace/1", "trace_id": "p%d" % i, "start_ms": 0,
                                "steps": [{"i": 0, "kind": "llm", "t_ms": 0,
                                           "input_tokens": prompt, "output_tokens": output}]})
                    + "\n")
    return path


ONE, MANY = trace("d1.ndjson", 1, 1000, 3), trace("d64.ndjson", 64, 1000, 60)
MODELS = os.path.join(os.path.dirname(os.path.abspath(doc)), "..", "profiles", "models")


def prefill_trace(profile):
    """One 8192-token prompt and one output token, within the context."""
    with open(os.path.join(MODELS, profile.split("/")[1] + ".json")) as f:
        prompt = min(8192, json.load(f)["max_model_len"] - 1)
    return trace("p%d.ndjson" % prompt, 1, prompt, 1)
ITERS = os.path.join(tmp, "it.ndjson")


def iterations(profile, tp, workload):
    subprocess.run([atr, "sim", "run", workload, "-p", profile, "--tp", tp, "--offline", "-q",
                    "--no-prefix-caching", "--rate", "inf", "--iterations-out", ITERS],
                   check=True, stdout=subprocess.DEVNULL)
    with open(ITERS) as f:
        return [json.loads(line) for line in f]


def decode_ms(its, seqs):
    d = [r["dur_ms"] for r in its if r["prefill_tokens"] == 0 and r["decode_seqs"] == seqs]
    return d[0] if d else None


ROW = re.compile(r"^\| `([a-z0-9.-]+/[a-z0-9.-]+)` \| (\d+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| "
                 r"([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \|$")
lines, bad, rows = open(doc).read().split("\n"), [], 0
for k, line in enumerate(lines):
    m = ROW.match(line)
    if not m:
        continue
    rows += 1
    profile, tp = m.group(1), m.group(2)
    x1 = decode_ms(iterations(profile, tp, ONE), 1)
    x64 = decode_ms(iterations(profile, tp, MANY), 64)
    prefill = iterations(profile, tp, prefill_trace(profile))[0]["dur_ms"]
    new = "| `%s` | %s | %s | %s | %s | %.1f | %s | %.0f |" % (
        profile, tp, m.group(3).strip(), m.group(4).strip(), m.group(5).strip(), x1,
        "%.0f" % x64 if x64 is not None else m.group(7), prefill)
    if new != line:
        bad.append("docs: %s\nsim:  %s" % (line, new))
        lines[k] = new
if "--write" in sys.argv[3:]:
    with open(doc, "w") as f:
        f.write("\n".join(lines))
else:
    print("\n".join(bad))
sys.exit(1 if (bad and "--write" not in sys.argv[3:]) or not rows else 0)
