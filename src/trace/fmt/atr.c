/* atr.c - reader of atr-trace v1 NDJSON itself, with the format's schema
 * and invariants (docs/trace-format.md) checked at file:line:col. */
#include <stdio.h>
#include <string.h>

#include "trace/convo.h"
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

/* "parents": indices of earlier steps, each once. A parent that is not
 * earlier (a cycle, a forward reference) is the error: steps are in start
 * order, so what a step waits for has started before it. */
static int read_parents(struct atr_reader *r, struct atr_trace *t, struct atr_step *s,
                        struct atr_json *v)
{
    if (v->type != ATR_JSON_ARRAY)
        return atr_reader_fail_at(r, v, "expected \"parents\" to be an array of step indices");
    size_t n = v->u.kids.count;
    s->parents = atr_arena_alloc(&t->arena, (n ? n : 1) * sizeof *s->parents);
    s->n_parents = 0;
    for (struct atr_json *e = v->u.kids.first; e; e = e->next) {
        if (e->type != ATR_JSON_NUMBER || !e->is_int || e->i < 0 || e->i >= (int64_t)s->i)
            return s->i ? atr_reader_fail_at(r, e, "expected a parent of step %u to be an "
                                             "earlier step (0..%u)", s->i, s->i - 1)
                        : atr_reader_fail_at(r, e, "step 0 has no earlier step to wait for "
                                             "(a root has \"parents\":[])");
        for (uint32_t k = 0; k < s->n_parents; k++)
            if (s->parents[k] == (uint32_t)e->i)
                return atr_reader_fail_at(r, e, "parent %lld of step %u repeats",
                                          (long long)e->i, s->i);
        s->parents[s->n_parents++] = (uint32_t)e->i;
    }
    return 0;
}

/* The members a step knows, listed by first letter: a member's name is
 * compared only with those that share it (a compare with each of two dozen
 * names was a seventh of reading a trace, issue 16). */
enum member_kind { M_INT, M_STR, M_EXIT, M_I, M_IDS, M_PREFIX, M_MESSAGES, M_OUTPUT, M_KIND,
                   M_PARENTS, M_AGENT };
struct member {
    const char *key;
    size_t len;
    enum member_kind kind;
    size_t off;  /* M_INT, M_STR: the field of struct atr_step */
};
#define INT(name) {#name, sizeof #name - 1, M_INT, offsetof(struct atr_step, name)}
#define STR(name) {#name, sizeof #name - 1, M_STR, offsetof(struct atr_step, name)}
#define OTHER(name, kind) {name, sizeof name - 1, kind, 0}
static const struct member m_a[] = {STR(action), OTHER("agent", M_AGENT)};
static const struct member m_b[] = {INT(bytes)};
static const struct member m_c[] = {INT(cached_tokens), STR(command), STR(command_head), STR(cwd)};
static const struct member m_d[] = {INT(dur_ms)};
static const struct member m_e[] = {OTHER("exit_code", M_EXIT), INT(estimated_input_tokens),
                                    INT(estimated_output_tokens)};
static const struct member m_f[] = {STR(file_op)};
static const struct member m_h[] = {OTHER("hash_ids", M_IDS)};
static const struct member m_i[] = {OTHER("i", M_I), INT(input_tokens)};
static const struct member m_k[] = {OTHER("kind", M_KIND)};
static const struct member m_m[] = {INT(max_tokens), OTHER("messages", M_MESSAGES)};
static const struct member m_o[] = {INT(output_tokens), OTHER("output", M_OUTPUT), INT(old_bytes),
                                    STR(output_tokens_from)};
static const struct member m_p[] = {STR(path), OTHER("prefix", M_PREFIX), OTHER("parents", M_PARENTS)};
static const struct member m_r[] = {INT(recorded_input_tokens), INT(recorded_output_tokens)};
static const struct member m_s[] = {STR(selector)};
static const struct member m_t[] = {INT(t_ms), INT(timeout_ms), STR(tool), STR(tokens_from)};
static const struct member m_u[] = {STR(url)};
#undef INT
#undef STR
#undef OTHER
#define LETTER(ch, c) [ch - 'a'] = {m_##c, sizeof m_##c / sizeof *m_##c}
static const struct {
    const struct member *v;
    size_t n;
} members[26] = {
    LETTER('a', a), LETTER('b', b), LETTER('c', c), LETTER('d', d), LETTER('e', e),
    LETTER('f', f), LETTER('h', h),
    LETTER('i', i), LETTER('k', k), LETTER('m', m), LETTER('o', o), LETTER('p', p),
    LETTER('r', r), LETTER('s', s), LETTER('t', t), LETTER('u', u),
};
#undef LETTER

/* The entry for member m's name, or NULL when the step does not know it. */
static const struct member *find_member(const struct atr_json *m)
{
    unsigned c = m->key ? (unsigned char)m->key[0] - 'a' : 26;
    if (c >= 26)
        return NULL;
    for (size_t k = 0; k < members[c].n; k++) {
        const struct member *e = &members[c].v[k];
        if (e->len == m->key_len && memcmp(e->key, m->key, e->len) == 0)
            return e;
    }
    return NULL;
}

