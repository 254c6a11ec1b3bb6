# trickle.py PORT PATH LIMIT - a slowloris client: sends "GET PATH" and
# then one header line a second, never ending the header, until the server
# closes the connection or LIMIT seconds pass. Prints "closed SECONDS"
# (from the connect) or "open LIMIT".
import socket, sys, time
port, path, limit = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
t0 = time.monotonic()
s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n" % path.encode())
s.settimeout(1)
n = 0
while time.monotonic() - t0 < limit:
    try:
        if s.recv(4096) == b"":
            break
    except socket.timeout:
        pass
    except OSError:
        break
    try:
        s.sendall(b"X-Trickle-%d: 1\r\n" % n)
    except OSError:
        break
    n += 1
t = time.monotonic() - t0
print("closed %.1f" % t if t < limit else "open %g" % limit)
