/* sweep.c - the rate sweep: SLO parsing, the rates, the bisection, the
 * runs through atr_exp_run and the result document (see sweep.h). */
#include "exp/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/writer.h"
#include "util/alloc.h"

void atr_workload_generated(struct atr_workload *w, size_t n, uint32_t prompt_tokens,
                            uint32_t output_tokens)
{
    *w = (struct atr_workload)ATR_WORKLOAD_INIT;
    w->block_size = 16;
    w->n_sessions = w->n_turns = n;
    w->sessions = xcalloc(n ? n : 1, sizeof *w->sessions);
    for (size_t i = 0; i < n; i++) {
        struct atr_session *s = &w->sessions[i];
        s->trace_id = xasprintf("request-%zu", i);
        s->turns = xcalloc(1, sizeof *s->turns);
        s->n_turns = 1;
        s->turns[0].prompt_tokens = prompt_tokens;
        s->turns[0].output_tokens = output_tokens;
    }
}

/* ---- SLOs ---- */

static const char *const metric_names[] = {"ttft", "tpot", "itl", "e2el"};

/* "ttft_p99" into metric and percentile; false if it is none. */
static bool parse_key(const char *k, size_t len, struct atr_slo_item *it)
{
    for (size_t m = 0; m < 4; m++) {
        size_t ml = strlen(metric_names[m]);
        if (len != ml + 4 || strncmp(k, metric_names[m], ml) != 0 || k[ml] != '_' ||
            k[ml + 1] != 'p')
            continue;
        unsigned p = (unsigned)(k[ml + 2] - '0') * 10 + (unsigned)(k[ml + 3] - '0');
        if (p != 50 && p != 90 && p != 99)
            return false;
        it->metric = (enum atr_slo_metric)m;
        it->pct = p;
        return true;
    }
    return false;
}

/* "500ms", "0.5s" into milliseconds; false on junk or a missing unit. */
static bool parse_duration(const char *v, size_t len, double *ms)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, v, len);
    buf[len] = '\0';
    char *end;
    double x = strtod(buf, &end);
    if (end == buf || !isfinite(x) || x < 0)
        return false;
    if (strcmp(end, "ms") == 0)
        *ms = x;
    else if (strcmp(end, "s") == 0)
        *ms = x * 1000;
    else
        return false;
    return true;
}

/* Adds it, replacing an item of the same key. */
static void slo_put(struct atr_slo *s, const struct atr_slo_item *it)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].metric == it->metric && s->items[i].pct == it->pct) {
            s->items[i] = *it;
            return;
        }
    s->items[s->n++] = *it;
}

static int parse_item(struct atr_slo *s, const char *p, size_t len, struct atr_error *err)
{
    const char *eq = memchr(p, '=', len);
    struct atr_slo_item it;
    if (!eq)
        return atr_error_set(err, "--slo: '%.*s' wants KEY=VALUE", (int)len, p);
    if (!parse_key(p, (size_t)(eq - p), &it))
        return atr_error_set(err, "--slo: unknown key '%.*s' (ttft, tpot, itl or e2el with "
                                  "_p50, _p90 or _p99)", (int)(eq - p), p);
    if (!parse_duration(eq + 1, len - (size_t)(eq + 1 - p), &it.ms))
        return atr_error_set(err, "--slo: '%.*s' wants a duration like 500ms or 0.5s",
                             (int)(len - (size_t)(eq + 1 - p)), eq + 1);
    if (s->n == ATR_SLO_MAX)
        return atr_error_set(err, "--slo: more than %d items", ATR_SLO_MAX);
    slo_put(s, &it);
    return 0;
}

int atr_slo_parse(struct atr_slo *s, const char *spec, struct atr_error *err)
{
    memset(s, 0, sizeof *s);
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (parse_item(s, p, len, err) < 0)
            return -1;
        p += len + (p[len] == ',');
    }
    if (s->n == 0)
        return atr_error_set(err, "--slo: no KEY=VALUE given");
    return 0;
}

