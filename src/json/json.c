/* json.c - strict recursive-descent JSON parser into arena nodes, lookups,
 * builders and compact output.
 *
 * Speed comes from the string path: a string is decoded in one pass, 16
 * bytes at a time until a byte that needs work (quote, backslash, control
 * character, non-ASCII) turns up, into a scratch buffer, then copied to the
 * arena once its length is known. */
#include "json/json.h"
#include "util/alloc.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Recursion depth is bounded by max_depth; clamp it so a caller's huge
 * value cannot overflow the C stack. */
enum { JSON_DEPTH_LIMIT = 4096 };

struct parser {
    struct atr_arena *arena;
    const unsigned char *p, *end;
    const unsigned char *line_start;  /* first byte of the current line */
    uint32_t line;
    unsigned depth, max_depth;
    bool nonfinite;
    struct atr_json_err *err;
    char *scratch;      /* the string being decoded (malloc) */
    size_t scratch_cap; /* usable bytes; SCRATCH_SLACK more are allocated */
    const char *pack_key;  /* atr_json_opts.pack_key and its length */
    size_t pack_key_len;
    uint64_t pack_max;
    uint64_t *ints;     /* the packed array being read (malloc) */
    size_t ints_cap;
    size_t max_values;  /* atr_json_opts.max_values; SIZE_MAX for none */
    size_t values;      /* values read so far, packed ones included */
};

/* Decoding never writes ahead of the input consumed, so a window of cap
 * input bytes needs cap bytes of scratch, plus slack for the one escape or
 * UTF-8 sequence that starts inside the window and ends past it. Tests and
 * fuzzers may build with a tiny first window to exercise its growth. */
#ifndef ATR_JSON_SCRATCH_MIN
#define ATR_JSON_SCRATCH_MIN (64 * 1024)
#endif
enum { SCRATCH_MIN = ATR_JSON_SCRATCH_MIN, SCRATCH_SLACK = 16 };

/* Byte classes. */
static const bool is_ws[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};

