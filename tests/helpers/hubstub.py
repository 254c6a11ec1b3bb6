# hubstub.py ROOT PORTFILE LOG - a stand-in for the Hugging Face Hub on
# 127.0.0.1 (port 0; the port is written to PORTFILE, atomically, once it
# listens), for tests/cli/test-fetch.sh. Standard library only.
#
# ROOT/OWNER/NAME/ is a dataset repository at one commit (the sha1 of
# "OWNER/NAME"); its files under data/ are LFS files: the resolve endpoint
# answers them with a 302 to /cdn/SHA256 (as the Hub redirects to its CDN)
# and X-Linked-Etag / X-Linked-Size / X-Repo-Commit, and the CDN serves
# Range requests. Other files are plain git blobs, served by resolve itself.
# Endpoints and shapes are the Hub's:
#   /api/datasets/O/N/revision/REV          {"id", "sha", "siblings": [{"rfilename"}]}
#   /api/datasets/O/N/tree/SHA?recursive=true
#       [{"type", "oid", "size", "path", "lfs": {"oid", "size", "pointerSize"}}],
#       two entries a page, the next one behind Link: <URL>; rel="next"
#   /datasets/O/N/resolve/SHA/PATH
# Faults, by repository owner:
#   gated/    401 with X-Error-Code: GatedRepo unless "Authorization: Bearer hf_good"
#   flaky/    the CDN drops the connection halfway through each file, once
#   corrupt/  the CDN serves each file with its first byte changed
#   busy/     the first revision request answers 429 with Retry-After: 1
#   norange/  the CDN ignores Range headers (200 and the whole file)
#   evil/     the listing names a file ../escape, outside any folder
# Unknown repositories: 404 with X-Error-Code: RepoNotFound. LOG gets one
# line per request: "METHOD PATH RANGE AUTH" (AUTH: "auth" when an
# Authorization header came, else "-"); gated/ redirects its LFS files to
# http://localhost:PORT, a host other than the one the token was sent to.
import hashlib, http.server, json, os, sys, threading, urllib.parse

ROOT, PORTFILE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
PAGE = 2
lock = threading.Lock()
dropped, busy_done = set(), set()


def commit_of(repo):
    return hashlib.sha1(repo.encode()).hexdigest()


def files_of(repo):
    base = os.path.join(ROOT, repo)
    out = []
    for d, _, names in os.walk(base):
        for n in names:
            out.append(os.path.relpath(os.path.join(d, n), base))
    return sorted(out)


def entry(repo, path):
    data = open(os.path.join(ROOT, repo, path), "rb").read()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    e = {"type": "file", "oid": blob, "size": len(data), "path": path}
    if path.startswith("data/"):
        e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
    return e


def tree_of(repo):
    dirs = sorted({os.path.dirname(p) for p in files_of(repo)} - {""})
    return [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in dirs] + \
           [entry(repo, p) for p in files_of(repo)]


