/* client.c - OpenAI-compatible streaming client: what every request shares
 * (reading the answer, deciding how it ended, handing the result over;
 * declared in client-int.h) and the libcurl transport. Plain http://
 * targets go through llm/h1conn.c instead; libcurl carries the rest.
 *
 * libcurl's multi-socket interface is driven by the caller's libevent loop.
 *
 * curl tells us which sockets to watch (on_curl_socket) and when to call it
 * back (on_curl_timer); libevent tells curl when a socket is ready
 * (on_socket_event) or the timer expired (on_timer), and after each action
 * finished transfers are collected from curl_multi_info_read. Easy handles
 * are kept on a free list with their options and buffers, so a request
 * costs no allocation once the client is warm, and curl keeps connections
 * alive in the multi handle's pool.
 *
 * The pool is split into lanes of at most LANE_CONNECTIONS, one multi
 * handle each, all on the same loop: libcurl 7.88 finds a connection for a
 * new request by walking its pool's list past the busy ones, so with every
 * one of 1024 connections busy (all requests due at once) that walk was
 * the largest cost of a request: 20 000 requests at once on loopback took
 * 57 us of CPU each with one pool of 1024, 33 us with a pool of 256 and
 * 38 us with 16 lanes of 64. A request goes to the lane with the fewest
 * in flight; with fewer than the pool in flight that lane has a free
 * connection, so libcurl never queues a request itself.
 *
 * A request fails with the first reason seen: the write callback records it
 * and returns 0 so curl aborts the transfer, the stall timer removes the
 * transfer itself; both paths end in req_finish(). */
#include "llm/client.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm/client-int.h"
#include "util/alloc.h"

enum {
    DETAIL_BODY = 200,                 /* bytes of a non-200 body kept in detail */
    ERROR_BODY = 4096,                 /* bytes of a non-200 body kept to read its message */
    DEFAULT_MAX_RESPONSE = 64 << 20,
    SSE_MAX_LINE = 1 << 20,            /* one SSE line or event's data */
    FIRST_CHUNKS = 64,
    KEEP_BUFFER = 1 << 20,             /* larger buffers are not kept for reuse */
    LANE_CONNECTIONS = 64,
};

/* atr_sse_feed callback results that stop the stream. */
enum { EVENT_BAD = 1, EVENT_ERROR = 2 };

struct sock {
    struct lane *lane;
    struct event ev;
    short kind;                        /* libevent flags now registered */
    struct sock *prev, *next;
};

double atr_llm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- finishing a request ---------------------------------------------------- */

void req_fail(struct req *r, const char *reason, double now)
{
    if (r->reason)
        return;
    r->reason = reason;
    r->end_s = now;
}

void req_set_detail(struct req *r, const char *s)
{
    snprintf(r->detail, sizeof r->detail, "%s", s);
}

/* The server's own message when the error body is an OpenAI-style
 * {"error": {"message": ...}} object (vLLM, SGLang, llama-server: "request
 * (600 tokens) exceeds the available context size (256 tokens)"). */
static bool error_message(struct req *r)
{
    struct atr_sse_payload pl;
    if (!r->resp.len || r->resp.data[0] != '{')
        return false;
    int rc = atr_sse_payload_parse(&r->c->arena, r->resp.data, r->resp.len, &pl);
    atr_arena_clear(&r->c->arena);
    if (rc < 0 || !pl.error)
        return false;
    req_set_detail(r, pl.detail);
    return true;
}

static void fail_http(struct req *r, double now)
{
    if (r->reason)
        return;
    snprintf(r->reason_buf, sizeof r->reason_buf, "http %d", r->status);
    req_fail(r, r->reason_buf, now);
    if (error_message(r))
        return;
    /* Else the head of the body, on one line, cut at a UTF-8 boundary. */
    size_t n = r->resp.len < DETAIL_BODY ? r->resp.len : DETAIL_BODY;
    if (r->resp.len > DETAIL_BODY) {
        while (n && ((unsigned char)r->resp.data[n] & 0xC0) == 0x80)
            n--;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = r->resp.data[i];
        r->detail[i] = (unsigned char)ch < 0x20 ? ' ' : ch;
    }
    r->detail[n] = '\0';
}

