/* train.c - labels from simulated candidate runs, MLP training and
 * held-out evaluation for the learned router (see train.h). */
#include "router/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/learned-features.h"
#include "policy/policy.h"
#include "util/alloc.h"

bool atr_router_held_out(const char *trace_id, uint64_t seed, double fraction)
{
    uint64_t h = 0xcbf29ce484222325ull;                   /* FNV-1a */
    for (const char *c = trace_id ? trace_id : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    h ^= seed + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;                                         /* splitmix64 finaliser */
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return (double)(h >> 11) * 0x1p-53 < fraction;
}

/* What a run tells about one request. */
struct outcome {
    const char *trace_id;         /* the workload's pointer: identifies the session */
    int64_t turn;
    double start, end, ttft;
    uint32_t prompt_tokens, output_tokens, cached_tokens;
    uint64_t sent;                /* candidate runs: decision_digest of what was sent */
    bool ok;                      /* answered: a refused or timed-out request's
                                     latency is no latency, never a win */
};

/* Row of each session's first turn, and the session of a trace id pointer. */
struct rows {
    const struct atr_workload *w;
    size_t *base;
};

/* The row of a session's turn, or -1. Records carry the workload's own
 * trace_id pointer: a linear search is cheap next to a simulation, and
 * needs no index. */
static long row_at(const struct rows *rw, const char *trace_id, int64_t turn)
{
    for (size_t s = 0; s < rw->w->n_sessions; s++)
        if (rw->w->sessions[s].trace_id == trace_id)
            return turn >= 0 && (size_t)turn < rw->w->sessions[s].n_turns
                       ? (long)(rw->base[s] + (size_t)turn) : -1;
    return -1;
}

static long row_of(const struct rows *rw, const struct outcome *o)
{
    return row_at(rw, o->trace_id, o->turn);
}

/* A digest of where and what prompt a policy sent for a request: its
 * replica, salt and prompt (length and block ids). Two candidates that
 * sent the same prompt to the same replica have the same digest, whatever
 * the engine then made of it. (An output cap is told by the output length
 * it left: a cap above the answer changes nothing.) */
static uint64_t decision_digest(const struct atr_policy_decision *d)
{
    uint64_t h = 0xcbf29ce484222325ull;                   /* FNV-1a over the fields */
    uint64_t f[] = { d->replica, d->salt, d->prompt_tokens, d->n_ids };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        h = (h ^ f[i]) * 0x100000001b3ull;
    for (uint32_t i = 0; d->ids && i < d->n_ids; i++)
        h = (h ^ d->ids[i]) * 0x100000001b3ull;
    return h;
}

/* on_decision: each row's decision digest, into sent[row]. */
struct decisions {
    const struct rows *rw;
    uint64_t *sent;
};

static void note_decision(void *ctx, const char *trace_id, size_t turn,
                          const struct atr_policy_decision *dec)
{
    struct decisions *k = ctx;
    long r = row_at(k->rw, trace_id, (int64_t)turn);
    if (r >= 0)
        k->sent[r] = decision_digest(dec);
}

/* Runs the sessions with keep[i] (NULL: all) under policy name, and
 * keeps what each request's record tells (and, with decisions, what the
 * policy sent). */
static int run_policy(const struct atr_router_sim *sim, const bool *keep, const char *name,
                      const char *options, struct decisions *decisions,
                      struct outcome **out, size_t *n_out, struct atr_error *err)
{
    struct atr_exp_cfg cfg = {
        .workload = sim->workload, .schedule = sim->schedule,
        .max_concurrency = sim->max_concurrency, .keep = keep, .policy = name,
        .policy_options = options, .seed = sim->seed,
        .on_decision = decisions ? note_decision : NULL, .decision_ctx = decisions,
    };
    struct atr_exp_result res;
    if (atr_exp_run(sim->target, &cfg, &res, err) < 0)
        return -1;
    *out = xcalloc(res.n, sizeof **out);
    *n_out = res.n;
    for (size_t i = 0; i < res.n; i++) {
        const struct atr_llm_record *r = &res.recs[i];
        (*out)[i] = (struct outcome){
            .trace_id = r->trace_id, .turn = r->turn, .start = r->start_s, .end = r->end_s,
            .ttft = atr_llm_ttft_s(r),
            .prompt_tokens = (uint32_t)r->prompt_tokens,
            .output_tokens = (uint32_t)r->output_tokens,
            .cached_tokens = (uint32_t)r->cached_tokens,
            .ok = r->success,
        };
    }
    atr_exp_result_release(&res);
    return 0;
}

int atr_router_simulate(const struct atr_router_sim *sim, const bool *keep, const char *policy,
                        const char *options, double *mean_e2el, double *mean_ttft,
                        struct atr_error *err)
{
    struct outcome *o = NULL;
    size_t n = 0;
    if (run_policy(sim, keep, policy, options, NULL, &o, &n, err) < 0)
        return -1;
    double e = 0, t = 0;
    size_t answered = 0;        /* means over answered requests, as vLLM's */
    for (size_t i = 0; i < n; i++) {
        if (!o[i].ok)
            continue;
        e += o[i].end - o[i].start;
        t += o[i].ttft;
        answered++;
    }
    *mean_e2el = answered ? e / (double)answered : 0;
    *mean_ttft = answered ? t / (double)answered : 0;
    free(o);
    return 0;
}

/* Runs every candidate: objective per (row, candidate), what each sent in
 * sent[row * nc + c], and the default's outcome per row in by_row. */
static int candidate_runs(const struct atr_router_sim *sim, const struct atr_router_label_cfg *cfg,
                          const struct rows *rw, struct atr_router_data *d,
                          struct outcome *by_row, struct outcome *sent, struct atr_error *err)
{
    size_t nc = cfg->n_candidates, ng = cfg->group ? cfg->n_groups : 1;
    bool *keep = cfg->group ? xcalloc(rw->w->n_sessions, sizeof *keep) : NULL;
    struct decisions dec = { rw, xcalloc(d->n ? d->n : 1, sizeof *dec.sent) };
    int rc = 0;
    for (size_t k = 0; k < nc * ng && rc == 0; k++) {
        size_t c = k % nc, g = k / nc;
        for (size_t s = 0; keep && s < rw->w->n_sessions; s++)
            keep[s] = cfg->group[s] == g;
        struct outcome *o = NULL;
        size_t n = 0;
        if ((rc = run_policy(sim, keep, cfg->candidates[c], NULL, &dec, &o, &n, err)) < 0)
            break;
        for (size_t i = 0; i < n; i++) {
            long r = row_of(rw, &o[i]);
            if (r < 0)
                continue;
            d->objective[(size_t)r * nc + c] =
                !o[i].ok ? INFINITY
                : cfg->objective == ATR_ROUTER_TTFT ? o[i].ttft : o[i].end - o[i].start;
            o[i].sent = dec.sent[r];
            sent[(size_t)r * nc + c] = o[i];
            if (c == d->default_candidate)
                by_row[r] = o[i];
        }
        free(o);
    }
    free(dec.sent);
    free(keep);
    return rc;
}

/* The request fields the driver would have filled, from the default's run. */
static void features(const struct rows *rw, const struct outcome *by_row, struct atr_router_data *d)
{
    struct atr_router_fstate st = ATR_ROUTER_FSTATE_INIT;
    const struct atr_workload *w = rw->w;
    for (size_t s = 0; s < w->n_sessions; s++) {
        double out_sum = 0;
        for (size_t t = 0; t < w->sessions[s].n_turns; t++) {
            size_t row = rw->base[s] + t;
            const struct atr_turn *u = &w->sessions[s].turns[t];
            const struct outcome *prev = t ? &by_row[row - 1] : NULL;
            struct atr_policy_req req = {
                .id = row, .session = s, .turn = t, .prompt_tokens = u->prompt_tokens,
                .ids = u->ids, .n_ids = u->n_ids, .block_size = w->block_size,
                .now = by_row[row].start, .think_s = u->think_s, .prev_tool = u->prev_tool,
                .since_last_s = prev ? by_row[row].start - prev->end : 0,
                .prev_output_tokens = prev ? prev->output_tokens : 0,
                .mean_output_tokens = t ? out_sum / (double)t : 0,
                .recorded_output_tokens = u->output_tokens,
            };
            atr_router_features(&st, &req, d->x + row * ATR_ROUTER_N_FEATURES);
            out_sum += by_row[row].output_tokens;
            d->session[row] = s;
        }
    }
    atr_router_fstate_release(&st);
}

/* The default unless another candidate beats it by more than margin. */
static uint32_t pick(const double *obj, size_t nc, size_t def, double margin)
{
    size_t best = def;
    for (size_t c = 0; c < nc; c++)
        if (obj[c] < obj[best])
            best = c;
    return (uint32_t)(obj[def] <= obj[best] * (1 + margin) ? def : best);
}

/* Whether candidate c sent the request at row otherwise than the default
 * did: another replica, a salt, another prompt (the decisions compared,
 * not what the engine made of them), or an output cut shorter. A candidate that
 * sent the same request is credited with the default's latency, so the
 * shared engine's noise cannot win it the label: its run differs only by
 * the other requests' decisions (a lighter engine, another cache), which
 * this request's metadata cannot foresee. */
static bool acted(const struct outcome *sent, size_t row, size_t nc, size_t c, size_t def)
{
    const struct outcome *a = &sent[row * nc + c], *b = &sent[row * nc + def];
    return a->sent != b->sent || a->output_tokens != b->output_tokens;
}

/* Whether candidate c's request produced fewer output tokens than the
 * default's: a cut answer, shorter but not faster (--cut-wins no). */
static bool cut(const struct outcome *sent, size_t row, size_t nc, size_t c, size_t def)
{
    return sent[row * nc + c].output_tokens < sent[row * nc + def].output_tokens;
}

static void labels(const struct rows *rw, const struct atr_router_label_cfg *cfg,
                   const struct outcome *sent, struct atr_router_data *d)
{
    size_t nc = cfg->n_candidates, def = d->default_candidate;
    for (size_t s = 0; s < rw->w->n_sessions; s++) {
        size_t b = rw->base[s], nt = rw->w->sessions[s].n_turns;
        double sum[ATR_ROUTER_MAX_CANDIDATES] = { 0 };
        for (size_t t = 0; t < nt; t++) {
            double obj[ATR_ROUTER_MAX_CANDIDATES];
            for (size_t c = 0; c < nc; c++) {
                bool a = acted(sent, b + t, nc, c, def);
                obj[c] = d->objective[(b + t) * nc + (a ? c : def)];
                if (!cfg->cut_wins && cut(sent, b + t, nc, c, def) && obj[c] < obj[def])
                    obj[c] = obj[def];
                sum[c] += obj[c];
            }
            d->y[b + t] = pick(obj, nc, def, cfg->margin);
        }
        if (cfg->by_session)
            for (size_t t = 0; t < nt; t++)
                d->y[b + t] = pick(sum, nc, d->default_candidate, cfg->margin);
        size_t g = cfg->group ? cfg->group[s] : 0;
        bool held = cfg->held_group ? cfg->held_group[g]
                    : atr_router_held_out(rw->w->sessions[s].trace_id, cfg->split_seed,
                                          cfg->holdout);
        for (size_t t = 0; t < nt; t++) {
            d->held_out[b + t] = held;
            d->group[b + t] = g;
        }
        if (nt)
            *(held ? &d->n_sessions_held_out : &d->n_sessions_train) += 1;
    }
}

static int check_candidates(const struct atr_router_label_cfg *cfg, struct atr_error *err)
{
    if (cfg->n_candidates < 2 || cfg->n_candidates > ATR_ROUTER_MAX_CANDIDATES)
        return atr_error_set(err, "router: wants 2..%d candidate policies, not %zu",
                             ATR_ROUTER_MAX_CANDIDATES, cfg->n_candidates);
    for (size_t c = 0; c < cfg->n_candidates; c++)
        if (strcmp(cfg->candidates[c], "learned") == 0)
            return atr_error_set(err, "router: learned cannot be its own candidate");
    return 0;
}

int atr_router_label(const struct atr_router_sim *sim, const struct atr_router_label_cfg *cfg,
                     struct atr_router_data *out, struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    if (check_candidates(cfg, err) < 0)
        return -1;
    const struct atr_workload *w = sim->workload;
    struct rows rw = { w, xcalloc(w->n_sessions, sizeof *rw.base) };
    size_t n = 0, nc = cfg->n_candidates;
    for (size_t s = 0; s < w->n_sessions; s++) {
        rw.base[s] = n;
        n += w->sessions[s].n_turns;
    }
    struct atr_router_data *d = out;
    d->n = n;
    d->n_candidates = nc;
    for (size_t c = 0; c < nc; c++)
        if (strcmp(cfg->candidates[c], "prefix-cache") == 0)
            d->default_candidate = c;
    d->x = xcalloc(n * ATR_ROUTER_N_FEATURES, sizeof *d->x);
    d->y = xcalloc(n, sizeof *d->y);
    d->objective = xcalloc(n * nc, sizeof *d->objective);
    d->session = xcalloc(n, sizeof *d->session);
    d->held_out = xcalloc(n, sizeof *d->held_out);
    d->group = xcalloc(n, sizeof *d->group);
    struct outcome *by_row = xcalloc(n, sizeof *by_row), *sent = xcalloc(n * nc, sizeof *sent);
    int rc = candidate_runs(sim, cfg, &rw, d, by_row, sent, err);
    if (rc == 0) {
        features(&rw, by_row, d);
        labels(&rw, cfg, sent, d);
    }
    free(by_row);
    free(sent);
    free(rw.base);
    if (rc < 0)
        atr_router_data_release(d);
    return rc;
}

void atr_router_data_release(struct atr_router_data *d)
{
    free(d->x);
    free(d->y);
    free(d->objective);
    free(d->session);
    free(d->held_out);
    free(d->group);
    memset(d, 0, sizeof *d);
}

void atr_router_split_groups(struct atr_router_data *d, const bool *held_group)
{
    d->n_sessions_held_out = d->n_sessions_train = 0;
    for (size_t i = 0; i < d->n; i++) {
        d->held_out[i] = held_group[d->group[i]];
        if (i == 0 || d->session[i] != d->session[i - 1])   /* rows are in session order */
            *(d->held_out[i] ? &d->n_sessions_held_out : &d->n_sessions_train) += 1;
    }
}

bool atr_router_split_sound(const struct atr_router_data *d)
{
    size_t n_ses = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->session[i] + 1 > n_ses)
            n_ses = d->session[i] + 1;
    signed char *side = xcalloc(n_ses ? n_ses : 1, 1);   /* 0 unseen, 1 train, 2 held out */
    bool sound = true;
    for (size_t i = 0; i < d->n && sound; i++) {
        signed char v = d->held_out[i] ? 2 : 1;
        sound = !side[d->session[i]] || side[d->session[i]] == v;
        side[d->session[i]] = v;
    }
    free(side);
    return sound;
}

