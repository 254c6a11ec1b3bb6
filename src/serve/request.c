/* request.c - parses and checks OpenAI completion and chat request bodies,
 * and turns their prompt into a token count and prefix-block ids. */
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "serve/server.h"
#include "trace/tokens.h"
#include "util/alloc.h"
#include "util/buf.h"

/* Chat messages are rendered "<|role|>\n" + content + "\n"; the rendered
 * text is capped so a body of nested parts cannot grow it without bound. */
#define RENDER_MAX (64u << 20)

static int want_type(const struct atr_json *v, enum atr_json_type t, const char *what,
                     const char *name, struct atr_error *err)
{
    if (atr_json_is(v, t))
        return 0;
    return atr_error_set(err, "%s: expected %s, got %s", name, what,
                         atr_json_type_name(v->type));
}

/* A boolean member, absent or null = default. */
static int get_bool(const struct atr_json *obj, const char *key, bool dflt, bool *out,
                    struct atr_error *err)
{
    const struct atr_json *v = atr_json_get(obj, key);
    *out = dflt;
    if (!v || v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_TRUE && v->type != ATR_JSON_FALSE)
        return atr_error_set(err, "%s: expected a boolean, got %s", key,
                             atr_json_type_name(v->type));
    *out = v->type == ATR_JSON_TRUE;
    return 0;
}

/* An integer member in [min, max]; absent or null leaves *out unchanged. */
static int get_int(const struct atr_json *obj, const char *key, int64_t min, int64_t max,
                   int64_t *out, struct atr_error *err)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!v || v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_NUMBER || !v->is_int)
        return atr_error_set(err, "%s: expected an integer, got %s", key,
                             v->type == ATR_JSON_NUMBER ? "a fraction"
                                                        : atr_json_type_name(v->type));
    if (v->i < min || v->i > max)
        return atr_error_set(err, "%s: must be in %lld..%lld, got %lld", key, (long long)min,
                             (long long)max, (long long)v->i);
    *out = v->i;
    return 0;
}

static void hash_text(struct atr_serve_request *out, const char *text, size_t len)
{
    struct atr_blockhash h;
    atr_blockhash_init(&h, ATR_SERVE_BLOCK_SIZE);
    atr_blockhash_feed(&h, text, len);
    out->prompt_tokens = atr_tokens_estimate(text, len);
    out->hash_ids = h.ids;              /* ownership moves to out */
    out->n_hash_ids = h.n_ids;
    h.ids = NULL;
    atr_blockhash_release(&h);
}

/* Token-id prompts: ids chained in blocks of 16, like the text hasher. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int hash_token_ids(struct atr_serve_request *out, const struct atr_json *arr,
                          struct atr_error *err)
{
    size_t n_blocks = arr->u.kids.count / ATR_SERVE_BLOCK_SIZE;
    out->prompt_tokens = arr->u.kids.count;
    out->hash_ids = n_blocks ? xreallocarray(NULL, n_blocks, sizeof *out->hash_ids) : NULL;
    uint64_t chain = 0, h = 0;
    size_t i = 0;
    for (const struct atr_json *k = arr->u.kids.first; k; k = k->next, i++) {
        if (k->type != ATR_JSON_NUMBER || !k->is_int || k->i < 0) {
            free(out->hash_ids);
            out->hash_ids = NULL;
            return atr_error_set(err, "prompt[%zu]: expected a token id (integer >= 0)", i);
        }
        h = mix64(h ^ (uint64_t)k->i);
        if ((i + 1) % ATR_SERVE_BLOCK_SIZE == 0) {
            chain = mix64(chain ^ h);
            out->hash_ids[out->n_hash_ids++] = chain & ATR_HASH_ID_MASK;
            h = 0;
        }
    }
    return 0;
}

static int parse_prompt(const struct atr_json *root, struct atr_serve_request *out,
                        struct atr_error *err)
{
    static const char what[] = "a string, an array of one string or an array of token ids";
    const struct atr_json *p = atr_json_get(root, "prompt");
    if (!p)
        return atr_error_set(err, "prompt: required (%s)", what);
    if (p->type == ATR_JSON_ARRAY && p->u.kids.count == 1 &&
        p->u.kids.first->type == ATR_JSON_STRING)
        p = p->u.kids.first;
    if (p->type == ATR_JSON_STRING) {
        hash_text(out, p->u.str.s, p->u.str.len);
    } else if (p->type == ATR_JSON_ARRAY) {
        if (p->u.kids.count && p->u.kids.first->type == ATR_JSON_STRING)
            return atr_error_set(err, "prompt: only one prompt per request is supported");
        if (hash_token_ids(out, p, err) < 0)
            return -1;
    } else {
        return atr_error_set(err, "prompt: expected %s, got %s", what,
                             atr_json_type_name(p->type));
    }
    if (out->prompt_tokens == 0) {
        free(out->hash_ids);
        out->hash_ids = NULL;
        out->n_hash_ids = 0;
        return atr_error_set(err, "prompt: must not be empty");
    }
    return 0;
}

/* Appends a message's content: a string, null, or an array of text parts. */
static int render_content(struct atr_buf *b, const struct atr_json *c, size_t i,
                          struct atr_error *err)
{
    if (!c || c->type == ATR_JSON_NULL)
        return 0;
    if (c->type == ATR_JSON_STRING)
        return atr_buf_append(b, c->u.str.s, c->u.str.len) < 0
            ? atr_error_set(err, "messages: rendered prompt too large") : 0;
    if (c->type != ATR_JSON_ARRAY)
        return atr_error_set(err, "messages[%zu].content: expected a string or an array of "
                             "content parts, got %s", i, atr_json_type_name(c->type));
    size_t j = 0;
    for (const struct atr_json *part = c->u.kids.first; part; part = part->next, j++) {
        size_t tlen;
        const char *type = atr_json_get_str(part, "type", NULL);
        const char *text = atr_json_get_str(part, "text", &tlen);
        if (!atr_json_is(part, ATR_JSON_OBJECT) || !type || strcmp(type, "text") != 0 || !text)
            return atr_error_set(err, "messages[%zu].content[%zu]: expected "
                                 "{\"type\": \"text\", \"text\": string}", i, j);
        if (atr_buf_append(b, text, tlen) < 0)
            return atr_error_set(err, "messages: rendered prompt too large");
    }
    return 0;
}

