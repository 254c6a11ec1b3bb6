/* convo.c - chat conversation -> llm steps with prefix-sharing hash ids. */
#include "trace/convo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "util/alloc.h"

void atr_convo_init(struct atr_convo *c, struct atr_trace *t, bool keep_content)
{
    memset(c, 0, sizeof *c);
    c->trace = t;
    c->keep_content = keep_content;
    atr_blockhash_init(&c->hash, t->block_size ? t->block_size : ATR_DEFAULT_BLOCK_SIZE);
}

void atr_convo_release(struct atr_convo *c)
{
    atr_blockhash_release(&c->hash);
}

/* Each message is fed as three pieces (header, text, footer) so that its
 * tokens never depend on the message after it: that is what keeps the
 * prompt of call k a token prefix of the prompt of call k+1. */
void atr_convo_add(struct atr_convo *c, const char *role, const char *text, size_t len)
{
    char header[64];
    size_t rlen = strlen(role);
    if (rlen > sizeof header - 8)
        rlen = sizeof header - 8;
    memcpy(header, "<|", 2);
    memcpy(header + 2, role, rlen);
    memcpy(header + 2 + rlen, "|>\n", 3);
    atr_blockhash_feed(&c->hash, header, rlen + 5);
    atr_blockhash_feed(&c->hash, text, len);
    atr_blockhash_feed(&c->hash, "\n", 1);

    if (c->keep_content) {
        struct atr_arena *a = &c->trace->arena;
        if (!c->pending)
            c->pending = atr_json_new(a, ATR_JSON_ARRAY);
        struct atr_json *m = atr_json_new(a, ATR_JSON_OBJECT);
        atr_json_append(a, m, "role", atr_json_new_str(a, role, strlen(role)));
        atr_json_append(a, m, "content", atr_json_new_str(a, text, len));
        atr_json_append(a, c->pending, NULL, m);
    }
}

struct atr_step *atr_convo_llm(struct atr_convo *c, const char *reply, size_t len)
{
    struct atr_trace *t = c->trace;
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_LLM);
    const struct atr_blockhash *h = &c->hash;
    uint64_t partial = atr_blockhash_partial_id(h);
    s->n_hash_ids = (uint32_t)(h->n_ids + (partial ? 1 : 0));
    s->hash_ids = atr_arena_alloc(&t->arena, (s->n_hash_ids ? s->n_hash_ids : 1) * sizeof(uint64_t));
    if (h->n_ids)
        memcpy(s->hash_ids, h->ids, h->n_ids * sizeof(uint64_t));
    if (partial)
        s->hash_ids[h->n_ids] = partial;
    s->input_tokens = (int64_t)h->tokens;
    s->output_tokens = (int64_t)atr_tokens_estimate(reply, len);
    if (c->mark_origin)
        s->tokens_from = ATR_TOKENS_ESTIMATED;
    if (c->keep_content) {
        struct atr_arena *a = &t->arena;
        s->messages = c->pending ? c->pending : atr_json_new(a, ATR_JSON_ARRAY);
        s->output = atr_json_new_str(a, reply, len);
        c->pending = NULL;
    }
    return s;
}

uint32_t atr_fit_ids_count(uint64_t tokens, uint32_t block_size)
{
    return (uint32_t)((tokens + block_size - 1) / block_size);
}

/* Ids past keep are hashed from (trace id, step, block): unique to the
 * step, so no other prompt is claimed to share them. */
void atr_fit_ids_fill(uint64_t *ids, uint32_t want, const uint64_t *from, uint32_t keep,
                      const char *trace_id, uint32_t step)
{
    const char *id = trace_id ? trace_id : "";
    uint64_t seed = XXH3_64bits_withSeed(id, strlen(id), step);
    if (keep > want)
        keep = want;
    if (keep)
        memmove(ids, from, keep * sizeof *ids);
    for (uint32_t j = keep; j < want; j++)
        ids[j] = XXH3_64bits_withSeed(&j, sizeof j, seed) & ATR_HASH_ID_MASK;
}

static uint32_t common_ids(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb)
{
    uint32_t k = 0;
    while (k < na && k < nb && a[k] == b[k])
        k++;
    return k;
}

static bool fitted(const struct atr_step *s)
{
    return s->kind == ATR_STEP_LLM && s->hash_ids && s->estimated_input_tokens != ATR_UNSET;
}

/* The previous fitted step's state: its estimated ids and full blocks. */
struct fit_prev {
    const struct atr_step *s;
    const uint64_t *est;
    uint32_t n_est;
};

/* How many of prev's fitted ids step s shares: the share of prev's full
 * estimated blocks that s's estimated ids repeat, applied to prev's full
 * recorded blocks. The first step keeps its own estimated ids (prompts of
 * other traces may share them). */
static uint32_t shared_blocks(const struct fit_prev *p, const struct atr_step *s, uint32_t bs)
{
    if (!p->s)
        return s->n_hash_ids;
    uint64_t full_est = (uint64_t)p->s->estimated_input_tokens / bs;
    uint64_t full_rec = (uint64_t)p->s->input_tokens / bs;
    uint64_t same = common_ids(p->est, p->n_est, s->hash_ids, s->n_hash_ids);
    if (same >= full_est)
        return (uint32_t)(full_rec < p->s->n_hash_ids ? full_rec : p->s->n_hash_ids);
    return (uint32_t)(full_rec * same / full_est);
}

/* A call without usage after one with it: the estimator's growth since
 * that call on top of its recorded count (an estimate of the whole prompt
 * would leave out what the source did not show, e.g. the system prompt). */
static void anchor(struct atr_step *s, const struct atr_step *prev)
{
    int64_t grown = s->input_tokens - prev->estimated_input_tokens;
    s->estimated_input_tokens = s->input_tokens;
    s->input_tokens = prev->input_tokens + (grown > 0 ? grown : 0);
}

