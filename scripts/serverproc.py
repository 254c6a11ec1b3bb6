"""serverproc.py - what the memory scripts share: start an atr server and
read the port it prints, and read a process's memory from /proc."""
import re, subprocess, sys


def start(cmd):
    """Runs cmd (an atr server with --port 0); returns (process, port)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()          # "atr ...: listening on http://127.0.0.1:PORT"
    m = re.search(r":(\d+)$", line.strip())
    if not m:
        sys.exit("no port from %r: %r" % (cmd, line))
    return p, int(m.group(1))


def kib(pid, field):
    """A /proc/PID/status figure in KiB (VmRSS, VmHWM); 0 when absent."""
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0
