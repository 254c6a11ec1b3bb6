/* server.c - the HTTP side of `atr sim serve`: routing, one stream per
 * completion request, the real-time engine driver, faults and /metrics.
 *
 * Lifetimes. A stream lives while its HTTP side is open (st->req) or, in
 * engine mode, while the engine still runs its request (the engine borrows
 * st->hash_ids until then). libevent owns requests and connections: when a
 * client goes away, libevent detaches our request from the dying
 * connection and calls on_conn_close; from then on the request is ours to
 * free and is never written to again. Callbacks never free a stream
 * directly; they mark it and let its reap event do it from the loop. */
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

#include "json/json.h"
#include "json/writer.h"
#include "serve/server.h"
#include "util/accept.h"
#include "util/alloc.h"
#include "util/http.h"
#include "util/net.h"
#include "util/buf.h"

#define DEFAULT_MAX_BODY (16u << 20)
/* A first request (headers and body) still arriving after this long is a
 * client holding the connection, not a slow one: a benchmark client sends
 * its request at once, and later requests on the connection have no such
 * deadline. */
#define DEFAULT_HEADER_TIMEOUT_S 10
/* A stream's bytes queued for a client, at most (and one event): past it
 * no more events are written until the client has read them all. */
#define STREAM_MAX_QUEUED (256u << 10)
#define CHAT_DEFAULT_MAX 4096

/* vLLM's time_to_first_token_seconds buckets. */
static const double ttft_buckets[] = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
};
#define N_BUCKETS (sizeof ttft_buckets / sizeof *ttft_buckets)

/* Token k of every answer is words[k % 8]: short, deterministic, and
 * needing no JSON escaping. */
static const char *const words[] = {
    " the", " model", " says", " hello", " to", " a", " simulated", " world",
};
#define N_WORDS 8

static const char *const fault_names[] = { "429", "500", "cut", "stall" };

struct counters {
    uint64_t requests[2];        /* by api */
    uint64_t prompt_tokens, generation_tokens, success, aborted, bad_requests;
    uint64_t faults[4];
    uint64_t ttft_hist[N_BUCKETS + 1];
    double ttft_sum;
    uint64_t ttft_count;
};

struct stream {
    struct atr_serve *srv;
    struct stream *prev, *next;  /* the server's list */
    struct evhttp_request *req;  /* NULL once answered, closed or gone */
    enum atr_serve_api api;
    bool stream, include_usage;
    bool gen_done;               /* every token produced (engine finished it) */
    bool cut, stall, closing;    /* faults; closing: the close is scheduled */
    bool blocked;                /* STREAM_MAX_QUEUED reached: waits for a drain */
    uint64_t seq;
    uint32_t prompt_tokens, max_tokens;
    uint32_t produced, sent, cut_at;
    double arrival;              /* server clock */
    uint64_t *hash_ids;          /* borrowed by the engine until it finishes */
    size_t n_hash_ids;
    const struct atr_sim_record *rec;   /* engine mode */
    struct event *tok_ev;        /* fixed mode: next token due */
    struct event *close_ev;      /* close (cut, stall) or reap */
    char id[40];                 /* "cmpl-SEQ", "chatcmpl-SEQ": every chunk's "id" */
    /* A token event's text before its word, after it, and after it on the
     * last token (streams only; see token_template). */
    struct atr_buf tok;
    size_t tok_pre, tok_more;
};

struct atr_serve {
    struct event_base *base;
    struct atr_serve_cfg cfg;
    char *model_id;
    struct atr_buf model_json;   /* the id as a JSON string, for /metrics labels */
    struct evhttp *http;
    struct atr_accept_guard *accept_guard;
    unsigned port;
    struct atr_engine *engine;
    struct atr_frontend frontend;   /* the API server's modelled time, as atr sim run's */
    struct event *engine_ev;
    double t0;                   /* CLOCK_MONOTONIC at start */
    long long created;           /* wall clock at start, for "created" */
    struct stream *streams;
    size_t n_streams;
    bool trim_due;               /* a stream filled its queue: trim when all are gone */
    uint64_t seq;                /* completion requests received */
    struct atr_arena arena;      /* one request body's parse */
    struct atr_buf tmp;          /* response text being built */
    struct evbuffer *out;
    struct counters c;
    unsigned kinds[4], n_kinds;  /* enabled fault kinds, as indexes */
    char fatal[ATR_ERROR_MAX];   /* the engine failed: why */
};

static void stream_pump(struct stream *st, double now);
static void engine_kick(struct atr_serve *s);

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Simulated seconds since start: wall time over --time-scale. */
static double srv_now(const struct atr_serve *s)
{
    return (mono_now() - s->t0) / s->cfg.time_scale;
}

static struct timeval tv_of(double sec)
{
    if (!(sec > 0))
        sec = 0;
    if (sec > 1e8)
        sec = 1e8;
    struct timeval tv = { (time_t)sec, (suseconds_t)((sec - floor(sec)) * 1e6) };
    return tv;
}

/* ---- answers ---- */

static const char *reason_of(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 429: return "Too Many Requests";
    default: return "Internal Server Error";
    }
}

static const char *error_type(int code)
{
    switch (code) {
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 429: return "RateLimitError";
    case 500: return "InternalServerError";
    default: return "BadRequestError";
    }
}