class Hub(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, code, msg):
        self.send(status, json.dumps({"error": msg}).encode(),
                  [("X-Error-Code", code), ("X-Error-Message", msg),
                   ("Content-Type", "application/json")])

    def do_GET(self):
        with lock, open(LOG, "a") as log:
            log.write("GET %s %s %s\n" % (self.path, self.headers.get("Range", "-"),
                                          "auth" if self.headers.get("Authorization") else "-"))
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")]
        if parts[1:2] == ["cdn"]:
            return self.cdn(parts[2], parts[3])
        if parts[1:3] == ["api", "datasets"] and len(parts) >= 6:
            repo, what, rest = parts[3] + "/" + parts[4], parts[5], parts[6:]
        elif parts[1:2] == ["datasets"] and len(parts) >= 6:
            repo, what, rest = parts[2] + "/" + parts[3], parts[4], parts[5:]
        else:
            return self.error(404, "EntryNotFound", "no such endpoint")
        if not os.path.isdir(os.path.join(ROOT, repo)):
            return self.error(404, "RepoNotFound", "Repository not found")
        owner = repo.split("/")[0]
        if owner == "gated" and self.headers.get("Authorization") != "Bearer hf_good":
            return self.error(401, "GatedRepo", "Access to dataset %s is restricted" % repo)
        if what == "revision":
            return self.revision(repo, "/".join(rest))
        if what == "tree":
            return self.tree(repo, rest[0], url.query)
        if what == "resolve":
            return self.resolve(repo, rest[0], "/".join(rest[1:]))
        return self.error(404, "EntryNotFound", "no such endpoint")

    def revision(self, repo, rev):
        if repo.startswith("busy/") and repo not in busy_done:
            busy_done.add(repo)
            return self.send(429, b"slow down", [("Retry-After", "1")])
        if rev not in ("main", commit_of(repo)):
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
        body = {"id": repo, "sha": commit_of(repo),
                "siblings": [{"rfilename": p} for p in files_of(repo)]}
        self.send(200, json.dumps(body).encode(), [("Content-Type", "application/json")])

    def tree(self, repo, sha, query):
        if sha != commit_of(repo):
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + sha)
        q = urllib.parse.parse_qs(query)
        start = int(q.get("cursor", ["0"])[0])
        items = tree_of(repo)
        if repo.startswith("evil/"):
            items.append({"type": "file", "oid": "1" * 40, "size": 1, "path": "../escape"})
        headers = [("Content-Type", "application/json")]
        if start + PAGE < len(items):
            nxt = "http://127.0.0.1:%d/api/datasets/%s/tree/%s?recursive=true&cursor=%d" % (
                self.server.server_port, repo, sha, start + PAGE)
            headers.append(("Link", '<%s>; rel="next"' % nxt))
        self.send(200, json.dumps(items[start:start + PAGE]).encode(), headers)

    def resolve(self, repo, sha, path):
        full = os.path.join(ROOT, repo, path)
        if sha != commit_of(repo) or not os.path.isfile(full):
            return self.error(404, "EntryNotFound", "Entry not found")
        e = entry(repo, path)
        if "lfs" not in e:
            return self.send(200, open(full, "rb").read(),
                             [("ETag", '"%s"' % e["oid"]), ("X-Repo-Commit", sha)])
        # gated/: the CDN under another host name, as the Hub's is, which
        # must not see the token.
        host = "localhost" if repo.startswith("gated/") else "127.0.0.1"
        loc = "http://%s:%d/cdn/%s/%s?X-Amz-Signature=stub" % (
            host, self.server.server_port, urllib.parse.quote(repo, safe=""), e["lfs"]["oid"])
        self.send(302, b"", [("Location", loc), ("X-Repo-Commit", sha),
                             ("X-Linked-Etag", '"%s"' % e["lfs"]["oid"]),
                             ("X-Linked-Size", str(e["size"])), ("ETag", '"%s"' % e["oid"])])

    def cdn(self, repo, sha):
        repo = urllib.parse.unquote(repo)
        path = next((p for p in files_of(repo) if entry(repo, p).get("lfs", {}).get("oid") == sha), None)
        if path is None:
            return self.send(404, b"NoSuchKey")
        data = bytearray(open(os.path.join(ROOT, repo, path), "rb").read())
        if repo.startswith("corrupt/"):
            data[0] ^= 1
        start, status, headers = 0, 200, [("ETag", '"%s"' % sha), ("Accept-Ranges", "bytes")]
        rng = None if repo.startswith("norange/") else self.headers.get("Range")
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                return self.send(416, b"", [("Content-Range", "bytes */%d" % len(data))])
            status = 206
            headers.append(("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data))))
        body = bytes(data[start:])
        if repo.startswith("flaky/") and sha not in dropped:
            dropped.add(sha)
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send(status, body, headers)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_port))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
