/* report.c - `atr bench report` (report.h): counts, outcomes and the
 * baseline/human/agent comparison of each group, as Markdown, JSON or CSV. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report.h"
#include "json/writer.h"
#include "util/alloc.h"

struct group {
    char *name;
    struct atr_bench_set set;
};

struct atr_bench_report {
    double noise;            /* fraction: 0.05 for 5 % */
    struct group *g;
    size_t n;
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

/* ---- figures ---- */

struct counts {
    size_t total, status[3], outcome[ATR_BENCH_OUTCOMES];
};

static struct counts count(const struct atr_bench_set *s)
{
    struct counts c = {0};
    for (size_t i = 0; i < s->n; i++) {
        c.total++;
        c.status[s->v[i].status]++;
        c.outcome[s->v[i].outcome]++;
    }
    return c;
}

static double pct(size_t k, size_t n)
{
    return n ? 100.0 * (double)k / (double)n : 0;
}

/* One commit's agent against its baseline and human (output tok/s of
 * successful runs; NAN where a variant failed or is missing). */
struct row {
    const char *commit, *agent;
    double base, human, agent_v;
};

struct comparison {
    struct row *rows;
    size_t n;
    double gm_human, gm_base;          /* geometric means of the ratios */
    size_t n_human, n_base, wins, ties, losses;
};

static double speed(const struct atr_bench_result *r)
{
    return r->outcome == ATR_BENCH_SUCCESS ? r->tok_s : NAN;
}

static bool is_variant(const struct atr_bench_result *r, const char *v)
{
    return r->variant && strcmp(r->variant, v) == 0;
}

static bool is_agent(const struct atr_bench_result *r)
{
    return r->commit && !is_variant(r, "baseline") && !is_variant(r, "human");
}

static bool seen_before(const struct atr_bench_set *s, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (s->v[k].commit && strcmp(s->v[k].commit, s->v[i].commit) == 0)
            return true;
    return false;
}

/* The commit's variant v, successful, if any. */
static double variant_speed(const struct atr_bench_set *s, const char *commit, const char *v)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].commit && strcmp(s->v[i].commit, commit) == 0 && is_variant(&s->v[i], v)
            && !isnan(speed(&s->v[i])))
            return speed(&s->v[i]);
    return NAN;
}

static void add_row(struct comparison *c, const char *commit, const char *agent,
                    double base, double human, double a)
{
    c->rows = xreallocarray(c->rows, c->n + 1, sizeof *c->rows);
    c->rows[c->n++] = (struct row){commit, agent, base, human, a};
}

static void commit_rows(struct comparison *c, const struct atr_bench_set *s, const char *commit)
{
    double base = variant_speed(s, commit, "baseline");
    double human = variant_speed(s, commit, "human");
    size_t before = c->n;
    for (size_t i = 0; i < s->n; i++)
        if (is_agent(&s->v[i]) && strcmp(s->v[i].commit, commit) == 0)
            add_row(c, commit, s->v[i].agent ? s->v[i].agent : s->v[i].variant, base, human,
                    speed(&s->v[i]));
    if (c->n == before)
        add_row(c, commit, NULL, base, human, NAN);
}

static bool ratio_ok(double x)
{
    return isfinite(x) && x > 0;
}

/* Geometric means over the rows with both figures; verdicts against human. */
static void summarise(struct comparison *c, double noise)
{
    double lh = 0, lb = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct row *w = &c->rows[i];
        double rh = w->agent_v / w->human, rb = w->agent_v / w->base;
        if (ratio_ok(rh)) {
            lh += log(rh);
            c->n_human++;
            c->wins += rh > 1 + noise;
            c->losses += rh < 1 - noise;
            c->ties += rh >= 1 - noise && rh <= 1 + noise;
        }
        if (ratio_ok(rb)) {
            lb += log(rb);
            c->n_base++;
        }
    }
    c->gm_human = c->n_human ? exp(lh / (double)c->n_human) : NAN;
    c->gm_base = c->n_base ? exp(lb / (double)c->n_base) : NAN;
}

static struct comparison compare(const struct atr_bench_set *s, double noise)
{
    struct comparison c = {0};
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].commit && !seen_before(s, i))
            commit_rows(&c, s, s->v[i].commit);
    summarise(&c, noise);
    return c;
}

