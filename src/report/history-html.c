/* history-html.c - bench history as charts: per series and metric an SVG
 * line of the points' values, each point a dot with its figures in a
 * tooltip, regressions in red (history-html.h). */
#include "report/history-html.h"

#include <math.h>
#include <string.h>

#include "report/html.h"

enum { W = 640, H = 180, LEFT = 64, RIGHT = 16, TOP = 12, BOTTOM = 28 };

static int esc(struct atr_buf *b, const char *s)
{
    return atr_html_escape(b, s, strlen(s));
}

/* The values' range, padded by 5 % (a flat series gets +-5 % of itself). */
static void range_of(const struct atr_history_series *s, int m, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t k = 0; k < s->n; k++) {
        double v = s->p[k].cell[m].value;
        if (!isnan(v) && s->p[k].cell[m].runs) {
            *lo = fmin(*lo, v);
            *hi = fmax(*hi, v);
        }
    }
    double pad = *hi > *lo ? 0.05 * (*hi - *lo) : 0.05 * fabs(*hi) + 1e-9;
    *lo -= pad;
    *hi += pad;
}

static double x_of(size_t k, size_t n)
{
    return LEFT + (n > 1 ? (double)k * (W - LEFT - RIGHT) / (double)(n - 1) : 0);
}

static double y_of(double v, double lo, double hi)
{
    return TOP + (hi - v) * (H - TOP - BOTTOM) / (hi - lo);
}

static int dot(struct atr_buf *b, const struct atr_history_point *p, const struct atr_history_cell *c,
               double x, double y)
{
    const char *fill = c->regression ? "#c62828" : c->compared ? "#1565c0" : "#9e9e9e";
    int rc = atr_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"><title>",
                            x, y, c->regression ? 5 : 3, fill);
    rc |= esc(b, p->commit ? p->commit : p->file);
    rc |= atr_buf_printf(b, ": %.4g (%zu run%s)", c->value, c->runs, c->runs == 1 ? "" : "s");
    if (c->compared && !isnan(c->ratio.lo))
        rc |= atr_buf_printf(b, ", x%.3f [%.3f, %.3f] %s", c->ratio.point, c->ratio.lo,
                             c->ratio.hi, c->regression ? "regression"
                                                        : atr_verdict_name(c->verdict));
    return rc | atr_buf_puts(b, "</title></circle>\n");
}

static int chart(struct atr_buf *b, const struct atr_history_series *s, int m)
{
    double lo, hi;
    range_of(s, m, &lo, &hi);
    int rc = atr_buf_printf(b, "<figure><svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
                            W, H);
    rc |= esc(b, atr_history_metric_title(m));
    rc |= atr_buf_printf(b, "\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#bbb\"/>"
                            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.4g</text>"
                            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.4g</text>\n",
                         LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, LEFT - 6, TOP + 10, hi,
                         LEFT - 6, H - BOTTOM, lo);
    rc |= atr_buf_puts(b, "<polyline fill=\"none\" stroke=\"#1565c0\" points=\"");
    for (size_t k = 0; k < s->n; k++)
        if (s->p[k].cell[m].runs)
            rc |= atr_buf_printf(b, "%.1f,%.1f ", x_of(k, s->n),
                                 y_of(s->p[k].cell[m].value, lo, hi));
    rc |= atr_buf_puts(b, "\"/>\n");
    for (size_t k = 0; k < s->n; k++) {
        const struct atr_history_cell *c = &s->p[k].cell[m];
        if (c->runs)
            rc |= dot(b, &s->p[k], c, x_of(k, s->n), y_of(c->value, lo, hi));
        rc |= atr_buf_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%zu</text>",
                             x_of(k, s->n), H - 8, k + 1);
    }
    rc |= atr_buf_puts(b, "</svg><figcaption>");
    rc |= esc(b, atr_history_metric_title(m));
    return rc | atr_buf_puts(b, " by point (red: regression, grey: no baseline)"
                                "</figcaption></figure>\n");
}

int atr_history_html(struct atr_buf *b, const struct atr_history *h)
{
    int rc = atr_buf_puts(b, "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
                             "<title>atr bench history</title><style>body{font:14px sans-serif;"
                             "margin:2em}figure{margin:0 0 1.5em}svg{width:100%;max-width:"
                             "640px;font-size:11px}</style></head><body>\n<h1>bench history</h1>\n");
    rc |= atr_buf_printf(b, "<p>%zu results, %zu failed, %zu regression%s beyond noise "
                            "(baseline: the %zu points before; margin %.3g %%).</p>\n",
                         h->results, h->failed, h->regressions, h->regressions == 1 ? "" : "s",
                         h->o.window, 100 * h->o.margin);
    for (size_t k = 0; k < h->n; k++) {
        rc |= atr_buf_puts(b, "<h2>");
        rc |= esc(b, h->s[k].label);
        rc |= atr_buf_puts(b, "</h2>\n");
        for (int m = 0; m < ATR_HM_METRICS; m++)
            if (h->s[k].has[m])
                rc |= chart(b, &h->s[k], m);
    }
    return rc | atr_buf_puts(b, "</body></html>\n") ? -1 : 0;
}
