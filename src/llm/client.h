/* client.h - OpenAI-compatible streaming HTTP client driven by the
 * caller's libevent loop (docs/replay-llm.md): atr's own HTTP/1.1
 * transport for plain http:// targets (llm/h1conn.c), libcurl's multi
 * interface for https and what that transport does not take, or for every
 * target with ATR_LLM_CURL=1 in the environment. Both behave the same.
 *
 * The client sends one POST per request to /v1/completions or
 * /v1/chat/completions with "stream": true and
 * "stream_options": {"include_usage": true}, parses the server-sent events
 * as they arrive, stamps the arrival time of every chunk (vLLM's
 * definition: any payload with a non-empty choices array, even with empty
 * text or delta content, so a chat stream's role delta counts), and takes token counts from the final usage object only,
 * never from counting chunks. Every failure ends a request with a short
 * stable reason (see the list below), counted by the caller.
 *
 * Times are seconds on CLOCK_MONOTONIC (atr_llm_now()).
 *
 * Memory: the client copies the request body; the result handed to on_done
 * and its chunk array are client-owned and valid only during the callback
 * (copy what you keep). The event base is borrowed and must outlive the
 * client. */
#ifndef ATR_LLM_CLIENT_H
#define ATR_LLM_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct event_base;

enum atr_llm_api {
    ATR_LLM_COMPLETIONS,      /* POST {base}/v1/completions, "prompt" */
    ATR_LLM_CHAT,             /* POST {base}/v1/chat/completions, "messages" */
};

#define ATR_LLM_DEFAULT_CONNECTIONS 1024

struct atr_llm_client_cfg {
    const char *base_url;     /* "http://127.0.0.1:8000" (no trailing /v1) */
    const char *api_key;      /* Authorization: Bearer KEY, or NULL */
    double timeout_s;         /* whole-request limit; 0 = none */
    double stall_timeout_s;   /* no byte for this long fails "stall"; 0 = none */
    size_t max_response;      /* bytes one response may carry; 0 = 64 MiB */
    unsigned max_connections; /* open connections at most (requests beyond wait
                                 for one); 0 = ATR_LLM_DEFAULT_CONNECTIONS */
};

/* How a request ended. The reason strings are stable (tests and the
 * "failures" object of --save-result use them):
 *   "connect"        connection refused / reset before any answer
 *   "timeout"        --timeout passed
 *   "stall"          no byte for stall_timeout_s
 *   "http NNN"       a non-200 status (detail: the error body's "message",
 *                    else the body's head)
 *   "stream cut"     the connection closed before "data: [DONE]"
 *   "bad sse"        a line that is not SSE, or a data: payload that is not
 *                    JSON of the expected shape
 *   "no usage"       the stream ended without a usage object
 *   "too large"      the response passed max_response
 *   "error event"    the server sent {"error": ...} inside the stream
 *   "transport"      a malformed HTTP answer, or any other libcurl error
 *                    (detail says what, or has curl's text) */
struct atr_llm_result {
    uint64_t id;              /* the caller's id */
    double start_s;           /* request handed to the transport */
    double sent_s;            /* its bytes start to leave: the transport has a connection
                                 and writes the request (connect included); 0 when
                                 it never got that far (e.g. "connect") */
    double end_s;             /* last content chunk on success, failure time otherwise */
    const double *chunk_s;    /* arrival time of each content chunk */
    size_t n_chunks;
    int64_t prompt_tokens, output_tokens, cached_tokens;   /* from usage; -1 if absent */
    bool success;
    int http_status;          /* 0 when no status line was read */
    const char *reason;       /* NULL on success */
    const char *detail;       /* human detail for logs, may be "" */
};

typedef void (*atr_llm_done_fn)(void *ctx, const struct atr_llm_result *r);

struct atr_llm_client;

/* NULL with err set when libcurl cannot be set up. */
struct atr_llm_client *atr_llm_client_new(struct event_base *base,
                                          const struct atr_llm_client_cfg *cfg,
                                          atr_llm_done_fn on_done, void *ctx,
                                          struct atr_error *err);
/* Aborts requests still in flight (no callbacks) and frees everything. */
void atr_llm_client_free(struct atr_llm_client *c);

/* Starts a request now: body is the JSON object to POST (copied). on_done
 * is called exactly once for it, from the event loop, never from inside
 * this call. -1 with err set only when the request could not be started at
 * all (out of memory). */
int atr_llm_client_send(struct atr_llm_client *c, uint64_t id, enum atr_llm_api api,
                        const char *body, size_t len, struct atr_error *err);

/* Requests started and not yet done. */
size_t atr_llm_client_in_flight(const struct atr_llm_client *c);

/* CLOCK_MONOTONIC in seconds. */
double atr_llm_now(void);

#endif