static const char *verdict(const struct row *w, double noise)
{
    double rh = w->agent_v / w->human;
    if (!ratio_ok(rh))
        return "-";
    return rh > 1 + noise ? "win" : rh < 1 - noise ? "loss" : "tie";
}

/* ---- Markdown ---- */

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

static int md_ratio(struct atr_buf *b, double v)
{
    return ratio_ok(v) ? atr_buf_printf(b, " %.3f |", v) : atr_buf_puts(b, " - |");
}

static const char *or_dash(const char *s)
{
    return s ? s : "-";
}

static int md_counts(struct atr_buf *b, const struct counts *c)
{
    int rc = atr_buf_puts(b, "| total | successful | error | timeout | success rate |\n"
                             "|---:|---:|---:|---:|---|\n");
    rc |= atr_buf_printf(b, "| %zu | %zu | %zu | %zu | %zu of %zu, %.1f %% |\n\n", c->total,
                         c->status[ATR_BENCH_OK], c->status[ATR_BENCH_ERROR],
                         c->status[ATR_BENCH_TIMEOUT], c->status[ATR_BENCH_OK], c->total,
                         pct(c->status[ATR_BENCH_OK], c->total));
    rc |= atr_buf_puts(b, "| outcome | count | share |\n|---|---:|---:|\n");
    for (int o = 0; o < ATR_BENCH_OUTCOMES; o++)
        if (c->outcome[o])
            rc |= atr_buf_printf(b, "| %s | %zu | %.1f %% |\n", atr_bench_outcome_name(o),
                                 c->outcome[o], pct(c->outcome[o], c->total));
    return rc;
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
        char *who = r->agent ? xasprintf("%s (%s)", or_dash(r->variant), r->agent) : NULL;
        rc |= atr_buf_putc(b, '|');
        rc |= md_cell(b, r->commit ? r->commit : r->file);
        rc |= md_cell(b, who ? who : or_dash(r->variant));
        rc |= md_cell(b, or_dash(r->model));
        free(who);
        rc |= md_num(b, r->req_s);
        rc |= md_num(b, r->tok_s);
        rc |= md_num(b, r->ttft_p99_ms);
        rc |= md_num(b, r->tpot_p99_ms);
        rc |= atr_buf_putc(b, '\n');
    }
    return rc;
}

static int md_comparison(struct atr_buf *b, const struct comparison *c, double noise)
{
    int rc = atr_buf_puts(b, "\n### Baseline vs human vs agent (output tok/s)\n\n"
                             "| commit | agent | baseline | human | agent | agent/human |"
                             " agent/baseline | vs human |\n"
                             "|---|---|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < c->n; i++) {
        const struct row *w = &c->rows[i];
        rc |= atr_buf_putc(b, '|');
        rc |= md_cell(b, w->commit);
        rc |= md_cell(b, or_dash(w->agent));
        rc |= md_num(b, w->base);
        rc |= md_num(b, w->human);
        rc |= md_num(b, w->agent_v);
        rc |= md_ratio(b, w->agent_v / w->human);
        rc |= md_ratio(b, w->agent_v / w->base);
        rc |= atr_buf_printf(b, " %s |\n", verdict(w, noise));
    }
    rc |= atr_buf_puts(b, "\nGeometric-mean speedup: agent/human ");
    rc |= ratio_ok(c->gm_human) ? atr_buf_printf(b, "%.3f", c->gm_human) : atr_buf_puts(b, "-");
    rc |= atr_buf_printf(b, " over %zu commit%s, agent/baseline ", c->n_human,
                         c->n_human == 1 ? "" : "s");
    rc |= ratio_ok(c->gm_base) ? atr_buf_printf(b, "%.3f", c->gm_base) : atr_buf_puts(b, "-");
    rc |= atr_buf_printf(b, " over %zu commit%s.\nAgent vs human: %zu win, %zu tie, %zu loss"
                         " (noise threshold %g %%).\n", c->n_base, c->n_base == 1 ? "" : "s",
                         c->wins, c->ties, c->losses, noise * 100);
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
        struct counts c = count(s);
        struct comparison cmp = compare(s, r->noise);
        rc |= atr_buf_puts(b, i ? "\n## " : "## ");
        rc |= atr_md_text(b, r->g[i].name);
        rc |= atr_buf_puts(b, "\n\n");
        rc |= md_counts(b, &c) | md_successful(b, s);
        rc |= md_comparison(b, &cmp, r->noise) | md_no_latency(b, s);
        free(cmp.rows);
    }
    return rc ? -1 : 0;
}

