/* atr.c - reader of atr-trace v1 NDJSON itself, with the format's schema
 * and invariants (docs/trace-format.md) checked at file:line:col. */
#include <stdio.h>
#include <string.h>

#include "trace/convo.h"
#include "trace/fmt/atr-impl.h"
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

int atr_prefix_check(const struct atr_trace *t, const struct atr_step *s, int64_t k, int64_t n)
{
    if (k < 0 || (size_t)k >= s->i || t->steps[k].kind != ATR_STEP_LLM)
        return 1;
    return n < 0 || (uint64_t)n > t->steps[k].n_hash_ids ? 2 : 0;
}

/* The sim's workload reads the reference (compact) and needs no copy. */
void atr_prefix_apply(struct atr_trace *t, struct atr_step *s, int64_t k, int64_t n,
                      bool compact)
{
    if (compact) {
        s->prefix_step = (uint32_t)k;
        s->prefix_blocks = (uint32_t)n;
        s->n_hash_ids += (uint32_t)n;
        return;
    }
    const struct atr_step *ref = &t->steps[k];
    uint64_t *all = atr_arena_alloc(&t->arena, ((size_t)n + s->n_hash_ids + 1) * sizeof *all);
    if (n)                       /* either list may be absent (NULL) */
        memcpy(all, ref->hash_ids, (size_t)n * sizeof *all);
    if (s->n_hash_ids)
        memcpy(all + n, s->hash_ids, s->n_hash_ids * sizeof *all);
    s->hash_ids = all;
    s->n_hash_ids += (uint32_t)n;
}

/* "prefix":{"step":k,"blocks":n} + own ids -> the full list, or with
 * compact_ids the reference to it. */
static int expand_prefix(struct atr_reader *r, struct atr_trace *t, struct atr_step *s,
                         struct atr_json *prefix)
{
    int64_t k = -1, n = -1;
    if (prefix->type != ATR_JSON_OBJECT ||
        atr_reader_opt_i64(r, prefix, "step", &k) < 0 ||
        atr_reader_opt_i64(r, prefix, "blocks", &n) < 0)
        return atr_reader_fail_at(r, prefix, "expected \"prefix\" to be {\"step\":K,\"blocks\":N}");
    switch (atr_prefix_check(t, s, k, n)) {
    case 1:
        return atr_reader_fail_at(r, prefix, "expected \"prefix\".\"step\" to name an earlier llm step");
    case 2:
        return atr_reader_fail_at(r, prefix, "prefix of %lld blocks, but step %lld has %u",
                                  (long long)n, (long long)k, t->steps[k].n_hash_ids);
    }
    atr_prefix_apply(t, s, k, n, r->opts.compact_ids);
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
        int bad = e->type != ATR_JSON_NUMBER || !e->is_int ? 1 : atr_parent_check(s, e->i);
        if (bad == 1)
            return s->i ? atr_reader_fail_at(r, e, "expected a parent of step %u to be an "
                                             "earlier step (0..%u)", s->i, s->i - 1)
                        : atr_reader_fail_at(r, e, "step 0 has no earlier step to wait for "
                                             "(a root has \"parents\":[])");
        if (bad == 2)
            return atr_reader_fail_at(r, e, "parent %lld of step %u repeats",
                                      (long long)e->i, s->i);
        s->parents[s->n_parents++] = (uint32_t)e->i;
    }
    return 0;
}

int atr_parent_check(const struct atr_step *s, int64_t v)
{
    if (v < 0 || v >= (int64_t)s->i)
        return 1;
    for (uint32_t k = 0; k < s->n_parents; k++)
        if (s->parents[k] == (uint32_t)v)
            return 2;
    return 0;
}

/* The members a step knows, listed by first letter: a member's name is
 * compared only with those that share it (a compare with each of two dozen
 * names was a seventh of reading a trace, issue 16). Each has its own bit. */
#define INT(name, b) {#name, sizeof #name - 1, M_INT, offsetof(struct atr_step, name), b}
#define STR(name, b) {#name, sizeof #name - 1, M_STR, offsetof(struct atr_step, name), b}
#define OTHER(name, kind, b) {name, sizeof name - 1, kind, 0, b}
static const struct atr_member m_a[] = {STR(action, 0), OTHER("agent", M_AGENT, 1)};
static const struct atr_member m_b[] = {INT(bytes, 2)};
static const struct atr_member m_c[] = {INT(cached_tokens, 3), STR(command, 4),
                                        STR(command_head, 5), STR(cwd, 6)};
