/* sessions.c - single-request traces folded into one trace per session
 * (see sessions.h). */
#include "trace/sessions.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "util/alloc.h"

/* What one request keeps of its trace, copied into the fold's arena. */
struct request {
    int64_t start_ms, turn;      /* turn -1: the line had none */
    size_t seq;                  /* order of addition, the last tie-break */
    struct atr_step step;        /* its llm step: hash ids and JSON in the fold's arena */
    const struct atr_json *meta; /* the line's meta */
};

struct session {
    const char *id;              /* meta.session, NUL-terminated copy */
    size_t id_len;
    uint32_t block_size;
    size_t first_seq;
    struct request *reqs;        /* malloc */
    size_t n, cap;
};

struct atr_sessions {
    struct atr_arena arena;
    struct session *v;           /* malloc, in order of first appearance */
    size_t n, cap;
    size_t *slots;               /* open addressing: index into v + 1, 0 empty */
    size_t n_slots;              /* a power of two, at least twice n */
    size_t n_requests;
    size_t *order;               /* v's indices in output order, once sorted */
    bool sorted;
};

struct atr_sessions *atr_sessions_new(void)
{
    return xcalloc(1, sizeof(struct atr_sessions));
}

void atr_sessions_free(struct atr_sessions *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].reqs);
    free(s->v);
    free(s->slots);
    free(s->order);
    atr_arena_release(&s->arena);
    free(s);
}

size_t atr_sessions_count(const struct atr_sessions *s) { return s->n; }
size_t atr_sessions_requests(const struct atr_sessions *s) { return s->n_requests; }

/* ---- the session table ---- */

static size_t slot_of(const struct atr_sessions *s, const char *id, size_t len)
{
    size_t mask = s->n_slots - 1, k = (size_t)XXH3_64bits(id, len) & mask;
    while (s->slots[k]) {
        const struct session *se = &s->v[s->slots[k] - 1];
        if (se->id_len == len && memcmp(se->id, id, len) == 0)
            break;
        k = (k + 1) & mask;
    }
    return k;
}

static void grow_table(struct atr_sessions *s)
{
    free(s->slots);
    s->n_slots = s->n_slots ? s->n_slots * 2 : 64;
    s->slots = xcalloc(s->n_slots, sizeof *s->slots);
    for (size_t i = 0; i < s->n; i++)
        s->slots[slot_of(s, s->v[i].id, s->v[i].id_len)] = i + 1;
}

static struct session *find_or_add(struct atr_sessions *s, const struct atr_json *id,
                                   uint32_t block_size)
{
    if (2 * (s->n + 1) > s->n_slots)
        grow_table(s);
    size_t k = slot_of(s, id->u.str.s, id->u.str.len);
    if (s->slots[k])
        return &s->v[s->slots[k] - 1];
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
    }
    struct session *se = &s->v[s->n++];
    memset(se, 0, sizeof *se);
    se->id = atr_arena_strndup(&s->arena, id->u.str.s, id->u.str.len);
    se->id_len = id->u.str.len;
    se->block_size = block_size;
    se->first_seq = s->n_requests;
    s->slots[k] = s->n;
    return se;
}

/* ---- adding ---- */

/* Checks that t is a journal line; on failure *where is the node to blame
 * (NULL: the trace as a whole). */
static int check_line(const struct atr_trace *t, const struct atr_json **id, int64_t *turn,
                      const struct atr_json **where, struct atr_error *err)
{
    *where = t->meta;
    if (t->n_steps != 1 || t->steps[0].kind != ATR_STEP_LLM)
        return atr_error_set(err, "expected one llm step (%zu steps): --sessions folds the "
                             "lines of an atr proxy journal", t->n_steps);
    *id = atr_json_get(t->meta, "session");
    if (*id)
        *where = *id;
    if (!atr_json_is(*id, ATR_JSON_STRING))
        return atr_error_set(err, "expected \"meta\".\"session\" (a string): --sessions folds "
                             "the lines of an atr proxy journal");
    const struct atr_json *v = atr_json_get(t->meta, "turn");
    *turn = -1;
    if (v && v->type != ATR_JSON_NULL) {
        *where = v;
        if (v->type != ATR_JSON_NUMBER || !v->is_int || v->i < 0)
            return atr_error_set(err, "expected \"meta\".\"turn\" to be a non-negative integer");
        *turn = v->i;
    }
    return 0;
}

static struct atr_json *copy_json(struct atr_arena *a, const struct atr_json *v)
{
    return v ? atr_json_copy(a, v) : NULL;
}

