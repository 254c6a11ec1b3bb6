/* html-replay.c - `atr report`'s Tool replay section: an `atr replay tools
 * --out DIR` folder (DIR/summary.json and DIR/metrics.jsonl,
 * docs/replay-tools.md) read, then shown as a table of the configurations
 * side by side, a chart per configuration of each step's memory peak with
 * the memory limits and the steps that hit them, CDFs of step latency per
 * configuration and of the dynamic controller's reaction times (drawn by
 * report-replay.js from "replay_cdfs"), and the tenants' latency alone and
 * shared when summary.json has them. Every text from the folder goes
 * through atr_html_escape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json/writer.h"
#include "report/html-impl.h"
#include "report/html.h"
#include "util/alloc.h"
#include "util/error.h"

#define SUMMARY_MAX ((size_t)64 << 20)   /* largest summary.json read */
#define MIB (1024.0 * 1024.0)

static char *join(const char *dir, const char *name)
{
    return xasprintf("%s/%s", dir, name);
}

static bool is_file(const char *dir, const char *name)
{
    char *p = join(dir, name);
    struct stat sb;
    bool ok = stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
    free(p);
    return ok;
}

bool atr_html_is_replay_dir(const char *dir)
{
    return is_file(dir, "metrics.jsonl") && is_file(dir, "summary.json");
}

/* The whole file, NUL-terminated (NULL when it cannot be read or is larger
 * than SUMMARY_MAX). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = xmalloc(cap + 1);
    size_t got;
    while ((got = fread(s + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            if (cap > SUMMARY_MAX) {
                free(s);
                fclose(f);
                return NULL;
            }
            s = xrealloc(s, (cap *= 2) + 1);
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    *len = n;
    return s;
}

/* A step's "ctl_reaction_us" (or its bounds') array in ms, copied into
 * the arena. */
static const double *reaction_ms(struct atr_html *h, const struct atr_json *o, const char *key,
                                 size_t *n)
{
    const struct atr_json *a = atr_json_get(o, key);
    *n = 0;
    if (!atr_json_is(a, ATR_JSON_ARRAY) || !a->u.kids.count)
        return NULL;
    double *v = atr_arena_alloc(&h->arena, a->u.kids.count * sizeof *v);
    for (const struct atr_json *e = a->u.kids.first; e; e = e->next)
        if (atr_json_is(e, ATR_JSON_NUMBER) && e->u.num >= 0 && isfinite(e->u.num))
            v[(*n)++] = e->u.num / 1000;
    return v;
}

static int64_t int_or(const struct atr_json *o, const char *key)
{
    double v;
    return atr_json_get_num(o, key, &v) && v >= 0 && v < 9e18 ? (int64_t)v : -1;
}

int atr_html_read_replay(struct atr_html *h, const char *dir, struct atr_html_replay *out,
                         struct atr_error *err)
{
    *out = (struct atr_html_replay){0};
    char *path = join(dir, "summary.json");
    size_t len;
    char *text = slurp(path, &len);
    struct atr_json *root = NULL;
    struct atr_json_err jerr;
    int rc = 0;
    if (!text)
        rc = atr_error_set(err, "%s: cannot read it", path);
    else if (atr_json_parse(&h->arena, text, len, NULL, &root, &jerr) < 0)
        rc = atr_error_set(err, "%s:%u:%u: %s", path, jerr.line, jerr.col, jerr.msg);
    else if (!atr_json_is(root, ATR_JSON_OBJECT) ||
             !atr_json_is(atr_json_get(root, "configs"), ATR_JSON_ARRAY))
        rc = atr_error_set(err, "%s: not a tool replay summary: \"configs\" is not an array",
                           path);
    free(text);
    free(path);
    if (rc < 0)
        return -1;
    out->summary = root;

