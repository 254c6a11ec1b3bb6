/* h1conn.c - the client's plain-HTTP/1.1 transport: its own connections
 * on the caller's libevent loop, for http:// targets (libcurl stays for
 * https, and for what this file does not parse; docs/replay-llm.md).
 *
 * Why it exists: on a kept-alive connection to a fast server, libcurl's
 * per-transfer machinery (handle state machine, connection-cache walk,
 * header building, its own connection checks with poll()) was most of the
 * client's CPU a request. Here a request is one prebuilt head plus the
 * body in one send(), its answer one or a few recv()s into a buffer the
 * whole client shares, parsed in place (llm/h1.c), and no allocation once
 * warm.
 *
 * Connections: at most max_connections are open. A request takes the most
 * recently used idle one (the likeliest to be alive), else opens one while
 * under the cap, else waits in a FIFO; a connection whose answer ended
 * serves the head of that FIFO first. A kept-alive connection the server
 * closed without saying so (llama-server does, a little after each
 * stream) fails the next request on it before any byte of an answer: that
 * request is sent once more on a new connection, as libcurl does, and its
 * sent_s is stamped again. A connection that fails to connect tries the
 * target's next address ("localhost" may give ::1 before 127.0.0.1).
 *
 * on_done is never called from inside atr_llm_client_send: a request that
 * ends there (a connect refused at once) is reported from the loop. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "llm/client-int.h"
#include "util/alloc.h"

enum {
    READ_BUF = 64 * 1024,
    MAX_ADDRS = 4,
    MAX_HOST = 256,
};

struct h1_conn {
    struct h1_pool *p;
    int fd;
    struct event rev, wev;
    struct atr_h1 h1;
    struct req *req;                   /* NULL while idle */
    size_t out_off;                    /* bytes of the request written */
    unsigned served;                   /* answers read on it */
    unsigned addr;                     /* index into the pool's addresses */
    bool connecting;
    double now;                        /* when the bytes being parsed came */
    struct h1_conn *prev, *next;       /* idle list */
};

struct h1_pool {
    struct atr_llm_client *c;
    struct sockaddr_storage addrs[MAX_ADDRS];
    socklen_t addr_len[MAX_ADDRS];
    unsigned n_addrs, good_addr;       /* good_addr: the last that connected */
    char where[MAX_HOST + 16];         /* "HOST port N", for messages */
    struct atr_buf head[2];            /* per API: request line and headers up to the length */
    size_t max_conns, n_conns;
    double timeout_s;
    struct h1_conn *idle;              /* most recently used first */
    struct req *wait_head, *wait_tail; /* FIFO of requests without a connection */
    struct req *later_head, *later_tail;
    struct event *later;               /* reports what ended inside send */
    bool in_send;
    char buf[READ_BUF];
};

static void conn_write(struct h1_conn *k);
static void conn_open(struct h1_pool *p, struct req *r);

/* ---- ending a request -------------------------------------------------------- */

static void complete(struct h1_pool *p, struct req *r)
{
    req_settle_end(r);
    if (!p->in_send) {
        req_finish(r);
        return;
    }
    r->qnext = NULL;
    if (p->later_tail)
        p->later_tail->qnext = r;
    else
        p->later_head = r;
    p->later_tail = r;
    event_active(p->later, EV_TIMEOUT, 0);
}

static void on_later(evutil_socket_t fd, short kind, void *arg)
{
    struct h1_pool *p = arg;
    (void)fd, (void)kind;
    while (p->later_head) {
        struct req *r = p->later_head;
        p->later_head = r->qnext;
        if (!p->later_head)
            p->later_tail = NULL;
        req_finish(r);
    }
}

/* ---- connections --------------------------------------------------------------- */

static void idle_unlink(struct h1_pool *p, struct h1_conn *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else if (p->idle == k)
        p->idle = k->next;
    if (k->next)
        k->next->prev = k->prev;
    k->prev = k->next = NULL;
}

static void idle_push(struct h1_pool *p, struct h1_conn *k)
{
    k->prev = NULL;
    k->next = p->idle;
    if (p->idle)
        p->idle->prev = k;
    p->idle = k;
}

