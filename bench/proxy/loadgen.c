/* loadgen.c - the load generator of bench/proxy/run.sh: one thread, epoll,
 * raw non-blocking sockets, HTTP/1.1 keep-alive, no allocation per request.
 *
 *   loadgen run PORT STREAMS SECONDS [PROXY_PIDS [UPSTREAM_PIDS]]
 *       STREAMS connections, each sending POST /v1/completions (max_tokens
 *       64, stream, ignore_eos) again as soon as its previous answer ended
 *       (closed loop); the streams start spread over 0.5 s, so that with a
 *       fixed ITL they do not run in waves. Once every stream has had one
 *       full answer (warm-up:
 *       connections made, the proxy's upstream pool filled) plus 0.25 s,
 *       it counts for SECONDS: content chunks received, answers completed,
 *       TTFT of the requests sent and completed inside the window, the CPU
 *       time (utime + stime from /proc/PID/stat) of the proxy's PIDs, of
 *       the upstream's and of itself (PIDS: comma-separated, "-": none),
 *       and how busy each core was (/proc/stat: softirq work included).
 *       Prints one line of key=value on stdout.
 *   loadgen hold PORT STREAMS
 *       STREAMS connections, one request each; prints "ready N" once every
 *       stream has received its first content chunk (the stream is open end
 *       to end), then keeps the streams open (reading what comes) until it
 *       is killed.
 *
 * TTFT: from just before the request's write() to the read() that completes
 * the first SSE event with non-empty "text" (a content chunk). Answers must
 * be 200 with chunked, Content-Length or close-delimited bodies; SSE events
 * are split on "\n\n". A non-200 answer, a stream without content or
 * without "data: [DONE]", a cut connection: an error (counted; the stream
 * reconnects). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTING 128
#define MAX_PIDS 8
#define WARM_EXTRA_S 0.25
#define WARM_DEADLINE_S 60.0
#define RAMP_S 0.5              /* run: stream i starts at i * RAMP_S / STREAMS */

enum state { S_CONNECTING, S_HEAD, S_CSIZE, S_CDATA, S_CCRLF, S_TRAILER, S_LENGTH, S_CLOSE, S_IDLE };

struct conn {
    int fd;
    enum state st;
    size_t wpos;
    double t_send, ttft;
    int got_first, done_seen, close_after, warm;
    size_t left;                 /* bytes left in a chunk or a Content-Length body */
    char line[80];               /* chunk-size / trailer line, header tail */
    size_t line_len;
    char *hdr;                   /* response head so far */
    size_t hdr_len, hdr_cap;
    char *ev;                    /* partial SSE event */
    size_t ev_len, ev_cap;
};

static int ep, port, hold_mode, n_streams;
static struct sockaddr_in addr;
static char req[1024];
static size_t req_len;
static struct conn *conns;
static int to_open, connecting, n_warm, n_ready;
static double t_start, win_t0 = -1, win_t1 = -1, win_start = -1, win_end = -1;
static int in_window;
static unsigned long long w_chunks, w_requests, errors;
static double *ttfts;
static size_t n_ttft, cap_ttft;
struct pidset {
    int pid[MAX_PIDS];
    int n;
};
static struct pidset proxy_pids, up_pids;
static double cpu0, cpu1, up0, up1, self0, self1;
#define MAX_CORES 8
static double core_busy0[MAX_CORES], core_all0[MAX_CORES], core_busy1[MAX_CORES], core_all1[MAX_CORES];
static int n_cores;
static char rbuf[1 << 16];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "loadgen: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double pid_cpu(const struct pidset *ps)
{
    static long hz;
    double sum = 0;
    if (!hz) hz = sysconf(_SC_CLK_TCK);
    for (int i = 0; i < ps->n; i++) {
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", ps->pid[i]);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *p = strrchr(buf, ')');
        if (!p) continue;
        unsigned long ut = 0, st = 0;
        /* after ")": state(3) ppid pgrp session tty tpgid flags minflt
         * cminflt majflt cmajflt utime(14) stime(15) */
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
            sum += (double)(ut + st) / (double)hz;
    }
    return sum;
}

/* Busy and total jiffies of cpu0..cpuN from /proc/stat: the whole core,
 * softirq work included (loopback delivery runs there, charged to no
 * process). */
