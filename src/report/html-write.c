/* html-write.c - `atr report`'s page: the sections as HTML tables and SVG
 * charts (readable without JS, printable), the data as JSON for the JS,
 * and the CSS and JS (src/report/assets/, embedded at build time) inline.
 *
 * Escaping: every text from an input goes through atr_html_escape; the
 * JSON data block has every '<' written as \u003c, so nothing in it can
 * close the <script> element it sits in. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/writer.h"
#include "report/compare.h"
#include "report/html-impl.h"
#include "report/html.h"

/* Okabe-Ito; the CSS colours series by class c0..c7 (report.css). */
#define SERIES_COLOURS 8

/* The four latency figures of vLLM's result, in its order. */
static const struct metric {
    const char *key, *label;
} metrics[] = {
    {"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2el", "E2EL"},
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])
#define MAX_STATS 16              /* mean, median, std and percentiles */

int atr_html_escape(struct atr_buf *b, const char *s, size_t len)
{
    size_t from = 0;
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0; i++) {
        const char *e = NULL;
        switch (s[i]) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&quot;"; break;
        case '\'': e = "&#39;"; break;
        case '\0': e = "\xef\xbf\xbd"; break;
        default: continue;
        }
        rc = atr_buf_append(b, s + from, i - from) | atr_buf_puts(b, e);
        from = i + 1;
    }
    return rc ? -1 : atr_buf_append(b, s + from, len - from);
}

void atr_html_esc(struct atr_buf *b, const char *s)
{
    if (s)
        atr_html_escape(b, s, strlen(s));
    else
        atr_buf_puts(b, "n/a");
}

void atr_html_num(struct atr_buf *b, double x, int decimals)
{
    if (isnan(x) || isinf(x))
        atr_buf_puts(b, "n/a");
    else
        atr_buf_printf(b, "%.*f", decimals, x);
}

void atr_html_td_num(struct atr_buf *b, double x, int decimals)
{
    atr_buf_puts(b, "<td class=\"n\">");
    atr_html_num(b, x, decimals);
    atr_buf_puts(b, "</td>");
}

void atr_html_td_str(struct atr_buf *b, const char *s)
{
    atr_buf_puts(b, "<td>");
    atr_html_esc(b, s);
    atr_buf_puts(b, "</td>");
}

double atr_html_get_num(const struct atr_json *o, const char *key)
{
    double v;
    return o && atr_json_get_num(o, key, &v) ? v : NAN;
}

void atr_html_trace_row(struct atr_buf *b, uint64_t i, const char *file,
                        const struct atr_trace *t, const struct atr_html_figures *f)
{
    atr_buf_printf(b, "<tr data-i=\"%llu\"><td class=\"n\">%llu</td>", (unsigned long long)i,
                   (unsigned long long)i + 1);
    atr_html_td_str(b, file);
    atr_html_td_str(b, t->source);
    atr_html_td_str(b, t->trace_id);
    atr_html_td_num(b, (double)t->n_steps, 0);
    atr_html_td_num(b, (double)f->llm, 0);
    atr_html_td_num(b, (double)f->tool, 0);
    atr_html_td_num(b, (double)f->in, 0);
    atr_html_td_num(b, (double)f->out, 0);
    atr_html_td_num(b, f->dur < 0 ? NAN : (double)f->dur / 1000, 1);
    atr_html_td_num(b, f->reuse * 100, 1);
    atr_buf_puts(b, "</tr>\n");
}

/* ---- page frame ---- */

static void head(struct atr_buf *b, const char *title)
{
    atr_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                    "<meta name=\"color-scheme\" content=\"light dark\">\n<title>");
    atr_html_esc(b, title ? title : "atr report");
    atr_buf_puts(b, "</title>\n<style>\n");
    atr_buf_puts(b, (const char *)atr_report_css);
    atr_buf_puts(b, "</style>\n</head>\n<body>\n<header><h1>");
    atr_html_esc(b, title ? title : "atr report");
    atr_buf_puts(b, "</h1><nav>");
}

static void nav(struct atr_buf *b, const struct atr_html *h)
{
    atr_buf_puts(b, "<a href=\"#overview\">Overview</a>");
    if (h->traces)
        atr_buf_puts(b, " <a href=\"#traces\">Traces</a> <a href=\"#shapes\">Agent shapes</a>");
    if (h->n_results || atr_html_reqsets(h))
        atr_buf_puts(b, " <a href=\"#results\">Results</a>");
    if (h->n_sweeps)
        atr_buf_puts(b, " <a href=\"#sweeps\">Sweeps</a>");
    if (h->n_replays)
        atr_buf_puts(b, " <a href=\"#replay\">Tool replay</a>");
    if (atr_html_has_router(h))
        atr_buf_puts(b, " <a href=\"#router\">Router lab</a>");
    if (h->bench)
        atr_buf_puts(b, " <a href=\"#bench\">Bench</a>");
    atr_buf_puts(b, " <a href=\"#appendix\">Data</a></nav></header>\n<main>\n");
}

/* The headline: among results of policies, the one with the lowest mean
 * end-to-end latency against `naive`'s, as a sentence; nothing unless
 * both are there (one sentence a reader can quote, with its figures). */
static void headline(struct atr_buf *b, const struct atr_html *h)
{
    struct atr_html_pick p;   /* result files first, else per-request files */
    if (!atr_html_pick_best(h, &p))
        return;
    double cut = 100.0 * (1.0 - p.best_ms / p.naive_ms);
    atr_buf_puts(b, "<p class=\"headline\">");
    atr_html_esc(b, p.best);
    atr_buf_printf(b, " %s mean end-to-end latency %.0f %% against naive on these "
                      "traces (%.1f ms &rarr; %.1f ms).</p>\n",
                   cut >= 0 ? "cuts" : "raises", fabs(cut), p.naive_ms, p.best_ms);
}

static void overview(struct atr_buf *b, const struct atr_html *h)
{
    size_t trace_files = 0;
    for (size_t i = 0; i < h->n_inputs; i++)
        trace_files += h->inputs[i].kind == ATR_HTML_TRACES;
    atr_buf_puts(b, "<section id=\"overview\"><h2>Overview</h2>\n");
    headline(b, h);
    atr_html_race(b, h);
    atr_buf_puts(b, "<table class=\"kv\">\n");
    atr_buf_printf(b, "<tr><th>inputs</th><td class=\"n\">%zu</td></tr>\n", h->n_inputs);
    atr_buf_printf(b, "<tr><th>trace files</th><td class=\"n\">%zu</td></tr>\n", trace_files);
    atr_buf_printf(b, "<tr><th>traces</th><td class=\"n\">%llu</td></tr>\n",
                   (unsigned long long)h->traces);
    atr_buf_printf(b, "<tr><th>steps</th><td class=\"n\">%llu</td></tr>\n",
                   (unsigned long long)h->steps);
    atr_buf_printf(b, "<tr><th>result files</th><td class=\"n\">%zu</td></tr>\n", h->n_results);
    atr_buf_printf(b, "<tr><th>per-request files</th><td class=\"n\">%zu</td></tr>\n",
                   atr_html_reqsets(h));
    atr_buf_printf(b, "<tr><th>sweep files</th><td class=\"n\">%zu</td></tr>\n", h->n_sweeps);
    atr_buf_printf(b, "<tr><th>tool replay folders</th><td class=\"n\">%zu</td></tr>\n",
                   h->n_replays);
    atr_buf_printf(b, "<tr><th>bench groups</th><td class=\"n\">%zu</td></tr>\n",
                   h->bench_groups);
    atr_buf_puts(b, "</table></section>\n");
}

static void traces(struct atr_buf *b, const struct atr_html *h)
{
    if (!h->traces)
        return;
    atr_buf_printf(b, "<section id=\"traces\"><h2>Traces</h2>\n<p>%llu trace%s. "
                      "Click a row for its step timeline.</p>\n<div id=\"trace-tools\"></div>\n",
                   (unsigned long long)h->traces, h->traces == 1 ? "" : "s");
    atr_buf_puts(b, "<table id=\"trace-table\"><thead><tr><th>#</th><th>file</th>"
                    "<th>source</th><th>id</th><th>steps</th><th>llm</th><th>tool</th>"
                    "<th>input tokens</th><th>output tokens</th><th>duration (s)</th>"
                    "<th>prefix reuse (%)</th></tr></thead>\n<tbody>\n");
    atr_buf_append(b, h->trace_rows.data, h->trace_rows.len);
    atr_buf_puts(b, "</tbody></table>\n");
    if (h->traces > ATR_HTML_STATIC_ROWS)
        atr_buf_printf(b, "<p class=\"muted\">Without JavaScript only the first %d rows are "
                          "shown; the explorer pages through all %llu.</p>\n",
                       ATR_HTML_STATIC_ROWS, (unsigned long long)h->traces);
    atr_buf_puts(b, "<div id=\"timeline\"></div></section>\n");
}

