/* cdp.c - the DevTools protocol client of cdp.h: NUL-framed JSON over two
 * non-blocking pipes, one poll loop for replies, events and the hook. */
#include "browser/cdp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json/writer.h"
#include "util/alloc.h"
#include "util/buf.h"

/* One message bigger than this is a broken peer, not a page. */
#define CDP_MAX_MESSAGE ((size_t)256 << 20)

struct atr_cdp {
    int wfd, rfd;
    bool closed, interrupted;
    int64_t next_id;
    struct atr_buf in;           /* bytes read, not yet dispatched, from in_pos */
    size_t in_pos;
    struct atr_buf msg;          /* the message being dispatched */
    struct atr_buf out;          /* the command being written */
    struct atr_arena arena;      /* the parsed message */
    atr_cdp_event_fn on_event;
    void *event_ctx;
    struct atr_cdp_hook hook;
    bool have_hook;
    int64_t next_tick_us;
    uint64_t bad;
    /* The reply awaited by atr_cdp_call. */
    int64_t want_id;
    bool got;
    struct atr_arena *want_arena;
    struct atr_json *want_result;
    char want_error[200];
};

int64_t atr_cdp_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct atr_cdp *atr_cdp_new(int to_browser, int from_browser)
{
    struct atr_cdp *c = xcalloc(1, sizeof *c);
    c->wfd = to_browser;
    c->rfd = from_browser;
    c->next_id = 1;
    fcntl(c->wfd, F_SETFL, fcntl(c->wfd, F_GETFL) | O_NONBLOCK);
    fcntl(c->rfd, F_SETFL, fcntl(c->rfd, F_GETFL) | O_NONBLOCK);
    return c;
}

void atr_cdp_free(struct atr_cdp *c)
{
    if (!c)
        return;
    if (c->wfd >= 0)
        close(c->wfd);
    if (c->rfd >= 0)
        close(c->rfd);
    atr_buf_release(&c->in);
    atr_buf_release(&c->msg);
    atr_buf_release(&c->out);
    atr_arena_release(&c->arena);
    free(c);
}

void atr_cdp_on_event(struct atr_cdp *c, atr_cdp_event_fn fn, void *ctx)
{
    c->on_event = fn;
    c->event_ctx = ctx;
}

void atr_cdp_set_hook(struct atr_cdp *c, const struct atr_cdp_hook *hook)
{
    c->have_hook = hook != NULL;
    if (hook) {
        c->hook = *hook;
        c->next_tick_us = hook->tick_ms > 0 ? atr_cdp_now_us() + hook->tick_ms * 1000 : 0;
    }
}

bool atr_cdp_closed(const struct atr_cdp *c) { return c->closed; }
void atr_cdp_interrupt(struct atr_cdp *c) { c->interrupted = true; }
uint64_t atr_cdp_bad_messages(const struct atr_cdp *c) { return c->bad; }

/* ---- dispatch ---- */

static void on_reply(struct atr_cdp *c, const struct atr_json *m, int64_t id)
{
    if (id != c->want_id || c->got)
        return;                              /* a fire-and-forget command's */
    c->got = true;
    const struct atr_json *e = atr_json_get(m, "error");
    if (e) {
        const char *msg = atr_json_get_str(e, "message", NULL);
        snprintf(c->want_error, sizeof c->want_error, "%s", msg ? msg : "error reply");
        return;
    }
    const struct atr_json *r = atr_json_get(m, "result");
    if (c->want_arena && r)
        c->want_result = atr_json_copy(c->want_arena, r);
}

