# servers.sh - the servers of the client benchmarks, sourced by run.sh and
# threads.sh: `atr sim serve` with zero latency, and nginx answering every
# request with that server's recorded answer. Needs ATR, PY, WORK and
# PIN_SERVER; sets URL, SERVER_SHOWN and the pids SRV and NGX (for the
# caller's cleanup).

# start_sim_server: `atr sim serve --ttft 0 --itl 0` on a free port. It
# prints its address once it listens; poll for it (10 s at most).
start_sim_server() {
    $PIN_SERVER "$ATR" sim serve --ttft 0 --itl 0 --port 0 >"$WORK/srv.out" 2>"$WORK/srv.err" &
    SRV=$!
    i=0
    while ! grep -q 'listening on' "$WORK/srv.out" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 200 ] || ! kill -0 "$SRV" 2>/dev/null; then
            echo "${0##*/}: atr sim serve did not start:" >&2
            cat "$WORK/srv.err" >&2
            exit 1
        fi
        sleep 0.05
    done
    URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$WORK/srv.out")
    SERVER_SHOWN="$ATR sim serve --ttft 0 --itl 0"
}

# nginx: one worker answering every request with the sim server's answer to
# a benchmark request (32 prompt words, 8 tokens), recorded once. Started
# as nobody when run as root, its files in a directory nobody may use.
start_nginx() {
    NGINX=$(sh "$HERE/../need-nginx.sh") || exit 1
    d=$WORK/nginx
    mkdir -p "$d"
    curl -sN "$URL/v1/completions" -H 'Content-Type: application/json' \
        -d '{"model":"atr-sim","prompt":"'"$(printf 'w%d ' $(seq 1 32))"'","max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}' \
        >"$d/answer.sse"
    grep -q '^data: \[DONE\]' "$d/answer.sse" || { echo "${0##*/}: no answer to record from the sim server" >&2; exit 1; }
    # Inside nginx's single quotes: no quote, backslash or '$' (a variable).
    if grep -q "['\\\$]" "$d/answer.sse"; then
        echo "${0##*/}: the recorded answer needs quoting for nginx" >&2
        exit 1
    fi
    port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat >"$d/nginx.conf" <<EOF
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 16384; }
http {
    access_log off;
    client_body_temp_path $d/body;
    proxy_temp_path $d/proxy;
    fastcgi_temp_path $d/fastcgi;
    uwsgi_temp_path $d/uwsgi;
    scgi_temp_path $d/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    server {
        listen 127.0.0.1:$port backlog=4096;
        location / {
            default_type text/event-stream;
            return 200 '$(cat "$d/answer.sse")';
        }
    }
}
EOF
    as=""
    if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
        as="setpriv --reuid=$(id -u nobody) --regid=$(id -g nobody) --clear-groups"
        chmod 711 "$WORK"
        chown -R nobody "$d"
    fi
    $PIN_SERVER $as "$NGINX" -p "$d" -e "$d/error.log" -c "$d/nginx.conf" \
        -g 'daemon off;' >"$d/stdout" 2>&1 &
    NGX=$!
    i=0
    until curl -s -o /dev/null -X POST -d x "http://127.0.0.1:$port/v1/completions" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 200 ] || ! kill -0 "$NGX" 2>/dev/null; then
            echo "${0##*/}: nginx did not start:" >&2
            cat "$d/error.log" "$d/stdout" >&2 2>/dev/null
            exit 1
        fi
        sleep 0.05
    done
    URL=http://127.0.0.1:$port
    SERVER_SHOWN="nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), one worker, a recorded answer"
}

# The C stub (stub.c): built once into $WORK with the system's cc, its
# answer recorded once from the sim server (as nginx's), then one fresh
# stub per ladder step (stub_up / stub_down) so that each step has its own
# arrival log, $WORK/arrivals.log, for arrivals.py.
start_stub() {
    cc -O2 -o "$WORK/stub" "$HERE/stub.c" || { echo "${0##*/}: cannot build stub.c" >&2; exit 1; }
    curl -sN "$URL/v1/completions" -H 'Content-Type: application/json' \
        -d '{"model":"atr-sim","prompt":"'"$(printf 'w%d ' $(seq 1 32))"'","max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}' \
        >"$WORK/answer.sse"
    grep -q '^data: \[DONE\]' "$WORK/answer.sse" || { echo "${0##*/}: no answer to record from the sim server" >&2; exit 1; }
    SERVER_SHOWN="C stub (bench/replay-client/stub.c), a recorded answer ($(wc -c <"$WORK/answer.sse") bytes, Content-Length), one per step"
}

# stub_up: a fresh stub on a free port; sets URL and STUB.
stub_up() {
    rm -f "$WORK/arrivals.log" "$WORK/stub.out"
    $PIN_SERVER "$WORK/stub" "$WORK/answer.sse" "$WORK/arrivals.log" >"$WORK/stub.out" 2>&1 &
    STUB=$!
    i=0
    while ! grep -q 'listening on' "$WORK/stub.out" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 200 ] || ! kill -0 "$STUB" 2>/dev/null; then
            echo "${0##*/}: the stub did not start:" >&2
            cat "$WORK/stub.out" >&2
            exit 1
        fi
        sleep 0.05
    done
    URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$WORK/stub.out")
}

# stub_down: stops the stub, which writes its arrival log as it exits.
stub_down() {
    kill "$STUB" 2>/dev/null || true
    wait "$STUB" 2>/dev/null || true
    STUB=""
}
