#!/usr/bin/env python3
"""server-mem.py - the memory of `atr proxy` and `atr sim serve` under two
hostile loads, measured from /proc/PID/status (VmRSS, VmHWM):

  bodies ATR N SIZE        N clients send SIZE-byte chat bodies at once
                           through the proxy (sim serve behind it); prints
                           the proxy's peak RSS growth over N * SIZE
  slow proxy|serve ATR N TOKENS [HOLD_S]
                           N streaming clients (TOKENS tokens each from a
                           sim serve with --itl 0, so the answer is due at
                           once: one large chunk) that read nothing for
                           HOLD_S seconds (default 2), then leave; prints
                           the server's peak growth and what it still
                           holds after they left

BODY_TOKENS=1 sends completions prompts of token ids instead; BODY_STREAM=1 makes the bodies streaming requests (the proxy then
rewrites them: stream_options.include_usage). Extra server flags: PROXY_ARGS / SERVE_ARGS in the environment; SERVE_ATR
runs the upstream sim serve from another binary; UPSTREAM=bigchunk puts a
Python upstream behind the proxy instead that sends each whole stream as
one HTTP chunk (the hostile upstream for --max-buffered).
Prints one line of key value pairs (KiB)."""
import os, re, socket, socketserver, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverproc import kib, start  # noqa: E402


def stop(p):
    if isinstance(p, socketserver.BaseServer):
        p.shutdown()
        p.server_close()
    else:
        p.terminate()
        p.wait()


class BigChunk(socketserver.StreamRequestHandler):
    """An upstream that answers every request with its whole stream as ONE
    HTTP chunk (about 150 bytes an event, max_tokens events)."""
    def handle(self):
        head = b""
        while b"\r\n\r\n" not in head:
            d = self.request.recv(65536)
            if not d:
                return
            head += d
        m = re.search(rb"max_tokens\D*(\d+)", head)
        n = int(m.group(1)) if m else 16
        ev = (b'data: {"id":"c","object":"text_completion","model":"atr-sim",'
              b'"choices":[{"index":0,"text":" word","finish_reason":null}]}\n\n')
        body = ev * n + b"data: [DONE]\n\n"
        try:
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                 b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                 b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        except OSError:
            pass


def bigchunk():
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), BigChunk)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


def serve(atr):
    if os.environ.get("UPSTREAM") == "bigchunk":
        return bigchunk()
    atr = os.environ.get("SERVE_ATR", atr)
    return start([atr, "sim", "serve", "--port", "0", "--ttft", "0", "--itl", "0",
                  "--max-body", "1G", "--max-model-len", "2147483647"]
                 + os.environ.get("SERVE_ARGS", "").split())


def proxy(atr, up_port):
    return start([atr, "proxy", "--port", "0", "--upstream", "http://127.0.0.1:%d" % up_port]
                 + os.environ.get("PROXY_ARGS", "").split())


def post(port, path, body, rcvbuf=0):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    head = (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (path.encode(), len(body)))
    return s, head + body


def token_body(size, i):
    """A completions prompt of token ids (vLLM takes them): many small values."""
    ids = ",".join(str(1000 + (k * 7919 + i) % 30000) for k in range((size - 80) // 6))
    return ('{"model":"atr-sim","max_tokens":1,"prompt":[%s]}' % ids).encode()


def chat_body(size, i):
    """A real-shaped prompt: 4 KB messages, SIZE bytes in all."""
    if os.environ.get("BODY_TOKENS"):
        return token_body(size, i)
    words = ("client %d edits the file and runs the tests again; " % i) * 80
    msg = words[:4000]
    n = max(1, (size - 100) // (len(msg) + 40))
    msgs = ",".join('{"role":"%s","content":"%s"}' % ("user" if k % 2 else "assistant", msg)
                    for k in range(n))
    stream = ',"stream":true' if os.environ.get("BODY_STREAM") else ""
    body = '{"model":"atr-sim","max_tokens":1%s,"messages":[%s]}' % (stream, msgs)
    return body.encode()


def bodies(atr, n, size):
    up, up_port = serve(atr)
    px, port = proxy(atr, up_port)
    try:
        before = kib(px.pid, "VmRSS")
        path = "/v1/completions" if os.environ.get("BODY_TOKENS") else "/v1/chat/completions"
        reqs = [post(port, path, chat_body(size, i)) for i in range(n)]
        total = sum(len(r[1]) for r in reqs)
        # every body but its last byte is in the proxy before any is complete
        threads = [threading.Thread(target=s.sendall, args=(d[:-1],)) for s, d in reqs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = []
        for s, d in reqs:
            s.sendall(d[-1:])
        for s, d in reqs:
            codes.append(s.recv(64).split(b" ")[1].decode())
            s.close()
        peak = kib(px.pid, "VmHWM")
        print("clients %d body_bytes %d rss_before_kib %d peak_kib %d ratio %.2f status %s" % (
            n, total // n, before, peak, (peak - before) * 1024.0 / total,
            ",".join(sorted(set(codes)))))
    finally:
        for p in (px, up):
            stop(p)


def slow(which, atr, n, tokens, hold):
    up, up_port = serve(atr)
    px, port = proxy(atr, up_port) if which == "proxy" else (up, up_port)
    try:
        before = kib(px.pid, "VmRSS")
        body = (b'{"model":"atr-sim","prompt":"x","stream":true,"ignore_eos":true,'
                b'"max_tokens":%d}' % tokens)
        socks = []
        for _ in range(n):
            s, data = post(port, "/v1/completions", body, rcvbuf=4096)
            s.sendall(data)
            s.recv(1024)                # the stream started; now read nothing
            socks.append(s)
        end = time.monotonic() + hold
        during = 0
        while time.monotonic() < end:   # the loads run against full sockets
            during = max(during, kib(px.pid, "VmRSS"))
            time.sleep(0.05)
        peak = kib(px.pid, "VmHWM")
        for s in socks:
            s.close()
        after, end = during, time.monotonic() + 5
        while time.monotonic() < end:   # a deadline for the server to let go
            after = min(after, kib(px.pid, "VmRSS"))
            if after - before < 8192:
                break
            time.sleep(0.05)
        print("server %s clients %d tokens %d rss_before_kib %d peak_kib %d after_kib %d "
              "growth_kib %d kept_kib %d" % (which, n, tokens, before, peak, after,
                                             peak - before, after - before))
    finally:
        for p in {px, up}:
            stop(p)


def main():
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] == "bodies":
        bodies(a[1], int(a[2]), int(a[3]))
    elif len(a) >= 5 and a[0] == "slow" and a[1] in ("proxy", "serve"):
        slow(a[1], a[2], int(a[3]), int(a[4]), float(a[5]) if len(a) > 5 else 2.0)
    else:
        sys.exit(__doc__)


main()
