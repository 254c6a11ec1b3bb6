/* proxy.c - `atr proxy` (proxy/proxy.h): libevent's evhttp on both sides.
 *
 * One exchange per client request. Its life:
 *  1. on_request reads the client's JSON body, renders the prompt the way
 *     the chat trace readers do ("<|role|>\n" text "\n" per message) for
 *     the token estimate and the chained block hashes, names the session,
 *     asks the policy for an upstream (and a max_tokens cap), and rewrites
 *     the body where needed (stream_options.include_usage, the cap).
 *  2. send_upstream takes an idle keep-alive connection to that upstream
 *     (or makes one) and sends the request; a connection refused before
 *     any byte reached the client is retried on the next upstream.
 *  3. on_upstream_headers starts the client's reply: streams as SSE, other
 *     answers buffered (they are one JSON object) and sent whole.
 *  4. on_upstream_chunk feeds the SSE parser; each complete event is
 *     stamped (TTFT, ITL), read for usage, and written to the client at
 *     once, except the usage chunk the proxy asked for on the client's
 *     behalf. When the client's socket holds more than max_buffered bytes
 *     the upstream connection stops reading until it drains.
 *  5. on_upstream_done ends the reply (an SSE error event when the upstream
 *     died mid-stream), hands the record over and frees the exchange.
 * A client that goes away cancels the upstream request at once (its TCP
 * connection is closed, not returned to the pool). */
#include "proxy/proxy-impl.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "json/writer.h"
#include "util/accept.h"
#include "util/alloc.h"
#include "util/http.h"
#include "util/net.h"

#define MAX_IDLE_PER_UPSTREAM 1024

/* ---- small helpers --------------------------------------------------------- */

double proxy_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *reason_of(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return code < 400 ? "OK" : "Error";
    }
}

static const char *error_type(int code)
{
    switch (code) {
    case 401: return "AuthenticationError";
    case 404: return "NotFoundError";
    case 413: return "BadRequestError";
    case 502: case 503: case 504: return "ServiceUnavailableError";
    default: return code >= 500 ? "InternalServerError" : "BadRequestError";
    }
}

/* An answer's last bytes are queued: it counts as in flight until libevent
 * has written them (or the client closed), so a drain ending the event loop
 * never cuts a stream's tail. The exchange itself ends as soon as the
 * upstream does, before the client has read everything. */
static void on_reply_written(struct evhttp_request *req, void *arg)
{
    struct atr_proxy *p = arg;
    p->unwritten--;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), NULL, NULL);
}

static void on_reply_conn_closed(struct evhttp_connection *conn, void *arg)
{
    struct atr_proxy *p = arg;        /* closed first: no completion will come */
    p->unwritten--;
    evhttp_connection_set_closecb(conn, NULL, NULL);
}

void proxy_reply_ending(struct atr_proxy *p, struct evhttp_request *req)
{
    p->unwritten++;
    evhttp_request_set_on_complete_cb(req, on_reply_written, p);
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_reply_conn_closed, p);
}

/* An OpenAI-format error object as the whole answer. */
void proxy_send_error(struct atr_proxy *p, struct evhttp_request *req, int code,
                      const char *msg)
{
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_key(&w, "error");
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "message", msg);
    atr_jw_kv_str(&w, "type", error_type(code));
    atr_jw_kv_null(&w, "param");
    atr_jw_kv_int(&w, "code", code);
    atr_jw_object_end(&w);
    atr_jw_object_end(&w);
    (void)atr_jw_finish(&w);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/json");
    struct evbuffer *out = evbuffer_new();
    if (out) {
        evbuffer_add(out, b.data ? b.data : "", b.len);
        proxy_reply_ending(p, req);
        evhttp_send_reply(req, code, reason_of(code), out);
        evbuffer_free(out);
    }
    atr_buf_release(&b);
    p->m.errors_by_status[code >= 500 ? 1 : 0]++;
}

static void on_trim(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    malloc_trim(0);
}

