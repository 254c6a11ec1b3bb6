#!/usr/bin/python3
"""summarize.py - one step of the rate ladder, from a per-request NDJSON file
(`atr replay llm --requests-out` or `vllm_client.py --requests-out`: both
write scheduled_s, sent_s, end_s, ttft_ms, success), computed the same way
for both clients. The lag is the send lag: sent_s (the request's bytes
leave on a connection) - scheduled_s, every wait before the server can see
it included; a request never sent counts at send_s.

usage: summarize.py REQUESTS.ndjson
prints: requests failed achieved_send_rate lag_p50_ms lag_p99_ms mean_ttft_ms
        throughput (successes / (last end_s - first scheduled_s), req/s)
"""
import json
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
    sends, lags, ttfts, failed = [], [], [], 0
    first, last = float("inf"), float("-inf")
    with open(sys.argv[1]) as f:
        for line in f:
            r = json.loads(line)
            # Every request counts for the schedule, failed or not.
            sent = r["sent_s"] if r.get("sent_s") is not None else r["send_s"]
            sends.append(sent)
            lags.append((sent - r["scheduled_s"]) * 1e3)
            first = min(first, r["scheduled_s"])
            last = max(last, r["end_s"])
            if r["success"]:
                ttfts.append(r["ttft_ms"])
            else:
                failed += 1
    sends.sort()
    lags.sort()
    span = sends[-1] - sends[0] if len(sends) > 1 else 0.0
    rate = (len(sends) - 1) / span if span > 0 else 0.0
    mean_ttft = sum(ttfts) / len(ttfts) if ttfts else float("nan")
    ok = len(sends) - failed
    tput = ok / (last - first) if last > first else 0.0
    print("%d %d %.2f %.4f %.4f %.4f %.1f" % (len(sends), failed, rate, percentile(lags, 50),
                                              percentile(lags, 99), mean_ttft, tput))


if __name__ == "__main__":
    main()
