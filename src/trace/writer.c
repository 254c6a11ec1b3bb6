/* writer.c - atr-trace v1 NDJSON output, compact prefix references by default. */
#include "trace/writer.h"

#include <string.h>

#include "json/writer.h"

/* Fields that are absent (NULL, ATR_UNSET) are left out of the line. */
static void opt_i64(struct atr_jw *w, const char *key, int64_t v)
{
    if (v != ATR_UNSET)
        atr_jw_kv_int(w, key, v);
}

static void opt_str(struct atr_jw *w, const char *key, const char *s)
{
    if (s)
        atr_jw_kv_str(w, key, s);
}

static void opt_json(struct atr_jw *w, const char *key, const struct atr_json *j)
{
    if (j)
        atr_jw_kv_value(w, key, j);
}

/* Unknown fields go back at the end of their object, in their order. */
static void put_extra(struct atr_jw *w, const struct atr_json *extra)
{
    if (!atr_json_is(extra, ATR_JSON_OBJECT))
        return;
    for (const struct atr_json *m = extra->u.kids.first; m; m = m->next) {
        atr_jw_keyn(w, m->key, m->key_len);
        atr_jw_value(w, m);
    }
}

static void put_ids(struct atr_jw *w, const uint64_t *ids, size_t n)
{
    atr_jw_key(w, "hash_ids");
    atr_jw_uint_array(w, ids, n);
}

static size_t common_prefix(const struct atr_step *a, const struct atr_step *b)
{
    /* A chat's steps share thousands of leading ids: whole runs compared
     * by memcmp (vector code) first, one id at a time only in the last. */
    enum { RUN = 64 };
    size_t n = a->n_hash_ids < b->n_hash_ids ? a->n_hash_ids : b->n_hash_ids;
    size_t k = 0;
    while (n - k >= RUN && !memcmp(a->hash_ids + k, b->hash_ids + k, RUN * sizeof *a->hash_ids))
        k += RUN;
    while (k < n && a->hash_ids[k] == b->hash_ids[k])
        k++;
    return k;
}

/* An llm step's ids, as a reference to the previous llm step's leading ids
 * plus its own, unless expanded output was asked for. */
static void put_hash_ids(struct atr_jw *w, const struct atr_step *s,
                         const struct atr_step *prev, bool expand)
{
    size_t shared = (!expand && prev) ? common_prefix(prev, s) : 0;
    if (shared) {
        atr_jw_key(w, "prefix");
        atr_jw_object_begin(w);
        atr_jw_kv_uint(w, "step", prev->i);
        atr_jw_kv_uint(w, "blocks", shared);
        atr_jw_object_end(w);
    }
    if (!s->hash_ids)
        put_ids(w, NULL, 0);     /* no pointer arithmetic on NULL */
    else if (s->n_hash_ids || !shared)
        put_ids(w, s->hash_ids + shared, s->n_hash_ids - shared);
}

static void put_tool_fields(struct atr_jw *w, const struct atr_step *s,
                            const struct atr_write_opts *o)
{
    opt_str(w, "tool", s->tool);
    if (s->command && !o->redact_commands) {
        atr_jw_kv_str(w, "command", s->command);
    } else if (s->command || s->command_head) {
        char head[64];
        atr_command_head(s->command, head, sizeof head);
        atr_jw_kv_str(w, "command_head", s->command ? head : s->command_head);
    }
    opt_str(w, "action", s->action);
    opt_str(w, "path", s->path);
    opt_str(w, "file_op", s->file_op);
    opt_i64(w, "bytes", s->bytes);
    opt_i64(w, "old_bytes", s->old_bytes);
    opt_str(w, "selector", s->selector);
    opt_str(w, "url", s->url);
    opt_str(w, "cwd", s->cwd);
    opt_i64(w, "timeout_ms", s->timeout_ms);
}

static void put_llm_fields(struct atr_jw *w, const struct atr_step *s,
                           const struct atr_step *prev, const struct atr_write_opts *o)
{
    opt_i64(w, "input_tokens", s->input_tokens);
    opt_i64(w, "output_tokens", s->output_tokens);
    opt_i64(w, "cached_tokens", s->cached_tokens);
    opt_i64(w, "max_tokens", s->max_tokens);
    opt_i64(w, "recorded_input_tokens", s->recorded_input_tokens);
    opt_i64(w, "recorded_output_tokens", s->recorded_output_tokens);
    opt_str(w, "tokens_from", s->tokens_from);
    opt_str(w, "output_tokens_from", s->output_tokens_from);
    opt_i64(w, "estimated_input_tokens", s->estimated_input_tokens);
    opt_i64(w, "estimated_output_tokens", s->estimated_output_tokens);
    put_hash_ids(w, s, prev, o->expand);
    opt_json(w, "messages", s->messages);
    opt_json(w, "output", s->output);
}