/* No connection: the system's reason first ("Connection refused"), then
 * curl's text, which names the address and port. */
static void set_unreachable_detail(struct req *r, CURLcode rc)
{
    long os_errno = 0;
    curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &os_errno);
    const char *curl = r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc);
    if (os_errno)
        snprintf(r->detail, sizeof r->detail, "the server is not reachable: %s (%.200s)",
                 strerror((int)os_errno), curl);
    else
        snprintf(r->detail, sizeof r->detail, "the server is not reachable (%.200s)", curl);
}

static void unlink_active(struct atr_llm_client *c, struct req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        c->active = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

/* A handle on the free list keeps its buffers, unless one outlier request
 * made them large. */
static void trim(struct atr_buf *b)
{
    if (b->cap > KEEP_BUFFER)
        atr_buf_release(b);
}

/* Hands the result to the caller and puts r back on the free list. r must
 * already be out of the multi handle. */
void req_finish(struct req *r)
{
    struct atr_llm_client *c = r->c;
    event_del(&r->stall_ev);
    unlink_active(c, r);
    c->in_flight--;
    if (r->lane)
        r->lane->in_flight--;
    r->lane = NULL;
    struct atr_llm_result res = {
        .id = r->id,
        .start_s = r->start_s,
        .sent_s = r->sent_s,
        .end_s = r->end_s,
        .chunk_s = r->chunks,
        .n_chunks = r->n_chunks,
        .prompt_tokens = r->prompt,
        .output_tokens = r->output,
        .cached_tokens = r->cached,
        .success = r->reason == NULL,
        .http_status = r->status,
        .reason = r->reason,
        .detail = r->detail,
    };
    c->on_done(c->ctx, &res);
    trim(&r->body);
    trim(&r->resp);
    trim(&r->sse.line);
    trim(&r->sse.data);
    r->next = c->free_list;
    c->free_list = r;
}

/* ---- reading the body --------------------------------------------------------- */

static void add_chunk(struct req *r, double t)
{
    if (r->n_chunks == r->cap_chunks) {
        size_t cap = r->cap_chunks ? r->cap_chunks * 2 : FIRST_CHUNKS;
        r->chunks = xreallocarray(r->chunks, cap, sizeof *r->chunks);
        r->cap_chunks = cap;
    }
    r->chunks[r->n_chunks++] = t;
}

/* Applies one payload (SSE event data or a whole JSON body); returns 0 or
 * an EVENT_* value with detail set. */
static int apply_payload(struct req *r, const char *data, size_t len)
{
    struct atr_sse_payload pl;
    int rc = atr_sse_payload_parse_memo(&r->c->memo, &r->c->arena, data, len, &pl);
    atr_arena_clear(&r->c->arena);
    if (rc < 0) {
        req_set_detail(r, pl.detail);
        return EVENT_BAD;
    }
    if (pl.error) {
        req_set_detail(r, pl.detail);
        return EVENT_ERROR;
    }
    if (pl.done)
        r->done = true;
    if (pl.chunk)
        add_chunk(r, r->last_byte_s);
    if (pl.usage) {
        r->usage = true;
        r->prompt = pl.prompt_tokens;
        r->output = pl.completion_tokens;
        r->cached = pl.cached_tokens;
    }
    return 0;
}

static int on_event(void *ud, const char *data, size_t len)
{
    struct req *r = ud;
    if (r->done)
        return 0;  /* nothing counts after [DONE] */
    return apply_payload(r, data, len);
}

/* Maps an SSE parser or payload failure to the request's reason. */
static void fail_sse(struct req *r, int rc, double now)
{
    if (rc == ATR_SSE_ERR_SIZE) {
        req_set_detail(r, "an SSE line or event passed the size limit");
        req_fail(r, "too large", now);
    } else if (rc == EVENT_ERROR) {
        req_fail(r, "error event", now);
    } else {
        if (rc == ATR_SSE_ERR_LINE)
            req_set_detail(r, "a line that is not server-sent events");
        req_fail(r, "bad sse", now);
    }
}

void req_head(struct req *r, int status, enum atr_h1_type type, const char *p, size_t len)
{
    r->status = status;
    if (status != 200)
        r->mode = BODY_ERROR;
    else if (type == ATR_H1_TYPE_SSE)
        r->mode = BODY_SSE;
    else if (type == ATR_H1_TYPE_JSON)
        r->mode = BODY_JSON;
    else
        r->mode = len && (p[0] == '{' || p[0] == '[') ? BODY_JSON : BODY_SSE;
}

static void curl_head(struct req *r, const char *p, size_t len)
{
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    char *ct = NULL;
    curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
    enum atr_h1_type type = !ct                                ? ATR_H1_TYPE_NONE
                            : strstr(ct, "text/event-stream") ? ATR_H1_TYPE_SSE
                            : strstr(ct, "application/json")  ? ATR_H1_TYPE_JSON
                                                              : ATR_H1_TYPE_OTHER;
    req_head(r, (int)status, type, p, len);
}

bool req_body(struct req *r, const char *p, size_t len, double now)
{
    r->last_byte_s = now;
    r->received += len;
    if (r->received > r->c->max_response) {
        if (r->mode == BODY_ERROR) {
            fail_http(r, now);  /* the status says more than the size */
        } else {
            snprintf(r->detail, sizeof r->detail, "response passed %zu bytes",
                     r->c->max_response);
            req_fail(r, "too large", now);
        }
        return false;
    }
    if (r->mode == BODY_SSE) {
        int rc = atr_sse_feed(&r->sse, p, len, on_event, r);
        if (rc) {
            fail_sse(r, rc, now);
            return false;
        }
    } else if (r->mode == BODY_JSON) {
        atr_buf_append(&r->resp, p, len);
    } else if (r->resp.len < ERROR_BODY) {
        size_t room = ERROR_BODY - r->resp.len;
        atr_buf_append(&r->resp, p, len < room ? len : room);
    }
    return true;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct req *r = ud;
    size_t len = size * nmemb;
    if (r->mode == BODY_UNKNOWN)
        curl_head(r, p, len);
    return req_body(r, p, len, atr_llm_now()) ? len : 0;
}

/* ---- deciding how a transfer ended -------------------------------------------- */

static void conclude_stream(struct req *r, double now)
{
    int rc = atr_sse_finish(&r->sse, on_event, r);
    if (rc) {
        fail_sse(r, rc, now);
    } else if (!r->done) {
        snprintf(r->detail, sizeof r->detail,
                 "the stream ended after %zu bytes without data: [DONE]", r->received);
        req_fail(r, "stream cut", now);
    } else if (!r->usage) {
        req_set_detail(r, "data: [DONE] came without a usage object");
        req_fail(r, "no usage", now);
    }
}

static void conclude_json(struct req *r, double now)
{
    int rc = apply_payload(r, r->resp.data ? r->resp.data : "", r->resp.len);
    if (rc) {
        fail_sse(r, rc, now);
        return;
    }
    if (!r->usage) {
        req_set_detail(r, "the response has no usage object");
        req_fail(r, "no usage", now);
        return;
    }
    /* The whole answer is one chunk, stamped at its last byte. */
    if (r->n_chunks)
        r->chunks[0] = r->last_byte_s;
}

/* The transfer completed at the HTTP level. */
void req_end_ok(struct req *r, double now)
{
    if (r->status != 200)
        fail_http(r, now);
    else if (r->mode == BODY_SSE)
        conclude_stream(r, now);
    else if (r->mode == BODY_JSON)
        conclude_json(r, now);
    else {
        req_set_detail(r, "empty response body");
        req_fail(r, "stream cut", now);
    }
}

/* What happened to a connection that closed early, in words a user can
 * act on: before any answer (the server died or refused), or how far into
 * the answer, with the transport's own text last. */
static void set_cut_detail(struct req *r, const char *why)
{
    if (r->status == 0)
        snprintf(r->detail, sizeof r->detail,
                 "the server closed the connection before answering (%.150s)", why);
    else
        snprintf(r->detail, sizeof r->detail,
                 "the connection closed after %zu bytes of the HTTP %d body, before "
                 "data: [DONE] (%.120s)", r->received, r->status, why);
}

void req_end_cut(struct req *r, const char *why, double now)
{
    if (r->status == 0) {
        set_cut_detail(r, why);
        req_fail(r, "connect", now);
    } else if (r->status != 200) {
        fail_http(r, now);
    } else if (r->mode == BODY_SSE && r->done) {
        if (!r->usage) {
            req_set_detail(r, "data: [DONE] came without a usage object");
            req_fail(r, "no usage", now);
        }
    } else {
        set_cut_detail(r, why);
        req_fail(r, "stream cut", now);
    }
}

/* A success ends at its last chunk (vLLM's latency), else its last byte. */
void req_settle_end(struct req *r)
{
    if (!r->reason)
        r->end_s = r->n_chunks ? r->chunks[r->n_chunks - 1] : r->last_byte_s;
}

static void conclude(struct req *r, CURLcode rc)
{
    double now = atr_llm_now();
    if (r->reason)
        return;  /* the write callback already failed it */
    if (r->status == 0) {
        long status = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        r->status = (int)status;
    }
    switch (rc) {
    case CURLE_OK:
        req_end_ok(r, now);
        break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        set_unreachable_detail(r, rc);
        req_fail(r, "connect", now);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        req_set_detail(r, r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
        req_fail(r, "timeout", now);
        break;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        req_end_cut(r, r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc), now);
        break;
    default:
        req_set_detail(r, r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
        req_fail(r, "transport", now);
        break;
    }
    req_settle_end(r);
}

static void check_info(struct lane *l)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(l->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *easy = m->easy_handle;
        CURLcode rc = m->data.result;  /* m is invalid once the handle is removed */
        char *priv = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
        struct req *r = (struct req *)priv;
        curl_multi_remove_handle(l->multi, easy);
        conclude(r, rc);
        req_finish(r);
    }
}

/* ---- libevent <-> curl glue ------------------------------------------------- */

static void on_socket_event(evutil_socket_t fd, short kind, void *arg)
{
    struct lane *l = ((struct sock *)arg)->lane;  /* arg may be freed below */
    int action = (kind & EV_READ ? CURL_CSELECT_IN : 0) | (kind & EV_WRITE ? CURL_CSELECT_OUT : 0);
    int running;
    curl_multi_socket_action(l->multi, fd, action, &running);
    check_info(l);
}

static void on_timer(evutil_socket_t fd, short kind, void *arg)
{
    struct lane *l = arg;
    int running;
    curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_info(l);
}

/* Finished transfers of a kick in atr_llm_client_send, read from the loop:
 * on_done is never called from inside send. */
static void on_collect(evutil_socket_t fd, short kind, void *arg)
{
    struct atr_llm_client *c = arg;
    for (unsigned i = 0; i < c->n_lanes; i++)
        check_info(&c->lanes[i]);
}

static int on_curl_timer(CURLM *multi, long ms, void *ud)
{
    struct lane *l = ud;
    if (ms < 0) {
        evtimer_del(l->timer);
        return 0;
    }
    /* From now, not from when the loop woke (see arm_timer in replay.c):
     * early, curl would find nothing due and ask again. */
    event_base_update_cache_time(l->c->base);
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    return evtimer_add(l->timer, &tv);
}

static void sock_free(struct atr_llm_client *c, struct sock *s)
{
    event_del(&s->ev);
    if (s->prev)
        s->prev->next = s->next;
    else
        c->socks = s->next;
    if (s->next)
        s->next->prev = s->prev;
    free(s);
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp)
{
    struct lane *l = ud;
    struct atr_llm_client *c = l->c;
    struct sock *s = sockp;
    if (what == CURL_POLL_REMOVE) {
        if (s)
            sock_free(c, s);
        return 0;
    }
    short kind = EV_PERSIST | (what & CURL_POLL_IN ? EV_READ : 0) |
                 (what & CURL_POLL_OUT ? EV_WRITE : 0);
    if (!s) {
        s = xcalloc(1, sizeof *s);
        s->lane = l;
        s->next = c->socks;
        if (c->socks)
            c->socks->prev = s;
        c->socks = s;
        curl_multi_assign(l->multi, fd, s);
    } else if (s->kind == kind) {
        return 0;
    } else {
        event_del(&s->ev);
    }
    s->kind = kind;
    event_assign(&s->ev, c->base, fd, kind, on_socket_event, s);
    return event_add(&s->ev, NULL);
}

/* ---- stall timer ------------------------------------------------------------- */

static struct timeval seconds_tv(double s)
{
    if (s < 0)
        s = 0;
    struct timeval tv = {.tv_sec = (time_t)s};
    tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
    return tv;
}

/* Armed once per request; re-armed for the remainder while bytes flow, so
 * receiving costs no timer operation. */
static void on_stall(evutil_socket_t fd, short kind, void *arg)
{
    struct req *r = arg;
    double now = atr_llm_now();
    double left = r->last_byte_s + r->c->stall_s - now;
    if (left > 0) {
        struct timeval tv = seconds_tv(left);
        evtimer_add(&r->stall_ev, &tv);
        return;
    }
    if (r->done && r->usage) {
        req_settle_end(r);  /* all was said; only the end of the body is missing */
    } else {
        snprintf(r->detail, sizeof r->detail, "no byte for %.3f s", now - r->last_byte_s);
        req_fail(r, "stall", now);
    }
    curl_multi_remove_handle(r->lane->multi, r->easy);
    req_finish(r);
}

/* ---- requests ---------------------------------------------------------------- */

/* When the request's bytes leave. libcurl calls its pre-request callback
 * once it holds a connection (new or reused, connect done), at the top of
 * its DO state, and in the same call goes on to build the header and write
 * header and body with one send(): this stamp is a few microseconds of
 * libcurl's own CPU before the first byte is written, never a wait. It
 * costs one clock read per request. The alternatives: CURLOPT_DEBUGFUNCTION's
 * CURLINFO_HEADER_OUT fires just after the write but only with
 * CURLOPT_VERBOSE, which formats every info message of every transfer;
 * CURLINFO_PRETRANSFER_TIME_T counts from a start libcurl resets after a
 * wait for a connection; a read callback for the body would split the
 * request into two writes; CURLINFO_POSTTRANSFER_TIME_T (the last byte
 * sent) needs libcurl 8.10. A retry on a fresh connection (the reused one
 * had died) stamps again: the server answers the last attempt. */
#if LIBCURL_VERSION_NUM >= 0x075000   /* 7.80.0; before it sent_s stays 0 */
static int on_prereq(void *ud, char *remote_ip, char *local_ip, int remote_port, int local_port)
{
    (void)remote_ip, (void)local_ip, (void)remote_port, (void)local_port;
    ((struct req *)ud)->sent_s = atr_llm_now();
    return CURL_PREREQFUNC_OK;
}
#endif

static void req_free(struct req *r)
{
    event_del(&r->stall_ev);
    curl_easy_cleanup(r->easy);
    atr_buf_release(&r->body);
    atr_buf_release(&r->resp);
    atr_sse_release(&r->sse);
    free(r->chunks);
    free(r);
}

/* The options every request of a handle shares (the URL is set per API
 * in req_prepare). */
static void req_setopts(struct req *r)
{
    const struct atr_llm_client *c = r->c;
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
#if LIBCURL_VERSION_NUM >= 0x075000
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, r);
#endif
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    /* A load generator talks to its target directly, whatever the
     * environment's http_proxy says. */
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    /* And without reading the proxy variables for every request. */
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    if (c->timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->timeout_ms);
}