void proxy_trim_soon(struct atr_proxy *p)
{
    if (!p->trim || evtimer_pending(p->trim, NULL))
        return;
    struct timeval tv = {p->in_flight ? 1 : 0, 0};
    evtimer_add(p->trim, &tv);
}

/* ---- upstream connections --------------------------------------------------- */

static int parse_upstream(struct upstream *u, const char *url, struct atr_error *err)
{
    const char *s = url;
    if (strncmp(s, "http://", 7) != 0)
        return atr_error_set(err, "proxy: --upstream %s: only http:// URLs are served", url);
    s += 7;
    const char *colon = strrchr(s, ':'), *slash = strchr(s, '/');
    size_t host_len = colon && (!slash || colon < slash) ? (size_t)(colon - s)
                      : slash                            ? (size_t)(slash - s)
                                                         : strlen(s);
    if (!host_len || host_len >= sizeof u->host)
        return atr_error_set(err, "proxy: --upstream %s: expected http://HOST:PORT", url);
    memcpy(u->host, s, host_len);
    u->host[host_len] = '\0';
    u->port = 80;
    if (colon && (!slash || colon < slash)) {
        char *end;
        unsigned long port = strtoul(colon + 1, &end, 10);
        if (port < 1 || port > 65535 || (*end && *end != '/'))
            return atr_error_set(err, "proxy: --upstream %s: bad port", url);
        u->port = (unsigned)port;
    }
    /* the base without a trailing "/" or "/v1": the client's path follows */
    size_t n = strlen(url);
    while (n > 7 && url[n - 1] == '/')
        n--;
    if (n > 10 && strncmp(url + n - 3, "/v1", 3) == 0)
        n -= 3;
    u->url = xstrndup(url, n);
    const char *path = slash ? slash : "";
    size_t plen = strlen(path);
    while (plen && path[plen - 1] == '/')
        plen--;
    if (plen >= 3 && strncmp(path + plen - 3, "/v1", 3) == 0)
        plen -= 3;
    u->prefix = xstrndup(path, plen);
    return 0;
}

struct evhttp_connection *proxy_conn_get(struct atr_proxy *p, struct upstream *u, bool fresh,
                                         bool *pooled)
{
    *pooled = !fresh && u->n_idle;
    if (*pooled)
        return u->idle[--u->n_idle];
    struct evhttp_connection *c = evhttp_connection_base_new(p->base, NULL, u->host,
                                                             (unsigned short)u->port);
    if (!c)
        return NULL;
    struct timeval tv = {(time_t)p->cfg.idle_timeout_s,
                         (suseconds_t)((p->cfg.idle_timeout_s - floor(p->cfg.idle_timeout_s)) * 1e6)};
    evhttp_connection_set_timeout_tv(c, &tv);
    evhttp_connection_set_retries(c, 0);
    return c;
}

/* A connection whose request ended cleanly goes back to the pool. */
void proxy_conn_put(struct upstream *u, struct evhttp_connection *c)
{
    if (u->n_idle == MAX_IDLE_PER_UPSTREAM) {
        evhttp_connection_free(c);
        return;
    }
    if (u->n_idle == u->cap_idle) {
        u->cap_idle = u->cap_idle ? u->cap_idle * 2 : 16;
        u->idle = xreallocarray(u->idle, u->cap_idle, sizeof *u->idle);
    }
    u->idle[u->n_idle++] = c;
}

/* ---- the server ------------------------------------------------------------- */

static bool bad_path(const char *uri)
{
    const char *path = uri;
    size_t len = strcspn(path, "?");
    if (len == 0 || path[0] != '/')
        return true;
    for (size_t i = 0; i + 1 < len; i++) {
        if (path[i] == '.' && path[i + 1] == '.' && (i == 0 || path[i - 1] == '/') &&
            (i + 2 == len || path[i + 2] == '/'))
            return true;
        if (path[i] == '%' && i + 2 < len && path[i + 1] == '0' && path[i + 2] == '0')
            return true;
        if (path[i] == '%' && i + 2 < len && path[i + 1] == '2' &&
            (path[i + 2] == 'e' || path[i + 2] == 'E'))
            return true;     /* an encoded dot: ".." by another name */
    }
    return false;
}

