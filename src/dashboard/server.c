/* server.c - the dashboard's HTTP side on libevent's evhttp: GET / (the
 * page), /runs.json (the run list) and /events (server-sent events: the
 * run list's rows again whenever they change, and the CDFs of the run the
 * stream's ?run= names whenever its records change, at most 4 times a
 * second), nothing else. Read-only,
 * bound to loopback unless told otherwise (then every request carries the
 * token), a cap on connections and on event streams, and a stream whose
 * client stops reading is dropped rather than buffered without end. */
#include <arpa/inet.h>
#include <sys/queue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "dashboard/dash-impl.h"
#include "dashboard/dashboard.h"
#include "util/accept.h"
#include "util/alloc.h"
#include "util/net.h"

#define DEFAULT_CLIENTS 1024
#define CLIENT_BACKLOG ((size_t)4 << 20)   /* unsent bytes past which a stream is dropped */
#define HEARTBEAT_S 15.0
#define CDF_EVERY_S 0.25                   /* a run's CDF sent at most 4 times a second */
#define CDF_SHARED 8                       /* distinct selected runs rendered per tick; the rest next time */

/* An event's bytes, shared by every stream it is queued on (libevent
 * references, not copies): 1000 streams cost one copy of an event. */
struct shared_event {
    unsigned refs;
    size_t len;
    char data[];
};

static struct shared_event *shared_new(const char *text, size_t len)
{
    struct shared_event *e = xmalloc(sizeof *e + len);
    e->refs = 1;
    e->len = len;
    memcpy(e->data, text, len);
    return e;
}

static void shared_unref(struct shared_event *e)
{
    if (--e->refs == 0)
        free(e);
}

struct dash_client {
    struct atr_dash *d;
    struct evhttp_request *req;
    struct dash_client *prev, *next;
    char *sel;               /* the run whose CDFs it follows (?run=), or NULL */
    uint64_t sel_gen;        /* that run's gen when they were last sent; 0: never */
};

/* Report sections the page gets again, whole, when their inputs change
 * (the run list and CDFs have their own events): the Bench section from
 * the bench folders, the Router lab from the other report inputs (router
 * models and evaluations, and the traces its decisions are drawn for). */
enum { N_FRAGS = 2 };
static const struct {
    const char *id;          /* the section's id and the event's name */
    enum dash_kind kind;
} frags[N_FRAGS] = {{"bench", DASH_BENCH}, {"router", DASH_OTHER}};

struct atr_dash {
    struct event_base *base;
    struct atr_dash_cfg cfg;
    char *host;
    char token[33];
    struct dash_runs runs;
    struct evhttp *http;
    struct atr_accept_guard *guard;
    struct event *tick;
    unsigned port;
    struct dash_client *clients;
    unsigned n_clients;
    uint64_t sent_version, status_sig;
    double last_send, last_cdf;
    /* Per report section sent again when its inputs change (frags[]):
     * the inputs' gens when it was last built, and that event, for
     * streams that open later (or NULL). */
    uint64_t frag_sig[N_FRAGS];
    struct shared_event *frag[N_FRAGS];
    struct shared_event *rows;       /* the rows last sent, as one event */
    struct dash_follow *follow;      /* --proxy, or NULL */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

bool atr_dash_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (strcmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* ---- event streams ---- */

static void client_unlink(struct dash_client *c)
{
    struct atr_dash *d = c->d;
    if (c->prev)
        c->prev->next = c->next;
    else
        d->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    d->n_clients--;
    free(c->sel);
}

/* The client left mid-stream. libevent detaches an unfinished reply from
 * its connection before this runs and leaves the request to us (as
 * serve/server.c's on_conn_close also finds). */
static void on_client_close(struct evhttp_connection *evcon, void *arg)
{
    struct dash_client *c = arg;
    if (!evhttp_request_get_connection(c->req))
        evhttp_request_free(c->req);
    client_unlink(c);
    free(c);
}

static void client_drop(struct dash_client *c)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
    client_unlink(c);
    evhttp_connection_set_closecb(evcon, NULL, NULL);
    evhttp_connection_free(evcon);
    free(c);
}

static size_t client_backlog(struct dash_client *c)
{
    struct bufferevent *bev =
        evhttp_connection_get_bufferevent(evhttp_request_get_connection(c->req));
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}


static void on_sent(const void *data, size_t len, void *arg)
{
    shared_unref(arg);
}

/* One event to one client; false when it was dropped for not reading. */
static bool client_send(struct dash_client *c, struct shared_event *e)
{
    if (client_backlog(c) > CLIENT_BACKLOG) {
        client_drop(c);
        return false;
    }
    struct evbuffer *eb = evbuffer_new();
    e->refs++;
    if (evbuffer_add_reference(eb, e->data, e->len, on_sent, e) < 0)
        shared_unref(e);
    evhttp_send_reply_chunk(c->req, eb);
    evbuffer_free(eb);
    return true;
}

/* The rows as one "runs" event: a data: line per line of HTML. */
static void render_event(struct atr_dash *d, double now)
{
    struct atr_buf html = ATR_BUF_INIT, ev = ATR_BUF_INIT;
    dash_view_rows(&html, &d->runs, now);
    atr_buf_printf(&ev, "id: %llu\nevent: runs\n", (unsigned long long)d->runs.version);
    const char *p = html.data ? html.data : "";
    for (const char *nl; (nl = strchr(p, '\n')); p = nl + 1)
        atr_buf_printf(&ev, "data: %.*s\n", (int)(nl - p), p);
    atr_buf_printf(&ev, "data: %s\n\n", p);
    if (d->rows)
        shared_unref(d->rows);
    d->rows = shared_new(ev.data, ev.len);
    atr_buf_release(&html);
    atr_buf_release(&ev);
}

static void broadcast(struct atr_dash *d, struct shared_event *e);

/* The gens of the inputs of kind (positions too: one added or gone
 * changes it). */
static uint64_t inputs_signature(const struct dash_runs *r, enum dash_kind kind)
{
    uint64_t sig = 1469598103934665603ull;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].kind == kind)
            sig = (sig ^ r->v[i].gen ^ ((uint64_t)i << 40)) * 1099511628211ull;
    return sig;
}