static struct req *req_new(struct atr_llm_client *c, struct atr_error *err)
{
    struct req *r = xcalloc(1, sizeof *r);
    r->c = c;
    atr_sse_init(&r->sse, SSE_MAX_LINE < c->max_response ? SSE_MAX_LINE : c->max_response);
    if (c->h1) {
        evtimer_assign(&r->stall_ev, c->base, h1_on_watch, r);
        return r;
    }
    r->easy = curl_easy_init();
    if (!r->easy) {
        atr_sse_release(&r->sse);
        free(r);
        atr_error_set(err, "cannot create a libcurl handle");
        return NULL;
    }
    evtimer_assign(&r->stall_ev, c->base, on_stall, r);
    req_setopts(r);
    r->curl_api = -1;
    return r;
}

/* libcurl resends a request whose reused connection turned out closed
 * (the server closed it after its last answer and the FIN was not read
 * yet), at most 5 times a handle; libcurl 7.88 (Curl_retry_request) keeps
 * that count across the handle's transfers, reset only by giving up or by
 * curl_easy_reset. A server that closes every connection after its
 * answer without saying so, as llama-server does after a stream, made
 * every sixth such resend on a handle fail ("Connection died, tried 5
 * times"): 4 to 6 of 60 requests one after the other. A transfer that had
 * to connect (a first request, or such a resend) therefore leaves its
 * handle reset; on a keep-alive server that is only the first. */
