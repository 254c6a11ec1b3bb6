/* sse.c - incremental server-sent-events parser and OpenAI stream payloads. */
#include "llm/sse.h"

#include <stdio.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "json/json.h"
#include "json/scan.h"

enum { SSE_DEFAULT_MAX_LINE = 1 << 20 };

void atr_sse_init(struct atr_sse *p, size_t max_line)
{
    memset(p, 0, sizeof *p);
    p->max_line = max_line ? max_line : SSE_DEFAULT_MAX_LINE;
    p->line.max = p->max_line;
    p->data.max = p->max_line;
}

void atr_sse_reset(struct atr_sse *p)
{
    atr_buf_clear(&p->line);
    atr_buf_clear(&p->data);
    p->has_data = false;
    p->after_cr = false;
    p->started = false;
    p->failed = 0;
}

void atr_sse_release(struct atr_sse *p)
{
    atr_buf_release(&p->line);
    atr_buf_release(&p->data);
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && memcmp(name, want, len) == 0;
}

static int dispatch(struct atr_sse *p, atr_sse_event_fn fn, void *ctx)
{
    if (!p->has_data)
        return 0;
    p->has_data = false;
    int rc = fn(ctx, p->data.data ? p->data.data : "", p->data.len);
    atr_buf_clear(&p->data);
    return rc;
}

static int add_data(struct atr_sse *p, const char *v, size_t len)
{
    /* Not atr_buf_putc: it checks max only when it has to grow. */
    if (p->has_data && atr_buf_append(&p->data, "\n", 1) < 0)
        return ATR_SSE_ERR_SIZE;
    if (atr_buf_append(&p->data, v, len) < 0)
        return ATR_SSE_ERR_SIZE;
    p->has_data = true;
    return 0;
}

/* One complete line, without its end-of-line bytes. */
static int process_line(struct atr_sse *p, const char *line, size_t len,
                        atr_sse_event_fn fn, void *ctx)
{
    if (!p->started) {
        p->started = true;
        if (len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
            line += 3;
            len -= 3;
        }
    }
    if (len == 0)
        return dispatch(p, fn, ctx);
    if (line[0] == ':')
        return 0;  /* comment, often a keep-alive ping */
    /* Nearly every line of a stream: "data: " and its payload. */
    if (len >= 5 && memcmp(line, "data:", 5) == 0) {
        size_t skip = len > 5 && line[5] == ' ' ? 6 : 5;
        return add_data(p, line + skip, len - skip);
    }
    const char *colon = memchr(line, ':', len);
    size_t name_len = colon ? (size_t)(colon - line) : len;
    const char *value = colon ? colon + 1 : line + len;
    size_t value_len = (size_t)(line + len - value);
    if (value_len && value[0] == ' ') {
        value++;
        value_len--;
    }
    if (name_is(line, name_len, "data"))
        return add_data(p, value, value_len);
    if (name_is(line, name_len, "event") || name_is(line, name_len, "id") ||
        name_is(line, name_len, "retry"))
        return 0;
    return ATR_SSE_ERR_LINE;
}

/* First '\n' or '\r' in s[0..n), or NULL: one pass, 16 bytes a step
 * (a stream's lines are a few hundred bytes; two memchr() calls a line,
 * one per byte, cost more than the line's scan). */
static const char *find_eol(const char *s, size_t n)
{
    const char *end = s + n;
#ifdef __SSE2__
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    for (; end - s >= 16; s += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
        int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)));
        if (m)
            return s + __builtin_ctz((unsigned)m);
    }
#endif
    for (; s < end; s++) {
        if (*s == '\n' || *s == '\r')
            return s;
    }
    return NULL;
}

static int fail(struct atr_sse *p, int rc)
{
    if (rc)
        p->failed = rc;
    return rc;
}

/* The common event, "data: PAYLOAD\n\n" whole in the slice at line
 * (seg bytes before its first '\n'; end: the slice's end), with nothing
 * pending: read at once, as process_line would read its two lines. */
static bool whole_event(const struct atr_sse *p, const char *line, size_t seg, const char *end)
{
    return !p->line.len && !p->has_data && p->started && line[seg] == '\n' &&
           line + seg + 1 < end && line[seg + 1] == '\n' && seg >= 5 && seg <= p->max_line &&
           memcmp(line, "data:", 5) == 0;
}

