# headonly.py PORT - a server started with --header-timeout 1 and a stream
# of about 3 s (--itl 100, 30 tokens): one connection streams a completion
# to its end, stays silent 2 s, and asks again. Prints "streamed=0|1
# again=0|1": the stream ran past the deadline to [DONE], and the second
# request on the same connection was answered.
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
body = b'{"prompt":"hi","max_tokens":30,"stream":true}'
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
got, t0 = b"", time.monotonic()
s.settimeout(20)
while b"data: [DONE]" not in got:
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
streamed = b"data: [DONE]" in got and time.monotonic() - t0 > 1
time.sleep(2)                      # silent between requests, past the deadline
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
again = s.recv(65536).startswith(b"HTTP/1.1 200")
print("streamed=%d again=%d" % (streamed, again))
