#!/usr/bin/env python3
"""proxy-session-rss.py - the proxy's memory under many distinct long
session names: starts a real `atr sim serve` and `atr proxy` in front of
it, sends N requests each with a distinct SIZE-byte `user` field, and
prints the proxy's RSS before, at its peak (VmHWM) and after the load.
Usage: scripts/proxy-session-rss.py ATR [N [SIZE [PROXY-ARGS...]]]"""
import os, re, subprocess, sys, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverproc import kib, start  # noqa: E402


def main():
    atr = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 20
    up, up_port = start([atr, "sim", "serve", "--port", "0", "--ttft", "0", "--itl", "0"])
    px, port = start([atr, "proxy", "--port", "0", "--upstream", "http://127.0.0.1:%d" % up_port]
                     + sys.argv[4:])
    try:
        before = kib(px.pid, "VmRSS")
        for i in range(n):
            user = ("%06d" % i) + "u" * (size - 6)
            body = ('{"model":"atr-sim","messages":[{"role":"user","content":"hi"}],'
                    '"max_tokens":1,"user":"%s"}' % user).encode()
            req = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port, body,
                                         {"Content-Type": "application/json"})
            urllib.request.urlopen(req).read()
        time.sleep(0.5)                 # let the last answer be written
        print("requests %d user_bytes %d rss_before_kib %d peak_kib %d after_kib %d" % (
            n, size, before, kib(px.pid, "VmHWM"), kib(px.pid, "VmRSS")))
    finally:
        for p in (px, up):
            p.terminate()
            p.wait()


main()