/* Escape letter -> byte it stands for ('u' is handled apart). */
static const char esc_byte[256] = {
    ['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b',
    ['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t',
};

/* A string body byte copied as it is: printable ASCII except '"', '\\'. */
static inline bool str_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* A byte atr_json_write_string outputs as it is. */
static inline bool out_plain(unsigned char c)
{
    return c >= 0x20 && c != '"' && c != '\\';
}

static inline bool is_digit(unsigned char c)
{
    return (unsigned)(c - '0') < 10;
}

static inline int hex_val(unsigned char c)
{
    if (is_digit(c))
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* ---- errors and positions ---------------------------------------------- */

static uint32_t col_of(const struct parser *ps, const unsigned char *at)
{
    size_t col = (size_t)(at - ps->line_start) + 1;
    return col > UINT32_MAX ? UINT32_MAX : (uint32_t)col;
}

static void *fail(struct parser *ps, const unsigned char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void *fail(struct parser *ps, const unsigned char *at, const char *fmt, ...)
{
    ps->err->code = ATR_JSON_EINVAL;
    ps->err->line = ps->line;
    ps->err->col = col_of(ps, at);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err->msg, sizeof ps->err->msg, fmt, ap);
    va_end(ap);
    return NULL;
}

/* Names the byte at p for "found ..." in messages. */
static const char *found(const struct parser *ps, const unsigned char *p, char buf[16])
{
    if (p >= ps->end)
        return "end of input";
    if (*p > 0x20 && *p < 0x7f)
        snprintf(buf, 16, "'%c'", *p);
    else
        snprintf(buf, 16, "byte 0x%02x", *p);
    return buf;
}

static inline void skip_ws(struct parser *ps)
{
    const unsigned char *p = ps->p;
    while (p < ps->end && is_ws[*p]) {
        if (*p == '\n') {
            ps->line++;
            ps->line_start = p + 1;
        }
        p++;
    }
    ps->p = p;
}

/* Fills every field of n: the stores stay plain moves, where assigning a
 * zeroed compound literal becomes a slow `rep stos` for one small node. */
static void init_node(struct atr_json *n, enum atr_json_type t, uint32_t line, uint32_t col)
{
    n->type = t;
    n->is_int = false;
    n->line = line;
    n->col = col;
    n->key = NULL;
    n->key_len = 0;
    n->next = NULL;
    n->u.kids.first = n->u.kids.last = NULL;  /* the largest union member */
    n->u.kids.count = 0;
    n->packed = false;
    n->i = 0;
    n->raw = NULL;
    n->raw_len = 0;
}

/* Counts n more values at at against the budget; false with the error set
 * past it. The budget is what bounds the tree: a node costs ~50 times the
 * two bytes of a `0,` that makes it. */
static bool take_values(struct parser *ps, const unsigned char *at, size_t n)
{
    if (n > ps->max_values - ps->values) {
        fail(ps, at, "more than %zu JSON values", ps->max_values);
        ps->err->code = ATR_JSON_ETOOMANY;
        return false;
    }
    ps->values += n;
    return true;
}

/* n bytes of the arena, or NULL with the error set: a tree too big for
 * memory is an error the caller reports, not an abort. */
static void *tree_alloc(struct parser *ps, const unsigned char *at, size_t n)
{
    void *p = atr_arena_try_alloc(ps->arena, n);
    if (!p) {
        fail(ps, at, "out of memory after %zu JSON values", ps->values);
        ps->err->code = ATR_JSON_ENOMEM;
    }
    return p;
}

/* A node, or NULL with the error set (budget spent, or out of memory). */
static struct atr_json *new_node(struct parser *ps, enum atr_json_type t,
                                 const unsigned char *at, size_t extra)
{
    if (!take_values(ps, at, 1))
        return NULL;
    struct atr_json *n = tree_alloc(ps, at, sizeof *n + extra);
    if (n)
        init_node(n, t, ps->line, col_of(ps, at));
    return n;
}

/* ---- strings ------------------------------------------------------------ */

/* Copies the longest prefix of [p, q) made of str_plain bytes to d and
 * returns its length. The vector loop may store up to 15 bytes past that
 * prefix; d never runs ahead of p, so those stores stay inside a buffer of
 * q - s bytes. */
static size_t copy_plain(const unsigned char *p, const unsigned char *q, char *d)
{
    const unsigned char *s = p;
#ifdef __SSE2__
    const __m128i qt = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
    const __m128i sp = _mm_set1_epi8(0x20);
    while (q - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        _mm_storeu_si128((__m128i *)d, v);
        /* Signed compare: bytes below 0x20 and from 0x80 up are both < 0x20. */
        __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(v, qt), _mm_cmpeq_epi8(v, bs));
        bad = _mm_or_si128(bad, _mm_cmplt_epi8(v, sp));
        unsigned m = (unsigned)_mm_movemask_epi8(bad);
        if (m)
            return (size_t)(p - s) + (unsigned)__builtin_ctz(m);
        p += 16;
        d += 16;
    }
#endif
    while (p < q && str_plain(*p))
        *d++ = (char)*p++;
    return (size_t)(p - s);
}

static inline bool is_cont(unsigned char c)
{
    return (c & 0xc0) == 0x80;
}

/* Length of the valid UTF-8 sequence at p (non-ASCII lead), or 0. */
static inline size_t utf8_len(const unsigned char *p, const unsigned char *q)
{
    unsigned char c = p[0];
    size_t avail = (size_t)(q - p);
    if (c >= 0xe1 && c <= 0xef && c != 0xed)  /* most of the BMP: CJK and more */
        return avail >= 3 && is_cont(p[1]) && is_cont(p[2]) ? 3 : 0;
    if (c >= 0xc2 && c < 0xe0)
        return avail >= 2 && is_cont(p[1]) ? 2 : 0;
    if (c == 0xe0 || c == 0xed) {  /* no overlongs, no surrogates */
        unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return avail >= 3 && p[1] >= lo && p[1] <= hi && is_cont(p[2]) ? 3 : 0;
    }
    if (c >= 0xf0 && c < 0xf5) {  /* U+10000 to U+10FFFF */
        unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return avail >= 4 && p[1] >= lo && p[1] <= hi && is_cont(p[2]) && is_cont(p[3]) ? 4 : 0;
    }
    return 0;
}

/* Copies the run of valid multi-byte UTF-8 sequences that start at p and
 * before lim to d; returns the bytes copied (0 when the first sequence is
 * invalid). May write 3 bytes past the run. */
static size_t copy_utf8(const unsigned char *p, const unsigned char *lim,
                        const unsigned char *end, char *d)
{
    const unsigned char *s = p;
    size_t n;
    while (p < lim && *p >= 0x80 && (n = utf8_len(p, end)) != 0) {
        if (end - p >= 4)
            memcpy(d, p, 4);  /* fixed size: a single move */
        else
            memcpy(d, p, n);
        p += n;
        d += n;
    }
    return (size_t)(p - s);
}

static size_t put_utf8(char *d, uint32_t cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | cp >> 6);
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | cp >> 12);
        d[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | cp >> 18);
    d[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    d[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Reads "\uXXXX" at p (before q) into *cp; false when malformed. */
static bool read_u(const unsigned char *p, const unsigned char *q, uint32_t *cp)
{
    if (q - p < 6 || p[0] != '\\' || p[1] != 'u')
        return false;
    uint32_t v = 0;
    for (int i = 2; i < 6; i++) {
        int h = hex_val(p[i]);
        if (h < 0)
            return false;
        v = v << 4 | (uint32_t)h;
    }
    *cp = v;
    return true;
}

/* Decodes the \u escape at p (surrogate pairs combined) into d. Returns the
 * input bytes consumed and sets *dn to the bytes written, or 0 on error. */
static size_t unescape_u(struct parser *ps, const unsigned char *p,
                         const unsigned char *q, char *d, size_t *dn)
{
    uint32_t cp, lo;
    if (!read_u(p, q, &cp))
        return fail(ps, p, "invalid \\u escape: expected 4 hex digits"), 0;
    size_t used = 6;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return fail(ps, p, "invalid \\u escape: unpaired low surrogate"), 0;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (!read_u(p + 6, q, &lo) || lo < 0xdc00 || lo > 0xdfff)
            return fail(ps, p, "invalid \\u escape: unpaired high surrogate"), 0;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        used = 12;
    }
    *dn = put_utf8(d, cp);
    return used;
}

/* Decodes the escape at p (a backslash, before q) into d. Returns the input
 * bytes consumed and sets *dn to the bytes written, or 0 on error. */
static size_t unescape(struct parser *ps, const unsigned char *p,
                       const unsigned char *q, char *d, size_t *dn)
{
    char c = esc_byte[p[1]];
    if (c) {
        *d = c;
        *dn = 1;
        return 2;
    }
    if (p[1] == 'u')
        return unescape_u(ps, p, q, d, dn);
    char buf[16];
    return fail(ps, p, "invalid escape in string, found %s after '\\'", found(ps, p + 1, buf)), 0;
}

/* Grows the scratch buffer to more than need bytes (keeping its content);
 * -1 with the error set when out of memory. */
static int scratch_grow(struct parser *ps, const unsigned char *at, size_t need)
{
    size_t cap = ps->scratch_cap ? ps->scratch_cap : SCRATCH_MIN;
    while (cap <= need)
        cap *= 2;
    char *p = realloc(ps->scratch, cap + SCRATCH_SLACK);
    if (!p) {
        fail(ps, at, "out of memory reading a string of %zu bytes", need);
        ps->err->code = ATR_JSON_ENOMEM;
        return -1;
    }
    ps->scratch = p;
    ps->scratch_cap = cap;
    return 0;
}

/* End of the input window starting at s that the scratch buffer covers. */
static const unsigned char *window(const struct parser *ps, const unsigned char *s)
{
    size_t left = (size_t)(ps->end - s);
    return s + (left < ps->scratch_cap ? left : ps->scratch_cap);
}

/* Decodes the special byte at p (before lim): an escape, a control
 * character or a UTF-8 sequence. Returns the input bytes consumed and sets
 * *dn to the bytes written, or 0 with the error set. */
static size_t decode_special(struct parser *ps, const unsigned char *p,
                             const unsigned char *lim, char *d, size_t *dn)
{
    if (*p == '\\')
        return unescape(ps, p, ps->end, d, dn);
    if (*p < 0x20)
        return fail(ps, p, "unescaped control character 0x%02x in string", *p), 0;
    size_t n = copy_utf8(p, lim, ps->end, d);
    if (!n)
        return fail(ps, p, "invalid UTF-8 in string"), 0;
    *dn = n;
    return n;
}

/* Decodes and validates the string whose opening quote is at ps->p into
 * ps->scratch and moves past its closing quote. Returns the decoded length,
 * or -1 with the error set. */
#ifdef __SSE2__
/* The specials among p[0..64) as bits: '"', '\\', bytes below 0x20 and
 * from 0x80 up (the signed compare takes both), as copy_plain defines them. */
static inline uint64_t specials64(const unsigned char *p)
{
    const __m128i qt = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
    const __m128i sp = _mm_set1_epi8(0x20);
    uint64_t m = 0;
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + 16 * k));
        __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(v, qt), _mm_cmpeq_epi8(v, bs));
        bad = _mm_or_si128(bad, _mm_cmplt_epi8(v, sp));
        m |= (uint64_t)(unsigned)_mm_movemask_epi8(bad) << (16 * k);
    }
    return m;
}

