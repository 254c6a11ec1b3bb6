#!/usr/bin/python3
"""vllm_client.py - the reference load generator: vLLM's benchmark client
logic (vllm/benchmarks/serve.py + lib/endpoint_request_func.py) on a
constant-rate schedule, for bench/replay-client/run.sh.

What it keeps from vLLM, on purpose:
- one aiohttp.ClientSession over a TCPConnector(limit=0, limit_per_host=0,
  keepalive_timeout=60, enable_cleanup_closed=True, force_close=False) and a
  6 h total timeout, as `benchmark()` sets them without --max-concurrency
  (--limit 0, the default); --limit N bounds the pool to N connections, so
  requests beyond N wait in aiohttp's connector for a free one instead of
  each opening its own (the fairest Python client: --limit 512);
- the schedule loop of `get_request()`: precomputed cumulative delays, sleep
  until each one, then `asyncio.create_task()` of the request coroutine;
- the request coroutine of `async_request_openai_completions()`: the same
  payload (stream true, stream_options.include_usage, repetition_penalty,
  max_tokens, logprobs None, plus ignore_eos as with --ignore-eos), `st =
  time.perf_counter()` just before `session.post(json=...)`, the body read
  with `iter_any()`, split into SSE messages on blank lines, TTFT at the
  first message with non-empty `choices`, ITLs after it, output tokens from
  the final usage chunk;
- gc frozen after set-up (vLLM calls freeze_gc_heap()); no progress bar
  (as with --disable-tqdm).

What differs: the gaps are exactly 1/RATE (vLLM's `burstiness=inf` branch,
first request at 0 like `atr replay llm --arrival constant`), the clock of
the schedule is time.perf_counter() (vLLM sleeps on time.time()), and every
request sends the same ~32-word prompt with max_tokens 8: the benchmark's
server answers at once whatever the prompt, so its content does not matter.

Per request it records the scheduled time, `st` (when the coroutine issued
the POST; vLLM's TTFT start), `sent` (aiohttp's on_request_headers_sent
trace signal: the request holds a connection, a pool wait included, and its
header is written next, with no await in between: the same point at which
`atr replay llm` stamps sent_s), the end and TTFT; it writes them as NDJSON
(--requests-out, the field names of `atr replay llm --requests-out`) and a
summary JSON (--out): achieved send rate, send lag (sent - scheduled)
p50/p99, mean TTFT, CPU seconds of the run (this process, imports and
set-up excluded).
"""
import argparse
import asyncio
import gc
import json
import resource
import sys
import time

import aiohttp

PROMPT = (" the quick brown fox jumps over the lazy dog while a small bird"
          " sings in the old oak tree near the river and the wind moves"
          " slowly through the tall green grass of the quiet field")  # 32 words


class SSESplitter:
    """Accumulates body bytes; returns the complete `data:` messages (the
    logic of vLLM's StreamedResponseHandler)."""

    def __init__(self):
        self.buf = ""

    def add(self, data):
        out = []
        if not data:
            return out
        self.buf += data.decode("utf-8")
        while "\n\n" in self.buf:
            msg, self.buf = self.buf.split("\n\n", 1)
            out.extend(ln for ln in msg.strip().splitlines() if ln.startswith("data:"))
        if self.buf.startswith("data:"):
            rest = self.buf[5:].strip()
            if rest == "[DONE]":
                out.append(self.buf.strip())
                self.buf = ""
            elif rest:
                try:
                    json.loads(rest)
                    out.append(self.buf.strip())
                    self.buf = ""
                except json.JSONDecodeError:
                    pass
        return out


class Output:
    __slots__ = ("success", "error", "st", "sent", "ttft", "itl", "latency", "output_tokens")

    def __init__(self):
        self.success = False
        self.error = ""
        self.st = 0.0
        self.sent = None
        self.ttft = 0.0
        self.itl = []
        self.latency = 0.0
        self.output_tokens = 0


