/* exchange.c - one client request through `atr proxy` (see proxy.c for the
 * life of an exchange): the body read and rewritten, the prompt's metadata,
 * the policy's choice, the upstream request, the SSE relay with usage
 * taken and the injected usage chunk stripped, backpressure, failures,
 * and the record. Also GET /v1/models (merged) and other paths (passed to
 * the first upstream). */
#include "proxy/proxy-impl.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>

#include "json/json.h"
#include "json/writer.h"
#include "stats/percentile.h"
#include "trace/tokens.h"
#include "util/alloc.h"

#define MAX_RESPONSE_BYTES (64u << 20)   /* a non-streaming answer held whole */
#define TRIM_BODY_BYTES (1u << 20)       /* after a body this big, memory goes back */

const char *const proxy_err_names[PERR_COUNT] = {
    "none", "bad request", "upstream refused", "upstream cut", "upstream timeout",
    "upstream status", "client gone",
};

#define EXCHANGE_MAGIC 0x61747270726f7879ull   /* tells an exchange from an evcon */

struct exchange {
    uint64_t magic;
    struct atr_proxy *p;
    struct exchange *next, *prev;
    struct evhttp_request *creq;        /* NULL once the client is gone */
    struct evhttp_request *ureq;        /* NULL when no upstream request is open */
    struct evhttp_connection *uconn;
    unsigned up, tried;
    bool pooled;                        /* uconn came from the idle pool */
    bool fresh;                         /* this attempt wants a new connection */
    bool llm, chat, stream, strip_usage;
    bool got_headers, reply_started, relay_sse, paused;
    int ustatus, status;
    enum proxy_err err;
    enum evhttp_cmd_type cmd;
    char *path;                         /* upstream path and query */
    char *content_type;                 /* the upstream's */
    struct atr_arena arena, scratch;
    struct atr_buf body;                /* sent upstream */
    struct atr_buf held;                /* a non-streaming answer */
    struct atr_sse sse;
    struct evbuffer *out;               /* events of one upstream read */
    /* evhttp's callbacks of the upstream connection, wrapped while its
     * chunked answer is read (see on_upstream_read) */
    bufferevent_data_cb u_read, u_write;
    bufferevent_event_cb u_event;
    void *u_arg;
    bool *alive;                        /* set false when the exchange is freed */
    struct evbuffer *part;              /* an unfinished chunk's bytes, taken early */
    size_t relayed;                     /* answer bytes, for the trim */
    struct event *first_byte;
    /* what is recorded */
    char *model;
    size_t session;
    size_t body_len;                    /* the request body's bytes */
    bool in_session;                    /* session begun, to end in ex_free */
    const char *session_source;
    uint64_t turn;
    struct atr_blockhash hash;
    uint64_t est_tokens;
    char *prompt_text;
    size_t prompt_len;
    struct atr_policy_req preq;
    struct atr_policy_decision dec;
    bool policy_started;
    double t0, t0_unix, ttft, last_chunk, end;
    double *gaps;
    size_t n_gaps, cap_gaps, n_chunks;
    int64_t prompt_tokens, output_tokens, cached_tokens;
};

static void send_upstream(struct exchange *ex);

static double unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static void finish(struct exchange *ex);

/* ---- life -------------------------------------------------------------------- */

static struct exchange *ex_new(struct atr_proxy *p, struct evhttp_request *req)
{
    struct exchange *ex = xcalloc(1, sizeof *ex);
    ex->magic = EXCHANGE_MAGIC;
    ex->p = p;
    ex->creq = req;
    ex->t0 = proxy_now();
    ex->prompt_tokens = ex->output_tokens = ex->cached_tokens = -1;
    ex->ttft = -1;
    ex->cmd = evhttp_request_get_command(req);
    atr_sse_init(&ex->sse, 0);
    atr_blockhash_init(&ex->hash, PROXY_BLOCK);
    ex->next = p->exchanges;
    if (p->exchanges)
        p->exchanges->prev = ex;
    p->exchanges = ex;
    p->in_flight++;
    return ex;
}

static void ex_free(struct exchange *ex)
{
    struct atr_proxy *p = ex->p;
    if (ex->prev)
        ex->prev->next = ex->next;
    else
        p->exchanges = ex->next;
    if (ex->next)
        ex->next->prev = ex->prev;
    p->in_flight--;
    if (ex->in_session)
        proxy_session_end(&p->sessions, ex->session, proxy_now());
    if (ex->first_byte)
        event_free(ex->first_byte);
    if (ex->out)
        evbuffer_free(ex->out);
    if (ex->part)
        evbuffer_free(ex->part);
    if (ex->alive)
        *ex->alive = false;
    atr_sse_release(&ex->sse);
    atr_blockhash_release(&ex->hash);
    atr_arena_release(&ex->arena);
    atr_arena_release(&ex->scratch);
    atr_buf_release(&ex->body);
    atr_buf_release(&ex->held);
    free(ex->path);
    free(ex->content_type);
    free(ex->prompt_text);
    free(ex->model);
    free(ex->gaps);
    bool big = ex->body_len >= TRIM_BODY_BYTES || ex->relayed >= TRIM_BODY_BYTES;
    ex->magic = 0;
    free(ex);
    if (big)
        proxy_trim_soon(p);            /* glibc keeps a big body's freed pages otherwise */
}

static struct evhttp_connection *client_conn(const struct exchange *ex)
{
    return ex->creq ? evhttp_request_get_connection(ex->creq) : NULL;
}

/* Closes the upstream request: cancelled (its connection closed, so the
 * upstream sees the client leave) or finished (the connection reused). */
static void upstream_unhook(struct exchange *ex);

static void upstream_close(struct exchange *ex, bool reuse)
{
    struct upstream *u = &ex->p->up[ex->up];
    upstream_unhook(ex);
    if (ex->ureq && !reuse)
        evhttp_cancel_request(ex->ureq);
    ex->ureq = NULL;
    if (ex->uconn) {
        if (reuse)
            proxy_conn_put(u, ex->uconn);
        else
            evhttp_connection_free(ex->uconn);
        ex->uconn = NULL;
        u->in_flight--;
    }
    if (ex->first_byte)
        event_del(ex->first_byte);
}