void atr_slo_key(const struct atr_slo_item *it, char *out, size_t cap)
{
    snprintf(out, cap, "%s_p%u", metric_names[it->metric], it->pct);
}

static const struct atr_llm_stat *summary_stat(const struct atr_llm_summary *s,
                                               enum atr_slo_metric m)
{
    switch (m) {
    case ATR_SLO_TTFT: return &s->ttft;
    case ATR_SLO_TPOT: return &s->tpot;
    case ATR_SLO_ITL: return &s->itl;
    default: return &s->e2el;
    }
}

/* The summary's percentiles are configured as {50, 90, 99} (see run_one). */
static double stat_pct(const struct atr_llm_stat *st, unsigned pct)
{
    return pct == 50 ? st->p[0] : pct == 90 ? st->p[1] : st->p[2];
}

bool atr_slo_met(const struct atr_slo *s, const struct atr_llm_summary *sum)
{
    if (sum->completed == 0)
        return false;
    for (size_t i = 0; i < s->n; i++)
        if (!(stat_pct(summary_stat(sum, s->items[i].metric), s->items[i].pct) <=
              s->items[i].ms))
            return false;
    return true;
}

/* ---- rates and the bisection ---- */

void atr_sweep_rates(double sync_rate, double max_rate, unsigned n, double *out)
{
    for (unsigned i = 1; i <= n; i++)
        out[i - 1] = max_rate <= sync_rate ? max_rate
                                           : sync_rate + (max_rate - sync_rate) * i / n;
}

int atr_sweep_bisect(double lo, double hi, double tol, unsigned max_steps,
                     atr_sweep_measure_fn *measure, void *ctx, double *best,
                     struct atr_error *err)
{
    unsigned steps = 0;
    while (steps < max_steps && hi - lo > tol * hi) {
        double mid = (lo + hi) / 2;
        bool meets = false;
        if (measure(ctx, mid, &meets, err) < 0)
            return -1;
        steps++;
        if (meets)
            lo = mid;
        else
            hi = mid;
    }
    *best = lo;
    return (int)steps;
}

/* ---- the runs ---- */

const char *atr_sweep_kind_name(enum atr_sweep_kind k)
{
    static const char *const names[] = {"synchronous", "throughput", "rate", "bisect"};
    return names[k];
}

static void stat_from(struct atr_sweep_stat *o, const struct atr_llm_stat *s)
{
    *o = (struct atr_sweep_stat){s->mean, s->median, s->p[1], s->p[2]};
}

static void metrics_from(struct atr_sweep_metrics *m, const struct atr_llm_summary *s)
{
    m->completed = s->completed;
    m->failed = s->failed;
    m->duration_s = s->duration;
    m->request_throughput = s->request_throughput;
    m->output_throughput = s->output_throughput;
    int64_t sessions = s->sessions.completed ? s->sessions.completed : s->completed;
    m->sessions_per_s = s->duration > 0 ? (double)sessions / s->duration : 0;
    stat_from(&m->ttft, &s->ttft);
    stat_from(&m->tpot, &s->tpot);
    stat_from(&m->itl, &s->itl);
    stat_from(&m->e2el, &s->e2el);
    m->goodput_configured = s->goodput_configured;
    m->request_goodput = s->request_goodput;
    m->good_completed = s->good_completed;
}

/* vLLM's per-request goodput bounds: the tightest bound of each of TTFT,
 * TPOT and E2EL (ITL has none there). */
static void goodput_bounds(const struct atr_slo *slo, struct atr_llm_bench_config *bc)
{
    double *bound[] = {&bc->slo_ttft_ms, &bc->slo_tpot_ms, NULL, &bc->slo_e2el_ms};
    for (size_t i = 0; slo && i < slo->n; i++) {
        double *b = bound[slo->items[i].metric];
        if (b && (*b < 0 || slo->items[i].ms < *b))
            *b = slo->items[i].ms;
    }
}

