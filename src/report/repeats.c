/* repeats.c - runs grouped by target and policy, medians, ratios to naive
 * with intervals and verdicts from stats/ci.h (see repeats.h). */
#include "report/repeats.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/ci.h"
#include "util/alloc.h"

/* The figures of the table: a row's field, which way is better, and the
 * percentile of request-level values that gives it within one run (< 0:
 * none, a throughput is one number per run). */
static const struct metric {
    const char *name;
    size_t off;
    bool higher_is_better;
    double pct;
} metrics[] = {
    {"TTFT p50 ms", offsetof(struct atr_compare_row, ttft_p50_ms), false, 50},
    {"TTFT p99 ms", offsetof(struct atr_compare_row, ttft_p99_ms), false, 99},
    {"E2E p50 ms", offsetof(struct atr_compare_row, e2el_p50_ms), false, 50},
    {"E2E p99 ms", offsetof(struct atr_compare_row, e2el_p99_ms), false, 99},
    {"req/s", offsetof(struct atr_compare_row, request_throughput), true, -1},
    {"out tok/s", offsetof(struct atr_compare_row, output_throughput), true, -1},
};
#define N_METRICS (sizeof metrics / sizeof *metrics)
enum { TTFT_VALUES, E2EL_VALUES };

static double figure(const struct atr_compare_row *row, size_t m)
{
    return *(const double *)((const char *)row + metrics[m].off);
}

struct run {
    unsigned repeat;
    bool failed;
    struct atr_compare_row row;         /* figures only (no strings kept) */
    double *values[2];                  /* TTFT, E2E ms per request in send order, or NULL */
    size_t n_values;
};

struct group {
    char *target, *policy;
    struct run *runs;
    size_t n, cap;
};

struct atr_repeats {
    unsigned repeats;
    double margin;
    struct group *groups;
    size_t n, cap;
};

struct atr_repeats *atr_repeats_new(unsigned repeats, double margin)
{
    struct atr_repeats *r = xcalloc(1, sizeof *r);
    r->repeats = repeats;
    r->margin = margin;
    return r;
}

void atr_repeats_free(struct atr_repeats *r)
{
    if (!r)
        return;
    for (size_t g = 0; g < r->n; g++) {
        for (size_t i = 0; i < r->groups[g].n; i++) {
            free(r->groups[g].runs[i].values[0]);
            free(r->groups[g].runs[i].values[1]);
        }
        free(r->groups[g].runs);
        free(r->groups[g].target);
        free(r->groups[g].policy);
    }
    free(r->groups);
    free(r);
}

static struct group *group_of(struct atr_repeats *r, const char *target, const char *policy)
{
    for (size_t g = 0; g < r->n; g++)
        if (!strcmp(r->groups[g].target, target) && !strcmp(r->groups[g].policy, policy))
            return &r->groups[g];
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 8;
        r->groups = xreallocarray(r->groups, r->cap, sizeof *r->groups);
    }
    struct group *g = &r->groups[r->n++];
    *g = (struct group){.target = xstrdup(target), .policy = xstrdup(policy)};
    return g;
}

static struct run *push_run(struct atr_repeats *r, const char *target, const char *policy,
                            unsigned repeat)
{
    struct group *g = group_of(r, target ? target : "unknown", policy ? policy : "unknown");
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 4;
        g->runs = xreallocarray(g->runs, g->cap, sizeof *g->runs);
    }
    struct run *run = &g->runs[g->n++];
    memset(run, 0, sizeof *run);
    run->repeat = repeat;
    return run;
}