static int event_now(struct atr_sse *p, const char *line, size_t seg, atr_sse_event_fn fn,
                     void *ctx)
{
    size_t skip = seg > 5 && line[5] == ' ' ? 6 : 5;
    int rc = add_data(p, line + skip, seg - skip);
    return rc ? rc : dispatch(p, fn, ctx);
}

int atr_sse_feed(struct atr_sse *p, const char *s, size_t n, atr_sse_event_fn fn,
                 void *ctx)
{
    if (p->failed)
        return p->failed;
    size_t i = 0;
    if (p->after_cr && n > 0) {
        p->after_cr = false;
        if (s[0] == '\n')
            i = 1;
    }
    while (i < n) {
        const char *eol = find_eol(s + i, n - i);
        size_t seg = eol ? (size_t)(eol - (s + i)) : n - i;
        if (eol && whole_event(p, s + i, seg, s + n)) {
            i += seg + 2;
            int rc = event_now(p, s + i - seg - 2, seg, fn, ctx);
            if (rc)
                return fail(p, rc);
            continue;
        }
        if (!eol || p->line.len) {
            if (atr_buf_append(&p->line, s + i, seg) < 0)
                return fail(p, ATR_SSE_ERR_SIZE);
            if (!eol)
                break;
        } else if (seg > p->max_line) {
            return fail(p, ATR_SSE_ERR_SIZE);
        }
        const char *line = p->line.len ? p->line.data : s + i;
        size_t len = p->line.len ? p->line.len : seg;
        i += seg + 1;
        if (*eol == '\r') {
            if (i < n && s[i] == '\n')
                i++;
            else if (i == n)
                p->after_cr = true;
        }
        int rc = process_line(p, line, len, fn, ctx);
        atr_buf_clear(&p->line);
        if (rc)
            return fail(p, rc);
    }
    return 0;
}

int atr_sse_finish(struct atr_sse *p, atr_sse_event_fn fn, void *ctx)
{
    if (p->failed)
        return p->failed;
    if (p->line.len) {
        int rc = process_line(p, p->line.data, p->line.len, fn, ctx);
        atr_buf_clear(&p->line);
        if (rc)
            return fail(p, rc);
    }
    return fail(p, dispatch(p, fn, ctx));
}

/* ---- payloads ---- */

static int bad(struct atr_sse_payload *out, const char *msg)
{
    snprintf(out->detail, sizeof out->detail, "%s", msg);
    return -1;
}

/* A token count: absent or null leaves *out alone; else a non-negative int. */
static int get_count(const struct atr_json *obj, const char *key, int64_t *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!v || v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_NUMBER || !v->is_int || v->i < 0)
        return -1;
    *out = v->i;
    return 0;
}

static int parse_usage(const struct atr_json *u, struct atr_sse_payload *out)
{
    if (u->type == ATR_JSON_NULL)
        return 0;
    if (u->type != ATR_JSON_OBJECT)
        return bad(out, "\"usage\" is not an object");
    if (get_count(u, "prompt_tokens", &out->prompt_tokens) < 0 ||
        get_count(u, "completion_tokens", &out->completion_tokens) < 0)
        return bad(out, "usage token count is not a non-negative integer");
    const struct atr_json *d = atr_json_get(u, "prompt_tokens_details");
    if (atr_json_is(d, ATR_JSON_OBJECT) && get_count(d, "cached_tokens", &out->cached_tokens) < 0)
        return bad(out, "cached_tokens is not a non-negative integer");
    /* A usage without completion_tokens cannot give output tokens. */
    out->usage = out->completion_tokens >= 0;
    return 0;
}

static int parse_choices(const struct atr_json *c, struct atr_sse_payload *out)
{
    if (c->type == ATR_JSON_NULL)
        return 0;
    if (c->type != ATR_JSON_ARRAY)
        return bad(out, "\"choices\" is not an array");
    if (c->u.kids.count == 0)
        return 0;
    if (c->u.kids.first->type != ATR_JSON_OBJECT)
        return bad(out, "choices[0] is not an object");
    out->chunk = true;
    return 0;
}

static void parse_error(const struct atr_json *e, struct atr_sse_payload *out)
{
    if (e->type == ATR_JSON_NULL)
        return;
    out->error = true;
    const char *msg = e->type == ATR_JSON_STRING ? e->u.str.s : atr_json_get_str(e, "message", NULL);
    snprintf(out->detail, sizeof out->detail, "%s", msg ? msg : "error event");
}

