/* fuzz-json-scan.c - libFuzzer target for the in-place JSON scanner
 * (json/scan.h). It must never read outside the text (libFuzzer's buffer
 * is exactly the input's size, so ASan sees any such read), and where it
 * reads a whole text, atr_json_parse must read it too and give the same
 * structure, keys, strings, numbers and counts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "json/scan.h"

static struct atr_arena arena = ATR_ARENA_INIT;

static void must(int ok)
{
    if (!ok)
        abort();
}

static bool walk(struct atr_json_scan *s, const struct atr_json *v);

/* ctx: the tree's next member or element, advanced as the scan goes. */
static bool on_member(struct atr_json_scan *s, const char *key, size_t n, void *ctx)
{
    const struct atr_json **next = ctx;
    const struct atr_json *m = *next;
    must(m != NULL);
    if (key)
        must(m->key_len == n && memcmp(m->key, key, n) == 0);
    *next = m->next;
    return walk(s, m);
}

static bool on_elem(struct atr_json_scan *s, size_t index, void *ctx)
{
    (void)index;
    return on_member(s, NULL, 0, ctx);
}

static bool walk_number(struct atr_json_scan *s, const struct atr_json *v)
{
    struct atr_json_scan again = *s;
    const char *raw;
    size_t n;
    int64_t u;
    if (!atr_json_scan_number(s, &raw, &n))
        return false;
    must(v->type == ATR_JSON_NUMBER && v->raw_len == n && memcmp(v->raw, raw, n) == 0);
    if (atr_json_scan_uint(&again, &u))
        must(again.p == s->p && v->is_int && v->i == u && u >= 0);
    return true;
}

/* Reads the value at s as the tree v says it is. */
static bool walk(struct atr_json_scan *s, const struct atr_json *v)
{
    const char *body;
    size_t n;
    const struct atr_json *next;
    char c = atr_json_scan_peek(s);
    switch (c) {
    case '{':
        must(v->type == ATR_JSON_OBJECT);
        next = v->u.kids.first;
        if (!atr_json_scan_object(s, on_member, &next))
            return false;
        must(next == NULL);
        return true;
    case '[':
        must(v->type == ATR_JSON_ARRAY);
        next = v->u.kids.first;
        if (!atr_json_scan_array(s, on_elem, &next))
            return false;
        must(next == NULL);
        return true;
    case '"':
        if (!atr_json_scan_string(s, &body, &n))
            return false;
        must(v->type == ATR_JSON_STRING);
        if (body)
            must(v->u.str.len == n && memcmp(v->u.str.s, body, n) == 0);
        return true;
    case 'n':
        if (!atr_json_scan_null(s))
            return false;
        must(v->type == ATR_JSON_NULL);
        return true;
    case 't':
    case 'f':
        if (!atr_json_scan_skip(s))
            return false;
        must(v->type == (c == 't' ? ATR_JSON_TRUE : ATR_JSON_FALSE));
        return true;
    default:
        return walk_number(s, v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct atr_json_scan s;
    atr_json_scan_init(&s, text, size);
    bool ok = atr_json_scan_skip(&s) && atr_json_scan_end(&s);
    must(s.p >= text && s.p <= text + size);
    if (!ok)
        return 0;
    struct atr_json *v;
    struct atr_json_err err;
    must(atr_json_parse(&arena, text, size, NULL, &v, &err) == 0);
    atr_json_scan_init(&s, text, size);
    must(walk(&s, v) && atr_json_scan_end(&s));
    atr_arena_clear(&arena);
    return 0;
}