static const struct atr_member m_d[] = {INT(dur_ms, 7)};
static const struct atr_member m_e[] = {OTHER("exit_code", M_EXIT, 8),
                                        INT(estimated_input_tokens, 9),
                                        INT(estimated_output_tokens, 10)};
static const struct atr_member m_f[] = {STR(file_op, 11)};
static const struct atr_member m_h[] = {OTHER("hash_ids", M_IDS, 12)};
static const struct atr_member m_i[] = {OTHER("i", M_I, 13), INT(input_tokens, 14)};
static const struct atr_member m_k[] = {OTHER("kind", M_KIND, 15)};
static const struct atr_member m_m[] = {INT(max_tokens, 16), OTHER("messages", M_MESSAGES, 17)};
static const struct atr_member m_o[] = {INT(output_tokens, 18), OTHER("output", M_OUTPUT, 19),
                                        INT(old_bytes, 20), STR(output_tokens_from, 21)};
static const struct atr_member m_p[] = {STR(path, 22), OTHER("prefix", M_PREFIX, 23),
                                        OTHER("parents", M_PARENTS, 24)};
static const struct atr_member m_r[] = {INT(recorded_input_tokens, 25),
                                        INT(recorded_output_tokens, 26)};
static const struct atr_member m_s[] = {STR(selector, 27)};
static const struct atr_member m_t[] = {INT(t_ms, 28), INT(timeout_ms, 29), STR(tool, 30),
                                        STR(tokens_from, 31)};
static const struct atr_member m_u[] = {STR(url, 32)};
#undef INT
#undef STR
#undef OTHER
#define LETTER(ch, c) [ch - 'a'] = {m_##c, sizeof m_##c / sizeof *m_##c}
static const struct {
    const struct atr_member *v;
    size_t n;
} members[26] = {
    LETTER('a', a), LETTER('b', b), LETTER('c', c), LETTER('d', d), LETTER('e', e),
    LETTER('f', f), LETTER('h', h),
    LETTER('i', i), LETTER('k', k), LETTER('m', m), LETTER('o', o), LETTER('p', p),
    LETTER('r', r), LETTER('s', s), LETTER('t', t), LETTER('u', u),
};
#undef LETTER

const struct atr_member *atr_member_find(const char *key, size_t len)
{
    unsigned c = key && len ? (unsigned char)key[0] - 'a' : 26;
    if (c >= 26)
        return NULL;
    for (size_t k = 0; k < members[c].n; k++) {
        const struct atr_member *e = &members[c].v[k];
        if (e->len == len && memcmp(e->key, key, len) == 0)
            return e;
    }
    return NULL;
}

/* Stores member m, named as e says, in step s; 0 or -1 after fail. */
static int read_member(struct atr_reader *r, struct atr_trace *t, struct atr_step *s,
                       const struct atr_member *e, struct atr_json *m, struct atr_json **prefix)
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
static bool origin_name(const char **v)
{
    static const char *const names[] = {ATR_TOKENS_RECORDED, ATR_TOKENS_SCALED,
                                        ATR_TOKENS_ESTIMATED};
    if (!*v)
        return true;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(*v, names[k]) == 0) {
            *v = names[k];
            return true;
        }
    return false;
}

enum atr_step_check atr_step_check(const struct atr_trace *t, struct atr_step *s,
                                   size_t *earlier)
{
    if (!origin_name(&s->tokens_from))
        return ATR_CHECK_TOKENS_FROM;
    if (!origin_name(&s->output_tokens_from))
        return ATR_CHECK_OUTPUT_FROM;
    if (s->kind == ATR_STEP_LLM && s->n_hash_ids && s->input_tokens != ATR_UNSET &&
        s->n_hash_ids != ((uint64_t)s->input_tokens + t->block_size - 1) / t->block_size)
        return ATR_CHECK_IDS;
    if (s->kind == ATR_STEP_TOOL && !s->tool)
        return ATR_CHECK_TOOL;
    if (s->i > 0 && s->t_ms != ATR_UNSET) {
        for (size_t k = s->i; k-- > 0;)
            if (t->steps[k].t_ms != ATR_UNSET) {
                *earlier = k;
                return t->steps[k].t_ms > s->t_ms ? ATR_CHECK_ORDER : ATR_CHECK_OK;
            }
    }
    return ATR_CHECK_OK;
}