static inline void copy64(char *d, const unsigned char *p)
{
    for (int k = 0; k < 4; k++)
        _mm_storeu_si128((__m128i *)(d + 16 * k), _mm_loadu_si128((const __m128i *)(p + 16 * k)));
}

/* BLOCK_ROOM: the block path needs lim - p >= 128: 64 bytes of block,
 * and any copy64 from inside it (or an escape ending past it) stays
 * before lim; d never runs ahead of p, so its stores stay in scratch. */
enum { BLOCK_ROOM = 128 };
/* Blocks only once a string has BLOCK_AFTER bytes: keys and short values
 * end within copy_plain's first 16 bytes, cheaper than a 64-byte mask. */
enum { BLOCK_AFTER = 16 };

/* scan_string over the 64 bytes at *pp: their specials found once as a
 * bitmask and walked bit by bit (the plain bytes between two of them
 * copied 64 at a time, the excess overwritten later), not searched again
 * after each escape. Returns 1 at the closing quote (*pp on it), 0 when
 * the block is done, -1 on an error (set). */
static int scan_block(struct parser *ps, const unsigned char **pp, char **dp,
                      const unsigned char *lim)
{
    const unsigned char *blk = *pp, *p = blk;
    char *d = *dp;
    uint64_t m = specials64(blk);
    int rc = 0;
    while (p < blk + 64) {
        uint64_t rest = m >> (p - blk);
        copy64(d, p);
        if (!rest) {
            d += blk + 64 - p;
            p = blk + 64;
            break;
        }
        unsigned i = (unsigned)__builtin_ctzll(rest);
        p += i;
        d += i;
        if (*p == '"') {
            rc = 1;
            break;
        }
        if (*p == '\\' && esc_byte[p[1]]) {
            *d++ = esc_byte[p[1]];
            p += 2;
            continue;
        }
        size_t n, dn;
        if (!(n = decode_special(ps, p, lim, d, &dn)))
            return -1;
        p += n;
        d += dn;
    }
    *pp = p;
    *dp = d;
    return rc;
}
#endif

static ptrdiff_t scan_string(struct parser *ps)
{
    const unsigned char *open = ps->p, *s = open + 1, *p = s, *end = ps->end;
    if (!ps->scratch && scratch_grow(ps, open, 0) < 0)
        return -1;
    const unsigned char *lim = window(ps, s);
    char *d = ps->scratch;
    for (;;) {
#ifdef __SSE2__
        if (p - s >= BLOCK_AFTER && lim - p >= BLOCK_ROOM) {
            int rc = scan_block(ps, &p, &d, lim);
            if (rc < 0)
                return -1;
            if (rc)
                break;
            continue;
        }
#endif
        size_t n = copy_plain(p, lim, d), dn;
        p += n;
        d += n;
        if (p >= lim) {  /* end of the window (an escape may overshoot it) */
            if (lim == end)
                return fail(ps, open, "unterminated string"), -1;
            size_t off = (size_t)(d - ps->scratch);
            if (scratch_grow(ps, open, (size_t)(p - s)) < 0)
                return -1;
            d = ps->scratch + off;
            lim = window(ps, s);
            continue;
        }
        if (*p == '"')
            break;
        /* One-letter escapes (\n, \", \\: one in ~25 bytes of chat text)
         * stay in this loop rather than the general decoder's calls. */
        if (*p == '\\' && p + 1 < lim && esc_byte[p[1]]) {
            *d++ = esc_byte[p[1]];
            p += 2;
            continue;
        }
        if (*p == '\\' && p + 1 == end)
            return fail(ps, open, "unterminated string"), -1;
        if (!(n = decode_special(ps, p, lim, d, &dn)))
            return -1;
        p += n;
        d += dn;
    }
    ps->p = p + 1;
    return d - ps->scratch;
}

static struct atr_json *parse_string(struct parser *ps)
{
    const unsigned char *open = ps->p;
    ptrdiff_t len = scan_string(ps);
    if (len < 0)
        return NULL;
    struct atr_json *n = new_node(ps, ATR_JSON_STRING, open, (size_t)len + 1);
    if (!n)
        return NULL;
    char *s = (char *)(n + 1);
    memcpy(s, ps->scratch, (size_t)len);
    s[len] = '\0';
    n->u.str.s = s;
    n->u.str.len = (size_t)len;
    return n;
}

static int parse_key(struct parser *ps, const char **key, size_t *key_len)
{
    const unsigned char *open = ps->p;
    ptrdiff_t len = scan_string(ps);
    if (len < 0)
        return -1;
    if ((size_t)len > UINT32_MAX)
        return fail(ps, open, "object key longer than %u bytes", UINT32_MAX), -1;
    char *k = tree_alloc(ps, open, (size_t)len + 1);
    if (!k)
        return -1;
    memcpy(k, ps->scratch, (size_t)len);
    k[len] = '\0';
    *key = k;
    *key_len = (size_t)len;
    return 0;
}

/* ---- numbers and literals ---------------------------------------------- */

/* A node is 80 bytes, a multiple of the arena's 16-byte alignment: one
 * more byte would cost 16 per value of a dense line. */
_Static_assert(sizeof(struct atr_json) == 80, "struct atr_json grew");

/* Room for a short literal and its NUL in a NUMBER node's union, past num. */
enum { NUM_TEXT_OFF = sizeof(double), NUM_TEXT_MAX = sizeof(((struct atr_json *)0)->u) - NUM_TEXT_OFF };

/* A NUMBER node carrying a NUL-terminated copy of its literal [s, e): in
 * the node itself when short (most are), so a `0` costs one 80-byte node. */
