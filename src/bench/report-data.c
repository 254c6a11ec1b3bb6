/* report-data.c - `atr bench report` as data (report.h): JSON (one object
 * per group, the comparison with every ratio's interval and verdict) and
 * CSV (one row per result, or one row per ratio). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report-impl.h"
#include "json/writer.h"

/* ---- JSON ---- */

static void json_outcomes(struct atr_jw *w, const struct counts *c)
{
    atr_jw_key(w, "outcomes");
    atr_jw_object_begin(w);
    for (int o = 0; o < ATR_BENCH_OUTCOMES; o++)
        if (c->outcome[o])
            atr_jw_kv_uint(w, atr_bench_outcome_name(o), c->outcome[o]);
    atr_jw_object_end(w);
}

static void json_counts(struct atr_jw *w, const struct counts *c)
{
    atr_jw_kv_uint(w, "total", c->total);
    atr_jw_kv_uint(w, "success", c->status[ATR_BENCH_OK]);
    atr_jw_kv_uint(w, "error", c->status[ATR_BENCH_ERROR]);
    atr_jw_kv_uint(w, "timeout", c->status[ATR_BENCH_TIMEOUT]);
    atr_jw_kv_fixed_trim(w, "success_rate", report_pct(c->status[ATR_BENCH_OK], c->total), 4);
    json_outcomes(w, c);
}

/* {"ratio", "lo", "hi", "n", "method", "verdict"}, or null without values. */
static void json_ratio(struct atr_jw *w, const char *key, const struct ratio *r)
{
    atr_jw_key(w, key);
    if (!r->has) {
        atr_jw_null(w);
        return;
    }
    atr_jw_object_begin(w);
    atr_jw_kv_fixed_trim(w, "ratio", r->ci.point, 4);
    atr_jw_kv_fixed_trim(w, "lo", r->ci.lo, 4);
    atr_jw_kv_fixed_trim(w, "hi", r->ci.hi, 4);
    atr_jw_kv_uint(w, "n", r->ci.n);
    atr_jw_kv_str(w, "method", r->ci.method);
    atr_jw_kv_str(w, "verdict", report_verdict(r));
    atr_jw_object_end(w);
}

/* {"baseline": {"runs": 5, "successful": 4}, ...} */
static void json_runs(struct atr_jw *w, const char *const *names, const struct cell *const *cells,
                      size_t n)
{
    atr_jw_key(w, "runs");
    atr_jw_object_begin(w);
    for (size_t i = 0; i < n; i++) {
        atr_jw_key(w, names[i]);
        atr_jw_object_begin(w);
        atr_jw_kv_uint(w, "runs", cells[i]->runs);
        atr_jw_kv_uint(w, "successful", cells[i]->ok);
        atr_jw_object_end(w);
    }
    atr_jw_object_end(w);
}

static void json_row_metrics(struct atr_jw *w, const struct row *r)
{
    atr_jw_key(w, "metrics");
    atr_jw_object_begin(w);
    for (int m = 0; m < METRICS; m++) {
        atr_jw_key(w, report_metrics[m].key);
        atr_jw_object_begin(w);
        atr_jw_kv_fixed_trim(w, "baseline", r->base.median[m], 4);
        atr_jw_kv_fixed_trim(w, "human", r->human.median[m], 4);
        atr_jw_kv_fixed_trim(w, "agent", r->agent_c.median[m], 4);
        json_ratio(w, "agent_over_baseline", &r->vs_base[m]);
        json_ratio(w, "agent_over_human", &r->vs_human[m]);
        atr_jw_object_end(w);
    }
    atr_jw_object_end(w);
}

static void json_row(struct atr_jw *w, const struct row *r)
{
    static const char *const names[] = {"baseline", "human", "agent"};
    const struct cell *cells[] = {&r->base, &r->human, &r->agent_c};
    const struct ratio *vh = &r->vs_human[M_TOK_S], *vb = &r->vs_base[M_TOK_S];
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "commit", r->commit);
    atr_jw_kv_str(w, "agent", r->agent);
    atr_jw_kv_fixed_trim(w, "baseline_tok_s", r->base.median[M_TOK_S], 4);
    atr_jw_kv_fixed_trim(w, "human_tok_s", r->human.median[M_TOK_S], 4);
    atr_jw_kv_fixed_trim(w, "agent_tok_s", r->agent_c.median[M_TOK_S], 4);
    atr_jw_kv_fixed_trim(w, "agent_over_human", vh->has ? vh->ci.point : NAN, 4);
    atr_jw_kv_fixed_trim(w, "agent_over_baseline", vb->has ? vb->ci.point : NAN, 4);
    atr_jw_kv_str(w, "verdict", report_verdict(vh));
    atr_jw_kv_str(w, "verdict_vs_baseline", report_verdict(vb));
    atr_jw_kv_bool(w, "true_success", r->true_success);
    json_runs(w, names, cells, r->agent ? 3 : 2);
    json_row_metrics(w, r);
    atr_jw_object_end(w);
}