/* Closes k without looking at the FIFO; its request (if any) is detached. */
static void conn_close(struct h1_conn *k)
{
    struct h1_pool *p = k->p;
    if (k->req)
        k->req->conn = NULL;
    else
        idle_unlink(p, k);
    event_del(&k->rev);
    event_del(&k->wev);
    close(k->fd);
    atr_h1_release(&k->h1);
    p->n_conns--;
    free(k);
}

static struct req *wait_pop(struct h1_pool *p)
{
    struct req *r = p->wait_head;
    if (r) {
        p->wait_head = r->qnext;
        if (!p->wait_head)
            p->wait_tail = NULL;
        r->qnext = NULL;
    }
    return r;
}

/* Requests waiting get the room a closed connection left. */
static void dispatch(struct h1_pool *p)
{
    while (p->wait_head && p->n_conns < p->max_conns)
        conn_open(p, wait_pop(p));
}

static void conn_drop(struct h1_conn *k)
{
    struct h1_pool *p = k->p;
    conn_close(k);
    dispatch(p);
}

static void conn_start(struct h1_conn *k, struct req *r)
{
    k->req = r;
    r->conn = k;
    k->out_off = 0;
    atr_h1_reset(&k->h1);
    if (!k->connecting)
        conn_write(k);
}

/* The answer on k ended: k serves the next waiting request, or idles. */
static void conn_release(struct h1_conn *k, bool reusable)
{
    struct h1_pool *p = k->p;
    k->served++;
    k->req->conn = NULL;
    k->req = NULL;
    if (!reusable) {
        conn_drop(k);
        return;
    }
    struct req *next = wait_pop(p);
    if (next)
        conn_start(k, next);
    else
        idle_push(p, k);
}

/* ---- failures ------------------------------------------------------------------- */

static void fail_connect(struct h1_pool *p, struct req *r, int err)
{
    snprintf(r->detail, sizeof r->detail, "the server is not reachable: %.80s (connecting to %.100s)",
             strerror(err), p->where);
    req_fail(r, "connect", atr_llm_now());
    complete(p, r);
}

/* The connection broke (err: errno) or closed (err 0) under its request,
 * or while idle. */
static void conn_broken(struct h1_conn *k, int err)
{
    struct h1_pool *p = k->p;
    struct req *r = k->req;
    if (!r) {
        conn_close(k);   /* an idle connection the server closed */
        return;
    }
    if (!k->h1.started && k->served > 0) {
        conn_close(k);   /* kept alive here, closed there: send it again */
        conn_open(p, r);
        dispatch(p);
        return;
    }
    double now = atr_llm_now();
    if (err == 0 && atr_h1_eof(&k->h1))
        req_end_ok(r, now);   /* a body that ends with the connection */
    else
        req_end_cut(r, err ? strerror(err) : "the server closed it", now);
    conn_drop(k);
    complete(p, r);
}

/* ---- writing -------------------------------------------------------------------- */

static void conn_write(struct h1_conn *k)
{
    struct req *r = k->req;
    if (k->out_off == 0)
        r->sent_s = atr_llm_now();   /* the bytes leave now */
    ssize_t n = send(k->fd, r->body.data + k->out_off, r->body.len - k->out_off, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        conn_broken(k, errno);
        return;
    }
    if (n > 0)
        k->out_off += (size_t)n;
    if (k->out_off < r->body.len)
        event_add(&k->wev, NULL);
}

/* ---- reading -------------------------------------------------------------------- */

static int on_head(void *ctx, const struct atr_h1 *h)
{
    struct h1_conn *k = ctx;
    k->req->status = h->status;
    return 0;
}

static int on_body(void *ctx, const char *s, size_t n)
{
    struct h1_conn *k = ctx;
    struct req *r = k->req;
    if (r->mode == BODY_UNKNOWN)
        req_head(r, k->h1.status, k->h1.type, s, n);
    return req_body(r, s, n, k->now) ? 0 : 1;
}

static const struct atr_h1_cb parse_cb = {on_head, on_body};

/* Parses what came; false when k no longer reads for a request (its answer
 * ended, or k is gone). */
