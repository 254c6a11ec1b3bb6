/* report.c - `atr bench report` (report.h): groups of results, and per
 * group the baseline/human/agent comparison over repeats: per commit and
 * variant the successful runs' figures, the ratios of their medians with
 * 95 % intervals and verdicts (stats/ci.h), true success, and per agent
 * the outcome counts. Writers: report-md.c, report-data.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report-impl.h"
#include "util/alloc.h"

const struct metric_info report_metrics[METRICS] = {
    [M_TOK_S] = {"tok_s", "output tok/s", true},
    [M_TTFT] = {"ttft_ms", "TTFT median ms", false},
    [M_TPOT] = {"tpot_ms", "TPOT median ms", false},
    [M_ITL] = {"itl_ms", "ITL median ms", false},
    [M_E2EL] = {"e2el_ms", "E2EL median ms", false},
};

struct atr_bench_report *atr_bench_report_new(double noise_pct)
{
    struct atr_bench_report *r = xcalloc(1, sizeof *r);
    r->noise = noise_pct / 100;
    return r;
}

void atr_bench_report_free(struct atr_bench_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->g[i].name);
        atr_bench_set_release(&r->g[i].set);
    }
    free(r->g);
    free(r);
}

void atr_bench_report_add(struct atr_bench_report *r, const char *name, struct atr_bench_set *s)
{
    size_t i = 0;
    while (i < r->n && strcmp(r->g[i].name, name) != 0)
        i++;
    if (i == r->n) {
        r->g = xreallocarray(r->g, r->n + 1, sizeof *r->g);
        r->g[r->n++] = (struct group){xstrdup(name), {0}};
    }
    struct atr_bench_set *d = &r->g[i].set;
    for (size_t k = 0; k < s->n; k++) {
        if (d->n == d->cap) {
            d->cap = d->cap ? 2 * d->cap : 16;
            d->v = xreallocarray(d->v, d->cap, sizeof *d->v);
        }
        d->v[d->n++] = s->v[k];
    }
    free(s->v);
    *s = (struct atr_bench_set){0};
}

struct counts report_count(const struct atr_bench_set *s)
{
    struct counts c = {0};
    for (size_t i = 0; i < s->n; i++) {
        c.total++;
        c.status[s->v[i].status]++;
        c.outcome[s->v[i].outcome]++;
    }
    return c;
}

double report_pct(size_t k, size_t n)
{
    return n ? 100.0 * (double)k / (double)n : 0;
}

const char *report_verdict(const struct ratio *r)
{
    return r->has ? atr_verdict_name(r->verdict) : NULL;
}

/* ---- which results belong together ---- */

static double metric_of(const struct atr_bench_result *r, enum metric m)
{
    switch (m) {
    case M_TOK_S: return r->tok_s;
    case M_TTFT: return r->ttft_p50_ms;
    case M_TPOT: return r->tpot_p50_ms;
    case M_ITL: return r->itl_p50_ms;
    default: return r->e2el_p50_ms;
    }
}

static bool is_variant(const struct atr_bench_result *r, const char *v)
{
    return r->variant && strcmp(r->variant, v) == 0;
}

static bool is_agent(const struct atr_bench_result *r)
{
    return r->commit && !is_variant(r, "baseline") && !is_variant(r, "human");
}

/* An agent's name: its agent, else its variant ("agent" in ISO-Bench's
 * files, a named variant such as "agent-no-cuda-graphs" in atr's). */
static const char *agent_key(const struct atr_bench_result *r)
{
    return r->agent ? r->agent : r->variant;
}

static bool same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static bool of_commit(const struct atr_bench_result *r, const char *commit)
{
    return r->commit && strcmp(r->commit, commit) == 0;
}

/* Does r belong to the cell of variant (baseline, human) or, with variant
 * NULL, of the agent named agent? */
static bool in_cell(const struct atr_bench_result *r, const char *commit, const char *variant,
                    const char *agent)
{
    if (!of_commit(r, commit))
        return false;
    return variant ? is_variant(r, variant) : is_agent(r) && same(agent_key(r), agent);
}

