/* proxy-impl.h - what the parts of `atr proxy` share (private to
 * src/proxy): the proxy, its upstreams and counters, one exchange (a client
 * request in flight), the session table.
 *   proxy.c     server, routing, limits, upstream connection pool
 *   exchange.c  one LLM request: body, policy, relay, usage, record
 *   session.c   which session a request belongs to
 *   metrics.c   /metrics in Prometheus text */
#ifndef ATR_PROXY_IMPL_H
#define ATR_PROXY_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llm/sse.h"
#include "policy/policy.h"
#include "proxy/proxy.h"
#include "util/arena.h"
#include "util/buf.h"

struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_connection;
struct evhttp_request;

#define PROXY_BLOCK 16                  /* block size of the prompt hashes */
#define PROXY_HIST_BUCKETS 16

struct upstream {
    char *url;                          /* base, for records */
    char *prefix;                       /* path of the base URL ("" or "/x") */
    char host[256];
    unsigned port;
    struct evhttp_connection **idle;    /* keep-alive connections ready for a request */
    size_t n_idle, cap_idle;
    uint64_t requests, failures, in_flight, tokens_in, tokens_out, cached;
};

/* Why an exchange failed; the names are /metrics labels and record errors. */
enum proxy_err {
    PERR_NONE, PERR_BAD_REQUEST, PERR_UPSTREAM_REFUSED, PERR_UPSTREAM_CUT,
    PERR_UPSTREAM_TIMEOUT, PERR_UPSTREAM_STATUS, PERR_CLIENT_GONE, PERR_COUNT,
};
extern const char *const proxy_err_names[PERR_COUNT];

struct proxy_hist {
    uint64_t le[PROXY_HIST_BUCKETS];    /* cumulative counts per bound */
    uint64_t count;
    double sum;
};

struct proxy_metrics {
    uint64_t requests;
    uint64_t errors_by_status[2];       /* 4xx, 5xx answers made by the proxy */
    uint64_t errors[PERR_COUNT];
    uint64_t tokens_in, tokens_out, cached;
    struct proxy_hist ttft, e2e;
};
extern const double proxy_hist_bounds[PROXY_HIST_BUCKETS];
void proxy_hist_add(struct proxy_hist *h, double v);

struct proxy_session {
    char *id;                           /* NULL: a free slot */
    uint64_t turns;
    uint32_t gen;                       /* bumped when the slot is freed: stale keys */
    uint32_t busy;                      /* exchanges in flight; never evicted while > 0 */
    uint32_t prev, next;                /* LRU list of idle sessions (index + 1; 0 none),
                                           next also chains free slots */
    double used;                        /* last activity (proxy_now) */
    uint64_t last_key;                  /* latest prompt's last full block id */
    double last_end;
    uint32_t last_output;
    double output_sum;
};

/* Sessions by name (a hash of the header or user value) and by the last
 * full prompt block of their latest request (prefix continuity). At most
 * max live; idle ones past ttl_s, or the least recently used beyond max,
 * are evicted. */
struct proxy_sessions {
    struct proxy_session *v;
    size_t n, cap;                      /* slots of v in use (live or free) */
    size_t live, max;
    double ttl_s;
    uint32_t lru_head, lru_tail;        /* oldest, newest idle (index + 1) */
    uint32_t free_head;
    uint64_t *keys;                     /* open addressing: key -> gen << 32 | index + 1 */
    uint64_t *vals;
    size_t slots, used;
    uint64_t next_anon;
    uint64_t turn_floor;                /* above every turn given or seen */
    uint64_t evicted;
};

/* feed.c: GET /records, the records as server-sent events while they
 * happen (no content); open answers req, publish sends r to every reader,
 * release drops them all. */
struct proxy_feed_client;
struct proxy_feed {
    struct proxy_feed_client *clients;
    unsigned n;
    struct atr_buf line;
};
void proxy_feed_open(struct proxy_feed *f, struct evhttp_request *req);
void proxy_feed_publish(struct proxy_feed *f, const struct atr_proxy_record *r);
void proxy_feed_release(struct proxy_feed *f);

struct atr_proxy {
    struct event_base *base;
    struct atr_proxy_cfg cfg;
    struct evhttp *http;
    struct evhttp_bound_socket *listener;
    struct atr_accept_guard *accept_guard;   /* on listener */
    unsigned port;
    bool draining;
    struct upstream up[ATR_PROXY_MAX_UPSTREAMS];
    size_t n_up;
    struct atr_policy *policy;
    uint64_t next_id;
    size_t in_flight;
    size_t unwritten;                   /* answers queued, not yet all written */
    struct exchange *exchanges;         /* in flight, for atr_proxy_free */
    struct proxy_sessions sessions;
    struct proxy_metrics m;
    struct event *trim;                 /* malloc_trim, after big exchanges */
    struct proxy_feed feed;             /* readers of GET /records */
};

double proxy_now(void);
/* Big buffers were freed: give their pages back to the system soon (at
 * once when nothing is in flight, else within a second; once at a time). */
void proxy_trim_soon(struct atr_proxy *p);
void proxy_reply_ending(struct atr_proxy *p, struct evhttp_request *req);
void proxy_send_error(struct atr_proxy *p, struct evhttp_request *req, int code,
                      const char *msg);
/* An idle keep-alive connection to u, or a new one (always new when
 * fresh); *pooled says which. NULL when libevent cannot make one. */
struct evhttp_connection *proxy_conn_get(struct atr_proxy *p, struct upstream *u, bool fresh,
                                         bool *pooled);
void proxy_conn_put(struct upstream *u, struct evhttp_connection *c);

/* exchange.c */
void proxy_llm_request(struct atr_proxy *p, struct evhttp_request *req, bool chat);
void proxy_models_request(struct atr_proxy *p, struct evhttp_request *req);
void proxy_pass_request(struct atr_proxy *p, struct evhttp_request *req);
void proxy_exchange_abort(struct exchange *ex);

/* session.c */
/* max 0: 100000; ttl_s 0: 3600. */
void proxy_sessions_init(struct proxy_sessions *s, size_t max, double ttl_s);
void proxy_sessions_release(struct proxy_sessions *s);
/* The session of a request: named (header or user value, source as
 * given), else the one whose latest prompt's full blocks begin ids
 * ("prefix"), else a new one ("new"). Returns its index. */
size_t proxy_session_find(struct proxy_sessions *s, const char *name, size_t name_len,
                          const char *source, const uint64_t *ids, size_t n_ids,
                          const char **source_out);
/* A request an earlier run wrote to the journal (session as the journal
 * names it): later turns of that session, and made-up names after its. */
void proxy_session_seen(struct proxy_sessions *s, const char *name, size_t len, uint64_t turn);
/* An exchange of session i begins (not evictable till it ends; returns
 * its turn) / ends (idle from now). */
uint64_t proxy_session_begin(struct proxy_sessions *s, size_t i);
void proxy_session_end(struct proxy_sessions *s, size_t i, double now);
/* Evicts idle sessions past the ttl at now. */
void proxy_sessions_expire(struct proxy_sessions *s, double now);
/* After a request of session i: its prompt's last full block now leads there. */
void proxy_session_note(struct proxy_sessions *s, size_t i, const uint64_t *ids, size_t n_ids);

/* metrics.c */
void proxy_send_metrics(struct atr_proxy *p, struct evhttp_request *req);

#endif
