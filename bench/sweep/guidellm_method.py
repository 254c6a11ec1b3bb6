#!/usr/bin/env python3
"""guidellm_method.py - GuideLLM's sweep method, client side, with the stdlib only.

The reference `atr sweep` is timed against (bench/sweep/run.sh). GuideLLM
itself cannot be installed here (no PyPI; httpx/aiohttp absent), so this is
its documented method re-written on raw asyncio streams:

- SweepProfile (guidellm src/guidellm/benchmark/profiles.py, later
  profiles/sweep.py): a synchronous benchmark, then a throughput benchmark,
  then rates np.linspace(sync_rate, throughput_rate, sweep_size - 1)[1:],
  where each measured rate is request_throughput.successful.mean.
- That mean (DistributionSummary.from_request_times, distribution_type
  "rate"): completions weighted by the time between them, which reduces to
  successful requests / (last end - first request start).
- Strategies (guidellm src/guidellm/scheduler/strategies.py):
  SynchronousStrategy sends the next request when the previous completed;
  ThroughputStrategy schedules every request at the start time, at most
  settings.max_concurrency (512) in flight; AsyncConstantStrategy sends
  request i (from 1) at start + i / rate; AsyncPoissonStrategy at the running
  sum of random.Random(seed).expovariate(rate) from start.
- Per request (GuideLLM's request timings): request start, first token
  (first streamed chunk with text), last token, end; TTFT = first - start,
  ITL = (last - first) / (output tokens - 1), E2EL = end - start. Output
  tokens from the usage chunk.

Each benchmark sends exactly --requests requests (GuideLLM's --max-requests),
the count `atr sweep --generate N` sends per run. --fixed-rates R,R,... takes
the rate runs' rates as given (so both clients run the same rates); the rates
this client would have picked itself are written beside them. --schedule-from
takes the rate runs' send times from atr's own schedule (the same seed's
Poisson draw, which Python's random.Random would draw differently: with 100
gaps the two draws' real rates differ by up to ~20 %), so both clients send
the same requests at the same offsets.

HTTP: HTTP/1.1 keep-alive over a bounded pool (--pool, default 512 as
GuideLLM's max_concurrency), chunked or Content-Length bodies, SSE split on
blank lines. One uncounted warm-up request per benchmark, as atr sends.

Besides GuideLLM's figures it records, per request, when its bytes were
written (sent) against when the schedule wanted it (send lag).
Writes one JSON document (--out); prints nothing else.
"""

import argparse
import asyncio
import json
import random
import resource
import sys
import time
from urllib.parse import urlsplit

MAX_CONCURRENCY = 512  # guidellm settings.max_concurrency


class Pool:
    """Keep-alive connections to one host, at most `limit` in use."""

    def __init__(self, host, port, limit):
        self.host, self.port = host, port
        self.sem = asyncio.Semaphore(limit)
        self.idle = []

    async def acquire(self):
        await self.sem.acquire()
        if self.idle:
            return self.idle.pop(), True
        return await asyncio.open_connection(self.host, self.port), False

    def release(self, conn, reusable):
        if reusable:
            self.idle.append(conn)
        else:
            conn[1].close()
        self.sem.release()

    def close(self):
        for _, w in self.idle:
            w.close()
        self.idle = []


def request_bytes(host, port, body):
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


class Stream:
    """SSE parser: feed body bytes, stamps token times into the record."""

    def __init__(self, rec):
        self.rec = rec
        self.buf = b""
        self.done = False

    def feed(self, data, now):
        self.buf += data
        while True:
            cut = self.buf.find(b"\n\n")
            if cut < 0:
                return
            event, self.buf = self.buf[:cut], self.buf[cut + 2:]
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self.message(line[5:].strip(), now)

    def message(self, data, now):
        if data == b"[DONE]":
            self.done = True
            return
        msg = json.loads(data)
        usage = msg.get("usage")
        if usage:
            self.rec["output_tokens"] = usage.get("completion_tokens", 0)
        choices = msg.get("choices") or []
        if choices and choices[0].get("text"):
            if self.rec["first"] is None:
                self.rec["first"] = now
            self.rec["last"] = now
            self.rec["iterations"] += 1


