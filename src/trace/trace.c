/* trace.c - the in-memory trace: steps, meta, and command heads. */
#include "trace/trace.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

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

/* ---- DAGs ---- */

uint32_t atr_step_parents(const struct atr_step *s, uint32_t *one, const uint32_t **out)
{
    if (s->parents) {
        *out = s->parents;
        return s->n_parents;
    }
    *one = s->i ? s->i - 1 : 0;
    *out = one;
    return s->i ? 1 : 0;
}

bool atr_trace_is_dag(const struct atr_trace *t)
{
    for (size_t k = 0; k < t->n_steps; k++)
        if (t->steps[k].parents || t->steps[k].agent)
            return true;
    return false;
}

/* The scratch of atr_trace_order_steps: children lists (CSR), pending
 * parent counts, a binary min-heap of ready steps on (t_ms, index). */
struct order {
    const struct atr_trace *t;
    int64_t *key;
    uint32_t *pending, *kid_at, *kids, *heap, *new_at;
    size_t n_heap;
};

static bool order_less(const struct order *o, uint32_t a, uint32_t b)
{
    return o->key[a] != o->key[b] ? o->key[a] < o->key[b] : a < b;
}

static void heap_push(struct order *o, uint32_t v)
{
    size_t j = o->n_heap++;
    while (j && order_less(o, v, o->heap[(j - 1) / 2])) {
        o->heap[j] = o->heap[(j - 1) / 2];
        j = (j - 1) / 2;
    }
    o->heap[j] = v;
}

static uint32_t heap_pop(struct order *o)
{
    uint32_t top = o->heap[0], v = o->heap[--o->n_heap];
    size_t j = 0;
    for (;;) {
        size_t c = 2 * j + 1;
        if (c >= o->n_heap)
            break;
        if (c + 1 < o->n_heap && order_less(o, o->heap[c + 1], o->heap[c]))
            c++;
        if (!order_less(o, o->heap[c], v))
            break;
        o->heap[j] = o->heap[c];
        j = c;
    }
    if (o->n_heap)
        o->heap[j] = v;
    return top;
}

/* Keys (t_ms, carried over steps without one), children lists, counts. */
static void order_init(struct order *o, const struct atr_trace *t)
{
    size_t n = t->n_steps, edges = 0;
    o->t = t;
    o->key = xcalloc(n, sizeof *o->key);
    o->pending = xcalloc(n, sizeof *o->pending);
    o->kid_at = xcalloc(n + 1, sizeof *o->kid_at);
    o->heap = xcalloc(n, sizeof *o->heap);
    o->new_at = xcalloc(n, sizeof *o->new_at);
    for (size_t k = 0; k < n; k++) {
        const struct atr_step *s = &t->steps[k];
        o->key[k] = s->t_ms != ATR_UNSET ? s->t_ms : k ? o->key[k - 1] : 0;
        uint32_t one;
        const uint32_t *p;
        uint32_t np = atr_step_parents(s, &one, &p);
        o->pending[k] = np;
        edges += np;
        for (uint32_t j = 0; j < np; j++)
            o->kid_at[p[j] + 1]++;
    }
    for (size_t k = 0; k < n; k++)
        o->kid_at[k + 1] += o->kid_at[k];
    o->kids = xcalloc(edges ? edges : 1, sizeof *o->kids);
    uint32_t *fill = xcalloc(n + 1, sizeof *fill);
    for (size_t k = 0; k < n; k++) {
        uint32_t one;
        const uint32_t *p;
        uint32_t np = atr_step_parents(&t->steps[k], &one, &p);
        for (uint32_t j = 0; j < np; j++)
            o->kids[o->kid_at[p[j]] + fill[p[j]]++] = (uint32_t)k;
    }
    free(fill);
}

static void order_release(struct order *o)
{
    free(o->key);
    free(o->pending);
    free(o->kid_at);
    free(o->kids);
    free(o->heap);
    free(o->new_at);
}

/* The new position of every step into o->new_at (old index -> new);
 * returns how many were placed (fewer than n: a cycle). */
static size_t order_place(struct order *o, uint32_t *seq, long *moved)
{
    size_t n = o->t->n_steps, placed = 0;
    for (size_t k = 0; k < n; k++)
        if (!o->pending[k])
            heap_push(o, (uint32_t)k);
    while (o->n_heap) {
        uint32_t v = heap_pop(o);
        o->new_at[v] = (uint32_t)placed;
        seq[placed++] = v;
        for (uint32_t e = o->kid_at[v]; e < o->kid_at[v + 1]; e++) {
            uint32_t c = o->kids[e];
            if (o->key[c] < o->key[v]) {   /* starts before a parent: moved */
                o->key[c] = o->key[v];
                (*moved)++;
            }
            if (--o->pending[c] == 0)
                heap_push(o, c);
        }
    }
    return placed;
}

/* Rebuilds the step array in the order seq, renumbering the references. */
static void order_apply(struct atr_trace *t, const struct order *o, const uint32_t *seq)
{
    size_t n = t->n_steps;
    struct atr_step *old = t->steps;
    struct atr_step *steps = atr_arena_alloc(&t->arena, (n ? n : 1) * sizeof *steps);
    for (size_t k = 0; k < n; k++) {
        struct atr_step *s = &steps[k];
        uint32_t one, from = seq[k];
        const uint32_t *p;
        *s = old[from];
        uint32_t np = atr_step_parents(&old[from], &one, &p);
        s->i = (uint32_t)k;
        if (s->t_ms != ATR_UNSET && s->t_ms < o->key[from])
            s->t_ms = o->key[from];
        if (s->prefix_blocks)
            s->prefix_step = o->new_at[s->prefix_step];
        s->parents = NULL;
        s->n_parents = 0;
        if (np == 1 && k && o->new_at[p[0]] == k - 1)
            continue;               /* the previous step: absent */
        if (np == 0 && k == 0)
            continue;
        s->parents = atr_arena_alloc(&t->arena, (np ? np : 1) * sizeof *s->parents);
        for (uint32_t j = 0; j < np; j++)
            s->parents[j] = o->new_at[p[j]];
        s->n_parents = np;
    }
    t->steps = steps;
    t->cap_steps = n;
}

long atr_trace_order_steps(struct atr_trace *t, uint32_t *cycle)
{
    struct order o = {0};
    long moved = 0;
    if (!t->n_steps)
        return 0;
    order_init(&o, t);
    uint32_t *seq = xcalloc(t->n_steps, sizeof *seq);
    size_t placed = order_place(&o, seq, &moved);
    if (placed < t->n_steps) {
        for (size_t k = 0; k < t->n_steps; k++)
            if (o.pending[k]) {
                *cycle = (uint32_t)k;
                break;
            }
        moved = -1;
    } else {
        order_apply(t, &o, seq);
    }
    free(seq);
    order_release(&o);
    return moved;
}
