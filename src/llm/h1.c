/* h1.c - incremental HTTP/1.1 response parser (RFC 9112 framing). */
#include "llm/h1.h"

#include <string.h>

enum state {
    ST_STATUS,       /* the status line (blank lines before it are skipped) */
    ST_HEADER,
    ST_LENGTH,       /* body of a Content-Length */
    ST_CLOSE,        /* body until the connection closes */
    ST_CHUNK_SIZE,
    ST_CHUNK_DATA,
    ST_CHUNK_END,    /* the CRLF after a chunk's data */
    ST_TRAILER,
    ST_DONE,
};

enum framing { FRAME_NONE, FRAME_LENGTH, FRAME_CHUNKED, FRAME_CLOSE };

/* Set by header lines, read when the head ends. */
enum { CONN_CLOSE = 1, CONN_KEEP = 2 };

enum { MAX_HEX_DIGITS = 15 };   /* a chunk below 2^60 bytes */

void atr_h1_init(struct atr_h1 *h)
{
    memset(h, 0, sizeof *h);
    h->line.max = ATR_H1_MAX_LINE;
    atr_h1_reset(h);
}

void atr_h1_reset(struct atr_h1 *h)
{
    struct atr_buf line = h->line;
    atr_buf_clear(&line);
    memset(h, 0, sizeof *h);
    h->line = line;
    h->type = ATR_H1_TYPE_NONE;
}

void atr_h1_release(struct atr_h1 *h)
{
    atr_buf_release(&h->line);
}

static int bad(struct atr_h1 *h, const char *what)
{
    h->error = what;
    return ATR_H1_ERR;
}

/* ---- lines -------------------------------------------------------------------- */

/* One line from s[*i..n), without its LF and a CR before it: 1 with the
 * line, 0 when s ran out first (the part is kept), -1 past the cap. */
static int take_line(struct atr_h1 *h, const char *s, size_t n, size_t *i, const char **line,
                     size_t *len)
{
    const char *nl = memchr(s + *i, '\n', n - *i);
    size_t seg = nl ? (size_t)(nl - (s + *i)) : n - *i;
    if (!nl || h->line.len) {
        if (atr_buf_append(&h->line, s + *i, seg) < 0)
            return -1;
        *i += seg;
        if (!nl)
            return 0;
        *line = h->line.data;
        *len = h->line.len;
    } else {
        if (seg >= ATR_H1_MAX_LINE)
            return -1;
        *line = s + *i;
        *len = seg;
        *i += seg;
    }
    (*i)++;   /* the LF */
    if (*len && (*line)[*len - 1] == '\r')
        (*len)--;
    return 1;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

static bool ieq(const char *s, size_t n, const char *want)
{
    if (strlen(want) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(s[i]) != want[i])
            return false;
    return true;
}

/* want (lowercase) anywhere in s[0..n), any case. */
static bool contains(const char *s, size_t n, const char *want)
{
    size_t w = strlen(want);
    for (size_t i = 0; i + w <= n; i++) {
        size_t k = 0;
        while (k < w && lower(s[i + k]) == want[k])
            k++;
        if (k == w)
            return true;
    }
    return false;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* RFC 9110 tchar. */
static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* ---- the head ----------------------------------------------------------------- */

/* "HTTP/1.x NNN[ reason]". */
static int parse_status(struct atr_h1 *h, const char *l, size_t n)
{
    if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || !is_digit(l[7]) || l[8] != ' ' ||
        !is_digit(l[9]) || !is_digit(l[10]) || !is_digit(l[11]) || (n > 12 && l[12] != ' '))
        return bad(h, "malformed HTTP status line");
    h->minor = l[7] - '0';
    h->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
    if (h->status < 100)
        return bad(h, "malformed HTTP status line");
    return 0;
}

/* 1*DIGIT, at most 18 of them. */
static int parse_length(struct atr_h1 *h, const char *v, size_t n)
{
    if (n == 0 || n > 18)
        return bad(h, "bad Content-Length");
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(v[i]))
            return bad(h, "bad Content-Length");
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    if (h->has_length && x != h->left)
        return bad(h, "conflicting Content-Length headers");
    h->has_length = true;
    h->left = x;
    return 0;
}

/* The last transfer coding is chunked: the body is chunked, else it ends
 * with the connection (RFC 9112 6.3). */