/* Constant time in the length of the expected key. */
static bool key_matches(const char *got, const char *want)
{
    size_t n = strlen(want), m = got ? strlen(got) : 0;
    unsigned char diff = (unsigned char)(n != m);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(want[i] ^ (i < m ? got[i] : 0));
    return diff == 0;
}

static bool authorized(const struct atr_proxy *p, struct evhttp_request *req)
{
    if (!p->cfg.client_key)
        return true;
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    return key_matches(h + 7, p->cfg.client_key);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct atr_proxy *p = arg;
    atr_accept_guard_request(p->accept_guard, req);
    const char *uri = evhttp_request_get_uri(req);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const char *bad = atr_http_framing_error(req);
    if (bad) {                  /* before anything is forwarded upstream */
        proxy_send_error(p, req, 400, bad);
        return;
    }
    if (!uri || bad_path(uri)) {
        proxy_send_error(p, req, 400, "bad request path");
        return;
    }
    size_t plen = strcspn(uri, "?");
    if (plen == 8 && strncmp(uri, "/healthz", 8) == 0) {
        struct evbuffer *out = evbuffer_new();
        evbuffer_add(out, "ok\n", 3);
        evhttp_send_reply(req, p->draining ? 503 : 200, p->draining ? "Draining" : "OK", out);
        evbuffer_free(out);
        return;
    }
    if (plen == 8 && strncmp(uri, "/metrics", 8) == 0) {
        proxy_send_metrics(p, req);
        return;
    }
    if (plen == 8 && strncmp(uri, "/records", 8) == 0 && cmd == EVHTTP_REQ_GET) {
        if (!authorized(p, req))      /* session ids and times: the clients' key */
            proxy_send_error(p, req, 401, "missing or wrong API key (Authorization: Bearer KEY)");
        else
            proxy_feed_open(&p->feed, req);
        return;
    }
    if (p->draining) {
        proxy_send_error(p, req, 503, "the proxy is shutting down");
        return;
    }
    if (!authorized(p, req)) {
        proxy_send_error(p, req, 401, "missing or wrong API key (Authorization: Bearer KEY)");
        return;
    }
    if (p->in_flight >= p->cfg.max_connections) {
        proxy_send_error(p, req, 503, "too many requests in flight");
        return;
    }
    bool chat = plen == 20 && strncmp(uri, "/v1/chat/completions", 20) == 0;
    bool compl = plen == 15 && strncmp(uri, "/v1/completions", 15) == 0;
    if ((chat || compl) && cmd != EVHTTP_REQ_POST) {
        proxy_send_error(p, req, 405, "use POST");
        return;
    }
    if (chat || compl)
        proxy_llm_request(p, req, chat);
    else if (plen == 10 && strncmp(uri, "/v1/models", 10) == 0 && cmd == EVHTTP_REQ_GET)
        proxy_models_request(p, req);
    else
        proxy_pass_request(p, req);
}

void atr_proxy_session_seen(struct atr_proxy *p, const char *session, size_t len, uint64_t turn)
{
    proxy_session_seen(&p->sessions, session, len, turn);
}

int atr_proxy_listen(struct atr_proxy *p, struct atr_error *err)
{
    const char *host = p->cfg.host ? p->cfg.host : "127.0.0.1";
    int fd = atr_net_listen("proxy", host, p->cfg.port, &p->port, err);
    if (fd < 0)
        return -1;
    p->listener = evhttp_accept_socket_with_handle(p->http, fd);
    if (!p->listener) {
        close(fd);
        return atr_error_set(err, "proxy: cannot accept on %s", host);
    }
    p->accept_guard = atr_accept_guard_new(p->base, p->listener, "proxy", p->cfg.on_warn,
                                           p->cfg.ctx);
    atr_accept_guard_deadline(p->accept_guard, p->http, p->cfg.idle_timeout_s);
    atr_accept_guard_cap(p->accept_guard, p->http, p->cfg.max_client_connections ?
                         p->cfg.max_client_connections : atr_accept_default_cap(2));
    atr_accept_guard_max_request(p->accept_guard, p->cfg.max_body + p->cfg.max_headers + 4096);
    return 0;
}