struct sweep {
    const struct atr_target *t;
    const struct atr_sweep_cfg *cfg;
    struct atr_sweep_result *r;
    size_t planned;
    double sync_rate, max_rate;  /* medians of the synchronous and throughput runs */
};

static unsigned repeats(const struct atr_sweep_cfg *cfg)
{
    return cfg->repeats > 1 ? cfg->repeats : 1;
}

static bool has_slo(const struct atr_sweep_cfg *cfg)
{
    return cfg->slo && cfg->slo->n;
}

static int summarize(const struct sweep *s, const struct atr_exp_cfg *ec,
                     const struct atr_exp_result *res, struct atr_sweep_run *run,
                     struct atr_error *err)
{
    struct atr_llm_bench_config bc;
    atr_exp_bench_config(s->t, ec, res, "", &bc);
    bc.percentiles[0] = 50;
    bc.percentiles[1] = 90;
    bc.percentiles[2] = 99;
    bc.n_percentiles = 3;
    goodput_bounds(s->cfg->slo, &bc);
    struct atr_llm_summary sum;
    if (atr_llm_summarize(res->recs, res->n, &bc, &sum, err) < 0)
        return -1;
    metrics_from(&run->m, &sum);
    run->meets = has_slo(s->cfg) && atr_slo_met(s->cfg->slo, &sum);
    atr_llm_summary_release(&sum);
    return 0;
}

/* One run of the given kind (and rate), repeat rep (0: not repeated),
 * appended to the result. */
static int run_one(struct sweep *s, enum atr_sweep_kind kind, double rate, unsigned rep,
                   struct atr_error *err)
{
    const struct atr_sweep_cfg *cfg = s->cfg;
    struct atr_sweep_result *r = s->r;
    struct atr_sweep_run run = {.kind = kind, .rate = rate, .repeat = rep};
    uint64_t seed = cfg->seed + (rep ? rep - 1 : 0);
    size_t i = r->n;
    if (cfg->on_start)
        cfg->on_start(cfg->ctx, i, s->planned, &run);
    struct atr_schedule sched;
    atr_schedule_defaults(&sched);
    sched.seed = seed;
    sched.kind = isnan(rate)   ? ATR_ARRIVAL_BURST
                 : cfg->poisson ? ATR_ARRIVAL_POISSON
                                : ATR_ARRIVAL_CONSTANT;
    sched.rate = isnan(rate) ? 0 : rate;
    struct atr_exp_cfg ec = {
        .workload = cfg->workload, .schedule = &sched,
        .max_concurrency = kind == ATR_SWEEP_SYNCHRONOUS ? 1 : 0,
        .policy = cfg->policy, .policy_options = cfg->policy_options, .seed = seed,
        .stop = cfg->stop, .on_progress = cfg->on_progress, .progress_ctx = cfg->ctx,
    };
    char salt[32];
    snprintf(salt, sizeof salt, "sweep%zu ", i + 1);
    ec.run_salt = s->t->kind == ATR_TARGET_HTTP ? salt : NULL;
    struct atr_exp_result res;
    if (atr_exp_run(s->t, &ec, &res, err) < 0)
        return -1;
    int rc = summarize(s, &ec, &res, &run, err);
    r->stopped |= res.incomplete;
    atr_exp_result_release(&res);
    if (rc < 0 || r->stopped)
        return rc;
    r->runs = xrealloc(r->runs, (r->n + 1) * sizeof *r->runs);
    r->runs[r->n++] = run;
    if (cfg->on_done)
        cfg->on_done(cfg->ctx, i, s->planned, &run);
    return 0;
}

/* Every repeat of one rate in a row; with repeats, the rate meets the
 * SLOs when each of them did, and every one of its runs says so. */
