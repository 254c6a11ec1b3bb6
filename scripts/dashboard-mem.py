#!/usr/bin/env python3
"""dashboard-mem.py - the memory of `atr dashboard`, from /proc/PID/status
(VmRSS, VmHWM), under the two loads issue 35 names:

  records ATR N     a per-request file growing to N records in 10 appends
                    while the dashboard follows it (--poll-ms 100); prints
                    its RSS before, its peak once all N are read (waits for
                    /runs.json to say so), the bytes a record costs, and the
                    peak after one GET / (the report of the file: the
                    report's own cost, not the run list's)
  clients ATR N     N event-stream clients (GET /events, each read as it
                    comes) while a file grows in 20 appends, each an event
                    to all N; prints the peak growth and per client.
                    DASH_RUNS=R puts R runs in the folder (R rows an event);
                    DASH_CDF=1 has every stream follow the growing run's
                    CDFs (GET /events?run=..., a "cdf" event per update)

Prints one line of key value pairs (KiB). Needs ulimit -n above N + 100."""
import json, os, re, socket, subprocess, sys, tempfile, time, urllib.parse, urllib.request

TEMPLATE = {"id": 0, "trace_id": "t", "turn": 0, "success": True, "error": None,
            "scheduled_s": 0.0, "send_s": 0.0, "start_s": 0.0, "sent_s": 0.0, "end_s": 0.1,
            "schedule_lag_ms": 0.01, "send_lag_ms": 0.02, "queue_ms": 0.0, "ttft_ms": 30.0,
            "tpot_ms": 2.0, "e2el_ms": 150.0, "itl_ms": [2.0] * 63, "prompt_tokens": 200,
            "output_tokens": 64, "cached_tokens": 0}


def kib(pid, field):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def start(atr, folder):
    p = subprocess.Popen([atr, "dashboard", folder, "--port", "0", "--poll-ms", "100"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"http://127.0.0.1:(\d+)/", p.stdout.readline())
    if not m:
        sys.exit("dashboard printed no URL")
    return p, int(m.group(1))


def runs(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/runs.json" % port) as r:
        return json.load(r)


def wait_done(port, n, deadline=120):
    end = time.time() + deadline
    while time.time() < end:
        rs = [r for r in runs(port)["runs"] if r["run"].endswith("/r.ndjson")]
        if rs and rs[0]["done"] == n:
            return
        time.sleep(0.05)
    sys.exit("the dashboard never read %d records" % n)


def append(path, first, n):
    with open(path, "a") as f:
        for i in range(first, first + n):
            o = dict(TEMPLATE, id=i, trace_id="t%d" % i, ttft_ms=20 + i % 97 * 0.37,
                     e2el_ms=100 + i % 1009 * 0.61)
            f.write(json.dumps(o) + "\n")


def records(atr, n):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "r.ndjson")
    p, port = start(atr, d)
    time.sleep(0.3)
    before = kib(p.pid, "VmRSS")
    step = n // 10
    for k in range(10):
        append(path, k * step, step)
        wait_done(port, (k + 1) * step)
    peak = kib(p.pid, "VmHWM")
    with urllib.request.urlopen("http://127.0.0.1:%d/" % port) as r:
        page = len(r.read())
    after_page = kib(p.pid, "VmHWM")
    p.terminate(); p.wait()
    print("records %d file_kib %d rss_before %d peak_followed %d bytes_per_record %.1f "
          "peak_after_page %d page_kib %d" % (n, os.path.getsize(path) // 1024, before, peak,
                                              (peak - before) * 1024.0 / n, after_page,
                                              page // 1024))


def clients(atr, n):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "r.ndjson")
    append(path, 0, 10)
    for k in range(int(os.environ.get("DASH_RUNS", "1")) - 1):   # more rows in each event
        append(os.path.join(d, "other-%04d.ndjson" % k), 0, 1)
    p, port = start(atr, d)
    time.sleep(0.3)
    before = kib(p.pid, "VmRSS")
    socks = []
    cdf = os.environ.get("DASH_CDF") == "1"
    rel = [r["run"] for r in runs(port)["runs"] if r["run"].endswith("/r.ndjson")][0]
    target = "/events?run=" + urllib.parse.quote(rel, safe="") if cdf else "/events"
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % target).encode())
        socks.append(s)
    end = time.time() + 30
    while runs(port)["event_streams"] < n and time.time() < end:
        time.sleep(0.05)
    opened = runs(port)["event_streams"]
    got = [0] * n
    cdfs = [0] * n
    for k in range(20):
        append(path, 10 + k * 10, 10)
        wait_done(port, 20 + k * 10)
        for i, s in enumerate(socks):
            s.setblocking(False)
            try:
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    got[i] += b.count(b"event: runs")
                    cdfs[i] += b.count(b"event: cdf")
            except BlockingIOError:
                pass
    time.sleep(0.3)
    peak = kib(p.pid, "VmHWM")
    for s in socks:
        s.close()
    p.terminate(); p.wait()
    print("clients %d runs %s cdf %d opened %d min_events_each %d min_cdf_events_each %d "
          "rss_before %d peak %d per_client_kib %.1f"
          % (n, os.environ.get("DASH_RUNS", "1"), cdf, opened, min(got), min(cdfs), before,
             peak, (peak - before) / float(n)))


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("records", "clients"):
        sys.exit(__doc__)
    (records if sys.argv[1] == "records" else clients)(sys.argv[2], int(sys.argv[3]))
