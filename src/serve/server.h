/* server.h - `atr sim serve`: an OpenAI-compatible HTTP server (libevent
 * evhttp, one thread, one event loop) that answers /v1/completions and
 * /v1/chat/completions from the engine model in real time, or with fixed
 * latencies, with fault injection for testing clients (docs/sim-serve.md).
 *
 * Memory: the server owns its engine, its listening socket and every
 * request it holds; the event base and the profile are borrowed and must
 * outlive the server. Nothing here prints. */
#ifndef ATR_SERVE_SERVER_H
#define ATR_SERVE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/cost.h"
#include "sim/engine.h"
#include "sim/frontend.h"
#include "util/arena.h"
#include "util/error.h"

struct event_base;

/* Fault kinds for --fail-kinds, as bits. */
enum {
    ATR_FAULT_429 = 1 << 0,     /* 429 JSON error with Retry-After: 1 */
    ATR_FAULT_500 = 1 << 1,     /* 500 JSON error */
    ATR_FAULT_CUT = 1 << 2,     /* about half the tokens, then the connection closes */
    ATR_FAULT_STALL = 1 << 3,   /* the first token, then nothing until stall_s */
    ATR_FAULT_ALL = 15,
};

struct atr_serve_cfg {
    const char *host;           /* NULL = 127.0.0.1 */
    unsigned port;              /* 0 = any free port */
    const char *model_id;       /* served model name (copied) */
    unsigned max_model_len;     /* prompt + output tokens a request may have */
    /* Engine mode when profile is set; else fixed latencies. A request
     * reaches the engine after the profile's API-server time (its
     * frontend_s and frontend_token_s, sim/frontend.h), as in atr sim run;
     * none after atr_profile_set_offline. */
    const struct atr_profile *profile;
    /* cost and capacity are filled from profile; retain_s (--kv-retain)
     * pins the blocks of a request with a session hint: a non-empty
     * "user" field or an X-Session-Id header */
    struct atr_engine_cfg engine;
    double ttft_s, itl_s;       /* fixed mode */
    uint64_t seed;
    size_t max_body;            /* request body limit; 0 = 16 MiB */
    double fail_rate;           /* 0..1 */
    unsigned fail_kinds;        /* ATR_FAULT_* bits; 0 = all */
    double stall_s;             /* how long a stalled request holds its connection */
    /* Wall seconds per simulated second (the engine's and fixed mode's
     * times; not stall_s): 0.1 serves ten times faster than the profile
     * says, 2 half as fast. 0 = 1. */
    double time_scale;
    uint64_t crash_after;       /* 0 = never */
    bool hang;                  /* read requests, never answer */
    /* Called when the crash_after-th completion request arrives; expected
     * not to return (the CLI prints and _exit()s). */
    void (*on_crash)(void *ctx, uint64_t n);
    void *crash_ctx;
    /* accept() failing (descriptor limit): at most one line a second */
    void (*on_warn)(void *ctx, const char *line);
    void *warn_ctx;
    /* A connection's first request must arrive whole (headers and body)
     * within header_timeout_s of its accept, however slowly it trickles
     * in; 0 = 10. Later requests on it, and answers being written, have
     * no such deadline. idle_timeout_s: silence on a connection; 0 = 86400. */
    double header_timeout_s, idle_timeout_s;
    /* Connections open at once; beyond, new ones wait to be accepted.
     * 0 = RLIMIT_NOFILE less a reserve (util/accept.h). */
    unsigned max_connections;
};

struct atr_serve;

/* Creates the server (and its engine in engine mode); does not listen yet.
 * NULL with err set on bad configuration. */
struct atr_serve *atr_serve_new(struct event_base *base, const struct atr_serve_cfg *cfg,
                                struct atr_error *err);
/* Binds and listens on cfg's host and port; -1 with err set. */
int atr_serve_listen(struct atr_serve *s, struct atr_error *err);
/* The bound port (after atr_serve_listen). */
unsigned atr_serve_port(const struct atr_serve *s);
/* NULL, or why the engine failed (the event loop was broken then). */
const char *atr_serve_failed(const struct atr_serve *s);
/* Closes every connection and frees everything; accepts NULL. */
/* The engine model it serves (NULL for a fake server), its stats for
 * the caller to read once the loop is no longer running. */
struct atr_engine *atr_serve_engine(struct atr_serve *s);
void atr_serve_free(struct atr_serve *s);

/* ---- request bodies (request.c; exposed for tests and the fuzzer) ---- */

enum atr_serve_api { ATR_SERVE_COMPLETIONS, ATR_SERVE_CHAT };

struct atr_serve_request {
    const char *model;          /* NULL when absent; valid until the parse arena is cleared */
    bool stream, include_usage;
    int64_t max_tokens;         /* -1 when absent */
    uint64_t prompt_tokens;     /* estimated tokens of the prompt (rendered messages for chat) */
    uint64_t *hash_ids;         /* prefix block ids, block size 16 (malloc, caller frees) */
    size_t n_hash_ids;
    /* A non-empty "user" (OpenAI's end-user id): the request belongs to a
     * session with a turn to come (engine.retain_s pins its blocks). */
    bool session_hint;
};

#define ATR_SERVE_BLOCK_SIZE 16

/* Parses and checks an OpenAI request body. 0, or -1 with err holding the
 * message for a 400 answer ("messages: expected an array"); nothing to free
 * then. Parsed strings live in arena. */
int atr_serve_parse_request(enum atr_serve_api api, const char *body, size_t len,
                            struct atr_arena *arena, struct atr_serve_request *out,
                            struct atr_error *err);

#endif
