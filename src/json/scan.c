/* scan.c - reads one JSON text in place, answering only for input it can
 * tell is valid (see scan.h); everything else is for atr_json_parse. */
#include "json/scan.h"

#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* An integer of this many digits always fits an int64_t. */
enum { SCAN_UINT_DIGITS = 18 };

void atr_json_scan_init(struct atr_json_scan *s, const char *text, size_t len)
{
    s->p = text;
    s->end = text + len;
    s->depth = 0;
    s->max_depth = ATR_JSON_SCAN_DEPTH;
}

char atr_json_scan_peek_slow(struct atr_json_scan *s)
{
    while (s->p < s->end && atr_json_scan_blank(*s->p))
        s->p++;
    return s->p < s->end ? *s->p : '\0';
}

static bool scan_byte(struct atr_json_scan *s, char c)
{
    if (atr_json_scan_peek(s) != c)
        return false;
    s->p++;
    return true;
}

static bool scan_word(struct atr_json_scan *s, const char *w, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
        return false;
    s->p += n;
    return true;
}

/* A string byte the scanner steps over: not the quote, an escape, a
 * control character or non-ASCII (for the tree). */
static inline bool str_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* The end of the run of plain bytes from p: 16 bytes a step while they
 * last (most strings in a small document are short; one step finds them
 * whole). Signed, a byte under 0x20 is a control character or non-ASCII. */
static const char *plain_run(const char *p, const char *end)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                 _mm_cmpeq_epi8(v, bslash)),
                                    _mm_cmplt_epi8(v, space));
        int m = _mm_movemask_epi8(stop);
        if (m)
            return p + __builtin_ctz((unsigned)m);
        p += 16;
    }
#endif
    while (p < end && str_plain((unsigned char)*p))
        p++;
    return p;
}

/* The rest of a string from its first escape at p; its closing quote, or
 * NULL. Apart from scan_string so that the common string saves nothing. */
static const char *escaped_run(const char *p, const char *end)
{
    while (p < end && *p == '\\') {
        if (p + 1 == end || !memchr("\"\\/bfnrt", p[1], 8))
            return NULL;
        p = plain_run(p + 2, end);
    }
    return p < end && *p == '"' ? p : NULL;
}

/* The string at s->p (its '"'). */
static bool scan_string(struct atr_json_scan *s, const char **body, size_t *len)
{
    const char *start = s->p + 1;
    const char *p = plain_run(start, s->end);
    *body = start;
    if (p < s->end && *p == '\\') {
        *body = NULL;
        p = escaped_run(p, s->end);
    }
    if (!p || p == s->end || *p != '"')
        return false;
    *len = (size_t)(p - start);
    s->p = p + 1;
    return true;
}

static bool scan_digits(struct atr_json_scan *s)
{
    const char *start = s->p;
    while (s->p < s->end && (unsigned)(*s->p - '0') < 10)
        s->p++;
    return s->p > start;
}

/* The number at s->p by JSON's grammar; *uint says it is digits only,
 * short enough for an int64_t. */
static bool scan_number(struct atr_json_scan *s, bool *uint)
{
    const char *start = s->p;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0')
        s->p++;
    else if (!scan_digits(s))
        return false;
    *uint = *start != '-' && s->p - start <= SCAN_UINT_DIGITS;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        *uint = false;
        if (!scan_digits(s))
            return false;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        *uint = false;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!scan_digits(s))
            return false;
    }
    return true;
}

/* An object's members, from its '{' to its '}', each value read by fn. */
static bool scan_members(struct atr_json_scan *s, atr_json_scan_member_fn fn, void *ctx)
{
    if (!scan_byte(s, '{') || ++s->depth > s->max_depth)
        return false;
    if (!scan_byte(s, '}')) {
        do {
            const char *key;
            size_t n;
            if (atr_json_scan_peek(s) != '"' || !scan_string(s, &key, &n) ||
                !scan_byte(s, ':') || !fn(s, key, n, ctx))
                return false;
        } while (scan_byte(s, ','));
        if (!scan_byte(s, '}'))
            return false;
    }
    s->depth--;
    return true;
}

static bool skip_member(struct atr_json_scan *s, const char *key, size_t n, void *ctx)
{
    (void)key, (void)n, (void)ctx;
    return atr_json_scan_skip(s);
}

/* An array's elements, from its '[' to its ']'; fn NULL steps over them. */
static bool scan_elements(struct atr_json_scan *s, atr_json_scan_elem_fn fn, void *ctx)
{
    if (!scan_byte(s, '[') || ++s->depth > s->max_depth)
        return false;
    if (!scan_byte(s, ']')) {
        size_t i = 0;
        do {
            if (!(fn ? fn(s, i++, ctx) : atr_json_scan_skip(s)))
                return false;
        } while (scan_byte(s, ','));
        if (!scan_byte(s, ']'))
            return false;
    }
    s->depth--;
    return true;
}

bool atr_json_scan_skip(struct atr_json_scan *s)
{
    const char *body;
    size_t n;
    bool uint;
    switch (atr_json_scan_peek(s)) {
    case '{': return scan_members(s, skip_member, NULL);
    case '[': return scan_elements(s, NULL, NULL);
    case '"': return scan_string(s, &body, &n);
    case 't': return scan_word(s, "true", 4);
    case 'f': return scan_word(s, "false", 5);
    case 'n': return scan_word(s, "null", 4);
    default: return scan_number(s, &uint);
    }
}

bool atr_json_scan_null(struct atr_json_scan *s)
{
    return atr_json_scan_peek(s) == 'n' && scan_word(s, "null", 4);
}

bool atr_json_scan_string(struct atr_json_scan *s, const char **body, size_t *len)
{
    return atr_json_scan_peek(s) == '"' && scan_string(s, body, len);
}

bool atr_json_scan_number(struct atr_json_scan *s, const char **raw, size_t *len)
{
    atr_json_scan_peek(s);
    const char *start = s->p;
    bool uint;
    if (!scan_number(s, &uint))
        return false;
    *raw = start;
    *len = (size_t)(s->p - start);
    return true;
}

bool atr_json_scan_uint(struct atr_json_scan *s, int64_t *out)
{
    atr_json_scan_peek(s);
    const char *start = s->p;
    bool uint;
    if (!scan_number(s, &uint) || !uint)
        return false;
    int64_t v = 0;
    for (const char *p = start; p < s->p; p++)
        v = v * 10 + (*p - '0');
    *out = v;
    return true;
}

bool atr_json_scan_object(struct atr_json_scan *s, atr_json_scan_member_fn fn, void *ctx)
{
    return scan_members(s, fn ? fn : skip_member, ctx);
}

bool atr_json_scan_array(struct atr_json_scan *s, atr_json_scan_elem_fn fn, void *ctx)
{
    return scan_elements(s, fn, ctx);
}

bool atr_json_scan_end(struct atr_json_scan *s)
{
    atr_json_scan_peek(s);
    return s->p == s->end;
}