static void req_renew(struct req *r)
{
    long connects = 0;
    curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &connects);
    if (connects == 0)
        return;
    curl_easy_reset(r->easy);
    req_setopts(r);
    r->curl_api = -1;
}

/* The URL parsed once (CURLOPT_CURLU: libcurl copies the parsed handle
 * instead of parsing the text again for every request), or as text
 * where it does not parse: libcurl then reports it on the request. */
static void set_url(CURL *e, const struct atr_llm_client *c, enum atr_llm_api api)
{
#if LIBCURL_VERSION_NUM >= 0x073f00   /* 7.63.0 */
    if (c->uh[api]) {
        curl_easy_setopt(e, CURLOPT_CURLU, c->uh[api]);
        return;
    }
#endif
    curl_easy_setopt(e, CURLOPT_URL, c->url[api]);
}

static CURLU *parse_url(const char *url)
{
    CURLU *u = curl_url();
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        curl_url_cleanup(u);
        u = NULL;
    }
    return u;
}

/* What a request starts from, whatever carries it. */
static void req_prepare(struct req *r, uint64_t id, enum atr_llm_api api)
{
    r->id = id;
    atr_buf_clear(&r->resp);
    atr_sse_reset(&r->sse);
    r->n_chunks = 0;
    r->prompt = r->output = r->cached = -1;
    r->received = 0;
    r->status = 0;
    r->mode = BODY_UNKNOWN;
    r->done = r->usage = false;
    r->reason = NULL;
    r->detail[0] = '\0';
    r->api = api;
    r->start_s = r->last_byte_s = atr_llm_now();
    r->sent_s = 0;
}

