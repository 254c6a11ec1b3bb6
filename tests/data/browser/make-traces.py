#!/usr/bin/env python3
"""make-traces.py OUTDIR - Playwright trace zips (format v6, as Playwright
1.44 writes them: 0-trace.trace, 0-trace.network, resources/<sha1>) for
tests/cli/test-browser.sh. Written here rather than recorded so each one
exercises one thing: shop.zip a form flow over a recorded site (fill,
selectOption, press, waitForSelector, role and text selectors, a link to a
second page, screenshot, wheel); nomatch.zip a selector that matches
nothing between two good steps; oom.zip a page that allocates memory until
the cgroup's memory.max kills the browser, then a step that needs a fresh
one; missing.zip network entries whose resources/ blobs are absent; cut.zip
a *.trace member cut mid-line; shop-v4/5/7/8.zip the shop flow in every
other trace format version the reader accepts (v8 with "title" for
apiName); split.zip the flow split over two *.trace members; crash.zip a
step that waits until the test kills the browser, then one that needs a
fresh browser; hang.zip a step that waits a minute (for Ctrl-C and
SIGKILL)."""
import hashlib, json, os, sys, zipfile

OUT = sys.argv[1]

SHOP = {
    "https://shop.test/": ("text/html", b"""<!doctype html><html><head><title>Shop</title>
<link rel=stylesheet href="/style.css"><script src="/app.js"></script></head>
<body><h1>Shop</h1><form id=f><label for=q>Search</label><input id=q>
<select id=sz><option value=s>Small</option><option value=l>Large</option></select>
<button type=submit>Find</button></form><div id=out></div>
<p style="margin-top:1500px"><a href="/item.html">First item</a></p></body></html>"""),
    "https://shop.test/style.css": ("text/css", b"h1 { color: rgb(0, 128, 0) }"),
    "https://shop.test/app.js": ("application/javascript", b"""addEventListener('DOMContentLoaded', () => {
  document.getElementById('f').addEventListener('submit', e => {
    e.preventDefault();
    document.getElementById('out').textContent =
      'results for ' + document.getElementById('q').value + ' ' + document.getElementById('sz').value;
  });
});"""),
    "https://shop.test/item.html": ("text/html", b"""<!doctype html><title>Item</title><h2>Item 1</h2>
<button onclick="this.textContent='In cart'">Add to cart</button>"""),
}

OOM = {
    "https://oom.test/": ("text/html", b"""<!doctype html><title>hog</title><p id=p>allocating</p><script>
const keep = [];
setInterval(() => { for (let i = 0; i < 8; i++) keep.push(new Float64Array(1 << 20).fill(1)); }, 20);
</script>"""),
    "https://oom.test/ok.html": ("text/html", b"<!doctype html><title>ok</title><p id=ok>fine</p>"),
}


def network(site, drop_blobs=False):
    lines, blobs = [], {}
    for url, (mime, body) in site.items():
        sha = hashlib.sha1(body).hexdigest() + (".html" if mime == "text/html" else ".dat")
        if not drop_blobs:
            blobs["resources/" + sha] = body
        snap = {"_monotonicTime": 1.0, "request": {"method": "GET", "url": url, "headers": []},
                "response": {"status": 200, "statusText": "OK",
                             "headers": [{"name": "content-type", "value": mime},
                                         {"name": "content-length", "value": str(len(body))}],
                             "content": {"size": len(body), "mimeType": mime, "_sha1": sha}}}
        lines.append(json.dumps({"type": "resource-snapshot", "snapshot": snap}))
    return "\n".join(lines) + "\n", blobs


def trace(calls, version=6, title=False, first=0):
    out = [json.dumps({"version": version, "type": "context-options", "origin": "library",
                       "browserName": "chromium", "platform": "linux", "wallTime": 1715210365000,
                       "monotonicTime": 100, "sdkLanguage": "javascript",
                       "options": {"viewport": {"width": 1280, "height": 720}}})]
    t = 200.0 + 60 * first
    for i, (api, klass, method, params) in enumerate(calls):
        cid = "call@%d" % (i + 1 + first)
        ev = {"type": "before", "callId": cid, "startTime": t, "class": klass, "method": method,
              "params": params, "pageId": "page@1"}
        ev["title" if title else "apiName"] = api   # v8 renamed apiName to title
        out.append(json.dumps(ev))
        t += 50
        out.append(json.dumps({"type": "after", "callId": cid, "endTime": t}))
        t += 10
    return "\n".join(out) + "\n"


