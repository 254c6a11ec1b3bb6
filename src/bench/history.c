/* history.c - results across commits as series of points, and each
 * metric's regressions beyond noise against the points before (history.h). */
#include "bench/history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report.h"
#include "json/writer.h"
#include "stats/percentile.h"
#include "util/alloc.h"

static const struct {
    const char *key, *title;
    bool higher;               /* higher is better */
} metrics[ATR_HM_METRICS] = {
    {"req_s", "req/s", true},
    {"tok_s", "output tok/s", true},
    {"ttft_p50_ms", "p50 TTFT ms", false},
    {"ttft_p99_ms", "p99 TTFT ms", false},
    {"tpot_p99_ms", "p99 TPOT ms", false},
    {"e2el_p50_ms", "p50 E2EL ms", false},
    {"e2el_p99_ms", "p99 E2EL ms", false},
};

const char *atr_history_metric_name(enum atr_history_metric m)
{
    return metrics[m].key;
}

const char *atr_history_metric_title(enum atr_history_metric m)
{
    return metrics[m].title;
}

static double metric_of(const struct atr_bench_result *r, int m)
{
    switch (m) {
    case ATR_HM_REQ_S: return r->req_s;
    case ATR_HM_TOK_S: return r->tok_s;
    case ATR_HM_TTFT_P50: return r->ttft_p50_ms;
    case ATR_HM_TTFT_P99: return r->ttft_p99_ms;
    case ATR_HM_TPOT_P99: return r->tpot_p99_ms;
    case ATR_HM_E2EL_P50: return r->e2el_p50_ms;
    case ATR_HM_E2EL_P99: return r->e2el_p99_ms;
    }
    return NAN;
}

static bool measured(const struct atr_bench_result *r)
{
    return r->status == ATR_BENCH_OK && r->outcome == ATR_BENCH_SUCCESS;
}

/* ---- series and points ---- */

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_series(const struct atr_bench_result *a, const struct atr_bench_result *b)
{
    return same(a->variant, b->variant) && same(a->agent, b->agent) &&
           same(a->model, b->model) && same(a->target, b->target) &&
           same(a->policy, b->policy);
}

static char *label_of(const struct atr_bench_result *r)
{
    const char *parts[] = {r->variant, r->agent, r->model, r->target, r->policy};
    struct atr_buf b = ATR_BUF_INIT;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i])
            atr_buf_printf(&b, "%s%s", b.len ? " " : "", parts[i]);
    char *s = xstrdup(b.len ? b.data : "results");
    atr_buf_release(&b);
    return s;
}

static void point_add(struct atr_history_point *p, const struct atr_bench_set *set, size_t i)
{
    p->idx = xreallocarray(p->idx, p->n_idx + 1, sizeof *p->idx);
    p->idx[p->n_idx++] = i;
    if (measured(&set->v[i]))
        p->ok++;
    else
        p->failed++;
}

/* The point of result i in s: its commit's, else a new one. */
static void series_add(struct atr_history_series *s, const struct atr_bench_set *set, size_t i)
{
    const struct atr_bench_result *r = &set->v[i];
    struct atr_history_point *p = NULL;
    for (size_t k = 0; r->commit && k < s->n && !p; k++)
        if (s->p[k].commit && strcmp(s->p[k].commit, r->commit) == 0)
            p = &s->p[k];
    if (!p) {
        s->p = xreallocarray(s->p, s->n + 1, sizeof *s->p);
        p = &s->p[s->n++];
        *p = (struct atr_history_point){.commit = r->commit, .when = r->when, .file = r->file};
    }
    point_add(p, set, i);
    if (!r->when)
        s->untimed++;
}

static void group(struct atr_history *h, const struct atr_bench_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        struct atr_history_series *s = NULL;
        for (size_t k = 0; k < h->n && !s; k++)
            if (same_series(&set->v[h->s[k].p[0].idx[0]], &set->v[i]))
                s = &h->s[k];
        if (!s) {
            h->s = xreallocarray(h->s, h->n + 1, sizeof *h->s);
            s = &h->s[h->n++];
            *s = (struct atr_history_series){.label = label_of(&set->v[i])};
        }
        series_add(s, set, i);
        h->results++;
        h->failed += !measured(&set->v[i]);
    }
}

/* ---- order ---- */

/* The digits of a time ("2026-12-02 06:30:00", vLLM's "20261202-063000"):
 * both layouts order alike as digit strings. */
static void digits_of(const char *when, char *out, size_t cap)
{
    size_t n = 0;
    for (; *when && n + 1 < cap; when++)
        if (*when >= '0' && *when <= '9')
            out[n++] = *when;
    out[n] = '\0';
}