    path = join(dir, "metrics.jsonl");
    FILE *f = fopen(path, "rb");
    if (!f) {
        rc = atr_error_set(err, "%s: cannot read it", path);
        free(path);
        return rc;
    }
    struct atr_arena tmp = {0};
    size_t cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t n;
    unsigned long lineno = 0;
    while ((n = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n == 0)
            continue;
        atr_arena_clear(&tmp);
        struct atr_json *o;
        if (atr_json_parse(&tmp, line, (size_t)n, NULL, &o, &jerr) < 0) {
            rc = atr_error_set(err, "%s:%lu:%u: %s", path, lineno, jerr.col, jerr.msg);
            break;
        }
        if (!atr_json_is(o, ATR_JSON_OBJECT)) {
            rc = atr_error_set(err, "%s:%lu: not a JSON object", path, lineno);
            break;
        }
        const char *phase = atr_json_get_str(o, "phase", NULL);
        if (phase && strcmp(phase, "shared"))   /* --tenants: the alone phase is the baseline */
            continue;
        if (out->n_steps == cap) {
            struct atr_html_replay_step *s =
                atr_arena_alloc(&h->arena, (cap = cap ? cap * 2 : 64) * sizeof *s);
            if (out->n_steps)
                memcpy(s, out->steps, out->n_steps * sizeof *s);
            out->steps = s;
        }
        const char *config = atr_json_get_str(o, "config", NULL);
        const char *trace = atr_json_get_str(o, "trace_id", NULL);
        double peak, lat;
        size_t n_react, n_bound;
        const double *react = reaction_ms(h, o, "ctl_reaction_us", &n_react);
        const double *bound = reaction_ms(h, o, "ctl_reaction_bound_us", &n_bound);
        out->steps[out->n_steps++] = (struct atr_html_replay_step){
            .config = atr_arena_strdup(&h->arena, config ? config : ""),
            .trace_id = trace ? atr_arena_strdup(&h->arena, trace) : NULL,
            .step_id = int_or(o, "step_id"),
            .mem_high_events = int_or(o, "mem_high_events"),
            .mem_max_events = int_or(o, "mem_max_events"),
            .oom_kills = int_or(o, "oom_kills"),
            .peak_mb = atr_json_get_num(o, "max_rss_mb", &peak) && peak >= 0 ? peak : -1,
            .latency_ms = atr_json_get_num(o, "latency_ms", &lat) && lat >= 0 ? lat : NAN,
            .reaction_ms = react,
            .n_reaction = n_react,
            .bound_ms = bound,
            .n_bound = n_bound,
            .skipped = atr_json_get(o, "skipped") != NULL,
        };
        atr_html_read_timeline(h, o, &out->steps[out->n_steps - 1]);
    }
    if (rc == 0 && ferror(f))
        rc = atr_error_set(err, "%s: cannot read it", path);
    free(line);
    fclose(f);
    atr_arena_release(&tmp);
    free(path);
    return rc < 0 ? -1 : 0;
}

/* ---- rendering ---- */

static void cdf_figures(struct atr_buf *b, const struct atr_html_replay *r);


/* summary.json's "limits" in MiB (NAN: unset or not recorded). */
static double limit_mib(const struct atr_json *summary, const char *key)
{
    const struct atr_json *l = atr_json_get(summary, "limits");
    double v = atr_json_is(l, ATR_JSON_OBJECT) ? atr_html_get_num(l, key) : NAN;
    return v > 0 && isfinite(v) ? v / MIB : NAN;
}