/* ---- the prompt ------------------------------------------------------------- */

/* Text of a message's content: a string, or the "text" of its parts. */
static void feed_content(struct exchange *ex, const struct atr_json *content)
{
    if (atr_json_is(content, ATR_JSON_STRING)) {
        atr_blockhash_feed(&ex->hash, content->u.str.s, content->u.str.len);
        return;
    }
    if (!atr_json_is(content, ATR_JSON_ARRAY))
        return;
    bool first = true;
    for (const struct atr_json *part = content->u.kids.first; part; part = part->next) {
        size_t len;
        const char *text = atr_json_get_str(part, "text", &len);
        if (!text)
            continue;
        if (!first)
            atr_blockhash_feed(&ex->hash, "\n", 1);
        atr_blockhash_feed(&ex->hash, text, len);
        first = false;
    }
}

/* Feeds the prompt as the chat trace readers render it (trace/convo.h):
 * "<|role|>\n" + text + "\n" per message; a completions prompt as it is. */
static void hash_prompt(struct exchange *ex, const struct atr_json *root)
{
    if (ex->chat) {
        const struct atr_json *msgs = atr_json_get(root, "messages");
        for (const struct atr_json *m = atr_json_is(msgs, ATR_JSON_ARRAY) ? msgs->u.kids.first
                                                                          : NULL;
             m; m = m->next) {
            size_t rlen;
            const char *role = atr_json_get_str(m, "role", &rlen);
            char head[80];
            int n = snprintf(head, sizeof head, "<|%.*s|>\n", (int)(rlen < 60 ? rlen : 60),
                             role ? role : "user");
            atr_blockhash_feed(&ex->hash, head, (size_t)n);
            feed_content(ex, atr_json_get(m, "content"));
            atr_blockhash_feed(&ex->hash, "\n", 1);
        }
    } else {
        const struct atr_json *prompt = atr_json_get(root, "prompt");
        if (atr_json_is(prompt, ATR_JSON_STRING))
            atr_blockhash_feed(&ex->hash, prompt->u.str.s, prompt->u.str.len);
        else if (atr_json_is(prompt, ATR_JSON_ARRAY) && prompt->u.kids.first &&
                 atr_json_is(prompt->u.kids.first, ATR_JSON_STRING))
            atr_blockhash_feed(&ex->hash, prompt->u.kids.first->u.str.s,
                               prompt->u.kids.first->u.str.len);
    }
    ex->est_tokens = ex->hash.tokens;
}

/* ---- session and policy ------------------------------------------------------ */

static void choose(struct exchange *ex, const struct atr_json *root)
{
    struct atr_proxy *p = ex->p;
    const char *name = evhttp_find_header(evhttp_request_get_input_headers(ex->creq),
                                          p->cfg.session_header);
    const char *source = "header";
    size_t name_len = name ? strlen(name) : 0;
    if (!name_len) {
        name = atr_json_get_str(root, "user", &name_len);
        source = "user";
    }
    ex->session = proxy_session_find(&p->sessions, name, name_len, source, ex->hash.ids,
                                     ex->hash.n_ids, &ex->session_source);
    struct proxy_session *s = &p->sessions.v[ex->session];
    ex->turn = proxy_session_begin(&p->sessions, ex->session);
    ex->in_session = true;
    proxy_session_note(&p->sessions, ex->session, ex->hash.ids, ex->hash.n_ids);
    int64_t max_tokens = 0;
    if (!atr_json_get_i64(root, "max_tokens", &max_tokens))
        atr_json_get_i64(root, "max_completion_tokens", &max_tokens);
    ex->preq = (struct atr_policy_req){
        .id = p->next_id++, .session = ex->session, .turn = ex->turn,
        .prompt_tokens = (uint32_t)(ex->est_tokens ? ex->est_tokens : 1),
        .ids = ex->hash.ids, .n_ids = (uint32_t)ex->hash.n_ids, .block_size = PROXY_BLOCK,
        .now = ex->t0, .since_last_s = ex->turn ? ex->t0 - s->last_end : 0,
        .prev_output_tokens = s->last_output,
        .mean_output_tokens = ex->turn ? s->output_sum / (double)ex->turn : 0,
        .recorded_output_tokens = max_tokens > 0 && max_tokens < UINT32_MAX ? (uint32_t)max_tokens : 0,
    };
    ex->dec = (struct atr_policy_decision){
        .replica = 0, .prompt_tokens = ex->preq.prompt_tokens, .ids = ex->preq.ids,
        .n_ids = ex->preq.n_ids, .delegate = -1,
    };
    atr_policy_decide(p->policy, &ex->preq, &ex->dec);
    ex->up = ex->dec.replica < p->n_up ? ex->dec.replica : 0;
}

/* ---- the body sent upstream ----------------------------------------------------- */

static bool want_usage(const struct atr_json *root)
{
    const struct atr_json *so = atr_json_get(root, "stream_options");
    const struct atr_json *iu = so ? atr_json_get(so, "include_usage") : NULL;
    return iu && iu->type == ATR_JSON_TRUE;
}

/* Whether the upstream must get other bytes than the client sent. */
static bool needs_rewrite(const struct exchange *ex, const struct atr_json *root)
{
    uint32_t cap = ex->dec.max_tokens;
    if (ex->strip_usage)
        return true;
    if (!cap)
        return false;
    const struct atr_json *a = atr_json_get(root, "max_tokens");
    const struct atr_json *b = atr_json_get(root, "max_completion_tokens");
    return (!a && !b) || (a && a->is_int && a->i > (int64_t)cap) ||
           (b && b->is_int && b->i > (int64_t)cap);
}

/* The client's object, with stream_options.include_usage set for a stream
 * and the policy's cap on max_tokens; members in the client's order. */
