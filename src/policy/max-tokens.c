/* max-tokens.c - an output cap per call, predicted from metadata
 * (docs/policies.md): a quantile of the outputs the session produced so
 * far (three or more), else of the recent outputs of all sessions, else a
 * fixed initial guess; times a margin, clamped. An engine reserves KV for
 * max_tokens, so a tight cap frees memory for other requests; a cap below
 * the real output truncates it. Round-robin over replicas.
 *
 * The recorded output is never read to decide, only in finished() to count
 * truncations. What is learned is the produced output, which a cap may
 * have cut (a censored sample; the margin absorbs some of that bias). */
#include "policy/policy-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

#define RESERVOIR 4096                 /* recent outputs over all sessions */
#define VALUE_LIMIT 65536              /* outputs are counted up to this (clamped) */

struct session_outputs {
    uint32_t *sorted;                  /* ascending */
    uint32_t n, cap;
};

struct max_tokens_state {
    double quantile, margin;
    uint32_t initial, min, max, reserve;
    struct session_outputs *ses;
    size_t n_ses;
    uint32_t ring[RESERVOIR];          /* the reservoir, oldest overwritten */
    uint32_t ring_len, ring_next;
    uint32_t fenwick[VALUE_LIMIT + 1]; /* counts of reservoir values, 1-based */
};

static const char *const option_keys[] = {
    "quantile", "margin", "initial", "min", "max", "reserve", NULL,
};

static void fenwick_add(struct max_tokens_state *st, uint32_t value, int32_t delta)
{
    for (uint32_t i = value + 1; i <= VALUE_LIMIT; i += i & -i)
        st->fenwick[i] = (uint32_t)((int32_t)st->fenwick[i] + delta);
}

/* Smallest value whose count of values <= it reaches rank (1-based). */
static uint32_t fenwick_rank(const struct max_tokens_state *st, uint32_t rank)
{
    uint32_t pos = 0;
    for (uint32_t step = VALUE_LIMIT; step; step >>= 1)
        if (pos + step <= VALUE_LIMIT && st->fenwick[pos + step] < rank) {
            pos += step;
            rank -= st->fenwick[pos];
        }
    return pos;                        /* index pos + 1 holds value pos */
}

/* Nearest-rank quantile position among n values (1-based). */
static uint32_t rank_of(double q, uint32_t n)
{
    double r = ceil(q * (double)n);
    return r < 1 ? 1 : r > n ? n : (uint32_t)r;
}

static void remember_global(struct max_tokens_state *st, uint32_t v)
{
    if (st->ring_len == RESERVOIR)
        fenwick_add(st, st->ring[st->ring_next], -1);
    else
        st->ring_len++;
    st->ring[st->ring_next] = v;
    st->ring_next = (st->ring_next + 1) % RESERVOIR;
    fenwick_add(st, v, 1);
}

static struct session_outputs *session_of(struct max_tokens_state *st, size_t i)
{
    if (i >= st->n_ses) {
        size_t n = st->n_ses ? st->n_ses : 16;
        while (n <= i)
            n *= 2;
        struct session_outputs *s = xreallocarray(st->ses, n, sizeof *s);
        memset(s + st->n_ses, 0, (n - st->n_ses) * sizeof *s);
        st->ses = s;
        st->n_ses = n;
    }
    return &st->ses[i];
}

static void remember_session(struct session_outputs *s, uint32_t v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->sorted = xreallocarray(s->sorted, s->cap, sizeof *s->sorted);
    }
    uint32_t i = s->n++;
    for (; i && s->sorted[i - 1] > v; i--)
        s->sorted[i] = s->sorted[i - 1];
    s->sorted[i] = v;
}

/* The predicted output length before margin and clamping. */
static double predict(const struct max_tokens_state *st, const struct session_outputs *s)
{
    if (s && s->n >= 3)
        return s->sorted[rank_of(st->quantile, s->n) - 1];
    if (st->ring_len)
        return fenwick_rank(st, rank_of(st->quantile, st->ring_len));
    return st->initial;
}

static void decide(struct atr_policy *p, const struct atr_policy_req *r,
                   struct atr_policy_decision *d)
{
    struct max_tokens_state *st = p->state;
    const struct session_outputs *s = r->session < st->n_ses ? &st->ses[r->session] : NULL;
    double cap = ceil(predict(st, s) * st->margin);
    d->max_tokens = cap < st->min ? st->min : cap > st->max ? st->max : (uint32_t)cap;
    d->replica = atr_policy_round_robin(p);
}

static void finished(struct atr_policy *p, const struct atr_policy_req *r,
                     const struct atr_policy_decision *d, const struct atr_policy_outcome *o)
{
    struct max_tokens_state *st = p->state;
    uint32_t cap = d->max_tokens;
    if (cap) {
        if (r->recorded_output_tokens > cap) {
            p->stats.truncated++;
            p->stats.tokens_cut += r->recorded_output_tokens - cap;
        }
        p->stats.reserved_tokens += cap;
        p->stats.reserve_saved += st->reserve > cap ? st->reserve - cap : 0;
    }
    if (!o->success)
        return;                        /* a failed call says nothing about lengths */
    uint32_t v = o->output_tokens < VALUE_LIMIT ? o->output_tokens : VALUE_LIMIT - 1;
    remember_session(session_of(st, r->session), v);
    remember_global(st, v);
}

static void free_state(struct atr_policy *p)
{
    struct max_tokens_state *st = p->state;
    for (size_t i = 0; i < st->n_ses; i++)
        free(st->ses[i].sorted);
    free(st->ses);
    free(st);
    p->state = NULL;
}

static int init(struct atr_policy *p, const struct atr_policy_cfg *cfg, struct atr_error *err)
{
    double q, margin, initial, lo, hi, reserve;
    (void)cfg;
    if (atr_policy_opt_num(p, "quantile", 0.9, 0, 1, &q, err) < 0 ||
        atr_policy_opt_num(p, "margin", 1.25, 0.1, 100, &margin, err) < 0 ||
        atr_policy_opt_num(p, "initial", 512, 1, 1e7, &initial, err) < 0 ||
        atr_policy_opt_num(p, "min", 16, 1, 1e7, &lo, err) < 0 ||
        atr_policy_opt_num(p, "max", 4096, 1, 1e7, &hi, err) < 0 ||
        atr_policy_opt_num(p, "reserve", 4096, 1, 1e7, &reserve, err) < 0)
        return -1;
    if (lo > hi)
        return atr_error_set(err, "policy max-tokens: min (%g) is above max (%g)", lo, hi);
    struct max_tokens_state *st = xcalloc(1, sizeof *st);
    st->quantile = q;
    st->margin = margin;
    st->initial = (uint32_t)initial;
    st->min = (uint32_t)lo;
    st->max = (uint32_t)hi;
    st->reserve = (uint32_t)reserve;
    p->state = st;
    return 0;
}

const struct atr_policy_ops atr_policy_max_tokens = {
    .name = "max-tokens", .option_keys = option_keys, .init = init, .decide = decide,
    .finished = finished, .free_state = free_state,
};