/* ---- results ---- */

/* The statistic a key names for metric m ("p99" for "p99_ttft_ms"), or
 * NULL when it names none. */
static const char *stat_of(const struct atr_json *member, const char *m, char *out, size_t cap)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, "_%s_ms", m);
    size_t n = member->key_len, sl = strlen(suffix);
    if (n <= sl || n - sl >= cap || memcmp(member->key + n - sl, suffix, sl) != 0)
        return NULL;
    memcpy(out, member->key, n - sl);
    out[n - sl] = '\0';
    bool pct = out[0] == 'p' && strspn(out + 1, "0123456789.") == strlen(out + 1) && out[1];
    bool named = !strcmp(out, "mean") || !strcmp(out, "median") || !strcmp(out, "std");
    return pct || named ? out : NULL;
}

/* The statistics of metric m over all results, in the order first found. */
static size_t stats_of(const struct atr_html *h, const char *m, char names[][16])
{
    size_t n = 0;
    for (size_t r = 0; r < h->n_results; r++)
        for (const struct atr_json *e = h->results[r].root->u.kids.first; e; e = e->next) {
            char s[16];
            if (!stat_of(e, m, s, sizeof s) || n == MAX_STATS)
                continue;
            size_t k = 0;
            while (k < n && strcmp(names[k], s))
                k++;
            if (k == n)
                memcpy(names[n++], s, sizeof s);
        }
    return n;
}

static double figure(const struct atr_json *root, const char *stat, const char *m)
{
    char key[320];
    double v;
    snprintf(key, sizeof key, "%s_%s_ms", stat, m);
    return atr_json_get_num(root, key, &v) ? v : NAN;
}