/* Section k again when its inputs changed: an event named as the
 * section, a data: line per line of its HTML. */
static void send_fragment(struct atr_dash *d, size_t k)
{
    uint64_t sig = inputs_signature(&d->runs, frags[k].kind);
    if (sig == d->frag_sig[k])
        return;
    d->frag_sig[k] = sig;
    struct atr_buf html = ATR_BUF_INIT, ev = ATR_BUF_INIT;
    if (dash_view_fragment(&html, &d->runs, frags[k].kind, frags[k].id) == 0) {
        atr_buf_printf(&ev, "id: %llu\nevent: %s\n", (unsigned long long)d->runs.version,
                       frags[k].id);
        const char *p = html.data;
        for (const char *nl; (nl = strchr(p, '\n')); p = nl + 1)
            atr_buf_printf(&ev, "data: %.*s\n", (int)(nl - p), p);
        atr_buf_printf(&ev, "data: %s\n\n", p);
        if (d->frag[k])
            shared_unref(d->frag[k]);
        d->frag[k] = shared_new(ev.data, ev.len);
        broadcast(d, d->frag[k]);
    }
    atr_buf_release(&html);
    atr_buf_release(&ev);
}

/* A "cdf" event for run, one line of JSON (no newline inside). */
static struct shared_event *cdf_event(struct atr_dash *d, struct dash_run *run, double now)
{
    struct atr_buf json = ATR_BUF_INIT, ev = ATR_BUF_INIT;
    dash_view_cdf(&json, &d->runs, run, now);
    atr_buf_printf(&ev, "event: cdf\ndata: %s\n\n", json.data ? json.data : "{}");
    struct shared_event *e = shared_new(ev.data, ev.len);
    atr_buf_release(&json);
    atr_buf_release(&ev);
    return e;
}

static struct dash_run *run_named(struct dash_runs *r, const char *rel)
{
    for (size_t i = 0; rel && i < r->n; i++)
        if (strcmp(r->v[i].rel, rel) == 0)
            return &r->v[i];
    return NULL;
}

/* Each client whose run's records changed since its last CDF gets the new
 * one; clients of the same run share one rendering. */
static void send_cdfs(struct atr_dash *d, double now)
{
    struct { struct dash_run *run; struct shared_event *e; } cache[CDF_SHARED];
    size_t n = 0;
    for (struct dash_client *c = d->clients, *next; c; c = next) {
        next = c->next;
        struct dash_run *run = run_named(&d->runs, c->sel);
        if (!run || run->gen == c->sel_gen)
            continue;
        size_t k = 0;
        while (k < n && cache[k].run != run)
            k++;
        if (k == n) {
            if (n == CDF_SHARED)
                continue;
            cache[n].run = run;
            cache[n++].e = cdf_event(d, run, now);
        }
        uint64_t gen = run->gen;
        if (client_send(c, cache[k].e))
            c->sel_gen = gen;
    }
    for (size_t k = 0; k < n; k++)
        shared_unref(cache[k].e);
}

static void broadcast(struct atr_dash *d, struct shared_event *e)
{
    for (struct dash_client *c = d->clients, *next; c; c = next) {
        next = c->next;
        client_send(c, e);
    }
}

/* A fold of every run's status: time alone turns a running run into a
 * stopped one, and that must reach the page too. */