/* Per training row (rows not held out, in order): 1 / its group's training
 * rows, scaled to mean 1, so every source weighs the same in the loss. */
static double *source_weights(const struct atr_router_data *d, size_t n)
{
    size_t ng = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->group[i] + 1 > ng)
            ng = d->group[i] + 1;
    size_t *count = xcalloc(ng, sizeof *count), groups = 0;
    for (size_t i = 0; i < d->n; i++)
        if (!d->held_out[i])
            groups += count[d->group[i]]++ == 0;
    double *w = xcalloc(n, sizeof *w);
    for (size_t i = 0, k = 0; i < d->n; i++)
        if (!d->held_out[i])
            w[k++] = (double)n / ((double)groups * (double)count[d->group[i]]);
    free(count);
    return w;
}

uint32_t atr_router_constant_inputs(const struct atr_router_data *d)
{
    uint32_t constant = 0;
    for (size_t f = 0; f < ATR_ROUTER_N_FEATURES; f++) {
        bool seen = false, one = true;
        double v0 = 0;
        for (size_t i = 0; i < d->n && one; i++) {
            if (d->held_out[i])
                continue;
            double v = d->x[i * ATR_ROUTER_N_FEATURES + f];
            one = !seen || v == v0;
            v0 = seen ? v0 : v;
            seen = true;
        }
        constant |= (uint32_t)one << f;
    }
    return constant;
}