static void latency_table(struct atr_buf *b, const struct atr_html *h, const struct metric *m)
{
    char names[MAX_STATS][16];
    size_t n = stats_of(h, m->key, names);
    if (!n)
        return;
    atr_buf_printf(b, "<h3>%s (ms)</h3>\n<table><thead><tr><th>result</th>", m->label);
    for (size_t s = 0; s < n; s++)
        atr_buf_printf(b, "<th>%s</th>", names[s]);
    atr_buf_puts(b, "</tr></thead><tbody>\n");
    for (size_t r = 0; r < h->n_results; r++) {
        atr_buf_printf(b, "<tr><td><span class=\"key c%zu\"></span>", r % SERIES_COLOURS);
        atr_html_esc(b, h->results[r].name);
        atr_buf_puts(b, "</td>");
        for (size_t s = 0; s < n; s++)
            atr_html_td_num(b, figure(h->results[r].root, names[s], m->key), 2);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

/* The smallest 1, 2 or 5 times a power of ten at or above x. */
static double nice_ceiling(double x)
{
    if (!(x > 0))
        return 1;
    double p = pow(10, floor(log10(x)));
    return x <= p ? p : x <= 2 * p ? 2 * p : x <= 5 * p ? 5 * p : 10 * p;
}

#define CW 640                    /* chart size, SVG user units */
#define CH 260
#define CL 64                     /* plot area margins */
#define CR 16
#define CT 16
#define CB 48

static void chart_axes(struct atr_buf *b, const struct metric *m, double top)
{
    double ph = CH - CT - CB;
    for (int i = 0; i <= 4; i++) {
        double y = CT + ph - ph * i / 4;
        atr_buf_printf(b, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                          "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
                       CL, CW - CR, y, y, CL - 6, y + 4);
        atr_html_num(b, top * i / 4, top >= 20 ? 0 : 2);
        atr_buf_puts(b, "</text>\n");
    }
    atr_buf_printf(b, "<text class=\"axis\" transform=\"translate(14 %d) rotate(-90)\" "
                      "text-anchor=\"middle\">%s (ms)</text>\n", CT + (CH - CT - CB) / 2,
                   m->label);
    atr_buf_printf(b, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
                      "statistic</text>\n", CL + (CW - CL - CR) / 2, CH - 6);
}

static void chart_bars(struct atr_buf *b, const struct atr_html *h, const struct metric *m,
                       char names[][16], size_t n, double top)
{
    double pw = CW - CL - CR, ph = CH - CT - CB, gw = pw / (double)n;
    double bw = gw * 0.8 / (double)h->n_results;
    for (size_t s = 0; s < n; s++) {
        double gx = CL + gw * (double)s;
        atr_buf_printf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
                          "%s</text>\n", gx + gw / 2, CH - CB + 16, names[s]);
        for (size_t r = 0; r < h->n_results; r++) {
            double v = figure(h->results[r].root, names[s], m->key);
            if (isnan(v) || v < 0)
                continue;
            double bh = ph * v / top;
            atr_buf_printf(b, "<rect class=\"c%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                              "height=\"%.1f\"><title>", r % SERIES_COLOURS,
                           gx + gw * 0.1 + bw * (double)r, CT + ph - bh, bw, bh);
            atr_html_esc(b, h->results[r].name);
            atr_buf_printf(b, ": %s %s = %.2f ms</title></rect>\n", m->label, names[s], v);
        }
    }
}

/* One bar chart of metric m: a group per statistic (std left out), a bar
 * per result, value axis in ms from 0. */
static void latency_chart(struct atr_buf *b, const struct atr_html *h, const struct metric *m)
{
    char all[MAX_STATS][16], names[MAX_STATS][16];
    size_t n_all = stats_of(h, m->key, all), n = 0;
    double max = 0;
    for (size_t s = 0; s < n_all; s++) {
        if (!strcmp(all[s], "std"))
            continue;
        memcpy(names[n++], all[s], 16);
        for (size_t r = 0; r < h->n_results; r++) {
            double v = figure(h->results[r].root, all[s], m->key);
            max = v > max ? v : max;
        }
    }
    if (!n)
        return;
    double top = nice_ceiling(max);
    atr_buf_printf(b, "<figure><svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
                      "aria-label=\"%s by statistic, ms\">\n", CW, CH, m->label);
    chart_axes(b, m, top);
    chart_bars(b, h, m, names, n, top);
    atr_buf_printf(b, "</svg><figcaption>%s (ms) per statistic; one bar per result"
                      "</figcaption></figure>\n", m->label);
}


/* The result's client verdict (exp/client-bound.h), or NULL: a simulator
 * run, or a file from before the verdict. */
static const struct atr_json *client_of(const struct atr_json *root)
{
    const struct atr_json *c = atr_json_get(atr_json_get(root, "atr"), "client");
    return c && atr_json_is(c, ATR_JSON_OBJECT) ? c : NULL;
}

/* "client-bound: why" where atr's client limited the run, else "no". */
static void td_client(struct atr_buf *b, const struct atr_json *c)
{
    const struct atr_json *bound = c ? atr_json_get(c, "client_bound") : NULL;
    if (!bound || bound->type != ATR_JSON_TRUE) {
        atr_html_td_str(b, c ? "no" : NULL);
        return;
    }
    atr_buf_puts(b, "<td><strong>client-bound</strong>: ");
    atr_html_esc(b, atr_json_get_str(c, "reason", NULL) ? atr_json_get_str(c, "reason", NULL)
                                                        : "");
    atr_buf_puts(b, "</td>");
}

static void throughput_table(struct atr_buf *b, const struct atr_html *h)
{
    bool client = false;   /* the column only where some run was against a server */
    for (size_t r = 0; r < h->n_results; r++)
        client |= client_of(h->results[r].root) != NULL;
    atr_buf_puts(b, "<h3>Throughput</h3>\n<table><thead><tr><th>result</th><th>target</th>"
                    "<th>policy</th><th>completed</th><th>failed</th><th>duration (s)</th>"
                    "<th>requests/s</th><th>output tokens/s</th><th>total tokens/s</th>");
    atr_buf_puts(b, client ? "<th>client-bound</th></tr></thead><tbody>\n"
                           : "</tr></thead><tbody>\n");
    for (size_t r = 0; r < h->n_results; r++) {
        const struct atr_json *root = h->results[r].root, *atr = atr_json_get(root, "atr");
        atr_buf_printf(b, "<tr><td><span class=\"key c%zu\"></span>", r % SERIES_COLOURS);
        atr_html_esc(b, h->results[r].name);
        atr_buf_puts(b, "</td>");
        atr_html_td_str(b, atr ? atr_json_get_str(atr, "target", NULL) : NULL);
        atr_html_td_str(b, atr ? atr_json_get_str(atr, "policy", NULL) : NULL);
        atr_html_td_num(b, atr_html_get_num(root, "completed"), 0);
        atr_html_td_num(b, atr_html_get_num(root, "failed"), 0);
        atr_html_td_num(b, atr_html_get_num(root, "duration"), 2);
        atr_html_td_num(b, atr_html_get_num(root, "request_throughput"), 3);
        atr_html_td_num(b, atr_html_get_num(root, "output_throughput"), 1);
        atr_html_td_num(b, atr_html_get_num(root, "total_token_throughput"), 1);
        if (client)
            td_client(b, client_of(root));
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

/* Whether some row has a cut: a target with naive and another policy. */
static bool any_cut(const struct atr_compare_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isnan(rows[i].e2el_cut_pct) || !isnan(rows[i].ttft_cut_pct))
            return true;
    return false;
}

/* `atr compare`'s table of the result files (its rows, its order and cuts:
 * report/compare.h), when some target has naive and another policy. */
static void policy_table(struct atr_buf *b, const struct atr_html *h)
{
    size_t n = 0;
    const struct atr_compare_row *rows = h->policies ? atr_compare_rows(h->policies, &n) : NULL;
    if (!any_cut(rows, n))
        return;
    atr_buf_puts(b, "<h3 id=\"policies\">Policies</h3>\n<p>The result files as "
                    "<code>atr compare</code> reads them: per target, each policy's cut of "
                    "the mean latency against that target's <code>naive</code>; prefix hit "
                    "is cached over prompt tokens (a real engine's own "
                    "<code>cached_tokens</code>).</p>\n<table><thead><tr><th>target</th>"
                    "<th>policy</th><th>mean TTFT (ms)</th><th>p99 TTFT (ms)</th>"
                    "<th>mean E2E (ms)</th><th>p99 E2E (ms)</th><th>prefix hit (%)</th>"
                    "<th>TTFT cut (%)</th><th>E2E cut (%)</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < n; i++) {
        const struct atr_compare_row *r = &rows[i];
        atr_buf_puts(b, "<tr>");
        atr_html_td_str(b, r->target);
        atr_html_td_str(b, r->policy);
        atr_html_td_num(b, r->ttft_mean_ms, 1);
        atr_html_td_num(b, r->ttft_p99_ms, 1);
        atr_html_td_num(b, r->e2el_mean_ms, 1);
        atr_html_td_num(b, r->e2el_p99_ms, 1);
        atr_html_td_num(b, 100.0 * r->prefix_hit_rate, 1);
        atr_html_td_num(b, r->ttft_cut_pct, 1);
        atr_html_td_num(b, r->e2el_cut_pct, 1);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

/* A result's "sessions"."kv_retention" (stats/retention.h), or NULL. */
static const struct atr_json *retention_of(const struct atr_json *root)
{
    const struct atr_json *s = atr_json_get(atr_json_get(root, "atr"), "sessions");
    const struct atr_json *k = s ? atr_json_get(s, "kv_retention") : NULL;
    const struct atr_json *bins = k ? atr_json_get(k, "bins") : NULL;
    return bins && atr_json_is(bins, ATR_JSON_ARRAY) && !bins->packed ? bins : NULL;
}

/* A result's atr.engine when it ran with --kv-retain (kv_pins there), or
 * NULL: the knob's cost is shown beside its curve. */
static const struct atr_json *pins_of(const struct atr_json *root)
{
    const struct atr_json *e = atr_json_get(atr_json_get(root, "atr"), "engine");
    return e && atr_html_get_num(e, "kv_pins") > 0 ? e : NULL;
}

/* The knob's cost cells of one row: pins, pins dropped, evictions ("-"
 * where the run has none, as a run without the knob has no pins). */
static void pins_cells(struct atr_buf *b, const struct atr_json *root)
{
    const struct atr_json *e = atr_json_get(atr_json_get(root, "atr"), "engine");
    static const char *const keys[] = {"kv_pins", "kv_pins_dropped", "evictions"};
    for (int i = 0; i < 3; i++)
        atr_html_td_num(b, e ? atr_html_get_num(e, keys[i]) : NAN, 0);
}

/* KV retention across tool pauses: per result, per pause bin, the share
 * of the prefix a later turn shared with the one before that was still
 * cached, and how many turns paused that long. */
static void retention_table(struct atr_buf *b, const struct atr_html *h)
{
    const struct atr_json *first = NULL;
    bool pins = false;
    for (size_t r = 0; r < h->n_results; r++) {
        if (!first)
            first = retention_of(h->results[r].root);
        pins |= pins_of(h->results[r].root) != NULL;
    }
    if (!first)
        return;
    atr_buf_puts(b, "<h3>KV cache across tool pauses</h3>\n<p>Of the prefix a session's "
                    "turn shares with its previous turn, the share the server still had "
                    "cached, by how long the session paused in between (tools, thinking); "
                    "turns in brackets. How long a cache must hold a session to keep its "
                    "hits: read along a row.</p>\n<table><thead><tr><th>result</th>");
    for (const struct atr_json *bin = first->u.kids.first; bin; bin = bin->next) {
        double lo = atr_html_get_num(bin, "pause_from_s"), hi = atr_html_get_num(bin, "pause_to_s");
        if (isnan(hi))
            atr_buf_printf(b, "<th>pause &ge; %g s</th>", lo);
        else
            atr_buf_printf(b, "<th>%g-%g s</th>", lo, hi);
    }
    if (pins)   /* the cost of holding sessions: sim --kv-retain */
        atr_buf_puts(b, "<th>kv pins</th><th>pins dropped</th><th>evictions</th>");
    atr_buf_puts(b, "</tr></thead><tbody>\n");
    for (size_t r = 0; r < h->n_results; r++) {
        const struct atr_json *bins = retention_of(h->results[r].root);
        if (!bins)
            continue;
        atr_buf_printf(b, "<tr><td><span class=\"key c%zu\"></span>", r % SERIES_COLOURS);
        atr_html_esc(b, h->results[r].name);
        atr_buf_puts(b, "</td>");
        for (const struct atr_json *bin = bins->u.kids.first; bin; bin = bin->next) {
            double reuse = atr_html_get_num(bin, "reuse"), turns = atr_html_get_num(bin, "turns");
            if (isnan(reuse))
                atr_buf_puts(b, "<td class=\"n muted\">-</td>");
            else
                atr_buf_printf(b, "<td class=\"n\">%.1f %% (%.0f)</td>", reuse * 100, turns);
        }
        if (pins)
            pins_cells(b, h->results[r].root);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

/* A result's "atr"."agent" (atr replay agent), or NULL. */
static const struct atr_json *agent_of(const struct atr_json *root)
{
    const struct atr_json *a = atr_json_get(atr_json_get(root, "atr"), "agent");
    return a && atr_json_is(a, ATR_JSON_OBJECT) ? a : NULL;
}

static void td_share(struct atr_buf *b, const struct atr_json *split, const char *key)
{
    double v = split ? atr_html_get_num(split, key) : NAN;
    atr_html_td_num(b, isnan(v) ? v : 100 * v, 1);
}

/* A whole result's row: its summed completion time and the split's shares. */
static void agent_row(struct atr_buf *b, const char *name, const struct atr_json *o,
                      const struct atr_json *split, double completion_s)
{
    atr_buf_puts(b, "<tr>");
    atr_html_td_str(b, name);
    atr_html_td_num(b, completion_s, 3);
    td_share(b, split, "model_share");
    td_share(b, split, "tool_share");
    td_share(b, split, "queue_share");
    td_share(b, split, "other_share");
    atr_html_td_num(b, atr_html_get_num(o, "tool_cpu_s"), 3);
    atr_html_td_num(b, atr_html_get_num(o, "tool_peak_rss_mb"), 1);
    atr_buf_puts(b, "</tr>\n");
}

/* Sessions of `atr replay agent`: the share of their end-to-end time the
 * model, the tools (real processes), queueing and handoffs took. */
static void agent_table(struct atr_buf *b, const struct atr_html *h)
{
    bool any = false;
    for (size_t r = 0; r < h->n_results && !any; r++)
        any = agent_of(h->results[r].root) != NULL;
    if (!any)
        return;
    atr_buf_puts(b, "<h3>Agent sessions: model vs tool time</h3>\n<p>Results of "
                    "<code>atr replay agent</code>: each session's llm turns sent to the "
                    "target and its tool steps run as real processes in between; the share "
                    "of the summed session completion time (per session below it) that was "
                    "model time, tool time, queueing and handoffs (AgentCgroup reports "
                    "OS-level work at 56-74 %).</p>\n<table><thead><tr><th>result / "
                    "session</th><th>completion (s)</th><th>model (%)</th><th>tool (%)</th>"
                    "<th>queue (%)</th><th>other (%)</th><th>tool CPU (s)</th>"
                    "<th>tool peak (MB)</th></tr></thead><tbody>\n");
    for (size_t r = 0; r < h->n_results; r++) {
        const struct atr_json *a = agent_of(h->results[r].root);
        if (!a)
            continue;
        const struct atr_json *split = atr_json_get(a, "split");
        agent_row(b, h->results[r].name, a, split,
                  split ? atr_html_get_num(split, "completion_s") : NAN);
        const struct atr_json *ps = atr_json_get(a, "per_session");
        size_t shown = 0;
        for (const struct atr_json *s = ps && atr_json_is(ps, ATR_JSON_ARRAY) && !ps->packed
                                            ? ps->u.kids.first : NULL;
             s && shown < 50; s = s->next, shown++) {
            double c = atr_html_get_num(s, "completion_s");
            char name[300];
            const char *id = atr_json_get_str(s, "trace_id", NULL);
            snprintf(name, sizeof name, "  %s", id ? id : "?");
            /* A session's parts are seconds: its shares are parts over c. */
            atr_buf_puts(b, "<tr>");
            atr_html_td_str(b, name);
            atr_html_td_num(b, c, 3);
            const char *parts[] = { "model_s", "tool_s", "queue_s", "other_s" };
            for (size_t k = 0; k < 4; k++)
                atr_html_td_num(b, c > 0 ? 100 * atr_html_get_num(s, parts[k]) / c : NAN, 1);
            atr_html_td_num(b, atr_html_get_num(s, "tool_cpu_s"), 3);
            atr_html_td_num(b, atr_html_get_num(s, "tool_peak_rss_mb"), 1);
            atr_buf_puts(b, "</tr>\n");
        }
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

/* A result's "sessions" when it has DAG figures (critical path), or NULL. */
static const struct atr_json *dag_sessions_of(const struct atr_json *root)
{
    const struct atr_json *s = atr_json_get(atr_json_get(root, "atr"), "sessions");
    return s && !isnan(atr_html_get_num(s, "mean_critical_path_ms")) ? s : NULL;
}

/* DAG sessions (sub-agents): per result, the completion time beside the
 * critical path (the longest chain of dependent turns' model time) and
 * the parallelism achieved; only results that have them. */
static void dag_table(struct atr_buf *b, const struct atr_html *h)
{
    bool any = false;
    for (size_t r = 0; r < h->n_results && !any; r++)
        any = dag_sessions_of(h->results[r].root) != NULL;
    if (!any)
        return;
    atr_buf_puts(b, "<h3>Sessions with sub-agents</h3>\n<p>Per session, means: completion "
                    "time, the critical path (the longest chain of dependent turns' model "
                    "time) and the parallelism achieved (model time over completion: above "
                    "1 when branches overlapped).</p>\n<table><thead><tr><th>result</th>"
                    "<th>completion (s)</th><th>critical path (s)</th><th>parallelism</th>"
                    "</tr></thead><tbody>\n");
    for (size_t r = 0; r < h->n_results; r++) {
        const struct atr_json *s = dag_sessions_of(h->results[r].root);
        if (!s)
            continue;
        const struct atr_json *par = atr_json_get(s, "parallelism");
        atr_buf_printf(b, "<tr><td><span class=\"key c%zu\"></span>", r % SERIES_COLOURS);
        atr_html_esc(b, h->results[r].name);
        atr_buf_printf(b, "</td><td class=\"n\">%.1f</td><td class=\"n\">%.1f</td>"
                          "<td class=\"n\">%.2f</td></tr>\n",
                       atr_html_get_num(s, "mean_completion_ms") / 1000,
                       atr_html_get_num(s, "mean_critical_path_ms") / 1000,
                       par ? atr_html_get_num(par, "mean") : NAN);
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

static void results(struct atr_buf *b, const struct atr_html *h)
{
    if (!h->n_results && !atr_html_reqsets(h))
        return;
    atr_buf_puts(b, "<section id=\"results\"><h2>Results</h2>\n");
    atr_html_requests_section(b, h);   /* per-request files: html-results.c */
    if (h->n_results) {
        atr_buf_printf(b, "<h3>Result files</h3>\n<p>%zu result file%s (vLLM's figures; "
                          "percentiles as in <code>vllm bench serve</code>).</p>\n",
                       h->n_results, h->n_results == 1 ? "" : "s");
        throughput_table(b, h);
        policy_table(b, h);
        retention_table(b, h);
        agent_table(b, h);
        dag_table(b, h);
    }
    for (size_t m = 0; h->n_results && m < N_METRICS; m++) {
        latency_table(b, h, &metrics[m]);
        latency_chart(b, h, &metrics[m]);
    }
    atr_buf_puts(b, "</section>\n");
}

/* ---- sweeps ---- */

/* A run's figure under metrics (a number), or NAN. */
static double run_num(const struct atr_json *run, const char *key)
{
    const struct atr_json *m = atr_json_get(run, "metrics");
    return m && atr_json_is(m, ATR_JSON_OBJECT) ? atr_html_get_num(m, key) : NAN;
}

/* A run's p99 of a latency ("ttft_ms"), or NAN. */
static double run_p99(const struct atr_json *run, const char *key)
{
    const struct atr_json *m = atr_json_get(run, "metrics");
    const struct atr_json *o = m && atr_json_is(m, ATR_JSON_OBJECT) ? atr_json_get(m, key) : NULL;
    return o && atr_json_is(o, ATR_JSON_OBJECT) ? atr_html_get_num(o, "p99") : NAN;
}

/* The SLO object, or NULL when the sweep had none. */
static const struct atr_json *sweep_slo(const struct atr_json *root)
{
    const struct atr_json *slo = atr_json_get(root, "slo");
    return slo && atr_json_is(slo, ATR_JSON_OBJECT) ? slo : NULL;
}

/* The index into runs of the goodput run, or -1. */
static long goodput_run(const struct atr_json *root, double *rate)
{
    const struct atr_json *g = atr_json_get(root, "goodput");
    double v;
    *rate = NAN;
    if (!g || !atr_json_is(g, ATR_JSON_OBJECT) || !atr_json_get_num(g, "run", &v) || v < 0 ||
        v > 1e9)
        return -1;
    *rate = atr_html_get_num(g, "goodput_rate");
    return (long)v;
}

static void sweep_header(struct atr_buf *b, const struct atr_html_sweep *sw)
{
    const struct atr_json *root = sw->root, *w = atr_json_get(root, "workload"), *slo;
    atr_buf_puts(b, "<h3>");
    atr_html_esc(b, sw->name);
    atr_buf_puts(b, "</h3>\n<p>target ");
    atr_html_esc(b, atr_json_get_str(root, "target", NULL));
    const char *policy = atr_json_get_str(root, "policy", NULL);
    atr_buf_puts(b, ", policy ");
    atr_html_esc(b, policy ? policy : "none");
    if (w && atr_json_is(w, ATR_JSON_OBJECT)) {
        const char *kind = atr_json_get_str(w, "kind", NULL);
        atr_buf_puts(b, "; workload ");
        atr_html_esc(b, kind);
        if (kind && !strcmp(kind, "generated")) {
            atr_buf_puts(b, ", ");
            atr_html_num(b, atr_html_get_num(w, "requests"), 0);
            atr_buf_puts(b, " requests of ");
            atr_html_num(b, atr_html_get_num(w, "input_tokens"), 0);
            atr_buf_puts(b, " input and ");
            atr_html_num(b, atr_html_get_num(w, "output_tokens"), 0);
            atr_buf_puts(b, " output tokens");
        } else {
            atr_buf_puts(b, ", ");
            atr_html_num(b, atr_html_get_num(w, "sessions"), 0);
            atr_buf_puts(b, " sessions, ");
            atr_html_num(b, atr_html_get_num(w, "turns"), 0);
            atr_buf_puts(b, " turns");
        }
        atr_buf_puts(b, ", seed ");
        atr_html_num(b, atr_html_get_num(w, "seed"), 0);
    }
    atr_buf_puts(b, "; SLO ");
    if (!(slo = sweep_slo(root)) || !slo->u.kids.first)
        atr_buf_puts(b, "none");
    for (const struct atr_json *e = slo ? slo->u.kids.first : NULL; e; e = e->next) {
        size_t n = e->key_len > 3 && !memcmp(e->key + e->key_len - 3, "_ms", 3) ? e->key_len - 3
                                                                               : e->key_len;
        atr_html_escape(b, e->key, n);
        atr_buf_puts(b, " &le; ");
        atr_html_num(b, atr_json_is(e, ATR_JSON_NUMBER) ? e->u.num : NAN, 1);
        atr_buf_puts(b, e->next ? " ms, " : " ms");
    }
    atr_buf_puts(b, "</p>\n");
}

static void sweep_table(struct atr_buf *b, const struct atr_html_sweep *sw)
{
    const struct atr_json *runs = atr_json_get(sw->root, "runs");
    bool slo = sweep_slo(sw->root) != NULL;
    double rate;
    long gp = goodput_run(sw->root, &rate);
    atr_buf_puts(b, "<table class=\"sweep\"><thead><tr><th>#</th><th>kind</th>"
                    "<th>rate asked (sessions/s)</th><th>achieved requests/s</th>"
                    "<th>output tokens/s</th><th>TTFT p99 (ms)</th><th>TPOT p99 (ms)</th>"
                    "<th>E2EL p99 (ms)</th>");
    if (slo)
        atr_buf_puts(b, "<th>meets SLO</th>");
    atr_buf_puts(b, "</tr></thead><tbody>\n");
    long i = 0;
    for (const struct atr_json *r = runs->u.kids.first; r; r = r->next, i++) {
        const char *kind = atr_json_get_str(r, "kind", NULL);
        atr_buf_printf(b, "<tr data-run=\"%ld\"><td class=\"n\">%ld</td><td>", i, i + 1);
        atr_html_esc(b, kind);
        if (i == gp)
            atr_buf_puts(b, " <strong>(goodput)</strong>");
        atr_buf_puts(b, "</td>");
        double v;
        if (atr_json_get_num(r, "rate", &v))
            atr_html_td_num(b, v, 3);
        else
            atr_html_td_str(b, kind && !strcmp(kind, "synchronous") ? "sync"
                      : kind && !strcmp(kind, "throughput") ? "max" : NULL);
        atr_html_td_num(b, run_num(r, "request_throughput"), 3);
        atr_html_td_num(b, run_num(r, "output_throughput"), 1);
        atr_html_td_num(b, run_p99(r, "ttft_ms"), 2);
        atr_html_td_num(b, run_p99(r, "tpot_ms"), 2);
        atr_html_td_num(b, run_p99(r, "e2el_ms"), 2);
        if (slo) {
            const struct atr_json *m = atr_json_get(r, "meets_slo");
            atr_html_td_str(b, m && atr_json_is(m, ATR_JSON_TRUE) ? "yes"
                      : m && atr_json_is(m, ATR_JSON_FALSE) ? "no" : NULL);
        }
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
    if (!slo)
        return;
    if (gp < 0) {
        atr_buf_puts(b, "<p>goodput: no rate meets the SLO.</p>\n");
        return;
    }
    atr_buf_puts(b, "<p>goodput rate ");
    atr_html_num(b, rate, 3);
    atr_buf_printf(b, " sessions/s (run %ld).</p>\n", gp + 1);
}

struct sweep_pt {
    double x, y;
    long run;
    bool fail;
};

static int by_x(const void *a, const void *b)
{
    const struct sweep_pt *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : (p->run > q->run) - (p->run < q->run);
}

#define ST 34                     /* a sweep chart's top margin: its title */

/* The y-axis: linear from 0 or log over whole decades. */
struct yaxis {
    bool log;
    double lo, hi;
};

static double y_at(const struct yaxis *a, double v)
{
    double ph = CH - ST - CB;
    double f = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                      : (v - a->lo) / (a->hi - a->lo);
    return ST + ph - ph * f;
}

static void sweep_axes(struct atr_buf *b, const struct yaxis *ya, double xtop, const char *label)
{
    if (ya->log) {
        for (double v = ya->lo; v <= ya->hi * 1.0001; v *= 10) {
            double y = y_at(ya, v);
            atr_buf_printf(b, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" "
                              "y2=\"%.1f\"/><text class=\"tick\" x=\"%d\" y=\"%.1f\" "
                              "text-anchor=\"end\">%g</text>\n", CL, CW - CR, y, y, CL - 6,
                           y + 4, v);
        }
    } else {
        for (int i = 0; i <= 4; i++) {
            double v = ya->hi * i / 4, y = y_at(ya, v);
            atr_buf_printf(b, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" "
                              "y2=\"%.1f\"/><text class=\"tick\" x=\"%d\" y=\"%.1f\" "
                              "text-anchor=\"end\">%g</text>\n", CL, CW - CR, y, y, CL - 6,
                           y + 4, v);
        }
    }
    double pw = CW - CL - CR;
    for (int i = 0; i <= 4; i++) {
        double x = CL + pw * i / 4;
        atr_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
                          "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
                          "%g</text>\n", x, x, ST, CH - CB, x, CH - CB + 16, xtop * i / 4);
    }
    atr_buf_printf(b, "<text class=\"axis\" transform=\"translate(14 %d) rotate(-90)\" "
                      "text-anchor=\"middle\">%s p99 (ms%s)</text>\n", ST + (CH - ST - CB) / 2,
                   label, ya->log ? ", log scale" : "");
    atr_buf_printf(b, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
                      "achieved request throughput (requests/s)</text>\n",
                   CL + (CW - CL - CR) / 2, CH - 6);
    atr_buf_printf(b, "<text class=\"title\" x=\"%d\" y=\"18\">%s p99 against request "
                      "throughput</text>\n", CL, label);
}

/* The curve of one latency's p99 (key "ttft_ms", label "TTFT") against
 * achieved request throughput: a point per run, joined in order of
 * throughput; the SLO's p99 bound on it dashed; the goodput run ringed. */
static void sweep_chart(struct atr_buf *b, const struct atr_html_sweep *sw, const char *key,
                        const char *label)
{
    const struct atr_json *runs = atr_json_get(sw->root, "runs"), *slo = sweep_slo(sw->root);
    size_t cap = 0, n = 0;
    for (const struct atr_json *r = runs->u.kids.first; r; r = r->next)
        cap++;
    struct sweep_pt *pts = malloc((cap ? cap : 1) * sizeof *pts);
    if (!pts)
        return;
    long i = 0;
    for (const struct atr_json *r = runs->u.kids.first; r; r = r->next, i++) {
        double x = run_num(r, "request_throughput"), y = run_p99(r, key);
        if (isnan(x) || isinf(x) || isnan(y) || isinf(y) || x < 0 || y < 0)
            continue;
        const struct atr_json *m = atr_json_get(r, "meets_slo");
        pts[n++] = (struct sweep_pt){x, y, i, m && atr_json_is(m, ATR_JSON_FALSE)};
    }
    if (!n) {
        free(pts);
        return;
    }
    qsort(pts, n, sizeof *pts, by_x);
    char slo_key[32];         /* "ttft_ms" -> "ttft_p99_ms" */
    size_t stem = strcspn(key, "_");
    snprintf(slo_key, sizeof slo_key, "%.*s_p99_ms", (int)stem, key);
    double bound = slo ? atr_html_get_num(slo, slo_key) : NAN, rate;
    if (!(bound > 0) || isinf(bound))
        bound = NAN;
    long gp = goodput_run(sw->root, &rate);
    double xmax = 0, lo = INFINITY, hi = 0;
    for (size_t k = 0; k < n; k++) {
        xmax = pts[k].x > xmax ? pts[k].x : xmax;
        lo = pts[k].y > 0 && pts[k].y < lo ? pts[k].y : lo;
        hi = pts[k].y > hi ? pts[k].y : hi;
    }
    if (!isnan(bound)) {
        lo = bound < lo ? bound : lo;
        hi = bound > hi ? bound : hi;
    }
    struct yaxis ya = {.log = isfinite(lo) && hi / lo > 20};
    if (ya.log) {
        ya.lo = pow(10, floor(log10(lo)));
        ya.hi = pow(10, ceil(log10(hi)));
        if (ya.hi <= ya.lo)
            ya.hi = ya.lo * 10;
    } else {
        ya.lo = 0;
        ya.hi = nice_ceiling(hi);
    }
    double xtop = nice_ceiling(xmax), pw = CW - CL - CR;
    atr_buf_printf(b, "<figure><svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
                      "aria-label=\"%s p99 (ms) against request throughput (requests/s)\">\n",
                   CW, CH, label);
    sweep_axes(b, &ya, xtop, label);
    atr_buf_puts(b, "<polyline class=\"sweep-line\" points=\"");
    for (size_t k = 0; k < n; k++) {
        double y = ya.log && pts[k].y <= 0 ? ya.lo : pts[k].y;
        atr_buf_printf(b, "%s%.1f,%.1f", k ? " " : "", CL + pw * pts[k].x / xtop, y_at(&ya, y));
    }
    atr_buf_puts(b, "\"/>\n");
    if (!isnan(bound)) {
        double y = y_at(&ya, bound);
        atr_buf_printf(b, "<line class=\"slo\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\">"
                          "<title>SLO: %s p99 &le; %g ms</title></line>\n<text class=\"slo-label\" "
                          "x=\"%d\" y=\"%.1f\">SLO</text>\n", CL, CW - CR, y, y, label, bound,
                       CL + 4, y - 4);
    }
    for (size_t k = 0; k < n; k++) {
        double y = ya.log && pts[k].y <= 0 ? ya.lo : pts[k].y;
        double cx = CL + pw * pts[k].x / xtop, cy = y_at(&ya, y);
        const struct atr_json *r = runs->u.kids.first;
        for (long j = 0; j < pts[k].run; j++)
            r = r->next;
        atr_buf_printf(b, "<circle class=\"pt%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>"
                          "run %ld, ", pts[k].fail ? " fail" : "", cx, cy, pts[k].run + 1);
        atr_html_esc(b, atr_json_get_str(r, "kind", NULL));
        atr_buf_printf(b, ": %.3f requests/s, %s p99 %.2f ms</title></circle>\n", pts[k].x,
                       label, pts[k].y);
        if (pts[k].run == gp)
            atr_buf_printf(b, "<circle class=\"goodput\" cx=\"%.1f\" cy=\"%.1f\" r=\"8\"/>"
                              "<text class=\"goodput-label\" x=\"%.1f\" y=\"%.1f\" "
                              "text-anchor=\"%s\">goodput</text>\n", cx, cy,
                           cx > CW - CR - 70 ? cx - 11 : cx + 11, cy - 10,
                           cx > CW - CR - 70 ? "end" : "start");
    }
    atr_buf_printf(b, "</svg><figcaption>%s p99 (ms) of each run against its achieved "
                      "request throughput, joined in order of throughput%s%s</figcaption>"
                      "</figure>\n", label, slo ? "; hollow points miss the SLO" : "",
                   isnan(bound) ? "" : "; dashed: the SLO's bound");
    free(pts);
}

static void sweeps(struct atr_buf *b, const struct atr_html *h)
{
    if (!h->n_sweeps)
        return;
    atr_buf_printf(b, "<section id=\"sweeps\"><h2>Sweeps</h2>\n<p>%zu sweep file%s "
                      "(<code>atr sweep</code>: vLLM's figures per run; rates are "
                      "sessions/s).</p>\n", h->n_sweeps, h->n_sweeps == 1 ? "" : "s");
    for (size_t s = 0; s < h->n_sweeps; s++) {
        sweep_header(b, &h->sweeps[s]);
        sweep_table(b, &h->sweeps[s]);
        sweep_chart(b, &h->sweeps[s], "ttft_ms", "TTFT");
        sweep_chart(b, &h->sweeps[s], "tpot_ms", "TPOT");
    }
    atr_buf_puts(b, "</section>\n");
}

/* ---- bench ---- */

static void bench_counts_row(struct atr_buf *b, const struct atr_json *g)
{
    atr_buf_puts(b, "<tr>");
    atr_html_td_str(b, atr_json_get_str(g, "group", NULL));
    atr_html_td_num(b, atr_html_get_num(g, "total"), 0);
    atr_html_td_num(b, atr_html_get_num(g, "success"), 0);
    atr_html_td_num(b, atr_html_get_num(g, "error"), 0);
    atr_html_td_num(b, atr_html_get_num(g, "timeout"), 0);
    atr_html_td_num(b, atr_html_get_num(g, "success_rate"), 1);
    atr_buf_puts(b, "<td>");
    const struct atr_json *o = atr_json_get(g, "outcomes");
    for (const struct atr_json *e = o && atr_json_is(o, ATR_JSON_OBJECT) ? o->u.kids.first : NULL;
         e; e = e->next) {
        atr_html_escape(b, e->key, e->key_len);
        atr_buf_printf(b, " %.0f%s", e->u.num, e->next ? ", " : "");
    }
    atr_buf_puts(b, "</td></tr>\n");
}

/* A ratio cell of the bench JSON ({"ratio", "lo", "hi", "verdict"} or
 * null): "1.061 [0.990, 1.130]", then its verdict in a cell of its own. */
static void bench_ratio(struct atr_buf *b, const struct atr_json *x)
{
    if (!x || !atr_json_is(x, ATR_JSON_OBJECT)) {
        atr_buf_puts(b, "<td class=\"n\">-</td><td>-</td>");
        return;
    }
    double lo = atr_html_get_num(x, "lo"), hi = atr_html_get_num(x, "hi");
    atr_buf_puts(b, "<td class=\"n\">");
    atr_html_num(b, atr_html_get_num(x, "ratio"), 3);
    if (!isnan(lo) && !isnan(hi)) {
        atr_buf_puts(b, " [");
        atr_html_num(b, lo, 3);
        atr_buf_puts(b, ", ");
        atr_html_num(b, hi, 3);
        atr_buf_putc(b, ']');
    }
    atr_buf_puts(b, "</td>");
    atr_html_td_str(b, atr_json_get_str(x, "verdict", NULL));
}

/* The JSON member path o.k1.k2 (NULL where missing). */
static const struct atr_json *bench_at(const struct atr_json *o, const char *k1, const char *k2)
{
    const struct atr_json *x = atr_json_get(o, k1);
    return x && k2 ? atr_json_get(x, k2) : x;
}

/* "5/5/4": successful runs of each variant, the ones medians use. */
static void bench_runs(struct atr_buf *b, const struct atr_json *row)
{
    static const char *const names[] = {"baseline", "human", "agent"};
    atr_buf_puts(b, "<td>");
    for (size_t i = 0; i < 3; i++) {
        const struct atr_json *v = bench_at(atr_json_get(row, "runs"), names[i], NULL);
        if (v)
            atr_buf_printf(b, "%s%.0f of %.0f", i ? " / " : "", atr_html_get_num(v, "successful"),
                           atr_html_get_num(v, "runs"));
    }
    atr_buf_puts(b, "</td>");
}

static void bench_row(struct atr_buf *b, const struct atr_json *r)
{
    const struct atr_json *tok = bench_at(r, "metrics", "tok_s");
    atr_buf_puts(b, "<tr>");
    atr_html_td_str(b, atr_json_get_str(r, "commit", NULL));
    atr_html_td_str(b, atr_json_get_str(r, "agent", NULL));
    bench_runs(b, r);
    atr_html_td_num(b, atr_html_get_num(r, "baseline_tok_s"), 1);
    atr_html_td_num(b, atr_html_get_num(r, "human_tok_s"), 1);
    atr_html_td_num(b, atr_html_get_num(r, "agent_tok_s"), 1);
    bench_ratio(b, tok ? atr_json_get(tok, "agent_over_human") : NULL);
    bench_ratio(b, tok ? atr_json_get(tok, "agent_over_baseline") : NULL);
    const struct atr_json *ts = atr_json_get(r, "true_success");
    atr_html_td_str(b, !atr_json_get_str(r, "agent", NULL) ? NULL
                       : ts && ts->type == ATR_JSON_TRUE ? "yes" : "no");
    atr_buf_puts(b, "</tr>\n");
}

static void bench_agents(struct atr_buf *b, const struct atr_json *g)
{
    const struct atr_json *list = atr_json_get(g, "per_agent");
    if (!list || !atr_json_is(list, ATR_JSON_ARRAY) || !list->u.kids.first)
        return;
    atr_buf_puts(b, "<h3>");
    atr_html_esc(b, atr_json_get_str(g, "group", NULL));
    atr_buf_puts(b, ": per agent (its own runs only)</h3>\n<table class=\"bench\"><thead><tr><th>agent</th>"
                    "<th>runs</th><th>success</th><th>success (%)</th><th>commits</th>"
                    "<th>true success</th></tr></thead><tbody>\n");
    for (const struct atr_json *a = list->u.kids.first; a; a = a->next) {
        atr_buf_puts(b, "<tr>");
        atr_html_td_str(b, atr_json_get_str(a, "agent", NULL));
        atr_html_td_num(b, atr_html_get_num(a, "runs"), 0);
        atr_html_td_num(b, atr_html_get_num(a, "success"), 0);
        atr_html_td_num(b, atr_html_get_num(a, "success_rate"), 1);
        atr_html_td_num(b, atr_html_get_num(a, "commits"), 0);
        atr_html_td_num(b, atr_html_get_num(a, "true_success"), 0);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

static void bench_reference(struct atr_buf *b, const struct atr_json *g)
{
    const struct atr_json *list = atr_json_get(g, "human_reference");
    if (!list || !atr_json_is(list, ATR_JSON_ARRAY) || !list->u.kids.first)
        return;
    atr_buf_puts(b, "<p>The reference, human against baseline (output tokens/s):</p>\n<table class=\"bench\">"
                    "<thead><tr><th>commit</th><th>baseline tok/s</th><th>human tok/s</th>"
                    "<th>human / baseline [95 % CI]</th><th>verdict</th></tr></thead><tbody>\n");
    for (const struct atr_json *f = list->u.kids.first; f; f = f->next) {
        const struct atr_json *tok = bench_at(f, "metrics", "tok_s");
        atr_buf_puts(b, "<tr>");
        atr_html_td_str(b, atr_json_get_str(f, "commit", NULL));
        atr_html_td_num(b, tok ? atr_html_get_num(tok, "baseline") : NAN, 1);
        atr_html_td_num(b, tok ? atr_html_get_num(tok, "human") : NAN, 1);
        bench_ratio(b, tok ? atr_json_get(tok, "human_over_baseline") : NULL);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

/* One latency of one agent row: the three medians and both ratios. */
static void bench_latency_row(struct atr_buf *b, const struct atr_json *r, const char *key,
                              const char *label)
{
    const struct atr_json *x = bench_at(r, "metrics", key);
    if (!x || isnan(atr_html_get_num(x, "agent")))
        return;
    atr_buf_puts(b, "<tr>");
    atr_html_td_str(b, atr_json_get_str(r, "commit", NULL));
    atr_html_td_str(b, atr_json_get_str(r, "agent", NULL));
    atr_html_td_str(b, label);
    atr_html_td_num(b, atr_html_get_num(x, "baseline"), 2);
    atr_html_td_num(b, atr_html_get_num(x, "human"), 2);
    atr_html_td_num(b, atr_html_get_num(x, "agent"), 2);
    bench_ratio(b, atr_json_get(x, "agent_over_baseline"));
    bench_ratio(b, atr_json_get(x, "agent_over_human"));
    atr_buf_puts(b, "</tr>\n");
}

/* The latencies (each run's median, their median over the repeats). */
static void bench_latencies(struct atr_buf *b, const struct atr_json *rows)
{
    static const char *const keys[][2] = {{"ttft_ms", "TTFT ms"}, {"tpot_ms", "TPOT ms"},
                                          {"itl_ms", "ITL ms"}, {"e2el_ms", "E2EL ms"}};
    atr_buf_puts(b, "<p>Latencies, lower is better (each run's median, the median over the "
                    "repeats):</p>\n<table class=\"bench\"><thead><tr><th>commit</th><th>agent</th>"
                    "<th>metric</th><th>baseline</th><th>human</th><th>agent</th>"
                    "<th>agent / baseline [95 % CI]</th><th>vs baseline</th>"
                    "<th>agent / human [95 % CI]</th><th>vs human</th></tr></thead><tbody>\n");
    for (const struct atr_json *r = rows->u.kids.first; r; r = r->next)
        for (size_t k = 0; atr_json_get_str(r, "agent", NULL) && k < 4; k++)
            bench_latency_row(b, r, keys[k][0], keys[k][1]);
    atr_buf_puts(b, "</tbody></table>\n");
}

static void bench_comparison(struct atr_buf *b, const struct atr_json *g)
{
    const struct atr_json *rows = atr_json_get(g, "comparison");
    if (!rows || !atr_json_is(rows, ATR_JSON_ARRAY) || !rows->u.kids.first)
        return;
    atr_buf_puts(b, "<h3>");
    atr_html_esc(b, atr_json_get_str(g, "group", NULL));
    atr_buf_puts(b, ": agent against baseline and human (output tokens/s)</h3>\n<table class=\"bench\"><thead>"
                    "<tr><th>commit</th><th>agent</th><th>successful runs (baseline / human / "
                    "agent)</th><th>baseline tok/s</th><th>human tok/s</th><th>agent tok/s</th>"
                    "<th>agent / human [95 % CI]</th><th>vs human</th>"
                    "<th>agent / baseline [95 % CI]</th><th>vs baseline</th>"
                    "<th>true success</th></tr></thead><tbody>\n");
    for (const struct atr_json *r = rows->u.kids.first; r; r = r->next)
        bench_row(b, r);
    atr_buf_printf(b, "</tbody></table>\n<p>Medians over repeats; geometric mean agent / human ");
    atr_html_num(b, atr_html_get_num(g, "geomean_agent_over_human"), 3);
    atr_buf_puts(b, ", agent / baseline ");
    atr_html_num(b, atr_html_get_num(g, "geomean_agent_over_baseline"), 3);
    atr_buf_printf(b, "; against human %.0f wins, %.0f ties, %.0f losses, %.0f inconclusive; "
                   "true success %.0f. Verdicts come from each ratio's 95 %% interval; the tie "
                   "margin is ", atr_html_get_num(g, "wins"), atr_html_get_num(g, "ties"),
                   atr_html_get_num(g, "losses"), atr_html_get_num(g, "inconclusive"),
                   atr_html_get_num(g, "true_success"));
    atr_html_num(b, atr_html_get_num(g, "noise_pct"), 1);
    atr_buf_puts(b, " %.</p>\n");
    bench_reference(b, g);
    bench_latencies(b, rows);
}

/* The bench report's own JSON (bench/report.h keeps its structs private),
 * read back as a DOM for the tables and embedded as is for the JS. */
static void bench(struct atr_buf *b, const struct atr_html *h, const struct atr_buf *json)
{
    struct atr_arena a = {0};
    struct atr_json *root;
    struct atr_json_err jerr;
    if (!h->bench || atr_json_parse(&a, json->data, json->len, NULL, &root, &jerr) < 0 ||
        !atr_json_is(root, ATR_JSON_ARRAY)) {
        atr_arena_release(&a);
        return;
    }
    atr_buf_puts(b, "<section id=\"bench\"><h2>Bench</h2>\n<table><thead><tr><th>group</th>"
                    "<th>results</th><th>success</th><th>error</th><th>timeout</th>"
                    "<th>success (%)</th><th>outcomes</th></tr></thead><tbody>\n");
    for (const struct atr_json *g = root->u.kids.first; g; g = g->next)
        bench_counts_row(b, g);
    atr_buf_puts(b, "</tbody></table>\n");
    for (const struct atr_json *g = root->u.kids.first; g; g = g->next) {
        bench_agents(b, g);
        bench_comparison(b, g);
    }
    atr_buf_puts(b, "</section>\n");
    atr_arena_release(&a);
}

/* ---- appendix and data ---- */

static const char *kind_name(enum atr_html_kind k)
{
    return k == ATR_HTML_TRACES ? "traces" : k == ATR_HTML_RESULT ? "result"
         : k == ATR_HTML_SWEEP ? "sweep" : k == ATR_HTML_REPLAY ? "tool replay"
         : k == ATR_HTML_REQUESTS ? "per-request" : k == ATR_HTML_ROUTER_MODEL ? "router model"
         : k == ATR_HTML_ROUTER_EVAL ? "router evaluation" : "bench";
}

/* The machine that wrote the report. The inputs' own machines are in
 * their files (a result's, a replay's summary) where they say. */
static void machine_table(struct atr_buf *b, const struct atr_html_meta *m)
{
    const struct atr_machine *mc = m->machine;
    if (!mc)
        return;
    atr_buf_puts(b, "<table class=\"facts\"><caption>The machine that wrote this report"
                    "</caption><tbody>\n<tr><th>host</th>");
    atr_html_td_str(b, mc->host);
    atr_buf_puts(b, "</tr>\n<tr><th>kernel</th>");
    atr_html_td_str(b, mc->kernel);
    atr_buf_puts(b, "</tr>\n<tr><th>CPU</th>");
    atr_html_td_str(b, mc->cpu[0] ? mc->cpu : "unknown");
    atr_buf_printf(b, "</tr>\n<tr><th>CPUs usable</th><td class=\"n\">%u</td></tr>\n"
                      "<tr><th>memory (GiB)</th><td class=\"n\">%.1f</td></tr>\n",
                   mc->cpus, (double)mc->mem_bytes / (1 << 30));
    if (m->cgroup) {
        atr_buf_puts(b, "<tr><th>cgroups</th>");
        atr_html_td_str(b, m->cgroup);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

static void appendix(struct atr_buf *b, const struct atr_html *h, const struct atr_html_meta *m)
{
    atr_buf_puts(b, "<section id=\"appendix\"><h2>Data appendix</h2>\n<table><thead><tr>"
                    "<th>input</th><th>kind</th><th>content</th><th>bytes</th>"
                    "<th>XXH3-128</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < h->n_inputs; i++) {
        const struct atr_html_input *in = &h->inputs[i];
        atr_buf_puts(b, "<tr>");
        atr_html_td_str(b, in->path);
        atr_html_td_str(b, kind_name(in->kind));
        atr_html_td_str(b, in->detail);
        atr_html_td_num(b, (double)in->size, 0);
        atr_buf_printf(b, "<td><code>%s</code></td></tr>\n", in->hash);
    }
    atr_buf_puts(b, "</tbody></table>\n<p>atr ");
    atr_html_esc(b, m->version);
    atr_buf_puts(b, "; command: <code>");
    atr_html_esc(b, m->command_line);
    atr_buf_puts(b, "</code></p>\n");
    machine_table(b, m);
    atr_buf_puts(b, "</section>\n");
}

static void data_json(struct atr_buf *out, const struct atr_html *h,
                      const struct atr_html_meta *m, const struct atr_buf *bench_json)
{
    struct atr_jw w;
    atr_jw_init(&w, out, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "version", m->version);
    atr_jw_kv_str(&w, "command", m->command_line);
    if (m->machine) {
        atr_jw_key(&w, "machine");
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "host", m->machine->host);
        atr_jw_kv_str(&w, "kernel", m->machine->kernel);
        atr_jw_kv_str(&w, "cpu", m->machine->cpu);
        atr_jw_kv_uint(&w, "cpus", m->machine->cpus);
        atr_jw_kv_uint(&w, "mem_bytes", m->machine->mem_bytes);
        if (m->cgroup)
            atr_jw_kv_str(&w, "cgroup", m->cgroup);
        atr_jw_object_end(&w);
    }
    atr_jw_key(&w, "inputs");
    atr_jw_array_begin(&w);
    for (size_t i = 0; i < h->n_inputs; i++) {
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "path", h->inputs[i].path);
        atr_jw_kv_str(&w, "kind", kind_name(h->inputs[i].kind));
        atr_jw_kv_uint(&w, "bytes", h->inputs[i].size);
        atr_jw_kv_str(&w, "xxh3_128", h->inputs[i].hash);
        atr_jw_object_end(&w);
    }
    atr_jw_array_end(&w);
    struct atr_buf list = ATR_BUF_INIT;   /* elements written as the traces were read */
    atr_buf_putc(&list, '[');
    atr_buf_append(&list, h->trace_json.data, h->trace_json.len);
    atr_buf_putc(&list, ']');
    atr_jw_kv_raw(&w, "traces", list.data, list.len);
    atr_buf_release(&list);
    atr_jw_key(&w, "results");
    atr_jw_array_begin(&w);
    for (size_t r = 0; r < h->n_results; r++)
        atr_jw_value(&w, h->results[r].root);
    atr_jw_array_end(&w);
    atr_jw_key(&w, "sweeps");
    atr_jw_array_begin(&w);
    for (size_t s = 0; s < h->n_sweeps; s++)
        atr_jw_value(&w, h->sweeps[s].root);
    atr_jw_array_end(&w);
    atr_jw_key(&w, "replays");
    atr_jw_array_begin(&w);
    for (size_t r = 0; r < h->n_replays; r++)
        atr_jw_value(&w, h->replays[r].summary);
    atr_jw_array_end(&w);
    atr_html_requests_json(&w, h);     /* "requests" and "race" */
    atr_html_replay_json(&w, h);
    if (bench_json->len)
        atr_jw_kv_raw(&w, "bench", bench_json->data, bench_json->len);
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
}

/* The data as JSON inside <script type="application/json">, each '<' as
 * \u003c (JSON has '<' only inside strings, where the escape reads back
 * the same), so "</script>" or "<!--" in an input cannot end the element. */
static void data_block(struct atr_buf *b, const struct atr_html *h,
                       const struct atr_html_meta *m, const struct atr_buf *bench_json)
{
    struct atr_buf json = ATR_BUF_INIT;
    data_json(&json, h, m, bench_json);
    atr_buf_puts(b, "<script type=\"application/json\" id=\"data\">");
    size_t from = 0;
    for (size_t i = 0; i < json.len; i++)
        if (json.data[i] == '<') {
            atr_buf_append(b, json.data + from, i - from);
            atr_buf_puts(b, "\\u003c");
            from = i + 1;
        }
    atr_buf_append(b, json.data + from, json.len - from);
    atr_buf_puts(b, "</script>\n");
    atr_buf_release(&json);
}

int atr_html_write(struct atr_buf *b, const struct atr_html *h, const struct atr_html_meta *m)
{
    struct atr_buf bench_json = ATR_BUF_INIT, page = ATR_BUF_INIT;
    if (h->bench)
        atr_bench_report_json(&bench_json, h->bench);
    head(&page, m->title);   /* page has no cap: only the copy into b can fail */
    nav(&page, h);
    if (m->live_html)
        atr_buf_puts(&page, m->live_html);
    overview(&page, h);
    traces(&page, h);
    atr_html_shapes_section(&page, h);
    results(&page, h);
    sweeps(&page, h);
    atr_html_replay_section(&page, h);
    atr_html_router_section(&page, h);
    bench(&page, h, &bench_json);
    appendix(&page, h, m);
    atr_buf_puts(&page, "</main>\n");
    data_block(&page, h, m, &bench_json);
    atr_html_timelines_block(&page, h);
    atr_buf_puts(&page, "<script type=\"module\">\n");
    atr_buf_puts(&page, (const char *)atr_report_js);
    /* In the report's module, after it: the live part draws its charts
     * with the report's own functions (lineChart, cdfPoints), not a copy. */
    if (m->live_js)
        atr_buf_printf(&page, "{\n%s}\n", m->live_js);
    atr_buf_puts(&page, "</script>\n");
    atr_buf_puts(&page, "</body>\n</html>\n");
    int rc = atr_buf_append(b, page.data, page.len);
    atr_buf_release(&page);
    atr_buf_release(&bench_json);
    return rc;
}