static void rewrite_body(struct exchange *ex, const struct atr_json *root, struct atr_buf *to)
{
    struct atr_jw w;
    atr_jw_init(&w, to, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    bool wrote_so = false;
    uint32_t cap = ex->dec.max_tokens;
    for (const struct atr_json *m = root->u.kids.first; m; m = m->next) {
        if (ex->strip_usage && atr_json_key_is(m, "stream_options")) {
            atr_jw_keyn(&w, m->key, m->key_len);
            atr_jw_object_begin(&w);
            for (const struct atr_json *o = atr_json_is(m, ATR_JSON_OBJECT) ? m->u.kids.first
                                                                             : NULL;
                 o; o = o->next)
                if (!atr_json_key_is(o, "include_usage")) {
                    atr_jw_keyn(&w, o->key, o->key_len);
                    atr_jw_value(&w, o);
                }
            atr_jw_kv_bool(&w, "include_usage", true);
            atr_jw_object_end(&w);
            wrote_so = true;
            continue;
        }
        atr_jw_keyn(&w, m->key, m->key_len);
        if (cap && (atr_json_key_is(m, "max_tokens") || atr_json_key_is(m, "max_completion_tokens")) &&
            m->is_int && m->i > (int64_t)cap)
            atr_jw_uint(&w, cap);
        else
            atr_jw_value(&w, m);
    }
    if (ex->strip_usage && !wrote_so) {
        atr_jw_key(&w, "stream_options");
        atr_jw_object_begin(&w);
        atr_jw_kv_bool(&w, "include_usage", true);
        atr_jw_object_end(&w);
    }
    if (cap && !atr_json_get(root, "max_tokens") && !atr_json_get(root, "max_completion_tokens"))
        atr_jw_kv_int(&w, "max_tokens", cap);
    atr_jw_object_end(&w);
    (void)atr_jw_finish(&w);
}

/* ---- the reply to the client --------------------------------------------------- */

static void on_client_flushed(struct evhttp_connection *conn, void *arg);

/* Bytes queued in the client's socket buffer. */
static size_t client_backlog(const struct exchange *ex)
{
    struct evhttp_connection *c = client_conn(ex);
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void pause_upstream(struct exchange *ex, bool pause)
{
    struct bufferevent *bev = ex->uconn ? evhttp_connection_get_bufferevent(ex->uconn) : NULL;
    if (!bev || ex->paused == pause)
        return;
    ex->paused = pause;
    if (pause)
        bufferevent_disable(bev, EV_READ);
    else
        bufferevent_enable(bev, EV_READ);
}

static void send_chunk(struct exchange *ex)
{
    if (!ex->creq || !evbuffer_get_length(ex->out))
        return;
    evhttp_send_reply_chunk_with_cb(ex->creq, ex->out, on_client_flushed, ex);
    if (client_backlog(ex) > ex->p->cfg.max_buffered)
        pause_upstream(ex, true);      /* a slow reader: stop reading upstream */
}

static void on_client_flushed(struct evhttp_connection *conn, void *arg)
{
    struct exchange *ex = arg;
    if (ex->paused && client_backlog(ex) <= ex->p->cfg.max_buffered / 2)
        pause_upstream(ex, false);
}

static void start_reply(struct exchange *ex, int code, const char *type)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(ex->creq);
    evhttp_add_header(h, "Content-Type", type ? type : "application/json");
    if (ex->relay_sse)
        evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_send_reply_start(ex->creq, code, code == 200 ? "OK" : "Error");
    ex->reply_started = true;
    ex->status = code;
}

/* ---- the upstream's answer --------------------------------------------------------- */

static void stamp_chunk(struct exchange *ex)
{
    double now = proxy_now();
    if (ex->n_chunks++ == 0) {
        ex->ttft = now - ex->t0;
    } else {
        if (ex->n_gaps == ex->cap_gaps) {
            ex->cap_gaps = ex->cap_gaps ? ex->cap_gaps * 2 : 64;
            ex->gaps = xreallocarray(ex->gaps, ex->cap_gaps, sizeof *ex->gaps);
        }
        ex->gaps[ex->n_gaps++] = now - ex->last_chunk;
    }
    ex->last_chunk = now;
}

static void take_usage(struct exchange *ex, const struct atr_sse_payload *pl)
{
    ex->prompt_tokens = pl->prompt_tokens;
    ex->output_tokens = pl->completion_tokens;
    ex->cached_tokens = pl->cached_tokens;
}

/* One SSE event: stamped, read for usage, queued for the client unless it
 * is the usage chunk the client did not ask for. */
/* The common event, a content chunk without usage, is told by one scan
 * over its quotes for the keys "choices", "usage" and "error": a chunk is
 * "choices" then '[' and something other than ']' (vLLM's rule). Only
 * events that mention usage or an error, or have no choices, are parsed
 * whole; parsing every chunk cost more CPU than the rest of the relay. */
static bool key_at(const char *q, const char *end, const char *key, size_t n)
{
    return (size_t)(end - q) > n + 1 && memcmp(q + 1, key, n) == 0 && q[n + 1] == '"';
}

static bool quick_chunk(const char *data, size_t len, bool *needs_parse)
{
    const char *end = data + len, *choices = NULL;
    bool other = false;
    for (const char *q = memchr(data, '"', len); q; q = memchr(q + 1, '"', (size_t)(end - q - 1))) {
        if (!choices && key_at(q, end, "choices", 7))
            choices = q + 9;
        else if (key_at(q, end, "usage", 5) || key_at(q, end, "error", 5))
            other = true;
        if (q + 1 >= end)
            break;
    }
    const char *c = choices;
    while (c && c < end && (*c == ' ' || *c == ':' || *c == '\t' || *c == '\n' || *c == '\r'))
        c++;
    bool chunk = c && c < end && *c == '[';
    if (chunk) {
        for (c++; c < end && (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r'); c++)
            ;
        chunk = c < end && *c != ']';
    }
    *needs_parse = other || !chunk;
    return chunk;
}

static int on_event(void *ctx, const char *data, size_t len)
{
    struct exchange *ex = ctx;
    struct atr_sse_payload pl;
    bool needs_parse, parsed = false;
    bool chunk = quick_chunk(data, len, &needs_parse);
    if (needs_parse) {
        atr_arena_clear(&ex->scratch);
        parsed = atr_sse_payload_parse(&ex->scratch, data, len, &pl) == 0;
        chunk = parsed && pl.chunk;
    }
    if (chunk)
        stamp_chunk(ex);
    if (parsed && pl.usage)
        take_usage(ex, &pl);
    if (parsed && ex->strip_usage && pl.usage && !pl.chunk)
        return 0;
    evbuffer_add(ex->out, "data: ", 6);
    evbuffer_add(ex->out, data, len);
    evbuffer_add(ex->out, "\n\n", 2);
    return 0;
}

static void upstream_hook(struct exchange *ex);

static int on_upstream_headers(struct evhttp_request *ureq, void *arg)
{
    struct exchange *ex = arg;
    ex->got_headers = true;
    ex->ustatus = evhttp_request_get_response_code(ureq);
    if (ex->first_byte)
        event_del(ex->first_byte);
    const char *type = evhttp_find_header(evhttp_request_get_input_headers(ureq),
                                          "Content-Type");
    ex->content_type = type ? xstrdup(type) : NULL;
    ex->relay_sse = ex->stream && ex->ustatus == 200;
    if (ex->relay_sse && ex->creq)
        start_reply(ex, 200, "text/event-stream");
    if (ureq->chunked || evhttp_find_header(evhttp_request_get_input_headers(ureq),
                                            "Transfer-Encoding"))
        upstream_hook(ex);
    return 0;
}

/* Answer bytes from the upstream: held (a JSON answer) or relayed. */
static void relay(struct exchange *ex, struct evbuffer *in)
{
    size_t n = evbuffer_get_length(in);
    ex->relayed += n;
    if (!ex->relay_sse) {
        if (ex->held.len + n > MAX_RESPONSE_BYTES) {
            evbuffer_drain(in, n);
            return;
        }
        size_t at = ex->held.len;
        atr_buf_reserve(&ex->held, n);
        evbuffer_remove(in, ex->held.data + at, n);
        ex->held.len = at + n;
        ex->held.data[ex->held.len] = '\0';
        return;
    }
    while (evbuffer_get_length(in)) {
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        atr_sse_feed(&ex->sse, v.iov_base, v.iov_len, on_event, ex);
        evbuffer_drain(in, v.iov_len);
    }
    send_chunk(ex);
}

static void on_upstream_chunk(struct evhttp_request *ureq, void *arg)
{
    relay(arg, evhttp_request_get_input_buffer(ureq));
}

/* evhttp hands a chunked answer over a whole chunk at a time, and keeps
 * reading until the chunk is in: an upstream that sends its answer as one
 * 100 MB chunk was buffered whole, past --max-buffered and the pause. So
 * while such an answer is read, the upstream connection's read callback
 * is wrapped: after evhttp has read, the bytes it holds of an unfinished
 * chunk are taken out, its count of bytes still to read (ntoread, a field
 * of the public struct evhttp_request) lowered by as many, and they are
 * relayed at once; evhttp still reads the chunk's last byte and its end
 * itself. A paused upstream then holds at most one read. */
static struct exchange *hooked_exchange(void *arg)
{
    /* evhttp's deferred read passes its connection instead of our
     * argument; it is only scheduled before the hook is set, but an
     * evcon is never taken for an exchange. */
    struct exchange *ex = arg;
    return ex && ex->magic == EXCHANGE_MAGIC ? ex : NULL;
}

static void take_partial(struct exchange *ex, struct bufferevent *bev)
{
    struct evhttp_request *r = ex->ureq;
    if (!r || !ex->uconn || evhttp_connection_get_bufferevent(ex->uconn) != bev ||
        !r->chunked || r->ntoread <= 1)
        return;
    size_t n = evbuffer_get_length(bufferevent_get_input(bev));
    if (n > (size_t)(r->ntoread - 1))
        n = (size_t)(r->ntoread - 1);
    if (!n)
        return;
    evbuffer_remove_buffer(bufferevent_get_input(bev), ex->part, n);
    r->ntoread -= (ev_int64_t)n;
    relay(ex, ex->part);
}

static void on_upstream_read(struct bufferevent *bev, void *arg)
{
    struct exchange *ex = hooked_exchange(arg);
    if (!ex)
        return;
    bool alive = true;
    ex->alive = &alive;
    ex->u_read(bev, ex->u_arg);
    if (!alive)
        return;                        /* the answer ended: freed in there */
    ex->alive = NULL;
    take_partial(ex, bev);
}

static void on_upstream_write(struct bufferevent *bev, void *arg)
{
    struct exchange *ex = hooked_exchange(arg);
    if (ex && ex->u_write)
        ex->u_write(bev, ex->u_arg);
}

static void on_upstream_event(struct bufferevent *bev, short what, void *arg)
{
    struct exchange *ex = hooked_exchange(arg);
    if (ex && ex->u_event)
        ex->u_event(bev, what, ex->u_arg);
}

static void upstream_hook(struct exchange *ex)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(ex->uconn);
    bufferevent_getcb(bev, &ex->u_read, &ex->u_write, &ex->u_event, &ex->u_arg);
    if (!ex->u_read || ex->u_read == on_upstream_read)
        return;
    if (!ex->part)
        ex->part = evbuffer_new();
    bufferevent_setcb(bev, on_upstream_read, on_upstream_write, on_upstream_event, ex);
}

/* evhttp's callbacks back, unless evhttp has set its own since. */
static void upstream_unhook(struct exchange *ex)
{
    struct bufferevent *bev = ex->uconn ? evhttp_connection_get_bufferevent(ex->uconn) : NULL;
    bufferevent_data_cb rcb = NULL;
    void *arg = NULL;
    if (bev)
        bufferevent_getcb(bev, &rcb, NULL, NULL, &arg);
    if (rcb == on_upstream_read && arg == ex)
        bufferevent_setcb(bev, ex->u_read, ex->u_write, ex->u_event, ex->u_arg);
}

/* The upstream failed before a byte reached the client: the next upstream,
 * or a 502/504. */
static bool retry_elsewhere(struct exchange *ex)
{
    struct atr_proxy *p = ex->p;
    if (ex->reply_started || ex->err != PERR_UPSTREAM_REFUSED || ex->tried >= p->n_up)
        return false;
    ex->up = (ex->up + 1) % (unsigned)p->n_up;
    ex->fresh = false;
    send_upstream(ex);
    return true;
}

/* An idle connection that fails before any answer was most likely closed
 * by the upstream while idle, its FIN not read yet when it was taken:
 * llama-server closes every stream's connection after the answer while
 * saying "Keep-Alive", and a client sending its next request at once then
 * got a 502 for one in ten. Such a request is sent once more, on a new
 * connection to the same upstream, as libcurl and browsers do; it is the
 * same request (not a retry on another upstream, not an upstream
 * failure). */
static bool resend_fresh(struct exchange *ex)
{
    if (!ex->pooled || ex->reply_started || ex->err != PERR_UPSTREAM_REFUSED)
        return false;
    struct upstream *u = &ex->p->up[ex->up];
    upstream_close(ex, false);
    ex->tried--;
    u->requests--;
    ex->fresh = true;
    send_upstream(ex);
    return true;
}

static void end_stream_with_error(struct exchange *ex, const char *msg)
{
    evbuffer_add_printf(ex->out, "data: {\"error\":{\"message\":\"%s\",\"type\":"
                        "\"ServiceUnavailableError\",\"param\":null,\"code\":502}}\n\n", msg);
    send_chunk(ex);
}

static void answer_held(struct exchange *ex)
{
    struct atr_sse_payload pl;
    if (ex->held.len && atr_sse_payload_parse(&ex->scratch, ex->held.data, ex->held.len, &pl) == 0) {
        if (pl.usage)
            take_usage(ex, &pl);
        if (pl.chunk)
            stamp_chunk(ex);
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(ex->creq);
    evhttp_add_header(h, "Content-Type", ex->content_type ? ex->content_type : "application/json");
    struct evbuffer *body = evbuffer_new();
    evbuffer_add(body, ex->held.data ? ex->held.data : "", ex->held.len);
    ex->status = ex->ustatus;
    proxy_reply_ending(ex->p, ex->creq);
    evhttp_send_reply(ex->creq, ex->ustatus, ex->ustatus == 200 ? "OK" : "Error", body);
    evbuffer_free(body);
    ex->creq = NULL;                   /* answered: libevent's again */
}

static void on_upstream_done(struct evhttp_request *ureq, void *arg)
{
    struct exchange *ex = arg;
    bool ok = ureq && ex->got_headers && ex->err == PERR_NONE;
    if (!ok && ex->err == PERR_NONE)
        ex->err = ex->got_headers ? PERR_UPSTREAM_CUT : PERR_UPSTREAM_REFUSED;
    ex->ureq = NULL;                   /* libevent frees it after this call */
    if (!ok && resend_fresh(ex))
        return;
    struct upstream *u = &ex->p->up[ex->up];
    if (!ok)
        u->failures++;
    upstream_close(ex, ok);
    if (!ok && retry_elsewhere(ex))
        return;
    if (ex->creq) {
        if (ex->relay_sse) {
            atr_sse_finish(&ex->sse, on_event, ex);
            send_chunk(ex);
            if (!ok)
                end_stream_with_error(ex, ex->err == PERR_UPSTREAM_TIMEOUT
                                              ? "upstream timed out mid-stream"
                                              : "upstream closed the stream");
            proxy_reply_ending(ex->p, ex->creq);
            evhttp_send_reply_end(ex->creq);
            ex->creq = NULL;
        } else if (ok) {
            evhttp_connection_set_closecb(client_conn(ex), NULL, NULL);
            answer_held(ex);
        } else {
            evhttp_connection_set_closecb(client_conn(ex), NULL, NULL);
            int code = ex->err == PERR_UPSTREAM_TIMEOUT ? 504 : 502;
            ex->status = code;
            proxy_send_error(ex->p, ex->creq, code,
                             ex->err == PERR_UPSTREAM_TIMEOUT ? "upstream timed out"
                             : ex->err == PERR_UPSTREAM_CUT   ? "upstream closed the connection"
                                                             : "no upstream answered");
            ex->creq = NULL;
        }
    }
    if (ok && ex->ustatus != 200 && ex->err == PERR_NONE)
        ex->err = PERR_UPSTREAM_STATUS;
    finish(ex);
}

static void on_upstream_error(enum evhttp_request_error e, void *arg)
{
    struct exchange *ex = arg;
    if (ex->err != PERR_NONE)
        return;
    ex->err = e == EVREQ_HTTP_TIMEOUT ? PERR_UPSTREAM_TIMEOUT
              : ex->got_headers       ? PERR_UPSTREAM_CUT
                                      : PERR_UPSTREAM_REFUSED;
}

static void on_first_byte_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct exchange *ex = arg;
    ex->err = PERR_UPSTREAM_TIMEOUT;
    /* Cancelling calls no callback: finish here as a failed answer. */
    ex->p->up[ex->up].failures++;
    upstream_close(ex, false);
    if (ex->creq) {
        evhttp_connection_set_closecb(client_conn(ex), NULL, NULL);
        ex->status = 504;
        proxy_send_error(ex->p, ex->creq, 504, "upstream sent nothing in time");
        ex->creq = NULL;
    }
    finish(ex);
}

/* The client went away: the upstream request is cancelled now. */
static void on_client_close(struct evhttp_connection *conn, void *arg)
{
    struct exchange *ex = arg;
    if (ex->err == PERR_NONE)
        ex->err = PERR_CLIENT_GONE;
    if (ex->creq && !evhttp_request_get_connection(ex->creq))
        evhttp_request_free(ex->creq);
    ex->creq = NULL;
    upstream_close(ex, false);
    finish(ex);
}

static void add_header_if(struct evkeyvalq *to, struct evkeyvalq *from, const char *name)
{
    const char *v = evhttp_find_header(from, name);
    if (v)
        evhttp_add_header(to, name, v);
}

static void send_upstream(struct exchange *ex)
{
    struct atr_proxy *p = ex->p;
    struct upstream *u = &p->up[ex->up];
    ex->tried++;
    ex->err = PERR_NONE;
    ex->got_headers = false;
    ex->uconn = proxy_conn_get(p, u, ex->fresh, &ex->pooled);
    ex->ureq = ex->uconn ? evhttp_request_new(on_upstream_done, ex) : NULL;
    if (!ex->ureq) {
        if (ex->uconn)
            evhttp_connection_free(ex->uconn);
        ex->uconn = NULL;
        ex->err = PERR_UPSTREAM_REFUSED;
        on_upstream_done(NULL, ex);
        return;
    }
    u->in_flight++;
    u->requests++;
    evhttp_request_set_header_cb(ex->ureq, on_upstream_headers);
    evhttp_request_set_chunked_cb(ex->ureq, on_upstream_chunk);
    evhttp_request_set_error_cb(ex->ureq, on_upstream_error);
    struct evkeyvalq *h = evhttp_request_get_output_headers(ex->ureq);
    char host[300];
    snprintf(host, sizeof host, "%s:%u", u->host, u->port);
    evhttp_add_header(h, "Host", host);
    struct evkeyvalq *in = evhttp_request_get_input_headers(ex->creq);
    add_header_if(h, in, "Content-Type");
    add_header_if(h, in, "Accept");
    if (p->cfg.upstream_key) {
        char auth[512];
        snprintf(auth, sizeof auth, "Bearer %s", p->cfg.upstream_key);
        evhttp_add_header(h, "Authorization", auth);
    }
    if (ex->body.len)
        evbuffer_add_reference(evhttp_request_get_output_buffer(ex->ureq), ex->body.data,
                               ex->body.len, NULL, NULL);   /* body outlives the connection's use */
    if (!ex->first_byte)
        ex->first_byte = evtimer_new(p->base, on_first_byte_timeout, ex);
    double t = p->cfg.first_byte_timeout_s;
    struct timeval tv = {(time_t)t, (suseconds_t)((t - floor(t)) * 1e6)};
    evtimer_add(ex->first_byte, &tv);
    char *path = xasprintf("%s%s", u->prefix, ex->path);
    if (!ex->policy_started && ex->llm) {
        atr_policy_started(p->policy, &ex->preq, &ex->dec);
        ex->policy_started = true;
    }
    if (evhttp_make_request(ex->uconn, ex->ureq, ex->cmd, path) < 0) {
        ex->ureq = NULL;               /* freed by libevent on failure */
        ex->err = PERR_UPSTREAM_REFUSED;
        free(path);
        on_upstream_done(NULL, ex);
        return;
    }
    free(path);
}

/* ---- the record --------------------------------------------------------------------- */

/* A figure of the -v line, or "n/a" when it is unknown (< 0: a failed
 * request has no first token, an error reply no usage): never a made-up
 * number. */
static const char *known(char *buf, size_t cap, const char *fmt, double v)
{
    if (v < 0)
        return "n/a";
    snprintf(buf, cap, fmt, v);
    return buf;
}

/* The -v line of an exchange: what was sent and what is known of it. */
static void log_line(const struct exchange *ex, const struct atr_proxy_record *r, char *line,
                     size_t cap)
{
    char ttft[32], in[32], out[32];
    snprintf(line, cap, "%s %s session=%s turn=%llu upstream=%u status=%d ttft_ms=%s "
             "e2e_ms=%.1f in=%s out=%s%s%s", ex->chat ? "chat" : "completions",
             ex->stream ? "stream" : "json", r->session, (unsigned long long)r->turn, ex->up,
             r->status, known(ttft, sizeof ttft, "%.1f", r->ttft_s * 1e3), r->e2e_s * 1e3,
             known(in, sizeof in, "%.0f", (double)r->prompt_tokens),
             known(out, sizeof out, "%.0f", (double)r->output_tokens),
             r->error ? " error=" : "", r->error ? r->error : "");
}

static void record(struct exchange *ex)
{
    struct atr_proxy *p = ex->p;
    /* A trace's ids cover its whole prompt: the open block's id ends them. */
    uint64_t partial = atr_blockhash_partial_id(&ex->hash);
    if (partial) {
        if (ex->hash.n_ids == ex->hash.cap_ids) {
            ex->hash.cap_ids = ex->hash.cap_ids ? ex->hash.cap_ids * 2 : 8;
            ex->hash.ids = xreallocarray(ex->hash.ids, ex->hash.cap_ids, sizeof *ex->hash.ids);
        }
        ex->hash.ids[ex->hash.n_ids++] = partial;
    }
    struct atr_proxy_record r = {
        .session = p->sessions.v[ex->session].id, .session_source = ex->session_source,
        .turn = ex->turn, .start_unix = ex->t0_unix, .api = ex->chat ? "chat" : "completions",
        .model = ex->model, .stream = ex->stream, .prompt_tokens = ex->prompt_tokens,
        .output_tokens = ex->output_tokens, .cached_tokens = ex->cached_tokens,
        .est_prompt_tokens = ex->est_tokens, .block_size = PROXY_BLOCK,
        .block_ids = ex->hash.ids, .n_block_ids = ex->hash.n_ids, .ttft_s = ex->ttft,
        .e2e_s = ex->end - ex->t0, .n_itl = ex->n_gaps, .n_chunks = ex->n_chunks,
        .status = ex->status, .error = ex->err == PERR_NONE ? NULL : proxy_err_names[ex->err],
        .upstream = ex->up, .upstream_url = p->up[ex->up].url,
        .policy = atr_policy_name(p->policy), .max_tokens_cap = ex->dec.max_tokens,
        .retries = ex->tried ? ex->tried - 1 : 0,
        .prompt_text = ex->prompt_text, .prompt_len = ex->prompt_len,
    };
    if (ex->n_gaps) {
        double sum = 0, max = 0;
        for (size_t i = 0; i < ex->n_gaps; i++) {
            sum += ex->gaps[i];
            max = ex->gaps[i] > max ? ex->gaps[i] : max;
        }
        r.itl_mean_s = sum / (double)ex->n_gaps;
        r.itl_max_s = max;
        r.itl_p50_s = atr_percentile(ex->gaps, ex->n_gaps, 50);
        r.itl_p99_s = atr_percentile(ex->gaps, ex->n_gaps, 99);
    }
    if (p->cfg.on_record)
        p->cfg.on_record(p->cfg.ctx, &r);
    proxy_feed_publish(&p->feed, &r);
    if (p->cfg.on_log) {
        char line[512];
        log_line(ex, &r, line, sizeof line);
        p->cfg.on_log(p->cfg.ctx, line);
    }
}

/* Counters, the policy's and the session's news, the record; then free. */
static void finish(struct exchange *ex)
{
    struct atr_proxy *p = ex->p;
    ex->end = proxy_now();
    if (ex->llm) {
        struct upstream *u = &p->up[ex->up];
        p->m.errors[ex->err]++;
        if (ex->ttft >= 0)
            proxy_hist_add(&p->m.ttft, ex->ttft);
        proxy_hist_add(&p->m.e2e, ex->end - ex->t0);
        if (ex->prompt_tokens > 0) {
            p->m.tokens_in += (uint64_t)ex->prompt_tokens;
            u->tokens_in += (uint64_t)ex->prompt_tokens;
        }
        if (ex->output_tokens > 0) {
            p->m.tokens_out += (uint64_t)ex->output_tokens;
            u->tokens_out += (uint64_t)ex->output_tokens;
        }
        if (ex->cached_tokens > 0) {
            p->m.cached += (uint64_t)ex->cached_tokens;
            u->cached += (uint64_t)ex->cached_tokens;
        }
        struct proxy_session *s = &p->sessions.v[ex->session];
        s->last_end = ex->end;
        s->last_output = ex->output_tokens > 0 ? (uint32_t)ex->output_tokens : 0;
        s->output_sum += s->last_output;
        if (ex->policy_started) {
            struct atr_policy_outcome o = {
                .success = ex->err == PERR_NONE, .output_tokens = s->last_output,
                .cached_tokens = ex->cached_tokens > 0 ? (uint32_t)ex->cached_tokens : 0,
                .ttft_s = ex->ttft, .e2el_s = ex->end - ex->t0,
            };
            atr_policy_finished(p->policy, &ex->preq, &ex->dec, &o);
        }
        record(ex);
    }
    ex_free(ex);
}

/* Frees an exchange in flight without a record (the proxy is freed). */
void proxy_exchange_abort(struct exchange *ex)
{
    if (ex->creq)
        evhttp_connection_set_closecb(client_conn(ex), NULL, NULL);
    upstream_close(ex, false);
    ex_free(ex);
}

/* ---- entry points ----------------------------------------------------------------------- */

/* The client's body moved out of libevent's buffer a piece at a time, so
 * that its chains are freed as the copy grows: the body is held once, not
 * twice (evbuffer_pullup would copy it whole before freeing them). */
static void take_body(struct evhttp_request *req, struct atr_buf *to)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    atr_buf_reserve(to, evbuffer_get_length(in));   /* xrealloc: no failure */
    int n;
    while ((n = evbuffer_remove(in, to->data + to->len, 1u << 16)) > 0)
        to->len += (size_t)n;
    to->data[to->len] = '\0';
}

static bool read_json(struct exchange *ex, const struct atr_json **root)
{
    take_body(ex->creq, &ex->body);
    size_t len = ex->body_len = ex->body.len;
    if (len >= TRIM_BODY_BYTES)
        malloc_trim(0);    /* the chains it came in: freed, yet resident */
    const char *text = ex->body.data;
    struct atr_json_err je;
    struct atr_json *r;
    /* A prompt of token ids is held as 8 bytes a value, not 80 (a node) */
    const struct atr_json_opts opts = {.pack_key = "prompt", .pack_max = UINT64_MAX};
    if (atr_json_parse(&ex->arena, text, len, &opts, &r, &je) != 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "request body: %u:%u: %s", je.line, je.col, je.msg);
        proxy_send_error(ex->p, ex->creq, 400, msg);
        return false;
    }
    if (!atr_json_is(r, ATR_JSON_OBJECT)) {
        proxy_send_error(ex->p, ex->creq, 400, "request body: expected a JSON object");
        return false;
    }
    *root = r;
    return true;
}