static int by_time(const void *x, const void *y)
{
    const struct atr_history_point *a = x, *b = y;
    char da[64], db[64];
    digits_of(a->when, da, sizeof da);
    digits_of(b->when, db, sizeof db);
    int c = strcmp(da, db);
    if (c)
        return c;
    return a->idx[0] < b->idx[0] ? -1 : a->idx[0] > b->idx[0];   /* stable */
}

static void order(struct atr_history_series *s)
{
    s->by_time = s->untimed == 0;
    if (s->by_time)
        qsort(s->p, s->n, sizeof *s->p, by_time);
}

/* ---- metrics ---- */

/* Every measured result of s has the metrics any of them has. */
static int check_metrics(struct atr_history_series *s, const struct atr_bench_set *set,
                         struct atr_error *err)
{
    const struct atr_bench_result *first[ATR_HM_METRICS] = {0};
    for (size_t k = 0; k < s->n; k++)
        for (size_t j = 0; j < s->p[k].n_idx; j++) {
            const struct atr_bench_result *r = &set->v[s->p[k].idx[j]];
            for (int m = 0; m < ATR_HM_METRICS && measured(r); m++)
                if (!isnan(metric_of(r, m)) && !first[m]) {
                    first[m] = r;
                    s->has[m] = true;
                }
        }
    for (size_t k = 0; k < s->n; k++)
        for (size_t j = 0; j < s->p[k].n_idx; j++) {
            const struct atr_bench_result *r = &set->v[s->p[k].idx[j]];
            for (int m = 0; m < ATR_HM_METRICS && measured(r); m++)
                if (s->has[m] && isnan(metric_of(r, m)))
                    return atr_error_set(err,
                                         "%s: no %s, which %s has (the results of one series "
                                         "must carry the same metrics)",
                                         r->file, metrics[m].title, first[m]->file);
        }
    return 0;
}

/* The measured values of metric m of points [from, to) of s, appended to v. */
static size_t values_of(const struct atr_history_series *s, const struct atr_bench_set *set,
                        size_t from, size_t to, int m, double *v)
{
    size_t n = 0;
    for (size_t k = from; k < to; k++)
        for (size_t j = 0; j < s->p[k].n_idx; j++) {
            const struct atr_bench_result *r = &set->v[s->p[k].idx[j]];
            if (measured(r))
                v[n++] = metric_of(r, m);
        }
    return n;
}

/* The first point of the baseline of point k: the window of points before
 * it that measured anything. */
static size_t baseline_start(const struct atr_history_series *s, size_t k, size_t window)
{
    size_t from = k, got = 0;
    while (from > 0 && got < window)
        got += s->p[--from].ok > 0;
    return from;
}

static void judge(struct atr_history_series *s, const struct atr_bench_set *set,
                  const struct atr_history_opts *o, size_t k, int m, double *scratch)
{
    struct atr_history_cell *c = &s->p[k].cell[m];
    size_t from = baseline_start(s, k, o->window);
    double *cur = scratch, *base = scratch + set->n;
    c->runs = values_of(s, set, k, k + 1, m, cur);
    c->baseline_runs = values_of(s, set, from, k, m, base);
    c->value = c->runs ? (atr_sort_doubles(cur, c->runs),
                          atr_percentile_sorted(cur, c->runs, 50))
                       : NAN;
    c->verdict = ATR_VERDICT_INCONCLUSIVE;
    c->compared = c->runs > 0 && c->baseline_runs > 0;
    if (!c->compared)
        return;
    if (c->runs == 1)
        atr_ci_ratio_one(base, c->baseline_runs, cur[0], o->seed, &c->ratio);
    else
        atr_ci_ratio(base, c->baseline_runs, cur, c->runs, o->seed, &c->ratio);
    c->verdict = atr_verdict_of(&c->ratio, metrics[m].higher, o->margin);
    c->regression = c->verdict == ATR_VERDICT_LOSS &&
                    (metrics[m].higher ? c->ratio.hi < 1 / (1 + o->margin)
                                       : c->ratio.lo > 1 + o->margin);
}

static void judge_series(struct atr_history *h, struct atr_history_series *s,
                         const struct atr_bench_set *set)
{
    double *scratch = xmalloc(2 * (set->n + 1) * sizeof *scratch);
    for (size_t k = 0; k < s->n; k++)
        for (int m = 0; m < ATR_HM_METRICS; m++) {
            if (!s->has[m])
                continue;
            judge(s, set, &h->o, k, m, scratch);
            s->regressions += s->p[k].cell[m].regression;
        }
    h->regressions += s->regressions;
    free(scratch);
}