static void json_ref(struct atr_jw *w, const struct ref *f)
{
    static const char *const names[] = {"baseline", "human"};
    const struct cell *cells[] = {&f->base, &f->human};
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "commit", f->commit);
    json_runs(w, names, cells, 2);
    atr_jw_key(w, "metrics");
    atr_jw_object_begin(w);
    for (int m = 0; m < METRICS; m++) {
        atr_jw_key(w, report_metrics[m].key);
        atr_jw_object_begin(w);
        atr_jw_kv_fixed_trim(w, "baseline", f->base.median[m], 4);
        atr_jw_kv_fixed_trim(w, "human", f->human.median[m], 4);
        json_ratio(w, "human_over_baseline", &f->ratio[m]);
        atr_jw_object_end(w);
    }
    atr_jw_object_end(w);
    atr_jw_object_end(w);
}

static void json_agent(struct atr_jw *w, const struct agent_stats *a)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "agent", a->name);
    atr_jw_kv_uint(w, "runs", a->c.total);
    atr_jw_kv_uint(w, "success", a->c.status[ATR_BENCH_OK]);
    atr_jw_kv_fixed_trim(w, "success_rate", report_pct(a->c.status[ATR_BENCH_OK], a->c.total), 4);
    json_outcomes(w, &a->c);
    atr_jw_kv_uint(w, "commits", a->commits);
    atr_jw_kv_uint(w, "true_success", a->true_success);
    atr_jw_kv_fixed_trim(w, "true_success_rate", report_pct(a->true_success, a->commits), 4);
    atr_jw_object_end(w);
}

static void json_tally(struct atr_jw *w, const char *key, const struct tally *t)
{
    atr_jw_key(w, key);
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "wins", t->win);
    atr_jw_kv_uint(w, "ties", t->tie);
    atr_jw_kv_uint(w, "losses", t->loss);
    atr_jw_kv_uint(w, "inconclusive", t->inconclusive);
    atr_jw_object_end(w);
}

static void json_comparison(struct atr_jw *w, const struct comparison *c, double noise)
{
    atr_jw_key(w, "comparison");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < c->n; i++)
        json_row(w, &c->rows[i]);
    atr_jw_array_end(w);
    atr_jw_key(w, "human_reference");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < c->n_refs; i++)
        json_ref(w, &c->refs[i]);
    atr_jw_array_end(w);
    atr_jw_key(w, "per_agent");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < c->n_agents; i++)
        json_agent(w, &c->agents[i]);
    atr_jw_array_end(w);
    atr_jw_kv_fixed_trim(w, "geomean_agent_over_human", c->gm_human, 4);
    atr_jw_kv_fixed_trim(w, "geomean_agent_over_baseline", c->gm_base, 4);
    atr_jw_kv_fixed_trim(w, "noise_pct", noise * 100, 4);
    atr_jw_kv_fixed_trim(w, "ci_level_pct", ATR_CI_LEVEL * 100, 4);
    atr_jw_kv_uint(w, "wins", c->vs_human.win);
    atr_jw_kv_uint(w, "ties", c->vs_human.tie);
    atr_jw_kv_uint(w, "losses", c->vs_human.loss);
    atr_jw_kv_uint(w, "inconclusive", c->vs_human.inconclusive);
    json_tally(w, "vs_baseline", &c->vs_base);
    json_tally(w, "human_vs_baseline", &c->human_vs_base);
    atr_jw_kv_uint(w, "true_success", c->true_success);
}

static void json_no_latency(struct atr_jw *w, const struct atr_bench_set *s)
{
    atr_jw_key(w, "without_latency");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].outcome == ATR_BENCH_SUCCESS && !s->v[i].has_latency)
            atr_jw_str(w, s->v[i].file);
    atr_jw_array_end(w);
}

int atr_bench_report_json(struct atr_buf *b, const struct atr_bench_report *r)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_PYTHON);
    atr_jw_array_begin(&w);
    for (size_t i = 0; i < r->n; i++) {
        const struct atr_bench_set *s = &r->g[i].set;
        struct counts c = report_count(s);
        struct comparison cmp;
        report_compare(s, r->noise, &cmp);
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "group", r->g[i].name);
        json_counts(&w, &c);
        json_comparison(&w, &cmp, r->noise);
        json_no_latency(&w, s);
        atr_jw_object_end(&w);
        report_release(&cmp);
    }
    atr_jw_array_end(&w);
    atr_jw_newline(&w);
    return atr_jw_finish(&w);
}

/* ---- CSV ---- */

