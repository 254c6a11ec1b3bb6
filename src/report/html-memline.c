/* html-memline.c - two charts of the Tool replay section that the
 * controller experiments ask for (docs/controller.md, "Experiments"):
 * a step's memory over time with the controller's moving target, per
 * configuration, from metrics.jsonl's "ctl_timeline"; and each tenant's
 * slowdown against its solo run, per configuration, from summary.json's
 * "tenant_slowdown" (`atr experiment multitenant`). Both are server-side
 * SVG in a <figure>, so `atr report --png` shoots them like the others. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/html-impl.h"

#define MIB (1024.0 * 1024.0)
#define W 640                     /* chart size, SVG user units */
#define H 280
#define L 64                      /* plot margins */
#define R 16
#define T 40
#define B 48
#define MAX_TENANTS 16            /* bar groups drawn; more are named in the caption */
#define MAX_CONFIGS 8

static double ypos(double v, double top)
{
    return T + (H - T - B) * (1 - v / top);
}

static double xpos(double t, double right)
{
    return L + (W - L - R) * (t / right);
}

/* ---- reading ---- */

/* Numbers of one array into the arena; NAN for null and what is not a
 * finite number >= 0. *n: its length. NULL when not an array. */
static double *num_array(struct atr_html *h, const struct atr_json *a, size_t *n)
{
    *n = 0;
    if (!atr_json_is(a, ATR_JSON_ARRAY) || !a->u.kids.count)
        return NULL;
    double *v = atr_arena_alloc(&h->arena, a->u.kids.count * sizeof *v);
    for (const struct atr_json *e = a->u.kids.first; e; e = e->next)
        v[(*n)++] = atr_json_is(e, ATR_JSON_NUMBER) && e->u.num >= 0 && isfinite(e->u.num)
                        ? e->u.num : NAN;
    return v;
}

void atr_html_read_timeline(struct atr_html *h, const struct atr_json *o,
                            struct atr_html_replay_step *s)
{
    const struct atr_json *tl = atr_json_get(o, "ctl_timeline");
    s->n_tl = 0;
    if (!atr_json_is(tl, ATR_JSON_OBJECT))
        return;
    size_t nt, nu, ng;
    s->tl_t = num_array(h, atr_json_get(tl, "t_ms"), &nt);
    s->tl_usage = num_array(h, atr_json_get(tl, "usage_mb"), &nu);
    s->tl_target = num_array(h, atr_json_get(tl, "target_mb"), &ng);
    if (nt && nt == nu && nt == ng)     /* three arrays of one length, or nothing */
        s->n_tl = nt;
}

/* ---- memory over time ---- */

static double tl_peak(const struct atr_html_replay_step *s)
{
    double m = 0;
    for (size_t i = 0; i < s->n_tl; i++) {
        if (!isnan(s->tl_usage[i]) && s->tl_usage[i] > m)
            m = s->tl_usage[i];
        if (!isnan(s->tl_target[i]) && s->tl_target[i] > m)
            m = s->tl_target[i];
    }
    return m;
}

/* Points with a time and a usage: a line needs two. */
static size_t drawable(const struct atr_html_replay_step *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_tl; i++)
        n += !isnan(s->tl_t[i]) && !isnan(s->tl_usage[i]);
    return n;
}

/* The config's step the chart shows: the one whose usage rose highest
 * (the burst the controller had to follow); the first such on a tie. */
static const struct atr_html_replay_step *pick_step(const struct atr_html_replay *r,
                                                    const char *config)
{
    const struct atr_html_replay_step *best = NULL;
    double best_peak = -1;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct atr_html_replay_step *s = &r->steps[i];
        if (strcmp(s->config, config) || drawable(s) < 2)
            continue;
        double p = tl_peak(s);
        if (p > best_peak) {
            best = s;
            best_peak = p;
        }
    }
    return best;
}

static void axes(struct atr_buf *b, double top, double right, const char *ylabel,
                 const char *xlabel)
{
    for (int i = 0; i <= 4; i++) {
        double v = top * i / 4, y = ypos(v, top);
        atr_buf_printf(b, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                          "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g"
                          "</text>\n", L, W - R, y, y, L - 6, y + 4, v);
    }
    for (int i = 0; right > 0 && i <= 4; i++) {
        double v = right * i / 4;
        atr_buf_printf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g"
                          "</text>\n", xpos(v, right), H - B + 16, v);
    }
    atr_buf_printf(b, "<text class=\"axis\" transform=\"translate(14 %d) rotate(-90)\" "
                      "text-anchor=\"middle\">%s</text>\n", T + (H - T - B) / 2, ylabel);
    if (xlabel)
        atr_buf_printf(b, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s"
                          "</text>\n", L + (W - L - R) / 2, H - 6, xlabel);
}

/* The usage as a polyline (a point that could not be read breaks it) and
 * the target as a step line: it holds its value until the next point. */
