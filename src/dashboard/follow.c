/* follow.c - `atr dashboard --proxy URL`: follows a running `atr proxy`'s
 * GET /records (server-sent events, one journal line each, as they are
 * journaled) on the dashboard's loop, feeding the run "proxy URL"; a feed
 * that fails or ends is asked for again every RETRY_S seconds. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "dashboard/dash-impl.h"
#include "util/alloc.h"

#define RETRY_S 2
#define PENDING_MAX (DASH_MAX_LINE + 64)   /* an event longer than this is dropped */

struct dash_follow {
    struct event_base *base;
    struct dash_runs *runs;
    char *rel;                 /* "proxy URL" */
    char *host, *path;
    int port;
    struct evhttp_connection *conn;
    struct evhttp_request *req;      /* in flight, NULL between tries */
    struct event *retry;
    struct atr_buf pending;          /* bytes of an event not yet whole */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The whole lines of pending: each "data: " line is a record. */
static void take_lines(struct dash_follow *f)
{
    size_t at = 0;
    char *nl;
    double now = now_s();
    while ((nl = memchr(f->pending.data + at, '\n', f->pending.len - at))) {
        const char *line = f->pending.data + at;
        size_t n = (size_t)(nl - line);
        if (n > 6 && memcmp(line, "data: ", 6) == 0)
            dash_runs_feed(f->runs, f->rel, line + 6, n - 6, now);
        at += n + 1;
    }
    memmove(f->pending.data, f->pending.data + at, f->pending.len - at);
    f->pending.len -= at;
    if (f->pending.len >= PENDING_MAX)
        f->pending.len = 0;        /* no newline in sight: drop it */
}

static void on_chunk(struct evhttp_request *req, void *arg)
{
    struct dash_follow *f = arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    atr_buf_reserve(&f->pending, n);
    evbuffer_remove(in, f->pending.data + f->pending.len, n);
    f->pending.len += n;
    dash_runs_feed_state(f->runs, f->rel, true);
    take_lines(f);
}

static void ask(struct dash_follow *f);

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    ask(arg);
}

/* The feed ended or never began: try again in a while. */
static void on_done(struct evhttp_request *req, void *arg)
{
    struct dash_follow *f = arg;
    f->req = NULL;
    f->pending.len = 0;
    dash_runs_feed_state(f->runs, f->rel, false);
    struct timeval tv = {RETRY_S, 0};
    event_add(f->retry, &tv);
}

static void ask(struct dash_follow *f)
{
    f->req = evhttp_request_new(on_done, f);
    evhttp_request_set_chunked_cb(f->req, on_chunk);
    struct evkeyvalq *h = evhttp_request_get_output_headers(f->req);
    evhttp_add_header(h, "Host", f->host);
    evhttp_add_header(h, "Accept", "text/event-stream");
    if (evhttp_make_request(f->conn, f->req, EVHTTP_REQ_GET, f->path) < 0) {
        f->req = NULL;             /* libevent freed it */
        on_done(NULL, f);
    }
}

struct dash_follow *dash_follow_new(struct event_base *base, struct dash_runs *runs,
                                    const char *url, struct atr_error *err)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    if (!scheme || strcmp(scheme, "http") != 0 || !host || !*host) {
        if (u)
            evhttp_uri_free(u);
        atr_error_set(err, "--proxy wants http://HOST:PORT, not '%s'", url);
        return NULL;
    }
    struct dash_follow *f = xcalloc(1, sizeof *f);
    f->base = base;
    f->runs = runs;
    f->rel = xasprintf("proxy %s", url);
    f->host = xstrdup(host);
    f->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 80;
    const char *path = evhttp_uri_get_path(u);
    size_t plen = path ? strlen(path) : 0;
    while (plen && path[plen - 1] == '/')
        plen--;
    f->path = xasprintf("%.*s/records", (int)plen, path ? path : "");
    evhttp_uri_free(u);
    f->conn = evhttp_connection_base_new(base, NULL, f->host, (unsigned short)f->port);
    evhttp_connection_set_timeout(f->conn, 86400);   /* a quiet proxy sends nothing */
    f->retry = evtimer_new(base, on_retry, f);
    dash_runs_feed_state(runs, f->rel, false);
    ask(f);
    return f;
}

void dash_follow_free(struct dash_follow *f)
{
    if (!f)
        return;
    if (f->req)
        evhttp_cancel_request(f->req);
    evhttp_connection_free(f->conn);
    event_free(f->retry);
    atr_buf_release(&f->pending);
    free(f->rel);
    free(f->host);
    free(f->path);
    free(f);
}