static int run_point(struct sweep *s, enum atr_sweep_kind kind, double rate,
                     struct atr_error *err)
{
    struct atr_sweep_result *r = s->r;
    size_t first = r->n;
    unsigned n = repeats(s->cfg);
    for (unsigned k = 1; k <= n; k++)
        if (run_one(s, kind, rate, n > 1 ? k : 0, err) < 0 || r->stopped)
            return r->stopped ? 0 : -1;
    bool all = true;
    for (size_t i = first; i < r->n; i++)
        all &= r->runs[i].meets;
    for (size_t i = first; i < r->n; i++)
        r->runs[i].meets = all;
    return 0;
}

static int measure(void *ctx, double rate, bool *meets, struct atr_error *err)
{
    struct sweep *s = ctx;
    if (run_point(s, ATR_SWEEP_BISECT, rate, err) < 0)
        return -1;
    if (s->r->stopped)
        return atr_error_set(err, "interrupted");
    *meets = s->r->runs[s->r->n - 1].meets;
    return 0;
}

/* The rate a run stands for: its Poisson rate, or for the synchronous run
 * what it achieved (the median over repeats); NaN for the throughput run
 * (no rate of its own). */
static double run_rate(const struct sweep *s, const struct atr_sweep_run *run)
{
    if (run->kind == ATR_SWEEP_SYNCHRONOUS)
        return s->sync_rate;
    return run->kind == ATR_SWEEP_THROUGHPUT ? NAN : run->rate;
}

/* The run of the highest passing rate at or below rate. */
static void pick_goodput(const struct sweep *s, struct atr_sweep_result *r, double rate)
{
    for (size_t i = 0; i < r->n; i++) {
        double x = run_rate(s, &r->runs[i]);
        if (r->runs[i].meets && x == rate) {
            r->has_goodput = true;
            r->goodput_rate = rate;
            r->goodput_run = i;
        }
    }
}

/* After the sweep: the highest passing and lowest failing rates, then the
 * bisection between them (5 %, 6 steps at most). */