int atr_router_train(const struct atr_router_data *d, const struct atr_router_train_cfg *cfg,
                     struct atr_mlp *out, struct atr_error *err)
{
    size_t hidden[2], nh = 0, n = 0;
    for (size_t i = 0; i < 2 && cfg->hidden[i]; i++)
        hidden[nh++] = cfg->hidden[i];
    for (size_t i = 0; i < d->n; i++)
        n += !d->held_out[i];
    if (n == 0)
        return atr_error_set(err, "router: no training sessions (every session is held out)");
    if (atr_mlp_init(out, ATR_ROUTER_N_FEATURES, hidden, nh, d->n_candidates, cfg->seed, err) < 0)
        return -1;
    uint32_t used = (cfg->inputs ? cfg->inputs : ~0u) & ~atr_router_constant_inputs(d);
    double *x = xcalloc(n * ATR_ROUTER_N_FEATURES, sizeof *x), *sw = NULL;
    uint32_t *y = xcalloc(n, sizeof *y);
    for (size_t i = 0, k = 0; i < d->n; i++) {
        if (d->held_out[i])
            continue;
        for (size_t f = 0; f < ATR_ROUTER_N_FEATURES; f++)
            x[k * ATR_ROUTER_N_FEATURES + f] = used >> f & 1 ? d->x[i * ATR_ROUTER_N_FEATURES + f]
                                                             : 0;
        y[k++] = d->y[i];
    }
    struct atr_mlp_layer *L = &out->layers[0];
    for (size_t o = 0; o < L->out; o++)          /* unused inputs: weight 0, gradient 0 */
        for (size_t f = 0; f < L->in; f++)
            if (!(used >> f & 1))
                L->w[o * L->in + f] = 0;
    if (cfg->balance_sources)
        sw = source_weights(d, n);
    atr_mlp_fit_standardize(out, x, n);
    struct atr_mlp_train_cfg tc = { .epochs = cfg->epochs, .batch = cfg->batch, .lr = cfg->lr,
                                    .l2 = cfg->l2, .seed = cfg->seed, .sample_weight = sw };
    atr_mlp_train(out, x, y, n, &tc);
    free(x);
    free(y);
    free(sw);
    return 0;
}

