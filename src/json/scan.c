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
    s->start = text;
    s->rec = NULL;
    s->skipping = 0;
}

bool atr_json_scan_record(struct atr_json_scan *s, struct atr_json_shape *sh)
{
    size_t len = (size_t)(s->end - s->start);
    sh->len = 0;
    sh->n_holes = 0;
    if (len == 0 || len > ATR_JSON_SHAPE_TEXT)
        return false;
    memcpy(sh->text, s->start, len);
    sh->len = len;
    s->rec = sh;
    return true;
}

/* A value stepped over, from..to: a hole of the shape being recorded. */
static void add_hole(struct atr_json_scan *s, const char *from, const char *to, bool num)
{
    struct atr_json_shape *sh = s->rec;
    if (!sh->len)
        return;
    if (sh->n_holes == ATR_JSON_SHAPE_HOLES) {
        sh->len = 0;   /* too many to record: no shape */
        return;
    }
    sh->hole_at[sh->n_holes] = (uint16_t)(from - s->start);
    sh->hole_end[sh->n_holes] = (uint16_t)(to - s->start);
    sh->hole_num[sh->n_holes++] = num;
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

const char *atr_json_scan_plain_end(const char *p, const char *end)
{
    return plain_run(p, end);
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

/* A string value stepped over; its body a hole when a shape is recorded.
 * Keys are never holes: they stay the same from payload to payload, and
 * a fixed byte is cheaper to match than a hole. */
static bool skip_string(struct atr_json_scan *s)
{
    const char *body;
    size_t n;
    const char *start = s->p + 1;
    if (!scan_string(s, &body, &n))
        return false;
    if (s->skipping)
        add_hole(s, start, start + n, false);
    return true;
}

/* A number stepped over; a hole when a shape is recorded. */
static bool skip_number(struct atr_json_scan *s)
{
    const char *start = s->p;
    bool uint;
    if (!scan_number(s, &uint))
        return false;
    if (s->skipping)
        add_hole(s, start, s->p, true);
    return true;
}

static bool skip_value(struct atr_json_scan *s)
{
    switch (atr_json_scan_peek(s)) {
    case '{': return scan_members(s, skip_member, NULL);
    case '[': return scan_elements(s, NULL, NULL);
    case '"': return skip_string(s);
    case 't': return scan_word(s, "true", 4);
    case 'f': return scan_word(s, "false", 5);
    case 'n': return scan_word(s, "null", 4);
    default: return skip_number(s);
    }
}

bool atr_json_scan_skip(struct atr_json_scan *s)
{
    if (!s->rec)
        return skip_value(s);
    /* What is stepped over is in holes: the caller does not read it. */
    s->skipping++;
    bool ok = skip_value(s);
    s->skipping--;
    return ok;
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

/* ---- shapes ---- */

/* The length of the common prefix of a[0..n) and b[0..n): 16 bytes a
 * step, so the long runs where a payload equals its shape's text (its
 * keys, and the holes whose values did not change) cost a few
 * instructions each. */
static size_t common_prefix(const char *a, const char *b, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    for (; n - i >= 16; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(a + i));
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
        unsigned same = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y));
        if (same != 0xFFFF)
            return i + (size_t)__builtin_ctz(~same);
    }
#endif
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* The closing quote of the string body at p, or where it stops being one
 * the scanner accepts (the caller's next fixed byte, '"', then differs). */
static const char *hole_string_end(const char *p, const char *end)
{
    p = plain_run(p, end);
    if (p < end && *p == '\\')
        p = escaped_run(p, end);
    return p;
}

/* Where scan_number stops reading the number at p, or NULL. Plain digits
 * (a timestamp, an index) are read here; anything else by scan_number. */
static const char *hole_number_end(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && (unsigned)(*q - '0') < 10)
        q++;
    if (q > p && q < end && *q != '.' && *q != 'e' && *q != 'E' && (*p != '0' || q == p + 1))
        return q;
    struct atr_json_scan t = {.p = p, .end = end};
    bool uint;
    return scan_number(&t, &uint) ? t.p : NULL;
}

bool atr_json_shape_match(const struct atr_json_shape *sh, const char *text, size_t len)
{
    if (!sh->len)
        return false;
    /* Equal bytes are stepped over 16 at a time; where text first differs
     * from the shape's text, that must be inside (or just after) a hole,
     * whose new value is then read whole from its start, and the rest
     * compared again from the hole's end. A hole passed over equal is
     * the recorded value itself, which the scanner accepted. */
    size_t t = 0, p = 0;   /* matched up to sh->text[t], text[p] */
    unsigned i = 0;        /* the first hole not passed */
    for (;;) {
        size_t room = sh->len - t < len - p ? sh->len - t : len - p;
        size_t d = t + common_prefix(sh->text + t, text + p, room);
        p += d - t;
        t = d;
        if (t == sh->len && p == len)
            return true;
        while (i < sh->n_holes && sh->hole_end[i] < t)
            i++;
        if (i == sh->n_holes || sh->hole_at[i] > t)
            return false;   /* a fixed byte differs */
        const char *from = text + p - (t - sh->hole_at[i]);
        const char *to = sh->hole_num[i] ? hole_number_end(from, text + len)
                                         : hole_string_end(from, text + len);
        if (!to)
            return false;
        p = (size_t)(to - text);
        t = sh->hole_end[i++];
    }
}