static void curl_prepare(struct req *r, enum atr_llm_api api)
{
    req_renew(r);
    r->errbuf[0] = '\0';
    if (r->curl_api != (int)api) {
        set_url(r->easy, r->c, api);
        r->curl_api = (int)api;
    }
}

/* The lane with the fewest requests in flight, the first of equals (at
 * low load the requests stay on the first lane's warm connections). */
static struct lane *pick_lane(struct atr_llm_client *c)
{
    struct lane *best = &c->lanes[0];
    for (unsigned i = 1; i < c->n_lanes; i++)
        if (c->lanes[i].in_flight < best->in_flight)
            best = &c->lanes[i];
    return best;
}

/* Hands r to libcurl and kicks it. */
static int curl_send(struct atr_llm_client *c, struct req *r, const char *body, size_t len,
                     struct atr_error *err)
{
    curl_prepare(r, r->api);
    atr_buf_clear(&r->body);
    atr_buf_append(&r->body, body, len);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body.data);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    r->lane = pick_lane(c);
    CURLMcode mc = curl_multi_add_handle(r->lane->multi, r->easy);
    if (mc != CURLM_OK) {
        r->lane = NULL;
        return atr_error_set(err, "cannot start request: %s", curl_multi_strerror(mc));
    }
    r->lane->in_flight++;
    if (c->stall_s > 0) {
        struct timeval tv = seconds_tv(c->stall_s);
        evtimer_add(&r->stall_ev, &tv);
    }
    /* Kick libcurl now: it takes the new handle (and any other due work),
     * and with a connection free writes the request in this call, instead
     * of on the timer it just asked for, a turn of the loop later, after
     * every socket that is ready meanwhile (that turn was most of the gap
     * between handing a request over and its bytes leaving). A transfer
     * this finishes is read from the loop (on_collect). */
    int running;
    curl_multi_socket_action(r->lane->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    event_active(c->collect, EV_TIMEOUT, 0);
    return 0;
}