/* One training row's value of the feature being swept, and its label. */
struct valued {
    double v;
    uint32_t y;
};

static int by_value(const void *a, const void *b)
{
    double x = ((const struct valued *)a)->v, y = ((const struct valued *)b)->v;
    return (x > y) - (x < y);
}

/* The most frequent of counts[0..nc) (lowest index on ties), its count in *hits. */
static uint32_t most(const size_t *counts, size_t nc, size_t *hits)
{
    uint32_t best = 0;
    for (uint32_t c = 1; c < nc; c++)
        if (counts[c] > counts[best])
            best = c;
    *hits = counts[best];
    return best;
}

/* The best threshold on one feature's sorted values v[0..n): a cut
 * between two adjacent distinct values, each side its majority label. */
static void sweep(const struct valued *v, size_t n, size_t nc, size_t f, size_t *best,
                  struct atr_router_rule *out)
{
    size_t total[ATR_ROUTER_MAX_CANDIDATES] = { 0 }, left[ATR_ROUTER_MAX_CANDIDATES] = { 0 };
    size_t right[ATR_ROUTER_MAX_CANDIDATES];
    for (size_t i = 0; i < n; i++)
        total[v[i].y]++;
    for (size_t i = 0; i + 1 < n; i++) {
        left[v[i].y]++;
        if (v[i + 1].v == v[i].v)
            continue;
        for (size_t c = 0; c < nc; c++)
            right[c] = total[c] - left[c];
        size_t hl, hr;
        uint32_t below = most(left, nc, &hl), above = most(right, nc, &hr);
        if (hl + hr > *best) {
            *best = hl + hr;
            *out = (struct atr_router_rule){ f, v[i].v + (v[i + 1].v - v[i].v) / 2, below, above };
        }
    }
}