int atr_history_build(struct atr_history *h, const struct atr_bench_set *set,
                      const struct atr_history_opts *o, struct atr_error *err)
{
    *h = (struct atr_history){.o = *o};
    if (h->o.window == 0)
        h->o.window = 5;
    group(h, set);
    if (h->results == h->failed) {
        size_t failed = h->failed;
        atr_history_release(h);
        return atr_error_set(err, "no result that measured anything (%zu failed): nothing to "
                                  "compare", failed);
    }
    size_t most = 0;
    for (size_t k = 0; k < h->n; k++) {
        order(&h->s[k]);
        if (check_metrics(&h->s[k], set, err) < 0) {
            atr_history_release(h);
            return -1;
        }
        most = h->s[k].n > most ? h->s[k].n : most;
    }
    if (most < 2) {
        atr_history_release(h);
        return atr_error_set(err, "one point only: a history needs results of at least two "
                                  "commits (or two result files) of one set-up");
    }
    for (size_t k = 0; k < h->n; k++)
        judge_series(h, &h->s[k], set);
    return 0;
}

void atr_history_release(struct atr_history *h)
{
    for (size_t k = 0; k < h->n; k++) {
        for (size_t j = 0; j < h->s[k].n; j++)
            free(h->s[k].p[j].idx);
        free(h->s[k].p);
        free(h->s[k].label);
    }
    free(h->s);
    *h = (struct atr_history){0};
}

/* ---- Markdown ---- */

static int md_cell(struct atr_buf *b, const struct atr_history_cell *c)
{
    if (isnan(c->value))
        return atr_buf_puts(b, " - |");
    int rc = atr_buf_printf(b, " %.4g", c->value);
    if (c->compared && !isnan(c->ratio.lo))
        rc |= atr_buf_printf(b, " (x%.3f [%.3f, %.3f] %s)", c->ratio.point, c->ratio.lo,
                             c->ratio.hi, c->verdict == ATR_VERDICT_LOSS
                                              ? "**regression**"
                                              : c->verdict == ATR_VERDICT_WIN
                                                    ? "improvement"
                                                    : atr_verdict_name(c->verdict));
    else if (c->compared)
        rc |= atr_buf_printf(b, " (x%.3f, no interval)", c->ratio.point);
    return rc | atr_buf_puts(b, " |");
}

static int md_series(struct atr_buf *b, const struct atr_history_series *s)
{
    int rc = atr_buf_puts(b, "\n## ");
    rc |= atr_md_text(b, s->label);
    rc |= s->by_time ? atr_buf_puts(b, "\n\nOrdered by the time measured.\n\n")
                     : atr_buf_printf(b, "\n\nOrdered as read: %zu of its results say nothing "
                                         "of when they were measured.\n\n", s->untimed);
    rc |= atr_buf_puts(b, "| # | commit | measured | runs |");
    for (int m = 0; m < ATR_HM_METRICS; m++)
        if (s->has[m])
            rc |= atr_buf_printf(b, " %s |", metrics[m].title);
    rc |= atr_buf_puts(b, "\n|---:|---|---|---:|");
    for (int m = 0; m < ATR_HM_METRICS; m++)
        if (s->has[m])
            rc |= atr_buf_puts(b, "---|");
    for (size_t k = 0; k < s->n; k++) {
        const struct atr_history_point *p = &s->p[k];
        rc |= atr_buf_printf(b, "\n| %zu | ", k + 1);
        rc |= atr_md_text(b, p->commit ? p->commit : p->file);
        rc |= atr_buf_puts(b, " | ");
        rc |= atr_md_text(b, p->when ? p->when : "-");
        rc |= atr_buf_printf(b, " | %zu", p->ok);
        if (p->failed)
            rc |= atr_buf_printf(b, " (%zu failed)", p->failed);
        rc |= atr_buf_puts(b, " |");
        for (int m = 0; m < ATR_HM_METRICS; m++)
            if (s->has[m])
                rc |= md_cell(b, &p->cell[m]);
    }
    return rc | atr_buf_puts(b, "\n");
}

