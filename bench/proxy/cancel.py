#!/usr/bin/env python3
"""bench/proxy/cancel.py ATR [N] - how soon an upstream sees a client's disconnect
through `atr proxy` (issue 13: within 10 ms). A Python upstream streams an
SSE event every 5 ms and stamps (CLOCK_MONOTONIC) the moment its
connection reaches end of file; a client reads the first event and closes,
stamping that moment. Latency = upstream's stamp - client's stamp, N runs,
median / p90 / max. The same clock on one machine: no skew."""
import asyncio, os, re, socket, statistics, subprocess, sys, time

ATR = sys.argv[1] if len(sys.argv) > 1 else "build/atr"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 30
closed = asyncio.Queue()

async def upstream(reader, writer):
    await reader.readuntil(b"\r\n\r\n")            # headers; the body follows
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    ev = b'data: {"choices":[{"index":0,"text":"x"}]}\n\n'
    chunk = b"%x\r\n%s\r\n" % (len(ev), ev)

    async def feed():
        while True:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0.005)
    task = asyncio.create_task(feed())
    while True:                                     # the body, then EOF on close
        data = await reader.read(65536)
        if not data:
            break
    await closed.put(time.monotonic())
    task.cancel()
    writer.close()

def client(port):
    s = socket.create_connection(("127.0.0.1", port))
    body = b'{"model":"m","prompt":"x","max_tokens":100000,"stream":true}'
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    buf = b""
    while b"data:" not in buf:
        buf += s.recv(4096)
    t = time.monotonic()
    s.close()
    return t

async def main():
    srv = await asyncio.start_server(upstream, "127.0.0.1", 0)
    up_port = srv.sockets[0].getsockname()[1]
    px = subprocess.Popen([ATR, "proxy", "--upstream", f"http://127.0.0.1:{up_port}", "--port", "0"],
                          stdout=subprocess.PIPE, text=True)
    line = await asyncio.get_running_loop().run_in_executor(None, px.stdout.readline)
    port = int(re.search(r":(\d+)$", line.strip()).group(1))
    lat = []
    for _ in range(N):
        t_client = await asyncio.get_running_loop().run_in_executor(None, client, port)
        t_up = await asyncio.wait_for(closed.get(), 5)
        lat.append((t_up - t_client) * 1e3)
    px.terminate()
    px.wait()
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
    print(f"upstream sees the client's close after (ms, {N} runs): "
          f"median {statistics.median(lat):.3f}, p90 {q(0.9):.3f}, max {lat[-1]:.3f}")

asyncio.run(main())
