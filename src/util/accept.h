/* accept.h - keeps atr's HTTP servers (`atr sim serve`, `atr proxy`) from
 * spinning at the descriptor limit: when accept() fails (EMFILE, ENFILE,
 * ENOBUFS...) the listener is paused for a moment instead of being woken
 * again at once by the same pending connection, and the failure is
 * reported at most once a second, with a count, instead of once a try. */
#ifndef ATR_UTIL_ACCEPT_H
#define ATR_UTIL_ACCEPT_H

#include <stddef.h>

struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;

/* warn gets one line (no newline; the guard owns it, valid for the call). */
typedef void atr_accept_warn_fn(void *ctx, const char *line);

struct atr_accept_guard;

/* Watches bound's listener (evhttp keeps owning it). who prefixes the
 * lines ("sim serve"); static or outliving the guard. warn may be NULL.
 * Free the guard before the bound socket (atr_accept_guard_free). */
struct atr_accept_guard *atr_accept_guard_new(struct event_base *base,
                                              struct evhttp_bound_socket *bound,
                                              const char *who, atr_accept_warn_fn *warn,
                                              void *ctx);
/* Every new connection of http must deliver its first request whole
 * (headers and body) within seconds of being accepted, or it is closed:
 * evhttp's own timeout restarts on each read, so a client trickling a
 * header line every few seconds would hold it open for ever. Call
 * atr_accept_guard_request at the start of http's request callback. A
 * connection closed early gives its descriptor back within 250 ms. */
void atr_accept_guard_deadline(struct atr_accept_guard *g, struct evhttp *http,
                               double seconds);
/* The biggest request (headers and body) http takes: a connection reads
 * at most this far ahead (1 MiB when not called; a body above the mark
 * would never arrive whole). */
void atr_accept_guard_max_request(struct atr_accept_guard *g, size_t bytes);
/* req arrived whole: its connection's deadline is cleared. */
void atr_accept_guard_request(struct atr_accept_guard *g, struct evhttp_request *req);
/* Failed accepts seen so far (each pauses the listener once). */
unsigned long atr_accept_guard_failures(const struct atr_accept_guard *g);
void atr_accept_guard_free(struct atr_accept_guard *g);

#endif