/* What goes upstream: the client's bytes as they came, or rewritten. The
 * parse tree is let go here (its strings are a second copy of the body),
 * and the client's text too unless the record keeps it. */
static void settle_body(struct exchange *ex, const struct atr_json *root)
{
    bool keep = ex->p->cfg.record_content;
    if (needs_rewrite(ex, root)) {
        struct atr_buf text = ex->body;
        ex->body = (struct atr_buf)ATR_BUF_INIT;
        atr_buf_reserve(&ex->body, text.len + 128);   /* once: no doubling copies */
        rewrite_body(ex, root, &ex->body);
        if (keep) {
            ex->prompt_text = text.data;
            ex->prompt_len = text.len;
        } else {
            atr_buf_release(&text);
        }
    } else if (keep) {
        ex->prompt_text = xstrndup(ex->body.data, ex->body.len);
        ex->prompt_len = ex->body.len;
    }
    atr_arena_release(&ex->arena);
    if (ex->body_len >= TRIM_BODY_BYTES)
        malloc_trim(0);    /* libevent's chains and the tree: freed, yet resident */
}

static char *upstream_path(struct evhttp_request *req)
{
    return xstrdup(evhttp_request_get_uri(req));
}

void proxy_llm_request(struct atr_proxy *p, struct evhttp_request *req, bool chat)
{
    struct exchange *ex = ex_new(p, req);
    ex->llm = true;
    ex->chat = chat;
    ex->t0_unix = unix_now();
    p->m.requests++;
    const struct atr_json *root;
    if (!read_json(ex, &root)) {
        ex->creq = NULL;
        ex->err = PERR_BAD_REQUEST;
        ex->status = 400;
        p->m.errors[PERR_BAD_REQUEST]++;
        ex->llm = false;               /* no session, no record */
        ex_free(ex);
        return;
    }
    size_t mlen;
    const char *model = atr_json_get_str(root, "model", &mlen);
    ex->model = model ? xstrndup(model, mlen) : NULL;
    const struct atr_json *st = atr_json_get(root, "stream");
    ex->stream = st && st->type == ATR_JSON_TRUE;
    ex->strip_usage = ex->stream && !want_usage(root);
    hash_prompt(ex, root);
    choose(ex, root);
    settle_body(ex, root);
    ex->path = upstream_path(req);
    ex->out = evbuffer_new();
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_close, ex);
    send_upstream(ex);
}