static int check_origin(struct atr_reader *r, struct atr_json *node, const char *key)
{
    return atr_reader_fail_at(r, atr_json_get(node, key), "expected \"%s\" to be \"recorded\", "
                              "\"scaled\" or \"estimated\"", key);
}

static int check_step(struct atr_reader *r, struct atr_trace *t, struct atr_step *s,
                      struct atr_json *node)
{
    size_t k = 0;
    switch (atr_step_check(t, s, &k)) {
    case ATR_CHECK_OK:
        return 0;
    case ATR_CHECK_TOKENS_FROM:
        return check_origin(r, node, "tokens_from");
    case ATR_CHECK_OUTPUT_FROM:
        return check_origin(r, node, "output_tokens_from");
    case ATR_CHECK_IDS:
        return atr_reader_fail_at(r, node, "expected %llu hash ids for %lld input tokens "
                                  "in blocks of %u, found %u",
                                  ((unsigned long long)s->input_tokens + t->block_size - 1) /
                                  t->block_size, (long long)s->input_tokens, t->block_size,
                                  s->n_hash_ids);
    case ATR_CHECK_TOOL:
        return atr_reader_fail_at(r, node, "expected \"tool\" in tool step");
    case ATR_CHECK_ORDER:
        return atr_reader_fail_at(r, node, "step %u starts at %lld ms, before "
                                  "step %zu (%lld ms): steps must be in time order",
                                  s->i, (long long)s->t_ms, k, (long long)t->steps[k].t_ms);
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
        const struct atr_member *e = atr_member_find(m->key, m->key_len);
        if (!e)
            keep_extra(t, &s->extra, m);
        else if (read_member(r, t, s, e, m, &prefix) < 0)
            return -1;
    }
    if (prefix && expand_prefix(r, t, s, prefix) < 0)
        return -1;
    return check_step(r, t, s, node);
}

bool atr_format_known(const char *s, size_t len)
{
    return (len == sizeof ATR_TRACE_FORMAT - 1 && memcmp(s, ATR_TRACE_FORMAT, len) == 0) ||
           (len == sizeof ATR_TRACE_FORMAT_DAG - 1 && memcmp(s, ATR_TRACE_FORMAT_DAG, len) == 0);
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
        if (get_uint(r, m, "block_size", &bs) < 0 || bs < 1 || bs > ATR_BLOCK_SIZE_MAX)
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
void atr_old_journal_line(struct atr_trace *t)
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
        atr_old_journal_line(t);
    return 1;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    struct atr_json *doc;
    /* Hash ids parse straight into one array that read_ids borrows: a node
     * per id was most of the cost of reading a trace (issue 16). */
    r->pack_key = "hash_ids";
    r->pack_max = ATR_HASH_ID_MASK;
    if (!r->opts.lean || r->opts.keep_content) {
        int rc = atr_reader_json_line(r, &t->arena, &doc);   /* blank lines are skipped */
        return rc <= 0 ? rc : read_trace(r, t, doc);
    }
    /* A caller that reads no JSON node: the line without a tree when the
     * lean reader can vouch for it, else the tree as above, which gives
     * the errors. */
    const char *line;
    size_t len;
    int rc = atr_reader_getline_nonblank(r, &line, &len);
    struct atr_lean_opts lo = {r->opts.max_line / ATR_LINE_BYTES_PER_VALUE + ATR_LINE_VALUES_MIN,
                               r->opts.max_depth, r->opts.compact_ids, r->opts.block_size};
    if (!r->state)
        r->state = atr_lean_memo_new();   /* NULL: no replays, still lean */
    if (rc <= 0 || atr_lean_line(t, line, len, &lo, r->state) == 1)
        return rc;
    atr_reader_trace_reset(r, t);
    rc = atr_reader_parse_line(r, &t->arena, line, len, &doc);
    return rc <= 0 ? rc : read_trace(r, t, doc);
}

static void free_state(void *state)
{
    atr_lean_memo_free(state);
}

const struct atr_format atr_format_atr = {
    "atr", "atr-trace v1 NDJSON (this project's own format)", sniff, next, free_state,
};
