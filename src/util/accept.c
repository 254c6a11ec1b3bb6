/* accept.c - the accept side of atr's evhttp servers (util/accept.h): a
 * pause on accept() failures, the first-request deadline, the connection cap. */
#include "util/accept.h"

#include "util/alloc.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Long enough that a server at its limit wakes ten times a second, not
 * ten thousand; short enough that a freed descriptor is used at once. */
#define PAUSE_US 100000

/* How often the connections are looked at (first-request deadlines, the
 * ones evhttp let go); at the cap more often, so that a slot freed is
 * taken again within a few milliseconds. */
#define SWEEP_US 250000
#define SWEEP_CAPPED_US 20000
/* Descriptors kept back from the connection cap's default: the listener,
 * the event loop's own, logs, a journal, the files a request opens. */
#define FD_RESERVE 64
/* Our reference keeps a connection evhttp has let go reading until the
 * next sweep; this read high-water mark bounds what it buffers meanwhile
 * (a client sending a 1 GB body it was refused). evhttp keeps a body in
 * that input until the whole of it is there, so a server taking bodies
 * bigger than this raises it (atr_accept_guard_max_request). */
#define READ_HIGH_WATER (1u << 20)

/* A connection accepted: on the pending list until its first request is
 * whole, then on the open list. We hold a reference on its bufferevent so
 * that it outlives evhttp's free, which we notice (its callbacks are
 * cleared) on the next sweep: libevent 2.1 tells no one else when evhttp
 * closes a connection (its one close callback is the server's). */
struct conn {
    struct bufferevent *bev;
    double deadline;
    struct conn *next;
};

struct atr_accept_guard {
    struct conn *pending, *open;
    struct event *sweep;
    double header_s;                   /* 0: no first-request deadline */
    unsigned cap, n_conns;             /* cap 0: none */
    bool capped;                       /* the listener is off for the cap */
    size_t read_cap;                   /* the high-water mark; 0: READ_HIGH_WATER */
    struct evhttp *http;               /* whose bevcb is ours, or NULL */
    struct evconnlistener *lev;        /* evhttp's */
    struct event *resume;
    const char *who;
    atr_accept_warn_fn *warn;
    void *ctx;
    unsigned long failures, unlogged, cap_hits, cap_unlogged;
    time_t logged_at, cap_logged_at;
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
    struct timeval tv = {0, g->capped ? SWEEP_CAPPED_US : SWEEP_US};
    if ((g->pending || g->open) && !evtimer_pending(g->sweep, NULL))
        evtimer_add(g->sweep, &tv);
}

/* Unlinks *pp, letting its bufferevent go (closed if evhttp let go too). */
static void drop(struct atr_accept_guard *g, struct conn **pp)
{
    struct conn *p = *pp;
    *pp = p->next;
    bufferevent_decref(p->bev);
    free(p);
    g->n_conns--;
}

/* At most one line a second, with how many times it happened meanwhile. */
static void warn_limited(struct atr_accept_guard *g, time_t *logged_at,
                         unsigned long *unlogged, const char *what)
{
    time_t now = time(NULL);
    if (!g->warn || now == *logged_at)
        return;
    char line[320];
    snprintf(line, sizeof line, "%s: %s: paused %lu time%s since the last report, "
             "open connections are still served", g->who, what, *unlogged,
             *unlogged == 1 ? "" : "s");
    g->warn(g->ctx, line);
    *logged_at = now;
    *unlogged = 0;
}

/* The listener is on unless the cap or an accept failure holds it off. */
static void cap_check(struct atr_accept_guard *g)
{
    bool full = g->cap && g->n_conns >= g->cap;
    if (full == g->capped)
        return;
    g->capped = full;
    if (!full) {
        if (!evtimer_pending(g->resume, NULL))
            evconnlistener_enable(g->lev);
        return;
    }
    evconnlistener_disable(g->lev);
    g->cap_hits++;
    g->cap_unlogged++;
    char what[96];
    snprintf(what, sizeof what, "at the connection cap (%u open), new connections wait",
             g->cap);
    warn_limited(g, &g->cap_logged_at, &g->cap_unlogged, what);
}

/* Drops the records evhttp let go of and, with a deadline, closes those
 * past it; deadline NAN: none. */
static void sweep_list(struct atr_accept_guard *g, struct conn **pp, double now)
{
    while (*pp) {
        bufferevent_event_cb event_cb;
        void *evcon;
        bufferevent_getcb((*pp)->bev, NULL, NULL, &event_cb, &evcon);
        if (event_cb && !(now >= (*pp)->deadline)) {
            pp = &(*pp)->next;
            continue;
        }
        if (event_cb)          /* still evhttp's: its callback argument is the connection */
            evhttp_connection_free(evcon);
        drop(g, pp);
    }
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct atr_accept_guard *g = arg;
    double now = mono_now();
    sweep_list(g, &g->pending, now);
    sweep_list(g, &g->open, now);
    cap_check(g);
    sweep_later(g);
}

/* evhttp's hook for a new connection's bufferevent: the same one it would
 * make itself, remembered with its deadline and counted. */
static struct bufferevent *on_new_connection(struct event_base *base, void *arg)
{
    struct atr_accept_guard *g = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev)
        return NULL;
    struct conn *p = xcalloc(1, sizeof *p);
    bufferevent_incref(bev);
    bufferevent_setwatermark(bev, EV_READ, 0, g->read_cap ? g->read_cap : READ_HIGH_WATER);
    p->bev = bev;
    p->deadline = g->header_s > 0 ? mono_now() + g->header_s : NAN;
    p->next = g->pending;
    g->pending = p;
    g->n_conns++;
    cap_check(g);
    sweep_later(g);
    return bev;
}

static void hook(struct atr_accept_guard *g, struct evhttp *http)
{
    g->http = http;
    evhttp_set_bevcb(http, on_new_connection, g);
}

void atr_accept_guard_deadline(struct atr_accept_guard *g, struct evhttp *http,
                               double seconds)
{
    if (!g || !(seconds > 0))
        return;
    g->header_s = seconds;
    hook(g, http);
}

unsigned atr_accept_default_cap(unsigned fds_each)
{
    struct rlimit rl;
    rlim_t n = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        n = rl.rlim_cur;
    if (n > (1u << 20))        /* RLIM_INFINITY, or more than a server needs */
        n = 1u << 20;
    n -= n / 2 < FD_RESERVE ? n / 2 : FD_RESERVE;
    n /= fds_each ? fds_each : 1;
    return n ? (unsigned)n : 1;
}

void atr_accept_guard_cap(struct atr_accept_guard *g, struct evhttp *http, unsigned max)
{
    if (!g || !max)
        return;
    g->cap = max;
    hook(g, http);
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
    for (struct conn **pp = &g->pending; *pp; pp = &(*pp)->next)
        if ((*pp)->bev == bev) {
            struct conn *p = *pp;
            *pp = p->next;
            p->deadline = NAN;
            p->next = g->open;
            g->open = p;
            return;
        }
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct atr_accept_guard *g = arg;
    if (!g->capped)
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
    char what[128];
    snprintf(what, sizeof what, "cannot accept connections (%s)", strerror(e));
    warn_limited(g, &g->logged_at, &g->unlogged, what);
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

unsigned long atr_accept_guard_cap_hits(const struct atr_accept_guard *g)
{
    return g ? g->cap_hits : 0;
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
        drop(g, &g->pending);
    while (g->open)
        drop(g, &g->open);
    if (g->http)
        evhttp_set_bevcb(g->http, NULL, NULL);
    free(g);
}