/* The step, with what it points to copied into a (llm fields only). */
static void copy_step(struct atr_arena *a, struct atr_step *to, const struct atr_step *from)
{
    *to = *from;
    to->tool = to->command = to->action = to->path = to->selector = to->url = to->cwd = NULL;
    to->command_head = to->file_op = NULL;   /* tokens_from: static names (readers) */
    to->hash_ids = atr_arena_alloc(a, (from->n_hash_ids + 1) * sizeof *to->hash_ids);
    if (from->n_hash_ids)
        memcpy(to->hash_ids, from->hash_ids, from->n_hash_ids * sizeof *to->hash_ids);
    to->messages = copy_json(a, from->messages);
    to->output = copy_json(a, from->output);
    to->extra = copy_json(a, from->extra);
}

static int add_line(struct atr_sessions *s, const struct atr_trace *t,
                    const struct atr_json **where, struct atr_error *err)
{
    const struct atr_json *id = NULL;
    int64_t turn = 0;
    if (check_line(t, &id, &turn, where, err) < 0)
        return -1;
    struct session *se = find_or_add(s, id, t->block_size);
    if (se->block_size != t->block_size) {
        *where = NULL;
        return atr_error_set(err, "block_size %u differs from %u of the earlier requests of "
                             "session \"%s\"", t->block_size, se->block_size, se->id);
    }
    if (se->n == se->cap) {
        se->cap = se->cap ? 2 * se->cap : 8;
        se->reqs = xreallocarray(se->reqs, se->cap, sizeof *se->reqs);
    }
    struct request *q = &se->reqs[se->n++];
    q->start_ms = t->start_ms;
    q->turn = turn;
    q->seq = s->n_requests++;
    copy_step(&s->arena, &q->step, &t->steps[0]);
    q->meta = copy_json(&s->arena, t->meta);
    s->sorted = false;
    return 0;
}

int atr_sessions_add(struct atr_sessions *s, const struct atr_trace *t, struct atr_error *err)
{
    const struct atr_json *where;
    return add_line(s, t, &where, err);
}

int atr_sessions_read(struct atr_sessions *s, const char *path, const char *format,
                      const struct atr_read_opts *ro, struct atr_error *err)
{
    struct atr_reader *r = atr_reader_open(path, format, ro, err);
    if (!r)
        return -1;
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error e;
    const struct atr_json *where;
    int rc;
    while ((rc = atr_reader_next(r, &t, err)) == 1) {
        if (add_line(s, &t, &where, &e) < 0) {
            atr_reader_fail_at(r, where, "%s", e.msg);   /* FILE:LINE:COL of the line */
            if (err)
                *err = r->err;
            rc = -1;
            break;
        }
    }
    atr_trace_release(&t);
    atr_reader_close(r);
    return rc;
}

/* ---- building ---- */

