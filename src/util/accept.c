/* accept.c - pause-on-accept-failure for evhttp listeners (util/accept.h). */
#include "util/accept.h"

#include "util/alloc.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Long enough that a server at its limit wakes ten times a second, not
 * ten thousand; short enough that a freed descriptor is used at once. */
#define PAUSE_US 100000

/* How often connections awaiting their first request are looked at. */
#define SWEEP_US 250000
/* Our reference keeps a connection evhttp has let go reading until the
 * next sweep; this read high-water mark bounds what it buffers meanwhile
 * (a client sending a 1 GB body it was refused). evhttp keeps a body in
 * that input until the whole of it is there, so a server taking bodies
 * bigger than this raises it (atr_accept_guard_max_request). */
#define READ_HIGH_WATER (1u << 20)

/* A connection accepted and not yet holding a whole request. We hold a
 * reference on its bufferevent so that it outlives evhttp's free, which
 * we notice (its callbacks are cleared) on the next sweep. */
struct pending {
    struct bufferevent *bev;
    double deadline;
    struct pending *next;
};

struct atr_accept_guard {
    struct pending *pending;
    struct event *sweep;
    double header_s;
    size_t read_cap;                   /* the high-water mark; 0: READ_HIGH_WATER */
    struct evhttp *http;               /* whose bevcb is ours, or NULL */
    struct evconnlistener *lev;        /* evhttp's */
    struct event *resume;
    const char *who;
    atr_accept_warn_fn *warn;
    void *ctx;
    unsigned long failures, unlogged;
    time_t logged_at;
    struct atr_accept_guard *next;
};

/* libevent hands the error callback evhttp's argument, not ours, so the
 * guard is found by its listener. Servers run their event loop on one
 * thread; guards are few (one a server). */
static struct atr_accept_guard *guards;

static struct atr_accept_guard *guard_of(struct evconnlistener *lev)
{
    struct atr_accept_guard *g = guards;
    while (g && g->lev != lev)
        g = g->next;
    return g;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sweep_later(struct atr_accept_guard *g)
{
    struct timeval tv = {0, SWEEP_US};
    if (g->pending && !evtimer_pending(g->sweep, NULL))
        evtimer_add(g->sweep, &tv);
}

/* Unlinks *pp, letting its bufferevent go (closed if evhttp let go too). */
static void drop(struct pending **pp)
{
    struct pending *p = *pp;
    *pp = p->next;
    bufferevent_decref(p->bev);
    free(p);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct atr_accept_guard *g = arg;
    double now = mono_now();
    for (struct pending **pp = &g->pending; *pp;) {
        bufferevent_event_cb event_cb;
        void *evcon;
        bufferevent_getcb((*pp)->bev, NULL, NULL, &event_cb, &evcon);
        if (event_cb && now < (*pp)->deadline) {
            pp = &(*pp)->next;
            continue;
        }
        if (event_cb)          /* still evhttp's: its callback argument is the connection */
            evhttp_connection_free(evcon);
        drop(pp);
    }
    sweep_later(g);
}

/* evhttp's hook for a new connection's bufferevent: the same one it would
 * make itself, remembered with its deadline. */
static struct bufferevent *on_new_connection(struct event_base *base, void *arg)
{
    struct atr_accept_guard *g = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev)
        return NULL;
    struct pending *p = xcalloc(1, sizeof *p);
    bufferevent_incref(bev);
    bufferevent_setwatermark(bev, EV_READ, 0, g->read_cap ? g->read_cap : READ_HIGH_WATER);
    p->bev = bev;
    p->deadline = mono_now() + g->header_s;
    p->next = g->pending;
    g->pending = p;
    sweep_later(g);
    return bev;
}

void atr_accept_guard_deadline(struct atr_accept_guard *g, struct evhttp *http,
                               double seconds)
{
    if (!g || !(seconds > 0))
        return;
    g->header_s = seconds;
    g->http = http;
    evhttp_set_bevcb(http, on_new_connection, g);
}

void atr_accept_guard_max_request(struct atr_accept_guard *g, size_t bytes)
{
    if (g && bytes > READ_HIGH_WATER)
        g->read_cap = bytes;
}

void atr_accept_guard_request(struct atr_accept_guard *g, struct evhttp_request *req)
{
    if (!g || !g->pending)
        return;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req));
    for (struct pending **pp = &g->pending; *pp; pp = &(*pp)->next)
        if ((*pp)->bev == bev) {
            drop(pp);
            return;
        }
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct atr_accept_guard *g = arg;
    evconnlistener_enable(g->lev);
}

/* libevent calls this instead of printing "Error from accept()" itself;
 * the pending connection stays queued in the kernel until we resume. */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    (void)arg;
    int e = EVUTIL_SOCKET_ERROR();
    struct atr_accept_guard *g = guard_of(lev);
    if (!g)
        return;
    evconnlistener_disable(lev);
    struct timeval tv = {0, PAUSE_US};
    event_add(g->resume, &tv);
    g->failures++;
    g->unlogged++;
    time_t now = time(NULL);
    if (!g->warn || now == g->logged_at)
        return;
    char line[256];
    snprintf(line, sizeof line,
             "%s: cannot accept connections (%s): paused %lu time%s since the last report, "
             "open connections are still served", g->who, strerror(e), g->unlogged,
             g->unlogged == 1 ? "" : "s");
    g->warn(g->ctx, line);
    g->logged_at = now;
    g->unlogged = 0;
}

struct atr_accept_guard *atr_accept_guard_new(struct event_base *base,
                                              struct evhttp_bound_socket *bound,
                                              const char *who, atr_accept_warn_fn *warn,
                                              void *ctx)
{
    struct atr_accept_guard *g = xcalloc(1, sizeof *g);
    g->lev = evhttp_bound_socket_get_listener(bound);
    g->resume = evtimer_new(base, on_resume, g);
    g->sweep = evtimer_new(base, on_sweep, g);
    g->who = who;
    g->warn = warn;
    g->ctx = ctx;
    if (!g->lev || !g->resume || !g->sweep) {
        atr_accept_guard_free(g);
        return NULL;
    }
    g->next = guards;
    guards = g;
    evconnlistener_set_error_cb(g->lev, on_accept_error);
    return g;
}

unsigned long atr_accept_guard_failures(const struct atr_accept_guard *g)
{
    return g ? g->failures : 0;
}

void atr_accept_guard_free(struct atr_accept_guard *g)
{
    if (!g)
        return;
    struct atr_accept_guard **pp = &guards;
    while (*pp && *pp != g)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = g->next;
        evconnlistener_set_error_cb(g->lev, NULL);
    }
    if (g->resume)
        event_free(g->resume);
    if (g->sweep)
        event_free(g->sweep);
    while (g->pending)
        drop(&g->pending);
    if (g->http)
        evhttp_set_bevcb(g->http, NULL, NULL);
    free(g);
}