static void link_active(struct atr_llm_client *c, struct req *r)
{
    r->prev = NULL;
    r->next = c->active;
    if (c->active)
        c->active->prev = r;
    c->active = r;
    c->in_flight++;
}

int atr_llm_client_send(struct atr_llm_client *c, uint64_t id, enum atr_llm_api api,
                        const char *body, size_t len, struct atr_error *err)
{
    struct req *r = c->free_list;
    if (r)
        c->free_list = r->next;
    else if (!(r = req_new(c, err)))
        return -1;
    r->next = NULL;
    req_prepare(r, id, api == ATR_LLM_CHAT ? ATR_LLM_CHAT : ATR_LLM_COMPLETIONS);
    if (!c->h1 && curl_send(c, r, body, len, err) < 0) {
        r->next = c->free_list;
        c->free_list = r;
        return -1;
    }
    link_active(c, r);
    if (c->h1)
        h1_send(c->h1, r, body, len);
    return 0;
}

size_t atr_llm_client_in_flight(const struct atr_llm_client *c)
{
    return c->in_flight;
}

/* ---- client ------------------------------------------------------------------ */

static char *join_url(const char *base, const char *path)
{
    size_t n = strlen(base);
    while (n && base[n - 1] == '/')
        n--;
    struct atr_buf b = ATR_BUF_INIT;
    atr_buf_append(&b, base, n);
    atr_buf_puts(&b, path);
    return b.data;
}