static int by_time(const void *pa, const void *pb)
{
    const struct request *a = pa, *b = pb;
    if (a->start_ms != b->start_ms)
        return a->start_ms < b->start_ms ? -1 : 1;
    if (a->turn != b->turn)
        return a->turn < b->turn ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* A session's place in the output: its first request's start, then its
 * first appearance. */
struct rank {
    int64_t start_ms;
    size_t seq, index;
};

static int by_first(const void *pa, const void *pb)
{
    const struct rank *a = pa, *b = pb;
    if (a->start_ms != b->start_ms)
        return a->start_ms < b->start_ms ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void sort_all(struct atr_sessions *s)
{
    if (s->sorted)
        return;
    struct rank *ranks = xcalloc(s->n ? s->n : 1, sizeof *ranks);
    for (size_t i = 0; i < s->n; i++) {
        qsort(s->v[i].reqs, s->v[i].n, sizeof *s->v[i].reqs, by_time);
        ranks[i] = (struct rank){ s->v[i].reqs[0].start_ms, s->v[i].first_seq, i };
    }
    qsort(ranks, s->n, sizeof *ranks, by_first);
    s->order = xreallocarray(s->order, s->n ? s->n : 1, sizeof *s->order);
    for (size_t i = 0; i < s->n; i++)
        s->order[i] = ranks[i].index;
    free(ranks);
    s->sorted = true;
}

/* The text of a prompt as the journal writes it, [{"role":"prompt",
 * "content":TEXT}], or NULL for any other shape. */
static const struct atr_json *prompt_text(const struct atr_json *messages)
{
    if (!atr_json_is(messages, ATR_JSON_ARRAY) || messages->u.kids.count != 1)
        return NULL;
    const struct atr_json *m = messages->u.kids.first;
    const char *role = atr_json_get_str(m, "role", NULL);
    const struct atr_json *c = atr_json_get(m, "content");
    return role && strcmp(role, "prompt") == 0 && atr_json_is(c, ATR_JSON_STRING) ? c : NULL;
}

/* The messages this request adds to the previous one's prompt: what
 * follows it when the prompt continues it, else all of them. */
static struct atr_json *added_messages(struct atr_trace *t, const struct atr_json *messages,
                                       const struct atr_json *prev)
{
    const struct atr_json *now = prompt_text(messages), *before = prompt_text(prev);
    if (!now || !before || before->u.str.len > now->u.str.len ||
        memcmp(before->u.str.s, now->u.str.s, before->u.str.len) != 0)
        return (struct atr_json *)messages;          /* read only, by the writer */
    struct atr_json *m = atr_json_new(&t->arena, ATR_JSON_OBJECT);
    atr_json_append(&t->arena, m, "role", atr_json_new_str(&t->arena, "prompt", 6));
    atr_json_append(&t->arena, m, "content",
                    atr_json_new_str(&t->arena, now->u.str.s + before->u.str.len,
                                     now->u.str.len - before->u.str.len));
    struct atr_json *list = atr_json_new(&t->arena, ATR_JSON_ARRAY);
    atr_json_append(&t->arena, list, NULL, m);
    return list;
}

/* The request's own unknown step fields, then its line's meta as "meta";
 * copies, as appending links the nodes. */
static struct atr_json *step_extra(struct atr_trace *t, const struct request *q)
{
    struct atr_json *x = atr_json_new(&t->arena, ATR_JSON_OBJECT);
    if (atr_json_is(q->step.extra, ATR_JSON_OBJECT))
        for (const struct atr_json *m = q->step.extra->u.kids.first; m; m = m->next)
            atr_json_append(&t->arena, x, atr_arena_strndup(&t->arena, m->key, m->key_len),
                            atr_json_copy(&t->arena, m));
    if (q->meta)
        atr_json_append(&t->arena, x, "meta", atr_json_copy(&t->arena, q->meta));
    return x->u.kids.count ? x : NULL;
}

static void add_llm(struct atr_trace *t, const struct request *q, int64_t at,
                    const struct request *prev, bool keep_content)
{
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_LLM);
    uint32_t i = s->i;
    *s = q->step;
    s->i = i;
    s->t_ms = at;
    s->messages = s->output = NULL;
    if (keep_content) {
        s->messages = q->step.messages
                      ? added_messages(t, q->step.messages, prev ? prev->step.messages : NULL)
                      : NULL;
        s->output = q->step.output;
    }
    s->extra = step_extra(t, q);
}

/* The client's time between the end of one request and the start of the
 * next: none when they overlap (the next started before the reply ended). */
static void add_client(struct atr_trace *t, int64_t prev_end, int64_t at)
{
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_TOOL);
    int64_t from = prev_end < at ? prev_end : at;
    s->tool = "client";
    s->t_ms = from;
    s->dur_ms = at - from;
}

static void session_meta(struct atr_trace *t, const struct session *se)
{
    const struct atr_json *first = se->reqs[0].meta;
    t->meta = atr_json_new(&t->arena, ATR_JSON_OBJECT);
    atr_json_append(&t->arena, t->meta, "session",
                    atr_json_new_str(&t->arena, se->id, se->id_len));
    static const char *const from_first[] = {"session_source", "model"};
    for (size_t k = 0; k < sizeof from_first / sizeof *from_first; k++) {
        const struct atr_json *v = atr_json_get(first, from_first[k]);
        if (v && v->type != ATR_JSON_NULL)
            atr_json_append(&t->arena, t->meta, from_first[k], atr_json_copy(&t->arena, v));
    }
    atr_json_append(&t->arena, t->meta, "requests", atr_json_new_i64(&t->arena, (int64_t)se->n));
}

void atr_sessions_build(struct atr_sessions *s, size_t k, bool keep_content,
                        struct atr_trace *t)
{
    sort_all(s);
    const struct session *se = &s->v[s->order[k]];
    atr_trace_clear(t);
    t->trace_id = atr_arena_printf(&t->arena, "proxy/%s", se->id);
    t->source = "atr-proxy";
    t->start_ms = se->reqs[0].start_ms;
    t->block_size = se->block_size;
    session_meta(t, se);
    int64_t prev_end = 0;
    for (size_t i = 0; i < se->n; i++) {
        const struct request *q = &se->reqs[i];
        int64_t at = q->start_ms - t->start_ms;
        if (i > 0)
            add_client(t, prev_end, at);
        add_llm(t, q, at, i ? &se->reqs[i - 1] : NULL, keep_content);
        prev_end = at + (q->step.dur_ms > 0 ? q->step.dur_ms : 0);
    }
}