static void send_body(struct atr_serve *s, struct evhttp_request *req, int code,
                      const char *type)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    if (type)
        evhttp_add_header(h, "Content-Type", type);
    evbuffer_add(s->out, s->tmp.data ? s->tmp.data : "", s->tmp.len);
    evhttp_send_reply(req, code, reason_of(code), s->out);
    evbuffer_drain(s->out, evbuffer_get_length(s->out));
}

/* vLLM's error object. */
static void send_error(struct atr_serve *s, struct evhttp_request *req, int code,
                       const char *msg)
{
    struct atr_jw w;
    atr_buf_clear(&s->tmp);
    atr_jw_init(&w, &s->tmp, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "object", "error");
    atr_jw_kv_str(&w, "message", msg);
    atr_jw_kv_str(&w, "type", error_type(code));
    atr_jw_kv_null(&w, "param");
    atr_jw_kv_int(&w, "code", code);
    atr_jw_object_end(&w);
    (void)atr_jw_finish(&w);     /* tmp has no cap */
    if (code == 429)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
    if (code >= 400 && code < 500 && code != 429)
        s->c.bad_requests++;
    send_body(s, req, code, "application/json");
}

/* ---- stream text ---- */

/* The members every object of a stream opens with. */
static void put_head(struct atr_jw *w, const struct stream *st)
{
    const struct atr_serve *s = st->srv;
    bool chat = st->api == ATR_SERVE_CHAT;
    atr_jw_kv_str(w, "id", st->id);
    atr_jw_kv_str(w, "object", chat ? (st->stream ? "chat.completion.chunk" : "chat.completion")
                                    : "text_completion");
    atr_jw_kv_int(w, "created", s->created + (long long)st->arrival);
    atr_jw_kv_str(w, "model", s->model_id);
}

static void put_usage(struct atr_jw *w, const struct stream *st)
{
    uint32_t cached = st->rec ? st->rec->cached_tokens : 0;
    atr_jw_key(w, "usage");
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "prompt_tokens", st->prompt_tokens);
    atr_jw_kv_uint(w, "total_tokens", (uint64_t)st->prompt_tokens + st->max_tokens);
    atr_jw_kv_uint(w, "completion_tokens", st->max_tokens);
    atr_jw_key(w, "prompt_tokens_details");
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "cached_tokens", cached);
    atr_jw_object_end(w);
    atr_jw_object_end(w);
}

/* "choices" with the one choice: chat's text is the content of `wrap`
 * ("delta" in chunks, "message" whole; role: it opens the answer),
 * a completion's is "text". fin NULL writes null. */
static void put_choices(struct atr_jw *w, const struct stream *st, const char *wrap, bool role,
                        const char *text, size_t len, const char *fin)
{
    bool chat = st->api == ATR_SERVE_CHAT;
    atr_jw_key(w, "choices");
    atr_jw_array_begin(w);
    atr_jw_object_begin(w);
    atr_jw_kv_int(w, "index", 0);
    if (chat) {
        atr_jw_key(w, wrap);
        atr_jw_object_begin(w);
        if (role)
            atr_jw_kv_str(w, "role", "assistant");
        atr_jw_kv_strn(w, "content", text, len);
        atr_jw_object_end(w);
    } else {
        atr_jw_kv_strn(w, "text", text, len);
    }
    atr_jw_kv_null(w, "logprobs");
    atr_jw_kv_str(w, "finish_reason", fin);
    if (!chat)
        atr_jw_kv_null(w, "stop_reason");
    atr_jw_object_end(w);
    atr_jw_array_end(w);
}