static void timeline_paths(struct atr_buf *b, const struct atr_html_replay_step *s, double top,
                           double right)
{
    atr_buf_puts(b, "<path class=\"curve c0\" d=\"");
    bool pen = false;
    for (size_t i = 0; i < s->n_tl; i++) {
        if (isnan(s->tl_usage[i]) || isnan(s->tl_t[i])) {
            pen = false;
            continue;
        }
        atr_buf_printf(b, "%c%.1f %.1f", pen ? 'L' : 'M', xpos(s->tl_t[i], right),
                       ypos(s->tl_usage[i], top));
        pen = true;
    }
    atr_buf_puts(b, "\"><title>usage (MiB)</title></path>\n<path class=\"mem-target\" d=\"");
    pen = false;
    for (size_t i = 0; i < s->n_tl; i++) {
        if (isnan(s->tl_target[i]) || isnan(s->tl_t[i]))
            continue;
        double x = xpos(s->tl_t[i], right), y = ypos(s->tl_target[i], top);
        if (pen)
            atr_buf_printf(b, "H%.1f", x);
        atr_buf_printf(b, "%c%.1f %.1f", pen ? 'L' : 'M', x, y);
        pen = true;
    }
    atr_buf_puts(b, "\"><title>the controller's target (MiB)</title></path>\n");
}

static void memline_chart(struct atr_buf *b, const struct atr_html_replay_step *s,
                          const char *config, double mem_max_mib)
{
    double right = 0, raises = 0, prev = NAN;
    for (size_t i = 0; i < s->n_tl; i++) {
        if (!isnan(s->tl_t[i]) && s->tl_t[i] > right)
            right = s->tl_t[i];
        if (!isnan(s->tl_target[i]) && !isnan(prev) && s->tl_target[i] > prev)
            raises++;
        prev = isnan(s->tl_target[i]) ? prev : s->tl_target[i];
    }
    right = atr_html_nice_top(right);
    double peak = tl_peak(s);
    bool max_drawn = !isnan(mem_max_mib) && mem_max_mib <= 2 * atr_html_nice_top(peak * 1.05);
    double top = atr_html_nice_top((max_drawn && mem_max_mib > peak ? mem_max_mib : peak) * 1.05);
    atr_buf_puts(b, "<figure><svg class=\"chart memline-chart\" viewBox=\"0 0 640 280\" "
                    "role=\"img\" aria-label=\"memory over time of a step of ");
    atr_html_esc(b, config);
    atr_buf_puts(b, ", with the controller's target\">\n<text class=\"title\" x=\"64\" "
                    "y=\"18\">");
    atr_html_esc(b, config);
    atr_buf_puts(b, ": memory over time, target moving</text>\n");
    atr_buf_printf(b, "<line class=\"curve c0\" x1=\"%d\" x2=\"%d\" y1=\"30\" y2=\"30\"/>"
                      "<text x=\"%d\" y=\"34\">usage</text><line class=\"mem-target\" "
                      "x1=\"%d\" x2=\"%d\" y1=\"30\" y2=\"30\"/><text x=\"%d\" y=\"34\">target"
                      "</text>\n", W - 200, W - 180, W - 176, W - 120, W - 100, W - 96);
    axes(b, top, right, "memory (MiB)", "ms since the step started");
    timeline_paths(b, s, top, right);
    if (max_drawn) {
        double y = ypos(mem_max_mib, top);
        atr_buf_printf(b, "<line class=\"mem-max\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\">"
                          "<title>ceiling = %.1f MiB</title></line>\n<text class=\"mem-max-"
                          "label\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">ceiling</text>\n",
                       L, W - R, y, y, mem_max_mib, W - R - 2, y - 4);
    }
    atr_buf_puts(b, "</svg><figcaption>");
    atr_html_esc(b, s->trace_id);
    atr_buf_printf(b, " step %lld, the step of this configuration whose memory rose highest: "
                      "the group's usage (solid) and the controller's target in force "
                      "(dashed, %.0f raise%s) over %zu readings", (long long)s->step_id, raises,
                   raises == 1 ? "" : "s", s->n_tl);
    if (max_drawn)
        atr_buf_puts(b, "; the ceiling dashed red");
    atr_buf_puts(b, " (metrics.jsonl: ctl_timeline).</figcaption></figure>\n");
}

void atr_html_memline_figures(struct atr_buf *b, const struct atr_html_replay *r,
                              double mem_max_mib)
{
    const struct atr_json *configs = atr_json_get(r->summary, "configs");
    for (const struct atr_json *c = configs->u.kids.first; c; c = c->next) {
        const char *name = atr_json_is(c, ATR_JSON_OBJECT)
                               ? atr_json_get_str(c, "config", NULL) : NULL;
        const struct atr_html_replay_step *s = name ? pick_step(r, name) : NULL;
        if (s)
            memline_chart(b, s, name, mem_max_mib);
    }
}

/* ---- per-tenant slowdown bars ---- */