static void cell_add(struct cell *c, const struct atr_bench_result *r)
{
    c->runs++;
    if (r->outcome != ATR_BENCH_SUCCESS)
        return;
    c->ok++;
    for (int m = 0; m < METRICS; m++) {
        double x = metric_of(r, m);
        if (!isfinite(x))
            continue;
        c->v[m] = xreallocarray(c->v[m], c->n[m] + 1, sizeof *c->v[m]);
        c->rep[m] = xreallocarray(c->rep[m], c->n[m] + 1, sizeof *c->rep[m]);
        c->rep[m][c->n[m]] = r->repeat;
        c->v[m][c->n[m]++] = x;
    }
}

static void cell_fill(struct cell *c, const struct atr_bench_set *s, const char *commit,
                      const char *variant, const char *agent)
{
    *c = (struct cell){0};
    for (size_t i = 0; i < s->n; i++)
        if (in_cell(&s->v[i], commit, variant, agent))
            cell_add(c, &s->v[i]);
    for (int m = 0; m < METRICS; m++) {
        struct atr_ci ci;
        atr_ci_median(c->v[m], c->n[m], ATR_CI_SEED, &ci);
        c->median[m] = ci.point;
    }
}

static void cell_release(struct cell *c)
{
    for (int m = 0; m < METRICS; m++) {
        free(c->v[m]);
        free(c->rep[m]);
    }
}

/* ---- ratios and verdicts ---- */

static struct ratio ratio_of(const struct cell *ref, const struct cell *cand, enum metric m,
                             double noise)
{
    struct ratio r = {.has = ref->n[m] && cand->n[m]};
    if (!r.has)
        return r;
    /* Rounds of an interleaved run are pairs; otherwise the two sides are
     * independent samples (docs/statistics.md). */
    double *a = xcalloc(ref->n[m], sizeof *a), *b = xcalloc(ref->n[m], sizeof *b);
    size_t pairs = atr_ci_pair_rounds(ref->rep[m], ref->v[m], ref->n[m], cand->rep[m],
                                      cand->v[m], cand->n[m], a, b);
    if (pairs >= 2 && pairs == ref->n[m] && pairs == cand->n[m])   /* every round, both sides */
        atr_ci_ratio_paired(a, b, pairs, &r.ci);
    else
        atr_ci_ratio(ref->v[m], ref->n[m], cand->v[m], cand->n[m], ATR_CI_SEED, &r.ci);
    free(a);
    free(b);
    /* One value a side against several has no interval, but its ratio of
     * medians is still the point shown. A reference median of 0 (chunks
     * that reached the client in one read have an ITL of 0) gives no
     * ratio: "-", never a verdict. */
    if (isnan(r.ci.point))
        r.ci.point = cand->median[m] / ref->median[m];
    r.has = isfinite(r.ci.point);
    r.verdict = atr_verdict_of(&r.ci, report_metrics[m].higher_is_better, noise);
    return r;
}

static void tally_add(struct tally *t, const struct ratio *r)
{
    if (!r->has)
        return;
    t->win += r->verdict == ATR_VERDICT_WIN;
    t->tie += r->verdict == ATR_VERDICT_TIE;
    t->loss += r->verdict == ATR_VERDICT_LOSS;
    t->inconclusive += r->verdict == ATR_VERDICT_INCONCLUSIVE;
}

static void row_fill(struct row *w, const struct atr_bench_set *s, const char *commit,
                     const char *agent, bool has_agent, double noise)
{
    *w = (struct row){.commit = commit, .agent = agent};
    cell_fill(&w->base, s, commit, "baseline", NULL);
    cell_fill(&w->human, s, commit, "human", NULL);
    if (has_agent)
        cell_fill(&w->agent_c, s, commit, NULL, agent);
    else
        for (int m = 0; m < METRICS; m++)
            w->agent_c.median[m] = NAN;
    for (int m = 0; m < METRICS; m++) {
        w->vs_base[m] = ratio_of(&w->base, &w->agent_c, m, noise);
        w->vs_human[m] = ratio_of(&w->human, &w->agent_c, m, noise);
    }
    /* True success: it built, ran (successful runs) and beat the baseline
     * by more than noise, on the interval, not on one lucky run. */
    w->true_success = w->vs_base[M_TOK_S].has && w->vs_base[M_TOK_S].verdict == ATR_VERDICT_WIN;
}

static void ref_fill(struct ref *f, const struct atr_bench_set *s, const char *commit,
                     double noise)
{
    *f = (struct ref){.commit = commit};
    cell_fill(&f->base, s, commit, "baseline", NULL);
    cell_fill(&f->human, s, commit, "human", NULL);
    for (int m = 0; m < METRICS; m++)
        f->ratio[m] = ratio_of(&f->base, &f->human, m, noise);
}