async def read_body(reader, stream):
    """Reads one response; returns whether the connection can be reused."""
    status = await reader.readline()
    if not status:
        raise ConnectionError("closed before the status line")
    code = int(status.split()[1])
    length, chunked, close = None, False, False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.decode("latin-1").partition(":")
        k, v = k.strip().lower(), v.strip().lower()
        if k == "content-length":
            length = int(v)
        elif k == "transfer-encoding" and "chunked" in v:
            chunked = True
        elif k == "connection" and v == "close":
            close = True
    if chunked:
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                break
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            stream.feed(data, time.perf_counter())
    elif length is not None:
        stream.feed(await reader.readexactly(length), time.perf_counter())
    else:
        stream.feed(await reader.read(), time.perf_counter())
        close = True
    if code != 200:
        raise RuntimeError(f"HTTP {code}")
    return not close


async def send(pool, payload, rec):
    """One request: GuideLLM's request start, then the stream."""
    rec["start"] = time.perf_counter()
    for attempt in (0, 1):
        conn, reused = await pool.acquire()
        reusable = False
        try:
            conn[1].write(payload)
            rec["sent"] = time.perf_counter()
            await conn[1].drain()
            reusable = await read_body(conn[0], Stream(rec))
            rec["end"] = time.perf_counter()
            rec["ok"] = rec["first"] is not None
            return
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            # a kept-alive connection the server closed: retry once fresh
            if not (reused and attempt == 0):
                rec["error"] = repr(e)
                rec["end"] = time.perf_counter()
                return
        except Exception as e:  # noqa: BLE001 - a failed request, counted
            rec["error"] = repr(e)
            rec["end"] = time.perf_counter()
            return
        finally:
            pool.release(conn, reusable)


def new_record(scheduled):
    return {"scheduled": scheduled, "start": None, "sent": None, "first": None,
            "last": None, "end": None, "iterations": 0, "output_tokens": 0,
            "ok": False}


class Target:
    def __init__(self, args):
        u = urlsplit(args.url)
        self.host, self.port = u.hostname, u.port or 80
        self.model, self.pool_limit = args.model, args.pool
        self.words, self.out_tokens = args.input_tokens, args.output_tokens

    def payload(self, run, i):
        # every benchmark's prompts start with their own word, as atr's
        words = [f"sweep{run}"] + [f"w{(i * 7 + k) % 997}" for k in range(self.words - 1)]
        body = json.dumps({
            "model": self.model, "prompt": " ".join(words),
            "max_tokens": self.out_tokens, "min_tokens": self.out_tokens,
            "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True},
        }).encode()
        return request_bytes(self.host, self.port, body)


def pct(xs, p):
    """numpy's default (linear) percentile."""
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def span_rate(ts):
    """(n - 1) / (last - first) of sorted times, or None."""
    return (len(ts) - 1) / (ts[-1] - ts[0]) if len(ts) > 1 and ts[-1] > ts[0] else None


def summarize(kind, rate, recs):
    ok = [r for r in recs if r["ok"]]
    out = {"kind": kind, "rate": rate, "completed": len(ok),
           "failed": len(recs) - len(ok)}
    if not ok:
        return out
    t0 = min(r["start"] for r in ok)
    t1 = max(r["end"] for r in ok)
    sent = sorted(r["sent"] for r in recs if r["sent"] is not None)
    ms = 1000.0
    out.update({
        "duration_s": t1 - t0,
        # guidellm request_throughput.successful.mean
        "request_throughput": len(ok) / (t1 - t0) if t1 > t0 else 0.0,
        "send_rate": span_rate(sent),
        # the rate of this schedule's own draw (a Poisson draw of 100 gaps
        # strays from the asked rate); send_rate / sched_rate: how well the
        # client kept its schedule
        "sched_rate": span_rate(sorted(r["scheduled"] for r in recs))
        if kind == "rate" else None,
        "lag_ms": {"p50": pct([(r["sent"] - r["scheduled"]) * ms for r in ok], 50),
                   "p99": pct([(r["sent"] - r["scheduled"]) * ms for r in ok], 99)},
        "ttft_ms": {"median": pct([(r["first"] - r["start"]) * ms for r in ok], 50)},
        "e2el_ms": {"median": pct([(r["end"] - r["start"]) * ms for r in ok], 50)},
        "itl_ms": {"median": pct([(r["last"] - r["first"]) * ms / (r["output_tokens"] - 1)
                                  for r in ok if r["output_tokens"] > 1], 50)},
    })
    return out