static int set_headers(struct atr_llm_client *c, const char *api_key)
{
    /* "Expect:" stops curl from waiting for 100-continue on large bodies. */
    static const char *const fixed[] = {"Content-Type: application/json",
                                        "Accept: text/event-stream", "Expect:"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        struct curl_slist *l = curl_slist_append(c->headers, fixed[i]);
        if (!l)
            return -1;
        c->headers = l;
    }
    if (api_key && api_key[0]) {
        struct atr_buf b = ATR_BUF_INIT;
        atr_buf_printf(&b, "Authorization: Bearer %s", api_key);
        struct curl_slist *l = curl_slist_append(c->headers, b.data);
        atr_buf_release(&b);
        if (!l)
            return -1;
        c->headers = l;
    }
    return 0;
}

static long timeout_ms(double s)
{
    if (!(s > 0))
        return 0;
    double ms = ceil(s * 1000.0);
    return ms >= (double)LONG_MAX ? LONG_MAX : (long)ms;
}

static int setup_lane(struct lane *l, struct atr_llm_client *c, long pool)
{
    l->c = c;
    l->multi = curl_multi_init();
    l->timer = evtimer_new(c->base, on_timer, l);
    if (!l->multi || !l->timer)
        return -1;
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
    /* A fixed pool: without it libcurl sizes its idle cache from the
     * requests in flight, closes and reopens connections at moderate rates,
     * and under overload opens one connection per request until the
     * machine runs out of ports and file descriptors. With the cap, excess
     * requests wait inside libcurl for a connection; that wait is part of
     * their TTFT, as aiohttp's connector wait is in vLLM's. */
    curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, pool);
    curl_multi_setopt(l->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, pool);
    return 0;
}

