/* stub.c - the C stub server of the client benchmarks (run.sh): answers
 * every HTTP/1.1 POST at once with one fixed SSE stream and logs when
 * each request arrived, so the clients are judged at the server.
 *
 * usage: stub ANSWER_FILE LOG_FILE
 * Listens on 127.0.0.1 on a free port and prints "listening on
 * http://127.0.0.1:PORT" once it does. ANSWER_FILE is the SSE body sent
 * for every request (with Content-Length, in one write with its head). On
 * SIGTERM or SIGINT it writes LOG_FILE, one line per request: the
 * CLOCK_MONOTONIC second at which the first byte of the request was read
 * (the same clock as both clients' timestamps on this machine), in
 * arrival order, and exits.
 *
 * One thread, epoll, level-triggered, keep-alive without limit, requests
 * on one connection one after the other; a few microseconds of CPU a
 * request, so the client, not the server, is what a run measures. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { BUF = 64 * 1024, MAX_FD = 65536 };

struct conn {
    char *buf;
    size_t len;
    int mid;          /* a request's first bytes were seen, its end not yet */
};

static struct conn *conns[MAX_FD];
static double *arrivals;
static size_t n_arrivals, cap_arrivals;
static char *reply;
static size_t reply_len;
static volatile sig_atomic_t stop;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void arrived(double t)
{
    if (n_arrivals == cap_arrivals) {
        cap_arrivals = cap_arrivals ? cap_arrivals * 2 : 1 << 16;
        arrivals = realloc(arrivals, cap_arrivals * sizeof *arrivals);
        if (!arrivals)
            exit(1);
    }
    arrivals[n_arrivals++] = t;
}

static void drop(int ep, int fd)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
    close(fd);
    free(conns[fd]->buf);
    free(conns[fd]);
    conns[fd] = NULL;
}

/* Length of the complete request at the start of k's buffer, 0 if it is
 * not all there yet, -1 if it cannot be read. */
static long request_len(const struct conn *k)
{
    const char *end = memmem(k->buf, k->len, "\r\n\r\n", 4);
    if (!end)
        return k->len >= BUF ? -1 : 0;
    size_t head = (size_t)(end - k->buf) + 4;
    const char *cl = memmem(k->buf, head, "\r\nContent-Length:", 17);
    if (!cl)
        cl = memmem(k->buf, head, "\r\ncontent-length:", 17);
    size_t body = cl ? strtoul(cl + 17, NULL, 10) : 0;
    if (head + body > BUF)
        return -1;
    return k->len >= head + body ? (long)(head + body) : 0;
}

static void on_data(int ep, int fd)
{
    struct conn *k = conns[fd];
    ssize_t n = recv(fd, k->buf + k->len, BUF - k->len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        drop(ep, fd);
        return;
    }
    double t = now();
    if (!k->mid)
        arrived(t);
    k->len += (size_t)n;
    k->mid = 1;
    long used;
    while ((used = request_len(k)) > 0) {
        if (send(fd, reply, reply_len, MSG_NOSIGNAL) != (ssize_t)reply_len) {
            drop(ep, fd);
            return;
        }
        memmove(k->buf, k->buf + used, k->len - (size_t)used);
        k->len -= (size_t)used;
        k->mid = k->len > 0;
        if (k->mid)
            arrived(t);   /* pipelined: it came with the one before */
    }
    if (used < 0)
        drop(ep, fd);
}

static void on_accept(int ep, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (fd >= MAX_FD) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conns[fd] = calloc(1, sizeof **conns);
        conns[fd]->buf = malloc(BUF);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
}

static void load_reply(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    static char body[BUF];
    size_t n = fread(body, 1, sizeof body, f);
    fclose(f);
    reply = malloc(n + 256);
    int h = snprintf(reply, 256,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     "Content-Length: %zu\r\n\r\n", n);
    memcpy(reply + h, body, n);
    reply_len = (size_t)h + n;
}

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void write_log(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    for (size_t i = 0; i < n_arrivals; i++)
        fprintf(f, "%.9f\n", arrivals[i]);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stub ANSWER_FILE LOG_FILE\n");
        return 2;
    }
    load_reply(argv[1]);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sin;
    if (bind(lfd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(lfd, 4096) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sin, &sl) < 0) {
        perror("stub: listen");
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
    printf("stub: listening on http://127.0.0.1:%d\n", ntohs(sin.sin_port));
    fflush(stdout);
    struct epoll_event evs[256];
    while (!stop) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == lfd)
                on_accept(ep, lfd);
            else if (conns[evs[i].data.fd])
                on_data(ep, evs[i].data.fd);
        }
    }
    write_log(argv[2]);
    return 0;
}