void atr_cdp_feed(struct atr_cdp *c, const char *text, size_t len)
{
    struct atr_json *m;
    struct atr_json_err jerr;
    atr_arena_clear(&c->arena);
    if (atr_json_parse(&c->arena, text, len, NULL, &m, &jerr) < 0 ||
        m->type != ATR_JSON_OBJECT) {
        c->bad++;
        return;
    }
    int64_t id;
    if (atr_json_get_i64(m, "id", &id)) {
        on_reply(c, m, id);
        return;
    }
    const char *method = atr_json_get_str(m, "method", NULL);
    if (!method) {
        c->bad++;
        return;
    }
    const char *session = atr_json_get_str(m, "sessionId", NULL);
    const struct atr_json *params = atr_json_get(m, "params");
    if (c->on_event)
        c->on_event(c->event_ctx, method, session ? session : "",
                    atr_json_is(params, ATR_JSON_OBJECT) ? params : NULL);
}

/* Dispatches the next complete message in the buffer; false when none. */
static bool dispatch_one(struct atr_cdp *c)
{
    if (!c->in.data)
        return false;
    const char *start = c->in.data + c->in_pos;
    size_t avail = c->in.len - c->in_pos;
    const char *nul = avail ? memchr(start, '\0', avail) : NULL;
    if (!nul)
        return false;
    size_t n = (size_t)(nul - start);
    atr_buf_clear(&c->msg);
    atr_buf_append(&c->msg, start, n);      /* a copy: the callback may read more */
    c->in_pos += n + 1;
    atr_cdp_feed(c, c->msg.data ? c->msg.data : "", n);
    return true;
}

/* Drops dispatched bytes from the front of the buffer. */
static void compact(struct atr_cdp *c)
{
    if (c->in_pos == 0)
        return;
    memmove(c->in.data, c->in.data + c->in_pos, c->in.len - c->in_pos);
    c->in.len -= c->in_pos;
    c->in_pos = 0;
}

/* Reads what the pipe holds now; false once it is closed. */
static bool read_some(struct atr_cdp *c)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(c->rfd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0 || c->in.len - c->in_pos > CDP_MAX_MESSAGE) {
            c->closed = true;
            return false;
        }
        if (c->in_pos > c->in.len / 2)
            compact(c);
        atr_buf_append(&c->in, chunk, (size_t)n);
    }
}

static int closed_error(struct atr_error *err)
{
    atr_error_set(err, "the browser closed its DevTools pipe (it exited, crashed or was killed)");
    return ATR_CDP_CLOSED;
}

static int poll_ms(const struct atr_cdp *c, int64_t deadline_us)
{
    int64_t until = deadline_us;
    if (c->have_hook && c->next_tick_us && c->next_tick_us < until)
        until = c->next_tick_us;
    int64_t ms = (until - atr_cdp_now_us() + 999) / 1000;
    return ms < 0 ? 0 : ms > 1000000 ? 1000000 : (int)ms;
}

static void run_tick(struct atr_cdp *c)
{
    if (!c->have_hook || !c->next_tick_us)
        return;
    int64_t now = atr_cdp_now_us();
    if (now < c->next_tick_us)
        return;
    c->next_tick_us += (int64_t)c->hook.tick_ms * 1000;
    if (c->next_tick_us <= now)
        c->next_tick_us = now + (int64_t)c->hook.tick_ms * 1000;
    c->hook.fn(c->hook.ctx, false);
}

/* One round of waiting: the read end (and, writing, the write end), the
 * hook's fd and tick. Returns poll's revents of the write end. */
static short wait_round(struct atr_cdp *c, bool writing, int64_t deadline_us)
{
    struct pollfd pf[3];
    int n = 0, i_w = -1, i_h = -1;
    pf[n++] = (struct pollfd){.fd = c->rfd, .events = POLLIN};
    if (writing) {
        pf[n] = (struct pollfd){.fd = c->wfd, .events = POLLOUT};
        i_w = n++;
    }
    if (c->have_hook && c->hook.fd >= 0) {
        pf[n] = (struct pollfd){.fd = c->hook.fd, .events = c->hook.events};
        i_h = n++;
    }
    int rc = poll(pf, (nfds_t)n, poll_ms(c, deadline_us));
    if (rc > 0 && pf[0].revents)
        read_some(c);
    if (rc > 0 && i_h >= 0 && pf[i_h].revents) {
        if (pf[i_h].revents & (POLLERR | POLLNVAL) & ~c->hook.events)
            c->hook.fd = -1;                 /* broken: stop polling it */
        c->hook.fn(c->hook.ctx, true);
    }
    run_tick(c);
    return rc > 0 && i_w >= 0 ? pf[i_w].revents : 0;
}