void atr_router_rule_fit(const struct atr_router_data *d, struct atr_router_rule *out)
{
    uint32_t def = (uint32_t)d->default_candidate;
    *out = (struct atr_router_rule){ 0, INFINITY, def, def };
    size_t n = 0, nc = d->n_candidates;
    for (size_t i = 0; i < d->n; i++)
        n += !d->held_out[i];
    if (n == 0)
        return;
    struct valued *v = xcalloc(n, sizeof *v);
    size_t total[ATR_ROUTER_MAX_CANDIDATES] = { 0 }, best;
    for (size_t i = 0; i < d->n; i++)
        total[d->y[i]] += !d->held_out[i];
    uint32_t maj = most(total, nc, &best);      /* no cut: one label everywhere */
    *out = (struct atr_router_rule){ 0, INFINITY, maj, maj };
    for (size_t f = 0; f < ATR_ROUTER_N_FEATURES; f++) {
        for (size_t i = 0, k = 0; i < d->n; i++)
            if (!d->held_out[i])
                v[k++] = (struct valued){ d->x[i * ATR_ROUTER_N_FEATURES + f], d->y[i] };
        qsort(v, n, sizeof *v, by_value);
        sweep(v, n, nc, f, &best, out);
    }
    free(v);
}

uint32_t atr_router_rule_predict(const struct atr_router_rule *r, const double *x)
{
    return x[r->feature] <= r->threshold ? r->below : r->above;
}