/* One line per regression: series, point, metric and its interval. */
static int md_regressions(struct atr_buf *b, const struct atr_history *h)
{
    int rc = atr_buf_printf(b, "\n%zu regression%s beyond noise.\n", h->regressions,
                            h->regressions == 1 ? "" : "s");
    for (size_t k = 0; k < h->n; k++)
        for (size_t j = 0; j < h->s[k].n; j++)
            for (int m = 0; m < ATR_HM_METRICS; m++) {
                const struct atr_history_point *p = &h->s[k].p[j];
                const struct atr_history_cell *c = &p->cell[m];
                if (!h->s[k].has[m] || !c->regression)
                    continue;
                rc |= atr_buf_puts(b, "\n- ");
                rc |= atr_md_text(b, h->s[k].label);
                rc |= atr_buf_printf(b, ", point %zu (", j + 1);
                rc |= atr_md_text(b, p->commit ? p->commit : p->file);
                rc |= atr_buf_printf(b, "): %s %.4g, x%.3f [%.3f, %.3f] of the %zu runs before",
                                     metrics[m].title, c->value, c->ratio.point, c->ratio.lo,
                                     c->ratio.hi, c->baseline_runs);
            }
    return rc | (h->regressions ? atr_buf_puts(b, "\n") : 0);
}

int atr_history_markdown(struct atr_buf *b, const struct atr_history *h)
{
    int rc = atr_buf_printf(b, "# bench history\n\n%zu results", h->results);
    if (h->failed)
        rc |= atr_buf_printf(b, " (%zu failed, counted but not measured)", h->failed);
    rc |= atr_buf_printf(b, " in %zu series. Each point against its baseline, the runs of "
                            "the %zu points before it: the ratio with its %.0f %% interval; "
                            "a regression is worse beyond noise with the whole interval past "
                            "the %.3g %% margin.\n", h->n, h->o.window, 100 * ATR_CI_LEVEL,
                         100 * h->o.margin);
    for (size_t k = 0; k < h->n; k++)
        rc |= md_series(b, &h->s[k]);
    return rc | md_regressions(b, h) ? -1 : 0;
}

/* ---- JSON ---- */

static void json_num(struct atr_jw *w, const char *key, double v)
{
    if (isfinite(v))
        atr_jw_kv_pyfloat(w, key, v);
    else
        atr_jw_kv_null(w, key);
}

static void json_cell(struct atr_jw *w, const struct atr_history_cell *c)
{
    atr_jw_object_begin(w);
    json_num(w, "value", c->value);
    atr_jw_kv_uint(w, "runs", c->runs);
    if (c->compared) {
        json_num(w, "ratio", c->ratio.point);
        json_num(w, "lo", c->ratio.lo);
        json_num(w, "hi", c->ratio.hi);
        atr_jw_kv_str(w, "method", c->ratio.method);
        atr_jw_kv_uint(w, "baseline_runs", c->baseline_runs);
        atr_jw_kv_str(w, "verdict", atr_verdict_name(c->verdict));
    }
    atr_jw_kv_bool(w, "regression", c->compared && c->regression);
    atr_jw_object_end(w);
}

static void json_point(struct atr_jw *w, const struct atr_history_series *s,
                       const struct atr_history_point *p)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "commit", p->commit);
    atr_jw_kv_str(w, "measured", p->when);
    atr_jw_kv_str(w, "file", p->file);
    atr_jw_kv_uint(w, "runs", p->ok);
    atr_jw_kv_uint(w, "failed", p->failed);
    atr_jw_key(w, "metrics");
    atr_jw_object_begin(w);
    for (int m = 0; m < ATR_HM_METRICS; m++)
        if (s->has[m]) {
            atr_jw_key(w, metrics[m].key);
            json_cell(w, &p->cell[m]);
        }
    atr_jw_object_end(w);
    atr_jw_object_end(w);
}

int atr_history_json(struct atr_buf *b, const struct atr_history *h)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_PYTHON);
    atr_jw_object_begin(&w);
    atr_jw_kv_uint(&w, "window", h->o.window);
    json_num(&w, "margin", h->o.margin);
    json_num(&w, "level", ATR_CI_LEVEL);
    atr_jw_kv_uint(&w, "results", h->results);
    atr_jw_kv_uint(&w, "failed", h->failed);
    atr_jw_kv_uint(&w, "regressions", h->regressions);
    atr_jw_key(&w, "series");
    atr_jw_array_begin(&w);
    for (size_t k = 0; k < h->n; k++) {
        const struct atr_history_series *s = &h->s[k];
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "series", s->label);
        atr_jw_kv_str(&w, "order", s->by_time ? "measured" : "read");
        atr_jw_kv_uint(&w, "regressions", s->regressions);
        atr_jw_key(&w, "points");
        atr_jw_array_begin(&w);
        for (size_t j = 0; j < s->n; j++)
            json_point(&w, s, &s->p[j]);
        atr_jw_array_end(&w);
        atr_jw_object_end(&w);
    }
    atr_jw_array_end(&w);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    return atr_jw_finish(&w);
}