static uint64_t status_signature(struct atr_dash *d, double now)
{
    uint64_t sig = 1469598103934665603ull;
    for (size_t i = 0; i < d->runs.n; i++)
        sig = (sig ^ (uint64_t)dash_run_status(&d->runs, &d->runs.v[i], now)) * 1099511628211ull;
    return sig;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct atr_dash *d = arg;
    double now = now_s();
    dash_runs_scan(&d->runs, now);
    uint64_t sig = status_signature(d, now);
    if (d->runs.version != d->sent_version || sig != d->status_sig) {
        if (d->runs.version == d->sent_version)
            d->runs.version++;        /* a new id for the status change */
        render_event(d, now);
        broadcast(d, d->rows);
        d->sent_version = d->runs.version;
        d->status_sig = sig;
        d->last_send = now;
    }
    if (now - d->last_cdf >= CDF_EVERY_S) {
        send_cdfs(d, now);
        for (size_t k = 0; k < N_FRAGS; k++)
            send_fragment(d, k);
        d->last_cdf = now;
    }
    if (now - d->last_send > HEARTBEAT_S) {
        struct shared_event *alive = shared_new(": alive\n\n", 10);
        broadcast(d, alive);
        shared_unref(alive);
        d->last_send = now;
    }
}

/* ---- requests ---- */

static void common_headers(struct evhttp_request *req, const char *type)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    evhttp_add_header(h, "Content-Security-Policy",
                      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                      "img-src data:; connect-src 'self'; frame-ancestors 'none'");
}

static void reply(struct evhttp_request *req, int code, const char *type, const char *text,
                  size_t len)
{
    common_headers(req, type);
    struct evbuffer *eb = evbuffer_new();
    evbuffer_add(eb, text, len);
    evhttp_send_reply(req, code, code == 200 ? "OK" : "Error", eb);
    evbuffer_free(eb);
}

static void reply_text(struct evhttp_request *req, int code, const char *text)
{
    reply(req, code, "text/plain; charset=utf-8", text, strlen(text));
}

/* Constant time in the token's length: a wrong guess says nothing about
 * how much of it was right. */
static bool token_ok(const struct atr_dash *d, const struct evhttp_uri *uri)
{
    if (!d->token[0])
        return true;
    const char *q = evhttp_uri_get_query(uri);
    struct evkeyvalq params;
    TAILQ_INIT(&params);
    if (!q || evhttp_parse_query_str(q, &params) < 0)
        return false;
    const char *t = evhttp_find_header(&params, "token");
    bool ok = t && strlen(t) == strlen(d->token);
    unsigned diff = 0;
    for (size_t i = 0; ok && i < strlen(d->token); i++)
        diff |= (unsigned char)(t[i] ^ d->token[i]);
    evhttp_clear_headers(&params);
    return ok && diff == 0;
}

/* The run= of the query (decoded), malloc'd, or NULL. */
static char *query_run(const struct evhttp_uri *uri)
{
    const char *q = uri ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq params;
    TAILQ_INIT(&params);
    if (!q || evhttp_parse_query_str(q, &params) < 0)
        return NULL;
    const char *run = evhttp_find_header(&params, "run");
    char *out = run ? xstrdup(run) : NULL;
    evhttp_clear_headers(&params);
    return out;
}

static void serve_events(struct atr_dash *d, struct evhttp_request *req)
{
    unsigned max = d->cfg.max_clients ? d->cfg.max_clients : DEFAULT_CLIENTS;
    if (d->n_clients >= max) {
        reply_text(req, 503, "too many event streams open\n");
        return;
    }
    struct dash_client *c = xcalloc(1, sizeof *c);
    *c = (struct dash_client){.d = d, .req = req, .next = d->clients};
    if (d->clients)
        d->clients->prev = c;
    d->clients = c;
    d->n_clients++;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_close, c);
    common_headers(req, "text/event-stream");
    evhttp_send_reply_start(req, 200, "OK");
    c->sel = query_run(evhttp_request_get_evhttp_uri(req));
    static const char retry[] = "retry: 2000\n\n";
    struct shared_event *first = shared_new(retry, sizeof retry - 1);
    struct dash_run *run = run_named(&d->runs, c->sel);
    /* the sections as last rebuilt: the page may be older than they */
    bool ok = client_send(c, first) && client_send(c, d->rows);
    for (size_t k = 0; ok && k < N_FRAGS; k++)
        ok = !d->frag[k] || client_send(c, d->frag[k]);
    if (ok && run) {
        struct shared_event *cdf = cdf_event(d, run, now_s());   /* at once: the page draws it */
        if (client_send(c, cdf))
            c->sel_gen = run->gen;
        shared_unref(cdf);
    }
    shared_unref(first);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct atr_dash *d = arg;
    atr_accept_guard_request(d->guard, req);
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_HEAD) {
        reply_text(req, 405, "read-only: GET only\n");
        return;
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!uri || !token_ok(d, uri)) {
        reply_text(req, 403, "forbidden: open the URL the dashboard printed, with its token\n");
        return;
    }
    double now = now_s();
    struct atr_buf b = ATR_BUF_INIT;
    if (path && strcmp(path, "/") == 0) {
        if (dash_view_page(&b, &d->runs, now) < 0)
            reply_text(req, 500, "out of memory\n");
        else
            reply(req, 200, "text/html; charset=utf-8", b.data, b.len);
    } else if (path && strcmp(path, "/runs.json") == 0) {
        dash_view_json(&b, &d->runs, now, d->n_clients);
        reply(req, 200, "application/json", b.data, b.len);
    } else if (path && strcmp(path, "/events") == 0) {
        serve_events(d, req);
    } else {
        reply_text(req, 404, "not found\n");
    }
    atr_buf_release(&b);
}

