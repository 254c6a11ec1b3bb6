#!/usr/bin/env python3
"""pyrunner.py SPEC -o OUT.jsonl [--interval S] [--grace S] - the reference
for `atr bench run`: the server-lifecycle loop a user would otherwise write
in Python, standard library only, as fair as such a loop commonly gets.

Reads the fields of an atr-bench-spec/1 spec (docs/bench.md) that it needs:
format, workdir, port, cleanup, variants (server, prepare, ready_url,
per_agent, startup_timeout_s, benchmark_timeout_s), items (human_commit,
human_commit_full, parent_commit, model, agents, variants) and a workload of
mode "command" (model_overrides are not supported: no override is applied).
Placeholders expand as docs/bench.md says ({{ }} literal braces; a value
made of A-Za-z0-9_./:@%+=,- inserted as is, any other single-quoted).

Per item x variant (x agent), one after another:
  prepare   `sh -c PREPARE`, waited for (a failure is patch_failed);
  start     subprocess.Popen(["sh", "-c", SERVER], start_new_session=True):
            its own session and process group;
  ready     GET READY_URL with http.client (a fresh connection each time,
            1 s timeout) until it answers 200, sleeping INTERVAL (default
            0.01 s) after each failed try; gives up at startup_timeout_s
            (startup_timeout) or when the server exits (server_crashed);
  workload  `sh -c COMMAND` with benchmark_timeout_s; its exit status
            decides success (the output is not parsed: this benchmark
            measures the runner, and its workload is `true`);
  stop      os.killpg(pgid, SIGTERM), Popen.wait(timeout=GRACE) (default
            10 s), SIGKILL to the group if the leader is still there;
  port      connect() to the port every INTERVAL until it is refused
            (SIGKILL to the group if the port is still open GRACE after
            the SIGTERM: a member other than the leader holds it). The
            leader is `sh` (dash forks the last command of `sh -c` rather
            than exec it), so the port, not the leader's exit, tells that
            the server is gone;
  cleanup   `sh -c CLEANUP` when the spec has one.

Writes one JSON line per run to OUT.jsonl: commit, variant, agent, outcome,
and "timing" with the members of atr's result files: prepare_s, startup_s
(spawn -> ready seen), ready_unix_s (time.time() when the 200 arrived),
benchmark_s, teardown_s (SIGTERM sent -> port seen free),
port_free_unix_s, term_unix_s; plus wall_s (the whole run, prepare to
cleanup). Durations are time.monotonic(), epochs time.time() (both
rounded to microseconds).

Why 10 ms: scripts found in the wild sleep 0.5 s to 30 s between health
polls (`until curl -sf URL; do sleep 1; done`, `time.sleep(0.5)`), which
adds half the interval to every start-up on average. 10 ms is the
shortest fixed interval commonly written: a refused try costs ~25 us of
CPU (the poller uses ~0.25 % of a core) and a successful GET ~0.2 ms, so
detection lands uniformly in 0-10 ms after the port opens (+ one request).
Popen.wait(timeout) is the standard call; on Python 3.11 it polls waitpid
with sleeps doubling from 1 ms up to 50 ms, which is what such a user
gets."""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse

SAFE = re.compile(r"[A-Za-z0-9_./:@%+=,-]+\Z")
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([a-z]+)\}|[{}]")


def expand(tmpl, values, quote):
    def one(m):
        s = m.group(0)
        if s == "{{":
            return "{"
        if s == "}}":
            return "}"
        name = m.group(1)
        if name is None or values.get(name) is None:
            raise SystemExit("pyrunner: bad or unavailable placeholder %r in %r" % (s, tmpl))
        v = str(values[name])
        if quote and not SAFE.match(v):
            v = "'" + v.replace("'", "'\\''") + "'"
        return v

    return PLACEHOLDER.sub(one, tmpl)


def now_unix():
    return round(time.time(), 6)


def sh(cmd, timeout=None):
    """Runs `sh -c cmd` to the end; returns its exit status (None on timeout)."""
    p = subprocess.Popen(["sh", "-c", cmd], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p.pid, signal.SIGKILL)
        p.wait()
        return None


def kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def health(host, port, path):
    """The status of one GET, or None when the server does not answer."""
    conn = http.client.HTTPConnection(host, port, timeout=1.0)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def port_open(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect((host, port))
        return True
    except ConnectionRefusedError:
        return False
    except OSError:
        return True                 # a timeout or reset: not known to be free
    finally:
        s.close()


class Run:
    def __init__(self, args, spec, port):
        self.args, self.spec, self.port = args, spec, port
        self.server = None

    def stop(self, t):
        """SIGTERM to the group, the leader waited for with a grace period,
        then until the port refuses connections; SIGKILL to the group when
        the leader or the port outlasts the grace period."""
        host, port, grace = self.host, self.port, self.args.grace
        t["term_unix_s"] = now_unix()
        t0 = time.monotonic()
        p, self.server = self.server, None
        kill_group(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            kill_group(p.pid, signal.SIGKILL)
            p.wait()
        killed = False
        while port_open(host, port):
            if not killed and time.monotonic() - t0 >= grace:
                kill_group(p.pid, signal.SIGKILL)   # a group member kept the port
                killed = True
            time.sleep(self.args.interval)
        t["port_free_unix_s"] = now_unix()
        t["teardown_s"] = round(time.monotonic() - t0, 6)

    def one(self, item, variant, agent, patch):
        spec, a = self.spec, self.args
        vals = {"model": item["model"], "port": self.port,
                "commit": item.get("human_commit_full") or item["human_commit"],
                "parent": item["parent_commit"], "patch": patch,
                "workdir": spec["workdir"]}
        t = {}
        rec = {"commit": item["human_commit"][:8], "variant": variant["name"], "agent": agent,
               "outcome": "success", "timing": t}
        w0 = time.monotonic()
        t0 = w0
        if variant.get("prepare"):
            rc = sh(expand(variant["prepare"], vals, True))
            if rc != 0:
                rec["outcome"] = "patch_failed"
        t["prepare_s"] = round(time.monotonic() - t0, 6)
        if rec["outcome"] == "success":
            url = urllib.parse.urlsplit(expand(variant["ready_url"], vals, False))
            self.host = url.hostname
            hport = url.port or 80
            path = (url.path or "/") + ("?" + url.query if url.query else "")
            t0 = time.monotonic()
            self.server = subprocess.Popen(["sh", "-c", expand(variant["server"], vals, True)],
                                           start_new_session=True,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = t0 + variant.get("startup_timeout_s", 300)
            while True:
                if health(self.host, hport, path) == 200:
                    t["ready_unix_s"] = now_unix()
                    t["startup_s"] = round(time.monotonic() - t0, 6)
                    break
                if self.server.poll() is not None:
                    rec["outcome"] = "server_crashed"
                    break
                if time.monotonic() >= deadline:
                    rec["outcome"] = "startup_timeout"
                    break
                time.sleep(a.interval)
            if rec["outcome"] == "success":
                t0 = time.monotonic()
                rc = sh(expand(spec["workload"]["command"], vals, True),
                        variant.get("benchmark_timeout_s", 900))
                t["benchmark_s"] = round(time.monotonic() - t0, 6)
                if rc is None:
                    rec["outcome"] = "benchmark_timeout"
                elif rc != 0:
                    rec["outcome"] = "server_crashed" if self.server.poll() is not None \
                        else "no_metrics"
            self.stop(t)
        if spec.get("cleanup"):
            sh(expand(spec["cleanup"], vals, True))
        rec["wall_s"] = round(time.monotonic() - w0, 6)
        return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("-o", "--out", required=True, help="JSON lines, one per run")
    ap.add_argument("--interval", type=float, default=0.01,
                    help="seconds between readiness and port-free polls (0.01)")
    ap.add_argument("--grace", type=float, default=10.0,
                    help="seconds from SIGTERM to SIGKILL (10)")
    a = ap.parse_args()
    spec = json.load(open(a.spec))
    if spec.get("format") != "atr-bench-spec/1":
        raise SystemExit("pyrunner: %s: not an atr-bench-spec/1 spec" % a.spec)
    wl = spec.get("workload") or {}
    if wl.get("mode") != "command":
        raise SystemExit("pyrunner: only workload mode \"command\" is supported")
    base = os.path.dirname(a.spec)
    wd = spec.get("workdir", "atr-bench")
    spec["workdir"] = wd if os.path.isabs(wd) or not base else os.path.join(base, wd)
    port = spec.get("port", 8000)
    variants = [dict(v, name=k) for k, v in spec["variants"].items()]
    run = Run(a, spec, port)
    # A SIGTERM (or Ctrl-C) still stops the server of the run in progress.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        with open(a.out, "w") as out:
            for item in spec["items"]:
                names = item.get("variants")
                for v in variants:
                    if names is not None and v["name"] not in names:
                        continue
                    runs = [(None, None)]
                    if v.get("per_agent"):
                        runs = [(n, p if os.path.isabs(p) or not base else os.path.join(base, p))
                                for n, p in (item.get("agents") or {}).items() if p]
                    for agent, patch in runs:
                        out.write(json.dumps(run.one(item, v, agent, patch)) + "\n")
                        out.flush()
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        if run.server is not None:
            kill_group(run.server.pid, signal.SIGKILL)
            run.server.wait()


if __name__ == "__main__":
    main()