/* An SSE event's JSON opens with the head; chunk_end closes it. */
static void chunk_begin(struct atr_jw *w, struct atr_buf *b, const struct stream *st)
{
    atr_buf_puts(b, "data: ");
    atr_jw_init(w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(w);
    put_head(w, st);
}

static void chunk_end(struct atr_jw *w, struct atr_buf *b)
{
    atr_jw_object_end(w);
    (void)atr_jw_finish(w);      /* tmp has no cap */
    atr_buf_puts(b, "\n\n");
}

/* The events of one stream differ only in the word and, on the last token,
 * the finish reason: the writer renders one event with a marker for the
 * word, once per stream, and each token copies the text around it (a
 * token event is the server's hot path). */
static void token_template(struct stream *st)
{
    static const char mark[] = "\\u0001";       /* how the writer escapes "\x01" */
    struct atr_buf b = ATR_BUF_INIT;
    for (int last = 0; last < 2; last++) {
        struct atr_jw w;
        atr_buf_clear(&b);
        chunk_begin(&w, &b, st);
        put_choices(&w, st, "delta", false, "\x01", 1, last ? "length" : NULL);
        chunk_end(&w, &b);
        const char *at = strstr(b.data, mark);
        size_t pre = (size_t)(at - b.data), post = pre + sizeof mark - 1;
        if (!last) {
            atr_buf_append(&st->tok, b.data, pre);
            st->tok_pre = pre;
            st->tok_more = b.len - post;
        }
        atr_buf_append(&st->tok, b.data + post, b.len - post);
    }
    atr_buf_release(&b);
}

/* One SSE event per token; chat opens with the assistant role. */
static void put_token_event(struct atr_buf *b, const struct stream *st, uint32_t k)
{
    if (st->api == ATR_SERVE_CHAT && k == 0) {
        struct atr_jw w;
        chunk_begin(&w, b, st);
        put_choices(&w, st, "delta", true, "", 0, NULL);
        chunk_end(&w, b);
    }
    const char *post = st->tok.data + st->tok_pre;
    bool last = k + 1 == st->max_tokens;
    atr_buf_append(b, st->tok.data, st->tok_pre);
    atr_buf_puts(b, words[k % N_WORDS]);          /* plain words: nothing to escape */
    if (last)
        atr_buf_append(b, post + st->tok_more, st->tok.len - st->tok_pre - st->tok_more);
    else
        atr_buf_append(b, post, st->tok_more);
}

static void put_stream_end(struct atr_buf *b, const struct stream *st)
{
    if (st->include_usage) {
        struct atr_jw w;
        chunk_begin(&w, b, st);
        atr_jw_key(&w, "choices");
        atr_jw_array_begin(&w);
        atr_jw_array_end(&w);
        put_usage(&w, st);
        chunk_end(&w, b);
    }
    atr_buf_puts(b, "data: [DONE]\n\n");
}

/* The non-streaming answer: every token's text at once. */
static void put_full_answer(struct atr_buf *b, const struct stream *st)
{
    struct atr_buf text = ATR_BUF_INIT;
    for (uint32_t k = 0; k < st->max_tokens; k++)
        atr_buf_puts(&text, words[k % N_WORDS]);
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    put_head(&w, st);
    put_choices(&w, st, "message", true, text.data ? text.data : "", text.len, "length");
    put_usage(&w, st);
    atr_jw_object_end(&w);
    (void)atr_jw_finish(&w);     /* tmp has no cap */
    atr_buf_release(&text);
}

/* ---- stream life ---- */

static void stream_free(struct stream *st)
{
    struct atr_serve *s = st->srv;
    if (st->prev)
        st->prev->next = st->next;
    else
        s->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    s->n_streams--;
    if (s->n_streams == 0 && s->trim_due) {
        s->trim_due = false;
        malloc_trim(0);          /* the queues' pages, freed yet resident otherwise */
    }
    if (st->rec && s->engine)
        atr_engine_release_record(s->engine, st->rec);
    if (st->tok_ev)
        event_free(st->tok_ev);
    event_free(st->close_ev);
    free(st->hash_ids);
    atr_buf_release(&st->tok);
    free(st);
}

/* Frees st once nothing refers to it any more. */
static void stream_maybe_free(struct stream *st)
{
    if (!st->req && (st->gen_done || !st->rec))
        stream_free(st);
}

static void schedule_close(struct stream *st, double after)
{
    struct timeval tv = tv_of(after);
    st->closing = true;
    event_add(st->close_ev, &tv);
}

/* libevent is tearing down st's connection (client gone, timeout, or the
 * server shutting down). A request still attached is freed by libevent; a
 * detached one is ours to free. */
static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    struct stream *st = arg;
    if (!st->req)
        return;
    /* The client left before the answer was complete: like vLLM, abort the
     * request in the engine so it stops taking a batch slot and KV. */
    if (st->rec && st->srv->engine && !st->gen_done) {
        atr_engine_abort(st->srv->engine, st->rec);
        st->gen_done = true;
        st->srv->c.aborted++;
    }
    if (!evhttp_request_get_connection(st->req))
        evhttp_request_free(st->req);
    st->req = NULL;
    schedule_close(st, 0);      /* reaps st from the loop */
}

static struct evhttp_connection *stream_conn(struct stream *st)
{
    return st->req ? evhttp_request_get_connection(st->req) : NULL;
}

/* Closes the connection without finishing the answer (cut, stall). */
static void stream_drop_conn(struct stream *st)
{
    struct evhttp_connection *evcon = stream_conn(st);
    if (evcon) {
        evhttp_connection_set_closecb(evcon, NULL, NULL);
        evhttp_connection_free(evcon);      /* frees st->req with it */
    } else if (st->req) {
        evhttp_request_free(st->req);
    }
    st->req = NULL;
}

static void on_close_ev(evutil_socket_t fd, short what, void *arg)
{
    struct stream *st = arg;
    stream_drop_conn(st);
    if (!st->gen_done && !st->rec && st->tok_ev)
        event_del(st->tok_ev);
    stream_maybe_free(st);
}

static void on_cut_flushed(struct evhttp_connection *evcon, void *arg)
{
    schedule_close(arg, 0);
}

/* The answer is complete: detach from the connection (which may serve the
 * client's next request) before handing the last bytes to libevent. */
static void stream_release_conn(struct stream *st)
{
    struct evhttp_connection *evcon = stream_conn(st);
    if (evcon)
        evhttp_connection_set_closecb(evcon, NULL, NULL);
    st->req = NULL;
}