/* ---- life cycle ---- */

static void make_token(char out[33])
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        abort();                 /* no entropy: never serve a guessable token */
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
}

struct atr_dash *atr_dash_new(struct event_base *base, const struct atr_dash_cfg *cfg,
                              struct atr_error *err)
{
    struct atr_dash *d = xcalloc(1, sizeof *d);
    d->base = base;
    d->cfg = *cfg;
    d->host = xstrdup(cfg->host ? cfg->host : "127.0.0.1");
    if (cfg->token)
        make_token(d->token);
    if (dash_runs_init(&d->runs, cfg->roots, cfg->n_roots, cfg->idle_s, err) < 0) {
        atr_dash_free(d);
        return NULL;
    }
    d->cfg.roots = NULL;          /* not kept: the real paths are */
    if (cfg->proxy && !(d->follow = dash_follow_new(base, &d->runs, cfg->proxy, err))) {
        atr_dash_free(d);
        return NULL;
    }
    d->cfg.proxy = NULL;
    double now = now_s();
    dash_runs_scan(&d->runs, now);
    d->status_sig = status_signature(d, now);
    for (size_t k = 0; k < N_FRAGS; k++)    /* the page has this state */
        d->frag_sig[k] = inputs_signature(&d->runs, frags[k].kind);
    render_event(d, now);
    d->sent_version = d->runs.version;
    return d;
}

static void warn_line(void *ctx, const char *line)
{
    struct atr_dash *d = ctx;
    if (d->cfg.warn)
        d->cfg.warn(d->cfg.warn_ctx, line);
}

int atr_dash_listen(struct atr_dash *d, struct atr_error *err)
{
    int fd = atr_net_listen("dashboard", d->host, d->cfg.port, &d->port, err);
    if (fd < 0)
        return -1;
    d->http = evhttp_new(d->base);
    struct evhttp_bound_socket *bound = d->http ? evhttp_accept_socket_with_handle(d->http, fd)
                                                : NULL;
    if (!bound) {
        close(fd);
        return atr_error_set(err, "dashboard: cannot accept on %s", d->host);
    }
    evhttp_set_allowed_methods(d->http, 0x1ff);    /* every method: we answer 405 */
    evhttp_set_max_headers_size(d->http, 16 << 10);
    evhttp_set_max_body_size(d->http, 1 << 10);
    struct timeval tv = {3600, 0};
    evhttp_set_timeout_tv(d->http, &tv);
    evhttp_set_gencb(d->http, on_request, d);
    unsigned max = d->cfg.max_clients ? d->cfg.max_clients : DEFAULT_CLIENTS;
    d->guard = atr_accept_guard_new(d->base, bound, "dashboard", warn_line, d);
    atr_accept_guard_deadline(d->guard, d->http, 10);
    atr_accept_guard_cap(d->guard, d->http, max + 64);
    d->tick = event_new(d->base, -1, EV_PERSIST, on_tick, d);
    unsigned ms = d->cfg.poll_ms ? d->cfg.poll_ms : 500;
    struct timeval every = {ms / 1000, (ms % 1000) * 1000};
    event_add(d->tick, &every);
    return 0;
}

unsigned atr_dash_port(const struct atr_dash *d)
{
    return d->port;
}

const char *atr_dash_token(const struct atr_dash *d)
{
    return d->token;
}

void atr_dash_free(struct atr_dash *d)
{
    if (!d)
        return;
    while (d->clients)
        client_drop(d->clients);
    dash_follow_free(d->follow);
    if (d->tick)
        event_free(d->tick);
    atr_accept_guard_free(d->guard);
    if (d->http)
        evhttp_free(d->http);
    dash_runs_release(&d->runs);
    if (d->rows)
        shared_unref(d->rows);
    for (size_t k = 0; k < N_FRAGS; k++)
        if (d->frag[k])
            shared_unref(d->frag[k]);
    free(d->host);
    free(d);
}