static struct atr_json *number_node(struct parser *ps, const unsigned char *s,
                                    const unsigned char *e)
{
    size_t len = (size_t)(e - s);
    if (len > UINT32_MAX)
        return fail(ps, s, "number literal longer than %u bytes", UINT32_MAX);
    bool short_lit = len < NUM_TEXT_MAX;
    struct atr_json *n = new_node(ps, ATR_JSON_NUMBER, s, short_lit ? 0 : len + 1);
    if (!n)
        return NULL;
    char *raw = short_lit ? n->u.num_text + NUM_TEXT_OFF : (char *)(n + 1);
    memcpy(raw, s, len);
    raw[len] = '\0';
    n->raw = raw;
    n->raw_len = (uint32_t)len;
    return n;
}

static bool has_word(const unsigned char *p, const unsigned char *end, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(end - p) >= n && memcmp(p, w, n) == 0;
}

/* Infinity, -Infinity or NaN at ps->p; fallback is the message used when
 * the text is none of those. */
static struct atr_json *parse_nonfinite(struct parser *ps, const char *fallback)
{
    const unsigned char *s = ps->p;
    bool neg = *s == '-';
    const char *w = neg || s[0] == 'I' ? "Infinity" : "NaN";
    if (!has_word(s + neg, ps->end, w)) {
        char buf[16];
        return fail(ps, s + neg, "%s, found %s", fallback, found(ps, s + neg, buf));
    }
    if (!ps->nonfinite)
        return fail(ps, s, "%s%s is not valid JSON (non-finite numbers are off)",
                    neg ? "-" : "", w);
    ps->p = s + neg + strlen(w);
    struct atr_json *n = number_node(ps, s, ps->p);
    if (!n)
        return NULL;
    n->u.num = w[0] == 'N' ? NAN : neg ? -INFINITY : INFINITY;
    return n;
}

static const unsigned char *skip_digits(const unsigned char *p, const unsigned char *end)
{
    while (p < end && is_digit(*p))
        p++;
    return p;
}

/* Checks the grammar of the number at s; returns its end, or NULL with the
 * error set. *plain is true for an integer literal (no fraction/exponent). */
static const unsigned char *scan_number(struct parser *ps, const unsigned char *s, bool *plain)
{
    const unsigned char *p = s + (*s == '-'), *end = ps->end;
    if (*p == '0' && p + 1 < end && is_digit(p[1]))
        return fail(ps, p, "invalid number: leading zero");
    p = skip_digits(p, end);
    *plain = true;
    if (p < end && *p == '.') {
        *plain = false;
        if (++p == end || !is_digit(*p))
            return fail(ps, p, "invalid number: expected digit after '.'");
        p = skip_digits(p, end);
    }
    if (p < end && (*p | 0x20) == 'e') {
        *plain = false;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            return fail(ps, p, "invalid number: expected digit in exponent");
        p = skip_digits(p, end);
    }
    return p;
}

/* Integer literal [s, e) that fits int64 into *out. */
static bool to_i64(const unsigned char *s, const unsigned char *e, int64_t *out)
{
    bool neg = *s == '-';
    s += neg;
    if (e - s > 19)
        return false;
    uint64_t m = 0;
    for (; s < e; s++)
        m = m * 10 + (uint64_t)(*s - '0');  /* 19 digits cannot overflow */
    if (m > (uint64_t)INT64_MAX + neg)
        return false;
    if (neg)
        *out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    else
        *out = (int64_t)m;
    return true;
}

/* Powers of ten that doubles hold exactly. */
static const double pow10_tab[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Exact double for literals of at most 15 significant digits and a decimal
 * exponent within +-22 (Clinger's fast path: one correctly rounded
 * multiply or divide of two exact doubles). */
static bool fast_double(const char *s, const char *e, double *out)
{
#if FLT_EVAL_METHOD == 0
    bool neg = *s == '-', in_frac = false;
    uint64_t m = 0;
    int sig = 0, frac = 0, ex = 0, exneg = 0;
    for (s += neg; s < e && (is_digit((unsigned char)*s) || *s == '.'); s++) {
        if (*s == '.') {
            in_frac = true;
            continue;
        }
        if ((m || *s != '0') && ++sig > 15)
            return false;
        m = m * 10 + (uint64_t)(*s - '0');
        frac += in_frac;
    }
    if (s < e) {  /* exponent */
        s++;
        exneg = *s == '-';
        s += *s == '-' || *s == '+';
        for (; s < e && ex < 10000; s++)
            ex = ex * 10 + (*s - '0');
        if (s < e)
            return false;
    }
    int k = (exneg ? -ex : ex) - frac;
    if (k < -22 || k > 22)
        return m == 0 ? (*out = neg ? -0.0 : 0.0, true) : false;
    double v = k >= 0 ? (double)m * pow10_tab[k] : (double)m / pow10_tab[-k];
    *out = neg ? -v : v;
    return true;
#else
    (void)s, (void)e, (void)out;
    return false;
#endif
}

/* Whether p[0..8) are all digits, and their value (SWAR: the bytes of one
 * little-endian load combined in pairs, fours, then eights). */
static bool eight_digits(const unsigned char *p, uint64_t *out)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return false;
#endif
    if ((v & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL ||
        ((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL)
        return false;
    v -= 0x3030303030303030ULL;
    v = v * 10 + (v >> 8);
    v = ((v & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32)) +
         ((v >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32))) >> 32;
    *out = v;
    return true;
}

#ifdef __SSE2__
/* Whether s[0..16) are all digits, and their value: the digit mask of one
 * 16-byte load, then multiply-adds of pairs, fours and eights (16-digit
 * block ids are most of a trace's numbers). */
static bool sixteen_digits(const unsigned char *s, uint64_t *out)
{
    const __m128i zero = _mm_setzero_si128();
    __m128i v = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)s), _mm_set1_epi8('0'));
    __m128i digit = _mm_cmpeq_epi8(_mm_subs_epu8(v, _mm_set1_epi8(9)), zero);
    if (_mm_movemask_epi8(digit) != 0xffff)
        return false;
    /* 16-bit lanes (a, b) weighted (10, 1), then (100, 1), then (10000, 1). */
    __m128i two = _mm_packs_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(v, zero), _mm_set1_epi32(0x1000a)),
                                  _mm_madd_epi16(_mm_unpackhi_epi8(v, zero), _mm_set1_epi32(0x1000a)));
    __m128i four = _mm_madd_epi16(two, _mm_set1_epi32(0x10064));
    __m128i eight = _mm_madd_epi16(_mm_packs_epi32(four, four), _mm_set1_epi32(0x12710));
    *out = (uint64_t)(uint32_t)_mm_cvtsi128_si32(eight) * 100000000 +
           (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(eight, 4));
    return true;
}
#endif

