#!/usr/bin/env python3
"""run.py ATR [N] [ROUNDS] - atr's CDP driver beside npm playwright-core on
the same Debian Chromium, the same recorded pages and the same calls: the
shop flow of tests/data/browser (11 calls) repeated N times (default 20)
in one browser session, ROUNDS rounds (default 3) alternating the two.
Prints per-step latency p50/p99 (all steps but the first newPage, and per
action), browser-tree CPU per step (atr: its cgroup; Playwright: /proc of
the browser's tree, 10 ms ticks), driver CPU per step (the atr process;
node), browser start time and atr's peak memory. Not a test: timings
depend on the machine."""
import json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
atr = os.path.abspath(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
w = tempfile.mkdtemp(prefix="atr-bench-browser-")
subprocess.run(["python3", f"{ROOT}/tests/data/browser/make-traces.py", w], check=True)
subprocess.run(["python3", f"{ROOT}/bench/browser/repeat.py", f"{w}/shop.zip", str(n),
                f"{w}/bench.zip", f"{w}/site.json"], check=True)


def self_cpu_ms(pid):
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def run_atr(k):
    out = f"{w}/atr{k}"
    p = subprocess.Popen([atr, "replay", "tools", "-q", "--config", "static-toolcall",
                          "--workdir", w, "--timeout", "30", "--browser-timeout", "30", f"{w}/bench.zip", "-o", out])
    cpu = 0.0
    while p.poll() is None:          # the atr process's own CPU, not its children's
        try:
            cpu = self_cpu_ms(p.pid)
        except OSError:
            pass
        time.sleep(0.02)
    assert p.returncode == 0, p.returncode
    steps = [json.loads(l) for l in open(f"{out}/metrics.jsonl")]
    bad = [s for s in steps if s["outcome"] not in ("ok", "noop")]
    assert not bad, bad[:2]
    return {"start_ms": steps[0]["browser_start_ms"], "driver_cpu_ms": cpu,
            "peak_mb": max(s["max_rss_mb"] for s in steps),
            "steps": [{"method": s["action"].rsplit(".", 1)[-1], "latency_ms": s["latency_ms"]
                       - (s["browser_start_ms"] or 0), "browser_cpu_ms": s["cpu_ms"]} for s in steps]}


def run_pw(k):
    out = f"{w}/pw{k}.json"
    subprocess.run(["node", f"{ROOT}/bench/browser/pw.mjs", f"{w}/site.json", out], check=True)
    d = json.load(open(out))
    for s in d["steps"]:
        s["method"] = {"mouseWheel": "wheel"}.get(s["method"], s["method"])
    # start to a ready page: launch and newContext, then the first newPage
    return {"start_ms": d["start_ms"] + d["steps"][0]["latency_ms"],
            "driver_cpu_ms": d["node_cpu_ms"], "peak_mb": None,
            "steps": d["steps"]}


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


res = {"atr": [], "playwright": []}
for k in range(rounds):
    res["atr"].append(run_atr(k))
    res["playwright"].append(run_pw(k))
print(f"workload: shop flow x{n} ({11 * n} calls) per session, {rounds} sessions each; "
      f"chromium {subprocess.run(['/usr/lib/chromium/chromium', '--version'], capture_output=True, text=True).stdout.strip()}")
print("start ms: launch to a ready page (atr: spawn in its cgroup and namespaces, page, Fetch on;"
      " playwright: launch, newContext with a route, newPage)")
print(f"{'driver':<11} {'p50 ms':>8} {'p99 ms':>8} {'brCPU/step':>10} {'drvCPU/step':>11} {'start ms':>9} {'peak MB':>8}")
summary = {}
for name, runs in res.items():
    steps = [s for r in runs for s in r["steps"][1:]]       # the first newPage starts the page
    lat = [s["latency_ms"] for s in steps]
    bcpu = statistics.mean(s["browser_cpu_ms"] for s in steps)
    dcpu = statistics.mean(r["driver_cpu_ms"] / len(r["steps"]) for r in runs)
    start = statistics.median(r["start_ms"] for r in runs)
    peak = max(r["peak_mb"] for r in runs) if runs[0]["peak_mb"] is not None else float("nan")
    summary[name] = (pct(lat, 50), pct(lat, 99))
    print(f"{name:<11} {pct(lat, 50):8.1f} {pct(lat, 99):8.1f} {bcpu:10.1f} {dcpu:11.2f} {start:9.0f} {peak:8.0f}")
print("p50 latency by action (atr / playwright):")
for m in sorted({s["method"] for r in res["atr"] for s in r["steps"][1:]}):
    a = [s["latency_ms"] for r in res["atr"] for s in r["steps"][1:] if s["method"] == m]
    b = [s["latency_ms"] for r in res["playwright"] for s in r["steps"][1:] if s["method"] == m]
    print(f"  {m:<17} {statistics.median(a):7.1f} / {statistics.median(b):7.1f}")
subprocess.run(["rm", "-rf", w])