static size_t stream_queued(struct stream *st)
{
    struct evhttp_connection *evcon = stream_conn(st);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void on_stream_drained(struct evhttp_connection *evcon, void *arg)
{
    struct stream *st = arg;
    st->blocked = false;
    stream_pump(st, srv_now(st->srv));
}

/* Writes the events up to upto that fit under STREAM_MAX_QUEUED (one at
 * least); the rest wait for on_stream_drained. A client that reads
 * nothing once held its whole answer here (100 such: 1.1 GB). */
static void send_stream_tokens(struct stream *st, uint32_t upto)
{
    struct atr_serve *s = st->srv;
    struct atr_buf *b = &s->tmp;
    if (st->blocked)
        return;
    size_t queued = stream_queued(st);
    size_t room = queued < STREAM_MAX_QUEUED ? STREAM_MAX_QUEUED - queued : 0;
    atr_buf_clear(b);
    uint32_t k = st->sent;
    for (; k < upto && (k == st->sent || b->len < room); k++)
        put_token_event(b, st, k);
    st->blocked = k < upto;
    s->trim_due |= st->blocked;
    upto = st->sent = k;
    bool complete = upto == st->max_tokens && !st->cut && !st->stall;
    if (complete)
        put_stream_end(b, st);
    if (b->len)
        evbuffer_add(s->out, b->data, b->len);
    if (st->cut && upto == st->cut_at && !st->closing) {
        st->closing = true;
        evhttp_send_reply_chunk_with_cb(st->req, s->out, on_cut_flushed, st);
    } else if (b->len) {
        evhttp_send_reply_chunk_with_cb(st->req, s->out, st->blocked ? on_stream_drained : NULL,
                                        st);
    }
    evbuffer_drain(s->out, evbuffer_get_length(s->out));
    if (complete && st->req) {
        struct evhttp_request *req = st->req;
        stream_release_conn(st);
        evhttp_send_reply_end(req);
    }
}

static void send_full(struct stream *st)
{
    struct evhttp_request *req = st->req;
    atr_buf_clear(&st->srv->tmp);
    put_full_answer(&st->srv->tmp, st);
    stream_release_conn(st);
    send_body(st->srv, req, 200, "application/json");
}

/* Writes what became due: tokens (streams), the answer (non-streams), and
 * the faults' closes. */
static void stream_send(struct stream *st)
{
    uint32_t upto = st->produced;
    if (st->cut && upto > st->cut_at)
        upto = st->cut_at;
    if (st->stall && upto > 1)
        upto = 1;
    if (st->stream) {
        if (upto > st->sent || (upto == st->max_tokens && !st->cut && !st->stall))
            send_stream_tokens(st, upto);
    } else {
        st->sent = upto;
        if (upto == st->max_tokens && !st->cut && !st->stall)
            send_full(st);
        else if (st->cut && upto == st->cut_at && !st->closing)
            schedule_close(st, 0);
    }
    if (st->req && st->stall && st->sent >= 1 && !st->closing)
        schedule_close(st, st->srv->cfg.stall_s);
}

static void count_ttft(struct atr_serve *s, double ttft)
{
    size_t i = 0;
    while (i < N_BUCKETS && ttft > ttft_buckets[i])
        i++;
    s->c.ttft_hist[i]++;
    s->c.ttft_sum += ttft;
    s->c.ttft_count++;
}

static uint32_t fixed_produced(const struct stream *st, double now)
{
    const struct atr_serve_cfg *c = &st->srv->cfg;
    double t = now - st->arrival - c->ttft_s;
    if (t < -1e-9)
        return 0;
    if (c->itl_s <= 0)
        return st->max_tokens;
    double k = 1 + floor(t / c->itl_s + 1e-9);
    return k >= st->max_tokens ? st->max_tokens : (uint32_t)k;
}

static void fixed_arm(struct stream *st, double now)
{
    const struct atr_serve_cfg *c = &st->srv->cfg;
    double due = st->arrival + c->ttft_s + (double)st->produced * c->itl_s;
    struct timeval tv = tv_of((due - now) * st->srv->cfg.time_scale);
    event_add(st->tok_ev, &tv);
}

/* Brings st up to date with what its request produced by now. */
static void stream_pump(struct stream *st, double now)
{
    struct atr_serve *s = st->srv;
    uint32_t produced = st->rec ? st->rec->tokens_done : fixed_produced(st, now);
    if (produced > st->produced) {
        if (st->produced == 0)
            count_ttft(s, st->rec ? st->rec->first_token - st->arrival : s->cfg.ttft_s);
        s->c.generation_tokens += produced - st->produced;
        st->produced = produced;
    }
    if (produced == st->max_tokens && !st->gen_done) {
        st->gen_done = true;
        s->c.success++;
    }
    if (st->req)
        stream_send(st);
    if (!st->rec && !st->gen_done && st->req)
        fixed_arm(st, now);
    stream_maybe_free(st);     /* callers do not touch st after this */
}

static void on_tok_ev(evutil_socket_t fd, short what, void *arg)
{
    struct stream *st = arg;
    stream_pump(st, srv_now(st->srv));
}

/* ---- engine driving ---- */

static void engine_arm(struct atr_serve *s, double now)
{
    double t = atr_engine_next_time(s->engine);
    if (isinf(t)) {
        event_del(s->engine_ev);
        return;
    }
    struct timeval tv = tv_of((t - now) * s->cfg.time_scale);
    event_add(s->engine_ev, &tv);
}

/* Runs the engine up to now, streams what it produced, re-arms the timer. */
static void engine_kick(struct atr_serve *s)
{
    struct atr_error err;
    double now = srv_now(s);
    if (atr_engine_run_until(s->engine, now, &err) < 0) {
        memcpy(s->fatal, err.msg, sizeof s->fatal);
        event_base_loopbreak(s->base);
        return;
    }
    struct stream *next;
    for (struct stream *st = s->streams; st; st = next) {
        next = st->next;        /* st may be freed */
        if (st->rec && (st->produced < st->rec->tokens_done || !st->gen_done))
            stream_pump(st, now);
    }
    engine_arm(s, now);
}

static void on_engine_ev(evutil_socket_t fd, short what, void *arg)
{
    engine_kick(arg);
}

/* ---- completion requests ---- */

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The fault of request seq, -1 for none: a pure function of (seed, seq). */
static int draw_fault(const struct atr_serve *s, uint64_t seq)
{
    if (s->cfg.fail_rate <= 0 || !s->n_kinds)
        return -1;
    uint64_t h = splitmix(s->cfg.seed ^ splitmix(seq));
    double u = (double)(h >> 11) * 0x1p-53;
    if (u >= s->cfg.fail_rate)
        return -1;
    return (int)s->kinds[splitmix(h) % s->n_kinds];
}

/* Token limits: the default output length, and vLLM's context check (the
 * simulator's too). */
static int check_lengths(struct atr_serve *s, enum atr_serve_api api,
                         const struct atr_serve_request *r, uint32_t *max_tokens, char *msg,
                         size_t cap)
{
    uint64_t limit = s->cfg.max_model_len, p = r->prompt_tokens;
    int64_t want = r->max_tokens;
    if (want < 0 && api == ATR_SERVE_COMPLETIONS)
        want = 16;
    if (want < 0)
        want = p < limit ? (int64_t)(limit - p > CHAT_DEFAULT_MAX ? CHAT_DEFAULT_MAX : limit - p)
                         : 1;
    if (atr_context_check(limit, p, (uint64_t)want, msg, cap) < 0)
        return -1;
    *max_tokens = (uint32_t)want;
    return 0;
}

static struct stream *stream_new(struct atr_serve *s, struct evhttp_request *req,
                                 enum atr_serve_api api, struct atr_serve_request *r,
                                 uint32_t max_tokens, uint64_t seq)
{
    struct stream *st = xcalloc(1, sizeof *st);
    st->srv = s;
    st->req = req;
    st->api = api;
    st->stream = r->stream;
    st->include_usage = r->stream && r->include_usage;
    st->seq = seq;
    snprintf(st->id, sizeof st->id, "%s-%llu", api == ATR_SERVE_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)seq);
    st->prompt_tokens = (uint32_t)r->prompt_tokens;
    st->max_tokens = max_tokens;
    st->hash_ids = r->hash_ids;
    st->n_hash_ids = r->n_hash_ids;
    r->hash_ids = NULL;
    st->arrival = srv_now(s);
    if (st->stream)
        token_template(st);
    st->close_ev = event_new(s->base, -1, 0, on_close_ev, st);
    if (!s->engine)
        st->tok_ev = event_new(s->base, -1, 0, on_tok_ev, st);
    if (!st->close_ev || (!s->engine && !st->tok_ev))
        abort();   /* libevent could not allocate */
    st->next = s->streams;
    if (s->streams)
        s->streams->prev = st;
    s->streams = st;
    s->n_streams++;
    return st;
}