static void parse_te(struct atr_h1 *h, const char *v, size_t n)
{
    h->has_te = true;
    const char *comma = v;
    for (size_t i = 0; i < n; i++)
        if (v[i] == ',')
            comma = v + i + 1;
    size_t k = (size_t)(v + n - comma);
    while (k && is_blank(*comma)) {
        comma++;
        k--;
    }
    h->framing = ieq(comma, k, "chunked") ? FRAME_CHUNKED : FRAME_CLOSE;
}

static void parse_type(struct atr_h1 *h, const char *v, size_t n)
{
    if (contains(v, n, "text/event-stream"))
        h->type = ATR_H1_TYPE_SSE;
    else if (contains(v, n, "application/json"))
        h->type = ATR_H1_TYPE_JSON;
    else
        h->type = ATR_H1_TYPE_OTHER;
}

static int parse_header(struct atr_h1 *h, const char *l, size_t n)
{
    if (is_blank(l[0]))
        return bad(h, "folded header line");
    const char *colon = memchr(l, ':', n);
    if (!colon || colon == l)
        return bad(h, "malformed header line");
    size_t name_len = (size_t)(colon - l);
    for (size_t i = 0; i < name_len; i++)
        if (!is_tchar(l[i]))
            return bad(h, "malformed header name");
    const char *v = colon + 1;
    size_t vn = (size_t)(l + n - v);
    while (vn && is_blank(*v)) {
        v++;
        vn--;
    }
    while (vn && is_blank(v[vn - 1]))
        vn--;
    if (ieq(l, name_len, "content-length"))
        return parse_length(h, v, vn);
    if (ieq(l, name_len, "transfer-encoding"))
        parse_te(h, v, vn);
    else if (ieq(l, name_len, "content-type"))
        parse_type(h, v, vn);
    else if (ieq(l, name_len, "connection"))
        h->conn |= contains(v, vn, "close") ? CONN_CLOSE : contains(v, vn, "keep-alive") ? CONN_KEEP : 0;
    return 0;
}

/* The blank line after the headers: how the body is framed. */
static void settle_framing(struct atr_h1 *h)
{
    int conn = h->conn;
    h->keep_alive = h->minor >= 1 ? !(conn & CONN_CLOSE) : (conn & CONN_KEEP) && !(conn & CONN_CLOSE);
    if (h->status == 204 || h->status == 304)
        h->framing = FRAME_NONE;
    else if (!h->has_te)
        h->framing = h->has_length ? FRAME_LENGTH : FRAME_CLOSE;
    if (h->framing == FRAME_CLOSE)
        h->keep_alive = false;
    switch (h->framing) {
    case FRAME_NONE:
        h->state = ST_DONE;
        break;
    case FRAME_LENGTH:
        h->state = h->left ? ST_LENGTH : ST_DONE;
        break;
    case FRAME_CHUNKED:
        h->state = ST_CHUNK_SIZE;
        break;
    default:
        h->state = ST_CLOSE;
        break;
    }
}

/* An interim answer (100 Continue, 103 Early Hints) is followed by the
 * real one on the same connection. */
static void skip_interim(struct atr_h1 *h)
{
    struct atr_buf line = h->line;
    memset(h, 0, sizeof *h);
    h->line = line;
    h->type = ATR_H1_TYPE_NONE;
    h->started = true;
}

static int end_head(struct atr_h1 *h, const struct atr_h1_cb *cb, void *ctx)
{
    if (h->status == 101)
        return bad(h, "unexpected 101 Switching Protocols");
    if (h->status < 200) {
        skip_interim(h);
        return 0;
    }
    settle_framing(h);
    h->head_len = 0;
    return cb->on_head && cb->on_head(ctx, h) ? ATR_H1_STOP : 0;
}

/* One line of the head. */
static int head_line(struct atr_h1 *h, const char *l, size_t n, const struct atr_h1_cb *cb,
                     void *ctx)
{
    if (h->state == ST_STATUS) {
        if (n == 0)
            return 0;   /* blank lines before the status line are allowed */
        h->state = ST_HEADER;
        return parse_status(h, l, n);
    }
    if (n == 0)
        return end_head(h, cb, ctx);
    return parse_header(h, l, n);
}

