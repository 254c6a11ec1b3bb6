/* accept.h - keeps atr's HTTP servers (`atr sim serve`, `atr proxy`) from
 * spinning at the descriptor limit: when accept() fails (EMFILE, ENFILE,
 * ENOBUFS...) the listener is paused for a moment instead of being woken
 * again at once by the same pending connection, and the failure is
 * reported at most once a second, with a count, instead of once a try.
 * Optionally it caps the connections open at once below that limit, and
 * gives each new connection a deadline for its first request. */
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
 * atr_accept_guard_request at the start of http's request callback.
 * With a deadline or a cap the guard holds a reference on every
 * connection's bufferevent, so a connection evhttp closes (its client
 * sees the close at once) gives its descriptor back within 250 ms, 20 ms
 * at the cap. */
void atr_accept_guard_deadline(struct atr_accept_guard *g, struct evhttp *http,
                               double seconds);
/* At most max connections of http open at once (0: no cap): at the cap the
 * listener stops accepting, so new clients wait in the kernel's listen
 * queue (not refused), while the open connections are served as before;
 * it accepts again within about 20 ms of one closing. Reaching the cap is
 * reported through warn at most once a second, with a count. */
void atr_accept_guard_cap(struct atr_accept_guard *g, struct evhttp *http, unsigned max);
/* A cap for servers that hold fds_each descriptors per connection (the
 * proxy: the client's and an upstream's): the RLIMIT_NOFILE soft limit
 * less a reserve (64, or half of a smaller limit) for listeners, logs,
 * journals and files, divided by fds_each; at least 1. */
unsigned atr_accept_default_cap(unsigned fds_each);
/* The biggest request (headers and body) http takes: a connection reads
 * at most this far ahead (1 MiB when not called; a body above the mark
 * would never arrive whole). */
void atr_accept_guard_max_request(struct atr_accept_guard *g, size_t bytes);
/* req arrived whole: its connection's deadline is cleared. */
void atr_accept_guard_request(struct atr_accept_guard *g, struct evhttp_request *req);
/* Failed accepts seen so far (each pauses the listener once). */
unsigned long atr_accept_guard_failures(const struct atr_accept_guard *g);
/* Times the cap was reached so far. */
unsigned long atr_accept_guard_cap_hits(const struct atr_accept_guard *g);
void atr_accept_guard_free(struct atr_accept_guard *g);

#endif