/* Whether the request says it is a session's turn (--kv-retain pins it):
 * a non-empty "user" in the body or an X-Session-Id header. The server
 * cannot know whether another turn follows, so every hinted turn is
 * pinned, the last one too. */
static bool session_hint(struct evhttp_request *req, const struct atr_serve_request *r)
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "X-Session-Id");
    return r->session_hint || (h && *h);
}

/* The request reaches the engine after the modelled front end (an
 * arrival in the engine's future: the engine's timer fires for it). */
static int stream_engine_add(struct stream *st, struct atr_error *err)
{
    struct atr_engine *e = st->srv->engine;
    double arrival = atr_frontend_arrival(&st->srv->frontend, st->prompt_tokens, st->arrival);
    if (arrival < atr_engine_now(e))
        arrival = atr_engine_now(e);
    struct atr_sim_req q = {
        .id = st->seq, .arrival = arrival, .prompt_tokens = st->prompt_tokens,
        .output_tokens = st->max_tokens, .hash_ids = st->hash_ids,
        .n_hash_ids = st->n_hash_ids,
    };
    st->rec = atr_engine_add(e, &q, err);
    return st->rec ? 0 : -1;
}

static void stream_begin(struct stream *st, int fault)
{
    struct atr_serve *s = st->srv;
    st->cut = fault == 2;
    st->stall = fault == 3;
    st->cut_at = st->max_tokens >= 2 ? st->max_tokens / 2 : 1;
    s->c.prompt_tokens += st->prompt_tokens;
    evhttp_connection_set_closecb(evhttp_request_get_connection(st->req), on_conn_close, st);
    if (st->stream) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(st->req);
        evhttp_add_header(h, "Content-Type", "text/event-stream");
        evhttp_add_header(h, "Cache-Control", "no-cache");
        evhttp_send_reply_start(st->req, 200, "OK");
    }
    if (s->engine)
        engine_kick(s);
    else
        stream_pump(st, st->arrival);
}