/* The payload as a tree: every shape, every error with its position. */
static int payload_tree(struct atr_arena *arena, const char *data, size_t len,
                        struct atr_sse_payload *out)
{
    struct atr_json *v = NULL;
    struct atr_json_err jerr;
    if (atr_json_parse(arena, data, len, NULL, &v, &jerr) < 0) {
        snprintf(out->detail, sizeof out->detail, "payload %u:%u: %.120s", jerr.line, jerr.col,
                 jerr.msg);
        return -1;
    }
    if (v->type != ATR_JSON_OBJECT)
        return bad(out, "payload is not a JSON object");
    /* One pass over the members: a chunk has a handful of them. */
    for (const struct atr_json *m = v->u.kids.first; m; m = m->next) {
        int rc = 0;
        if (atr_json_key_is(m, "choices"))
            rc = parse_choices(m, out);
        else if (atr_json_key_is(m, "usage"))
            rc = parse_usage(m, out);
        else if (atr_json_key_is(m, "error"))
            parse_error(m, out);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- the fast path: payloads read in place ---- */

/* A stream of 8 tokens is 10 payloads, and building each one's tree was a
 * quarter of the replay client's instructions per request. The json
 * scanner (json/scan.h) reads the members the metrics need where they lie
 * and steps over the rest, but only over input it can tell is valid JSON.
 * On top of what it cannot tell, this reader gives up on counts that are
 * not plain integers, an "error" that is not null (the tree reads its
 * message) and a duplicate usage key: any of these makes it answer
 * SCAN_UNSURE and the tree decides, so every error message still comes
 * from the tree; where the scanner answers, the unit test and fuzz-sse
 * check that the tree answers the same. */
enum { SCAN_OK = 0, SCAN_UNSURE = 1 };

/* A token count: null leaves *out alone (as get_count), anything but a
 * plain integer is for the tree. */
static bool scan_count(struct atr_json_scan *s, int64_t *out)
{
    if (atr_json_scan_peek(s) == 'n')
        return atr_json_scan_null(s);
    return atr_json_scan_uint(s, out);
}

/* Each count once: the tree reads the first of duplicate keys, so a
 * second one is for the tree. */
struct usage_scan {
    struct atr_sse_payload *out;
    unsigned seen;
};

enum { SEEN_PROMPT = 1, SEEN_COMPLETION = 2, SEEN_DETAILS = 4, SEEN_CACHED = 8 };

static bool seen_once(struct usage_scan *u, unsigned bit)
{
    if (u->seen & bit)
        return false;
    u->seen |= bit;
    return true;
}

static bool details_member(struct atr_json_scan *s, const char *key, size_t n, void *ctx)
{
    struct usage_scan *u = ctx;
    if (atr_json_scan_key_is(key, n, "cached_tokens"))
        return seen_once(u, SEEN_CACHED) && scan_count(s, &u->out->cached_tokens);
    return atr_json_scan_skip(s);
}

static bool usage_member(struct atr_json_scan *s, const char *key, size_t n, void *ctx)
{
    struct usage_scan *u = ctx;
    if (atr_json_scan_key_is(key, n, "prompt_tokens"))
        return seen_once(u, SEEN_PROMPT) && scan_count(s, &u->out->prompt_tokens);
    if (atr_json_scan_key_is(key, n, "completion_tokens"))
        return seen_once(u, SEEN_COMPLETION) && scan_count(s, &u->out->completion_tokens);
    if (!atr_json_scan_key_is(key, n, "prompt_tokens_details"))
        return atr_json_scan_skip(s);
    if (!seen_once(u, SEEN_DETAILS))
        return false;
    /* Details that are not an object are ignored, as by the tree. */
    return atr_json_scan_peek(s) == '{' ? atr_json_scan_object(s, details_member, u)
                                        : atr_json_scan_skip(s);
}

static bool scan_usage(struct atr_json_scan *s, struct atr_sse_payload *out)
{
    if (atr_json_scan_peek(s) == 'n')
        return atr_json_scan_null(s);
    struct usage_scan u = {.out = out};
    if (!atr_json_scan_object(s, usage_member, &u))
        return false;
    out->usage = out->completion_tokens >= 0;
    return true;
}

/* A chunk when the first element is an object; any other first element
 * is an error, for the tree to word. */
static bool choice_elem(struct atr_json_scan *s, size_t index, void *ctx)
{
    struct atr_sse_payload *out = ctx;
    if (index == 0) {
        if (atr_json_scan_peek(s) != '{')
            return false;
        out->chunk = true;
    }
    return atr_json_scan_skip(s);
}

/* null, or an array (see choice_elem). */
static bool scan_choices(struct atr_json_scan *s, struct atr_sse_payload *out)
{
    char c = atr_json_scan_peek(s);
    if (c == 'n')
        return atr_json_scan_null(s);
    return c == '[' && atr_json_scan_array(s, choice_elem, out);
}

static bool top_member(struct atr_json_scan *s, const char *key, size_t n, void *ctx)
{
    if (atr_json_scan_key_is(key, n, "choices"))
        return scan_choices(s, ctx);
    if (atr_json_scan_key_is(key, n, "usage"))
        return scan_usage(s, ctx);
    if (atr_json_scan_key_is(key, n, "error"))   /* an error object: the tree reads its message */
        return atr_json_scan_null(s);
    return atr_json_scan_skip(s);
}

/* shape: NULL, or where to record the payload's shape (its len is 0
 * unless the scan answered). */
static int payload_scan(const char *data, size_t len, struct atr_sse_payload *out,
                        struct atr_json_shape *shape)
{
    struct atr_json_scan s;
    atr_json_scan_init(&s, data, len);
    if (shape)
        atr_json_scan_record(&s, shape);
    if (!atr_json_scan_object(&s, top_member, out) || !atr_json_scan_end(&s)) {
        if (shape)
            shape->len = 0;
        return SCAN_UNSURE;
    }
    return SCAN_OK;
}

/* ---- payloads: both paths ---- */

static void payload_init(struct atr_sse_payload *out)
{
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = out->cached_tokens = -1;
}

void atr_sse_memo_init(struct atr_sse_memo *m)
{
    memset(m, 0, sizeof *m);
    for (unsigned i = 0; i < ATR_SSE_MEMO_SLOTS; i++)
        m->order[i] = (unsigned char)i;
}

/* Moves order[k] to the front. */
static unsigned memo_front(struct atr_sse_memo *m, unsigned k)
{
    unsigned char slot = m->order[k];
    for (; k > 0; k--)
        m->order[k] = m->order[k - 1];
    m->order[0] = slot;
    return slot;
}

/* A recorded shape data matches: what its payload said, or NULL. The
 * shapes' holes are exactly the values top_member and its helpers step
 * over with atr_json_scan_skip, and they decide on nothing else, so a
 * match says what a scan would (the unit test checks it against scans). */
static const struct atr_sse_payload *memo_find(struct atr_sse_memo *m, const char *data,
                                               size_t len)
{
    for (unsigned k = 0; k < ATR_SSE_MEMO_SLOTS; k++) {
        if (atr_json_shape_match(&m->slot[m->order[k]].shape, data, len))
            return &m->slot[memo_front(m, k)].said;
    }
    return NULL;
}

/* data: trimmed, not [DONE]. Scans it, recording its shape over the
 * least recent slot (left empty, still the least recent, when the scan
 * cannot tell or the payload is too long to record); the tree when the
 * scan cannot tell. */
static int memo_scan(struct atr_sse_memo *m, struct atr_arena *arena, const char *data,
                     size_t len, struct atr_sse_payload *out)
{
    unsigned slot = m->order[ATR_SSE_MEMO_SLOTS - 1];
    if (payload_scan(data, len, out, &m->slot[slot].shape) == SCAN_OK) {
        m->slot[slot].said = *out;
        memo_front(m, ATR_SSE_MEMO_SLOTS - 1);
        return 0;
    }
    payload_init(out);
    return payload_tree(arena, data, len, out);
}

int atr_sse_payload_parse_memo(struct atr_sse_memo *memo, struct atr_arena *arena,
                               const char *data, size_t len, struct atr_sse_payload *out)
{
    while (len && atr_json_scan_blank(data[len - 1]))
        len--;
    while (len && atr_json_scan_blank(data[0])) {
        data++;
        len--;
    }
    if (memo) {
        /* A match copies what was said whole: no payload_init first. */
        const struct atr_sse_payload *said = memo_find(memo, data, len);
        if (said) {
            memo->hits++;
            *out = *said;
            return 0;
        }
    }
    payload_init(out);
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        out->done = true;
        return 0;
    }
    if (memo) {
        memo->misses++;
        return memo_scan(memo, arena, data, len, out);
    }
    if (payload_scan(data, len, out, NULL) == SCAN_OK)
        return 0;
    payload_init(out);
    return payload_tree(arena, data, len, out);
}

int atr_sse_payload_parse(struct atr_arena *arena, const char *data, size_t len,
                          struct atr_sse_payload *out)
{
    return atr_sse_payload_parse_memo(NULL, arena, data, len, out);
}
