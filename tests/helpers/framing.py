#!/usr/bin/env python3
"""framing.py PORT POST_PATH GET_PATH - sends requests whose framing is
ambiguous (RFC 9112 §5.1, §6.1, §6.3), each on its own connection, to a
server on 127.0.0.1, and prints "CASE STATUS closed|open" per case: closed
when the server ended the connection after its answer ("-" for the two
well-framed "ok-" cases, whose connection is not waited on). Each body is a
valid completion under first-Content-Length framing, so a server that lets
the first value win answers 200. The two "ok-" cases are well framed."""
import socket, sys

port, post, get = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3].encode()
body = b'{"model":"atr-sim","prompt":"x","max_tokens":1}'
n = len(body)
chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (n, body)
POST, GET = b"POST " + post, b"GET " + get
cases = [
    ("cl-two-values", POST, b"Content-Length: %d\r\nContent-Length: %d\r\n" % (n, n + 5), body),
    ("cl-twice-equal", POST, b"Content-Length: %d\r\nContent-Length: %d\r\n" % (n, n), body),
    ("cl-list", POST, b"Content-Length: %d, %d\r\n" % (n, n), body),
    ("cl-plus", POST, b"Content-Length: +%d\r\n" % n, body),
    ("cl-minus", POST, b"Content-Length: -1\r\n", body),
    ("cl-hex", POST, b"Content-Length: 0x10\r\n", body),
    ("cl-inner-space", POST, b"Content-Length: 1 2\r\n", body),
    ("te-space-colon", POST, b"Transfer-Encoding : chunked\r\nContent-Length: %d\r\n" % n, body),
    ("cl-space-colon", POST, b"Content-Length : %d\r\n" % n, body),
    ("te-and-cl", POST, b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n" % n, chunked),
    ("cl-and-te", POST, b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % len(chunked), chunked),
    ("te-gzip", GET, b"Transfer-Encoding: gzip\r\n", b""),
    ("te-twice", POST, b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", chunked),
    ("ok-content-length", POST, b"Content-Length: %d\r\n" % n, body),
    ("ok-chunked", POST, b"Transfer-Encoding: chunked\r\n", chunked),
]
for name, line, headers, payload in cases:
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    s.sendall(line + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + headers + b"\r\n" + payload)
    got = b""
    try:
        while b"\r\n\r\n" not in got:
            d = s.recv(4096)
            if not d:
                break
            got += d
        head, _, rest = got.partition(b"\r\n\r\n")
        cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
        want = int(cl[0].split(b":")[1]) if cl else 0
        while len(rest) < want:
            d = s.recv(4096)
            if not d:
                break
            rest += d
        s.settimeout(5)        # only a rejected request waits: a kept one is not read
        end = "-" if name.startswith("ok-") else "closed" if s.recv(1) == b"" else "open"
    except OSError:
        end = "open"
    status = got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/") else "none"
    print(name, status, end, flush=True)
    s.close()
