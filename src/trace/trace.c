/* trace.c - the in-memory trace: steps, meta, and command heads. */
#include "trace/trace.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct atr_step *atr_trace_add_step(struct atr_trace *t, enum atr_step_kind kind)
{
    if (t->n_steps == t->cap_steps) {
        size_t cap = t->cap_steps ? t->cap_steps * 2 : 16;
        struct atr_step *s = atr_arena_alloc(&t->arena, cap * sizeof *s);
        if (t->n_steps)
            memcpy(s, t->steps, t->n_steps * sizeof *s);
        t->steps = s;      /* the old array stays in the arena until clear */
        t->cap_steps = cap;
    }
    struct atr_step *s = &t->steps[t->n_steps];
    memset(s, 0, sizeof *s);
    s->i = (uint32_t)t->n_steps++;
    s->kind = kind;
    s->t_ms = s->dur_ms = ATR_UNSET;
    s->input_tokens = s->output_tokens = s->cached_tokens = ATR_UNSET;
    s->recorded_input_tokens = s->recorded_output_tokens = ATR_UNSET;
    s->estimated_input_tokens = s->estimated_output_tokens = ATR_UNSET;
    s->bytes = s->old_bytes = ATR_UNSET;
    s->max_tokens = s->timeout_ms = s->exit_code = ATR_UNSET;
    return s;
}

void atr_trace_clear(struct atr_trace *t)
{
    struct atr_arena arena = t->arena;
    atr_arena_clear(&arena);
    memset(t, 0, sizeof *t);
    t->arena = arena;
    t->block_size = ATR_DEFAULT_BLOCK_SIZE;
}

void atr_trace_release(struct atr_trace *t)
{
    atr_arena_release(&t->arena);
    memset(t, 0, sizeof *t);
}

static struct atr_json *meta_object(struct atr_trace *t)
{
    if (!t->meta)
        t->meta = atr_json_new(&t->arena, ATR_JSON_OBJECT);
    return t->meta;
}

/* Replaces an existing member's value in place, or appends a new member. */
static void meta_put(struct atr_trace *t, const char *key, struct atr_json *v)
{
    struct atr_json *obj = meta_object(t);
    for (struct atr_json *m = obj->u.kids.first; m; m = m->next)
        if (atr_json_key_is(m, key)) {
            struct atr_json *next = m->next;
            const char *k = m->key;
            size_t klen = m->key_len;
            *m = *v;
            m->key = k;
            m->key_len = klen;
            m->next = next;
            return;
        }
    atr_json_append(&t->arena, obj, key, v);
}

void atr_trace_meta_set_str(struct atr_trace *t, const char *key, const char *val)
{
    meta_put(t, key, atr_json_new_str(&t->arena, val, strlen(val)));
}

void atr_trace_meta_set_i64(struct atr_trace *t, const char *key, int64_t val)
{
    meta_put(t, key, atr_json_new_i64(&t->arena, val));
}

/* ---- command heads ---- */

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '(')
        p++;
    return p;
}

static size_t word_len(const char *p)
{
    size_t n = 0;
    while (p[n] && !isspace((unsigned char)p[n]) && !strchr(";&|()<>", p[n]))
        n++;
    return n;
}

static bool word_is(const char *p, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(p, w, n) == 0;
}

/* Advances past "cd DIR &&" / "cd DIR;" prefixes. */
static const char *skip_cd(const char *p)
{
    for (;;) {
        p = skip_space(p);
        size_t n = word_len(p);
        if (!word_is(p, n, "cd") && !word_is(p, n, "source") && !word_is(p, n, "."))
            return p;
        const char *q = strpbrk(p, ";&|\n");
        if (!q)
            return p;
        while (*q == ';' || *q == '&' || *q == '|' || *q == '\n')
            q++;
        p = q;
    }
}

void atr_command_head(const char *command, char *out, size_t cap)
{
    static const char *const wrappers[] = {"sudo", "timeout", "env", "time", "nice",
                                           "nohup", "exec", "command", "xargs", NULL};
    const char *p = skip_cd(command ? command : "");
    for (int guard = 0; guard < 16; guard++) {
        p = skip_space(p);
        size_t n = word_len(p);
        if (n == 0)
            break;
        bool skip = memchr(p, '=', n) != NULL;          /* VAR=value */
        if (!skip && p[0] == '-')                          /* wrapper options */
            skip = true;
        if (!skip && guard > 0 && isdigit((unsigned char)p[0]))  /* timeout 60 */
            skip = true;
        for (int w = 0; !skip && wrappers[w]; w++)
            skip = word_is(p, n, wrappers[w]);
        if (skip) {
            p += n;
            continue;
        }
        /* "python -m pytest" counts as pytest; a path counts as its base name. */
        const char *base = p;
        for (const char *q = p; q < p + n; q++)
            if (*q == '/')
                base = q + 1;
        size_t blen = (size_t)(p + n - base);
        if ((word_is(base, blen, "python") || word_is(base, blen, "python3")) ) {
            const char *q = skip_space(p + n);
            if (q[0] == '-' && q[1] == 'm' && (q[2] == ' ' || q[2] == '\t')) {
                q = skip_space(q + 2);
                size_t m = word_len(q);
                if (m) {
                    base = q;
                    blen = m;
                }
            }
        }
        if (blen >= cap)
            blen = cap - 1;
        memcpy(out, base, blen);
        out[blen] = '\0';
        return;
    }
    if (cap)
        out[0] = '\0';
}
