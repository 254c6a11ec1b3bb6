/* report-md.c - `atr bench report` as Markdown (report.h): per group the
 * counts and outcomes, per agent its own success, the successful runs,
 * the 3-way comparison with 95 % intervals and verdicts, the human's
 * speedup as the reference, and the latencies. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report-impl.h"
#include "util/alloc.h"

/* s as plain text in a Markdown table cell, heading or list item, whatever
 * a result file holds: '|' would end the cell, a backtick open code, '<'
 * start raw HTML (which many renderers pass through, an <img onerror=...>
 * with it), '&' an entity, '[' ']' a link, '\\' escape the next character;
 * so each is written as an HTML entity, and a line break or any other
 * control character as a space (a row is one line). */
int atr_md_text(struct atr_buf *b, const char *s)
{
    int rc = 0;
    for (; *s; s++) {
        const char *e = NULL;
        switch (*s) {
        case '|': e = "&#124;"; break;
        case '`': e = "&#96;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '&': e = "&amp;"; break;
        case '[': e = "&#91;"; break;
        case ']': e = "&#93;"; break;
        case '\\': e = "&#92;"; break;
        default: break;
        }
        if (!e && ((unsigned char)*s < 0x20 || *s == 0x7f))
            e = " ";
        rc |= e ? atr_buf_puts(b, e) : atr_buf_putc(b, *s);
    }
    return rc;
}

/* " s |": one text cell after the row's opening '|'. */
static int md_cell(struct atr_buf *b, const char *s)
{
    int rc = atr_buf_putc(b, ' ');
    rc |= atr_md_text(b, s);
    return rc | atr_buf_puts(b, " |");
}

static int md_num(struct atr_buf *b, double v)
{
    return isnan(v) ? atr_buf_puts(b, " - |") : atr_buf_printf(b, " %.2f |", v);
}

static const char *or_dash(const char *s)
{
    return s ? s : "-";
}

/* " 1.061 | [0.990, 1.130] | win |": a ratio, its interval and verdict. */
static int md_ratio(struct atr_buf *b, const struct ratio *r)
{
    if (!r->has || !isfinite(r->ci.point))
        return atr_buf_puts(b, " - | - | - |");
    int rc = atr_buf_printf(b, " %.3f |", r->ci.point);
    rc |= isfinite(r->ci.lo) && isfinite(r->ci.hi)
              ? atr_buf_printf(b, " [%.3f, %.3f] |", r->ci.lo, r->ci.hi)
              : atr_buf_puts(b, " - |");
    return rc | atr_buf_printf(b, " %s |", report_verdict(r));
}

static int md_counts(struct atr_buf *b, const struct counts *c)
{
    int rc = atr_buf_puts(b, "| total | successful | error | timeout | success rate |\n"
                             "|---:|---:|---:|---:|---|\n");
    rc |= atr_buf_printf(b, "| %zu | %zu | %zu | %zu | %zu of %zu, %.1f %% |\n\n", c->total,
                         c->status[ATR_BENCH_OK], c->status[ATR_BENCH_ERROR],
                         c->status[ATR_BENCH_TIMEOUT], c->status[ATR_BENCH_OK], c->total,
                         report_pct(c->status[ATR_BENCH_OK], c->total));
    rc |= atr_buf_puts(b, "| outcome | count | share |\n|---|---:|---:|\n");
    for (int o = 0; o < ATR_BENCH_OUTCOMES; o++)
        if (c->outcome[o])
            rc |= atr_buf_printf(b, "| %s | %zu | %.1f %% |\n", atr_bench_outcome_name(o),
                                 c->outcome[o], report_pct(c->outcome[o], c->total));
    return rc;
}

/* "success 4, server_crashed 1" */
static int md_outcomes(struct atr_buf *b, const struct counts *c)
{
    int rc = 0;
    const char *sep = " ";
    for (int o = 0; o < ATR_BENCH_OUTCOMES; o++)
        if (c->outcome[o]) {
            rc |= atr_buf_printf(b, "%s%s %zu", sep, atr_bench_outcome_name(o), c->outcome[o]);
            sep = ", ";
        }
    return rc | atr_buf_puts(b, " |");
}

static int md_agents(struct atr_buf *b, const struct comparison *c)
{
    if (!c->n_agents)
        return 0;
    int rc = atr_buf_puts(b, "\n### Per agent\n\nEach agent's own runs, every repeat (baseline "
                             "and human runs are not counted); true success: commits where it "
                             "beat the baseline's output tok/s beyond noise.\n\n"
                             "| agent | runs | successful | success rate | outcomes | commits |"
                             " true success |\n|---|---:|---:|---|---|---:|---|\n");
    for (size_t i = 0; i < c->n_agents; i++) {
        const struct agent_stats *a = &c->agents[i];
        size_t ok = a->c.status[ATR_BENCH_OK];
        rc |= atr_buf_putc(b, '|');
        rc |= md_cell(b, or_dash(a->name));
        rc |= atr_buf_printf(b, " %zu | %zu | %zu of %zu, %.1f %% |", a->c.total, ok, ok,
                             a->c.total, report_pct(ok, a->c.total));
        rc |= md_outcomes(b, &a->c);
        rc |= atr_buf_printf(b, " %zu | %zu of %zu |\n", a->commits, a->true_success,
                             a->commits);
    }
    return rc;
}

