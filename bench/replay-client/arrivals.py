#!/usr/bin/python3
"""arrivals.py - one ladder step judged at the server: the stub's arrival
log (bench/replay-client/stub.c: one CLOCK_MONOTONIC second per request, in
arrival order) against the constant schedule the client was asked for.

The last N arrivals are the step's requests (a client's warm-up requests
come first). The i-th of them was due at t0 + i / RATE; t0 is unknown to
the server, so it is taken as the earliest the arrivals allow (the minimum
of arrival_i - i / RATE): the lag of every request is then how much later
than that schedule it reached the server, >= 0, and a client that falls
behind shows a lag that grows with i. What the client says about itself
plays no part.

usage: arrivals.py LOG N RATE
prints: server_rate lag_p50_ms lag_p99_ms   (req/s and ms; a request that
        never arrived makes the lag 1e9)
"""
import sys


def percentile(v, p):
    """numpy's default (linear) percentile of a sorted list."""
    if not v:
        return 0.0
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def main():
    path, n, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    with open(path) as f:
        arr = sorted(float(x) for x in f if x.strip())
    arr = arr[-n:] if n else []
    if len(arr) < 2:
        print("0 0 0")
        return
    span = arr[-1] - arr[0]
    srv_rate = (len(arr) - 1) / span if span > 0 else 0.0
    t0 = min(a - i / rate for i, a in enumerate(arr))
    lags = sorted((a - i / rate - t0) * 1e3 for i, a in enumerate(arr))
    p99 = percentile(lags, 99) if len(arr) == n else 1e9
    print("%.2f %.4f %.4f" % (srv_rate, percentile(lags, 50), p99))


if __name__ == "__main__":
    main()