/* The previous fitted step of each agent, by name (open addressing; the
 * main agent's name is NULL): a sub-agent's prompt goes on from its own
 * last call, not from the parent's calls it interleaves with. A chain has
 * one agent, so one slot. */
struct fit_agents {
    struct fit_slot {
        bool used;
        const char *agent;
        struct fit_prev prev;
    } *slot;
    size_t cap, n;
};

static uint64_t agent_hash(const char *agent)
{
    return agent ? XXH3_64bits(agent, strlen(agent)) : 0;
}

static struct fit_slot *fit_find(struct fit_agents *m, const char *agent)
{
    size_t mask = m->cap - 1, j = agent_hash(agent) & mask;
    for (; m->slot[j].used; j = (j + 1) & mask) {
        const char *a = m->slot[j].agent;
        if (a == agent || (a && agent && strcmp(a, agent) == 0))
            return &m->slot[j];
    }
    return &m->slot[j];
}

static struct fit_prev *fit_prev_of(struct fit_agents *m, const char *agent)
{
    if (2 * (m->n + 1) > m->cap) {
        struct fit_agents g = {xcalloc(m->cap ? 2 * m->cap : 4, sizeof *g.slot),
                               m->cap ? 2 * m->cap : 4, m->n};
        for (size_t k = 0; k < m->cap; k++)
            if (m->slot[k].used)
                *fit_find(&g, m->slot[k].agent) = m->slot[k];
        free(m->slot);
        *m = g;
    }
    struct fit_slot *e = fit_find(m, agent);
    if (!e->used) {
        *e = (struct fit_slot){.used = true, .agent = agent};
        m->n++;
    }
    return &e->prev;
}

void atr_trace_fit_ids(struct atr_trace *t)
{
    uint32_t bs = t->block_size ? t->block_size : ATR_DEFAULT_BLOCK_SIZE;
    struct fit_agents agents = {0};
    for (size_t k = 0; k < t->n_steps; k++) {
        struct atr_step *s = &t->steps[k];
        if (s->kind != ATR_STEP_LLM || !s->hash_ids)
            continue;
        struct fit_prev *prev = fit_prev_of(&agents, s->agent);
        if (prev->s && !fitted(s))
            anchor(s, prev->s);
        if (!fitted(s))
            continue;
        uint32_t want = atr_fit_ids_count((uint64_t)s->input_tokens, bs);
        const uint64_t *from = prev->s ? prev->s->hash_ids : s->hash_ids;
        uint64_t *ids = atr_arena_alloc(&t->arena, (want ? want : 1) * sizeof *ids);
        atr_fit_ids_fill(ids, want, from, shared_blocks(prev, s, bs), t->trace_id, s->i);
        *prev = (struct fit_prev){s, s->hash_ids, s->n_hash_ids};
        s->hash_ids = ids;
        s->n_hash_ids = want;
    }
    free(agents.slot);
}

void atr_step_set_counts(struct atr_step *s, int64_t in, int64_t out, const char *from)
{
    bool out_too = out >= 0;
    if (in >= 0) {
        s->estimated_input_tokens = s->input_tokens;
        s->input_tokens = in;
        s->tokens_from = from;
    }
    if (out_too) {
        s->estimated_output_tokens = s->output_tokens;
        s->output_tokens = out;
    }
    /* One origin for both counts unless they differ. */
    if (in >= 0 && !out_too)
        s->output_tokens_from = ATR_TOKENS_ESTIMATED;
    else if (in < 0 && out_too)
        s->output_tokens_from = from;
}

/* Shares of total proportional to the estimates est[0..n), summing to it. */
static void shares(const int64_t *est, int64_t *out, size_t n, int64_t total)
{
    double sum = 0, cum = 0;
    for (size_t k = 0; k < n; k++)
        sum += (double)est[k];
    int64_t given = 0;
    for (size_t k = 0; k < n; k++) {
        cum += (double)est[k];
        int64_t upto = sum > 0 ? llround(cum * (double)total / sum)
                               : llround((double)(k + 1) * (double)total / (double)n);
        out[k] = upto - given;
        given = upto;
    }
}

static bool scalable(const struct atr_step *s)
{
    return s->kind == ATR_STEP_LLM && s->tokens_from &&
           strcmp(s->tokens_from, ATR_TOKENS_ESTIMATED) == 0 && s->input_tokens >= 0 &&
           s->output_tokens >= 0;
}

void atr_trace_scale_counts(struct atr_trace *t, int64_t total_in, int64_t total_out)
{
    size_t n = 0;
    for (size_t k = 0; k < t->n_steps; k++)
        n += scalable(&t->steps[k]);
    if (!n || (total_in < 1 && total_out < 1))
        return;
    int64_t *v = atr_arena_alloc(&t->arena, 4 * n * sizeof *v);
    int64_t *est_in = v, *est_out = v + n, *in = v + 2 * n, *out = v + 3 * n;
    struct atr_step **steps = atr_arena_alloc(&t->arena, n * sizeof *steps);
    for (size_t k = 0, j = 0; k < t->n_steps; k++)
        if (scalable(&t->steps[k])) {
            steps[j] = &t->steps[k];
            est_in[j] = steps[j]->input_tokens;
            est_out[j++] = t->steps[k].output_tokens;
        }
    shares(est_in, in, n, total_in);
    shares(est_out, out, n, total_out);
    for (size_t j = 0; j < n; j++)
        atr_step_set_counts(steps[j], total_in >= 1 ? in[j] : -1,
                            total_out >= 1 ? out[j] : -1, ATR_TOKENS_SCALED);
}
