/* sse.c - incremental server-sent-events parser and OpenAI stream payloads. */
#include "llm/sse.h"

#include <stdio.h>
#include <string.h>

#include "json/json.h"

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

/* First '\n' or '\r' in s[0..n), or NULL. */
static const char *find_eol(const char *s, size_t n)
{
    const char *lf = memchr(s, '\n', n);
    const char *cr = memchr(s, '\r', lf ? (size_t)(lf - s) : n);
    return cr ? cr : lf;
}

static int fail(struct atr_sse *p, int rc)
{
    if (rc)
        p->failed = rc;
    return rc;
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

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
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

int atr_sse_payload_parse(struct atr_arena *arena, const char *data, size_t len,
                          struct atr_sse_payload *out)
{
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = out->cached_tokens = -1;
    while (len && is_blank(data[len - 1]))
        len--;
    while (len && is_blank(data[0])) {
        data++;
        len--;
    }
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        out->done = true;
        return 0;
    }
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