/* The distinct values of key in arr's objects, in first-seen order. */
static size_t distinct(const struct atr_json *arr, const char *key, const char **out, size_t cap)
{
    size_t n = 0;
    for (const struct atr_json *e = arr->u.kids.first; e; e = e->next) {
        const char *v = atr_json_get_str(e, key, NULL);
        size_t i = 0;
        while (v && i < n && strcmp(out[i], v))
            i++;
        if (v && i == n && n < cap)
            out[n++] = v;
    }
    return n;
}

static const struct atr_json *find_pair(const struct atr_json *arr, const char *config,
                                        const char *tenant)
{
    for (const struct atr_json *e = arr->u.kids.first; e; e = e->next) {
        const char *c = atr_json_get_str(e, "config", NULL), *t = atr_json_get_str(e, "trace_id", NULL);
        if (c && t && !strcmp(c, config) && !strcmp(t, tenant))
            return e;
    }
    return NULL;
}

static double bars_top(const struct atr_json *arr)
{
    double m = 1;
    for (const struct atr_json *e = arr->u.kids.first; e; e = e->next) {
        double v = atr_html_get_num(e, "slowdown_p50");
        if (isfinite(v) && v > m)
            m = v;
    }
    return atr_html_nice_top(m * 1.05);
}

static void legend(struct atr_buf *b, const char *const *configs, size_t nc)
{
    int x = W - R - 120 * (int)nc;
    for (size_t k = 0; k < nc; k++, x += 120) {
        atr_buf_printf(b, "<rect class=\"bar c%zu\" x=\"%d\" y=\"26\" width=\"10\" height=\"8\"/>"
                          "<text x=\"%d\" y=\"34\">", k, x, x + 14);
        atr_html_esc(b, configs[k]);
        atr_buf_puts(b, "</text>\n");
    }
}

static void bar(struct atr_buf *b, const struct atr_json *e, size_t k, double x, double bw,
                double top, const char *config, const char *tenant)
{
    double v = e ? atr_html_get_num(e, "slowdown_p50") : NAN;
    if (!isfinite(v) || v < 0)
        return;
    double y = ypos(v > top ? top : v, top);
    atr_buf_printf(b, "<rect class=\"bar c%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                      "height=\"%.1f\"><title>", k, x, y, bw, ypos(0, top) - y);
    atr_html_esc(b, tenant);
    atr_buf_puts(b, " under ");
    atr_html_esc(b, config);
    atr_buf_printf(b, ": p50 %.2fx, p99 %.2fx its solo run</title></rect>\n", v,
                   atr_html_get_num(e, "slowdown_p99"));
}

void atr_html_slowdown_figure(struct atr_buf *b, const struct atr_json *summary)
{
    const struct atr_json *arr = atr_json_get(summary, "tenant_slowdown");
    if (!atr_json_is(arr, ATR_JSON_ARRAY) || !arr->u.kids.first)
        return;
    const char *configs[MAX_CONFIGS], *tenants[MAX_TENANTS];
    size_t nc = distinct(arr, "config", configs, MAX_CONFIGS);
    size_t nt = distinct(arr, "trace_id", tenants, MAX_TENANTS);
    if (!nc || !nt)
        return;
    double top = bars_top(arr), gw = (double)(W - L - R) / (double)nt;
    double bw = gw * 0.8 / (double)nc;
    atr_buf_puts(b, "<figure><svg class=\"chart slowdown-chart\" viewBox=\"0 0 640 280\" "
                    "role=\"img\" aria-label=\"each tenant's slowdown against its solo run, "
                    "per configuration\">\n<text class=\"title\" x=\"64\" y=\"18\">"
                    "Tenant slowdown vs solo (p50)</text>\n");
    legend(b, configs, nc);
    axes(b, top, 0, "shared / solo (x)", NULL);
    for (size_t t = 0; t < nt; t++) {
        double gx = L + gw * (double)t + gw * 0.1;
        for (size_t k = 0; k < nc; k++)
            bar(b, find_pair(arr, configs[k], tenants[t]), k, gx + bw * (double)k, bw, top,
                configs[k], tenants[t]);
        const struct atr_json *any = find_pair(arr, configs[0], tenants[t]);
        bool victim = any && atr_json_is(atr_json_get(any, "victim"), ATR_JSON_TRUE);
        atr_buf_printf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
                       L + gw * ((double)t + 0.5), H - B + 16);
        atr_html_esc(b, tenants[t]);
        atr_buf_puts(b, victim ? " (the victim)</text>\n" : "</text>\n");
    }
    double y1 = ypos(1, top);       /* over the bars: where "no slowdown" is */
    atr_buf_printf(b, "<line class=\"mem-high\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>\n",
                   L, W - R, y1, y1);
    atr_buf_printf(b, "</svg><figcaption>Each tenant's step latency p50 when the tenants share "
                      "the host, over its p50 when it ran alone under the same configuration "
                      "(1 = no slowdown, dotted); %zu tenant%s, %zu configuration%s "
                      "(summary.json: tenant_slowdown, with the p99 ratios).</figcaption>"
                      "</figure>\n", nt, nt == 1 ? "" : "s", nc, nc == 1 ? "" : "s");
}
