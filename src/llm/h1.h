/* h1.h - incremental HTTP/1.1 response parser for the client's plain-http
 * path (llm/client.c): the status line, the headers the client needs, and
 * the body framed by Content-Length, chunked transfer coding or the close
 * of the connection.
 *
 * Fed the bytes of one connection in slices of any size, it reports the
 * head once (status, content type, framing, keep-alive) and hands on the
 * body de-chunked, in place where it can. Interim 1xx answers are
 * skipped. Untrusted input has hard caps: a status, header, chunk-size or
 * trailer line past ATR_H1_MAX_LINE, or a head past ATR_H1_MAX_HEAD, is an
 * error, as is anything malformed; the error names what was wrong.
 *
 * Memory: the parser owns one line buffer (atr_h1_release frees it); the
 * body bytes handed to the callback are valid only during the call. */
#ifndef ATR_LLM_H1_H
#define ATR_LLM_H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

enum {
    ATR_H1_MAX_LINE = 8192,       /* one status, header, chunk-size or trailer line */
    ATR_H1_MAX_HEAD = 64 * 1024,  /* the whole head (and the trailers) */
};

/* atr_h1_feed's answers. */
enum {
    ATR_H1_MORE = 0,              /* all taken, the response goes on */
    ATR_H1_DONE = 1,              /* the response ended (*used says where) */
    ATR_H1_STOP = 2,              /* a callback asked to stop */
    ATR_H1_ERR = -1,              /* malformed or too large: see error */
};

enum atr_h1_type { ATR_H1_TYPE_OTHER, ATR_H1_TYPE_SSE, ATR_H1_TYPE_JSON, ATR_H1_TYPE_NONE };

struct atr_h1 {
    struct atr_buf line;          /* a line split across feeds */
    uint64_t left;                /* body bytes left: of the Content-Length or the chunk */
    size_t head_len;              /* bytes of the head (or the trailers) so far */
    int state;
    int status;                   /* 0 until a status line was read */
    int minor;                    /* HTTP/1.minor */
    int framing;                  /* internal: how the body ends */
    int conn;                     /* internal: Connection tokens seen */
    enum atr_h1_type type;        /* the Content-Type, as far as the client cares */
    bool keep_alive;              /* the connection may carry another request */
    bool started;                 /* a byte of the response came */
    bool has_length, has_te, after_cr;
    const char *error;            /* static text, set with ATR_H1_ERR */
};

struct atr_h1_cb {
    /* The final head is read; nonzero stops (ATR_H1_STOP). */
    int (*on_head)(void *ctx, const struct atr_h1 *h);
    /* Body bytes, de-chunked; nonzero stops (ATR_H1_STOP). */
    int (*on_body)(void *ctx, const char *p, size_t n);
};

void atr_h1_init(struct atr_h1 *h);
/* Ready for the next response on the same connection; keeps the buffer. */
void atr_h1_reset(struct atr_h1 *h);
void atr_h1_release(struct atr_h1 *h);

/* Parses s[0..n). *used: bytes taken (all of them but on ATR_H1_DONE,
 * where the rest is not this response's). Once ATR_H1_ERR or ATR_H1_STOP
 * was returned the parser must be reset before it is fed again. */
int atr_h1_feed(struct atr_h1 *h, const char *s, size_t n, const struct atr_h1_cb *cb,
                void *ctx, size_t *used);

/* The connection closed: true when that ends the response (a body
 * framed by the close), false when the response was cut. */
bool atr_h1_eof(const struct atr_h1 *h);

#endif
