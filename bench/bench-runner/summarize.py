#!/usr/bin/env python3
"""summarize.py N PY_JSONL PY_WORKDIR PY_WALL_S [ATR_OUT ATR_WORKDIR ATR_WALL_S]
- the table of bench/bench-runner/run.sh.

Python's runs come from pyrunner.py's JSON lines, atr's from
ATR_OUT/results/<commit8>_<variant>_result.json ("timing" member); the
server's stamps from WORKDIR/stamp-<commit> (port opened) and
.close (listening socket closed). Per runner, over the N items:

  detection  ready_unix_s - port-open stamp: how long after the port
             opened the runner saw the server ready;
  teardown   teardown_s: SIGTERM sent -> port seen free;
  SIGTERM -> closed      close stamp - term_unix_s (the server's side);
  closed -> seen free    port_free_unix_s - close stamp (the runner's side);
  startup    startup_s: spawn -> ready seen (server delay included);
  wall/item  the runner's whole elapsed time (its own start-up included)
             divided by N.

Percentiles interpolate linearly between order statistics (numpy's
default). Exits 1 when a runner's results are missing or incomplete."""
import glob
import json
import math
import os
import sys


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return math.nan
    k = (len(xs) - 1) * q / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def stamp(path):
    with open(path) as f:
        return float(f.read())


def figures(runs, workdir, wall, n):
    """runs: [(commit, outcome, timing)] -> {figure: [values]}."""
    bad = [(c, o) for c, o, t in runs if "ready_unix_s" not in t or "teardown_s" not in t]
    if len(runs) != n or bad:
        raise SystemExit("summarize: %d runs of %d, without timing: %s" % (len(runs), n, bad))
    f = {"det": [], "tear": [], "term_close": [], "close_free": [], "startup": []}
    for c, o, t in runs:
        opened = stamp(os.path.join(workdir, "stamp-" + c))
        closed = stamp(os.path.join(workdir, "stamp-" + c + ".close"))
        f["det"].append(1e3 * (t["ready_unix_s"] - opened))
        f["tear"].append(1e3 * t["teardown_s"])
        f["term_close"].append(1e3 * (closed - t["term_unix_s"]))
        f["close_free"].append(1e3 * (t["port_free_unix_s"] - closed))
        f["startup"].append(1e3 * t["startup_s"])
    f["wall"] = [1e3 * wall / n]
    f["outcomes"] = sorted({o for _, o, _ in runs})
    return f


def load_py(path):
    return [(r["commit"], r["outcome"], r["timing"]) for r in map(json.loads, open(path))]


def load_atr(out):
    runs = []
    for p in sorted(glob.glob(os.path.join(out, "results", "*_result*.json"))):
        r = json.load(open(p))
        runs.append((os.path.basename(p).split("_")[0], r.get("outcome", "?"),
                     r.get("timing") or {}))
    return runs


def main():
    a = sys.argv[1:]
    n = int(a[0])
    py = figures(load_py(a[1]), a[2], float(a[3]), n)
    atr = figures(load_atr(a[4]), a[5], float(a[6]), n) if len(a) >= 7 else None
    rows = [("detection after port open, median", "det", 50),
            ("detection after port open, p90", "det", 90),
            ("detection after port open, max", "det", 100),
            ("teardown SIGTERM -> port free, median", "tear", 50),
            ("teardown SIGTERM -> port free, p90", "tear", 90),
            ("teardown SIGTERM -> port free, max", "tear", 100),
            ("  server: SIGTERM -> socket closed, median", "term_close", 50),
            ("  runner: closed -> seen free, median", "close_free", 50),
            ("startup spawn -> ready (delay incl.), median", "startup", 50),
            ("wall per item (whole run / N)", "wall", 50)]
    print("%-46s %10s %10s %11s" % ("ms, over %d items" % n, "atr", "python", "python/atr"))
    for name, key, q in rows:
        p = pct(py[key], q)
        if atr:
            x = pct(atr[key], q)
            ratio = "%.2f" % (p / x) if x > 0 else "-"
            print("%-46s %10.2f %10.2f %11s" % (name, x, p, ratio))
        else:
            print("%-46s %10s %10.2f %11s" % (name, "-", p, "-"))
    print("outcomes: python %s%s" % (",".join(py["outcomes"]),
          "; atr " + ",".join(atr["outcomes"]) if atr else ""))
    if atr:
        det, tear = max(atr["det"]), max(atr["tear"])
        print("goals (atr, every item): detection < 50 ms: %s (max %.2f ms); "
              "teardown < 1 s: %s (max %.2f ms)"
              % ("met" if det < 50 else "NOT met", det, "met" if tear < 1000 else "NOT met", tear))


if __name__ == "__main__":
    main()
