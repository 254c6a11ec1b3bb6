/* slots.c - llama-server's slot choice, per-slot prompt caches and RAM
 * prompt cache (tools/server/server-context.cpp get_available_slot,
 * server-task.cpp server_prompt_cache), over block ids. */
#include "sim/slots.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

/* A cached prompt: its full blocks' ids and its length in tokens (the
 * prompt and what was generated after it, as a slot's KV holds). */
struct prompt {
    uint64_t *ids;
    uint32_t n_ids;
    uint64_t tokens;
};

struct slot {
    struct prompt p;
    uint64_t last_used;          /* release order; 0: never used (llama-server's -1) */
    bool busy;
    /* Its prompt went through ram_save and no entry left the RAM cache
     * since (at ram_removals == saved_at): saving it again would find it
     * held, so it is not looked for (most of a run's time otherwise). */
    bool saved;
    uint64_t saved_at;
};

struct atr_slots {
    struct atr_slots_cfg cfg;
    struct slot *slot;
    struct prompt *ram;          /* the RAM cache, oldest first */
    size_t n_ram, cap_ram;
    uint64_t ram_total;          /* tokens it holds */
    uint64_t ram_removals;       /* entries that left it so far */
    uint64_t clock;
    struct atr_slots_stats st;
};

struct atr_slots *atr_slots_new(const struct atr_slots_cfg *cfg)
{
    struct atr_slots *s = xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    if (!s->cfg.n)
        s->cfg.n = 1;
    if (!s->cfg.block_size)
        s->cfg.block_size = 16;
    s->slot = xcalloc(s->cfg.n, sizeof *s->slot);
    return s;
}

void atr_slots_free(struct atr_slots *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < s->cfg.n; i++)
        free(s->slot[i].p.ids);
    for (size_t i = 0; i < s->n_ram; i++)
        free(s->ram[i].ids);
    free(s->ram);
    free(s->slot);
    free(s);
}

/* Tokens of the longest common prefix of p and the prompt ids[0..n). */
static uint64_t lcp(const struct atr_slots *s, const struct prompt *p, const uint64_t *ids,
                    uint32_t n)
{
    uint32_t k = 0, max = p->n_ids < n ? p->n_ids : n;
    while (k < max && p->ids[k] == ids[k])
        k++;
    return (uint64_t)k * s->cfg.block_size;
}

static void prompt_set(struct prompt *p, const uint64_t *ids, uint32_t n, uint64_t tokens)
{
    p->ids = xreallocarray(p->ids, n ? n : 1, sizeof *p->ids);
    if (n)
        memcpy(p->ids, ids, n * sizeof *ids);
    p->n_ids = n;
    p->tokens = tokens;
}

/* The idle slot whose cache holds the largest share of the prompt, over
 * the threshold (the first of equals), or -1; *sim gets that share. */
static int by_similarity(const struct atr_slots *s, const uint64_t *ids, uint32_t n,
                         uint32_t prompt_tokens, double *sim)
{
    int best = -1;
    *sim = 0;
    for (unsigned i = 0; i < s->cfg.n; i++) {
        const struct slot *x = &s->slot[i];
        if (x->busy || x->p.tokens == 0)
            continue;
        double f = (double)lcp(s, &x->p, ids, n) / prompt_tokens;
        if (f > *sim && f > s->cfg.similarity) {
            *sim = f;
            best = (int)i;
        }
    }
    return best;
}

/* The least recently used idle slot; of equals the last, as the server's
 * `<=` scan picks. -1 when all are busy. */
static int by_lru(const struct atr_slots *s)
{
    int best = -1;
    for (unsigned i = 0; i < s->cfg.n; i++)
        if (!s->slot[i].busy && (best < 0 || s->slot[i].last_used <= s->slot[best].last_used))
            best = (int)i;
    return best;
}

static struct prompt *grow_ram(struct atr_slots *s)
{
    if (s->n_ram == s->cap_ram) {
        s->cap_ram = s->cap_ram ? 2 * s->cap_ram : 16;
        s->ram = xreallocarray(s->ram, s->cap_ram, sizeof *s->ram);
    }
    return s->ram;
}

/* Takes entry i out (its ids stay with the caller when keep). */
static void ram_take(struct atr_slots *s, size_t i, bool keep)
{
    s->ram_total -= s->ram[i].tokens;
    s->ram_removals++;
    if (!keep)
        free(s->ram[i].ids);
    memmove(s->ram + i, s->ram + i + 1, (s->n_ram - i - 1) * sizeof *s->ram);
    s->n_ram--;
}

/* Whether a holds all of b: b's ids lead a's, and a is no shorter. The
 * last of b's ids is compared first: ids are chained, so two different
 * prompts almost always differ there, and the whole compare is rare. */
static bool contains(const struct prompt *a, const struct prompt *b)
{
    uint32_t n = b->n_ids;
    return a->n_ids >= n && a->tokens >= b->tokens &&
           (n == 0 || a->ids[n - 1] == b->ids[n - 1]) &&
           !memcmp(a->ids, b->ids, n * sizeof *b->ids);
}