async def benchmark(tg, run, kind, rate, n, strategy, seed, offsets=None):
    """One GuideLLM benchmark of n requests; returns its summary."""
    pool = Pool(tg.host, tg.port, 1 if kind == "synchronous" else tg.pool_limit)
    warm = new_record(0.0)
    await send(pool, tg.payload(run, -1), warm)
    payloads = [tg.payload(run, i) for i in range(n)]
    recs = []
    start = time.perf_counter()
    if kind == "synchronous":
        at = start  # SynchronousStrategy: the previous completion
        for p in payloads:
            rec = new_record(at)
            recs.append(rec)
            await send(pool, p, rec)
            at = rec["end"]
    else:
        if kind == "throughput":
            times = [start] * n
        elif offsets is not None:
            times = [start + x for x in offsets]
        elif strategy == "constant":
            times = [start + (i + 1) / rate for i in range(n)]
        else:
            rng, t, times = random.Random(seed), start, []
            for _ in range(n):
                t += rng.expovariate(rate)
                times.append(t)
        tasks = []
        for t, p in zip(times, payloads):
            delay = t - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            rec = new_record(t)
            recs.append(rec)
            tasks.append(asyncio.create_task(send(pool, p, rec)))
        await asyncio.gather(*tasks)
    pool.close()
    return summarize(kind, rate, recs)


def read_schedule(path, n):
    """The first n scheduled_s of an `atr replay llm --requests-out` file."""
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    rows.sort(key=lambda r: r["id"])
    times = [r["scheduled_s"] for r in rows[:n]]
    if len(times) < n:
        raise SystemExit(f"{path}: {len(times)} requests, want {n}")
    return times


async def sweep(args):
    tg = Target(args)
    runs = [await benchmark(tg, 0, "synchronous", None, args.requests, args.strategy, args.seed),
            await benchmark(tg, 1, "throughput", None, args.requests, args.strategy, args.seed)]
    sync, thr = (r.get("request_throughput", 0.0) for r in runs)
    if sync <= 0 and thr <= 0:
        raise RuntimeError("no successful requests in the synchronous and throughput runs")
    n = args.rates  # guidellm sweep_size = n + 2
    own = [sync + (thr - sync) * i / n for i in range(1, n + 1)]  # linspace(...)[1:]
    rates = [float(x) for x in args.fixed_rates.split(",")] if args.fixed_rates else own
    files = args.schedule_from.split(",") if args.schedule_from else []
    for i, rate in enumerate(rates):
        if rate <= 0:
            break
        offsets = read_schedule(files[i], args.requests) if i < len(files) else None
        runs.append(await benchmark(tg, 2 + i, "rate", rate, args.requests, args.strategy,
                                    args.seed, offsets))
    return {"own_rates": own, "rates": rates, "runs": runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="atr-sim")
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--input-tokens", type=int, default=128, help="prompt words")
    ap.add_argument("--output-tokens", type=int, default=16)
    ap.add_argument("--rates", type=int, default=5, help="rate runs (sweep_size - 2)")
    ap.add_argument("--fixed-rates", help="R,R,...: the rate runs' rates")
    ap.add_argument("--schedule-from", help="FILE,FILE,...: the rate runs' send times "
                    "(scheduled_s of atr replay llm --requests-out) instead of drawing them")
    ap.add_argument("--strategy", choices=["poisson", "constant"], default="poisson")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pool", type=int, default=MAX_CONCURRENCY)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    doc = asyncio.run(sweep(args))
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    doc["wall_s"] = time.perf_counter() - t0
    doc["cpu_s"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    with open(args.out, "w") as f:
        json.dump(doc, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