void proxy_pass_request(struct atr_proxy *p, struct evhttp_request *req)
{
    struct exchange *ex = ex_new(p, req);
    take_body(req, &ex->body);
    ex->body_len = ex->body.len;
    ex->path = upstream_path(req);
    ex->out = evbuffer_new();
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_close, ex);
    send_upstream(ex);
}

/* ---- GET /v1/models, merged ------------------------------------------------------------ */

struct models {
    struct atr_proxy *p;
    struct evhttp_request *creq;
    size_t pending, answered;
    struct atr_arena arena;
    struct atr_buf out;                 /* the merged "data" members */
    struct atr_jw w;
    struct atr_json **seen;             /* model objects written, for de-duplication */
    size_t n_seen;
    struct {
        struct models *m;
        struct evhttp_connection *conn;
        size_t index;
        struct atr_buf body;
    } *calls;
};

static bool seen_model(struct models *m, const char *id)
{
    for (size_t i = 0; i < m->n_seen; i++) {
        const char *s = atr_json_get_str(m->seen[i], "id", NULL);
        if (s && strcmp(s, id) == 0)
            return true;
    }
    return false;
}

static void models_merge(struct models *m, const struct atr_buf *body)
{
    struct atr_json *root;
    struct atr_json_err je;
    if (!body->len || atr_json_parse(&m->arena, body->data, body->len, NULL, &root, &je) != 0)
        return;
    const struct atr_json *data = atr_json_get(root, "data");
    if (!atr_json_is(data, ATR_JSON_ARRAY))
        return;
    m->answered++;
    for (struct atr_json *d = data->u.kids.first; d; d = d->next) {
        const char *id = atr_json_get_str(d, "id", NULL);
        if (!id || seen_model(m, id))
            continue;
        m->seen = xreallocarray(m->seen, m->n_seen + 1, sizeof *m->seen);
        m->seen[m->n_seen++] = d;
        atr_jw_value(&m->w, d);
    }
}