/* Writes c->out whole, reading (not dispatching) meanwhile so neither
 * side can block the other. */
static int write_out(struct atr_cdp *c, int64_t deadline_us, struct atr_error *err)
{
    size_t off = 0;
    while (off < c->out.len) {
        if (c->closed)
            return closed_error(err);
        ssize_t n = write(c->wfd, c->out.data + off, c->out.len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EPIPE) {
            c->closed = true;
            return closed_error(err);
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return atr_error_set(err, "DevTools pipe: %s", strerror(errno)), ATR_CDP_CLOSED;
        if (atr_cdp_now_us() >= deadline_us) {
            atr_error_set(err, "timed out sending a DevTools command");
            return ATR_CDP_TIMEOUT;
        }
        short rev = wait_round(c, true, deadline_us);
        if (rev & (POLLERR | POLLHUP)) {
            c->closed = true;
            return closed_error(err);
        }
    }
    return 0;
}

int64_t atr_cdp_send(struct atr_cdp *c, const char *session, const char *method,
                     const char *params, int64_t deadline_us, struct atr_error *err)
{
    if (c->closed)
        return closed_error(err);
    int64_t id = c->next_id++;
    atr_buf_clear(&c->out);
    struct atr_jw w;
    atr_jw_init(&w, &c->out, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_int(&w, "id", id);
    atr_jw_kv_str(&w, "method", method);
    if (session && *session)
        atr_jw_kv_str(&w, "sessionId", session);
    atr_jw_kv_raw(&w, "params", params ? params : "{}", params ? strlen(params) : 2);
    atr_jw_object_end(&w);
    if (atr_jw_finish(&w) < 0)
        return atr_error_set(err, "DevTools command %s: could not be written", method);
    atr_buf_putc(&c->out, '\0');
    int rc = write_out(c, deadline_us, err);
    return rc < 0 ? rc : id;
}

int atr_cdp_wait(struct atr_cdp *c, bool (*done)(void *ctx), void *ctx, int64_t deadline_us,
                 struct atr_error *err)
{
    for (;;) {
        while (dispatch_one(c))
            if (done && done(ctx))
                return 0;
        if (done && done(ctx))
            return 0;
        if (c->closed)
            return closed_error(err);
        if (c->interrupted) {
            atr_error_set(err, "the page crashed");
            return ATR_CDP_INTERRUPTED;
        }
        if (atr_cdp_now_us() >= deadline_us) {
            atr_error_set(err, "timed out");
            return ATR_CDP_TIMEOUT;
        }
        wait_round(c, false, deadline_us);
    }
}

static bool reply_came(void *ctx) { return ((struct atr_cdp *)ctx)->got; }

int atr_cdp_call(struct atr_cdp *c, const char *session, const char *method, const char *params,
                 int64_t deadline_us, struct atr_arena *a, struct atr_json **result,
                 struct atr_error *err)
{
    if (result)
        *result = NULL;
    int64_t id = atr_cdp_send(c, session, method, params, deadline_us, err);
    if (id < 0)
        return (int)id;
    c->want_id = id;
    c->got = false;
    c->want_arena = a;
    c->want_result = NULL;
    c->want_error[0] = '\0';
    int rc = atr_cdp_wait(c, reply_came, c, deadline_us, err);
    c->want_id = 0;
    c->want_arena = NULL;
    if (rc == ATR_CDP_TIMEOUT)
        atr_error_set(err, "%s: no reply in time", method);
    if (rc < 0)
        return rc;
    if (c->want_error[0]) {
        atr_error_set(err, "%s: %s", method, c->want_error);
        return ATR_CDP_REMOTE;
    }
    if (result)
        *result = c->want_result;
    return 0;
}