/* ---- per commit and per agent ---- */

static bool commit_seen(const struct atr_bench_set *s, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (s->v[k].commit && strcmp(s->v[k].commit, s->v[i].commit) == 0)
            return true;
    return false;
}

/* Is result i the first of its commit's agent? */
static bool agent_seen(const struct atr_bench_set *s, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (is_agent(&s->v[k]) && of_commit(&s->v[k], s->v[i].commit)
            && same(agent_key(&s->v[k]), agent_key(&s->v[i])))
            return true;
    return false;
}

static struct row *add_row(struct comparison *c)
{
    c->rows = xreallocarray(c->rows, c->n + 1, sizeof *c->rows);
    return &c->rows[c->n++];
}

static void commit_rows(struct comparison *c, const struct atr_bench_set *s, const char *commit,
                        double noise)
{
    size_t before = c->n;
    for (size_t i = 0; i < s->n; i++)
        if (is_agent(&s->v[i]) && of_commit(&s->v[i], commit) && !agent_seen(s, i))
            row_fill(add_row(c), s, commit, agent_key(&s->v[i]), true, noise);
    if (c->n == before)
        row_fill(add_row(c), s, commit, NULL, false, noise);
    c->refs = xreallocarray(c->refs, c->n_refs + 1, sizeof *c->refs);
    ref_fill(&c->refs[c->n_refs++], s, commit, noise);
}

static struct agent_stats *agent_of(struct comparison *c, const char *name)
{
    for (size_t i = 0; i < c->n_agents; i++)
        if (same(c->agents[i].name, name))
            return &c->agents[i];
    c->agents = xreallocarray(c->agents, c->n_agents + 1, sizeof *c->agents);
    c->agents[c->n_agents] = (struct agent_stats){.name = name};
    return &c->agents[c->n_agents++];
}

/* Per agent: its own runs' outcomes (never a baseline's or a human's),
 * the commits it has runs of, and its true successes. */
static void per_agent(struct comparison *c, const struct atr_bench_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!is_agent(&s->v[i]))
            continue;
        struct agent_stats *a = agent_of(c, agent_key(&s->v[i]));
        a->c.total++;
        a->c.status[s->v[i].status]++;
        a->c.outcome[s->v[i].outcome]++;
    }
    for (size_t i = 0; i < c->n; i++)
        if (c->rows[i].agent_c.runs) {
            struct agent_stats *a = agent_of(c, c->rows[i].agent);
            a->commits++;
            a->true_success += c->rows[i].true_success;
        }
}

/* Adds the log of a throughput ratio that has a positive point. */
static void log_add(double *sum, size_t *n, const struct ratio *r)
{
    double x = r->ci.point;
    if (r->has && isfinite(x) && x > 0) {
        *sum += log(x);
        (*n)++;
    }
}

static void summarise(struct comparison *c)
{
    double lh = 0, lb = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct row *w = &c->rows[i];
        log_add(&lh, &c->n_human, &w->vs_human[M_TOK_S]);
        log_add(&lb, &c->n_base, &w->vs_base[M_TOK_S]);
        tally_add(&c->vs_human, &w->vs_human[M_TOK_S]);
        tally_add(&c->vs_base, &w->vs_base[M_TOK_S]);
        c->true_success += w->true_success;
    }
    c->gm_human = c->n_human ? exp(lh / (double)c->n_human) : NAN;
    c->gm_base = c->n_base ? exp(lb / (double)c->n_base) : NAN;
    for (size_t i = 0; i < c->n_refs; i++)
        tally_add(&c->human_vs_base, &c->refs[i].ratio[M_TOK_S]);
}

void report_compare(const struct atr_bench_set *s, double noise, struct comparison *c)
{
    *c = (struct comparison){0};
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].commit && !commit_seen(s, i))
            commit_rows(c, s, s->v[i].commit, noise);
    per_agent(c, s);
    summarise(c);
}

void report_release(struct comparison *c)
{
    for (size_t i = 0; i < c->n; i++) {
        cell_release(&c->rows[i].base);
        cell_release(&c->rows[i].human);
        cell_release(&c->rows[i].agent_c);
    }
    for (size_t i = 0; i < c->n_refs; i++) {
        cell_release(&c->refs[i].base);
        cell_release(&c->refs[i].human);
    }
    free(c->rows);
    free(c->refs);
    free(c->agents);
}