static void configs_table(struct atr_buf *b, const struct atr_json *configs)
{
    atr_buf_puts(b, "<table class=\"replay\"><thead><tr><th>config</th><th>traces</th>"
                    "<th>steps</th><th>ran</th><th>skipped</th><th>failed</th>"
                    "<th>timed out</th><th>OOM kills</th><th>memory.high events</th>"
                    "<th>memory.max events</th><th>latency p50 (ms)</th>"
                    "<th>latency p95 (ms)</th><th>latency p99 (ms)</th>"
                    "<th>latency max (ms)</th><th>CPU total (ms)</th>"
                    "<th>peak memory max (MiB)</th><th>memory stall (ms)</th>"
                    "<th>CPU stall (ms)</th><th>failures</th></tr></thead><tbody>\n");
    for (const struct atr_json *c = configs->u.kids.first; c; c = c->next) {
        if (!atr_json_is(c, ATR_JSON_OBJECT))
            continue;
        atr_buf_puts(b, "<tr data-config>");
        atr_html_td_str(b, atr_json_get_str(c, "config", NULL));
        static const char *const ints[] = {"traces", "total_steps", "ran_steps",
                                           "skipped_steps", "failed_steps", "timed_out_steps",
                                           "oom_kills", "mem_high_events_total",
                                           "mem_max_events_total"};
        for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
            atr_html_td_num(b, atr_html_get_num(c, ints[i]), 0);
        atr_html_td_num(b, atr_html_get_num(c, "latency_p50_ms"), 1);
        atr_html_td_num(b, atr_html_get_num(c, "latency_p95_ms"), 1);
        atr_html_td_num(b, atr_html_get_num(c, "latency_p99_ms"), 1);
        atr_html_td_num(b, atr_html_get_num(c, "latency_max_ms"), 1);
        atr_html_td_num(b, atr_html_get_num(c, "cpu_ms_total"), 1);
        atr_html_td_num(b, atr_html_get_num(c, "max_rss_mb"), 1);
        atr_html_td_num(b, atr_html_get_num(c, "mem_pressure_some_ms_total"), 1);
        atr_html_td_num(b, atr_html_get_num(c, "cpu_pressure_some_ms_total"), 1);
        atr_buf_puts(b, "<td>");
        const struct atr_json *fl = atr_json_get(c, "failures");
        bool any = false;
        for (const struct atr_json *e = atr_json_is(fl, ATR_JSON_OBJECT) ? fl->u.kids.first
                                                                          : NULL;
             e; e = e->next) {
            if (!atr_json_is(e, ATR_JSON_NUMBER) || e->u.num == 0)
                continue;
            /* a cause never breaks inside ("non_zero 1"), only between causes */
            atr_buf_puts(b, any ? ", <span class=\"nw\">" : "<span class=\"nw\">");
            atr_html_escape(b, e->key, e->key_len);
            atr_buf_printf(b, " %.0f</span>", e->u.num);
            any = true;
        }
        atr_buf_puts(b, any ? "</td></tr>\n" : "none</td></tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

double atr_html_nice_top(double x)
{
    if (!(x > 0))
        return 1;
    static const double steps[] = {1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10};
    double p = pow(10, floor(log10(x)));
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        if (x <= steps[i] * p)
            return steps[i] * p;
    return 10 * p;
}

#define W 640                     /* chart size, SVG user units */
#define H 280
#define L 64                      /* plot margins */
#define R 16
#define T 40
#define B 48

static double yat(double v, double top)
{
    return T + (H - T - B) * (1 - v / top);
}

static void limit_line(struct atr_buf *b, const char *cls, const char *name, double mib,
                       double top)
{
    if (isnan(mib) || mib > top)
        return;
    double y = yat(mib, top);
    atr_buf_printf(b, "<line class=\"%s\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"><title>"
                      "%s = %.1f MiB</title></line>\n<text class=\"%s-label\" x=\"%d\" "
                      "y=\"%.1f\" text-anchor=\"end\">%s</text>\n", cls, L, W - R, y, y, name,
                   mib, cls, W - R - 2, y - 4, name);
}

/* The value axis' top: the data's peak, raised to a limit only when that
 * limit is near it (within twice the peak's top), so a memory.high far
 * above the data does not flatten the bars; such a limit is labelled. */
static double chart_top(double data_max, double hi, double mx)
{
    double top = atr_html_nice_top(data_max * 1.05), near = 2 * top;
    double lim = !isnan(mx) && mx <= near ? mx : 0;
    lim = !isnan(hi) && hi <= near && hi > lim ? hi : lim;
    return lim * 1.05 > top ? atr_html_nice_top(lim * 1.05) : top;
}

/* The limits above the chart's top (the axis is scaled to the data, not to
 * a limit far above it), named in the title row instead of drawn. */
static void off_scale_label(struct atr_buf *b, double hi, double mx, double top)
{
    bool h = !isnan(hi) && hi > top, m = !isnan(mx) && mx > top;
    if (!h && !m)
        return;
    atr_buf_printf(b, "<text class=\"%s-label off-scale\" x=\"%d\" y=\"18\" "
                      "text-anchor=\"end\">&#x2191; ", m ? "mem-max" : "mem-high", W - R);
    if (h)
        atr_buf_printf(b, "memory.high %.1f MiB%s", hi, m ? ", " : "");
    if (m)
        atr_buf_printf(b, "memory.max %.1f MiB", mx);
    atr_buf_puts(b, ": above the scale</text>\n");
}

/* One configuration's chart: each step that ran, in the order it ran, a
 * bar of its memory peak (MiB); a step with an OOM kill vermillion, one
 * with memory.high or memory.max events (and no kill) orange; the limits
 * dashed when summary.json records them. */
static void config_chart(struct atr_buf *b, const struct atr_html_replay *r, const char *config)
{
    size_t n = 0, oom = 0, ev = 0;
    double max = 0;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct atr_html_replay_step *s = &r->steps[i];
        if (s->skipped || strcmp(s->config, config))
            continue;
        n++;
        max = s->peak_mb > max ? s->peak_mb : max;
        oom += s->oom_kills > 0;
        ev += s->oom_kills <= 0 && (s->mem_high_events > 0 || s->mem_max_events > 0);
    }
    if (!n)
        return;
    double hi = limit_mib(r->summary, "mem_high_bytes"), mx = limit_mib(r->summary, "mem_max_bytes");
    bool limited = strcmp(config, "none") != 0;    /* the baseline runs without limits */
    if (!limited)
        hi = mx = NAN;
    double top = chart_top(max, hi, mx);
    atr_buf_puts(b, "<figure><svg class=\"chart replay-chart\" viewBox=\"0 0 640 280\" "
                    "role=\"img\" aria-label=\"peak memory (MiB) per step of ");
    atr_html_esc(b, config);
    atr_buf_puts(b, "\">\n<text class=\"title\" x=\"64\" y=\"18\">");
    atr_html_esc(b, config);
    atr_buf_puts(b, ": peak memory per step</text>\n");
    /* legend */
    atr_buf_printf(b, "<rect class=\"mem-ok\" x=\"%d\" y=\"26\" width=\"10\" height=\"8\"/>"
                      "<text x=\"%d\" y=\"34\">step</text>"
                      "<rect class=\"mem-event\" x=\"%d\" y=\"26\" width=\"10\" height=\"8\"/>"
                      "<text x=\"%d\" y=\"34\">memory events</text>"
                      "<rect class=\"mem-oom\" x=\"%d\" y=\"26\" width=\"10\" height=\"8\"/>"
                      "<text x=\"%d\" y=\"34\">OOM kill</text>\n",
                   W - 300, W - 286, W - 240, W - 226, W - 130, W - 116);
    for (int i = 0; i <= 4; i++) {
        double v = top * i / 4, y = yat(v, top);
        atr_buf_printf(b, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
                          "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g"
                          "</text>\n", L, W - R, y, y, L - 6, y + 4, v);
    }
    atr_buf_printf(b, "<text class=\"axis\" transform=\"translate(14 %d) rotate(-90)\" "
                      "text-anchor=\"middle\">peak memory (MiB)</text>\n<text class=\"axis\" "
                      "x=\"%d\" y=\"%d\" text-anchor=\"middle\">step, in the order run</text>\n",
                   T + (H - T - B) / 2, L + (W - L - R) / 2, H - 6);
    double pw = W - L - R, gw = pw / (double)n, bw = gw * 0.8 > 1 ? gw * 0.8 : 1;
    size_t k = 0, every = n > 20 ? (n + 19) / 20 : 1;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct atr_html_replay_step *s = &r->steps[i];
        if (s->skipped || strcmp(s->config, config))
            continue;
        double x = L + gw * (double)k + (gw - bw) / 2, v = s->peak_mb > 0 ? s->peak_mb : 0;
        double y = yat(v, top);
        const char *cls = s->oom_kills > 0 ? "mem-oom"
                        : s->mem_high_events > 0 || s->mem_max_events > 0 ? "mem-event"
                                                                          : "mem-ok";
        atr_buf_printf(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                          "height=\"%.1f\"><title>", cls, x, y, bw, yat(0, top) - y);
        atr_html_esc(b, s->trace_id);
        atr_buf_printf(b, " step %lld: peak ", (long long)s->step_id);
        atr_html_num(b, s->peak_mb < 0 ? NAN : s->peak_mb, 1);
        atr_buf_puts(b, " MiB");
        if (s->oom_kills > 0)
            atr_buf_printf(b, ", %lld OOM kill%s", (long long)s->oom_kills,
                           s->oom_kills == 1 ? "" : "s");
        if (s->mem_high_events > 0)
            atr_buf_printf(b, ", %lld memory.high events", (long long)s->mem_high_events);
        if (s->mem_max_events > 0)
            atr_buf_printf(b, ", %lld memory.max events", (long long)s->mem_max_events);
        atr_buf_puts(b, "</title></rect>\n");
        if (s->oom_kills > 0)   /* a marker too, so the kill reads without colour */
            atr_buf_printf(b, "<text class=\"oom-mark\" x=\"%.1f\" y=\"%.1f\" "
                              "text-anchor=\"middle\">&#x2715;</text>\n", x + bw / 2, y - 4);
        if (k % every == 0)
            atr_buf_printf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
                              "%zu</text>\n", x + bw / 2, H - B + 16, k + 1);
        k++;
    }
    limit_line(b, "mem-high", "memory.high", hi, top);
    limit_line(b, "mem-max", "memory.max", mx, top);
    off_scale_label(b, hi, mx, top);
    atr_buf_puts(b, "</svg><figcaption>Peak memory (MiB) of each step that ran");
    if (oom)
        atr_buf_printf(b, "; %zu with an OOM kill (vermillion, &#x2715;)", oom);
    if (ev)
        atr_buf_printf(b, "; %zu with memory events (orange)", ev);
    if ((!isnan(mx) && mx <= top) || (!isnan(hi) && hi <= top))
        atr_buf_puts(b, "; dashed: the memory limits");
    if ((!isnan(mx) && mx > top) || (!isnan(hi) && hi > top))
        atr_buf_puts(b, "; the axis is scaled to the steps: a limit far above them is named "
                        "at the top, not drawn");
    if (isnan(mx) && isnan(hi) && limited)
        atr_buf_puts(b, "; limits not recorded in summary.json");
    atr_buf_puts(b, "</figcaption></figure>\n");
}

