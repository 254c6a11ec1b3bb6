"""slow-reader.py PORT PID TOKENS - a client that reads nothing until the
proxy has finished with the upstream, then SIGTERMs the proxy and reads the
whole stream. A proxy that exits before its last bytes are written cuts
the stream: prints the events read and whether [DONE] came."""
import os, signal, socket, sys, time
port, pid, tokens = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def metric(name):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    text = b"".join(iter(lambda: s.recv(65536), b"")).decode()
    s.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None

body = b'{"model":"atr-sim","prompt":"x","stream":true,"max_tokens":%d}' % tokens
c = socket.socket()
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # a small window: bytes wait in the proxy
c.connect(("127.0.0.1", port))
c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
deadline = time.monotonic() + 30
while metric("atr_proxy_requests_total") != 1 or metric("atr_proxy_in_flight") != 0:
    if time.monotonic() > deadline:
        sys.exit("the upstream never finished")
    time.sleep(0.02)
os.kill(pid, signal.SIGTERM)
data = b"".join(iter(lambda: c.recv(1 << 20), b""))
print(data.count(b"\ndata: {") + data.startswith(b"data: {"), b"data: [DONE]" in data)
