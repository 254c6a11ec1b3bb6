# fdneed.py PORT PID N K - for a proxy started under a low `ulimit -n`: K
# client connections are opened, then N idle ones flood it; after 2 s of
# flood each of the K asks a completion at once, so the proxy needs K
# upstream connections (new descriptors) while flooded. Prints
# "cpu=PCT statuses=S,S,...": the proxy's CPU over the flood (utime+stime
# from /proc/PID/stat) and each answer's HTTP status ("none": no answer
# within 10 s).
import os, resource, socket, sys, time
port, pid, n, k = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
body = b'{"model":"atr-sim","prompt":"hi","max_tokens":20}'
req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

def cpu():
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

first = [socket.create_connection(("127.0.0.1", port)) for _ in range(k)]
flood = []
for _ in range(n):                 # non-blocking: past the listen queue a connect waits
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    flood.append(s)
c0, t0 = cpu(), time.monotonic()
time.sleep(2)                      # the measured window, not a readiness wait
pct = 100 * (cpu() - c0) / (time.monotonic() - t0)
for s in first:
    s.sendall(req)
statuses = []
for s in first:
    s.settimeout(10)
    try:
        statuses.append(s.recv(65536).split(b" ")[1].decode())
    except (OSError, IndexError):
        statuses.append("none")
print("cpu=%d statuses=%s" % (pct, ",".join(statuses)))
