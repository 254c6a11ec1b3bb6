#!/usr/bin/env python3
"""summarize.py - tables for bench/sweep/run.sh: atr sweep beside the GuideLLM method.

usage: summarize.py WORK ROUNDS TTFT_MS ITL_MS OUTPUT_TOKENS

Reads, per round r (1..ROUNDS) from WORK: atr<r>.json (the `atr sweep`
result), atr<r>.time and py<r>.time ("elapsed user sys" from /usr/bin/time),
lag<r>.<i>.ndjson (`atr replay llm --requests-out` at the i-th rate run's
rate and seed, for atr's send lag: the sweep writes no per-request times) and
py<r>.json (guidellm_method.py). Prints one table per round, then medians
over rounds and the atr / Python ratios.
"""

import json
import statistics
import sys

from guidellm_method import pct, span_rate   # one definition of each, beside this file


def read_time(path):
    with open(path) as f:
        e, u, s = (float(x) for x in f.read().split()[-3:])
    return e, u + s


def atr_lag(path):
    """send lag p50/p99 (ms) and achieved send rate of one replay run."""
    rows = [json.loads(line) for line in open(path)]
    ok = [r for r in rows if r["success"] and r["sent_s"] is not None]
    lags = [(r["sent_s"] - r["scheduled_s"]) * 1000 for r in ok]
    return (pct(lags, 50), pct(lags, 99), span_rate(sorted(r["sent_s"] for r in ok)),
            span_rate(sorted(r["scheduled_s"] for r in rows)))


def atr_runs(work, r):
    doc = json.load(open(f"{work}/atr{r}.json"))
    out, i = [], 0
    for run in doc["runs"]:
        m = run["metrics"]
        row = {"kind": run["kind"], "rate": run["rate"], "ok": m["completed"],
               "thr": m["request_throughput"], "ttft": m["ttft_ms"]["median"],
               "e2el": m["e2el_ms"]["median"], "p50": None, "p99": None, "send": None, "sched": None}
        if run["kind"] == "rate":
            row["p50"], row["p99"], row["send"], row["sched"] = atr_lag(f"{work}/lag{r}.{i}.ndjson")
            i += 1
        out.append(row)
    return out


def py_runs(work, r):
    doc = json.load(open(f"{work}/py{r}.json"))
    return [{"kind": x["kind"], "rate": x["rate"], "ok": x["completed"],
             "thr": x.get("request_throughput"), "ttft": x["ttft_ms"]["median"],
             "e2el": x["e2el_ms"]["median"], "p50": x["lag_ms"]["p50"],
             "p99": x["lag_ms"]["p99"], "send": x.get("send_rate"),
             "sched": x.get("sched_rate")} for x in doc["runs"]]


def f(x, fmt="%.2f"):
    return "-" if x is None else fmt % x


def main():
    work, rounds = sys.argv[1], int(sys.argv[2])
    ttft, itl, out_tok = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    e2el_ideal = ttft + itl * (out_tok - 1)
    walls = {"atr": [], "py": []}
    cpus = {"atr": [], "py": []}
    over = {}  # (client, kind, metric) -> [ms over the server's fixed latency]
    lag99 = {"atr": [], "py": []}
    lag50 = {"atr": [], "py": []}
    kept = {"atr": [], "py": []}  # sent/s over the schedule's own rate
    for r in range(1, rounds + 1):
        first = "atr" if r % 2 else "python"
        print(f"\nround {r} ({first} first)")
        for c in ("atr", "py"):
            e, cpu = read_time(f"{work}/{c}{r}.time")
            walls[c].append(e)
            cpus[c].append(cpu)
        print(f"  sweep wall s: atr {walls['atr'][-1]:.2f}, python {walls['py'][-1]:.2f}; "
              f"client cpu s: atr {cpus['atr'][-1]:.2f}, python {cpus['py'][-1]:.2f}")
        print("  %-8s %-7s %9s %9s %9s %9s %8s %8s %8s %8s" % (
            "client", "kind", "rate", "req/s", "sched/s", "sent/s", "lag p50", "lag p99",
            "TTFT p50", "E2EL p50"))
        for c, runs in (("atr", atr_runs(work, r)), ("py", py_runs(work, r))):
            for x in runs:
                kind = x["kind"][:7]
                print("  %-8s %-7s %9s %9s %9s %9s %8s %8s %8s %8s" % (
                    "atr" if c == "atr" else "python", kind, f(x["rate"], "%.1f"),
                    f(x["thr"], "%.1f"), f(x["sched"], "%.1f"), f(x["send"], "%.1f"), f(x["p50"], "%.3f"),
                    f(x["p99"], "%.3f"), f(x["ttft"]), f(x["e2el"])))
                over.setdefault((c, x["kind"], "ttft"), []).append(x["ttft"] - ttft)
                over.setdefault((c, x["kind"], "e2el"), []).append(x["e2el"] - e2el_ideal)
                if x["kind"] == "rate" and x["p99"] is not None:
                    lag99[c].append(x["p99"])
                    lag50[c].append(x["p50"])
                    kept[c].append(x["send"] / x["sched"])
    med = statistics.median
    print(f"\nmedians over {rounds} rounds (server: TTFT {ttft:g} ms, ITL {itl:g} ms, "
          f"{out_tok} tokens: E2EL {e2el_ideal:g} ms)")
    print("  %-28s %10s %10s %10s" % ("", "atr", "python", "atr/python"))
    rows = [("sweep wall s", med(walls["atr"]), med(walls["py"])),
            ("client cpu s", med(cpus["atr"]), med(cpus["py"])),
            ("sent/s / sched/s (rate runs)", med(kept["atr"]), med(kept["py"])),
            ("send lag p50 ms (rate runs)", med(lag50["atr"]), med(lag50["py"])),
            ("send lag p99 ms (rate runs)", med(lag99["atr"]), med(lag99["py"]))]
    for kind in ("synchronous", "throughput", "rate"):
        for m in ("ttft", "e2el"):
            a, p = over.get(("atr", kind, m)), over.get(("py", kind, m))
            if a and p:
                rows.append((f"{m.upper()} p50 over server, {kind[:5]}", med(a), med(p)))
    for name, a, p in rows:
        ratio = a / p if p else float("nan")
        print("  %-28s %10.3f %10.3f %10.2f" % (name, a, p, ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
