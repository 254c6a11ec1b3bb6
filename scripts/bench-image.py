#!/usr/bin/env python3
"""bench-image.py ATR IMAGE [ROUNDS] - per-step overhead of `replay tools
--image` against the host path (BENCHMARKS.md, "Steps inside a container
image"): a trace of 200 `true` steps replayed ROUNDS times (default 5) in
each variant, interleaved; the median step latency of each, the difference
with a 95 % bootstrap interval, the fixed cost per trace (wall time minus
the steps), and, for scale, `podman exec` of a started container per step.
Needs root and podman; IMAGE a local image with /bin/sh."""
import json, os, random, statistics, subprocess, sys, tempfile, time

atr, image = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
tmp = tempfile.mkdtemp(prefix="atr-bench-image-")
trace = os.path.join(tmp, "steps.ndjson")
with open(trace, "w") as f:
    steps = [{"i": i, "kind": "tool", "tool": "bash", "command": "true"} for i in range(200)]
    f.write(json.dumps({"format": "atr-trace/1", "trace_id": "ovh", "source": "bench",
                        "steps": steps}) + "\n")

def run(variant, n):
    out = os.path.join(tmp, f"{variant}-{n}")
    extra = ["--image", image] if variant == "image" else []
    t0 = time.monotonic()
    subprocess.run([atr, "replay", "tools", "-q", *extra, trace, "-o", out], check=True)
    wall = (time.monotonic() - t0) * 1000
    lat = [json.loads(l)["latency_ms"] for l in open(os.path.join(out, "metrics.jsonl"))]
    return lat, wall - sum(lat)

lat = {"host": [], "image": []}
fixed = {"host": [], "image": []}
for n in range(rounds):
    for v in ("host", "image") if n % 2 == 0 else ("image", "host"):
        l, f = run(v, n)
        lat[v] += l
        fixed[v].append(f)

def boot(a, b, k=2000):
    rnd = random.Random(1)
    d = sorted(statistics.median(rnd.choices(b, k=len(b))) -
               statistics.median(rnd.choices(a, k=len(a))) for _ in range(k))
    return d[int(0.025 * k)], d[int(0.975 * k)]

mh, mi = statistics.median(lat["host"]), statistics.median(lat["image"])
lo, hi = boot(lat["host"], lat["image"])
print(f"steps per variant: {len(lat['host'])} ({rounds} rounds of 200, interleaved)")
print(f"median step latency: host {mh:.2f} ms, --image {mi:.2f} ms, "
      f"difference {mi - mh:+.2f} ms (95% interval {lo:+.2f} .. {hi:+.2f})")
print(f"fixed cost per run (wall - steps, median): host {statistics.median(fixed['host']):.0f} ms, "
      f"--image {statistics.median(fixed['image']):.0f} ms")

# For scale: the engine's exec into a started container, per step.
name = f"atr-bench-exec-{os.getpid()}"
up = subprocess.run(["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "run", "-d",
                     "--name", name, "--network", "none", "--ulimit", "nofile=1024:1024",
                     "--ulimit", "nproc=1024:1024", image, "sleep", "600"],
                    capture_output=True, text=True)
if up.returncode == 0:
    ex = []
    for _ in range(30):
        t0 = time.monotonic()
        subprocess.run(["podman", "exec", name, "true"], check=True)
        ex.append((time.monotonic() - t0) * 1000)
    print(f"podman exec per step (started container, 30 runs): median {statistics.median(ex):.1f} ms")
else:
    print("podman exec: the container did not start: " + up.stderr.strip().splitlines()[-1])
subprocess.run(["podman", "rm", "-f", "-t", "0", name], capture_output=True)
subprocess.run(["rm", "-rf", tmp])