/* server_prompt_cache::alloc and update: a prompt some entry already
 * holds is not saved again; entries the new one holds go; the oldest
 * go until it fits; one larger than the whole cache is not saved. */
static void ram_save(struct atr_slots *s, const struct prompt *p)
{
    if (!s->cfg.ram_tokens || p->tokens == 0 || p->tokens > s->cfg.ram_tokens)
        return;
    for (size_t i = 0; i < s->n_ram; i++)
        if (contains(&s->ram[i], p))
            return;
    for (size_t i = s->n_ram; i-- > 0;)
        if (contains(p, &s->ram[i]))
            ram_take(s, i, false);
    while (s->n_ram && s->ram_total + p->tokens > s->cfg.ram_tokens) {
        ram_take(s, 0, false);
        s->st.ram_evictions++;
    }
    s->ram = grow_ram(s);
    s->ram[s->n_ram] = (struct prompt){0};
    prompt_set(&s->ram[s->n_ram++], p->ids, p->n_ids, p->tokens);
    s->ram_total += p->tokens;
    s->st.ram_saves++;
}

/* ram_save of slot x's prompt, unless it is known to be held. */
static void ram_save_slot(struct atr_slots *s, struct slot *x)
{
    if (x->saved && x->saved_at == s->ram_removals)
        return;
    ram_save(s, &x->p);
    x->saved = true;
    x->saved_at = s->ram_removals;
}

/* server_prompt_cache::load: the entry that keeps more of itself and more
 * of the new prompt than the slot's own cache (and at least a quarter of
 * itself: large prompts are not thrown away for a small overlap) moves
 * into the slot. */
static void ram_load(struct atr_slots *s, struct slot *x, const uint64_t *ids, uint32_t n,
                     uint32_t prompt_tokens)
{
    uint64_t l = lcp(s, &x->p, ids, n);
    double keep = x->p.tokens ? (double)l / x->p.tokens : -1.0;
    double sim = (double)l / prompt_tokens;
    size_t best = s->n_ram;
    for (size_t i = 0; i < s->n_ram; i++) {
        uint64_t li = lcp(s, &s->ram[i], ids, n);
        double ki = (double)li / s->ram[i].tokens, si = (double)li / prompt_tokens;
        if (ki < 0.25)
            continue;
        if (keep < ki && sim < si) {
            keep = ki;
            sim = si;
            best = i;
        }
    }
    if (best == s->n_ram)
        return;
    free(x->p.ids);
    x->p = s->ram[best];
    x->saved = false;
    ram_take(s, best, true);
    s->st.ram_restores++;
}

int atr_slots_take(struct atr_slots *s, const uint64_t *ids, uint32_t n_ids,
                   uint32_t prompt_tokens, uint32_t *cached)
{
    double sim = 0;
    bool update = false;
    int i = s->cfg.similarity > 0 ? by_similarity(s, ids, n_ids, prompt_tokens, &sim) : -1;
    if (i >= 0) {
        /* about to lose most of the slot's context: keep it in RAM */
        update = sim * prompt_tokens / (double)s->slot[i].p.tokens < 0.5;
        s->st.by_prefix++;
    } else {
        i = by_lru(s);
        if (i < 0)
            return -1;
        update = true;
        s->st.by_lru++;
    }
    struct slot *x = &s->slot[i];
    if (update && s->cfg.ram_tokens) {
        ram_save_slot(s, x);
        ram_load(s, x, ids, n_ids, prompt_tokens);
    }
    x->busy = true;
    for (unsigned k = 0; k < s->cfg.n && s->cfg.ram_tokens; k++)   /* --cache-idle-slots */
        if (!s->slot[k].busy)
            ram_save_slot(s, &s->slot[k]);
    uint64_t hit = lcp(s, &x->p, ids, n_ids);
    *cached = (uint32_t)(hit < prompt_tokens ? hit : prompt_tokens - 1);
    return i;
}

void atr_slots_release(struct atr_slots *s, unsigned i, const uint64_t *ids, uint32_t n_ids,
                       uint64_t tokens)
{
    struct slot *x = &s->slot[i];
    prompt_set(&x->p, ids, n_ids, tokens);
    x->saved = false;
    x->busy = false;
    x->last_used = ++s->clock;
}

bool atr_slots_busy(const struct atr_slots *s, unsigned i)
{
    return s->slot[i].busy;
}

const uint64_t *atr_slots_cached(const struct atr_slots *s, unsigned i, uint32_t *n_ids)
{
    *n_ids = s->slot[i].p.n_ids;
    return s->slot[i].p.ids;
}

void atr_slots_get_stats(const struct atr_slots *s, struct atr_slots_stats *out)
{
    *out = s->st;
    out->ram_tokens = s->ram_total;
    out->ram_entries = (unsigned)s->n_ram;
}