static void models_done(struct models *m)
{
    atr_jw_array_end(&m->w);
    atr_jw_object_end(&m->w);
    (void)atr_jw_finish(&m->w);
    if (!m->answered) {
        proxy_send_error(m->p, m->creq, 502, "no upstream answered /v1/models");
    } else {
        evhttp_add_header(evhttp_request_get_output_headers(m->creq), "Content-Type",
                          "application/json");
        struct evbuffer *b = evbuffer_new();
        evbuffer_add(b, m->out.data, m->out.len);
        evhttp_send_reply(m->creq, 200, "OK", b);
        evbuffer_free(b);
    }
    for (size_t i = 0; i < m->p->n_up; i++) {
        if (m->calls[i].conn)
            proxy_conn_put(&m->p->up[i], m->calls[i].conn);
        atr_buf_release(&m->calls[i].body);
    }
    free(m->calls);
    free(m->seen);
    atr_buf_release(&m->out);
    atr_arena_release(&m->arena);
    free(m);
}

static void on_models_done(struct evhttp_request *ureq, void *arg)
{
    void **call = arg;
    struct models *m = call[0];
    size_t i = (size_t)(uintptr_t)call[1];
    free(call);
    if (ureq && evhttp_request_get_response_code(ureq) == 200) {
        struct evbuffer *in = evhttp_request_get_input_buffer(ureq);
        size_t n = evbuffer_get_length(in);
        if (n && n <= (1u << 20))
            atr_buf_append(&m->calls[i].body, evbuffer_pullup(in, -1), n);
        models_merge(m, &m->calls[i].body);
    }
    else if (m->calls[i].conn) {
        evhttp_connection_free(m->calls[i].conn);
        m->calls[i].conn = NULL;
    }
    if (--m->pending == 0)
        models_done(m);
}