static bool conn_feed(struct h1_conn *k, const char *s, size_t n)
{
    struct h1_pool *p = k->p;
    struct req *r = k->req;
    k->now = r->last_byte_s = atr_llm_now();
    size_t used = 0;
    int rc = atr_h1_feed(&k->h1, s, n, &parse_cb, k, &used);
    if (rc == ATR_H1_MORE)
        return true;
    if (rc == ATR_H1_DONE) {
        req_end_ok(r, k->now);
        /* Reusable only when nothing follows the answer and the whole
         * request was written (a server may answer early, e.g. 413). */
        conn_release(k, used == n && k->h1.keep_alive && k->out_off == r->body.len);
    } else {
        if (rc == ATR_H1_ERR) {
            snprintf(r->detail, sizeof r->detail, "malformed HTTP response: %s", k->h1.error);
            req_fail(r, "transport", k->now);
        }
        conn_drop(k);   /* mid-answer: the connection cannot carry another */
    }
    complete(p, r);
    return false;
}

static void on_readable(evutil_socket_t fd, short kind, void *arg)
{
    struct h1_conn *k = arg;
    char *buf = k->p->buf;
    (void)kind;
    for (;;) {
        ssize_t n = recv(fd, buf, READ_BUF, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            conn_broken(k, n < 0 ? errno : 0);
            return;
        }
        if (!k->req) {
            conn_close(k);   /* bytes nobody asked for */
            return;
        }
        if (!conn_feed(k, buf, (size_t)n) || (size_t)n < READ_BUF)
            return;
    }
}

/* ---- connecting ----------------------------------------------------------------- */

/* A non-blocking connect to the address k->addr; -1 with errno when it
 * failed at once. */
static int conn_connect(struct h1_conn *k)
{
    struct h1_pool *p = k->p;
    const struct sockaddr *sa = (const struct sockaddr *)&p->addrs[k->addr];
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, sa, p->addr_len[k->addr]) < 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    k->fd = fd;
    return 0;
}

static void on_writable(evutil_socket_t fd, short kind, void *arg);

/* Connects k to the first address that takes it, from k->addr on; the
 * errno of the last failure, or 0 once a connect is under way. */
static int conn_try(struct h1_conn *k)
{
    struct h1_pool *p = k->p;
    int err = 0;
    for (; k->addr < p->n_addrs; k->addr++) {
        if (conn_connect(k) == 0) {
            event_assign(&k->rev, p->c->base, k->fd, EV_READ | EV_PERSIST, on_readable, k);
            event_assign(&k->wev, p->c->base, k->fd, EV_WRITE, on_writable, k);
            event_add(&k->wev, NULL);
            return 0;
        }
        err = errno;
    }
    return err ? err : ECONNREFUSED;
}

static void conn_open(struct h1_pool *p, struct req *r)
{
    struct h1_conn *k = xcalloc(1, sizeof *k);
    k->p = p;
    k->fd = -1;
    k->connecting = true;
    k->addr = p->good_addr;
    atr_h1_init(&k->h1);
    int err = conn_try(k);
    if (err && p->good_addr) {
        k->addr = 0;   /* the good one failed: every address again */
        err = conn_try(k);
    }
    if (err) {
        atr_h1_release(&k->h1);
        free(k);
        fail_connect(p, r, err);
        return;
    }
    p->n_conns++;
    k->req = r;
    r->conn = k;
}

/* The connect finished, or failed: then the next address, or the
 * request fails "connect". */
static void conn_connected(struct h1_conn *k)
{
    struct h1_pool *p = k->p;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err) {
        event_del(&k->wev);
        close(k->fd);
        k->addr++;
        int next = conn_try(k);
        if (next == 0)
            return;
        struct req *r = k->req;
        k->req = NULL;
        r->conn = NULL;
        atr_h1_release(&k->h1);
        free(k);
        p->n_conns--;
        fail_connect(p, r, err);
        dispatch(p);
        return;
    }
    p->good_addr = k->addr;
    k->connecting = false;
    event_add(&k->rev, NULL);
    conn_start(k, k->req);
}

static void on_writable(evutil_socket_t fd, short kind, void *arg)
{
    struct h1_conn *k = arg;
    (void)fd, (void)kind;
    if (k->connecting)
        conn_connected(k);
    else if (k->req)
        conn_write(k);
}