/* The common literal, an integer of at most 18 digits without sign or
 * leading zero, at s (a digit, before end), in one pass (block ids are most
 * of a trace's numbers): its end, with the value in *out; NULL for any
 * other literal, left to parse_number's checks. */
static const unsigned char *scan_small_int(const unsigned char *s, const unsigned char *end,
                                           uint64_t *out)
{
    const unsigned char *p = s, *lim = *s == '0' ? s + 1 : end - s > 18 ? s + 18 : end;
    uint64_t m = 0;
#ifdef __SSE2__
    if (end - s >= 16 && is_digit(s[15]) && *s != '0' && sixteen_digits(s, &m))
        p += 16;
#endif
    for (uint64_t v; lim - p >= 8 && eight_digits(p, &v); p += 8)
        m = m * 100000000 + v;
    for (; p < lim && is_digit(*p); p++)
        m = m * 10 + (uint64_t)(*p - '0');
    if (p < end && (is_digit(*p) || *p == '.' || (*p | 0x20) == 'e'))
        return NULL;
    *out = m;
    return p;
}

/* The small integer [s, e) of value m (see scan_small_int). */
static struct atr_json *small_int_node(struct parser *ps, const unsigned char *s,
                                       const unsigned char *e, uint64_t m)
{
    ps->p = e;
    struct atr_json *n = number_node(ps, s, e);
    if (!n)
        return NULL;
    n->is_int = true;
    n->i = (int64_t)m;
    n->u.num = (double)n->i;
    return n;
}

static struct atr_json *parse_number(struct parser *ps)
{
    const unsigned char *s = ps->p;
    uint64_t m;
    const unsigned char *fast = is_digit(*s) ? scan_small_int(s, ps->end, &m) : NULL;
    if (fast)
        return small_int_node(ps, s, fast, m);
    if (*s == '-' && (s + 1 == ps->end || !is_digit(s[1]))) {
        if (s + 1 < ps->end && s[1] == 'I')
            return parse_nonfinite(ps, "invalid number: expected digit after '-'");
        return fail(ps, s + 1, "invalid number: expected digit after '-'");
    }
    bool plain;
    const unsigned char *e = scan_number(ps, s, &plain);
    if (!e)
        return NULL;
    ps->p = e;
    struct atr_json *n = number_node(ps, s, e);
    if (!n)
        return NULL;
    if (plain && to_i64(s, e, &n->i)) {
        n->is_int = true;
        /* "-0" is the integer 0, but keep the sign in num. */
        n->u.num = n->i == 0 && *s == '-' ? -0.0 : (double)n->i;
    } else if (!fast_double(n->raw, n->raw + n->raw_len, &n->u.num)) {
        n->u.num = strtod(n->raw, NULL);  /* out of range gives +-HUGE_VAL or 0 */
    }
    return n;
}

static struct atr_json *parse_literal(struct parser *ps, const char *w, enum atr_json_type t)
{
    const unsigned char *s = ps->p;
    if (!has_word(s, ps->end, w))
        return fail(ps, s, "invalid literal, expected '%s'", w);
    ps->p += strlen(w);
    return new_node(ps, t, s, 0);
}

/* ---- containers ---------------------------------------------------------- */

static struct atr_json *parse_value(struct parser *ps);

static void link_kid(struct atr_json *parent, struct atr_json *kid)
{
    if (parent->u.kids.last)
        parent->u.kids.last->next = kid;
    else
        parent->u.kids.first = kid;
    parent->u.kids.last = kid;
    parent->u.kids.count++;
}

static struct atr_json *open_container(struct parser *ps, enum atr_json_type t)
{
    if (++ps->depth > ps->max_depth)
        return fail(ps, ps->p, "nesting deeper than %u levels", ps->max_depth);
    struct atr_json *n = new_node(ps, t, ps->p, 0);
    ps->p++;
    skip_ws(ps);
    return n;
}

/* Room for one more packed value; false with the error set when out of
 * memory. */
static bool grow_ints(struct parser *ps, const unsigned char *at)
{
    size_t cap = ps->ints_cap ? 2 * ps->ints_cap : 1024;
    uint64_t *p = cap <= SIZE_MAX / sizeof *p ? realloc(ps->ints, cap * sizeof *p) : NULL;
    if (!p) {
        fail(ps, at, "out of memory after %zu JSON values", ps->values);
        ps->err->code = ATR_JSON_ENOMEM;
        return false;
    }
    ps->ints = p;
    ps->ints_cap = cap;
    return true;
}

/* Blanks at p (before ps->end), counting lines: the first byte after them. */
static inline const unsigned char *blanks(struct parser *ps, const unsigned char *p)
{
    if (p < ps->end && is_ws[*p]) {
        ps->p = p;
        skip_ws(ps);
        p = ps->p;
    }
    return p;
}

/* Reads the elements of the array arr, at ps->p (past '[' and blanks, not
 * ']'), and its ']' into a packed arr when every element packs (see
 * atr_json_opts): returns 1. Otherwise returns 0 with ps back at the first
 * element, for parse_array to read again, errors included; or -1 with the
 * error set past the value budget or out of memory, which reading the
 * elements as nodes would meet at the same element. */
static int parse_packed(struct parser *ps, struct atr_json *arr)
{
    const unsigned char *first = ps->p, *p = first, *end = ps->end;
    const unsigned char *line_start0 = ps->line_start;
    uint32_t line0 = ps->line;
    size_t n = 0;
    for (;;) {
        uint64_t v;
        const unsigned char *e = p < end && is_digit(*p) ? scan_small_int(p, end, &v) : NULL;
        if (!e || v > ps->pack_max)
            break;
        if (n == ps->max_values - ps->values) {
            take_values(ps, p, n + 1);  /* one past the budget: sets the error */
            return -1;
        }
        if (n == ps->ints_cap && !grow_ints(ps, p))
            return -1;
        ps->ints[n++] = v;
        p = blanks(ps, e);
        if (p < end && *p == ',') {
            p = blanks(ps, p + 1);
            continue;
        }
        if (p >= end || *p != ']')
            break;
        if (!(arr->ints = tree_alloc(ps, first, n * sizeof *arr->ints)))
            return -1;
        take_values(ps, first, n);  /* fits: checked per element */
        arr->packed = true;
        arr->u.kids.count = n;
        memcpy(arr->ints, ps->ints, n * sizeof *arr->ints);
        ps->p = p + 1;
        ps->depth--;
        return 1;
    }
    ps->p = first;
    ps->line = line0;
    ps->line_start = line_start0;
    return 0;
}