/* "agent (fast)", with ", repeat 2" for repeats after the first. */
static char *who(const struct atr_bench_result *r)
{
    const char *v = or_dash(r->variant);
    char *rep = r->repeat > 1 ? xasprintf(", repeat %u", r->repeat) : xstrdup("");
    char *s = r->agent ? xasprintf("%s (%s)%s", v, r->agent, rep) : xasprintf("%s%s", v, rep);
    free(rep);
    return s;
}

static int md_successful(struct atr_buf *b, const struct atr_bench_set *s)
{
    int rc = atr_buf_puts(b, "\n### Successful benchmarks\n\n| commit | variant | model | req/s |"
                             " tok/s | TTFT p99 ms | TPOT p99 ms |\n"
                             "|---|---|---|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < s->n; i++) {
        const struct atr_bench_result *r = &s->v[i];
        if (r->outcome != ATR_BENCH_SUCCESS)
            continue;
        char *w = who(r);
        rc |= atr_buf_putc(b, '|');
        rc |= md_cell(b, r->commit ? r->commit : r->file);
        rc |= md_cell(b, w);
        rc |= md_cell(b, or_dash(r->model));
        free(w);
        rc |= md_num(b, r->req_s);
        rc |= md_num(b, r->tok_s);
        rc |= md_num(b, r->ttft_p99_ms);
        rc |= md_num(b, r->tpot_p99_ms);
        rc |= atr_buf_putc(b, '\n');
    }
    return rc;
}

/* " 5/5/4 | 0/0/1 |": successful runs used, failed runs left out. */
static int md_runs(struct atr_buf *b, const struct cell *const *cells, size_t n)
{
    int rc = atr_buf_putc(b, ' ');
    for (size_t i = 0; i < n; i++)
        rc |= atr_buf_printf(b, "%s%zu", i ? "/" : "", cells[i]->ok);
    rc |= atr_buf_puts(b, " | ");
    for (size_t i = 0; i < n; i++)
        rc |= atr_buf_printf(b, "%s%zu", i ? "/" : "", cells[i]->runs - cells[i]->ok);
    return rc | atr_buf_puts(b, " |");
}

static int md_tally(struct atr_buf *b, const char *what, const struct tally *t)
{
    return atr_buf_printf(b, "%s: %zu win, %zu tie, %zu loss, %zu inconclusive", what, t->win,
                          t->tie, t->loss, t->inconclusive);
}

static int md_geomean(struct atr_buf *b, double gm, size_t n)
{
    int rc = isfinite(gm) ? atr_buf_printf(b, "%.3f", gm) : atr_buf_puts(b, "-");
    return rc | atr_buf_printf(b, " over %zu commit/agent pair%s", n, n == 1 ? "" : "s");
}

static int md_three_way(struct atr_buf *b, const struct comparison *c, double noise)
{
    int rc = atr_buf_puts(b, "\n### Baseline vs human vs agent (output tok/s)\n\n"
                             "Medians over the successful repeats; runs ok and failed: "
                             "baseline/human/agent.\n\n"
                             "| commit | agent | runs ok | failed | baseline | human | agent |"
                             " agent/human | 95 % CI | vs human | agent/baseline | 95 % CI |"
                             " vs baseline | true success |\n"
                             "|---|---|---|---|---:|---:|---:|---:|---|---|---:|---|---|---|\n");
    for (size_t i = 0; i < c->n; i++) {
        const struct row *w = &c->rows[i];
        const struct cell *cells[] = {&w->base, &w->human, &w->agent_c};
        rc |= atr_buf_putc(b, '|');
        rc |= md_cell(b, w->commit);
        rc |= md_cell(b, or_dash(w->agent));
        rc |= md_runs(b, cells, 3);
        rc |= md_num(b, w->base.median[M_TOK_S]);
        rc |= md_num(b, w->human.median[M_TOK_S]);
        rc |= md_num(b, w->agent_c.median[M_TOK_S]);
        rc |= md_ratio(b, &w->vs_human[M_TOK_S]);
        rc |= md_ratio(b, &w->vs_base[M_TOK_S]);
        rc |= atr_buf_puts(b, !w->agent ? " - |\n" : w->true_success ? " yes |\n" : " no |\n");
    }
    rc |= atr_buf_puts(b, "\nGeometric-mean speedup: agent/human ");
    rc |= md_geomean(b, c->gm_human, c->n_human);
    rc |= atr_buf_puts(b, ", agent/baseline ");
    rc |= md_geomean(b, c->gm_base, c->n_base);
    rc |= atr_buf_puts(b, ".\n");
    rc |= md_tally(b, "Agent vs human", &c->vs_human);
    rc |= md_tally(b, "; agent vs baseline", &c->vs_base);
    rc |= atr_buf_printf(b, "; true success %zu.\nVerdicts come from each ratio's 95 %% interval "
                         "over the repeats (stats/ci.h; paired by round where both sides ran "
                         "the same rounds): tie when it lies within 1 +- %g %% "
                         "(--noise, the tie margin), else win or loss when it lies beyond 1, "
                         "else inconclusive; one successful run a side gives no interval, so "
                         "inconclusive.\n", c->true_success, noise * 100);
    return rc;
}

