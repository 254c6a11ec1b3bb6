/* client-int.h - what the client's two transports share (private to
 * src/llm/client.c and src/llm/h1conn.c): the request, the client, and
 * the transport-independent reading of an answer.
 *
 * A request is read the same way whichever transport carries it: the
 * transport reports the status and content type once (req_head), the body
 * bytes as they come (req_body), and how the answer ended (req_end_ok or
 * req_end_cut); finish hands the result over. */
#ifndef ATR_LLM_CLIENT_INT_H
#define ATR_LLM_CLIENT_INT_H

#include <curl/curl.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "llm/client.h"
#include "llm/h1.h"
#include "llm/sse.h"
#include "util/arena.h"
#include "util/buf.h"

enum { MAX_LANES = 64 };

/* How the response body is read, decided at its first byte. */
enum body_mode { BODY_UNKNOWN, BODY_SSE, BODY_JSON, BODY_ERROR };

struct h1_pool;
struct h1_conn;

/* One libcurl multi handle with its share of the connections. */
struct lane {
    struct atr_llm_client *c;
    CURLM *multi;
    struct event *timer;
    size_t in_flight;
};

struct sock;

struct req {
    struct atr_llm_client *c;
    struct req *prev, *next;           /* active list, or free list (next) */
    struct event stall_ev;             /* libcurl: stall; plain HTTP: stall and timeout */
    enum atr_llm_api api;
    uint64_t id;
    double start_s, sent_s, last_byte_s, end_s;
    struct atr_buf body;               /* libcurl: the JSON; plain HTTP: the whole request */
    struct atr_buf resp;               /* non-streaming body, or error body head */
    struct atr_sse sse;
    double *chunks;
    size_t n_chunks, cap_chunks;
    int64_t prompt, output, cached;
    size_t received;
    int status;
    enum body_mode mode;
    bool done, usage;
    const char *reason;                /* NULL while nothing failed */
    char reason_buf[16];               /* "http NNN" */
    char detail[256];
    /* libcurl */
    struct lane *lane;                 /* while in flight */
    CURL *easy;
    int curl_api;                      /* the API of the handle's URL, -1: none */
    char errbuf[CURL_ERROR_SIZE];
    /* plain HTTP */
    struct h1_conn *conn;              /* while it has one */
    struct req *qnext;                 /* waiting for a connection, or to be reported */
};

struct atr_llm_client {
    struct event_base *base;
    struct lane lanes[MAX_LANES];
    unsigned n_lanes;
    struct event *collect;             /* made active to read finished transfers */
    struct curl_slist *headers;
    char *url[2];                      /* indexed by enum atr_llm_api */
    CURLU *uh[2];                      /* url[] parsed once, or NULL */
    long timeout_ms;
    double stall_s;
    size_t max_response;
    atr_llm_done_fn on_done;
    void *ctx;
    struct req *active, *free_list;
    struct sock *socks;
    size_t in_flight;
    struct atr_arena arena;            /* payload trees, cleared per payload */
    struct atr_sse_memo memo;          /* shapes of recent stream payloads */
    struct h1_pool *h1;                /* the plain-HTTP transport, or NULL: libcurl */
};

/* ---- the answer, whatever carried it (client.c) ---- */

void req_fail(struct req *r, const char *reason, double now);
void req_set_detail(struct req *r, const char *s);
/* The status line and content type are known. */
void req_head(struct req *r, int status, enum atr_h1_type type, const char *p, size_t len);
/* Body bytes arrived at now; false when the request failed and the
 * transfer must stop. */
bool req_body(struct req *r, const char *p, size_t len, double now);
/* The answer ended where HTTP says it ends. */
void req_end_ok(struct req *r, double now);
/* The connection failed or closed early; why is the transport's text. */
void req_end_cut(struct req *r, const char *why, double now);
/* A success ends at its last chunk. */
void req_settle_end(struct req *r);
/* Hands the result over and puts r back on the free list; r holds no
 * transfer any more. */
void req_finish(struct req *r);

/* ---- the plain-HTTP transport (h1conn.c) ---- */

/* A pool for base_url when it is plain http:// that this transport can
 * carry (and ATR_LLM_CURL is not set), else NULL. */
struct h1_pool *h1_pool_new(struct atr_llm_client *c, const char *base_url, const char *api_key,
                            size_t max_connections);
/* Closes every connection; calls nothing back. */
void h1_pool_free(struct h1_pool *p);
/* Starts r (prepared, on the active list): on an idle connection, a new
 * one, or at the end of the wait for one. */
void h1_send(struct h1_pool *p, struct req *r, const char *body, size_t len);
/* The timer callback of a plain-HTTP request's stall_ev. */
void h1_on_watch(evutil_socket_t fd, short kind, void *arg);
/* Arms r's watch for its stall and timeout limits. */
void h1_arm_watch(struct h1_pool *p, struct req *r);

#endif