/* The array at ps->p; pack: whether it may come back packed. */
static struct atr_json *parse_array(struct parser *ps, bool pack)
{
    struct atr_json *arr = open_container(ps, ATR_JSON_ARRAY);
    if (!arr)
        return NULL;
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        ps->depth--;
        return arr;
    }
    int packed = pack ? parse_packed(ps, arr) : 0;
    if (packed)
        return packed > 0 ? arr : NULL;
    for (;;) {
        struct atr_json *kid = parse_value(ps);
        if (!kid)
            return NULL;
        link_kid(arr, kid);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']')
            break;
        char buf[16];
        return fail(ps, ps->p, "expected ',' or ']' after array element, found %s",
                    found(ps, ps->p, buf));
    }
    ps->p++;
    ps->depth--;
    return arr;
}

/* One "key": value member at ps->p; after names what came before, for the
 * message when the key is missing. */
static struct atr_json *parse_member(struct parser *ps, const char *after)
{
    char buf[16];
    const char *key;
    size_t key_len;
    if (ps->p >= ps->end || *ps->p != '"')
        return fail(ps, ps->p, "expected string key %s, found %s", after, found(ps, ps->p, buf));
    if (parse_key(ps, &key, &key_len) < 0)
        return NULL;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':')
        return fail(ps, ps->p, "expected ':' after object key, found %s", found(ps, ps->p, buf));
    ps->p++;
    skip_ws(ps);
    bool pack = ps->pack_key && key_len == ps->pack_key_len &&
                memcmp(key, ps->pack_key, key_len) == 0;
    struct atr_json *v = pack && ps->p < ps->end && *ps->p == '[' ? parse_array(ps, true)
                                                                  : parse_value(ps);
    if (v) {
        v->key = key;
        v->key_len = (uint32_t)key_len;
    }
    return v;
}

static struct atr_json *parse_object(struct parser *ps)
{
    struct atr_json *obj = open_container(ps, ATR_JSON_OBJECT);
    if (!obj)
        return NULL;
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        ps->depth--;
        return obj;
    }
    const char *after = "or '}'";
    for (;;) {
        struct atr_json *kid = parse_member(ps, after);
        if (!kid)
            return NULL;
        link_kid(obj, kid);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            after = "after ','";
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}')
            break;
        char buf[16];
        return fail(ps, ps->p, "expected ',' or '}' after object member, found %s",
                    found(ps, ps->p, buf));
    }
    ps->p++;
    ps->depth--;
    return obj;
}

/* Parses the value at ps->p (whitespace already skipped). */
static struct atr_json *parse_value(struct parser *ps)
{
    char buf[16];
    if (ps->p >= ps->end)
        return fail(ps, ps->p, "expected a JSON value, found end of input");
    switch (*ps->p) {
    case '"':
        return parse_string(ps);
    case '{':
        return parse_object(ps);
    case '[':
        return parse_array(ps, false);
    case 't':
        return parse_literal(ps, "true", ATR_JSON_TRUE);
    case 'f':
        return parse_literal(ps, "false", ATR_JSON_FALSE);
    case 'n':
        return parse_literal(ps, "null", ATR_JSON_NULL);
    case 'I':
    case 'N':
        return parse_nonfinite(ps, "expected a JSON value");
    default:
        if (*ps->p == '-' || is_digit(*ps->p))
            return parse_number(ps);
        return fail(ps, ps->p, "expected a JSON value, found %s", found(ps, ps->p, buf));
    }
}

int atr_json_parse(struct atr_arena *arena, const char *text, size_t len,
                   const struct atr_json_opts *opts, struct atr_json **out,
                   struct atr_json_err *err)
{
    struct atr_json_err scratch;
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    struct parser ps = {
        .arena = arena,
        .p = s,
        .end = s + (text ? len : 0),
        .line_start = s,
        .line = 1,
        .max_depth = opts && opts->max_depth ? opts->max_depth : ATR_JSON_DEFAULT_DEPTH,
        .nonfinite = opts && opts->allow_nonfinite,
        .err = err ? err : &scratch,
        .pack_key = opts ? opts->pack_key : NULL,
        .pack_key_len = opts && opts->pack_key ? strlen(opts->pack_key) : 0,
        .pack_max = opts ? opts->pack_max : 0,
        .max_values = opts && opts->max_values ? opts->max_values : SIZE_MAX,
    };
    if (ps.max_depth > JSON_DEPTH_LIMIT)
        ps.max_depth = JSON_DEPTH_LIMIT;
    *out = NULL;
    skip_ws(&ps);
    struct atr_json *v = parse_value(&ps);
    if (v) {
        skip_ws(&ps);
        if (ps.p < ps.end) {
            char buf[16];
            v = fail(&ps, ps.p, "unexpected %s after JSON value", found(&ps, ps.p, buf));
        }
    }
    free(ps.scratch);
    free(ps.ints);
    *out = v;
    return v ? 0 : -1;
}

/* ---- lookups ------------------------------------------------------------- */

struct atr_json *atr_json_get(const struct atr_json *obj, const char *key)
{
    if (!atr_json_is(obj, ATR_JSON_OBJECT))
        return NULL;
    size_t n = strlen(key);
    for (struct atr_json *m = obj->u.kids.first; m; m = m->next)
        if (m->key_len == n && memcmp(m->key, key, n) == 0)
            return m;
    return NULL;
}

const char *atr_json_get_str(const struct atr_json *obj, const char *key, size_t *len)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!atr_json_is(v, ATR_JSON_STRING))
        return NULL;
    if (len)
        *len = v->u.str.len;
    return v->u.str.s;
}

bool atr_json_get_i64(const struct atr_json *obj, const char *key, int64_t *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!atr_json_is(v, ATR_JSON_NUMBER) || !v->is_int)
        return false;
    *out = v->i;
    return true;
}

bool atr_json_get_num(const struct atr_json *obj, const char *key, double *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!atr_json_is(v, ATR_JSON_NUMBER))
        return false;
    *out = v->u.num;
    return true;
}