void proxy_models_request(struct atr_proxy *p, struct evhttp_request *req)
{
    struct models *m = xcalloc(1, sizeof *m);
    m->p = p;
    m->creq = req;
    m->calls = xcalloc(p->n_up, sizeof *m->calls);
    atr_jw_init(&m->w, &m->out, ATR_JW_COMPACT);
    atr_jw_object_begin(&m->w);
    atr_jw_kv_str(&m->w, "object", "list");
    atr_jw_key(&m->w, "data");
    atr_jw_array_begin(&m->w);
    m->pending = p->n_up + 1;          /* +1: held until every call is out */
    for (size_t i = 0; i < p->n_up; i++) {
        struct upstream *u = &p->up[i];
        void **call = xcalloc(2, sizeof *call);
        call[0] = m;
        call[1] = (void *)(uintptr_t)i;
        /* A new connection: a listing is not resent, and an idle one may
         * be one the upstream closed (resend_fresh). */
        bool pooled;
        struct evhttp_connection *c = proxy_conn_get(p, u, true, &pooled);
        struct evhttp_request *r = c ? evhttp_request_new(on_models_done, call) : NULL;
        if (!r) {
            if (c)
                evhttp_connection_free(c);
            free(call);
            m->pending--;
            continue;
        }
        m->calls[i].conn = c;
        char host[300];
        snprintf(host, sizeof host, "%s:%u", u->host, u->port);
        evhttp_add_header(evhttp_request_get_output_headers(r), "Host", host);
        if (p->cfg.upstream_key) {
            char auth[512];
            snprintf(auth, sizeof auth, "Bearer %s", p->cfg.upstream_key);
            evhttp_add_header(evhttp_request_get_output_headers(r), "Authorization", auth);
        }
        char *path = xasprintf("%s/v1/models", u->prefix);
        if (evhttp_make_request(c, r, EVHTTP_REQ_GET, path) < 0) {
            m->calls[i].conn = NULL;
            evhttp_connection_free(c);
            free(call);
            m->pending--;
        }
        free(path);
    }
    if (--m->pending == 0)
        models_done(m);
}
