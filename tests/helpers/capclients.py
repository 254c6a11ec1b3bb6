# capclients.py PORT CAP EXTRA PATH - a server started with
# --max-connections CAP: CAP keep-alive clients connect and are answered
# (GET PATH), then EXTRA more connect and send the same request while the
# first ones hold their connections. Prints "held=0|1 early=N kept=0|1
# late=N": whether the first CAP were answered, how many extra ones were
# answered within 1 s (0 at the cap: they wait to be accepted), whether
# the first CAP are answered again after that, and how many extra ones are
# answered (10 s deadline each) once the first CAP close, each closing
# once answered to free its slot for the next.
import select, socket, sys, time
port, cap, extra, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
req = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode()

def answered(s, timeout):
    s.settimeout(timeout)
    try:
        return s.recv(65536).startswith(b"HTTP/1.1 200")
    except OSError:
        return False

first = []
for _ in range(cap):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(req)
    first.append(s if answered(s, 10) else None)
held = all(first)
more = []
for _ in range(extra):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(req)
    more.append(s)
# The window in which an extra client must not be answered yet: a bound
# on waiting, not a timing figure (no answer comes however slow the host).
early, t_end = set(), time.monotonic() + 1
while time.monotonic() < t_end:
    ready, _, _ = select.select([s for s in more if s not in early], [], [],
                                max(0, t_end - time.monotonic()))
    early.update(ready)
kept = held
for s in first:
    kept = kept and s.sendall(req) is None and answered(s, 10)
for s in first:
    if s:
        s.close()
late = 0
for s in more:
    late += s in early or answered(s, 10)
    s.close()
print("held=%d early=%d kept=%d late=%d" % (held, len(early), kept, late))
