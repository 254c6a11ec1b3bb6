/* atr.c - reader of atr-trace v1 NDJSON itself, with the format's schema
 * and invariants (docs/trace-format.md) checked at file:line:col. */
#include <stdio.h>
#include <string.h>

#include "trace/reader.h"
#include "trace/tokens.h"

static int sniff(const char *head, size_t len, const char *name)
{
    size_t i;
    if (atr_sniff_first(head, len, &i) != '{')
        return 0;
    const char *hit = memmem(head + i, len - i < 512 ? len - i : 512, "\"atr-trace/", 11);
    return hit ? 100 : 0;
}

/* Unknown members go to an "extra" object, in order. */
static void keep_extra(struct atr_trace *t, struct atr_json **extra, struct atr_json *m)
{
    if (!*extra)
        *extra = atr_json_new(&t->arena, ATR_JSON_OBJECT);
    atr_json_append(&t->arena, *extra, m->key, m);
}

static int get_uint(struct atr_reader *r, struct atr_json *v, const char *what, int64_t *out)
{
    if (v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_NUMBER || !v->is_int || v->i < 0)
        return atr_reader_fail_at(r, v, "expected \"%s\" to be a non-negative integer", what);
    *out = v->i;
    return 0;
}

static int get_str(struct atr_reader *r, struct atr_json *v, const char *what, const char **out)
{
    if (v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_STRING)
        return atr_reader_fail_at(r, v, "expected \"%s\" to be a string, found %s", what,
                                  atr_json_type_name(v->type));
    *out = v->u.str.s;
    return 0;
}

static int read_ids(struct atr_reader *r, struct atr_trace *t, struct atr_json *v,
                    uint64_t **ids, uint32_t *n)
{
    if (v->type != ATR_JSON_ARRAY)
        return atr_reader_fail_at(r, v, "expected \"hash_ids\" to be an array of integers");
    if (v->packed) {  /* the parser checked every id against pack_max (next) */
        *ids = v->ints;
        *n = (uint32_t)v->u.kids.count;
        return 0;
    }
    *ids = atr_arena_alloc(&t->arena, (v->u.kids.count ? v->u.kids.count : 1) * sizeof **ids);
    *n = 0;
    for (struct atr_json *e = v->u.kids.first; e; e = e->next) {
        if (e->type != ATR_JSON_NUMBER || !e->is_int || e->i < 0 ||
            (uint64_t)e->i > ATR_HASH_ID_MASK)
            return atr_reader_fail_at(r, e, "expected a hash id (integer 0..2^53-1)");
        (*ids)[(*n)++] = (uint64_t)e->i;
    }
    return 0;
}

/* "prefix":{"step":k,"blocks":n} + own ids -> the full list, or with
 * compact_ids the reference to it (the sim's workload needs no copy). */
static int expand_prefix(struct atr_reader *r, struct atr_trace *t, struct atr_step *s,
                         struct atr_json *prefix)
{
    int64_t k = -1, n = -1;
    if (prefix->type != ATR_JSON_OBJECT ||
        atr_reader_opt_i64(r, prefix, "step", &k) < 0 ||
        atr_reader_opt_i64(r, prefix, "blocks", &n) < 0)
        return atr_reader_fail_at(r, prefix, "expected \"prefix\" to be {\"step\":K,\"blocks\":N}");
    if (k < 0 || (size_t)k >= s->i || t->steps[k].kind != ATR_STEP_LLM)
        return atr_reader_fail_at(r, prefix, "expected \"prefix\".\"step\" to name an earlier llm step");
    const struct atr_step *ref = &t->steps[k];
    if (n < 0 || (uint64_t)n > ref->n_hash_ids)
        return atr_reader_fail_at(r, prefix, "prefix of %lld blocks, but step %lld has %u",
                                  (long long)n, (long long)k, ref->n_hash_ids);
    if (r->opts.compact_ids) {
        s->prefix_step = (uint32_t)k;
        s->prefix_blocks = (uint32_t)n;
        s->n_hash_ids += (uint32_t)n;
        return 0;
    }
    uint64_t *all = atr_arena_alloc(&t->arena, ((size_t)n + s->n_hash_ids + 1) * sizeof *all);
    memcpy(all, ref->hash_ids, (size_t)n * sizeof *all);
    memcpy(all + n, s->hash_ids, s->n_hash_ids * sizeof *all);
    s->hash_ids = all;
    s->n_hash_ids += (uint32_t)n;
    return 0;
}