/* ---- the body ----------------------------------------------------------------- */

/* "1*HEXDIG [ BWS ; ext ]": the size, or -1. */
static int parse_chunk_size(struct atr_h1 *h, const char *l, size_t n)
{
    uint64_t x = 0;
    size_t i = 0;
    for (; i < n; i++) {
        char c = lower(l[i]);
        int d = is_digit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            break;
        if (i == MAX_HEX_DIGITS)
            return bad(h, "chunk size too large");
        x = x * 16 + (uint64_t)d;
    }
    if (i == 0)
        return bad(h, "bad chunk size");
    while (i < n && is_blank(l[i]))
        i++;
    if (i < n && l[i] != ';')
        return bad(h, "bad chunk size");
    h->left = x;
    h->state = x ? ST_CHUNK_DATA : ST_TRAILER;
    h->head_len = 0;
    return 0;
}

/* The CRLF (or a bare LF) that closes a chunk's data, byte by byte. */
static int chunk_end(struct atr_h1 *h, char c)
{
    if (c == '\n') {
        h->after_cr = false;
        h->state = ST_CHUNK_SIZE;
        return 0;
    }
    if (c == '\r' && !h->after_cr) {
        h->after_cr = true;
        return 0;
    }
    return bad(h, "chunk data not followed by CRLF");
}

/* Body bytes s[*i..) of a length or a chunk, up to what is left of it. */
static int body_part(struct atr_h1 *h, const char *s, size_t n, size_t *i, const struct atr_h1_cb *cb,
                     void *ctx)
{
    size_t take = n - *i;
    if (h->state != ST_CLOSE && (uint64_t)take > h->left)
        take = (size_t)h->left;
    const char *p = s + *i;
    *i += take;
    if (h->state != ST_CLOSE) {
        h->left -= take;
        if (h->left == 0)
            h->state = h->state == ST_LENGTH ? ST_DONE : ST_CHUNK_END;
    }
    return take && cb->on_body && cb->on_body(ctx, p, take) ? ATR_H1_STOP : 0;
}

static bool in_line_state(int state)
{
    return state == ST_STATUS || state == ST_HEADER || state == ST_CHUNK_SIZE || state == ST_TRAILER;
}

/* One line of a line state: the head's limit counts the head's and the
 * trailers' lines together, a chunk-size line only against the line cap. */
static int line_step(struct atr_h1 *h, const char *s, size_t n, size_t *i, const struct atr_h1_cb *cb,
                     void *ctx)
{
    const char *line;
    size_t len, from = *i;
    int got = take_line(h, s, n, i, &line, &len);
    if (h->state != ST_CHUNK_SIZE) {
        h->head_len += *i - from;
        if (h->head_len > ATR_H1_MAX_HEAD)
            return bad(h, h->state == ST_TRAILER ? "trailers too large" : "response head too large");
    }
    if (got < 0)
        return bad(h, h->state == ST_CHUNK_SIZE ? "chunk size line too long"
                      : h->state == ST_STATUS ? "status line too long" : "header line too long");
    if (got == 0)
        return 0;
    int rc;
    if (h->state == ST_CHUNK_SIZE)
        rc = parse_chunk_size(h, line, len);
    else if (h->state == ST_TRAILER)
        rc = len ? 0 : (h->state = ST_DONE, 0);
    else
        rc = head_line(h, line, len, cb, ctx);
    atr_buf_clear(&h->line);
    return rc;
}

int atr_h1_feed(struct atr_h1 *h, const char *s, size_t n, const struct atr_h1_cb *cb,
                void *ctx, size_t *used)
{
    size_t i = 0;
    int rc = 0;
    if (n)
        h->started = true;
    while (rc == 0 && h->state != ST_DONE && i < n) {
        if (in_line_state(h->state))
            rc = line_step(h, s, n, &i, cb, ctx);
        else if (h->state == ST_CHUNK_END)
            rc = chunk_end(h, s[i++]);
        else
            rc = body_part(h, s, n, &i, cb, ctx);
    }
    *used = i;
    if (rc)
        return rc;
    return h->state == ST_DONE ? ATR_H1_DONE : ATR_H1_MORE;
}

bool atr_h1_eof(const struct atr_h1 *h)
{
    return h->state == ST_CLOSE || h->state == ST_DONE;
}
