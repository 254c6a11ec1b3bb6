/* accept.c - pause-on-accept-failure for evhttp listeners (util/accept.h). */
#include "util/accept.h"

#include "util/alloc.h"

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

struct atr_accept_guard {
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
    g->who = who;
    g->warn = warn;
    g->ctx = ctx;
    if (!g->lev || !g->resume) {
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
    free(g);
}