static int read_kind(struct atr_reader *r, struct atr_json *step, enum atr_step_kind *kind)
{
    struct atr_json *v = atr_json_get(step, "kind");
    if (!v)
        return atr_reader_fail_at(r, step, "expected \"kind\" (\"llm\" or \"tool\") in step");
    if (v->type == ATR_JSON_STRING && strcmp(v->u.str.s, "llm") == 0)
        *kind = ATR_STEP_LLM;
    else if (v->type == ATR_JSON_STRING && strcmp(v->u.str.s, "tool") == 0)
        *kind = ATR_STEP_TOOL;
    else
        return atr_reader_fail_at(r, v, "expected \"kind\" to be \"llm\" or \"tool\"");
    return 0;
}

/* Names with their lengths: a member's key is compared with a dozen of
 * them, and a strlen each was a tenth of reading a trace (issue 16). */
struct int_field {
    const char *key;
    size_t len, off;
};
#define F(name) {#name, sizeof #name - 1, offsetof(struct atr_step, name)}
static const struct int_field step_ints[] = {
    F(t_ms), F(dur_ms), F(input_tokens), F(output_tokens), F(cached_tokens),
    F(recorded_input_tokens), F(recorded_output_tokens), F(max_tokens), F(timeout_ms),
};
struct str_field {
    const char *key;
    size_t len, off;
};
static const struct str_field step_strs[] = {
    F(tool), F(command), F(command_head), F(action), F(path), F(selector), F(url), F(cwd),
};
#undef F

/* The first byte before memcmp: most members share a length with some
 * name, few its first letter (a memcmp call per name was 2 % of reading). */
static bool key_is(const struct atr_json *m, const char *key, size_t len)
{
    return m->key && m->key_len == len && m->key[0] == key[0] && memcmp(m->key, key, len) == 0;
}
#define KEY_IS(m, lit) key_is(m, lit, sizeof lit - 1)

/* Known scalar member: stores it and returns 1; unknown: 0; error: -1. */
static int read_known(struct atr_reader *r, struct atr_step *s, struct atr_json *m)
{
    for (size_t k = 0; k < sizeof step_ints / sizeof *step_ints; k++)
        if (key_is(m, step_ints[k].key, step_ints[k].len))
            return get_uint(r, m, step_ints[k].key,
                            (int64_t *)((char *)s + step_ints[k].off)) < 0 ? -1 : 1;
    for (size_t k = 0; k < sizeof step_strs / sizeof *step_strs; k++)
        if (key_is(m, step_strs[k].key, step_strs[k].len))
            return get_str(r, m, step_strs[k].key,
                           (const char **)((char *)s + step_strs[k].off)) < 0 ? -1 : 1;
    if (KEY_IS(m, "exit_code")) {
        if (m->type != ATR_JSON_NULL && (m->type != ATR_JSON_NUMBER || !m->is_int))
            return atr_reader_fail_at(r, m, "expected \"exit_code\" to be an integer");
        if (m->type == ATR_JSON_NUMBER)
            s->exit_code = m->i;
        return 1;
    }
    return 0;
}

static int check_step(struct atr_reader *r, struct atr_trace *t, struct atr_step *s,
                      struct atr_json *node)
{
    if (s->kind == ATR_STEP_LLM && s->n_hash_ids && s->input_tokens != ATR_UNSET) {
        uint64_t want = ((uint64_t)s->input_tokens + t->block_size - 1) / t->block_size;
        if (s->n_hash_ids != want)
            return atr_reader_fail_at(r, node, "expected %llu hash ids for %lld input tokens "
                                      "in blocks of %u, found %u", (unsigned long long)want,
                                      (long long)s->input_tokens, t->block_size, s->n_hash_ids);
    }
    if (s->kind == ATR_STEP_TOOL && !s->tool)
        return atr_reader_fail_at(r, node, "expected \"tool\" in tool step");
    if (s->i > 0 && s->t_ms != ATR_UNSET) {
        for (size_t k = s->i; k-- > 0;)
            if (t->steps[k].t_ms != ATR_UNSET) {
                if (t->steps[k].t_ms > s->t_ms)
                    return atr_reader_fail_at(r, node, "step %u starts at %lld ms, before "
                                              "step %zu (%lld ms): steps must be in time order",
                                              s->i, (long long)s->t_ms, k,
                                              (long long)t->steps[k].t_ms);
                break;
            }
    }
    return 0;
}

