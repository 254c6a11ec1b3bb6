#!/usr/bin/env python3
"""server.py DELAY STAMPFILE PORT - the stand-in engine of the bench-runner
benchmark: a server that takes DELAY seconds to "load", then listens on
127.0.0.1:PORT and answers GET /health with 200 (any other path: 404).

Time stamps (CLOCK_REALTIME, epoch seconds with 9 decimals, from
time.time_ns()) tell the runners' detection latencies apart from the
server's own behaviour:
  STAMPFILE        when the port opened: right after listen() returned, so
                   from that instant a connect() succeeds;
  STAMPFILE.close  on SIGTERM, right after the listening socket was closed,
                   so from that instant a connect() is refused.
On SIGTERM the server closes the listening socket, writes STAMPFILE.close
and exits 0 at once (os._exit: no clean-up that could delay it). The
stamps are written before their events are used by anyone: the runners
read them only after the whole run."""
import os
import signal
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


def stamp(path):
    ns = time.time_ns()
    with open(path, "w") as f:
        f.write("%d.%09d\n" % (ns // 1_000_000_000, ns % 1_000_000_000))


class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/health"
        body = b"ok\n" if ok else b"not found\n"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(HTTPServer):
    allow_reuse_address = True      # SO_REUSEADDR: a fresh server per item on one port
    request_queue_size = 64

    def server_bind(self):
        # HTTPServer's own server_bind resolves the host name (getfqdn),
        # which can wait on DNS; the name is never used here.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: server.py DELAY STAMPFILE PORT")
    delay, stampfile, port = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    srv = None

    def on_term(signum, frame):
        if srv is not None:
            srv.socket.close()
            stamp(stampfile + ".close")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    time.sleep(delay)
    srv = Server(("127.0.0.1", port), Health)   # binds and listens
    stamp(stampfile)
    srv.serve_forever(poll_interval=3600)       # a signal interrupts the wait


if __name__ == "__main__":
    main()