static bool model_known(const struct atr_serve *s, const char *model, char *msg, size_t cap)
{
    if (!model || strcmp(model, s->model_id) == 0)
        return true;
    snprintf(msg, cap, "The model `%s` does not exist.", model);
    return false;
}

static void handle_completion(struct atr_serve *s, struct evhttp_request *req,
                              enum atr_serve_api api)
{
    uint64_t seq = ++s->seq;
    s->c.requests[api]++;
    if (s->cfg.crash_after && seq == s->cfg.crash_after && s->cfg.on_crash)
        s->cfg.on_crash(s->cfg.crash_ctx, seq);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    struct atr_serve_request r;
    struct atr_error err;
    char msg[512];
    uint32_t max_tokens;
    atr_arena_clear(&s->arena);
    if (atr_serve_parse_request(api, body, len, &s->arena, &r, &err) < 0)
        return send_error(s, req, 400, err.msg);
    if (!model_known(s, r.model, msg, sizeof msg)) {
        free(r.hash_ids);
        return send_error(s, req, 404, msg);
    }
    if (check_lengths(s, api, &r, &max_tokens, msg, sizeof msg) < 0) {
        free(r.hash_ids);
        return send_error(s, req, 400, msg);
    }
    int fault = draw_fault(s, seq);
    if (fault >= 0)
        s->c.faults[fault]++;
    if (fault == 0 || fault == 1) {
        free(r.hash_ids);
        return send_error(s, req, fault == 0 ? 429 : 500,
                          fault == 0 ? "rate limited (atr sim serve --fail-kinds 429)"
                                     : "internal error (atr sim serve --fail-kinds 500)");
    }
    struct stream *st = stream_new(s, req, api, &r, max_tokens, seq);
    if (s->engine && stream_engine_add(st, &err) < 0) {
        st->req = NULL;
        stream_free(st);
        return send_error(s, req, 400, err.msg);
    }
    if (s->engine && s->cfg.engine.retain_s > 0 && session_hint(req, &r))
        atr_engine_set_retain(s->engine, st->rec);
    stream_begin(st, fault);
}

/* ---- other endpoints ---- */

static void handle_models(struct atr_serve *s, struct evhttp_request *req)
{
    struct atr_jw w;
    atr_buf_clear(&s->tmp);
    atr_jw_init(&w, &s->tmp, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "object", "list");
    atr_jw_key(&w, "data");
    atr_jw_array_begin(&w);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "id", s->model_id);
    atr_jw_kv_str(&w, "object", "model");
    atr_jw_kv_int(&w, "created", s->created);
    atr_jw_kv_str(&w, "owned_by", "atr");
    atr_jw_kv_str(&w, "root", s->model_id);
    atr_jw_kv_null(&w, "parent");
    atr_jw_kv_uint(&w, "max_model_len", s->cfg.max_model_len);
    atr_jw_key(&w, "permission");
    atr_jw_array_begin(&w);
    atr_jw_array_end(&w);
    atr_jw_object_end(&w);
    atr_jw_array_end(&w);
    atr_jw_object_end(&w);
    (void)atr_jw_finish(&w);     /* tmp has no cap */
    send_body(s, req, 200, "application/json");
}

