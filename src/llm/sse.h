/* sse.h - incremental server-sent-events parser and the interpretation of
 * OpenAI-compatible stream payloads (completions and chat completions).
 *
 * The parser takes the response body in slices of any size (an event may
 * be split anywhere, even inside a CRLF), follows the WHATWG rules for
 * lines (LF, CRLF or CR), comments (":"), "data:" lines (several joined by
 * '\n') and blank lines ending an event, and hands each event's data to a
 * callback. A line that is not SSE (no known field name, e.g. raw JSON) is
 * an error, as is a line or an event's data longer than max_line: hostile
 * input cannot grow memory without bound.
 *
 * Memory: the parser owns two buffers (atr_sse_release frees them); the
 * data handed to the callback is valid only during the call. Payload
 * parsing allocates in the caller's arena. */
#ifndef ATR_LLM_SSE_H
#define ATR_LLM_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/scan.h"
#include "util/arena.h"
#include "util/buf.h"

/* Return values of atr_sse_feed / atr_sse_finish besides 0 and the
 * callback's own positive values. */
enum {
    ATR_SSE_ERR_LINE = -1,    /* a line that is not SSE */
    ATR_SSE_ERR_SIZE = -2,    /* a line or an event's data passed max_line */
};

struct atr_sse {
    struct atr_buf line;      /* a line split across feeds */
    struct atr_buf data;      /* data of the event being read, '\n'-joined */
    size_t max_line;
    bool has_data;            /* a data: field was seen in this event */
    bool after_cr;            /* last byte fed was '\r': skip a '\n' next */
    bool started;             /* first line seen (a BOM is skipped there) */
    int failed;               /* sticky error: every later feed returns it */
};

/* Called once per event with data (NUL-terminated, without the trailing
 * '\n'). Nonzero stops parsing; atr_sse_feed returns that value. */
typedef int (*atr_sse_event_fn)(void *ctx, const char *data, size_t len);

/* max_line: bytes a line or one event's data may hold; 0 = 1 MiB. */
void atr_sse_init(struct atr_sse *p, size_t max_line);
/* Forgets any partial line or event; keeps the buffers for reuse. */
void atr_sse_reset(struct atr_sse *p);
void atr_sse_release(struct atr_sse *p);

/* Parses s[0..n). 0, an ATR_SSE_ERR_* value, or what fn returned. */
int atr_sse_feed(struct atr_sse *p, const char *s, size_t n, atr_sse_event_fn fn,
                 void *ctx);
/* End of the body: a last line without newline and a last event without
 * blank line are dispatched (servers that end the body after
 * "data: [DONE]\n" are common). Same return values as atr_sse_feed. */
int atr_sse_finish(struct atr_sse *p, atr_sse_event_fn fn, void *ctx);

/* What one data payload (or one non-streaming JSON body) says.
 * A "chunk" follows vLLM's benchmark (vllm/benchmarks/lib/
 * endpoint_request_func.py): any payload whose "choices" array is not
 * empty counts, even when its text or delta content is empty (special
 * tokens, the chat role delta); it is what TTFT and ITL are measured on. */
struct atr_sse_payload {
    bool done;                /* the literal "[DONE]" */
    bool chunk;               /* non-empty "choices" */
    bool usage;               /* a "usage" object (tokens below) */
    bool error;               /* an "error" member that is not null */
    int64_t prompt_tokens;    /* -1 when absent */
    int64_t completion_tokens;
    int64_t cached_tokens;    /* usage.prompt_tokens_details.cached_tokens */
    char detail[160];         /* error message, or what was wrong on -1 */
};

/* Interprets data[0..len). -1 when it is not a JSON object of the
 * expected shape (detail says why). Allocates in arena (clear it after). */
int atr_sse_payload_parse(struct atr_arena *arena, const char *data, size_t len,
                          struct atr_sse_payload *out);

/* The shapes of the last few payloads read in place and what each said.
 * A stream's chunks differ from each other (and from the next stream's)
 * only in their text, ids and timestamps, all values the payload reader
 * steps over: a payload that matches a recorded shape says what its
 * shape's payload said, checked with a few memcmp()s instead of a scan.
 * Owned by its user (plain memory, ~5 KiB; nothing to free). */
enum { ATR_SSE_MEMO_SLOTS = 4 };

struct atr_sse_memo {
    struct {
        struct atr_json_shape shape;
        struct atr_sse_payload said;
    } slot[ATR_SSE_MEMO_SLOTS];
    unsigned char order[ATR_SSE_MEMO_SLOTS];   /* slot indexes, most recent first */
    unsigned long hits, misses;                 /* payloads matched / scanned */
};

void atr_sse_memo_init(struct atr_sse_memo *m);

/* atr_sse_payload_parse with memo (NULL: none): the same return value
 * and *out for every input, faster on payloads shaped like recent ones. */
int atr_sse_payload_parse_memo(struct atr_sse_memo *memo, struct atr_arena *arena,
                               const char *data, size_t len, struct atr_sse_payload *out);

#endif
