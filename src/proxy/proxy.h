/* proxy.h - `atr proxy`: an OpenAI-compatible reverse proxy on the
 * caller's libevent loop (docs/proxy.md). Clients' POST /v1/chat/completions
 * and /v1/completions go to one of several upstreams, chosen per request
 * by a runtime policy (policy/policy.h) from the prompt's metadata; SSE
 * streams are relayed event by event as the upstream writes them, with
 * backpressure; GET /v1/models merges the upstreams' lists; other paths
 * pass through to the first upstream. Each completed request becomes a
 * record (proxy/record.h) handed to the caller (the journal), and feeds
 * the /metrics counters.
 *
 * Memory: the proxy copies what it keeps of cfg; records handed to
 * on_record are valid during the call only. */
#ifndef ATR_PROXY_PROXY_H
#define ATR_PROXY_PROXY_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/record.h"
#include "util/error.h"

struct event_base;

#define ATR_PROXY_MAX_UPSTREAMS 64

struct atr_proxy_cfg {
    const char *host;                /* NULL: 127.0.0.1 */
    unsigned port;                   /* 0: any free port */
    const char *upstreams[ATR_PROXY_MAX_UPSTREAMS];   /* "http://HOST:PORT" (no /v1) */
    size_t n_upstreams;
    const char *policy;              /* NULL: naive (the first upstream... see docs) */
    const char *policy_options;
    const char *client_key;          /* clients must send "Authorization: Bearer KEY"; NULL: none */
    const char *upstream_key;        /* sent upstream as a Bearer token; NULL: the client's
                                        Authorization is not forwarded either */
    const char *session_header;      /* NULL: "X-Session-Id" */
    bool record_content;             /* records carry prompt and completion text */
    /* Limits; 0 takes the default in brackets. */
    size_t max_body;                 /* request body bytes [16 MiB]: 413 */
    size_t max_headers;              /* request header bytes [64 KiB]: 431/400 */
    unsigned max_connections;        /* requests in flight [4096]: 503 beyond */
    unsigned max_client_connections; /* client connections open at once; more wait to be
                                        accepted [RLIMIT_NOFILE less a reserve, halved:
                                        each may hold an upstream connection too] */
    double first_byte_timeout_s;     /* upstream's first byte [600] */
    double idle_timeout_s;           /* between upstream bytes, and idle clients [120];
                                        also bounds a connect (libevent 2.1 has one
                                        timeout per connection) */
    unsigned max_sessions;            /* sessions kept [100000]: least recently used evicted */
    double session_ttl_s;            /* an idle session is evicted after [3600] */
    size_t max_buffered;             /* bytes queued for one slow client before the
                                        upstream is paused [256 KiB] */
    void (*on_record)(void *ctx, const struct atr_proxy_record *r);
    void (*on_log)(void *ctx, const char *line);     /* -v: one line per request */
    /* accept() failing (descriptor limit): at most one line a second */
    void (*on_warn)(void *ctx, const char *line);
    void *ctx;
};

struct atr_proxy;

/* Creates the proxy (policy made, nothing bound yet). NULL with err set. */
struct atr_proxy *atr_proxy_new(struct event_base *base, const struct atr_proxy_cfg *cfg,
                                struct atr_error *err);
/* A request the journal already holds, from an earlier run (session as
 * the journal names it, its turn): the session's next request gets a later
 * turn, and made-up names go on after it, so that no trace id repeats in a
 * journal continued across runs. Call before listening. */
void atr_proxy_session_seen(struct atr_proxy *p, const char *session, size_t len, uint64_t turn);
/* Binds and listens. 0, or -1 with err set (address in use, ...). */
int atr_proxy_listen(struct atr_proxy *p, struct atr_error *err);
unsigned atr_proxy_port(const struct atr_proxy *p);
/* Stops accepting requests (new ones get 503); in-flight ones go on. */
void atr_proxy_drain(struct atr_proxy *p);
/* Requests not yet answered in full: in flight upstream, or answered but
 * with bytes libevent has not yet written to the client. 0 = safe to exit. */
size_t atr_proxy_in_flight(const struct atr_proxy *p);
/* Aborts what is in flight (no records) and frees everything. */
void atr_proxy_free(struct atr_proxy *p);

#endif