async def request_completion(session, url, model, max_tokens):
    """One streaming completion, timed as vLLM times it."""
    payload = {
        "model": model,
        "prompt": PROMPT,
        "repetition_penalty": 1.0,
        "max_tokens": max_tokens,
        "logprobs": None,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    headers = {}
    out = Output()
    st = time.perf_counter()
    out.st = st
    last = st
    try:
        async with session.post(url=url, json=payload, headers=headers,
                                trace_request_ctx=out) as resp:
            if resp.status != 200:
                out.error = resp.reason or ""
                return out
            first = False
            sse = SSESplitter()
            async for data in resp.content.iter_any():
                for msg in sse.add(data):
                    if msg.startswith(":"):
                        continue
                    chunk = msg[5:].strip() if msg.startswith("data:") else msg.strip()
                    if chunk == "[DONE]":
                        continue
                    obj = json.loads(chunk)
                    choices = obj.get("choices")
                    if choices:
                        ts = time.perf_counter()
                        if not first:
                            first = True
                            out.ttft = time.perf_counter() - st
                        else:
                            out.itl.append(ts - last)
                        last = ts
                    elif obj.get("usage"):
                        out.output_tokens = obj["usage"].get("completion_tokens")
            out.success = first
            if not first:
                out.error = "no chunk with choices"
            out.latency = last - st
    except Exception as e:  # vLLM records any failure as the request's error
        out.error = repr(e)
    return out


async def on_headers_sent(session, ctx, params):
    """The request's header is about to be written on its connection."""
    ctx.trace_request_ctx.sent = time.perf_counter()


async def schedule(n, rate):
    """vLLM's get_request(): precomputed delays, sleep, yield."""
    delays = [i / rate for i in range(n)]
    start = time.perf_counter()
    for i in range(n):
        if delays[i] > 0:
            left = start + delays[i] - time.perf_counter()
            if left > 0:
                await asyncio.sleep(left)
        yield i, start + delays[i]


def percentile(sorted_v, p):
    """numpy's default (linear) percentile of a sorted list."""
    if not sorted_v:
        return 0.0
    k = (len(sorted_v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (sorted_v[hi] - sorted_v[lo]) * (k - lo)


async def run(args):
    url = args.base_url.rstrip("/") + "/v1/completions"
    connector = aiohttp.TCPConnector(limit=args.limit, limit_per_host=0, ttl_dns_cache=300,
                                     use_dns_cache=True, keepalive_timeout=60,
                                     enable_cleanup_closed=True, force_close=False,
                                     ssl=False)
    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(on_headers_sent)
    session = aiohttp.ClientSession(connector=connector, trust_env=True,
                                    timeout=aiohttp.ClientTimeout(total=6 * 60 * 60),
                                    trace_configs=[trace])
    try:
        for _ in range(args.warmup):         # vLLM's initial test run
            w = await request_completion(session, url, args.model, args.max_tokens)
            if not w.success:
                sys.exit("vllm_client.py: warm-up request failed: " + w.error)
        gc.collect()
        gc.freeze()
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        tasks, sched = [], []
        t0 = None
        async for i, due in schedule(args.num_requests, args.rate):
            if t0 is None:
                t0 = due
            sched.append(due)
            tasks.append(asyncio.create_task(
                request_completion(session, url, args.model, args.max_tokens)))
        outs = await asyncio.gather(*tasks)
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        await session.close()
    cpu = (ru1.ru_utime - ru0.ru_utime, ru1.ru_stime - ru0.ru_stime)
    return t0, sched, outs, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", default="atr-sim")
    ap.add_argument("--rate", type=float, required=True, help="requests per second")
    ap.add_argument("--num-requests", type=int, required=True)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0,
                    help="connections in the pool at most (0: unbounded, vLLM's default)")
    ap.add_argument("--out", required=True, help="summary JSON")
    ap.add_argument("--requests-out", help="one line per request")
    args = ap.parse_args()

    t0, sched, outs, cpu = asyncio.run(run(args))

    if args.requests_out:
        with open(args.requests_out, "w") as f:
            for i, (due, o) in enumerate(zip(sched, outs)):
                f.write(json.dumps({
                    "id": i, "success": o.success, "error": o.error or None,
                    "scheduled_s": due - t0, "send_s": o.st - t0,
                    "sent_s": None if o.sent is None else o.sent - t0,
                    "end_s": o.st + o.latency - t0,
                    "schedule_lag_ms": (o.st - due) * 1e3,
                    "send_lag_ms": ((o.st if o.sent is None else o.sent) - due) * 1e3,
                    "ttft_ms": o.ttft * 1e3, "itl_ms": [x * 1e3 for x in o.itl],
                    "output_tokens": o.output_tokens}) + "\n")

    ok = [o for o in outs if o.success]
    lags = sorted(((o.st if o.sent is None else o.sent) - due) * 1e3
                  for due, o in zip(sched, outs))
    sends = sorted(o.st if o.sent is None else o.sent for o in outs)
    span = sends[-1] - sends[0] if len(sends) > 1 else 0.0
    ttfts = [o.ttft * 1e3 for o in ok]
    summary = {
        "client": "python-vllm",
        "limit": args.limit,
        "rate": args.rate,
        "num_requests": len(outs),
        "completed": len(ok),
        "failed": len(outs) - len(ok),
        "achieved_send_rate": (len(sends) - 1) / span if span > 0 else 0.0,
        "duration_s": max(o.st + o.latency for o in outs) - t0,
        "p50_send_lag_ms": percentile(lags, 50),
        "p99_send_lag_ms": percentile(lags, 99),
        "mean_ttft_ms": sum(ttfts) / len(ttfts) if ttfts else 0.0,
        "cpu_s": cpu[0] + cpu[1],
        "cpu_user_s": cpu[0],
        "cpu_sys_s": cpu[1],
    }
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    if not ok:
        sys.exit("vllm_client.py: every request failed: " + outs[0].error)


if __name__ == "__main__":
    main()
