#!/usr/bin/env python3
"""overhead.py - atr's client and proxy in front of llama.cpp's llama-server
(not a test: figures for BENCHMARKS.md, "atr against llama-server").

usage: python3 bench/llama/overhead.py [ATR] [ROUNDS]   (default build/atr, 5)

Starts llama-server (sh scripts/llama.sh) on the tiny model atr generates
(-np 2 -t 1), and on free ports an `atr proxy` in front of it. Then:

1. Replay client overhead: `atr replay llm` of 200 requests (200 prompt /
   16 output tokens) at a constant 40/s, ROUNDS times: the client's CPU
   (user + system, from the child's rusage) per request, as the
   difference to a run of 10 requests over the 190 more (so the start-up,
   the model lookup and the warm-up are not counted), and the achieved
   send rate ((n - 1) / span of sent_s) against the requested 40/s.
2. Proxy overhead: 60 such requests one at a time
   (--max-concurrency 1), direct and through the proxy, interleaved
   (direct, proxy, proxy, direct, ...), ROUNDS pairs: the median TTFT and
   E2EL of each run, then the median over runs per path and the ratio
   proxy / direct.

Everything is in a temporary directory removed at the end, with the
processes this script started (stopped by their PIDs).
"""
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ATR = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/atr")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(cmd, log, pattern, deadline_s=30):
    """Starts cmd with stdout+stderr in log; polls log for pattern's URL."""
    f = open(log, "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and p.poll() is None:
        m = re.search(pattern, open(log).read())
        if m:
            return p, m.group(1)
        time.sleep(0.05)
    p.kill()
    sys.exit("did not start: %s\n%s" % (" ".join(cmd), open(log).read()[-600:]))


def healthy(url, deadline_s=30):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            if urllib.request.urlopen(url + "/health", timeout=2).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit("llama-server not healthy at " + url)


def replay(d, trace, target, name, extra):
    """One atr replay llm run: (its records, its CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    req = os.path.join(d, name + ".ndjson")
    subprocess.run([ATR, "replay", "llm", trace, "--target", target, "-q",
                    "--requests-out", req] + extra, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    recs = [json.loads(l) for l in open(req)]
    bad = [r for r in recs if not r["success"]]
    assert not bad, (name, bad[0]["error"], bad[0].get("error_detail"))
    return recs, cpu


def main():
    llama = subprocess.run(["sh", os.path.join(ROOT, "scripts/llama.sh")], check=True,
                           capture_output=True, text=True).stdout.strip()
    d = tempfile.mkdtemp()
    procs = []
    try:
        model = os.path.join(d, "tiny.gguf")
        subprocess.run([ATR, "gen", "--kind", "gguf", "--preset", "tiny", "--ctx", "65536",
                        "-o", model], check=True, capture_output=True)
        srv, url = start([llama, "-m", model, "--host", "127.0.0.1", "--port", "0", "--no-webui",
                          "-np", "2", "-t", "1", "-c", "16384"], os.path.join(d, "llama.log"),
                         r"listening on (http://127\.0\.0\.1:\d+)")
        procs.append(srv)
        healthy(url)
        px, purl = start([ATR, "proxy", "--upstream", url, "--port", "0"],
                         os.path.join(d, "proxy.log"), r"listening on (http://127\.0\.0\.1:\d+)")
        procs.append(px)
        traces = {}
        for name, n in (("small", 10), ("large", 200), ("seq", 60)):
            traces[name] = os.path.join(d, name + ".ndjson")
            subprocess.run([ATR, "gen", "--kind", "requests", "--traces", str(n), "--input-tokens",
                            "200", "--output-tokens", "16", "-o", traces[name]], check=True,
                           capture_output=True)

        print("replay client against llama-server: 200 requests 200/16 at 40/s constant")
        cpus, rates = [], []
        for i in range(ROUNDS):
            rate = ["--rate", "40", "--arrival", "constant"]
            _, small = replay(d, traces["small"], url, "small%d" % i, rate)
            recs, large = replay(d, traces["large"], url, "large%d" % i, rate)
            sent = sorted(r["sent_s"] for r in recs)
            rates.append((len(sent) - 1) / (sent[-1] - sent[0]))
            cpus.append((large - small) / (len(recs) - 10) * 1e6)
        print("  client CPU per request (us, 200-request run less a 10-request run, over 190):"
              " median %.0f (runs: %s)" % (statistics.median(cpus), " ".join("%.0f" % c for c in cpus)))
        print("  achieved send rate (/s): median %.3f of 40 (runs: %s)" %
              (statistics.median(rates), " ".join("%.3f" % r for r in rates)))

        print("proxy overhead: the same, one at a time, direct and through atr proxy, interleaved")
        med = {"direct": {"ttft": [], "e2el": []}, "proxy": {"ttft": [], "e2el": []}}
        for i in range(ROUNDS):
            order = ["direct", "proxy"] if i % 2 == 0 else ["proxy", "direct"]
            for path in order:
                recs, _ = replay(d, traces["seq"], url if path == "direct" else purl, "%s%d" % (path, i),
                                 ["--max-concurrency", "1", "--rate", "inf"])
                med[path]["ttft"].append(statistics.median(r["ttft_ms"] for r in recs))
                med[path]["e2el"].append(statistics.median(r["e2el_ms"] for r in recs))
        for k in ("ttft", "e2el"):
            dm = statistics.median(med["direct"][k])
            pm = statistics.median(med["proxy"][k])
            print("  %s median (ms): direct %.3f, proxy %.3f, ratio %.3f, +%.3f ms" %
                  (k.upper(), dm, pm, pm / dm, pm - dm))
            print("    per run direct: %s" % " ".join("%.3f" % v for v in med["direct"][k]))
            print("    per run proxy:  %s" % " ".join("%.3f" % v for v in med["proxy"][k]))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
