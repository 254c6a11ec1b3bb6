# fdflood.py PORT PID N HOLD PATH - floods a server started under a low
# `ulimit -n` with N idle connections for HOLD seconds, and prints
# "cpu=PCT kept=0|1 after=0|1": the server's CPU (utime+stime from
# /proc/PID/stat) as a percentage of the flood's wall time, whether a
# keep-alive connection opened before the flood is still answered during
# it, and whether a new connection is answered (10 s deadline) once the
# flood's connections are closed. Requests are GET PATH.
import os, resource, socket, sys, time
port, pid, n, hold, path = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
req = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode()

def ask(s):
    s.sendall(req)
    s.settimeout(5)
    try:
        return s.recv(65536).startswith(b"HTTP/1.1 200")
    except OSError:
        return False

def cpu():
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

first = socket.create_connection(("127.0.0.1", port))
ok0 = ask(first)
flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
c0, t0 = cpu(), time.monotonic()
time.sleep(hold)                   # the measured window, not a readiness wait
kept = ok0 and ask(first)
pct = 100 * (cpu() - c0) / (time.monotonic() - t0)
for s in flood:
    s.close()
first.close()
after, deadline = False, time.monotonic() + 10
while not after and time.monotonic() < deadline:
    try:
        after = ask(socket.create_connection(("127.0.0.1", port)))
    except OSError:
        time.sleep(0.05)
print("cpu=%d kept=%d after=%d" % (pct, kept, after))
