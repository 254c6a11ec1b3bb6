/* record.h - what `atr proxy` keeps of one completed request: metadata
 * only (token counts, prefix block ids, times, status, the upstream and the
 * policy's decision), plus the text only under --record-content. The
 * journal (proxy/journal.h) writes one as an atr trace line.
 *
 * Memory: every pointer is borrowed from the proxy for the duration of the
 * call that takes the record. */
#ifndef ATR_PROXY_RECORD_H
#define ATR_PROXY_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct atr_proxy_record {
    const char *session;          /* session name (never NULL): a client's with a leading
                                     '~' doubled, or "~N" made up (session.c) */
    const char *session_source;   /* "header", "user", "prefix" or "new" */
    uint64_t turn;                /* 0-based position of the request in its session */
    double start_unix;            /* the request's arrival, epoch seconds */
    const char *api;              /* "chat" or "completions" */
    const char *model;            /* as the client asked, or NULL */
    bool stream;                  /* the client asked for SSE */
    /* From the upstream's usage object; -1 when it sent none. */
    int64_t prompt_tokens, output_tokens, cached_tokens;
    uint64_t est_prompt_tokens;   /* atr's estimate from the prompt text */
    uint32_t block_size;          /* of block_ids (16) */
    const uint64_t *block_ids;    /* chained hashes of the prompt, 53-bit */
    size_t n_block_ids;
    /* Times in seconds from arrival; < 0 when not reached. */
    double ttft_s, e2e_s;
    /* Gaps between content chunks, seconds; n_itl 0: none. */
    double itl_mean_s, itl_p50_s, itl_p99_s, itl_max_s;
    size_t n_itl;
    size_t n_chunks;              /* content chunks relayed */
    int status;                   /* HTTP status the client got */
    const char *error;            /* NULL, or a stable reason: "upstream refused",
                                     "upstream cut", "upstream timeout", "client gone",
                                     "bad request", ... */
    unsigned upstream;            /* index of the upstream that served it */
    const char *upstream_url;
    const char *policy;           /* its name, or NULL */
    uint32_t max_tokens_cap;      /* the policy's cap sent upstream, 0: none */
    unsigned retries;             /* other upstreams tried before the first byte */
    const char *prompt_text;      /* --record-content only, else NULL */
    size_t prompt_len;
    const char *completion_text;  /* --record-content only, else NULL */
    size_t completion_len;
};

#endif