static int search_goodput(struct sweep *s, struct atr_error *err)
{
    struct atr_sweep_result *r = s->r;
    double pass = -1, fail = INFINITY;
    for (size_t i = 0; i < r->n; i++) {
        double x = run_rate(s, &r->runs[i]);
        if (isnan(x))
            continue;
        if (r->runs[i].meets && x > pass)
            pass = x;
        if (!r->runs[i].meets && x < fail)
            fail = x;
    }
    if (pass < 0)
        return 0;              /* not even one request at a time meets them */
    double best = pass;
    if (isfinite(fail) && fail > pass) {
        s->planned = r->n + 6 * repeats(s->cfg);
        if (atr_sweep_bisect(pass, fail, 0.05, 6, measure, s, &best, err) < 0)
            return r->stopped ? 0 : -1;
    }
    pick_goodput(s, r, best);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median sessions/s of the runs of one kind. */
static double median_rate(const struct atr_sweep_result *r, enum atr_sweep_kind kind)
{
    double *v = xcalloc(r->n + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->runs[i].kind == kind)
            v[n++] = r->runs[i].m.sessions_per_s;
    qsort(v, n, sizeof *v, cmp_double);
    double m = !n ? NAN : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    free(v);
    return m;
}

/* The synchronous and throughput runs, alternating over the repeats. */
static int run_bounds(struct sweep *s, struct atr_error *err)
{
    unsigned n = repeats(s->cfg);
    for (unsigned k = 1; k <= n; k++)
        if (run_one(s, ATR_SWEEP_SYNCHRONOUS, NAN, n > 1 ? k : 0, err) < 0 || s->r->stopped ||
            run_one(s, ATR_SWEEP_THROUGHPUT, NAN, n > 1 ? k : 0, err) < 0 || s->r->stopped)
            return s->r->stopped ? 0 : -1;
    s->sync_rate = median_rate(s->r, ATR_SWEEP_SYNCHRONOUS);
    s->max_rate = median_rate(s->r, ATR_SWEEP_THROUGHPUT);
    return 0;
}

/* The rates, all of them once per repeat. */
static int run_rates(struct sweep *s, const double *rates, struct atr_error *err)
{
    unsigned n = repeats(s->cfg);
    int rc = 0;
    for (unsigned k = 1; k <= n && rc == 0 && !s->r->stopped; k++)
        for (unsigned i = 0; i < s->cfg->n_rates && rc == 0 && !s->r->stopped; i++)
            rc = run_one(s, ATR_SWEEP_RATE, rates[i], n > 1 ? k : 0, err);
    if (rc < 0 || s->r->stopped || n == 1)
        return rc;
    for (unsigned i = 0; i < s->cfg->n_rates; i++) {   /* a rate meets when all its repeats do */
        bool all = true;
        for (size_t j = 0; j < s->r->n; j++)
            if (s->r->runs[j].kind == ATR_SWEEP_RATE && s->r->runs[j].rate == rates[i])
                all &= s->r->runs[j].meets;
        for (size_t j = 0; j < s->r->n; j++)
            if (s->r->runs[j].kind == ATR_SWEEP_RATE && s->r->runs[j].rate == rates[i])
                s->r->runs[j].meets = all;
    }
    return 0;
}

int atr_sweep_run(const struct atr_target *t, const struct atr_sweep_cfg *cfg,
                  struct atr_sweep_result *out, struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    struct sweep s = {.t = t, .cfg = cfg, .r = out,
                      .planned = (2 + cfg->n_rates) * repeats(cfg)};
    if (run_bounds(&s, err) < 0 || out->stopped)
        return out->stopped ? 0 : -1;
    double *rates = xcalloc(cfg->n_rates, sizeof *rates);
    atr_sweep_rates(s.sync_rate, s.max_rate, cfg->n_rates, rates);
    int rc = run_rates(&s, rates, err);
    free(rates);
    if (rc == 0 && !out->stopped && has_slo(cfg))
        rc = search_goodput(&s, err);
    return out->stopped ? 0 : rc;
}

void atr_sweep_result_release(struct atr_sweep_result *r)
{
    free(r->runs);
    r->runs = NULL;
    r->n = 0;
}

/* ---- the result document ---- */

static void write_stat(struct atr_jw *w, const char *key, const struct atr_sweep_stat *st)
{
    atr_jw_key(w, key);
    atr_jw_object_begin(w);
    atr_jw_kv_fixed_trim(w, "mean", st->mean, 3);
    atr_jw_kv_fixed_trim(w, "median", st->median, 3);
    atr_jw_kv_fixed_trim(w, "p90", st->p90, 3);
    atr_jw_kv_fixed_trim(w, "p99", st->p99, 3);
    atr_jw_object_end(w);
}

static void write_metrics(struct atr_jw *w, const struct atr_sweep_metrics *m)
{
    atr_jw_key(w, "metrics");
    atr_jw_object_begin(w);
    atr_jw_kv_int(w, "completed", m->completed);
    atr_jw_kv_int(w, "failed", m->failed);
    atr_jw_kv_fixed_trim(w, "duration_s", m->duration_s, 6);
    atr_jw_kv_fixed_trim(w, "request_throughput", m->request_throughput, 6);
    atr_jw_kv_fixed_trim(w, "output_throughput", m->output_throughput, 3);
    atr_jw_kv_fixed_trim(w, "sessions_per_s", m->sessions_per_s, 6);
    write_stat(w, "ttft_ms", &m->ttft);
    write_stat(w, "tpot_ms", &m->tpot);
    write_stat(w, "itl_ms", &m->itl);
    write_stat(w, "e2el_ms", &m->e2el);
    if (m->goodput_configured) {
        atr_jw_kv_fixed_trim(w, "request_goodput", m->request_goodput, 6);
        atr_jw_kv_int(w, "good_requests", m->good_completed);
    }
    atr_jw_object_end(w);
}

static void write_rate(struct atr_jw *w, const char *key, double rate)
{
    if (isnan(rate))
        atr_jw_kv_null(w, key);
    else
        atr_jw_kv_fixed_trim(w, key, rate, 6);
}

static void write_run(struct atr_jw *w, const struct atr_sweep_run *run, bool slo)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "kind", atr_sweep_kind_name(run->kind));
    write_rate(w, "rate", run->rate);
    if (run->repeat)
        atr_jw_kv_uint(w, "repeat", run->repeat);
    if (slo)
        atr_jw_kv_bool(w, "meets_slo", run->meets);
    write_metrics(w, &run->m);
    atr_jw_object_end(w);
}