static void core_times(double *busy, double *all)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[512];
    int n = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f) && n < MAX_CORES) {
        unsigned long long v[10] = {0};
        int cpu;
        if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7]) < 9 || cpu != n)
            continue;
        double t = 0;
        for (int i = 0; i < 8; i++) t += (double)v[i];
        all[n] = t;
        busy[n] = t - (double)v[3] - (double)v[4];   /* minus idle and iowait */
        n++;
    }
    fclose(f);
    n_cores = n;
}

static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void set_events(struct conn *c, uint32_t ev)
{
    struct epoll_event e = {.events = ev, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e) < 0) die("epoll_ctl");
}

static void open_conn(struct conn *c)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    c->st = S_CONNECTING;
    c->hdr_len = c->ev_len = c->line_len = 0;
    struct epoll_event e = {.events = EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0) die("epoll_ctl add");
    connecting++;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
        /* reported when epoll says the socket is writable */
    }
}

/* Opens the streams that are due: all at once in hold mode; spread over
 * RAMP_S in run mode, so that with a fixed ITL the streams do not start,
 * finish and start again in one wave (every answer takes as long). */
static void open_more(void)
{
    double due = hold_mode ? (double)n_streams : (now_s() - t_start) / RAMP_S * n_streams + 1;
    while (to_open > 0 && connecting < MAX_CONNECTING && n_streams - to_open < due) {
        open_conn(&conns[n_streams - to_open]);
        to_open--;
    }
}

static void send_req(struct conn *c, double now)
{
    c->st = S_HEAD;
    c->wpos = 0;
    c->t_send = now;
    c->got_first = c->done_seen = c->close_after = 0;
    c->hdr_len = c->ev_len = c->line_len = 0;
    ssize_t w = write(c->fd, req, req_len);
    if (w == (ssize_t)req_len) {
        c->wpos = req_len;
        set_events(c, EPOLLIN);
        return;
    }
    if (w > 0) c->wpos = (size_t)w;
    set_events(c, EPOLLIN | EPOLLOUT);
}

static void fail(struct conn *c, double now, const char *why)
{
    errors++;
    if (errors <= 5) fprintf(stderr, "loadgen: stream error: %s\n", why);
    if (errors > 100000) {
        fprintf(stderr, "loadgen: too many errors\n");
        exit(1);
    }
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    if (c->st == S_CONNECTING) connecting--;
    (void)now;
    open_conn(c);
}

static void record_ttft(double v)
{
    if (n_ttft == cap_ttft) {
        cap_ttft = cap_ttft ? cap_ttft * 2 : 4096;
        ttfts = realloc(ttfts, cap_ttft * sizeof *ttfts);
        if (!ttfts) die("realloc");
    }
    ttfts[n_ttft++] = v;
}

/* One SSE event (without its "\n\n"). */
static void on_event(struct conn *c, const char *p, size_t n, double now)
{
    if (n < 5 || memcmp(p, "data:", 5) != 0) return;
    const char *q = p + 5, *end = p + n;
    while (q < end && *q == ' ') q++;
    if ((size_t)(end - q) >= 6 && memcmp(q, "[DONE]", 6) == 0) {
        c->done_seen = 1;
        return;
    }
    const char *t = memmem(q, (size_t)(end - q), "\"text\":", 7);
    if (!t) return;
    t += 7;
    while (t < end && *t == ' ') t++;
    if (t + 1 >= end || *t != '"' || t[1] == '"') return;
    if (in_window) w_chunks++;
    if (!c->got_first) {
        c->got_first = 1;
        c->ttft = now - c->t_send;
        if (hold_mode && ++n_ready == n_streams) {
            printf("ready %d\n", n_ready);
            fflush(stdout);
        }
    }
}