static int by_send(const void *pa, const void *pb)
{
    const struct atr_llm_record *a = *(const struct atr_llm_record *const *)pa;
    const struct atr_llm_record *b = *(const struct atr_llm_record *const *)pb;
    if (a->start_s != b->start_s)
        return a->start_s < b->start_s ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The successful requests' TTFT and E2E latency (ms), in send order. */
static void request_values(struct run *run, const struct atr_llm_record *recs, size_t n)
{
    const struct atr_llm_record **ok = xcalloc(n ? n : 1, sizeof *ok);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (recs[i].success && recs[i].n_chunks)
            ok[k++] = &recs[i];
    qsort(ok, k, sizeof *ok, by_send);
    run->values[TTFT_VALUES] = xcalloc(k ? k : 1, sizeof(double));
    run->values[E2EL_VALUES] = xcalloc(k ? k : 1, sizeof(double));
    for (size_t i = 0; i < k; i++) {
        run->values[TTFT_VALUES][i] = 1000 * (ok[i]->chunk_s[0] - ok[i]->start_s);
        run->values[E2EL_VALUES][i] = 1000 * (ok[i]->end_s - ok[i]->start_s);
    }
    run->n_values = k;
    free(ok);
}

void atr_repeats_add_run(struct atr_repeats *r, const char *target, const char *policy,
                         unsigned repeat, const struct atr_llm_summary *sum,
                         const struct atr_llm_bench_config *bc,
                         const struct atr_llm_record *recs, size_t n)
{
    struct run *run = push_run(r, target, policy, repeat);
    atr_compare_row_of_summary(&run->row, NULL, NULL, sum, bc);
    if (recs)
        request_values(run, recs, n);
}

void atr_repeats_add_row(struct atr_repeats *r, const struct atr_compare_row *row,
                         unsigned repeat)
{
    struct run *run = push_run(r, row->target, row->policy, repeat);
    run->row = *row;
    run->row.file = run->row.kind = run->row.target = run->row.policy = NULL;
    run->failed = !(row->request_throughput > 0);
}

void atr_repeats_add_failed(struct atr_repeats *r, const char *target, const char *policy,
                            unsigned repeat)
{
    push_run(r, target, policy, repeat)->failed = true;
}

/* ---- checks ---- */

static int check_group(const struct group *g, struct atr_error *err)
{
    const struct run *first = NULL;
    for (size_t i = 0; i < g->n; i++) {
        const struct run *a = &g->runs[i];
        for (size_t j = 0; j < i; j++)
            if (a->repeat && g->runs[j].repeat == a->repeat)
                return atr_error_set(err, "%s, policy %s: repeat %u is there twice", g->target,
                                     g->policy, a->repeat);
        if (a->failed)
            continue;
        if (!first) {
            first = a;
            continue;
        }
        for (size_t m = 0; m < N_METRICS; m++)
            if (isnan(figure(&a->row, m)) != isnan(figure(&first->row, m)))
                return atr_error_set(err, "%s, policy %s: mixed metric sets: repeat %u %s %s, "
                                     "repeat %u %s", g->target, g->policy, first->repeat,
                                     isnan(figure(&first->row, m)) ? "lacks" : "has",
                                     metrics[m].name, a->repeat,
                                     isnan(figure(&a->row, m)) ? "not" : "does");
    }
    return 0;
}

int atr_repeats_check(const struct atr_repeats *r, struct atr_error *err)
{
    for (size_t g = 0; g < r->n; g++)
        if (check_group(&r->groups[g], err) < 0)
            return -1;
    return 0;
}

/* ---- the table ---- */

/* A group's values of metric m over its runs that succeeded; the number. */
/* Metric m of g's successful runs, and (rounds not NULL) their repeats. */
static size_t values_of(const struct group *g, size_t m, double *out, unsigned *rounds)
{
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++)
        if (!g->runs[i].failed && !isnan(figure(&g->runs[i].row, m))) {
            if (rounds)
                rounds[k] = g->runs[i].repeat;
            out[k++] = figure(&g->runs[i].row, m);
        }
    return k;
}

/* The one successful run of a group, when it has exactly one with
 * request-level values (the within-run method), else NULL. */
static const struct run *single_run(const struct group *g)
{
    const struct run *one = NULL;
    for (size_t i = 0; i < g->n; i++) {
        if (g->runs[i].failed)
            continue;
        if (one)
            return NULL;
        one = &g->runs[i];
    }
    return one && one->values[0] ? one : NULL;
}

