#!/usr/bin/env python3
"""repeat.py IN.zip N OUT.zip SITE.json - the bench's workload from a
Playwright trace zip: its calls repeated N times (one newPage) into
OUT.zip, and its recorded site (URL -> status, headers, body) as JSON for
the Playwright side (bench/browser/pw.mjs), which serves the same bytes
with page.route."""
import base64, json, sys, zipfile

src, n, out, site_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with zipfile.ZipFile(src) as z:
    lines = z.read("0-trace.trace").decode().splitlines()
    net = z.read("0-trace.network").decode()
    blobs = {name: z.read(name) for name in z.namelist() if name.startswith("resources/")}
head = [l for l in lines if json.loads(l)["type"] == "context-options"]
calls = []
events = [json.loads(l) for l in lines]
befores = [e for e in events if e["type"] == "before"]
for r in range(n):
    for b in befores:
        if r and b["method"] == "newPage":
            continue
        calls.append(b)
t, body = 200.0, list(head)
for i, b in enumerate(calls):
    b = dict(b, callId="call@%d" % (i + 1), startTime=t)
    body.append(json.dumps(b))
    t += 50
    body.append(json.dumps({"type": "after", "callId": b["callId"], "endTime": t}))
    t += 10
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("0-trace.trace", "\n".join(body) + "\n")
    z.writestr("0-trace.network", net)
    for name, data in blobs.items():
        z.writestr(name, data)
site = {}
for l in net.splitlines():
    s = json.loads(l)["snapshot"]
    resp = s["response"]
    data = blobs.get("resources/" + resp["content"]["_sha1"], b"")
    site[s["request"]["url"]] = {
        "status": resp["status"],
        "headers": {h["name"]: h["value"] for h in resp["headers"] if h["name"].lower() != "content-length"},
        "body": base64.b64encode(data).decode()}
calls_out = [{"api": b["apiName"], "method": b["method"], "params": b["params"]} for b in calls]
json.dump({"site": site, "calls": calls_out}, open(site_out, "w"))