/* DAG fields, only where the step has them: a chain reads unchanged. */
static void put_dag_fields(struct atr_jw *w, const struct atr_step *s)
{
    opt_str(w, "agent", s->agent);
    if (!s->parents)
        return;
    atr_jw_key(w, "parents");
    atr_jw_array_begin(w);
    for (uint32_t k = 0; k < s->n_parents; k++)
        atr_jw_uint(w, s->parents[k]);
    atr_jw_array_end(w);
}

static void put_step(struct atr_jw *w, const struct atr_step *s, const struct atr_step *prev,
                     const struct atr_write_opts *o)
{
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "i", s->i);
    atr_jw_kv_str(w, "kind", s->kind == ATR_STEP_LLM ? "llm" : "tool");
    put_dag_fields(w, s);
    if (s->kind == ATR_STEP_TOOL)
        put_tool_fields(w, s, o);
    opt_i64(w, "t_ms", s->t_ms);
    opt_i64(w, "dur_ms", s->dur_ms);
    if (s->kind == ATR_STEP_LLM)
        put_llm_fields(w, s, prev, o);
    opt_i64(w, "exit_code", s->exit_code);
    put_extra(w, s->extra);
    atr_jw_object_end(w);
}

static bool same_agent(const struct atr_step *a, const struct atr_step *b)
{
    return a->agent == b->agent || (a->agent && b->agent && strcmp(a->agent, b->agent) == 0);
}

/* The step whose ids step k's prefix refers to: the previous llm step of
 * its own agent (sub-agents interleave with their parent, whose prompt
 * shares less), looked for over the last REF_WINDOW steps; for an agent's
 * first call, its first llm parent (the call that spawned it); else the
 * previous llm step. In a chain all three are the previous llm step. */
#define REF_WINDOW 256
static const struct atr_step *prefix_ref(const struct atr_trace *t, size_t k,
                                         const struct atr_step *prev_llm)
{
    const struct atr_step *s = &t->steps[k];
    for (size_t j = k, seen = 0; j-- > 0 && seen < REF_WINDOW; seen++)
        if (t->steps[j].kind == ATR_STEP_LLM && same_agent(&t->steps[j], s))
            return &t->steps[j];
    for (uint32_t j = 0; s->parents && j < s->n_parents; j++)
        if (t->steps[s->parents[j]].kind == ATR_STEP_LLM)
            return &t->steps[s->parents[j]];
    return prev_llm;
}

static void put_steps(struct atr_jw *w, const struct atr_trace *t,
                      const struct atr_write_opts *o)
{
    atr_jw_key(w, "steps");
    atr_jw_array_begin(w);
    const struct atr_step *prev_llm = NULL;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *s = &t->steps[k];
        put_step(w, s, s->kind == ATR_STEP_LLM ? prefix_ref(t, k, prev_llm) : NULL, o);
        if (s->kind == ATR_STEP_LLM)
            prev_llm = s;
    }
    atr_jw_array_end(w);
}

int atr_trace_write(struct atr_buf *b, const struct atr_trace *t,
                    const struct atr_write_opts *opts)
{
    static const struct atr_write_opts defaults = {0};
    const struct atr_write_opts *o = opts ? opts : &defaults;
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "format", atr_trace_is_dag(t) ? ATR_TRACE_FORMAT_DAG : ATR_TRACE_FORMAT);
    atr_jw_kv_str(&w, "trace_id", t->trace_id ? t->trace_id : "");
    opt_str(&w, "source", t->source);
    opt_i64(&w, "start_ms", t->start_ms);
    atr_jw_kv_uint(&w, "block_size", t->block_size ? t->block_size : ATR_DEFAULT_BLOCK_SIZE);
    opt_json(&w, "meta", t->meta);
    put_steps(&w, t, o);
    put_extra(&w, t->extra);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    return atr_jw_finish(&w);   /* on failure, never leaves half a line */
}