/* Scores m, and the single-feature rule fitted on the training rows, on
 * the rows of d that keep(d, i, arg) selects. */
static void score_rows(const struct atr_mlp *m, const struct atr_router_data *d,
                       bool (*keep)(const struct atr_router_data *, size_t, const void *),
                       const void *arg, struct atr_router_eval *out)
{
    memset(out, 0, sizeof *out);
    atr_router_rule_fit(d, &out->rule);
    size_t count[ATR_ROUTER_MAX_CANDIDATES] = { 0 };
    for (size_t i = 0; i < d->n; i++) {
        if (!keep(d, i, arg))
            continue;
        const double *x = d->x + i * ATR_ROUTER_N_FEATURES;
        size_t p = atr_mlp_predict(m, x);
        out->confusion[d->y[i]][p]++;
        out->correct += p == d->y[i];
        out->rule_correct += atr_router_rule_predict(&out->rule, x) == d->y[i];
        count[d->y[i]]++;
        out->n++;
    }
    for (size_t c = 0; c < d->n_candidates; c++)
        if (count[c] > count[out->majority])
            out->majority = c;
    out->majority_correct = count[out->majority];
}

static bool keep_held_out(const struct atr_router_data *d, size_t i, const void *all)
{
    return *(const bool *)all || d->held_out[i];
}

static bool keep_group(const struct atr_router_data *d, size_t i, const void *g)
{
    return d->group[i] == *(const size_t *)g;
}