static const double *run_values(const struct run *run, size_t m)
{
    return run->values[strncmp(metrics[m].name, "TTFT", 4) == 0 ? TTFT_VALUES : E2EL_VALUES];
}

/* Metric m of group g, and its ratio to ref (NULL: g is the reference or
 * there is none). Within one run where both sides have one run with
 * request-level values and the metric is a percentile; else over repeats. */
static void estimate(const struct group *g, const struct group *ref, size_t m,
                     struct atr_ci *med, struct atr_ci *ratio)
{
    const struct run *one = single_run(g), *ref_one = ref ? single_run(ref) : NULL;
    ratio->point = ratio->lo = ratio->hi = NAN;
    ratio->n = 0;
    ratio->method = NULL;
    if (one && metrics[m].pct >= 0) {
        atr_ci_percentile_run(run_values(one, m), one->n_values, metrics[m].pct, ATR_CI_SEED,
                              med);
        if (ref_one)
            atr_ci_ratio_runs(run_values(ref_one, m), ref_one->n_values, run_values(one, m),
                              one->n_values, metrics[m].pct, ATR_CI_SEED, ratio);
        if (ref_one || !ref)
            return;
    }
    double *v = xcalloc(g->n + 1, sizeof *v);
    unsigned *vk = xcalloc(g->n + 1, sizeof *vk);
    size_t n = values_of(g, m, v, vk);
    atr_ci_median(v, n, ATR_CI_SEED, med);
    if (ref) {
        double *rv = xcalloc(ref->n + 1, sizeof *rv), *a = xcalloc(g->n + 1, sizeof *a),
               *b = xcalloc(g->n + 1, sizeof *b);
        unsigned *rk = xcalloc(ref->n + 1, sizeof *rk);
        size_t rn = values_of(ref, m, rv, rk);
        size_t np = atr_ci_pair_rounds(rk, rv, rn, vk, v, n, a, b);
        if (np >= 2 && np == n && np == rn)     /* every repeat on both sides: pairs */
            atr_ci_ratio_paired(a, b, np, ratio);
        else
            atr_ci_ratio(rv, rn, v, n, ATR_CI_SEED, ratio);
        free(rv);
        free(rk);
        free(a);
        free(b);
    }
    free(v);
    free(vk);
}

static const struct group *naive_of(const struct atr_repeats *r, const struct group *g)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->groups[i].target, g->target) && !strcmp(r->groups[i].policy, "naive"))
            return &r->groups[i];
    return NULL;
}

static size_t count_failed(const struct group *g)
{
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++)
        k += g->runs[i].failed;
    return k;
}

static bool any_value(const struct atr_repeats *r, size_t m)
{
    for (size_t g = 0; g < r->n; g++)
        for (size_t i = 0; i < r->groups[g].n; i++)
            if (!r->groups[g].runs[i].failed && !isnan(figure(&r->groups[g].runs[i].row, m)))
                return true;
    return false;
}

#define N_COLS 10
#define CELL 96

static void num(char *out, double v)
{
    if (isnan(v))
        snprintf(out, CELL, "-");
    else
        snprintf(out, CELL, "%.2f", v);
}

static void interval(char *out, const struct atr_ci *ci, int decimals)
{
    if (isnan(ci->lo) || isnan(ci->hi))
        snprintf(out, CELL, "-");
    else
        snprintf(out, CELL, "%.*f .. %.*f", decimals, ci->lo, decimals, ci->hi);
}