static int render_message(struct atr_buf *b, const struct atr_json *m, size_t i,
                          struct atr_error *err)
{
    if (!atr_json_is(m, ATR_JSON_OBJECT))
        return atr_error_set(err, "messages[%zu]: expected an object, got %s", i,
                             atr_json_type_name(m->type));
    size_t rlen;
    const char *role = atr_json_get_str(m, "role", &rlen);
    if (!role)
        return atr_error_set(err, "messages[%zu].role: expected a string", i);
    if (atr_buf_puts(b, "<|") < 0 || atr_buf_append(b, role, rlen) < 0 ||
        atr_buf_puts(b, "|>\n") < 0)
        return atr_error_set(err, "messages: rendered prompt too large");
    if (render_content(b, atr_json_get(m, "content"), i, err) < 0)
        return -1;
    return atr_buf_putc(b, '\n') < 0 ? atr_error_set(err, "messages: rendered prompt too large")
                                     : 0;
}

static int parse_messages(const struct atr_json *root, struct atr_serve_request *out,
                          struct atr_error *err)
{
    const struct atr_json *msgs = atr_json_get(root, "messages");
    if (!atr_json_is(msgs, ATR_JSON_ARRAY))
        return atr_error_set(err, "messages: expected an array, got %s",
                             msgs ? atr_json_type_name(msgs->type) : "nothing");
    if (msgs->u.kids.count == 0)
        return atr_error_set(err, "messages: must not be empty");
    struct atr_buf b = ATR_BUF_INIT;
    b.max = RENDER_MAX;
    size_t i = 0;
    int rc = 0;
    for (const struct atr_json *m = msgs->u.kids.first; m && rc == 0; m = m->next, i++)
        rc = render_message(&b, m, i, err);
    if (rc == 0)
        hash_text(out, b.data, b.len);
    atr_buf_release(&b);
    return rc;
}

static int parse_options(enum atr_serve_api api, const struct atr_json *root,
                         struct atr_serve_request *out, struct atr_error *err)
{
    const struct atr_json *v = atr_json_get(root, "model");
    if (v && v->type != ATR_JSON_NULL) {
        if (want_type(v, ATR_JSON_STRING, "a string", "model", err) < 0)
            return -1;
        out->model = v->u.str.s;
    }
    v = atr_json_get(root, "user");
    if (v && v->type != ATR_JSON_NULL) {
        if (want_type(v, ATR_JSON_STRING, "a string", "user", err) < 0)
            return -1;
        out->session_hint = v->u.str.len > 0;
    }
    if (get_bool(root, "stream", false, &out->stream, err) < 0)
        return -1;
    v = atr_json_get(root, "stream_options");
    if (v && v->type != ATR_JSON_NULL) {
        if (want_type(v, ATR_JSON_OBJECT, "an object", "stream_options", err) < 0 ||
            get_bool(v, "include_usage", false, &out->include_usage, err) < 0)
            return -1;
    }
    int64_t n = 1, ignored = 0;
    bool ignore_eos;
    if (get_int(root, "max_tokens", 1, INT32_MAX, &out->max_tokens, err) < 0 ||
        (api == ATR_SERVE_CHAT &&
         get_int(root, "max_completion_tokens", 1, INT32_MAX, &out->max_tokens, err) < 0) ||
        get_int(root, "min_tokens", 0, INT32_MAX, &ignored, err) < 0 ||
        get_bool(root, "ignore_eos", false, &ignore_eos, err) < 0 ||
        get_int(root, "n", 1, INT32_MAX, &n, err) < 0)
        return -1;
    if (n != 1)
        return atr_error_set(err, "n: only n=1 is supported, got %lld", (long long)n);
    return 0;
}

int atr_serve_parse_request(enum atr_serve_api api, const char *body, size_t len,
                            struct atr_arena *arena, struct atr_serve_request *out,
                            struct atr_error *err)
{
    struct atr_json *root;
    struct atr_json_err jerr;
    memset(out, 0, sizeof *out);
    out->max_tokens = -1;
    struct atr_json_opts opts = { .max_depth = 64 };
    if (atr_json_parse(arena, body, len, &opts, &root, &jerr) < 0)
        return atr_error_set(err, "malformed JSON at line %u column %u: %s", jerr.line,
                             jerr.col, jerr.msg);
    if (root->type != ATR_JSON_OBJECT)
        return atr_error_set(err, "request body: expected a JSON object, got %s",
                             atr_json_type_name(root->type));
    if (parse_options(api, root, out, err) < 0)
        return -1;
    return api == ATR_SERVE_CHAT ? parse_messages(root, out, err) : parse_prompt(root, out, err);
}