static int md_reference(struct atr_buf *b, const struct comparison *c)
{
    int rc = atr_buf_puts(b, "\n### Human vs baseline (the reference)\n\n"
                             "| commit | metric | runs ok | failed | baseline | human |"
                             " human/baseline | 95 % CI | verdict |\n"
                             "|---|---|---|---|---:|---:|---:|---|---|\n");
    for (size_t i = 0; i < c->n_refs; i++) {
        const struct ref *f = &c->refs[i];
        const struct cell *cells[] = {&f->base, &f->human};
        for (int m = 0; m < METRICS; m++) {
            if (m != M_TOK_S && !f->base.n[m] && !f->human.n[m])
                continue;
            rc |= atr_buf_putc(b, '|');
            rc |= md_cell(b, f->commit);
            rc |= md_cell(b, report_metrics[m].label);
            rc |= md_runs(b, cells, 2);
            rc |= md_num(b, f->base.median[m]);
            rc |= md_num(b, f->human.median[m]);
            rc |= md_ratio(b, &f->ratio[m]);
            rc |= atr_buf_putc(b, '\n');
        }
    }
    return rc | md_tally(b, "\nHuman vs baseline (output tok/s)", &c->human_vs_base)
           | atr_buf_puts(b, ".\n");
}

static bool latency_row(const struct row *w, int m)
{
    return w->agent && m != M_TOK_S && w->agent_c.n[m];
}

static int md_latency_row(struct atr_buf *b, const struct row *w, int m)
{
    int rc = atr_buf_putc(b, '|');
    rc |= md_cell(b, w->commit);
    rc |= md_cell(b, w->agent);
    rc |= md_cell(b, report_metrics[m].label);
    rc |= md_num(b, w->base.median[m]);
    rc |= md_num(b, w->human.median[m]);
    rc |= md_num(b, w->agent_c.median[m]);
    rc |= md_ratio(b, &w->vs_base[m]);
    rc |= md_ratio(b, &w->vs_human[m]);
    return rc | atr_buf_putc(b, '\n');
}

static int md_latencies(struct atr_buf *b, const struct comparison *c)
{
    int rc = atr_buf_puts(b, "\n### Latencies, agent vs baseline and human\n\n");
    size_t rows = 0;
    for (size_t i = 0; i < c->n; i++)
        for (int m = 0; m < METRICS; m++)
            rows += latency_row(&c->rows[i], m);
    if (!rows)
        return rc | atr_buf_puts(b, "none: no successful agent run has a latency figure\n");
    rc |= atr_buf_puts(b, "Medians over the successful repeats of each run's median; lower is "
                          "better.\n\n| commit | agent | metric | baseline | human | agent |"
                          " agent/baseline | 95 % CI | vs baseline | agent/human | 95 % CI |"
                          " vs human |\n|---|---|---|---:|---:|---:|---:|---|---|---:|---|---|\n");
    for (size_t i = 0; i < c->n; i++)
        for (int m = 0; m < METRICS; m++)
            if (latency_row(&c->rows[i], m))
                rc |= md_latency_row(b, &c->rows[i], m);
    return rc;
}

static int md_no_latency(struct atr_buf *b, const struct atr_bench_set *s)
{
    int rc = atr_buf_puts(b, "\n### Successful results without latency metrics\n\n");
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].outcome == ATR_BENCH_SUCCESS && !s->v[i].has_latency) {
            rc |= atr_buf_puts(b, "- ");
            rc |= atr_md_text(b, s->v[i].file);
            rc |= atr_buf_printf(b, " (%s)\n", s->v[i].kind);
            n++;
        }
    return n ? rc : rc | atr_buf_puts(b, "none\n");
}

int atr_bench_report_markdown(struct atr_buf *b, const struct atr_bench_report *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct atr_bench_set *s = &r->g[i].set;
        struct counts c = report_count(s);
        struct comparison cmp;
        report_compare(s, r->noise, &cmp);
        rc |= atr_buf_puts(b, i ? "\n## " : "## ");
        rc |= atr_md_text(b, r->g[i].name);
        rc |= atr_buf_puts(b, "\n\n");
        rc |= md_counts(b, &c) | md_agents(b, &cmp) | md_successful(b, s);
        rc |= md_three_way(b, &cmp, r->noise) | md_reference(b, &cmp) | md_latencies(b, &cmp);
        rc |= md_no_latency(b, s);
        report_release(&cmp);
    }
    return rc ? -1 : 0;
}