/* ---- JSON ---- */

static void json_counts(struct atr_jw *w, const struct counts *c)
{
    atr_jw_kv_uint(w, "total", c->total);
    atr_jw_kv_uint(w, "success", c->status[ATR_BENCH_OK]);
    atr_jw_kv_uint(w, "error", c->status[ATR_BENCH_ERROR]);
    atr_jw_kv_uint(w, "timeout", c->status[ATR_BENCH_TIMEOUT]);
    atr_jw_kv_fixed_trim(w, "success_rate", pct(c->status[ATR_BENCH_OK], c->total), 4);
    atr_jw_key(w, "outcomes");
    atr_jw_object_begin(w);
    for (int o = 0; o < ATR_BENCH_OUTCOMES; o++)
        if (c->outcome[o])
            atr_jw_kv_uint(w, atr_bench_outcome_name(o), c->outcome[o]);
    atr_jw_object_end(w);
}

static void json_comparison(struct atr_jw *w, const struct comparison *c, double noise)
{
    atr_jw_key(w, "comparison");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < c->n; i++) {
        const struct row *r = &c->rows[i];
        atr_jw_object_begin(w);
        atr_jw_kv_str(w, "commit", r->commit);
        atr_jw_kv_str(w, "agent", r->agent);
        atr_jw_kv_fixed_trim(w, "baseline_tok_s", r->base, 4);
        atr_jw_kv_fixed_trim(w, "human_tok_s", r->human, 4);
        atr_jw_kv_fixed_trim(w, "agent_tok_s", r->agent_v, 4);
        atr_jw_kv_fixed_trim(w, "agent_over_human", r->agent_v / r->human, 4);
        atr_jw_kv_fixed_trim(w, "agent_over_baseline", r->agent_v / r->base, 4);
        atr_jw_kv_str(w, "verdict", strcmp(verdict(r, noise), "-") ? verdict(r, noise) : NULL);
        atr_jw_object_end(w);
    }
    atr_jw_array_end(w);
    atr_jw_kv_fixed_trim(w, "geomean_agent_over_human", c->gm_human, 4);
    atr_jw_kv_fixed_trim(w, "geomean_agent_over_baseline", c->gm_base, 4);
    atr_jw_kv_fixed_trim(w, "noise_pct", noise * 100, 4);
    atr_jw_kv_uint(w, "wins", c->wins);
    atr_jw_kv_uint(w, "ties", c->ties);
    atr_jw_kv_uint(w, "losses", c->losses);
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
        struct counts c = count(s);
        struct comparison cmp = compare(s, r->noise);
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "group", r->g[i].name);
        json_counts(&w, &c);
        json_comparison(&w, &cmp, r->noise);
        json_no_latency(&w, s);
        atr_jw_object_end(&w);
        free(cmp.rows);
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

static int csv_num(struct atr_buf *b, double v)
{
    int rc = atr_buf_putc(b, ',');
    return isfinite(v) ? rc | atr_json_put_pyfloat(b, v) : rc;
}

int atr_bench_report_csv(struct atr_buf *b, const struct atr_bench_report *r)
{
    int rc = atr_buf_puts(b, "group,file,kind,commit,variant,agent,model,status,outcome,"
                             "req_s,tok_s,ttft_p99_ms,tpot_p99_ms,has_latency\n");
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->g[i].set.n; k++) {
            const struct atr_bench_result *x = &r->g[i].set.v[k];
            const char *f[] = {r->g[i].name, x->file, x->kind, x->commit, x->variant,
                               x->agent, x->model, atr_bench_status_name(x->status),
                               atr_bench_outcome_name(x->outcome)};
            for (size_t j = 0; j < sizeof f / sizeof *f; j++)
                rc |= (j ? atr_buf_putc(b, ',') : 0) | csv_str(b, f[j]);
            rc |= csv_num(b, x->req_s) | csv_num(b, x->tok_s) | csv_num(b, x->ttft_p99_ms)
                  | csv_num(b, x->tpot_p99_ms);
            rc |= atr_buf_puts(b, x->has_latency ? ",true\n" : ",false\n");
        }
    return rc ? -1 : 0;
}