unsigned atr_proxy_port(const struct atr_proxy *p)
{
    return p->port;
}

void atr_proxy_drain(struct atr_proxy *p)
{
    p->draining = true;
    atr_accept_guard_free(p->accept_guard);   /* before its listener */
    p->accept_guard = NULL;
    if (p->listener) {
        evhttp_del_accept_socket(p->http, p->listener);   /* new connections refused */
        p->listener = NULL;
    }
}

size_t atr_proxy_in_flight(const struct atr_proxy *p)
{
    return p->in_flight + p->unwritten;
}

static void set_defaults(struct atr_proxy_cfg *c)
{
    if (!c->max_body)
        c->max_body = 16u << 20;
    if (!c->max_headers)
        c->max_headers = 64u << 10;
    if (!c->max_connections)
        c->max_connections = 4096;
    if (c->first_byte_timeout_s <= 0)
        c->first_byte_timeout_s = 600;
    if (c->idle_timeout_s <= 0)
        c->idle_timeout_s = 120;
    if (!c->max_buffered)
        c->max_buffered = 256u << 10;
    if (!c->session_header)
        c->session_header = "X-Session-Id";
}

struct atr_proxy *atr_proxy_new(struct event_base *base, const struct atr_proxy_cfg *cfg,
                                struct atr_error *err)
{
    if (!cfg->n_upstreams)
        return atr_error_set(err, "proxy: no upstream (--upstream URL)"), NULL;
    struct atr_proxy *p = xcalloc(1, sizeof *p);
    p->base = base;
    p->cfg = *cfg;
    set_defaults(&p->cfg);
    p->n_up = cfg->n_upstreams;
    for (size_t i = 0; i < p->n_up; i++)
        if (parse_upstream(&p->up[i], cfg->upstreams[i], err) < 0) {
            atr_proxy_free(p);
            return NULL;
        }
    struct atr_policy_cfg pc = {.n_replicas = (unsigned)p->n_up, .block_size = PROXY_BLOCK,
                                .options = cfg->policy_options};
    p->policy = atr_policy_new(cfg->policy ? cfg->policy : "naive", &pc, err);
    p->http = evhttp_new(base);
    p->trim = evtimer_new(base, on_trim, p);
    if (!p->policy || !p->http) {
        if (p->policy && !p->http)
            atr_error_set(err, "proxy: cannot create the HTTP server");
        atr_proxy_free(p);
        return NULL;
    }
    struct timeval idle = {(time_t)p->cfg.idle_timeout_s, 0};
    evhttp_set_timeout_tv(p->http, &idle);
    evhttp_set_max_body_size(p->http, (ev_ssize_t)p->cfg.max_body);
    evhttp_set_max_headers_size(p->http, (ev_ssize_t)p->cfg.max_headers);
    evhttp_set_allowed_methods(p->http, 0x1ff);
    evhttp_set_gencb(p->http, on_request, p);
    proxy_sessions_init(&p->sessions, cfg->max_sessions, cfg->session_ttl_s);
    return p;
}

void atr_proxy_free(struct atr_proxy *p)
{
    if (!p)
        return;
    while (p->exchanges)
        proxy_exchange_abort(p->exchanges);
    proxy_feed_release(&p->feed);
    atr_accept_guard_free(p->accept_guard);
    if (p->http)
        evhttp_free(p->http);
    for (size_t i = 0; i < p->n_up; i++) {
        for (size_t k = 0; k < p->up[i].n_idle; k++)
            evhttp_connection_free(p->up[i].idle[k]);
        free(p->up[i].idle);
        free(p->up[i].url);
        free(p->up[i].prefix);
    }
    atr_policy_free(p->policy);
    proxy_sessions_release(&p->sessions);
    if (p->trim)
        event_free(p->trim);
    free(p);
}
