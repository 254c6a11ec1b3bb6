/* writer.c - atr-trace v1 NDJSON output, compact prefix references by default. */
#include "trace/writer.h"

#include <string.h>

/* The helpers ignore append results: the output buffer has no cap (see
 * writer.h), so appends cannot fail; only the last one is checked. */

static void put_key(struct atr_buf *b, const char *key)
{
    atr_buf_putc(b, ',');
    atr_buf_putc(b, '"');
    atr_buf_puts(b, key);
    atr_buf_putc(b, '"');
    atr_buf_putc(b, ':');
}

static void put_i64(struct atr_buf *b, const char *key, int64_t v)
{
    if (v == ATR_UNSET)
        return;
    put_key(b, key);
    atr_buf_put_i64(b, v);
}

static void put_str(struct atr_buf *b, const char *key, const char *s)
{
    if (!s)
        return;
    put_key(b, key);
    atr_json_write_string(b, s, strlen(s));
}

static void put_json(struct atr_buf *b, const char *key, const struct atr_json *j)
{
    if (!j)
        return;
    put_key(b, key);
    atr_json_write_value(b, j);
}

/* Unknown fields go back at the end of their object, in their order. */
static void put_extra(struct atr_buf *b, const struct atr_json *extra)
{
    if (!atr_json_is(extra, ATR_JSON_OBJECT))
        return;
    for (const struct atr_json *m = extra->u.kids.first; m; m = m->next) {
        atr_buf_putc(b, ',');
        atr_json_write_string(b, m->key, m->key_len);
        atr_buf_putc(b, ':');
        atr_json_write_value(b, m);
    }
}

static void put_ids(struct atr_buf *b, const uint64_t *ids, size_t n)
{
    put_key(b, "hash_ids");
    atr_buf_putc(b, '[');
    for (size_t k = 0; k < n; k++) {
        if (k)
            atr_buf_putc(b, ',');
        atr_buf_put_u64(b, ids[k]);
    }
    atr_buf_putc(b, ']');
}

static size_t common_prefix(const struct atr_step *a, const struct atr_step *b)
{
    size_t n = a->n_hash_ids < b->n_hash_ids ? a->n_hash_ids : b->n_hash_ids;
    size_t k = 0;
    while (k < n && a->hash_ids[k] == b->hash_ids[k])
        k++;
    return k;
}

/* An llm step's ids, as a reference to the previous llm step's leading ids
 * plus its own, unless expanded output was asked for. */
static void put_hash_ids(struct atr_buf *b, const struct atr_step *s,
                         const struct atr_step *prev, bool expand)
{
    size_t shared = (!expand && prev) ? common_prefix(prev, s) : 0;
    if (shared) {
        put_key(b, "prefix");
        atr_buf_puts(b, "{\"step\":");
        atr_buf_put_u64(b, prev->i);
        atr_buf_puts(b, ",\"blocks\":");
        atr_buf_put_u64(b, shared);
        atr_buf_putc(b, '}');
    }
    if (!s->hash_ids)
        put_ids(b, NULL, 0);     /* no pointer arithmetic on NULL */
    else if (s->n_hash_ids || !shared)
        put_ids(b, s->hash_ids + shared, s->n_hash_ids - shared);
}

static void put_step(struct atr_buf *b, const struct atr_step *s, const struct atr_step *prev,
                     const struct atr_write_opts *o)
{
    atr_buf_puts(b, "{\"i\":");
    atr_buf_put_u64(b, s->i);
    put_str(b, "kind", s->kind == ATR_STEP_LLM ? "llm" : "tool");
    if (s->kind == ATR_STEP_TOOL) {
        put_str(b, "tool", s->tool);
        if (s->command && !o->redact_commands) {
            put_str(b, "command", s->command);
        } else if (s->command || s->command_head) {
            char head[64];
            atr_command_head(s->command, head, sizeof head);
            put_str(b, "command_head", s->command ? head : s->command_head);
        }
        put_str(b, "action", s->action);
        put_str(b, "path", s->path);
        put_str(b, "selector", s->selector);
        put_str(b, "url", s->url);
        put_str(b, "cwd", s->cwd);
        put_i64(b, "timeout_ms", s->timeout_ms);
    }
    put_i64(b, "t_ms", s->t_ms);
    put_i64(b, "dur_ms", s->dur_ms);
    if (s->kind == ATR_STEP_LLM) {
        put_i64(b, "input_tokens", s->input_tokens);
        put_i64(b, "output_tokens", s->output_tokens);
        put_i64(b, "cached_tokens", s->cached_tokens);
        put_i64(b, "max_tokens", s->max_tokens);
        put_i64(b, "recorded_input_tokens", s->recorded_input_tokens);
        put_i64(b, "recorded_output_tokens", s->recorded_output_tokens);
        put_hash_ids(b, s, prev, o->expand);
        put_json(b, "messages", s->messages);
        put_json(b, "output", s->output);
    }
    put_i64(b, "exit_code", s->exit_code);
    put_extra(b, s->extra);
    atr_buf_putc(b, '}');
}

int atr_trace_write(struct atr_buf *b, const struct atr_trace *t,
                    const struct atr_write_opts *opts)
{
    static const struct atr_write_opts defaults = {0};
    const struct atr_write_opts *o = opts ? opts : &defaults;
    size_t start = b->len;
    atr_buf_puts(b, "{\"format\":\"" ATR_TRACE_FORMAT "\"");
    put_str(b, "trace_id", t->trace_id ? t->trace_id : "");
    put_str(b, "source", t->source);
    put_i64(b, "start_ms", t->start_ms);
    put_key(b, "block_size");
    atr_buf_put_u64(b, t->block_size ? t->block_size : ATR_DEFAULT_BLOCK_SIZE);
    put_json(b, "meta", t->meta);
    put_key(b, "steps");
    atr_buf_putc(b, '[');
    const struct atr_step *prev_llm = NULL;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *s = &t->steps[k];
        if (k)
            atr_buf_putc(b, ',');
        put_step(b, s, prev_llm, o);
        if (s->kind == ATR_STEP_LLM)
            prev_llm = s;
    }
    atr_buf_putc(b, ']');
    put_extra(b, t->extra);
    if (atr_buf_puts(b, "}\n") < 0) {
        b->len = start;     /* never leave half a line */
        return -1;
    }
    return 0;
}
