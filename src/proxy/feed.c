/* feed.c - GET /records on `atr proxy`: every completed request's record
 * as a server-sent event while it happens, the journal's line without any
 * content (docs/proxy.md, "Live records"); what `atr dashboard --proxy`
 * follows. At most PROXY_FEED_MAX readers, and one that stops reading is
 * dropped past PROXY_FEED_BACKLOG unsent bytes, so readers cannot make
 * the proxy hold memory. */
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>

#include "proxy/journal.h"
#include "proxy/proxy-impl.h"
#include "util/alloc.h"

#define PROXY_FEED_MAX 64
#define PROXY_FEED_BACKLOG ((size_t)1 << 20)

struct proxy_feed_client {
    struct proxy_feed *feed;
    struct evhttp_request *req;
    struct proxy_feed_client *prev, *next;
};

static void unlink_client(struct proxy_feed_client *c)
{
    struct proxy_feed *f = c->feed;
    if (c->prev)
        c->prev->next = c->next;
    else
        f->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    f->n--;
}

/* The reader left: an unfinished reply is detached from its connection
 * and left to us. */
static void on_close(struct evhttp_connection *evcon, void *arg)
{
    struct proxy_feed_client *c = arg;
    if (!evhttp_request_get_connection(c->req))
        evhttp_request_free(c->req);
    unlink_client(c);
    free(c);
}

static void drop(struct proxy_feed_client *c)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
    unlink_client(c);
    evhttp_connection_set_closecb(evcon, NULL, NULL);
    evhttp_connection_free(evcon);
    free(c);
}

static size_t backlog(struct proxy_feed_client *c)
{
    struct bufferevent *bev =
        evhttp_connection_get_bufferevent(evhttp_request_get_connection(c->req));
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void send_text(struct proxy_feed_client *c, const char *s, size_t n)
{
    struct evbuffer *eb = evbuffer_new();
    evbuffer_add(eb, s, n);
    evhttp_send_reply_chunk(c->req, eb);
    evbuffer_free(eb);
}

void proxy_feed_open(struct proxy_feed *f, struct evhttp_request *req)
{
    if (f->n >= PROXY_FEED_MAX) {
        struct evbuffer *eb = evbuffer_new();
        evbuffer_add_printf(eb, "at most %d readers of /records\n", PROXY_FEED_MAX);
        evhttp_send_reply(req, 503, "Busy", eb);
        evbuffer_free(eb);
        return;
    }
    struct proxy_feed_client *c = xcalloc(1, sizeof *c);
    *c = (struct proxy_feed_client){.feed = f, .req = req, .next = f->clients};
    if (f->clients)
        f->clients->prev = c;
    f->clients = c;
    f->n++;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_close, c);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "text/event-stream");
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_send_reply_start(req, 200, "OK");
    send_text(c, "retry: 2000\n\n", 13);
}

void proxy_feed_publish(struct proxy_feed *f, const struct atr_proxy_record *r)
{
    if (!f->clients)
        return;
    struct atr_proxy_record bare = *r;      /* metadata only, whatever --record-content says */
    bare.prompt_text = bare.completion_text = NULL;
    bare.prompt_len = bare.completion_len = 0;
    atr_buf_clear(&f->line);
    atr_buf_puts(&f->line, "event: record\ndata: ");
    if (atr_journal_format(&f->line, &bare) < 0)
        return;
    while (f->line.len && f->line.data[f->line.len - 1] == '\n')
        f->line.len--;                      /* one line: the event ends here */
    atr_buf_puts(&f->line, "\n\n");
    for (struct proxy_feed_client *c = f->clients, *next; c; c = next) {
        next = c->next;
        if (backlog(c) > PROXY_FEED_BACKLOG)
            drop(c);
        else
            send_text(c, f->line.data, f->line.len);
    }
}

void proxy_feed_release(struct proxy_feed *f)
{
    while (f->clients)
        drop(f->clients);
    atr_buf_release(&f->line);
}