static int read_step(struct atr_reader *r, struct atr_trace *t, struct atr_json *node)
{
    if (node->type != ATR_JSON_OBJECT)
        return atr_reader_fail_at(r, node, "expected a step object, found %s",
                                  atr_json_type_name(node->type));
    enum atr_step_kind kind = ATR_STEP_LLM;
    if (read_kind(r, node, &kind) < 0)
        return -1;
    struct atr_step *s = atr_trace_add_step(t, kind);
    struct atr_json *prefix = NULL;
    struct atr_json *m = node->u.kids.first;
    while (m) {
        struct atr_json *next = m->next;
        int rc = read_known(r, s, m);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            if (KEY_IS(m, "i")) {
                if (m->type != ATR_JSON_NUMBER || !m->is_int || m->i != (int64_t)s->i)
                    return atr_reader_fail_at(r, m, "expected \"i\" to be %u (steps in order)", s->i);
            } else if (KEY_IS(m, "hash_ids")) {
                if (read_ids(r, t, m, &s->hash_ids, &s->n_hash_ids) < 0)
                    return -1;
            } else if (KEY_IS(m, "prefix")) {
                prefix = m;
            } else if (KEY_IS(m, "messages")) {
                s->messages = m;
            } else if (KEY_IS(m, "output")) {
                s->output = m;
            } else if (!KEY_IS(m, "kind")) {
                keep_extra(t, &s->extra, m);
            }
        }
        m = next;
    }
    if (prefix && expand_prefix(r, t, s, prefix) < 0)
        return -1;
    return check_step(r, t, s, node);
}

static int read_header(struct atr_reader *r, struct atr_trace *t, struct atr_json *m,
                       bool *is_known)
{
    *is_known = true;
    if (atr_json_key_is(m, "format")) {
        if (m->type != ATR_JSON_STRING || strncmp(m->u.str.s, "atr-trace/", 10) != 0)
            return atr_reader_fail_at(r, m, "expected \"format\" to be \"" ATR_TRACE_FORMAT "\"");
        if (strcmp(m->u.str.s, ATR_TRACE_FORMAT) != 0)
            return atr_reader_fail_at(r, m, "unsupported format version \"%s\" (this atr reads "
                                      ATR_TRACE_FORMAT ")", m->u.str.s);
    } else if (atr_json_key_is(m, "trace_id")) {
        return get_str(r, m, "trace_id", &t->trace_id);
    } else if (atr_json_key_is(m, "source")) {
        return get_str(r, m, "source", &t->source);
    } else if (atr_json_key_is(m, "start_ms")) {
        return get_uint(r, m, "start_ms", &t->start_ms);
    } else if (atr_json_key_is(m, "block_size")) {
        int64_t bs = 0;
        if (get_uint(r, m, "block_size", &bs) < 0 || bs < 1 || bs > 1 << 20)
            return atr_reader_fail_at(r, m, "expected \"block_size\" to be an integer 1..1048576");
        t->block_size = (uint32_t)bs;
    } else if (atr_json_key_is(m, "meta")) {
        if (m->type != ATR_JSON_OBJECT && m->type != ATR_JSON_NULL)
            return atr_reader_fail_at(r, m, "expected \"meta\" to be an object");
        t->meta = m->type == ATR_JSON_OBJECT ? m : NULL;
    } else {
        *is_known = false;
    }
    return 0;
}

static int read_trace(struct atr_reader *r, struct atr_trace *t, struct atr_json *doc)
{
    if (doc->type != ATR_JSON_OBJECT)
        return atr_reader_fail_at(r, doc, "expected a trace object, found %s",
                                  atr_json_type_name(doc->type));
    struct atr_json *steps = NULL, *format = atr_json_get(doc, "format");
    if (!format)
        return atr_reader_fail_at(r, doc, "expected \"format\":\"" ATR_TRACE_FORMAT "\"");
    t->source = NULL;
    /* Header first: block_size must be known before any step is checked. */
    for (struct atr_json *m = doc->u.kids.first, *next; m; m = next) {
        next = m->next;
        bool known;
        if (read_header(r, t, m, &known) < 0)
            return -1;
        if (atr_json_key_is(m, "steps"))
            steps = m;
        else if (!known)
            keep_extra(t, &t->extra, m);
    }
    if (!t->trace_id)
        return atr_reader_fail_at(r, doc, "expected \"trace_id\" (string)");
    if (!steps || steps->type != ATR_JSON_ARRAY)
        return atr_reader_fail_at(r, steps ? steps : doc, "expected \"steps\" array");
    for (struct atr_json *s = steps->u.kids.first; s; s = s->next)
        if (read_step(r, t, s) < 0)
            return -1;
    if (!t->source)
        t->source = "atr";
    return 1;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    struct atr_json *doc;
    /* Hash ids parse straight into one array that read_ids borrows: a node
     * per id was most of the cost of reading a trace (issue 16). */
    r->pack_key = "hash_ids";
    r->pack_max = ATR_HASH_ID_MASK;
    int rc = atr_reader_json_line(r, &t->arena, &doc);   /* blank lines are skipped */
    return rc <= 0 ? rc : read_trace(r, t, doc);
}

const struct atr_format atr_format_atr = {
    "atr", "atr-trace v1 NDJSON (this project's own format)", sniff, next, NULL,
};