/* The cells of one line: a policy's metric. */
static void line_cells(const struct atr_repeats *r, const struct group *g, size_t m,
                       char cells[N_COLS][CELL])
{
    const struct group *ref = naive_of(r, g);
    if (ref == g)
        ref = NULL;
    struct atr_ci med, ratio;
    estimate(g, ref, m, &med, &ratio);
    size_t ok = g->n - count_failed(g);
    snprintf(cells[0], CELL, "%s", g->target);
    snprintf(cells[1], CELL, "%s", g->policy);
    snprintf(cells[2], CELL, "%s", metrics[m].name);
    snprintf(cells[3], CELL, "%zu", ok);
    num(cells[4], med.point);
    interval(cells[5], &med, 2);
    if (ratio.method) {
        snprintf(cells[6], CELL, isnan(ratio.point) ? "-" : "%.3f", ratio.point);
        interval(cells[7], &ratio, 3);
        snprintf(cells[8], CELL, "%s",
                 atr_verdict_name(atr_verdict_of(&ratio, metrics[m].higher_is_better,
                                                 r->margin)));
    } else {
        for (int c = 6; c <= 8; c++)
            snprintf(cells[c], CELL, "%s", "");
    }
    snprintf(cells[9], CELL, "%s", ratio.method ? ratio.method : med.method ? med.method : "");
}

static const char *const headers[N_COLS] = {
    "target", "policy", "metric", "runs", "median", "95 % interval",
    "vs naive", "95 % interval", "verdict", "method",
};

static int put_line(struct atr_buf *b, char cells[N_COLS][CELL], const int *width)
{
    int rc = atr_buf_puts(b, "|");
    for (int c = 0; c < N_COLS && rc == 0; c++)
        rc = atr_buf_printf(b, " %-*s |", width[c], cells[c]);
    return rc < 0 ? -1 : atr_buf_putc(b, '\n');
}

/* Every line's cells, in table order: policies as added, metrics in order. */
static size_t all_cells(const struct atr_repeats *r, char (**out)[N_COLS][CELL])
{
    size_t n = 0;
    *out = xcalloc(r->n * N_METRICS + 1, sizeof **out);
    for (size_t g = 0; g < r->n; g++)
        for (size_t m = 0; m < N_METRICS; m++)
            if (any_value(r, m))
                line_cells(r, &r->groups[g], m, (*out)[n++]);
    return n;
}

static int put_failures(struct atr_buf *b, const struct atr_repeats *r)
{
    size_t listed = 0;
    int rc = 0;
    for (size_t g = 0; g < r->n && rc == 0; g++) {
        size_t f = count_failed(&r->groups[g]);
        if (f)
            rc = atr_buf_printf(b, "%s %s %s %zu of %zu",
                                listed++ ? "," : "failed runs, left out of the intervals:",
                                r->groups[g].target, r->groups[g].policy, f, r->groups[g].n);
    }
    return rc < 0 || !listed ? rc : atr_buf_putc(b, '\n');
}

int atr_repeats_write_markdown(struct atr_buf *b, const struct atr_repeats *r)
{
    char (*cells)[N_COLS][CELL];
    size_t n = all_cells(r, &cells);
    int width[N_COLS];
    for (int c = 0; c < N_COLS; c++) {
        width[c] = (int)strlen(headers[c]);
        for (size_t i = 0; i < n; i++)
            if ((int)strlen(cells[i][c]) > width[c])
                width[c] = (int)strlen(cells[i][c]);
    }
    char head[N_COLS][CELL], rule[N_COLS][CELL];
    for (int c = 0; c < N_COLS; c++) {
        snprintf(head[c], CELL, "%s", headers[c]);
        memset(rule[c], '-', (size_t)width[c]);
        rule[c][width[c]] = 0;
    }
    int rc = put_line(b, head, width);
    if (rc == 0)
        rc = put_line(b, rule, width);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = put_line(b, cells[i], width);
    free(cells);
    if (rc == 0)
        rc = atr_buf_printf(b, "medians and %.0f %% intervals per policy; ratio to naive with its "
                   "interval and verdict (tie: within %.0f %%); method repeats: over the runs, "
                   "pairs: over the ratios of runs of the same repeat (an interleaved round), "
                   "requests-block: within one run over its requests (docs/statistics.md)\n",
                   100 * ATR_CI_LEVEL, 100 * r->margin);
    return rc < 0 || put_failures(b, r) < 0 ? -1 : 0;
}
