#!/usr/bin/env python3
"""analyze.py OUT RUNS CISTAT - the tables of bench/statistics/run.sh from
its runs in OUT (aK.json / bK.json results, aK.ndjson / bK.ndjson request
records): the noise of the A runs, simulated A/A and 10 % pairs with that
noise (CISTAT sim), and the real pairs within one run and over repeats.
Without B runs (bench/statistics/llama.sh) only the A/A parts. Writes
OUT/table.md and prints it."""
import json, math, os, statistics, subprocess, sys

out, runs, cistat_bin = sys.argv[1], int(sys.argv[2]), sys.argv[3]
FIGS = [("request_throughput", True), ("output_throughput", True),
        ("p99_ttft_ms", False), ("median_ttft_ms", False), ("p99_e2el_ms", False)]
has_b = os.path.exists(f"{out}/b0.json")
res = {s: [json.load(open(f"{out}/{s}{i}.json")) for i in range(runs)] for s in "ab" if s == "a" or has_b}

def noise(values):
    """sd and robust sd of the log values, the runs 3 robust sds off the
    median and their median distance (log)."""
    logs = [math.log(v) for v in values]
    med = statistics.median(logs)
    mad = statistics.median(abs(x - med) for x in logs) * 1.4826
    off = [abs(x - med) for x in logs if mad > 0 and abs(x - med) > 3 * mad]
    return statistics.stdev(logs), mad, len(off), statistics.median(off) if off else 0.0

lines = ["## noise of the A runs (log values over %d runs)" % runs, "",
         "| figure | median | sd | robust sd | runs 3 robust sd off | their median distance |",
         "|---|---:|---:|---:|---:|---:|"]
measured = {}
for key, _ in FIGS:
    vals = [r[key] for r in res["a"]]
    sd, mad, off, dist = noise(vals)
    measured[key] = (mad, off / runs, dist)
    lines.append(f"| {key} | {statistics.median(vals):.4g} | {sd:.4f} | {mad:.4f} | {off} | "
                 f"{100 * (math.exp(dist) - 1):.1f} % |")
if has_b:
    b_over_a = statistics.median(res["b"][i]["request_throughput"] / res["a"][i]["request_throughput"]
                                 for i in range(runs))
    lines += ["", f"B (time-scale 1.1) over A, request throughput, median of runs: {b_over_a:.4f}"]
lines += [""]

def cistat(*args):
    return subprocess.run([cistat_bin, *map(str, args)], check=True, capture_output=True,
                          text=True).stdout.split()

# Simulated: the measured noise, and llama-server's.
llama = [1.759, 2.161, 1.844, 1.710, 1.675]   # BENCHMARKS.md issue 29, TTFT direct
sigma_llama = statistics.stdev(math.log(x) for x in llama)
lines += ["## simulated pairs (cistat sim: 200 pairs, drift 5 % across a pair's runs)", "",
          "| noise | repeats | sigma | outliers | A/A win or loss | 10 % gain found | 10 % loss found |",
          "|---|---:|---:|---|---:|---:|---:|"]
def sim_row(name, s, p, x, repeats=5):
    f = cistat("sim", s, p, x, 0.05, repeats, 200, 31)
    aa, up, down = (int(f[f.index(k) + 1]) for k in ("aa_false", "power_up", "power_down"))
    lines.append(f"| {name} | {repeats} | {s:.4f} | {100 * p:.0f} % x{x:.3f} | {aa / 2:.1f} % | "
                 f"{up / 2:.1f} % | {down / 2:.1f} % |")
mad, p, dist = measured["request_throughput"]
sim_row("these runs, throughput", mad, p, math.exp(-dist))
mad, p, dist = measured["p99_ttft_ms"]
sim_row("these runs, TTFT p99", mad, p, math.exp(-dist))
for rep in (5, 10, 20):
    sim_row("llama-server here (TTFT of 5 runs)", sigma_llama, 0.1, 0.7, rep)
for s in (0.02, 0.05, 0.08):
    sim_row("grid", s, 0.0, 1.0)
    sim_row("grid, outliers", s, 0.1, 0.7)

# Real pairs within one run.
def values(path, key):
    vals = []
    for line in open(path):
        r = json.loads(line)
        if r.get("success") and r.get(key) is not None:
            vals.append(r[key])
    return vals

def write(path, vals):
    with open(path, "w") as f:
        f.write("\n".join(repr(v) for v in vals) + "\n")

METRICS = [("ttft_ms", 50), ("ttft_ms", 99), ("tpot_ms", 50), ("e2el_ms", 99)]
def within(pairs, want):
    tally = {}
    for (sa, ia), (sb, ib) in pairs:
        for key, p in METRICS:
            fa, fb = f"{out}/x.ref", f"{out}/x.cand"
            write(fa, values(f"{out}/{sa}{ia}.ndjson", key))
            write(fb, values(f"{out}/{sb}{ib}.ndjson", key))
            f = cistat("runs", p, fa, fb)
            t = tally.setdefault(f"{key} p{p}", {"win": 0, "loss": 0, "tie": 0, "inconclusive": 0,
                                                 "blocks": []})
            t[f[3]] += 1
            t["blocks"].append(int(f[4]))
    for name, t in tally.items():
        n = t["win"] + t["loss"] + t["tie"] + t["inconclusive"]
        lines.append(f"| {want} | {name} | {n} | {t['win']} | {t['loss']} | {t['tie']} | "
                     f"{t['inconclusive']} | {min(t['blocks'])}-{max(t['blocks'])} |")
lines += ["", "## real pairs within one run (atr_ci_ratio_runs, lower is better)", "",
          "| pairs | metric | n | win | loss | tie | inconclusive | block |",
          "|---|---|---:|---:|---:|---:|---:|---:|"]
within([(("a", 2 * i), ("a", 2 * i + 1)) for i in range(runs // 2)], "A/A")
if has_b:
    within([(("a", i), ("b", i)) for i in range(runs // 2)], "10 % slower")

# Real pairs over repeats, 5 a side.
lines += ["", "## real pairs over repeats (atr_ci_ratio, 5 runs a side)", "",
          "| pairs | figure | n | win | loss | tie | inconclusive |", "|---|---|---:|---:|---:|---:|---:|"]
def repeats(pairs, want):
    for key, higher in (FIGS[0], FIGS[2], FIGS[4]):
        t = {"win": 0, "loss": 0, "tie": 0, "inconclusive": 0}
        for ra, rb in pairs:
            write(f"{out}/x.ref", [r[key] for r in ra])
            write(f"{out}/x.cand", [r[key] for r in rb])
            t[cistat("repeats", int(higher), f"{out}/x.ref", f"{out}/x.cand")[3]] += 1
        n = sum(t.values())
        lines.append(f"| {want} | {key} | {n} | {t['win']} | {t['loss']} | {t['tie']} | {t['inconclusive']} |")
a = res["a"]
repeats([(a[j:j + 10:2], a[j + 1:j + 10:2]) for j in range(0, runs - 9, 10)], "A/A")
if has_b:
    b = res["b"]
    repeats([(a[j:j + 5], b[j:j + 5]) for j in range(0, runs - 4, 5)], "10 % slower")
os.remove(f"{out}/x.ref")
os.remove(f"{out}/x.cand")
for what in (["time", "100000"], ["bootcov"], ["blockcov"]):
    lines += ["", subprocess.run([cistat_bin, *what], check=True, capture_output=True,
                                 text=True).stdout.strip().replace("\n", "; ")]
text = "\n".join(lines) + "\n"
open(f"{out}/table.md", "w").write(text)
print(text)