bool atr_json_key_is(const struct atr_json *member, const char *key)
{
    /* Keys are NUL-terminated: the first byte rejects most members before
     * a strlen (readers ask a member for each name they know in turn). */
    if (!member || !member->key || member->key[0] != key[0])
        return false;
    size_t n = strlen(key);
    return member->key_len == n && memcmp(member->key, key, n) == 0;
}

/* ---- builders ------------------------------------------------------------ */

struct atr_json *atr_json_new(struct atr_arena *a, enum atr_json_type t)
{
    struct atr_json *n = atr_arena_alloc(a, sizeof *n);
    init_node(n, t, 0, 0);
    return n;
}

struct atr_json *atr_json_new_str(struct atr_arena *a, const char *s, size_t len)
{
    struct atr_json *n = atr_json_new(a, ATR_JSON_STRING);
    n->u.str.s = atr_arena_strndup(a, s ? s : "", s ? len : 0);
    n->u.str.len = s ? len : 0;
    return n;
}

struct atr_json *atr_json_new_i64(struct atr_arena *a, int64_t v)
{
    struct atr_json *n = atr_json_new(a, ATR_JSON_NUMBER);
    n->is_int = true;
    n->i = v;
    n->u.num = (double)v;
    return n;
}

struct atr_json *atr_json_new_num(struct atr_arena *a, double v)
{
    struct atr_json *n = atr_json_new(a, ATR_JSON_NUMBER);
    n->u.num = v;
    return n;
}

void atr_json_append(struct atr_arena *a, struct atr_json *parent,
                     const char *key, struct atr_json *child)
{
    if ((parent->type != ATR_JSON_ARRAY && parent->type != ATR_JSON_OBJECT) || parent->packed)
        return;  /* not a container of nodes: nothing to append to */
    child->next = NULL;
    child->key = NULL;
    child->key_len = 0;
    if (parent->type == ATR_JSON_OBJECT) {
        size_t n = key ? strlen(key) : 0;
        child->key = atr_arena_strndup(a, key ? key : "", n);
        child->key_len = (uint32_t)n;  /* builders' keys are short */
    }
    link_kid(parent, child);
}

struct atr_json *atr_json_copy(struct atr_arena *a, const struct atr_json *v)
{
    if (!v)
        return NULL;
    struct atr_json *n = atr_arena_alloc(a, sizeof *n);
    *n = *v;
    n->next = NULL;
    if (v->key)
        n->key = atr_arena_strndup(a, v->key, v->key_len);
    if (v->packed) {
        n->ints = atr_arena_alloc(a, v->u.kids.count * sizeof *n->ints);
        memcpy(n->ints, v->ints, v->u.kids.count * sizeof *n->ints);
        return n;
    }
    if (v->raw)
        n->raw = atr_arena_strndup(a, v->raw, v->raw_len);
    if (v->type == ATR_JSON_STRING)
        n->u.str.s = atr_arena_strndup(a, v->u.str.s, v->u.str.len);
    if (v->type == ATR_JSON_ARRAY || v->type == ATR_JSON_OBJECT) {
        n->u.kids.first = n->u.kids.last = NULL;
        n->u.kids.count = 0;
        for (const struct atr_json *k = v->u.kids.first; k; k = k->next)
            link_kid(n, atr_json_copy(a, k));
    }
    return n;
}

/* ---- output -------------------------------------------------------------- */

#ifdef __SSE2__
/* Bit i set when byte i of v needs escaping: '"', '\\' or below 0x20. */
static inline unsigned out_special(__m128i v)
{
    __m128i ctl = _mm_cmpeq_epi8(_mm_subs_epu8(v, _mm_set1_epi8(0x1f)), _mm_setzero_si128());
    __m128i qb = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                              _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(ctl, qb));
}
#endif

/* Length of the prefix of [p, end) that atr_json_write_string copies as is. */
static size_t out_plain_run(const unsigned char *p, const unsigned char *end)
{
    const unsigned char *s = p;
#ifdef __SSE2__
    for (; end - p >= 16; p += 16) {
        unsigned m = out_special(_mm_loadu_si128((const __m128i *)p));
        if (m)
            return (size_t)(p - s) + (unsigned)__builtin_ctz(m);
    }
#endif
    while (p < end && out_plain(*p))
        p++;
    return (size_t)(p - s);
}

/* Writes the escape for byte c (one that is not out_plain) to e. */
static size_t escape_byte(unsigned char c, char *e)
{
    static const char hex[] = "0123456789abcdef";
    static const char short_esc[32] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n',
                                       ['\r'] = 'r', ['\t'] = 't'};
    e[0] = '\\';
    if (c == '"' || c == '\\') {
        e[1] = (char)c;
        return 2;
    }
    if (short_esc[c]) {
        e[1] = short_esc[c];
        return 2;
    }
    memcpy(e + 1, "u00", 3);
    e[4] = hex[c >> 4];
    e[5] = hex[c & 15];
    return 6;
}

/* Makes room for n more bytes and the NUL; the common case stays inline. */
static inline int room(struct atr_buf *b, size_t n)
{
    if (b->len + n < b->cap && (!b->max || b->len + n <= b->max))
        return 0;
    return atr_buf_reserve(b, n);
}

/* Encodes [p, p + n) into o, which has room for 6 * n bytes (every byte
 * escaped as \u00XX); returns the bytes written. Plain bytes go 16 at a
 * time, stored before they are checked: o stays at least 16 bytes short of
 * its bound while 16 input bytes remain. */
static size_t encode_block(const unsigned char *p, size_t n, char *o)
{
    const unsigned char *end = p + n;
    char *o0 = o;
#ifdef __SSE2__
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        _mm_storeu_si128((__m128i *)o, v);
        unsigned m = out_special(v);
        if (!m) {
            p += 16;
            o += 16;
            continue;
        }
        unsigned k = (unsigned)__builtin_ctz(m);
        p += k;
        o += k;
        o += escape_byte(*p++, o);
    }
#endif
    while (p < end) {
        if (out_plain(*p))
            *o++ = (char)*p++;
        else
            o += escape_byte(*p++, o);
    }
    return (size_t)(o - o0);
}

/* The exact path near a buffer's cap: reserves only what each run needs. */
static int encode_capped(struct atr_buf *b, const unsigned char *p, size_t n)
{
    const unsigned char *end = p + n;
    while (p < end) {
        size_t run = out_plain_run(p, end);
        char e[6];
        size_t k = p + run < end ? escape_byte(p[run], e) : 0;
        if (room(b, run + k) < 0)
            return -1;
        memcpy(b->data + b->len, p, run);
        memcpy(b->data + b->len + run, e, k);
        b->len += run + k;
        p += run + (k != 0);
    }
    return 0;
}