/* ---- limits --------------------------------------------------------------------- */

/* When r's watch must look next: the earlier of its deadline and a stall;
 * 0: never. */
static double watch_at(const struct h1_pool *p, const struct req *r)
{
    double t = p->timeout_s > 0 ? r->start_s + p->timeout_s : 0;
    if (p->c->stall_s > 0) {
        double s = r->last_byte_s + p->c->stall_s;
        if (t == 0 || s < t)
            t = s;
    }
    return t;
}

static void watch_add(struct req *r, double at, double now)
{
    double s = at - now > 0 ? at - now : 0;
    struct timeval tv = {.tv_sec = (time_t)s};
    tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6) + 1;
    evtimer_add(&r->stall_ev, &tv);
}

void h1_arm_watch(struct h1_pool *p, struct req *r)
{
    double at = watch_at(p, r);
    if (at > 0)
        watch_add(r, at, r->start_s);
}

/* Takes r out of the wait or off its connection. */
static void abandon(struct h1_pool *p, struct req *r)
{
    if (r->conn) {
        conn_drop(r->conn);
        return;
    }
    struct req **pp = &p->wait_head, *prev = NULL;
    while (*pp && *pp != r) {
        prev = *pp;
        pp = &(*pp)->qnext;
    }
    if (*pp) {
        *pp = r->qnext;
        if (p->wait_tail == r)
            p->wait_tail = prev;
        r->qnext = NULL;
    }
}

/* Armed once per request and re-armed for what is left while bytes flow,
 * so receiving costs no timer operation. */
void h1_on_watch(evutil_socket_t fd, short kind, void *arg)
{
    struct req *r = arg;
    struct h1_pool *p = r->c->h1;
    double now = atr_llm_now();
    (void)fd, (void)kind;
    if (p->timeout_s > 0 && now >= r->start_s + p->timeout_s) {
        snprintf(r->detail, sizeof r->detail, "no complete answer after %.0f ms (%zu bytes received)",
                 p->timeout_s * 1e3, r->received);
        req_fail(r, "timeout", now);
    } else if (p->c->stall_s > 0 && now >= r->last_byte_s + p->c->stall_s) {
        if (!(r->done && r->usage)) {   /* else all was said; only the body's end is missing */
            snprintf(r->detail, sizeof r->detail, "no byte for %.3f s", now - r->last_byte_s);
            req_fail(r, "stall", now);
        }
    } else {
        watch_add(r, watch_at(p, r), now);
        return;
    }
    abandon(p, r);
    complete(p, r);
}

/* ---- requests ------------------------------------------------------------------- */

void h1_send(struct h1_pool *p, struct req *r, const char *body, size_t len)
{
    struct atr_buf *b = &r->body;
    atr_buf_clear(b);
    atr_buf_reserve(b, p->head[r->api].len + len + 32);
    atr_buf_append(b, p->head[r->api].data, p->head[r->api].len);
    atr_buf_put_u64(b, len);
    atr_buf_append(b, "\r\n\r\n", 4);
    atr_buf_append(b, body, len);
    r->qnext = NULL;
    bool outer = p->in_send;
    p->in_send = true;
    h1_arm_watch(p, r);
    struct h1_conn *k = p->idle;
    if (k) {
        idle_unlink(p, k);
        conn_start(k, r);
    } else if (p->n_conns < p->max_conns) {
        conn_open(p, r);
    } else {
        if (p->wait_tail)
            p->wait_tail->qnext = r;
        else
            p->wait_head = r;
        p->wait_tail = r;
    }
    p->in_send = outer;
}

/* ---- the pool ------------------------------------------------------------------- */

struct target {
    char host[MAX_HOST];
    char port[8];
    const char *auth, *path;       /* authority and path prefix, in the URL */
    size_t auth_len, path_len;
};

/* "http://HOST[:PORT][/PREFIX]", HOST a name, an IPv4 address or [IPv6];
 * false for anything else (libcurl then carries it). */