void atr_router_evaluate(const struct atr_mlp *m, const struct atr_router_data *d, bool all,
                         struct atr_router_eval *out)
{
    score_rows(m, d, keep_held_out, &all, out);
}

void atr_router_eval_add(struct atr_router_eval *sum, const struct atr_router_eval *e, size_t nc)
{
    sum->n += e->n;
    sum->correct += e->correct;
    sum->rule_correct += e->rule_correct;
    size_t count[ATR_ROUTER_MAX_CANDIDATES] = { 0 };
    for (size_t r = 0; r < nc; r++)
        for (size_t c = 0; c < nc; c++) {
            sum->confusion[r][c] += e->confusion[r][c];
            count[r] += sum->confusion[r][c];
        }
    sum->majority = 0;
    for (size_t r = 1; r < nc; r++)
        if (count[r] > count[sum->majority])
            sum->majority = r;
    sum->majority_correct = count[sum->majority];
}

/* Scores m on the rows of group g. */
static void evaluate_group(const struct atr_mlp *m, const struct atr_router_data *d, size_t g,
                           struct atr_router_eval *out)
{
    score_rows(m, d, keep_group, &g, out);
}

int atr_router_fold(struct atr_router_data *d, size_t n_groups, size_t g, size_t skip,
                    const struct atr_router_train_cfg *cfg, struct atr_router_eval *ev,
                    struct atr_error *err)
{
    bool *held = xcalloc(n_groups ? n_groups : 1, sizeof *held);
    for (size_t k = 0; k < n_groups; k++)
        held[k] = k == g || k == skip;
    atr_router_split_groups(d, held);
    free(held);
    if (!atr_router_split_sound(d))             /* sessions lie in one group */
        return atr_error_set(err, "router: a session on both sides of the split");
    bool trainable = false;
    for (size_t i = 0; i < d->n && !trainable; i++)
        trainable = !d->held_out[i];
    if (!trainable)                             /* no other group: nothing to train on */
        return 0;
    struct atr_mlp m;
    memset(&m, 0, sizeof m);
    int rc = atr_router_train(d, cfg, &m, err);
    if (rc == 0)
        evaluate_group(&m, d, g, ev);
    atr_mlp_release(&m);
    return rc < 0 ? -1 : 1;
}

int atr_router_loso(struct atr_router_data *d, size_t n_groups, size_t skip,
                    const struct atr_router_train_cfg *cfg, struct atr_router_eval *pooled,
                    struct atr_router_eval *per_group, struct atr_error *err)
{
    bool *has = xcalloc(n_groups ? n_groups : 1, sizeof *has);
    for (size_t i = 0; i < d->n; i++)
        has[d->group[i]] = true;
    if (per_group)
        memset(per_group, 0, n_groups * sizeof *per_group);
    int rc = 0;
    for (size_t g = 0; g < n_groups && rc >= 0; g++) {
        if (!has[g] || g == skip)
            continue;
        struct atr_router_eval ev;
        if ((rc = atr_router_fold(d, n_groups, g, skip, cfg, &ev, err)) == 1) {
            atr_router_eval_add(pooled, &ev, d->n_candidates);
            if (per_group)
                per_group[g] = ev;
        }
    }
    free(has);
    return rc < 0 ? -1 : 0;
}

int atr_router_select(struct atr_router_data *d, size_t n_groups, size_t skip,
                      const struct atr_router_train_cfg *grid, size_t n_grid, size_t *best,
                      struct atr_error *err)
{
    double best_acc = -1;
    *best = 0;
    for (size_t k = 0; k < n_grid; k++) {
        struct atr_router_eval pool;
        memset(&pool, 0, sizeof pool);
        if (atr_router_loso(d, n_groups, skip, &grid[k], &pool, NULL, err) < 0)
            return -1;
        double acc = pool.n ? (double)pool.correct / (double)pool.n : 0;
        if (acc > best_acc) {
            best_acc = acc;
            *best = k;
        }
    }
    return 0;
}