static void tenants_table(struct atr_buf *b, const struct atr_json *summary)
{
    const struct atr_json *t = atr_json_get(summary, "tenants");
    if (!atr_json_is(t, ATR_JSON_ARRAY) || !t->u.kids.first)
        return;
    atr_buf_puts(b, "<h4>Tenants: step latency alone and shared</h4>\n<table><thead><tr>"
                    "<th>config</th><th>tenant</th><th>trace id</th><th>weight</th>"
                    "<th>steps</th><th>mean alone (ms)</th><th>mean shared (ms)</th>"
                    "<th>p50 alone (ms)</th><th>p50 shared (ms)</th><th>inflation mean</th>"
                    "<th>inflation p50</th></tr></thead><tbody>\n");
    for (const struct atr_json *e = t->u.kids.first; e; e = e->next) {
        if (!atr_json_is(e, ATR_JSON_OBJECT))
            continue;
        atr_buf_puts(b, "<tr>");
        atr_html_td_str(b, atr_json_get_str(e, "config", NULL));
        atr_html_td_num(b, atr_html_get_num(e, "tenant"), 0);
        atr_html_td_str(b, atr_json_get_str(e, "trace_id", NULL));
        atr_html_td_num(b, atr_html_get_num(e, "weight"), 0);
        atr_html_td_num(b, atr_html_get_num(e, "steps"), 0);
        atr_html_td_num(b, atr_html_get_num(e, "latency_mean_ms_alone"), 1);
        atr_html_td_num(b, atr_html_get_num(e, "latency_mean_ms_shared"), 1);
        atr_html_td_num(b, atr_html_get_num(e, "latency_p50_ms_alone"), 1);
        atr_html_td_num(b, atr_html_get_num(e, "latency_p50_ms_shared"), 1);
        atr_html_td_num(b, atr_html_get_num(e, "inflation_mean"), 2);
        atr_html_td_num(b, atr_html_get_num(e, "inflation_p50"), 2);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

void atr_html_replay_section(struct atr_buf *b, const struct atr_html *h)
{
    if (!h->n_replays)
        return;
    atr_buf_printf(b, "<section id=\"replay\"><h2>Tool replay</h2>\n<p>%zu folder%s of "
                      "<code>atr replay tools --out</code> (summary.json per configuration; "
                      "peak memory from metrics.jsonl, in MiB).</p>\n", h->n_replays,
                   h->n_replays == 1 ? "" : "s");
    for (size_t i = 0; i < h->n_replays; i++) {
        const struct atr_html_replay *r = &h->replays[i];
        const struct atr_json *s = r->summary, *inc = atr_json_get(s, "incomplete");
        atr_buf_puts(b, "<h3>");
        atr_html_esc(b, r->name);
        atr_buf_puts(b, "</h3>\n<p>backend ");
        atr_html_esc(b, atr_json_get_str(s, "backend", NULL));
        double mx = limit_mib(s, "mem_max_bytes"), hi = limit_mib(s, "mem_high_bytes");
        if (!isnan(hi))
            atr_buf_printf(b, "; memory.high %.1f MiB", hi);
        if (!isnan(mx))
            atr_buf_printf(b, "; memory.max %.1f MiB", mx);
        if (atr_json_is(inc, ATR_JSON_TRUE)) {
            atr_buf_puts(b, "; <strong>incomplete</strong> (");
            atr_html_esc(b, atr_json_get_str(s, "reason", NULL));
            atr_buf_puts(b, ")");
        }
        atr_buf_puts(b, "</p>\n");
        const struct atr_json *configs = atr_json_get(s, "configs");
        configs_table(b, configs);
        for (const struct atr_json *c = configs->u.kids.first; c; c = c->next) {
            const char *name = atr_json_is(c, ATR_JSON_OBJECT)
                                   ? atr_json_get_str(c, "config", NULL) : NULL;
            if (name)
                config_chart(b, r, name);
        }
        atr_html_memline_figures(b, r, mx);
        cdf_figures(b, r);
        tenants_table(b, s);
        atr_html_slowdown_figure(b, s);
    }
    atr_buf_puts(b, "</section>\n");
}

/* ---- step latency and controller reaction CDFs ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum values { LATENCY, REACTION, BOUND };

/* The sorted step latencies, reaction times or their bounds of one
 * config's steps that ran; the caller frees. */
static double *config_values(const struct atr_html_replay *r, const char *config, enum values k,
                             size_t *n)
{
    size_t cap = 0;
    for (size_t i = 0; i < r->n_steps; i++)
        if (!strcmp(r->steps[i].config, config))
            cap += k == REACTION ? r->steps[i].n_reaction
                   : k == BOUND  ? r->steps[i].n_bound
                                 : 1;
    double *v = xcalloc(cap + 1, sizeof *v);
    *n = 0;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct atr_html_replay_step *s = &r->steps[i];
        if (strcmp(s->config, config) || s->skipped)
            continue;
        if (k == REACTION) {
            if (s->n_reaction)          /* reaction_ms is NULL without samples */
                memcpy(v + *n, s->reaction_ms, s->n_reaction * sizeof *v);
            *n += s->n_reaction;
        } else if (k == BOUND) {
            if (s->n_bound)
                memcpy(v + *n, s->bound_ms, s->n_bound * sizeof *v);
            *n += s->n_bound;
        } else if (!isnan(s->latency_ms)) {
            v[(*n)++] = s->latency_ms;
        }
    }
    qsort(v, *n, sizeof *v, cmp_double);
    return v;
}

static bool any_reaction(const struct atr_html_replay *r)
{
    for (size_t i = 0; i < r->n_steps; i++)
        if (r->steps[i].n_reaction)
            return true;
    return false;
}

/* Where report-replay.js draws; the tables above hold the percentiles for
 * readers without JS. */
static void cdf_figures(struct atr_buf *b, const struct atr_html_replay *r)
{
    atr_buf_puts(b, "<figure class=\"replay-cdf\" data-kind=\"latency\"><figcaption>Step "
                    "latency, CDF per configuration (steps that ran; with <code>--tenants</code> "
                    "the shared phase).</figcaption><div class=\"chart-host\"></div></figure>\n");
    if (any_reaction(r))
        atr_buf_puts(b, "<figure class=\"replay-cdf\" data-kind=\"reaction\"><figcaption>The "
                        "dynamic controller's reaction time (pressure seen to limit written), "
                        "CDF of every adjustment per configuration; dashed, where it differs: "
                        "its upper bound (a poll's condition may have become visible just "
                        "after the previous poll).</figcaption>"
                        "<div class=\"chart-host\"></div></figure>\n");
}

/* Whether two sorted arrays hold the same values (a bound that equals
 * its reaction, as for events and the eBPF arm, is not drawn twice). */
static bool same_values(const double *a, size_t na, const double *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* "replay_cdfs": per folder, in input order, [{config, latency: CDF,
 * reaction: CDF or null, reaction_bound: CDF or null (null too where it
 * equals reaction)}] for each config of its summary. */
void atr_html_replay_json(struct atr_jw *w, const struct atr_html *h)
{
    atr_jw_key(w, "replay_cdfs");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < h->n_replays; i++) {
        const struct atr_html_replay *r = &h->replays[i];
        const struct atr_json *configs = atr_json_get(r->summary, "configs");
        atr_jw_array_begin(w);
        for (const struct atr_json *c = configs->u.kids.first; c; c = c->next) {
            const char *name = atr_json_is(c, ATR_JSON_OBJECT)
                                   ? atr_json_get_str(c, "config", NULL) : NULL;
            if (!name)
                continue;
            atr_jw_object_begin(w);
            atr_jw_kv_str(w, "config", name);
            size_t n[3];
            double *v[3];
            static const char *const keys[] = {"latency", "reaction", "reaction_bound"};
            for (int k = LATENCY; k <= BOUND; k++)
                v[k] = config_values(r, name, (enum values)k, &n[k]);
            if (same_values(v[REACTION], n[REACTION], v[BOUND], n[BOUND]))
                n[BOUND] = 0;
            for (int k = LATENCY; k <= BOUND; k++) {
                atr_jw_key(w, keys[k]);
                if (n[k])
                    atr_html_cdf_json(w, v[k], n[k]);
                else
                    atr_jw_null(w);
                free(v[k]);
            }
            atr_jw_object_end(w);
        }
        atr_jw_array_end(w);
    }
    atr_jw_array_end(w);
}