static void sse_feed(struct conn *c, const char *p, size_t n, double now)
{
    int carry = c->ev_len > 0;
    if (carry) {
        if (c->ev_len + n > c->ev_cap) {
            c->ev_cap = (c->ev_len + n) * 2;
            c->ev = realloc(c->ev, c->ev_cap);
            if (!c->ev) die("realloc");
        }
        memcpy(c->ev + c->ev_len, p, n);
        p = c->ev;
        n = c->ev_len + n;
    }
    size_t off = 0;
    for (;;) {
        const char *e = memmem(p + off, n - off, "\n\n", 2);
        if (!e) break;
        on_event(c, p + off, (size_t)(e - (p + off)), now);
        off = (size_t)(e - p) + 2;
    }
    size_t rest = n - off;
    if (carry) {
        memmove(c->ev, c->ev + off, rest);
    } else if (rest) {
        if (rest > c->ev_cap) {
            c->ev_cap = rest * 2 < 4096 ? 4096 : rest * 2;
            c->ev = realloc(c->ev, c->ev_cap);
            if (!c->ev) die("realloc");
        }
        memcpy(c->ev, p + off, rest);
    }
    c->ev_len = rest;
}

/* The answer ended: the next request, or a new connection. */
static void answer_done(struct conn *c, double now)
{
    if (!c->got_first || !c->done_seen) {
        fail(c, now, c->got_first ? "no data: [DONE]" : "no content chunk");
        return;
    }
    if (!c->warm) {
        c->warm = 1;
        if (++n_warm == n_streams && !hold_mode) {
            win_t0 = now + WARM_EXTRA_S;
        }
    }
    if (in_window) {
        w_requests++;
        if (c->t_send >= win_start) record_ttft(c->ttft);
    }
    if (hold_mode) {
        c->st = S_IDLE;
        return;
    }
    if (c->close_after) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        open_conn(c);
        return;
    }
    send_req(c, now);
}

