/* html-shapes.c - `atr report`'s Agent shapes section: per trace source,
 * distributions of steps per trace, input and output tokens per llm call,
 * think time (tool time between two llm calls) and prompt growth, and the
 * tool mix; gathered while the traces are read (html.c), rendered as
 * tables and SVG box charts (docs/report.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html-impl.h"
#include "report/html.h"
#include "stats/percentile.h"
#include "util/alloc.h"
#include "util/rng.h"

#define RESERVOIR 100000          /* samples kept per distribution and source */
#define TOP_TOOLS 8               /* tool mix columns before "other" */
#define MAX_TOOLS 1024            /* distinct tool names kept per source */
#define SERIES_COLOURS 8

enum { D_STEPS, D_IN, D_OUT, D_THINK, D_GROWTH, N_DISTS };

static const struct dist {
    const char *id, *title, *unit;
} dists[N_DISTS] = {
    {"steps", "Steps per trace", "steps"},
    {"input", "Input tokens per llm call", "tokens"},
    {"output", "Output tokens per llm call", "tokens"},
    {"think", "Think time (tool time between two llm calls)", "ms"},
    {"growth", "Prompt growth per llm call", "tokens"},
};

struct reservoir {
    struct atr_samples s;
    uint64_t seen;
    double max;
};

struct tool_count {
    char *name;
    uint64_t n;
};

struct shape_src {
    char *name;
    uint64_t traces, steps, llm, tool, tool_other;   /* tool_other: past MAX_TOOLS names */
    struct reservoir d[N_DISTS];
    struct tool_count *tools;
    size_t n_tools, cap_tools;
};

struct atr_html_shapes {
    struct shape_src *src;
    size_t n, cap;
    struct atr_rng rng;       /* seeded: deterministic reservoirs */
};

/* Algorithm R: the first RESERVOIR values kept, then each later one
 * replaces a random kept one with probability RESERVOIR / seen. */
static void sample(struct atr_html_shapes *sh, struct reservoir *r, double x)
{
    r->max = r->seen == 0 || x > r->max ? x : r->max;
    r->seen++;
    if (r->s.n < RESERVOIR) {
        atr_samples_add(&r->s, x);
        return;
    }
    uint64_t j = atr_rng_below(&sh->rng, r->seen);
    if (j < RESERVOIR) {
        r->s.v[j] = x;
        r->s.sorted = false;
    }
}

static struct shape_src *source(struct atr_html_shapes *sh, const char *name)
{
    for (size_t i = 0; i < sh->n; i++)
        if (!strcmp(sh->src[i].name, name))
            return &sh->src[i];
    if (sh->n == sh->cap) {
        sh->cap = sh->cap ? sh->cap * 2 : 8;
        sh->src = xrealloc(sh->src, sh->cap * sizeof *sh->src);
    }
    struct shape_src *s = &sh->src[sh->n++];
    *s = (struct shape_src){.name = xstrdup(name)};
    return s;
}

static void count_tool(struct shape_src *s, const char *name)
{
    for (size_t i = 0; i < s->n_tools; i++)
        if (!strcmp(s->tools[i].name, name)) {
            s->tools[i].n++;
            return;
        }
    if (s->n_tools == MAX_TOOLS) {
        s->tool_other++;
        return;
    }
    if (s->n_tools == s->cap_tools) {
        s->cap_tools = s->cap_tools ? s->cap_tools * 2 : 8;
        s->tools = xrealloc(s->tools, s->cap_tools * sizeof *s->tools);
    }
    s->tools[s->n_tools++] = (struct tool_count){xstrdup(name), 1};
}

void atr_html_shapes_add(struct atr_html *h, const struct atr_trace *t)
{
    if (!h->shapes) {
        h->shapes = xcalloc(1, sizeof *h->shapes);
        atr_rng_seed(&h->shapes->rng, 0x61747273686170ULL, 0);
    }
    struct atr_html_shapes *sh = h->shapes;
    struct shape_src *s = source(sh, t->source && t->source[0] ? t->source : "unknown");
    s->traces++;
    s->steps += t->n_steps;
    sample(sh, &s->d[D_STEPS], (double)t->n_steps);
    int64_t prev_in = ATR_UNSET, think = 0;
    bool seen_llm = false, timed_tool = false;
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct atr_step *st = &t->steps[i];
        if (st->kind == ATR_STEP_TOOL) {
            s->tool++;
            count_tool(s, st->tool && st->tool[0] ? st->tool : "unknown");
            if (st->dur_ms != ATR_UNSET && st->dur_ms >= 0) {
                think += st->dur_ms;
                timed_tool = true;
            }
            continue;
        }
        s->llm++;
        if (st->input_tokens != ATR_UNSET) {
            sample(sh, &s->d[D_IN], (double)st->input_tokens);
            if (prev_in != ATR_UNSET)
                sample(sh, &s->d[D_GROWTH], (double)(st->input_tokens - prev_in));
        }
        prev_in = st->input_tokens;
        if (st->output_tokens != ATR_UNSET)
            sample(sh, &s->d[D_OUT], (double)st->output_tokens);
        if (seen_llm && timed_tool)
            sample(sh, &s->d[D_THINK], (double)think);
        seen_llm = true;
        think = 0;
        timed_tool = false;
    }
}