/* The pool in lanes of LANE_CONNECTIONS at most, as even as they go. */
static int setup_multi(struct atr_llm_client *c, const struct atr_llm_client_cfg *cfg)
{
    c->collect = event_new(c->base, -1, 0, on_collect, c);
    if (!c->collect)
        return -1;
    if (c->h1)
        return 0;   /* no libcurl lanes for plain HTTP */
    size_t pool = cfg->max_connections ? cfg->max_connections : ATR_LLM_DEFAULT_CONNECTIONS;
    size_t n = (pool + LANE_CONNECTIONS - 1) / LANE_CONNECTIONS;
    c->n_lanes = n < MAX_LANES ? (unsigned)n : MAX_LANES;
    for (unsigned i = 0; i < c->n_lanes; i++) {
        size_t share = pool / c->n_lanes + (i < pool % c->n_lanes);
        if (setup_lane(&c->lanes[i], c, (long)share) < 0)
            return -1;
    }
    return 0;
}

/* curl_global_init is not thread-safe: once per process. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void init_curl(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct atr_llm_client *atr_llm_client_new(struct event_base *base,
                                          const struct atr_llm_client_cfg *cfg,
                                          atr_llm_done_fn on_done, void *ctx,
                                          struct atr_error *err)
{
    pthread_once(&curl_once, init_curl);   /* clients of several threads */
    if (curl_init_rc != CURLE_OK) {
        atr_error_set(err, "cannot initialise libcurl");
        return NULL;
    }
    if (!cfg->base_url || !cfg->base_url[0]) {
        atr_error_set(err, "no base URL");
        return NULL;
    }
    struct atr_llm_client *c = xcalloc(1, sizeof *c);
    c->base = base;
    c->on_done = on_done;
    c->ctx = ctx;
    atr_sse_memo_init(&c->memo);
    c->timeout_ms = timeout_ms(cfg->timeout_s);
    c->stall_s = cfg->stall_timeout_s > 0 ? cfg->stall_timeout_s : 0;
    c->max_response = cfg->max_response ? cfg->max_response : DEFAULT_MAX_RESPONSE;
    c->url[ATR_LLM_COMPLETIONS] = join_url(cfg->base_url, "/v1/completions");
    c->url[ATR_LLM_CHAT] = join_url(cfg->base_url, "/v1/chat/completions");
    for (int i = 0; i < 2; i++)
        c->uh[i] = parse_url(c->url[i]);
    size_t pool = cfg->max_connections ? cfg->max_connections : ATR_LLM_DEFAULT_CONNECTIONS;
    c->h1 = h1_pool_new(c, cfg->base_url, cfg->api_key, pool);
    if (set_headers(c, cfg->api_key) < 0 || setup_multi(c, cfg) < 0) {
        atr_llm_client_free(c);
        atr_error_set(err, "cannot set up libcurl");
        return NULL;
    }
    return c;
}

void atr_llm_client_free(struct atr_llm_client *c)
{
    if (!c)
        return;
    h1_pool_free(c->h1);   /* its connections; the requests are freed below */
    while (c->active) {
        struct req *r = c->active;
        c->active = r->next;
        if (r->lane)
            curl_multi_remove_handle(r->lane->multi, r->easy);
        req_free(r);
    }
    while (c->free_list) {
        struct req *r = c->free_list;
        c->free_list = r->next;
        req_free(r);
    }
    for (unsigned i = 0; i < c->n_lanes; i++) {
        if (c->lanes[i].multi)
            curl_multi_cleanup(c->lanes[i].multi);
        if (c->lanes[i].timer)
            event_free(c->lanes[i].timer);
    }
    while (c->socks)
        sock_free(c, c->socks);
    if (c->collect)
        event_free(c->collect);
    curl_slist_free_all(c->headers);
    for (int i = 0; i < 2; i++) {
        free(c->url[i]);
        curl_url_cleanup(c->uh[i]);
    }
    atr_arena_release(&c->arena);
    free(c);
}