static bool parse_target(const char *url, struct target *t)
{
    if (strncasecmp(url, "http://", 7) != 0)
        return false;
    t->auth = url + 7;
    t->auth_len = strcspn(t->auth, "/");
    t->path = t->auth + t->auth_len;
    t->path_len = strlen(t->path);
    while (t->path_len && t->path[t->path_len - 1] == '/')
        t->path_len--;
    if (!t->auth_len || memchr(t->auth, '@', t->auth_len) || strpbrk(t->path, "?# \t\r\n%") ||
        strpbrk(t->auth, " \t\r\n%?#"))
        return false;
    const char *h = t->auth, *end = t->auth + t->auth_len, *colon;
    if (*h == '[') {
        const char *close = memchr(h, ']', t->auth_len);
        if (!close)
            return false;
        h++;
        colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
        if (!colon && close + 1 != end)
            return false;
        end = close;
    } else {
        colon = memchr(h, ':', t->auth_len);
        if (colon)
            end = colon;
    }
    size_t hn = (size_t)(end - h);
    if (!hn || hn >= sizeof t->host)
        return false;
    memcpy(t->host, h, hn);
    t->host[hn] = '\0';
    const char *port = colon ? colon + 1 : "80";
    size_t pn = colon ? (size_t)(t->auth + t->auth_len - port) : 2;
    if (!pn || pn > 5 || strspn(port, "0123456789") < pn || atoi(port) > 65535 || atoi(port) == 0)
        return false;
    memcpy(t->port, port, pn);
    t->port[pn] = '\0';
    return true;
}

static bool resolve(struct h1_pool *p, const struct target *t)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    if (getaddrinfo(t->host, t->port, &hints, &res) != 0)
        return false;
    for (struct addrinfo *a = res; a && p->n_addrs < MAX_ADDRS; a = a->ai_next) {
        if (a->ai_addrlen > sizeof p->addrs[0])
            continue;
        memcpy(&p->addrs[p->n_addrs], a->ai_addr, a->ai_addrlen);
        p->addr_len[p->n_addrs++] = (socklen_t)a->ai_addrlen;
    }
    freeaddrinfo(res);
    snprintf(p->where, sizeof p->where, "%s port %s", t->host, t->port);
    return p->n_addrs > 0;
}

/* Everything of a request before its length, once per API. */
static void build_head(struct atr_buf *b, const struct target *t, const char *path,
                       const char *api_key)
{
    atr_buf_printf(b, "POST %.*s%s HTTP/1.1\r\nHost: %.*s\r\n", (int)t->path_len, t->path, path,
                   (int)t->auth_len, t->auth);
    atr_buf_puts(b, "Content-Type: application/json\r\nAccept: text/event-stream\r\n");
    if (api_key && api_key[0])
        atr_buf_printf(b, "Authorization: Bearer %s\r\n", api_key);
    atr_buf_puts(b, "Content-Length: ");
}

struct h1_pool *h1_pool_new(struct atr_llm_client *c, const char *base_url, const char *api_key,
                            size_t max_connections)
{
    const char *force = getenv("ATR_LLM_CURL");
    struct target t;
    if ((force && force[0] && strcmp(force, "0") != 0) || !parse_target(base_url, &t))
        return NULL;
    if (api_key && strpbrk(api_key, "\r\n"))
        return NULL;
    struct h1_pool *p = xcalloc(1, sizeof *p);
    p->c = c;
    p->max_conns = max_connections;
    p->timeout_s = c->timeout_ms > 0 ? (double)c->timeout_ms / 1e3 : 0;
    p->later = event_new(c->base, -1, 0, on_later, p);
    if (!p->later || !resolve(p, &t)) {
        h1_pool_free(p);
        return NULL;
    }
    build_head(&p->head[ATR_LLM_COMPLETIONS], &t, "/v1/completions", api_key);
    build_head(&p->head[ATR_LLM_CHAT], &t, "/v1/chat/completions", api_key);
    return p;
}

void h1_pool_free(struct h1_pool *p)
{
    if (!p)
        return;
    for (struct req *r = p->c->active; r; r = r->next)
        if (r->conn)
            conn_close(r->conn);
    while (p->idle)
        conn_close(p->idle);
    if (p->later)
        event_free(p->later);
    for (int i = 0; i < 2; i++)
        atr_buf_release(&p->head[i]);
    free(p);
}