static void write_workload(struct atr_jw *w, const struct atr_sweep_cfg *cfg)
{
    const struct atr_sweep_workload_desc *d = &cfg->desc;
    atr_jw_key(w, "workload");
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "kind", d->generated ? "generated" : "traces");
    if (d->generated) {
        atr_jw_kv_uint(w, "requests", d->requests);
        atr_jw_kv_uint(w, "input_tokens", d->prompt_tokens);
        atr_jw_kv_uint(w, "output_tokens", d->output_tokens);
    } else {
        atr_jw_key(w, "traces");
        atr_jw_array_begin(w);
        for (size_t i = 0; i < d->n_paths; i++)
            atr_jw_str(w, d->paths[i]);
        atr_jw_array_end(w);
    }
    atr_jw_kv_uint(w, "sessions", cfg->workload->n_sessions);
    atr_jw_kv_uint(w, "turns", cfg->workload->n_turns);
    atr_jw_kv_uint(w, "seed", cfg->seed);
    atr_jw_kv_str(w, "arrival", cfg->poisson ? "poisson" : "constant");
    atr_jw_object_end(w);
}

static void write_slo(struct atr_jw *w, const struct atr_slo *slo)
{
    if (!slo || !slo->n) {
        atr_jw_kv_null(w, "slo");
        return;
    }
    atr_jw_key(w, "slo");
    atr_jw_object_begin(w);
    for (size_t i = 0; i < slo->n; i++) {
        char key[32];
        atr_slo_key(&slo->items[i], key, sizeof key);
        char name[40];
        snprintf(name, sizeof name, "%s_ms", key);
        atr_jw_kv_fixed_trim(w, name, slo->items[i].ms, 3);
    }
    atr_jw_object_end(w);
}

static void write_goodput(struct atr_jw *w, const struct atr_sweep_cfg *cfg,
                          const struct atr_sweep_result *r)
{
    if (!has_slo(cfg) || !r->has_goodput) {
        atr_jw_kv_null(w, "goodput");
        return;
    }
    atr_jw_key(w, "goodput");
    atr_jw_object_begin(w);
    atr_jw_kv_fixed_trim(w, "goodput_rate", r->goodput_rate, 6);
    atr_jw_kv_uint(w, "run", r->goodput_run);
    write_metrics(w, &r->runs[r->goodput_run].m);
    atr_jw_object_end(w);
}

int atr_sweep_write(struct atr_buf *b, const struct atr_target *t,
                    const struct atr_sweep_cfg *cfg, const struct atr_sweep_result *r)
{
    char name[256];
    atr_target_name(t, name, sizeof name);
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "format", "atr-sweep/1");
    atr_jw_kv_str(&w, "target", name);
    atr_jw_kv_str(&w, "policy", cfg->policy);
    if (cfg->repeats > 1)
        atr_jw_kv_uint(&w, "repeats", cfg->repeats);
    write_workload(&w, cfg);
    write_slo(&w, cfg->slo);
    atr_jw_kv_bool(&w, "incomplete", r->stopped);
    atr_jw_key(&w, "runs");
    atr_jw_array_begin(&w);
    for (size_t i = 0; i < r->n; i++)
        write_run(&w, &r->runs[i], has_slo(cfg));
    atr_jw_array_end(&w);
    write_goodput(&w, cfg, r);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    return atr_jw_finish(&w);
}