/* Stores member m, named as e says, in step s; 0 or -1 after fail. */
static int read_member(struct atr_reader *r, struct atr_trace *t, struct atr_step *s,
                       const struct member *e, struct atr_json *m, struct atr_json **prefix)
{
    switch (e->kind) {
    case M_INT:
        return get_uint(r, m, e->key, (int64_t *)((char *)s + e->off));
    case M_STR:
        return get_str(r, m, e->key, (const char **)((char *)s + e->off));
    case M_EXIT:
        if (m->type != ATR_JSON_NULL && (m->type != ATR_JSON_NUMBER || !m->is_int))
            return atr_reader_fail_at(r, m, "expected \"exit_code\" to be an integer");
        if (m->type == ATR_JSON_NUMBER)
            s->exit_code = m->i;
        return 0;
    case M_I:
        if (m->type != ATR_JSON_NUMBER || !m->is_int || m->i != (int64_t)s->i)
            return atr_reader_fail_at(r, m, "expected \"i\" to be %u (steps in order)", s->i);
        return 0;
    case M_IDS:
        return read_ids(r, t, m, &s->hash_ids, &s->n_hash_ids);
    case M_PREFIX:
        *prefix = m;
        return 0;
    case M_MESSAGES:
        s->messages = m;
        return 0;
    case M_OUTPUT:
        s->output = m;
        return 0;
    case M_KIND:
        return 0;  /* read first, by read_kind */
    case M_PARENTS:
        return read_parents(r, t, s, m);
    case M_AGENT:
        if (m->type != ATR_JSON_STRING || !m->u.str.len)
            return atr_reader_fail_at(r, m, "expected \"agent\" to be a non-empty string");
        s->agent = m->u.str.s;
        return 0;
    }
    return 0;
}

/* tokens_from and output_tokens_from name one of the three origins; *v
 * becomes the static name, so copies of the step outlive the trace. */
static int check_origin(struct atr_reader *r, struct atr_json *node, const char *key,
                        const char **v)
{
    static const char *const names[] = {ATR_TOKENS_RECORDED, ATR_TOKENS_SCALED,
                                        ATR_TOKENS_ESTIMATED};
    if (!*v)
        return 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(*v, names[k]) == 0) {
            *v = names[k];
            return 0;
        }
    return atr_reader_fail_at(r, atr_json_get(node, key), "expected \"%s\" to be \"recorded\", "
                              "\"scaled\" or \"estimated\"", key);
}

static int check_step(struct atr_reader *r, struct atr_trace *t, struct atr_step *s,
                      struct atr_json *node)
{
    if (check_origin(r, node, "tokens_from", &s->tokens_from) < 0 ||
        check_origin(r, node, "output_tokens_from", &s->output_tokens_from) < 0)
        return -1;
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
    for (struct atr_json *m = node->u.kids.first, *next; m; m = next) {
        next = m->next;  /* keep_extra relinks m */
        const struct member *e = find_member(m);
        if (!e)
            keep_extra(t, &s->extra, m);
        else if (read_member(r, t, s, e, m, &prefix) < 0)
            return -1;
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
        if (strcmp(m->u.str.s, ATR_TRACE_FORMAT) != 0 &&
            strcmp(m->u.str.s, ATR_TRACE_FORMAT_DAG) != 0)
            return atr_reader_fail_at(r, m, "unsupported format version \"%s\" (this atr reads "
                                      ATR_TRACE_FORMAT " and " ATR_TRACE_FORMAT_DAG ")",
                                      m->u.str.s);
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

/* Journal lines of atr proxy before tokens_from carried atr's estimate as
 * input_tokens and the upstream's usage.prompt_tokens, where it sent one,
 * beside it as recorded_input_tokens (their output_tokens was usage's
 * already). Such a line reads as the proxy writes it now: the recorded
 * count with the estimate beside it and ids fitted by the one-request rule
 * (proxy/journal.h), else the estimate marked so; every consumer then
 * sends and counts what the upstream counted. */
static void read_old_journal_line(struct atr_trace *t)
{
    struct atr_step *s = &t->steps[0];
    if (t->n_steps != 1 || strcmp(t->source, "atr-proxy") != 0 || s->kind != ATR_STEP_LLM ||
        s->tokens_from || s->input_tokens == ATR_UNSET)
        return;
    s->tokens_from = ATR_TOKENS_ESTIMATED;
    if (s->recorded_input_tokens < 0 || s->recorded_input_tokens > ATR_FIT_MAX_TOKENS)
        return;    /* ATR_UNSET is negative */
    atr_step_set_counts(s, s->recorded_input_tokens, -1, ATR_TOKENS_RECORDED);
    s->output_tokens_from = NULL;
    s->recorded_input_tokens = ATR_UNSET;
    uint32_t want = atr_fit_ids_count((uint64_t)s->input_tokens, t->block_size);
    uint64_t *ids = atr_arena_alloc(&t->arena, (want ? want : 1) * sizeof *ids);
    atr_fit_ids_fill(ids, want, s->hash_ids, s->n_hash_ids, t->trace_id, 0);
    s->hash_ids = ids;
    s->n_hash_ids = want;
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
    if (t->n_steps)
        read_old_journal_line(t);
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