void atr_html_shapes_free(struct atr_html_shapes *sh)
{
    if (!sh)
        return;
    for (size_t i = 0; i < sh->n; i++) {
        struct shape_src *s = &sh->src[i];
        free(s->name);
        for (size_t d = 0; d < N_DISTS; d++)
            atr_samples_release(&s->d[d].s);
        for (size_t k = 0; k < s->n_tools; k++)
            free(s->tools[k].name);
        free(s->tools);
    }
    free(sh->src);
    free(sh);
}

/* ---- rendering ---- */

struct five {
    double p10, p50, p90, max;
};

static struct five five_of(struct reservoir *r)
{
    if (!r->seen)
        return (struct five){NAN, NAN, NAN, NAN};
    return (struct five){atr_samples_percentile(&r->s, 10), atr_samples_percentile(&r->s, 50),
                         atr_samples_percentile(&r->s, 90), r->max};
}

static void dist_table(struct atr_buf *b, struct atr_html_shapes *sh, size_t d)
{
    atr_buf_printf(b, "<h3>%s (%s)</h3>\n<table class=\"shape\" data-dist=\"%s\"><thead><tr>"
                      "<th>source</th><th>n</th><th>p10</th><th>p50</th><th>p90</th>"
                      "<th>max</th></tr></thead><tbody>\n", dists[d].title, dists[d].unit,
                   dists[d].id);
    for (size_t i = 0; i < sh->n; i++) {
        struct reservoir *r = &sh->src[i].d[d];
        struct five f = five_of(r);
        atr_buf_printf(b, "<tr data-src><td><span class=\"key c%zu\"></span>", i % SERIES_COLOURS);
        atr_html_esc(b, sh->src[i].name);
        atr_buf_printf(b, "</td><td class=\"n\">%llu</td>", (unsigned long long)r->seen);
        int dec = d == D_STEPS || d == D_GROWTH ? 1 : 0;
        atr_html_td_num(b, f.p10, dec);
        atr_html_td_num(b, f.p50, dec);
        atr_html_td_num(b, f.p90, dec);
        atr_html_td_num(b, f.max, 0);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

#define SW 640                    /* chart width, SVG user units */
#define SL 120                    /* left margin: source names */
#define SR 16
#define ST 28                     /* top: the legend */
#define SB 40                     /* bottom: ticks and axis label */
#define ROW 26                    /* per source */

struct xaxis {
    bool log;
    double lo, hi;
};

static double x_at(const struct xaxis *a, double v)
{
    double pw = SW - SL - SR, f;
    if (a->log) {
        v = v < a->lo ? a->lo : v;
        f = (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    } else {
        f = (v - a->lo) / (a->hi - a->lo);
    }
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    return SL + pw * f;
}

static double nice_up(double x)
{
    if (!(x > 0))
        return 1;
    double p = pow(10, floor(log10(x)));
    return x <= p ? p : x <= 2 * p ? 2 * p : x <= 5 * p ? 5 * p : 10 * p;
}

static double nice_down(double x)   /* growth may be negative: the axis's floor */
{
    return x >= 0 ? 0 : -nice_up(-x);
}

/* A row per source: a box from p10 to p90, a tick at p50, a dot at the
 * max, on one axis (log over whole decades when max / min > 100). */
static void dist_chart(struct atr_buf *b, struct atr_html_shapes *sh, size_t d)
{
    struct five *f = xcalloc(sh->n, sizeof *f);
    double lo = INFINITY, hi = -INFINITY, minpos = INFINITY;
    size_t rows = 0;
    for (size_t i = 0; i < sh->n; i++) {
        f[i] = five_of(&sh->src[i].d[d]);
        if (isnan(f[i].p50))
            continue;
        rows++;
        lo = f[i].p10 < lo ? f[i].p10 : lo;
        hi = f[i].max > hi ? f[i].max : hi;
        if (f[i].p10 > 0 && f[i].p10 < minpos)
            minpos = f[i].p10;
        if (f[i].p50 > 0 && f[i].p50 < minpos)
            minpos = f[i].p50;
    }
    if (!rows) {
        free(f);
        return;
    }
    struct xaxis a = {.log = lo >= 0 && isfinite(minpos) && hi / minpos > 100};
    if (a.log) {
        a.lo = pow(10, floor(log10(minpos)));
        a.hi = pow(10, ceil(log10(hi)));
        if (a.hi <= a.lo)
            a.hi = a.lo * 10;
    } else {
        a.lo = nice_down(lo);
        a.hi = nice_up(hi);
        if (a.hi <= a.lo)
            a.hi = a.lo + 1;
    }
    int ch = ST + ROW * (int)sh->n + SB;
    atr_buf_printf(b, "<figure><svg class=\"chart shape-chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
                      "aria-label=\"%s (%s) per source\">\n", SW, ch, dists[d].title, dists[d].unit);
    /* legend */
    atr_buf_printf(b, "<rect class=\"shape-box c7\" x=\"%d\" y=\"8\" width=\"24\" height=\"10\"/>"
                      "<text x=\"%d\" y=\"17\">p10 to p90</text>"
                      "<line class=\"shape-p50\" x1=\"%d\" x2=\"%d\" y1=\"6\" y2=\"20\"/>"
                      "<text x=\"%d\" y=\"17\">p50</text>"
                      "<circle class=\"shape-max\" cx=\"%d\" cy=\"13\" r=\"3\"/>"
                      "<text x=\"%d\" y=\"17\">max</text>\n",
                   SL, SL + 30, SL + 120, SL + 120, SL + 126, SL + 180, SL + 188);
    /* grid and ticks */
    int yb = ST + ROW * (int)sh->n;
    if (a.log) {
        for (double v = a.lo; v <= a.hi * 1.0001; v *= 10) {
            double x = x_at(&a, v);
            atr_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
                              "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
                              "%g</text>\n", x, x, ST, yb, x, yb + 14, v);
        }
    } else {
        for (int i = 0; i <= 4; i++) {
            double v = a.lo + (a.hi - a.lo) * i / 4, x = x_at(&a, v);
            atr_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
                              "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
                              "%g</text>\n", x, x, ST, yb, x, yb + 14, v);
        }
    }
    atr_buf_printf(b, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s (%s%s)"
                      "</text>\n", SL + (SW - SL - SR) / 2, ch - 6, dists[d].title,
                   dists[d].unit, a.log ? ", log scale" : "");
    for (size_t i = 0; i < sh->n; i++) {
        double y = ST + ROW * (double)i;
        atr_buf_printf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", SL - 6, y + ROW / 2 + 4);
        char cut[24];
        snprintf(cut, sizeof cut, "%s", sh->src[i].name);
        size_t k = strlen(cut);
        while (k > 0 && ((unsigned char)cut[k - 1] & 0xc0) == 0x80)   /* whole UTF-8 only */
            k--;
        if (k > 0 && (unsigned char)cut[k - 1] >= 0xc0 && strlen(sh->src[i].name) >= sizeof cut)
            cut[k - 1] = '\0';
        atr_html_esc(b, cut);
        atr_buf_puts(b, "</text>\n");
        if (isnan(f[i].p50))
            continue;
        double x0 = x_at(&a, f[i].p10), x1 = x_at(&a, f[i].p90), xm = x_at(&a, f[i].p50);
        atr_buf_printf(b, "<g><title>");
        atr_html_esc(b, sh->src[i].name);
        atr_buf_printf(b, ": p10 %g, p50 %g, p90 %g, max %g %s (n %llu)</title>"
                          "<rect class=\"shape-box c%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                          "height=\"%d\"/><line class=\"shape-p50\" x1=\"%.1f\" x2=\"%.1f\" "
                          "y1=\"%.1f\" y2=\"%.1f\"/><circle class=\"shape-max\" cx=\"%.1f\" "
                          "cy=\"%.1f\" r=\"3\"/></g>\n", f[i].p10, f[i].p50, f[i].p90, f[i].max,
                       dists[d].unit, (unsigned long long)sh->src[i].d[d].seen,
                       i % SERIES_COLOURS, x0, y + 6, x1 - x0 < 1 ? 1 : x1 - x0, ROW - 12,
                       xm, xm, y + 3, y + ROW - 3, x_at(&a, f[i].max), y + ROW / 2.0);
    }
    atr_buf_printf(b, "</svg><figcaption>%s (%s) per source: box p10 to p90, tick p50, "
                      "dot max</figcaption></figure>\n", dists[d].title, dists[d].unit);
    free(f);
}

static int by_count(const void *x, const void *y)
{
    const struct tool_count *a = x, *b = y;
    return a->n != b->n ? (a->n < b->n ? 1 : -1) : strcmp(a->name, b->name);
}

/* The tool mix: the TOP_TOOLS tool names with the most steps over all
 * sources as columns, the rest as "other"; per source, shares in %. */
static void tool_mix(struct atr_buf *b, struct atr_html_shapes *sh)
{
    struct tool_count *all = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < sh->n; i++)
        for (size_t k = 0; k < sh->src[i].n_tools; k++) {
            size_t j = 0;
            while (j < n && strcmp(all[j].name, sh->src[i].tools[k].name))
                j++;
            if (j == n) {
                if (n == cap)
                    all = xrealloc(all, (cap = cap ? cap * 2 : 16) * sizeof *all);
                all[n++] = (struct tool_count){sh->src[i].tools[k].name, 0};
            }
            all[j].n += sh->src[i].tools[k].n;
        }
    if (n)                   /* no tool step: all is NULL, which qsort may not take */
        qsort(all, n, sizeof *all, by_count);
    size_t top = n < TOP_TOOLS ? n : TOP_TOOLS;
    atr_buf_puts(b, "<h3>Tool mix (% of tool steps)</h3>\n<table class=\"shape\" "
                    "data-dist=\"tools\"><thead><tr><th>source</th><th>tool steps</th>");
    for (size_t j = 0; j < top; j++) {
        atr_buf_puts(b, "<th>");
        atr_html_esc(b, all[j].name);
        atr_buf_puts(b, "</th>");
    }
    atr_buf_puts(b, "<th>other</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < sh->n; i++) {
        struct shape_src *s = &sh->src[i];
        atr_buf_printf(b, "<tr data-src><td><span class=\"key c%zu\"></span>", i % SERIES_COLOURS);
        atr_html_esc(b, s->name);
        atr_buf_printf(b, "</td><td class=\"n\">%llu</td>", (unsigned long long)s->tool);
        uint64_t rest = s->tool;
        for (size_t j = 0; j < top; j++) {
            uint64_t c = 0;
            for (size_t k = 0; k < s->n_tools; k++)
                if (!strcmp(s->tools[k].name, all[j].name))
                    c = s->tools[k].n;
            rest -= c;
            atr_html_td_num(b, s->tool ? 100.0 * (double)c / (double)s->tool : NAN, 2);
        }
        atr_html_td_num(b, s->tool ? 100.0 * (double)rest / (double)s->tool : NAN, 2);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
    free(all);
}

static void summary(struct atr_buf *b, struct atr_html_shapes *sh)
{
    atr_buf_puts(b, "<table class=\"shape\" data-dist=\"summary\"><thead><tr><th>source</th>"
                    "<th>traces</th><th>steps</th><th>llm calls</th><th>tool calls</th>"
                    "<th>prompt growth p50 (tokens per llm call)</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < sh->n; i++) {
        struct shape_src *s = &sh->src[i];
        atr_buf_printf(b, "<tr data-src><td><span class=\"key c%zu\"></span>", i % SERIES_COLOURS);
        atr_html_esc(b, s->name);
        atr_buf_printf(b, "</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
                          "<td class=\"n\">%llu</td><td class=\"n\">%llu</td>",
                       (unsigned long long)s->traces, (unsigned long long)s->steps,
                       (unsigned long long)s->llm, (unsigned long long)s->tool);
        atr_html_td_num(b, s->d[D_GROWTH].seen ? atr_samples_percentile(&s->d[D_GROWTH].s, 50) : NAN, 1);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

void atr_html_shapes_section(struct atr_buf *b, const struct atr_html *h)
{
    struct atr_html_shapes *sh = h->shapes;
    if (!h->traces || !sh)
        return;
    atr_buf_printf(b, "<section id=\"shapes\"><h2>Agent shapes</h2>\n<p>%zu source%s "
                      "(the trace's <code>source</code>). Percentiles are exact (numpy's "
                      "linear method) up to %d values per source and distribution, over a "
                      "deterministic sample beyond; n and max count every value.</p>\n",
                   sh->n, sh->n == 1 ? "" : "s", RESERVOIR);
    summary(b, sh);
    for (size_t d = 0; d < N_DISTS; d++) {
        dist_table(b, sh, d);
        dist_chart(b, sh, d);
    }
    tool_mix(b, sh);
    atr_buf_puts(b, "</section>\n");
}