enum { OUT_BLOCK = 1024 };

static int write_string(struct atr_buf *b, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    if (room(b, 1) < 0)
        return -1;
    b->data[b->len++] = '"';
    while (p < end) {
        size_t n = (size_t)(end - p) < OUT_BLOCK ? (size_t)(end - p) : OUT_BLOCK;
        if (room(b, 6 * n) == 0)
            b->len += encode_block(p, n, b->data + b->len);
        else if (encode_capped(b, p, n) < 0)
            return -1;
        p += n;
    }
    if (room(b, 1) < 0)
        return -1;
    b->data[b->len++] = '"';
    b->data[b->len] = '\0';
    return 0;
}

/* Writes m / 10^k (k >= 1) in fixed point to out; returns the length. */
static size_t format_fixed(bool neg, uint64_t m, int k, char *out)
{
    char dig[20];  /* least significant first */
    int nd = 0;
    do {
        dig[nd++] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    char *o = out;
    if (neg)
        *o++ = '-';
    if (nd <= k) {
        *o++ = '0';
        *o++ = '.';
        for (int i = nd; i < k; i++)
            *o++ = '0';
    }
    for (int i = nd - 1; i >= 0; i--) {
        if (i == k - 1 && nd > k)
            *o++ = '.';
        *o++ = dig[i];
    }
    return (size_t)(o - out);
}

/* Fixed-point text for v with the fewest decimals (at most 15 significant
 * digits) that reads back exactly, or 0 when there is none; saves printf
 * for the common short fractions (scores, log-probabilities). m / 10^k of
 * two exact doubles is one correctly rounded division, as is a reader's
 * strtod of the same decimal text, so equality here means a round trip. */
static size_t fixed_double(double v, char out[40])
{
#if FLT_EVAL_METHOD == 0
    double a = fabs(v);
    if (a < 1e-5)
        return 0;
    for (int k = 1; k <= 15; k++) {
        double t = a * pow10_tab[k];
        if (t >= 1e15)
            break;
        double m = (double)(uint64_t)(t + 0.5);
        if (m / pow10_tab[k] == a)
            return format_fixed(v < 0, (uint64_t)m, k, out);
    }
#endif
    (void)v, (void)out;
    return 0;
}

/* Shortest of %.15g, %.16g, %.17g that reads back as v (or an equally
 * exact fixed-point form). Non-finite numbers have no JSON form: null. */
static int write_double(struct atr_buf *b, double v)
{
    if (!isfinite(v))
        return atr_buf_append(b, "null", 4);
    if (fabs(v) < 1e15 && v == (double)(int64_t)v && !(v == 0 && signbit(v)))
        return atr_buf_put_i64(b, (int64_t)v);
    char tmp[40];
    size_t n = fabs(v) < 1e15 ? fixed_double(v, tmp) : 0;
    if (n)
        return atr_buf_append(b, tmp, n);
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    return atr_buf_puts(b, tmp);
}

static int write_value(struct atr_buf *b, const struct atr_json *v);

static int write_packed(struct atr_buf *b, const struct atr_json *v)
{
    int rc = atr_buf_putc(b, '[');
    for (size_t k = 0; k < v->u.kids.count && rc == 0; k++)
        rc = (k ? atr_buf_putc(b, ',') : 0) | atr_buf_put_u64(b, v->ints[k]);
    return rc < 0 ? -1 : atr_buf_putc(b, ']');
}

static int write_kids(struct atr_buf *b, const struct atr_json *v, char lb, char rb)
{
    if (atr_buf_putc(b, lb) < 0)
        return -1;
    for (const struct atr_json *k = v->u.kids.first; k; k = k->next) {
        if (k != v->u.kids.first && atr_buf_putc(b, ',') < 0)
            return -1;
        if (v->type == ATR_JSON_OBJECT &&
            (write_string(b, k->key ? k->key : "", k->key_len) < 0 ||
             atr_buf_putc(b, ':') < 0))
            return -1;
        if (write_value(b, k) < 0)
            return -1;
    }
    return atr_buf_putc(b, rb);
}

static int write_value(struct atr_buf *b, const struct atr_json *v)
{
    switch (v->type) {
    case ATR_JSON_NULL:
        return atr_buf_append(b, "null", 4);
    case ATR_JSON_FALSE:
        return atr_buf_append(b, "false", 5);
    case ATR_JSON_TRUE:
        return atr_buf_append(b, "true", 4);
    case ATR_JSON_NUMBER:
        /* A parsed "-0" is an integer whose num keeps the sign: write "-0". */
        if (v->is_int && (v->i != 0 || !signbit(v->u.num)))
            return atr_buf_put_i64(b, v->i);
        return write_double(b, v->u.num);
    case ATR_JSON_STRING:
        return write_string(b, v->u.str.s, v->u.str.len);
    case ATR_JSON_ARRAY:
        return v->packed ? write_packed(b, v) : write_kids(b, v, '[', ']');
    case ATR_JSON_OBJECT:
        return write_kids(b, v, '{', '}');
    }
    return -1;
}

/* On failure, drop whatever was partly written so the buffer stays as it
 * was before the call. */
static int undo(struct atr_buf *b, size_t len0)
{
    b->len = len0;
    if (b->data)
        b->data[len0] = '\0';
    return -1;
}

int atr_json_write_string(struct atr_buf *b, const char *s, size_t len)
{
    size_t len0 = b->len;
    return write_string(b, s ? s : "", s ? len : 0) < 0 ? undo(b, len0) : 0;
}

int atr_json_write_value(struct atr_buf *b, const struct atr_json *v)
{
    size_t len0 = b->len;
    return write_value(b, v) < 0 ? undo(b, len0) : 0;
}

const char *atr_json_type_name(enum atr_json_type t)
{
    switch (t) {
    case ATR_JSON_NULL:
        return "null";
    case ATR_JSON_FALSE:
    case ATR_JSON_TRUE:
        return "boolean";
    case ATR_JSON_NUMBER:
        return "number";
    case ATR_JSON_STRING:
        return "string";
    case ATR_JSON_ARRAY:
        return "array";
    case ATR_JSON_OBJECT:
        return "object";
    }
    return "unknown";
}
