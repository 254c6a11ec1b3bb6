#!/usr/bin/env python3
"""sim-doc-table.py DOC RUN_OUT - docs/sim.md's validation table against
bench/sim-fidelity/run.sh's output: the same figures, each with the same
simulated value and error, and the same set summaries. A change to the cost
model that leaves the table behind fails here. Prints what differs."""
import re
import sys

doc, run = open(sys.argv[1]).read(), open(sys.argv[2]).read()

# run.sh: "id set profile metric sim published error[  MISS]"
ran = {}
for line in run.splitlines()[1:]:
    f = line.split()
    if len(f) >= 7 and f[1] in ("calib", "held"):
        ran[f[0]] = (f[4], f[6])

# The doc: "| id | source | profile | workload | metric | published | sim | error | set |"
documented = {}
for m in re.finditer(r"^\| ([a-z0-9./-]+) \| [A-Z0-9]+ \| `[^`]+` \| [^|]+ \| [^|]+ \| "
                     r"[0-9.]+ \| ([0-9.]+) \| \**([+-][0-9.]+%)\** \| [a-z ]+ \|$", doc, re.M):
    documented[m.group(1)] = (m.group(2), m.group(3))

bad = []
for k in sorted(set(ran) | set(documented)):
    if ran.get(k) != documented.get(k):
        bad.append("%s: run.sh %s, docs/sim.md %s" % (k, ran.get(k), documented.get(k)))

# "calib  13 figures: median |error| 4.1%, max 18.3%, 13 within 20%"
for s, n, med, top, within in re.findall(
        r"^(calib|held) +(\d+) figures: median \|error\| ([0-9.]+)%, max ([0-9.]+)%, (\d+) within",
        run, re.M):
    name = "Calibration set" if s == "calib" else "Held out"
    want = r"%s: %s figures, median \|error\| %s %%, largest %s %%" % (name, n, med, top)
    if not re.search(want, re.sub(r"\s+", " ", doc)):
        bad.append("summary of %s: docs/sim.md does not say %s figures, median %s %%, largest %s %%"
                   % (s, n, med, top))
for b in bad:
    print(b)
sys.exit(1 if bad or not ran else 0)