/* A field quoted when it holds a comma, quote or line break (RFC 4180). */
static int csv_str(struct atr_buf *b, const char *s)
{
    if (!s || !strpbrk(s, ",\"\r\n"))
        return atr_buf_puts(b, s ? s : "");
    int rc = atr_buf_putc(b, '"');
    for (; *s; s++)
        rc |= *s == '"' ? atr_buf_puts(b, "\"\"") : atr_buf_putc(b, *s);
    return rc | atr_buf_putc(b, '"');
}

static int csv_strs(struct atr_buf *b, const char *const *f, size_t n)
{
    int rc = 0;
    for (size_t j = 0; j < n; j++)
        rc |= (j ? atr_buf_putc(b, ',') : 0) | csv_str(b, f[j]);
    return rc;
}

static int csv_num(struct atr_buf *b, double v)
{
    int rc = atr_buf_putc(b, ',');
    return isfinite(v) ? rc | atr_json_put_pyfloat(b, v) : rc;
}

static int csv_result(struct atr_buf *b, const char *group, const struct atr_bench_result *x)
{
    const char *f[] = {group, x->file, x->kind, x->commit, x->variant, x->agent, x->model,
                       atr_bench_status_name(x->status), atr_bench_outcome_name(x->outcome)};
    int rc = csv_strs(b, f, sizeof f / sizeof *f);
    rc |= csv_num(b, x->req_s) | csv_num(b, x->tok_s) | csv_num(b, x->ttft_p99_ms)
          | csv_num(b, x->tpot_p99_ms);
    rc |= atr_buf_puts(b, x->has_latency ? ",true" : ",false");
    rc |= atr_buf_printf(b, ",%u", x->repeat);
    rc |= csv_num(b, x->ttft_p50_ms) | csv_num(b, x->tpot_p50_ms) | csv_num(b, x->itl_p50_ms)
          | csv_num(b, x->e2el_p50_ms);
    return rc | atr_buf_putc(b, '\n');
}

int atr_bench_report_csv(struct atr_buf *b, const struct atr_bench_report *r)
{
    int rc = atr_buf_puts(b, "group,file,kind,commit,variant,agent,model,status,outcome,"
                             "req_s,tok_s,ttft_p99_ms,tpot_p99_ms,has_latency,repeat,"
                             "ttft_p50_ms,tpot_p50_ms,itl_p50_ms,e2el_p50_ms\n");
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->g[i].set.n; k++)
            rc |= csv_result(b, r->g[i].name, &r->g[i].set.v[k]);
    return rc ? -1 : 0;
}

/* One ratio: who against whom, on which metric, the two medians, the
 * interval and the verdict. */
static int csv_ratio(struct atr_buf *b, const char *const *names, enum metric m,
                     const struct cell *ref, const struct cell *cand, const struct ratio *x)
{
    if (!x->has)
        return 0;
    int rc = csv_strs(b, names, 5) | atr_buf_putc(b, ',') | csv_str(b, report_metrics[m].key);
    rc |= csv_num(b, ref->median[m]) | csv_num(b, cand->median[m]);
    rc |= csv_num(b, x->ci.point) | csv_num(b, x->ci.lo) | csv_num(b, x->ci.hi);
    rc |= atr_buf_printf(b, ",%zu,%zu,", ref->n[m], cand->n[m]);
    rc |= csv_str(b, x->ci.method) | atr_buf_putc(b, ',') | csv_str(b, report_verdict(x));
    return rc | atr_buf_putc(b, '\n');
}

static int csv_group_ratios(struct atr_buf *b, const char *group, const struct comparison *c)
{
    int rc = 0;
    for (size_t i = 0; i < c->n_refs; i++) {
        const struct ref *f = &c->refs[i];
        const char *names[] = {group, f->commit, "human", NULL, "baseline"};
        for (int m = 0; m < METRICS; m++)
            rc |= csv_ratio(b, names, m, &f->base, &f->human, &f->ratio[m]);
    }
    for (size_t i = 0; i < c->n; i++) {
        const struct row *w = &c->rows[i];
        const char *vb[] = {group, w->commit, "agent", w->agent, "baseline"};
        const char *vh[] = {group, w->commit, "agent", w->agent, "human"};
        for (int m = 0; m < METRICS; m++)
            rc |= csv_ratio(b, vb, m, &w->base, &w->agent_c, &w->vs_base[m])
                  | csv_ratio(b, vh, m, &w->human, &w->agent_c, &w->vs_human[m]);
    }
    return rc;
}

int atr_bench_report_csv_ratios(struct atr_buf *b, const struct atr_bench_report *r)
{
    int rc = atr_buf_puts(b, "group,commit,candidate,agent,reference,metric,reference_median,"
                             "candidate_median,ratio,lo,hi,n_reference,n_candidate,method,"
                             "verdict\n");
    for (size_t i = 0; i < r->n; i++) {
        struct comparison cmp;
        report_compare(&r->g[i].set, r->noise, &cmp);
        rc |= csv_group_ratios(b, r->g[i].name, &cmp);
        report_release(&cmp);
    }
    return rc ? -1 : 0;
}