def write(name, calls, site, drop_blobs=False, cut=False, version=6, split=False):
    net, blobs = network(site, drop_blobs)
    half = len(calls) // 2 if split else len(calls)
    text = trace(calls[:half], version, version >= 8)
    if cut:
        text = text[: len(text) // 2]
    with zipfile.ZipFile(os.path.join(OUT, name), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("0-trace.trace", text)
        if split:       # a second library member (a second context's), merged by start time
            z.writestr("1-trace.trace", trace(calls[half:], version, False, half))
        z.writestr("0-trace.network", net)
        for n, b in blobs.items():
            z.writestr(n, b)


NEW_PAGE = ("browserContext.newPage", "BrowserContext", "newPage", {})
SHOP_CALLS = [
    NEW_PAGE,
    ("page.goto", "Frame", "goto", {"url": "https://shop.test/", "waitUntil": "load"}),
    ("locator.fill", "Frame", "fill", {"selector": "internal:label=\"Search\"i", "value": "red shoes", "strict": True}),
    ("locator.selectOption", "Frame", "selectOption", {"selector": "#sz", "options": [{"valueOrLabel": "Large"}]}),
    ("locator.press", "Frame", "press", {"selector": "#q", "key": "Enter"}),
    ("page.waitForSelector", "Frame", "waitForSelector", {"selector": "text=results for red shoes l", "state": "visible"}),
    ("page.mouse.wheel", "Page", "mouseWheel", {"deltaX": 0, "deltaY": 400}),
    ("page.screenshot", "Page", "screenshot", {"type": "png"}),
    ("locator.click", "Frame", "click", {"selector": "internal:role=link[name=\"First item\"i]", "strict": True}),
    ("page.waitForLoadState", "Frame", "waitForLoadState", {"state": "load"}),
    ("locator.click", "Frame", "click", {"selector": "internal:role=button[name=\"Add to cart\"i]"}),
    ("page.waitForSelector", "Frame", "waitForSelector", {"selector": "text=In cart"}),
]
write("shop.zip", SHOP_CALLS, SHOP)
for v in (4, 5, 7, 8):
    write("shop-v%d.zip" % v, SHOP_CALLS, SHOP, version=v)
write("split.zip", SHOP_CALLS, SHOP, split=True)
write("nomatch.zip", [
    NEW_PAGE,
    ("page.goto", "Frame", "goto", {"url": "https://shop.test/"}),
    ("page.click", "Frame", "click", {"selector": "#no-such-button"}),
    ("page.click", "Frame", "click", {"selector": "_vue=app"}),
    ("locator.fill", "Frame", "fill", {"selector": "#q", "value": "still here"}),
], SHOP)
write("oom.zip", [
    NEW_PAGE,
    ("page.goto", "Frame", "goto", {"url": "https://oom.test/", "waitUntil": "load"}),
    ("page.waitForSelector", "Frame", "waitForSelector", {"selector": "#never"}),
    ("page.goto", "Frame", "goto", {"url": "https://oom.test/ok.html"}),
    ("page.waitForSelector", "Frame", "waitForSelector", {"selector": "#ok"}),
], OOM)
write("missing.zip", SHOP_CALLS[:2], SHOP, drop_blobs=True)
write("cut.zip", SHOP_CALLS, SHOP, cut=True)
write("crash.zip", [
    NEW_PAGE,
    ("page.goto", "Frame", "goto", {"url": "https://shop.test/"}),
    ("page.waitForSelector", "Frame", "waitForSelector", {"selector": "#never"}),
    ("page.goto", "Frame", "goto", {"url": "https://shop.test/item.html"}),
], SHOP)
write("hang.zip", [
    NEW_PAGE,
    ("page.goto", "Frame", "goto", {"url": "https://shop.test/"}),
    ("page.waitForSelector", "Frame", "waitForSelector", {"selector": "#never", "timeout": 60000}),
], SHOP)