/* Parses the response head in c->hdr. 0 ok, -1 error. */
static int parse_head(struct conn *c)
{
    c->hdr[c->hdr_len] = 0;
    int status = 0;
    if (sscanf(c->hdr, "HTTP/1.%*d %d", &status) != 1 || status != 200) return -1;
    const char *h = c->hdr;
    c->close_after = strncmp(c->hdr, "HTTP/1.0", 8) == 0;
    long clen = -1;
    int chunked = 0;
    for (const char *l = strstr(h, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
        const char *s = l + 2;
        if (strncasecmp(s, "transfer-encoding:", 18) == 0) {
            const char *e = strstr(s, "\r\n");
            if (memmem(s, (size_t)(e - s), "chunked", 7)) chunked = 1;
        } else if (strncasecmp(s, "content-length:", 15) == 0) {
            clen = strtol(s + 15, NULL, 10);
        } else if (strncasecmp(s, "connection:", 11) == 0) {
            const char *v = s + 11;
            while (*v == ' ') v++;
            if (strncasecmp(v, "close", 5) == 0) c->close_after = 1;
            else if (strncasecmp(v, "keep-alive", 10) == 0) c->close_after = 0;
        }
    }
    if (chunked) c->st = S_CSIZE;
    else if (clen >= 0) { c->st = S_LENGTH; c->left = (size_t)clen; }
    else { c->st = S_CLOSE; c->close_after = 1; }
    return 0;
}

/* Feeds n bytes of the answer. Returns 1 when the connection was replaced
 * or the answer ended (the rest of the buffer, if any, is a protocol
 * error and dropped). */
static int feed(struct conn *c, const char *p, size_t n, double now)
{
    while (n) {
        switch (c->st) {
        case S_HEAD: {
            if (c->hdr_len + n + 1 > c->hdr_cap) {
                c->hdr_cap = (c->hdr_len + n + 1) * 2;
                c->hdr = realloc(c->hdr, c->hdr_cap);
                if (!c->hdr) die("realloc");
            }
            size_t old = c->hdr_len;
            memcpy(c->hdr + old, p, n);
            c->hdr_len += n;
            size_t from = old >= 3 ? old - 3 : 0;
            const char *e = memmem(c->hdr + from, c->hdr_len - from, "\r\n\r\n", 4);
            if (!e) return 0;
            size_t head = (size_t)(e - c->hdr) + 4;
            size_t used = head - old;
            c->hdr_len = head;
            if (parse_head(c) < 0) {
                fail(c, now, "not a 200 answer");
                return 1;
            }
            p += used;
            n -= used;
            break;
        }
        case S_CSIZE: case S_TRAILER: {
            const char *nl = memchr(p, '\n', n);
            size_t take = nl ? (size_t)(nl - p) + 1 : n;
            if (c->line_len + take >= sizeof c->line) {
                fail(c, now, "bad chunk line");
                return 1;
            }
            memcpy(c->line + c->line_len, p, take);
            c->line_len += take;
            p += take;
            n -= take;
            if (!nl) return 0;
            c->line[c->line_len] = 0;
            if (c->st == S_TRAILER) {
                int empty = c->line_len <= 2;
                c->line_len = 0;
                if (empty) {
                    answer_done(c, now);
                    return 1;
                }
                break;
            }
            char *end;
            unsigned long sz = strtoul(c->line, &end, 16);
            if (end == c->line) {
                fail(c, now, "bad chunk size");
                return 1;
            }
            c->line_len = 0;
            if (sz == 0) c->st = S_TRAILER;
            else { c->st = S_CDATA; c->left = sz; }
            break;
        }
        case S_CDATA: {
            size_t take = n < c->left ? n : c->left;
            sse_feed(c, p, take, now);
            p += take;
            n -= take;
            c->left -= take;
            if (!c->left) { c->st = S_CCRLF; c->line_len = 0; }
            break;
        }
        case S_CCRLF: {
            /* the CRLF after chunk data */
            if (*p == '\n') c->st = S_CSIZE;
            else if (*p != '\r') { fail(c, now, "bad chunk end"); return 1; }
            p++;
            n--;
            break;
        }
        case S_LENGTH: {
            if (c->left) {
                size_t take = n < c->left ? n : c->left;
                sse_feed(c, p, take, now);
                p += take;
                n -= take;
                c->left -= take;
            }
            if (!c->left) {
                if (c->ev_len) sse_feed(c, "\n\n", 2, now);
                answer_done(c, now);
                return 1;
            }
            break;
        }
        case S_CLOSE:
            sse_feed(c, p, n, now);
            return 0;
        default:
            fail(c, now, "unexpected bytes");
            return 1;
        }
    }
    if (c->st == S_LENGTH && c->left == 0) {
        if (c->ev_len) sse_feed(c, "\n\n", 2, now);
        answer_done(c, now);
        return 1;
    }
    return 0;
}

static void on_ready(struct conn *c, uint32_t ev, double now)
{
    if (c->st == S_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            errno = err;
            fail(c, now, strerror(err));
            return;
        }
        connecting--;
        send_req(c, now);
        open_more();
        return;
    }
    if ((ev & EPOLLOUT) && c->wpos < req_len) {
        ssize_t w = write(c->fd, req + c->wpos, req_len - c->wpos);
        if (w < 0 && errno != EAGAIN) { fail(c, now, "write"); return; }
        if (w > 0) c->wpos += (size_t)w;
        if (c->wpos == req_len) set_events(c, EPOLLIN);
    }
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        ssize_t r = read(c->fd, rbuf, sizeof rbuf);
        if (r < 0) {
            if (errno == EAGAIN) return;
            fail(c, now, "read");
            return;
        }
        now = now_s();
        if (r == 0) {
            if (c->st == S_CLOSE) {
                if (c->ev_len) sse_feed(c, "\n\n", 2, now);
                c->close_after = 1;
                answer_done(c, now);
            } else if (hold_mode && c->st == S_IDLE) {
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
            } else {
                fail(c, now, "connection closed mid-answer");
            }
            return;
        }
        feed(c, rbuf, (size_t)r, now);
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* numpy's linear percentile */
static double pct(double q)
{
    if (!n_ttft) return 0;
    double pos = q / 100.0 * (double)(n_ttft - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    return i + 1 < n_ttft ? ttfts[i] * (1 - f) + ttfts[i + 1] * f : ttfts[i];
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "run") && strcmp(argv[1], "hold"))) {
        fprintf(stderr, "usage: loadgen run PORT STREAMS SECONDS [PROXY_PIDS [UPSTREAM_PIDS]]\n"
                        "       loadgen hold PORT STREAMS\n");
        return 2;
    }
    hold_mode = strcmp(argv[1], "hold") == 0;
    port = atoi(argv[2]);
    n_streams = atoi(argv[3]);
    double seconds = hold_mode ? 0 : atof(argv[4]);
    for (int a = 5; !hold_mode && a < argc && a < 7; a++) {
        struct pidset *ps = a == 5 ? &proxy_pids : &up_pids;
        char *s = argv[a];
        while (*s && *s != '-' && ps->n < MAX_PIDS) {
            ps->pid[ps->n++] = (int)strtol(s, &s, 10);
            if (*s == ',') s++;
            else break;
        }
    }
    if (port <= 0 || n_streams <= 0 || (!hold_mode && seconds <= 0)) {
        fprintf(stderr, "loadgen: bad arguments\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n_streams + 64) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    static const char body[] =
        "{\"model\":\"atr-sim\",\"prompt\":\"the quick brown fox jumps over the lazy dog while"
        " a small bird sings in the old oak tree near the river and the wind moves slowly"
        " through the tall green grass of the quiet field\",\"max_tokens\":64,"
        "\"stream\":true,\"ignore_eos\":true}";
    req_len = (size_t)snprintf(req, sizeof req,
                               "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                               "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                               "Content-Length: %zu\r\n\r\n%s",
                               port, sizeof body - 1, body);

    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    conns = calloc((size_t)n_streams, sizeof *conns);
    if (!conns) die("calloc");
    to_open = n_streams;
    t_start = now_s();
    open_more();

    struct epoll_event evs[512];
    for (;;) {
        double now = now_s();
        int timeout = 100;
        if (to_open > 0) {
            open_more();
            timeout = 1;
        }
        if (!hold_mode) {
            if (win_t0 < 0 && now - t_start > WARM_DEADLINE_S) {
                fprintf(stderr, "loadgen: only %d of %d streams got an answer in %.0f s\n",
                        n_warm, n_streams, WARM_DEADLINE_S);
                return 1;
            }
            if (win_t0 >= 0 && !in_window && win_start < 0 && now >= win_t0) {
                in_window = 1;
                win_start = now;
                win_t1 = now + seconds;
                cpu0 = pid_cpu(&proxy_pids);
                up0 = pid_cpu(&up_pids);
                core_times(core_busy0, core_all0);
                self0 = self_cpu();
            }
            if (in_window && now >= win_t1) {
                in_window = 0;
                win_end = now;
                cpu1 = pid_cpu(&proxy_pids);
                up1 = pid_cpu(&up_pids);
                core_times(core_busy1, core_all1);
                self1 = self_cpu();
                break;
            }
            double next = in_window ? win_t1 : win_t0;
            if (next > 0) {
                double ms = (next - now) * 1000.0;
                timeout = ms < 0 ? 0 : (int)ms + 1;
                if (timeout > 100) timeout = 100;
                if (to_open > 0) timeout = 1;
            }
        } else if (n_ready < n_streams && now - t_start > WARM_DEADLINE_S) {
            fprintf(stderr, "loadgen: only %d of %d streams open after %.0f s\n", n_ready,
                    n_streams, WARM_DEADLINE_S);
            return 1;
        }
        int k = epoll_wait(ep, evs, 512, timeout);
        if (k < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        now = now_s();
        for (int i = 0; i < k; i++) on_ready(evs[i].data.ptr, evs[i].events, now);
    }

    qsort(ttfts, n_ttft, sizeof *ttfts, cmp_d);
    double w = win_end - win_start;
    printf("streams=%d requests=%llu chunks=%llu window_s=%.4f chunks_per_s=%.1f ttft_n=%zu "
           "ttft_p50_ms=%.4f ttft_p99_ms=%.4f errors=%llu proxy_cpu_s=%.3f client_cpu_s=%.3f "
           "upstream_cpu_s=%.3f core_busy_pct=",
           n_streams, w_requests, w_chunks, w, (double)w_chunks / w, n_ttft, pct(50) * 1e3,
           pct(99) * 1e3, errors, cpu1 - cpu0, self1 - self0, up1 - up0);
    for (int i = 0; i < n_cores; i++) {
        double d = core_all1[i] - core_all0[i];
        printf("%s%.1f", i ? "," : "", d > 0 ? 100.0 * (core_busy1[i] - core_busy0[i]) / d : 0.0);
    }
    printf("\n");
    return 0;
}