static void metric_head(struct atr_buf *b, const char *name, const char *type, const char *help)
{
    atr_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metric(struct atr_serve *s, const char *name, const char *labels, double v)
{
    /* vLLM's label order: the sample's own labels, then model_name */
    atr_buf_printf(&s->tmp, "%s{%s%smodel_name=", name, labels ? labels : "", labels ? "," : "");
    atr_buf_append(&s->tmp, s->model_json.data, s->model_json.len);
    atr_buf_printf(&s->tmp, "} %.15g\n", v);
}

/* --kv-retain's counters (only with it: other scrapes stay as they were):
 * the knob's cost, as sim run's result has it. */
static void metrics_retain(struct atr_serve *s)
{
    struct atr_buf *b = &s->tmp;
    struct atr_engine_stats st;
    atr_engine_get_stats(s->engine, &st);
    metric_head(b, "atr_sim_kv_pins_total", "counter", "Finished requests whose KV blocks were pinned (--kv-retain, a session hint).");
    metric(s, "atr_sim_kv_pins_total", NULL, (double)st.kv_pins);
    metric_head(b, "atr_sim_kv_pins_dropped_total", "counter", "Pins ended early for another request's memory.");
    metric(s, "atr_sim_kv_pins_dropped_total", NULL, (double)st.kv_pins_dropped);
    metric_head(b, "atr_sim_kv_evictions_total", "counter", "Cached KV blocks evicted.");
    metric(s, "atr_sim_kv_evictions_total", NULL, (double)st.evictions);
}

static void metrics_engine(struct atr_serve *s)
{
    struct atr_buf *b = &s->tmp;
    double running = (double)s->n_streams, waiting = 0, kv = 0, queries = 0, hits = 0;
    if (s->engine) {
        struct atr_engine_stats st;
        atr_engine_get_stats(s->engine, &st);
        running = (double)atr_engine_num_running(s->engine);
        waiting = (double)atr_engine_num_waiting(s->engine);
        kv = (double)atr_engine_kv_blocks_used(s->engine) /
             (double)atr_engine_kv_blocks_total(s->engine);
        queries = (double)st.prompt_tokens;
        hits = (double)st.cached_tokens;
    } else {
        queries = (double)s->c.prompt_tokens;
    }
    metric_head(b, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
    metric(s, "vllm:num_requests_running", NULL, running);
    metric_head(b, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
    metric(s, "vllm:num_requests_waiting", NULL, waiting);
    metric_head(b, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
    metric(s, "vllm:kv_cache_usage_perc", NULL, kv);
    metric_head(b, "vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.");
    metric(s, "vllm:prefix_cache_queries_total", NULL, queries);
    metric_head(b, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.");
    metric(s, "vllm:prefix_cache_hits_total", NULL, hits);
    if (s->engine && s->cfg.engine.retain_s > 0)
        metrics_retain(s);
}

static void metrics_ttft(struct atr_serve *s)
{
    static const char name[] = "vllm:time_to_first_token_seconds";
    struct atr_buf *b = &s->tmp;
    uint64_t cum = 0;
    char le[64];
    metric_head(b, name, "histogram", "Histogram of time to first token in seconds.");
    for (size_t i = 0; i <= N_BUCKETS; i++) {
        cum += s->c.ttft_hist[i];
        if (i < N_BUCKETS)
            snprintf(le, sizeof le, "le=\"%g\"", ttft_buckets[i]);
        else
            snprintf(le, sizeof le, "le=\"+Inf\"");
        metric(s, "vllm:time_to_first_token_seconds_bucket", le, (double)cum);
    }
    metric(s, "vllm:time_to_first_token_seconds_sum", NULL, s->c.ttft_sum);
    metric(s, "vllm:time_to_first_token_seconds_count", NULL, (double)s->c.ttft_count);
}

static void metrics_atr(struct atr_serve *s)
{
    struct atr_buf *b = &s->tmp;
    char label[64];
    metric_head(b, "atr_sim_faults_total", "counter", "Faults injected (--fail-rate), by kind.");
    for (int k = 0; k < 4; k++) {
        snprintf(label, sizeof label, "kind=\"%s\"", fault_names[k]);
        metric(s, "atr_sim_faults_total", label, (double)s->c.faults[k]);
    }
    metric_head(b, "atr_sim_bad_requests_total", "counter", "Requests answered 4xx (malformed, unknown model or path, wrong method).");
    metric(s, "atr_sim_bad_requests_total", NULL, (double)s->c.bad_requests);
    metric_head(b, "atr_sim_requests_total", "counter", "Completion requests received, by endpoint.");
    metric(s, "atr_sim_requests_total", "endpoint=\"completions\"", (double)s->c.requests[0]);
    metric(s, "atr_sim_requests_total", "endpoint=\"chat\"", (double)s->c.requests[1]);
}

static void handle_metrics(struct atr_serve *s, struct evhttp_request *req)
{
    struct atr_buf *b = &s->tmp;
    atr_buf_clear(b);
    metrics_engine(s);
    metric_head(b, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
    metric(s, "vllm:prompt_tokens_total", NULL, (double)s->c.prompt_tokens);
    metric_head(b, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
    metric(s, "vllm:generation_tokens_total", NULL, (double)s->c.generation_tokens);
    metric_head(b, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
    metric(s, "vllm:request_success_total", "finished_reason=\"length\"", (double)s->c.success);
    metric(s, "vllm:request_success_total", "finished_reason=\"abort\"", (double)s->c.aborted);
    metrics_ttft(s);
    metrics_atr(s);
    send_body(s, req, 200, "text/plain; version=0.0.4; charset=utf-8");
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct atr_serve *s = arg;
    atr_accept_guard_request(s->accept_guard, req);
    if (s->cfg.hang)
        return;                 /* never answered; freed with its connection */
    const char *bad = atr_http_framing_error(req);
    if (bad)
        return send_error(s, req, 400, bad);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    bool get = m == EVHTTP_REQ_GET, post = m == EVHTTP_REQ_POST;
    if (!path)
        path = "";
    if (strcmp(path, "/v1/completions") == 0 && post)
        return handle_completion(s, req, ATR_SERVE_COMPLETIONS);
    if (strcmp(path, "/v1/chat/completions") == 0 && post)
        return handle_completion(s, req, ATR_SERVE_CHAT);
    if (strcmp(path, "/health") == 0 && get) {
        atr_buf_clear(&s->tmp);
        return send_body(s, req, 200, "application/json");
    }
    if (strcmp(path, "/v1/models") == 0 && get)
        return handle_models(s, req);
    if (strcmp(path, "/metrics") == 0 && get)
        return handle_metrics(s, req);
    bool known = strcmp(path, "/v1/completions") == 0 ||
                 strcmp(path, "/v1/chat/completions") == 0 || strcmp(path, "/health") == 0 ||
                 strcmp(path, "/v1/models") == 0 || strcmp(path, "/metrics") == 0;
    if (known)
        return send_error(s, req, 405, "Method Not Allowed");
    send_error(s, req, 404, "Not Found");
}

/* ---- setup ---- */

static double profile_cost(void *ctx, const struct atr_iter_work *w)
{
    return atr_iter_seconds(ctx, w);
}

static int setup_engine(struct atr_serve *s, struct atr_error *err)
{
    struct atr_engine_cfg ec = s->cfg.engine;
    ec.iter_seconds = profile_cost;
    ec.cost_ctx = (void *)s->cfg.profile;
    ec.kv_capacity_tokens = s->cfg.profile->kv_capacity_tokens;
    ec.block_size = ATR_SERVE_BLOCK_SIZE;
    s->engine = atr_engine_new(&ec, err);
    if (!s->engine)
        return -1;
    atr_frontend_init(&s->frontend, s->cfg.profile);
    s->engine_ev = event_new(s->base, -1, 0, on_engine_ev, s);
    return s->engine_ev ? 0 : atr_error_set(err, "serve: out of memory");
}

static void setup_faults(struct atr_serve *s)
{
    unsigned kinds = s->cfg.fail_kinds ? s->cfg.fail_kinds : ATR_FAULT_ALL;
    for (unsigned k = 0; k < 4; k++)
        if (kinds & (1u << k))
            s->kinds[s->n_kinds++] = k;
}

struct atr_serve *atr_serve_new(struct event_base *base, const struct atr_serve_cfg *cfg,
                                struct atr_error *err)
{
    struct atr_serve *s = xcalloc(1, sizeof *s);
    s->base = base;
    s->cfg = *cfg;
    if (!s->cfg.max_body)
        s->cfg.max_body = DEFAULT_MAX_BODY;
    if (!(s->cfg.time_scale > 0))
        s->cfg.time_scale = 1;
    if (!s->cfg.max_model_len)
        s->cfg.max_model_len = 1;
    s->model_id = xstrdup(cfg->model_id ? cfg->model_id : "atr-sim");
    s->t0 = mono_now();
    s->created = (long long)time(NULL);
    s->out = evbuffer_new();
    s->http = evhttp_new(base);
    if (!s->out || !s->http) {
        atr_serve_free(s);
        return atr_error_set(err, "serve: out of memory"), NULL;
    }
    atr_json_write_string(&s->model_json, s->model_id, strlen(s->model_id));
    setup_faults(s);
    if (cfg->profile && setup_engine(s, err) < 0) {
        atr_serve_free(s);
        return NULL;
    }
    double idle = s->cfg.idle_timeout_s > 0 ? s->cfg.idle_timeout_s : 86400;
    struct timeval tv = {(time_t)idle, (suseconds_t)((idle - (double)(time_t)idle) * 1e6)};
    evhttp_set_timeout_tv(s->http, &tv);
    evhttp_set_max_body_size(s->http, (ev_ssize_t)s->cfg.max_body);
    evhttp_set_max_headers_size(s->http, 64 << 10);
    evhttp_set_allowed_methods(s->http, 0x1ff);   /* every method: we answer 405 */
    evhttp_set_gencb(s->http, on_request, s);
    return s;
}

int atr_serve_listen(struct atr_serve *s, struct atr_error *err)
{
    const char *host = s->cfg.host ? s->cfg.host : "127.0.0.1";
    int fd = atr_net_listen("serve", host, s->cfg.port, &s->port, err);
    if (fd < 0)
        return -1;
    struct evhttp_bound_socket *bound = evhttp_accept_socket_with_handle(s->http, fd);
    if (!bound) {
        close(fd);
        return atr_error_set(err, "serve: cannot accept on %s", host);
    }
    s->accept_guard = atr_accept_guard_new(s->base, bound, "sim serve", s->cfg.on_warn,
                                           s->cfg.warn_ctx);
    atr_accept_guard_deadline(s->accept_guard, s->http,
                              s->cfg.header_timeout_s > 0 ? s->cfg.header_timeout_s
                                                        : DEFAULT_HEADER_TIMEOUT_S);
    atr_accept_guard_cap(s->accept_guard, s->http, s->cfg.max_connections ?
                         s->cfg.max_connections : atr_accept_default_cap(1));
    atr_accept_guard_max_request(s->accept_guard, s->cfg.max_body + (64u << 10));
    return 0;
}

unsigned atr_serve_port(const struct atr_serve *s)
{
    return s->port;
}

const char *atr_serve_failed(const struct atr_serve *s)
{
    return s->fatal[0] ? s->fatal : NULL;
}

struct atr_engine *atr_serve_engine(struct atr_serve *s)
{
    return s->engine;
}

void atr_serve_free(struct atr_serve *s)
{
    if (!s)
        return;
    atr_accept_guard_free(s->accept_guard);
    if (s->http)
        evhttp_free(s->http);   /* closes connections: on_conn_close drops requests */
    while (s->streams) {
        s->streams->req = NULL;
        s->streams->gen_done = true;
        stream_free(s->streams);
    }
    if (s->engine_ev)
        event_free(s->engine_ev);
    atr_engine_free(s->engine);
    if (s->out)
        evbuffer_free(s->out);
    atr_arena_release(&s->arena);
    atr_buf_release(&s->tmp);
    atr_buf_release(&s->model_json);
    free(s->model_id);
    free(s);
}
